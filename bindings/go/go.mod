module github.com/larder-db/larder/bindings/go

// 1.24 for the `#cgo noescape` / `#cgo nocallback` directives, which keep a lookup free of heap
// allocations, and for runtime.AddCleanup.
go 1.24
