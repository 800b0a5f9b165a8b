#!/usr/bin/env bash
# AxonCache's benchmark for the Java binding: larder cache file vs java.util.HashMap.
# Builds the JNI library and the binding, compiles the benchmark, runs it; the markdown table
# goes to stdout, progress to stderr.
# Usage: bench/cache-java/run.sh [--keys N] [--runs R] [--warmup W] [--dir DIR]
# JAVA_OPTS overrides the JVM options (default: a fixed 3 GiB heap, so that heap resizing does
# not land in a timed loop).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
binding="$here/../../bindings/java"
target_dir="${CARGO_TARGET_DIR:-$binding/native/target}"

cargo build --release --manifest-path "$binding/native/Cargo.toml" --target-dir "$target_dir" >&2
(cd "$binding" && mvn -B -q package -DskipTests >&2)

rm -rf "$here/target/classes"
mkdir -p "$here/target/classes"
javac --release 17 -d "$here/target/classes" -cp "$binding/target/classes" \
    $(find "$here/src" -name '*.java')

# shellcheck disable=SC2086
exec java ${JAVA_OPTS:--Xms3g -Xmx3g} \
    -Dlarder.native.path="$target_dir/release" \
    -cp "$here/target/classes:$binding/target/classes" \
    dev.larder.bench.CacheBench "$@"
