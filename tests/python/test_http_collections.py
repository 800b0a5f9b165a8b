"""The HTTP door's collections (`/v1/hash|set|zset/{key}[/{member}]`) and key listing
(`/v1/keys`), with requests against the real binary, checked through redis-py."""

from __future__ import annotations

import base64
import threading
import urllib.parse

import pytest
import requests

from conftest import Server
# The same server fixtures as the key API's tests: a module's server, flushed per test.
from test_http_kv import hs, http, srv  # noqa: F401

pytestmark = pytest.mark.larder_only

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def url(srv: Server, kind: str, key: bytes | str, member: bytes | str | None = None,
        **query: str) -> str:
    def seg(b: bytes | str) -> str:
        return urllib.parse.quote(b.encode() if isinstance(b, str) else b, safe="")
    u = f"{srv.http_url}/v1/{kind}/{seg(key)}"
    if member is not None:
        u += "/" + seg(member)
    if query:
        u += "?" + urllib.parse.urlencode(query)
    return u


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


# ---------------------------------------------------------------------------------------------
# Hashes
# ---------------------------------------------------------------------------------------------


def test_hash_whole(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    u = url(srv, "hash", "h")
    assert http.get(u).status_code == 404
    r = http.put(u, json={"a": "1", "b": 2, "c": "x y"})
    assert r.status_code == 204
    assert rc.hgetall("h") == {b"a": b"1", b"b": b"2", b"c": b"x y"}
    r = http.get(u)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    assert r.json() == {"a": "1", "b": "2", "c": "x y"}
    assert r.headers["ETag"].strip('"').isdigit()
    h = http.head(u)
    assert h.status_code == 200 and h.content == b""
    assert h.headers["Content-Length"] == r.headers["Content-Length"]

    # PUT replaces: fields not named are gone.
    assert http.put(u, json={"z": "26"}).status_code == 204
    assert rc.hgetall("h") == {b"z": b"26"}
    # POST and PATCH merge, answering how many fields were new.
    assert http.post(u, json={"z": "0", "y": "25"}).json() == {"added": 1}
    assert http.patch(u, json={"x": "24"}).json() == {"added": 1}
    assert rc.hgetall("h") == {b"z": b"0", b"y": b"25", b"x": b"24"}
    # An empty object: PUT leaves no hash (Redis has no empty one); POST has nothing to add.
    assert http.post(u, json={}).status_code == 400
    assert http.put(u, json={}).status_code == 204
    assert rc.exists("h") == 0
    assert http.delete(u).status_code == 404
    rc.hset("h", "k", "v")
    assert http.delete(u).status_code == 204
    assert rc.exists("h") == 0


def test_hash_fields(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    value = bytes(range(256))
    r = http.put(url(srv, "hash", "h", b"f\x00/\xff"), data=value)
    assert r.status_code == 201
    assert rc.hget("h", b"f\x00/\xff") == value
    assert http.put(url(srv, "hash", "h", b"f\x00/\xff"), data=b"two").status_code == 204
    r = http.get(url(srv, "hash", "h", b"f\x00/\xff"))
    assert r.status_code == 200 and r.content == b"two"
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers["ETag"].strip('"').isdigit()
    assert http.head(url(srv, "hash", "h", b"f\x00/\xff")).headers["Content-Length"] == "3"
    assert http.get(url(srv, "hash", "h", "nope")).status_code == 404
    assert http.get(url(srv, "hash", "missing", "f")).status_code == 404
    assert http.delete(url(srv, "hash", "h", "nope")).status_code == 404
    assert http.delete(url(srv, "hash", "h", b"f\x00/\xff")).status_code == 204
    assert rc.exists("h") == 0
    assert http.post(url(srv, "hash", "h", "f"), data=b"x").status_code == 405


def test_hash_etag_follows_writes_from_any_door(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    u = url(srv, "hash", "h")
    http.put(u, json={"a": "1"})
    t1 = http.get(u).headers["ETag"]
    assert http.get(u).headers["ETag"] == t1  # a read does not move it
    rc.hset("h", "b", "2")
    t2 = http.get(u).headers["ETag"]
    assert int(t2.strip('"')) > int(t1.strip('"'))
    assert http.get(url(srv, "hash", "h", "a")).headers["ETag"] == t2


def test_conditional_collection_writes(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    u = url(srv, "hash", "h")
    assert http.put(u, json={"a": "1"}, headers={"If-None-Match": "*"}).status_code == 204
    tag = http.get(u).headers["ETag"]
    r = http.put(u, json={"a": "2"}, headers={"If-None-Match": "*"})
    assert r.status_code == 412 and r.headers["ETag"] == tag
    assert r.json() == {"error": "precondition failed", "version": int(tag.strip('"'))}
    rc.hset("h", "b", "x")  # another door moves the version
    r = http.put(u, json={"a": "3"}, headers={"If-Match": tag})
    assert r.status_code == 412
    cur = r.headers["ETag"]
    assert cur != tag
    assert rc.hgetall("h") == {b"a": b"1", b"b": b"x"}
    assert http.put(u, json={"a": "3"}, headers={"If-Match": cur}).status_code == 204
    assert rc.hgetall("h") == {b"a": b"3"}
    # On a member, and on a missing key.
    cur = http.get(u).headers["ETag"]
    assert http.put(url(srv, "hash", "h", "c"), data=b"c",
                    headers={"If-Match": tag}).status_code == 412
    assert http.put(url(srv, "hash", "h", "c"), data=b"c",
                    headers={"If-Match": cur}).status_code == 201
    r = http.put(url(srv, "set", "nope"), json=["a"], headers={"If-Match": "*"})
    assert r.status_code == 412 and "ETag" not in r.headers
    assert rc.exists("nope") == 0
    assert http.delete(u, headers={"If-Match": cur}).status_code == 412
    assert http.put(u, json={}, headers={"If-None-Match": '"1"'}).status_code == 400
    assert http.put(u, json={}, headers={"If-Match": "abc"}).status_code == 400
    assert rc.exists("h") == 1


def test_concurrent_conditional_hash_writers(srv: Server) -> None:
    """Read-then-conditional-replace from many threads: no update is lost."""
    u = url(srv, "hash", "ctr")
    requests.put(u, json={"n": "0"})
    wins = [0]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer() -> None:
        try:
            s = requests.Session()
            for _ in range(30):
                g = s.get(u)
                n = int(g.json()["n"])
                if "ETag" not in g.headers:
                    # A write slipped in while this read ran: the reply's version is not
                    # certain, so it carries none (see collections/mod.rs). Read again.
                    continue
                r = s.put(u, json={"n": str(n + 1)}, headers={"If-Match": g.headers["ETag"]})
                assert r.status_code in (204, 412), r.text
                if r.status_code == 204:
                    with lock:
                        wins[0] += 1
            s.close()
        except BaseException as e:  # noqa: BLE001 - reported by the test's thread below
            errors.append(e)

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert 0 < wins[0] < 180
    assert requests.get(u).json() == {"n": str(wins[0])}


# ---------------------------------------------------------------------------------------------
# Sets
# ---------------------------------------------------------------------------------------------


def test_set_whole_and_members(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    u = url(srv, "set", "s")
    assert http.get(u).status_code == 404
    assert http.put(u, json=["a", "b", "c"]).status_code == 204
    assert sorted(http.get(u).json()) == ["a", "b", "c"]
    assert http.put(u, json=["x"]).status_code == 204
    assert rc.smembers("s") == {b"x"}
    assert http.post(u, json=["x", "y", "z"]).json() == {"added": 2}
    assert rc.smembers("s") == {b"x", b"y", b"z"}
    r = http.get(url(srv, "set", "s", "y"))
    assert r.status_code == 204 and r.headers["ETag"].strip('"').isdigit()
    assert http.get(url(srv, "set", "s", "w")).status_code == 404
    assert http.put(url(srv, "set", "s", "w")).status_code == 201
    assert http.put(url(srv, "set", "s", "w")).status_code == 204
    assert http.delete(url(srv, "set", "s", "w")).status_code == 204
    assert http.delete(url(srv, "set", "s", "w")).status_code == 404
    assert rc.smembers("s") == {b"x", b"y", b"z"}
    for bad in [{"a": 1}, [1, 2], ["a", None], "a"]:
        assert http.post(u, json=bad).status_code == 400
    assert http.post(u, data=b"[not json").status_code == 400
    assert http.post(u, json=[]).status_code == 400
    assert rc.smembers("s") == {b"x", b"y", b"z"}
    assert http.delete(u).status_code == 204 and rc.exists("s") == 0


# ---------------------------------------------------------------------------------------------
# Sorted sets
# ---------------------------------------------------------------------------------------------


def test_zset_whole_and_ranges(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    u = url(srv, "zset", "z")
    assert http.get(u).status_code == 404
    assert http.put(u, json={"a": 1, "b": 2.5, "c": -3, "top": "inf", "bottom": "-inf"}
                    ).status_code == 204
    assert rc.zrange("z", 0, -1, withscores=True) == [
        (b"bottom", float("-inf")), (b"c", -3.0), (b"a", 1.0), (b"b", 2.5),
        (b"top", float("inf"))]
    got = http.get(u).json()
    assert got == [{"member": "bottom", "score": "-inf"}, {"member": "c", "score": -3},
                   {"member": "a", "score": 1}, {"member": "b", "score": 2.5},
                   {"member": "top", "score": "inf"}]

    def members(**q: str) -> list[str]:
        r = http.get(url(srv, "zset", "z", **q))
        assert r.status_code == 200, r.text
        return [e["member"] for e in r.json()]

    assert members(start="1", stop="2") == ["c", "a"]
    assert members(start="-2") == ["b", "top"]
    assert members(rev="true", start="0", stop="1") == ["top", "b"]
    assert members(min="-3", max="2") == ["c", "a"]
    assert members(min="(-3", max="2.5") == ["a", "b"]
    assert members(min="0") == ["a", "b", "top"]
    assert members(min="0", rev="1") == ["top", "b", "a"]
    assert members(min="-inf", max="+inf", offset="1", limit="2") == ["c", "a"]
    assert members(max="1", rev="true", limit="2") == ["a", "c"]
    assert members(min="100", max="200") == []  # the key exists: an empty range, not 404
    for bad in [{"start": "0", "min": "1"}, {"limit": "2"}, {"min": "abc"},
                {"start": "x"}, {"rev": "maybe"}]:
        assert http.get(url(srv, "zset", "z", **bad)).status_code == 400, bad

    assert http.post(u, json={"a": 10, "d": 4}).json() == {"added": 1}
    assert rc.zscore("z", "a") == 10.0
    for bad in [{"a": "nan"}, {"a": None}, {"a": [1]}, {"a": "1x"}]:
        assert http.post(u, json=bad).status_code == 400
    # A bad score in a PUT leaves the old set whole.
    assert http.put(u, json={"q": 1, "r": "NaN"}).status_code == 400
    assert rc.zcard("z") == 6
    assert http.put(u, json={"only": 0}).status_code == 204
    assert rc.zrange("z", 0, -1) == [b"only"]
    assert http.delete(u).status_code == 204


def test_zset_members(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    m = url(srv, "zset", "z", b"m\xff")
    assert http.get(m).status_code == 404
    assert http.put(m, data=b"1.5").status_code == 201
    assert rc.zscore("z", b"m\xff") == 1.5
    r = http.get(m)
    assert r.status_code == 200 and r.json() == 1.5 and r.headers["ETag"]
    assert http.put(m, data=b" -inf ").status_code == 204
    assert http.get(m).json() == "-inf"
    assert http.put(m, data=b"abc").status_code == 400
    assert http.put(m, data=b"nan").status_code == 400
    assert http.delete(m).status_code == 204
    assert http.delete(m).status_code == 404
    assert rc.exists("z") == 0


# ---------------------------------------------------------------------------------------------
# Types, bytes, errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path,method,body", [
    ("hash/str", "GET", None), ("hash/str", "POST", {"a": "1"}),
    ("hash/str/f", "GET", None), ("hash/str/f", "PUT", b"x"), ("hash/str/f", "DELETE", None),
    ("set/str", "GET", None), ("set/str", "POST", ["a"]), ("set/str/m", "GET", None),
    ("zset/str", "GET", None), ("zset/str", "POST", {"a": 1}), ("zset/str/m", "GET", None),
    ("hash/str", "DELETE", None), ("set/str", "DELETE", None), ("zset/str", "DELETE", None),
])
def test_wrong_type_is_409(srv: Server, http: requests.Session, path: str, method: str,
                           body) -> None:
    rc = srv.client(protocol=2)
    rc.set("str", "plain")
    kw = {"json": body} if isinstance(body, (dict, list)) else {"data": body}
    r = http.request(method, f"{srv.http_url}/v1/{path}", **kw)
    assert r.status_code == 409
    assert r.json() == {"error": WRONGTYPE}
    assert rc.get("str") == b"plain"


def test_put_replaces_any_type(srv: Server, http: requests.Session) -> None:
    """PUT of a whole collection is DEL + add, as a client replacing a key would do."""
    rc = srv.client(protocol=2)
    rc.set("k", "plain")
    assert http.put(url(srv, "set", "k"), json=["a"]).status_code == 204
    assert rc.type("k") == b"set"


def test_bytes_that_are_not_utf8(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    rc.hset("h", mapping={b"f\xff": b"v\x00\xfe", b"ok": b"fine"})
    rc.sadd("s", b"\xc3\x28", b"text")
    rc.zadd("z", {b"\x80": 1})
    for kind, key in [("hash", "h"), ("set", "s"), ("zset", "z")]:
        r = http.get(url(srv, kind, key))
        assert r.status_code == 406
        assert "encoding=base64" in r.json()["error"]
        assert "\ufffd" not in r.text
    assert http.get(url(srv, "hash", "h", encoding="base64")).json() == {
        b64(b"f\xff"): b64(b"v\x00\xfe"), b64(b"ok"): b64(b"fine")}
    assert sorted(http.get(url(srv, "set", "s", encoding="base64")).json()) == sorted(
        [b64(b"\xc3\x28"), b64(b"text")])
    assert http.get(url(srv, "zset", "z", encoding="base64")).json() == [
        {"member": b64(b"\x80"), "score": 1}]
    # Raw member endpoints carry any bytes without base64.
    assert http.get(url(srv, "hash", "h", b"f\xff")).content == b"v\x00\xfe"

    # Writes with base64 strings.
    assert http.post(url(srv, "hash", "h", encoding="base64"),
                     json={b64(b"\x00k"): b64(b"\xff\xff")}).json() == {"added": 1}
    assert rc.hget("h", b"\x00k") == b"\xff\xff"
    assert http.put(url(srv, "set", "s2", encoding="base64"),
                    json=[b64(b"\x01"), b64(b"")]).status_code == 204
    assert rc.smembers("s2") == {b"\x01", b""}
    assert http.post(url(srv, "zset", "z", encoding="base64"),
                     json={b64(b"\xfe"): 2}).json() == {"added": 1}
    assert rc.zscore("z", b"\xfe") == 2.0
    for bad in ["not base64!", "Zg"]:
        r = http.post(url(srv, "set", "s2", encoding="base64"), json=[bad])
        assert r.status_code == 400 and "base64" in r.json()["error"]
    assert http.get(url(srv, "set", "s2", encoding="rot13")).status_code == 400


def test_unicode_text_round_trips(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    data = {"ключ": "значение", "emoji🔑": "✓", "quote\"": "back\\slash"}
    assert http.put(url(srv, "hash", "u"), json=data).status_code == 204
    assert rc.hget("u", "ключ".encode()) == "значение".encode()
    assert http.get(url(srv, "hash", "u")).json() == data


def test_collection_writes_raise_keyspace_events(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    rc.config_set("notify-keyspace-events", "KEA")
    try:
        ps = rc.pubsub()
        ps.psubscribe("__keyspace@0__:*")
        assert ps.get_message(timeout=2)["type"] == "psubscribe"
        http.put(url(srv, "hash", "h"), json={"a": "1"})
        http.put(url(srv, "set", "s", "m"))
        http.delete(url(srv, "hash", "h"))
        got = []
        while len(got) < 3:
            m = ps.get_message(timeout=2)
            assert m is not None, got
            if m["type"] == "pmessage":
                got.append((m["channel"], m["data"]))
        assert got == [(b"__keyspace@0__:h", b"hset"), (b"__keyspace@0__:s", b"sadd"),
                       (b"__keyspace@0__:h", b"del")]
        ps.close()
    finally:
        rc.config_set("notify-keyspace-events", "")


def test_bad_collection_paths(srv: Server, http: requests.Session) -> None:
    assert http.get(f"{srv.http_url}/v1/hash/").status_code == 400
    assert http.get(f"{srv.http_url}/v1/hash/a/b/c").status_code == 404
    assert http.get(f"{srv.http_url}/v1/list/a").status_code == 404
    assert http.put(url(srv, "hash", "h"), json=["a"]).status_code == 400
    assert http.put(url(srv, "hash", "h"), json={"a": {"b": 1}}).status_code == 400
    assert http.put(url(srv, "zset", "z"), json=["a"]).status_code == 400


# ---------------------------------------------------------------------------------------------
# Key listing
# ---------------------------------------------------------------------------------------------


def walk(http: requests.Session, srv: Server, **q: str | bytes) -> list[str]:
    keys: list[str] = []
    cursor = "0"
    for _ in range(10_000):
        r = http.get(f"{srv.http_url}/v1/keys", params={**q, "cursor": cursor})
        assert r.status_code == 200, r.text
        body = r.json()
        assert isinstance(body["cursor"], str)
        keys += body["keys"]
        cursor = body["cursor"]
        if cursor == "0":
            return keys
    raise AssertionError("the walk never ended")


def test_keys_listing(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    assert http.get(f"{srv.http_url}/v1/keys").json() == {"cursor": "0", "keys": []}
    names = [f"user:{i}" for i in range(300)] + [f"order:{i}" for i in range(50)]
    rc.mset({n: "x" for n in names})
    rc.hset("user:h", "f", "v")
    assert sorted(walk(http, srv)) == sorted(names + ["user:h"])
    assert sorted(walk(http, srv, prefix="order:")) == sorted(n for n in names if "order" in n)
    assert sorted(walk(http, srv, prefix="user:", count="7")) == sorted(
        [n for n in names if n.startswith("user:")] + ["user:h"])
    assert walk(http, srv, prefix="user:", type="hash") == ["user:h"]
    assert walk(http, srv, prefix="nobody") == []
    r = http.get(f"{srv.http_url}/v1/keys", params={"count": "1000"})
    assert r.status_code == 200
    for bad in [{"count": "0"}, {"count": "1001"}, {"count": "x"}, {"cursor": "-1"},
                {"cursor": "abc"}, {"encoding": "hex"}]:
        assert http.get(f"{srv.http_url}/v1/keys", params=bad).status_code == 400, bad
    assert http.delete(f"{srv.http_url}/v1/keys").status_code == 405


def test_keys_prefix_escapes_glob_characters(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    names = ["a*b", "a*bc", "axb", "a?", "ab", "[x]1", "x1", "\\k", "\\", "k"]
    rc.mset({n: "1" for n in names})
    assert sorted(walk(http, srv, prefix="a*")) == ["a*b", "a*bc"]
    assert sorted(walk(http, srv, prefix="a?")) == ["a?"]
    assert sorted(walk(http, srv, prefix="[x]")) == ["[x]1"]
    assert sorted(walk(http, srv, prefix="\\")) == ["\\", "\\k"]


def test_keys_binary_names(srv: Server, http: requests.Session) -> None:
    rc = srv.client(protocol=2)
    rc.set(b"bin:\xff\x00", "1")
    rc.set(b"bin:text", "1")
    r = http.get(f"{srv.http_url}/v1/keys", params={"prefix": "bin:", "count": "1000"})
    assert r.status_code == 406 and "encoding=base64" in r.json()["error"]
    got = walk(http, srv, prefix="bin:", encoding="base64")
    assert sorted(base64.b64decode(k) for k in got) == [b"bin:text", b"bin:\xff\x00"]
    # A binary prefix, percent-encoded in the query.
    got = walk(http, srv, prefix=b"bin:\xff", encoding="base64")
    assert got == [b64(b"bin:\xff\x00")]


def test_keys_walk_while_keys_are_added(srv: Server, http: requests.Session) -> None:
    """SCAN's guarantee over HTTP: every key there for the whole walk is returned, none
    twice, while other keys are being added."""
    rc = srv.client(protocol=2)
    base = [f"k:{i}" for i in range(2000)]
    rc.mset({n: "1" for n in base})
    stop = threading.Event()

    def adder() -> None:
        c = srv.client(protocol=2)
        i = 0
        while not stop.is_set() and i < 20_000:
            c.set(f"k:new:{i}", "1")
            i += 1

    t = threading.Thread(target=adder)
    t.start()
    try:
        keys = walk(http, srv, prefix="k:", count="50")
    finally:
        stop.set()
        t.join()
    assert len(keys) == len(set(keys)), "a key came back twice"
    assert set(base) <= set(keys)
    assert all(k.startswith("k:") for k in keys)
