#!/usr/bin/env bash
# Builds the C ABI static library, places it where the cgo directives look for it
# (bindings/go/lib/liblarder_cache.a), then vets and tests the Go binding and vets the benchmark.
#
#   bindings/go/test.sh                 build + go vet + go test ./...
#   bindings/go/test.sh --race          also run the tests under the race detector
#   CARGO_TARGET_DIR=/x bindings/go/test.sh   use that cargo target directory (default: target/)
#
# Needs cargo and Go 1.24 or newer (an older go command fetches a newer toolchain through the
# module proxy when GOTOOLCHAIN allows it). One Go module dependency, github.com/zeebo/xxh3 (the
# key hash), fetched by the go command. `go test -run X -fuzz FuzzLookup` fuzzes the Go reader.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RACE=0
for arg in "$@"; do
    case $arg in
        --race) RACE=1 ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

# rustup installs cargo under ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [[ -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || { echo "ERROR: go not found (install Go 1.24+)" >&2; exit 1; }
command -v cargo >/dev/null 2>&1 || { echo "ERROR: cargo not found" >&2; exit 1; }

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
echo "+ cargo build -p larder-cache-ffi --release (CARGO_TARGET_DIR=$TARGET_DIR)"
(cd "$ROOT" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build -q -p larder-cache-ffi --release)
LIB="$TARGET_DIR/release/liblarder_cache.a"
[[ -f $LIB ]] || { echo "ERROR: cargo built, but $LIB is missing" >&2; exit 1; }

# A copy, not a symlink: the Go build cache keys the link on the file's contents either way,
# and a copy survives `cargo clean`. Skipped when unchanged so repeated runs relink nothing.
mkdir -p "$HERE/lib"
if ! cmp -s "$LIB" "$HERE/lib/liblarder_cache.a"; then
    cp -f "$LIB" "$HERE/lib/liblarder_cache.a.tmp"
    mv -f "$HERE/lib/liblarder_cache.a.tmp" "$HERE/lib/liblarder_cache.a"
fi

export CGO_ENABLED=1
cd "$HERE"
go version
echo "+ go vet ./..."
go vet ./...
echo "+ go test ./..."
go test -count=1 ./...
if [[ $RACE == 1 ]]; then
    echo "+ go test -race ./..."
    go test -count=1 -race ./...
fi
echo "+ (bench/cache-go) go vet ."
(cd "$ROOT/bench/cache-go" && go vet .)
