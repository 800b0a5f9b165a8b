"""Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.

Tests taking `r` run over RESP2 and RESP3; error texts and null encodings are checked on raw
sockets; keyspace events through a pattern subscriber. Every expectation holds for Redis 7.0.
"""

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
OFFSET = Err("ERR bit offset is not an integer or out of range")
BIT_VALUE = Err("ERR bit is not an integer or out of range")
BAD_TYPE = Err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not "
               "supported but i64 is.")


def arity(name):
    return Err(f"ERR wrong number of arguments for '{name}' command")


def test_setbit_getbit(r):
    assert r.setbit("b", 7, 1) == 0
    assert r.setbit("b", 7, 1) == 1
    assert r.setbit("b", 100, 0) == 0
    assert r.strlen("b") == 13
    assert r.getbit("b", 7) == 1
    assert r.getbit("b", 6) == 0
    assert r.getbit("b", 10**6) == 0
    assert r.getbit("nokey", 0) == 0
    assert r.get("b") == b"\x01" + b"\x00" * 12
    assert r.type("b") in (b"string", "string")
    assert r.object("encoding", "b") in (b"raw", "raw")


def test_bits_of_plain_strings(r):
    r.set("s", "A", ex=100)
    assert [r.getbit("s", i) for i in range(8)] == [0, 1, 0, 0, 0, 0, 0, 1]
    assert r.setbit("s", 6, 1) == 0
    assert r.get("s") == b"C"
    assert r.ttl("s") == 100
    r.set("n", 12)
    assert r.getbit("n", 2) == 1
    assert r.bitcount("n") == 6


def test_setbit_getbit_errors(raw):
    raw.call("SET", "b", "x")
    for args, want in [
        (("SETBIT", "b", "-1", "1"), OFFSET),
        (("SETBIT", "b", "4294967296", "1"), OFFSET),
        (("SETBIT", "b", "1.5", "1"), OFFSET),
        (("SETBIT", "b", "0", "2"), BIT_VALUE),
        (("SETBIT", "b", "0", "-1"), BIT_VALUE),
        (("SETBIT", "b", "0", "x"), BIT_VALUE),
        (("GETBIT", "b", "x"), OFFSET),
        (("GETBIT", "nokey", "-1"), OFFSET),
        (("SETBIT", "b", "0"), arity("setbit")),
        (("GETBIT", "b"), arity("getbit")),
        (("GETBIT", "b", "0", "1"), arity("getbit")),
    ]:
        assert raw.call(*args) == want, args
    raw.call("RPUSH", "l", "a")
    assert raw.call("SETBIT", "l", "0", "1") == WRONGTYPE
    assert raw.call("GETBIT", "l", "0") == WRONGTYPE
    assert raw.call("GET", "b") == b"x"


def test_setbit_large_offset(r):
    assert r.setbit("big", 8 * 1024 * 1024 - 1, 1) == 0
    assert r.strlen("big") == 1024 * 1024
    assert r.bitcount("big") == 1
    assert r.bitpos("big", 1) == 8 * 1024 * 1024 - 1


@pytest.mark.parametrize("args,expected", [
    ((), 26), ((0, 0), 4), ((1, 1), 6), ((1, 1, "BIT"), 1), ((5, 30, "bit"), 17),
    ((0, -1, "byte"), 26), ((-2, -1), 7), ((-1, -2, "foo"), 0), ((100, 200), 0),
    ((-100, 100), 26), ((0, -100), 4), ((-9223372036854775808, 9223372036854775807), 26),
    ((47, 47, "BIT"), 0), ((46, 47, "BIT"), 1), ((-3, -1, "BIT"), 1), ((3, 2, "BIT"), 0),
])
def test_bitcount_ranges(r, args, expected):
    r.set("f", "foobar")
    assert r.execute_command("BITCOUNT", "f", *args) == expected


def test_bitcount_errors(raw):
    raw.call("SET", "f", "foobar")
    raw.call("RPUSH", "l", "a")
    for args, want in [
        (("BITCOUNT", "f", "0"), SYNTAX),
        (("BITCOUNT", "f", "0", "1", "2", "3"), SYNTAX),
        (("BITCOUNT", "f", "0", "-1", "foo"), SYNTAX),
        (("BITCOUNT", "f", "a", "b"), NOT_INT),
        (("BITCOUNT", "f", "0", "x", "BIT"), NOT_INT),
        (("BITCOUNT", "nokey", "a"), 0),
        (("BITCOUNT", "nokey", "0", "1", "2", "3"), 0),
        (("BITCOUNT", "l"), WRONGTYPE),
        (("BITCOUNT", "l", "a"), WRONGTYPE),
        (("BITCOUNT",), arity("bitcount")),
    ]:
        assert raw.call(*args) == want, args


@pytest.mark.parametrize("value,args,expected", [
    (b"\xff\xf0\x00", (0,), 12),
    (b"\x00\xff\xf0", (1, 0), 8),
    (b"\x00\xff\xf0", (1, 2), 16),
    (b"\x00\xff\xf0", (1, 2, -1, "BYTE"), 16),
    (b"\x00\xff\xf0", (1, 7, 15, "BIT"), 8),
    (b"\x00\xff\xf0", (1, 7, -3, "bit"), 8),
    (b"\x00\xff\xf0", (0, 9, -1, "BIT"), 20),
    (b"\x00\xff\xf0", (0, 8, 11, "BIT"), -1),
    (b"\x00\xff\xf0", (1, 17, 17, "BIT"), 17),
    (b"\x00\xff\xf0", (1, -1, -100), -1),
    (b"\xff\xff", (0,), 16),
    (b"\xff\xff", (0, 0), 16),
    (b"\xff\xff", (0, 1, 1), -1),
    (b"\xff\xff", (0, 0, -1), -1),
    (b"\xff\xff", (0, 3, 100, "BIT"), -1),
    (b"\x00\x00", (1,), -1),
    (b"\x00\x00", (0, 5, 9, "BIT"), 5),
    (b"", (0,), -1),
    (b"", (1,), -1),
    (b"\x00" * 40 + b"\x01", (1,), 327),
    (b"\xff" * 40 + b"\xfe", (0, 3), 327),
])
def test_bitpos(r, value, args, expected):
    r.set("p", value)
    assert r.execute_command("BITPOS", "p", *args) == expected


def test_bitpos_missing_key_and_errors(raw):
    raw.call("SET", "p", "abc")
    raw.call("RPUSH", "l", "a")
    for args, want in [
        (("BITPOS", "nokey", "0"), 0),
        (("BITPOS", "nokey", "1"), -1),
        (("BITPOS", "nokey", "1", "a", "b", "c", "d"), -1),
        (("BITPOS", "p", "2"), Err("ERR The bit argument must be 1 or 0.")),
        (("BITPOS", "nokey", "2"), Err("ERR The bit argument must be 1 or 0.")),
        (("BITPOS", "p", "x"), NOT_INT),
        (("BITPOS", "p", "1", "x"), NOT_INT),
        (("BITPOS", "p", "1", "0", "x"), NOT_INT),
        (("BITPOS", "p", "1", "0", "-1", "foo"), SYNTAX),
        (("BITPOS", "p", "1", "0", "x", "foo"), SYNTAX),
        (("BITPOS", "p", "1", "0", "x", "bit"), NOT_INT),
        (("BITPOS", "p", "0", "0", "1", "2", "3"), SYNTAX),
        (("BITPOS", "l", "1"), WRONGTYPE),
        (("BITPOS", "p"), arity("bitpos")),
    ]:
        assert raw.call(*args) == want, args


def test_bitop(r):
    r.set("a", "foobar")
    r.set("b", "abcdef")
    r.set("c", "xy")
    assert r.bitop("AND", "d", "a", "b") == 6
    assert r.get("d") == b"`bc`ab"
    assert r.bitop("OR", "d", "a", "c") == 6
    assert r.get("d") == b"~\x7fobar"
    assert r.bitop("XOR", "d", "a", "c") == 6
    assert r.get("d") == bytes(x ^ y for x, y in zip(b"foobar", b"xy\0\0\0\0"))
    assert r.bitop("AND", "d", "a", "c", "nokey") == 6
    assert r.get("d") == b"\x00" * 6
    assert r.bitop("NOT", "d", "c") == 2
    assert r.get("d") == bytes([0xff ^ ord("x"), 0xff ^ ord("y")])
    assert r.execute_command("BITOP", "or", "d", "a") == 6
    assert r.get("d") == b"foobar"


def test_bitop_long_operands(r):
    a = bytes(range(256)) * 3
    b = bytes(reversed(range(256))) * 2 + b"\x55" * 7
    r.set("a", a)
    r.set("b", b)
    for op, f in [("AND", lambda x, y: x & y), ("OR", lambda x, y: x | y),
                  ("XOR", lambda x, y: x ^ y)]:
        n = max(len(a), len(b))
        want = bytes(f(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
        assert r.bitop(op, "d", "a", "b") == n
        assert r.get("d") == want, op


def test_bitop_destination(r):
    r.set("c", "xy")
    r.set("d", "old", ex=100)
    assert r.bitop("OR", "d", "d", "c") == 3
    assert r.get("d") == bytes([ord("o") | ord("x"), ord("l") | ord("y"), ord("d")])
    assert r.ttl("d") == -1
    r.rpush("l", "x")
    assert r.bitop("AND", "l", "c") == 2
    assert r.type("l") in (b"string", "string")
    # An empty result deletes the destination.
    assert r.bitop("NOT", "d", "nokey") == 0
    assert r.exists("d") == 0
    r.set("e", "")
    assert r.bitop("OR", "c", "e", "nokey") == 0
    assert r.exists("c") == 0


def test_bitop_errors(raw):
    raw.call("SET", "a", "x")
    raw.call("RPUSH", "l", "a")
    for args, want in [
        (("BITOP", "AND", "d", "a", "l"), WRONGTYPE),
        (("BITOP", "NOT", "d", "a", "a"), Err("ERR BITOP NOT must be called with a single "
                                              "source key.")),
        (("BITOP", "FOO", "d", "a"), SYNTAX),
        (("BITOP", "AND", "d"), arity("bitop")),
    ]:
        assert raw.call(*args) == want, args
    assert raw.call("EXISTS", "d") == 0


def test_bitfield_set_get(r):
    assert r.execute_command("BITFIELD", "bf", "SET", "u5", "7", "23") == [0]
    assert r.get("bf") == b"\x01\x70"
    assert r.execute_command("BITFIELD", "bf", "GET", "u5", "7", "GET", "i5", "7",
                             "GET", "u4", "#1", "GET", "i64", "0") == \
        [23, -9, 1, 0x0170 << 48]
    assert r.execute_command("BITFIELD", "bf", "SET", "i8", "#1", "-100",
                             "GET", "u8", "8") == [112, 156]
    assert r.execute_command("BITFIELD", "bf") == []
    assert r.execute_command("BITFIELD_RO", "bf", "GET", "u8", "0",
                             "GET", "u63", "1") == [1, 115967690404790272]
    assert r.execute_command("BITFIELD_RO", "nokey", "GET", "i64", "0") == [0]
    assert r.exists("nokey") == 0


def test_bitfield_overflow(r):
    got = r.execute_command(
        "BITFIELD", "c", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102",
        "5", "OVERFLOW", "FAIL", "INCRBY", "u2", "104", "7", "OVERFLOW", "WRAP", "INCRBY",
        "u2", "106", "5", "GET", "u8", "100")
    assert got == [1, 3, None, 1, 113]
    wrap = [r.execute_command("BITFIELD", "w", "INCRBY", "i8", "0", "100")[0]
            for _ in range(3)]
    assert wrap == [100, -56, 44]
    sat = [r.execute_command("BITFIELD", "s", "OVERFLOW", "SAT", "INCRBY", "i8", "0",
                             "-100")[0] for _ in range(3)]
    assert sat == [-100, -128, -128]
    assert r.execute_command("BITFIELD", "u", "OVERFLOW", "SAT", "SET", "u8", "0", "-1",
                             "OVERFLOW", "WRAP", "SET", "u8", "8", "300",
                             "OVERFLOW", "FAIL", "SET", "u8", "16", "256",
                             "GET", "u24", "0") == [0, 0, None, 0xff2c00]
    big = r.execute_command("BITFIELD", "i", "SET", "i64", "0", "9223372036854775807",
                            "INCRBY", "i64", "0", "1",
                            "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1",
                            "OVERFLOW", "FAIL", "INCRBY", "i64", "0", "-1")
    assert big == [0, -9223372036854775808, -9223372036854775808, None]


def test_bitfield_fail_on_missing_key_creates_zeroes(r):
    got = r.execute_command("BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u1", "0", "2")
    assert got == [None]
    assert r.get("k") == b"\x00"


def test_bitfield_null_on_the_wire(rawp, protocol):
    f = rawp.call_frame("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u1", "0", "2",
                        "GET", "u1", "0")
    assert f.kind == "*"
    assert [x.kind for x in f.value] == ["_" if protocol == 3 else "$", ":"]
    assert f.value[0].value is None


def test_bitfield_errors(raw):
    raw.call("SET", "bf", "x")
    raw.call("RPUSH", "l", "a")
    ro_only = Err("ERR BITFIELD_RO only supports the GET subcommand")
    for args, want in [
        (("BITFIELD", "bf", "GET", "u64", "0"), BAD_TYPE),
        (("BITFIELD", "bf", "GET", "i65", "0"), BAD_TYPE),
        (("BITFIELD", "bf", "GET", "i0", "0"), BAD_TYPE),
        (("BITFIELD", "bf", "GET", "x8", "0"), BAD_TYPE),
        (("BITFIELD", "bf", "GET", "u08", "0"), BAD_TYPE),
        (("BITFIELD", "bf", "GET", "u8", "#x"), OFFSET),
        (("BITFIELD", "bf", "GET", "u8", "-1"), OFFSET),
        (("BITFIELD", "bf", "GET", "u8", "#-1"), OFFSET),
        (("BITFIELD", "bf", "GET", "u8", "4294967296"), OFFSET),
        (("BITFIELD", "bf", "GET", "u8", "#536870912"), OFFSET),
        (("BITFIELD", "bf", "GET", "u8", "4294967295"), [0]),
        (("BITFIELD", "bf", "OVERFLOW", "foo", "GET", "u8", "0"),
         Err("ERR Invalid OVERFLOW type specified")),
        (("BITFIELD", "bf", "bad"), SYNTAX),
        (("BITFIELD", "bf", "GET", "u8"), SYNTAX),
        (("BITFIELD", "bf", "OVERFLOW"), SYNTAX),
        (("BITFIELD", "bf", "SET", "u8", "0"), SYNTAX),
        (("BITFIELD", "bf", "INCRBY", "u8", "0", "x"), NOT_INT),
        (("BITFIELD_RO", "bf", "SET", "u8", "0", "1"), ro_only),
        (("BITFIELD_RO", "bf", "GET", "u8", "0", "INCRBY", "u8", "0", "1"), ro_only),
        (("BITFIELD", "l", "GET", "u8", "0"), WRONGTYPE),
        (("BITFIELD", "l", "SET", "u8", "0", "1"), WRONGTYPE),
        (("BITFIELD_RO", "l", "GET", "u8", "0"), WRONGTYPE),
        (("BITFIELD", "l", "GET", "u99", "0"), BAD_TYPE),
        (("BITFIELD",), arity("bitfield")),
        (("BITFIELD_RO",), arity("bitfield_ro")),
    ]:
        assert raw.call(*args) == want, args
    assert raw.call("GET", "bf") == b"x"


@pytest.fixture
def events(server):
    """A subscriber to every keyevent notification; yields a function that returns the
    (event, key) pairs received since the last call."""
    admin = server.admin()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "KEAn")
    sub = server.raw()
    sub.call("PSUBSCRIBE", "__keyevent@*__:*")

    def take():
        admin.call("PING")  # a round trip: earlier commands' events were sent before it
        got = []
        data = sub.read_until_idle(idle=0.2, total=2.0)
        sub.buf += data
        while sub.buf:
            msg = sub.read_reply()
            got.append((msg[2].decode().split(":", 1)[1], msg[3].decode()))
        return got

    yield take
    admin.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_keyspace_events(server, events):
    c = server.raw()
    cases = [
        (("SETBIT", "b", "3", "0"), [("new", "b"), ("setbit", "b")]),
        (("SETBIT", "b", "3", "0"), []),
        (("SETBIT", "b", "30", "0"), [("setbit", "b")]),
        (("SETBIT", "b", "3", "1"), [("setbit", "b")]),
        (("BITFIELD", "b", "SET", "u1", "3", "1"), []),
        (("BITFIELD", "b", "GET", "u1", "3"), []),
        (("BITFIELD", "b", "SET", "u1", "4", "1", "SET", "u1", "5", "1"), [("setbit", "b")]),
        (("BITFIELD", "n", "SET", "u1", "4", "0"), [("new", "n"), ("setbit", "n")]),
        (("BITFIELD", "m", "OVERFLOW", "FAIL", "INCRBY", "u1", "0", "2"), [("new", "m")]),
        (("BITOP", "OR", "d", "b"), [("new", "d"), ("set", "d")]),
        (("BITOP", "AND", "d", "b", "n"), [("set", "d")]),
        (("BITOP", "AND", "d", "nokey"), [("del", "d")]),
        (("BITOP", "AND", "d", "nokey"), []),
        (("GETBIT", "b", "3"), []),
        (("BITCOUNT", "b"), []),
    ]
    events()
    for args, want in cases:
        c.call(*args)
        assert events() == want, args
