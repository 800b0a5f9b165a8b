"""HyperLogLog commands: PFADD PFCOUNT PFMERGE.

The values are Redis's own strings, so their bytes are compared with what redis-server 7.0.15
holds after the same commands (recorded below), and a value made by one server counts the same
on the other. Every expectation holds for Redis 7.0.
"""

import time

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_HLL = Err("WRONGTYPE Key is not a valid HyperLogLog string value.")
CORRUPT = Err("INVALIDOBJ Corrupted HLL object detected")

# GET after `PFADD k a b c` and after `PFADD k e0 .. e9` in Redis 7.0.15 (cache stale).
ABC = bytes.fromhex("48594c4c01000000000000000000008060f38050b1844bfb80425a")
E10 = bytes.fromhex("48594c4c010000000000000000000080452580472e844fc9804412844a5184430d84410384"
                    "4eb98440888040 6a8441b1".replace(" ", ""))
EMPTY = bytes.fromhex("48594c4c0100000000000000000000807fff")


def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h


def add_many(r, key, elements, batch=1000):
    for i in range(0, len(elements), batch):
        r.pfadd(key, *elements[i:i + batch])


@pytest.fixture
def sparse_limit(server):
    yield
    server.admin().call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def test_pfadd_pfcount(r):
    assert r.pfadd("h", "a", "b", "c") == 1
    assert r.get("h") == ABC
    assert r.pfadd("h", "a", "b") == 0
    assert r.execute_command("PFADD", "h") == 0
    assert r.pfcount("h") == 3
    # The count is cached in the header (little endian, top bit clear).
    assert r.get("h")[8:16] == bytes([3, 0, 0, 0, 0, 0, 0, 0])
    assert r.pfadd("h", "d") == 1
    assert r.get("h")[15] & 0x80
    assert r.pfcount("h") == 4
    assert r.execute_command("PFADD", "new") == 1
    assert r.get("new") == EMPTY
    assert r.pfcount("new") == 0
    assert r.pfcount("nokey") == 0
    assert r.exists("nokey") == 0
    assert r.type("h") in (b"string", "string")


def test_same_bytes_as_redis(r):
    add_many(r, "e10", [f"e{i}" for i in range(10)])
    assert r.get("e10") == E10
    add_many(r, "e300", [f"e{i}" for i in range(300)])
    v = r.get("e300")
    assert (len(v), v[4], fnv(v)) == (713, 1, 0xa4cfffba965d1718)
    assert r.pfcount("e300") == 302
    assert fnv(r.get("e300")) == 0xc7b1bd47db913d5b
    add_many(r, "e2000", [f"e{i}" for i in range(2000)])
    v = r.get("e2000")
    assert (len(v), v[4], fnv(v)) == (12304, 0, 0x1b5576fa1f6b8092)
    assert r.pfcount("e2000") == 2000
    assert r.pfcount("e300", "e2000", "e10") == 2000
    assert r.pfmerge("m", "e300", "e10") is True
    assert r.pfcount("m") == 302


def test_values_move_between_servers(r):
    # A value Redis wrote (stale cache) counts here; one larder writes equals Redis's.
    r.set("copy", E10)
    assert r.pfcount("copy") == 10
    assert r.pfadd("copy", "e5") == 0
    assert r.pfadd("copy", "zzz") == 1
    assert r.pfcount("copy") == 11


@pytest.mark.parametrize("n", [1000, 10000, 100000])
def test_error_bounds(r, n):
    add_many(r, "h", [f"element:{i}" for i in range(n)], batch=5000)
    got = r.pfcount("h")
    assert abs(got - n) / n <= 3 * 0.0081, got


def test_union_and_merge(r):
    r.pfadd("a", "1", "2", "3")
    r.pfadd("b", "3", "4", "5")
    assert r.pfcount("a", "b", "nokey") == 5
    assert r.pfcount("a") == 3
    assert r.pfmerge("m", "a", "b") is True
    assert r.pfcount("m") == 5
    # The destination is one of the sources.
    r.pfadd("c", "x")
    assert r.pfmerge("c", "a") is True
    assert r.pfcount("c") == 4
    assert r.execute_command("PFMERGE", "empty") in (b"OK", "OK", True)
    assert r.get("empty") == EMPTY
    assert r.pfcount("empty") == 0


def test_sparse_turns_dense(r, sparse_limit):
    r.config_set("hll-sparse-max-bytes", 100)
    n = 0
    while r.get("h") is None or r.get("h")[4] == 1:
        r.pfadd("h", f"x{n}")
        n += 1
        assert n < 200
    assert r.strlen("h") == 12304
    assert r.pfcount("h") == n
    r.pfadd("s", "a")
    assert r.strlen("s") < 100
    r.pfmerge("s", "h")
    assert r.strlen("s") == 12304
    assert r.pfcount("s") == n + 1 or r.pfcount("s") == n


def test_errors(raw):
    raw.call("SET", "s", "not an hll at all, sorry")
    raw.call("SET", "short", "HYLL")
    raw.call("RPUSH", "l", "a")
    raw.call("PFADD", "ok", "a")
    dense_wrong_len = b"HYLL" + b"\x00" * 96
    raw.call("SET", "d", dense_wrong_len)
    bad_encoding = b"HYLL\x02" + EMPTY[5:]
    raw.call("SET", "enc", bad_encoding)
    for args, want in [
        (("PFADD", "s", "a"), NOT_HLL),
        (("PFADD", "short", "a"), NOT_HLL),
        (("PFCOUNT", "s"), NOT_HLL),
        (("PFCOUNT", "d"), NOT_HLL),
        (("PFCOUNT", "enc"), NOT_HLL),
        (("PFCOUNT", "ok", "s"), NOT_HLL),
        (("PFMERGE", "ok", "s"), NOT_HLL),
        (("PFMERGE", "s", "ok"), NOT_HLL),
        (("PFADD", "l", "a"), WRONGTYPE),
        (("PFCOUNT", "l"), WRONGTYPE),
        (("PFCOUNT", "ok", "l"), WRONGTYPE),
        (("PFMERGE", "ok", "l"), WRONGTYPE),
        (("PFADD",), Err("ERR wrong number of arguments for 'pfadd' command")),
        (("PFCOUNT",), Err("ERR wrong number of arguments for 'pfcount' command")),
        (("PFMERGE",), Err("ERR wrong number of arguments for 'pfmerge' command")),
    ]:
        assert raw.call(*args) == want, args
    # A sparse value whose runs cover too few registers.
    bad = bytearray(EMPTY)
    bad[17] = 0
    raw.call("SET", "bad", bytes(bad))
    assert raw.call("PFCOUNT", "bad") == CORRUPT
    assert raw.call("PFCOUNT", "bad", "ok") == CORRUPT
    assert raw.call("PFMERGE", "x", "bad") == CORRUPT
    assert raw.call("EXISTS", "x") == 0


@pytest.fixture
def events(server):
    admin = server.admin()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "KEAn")
    sub = server.raw()
    sub.call("PSUBSCRIBE", "__keyevent@*__:*")

    def take():
        admin.call("PING")
        got = []
        sub.buf += sub.read_until_idle(idle=0.2, total=2.0)
        while sub.buf:
            msg = sub.read_reply()
            got.append((msg[2].decode().split(":", 1)[1], msg[3].decode()))
        return got

    yield take
    admin.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_keyspace_events(server, events):
    c = server.raw()
    events()
    for args, want in [
        (("PFADD", "h", "a"), [("new", "h"), ("pfadd", "h")]),
        (("PFADD", "h", "a"), []),
        (("PFADD", "h", "b"), [("pfadd", "h")]),
        (("PFCOUNT", "h"), []),
        (("PFMERGE", "m", "h"), [("new", "m"), ("pfadd", "m")]),
        (("PFMERGE", "m", "h"), [("pfadd", "m")]),
        (("PFCOUNT", "h", "m"), []),
    ]:
        c.call(*args)
        assert events() == want, args


def test_pfcount_cache_write_invalidates_watch(server, r):
    r.pfadd("h", "a")
    w = server.client(protocol=2)
    p = w.pipeline(transaction=True)
    p.watch("h")
    r.pfcount("h")  # computes and stores the cache: a write
    p.multi()
    p.set("h2", "x")
    with pytest.raises(Exception):
        p.execute()
    # With the cache valid, PFCOUNT is a pure read.
    p = w.pipeline(transaction=True)
    p.watch("h")
    r.pfcount("h")
    p.multi()
    p.set("h2", "y")
    assert p.execute() == [True]


def test_pfcount_may_write_so_read_only_scripts_and_write_pauses_refuse_it(server, r, raw):
    # Redis flags PFCOUNT may-replicate: its cache is part of the value.
    r.pfadd("h", "a", "b")
    reply = raw.call("EVAL_RO", "return redis.call('PFCOUNT', KEYS[1])", "1", "h")
    assert isinstance(reply, Err)
    assert str(reply).startswith("ERR Write commands are not allowed from read-only scripts.")
    assert r.execute_command("CLIENT", "PAUSE", "300", "WRITE")
    t0 = time.monotonic()
    assert r.pfcount("h") == 2  # waits for the pause to end
    assert time.monotonic() - t0 >= 0.2
    assert r.pfcount("h") == 2


def test_pfdebug(raw):
    raw.call("PFADD", "h", "a", "b", "c")
    assert raw.call("PFDEBUG", "ENCODING", "h") == "sparse"
    assert raw.call("PFDEBUG", "DECODE", "h") == b"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    regs = raw.call("PFDEBUG", "GETREG", "h")
    assert len(regs) == 16384 and sorted(regs)[-3:] == [1, 1, 2]
    assert raw.call("PFDEBUG", "ENCODING", "h") == "dense"
    assert raw.call("STRLEN", "h") == 12304
    assert raw.call("PFDEBUG", "TODENSE", "h") == 0
    assert raw.call("PFDEBUG", "DECODE", "h") == Err("ERR HLL encoding is not sparse")
    assert raw.call("PFCOUNT", "h") == 3
    raw.call("PFADD", "g", "x")
    assert raw.call("PFDEBUG", "TODENSE", "g") == 1
    assert raw.call("PFDEBUG", "FOO", "g") == Err("ERR Unknown PFDEBUG subcommand 'FOO'")
    assert raw.call("PFDEBUG", "FOO", "nokey") == Err("ERR The specified key does not exist")
    raw.call("SET", "s", "x")
    assert raw.call("PFDEBUG", "ENCODING", "s") == NOT_HLL
    assert raw.call("PFDEBUG", "ENCODING") == \
        Err("ERR wrong number of arguments for 'pfdebug' command")


def test_pfselftest(raw):
    assert raw.call("PFSELFTEST") == "OK"
