"""Libraries written for Redis, run unchanged against the server: RQ (a job queue: its
workers fork a process per job, and it keeps jobs in hashes, queues in lists, registries in
sorted sets, and talks to its workers over pub/sub), limits (rate limiters: fixed window,
moving window and sliding window counter, the last two as Lua scripts), and
python-redis-lock (a lock with a token, renewal, and waiters blocked in BLPOP on a signal
list).

Each test drives the library's own API and checks what a user of it relies on: every job runs
once, a failure lands in the failed registry, a dependent job runs after its parent, a
limiter lets exactly its limit through however many clients hit it, a lock has one owner at
a time. Under `--target=redis` the same tests run against redis-server 7.0.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import limits
import limits.storage
import limits.strategies
import pytest
import redis_lock
import rq
import rq.command
import rq.job

HERE = Path(__file__).resolve().parent


# --- RQ --------------------------------------------------------------------------------------------


def run_workers(server, n: int, *extra: str) -> list[subprocess.CompletedProcess]:
    """`rq worker --burst` in `n` processes at once, until the queue is empty."""
    url = "redis://127.0.0.1:%d" % server.port
    argv = [sys.executable, "-c", "import sys; from rq.cli import main; sys.exit(main())",
            "worker", "--burst", "--url", url, *extra, "default"]
    env = dict(os.environ, PYTHONPATH=str(HERE))
    procs = [subprocess.Popen(argv, cwd=HERE, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) for _ in range(n)]
    done = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(argv, p.returncode, out))
    return done


def test_rq_workers_run_every_job_once(server):
    import rq_jobs

    conn = server.client(protocol=2)
    q = rq.Queue("default", connection=conn)
    jobs = [q.enqueue(rq_jobs.record, "done", i) for i in range(60)]
    failing = q.enqueue(rq_jobs.fail, "boom", "boom:tries")
    assert q.count == 61
    for w in run_workers(server, 3):
        assert w.returncode == 0, w.stdout.decode(errors="replace")[-2000:]
    assert conn.scard("done") == 60
    assert int(conn.get("done:runs")) == 60, "a job ran more than once"
    assert [j.get_status() for j in jobs] == [rq.job.JobStatus.FINISHED] * 60
    assert [j.return_value() for j in jobs] == [2 * i for i in range(60)]
    assert failing.get_status() == rq.job.JobStatus.FAILED
    assert "ValueError: boom" in failing.latest_result().exc_string
    assert q.count == 0
    assert q.finished_job_registry.count == 60
    assert q.failed_job_registry.get_job_ids() == [failing.id]


def test_rq_dependencies_retries_and_scheduled_jobs(server):
    import rq_jobs

    conn = server.client(protocol=2)
    q = rq.Queue("default", connection=conn)
    parent = q.enqueue(rq_jobs.record, "parent", 1)
    child = q.enqueue(rq_jobs.after, "child", "parent", depends_on=parent)
    assert child.get_status() == rq.job.JobStatus.DEFERRED
    retried = q.enqueue(rq_jobs.fail, "again", "tries", retry=rq.Retry(max=2))
    later = q.enqueue_in(datetime.timedelta(seconds=1), rq_jobs.record, "later", 7)
    assert later.get_status() == rq.job.JobStatus.SCHEDULED
    # In-process, as an application's own worker would run (one horse process per job).
    rq.SimpleWorker([q], connection=conn).work(burst=True)
    assert child.get_status() == rq.job.JobStatus.FINISHED
    assert child.return_value() is True and conn.get("child") == b"1"
    assert retried.get_status() == rq.job.JobStatus.FAILED
    assert int(conn.get("tries")) == 3, "one run and two retries"
    retried.refresh()
    assert retried.retries_left == 0
    assert later.get_status() == rq.job.JobStatus.SCHEDULED
    time.sleep(1.2)
    rq.SimpleWorker([q], connection=conn).work(burst=True, with_scheduler=True)
    assert later.get_status() == rq.job.JobStatus.FINISHED
    assert later.return_value() == 14


def test_rq_worker_registry_and_stop_command(server):
    """A long-running worker registers itself, answers RQ's pub/sub commands and leaves
    the registry when told to shut down."""
    conn = server.client(protocol=2)
    url = "redis://127.0.0.1:%d" % server.port
    argv = [sys.executable, "-c", "import sys; from rq.cli import main; sys.exit(main())",
            "worker", "--url", url, "--name", "w1", "default"]
    env = dict(os.environ, PYTHONPATH=str(HERE))
    p = subprocess.Popen(argv, cwd=HERE, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if [w.name for w in rq.Worker.all(connection=conn)] == ["w1"]:
                break
            time.sleep(0.05)
        assert [w.name for w in rq.Worker.all(connection=conn)] == ["w1"]
        # Wait for its pub/sub subscription and for it to block on its queue, then tell it to
        # stop. RQ subscribes before it installs its signal handlers, and the shutdown command
        # is a SIGINT to itself: sent in between, it would end the worker with exit code 1. The
        # worker turns "idle" only after the handlers are in.
        while time.monotonic() < deadline:
            if (conn.pubsub_numsub("rq:pubsub:w1") == [(b"rq:pubsub:w1", 1)]
                    and conn.hget("rq:worker:w1", "state") == b"idle"
                    and conn.info("clients")["blocked_clients"] == 1):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the worker never blocked on its queue")
        rq.command.send_shutdown_command(conn, "w1")
        code = p.wait(timeout=30)
        assert code == 0, p.stdout.read().decode(errors="replace")
        assert rq.Worker.all(connection=conn) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# --- limits ----------------------------------------------------------------------------------------


STRATEGIES = {
    "fixed": "FixedWindowRateLimiter",
    "moving": "MovingWindowRateLimiter",
    "sliding": "SlidingWindowCounterRateLimiter",
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_limits_strategies(server, strategy):
    storage = limits.storage.storage_from_string("redis://127.0.0.1:%d" % server.port)
    limiter = getattr(limits.strategies, STRATEGIES[strategy])(storage)
    item = limits.parse("5/minute")
    assert [limiter.hit(item, "user", "a") for _ in range(7)] == [True] * 5 + [False] * 2
    assert limiter.test(item, "user", "a") is False
    assert limiter.get_window_stats(item, "user", "a").remaining == 0
    # Another identity has its own window.
    assert limiter.hit(item, "user", "b") is True
    assert limiter.get_window_stats(item, "user", "b").remaining == 4
    limiter.clear(item, "user", "a")
    assert limiter.hit(item, "user", "a") is True
    # A cost of more than one.
    assert limiter.hit(item, "user", "c", cost=3) is True
    assert limiter.hit(item, "user", "c", cost=3) is False


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_limits_many_clients_get_exactly_the_limit(server, strategy):
    storage = limits.storage.storage_from_string("redis://127.0.0.1:%d" % server.port)
    limiter = getattr(limits.strategies, STRATEGIES[strategy])(storage)
    item = limits.parse("50/minute")
    allowed = []

    def hammer():
        allowed.append(sum(limiter.hit(item, "api") for _ in range(30)))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 50


# --- python-redis-lock -----------------------------------------------------------------------------


def test_redis_lock_owner_extend_release_reset(server):
    conn = server.client(protocol=2)
    lock = redis_lock.Lock(conn, "res", expire=5)
    assert lock.acquire(blocking=False) is True
    assert redis_lock.Lock(conn, "res").acquire(blocking=False) is False
    assert lock.locked() is True
    lock.extend(10)
    assert 8 <= conn.ttl("lock:res") <= 10
    with pytest.raises(redis_lock.NotAcquired):
        redis_lock.Lock(conn, "res", id="someone-else").release()
    lock.release()
    assert lock.locked() is False
    other = redis_lock.Lock(conn, "res", expire=5)
    assert other.acquire(blocking=False) is True
    redis_lock.reset_all(conn)
    assert conn.keys("lock:*") == []


def test_redis_lock_waiter_wakes_on_release(server):
    """A blocked acquire waits in BLPOP on the lock's signal list; the release pushes to it."""
    holder = redis_lock.Lock(server.client(protocol=2), "job", expire=30)
    assert holder.acquire()
    got = {}

    def wait():
        lock = redis_lock.Lock(server.client(protocol=2), "job", expire=30)
        t0 = time.monotonic()
        got["acquired"] = lock.acquire(timeout=20)
        got["waited"] = time.monotonic() - t0
        lock.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    assert "acquired" not in got, "the waiter got a held lock"
    holder.release()
    t.join(timeout=30)
    assert got["acquired"] is True
    assert got["waited"] < 10, "woken by the release, not by the lock's expiry"


def test_redis_lock_auto_renewal_keeps_it(server):
    lock = redis_lock.Lock(server.client(protocol=2), "renewed", expire=1, auto_renewal=True)
    assert lock.acquire()
    time.sleep(1.6)
    assert redis_lock.Lock(server.client(protocol=2), "renewed").acquire(blocking=False) is False
    lock.release()
