"""SCAN (issue 2, section 3): MATCH, COUNT, TYPE, cursor errors, and Redis's guarantee that a key
present for the whole iteration is returned at least once while the table grows or shrinks.
"""

import time

import pytest

from conftest import Err, RawConn, make_non_string


def full_scan(client, *args):
    """All keys from a complete SCAN iteration (cursor 0 to 0), with the number of calls."""
    cursor, keys, calls = b"0", [], 0
    while True:
        cursor, batch = client.call("SCAN", cursor, *args)
        keys.extend(batch)
        calls += 1
        if cursor == b"0":
            return keys, calls


def test_scan_empty_db(rawp):
    assert rawp.call("SCAN", "0") == [b"0", []]


def test_scan_reply_shape(rawp):
    rawp.call("SET", "k", "v")
    f = rawp.call_frame("SCAN", "0")
    assert f.kind == "*"
    cursor, keys = f.value
    assert cursor.kind == "$"  # the cursor is a bulk string, not an integer
    assert keys.kind == "*"


def test_scan_returns_every_key(raw):
    raw.send(b"".join(RawConn.encode("SET", f"k{i}", i) for i in range(1000)))
    for _ in range(1000):
        raw.read_reply()
    keys, calls = full_scan(raw)
    assert set(keys) == {f"k{i}".encode() for i in range(1000)}
    assert calls > 1  # COUNT defaults to 10: one call does not return 1000 keys


def test_scan_count(raw):
    raw.send(b"".join(RawConn.encode("SET", f"k{i}", i) for i in range(500)))
    for _ in range(500):
        raw.read_reply()
    keys, calls_small = full_scan(raw, "COUNT", "5")
    assert set(keys) == {f"k{i}".encode() for i in range(500)}
    keys, calls_big = full_scan(raw, "COUNT", "10000")
    assert set(keys) == {f"k{i}".encode() for i in range(500)}
    assert calls_big < calls_small
    assert calls_big <= 2


def test_scan_match(raw):
    raw.call("MSET", *sum(([f"user:{i}", "v", f"item:{i}", "v"] for i in range(200)), []))
    keys, _ = full_scan(raw, "MATCH", "user:*", "COUNT", "50")
    assert set(keys) == {f"user:{i}".encode() for i in range(200)}
    keys, _ = full_scan(raw, "MATCH", "item:1?", "COUNT", "1000")
    assert set(keys) == {f"item:1{i}".encode() for i in range(10)}
    keys, _ = full_scan(raw, "MATCH", "nothing*")
    assert keys == []


def test_scan_type(raw):
    raw.call("MSET", "s1", "v", "s2", "v")
    keys, _ = full_scan(raw, "TYPE", "string")
    assert set(keys) == {b"s1", b"s2"}
    keys, _ = full_scan(raw, "TYPE", "STRING", "COUNT", "100")
    assert set(keys) == {b"s1", b"s2"}
    keys, _ = full_scan(raw, "TYPE", "hash")
    assert keys == []


def test_scan_type_filters_other_types(raw):
    raw.call("SET", "s", "v")
    type_name = make_non_string(raw, "other")
    keys, _ = full_scan(raw, "TYPE", type_name)
    assert keys == [b"other"]
    keys, _ = full_scan(raw, "TYPE", "string")
    assert keys == [b"s"]


def test_scan_match_count_type_combined(raw):
    raw.call("MSET", *sum(([f"a:{i}", "v", f"b:{i}", "v"] for i in range(100)), []))
    keys, _ = full_scan(raw, "MATCH", "a:*", "COUNT", "7", "TYPE", "string")
    assert set(keys) == {f"a:{i}".encode() for i in range(100)}


def test_scan_only_current_db(raw):
    raw.call("SET", "db0", "v")
    raw.call("SELECT", "2")
    raw.call("SET", "db2", "v")
    keys, _ = full_scan(raw)
    assert keys == [b"db2"]


def test_scan_skips_expired_keys(raw):
    raw.call("SET", "keep", "v")
    raw.call("SET", "gone", "v", "PX", "1")
    time.sleep(0.02)
    keys, _ = full_scan(raw)
    assert keys == [b"keep"]


@pytest.mark.parametrize("cursor", ["x", "1.5", " 0", "18446744073709551616", "0x10"])
def test_scan_invalid_cursor(raw, cursor):
    assert raw.call("SCAN", cursor) == Err("ERR invalid cursor")


@pytest.mark.parametrize("args, error", [
    (["COUNT", "0"], "ERR syntax error"),
    (["COUNT", "-1"], "ERR syntax error"),
    (["COUNT", "x"], "ERR value is not an integer or out of range"),
    (["COUNT"], "ERR syntax error"),
    (["MATCH"], "ERR syntax error"),
    (["TYPE"], "ERR syntax error"),
    (["FOO"], "ERR syntax error"),
    (["FOO", "bar"], "ERR syntax error"),
])
def test_scan_option_errors(raw, args, error):
    assert raw.call("SCAN", "0", *args) == Err(error)


def test_scan_iter_redis_py(r):
    r.mset({f"k{i}": i for i in range(300)})
    assert set(r.scan_iter(count=17)) == {f"k{i}".encode() for i in range(300)}
    assert set(r.scan_iter(match="k1*")) == {k.encode() for k in
                                             (f"k{i}" for i in range(300)) if k.startswith("k1")}


def _pipeline(conn, commands):
    conn.send(b"".join(RawConn.encode(*c) for c in commands))
    for _ in commands:
        reply = conn.read_reply()
        assert not isinstance(reply, Err), reply


@pytest.mark.parametrize("stable_n, peak", [(1000, 40_000), (5000, 20_000)])
def test_scan_guarantee_while_table_grows_and_shrinks(server, stable_n, peak):
    """Every key present for the whole iteration is returned at least once, although the
    keyspace grows far past its starting size and then shrinks back during the scan."""
    c = server.raw()
    writer = server.raw()
    _pipeline(writer, [("SET", f"stable:{i}", "v") for i in range(stable_n)])
    stable = {f"stable:{i}".encode() for i in range(stable_n)}

    seen: set[bytes] = set()
    cursor = b"0"
    added = 0
    deleted = 0
    phase = "grow"
    calls = 0
    while True:
        cursor, batch = c.call("SCAN", cursor, "COUNT", "10")
        seen.update(batch)
        calls += 1
        if phase == "grow":
            _pipeline(writer, [("SET", f"churn:{added + j}", "v") for j in range(1000)])
            added += 1000
            if added >= peak:
                phase = "shrink"
        elif phase == "shrink" and deleted < added:
            _pipeline(writer, [("DEL", f"churn:{deleted + j}") for j in range(2000)])
            deleted += 2000
        if cursor == b"0":
            break
    # The scan must have lasted through the growth, or the test proved nothing.
    assert phase == "shrink", f"scan ended after {calls} calls, before the table grew"
    print(f"{calls} SCAN calls; {added} keys added, {deleted} deleted during the scan")
    missing = stable - seen
    assert not missing, (f"{len(missing)} of {stable_n} stable keys never returned, "
                         f"e.g. {sorted(missing)[:5]} ({calls} calls, phase {phase})")


def test_scan_guarantee_with_deletes_of_other_keys(server):
    c = server.raw()
    writer = server.raw()
    _pipeline(writer, [("SET", f"stable:{i}", "v") for i in range(2000)])
    _pipeline(writer, [("SET", f"victim:{i}", "v") for i in range(20_000)])
    seen: set[bytes] = set()
    cursor, deleted = b"0", 0
    while True:
        cursor, batch = c.call("SCAN", cursor, "COUNT", "50")
        seen.update(batch)
        if deleted < 20_000:
            _pipeline(writer, [("UNLINK", f"victim:{deleted + j}") for j in range(1000)])
            deleted += 1000
        if cursor == b"0":
            break
    assert {f"stable:{i}".encode() for i in range(2000)} <= seen
