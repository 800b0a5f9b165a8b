"""Replication under churn: a master written by several clients (every type, transactions,
scripts, keys that expire, keys that are renamed and deleted; blocked clients served a list
and a stream's consumer group), a replica, a replica of that
replica (a chain), and a second replica that moves between the master and the first replica,
while links are cut, replicas are promoted and turned back, the master drops its
replicas and the chain's end is killed and restarted; some writers WAIT. When the writers stop, every server must hold exactly the master's data
(`DEBUG DIGEST`, and the keys compared one by one when the digests differ) at the master's
offset.

The order of the writes and of the disruptions is seeded; their timing is not, so each run
tries different interleavings. Each disruption is one that a network or Sentinel causes.
"""

from __future__ import annotations

import random
import threading
import time

from typing import Callable

import pytest
import redis

from conftest import Server, start_with_http
from test_replication_master import contents, info, until
from test_replication_meta import Mc
from test_replication_replica import link_up

pytestmark = pytest.mark.larder_only

SECONDS = 8.0
SCRIPT = ("redis.call('INCR', KEYS[1]); redis.call('LPUSH', KEYS[2], ARGV[1]); "
          "redis.call('LTRIM', KEYS[2], 0, 9); return 1")


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


def churn(master: Server, a: Server, b: Server, c: Server,
          workers: list[Callable[[threading.Event], None]]) -> list[int]:
    """Run `workers` against the master while the links churn for SECONDS: `a` follows
    the master, `b` follows `a`, `c` moves between the master and `a`. Returns the seeded
    disruptions that ran; raises what a worker raised."""
    until("every link is up", lambda: all(link_up(s) for s in (a, b, c)))
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(work: Callable[[threading.Event], None]) -> None:
        try:
            work(stop)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    rng = random.Random(7)
    disruptions = []
    deadline = time.monotonic() + SECONDS
    c_source = master
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.1, 0.4))
            what = rng.randrange(7)
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
            elif what == 5:
                # `a` promoted (its replicas reconnect to learn its new id), then back under
                # the master: a full resync, and `b` and a `c` that follows `a` after it.
                a.client(protocol=2).execute_command("REPLICAOF", "NO", "ONE")
                time.sleep(rng.uniform(0, 0.05))
                follow(a, master)
            else:
                # `b` killed (SIGKILL) and started again: it replays its own log, then
                # follows `a` again (its command line names it).
                b.kill()
                b._spawn_and_wait()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    return disruptions


def settle(master: Server, replicas: tuple[Server, ...], expiring: str) -> None:
    """Keys set to expire (`expiring` is their pattern) are gone from the master, its DELs
    sent, and every replica is at its offset."""
    time.sleep(0.5)
    until("no key left to expire", lambda: not master.client(protocol=2).keys(expiring),
          timeout=10)

    def converged() -> bool:
        offset = info(master, "replication")["master_repl_offset"]
        return all(link_up(s) and info(s, "replication")["master_repl_offset"] == offset
                   for s in replicas)

    until("every replica at the master's offset", converged, timeout=30)


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

    def writer(seed: int) -> Callable[[threading.Event], None]:
        def work(stop: threading.Event) -> None:
            rng = random.Random(seed)
            cl = master.client(protocol=2)
            while not stop.is_set():
                write(cl, rng)
        return work

    def consumer(stop: threading.Event) -> None:
        """Blocked clients served by the writers' pushes: their pops, moves, deliveries and
        acknowledgements reach the replicas as the commands they were served as."""
        cl = master.client(protocol=2)
        cl.xgroup_create("jobs", "g", id="0", mkstream=True)
        while not stop.is_set():
            cl.blmove("q:src", "q:dst", 0.05, "RIGHT", "LEFT")
            cl.ltrim("q:dst", 0, 9)
            got = cl.xreadgroup("g", "worker", {"jobs": ">"}, count=2, block=50)
            for _, entries in got or []:
                ids = [i for i, _ in entries]
                if ids and ids[0][-1:] in b"02468":
                    cl.xack("jobs", "g", *ids)

    disruptions = churn(master, a, b, c, [writer(1), writer(2), writer(3), consumer])
    m = master.client(protocol=2)
    assert m.llen("q:dst") > 0 and m.xinfo_groups("jobs")[0]["pending"] > 0
    settle(master, (a, b, c), "t:*")
    want = digest(master)
    for srv, name in ((a, "a"), (b, "b"), (c, "c")):
        if digest(srv) != want:
            mine = contents(srv.client(protocol=2), 0)
            theirs = contents(m, 0)
            diff = {k: (mine.get(k), theirs.get(k)) for k in set(mine) | set(theirs)
                    if mine.get(k) != theirs.get(k)}
            raise AssertionError(f"replica {name} differs from the master after "
                                 f"disruptions {disruptions}: {dict(list(diff.items())[:5])}")


def mc_write(mc: Mc, rng: random.Random) -> None:
    """One seeded memcached write: flags, CAS, arithmetic, appends, expiry, deletes."""
    k = f"mc:{rng.randrange(30)}"
    op = rng.randrange(7)
    if op == 0:
        data = rng.randbytes(rng.randrange(1, 40)).hex().encode()
        mc.line(f"set {k} {rng.randrange(1 << 16)} 0 {len(data)}", data)
    elif op == 1:
        got = mc.line(f"mg {k} c")
        if got.startswith(b"HD c"):
            mc.line(f"ms {k} 2 C{int(got[4:])} F{rng.randrange(1 << 16)}", b"ok")
    elif op == 2:
        if mc.line(f"incr n:{k} 3") == b"NOT_FOUND":
            mc.line(f"add n:{k} 7 0 1", b"1")
    elif op == 3:
        mc.line(f"append {k} 2", b"++")
    elif op == 4:
        mc.line(f"set e:{k} 9 1 4", b"soon")
    elif op == 5:
        mc.line(f"delete {k}")
    else:
        mc.line(f"touch {k} 1000")


def test_versions_and_flags_converge_after_churn(start_server) -> None:
    """The same churn under memcached writes (and RESP ones) on four larders: every key's
    value, CAS unique and flags (carried beside the stream in LARDER.META frames and in the
    full resync's file) end equal on every replica, so a CAS token read anywhere holds
    after a failover."""
    args = ("--enable-debug-command", "yes")
    master = start_with_http(start_server, *args)
    a = start_with_http(start_server, *args, "--replicaof", f"127.0.0.1 {master.port}")
    b = start_with_http(start_server, *args, "--replicaof", f"127.0.0.1 {a.port}")
    c = start_with_http(start_server, *args, "--replicaof", f"127.0.0.1 {master.port}")

    def mc_writer(seed: int) -> Callable[[threading.Event], None]:
        def work(stop: threading.Event) -> None:
            rng = random.Random(seed)
            mc = Mc(master.mc_port)
            try:
                while not stop.is_set():
                    mc_write(mc, rng)
            finally:
                mc.close()
        return work

    def resp_writer(stop: threading.Event) -> None:
        rng = random.Random(4)
        cl = master.client(protocol=2)
        while not stop.is_set():
            write(cl, rng)

    disruptions = churn(master, a, b, c, [mc_writer(1), mc_writer(2), resp_writer])
    settle(master, (a, b, c), "*e:mc:*")
    keys = sorted(master.client(protocol=2).keys("*mc:*"))
    assert len(keys) > 10

    def described(srv: Server) -> dict[bytes, tuple[bytes, bytes]]:
        """Each key's `mg k v c f` header (size, CAS unique, flags) and value."""
        mc = Mc(srv.mc_port)
        try:
            out = {}
            for k in keys:
                head = mc.line(f"mg {k.decode()} v c f")
                value = mc.f.readline().rstrip(b"\r\n") if head.startswith(b"VA") else b""
                out[k] = (head, value)
            return out
        finally:
            mc.close()

    want = described(master)
    flagged = [k for k, (head, _) in want.items()
               if head.startswith(b"VA") and not head.endswith(b" f0")]
    assert len(flagged) > 5
    for srv, name in ((a, "a"), (b, "b"), (c, "c")):
        got = described(srv)
        diff = {k: (got[k], want[k]) for k in keys if got[k] != want[k]}
        assert not diff, (f"replica {name} differs from the master after disruptions "
                          f"{disruptions}: {dict(list(diff.items())[:5])}")
        assert digest(srv) == digest(master)
