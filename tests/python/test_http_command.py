"""The HTTP door's command API, compatible with the Upstash REST protocol.

Driven with real HTTP clients (requests, httpx) and Upstash's own Python SDK
(`upstash_redis`, unchanged), and checked against redis-py reading the same keys over RESP.
The door is larder's own: the module is `larder_only`.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.client import HTTPConnection
from typing import Iterator

import httpx
import pytest
import requests
from upstash_redis import Redis as Upstash
from upstash_redis.errors import UpstashError

from conftest import Server, ServerFactory, start_with_http

pytestmark = pytest.mark.larder_only

PASSWORD = "s3cret"




@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("http-cmd"))
    yield start_with_http(factory, "--threads", "2")
    factory.shutdown_all()


@pytest.fixture
def srv(door: Server) -> Iterator[Server]:
    with door.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
    yield door
    door.close_clients()
    assert door.alive(), f"server died during the test\n{door.log_tail()}"


@pytest.fixture
def http(srv: Server) -> Iterator[requests.Session]:
    """A keep-alive session: every request of a test goes over one connection."""
    with requests.Session() as s:
        yield s


@pytest.fixture
def url(srv: Server) -> str:
    return srv.http_url


@pytest.fixture
def rp(srv: Server):
    """redis-py over RESP on the same server, bytes replies."""
    return srv.client(protocol=2)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---------------------------------------------------------------------------------------------
# POST / with a JSON array
# ---------------------------------------------------------------------------------------------


def test_single_command_json(http, url, rp):
    r = http.post(url + "/", json=["SET", "k", "v", "EX", 100])
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/json"
    assert r.json() == {"result": "OK"}
    assert rp.get(b"k") == b"v"
    assert 0 < rp.ttl(b"k") <= 100
    assert http.post(url, json=["GET", "k"]).json() == {"result": "v"}
    assert http.post(url, json=["GET", "missing"]).json() == {"result": None}
    # Numbers and booleans are sent as their text.
    assert http.post(url, json=["SET", "n", 41]).json() == {"result": "OK"}
    assert http.post(url, json=["INCRBYFLOAT", "n", 1.5]).json() == {"result": "42.5"}
    assert http.post(url, json=["SET", "b", True]).json() == {"result": "OK"}
    assert rp.get(b"b") == b"true"
    # Replies keep their RESP2 shapes: integers, nested arrays, nulls.
    rp.rpush(b"l", b"a", b"b")
    assert http.post(url, json=["LLEN", "l"]).json() == {"result": 2}
    assert http.post(url, json=["MGET", "k", "nope"]).json() == {"result": ["v", None]}
    rp.zadd(b"z", {b"m": 2.5})
    assert http.post(url, json=["ZRANGE", "z", 0, -1, "WITHSCORES"]).json() == {
        "result": ["m", "2.5"]}
    assert http.post(url, json=["SCAN", 0, "MATCH", "z", "COUNT", 1000]).json() == {
        "result": ["0", ["z"]]}
    assert http.post(url, json=["PING"]).json() == {"result": "PONG"}


def test_command_errors_are_400_with_redis_text(http, url, rp):
    rp.set(b"k", b"v")
    r = http.post(url, json=["INCR", "k"])
    assert r.status_code == 400
    assert r.json() == {"error": "ERR value is not an integer or out of range"}
    r = http.post(url, json=["LPUSH", "k", "x"])
    assert r.status_code == 400
    assert r.json()["error"].startswith("WRONGTYPE ")
    r = http.post(url, json=["NOSUCHCMD", "a"])
    assert r.status_code == 400
    assert r.json()["error"].startswith("ERR unknown command 'NOSUCHCMD'")
    r = http.post(url, json=["GET"])
    assert r.status_code == 400
    assert r.json()["error"] == "ERR wrong number of arguments for 'get' command"


@pytest.mark.parametrize("body, message", [
    (b'["SET", "k"', "not valid JSON"),
    (b"", "not valid JSON"),
    (b'{"cmd": "GET"}', "must be a JSON array"),
    (b"[]", "is empty"),
    (b'["SET", "k", null]', "argument 3 of the command is null"),
    (b'["SET", "k", {"a": 1}]', "argument 3 of the command is an object"),
    (b'["SET", "k", ["v"]]', "argument 3 of the command is an array"),
    (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
])
def test_malformed_bodies_are_400(http, url, body, message):
    r = http.post(url, data=body)
    assert r.status_code == 400
    assert message in r.json()["error"]
    # The connection goes on serving.
    assert http.post(url, json=["PING"]).json() == {"result": "PONG"}


def test_methods(http, url):
    for path in ("/", "/pipeline", "/multi-exec"):
        r = http.get(url + path)
        assert r.status_code == 405
        assert r.headers["Allow"] == "POST, PUT"
    r = http.put(url + "/", json=["PING"])
    assert r.json() == {"result": "PONG"}
    r = http.delete(url + "/get/k")
    assert r.status_code == 405
    assert r.headers["Allow"] == "GET, POST, PUT"


# ---------------------------------------------------------------------------------------------
# The path form
# ---------------------------------------------------------------------------------------------


def test_path_form(http, url, rp):
    assert http.get(url + "/set/foo/bar").json() == {"result": "OK"}
    assert http.get(url + "/get/foo").json() == {"result": "bar"}
    assert http.get(url + "/SET/foo/bar/EX/100").json() == {"result": "OK"}
    assert 0 < rp.ttl(b"foo") <= 100
    # Each segment percent-decoded is one argument, whatever its bytes.
    assert http.get(url + "/set/a%2Fb%20c/x%2By+z").json() == {"result": "OK"}
    assert rp.get(b"a/b c") == b"x+y+z"
    assert http.get(url + "/set/%00%FFk/v").json() == {"result": "OK"}
    assert rp.get(b"\x00\xffk") == b"v"
    # An empty segment is an empty argument.
    assert http.get(url + "/set/empty/").json() == {"result": "OK"}
    assert rp.get(b"empty") == b""
    # (http.client sends the target as written; requests would re-encode the `%`.)
    conn = HTTPConnection(url.removeprefix("http://"), timeout=5)
    conn.request("GET", "/get/%zz")
    resp = conn.getresponse()
    assert resp.status == 400
    assert "percent-encoding" in json.loads(resp.read())["error"]
    conn.close()
    # HEAD must change nothing, so it runs no command: `HEAD /del/foo` would delete.
    r = http.head(url + "/del/foo")
    assert r.status_code == 405
    assert r.headers["Allow"] == "GET, POST, PUT"
    assert http.get(url + "/get/foo").json() == {"result": "bar"}


def test_post_body_is_the_last_argument(http, url, rp):
    value = bytes(range(256)) + b'{"json": "as is"}'
    r = http.post(url + "/set/blob", data=value)
    assert r.json() == {"result": "OK"}
    assert rp.get(b"blob") == value
    # Query parameters come after the body (Upstash: /set/foo?EX=100).
    r = http.post(url + "/set/timed", params={"EX": "100"}, data=b"v")
    assert r.json() == {"result": "OK"}
    assert rp.get(b"timed") == b"v"
    assert 0 < rp.ttl(b"timed") <= 100
    r = http.post(url + "/set/timed", params={"NX": ""}, data=b"w")
    assert r.json() == {"result": None}
    assert rp.get(b"timed") == b"v"
    # `_token` is the credential, never an argument.
    assert http.get(url + "/get/timed", params={"_token": "x"}).json() == {"result": "v"}


# ---------------------------------------------------------------------------------------------
# Encodings and binary values
# ---------------------------------------------------------------------------------------------


def test_base64_encoding(http, url, rp):
    h = {"Upstash-Encoding": "base64"}
    # "OK" alone stays as it is (the SDK reads it so); every other string is base64.
    assert http.post(url, json=["SET", "k", "OK"], headers=h).json() == {"result": "OK"}
    assert http.post(url, json=["GET", "k"], headers=h).json() == {"result": b64(b"OK")}
    assert http.post(url, json=["PING"], headers=h).json() == {"result": b64(b"PONG")}
    assert http.post(url, json=["TYPE", "k"], headers=h).json() == {"result": b64(b"string")}
    assert http.post(url, json=["STRLEN", "k"], headers=h).json() == {"result": 2}
    assert http.post(url, json=["MGET", "k", "no"], headers=h).json() == {
        "result": [b64(b"OK"), None]}
    r = http.post(url, json=["INCR", "k"], headers=h)
    assert r.status_code == 400
    assert r.json() == {"error": "ERR value is not an integer or out of range"}
    r = http.post(url, json=["PING"], headers={"Upstash-Encoding": "hex"})
    assert r.status_code == 400
    assert "Upstash-Encoding" in r.json()["error"]
    r = http.post(url, json=["PING"], headers={"Upstash-Response-Format": "resp2"})
    assert r.status_code == 400
    assert "Upstash-Response-Format" in r.json()["error"]


def test_binary_values_are_never_mangled(http, url, rp):
    value = b"\xff\xfe\x00bin\x80"
    rp.set(b"bin", value)
    rp.set(b"text", "héllo".encode())
    # Without base64, a reply that is not UTF-8 fails loudly, naming the command.
    r = http.post(url, json=["GET", "bin"])
    assert r.status_code == 406
    err = r.json()["error"]
    assert "GET" in err and "Upstash-Encoding: base64" in err
    assert "\ufffd" not in r.text
    r = http.post(url, json=["MGET", "text", "bin"])
    assert r.status_code == 406
    # UTF-8 text is fine as it is.
    assert http.post(url, json=["GET", "text"]).json() == {"result": "héllo"}
    # With base64, the exact bytes.
    r = http.post(url, json=["GET", "bin"], headers={"Upstash-Encoding": "base64"})
    assert base64.b64decode(r.json()["result"]) == value
    # In a pipeline only the binary reply is an error; the rest are answered.
    r = http.post(url + "/pipeline", json=[["GET", "text"], ["GET", "bin"], ["STRLEN", "bin"]])
    assert r.status_code == 200
    text, binary, strlen = r.json()
    assert text == {"result": "héllo"}
    assert "GET" in binary["error"] and "base64" in binary["error"]
    assert strlen == {"result": len(value)}
    # A binary key over the path form, read back over RESP and HTTP.
    r = http.post(url + "/set/%FF%00key", data=value)
    assert r.json() == {"result": "OK"}
    assert rp.get(b"\xff\x00key") == value
    r = http.get(url + "/keys/*key", headers={"Upstash-Encoding": "base64"})
    assert [base64.b64decode(k) for k in r.json()["result"]] == [b"\xff\x00key"]


# ---------------------------------------------------------------------------------------------
# /pipeline and /multi-exec
# ---------------------------------------------------------------------------------------------


def test_pipeline(http, url, rp):
    rp.set(b"s", b"text")
    r = http.post(url + "/pipeline", json=[
        ["SET", "p", "1"],
        ["INCR", "p"],
        ["INCR", "s"],
        ["NOSUCH"],
        ["GET", "p"],
        ["SUBSCRIBE", "ch"],
    ])
    assert r.status_code == 200
    res = r.json()
    assert res[:3] == [{"result": "OK"}, {"result": 2},
                       {"error": "ERR value is not an integer or out of range"}]
    assert res[3]["error"].startswith("ERR unknown command 'NOSUCH'")
    assert res[4] == {"result": "2"}
    assert "/v1/subscribe" in res[5]["error"]
    assert http.post(url + "/pipeline", json=[]).json() == []


def test_select_applies_to_the_rest_of_the_pipeline_only(http, url, rp):
    r = http.post(url + "/pipeline", json=[
        ["SET", "k", "db0"], ["SELECT", 3], ["SET", "k", "db3"], ["GET", "k"]])
    assert r.json() == [{"result": "OK"}] * 3 + [{"result": "db3"}]
    # The next request on the same connection starts in database 0 again.
    assert http.post(url, json=["GET", "k"]).json() == {"result": "db0"}
    assert http.post(url, json=["SELECT", 5]).json() == {"result": "OK"}
    assert http.post(url, json=["GET", "k"]).json() == {"result": "db0"}
    rp.select(3)
    assert rp.get(b"k") == b"db3"


def test_pipeline_size_is_bounded(http, url, rp):
    r = http.post(url + "/pipeline", json=[["INCR", "c"]] * 10_001)
    assert r.status_code == 413
    assert "at most 10000" in r.json()["error"]
    assert rp.get(b"c") is None
    r = http.post(url + "/pipeline", json=[["INCR", "c"]] * 10_000)
    assert r.status_code == 200
    assert r.json()[-1] == {"result": 10_000}


def test_multi_exec(http, url, rp):
    rp.set(b"str", b"x")
    r = http.post(url + "/multi-exec", json=[
        ["SET", "a", "1"], ["INCR", "a"], ["LPUSH", "str", "v"], ["GET", "a"]])
    assert r.status_code == 200
    # A command that fails while running fails alone; the others ran (Redis's EXEC).
    assert r.json() == [
        {"result": "OK"}, {"result": 2},
        {"error": "WRONGTYPE Operation against a key holding the wrong kind of value"},
        {"result": "2"}]
    assert rp.get(b"a") == b"2"
    # SELECT inside the transaction moves the commands after it.
    r = http.post(url + "/multi-exec", json=[["SELECT", 2], ["SET", "t", "db2"]])
    assert r.json() == [{"result": "OK"}, {"result": "OK"}]
    assert rp.get(b"t") is None
    assert http.post(url, json=["EXISTS", "t"]).json() == {"result": 0}


@pytest.mark.parametrize("bad, reason", [
    (["NOSUCH", "x"], "ERR unknown command 'NOSUCH'"),
    (["GET"], "ERR wrong number of arguments for 'get' command"),
    (["WATCH", "k"], "/multi-exec"),
    (["SUBSCRIBE", "ch"], "/v1/subscribe"),
])
def test_multi_exec_aborts_on_a_queueing_error(http, url, rp, bad, reason):
    r = http.post(url + "/multi-exec", json=[["SET", "a", "1"], bad, ["INCR", "n"]])
    assert r.status_code == 400
    err = r.json()["error"]
    assert err.startswith("EXECABORT Transaction discarded because of previous errors.")
    assert "Command 2" in err and reason in err
    # Nothing ran, and nothing is left queued on the connection.
    assert rp.exists(b"a", b"n") == 0
    assert http.post(url, json=["SET", "after", "1"]).json() == {"result": "OK"}
    assert rp.get(b"after") == b"1"


def test_multi_exec_is_atomic_against_other_clients(url, srv, rp):
    """Concurrent transactions of INCRs: every transaction sees its own INCRs contiguous."""
    n_threads, rounds, per_tx = 4, 25, 5
    seen: list[list[int]] = []
    lock = threading.Lock()

    def worker() -> None:
        with httpx.Client() as c:
            for _ in range(rounds):
                res = c.post(url + "/multi-exec", json=[["INCR", "ctr"]] * per_tx).json()
                with lock:
                    seen.append([e["result"] for e in res])

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == n_threads * rounds
    for vals in seen:
        assert vals == list(range(vals[0], vals[0] + per_tx))
    assert int(rp.get(b"ctr")) == n_threads * rounds * per_tx


# ---------------------------------------------------------------------------------------------
# Statelessness and refused commands
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, hint", [
    (["SUBSCRIBE", "ch"], "/v1/subscribe"),
    (["PSUBSCRIBE", "c*"], "/v1/subscribe"),
    (["SSUBSCRIBE", "ch"], "/v1/subscribe"),
    (["MONITOR"], "each request stands alone"),
    (["MULTI"], "/multi-exec"),
    (["EXEC"], "/multi-exec"),
    (["DISCARD"], "/multi-exec"),
    (["WATCH", "k"], "/multi-exec"),
    (["RESET"], "each request stands alone"),
    (["QUIT"], "each request stands alone"),
    (["HELLO", "3"], "each request stands alone"),
    (["CLIENT", "REPLY", "OFF"], "each request stands alone"),
    (["CLIENT", "TRACKING", "ON"], "each request stands alone"),
])
def test_connection_commands_are_refused(http, url, argv, hint):
    r = http.post(url, json=argv)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err.startswith("ERR " + argv[0].upper()) and hint in err
    # The keep-alive connection is as it was: plain request/response, database 0.
    assert http.post(url, json=["SET", "k", "v"]).json() == {"result": "OK"}
    assert http.post(url, json=["GET", "k"]).json() == {"result": "v"}


def test_blocking_commands_do_not_block(http, url, rp):
    start = time.monotonic()
    assert http.post(url, json=["BLPOP", "nothing", 5]).json() == {"result": None}
    assert time.monotonic() - start < 2
    rp.rpush(b"q", b"job")
    assert http.post(url, json=["BLPOP", "q", 5]).json() == {"result": ["q", "job"]}


def test_commands_are_counted_as_any_client(http, url, rp):
    before = rp.info("commandstats").get("cmdstat_incrby", {}).get("calls", 0)
    http.post(url, json=["INCRBY", "x", 2])
    http.post(url + "/pipeline", json=[["INCRBY", "x", 3]])
    http.post(url + "/multi-exec", json=[["INCRBY", "x", 4]])
    assert rp.info("commandstats")["cmdstat_incrby"]["calls"] == before + 3
    assert rp.get(b"x") == b"9"


# ---------------------------------------------------------------------------------------------
# The Upstash SDK, unchanged
# ---------------------------------------------------------------------------------------------


def sdk(srv: Server, token: str = "unused", **kw) -> Upstash:
    return Upstash(url=srv.http_url, token=token, allow_telemetry=False, rest_retries=0, **kw)


@pytest.mark.parametrize("encoding", ["base64", None], ids=["base64", "plain"])
def test_sdk_data_types(srv, rp, encoding):
    u = sdk(srv, rest_encoding=encoding)
    # strings and counters
    assert u.set("s", "héllo", ex=100) is True
    assert u.get("s") == "héllo"
    assert rp.get(b"s") == "héllo".encode()
    assert u.set("s", "x", nx=True) is False
    assert u.incr("c") == 1
    assert u.incrby("c", 41) == 42
    assert u.incrbyfloat("f", 1.25) == 1.25
    assert u.decr("c") == 41
    assert rp.get(b"c") == b"41"
    assert u.mget("s", "c", "nope") == ["héllo", "41", None]
    assert u.append("s", "!") == 7
    assert u.strlen("s") == len("héllo!".encode())
    assert u.ttl("s") == rp.ttl(b"s")
    assert u.exists("s", "c", "nope") == 2
    assert u.type("c") == "string"
    # hashes
    assert u.hset("h", values={"a": "1", "b": "two"}) == 2
    assert u.hget("h", "b") == "two"
    assert u.hgetall("h") == {"a": "1", "b": "two"}
    assert {k.decode(): v.decode() for k, v in rp.hgetall(b"h").items()} == {"a": "1", "b": "two"}
    assert u.hincrby("h", "a", 5) == 6
    assert u.hexists("h", "a") is True
    assert sorted(u.hkeys("h")) == ["a", "b"]
    # lists
    assert u.rpush("l", "a", "b", "c") == 3
    assert u.lpush("l", "z") == 4
    assert u.lrange("l", 0, -1) == ["z", "a", "b", "c"]
    assert rp.lrange(b"l", 0, -1) == [b"z", b"a", b"b", b"c"]
    assert u.lpop("l") == "z"
    assert u.llen("l") == 3
    # sets
    assert u.sadd("st", "x", "y", "z") == 3
    assert sorted(u.smembers("st")) == ["x", "y", "z"]
    assert u.sismember("st", "y") is True
    assert u.srem("st", "y") == 1
    assert rp.smembers(b"st") == {b"x", b"z"}
    # sorted sets
    assert u.zadd("z", {"a": 1.5, "b": 2, "c": -1}) == 3
    assert u.zrange("z", 0, -1) == ["c", "a", "b"]
    assert u.zrange("z", 0, -1, withscores=True) == [("c", -1.0), ("a", 1.5), ("b", 2.0)]
    assert u.zscore("z", "a") == 1.5
    assert u.zincrby("z", 1, "a") == 2.5
    assert u.zrank("z", "b") == rp.zrank(b"z", b"b")
    assert rp.zrange(b"z", 0, -1, withscores=True) == [(b"c", -1.0), (b"b", 2.0), (b"a", 2.5)]
    # keys
    assert sorted(u.keys("*")) == sorted(k.decode() for k in rp.keys(b"*"))
    assert u.delete("s", "nope") == 1
    assert u.get("s") is None


def test_sdk_errors(srv, rp):
    u = sdk(srv)
    rp.set(b"k", b"v")
    with pytest.raises(UpstashError, match="WRONGTYPE"):
        u.lpush("k", "x")
    with pytest.raises(UpstashError, match="not an integer"):
        u.incr("k")
    # Binary values: the SDK's base64 decoding gets the bytes; text only (its own limit).
    rp.set(b"bin", b"\xff")
    with pytest.raises(UpstashError, match="Upstash-Encoding: base64"):
        sdk(srv, rest_encoding=None).get("bin")


def test_sdk_pipeline_and_transaction(srv, rp):
    u = sdk(srv)
    p = u.pipeline()
    p.set("a", "1")
    p.incr("a")
    p.get("a")
    p.hset("h", "f", "v")
    assert p.exec() == [True, 2, "2", 1]
    m = u.multi()
    m.incr("a")
    m.sadd("s", "x")
    m.smembers("s")
    assert m.exec() == [3, 1, ["x"]]
    assert rp.get(b"a") == b"3"
    # A failing command inside a transaction: the SDK raises, the others ran.
    m = u.multi()
    m.set("t", "1")
    m.hget("t", "f")
    with pytest.raises(UpstashError, match="WRONGTYPE"):
        m.exec()
    assert rp.get(b"t") == b"1"
    p = u.pipeline()
    p.set("x", "1")
    p.lpush("x", "y")
    with pytest.raises(UpstashError, match="WRONGTYPE"):
        p.exec()


# ---------------------------------------------------------------------------------------------
# Authentication
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def locked(start_server) -> Server:
    return start_with_http(start_server, "--requirepass", PASSWORD)


def test_auth_with_requirepass(locked):
    url = locked.http_url
    r = requests.post(url, json=["PING"])
    assert r.status_code == 401
    assert r.json()["error"].startswith("NOAUTH")
    assert "Bearer" in r.headers["WWW-Authenticate"]
    r = requests.post(url, json=["PING"], headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    for token in (PASSWORD, f"default:{PASSWORD}"):
        r = requests.post(url + "/pipeline", json=[["SET", "k", token], ["GET", "k"]],
                          headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200
        assert r.json() == [{"result": "OK"}, {"result": token}]
    r = requests.get(url + "/get/k", headers={"Authorization": "Bearer default:wrong"})
    assert r.status_code == 401
    assert locked.client(protocol=2).get(b"k") == f"default:{PASSWORD}".encode()


def test_sdk_auth(locked):
    assert sdk(locked, token=PASSWORD).set("k", "v") is True
    assert sdk(locked, token=f"default:{PASSWORD}").get("k") == "v"
    with pytest.raises(UpstashError, match="WRONGPASS"):
        sdk(locked, token="wrong").get("k")
