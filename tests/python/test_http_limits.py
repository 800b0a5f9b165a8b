"""The HTTP door's security and limits over real sockets: bearer tokens (header and `_token`),
`CONFIG SET requirepass` on keep-alive connections, the CORS allowlist and preflights, the
per-address rate limit, bodies and heads over the limits, and clients that misbehave (garbage,
half-open, byte-at-a-time, many connections) while the server keeps serving everyone else.

The door is larder's own: the module is `larder_only`.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import socket
import threading
import time
from typing import Iterator

import pytest
import requests

from conftest import Server, ServerFactory, start_with_http

pytestmark = pytest.mark.larder_only

HOST = "127.0.0.1"




@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("http-limits"))
    srv = start_with_http(factory, "--threads", "2")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def srv(door: Server) -> Iterator[Server]:
    """The module's server with the door's settings back at their defaults after the test."""
    yield door
    assert door.alive(), f"server died during the test\n{door.log_tail()}"
    with door.admin() as conn:
        if door.password:
            conn.call("AUTH", door.password)
        for name, value in (("http-cors-origins", ""), ("http-rate-limit", "0"),
                            ("http-max-body", "8mb"), ("requirepass", "")):
            assert conn.call("CONFIG", "SET", name, value) == "OK"
    door.password = None
    door.close_clients()


def url(srv: Server, path: str) -> str:
    return f"http://{HOST}:{srv.http_port}{path}"


def session() -> requests.Session:
    s = requests.Session()
    s.trust_env = False  # no proxies from the environment
    return s


def config_set(srv: Server, name: str, value: str) -> None:
    with srv.admin() as conn:
        if srv.password:
            conn.call("AUTH", srv.password)
        assert conn.call("CONFIG", "SET", name, value) == "OK"
    if name == "requirepass":
        srv.password = value or None


def raw_http(srv: Server, timeout: float = 5.0) -> socket.socket:
    s = socket.create_connection((HOST, srv.http_port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until_close(s: socket.socket, limit: int = 1 << 20) -> bytes:
    """Everything the server sends until it closes (a reset after the answer counts as
    closing, but only once something was read)."""
    data = b""
    while len(data) < limit:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            assert data, "reset before any answer"
            break
        if not chunk:
            break
        data += chunk
    return data


def status_of(raw: bytes) -> int:
    line = raw.split(b"\r\n", 1)[0]
    assert line.startswith(b"HTTP/1.1 "), raw[:200]
    return int(line.split()[1])


def still_serving(srv: Server) -> None:
    """The door answers a normal request promptly."""
    t0 = time.monotonic()
    r = session().get(url(srv, "/healthz"), timeout=5)
    assert r.status_code in (200, 501), r.text  # 501: /healthz is another part of the door
    assert time.monotonic() - t0 < 2.0


# ---------------------------------------------------------------------------------------------
# Authentication
# ---------------------------------------------------------------------------------------------


def test_token_in_header_or_query(srv: Server) -> None:
    s = session()
    assert s.get(url(srv, "/v1/kv/nokey")).status_code == 404
    config_set(srv, "requirepass", "s3cret pw")
    r = s.get(url(srv, "/v1/kv/nokey"))
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert r.json()["error"].startswith("NOAUTH")
    for token in ("s3cret pw", "default:s3cret pw"):
        r = s.get(url(srv, "/v1/kv/nokey"), headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 404, token
        r = s.get(url(srv, "/v1/kv/nokey"), params={"_token": token})
        assert r.status_code == 404, token
    for token in ("wrong", "alice:s3cret pw", "default:wrong"):
        r = s.get(url(srv, "/v1/kv/nokey"), headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401
        assert r.json()["error"].startswith("WRONGPASS"), r.text
        assert s.get(url(srv, "/v1/kv/nokey"), params={"_token": token}).status_code == 401
    # A token written into the key API works end to end.
    auth = {"Authorization": "Bearer s3cret pw"}
    assert s.put(url(srv, "/v1/kv/k"), data=b"v", headers=auth).status_code in (200, 201, 204)
    assert s.get(url(srv, "/v1/kv/k"), params={"_token": "s3cret pw"}).content == b"v"


def test_requirepass_applies_to_open_keep_alive_connections(srv: Server) -> None:
    conn = http.client.HTTPConnection(HOST, srv.http_port, timeout=5)
    config_set(srv, "requirepass", "one")

    def get(token: str) -> int:
        conn.request("GET", "/v1/kv/nokey", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        resp.read()
        assert not resp.will_close
        return resp.status

    assert get("one") == 404
    sock = conn.sock
    config_set(srv, "requirepass", "two")
    assert get("one") == 401
    assert get("two") == 404
    assert conn.sock is sock, "the same keep-alive connection throughout"
    config_set(srv, "requirepass", "")
    conn.request("GET", "/v1/kv/nokey")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 404
    conn.close()


# ---------------------------------------------------------------------------------------------
# CORS
# ---------------------------------------------------------------------------------------------


def preflight(srv: Server, origin: str) -> requests.Response:
    return session().options(url(srv, "/v1/kv/k"), headers={
        "Origin": origin,
        "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "authorization, if-match",
    })


def test_cors_allowlist(srv: Server) -> None:
    config_set(srv, "http-cors-origins", "https://app.example http://localhost:3000")
    config_set(srv, "requirepass", "pw")
    r = preflight(srv, "https://app.example")  # no token needed
    assert r.status_code == 204
    assert r.content == b""
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "Origin" in r.headers["Vary"]
    methods = {m.strip() for m in r.headers["Access-Control-Allow-Methods"].split(",")}
    assert {"GET", "PUT", "POST", "DELETE"} <= methods
    allowed = {h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "content-type", "if-match", "if-none-match", "upstash-encoding",
            "last-event-id"} <= allowed
    assert int(r.headers["Access-Control-Max-Age"]) > 0

    r = preflight(srv, "https://evil.example")
    assert r.status_code == 403
    assert "Access-Control-Allow-Origin" not in r.headers

    # Actual requests: an allowed origin is echoed (errors included), with ETag readable.
    s = session()
    auth = {"Authorization": "Bearer pw"}
    r = s.put(url(srv, "/v1/kv/k"), data=b"v",
              headers={**auth, "Origin": "http://localhost:3000"})
    assert r.status_code < 300
    assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "etag" in r.headers["Access-Control-Expose-Headers"].lower()
    r = s.get(url(srv, "/v1/kv/k"), headers={"Origin": "https://app.example"})
    assert r.status_code == 401
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    # Another origin's page cannot write, even with a request that needs no preflight.
    r = s.post(url(srv, "/"), data='["SET","k","evil"]',
               headers={**auth, "Origin": "https://evil.example", "Content-Type": "text/plain"})
    assert r.status_code == 403
    assert s.get(url(srv, "/v1/kv/k"), headers=auth).content == b"v"

    config_set(srv, "http-cors-origins", "*")
    assert preflight(srv, "https://evil.example").status_code == 204
    config_set(srv, "http-cors-origins", "")
    assert preflight(srv, "https://app.example").status_code == 403


# ---------------------------------------------------------------------------------------------
# Rate limit
# ---------------------------------------------------------------------------------------------


def test_rate_limit_per_address(srv: Server) -> None:
    config_set(srv, "http-rate-limit", "5")
    s = session()
    codes = []
    for _ in range(12):
        r = s.get(url(srv, "/v1/kv/nokey"))
        codes.append(r.status_code)
        if r.status_code == 429:
            assert int(r.headers["Retry-After"]) >= 1
            assert "http-rate-limit" in r.json()["error"]
    # The burst is one second's worth: at least five pass, and the rest of twelve (sent well
    # within two seconds) cannot all pass.
    assert codes[:5] == [404] * 5, codes
    assert codes.count(429) >= 3, codes
    # Another connection from the same address shares the budget.
    assert session().get(url(srv, "/v1/kv/nokey")).status_code == 429
    time.sleep(1.1)
    assert s.get(url(srv, "/v1/kv/nokey")).status_code == 404
    config_set(srv, "http-rate-limit", "0")
    assert all(s.get(url(srv, "/v1/kv/nokey")).status_code == 404 for _ in range(20))


# ---------------------------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------------------------


def test_body_over_the_limit_is_413_and_the_client_sees_it(srv: Server) -> None:
    config_set(srv, "http-max-body", "4096")
    s = session()
    for size in (5000, 3 << 20):
        # requests sends the whole body before it reads: it sees the 413 only if the server
        # reads the body instead of resetting the connection.
        r = s.put(url(srv, "/v1/kv/big"), data=os.urandom(size))
        assert r.status_code == 413, size
        assert r.headers["Connection"] == "close"
        assert "error" in r.json()
    assert s.put(url(srv, "/v1/kv/big"), data=b"x" * 4096).status_code < 300
    # Chunked, too.
    r = s.put(url(srv, "/v1/kv/big"), data=iter([b"a" * 3000, b"b" * 3000]))
    assert r.status_code == 413
    assert s.get(url(srv, "/v1/kv/big")).content == b"x" * 4096
    # Over a raw socket: the whole body goes out without a reset, then the 413 and a clean
    # end of stream (closing with the body unread would reset the connection instead).
    with raw_http(srv, timeout=10) as c:
        c.sendall(b"PUT /v1/kv/big HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (3 << 20))
        c.sendall(b"z" * (3 << 20))
        data = b""
        while chunk := c.recv(65536):
            data += chunk
        assert status_of(data) == 413 and data.endswith(b"}"), data


def test_huge_content_length_is_413_at_once(srv: Server) -> None:
    for length in ("9" * 30, str(1 << 40), str((8 << 20) + 1)):
        with raw_http(srv) as s:
            s.sendall(f"PUT /v1/kv/k HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n"
                      .encode())
            s.settimeout(5)
            head = s.recv(65536)
            assert status_of(head) == 413, head
            assert b"Connection: close" in head
    still_serving(srv)


def test_oversized_heads_are_431(srv: Server) -> None:
    big = "GET /v1/kv/k HTTP/1.1\r\nX-Big: " + "a" * 20000 + "\r\n\r\n"
    many = "GET /v1/kv/k HTTP/1.1\r\n" + "".join(f"X-{i}: v\r\n" for i in range(70)) + "\r\n"
    long_target = "GET /v1/kv/" + "k" * 20000 + " HTTP/1.1\r\n\r\n"
    for raw in (big, many, long_target):
        with raw_http(srv) as s:
            s.sendall(raw.encode())
            answer = read_until_close(s)
            assert status_of(answer) == 431, answer[:200]
    # An endless head without a line end is cut off too.
    with raw_http(srv) as s:
        s.sendall(b"GET /" + b"a" * 17000)
        assert status_of(read_until_close(s)) == 431
    still_serving(srv)


# ---------------------------------------------------------------------------------------------
# Misbehaving clients
# ---------------------------------------------------------------------------------------------


def test_garbage_is_refused_and_closed(srv: Server) -> None:
    rng = random.Random(12)
    samples = [b"\x00\x01\x02\xff" * 10 + b"\r\n\r\n", b"GET\r\n\r\n", b"*1\r\n$4\r\nPING\r\n",
               b"GET / HTTP/9.9\r\n\r\n", b"GET / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
               b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))) + b"\r\n\r\n"
                for _ in range(30)]
    for raw in samples:
        with raw_http(srv) as s:
            s.sendall(raw)
            answer = read_until_close(s)
            status = status_of(answer)
            assert 400 <= status < 600 and status != 500, (raw, answer)
    still_serving(srv)


def test_half_open_and_silent_clients_do_not_block_others(srv: Server) -> None:
    silent = raw_http(srv)
    half = raw_http(srv)
    half.sendall(b"GET /v1/kv/k HTTP/1.1\r\nHo")
    half.shutdown(socket.SHUT_WR)
    still_serving(srv)
    # The half-open client's connection ends: no request can complete any more.
    assert read_until_close(half) == b""
    # A request whose client half-closes after sending it is still answered.
    with raw_http(srv) as s:
        s.sendall(b"GET /v1/kv/nokey HTTP/1.1\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        assert status_of(read_until_close(s)) == 404
    still_serving(srv)
    silent.close()
    half.close()


def test_slow_client_byte_at_a_time(srv: Server) -> None:
    request = b"GET /v1/kv/nokey HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nAccept: */*\r\n\r\n"
    answers: list[bytes] = []

    def slow() -> None:
        with raw_http(srv, timeout=30) as s:
            for b in request:
                s.sendall(bytes([b]))
                time.sleep(0.02)
            answers.append(s.recv(65536))

    t = threading.Thread(target=slow)
    t.start()
    s = session()
    served = 0
    while t.is_alive():
        t0 = time.monotonic()
        assert s.get(url(srv, "/v1/kv/nokey"), timeout=5).status_code == 404
        assert time.monotonic() - t0 < 1.0
        served += 1
    t.join()
    assert served > 10
    assert answers and status_of(answers[0]) == 404


def test_many_connections(srv: Server) -> None:
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(800, soft - 100)
    socks = []
    try:
        for i in range(n):
            c = raw_http(srv)
            if i % 3 == 1:
                c.sendall(b"PUT /v1/kv/x HTTP/1.1\r\nContent-Length: 100\r\n\r\npartial")
            elif i % 3 == 2:
                c.sendall(b"GET /v1/kv/many HTTP/1.1\r\n")
            socks.append(c)
        still_serving(srv)
        # Every open connection can still finish its request.
        for i, c in enumerate(socks[:60]):
            if i % 3 == 1:
                c.sendall(b"y" * 93)
            elif i % 3 == 2:
                c.sendall(b"\r\n")
            else:
                c.sendall(b"GET /v1/kv/many HTTP/1.1\r\n\r\n")
            answer = c.recv(65536)
            assert status_of(answer) in (200, 204, 404), answer
    finally:
        for c in socks:
            c.close()
    still_serving(srv)


def test_pipelined_requests_and_mixed_errors_on_one_connection(srv: Server) -> None:
    with raw_http(srv) as s:
        s.sendall(b"PUT /v1/kv/p HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
                  b"GET /v1/kv/p HTTP/1.1\r\n\r\n"
                  b"GET /v1/kv/p%zz HTTP/1.1\r\n\r\n"
                  b"BROKEN\r\n\r\n")
        answer = read_until_close(s)
    statuses = [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)]
    assert statuses[0] < 300 and statuses[1:] == [200, 400, 400], answer
    assert answer.count(b"Connection: close") == 1
    still_serving(srv)
    body = json.loads(answer.rsplit(b"\r\n\r\n", 1)[1])
    assert "error" in body
