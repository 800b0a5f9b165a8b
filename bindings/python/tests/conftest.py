"""Shared fixtures: the golden files in testdata/cache and a small freshly built cache."""

import struct
from pathlib import Path

import pytest

import larder_cache

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "testdata" / "cache"

# The contents of testdata/cache/v1-all-types.lcache (crates/larder-cache/tests/golden.rs).
LONG = "a string long enough to be deduplicated"
GOLDEN_VALUES = {
    "bytes": bytes([0, 1, 2, 0xFE, 0xFF]),
    "str": "héllo wörld",
    "empty_str": "",
    "i64": -9_007_199_254_740_993,
    "f64": 3.141592653589793,
    "bool_true": True,
    "bool_false": False,
    "f32_list": [1.5, -2.25, struct.unpack("<f", struct.pack("<f", 1e-3))[0]],
    "f64_list": [0.1, 0.2, 0.3, 1e300],
    "str_list": ["alpha", "", "gamma δ"],
    "shared_1": LONG,
    "shared_2": LONG,
    b"binary\x00key": 7,
}


@pytest.fixture(scope="session")
def golden() -> larder_cache.Cache:
    return larder_cache.open(GOLDEN / "v1-all-types.lcache")


@pytest.fixture
def build(tmp_path):
    """Builds a cache from a dict of key -> value (auto-typed) and opens it."""

    def _build(entries, name="test", dedup=False):
        path = tmp_path / f"{name}.lcache"
        with larder_cache.Builder(path, name=name, dedup=dedup) as b:
            for k, v in entries.items():
                b.insert(k, v)
        return larder_cache.open(path)

    return _build
