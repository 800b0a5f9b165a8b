"""Keyspace commands (issue 2, section 3): DEL UNLINK EXISTS TOUCH TYPE RENAME RENAMENX COPY MOVE
KEYS RANDOMKEY DBSIZE FLUSHDB FLUSHALL SELECT SWAPDB OBJECT.
"""

import pytest

from conftest import Err, make_non_string

NOT_INT = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
DB_RANGE = Err("ERR DB index is out of range")
SAME = Err("ERR source and destination objects are the same")


# --- DEL UNLINK EXISTS TOUCH TYPE --------------------------------------------------------------


@pytest.mark.parametrize("cmd", ["DEL", "UNLINK"])
def test_del_unlink(r, cmd):
    r.mset({"a": 1, "b": 2, "c": 3})
    assert r.execute_command(cmd, "a", "b", "a", "missing") == 2
    assert r.execute_command(cmd, "missing") == 0
    assert r.mget("a", "b", "c") == [None, None, b"3"]


def test_exists_counts_repeats(r):
    r.set("a", 1)
    assert r.execute_command("EXISTS", "a", "a", "missing", "a") == 3
    assert r.execute_command("EXISTS", "missing") == 0


def test_touch(r):
    r.mset({"a": 1, "b": 2})
    assert r.execute_command("TOUCH", "a", "b", "missing", "a") == 3


def test_type(r):
    r.set("s", "v")
    assert r.execute_command("TYPE", "s") == b"string"
    assert r.type("missing") == b"none"


def test_type_is_simple_string(raw):
    raw.call("SET", "s", "v")
    raw.send_command("TYPE", "s")
    assert raw.recv_exact(9) == b"+string\r\n"
    raw.send_command("TYPE", "missing")
    assert raw.recv_exact(7) == b"+none\r\n"


def test_type_of_other_types(raw):
    type_name = make_non_string(raw, "x")
    assert raw.call("TYPE", "x") == type_name.decode()


@pytest.mark.parametrize("cmd", ["DEL", "UNLINK", "EXISTS", "TOUCH", "TYPE", "KEYS", "RENAME",
                                 "RENAMENX", "COPY", "MOVE", "SWAPDB", "SELECT"])
def test_key_commands_arity(raw, cmd):
    assert raw.call(cmd) == Err(f"ERR wrong number of arguments for '{cmd.lower()}' command")


# --- RENAME RENAMENX ---------------------------------------------------------------------------


def test_rename(r):
    r.set("a", "1", ex=100)
    assert r.execute_command("RENAME", "a", "b") is True
    assert r.get("a") is None
    assert r.get("b") == b"1"
    assert 99 <= r.ttl("b") <= 100


def test_rename_overwrites_and_drops_target_ttl(r):
    r.set("a", "1")
    r.set("b", "2", ex=100)
    r.rename("a", "b")
    assert r.get("b") == b"1"
    assert r.ttl("b") == -1


def test_rename_to_itself(raw):
    raw.call("SET", "a", "1")
    assert raw.call("RENAME", "a", "a") == "OK"
    assert raw.call("RENAMENX", "a", "a") == 0
    assert raw.call("GET", "a") == b"1"


def test_rename_missing_key(raw):
    assert raw.call("RENAME", "missing", "x") == Err("ERR no such key")
    assert raw.call("RENAMENX", "missing", "x") == Err("ERR no such key")


def test_renamenx(r):
    r.mset({"a": "1", "b": "2"})
    assert r.execute_command("RENAMENX", "a", "b") == 0
    assert r.mget("a", "b") == [b"1", b"2"]
    assert r.execute_command("RENAMENX", "a", "c") == 1
    assert r.mget("a", "c") == [None, b"1"]


def test_rename_non_string(raw):
    type_name = make_non_string(raw, "l")
    assert raw.call("RENAME", "l", "l2") == "OK"
    assert raw.call("TYPE", "l2") == type_name.decode()


# --- COPY --------------------------------------------------------------------------------------


def test_copy(r):
    r.set("src", "v", ex=100)
    assert r.execute_command("COPY", "src", "dst") == 1
    assert r.get("dst") == b"v"
    assert 99 <= r.ttl("dst") <= 100
    assert r.execute_command("COPY", "src", "dst") == 0
    r.set("src", "v2")
    assert r.execute_command("COPY", "src", "dst", "REPLACE") == 1
    assert r.get("dst") == b"v2"
    assert r.ttl("dst") == -1
    assert r.execute_command("COPY", "missing", "dst") == 0


def test_copy_is_independent(r):
    r.set("src", "abc")
    r.copy("src", "dst")
    r.append("dst", "def")
    assert r.get("src") == b"abc"


def test_copy_to_another_db(server, protocol):
    c0 = server.client(protocol=protocol, db=0)
    c1 = server.client(protocol=protocol, db=1)
    c0.set("src", "v")
    c1.set("dst", "old")
    assert c0.execute_command("COPY", "src", "dst", "DB", "1") == 0
    assert c0.execute_command("COPY", "src", "dst", "DB", "1", "REPLACE") == 1
    assert c1.get("dst") == b"v"
    assert c0.exists("dst") == 0
    assert c0.execute_command("COPY", "src", "src", "DB", "1", "REPLACE") == 1
    assert c1.get("src") == b"v"


def test_copy_errors(raw):
    raw.call("SET", "a", "1")
    assert raw.call("COPY", "a", "a") == SAME
    assert raw.call("COPY", "a", "a", "DB", "0") == SAME
    assert raw.call("COPY", "a", "b", "DB", "16") == DB_RANGE
    assert raw.call("COPY", "a", "b", "DB", "-1") == DB_RANGE
    assert raw.call("COPY", "a", "b", "DB", "x") == NOT_INT
    assert raw.call("COPY", "a", "b", "DB") == SYNTAX
    assert raw.call("COPY", "a", "b", "FOO") == SYNTAX


# --- MOVE SELECT SWAPDB ------------------------------------------------------------------------


def test_move(server, protocol):
    c0 = server.client(protocol=protocol, db=0)
    c1 = server.client(protocol=protocol, db=1)
    c0.set("k", "v", ex=100)
    assert c0.execute_command("MOVE", "k", "1") == 1
    assert c0.exists("k") == 0
    assert c1.get("k") == b"v"
    assert 99 <= c1.ttl("k") <= 100
    assert c0.execute_command("MOVE", "k", "1") == 0  # no longer in db 0
    c0.set("k", "other")
    assert c0.execute_command("MOVE", "k", "1") == 0  # exists in the target
    assert c0.get("k") == b"other"
    assert c0.execute_command("MOVE", "missing", "1") == 0


def test_move_errors(raw):
    raw.call("SET", "k", "v")
    assert raw.call("MOVE", "k", "0") == SAME
    assert raw.call("MOVE", "k", "16") == DB_RANGE
    assert raw.call("MOVE", "k", "-1") == DB_RANGE
    assert raw.call("MOVE", "k", "x") == NOT_INT


def test_select(raw):
    raw.call("SET", "k", "db0")
    assert raw.call("SELECT", "15") == "OK"
    assert raw.call("GET", "k") is None
    raw.call("SET", "k", "db15")
    assert raw.call("DBSIZE") == 1
    assert raw.call("SELECT", "0") == "OK"
    assert raw.call("GET", "k") == b"db0"


def test_select_errors(raw):
    assert raw.call("SELECT", "16") == DB_RANGE
    assert raw.call("SELECT", "-1") == DB_RANGE
    assert raw.call("SELECT", "x") == NOT_INT
    assert raw.call("SELECT", "0", "1") == Err("ERR wrong number of arguments for 'select' command")


def test_select_is_per_connection(server):
    a = server.raw()
    b = server.raw()
    a.call("SELECT", "3")
    a.call("SET", "k", "a")
    assert b.call("GET", "k") is None
    b.call("SELECT", "3")
    assert b.call("GET", "k") == b"a"


def test_swapdb(server):
    a = server.raw()
    b = server.raw()
    a.call("SET", "k", "in0")
    b.call("SELECT", "1")
    b.call("MSET", "k", "in1", "only1", "x")
    assert a.call("SWAPDB", "0", "1") == "OK"
    # Connections keep their db index; the data moved under them.
    assert a.call("GET", "k") == b"in1"
    assert a.call("DBSIZE") == 2
    assert b.call("GET", "k") == b"in0"
    assert a.call("SWAPDB", "1", "1") == "OK"


def test_swapdb_moves_ttls(server):
    a = server.raw()
    a.call("SET", "k", "v", "EX", "100")
    a.call("SWAPDB", "0", "2")
    a.call("SELECT", "2")
    assert 99 <= a.call("TTL", "k") <= 100


def test_swapdb_errors(raw):
    assert raw.call("SWAPDB", "0", "16") == DB_RANGE
    assert raw.call("SWAPDB", "-1", "0") == DB_RANGE
    assert raw.call("SWAPDB", "x", "1") == Err("ERR invalid first DB index")
    assert raw.call("SWAPDB", "1", "x") == Err("ERR invalid second DB index")


def test_databases_flag(start_server):
    srv = start_server("--databases", "4")
    c = srv.raw()
    assert c.call("SELECT", "3") == "OK"
    assert c.call("SELECT", "4") == DB_RANGE
    assert c.call("CONFIG", "GET", "databases") == [b"databases", b"4"]


# --- KEYS RANDOMKEY DBSIZE ---------------------------------------------------------------------


@pytest.fixture
def glob_keys(r):
    names = ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h[a]llo", "other"]
    r.mset({n: 1 for n in names})
    return r


@pytest.mark.parametrize("pattern, expected", [
    ("h?llo", {b"h*llo", b"hallo", b"hello", b"hxllo"}),
    ("h*llo", {b"h*llo", b"h[a]llo", b"hallo", b"heeeello", b"hello", b"hllo", b"hxllo"}),
    ("h[ae]llo", {b"hallo", b"hello"}),
    ("h[^e]llo", {b"h*llo", b"hallo", b"hxllo"}),
    ("h[a-b]llo", {b"hallo"}),
    ("h\\*llo", {b"h*llo"}),
    ("h\\[a\\]llo", {b"h[a]llo"}),
    ("h[a]llo", {b"hallo"}),
    ("*", {b"h*llo", b"h[a]llo", b"hallo", b"heeeello", b"hello", b"hllo", b"hxllo", b"other"}),
    ("o*", {b"other"}),
    ("nothing*", set()),
    ("other", {b"other"}),
])
def test_keys_patterns(glob_keys, pattern, expected):
    assert set(glob_keys.execute_command("KEYS", pattern)) == expected


def test_keys_only_current_db(server):
    a = server.raw()
    a.call("SET", "k0", "1")
    a.call("SELECT", "1")
    a.call("SET", "k1", "1")
    assert a.call("KEYS", "*") == [b"k1"]


def test_randomkey(r):
    assert r.execute_command("RANDOMKEY") is None
    r.mset({"a": 1, "b": 2, "c": 3})
    seen = {r.execute_command("RANDOMKEY") for _ in range(100)}
    assert seen <= {b"a", b"b", b"c"}
    assert len(seen) >= 2


def test_dbsize(r):
    assert r.execute_command("DBSIZE") == 0
    r.mset({f"k{i}": i for i in range(100)})
    assert r.dbsize() == 100
    r.delete("k0")
    assert r.dbsize() == 99


# --- FLUSHDB FLUSHALL --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [None, "SYNC", "ASYNC", "async", "sync"])
def test_flushdb(server, mode):
    a = server.raw()
    a.call("SET", "k", "v")
    a.call("SELECT", "1")
    a.call("MSET", "x", "1", "y", "2")
    args = ["FLUSHDB"] + ([mode] if mode else [])
    assert a.call(*args) == "OK"
    assert a.call("DBSIZE") == 0
    a.call("SELECT", "0")
    assert a.call("DBSIZE") == 1


@pytest.mark.parametrize("mode", [None, "SYNC", "ASYNC"])
def test_flushall(server, mode):
    a = server.raw()
    for db in range(16):
        a.call("SELECT", str(db))
        a.call("MSET", "a", "1", "b", "2")
    args = ["FLUSHALL"] + ([mode] if mode else [])
    assert a.call(*args) == "OK"
    for db in range(16):
        a.call("SELECT", str(db))
        assert a.call("DBSIZE") == 0


def test_flushall_large_async(r):
    pipe = r.pipeline(transaction=False)
    for i in range(50_000):
        pipe.set(f"k{i}", "x" * 50)
    pipe.execute()
    assert r.execute_command("FLUSHALL", "ASYNC") is True
    assert r.dbsize() == 0
    r.set("after", 1)
    assert r.get("after") == b"1"


@pytest.mark.parametrize("cmd", ["FLUSHDB", "FLUSHALL"])
@pytest.mark.parametrize("args", [["FOO"], ["ASYNC", "SYNC"], ["SYNC", "SYNC"]])
def test_flush_syntax_errors(raw, cmd, args):
    raw.call("SET", "k", "v")
    assert raw.call(cmd, *args) == SYNTAX
    assert raw.call("EXISTS", "k") == 1


# --- OBJECT ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, encoding", [
    ("12", b"int"), ("-9223372036854775808", b"int"), ("abc", b"embstr"), ("x" * 44, b"embstr"),
    ("x" * 45, b"raw"), ("12345678901234567890", b"embstr"), ("1.5", b"embstr"),
])
def test_object_encoding(r, value, encoding):
    r.set("k", value)
    assert r.execute_command("OBJECT", "ENCODING", "k") == encoding


def test_object_encoding_after_append_is_raw(r):
    r.set("k", 10)
    r.append("k", "1")
    assert r.object("encoding", "k") == b"raw"


@pytest.mark.parametrize("command", [["SETBIT", "k", "0", "0"],
                                     ["BITFIELD", "k", "SET", "u1", "0", "0"],
                                     ["BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0",
                                      "9"]])
def test_object_encoding_after_a_bit_write_is_raw_even_without_a_change(r, command):
    # Redis unshares the string a bit command may write before it looks at the bits.
    r.set("k", 12)
    assert r.object("encoding", "k") == b"int"
    r.execute_command(*command)
    assert r.get("k") == b"12"
    assert r.object("encoding", "k") == b"raw"


def test_object_on_missing_key_is_null(rawp):
    for sub in ("ENCODING", "IDLETIME", "REFCOUNT", "FREQ"):
        assert rawp.call("OBJECT", sub, "missing") is None, sub


def test_object_refcount(r):
    r.set("k", "some value")
    refcount = r.execute_command("OBJECT", "REFCOUNT", "k")
    assert isinstance(refcount, int) and refcount >= 1


def test_object_idletime(r):
    r.set("k", "v")
    idle = r.execute_command("OBJECT", "IDLETIME", "k")
    assert isinstance(idle, int) and idle >= 0


def test_object_freq_needs_lfu_policy(raw):
    raw.call("SET", "k", "v")
    assert raw.call("OBJECT", "FREQ", "k") == Err(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        "that when switching between policies at runtime LRU and LFU data will take some time "
        "to adjust.")


def test_object_freq_and_idletime_under_lfu(start_server):
    srv = start_server("--maxmemory-policy", "allkeys-lfu", "--lfu-log-factor", "0")
    c = srv.raw()
    c.call("SET", "k", "v")
    before = c.call("OBJECT", "FREQ", "k")
    assert isinstance(before, int)
    for _ in range(10):
        c.call("GET", "k")
    # With lfu-log-factor 0 every access increments the counter.
    assert c.call("OBJECT", "FREQ", "k") == before + 10
    assert c.call("OBJECT", "IDLETIME", "k") == Err(
        "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
        "switching between policies at runtime LRU and LFU data will take some time to adjust.")


def test_object_help(rawp):
    lines = rawp.call("OBJECT", "HELP")
    assert isinstance(lines, list)
    assert lines[0] == "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    text = "\n".join(lines)
    for sub in ("ENCODING <key>", "FREQ <key>", "IDLETIME <key>", "REFCOUNT <key>", "HELP"):
        assert sub in text


def test_object_errors(raw):
    assert raw.call("OBJECT", "FOO") == Err("ERR unknown subcommand 'FOO'. Try OBJECT HELP.")
    assert raw.call("OBJECT", "ENCODING", "a", "b") == Err(
        "ERR wrong number of arguments for 'object|encoding' command")
    assert raw.call("OBJECT", "HELP", "x") == Err(
        "ERR wrong number of arguments for 'object|help' command")
