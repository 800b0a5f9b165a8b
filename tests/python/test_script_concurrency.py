"""Scripts under concurrency: atomicity across shards, and keys a script did not declare.

Writers move random amounts between two random keys of 64 (spread over the shards) with a
script, while readers sum all 64 keys both with MGET inside a script and with a plain MGET: the
sum never changes, so no reader sees a script half done. Servers run with `--threads 2` (a
larder flag; redis-server runs single-threaded whatever it is given) so scripts and readers
really run on different worker threads.

Scripts may touch keys they did not declare (Redis allows it outside cluster mode): the same
invariants must hold when the keys come in ARGV, mixed with declared-key scripts, MULTI/EXEC
and plain commands from other clients. Every client has a socket timeout, so a deadlock fails
a test instead of hanging it.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

ACCOUNTS = 64
START = 1000
TOTAL = ACCOUNTS * START
RUN_S = 2.0
MAX_ROUNDS = 20_000

TRANSFER = """
local amt = tonumber(ARGV[1])
local a = tonumber(redis.call('GET', KEYS[1]))
if a < amt then return 0 end
redis.call('DECRBY', KEYS[1], amt)
redis.call('INCRBY', KEYS[2], amt)
return 1
"""

# The same, with the key names in ARGV (numkeys 0).
TRANSFER_UNDECLARED = """
local amt = tonumber(ARGV[3])
local a = tonumber(redis.call('GET', ARGV[1]))
if a < amt then return 0 end
redis.call('DECRBY', ARGV[1], amt)
redis.call('INCRBY', ARGV[2], amt)
return 1
"""

SUM_DECLARED = """
local vals = redis.call('MGET', unpack(KEYS))
local s = 0
for _, v in ipairs(vals) do s = s + tonumber(v) end
return s
"""

SUM_UNDECLARED = """
local vals = redis.call('MGET', unpack(ARGV))
local s = 0
for _, v in ipairs(vals) do s = s + tonumber(v) end
return s
"""

KEYS = [f"acct:{i}" for i in range(ACCOUNTS)]


@pytest.fixture
def srv(start_server):
    return start_server("--threads", "2")


class Workers:
    """Threads that each run `body(rng)` in a loop until RUN_S passes (or MAX_ROUNDS); the
    first exception fails the test; every thread must have done some rounds."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + RUN_S
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []
        self.rounds: dict[str, int] = {}

    def spawn(self, name: str, n: int, body) -> None:
        for i in range(n):
            key = f"{name}#{i}"
            self.rounds[key] = 0
            t = threading.Thread(target=self._run, args=(key, body, random.Random(hash(key))),
                                 daemon=True)
            self.threads.append(t)

    def _run(self, key: str, body, rng: random.Random) -> None:
        try:
            for _ in range(MAX_ROUNDS):
                if self.stop.is_set() or time.monotonic() >= self.deadline:
                    break
                body(rng)
                self.rounds[key] += 1
        except BaseException as e:  # noqa: BLE001 - reported by run()
            self.errors.append(e)
            self.stop.set()

    def run(self) -> None:
        for t in self.threads:
            t.start()
        for t in self.threads:
            t.join(timeout=60)
        self.stop.set()
        assert not [t for t in self.threads if t.is_alive()], "threads still running: deadlock?"
        if self.errors:
            raise self.errors[0]
        idle = [k for k, n in self.rounds.items() if n == 0]
        assert not idle, f"threads that never completed a round: {idle}"


def setup_accounts(c) -> None:
    c.mset({k: START for k in KEYS})


def pick(rng: random.Random) -> tuple[str, str, int]:
    a, b = rng.sample(KEYS, 2)
    return a, b, rng.randint(1, 50)


def check_sum(c) -> None:
    assert sum(int(v) for v in c.mget(KEYS)) == TOTAL


def test_transfers_keep_the_sum(srv, protocol):
    setup = srv.client(protocol=protocol)
    setup_accounts(setup)
    sha = setup.script_load(TRANSFER)
    w = Workers()

    def writer(rng):
        c = clients.get()
        a, b, amt = pick(rng)
        assert c.evalsha(sha, 2, a, b, amt) in (0, 1)

    def script_reader(rng):
        assert clients.get().eval(SUM_DECLARED, len(KEYS), *KEYS) == TOTAL

    def plain_reader(rng):
        check_sum(clients.get())

    clients = PerThread(srv, protocol)
    w.spawn("writer", 6, writer)
    w.spawn("script-reader", 2, script_reader)
    w.spawn("mget-reader", 2, plain_reader)
    w.run()
    check_sum(setup)
    assert all(int(v) >= 0 for v in setup.mget(KEYS))


def test_undeclared_keys_results(r):
    body = """
        redis.call('SET', ARGV[1], ARGV[2])
        redis.call('RPUSH', ARGV[3], 'a', 'b')
        return {redis.call('GET', ARGV[1]), redis.call('LLEN', ARGV[3]),
                redis.call('EXISTS', ARGV[1], ARGV[3], 'never')}
    """
    assert r.eval(body, 0, "u:str", "value", "u:list") == [b"value", 2, 2]
    assert r.get("u:str") == b"value"
    assert r.lrange("u:list", 0, -1) == [b"a", b"b"]
    # Declared and undeclared keys in one script.
    r.set("d:1", 5)
    body = "return redis.call('INCRBY', ARGV[1], redis.call('GET', KEYS[1]))"
    assert r.eval(body, 1, "d:1", "u:counter") == 5
    assert r.eval(body, 1, "d:1", "u:counter") == 10
    setup_accounts(r)
    assert r.eval(SUM_UNDECLARED, 0, *KEYS) == TOTAL


def test_undeclared_transfers_with_other_writers(srv, protocol):
    """Undeclared-key scripts, declared-key scripts and MULTI/EXEC transfers all at once;
    readers sum with undeclared and declared scripts and plain MGET."""
    setup = srv.client(protocol=protocol)
    setup_accounts(setup)
    sha_u = setup.script_load(TRANSFER_UNDECLARED)
    sha_d = setup.script_load(TRANSFER)
    clients = PerThread(srv, protocol)
    w = Workers()

    def undeclared_writer(rng):
        a, b, amt = pick(rng)
        assert clients.get().evalsha(sha_u, 0, a, b, amt) in (0, 1)

    def declared_writer(rng):
        a, b, amt = pick(rng)
        assert clients.get().evalsha(sha_d, 2, a, b, amt) in (0, 1)

    def multi_writer(rng):
        a, b, amt = pick(rng)
        with clients.get().pipeline(transaction=True) as p:
            p.decrby(a, amt).incrby(b, amt)
            p.execute()

    def readers(rng):
        c = clients.get()
        assert c.eval(SUM_UNDECLARED, 0, *KEYS) == TOTAL
        assert c.eval(SUM_DECLARED, len(KEYS), *KEYS) == TOTAL
        check_sum(c)

    w.spawn("undeclared", 4, undeclared_writer)
    w.spawn("declared", 2, declared_writer)
    w.spawn("multi", 2, multi_writer)
    w.spawn("reader", 2, readers)
    w.run()
    check_sum(setup)


def test_undeclared_counter_with_plain_incr(srv, protocol):
    """Plain INCRs from some clients and scripts incrementing the same keys undeclared from
    others: no increment is lost."""
    setup = srv.client(protocol=protocol)
    body = "redis.call('INCR', ARGV[1]); redis.call('INCRBY', ARGV[2], 2); return 1"
    sha = setup.script_load(body)
    counts = {"plain": 0, "script": 0}
    lock = threading.Lock()
    clients = PerThread(srv, protocol)
    w = Workers()

    def plain(rng):
        c = clients.get()
        c.incr("cnt:a")
        c.incrby("cnt:b", 2)
        with lock:
            counts["plain"] += 1

    def script(rng):
        assert clients.get().evalsha(sha, 0, "cnt:a", "cnt:b") == 1
        with lock:
            counts["script"] += 1

    w.spawn("plain", 3, plain)
    w.spawn("script", 3, script)
    w.run()
    n = counts["plain"] + counts["script"]
    assert int(setup.get("cnt:a")) == n
    assert int(setup.get("cnt:b")) == 2 * n


def test_script_sees_a_consistent_snapshot_of_undeclared_keys(srv, protocol):
    """A writer keeps two undeclared keys equal with a script; a script reading both (also
    undeclared) never sees them differ."""
    setup = srv.client(protocol=protocol)
    setup.mset({"pair:x": 0, "pair:y": 0})
    bump = setup.script_load(
        "redis.call('INCR', ARGV[1]); redis.call('INCR', ARGV[2]); return 1")
    read = setup.script_load(
        "return {redis.call('GET', ARGV[1]), redis.call('GET', ARGV[2])}")
    clients = PerThread(srv, protocol)
    w = Workers()

    def writer(rng):
        clients.get().evalsha(bump, 0, "pair:x", "pair:y")

    def reader(rng):
        x, y = clients.get().evalsha(read, 0, "pair:x", "pair:y")
        assert x == y, (x, y)

    w.spawn("writer", 3, writer)
    w.spawn("reader", 3, reader)
    w.run()
    x, y = setup.mget("pair:x", "pair:y")
    assert x == y and int(x) > 0


class PerThread:
    """One redis-py client per thread (each with its own connection pool)."""

    def __init__(self, srv, protocol: int) -> None:
        self.srv = srv
        self.protocol = protocol
        self.local = threading.local()
        self.lock = threading.Lock()

    def get(self):
        c = getattr(self.local, "client", None)
        if c is None:
            with self.lock:
                c = self.srv.client(protocol=self.protocol)
            self.local.client = c
        return c
