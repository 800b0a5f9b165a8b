"""Stream consumer groups: XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO
GROUPS / CONSUMERS, in RESP2 and RESP3, against larder and (with --target=redis) Redis 7.0.

Replies are read raw (redis-py's reply callbacks are turned off), so the tests see the server's
shapes: RESP3 maps as dicts, RESP2 maps as flat lists (`as_map` reads either).
"""

from __future__ import annotations

import threading
import time

import pytest
import redis


@pytest.fixture
def c(r: redis.Redis) -> redis.Redis:
    r.response_callbacks.clear()
    return r


def x(c: redis.Redis, *args):
    return c.execute_command(*args)


def as_map(v) -> dict:
    if isinstance(v, dict):
        return v
    return dict(zip(v[0::2], v[1::2]))


def streams_reply(v) -> dict:
    """XREADGROUP's reply as {key: [(id, {field: value}) or (id, None)]}."""
    if v is None:
        return {}
    items = v.items() if isinstance(v, dict) else [(k, e) for k, e in v]
    return {k: [(i, None if f is None else as_map(f)) for i, f in e] for k, e in items}


def setup_stream(c, n: int = 3) -> None:
    for i in range(1, n + 1):
        x(c, "XADD", "s", f"{i}-0", "f", f"v{i}")
    assert x(c, "XGROUP", "CREATE", "s", "g", "0") == b"OK"


def error_of(c, *args) -> str:
    with pytest.raises(redis.ResponseError) as e:
        x(c, *args)
    return str(e.value)


def test_xgroup_create_setid_destroy_and_errors(c):
    assert error_of(c, "XGROUP", "CREATE", "s", "g", "0").startswith(
        "The XGROUP subcommand requires the key to exist.")
    assert x(c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"OK"
    assert x(c, "TYPE", "s") in (b"stream", "stream")
    assert error_of(c, "XGROUP", "CREATE", "s", "g", "0") == \
        "BUSYGROUP Consumer Group name already exists"
    assert error_of(c, "XGROUP", "CREATE", "s", "h", "bad") == \
        "Invalid stream ID specified as stream command argument"
    assert error_of(c, "XGROUP", "SETID", "s", "nope", "0") == \
        "NOGROUP No such consumer group 'nope' for key name 's'"
    assert error_of(c, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "-3") == \
        "value for ENTRIESREAD must be positive or -1"
    assert error_of(c, "XGROUP", "CREATE", "s", "h", "0", "BOGUS") == \
        "unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP."
    assert x(c, "XGROUP", "CREATE", "s", "h", "5-5", "ENTRIESREAD", "3") == b"OK"
    assert x(c, "XGROUP", "SETID", "s", "h", "7-0", "ENTRIESREAD", "9") == b"OK"
    groups = [as_map(g) for g in x(c, "XINFO", "GROUPS", "s")]
    assert [g[b"name"] for g in groups] == [b"g", b"h"]
    assert groups[1][b"last-delivered-id"] == b"7-0"
    assert groups[1][b"entries-read"] == 9
    assert groups[0][b"entries-read"] is None
    assert x(c, "XGROUP", "DESTROY", "s", "h") == 1
    assert x(c, "XGROUP", "DESTROY", "s", "h") == 0
    assert len(x(c, "XGROUP", "HELP")) == 17
    x(c, "SET", "str", "v")
    assert error_of(c, "XGROUP", "CREATE", "str", "g", "0").startswith("WRONGTYPE")


def test_consumers_are_created_and_deleted(c):
    setup_stream(c)
    assert x(c, "XGROUP", "CREATECONSUMER", "s", "g", "alice") == 1
    assert x(c, "XGROUP", "CREATECONSUMER", "s", "g", "alice") == 0
    x(c, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    consumers = [as_map(m) for m in x(c, "XINFO", "CONSUMERS", "s", "g")]
    assert [(m[b"name"], m[b"pending"]) for m in consumers] == [(b"alice", 0), (b"bob", 2)]
    assert all(0 <= m[b"idle"] < 5000 for m in consumers)
    assert x(c, "XGROUP", "DELCONSUMER", "s", "g", "bob") == 2
    assert x(c, "XGROUP", "DELCONSUMER", "s", "g", "bob") == 0
    assert x(c, "XPENDING", "s", "g")[0] == 0
    assert error_of(c, "XINFO", "CONSUMERS", "s", "nope") == \
        "NOGROUP No such consumer group 'nope' for key name 's'"
    assert error_of(c, "XINFO", "CONSUMERS", "nokey", "g") == "no such key"


def test_xreadgroup_new_entries_history_and_noack(c):
    setup_stream(c, 4)
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "a", "COUNT", "2", "STREAMS", "s", ">"))
    assert got == {b"s": [(b"1-0", {b"f": b"v1"}), (b"2-0", {b"f": b"v2"})]}
    # Several consumers get distinct entries.
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "b", "COUNT", "1", "STREAMS", "s", ">"))
    assert got == {b"s": [(b"3-0", {b"f": b"v3"})]}
    # History: only the consumer's own pending entries, after the ID given.
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "0"))
    assert [i for i, _ in got[b"s"]] == [b"1-0", b"2-0"]
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "1-0"))
    assert [i for i, _ in got[b"s"]] == [b"2-0"]
    # A deleted entry shows as its ID with a null.
    x(c, "XDEL", "s", "1-0")
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "0"))
    assert got[b"s"] == [(b"1-0", None), (b"2-0", {b"f": b"v2"})]
    # NOACK delivers without a pending entry.
    got = streams_reply(x(c, "XREADGROUP", "GROUP", "g", "b", "NOACK", "STREAMS", "s", ">"))
    assert got == {b"s": [(b"4-0", {b"f": b"v4"})]}
    assert x(c, "XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">") is None
    rows = x(c, "XPENDING", "s", "g", "-", "+", "10")
    assert [(row[0], row[1], row[3]) for row in rows] == [
        (b"1-0", b"a", 2), (b"2-0", b"a", 4), (b"3-0", b"b", 1)]
    assert error_of(c, "XREADGROUP", "GROUP", "nope", "a", "STREAMS", "s", ">") == \
        "NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option"
    assert error_of(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "$").startswith(
        "The $ ID is meaningless in the context of XREADGROUP")
    assert error_of(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "t", ">").startswith(
        "Unbalanced XREAD list of streams")
    assert error_of(c, "XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", ">") == \
        "Missing GROUP option for XREADGROUP"


def test_xack_and_xpending_summary_and_extended(c):
    setup_stream(c, 3)
    x(c, "XREADGROUP", "GROUP", "g", "a", "COUNT", "2", "STREAMS", "s", ">")
    x(c, "XREADGROUP", "GROUP", "g", "b", "STREAMS", "s", ">")
    summary = x(c, "XPENDING", "s", "g")
    assert summary[:3] == [3, b"1-0", b"3-0"]
    assert summary[3] == [[b"a", b"2"], [b"b", b"1"]]
    rows = x(c, "XPENDING", "s", "g", "-", "+", "10", "b")
    assert [r[0] for r in rows] == [b"3-0"]
    assert x(c, "XPENDING", "s", "g", "(1-0", "+", "1") [0][0] == b"2-0"
    assert x(c, "XPENDING", "s", "g", "IDLE", "3600000", "-", "+", "10") == []
    assert len(x(c, "XPENDING", "s", "g", "IDLE", "0", "-", "+", "10")) == 3
    assert x(c, "XPENDING", "s", "g", "-", "+", "10", "nobody") == []
    assert x(c, "XACK", "s", "g", "1-0", "3-0", "9-9") == 2
    assert x(c, "XACK", "s", "g", "1-0") == 0
    assert x(c, "XACK", "s", "nope", "1-0") == 0
    assert error_of(c, "XACK", "s", "g", "2-0", "bad") == \
        "Invalid stream ID specified as stream command argument"
    assert x(c, "XPENDING", "s", "g")[0] == 1
    x(c, "XACK", "s", "g", "2-0")
    assert x(c, "XPENDING", "s", "g") == [0, None, None, None]
    assert error_of(c, "XPENDING", "s", "nope") == "NOGROUP No such key 's' or consumer group 'nope'"
    assert error_of(c, "XPENDING", "s", "g", "-", "+") == "syntax error"


def test_xclaim_options(c):
    setup_stream(c, 3)
    x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    # Too recently delivered: nothing claimed.
    assert x(c, "XCLAIM", "s", "g", "b", "3600000", "1-0") == []
    got = x(c, "XCLAIM", "s", "g", "b", "0", "1-0", "IDLE", "5000")
    assert [(i, as_map(f)) for i, f in got] == [(b"1-0", {b"f": b"v1"})]
    row = x(c, "XPENDING", "s", "g", "-", "+", "10", "b")[0]
    assert row[1] == b"b" and 5000 <= row[2] < 10000 and row[3] == 2
    assert x(c, "XCLAIM", "s", "g", "c", "0", "2-0", "RETRYCOUNT", "9", "JUSTID") == [b"2-0"]
    assert x(c, "XPENDING", "s", "g", "2-0", "2-0", "1")[0][3] == 9
    assert x(c, "XCLAIM", "s", "g", "c", "0", "3-0", "JUSTID") == [b"3-0"]
    assert x(c, "XPENDING", "s", "g", "3-0", "3-0", "1")[0][3] == 1
    # TIME in the past sets the delivery time; FORCE makes a non-pending entry pending.
    x(c, "XACK", "s", "g", "3-0")
    assert x(c, "XCLAIM", "s", "g", "d", "0", "3-0") == []
    ms = int(time.time() * 1000) - 60000
    assert x(c, "XCLAIM", "s", "g", "d", "0", "3-0", "FORCE", "TIME", str(ms), "JUSTID") == \
        [b"3-0"]
    row = x(c, "XPENDING", "s", "g", "3-0", "3-0", "1")[0]
    assert row[1] == b"d" and 60000 <= row[2] < 70000 and row[3] == 1
    # LASTID moves the group forward only.
    x(c, "XCLAIM", "s", "g", "d", "0", "3-0", "LASTID", "8-0")
    assert as_map(x(c, "XINFO", "GROUPS", "s")[0])[b"last-delivered-id"] == b"8-0"
    # A pending entry deleted from the stream is dropped, not claimed.
    x(c, "XDEL", "s", "1-0")
    assert x(c, "XCLAIM", "s", "g", "d", "0", "1-0") == []
    assert [r[0] for r in x(c, "XPENDING", "s", "g", "-", "+", "10")] == [b"2-0", b"3-0"]
    assert error_of(c, "XCLAIM", "s", "g", "d", "x", "1-0") == \
        "Invalid min-idle-time argument for XCLAIM"
    assert error_of(c, "XCLAIM", "s", "g", "d", "0", "1-0", "BOGUS") == \
        "Unrecognized XCLAIM option 'BOGUS'"
    assert error_of(c, "XCLAIM", "s", "nope", "d", "0", "1-0") == \
        "NOGROUP No such key 's' or consumer group 'nope'"


def test_xautoclaim_walks_the_pel_and_reports_deleted_entries(c):
    setup_stream(c, 5)
    x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    x(c, "XDEL", "s", "2-0")
    nxt, claimed, deleted = x(c, "XAUTOCLAIM", "s", "g", "b", "0", "0", "COUNT", "2")
    assert [i for i, _ in claimed] == [b"1-0"] and deleted == [b"2-0"] and nxt == b"3-0"
    nxt, claimed, deleted = x(c, "XAUTOCLAIM", "s", "g", "b", "0", nxt, "JUSTID")
    assert claimed == [b"3-0", b"4-0", b"5-0"] and deleted == [] and nxt == b"0-0"
    rows = x(c, "XPENDING", "s", "g", "-", "+", "10")
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (b"1-0", b"b", 2), (b"3-0", b"b", 1), (b"4-0", b"b", 1), (b"5-0", b"b", 1)]
    assert x(c, "XAUTOCLAIM", "s", "g", "c", "3600000", "0") == [b"0-0", [], []]
    assert error_of(c, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0") == \
        "COUNT must be > 0"
    assert error_of(c, "XAUTOCLAIM", "s", "nope", "c", "0", "0") == \
        "NOGROUP No such key 's' or consumer group 'nope'"


def test_xinfo_lag_and_stream_full(c):
    setup_stream(c, 3)
    x(c, "XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "s", ">")
    g = as_map(x(c, "XINFO", "GROUPS", "s")[0])
    assert (g[b"consumers"], g[b"pending"], g[b"entries-read"], g[b"lag"]) == (1, 1, 1, 2)
    full = as_map(x(c, "XINFO", "STREAM", "s", "FULL"))
    fg = as_map(full[b"groups"][0])
    assert fg[b"name"] == b"g" and fg[b"pel-count"] == 1 and fg[b"lag"] == 2
    assert fg[b"pending"][0][:2] == [b"1-0", b"a"] and fg[b"pending"][0][3] == 1
    cons = as_map(fg[b"consumers"][0])
    assert cons[b"name"] == b"a" and cons[b"pel-count"] == 1
    assert cons[b"pending"][0][0] == b"1-0"


def test_blocking_xreadgroup_is_woken_by_xadd(server, protocol):
    c = server.client(protocol=protocol)
    c.response_callbacks.clear()
    setup_stream(c, 1)
    x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    out = {}

    def reader(name: str) -> None:
        cl = server.client(protocol=protocol)
        cl.response_callbacks.clear()
        out[name] = streams_reply(
            x(cl, "XREADGROUP", "GROUP", "g", name, "BLOCK", "5000", "STREAMS", "s", ">"))

    threads = [threading.Thread(target=reader, args=(n,)) for n in ("b", "c")]
    for t in threads:
        t.start()
        time.sleep(0.2)
    x(c, "XADD", "s", "2-0", "f", "v2")
    x(c, "XADD", "s", "3-0", "f", "v3")
    for t in threads:
        t.join(10)
    got = sorted(i for r in out.values() for i, _ in r[b"s"])
    assert got == [b"2-0", b"3-0"]
    # Each got one distinct entry, the first to block the first one.
    assert [i for i, _ in out["b"][b"s"]] == [b"2-0"]
    # A timeout answers a null.
    t0 = time.time()
    assert x(c, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "100", "STREAMS", "s", ">") is None
    assert time.time() - t0 >= 0.09


@pytest.mark.parametrize("how", ["destroy", "del"])
def test_blocked_xreadgroup_when_group_or_stream_goes(server, how):
    c = server.client()
    c.response_callbacks.clear()
    setup_stream(c, 1)
    x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    err = {}

    def reader() -> None:
        cl = server.client()
        try:
            x(cl, "XREADGROUP", "GROUP", "g", "b", "BLOCK", "5000", "STREAMS", "s", ">")
        except redis.ResponseError as e:
            err["e"] = str(e)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    if how == "destroy":
        x(c, "XGROUP", "DESTROY", "s", "g")
    else:
        x(c, "DEL", "s")
    t.join(10)
    want = {
        "destroy": "NOGROUP the consumer group this client was blocked on no longer exists",
        "del": "UNBLOCKED the stream key no longer exists",
    }[how]
    assert err.get("e") == want


@pytest.mark.larder_only
def test_groups_survive_a_restart(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    c.response_callbacks.clear()
    setup_stream(c, 5)
    x(c, "XREADGROUP", "GROUP", "g", "a", "COUNT", "2", "STREAMS", "s", ">")
    x(c, "XREADGROUP", "GROUP", "g", "b", "NOACK", "COUNT", "1", "STREAMS", "s", ">")
    x(c, "XREADGROUP", "GROUP", "g", "b", "COUNT", "1", "STREAMS", "s", ">")
    x(c, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", "0")
    x(c, "XCLAIM", "s", "g", "c", "0", "2-0", "RETRYCOUNT", "5")
    x(c, "XACK", "s", "g", "1-0")

    def state(cl):
        g = as_map(x(cl, "XINFO", "GROUPS", "s")[0])
        pel = [(r[0], r[1], r[3]) for r in x(cl, "XPENDING", "s", "g", "-", "+", "100")]
        names = [as_map(m)[b"name"] for m in x(cl, "XINFO", "CONSUMERS", "s", "g")]
        return g[b"last-delivered-id"], g[b"entries-read"], pel, names

    before = state(c)
    assert before[0] == b"4-0" and before[2] == [(b"2-0", b"c", 5), (b"4-0", b"b", 1)]
    srv.kill()
    srv = srv.start()
    c2 = srv.client()
    c2.response_callbacks.clear()
    assert state(c2) == before
