"""The HTTP door's change streams: SSE watches over the change feed (`/v1/watch`), pub/sub over
SSE (`/v1/subscribe`) and long polls on the key API (`/v1/kv/{key}?wait_ver=N&wait=..`).

Every test talks to a real larder over real sockets: httpx reads the streams, redis-py,
HTTP requests and a memcached text socket make the changes."""

from __future__ import annotations

import base64
import json
import queue
import socket
import threading
import time
from typing import Any, Iterator

import httpx
import pytest
import redis

from conftest import Server, ServerFactory, start_with_http

pytestmark = pytest.mark.larder_only

HOST = "127.0.0.1"




@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("watch"))
    srv = start_with_http(factory, "--threads", "2")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def srv(door: Server) -> Iterator[Server]:
    with door.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
        conn.call("CONFIG", "SET", "http-sse-max-watchers", "10000")
        conn.call("CONFIG", "SET", "maxmemory", "0")
    yield door
    door.close_clients()
    assert door.alive(), f"server died during the test\n{door.log_tail()}"


class Stream:
    """An SSE stream read by httpx on a thread: events as dicts (`id`, `event`, `data`
    parsed as JSON) and comments as `{"comment": text}`, in arrival order."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.client = httpx.Client(timeout=httpx.Timeout(10.0))
        self.items: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.response = self.client.send(
            self.client.build_request("GET", url, headers=headers), stream=True)
        self.sock = self.response.extensions["network_stream"].get_extra_info("socket")
        self.thread = threading.Thread(target=self._read, daemon=True)
        if self.response.status_code == 200:
            self.thread.start()

    def _read(self) -> None:
        fields: dict[str, Any] = {}
        try:
            for line in self.response.iter_lines():
                if line == "":
                    if fields:
                        if "data" in fields:
                            fields["data"] = json.loads(fields["data"])
                        fields["t"] = time.monotonic()
                        self.items.put(fields)
                    fields = {}
                elif line.startswith(":"):
                    self.items.put({"comment": line[1:].strip()})
                else:
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
        except Exception:
            pass
        self.items.put({"closed": True})

    def next(self, timeout: float = 5.0, comments: bool = False) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no event within the timeout")
            item = self.items.get(timeout=left)
            if "comment" in item and not comments:
                continue
            return item

    def take(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        return [self.next(timeout) for _ in range(n)]

    def quiet(self, seconds: float = 0.3) -> list[dict[str, Any]]:
        """What arrives within `seconds` (comments skipped)."""
        got = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                item = self.items.get(timeout=left)
            except queue.Empty:
                break
            if "comment" not in item:
                got.append(item)
        return got

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self.thread.is_alive():
            self.thread.join(5)
        self.response.close()
        self.client.close()


@pytest.fixture
def watch(srv: Server) -> Iterator:
    """Opens streams on the door (`watch(path_and_query, headers)`), closes them after."""
    opened: list[Stream] = []

    def open_(query: str = "/v1/watch", headers: dict[str, str] | None = None) -> Stream:
        s = Stream(srv.http_url + query, headers)
        opened.append(s)
        return s

    yield open_
    for s in opened:
        s.close()


def settle(srv: Server) -> None:
    """A round trip through the server, so that a stream opened just before is registered:
    a stream's head is written after its registration, so reading it is enough; this waits
    for the writes of other doors to be answered too."""
    httpx.get(srv.http_url + "/healthz", timeout=5)


def etag(srv: Server, key: str) -> int:
    r = httpx.get(f"{srv.http_url}/v1/kv/{key}", timeout=5)
    assert r.status_code == 200, r.text
    return int(r.headers["etag"].strip('"'))


def mc_set(srv: Server, key: str, value: bytes) -> None:
    with socket.create_connection((HOST, srv.mc_port), timeout=5) as s:
        s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))
        assert s.recv(64) == b"STORED\r\n"


# ---------------------------------------------------------------------------------------------
# Watches: the stream, event types, values, filters
# ---------------------------------------------------------------------------------------------


def test_stream_head_and_set_events_from_every_door(srv: Server, watch) -> None:
    w = watch("/v1/watch?key=a&key=b&key=c")
    assert w.response.status_code == 200
    h = w.response.headers
    assert h["content-type"] == "text/event-stream"
    assert h["cache-control"] == "no-cache"
    assert h["x-accel-buffering"] == "no"
    assert "content-length" not in h
    r = srv.client()
    r.set("a", "1")
    assert httpx.put(f"{srv.http_url}/v1/kv/b", content=b"2", timeout=5).status_code in (200, 201,
                                                                                       204)
    mc_set(srv, "c", b"3")
    got = w.take(3)
    assert [(e["event"], e["data"]["key"]) for e in got] == [("set", "a"), ("set", "b"),
                                                             ("set", "c")]
    for e in got:
        assert e["data"]["version"] == etag(srv, e["data"]["key"])
        assert e["data"]["db"] == 0
        assert "value" not in e["data"]
    ids = [int(e["id"]) for e in got]
    assert ids == sorted(ids) and len(set(ids)) == 3


def test_del_expired_evicted_flush_and_swap(srv: Server, watch) -> None:
    r = srv.client()
    w = watch("/v1/watch")
    r.set("gone", "x")
    r.delete("gone")
    r.set("brief", "x", px=30)
    time.sleep(0.1)
    assert r.get("brief") is None  # expired by now, lazily or actively
    events = w.take(4)
    assert [(e["event"], e["data"]["key"]) for e in events] == [
        ("set", "gone"), ("del", "gone"), ("set", "brief"), ("expired", "brief")]
    # The removal carries the removed key's version.
    assert events[1]["data"]["version"] == events[0]["data"]["version"]
    r.flushdb()
    assert w.next()["event"] == "flush"
    r.swapdb(0, 1)
    e = w.next()
    assert e["event"] == "swap" and e["data"] == {"db": 0, "other": 1}
    r.swapdb(0, 1)
    assert w.next()["event"] == "swap"
    # Eviction under maxmemory.
    r.config_set("maxmemory-policy", "allkeys-random")
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", str(used + 256 * 1024))
    try:
        for i in range(400):
            try:
                r.set(f"fill:{i}", "v" * 4096)
            except redis.ResponseError:
                pass
        deadline = time.monotonic() + 10
        evicted = []
        while not evicted and time.monotonic() < deadline:
            evicted = [e for e in w.quiet(0.2) if e.get("event") == "evicted"]
        assert evicted, "no evicted event under maxmemory"
        assert evicted[0]["data"]["key"].startswith("fill:")
    finally:
        r.config_set("maxmemory", "0")
        r.config_set("maxmemory-policy", "noeviction")


def test_filters_keys_prefixes_events_and_db(srv: Server, watch) -> None:
    r = srv.client()
    by_key = watch("/v1/watch?key=user:1&key=other")
    by_prefix = watch("/v1/watch?prefix=user:&events=del")
    in_db2 = watch("/v1/watch?db=2")
    for k in ("user:1", "user:2", "zzz"):
        r.set(k, "v")
    r.delete("user:2")
    r2 = srv.client(db=2)
    r2.set("user:1", "in two")
    assert [(e["event"], e["data"]["key"]) for e in by_key.take(1)] == [("set", "user:1")]
    assert [(e["event"], e["data"]["key"]) for e in by_prefix.take(1)] == [("del", "user:2")]
    e = in_db2.next()
    assert (e["event"], e["data"]["key"], e["data"]["db"]) == ("set", "user:1", 2)
    for s in (by_key, by_prefix, in_db2):
        assert s.quiet() == []
    bad = httpx.get(srv.http_url + "/v1/watch?events=set,nope", timeout=5)
    assert bad.status_code == 400 and "nope" in bad.json()["error"]
    assert httpx.get(srv.http_url + "/v1/watch?db=99", timeout=5).status_code == 400
    assert httpx.get(srv.http_url + "/v1/watch?heartbeat=1ms", timeout=5).status_code == 400
    post = httpx.post(srv.http_url + "/v1/watch", timeout=5)
    assert post.status_code == 405 and post.headers["allow"] == "GET"


def test_values_utf8_binary_and_collections(srv: Server, watch) -> None:
    r = srv.client()
    w = watch("/v1/watch?values=1")
    r.set("text", "héllo")
    r.set(b"bin\xff", b"\x00\x01\xfe")
    r.rpush("list", "a", "b")
    r.hset("hash", "f", "v")
    r.delete("text")
    got = w.take(5)
    assert got[0]["data"]["value"] == "héllo" and got[0]["data"]["type"] == "string"
    assert "encoding" not in got[0]["data"]
    d = got[1]["data"]
    assert base64.b64decode(d["key"]) == b"bin\xff" and d["key_encoding"] == "base64"
    assert base64.b64decode(d["value"]) == b"\x00\x01\xfe" and d["encoding"] == "base64"
    assert got[2]["data"]["type"] == "list" and got[2]["data"]["value"] == ["a", "b"]
    assert got[3]["data"]["value"] == [["f", "v"]]
    assert got[4]["event"] == "del" and "value" not in got[4]["data"]


def test_ids_one_sequence_across_watchers(srv: Server, watch) -> None:
    r = srv.client()
    a = watch("/v1/watch")
    b = watch("/v1/watch?prefix=k")
    for i in range(50):
        r.set(f"k{i}", i)
    ea, eb = a.take(50), b.take(50)
    ids_a = [int(e["id"]) for e in ea]
    assert all(y == x + 1 for x, y in zip(ids_a, ids_a[1:])), ids_a
    assert ids_a == [int(e["id"]) for e in eb]
    assert [e["data"]["key"] for e in ea] == [f"k{i}" for i in range(50)]


# ---------------------------------------------------------------------------------------------
# Resume, falling behind, heartbeats, the cap
# ---------------------------------------------------------------------------------------------


def test_resume_with_last_event_id_loses_and_repeats_nothing(srv: Server, watch) -> None:
    r = srv.client()
    reference = watch("/v1/watch")
    first = watch("/v1/watch")
    for i in range(20):
        r.set(f"r{i}", i)
    seen = first.take(20)
    first.close()
    for i in range(20, 60):
        r.set(f"r{i}", i)
    again = watch("/v1/watch", {"Last-Event-ID": seen[-1]["id"]})
    for i in range(60, 70):
        r.set(f"r{i}", i)
    rest = again.take(50)
    everything = reference.take(70)
    assert [e["id"] for e in seen + rest] == [e["id"] for e in everything]
    assert [e["data"]["key"] for e in seen + rest] == [f"r{i}" for i in range(70)]
    assert again.quiet() == []


def test_unknown_or_too_old_last_event_id_gets_resync(srv: Server, watch) -> None:
    r = srv.client()
    for header in ("1", "not-a-number", "99999999999999999999"):
        w = watch("/v1/watch", {"Last-Event-ID": header})
        e = w.next()
        assert e["event"] == "resync" and e["data"]["reason"] == "history", header
        assert "id" not in e
        r.set("after", "x")
        e = w.next()
        assert (e["event"], e["data"]["key"]) == ("set", "after")


def test_stalled_reader_gets_resync_and_slows_no_one(start_server) -> None:
    # 1 MiB per stream: more than everything the watcher that keeps up is sent (3000 small
    # events), however slowly it reads on a busy machine, and far less than the stalled
    # reader's 24 MiB of values.
    srv = start_with_http(start_server, "--http-sse-buffer-limit", "1048576")
    # A reader that stops reading: a tiny receive window and no reads.
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect((HOST, srv.http_port))
    stalled.sendall(b"GET /v1/watch?values=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    keeping_up = Stream(srv.http_url + "/v1/watch")
    try:
        settle(srv)
        r = srv.client()
        value = b"v" * 8192
        n = 3000
        worst = 0.0
        for start in range(0, n, 100):
            p = r.pipeline(transaction=False)
            for i in range(start, start + 100):
                p.set(f"s{i}", value)
            p.execute()
            t = time.monotonic()
            assert r.ping()
            worst = max(worst, time.monotonic() - t)
        assert worst < 1.0, f"PING took {worst:.3f}s while a reader stalled"
        got = keeping_up.take(n, timeout=20)
        assert [e["data"]["key"] for e in got] == [f"s{i}" for i in range(n)]
        assert not any(e["event"] == "resync" for e in got)
        # The stalled reader now reads everything: a resync marks every gap. The watch is
        # lossy, so a write made while the reader's output is still over its budget is
        # skipped too: once the reader has drained its stream without seeing it, the marker
        # key is written again.
        r.set("final", "x")
        stalled.settimeout(0.5)
        buf = b""
        deadline = time.monotonic() + 20
        while b'"key":"final"' not in buf or not buf.endswith(b"\n\n"):
            assert time.monotonic() < deadline, "the stalled reader never got the final write"
            try:
                chunk = stalled.recv(1 << 20)
            except TimeoutError:
                if b'"key":"final"' not in buf:
                    r.set("final", "x")
                continue
            assert chunk, "stream closed"
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        blocks = [b for b in body.decode().split("\n\n") if b and not b.startswith(":")]
        prev = None
        resyncs = 0
        pending_resync = False
        for block in blocks:
            lines = dict(line.split(": ", 1) for line in block.split("\n"))
            if lines["event"] == "resync":
                assert json.loads(lines["data"])["reason"] == "behind"
                resyncs += 1
                pending_resync = True
                continue
            i = int(lines["id"])
            if prev is not None and i != prev + 1:
                assert pending_resync, f"a gap from {prev} to {i} without resync"
            pending_resync = False
            prev = i
        assert resyncs >= 1
        assert len(blocks) < n, "the stalled reader was sent everything"
    finally:
        stalled.close()
        keeping_up.close()


def test_heartbeats(srv: Server, watch) -> None:
    w = watch("/v1/watch?heartbeat=1s")
    t0 = time.monotonic()
    pings = [w.next(timeout=3, comments=True) for _ in range(2)]
    assert all(p.get("comment") == "ping" for p in pings)
    assert 1.0 <= time.monotonic() - t0 < 4.0
    s = watch("/v1/subscribe?channel=quiet&heartbeat=1s")
    assert s.next(timeout=3, comments=True).get("comment") == "ping"


def test_cap_on_streams(srv: Server, watch) -> None:
    r = srv.client()
    r.config_set("http-sse-max-watchers", "2")
    a = watch("/v1/watch")
    watch("/v1/subscribe?channel=c")
    third = httpx.get(srv.http_url + "/v1/watch", timeout=5)
    assert third.status_code == 503
    assert third.headers["retry-after"] == "5"
    assert "http-sse-max-watchers" in third.json()["error"]
    a.close()
    deadline = time.monotonic() + 5
    while True:
        w = watch("/v1/watch")
        if w.response.status_code == 200:
            break
        assert time.monotonic() < deadline, "a closed stream kept its place"
        time.sleep(0.05)
    r.set("k", "v")
    assert w.next()["data"]["key"] == "k"


# ---------------------------------------------------------------------------------------------
# Pub/sub over SSE
# ---------------------------------------------------------------------------------------------


def test_subscribe_channels_and_patterns_in_order(srv: Server, watch) -> None:
    s = watch("/v1/subscribe?channel=news&pattern=n*")
    assert s.response.headers["content-type"] == "text/event-stream"
    r = srv.client()
    assert r.pubsub_numsub("news") == [(b"news", 1)]
    for i in range(100):
        assert r.publish("news", f"m{i}") == 2
    r.publish("nope", b"\xff\x00")
    got = s.take(201)
    direct = [e["data"]["message"] for e in got if "pattern" not in e["data"]]
    by_pattern = [e for e in got if "pattern" in e["data"]]
    assert direct == [f"m{i}" for i in range(100)]
    assert [e["data"]["message"] for e in by_pattern[:100]] == [f"m{i}" for i in range(100)]
    assert all(e["event"] == "message" and e["data"]["channel"] == "news"
               for e in got[:200])
    last = got[200]["data"]
    assert last["channel"] == "nope" and last["pattern"] == "n*"
    assert base64.b64decode(last["message"]) == b"\xff\x00" and last["encoding"] == "base64"
    s.close()
    deadline = time.monotonic() + 5
    while r.pubsub_numsub("news") != [(b"news", 0)]:
        assert time.monotonic() < deadline, "a closed subscriber stayed subscribed"
        time.sleep(0.05)


def test_subscribe_rejects_bad_requests(srv: Server) -> None:
    for q in ("", "?channel=__values@0__:k", "?pattern=__values@*"):
        assert httpx.get(srv.http_url + "/v1/subscribe" + q, timeout=5).status_code == 400, q


# ---------------------------------------------------------------------------------------------
# Long polls
# ---------------------------------------------------------------------------------------------


def later(seconds: float, fn) -> threading.Thread:
    def run() -> None:
        time.sleep(seconds)
        fn()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_long_poll_wakes_on_change(srv: Server) -> None:
    r = srv.client()
    r.set("lp", "one")
    ver = etag(srv, "lp")
    later(0.5, lambda: r.set("lp", "two"))
    t0 = time.monotonic()
    resp = httpx.get(f"{srv.http_url}/v1/kv/lp?wait_ver={ver}&wait=10s", timeout=15)
    took = time.monotonic() - t0
    assert resp.status_code == 200 and resp.content == b"two"
    assert int(resp.headers["etag"].strip('"')) != ver
    assert 0.4 <= took < 5, took
    # A version that already moved: answered at once.
    t0 = time.monotonic()
    resp = httpx.get(f"{srv.http_url}/v1/kv/lp?wait_ver={ver}&wait=10s", timeout=15)
    assert resp.status_code == 200 and time.monotonic() - t0 < 1


def test_long_poll_times_out_with_304(srv: Server) -> None:
    r = srv.client()
    r.set("still", "x")
    ver = etag(srv, "still")
    # Another key's changes wake nothing visible.
    later(0.3, lambda: r.set("other", "y"))
    t0 = time.monotonic()
    resp = httpx.get(f"{srv.http_url}/v1/kv/still?wait_ver={ver}&wait=1s", timeout=10)
    took = time.monotonic() - t0
    assert resp.status_code == 304 and resp.content == b""
    assert resp.headers["etag"] == f'"{ver}"'
    assert 0.9 <= took < 3, took
    # The connection serves its next request normally.
    with httpx.Client(timeout=10) as c:
        assert c.get(f"{srv.http_url}/v1/kv/still?wait_ver={ver}&wait=200ms").status_code == 304
        assert c.get(f"{srv.http_url}/v1/kv/still").content == b"x"


def test_long_poll_wakes_on_delete_and_on_create(srv: Server) -> None:
    r = srv.client()
    r.set("doomed", "x")
    ver = etag(srv, "doomed")
    later(0.3, lambda: r.delete("doomed"))
    resp = httpx.get(f"{srv.http_url}/v1/kv/doomed?wait_ver={ver}&wait=10s", timeout=15)
    assert resp.status_code == 404
    # wait_ver=0: while the key does not exist; a memcached set creates it.
    later(0.3, lambda: mc_set(srv, "born", b"hi"))
    t0 = time.monotonic()
    resp = httpx.get(f"{srv.http_url}/v1/kv/born?wait_ver=0&wait=10s", timeout=15)
    assert resp.status_code == 200 and resp.content == b"hi"
    assert time.monotonic() - t0 < 5


def test_many_long_polls_wake_together_and_leave_on_disconnect(srv: Server) -> None:
    r = srv.client()
    r.set("shared", "0")
    ver = etag(srv, "shared")
    results: list[int] = []

    def poll() -> None:
        resp = httpx.get(f"{srv.http_url}/v1/kv/shared?wait_ver={ver}&wait=10s", timeout=15)
        results.append(resp.status_code)

    threads = [threading.Thread(target=poll) for _ in range(10)]
    for t in threads:
        t.start()
    # A poller that hangs up: the server forgets it.
    quitter = socket.create_connection((HOST, srv.http_port))
    quitter.sendall(f"GET /v1/kv/shared?wait_ver={ver}&wait=10s HTTP/1.1\r\nHost: x\r\n\r\n"
                    .encode())
    time.sleep(0.5)
    quitter.close()
    r.set("shared", "1")
    for t in threads:
        t.join(10)
    assert results == [200] * 10
    assert r.ping()
