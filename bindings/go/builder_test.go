package larder

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// roundTrip holds one key of every type, including empty and awkward values.
var roundTrip = map[string]any{
	"bytes":             []byte{0, 1, 2, 0xfe, 0xff},
	"bytes_empty":       []byte{},
	"str":               "héllo wörld",
	"str_empty":         "",
	"str_long":          strings.Repeat("long string ", 100),
	"str_big":           strings.Repeat("ü", 20_000), // past the insert buffer's per-entry limit
	"bytes_big":         bytes.Repeat([]byte{7}, 100_000),
	"i64_min":           int64(math.MinInt64),
	"i64_max":           int64(math.MaxInt64),
	"f64":               math.Pi,
	"f64_nan_free":      -0.0,
	"f64_inf":           math.Inf(-1),
	"bool_true":         true,
	"bool_false":        false,
	"f32s":              []float32{1.5, -2.25, 1e-3, float32(math.Inf(1))},
	"f32s_empty":        []float32{},
	"f64s":              []float64{0.1, 0.2, 0.3, 1e300},
	"f64s_empty":        []float64{},
	"strs":              []string{"alpha", "", "gamma δ"},
	"strs_empty":        []string{},
	"strs_all_empty":    []string{"", ""},
	"strs_many":         manyStrings(100), // more than the shim's stack array
	"":                  "the empty key",
	"binary\x00\xffkey": int64(7),
	"shared_1":          longValue,
	"shared_2":          longValue,
}

func manyStrings(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i)
	}
	return out
}

func insertAny(b *Builder, key string, v any) error {
	switch v := v.(type) {
	case []byte:
		return b.InsertBytes(key, v)
	case string:
		return b.InsertString(key, v)
	case int64:
		return b.InsertInt64(key, v)
	case float64:
		return b.InsertFloat64(key, v)
	case bool:
		return b.InsertBool(key, v)
	case []float32:
		return b.InsertFloat32s(key, v)
	case []float64:
		return b.InsertFloat64s(key, v)
	case []string:
		return b.InsertStrings(key, v)
	}
	panic(fmt.Sprintf("no insert for %T", v))
}

// getAny reads key with the typed getter matching want's type.
func getAny(c *Cache, key string, want any) (any, bool, error) {
	switch want.(type) {
	case []byte:
		return unpack(c.GetBytes(key))
	case string:
		return unpack(c.GetString(key))
	case int64:
		return unpack(c.GetInt64(key))
	case float64:
		return unpack(c.GetFloat64(key))
	case bool:
		return unpack(c.GetBool(key))
	case []float32:
		return unpack(c.GetFloat32s(key))
	case []float64:
		return unpack(c.GetFloat64s(key))
	case []string:
		return unpack(c.GetStrings(key))
	}
	panic(fmt.Sprintf("no getter for %T", want))
}

func unpack[T any](v T, ok bool, err error) (any, bool, error) { return v, ok, err }

func build(t testing.TB, path string, opts *BuilderOptions, entries map[string]any) Stats {
	t.Helper()
	b, err := NewBuilder(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	for k, v := range entries {
		if err := insertAny(b, k, v); err != nil {
			t.Fatalf("insert %q: %v", k, err)
		}
	}
	stats, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func TestBuilderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "round.lcache")
	stats := build(t, path, &BuilderOptions{Name: "round-trip", Dedup: true}, roundTrip)
	if stats.KeyCount != uint64(len(roundTrip)) || stats.DedupedValues != 1 ||
		stats.DedupSavedBytes < 30 || stats.DuplicateKeys != 0 {
		t.Errorf("stats = %+v", stats)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if stats.FileBytes != uint64(st.Size()) {
		t.Errorf("FileBytes %d, file is %d", stats.FileBytes, st.Size())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries; the temporary file was left behind", len(entries))
	}

	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Len() != len(roundTrip) {
		t.Errorf("Len = %d", c.Len())
	}
	for k, want := range roundTrip {
		got, ok, err := getAny(c, k, want)
		if !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("typed get %q = %#v %v %v, want %#v", k, got, ok, err, want)
		}
		v, ok, err := c.Get(k)
		if !ok || err != nil || !reflect.DeepEqual(v.Any(), want) {
			t.Errorf("Get %q = %#v %v %v, want %#v", k, v.Any(), ok, err, want)
		}
	}
	info, err := c.Info()
	if err != nil || info.Name != "round-trip" || !info.Dedup || info.ValueCount != stats.ValueCount {
		t.Errorf("Info = %+v, %v", info, err)
	}
	if err := c.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}

	// Values read with Get can be inserted into another file unchanged.
	copyPath := filepath.Join(t.TempDir(), "copy.lcache")
	b, err := NewBuilder(copyPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range roundTrip {
		v, _, _ := c.Get(k)
		if err := b.Insert(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Insert("zero", Value{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Insert(zero Value) = %v", err)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for k, want := range roundTrip {
		if got, ok, err := getAny(c2, k, want); !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("copy %q = %#v %v %v", k, got, ok, err)
		}
	}
}

func TestBuilderDuplicates(t *testing.T) {
	dir := t.TempDir()
	b, err := NewBuilder(filepath.Join(dir, "last.lcache"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{1, 2, 3} {
		if err := b.InsertInt64("k", v); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := b.Finish()
	if err != nil || stats.KeyCount != 1 || stats.DuplicateKeys != 2 {
		t.Fatalf("Finish = %+v, %v", stats, err)
	}
	c, err := Open(filepath.Join(dir, "last.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, ok, err := c.GetInt64("k"); v != 3 || !ok || err != nil {
		t.Errorf("last insert should win: %d %v %v", v, ok, err)
	}

	path := filepath.Join(dir, "reject.lcache")
	b, err = NewBuilder(path, &BuilderOptions{Duplicates: DuplicatesReject})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.InsertInt64("k", 1)
	_ = b.InsertInt64("k", 2)
	_, err = b.Finish()
	if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("Finish with a duplicate = %v, want ErrDuplicateKey", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed build left %s: %v", path, err)
	}
}

func TestBuilderErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "errors.lcache")
	b, err := NewBuilder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Rejected inserts leave the build usable.
	if err := b.InsertString("bad", "\xff"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("invalid UTF-8 string: %v", err)
	}
	if err := b.InsertStrings("bad", []string{"ok", "\xfe"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("invalid UTF-8 in a list: %v", err)
	}
	if err := b.InsertInt64(strings.Repeat("k", 70_000), 1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("over-long key: %v", err)
	}
	if err := b.InsertString("good", "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	// A spent builder refuses everything.
	if err := b.InsertInt64("k", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("insert after Finish: %v", err)
	}
	if _, err := b.Finish(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Finish: %v", err)
	}
	b.Abort() // no-op

	// The name's length is checked when the header is written.
	b, err = NewBuilder(path, &BuilderOptions{Name: strings.Repeat("n", 300)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Finish()
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "300 bytes") {
		t.Errorf("over-long name: %v", err)
	}
	_, err = NewBuilder(filepath.Join(dir, "no", "such", "dir", "x.lcache"), nil)
	if !errors.Is(err, ErrIO) {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := NewBuilder("bad\x00path", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NUL in path: %v", err)
	}
}

func TestBuilderAbortRemovesTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	b, err := NewBuilder(filepath.Join(dir, "aborted.lcache"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := b.InsertInt64(fmt.Sprint(i), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	b.Abort()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("after Abort the directory holds %v (%v)", entries, err)
	}
}

// Buffered inserts (bytes, strings, numbers), direct ones (lists, large values) and buffer
// flushes interleave without reordering: the last insert of a key wins.
func TestBuilderKeepsInsertOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "order.lcache")
	b, err := NewBuilder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	const n = 3*pendingCountMax + 17
	big := strings.Repeat("x", bufferedLenMax)
	for i := range n {
		k := fmt.Sprintf("k%d", i%(n/3))
		var err error
		switch i % 7 {
		case 0:
			err = b.InsertString(k, fmt.Sprint(i))
		case 1:
			err = b.InsertFloat64s(k, []float64{float64(i)})
		case 2:
			err = b.InsertInt64(k, int64(i))
		case 3:
			err = b.InsertString(k, big+fmt.Sprint(i))
		case 4:
			err = b.InsertBool(k, i%2 == 0)
		case 5:
			err = b.InsertBytes(k, []byte(fmt.Sprint(i)))
		case 6:
			err = b.InsertFloat64(k, float64(i)+0.5)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	stats, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if stats.KeyCount != n/3 || stats.DuplicateKeys != n-n/3 {
		t.Errorf("stats = %+v", stats)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for j := range n / 3 {
		last := j + (n-1-j)/(n/3)*(n/3) // the last i with i%(n/3) == j
		v, ok, err := c.Get(fmt.Sprintf("k%d", j))
		if !ok || err != nil {
			t.Fatalf("k%d: %v %v", j, ok, err)
		}
		var want any
		switch last % 7 {
		case 0:
			want = fmt.Sprint(last)
		case 1:
			want = []float64{float64(last)}
		case 2:
			want = int64(last)
		case 3:
			want = big + fmt.Sprint(last)
		case 4:
			want = last%2 == 0
		case 5:
			want = []byte(fmt.Sprint(last))
		case 6:
			want = float64(last) + 0.5
		}
		if !reflect.DeepEqual(v.Any(), want) {
			t.Fatalf("k%d = %#v, want %#v (insert %d)", j, v.Any(), want, last)
		}
	}
}

// A failure inside a buffered batch names the failing entry's key; the entries before it are
// inserted. (The Go side never buffers an entry the library would refuse, so the failure is
// forced with an entry of no known type.)
func TestBuilderBatchFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "batch-failure.lcache")
	b, err := NewBuilder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	if err := b.InsertString("before", "v"); err != nil {
		t.Fatal(err)
	}
	if err := b.InsertBytes("bytes-before", []byte("vv")); err != nil {
		t.Fatal(err)
	}
	if err := b.buffer(99, "bad", 0, ""); err != nil {
		t.Fatal(err)
	}
	err = b.flush()
	if !errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), `"bad"`) ||
		!strings.Contains(err.Error(), "unknown value type") {
		t.Errorf("flush = %v", err)
	}
	if err := b.InsertString("after", "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for k, want := range map[string]string{"before": "v", "bytes-before": "vv", "after": "w"} {
		if v, ok, err := c.GetBytes(k); !ok || err != nil || string(v) != want {
			t.Errorf("%s = %q %v %v", k, v, ok, err)
		}
	}
	if ok, _ := c.Contains("bad"); ok {
		t.Error("the bad entry was inserted")
	}
}

// Empty lists come back from Rust with dangling placeholder pointers (0x4, 0x8). Go holds
// the result's fields as pointers, and its stack copier aborts the program on a pointer-typed
// value below 4096, so the shim must hand back NULL instead.
func TestEmptyValuesHaveNilPointers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.lcache")
	build(t, path, nil, map[string]any{
		"f32s": []float32{}, "f64s": []float64{}, "strs": []string{}, "strs0": []string{""},
		"bytes": []byte{}, "str": "",
	})
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, k := range []string{"f32s", "f64s", "strs", "strs0", "bytes", "str"} {
		var r ref
		c.lookup(k, &r)
		if r.status != 0 {
			t.Fatalf("%s: status %d", k, r.status)
		}
		for name, p := range map[string]unsafe.Pointer{"data": r.data, "aux": r.aux} {
			if p != nil && uintptr(p) < 4096 {
				t.Errorf("%s: %s = %p", k, name, p)
			}
		}
		if r.word == 0 && r.data != nil {
			t.Errorf("%s: empty, but data = %p", k, r.data)
		}
		if v, ok, err := c.Get(k); !ok || err != nil || reflect.ValueOf(v.Any()).Len() != 0 &&
			k != "strs0" {
			t.Errorf("Get(%s) = %#v %v %v", k, v.Any(), ok, err)
		}
	}
	info, err := c.Info()
	if err != nil || info.Name != "" {
		t.Errorf("Info = %+v, %v", info, err)
	}
}
