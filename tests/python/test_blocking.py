"""Blocking commands: BLPOP BRPOP (and CLIENT UNBLOCK), across connections and threads.

A blocked client is woken by the write to its key, whatever connection, thread or transaction
makes it; clients blocked on one key are served in the order they blocked; timeouts, CLIENT
UNBLOCK, CLIENT KILL and a disconnect end a wait. Every test here also runs against Redis 7.0.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
import redis

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")


def blocked_clients(server) -> int:
    with server.admin() as a:
        info = a.call("INFO", "clients")
    if isinstance(info, bytes):
        info = info.decode()
    for line in info.splitlines():
        if line.startswith("blocked_clients:"):
            return int(line.split(":")[1])
    raise AssertionError("no blocked_clients in INFO")


def wait_blocked(server, n: int, timeout: float = 5.0) -> None:
    """Wait until exactly `n` clients are blocked."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if blocked_clients(server) == n:
            return
        time.sleep(0.005)
    raise AssertionError(f"blocked_clients never reached {n}: {blocked_clients(server)}")


class Call:
    """A command run on its own connection in a thread: its reply or its exception."""

    def __init__(self, client: redis.Redis, *args) -> None:
        self.client = client
        self.args = args
        self.result = None
        self.error: Exception | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.client.execute_command(*self.args)
        except Exception as e:  # noqa: BLE001 - handed to the test
            self.error = e
        finally:
            self.done.set()

    def get(self, timeout: float = 5.0):
        assert self.done.wait(timeout), f"{self.args} did not return"
        if self.error is not None:
            raise self.error
        return self.result


def test_serves_at_once_from_the_first_nonempty_key(r):
    r.rpush("b", "b1", "b2")
    r.rpush("c", "c1")
    assert list(r.blpop(["a", "b", "c"], timeout=1)) == [b"b", b"b1"]
    assert list(r.brpop(["a", "c", "b"], timeout=1)) == [b"c", b"c1"]


def test_pop_ends_and_reply_shape(r):
    r.rpush("l", "x", "y", "z")
    assert list(r.blpop(["l"], timeout=0)) == [b"l", b"x"]
    assert list(r.brpop(["l"], timeout=0)) == [b"l", b"z"]
    assert list(r.execute_command("BLPOP", "l", "0")) == [b"l", b"y"]
    # The last element deletes the list.
    assert r.exists("l") == 0


def test_timeout_answers_null(r):
    started = time.monotonic()
    assert r.execute_command("BLPOP", "none", "0.2") is None
    elapsed = time.monotonic() - started
    assert 0.15 <= elapsed < 3
    assert r.execute_command("BRPOP", "none", "other", "0.05") is None


def test_timeout_null_encoding(rawp, protocol):
    rawp.send_command("BLPOP", "none", "0.01")
    want = b"*-1\r\n" if protocol == 2 else b"_\r\n"
    assert rawp.recv_exact(len(want)) == want


@pytest.mark.parametrize("timeout,error", [
    ("-1", "ERR timeout is negative"),
    ("abc", "ERR timeout is not a float or out of range"),
    ("1x", "ERR timeout is not a float or out of range"),
    ("nan", "ERR timeout is not a float or out of range"),
    # Too large for a count of milliseconds: Redis's conversion turns it negative.
    ("inf", "ERR timeout is negative"),
    ("1e30", "ERR timeout is negative"),
])
def test_timeout_errors(raw, timeout, error):
    assert raw.call("BLPOP", "k", timeout) == Err(error)


def test_wrongtype_on_first_try(raw):
    raw.call("SET", "s", "v")
    assert raw.call("BLPOP", "s", "0.01") == WRONGTYPE
    # Keys are looked at in order: a list before the string serves first.
    raw.call("RPUSH", "l", "a")
    assert raw.call("BLPOP", "l", "s", "0") == [b"l", b"a"]
    assert raw.call("BLPOP", "nokey", "s", "0") == WRONGTYPE


def test_arity(raw):
    assert raw.call("BLPOP", "k") == Err("ERR wrong number of arguments for 'blpop' command")
    assert raw.call("BRPOP") == Err("ERR wrong number of arguments for 'brpop' command")


def test_woken_by_a_push_from_another_connection(server, protocol):
    waiter = Call(server.client(protocol=protocol), "BRPOP", "q", "0")
    wait_blocked(server, 1)
    pusher = server.client()
    assert pusher.rpush("q", "a", "b") == 2
    assert list(waiter.get()) == [b"q", b"b"]
    assert pusher.lrange("q", 0, -1) == [b"a"]
    wait_blocked(server, 0)


def test_clients_served_in_the_order_they_blocked(server):
    calls = []
    for i in range(4):
        calls.append(Call(server.client(), "BLPOP", "q", "0"))
        wait_blocked(server, i + 1)
    server.client().rpush("q", "a", "b", "c")
    got = [list(c.get()) for c in calls[:3]]
    assert got == [[b"q", b"a"], [b"q", b"b"], [b"q", b"c"]]
    # The fourth is still waiting.
    wait_blocked(server, 1)
    assert not calls[3].done.is_set()
    server.client().lpush("q", "d")
    assert list(calls[3].get()) == [b"q", b"d"]


def test_client_blocked_on_several_keys(server):
    waiter = Call(server.client(), "BLPOP", "k1", "k2", "k3", "0")
    wait_blocked(server, 1)
    server.client().rpush("k3", "three")
    assert list(waiter.get()) == [b"k3", b"three"]


def test_served_after_exec_ends(server):
    waiter = Call(server.client(), "BLPOP", "q", "0")
    wait_blocked(server, 1)
    c = server.client()
    # A transaction that pushes and pops again leaves nothing when it ends.
    with c.pipeline(transaction=True) as p:
        p.rpush("q", "x")
        p.lpop("q")
        assert p.execute() == [1, b"x"]
    time.sleep(0.1)
    assert not waiter.done.is_set()
    with c.pipeline(transaction=True) as p:
        p.rpush("q", "y", "z")
        p.rpush("q", "w")
        p.execute()
    assert list(waiter.get()) == [b"q", b"y"]
    assert c.lrange("q", 0, -1) == [b"z", b"w"]


def test_never_blocks_inside_multi(raw):
    raw.call("MULTI")
    assert raw.call("BLPOP", "none", "0") == "QUEUED"
    raw.call("RPUSH", "l", "a")
    raw.call("BLPOP", "l", "0")
    assert raw.call("EXEC") == [None, 1, [b"l", b"a"]]


def test_inside_multi_each_blocking_command_answers_redis_s_null(raw):
    # Redis answers BLMOVE and BRPOPLPUSH with a null bulk there, the others with a null
    # array (and all of them so when their timeout ends outside MULTI).
    raw.call("MULTI")
    for cmd in (["BLMOVE", "none", "d", "LEFT", "RIGHT", "0"],
                ["BRPOPLPUSH", "none", "d", "0"],
                ["BLPOP", "none", "0"], ["BZPOPMIN", "none", "0"],
                ["BLMPOP", "0", "1", "none", "LEFT"],
                ["XREAD", "BLOCK", "0", "STREAMS", "none", "$"]):
        assert raw.call(*cmd) == "QUEUED"
    raw.send_command("EXEC")
    frame = raw.read_frame()
    assert [f.kind for f in frame.value] == ["$", "$", "*", "*", "*", "*"]
    assert all(f.value is None for f in frame.value)


def test_type_change_while_blocked_keeps_waiting(server):
    waiter = Call(server.client(), "BLPOP", "k", "0")
    wait_blocked(server, 1)
    c = server.client()
    c.set("k", "a string")
    time.sleep(0.1)
    assert not waiter.done.is_set()
    c.delete("k")
    c.rpush("k", "v")
    assert list(waiter.get()) == [b"k", b"v"]


def test_deleted_key_then_timeout(server):
    waiter = Call(server.client(), "BLPOP", "k", "0.3")
    wait_blocked(server, 1)
    c = server.client()
    c.rpush("other", "x")
    c.delete("k")
    assert waiter.get() is None
    wait_blocked(server, 0)


def test_client_unblock(server):
    c = server.client()
    waiter_client = server.client()
    my_id = waiter_client.client_id()
    w = Call(waiter_client, "BLPOP", "k", "0")
    wait_blocked(server, 1)
    assert c.execute_command("CLIENT", "UNBLOCK", my_id) == 1
    assert w.get() is None
    wait_blocked(server, 0)
    # Not blocked any more.
    assert c.execute_command("CLIENT", "UNBLOCK", my_id) == 0
    w = Call(waiter_client, "BRPOP", "k", "0")
    wait_blocked(server, 1)
    assert c.execute_command("CLIENT", "UNBLOCK", my_id, "ERROR") == 1
    with pytest.raises(redis.ResponseError, match="client unblocked via CLIENT UNBLOCK"):
        w.get()
    # The connection goes on.
    assert waiter_client.ping()


def test_client_unblock_errors(raw):
    assert raw.call("CLIENT", "UNBLOCK", "abc") == \
        Err("ERR value is not an integer or out of range")
    assert raw.call("CLIENT", "UNBLOCK", "1", "foo") == \
        Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    assert raw.call("CLIENT", "UNBLOCK", "1", "timeout", "x") == Err(
        "ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.")
    assert raw.call("CLIENT", "UNBLOCK", "999999") == 0


def test_killed_while_blocked_loses_nothing(server):
    victim = server.raw()
    vid = victim.call("CLIENT", "ID")
    victim.send_command("BLPOP", "k", "0")
    wait_blocked(server, 1)
    c = server.client()
    assert b" flags=b " in c.execute_command("CLIENT", "LIST", "ID", vid)
    assert c.execute_command("CLIENT", "KILL", "ID", vid) == 1
    assert victim.is_closed()
    wait_blocked(server, 0)
    c.rpush("k", "kept")
    assert c.lrange("k", 0, -1) == [b"kept"]


def test_disconnect_while_blocked(server):
    raw = server.raw()
    raw.send_command("BLPOP", "k", "0")
    wait_blocked(server, 1)
    raw.close()
    wait_blocked(server, 0)
    c = server.client()
    c.rpush("k", "kept")
    assert c.lrange("k", 0, -1) == [b"kept"]


def test_pipelined_requests_wait_behind_the_blocked_one(server):
    raw = server.raw()
    raw.send(raw.encode("BLPOP", "k", "0") + raw.encode("PING"))
    wait_blocked(server, 1)
    server.client().rpush("k", "v")
    want = b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n"
    assert raw.recv_exact(len(want)) == want


def test_notifications_when_served(server):
    c = server.client()
    c.config_set("notify-keyspace-events", "KEA")
    try:
        p = c.pubsub()
        p.psubscribe("__keyspace@0__:*")
        assert p.get_message(timeout=1)["type"] == "psubscribe"
        w = Call(server.client(), "BLPOP", "k", "0")
        wait_blocked(server, 1)
        c.rpush("k", "v")
        assert list(w.get()) == [b"k", b"v"]
        events = []
        deadline = time.monotonic() + 2
        while len(events) < 3 and time.monotonic() < deadline:
            m = p.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                events.append(m["data"])
        assert events == [b"rpush", b"lpop", b"del"]
        p.close()
    finally:
        c.config_set("notify-keyspace-events", "")


def test_many_producers_and_consumers(start_server):
    """Every element pushed by several producer threads reaches exactly one of several
    blocked consumers, whatever worker threads they are on."""
    srv = start_server("--threads", "4")
    n_consumers, n_producers, per_producer = 6, 3, 200
    total = n_producers * per_producer
    got: list[bytes] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[Exception] = []

    def consume() -> None:
        c = srv.client()
        try:
            while not stop.is_set():
                item = c.blpop(["jobs", "other"], timeout=0.2)
                if item is not None:
                    with lock:
                        got.append(item[1])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def produce(p: int) -> None:
        c = srv.client()
        try:
            for i in range(per_producer):
                c.rpush("jobs", f"{p}:{i}")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    consumers = [threading.Thread(target=consume, daemon=True) for _ in range(n_consumers)]
    for t in consumers:
        t.start()
    producers = [threading.Thread(target=produce, args=(p,), daemon=True)
                 for p in range(n_producers)]
    for t in producers:
        t.start()
    for t in producers:
        t.join(30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with lock:
            if len(got) >= total:
                break
        time.sleep(0.01)
    stop.set()
    for t in consumers:
        t.join(5)
    assert not errors, errors
    assert sorted(got) == sorted(f"{p}:{i}".encode() for p in range(n_producers)
                                 for i in range(per_producer))


def test_blmove_and_brpoplpush_serve_at_once(r):
    r.rpush("src", "a", "b", "c")
    assert r.execute_command("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0") == b"a"
    assert r.execute_command("BRPOPLPUSH", "src", "dst", "0") == b"c"
    assert r.lrange("dst", 0, -1) == [b"c", b"a"]
    # Same key: a rotation.
    assert r.execute_command("BLMOVE", "dst", "dst", "right", "left", "0") == b"a"
    assert r.lrange("dst", 0, -1) == [b"a", b"c"]
    assert r.execute_command("BLMOVE", "none", "dst", "LEFT", "LEFT", "0.01") is None
    assert r.execute_command("BRPOPLPUSH", "none", "dst", "0.01") is None


def test_blmove_errors(raw):
    assert raw.call("BLMOVE", "a", "b", "UP", "LEFT", "0") == Err("ERR syntax error")
    assert raw.call("BLMOVE", "a", "b", "LEFT", "LEFT", "-1") == Err("ERR timeout is negative")
    raw.call("RPUSH", "l", "x")
    raw.call("SET", "s", "v")
    assert raw.call("BLMOVE", "l", "s", "LEFT", "LEFT", "0") == WRONGTYPE
    assert raw.call("BRPOPLPUSH", "s", "l", "0") == WRONGTYPE
    assert raw.call("LRANGE", "l", "0", "-1") == [b"x"]


def test_blmove_woken_then_chains_to_a_waiter_on_its_destination(server):
    mover = Call(server.client(), "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
    wait_blocked(server, 1)
    popper = Call(server.client(), "BLPOP", "dst", "0")
    wait_blocked(server, 2)
    server.client().rpush("src", "job")
    assert mover.get() == b"job"
    assert list(popper.get()) == [b"dst", b"job"]
    wait_blocked(server, 0)
    c = server.client()
    assert c.exists("src", "dst") == 0


def test_brpoplpush_woken(server):
    w = Call(server.client(), "BRPOPLPUSH", "q", "done", "0")
    wait_blocked(server, 1)
    server.client().lpush("q", "x")
    assert w.get() == b"x"
    assert server.client().lrange("done", 0, -1) == [b"x"]


def test_blmpop(r):
    r.rpush("b", "1", "2", "3")
    assert r.execute_command("BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "2") == \
        [b"b", [b"1", b"2"]]
    assert r.execute_command("BLMPOP", "0", "1", "b", "RIGHT") == [b"b", [b"3"]]
    assert r.execute_command("BLMPOP", "0.01", "2", "a", "b", "LEFT") is None


def test_blmpop_errors(raw):
    assert raw.call("BLMPOP", "0", "0", "a", "LEFT") == \
        Err("ERR numkeys should be greater than 0")
    assert raw.call("BLMPOP", "0", "1", "a", "UP") == Err("ERR syntax error")
    assert raw.call("BLMPOP", "0", "1", "a", "LEFT", "COUNT", "0") == \
        Err("ERR count should be greater than 0")
    assert raw.call("BLMPOP", "x", "1", "a", "LEFT") == \
        Err("ERR timeout is not a float or out of range")
    assert raw.call("BLMPOP", "0", "1") == \
        Err("ERR wrong number of arguments for 'blmpop' command")


def test_blmpop_woken_on_any_key(server):
    w = Call(server.client(), "BLMPOP", "0", "3", "k1", "k2", "k3", "RIGHT", "COUNT", "5")
    wait_blocked(server, 1)
    server.client().rpush("k2", "a", "b")
    assert w.get() == [b"k2", [b"b", b"a"]]


def test_bzpopmin_bzpopmax_serve_at_once(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert list(r.bzpopmin(["none", "z"], timeout=0)) == [b"z", b"a", 1.0]
    assert list(r.bzpopmax(["z"], timeout=0)) == [b"z", b"c", 3.0]
    assert r.execute_command("BZPOPMIN", "none", "0.01") is None


def test_bzpop_reply_bytes(rawp, protocol):
    rawp.call("ZADD", "z", "1.5", "m")
    rawp.send_command("BZPOPMIN", "z", "0")
    if protocol == 2:
        want = b"*3\r\n$1\r\nz\r\n$1\r\nm\r\n$3\r\n1.5\r\n"
    else:
        want = b"*3\r\n$1\r\nz\r\n$1\r\nm\r\n,1.5\r\n"
    assert rawp.recv_exact(len(want)) == want


def test_bzpop_woken_and_wrongtype(server, raw):
    raw.call("SET", "s", "v")
    assert raw.call("BZPOPMAX", "s", "0") == WRONGTYPE
    w = Call(server.client(), "BZPOPMAX", "z1", "z2", "0")
    wait_blocked(server, 1)
    server.client().zadd("z2", {"x": 5, "y": 7})
    assert list(w.get()) == [b"z2", b"y", 7.0]


def scored(reply):
    """A [key, [[member, score], ...]] reply with its scores as floats (RESP2 bulk strings)."""
    key, pairs = reply
    return [key, [[m, float(s)] for m, s in pairs]]


def test_bzmpop(server, r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert scored(r.execute_command("BZMPOP", "0", "2", "none", "z", "MAX", "COUNT", "2")) == \
        [b"z", [[b"c", 3.0], [b"b", 2.0]]]
    assert r.execute_command("BZMPOP", "0.01", "1", "none", "MIN") is None
    w = Call(server.client(), "BZMPOP", "0", "1", "q", "MIN")
    wait_blocked(server, 1)
    server.client().zadd("q", {"only": 4})
    assert scored(w.get()) == [b"q", [[b"only", 4.0]]]


def test_bzmpop_errors(raw):
    assert raw.call("BZMPOP", "0", "0", "z", "MIN") == \
        Err("ERR numkeys should be greater than 0")
    assert raw.call("BZMPOP", "0", "1", "z", "UP") == Err("ERR syntax error")
    assert raw.call("BZMPOP", "-1", "1", "z", "MIN") == Err("ERR timeout is negative")


# The kernel's receive timestamp of a TCP read (Linux: SO_TIMESTAMPNS_OLD, a timespec).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def stamped_conn(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5.0)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return s


def read_stamped(s: socket.socket) -> tuple[bytes, int]:
    """The next reply's bytes and when the kernel queued them (ns, real time). On loopback
    that is stamped as the server's send runs, so two stamps give the order of two sends."""
    data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(16))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", payload[:16])
            return data, sec * 1_000_000_000 + nsec
    raise AssertionError("the read carried no receive timestamp")


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_a_woken_client_is_sent_its_reply_before_the_pusher(start_server, appendonly):
    """A push that wakes a blocked client on the same worker thread: the woken client's
    reply is sent before the pusher's own, as Redis sends them, so the pusher's reply never
    stands between an item and its consumer. With the log on, the pusher's reply also
    waits for its record to be written."""
    srv = start_server("--threads", "1", "--appendonly", appendonly)
    consumer, producer = stamped_conn(srv.port), stamped_conn(srv.port)
    try:
        for i in range(20):
            consumer.sendall(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
            wait_blocked(srv, 1)
            producer.sendall(b"*3\r\n$5\r\nLPUSH\r\n$1\r\nq\r\n$2\r\nv%d\r\n" % (i % 10))
            popped, t_popped = read_stamped(consumer)
            pushed, t_pushed = read_stamped(producer)
            assert popped == b"*2\r\n$1\r\nq\r\n$2\r\nv%d\r\n" % (i % 10)
            assert pushed == b":1\r\n"
            assert t_popped <= t_pushed, f"round {i}: the pusher's reply went first"
    finally:
        consumer.close()
        producer.close()


def test_blocked_clients_each_time_out_at_their_own_deadline(server):
    """Clients blocked with different timeouts, filed in no particular order: each answers
    nil once its own timeout has passed and not before, while one blocked for ever stays
    blocked until a push serves it."""
    timeouts = [0.6, 0.2, 0.45, 0.8, 0.3, 0.5]
    forever = server.raw()
    forever.send_command("BLPOP", "tq:forever", "0")
    conns = []
    start = time.monotonic()
    for i, t in enumerate(timeouts):
        c = server.raw()
        c.send_command("BLPOP", f"tq:{i}", str(t))
        conns.append((c, t))
    for c, t in sorted(conns, key=lambda ct: ct[1]):
        assert c.read_reply() is None
        assert time.monotonic() - start >= t - 0.01, f"the {t} s wait ended early"
    wait_blocked(server, 1)
    with server.admin() as a:
        a.call("LPUSH", "tq:forever", "job")
    assert forever.read_reply() == [b"tq:forever", b"job"]
    wait_blocked(server, 0)
