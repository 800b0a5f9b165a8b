package larder

// #cgo nocallback lg_layout
// #include "larder_go.h"
import "C"

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// This file is the lookup path that needs no cgo call: a Go reading of the memory-mapped file,
// following docs/cache-format.md and written to match crates/larder-cache/src/reader.rs
// (find, probe, match_key, value_at, decode) step for step, so that every key, hit or miss,
// intact or damaged, gives the result and the error the Rust reader gives. The Rust library
// opens the file, validates its header and maps it; it hands the mapping and the validated
// section bounds over once (larder_cache_layout), and every lookup after that is plain Go.
//
// Nothing past the header was validated, so every offset read from the file is checked here
// against the section it must lie in before it is used: a damaged or hostile file gives
// ErrCorrupt, never an index-out-of-range panic. The only indexing not preceded by an explicit
// check is into a bucket (a *[64]byte) at lane positions below 64 by construction.

// Format version 1 constants (crates/larder-cache/src/format.rs).
const (
	formatVersion  = 1
	bucketLen      = 64   // bytes per index bucket: one cache line
	tagRef         = 0x80 // a value tag with this bit refers to an identical earlier value
	tagShortStr    = 0x40 // tags 0x40..0x7f: a string of up to 63 bytes, length in the tag
	shortStrLenMax = 0x3f
	maxPadding     = 7 // zero bytes that may precede a value tag (alignment)
)

// mapView is an open file as the Go reader sees it: views of the mapping, which Rust owns and
// unmaps on the last close of its handle.
type mapView struct {
	data  []byte // the file up to the end of the record section: every record and value
	index []byte // the hash index: buckets of 64 bytes
	// homeBuckets is the number of buckets hashes map onto (≥ 1): home = hash*homeBuckets>>64.
	homeBuckets uint64
	probeMax    uint64 // farthest any key sits past its home bucket, in buckets
	// lanes0, lanes1: the tag bytes of a bucket's first and second 8-byte words that are
	// lanes, as 0x80 in each lane's byte. 4-byte offsets: 12 lanes (8 + 4); 8-byte: 7 (7 + 0).
	lanes0, lanes1 uint64
	wide           bool // 8-byte record offsets
}

// newView fetches the layout of an open handle and builds the view, or returns ok == false
// when the Go reader cannot read this file (another format version, or a layout that breaks
// the guarantees the Rust side documents): lookups then go through cgo.
func newView(handle C.uintptr_t) (mapView, bool) {
	r := C.lg_layout(handle)
	if r.status != C.LARDER_OK {
		takeMessage(r.msg)
		return mapView{}, false
	}
	return viewOf(unsafe.Pointer(r.layout.base), uint64(r.layout.len), layoutOf(&r.layout))
}

// layout mirrors larder_layout in Go types.
type layout struct {
	formatVersion                       uint32
	offsetWidth                         uint32
	dataEnd, indexStart, indexEnd       uint64
	homeBucketCount, probeMax, keyCount uint64
}

func layoutOf(l *C.larder_layout) layout {
	return layout{
		formatVersion:   uint32(l.format_version),
		offsetWidth:     uint32(l.offset_width),
		dataEnd:         uint64(l.data_end),
		indexStart:      uint64(l.index_start),
		indexEnd:        uint64(l.index_end),
		homeBucketCount: uint64(l.home_bucket_count),
		probeMax:        uint64(l.probe_max),
		keyCount:        uint64(l.key_count),
	}
}

// viewOf checks a layout against the mapping's length and builds the view over base.
func viewOf(base unsafe.Pointer, n uint64, l layout) (mapView, bool) {
	if base == nil || l.formatVersion != formatVersion ||
		(l.offsetWidth != 4 && l.offsetWidth != 8) ||
		l.dataEnd > l.indexStart || l.indexStart >= l.indexEnd || l.indexEnd > n ||
		(l.indexEnd-l.indexStart)%bucketLen != 0 || l.homeBucketCount == 0 ||
		l.homeBucketCount > (l.indexEnd-l.indexStart)/bucketLen || n > uint64(maxInt) {
		return mapView{}, false
	}
	file := unsafe.Slice((*byte)(base), int(n))
	v := mapView{
		data:        file[:l.dataEnd:l.dataEnd],
		index:       file[l.indexStart:l.indexEnd:l.indexEnd],
		homeBuckets: l.homeBucketCount,
		probeMax:    l.probeMax,
		wide:        l.offsetWidth == 8,
	}
	if v.wide {
		v.lanes0, v.lanes1 = 0x0080808080808080, 0
	} else {
		v.lanes0, v.lanes1 = 0x8080808080808080, 0x80808080
	}
	return v, true
}

const maxInt = int(^uint(0) >> 1)

// base is the address of the file's first byte (data starts at offset 0 and holds the header).
func (v *mapView) base() unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(v.data)) }

// fault is a corrupt structure met by a lookup: what was being read, and its file offset. The
// zero fault is none.
type fault struct {
	what string
	at   uint64
}

// message is the Rust reader's text for the same fault (Error::Corrupt's Display).
func (f fault) message() string {
	return "corrupt cache file: bad " + f.what + " at offset " + strconv.FormatUint(f.at, 10)
}

// zeroBytes has 0x80 in each byte of the result where x has a zero byte, and 0 elsewhere. The
// additions cannot carry between bytes, so unlike the usual has-zero trick it is exact for every
// byte, which the lane walk relies on.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// find returns the file offset just past key in its record, found == false for a missing key,
// or the fault that stopped the walk (reader.rs: find and probe).
//
// It is written as one function with its common case inline (a key of up to 16 bytes hashed
// here, a one-byte key length, a word compare of the key): a Go call spills every live register
// (the ABI has no callee-saved ones), and the fewer instructions and loads a lookup takes, the
// more lookups the CPU keeps in flight at once, overlapping their cache misses.
func (v *mapView) find(key string) (pos uint64, found bool, bad fault) {
	// hashKey, inline for the usual key of 9 to 16 bytes.
	var hash uint64
	keyLen := uint64(len(key))
	kb := unsafe.Slice(unsafe.StringData(key), len(key))
	if keyLen > 8 && keyLen <= 16 {
		lo := binary.LittleEndian.Uint64(kb) ^ (xxhSecret024 ^ xxhSecret032)
		hi := binary.LittleEndian.Uint64(kb[keyLen-8:]) ^ (xxhSecret040 ^ xxhSecret048)
		mh, ml := bits.Mul64(lo, hi)
		h := keyLen + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
		h ^= h >> 37
		h *= 0x165667919e3779f9
		hash = h ^ h>>32
	} else {
		hash = hashKey(key)
	}
	home, _ := bits.Mul64(hash, v.homeBuckets)
	tag := uint8(hash)
	if tag == 0 {
		tag = 1 // 0 marks an empty lane
	}
	pattern := uint64(tag) * 0x0101010101010101
	data := v.data
	for bucket := home; ; bucket++ {
		start := bucket * bucketLen
		if start > uint64(len(v.index))-bucketLen {
			return 0, false, fault{} // a hostile probe_max cannot walk past the index
		}
		line := (*[bucketLen]byte)(v.index[start : start+bucketLen])
		w0 := binary.LittleEndian.Uint64(line[0:8])
		w1 := binary.LittleEndian.Uint64(line[8:16])
		// Lanes in ascending order, as the Rust reader tries them: which one matches first
		// decides which damaged record is reported. hits has 0x80 in the byte of each lane
		// whose tag matches: lanes 0-7 in the low 64 bits, 8-11 above.
		hits0 := zeroBytes(w0^pattern) & v.lanes0
		hits1 := zeroBytes(w1^pattern) & v.lanes1
		for hits0|hits1 != 0 {
			var lane int
			if hits0 != 0 {
				lane = bits.TrailingZeros64(hits0) >> 3
				hits0 &= hits0 - 1
			} else {
				lane = 8 + bits.TrailingZeros64(hits1)>>3
				hits1 &= hits1 - 1
			}
			var offset uint64
			if v.wide {
				offset = binary.LittleEndian.Uint64(line[8+8*lane:])
			} else {
				offset = uint64(binary.LittleEndian.Uint32(line[16+4*lane:]))
			}
			// The record's key length is a varint; the common one-byte case is read here.
			if offset < uint64(len(data)) && data[offset] < 0x80 {
				if uint64(data[offset]) != keyLen {
					continue
				}
				end := offset + 1 + keyLen
				if end > uint64(len(data)) {
					return 0, false, fault{"record key", offset}
				}
				stored := data[offset+1 : end]
				if keyLen > 8 && keyLen <= 16 { // keyEqual, inline for the usual key
					le := binary.LittleEndian
					if (le.Uint64(stored)^le.Uint64(kb))|
						(le.Uint64(stored[keyLen-8:])^le.Uint64(kb[keyLen-8:])) == 0 {
						return end, true, fault{}
					}
				} else if keyEqual(stored, key) {
					return end, true, fault{}
				}
				continue
			}
			if pos, found, bad = v.matchKey(offset, key); found || bad.what != "" {
				return pos, found, bad
			}
		}
		if zeroBytes(w0)&v.lanes0|zeroBytes(w1)&v.lanes1 != 0 || bucket-home >= v.probeMax {
			return 0, false, fault{}
		}
	}
}

// XXH3 secret words used by inputs of 4 to 16 bytes (the reference kSecret, from offset 8).
const (
	xxhSecret008 = 0x1cad21f72c81017c
	xxhSecret016 = 0xdb979083e96dd4de
	xxhSecret024 = 0x1f67b3b7a4a44072
	xxhSecret032 = 0x78e5c0cc4ee679cb
	xxhSecret040 = 0x2172ffcc7dd05a82
	xxhSecret048 = 0x8e2443f7744608b8
)

// hashKey is XXH3-64 with seed 0, the file's key hash. Keys of 4 to 16 bytes, the usual cache
// key, are hashed here (the reference XXH3_len_4to8_64b and XXH3_len_9to16_64b, small enough
// to inline); others go to github.com/zeebo/xxh3. TestHashMatchesRust checks both against
// hashes computed by the Rust reader's xxhash-rust.
func hashKey(key string) uint64 {
	n := uint64(len(key))
	if n < 4 || n > 16 {
		return xxh3.HashString(key)
	}
	b := unsafe.Slice(unsafe.StringData(key), len(key))
	if n > 8 {
		lo := binary.LittleEndian.Uint64(b) ^ (xxhSecret024 ^ xxhSecret032)
		hi := binary.LittleEndian.Uint64(b[n-8:]) ^ (xxhSecret040 ^ xxhSecret048)
		mh, ml := bits.Mul64(lo, hi)
		h := n + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
		h ^= h >> 37
		h *= 0x165667919e3779f9
		return h ^ h>>32
	}
	in := uint64(binary.LittleEndian.Uint32(b[n-4:])) + uint64(binary.LittleEndian.Uint32(b))<<32
	h := in ^ (xxhSecret008 ^ xxhSecret016)
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= 0x9fb21c651e98df25
	h ^= h>>35 + n
	h *= 0x9fb21c651e98df25
	return h ^ h>>28
}

// keyEqual compares a stored key with key, of the same length, with two overlapping word
// compares for 4 to 16 bytes instead of a call (reader.rs: bytes_eq).
func keyEqual(stored []byte, key string) bool {
	n := len(key)
	if len(stored) != n {
		return false
	}
	k := unsafe.Slice(unsafe.StringData(key), n)
	le := binary.LittleEndian
	switch {
	case n >= 8 && n <= 16:
		return (le.Uint64(stored)^le.Uint64(k))|(le.Uint64(stored[n-8:])^le.Uint64(k[n-8:])) == 0
	case n >= 4 && n < 8:
		return (le.Uint32(stored)^le.Uint32(k))|(le.Uint32(stored[n-4:])^le.Uint32(k[n-4:])) == 0
	}
	return string(stored) == key
}

// matchKey compares the key of the record at offset with key; it returns the offset past the
// stored key on a match.
func (v *mapView) matchKey(offset uint64, key string) (uint64, bool, fault) {
	keyLen, keyStart, ok := varint(v.data, offset)
	if !ok {
		return 0, false, fault{"varint", offset}
	}
	if keyLen != uint64(len(key)) {
		return 0, false, fault{}
	}
	end := keyStart + keyLen // keyStart ≤ len(data) and keyLen is a Go length: no overflow
	if end > uint64(len(v.data)) {
		return 0, false, fault{"record key", offset}
	}
	if !keyEqual(v.data[keyStart:end], key) {
		return 0, false, fault{}
	}
	return end, true, fault{}
}

// varint reads an unsigned LEB128 varint at pos (format.rs: get_varint).
func varint(b []byte, pos uint64) (value, next uint64, ok bool) {
	if pos < uint64(len(b)) && b[pos] < 0x80 {
		return uint64(b[pos]), pos + 1, true
	}
	return varintSlow(b, pos)
}

func varintSlow(b []byte, pos uint64) (value, next uint64, ok bool) {
	for i := uint64(0); i < 10; i++ {
		at := pos + i // pos < len(b) once i > 0, so no overflow
		if at >= uint64(len(b)) {
			return 0, 0, false
		}
		part := uint64(b[at] & 0x7f)
		if i == 9 && part > 1 {
			return 0, 0, false
		}
		value |= part << (7 * i)
		if b[at] < 0x80 {
			return value, at + 1, true
		}
	}
	return 0, 0, false
}

// payload is where a value's bytes start; short strings carry their length in the tag.
type payload struct {
	pos      uint64
	shortLen uint64
	short    bool
}

// valueAt reads the value tag at or after pos (skipping alignment padding) and resolves a dedup
// reference (reader.rs: value_at).
func (v *mapView) valueAt(pos uint64) (Type, payload, fault) {
	data := v.data
	n := uint64(len(data))
	p := pos
	if p >= n {
		return 0, payload{}, fault{"value tag", p}
	}
	tag := data[p]
	for tag == 0 {
		p++
		if p-pos > maxPadding {
			return 0, payload{}, fault{"value padding", pos}
		}
		if p >= n {
			return 0, payload{}, fault{"value tag", p}
		}
		tag = data[p]
	}
	if tag&^shortStrLenMax == tagShortStr {
		return TypeString, payload{pos: p + 1, shortLen: uint64(tag & shortStrLenMax), short: true}, fault{}
	}
	typ := Type(tag &^ tagRef)
	if typ < TypeBytes || typ > TypeStrings {
		return 0, payload{}, fault{"value tag", p}
	}
	if tag&tagRef == 0 {
		return typ, payload{pos: p + 1}, fault{}
	}
	// A reference points back at an earlier plain value of the same type; chains are not
	// allowed, so resolution is one step.
	target, _, ok := varint(data, p+1)
	if !ok {
		return 0, payload{}, fault{"varint", p + 1}
	}
	if target >= p { // also past the data: p < len(data)
		return 0, payload{}, fault{"value reference", p}
	}
	targetTag := data[target]
	if targetTag == uint8(typ) {
		return typ, payload{pos: target + 1}, fault{}
	}
	if typ == TypeString && targetTag&^shortStrLenMax == tagShortStr {
		return typ, payload{pos: target + 1, shortLen: uint64(targetTag & shortStrLenMax), short: true}, fault{}
	}
	return 0, payload{}, fault{"value reference", p}
}

// get looks key up whatever its type and decodes the value as Cache::get does, into the same
// flattened form the C shim returns. r is zero on entry.
func (v *mapView) get(key string, r *ref) {
	pos, found, bad := v.find(key)
	if bad.what != "" {
		r.corrupt(bad)
		return
	}
	if !found {
		r.status = statusNotFound
		return
	}
	// Short strings, the most common value, skip the general decoder; short ASCII ones are
	// checked here, without a call.
	data := v.data
	if pos < uint64(len(data)) {
		if tag := data[pos]; tag&^shortStrLenMax == tagShortStr {
			n := uint64(tag & shortStrLenMax)
			start := pos + 1
			// Two overlapping words cover a string of 8 to 16 bytes.
			if n >= 8 && n <= 16 && n <= uint64(len(data))-start {
				b := data[start : start+n]
				const high = 0x8080808080808080
				if (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[n-8:]))&high == 0 {
					r.status, r.typ, r.data, r.word = statusOK, TypeString, unsafe.Pointer(&b[0]), n
					return
				}
			}
			v.str(payload{pos: start, shortLen: n, short: true}, r)
			return
		}
	}
	v.getSlow(pos, r)
}

func (v *mapView) getSlow(pos uint64, r *ref) {
	typ, p, bad := v.valueAt(pos)
	if bad.what != "" {
		r.corrupt(bad)
		return
	}
	switch typ {
	case TypeBytes:
		start, n, bad := v.bytesAt(p)
		if bad.what != "" {
			r.corrupt(bad)
			return
		}
		r.typ, r.data, r.word = TypeBytes, v.ptr(start, n), n
	case TypeString:
		v.str(p, r)
		return
	case TypeInt64, TypeFloat64:
		if p.pos > uint64(len(v.data)) || uint64(len(v.data))-p.pos < 8 {
			r.corrupt(fault{"number value", p.pos})
			return
		}
		r.typ, r.word = typ, binary.LittleEndian.Uint64(v.data[p.pos:])
	case TypeBool:
		if p.pos >= uint64(len(v.data)) || v.data[p.pos] > 1 {
			r.corrupt(fault{"bool value", p.pos})
			return
		}
		r.typ, r.word = TypeBool, uint64(v.data[p.pos])
	case TypeFloat32s, TypeFloat64s:
		elem := uint64(4)
		if typ == TypeFloat64s {
			elem = 8
		}
		start, count, bad := v.array(p.pos, elem)
		if bad.what != "" {
			r.corrupt(bad)
			return
		}
		r.typ, r.data, r.word = typ, v.ptr(start, count*elem), count
	default: // TypeStrings
		start, count, bad := v.array(p.pos, 4)
		if bad.what != "" {
			r.corrupt(bad)
			return
		}
		textAt := start + 4*count
		var textLen uint64
		if count > 0 {
			textLen = uint64(binary.LittleEndian.Uint32(v.data[textAt-4:]))
		}
		if textLen > uint64(len(v.data))-textAt { // textAt ≤ len(data): the ends lie before it
			r.corrupt(fault{"string list length", p.pos})
			return
		}
		r.typ, r.data, r.word = TypeStrings, v.ptr(start, 4*count), count
		r.aux, r.auxLen = v.ptr(textAt, textLen), textLen
	}
	r.status = statusOK
}

// bytesAt returns where a bytes or string payload lies (reader.rs: read_bytes).
func (v *mapView) bytesAt(p payload) (start, n uint64, bad fault) {
	n, start = p.shortLen, p.pos
	if !p.short {
		var ok bool
		if n, start, ok = varint(v.data, p.pos); !ok {
			return 0, 0, fault{"varint", p.pos}
		}
	}
	// start ≤ len(data) here (a short string's p.pos is one past its tag).
	if start > uint64(len(v.data)) || n > uint64(len(v.data))-start {
		return 0, 0, fault{"value length", p.pos}
	}
	return start, n, fault{}
}

// str decodes a string payload, checking its bounds and its UTF-8 (reader.rs: read_str).
func (v *mapView) str(p payload, r *ref) {
	start, n, bad := v.bytesAt(p)
	if bad.what != "" {
		r.corrupt(bad)
		return
	}
	if !validUTF8(v.data[start : start+n]) {
		r.corrupt(fault{"string value (not UTF-8)", p.pos})
		return
	}
	r.status, r.typ, r.data, r.word = statusOK, TypeString, v.ptr(start, n), n
}

// validUTF8 is utf8.Valid with the Rust reader's shortcut for short ASCII, the common case
// for cache values: two overlapping word loads instead of a byte loop (view.rs: to_str).
func validUTF8(b []byte) bool {
	const high = 0x8080808080808080
	switch n := len(b); {
	case n >= 8 && n <= 16:
		if (binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[n-8:]))&high == 0 {
			return true
		}
	case n >= 4 && n < 8:
		if (binary.LittleEndian.Uint32(b)|binary.LittleEndian.Uint32(b[n-4:]))&(high&0xffffffff) == 0 {
			return true
		}
	}
	return utf8.Valid(b)
}

// array reads a list header, a varint count then padding to elem, and checks that count
// elements of elem bytes fit and are aligned (reader.rs: read_array and view::cast).
func (v *mapView) array(pos, elem uint64) (start, count uint64, bad fault) {
	count, after, ok := varint(v.data, pos)
	if !ok {
		return 0, 0, fault{"varint", pos}
	}
	start = (after + elem - 1) &^ (elem - 1)
	n := uint64(len(v.data))
	if count > (^uint64(0))/elem || start > n || count*elem > n-start {
		return 0, 0, fault{"list length", pos}
	}
	// Rust views the elements in place only if they are aligned in memory; the mapping is
	// page-aligned, so that is the file offset's alignment. An empty list is never misaligned.
	if count > 0 && uintptr(unsafe.Pointer(&v.data[start]))%uintptr(elem) != 0 {
		return 0, 0, fault{"list alignment", start}
	}
	return start, count, fault{}
}

// ptr is the address of data[start:start+n], or nil when n == 0 (see lg_ref: never a dangling
// pointer, and start may then be len(data)). The caller has checked the bounds.
func (v *mapView) ptr(start, n uint64) unsafe.Pointer {
	if n == 0 {
		return nil
	}
	return unsafe.Pointer(&v.data[start])
}

// corrupt marks r as failed on a corrupt structure.
func (r *ref) corrupt(f fault) {
	r.status, r.msg = statusCorrupt, f.message()
}
