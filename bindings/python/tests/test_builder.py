"""Building: auto-typing, explicit list inserts, round trips, dedup, context manager."""

import os

import numpy as np
import pytest

import larder_cache


def test_round_trip_every_auto_type(build):
    entries = {
        "s": "text ✓",
        "long": "x" * 1000,
        "empty": "",
        "b": b"\x00\xff",
        "ba": bytearray(b"abc"),
        "i": -(2**63),
        "imax": 2**63 - 1,
        "f": -0.5,
        "inf": float("inf"),
        "t": True,
        "fa": False,
        "floats": [1.0, 2, -3.5],
        "tuple": (0.25, 0.5),
        "strs": ["a", "", "ü"],
        "strtuple": ("x",),
        "nolist": [],
        b"\x00bytes-key": 1,
    }
    c = build(entries)
    assert len(c) == len(entries)
    assert c["s"] == "text ✓"
    assert c["long"] == "x" * 1000
    assert c["empty"] == ""
    assert c["b"] == b"\x00\xff"
    assert c["ba"] == b"abc" and type(c["ba"]) is bytes
    assert c["i"] == -(2**63) and c["imax"] == 2**63 - 1
    assert c["f"] == -0.5 and c["inf"] == float("inf")
    assert c["t"] is True and c["fa"] is False
    assert c["floats"] == [1.0, 2.0, -3.5] and c["floats"].typecode == "d"
    assert c["tuple"] == [0.25, 0.5]
    assert c["strs"] == ["a", "", "ü"]
    assert c["strtuple"] == ["x"]
    assert c["nolist"] == [] and c.value_type("nolist") == "list<str>"
    assert c[b"\x00bytes-key"] == 1
    assert c.value_type("i") == "i64"
    assert c.value_type("t") == "bool"
    assert c.value_type("b") == "bytes"
    c.verify()


def test_nan_round_trips(build):
    c = build({"nan": float("nan")})
    assert c["nan"] != c["nan"]


def test_explicit_list_inserts(tmp_path):
    p = tmp_path / "lists.lcache"
    with larder_cache.Builder(p) as b:
        b.insert_f32_list("f32", [1, 2.5, -3])
        b.insert_f32_list("f32np", np.arange(5, dtype=np.float32))
        b.insert_f32_list("f32gen", (x / 2 for x in range(3)))
        b.insert_f64_list("f64", [0.1, 0.2])
        b.insert_f64_list("f64np", np.linspace(0, 1, 5))
        b.insert_f32_list("empty32", [])
        b.insert_str_list("strs", iter(["a", "b"]))
        b.insert_str_list("nostrs", [])
    c = larder_cache.open(p)
    assert c.get_f32_list("f32") == [1.0, 2.5, -3.0]
    assert c.get_f32_list("f32np") == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert c.get_f32_list("f32gen") == [0.0, 0.5, 1.0]
    assert c.get_f64_list("f64") == [0.1, 0.2]
    assert c.get_f64_list("f64np") == np.linspace(0, 1, 5).tolist()
    assert len(c.get_f32_list("empty32")) == 0
    assert c.get_str_list("strs") == ["a", "b"]
    assert c.get_str_list("nostrs") == []


def test_numpy_values_are_auto_typed(build):
    c = build(
        {
            "a64": np.array([1.5, 2.5]),
            "a32": np.array([1.5, 2.5], dtype=np.float32),
            "strided": np.arange(10, dtype=np.float64)[::3],
            "i64": np.int64(7),
            "f64": np.float64(0.5),
            "f32": np.float32(0.5),
        }
    )
    assert c.value_type("a64") == "list<f64>" and c["a64"] == [1.5, 2.5]
    assert c.value_type("a32") == "list<f32>" and c["a32"] == [1.5, 2.5]
    assert c["strided"] == [0.0, 3.0, 6.0, 9.0]
    assert c.value_type("i64") == "i64" and c["i64"] == 7
    assert c.value_type("f64") == "f64" and c["f64"] == 0.5
    assert c.value_type("f32") == "f64" and c["f32"] == 0.5


def test_two_dimensional_arrays_are_refused(tmp_path):
    b = larder_cache.Builder(tmp_path / "a.lcache")
    with pytest.raises(ValueError, match="one-dimensional"):
        b.insert("m", np.zeros((2, 2)))
    with pytest.raises(TypeError):
        b.insert("ints", np.arange(3))  # integer arrays have no cache type
    b.abort()


def test_float_list_from_one_cache_inserts_into_another(build, tmp_path):
    src = build({"v32": np.array([1, 2], dtype=np.float32), "v64": [3.0, 4.0]}, name="src")
    p = tmp_path / "dst.lcache"
    with larder_cache.Builder(p) as b:
        b.insert("v32", src["v32"])
        b.insert("v64", src["v64"])
    dst = larder_cache.open(p)
    assert dst.value_type("v32") == "list<f32>" and dst["v32"] == [1.0, 2.0]
    assert dst.value_type("v64") == "list<f64>" and dst["v64"] == [3.0, 4.0]


def test_finish_returns_stats_and_dedup_saves(tmp_path):
    p = tmp_path / "dedup.lcache"
    b = larder_cache.Builder(p, name="dd", dedup=True)
    value = "the same fairly long value, stored once"
    for i in range(100):
        b.insert(f"k{i}", value)
    b.insert("k0", "replaced")
    assert b.inserted == 101
    assert b.stats is None
    stats = b.finish()
    assert stats is not None and b.stats == stats
    assert stats["key_count"] == 100
    assert stats["duplicate_keys"] == 1
    assert stats["deduped_values"] == 99
    assert stats["dedup_saved_bytes"] > 90 * len(value)
    assert stats["file_bytes"] == os.path.getsize(p)
    assert {"value_count", "raw_key_bytes", "raw_value_bytes", "data_bytes", "index_bytes",
            "build_ms"} <= stats.keys()
    c = larder_cache.open(p)
    assert c["k0"] == "replaced" and c["k99"] == value
    assert c.info()["dedup"] is True and c.name == "dd"


def test_context_manager_finishes(tmp_path):
    p = tmp_path / "cm.lcache"
    with larder_cache.Builder(p) as b:
        assert isinstance(b, larder_cache.Builder)
        b.insert("k", "v")
        assert not p.exists()  # nothing at the destination until finish
    assert b.stats["key_count"] == 1
    assert larder_cache.open(p)["k"] == "v"
    assert "finished" in repr(b)


def test_exception_in_with_block_aborts_and_leaves_old_file(tmp_path):
    p = tmp_path / "cm.lcache"
    with larder_cache.Builder(p) as b:
        b.insert("k", "old")
    with pytest.raises(RuntimeError):
        with larder_cache.Builder(p) as b:
            b.insert("k", "new")
            raise RuntimeError("stop")
    assert b.stats is None and "aborted" in repr(b)
    assert larder_cache.open(p)["k"] == "old"
    assert sorted(os.listdir(tmp_path)) == ["cm.lcache"]  # temporary file removed


def test_rebuild_replaces_file_while_old_reader_keeps_reading(tmp_path):
    p = tmp_path / "swap.lcache"
    with larder_cache.Builder(p) as b:
        b.insert("k", "v1")
        b.insert("emb", [1.0, 2.0])
    old = larder_cache.open(p)
    emb = np.frombuffer(old["emb"], dtype=np.float64)
    with larder_cache.Builder(p) as b:
        b.insert("k", "v2")
    assert larder_cache.open(p)["k"] == "v2"
    assert old["k"] == "v1"  # the old mapping is still the old file
    assert emb.tolist() == [1.0, 2.0]


def test_path_like_and_empty_cache(tmp_path):
    p = tmp_path / "empty.lcache"
    with larder_cache.Builder(p):
        pass
    c = larder_cache.open(p)
    assert len(c) == 0 and list(c) == [] and c.get("x") is None
    c.verify()
