"""Reading: every type, typed getters, missing keys, str vs bytes keys, iteration, info."""

import pytest

import larder_cache
from conftest import GOLDEN, GOLDEN_VALUES


def test_get_returns_every_type_as_its_python_type(golden):
    for key, want in GOLDEN_VALUES.items():
        got = golden.get(key)
        assert got == want, key
        assert golden[key] == want, key
        if isinstance(want, bool):
            assert got is want, key
        elif key in ("f32_list", "f64_list"):
            assert isinstance(got, larder_cache.FloatList), key
        else:
            assert type(got) is type(want), key


def test_typed_getters(golden):
    assert golden.get_bytes("bytes") == b"\x00\x01\x02\xfe\xff"
    assert golden.get_str("str") == "héllo wörld"
    assert golden.get_str("empty_str") == ""
    assert golden.get_int("i64") == -9_007_199_254_740_993
    assert golden.get_float("f64") == 3.141592653589793
    assert golden.get_bool("bool_true") is True
    assert golden.get_bool("bool_false") is False
    assert golden.get_f32_list("f32_list") == GOLDEN_VALUES["f32_list"]
    assert golden.get_f32_list("f32_list").typecode == "f"
    assert golden.get_f64_list("f64_list") == [0.1, 0.2, 0.3, 1e300]
    assert golden.get_f64_list("f64_list").typecode == "d"
    assert golden.get_str_list("str_list") == ["alpha", "", "gamma δ"]
    assert golden.get_str("shared_2") == GOLDEN_VALUES["shared_2"]
    assert golden.get_int(b"binary\x00key") == 7
    # A str value is also readable as its UTF-8 bytes.
    assert golden.get_bytes("str") == "héllo wörld".encode()


@pytest.mark.parametrize(
    "getter, key",
    [
        ("get_int", "str"),
        ("get_float", "i64"),
        ("get_str", "bytes"),
        ("get_str", "i64"),
        ("get_bool", "i64"),
        ("get_bytes", "f64"),
        ("get_f32_list", "f64_list"),
        ("get_f64_list", "f32_list"),
        ("get_str_list", "str"),
        ("get_int", "bool_true"),
    ],
)
def test_typed_getter_mismatch_raises_type_mismatch(golden, getter, key):
    with pytest.raises(larder_cache.TypeMismatch) as e:
        getattr(golden, getter)(key)
    assert isinstance(e.value, TypeError)
    assert "type mismatch" in str(e.value)


def test_mismatch_message_names_both_types(golden):
    with pytest.raises(TypeError, match="asked for f64, key holds i64"):
        golden.get_float("i64")


def test_missing_keys(golden):
    assert golden.get("absent") is None
    assert golden.get("absent", 42) == 42
    assert golden.get("str", 42) == "héllo wörld"
    for getter in ("get_str", "get_bytes", "get_int", "get_float", "get_bool",
                   "get_f32_list", "get_f64_list", "get_str_list"):
        assert getattr(golden, getter)("absent") is None, getter
    assert golden.value_type("absent") is None
    with pytest.raises(KeyError) as e:
        golden["absent"]
    assert e.value.args == ("absent",)
    assert "absent" not in golden
    assert "" not in golden


def test_str_and_bytes_keys_are_the_same_key(golden):
    assert golden[b"str"] == golden["str"]
    assert b"i64" in golden and "i64" in golden
    assert golden.get_int(b"i64") == golden.get_int("i64")
    assert "binary\x00key" in golden  # NUL is fine in a str key too
    assert golden.get("héllo".encode()) is None


def test_str_subclass_keys_work(golden):
    class Key(str):
        pass

    assert golden[Key("i64")] == -9_007_199_254_740_993


@pytest.mark.parametrize("key", [1, 1.5, None, ("t",), ["l"], bytearray(b"str")])
def test_other_key_types_raise_type_error(golden, key):
    with pytest.raises(TypeError, match="str or bytes"):
        golden.get(key)
    with pytest.raises(TypeError):
        key in golden  # noqa: B015
    with pytest.raises(TypeError):
        golden.get_int(key)


def test_unencodable_str_key_raises(golden):
    with pytest.raises(UnicodeEncodeError):
        golden.get("\udc80")


def test_len_and_iteration(golden):
    assert len(golden) == 13
    keys = list(golden.keys())
    assert len(keys) == 13
    # Keys come back as str when they are UTF-8, as this one with a NUL is.
    expected = {k.decode() if isinstance(k, bytes) else k for k in GOLDEN_VALUES}
    assert set(keys) == expected
    assert list(golden) == keys  # same (index) order every time
    values = list(golden.values())
    items = list(golden.items())
    assert [k for k, _ in items] == keys
    assert [v for _, v in items] == values
    assert dict(items) == {k.decode() if isinstance(k, bytes) else k: v
                           for k, v in GOLDEN_VALUES.items()}
    it = iter(golden)
    assert iter(it) is it
    assert sum(1 for _ in it) == 13
    assert next(it, "done") == "done"


def test_non_utf8_keys_iterate_as_bytes(build):
    c = build({b"\xff\xfe": 1, "plain": 2})
    assert set(c.keys()) == {b"\xff\xfe", "plain"}


def test_iterator_keeps_the_cache_alive():
    it = larder_cache.open(GOLDEN / "v1-all-types.lcache").items()
    import gc

    gc.collect()
    assert len(list(it)) == 13


def test_info(golden):
    info = golden.info()
    assert info["name"] == "golden-v1"
    assert golden.name == "golden-v1"
    assert info["format_version"] == larder_cache.FORMAT_VERSION == 1
    assert info["created_unix_ms"] == 1_767_225_600_000
    assert info["key_count"] == 13
    assert info["value_count"] == 12  # one value shared by two keys
    assert info["dedup"] is True
    assert info["file_bytes"] == (GOLDEN / "v1-all-types.lcache").stat().st_size
    assert info["offset_width_bytes"] == 4
    assert info["dedup_saved_bytes"] > 0
    assert info["path"] == golden.path == GOLDEN / "v1-all-types.lcache"
    assert {"data_bytes", "index_bytes", "bucket_count", "displaced_keys", "probe_max",
            "raw_key_bytes", "raw_value_bytes"} <= info.keys()


def test_value_type(golden):
    assert golden.value_type("f32_list") == "list<f32>"
    assert golden.value_type("shared_2") == "str"
    assert golden.value_type(b"binary\x00key") == "i64"


def test_verify_and_repr(golden):
    assert golden.verify() is None
    assert "golden-v1" in repr(golden) and "keys=13" in repr(golden)


def test_cache_constructor_is_open():
    c = larder_cache.Cache(str(GOLDEN / "v1-all-types.lcache"))
    assert len(c) == 13
