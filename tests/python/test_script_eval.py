"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD/EXISTS/FLUSH, with redis-py and raw RESP.

Every expectation here was observed on redis-server 7.0.15 (`--target=redis`): error texts byte
for byte, the script cache's behaviour as redis-py's `Script` objects rely on it (EVALSHA,
NOSCRIPT, EVAL fallback), read-only scripts, shebang flags, numkeys checks, EVAL inside MULTI
and the script's commands in MONITOR.
"""

from __future__ import annotations

import hashlib

import pytest
import redis

from conftest import Err, Simple, wait_until


def sha1(body: str | bytes) -> str:
    if isinstance(body, str):
        body = body.encode()
    return hashlib.sha1(body).hexdigest()


def script_error(msg: str, body: str, line: int) -> Err:
    """The text Redis 7.0 gives an error raised in an EVAL script at `line`."""
    return Err(f"{msg} script: {sha1(body)}, on @user_script:{line}.")


@pytest.fixture(autouse=True)
def _empty_script_cache(server):
    """FLUSHALL keeps scripts: every test starts with an empty cache."""
    with server.admin() as conn:
        assert conn.call("SCRIPT", "FLUSH") == "OK"


NOSCRIPT = Err("NOSCRIPT No matching script. Please use EVAL.")
RO_WRITE = "ERR Write commands are not allowed from read-only scripts."


# --- EVAL: KEYS, ARGV, numkeys ----------------------------------------------------------------


def test_eval_keys_and_argv(r):
    body = "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}"
    assert r.eval(body, 2, "a", "b", "x", "y") == [b"a", b"b", b"x", b"y", 2, 2]
    assert r.eval("return {#KEYS, #ARGV}", 0) == [0, 0]
    assert r.eval("return ARGV", 0, "1", "2", "3") == [b"1", b"2", b"3"]
    assert r.eval("return KEYS", 3, "k1", "k2", "k3") == [b"k1", b"k2", b"k3"]


def test_a_script_changes_to_keys_and_argv_do_not_reach_the_next_run(rawp):
    # Redis makes KEYS and ARGV afresh for every run; larder fills the same two tables again
    # (one connection: one worker thread, one interpreter), undoing what a script did.
    assert rawp.call(
        "EVAL", "KEYS[5] = 'x'; KEYS.extra = 1; rawset(ARGV, 'f', 2); "
        "setmetatable(ARGV, {__index = function() return 'm' end}); "
        "return {#KEYS, KEYS[5], ARGV[9]}", "1", "a", "v") == [1, b"x", b"m"]
    assert rawp.call(
        "EVAL", "return {#KEYS, #ARGV, tostring(KEYS[5]), tostring(KEYS.extra), "
        "tostring(ARGV.f), tostring(getmetatable(ARGV)), tostring(ARGV[9]), KEYS[1]}",
        "1", "b") == [1, 0, b"nil", b"nil", b"nil", b"nil", b"nil", b"b"]
    assert rawp.call("EVAL", "table.remove(KEYS, 1); KEYS[1] = nil; return #KEYS",
                     "2", "a", "b") == 0
    assert rawp.call("EVAL", "return {#KEYS, KEYS[1], KEYS[2]}", "2", "c", "d") == [
        2, b"c", b"d"]
    # A table grown past what is filled in place, by the script or by many keys, is
    # replaced; the next runs see only their own.
    assert rawp.call("EVAL", "for i = 1, 1000 do KEYS[i] = i end return #KEYS", "0") == 1000
    assert rawp.call("EVAL", "return {#KEYS, KEYS[1]}", "1", "z") == [1, b"z"]
    many = [f"k{i}" for i in range(200)]
    assert rawp.call("EVAL", "return #KEYS", "200", *many) == 200
    assert rawp.call("EVAL", "return {#KEYS, #ARGV, KEYS[2]}", "2", "x", "y", "a1") == [
        2, 1, b"y"]


def test_eval_arguments_are_binary_safe(r):
    blob = bytes(range(256))
    assert r.eval("return ARGV[1]", 0, blob) == blob
    assert r.eval("return #ARGV[1]", 0, blob) == 256
    r.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, "bin", blob)
    assert r.get("bin") == blob


def test_eval_runs_commands(r):
    body = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[1], ARGV[2])"
    assert r.eval(body, 1, "n", "10", "5") == 15
    assert r.get("n") == b"15"


def test_numkeys_errors(rawp):
    assert rawp.call("EVAL", "return 1", "2", "a") == \
        Err("ERR Number of keys can't be greater than number of args")
    assert rawp.call("EVAL", "return 1", "-1") == Err("ERR Number of keys can't be negative")
    assert rawp.call("EVAL", "return 1", "x") == \
        Err("ERR value is not an integer or out of range")
    assert rawp.call("EVAL", "return 1") == \
        Err("ERR wrong number of arguments for 'eval' command")
    assert rawp.call("EVALSHA", sha1("return 1"), "3", "a", "b") == \
        Err("ERR Number of keys can't be greater than number of args")
    # numkeys equal to the number of remaining arguments is fine: all keys, no ARGV.
    assert rawp.call("EVAL", "return #KEYS + #ARGV * 100", "2", "a", "b") == 2


def test_numkeys_error_with_redis_py(r):
    with pytest.raises(redis.ResponseError, match="Number of keys can't be greater"):
        r.eval("return 1", 3, "a")
    with pytest.raises(redis.ResponseError, match="Number of keys can't be negative"):
        r.eval("return 1", -2)


# --- the script cache: EVALSHA, SCRIPT LOAD/EXISTS/FLUSH, Script objects -----------------------


def test_script_load_returns_sha1_and_evalsha_runs_it(r):
    body = "return 'loaded ' .. ARGV[1]"
    sha = r.script_load(body)
    assert sha == sha1(body)
    assert r.evalsha(sha, 0, "x") == b"loaded x"
    # Upper-case hex names the same script.
    assert r.evalsha(sha.upper(), 0, "y") == b"loaded y"


def test_eval_caches_the_script(r):
    body = "return 42 -- cached by EVAL"
    assert r.script_exists(sha1(body)) == [False]
    assert r.eval(body, 0) == 42
    assert r.script_exists(sha1(body)) == [True]
    assert r.evalsha(sha1(body), 0) == 42


def test_evalsha_unknown_is_noscript(rawp, r):
    assert rawp.call("EVALSHA", "f" * 40, "0") == NOSCRIPT
    assert rawp.call("EVALSHA", "not-a-sha", "0") == NOSCRIPT
    with pytest.raises(redis.exceptions.NoScriptError):
        r.evalsha("0" * 40, 0)


def test_script_exists_many(r):
    a = r.script_load("return 'a'")
    b = sha1("return 'b'")
    assert r.script_exists(a, b, a.upper(), "short") == [True, False, True, False]


@pytest.mark.parametrize("mode", [None, "SYNC", "ASYNC"])
def test_script_flush(r, rawp, mode):
    sha = r.script_load("return 'flush me'")
    args = ("SCRIPT", "FLUSH") + ((mode,) if mode else ())
    assert rawp.call(*args) == "OK"
    assert r.script_exists(sha) == [False]
    assert rawp.call("EVALSHA", sha, "0") == NOSCRIPT


def test_script_flush_redis_py_and_bad_option(r, rawp):
    r.script_load("return 1")
    assert r.script_flush("ASYNC") is True
    assert r.script_flush("SYNC") is True
    assert rawp.call("SCRIPT", "FLUSH", "BOGUS") == \
        Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    assert rawp.call("SCRIPT", "BOGUS") == Err("ERR unknown subcommand 'BOGUS'. Try SCRIPT HELP.")
    assert rawp.call("SCRIPT", "EXISTS") == \
        Err("ERR wrong number of arguments for 'script|exists' command")


def test_script_load_compile_error(rawp):
    msg = "ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'"
    assert rawp.call("SCRIPT", "LOAD", "return +") == Err(msg)
    assert rawp.call("EVAL", "return +", "0") == Err(msg)
    assert rawp.call("SCRIPT", "EXISTS", sha1("return +")) == [0]


def test_register_script_object(r):
    incr_by = r.register_script(
        "local v = redis.call('INCRBY', KEYS[1], ARGV[1]); return v * 2")
    assert incr_by.sha == sha1(incr_by.script)
    assert incr_by(keys=["cnt"], args=[5]) == 10
    assert incr_by(keys=["cnt"], args=[1]) == 12
    assert r.script_exists(incr_by.sha) == [True]


def test_register_script_recovers_from_flush(r):
    """redis-py's Script runs EVALSHA and, on NOSCRIPT, loads the script and retries."""
    script = r.register_script("return redis.call('GET', KEYS[1])")
    r.set("k", "v1")
    assert script(keys=["k"]) == b"v1"
    r.script_flush()
    assert r.script_exists(script.sha) == [False]
    r.set("k", "v2")
    assert script(keys=["k"]) == b"v2"
    assert r.script_exists(script.sha) == [True]


def test_register_script_in_pipeline(r):
    script = r.register_script("return redis.call('INCR', KEYS[1])")
    r.script_flush()
    with r.pipeline() as p:
        script(keys=["pc"], client=p)
        script(keys=["pc"], client=p)
        p.get("pc")
        assert p.execute() == [1, 2, b"2"]


# --- read-only scripts --------------------------------------------------------------------------


def test_eval_ro_refuses_writes(rawp, r):
    body = "return redis.call('SET', KEYS[1], 'v')"
    assert rawp.call("EVAL_RO", body, "1", "k") == script_error(RO_WRITE, body, 1)
    assert r.exists("k") == 0
    # A read works.
    r.set("k", "here")
    assert r.eval_ro("return redis.call('GET', KEYS[1])", 1, "k") == b"here"


def test_evalsha_ro(rawp, r):
    write = "redis.call('DEL', KEYS[1]); return 1"
    read = "return redis.call('STRLEN', KEYS[1])"
    r.set("k", "abc")
    ws, rs = r.script_load(write), r.script_load(read)
    assert r.evalsha_ro(rs, 1, "k") == 3
    assert rawp.call("EVALSHA_RO", ws, "1", "k") == script_error(RO_WRITE, write, 1)
    assert r.get("k") == b"abc"
    assert rawp.call("EVALSHA_RO", "a" * 40, "0") == NOSCRIPT


def test_eval_ro_pcall_sees_the_refusal_as_an_error_table(r):
    body = "local e = redis.pcall('SET', KEYS[1], 'v'); return e.err"
    assert r.eval_ro(body, 1, "k") == RO_WRITE.encode()


# --- shebang flags --------------------------------------------------------------------------------


def test_shebang_no_writes(rawp, r):
    body = "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')"
    assert rawp.call("EVAL", body, "1", "k") == script_error(RO_WRITE, body, 2)
    assert r.exists("k") == 0
    read = "#!lua flags=no-writes\nreturn redis.call('EXISTS', KEYS[1])"
    assert r.eval(read, 1, "k") == 0
    assert r.eval_ro(read, 1, "k") == 0


def test_shebang_without_flags_may_write(r):
    assert r.eval("#!lua\nreturn redis.call('SET', KEYS[1], 'v')", 1, "k") == b"OK"
    assert r.get("k") == b"v"


def test_shebang_many_flags(r):
    body = "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster\nreturn 'flags ok'"
    assert r.eval(body, 0) == b"flags ok"
    assert r.eval("#!lua flags=allow-cross-slot-keys\nreturn 7", 0) == 7
    assert r.eval("#!lua flags=\nreturn 8", 0) == 8


def test_shebang_errors(rawp):
    assert rawp.call("EVAL", "#!lua flags=bogus\nreturn 1", "0") == \
        Err("ERR Unexpected flag in script shebang: bogus")
    assert rawp.call("EVAL", "#!python\nreturn 1", "0") == \
        Err("ERR Unexpected engine in script shebang: #!python")
    assert rawp.call("EVAL", "#!lua name=x\nreturn 1", "0") == \
        Err("ERR Unknown lua shebang option: name=x")
    assert rawp.call("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1") == \
        Err("ERR Unexpected flag in script shebang: bogus")


def test_eval_ro_with_a_writing_shebang_script_is_refused(rawp):
    msg = Err("ERR Can not execute a script with write flag using *_ro command.")
    assert rawp.call("EVAL_RO", "#!lua\nreturn 1", "0") == msg
    sha = rawp.call("SCRIPT", "LOAD", "#!lua flags=allow-oom\nreturn 1")
    assert rawp.call("EVALSHA_RO", sha, "0") == msg
    assert rawp.call("EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0") == 1


# --- errors from redis.call and redis.pcall ------------------------------------------------------


def test_call_error_texts(rawp):
    rawp.call("RPUSH", "lst", "a")
    cases = [
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call('INCR', KEYS[1])",
         "WRONGTYPE Operation against a key holding the wrong kind of value"),
        ("return redis.call('GET')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call()", "ERR Please specify at least one argument for this redis lib call"),
        ("return redis.call('MULTI')", "ERR This Redis command is not allowed from script"),
        ("return redis.call('EVAL', 'return 1', '0')",
         "ERR This Redis command is not allowed from script"),
        ("return redis.call('SUBSCRIBE', 'x')",
         "ERR This Redis command is not allowed from script"),
        ("return redis.call('SET', {}, 'v')",
         "ERR Lua redis lib command arguments must be strings or integers"),
    ]
    for body, msg in cases:
        assert rawp.call("EVAL", body, "1", "lst") == script_error(msg, body, 1), body


def test_pcall_returns_the_error_instead(rawp):
    rawp.call("RPUSH", "lst", "a")
    assert rawp.call("EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "lst") == \
        Err("WRONGTYPE Operation against a key holding the wrong kind of value")
    assert rawp.call("EVAL", "return redis.pcall('nosuch')", "0") == \
        Err("ERR Unknown Redis command called from script")
    assert rawp.call("EVAL", "return redis.pcall('GET')", "0") == \
        Err("ERR Wrong number of args calling Redis command from script")
    body = "local e = redis.pcall('INCR', KEYS[1]); return {type(e), e.err}"
    assert rawp.call("EVAL", body, "1", "lst") == \
        [b"table", b"WRONGTYPE Operation against a key holding the wrong kind of value"]


def test_script_continues_after_pcall_error(r):
    r.rpush("lst", "a")
    body = """
        local e = redis.pcall('INCR', KEYS[1])
        redis.call('SET', KEYS[2], 'after')
        return redis.call('GET', KEYS[2])
    """
    assert r.eval(body, 2, "lst", "k2") == b"after"
    assert r.get("k2") == b"after"


def test_runtime_errors(rawp):
    body = "error('boom')"
    assert rawp.call("EVAL", body, "0") == script_error("ERR user_script:1: boom", body, 1)
    body = "error({err='MYERR custom'})"
    assert rawp.call("EVAL", body, "0") == script_error("MYERR custom", body, 1)
    body = "local t = nil\nreturn t.x"
    assert rawp.call("EVAL", body, "0") == \
        script_error("ERR user_script:2: attempt to index local 't' (a nil value)", body, 2)
    body = "return undefined_global"
    assert rawp.call("EVAL", body, "0") == script_error(
        "ERR user_script:1: Script attempted to access nonexistent global variable "
        "'undefined_global'", body, 1)
    body = "x = 1"
    assert rawp.call("EVAL", body, "0") == \
        script_error("ERR user_script:1: Attempt to modify a readonly table", body, 1)


def test_writes_before_an_error_stay(r):
    """Redis has no rollback: what a script wrote before failing is kept."""
    body = "redis.call('SET', KEYS[1], 'written'); error('then fail')"
    with pytest.raises(redis.ResponseError):
        r.eval(body, 1, "k")
    assert r.get("k") == b"written"


def test_redis_log_is_accepted(rawp):
    body = "redis.log(redis.LOG_WARNING, 'hello from a test'); " \
           "redis.log(redis.LOG_DEBUG, 'a', 'b', 3); return 1"
    assert rawp.call("EVAL", body, "0") == 1
    body = "redis.log(99, 'x')"
    assert rawp.call("EVAL", body, "0") == script_error("ERR Invalid debug level.", body, 1)
    levels = "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"
    assert rawp.call("EVAL", levels, "0") == [0, 1, 2, 3]


def test_redis_version(r):
    version, num = r.eval("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", 0)
    major, minor, patch = (int(x) for x in version.split(b"."))
    assert num == (major << 16) | (minor << 8) | patch
    assert major >= 7


# --- EVAL inside MULTI, and in MONITOR ------------------------------------------------------------


def test_eval_inside_multi(rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "k", "1") == "QUEUED"
    assert rawp.call("EVAL", "return redis.call('INCR', KEYS[1])", "1", "k") == "QUEUED"
    assert rawp.call("EVALSHA", "e" * 40, "0") == "QUEUED"
    assert rawp.call("EVAL", "return redis.call('GET', KEYS[1])", "1", "k") == "QUEUED"
    assert rawp.call("EXEC") == ["OK", 2, NOSCRIPT, b"2"]


def test_eval_in_redis_py_transaction(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", 5)
        p.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, "a", 10)
        p.get("a")
        assert p.execute() == [True, 15, b"15"]


def test_script_commands_appear_in_monitor(server):
    mon = server.raw()
    assert mon.call("MONITOR") == Simple("OK")
    c = server.raw()
    assert c.call("EVAL", "return redis.call('SET', KEYS[1], 'mv')", "1", "mk") == "OK"
    lines: list[bytes] = []

    def seen() -> bool:
        lines.extend(mon.read_until_idle(idle=0.1, total=0.5).split(b"\r\n"))
        return any(b'"SET" "mk" "mv"' in ln for ln in lines)

    assert wait_until(seen, timeout=3.0), lines
    eval_line = next(ln for ln in lines if b'"EVAL"' in ln)
    set_line = next(ln for ln in lines if b'"SET" "mk" "mv"' in ln)
    assert lines.index(eval_line) < lines.index(set_line)
    assert b" [0 lua] " in set_line
