"""Streams without consumer groups: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD
(with BLOCK) XINFO STREAM, keyspace events, and the generic commands on a stream.

Replies are read raw (`rawp`, once per protocol) where their shape matters. Every test not
marked `larder_only` also runs against Redis 7.0 (`--target=redis`).
"""

from __future__ import annotations

import threading
import time

import pytest
import requests

from conftest import Err, Simple, start_with_http

INVALID_ID = Err("ERR Invalid stream ID specified as stream command argument")
WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = Err("ERR syntax error")


def e(i, *fields):
    """An entry as replied: [id, [field, value, ...]]."""
    return [i.encode(), [f.encode() for f in fields]]


# --- XADD ----------------------------------------------------------------------------------

def test_xadd_ids(rawp):
    assert rawp.call("XADD", "s", "1-1", "a", "1") == b"1-1"
    assert rawp.call("XADD", "s", "1-*", "a", "2") == b"1-2"
    assert rawp.call("XADD", "s", "2", "a", "3") == b"2-0"
    assert rawp.call("XADD", "s", "2-*", "a", "3") == b"2-1"
    auto = rawp.call("XADD", "s", "*", "a", "4")
    ms, seq = auto.split(b"-")
    assert int(ms) > 1_000_000_000_000 and seq == b"0"
    assert rawp.call("XADD", "s", "2-5", "a", "1") == Err(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item")
    assert rawp.call("XADD", "s", "1-*", "a", "1") == Err(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item")
    assert rawp.call("XADD", "z", "0-0", "a", "1") == Err(
        "ERR The ID specified in XADD must be greater than 0-0")
    assert rawp.call("EXISTS", "z") == 0
    assert rawp.call("XADD", "z", "0-*", "a", "1") == b"0-1"
    assert rawp.call("XLEN", "s") == 5
    assert rawp.call("XLEN", "none") == 0


@pytest.mark.parametrize("bad", ["abc", "1-x", "-1", "1-", "-", "+", "1-2-3", "(1"])
def test_xadd_invalid_ids(rawp, bad):
    assert rawp.call("XADD", "s", bad, "a", "1") == INVALID_ID


def test_xadd_arity_and_options(rawp):
    arity = Err("ERR wrong number of arguments for 'xadd' command")
    assert rawp.call("XADD", "s", "*", "a") == arity
    assert rawp.call("XADD", "s", "*", "a", "1", "b") == arity
    assert rawp.call("XADD", "s", "NOMKSTREAM", "MAXLEN", "5") == arity
    assert rawp.call("XADD", "s", "NOMKSTREAM", "*", "a", "1") is None
    assert rawp.call("EXISTS", "s") == 0
    assert rawp.call("XADD", "s", "MAXLEN", "-1", "*", "a", "1") == Err(
        "ERR The MAXLEN argument must be >= 0.")
    assert rawp.call("XADD", "s", "MAXLEN", "x", "*", "a", "1") == Err(
        "ERR value is not an integer or out of range")
    assert rawp.call("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "a", "1") == Err(
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    assert rawp.call("XADD", "s", "LIMIT", "10", "*", "a", "1") == Err(
        "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    assert rawp.call("XADD", "s", "MAXLEN", "5", "LIMIT", "10", "*", "a", "1") == Err(
        "ERR syntax error, LIMIT cannot be used without the special ~ option")
    assert rawp.call("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "*", "a", "1") == Err(
        "ERR The LIMIT argument must be >= 0.")
    assert rawp.call("XADD", "s", "MINID", "x", "*", "a", "1") == INVALID_ID
    rawp.call("SET", "str", "v")
    assert rawp.call("XADD", "str", "*", "a", "1") == WRONGTYPE
    assert rawp.call("XLEN", "str") == WRONGTYPE


def test_xadd_exhausted(rawp):
    top = "18446744073709551615-18446744073709551615"
    assert rawp.call("XADD", "s", top, "a", "1") == top.encode()
    assert rawp.call("XADD", "s", "*", "a", "1") == Err(
        "ERR The stream has exhausted the last possible ID, unable to add more items")


def test_xadd_trims(rawp):
    for i in range(1, 11):
        rawp.call("XADD", "s", f"{i}-0", "f", str(i))
    assert rawp.call("XADD", "s", "MAXLEN", "3", "11-0", "f", "11") == b"11-0"
    assert rawp.call("XLEN", "s") == 3
    assert rawp.call("XADD", "s", "MINID", "=", "10", "12-0", "f", "12") == b"12-0"
    assert rawp.call("XRANGE", "s", "-", "+") == [
        e("10-0", "f", "10"), e("11-0", "f", "11"), e("12-0", "f", "12")]
    # Approximate trimming removes whole nodes only: the first (entries 1-100, 10-100 live)
    # goes, the second (101-150) would leave fewer than 10.
    for i in range(13, 150):
        rawp.call("XADD", "s", f"{i}-0", "f", str(i))
    assert rawp.call("XADD", "s", "MAXLEN", "~", "10", "150-0", "f", "x") == b"150-0"
    assert rawp.call("XLEN", "s") == 50


# --- ranges --------------------------------------------------------------------------------

def test_xrange_and_xrevrange(rawp):
    for i in range(1, 6):
        rawp.call("XADD", "s", f"{i}-1", "f", str(i), "g", "x")
    full = [e(f"{i}-1", "f", str(i), "g", "x") for i in range(1, 6)]
    assert rawp.call("XRANGE", "s", "-", "+") == full
    assert rawp.call("XREVRANGE", "s", "+", "-") == full[::-1]
    assert rawp.call("XRANGE", "s", "2", "4") == full[1:4]
    assert rawp.call("XRANGE", "s", "(2-1", "(4-1") == full[2:3]
    assert rawp.call("XREVRANGE", "s", "(4-1", "(1-1") == full[1:3][::-1]
    assert rawp.call("XRANGE", "s", "-", "+", "COUNT", "2") == full[:2]
    assert rawp.call("XREVRANGE", "s", "+", "-", "COUNT", "2") == full[:2:-1][:2]
    assert rawp.call("XRANGE", "s", "-", "+", "COUNT", "-3") is None
    assert rawp.call("XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert rawp.call("XRANGE", "s", "5", "1") == []
    assert rawp.call("XRANGE", "none", "-", "+") == []
    assert rawp.call("XRANGE", "none", "-", "+", "COUNT", "0") == []
    assert rawp.call("XRANGE", "s", "-", "+", "COUNT") == SYNTAX
    assert rawp.call("XRANGE", "s", "-", "+", "LIMIT", "1") == SYNTAX
    assert rawp.call("XRANGE", "s", "x", "+") == INVALID_ID
    assert rawp.call("XRANGE", "s", "(-", "+") == INVALID_ID
    assert rawp.call("XRANGE", "s", "(", "+") == INVALID_ID
    assert rawp.call("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+") == Err(
        "ERR invalid start ID for the interval")
    assert rawp.call("XRANGE", "s", "-", "(0-0") == Err("ERR invalid end ID for the interval")


def test_different_field_sets_and_many_nodes(rawp):
    want = []
    for i in range(1, 400):
        fields = ["a", str(i)] if i % 3 else ["b", "x" * (i % 50), "c", str(-i)]
        rawp.call("XADD", "s", f"{i}-{i % 4}", *fields)
        want.append(e(f"{i}-{i % 4}", *fields))
    assert rawp.call("XRANGE", "s", "-", "+") == want
    assert rawp.call("XREVRANGE", "s", "+", "-", "COUNT", "250") == want[::-1][:250]
    assert rawp.call("XRANGE", "s", "150", "160") == want[149:160]


# --- XDEL, XTRIM, XSETID --------------------------------------------------------------------

def test_xdel(rawp):
    for i in range(1, 6):
        rawp.call("XADD", "s", f"{i}-0", "f", str(i))
    assert rawp.call("XDEL", "s", "2-0", "4", "9-9") == 2
    assert rawp.call("XDEL", "s", "2-0") == 0
    assert rawp.call("XRANGE", "s", "-", "+") == [
        e("1-0", "f", "1"), e("3-0", "f", "3"), e("5-0", "f", "5")]
    assert rawp.call("XDEL", "s", "1-0", "bad") == INVALID_ID
    assert rawp.call("XLEN", "s") == 3
    assert rawp.call("XDEL", "none", "bad") == 0
    assert rawp.call("XDEL", "s", "1-0", "3-0", "5-0") == 3
    # An emptied stream stays, as in Redis.
    assert rawp.call("EXISTS", "s") == 1
    assert rawp.call("XLEN", "s") == 0


def test_xtrim(rawp):
    for i in range(1, 301):
        rawp.call("XADD", "s", f"{i}-0", "f", str(i))
    assert rawp.call("XTRIM", "s", "MAXLEN", "~", "250") == 0
    assert rawp.call("XTRIM", "s", "MAXLEN", "~", "150") == 100
    assert rawp.call("XTRIM", "s", "MAXLEN", "=", "150") == 50
    assert rawp.call("XTRIM", "s", "MINID", "160") == 9
    # The node of 101-200 (160-200 live) ends below 290; the next does not.
    assert rawp.call("XTRIM", "s", "MINID", "~", "290") == 41
    assert rawp.call("XTRIM", "s", "MINID", "~", "290", "LIMIT", "0") == 0
    assert rawp.call("XRANGE", "s", "-", "+", "COUNT", "1") == [e("201-0", "f", "201")]
    assert rawp.call("XLEN", "s") == 100
    assert rawp.call("XTRIM", "s", "MAXLEN", "0") == 100
    assert rawp.call("XTRIM", "none", "MAXLEN", "0") == 0
    assert rawp.call("XTRIM", "s", "LIMIT", "1") == Err(
        "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    assert rawp.call("XTRIM", "s", "NOMKSTREAM", "x") == SYNTAX
    assert rawp.call("XTRIM", "s", "MAXLEN") == Err(
        "ERR wrong number of arguments for 'xtrim' command")
    assert rawp.call("XTRIM", "s", "MAXLEN", "~") == Err(
        "ERR value is not an integer or out of range")
    assert rawp.call("XTRIM", "s", "MAXLEN", "1", "x") == SYNTAX


def test_xtrim_limit(rawp):
    for i in range(1, 501):
        rawp.call("XADD", "s", f"{i}-0", "f", str(i))
    # LIMIT counts whole nodes of 100 entries.
    assert rawp.call("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "250") == 200
    assert rawp.call("XLEN", "s") == 300


def test_xsetid(rawp):
    rawp.call("XADD", "s", "5-0", "f", "1")
    assert rawp.call("XSETID", "s", "4-0") == Err(
        "ERR The ID specified in XSETID is smaller than the target stream top item")
    assert rawp.call("XSETID", "s", "10-0", "ENTRIESADDED", "0") == Err(
        "ERR The entries_added specified in XSETID is smaller than the target stream length")
    assert rawp.call("XSETID", "s", "10-0", "ENTRIESADDED", "-1") == Err(
        "ERR entries_added must be positive")
    assert rawp.call("XSETID", "s", "10-0", "MAXDELETEDID", "11-0") == Err(
        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    assert rawp.call("XSETID", "s", "10-0", "ENTRIESADDED") == SYNTAX
    assert rawp.call("XSETID", "none", "10-0") == Err("ERR no such key")
    assert rawp.call("XSETID", "s", "+") == INVALID_ID
    assert rawp.call("XSETID", "s", "10-0", "ENTRIESADDED", "7", "MAXDELETEDID", "3-0") == Simple("OK")
    assert rawp.call("XADD", "s", "9-0", "f", "1") == Err(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item")
    assert rawp.call("XADD", "s", "*", "f", "1").endswith(b"-0")
    info = rawp.call("XINFO", "STREAM", "s")
    info = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
    assert info[b"entries-added"] == 8
    assert info[b"max-deleted-entry-id"] == b"3-0"


# --- XREAD ---------------------------------------------------------------------------------

def xread_reply(protocol, *streams):
    """XREAD's reply for (key, entries) pairs."""
    if protocol == 3:
        return {k.encode(): v for k, v in streams}
    return [[k.encode(), v] for k, v in streams]


def test_xread(rawp, protocol):
    rawp.call("XADD", "a", "1-0", "f", "1")
    rawp.call("XADD", "a", "2-0", "f", "2")
    rawp.call("XADD", "b", "3-0", "g", "3")
    assert rawp.call("XREAD", "STREAMS", "a", "b", "0", "0") == xread_reply(
        protocol, ("a", [e("1-0", "f", "1"), e("2-0", "f", "2")]), ("b", [e("3-0", "g", "3")]))
    assert rawp.call("XREAD", "COUNT", "1", "STREAMS", "a", "b", "1", "3") == xread_reply(
        protocol, ("a", [e("2-0", "f", "2")]))
    assert rawp.call("XREAD", "STREAMS", "a", "b", "$", "$") is None
    assert rawp.call("XREAD", "STREAMS", "a", "nokey", "2", "0") is None
    assert rawp.call("XREAD", "COUNT", "-5", "STREAMS", "a", "0") == xread_reply(
        protocol, ("a", [e("1-0", "f", "1"), e("2-0", "f", "2")]))


def test_xread_errors(rawp):
    rawp.call("XADD", "a", "1-0", "f", "1")
    rawp.call("SET", "str", "v")
    assert rawp.call("XREAD", "STREAMS", "a", "b", "c") == Err(
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    assert rawp.call("XREAD", "COUNT", "1", "a", "0") == SYNTAX
    assert rawp.call("XREAD", "COUNT", "x", "STREAMS", "a", "0") == Err(
        "ERR value is not an integer or out of range")
    assert rawp.call("XREAD", "STREAMS", "a", ">") == Err(
        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
        "<consumer> option.")
    assert rawp.call("XREAD", "GROUP", "g", "c", "STREAMS", "a", "0") == Err(
        "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
    assert rawp.call("XREAD", "NOACK", "STREAMS", "a", "0") == Err(
        "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
    assert rawp.call("XREAD", "STREAMS", "a", "+") == INVALID_ID
    assert rawp.call("XREAD", "STREAMS", "a", "x") == INVALID_ID
    assert rawp.call("XREAD", "STREAMS", "str", "0") == WRONGTYPE
    assert rawp.call("XREAD", "BLOCK", "-1", "STREAMS", "a", "$") == Err("ERR timeout is negative")
    assert rawp.call("XREAD", "BLOCK", "1.5", "STREAMS", "a", "$") == Err(
        "ERR timeout is not an integer or out of range")
    assert rawp.call("XREAD", "STREAMS", "a", "b", "0") == Err(
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")


class Call:
    """A raw command run on its own connection in a thread."""

    def __init__(self, server, *args, protocol=2):
        self.conn = server.raw()
        if protocol == 3:
            self.conn.call("HELLO", "3")
        self.args = args
        self.result = None
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            self.result = self.conn.call(*self.args)
        finally:
            self.done.set()

    def get(self, timeout=5.0):
        assert self.done.wait(timeout), f"{self.args} did not return"
        return self.result


def blocked_clients(server) -> int:
    with server.admin() as a:
        info = a.call("INFO", "clients")
    if isinstance(info, bytes):
        info = info.decode()
    for line in info.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("no blocked_clients")


def wait_blocked(server, n, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if blocked_clients(server) == n:
            return
        time.sleep(0.005)
    raise AssertionError(f"blocked_clients never reached {n}")


def test_blocking_xread_woken_by_xadd(server, rawp, protocol):
    rawp.call("XADD", "s", "1-0", "f", "old")
    call = Call(server, "XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "$", protocol=protocol)
    wait_blocked(server, 1)
    # A write that adds nothing past the ID (XDEL) leaves the client waiting.
    rawp.call("XDEL", "s", "1-0")
    time.sleep(0.05)
    assert not call.done.is_set()
    rawp.call("XADD", "s", "2-0", "f", "new")
    assert call.get() == xread_reply(protocol, ("s", [e("2-0", "f", "new")]))
    assert blocked_clients(server) == 0


def test_blocking_xread_on_a_missing_key_and_in_a_transaction(server, rawp, protocol):
    call = Call(server, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$", protocol=protocol)
    wait_blocked(server, 1)
    rawp.call("MULTI")
    rawp.call("XADD", "s", "1-0", "f", "1")
    rawp.call("XADD", "s", "2-0", "f", "2")
    assert rawp.call("EXEC") == [b"1-0", b"2-0"]
    assert call.get() == xread_reply(protocol, ("s", [e("1-0", "f", "1"), e("2-0", "f", "2")]))


def test_blocking_xread_serves_every_waiter_in_order(server, rawp):
    calls = []
    for i in range(3):
        calls.append(Call(server, "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "s", "0"))
        wait_blocked(server, i + 1)
    rawp.call("XADD", "s", "7-0", "f", "v")
    for c in calls:
        assert c.get() == [[b"s", [e("7-0", "f", "v")]]]


def test_blocking_xread_timeout(server, rawp, protocol):
    started = time.monotonic()
    assert rawp.call("XREAD", "BLOCK", "150", "STREAMS", "s", "$") is None
    assert 0.1 <= time.monotonic() - started < 3
    rawp.send_command("XREAD", "BLOCK", "10", "STREAMS", "s", "$")
    want = b"*-1\r\n" if protocol == 2 else b"_\r\n"
    assert rawp.recv_exact(len(want)) == want
    # Inside MULTI a blocking XREAD answers at once.
    rawp.call("MULTI")
    rawp.call("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert rawp.call("EXEC") == [None]


def test_blocked_xread_on_a_deleted_stream_keeps_waiting(server, rawp):
    rawp.call("XADD", "s", "5-0", "f", "1")
    call = Call(server, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(server, 1)
    rawp.call("DEL", "s")
    time.sleep(0.05)
    assert not call.done.is_set()
    rawp.call("SET", "s", "string now")
    time.sleep(0.05)
    assert not call.done.is_set()
    rawp.call("DEL", "s")
    # Past the ID `$` stood for when the client blocked (5-0), not past the new stream's.
    rawp.call("XADD", "s", "3-0", "f", "below")
    time.sleep(0.05)
    assert not call.done.is_set()
    rawp.call("XADD", "s", "6-0", "f", "past")
    assert call.get() == [[b"s", [e("6-0", "f", "past")]]]


# --- XINFO ---------------------------------------------------------------------------------

def as_dict(v):
    return dict(zip(v[::2], v[1::2])) if isinstance(v, list) else v


def test_xinfo_stream(rawp):
    rawp.call("XADD", "s", "1-0", "a", "1")
    rawp.call("XADD", "s", "2-0", "b", "2")
    rawp.call("XADD", "s", "3-0", "c", "3")
    rawp.call("XDEL", "s", "1-0")
    info = as_dict(rawp.call("XINFO", "STREAM", "s"))
    assert list(info.keys()) == [
        b"length", b"radix-tree-keys", b"radix-tree-nodes", b"last-generated-id",
        b"max-deleted-entry-id", b"entries-added", b"recorded-first-entry-id", b"groups",
        b"first-entry", b"last-entry"]
    assert info[b"length"] == 2
    assert info[b"radix-tree-keys"] == 1
    assert info[b"last-generated-id"] == b"3-0"
    assert info[b"max-deleted-entry-id"] == b"1-0"
    assert info[b"entries-added"] == 3
    assert info[b"recorded-first-entry-id"] == b"2-0"
    assert info[b"groups"] == 0
    assert info[b"first-entry"] == e("2-0", "b", "2")
    assert info[b"last-entry"] == e("3-0", "c", "3")
    full = as_dict(rawp.call("XINFO", "STREAM", "s", "FULL", "COUNT", "1"))
    assert list(full.keys()) == [
        b"length", b"radix-tree-keys", b"radix-tree-nodes", b"last-generated-id",
        b"max-deleted-entry-id", b"entries-added", b"recorded-first-entry-id", b"entries",
        b"groups"]
    assert full[b"entries"] == [e("2-0", "b", "2")]
    assert full[b"groups"] == []
    assert as_dict(rawp.call("XINFO", "STREAM", "s", "FULL"))[b"entries"] == [
        e("2-0", "b", "2"), e("3-0", "c", "3")]
    rawp.call("XTRIM", "s", "MAXLEN", "0")
    empty = as_dict(rawp.call("XINFO", "STREAM", "s"))
    assert empty[b"first-entry"] is None and empty[b"last-entry"] is None
    assert empty[b"recorded-first-entry-id"] == b"0-0"


def test_xinfo_errors(rawp):
    rawp.call("XADD", "s", "1-0", "a", "1")
    rawp.call("SET", "str", "v")
    assert rawp.call("XINFO", "STREAM", "none") == Err("ERR no such key")
    assert rawp.call("XINFO", "STREAM", "str") == WRONGTYPE
    assert rawp.call("XINFO", "STREAM", "s", "FULL", "COUNT") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    assert rawp.call("XINFO", "STREAM", "s", "PARTIAL") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    assert rawp.call("XINFO", "STREAM", "s", "FULL", "COUNT", "x") == Err(
        "ERR value is not an integer or out of range")
    helptext = rawp.call("XINFO", "HELP")
    assert helptext[0].startswith("XINFO <subcommand>")


# --- keyspace events, generic commands -----------------------------------------------------

@pytest.fixture
def events(r):
    r.config_set("notify-keyspace-events", "KEA")
    ps = r.pubsub()
    ps.psubscribe("__keyevent@0__:*")
    assert ps.get_message(timeout=2)["type"] == "psubscribe"

    def run(*commands):
        for c in commands:
            r.execute_command(*c)
        out = []
        while True:
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


def test_events(events):
    assert events(["XADD", "s", "1-0", "f", "v"]) == [("xadd", "s")]
    assert events(["XADD", "s", "MAXLEN", "1", "2-0", "f", "v"]) == [("xadd", "s"), ("xtrim", "s")]
    assert events(["XDEL", "s", "2-0"], ["XDEL", "s", "2-0"]) == [("xdel", "s")]
    assert events(["XADD", "s", "3-0", "f", "v"], ["XTRIM", "s", "MAXLEN", "0"],
                  ["XTRIM", "s", "MAXLEN", "0"]) == [("xadd", "s"), ("xtrim", "s")]
    assert events(["XSETID", "s", "9-0"]) == [("xsetid", "s")]


def test_generic_commands_on_a_stream(r):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xadd("s", {"g": "w"}, id="2-0")
    assert r.type("s") in (b"stream", "stream")
    assert r.object("encoding", "s") in (b"stream", "stream")
    assert [k for k in r.scan_iter(_type="stream")] == [b"s"]
    r.set("str", "v")
    assert r.copy("s", "c") in (1, True)
    r.xadd("s", {"h": "x"}, id="3-0")
    assert r.xlen("c") == 2 and r.xlen("s") == 3
    r.rename("c", "d")
    assert r.xrange("d") == [(b"1-0", {b"f": b"v"}), (b"2-0", {b"g": b"w"})]
    assert r.pexpire("d", 50)
    time.sleep(0.2)
    assert r.exists("d") == 0
    assert r.delete("s") == 1


@pytest.mark.larder_only
def fill_grouped_stream(r) -> tuple:
    """A stream over several nodes, with a deleted entry and a group with pending entries."""
    for i in range(300):
        r.xadd("s", {"f": str(i), "g": "x" * (i % 5)}, id=f"{i + 1}-0")
    r.xdel("s", "7-0")
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "alice", {"s": ">"}, count=3)
    return r.xrange("s"), r.xpending("s", "g")


def test_dump_restore_keeps_a_stream(r):
    before = fill_grouped_stream(r)
    r.restore("copy", 0, r.dump("s"))
    assert (r.xrange("copy"), r.xpending("copy", "g")) == before


def test_debug_reload_keeps_a_stream(start_server):
    r = start_server("--enable-debug-command", "yes").client()
    before = fill_grouped_stream(r)
    r.execute_command("DEBUG", "RELOAD")
    assert (r.xrange("s"), r.xpending("s", "g")) == before


@pytest.mark.larder_only
def test_replay_after_kill_9_gives_the_same_stream(start_server):
    """Generated IDs and approximate trims are logged as what they did."""
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    for i in range(250):
        c.xadd("s", {"f": str(i), "g": "x" * (i % 7)})
    c.xadd("s", {"f": "last"}, maxlen=120, approximate=True)
    c.xadd("s", {"f": "ms-seq"}, id="99999999999999-*")
    c.xtrim("s", minid="0-1", approximate=True)
    c.xdel("s", c.xrange("s", count=3)[2][0])
    c.execute_command("XSETID", "s", "99999999999999-5", "ENTRIESADDED", "400")
    c.xadd("other", {"a": "1"}, id="1-*", nomkstream=True)

    def state(c):
        info = c.execute_command("XINFO", "STREAM", "s")
        info = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
        return c.xrange("s"), info, c.exists("other")

    before = state(c)
    assert before[1][b"length"] == 151
    srv.kill()
    srv = srv.start()
    assert state(srv.client()) == before


def test_node_limits_are_config_parameters(rawp):
    assert rawp.call("CONFIG", "SET", "stream-node-max-entries", "3") == Simple("OK")
    try:
        for i in range(1, 11):
            rawp.call("XADD", "s", f"{i}-0", "f", "v")
        # Nodes of 3: the first two go, the third would leave fewer than 4.
        assert rawp.call("XTRIM", "s", "MAXLEN", "~", "4") == 6
    finally:
        rawp.call("CONFIG", "SET", "stream-node-max-entries", "100")
    assert rawp.call("CONFIG", "SET", "stream-node-max-bytes", "64") == Simple("OK")
    try:
        for i in range(1, 11):
            rawp.call("XADD", "b", f"{i}-0", "field", "value-" + "x" * 20)
        assert rawp.call("XTRIM", "b", "MAXLEN", "~", "1") == 9
    finally:
        rawp.call("CONFIG", "SET", "stream-node-max-bytes", "4096")


@pytest.mark.larder_only
def test_blocked_readers_are_woken_across_threads_and_doors(start_server):
    """Blocked XREAD and XREADGROUP clients on two worker threads, woken by entries added
    through another door (the HTTP door's command API) from a third connection."""
    srv = start_with_http(start_server, "--threads", "2")
    r = srv.client(protocol=2)
    r.xgroup_create("g-s", "g", id="$", mkstream=True)
    # Connections are dealt to the two workers in turn, so the readers sit on both.
    reader = Call(srv, "XREAD", "BLOCK", "5000", "STREAMS", "x-s", "$", protocol=2)
    group = Call(srv, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "5000", "STREAMS", "g-s",
                 ">", protocol=2)
    wait_blocked(srv, 2)
    for key in ("x-s", "g-s"):
        resp = requests.post(srv.http_url, json=["XADD", key, "7-1", "via", "http"], timeout=5)
        assert resp.json() == {"result": "7-1"}
    assert reader.get() == [[b"x-s", [[b"7-1", [b"via", b"http"]]]]]
    assert group.get() == [[b"g-s", [[b"7-1", [b"via", b"http"]]]]]
    assert r.xpending("g-s", "g")["pending"] == 1
