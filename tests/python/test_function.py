"""Functions: FUNCTION LOAD [REPLACE] DELETE FLUSH LIST DUMP RESTORE STATS, FCALL and FCALL_RO,
with redis-py and raw RESP, in RESP2 and RESP3.

Expectations observed on redis-server 7.0.15 (`--target=redis`): error texts byte for byte, the
exact reply shapes of FUNCTION LIST and FUNCTION STATS per protocol (libraries and functions
compared without order: Redis lists them in its dictionaries' order), function flags
(no-writes refused by FCALL_RO's counterpart checks), and DUMP/RESTORE round trips with each
policy on one server. Persistence across restarts is test_function_persist.py's.
"""

from __future__ import annotations

import pytest
import redis

from conftest import Err


@pytest.fixture(autouse=True)
def _no_functions(server):
    """FLUSHALL keeps functions: every test starts with none."""
    with server.admin() as conn:
        assert conn.call("FUNCTION", "FLUSH") == "OK"


LIB = """#!lua name=mylib
redis.register_function('myfunc', function(keys, args) return redis.call('INCR', keys[1]) end)
redis.register_function{function_name='ro', callback=function(keys, args)
  return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads'}
"""

ECHO = """#!lua name=echo
redis.register_function('echo', function(keys, args) return {keys[1], args[1], #keys, #args} end)
"""

ERRS = """#!lua name=errs
redis.register_function{function_name='wr', callback=function(keys, args)
  return redis.call('SET', keys[1], 'x') end, flags={'no-writes'}}
redis.register_function('boom', function() error('bad') end)
redis.register_function('callerr', function(keys) return redis.call('INCR', keys[1]) end)
"""

BAD_NAME = ("Library names can only contain letters, numbers, or underscores(_) and must be "
            "at least one character long")
RO_WITH_WRITE = Err("ERR Can not execute a script with write flag using *_ro command.")


def lib(name: str, *functions: str) -> str:
    """A library `name` whose functions return their own names."""
    body = "".join(f"redis.register_function('{f}', function() return '{f}' end)\n"
                   for f in functions)
    return f"#!lua name={name}\n{body}"


# --- FUNCTION LOAD ---------------------------------------------------------------------------


def test_load_and_fcall(r):
    assert r.function_load(LIB) == b"mylib"
    assert r.fcall("myfunc", 1, "k") == 1
    assert r.fcall("myfunc", 1, "k") == 2
    assert r.fcall("ro", 1, "k") == b"2"
    assert r.fcall_ro("ro", 1, "k") == b"2"


def test_fcall_keys_and_args(r):
    r.function_load(ECHO)
    assert r.fcall("echo", 1, "k", "a") == [b"k", b"a", 1, 1]
    # keys[1] is nil: the reply table is cut there.
    assert r.fcall("echo", 0) == []
    assert r.fcall("echo", 2, "k1", "k2") == [b"k1"]


def test_a_function_can_keep_its_keys_table_and_the_next_call_gets_a_new_one(rawp):
    # A library's upvalues outlive a call, so a function's arguments are made afresh for
    # every call (as in Redis), unlike EVAL's KEYS and ARGV.
    code = """#!lua name=stash
local saved
redis.register_function('keep', function(keys, args)
  if saved then return {tostring(rawequal(saved, keys)), #saved, saved[1], keys[1]} end
  saved = keys
  return 'kept'
end)
"""
    assert rawp.call("FUNCTION", "LOAD", code) == b"stash"
    assert rawp.call("FCALL", "keep", "1", "a") == b"kept"
    assert rawp.call("FCALL", "keep", "1", "b") == [b"false", 1, b"a", b"b"]


def test_load_replace(r, rawp):
    assert rawp.call("FUNCTION", "LOAD", lib("l1", "f1")) == b"l1"
    assert rawp.call("FUNCTION", "LOAD", lib("l1", "f2")) == Err("ERR Library 'l1' already exists")
    assert rawp.call("FCALL", "f1", "0") == b"f1"
    assert r.function_load(lib("l1", "f2", "f3"), replace=True) == b"l1"
    assert rawp.call("FCALL", "f2", "0") == b"f2"
    assert rawp.call("FCALL", "f1", "0") == Err("ERR Function not found")


def test_load_errors(rawp):
    rawp.call("FUNCTION", "LOAD", LIB)
    cases = [
        ("redis.register_function('f', function() return 1 end)",
         "ERR Missing library metadata"),
        ("#!lua\nredis.register_function('f', function() return 1 end)",
         "ERR Library name was not given"),
        ("#!python name=x\nredis.register_function('f', function() return 1 end)",
         "ERR Engine 'python' not found"),
        (lib("lib2", "myfunc"), "ERR Function myfunc already exists"),
        ("#!lua name=lib3\nreturn 1", "ERR No functions registered"),
        ("#!lua name=lib3\nredis.call('PING')",
         "ERR Error registering functions: ERR user_function:2: Script attempted to access "
         "nonexistent global variable 'call'"),
        ("#!lua name=lib3\nredis.register_function('bad name', function() return 1 end)",
         "ERR Error registering functions: ERR " + BAD_NAME),
        ("#!lua name=lib3\nredis.register_function('f1', function() return 1 end)\n"
         "redis.register_function('f1', function() return 1 end)",
         "ERR Error registering functions: ERR Function already exists in the library"),
        ("#!lua name=lib3\nredis.register_function{function_name='f', "
         "callback=function() return 1 end, flags={'bogus'}}",
         "ERR Error registering functions: ERR unknown flag given"),
        ("#!lua name=lib3\nredis.register_function('f', 'notfn')",
         "ERR Error registering functions: ERR second argument to redis.register_function "
         "must be a function"),
        ("#!lua name=lib3\nlocal x = +",
         "ERR Error compiling function: user_function:2: unexpected symbol near '+'"),
        ("#!lua name=lib3 flags=no-writes\nredis.register_function('f', function() return 1 end)",
         "ERR Invalid metadata value given: flags=no-writes"),
        ("#!lua name=\nredis.register_function('f', function() return 1 end)", "ERR " + BAD_NAME),
        ("#!lua name=bad-name!\nredis.register_function('f', function() return 1 end)",
         "ERR " + BAD_NAME),
    ]
    for code, msg in cases:
        assert rawp.call("FUNCTION", "LOAD", code) == Err(msg), code
    assert rawp.call("FUNCTION", "LOAD") == \
        Err("ERR wrong number of arguments for 'function|load' command")
    assert rawp.call("FUNCTION", "LOAD", "REPLACE") == Err("ERR Missing library metadata")
    assert rawp.call("FUNCTION", "LOAD", "BOGUS", "x") == Err("ERR Unknown option given: BOGUS")
    # A failed load leaves nothing behind.
    assert [lib_[b"library_name"] if isinstance(lib_, dict) else lib_[1]
            for lib_ in rawp.call("FUNCTION", "LIST")] == [b"mylib"]


def test_redis_call_refused_at_load_time_but_fine_in_a_function(r):
    code = "#!lua name=lazy\nredis.register_function('f', function(k) " \
           "return redis.call('PING') end)"
    assert r.function_load(code) == b"lazy"
    assert r.fcall("f", 0) == b"PONG"


# --- FCALL / FCALL_RO: errors and flags ------------------------------------------------------


def test_fcall_errors(rawp):
    rawp.call("FUNCTION", "LOAD", ERRS)
    rawp.call("FUNCTION", "LOAD", ECHO)
    rawp.call("RPUSH", "lst", "x")
    assert rawp.call("FCALL", "wr", "1", "k") == Err(
        "ERR Write commands are not allowed from read-only scripts. script: wr, "
        "on @user_function:3.")
    assert rawp.call("FCALL", "boom", "0") == \
        Err("ERR user_function:4: bad script: boom, on @user_function:4.")
    assert rawp.call("FCALL", "callerr", "1", "lst") == Err(
        "WRONGTYPE Operation against a key holding the wrong kind of value script: callerr, "
        "on @user_function:5.")
    assert rawp.call("FCALL", "nosuch", "0") == Err("ERR Function not found")
    assert rawp.call("FCALL", "echo", "2", "a") == \
        Err("ERR Number of keys can't be greater than number of args")
    assert rawp.call("FCALL", "echo", "-1") == Err("ERR Number of keys can't be negative")
    assert rawp.call("EXISTS", "k") == 0


def test_fcall_ro_and_flags(r, rawp):
    r.function_load(LIB)
    r.set("k", "5")
    assert rawp.call("FCALL_RO", "myfunc", "1", "k") == RO_WITH_WRITE
    assert r.get("k") == b"5"
    assert r.fcall_ro("ro", 1, "k") == b"5"
    with pytest.raises(redis.ResponseError, match="write flag using"):
        r.fcall_ro("myfunc", 1, "k")


def test_function_flags_accepted(r):
    code = ("#!lua name=flagged\nredis.register_function{function_name='f', callback="
            "function() return 1 end, flags={'no-writes', 'allow-oom', 'allow-stale', "
            "'no-cluster', 'allow-cross-slot-keys'}}")
    assert r.function_load(code) == b"flagged"
    assert r.fcall_ro("f", 0) == 1
    [entry] = r.function_list()
    flags = dict(zip(entry[::2], entry[1::2])) if isinstance(entry, list) else entry
    fn = flags[b"functions"][0]
    fn = dict(zip(fn[::2], fn[1::2])) if isinstance(fn, list) else fn
    assert set(fn[b"flags"]) == {b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster",
                                 b"allow-cross-slot-keys"}


def test_fcall_inside_multi(rawp):
    rawp.call("FUNCTION", "LOAD", LIB)
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("FCALL", "myfunc", "1", "m") == "QUEUED"
    assert rawp.call("FCALL", "myfunc", "1", "m") == "QUEUED"
    assert rawp.call("FCALL_RO", "ro", "1", "m") == "QUEUED"
    assert rawp.call("EXEC") == [1, 2, b"2"]


# --- FUNCTION LIST -------------------------------------------------------------------------------


def lib_entries(frame):
    """FUNCTION LIST's frame -> {library name: (engine, {function: (description, flags)},
    code or None)}, checking each level's RESP type on the way."""
    assert frame.kind == "*"
    out = {}
    for entry in frame.value:
        fields = pairs(entry)
        assert list(fields)[:3] == [b"library_name", b"engine", b"functions"]
        funcs = {}
        assert fields[b"functions"].kind == "*"
        for f in fields[b"functions"].value:
            ff = pairs(f)
            assert list(ff) == [b"name", b"description", b"flags"]
            desc = ff[b"description"]
            assert desc.kind in ("$", "_")
            flags = ff[b"flags"]
            assert flags.kind == ("~" if entry.kind == "%" else "*")
            assert all(x.kind == "+" for x in flags.value)
            funcs[ff[b"name"].value] = (desc.value, sorted(x.value for x in flags.value))
        code = fields[b"library_code"].value if b"library_code" in fields else None
        out[fields[b"library_name"].value] = (fields[b"engine"].value, funcs, code)
    return out


def pairs(frame):
    """A RESP3 map or a RESP2 flat array of key/value -> {key bytes: value frame}."""
    if frame.kind == "%":
        return {k.value: v for k, v in frame.value}
    assert frame.kind == "*" and len(frame.value) % 2 == 0
    return {frame.value[i].value: frame.value[i + 1] for i in range(0, len(frame.value), 2)}


def test_list_shape(rawp, protocol):
    rawp.call("FUNCTION", "LOAD", LIB)
    frame = rawp.call_frame("FUNCTION", "LIST")
    assert frame.kind == "*"
    assert frame.value[0].kind == ("%" if protocol == 3 else "*")
    assert lib_entries(frame) == {b"mylib": (b"LUA", {
        b"myfunc": (None, []),
        b"ro": (b"reads", ["no-writes"]),
    }, None)}


def test_list_withcode_and_libraryname(rawp):
    rawp.call("FUNCTION", "LOAD", LIB)
    rawp.call("FUNCTION", "LOAD", lib("other", "o1"))
    rawp.call("FUNCTION", "LOAD", lib("myother", "o2"))
    everything = lib_entries(rawp.call_frame("FUNCTION", "LIST", "WITHCODE"))
    assert set(everything) == {b"mylib", b"other", b"myother"}
    assert everything[b"mylib"][2] == LIB.encode()
    assert everything[b"other"][2] == lib("other", "o1").encode()
    mine = lib_entries(rawp.call_frame("FUNCTION", "LIST", "LIBRARYNAME", "my*"))
    assert set(mine) == {b"mylib", b"myother"}
    assert all(code is None for _, _, code in mine.values())
    both = lib_entries(rawp.call_frame("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "*other"))
    assert set(both) == {b"other", b"myother"}
    assert both[b"myother"][2] == lib("myother", "o2").encode()
    assert lib_entries(rawp.call_frame("FUNCTION", "LIST", "LIBRARYNAME", "nomatch")) == {}


def test_list_empty_and_errors(rawp):
    assert rawp.call("FUNCTION", "LIST") == []
    assert rawp.call("FUNCTION", "LIST", "BOGUS") == Err("ERR Unknown argument BOGUS")
    assert rawp.call("FUNCTION", "LIST", "LIBRARYNAME") == \
        Err("ERR library name argument was not given")
    assert rawp.call("FUNCTION", "LIST", "WITHCODE", "WITHCODE") == \
        Err("ERR Unknown argument WITHCODE")
    assert rawp.call("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b") == \
        Err("ERR Unknown argument LIBRARYNAME")


def test_list_with_redis_py(r, protocol):
    r.function_load(LIB)
    [entry] = r.function_list(library="my*", withcode=True)
    if protocol == 2:
        entry = dict(zip(entry[::2], entry[1::2]))
    assert entry[b"library_name"] == b"mylib"
    assert entry[b"engine"] == b"LUA"
    assert entry[b"library_code"] == LIB.encode()
    assert len(entry[b"functions"]) == 2


# --- DELETE, FLUSH, STATS ------------------------------------------------------------------------


def test_delete(r, rawp):
    r.function_load(LIB)
    r.function_load(lib("other", "o1"))
    assert r.function_delete("mylib") is True
    assert rawp.call("FCALL", "myfunc", "1", "k") == Err("ERR Function not found")
    assert rawp.call("FCALL", "o1", "0") == b"o1"
    assert rawp.call("FUNCTION", "DELETE", "mylib") == Err("ERR Library not found")
    # The name is free again, and so are its functions' names.
    assert r.function_load(lib("again", "myfunc")) == b"again"


@pytest.mark.parametrize("mode", [None, "SYNC", "ASYNC"])
def test_flush(rawp, mode):
    rawp.call("FUNCTION", "LOAD", LIB)
    args = ("FUNCTION", "FLUSH") + ((mode,) if mode else ())
    assert rawp.call(*args) == "OK"
    assert rawp.call("FUNCTION", "LIST") == []
    assert rawp.call("FCALL", "myfunc", "1", "k") == Err("ERR Function not found")
    assert rawp.call("FUNCTION", "FLUSH", "BOGUS") == \
        Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")


def test_flushall_keeps_functions(rawp):
    rawp.call("FUNCTION", "LOAD", LIB)
    assert rawp.call("FLUSHALL") == "OK"
    assert rawp.call("FCALL", "myfunc", "1", "k") == 1


def test_stats(rawp, protocol):
    rawp.call("FUNCTION", "LOAD", LIB)
    rawp.call("FUNCTION", "LOAD", ERRS)
    frame = rawp.call_frame("FUNCTION", "STATS")
    stats = pairs(frame)
    assert list(stats) == [b"running_script", b"engines"]
    assert stats[b"running_script"].kind == ("_" if protocol == 3 else "$")
    assert stats[b"running_script"].value is None
    engines = pairs(stats[b"engines"])
    assert list(engines) == [b"LUA"]
    lua = pairs(engines[b"LUA"])
    assert [(k, v.kind, v.value) for k, v in lua.items()] == [
        (b"libraries_count", ":", 2), (b"functions_count", ":", 5)]
    if protocol == 3:
        assert frame.kind == "%" and stats[b"engines"].kind == "%"


def test_kill_when_idle(rawp):
    assert rawp.call("FUNCTION", "KILL") == Err("NOTBUSY No scripts in execution right now.")
    assert rawp.call("SCRIPT", "KILL") == Err("NOTBUSY No scripts in execution right now.")


# --- DUMP / RESTORE ------------------------------------------------------------------------------


def loaded(rawp) -> dict:
    return {name: code for name, (_, _, code) in
            lib_entries(rawp.call_frame("FUNCTION", "LIST", "WITHCODE")).items()}


def test_dump_restore_round_trip(r, rawp):
    r.function_load(LIB)
    r.function_load(ERRS)
    before = loaded(rawp)
    payload = r.function_dump()
    assert isinstance(payload, bytes) and payload
    r.function_flush()
    assert loaded(rawp) == {}
    assert r.function_restore(payload) is True
    assert loaded(rawp) == before
    assert r.fcall("myfunc", 1, "k") == 1
    # Dumping again gives a payload that restores the same libraries.
    assert rawp.call("FUNCTION", "RESTORE", r.function_dump(), "FLUSH") == "OK"
    assert loaded(rawp) == before


def test_dump_empty(r, rawp):
    payload = r.function_dump()
    r.function_load(LIB)
    assert rawp.call("FUNCTION", "RESTORE", payload, "FLUSH") == "OK"
    assert loaded(rawp) == {}


def test_restore_policies(r, rawp):
    r.function_load(lib("a", "fa"))
    dump_a = r.function_dump()
    r.function_load(lib("a", "fa2"), replace=True)
    r.function_load(lib("b", "fb"))
    # APPEND (the default) refuses a library that exists, and restores nothing.
    assert rawp.call("FUNCTION", "RESTORE", dump_a) == Err("ERR Library a already exists")
    assert rawp.call("FUNCTION", "RESTORE", dump_a, "APPEND") == \
        Err("ERR Library a already exists")
    assert rawp.call("FCALL", "fa2", "0") == b"fa2"
    # REPLACE swaps library a, keeps b.
    assert rawp.call("FUNCTION", "RESTORE", dump_a, "REPLACE") == "OK"
    assert set(loaded(rawp)) == {b"a", b"b"}
    assert rawp.call("FCALL", "fa", "0") == b"fa"
    assert rawp.call("FCALL", "fa2", "0") == Err("ERR Function not found")
    # FLUSH drops everything first.
    assert rawp.call("FUNCTION", "RESTORE", dump_a, "FLUSH") == "OK"
    assert set(loaded(rawp)) == {b"a"}
    # APPEND into a server without the library works.
    r.function_flush()
    r.function_load(lib("c", "fc"))
    assert r.function_restore(dump_a, "APPEND") is True
    assert set(loaded(rawp)) == {b"a", b"c"}


def test_restore_function_name_clash(r, rawp):
    r.function_load(lib("a", "shared"))
    dump_a = r.function_dump()
    r.function_flush()
    r.function_load(lib("z", "shared"))
    assert rawp.call("FUNCTION", "RESTORE", dump_a, "APPEND") == \
        Err("ERR Function shared already exists")
    assert set(loaded(rawp)) == {b"z"}


def test_restore_errors(rawp):
    assert rawp.call("FUNCTION", "RESTORE", "garbage") == \
        Err("ERR DUMP payload version or checksum are wrong")
    assert rawp.call("FUNCTION", "RESTORE", "garbage", "BOGUS") == \
        Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    rawp.call("FUNCTION", "LOAD", LIB)
    payload = rawp.call("FUNCTION", "DUMP")
    corrupt = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    assert rawp.call("FUNCTION", "RESTORE", corrupt) == \
        Err("ERR DUMP payload version or checksum are wrong")


def test_script_and_function_help(r):
    script_help = r.execute_command("SCRIPT", "HELP")
    lines = [x.decode() if isinstance(x, bytes) else x for x in script_help]
    assert lines[0] == "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    for word in ("DEBUG", "EXISTS", "FLUSH", "KILL", "LOAD", "HELP"):
        assert any(line.startswith(word) for line in lines), word
    function_help = r.execute_command("FUNCTION", "HELP")
    lines = [x.decode() if isinstance(x, bytes) else x for x in function_help]
    assert lines[0] == "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    for word in ("LOAD", "DELETE", "LIST", "STATS", "KILL", "FLUSH", "DUMP", "RESTORE", "HELP"):
        assert any(line.startswith(word) for line in lines), word
