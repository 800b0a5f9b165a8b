module github.com/larder-db/larder/bindings/go

// 1.24 for the `#cgo noescape` / `#cgo nocallback` directives, which keep a lookup free of heap
// allocations, and for runtime.AddCleanup.
go 1.24

require github.com/zeebo/xxh3 v1.1.0

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
