"""Replication under churn: a master written by several clients (every type, transactions,
scripts, keys that expire, keys that are renamed and deleted; blocked clients served a list
and a stream's consumer group), a replica, a replica of that
replica (a chain), and a second replica that moves between the master and the first replica,
while links are cut, replicas are promoted and turned back, and the master drops its
replicas; some writers WAIT. When the writers stop, every server must hold exactly the master's data
(`DEBUG DIGEST`, and the keys compared one by one when the digests differ) at the master's
offset.

The order of the writes and of the disruptions is seeded; their timing is not, so each run
tries different interleavings. Each disruption is one that a network or Sentinel causes.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis

from conftest import Server
from test_replication_master import contents, info, until

pytestmark = pytest.mark.larder_only

SECONDS = 8.0
SCRIPT = ("redis.call('INCR', KEYS[1]); redis.call('LPUSH', KEYS[2], ARGV[1]); "
          "redis.call('LTRIM', KEYS[2], 0, 9); return 1")


def link_up(srv: Server) -> bool:
    return info(srv, "replication").get("master_link_status") == "up"


def follow(srv: Server, master: Server) -> None:
    srv.client(protocol=2).execute_command("REPLICAOF", "127.0.0.1", master.port)


def write(c: redis.Redis, rng: random.Random) -> None:
    """One seeded write of many kinds on a small key space (keys collide often)."""
    k = rng.randrange(40)
    op = rng.randrange(13)
    if op == 0:
        c.set(f"s:{k}", rng.randbytes(rng.randrange(1, 64)))
    elif op == 1:
        c.incrby(f"n:{k}", rng.randrange(1, 5))
    elif op == 2:
        c.set(f"t:{k}", "soon", px=rng.randrange(20, 400))
    elif op == 3:
        c.lpush(f"l:{k}", rng.randrange(1000))
        c.ltrim(f"l:{k}", 0, 19)
    elif op == 4:
        c.hset(f"h:{k}", f"f{rng.randrange(8)}", rng.randrange(1000))
    elif op == 5:
        c.zadd(f"z:{k}", {f"m{rng.randrange(16)}": rng.random()})
    elif op == 6:
        c.sadd(f"set:{k}", rng.randrange(32))
    elif op == 7:
        with c.pipeline(transaction=True) as p:
            p.incr(f"n:{k}")
            p.set(f"s:{k}", "tx")
            p.hincrby(f"h:{k}", "tx", 1)
            p.execute()
    elif op == 8:
        c.eval(SCRIPT, 2, f"n:{k}", f"l:{k}", rng.randrange(1000))
    elif op == 9:
        c.delete(f"s:{k}", f"l:{(k + 1) % 40}")
    elif op == 10:
        try:
            c.rename(f"h:{k}", f"h:{(k + 7) % 40}")
        except redis.ResponseError:
            pass  # no such key
    elif op == 11:
        c.xadd(f"x:{k % 4}", {"k": k}, maxlen=50, approximate=False)
        c.lpush("q:src", k)
        c.xadd("jobs", {"k": k})
    else:
        # GETACK in the stream, and acknowledgements waited for.
        c.execute_command("WAIT", 1, 50)


def digest(srv: Server) -> str:
    return srv.client(protocol=2, decode_responses=True).execute_command("DEBUG", "DIGEST")


@pytest.mark.parametrize("moving", ["larder", "redis"])
def test_replicas_converge_after_churn(start_server, redis_factory, moving: str) -> None:
    """`moving` is what the replica that moves between sources runs: larder, or a stock
    redis-server 7.0 (which must parse every byte of both larders' streams)."""
    args = ("--enable-debug-command", "yes")
    master = start_server(*args)
    a = start_server(*args, "--replicaof", f"127.0.0.1 {master.port}")
    b = start_server(*args, "--replicaof", f"127.0.0.1 {a.port}")
    if moving == "larder":
        c = start_server(*args, "--replicaof", f"127.0.0.1 {master.port}")
    else:
        c = redis_factory(*args, "--replicaof", "127.0.0.1", str(master.port))
    until("every link is up", lambda: all(link_up(s) for s in (a, b, c)))
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        cl = master.client(protocol=2)
        try:
            while not stop.is_set():
                write(cl, rng)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def consumer() -> None:
        """Blocked clients served by the writers' pushes: their pops, moves, deliveries and
        acknowledgements reach the replicas as the commands they were served as."""
        cl = master.client(protocol=2)
        cl.xgroup_create("jobs", "g", id="0", mkstream=True)
        try:
            while not stop.is_set():
                cl.blmove("q:src", "q:dst", 0.05, "RIGHT", "LEFT")
                cl.ltrim("q:dst", 0, 9)
                got = cl.xreadgroup("g", "worker", {"jobs": ">"}, count=2, block=50)
                for _, entries in got or []:
                    ids = [i for i, _ in entries]
                    if ids and ids[0][-1:] in b"02468":
                        cl.xack("jobs", "g", *ids)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(seed,), daemon=True) for seed in (1, 2, 3)]
    threads.append(threading.Thread(target=consumer, daemon=True))
    for t in threads:
        t.start()
    rng = random.Random(7)
    disruptions = []
    deadline = time.monotonic() + SECONDS
    c_source = master
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.1, 0.4))
            what = rng.randrange(6)
            disruptions.append(what)
            if what == 0:
                # A link cut: a partial resync.
                rng.choice((a, b, c)).client(protocol=2).execute_command(
                    "CLIENT", "KILL", "TYPE", "master")
            elif what == 1:
                # The master drops every replica; they come back with partial resyncs.
                master.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "replica")
            elif what == 2:
                # The end of the chain promoted and turned back: a full resync from `a`.
                b.client(protocol=2).execute_command("REPLICAOF", "NO", "ONE")
                follow(b, a)
            elif what == 3:
                # `c` moves between the master and `a` (one history, partial resyncs).
                c_source = a if c_source is master else master
                follow(c, c_source)
            elif what == 4:
                # `a` cut from the master while `b` follows it.
                a.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "master")
            else:
                # `a` promoted (its replicas reconnect to learn its new id), then back under
                # the master: a full resync, and `b` and a `c` that follows `a` after it.
                a.client(protocol=2).execute_command("REPLICAOF", "NO", "ONE")
                time.sleep(rng.uniform(0, 0.05))
                follow(a, master)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    m = master.client(protocol=2)
    assert m.llen("q:dst") > 0 and m.xinfo_groups("jobs")[0]["pending"] > 0
    # Keys set to expire are gone from the master (its DELs follow) before the comparison.
    time.sleep(0.5)
    until("no key left to expire", lambda: not any(
        k.startswith(b"t:") for k in master.client(protocol=2).keys("t:*")), timeout=10)

    def converged() -> bool:
        offset = info(master, "replication")["master_repl_offset"]
        return all(link_up(s) and info(s, "replication")["master_repl_offset"] == offset
                   for s in (a, b, c))

    until("every replica at the master's offset", converged, timeout=30)
    want = digest(master)
    for srv, name in ((a, "a"), (b, "b"), (c, "c")):
        if digest(srv) != want:
            mine = contents(srv.client(protocol=2), 0)
            theirs = contents(master.client(protocol=2), 0)
            diff = {k: (mine.get(k), theirs.get(k)) for k in set(mine) | set(theirs)
                    if mine.get(k) != theirs.get(k)}
            raise AssertionError(f"replica {name} differs from the master after "
                                 f"disruptions {disruptions}: {dict(list(diff.items())[:5])}")
