"""A script's effects in the append-only log: what a script wrote survives kill -9, replayed
from its commands (not from the script, which is gone from the cache after a restart), with
relative deadlines made absolute, and an abandoned narrow run (a script that reached a key it
did not declare) leaves nothing of itself behind in the log.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.larder_only


def test_script_effects_survive_kill_9(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    body = ("redis.call('INCRBY', KEYS[1], ARGV[1]) "
            "redis.call('SET', KEYS[2], ARGV[2], 'EX', 1000) "
            "redis.call('RPUSH', KEYS[3], 'a', 'b') "
            "return redis.call('GET', KEYS[1])")
    sha = c.script_load(body)
    for _ in range(3):
        c.evalsha(sha, 3, "counter", "tok", "list", 5, "v")
    ttl_before = c.pttl("tok")
    srv.kill()
    srv = srv.start()
    c = srv.client()
    assert c.get("counter") == b"15"
    assert c.get("tok") == b"v"
    assert c.lrange("list", 0, -1) == [b"a", b"b"] * 3
    # The deadline was logged as an absolute time: no second of credit after the restart.
    assert 0 < c.pttl("tok") <= ttl_before
    # The script itself was never logged: the cache is empty, and nothing failed to replay.
    assert c.script_exists(sha) == [False]


def test_an_abandoned_run_is_not_logged(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    # Declares one key, writes it, then reaches another: the first run is put back and the
    # script runs again with its database locked. Only the second run's writes are logged.
    body = ("redis.call('INCR', KEYS[1]) "
            "redis.call('INCR', 'undeclared:' .. ARGV[1]) "
            "return redis.call('GET', KEYS[1])")
    for i in range(20):
        assert c.eval(body, 1, "declared", i) == str(i + 1).encode()
    srv.kill()
    srv = srv.start()
    c = srv.client()
    assert c.get("declared") == b"20"
    assert all(c.get(f"undeclared:{i}") == b"1" for i in range(20))


def test_functions_write_through_the_log(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    c.execute_command(
        "FUNCTION", "LOAD",
        "#!lua name=lib\nredis.register_function('stamp', function(keys, args) "
        "return redis.call('SET', keys[1], args[1], 'PX', 60000) end)")
    c.fcall("stamp", 1, "k", "v1")
    time.sleep(0.01)
    srv.kill()
    srv = srv.start()
    c = srv.client()
    assert c.get("k") == b"v1"
    assert 0 < c.pttl("k") <= 60000
    assert c.fcall("stamp", 1, "k", "v2") == b"OK"
