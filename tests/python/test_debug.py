"""DEBUG: the subset Redis's own tests and replay checks use (DIGEST, DIGEST-VALUE, OBJECT,
SLEEP, SET-ACTIVE-EXPIRE, POPULATE, PROTOCOL, LOG, HELP, RELOAD's options), behind
`enable-debug-command`.

The digests must be redis-server's for the same data: `test_digest_matches_redis_server`
loads one data set (every type, compact and full encodings, keys with and without absolute
deadlines, several databases) into the server under test and into a redis-server the test
starts, and compares every digest. DEBUG OBJECT's encoding and serialized length are compared
the same way.
"""

from __future__ import annotations

import random
import re
import threading
import time
from typing import Any, Iterator

import pytest

from conftest import Err, Server, ServerFactory, wait_until

ZEROS = "0" * 40
NOT_ALLOWED = Err(
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
# An absolute deadline far in the future: Redis mixes whether a key expires into its digest.
FAR_MS = 4_102_444_800_000  # 2100-01-01


@pytest.fixture(scope="module")
def debug_server(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server started with `--enable-debug-command yes`, shared by the module."""
    factory = ServerFactory(target, tmp_path_factory.mktemp("debug"))
    srv = factory("--enable-debug-command", "yes")
    yield srv
    if srv.alive():
        srv.stop()
    factory.shutdown_all()


@pytest.fixture
def dbg(debug_server: Server) -> Iterator[Server]:
    with debug_server.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
        assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == "OK"
    yield debug_server
    debug_server.close_clients()


@pytest.fixture
def d(dbg: Server, protocol: int) -> Any:
    """A client of the debug-enabled server, once per protocol, with str replies."""
    return dbg.client(protocol=protocol, decode_responses=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real redis-server with DEBUG enabled, whatever the target: the digests' oracle."""
    factory = ServerFactory("redis", tmp_path_factory.mktemp("reference"))
    srv = factory("--enable-debug-command", "yes")
    yield srv
    factory.shutdown_all()


# --- the gate ----------------------------------------------------------------------------------


def test_refused_by_default_with_redis_text(server: Server) -> None:
    with server.raw() as c:
        assert c.call("DEBUG", "SLEEP", "0") == NOT_ALLOWED
        assert c.call("DEBUG", "DIGEST") == NOT_ALLOWED
        assert c.call("DEBUG", "nosuch") == NOT_ALLOWED
        assert c.call("DEBUG") == Err("ERR wrong number of arguments for 'debug' command")
        assert c.call("CONFIG", "GET", "enable-debug-command") == [
            b"enable-debug-command", b"no"]
        assert c.call("CONFIG", "SET", "enable-debug-command", "yes") == Err(
            "ERR CONFIG SET failed (possibly related to argument 'enable-debug-command') - "
            "can't set immutable config")
        # Refused when queued, so EXEC aborts.
        assert c.call("MULTI") == "OK"
        assert c.call("DEBUG", "DIGEST") == NOT_ALLOWED
        assert c.call("EXEC") == Err(
            "EXECABORT Transaction discarded because of previous errors.")


def test_refused_before_authentication(start_server: ServerFactory) -> None:
    srv = start_server("--requirepass", "pw")
    with srv.raw() as c:
        assert c.call("DEBUG", "DIGEST") == NOT_ALLOWED
    srv = start_server("--requirepass", "pw", "--enable-debug-command", "yes")
    with srv.raw() as c:
        assert c.call("DEBUG", "DIGEST") == Err("NOAUTH Authentication required.")
        assert c.call("AUTH", "pw") == "OK"
        assert c.call("DEBUG", "DIGEST") == ZEROS


def test_local_allows_loopback_clients(start_server: ServerFactory) -> None:
    srv = start_server("--enable-debug-command", "local")
    with srv.raw() as c:
        assert c.call("CONFIG", "GET", "enable-debug-command") == [
            b"enable-debug-command", b"local"]
        assert c.call("DEBUG", "SLEEP", "0") == "OK"


def test_enabled_from_config_file(start_server: ServerFactory) -> None:
    srv = start_server(config_text="enable-debug-command yes\n")
    with srv.raw() as c:
        assert c.call("CONFIG", "GET", "enable-debug-command") == [
            b"enable-debug-command", b"yes"]
        assert c.call("DEBUG", "DIGEST") == ZEROS


def test_bad_value_fails_startup(start_server: ServerFactory) -> None:
    code, _out = start_server.spawn("--enable-debug-command", "maybe")
    assert code != 0


def test_command_info(server: Server) -> None:
    with server.raw() as c:
        info = c.call("COMMAND", "INFO", "debug")[0]
    assert info[:6] == [b"debug", -2, ["admin", "noscript", "loading", "stale"], 0, 0, 0]
    assert info[6] == ["@admin", "@slow", "@dangerous"]


# --- subcommands -------------------------------------------------------------------------------


def test_help_and_unknown_subcommands(d: Any) -> None:
    lines = d.execute_command("DEBUG", "HELP")
    assert lines[0] == "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    for name in ("DIGEST", "DIGEST-VALUE <key> [<key> ...]", "OBJECT <key>", "SLEEP <seconds>",
                 "SET-ACTIVE-EXPIRE <0|1>", "RELOAD [option ...]", "LOADAOF"):
        assert name in lines, name
    assert lines[-1] == "    Prints this help."
    for args in (["nosuch"], ["sleep"], ["object"], ["digest", "x"], ["set-active-expire"],
                 ["object", "a", "b"]):
        with pytest.raises(Exception) as e:
            d.execute_command("DEBUG", *args)
        assert str(e.value) == (
            f"unknown subcommand or wrong number of arguments for '{args[0]}'. "
            "Try DEBUG HELP.")


def test_digest_of_empty_dataset_and_missing_keys(d: Any) -> None:
    assert d.execute_command("DEBUG", "DIGEST") == ZEROS
    assert d.execute_command("DEBUG", "DIGEST-VALUE") == []
    assert d.execute_command("DEBUG", "DIGEST-VALUE", "nope", "nada") == [ZEROS, ZEROS]
    d.set("k", "v")
    digest = d.execute_command("DEBUG", "DIGEST")
    assert re.fullmatch(r"[0-9a-f]{40}", digest) and digest != ZEROS
    d.delete("k")
    assert d.execute_command("DEBUG", "DIGEST") == ZEROS


def test_digest_tracks_changes(d: Any) -> None:
    d.rpush("l", "a", "b")
    d.sadd("s", "x", "y")
    before = d.execute_command("DEBUG", "DIGEST")
    d.rpush("l", "c")
    changed = d.execute_command("DEBUG", "DIGEST")
    assert changed != before
    d.rpop("l")
    assert d.execute_command("DEBUG", "DIGEST") == before
    # Set members in another order, the same set.
    d.delete("s")
    d.sadd("s", "y", "x")
    assert d.execute_command("DEBUG", "DIGEST") == before
    # An expiring key differs from a persistent one; the deadline itself does not count.
    d.pexpireat("l", FAR_MS)
    volatile = d.execute_command("DEBUG", "DIGEST")
    assert volatile != before
    d.pexpireat("l", FAR_MS + 12345)
    assert d.execute_command("DEBUG", "DIGEST") == volatile
    d.persist("l")
    assert d.execute_command("DEBUG", "DIGEST") == before
    # The same data in another database is another dataset.
    d.move("s", 1)
    moved = d.execute_command("DEBUG", "DIGEST")
    d.execute_command("SWAPDB", "0", "1")
    assert d.execute_command("DEBUG", "DIGEST") not in (moved, before)


def load_dataset(c: Any) -> list[tuple[int, str]]:
    """Write one mixed data set through client `c`; returns the (db, key) pairs written."""
    rng = random.Random(20261125)
    keys: list[tuple[int, str]] = []

    def word(n: int) -> str:
        return "".join(rng.choice("abcdefghij0123456789") for _ in range(n))

    for db in (0, 3, 15):
        c.execute_command("SELECT", db)

        def add(key: str, *cmds: list[Any]) -> None:
            for cmd in cmds:
                c.execute_command(*cmd)
            keys.append((db, key))

        # Strings: shared ints, ints, embstr, raw, compressible, binary, empty.
        add("s:int", ["SET", "s:int", "42"])
        add("s:bigint", ["SET", "s:bigint", "-9223372036854775808"])
        add("s:notint", ["SET", "s:notint", "007"])
        add("s:short", ["SET", "s:short", "hello"])
        add("s:raw", ["SET", "s:raw", word(300)])
        add("s:zeros", ["SET", "s:zeros", "0" * 5000])
        add("s:bin", ["SET", "s:bin", bytes(range(256))])
        add("s:empty", ["SET", "s:empty", ""])
        add("s:appended", ["SET", "s:appended", "abc"], ["APPEND", "s:appended", "def"])
        # Lists: small, with integers, many nodes, one large element.
        add("l:small", ["RPUSH", "l:small", "a", "1", "-7", "bb", "1.5"])
        add("l:long", ["RPUSH", "l:long", *[word(rng.randint(1, 40)) for _ in range(700)]])
        add("l:ints", ["RPUSH", "l:ints", *[str(rng.randint(-10**12, 10**12)) for _ in range(300)]])
        add("l:big", ["RPUSH", "l:big", "x", "y" * 20000, "z"])
        add("l:pushed", ["LPUSH", "l:pushed", "c", "b", "a"], ["RPUSH", "l:pushed", "d"])
        # Sets: intset, large intset, strings, past the intset limit.
        add("set:ints", ["SADD", "set:ints", "3", "1", "2", "-5"])
        add("set:strs", ["SADD", "set:strs", "x", "y", "5", "z"])
        add("set:many", ["SADD", "set:many", *[str(i * 7) for i in range(600)]])
        add("set:words", ["SADD", "set:words", *[word(12) for _ in range(200)]])
        # Sorted sets: listpack and skiplist, awkward scores.
        add("z:small", ["ZADD", "z:small", "1.5", "m", "2", "n", "-0.1", "7", "0", "zero"])
        add("z:scores", ["ZADD", "z:scores", "inf", "top", "-inf", "bottom", "0.1", "tenth",
                         "1e300", "huge", "3.5e-7", "tiny", "-0", "negzero",
                         "123456789012345678", "bigint"])
        add("z:many", ["ZADD", "z:many",
                       *[x for i in range(200) for x in (str(rng.random() * 1000), word(8))]])
        add("z:longmember", ["ZADD", "z:longmember", "1", "a" * 100, "2", "b"])
        # Hashes: listpack, integers, past the entry and value limits.
        add("h:small", ["HSET", "h:small", "f", "v", "g", "12", "n", "-3"])
        add("h:many", ["HSET", "h:many", *[x for i in range(600) for x in (f"f{i}", word(5))]])
        add("h:longval", ["HSET", "h:longval", "f", "v" * 100, "g", "1"])
        # The same values with absolute deadlines.
        for key in ("s:int", "s:raw", "l:small", "set:ints", "z:small", "h:many"):
            vkey = f"{key}:ttl"
            add(vkey, ["COPY", key, vkey], ["PEXPIREAT", vkey, FAR_MS])
    c.execute_command("SELECT", 0)
    return keys


def digests(c: Any, keys: list[tuple[int, str]]) -> dict[tuple[int, str], str]:
    out = {}
    for db in sorted({db for db, _ in keys}):
        c.execute_command("SELECT", db)
        names = [k for kdb, k in keys if kdb == db]
        for name, digest in zip(names, c.execute_command("DEBUG", "DIGEST-VALUE", *names)):
            out[(db, name)] = digest
    c.execute_command("SELECT", 0)
    return out


def test_digest_matches_redis_server(d: Any, reference: Server) -> None:
    ref = reference.client(protocol=2, decode_responses=True)
    ref.flushall()
    keys = load_dataset(ref)
    assert load_dataset(d) == keys
    ours, theirs = digests(d, keys), digests(ref, keys)
    differ = [k for k in keys if ours[k] != theirs[k]]
    assert not differ, f"value digests differ from redis-server's for {differ}"
    assert ZEROS not in ours.values()
    assert d.execute_command("DEBUG", "DIGEST") == ref.execute_command("DEBUG", "DIGEST")
    # A change on one side shows; the same change on the other brings them together again.
    d.execute_command("ZINCRBY", "z:small", "0.25", "m")
    assert d.execute_command("DEBUG", "DIGEST") != ref.execute_command("DEBUG", "DIGEST")
    ref.execute_command("ZINCRBY", "z:small", "0.25", "m")
    assert d.execute_command("DEBUG", "DIGEST") == ref.execute_command("DEBUG", "DIGEST")


def random_op(rng: random.Random) -> list[Any]:
    """One random write over a small key space, every type and deadlines included."""
    key = f"{rng.choice('slzhx')}{rng.randint(0, 7)}"
    member = rng.choice(["a", "b", "c", "1", "22", "-3", "x" * 70, str(rng.randint(0, 999))])
    kind = key[0]
    if kind == "s":
        return rng.choice([["SET", key, member], ["APPEND", key, member], ["INCR", key],
                           ["DEL", key]])
    if kind == "l":
        return rng.choice([["RPUSH", key, member], ["LPUSH", key, member, member],
                           ["LPOP", key], ["LREM", key, "0", member], ["LTRIM", key, "1", "-1"]])
    if kind == "z":
        score = rng.choice(["0", "-0", "1.5", "0.1", "inf", "-inf", "1e-300",
                            str(rng.randint(-5, 5))])
        return rng.choice([["ZADD", key, score, member], ["ZREM", key, member],
                           ["ZINCRBY", key, "0.3", member], ["ZPOPMIN", key]])
    if kind == "h":
        return rng.choice([["HSET", key, member, member * 2], ["HDEL", key, member],
                           ["HINCRBY", key, "n", "3"]])
    if kind == "x":
        return rng.choice([["SADD", key, member], ["SREM", key, member], ["SPOP", key, "0"],
                           ["SADD", key, *[str(i) for i in range(rng.randint(1, 600))]]])
    raise AssertionError(kind)


def test_digest_follows_redis_under_random_writes(d: Any, reference: Server) -> None:
    ref = reference.client(protocol=2, decode_responses=True)
    ref.flushall()
    rng = random.Random(11)
    for step in range(1500):
        if step % 100 == 0:
            db = str(rng.choice([0, 1, 7]))
            d.execute_command("SELECT", db)
            ref.execute_command("SELECT", db)
        op = random_op(rng)
        if rng.random() < 0.1:
            op = [rng.choice(["PEXPIREAT", "PERSIST"]), op[1]]
            if op[0] == "PEXPIREAT":
                op.append(str(FAR_MS + rng.randint(0, 10**6)))
        try:
            ref.execute_command(*op)
        except Exception as e:  # WRONGTYPE and friends: the same error on both sides
            with pytest.raises(type(e)):
                d.execute_command(*op)
            continue
        # Replies are not compared: redis-py shapes them by protocol, and `ref` speaks RESP2.
        d.execute_command(*op)
        if step % 50 == 49:
            assert d.execute_command("DEBUG", "DIGEST") == \
                ref.execute_command("DEBUG", "DIGEST"), (step, op)
    assert d.execute_command("DEBUG", "DIGEST") == ref.execute_command("DEBUG", "DIGEST")


def object_fields(line: str) -> dict[str, str]:
    assert line.startswith("Value at:0x"), line
    return dict(part.split(":", 1) for part in line.split(" ")[2:])


def test_object_matches_redis_server(d: Any, reference: Server) -> None:
    ref = reference.client(protocol=2, decode_responses=True)
    ref.flushall()
    keys = load_dataset(ref)
    load_dataset(d)
    for db, key in keys:
        if db != 0:
            continue
        ours = object_fields(d.execute_command("DEBUG", "OBJECT", key))
        theirs = object_fields(ref.execute_command("DEBUG", "OBJECT", key))
        for f in ("lru", "lru_seconds_idle"):
            assert int(ours.pop(f)) >= 0
            theirs.pop(f)
        if key == "s:int:ttl":
            # COPY gives Redis an unshared copy of a shared integer (refcount 1); larder does
            # not remember how a value was made, and answers as OBJECT REFCOUNT does.
            assert (ours.pop("refcount"), theirs.pop("refcount")) in (
                ("2147483647", "1"), ("1", "1"))
        assert ours == theirs, key


def test_object_fields_and_missing_key(d: Any) -> None:
    with pytest.raises(Exception, match="^no such key$"):
        d.execute_command("DEBUG", "OBJECT", "nope")
    d.set("n", "12")
    line = d.execute_command("DEBUG", "OBJECT", "n")
    assert re.fullmatch(r"Value at:0x[0-9a-f]+ refcount:2147483647 encoding:int "
                        r"serializedlength:2 lru:\d+ lru_seconds_idle:\d+", line), line
    d.rpush("l", "a", "b", "c")
    line = d.execute_command("DEBUG", "OBJECT", "l")
    assert re.fullmatch(r"Value at:0x[0-9a-f]+ refcount:1 encoding:quicklist "
                        r"serializedlength:\d+ lru:\d+ lru_seconds_idle:\d+ ql_nodes:1 "
                        r"ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0 "
                        r"ql_uncompressed_size:\d+", line), line


def test_sleep_blocks_the_client(d: Any) -> None:
    t = time.monotonic()
    assert d.execute_command("DEBUG", "SLEEP", "0.3") == "OK"
    assert time.monotonic() - t >= 0.3
    t = time.monotonic()
    for arg in ("0", "-1", "abc"):
        assert d.execute_command("DEBUG", "SLEEP", arg) == "OK"
    assert time.monotonic() - t < 0.3


def test_sleep_stalls_other_clients(dbg: Server) -> None:
    """Redis stops serving for the sleep; larder's sleeper holds every shard, so a command on
    a key from another connection waits for it too."""
    sleeper, other = dbg.client(protocol=2), dbg.client(protocol=2)
    other.set("k", "v")
    done = threading.Event()

    def sleep() -> None:
        sleeper.execute_command("DEBUG", "SLEEP", "0.5")
        done.set()

    t0 = time.monotonic()
    th = threading.Thread(target=sleep)
    th.start()
    time.sleep(0.1)
    assert other.get("k") == b"v"
    waited = time.monotonic() - t0
    th.join(5)
    assert done.is_set()
    assert waited >= 0.45, waited


def test_populate(d: Any) -> None:
    d.set("key:1", "mine")
    assert d.execute_command("DEBUG", "POPULATE", "1000") == "OK"
    assert d.dbsize() == 1000
    assert d.get("key:0") == "value:0" and d.get("key:999") == "value:999"
    assert d.get("key:1") == "mine"
    assert d.execute_command("DEBUG", "POPULATE", "3", "p", "12") == "OK"
    assert d.strlen("p:2") == 12 and d.getrange("p:2", 0, 6) == "value:2"
    assert d.execute_command("DEBUG", "POPULATE", "2", "q", "3") == "OK"
    assert d.get("q:1") == "val"
    assert d.dbsize() == 1005
    for args in (["-1"], ["x"], ["1", "k", "-2"]):
        with pytest.raises(Exception, match="^value is out of range, must be positive$"):
            d.execute_command("DEBUG", "POPULATE", *args)


PROTOCOL_CASES = [
    ("string", b"$11\r\nHello World\r\n", b"$11\r\nHello World\r\n"),
    ("integer", b":12345\r\n", b":12345\r\n"),
    ("double", b"$5\r\n3.141\r\n", b",3.141\r\n"),
    ("bignum", b"$37\r\n1234567999999999999999999999999999999\r\n",
     b"(1234567999999999999999999999999999999\r\n"),
    ("null", b"$-1\r\n", b"_\r\n"),
    ("array", b"*3\r\n:0\r\n:1\r\n:2\r\n", b"*3\r\n:0\r\n:1\r\n:2\r\n"),
    ("set", b"*3\r\n:0\r\n:1\r\n:2\r\n", b"~3\r\n:0\r\n:1\r\n:2\r\n"),
    ("map", b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
     b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n"),
    ("verbatim", b"$25\r\nThis is a verbatim\nstring\r\n",
     b"=29\r\ntxt:This is a verbatim\nstring\r\n"),
    ("attrib", b"$39\r\nSome real reply following the attribute\r\n",
     b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
     b"$39\r\nSome real reply following the attribute\r\n"),
    ("push", b"-ERR RESP2 is not supported by this command\r\n",
     b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n"
     b"$40\r\nSome real reply following the push reply\r\n"),
    ("true", b":1\r\n", b"#t\r\n"),
    ("false", b":0\r\n", b"#f\r\n"),
    ("nosuch", b"-ERR Wrong protocol type name. Please use one of the following: "
     b"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n",
     b"-ERR Wrong protocol type name. Please use one of the following: "
     b"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n"),
]


@pytest.mark.parametrize("name,resp2,resp3", PROTOCOL_CASES, ids=[c[0] for c in PROTOCOL_CASES])
def test_protocol(dbg: Server, name: str, resp2: bytes, resp3: bytes) -> None:
    with dbg.raw() as c:
        c.send_command("DEBUG", "PROTOCOL", name)
        assert c.read_until_idle(idle=0.2) == resp2
        c.hello3()
        c.send_command("DEBUG", "PROTOCOL", name)
        assert c.read_until_idle(idle=0.2) == resp3


def test_set_active_expire(d: Any, dbg: Server) -> None:
    assert d.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
    d.set("k1", "v", px=30)
    d.set("k2", "v", px=30)
    time.sleep(0.3)
    # Past their deadline and not removed: counted, found by DEBUG, gone on access.
    assert d.dbsize() == 2
    assert d.execute_command("DEBUG", "DIGEST") != ZEROS
    assert d.execute_command("DEBUG", "OBJECT", "k1").startswith("Value at:")
    assert d.get("k1") is None
    assert d.dbsize() == 1
    assert d.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1") == "OK"
    assert wait_until(lambda: d.dbsize() == 0, timeout=5)
    d.set("k3", "v", px=30)
    assert wait_until(lambda: d.dbsize() == 0, timeout=5)


def test_log(d: Any, dbg: Server) -> None:
    assert d.execute_command("DEBUG", "LOG", "hello from test_log") == "OK"
    assert wait_until(lambda: "hello from test_log" in dbg.log_text(), timeout=5)


def test_reload_options(d: Any) -> None:
    with pytest.raises(Exception) as e:
        d.execute_command("DEBUG", "RELOAD", "bogus")
    assert str(e.value) == "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."


def fill_for_reload(d: Any) -> None:
    d.set("str", "v")
    d.rpush("list", *range(200))
    d.hset("hash", mapping={f"f{i}": i for i in range(10)})
    d.sadd("set", *range(5))
    d.zadd("zset", {"a": 1.5, "b": 2})
    d.set("ttl", "v")
    d.pexpireat("ttl", int(time.time() * 1000) + 3_600_000)


def test_reload_keeps_the_dataset(d: Any) -> None:
    d.flushall()
    fill_for_reload(d)
    digest = d.execute_command("DEBUG", "DIGEST")
    ttl = d.pexpiretime("ttl")
    assert d.execute_command("DEBUG", "RELOAD") == "OK"
    assert d.execute_command("DEBUG", "DIGEST") == digest
    assert d.pexpiretime("ttl") == ttl
    assert d.lrange("list", 0, 2) == ["0", "1", "2"]


@pytest.mark.larder_only
def test_loadaof_keeps_the_dataset(d: Any) -> None:
    d.flushall()
    fill_for_reload(d)
    d.incr("counter")
    digest = d.execute_command("DEBUG", "DIGEST")
    assert d.execute_command("DEBUG", "LOADAOF") == "OK"
    assert d.execute_command("DEBUG", "DIGEST") == digest
    assert d.get("counter") == "1"


@pytest.mark.larder_only
def test_reload_options_that_would_diverge_from_the_log_are_refused(d: Any) -> None:
    d.set("k", "v")
    for opt in ("NOSAVE", "NOFLUSH", "MERGE"):
        with pytest.raises(Exception, match="are not supported"):
            d.execute_command("DEBUG", "RELOAD", opt)
    assert d.get("k") == "v"


def test_debug_in_transactions(d: Any) -> None:
    d.set("k", "v")
    alone = d.execute_command("DEBUG", "DIGEST")
    p = d.pipeline(transaction=True)
    p.execute_command("DEBUG", "DIGEST")
    p.execute_command("DEBUG", "DIGEST-VALUE", "k")
    p.set("k2", "v")
    p.execute_command("DEBUG", "DIGEST")
    got = p.execute()
    assert got[0] == alone
    assert len(got[1]) == 1 and got[1][0] != ZEROS
    assert got[3] == d.execute_command("DEBUG", "DIGEST") != alone
