"""The libraries Redis 7.0 gives scripts, from a client: cjson, cmsgpack, bit, struct and
redis.sha1hex. Smoke tests, byte for byte against what redis-server 7.0.15 sends (error texts
included); the libraries' own corner cases are the Rust tests' job.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from conftest import Err


@pytest.fixture(autouse=True)
def _empty_script_cache(server):
    with server.admin() as conn:
        assert conn.call("SCRIPT", "FLUSH") == "OK"


def lua_error(conn, body: str, *args: str) -> str:
    """The error text of a script that fails, without the ' script: <sha>, on ...' tail."""
    reply = conn.call("EVAL", body, "0", *args)
    assert isinstance(reply, Err), reply
    return reply.split(" script: ")[0]


# --- cjson ------------------------------------------------------------------------------------


def test_cjson_encode(rawp):
    assert rawp.call("EVAL", "return cjson.encode({1, 2, 'three', {a=1}})", "0") == \
        b'[1,2,"three",{"a":1}]'
    assert rawp.call("EVAL", "return cjson.encode({a={b={c='d'}}})", "0") == \
        b'{"a":{"b":{"c":"d"}}}'
    assert rawp.call("EVAL", "return cjson.encode({})", "0") == b"{}"
    assert rawp.call("EVAL", "return cjson.encode(1/3)", "0") == b"0.33333333333333"
    assert rawp.call("EVAL", "return cjson.encode({1e300, -0.0, 100})", "0") == \
        b"[1e+300,-0,100]"
    assert rawp.call("EVAL", "return cjson.encode('a\"b\\n')", "0") == b'"a\\"b\\n"'
    assert rawp.call("EVAL", "return cjson.encode({[1]=1, [3]=3})", "0") == b"[1,null,3]"


def test_cjson_decode(rawp):
    doc = json.dumps({"name": "x", "n": 3.5, "list": [1, 2, 3], "flag": True, "none": None})
    body = ("local t = cjson.decode(ARGV[1]); return {t.name, t.n, #t.list, t.list[2], "
            "tostring(t.flag), tostring(t.none == cjson.null)}")
    assert rawp.call("EVAL", body, "0", doc) == [b"x", 3, 3, 2, b"true", b"true"]
    body = "return cjson.encode(cjson.decode('[1,2.5,\"s\",null,true]'))"
    assert rawp.call("EVAL", body, "0") == b'[1,2.5,"s",null,true]'


def test_cjson_round_trip_through_a_key(r):
    """A common pattern: a JSON document kept in a key, updated field by field in a script."""
    r.set("doc", json.dumps({"visits": 1, "tags": ["a"]}))
    body = """
        local d = cjson.decode(redis.call('GET', KEYS[1]))
        d.visits = d.visits + tonumber(ARGV[1])
        table.insert(d.tags, ARGV[2])
        redis.call('SET', KEYS[1], cjson.encode(d))
        return d.visits
    """
    assert r.eval(body, 1, "doc", 4, "b") == 5
    assert json.loads(r.get("doc")) == {"visits": 5, "tags": ["a", "b"]}


def test_cjson_errors(rawp):
    assert lua_error(rawp, "return cjson.decode('{bad')") == \
        "ERR user_script:1: Expected object key string but found invalid token at character 2"
    assert lua_error(rawp, "local t = {} t[1] = t return cjson.encode(t)") == \
        "ERR user_script:1: Cannot serialise, excessive nesting (1001)"
    assert lua_error(rawp, "return cjson.encode(function() end)") == \
        "ERR user_script:1: Cannot serialise function: type not supported"
    assert lua_error(rawp, "return cjson.encode({[1]=1, [2]=2, [20]=3})") == \
        "ERR user_script:1: Cannot serialise table: excessively sparse array"
    deep = "return cjson.decode('[' .. string.rep('[', 2000) .. string.rep(']', 2001))"
    assert lua_error(rawp, deep) == \
        "ERR user_script:1: Found too many nested data structures (1001) at character 1001"


# --- cmsgpack ---------------------------------------------------------------------------------


def test_cmsgpack_pack(rawp):
    assert rawp.call("EVAL", "return cmsgpack.pack({1, 2, 'three'})", "0") == \
        b"\x93\x01\x02\xa5three"
    assert rawp.call("EVAL", "return cmsgpack.pack({a=1})", "0") == b"\x81\xa1a\x01"
    assert rawp.call("EVAL", "return cmsgpack.pack(1.5)", "0") == b"\xca?\xc0\x00\x00"
    assert rawp.call("EVAL", "return cmsgpack.pack(-1, 300, 70000, 2^40, true, false)", "0") == \
        b"\xff\xcd\x01,\xce\x00\x01\x11p\xcf\x00\x00\x01\x00\x00\x00\x00\x00\xc3\xc2"
    assert rawp.call("EVAL", "return cmsgpack.pack({1, {2, {3}}, {k='v'}})", "0") == \
        b"\x93\x01\x92\x02\x91\x03\x81\xa1k\xa1v"


def test_cmsgpack_unpack(rawp):
    assert rawp.call("EVAL", "return cmsgpack.unpack(ARGV[1])", "0", b"\x93\x01\x02\xa5three") \
        == [1, 2, b"three"]
    body = ("local a, b, c = cmsgpack.unpack(cmsgpack.pack(1, 'x', 3.5)); "
            "return {a, b, tostring(c)}")
    assert rawp.call("EVAL", body, "0") == [1, b"x", b"3.5"]


# --- bit ----------------------------------------------------------------------------------------


def test_bit(rawp):
    body = ("return {bit.band(0xff, 0x0f), bit.bor(1, 2), bit.bxor(3, 1), bit.lshift(1, 10), "
            "bit.rshift(1024, 3), bit.arshift(-16, 2), bit.bnot(0), bit.tobit(2^32 + 5)}")
    assert rawp.call("EVAL", body, "0") == [15, 3, 2, 1024, 128, -4, -1, 5]
    body = ("return {bit.tohex(-1), bit.tohex(255, 4), bit.tohex(255, -4), bit.rol(1, 33), "
            "bit.ror(1, 1), bit.bswap(0x12345678), bit.tohex(255)}")
    assert rawp.call("EVAL", body, "0") == [b"ffffffff", b"00ff", b"00FF", 2, -2147483648,
                                            2018915346, b"000000ff"]


# --- struct -------------------------------------------------------------------------------------


def test_struct(rawp):
    assert rawp.call("EVAL", "return struct.pack('>I2i4', 258, -2)", "0") == \
        b"\x01\x02\xff\xff\xff\xfe"
    assert rawp.call("EVAL", "return {struct.unpack('>I2i4', ARGV[1])}", "0",
                     b"\x01\x02\xff\xff\xff\xfe") == [258, -2, 7]
    assert rawp.call("EVAL", "return {struct.size('>I2i4d'), struct.pack('<h', 1)}", "0") == \
        [14, b"\x01\x00"]
    assert rawp.call("EVAL", "return {struct.unpack('bc0', struct.pack('bc0', 3, 'abc'))}",
                     "0") == [b"abc", 5]
    assert lua_error(rawp, "return struct.unpack('>I4', 'ab')") == \
        "ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"


# --- redis.sha1hex ----------------------------------------------------------------------------


def test_sha1hex(rawp):
    for text in ("", "abc", "x" * 1000):
        assert rawp.call("EVAL", "return redis.sha1hex(ARGV[1])", "0", text) == \
            hashlib.sha1(text.encode()).hexdigest().encode()
    assert rawp.call("EVAL", "return redis.sha1hex(12)", "0") == \
        hashlib.sha1(b"12").hexdigest().encode()
    blob = bytes(range(256))
    assert rawp.call("EVAL", "return redis.sha1hex(ARGV[1])", "0", blob) == \
        hashlib.sha1(blob).hexdigest().encode()
    assert lua_error(rawp, "return redis.sha1hex()") == "ERR wrong number of arguments"


def test_standard_libraries_present(rawp):
    body = ("return {string.format('%5.2f', 1.5), tostring(1e15) .. ' ' .. tostring(0.1), "
            "table.concat({'a', 'b'}, '-'), math.floor(2.7), string.upper('x'), "
            "#string.rep('ab', 3), select('#', 1, 2, 3), tostring(tonumber('0x10'))}")
    assert rawp.call("EVAL", body, "0") == [b" 1.50", b"1e+15 0.1", b"a-b", 2, b"X", 6, 3,
                                            b"16"]
