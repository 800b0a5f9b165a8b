"""MONITOR: Redis 7.0's lines (`+<secs>.<micros> [<db> <addr>] "arg" ...`, sdscatrepr quoting),
what is shown and what is not (admin commands, rejected commands, queued commands, secrets),
EXEC, monitor mode (own commands, no keyspace access, RESET ends it, CLIENT PAUSE and the idle
timeout spare it), the normal class's output limit, redis-py's `monitor()` API, and larder's
memcached door.

The module's server runs two worker threads (`--threads 2`; connections are dealt round robin,
so a monitor and the clients it watches sit on different threads). Every test not marked
`larder_only` passes against redis-server 7.0.
"""

from __future__ import annotations

import re
import socket
import time
from typing import Iterator

import pytest

from conftest import RawConn, Server, ServerFactory, Simple, parse_info, wait_until
from test_memcached_support import McBin, McText, start_with_door

LINE = re.compile(r"^(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] ?(.*)$")

DEFAULT_COBL = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


@pytest.fixture(scope="module")
def _mon_server(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("monitor"))
    srv = factory("--threads", "2")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def srv(_mon_server: Server) -> Iterator[Server]:
    with _mon_server.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
        assert conn.call("CONFIG", "SET", "client-output-buffer-limit", DEFAULT_COBL) == "OK"
    yield _mon_server
    _mon_server.close_clients()
    assert _mon_server.alive(), f"server died during the test\n{_mon_server.log_tail()}"


def addr_of(conn: RawConn) -> str:
    host, port = conn.sock.getsockname()[:2]
    return f"{host}:{port}"


def start_monitor(server: Server) -> RawConn:
    m = server.raw()
    assert m.call("MONITOR") == Simple("OK")
    return m


def read_line(m: RawConn) -> tuple[float, int, str, str]:
    """One monitor line: (time, db, client address, the quoted arguments)."""
    reply = m.read_reply()
    assert isinstance(reply, Simple), reply
    match = LINE.match(reply)
    assert match, reply
    secs, micros, db, addr, args = match.groups()
    return float(f"{secs}.{micros}"), int(db), addr, args


def read_lines(m: RawConn, n: int) -> list[tuple[int, str, str]]:
    lines = []
    for _ in range(n):
        t, db, addr, args = read_line(m)
        assert abs(t - time.time()) < 10, t
        lines.append((db, addr, args))
    return lines


def args_until(m: RawConn, last: str, limit: int = 50) -> list[str]:
    """The arguments of each line up to and including the one whose arguments are `last`."""
    out = []
    for _ in range(limit):
        out.append(read_line(m)[3])
        if out[-1] == last:
            return out
    pytest.fail(f"no {last!r} within {limit} lines: {out}")


def test_monitor_shows_commands_from_every_connection(srv):
    m = start_monitor(srv)
    a, b = srv.raw(), srv.raw()
    assert a.call("SET", "k", "v") == Simple("OK")
    assert b.call("GET", "k") == b"v"
    assert a.call("SELECT", "2") == Simple("OK")
    assert a.call("SET", "k", "2") == Simple("OK")
    assert b.call("INCR", "nosuch-int") == 1
    assert a.call("CLIENT", "SETNAME", "alice") == Simple("OK")
    assert a.call("SELECT", "0") == Simple("OK")
    assert read_lines(m, 7) == [
        (0, addr_of(a), '"SET" "k" "v"'),
        (0, addr_of(b), '"GET" "k"'),
        # The database after the command ran.
        (2, addr_of(a), '"SELECT" "2"'),
        (2, addr_of(a), '"SET" "k" "2"'),
        (0, addr_of(b), '"INCR" "nosuch-int"'),
        (2, addr_of(a), '"CLIENT" "SETNAME" "alice"'),
        (0, addr_of(a), '"SELECT" "0"'),
    ]


def test_many_clients_on_both_threads_arrive_in_order(srv):
    m = start_monitor(srv)
    clients = [srv.raw() for _ in range(4)]
    want = []
    for i in range(40):
        c = clients[i % len(clients)]
        assert c.call("SET", f"k{i}", str(i)) == Simple("OK")
        want.append((0, addr_of(c), f'"SET" "k{i}" "{i}"'))
    assert read_lines(m, len(want)) == want


def test_arguments_are_quoted_like_sdscatrepr(srv):
    m = start_monitor(srv)
    c = srv.raw()
    value = b'a"b\\c\n\r\t\x07\x08\x00\x01\x7f\xff \xc3\xa9~'
    assert c.call("SET", "k", value) == Simple("OK")
    assert c.call("APPEND", "k", "") == len(value)
    assert c.call("ECHO", "x y") == b"x y"
    # Inline commands are shown as typed, quotes resolved.
    c.send(b"  set   'a b'  \"x\\ty\"  \r\n")
    assert c.read_reply() == Simple("OK")
    assert [args for _, _, args in read_lines(m, 4)] == [
        r'"SET" "k" "a\"b\\c\n\r\t\a\b\x00\x01\x7f\xff \xc3\xa9~"',
        '"APPEND" "k" ""',
        '"ECHO" "x y"',
        r'"set" "a b" "x\ty"',
    ]


def test_secrets_are_redacted(srv):
    m = start_monitor(srv)
    c = srv.raw()
    reply = c.call("AUTH", "hunter2")
    assert isinstance(reply, str) and reply.startswith("ERR")
    c.call("AUTH", "someone", "hunter2")
    h = srv.raw()
    h.call("HELLO", "2", "AUTH", "default", "hunter2", "SETNAME", "x")
    h.call("HELLO", "2", "SETNAME", "auth", "AUTH", "nobody", "hunter2")
    c.call("PING")
    lines = args_until(m, '"PING"')
    assert lines == [
        '"AUTH" "(redacted)"',
        '"AUTH" "(redacted)" "(redacted)"',
        '"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"',
        '"HELLO" "2" "SETNAME" "auth" "AUTH" "(redacted)" "(redacted)"',
        '"PING"',
    ]


def test_admin_and_rejected_commands_are_not_shown(srv):
    m = start_monitor(srv)
    c = srv.raw()
    c.call("CONFIG", "GET", "maxmemory")
    c.call("CONFIG", "SET", "slowlog-max-len", "128")
    c.call("CLIENT", "LIST")
    c.call("CLIENT", "NO-EVICT", "off")
    c.call("SLOWLOG", "GET")
    c.call("LATENCY", "LATEST")
    c.call("NOSUCHCOMMAND", "x")     # unknown: rejected before it runs
    c.call("GET")                    # wrong arity: the same
    c.call("SELECT", "99")           # runs and fails: shown
    c.call("CLIENT", "ID")           # not admin: shown
    c.call("ECHO", "end")
    assert args_until(m, '"ECHO" "end"') == ['"SELECT" "99"', '"CLIENT" "ID"', '"ECHO" "end"']


def test_exec_shows_each_command_then_exec(srv):
    m = start_monitor(srv)
    c = srv.raw()
    assert c.call("MULTI") == Simple("OK")
    assert c.call("SET", "a", "1") == Simple("QUEUED")
    assert c.call("INCR", "a") == Simple("QUEUED")
    assert c.call("CONFIG", "SET", "slowlog-max-len", "128") == Simple("QUEUED")
    assert c.call("EXEC") == [Simple("OK"), 2, Simple("OK")]
    # A transaction discarded at EXEC runs nothing: MULTI and EXEC only.
    c.call("MULTI")
    c.call("GET")
    c.call("EXEC")
    c.call("WATCH", "a")
    c.call("MULTI")
    c.call("DISCARD")
    c.call("ECHO", "end")
    assert args_until(m, '"ECHO" "end"') == [
        '"MULTI"', '"SET" "a" "1"', '"INCR" "a"', '"EXEC"',
        '"MULTI"', '"EXEC"',
        '"WATCH" "a"', '"MULTI"', '"DISCARD"', '"ECHO" "end"',
    ]


def test_monitor_inside_exec_is_refused(srv):
    c = srv.raw()
    c.call("MULTI")
    assert c.call("MONITOR") == Simple("QUEUED")
    reply = c.call("EXEC")
    assert reply == ["ERR MONITOR isn't allowed for DENY BLOCKING client"]
    assert c.call("SET", "k", "v") == Simple("OK")


def test_monitor_mode_until_reset(srv, protocol):
    m = srv.raw()
    if protocol == 3:
        m.hello3()
    assert m.call("MONITOR") == Simple("OK")
    me = addr_of(m)
    # Its own commands are shown to it too, after their replies (the same line in RESP3).
    assert m.call("PING") == Simple("PONG")
    assert read_lines(m, 1) == [(0, me, '"PING"')]
    # A monitor is a replica to Redis: no keyspace access.
    assert m.call("GET", "k") == "ERR Replica can't interact with the keyspace"
    assert m.call("SET", "k", "v") == "ERR Replica can't interact with the keyspace"
    # MONITOR again: no reply at all.
    m.send_command("MONITOR")
    assert m.call("ECHO", "x") == b"x"
    assert read_lines(m, 1) == [(0, me, '"ECHO" "x"')]
    other = srv.raw()
    other.call("SET", "k", "1")
    assert read_lines(m, 1) == [(0, addr_of(other), '"SET" "k" "1"')]
    # RESET ends monitor mode; the client is an ordinary one again.
    assert m.call("RESET") == Simple("RESET")
    other.call("SET", "k", "2")
    assert m.read_until_idle(idle=0.3) == b""
    assert m.call("GET", "k") == b"2"


def test_client_pause_does_not_hold_a_monitor(srv):
    m = start_monitor(srv)
    admin = srv.raw()
    assert admin.call("CLIENT", "PAUSE", "3000", "ALL") == Simple("OK")
    try:
        start = time.monotonic()
        assert m.call("PING") == Simple("PONG")
        assert time.monotonic() - start < 1.0
    finally:
        admin.call("CLIENT", "UNPAUSE")


def test_idle_timeout_spares_monitors(start_server):
    srv = start_server("--timeout", "1")
    m = start_monitor(srv)
    idle = srv.raw()
    idle.call("PING")
    assert idle.is_closed(timeout=4.0)
    assert m.read_until_idle(idle=0.2, total=0.5).count(b"PING") == 1
    assert m.call("PING") == Simple("PONG")


def _limit_disconnections(admin: RawConn) -> int:
    # Redis 7.2's INFO field (larder has it; 7.0 does not).
    stats = parse_info(admin.call("INFO", "stats"))["stats"]
    return int(stats.get("client_output_buffer_limit_disconnections", 0))


def test_monitor_that_does_not_read_is_closed_at_the_normal_limit(srv, is_redis):
    admin = srv.raw()
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit",
                      "normal 1mb 0 0") == Simple("OK")
    before = _limit_disconnections(admin)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", srv.port))
    s.sendall(RawConn.encode("CLIENT", "SETNAME", "slowmon") + RawConn.encode("MONITOR"))
    try:
        assert s.recv(64).startswith(b"+OK")
        writer = srv.raw()
        payload = b"x" * 65536
        sent, gone = 0, False
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and sent < 32 * 1024 * 1024:
            writer.send(RawConn.encode("SET", "k", payload) * 8)
            for _ in range(8):
                assert writer.read_reply() == Simple("OK")
            sent += 8 * len(payload)
            names = admin.call("CLIENT", "LIST").decode()
            if "name=slowmon" not in names:
                gone = True
                break
        assert gone, f"monitor still connected after {sent} bytes of commands"
        if not is_redis:
            assert _limit_disconnections(admin) == before + 1
        assert writer.call("GET", "k") == payload
    finally:
        s.close()


def test_redis_py_monitor_api(srv, protocol):
    other = srv.client(protocol=protocol, decode_responses=True)
    # Connected (and its handshake done) before monitoring starts.
    port = other.client_info()["addr"].rsplit(":", 1)[1]
    watcher = srv.client(protocol=protocol)
    with watcher.monitor() as mon:
        other.set("foo", "bar baz")
        other.get("foo")
        other.execute_command("SELECT", "3")
        other.execute_command("SELECT", "0")
        first = mon.next_command()
        assert first["command"] == "SET foo bar baz"
        assert first["db"] == 0
        assert first["client_type"] == "tcp"
        assert first["client_address"] == "127.0.0.1"
        assert first["client_port"] == port
        assert abs(first["time"] - time.time()) < 10
        assert mon.next_command()["command"] == "GET foo"
        select = mon.next_command()
        assert (select["command"], select["db"]) == ("SELECT 3", 3)


def test_command_info_matches_redis(srv):
    c = srv.raw()
    assert c.call("COMMAND", "INFO", "monitor") == [[
        b"monitor", 1, ["admin", "noscript", "loading", "stale"],
        0, 0, 0, ["@admin", "@slow", "@dangerous"], [], [], []]]


@pytest.mark.larder_only
def test_memcached_door_requests_are_shown(start_server):
    srv = start_with_door(start_server, "--threads", "2")
    m = start_monitor(srv)
    text = McText(srv.mc_port)
    binary = McBin(srv.mc_port)
    try:
        assert text.store("set", "k", "hello") == b"STORED"
        assert text.call("get k  nosuch") == b"VALUE k 0 5"
        text.data(5)
        assert text.line() == b"END"
        assert text.call("bogus") == b"ERROR"            # refused: not shown
        assert binary.call("get", "k").value == b"hello"
        addr_text = "127.0.0.1:%d" % text.sock.getsockname()[1]
        addr_bin = "127.0.0.1:%d" % binary.sock.getsockname()[1]
        assert read_lines(m, 3) == [
            (0, addr_text, '"set" "k" "0" "0" "5"'),
            (0, addr_text, '"get" "k" "nosuch"'),
            (0, addr_bin, '"get" "k"'),
        ]
    finally:
        text.close()
        binary.close()
