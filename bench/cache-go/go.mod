module github.com/larder-db/larder/bench/cache-go

go 1.24

require github.com/larder-db/larder/bindings/go v0.0.0-00010101000000-000000000000

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

replace github.com/larder-db/larder/bindings/go => ../../bindings/go
