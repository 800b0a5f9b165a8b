"""The memcached door, binary protocol: every opcode and its quiet variant over raw
struct-packed sockets (opaque and CAS echo, status codes, quiet rules, malformed packets),
and the python-binary-memcached client from PyPI (tests/requirements.txt)."""

from __future__ import annotations

import struct
import time

import pytest

from test_memcached_support import (  # noqa: F401  (fixtures)
    EXISTS,
    HEADER,
    INVALID,
    NON_NUMERIC,
    NOT_FOUND,
    NOT_STORED,
    OP,
    SUCCESS,
    TOO_LARGE,
    UNKNOWN_COMMAND,
    McBin,
    McText,
    counter_extras,
    mc_server,
    mcb,
    mcd,
    packet,
    store_extras,
    wait_for,
)

pytestmark = pytest.mark.larder_only


# --- get family -----------------------------------------------------------------------------------


def test_set_get_echo_opaque_cas_flags(mcb):
    r = mcb.call("set", "k", "hello", store_extras(0xCAFEBABE, 0), opaque=0x11223344)
    assert (r.status, r.opcode, r.opaque) == (SUCCESS, OP["set"], 0x11223344)
    assert r.cas != 0 and r.value == b"" and r.key == b""
    g = mcb.call("get", "k", opaque=7)
    assert (g.status, g.opaque, g.cas, g.flags, g.value, g.key) == (
        SUCCESS, 7, r.cas, 0xCAFEBABE, b"hello", b"")
    gk = mcb.call("getk", "k")
    assert (gk.key, gk.value) == (b"k", b"hello")


def test_get_misses(mcb):
    r = mcb.call("get", "nope", opaque=9)
    assert (r.status, r.opaque, r.value) == (NOT_FOUND, 9, b"Not found")
    r = mcb.call("getk", "nope")
    assert (r.status, r.key, r.value) == (NOT_FOUND, b"nope", b"")


def test_quiet_gets_and_noop(mcb):
    mcb.set("a", "1")
    mcb.set("b", "2")
    mcb.send(packet("getq", "a", opaque=1) + packet("getq", "nope", opaque=2) +
             packet("getkq", "b", opaque=3) + packet("getkq", "nope", opaque=4))
    got = mcb.until_noop()
    assert [(r.opcode, r.opaque, r.key, r.value) for r in got] == [
        (OP["getq"], 1, b"", b"1"), (OP["getkq"], 3, b"b", b"2")]


def test_touch_gat_family_keeps_cas(mcb, mc_server):
    cas = mcb.set("k", "v", flags=5).cas
    r = mcb.call("touch", "k", extras=struct.pack(">I", 100))
    assert (r.status, r.cas, r.flags, r.value) == (SUCCESS, cas, 5, b"")
    assert 98 <= mc_server.client(protocol=2).ttl("k") <= 100
    r = mcb.call("gat", "k", extras=struct.pack(">I", 200))
    assert (r.status, r.cas, r.value, r.key) == (SUCCESS, cas, b"v", b"")
    r = mcb.call("gatk", "k", extras=struct.pack(">I", 200))
    assert (r.key, r.value) == (b"k", b"v")
    mcb.send(packet("gatq", "k", extras=struct.pack(">I", 300), opaque=1) +
             packet("gatq", "nope", extras=struct.pack(">I", 300), opaque=2) +
             packet("gatkq", "k", extras=struct.pack(">I", 300), opaque=3) +
             packet("gatkq", "nope", extras=struct.pack(">I", 300), opaque=4))
    got = mcb.until_noop()
    assert [(r.opcode, r.opaque, r.key) for r in got] == [
        (OP["gatq"], 1, b""), (OP["gatkq"], 3, b"k")]
    assert 298 <= mc_server.client(protocol=2).ttl("k") <= 300
    assert mcb.call("touch", "nope", extras=struct.pack(">I", 1)).status == NOT_FOUND
    assert mcb.call("gat", "nope", extras=struct.pack(">I", 1)).status == NOT_FOUND
    r = mcb.call("gatk", "nope", extras=struct.pack(">I", 1))
    assert (r.status, r.key) == (NOT_FOUND, b"nope")


# --- storage --------------------------------------------------------------------------------------


def test_add_replace_cas(mcb):
    assert mcb.set("k", "x", op="replace").status == NOT_FOUND
    r = mcb.set("k", "a", op="add")
    assert r.status == SUCCESS
    r2 = mcb.set("k", "b", op="add")
    assert (r2.status, r2.value) == (EXISTS, b"Data exists for key.")
    assert mcb.set("k", "c", op="replace").status == SUCCESS
    cas = mcb.call("get", "k").cas
    # A header CAS turns set/add/replace into a CAS store.
    assert mcb.set("k", "d", cas=cas + 1).status == EXISTS
    assert mcb.set("nope", "d", cas=5).status == NOT_FOUND
    r = mcb.set("k", "d", cas=cas)
    assert r.status == SUCCESS and r.cas != cas
    assert mcb.set("k", "e", cas=cas, op="replace").status == EXISTS


def test_append_prepend(mcb):
    r = mcb.call("append", "k", "x")
    assert (r.status, r.value) == (NOT_STORED, b"Not stored.")
    assert mcb.call("prepend", "k", "x").status == NOT_STORED
    mcb.set("k", "mid", flags=3, exptime=100)
    assert mcb.call("append", "k", ">").status == SUCCESS
    cas = mcb.call("prepend", "k", "<").cas
    g = mcb.call("get", "k")
    assert (g.value, g.flags, g.cas) == (b"<mid>", 3, cas)
    assert mcb.call("append", "k", "!", cas=cas + 1).status == EXISTS
    assert mcb.call("append", "k", "!", cas=cas).status == SUCCESS


def test_quiet_storage_is_silent_but_errors_are_not(mcb):
    mcb.send(packet("setq", "a", "1", store_extras(), opaque=1) +
             packet("addq", "a", "2", store_extras(), opaque=2) +       # exists: answered
             packet("replaceq", "a", "3", store_extras(), opaque=3) +
             packet("replaceq", "zz", "3", store_extras(), opaque=4) +  # not found
             packet("appendq", "a", "4", opaque=5) +
             packet("prependq", "a", "0", opaque=6) +
             packet("appendq", "zz", "4", opaque=7) +                   # not stored
             packet("deleteq", "zz", opaque=8) +                        # not found
             packet("incrq", "a", extras=counter_extras(1), opaque=9) +
             packet("decrq", "zz", extras=counter_extras(1, 0, 0xFFFFFFFF), opaque=10))
    got = mcb.until_noop()
    assert [(r.opaque, r.status) for r in got] == [
        (2, EXISTS), (4, NOT_FOUND), (7, NOT_STORED), (8, NOT_FOUND), (10, NOT_FOUND)]
    assert mcb.call("get", "a").value == b"35"


def test_delete(mcb):
    assert mcb.call("delete", "k").status == NOT_FOUND
    cas = mcb.set("k", "v").cas
    assert mcb.call("delete", "k", cas=cas + 1).status == EXISTS
    r = mcb.call("delete", "k", cas=cas)
    assert (r.status, r.value) == (SUCCESS, b"")
    assert mcb.call("get", "k").status == NOT_FOUND
    mcb.set("q", "v")
    mcb.send(packet("deleteq", "q"))
    assert mcb.until_noop() == []


# --- counters -------------------------------------------------------------------------------------


def test_incr_decr(mcb):
    # Missing with exptime 0xffffffff: not found.
    r = mcb.call("incr", "n", extras=counter_extras(1, 5, 0xFFFFFFFF))
    assert r.status == NOT_FOUND
    # Missing otherwise: created with the initial value (the delta is not applied).
    r = mcb.call("incr", "n", extras=counter_extras(10, 5, 0))
    assert (r.status, r.number) == (SUCCESS, 5)
    cas = r.cas
    r = mcb.call("incr", "n", extras=counter_extras(10))
    assert r.number == 15 and r.cas != cas
    assert mcb.call("decr", "n", extras=counter_extras(100)).number == 0
    assert mcb.call("incr", "n", extras=counter_extras(2**64 - 1)).number == 2**64 - 1
    assert mcb.call("incr", "n", extras=counter_extras(3)).number == 2
    assert mcb.call("get", "n").value == b"2"
    mcb.set("s", "abc")
    r = mcb.call("incr", "s", extras=counter_extras(1))
    assert (r.status, r.value) == (NON_NUMERIC, b"Non-numeric server-side value for incr or decr")
    cas = mcb.call("get", "n").cas
    assert mcb.call("incr", "n", extras=counter_extras(1), cas=cas + 1).status == EXISTS
    assert mcb.call("incr", "n", extras=counter_extras(1), cas=cas).number == 3
    # Created with an exptime.
    mcb.call("decr", "ttl", extras=counter_extras(1, 9, 100))
    g = mcb.call("get", "ttl")
    assert (g.value, g.flags) == (b"9", 0)


# --- misc opcodes ---------------------------------------------------------------------------------


def test_noop_version_stat(mcb):
    r = mcb.call("noop", opaque=3)
    assert (r.status, r.opaque, r.value) == (SUCCESS, 3, b"")
    assert mcb.call("version").value == b"1.6.18"
    mcb.send(packet("stat", opaque=5))
    stats = {}
    while True:
        r = mcb.read()
        assert r.opaque == 5
        if not r.key:
            break
        stats[r.key.decode()] = r.value.decode()
    assert stats["version"] == "1.6.18" and "curr_items" in stats and "pid" in stats
    mcb.send(packet("stat", "settings"))
    names = []
    while (r := mcb.read()).key:
        names.append(r.key)
    assert b"item_size_max" in names
    mcb.send(packet("stat", "reset"))
    assert mcb.read().key == b""
    assert mcb.call("stat", "bogus").status == NOT_FOUND


def test_flush_and_flushq(mcb, mc_server):
    mcb.set("a", "1")
    assert mcb.call("flush").status == SUCCESS
    assert mcb.call("get", "a").status == NOT_FOUND
    mcb.set("b", "1")
    mcb.send(packet("flushq"))
    assert mcb.until_noop() == []
    assert mcb.call("get", "b").status == NOT_FOUND
    # With a delay in the extras.
    mcb.set("c", "1")
    assert mcb.call("flush", extras=struct.pack(">I", 1)).status == SUCCESS
    assert mcb.call("get", "c").status == SUCCESS
    r = mc_server.client(protocol=2)
    assert wait_for(lambda: r.exists("c") == 0, timeout=4)


def test_quit_and_quitq(mc_server):
    c = McBin(mc_server.mc_port)
    r = c.call("quit", opaque=4)
    assert (r.status, r.opaque, r.opcode) == (SUCCESS, 4, OP["quit"])
    assert c.is_closed()
    c = McBin(mc_server.mc_port)
    c.send(packet("quitq"))
    assert c.is_closed()
    assert c.buf == b""


# --- limits and malformed packets -----------------------------------------------------------------


def test_unknown_opcodes_answered_and_skipped(mcb):
    for op in (OP["verbosity"], 0x50, 0xFF):
        r = mcb.call(op, "key", "value", opaque=op)
        assert (r.status, r.opcode, r.opaque, r.value) == (
            UNKNOWN_COMMAND, op, op, b"Unknown command")
    # SASL is served (PLAIN), as by `memcached -S` (test_memcached_auth.py).
    r = mcb.call("sasl_list", opaque=1)
    assert (r.status, r.opaque, r.value) == (SUCCESS, 1, b"PLAIN")
    assert mcb.call("version").value == b"1.6.18"


def test_value_too_large_is_skipped(mcb):
    big = b"x" * (1024 * 1024 + 1)
    mcb.send(packet("set", "big", big, store_extras(), opaque=1) + packet("noop", opaque=2))
    r = mcb.read()
    assert (r.status, r.opaque, r.value) == (TOO_LARGE, 1, b"Too large.")
    assert mcb.read().opaque == 2
    # Quiet variants answer errors too.
    mcb.send(packet("setq", "big", big, store_extras(), opaque=3))
    assert mcb.read().status == TOO_LARGE
    # The largest value memcached stores under key "ok" with -I 1m (header, key, CAS).
    ok = b"y" * (1024 * 1024 - 61)
    assert mcb.call("set", "ok", ok, store_extras()).status == SUCCESS


def test_bad_lengths_close(mc_server):
    c = McBin(mc_server.mc_port)
    # GET with extras is invalid: status 4, then the connection closes.
    r = c.call("get", "k", extras=b"xxxx")
    assert r.status == INVALID
    assert c.is_closed()
    c = McBin(mc_server.mc_port)
    key = b"k" * 251
    r = c.call("get", key)
    assert r.status == INVALID
    assert c.is_closed()
    # key + extras longer than the body.
    c = McBin(mc_server.mc_port)
    c.send(HEADER.pack(0x80, 0, 10, 0, 0, 0, 5, 0, 0) + b"12345")
    assert c.read().status == UNKNOWN_COMMAND
    assert c.is_closed()


def test_bad_magic_closes_silently(mc_server):
    c = McBin(mc_server.mc_port)
    c.send(packet("noop"))
    assert c.read().status == SUCCESS
    c.send(packet("noop", magic=0x81))
    assert c.is_closed()
    assert c.buf == b""


def test_pipelined_and_split_binary(mcb):
    n = 5000
    mcb.send(b"".join(packet("setq", f"k{i}", str(i), store_extras(i)) for i in range(n)))
    assert mcb.until_noop() == []
    req = b"".join(packet("getk", f"k{i}", opaque=i) for i in range(0, n, 7))
    for i in range(0, len(req), 5):
        mcb.send(req[i:i + 5])
    for i in range(0, n, 7):
        r = mcb.read()
        assert (r.opaque, r.key, r.value, r.flags) == (i, f"k{i}".encode(), str(i).encode(), i)


def test_garbage_binary_does_not_hurt(mc_server):
    import random
    rng = random.Random(11)
    for _ in range(30):
        c = McBin(mc_server.mc_port)
        header = bytearray(rng.randbytes(24))
        header[0] = 0x80
        try:
            c.send(bytes(header) + rng.randbytes(rng.randrange(0, 200)))
            c.is_closed(0.05)
        except OSError:
            pass
        c.close()
    assert McBin(mc_server.mc_port).call("version").value == b"1.6.18"


# --- cross-door -----------------------------------------------------------------------------------


def test_binary_sees_resp_and_text(mcb, mc_server):
    r = mc_server.client(protocol=2)
    r.set("resp", "x")
    g = mcb.call("get", "resp")
    assert (g.value, g.flags) == (b"x", 0)
    cas = g.cas
    r.set("resp", "y")
    assert mcb.set("resp", "z", cas=cas).status == EXISTS
    text = McText(mc_server.mc_port)
    text.store("set", "t", "from-text", flags=12)
    g = mcb.call("get", "t")
    assert (g.value, g.flags, g.cas) == (b"from-text", 12, text.gets("t")[1])


# --- a binary client from PyPI ----------------------------------------------------------------------


def test_python_binary_memcached_client(mc_server):
    import bmemcached  # tests/requirements.txt
    c = bmemcached.Client((f"127.0.0.1:{mc_server.mc_port}",))
    try:
        assert c.set("k", "v1") is True
        assert c.get("k") == "v1"
        value, cas = c.gets("k")
        assert value == "v1" and cas > 0
        assert c.cas("k", "v2", cas) is True
        assert c.cas("k", "v3", cas) is False
        assert c.add("k", "x") is False
        assert c.replace("k", "y") is True
        assert c.set("n", 5) is True
        assert c.incr("n", 2) == 7
        assert c.decr("n", 10) == 0
        assert c.set_multi({"a": 1, "b": "two", "c": b"\x00bytes"}) == []
        assert c.get_multi(["a", "b", "c", "missing"]) == {"a": 1, "b": "two", "c": b"\x00bytes"}
        assert c.delete("k") is True
        assert c.get("k") is None
        assert c.set("ttl", "v", time=100) is True
        assert 98 <= mc_server.client(protocol=2).ttl("ttl") <= 100
        stats = c.stats()[f"127.0.0.1:{mc_server.mc_port}"]
        assert stats["version"] == b"1.6.18"
        assert c.flush_all() is True
        assert c.get("a") is None
    finally:
        c.disconnect_all()


def test_expiry_over_binary(mcb):
    mcb.set("short", "v", exptime=1)
    assert mcb.call("get", "short").status == SUCCESS
    assert wait_for(lambda: mcb.call("get", "short").status == NOT_FOUND, timeout=3)
    month = 60 * 60 * 24 * 30
    mcb.set("past", "v", exptime=month + 1)
    assert mcb.call("get", "past").status == NOT_FOUND
    mcb.set("future", "v", exptime=int(time.time()) + 100)
    assert mcb.call("get", "future").status == SUCCESS
