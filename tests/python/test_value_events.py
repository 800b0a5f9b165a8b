"""Value events (larder only, docs/events.md): SUBSCRIBE `__values@<db>__:<key>` or PSUBSCRIBE a
pattern of such channels and get, on each change of a key, `<seq> <event> <version> <type>\\n`
and the value it left (writes) or took away (deletes, expiry, eviction); `<seq> flushdb 0` when
its database is flushed; and `<seq> dropped <N>` before the next event after a client fell more
than `value-events-buffer-limit` behind. Stock redis-py, redis-cli and memcached-door writes.
"""

import shutil
import socket
import subprocess
import time

import pytest
from pymemcache.client.base import Client as PyMemcache

from conftest import RawConn, Simple, wait_until
from test_memcached_support import mc_server, mcd  # noqa: F401  (fixtures)

pytestmark = pytest.mark.larder_only


def parse(payload: bytes):
    """(seq, event, version, type or None, value or None) of one value-event payload."""
    head, sep, value = payload.partition(b"\n")
    words = head.decode().split(" ")
    seq, event, version = int(words[0]), words[1], int(words[2])
    if not sep:
        assert len(words) == 3, payload
        return seq, event, version, None, None
    assert len(words) == 4, payload
    return seq, event, version, words[3], value


def messages(ps, n, timeout=5.0):
    """`n` (p)messages from a redis-py PubSub, parsed: (channel, seq, event, version, type,
    value)."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = ps.get_message(timeout=0.2)
        if m is not None and m["type"] in ("message", "pmessage"):
            out.append((m["channel"], *parse(m["data"])))
    assert len(out) == n, f"got {len(out)} of {n}: {out}"
    return out


def subscribed(client, *channels, patterns=()):
    ps = client.pubsub()
    if channels:
        ps.subscribe(*channels)
    if patterns:
        ps.psubscribe(*patterns)
    confirmations = 0
    deadline = time.monotonic() + 5
    while confirmations < len(channels) + len(patterns) and time.monotonic() < deadline:
        m = ps.get_message(timeout=0.2)
        if m is not None and m["type"] in ("subscribe", "psubscribe"):
            confirmations += 1
    assert confirmations == len(channels) + len(patterns)
    return ps


@pytest.fixture
def restore_budget(server):
    yield
    with server.admin() as c:
        c.call("CONFIG", "SET", "value-events-buffer-limit", "1mb")


def test_writes_and_deletes_carry_the_value(server, r):
    ps = subscribed(r, "__values@0__:user:1")
    w = server.client()
    w.set("user:1", "alice")
    w.set("user:2", "not mine")
    w.append("user:1", "!")
    w.delete("user:1")
    got = messages(ps, 3)
    assert [(c, s, e, t, v) for c, s, e, _, t, v in got] == [
        (b"__values@0__:user:1", 1, "set", "string", b"alice"),
        (b"__values@0__:user:1", 2, "set", "string", b"alice!"),
        (b"__values@0__:user:1", 3, "del", "string", b"alice!"),
    ]
    versions = [v for _, _, _, v, _, _ in got]
    assert versions[1] > versions[0] > 0 and versions[2] == versions[1]
    # Binary values arrive as they are.
    w.set("user:1", b"\x00\r\n\xff")
    assert messages(ps, 1)[0][5] == b"\x00\r\n\xff"


def test_patterns_lists_and_flushdb(server, r):
    ps = subscribed(r, patterns=["__values@0__:q:*"])
    w = server.client()
    w.rpush("q:jobs", "a", "b c")
    w.lpop("q:jobs")
    w.set("other", "x")
    w.execute_command("SELECT", "1")
    w.set("q:jobs", "in db 1")
    w.execute_command("SELECT", "0")
    w.flushdb()
    got = messages(ps, 3)
    assert [(c, s, e, t, v) for c, s, e, _, t, v in got] == [
        (b"__values@0__:q:jobs", 1, "set", "list", b"*2\r\n$1\r\na\r\n$3\r\nb c\r\n"),
        (b"__values@0__:q:jobs", 2, "set", "list", b"*1\r\n$3\r\nb c\r\n"),
        (b"__values@0__:", 3, "flushdb", None, None),
    ]
    # PUBSUB sees value subscriptions as ordinary ones.
    assert w.execute_command("PUBSUB", "NUMPAT") == 1


def test_hashes_sets_and_sorted_sets_carry_their_values(server, r):
    ps = subscribed(r, patterns=["__values@0__:c:*"])
    w = server.client()
    w.hset("c:h", mapping={"f": "v", "g": "w"})
    w.sadd("c:s", "x")
    w.zadd("c:z", {"b": 1.5, "a": 2})
    w.srem("c:s", "x")
    got = messages(ps, 4)
    assert [(c, e, t) for c, _, e, _, t, _ in got] == [
        (b"__values@0__:c:h", "set", "hash"),
        (b"__values@0__:c:s", "set", "set"),
        (b"__values@0__:c:z", "set", "zset"),
        (b"__values@0__:c:s", "del", "set"),
    ]
    hash_value = got[0][5]
    assert hash_value.startswith(b"*4\r\n")
    pairs = hash_value.split(b"\r\n")[2::2]
    assert dict(zip(pairs[0::2], pairs[1::2])) == {b"f": b"v", b"g": b"w"}
    assert got[1][5] == b"*1\r\n$1\r\nx\r\n"
    assert got[2][5] == b"*4\r\n$1\r\nb\r\n$3\r\n1.5\r\n$1\r\na\r\n$1\r\n2\r\n"
    # The set SREM emptied is deleted; the `del` carries what the command left of it.
    assert got[3][5] == b"*0\r\n"


def test_active_expiry_sends_the_expired_value(server, r):
    ps = subscribed(r, "__values@0__:session")
    w = server.client()
    w.set("session", "token", px=50)
    got = messages(ps, 2, timeout=5)
    assert [(e, v) for _, _, e, _, _, v in got] == [("set", b"token"), ("expired", b"token")]
    assert got[1][3] == got[0][3]


def test_transaction_events_arrive_together_in_order(server, r):
    ps = subscribed(r, patterns=["__values@0__:*"])
    w = server.client()
    with w.pipeline(transaction=True) as p:
        p.set("a", "1").rpush("l", "x").delete("a").execute()
    got = messages(ps, 3)
    assert [(c, s, e) for c, s, e, _, _, _ in got] == [
        (b"__values@0__:a", 1, "set"),
        (b"__values@0__:l", 2, "set"),
        (b"__values@0__:a", 3, "del"),
    ]


def test_subscriptions_count_separately(server, r):
    ps = subscribed(r, "__values@0__:k", patterns=["__values@0__:*"])
    other = subscribed(server.client(), "__values@0__:k")
    w = server.client()
    w.set("j", "1")
    w.set("k", "2")
    got = messages(ps, 3)
    assert sorted((c, s, e) for c, s, e, _, _, _ in got) == [
        (b"__values@0__:j", 1, "set"),
        (b"__values@0__:k", 1, "set"),
        (b"__values@0__:k", 2, "set"),
    ]
    assert [(c, s) for c, s, _, _, _, _ in messages(other, 1)] == [(b"__values@0__:k", 1)]


def _silent_subscriber(port: int, channel: str) -> socket.socket:
    """A subscriber that does not read after its confirmation until told to (a modest receive
    buffer, so what the kernel holds stays well under what the test writes; a tiny one would
    make reading it back slow)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.sendall(RawConn.encode("SUBSCRIBE", channel))
    buf = b""
    while buf.count(b"\r\n") < 4:
        buf += s.recv(4096)
    return s


def _read_messages(sock: socket.socket, idle: float = 0.5):
    """Every value-event message the socket has, until it stays quiet for `idle` seconds."""
    sock.settimeout(idle)
    data = b""
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    out = []
    at = 0
    while at < len(data):
        assert data[at:at + 4] == b"*3\r\n", data[at:at + 40]
        at += 4
        parts = []
        for _ in range(3):
            end = data.index(b"\r\n", at)
            n = int(data[at + 1:end])
            parts.append(data[end + 2:end + 2 + n])
            at = end + 2 + n + 2
        out.append(parse(parts[2]))
    return out


def test_slow_subscriber_gets_dropped_marker_fast_one_gets_all(server, restore_budget):
    admin = server.raw()
    assert admin.call("CONFIG", "SET", "value-events-buffer-limit", "256kb") == Simple("OK")
    channel = "__values@0__:big"
    slow = _silent_subscriber(server.port, channel)
    try:
        fast = server.raw()
        fast.send_command("SUBSCRIBE", channel)
        fast.read_reply()
        w = server.raw()
        value = b"v" * 32768
        batches, per_batch = 100, 4  # 12.5 MB in all (past any socket buffers), 128 kB at a time
        for i in range(batches):
            w.send(RawConn.encode("SET", "big", value) * per_batch)
            for _ in range(per_batch):
                assert w.read_reply() == Simple("OK")
            # The fast subscriber reads each batch before the next (it never falls behind).
            for j in range(per_batch):
                kind, ch, payload = fast.read_reply()
                assert (kind, ch) == (b"message", channel.encode())
                seq, event, _, ty, v = parse(payload)
                assert (seq, event, ty, v) == (i * per_batch + j + 1, "set", "string", value)
        # The server never closed the slow one for it.
        assert admin.call("PUBSUB", "NUMSUB", channel) == [channel.encode(), 2]
        total = batches * per_batch
        early = _read_messages(slow)
        assert 0 < len(early) < total
        assert [m[0] for m in early] == list(range(1, len(early) + 1))
        # Once it has read, the next event is preceded by how many it missed.
        assert w.call("SET", "big", "last") == Simple("OK")
        late = _read_messages(slow)
        k = len(early)
        assert len(late) == 2, late
        assert late[0] == (k + 1, "dropped", total - k, None, None)
        assert late[1][:2] == (k + 2, "set") and late[1][4] == b"last"
        kind, _, payload = fast.read_reply()
        assert parse(payload)[0] == total + 1
    finally:
        slow.close()


def test_config_parameter(r, restore_budget):
    # (redis-py decodes CONFIG GET replies.)
    assert r.config_get("value-events-buffer-limit") == {"value-events-buffer-limit": "1048576"}
    assert r.config_set("value-events-buffer-limit", "64kb")
    assert r.config_get("value-events-buffer-limit") == {"value-events-buffer-limit": "65536"}


def test_memcached_writes_produce_events(mc_server):  # noqa: F811
    sub = mc_server.client(protocol=2)
    ps = subscribed(sub, patterns=["__values@0__:mc:*"])
    pm = PyMemcache(("127.0.0.1", mc_server.mc_port), timeout=5, connect_timeout=5)
    try:
        assert pm.set("mc:a", b"from memcached")
        assert pm.append("mc:a", b"!")
        assert pm.incr("mc:n", 1) is None  # a miss: no write
        assert pm.set("mc:n", b"41")
        assert pm.incr("mc:n", 1) == 42
        assert pm.delete("mc:a")
        got = messages(ps, 5)
        assert [(c, s, e, t, v) for c, s, e, _, t, v in got] == [
            (b"__values@0__:mc:a", 1, "set", "string", b"from memcached"),
            (b"__values@0__:mc:a", 2, "set", "string", b"from memcached!"),
            (b"__values@0__:mc:n", 3, "set", "string", b"41"),
            (b"__values@0__:mc:n", 4, "set", "string", b"42"),
            (b"__values@0__:mc:a", 5, "del", "string", b"from memcached!"),
        ]
    finally:
        pm.close()


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli not installed")
def test_redis_cli_example_from_the_docs(server):
    """docs/events.md's example, as written there."""
    sub = subprocess.Popen(
        # --no-raw: print as on a terminal, although stdout is a pipe here.
        ["redis-cli", "--no-raw", "-p", str(server.port), "SUBSCRIBE", "__values@0__:user:1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        admin = server.raw()
        assert wait_until(lambda: admin.call("PUBSUB", "NUMSUB", "__values@0__:user:1")
                          == [b"__values@0__:user:1", 1])
        subprocess.run(["redis-cli", "-p", str(server.port), "SET", "user:1", "alice"],
                       check=True, capture_output=True, timeout=10)
        lines = []
        deadline = time.monotonic() + 5
        while len(lines) < 7 and time.monotonic() < deadline:
            line = sub.stdout.readline()
            if not line:
                break
            lines.append(line.decode().rstrip("\n"))
        version = lines[6].split(" ")[3]
        assert int(version) > 0
        assert lines == [
            "Reading messages... (press Ctrl-C to quit)",
            '1) "subscribe"',
            '2) "__values@0__:user:1"',
            "3) (integer) 1",
            '1) "message"',
            '2) "__values@0__:user:1"',
            f'3) "1 set {version} string\\nalice"',
        ], lines
    finally:
        sub.kill()
        sub.wait()
