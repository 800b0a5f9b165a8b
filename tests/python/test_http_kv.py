"""The HTTP door's key API: `GET|HEAD|PUT|DELETE /v1/kv/{key}`, over real sockets.

Clients: requests for ordinary calls, raw sockets where the test is about the wire (keep-alive,
pipelining, chunked bodies, `Expect: 100-continue`, HTTP/1.0, malformed requests), redis-py and
a raw memcached connection for the other doors on the same keyspace.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from typing import Iterator

import pytest
import redis
import requests

from conftest import Server, ServerFactory, start_with_http

pytestmark = pytest.mark.larder_only

HOST = "127.0.0.1"


@pytest.fixture(scope="module")
def hs(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("http"))
    srv = start_with_http(factory, "--threads", "2")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def srv(hs: Server) -> Iterator[Server]:
    with hs.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
    yield hs
    hs.close_clients()
    assert hs.alive(), f"server died during the test\n{hs.log_tail()}"


@pytest.fixture
def http(srv: Server) -> Iterator[requests.Session]:
    s = requests.Session()
    yield s
    s.close()


def kv(srv: Server, key: bytes | str) -> str:
    if isinstance(key, str):
        key = key.encode()
    return f"{srv.http_url}/v1/kv/{urllib.parse.quote(key, safe='')}"


# ---------------------------------------------------------------------------------------------
# Raw HTTP over a socket
# ---------------------------------------------------------------------------------------------


class Raw:
    """One TCP connection speaking HTTP/1.1 by hand; responses are read by Content-Length."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def response(self, head_request: bool = False) -> tuple[int, dict[str, str], bytes]:
        """The next response: status, headers (lower-case names), body."""
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise ConnectionError(f"closed before a response head: {self.buf!r}")
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        length = 0 if head_request or status in (100, 204, 304) else int(
            headers.get("content-length", "0"))
        while len(self.buf) < length:
            if not self._fill():
                raise ConnectionError("closed inside a body")
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, headers, body

    def closed_by_peer(self) -> bool:
        """Whether the server closes the connection (EOF) with nothing more sent."""
        try:
            return self.buf == b"" and not self._fill()
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def req(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
        version: str = "1.1") -> bytes:
    h = {"Host": "x", **(headers or {})}
    if body or method in ("PUT", "POST"):
        h.setdefault("Content-Length", str(len(body)))
    lines = [f"{method} {path} HTTP/{version}"] + [f"{k}: {v}" for k, v in h.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# ---------------------------------------------------------------------------------------------
# GET / HEAD / PUT / DELETE
# ---------------------------------------------------------------------------------------------


def test_put_get_head_delete(srv: Server, http: requests.Session) -> None:
    url = kv(srv, "greeting")
    r = http.put(url, data=b"hello")
    assert r.status_code == 204 and r.content == b""
    tag = r.headers["ETag"]
    assert tag.startswith('"') and tag.endswith('"') and int(tag.strip('"')) > 0
    assert "X-Larder-TTL-Ms" not in r.headers

    r = http.get(url)
    assert r.status_code == 200
    assert r.content == b"hello"
    assert r.headers["ETag"] == tag
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers["Content-Length"] == "5"

    r = http.head(url)
    assert r.status_code == 200 and r.content == b""
    assert r.headers["ETag"] == tag and r.headers["Content-Length"] == "5"

    r = http.put(url, data=b"again")
    assert r.status_code == 204
    assert int(r.headers["ETag"].strip('"')) > int(tag.strip('"'))

    r = http.delete(url)
    assert r.status_code == 204 and "ETag" not in r.headers
    r = http.get(url)
    assert r.status_code == 404
    assert r.headers["Content-Type"] == "application/json"
    assert r.json() == {"error": "no such key"}
    assert http.head(url).status_code == 404
    assert http.delete(url).status_code == 404


def test_bad_paths_and_methods(srv: Server, http: requests.Session) -> None:
    assert http.get(f"{srv.http_url}/v1/kv/").status_code == 400  # empty key
    assert http.get(f"{srv.http_url}/v1/kv/a/b").status_code == 404
    c = Raw(srv.http_port)  # requests would re-encode a malformed escape
    try:
        c.send(req("GET", "/v1/kv/%zz") + req("GET", "/v1/kv/a%4"))
        assert c.response()[0] == 400 and c.response()[0] == 400
    finally:
        c.close()
    assert http.get(f"{srv.http_url}/v1/nothing").status_code == 404
    r = http.post(kv(srv, "k"), data=b"x")
    assert r.status_code == 405
    assert set(r.headers["Allow"].replace(" ", "").split(",")) == {"GET", "HEAD", "PUT", "DELETE"}


@pytest.mark.parametrize("key", [
    b"\x00", b"\xff", b"a/b", b"a%2Fb", b"sp ace", b"q?x=1#f", b"+plus+",
    "ключ🔑".encode(), bytes(range(256)),
])
def test_binary_keys(srv: Server, http: requests.Session, key: bytes) -> None:
    value = bytes(range(256)) * 3 + key
    assert http.put(kv(srv, key), data=value).status_code == 204
    r = http.get(kv(srv, key))
    assert r.status_code == 200 and r.content == value
    # The very same key on the RESP door.
    rc = srv.client(protocol=2)
    assert rc.get(key) == value
    assert rc.keys() == [key]
    assert http.delete(kv(srv, key)).status_code == 204
    assert rc.exists(key) == 0


def test_a_percent_encoded_slash_is_part_of_the_key(srv: Server, http: requests.Session) -> None:
    assert http.put(f"{srv.http_url}/v1/kv/a%2Fb", data=b"1").status_code == 204
    assert srv.client(protocol=2).get(b"a/b") == b"1"
    # A plain slash separates segments: not a key.
    assert http.get(f"{srv.http_url}/v1/kv/a/b").status_code == 404


def test_empty_and_large_values(srv: Server, http: requests.Session) -> None:
    assert http.put(kv(srv, "empty"), data=b"").status_code == 204
    r = http.get(kv(srv, "empty"))
    assert r.status_code == 200 and r.content == b"" and r.headers["Content-Length"] == "0"
    big = bytes(range(256)) * 4096  # 1 MiB
    assert http.put(kv(srv, "big"), data=big).status_code == 204
    assert http.get(kv(srv, "big")).content == big
    assert srv.client(protocol=2).strlen("big") == len(big)


def test_etag_is_the_memcached_cas(srv: Server, http: requests.Session) -> None:
    r = http.put(kv(srv, "shared"), data=b"v1")
    tag = r.headers["ETag"].strip('"')
    with socket.create_connection((HOST, srv.mc_port), timeout=5) as mc:
        mc.sendall(b"gets shared\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += mc.recv(4096)
        # VALUE shared <flags> <bytes> <cas>
        line = data.split(b"\r\n")[0].split()
        assert line[:2] == [b"VALUE", b"shared"]
        assert line[4].decode() == tag
        # A memcached write moves the version; HTTP sees its CAS.
        mc.sendall(b"set shared 0 0 2\r\nv2\r\n")
        assert mc.recv(100) == b"STORED\r\n"
        mc.sendall(b"gets shared\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += mc.recv(4096)
        cas = data.split(b"\r\n")[0].split()[4].decode()
    r = http.get(kv(srv, "shared"))
    assert r.content == b"v2"
    assert r.headers["ETag"] == f'"{cas}"' and cas != tag


# ---------------------------------------------------------------------------------------------
# TTL
# ---------------------------------------------------------------------------------------------


def test_ttl_on_put_and_in_headers(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    r = http.put(kv(srv, "t") + "?ttl=30s", data=b"x")
    assert r.status_code == 204
    assert 28_000 < rc.pttl("t") <= 30_000
    r = http.get(kv(srv, "t"))
    assert 28_000 < int(r.headers["X-Larder-TTL-Ms"]) <= 30_000
    assert 28_000 < int(http.head(kv(srv, "t")).headers["X-Larder-TTL-Ms"]) <= 30_000

    http.put(kv(srv, "t") + "?ttl=1500ms", data=b"x")
    assert 1_000 < rc.pttl("t") <= 1_500
    http.put(kv(srv, "t") + "?ttl=2m", data=b"x")
    assert 118_000 < rc.pttl("t") <= 120_000
    # A plain PUT is a SET: the TTL goes.
    http.put(kv(srv, "t"), data=b"x")
    assert rc.pttl("t") == -1
    assert "X-Larder-TTL-Ms" not in http.get(kv(srv, "t")).headers
    # A TTL set on the RESP door shows over HTTP.
    rc.pexpire("t", 5000)
    assert 4_000 < int(http.get(kv(srv, "t")).headers["X-Larder-TTL-Ms"]) <= 5_000

    for bad in ["abc", "-1s", "1x", "s"]:
        assert http.put(kv(srv, "t") + f"?ttl={bad}", data=b"y").status_code == 400
    assert rc.get("t") == b"x"


def test_a_key_expires(srv: Server, http: requests.Session) -> None:
    assert http.put(kv(srv, "brief") + "?ttl=200ms", data=b"x").status_code == 204
    assert http.get(kv(srv, "brief")).status_code == 200
    time.sleep(0.35)
    assert http.get(kv(srv, "brief")).status_code == 404
    assert srv.client(protocol=2).exists("brief") == 0


# ---------------------------------------------------------------------------------------------
# Conditional requests
# ---------------------------------------------------------------------------------------------


def test_if_match(srv: Server, http: requests.Session) -> None:
    url = kv(srv, "doc")
    tag = http.put(url, data=b"one").headers["ETag"]
    r = http.put(url, data=b"two", headers={"If-Match": tag})
    assert r.status_code == 204
    new = r.headers["ETag"]
    assert new != tag
    assert http.get(url).content == b"two"

    # The old version no longer matches: 412 with the current ETag, nothing written.
    r = http.put(url, data=b"three", headers={"If-Match": tag})
    assert r.status_code == 412
    assert r.headers["ETag"] == new
    assert r.json()["version"] == int(new.strip('"'))
    assert http.get(url).content == b"two"

    # A weak tag compares as the strong one.
    assert http.put(url, data=b"w", headers={"If-Match": f"W/{new}"}).status_code == 204

    # `*`: any current value.
    assert http.put(url, data=b"star", headers={"If-Match": "*"}).status_code == 204
    r = http.put(kv(srv, "absent"), data=b"x", headers={"If-Match": "*"})
    assert r.status_code == 412 and "ETag" not in r.headers
    assert srv.client(protocol=2).exists("absent") == 0
    r = http.put(kv(srv, "absent"), data=b"x", headers={"If-Match": '"12345"'})
    assert r.status_code == 412

    # DELETE with If-Match.
    cur = http.get(url).headers["ETag"]
    assert http.delete(url, headers={"If-Match": tag}).status_code == 412
    assert http.delete(url, headers={"If-Match": cur}).status_code == 204
    assert http.get(url).status_code == 404
    assert http.delete(url, headers={"If-Match": cur}).status_code == 412


def test_if_none_match_star_creates_only(srv: Server, http: requests.Session) -> None:
    url = kv(srv, "once")
    r = http.put(url, data=b"first", headers={"If-None-Match": "*"})
    assert r.status_code == 204
    tag = r.headers["ETag"]
    r = http.put(url, data=b"second", headers={"If-None-Match": "*"})
    assert r.status_code == 412 and r.headers["ETag"] == tag
    assert http.get(url).content == b"first"


def test_malformed_conditions(srv: Server, http: requests.Session) -> None:
    url = kv(srv, "c")
    http.put(url, data=b"x")
    assert http.put(url, data=b"y", headers={"If-Match": "*", "If-None-Match": "*"}
                    ).status_code == 400
    assert http.put(url, data=b"y", headers={"If-None-Match": '"1"'}).status_code == 400
    assert http.put(url, data=b"y", headers={"If-Match": '"1", "2"'}).status_code == 400
    assert http.get(url).content == b"x"


def test_get_if_none_match_is_304(srv: Server, http: requests.Session) -> None:
    url = kv(srv, "cached")
    tag = http.put(url, data=b"body").headers["ETag"]
    r = http.get(url, headers={"If-None-Match": tag})
    assert r.status_code == 304 and r.content == b""
    assert r.headers["ETag"] == tag
    assert "Content-Length" not in r.headers
    r = http.get(url, headers={"If-None-Match": f'"1", {tag}'})
    assert r.status_code == 304
    assert http.get(url, headers={"If-None-Match": "*"}).status_code == 304
    r = http.get(url, headers={"If-None-Match": '"1"'})
    assert r.status_code == 200 and r.content == b"body"
    http.put(url, data=b"changed")
    r = http.get(url, headers={"If-None-Match": tag})
    assert r.status_code == 200 and r.content == b"changed"


def test_another_type_is_409(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    rc.rpush("list", "a")
    r = http.get(kv(srv, "list"))
    assert r.status_code == 409
    assert r.json()["error"] == "WRONGTYPE Operation against a key holding the wrong kind of value"
    assert r.json()["type"] == "list"
    assert http.head(kv(srv, "list")).status_code == 409
    assert rc.lrange("list", 0, -1) == [b"a"]
    # PUT is SET: it replaces a value of any type.
    assert http.put(kv(srv, "list"), data=b"now a string").status_code == 204
    assert rc.type("list") == b"string"


def test_concurrent_if_match_writers(srv: Server) -> None:
    """Writers race read-then-conditional-write: exactly one wins per version."""
    url = kv(srv, "counter")
    requests.put(url, data=b"0")
    wins: list[tuple[str, str, bytes]] = []  # (If-Match, new ETag, body)
    lock = threading.Lock()
    errors: list[str] = []
    conflicts = [0]

    def writer(n: int) -> None:
        s = requests.Session()
        try:
            for i in range(40):
                g = s.get(url)
                tag = g.headers["ETag"]
                body = f"{n}:{i}".encode()
                r = s.put(url, data=body, headers={"If-Match": tag})
                if r.status_code == 204:
                    with lock:
                        wins.append((tag, r.headers["ETag"], body))
                elif r.status_code == 412:
                    if r.headers.get("ETag") == tag:
                        errors.append(f"412 carried the tag that was asked for: {tag}")
                    with lock:
                        conflicts[0] += 1
                else:
                    errors.append(f"status {r.status_code}")
        finally:
            s.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    assert conflicts[0] > 0, "no writer ever lost a race: the test did not test anything"
    matched = [w[0] for w in wins]
    assert len(matched) == len(set(matched)), "two writes won against the same version"
    # The wins form one chain of versions: each matched the version the previous one made.
    chain = sorted(wins, key=lambda w: int(w[1].strip('"')))
    first = chain[0][0]
    for prev, cur in zip(chain, chain[1:]):
        assert cur[0] == prev[1]
    assert int(first.strip('"')) < int(chain[0][1].strip('"'))
    final = requests.get(url)
    assert final.content == chain[-1][2]
    assert final.headers["ETag"] == chain[-1][1]


# ---------------------------------------------------------------------------------------------
# The wire: keep-alive, pipelining, framing, versions, malformed requests
# ---------------------------------------------------------------------------------------------


def test_keep_alive_many_requests_on_one_connection(srv: Server) -> None:
    c = Raw(srv.http_port)
    try:
        for i in range(200):
            c.send(req("PUT", f"/v1/kv/k{i % 10}", str(i).encode()))
            status, headers, _ = c.response()
            assert status == 204 and "connection" not in headers
            c.send(req("GET", f"/v1/kv/k{i % 10}"))
            status, _, body = c.response()
            assert (status, body) == (200, str(i).encode())
    finally:
        c.close()


def test_pipelined_requests_in_one_send(srv: Server) -> None:
    c = Raw(srv.http_port)
    try:
        batch = b"".join(req("PUT", f"/v1/kv/p{i}", f"v{i}".encode()) for i in range(50))
        batch += b"".join(req("GET", f"/v1/kv/p{i}") for i in range(50))
        batch += req("HEAD", "/v1/kv/p7") + req("DELETE", "/v1/kv/p7") + req("GET", "/v1/kv/p7")
        c.send(batch)
        for i in range(50):
            assert c.response()[0] == 204
        for i in range(50):
            status, _, body = c.response()
            assert (status, body) == (200, f"v{i}".encode())
        status, headers, body = c.response(head_request=True)
        assert status == 200 and headers["content-length"] == "2"
        assert c.response()[0] == 204
        assert c.response()[0] == 404
    finally:
        c.close()


def test_chunked_put(srv: Server, http: requests.Session) -> None:
    c = Raw(srv.http_port)
    try:
        head = (b"PUT /v1/kv/chunky HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        c.send(head + b"5\r\nhello\r\n")
        time.sleep(0.05)
        c.send(b"1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\n")
        assert c.response()[0] == 204
    finally:
        c.close()
    assert http.get(kv(srv, "chunky")).content == b"hello world!"

    # requests sends a generator as a chunked body.
    def parts():
        for i in range(100):
            yield bytes([i]) * 100

    r = http.put(kv(srv, "gen"), data=parts())
    assert r.status_code == 204
    assert http.get(kv(srv, "gen")).content == b"".join(bytes([i]) * 100 for i in range(100))


def test_expect_100_continue(srv: Server, http: requests.Session) -> None:
    c = Raw(srv.http_port)
    try:
        c.send(b"PUT /v1/kv/exp HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
               b"Expect: 100-continue\r\n\r\n")
        status, _, _ = c.response()
        assert status == 100
        c.send(b"body")
        assert c.response()[0] == 204
    finally:
        c.close()
    assert http.get(kv(srv, "exp")).content == b"body"


def test_http_1_0_closes_after_the_response(srv: Server, http: requests.Session) -> None:
    http.put(kv(srv, "old"), data=b"v")
    c = Raw(srv.http_port)
    try:
        c.send(req("GET", "/v1/kv/old", version="1.0"))
        status, headers, body = c.response()
        assert (status, body) == (200, b"v")
        assert headers.get("connection") == "close"
        assert c.closed_by_peer()
    finally:
        c.close()
    # HTTP/1.0 with keep-alive asked for stays open.
    c = Raw(srv.http_port)
    try:
        for _ in range(3):
            c.send(req("GET", "/v1/kv/old", headers={"Connection": "keep-alive"}, version="1.0"))
            assert c.response()[2] == b"v"
    finally:
        c.close()


def test_connection_close(srv: Server) -> None:
    c = Raw(srv.http_port)
    try:
        c.send(req("PUT", "/v1/kv/bye", b"x", headers={"Connection": "close"})
               + req("GET", "/v1/kv/bye"))
        status, headers, _ = c.response()
        assert status == 204 and headers.get("connection") == "close"
        # The pipelined request after it is not answered.
        assert c.closed_by_peer()
    finally:
        c.close()


@pytest.mark.parametrize("raw_request,status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /v1/kv/k HTTP/1.1\r\nBad Header\r\n\r\n", 400),
    (b"GET /v1/kv/k HTTP/2.0\r\n\r\n", 505),
    (b"GET http://example.com/v1/kv/k HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /v1/kv/k HTTP/1.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n", 431),
    (b"PUT /v1/kv/k HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400),
    (b"PUT /v1/kv/k HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    (b"PUT /v1/kv/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
])
def test_malformed_requests(srv: Server, http: requests.Session, raw_request: bytes,
                            status: int) -> None:
    c = Raw(srv.http_port)
    try:
        c.send(raw_request)
        got, headers, body = c.response()
        assert got == status
        assert headers.get("connection") == "close"
        assert "error" in __import__("json").loads(body)
        assert c.closed_by_peer()
    finally:
        c.close()
    # The server goes on serving.
    assert http.put(kv(srv, "after"), data=b"ok").status_code == 204
    assert http.get(kv(srv, "after")).content == b"ok"


def test_body_too_large_is_413(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    old = rc.config_get("http-max-body")["http-max-body"]
    rc.config_set("http-max-body", "1024")
    try:
        assert http.put(kv(srv, "small"), data=b"x" * 1024).status_code == 204
        r = http.put(kv(srv, "small"), data=b"x" * 1025)
        assert r.status_code == 413
        assert r.headers.get("Connection") == "close"
        # A chunked body that grows past the limit.
        c = Raw(srv.http_port)
        try:
            c.send(b"PUT /v1/kv/small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + b"200\r\n" + b"y" * 512 + b"\r\n" + b"300\r\n" + b"y" * 768 + b"\r\n0\r\n\r\n")
            assert c.response()[0] == 413
        finally:
            c.close()
    finally:
        rc.config_set("http-max-body", old)
    assert http.get(kv(srv, "small")).content == b"x" * 1024


def test_server_survives_garbage_floods(srv: Server, http: requests.Session) -> None:
    import random
    rnd = random.Random(12)
    for _ in range(50):
        c = Raw(srv.http_port, timeout=2)
        try:
            c.send(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300))) + b"\r\n\r\n")
            try:
                c.response()
            except (ConnectionError, socket.timeout, ValueError, IndexError):
                pass
        finally:
            c.close()
    assert http.put(kv(srv, "alive"), data=b"yes").status_code == 204
    assert http.get(kv(srv, "alive")).content == b"yes"


# ---------------------------------------------------------------------------------------------
# The other doors
# ---------------------------------------------------------------------------------------------


def test_values_cross_doors(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=3)
    blob = bytes(range(256))[::-1]
    http.put(kv(srv, "from-http"), data=blob)
    assert rc.get("from-http") == blob
    rc.set(b"from-resp\xff", blob + b"!")
    r = http.get(kv(srv, b"from-resp\xff"))
    assert r.content == blob + b"!"
    # Appending over RESP moves the version HTTP reports.
    tag = r.headers["ETag"]
    rc.append(b"from-resp\xff", b"?")
    r = http.get(kv(srv, b"from-resp\xff"))
    assert r.content.endswith(b"!?") and r.headers["ETag"] != tag
    # A RESP DEL shows as 404.
    rc.delete("from-http")
    assert http.get(kv(srv, "from-http")).status_code == 404


def test_keyspace_notifications_from_http_writes(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    rc.config_set("notify-keyspace-events", "KEA")
    try:
        ps = rc.pubsub()
        ps.psubscribe("__keyspace@0__:*")
        assert ps.get_message(timeout=2)["type"] == "psubscribe"
        http.put(kv(srv, "ev"), data=b"1")
        http.put(kv(srv, "ev") + "?ttl=10s", data=b"2")
        http.delete(kv(srv, "ev"))
        got = []
        deadline = time.time() + 5
        while len(got) < 4 and time.time() < deadline:
            m = ps.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                assert m["channel"] == b"__keyspace@0__:ev"
                got.append(m["data"])
        assert got == [b"set", b"set", b"expire", b"del"]
        ps.close()
    finally:
        rc.config_set("notify-keyspace-events", "")
