"""Job functions for test_apps.py's RQ tests: RQ's workers import them by name
(`rq_jobs.record`), in their own processes, so they live in a module of their own."""

from rq import get_current_job


def record(key: str, n: int) -> int:
    """Add `n` to the set `key` and count the run: a job that ran twice shows in the count."""
    conn = get_current_job().connection
    conn.sadd(key, n)
    conn.incr(key + ":runs")
    return n * 2


def fail(message: str, key: str) -> None:
    """Count the run in `key`, then fail."""
    get_current_job().connection.incr(key)
    raise ValueError(message)


def after(key: str, parent_key: str) -> bool:
    """A dependent job: true when its parent's writes are there before it runs."""
    conn = get_current_job().connection
    seen = conn.exists(parent_key + ":runs") == 1
    conn.set(key, int(seen))
    return seen
