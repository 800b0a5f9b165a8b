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
)

func TestBatchEveryType(t *testing.T) {
	c := openGolden(t, "v1-all-types.lcache")
	var b Batch
	keys := []string{"bytes", "str", "empty_str", "i64", "f64", "bool_true", "bool_false",
		"f32_list", "f64_list", "str_list", "shared_2", "binary\x00key", "absent", ""}
	for _, k := range keys {
		b.Add(k)
	}
	if b.Len() != len(keys) || b.Key(11) != "binary\x00key" {
		t.Fatalf("Len %d, Key(11) %q", b.Len(), b.Key(11))
	}
	if err := c.GetBatch(&b); err != nil {
		t.Fatal(err)
	}
	check := func(name string, got outcome, value, want any) {
		t.Helper()
		if !got.ok || got.err != nil || !reflect.DeepEqual(value, want) {
			t.Errorf("%s = %#v (ok %v, err %v), want %#v", name, value, got.ok, got.err, want)
		}
	}
	v0, ok, err := b.GetBytes(0)
	check("bytes", outcome{ok, err}, v0, []byte{0, 1, 2, 0xfe, 0xff})
	v1, ok, err := b.GetString(1)
	check("str", outcome{ok, err}, v1, "héllo wörld")
	v1, ok, err = b.GetStringUnsafe(2)
	check("empty_str", outcome{ok, err}, v1, "")
	v3, ok, err := b.GetInt64(3)
	check("i64", outcome{ok, err}, v3, int64(-9_007_199_254_740_993))
	v4, ok, err := b.GetFloat64(4)
	check("f64", outcome{ok, err}, v4, math.Pi)
	v5, ok, err := b.GetBool(5)
	check("bool_true", outcome{ok, err}, v5, true)
	v5, ok, err = b.GetBool(6)
	check("bool_false", outcome{ok, err}, v5, false)
	v7, ok, err := b.GetFloat32s(7)
	check("f32_list", outcome{ok, err}, v7, []float32{1.5, -2.25, 1e-3})
	v7, ok, err = b.GetFloat32sUnsafe(7)
	check("f32_list unsafe", outcome{ok, err}, v7, []float32{1.5, -2.25, 1e-3})
	v8, ok, err := b.GetFloat64s(8)
	check("f64_list", outcome{ok, err}, v8, []float64{0.1, 0.2, 0.3, 1e300})
	v8, ok, err = b.GetFloat64sUnsafe(8)
	check("f64_list unsafe", outcome{ok, err}, v8, []float64{0.1, 0.2, 0.3, 1e300})
	v9, ok, err := b.GetStrings(9)
	check("str_list", outcome{ok, err}, v9, []string{"alpha", "", "gamma δ"})
	v1, ok, err = b.GetStringUnsafe(10)
	check("shared_2", outcome{ok, err}, v1, longValue)
	v0, ok, err = b.GetBytesUnsafe(1)
	check("bytes of str", outcome{ok, err}, v0, []byte("héllo wörld"))
	v3, ok, err = b.GetInt64(11)
	check("binary key", outcome{ok, err}, v3, int64(7))
	for i, want := range []any{[]byte{0, 1, 2, 0xfe, 0xff}, "héllo wörld", "",
		int64(-9_007_199_254_740_993), math.Pi, true, false, []float32{1.5, -2.25, 1e-3},
		[]float64{0.1, 0.2, 0.3, 1e300}, []string{"alpha", "", "gamma δ"}, longValue,
		int64(7)} {
		v, ok, err := b.Get(i)
		check(fmt.Sprintf("Get(%d)", i), outcome{ok, err}, v.Any(), want)
	}

	// Missing keys: ok false, no error, from every getter.
	for _, i := range []int{12, 13} {
		for name, r := range map[string]outcome{
			"Get": result(b.Get(i)), "GetString": result(b.GetString(i)),
			"GetBytes": result(b.GetBytes(i)), "GetInt64": result(b.GetInt64(i)),
			"GetFloat64": result(b.GetFloat64(i)), "GetBool": result(b.GetBool(i)),
			"GetFloat32s": result(b.GetFloat32s(i)), "GetFloat64s": result(b.GetFloat64s(i)),
			"GetStrings": result(b.GetStrings(i)), "GetBytesUnsafe": result(b.GetBytesUnsafe(i)),
			"GetStringUnsafe":   result(b.GetStringUnsafe(i)),
			"GetFloat32sUnsafe": result(b.GetFloat32sUnsafe(i)),
			"GetFloat64sUnsafe": result(b.GetFloat64sUnsafe(i)),
		} {
			if r.ok || r.err != nil {
				t.Errorf("%s(%q) = ok %v, err %v; want false, nil", name, keys[i], r.ok, r.err)
			}
		}
	}

	// Type mismatches name the key.
	_, ok, err = b.GetFloat64(3)
	if ok || !errors.Is(err, ErrTypeMismatch) ||
		err.Error() != `larder get "i64": type mismatch: asked for f64, key holds i64` {
		t.Errorf("mismatch: %v %v", ok, err)
	}
	if _, _, err := b.GetStrings(1); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("GetStrings of a string: %v", err)
	}

	// Reuse after Reset.
	b.Reset()
	b.Add("i64")
	if err := c.GetBatch(&b); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.GetInt64(0); v != -9_007_199_254_740_993 || !ok || err != nil {
		t.Errorf("after Reset: %d %v %v", v, ok, err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("reading past the looked-up keys did not panic")
			}
		}()
		_, _, _ = b.GetInt64(1)
	}()

	// An empty batch is fine.
	b.Reset()
	if err := c.GetBatch(&b); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

func TestBatchClosedCache(t *testing.T) {
	c, err := Open(golden("v1-all-types.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Add("i64")
	if err := c.GetBatch(&b); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, _, err := b.GetInt64(0); !errors.Is(err, ErrClosed) {
		t.Errorf("result read after Close: %v", err)
	}
	if err := c.GetBatch(&b); !errors.Is(err, ErrClosed) {
		t.Errorf("GetBatch after Close: %v", err)
	}
}

// A record that is damaged where the header checksum does not look (only Verify would notice)
// fails its own lookup with ErrCorrupt and the library's message, alone or in a batch, and
// leaves the other keys readable.
func TestCorruptRecord(t *testing.T) {
	data, err := os.ReadFile(golden("v1-all-types.lcache"))
	if err != nil {
		t.Fatal(err)
	}
	// Record: varint key length, key, zero padding, tag 5 (bool), the byte 1.
	at := bytes.Index(data, []byte("\x09bool_true"))
	if at < 0 {
		t.Fatal("bool_true record not found")
	}
	at += len("\x09bool_true")
	for data[at] == 0 {
		at++
	}
	if data[at] != 5 || data[at+1] != 1 {
		t.Fatalf("unexpected record bytes % x", data[at:at+2])
	}
	data[at+1] = 2 // a bool must be 0 or 1
	path := filepath.Join(t.TempDir(), "corrupt-record.lcache")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	_, ok, err := c.GetBool("bool_true")
	if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"bool_true"`) ||
		!strings.Contains(err.Error(), "corrupt cache file") {
		t.Errorf("GetBool(corrupt) = %v, %v", ok, err)
	}
	if _, _, err := c.Get("bool_true"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get(corrupt) = %v", err)
	}
	var b Batch
	b.Add("bool_false")
	b.Add("bool_true")
	b.Add("str")
	if err := c.GetBatch(&b); err != nil {
		t.Fatal(err)
	}
	_, _, errSingle := c.GetBool("bool_true")
	_, ok, err = b.GetBool(1)
	if ok || !errors.Is(err, ErrCorrupt) || err.Error() != errSingle.Error() {
		t.Errorf("batch GetBool(corrupt) = %v, %v; want %v", ok, err, errSingle)
	}
	if v, ok, err := b.GetBool(0); v || !ok || err != nil {
		t.Errorf("neighbour bool_false = %v %v %v", v, ok, err)
	}
	if v, ok, err := b.GetString(2); v != "héllo wörld" || !ok || err != nil {
		t.Errorf("neighbour str = %q %v %v", v, ok, err)
	}
	if err := c.Verify(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Verify = %v", err)
	}
}
