"""Streams with consumer groups across replication, both ways and larder to larder: the
groups, their consumers and pending entries arrive with a full resync's file, and
XGROUP/XREADGROUP/XACK/XCLAIM/XAUTOCLAIM made after it arrive through the stream (Redis
propagates a read as XCLAIM and XGROUP SETID; larder's log records the same).
"""

from __future__ import annotations

import pytest
import redis

from test_replication_master import until

pytestmark = pytest.mark.larder_only


def groups_of(c: redis.Redis, key: str) -> list:
    """What a replica must agree on: each group's cursor, counters and pending entries."""
    out = []
    for g in c.xinfo_groups(key):
        name = g["name"]
        pending = c.xpending_range(key, name, "-", "+", 1000)
        out.append((name, g["last-delivered-id"], g["pending"], g.get("entries-read"),
                    sorted((p["message_id"], p["consumer"], p["times_delivered"])
                           for p in pending),
                    sorted(x["name"] for x in c.xinfo_consumers(key, name))))
    return sorted(out)


def state(c: redis.Redis) -> tuple:
    return (c.xrange("s"), groups_of(c, "s"), c.xinfo_stream("s")["last-generated-id"])


def before_sync(m: redis.Redis) -> None:
    for i in range(10):
        m.xadd("s", {"n": i}, id=f"{i + 1}-0")
    m.xgroup_create("s", "g1", id="0")
    m.xgroup_create("s", "g2", id="3-0")
    m.xreadgroup("g1", "alice", {"s": ">"}, count=4)
    m.xreadgroup("g1", "bob", {"s": ">"}, count=2)
    m.xack("s", "g1", "2-0")


def after_sync(m: redis.Redis) -> None:
    m.xadd("s", {"n": "late"}, id="20-0")
    m.xreadgroup("g2", "carol", {"s": ">"}, count=3)
    m.xack("s", "g1", "1-0", "5-0")
    m.xclaim("s", "g1", "dave", 0, ["3-0"])
    m.xautoclaim("s", "g1", "erin", 0, "0", count=1)
    m.xgroup_setid("s", "g2", "6-0")
    m.xgroup_create("s", "g3", id="$")
    m.xgroup_createconsumer("s", "g3", "frank")
    m.xgroup_delconsumer("s", "g1", "bob")


@pytest.mark.parametrize("kinds", ["larder->redis", "redis->larder", "larder->larder"])
def test_stream_groups_replicate(kinds: str, start_server, redis_factory) -> None:
    master_kind, replica_kind = kinds.split("->")
    master = start_server() if master_kind == "larder" else redis_factory()
    m = redis.Redis(port=master.port, protocol=2, decode_responses=True)
    before_sync(m)
    if replica_kind == "larder":
        rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    else:
        rep = redis_factory("--replicaof", "127.0.0.1", str(master.port))
    r = redis.Redis(port=rep.port, protocol=2, decode_responses=True)
    until("the file's groups", lambda: r.exists("s") and state(r) == state(m))
    after_sync(m)
    assert m.execute_command("WAIT", 1, 2000) == 1
    until("the stream's group changes", lambda: state(r) == state(m))
