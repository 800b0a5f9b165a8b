"""Threads share one Cache: lookups take no lock in Rust and hold the GIL only briefly."""

import threading

import larder_cache


def test_threads_read_one_cache_concurrently(build):
    n = 5_000
    c = build({f"key_{i}": f"val_{i}" for i in range(n)} | {"v": [1.0, 2.0]})
    errors = []

    def reader(offset):
        try:
            for i in range(offset, n, 3):
                assert c[f"key_{i}"] == f"val_{i}"
                assert c.get_f64_list("v") == [1.0, 2.0]
            assert sum(1 for _ in c.items()) == n + 1
        except Exception as e:  # noqa: BLE001 - re-raised below on the main thread
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(4)]
    threads.append(threading.Thread(target=c.verify))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
