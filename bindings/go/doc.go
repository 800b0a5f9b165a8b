// Package larder reads and builds larder cache files: immutable, memory-mapped, typed
// key-value files, built once and then shared read-only by any number of goroutines and
// processes (the file lives once in the page cache, not once per process).
//
// The main types are [Cache] (an open file: [Open], typed getters, [Cache.Close]) and
// [Builder] (a streaming writer: [NewBuilder], Insert methods, [Builder.Finish]). Values are
// bytes, UTF-8 strings, int64, float64, bool, and lists of float32, float64 or strings; a typed
// getter asked for another type fails with [ErrTypeMismatch] rather than reinterpreting bytes.
//
// The package is a cgo wrapper over the larder cache C ABI
// (crates/larder-cache-ffi/include/larder_cache.h), linked statically: the Rust library opens,
// validates, maps, builds and swaps files. Single-key lookups make no cgo call: they read the
// mapping in Go (the section bounds come from the C ABI once per open) and check every offset
// read from the file, with the same results and errors as the Rust reader. The copying getters
// copy the value into Go memory; the Unsafe getters return it as a view of the mapping. The C
// library holds no Go memory beyond a call.
//
// [SwappingCache] ([WatchPath], [WatchPointer]) follows a path or a pointer file to newly
// published files: [SwappingCache.Refresh] swaps, and [SwappingCache.Current] returns a [Cache]
// that keeps reading the file it was taken on until it is closed.
//
// It is not a mutable store (build a new file and rename it over the old one; readers that
// opened the old file keep reading it), and not a client for the larder server.
//
// The file format is specified in docs/cache-format.md; the binding's design and benchmark are
// in docs/bindings-go.md.
package larder
