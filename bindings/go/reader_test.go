package larder

import (
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// XXH3-64 (seed 0) of test inputs, computed by xxhash-rust 0.8, the crate the Rust reader
// hashes keys with: input n is the bytes (i*31 + 7) % 251 for i < n.
var rustHashes = []struct {
	n    int
	hash uint64
}{
	{0, 0x2d06800538d394c2}, {1, 0x4c5cca45d0f4811f}, {2, 0xa7e250c97710ff27},
	{3, 0x15f7093b173d005c}, {4, 0xdca012f95811b6b9}, {5, 0xb290cafc7b254345},
	{7, 0x7561869c23da3c1b}, {8, 0xdec6a9a43575982e}, {9, 0x15e553b97e27735d},
	{10, 0x00767023a1afa982}, {12, 0xf075172fa255dc85}, {15, 0x66026768a0fe1a85},
	{16, 0xa7683b861e585aa6}, {17, 0x637c1aa907698945}, {31, 0x9a20d1569e8ff426},
	{32, 0xfb0a38fb3af32306}, {33, 0xdbd8ff66fdf7b97e}, {64, 0xa1688ef0a48a39d4},
	{65, 0x67dc5b5cae64c652}, {96, 0xd1a35000054a80d5}, {97, 0xd628cd723fed4570},
	{128, 0x6d0f64c82ddaad27}, {129, 0xeaf3fc97c05f44f3}, {200, 0xf4b54cdc82f20685},
	{240, 0x22f28cbbfaf0447f}, {241, 0x07525dbc14902c7f}, {255, 0x3e64256196c9377b},
	{256, 0xa49b06aa88ab05e1}, {500, 0x821bfabe31bf88ff}, {1024, 0xe2898655db7bc9ee},
	{1025, 0x134c652ba3d6fb9e}, {2048, 0x63a78a59658d80f4}, {4096, 0x04a1779c9e7ddcd7},
	{5000, 0x82c9e6e5b7476dc8}, {70000, 0x36f746fc5f54ccbc},
}

var rustKeyHashes = map[string]uint64{
	"":              0x2d06800538d394c2,
	"a":             0xe6c632b61e964e1f,
	"key_0":         0x14165d09991825ad,
	"key_999999":    0xeaee12a752cacfdb,
	"user:42:score": 0x379e9180afc1de1f,
	"binary\x00key": 0x18a6c1a8555d21d3,
	"val_123456":    0x05e7d51172ee9965,
}

// The Go reader's hash is the file's: XXH3-64 as the Rust reader computes it, for every input
// length class (0, 1-3, 4-8, 9-16, 17-128, 129-240, and the long, striped path).
func TestHashMatchesRust(t *testing.T) {
	for _, tc := range rustHashes {
		b := make([]byte, tc.n)
		for i := range b {
			b[i] = byte((i*31 + 7) % 251)
		}
		if got := hashKey(string(b)); got != tc.hash {
			t.Errorf("hashKey(%d bytes) = %#016x, Rust %#016x", tc.n, got, tc.hash)
		}
	}
	for key, want := range rustKeyHashes {
		if got := hashKey(key); got != want {
			t.Errorf("hashKey(%q) = %#016x, Rust %#016x", key, got, want)
		}
	}
	// The inline short-key paths agree with the library on random inputs of every length.
	rng := rand.New(rand.NewSource(1))
	for n := range 300 {
		for range 20 {
			b := make([]byte, n)
			rng.Read(b)
			if got, want := hashKey(string(b)), xxh3.Hash(b); got != want {
				t.Fatalf("hashKey(% x) = %#016x, xxh3 %#016x", b, got, want)
			}
		}
	}
}

// cgoTwin opens path a second time with the Go reader switched off: every lookup through it
// is one cgo call into the Rust reader, the reference the Go reader must match.
func cgoTwin(t testing.TB, path string) *Cache {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	c.native = false
	t.Cleanup(func() { c.Close() })
	return c
}

// getterResult is everything a getter returns, with the error reduced to its text and class.
type getterResult struct {
	Value any
	OK    bool
	Err   string
	Kind  error
}

func getterResultOf(v any, ok bool, err error) getterResult {
	// Floats by their bits, so that a NaN equals itself.
	switch f := v.(type) {
	case float64:
		v = math.Float64bits(f)
	case []float64:
		bits := make([]uint64, len(f))
		for i := range f {
			bits[i] = math.Float64bits(f[i])
		}
		v = bits
	case []float32:
		bits := make([]uint32, len(f))
		for i := range f {
			bits[i] = math.Float32bits(f[i])
		}
		v = bits
	}
	o := getterResult{Value: v, OK: ok}
	if err != nil {
		o.Err = err.Error()
		for _, kind := range []error{ErrTypeMismatch, ErrCorrupt, ErrUnsupportedVersion, ErrIO,
			ErrInvalidArgument, ErrDuplicateKey, ErrClosed, ErrInternal} {
			if errors.Is(err, kind) {
				o.Kind = kind
			}
		}
	}
	return o
}

// getters runs every public single-key getter on key.
func getters(c *Cache, key string) map[string]getterResult {
	o := map[string]getterResult{}
	found, err := c.Contains(key)
	o["Contains"] = getterResultOf(nil, found, err)
	v, ok, err := c.Get(key)
	var anyV any
	if ok {
		anyV = v.Any()
	}
	o["Get"] = getterResultOf(anyV, ok, err)
	o["GetString"] = getterResultOf(c.GetString(key))
	o["GetStringUnsafe"] = getterResultOf(c.GetStringUnsafe(key))
	o["GetBytes"] = getterResultOf(c.GetBytes(key))
	o["GetBytesUnsafe"] = getterResultOf(c.GetBytesUnsafe(key))
	o["GetInt64"] = getterResultOf(c.GetInt64(key))
	o["GetFloat64"] = getterResultOf(c.GetFloat64(key))
	o["GetBool"] = getterResultOf(c.GetBool(key))
	o["GetFloat32s"] = getterResultOf(c.GetFloat32s(key))
	o["GetFloat32sUnsafe"] = getterResultOf(c.GetFloat32sUnsafe(key))
	o["GetFloat64s"] = getterResultOf(c.GetFloat64s(key))
	o["GetFloat64sUnsafe"] = getterResultOf(c.GetFloat64sUnsafe(key))
	o["GetStrings"] = getterResultOf(c.GetStrings(key))
	return o
}

// sameLookups checks that the Go reader (native) and the Rust reader through cgo (twin) give
// identical results for key: the raw flattened result (same addresses in the same mapping,
// same message) and every getter's value, ok and error.
func sameLookups(t testing.TB, native, twin *Cache, key string) {
	t.Helper()
	var got ref
	native.view.get(key, &got)
	want := twin.lookupCgo(twin.handle.Load(), key)
	// Both Caches map the same file separately: compare data by offset into each mapping.
	if got.status != want.status || got.typ != want.typ || got.word != want.word ||
		got.auxLen != want.auxLen || got.msg != want.msg ||
		offsetIn(native, got.data) != offsetIn(twin, want.data) ||
		offsetIn(native, got.aux) != offsetIn(twin, want.aux) {
		t.Errorf("key %q: Go reader %+v, Rust %+v", key, got, want)
	}
	g, w := getters(native, key), getters(twin, key)
	for name, wo := range w {
		if !reflect.DeepEqual(g[name], wo) {
			t.Errorf("%s(%q): Go reader %.300v, Rust %.300v", name, key, g[name], wo)
		}
	}
}

// offsetIn is p's offset in c's mapping (-1 for nil), for comparing two mappings of one file.
func offsetIn(c *Cache, p unsafe.Pointer) int64 {
	if p == nil {
		return -1
	}
	return int64(uintptr(p) - uintptr(c.view.base()))
}

// keysOf lists the keys of a roundTrip-style map, plus absent ones that share their lengths
// and prefixes.
func keysOf(entries map[string]any) []string {
	keys := []string{"absent", "", "bytes_", "x", strings.Repeat("k", 17), strings.Repeat("k", 300)}
	for k := range entries {
		keys = append(keys, k, k+"!", strings.ToUpper(k))
	}
	return keys
}

// smallEntries is roundTrip without its large values, so that a file of it is small enough to
// corrupt byte by byte.
func smallEntries() map[string]any {
	out := map[string]any{}
	for k, v := range roundTrip {
		if k != "str_big" && k != "bytes_big" {
			out[k] = v
		}
	}
	out[strings.Repeat("long key ", 30)] = "a key past 240 bytes"
	out["a key of 20 bytes..."] = int64(-1)
	out["str_63"] = strings.Repeat("x", 63)
	out["str_64"] = strings.Repeat("y", 64)
	out["str_ascii_4"] = "abcd"
	out["str_utf8_9"] = "日本語"
	return out
}

func TestGoReaderMatchesRust(t *testing.T) {
	// The golden files that open (the others fail in Open, before any lookup).
	for _, name := range []string{"v1-all-types.lcache", "v1-bitflip.lcache"} {
		native, twin := openGolden(t, name), cgoTwin(t, golden(name))
		if !native.native {
			t.Fatalf("%s: the Go reader is not in use", name)
		}
		for _, key := range []string{"bytes", "str", "empty_str", "i64", "f64", "bool_true",
			"bool_false", "f32_list", "f64_list", "str_list", "shared_1", "shared_2",
			"binary\x00key", "absent", "", "st", "strx"} {
			sameLookups(t, native, twin, key)
		}
	}
	// Built files: every type, with and without dedup.
	for _, dedup := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "types.lcache")
		entries := smallEntries()
		for k, v := range roundTrip {
			entries[k] = v
		}
		build(t, path, &BuilderOptions{Dedup: dedup}, entries)
		native, twin := openPath(t, path), cgoTwin(t, path)
		for _, key := range keysOf(entries) {
			sameLookups(t, native, twin, key)
		}
	}
}

func openPath(t testing.TB, path string) *Cache {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// corruptFile is a small valid file and its keys, for damaging after the header.
type corruptFile struct {
	data []byte
	keys []string
	dir  string
}

func newCorruptFile(t testing.TB) *corruptFile {
	t.Helper()
	dir := t.TempDir()
	entries := smallEntries()
	build(t, filepath.Join(dir, "base.lcache"), &BuilderOptions{Dedup: true}, entries)
	data, err := os.ReadFile(filepath.Join(dir, "base.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	return &corruptFile{data: data, keys: keysOf(entries), dir: dir}
}

// check writes data (the base file, damaged) and compares every lookup on it through the Go
// reader and through cgo. A file whose header Rust rejects is skipped: no lookup reaches it.
func (f *corruptFile) check(t testing.TB, data []byte) {
	t.Helper()
	path := filepath.Join(f.dir, "damaged.lcache")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	native, err := Open(path)
	if err != nil {
		return
	}
	defer native.Close()
	twin, err := Open(path)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer twin.Close()
	twin.native = false
	for _, key := range f.keys {
		sameLookups(t, native, twin, key)
	}
}

// Every byte after the header, damaged in turn in several ways: the Go reader and the Rust
// reader agree on every key (value, or error class and message), and nothing panics.
func TestGoReaderOnDamagedFiles(t *testing.T) {
	f := newCorruptFile(t)
	// Every byte takes about a minute on a 2-core machine; a stride that is prime to the
	// structures' sizes still reaches every kind of byte (LARDER_DAMAGE_STEP=1 for all).
	step := 5
	if testing.Short() || raceEnabled {
		step = 37
	}
	if s, err := strconv.Atoi(os.Getenv("LARDER_DAMAGE_STEP")); err == nil && s > 0 {
		step = s
	}
	damaged := make([]byte, len(f.data))
	for at := headerLen; at < len(f.data); at += step {
		for _, change := range []func(byte) byte{
			func(b byte) byte { return b ^ 0xff },
			func(b byte) byte { return b ^ 0x01 },
			func(b byte) byte { return b ^ 0x80 },
			func(byte) byte { return 0 },
		} {
			copy(damaged, f.data)
			damaged[at] = change(damaged[at])
			if damaged[at] == f.data[at] {
				continue
			}
			f.check(t, damaged)
			if t.Failed() {
				t.Fatalf("first difference with byte %d damaged (%#02x -> %#02x)", at,
					f.data[at], damaged[at])
			}
		}
	}
}

const headerLen = 512

// FuzzLookup damages the bytes after the header of a valid file (the header has a checksum
// that Open verifies) and looks every key up through both readers. Input: triples of a 16-bit
// position past the header and a byte to store there.
func FuzzLookup(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0xff})
	f.Add([]byte{1, 0, 0x80, 2, 0, 0x80})
	rng := rand.New(rand.NewSource(42))
	for range 32 {
		seed := make([]byte, 3*(1+rng.Intn(4)))
		rng.Read(seed)
		f.Add(seed)
	}
	cf := newCorruptFile(f)
	f.Fuzz(func(t *testing.T, edits []byte) {
		data := append([]byte(nil), cf.data...)
		body := len(data) - headerLen
		for i := 0; i+3 <= len(edits); i += 3 {
			at := headerLen + (int(edits[i])|int(edits[i+1])<<8)%body
			data[at] = edits[i+2]
		}
		cf.check(t, data)
	})
}

func TestGoReaderFallsBackForUnknownLayouts(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	base := c.view.base()
	good := layout{formatVersion: 1, offsetWidth: 4, dataEnd: 600, indexStart: 640,
		indexEnd: 768, homeBucketCount: 2, probeMax: 1}
	if _, ok := viewOf(base, 768, good); !ok {
		t.Fatal("a good layout was refused")
	}
	for name, edit := range map[string]func(*layout){
		"version 2":           func(l *layout) { l.formatVersion = 2 },
		"offset width 5":      func(l *layout) { l.offsetWidth = 5 },
		"data past index":     func(l *layout) { l.dataEnd = 700 },
		"empty index":         func(l *layout) { l.indexStart = 768 },
		"index past the file": func(l *layout) { l.indexEnd = 832 },
		"partial bucket":      func(l *layout) { l.indexEnd = 767 },
		"no home buckets":     func(l *layout) { l.homeBucketCount = 0 },
		"too many home":       func(l *layout) { l.homeBucketCount = 3 },
	} {
		l := good
		edit(&l)
		if _, ok := viewOf(base, 768, l); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, ok := viewOf(nil, 768, good); ok {
		t.Error("nil base accepted")
	}
	// A Cache the Go reader cannot read still answers, through cgo.
	twin := cgoTwin(t, golden("v1-all-types.lcache"))
	if s, ok, err := twin.GetString("str"); s != "héllo wörld" || !ok || err != nil {
		t.Errorf("cgo path: %q %v %v", s, ok, err)
	}
}

// Go's varint reader rejects what Rust's does: running off the end, and a tenth byte over 1.
func TestVarint(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		pos  uint64
		v    uint64
		next uint64
		ok   bool
	}{
		{[]byte{5}, 0, 5, 1, true},
		{[]byte{0x80, 1}, 0, 128, 2, true},
		{[]byte{0x80}, 0, 0, 0, false},
		{[]byte{1}, 1, 0, 0, false},
		{[]byte{1}, ^uint64(0), 0, 0, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, 0, ^uint64(0), 10, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2}, 0, 0, 0, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0}, 0, 0, 0, false},
	} {
		v, next, ok := varint(tc.in, tc.pos)
		if v != tc.v || next != tc.next || ok != tc.ok {
			t.Errorf("varint(% x, %d) = %d %d %v, want %d %d %v", tc.in, tc.pos, v, next, ok,
				tc.v, tc.next, tc.ok)
		}
	}
}

func TestZeroBytesIsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for range 10_000 {
		var x uint64
		for i := range 8 {
			if rng.Intn(3) > 0 {
				x |= uint64(rng.Intn(256)) << (8 * i)
			}
		}
		var want uint64
		for i := range 8 {
			if byte(x>>(8*i)) == 0 {
				want |= 0x80 << (8 * i)
			}
		}
		if got := zeroBytes(x); got != want {
			t.Fatalf("zeroBytes(%#016x) = %#016x, want %#016x", x, got, want)
		}
	}
}
