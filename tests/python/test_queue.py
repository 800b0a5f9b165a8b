"""The work queue's commands (QPUT QGET QACK QLOCK QMAXLEN QTIMEOUT QPURGE QSTATS QWORKERS
QPUB QSUB), over the streams that hold it, in RESP2 and RESP3. larder's own commands."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import redis

pytestmark = pytest.mark.larder_only


def qget(r: redis.Redis, *args):
    m = r.execute_command("QGET", *args)
    if m is None:
        return None
    token, payload, prio, deliveries = m
    return token, payload, prio, deliveries


def stats(r: redis.Redis, q: str) -> dict:
    s = r.execute_command("QSTATS", q)
    if isinstance(s, list):
        s = dict(zip(s[::2], s[1::2]))
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in s.items()}


def test_put_and_get_by_priority_then_ack(r: redis.Redis) -> None:
    t_low = r.execute_command("QPUT", "jobs", "low")
    r.execute_command("QPUT", "jobs", "PRIORITY", 2, "high")
    r.execute_command("QPUT", "jobs", "PRIORITY", 1, "mid")
    assert t_low.startswith(b"0-")
    got = [qget(r, "jobs", "w1") for _ in range(3)]
    assert [g[1] for g in got] == [b"high", b"mid", b"low"]
    assert [g[2] for g in got] == [2, 1, 0]
    assert all(g[3] == 1 for g in got)
    assert qget(r, "jobs", "w1") is None
    assert got[2][0] == t_low
    # The messages wait for their acknowledgements; an ack removes the entry.
    assert stats(r, "jobs")["unacked"] == 3
    assert [r.execute_command("QACK", "jobs", g[0]) for g in got] == [1, 1, 1]
    assert r.execute_command("QACK", "jobs", got[0][0]) == 0
    assert stats(r, "jobs")["unacked"] == 0
    assert r.xlen("queue:{jobs}:p2") == 0


def test_autoack_removes_on_delivery(r: redis.Redis) -> None:
    r.execute_command("QPUT", "a", "x")
    token, payload, _, _ = qget(r, "a", "w", "AUTOACK")
    assert payload == b"x"
    assert r.execute_command("QACK", "a", token) == 0
    assert stats(r, "a")["ready"] == 0 and stats(r, "a")["unacked"] == 0


def test_ttl_expired_messages_are_counted_and_never_delivered(r: redis.Redis) -> None:
    r.execute_command("QPUT", "t", "TTL", 1, "stale")
    r.execute_command("QPUT", "t", "TTL", 60000, "fresh")
    time.sleep(0.01)
    assert qget(r, "t", "w")[1] == b"fresh"
    assert qget(r, "t", "w") is None
    assert stats(r, "t")["expired"] == 1


def test_maxlen_lock_and_purge(r: redis.Redis) -> None:
    assert r.execute_command("QMAXLEN", "m", 2) in (b"OK", "OK", True)
    r.execute_command("QPUT", "m", "1")
    r.execute_command("QPUT", "m", "PRIORITY", 2, "2")
    with pytest.raises(redis.ResponseError, match="queue is full"):
        r.execute_command("QPUT", "m", "3")
    # An unacknowledged message still counts; an acknowledged one frees its place.
    token = qget(r, "m", "w")[0]
    with pytest.raises(redis.ResponseError, match="full"):
        r.execute_command("QPUT", "m", "3")
    r.execute_command("QACK", "m", token)
    r.execute_command("QPUT", "m", "3")
    r.execute_command("QMAXLEN", "m", 0)
    r.execute_command("QLOCK", "m", 1)
    with pytest.raises(redis.ResponseError, match="queue is locked"):
        r.execute_command("QPUT", "m", "4")
    assert stats(r, "m")["locked"] == 1
    r.execute_command("QLOCK", "m", 0)
    r.execute_command("QPUT", "m", "PRIORITY", 1, "4")
    assert r.execute_command("QPURGE", "m", "PRIORITY", 1) == 1
    assert r.execute_command("QPURGE", "m") == 2
    assert qget(r, "m", "w") is None


def test_maxlen_holds_under_concurrent_puts(server) -> None:
    c = server.client(protocol=2)
    c.execute_command("QMAXLEN", "cq", 50)
    accepted = []

    def putter(i: int) -> None:
        cl = server.client(protocol=2)
        n = 0
        for j in range(40):
            try:
                cl.execute_command("QPUT", "cq", f"{i}-{j}")
                n += 1
            except redis.ResponseError as e:
                assert "full" in str(e) or "BUSY" in str(e) or "try again" in str(e)
        accepted.append(n)

    ts = [threading.Thread(target=putter, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sum(accepted) == 50
    assert stats(c, "cq")["ready"] == 50


def test_errors(r: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="PRIORITY must be 0, 1 or 2"):
        r.execute_command("QPUT", "e", "PRIORITY", 3, "x")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("QPUT", "e", "NOPE", 3, "x")
    with pytest.raises(redis.ResponseError, match="invalid queue token"):
        r.execute_command("QACK", "e", "garbage")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("QGET", "e")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("QGET", "e", "w", "BOGUS")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("QLOCK", "e", 2)
    p = r.pipeline(transaction=True)
    p.execute_command("QPUT", "e", "x")
    with pytest.raises(redis.ResponseError):
        p.execute()


def test_redelivery_after_the_visibility_timeout(r: redis.Redis) -> None:
    r.execute_command("QTIMEOUT", "rd", 200)
    r.execute_command("QPUT", "rd", "job")
    first = qget(r, "rd", "w1")
    assert qget(r, "rd", "w2") is None
    deadline = time.time() + 5
    again = None
    while again is None and time.time() < deadline:
        time.sleep(0.05)
        again = qget(r, "rd", "w2")
    assert again is not None, "the timer did not reclaim the message"
    assert again[0] == first[0] and again[1] == b"job"
    assert again[3] == 2
    # XPENDING shows it with w2 and two deliveries.
    pend = r.xpending_range("queue:{rd}:p0", "workers", "-", "+", 10)
    assert [(p["consumer"], p["times_delivered"]) for p in pend] == [(b"w2", 2)]
    assert r.execute_command("QACK", "rd", again[0]) == 1


def test_workers_list_last_seen(r: redis.Redis) -> None:
    before = int(time.time() * 1000)
    r.execute_command("QPUT", "wk", "x")
    qget(r, "wk", "alice")
    qget(r, "wk", "bob")
    ws = r.execute_command("QWORKERS", "wk")
    by_name = {w[0]: (w[1], w[2]) for w in ws}
    assert set(by_name) == {b"alice", b"bob"}
    assert by_name[b"alice"][1] == 1 and by_name[b"bob"][1] == 0
    for seen, _ in by_name.values():
        assert before - 1000 <= seen <= int(time.time() * 1000) + 1000


def test_blocking_get_is_woken_by_a_put(server) -> None:
    getter = server.client(protocol=3)
    result = {}

    def get() -> None:
        result["m"] = getter.execute_command("QGET", "bq", "w", "BLOCK", 5000)

    t = threading.Thread(target=get)
    t.start()
    time.sleep(0.2)
    assert t.is_alive()
    server.client(protocol=2).execute_command("QPUT", "bq", "PRIORITY", 1, "wake")
    t.join(5)
    assert not t.is_alive()
    assert result["m"][1] == b"wake"
    t0 = time.time()
    assert getter.execute_command("QGET", "bq", "w", "BLOCK", 100) is None
    assert time.time() - t0 >= 0.09


def test_concurrent_workers_get_distinct_messages(server) -> None:
    c = server.client(protocol=2)
    for i in range(200):
        c.execute_command("QPUT", "cw", "PRIORITY", i % 3, str(i))
    seen: list[bytes] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        cl = server.client(protocol=2)
        while True:
            m = cl.execute_command("QGET", "cw", name)
            if m is None:
                return
            assert cl.execute_command("QACK", "cw", m[0]) == 1
            with lock:
                seen.append(m[1])

    ts = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(seen) == sorted(str(i).encode() for i in range(200))


def test_publish_window_by_index(r: redis.Redis) -> None:
    for i in range(1, 6):
        assert r.execute_command("QPUB", "news", "WINDOW", 3, f"m{i}") == i
    msgs = r.execute_command("QSUB", "news", 1)
    assert [(m[0], m[1]) for m in msgs] == [(3, b"m3"), (4, b"m4"), (5, b"m5")]
    assert [m[0] for m in r.execute_command("QSUB", "news", 5, "COUNT", 10)] == [5]
    assert r.execute_command("QSUB", "news", 6) == []


def test_a_raw_consumer_sees_the_streams(r: redis.Redis) -> None:
    """The queue is plain streams: XREADGROUP from redis-cli reads it (without priority
    order, TTL checks or the timer's redelivery)."""
    r.execute_command("QPUT", "raw", "TTL", 60000, "hello")
    r.execute_command("QGET", "raw", "nobody")  # makes the group
    r.execute_command("QPUT", "raw", "second")
    got = r.xreadgroup("workers", "cli", {"queue:{raw}:p0": ">"}, count=10)
    if isinstance(got, dict):
        entries = got[b"queue:{raw}:p0"][0]
    else:
        entries = got[0][1]
    assert len(entries) == 1
    fields = entries[0][1]
    assert fields[b"payload"] == b"second"


def monitored(srv, seconds: float) -> list[str]:
    """What MONITOR shows of the server's commands for `seconds`."""
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        s.sendall(b"MONITOR\r\n")
        data = b""
        s.settimeout(0.05)
        end = time.time() + seconds
        while time.time() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            data += chunk
    lines = data.decode(errors="replace").split("\r\n")
    return [line for line in lines if line and line != "+OK"]


def test_the_reclaim_timer_is_quiet_until_a_message_is_due(server) -> None:
    r = server.client(protocol=2)
    r.config_resetstat()
    # No queue: the timer runs nothing.
    assert monitored(server, 0.35) == []
    # A message handed out and not yet due: still nothing (the timer's looks are reads of
    # its own, not commands).
    r.execute_command("QTIMEOUT", "quiet", 60000)
    r.execute_command("QPUT", "quiet", "job")
    assert qget(r, "quiet", "w1") is not None
    r.config_resetstat()
    assert monitored(server, 0.35) == []
    stats = set(r.info("commandstats")) - {"cmdstat_config|resetstat", "cmdstat_monitor"}
    assert stats == set()
    # A timeout that makes it due: the timer looks at once, its write runs as a command
    # (counted, and logged), and the message goes back.
    r.execute_command("QTIMEOUT", "quiet", 100)
    deadline = time.time() + 3
    again = None
    while again is None and time.time() < deadline:
        time.sleep(0.02)
        again = qget(r, "quiet", "w2")
    assert again is not None and again[3] == 2
    assert r.info("commandstats")["cmdstat_xautoclaim"]["calls"] == 1


@pytest.mark.parametrize("drop_unsynced", [False, True], ids=["page-cache", "power-loss"])
def test_acknowledged_puts_and_acks_survive_kill_9_under_always(start_server, drop_unsynced):
    """Producers put and consumers get and acknowledge while the server is killed with
    SIGKILL: after the restart every acknowledged put that was not acknowledged by a worker
    is handed out again (those taken and not acknowledged once the visibility timeout
    passes), and no message acknowledged by a worker ever is."""
    args = ["--appendfsync", "always"]
    if drop_unsynced:
        args += ["--aof-test-drop-unsynced", "yes"]
    srv = start_server(*args)
    srv.client(protocol=2).execute_command("QTIMEOUT", "crash", 300)
    put_ok: set[bytes] = set()
    acked: set[bytes] = set()
    # Acknowledgements sent, answered or not (one the kill cut off may have been done).
    ack_sent: set[bytes] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def producer(t: int) -> None:
        c = redis.Redis(port=srv.port, socket_timeout=5)
        try:
            i = 0
            while not stop.is_set():
                i += 1
                payload = f"p{t}:{i}".encode()
                c.execute_command("QPUT", "crash", "PRIORITY", i % 3, payload)
                with lock:
                    put_ok.add(payload)
        except Exception:
            pass  # killed under us

    def consumer(t: int) -> None:
        c = redis.Redis(port=srv.port, socket_timeout=5)
        try:
            while not stop.is_set():
                m = c.execute_command("QGET", "crash", f"w{t}")
                if m is None:
                    time.sleep(0.001)
                    continue
                with lock:
                    ack_sent.add(m[1])
                if c.execute_command("QACK", "crash", m[0]) == 1:
                    with lock:
                        acked.add(m[1])
        except Exception:
            pass

    threads = [threading.Thread(target=producer, args=(t,), daemon=True) for t in range(3)]
    threads += [threading.Thread(target=consumer, args=(t,), daemon=True) for t in range(3)]
    for th in threads:
        th.start()
    time.sleep(0.8)
    assert srv.proc is not None
    srv.proc.kill()
    srv.proc.wait(timeout=10)
    stop.set()
    for th in threads:
        th.join(10)
    srv.stopped = False
    srv = srv.start()
    c = srv.client(protocol=2)
    delivered: list[bytes] = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 1.5:
        m = c.execute_command("QGET", "crash", "after", "AUTOACK")
        if m is None:
            time.sleep(0.02)
            continue
        delivered.append(m[1])
        quiet_since = time.monotonic()
    assert len(put_ok) > 0 and len(acked) > 0
    assert len(delivered) == len(set(delivered))
    assert not set(delivered) & acked, "acknowledged messages delivered again"
    missing = put_ok - ack_sent - set(delivered)
    assert not missing, f"{len(missing)} acknowledged puts lost"
