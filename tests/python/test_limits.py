"""Limits with Redis's defaults and config keys (issue 2, section 2): proto-max-bulk-len,
client-query-buffer-limit, the multibulk limits, maxclients and timeout.
"""

import time

import pytest

from conftest import Err, RawConn, parse_info, wait_until

MIB = 1024 * 1024


def test_default_limits(raw):
    cfg = raw.call("CONFIG", "GET", "proto-max-bulk-len")
    assert cfg == [b"proto-max-bulk-len", b"536870912"]
    assert raw.call("CONFIG", "GET", "client-query-buffer-limit") == [
        b"client-query-buffer-limit", b"1073741824"]
    assert raw.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"10000"]
    assert raw.call("CONFIG", "GET", "timeout") == [b"timeout", b"0"]


# --- proto-max-bulk-len ------------------------------------------------------------------------


def test_proto_max_bulk_len(start_server):
    srv = start_server("--proto-max-bulk-len", str(MIB))
    ok = srv.raw()
    assert ok.call("SET", "k", b"x" * MIB) == "OK"
    assert ok.call("STRLEN", "k") == MIB
    bad = srv.raw()
    bad.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (MIB + 1))
    assert bad.read_reply() == Err("ERR Protocol error: invalid bulk length")
    assert bad.is_closed()
    assert ok.call("PING") == "PONG"


def test_proto_max_bulk_len_limits_string_growth(start_server):
    c = start_server("--proto-max-bulk-len", str(MIB)).raw()
    too_big = Err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    assert c.call("SETRANGE", "k", str(MIB), "x") == too_big
    assert c.call("SETRANGE", "k", str(MIB - 1), "x") == MIB
    assert c.call("APPEND", "k", "x") == too_big
    assert c.call("STRLEN", "k") == MIB


def test_proto_max_bulk_len_config_set(start_server):
    srv = start_server("--proto-max-bulk-len", str(MIB))
    admin = srv.raw()
    assert admin.call("CONFIG", "SET", "proto-max-bulk-len", "2mb") == "OK"
    assert admin.call("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len",
                                                                 b"2097152"]
    c = srv.raw()
    assert c.call("SET", "k", b"x" * (MIB + 1)) == "OK"
    reply = admin.call("CONFIG", "SET", "proto-max-bulk-len", "1000")
    # The upper bound differs: Redis's is 9223372036854775807, larder's 4294967295.
    assert isinstance(reply, Err) and reply.startswith(
        "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument "
        "must be between 1048576 and "), reply


# --- client-query-buffer-limit -----------------------------------------------------------------


def test_client_query_buffer_limit_closes_connection(start_server):
    srv = start_server("--client-query-buffer-limit", str(MIB))
    ok = srv.raw()
    assert ok.call("SET", "half", b"y" * (MIB // 2)) == "OK"
    bad = srv.raw()
    try:
        # An incomplete command larger than the limit: the server must not buffer it forever.
        bad.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (4 * MIB) + b"x" * (MIB + MIB // 2))
    except OSError:
        pass  # the server may close while we are still writing
    assert bad.is_closed(timeout=5)
    assert not bad.buf, f"expected a silent close, got {bytes(bad.buf[:100])!r}"
    assert ok.call("GET", "half") == b"y" * (MIB // 2)
    assert ok.call("EXISTS", "k") == 0


@pytest.mark.larder_only
def test_an_announced_bulk_is_not_reserved_before_it_arrives(start_server):
    # A large last argument is read into a buffer of its own; a header that announces
    # 400 MiB must not make the server reserve 400 MiB per client before the bytes come.
    srv = start_server()

    def vm_size_kib():
        with open(f"/proc/{srv.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1])
        raise AssertionError("no VmSize line")

    before = vm_size_kib()
    clients = [srv.raw() for _ in range(8)]
    for c in clients:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (400 * MIB) + b"x" * 40_000)
    ok = srv.raw()
    assert ok.call("PING") == "PONG"
    grown_mib = (vm_size_kib() - before) / 1024
    assert grown_mib < 200, f"address space grew by {grown_mib:.0f} MiB"
    for c in clients:
        c.close()
    assert ok.call("EXISTS", "k") == 0


def test_client_query_buffer_limit_with_pipelined_small_commands(start_server):
    # Many complete small commands in one burst are executed, not counted as one huge query.
    srv = start_server("--client-query-buffer-limit", str(MIB))
    c = srv.raw()
    n = 40_000  # about 1.6 MiB of commands in one write
    c.send(b"".join(RawConn.encode("SET", f"k{i}", "v" * 10) for i in range(n)))
    for _ in range(n):
        assert c.read_reply() == "OK"
    assert c.call("DBSIZE") == n


def test_client_query_buffer_limit_config(start_server):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", "client-query-buffer-limit", "2mb") == "OK"
    assert c.call("CONFIG", "GET", "client-query-buffer-limit") == [
        b"client-query-buffer-limit", b"2097152"]
    assert c.call("CONFIG", "SET", "client-query-buffer-limit", "1000") == Err(
        "ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - "
        "argument must be between 1048576 and 9223372036854775807 inclusive")


# --- multibulk limits --------------------------------------------------------------------------


def test_unauthenticated_multibulk_limits(start_server):
    srv = start_server("--requirepass", "pw")
    c = RawConn(srv.port)
    c.send(b"*11\r\n")
    assert c.read_reply() == Err("ERR Protocol error: unauthenticated multibulk length")
    assert c.is_closed()
    c = RawConn(srv.port)
    c.send(b"*1\r\n$16385\r\n")
    assert c.read_reply() == Err("ERR Protocol error: unauthenticated bulk length")
    assert c.is_closed()
    # At the limits themselves the command is read and refused for lack of AUTH.
    c = RawConn(srv.port)
    assert c.call("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e") == Err(
        "NOAUTH Authentication required.")
    assert c.call("ECHO", "x" * 16384) == Err("NOAUTH Authentication required.")
    assert c.call("AUTH", "pw") == "OK"
    assert c.call("MSET", *(["k", "v"] * 20)) == "OK"
    assert c.call("ECHO", "x" * 100_000) == b"x" * 100_000


def test_reset_in_a_pipeline_brings_back_the_unauthenticated_limits(start_server):
    # Requests after a RESET in the same write are read as a client that has not authenticated
    # (larder parses pipelined requests ahead of running them, to prefetch their keys).
    srv = start_server("--requirepass", "pw")
    c = RawConn(srv.port)
    assert c.call("AUTH", "pw") == "OK"
    c.send(RawConn.encode("SET", "a", "1") + RawConn.encode("RESET")
           + RawConn.encode("MSET", *(["k", "v"] * 5)))
    assert c.read_reply() == "OK"
    assert c.read_reply() == "RESET"
    assert c.read_reply() == Err("ERR Protocol error: unauthenticated multibulk length")
    assert c.is_closed()


# --- maxclients --------------------------------------------------------------------------------


def _connected_clients(conn):
    return int(parse_info(conn.call("INFO", "clients"))["clients"]["connected_clients"])


def test_maxclients(start_server):
    srv = start_server("--maxclients", "3")
    first = srv.raw()
    # The startup probe's connection may still be counted for a moment.
    assert wait_until(lambda: _connected_clients(first) == 1, timeout=3)
    second, third = srv.raw(), srv.raw()
    assert second.call("PING") == "PONG"
    assert third.call("PING") == "PONG"
    rejected = RawConn(srv.port)
    assert rejected.read_reply() == Err("ERR max number of clients reached")
    assert rejected.is_closed()
    stats = parse_info(first.call("INFO", "stats"))["stats"]
    assert int(stats["rejected_connections"]) >= 1
    # A slot frees when a client leaves.
    third.close()
    assert wait_until(lambda: _connected_clients(first) == 2, timeout=3)
    again = srv.raw()
    assert again.call("PING") == "PONG"


def test_maxclients_config_set(start_server):
    srv = start_server()
    admin = srv.raw()
    assert admin.call("CONFIG", "SET", "maxclients", "2") == "OK"
    assert wait_until(lambda: _connected_clients(admin) == 1, timeout=3)
    other = srv.raw()
    assert other.call("PING") == "PONG"
    rejected = RawConn(srv.port)
    assert rejected.read_reply() == Err("ERR max number of clients reached")
    assert admin.call("CONFIG", "SET", "maxclients", "0") == Err(
        "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be "
        "between 1 and 4294967295 inclusive")


def test_maxclients_redis_py_error(start_server):
    import redis
    srv = start_server("--maxclients", "1")
    # The fixture's own readiness connection may not be reaped yet (the server learns of its
    # close asynchronously), so the first holder can be the one refused: retry briefly.
    deadline = time.monotonic() + 3
    while True:
        holder = srv.raw()
        reply = holder.call("PING")
        if reply == "PONG":
            break
        assert time.monotonic() < deadline, reply
        time.sleep(0.05)
    assert _connected_clients(holder) == 1
    c = srv.client(retry=None)
    try:
        c.ping()
        raise AssertionError("a client over maxclients was served")
    except redis.ConnectionError as e:
        assert "max number of clients reached" in str(e)


# --- timeout -----------------------------------------------------------------------------------


def test_idle_timeout_disconnects(start_server):
    srv = start_server("--timeout", "1")
    idle = srv.raw()
    busy = srv.raw()
    assert idle.call("PING") == "PONG"
    start = time.monotonic()
    # `busy` keeps talking; `idle` says nothing.
    while time.monotonic() - start < 2.5:
        assert busy.call("PING") == "PONG"
        time.sleep(0.2)
    assert idle.is_closed(timeout=2.0)
    assert not idle.buf  # closed without a reply
    assert busy.call("PING") == "PONG"


def test_idle_timeout_not_before_deadline(start_server):
    srv = start_server("--timeout", "2")
    c = srv.raw()
    c.call("PING")
    time.sleep(1.0)
    assert c.call("PING") == "PONG"


def test_timeout_config_set(start_server):
    srv = start_server()
    admin = srv.raw()
    idle = srv.raw()
    idle.call("PING")
    assert admin.call("CONFIG", "SET", "timeout", "1") == "OK"
    assert idle.is_closed(timeout=4.0)
    admin = srv.raw()  # the first one sat idle too
    assert admin.call("CONFIG", "SET", "timeout", "0") == "OK"
    assert admin.call("CONFIG", "SET", "timeout", "-1") == Err(
        "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be "
        "between 0 and 2147483647 inclusive")


def test_no_timeout_by_default(server):
    c = server.raw()
    c.call("PING")
    time.sleep(1.2)
    assert c.call("PING") == "PONG"
