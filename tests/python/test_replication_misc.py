"""Replication odds and ends: function libraries in a full resync's file (a redis-server
master's and a larder master's) replace a larder replica's own, `FUNCTION LOAD`/`DELETE` in
the stream apply; scripts on a replica whose master is gone with `replica-serve-stale-data
no` are refused (`-MASTERDOWN`) unless flagged `allow-stale`, compared reply for reply with a
redis-server replica of the same master.
"""

from __future__ import annotations

import pytest
import redis

from conftest import Server
from test_replication_master import info, until

pytestmark = pytest.mark.larder_only

LIB = """#!lua name=lib
redis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
redis.register_function{function_name='stale', callback=function() return 2 end, flags={'no-writes', 'allow-stale'}}
redis.register_function{function_name='staleget', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes', 'allow-stale'}}
redis.register_function{function_name='w', callback=function(keys) return redis.call('set', keys[1], 'w') end}
"""
MINE = "#!lua name=mine\nredis.register_function('mine', function() return 1 end)"
LATER = "#!lua name=later\nredis.register_function{function_name='later', " \
        "callback=function() return 'later' end, flags={'no-writes'}}"


def link(srv: Server) -> str:
    return info(srv, "replication").get("master_link_status", "")


def libraries(c: redis.Redis) -> list[str]:
    return sorted(lib[1] for lib in c.execute_command("FUNCTION", "LIST"))


def functions_follow(master: Server, rep: Server) -> None:
    """`rep` (a larder with its own library) follows `master`, which holds LIB and key k."""
    r = rep.client(protocol=2, decode_responses=True)
    r.execute_command("FUNCTION", "LOAD", MINE)
    assert r.execute_command("REPLICAOF", "127.0.0.1", master.port) == "OK"
    until("master_link_status:up", lambda: link(rep) == "up")
    until("the key arrives", lambda: r.get("k") == "v")
    assert libraries(r) == ["lib"]
    assert r.execute_command("FCALL_RO", "ro", 1, "k") == "v"
    m = master.client(protocol=2, decode_responses=True)
    m.execute_command("FUNCTION", "LOAD", LATER)
    until("FUNCTION LOAD arrives", lambda: libraries(r) == ["later", "lib"])
    assert r.execute_command("FCALL_RO", "later", 0) == "later"
    m.execute_command("FUNCTION", "DELETE", "lib")
    until("FUNCTION DELETE arrives", lambda: libraries(r) == ["later"])


def master_with_lib(srv: Server) -> Server:
    m = srv.client(protocol=2)
    m.execute_command("FUNCTION", "LOAD", LIB)
    m.set("k", "v")
    return srv


def test_functions_from_a_redis_master(start_server, redis_factory) -> None:
    functions_follow(master_with_lib(redis_factory()), start_server())


def test_functions_from_a_larder_master(start_server) -> None:
    functions_follow(master_with_lib(start_server()), start_server())


def outcome(c: redis.Redis, *args) -> str:
    try:
        return repr(c.execute_command(*args))
    except redis.ResponseError as e:
        return f"error: {e}"


CASES = [
    ("EVAL", "return 1", 0),
    ("EVAL", "#!lua flags=no-writes\nreturn 1", 0),
    ("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0),
    ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn 1", 0),
    ("EVAL_RO", "#!lua flags=allow-stale,no-writes\nreturn 1", 0),
    ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('ping')", 0),
    ("EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.pcall('get', 'k')['err']", 0),
    ("EVAL", "#!lua\nreturn 1", 0),
    ("EVAL", "#!lua flags=allow-stale\nreturn 1", 0),
    ("FCALL", "ro", 1, "k"),
    ("FCALL_RO", "ro", 1, "k"),
    ("FCALL", "stale", 0),
    ("FCALL_RO", "stale", 0),
    ("FCALL", "w", 1, "k"),
    ("FCALL", "nosuch", 0),
]


def test_scripts_on_a_stale_replica_as_redis(start_server, redis_factory) -> None:
    master = master_with_lib(start_server())
    stale = ("--replica-serve-stale-data", "no")
    mine = start_server(*stale, "--replicaof", f"127.0.0.1 {master.port}")
    theirs = redis_factory(*stale, "--replicaof", "127.0.0.1", str(master.port))
    for rep in (mine, theirs):
        until("master_link_status:up", lambda: link(rep) == "up")
        until("the key arrives", lambda: rep.client(protocol=2).get("k") == b"v")
    # Connected: scripts run.
    assert mine.client(protocol=2).execute_command("FCALL_RO", "ro", 1, "k") == b"v"
    master.kill()
    for rep in (mine, theirs):
        until("master_link_status:down", lambda: link(rep) == "down")
    ours, ref = mine.client(protocol=2), theirs.client(protocol=2)
    got = [outcome(ours, *case) for case in CASES]
    want = [outcome(ref, *case) for case in CASES]
    assert got == want
    masterdown = "Link with MASTER is down and replica-serve-stale-data is set to 'no'."
    assert all(masterdown in got[i] for i in (0, 1, 2, 9, 10))
    assert (got[3], got[4], got[11], got[12]) == ("1", "1", "2", "2")
    # PING has no `stale` flag either: a script's call of it is refused.
    assert got[5].startswith("error: Can not execute the command on a stale replica script:")
    assert got[6] == "b'ERR Can not execute the command on a stale replica'"
    # The stale-data gate off: everything read-only runs.
    for c in (ours, ref):
        c.config_set("replica-serve-stale-data", "yes")
    assert [outcome(ours, *case) for case in CASES] == [outcome(ref, *case) for case in CASES]
    assert ours.execute_command("FCALL_RO", "staleget", 1, "k") == b"v"
