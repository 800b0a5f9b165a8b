"""List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM
LINSERT LPOS LMOVE RPOPLPUSH LMPOP, their keyspace events, and lists on both sides of
list-max-listpack-size.

Tests taking `r` run twice, over RESP2 and RESP3; error texts and null encodings are checked on
raw sockets.
"""

import time

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


# --- LPOS ---------------------------------------------------------------------------------------

RANK_ZERO = Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second"
                " ... or use negative to start from the end of the list")


@pytest.mark.parametrize("options,expected", [
    ([], 0), (["RANK", "2"], 3), (["RANK", "-1"], 6), (["RANK", "-3"], 0), (["RANK", "4"], None),
    (["COUNT", "0"], [0, 3, 6]), (["COUNT", "2"], [0, 3]), (["count", "2", "rank", "-1"], [6, 3]),
    (["RANK", "2", "COUNT", "5"], [3, 6]), (["MAXLEN", "3"], 0), (["RANK", "2", "MAXLEN", "3"], None),
    (["RANK", "-1", "MAXLEN", "1"], 6), (["COUNT", "0", "MAXLEN", "4"], [0, 3]),
    (["RANK", "1", "RANK", "-2"], 3), (["RANK", "-9223372036854775808"], 6),
])
def test_lpos(r, options, expected):
    r.rpush("l", *"abcabca")
    assert r.execute_command("LPOS", "l", "a", *options) == expected


def test_lpos_no_match_and_missing_key(r):
    r.rpush("l", "a", "b")
    assert r.lpos("l", "zz") is None
    assert r.lpos("l", "zz", count=0) == []
    assert r.lpos("l", "b", maxlen=1) is None
    assert r.lpos("none", "a") is None
    assert r.lpos("none", "a", count=1) == []


def test_lpos_errors(raw):
    raw.call("RPUSH", "l", "a")
    raw.call("SET", "s", "v")
    assert raw.call("LPOS", "l", "a", "RANK", "0") == RANK_ZERO
    assert raw.call("LPOS", "l", "a", "RANK", "x") == NOT_INT
    for bad in ["-1", "x"]:
        assert raw.call("LPOS", "l", "a", "COUNT", bad) == Err("ERR COUNT can't be negative")
        assert raw.call("LPOS", "l", "a", "MAXLEN", bad) == Err("ERR MAXLEN can't be negative")
    assert raw.call("LPOS", "l", "a", "RANK") == SYNTAX
    assert raw.call("LPOS", "l", "a", "FOO", "1") == SYNTAX
    assert raw.call("LPOS", "l") == Err("ERR wrong number of arguments for 'lpos' command")
    # Options are parsed before the key is looked up.
    assert raw.call("LPOS", "s", "a", "RANK", "0") == RANK_ZERO
    assert raw.call("LPOS", "s", "a") == WRONGTYPE
    assert raw.call("LPOS", "none", "a", "COUNT", "-1") == Err("ERR COUNT can't be negative")


def test_lpos_nulls_on_the_wire(rawp, protocol):
    rawp.call("RPUSH", "l", "a")
    for args in [("LPOS", "l", "zz"), ("LPOS", "none", "a")]:
        f = rawp.call_frame(*args)
        assert f.kind == ("_" if protocol == 3 else "$") and f.value is None
    f = rawp.call_frame("LPOS", "none", "a", "COUNT", "0")
    assert f.kind == "*" and f.value == []


# --- LMOVE and RPOPLPUSH ------------------------------------------------------------------------

@pytest.mark.parametrize("wherefrom,whereto,moved,src,dst", [
    ("LEFT", "LEFT", b"a", [b"b", b"c"], [b"a", b"x"]),
    ("LEFT", "RIGHT", b"a", [b"b", b"c"], [b"x", b"a"]),
    ("RIGHT", "LEFT", b"c", [b"a", b"b"], [b"c", b"x"]),
    ("right", "right", b"c", [b"a", b"b"], [b"x", b"c"]),
])
def test_lmove_directions(r, wherefrom, whereto, moved, src, dst):
    r.rpush("src", "a", "b", "c")
    r.rpush("dst", "x")
    assert r.lmove("src", "dst", wherefrom, whereto) == moved
    assert r.lrange("src", 0, -1) == src
    assert r.lrange("dst", 0, -1) == dst


def test_lmove_creates_and_deletes(r):
    r.rpush("src", "a")
    assert r.lmove("src", "new", "LEFT", "RIGHT") == b"a"
    assert r.exists("src") == 0
    assert r.lrange("new", 0, -1) == [b"a"]
    assert r.lmove("src", "new", "LEFT", "RIGHT") is None
    assert r.lrange("new", 0, -1) == [b"a"]


def test_lmove_same_list_rotates(r):
    r.rpush("l", "a", "b", "c")
    assert r.lmove("l", "l", "LEFT", "RIGHT") == b"a"
    assert r.lrange("l", 0, -1) == [b"b", b"c", b"a"]
    assert r.rpoplpush("l", "l") == b"a"
    assert r.lrange("l", 0, -1) == [b"a", b"b", b"c"]
    r.rpush("one", "x")
    assert r.lmove("one", "one", "RIGHT", "RIGHT") == b"x"
    assert r.lrange("one", 0, -1) == [b"x"]


def test_rpoplpush(r):
    r.rpush("src", "a", "b")
    assert r.rpoplpush("src", "dst") == b"b"
    assert r.rpoplpush("src", "dst") == b"a"
    assert r.exists("src") == 0
    assert r.lrange("dst", 0, -1) == [b"a", b"b"]
    assert r.rpoplpush("src", "dst") is None


def test_lmove_errors(raw):
    raw.call("RPUSH", "l", "a")
    raw.call("SET", "s", "v")
    # A missing source answers null before the destination's type is looked at.
    assert raw.call("LMOVE", "none", "s", "LEFT", "LEFT") is None
    assert raw.call("RPOPLPUSH", "none", "s") is None
    assert raw.call("LMOVE", "l", "s", "LEFT", "LEFT") == WRONGTYPE
    assert raw.call("RPOPLPUSH", "l", "s") == WRONGTYPE
    assert raw.call("LMOVE", "s", "l", "LEFT", "LEFT") == WRONGTYPE
    assert raw.call("LRANGE", "l", "0", "-1") == [b"a"]
    assert raw.call("LMOVE", "l", "x", "UP", "LEFT") == SYNTAX
    assert raw.call("LMOVE", "l", "x", "LEFT", "DOWN") == SYNTAX
    assert raw.call("LMOVE", "none", "x", "UP", "LEFT") == SYNTAX
    assert raw.call("LMOVE", "l", "x", "LEFT") == Err(
        "ERR wrong number of arguments for 'lmove' command")
    assert raw.call("RPOPLPUSH", "l") == Err(
        "ERR wrong number of arguments for 'rpoplpush' command")


def test_lmove_nulls_on_the_wire(rawp, protocol):
    for args in [("LMOVE", "none", "x", "LEFT", "LEFT"), ("RPOPLPUSH", "none", "x")]:
        f = rawp.call_frame(*args)
        assert f.kind == ("_" if protocol == 3 else "$") and f.value is None


# --- LMPOP --------------------------------------------------------------------------------------

def test_lmpop(r):
    r.rpush("l2", "a", "b", "c", "d")
    assert r.lmpop(2, "l1", "l2", direction="LEFT") == [b"l2", [b"a"]]
    assert r.lmpop(2, "l1", "l2", direction="RIGHT", count=2) == [b"l2", [b"d", b"c"]]
    assert r.execute_command("LMPOP", "1", "l2", "left", "count", "10") == [b"l2", [b"b"]]
    assert r.exists("l2") == 0
    assert r.lmpop(2, "l1", "l2", direction="LEFT") is None


def test_lmpop_wrong_type_only_before_the_first_list(raw):
    raw.call("SET", "s", "v")
    raw.call("RPUSH", "l", "a", "b")
    assert raw.call("LMPOP", "2", "none", "s", "LEFT") == WRONGTYPE
    assert raw.call("LMPOP", "2", "l", "s", "LEFT") == [b"l", [b"a"]]
    assert raw.call("LMPOP", "2", "s", "l", "LEFT") == WRONGTYPE
    assert raw.call("LRANGE", "l", "0", "-1") == [b"b"]


@pytest.mark.parametrize("args,error", [
    (["0", "l", "LEFT"], "ERR numkeys should be greater than 0"),
    (["-1", "l", "LEFT"], "ERR numkeys should be greater than 0"),
    (["x", "l", "LEFT"], "ERR numkeys should be greater than 0"),
    (["1", "l", "LEFT", "COUNT", "0"], "ERR count should be greater than 0"),
    (["1", "l", "LEFT", "COUNT", "-1"], "ERR count should be greater than 0"),
    (["1", "l", "LEFT", "COUNT", "x"], "ERR count should be greater than 0"),
    (["2", "l", "LEFT"], "ERR syntax error"),
    (["3", "l", "m", "LEFT"], "ERR syntax error"),
    (["1", "l", "MIDDLE"], "ERR syntax error"),
    (["1", "l", "LEFT", "COUNT"], "ERR syntax error"),
    (["1", "l", "LEFT", "COUNT", "1", "COUNT", "2"], "ERR syntax error"),
    (["1", "l", "LEFT", "FOO", "1"], "ERR syntax error"),
    (["1", "l"], "ERR wrong number of arguments for 'lmpop' command"),
])
def test_lmpop_errors(raw, args, error):
    raw.call("RPUSH", "l", "a")
    assert raw.call("LMPOP", *args) == Err(error)
    assert raw.call("LLEN", "l") == 1


def test_lmpop_null_on_the_wire(rawp, protocol):
    f = rawp.call_frame("LMPOP", "2", "a", "b", "LEFT")
    assert f.kind == ("_" if protocol == 3 else "*") and f.value is None


def test_moves_in_a_transaction(r):
    r.rpush("a", "1", "2")
    p = r.pipeline(transaction=True)
    p.lmove("a", "b", "LEFT", "LEFT")
    p.rpoplpush("a", "c")
    p.lmpop(3, "a", "b", "c", direction="RIGHT", count=5)
    assert p.execute() == [b"1", b"2", [b"b", [b"1"]]]
    assert r.lrange("c", 0, -1) == [b"2"]
    assert r.exists("a", "b") == 0


# --- keyspace events ----------------------------------------------------------------------------

@pytest.fixture
def events(r):
    """A function that runs commands and returns the (event, key) pairs they raised."""
    r.config_set("notify-keyspace-events", "KEAn")
    ps = r.pubsub()
    ps.psubscribe("__keyevent@0__:*")
    assert ps.get_message(timeout=2)["type"] == "psubscribe"

    def run(*commands):
        for c in commands:
            r.execute_command(*c)
        out = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            m = ps.get_message(timeout=0.3)
            if m is None:
                break
            if m["type"] == "pmessage":
                channel = m["channel"].decode() if isinstance(m["channel"], bytes) else m["channel"]
                data = m["data"].decode() if isinstance(m["data"], bytes) else m["data"]
                out.append((channel.split(":", 1)[1], data))
        return out

    yield run
    ps.close()
    r.config_set("notify-keyspace-events", "")


def test_events_of_moves(events):
    assert events(["RPUSH", "src", "a", "b"]) == [("new", "src"), ("rpush", "src")]
    assert events(["LMOVE", "src", "dst", "LEFT", "RIGHT"]) == [
        ("new", "dst"), ("rpush", "dst"), ("lpop", "src")]
    assert events(["RPOPLPUSH", "src", "dst"]) == [
        ("lpush", "dst"), ("rpop", "src"), ("del", "src")]
    assert events(["LMOVE", "dst", "dst", "RIGHT", "LEFT"]) == [("lpush", "dst"), ("rpop", "dst")]
    assert events(["LMOVE", "none", "dst", "LEFT", "LEFT"]) == []
    assert events(["LMPOP", "2", "none", "dst", "RIGHT"]) == [("rpop", "dst")]
    assert events(["LMPOP", "1", "dst", "LEFT", "COUNT", "9"]) == [("lpop", "dst"), ("del", "dst")]
    assert events(["LMPOP", "1", "dst", "LEFT"]) == []
    assert events(["LPOS", "none", "a"]) == []


def test_events_of_pops_and_writes(events):
    assert events(["RPUSH", "l", "a", "b", "c", "d"], ["LPOP", "l", "0"]) == [
        ("new", "l"), ("rpush", "l")]
    assert events(["LPOP", "l"], ["RPOP", "l", "2"]) == [("lpop", "l"), ("rpop", "l")]
    assert events(["LSET", "l", "0", "x"], ["LINSERT", "l", "BEFORE", "x", "y"],
                  ["LREM", "l", "0", "y"], ["LTRIM", "l", "0", "-1"]) == [
        ("lset", "l"), ("linsert", "l"), ("lrem", "l"), ("ltrim", "l")]
    assert events(["LPUSHX", "l", "z"], ["RPUSHX", "nope", "z"]) == [("lpush", "l")]
    assert events(["RPOP", "l", "5"]) == [("rpop", "l"), ("del", "l")]


# --- both sides of list-max-listpack-size -------------------------------------------------------

@pytest.fixture
def small_nodes(r):
    """Lists of more than 4 elements in the full form, for the test's duration."""
    old = r.config_get("list-max-listpack-size")["list-max-listpack-size"]
    r.config_set("list-max-listpack-size", 4)
    yield
    r.config_set("list-max-listpack-size", old)


@pytest.mark.parametrize("n", [3, 5, 300])
def test_every_command_past_the_compact_limit(r, small_nodes, n):
    items = [str(i).encode() * (1 + i % 3) for i in range(n)]
    r.rpush("l", *items)
    assert r.object("encoding", "l") in (b"quicklist", "quicklist")
    assert r.lrange("l", 0, -1) == items
    assert r.lindex("l", -1) == items[-1]
    assert r.lpos("l", items[1]) == 1
    r.lset("l", 1, "mid")
    assert r.linsert("l", "AFTER", "mid", "new") == n + 1
    assert r.lrange("l", 0, 3) == [items[0], b"mid", b"new", items[2]]
    assert r.lrem("l", 0, "new") == 1
    assert r.lmove("l", "l", "LEFT", "RIGHT") == items[0]
    assert r.lpop("l", 2) == [b"mid", items[2]]
    assert r.llen("l") == n - 2
    r.ltrim("l", 0, 0)
    assert r.llen("l") == 1


def test_big_elements_and_long_lists(r):
    big = b"x" * 70000
    r.rpush("l", "a", big, "b")
    assert r.lindex("l", 1) == big
    assert r.lrange("l", 0, -1) == [b"a", big, b"b"]
    r.delete("l")
    r.rpush("l", *range(10000))
    assert r.llen("l") == 10000
    assert r.lindex("l", 5000) == b"5000"
    assert r.lrange("l", 9998, -1) == [b"9998", b"9999"]
    assert r.lpos("l", 9999, rank=-1) == 9999
