"""Lua <-> RESP conversion, as a client observes it, in RESP2 and RESP3.

Each case is a script and the exact frames redis-server 7.0.15 sends back (type byte and
value, nested), once for a RESP2 connection and once after HELLO 3: Lua numbers truncated to
integers, tables cut at the first nil, `{err=}` / `{ok=}`, false -> nil, true -> 1, nested
arrays, RESP3's map/set/double/big number/boolean/verbatim tables, `redis.setresp(3)` (replies
of redis.call arrive in Lua as RESP3 types, and a RESP2 client still gets RESP2 shapes), and
what redis.call hands the script (nil bulk -> false, status -> {ok=}, ...).
"""

from __future__ import annotations

import pytest

from conftest import Frame


@pytest.fixture(autouse=True)
def _empty_script_cache(server):
    with server.admin() as conn:
        assert conn.call("SCRIPT", "FLUSH") == "OK"


def shape(f: Frame):
    """A frame as nested (type byte, value) tuples, so RESP types are compared exactly."""
    if f.kind in ("*", "~") and f.value is not None:
        return (f.kind, [shape(x) for x in f.value])
    if f.kind == "%":
        return (f.kind, [(shape(k), shape(v)) for k, v in f.value])
    if f.kind == "=":
        return (f.kind, f.attributes["format"], f.value)
    return (f.kind, f.value)


def ev(conn, body: str, *keys_then_args: str, numkeys: int = 0):
    return shape(conn.call_frame("EVAL", body, str(numkeys), *keys_then_args))


def nil(protocol: int):
    return ("_", None) if protocol == 3 else ("$", None)


def i(v: int):
    return (":", v)


def b(v: bytes):
    return ("$", v)


# --- Lua -> RESP --------------------------------------------------------------------------------


def test_numbers_are_truncated(rawp):
    assert ev(rawp, "return 3.99") == i(3)
    assert ev(rawp, "return -3.99") == i(-3)
    assert ev(rawp, "return 0.5") == i(0)
    assert ev(rawp, "return 2^53") == i(9007199254740992)
    assert ev(rawp, "return {1.9, -0.1, 7}") == ("*", [i(1), i(0), i(7)])
    # A number in a string stays a string.
    assert ev(rawp, "return '1.5'") == b(b"1.5")
    assert ev(rawp, "return tostring(3.25)") == b(b"3.25")


def test_out_of_range_numbers(rawp):
    """What redis-server 7.0 on x86-64 sends for numbers no long long holds (C's conversion
    of an out-of-range double gives LLONG_MIN there)."""
    for body in ("return 1e20", "return 1/0", "return -1/0", "return 0/0"):
        assert ev(rawp, body) == i(-(2 ** 63)), body


def test_booleans_and_nil(rawp, protocol):
    assert ev(rawp, "return true") == i(1)
    assert ev(rawp, "return false") == nil(protocol)
    assert ev(rawp, "return nil") == nil(protocol)
    assert ev(rawp, "return") == nil(protocol)
    assert ev(rawp, "return ") == nil(protocol)


def test_tables_are_cut_at_the_first_nil(rawp, protocol):
    assert ev(rawp, "return {1, 2, nil, 4}") == ("*", [i(1), i(2)])
    assert ev(rawp, "local t = {}; t[1]='a'; t[3]='c'; return t") == ("*", [b(b"a")])
    assert ev(rawp, "return {nil, 1}") == ("*", [])
    # false is not nil: it is kept, and sent as a nil.
    assert ev(rawp, "return {false, 'after'}") == ("*", [nil(protocol), b(b"after")])


def test_tables_keep_only_their_array_part(rawp):
    assert ev(rawp, "return {}") == ("*", [])
    assert ev(rawp, "return {1, 2, x=3}") == ("*", [i(1), i(2)])
    assert ev(rawp, "return {x=3}") == ("*", [])


def test_nested_arrays(rawp, protocol):
    assert ev(rawp, "return {1, {2, {3, 'x'}}, false, true}") == ("*", [
        i(1), ("*", [i(2), ("*", [i(3), b(b"x")])]), nil(protocol), i(1)])
    assert ev(rawp, "return {1.9, 'a', {}, {ok='x'}, {err='y'}}") == ("*", [
        i(1), b(b"a"), ("*", []), ("+", "x"), ("-", "y")])


def test_status_and_error_tables(rawp):
    assert ev(rawp, "return {ok='FINE'}") == ("+", "FINE")
    assert ev(rawp, "return {err='My Error'}") == ("-", "My Error")
    assert ev(rawp, "return redis.status_reply('GOOD')") == ("+", "GOOD")
    assert ev(rawp, "return redis.error_reply('MY bad')") == ("-", "MY bad")
    # err wins over ok; non-string values make an ordinary (empty) table.
    assert ev(rawp, "return {err='x', ok='y'}") == ("-", "x")
    assert ev(rawp, "return {ok=1}") == ("*", [])
    assert ev(rawp, "return {err=1}") == ("*", [])


def test_binary_strings(rawp):
    blob = bytes(range(256))
    assert shape(rawp.call_frame("EVAL", "return ARGV[1]", "0", blob)) == b(blob)
    assert ev(rawp, "return 'a\\0b'") == b(b"a\x00b")


# --- RESP3 tables (map, set, double, big number, boolean, verbatim) ----------------------------


def test_resp3_map_set_double(rawp, protocol):
    if protocol == 3:
        assert ev(rawp, "return {map={a=1}}") == ("%", [(b(b"a"), i(1))])
        assert ev(rawp, "return {set={a=true}}") == ("~", [b(b"a")])
        assert ev(rawp, "return {double=3.5}") == (",", 3.5)
    else:
        assert ev(rawp, "return {map={a=1}}") == ("*", [b(b"a"), i(1)])
        assert ev(rawp, "return {set={a=true}}") == ("*", [b(b"a")])
        assert ev(rawp, "return {double=3.5}") == b(b"3.5")


def test_resp3_with_setresp(rawp, protocol):
    body = ("redis.setresp(3); return {{map={b=2}}, {set={c=true}}, {double=0.25}, true, false,"
            " nil}")
    if protocol == 3:
        assert ev(rawp, body) == ("*", [("%", [(b(b"b"), i(2))]), ("~", [b(b"c")]),
                                        (",", 0.25), ("#", True), ("#", False)])
    else:
        assert ev(rawp, body) == ("*", [("*", [b(b"b"), i(2)]), ("*", [b(b"c")]),
                                        b(b"0.25"), i(1), i(0)])


def test_resp3_booleans_after_setresp(rawp, protocol):
    if protocol == 3:
        assert ev(rawp, "redis.setresp(3); return true") == ("#", True)
        assert ev(rawp, "redis.setresp(3); return false") == ("#", False)
    else:
        assert ev(rawp, "redis.setresp(3); return true") == i(1)
        assert ev(rawp, "redis.setresp(3); return false") == i(0)
    assert ev(rawp, "redis.setresp(3); return nil") == nil(protocol)


def test_resp3_doubles_and_big_numbers(rawp, protocol):
    big = b"123456789012345678901234567890"
    if protocol == 3:
        assert ev(rawp, "return {double=-2}") == (",", -2.0)
        assert ev(rawp, "return {double=1/0}") == (",", float("inf"))
        assert ev(rawp, "return {big_number='%s'}" % big.decode()) == ("(", int(big))
        assert ev(rawp, "return {verbatim_string={format='txt', string='hi'}}") == \
            ("=", "txt", b"hi")
    else:
        assert ev(rawp, "return {double=-2}") == b(b"-2")
        assert ev(rawp, "return {double=1/0}") == b(b"inf")
        assert ev(rawp, "return {big_number='%s'}" % big.decode()) == b(big)
        assert ev(rawp, "return {verbatim_string={format='txt', string='hi'}}") == b(b"hi")


def test_resp3_nested_map(rawp, protocol):
    body = "redis.setresp(3); return {map={a={1,2}}, 'x'}"
    if protocol == 3:
        assert ev(rawp, body) == ("%", [(b(b"a"), ("*", [i(1), i(2)]))])
        assert ev(rawp, "return {map={}}") == ("%", [])
    else:
        assert ev(rawp, body) == ("*", [b(b"a"), ("*", [i(1), i(2)])])
        assert ev(rawp, "return {map={}}") == ("*", [])


def test_resp3_replies_pass_through_a_script(rawp, protocol):
    """With setresp(3), a command's RESP3 reply returned as is keeps its type for a RESP3
    client and falls back to RESP2 shapes for a RESP2 one."""
    rawp.call("HSET", "h", "f", "v")
    rawp.call("SADD", "s", "a")
    rawp.call("ZADD", "z", "1.5", "m")
    hgetall = ev(rawp, "redis.setresp(3); return redis.call('HGETALL', KEYS[1])", "h", numkeys=1)
    smembers = ev(rawp, "redis.setresp(3); return redis.call('SMEMBERS', KEYS[1])", "s",
                  numkeys=1)
    zscore = ev(rawp, "redis.setresp(3); return redis.call('ZSCORE', KEYS[1], 'm')", "z",
                numkeys=1)
    get = ev(rawp, "redis.setresp(3); return redis.call('GET', KEYS[1])", "none", numkeys=1)
    if protocol == 3:
        assert hgetall == ("%", [(b(b"f"), b(b"v"))])
        assert smembers == ("~", [b(b"a")])
        assert zscore == (",", 1.5)
    else:
        assert hgetall == ("*", [b(b"f"), b(b"v")])
        assert smembers == ("*", [b(b"a")])
        assert zscore == b(b"1.5")
    assert get == nil(protocol)
    # Without setresp(3) the script speaks RESP2 whatever the client does.
    assert ev(rawp, "return redis.call('HGETALL', KEYS[1])", "h", numkeys=1) == \
        ("*", [b(b"f"), b(b"v")])
    assert ev(rawp, "return redis.call('ZSCORE', KEYS[1], 'm')", "z", numkeys=1) == b(b"1.5")
    assert ev(rawp, "redis.setresp(2); return redis.call('SMEMBERS', KEYS[1])", "s",
              numkeys=1) == ("*", [b(b"a")])


def test_setresp_argument_check(rawp):
    reply = rawp.call("EVAL", "redis.setresp(4)", "0")
    assert reply.startswith("ERR RESP version must be 2 or 3. script: ")


# --- RESP -> Lua (what redis.call hands the script) --------------------------------------------


def test_resp2_replies_in_lua(rawp):
    rawp.call("HSET", "h", "f", "v")
    rawp.call("ZADD", "z", "1.5", "m")
    body = """
        local out = {}
        local function add(v) out[#out + 1] = v end
        local r = redis.call('HGETALL', KEYS[1]); add(type(r)); add(#r); add(r[1]); add(r[2])
        r = redis.call('GET', 'nokey'); add(type(r)); add(tostring(r))
        r = redis.call('PING'); add(type(r)); add(r.ok)
        r = redis.call('EXISTS', KEYS[1]); add(type(r)); add(r)
        r = redis.call('ZSCORE', KEYS[2], 'm'); add(type(r)); add(r)
        r = redis.call('ZSCORE', KEYS[2], 'nope'); add(type(r))
        r = redis.pcall('INCR', KEYS[1]); add(type(r)); add(r.err)
        return out
    """
    assert rawp.call("EVAL", body, "2", "h", "z") == [
        b"table", 2, b"f", b"v", b"boolean", b"false", b"table", b"PONG", b"number", 1,
        b"string", b"1.5", b"boolean", b"table",
        b"WRONGTYPE Operation against a key holding the wrong kind of value"]


def test_resp3_replies_in_lua(rawp):
    rawp.call("HSET", "h", "f", "v")
    rawp.call("SADD", "s", "a")
    rawp.call("ZADD", "z", "1.5", "m")
    body = """
        redis.setresp(3)
        local out = {}
        local function add(v) out[#out + 1] = v end
        local r = redis.call('HGETALL', KEYS[1]); add(type(r.map)); add(r.map.f)
        r = redis.call('SMEMBERS', KEYS[2]); add(type(r.set)); add(tostring(r.set.a))
        r = redis.call('ZSCORE', KEYS[3], 'm'); add(type(r)); add(tostring(r.double))
        r = redis.call('ZSCORE', KEYS[3], 'nope'); add(type(r))
        r = redis.call('GET', 'nokey'); add(type(r))
        return out
    """
    assert rawp.call("EVAL", body, "3", "h", "s", "z") == [
        b"table", b"v", b"table", b"true", b"table", b"1.5", b"nil", b"nil"]


def test_integer_replies_become_lua_numbers(r):
    r.set("n", 41)
    assert r.eval("return redis.call('INCR', KEYS[1]) + 0.5", 1, "n") == 42
    assert r.eval("return redis.call('GET', KEYS[1]) .. '!'", 1, "n") == b"42!"
    assert r.eval("return tonumber(redis.call('GET', KEYS[1])) * 2", 1, "n") == 84


def test_arguments_to_redis_call(r):
    """Numbers passed to redis.call are sent as Lua formats them (%.17g)."""
    assert r.eval("return redis.call('SET', KEYS[1], 1.5)", 1, "k") == b"OK"
    assert r.get("k") == b"1.5"
    r.eval("redis.call('SET', KEYS[1], 10)", 1, "k")
    assert r.get("k") == b"10"
    r.eval("redis.call('SET', KEYS[1], 0.1)", 1, "k")
    assert r.get("k") == b"0.10000000000000001"


def test_redis_py_decodes_script_replies(r, protocol):
    """The same conversions through redis-py's parsers."""
    assert r.eval("return {1, 'two', {3}, false}", 0) == [1, b"two", [3], None]
    assert r.eval("return {ok='fine'}", 0) == b"fine"
    if protocol == 3:
        assert r.eval("return {map={k='v'}}", 0) == {b"k": b"v"}
        assert r.eval("return {double=2.5}", 0) == 2.5
        assert r.eval("redis.setresp(3); return true", 0) is True
    else:
        assert r.eval("return {map={k='v'}}", 0) == [b"k", b"v"]
        assert r.eval("return {double=2.5}", 0) == b"2.5"
