//go:build !larder_external

package larder

// The static library built by `cargo build -p larder-cache-ffi --release` and copied here by
// test.sh (lib/ is ignored by git). To link a library elsewhere instead, build with
// `-tags larder_external` and set CGO_LDFLAGS, e.g.
// CGO_LDFLAGS="/path/to/liblarder_cache.a -lm -ldl -lpthread".

// #cgo LDFLAGS: ${SRCDIR}/lib/liblarder_cache.a -lm -ldl -lpthread
import "C"
