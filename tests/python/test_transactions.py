"""Transactions: MULTI EXEC DISCARD WATCH UNWATCH, with real clients.

The replies follow Redis 7.0 (every test here also runs with --target=redis). The concurrent
tests check what the executor promises: a transaction's commands run with every shard they
touch held, so no other client sees part of one, and a watched key changed by anyone fails
the EXEC. Every client has a socket timeout, so a deadlock fails a test instead of hanging it.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis

from conftest import Err, RawConn

EXECABORT = Err("EXECABORT Transaction discarded because of previous errors.")
NOT_IN_MULTI = Err("ERR Command not allowed inside a transaction")
WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")

# How long the concurrent tests run, and the bound on each thread's loop besides it.
RUN_S = 2.0
MAX_ROUNDS = 20_000


def tx(conn: RawConn, *commands: tuple) -> object:
    """MULTI, each command (each must answer QUEUED), EXEC; returns EXEC's reply."""
    assert conn.call("MULTI") == "OK"
    for command in commands:
        assert conn.call(*command) == "QUEUED", command
    return conn.call("EXEC")


def single(server, protocol: int = 3, **kw) -> redis.Redis:
    """A redis-py client pinned to one connection (MULTI state lives in the connection)."""
    return server.client(protocol=protocol, single_connection_client=True, **kw)


class Workers:
    """Threads that run `body(i, rounds)` until `RUN_S` passes, the bound on rounds, or a
    failure; the first exception of any thread fails the test."""

    def __init__(self, run_s: float = RUN_S) -> None:
        self.deadline = time.monotonic() + run_s
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []
        self.rounds: list[int] = []

    def spawn(self, n: int, body) -> None:
        for _ in range(n):
            idx = len(self.threads)
            self.rounds.append(0)
            t = threading.Thread(target=self._run, args=(idx, body), daemon=True)
            self.threads.append(t)

    def _run(self, idx: int, body) -> None:
        try:
            for rnd in range(MAX_ROUNDS):
                if self.stop.is_set() or time.monotonic() >= self.deadline:
                    break
                body(idx, rnd)
                self.rounds[idx] += 1
        except BaseException as e:  # noqa: BLE001 - reported by join()
            self.errors.append(e)
            self.stop.set()

    def run(self, join_s: float = 30.0) -> None:
        for t in self.threads:
            t.start()
        for t in self.threads:
            t.join(timeout=join_s)
        self.stop.set()
        hung = [t for t in self.threads if t.is_alive()]
        if self.errors:
            raise self.errors[0]
        assert not hung, f"{len(hung)} threads still running: a deadlock?"


# --- MULTI EXEC DISCARD ------------------------------------------------------------------------


def test_multi_exec_basics(rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "1") == "QUEUED"
    assert rawp.call("INCR", "a") == "QUEUED"
    assert rawp.call("GET", "a") == "QUEUED"
    assert rawp.call("GET", "missing") == "QUEUED"
    assert rawp.call("EXEC") == ["OK", 2, b"2", None]
    assert rawp.call("GET", "a") == b"2"


def test_queued_is_simple_string_and_exec_is_array(rawp):
    rawp.send_command("MULTI")
    assert rawp.recv_exact(5) == b"+OK\r\n"
    rawp.send_command("SET", "k", "v")
    assert rawp.recv_exact(9) == b"+QUEUED\r\n"
    rawp.send_command("GET", "k")
    assert rawp.recv_exact(9) == b"+QUEUED\r\n"
    frame = rawp.call_frame("EXEC")
    assert frame.kind == "*"
    assert [(f.kind, f.value) for f in frame.value] == [("+", "OK"), ("$", b"v")]


def test_empty_exec(rawp):
    assert rawp.call("MULTI") == "OK"
    frame = rawp.call_frame("EXEC")
    assert (frame.kind, frame.value) == ("*", [])


def test_exec_reply_types_resp3(server):
    conn = server.raw()
    conn.hello3()
    reply = tx(conn, ("SET", "n", "1"), ("INCRBYFLOAT", "n", "1.5"), ("EXISTS", "n"),
               ("GET", "none"), ("HELLO", "3"))
    assert reply[:4] == ["OK", b"2.5", 1, None]
    assert isinstance(reply[4], dict)  # HELLO 3's map, nested in EXEC's array
    frame = conn.call_frame("MULTI")
    assert frame.kind == "+"
    conn.call("GET", "none")
    frame = conn.call_frame("EXEC")
    assert frame.kind == "*" and frame.value[0].kind == "_"


def test_exec_reply_types_resp2(raw):
    tx(raw, ("SET", "x", "1"))
    raw.call("MULTI")
    raw.call("GET", "none")
    frame = raw.call_frame("EXEC")
    assert frame.kind == "*" and frame.value[0].kind == "$" and frame.value[0].value is None


def test_redis_py_transaction_pipeline(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", 1).incr("a").get("a").delete("a").exists("a")
        assert p.execute() == [True, 2, b"2", 1, 0]


def test_redis_py_execute_command(server, protocol):
    c = single(server, protocol)
    c.set("k", "v")
    assert c.execute_command("MULTI") in (b"OK", True, "OK")
    assert c.execute_command("GET", "k") == b"QUEUED"
    assert c.execute_command("STRLEN", "k") == b"QUEUED"
    assert c.execute_command("EXEC") == [b"v", 1]


def test_discard(rawp):
    rawp.call("SET", "a", "1")
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "2") == "QUEUED"
    assert rawp.call("DISCARD") == "OK"
    assert rawp.call("GET", "a") == b"1"
    # The connection is out of the transaction: commands run at once again.
    assert rawp.call("SET", "a", "3") == "OK"
    assert rawp.call("EXEC") == Err("ERR EXEC without MULTI")


def test_exec_and_discard_without_multi(rawp):
    assert rawp.call("EXEC") == Err("ERR EXEC without MULTI")
    assert rawp.call("DISCARD") == Err("ERR DISCARD without MULTI")


def test_nested_multi_is_an_error_that_does_not_abort(rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "1") == "QUEUED"
    assert rawp.call("MULTI") == Err("ERR MULTI calls can not be nested")
    assert rawp.call("INCR", "a") == "QUEUED"
    assert rawp.call("EXEC") == ["OK", 2]


def test_watch_inside_multi_is_an_error_that_does_not_abort(rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "1") == "QUEUED"
    assert rawp.call("WATCH", "a") == Err("ERR WATCH inside MULTI is not allowed")
    assert rawp.call("GET", "a") == "QUEUED"
    assert rawp.call("EXEC") == ["OK", b"1"]


def test_unknown_command_while_queued_aborts(rawp):
    rawp.call("SET", "a", "1")
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "2") == "QUEUED"
    reply = rawp.call("NOSUCHCOMMAND", "x")
    assert isinstance(reply, Err) and reply.startswith("ERR unknown command 'NOSUCHCOMMAND'")
    assert rawp.call("EXEC") == EXECABORT
    assert rawp.call("GET", "a") == b"1"
    # EXECABORT ends the transaction.
    assert rawp.call("EXEC") == Err("ERR EXEC without MULTI")


def test_wrong_arity_while_queued_aborts(rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "2") == "QUEUED"
    assert rawp.call("GET") == Err("ERR wrong number of arguments for 'get' command")
    assert rawp.call("GET", "a") == "QUEUED"
    assert rawp.call("EXEC") == EXECABORT
    assert rawp.call("EXISTS", "a") == 0


def test_no_multi_command_while_queued_aborts(server, rawp):
    assert rawp.call("MULTI") == "OK"
    assert rawp.call("SET", "a", "1") == "QUEUED"
    assert rawp.call("SHUTDOWN") == NOT_IN_MULTI
    assert rawp.call("EXEC") == EXECABORT
    assert rawp.call("EXISTS", "a") == 0
    assert server.alive()


def test_redis_py_pipeline_raises_execabort(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", 1)
        p.execute_command("GET")  # wrong arity: rejected while queued
        with pytest.raises(redis.exceptions.ResponseError):
            p.execute()
    assert r.exists("a") == 0


def test_runtime_error_does_not_roll_back(rawp):
    rawp.call("RPUSH", "list", "x")
    reply = tx(rawp, ("SET", "a", "1"), ("INCR", "list"), ("GET", "list"), ("INCR", "a"),
               ("SET", "b", "x"), ("INCR", "b"), ("SET", "c", "3"))
    assert reply == ["OK", WRONGTYPE, WRONGTYPE, 2, "OK", NOT_INT, "OK"]
    assert rawp.call("MGET", "a", "b", "c") == [b"2", b"x", b"3"]


def test_redis_py_runtime_error_in_pipeline(r):
    r.rpush("list", "x")
    with r.pipeline(transaction=True) as p:
        p.set("a", 1).incr("list").incr("a")
        out = p.execute(raise_on_error=False)
    assert out[0] is True and out[2] == 2
    assert isinstance(out[1], redis.exceptions.ResponseError)
    assert r.get("a") == b"2"


def test_select_inside_multi_stays_selected(rawp):
    reply = tx(rawp, ("SET", "k", "in0"), ("SELECT", "1"), ("SET", "k", "in1"), ("GET", "k"))
    assert reply == ["OK", "OK", "OK", b"in1"]
    assert rawp.call("GET", "k") == b"in1"  # the connection stays in db 1 after EXEC
    assert rawp.call("SELECT", "0") == "OK"
    assert rawp.call("GET", "k") == b"in0"


def test_bad_select_inside_multi_stays_in_db(raw):
    """A SELECT that fails inside EXEC leaves the database as it was for the next commands
    ('01' and '+1' are not integers to Redis)."""
    reply = tx(raw, ("SELECT", "01"), ("SET", "k", "a"), ("SELECT", "+1"), ("SET", "j", "b"),
               ("SELECT", "99999"), ("INCR", "n"))
    assert reply == [NOT_INT, "OK", NOT_INT, "OK", Err("ERR DB index is out of range"), 1]
    assert raw.call("MGET", "k", "j", "n") == [b"a", b"b", b"1"]
    raw.call("SELECT", "1")
    assert raw.call("DBSIZE") == 0


def test_multi_then_reset(raw):
    raw.call("WATCH", "w")
    assert raw.call("MULTI") == "OK"
    assert raw.call("SET", "a", "1") == "QUEUED"
    assert raw.call("RESET") == "RESET"
    assert raw.call("EXEC") == Err("ERR EXEC without MULTI")
    assert raw.call("EXISTS", "a") == 0


# --- WATCH -------------------------------------------------------------------------------------


def test_watch_modified_by_another_client(server, protocol):
    a, b = server.raw(), server.raw()
    a.call("HELLO", str(protocol))
    a.call("SET", "k", "1")
    assert a.call("WATCH", "k") == "OK"
    b.call("SET", "k", "2")
    assert a.call("MULTI") == "OK"
    assert a.call("SET", "k", "3") == "QUEUED"
    frame = a.call_frame("EXEC")
    assert frame.value is None
    assert frame.kind == ("*" if protocol == 2 else "_")
    assert a.call("GET", "k") == b"2"


def test_watch_redis_py_watch_error(server, protocol):
    c = server.client(protocol=protocol)
    other = server.client(protocol=protocol)
    c.set("k", 1)
    with c.pipeline() as p:
        p.watch("k")
        other.incr("k")
        p.multi()
        p.set("k", 100)
        with pytest.raises(redis.exceptions.WatchError):
            p.execute()
    assert c.get("k") == b"2"


def test_watch_modified_by_same_client_before_multi(rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    rawp.call("SET", "k", "1")  # same value, still a write
    assert tx(rawp, ("SET", "k", "x")) is None
    assert rawp.call("GET", "k") == b"1"


def test_watch_unmodified_runs(server, rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k", "other", "k")
    other = server.raw()
    other.call("GET", "k")  # reads do not count
    other.call("SET", "unrelated", "1")
    other.call("EXISTS", "other")
    assert tx(rawp, ("INCR", "k")) == [2]


def test_unwatch(server, rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    assert rawp.call("UNWATCH") == "OK"
    server.raw().call("SET", "k", "2")
    assert tx(rawp, ("INCR", "k")) == [3]
    assert rawp.call("UNWATCH") == "OK"  # with nothing watched


def test_watch_missing_key_created_by_another_client(server, rawp):
    rawp.call("WATCH", "k")
    server.raw().call("SET", "k", "new")
    assert tx(rawp, ("SET", "k", "mine")) is None
    assert rawp.call("GET", "k") == b"new"


def test_watch_missing_key_created_and_deleted(server, rawp):
    """Redis fails the EXEC: the key was written, even if it is missing again."""
    rawp.call("WATCH", "k")
    other = server.raw()
    other.call("SET", "k", "new")
    other.call("DEL", "k")
    reply = tx(rawp, ("SET", "k", "mine"))
    assert reply is None


def test_watched_key_expires_before_exec(rawp):
    rawp.call("SET", "k", "v", "PX", "50")
    rawp.call("WATCH", "k")
    time.sleep(0.15)
    assert tx(rawp, ("SET", "x", "1")) is None
    assert rawp.call("EXISTS", "x") == 0


def test_watched_key_already_expired_runs(rawp):
    rawp.call("SET", "k", "v", "PX", "1")
    time.sleep(0.05)
    rawp.call("WATCH", "k")
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


def test_watched_key_with_ttl_that_does_not_expire_runs(rawp):
    rawp.call("SET", "k", "v", "EX", "100")
    rawp.call("WATCH", "k")
    assert tx(rawp, ("GET", "k")) == [b"v"]


def test_watched_key_expire_set_by_another_client(server, rawp):
    rawp.call("SET", "k", "v")
    rawp.call("WATCH", "k")
    server.raw().call("EXPIRE", "k", "100")
    assert tx(rawp, ("GET", "k")) is None


@pytest.mark.parametrize("flush", [("FLUSHDB",), ("FLUSHALL",), ("FLUSHDB", "ASYNC"),
                                   ("FLUSHALL", "SYNC")])
def test_watch_flush_by_another_client(server, rawp, flush):
    rawp.call("SET", "k", "v")
    rawp.call("WATCH", "k")
    assert server.raw().call(*flush) == "OK"
    assert tx(rawp, ("SET", "x", "1")) is None
    assert rawp.call("DBSIZE") == 0


def test_watch_flushall_of_another_db(server, rawp):
    """FLUSHALL empties db 1 too: a key watched there fails the EXEC."""
    rawp.call("SELECT", "1")
    rawp.call("SET", "k", "v")
    rawp.call("WATCH", "k")
    rawp.call("SELECT", "0")
    server.raw().call("FLUSHALL")
    assert tx(rawp, ("SET", "x", "1")) is None


def test_watch_flushdb_of_another_db_runs(server, rawp):
    rawp.call("SET", "k", "v")
    rawp.call("WATCH", "k")
    other = server.raw()
    other.call("SELECT", "1")
    other.call("SET", "k", "1")
    other.call("FLUSHDB")
    assert tx(rawp, ("GET", "k")) == [b"v"]


def test_watch_missing_key_and_flushdb_runs(server, rawp):
    """Redis 7.0 fails EXEC on FLUSHDB only for watched keys that existed."""
    rawp.call("WATCH", "missing")
    other = server.raw()
    other.call("SET", "somethingelse", "1")
    other.call("FLUSHDB")
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


@pytest.mark.parametrize("where", ["db0", "db1"])
def test_watch_swapdb_by_another_client(server, rawp, where):
    other = server.raw()
    if where == "db0":
        rawp.call("SET", "k", "v")
    else:
        other.call("SELECT", "1")
        other.call("SET", "k", "v1")
    rawp.call("WATCH", "k")
    assert other.call("SWAPDB", "0", "1") == "OK"
    assert tx(rawp, ("SET", "x", "1")) is None


def test_watch_swapdb_of_missing_key_runs(server, rawp):
    rawp.call("WATCH", "k")
    other = server.raw()
    other.call("SET", "a", "1")
    assert other.call("SWAPDB", "0", "1") == "OK"
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


def test_del_of_missing_watched_key_runs(server, rawp):
    rawp.call("WATCH", "k")
    assert server.raw().call("DEL", "k") == 0
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


def test_del_of_watched_key_fails_exec(server, rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    assert server.raw().call("DEL", "k") == 1
    assert tx(rawp, ("SET", "x", "1")) is None


@pytest.mark.parametrize("cmd", [("RENAME", "k", "k2"), ("RENAME", "src", "k"),
                                 ("MOVE", "k", "1"), ("COPY", "src", "k", "REPLACE"),
                                 ("MSET", "a", "1", "k", "2"), ("APPEND", "k", "x"),
                                 ("PERSIST", "k")])
def test_watch_multi_key_writers(server, rawp, cmd):
    rawp.call("SET", "k", "v", "EX", "100")
    rawp.call("SET", "src", "s")
    rawp.call("WATCH", "k")
    server.raw().call(*cmd)
    assert tx(rawp, ("SET", "x", "1")) is None


def test_watch_in_other_db_follows_its_db(server, rawp):
    """WATCH remembers the database it ran in."""
    rawp.call("SET", "k", "v")
    rawp.call("WATCH", "k")
    rawp.call("SELECT", "1")
    server.raw().call("SET", "k", "changed")  # db 0
    assert tx(rawp, ("SET", "x", "1")) is None
    rawp.call("SELECT", "0")
    rawp.call("WATCH", "k")
    other = server.raw()
    other.call("SELECT", "1")
    other.call("SET", "k", "other db")
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


@pytest.mark.parametrize("end", ["EXEC", "DISCARD"])
def test_exec_and_discard_clear_watches(server, rawp, end):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    rawp.call("MULTI")
    rawp.call("GET", "k")
    rawp.call(end)
    server.raw().call("SET", "k", "2")
    assert tx(rawp, ("GET", "k")) == [b"2"]


def test_failed_exec_clears_watches(server, rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    other = server.raw()
    other.call("SET", "k", "2")
    assert tx(rawp, ("GET", "k")) is None
    other.call("SET", "k", "3")
    assert tx(rawp, ("GET", "k")) == [b"3"]


def test_execabort_clears_watches(server, rawp):
    rawp.call("SET", "k", "1")
    rawp.call("WATCH", "k")
    rawp.call("MULTI")
    rawp.call("GET")
    assert rawp.call("EXEC") == EXECABORT
    server.raw().call("SET", "k", "2")
    assert tx(rawp, ("GET", "k")) == [b"2"]


def test_watch_checked_before_queued_errors_are_reported(server, rawp):
    """A dirty (EXECABORT) transaction answers EXECABORT even when a watched key changed."""
    rawp.call("WATCH", "k")
    server.raw().call("SET", "k", "1")
    rawp.call("MULTI")
    rawp.call("NOSUCH")
    assert rawp.call("EXEC") == EXECABORT


def test_watch_many_keys_one_changed(server, rawp):
    keys = [f"key:{i}" for i in range(300)]
    rawp.call("MSET", *[x for k in keys for x in (k, "v")])
    rawp.call("WATCH", *keys)
    server.raw().call("SET", keys[217], "changed")
    assert tx(rawp, ("SET", "x", "1")) is None
    rawp.call("WATCH", *keys)
    assert tx(rawp, ("SET", "x", "1")) == ["OK"]


# --- concurrency -------------------------------------------------------------------------------


@pytest.fixture
def mt(start_server):
    """A server of its own with several I/O threads, so that commands of different clients
    really overlap (the shared server may pick one thread on a small machine)."""
    return start_server("--threads", "4")


def test_watch_counter_exact_total(mt):
    server = mt
    n_clients, per_client = 8, 200
    server.client(protocol=2).set("counter", 0)
    retries = [0] * n_clients

    def worker(i: int) -> None:
        c = server.client(protocol=2 if i % 2 else 3, socket_timeout=20)
        done = 0
        with c.pipeline() as p:
            while done < per_client:
                try:
                    p.watch("counter")
                    v = int(p.get("counter"))
                    p.multi()
                    p.set("counter", v + 1)
                    p.execute()
                    done += 1
                except redis.exceptions.WatchError:
                    retries[i] += 1
                    if retries[i] > 100_000:
                        raise AssertionError("starved")

    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            worker(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert int(server.client(protocol=2).get("counter")) == n_clients * per_client


def test_transfers_keep_the_sum(mt):
    """Transactions move amounts between pairs of keys (on different shards, most of them)
    while readers MGET every key: the sum never changes."""
    server = mt
    pairs = [(f"acct:{i}:a", f"acct:{i}:b") for i in range(16)]
    keys = [k for p in pairs for k in p]
    total = 1000 * len(keys)
    server.client(protocol=2).mset({k: 1000 for k in keys})
    w = Workers()

    def mover(idx: int, rnd: int) -> None:
        conn = movers[idx]
        rng = random.Random(idx * 100_003 + rnd)
        a, b = pairs[rng.randrange(len(pairs))]
        if rng.random() < 0.5:
            a, b = b, a
        c = keys[rng.randrange(len(keys))]
        n = rng.randrange(1, 50)
        reply = tx(conn, ("DECRBY", a, n), ("INCRBY", b, n - 1), ("INCRBY", c, 1))
        assert len(reply) == 3 and all(isinstance(x, int) for x in reply), reply

    def reader(idx: int, rnd: int) -> None:
        conn = readers[idx - 4]
        if rnd % 2:
            values = conn.call("MGET", *keys)
        else:
            values = tx(conn, *[("GET", k) for k in keys])
        assert sum(int(v) for v in values) == total, values

    movers = [server.raw(timeout=10) for _ in range(4)]
    readers = [server.raw(timeout=10) for _ in range(3)]
    w.spawn(4, mover)
    w.spawn(3, reader)
    w.run()
    assert sum(w.rounds[:4]) > 0 and sum(w.rounds[4:]) > 0
    final = server.client(protocol=2).mget(keys)
    assert sum(int(v) for v in final) == total


def test_transfers_with_watch_keep_the_sum(mt):
    """The optimistic form: WATCH both keys, read them, write both in MULTI."""
    server = mt
    keys = [f"w:{i}" for i in range(8)]
    server.client(protocol=2).mset({k: 100 for k in keys})
    total = 100 * len(keys)
    w = Workers()

    def mover(idx: int, rnd: int) -> None:
        c = movers[idx]
        rng = random.Random(rnd * 31 + idx)
        a, b = rng.sample(keys, 2)
        with c.pipeline() as p:
            try:
                p.watch(a, b)
                va, vb = int(p.get(a)), int(p.get(b))
                p.multi()
                p.set(a, va - 7)
                p.set(b, vb + 7)
                p.execute()
            except redis.exceptions.WatchError:
                pass

    def reader(idx: int, rnd: int) -> None:
        values = readers[idx - 4].mget(keys)
        assert sum(int(v) for v in values) == total, values

    movers = [server.client(protocol=2 + i % 2, socket_timeout=10) for i in range(4)]
    readers = [server.client(protocol=2, socket_timeout=10) for _ in range(2)]
    w.spawn(4, mover)
    w.spawn(2, reader)
    w.run()
    assert sum(int(v) for v in server.client(protocol=2).mget(keys)) == total


def test_select_inside_multi_under_concurrent_writers(mt):
    server = mt
    w = Workers()

    def writer(idx: int, rnd: int) -> None:
        conn = writers[idx]
        conn.call("SELECT", str(rnd % 2))
        assert conn.call("INCR", f"noise:{rnd % 50}") >= 1
        assert conn.call("SET", f"w:{idx}", rnd) == "OK"

    def txer(idx: int, rnd: int) -> None:
        conn = txers[idx - 3]
        tag = f"{idx}:{rnd}"
        conn.call("SELECT", "0")
        reply = tx(conn, ("SET", f"t:{idx}", f"db0:{tag}"), ("SELECT", "1"),
                   ("SET", f"t:{idx}", f"db1:{tag}"), ("GET", f"t:{idx}"), ("SELECT", "0"),
                   ("GET", f"t:{idx}"))
        assert reply == ["OK", "OK", "OK", f"db1:{tag}".encode(), "OK",
                         f"db0:{tag}".encode()]
        assert conn.call("GET", f"t:{idx}") == f"db0:{tag}".encode()
        conn.call("SELECT", "1")
        assert conn.call("GET", f"t:{idx}") == f"db1:{tag}".encode()

    writers = [server.raw(timeout=10) for _ in range(3)]
    txers = [server.raw(timeout=10) for _ in range(2)]
    w.spawn(3, writer)
    w.spawn(2, txer)
    w.run()
    assert sum(w.rounds[3:]) > 0


def test_bad_select_inside_multi_under_concurrent_flushall(mt):
    """A SELECT that fails inside EXEC must not leave the following commands locking a
    database the transaction did not plan for (a deadlock against FLUSHALL's locks)."""
    server = mt
    w = Workers()

    def flusher(idx: int, rnd: int) -> None:
        conn = others[idx]
        if rnd % 3 == 0:
            assert conn.call("FLUSHALL") == "OK"
        else:
            conn.call("SELECT", str(rnd % 2))
            conn.call("MSET", *[x for i in range(8) for x in (f"k{i}", rnd)])

    def txer(idx: int, rnd: int) -> None:
        conn = txers[idx - 2]
        # From db 0, a SELECT of '01' (which fails) must not plan the rest in db 1.
        conn.call("SELECT", "0")
        bad = "01" if rnd % 2 else "+1"
        reply = tx(conn, ("SELECT", bad), ("SET", f"k{rnd % 8}", "x"), ("INCR", "n"))
        assert reply[0] == NOT_INT and reply[1] == "OK" and isinstance(reply[2], int)

    others = [server.raw(timeout=10) for _ in range(2)]
    txers = [server.raw(timeout=10) for _ in range(2)]
    w.spawn(2, flusher)
    w.spawn(2, txer)
    w.run()
    assert sum(w.rounds[2:]) > 0


def test_flushall_inside_multi_under_concurrent_writers(mt):
    server = mt
    w = Workers()

    def writer(idx: int, rnd: int) -> None:
        conn = writers[idx]
        conn.call("SELECT", str(rnd % 3))
        conn.call("MSET", *[x for i in range(6) for x in (f"w{idx}:{i}", rnd)])
        conn.call("INCR", f"c{idx}")

    def txer(idx: int, rnd: int) -> None:
        conn = txers[idx - 3]
        me = f"t{idx}"
        reply = tx(conn, ("SET", me, "before"), ("SELECT", "1"), ("SET", me, "db1"),
                   ("SELECT", "0"), ("FLUSHALL",), ("GET", me), ("SET", me, "after"),
                   ("DBSIZE",), ("SELECT", "1"), ("DBSIZE",), ("SELECT", "0"), ("GET", me))
        assert reply == ["OK", "OK", "OK", "OK", "OK", None, "OK", 1, "OK", 0, "OK",
                         b"after"], reply

    writers = [server.raw(timeout=10) for _ in range(3)]
    txers = [server.raw(timeout=10) for _ in range(2)]
    w.spawn(3, writer)
    w.spawn(2, txer)
    w.run()
    assert sum(w.rounds[3:]) > 0


def test_wide_commands_inside_multi(rawp):
    rawp.call("MSET", "p:a", "1", "p:b", "2")
    rawp.call("SELECT", "2")
    rawp.call("SET", "p:elsewhere", "x")
    rawp.call("SELECT", "0")
    reply = tx(rawp,
               ("MSET", "p:c", "3", "p:d", "4"),
               ("KEYS", "p:*"),
               ("SCAN", "0", "MATCH", "p:*", "COUNT", "100000"),
               ("DBSIZE",),
               ("RANDOMKEY",),
               ("RENAME", "p:a", "p:e"),
               ("MOVE", "p:b", "1"),
               ("COPY", "p:c", "p:c", "DB", "2"),
               ("COPY", "p:d", "p:f"),
               ("MGET", "p:a", "p:b", "p:c", "p:d", "p:e", "p:f"),
               ("SELECT", "1"),
               ("KEYS", "*"),
               ("SELECT", "2"),
               ("SCAN", "0", "COUNT", "1000"),
               ("SWAPDB", "1", "2"),
               ("DBSIZE",),
               ("FLUSHDB",),
               ("DBSIZE",),
               ("RANDOMKEY",),
               ("SELECT", "0"),
               ("DBSIZE",))
    assert reply[0] == "OK"
    assert sorted(reply[1]) == [b"p:a", b"p:b", b"p:c", b"p:d"]
    assert reply[2][0] == b"0" and sorted(reply[2][1]) == [b"p:a", b"p:b", b"p:c", b"p:d"]
    assert reply[3] == 4
    assert reply[4] in (b"p:a", b"p:b", b"p:c", b"p:d")
    assert reply[5:9] == ["OK", 1, 1, 1]
    assert reply[9] == [None, None, b"3", b"4", b"1", b"4"]
    assert reply[10] == "OK"
    assert reply[11] == [b"p:b"]
    assert reply[12] == "OK"
    assert reply[13][0] == b"0" and sorted(reply[13][1]) == [b"p:c", b"p:elsewhere"]
    assert reply[14] == "OK"
    assert reply[15:19] == [1, "OK", 0, None]  # db 2 now holds db 1's p:b, then emptied
    assert reply[19:] == ["OK", 4]
    rawp.call("SELECT", "1")
    assert sorted(rawp.call("KEYS", "*")) == [b"p:c", b"p:elsewhere"]


def test_copy_move_with_keys_named_like_options(rawp):
    """Keys named 'db' or holding a number must not confuse which databases COPY touches."""
    rawp.call("MSET", "db", "v", "1", "one")
    reply = tx(rawp, ("COPY", "db", "x", "DB", "1"), ("COPY", "1", "db", "DB", "2"),
               ("COPY", "db", "DB", "DB", "3", "REPLACE"), ("MOVE", "db", "4"),
               ("COPY", "1", "y", "DB", "1", "DB", "5"))
    assert reply == [1, 1, 1, 1, 1]
    for db, key, value in [(1, "x", b"v"), (2, "db", b"one"), (3, "DB", b"v"),
                           (4, "db", b"v"), (5, "y", b"one")]:
        rawp.call("SELECT", str(db))
        assert rawp.call("GET", key) == value, (db, key)
    rawp.call("SELECT", "1")
    assert rawp.call("EXISTS", "y") == 0  # the last DB option wins


def test_copy_with_key_named_db_under_concurrent_flushall(mt):
    """COPY's destination database is found after its two keys: a source key named 'db' must
    not make the executor plan the wrong database (and lock the right one out of order)."""
    server = mt
    w = Workers()

    def flusher(idx: int, rnd: int) -> None:
        conn = others[idx]
        if rnd % 2:
            assert conn.call("FLUSHALL") == "OK"
        else:
            conn.call("SELECT", "0")
            conn.call("MSET", "x", rnd, "db", rnd)
            assert conn.call("COPY", "x", "y", "DB", "1", "REPLACE") in (0, 1)

    def copier(idx: int, rnd: int) -> None:
        conn = copiers[idx - 2]
        conn.call("SELECT", "1")
        conn.call("SET", "db", rnd)
        if rnd % 2:
            assert conn.call("COPY", "db", "x", "DB", "0", "REPLACE") in (0, 1)
        else:
            reply = tx(conn, ("SET", "db", "v"), ("COPY", "db", "x", "DB", "0", "REPLACE"))
            assert reply == ["OK", 1]

    others = [server.raw(timeout=10) for _ in range(2)]
    copiers = [server.raw(timeout=10) for _ in range(2)]
    w.spawn(2, flusher)
    w.spawn(2, copier)
    w.run()
    assert sum(w.rounds[2:]) > 0


def test_wide_commands_inside_multi_under_concurrent_writers(mt):
    """Every command with a wide lock scope, queued together, against writers in several
    databases: no deadlock, no panic, and the transaction's own keys are right."""
    server = mt
    w = Workers()

    def writer(idx: int, rnd: int) -> None:
        conn = writers[idx]
        db = rnd % 3
        conn.call("SELECT", str(db))
        op = rnd % 6
        if op == 0:
            conn.call("MSET", *[x for i in range(10) for x in (f"n{i}", rnd)])
        elif op == 1:
            conn.call("MGET", *[f"n{i}" for i in range(10)])
        elif op == 2:
            conn.call("SCAN", "0", "COUNT", "50")
        elif op == 3:
            conn.call("COPY", "n1", "n2", "DB", str((db + 1) % 3), "REPLACE")
        elif op == 4:
            conn.call("RENAME", "n3", "n4")  # may answer "no such key"
        else:
            conn.call("DBSIZE")
            conn.call("KEYS", "n*")

    def txer(idx: int, rnd: int) -> None:
        conn = txers[idx - 3]
        me = f"tx{idx}"
        conn.call("SELECT", "0")
        reply = tx(conn,
                   ("MSET", f"{me}:a", "1", f"{me}:b", "2"),
                   ("KEYS", f"{me}:*"),
                   ("SCAN", "0", "MATCH", f"{me}:*", "COUNT", "1000000"),
                   ("DBSIZE",),
                   ("RANDOMKEY",),
                   ("RENAME", f"{me}:a", f"{me}:c"),
                   ("COPY", f"{me}:c", f"{me}:c", "DB", "1", "REPLACE"),
                   ("MOVE", f"{me}:b", "2"),
                   ("MGET", f"{me}:a", f"{me}:b", f"{me}:c"),
                   ("SELECT", "2"),
                   ("GET", f"{me}:b"),
                   ("DEL", f"{me}:b"),
                   ("SELECT", "1"),
                   ("GET", f"{me}:c"),
                   ("DEL", f"{me}:c"),
                   ("SELECT", "0"),
                   ("DEL", f"{me}:c"))
        assert reply[0] == "OK"
        assert sorted(reply[1]) == [f"{me}:a".encode(), f"{me}:b".encode()]
        assert reply[2][0] == b"0"
        assert sorted(reply[2][1]) == [f"{me}:a".encode(), f"{me}:b".encode()]
        assert isinstance(reply[3], int) and reply[3] >= 2
        assert reply[4] is not None
        assert reply[5:8] == ["OK", 1, 1]
        assert reply[8] == [None, None, b"1"]
        assert reply[9:] == ["OK", b"2", 1, "OK", b"1", 1, "OK", 1]

    def swapper(idx: int, rnd: int) -> None:
        conn = swappers[idx - 5]
        reply = tx(conn, ("SWAPDB", "1", "2"), ("FLUSHDB",), ("SWAPDB", "2", "1"),
                   ("SELECT", "2"), ("FLUSHDB", "ASYNC"), ("DBSIZE",), ("SELECT", "0"))
        assert reply == ["OK", "OK", "OK", "OK", "OK", 0, "OK"]

    writers = [server.raw(timeout=10) for _ in range(3)]
    txers = [server.raw(timeout=10) for _ in range(2)]
    swappers = [server.raw(timeout=10) for _ in range(1)]
    w.spawn(3, writer)
    w.spawn(2, txer)
    w.spawn(1, swapper)
    w.run()
    assert sum(w.rounds[3:5]) > 0 and w.rounds[5] > 0


def test_watch_under_concurrent_flushes(mt):
    """Watched keys across databases while other clients flush and swap: every EXEC either
    runs whole or answers nil, and never hangs."""
    server = mt
    w = Workers()
    outcomes = {"ran": 0, "nil": 0}

    def chaos(idx: int, rnd: int) -> None:
        conn = others[idx]
        op = rnd % 4
        if op == 0:
            conn.call("FLUSHALL")
        elif op == 1:
            conn.call("SWAPDB", "0", "1")
        elif op == 2:
            conn.call("SELECT", "1")
            conn.call("FLUSHDB")
        else:
            conn.call("SELECT", str(rnd % 2))
            conn.call("MSET", "a", rnd, "b", rnd)

    def watcher(idx: int, rnd: int) -> None:
        conn = watchers[idx - 2]
        conn.call("SELECT", "0")
        conn.call("SET", "a", "mine")
        conn.call("WATCH", "a", "b")
        conn.call("SELECT", "1")
        conn.call("WATCH", "a")
        reply = tx(conn, ("SET", "a", "x"), ("SELECT", "0"), ("GET", "a"), ("SET", "b", "y"))
        if reply is None:
            outcomes["nil"] += 1
        else:
            outcomes["ran"] += 1
            assert reply[:2] == ["OK", "OK"] and reply[3] == "OK"

    others = [server.raw(timeout=10) for _ in range(2)]
    watchers = [server.raw(timeout=10) for _ in range(2)]
    w.spawn(2, chaos)
    w.spawn(2, watcher)
    w.run()
    assert outcomes["ran"] + outcomes["nil"] > 0


def test_big_transaction(rawp):
    n = 2000
    rawp.send(b"".join([RawConn.encode("MULTI")] +
                       [RawConn.encode("SET", f"big:{i}", i) for i in range(n)] +
                       [RawConn.encode("EXEC")]))
    assert rawp.read_reply() == "OK"
    for _ in range(n):
        assert rawp.read_reply() == "QUEUED"
    assert rawp.read_reply() == ["OK"] * n
    assert rawp.call("DBSIZE") == n
