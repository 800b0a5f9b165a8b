"""Client-side caching (Redis 7.0): CLIENT TRACKING in the default, OPTIN, OPTOUT, BCAST and
NOLOOP modes, CLIENT CACHING, GETREDIR and TRACKINGINFO, RESP3 `invalidate` pushes on the
tracking connection, RESP2 redirection to a client subscribed to `__redis__:invalidate`,
broken redirections, flushes, CLIENT LIST flags and the INFO counters.
"""

import time

import pytest

from conftest import Err, Push, RawConn, wait_until
from test_memcached_support import mc_server, mcd  # noqa: F401  (fixtures)


def pushes(conn: RawConn, n: int, timeout: float = 5.0) -> list:
    """The next `n` frames on a connection that sends no commands, each a push or an array."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {out!r} within {timeout}s"
        out.append(conn.read_reply())
    return out


def quiet(conn: RawConn, idle: float = 0.3) -> bool:
    """Nothing more arrives on the connection."""
    return conn.read_until_idle(idle=idle, total=idle * 3) == b""


def inv(*keys):
    return Push([b"invalidate", [k.encode() for k in keys]])


def tracker(server, *options) -> RawConn:
    """A RESP3 connection with tracking on."""
    t = server.raw()
    t.hello3()
    assert t.call("CLIENT", "TRACKING", "on", *options) == "OK"
    return t


@pytest.fixture
def w(server):
    """A RESP2 writer."""
    return server.client(protocol=2)


def test_default_mode_invalidates_each_read_key_once(server, w):
    t = tracker(server)
    w.set("a", "1")
    assert quiet(t), "nothing read yet"
    assert t.call("GET", "a") == b"1"
    assert t.call("MGET", "b", "c") == [None, None]
    w.set("a", "2")
    w.set("a", "3")
    w.mset({"b": "1", "c": "1", "d": "1"})
    assert pushes(t, 3) == [inv("a"), inv("b"), inv("c")]
    assert quiet(t)
    # Read again: tracked again. The table is keyed by name: another database counts.
    t.call("STRLEN", "a")
    w.execute_command("SELECT", "1")
    w.set("a", "x")
    assert pushes(t, 1) == [inv("a")]
    # Writes are not reads.
    t.call("SET", "x", "1")
    w.execute_command("SELECT", "0")
    w.set("x", "2")
    assert quiet(t)


def test_own_writes_come_after_the_reply_unless_noloop(server):
    t = tracker(server)
    t.call("GET", "k")
    t.send_command("SET", "k", "1")
    assert t.read_reply() == "OK"
    assert pushes(t, 1) == [inv("k")]
    assert t.call("CLIENT", "TRACKING", "on", "NOLOOP") == "OK"
    t.call("GET", "k")
    t.call("SET", "k", "2")
    assert quiet(t)


def test_transactions_and_expiry(server, w):
    t = tracker(server)
    t.call("MULTI")
    t.call("GET", "a")
    t.call("GET", "b")
    assert t.call("EXEC") == [None, None]
    p = w.pipeline(transaction=True)
    p.set("a", "1")
    p.set("b", "1", px=200)
    p.execute()
    assert pushes(t, 2) == [inv("a"), inv("b")]
    t.call("GET", "b")
    # Removed by the expiry cycle: invalidated all the same.
    assert pushes(t, 1, timeout=5.0) == [inv("b")]


def test_optin_and_optout(server, w):
    t = tracker(server, "OPTIN")
    t.call("GET", "a")
    assert t.call("CLIENT", "CACHING", "yes") == "OK"
    t.call("GET", "b")
    t.call("GET", "c")
    w.mset({"a": "1", "b": "1", "c": "1"})
    assert pushes(t, 1) == [inv("b")]
    assert quiet(t)
    assert t.call("CLIENT", "CACHING", "no") == Err(
        "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    assert t.call("CLIENT", "TRACKING", "on", "OPTOUT") == Err(
        "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
        "and then re-enabling it with a different mode.")
    t.call("CLIENT", "TRACKING", "off")
    assert t.call("CLIENT", "TRACKING", "on", "OPTOUT") == "OK"
    t.call("CLIENT", "CACHING", "no")
    t.call("GET", "a")
    t.call("GET", "b")
    w.mset({"a": "2", "b": "2"})
    assert pushes(t, 1) == [inv("b")]
    assert quiet(t)


def test_bcast_prefixes(server, w):
    t = tracker(server, "BCAST", "PREFIX", "a:", "PREFIX", "b:")
    w.mset({"b:2": "1", "a:1": "1", "c:1": "1", "a:0": "1"})
    assert pushes(t, 2) == [inv("a:0", "a:1"), inv("b:2")]
    w.set("c", "1")
    assert quiet(t)
    assert t.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:x") == Err(
        "ERR Prefix 'a:x' overlaps with an existing prefix 'a:'. "
        "Prefixes for a single client must not overlap.")
    assert t.call("CLIENT", "TRACKING", "on") == Err(
        "ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
        "and then re-enabling it with a different mode.")
    info = t.call("CLIENT", "TRACKINGINFO")
    assert info == {b"flags": {b"on", b"bcast"}, b"redirect": 0, b"prefixes": [b"a:", b"b:"]}
    # NOLOOP: the client's own changes are left out.
    assert t.call("CLIENT", "TRACKING", "on", "BCAST", "NOLOOP") == "OK"
    t.call("MSET", "a:1", "2", "b:1", "2")
    assert quiet(t)


def test_bcast_without_prefix_gets_every_key(server, w):
    t = tracker(server, "BCAST")
    w.set("anything", "1")
    assert pushes(t, 1) == [inv("anything")]
    assert t.call("CLIENT", "TRACKINGINFO")[b"prefixes"] == [b""]


def test_flushes_send_a_null(server, w):
    t = tracker(server)
    b = tracker(server, "BCAST")
    t.call("GET", "k")
    w.flushall()
    assert pushes(t, 1) == [Push([b"invalidate", None])]
    assert pushes(b, 1) == [Push([b"invalidate", None])]
    w.set("k", "1")
    assert pushes(b, 1) == [inv("k")]
    assert quiet(t), "the flush forgot the key"
    w.flushdb()
    assert pushes(t, 1) == [Push([b"invalidate", None])]


def test_redirect_to_a_resp2_subscriber(server, w):
    s = server.raw()
    sid = s.call("CLIENT", "ID")
    t = server.raw()
    assert t.call("CLIENT", "TRACKING", "on", "REDIRECT", sid) == "OK"
    assert t.call("CLIENT", "GETREDIR") == sid
    t.call("GET", "k")
    w.set("k", "1")
    # Not subscribed: a RESP2 target gets nothing.
    assert quiet(s)
    assert s.call("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", b"__redis__:invalidate", 1]
    t.call("GET", "k")
    t.call("GET", "j")
    w.set("k", "2")
    assert pushes(s, 1) == [[b"message", b"__redis__:invalidate", [b"k"]]]
    w.flushall()
    assert pushes(s, 1) == [[b"message", b"__redis__:invalidate", None]]
    # The tracking connection itself (RESP2) gets nothing.
    assert quiet(t)


def test_redirect_to_a_resp3_client(server, w):
    s = server.raw()
    s.hello3()
    sid = s.call("CLIENT", "ID")
    t = server.raw()
    t.call("CLIENT", "TRACKING", "on", "REDIRECT", sid)
    t.call("GET", "k")
    w.set("k", "1")
    assert pushes(s, 1) == [inv("k")]


def test_broken_redirection(server, w):
    s = server.raw()
    sid = s.call("CLIENT", "ID")
    t = tracker(server, "REDIRECT", sid)
    s.close()
    assert wait_until(lambda: f"id={sid} " not in w.execute_command("CLIENT", "LIST").decode())
    t.call("GET", "k")
    w.set("k", "1")
    assert pushes(t, 1) == [Push([b"tracking-redir-broken", sid])]
    info = t.call("CLIENT", "TRACKINGINFO")
    assert info[b"flags"] == {b"on", b"broken_redirect"}
    assert info[b"redirect"] == sid
    line = t.call("CLIENT", "INFO").decode()
    assert " flags=tR " in line and f" redir={sid} " in line
    assert t.call("CLIENT", "TRACKING", "off") == "OK"
    assert t.call("CLIENT", "GETREDIR") == -1
    assert t.call("CLIENT", "TRACKINGINFO") == {
        b"flags": {b"off"}, b"redirect": -1, b"prefixes": []}


@pytest.mark.parametrize("args,error", [
    (["maybe"], "ERR syntax error"),
    (["on", "FOO"], "ERR syntax error"),
    (["on", "PREFIX", "a"], "ERR PREFIX option requires BCAST mode to be enabled"),
    (["on", "BCAST", "OPTIN"], "ERR OPTIN and OPTOUT are not compatible with BCAST"),
    (["on", "OPTIN", "OPTOUT"], "ERR You can't specify both OPTIN mode and OPTOUT mode"),
    (["on", "BCAST", "PREFIX", "ab", "PREFIX", "a"],
     "ERR Prefix 'ab' overlaps with another provided prefix 'a'. "
     "Prefixes for a single client must not overlap."),
    (["on", "REDIRECT", "x"], "ERR value is not an integer or out of range"),
    (["on", "REDIRECT", "99999999"], "ERR The client ID you want redirect to does not exist"),
])
def test_tracking_errors(server, args, error):
    c = server.raw()
    c.hello3()
    assert c.call("CLIENT", "TRACKING", *args) == Err(error)
    assert c.call("CLIENT", "TRACKINGINFO")[b"flags"] == {b"off"}


def test_caching_and_getredir_without_tracking(server):
    c = server.raw()
    assert c.call("CLIENT", "CACHING", "yes") == Err(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
        "or OPTOUT mode enabled")
    assert c.call("CLIENT", "GETREDIR") == -1
    c.call("CLIENT", "TRACKING", "on")
    assert c.call("CLIENT", "CACHING", "maybe") == Err("ERR syntax error")
    assert c.call("CLIENT", "CACHING", "yes") == Err(
        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    assert c.call("CLIENT", "GETREDIR") == 0


def test_client_list_flags_and_reset(server, w):
    t = tracker(server, "BCAST")
    tid = t.call("CLIENT", "ID")
    line = w.execute_command("CLIENT", "LIST", "ID", tid).decode()
    assert " flags=tB " in line and " redir=0 " in line
    assert t.call("RESET") == "RESET"
    line = w.execute_command("CLIENT", "LIST", "ID", tid).decode()
    assert " flags=N " in line and " redir=-1 " in line


def test_info_counters(server, w):
    def stats():
        info = w.info("all")
        return (info["tracking_clients"], info["tracking_total_keys"],
                info["tracking_total_items"], info["tracking_total_prefixes"])

    assert wait_until(lambda: stats() == (0, 0, 0, 0))
    t1 = tracker(server)
    t2 = tracker(server)
    b = tracker(server, "BCAST", "PREFIX", "p", "PREFIX", "q")
    t1.call("MGET", "a", "b")
    t2.call("GET", "a")
    assert stats() == (3, 2, 3, 2)
    w.set("a", "1")
    assert stats() == (3, 1, 1, 2)
    b.close()
    assert wait_until(lambda: stats() == (2, 1, 1, 0))
    assert w.config_get("tracking-table-max-keys") == {"tracking-table-max-keys": "1000000"}


def test_table_limit_invalidates(server, w):
    w.config_set("tracking-table-max-keys", "2")
    try:
        t = tracker(server)
        t.call("MGET", "a", "b", "c", "d")
        # Redis trims in its cron; larder at once: either way the table comes back to 2 keys
        # and the evicted keys are invalidated.
        got = pushes(t, 2, timeout=5.0)
        assert all(p[0] == b"invalidate" and len(p[1]) == 1 for p in got)
        assert w.info("stats")["tracking_total_keys"] == 2
    finally:
        w.config_set("tracking-table-max-keys", "1000000")


@pytest.mark.larder_only
def test_swapdb_sends_a_null(server, w):
    """Unlike Redis 7.0, which leaves both databases' cached keys stale."""
    t = tracker(server)
    t.call("GET", "k")
    w.swapdb(0, 1)
    assert pushes(t, 1) == [Push([b"invalidate", None])]


@pytest.mark.larder_only
def test_memcached_writes_invalidate(mc_server):  # noqa: F811
    from pymemcache.client.base import Client as PyMemcache

    t = tracker(mc_server)
    t.call("GET", "mc:a")
    pm = PyMemcache(("127.0.0.1", mc_server.mc_port), timeout=5, connect_timeout=5)
    try:
        assert pm.set("mc:a", b"from memcached")
        assert pushes(t, 1) == [inv("mc:a")]
    finally:
        pm.close()
