"""Scripts as real libraries write them: redis-py's `Lock` (its release, extend and reacquire
are Lua scripts run through `Script` objects), a sliding-window rate limiter, a lock release
script, and a Bull-style job-queue move (a job taken from the wait list into the active list,
with a timestamp in a processing ZSET, and stalled jobs moved back).

Every expectation is a reply redis-server 7.0.15 gives (`--target=redis`); timestamps come from
the tests (ARGV), so the replies are exact.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError


@pytest.fixture(autouse=True)
def _empty_script_cache(server):
    with server.admin() as conn:
        assert conn.call("SCRIPT", "FLUSH") == "OK"


# --- redis-py's Lock -----------------------------------------------------------------------------


def test_lock_acquire_release(r):
    lock = r.lock("res", timeout=10)
    assert lock.acquire(blocking=False) is True
    assert lock.owned() is True
    assert lock.locked() is True
    assert r.get("res") == lock.local.token
    assert 9000 < r.pttl("res") <= 10000
    lock.release()
    assert lock.locked() is False
    assert r.exists("res") == 0


def test_lock_context_manager(r):
    with r.lock("res", timeout=5) as lock:
        assert lock.owned()
        assert r.exists("res") == 1
    assert r.exists("res") == 0


def test_lock_contention_between_clients(server, protocol):
    a = server.client(protocol=protocol)
    b = server.client(protocol=protocol)
    la = a.lock("res", timeout=10)
    lb = b.lock("res", timeout=10, sleep=0.01)
    assert la.acquire(blocking=False)
    assert lb.acquire(blocking=False) is False
    t0 = time.monotonic()
    assert lb.acquire(blocking=True, blocking_timeout=0.2) is False
    assert time.monotonic() - t0 >= 0.15  # redis-py checks the time before its last sleep
    assert lb.owned() is False
    # b cannot release or extend a's lock.
    with pytest.raises(LockNotOwnedError):
        lb.local.token = b"not-the-token"
        lb.release()
    la.release()
    assert lb.acquire(blocking=True, blocking_timeout=1) is True
    assert lb.owned() and not la.owned()
    lb.release()


def test_lock_waiter_gets_it_on_release(server, protocol):
    a = server.client(protocol=protocol)
    b = server.client(protocol=protocol)
    la = a.lock("res", timeout=10)
    assert la.acquire()
    got: list[float] = []

    def waiter():
        lb = b.lock("res", timeout=10, sleep=0.01)
        if lb.acquire(blocking=True, blocking_timeout=5):
            got.append(time.monotonic())
            lb.release()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.2)
    released = time.monotonic()
    la.release()
    t.join(timeout=10)
    assert got and got[0] >= released


def test_lock_extend_and_reacquire(r):
    lock = r.lock("res", timeout=1)
    assert lock.acquire()
    assert lock.extend(10) is True
    assert 10000 < r.pttl("res") <= 11000
    assert lock.extend(3, replace_ttl=True) is True
    assert 2000 < r.pttl("res") <= 3000
    assert lock.reacquire() is True
    assert 900 < r.pttl("res") <= 1000
    # Someone else's value under the name: extend, reacquire and release are refused.
    r.set("res", "someone-else", px=5000)
    with pytest.raises(LockNotOwnedError):
        lock.extend(1)
    with pytest.raises(LockNotOwnedError):
        lock.reacquire()
    assert lock.owned() is False
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert r.get("res") == b"someone-else"


def test_lock_extend_refuses_a_lock_without_ttl(r):
    lock = r.lock("res")  # no timeout: the key has no TTL
    assert lock.acquire()
    assert r.pttl("res") == -1
    with pytest.raises(LockError):
        lock.extend(1)
    # The extend script itself answers 0 for a key without TTL.
    assert r.eval(lock.LUA_EXTEND_SCRIPT, 1, "res", lock.local.token, 1000, "0") == 0
    lock.release()


def test_lock_expires_and_someone_else_takes_it(server, protocol):
    a = server.client(protocol=protocol)
    b = server.client(protocol=protocol)
    la = a.lock("res", timeout=0.1)
    assert la.acquire()
    time.sleep(0.3)
    lb = b.lock("res", timeout=10)
    assert lb.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError):
        la.reacquire()
    with pytest.raises(LockNotOwnedError):
        la.release()
    assert lb.owned()
    lb.release()


def test_lock_scripts_survive_script_flush(r):
    lock = r.lock("res", timeout=5)
    assert lock.acquire()
    r.script_flush()
    lock.release()  # EVALSHA answers NOSCRIPT; the Script object loads it again
    assert r.exists("res") == 0


def test_many_threads_one_lock_counter(server, protocol):
    """A lock-protected read-modify-write from several clients loses no update."""
    clients = [server.client(protocol=protocol) for _ in range(4)]
    clients[0].set("counter", 0)
    errors: list[BaseException] = []

    def worker(c):
        try:
            for _ in range(25):
                with c.lock("counter-lock", timeout=5, sleep=0.001, blocking_timeout=10):
                    v = int(c.get("counter"))
                    c.set("counter", v + 1)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[0]
    assert int(clients[0].get("counter")) == 100


# --- a lock release script (the one from the SET documentation) ----------------------------------

RELEASE = """
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end
"""


def test_lock_release_script(r):
    release = r.register_script(RELEASE)
    assert r.set("lk", "token-1", nx=True, px=10000) is True
    assert r.set("lk", "token-2", nx=True, px=10000) is None
    assert release(keys=["lk"], args=["token-2"]) == 0
    assert r.get("lk") == b"token-1"
    assert release(keys=["lk"], args=["token-1"]) == 1
    assert r.exists("lk") == 0
    assert release(keys=["lk"], args=["token-1"]) == 0


# --- a sliding-window rate limiter ---------------------------------------------------------------

RATE_LIMIT = """
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local member = ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, window)
    return {1, limit - count - 1}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
"""


def test_sliding_window_rate_limiter(r):
    limiter = r.register_script(RATE_LIMIT)

    def hit(now_ms: int, req: int):
        return limiter(keys=["rl:user1"], args=[now_ms, 1000, 3, f"req-{req}"])

    assert hit(10_000, 1) == [1, 2]
    assert hit(10_100, 2) == [1, 1]
    assert hit(10_200, 3) == [1, 0]
    # The 4th within the window is refused; the reply says when the oldest leaves.
    assert hit(10_300, 4) == [0, 700]
    assert hit(10_999, 5) == [0, 1]
    # At 11_000 the first request (10_000) leaves the window.
    assert hit(11_000, 6) == [1, 0]
    assert r.zcard("rl:user1") == 3
    assert r.zrange("rl:user1", 0, -1) == [b"req-2", b"req-3", b"req-6"]
    assert 0 < r.pttl("rl:user1") <= 1000


def test_rate_limiter_from_many_clients(server, protocol):
    """Concurrent callers never get more than `limit` admissions in one window."""
    clients = [server.client(protocol=protocol) for _ in range(6)]
    admitted: list[int] = []
    lock = threading.Lock()

    def worker(i, c):
        script = c.register_script(RATE_LIMIT)
        for j in range(20):
            ok, _ = script(keys=["rl:shared"], args=[50_000, 60_000, 25, f"{i}-{j}"])
            with lock:
                admitted.append(ok)

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(admitted) == 120
    assert sum(admitted) == 25
    assert clients[0].zcard("rl:shared") == 25


# --- a Bull-style job queue ----------------------------------------------------------------------

# KEYS: wait list, active list, processing zset, job hash prefix (as a key: the job's hash)
MOVE_TO_ACTIVE = """
local jobId = redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
if not jobId then
    return false
end
redis.call('ZADD', KEYS[3], ARGV[1], jobId)
local jobKey = ARGV[2] .. jobId
redis.call('HSET', jobKey, 'processedOn', ARGV[1], 'attempts', 1 +
    (tonumber(redis.call('HGET', jobKey, 'attempts')) or 0))
return {jobId, redis.call('HGET', jobKey, 'data')}
"""

# Jobs in processing since before ARGV[1] are stalled: back to the wait list.
MOVE_STALLED = """
local stalled = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, jobId in ipairs(stalled) do
    redis.call('LREM', KEYS[2], 1, jobId)
    redis.call('RPUSH', KEYS[1], jobId)
    redis.call('ZREM', KEYS[3], jobId)
end
return stalled
"""

COMPLETE = """
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 0 then
    return redis.error_reply('ERR job ' .. ARGV[1] .. ' is not active')
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', ARGV[2] .. ARGV[1], 'finishedOn', ARGV[3], 'returnvalue', ARGV[4])
return redis.status_reply('OK')
"""

QUEUE_KEYS = ["q:wait", "q:active", "q:processing"]


def test_job_queue_move(r):
    move = r.register_script(MOVE_TO_ACTIVE)
    stalled = r.register_script(MOVE_STALLED)
    complete = r.register_script(COMPLETE)
    for i in (1, 2, 3):
        r.hset(f"q:job:{i}", "data", f'{{"n":{i}}}')
        r.lpush("q:wait", str(i))
    assert move(keys=QUEUE_KEYS, args=[1000, "q:job:"]) == [b"1", b'{"n":1}']
    assert move(keys=QUEUE_KEYS, args=[1005, "q:job:"]) == [b"2", b'{"n":2}']
    assert r.lrange("q:active", 0, -1) == [b"2", b"1"]
    assert [tuple(x) for x in r.zrange("q:processing", 0, -1, withscores=True)] == \
        [(b"1", 1000.0), (b"2", 1005.0)]
    assert complete(keys=QUEUE_KEYS, args=["2", "q:job:", 1100, "done"]) == b"OK"
    with pytest.raises(redis.ResponseError, match="job 2 is not active"):
        complete(keys=QUEUE_KEYS, args=["2", "q:job:", 1101, "again"])
    assert r.hgetall("q:job:2") == {b"data": b'{"n":2}', b"processedOn": b"1005",
                                    b"attempts": b"1", b"finishedOn": b"1100",
                                    b"returnvalue": b"done"}
    # Job 1 stalls: moved back to wait, behind job 3 (RPUSH: the next RPOPLPUSH takes it).
    assert stalled(keys=QUEUE_KEYS, args=[1050]) == [b"1"]
    assert r.lrange("q:wait", 0, -1) == [b"3", b"1"]
    assert r.llen("q:active") == 0
    assert move(keys=QUEUE_KEYS, args=[2000, "q:job:"]) == [b"1", b'{"n":1}']
    assert r.hget("q:job:1", "attempts") == b"2"
    assert move(keys=QUEUE_KEYS, args=[2001, "q:job:"]) == [b"3", b'{"n":3}']
    assert move(keys=QUEUE_KEYS, args=[2002, "q:job:"]) is None


def test_job_queue_workers_take_each_job_once(server, protocol):
    producer = server.client(protocol=protocol)
    jobs = 200
    for i in range(jobs):
        producer.hset(f"q:job:{i}", "data", str(i))
    producer.lpush("q:wait", *[str(i) for i in range(jobs)])
    taken: list[bytes] = []
    lock = threading.Lock()

    def worker(w):
        c = server.client(protocol=protocol)
        move = c.register_script(MOVE_TO_ACTIVE)
        complete = c.register_script(COMPLETE)
        while True:
            got = move(keys=QUEUE_KEYS, args=[3000 + w, "q:job:"])
            if got is None:
                return
            job_id, data = got
            assert data == job_id
            with lock:
                taken.append(job_id)
            assert complete(keys=QUEUE_KEYS, args=[job_id, "q:job:", 4000, "ok"]) == b"OK"

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(int(x) for x in taken) == list(range(jobs))
    assert producer.llen("q:active") == 0 and producer.zcard("q:processing") == 0
    assert producer.hget("q:job:7", "returnvalue") == b"ok"
