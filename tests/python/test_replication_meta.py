"""larder-to-larder replication carries each key's version (memcached's CAS unique) and
memcached flags, negotiated with `REPLCONF capa larder-meta2`: in the full resync's file (an
AUX field before each key) and beside the stream (LARDER.META frames, not counted in the
offset), across partial resyncs and a promotion; a redis-server replica of the same master
gets neither and keeps the same offsets.

Every test starts its own processes with small data and polls with a deadline.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest

from conftest import Server, start_with_http
from test_replication_master import (call, fill, info, read_eof_file, replica_of,
                                     same_data, until)

pytestmark = pytest.mark.larder_only


class Mc:
    """A memcached text-protocol connection."""

    def __init__(self, port: int) -> None:
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.f = self.s.makefile("rb")

    def line(self, cmd: str, data: bytes | None = None) -> bytes:
        out = cmd.encode() + b"\r\n"
        if data is not None:
            out += data + b"\r\n"
        self.s.sendall(out)
        return self.f.readline().rstrip(b"\r\n")

    def meta(self, key: str) -> tuple[int, int] | None:
        """(CAS unique, flags) of `key`, None if it is missing."""
        reply = self.line(f"mg {key} c f")
        if reply == b"EN":
            return None
        m = re.fullmatch(rb"HD c(\d+) f(\d+)", reply)
        assert m, reply
        return int(m[1]), int(m[2])

    def close(self) -> None:
        self.s.close()


KEYS = ["mc-a", "mc-b", "resp-s", "resp-h", "n", "e", "t"]


def metas(srv: Server) -> dict[str, tuple[int, int] | None]:
    mc = Mc(srv.mc_port)
    try:
        return {k: mc.meta(k) for k in KEYS}
    finally:
        mc.close()


def same_metas(a: Server, b: Server) -> bool:
    return metas(a) == metas(b)


def link_up(srv: Server) -> bool:
    return info(srv, "replication").get("master_link_status") == "up"


def test_versions_and_flags_follow_through_sync_stream_resync_and_promotion(
        start_server) -> None:
    master = start_with_http(start_server)
    m = master.client(protocol=2)
    mc = Mc(master.mc_port)
    # Before the replica exists: in the full resync's file.
    assert mc.line("set mc-a 42 0 5", b"hello") == b"STORED"
    assert mc.line("set n 3 0 1", b"5") == b"STORED"
    m.set("resp-s", "v")
    m.hset("resp-h", "f", "v")
    rep = start_with_http(start_server, "--replicaof", f"127.0.0.1 {master.port}")
    until("synced", lambda: link_up(rep) and same_data(master, rep, dbs=(0,)))
    before = metas(master)
    assert before["mc-a"][1] == 42 and before["n"][1] == 3
    assert metas(rep) == before

    # In the stream: sets with flags, an explicit CAS, touch (same CAS), incr (a new one).
    assert mc.line("set mc-b 7 0 1", b"x") == b"STORED"
    assert mc.line("ms e 1 E987654321 F9 c", b"v") == b"HD c987654321"
    assert mc.line("set t 1 0 1", b"t") == b"STORED"
    cas_t = mc.meta("t")[0]
    assert mc.line("touch t 1000") == b"TOUCHED"
    assert mc.meta("t")[0] == cas_t
    old_n = mc.meta("n")[0]
    assert mc.line("incr n 2") == b"7"
    assert mc.meta("n")[0] != old_n
    m.hset("resp-h", "g", "w")
    # (Online at its first ACK after the file, up to a second after it: then WAIT.)
    until("versions follow the stream", lambda: same_metas(master, rep))
    assert m.execute_command("WAIT", 1, 2000) == 1
    now = metas(master)
    assert now["mc-b"][1] == 7 and now["t"][0] == cas_t
    assert now["e"] == (987654321, 9)

    # Partial resync: the link is cut, writes go on, the replica continues from its offset.
    assert rep.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "master") == 1
    assert mc.line("set mc-a 43 0 2", b"hi") == b"STORED"
    m.set("resp-s", "w")
    assert mc.line("incr n 1") == b"8"
    until("a partial resync", lambda: info(master, "stats")["sync_partial_ok"] == "1")
    until("versions follow after it", lambda: same_metas(master, rep))
    assert info(master, "stats")["sync_full"] == "1"
    assert metas(rep)["mc-a"][1] == 43

    # A CAS unique read on the old master works on the promoted replica.
    cas_a = mc.meta("mc-a")[0]
    mc.close()
    master.kill()
    rc = rep.client(protocol=2)
    assert rc.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    r = Mc(rep.mc_port)
    try:
        assert r.line(f"cas mc-a 5 0 3 {cas_a}", b"new") == b"STORED"
        assert r.line(f"cas mc-a 5 0 3 {cas_a}", b"old") == b"EXISTS"
        assert r.meta("mc-a")[1] == 5
    finally:
        r.close()


def test_a_redis_replica_beside_a_larder_one_gets_the_stream_alone(
        start_server, redis_factory) -> None:
    master = start_with_http(start_server)
    m = master.client(protocol=2)
    fill(m, 0)
    mc = Mc(master.mc_port)
    assert mc.line("set mc-a 42 0 5", b"hello") == b"STORED"
    lrep = start_with_http(start_server, "--replicaof", f"127.0.0.1 {master.port}")
    rrep = replica_of(redis_factory, master)
    until("larder replica up", lambda: link_up(lrep))
    # Writes in the stream, from both doors, in several databases and a transaction.
    for i in range(20):
        assert mc.line(f"set mc-{i} {i} 0 1", b"x") == b"STORED"
        m.set(f"resp-{i}", i)
    with m.pipeline(transaction=True) as p:
        p.incr("counter")
        p.hset("h", "f", "v")
        p.execute()
    m.execute_command("SELECT", 2)
    m.set("in-two", "2")
    m.execute_command("SELECT", 0)
    assert mc.line("incr counter 5") == b"6"
    mc.close()
    offset = info(master, "replication")["master_repl_offset"]
    for rep in (lrep, rrep):
        until("offsets agree", lambda rep=rep: info(rep, "replication").get(
            "slave_repl_offset") == offset)
        until("data match", lambda rep=rep: same_data(master, rep, dbs=(0, 2)))
    m.set("last", "1")
    assert m.execute_command("WAIT", 2, 2000) == 2
    assert metas(lrep) == metas(master)
    assert metas(master)["mc-a"] is not None
    log = rrep.log_text().lower()
    for bad in ("unknown command", "larder.meta", "unrecognized", "error"):
        assert bad not in log, bad


def full_sync_as(master: Server, capa: str) -> tuple[socket.socket, bytes]:
    """A raw replica connection that said `capa eof capa <capa>`, and its full resync's
    file."""
    s = socket.create_connection(("127.0.0.1", master.port), timeout=10)
    assert call(s, "REPLCONF", "capa", "eof", "capa", capa) == b"+OK"
    assert call(s, "PSYNC", "?", "-1").startswith(b"+FULLRESYNC ")
    return s, read_eof_file(s)


def read_stream_until(s: socket.socket, done) -> bytes:
    """The replication stream a raw replica connection gets until `done(stream)`. A write's
    frame follows the write once the replica is online: at an ACK after its file was sent
    whole (sent again each 0.2 s, as a replica does each second)."""
    s.settimeout(0.2)
    stream = b""
    deadline = time.monotonic() + 10
    while not done(stream):
        assert time.monotonic() < deadline, stream
        try:
            chunk = s.recv(4096)
        except TimeoutError:
            s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\n0\r\n")
            continue
        assert chunk, "connection closed"
        stream += chunk
    return stream


def test_redis_server_loads_a_file_that_carries_versions(start_server, redis_factory,
                                                         tmp_path: Path) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)
    s, rdb = full_sync_as(master, "larder-meta2")
    with s:
        m.execute_command("SELECT", 0)
        m.set("after", "1")
        stream = read_stream_until(
            s, lambda got: b"LARDER.META" in got and got.endswith(b"\r\n"))
    assert b"\xfa\x02lm" in rdb
    # The frame's one argument packs each entry as varints: database 0, key length 5, the
    # key, then its version and flags.
    assert re.search(rb"SET\r\n\$5\r\nafter\r\n\$1\r\n1\r\n\*2\r\n\$11\r\nLARDER\.META\r\n"
                     rb"\$\d+\r\n\x00\x05after", stream), stream
    d = tmp_path / "rdbdir"
    d.mkdir()
    (d / "from-larder.rdb").write_bytes(rdb)
    loaded = redis_factory("--dir", str(d), "--dbfilename", "from-larder.rdb")
    m.delete("after")
    assert same_data(master, loaded)


def test_a_replica_of_the_first_frame_form_is_sent_none(start_server) -> None:
    # A replica that says only `capa larder-meta` (a larder before the packed frames) would
    # refuse them: it is sent a file and a stream as a redis-server replica is.
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    s, rdb = full_sync_as(master, "larder-meta")
    with s:
        m.execute_command("SELECT", 0)
        m.set("after", "1")
        m.set("marker", "2")
        stream = read_stream_until(s, lambda got: b"marker" in got)
        # Frames follow a turn's commands: give one the time to arrive.
        time.sleep(0.5)
        try:
            stream += s.recv(65536)
        except TimeoutError:
            pass
    assert b"\xfa\x02lm" not in rdb
    assert b"SET\r\n$5\r\nafter\r\n" in stream
    assert b"LARDER.META" not in stream


def test_a_sub_replica_gets_the_frames_its_master_passes_on(start_server, redis_factory) -> None:
    top = start_with_http(start_server)
    mc = Mc(top.mc_port)
    assert mc.line("set mc-a 42 0 1", b"a") == b"STORED"
    mid = start_with_http(start_server, "--replicaof", f"127.0.0.1 {top.port}")
    until("mid up", lambda: link_up(mid))
    low = start_with_http(start_server, "--replicaof", f"127.0.0.1 {mid.port}")
    rlow = replica_of(redis_factory, mid)
    until("low up", lambda: link_up(low))
    assert mc.line("set mc-b 7 0 1", b"b") == b"STORED"
    assert mc.line("incr mc-a 1") is not None
    m = top.client(protocol=2)
    m.set("resp-s", "v")
    mc.close()
    until("versions reach the sub-replica", lambda: same_metas(top, low))
    assert metas(low)["mc-b"][1] == 7
    offset = info(top, "replication")["master_repl_offset"]
    for rep in (mid, low, rlow):
        until("offsets agree", lambda rep=rep: info(rep, "replication").get(
            "slave_repl_offset") == offset)
    assert same_data(top, rlow, dbs=(0,))
