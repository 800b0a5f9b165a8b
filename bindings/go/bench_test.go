package larder

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Micro-benchmarks over a small file that stays in the CPU caches: they measure the binding's
// per-call cost (the cgo transition and the Go-side work), not memory latency. The 1M-key,
// cache-missing comparison with a Go map is bench/cache-go.

func benchCache(b *testing.B, n int) (*Cache, []string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.lcache")
	bl, err := NewBuilder(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key_%d", i)
		if err := bl.InsertString(keys[i], fmt.Sprintf("val_%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := bl.Finish(); err != nil {
		b.Fatal(err)
	}
	c, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c, keys
}

func BenchmarkGetStringUnsafe(b *testing.B) {
	c, keys := benchCache(b, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := c.GetStringUnsafe(keys[i&1023]); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkGetString(b *testing.B) {
	c, keys := benchCache(b, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := c.GetString(keys[i&1023]); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkContains(b *testing.B) {
	c, keys := benchCache(b, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if ok, err := c.Contains(keys[i&1023]); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkLen(b *testing.B) {
	c, _ := benchCache(b, 16)
	for b.Loop() {
		_ = c.Len()
	}
}

func BenchmarkMap(b *testing.B) {
	m := map[string]string{}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("key_%d", i)
		m[keys[i]] = fmt.Sprintf("val_%d", i)
	}
	for i := 0; b.Loop(); i++ {
		if _, ok := m[keys[i&1023]]; !ok {
			b.Fatal()
		}
	}
}

func BenchmarkInsertString(b *testing.B) {
	keys := make([]string, 1<<16)
	vals := make([]string, len(keys))
	for i := range keys {
		keys[i] = fmt.Sprintf("key_%d", i)
		vals[i] = fmt.Sprintf("val_%d", i)
	}
	bl, err := NewBuilder(filepath.Join(b.TempDir(), "insert.lcache"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Abort()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := bl.InsertString(keys[i&(1<<16-1)], vals[i&(1<<16-1)]); err != nil {
			b.Fatal(err)
		}
	}
}
