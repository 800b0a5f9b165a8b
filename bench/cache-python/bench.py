#!/usr/bin/env python3
"""AxonCache's benchmark from Python: larder cache file vs dict vs the `lmdb` package.

Inserts N keys `key_<i>` -> `val_<i>` (default 1,000,000), then looks them all up in shuffled
order in a tight loop over a pre-built key list, R times (default 3), and prints a markdown
table of the mean and standard deviation in nanoseconds per insert and per lookup.

    python bench/cache-python/bench.py [--keys N] [--runs R] [--dir DIR]

Each run builds every store from scratch. Insert times include making the store durable and
readable: `Builder.finish()` (index, header, fsync, rename) for larder, the write transaction's
commit for lmdb. Lookups use the same call shape for each store (`get = store.get` bound once,
then `get(key)` per key), plus a subscript row (`store[key]`) for larder and dict. larder and
dict take `str` keys; lmdb takes `bytes`, pre-encoded outside the timing. Every lookup's result
is checked once, outside the timed loop, so the timed loop is only the lookups.

Needs: larder_cache (bindings/python/test.sh installs it), lmdb, numpy is not needed.
"""

import argparse
import gc
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time

import larder_cache

try:
    import lmdb
except ImportError:  # the table says so instead of failing
    lmdb = None


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"CPython {platform.python_version()}"
    )


def timed(fn) -> tuple[int, int]:
    """(thread CPU time, wall time) of fn() in ns, with the garbage collector off (as timeit
    does). CPU time is the headline: the machine may be shared, and wall time then includes time
    spent descheduled."""
    gc.collect()
    gc.disable()
    try:
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        fn()
        return time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    finally:
        gc.enable()


def lookup_loop(get, keys):
    for k in keys:
        get(k)


def subscript_loop(store, keys):
    for k in keys:
        store[k]


# --- stores ------------------------------------------------------------------------------


def build_larder(path, keys, values):
    b = larder_cache.Builder(path, name="bench")
    insert = b.insert
    for k, v in zip(keys, values):
        insert(k, v)
    b.finish()


def build_dict(keys, values):
    d = {}
    for k, v in zip(keys, values):
        d[k] = v
    return d


def build_lmdb(path, bkeys, bvalues):
    env = lmdb.open(path, map_size=8 << 30, subdir=True, sync=False, metasync=False,
                    readahead=False, max_dbs=0)
    with env.begin(write=True) as txn:
        put = txn.put
        for k, v in zip(bkeys, bvalues):
            put(k, v)
    return env


def run(n: int, runs: int, workdir: str) -> dict:
    keys = [f"key_{i}" for i in range(n)]
    values = [f"val_{i}" for i in range(n)]
    bkeys = [k.encode() for k in keys]
    bvalues = [v.encode() for v in values]
    order = list(range(n))
    results = {}  # row name -> list of ns per operation

    def record(name, times):
        cpu_ns, wall_ns = times
        results.setdefault(name, []).append(cpu_ns / n)
        results.setdefault(name + " wall", []).append(wall_ns / n)

    for r in range(runs):
        random.seed(r)
        random.shuffle(order)
        shuffled = [keys[i] for i in order]
        bshuffled = [bkeys[i] for i in order]
        sample = order[:1000]

        # larder
        path = os.path.join(workdir, f"bench-{r}.lcache")
        record("larder insert", timed(lambda: build_larder(path, keys, values)))
        cache = larder_cache.open(path)
        assert all(cache.get(keys[i]) == values[i] for i in sample)
        record("larder get(str)", timed(lambda: lookup_loop(cache.get, shuffled)))
        record("larder [str]", timed(lambda: subscript_loop(cache, shuffled)))
        record("larder get_str(str)", timed(lambda: lookup_loop(cache.get_str, shuffled)))
        record("larder get(bytes)", timed(lambda: lookup_loop(cache.get, bshuffled)))
        results.setdefault("larder file MB", []).append(os.path.getsize(path) / 1e6)
        del cache
        os.unlink(path)

        # dict
        holder = {}
        record("dict insert", timed(lambda: holder.setdefault("d", build_dict(keys, values))))
        d = holder.pop("d")
        record("dict get(str)", timed(lambda: lookup_loop(d.get, shuffled)))
        record("dict [str]", timed(lambda: subscript_loop(d, shuffled)))
        del d

        # lmdb
        if lmdb is not None:
            lpath = os.path.join(workdir, f"bench-{r}.lmdb")
            envs = []
            record("lmdb insert", timed(lambda: envs.append(build_lmdb(lpath, bkeys, bvalues))))
            env = envs.pop()
            with env.begin() as txn:
                assert all(txn.get(bkeys[i]) == bvalues[i] for i in sample)
                record("lmdb get(bytes)", timed(lambda: lookup_loop(txn.get, bshuffled)))
            results.setdefault("lmdb file MB", []).append(
                os.path.getsize(os.path.join(lpath, "data.mdb")) / 1e6)
            env.close()
            shutil.rmtree(lpath)

        # The cost of the loop itself, for reference.
        record("empty loop", timed(lambda: lookup_loop(id, shuffled)))
    return results


def fmt(xs) -> str:
    mean = statistics.fmean(xs)
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{mean:.0f} ± {sd:.0f}"


def table(results: dict, n: int, runs: int) -> str:
    def mean(name):
        return statistics.fmean(results[name]) if name in results else float("nan")

    rows = [
        ("larder", "larder insert", "larder get(str)", "larder [str]"),
        ("dict", "dict insert", "dict get(str)", "dict [str]"),
        ("lmdb", "lmdb insert", "lmdb get(bytes)", None),
    ]
    out = [
        f"{n:,} keys `key_<i>` -> `val_<i>`, shuffled lookups, {runs} runs, "
        "mean ± stdev in ns per operation (thread CPU time; wall time in the last columns)",
        "",
        "| store | insert (ns/key) | lookup `get(k)` (ns) | lookup `store[k]` (ns) "
        "| insert wall | `get(k)` wall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, ins, get, sub in rows:
        if get not in results:
            out.append(f"| {label} | not installed | | | | |")
            continue
        out.append(
            f"| {label} | {fmt(results[ins])} | {fmt(results[get])} | "
            f"{fmt(results[sub]) if sub else 'n/a'} | {fmt(results[ins + ' wall'])} | "
            f"{fmt(results[get + ' wall'])} |"
        )
    out += [
        "",
        "| other rows | ns per lookup |",
        "|---|---:|",
        f"| larder `get_str(k)` | {fmt(results['larder get_str(str)'])} |",
        f"| larder `get(k)` with bytes keys | {fmt(results['larder get(bytes)'])} |",
        f"| empty loop (`for k in keys: id(k)`) | {fmt(results['empty loop'])} |",
        "",
        "| ratio | value | target |",
        "|---|---:|---|",
        f"| larder get / dict get | {mean('larder get(str)') / mean('dict get(str)'):.2f}x | "
        "≤ 2x |",
        f"| larder [k] / dict [k] | {mean('larder [str]') / mean('dict [str]'):.2f}x | ≤ 2x |",
    ]
    if "lmdb get(bytes)" in results:
        out.append(
            f"| lmdb get / larder get | {mean('lmdb get(bytes)') / mean('larder get(str)'):.2f}x"
            " | ≥ 3x |"
        )
        out.append(
            f"| file size: larder / lmdb | {mean('larder file MB'):.1f} MB / "
            f"{mean('lmdb file MB'):.1f} MB | |"
        )
    else:
        out.append(f"| larder file size | {mean('larder file MB'):.1f} MB | |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the files (default: a temp dir)")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="larder-bench-", dir=args.dir)
    try:
        results = run(args.keys, args.runs, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"machine: {machine()}")
    print(
        f"larder_cache {larder_cache.__version__}, "
        f"lmdb {getattr(lmdb, '__version__', 'not installed')}"
    )
    print()
    print(table(results, args.keys, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
