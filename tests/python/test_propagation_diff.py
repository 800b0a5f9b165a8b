"""What a write leaves behind, replayed elsewhere: the random command sequences of
test_redis_diff.py run on a master, and its replica must then hold exactly the master's data;
or they run on a larder with the append-only log, and replaying the log (DEBUG LOADAOF) or a
snapshot (DEBUG RELOAD) must give back exactly what was there.

"Exactly": every key's DEBUG DIGEST-VALUE (the same digest redis-server computes, so a larder
and a redis-server holding the same value agree), its type and its PEXPIRETIME, compared
after each sequence. The replication pairs are larder to redis-server, redis-server to
larder and larder to larder, so the stream larder sends is one a stock replica applies, and
larder applies a stock master's.

One known difference of redis-server's own: a BITFIELD whose writes all fail under OVERFLOW
FAIL still grows the string to the highest offset named, and redis-server does not propagate
it, so even a redis-server replica of redis-server differs from its master after one. With a
redis-server master such commands are not sent.

`python tests/python/test_propagation_diff.py --seeds 1000` is a longer run of each pair.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable

import pytest

if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from conftest import RawConn  # noqa: E402
from test_redis_diff import (  # noqa: E402
    DEBUG, KEYS, SLEEP, Processes, default_larder_bin, is_lex, mixed_scores, sequence)

pytestmark = pytest.mark.larder_only

SEEDS = int(os.environ.get("PROPAGATION_DIFF_SEEDS", "100"))


def play(conn: RawConn, seed: int, skip: Callable[[list[str]], bool] = lambda c: False) -> None:
    """Run seed's sequence on `conn` after FLUSHALL (replies are test_redis_diff.py's
    business), leaving no transaction open."""
    assert conn.call("FLUSHALL") == "OK"
    in_multi = False
    for cmd in sequence(seed):
        name = cmd[0].upper()
        if skip(cmd) or short_lived(cmd) or (is_lex(cmd) and (in_multi or
                                                              mixed_scores(conn, cmd[1]))):
            continue
        reply = conn.call_frame(*cmd)
        if name == "MULTI" and reply.kind == "+":
            in_multi = True
        elif name in ("EXEC", "DISCARD"):
            in_multi = False
    if in_multi:
        conn.call("DISCARD")


def short_lived(cmd: list[str]) -> bool:
    """A key given 20 ms to live, and the wait for it: where a replica stands while its
    master's expiry reaches it is a matter of timing, which this test does not compare."""
    return cmd == [SLEEP] or (cmd[0] == "PEXPIRE" and cmd[2] == "20")


def unpropagated_bitfield(cmd: list[str]) -> bool:
    return cmd[0].upper() == "BITFIELD" and "FAIL" in cmd


def contents(conn: RawConn) -> dict[str, tuple]:
    return {k: (conn.call("TYPE", k), conn.call("DEBUG", "DIGEST-VALUE", k),
                conn.call("PEXPIRETIME", k)) for k in KEYS}


def offset(conn: RawConn, field: str) -> int:
    for line in conn.call("INFO", "replication").decode().splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"no {field} in INFO replication")


def caught_up(master: RawConn, replica: RawConn, timeout: float = 10.0) -> None:
    want = offset(master, "master_repl_offset")
    deadline = time.monotonic() + timeout
    while offset(replica, "slave_repl_offset") < want:
        assert time.monotonic() < deadline, "the replica did not catch up"
        time.sleep(0.005)


def replicate(mport: int, rport: int, seeds: range, skip=lambda c: False) -> list[str]:
    """Play each seed on the master; after each, the replica must hold what it holds.
    Returns a line per seed that differed."""
    differ = []
    with RawConn(mport) as m, RawConn(rport) as r:
        for seed in seeds:
            play(m, seed, skip)
            caught_up(m, r)
            want, got = contents(m), contents(r)
            if want != got:
                keys = {k: (want[k], got[k]) for k in KEYS if want[k] != got[k]}
                differ.append(f"seed {seed}: master, replica {keys}")
    return differ


def reload(port: int, seeds: range) -> list[str]:
    """Play each seed, then DEBUG LOADAOF (even seeds) or DEBUG RELOAD (odd ones)."""
    differ = []
    with RawConn(port, timeout=60) as c:
        for seed in seeds:
            play(c, seed)
            how = "RELOAD" if seed % 2 else "LOADAOF"
            before = contents(c)
            assert c.call("DEBUG", how) == "OK"
            after = contents(c)
            if before != after:
                keys = {k: (before[k], after[k]) for k in KEYS if before[k] != after[k]}
                differ.append(f"seed {seed} after DEBUG {how}: {keys}")
    return differ


def follow(replica: int, master: int) -> None:
    with RawConn(replica) as r:
        assert r.call("REPLICAOF", "127.0.0.1", str(master)) == "OK"
        deadline = time.monotonic() + 10
        while "master_link_status:up" not in r.call("INFO", "replication").decode():
            assert time.monotonic() < deadline, "the link did not come up"
            time.sleep(0.02)


@pytest.mark.parametrize("kinds", ["larder-redis", "redis-larder", "larder-larder"])
def test_a_replica_holds_what_its_master_holds(start_server, redis_factory, kinds) -> None:
    make = {"larder": lambda: start_server(*DEBUG), "redis": lambda: redis_factory(*DEBUG)}
    master_kind, replica_kind = kinds.split("-")
    master, replica = make[master_kind](), make[replica_kind]()
    follow(replica.port, master.port)
    skip = unpropagated_bitfield if master_kind == "redis" else (lambda c: False)
    assert replicate(master.port, replica.port, range(SEEDS), skip) == []


def test_the_log_and_a_snapshot_give_back_what_was_written(start_server) -> None:
    srv = start_server("--appendonly", "yes", *DEBUG)
    assert reload(srv.port, range(SEEDS)) == []


def test_pfcount_s_cache_reaches_replicas_and_the_log(start_server, redis_factory) -> None:
    """PFCOUNT stores the cardinality it computed in the value (a read that writes): a
    replica and the log replay it, so their bytes are the master's."""
    master = start_server("--appendonly", "yes", *DEBUG)
    replicas = [start_server(*DEBUG), redis_factory(*DEBUG)]
    for r in replicas:
        follow(r.port, master.port)
    with RawConn(master.port) as m:
        m.call("PFADD", "h", "a", "b", "c")
        invalid = m.call("GET", "h")
        assert m.call("PFCOUNT", "h") == 3
        cached = m.call("GET", "h")
        assert cached != invalid  # the cache bytes changed
        for r in replicas:
            with RawConn(r.port) as rc:
                caught_up(m, rc)
                assert rc.call("GET", "h") == cached
        assert m.call("DEBUG", "LOADAOF") == "OK"
        assert m.call("GET", "h") == cached


def test_the_comparison_sees_a_difference(start_server) -> None:
    """A value, a type or a deadline that differs is seen."""
    a, b = start_server(*DEBUG), start_server(*DEBUG)
    with RawConn(a.port) as x, RawConn(b.port) as y:
        for c in (x, y):
            c.call("SET", "k0", "v")
        assert contents(x) == contents(y)
        y.call("PEXPIRE", "k0", "100000")
        assert contents(x) != contents(y)
        y.call("SET", "k0", "w")
        assert contents(x) != contents(y)
        y.call("DEL", "k0")
        y.call("RPUSH", "k0", "v")
        assert contents(x) != contents(y)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--larder-bin", default=default_larder_bin())
    a = ap.parse_args()
    failures = 0
    with Processes(a.larder_bin) as servers:
        for kinds in ("larder-redis", "redis-larder", "larder-larder"):
            mk, rk = kinds.split("-")
            m, r = servers.start(mk, *DEBUG), servers.start(rk, *DEBUG)
            follow(r, m)
            skip = unpropagated_bitfield if mk == "redis" else (lambda c: False)
            differ = replicate(m, r, range(a.seeds), skip)
            print(f"{kinds}: {a.seeds} seeds, {len(differ)} differ", *differ[:5], sep="\n  ")
            failures += len(differ)
        port = servers.start("larder", "--appendonly", "yes", *DEBUG)
        differ = reload(port, range(a.seeds))
        print(f"log and snapshot: {a.seeds} seeds, {len(differ)} differ", *differ[:5],
              sep="\n  ")
        failures += len(differ)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
