module github.com/larder-db/larder/bench/cache-go

go 1.24

require github.com/larder-db/larder/bindings/go v0.0.0-00010101000000-000000000000

replace github.com/larder-db/larder/bindings/go => ../../bindings/go
