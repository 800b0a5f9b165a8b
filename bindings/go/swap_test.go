package larder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// buildGeneration builds a file whose every value says which generation it is.
func buildGeneration(t *testing.T, path string, generation int64) {
	t.Helper()
	build(t, path, &BuilderOptions{Name: fmt.Sprintf("gen%d", generation)}, map[string]any{
		"generation": generation,
		"label":      fmt.Sprintf("file %d", generation),
		"vector":     []float64{float64(generation), float64(generation)},
	})
}

func generationOf(t *testing.T, c *Cache) int64 {
	t.Helper()
	g, ok, err := c.GetInt64("generation")
	return must(t, g, ok, err)
}

// publishPointer writes a pointer file through a temporary file and a rename.
func publishPointer(t *testing.T, pointer, text string) {
	t.Helper()
	if err := os.WriteFile(pointer+".tmp", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(pointer+".tmp", pointer); err != nil {
		t.Fatal(err)
	}
}

func current(t *testing.T, s *SwappingCache) *Cache {
	t.Helper()
	c, err := s.Current()
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func refresh(t *testing.T, s *SwappingCache, want bool) {
	t.Helper()
	changed, err := s.Refresh()
	if err != nil || changed != want {
		t.Fatalf("Refresh = %v, %v; want %v, nil", changed, err, want)
	}
}

func TestWatchPathSwapsOnRename(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.lcache")
	buildGeneration(t, live, 1)
	s, err := WatchPath(live)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != live {
		t.Errorf("Path = %q", s.Path())
	}
	before := current(t, s)
	label, _, err := before.GetStringUnsafe("label") // a view of file 1's mapping
	if err != nil || generationOf(t, before) != 1 {
		t.Fatalf("before: %v", err)
	}
	refresh(t, s, false)

	next := filepath.Join(dir, "next.lcache")
	buildGeneration(t, next, 2)
	if err := os.Rename(next, live); err != nil {
		t.Fatal(err)
	}
	refresh(t, s, true)
	refresh(t, s, false)

	// Old lookups finish on the old mapping; new ones use the new file.
	if g := generationOf(t, before); g != 1 || label != "file 1" {
		t.Errorf("before the swap: generation %d, label %q", g, label)
	}
	after := current(t, s)
	if g := generationOf(t, after); g != 2 {
		t.Errorf("after the swap: generation %d", g)
	}
	if v, _, _ := after.GetFloat64s("vector"); len(v) != 2 || v[0] != 2 {
		t.Errorf("vector = %v", v)
	}
	if info, err := after.Info(); err != nil || info.Name != "gen2" {
		t.Errorf("Info = %+v, %v", info, err)
	}

	// Caches outlive their SwappingCache.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if generationOf(t, after) != 2 || generationOf(t, before) != 1 {
		t.Error("Caches changed when their SwappingCache closed")
	}
	if _, err := s.Refresh(); !errors.Is(err, ErrClosed) {
		t.Errorf("Refresh after Close: %v", err)
	}
	if _, err := s.Current(); !errors.Is(err, ErrClosed) {
		t.Errorf("Current after Close: %v", err)
	}
}

func TestWatchPointer(t *testing.T) {
	dir := t.TempDir()
	buildGeneration(t, filepath.Join(dir, "v1.lcache"), 1)
	buildGeneration(t, filepath.Join(dir, "v2.lcache"), 2)
	junk := []byte(strings.Repeat("not a cache file ", 64))
	if err := os.WriteFile(filepath.Join(dir, "junk.lcache"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	pointer := filepath.Join(dir, "CURRENT")
	publishPointer(t, pointer, "v1.lcache\n") // relative to the pointer's directory
	s, err := WatchPointer(pointer)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := current(t, s)
	refresh(t, s, false)

	publishPointer(t, pointer, filepath.Join(dir, "v2.lcache")) // absolute works too
	refresh(t, s, true)
	if generationOf(t, current(t, s)) != 2 || generationOf(t, held) != 1 {
		t.Error("pointer swap")
	}

	// A bad pointer fails, and the current file stays in service.
	for _, bad := range []struct {
		text string
		kind error
	}{
		{"junk.lcache", ErrCorrupt},
		{"missing.lcache", fs.ErrNotExist},
		{"  \n", ErrIO},
	} {
		publishPointer(t, pointer, bad.text)
		changed, err := s.Refresh()
		if changed || !errors.Is(err, bad.kind) {
			t.Errorf("pointer %q: Refresh = %v, %v; want %v", bad.text, changed, err, bad.kind)
		}
		var e *Error
		if errors.As(err, &e) && e.Op != "refresh" {
			t.Errorf("Op = %q", e.Op)
		}
		if generationOf(t, current(t, s)) != 2 {
			t.Errorf("pointer %q replaced the current file", bad.text)
		}
	}
	publishPointer(t, pointer, "v1.lcache")
	refresh(t, s, true)
	if generationOf(t, current(t, s)) != 1 {
		t.Error("back to v1")
	}
}

func TestWatchErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := WatchPath(filepath.Join(dir, "missing.lcache")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := WatchPointer(filepath.Join(dir, "NO-POINTER")); !errors.Is(err, ErrIO) {
		t.Errorf("missing pointer: %v", err)
	}
	junk := []byte(strings.Repeat("not a cache file ", 64))
	if err := os.WriteFile(filepath.Join(dir, "junk.lcache"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	publishPointer(t, filepath.Join(dir, "BAD"), "junk.lcache")
	if _, err := WatchPointer(filepath.Join(dir, "BAD")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("pointer to junk: %v", err)
	}
	if _, err := WatchPath("bad\x00path"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NUL in path: %v", err)
	}
}

// Readers take a Cache per batch while a writer publishes and refreshes: every batch sees one
// whole file, and generations never go backwards.
func TestSwapWhileReading(t *testing.T) {
	live := filepath.Join(t.TempDir(), "live.lcache")
	buildGeneration(t, live, 0)
	s, err := WatchPath(live)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for !stop.Load() {
				c, err := s.Current()
				if err != nil {
					errs <- err
					return
				}
				g, _, err1 := c.GetInt64("generation")
				label, _, err2 := c.GetString("label")
				c.Close()
				if err := errors.Join(err1, err2); err != nil {
					errs <- err
					return
				}
				if label != fmt.Sprintf("file %d", g) || g < last {
					errs <- fmt.Errorf("generation %d (last %d), label %q", g, last, label)
					return
				}
				last = g
			}
		}()
	}
	for g := int64(1); g <= 5; g++ {
		buildGeneration(t, live, g) // the Builder renames onto live
		refresh(t, s, true)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if generationOf(t, current(t, s)) != 5 {
		t.Error("not on the last generation")
	}
}
