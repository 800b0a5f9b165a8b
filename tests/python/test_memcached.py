"""The memcached door, text protocol: every classic command with pymemcache and raw sockets,
noreply, CAS races across connections, memcached's exptime rules, flush_all with a delay,
stats, limits and malformed input, one keyspace with the RESP door, and memccapable."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest
from pymemcache.client.base import Client as PyMemcache

from test_memcached_support import (  # noqa: F401  (fixtures)
    OP,
    SUCCESS,
    McBin,
    McText,
    mc,
    mc_server,
    mcd,
    packet,
    start_with_door,
    store_extras,
    wait_for,
)

pytestmark = pytest.mark.larder_only


@pytest.fixture
def pm(mc_server):
    c = PyMemcache(("127.0.0.1", mc_server.mc_port), timeout=5, connect_timeout=5)
    yield c
    c.close()


@pytest.fixture
def resp(mc_server):
    return mc_server.client(protocol=2)


# --- detection, version, verbosity, quit ----------------------------------------------------


def test_text_and_binary_side_by_side(mc_server):
    text, binary = McText(mc_server.mc_port), McBin(mc_server.mc_port)
    try:
        assert text.call("version") == b"VERSION 1.6.18"
        assert binary.call("version").value == b"1.6.18"
        assert text.store("set", "k", "v") == b"STORED"
        assert binary.call("get", "k").value == b"v"
    finally:
        text.close()
        binary.close()


def test_version_verbosity_quit(mc, pm):
    assert pm.version() == b"1.6.18"
    assert mc.call("verbosity 1") == b"OK"
    assert mc.stats("settings")["verbosity"] == "1"
    assert mc.call("verbosity 0") == b"OK"
    mc.send("verbosity 1 noreply\r\nversion\r\n")
    assert mc.line() == b"VERSION 1.6.18"
    mc.send("quit\r\n")
    assert mc.is_closed()


def test_quit_after_pipelined_replies(mc):
    mc.send(mc.request("set a 0 0 1", "1") + b"get a\r\nquit\r\nget a\r\n")
    assert mc.idle(1.0) == b"STORED\r\nVALUE a 0 1\r\n1\r\nEND\r\n"
    assert mc.is_closed()


# --- storage commands -------------------------------------------------------------------------


def test_set_get_flags_and_binary_values(mc, pm):
    assert pm.set("k", b"hello", flags=42) is True
    assert pm.get("k") == b"hello"
    assert mc.get("k") == {b"k": (42, b"hello", None)}
    value = bytes(range(256)) + b"\r\nEND\r\n"
    assert mc.store("set", "bin", value, flags=0xFFFFFFFF) == b"STORED"
    assert mc.get("bin") == {b"bin": (0xFFFFFFFF, value, None)}
    # Flags are parsed as memcached's strtoul narrowed to 32 bits.
    assert mc.store("set", "wrap", "x", flags=4294967297) == b"STORED"
    assert mc.get("wrap")[b"wrap"][0] == 1
    assert mc.store("set", "empty", "") == b"STORED"
    assert mc.get("empty") == {b"empty": (0, b"", None)}


def test_multi_get_order_and_duplicates(mc, pm):
    pm.set_many({"a": b"1", "b": b"2", "c": b"3"}, noreply=False)
    mc.send("get c missing a a b\r\n")
    assert [(k, d) for k, _, d, _ in mc.values()] == [
        (b"c", b"3"), (b"a", b"1"), (b"a", b"1"), (b"b", b"2")]
    assert pm.get_many(["a", "b", "zz"]) == {"a": b"1", "b": b"2"}


def test_multi_get_longer_than_one_prefetch_batch(mc, pm):
    # larder warms the caches 32 keys at a time; answers stay in request order across batches.
    pm.set_many({f"k{i}": str(i).encode() for i in range(0, 100, 3)}, noreply=False)
    keys = [f"k{i}" for i in range(100)] + ["k0"]
    mc.send("get " + " ".join(keys) + "\r\n")
    want = [(k.encode(), str(int(k[1:])).encode()) for k in keys if int(k[1:]) % 3 == 0]
    assert [(k, d) for k, _, d, _ in mc.values()] == want


def test_add_replace(mc, pm):
    assert mc.store("replace", "k", "x") == b"NOT_STORED"
    assert mc.store("add", "k", "a") == b"STORED"
    assert mc.store("add", "k", "b") == b"NOT_STORED"
    assert mc.store("replace", "k", "c", flags=9) == b"STORED"
    assert mc.get("k") == {b"k": (9, b"c", None)}
    assert pm.add("k", b"z", noreply=False) is False
    assert pm.replace("nope", b"z", noreply=False) is False


def test_append_prepend_keep_flags_and_ttl(mc):
    assert mc.store("append", "k", "x") == b"NOT_STORED"
    assert mc.store("prepend", "k", "x") == b"NOT_STORED"
    assert mc.store("set", "k", "mid", flags=7, exptime=100) == b"STORED"
    assert mc.store("append", "k", ">>", flags=1, exptime=5) == b"STORED"
    assert mc.store("prepend", "k", "<<", flags=2, exptime=0) == b"STORED"
    assert mc.get("k") == {b"k": (7, b"<<mid>>", None)}
    head, _ = mc.meta("mg k t f")
    ttl = int(head.split(b" ")[1][1:])
    assert 98 <= ttl <= 100, head


def test_append_past_item_size_is_not_stored(start_server):
    srv = start_with_door(start_server, "--memcached-item-size-max", "2048")
    c = McText(srv.mc_port)
    # As memcached: the joined item (48-byte header, key, CRLF, CAS) must fit in -I, so
    # key "k" leaves 2048 - 60 bytes for the value.
    assert c.store("set", "k", "x" * 1900) == b"STORED"
    assert c.store("append", "k", "y" * 89) == b"NOT_STORED"
    assert c.store("append", "k", "y" * 88) == b"STORED"
    assert len(c.get_one("k")) == 1988


def test_cas_exists_not_found_stored(mc, pm):
    assert mc.store("cas", "k", "x", cas=1) == b"NOT_FOUND"
    mc.store("set", "k", "v1")
    value, cas = mc.gets("k")
    assert value == b"v1" and cas > 0
    assert mc.store("cas", "k", "v2", cas=cas + 1) == b"EXISTS"
    assert mc.store("cas", "k", "v2", cas=cas) == b"STORED"
    assert mc.store("cas", "k", "v3", cas=cas) == b"EXISTS"
    value, cas2 = mc.gets("k")
    assert value == b"v2" and cas2 != cas
    # pymemcache's view of the same.
    v, token = pm.gets("k")
    assert (v, int(token)) == (b"v2", cas2)
    assert pm.cas("k", b"v4", token) is True
    assert pm.cas("k", b"v5", token) is False


def test_cas_unique_per_key_and_write(mc):
    seen = set()
    for i in range(50):
        mc.store("set", f"k{i % 10}", str(i))
        seen.add(mc.gets(f"k{i % 10}")[1])
    assert len(seen) == 50


def test_cas_race_two_connections(mc_server):
    a, b = McText(mc_server.mc_port), McText(mc_server.mc_port)
    try:
        a.store("set", "k", "0")
        _, cas_a = a.gets("k")
        _, cas_b = b.gets("k")
        assert cas_a == cas_b
        assert b.store("cas", "k", "b", cas=cas_b) == b"STORED"
        assert a.store("cas", "k", "a", cas=cas_a) == b"EXISTS"
        assert a.get_one("k") == b"b"
    finally:
        a.close()
        b.close()


def test_cas_race_many_threads_lose_no_update(mc_server):
    """Optimistic increments from several connections (on two worker threads): every STORED
    is one increment, so the final value counts them exactly."""
    McText(mc_server.mc_port).store("set", "ctr", "0")
    stored = [0] * 6

    def worker(i: int) -> None:
        c = McText(mc_server.mc_port)
        try:
            for _ in range(150):
                value, cas = c.gets("ctr")
                if c.store("cas", "ctr", str(int(value) + 1), cas=cas) == b"STORED":
                    stored[i] += 1
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(stored))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = int(McText(mc_server.mc_port).get_one("ctr"))
    assert final == sum(stored) > 0


def test_delete(mc, pm):
    assert mc.call("delete k") == b"NOT_FOUND"
    mc.store("set", "k", "v")
    assert mc.call("delete k") == b"DELETED"
    assert mc.get("k") == {}
    # The legacy hold time 0 is accepted; anything else is the usage error.
    mc.store("set", "k", "v")
    assert mc.call("delete k 0") == b"DELETED"
    assert mc.call("delete k 5") == (
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]")
    pm.set("p", b"1", noreply=False)
    assert pm.delete("p", noreply=False) is True
    assert pm.delete("p", noreply=False) is False


def test_incr_decr(mc, pm):
    assert mc.call("incr n 1") == b"NOT_FOUND"
    assert mc.call("decr n 1") == b"NOT_FOUND"
    mc.store("set", "n", "10", flags=5, exptime=100)
    assert mc.call("incr n 5") == b"15"
    assert mc.call("decr n 100") == b"0"
    assert mc.call("incr n 18446744073709551615") == b"18446744073709551615"
    assert mc.call("incr n 2") == b"1"
    assert mc.get("n") == {b"n": (5, b"1", None)}
    head, _ = mc.meta("mg n t")
    assert 98 <= int(head.split(b" ")[1][1:]) <= 100
    mc.store("set", "s", "abc")
    assert mc.call("incr s 1") == b"CLIENT_ERROR cannot increment or decrement non-numeric value"
    assert mc.call("incr n abc") == b"CLIENT_ERROR invalid numeric delta argument"
    assert mc.call("incr n -1") == b"CLIENT_ERROR invalid numeric delta argument"
    mc.store("set", "sp", " 12 ")
    assert mc.call("incr sp 1") == b"13"
    assert pm.incr("n", 41) == 42
    assert pm.decr("n", 50) == 0
    assert pm.incr("missing", 1) is None


def test_incr_changes_cas(mc):
    mc.store("set", "n", "1")
    _, cas = mc.gets("n")
    mc.call("incr n 1")
    assert mc.gets("n")[1] != cas


def test_touch_gat_gats_keep_cas(mc, pm):
    assert mc.call("touch k 10") == b"NOT_FOUND"
    mc.store("set", "k", "v", flags=3)
    _, cas = mc.gets("k")
    assert mc.call("touch k 100") == b"TOUCHED"
    assert mc.gets("k")[1] == cas
    head, _ = mc.meta("mg k t")
    assert head in (b"HD t100", b"HD t99")
    mc.send("gat 200 k missing\r\n")
    assert mc.values() == [(b"k", 3, b"v", None)]
    mc.send("gats 300 k\r\n")
    assert mc.values() == [(b"k", 3, b"v", cas)]
    head, _ = mc.meta("mg k t c")
    assert head.split(b" ")[2] == f"c{cas}".encode()
    assert int(head.split(b" ")[1][1:]) in (299, 300)
    # gat with no keys is allowed.
    assert mc.call("gat 10") == b"END"
    assert pm.touch("k", 50, noreply=False) is True
    assert pm.touch("nope", 50, noreply=False) is False


def test_touch_negative_expires(mc):
    mc.store("set", "k", "v")
    assert mc.call("touch k -1") == b"TOUCHED"
    assert mc.get("k") == {}
    mc.store("set", "k", "v")
    mc.send("gat -1 k\r\n")
    assert mc.values() == [(b"k", 0, b"v", None)]
    assert mc.get("k") == {}


# --- exptime rules ----------------------------------------------------------------------------


def test_thirty_day_rule(mc, resp):
    month = 60 * 60 * 24 * 30
    assert mc.store("set", "rel", "v", exptime=month) == b"STORED"
    assert month - 2 <= resp.ttl("rel") <= month
    # One second more is an absolute unix time: 1970 plus a month, long past.
    assert mc.store("set", "abs_past", "v", exptime=month + 1) == b"STORED"
    assert mc.get("abs_past") == {}
    assert resp.exists("abs_past") == 0
    future = int(time.time()) + 100
    assert mc.store("set", "abs", "v", exptime=future) == b"STORED"
    assert 97 <= resp.ttl("abs") <= 100
    head, _ = mc.meta("mg abs t")
    assert 97 <= int(head.split(b" ")[1][1:]) <= 100
    # Negative: stored, and already expired.
    assert mc.store("set", "neg", "v", exptime=-1) == b"STORED"
    assert mc.get("neg") == {}
    # A negative exptime on an existing key makes it disappear.
    mc.store("set", "gone", "v")
    assert mc.store("set", "gone", "w", exptime=-5) == b"STORED"
    assert resp.exists("gone") == 0
    # 2147483648 reads as a negative 32-bit number, as memcached's strtol path does.
    assert mc.store("set", "big", "v", exptime=2147483648) == b"STORED"
    assert mc.get("big") == {}


def test_items_expire(mc, pm):
    mc.store("set", "short", "v", exptime=1)
    pm.set("long", b"v", expire=100, noreply=False)
    assert mc.get_one("short") == b"v"
    assert wait_for(lambda: mc.get_one("short") is None, timeout=3)
    assert mc.get_one("long") == b"v"
    assert int(mc.stats()["get_expired"]) + int(mc.stats()["get_misses"]) >= 1


# --- flush_all --------------------------------------------------------------------------------


def test_flush_all_now(mc, pm, resp):
    pm.set_many({"a": b"1", "b": b"2"}, noreply=False)
    assert mc.call("flush_all") == b"OK"
    assert mc.get("a", "b") == {}
    assert resp.dbsize() == 0
    pm.set("c", b"3", noreply=False)
    assert mc.call("flush_all 0") == b"OK"
    assert pm.get("c") is None
    mc.send("flush_all noreply\r\nversion\r\n")
    assert mc.line() == b"VERSION 1.6.18"
    assert pm.flush_all(noreply=False) is True
    assert mc.call("flush_all abc") == b"CLIENT_ERROR invalid exptime argument"


def test_flush_all_with_delay(mc, resp):
    """Items stored before the deadline (even after the command) go at the deadline, for both
    doors; items stored after it stay."""
    mc.store("set", "before", "v")
    assert mc.call("flush_all 2") == b"OK"
    mc.store("set", "during", "v")
    assert mc.get_one("before") == b"v"
    assert resp.get("during") == b"v"
    # The timer flushes without any memcached traffic: watch from the RESP door.
    assert wait_for(lambda: resp.dbsize() == 0, timeout=4)
    assert mc.get("before", "during") == {}
    mc.store("set", "after", "v")
    time.sleep(0.3)
    assert mc.get_one("after") == b"v"


def test_later_flush_all_replaces_pending(mc):
    mc.store("set", "k", "v")
    assert mc.call("flush_all 1") == b"OK"
    assert mc.call("flush_all 100") == b"OK"
    time.sleep(1.5)
    assert mc.get_one("k") == b"v"


# --- noreply ------------------------------------------------------------------------------------


def test_noreply_everywhere(mc):
    reqs = [
        mc.request("set k 1 0 1 noreply", "a"),
        mc.request("add k2 0 0 1 noreply", "b"),
        mc.request("add k2 0 0 1 noreply", "c"),  # NOT_STORED, silenced too
        mc.request("replace k 2 0 1 noreply", "d"),
        mc.request("append k 0 0 1 noreply", "e"),
        mc.request("prepend k 0 0 1 noreply", "f"),
        mc.request("cas k 0 0 1 1 noreply", "g"),  # EXISTS, silenced
        b"incr n 1 noreply\r\n",  # NOT_FOUND, silenced
        mc.request("set n 0 0 1 noreply", "5"),
        b"incr n 3 noreply\r\n",
        b"decr n 1 noreply\r\n",
        b"touch k 100 noreply\r\n",
        b"delete k2 noreply\r\n",
        b"delete missing noreply\r\n",
        b"verbosity 1 noreply\r\n",
        b"incr k 1 noreply\r\n",  # non-numeric error, silenced
        b"set bad 0 0 z noreply\r\n",  # malformed line: error silenced
        b"mn\r\n",
    ]
    mc.send(b"".join(reqs))
    assert mc.line() == b"MN"
    assert mc.idle(0.2) == b""
    assert mc.get("k", "k2", "n") == {b"k": (2, b"fde", None), b"n": (0, b"7", None)}


def test_noreply_pymemcache_default(mc_server):
    c = PyMemcache(("127.0.0.1", mc_server.mc_port), default_noreply=True)
    try:
        for i in range(100):
            assert c.set(f"k{i}", str(i).encode()) is True
        assert c.get_many([f"k{i}" for i in range(100)])["k99"] == b"99"
    finally:
        c.close()


# --- stats ----------------------------------------------------------------------------------------


def test_stats_general_fields(mc):
    mc.store("set", "a", "1")
    mc.get("a", "zz")
    s = mc.stats()
    for name in ["pid", "uptime", "time", "version", "pointer_size", "rusage_user",
                 "rusage_system", "max_connections", "curr_connections", "total_connections",
                 "connection_structures", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch",
                 "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses",
                 "delete_hits", "incr_misses", "incr_hits", "decr_misses", "decr_hits",
                 "cas_misses", "cas_hits", "cas_badval", "touch_hits", "touch_misses",
                 "auth_cmds", "auth_errors", "bytes_read", "bytes_written", "limit_maxbytes",
                 "accepting_conns", "threads", "conn_yields", "bytes", "curr_items",
                 "total_items", "evictions", "reclaimed"]:
        assert name in s, name
    assert s["version"] == "1.6.18"
    assert abs(int(s["time"]) - time.time()) < 5
    assert int(s["curr_items"]) == 1
    assert int(s["threads"]) == 2
    assert int(s["curr_connections"]) >= 1
    assert int(s["bytes"]) > 0


def test_stats_counters_move(mc):
    before = mc.stats()
    mc.store("set", "a", "1")
    mc.get("a", "b")
    mc.call("incr a 1")
    mc.call("decr zz 1")
    mc.call("delete a")
    mc.call("touch a 1")
    mc.store("cas", "a", "x", cas=1)
    after = mc.stats()
    for name, delta in [("cmd_set", 2), ("cmd_get", 2), ("get_hits", 1), ("get_misses", 1),
                        ("incr_hits", 1), ("decr_misses", 1), ("delete_hits", 1),
                        ("touch_misses", 1), ("cas_misses", 1), ("total_items", 1)]:
        assert int(after[name]) - int(before[name]) == delta, name
    assert mc.call("stats reset") == b"RESET"
    assert int(mc.stats()["cmd_set"]) == 0


def test_stats_groups(mc):
    settings = mc.stats("settings")
    assert settings["item_size_max"] == "1048576"
    assert settings["cas_enabled"] == "yes"
    assert settings["tcpport"] == str(mc.sock.getpeername()[1])
    conns = mc.stats("conns")
    mine = [k for k, v in conns.items() if v == "conn_parse_cmd"]
    assert len(mine) == 1
    assert any(v == "conn_listening" for v in conns.values())
    # An empty database has no class (memcached 1.6.18 answers an empty one so too).
    assert mc.stats("items") == {}
    assert mc.stats("slabs") == {"active_slabs": "0", "total_malloced": "0"}
    assert mc.call("stats detail x") == b"CLIENT_ERROR usage: stats detail on|off|dump"
    assert mc.call("stats detail") == b"CLIENT_ERROR usage: stats detail on|off|dump"
    assert mc.call("stats nonsense") == b"ERROR"


def detail_dump(c: McText) -> set[bytes]:
    """`stats detail dump`'s PREFIX lines (memcached lists them in hash order)."""
    c.send("stats detail dump\r\n")
    lines = set()
    while (line := c.line()) != b"END":
        lines.add(line)
    return lines


def test_stats_detail_counts_by_prefix(start_server):
    """The counts memcached 1.6.18 gives for the same requests (checked with a real
    memcached -p N): gets per key of a multi-get, sets whether stored or not, deletes whether
    found or not; keys without the delimiter, meta commands, incr and touch are not counted,
    nor anything while detail is off."""
    srv = start_with_door(start_server)
    c = McText(srv.mc_port)
    assert detail_dump(c) == set()
    assert c.stats("settings")["detail_enabled"] == "no"
    assert c.call("stats detail on") == b"OK"
    assert c.stats("settings")["detail_enabled"] == "yes"
    assert c.stats("settings")["stat_key_prefix"] == ":"
    assert c.store("set", "a:1", "x") == b"STORED"
    c.send("get a:1 a:2 b\r\n")
    while c.line() != b"END":
        pass
    c.send("gets a:1\r\n")
    while c.line() != b"END":
        pass
    assert c.call("delete a:1") == b"DELETED"
    assert c.call("delete zz:q") == b"NOT_FOUND"
    assert c.store("set", "nodelim", "y") == b"STORED"
    assert c.store("append", "a:9", "z") == b"NOT_STORED"
    assert c.call("incr a:1 1") == b"NOT_FOUND"
    assert c.call("mg a:1 v") == b"EN"
    assert c.call("ms c:1 1", "z") == b"HD"
    assert c.call("md c:1") == b"HD"
    assert c.call("touch a:1 10") == b"NOT_FOUND"
    want = {b"PREFIX a get 3 hit 2 set 2 del 1", b"PREFIX zz get 0 hit 0 set 0 del 1"}
    assert detail_dump(c) == want
    assert c.call("stats detail off") == b"OK"
    c.send("get a:5\r\n")
    assert c.line() == b"END"
    assert detail_dump(c) == want


def test_stats_detail_delimiter_and_binary(start_server):
    srv = start_with_door(start_server, "--memcached-prefix-delimiter", "/")
    b = McBin(srv.mc_port)
    b.send(packet("stat", "detail on"))
    assert b.read().key == b""
    assert b.set("users/1", "v").status == SUCCESS
    assert b.call("get", "users/1").status == SUCCESS
    assert b.call("get", "users:2").status != SUCCESS
    assert b.call("delete", "users/1").status == SUCCESS
    b.send(packet("stat", "detail dump"))
    r = b.read()
    assert r.key == b"detailed"
    assert r.value == b"PREFIX users get 1 hit 1 set 1 del 1\r\nEND\r\n"
    assert b.read().key == b""
    c = McText(srv.mc_port)
    assert c.stats("settings")["stat_key_prefix"] == "/"
    assert c.stats("settings")["detail_enabled"] == "yes"


def test_pymemcache_stats(pm):
    s = pm.stats()
    assert s[b"version"] == b"1.6.18"
    assert b"curr_connections" in s


# --- limits and malformed input --------------------------------------------------------------------


def test_key_length_limit(mc):
    assert mc.store("set", "k" * 250, "v") == b"STORED"
    assert mc.get_one("k" * 250) == b"v"
    assert mc.store("set", "k" * 251, "v") == b"CLIENT_ERROR bad command line format"
    # As in memcached, only the line is skipped: the data block is read as a command.
    assert mc.line() == b"ERROR"
    assert mc.call("get " + "k" * 251) == b"CLIENT_ERROR bad command line format"
    # Control characters are refused (memcached accepts them; see docs/memcached.md).
    assert mc.call("get a\x01b") == b"CLIENT_ERROR bad command line format"
    assert mc.call("version") == b"VERSION 1.6.18"


def test_value_too_large_is_swallowed(mc):
    big = b"x" * (1024 * 1024 + 1)
    mc.send(mc.request("set big 0 0 %d" % len(big), big) + b"version\r\n")
    assert mc.line() == b"SERVER_ERROR object too large for cache"
    assert mc.line() == b"VERSION 1.6.18"
    # The largest value memcached stores under key "ok" with -I 1m (header, key, CAS).
    exact = b"y" * (1024 * 1024 - 61)
    assert mc.call("set ok 0 0 %d" % len(exact), exact) == b"STORED"
    assert mc.get_one("ok") == exact
    assert int(mc.stats()["store_too_large"]) >= 1


def test_item_size_max_flag(start_server):
    srv = start_with_door(start_server, "--memcached-item-size-max", "2kb")
    c = McText(srv.mc_port)
    assert c.store("set", "k", "x" * 1988) == b"STORED"
    assert c.store("set", "k", "x" * 1989) == b"SERVER_ERROR object too large for cache"
    assert c.stats("settings")["item_size_max"] == "2048"
    assert srv.raw().call("CONFIG", "GET", "memcached-item-size-max") == [
        b"memcached-item-size-max", b"2048"]


def test_malformed_requests(mc):
    assert mc.call("bogus") == b"ERROR"
    assert mc.call("") == b"ERROR"
    assert mc.call("get") == b"ERROR"
    assert mc.call("set k 0 0") == b"ERROR"
    assert mc.call("set k x 0 1") == b"CLIENT_ERROR bad command line format"
    assert mc.call("set k 0 0 -1") == b"CLIENT_ERROR bad command line format"
    assert mc.call("touch k x") == b"CLIENT_ERROR invalid exptime argument"
    # A data block of the wrong length: bad data chunk, then the leftovers are read as
    # commands, exactly as memcached does.
    mc.send(b"set k 0 0 1\r\nabc\r\n")
    assert mc.line() == b"CLIENT_ERROR bad data chunk"
    assert mc.line() == b"ERROR"
    assert mc.call("version") == b"VERSION 1.6.18"


def test_line_too_long_closes(mc):
    # memcached serves a line that fits its 16 KiB read buffer, and closes without a word
    # on one that fills it without a newline.
    mc.send(b"set " + b"k" * 5000 + b" 0 0 1\r\n")
    assert mc.line() == b"CLIENT_ERROR bad command line format"
    mc.send(b"set " + b"k" * 20000 + b" 0 0 1\r\n")
    assert mc.is_closed()


def test_long_get_line_is_fine(mc):
    keys = [f"key{i:05d}" for i in range(400)]
    mc.store("set", keys[-1], "last")
    assert len(" ".join(keys)) > 2048
    assert mc.get(*keys) == {keys[-1].encode(): (0, b"last", None)}


def test_garbage_does_not_hurt_the_server(mc_server):
    import random
    rng = random.Random(7)
    for _ in range(20):
        c = McText(mc_server.mc_port)
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
        try:
            c.send(junk.replace(b"\x80", b"x"))  # text garbage; binary has its own test
            c.idle(0.05)
        except OSError:
            pass
        c.close()
    c = McText(mc_server.mc_port)
    assert c.call("version") == b"VERSION 1.6.18"
    assert mc_server.alive()


# --- pipelining and split packets -------------------------------------------------------------------


def test_pipeline_ten_thousand(mc):
    n = 10_000
    mc.send(b"".join(mc.request(f"set k{i} {i} 0 {len(str(i))}", str(i)) for i in range(n)))
    for _ in range(n):
        assert mc.line() == b"STORED"
    mc.send(b"".join(f"get k{i}\r\n".encode() for i in range(n)))
    for i in range(n):
        assert mc.line() == f"VALUE k{i} {i} {len(str(i))}".encode()
        assert mc.line() == str(i).encode()
        assert mc.line() == b"END"


def test_split_packets_byte_by_byte(mc):
    req = mc.request("set split 5 0 10", "0123456789") + b"gets split\r\n" + \
        b"mg split v f\r\n"
    for i in range(len(req)):
        mc.send(req[i:i + 1])
        time.sleep(0.001)
    assert mc.line() == b"STORED"
    assert mc.values()[0][:3] == (b"split", 5, b"0123456789")
    assert mc.line() == b"VA 10 f5"
    assert mc.data(10) == b"0123456789"


def test_large_value_in_small_pieces(mc):
    value = bytes(range(256)) * 2048  # 512 KiB
    req = mc.request(f"set big 0 0 {len(value)}", value)
    for i in range(0, len(req), 1000):
        mc.send(req[i:i + 1000])
    assert mc.line() == b"STORED"
    assert mc.get_one("big") == value


# --- one keyspace with the RESP door ----------------------------------------------------------------


def test_memcached_set_visible_to_resp(mc, resp):
    mc.store("set", "k", "from-mc", flags=9, exptime=100)
    assert resp.get("k") == b"from-mc"
    assert 98 <= resp.ttl("k") <= 100
    assert resp.type("k") == b"string"


def test_resp_set_visible_to_memcached(mc, resp):
    resp.set("r", "from-resp")
    assert mc.get("r") == {b"r": (0, b"from-resp", None)}
    resp.set("t", "x", ex=50)
    head, _ = mc.meta("mg t t")
    assert head in (b"HD t50", b"HD t49")
    resp.expire("r", 70)
    head, _ = mc.meta("mg r t")
    assert head in (b"HD t70", b"HD t69")
    resp.persist("r")
    assert mc.meta("mg r t")[0] == b"HD t-1"
    # A RESP SET over a flagged memcached item stores a new value: flags 0, no TTL.
    mc.store("set", "f", "mc", flags=42, exptime=100)
    resp.set("f", "resp")
    assert mc.get("f") == {b"f": (0, b"resp", None)}
    assert resp.ttl("f") == -1
    # APPEND keeps them (the item is modified, not replaced), as memcached's append does.
    mc.store("set", "a", "mc", flags=42)
    resp.append("a", "+")
    assert mc.get("a") == {b"a": (42, b"mc+", None)}


def test_resp_write_breaks_memcached_cas(mc, resp):
    mc.store("set", "k", "v1")
    _, cas = mc.gets("k")
    resp.set("k", "resp")
    assert mc.store("cas", "k", "v2", cas=cas) == b"EXISTS"
    _, cas = mc.gets("k")
    resp.append("k", "!")
    assert mc.store("cas", "k", "v2", cas=cas) == b"EXISTS"
    _, cas = mc.gets("k")
    resp.delete("k")
    assert mc.store("cas", "k", "v2", cas=cas) == b"NOT_FOUND"


def test_resp_incr_and_memcached_incr_share_the_value(mc, resp):
    resp.set("n", 10)
    assert mc.call("incr n 5") == b"15"
    assert resp.incr("n") == 16
    assert mc.call("decr n 20") == b"0"


def test_memcached_uses_database_zero(mc_server, mc):
    r1 = mc_server.client(protocol=2, db=1)
    r1.set("only-in-1", "x")
    assert mc.get("only-in-1") == {}
    mc.store("set", "in-0", "y")
    assert r1.get("in-0") is None
    assert mc_server.client(protocol=2, db=0).get("in-0") == b"y"
    r1.flushdb()


def test_client_list_and_kill(mc_server, mc):
    assert mc.call("version") == b"VERSION 1.6.18"
    admin = mc_server.raw()
    listing = admin.call("CLIENT", "LIST").decode()
    line = next(x for x in listing.splitlines() if f"laddr=127.0.0.1:{mc_server.mc_port} " in x)
    cid = line.split("id=")[1].split(" ")[0]
    assert "lib-name=memcached-text" in line
    assert admin.call("CLIENT", "KILL", "ID", cid) == 1
    assert mc.is_closed()


def test_maxclients_applies(start_server):
    srv = start_with_door(start_server, "--maxclients", "2")
    admin = srv.raw()
    # The startup check's connection may still be counted for a moment.
    assert wait_for(lambda: b"connected_clients:1\r" in admin.call("INFO", "clients"))
    keep = [admin, McText(srv.mc_port)]
    assert keep[1].call("version") == b"VERSION 1.6.18"
    extra = McText(srv.mc_port)
    assert extra.line() == b"ERROR Too many open connections"
    assert extra.is_closed()
    assert int(keep[1].stats()["rejected_connections"]) == 1


def test_disabled_door(start_server):
    srv = start_server()  # the fixture passes --memcached-port 0
    assert srv.raw().call("PING") == "PONG"


# --- memccapable ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-a", "-b"], ids=["ascii", "binary"])
def test_memccapable(mc_server, flag):
    tool = shutil.which("memccapable") or shutil.which("memcapable")
    if tool is None:
        pytest.fail("memccapable not installed (scripts/test installs libmemcached-tools)")
    out = subprocess.run([tool, "-h", "127.0.0.1", "-p", str(mc_server.mc_port), flag],
                         capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    # Its exit code is 0 even when it cannot connect: the verdict is this line.
    assert "All tests passed" in text, text


def test_stores_refused_over_maxmemory(start_server):
    """noeviction at maxmemory: memcached's out-of-memory answers; reads still work."""
    srv = start_with_door(start_server, "--maxmemory", "1000")
    c, b = McText(srv.mc_port), McBin(srv.mc_port)
    assert c.store("set", "k", "v") == b"SERVER_ERROR out of memory storing object"
    assert c.meta("ms k 1", "v")[0] == b"SERVER_ERROR out of memory storing object"
    r = b.set("k", "v")
    assert (r.status, r.value) == (0x82, b"Out of memory")
    assert c.get("k") == {}
    assert c.call("delete k") == b"NOT_FOUND"
    assert int(c.stats()["store_no_memory"]) == 3


def test_list_key_is_invisible_to_memcached(mc, resp):
    """A key of another RESP type is a miss for memcached; commands that would create or
    change an item leave it alone; set replaces it as RESP SET does (docs/memcached.md)."""
    resp.rpush("l", "a", "b")
    assert mc.get("l") == {}
    assert mc.meta("mg l v")[0] == b"EN"
    assert mc.meta("mg l v N30")[0] == b"EN"
    assert mc.store("add", "l", "x") == b"NOT_STORED"
    assert mc.store("replace", "l", "x") == b"NOT_STORED"
    assert mc.store("append", "l", "x") == b"NOT_STORED"
    assert mc.store("cas", "l", "x", cas=1) == b"NOT_FOUND"
    assert mc.call("incr l 1") == b"NOT_FOUND"
    assert mc.call("delete l") == b"NOT_FOUND"
    assert mc.call("touch l 10") == b"NOT_FOUND"
    assert mc.meta("ma l N0")[0] == b"NS"
    assert resp.lrange("l", 0, -1) == [b"a", b"b"]
    assert mc.store("set", "l", "now a string") == b"STORED"
    assert resp.type("l") == b"string"


def test_eviction_policy_makes_room_for_stores(start_server):
    srv = start_with_door(start_server, "--maxmemory", "4mb", "--maxmemory-policy",
                          "allkeys-lru")
    c = McText(srv.mc_port)
    value = b"x" * 1000
    n = 20_000  # 20 MB of values against a 4 MB limit
    c.send(b"".join(c.request(f"set k{i} 0 0 {len(value)} noreply", value) for i in range(n)))
    assert c.call("version") == b"VERSION 1.6.18"
    s = c.stats()
    assert int(s["store_no_memory"]) == 0
    assert int(s["evictions"]) > 0
    assert int(s["curr_items"]) < n
    assert c.get_one(f"k{n - 1}") == value
    assert c.stats("settings")["evictions"] == "on"


# --- CLIENT PAUSE (from the RESP door) --------------------------------------------------------


def test_client_pause_write_holds_memcached_writes_not_reads(mc_server, resp):
    text, binary, reader = McText(mc_server.mc_port), McBin(mc_server.mc_port), \
        McText(mc_server.mc_port)
    try:
        assert text.store("set", "paused-k", "v0") == b"STORED"
        assert resp.execute_command("CLIENT", "PAUSE", "5000", "WRITE") == b"OK"
        try:
            text.send("set paused-k 0 0 2\r\nv1\r\nget paused-k\r\n")
            binary.send(packet("set", "paused-k", "v2", store_extras()) + packet("noop"))
            assert text.idle(0.3) == b"", "a text write ran during CLIENT PAUSE WRITE"
            # Reads from other connections go on, and see the value from before the pause.
            assert reader.get_one("paused-k") == b"v0"
            assert reader.meta("mg paused-k v")[1] == b"v0"
            assert reader.stats()["pid"]
            # A meta get that touches is a write: held.
            reader.send("mg paused-k v T30\r\n")
            assert reader.idle(0.2) == b""
        finally:
            assert resp.execute_command("CLIENT", "UNPAUSE") == b"OK"
        # Each connection's held requests then run in order.
        assert text.line() == b"STORED"
        assert text.values()[0][2] in (b"v1", b"v2")
        r = binary.read()
        assert (r.opcode, r.status) == (OP["set"], SUCCESS)
        assert binary.read().opcode == OP["noop"]
        assert reader.line().startswith(b"VA 2")
        assert reader.line() in (b"v1", b"v2")
        assert text.get_one("paused-k") in (b"v1", b"v2")
    finally:
        text.close()
        binary.close()
        reader.close()


def test_client_pause_all_holds_memcached_reads_until_the_deadline(mc_server, resp):
    c, b = McText(mc_server.mc_port), McBin(mc_server.mc_port)
    try:
        assert c.store("set", "paused-all", "v") == b"STORED"
        start = time.monotonic()
        assert resp.execute_command("CLIENT", "PAUSE", "400", "ALL") == b"OK"
        c.send("get paused-all\r\n")
        b.send(packet("version"))
        assert c.idle(0.2) == b"", "a read ran during CLIENT PAUSE ALL"
        assert c.values()[0][2] == b"v"
        assert b.read().value == b"1.6.18"
        assert time.monotonic() - start >= 0.35
    finally:
        c.close()
        b.close()
