package larder

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// golden returns a file from testdata/cache at the repository root.
func golden(name string) string {
	return filepath.Join("..", "..", "testdata", "cache", name)
}

const longValue = "a string long enough to be deduplicated"

func openGolden(t *testing.T, name string) *Cache {
	t.Helper()
	c, err := Open(golden(name))
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// must fails the test on an error or a missing key and returns the value.
func must[T any](t *testing.T, v T, ok bool, err error) T {
	t.Helper()
	if err != nil || !ok {
		t.Fatalf("got ok=%v err=%v", ok, err)
	}
	return v
}

func TestGoldenAllTypes(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	if n := c.Len(); n != 13 {
		t.Errorf("Len = %d, want 13", n)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	b, ok, err := c.GetBytes("bytes")
	check("bytes", must(t, b, ok, err), []byte{0, 1, 2, 0xfe, 0xff})
	s, ok, err := c.GetString("str")
	check("str", must(t, s, ok, err), "héllo wörld")
	s, ok, err = c.GetString("empty_str")
	check("empty_str", must(t, s, ok, err), "")
	i, ok, err := c.GetInt64("i64")
	check("i64", must(t, i, ok, err), int64(-9_007_199_254_740_993))
	f, ok, err := c.GetFloat64("f64")
	check("f64", must(t, f, ok, err), math.Pi)
	bl, ok, err := c.GetBool("bool_true")
	check("bool_true", must(t, bl, ok, err), true)
	bl, ok, err = c.GetBool("bool_false")
	check("bool_false", must(t, bl, ok, err), false)
	f32s, ok, err := c.GetFloat32s("f32_list")
	check("f32_list", must(t, f32s, ok, err), []float32{1.5, -2.25, 1e-3})
	f64s, ok, err := c.GetFloat64s("f64_list")
	check("f64_list", must(t, f64s, ok, err), []float64{0.1, 0.2, 0.3, 1e300})
	strs, ok, err := c.GetStrings("str_list")
	check("str_list", must(t, strs, ok, err), []string{"alpha", "", "gamma δ"})
	s, ok, err = c.GetString("shared_1")
	check("shared_1", must(t, s, ok, err), longValue)
	s, ok, err = c.GetString("shared_2")
	check("shared_2", must(t, s, ok, err), longValue)
	i, ok, err = c.GetInt64("binary\x00key")
	check("binary key", must(t, i, ok, err), int64(7))
	// GetBytes reads strings too, as the C and Rust APIs do.
	b, ok, err = c.GetBytes("str")
	check("bytes of str", must(t, b, ok, err), []byte("héllo wörld"))

	// The unsafe views see the same data.
	ub, ok, err := c.GetBytesUnsafe("bytes")
	check("bytes unsafe", must(t, ub, ok, err), []byte{0, 1, 2, 0xfe, 0xff})
	us, ok, err := c.GetStringUnsafe("str")
	check("str unsafe", must(t, us, ok, err), "héllo wörld")
	u32, ok, err := c.GetFloat32sUnsafe("f32_list")
	check("f32 unsafe", must(t, u32, ok, err), []float32{1.5, -2.25, 1e-3})
	u64, ok, err := c.GetFloat64sUnsafe("f64_list")
	check("f64 unsafe", must(t, u64, ok, err), []float64{0.1, 0.2, 0.3, 1e300})
	us, ok, err = c.GetStringUnsafe("empty_str")
	check("empty unsafe", must(t, us, ok, err), "")

	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "golden-v1" || info.FormatVersion != 1 || !info.Dedup ||
		info.KeyCount != 13 || info.ValueCount != 12 ||
		!info.Created.Equal(time.UnixMilli(1_767_225_600_000)) {
		t.Errorf("Info = %+v", info)
	}
	st, err := os.Stat(golden("v1-all-types.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	if info.FileBytes != uint64(st.Size()) || info.DataBytes == 0 || info.IndexBytes == 0 {
		t.Errorf("Info sizes = %+v, file has %d bytes", info, st.Size())
	}
	if err := c.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

func TestGetValueOfEveryType(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	cases := []struct {
		key  string
		typ  Type
		want any
	}{
		{"bytes", TypeBytes, []byte{0, 1, 2, 0xfe, 0xff}},
		{"str", TypeString, "héllo wörld"},
		{"empty_str", TypeString, ""},
		{"i64", TypeInt64, int64(-9_007_199_254_740_993)},
		{"f64", TypeFloat64, math.Pi},
		{"bool_true", TypeBool, true},
		{"bool_false", TypeBool, false},
		{"f32_list", TypeFloat32s, []float32{1.5, -2.25, 1e-3}},
		{"f64_list", TypeFloat64s, []float64{0.1, 0.2, 0.3, 1e300}},
		{"str_list", TypeStrings, []string{"alpha", "", "gamma δ"}},
		{"shared_2", TypeString, longValue},
	}
	for _, tc := range cases {
		v, ok, err := c.Get(tc.key)
		if err != nil || !ok {
			t.Errorf("Get(%q): ok=%v err=%v", tc.key, ok, err)
			continue
		}
		if v.Type() != tc.typ {
			t.Errorf("Get(%q).Type() = %v, want %v", tc.key, v.Type(), tc.typ)
		}
		if !reflect.DeepEqual(v.Any(), tc.want) {
			t.Errorf("Get(%q).Any() = %#v, want %#v", tc.key, v.Any(), tc.want)
		}
	}
	v, _, _ := c.Get("i64")
	if v.Int64() != -9_007_199_254_740_993 || v.String() != "<i64 Value>" {
		t.Errorf("accessors: %d %q", v.Int64(), v.String())
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Float64 called on a i64") {
			t.Errorf("accessor of the wrong type: recovered %v", r)
		}
	}()
	_ = v.Float64()
}

// outcome drops a getter's value, keeping ok and the error.
type outcome struct {
	ok  bool
	err error
}

func result[T any](_ T, ok bool, err error) outcome { return outcome{ok, err} }

func TestTypeMismatch(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	checks := []struct {
		name string
		got  outcome
		msg  string
	}{
		{"f64 of i64", result(c.GetFloat64("i64")),
			`larder get "i64": type mismatch: asked for f64, key holds i64`},
		{"str of bytes", result(c.GetString("bytes")), "asked for str, key holds bytes"},
		{"i64 of str", result(c.GetInt64("str")), "asked for i64, key holds str"},
		{"bool of f64", result(c.GetBool("f64")), "asked for bool, key holds f64"},
		{"f32s of f64s", result(c.GetFloat32s("f64_list")),
			"asked for list<f32>, key holds list<f64>"},
		{"f64s of f32s", result(c.GetFloat64s("f32_list")),
			"asked for list<f64>, key holds list<f32>"},
		{"strs of str", result(c.GetStrings("str")), "asked for list<str>, key holds str"},
		{"bytes of i64", result(c.GetBytes("i64")), "asked for bytes, key holds i64"},
		{"unsafe bytes of bool", result(c.GetBytesUnsafe("bool_true")),
			"asked for bytes, key holds bool"},
		{"unsafe str of bytes", result(c.GetStringUnsafe("bytes")),
			"asked for str, key holds bytes"},
		{"unsafe f32s of i64", result(c.GetFloat32sUnsafe("i64")),
			"asked for list<f32>, key holds i64"},
		{"unsafe f64s of strs", result(c.GetFloat64sUnsafe("str_list")),
			"asked for list<f64>, key holds list<str>"},
	}
	for _, tc := range checks {
		ok, err := tc.got.ok, tc.got.err
		if ok || !errors.Is(err, ErrTypeMismatch) || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("%s: ok=%v err=%v, want ErrTypeMismatch with %q", tc.name, ok, err, tc.msg)
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "get" || e.Key == "" {
			t.Errorf("%s: %T %v is not an *Error for op get with its key", tc.name, err, err)
		}
	}
}

func TestMissingKey(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	for _, key := range []string{"absent", "", strings.Repeat("x", 1000), "bytes\x00"} {
		if ok, err := c.Contains(key); ok || err != nil {
			t.Errorf("Contains(%q) = %v, %v", key, ok, err)
		}
		results := map[string]outcome{
			"Get":               result(c.Get(key)),
			"GetString":         result(c.GetString(key)),
			"GetBytes":          result(c.GetBytes(key)),
			"GetInt64":          result(c.GetInt64(key)),
			"GetFloat64":        result(c.GetFloat64(key)),
			"GetBool":           result(c.GetBool(key)),
			"GetFloat32s":       result(c.GetFloat32s(key)),
			"GetFloat64s":       result(c.GetFloat64s(key)),
			"GetStrings":        result(c.GetStrings(key)),
			"GetBytesUnsafe":    result(c.GetBytesUnsafe(key)),
			"GetStringUnsafe":   result(c.GetStringUnsafe(key)),
			"GetFloat32sUnsafe": result(c.GetFloat32sUnsafe(key)),
			"GetFloat64sUnsafe": result(c.GetFloat64sUnsafe(key)),
		}
		for name, r := range results {
			if r.ok || r.err != nil {
				t.Errorf("%s(%q) = ok %v, err %v; want false, nil", name, key, r.ok, r.err)
			}
		}
	}
	for _, key := range []string{"bytes", "str_list", "binary\x00key"} {
		if ok, err := c.Contains(key); !ok || err != nil {
			t.Errorf("Contains(%q) = %v, %v", key, ok, err)
		}
	}
}

// No key over 64 KiB can be stored, so looking one up is a plain miss.
func TestKeyTooLong(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	_, ok, err := c.GetString(strings.Repeat("k", 70_000))
	if ok || err != nil {
		t.Errorf("over-long key: ok=%v err=%v", ok, err)
	}
}

func TestCorruptGoldenFiles(t *testing.T) {
	cases := []struct {
		file string
		kind error
		msg  string
	}{
		{"v1-truncated.lcache", ErrCorrupt, "truncated"},
		{"v1-bad-header.lcache", ErrCorrupt, "header checksum mismatch"},
		{"v2-unknown-version.lcache", ErrUnsupportedVersion, "unsupported cache file format version 2"},
	}
	for _, tc := range cases {
		c, err := Open(golden(tc.file))
		if c != nil || !errors.Is(err, tc.kind) || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("Open(%s) = %v, %v; want %v with %q", tc.file, c, err, tc.kind, tc.msg)
		}
		if errors.Is(err, ErrIO) || errors.Is(err, ErrTypeMismatch) {
			t.Errorf("Open(%s): %v matches the wrong sentinel", tc.file, err)
		}
	}

	// The flipped bit is inside a value, so the header is intact and only Verify notices.
	c := openGolden(t, "v1-bitflip.lcache")
	if s, ok, err := c.GetString("str"); !ok || err != nil || s == "héllo wörld" {
		t.Errorf("flipped value: %q %v %v", s, ok, err)
	}
	err := c.Verify()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(fmt.Sprint(err), "data checksum mismatch") {
		t.Errorf("Verify(bitflip) = %v, want ErrCorrupt data checksum mismatch", err)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing.lcache"))
	if !errors.Is(err, ErrIO) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	notCache := filepath.Join(t.TempDir(), "not-a-cache")
	junk := []byte(strings.Repeat("not a cache file ", 64))
	if err := os.WriteFile(notCache, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(notCache); !errors.Is(err, ErrCorrupt) {
		t.Errorf("not a cache file: %v", err)
	}
	if _, err := Open("bad\x00path"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NUL in path: %v", err)
	}
}

func TestClosedCache(t *testing.T) {
	c, err := Open(golden("v1-all-types.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if c.Len() != 0 {
		t.Error("Len after Close")
	}
	if _, _, err := c.GetString("str"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetString after Close: %v", err)
	}
	if _, err := c.Contains("str"); !errors.Is(err, ErrClosed) {
		t.Errorf("Contains after Close: %v", err)
	}
	if _, err := c.Info(); !errors.Is(err, ErrClosed) {
		t.Errorf("Info after Close: %v", err)
	}
	if err := c.Verify(); !errors.Is(err, ErrClosed) {
		t.Errorf("Verify after Close: %v", err)
	}
}

// An unreachable Cache is closed by its cleanup; this must not crash or double-close.
func TestCleanupClosesUnreachableCache(t *testing.T) {
	for range 100 {
		c, err := Open(golden("v1-all-types.lcache"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.GetInt64("i64"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}

// Lookups that succeed and miss from many goroutines at once, interleaved with failing calls
// whose messages differ per goroutine (an over-long key inserted into the goroutine's own
// Builder): values are right, and every error message belongs to its own call even though the
// C library keeps the message in thread-local storage and goroutines migrate between threads.
func TestConcurrentReaders(t *testing.T) {
	const keys = 20_000
	path := filepath.Join(t.TempDir(), "concurrent.lcache")
	b, err := NewBuilder(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if i%2 == 0 {
			err = b.InsertString(fmt.Sprintf("key_%d", i), fmt.Sprintf("val_%d", i))
		} else {
			err = b.InsertInt64(fmt.Sprintf("key_%d", i), int64(i))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, err := NewBuilder(filepath.Join(filepath.Dir(path), fmt.Sprintf("w%d.lcache", w)), nil)
			if err != nil {
				errs <- err
				return
			}
			defer own.Abort()
			var batch Batch
			tooLong := strings.Repeat("k", 65_537+w)
			want := fmt.Sprintf("key of %d bytes", len(tooLong))
			for n := range 3 * keys {
				i := (n*7919 + w*104729) % keys
				key := fmt.Sprintf("key_%d", i)
				if i%2 == 0 {
					v, ok, err := c.GetString(key)
					if !ok || err != nil || v != fmt.Sprintf("val_%d", i) {
						errs <- fmt.Errorf("GetString(%s) = %q %v %v", key, v, ok, err)
						return
					}
				} else {
					v, ok, err := c.GetInt64(key)
					if !ok || err != nil || v != int64(i) {
						errs <- fmt.Errorf("GetInt64(%s) = %d %v %v", key, v, ok, err)
						return
					}
				}
				if n%64 == 0 {
					if err := checkBatch(c, &batch, n, keys); err != nil {
						errs <- err
						return
					}
					if ok, err := c.Contains(fmt.Sprintf("absent_%d", n)); ok || err != nil {
						errs <- fmt.Errorf("Contains(absent) = %v %v", ok, err)
						return
					}
					err := own.InsertInt64(tooLong, 1)
					if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
						errs <- fmt.Errorf("worker %d got another call's error: %v", w, err)
						return
					}
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// checkBatch looks up 32 keys from n on in one batch and checks the values.
func checkBatch(c *Cache, b *Batch, n, keys int) error {
	b.Reset()
	for j := range 32 {
		b.Add(fmt.Sprintf("key_%d", (n+j)%keys))
	}
	b.Add("absent")
	if err := c.GetBatch(b); err != nil {
		return err
	}
	for j := range 32 {
		i := (n + j) % keys
		if i%2 == 0 {
			if v, ok, err := b.GetStringUnsafe(j); !ok || err != nil || v != fmt.Sprintf("val_%d", i) {
				return fmt.Errorf("batch key_%d = %q %v %v", i, v, ok, err)
			}
		} else if v, ok, err := b.GetInt64(j); !ok || err != nil || v != int64(i) {
			return fmt.Errorf("batch key_%d = %d %v %v", i, v, ok, err)
		}
	}
	if _, ok, err := b.Get(32); ok || err != nil {
		return fmt.Errorf("batch absent = %v %v", ok, err)
	}
	return nil
}

// Lookups allocate only what they return: nothing for numbers, Contains and the Unsafe views,
// also when a []byte key is converted with string(b).
func TestLookupsDoNotAllocate(t *testing.T) {
	// Race and coverage instrumentation allocate on their own: there the lookups still run,
	// but only the plain build's allocation counts are asserted.
	instrumented := testing.CoverMode() != "" || raceEnabled
	c := openGolden(t, "v1-all-types.lcache")
	keyBytes := []byte("f64_list")
	var batch Batch
	batchOf := func() {
		batch.Reset()
		batch.Add("i64")
		batch.Add("str")
		_ = c.GetBatch(&batch)
		_, _, _ = batch.GetInt64(0)
		_, _, _ = batch.GetStringUnsafe(1)
	}
	batchOf() // grows the buffers once
	cases := map[string]struct {
		f    func()
		want float64
	}{
		"GetInt64":          {func() { _, _, _ = c.GetInt64("i64") }, 0},
		"GetFloat64":        {func() { _, _, _ = c.GetFloat64("f64") }, 0},
		"GetBool":           {func() { _, _, _ = c.GetBool("bool_true") }, 0},
		"Contains":          {func() { _, _ = c.Contains("absent") }, 0},
		"GetStringUnsafe":   {func() { _, _, _ = c.GetStringUnsafe("str") }, 0},
		"GetBytesUnsafe":    {func() { _, _, _ = c.GetBytesUnsafe("bytes") }, 0},
		"GetFloat64sUnsafe": {func() { _, _, _ = c.GetFloat64sUnsafe(string(keyBytes)) }, 0},
		"GetFloat32sUnsafe": {func() { _, _, _ = c.GetFloat32sUnsafe("f32_list") }, 0},
		"missing":           {func() { _, _, _ = c.GetString(string(keyBytes[:4])) }, 0},
		"GetString":         {func() { _, _, _ = c.GetString("str") }, 1},
		"reused Batch":      {batchOf, 0},
	}
	for name, tc := range cases {
		if got := testing.AllocsPerRun(200, tc.f); !instrumented && got != tc.want {
			t.Errorf("%s: %v allocations per lookup, want %v", name, got, tc.want)
		}
	}
}

// README.md shows Example's body; keep the two the same.
func TestReadmeExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "func Example() {\n")
	body, output, ok2 := strings.Cut(body, "\t// Output:\n")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no Example with an Output comment")
	}
	output, _, _ = strings.Cut(output, "}")
	var wantOutput []string
	for _, line := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
		wantOutput = append(wantOutput, strings.TrimPrefix(line, "\t// "))
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(line, "\t"))
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, ok2 = strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```go block")
	}
	if want := strings.Join(lines, "\n") + "\n"; block != want {
		t.Errorf("README.md's example differs from Example in example_test.go; "+
			"README has:\n%s\nwant:\n%s", block, want)
	}
	if want := "prints\n\n```\n" + strings.Join(wantOutput, "\n") + "\n```"; !strings.Contains(
		string(readme), want) {
		t.Errorf("README.md does not show Example's output:\n%s", want)
	}
}
