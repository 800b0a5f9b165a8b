"""Replication odds and ends: function libraries in a full resync's file (a redis-server
master's and a larder master's) replace a larder replica's own, `FUNCTION LOAD`/`DELETE` in
the stream apply.
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
