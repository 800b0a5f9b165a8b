package larder

// #cgo noescape lg_insert_bytes
// #cgo nocallback lg_insert_bytes
// #cgo noescape lg_insert_str
// #cgo nocallback lg_insert_str
// #cgo noescape lg_insert_i64
// #cgo nocallback lg_insert_i64
// #cgo noescape lg_insert_f64
// #cgo nocallback lg_insert_f64
// #cgo noescape lg_insert_bool
// #cgo nocallback lg_insert_bool
// #cgo noescape lg_insert_f32_list
// #cgo nocallback lg_insert_f32_list
// #cgo noescape lg_insert_f64_list
// #cgo nocallback lg_insert_f64_list
// #cgo noescape lg_insert_str_list
// #cgo nocallback lg_insert_str_list
// #cgo noescape lg_builder_set_name
// #cgo nocallback lg_builder_set_name
// #cgo nocallback lg_builder_new
// #cgo nocallback lg_builder_enable_dedup
// #cgo nocallback lg_builder_reject_duplicates
// #cgo nocallback lg_builder_finish
// #cgo nocallback lg_builder_abort
// #cgo noescape lg_insert_batch
// #cgo nocallback lg_insert_batch
// #include "larder_go.h"
import "C"

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// DuplicatePolicy says what a Builder does with a key inserted twice.
type DuplicatePolicy uint8

const (
	// DuplicatesLastWins keeps the last value inserted for a key (the default).
	DuplicatesLastWins DuplicatePolicy = iota
	// DuplicatesReject makes Finish fail with ErrDuplicateKey.
	DuplicatesReject
)

// BuilderOptions configures a Builder. The zero value (or a nil pointer) is a valid default:
// no name, no dedup, last insert wins.
type BuilderOptions struct {
	// Name is stored in the header and reported by Info (UTF-8, at most 256 bytes; a longer
	// one makes Finish fail with ErrInvalidArgument).
	Name string
	// Dedup stores repeated values once, each later copy becoming a reference to the first;
	// Stats reports the saving.
	Dedup bool
	// Duplicates chooses what happens to a key inserted twice.
	Duplicates DuplicatePolicy
}

// Stats is what Finish reports about a build.
type Stats struct {
	KeyCount        uint64        // distinct keys in the file
	DuplicateKeys   uint64        // inserts that repeated an earlier key (the last one won)
	ValueCount      uint64        // values stored
	DedupedValues   uint64        // inserts stored as a reference to an identical earlier value
	DedupSavedBytes uint64        // bytes dedup saved
	RawKeyBytes     uint64        // sum of key lengths inserted
	RawValueBytes   uint64        // sum of value payload lengths inserted
	FileBytes       uint64        // size of the finished file
	BuildTime       time.Duration // wall time of the build, millisecond resolution
}

// Builder writes a cache file. Records stream to a temporary file beside the destination as
// they are inserted (memory holds about 16 bytes per key); Finish writes the index and header,
// syncs, and renames the file into place, so a reader of path sees the old file or the
// complete new one, never a partial one.
//
// Inserts of bytes, strings and numbers are buffered and handed to the C library a few
// thousand at a time, in one cgo call, which saves the ~40 ns cgo transition per insert.
// Arguments are checked when Insert is called (an invalid one returns its error at once and
// leaves the build usable), but an I/O error while writing surfaces from a later Insert or
// from Finish, which then fails. Lists go to the library directly, in order with the buffered
// inserts.
//
// A Builder is not safe for concurrent use. Call Finish to publish the file or Abort to drop
// it; `defer b.Abort()` right after NewBuilder is the idiom, since Abort after Finish is a
// no-op. A Builder that becomes unreachable unfinished is aborted by a cleanup.
type Builder struct {
	handle   C.uintptr_t // the C handle (C memory); 0 once finished or aborted
	cleanup  runtime.Cleanup
	pending  []byte // buffered inserts, in lg_insert_batch's format
	pendingN int    // entries in pending
}

// Limits of the insert buffer. Entries beyond bufferedLenMax go straight to the library, so the
// buffer stays small; keys over keyLenMax too, so that the library reports them at once.
const (
	pendingBytesMax = 256 << 10
	pendingCountMax = 4096
	bufferedLenMax  = 16 << 10
	keyLenMax       = 64 << 10 // KEY_LEN_MAX of the format
	batchHeaderLen  = 16
)

// NewBuilder starts a build that ends up at path. opts may be nil.
func NewBuilder(path string, opts *BuilderOptions) (*Builder, error) {
	cpath, err := cString("build", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	r := C.lg_builder_new(cpath)
	if r.status != C.LARDER_OK {
		return nil, takeError("build", "", r.status, r.msg)
	}
	b := &Builder{handle: r.builder}
	b.cleanup = runtime.AddCleanup(b, func(h C.uintptr_t) { C.lg_builder_abort(h) }, r.builder)
	if opts == nil {
		return b, nil
	}
	if opts.Name != "" {
		s := C.lg_builder_set_name(b.handle, keyPtr(opts.Name), C.size_t(len(opts.Name)))
		if err := b.check("build", "", s); err != nil {
			b.Abort()
			return nil, err
		}
	}
	if opts.Dedup {
		if err := b.check("build", "", C.lg_builder_enable_dedup(b.handle)); err != nil {
			b.Abort()
			return nil, err
		}
	}
	if opts.Duplicates == DuplicatesReject {
		if err := b.check("build", "", C.lg_builder_reject_duplicates(b.handle)); err != nil {
			b.Abort()
			return nil, err
		}
	}
	return b, nil
}

func (b *Builder) check(op, key string, s C.lg_status) error {
	runtime.KeepAlive(b)
	if s.status == C.LARDER_OK {
		return nil
	}
	return takeError(op, key, s.status, s.msg)
}

func (b *Builder) closed() error {
	return &Error{Op: "insert", Msg: "builder is finished or aborted", Kind: ErrClosed}
}

// buffer appends one insert to the batch, flushing it when full.
func (b *Builder) buffer(valueType C.uint32_t, key string, word uint64, value string) error {
	b.pending = binary.LittleEndian.AppendUint32(b.pending, uint32(valueType))
	b.pending = binary.LittleEndian.AppendUint32(b.pending, uint32(len(key)))
	b.pending = binary.LittleEndian.AppendUint64(b.pending, word)
	b.pending = append(b.pending, key...)
	b.pending = append(b.pending, value...)
	b.pendingN++
	if len(b.pending) >= pendingBytesMax || b.pendingN >= pendingCountMax {
		return b.flush()
	}
	return nil
}

// flush hands the buffered inserts to the library in one call. An error names the key of the
// first insert that failed; the others were still made.
func (b *Builder) flush() error {
	if b.pendingN == 0 {
		return nil
	}
	r := C.lg_insert_batch(b.handle, (*C.uint8_t)(unsafe.SliceData(b.pending)),
		C.size_t(b.pendingN))
	runtime.KeepAlive(b)
	var err error
	if r.status != C.LARDER_OK {
		err = takeError("insert", pendingKey(b.pending, int(r.failed)), r.status, r.msg)
	}
	b.pending = b.pending[:0]
	b.pendingN = 0
	return err
}

// pendingKey returns the key of entry i of a batch buffer.
func pendingKey(buf []byte, i int) string {
	at := 0
	for ; i > 0; i-- {
		valueType := binary.LittleEndian.Uint32(buf[at:])
		keyLen := int(binary.LittleEndian.Uint32(buf[at+4:]))
		at += batchHeaderLen + keyLen
		if valueType == C.LARDER_TYPE_BYTES || valueType == C.LARDER_TYPE_STR {
			at += int(binary.LittleEndian.Uint64(buf[at-keyLen-8:]))
		}
	}
	keyLen := int(binary.LittleEndian.Uint32(buf[at+4:]))
	return string(buf[at+batchHeaderLen : at+batchHeaderLen+keyLen])
}

// direct makes an insert that is not buffered, after the buffered ones so that the order of
// inserts (the last of a key wins) is kept.
func (b *Builder) direct(key string, insert func() C.lg_status) error {
	flushErr := b.flush()
	err := b.check("insert", key, insert())
	if flushErr != nil {
		return errors.Join(flushErr, err)
	}
	return err
}

// InsertBytes inserts a TypeBytes value. Keys are arbitrary bytes (pass string(b) for a
// []byte key) of at most 64 KiB.
func (b *Builder) InsertBytes(key string, value []byte) error {
	if b.handle == 0 {
		return b.closed()
	}
	if len(key) > keyLenMax || len(key)+len(value) > bufferedLenMax {
		return b.direct(key, func() C.lg_status {
			return C.lg_insert_bytes(b.handle, keyPtr(key), C.size_t(len(key)),
				(*C.uint8_t)(unsafe.SliceData(value)), C.size_t(len(value)))
		})
	}
	v := unsafe.String(unsafe.SliceData(value), len(value)) // copied by buffer
	return b.buffer(C.LARDER_TYPE_BYTES, key, uint64(len(value)), v)
}

// InsertString inserts a TypeString value; it must be valid UTF-8 ([ErrInvalidArgument]
// otherwise).
func (b *Builder) InsertString(key, value string) error {
	if b.handle == 0 {
		return b.closed()
	}
	if len(key) > keyLenMax || len(key)+len(value) > bufferedLenMax || !utf8.ValidString(value) {
		return b.direct(key, func() C.lg_status {
			return C.lg_insert_str(b.handle, keyPtr(key), C.size_t(len(key)), keyPtr(value),
				C.size_t(len(value)))
		})
	}
	return b.buffer(C.LARDER_TYPE_STR, key, uint64(len(value)), value)
}

// InsertInt64 inserts a TypeInt64 value.
func (b *Builder) InsertInt64(key string, value int64) error {
	return b.scalar(C.LARDER_TYPE_I64, key, uint64(value))
}

// InsertFloat64 inserts a TypeFloat64 value.
func (b *Builder) InsertFloat64(key string, value float64) error {
	return b.scalar(C.LARDER_TYPE_F64, key, math.Float64bits(value))
}

// InsertBool inserts a TypeBool value.
func (b *Builder) InsertBool(key string, value bool) error {
	var word uint64
	if value {
		word = 1
	}
	return b.scalar(C.LARDER_TYPE_BOOL, key, word)
}

func (b *Builder) scalar(valueType C.uint32_t, key string, word uint64) error {
	if b.handle == 0 {
		return b.closed()
	}
	if len(key) > keyLenMax {
		// Not buffered, so that the library reports the key at once.
		return b.direct(key, func() C.lg_status {
			k, n := keyPtr(key), C.size_t(len(key))
			switch valueType {
			case C.LARDER_TYPE_F64:
				return C.lg_insert_f64(b.handle, k, n, C.double(math.Float64frombits(word)))
			case C.LARDER_TYPE_BOOL:
				return C.lg_insert_bool(b.handle, k, n, C.int(word))
			}
			return C.lg_insert_i64(b.handle, k, n, C.int64_t(word))
		})
	}
	return b.buffer(valueType, key, word, "")
}

// InsertFloat32s inserts a TypeFloat32s value.
func (b *Builder) InsertFloat32s(key string, values []float32) error {
	if b.handle == 0 {
		return b.closed()
	}
	return b.direct(key, func() C.lg_status {
		return C.lg_insert_f32_list(b.handle, keyPtr(key), C.size_t(len(key)),
			(*C.float)(unsafe.SliceData(values)), C.size_t(len(values)))
	})
}

// InsertFloat64s inserts a TypeFloat64s value.
func (b *Builder) InsertFloat64s(key string, values []float64) error {
	if b.handle == 0 {
		return b.closed()
	}
	return b.direct(key, func() C.lg_status {
		return C.lg_insert_f64_list(b.handle, keyPtr(key), C.size_t(len(key)),
			(*C.double)(unsafe.SliceData(values)), C.size_t(len(values)))
	})
}

// InsertStrings inserts a TypeStrings value; every string must be valid UTF-8.
func (b *Builder) InsertStrings(key string, values []string) error {
	if b.handle == 0 {
		return b.closed()
	}
	// C may not be handed memory that holds Go pointers, so the strings travel as one buffer
	// plus lengths, and the shim builds the pointer array.
	total := 0
	for _, s := range values {
		total += len(s)
	}
	text := make([]byte, 0, total)
	lens := make([]C.size_t, len(values))
	for i, s := range values {
		text = append(text, s...)
		lens[i] = C.size_t(len(s))
	}
	var textPtr *C.uint8_t
	if total > 0 {
		textPtr = (*C.uint8_t)(unsafe.SliceData(text))
	}
	return b.direct(key, func() C.lg_status {
		return C.lg_insert_str_list(b.handle, keyPtr(key), C.size_t(len(key)), textPtr,
			unsafe.SliceData(lens), C.size_t(len(values)))
	})
}

// Insert inserts a Value of any type, e.g. one read with [Cache.Get] from another file.
func (b *Builder) Insert(key string, v Value) error {
	switch v.typ {
	case TypeBytes:
		return b.InsertBytes(key, v.bytes)
	case TypeString:
		return b.InsertString(key, v.str)
	case TypeInt64:
		return b.InsertInt64(key, v.Int64())
	case TypeFloat64:
		return b.InsertFloat64(key, v.Float64())
	case TypeBool:
		return b.InsertBool(key, v.Bool())
	case TypeFloat32s:
		return b.InsertFloat32s(key, v.f32s)
	case TypeFloat64s:
		return b.InsertFloat64s(key, v.f64s)
	case TypeStrings:
		return b.InsertStrings(key, v.strs)
	}
	return &Error{Op: "insert", Key: strings.Clone(key), Msg: "the zero Value has no type",
		Kind: ErrInvalidArgument}
}

// Finish hands over the buffered inserts, writes the index and header, syncs, and renames the
// file into place. The Builder is spent afterwards, whether Finish succeeds or not (on failure
// the temporary file is removed). If a buffered insert fails here, Finish fails with its error.
func (b *Builder) Finish() (Stats, error) {
	if b.handle == 0 {
		return Stats{}, &Error{Op: "finish", Msg: "builder is finished or aborted", Kind: ErrClosed}
	}
	if err := b.flush(); err != nil {
		// An insert was lost; publishing the file anyway would hide that.
		b.Abort()
		return Stats{}, err
	}
	h := b.handle
	b.handle = 0
	b.cleanup.Stop()
	r := C.lg_builder_finish(h)
	if r.status != C.LARDER_OK {
		return Stats{}, takeError("finish", "", r.status, r.msg)
	}
	s := r.stats
	return Stats{
		KeyCount:        uint64(s.key_count),
		DuplicateKeys:   uint64(s.duplicate_keys),
		ValueCount:      uint64(s.value_count),
		DedupedValues:   uint64(s.deduped_values),
		DedupSavedBytes: uint64(s.dedup_saved_bytes),
		RawKeyBytes:     uint64(s.raw_key_bytes),
		RawValueBytes:   uint64(s.raw_value_bytes),
		FileBytes:       uint64(s.file_bytes),
		BuildTime:       time.Duration(s.build_ms) * time.Millisecond,
	}, nil
}

// Abort drops the build and removes its temporary file. It is a no-op after Finish or Abort.
func (b *Builder) Abort() {
	if b.handle == 0 {
		return
	}
	h := b.handle
	b.handle = 0
	b.pending = nil
	b.pendingN = 0
	b.cleanup.Stop()
	C.lg_builder_abort(h)
}
