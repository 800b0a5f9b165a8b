#!/usr/bin/env bash
# Builds the JNI library (native/, release) and runs the Java binding's JUnit tests against it.
# Usage: bindings/java/test.sh [extra mvn arguments]
# Not -q: Maven would then hide Surefire's "Tests run:" summary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target_dir="${CARGO_TARGET_DIR:-$here/native/target}"

cargo build --release --manifest-path "$here/native/Cargo.toml" --target-dir "$target_dir"

lib="$target_dir/release/liblarder_cache_jni.so"
if [[ "$(uname -s)" == Darwin ]]; then
    lib="$target_dir/release/liblarder_cache_jni.dylib"
fi
mkdir -p "$here/target/native"
cp "$lib" "$here/target/native/"

cd "$here"
mvn -B --no-transfer-progress test -Dlarder.native.path="$here/target/native" "$@"
