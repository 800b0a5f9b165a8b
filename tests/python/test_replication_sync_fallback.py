"""larder as a replica of a master that refuses PSYNC, as Redis 7.0's replica handles one
(`slaveTryPartialResynchronization`): `-LOADING` / `-NOMASTERLINK` mean "PSYNC again later";
any other `-ERR` means the master does not know PSYNC, so the replica sends `SYNC` and reads
the file (`$<len>` and its bytes, the stream after it) with no replication id or offset.

The master is a fake in the test (a socket server thread): it answers the handshake, PSYNC
with the error it is given, and SYNC with a file redis-server saved, then a stream command.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import Server
from test_replication_master import info, until

pytestmark = pytest.mark.larder_only

STREAM = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
GETACK = b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"
NOT_SUPPORTED = b"-ERR unknown command 'PSYNC', with args beginning with: '?' '-1' "


def read_command(f) -> list[bytes] | None:
    """One RESP array of bulk strings from the replica, or None at the end of the link."""
    head = f.readline()
    if not head:
        return None
    assert head.startswith(b"*"), head
    args = []
    for _ in range(int(head[1:])):
        n = int(f.readline()[1:])
        args.append(f.read(n + 2)[:-2])
    return args


class FakeMaster:
    """Accepts the replica's connections one after another. Connection i answers PSYNC with
    `psync_replies[i]` (the last one repeats; a `+FULLRESYNC` one is followed by `rdb`) and
    SYNC with `rdb` and `STREAM`; every command received is recorded per connection."""

    def __init__(self, psync_replies: list[bytes], rdb: bytes) -> None:
        self.psync_replies = psync_replies
        self.rdb = rdb
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.conns: list[list[list[bytes]]] = []
        self.times: list[tuple[float, list[bytes]]] = []  # when each command came
        self.current: socket.socket | None = None
        self.lock = threading.Lock()
        self.closed = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append([])
                n = len(self.conns) - 1
                self.current = conn
            self._talk(conn, n)

    def _talk(self, conn: socket.socket, n: int) -> None:
        reply = self.psync_replies[min(n, len(self.psync_replies) - 1)]
        f = conn.makefile("rb")
        try:
            while (cmd := read_command(f)) is not None:
                with self.lock:
                    self.conns[n].append(cmd)
                    self.times.append((time.monotonic(), cmd))
                name = cmd[0].upper()
                if name == b"PING":
                    conn.sendall(b"+PONG\r\n")
                elif name == b"PSYNC":
                    conn.sendall(reply + b"\r\n")
                    if reply.startswith(b"+FULLRESYNC"):
                        conn.sendall(b"$%d\r\n" % len(self.rdb) + self.rdb)
                elif name == b"SYNC":
                    conn.sendall(b"$%d\r\n" % len(self.rdb) + self.rdb + STREAM)
                elif name != b"REPLCONF" or cmd[1].upper() != b"ACK":
                    conn.sendall(b"+OK\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def commands(self, n: int) -> list[list[bytes]]:
        with self.lock:
            return list(self.conns[n]) if n < len(self.conns) else []

    def send(self, data: bytes) -> None:
        with self.lock:
            assert self.current is not None
            self.current.sendall(data)

    def drop(self) -> None:
        """Close the replica's current connection."""
        with self.lock:
            assert self.current is not None
            self.current.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        with self.lock:
            if self.current is not None:
                try:
                    self.current.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.thread.join(timeout=5)


@pytest.fixture
def rdb(redis_factory) -> bytes:
    """A file redis-server 7.0 saved with three keys."""
    srv = redis_factory()
    c = srv.client(protocol=2)
    c.set("a", "1")
    c.rpush("list", "x", "y")
    c.hset("hash", "f", "v")
    c.save()
    d = c.config_get("dir")["dir"]
    name = c.config_get("dbfilename")["dbfilename"]
    return (Path(d) / name).read_bytes()


@pytest.fixture
def fake_master(rdb):
    made: list[FakeMaster] = []

    def make(psync_replies: list[bytes]) -> FakeMaster:
        m = FakeMaster(psync_replies, rdb)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def names(cmds: list[list[bytes]]) -> list[bytes]:
    return [c[0].upper() for c in cmds]


def test_master_without_psync_gets_sync(start_server, fake_master) -> None:
    fake = fake_master([NOT_SUPPORTED])
    rep: Server = start_server("--replicaof", f"127.0.0.1 {fake.port}")
    r = rep.client(protocol=2)
    until("the SET after the file", lambda: r.get("k") == b"v")
    assert r.get("a") == b"1"
    assert r.lrange("list", 0, -1) == [b"x", b"y"]
    assert r.hgetall("hash") == {b"f": b"v"}
    i = info(rep, "replication")
    assert (i["role"], i["master_link_status"], i["master_sync_in_progress"]) == (
        "slave", "up", "0")

    first = fake.commands(0)
    assert names(first)[-2:] == [b"PSYNC", b"SYNC"]
    assert first[-1] == [b"SYNC"]
    # Redis counts the stream from -1 (`master_initial_offset`) for a master without PSYNC.
    fake.send(GETACK)
    ack = [b"REPLCONF", b"ACK", str(len(STREAM) - 1).encode()]
    until("the answer to GETACK", lambda: ack in fake.commands(0))
    # Longer than the second between the ACKs a PSYNC master gets: none comes.
    time.sleep(1.2)

    fake.drop()
    until("a second connection's SYNC", lambda: [b"SYNC"] in fake.commands(1))
    # No history from a SYNC: the reconnection asks for a full resync.
    assert [b"PSYNC", b"?", b"-1"] in fake.commands(1)
    # A master without PSYNC gets no periodic ACK, only the one GETACK asked for.
    assert [c for c in fake.commands(0) if c[:2] == [b"REPLCONF", b"ACK"]] == [ack]
    until("the replica is up again",
          lambda: info(rep, "replication")["master_link_status"] == "up")
    assert r.get("k") == b"v" and r.get("a") == b"1"
    assert "Retrying with SYNC..." in rep.log_text()
    assert "Master does not support PSYNC or is in error state (reply: -ERR unknown command" \
        in rep.log_text()


def test_loading_master_is_asked_psync_again(start_server, fake_master) -> None:
    fake = fake_master([
        b"-LOADING Redis is loading the dataset in memory",
        b"-NOMASTERLINK Can't SYNC while not connected with my master",
        NOT_SUPPORTED,
    ])
    rep: Server = start_server("--replicaof", f"127.0.0.1 {fake.port}")
    r = rep.client(protocol=2)
    until("the SET after the file", lambda: r.get("k") == b"v")
    for n in (0, 1):
        assert names(fake.commands(n))[-1] == b"PSYNC"
    assert names(fake.commands(2))[-2:] == [b"PSYNC", b"SYNC"]
    assert "Master is currently unable to PSYNC but should be in the future: -LOADING" \
        in rep.log_text()


def test_acks_come_often_in_the_first_second_after_the_file(start_server, fake_master) -> None:
    """A redis-server master starts a diskless replica's stream at an ACK that finds it
    online, and the ACK sent right after the file can come too early for that: the replica
    ACKs every 100 ms for the first second, so the stream waits no longer, then every
    second."""
    fake = fake_master([b"+FULLRESYNC " + b"a" * 40 + b" 100"])
    rep: Server = start_server("--replicaof", f"127.0.0.1 {fake.port}")
    r = rep.client(protocol=2)
    until("the file's keys", lambda: r.get("a") == b"1")

    def acks() -> list[float]:
        with fake.lock:
            return [t for t, c in fake.times if c[:2] == [b"REPLCONF", b"ACK"]]

    until("three ACKs", lambda: len(acks()) >= 3)
    first, third = acks()[0], acks()[2]
    assert third - first < 0.9, acks()
    assert [c for c in fake.commands(0) if c[:2] == [b"REPLCONF", b"ACK"]][0] == [
        b"REPLCONF", b"ACK", b"100"]
    # Then once a second: over 1.5 s after the first second, at most three more.
    until("the first second to pass", lambda: time.monotonic() - first > 1.2)
    before = len(acks())
    time.sleep(1.5)
    assert len(acks()) - before <= 3
