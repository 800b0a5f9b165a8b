package larder

// #cgo nocallback lg_watch
// #cgo nocallback lg_swapper_close
// #cgo nocallback lg_swapper_refresh
// #cgo nocallback lg_swapper_current
// #include "larder_go.h"
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// SwappingCache follows a published cache file and moves to each newer one on
// [SwappingCache.Refresh], without blocking readers: a [Cache] taken with
// [SwappingCache.Current] keeps reading the file it was taken on (its mapping stays alive) until
// it is closed, and Caches taken after a swap read the new file.
//
// Two ways to publish a new file are supported: rename it onto a watched path ([WatchPath]; a
// [Builder] does this when given the live path), or rewrite a pointer file that names the
// current cache file ([WatchPointer]). Nothing is watched in the background: call Refresh when
// convenient, for example from a time.Ticker.
//
// A SwappingCache is safe for concurrent use; Refresh calls are serialised and never wait for
// lookups, nor lookups for them.
type SwappingCache struct {
	handle  atomic.Uintptr // the C swapper (C memory); 0 once closed
	cleanup runtime.Cleanup
	path    string
}

// WatchPath opens the cache file at path and follows it: [SwappingCache.Refresh] swaps to
// whatever file has since been renamed onto path. It fails as [Open] does.
func WatchPath(path string) (*SwappingCache, error) {
	return watch(path, 0)
}

// WatchPointer opens the cache file named by the pointer file at pointerPath and follows it:
// [SwappingCache.Refresh] swaps when the pointer names another file or the named file is
// replaced. A pointer file holds one path, relative to the pointer's directory unless it is
// absolute; surrounding whitespace is ignored. Publish by writing a new pointer file beside it
// and renaming it over the old one. A missing or empty pointer fails with [ErrIO], a pointer to
// a file that is not a cache file with [ErrCorrupt].
func WatchPointer(pointerPath string) (*SwappingCache, error) {
	return watch(pointerPath, 1)
}

func watch(path string, pointer C.int) (*SwappingCache, error) {
	cpath, err := cString("watch", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	r := C.lg_watch(cpath, pointer)
	if r.status != C.LARDER_OK {
		return nil, takeError("watch", "", r.status, r.msg)
	}
	s := &SwappingCache{path: path}
	s.handle.Store(uintptr(r.swapper))
	s.cleanup = runtime.AddCleanup(s, func(h C.uintptr_t) { C.lg_swapper_close(h) }, r.swapper)
	return s, nil
}

// Path returns the watched path, or the pointer file.
func (s *SwappingCache) Path() string { return s.path }

// Refresh checks the watched path or pointer file once and swaps if it designates a different
// file. It reports whether it swapped. A new file that fails to open (missing, corrupt, a bad
// pointer) leaves the current one in service and returns the error.
func (s *SwappingCache) Refresh() (bool, error) {
	h := s.handle.Load()
	if h == 0 {
		return false, closedError("refresh")
	}
	r := C.lg_swapper_refresh(C.uintptr_t(h))
	runtime.KeepAlive(s)
	if r.status != C.LARDER_OK {
		return false, takeError("refresh", "", r.status, r.msg)
	}
	return r.changed != 0, nil
}

// Current returns the current file as a [Cache] of its own, sharing the mapping: close it when
// done (or leave it to the Cache's cleanup). It keeps reading that file, and the slices its
// Unsafe getters return stay valid, until it is closed, whatever swaps happen meanwhile; call
// Current again after a swap to read the new file. Its Path is the SwappingCache's Path.
//
// Current costs one cgo call and an allocation: take one per batch of lookups (a request, say),
// not one per lookup.
func (s *SwappingCache) Current() (*Cache, error) {
	h := s.handle.Load()
	if h == 0 {
		return nil, closedError("current")
	}
	r := C.lg_swapper_current(C.uintptr_t(h))
	runtime.KeepAlive(s)
	if r.status != C.LARDER_OK {
		return nil, takeError("current", "", r.status, r.msg)
	}
	return wrapCache(s.path, r.cache), nil
}

// Close releases the swapper. Caches returned by Current stay open until they are closed
// themselves. Close must not run while other goroutines still call Refresh or Current.
// Closing twice is a no-op. It always returns nil; the error result satisfies io.Closer.
func (s *SwappingCache) Close() error {
	if h := s.handle.Swap(0); h != 0 {
		s.cleanup.Stop()
		C.lg_swapper_close(C.uintptr_t(h))
	}
	return nil
}
