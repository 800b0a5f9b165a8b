"""List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM
LINSERT.

Tests taking `r` run twice, over RESP2 and RESP3; error texts and null encodings are checked on
raw sockets.
"""

import pytest
import redis

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
NOT_POSITIVE = Err("ERR value is out of range, must be positive")


def test_push_and_range(r):
    assert r.rpush("l", "a", "b") == 2
    assert r.lpush("l", "x", "y") == 4
    assert r.lrange("l", 0, -1) == [b"y", b"x", b"a", b"b"]
    assert r.lpushx("l", "z") == 5
    assert r.rpushx("l", "w") == 6
    assert r.execute_command("RPUSHX", "l", "v", "u") == 8
    assert r.llen("l") == 8
    assert r.type("l") in (b"list", "list")
    assert r.object("encoding", "l") in (b"quicklist", "quicklist")


def test_pushx_on_missing_key(r):
    assert r.lpushx("none", "a") == 0
    assert r.rpushx("none", "a") == 0
    assert r.exists("none") == 0
    assert r.llen("none") == 0


@pytest.mark.parametrize("start,stop,expected", [
    (0, -1, "01234"), (1, 2, "12"), (-2, -1, "34"), (-100, 1, "01"), (3, 100, "34"),
    (3, 1, ""), (5, 10, ""), (0, -6, ""), (-9223372036854775808, 9223372036854775807, "01234"),
])
def test_lrange_indexes(r, start, stop, expected):
    r.rpush("l", *"01234")
    assert r.lrange("l", start, stop) == [c.encode() for c in expected]


def test_lrange_missing_key(r):
    assert r.lrange("none", 0, -1) == []


def test_pop_single(r):
    r.rpush("l", "a", "b", "c")
    assert r.lpop("l") == b"a"
    assert r.rpop("l") == b"c"
    assert r.rpop("l") == b"b"
    assert r.exists("l") == 0
    assert r.lpop("l") is None
    assert r.rpop("l") is None


def test_pop_with_count(r):
    r.rpush("l", "a", "b", "c", "d")
    assert r.lpop("l", 2) == [b"a", b"b"]
    assert r.execute_command("LPOP", "l", 0) == []
    assert r.rpop("l", 10) == [b"d", b"c"]
    assert r.exists("l") == 0
    assert r.lpop("l", 2) is None
    assert r.rpop("l", 0) is None


def test_pop_nulls_on_the_wire(rawp, protocol):
    null = b"_\r\n" if protocol == 3 else None
    for args, resp2 in [(("LPOP", "none"), "$"), (("RPOP", "none", "1"), "*"),
                        (("LPOP", "none", "0"), "*")]:
        f = rawp.call_frame(*args)
        assert f.kind == ("_" if protocol == 3 else resp2), (args, null)
        assert f.value is None
    rawp.call("RPUSH", "l", "a")
    f = rawp.call_frame("LPOP", "l", "0")
    assert f.kind == "*" and f.value == []


def test_pop_count_errors(raw):
    for bad in ["-1", "x", "1.5"]:
        assert raw.call("LPOP", "l", bad) == NOT_POSITIVE
        assert raw.call("RPOP", "l", bad) == NOT_POSITIVE
    assert raw.call("LPOP", "l", "1", "2") == Err(
        "ERR wrong number of arguments for 'lpop' command")
    assert raw.call("LPUSH", "l") == Err("ERR wrong number of arguments for 'lpush' command")


def test_lindex(r):
    r.rpush("l", "a", "b", "c")
    assert r.lindex("l", 0) == b"a"
    assert r.lindex("l", -1) == b"c"
    assert r.lindex("l", 3) is None
    assert r.lindex("l", -4) is None
    assert r.lindex("none", 0) is None


def test_lset(r):
    r.rpush("l", "a", "b", "c")
    assert r.lset("l", 1, "B") is True
    assert r.lset("l", -1, "C") is True
    assert r.lrange("l", 0, -1) == [b"a", b"B", b"C"]
    with pytest.raises(redis.ResponseError, match="^index out of range$"):
        r.lset("l", 3, "x")
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.lset("none", 0, "x")


def test_index_errors_and_order(raw):
    raw.call("RPUSH", "l", "a")
    raw.call("SET", "s", "v")
    # LINDEX and LSET look the key up before they parse the index.
    assert raw.call("LINDEX", "none", "x") is None
    assert raw.call("LINDEX", "s", "x") == WRONGTYPE
    assert raw.call("LINDEX", "l", "x") == NOT_INT
    assert raw.call("LSET", "none", "x", "v") == Err("ERR no such key")
    assert raw.call("LSET", "s", "x", "v") == WRONGTYPE
    assert raw.call("LSET", "l", "x", "v") == NOT_INT
    assert raw.call("LSET", "l", "-2", "v") == Err("ERR index out of range")
    # LRANGE, LTRIM and LREM parse first.
    assert raw.call("LRANGE", "s", "0", "x") == NOT_INT
    assert raw.call("LTRIM", "s", "x", "1") == NOT_INT
    assert raw.call("LREM", "s", "x", "v") == NOT_INT
    assert raw.call("LPOP", "s", "-1") == NOT_POSITIVE
    assert raw.call("LINSERT", "s", "MIDDLE", "a", "b") == SYNTAX


@pytest.mark.parametrize("count,expected,removed", [
    (2, "abcx", 2), (-2, "axbc", 2), (0, "abc", 3), (10, "abc", 3), (-10, "abc", 3),
])
def test_lrem(r, count, expected, removed):
    r.rpush("l", *"axbxcx")
    assert r.lrem("l", count, "x") == removed
    assert r.lrange("l", 0, -1) == [c.encode() for c in expected]


def test_lrem_deletes_empty_list(r):
    r.rpush("l", "x", "x")
    assert r.lrem("l", 0, "y") == 0
    assert r.lrem("l", 0, "x") == 2
    assert r.exists("l") == 0
    assert r.lrem("none", 0, "x") == 0


def test_ltrim(r):
    r.rpush("l", *"01234")
    assert r.ltrim("l", 1, -2) is True
    assert r.lrange("l", 0, -1) == [b"1", b"2", b"3"]
    assert r.ltrim("l", -100, 100) is True
    assert r.llen("l") == 3
    assert r.ltrim("l", 2, 1) is True
    assert r.exists("l") == 0
    assert r.ltrim("none", 0, 1) is True
    assert r.exists("none") == 0


def test_linsert(r):
    r.rpush("l", "a", "c")
    assert r.linsert("l", "BEFORE", "c", "b") == 3
    assert r.linsert("l", "after", "c", "d") == 4
    assert r.execute_command("LINSERT", "l", "before", "a", "0") == 5
    assert r.lrange("l", 0, -1) == [b"0", b"a", b"b", b"c", b"d"]
    assert r.linsert("l", "AFTER", "zz", "x") == -1
    assert r.linsert("none", "AFTER", "a", "x") == 0
    assert r.exists("none") == 0


@pytest.mark.parametrize("args", [
    ["LPUSH", "s", "x"], ["RPUSH", "s", "x"], ["LPUSHX", "s", "x"], ["RPUSHX", "s", "x"],
    ["LPOP", "s"], ["RPOP", "s", "0"], ["LLEN", "s"], ["LRANGE", "s", "0", "-1"],
    ["LINDEX", "s", "0"], ["LSET", "s", "0", "v"], ["LREM", "s", "0", "v"],
    ["LTRIM", "s", "0", "1"], ["LINSERT", "s", "BEFORE", "a", "b"],
])
def test_list_commands_on_a_string(raw, args):
    raw.call("SET", "s", "v")
    assert raw.call(*args) == WRONGTYPE
    assert raw.call("GET", "s") == b"v"


@pytest.mark.parametrize("args", [
    ["GET", "l"], ["APPEND", "l", "x"], ["INCR", "l"], ["STRLEN", "l"], ["GETRANGE", "l", "0", "1"],
    ["SETRANGE", "l", "0", "x"], ["GETSET", "l", "x"], ["INCRBYFLOAT", "l", "1"], ["GETDEL", "l"],
])
def test_string_commands_on_a_list(raw, args):
    raw.call("RPUSH", "l", "a")
    assert raw.call(*args) == WRONGTYPE
    assert raw.call("LRANGE", "l", "0", "-1") == [b"a"]


def test_set_replaces_a_list_and_mget_skips_it(raw):
    raw.call("RPUSH", "l", "a")
    assert raw.call("MGET", "l") == [None]
    assert raw.call("SET", "l", "v") == "OK"
    assert raw.call("GET", "l") == b"v"


def test_binary_elements(r):
    r.rpush("b", b"\x00\xff\r\n", b"")
    assert r.lrange("b", 0, -1) == [b"\x00\xff\r\n", b""]
    assert r.lrem("b", 0, b"") == 1


def test_lists_survive_copy_rename_and_expire(r):
    r.rpush("l", "a", "b")
    assert r.copy("l", "c") is True
    r.rpush("c", "z")
    assert r.lrange("l", 0, -1) == [b"a", b"b"]
    r.rename("c", "d")
    assert r.lrange("d", 0, -1) == [b"a", b"b", b"z"]
    r.expire("d", 100)
    r.lpush("d", "y")
    assert r.lpop("d") == b"y"
    assert 90 < r.ttl("d") <= 100
