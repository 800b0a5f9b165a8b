#!/usr/bin/env bash
# Builds the larder_cache wheel with maturin and runs its tests.
#
#   bindings/python/test.sh [PYTHON]
#
# PYTHON is a virtualenv's interpreter (default: .venv/bin/python at the repository root; it is
# created with `python3 -m venv` if missing). maturin, numpy, lmdb and pytest are installed into
# it when absent. Extra arguments after PYTHON go to pytest. The Rust build goes to
# $CARGO_TARGET_DIR (default: target/python at the repository root).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PYTHON=${1:-$ROOT/.venv/bin/python}
shift || true

if [[ ! -x $PYTHON ]]; then
    if [[ $PYTHON == "$ROOT/.venv/bin/python" ]]; then
        python3 -m venv "$ROOT/.venv"
    else
        echo "ERROR: $PYTHON is not an executable Python interpreter" >&2
        exit 1
    fi
fi
# rustup puts cargo under ~/.cargo/bin, which a non-login shell may not have on PATH.
if ! command -v cargo >/dev/null 2>&1 && [[ -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

missing=()
for pkg in maturin numpy lmdb pytest; do
    "$PYTHON" -m pip show -q "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "+ pip install -q ${missing[*]}"
    "$PYTHON" -m pip install -q --disable-pip-version-check "${missing[@]}"
fi

# A target directory of its own: this crate builds larder-cache with different rustflags
# (.cargo/config.toml) than the workspace does, and sharing one would rebuild it back and forth.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/python}
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
echo "+ (cd bindings/python && maturin build --release -i $PYTHON)"
# From this directory, so that cargo reads .cargo/config.toml here.
(cd "$HERE" && "$PYTHON" -m maturin build --release --quiet -i "$PYTHON" --out "$WHEELS")
"$PYTHON" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
    "$WHEELS"/larder_cache-*.whl

cd "$ROOT"
rc=0
"$PYTHON" -m pytest -q -p no:cacheprovider bindings/python/tests "$@" || rc=$?
if [[ $rc == 5 ]]; then
    echo "ERROR: pytest collected no tests" >&2
fi
exit "$rc"
