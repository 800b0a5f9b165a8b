"""Four processes map and read the same file at once."""

import multiprocessing as mp

import larder_cache

N = 20_000


def _read_all(cache: larder_cache.Cache | str, worker: int) -> tuple[int, int]:
    c = larder_cache.open(cache) if isinstance(cache, str) else cache
    ok = 0
    for i in range(worker, N, 1):
        if c.get_str(f"key_{i}") == f"val_{i}" and c[f"emb_{i % 100}"][0] == float(i % 100):
            ok += 1
    return worker, ok


def test_four_processes_read_one_file(tmp_path):
    path = tmp_path / "shared.lcache"
    with larder_cache.Builder(path) as b:
        for i in range(N):
            b.insert(f"key_{i}", f"val_{i}")
        for i in range(100):
            b.insert(f"emb_{i}", [float(i)] * 16)
    ctx = mp.get_context("spawn")  # fresh interpreters: nothing inherited but the path
    with ctx.Pool(4) as pool:
        results = pool.starmap(_read_all, [(str(path), w) for w in range(4)])
    assert sorted(results) == [(w, N - w) for w in range(4)]


def test_a_cache_pickles_as_its_path(tmp_path):
    path = tmp_path / "pickled.lcache"
    with larder_cache.Builder(path) as b:
        for i in range(N):
            b.insert(f"key_{i}", f"val_{i}")
        for i in range(100):
            b.insert(f"emb_{i}", [float(i)] * 16)
    cache = larder_cache.open(path)
    import pickle

    clone = pickle.loads(pickle.dumps(cache))
    assert clone.path == cache.path and len(clone) == len(cache)
    with mp.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(_read_all, [(cache, w) for w in range(2)])
    assert sorted(results) == [(w, N - w) for w in range(2)]
