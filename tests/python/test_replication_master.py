"""larder as a master that a stock redis-server 7.0 replica follows: full resync (a diskless
RDB file from a fork-less capture), the stream of commands after it, partial resync from the
backlog, WAIT, ROLE and INFO replication; and an RDB file larder sends that redis-server
loads from disk.

Every test starts its own larder master and redis-server replica (`--replicaof`), with small
data, and polls with a deadline instead of sleeping.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Callable

import pytest
import redis

from conftest import Server, ServerFactory

pytestmark = pytest.mark.larder_only

DEADLINE_S = 15.0
FAR_MS = 4_102_444_800_000  # 2100-01-01


def until(what: str, check: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def info(srv: Server, section: str) -> dict[str, str]:
    text = srv.client(protocol=2, decode_responses=True).execute_command("INFO", section)
    if isinstance(text, dict):
        return {k: str(v) for k, v in text.items()}
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def write_after_sync(m: redis.Redis) -> None:
    """Writes that follow a full resync: in databases 0 and 3, a transaction, and commands
    the stream rewrites (EXPIRE, INCRBYFLOAT). Leaves database 3 selected."""
    m.execute_command("SELECT", 0)
    m.set("after", "1")
    m.expire("after", 1000)
    m.incrbyfloat("float", 1.5)
    m.lpush("list", "new")
    m.delete("set")
    with m.pipeline(transaction=True) as p:
        p.incr("counter")
        p.hset("hash", "f0", "changed")
        p.execute()
    m.execute_command("SELECT", 3)
    m.set("in-three", "3", ex=100)


def replica_of(redis_factory: ServerFactory, master: Server) -> Server:
    rep = redis_factory("--replicaof", "127.0.0.1", str(master.port))
    until("master_link_status:up",
          lambda: info(rep, "replication").get("master_link_status") == "up")
    return rep


def fill(c, db: int) -> None:
    """Every type, some keys with a deadline."""
    c.execute_command("SELECT", db)
    c.set("str", "value")
    c.set("int", 12345)
    c.set("ttl-str", "x" * 300, px=500_000)
    c.rpush("list", *[f"e{i}" for i in range(200)])
    c.rpush("small-list", "a", "b")
    c.hset("hash", mapping={f"f{i}": f"v{i}" for i in range(300)})
    c.hset("small-hash", mapping={"a": "1"})
    c.execute_command("PEXPIREAT", "small-hash", FAR_MS)
    c.sadd("intset", *range(10))
    c.sadd("set", *[f"m{i}" for i in range(200)])
    c.zadd("zset", {f"m{i}": i / 3 for i in range(200)})
    c.zadd("small-zset", {"a": 1.5})
    for i in range(20):
        c.xadd("stream", {"n": i, "pad": "p" * i})
    c.execute_command("PEXPIREAT", "stream", FAR_MS)


def contents(c, db: int) -> dict[bytes, tuple]:
    c.execute_command("SELECT", db)
    out = {}
    for key in c.keys():
        kind = c.type(key)
        if kind == b"string":
            v = c.get(key)
        elif kind == b"list":
            v = c.lrange(key, 0, -1)
        elif kind == b"hash":
            v = sorted(c.hgetall(key).items())
        elif kind == b"set":
            v = sorted(c.smembers(key))
        elif kind == b"zset":
            v = c.zrange(key, 0, -1, withscores=True)
        else:
            v = c.xrange(key)
        out[key] = (kind, v, c.execute_command("PEXPIRETIME", key))
    return out


def same_data(a: Server, b: Server, dbs=(0, 3)) -> bool:
    ca, cb = a.client(protocol=2), b.client(protocol=2)
    return all(contents(ca, db) == contents(cb, db) for db in dbs)


def test_full_resync_holds_every_key_and_writes_follow(start_server, redis_factory) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)
    rep = replica_of(redis_factory, master)
    until("the replica holds every key", lambda: same_data(master, rep))
    assert contents(rep.client(protocol=2), 3)[b"ttl-str"][2] > 0

    # Writes after the sync: in several databases, a transaction, rewritten commands.
    write_after_sync(m)
    m.getdel("str")
    m.xadd("stream", {"n": "last"})
    until("the replica follows", lambda: same_data(master, rep))
    assert m.execute_command("WAIT", 1, 1000) == 1


def test_wait_role_info_and_client_list(start_server, redis_factory) -> None:
    master = start_server()
    m = master.client(protocol=2)
    assert m.execute_command("WAIT", 0, 0) == 0
    assert m.execute_command("ROLE") == [b"master", 0, []]
    rep = replica_of(redis_factory, master)
    m.set("k", "v")
    assert m.execute_command("WAIT", 1, 1000) == 1
    # More replicas than there are: the timeout answers with the count.
    t0 = time.monotonic()
    assert m.execute_command("WAIT", 2, 200) == 1
    assert time.monotonic() - t0 >= 0.19

    role = m.execute_command("ROLE")
    assert role[0] == b"master" and role[1] > 0
    [[ip, port, offset]] = role[2]
    assert (ip, port) == (b"127.0.0.1", str(rep.port).encode())
    assert 0 < int(offset) <= role[1]

    i = info(master, "replication")
    assert i["role"] == "master"
    assert i["connected_slaves"] == "1"
    slave0 = m.execute_command("INFO", "replication")["slave0"]
    assert (slave0["ip"], slave0["port"], slave0["state"]) == ("127.0.0.1", rep.port, "online")
    assert set(slave0) == {"ip", "port", "state", "offset", "lag"}
    assert i["master_failover_state"] == "no-failover"
    # redis-py reads the all-zero master_replid2 as the number 0.
    assert len(i["master_replid"]) == 40 and i["master_replid2"] == "0"
    assert i["second_repl_offset"] == "-1"
    assert i["repl_backlog_active"] == "1"
    assert i["repl_backlog_size"] == "1048576"
    assert i["repl_backlog_first_byte_offset"] == "1"
    assert int(i["repl_backlog_histlen"]) == int(i["master_repl_offset"]) > 0
    # The replica's view of the offsets is the master's, byte for byte.
    until("the replica's offset reaches the master's",
          lambda: info(rep, "replication")["master_repl_offset"]
          == info(master, "replication")["master_repl_offset"])
    assert info(rep, "replication")["master_replid"] == i["master_replid"]
    stats = info(master, "stats")
    assert (stats["sync_full"], stats["sync_partial_ok"], stats["sync_partial_err"]) == (
        "1", "0", "0")
    listed = m.execute_command("CLIENT", "LIST", "TYPE", "replica").decode()
    assert "flags=S" in listed


def test_link_killed_resumes_with_a_partial_resync(start_server, redis_factory) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    rep = replica_of(redis_factory, master)
    until("synced", lambda: same_data(master, rep, dbs=(0,)))
    rep.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "master")
    for i in range(50):
        m.set(f"later{i}", i)
    until("a partial resync",
          lambda: info(master, "stats")["sync_partial_ok"] == "1")
    until("the writes arrive", lambda: same_data(master, rep, dbs=(0,)))
    stats = info(master, "stats")
    assert stats["sync_full"] == "1"
    assert m.execute_command("WAIT", 1, 1000) == 1


def test_a_replica_away_past_the_backlog_gets_a_full_resync(start_server,
                                                            redis_factory) -> None:
    master = start_server("--repl-backlog-size", "16384")
    m = master.client(protocol=2)
    m.set("before", "1")
    rep = replica_of(redis_factory, master)
    r = rep.client(protocol=2)
    r.execute_command("REPLICAOF", "NO", "ONE")
    until("the replica left", lambda: info(master, "replication")["connected_slaves"] == "0")
    for i in range(100):
        m.set(f"big{i}", "x" * 1000)
    r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    until("a second full resync", lambda: info(master, "stats")["sync_full"] == "2")
    stats = info(master, "stats")
    assert stats["sync_partial_ok"] == "0" and stats["sync_partial_err"] == "1"
    until("the replica holds everything", lambda: same_data(master, rep, dbs=(0,)))


def read_line(s: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = s.recv(1)
        assert chunk, "connection closed"
        line += chunk
    return line[:-2]


def read_eof_file(s: socket.socket) -> bytes:
    """A diskless full resync's file: `$EOF:<40-byte mark>`, the file, the mark again."""
    mark_line = read_line(s)
    assert mark_line.startswith(b"$EOF:") and len(mark_line) == 45, mark_line
    mark = mark_line[5:]
    data = b""
    while not data.endswith(mark):
        chunk = s.recv(65536)
        assert chunk, "connection closed mid-file"
        data += chunk
    return data[:-40]


def call(s: socket.socket, *args: str) -> bytes:
    s.sendall(b"".join([f"*{len(args)}\r\n".encode()]
                       + [f"${len(a)}\r\n{a}\r\n".encode() for a in args]))
    return read_line(s)


def test_the_file_larder_sends_loads_in_redis_server(start_server, redis_factory,
                                                      tmp_path: Path) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)
    with socket.create_connection(("127.0.0.1", master.port), timeout=10) as s:
        assert call(s, "REPLCONF", "capa", "eof", "capa", "psync2") == b"+OK"
        head = call(s, "PSYNC", "?", "-1")
        assert head.startswith(b"+FULLRESYNC ")
        rdb = read_eof_file(s)
    assert rdb.startswith(b"REDIS0010")
    d = tmp_path / "rdbdir"
    d.mkdir()
    (d / "from-larder.rdb").write_bytes(rdb)
    loaded = redis_factory("--dir", str(d), "--dbfilename", "from-larder.rdb")
    assert same_data(master, loaded)


def test_sync_and_psync_without_capa_eof_send_the_length_first(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    for psync in (False, True):
        with socket.create_connection(("127.0.0.1", master.port), timeout=10) as s:
            if psync:
                assert call(s, "PSYNC", "?", "-1").startswith(b"+FULLRESYNC ")
                length_line = read_line(s)
            else:
                s.sendall(b"SYNC\r\n")
                length_line = read_line(s)
            assert length_line.startswith(b"$"), length_line
            n = int(length_line[1:])
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                assert chunk, "connection closed mid-file"
                data += chunk
            assert data.startswith(b"REDIS0010") and data[-9] == 0xFF
            # Then the stream: a write made now arrives after the file.
            m.set("after-file", "1")
            s.settimeout(5)
            stream = b""
            while b"after-file" not in stream:
                chunk = s.recv(4096)
                assert chunk, "connection closed"
                stream += chunk
            assert b"SELECT" in stream
    assert info(master, "stats")["sync_full"] == "2"


def test_repl_diskless_sync_no_sends_the_length_first_to_a_replica_that_takes_eof(
        start_server, redis_factory) -> None:
    master = start_server()
    m = master.client(protocol=2)
    assert m.config_get("repl-diskless-sync") == {"repl-diskless-sync": "yes"}
    m.config_set("repl-diskless-sync", "no")
    fill(m, 0)
    with socket.create_connection(("127.0.0.1", master.port), timeout=10) as s:
        assert call(s, "REPLCONF", "capa", "eof", "capa", "psync2") == b"+OK"
        assert call(s, "PSYNC", "?", "-1").startswith(b"+FULLRESYNC ")
        length_line = read_line(s)
        assert length_line.startswith(b"$") and not length_line.startswith(b"$EOF:")
    # A stock replica (capa eof) loads the disk-built file and follows the stream.
    replica = replica_of(redis_factory, master)
    until("the replica's data", lambda: same_data(master, replica, dbs=(0,)))
    write_after_sync(m)
    until("the stream's writes", lambda: same_data(master, replica))


def test_writes_during_the_full_resync_reach_the_replica(start_server, redis_factory) -> None:
    import threading

    master = start_server()
    m = master.client(protocol=2)
    with m.pipeline(transaction=False) as p:
        for i in range(5000):
            p.set(f"k{i}", "v" * 50)
        p.execute()
    stop = threading.Event()

    def writer() -> None:
        w = master.client(protocol=2)
        i = 0
        while not stop.is_set():
            w.incr(f"k{i % 5000}x")
            w.set(f"k{(i * 7) % 5000}", i)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        rep = replica_of(redis_factory, master)
    finally:
        stop.set()
        t.join()
    until("the replica holds every key", lambda: same_data(master, rep, dbs=(0,)))


def test_wait_asks_a_replica_that_is_not_yet_online(start_server) -> None:
    """WAIT while the only replica has its file but has not acknowledged it yet (so is not
    online): the master still asks for acknowledgements, and the GETACK reaches the replica
    behind the writes it was held back with, so WAIT ends at its answer, not at a periodic
    ACK or the timeout (Redis feeds its GETACK whatever the replicas' state)."""
    import threading

    master = start_server()
    m = master.client(protocol=2)
    with socket.create_connection(("127.0.0.1", master.port), timeout=10) as s:
        assert call(s, "REPLCONF", "capa", "eof", "capa", "psync2") == b"+OK"
        head = call(s, "PSYNC", "?", "-1")
        assert head.startswith(b"+FULLRESYNC ")
        start = int(head.split()[2])
        read_eof_file(s)
        m.set("k", "v")
        got: list = []
        waiter = threading.Thread(target=lambda: got.append(
            master.client(protocol=2).execute_command("WAIT", 1, 10_000)))
        t0 = time.monotonic()
        waiter.start()
        until("WAIT to block", lambda: info(master, "clients")["blocked_clients"] == "1")
        # The first acknowledgement brings the replica online and starts its stream.
        s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%d\r\n"
                  % (len(str(start)), start))
        getack = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"
        stream = b""
        while getack not in stream:
            chunk = s.recv(4096)
            assert chunk, "connection closed"
            stream += chunk
        before = stream.index(getack)
        assert b"$1\r\nk\r\n" in stream[:before]
        offset = str(start + before)
        s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%s\r\n"
                  % (len(offset), offset.encode()))
        waiter.join(timeout=15)
        assert got == [1]
        assert time.monotonic() - t0 < 10
        assert info(master, "clients")["blocked_clients"] == "0"
