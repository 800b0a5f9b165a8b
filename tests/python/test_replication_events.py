"""Keyspace notifications and the HTTP door's SSE watch on a larder replica, from the
replicated stream: a larder replica and a stock redis-server replica follow the same master
(larder or redis-server) with `notify-keyspace-events KEA`, and receive the same events in
the same order for the same writes (SET, DEL, PEXPIREAT, HSET, LPUSH, keys that expire on
the master and reach the replicas as its DEL, ...). Also INFO's replication buffers on a
master and a replica's progress through an EOF-marked file.

Every test starts its own processes and polls with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from typing import Any

import httpx
import pytest
import redis

from conftest import Server, start_with_http
from test_replication_master import info, until

pytestmark = pytest.mark.larder_only

# Writes on the master, each with the keys it touches; every replica must fire the same
# keyspace and keyevent notifications for the stream they become.
WRITES: list[tuple[Any, ...]] = [
    ("SET", "s", "v"),
    ("SET", "s", "v2", "EX", "1000"),
    ("EXPIRE", "s", "2000"),
    ("PERSIST", "s"),
    ("APPEND", "s", "x"),
    ("INCR", "n"),
    ("INCRBY", "n", "5"),
    ("DEL", "s", "n"),
    ("HSET", "h", "f", "1", "g", "2"),
    ("HINCRBY", "h", "f", "3"),
    ("HDEL", "h", "f"),
    ("LPUSH", "l", "a", "b", "c"),
    ("RPOP", "l"),
    ("LPOP", "l", "2"),
    ("SADD", "set", "x", "y"),
    ("SREM", "set", "x"),
    ("ZADD", "z", "1", "a", "2", "b"),
    ("ZINCRBY", "z", "1", "a"),
    ("RENAME", "z", "z2"),
    ("PEXPIRE", "z2", "100000"),
    ("SET", "g", "1"),
    ("GETDEL", "g"),
    ("SET", "gone", "1", "PX", "30"),
]


class Listener:
    """Every keyspace and keyevent message a server publishes, in order."""

    def __init__(self, srv: Server) -> None:
        self.items: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._ps = srv.client(protocol=2, decode_responses=True).pubsub()
        self._ps.psubscribe("__key*__:*")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                m = self._ps.get_message(timeout=0.05)
            except (redis.RedisError, OSError, ValueError):
                return
            if m and m["type"] == "pmessage":
                with self._lock:
                    self.items.append((m["channel"], m["data"]))

    def got(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.items)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._ps.close()


def replica_of(srv: Server, master: Server) -> None:
    c = srv.client(protocol=2, decode_responses=True)
    c.config_set("notify-keyspace-events", "KEA")
    c.execute_command("REPLICAOF", "127.0.0.1", master.port)
    until("master_link_status:up",
          lambda: info(srv, "replication").get("master_link_status") == "up")


def master_of(kind: str, start_server, redis_factory) -> Server:
    if kind == "larder":
        return start_server()
    srv = redis_factory()
    # redis-server waits 5 s for more replicas before a diskless full resync by default.
    srv.client(protocol=2).config_set("repl-diskless-sync-delay", 0)
    return srv


@pytest.mark.parametrize("kind", ["larder", "redis"])
def test_replica_events_match_a_redis_replica(kind: str, start_server, redis_factory) -> None:
    master = master_of(kind, start_server, redis_factory)
    ours, theirs = start_server(), redis_factory()
    for rep in (ours, theirs):
        replica_of(rep, master)
    listeners = [Listener(ours), Listener(theirs)]
    try:
        m = master.client(protocol=2, decode_responses=True)
        # Both listeners are subscribed before the first write.
        for rep in (ours, theirs):
            until("subscribed", lambda rep=rep: rep.client(protocol=2).execute_command(
                "PUBSUB", "NUMPAT") == 1)
        for cmd in WRITES:
            m.execute_command(*cmd)
        with m.pipeline(transaction=True) as p:
            p.set("tx", "1").lpush("txl", "a").expire("tx", 500)
            p.execute()
        # The master expires `gone` and sends its DEL; then a last write closes the run.
        until("the master expired `gone`", lambda: m.exists("gone") == 0 and (
            m.info("stats")["expired_keys"] >= 1))
        m.set("end", "1")
        # The write publishes two messages, the keyspace one first: wait for both, or the
        # comparison can catch one listener between them.
        ends = [("__keyspace@0__:end", "set"), ("__keyevent@0__:set", "end")]
        for lst in listeners:
            until("the last write's events",
                  lambda lst=lst: all(e in lst.got() for e in ends))
        got_ours, got_theirs = (lst.got() for lst in listeners)
        assert len(got_theirs) > 2 * len(WRITES)
        assert got_ours == got_theirs
    finally:
        for lst in listeners:
            lst.close()


class Sse:
    """`/v1/watch` on a larder's HTTP door, read on a thread: events as dicts."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(timeout=httpx.Timeout(10.0))
        self.events: list[dict[str, Any]] = []
        self.response = self.client.send(self.client.build_request("GET", url), stream=True)
        assert self.response.status_code == 200
        self.sock = self.response.extensions["network_stream"].get_extra_info("socket")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            for line in self.response.iter_lines():
                if line == "" and "event" in fields:
                    self.events.append({"event": fields["event"],
                                        **json.loads(fields.get("data", "{}"))})
                    fields = {}
                elif line and not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.lstrip(" ")
        except (httpx.HTTPError, OSError, ValueError):
            pass

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.response.close()
        self.client.close()


@pytest.mark.parametrize("kind", ["larder", "redis"])
def test_sse_watch_on_a_replica_sees_replicated_writes(kind: str, start_server,
                                                       redis_factory) -> None:
    master = master_of(kind, start_server, redis_factory)
    rep = start_with_http(start_server)
    replica_of(rep, master)
    sse = Sse(f"{rep.http_url}/v1/watch?prefix=w:")
    try:
        # The stream is open once its first heartbeat or event can arrive: write until one
        # shows up, then write the rest.
        m = master.client(protocol=2, decode_responses=True)
        deadline = time.monotonic() + 10
        while not sse.events:
            assert time.monotonic() < deadline, "no event on the replica's watch"
            m.set("w:probe", "1")
            time.sleep(0.05)
        m.set("w:a", "1")
        m.hset("w:h", "f", "v")
        m.delete("w:a")
        m.set("w:t", "1", px=30)
        until("the master expired w:t", lambda: m.exists("w:t") == 0 and (
            m.info("stats")["expired_keys"] >= 1))
        m.set("w:end", "1")
        until("the last write on the watch",
              lambda: any(e.get("key") == "w:end" for e in sse.events))
        seen = [(e["event"], e["key"]) for e in sse.events if e.get("key") != "w:probe"]
        assert seen == [("set", "w:a"), ("set", "w:h"), ("del", "w:a"), ("set", "w:t"),
                        ("del", "w:t"), ("set", "w:end")]
    finally:
        sse.close()


def test_replication_buffers_in_info_memory(start_server, redis_factory) -> None:
    """`mem_total_replication_buffers` is the backlog plus what waits for the replicas;
    `mem_clients_slaves` grows while a replica does not read."""
    master = start_server()
    m = master.client(protocol=2, decode_responses=True)
    assert m.info("memory")["mem_total_replication_buffers"] == 0
    rep = redis_factory()
    replica_of(rep, master)
    m.set("k", "v" * 1000)
    until("the backlog holds the stream", lambda: m.info("memory")["mem_replication_backlog"] > 0)
    mem = m.info("memory")
    assert mem["mem_total_replication_buffers"] >= mem["mem_replication_backlog"] > 1000
    # A stopped replica reads nothing: what the master sends it piles up in its output.
    rep.proc.send_signal(signal.SIGSTOP)
    try:
        value = "x" * 100_000
        deadline = time.monotonic() + 10
        while m.info("memory")["mem_clients_slaves"] == 0:
            assert time.monotonic() < deadline, "no output waits for the stopped replica"
            m.mset({f"big{i}": value for i in range(10)})
        mem = m.info("memory")
        assert mem["mem_total_replication_buffers"] == (
            mem["mem_replication_backlog"] + mem["mem_clients_slaves"])
    finally:
        rep.proc.send_signal(signal.SIGCONT)
    until("the replica drains its output", lambda: m.info("memory")["mem_clients_slaves"] == 0)


@pytest.mark.parametrize("kind", ["larder", "redis"])
def test_sync_progress_of_an_eof_marked_file(kind: str, start_server, redis_factory) -> None:
    """A diskless master sends its file between EOF marks, size unknown: the replica shows
    `master_sync_total_bytes:0` (Redis 7.0 sets it to 0 when it reads the `$EOF:` header)
    and `master_sync_read_bytes` growing as it reads."""
    master = master_of(kind, start_server, redis_factory)
    m = master.client(protocol=2)
    if kind == "redis":
        m.config_set("repl-diskless-sync", "yes")
    # Values that do not compress: a file of about 1 MB.
    for start in range(0, 4000, 500):
        m.mset({f"key{i}": os.urandom(100).hex() for i in range(start, start + 500)})
    # The replica reads the file slowly (key-load-delay: 2 ms per read of at most 1 KiB).
    rep = start_server("--key-load-delay", "2000")
    rep.client(protocol=2).execute_command("REPLICAOF", "127.0.0.1", master.port)
    reads = []

    def progress() -> bool:
        i = info(rep, "replication")
        if i.get("master_sync_in_progress") == "1" and int(
                i.get("master_sync_read_bytes", 0)) > 0:
            assert i["master_sync_total_bytes"] == "0"
            read = int(i["master_sync_read_bytes"])
            assert i["master_sync_left_bytes"] == str(-read)
            assert float(i["master_sync_perc"]) == 0
            reads.append(read)
        return len(set(reads)) >= 3

    until("three growing read counts during the transfer", progress)
    assert reads == sorted(reads)
    rep.client(protocol=2).config_set("key-load-delay", "0")
    until("synced", lambda: info(rep, "replication").get("master_link_status") == "up")
