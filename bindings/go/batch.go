package larder

// #cgo noescape lg_lookup_batch
// #cgo nocallback lg_lookup_batch
// #include "larder_go.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Batch is a set of keys that [Cache.GetBatch] looks up with one cgo call, then the results,
// read by index with the same getters as a Cache's.
//
// Why: a cgo call is a full memory barrier, so separate lookups cannot overlap their cache
// misses, and a lookup that misses the CPU caches costs several serial memory round trips.
// One call for many keys lets the CPU overlap them, as a Go map lookup loop does. With keys in
// random order over a large file, a batch of a few hundred keys costs about half as much per
// key as single lookups (docs/bindings-go.md); for keys that are hot in the CPU caches it saves
// only the ~40 ns cgo transition per key.
//
// The zero value is an empty batch. Add copies each key into the batch's buffer; Reset empties
// it and keeps the memory for reuse. A Batch is not safe for concurrent use, but any number of
// Batches may look up in one Cache at once.
//
// Results are views of the cache file: read them before the Cache is closed (the getters then
// fail with [ErrClosed]; the Unsafe ones' earlier results must not be used). The Batch keeps
// the Cache reachable while it holds results.
type Batch struct {
	text  []byte         // the keys, concatenated
	ends  []C.size_t     // ends[i]: end of key i in text
	refs  []C.lg_ref     // results of the last GetBatch
	msgs  map[int]string // messages of failed results, by index
	cache *Cache         // the cache the results point into
	done  int            // results valid: keys looked up by the last GetBatch
}

// Add appends a key (copied; a []byte key b can be added as string(b)).
func (b *Batch) Add(key string) {
	b.text = append(b.text, key...)
	b.ends = append(b.ends, C.size_t(len(b.text)))
}

// Len returns the number of keys added since the last Reset.
func (b *Batch) Len() int { return len(b.ends) }

// Key returns key i.
func (b *Batch) Key(i int) string { return b.key(i) }

// key copies key i out of the buffer (only error paths need it).
func (b *Batch) key(i int) string {
	start := C.size_t(0)
	if i > 0 {
		start = b.ends[i-1]
	}
	return string(b.text[start:b.ends[i]])
}

// Reset empties the batch, keeping its buffers, and drops its results.
func (b *Batch) Reset() {
	b.text = b.text[:0]
	b.ends = b.ends[:0]
	clear(b.msgs)
	b.cache = nil
	b.done = 0
}

// GetBatch looks up every key of b in one cgo call. Read the results with b's getters, by the
// index of the key in the order it was added. The error is non-nil only if the Cache is
// closed; errors of single keys (a corrupt record) are reported by the getters.
func (c *Cache) GetBatch(b *Batch) error {
	h := c.handle.Load()
	if h == 0 {
		return closedError("get")
	}
	n := len(b.ends)
	b.done = 0
	clear(b.msgs)
	if n == 0 {
		return nil
	}
	if cap(b.refs) < n {
		b.refs = make([]C.lg_ref, n)
	}
	b.refs = b.refs[:n]
	var text *C.uint8_t
	if len(b.text) > 0 {
		text = (*C.uint8_t)(unsafe.SliceData(b.text))
	}
	failed := C.lg_lookup_batch(C.uintptr_t(h), text, unsafe.SliceData(b.ends), C.size_t(n),
		unsafe.SliceData(b.refs))
	runtime.KeepAlive(c)
	if failed > 0 {
		if b.msgs == nil {
			b.msgs = make(map[int]string)
		}
		for i := range b.refs {
			if r := &b.refs[i]; r.msg != nil {
				b.msgs[i] = takeMessage(r.msg)
				r.msg = nil
			}
		}
	}
	b.cache = c
	b.done = n
	return nil
}

// at returns result i, or a closed marker once the cache is closed.
func (b *Batch) at(i int) ref {
	if i < 0 || i >= b.done {
		panic(fmt.Sprintf("larder: Batch result %d read, but GetBatch looked up %d keys", i, b.done))
	}
	if b.cache.handle.Load() == 0 {
		return ref{status: statusClosed}
	}
	c := &b.refs[i]
	msg := ""
	if c.status != C.LARDER_OK && c.status != C.LARDER_NOT_FOUND {
		msg = b.msgs[i]
	}
	return refOf(c, msg)
}

// fail is the slow path of the getters: nil for a missing key, else the error.
func (b *Batch) fail(i int, r *ref, want Type) error {
	return r.miss(b.key(i), want)
}

// Get returns result i whatever its type, copied, as [Cache.Get] does.
func (b *Batch) Get(i int) (Value, bool, error) {
	r := b.at(i)
	if r.status != statusOK {
		return Value{}, false, b.fail(i, &r, 0)
	}
	v, err := r.value()
	if err != nil {
		return Value{}, false, keyed(err, b.key(i))
	}
	return v, true, nil
}

// GetString returns result i as [Cache.GetString] does.
func (b *Batch) GetString(i int) (string, bool, error) {
	r := b.at(i)
	if !r.is(TypeString) {
		return "", false, b.fail(i, &r, TypeString)
	}
	return strings.Clone(r.str()), true, nil
}

// GetBytes returns result i as [Cache.GetBytes] does.
func (b *Batch) GetBytes(i int) ([]byte, bool, error) {
	r := b.at(i)
	if !r.isBytes() {
		return nil, false, b.fail(i, &r, TypeBytes)
	}
	return cloneSlice(r.bytes()), true, nil
}

// GetInt64 returns result i as [Cache.GetInt64] does.
func (b *Batch) GetInt64(i int) (int64, bool, error) {
	r := b.at(i)
	if !r.is(TypeInt64) {
		return 0, false, b.fail(i, &r, TypeInt64)
	}
	return r.int64(), true, nil
}

// GetFloat64 returns result i as [Cache.GetFloat64] does.
func (b *Batch) GetFloat64(i int) (float64, bool, error) {
	r := b.at(i)
	if !r.is(TypeFloat64) {
		return 0, false, b.fail(i, &r, TypeFloat64)
	}
	return r.float64(), true, nil
}

// GetBool returns result i as [Cache.GetBool] does.
func (b *Batch) GetBool(i int) (bool, bool, error) {
	r := b.at(i)
	if !r.is(TypeBool) {
		return false, false, b.fail(i, &r, TypeBool)
	}
	return r.bool(), true, nil
}

// GetFloat32s returns result i as [Cache.GetFloat32s] does.
func (b *Batch) GetFloat32s(i int) ([]float32, bool, error) {
	r := b.at(i)
	if !r.is(TypeFloat32s) {
		return nil, false, b.fail(i, &r, TypeFloat32s)
	}
	return cloneSlice(r.f32s()), true, nil
}

// GetFloat64s returns result i as [Cache.GetFloat64s] does.
func (b *Batch) GetFloat64s(i int) ([]float64, bool, error) {
	r := b.at(i)
	if !r.is(TypeFloat64s) {
		return nil, false, b.fail(i, &r, TypeFloat64s)
	}
	return cloneSlice(r.f64s()), true, nil
}

// GetStrings returns result i as [Cache.GetStrings] does.
func (b *Batch) GetStrings(i int) ([]string, bool, error) {
	r := b.at(i)
	if !r.is(TypeStrings) {
		return nil, false, b.fail(i, &r, TypeStrings)
	}
	strs, err := r.strs()
	if err != nil {
		return nil, false, keyed(err, b.key(i))
	}
	return strs, true, nil
}

// GetBytesUnsafe returns result i as [Cache.GetBytesUnsafe] does: a view of the mapping,
// valid until the Cache is closed.
func (b *Batch) GetBytesUnsafe(i int) ([]byte, bool, error) {
	r := b.at(i)
	if !r.isBytes() {
		return nil, false, b.fail(i, &r, TypeBytes)
	}
	return r.bytes(), true, nil
}

// GetStringUnsafe returns result i as [Cache.GetStringUnsafe] does: a view of the mapping,
// valid until the Cache is closed.
func (b *Batch) GetStringUnsafe(i int) (string, bool, error) {
	r := b.at(i)
	if !r.is(TypeString) {
		return "", false, b.fail(i, &r, TypeString)
	}
	return r.str(), true, nil
}

// GetFloat32sUnsafe returns result i as [Cache.GetFloat32sUnsafe] does: a view of the
// mapping, valid until the Cache is closed.
func (b *Batch) GetFloat32sUnsafe(i int) ([]float32, bool, error) {
	r := b.at(i)
	if !r.is(TypeFloat32s) {
		return nil, false, b.fail(i, &r, TypeFloat32s)
	}
	return r.f32s(), true, nil
}

// GetFloat64sUnsafe returns result i as [Cache.GetFloat64sUnsafe] does: a view of the
// mapping, valid until the Cache is closed.
func (b *Batch) GetFloat64sUnsafe(i int) ([]float64, bool, error) {
	r := b.at(i)
	if !r.is(TypeFloat64s) {
		return nil, false, b.fail(i, &r, TypeFloat64s)
	}
	return r.f64s(), true, nil
}
