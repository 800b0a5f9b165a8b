"""The work queue on the HTTP door (`/v1/queue/{name}[/{op}]`): every endpoint and status
code, concurrent workers, redelivery after the visibility timeout, priorities, TTL, max
length, lock, purge, long-poll get and the publish window, against the real binary."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from conftest import Server
from test_http_kv import hs, http, srv  # noqa: F401

pytestmark = pytest.mark.larder_only


def q(srv: Server, name: str, op: str = "") -> str:
    return f"{srv.http_url}/v1/queue/{name}" + (f"/{op}" if op else "")


def put(http: requests.Session, srv: Server, name: str, body: bytes | str, **params) -> requests.Response:
    return http.post(q(srv, name), data=body, params=params)


def get(http: requests.Session, srv: Server, name: str, **params) -> requests.Response:
    return http.get(q(srv, name), params=params)


def test_put_get_ack(http: requests.Session, srv: Server) -> None:
    r = put(http, srv, "jobs", b"\x00binary\xff")
    assert r.status_code == 201
    token = r.json()["token"]
    r = get(http, srv, "jobs", worker="w1")
    assert r.status_code == 200
    assert r.content == b"\x00binary\xff"
    assert r.headers["X-Queue-Token"] == token
    assert r.headers["X-Queue-Priority"] == "0"
    assert r.headers["X-Queue-Deliveries"] == "1"
    assert get(http, srv, "jobs", worker="w1").status_code == 204
    assert http.post(q(srv, "jobs", "ack"), params={"token": token}).status_code == 204
    assert http.post(q(srv, "jobs", "ack"), params={"token": token}).status_code == 404
    assert http.post(q(srv, "jobs", "ack"), params={"token": "junk"}).status_code == 400
    assert http.post(q(srv, "jobs", "ack")).status_code == 400


def test_priorities_are_honoured(http: requests.Session, srv: Server) -> None:
    for body, prio in [("a", 0), ("b", 2), ("c", 1), ("d", 2), ("e", 0)]:
        assert put(http, srv, "p", body, priority=prio).status_code == 201
    order = [get(http, srv, "p", worker="w", ack="auto").text for _ in range(5)]
    assert order == ["b", "d", "c", "a", "e"]
    assert put(http, srv, "p", "x", priority=3).status_code == 400
    assert put(http, srv, "p", "x", priority="high").status_code == 400


def test_ttl_expiry(http: requests.Session, srv: Server) -> None:
    put(http, srv, "t", "old", ttl="1ms")
    put(http, srv, "t", "new", ttl="60s")
    time.sleep(0.01)
    assert get(http, srv, "t", worker="w").text == "new"
    assert get(http, srv, "t", worker="w").status_code == 204
    assert http.get(q(srv, "t", "stats")).json()["expired"] == 1
    assert put(http, srv, "t", "x", ttl="soon").status_code == 400


def test_max_length_and_lock_are_412(http: requests.Session, srv: Server) -> None:
    assert http.put(q(srv, "m", "max"), params={"num": 1}).status_code == 204
    assert put(http, srv, "m", "1").status_code == 201
    r = put(http, srv, "m", "2")
    assert r.status_code == 412 and "full" in r.json()["error"]
    assert http.put(q(srv, "m", "max"), params={"num": 0}).status_code == 204
    assert http.put(q(srv, "m", "lock"), params={"on": 1}).status_code == 204
    r = put(http, srv, "m", "2")
    assert r.status_code == 412 and "locked" in r.json()["error"]
    assert http.get(q(srv, "m", "stats")).json()["locked"] == 1
    assert http.put(q(srv, "m", "lock"), params={"on": 0}).status_code == 204
    assert put(http, srv, "m", "2").status_code == 201
    assert http.put(q(srv, "m", "lock")).status_code == 400
    assert http.put(q(srv, "m", "max"), params={"num": -1}).status_code == 400


def test_purge(http: requests.Session, srv: Server) -> None:
    for prio in (0, 1, 1, 2):
        put(http, srv, "pg", "x", priority=prio)
    r = http.delete(q(srv, "pg"), params={"priority": 1})
    assert r.status_code == 200 and r.json() == {"purged": 2}
    assert http.delete(q(srv, "pg")).json() == {"purged": 2}
    assert get(http, srv, "pg", worker="w").status_code == 204


def test_stats_and_workers(http: requests.Session, srv: Server) -> None:
    put(http, srv, "s", "a")
    put(http, srv, "s", "b", priority=2)
    get(http, srv, "s", worker="alice")
    st = http.get(q(srv, "s", "stats")).json()
    assert st["queue"] == "s"
    assert (st["ready"], st["unacked"], st["ready_p0"], st["ready_p2"]) == (1, 1, 1, 0)
    assert st["timeout_ms"] == 30000
    ws = http.get(q(srv, "s", "workers")).json()
    assert [w["worker"] for w in ws] == ["alice"]
    assert ws[0]["unacked"] == 1
    assert abs(ws[0]["last_seen_ms"] - time.time() * 1000) < 5000


def test_methods_and_unknown_operations(http: requests.Session, srv: Server) -> None:
    assert http.get(q(srv, "x", "nosuch")).status_code == 404
    assert http.post(q(srv, "x", "stats")).status_code == 405
    assert http.get(q(srv, "x", "pub")).status_code == 405
    assert http.patch(q(srv, "x")).status_code == 405
    assert get(http, srv, "x").status_code == 400            # no worker=
    assert get(http, srv, "x", worker="w", ack="maybe").status_code == 400
    assert http.get(f"{srv.http_url}/v1/queue/a/b/c").status_code == 404


def test_concurrent_workers_get_distinct_messages(srv: Server) -> None:
    s = requests.Session()
    for i in range(150):
        assert put(s, srv, "cw", str(i), priority=i % 3).status_code == 201
    seen: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        h = requests.Session()
        while True:
            r = get(h, srv, "cw", worker=name)
            if r.status_code == 204:
                return
            assert r.status_code == 200
            ack = h.post(q(srv, "cw", "ack"), params={"token": r.headers["X-Queue-Token"]})
            assert ack.status_code == 204
            with lock:
                seen.append(r.text)

    ts = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(5)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(seen, key=int) == [str(i) for i in range(150)]


def test_redelivery_after_the_timeout(http: requests.Session, srv: Server) -> None:
    assert http.put(q(srv, "rd", "timeout"), params={"timeout": "200ms"}).status_code == 204
    assert http.put(q(srv, "rd", "timeout")).status_code == 400
    put(http, srv, "rd", "job")
    first = get(http, srv, "rd", worker="slow")
    assert first.status_code == 200
    assert get(http, srv, "rd", worker="fast").status_code == 204
    again = None
    deadline = time.time() + 5
    while time.time() < deadline:
        time.sleep(0.05)
        r = get(http, srv, "rd", worker="fast")
        if r.status_code == 200:
            again = r
            break
    assert again is not None, "not redelivered"
    assert again.text == "job"
    assert again.headers["X-Queue-Token"] == first.headers["X-Queue-Token"]
    assert again.headers["X-Queue-Deliveries"] == "2"
    tok = again.headers["X-Queue-Token"]
    assert http.post(q(srv, "rd", "ack"), params={"token": tok}).status_code == 204


def test_long_poll_get(srv: Server) -> None:
    out = {}

    def poll() -> None:
        t0 = time.time()
        r = requests.get(q(srv, "lp"), params={"worker": "w", "wait": "5s"})
        out["r"], out["t"] = r, time.time() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.3)
    assert t.is_alive()
    assert put(requests, srv, "lp", "late", priority=1).status_code == 201
    t.join(5)
    assert out["r"].status_code == 200 and out["r"].text == "late"
    assert 0.25 <= out["t"] < 4
    # Nothing comes: 204 at the deadline.
    t0 = time.time()
    r = requests.get(q(srv, "lp"), params={"worker": "w", "wait": "300ms"})
    assert r.status_code == 204
    assert 0.25 <= time.time() - t0 < 3
    # A message already there answers at once.
    put(requests, srv, "lp", "now")
    r = requests.get(q(srv, "lp"), params={"worker": "w", "wait": "10s"}, timeout=3)
    assert r.text == "now"


def test_publish_window(http: requests.Session, srv: Server) -> None:
    for i in range(1, 5):
        r = http.post(q(srv, "news", "pub"), data=f"m{i}", params={"window": 3})
        assert r.status_code == 200 and r.json() == {"idx": i}
    r = http.get(q(srv, "news", "sub"), params={"idx": 1})
    assert r.json() == [{"idx": 2, "payload": "m2"}, {"idx": 3, "payload": "m3"},
                        {"idx": 4, "payload": "m4"}]
    assert http.get(q(srv, "news", "sub"), params={"idx": 4, "count": 1}).json() == [
        {"idx": 4, "payload": "m4"}]
    assert http.get(q(srv, "news", "sub"), params={"idx": 5}).json() == []
    http.post(q(srv, "news", "pub"), data=b"\xff")
    assert http.get(q(srv, "news", "sub"), params={"idx": 5}).json() == [
        {"idx": 5, "payload": "/w==", "encoding": "base64"}]
    assert http.get(q(srv, "news", "sub"), params={"idx": "x"}).status_code == 400


def test_queue_requests_have_their_own_metrics_route(http: requests.Session, srv: Server) -> None:
    from test_http_metrics import scrape, value

    def count(code: str) -> float:
        fams, _ = scrape(srv.http_url, session=http)
        return value(fams, "larder_http_requests_total", route="queue", code=code) or 0

    before = {code: count(code) for code in ("201", "200", "204")}
    put(http, srv, "m", "x")
    get(http, srv, "m", worker="w", ack="auto")
    get(http, srv, "m", worker="w")
    assert count("201") == before["201"] + 1
    assert count("200") == before["200"] + 1
    assert count("204") == before["204"] + 1


def test_a_long_poll_woken_again_and_again_passes_the_rate_limit_once(
    http: requests.Session, srv: Server
) -> None:
    r = srv.client(protocol=2)
    # A message another worker holds: the level and its group exist, and the poll gets
    # nothing.
    r.execute_command("QPUT", "rl", "held")
    assert r.execute_command("QGET", "rl", "other") is not None
    r.config_set("http-rate-limit", "3")
    try:
        out = {}

        def poll() -> None:
            out["r"] = requests.get(q(srv, "rl"), params={"worker": "w", "wait": "1500ms"})

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.2)
        r.config_resetstat()
        # Writes to the level wake the poll; each run finds nothing and waits on.
        for i in range(8):
            r.execute_command("XGROUP", "CREATECONSUMER", "queue:{rl}:p0", "workers", f"c{i}")
            time.sleep(0.05)
        t.join(5)
        assert not t.is_alive()
        assert out["r"].status_code == 204, out["r"].text
        # Each run of the poll asks XINFO GROUPS once per level that exists before it waits
        # (levels never put to are skipped): the calls over the levels count the runs.
        levels = sum(r.exists(f"queue:{{rl}}:p{p}") for p in range(3))
        assert levels == 1
        runs = r.info("commandstats")["cmdstat_xinfo|groups"]["calls"] // levels
        assert runs >= 8, runs
    finally:
        r.config_set("http-rate-limit", "0")


def test_publish_window_over_sse(http: requests.Session, srv: Server) -> None:
    from test_http_watch import Stream

    for i in range(1, 4):
        assert http.post(q(srv, "sse", "pub"), data=f"m{i}").json() == {"idx": i}
    sse = {"Accept": "text/event-stream"}
    s = Stream(q(srv, "sse", "sub") + "?idx=2", sse)
    try:
        assert s.response.status_code == 200
        assert s.response.headers["Content-Type"].startswith("text/event-stream")
        got = [(e["id"], e["event"], e["data"]) for e in s.take(2)]
        assert got == [
            ("2", "message", {"idx": 2, "payload": "m2"}),
            ("3", "message", {"idx": 3, "payload": "m3"}),
        ]
        # Then live, from either door; a payload that is not UTF-8 comes as base64.
        http.post(q(srv, "sse", "pub"), data="m4")
        srv.client(protocol=2).execute_command("QPUB", "sse", b"\xff\x00")
        got = [e["data"] for e in s.take(2)]
        assert got == [
            {"idx": 4, "payload": "m4"},
            {"idx": 5, "payload": "/wA=", "encoding": "base64"},
        ]
        assert s.quiet(0.2) == []
    finally:
        s.close()
    # A client that reconnects names the last event it got.
    s = Stream(q(srv, "sse", "sub"), {**sse, "Last-Event-ID": "4"})
    try:
        assert s.next()["data"]["idx"] == 5
        assert s.quiet(0.2) == []
    finally:
        s.close()
    r = http.get(q(srv, "sse", "sub"), headers={**sse, "Last-Event-ID": "x"})
    assert r.status_code == 400
    # Without the header, the same path answers JSON.
    assert [m["idx"] for m in http.get(q(srv, "sse", "sub"), params={"idx": 4}).json()] == [4, 5]


def test_publish_window_over_sse_while_publishing_gets_each_message_once(srv: Server) -> None:
    from test_http_watch import Stream

    n = 300
    r = srv.client(protocol=2)

    def publish() -> None:
        for i in range(n):
            r.execute_command("QPUB", "race", f"m{i + 1}")

    t = threading.Thread(target=publish)
    t.start()
    time.sleep(0.02)
    s = Stream(q(srv, "race", "sub") + "?idx=1", {"Accept": "text/event-stream"})
    try:
        t.join(10)
        got = [e["data"]["idx"] for e in s.take(n)]
        assert got == list(range(1, n + 1))
        assert s.quiet(0.2) == []
    finally:
        s.close()
