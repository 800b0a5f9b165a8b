package larder

// #cgo CFLAGS: -I${SRCDIR}/../../crates/larder-cache-ffi/include -O2
// #cgo noescape lg_lookup
// #cgo nocallback lg_lookup
// #cgo noescape lg_contains
// #cgo nocallback lg_contains
// #cgo nocallback lg_close
// #cgo nocallback lg_len
// #cgo nocallback lg_info
// #cgo nocallback lg_verify
// #cgo nocallback lg_open
// #include "larder_go.h"
import "C"

import (
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Cache is an open, memory-mapped, read-only cache file.
//
// A Cache is safe for concurrent use by any number of goroutines: lookups take no lock and
// make no cgo call. Open maps the file and validates its header in the Rust library, which then
// hands over the mapping's address and its section bounds once; every lookup after that reads
// the mapping from Go (reader.go), bounds-checking each offset it reads from the file.
//
// Close it when done. A Cache that becomes unreachable without Close is closed by a cleanup
// (runtime.AddCleanup), but only then: slices returned by the Unsafe getters do not keep it
// reachable, so code that holds them must keep the Cache reachable too.
type Cache struct {
	handle  atomic.Uintptr // the C handle (C memory, not Go's); 0 once closed
	cleanup runtime.Cleanup
	path    string
	// view reads the mapping that handle keeps alive; set before the Cache is shared and never
	// changed. native is false when the Go reader cannot read the file (a format version it
	// does not know): lookups then make one cgo call each, as they all did before.
	view   mapView
	native bool
}

// Open memory-maps the cache file at path and validates its header (an O(1) check; use
// [Cache.Verify] to check every checksum). A file of a newer format version fails with
// [ErrUnsupportedVersion], a damaged one with [ErrCorrupt], a missing one with [ErrIO] (which
// also matches fs.ErrNotExist).
func Open(path string) (*Cache, error) {
	cpath, err := cString("open", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	r := C.lg_open(cpath)
	if r.status != C.LARDER_OK {
		return nil, takeError("open", "", r.status, r.msg)
	}
	return wrapCache(path, r.cache), nil
}

// wrapCache takes ownership of a C cache handle.
func wrapCache(path string, handle C.uintptr_t) *Cache {
	c := &Cache{path: path}
	c.view, c.native = newView(handle)
	c.handle.Store(uintptr(handle))
	c.cleanup = runtime.AddCleanup(c, func(h C.uintptr_t) { C.lg_close(h) }, handle)
	return c
}

// Close unmaps the file. Values returned by the copying getters stay valid; slices and strings
// returned by the Unsafe getters do not, and must not be used afterwards. Close must not run
// while other goroutines are still looking keys up in this Cache: a lookup that started before
// Close reads the mapping with plain loads, and Close may unmap it under the lookup's feet (a
// fault, as a C caller closing a handle in use would get). Lookups that start after Close fail
// with [ErrClosed]. Closing twice is a no-op. It always returns nil; the error result satisfies
// io.Closer.
func (c *Cache) Close() error {
	if h := c.handle.Swap(0); h != 0 {
		c.cleanup.Stop()
		C.lg_close(C.uintptr_t(h))
	}
	return nil
}

// Path returns the path the cache was opened from.
func (c *Cache) Path() string { return c.path }

// Len returns the number of keys, or 0 after Close.
func (c *Cache) Len() int {
	h := c.handle.Load()
	if h == 0 {
		return 0
	}
	n := C.lg_len(C.uintptr_t(h))
	runtime.KeepAlive(c)
	return int(n)
}

// Contains reports whether key is present. Keys are arbitrary bytes: to look up a []byte key b,
// pass string(b); the conversion does not allocate for keys of up to 32 bytes, since the key
// does not escape.
func (c *Cache) Contains(key string) (bool, error) {
	h := c.handle.Load()
	if h == 0 {
		return false, closedError("contains")
	}
	if c.native {
		_, found, bad := c.view.find(key)
		runtime.KeepAlive(c) // the mapping stays until the cleanup closes the handle
		if bad.what != "" {
			return false, keyed(statusError("contains", statusCorrupt, bad.message()), key)
		}
		return found, nil
	}
	return c.containsCgo(h, key)
}

// containsCgo is Contains through the C ABI.
func (c *Cache) containsCgo(h uintptr, key string) (bool, error) {
	r := C.lg_contains(C.uintptr_t(h), keyPtr(key), C.size_t(len(key)))
	runtime.KeepAlive(c)
	switch r.status {
	case C.LARDER_OK:
		return true, nil
	case C.LARDER_NOT_FOUND:
		return false, nil
	}
	return false, takeError("contains", key, r.status, r.msg)
}

// statusClosed marks a lookup on a closed Cache; the C ABI never returns it.
const statusClosed = 1000

// ref is one lookup's result, flattened as the C shim's lg_ref is (status, type, data pointer
// and length or the scalar, a string list's text), with a failure's message in Go memory. The
// Go reader and the cgo path both produce it, so the getters cannot tell them apart.
type ref struct {
	status int32 // a larder_status, or statusClosed
	typ    Type
	// BYTES, STR, F32_LIST, F64_LIST: the data in the mapping; STR_LIST: the end offsets.
	// nil when empty.
	data unsafe.Pointer
	// BYTES, STR: length in bytes; lists: element count; I64, BOOL: the value; F64: its bits.
	word   uint64
	aux    unsafe.Pointer // STR_LIST: the concatenated text (nil when empty)
	auxLen uint64         // STR_LIST: its length
	msg    string         // a failure's message
}

// refOf converts the C shim's result; msg is a failure's message, already taken.
func refOf(r *C.lg_ref, msg string) ref {
	return ref{
		status: int32(r.status),
		typ:    Type(r.value_type),
		data:   r.data,
		word:   uint64(r.word),
		aux:    unsafe.Pointer(r.aux),
		auxLen: uint64(r.aux_len),
		msg:    msg,
	}
}

// lookup is the lookup behind every getter: the Go reader, or one cgo call. It fills *r, a
// zero ref on the caller's stack (a 64-byte result is cheaper written in place than returned
// through three frames). Small enough to inline into each getter.
func (c *Cache) lookup(key string, r *ref) {
	if c.native && c.handle.Load() != 0 {
		c.view.get(key, r)
		runtime.KeepAlive(c) // the mapping stays until the cleanup closes the handle
		return
	}
	c.lookupOther(key, r)
}

// lookupOther is lookup on a closed Cache or one the Go reader cannot read.
func (c *Cache) lookupOther(key string, r *ref) {
	h := c.handle.Load()
	if h == 0 {
		r.status = statusClosed
		return
	}
	*r = c.lookupCgo(h, key)
}

// lookupCgo is a lookup through the C ABI: larder_cache_get.
func (c *Cache) lookupCgo(h uintptr, key string) ref {
	r := C.lg_lookup(C.uintptr_t(h), keyPtr(key), C.size_t(len(key)))
	runtime.KeepAlive(c)
	return refOf(&r, takeMessage(r.msg))
}

// is reports a hit of type t.
func (r *ref) is(t Type) bool {
	return r.status == statusOK && r.typ == t
}

// isBytes reports a hit that GetBytes accepts: bytes, or a string's bytes.
func (r *ref) isBytes() bool {
	return r.status == statusOK && (r.typ == TypeBytes || r.typ == TypeString)
}

func (r *ref) str() string      { return viewString(r.data, r.word) }
func (r *ref) bytes() []byte    { return viewSlice[byte](r.data, r.word) }
func (r *ref) f32s() []float32  { return viewSlice[float32](r.data, r.word) }
func (r *ref) f64s() []float64  { return viewSlice[float64](r.data, r.word) }
func (r *ref) int64() int64     { return int64(r.word) }
func (r *ref) float64() float64 { return math.Float64frombits(r.word) }
func (r *ref) bool() bool       { return r.word != 0 }
func (r *ref) strs() ([]string, error) {
	return strList(r.data, r.word, r.aux, r.auxLen)
}

// value copies a hit of any type into a Value.
func (r *ref) value() (Value, error) {
	v := Value{typ: r.typ}
	switch v.typ {
	case TypeBytes:
		v.bytes = cloneSlice(r.bytes())
	case TypeString:
		v.str = strings.Clone(r.str())
	case TypeInt64, TypeBool, TypeFloat64:
		v.num = r.word
	case TypeFloat32s:
		v.f32s = cloneSlice(r.f32s())
	case TypeFloat64s:
		v.f64s = cloneSlice(r.f64s())
	case TypeStrings:
		strs, err := r.strs()
		if err != nil {
			return Value{}, err
		}
		v.strs = strs
	default:
		return Value{}, corruptError("get", "value type unknown to this binding")
	}
	return v, nil
}

// miss is the slow path of every getter, for any result but a hit of the wanted type: nil for
// a missing key, else the error.
func (r *ref) miss(key string, want Type) error {
	switch r.status {
	case statusOK:
		return keyed(mismatchError("get", want, r.typ), key)
	case statusNotFound:
		return nil
	case statusClosed:
		return closedError("get")
	}
	return keyed(statusError("get", int(r.status), r.msg), key)
}

// Get looks key up whatever its type. The value is copied out of the mapping. ok is false for a
// missing key (with a nil error).
func (c *Cache) Get(key string) (Value, bool, error) {
	var r ref
	c.lookup(key, &r)
	if r.status != statusOK {
		return Value{}, false, r.miss(key, 0)
	}
	v, err := r.value()
	if err != nil {
		return Value{}, false, keyed(err, key)
	}
	return v, true, nil
}

// GetString returns a TypeString value, copied. ok is false for a missing key; a key of another
// type fails with [ErrTypeMismatch].
func (c *Cache) GetString(key string) (string, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeString) {
		return "", false, r.miss(key, TypeString)
	}
	return strings.Clone(r.str()), true, nil
}

// GetBytes returns a TypeBytes value (or the bytes of a TypeString value), copied.
func (c *Cache) GetBytes(key string) ([]byte, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.isBytes() {
		return nil, false, r.miss(key, TypeBytes)
	}
	return cloneSlice(r.bytes()), true, nil
}

// GetInt64 returns a TypeInt64 value.
func (c *Cache) GetInt64(key string) (int64, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeInt64) {
		return 0, false, r.miss(key, TypeInt64)
	}
	return r.int64(), true, nil
}

// GetFloat64 returns a TypeFloat64 value.
func (c *Cache) GetFloat64(key string) (float64, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeFloat64) {
		return 0, false, r.miss(key, TypeFloat64)
	}
	return r.float64(), true, nil
}

// GetBool returns a TypeBool value.
func (c *Cache) GetBool(key string) (bool, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeBool) {
		return false, false, r.miss(key, TypeBool)
	}
	return r.bool(), true, nil
}

// GetFloat32s returns a TypeFloat32s value, copied. See [Cache.GetFloat32sUnsafe] for a view
// of the mapping without the copy.
func (c *Cache) GetFloat32s(key string) ([]float32, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeFloat32s) {
		return nil, false, r.miss(key, TypeFloat32s)
	}
	return cloneSlice(r.f32s()), true, nil
}

// GetFloat64s returns a TypeFloat64s value, copied. See [Cache.GetFloat64sUnsafe] for a view
// of the mapping without the copy.
func (c *Cache) GetFloat64s(key string) ([]float64, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeFloat64s) {
		return nil, false, r.miss(key, TypeFloat64s)
	}
	return cloneSlice(r.f64s()), true, nil
}

// GetStrings returns a TypeStrings value, copied (the strings share one allocation). Every
// string's bounds and UTF-8 are checked; a damaged list fails with [ErrCorrupt].
func (c *Cache) GetStrings(key string) ([]string, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeStrings) {
		return nil, false, r.miss(key, TypeStrings)
	}
	strs, err := r.strs()
	if err != nil {
		return nil, false, keyed(err, key)
	}
	return strs, true, nil
}

// GetBytesUnsafe is [Cache.GetBytes] without the copy: the slice aliases the read-only
// mapping. It is valid only until Close (and only while the Cache is reachable), and must not
// be modified: a write faults. It never allocates.
func (c *Cache) GetBytesUnsafe(key string) ([]byte, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.isBytes() {
		return nil, false, r.miss(key, TypeBytes)
	}
	return r.bytes(), true, nil
}

// GetStringUnsafe is [Cache.GetString] without the copy: the string's bytes are the mapping's.
// It is valid only until Close (and only while the Cache is reachable). It never allocates.
func (c *Cache) GetStringUnsafe(key string) (string, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeString) {
		return "", false, r.miss(key, TypeString)
	}
	return r.str(), true, nil
}

// GetFloat32sUnsafe is [Cache.GetFloat32s] without the copy: the slice aliases the read-only
// mapping (aligned, little-endian, read in place). It is valid only until Close (and only while
// the Cache is reachable), and must not be modified. It never allocates.
func (c *Cache) GetFloat32sUnsafe(key string) ([]float32, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeFloat32s) {
		return nil, false, r.miss(key, TypeFloat32s)
	}
	return r.f32s(), true, nil
}

// GetFloat64sUnsafe is [Cache.GetFloat64s] without the copy, with the same rules as
// [Cache.GetFloat32sUnsafe].
func (c *Cache) GetFloat64sUnsafe(key string) ([]float64, bool, error) {
	var r ref
	c.lookup(key, &r)
	if !r.is(TypeFloat64s) {
		return nil, false, r.miss(key, TypeFloat64s)
	}
	return r.f64s(), true, nil
}

// Info describes an open cache file.
type Info struct {
	Name            string    // the name given at build time
	FormatVersion   uint32    // the file's format version
	Dedup           bool      // whether the builder stored repeated values once
	Created         time.Time // build time (millisecond precision)
	KeyCount        uint64    // keys
	ValueCount      uint64    // stored values (fewer than keys when dedup merged some)
	FileBytes       uint64    // file size
	DataBytes       uint64    // size of the record section
	IndexBytes      uint64    // size of the hash index
	RawKeyBytes     uint64    // sum of key lengths
	RawValueBytes   uint64    // sum of value payload lengths before dedup
	DedupSavedBytes uint64    // bytes dedup saved
}

// Info returns facts about the file from its header.
func (c *Cache) Info() (Info, error) {
	h := c.handle.Load()
	if h == 0 {
		return Info{}, closedError("info")
	}
	r := C.lg_info(C.uintptr_t(h))
	if r.status != C.LARDER_OK {
		runtime.KeepAlive(c)
		return Info{}, takeError("info", "", r.status, r.msg)
	}
	i := r.info
	info := Info{
		Name:            strings.Clone(viewString(unsafe.Pointer(i.name), uint64(i.name_len))),
		FormatVersion:   uint32(i.format_version),
		Dedup:           i.dedup != 0,
		Created:         time.UnixMilli(int64(i.created_unix_ms)),
		KeyCount:        uint64(i.key_count),
		ValueCount:      uint64(i.value_count),
		FileBytes:       uint64(i.file_bytes),
		DataBytes:       uint64(i.data_bytes),
		IndexBytes:      uint64(i.index_bytes),
		RawKeyBytes:     uint64(i.raw_key_bytes),
		RawValueBytes:   uint64(i.raw_value_bytes),
		DedupSavedBytes: uint64(i.dedup_saved_bytes),
	}
	runtime.KeepAlive(c) // the name was borrowed from the handle until copied above
	return info, nil
}

// Verify checks every checksum and that every index entry leads to its record: a full read of
// the file. It returns nil or an error matching [ErrCorrupt].
func (c *Cache) Verify() error {
	h := c.handle.Load()
	if h == 0 {
		return closedError("verify")
	}
	r := C.lg_verify(C.uintptr_t(h))
	runtime.KeepAlive(c)
	if r.status != C.LARDER_OK {
		return takeError("verify", "", r.status, r.msg)
	}
	return nil
}

// strList copies a string list out of the mapping (end offsets at ends, count of them, then
// the text), checking each string's bounds and UTF-8 as larder_str_list_get would, without a
// cgo call per string.
func strList(ends unsafe.Pointer, count uint64, text unsafe.Pointer, textLen uint64) ([]string, error) {
	if count == 0 {
		return []string{}, nil
	}
	all := strings.Clone(viewString(text, textLen))
	out := make([]string, count)
	var start uint32
	for i, end := range viewSlice[uint32](ends, count) {
		if start > end || int(end) > len(all) {
			return nil, corruptError("get", "corrupt cache file: bad string list offsets")
		}
		s := all[start:end]
		if !utf8.ValidString(s) {
			return nil, corruptError("get",
				"corrupt cache file: bad string list element (not UTF-8)")
		}
		out[i] = s
		start = end
	}
	return out, nil
}

// keyPtr passes a key to C in place. The C side reads it during the call only (the shims are
// declared noescape), so the key may live on the goroutine's stack.
func keyPtr(key string) *C.uint8_t {
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(key)))
}

// viewSlice views n elements at p, memory owned by the mapping. n == 0 gives an empty,
// non-nil slice without touching p (which may then be a dangling, aligned placeholder).
func viewSlice[T any](p unsafe.Pointer, n uint64) []T {
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(p), int(n))
}

func viewString(p unsafe.Pointer, n uint64) string {
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(p), int(n))
}

func cloneSlice[T any](s []T) []T {
	return append(make([]T, 0, len(s)), s...)
}

func cloneBytes(p unsafe.Pointer, n uint64) []byte {
	return cloneSlice(viewSlice[byte](p, n))
}

// takeError converts a failed status into an *Error, taking ownership of the C copy of the
// message that the shim made on the failing thread.
func takeError(op, key string, status C.larder_status, msg *C.char) error {
	return keyed(statusError(op, int(status), takeMessage(msg)), key)
}

// takeMessage converts a message copied by the shim to Go and frees the C copy.
func takeMessage(msg *C.char) string {
	if msg == nil {
		return ""
	}
	text := C.GoString(msg)
	C.free(unsafe.Pointer(msg))
	return text
}

// keyed records the key an error is about. It copies the key, so that keys never escape to
// the heap on the success path (callers' string(b) conversions stay on the stack).
func keyed(err error, key string) error {
	if e, ok := err.(*Error); ok && key != "" {
		e.Key = strings.Clone(key)
	}
	return err
}

// cString copies a Go string to the C heap, refusing strings that contain NUL.
func cString(op, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Op: op, Msg: "path contains a NUL byte", Kind: ErrInvalidArgument}
	}
	return C.CString(s), nil
}
