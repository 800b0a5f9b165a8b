"""Hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HSTRLEN HEXISTS HKEYS HVALS HGETALL
HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN.

Tests taking `r` run twice, over RESP2 and RESP3; error texts and reply types are checked on
raw sockets. Every test passes against Redis 7.0 as well.
"""

import pytest
import redis

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
NOT_FLOAT = Err("ERR value is not a valid float")
SYNTAX = Err("ERR syntax error")


def arity(name):
    return Err(f"ERR wrong number of arguments for '{name}' command")


@pytest.fixture
def limits(server):
    """Restores the encoding limits and notifications a test changes."""
    yield
    with server.admin() as c:
        c.call("CONFIG", "SET", "hash-max-listpack-entries", "128")
        c.call("CONFIG", "SET", "hash-max-listpack-value", "64")
        c.call("CONFIG", "SET", "notify-keyspace-events", "")


def encoding(r, key):
    e = r.object("encoding", key)
    return e.decode() if isinstance(e, bytes) else e


def test_hset_hget_and_counts(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", mapping={"a": "10", "c": "3"}) == 1
    assert r.execute_command("HMSET", "h", "d", "4") in (b"OK", "OK", True)
    assert r.hget("h", "a") == b"10"
    assert r.hget("h", "zz") is None
    assert r.hget("none", "a") is None
    assert r.hmget("h", "a", "zz", "b") == [b"10", None, b"2"]
    assert r.hmget("none", "a", "b") == [None, None]
    assert r.hlen("h") == 4
    assert r.hlen("none") == 0
    assert r.hstrlen("h", "a") == 2
    assert r.hstrlen("h", "zz") == 0
    assert r.hstrlen("none", "a") == 0
    assert r.hexists("h", "a") is True
    assert r.hexists("h", "zz") is False
    assert r.hexists("none", "a") is False
    assert r.type("h") in (b"hash", "hash")
    assert encoding(r, "h") == "listpack"


def test_hsetnx(r):
    assert r.hsetnx("h", "a", "1") == 1
    assert r.hsetnx("h", "a", "2") == 0
    assert r.hget("h", "a") == b"1"
    assert r.hsetnx("h", "b", "2") == 1
    assert r.hlen("h") == 2


def test_getall_keys_vals_in_insertion_order_while_small(r):
    r.hset("h", mapping={"z": "1", "a": "2", "m": "3"})
    assert r.hkeys("h") == [b"z", b"a", b"m"]
    assert r.hvals("h") == [b"1", b"2", b"3"]
    assert r.hgetall("h") == {b"z": b"1", b"a": b"2", b"m": b"3"}
    assert r.hkeys("none") == []
    assert r.hvals("none") == []
    assert r.hgetall("none") == {}


def test_hgetall_is_a_map_in_resp3(rawp, protocol):
    rawp.call("HSET", "h", "f", "v", "g", "w")
    f = rawp.call_frame("HGETALL", "h")
    if protocol == 3:
        assert f.kind == "%"
        assert [(a.value, b.value) for a, b in f.value] == [(b"f", b"v"), (b"g", b"w")]
    else:
        assert f.kind == "*"
        assert [x.value for x in f.value] == [b"f", b"v", b"g", b"w"]
    empty = rawp.call_frame("HGETALL", "none")
    assert (empty.kind, len(empty.value)) == ("%" if protocol == 3 else "*", 0)
    keys = rawp.call_frame("HKEYS", "none")
    assert (keys.kind, keys.value) == ("*", [])
    null = rawp.call_frame("HGET", "none", "f")
    assert null.kind == ("_" if protocol == 3 else "$") and null.value is None
    nulls = rawp.call_frame("HMGET", "none", "a")
    assert nulls.kind == "*" and nulls.value[0].value is None


def test_binary_fields_and_values(r):
    r.hset("h", b"\x00\xff\r\n", b"")
    r.hset("h", b"", b"\x01\x02")
    assert r.hget("h", b"\x00\xff\r\n") == b""
    assert r.hget("h", b"") == b"\x01\x02"
    assert r.hstrlen("h", b"") == 2


def test_hdel_and_emptied_key(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hdel("h", "a", "zz", "a") == 1
    assert r.hdel("none", "a") == 0
    assert r.hdel("h", "b", "c", "d") == 2
    assert r.exists("h") == 0


def test_encoding_conversions(r, limits):
    r.config_set("hash-max-listpack-entries", 3)
    r.config_set("hash-max-listpack-value", 5)
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert encoding(r, "h") == "listpack"
    r.hset("h", "d", "4")
    assert encoding(r, "h") == "hashtable"
    r.hdel("h", "a", "b", "c")
    assert encoding(r, "h") == "hashtable"
    assert r.hgetall("h") == {b"d": b"4"}
    r.hset("v", "a", "123456")
    assert encoding(r, "v") == "hashtable"
    r.hset("f", "123456", "a")
    assert encoding(r, "f") == "hashtable"
    r.hset("n", "x", "1")
    r.hsetnx("n", "x", "1234567")
    assert encoding(r, "n") == "listpack"
    r.hincrby("n", "x", 9999)
    assert encoding(r, "n") == "listpack"
    r.hincrby("n", "x", 90000)
    assert encoding(r, "n") == "hashtable"
    r.hset("fl", "x", "1")
    r.hincrbyfloat("fl", "x", "0.25")
    assert encoding(r, "fl") == "listpack"
    r.hincrbyfloat("fl", "x", "0.0625")
    assert r.hget("fl", "x") == b"1.3125"
    assert encoding(r, "fl") == "hashtable"


def test_lowered_limit_converts_at_next_write(r, limits):
    r.hset("h", mapping={f"f{i}": "v" for i in range(6)})
    assert encoding(r, "h") == "listpack"
    r.config_set("hash-max-listpack-entries", 3)
    assert encoding(r, "h") == "listpack"
    r.hset("h", "f0", "w")
    assert encoding(r, "h") == "hashtable"


def test_hincrby(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -7) == -2
    assert r.hget("h", "n") == b"-2"
    r.hset("h", mapping={"big": str(2**63 - 1), "small": str(-2**63)})
    assert r.hincrby("h", "big", -1) == 2**63 - 2


def test_hincrby_errors(raw):
    raw.call("HSET", "h", "s", "abc", "sp", " 1", "big", str(2**63 - 1), "lead", "01")
    for field in ["s", "sp", "lead"]:
        assert raw.call("HINCRBY", "h", field, "1") == Err("ERR hash value is not an integer")
    assert raw.call("HINCRBY", "h", "big", "1") == Err("ERR increment or decrement would overflow")
    assert raw.call("HINCRBY", "h", "n", "x") == NOT_INT
    assert raw.call("HINCRBY", "h", "n", "1.5") == NOT_INT
    assert raw.call("HINCRBY", "h", "n", str(2**63)) == NOT_INT
    raw.call("SET", "str", "v")
    # The increment is parsed before the key's type is checked.
    assert raw.call("HINCRBY", "str", "n", "x") == NOT_INT
    assert raw.call("HINCRBY", "str", "n", "1") == WRONGTYPE
    assert raw.call("HGETALL", "h")[-2:] == [b"lead", b"01"]


@pytest.mark.parametrize("start,by,want", [
    ("10.5", "0.1", "10.6"), ("0.1", "0.2", "0.3"), ("5.0e3", "2.0e2", "5200"),
    ("3", "-3", "0"), ("1", "-1.5", "-0.5"), ("0x10", "0x1p-2", "16.25"),
    ("1e20", "0", "100000000000000000000"), ("7", "1e-5", "7.00001"),
])
def test_hincrbyfloat_formats_like_incrbyfloat(r, start, by, want):
    r.hset("h", "f", start)
    assert r.hincrbyfloat("h", "f", by) == float(want)
    assert r.hget("h", "f") == want.encode()


def test_hincrbyfloat_on_a_missing_field(raw):
    assert raw.call("HINCRBYFLOAT", "h", "f", "1.5") == b"1.5"
    assert raw.call("HINCRBYFLOAT", "h", "f", "1.5") == b"3"


def test_hincrbyfloat_errors(raw):
    raw.call("HSET", "h", "x", "abc", "a", "1", "huge", "1e4932")
    assert raw.call("HINCRBYFLOAT", "h", "x", "1") == Err("ERR hash value is not a float")
    assert raw.call("HINCRBYFLOAT", "h", "a", "abc") == NOT_FLOAT
    assert raw.call("HINCRBYFLOAT", "h", "a", "nan") == NOT_FLOAT
    assert raw.call("HINCRBYFLOAT", "h", "a", "inf") == Err("ERR value is NaN or Infinity")
    assert raw.call("HINCRBYFLOAT", "h", "a", "-inf") == Err("ERR value is NaN or Infinity")
    assert raw.call("HINCRBYFLOAT", "h", "huge", "1e4932") == Err(
        "ERR increment would produce NaN or Infinity")
    raw.call("SET", "str", "v")
    assert raw.call("HINCRBYFLOAT", "str", "f", "x") == NOT_FLOAT
    assert raw.call("HINCRBYFLOAT", "str", "f", "1") == WRONGTYPE
    assert raw.call("HGET", "h", "a") == b"1"


@pytest.mark.parametrize("argv,name", [
    (["HSET", "h", "a"], "hset"), (["HSET", "h", "a", "1", "b"], "hset"),
    (["HMSET", "h", "a", "1", "b"], "hmset"), (["HSETNX", "h", "a"], "hsetnx"),
    (["HSETNX", "h", "a", "1", "2"], "hsetnx"), (["HGET", "h"], "hget"),
    (["HMGET", "h"], "hmget"), (["HDEL", "h"], "hdel"), (["HLEN"], "hlen"),
    (["HLEN", "h", "x"], "hlen"), (["HSTRLEN", "h"], "hstrlen"), (["HEXISTS", "h"], "hexists"),
    (["HKEYS"], "hkeys"), (["HVALS", "h", "x"], "hvals"), (["HGETALL"], "hgetall"),
    (["HINCRBY", "h", "f"], "hincrby"), (["HINCRBYFLOAT", "h", "f"], "hincrbyfloat"),
    (["HRANDFIELD"], "hrandfield"), (["HSCAN", "h"], "hscan"),
])
def test_arity(raw, argv, name):
    assert raw.call(*argv) == arity(name)
    assert raw.call("EXISTS", "h") == 0


def test_wrong_type(raw):
    raw.call("SET", "s", "v")
    raw.call("HSET", "h", "a", "1")
    for argv in [["HSET", "s", "a", "1"], ["HMSET", "s", "a", "1"], ["HSETNX", "s", "a", "1"],
                 ["HGET", "s", "a"], ["HMGET", "s", "a"], ["HDEL", "s", "a"], ["HLEN", "s"],
                 ["HSTRLEN", "s", "a"], ["HEXISTS", "s", "a"], ["HKEYS", "s"], ["HVALS", "s"],
                 ["HGETALL", "s"], ["HINCRBY", "s", "a", "1"], ["HINCRBYFLOAT", "s", "a", "1"],
                 ["HRANDFIELD", "s"], ["HRANDFIELD", "s", "2"], ["HSCAN", "s", "0"],
                 ["GET", "h"], ["LPUSH", "h", "x"], ["INCR", "h"]]:
        assert raw.call(*argv) == WRONGTYPE, argv
    assert raw.call("HSET", "s") == arity("hset")
    assert raw.call("GET", "s") == b"v"


def test_hrandfield_single(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    seen = {r.hrandfield("h") for _ in range(100)}
    assert seen == {b"a", b"b", b"c"}
    assert r.hrandfield("none") is None


def test_hrandfield_counts(raw):
    raw.call("HSET", "h", "a", "1", "b", "2", "c", "3")
    assert raw.call("HRANDFIELD", "h", "0") == []
    assert raw.call("HRANDFIELD", "none", "3") == []
    assert raw.call("HRANDFIELD", "none", "-3", "WITHVALUES") == []
    assert sorted(raw.call("HRANDFIELD", "h", "5")) == [b"a", b"b", b"c"]
    assert sorted(raw.call("HRANDFIELD", "h", "3")) == [b"a", b"b", b"c"]
    two = raw.call("HRANDFIELD", "h", "2")
    assert len(two) == 2 and len(set(two)) == 2 and set(two) <= {b"a", b"b", b"c"}
    many = raw.call("HRANDFIELD", "h", "-20")
    assert len(many) == 20 and set(many) <= {b"a", b"b", b"c"}
    flat = raw.call("HRANDFIELD", "h", "-6", "withvalues")
    assert len(flat) == 12
    pairs = list(zip(flat[::2], flat[1::2]))
    assert set(pairs) <= {(b"a", b"1"), (b"b", b"2"), (b"c", b"3")}
    flat = raw.call("HRANDFIELD", "h", "2", "WITHVALUES")
    assert len(flat) == 4 and len({flat[0], flat[2]}) == 2


def test_hrandfield_resp3_pairs_are_nested(rawp, protocol):
    rawp.call("HSET", "h", "a", "1", "b", "2")
    for count in ["-3", "1", "2", "5"]:
        f = rawp.call_frame("HRANDFIELD", "h", count, "WITHVALUES")
        assert f.kind == "*"
        n = abs(int(count)) if count.startswith("-") else min(int(count), 2)
        if protocol == 3:
            assert len(f.value) == n
            assert all(p.kind == "*" and len(p.value) == 2 for p in f.value)
            assert all((p.value[0].value, p.value[1].value) in {(b"a", b"1"), (b"b", b"2")}
                       for p in f.value)
        else:
            assert len(f.value) == 2 * n
    null = rawp.call_frame("HRANDFIELD", "none")
    assert null.kind == ("_" if protocol == 3 else "$")


def test_hrandfield_errors(raw):
    raw.call("HSET", "h", "a", "1")
    assert raw.call("HRANDFIELD", "h", "x") == NOT_INT
    assert raw.call("HRANDFIELD", "h", str(-2**63)) == Err(
        "ERR value is out of range, value must between -9223372036854775807 and "
        "9223372036854775807")
    assert raw.call("HRANDFIELD", "h", "1", "WITHSCORES") == SYNTAX
    assert raw.call("HRANDFIELD", "h", "1", "WITHVALUES", "x") == SYNTAX
    assert raw.call("HRANDFIELD", "h", str(-2**62), "WITHVALUES") == Err("ERR value is out of range")
    assert raw.call("HRANDFIELD", "h", str(2**62), "WITHVALUES") == Err("ERR value is out of range")
    raw.call("SET", "s", "v")
    # The count is checked before the key's type.
    assert raw.call("HRANDFIELD", "s", "x") == NOT_INT
    assert raw.call("HRANDFIELD", "none", "1", "bad") == SYNTAX


def test_hrandfield_on_a_large_hash(raw, limits):
    raw.call("CONFIG", "SET", "hash-max-listpack-entries", "4")
    for i in range(100):
        raw.call("HSET", "t", f"f{i}", f"v{i}")
    assert raw.call("OBJECT", "ENCODING", "t") == b"hashtable"
    for n in [1, 10, 40, 99, 100, 200]:
        flat = raw.call("HRANDFIELD", "t", str(n), "WITHVALUES")
        fields = flat[::2]
        assert len(fields) == min(n, 100) and len(set(fields)) == len(fields)
        assert all(f[1:] == v[1:] for f, v in zip(flat[::2], flat[1::2]))
    assert len(raw.call("HRANDFIELD", "t", "-300")) == 300


def scan_all(r, key, **kw):
    cursor, seen, calls = 0, {}, 0
    while True:
        cursor, batch = r.hscan(key, cursor, **kw)
        calls += 1
        seen.update(batch)
        if cursor == 0:
            return seen, calls


def test_hscan_small_hash_in_one_call(r):
    r.hset("h", mapping={"a": "1", "b": "2", "k1": "3"})
    assert r.hscan("h", 0, count=1) == (0, {b"a": b"1", b"b": b"2", b"k1": b"3"})
    assert r.hscan("h", 0, match="k*") == (0, {b"k1": b"3"})
    assert r.hscan("none", 0) == (0, {})


def test_hscan_large_hash(r, limits):
    r.config_set("hash-max-listpack-entries", 16)
    r.hset("t", mapping={f"f{i}": f"v{i}" for i in range(1000)})
    assert encoding(r, "t") == "hashtable"
    seen, calls = scan_all(r, "t")
    assert len(seen) == 1000 and calls > 20
    assert all(f[1:] == v[1:] for f, v in seen.items())
    some, _ = scan_all(r, "t", match="f1*", count=100)
    assert len(some) == 111


def test_hscan_survives_writes(r, limits):
    r.config_set("hash-max-listpack-entries", 16)
    r.hset("t", mapping={f"stay{i}": "v" for i in range(500)})
    cursor, seen, step = 0, set(), 0
    while True:
        cursor, batch = r.hscan("t", cursor, count=7)
        seen.update(batch)
        step += 1
        r.hset("t", mapping={f"new{step}-{j}": "v" for j in range(5)})
        r.hdel("t", *[f"new{step - 1}-{j}" for j in range(3)])
        if cursor == 0:
            break
    assert {f"stay{i}".encode() for i in range(500)} <= seen


def test_hscan_errors_and_shape(rawp, protocol):
    rawp.call("HSET", "h", "a", "1")
    f = rawp.call_frame("HSCAN", "h", "0")
    assert f.kind == "*" and f.value[0].value == b"0"
    assert f.value[1].kind == "*" and [x.value for x in f.value[1].value] == [b"a", b"1"]
    assert rawp.call("HSCAN", "h", "x") == Err("ERR invalid cursor")
    assert rawp.call("HSCAN", "h", "0", "COUNT", "0") == SYNTAX
    assert rawp.call("HSCAN", "h", "0", "COUNT", "x") == NOT_INT
    assert rawp.call("HSCAN", "h", "0", "COUNT") == SYNTAX
    assert rawp.call("HSCAN", "h", "0", "TYPE", "hash") == SYNTAX
    assert rawp.call("HSCAN", "h", "0", "BOGUS", "1") == SYNTAX
    # A missing key answers before the options are parsed.
    assert rawp.call("HSCAN", "none", "0", "COUNT", "0") == [b"0", []]
    rawp.call("SET", "s", "v")
    assert rawp.call("HSCAN", "s", "0") == WRONGTYPE
    assert rawp.call("HSCAN", "s", "x") == Err("ERR invalid cursor")
    assert rawp.call("HSCAN", "s", "0", "COUNT", "0") == WRONGTYPE


def events(server, r, commands):
    """The key-event notifications `commands` raise, as (event, key) in order, up to a SET of
    a marker key sent after them."""
    r.set("end-marker", "x")
    r.config_set("notify-keyspace-events", "KEAn")
    sub = server.raw()
    sub.send_command("PSUBSCRIBE", "__keyevent@0__:*")
    sub.read_reply()
    for argv in commands:
        try:
            r.execute_command(*argv)
        except redis.ResponseError:
            pass
    r.set("end-marker", "x")
    got = []
    while True:
        msg = sub.read_reply()
        event = (msg[2].decode().split(":", 1)[1], msg[3].decode())
        if event == ("set", "end-marker"):
            return got
        got.append(event)


@pytest.mark.parametrize("setup,command,want", [
    ([], ["HSET", "h", "a", "1"], [("new", "h"), ("hset", "h")]),
    ([["HSET", "h", "a", "1"]], ["HMSET", "h", "a", "2", "b", "3"], [("hset", "h")]),
    ([["HSET", "h", "a", "1"]], ["HSETNX", "h", "a", "2"], []),
    ([["HSET", "h", "a", "1"]], ["HSETNX", "h", "b", "2"], [("hset", "h")]),
    ([], ["HSETNX", "h", "b", "2"], [("new", "h"), ("hset", "h")]),
    ([["HSET", "h", "a", "1"]], ["HINCRBY", "h", "a", "2"], [("hincrby", "h")]),
    ([], ["HINCRBY", "h", "a", "2"], [("new", "h"), ("hincrby", "h")]),
    ([["HSET", "h", "a", "1"]], ["HINCRBYFLOAT", "h", "a", "2.5"], [("hincrbyfloat", "h")]),
    ([["HSET", "h", "a", "1", "b", "2"]], ["HDEL", "h", "zz"], []),
    ([["HSET", "h", "a", "1", "b", "2"]], ["HDEL", "h", "a"], [("hdel", "h")]),
    ([["HSET", "h", "a", "1", "b", "2"]], ["HDEL", "h", "a", "b"], [("hdel", "h"), ("del", "h")]),
    ([["HSET", "h", "a", "1"]], ["HGETALL", "h"], []),
])
def test_keyspace_events(server, r2, limits, setup, command, want):
    for argv in setup:
        r2.execute_command(*argv)
    assert events(server, r2, [command]) == want


def test_keyspace_events_of_failed_writes(server, r2, limits):
    r2.hset("h", "s", "abc")
    got = events(server, r2, [["HINCRBY", "h", "s", "1"], ["HINCRBYFLOAT", "h", "s", "1"],
                              ["HINCRBY", "h", "n", "x"], ["HSET", "h", "a"]])
    assert got == []
