"""Sandbox escape attempts from a client: every one is an error reply (Redis 7.0's text where
redis-server gives one) and the server keeps serving, scripts included.

Covered: os/io/loadfile/dofile/require/print/debug/package/getfenv/setfenv are absent; globals
and the library tables are read-only (plain assignment, rawset, setmetatable(_G), the string
metatable); bytecode from string.dump cannot be loaded back; deep recursion and metamethod
loops end in Lua's stack errors; coroutines cannot yield out of the script; and (larder only,
since Redis has no cap) a script that allocates without bound meets the interpreter's memory cap.
"""

from __future__ import annotations

import hashlib

import pytest

from conftest import Err


@pytest.fixture(autouse=True)
def _empty_script_cache(server):
    with server.admin() as conn:
        assert conn.call("SCRIPT", "FLUSH") == "OK"


def script_error(msg: str, body: str, line: int = 1) -> Err:
    sha = hashlib.sha1(body.encode()).hexdigest()
    return Err(f"{msg} script: {sha}, on @user_script:{line}.")


def still_serving(conn) -> None:
    assert conn.call("PING") == "PONG"
    assert conn.call("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "alive", "y") \
        == "OK"
    assert conn.call("GET", "alive") == b"y"


MISSING_GLOBALS = ["os", "io", "loadfile", "dofile", "require", "print", "debug", "package",
                   "module", "newproxy", "getfenv", "setfenv"]


@pytest.mark.parametrize("name", MISSING_GLOBALS)
def test_dangerous_globals_are_absent(rawp, name):
    body = f"return type({name})"
    assert rawp.call("EVAL", body, "0") == script_error(
        f"ERR user_script:1: Script attempted to access nonexistent global variable '{name}'",
        body)
    still_serving(rawp)


def test_escape_calls(rawp):
    cases = {
        "return os.execute('touch /tmp/larder-sandbox-escaped')": "os",
        "return io.open('/etc/passwd'):read('*a')": "io",
        "return loadfile('/etc/passwd')": "loadfile",
        "return dofile('/etc/passwd')": "dofile",
        "return require('os')": "require",
        "setfenv(1, {})": "setfenv",
        "local g = getfenv(0); g.x = 1": "getfenv",
    }
    for body, name in cases.items():
        assert rawp.call("EVAL", body, "0") == script_error(
            f"ERR user_script:1: Script attempted to access nonexistent global variable "
            f"'{name}'", body), body
    assert rawp.call("EVAL", "return rawget(_G, 'os') == nil", "0") == 1
    still_serving(rawp)


def test_globals_are_read_only(rawp):
    readonly = "ERR user_script:1: Attempt to modify a readonly table"
    for body in ("x = 1", "redis.call = function() return 1 end", "string.upper = nil",
                 "cjson.encode = nil", "local mt = getmetatable('') ; mt.__index = nil"):
        assert rawp.call("EVAL", body, "0") == script_error(readonly, body), body
    # rawset and setmetatable are refused from C, so the message has no position.
    for body in ("setmetatable(_G, nil)", "return rawset(_G, 'x', 1)",
                 "rawset(redis, 'call', nil)"):
        assert rawp.call("EVAL", body, "0") == \
            script_error("ERR Attempt to modify a readonly table", body), body
    body = "return {pcall(function() x_global_new = 1 end)}"
    assert rawp.call("EVAL", body, "0") == [None, b"user_script:1: Attempt to modify a "
                                                  b"readonly table"]
    # Nothing leaked into the next script.
    assert rawp.call("EVAL", "return rawget(_G, 'x_global_new') == nil", "0") == 1
    assert rawp.call("EVAL", "return redis.call('PING')", "0") == "PONG"
    still_serving(rawp)


def test_locals_are_fine(r):
    assert r.eval("local x = 1; local function f(a) return a + x end; return f(41)", 0) == 42


def test_bytecode_cannot_be_loaded(rawp):
    body = ("local f, e = loadstring(string.dump(function() return 1 end)); "
            "return {tostring(f), e}")
    assert rawp.call("EVAL", body, "0") == \
        [b"nil", b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"]
    assert rawp.call("EVAL", "return loadstring('return 1 + 1')()", "0") == 2
    # A script body that is bytecode does not compile either.
    reply = rawp.call("EVAL", b"\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00", "0")
    assert isinstance(reply, Err) and reply.startswith("ERR Error compiling script")
    still_serving(rawp)


def test_deep_recursion(rawp):
    body = "local function f(n) return f(n+1) + 1 end return f(1)"
    assert rawp.call("EVAL", body, "0") == script_error("ERR user_script:1: stack overflow", body)
    body = ("local t = {} setmetatable(t, {__index = function(t,k) return t[k] end}) "
            "return t.x")
    assert rawp.call("EVAL", body, "0") == \
        script_error("ERR user_script:1: C stack overflow", body)
    still_serving(rawp)


def test_deep_recursion_through_pcall(rawp):
    """pcall nests until Lua's C stack limit (200 levels in 5.1); the innermost pcall gets
    the error, every other one succeeds."""
    body = "local function f() return pcall(f) end return {f()}"
    reply = rawp.call("EVAL", body, "0")
    assert reply[-2:] == [None, b"C stack overflow"]
    assert set(reply[:-2]) == {1} and len(reply) > 100
    still_serving(rawp)


def test_coroutines(rawp):
    body = "return coroutine.yield(1)"
    assert rawp.call("EVAL", body, "0") == \
        script_error("ERR attempt to yield across metamethod/C-call boundary", body)
    body = ("local co = coroutine.wrap(function() return redis.call('SET', KEYS[1], 'co') end); "
            "return co()")
    assert rawp.call("EVAL", body, "1", "cok") == "OK"
    assert rawp.call("GET", "cok") == b"co"
    body = ("local co = coroutine.create(function() error('inside') end); "
            "local ok, e = coroutine.resume(co); return {tostring(ok), e}")
    assert rawp.call("EVAL", body, "0") == [b"false", b"user_script:1: inside"]
    body = ("local t = {} for i = 1, 10000 do t[i] = coroutine.create(function() "
            "coroutine.yield() end); coroutine.resume(t[i]) end return #t")
    assert rawp.call("EVAL", body, "0") == 10000
    # A coroutine left suspended mid-way does not leak into the next run.
    body = ("local co = coroutine.create(function() redis.call('INCR', KEYS[1]); "
            "coroutine.yield(); redis.call('INCR', KEYS[1]) end); coroutine.resume(co); "
            "return 1")
    assert rawp.call("EVAL", body, "1", "half") == 1
    assert rawp.call("GET", "half") == b"1"
    still_serving(rawp)


def test_big_but_bounded_allocations_work(rawp):
    body = ("local s = string.rep('x', 1000); local t = {}; for i=1,1000 do t[i] = s end; "
            "return #table.concat(t)")
    assert rawp.call("EVAL", body, "0") == 1_000_000
    assert rawp.call("EVAL", "local t = {} for i=1,1e6 do t[i] = i end return #t", "0") == \
        1_000_000
    assert rawp.call("EVAL", "return #string.rep('x', 16 * 1024 * 1024)", "0") == 16 << 20


@pytest.mark.larder_only
def test_memory_cap(rawp):
    """Larder caps each interpreter's memory; a script that allocates without bound fails
    with an error reply instead of taking the server's memory (Redis has no cap: it would
    allocate until the machine runs out, so this test is larder's only). 4 GiB of 1 MiB
    strings is past any sensible cap."""
    for body in ("local s = string.rep('x', 2^20); local t = {}; "
                 "for i = 1, 4096 do t[i] = s .. i end; return #t",
                 "return #string.rep('x', 2^31 - 1)",
                 "local s = 'x'; for i = 1, 32 do s = s .. s end; return #s"):
        reply = rawp.call("EVAL", body, "0")
        assert isinstance(reply, Err), (body, reply)
        assert "memory" in reply.lower(), reply
        still_serving(rawp)
    # The interpreter has its memory back: a normal allocation works.
    assert rawp.call("EVAL", "return #string.rep('y', 1024 * 1024)", "0") == 1 << 20
