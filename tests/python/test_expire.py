"""Expiry (issue 2, sections 3 and 4): EXPIRE PEXPIRE EXPIREAT PEXPIREAT with NX XX GT LT, TTL
PTTL EXPIRETIME PEXPIRETIME PERSIST, lazy expiry, and active expiry that reclaims keys nobody
touches (checked through DBSIZE and INFO keyspace, which count keys not yet reclaimed).
"""

import time

import pytest

from conftest import Err, parse_info, wait_until

NOT_INT = Err("ERR value is not an integer or out of range")


# --- EXPIRE family -----------------------------------------------------------------------------


def test_expire_ttl(r):
    r.set("k", "v")
    assert r.execute_command("EXPIRE", "k", "100") == 1
    assert 99 <= r.execute_command("TTL", "k") <= 100
    assert 99_000 < r.execute_command("PTTL", "k") <= 100_000
    assert r.execute_command("EXPIRE", "missing", "100") == 0


def test_pexpire(r):
    r.set("k", "v")
    assert r.execute_command("PEXPIRE", "k", "100000") == 1
    assert 99_000 < r.pttl("k") <= 100_000


def test_expireat_pexpireat_and_expiretime(r):
    r.set("k", "v")
    at = int(time.time()) + 1000
    assert r.execute_command("EXPIREAT", "k", str(at)) == 1
    assert r.execute_command("EXPIRETIME", "k") == at
    assert r.execute_command("PEXPIRETIME", "k") == at * 1000
    at_ms = int(time.time() * 1000) + 500_000
    assert r.execute_command("PEXPIREAT", "k", str(at_ms)) == 1
    assert r.execute_command("PEXPIRETIME", "k") == at_ms
    assert r.execute_command("EXPIRETIME", "k") == (at_ms + 500) // 1000  # rounded
    assert r.execute_command("EXPIREAT", "missing", str(at)) == 0
    assert r.execute_command("PEXPIREAT", "missing", str(at_ms)) == 0


def test_ttl_rounds_to_nearest_second(r):
    r.set("k", "v")
    # 1800 ms left rounds up to 2 s, 1200 ms down to 1 s (margins leave room for a slow host).
    r.pexpire("k", 1800)
    assert r.ttl("k") == 2
    r.pexpire("k", 1200)
    assert r.ttl("k") == 1


def test_ttl_and_expiretime_sentinels(r):
    r.set("k", "v")
    for cmd in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        assert r.execute_command(cmd, "k") == -1, cmd
        assert r.execute_command(cmd, "missing") == -2, cmd


def test_persist(r):
    r.set("k", "v", ex=100)
    assert r.execute_command("PERSIST", "k") == 1
    assert r.ttl("k") == -1
    assert r.execute_command("PERSIST", "k") == 0
    assert r.execute_command("PERSIST", "missing") == 0


@pytest.mark.parametrize("cmd, arg", [
    ("EXPIRE", "0"), ("EXPIRE", "-1"), ("PEXPIRE", "0"), ("PEXPIRE", "-100"),
    ("EXPIREAT", "1"), ("PEXPIREAT", "1"), ("EXPIREAT", "0"),
])
def test_non_positive_or_past_expire_deletes(r, cmd, arg):
    r.set("k", "v")
    assert r.execute_command(cmd, "k", arg) == 1
    assert r.exists("k") == 0
    assert r.dbsize() == 0


def test_expire_nx_xx_gt_lt(r):
    r.set("k", "v")
    # Without a TTL: XX and GT fail (no TTL counts as infinite), NX and LT succeed.
    assert r.execute_command("EXPIRE", "k", "10", "XX") == 0
    assert r.execute_command("EXPIRE", "k", "10", "GT") == 0
    assert r.execute_command("EXPIRE", "k", "10", "LT") == 1
    assert r.ttl("k") == 10
    assert r.persist("k") == 1
    assert r.execute_command("EXPIRE", "k", "10", "NX") == 1
    assert r.execute_command("EXPIRE", "k", "20", "NX") == 0
    assert r.execute_command("EXPIRE", "k", "20", "XX") == 1
    assert r.execute_command("EXPIRE", "k", "10", "GT") == 0
    assert r.execute_command("EXPIRE", "k", "30", "GT") == 1
    assert r.execute_command("EXPIRE", "k", "40", "LT") == 0
    assert r.execute_command("EXPIRE", "k", "5", "LT") == 1
    assert r.ttl("k") == 5
    assert r.execute_command("EXPIRE", "k", "50", "XX", "GT") == 1
    assert r.ttl("k") == 50


@pytest.mark.parametrize("cmd, unit_ms", [("EXPIRE", 1000), ("PEXPIRE", 1)])
def test_expire_options_on_every_variant(r, cmd, unit_ms):
    r.set("k", "v")
    assert r.execute_command(cmd, "k", str(100_000 // unit_ms), "NX") == 1
    assert r.execute_command(cmd, "k", str(200_000 // unit_ms), "GT") == 1
    assert r.execute_command(cmd, "k", str(300_000 // unit_ms), "LT") == 0
    assert r.execute_command(cmd, "k", str(50_000 // unit_ms), "xx") == 1
    assert 49_000 < r.pttl("k") <= 50_000


@pytest.mark.parametrize("cmd, scale", [("EXPIREAT", 1), ("PEXPIREAT", 1000)])
def test_expireat_options(r, cmd, scale):
    r.set("k", "v")
    now = int(time.time())
    assert r.execute_command(cmd, "k", str((now + 100) * scale), "XX") == 0
    assert r.execute_command(cmd, "k", str((now + 100) * scale), "NX") == 1
    assert r.execute_command(cmd, "k", str((now + 50) * scale), "GT") == 0
    assert r.execute_command(cmd, "k", str((now + 50) * scale), "LT") == 1
    assert r.expiretime("k") == now + 50


def test_expire_lt_with_past_time_deletes(r):
    r.set("k", "v", ex=100)
    assert r.execute_command("EXPIRE", "k", "-5", "LT") == 1
    assert r.exists("k") == 0
    r.set("k", "v")
    assert r.execute_command("EXPIRE", "k", "-5", "GT") == 0
    assert r.exists("k") == 1


@pytest.mark.parametrize("opts, error", [
    (["NX", "XX"], "ERR NX and XX, GT or LT options at the same time are not compatible"),
    (["NX", "GT"], "ERR NX and XX, GT or LT options at the same time are not compatible"),
    (["NX", "LT"], "ERR NX and XX, GT or LT options at the same time are not compatible"),
    (["GT", "LT"], "ERR GT and LT options at the same time are not compatible"),
    (["FOO"], "ERR Unsupported option FOO"),
    (["nx", "bar"], "ERR Unsupported option bar"),
])
@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_option_errors(raw, cmd, opts, error):
    raw.call("SET", "k", "v")
    assert raw.call(cmd, "k", "100", *opts) == Err(error)
    assert raw.call("TTL", "k") == -1


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_not_an_integer(raw, cmd):
    raw.call("SET", "k", "v")
    for bad in ("abc", "1.5", "", "9223372036854775808"):
        assert raw.call(cmd, "k", bad) == NOT_INT


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT"])
def test_expire_overflow(raw, cmd):
    raw.call("SET", "k", "v")
    assert raw.call(cmd, "k", "9223372036854775807") == Err(
        f"ERR invalid expire time in '{cmd.lower()}' command")
    assert raw.call("TTL", "k") == -1


def test_expire_seconds_negative_overflow(raw):
    raw.call("SET", "k", "v")
    assert raw.call("EXPIRE", "k", "-9223372036854775808") == Err(
        "ERR invalid expire time in 'expire' command")


def test_pexpireat_far_future(raw):
    raw.call("SET", "k", "v")
    assert raw.call("PEXPIREAT", "k", "9223372036854775807") == 1
    assert raw.call("PEXPIRETIME", "k") == 9223372036854775807


def test_overwrite_clears_ttl_but_modify_keeps_it(r):
    r.set("k", "1", ex=100)
    r.incr("k")
    r.append("k", "0")
    r.setrange("k", 0, "3")
    assert 99 <= r.ttl("k") <= 100
    r.set("k", "x")
    assert r.ttl("k") == -1


# --- lazy and active expiry --------------------------------------------------------------------


def test_lazy_expiry_on_access(r):
    r.set("k", "v", px=30)
    time.sleep(0.06)
    assert r.get("k") is None
    assert r.exists("k") == 0
    assert r.ttl("k") == -2


def test_expired_keys_are_invisible_to_every_read(r):
    r.set("k", "v", px=20)
    r.set("keep", "v")
    time.sleep(0.05)
    assert r.mget("k", "keep") == [None, b"v"]
    assert r.keys("*") == [b"keep"]
    assert r.strlen("k") == 0
    assert r.getrange("k", 0, -1) == b""
    assert r.execute_command("RENAMENX", "keep", "k") == 1
    assert r.get("k") == b"v"


def test_expired_key_is_not_renamed(raw):
    raw.call("SET", "k", "v", "PX", "20")
    time.sleep(0.05)
    assert raw.call("RENAME", "k", "k2") == Err("ERR no such key")


def test_set_nx_succeeds_on_expired_key(r):
    r.set("k", "old", px=20)
    time.sleep(0.05)
    assert r.set("k", "new", nx=True) is True
    assert r.get("k") == b"new"
    assert r.ttl("k") == -1


def _keyspace(client, db=0):
    info = parse_info(client.call("INFO", "keyspace"))
    line = info.get("keyspace", {}).get(f"db{db}")
    if not line:
        return {"keys": 0, "expires": 0}
    return {k: int(v) for k, v in (p.split("=") for p in line.split(","))}


@pytest.fixture
def expiry_server(start_server):
    # Redis's active expiry runs in serverCron, at `hz` times a second; at its default of 10 a
    # key may outlive its deadline by 100 ms or more, so the reference server gets hz 100.
    # larder runs with its defaults and must meet the same bound.
    return start_server(redis_args=["--hz", "100"])


def test_active_expiry_single_key(expiry_server):
    c = expiry_server.raw()
    c.call("SET", "persistent", "v")
    start = time.monotonic()
    assert c.call("SET", "k", "v", "PX", "50") == "OK"
    assert c.call("DBSIZE") == 2
    ks = _keyspace(c)
    assert (ks["keys"], ks["expires"]) == (2, 1)
    # Nobody touches "k": DBSIZE counts it until the server reclaims it on its own.
    gone = wait_until(lambda: c.call("DBSIZE") == 1, timeout=2.0, interval=0.005)
    elapsed = time.monotonic() - start
    assert gone, "key with PX 50 was never reclaimed"
    assert elapsed < 0.150, f"key with PX 50 reclaimed only after {elapsed * 1000:.0f} ms"
    assert _keyspace(c)["expires"] == 0
    stats = parse_info(c.call("INFO", "stats"))["stats"]
    assert int(stats["expired_keys"]) == 1


def test_active_expiry_many_keys(expiry_server):
    c = expiry_server.raw()
    n = 2000
    c.send(b"".join(c.encode("SET", f"keep{i}", "v") for i in range(n)))
    for _ in range(n):
        c.read_reply()
    start = time.monotonic()
    c.send(b"".join(c.encode("SET", f"vol{i}", "v", "PX", "100") for i in range(n)))
    for _ in range(n):
        assert c.read_reply() == "OK"
    assert _keyspace(c)["expires"] == n
    gone = wait_until(lambda: c.call("DBSIZE") == n, timeout=3.0, interval=0.005)
    elapsed = time.monotonic() - start
    assert gone, f"volatile keys never reclaimed; DBSIZE {c.call('DBSIZE')}"
    assert elapsed < 0.300, f"{n} keys with PX 100 reclaimed only after {elapsed * 1000:.0f} ms"
    ks = _keyspace(c)
    assert (ks["keys"], ks["expires"]) == (n, 0)
    stats = parse_info(c.call("INFO", "stats"))["stats"]
    assert int(stats["expired_keys"]) == n


def test_active_expiry_in_other_databases(expiry_server):
    c = expiry_server.raw()
    c.call("SELECT", "5")
    c.call("SET", "k", "v", "PX", "30")
    assert c.call("DBSIZE") == 1
    assert wait_until(lambda: c.call("DBSIZE") == 0, timeout=1.0, interval=0.005)


def test_expire_then_persist_before_deadline_keeps_key(r):
    r.set("k", "v", px=100)
    r.persist("k")
    time.sleep(0.15)
    assert r.get("k") == b"v"


def test_info_keyspace_avg_ttl(raw):
    raw.call("SET", "a", "v", "EX", "1000")
    raw.call("SET", "b", "v")
    ks = _keyspace(raw)
    assert ks["keys"] == 2
    assert ks["expires"] == 1
    assert "avg_ttl" in ks


def _expired_by_now(srv, key_setup):
    """A server with active expiry off, a key set up by `key_setup` and given 5 ms, a
    subscriber of every keyevent, and the wait for the deadline; returns (client, subscriber
    connection)."""
    c = srv.client(protocol=2)
    assert c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
    c.config_set("notify-keyspace-events", "KEA")
    key_setup(c)
    c.pexpire("dst", 5)
    sub = srv.raw()
    sub.call("PSUBSCRIBE", "__keyevent@0__:*")
    time.sleep(0.03)
    return c, sub


def _events(sub):
    sub.send_command("PING")
    out = []
    while True:
        reply = sub.read_reply()
        if reply[0] == b"pong":
            return out
        out.append((reply[2].split(b":", 1)[1].decode(), reply[3].decode()))


def test_scan_expires_the_keys_it_passes(start_server):
    srv = start_server("--enable-debug-command", "yes")
    c, sub = _expired_by_now(srv, lambda c: c.set("dst", "v"))
    assert c.dbsize() == 1  # still there: nothing looked at it
    assert c.scan(0, count=1000) == (0, [])
    assert _events(sub) == [("expired", "dst")]
    assert c.dbsize() == 0


@pytest.mark.parametrize("store", [
    ["SINTERSTORE", "dst", "none1", "none2"],
    ["ZUNIONSTORE", "dst", "1", "none1"],
    ["BITOP", "AND", "dst", "none1"],
    ["SORT", "none1", "STORE", "dst"],
])
def test_an_empty_result_deletes_a_destination_just_past_its_deadline_as_del(start_server,
                                                                              store):
    # Redis deletes the destination of an empty result whatever its deadline (dbDelete),
    # so the event is `del`, not `expired`.
    srv = start_server("--enable-debug-command", "yes")
    c, sub = _expired_by_now(srv, lambda c: c.sadd("dst", "m"))
    assert c.execute_command(*store) == 0
    assert _events(sub) == [("del", "dst")]
    assert c.exists("dst") == 0
