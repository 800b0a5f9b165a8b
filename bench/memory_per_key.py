#!/usr/bin/env python3
"""Memory per key: load N small strings into larder and into redis-server, compare the growth.

Each server starts fresh and alone (one at a time, so neither disturbs the other), idles for a
moment, then receives N pipelined SETs over a raw socket: 16-byte keys `key:%012d` and 32-byte
values `val:%028d` (distinct, and too long for Redis's integer encoding). Reported for each:
RSS (VmRSS from /proc) and INFO memory `used_memory` before and after, the growth per key, and
the larder/redis ratio. RSS is the number that compares across servers: used_memory is whatever
each server chooses to count. Standard library only; helpers come from resp_compare.py.
"""

import argparse
import json
import os
import shlex
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    REPO, RESULTS, Server, default_larder_bin, machine_line, send_all_count_ok, set_batches,
    verify_keys)


def key_format(key_bytes):
    return b"key:%0" + str(key_bytes - 4).encode() + b"d"


def load(server, n, key_bytes, value_bytes, batch=2000):
    kfmt = key_format(key_bytes)
    vfmt = b"val:%0" + str(value_bytes - 4).encode() + b"d"
    keys = (kfmt % i for i in range(n))
    return send_all_count_ok(server.port, set_batches(keys, lambda i, k: vfmt % i, batch), n)


def num(v):
    return "–" if v is None else "%.1f" % v


def used_memory(server):
    v = server.info("memory").get("used_memory")
    return int(v) if v is not None else None


def measure(server, a):
    server.start()
    time.sleep(a.settle)
    rss0, used0 = server.rss_bytes(), used_memory(server)
    t = load(server, a.keys, a.key_bytes, a.value_bytes)
    time.sleep(a.settle)
    rss1, used1 = server.rss_bytes(), used_memory(server)
    kfmt = key_format(a.key_bytes)
    try:
        verify_keys(server, a.keys, a.value_bytes, a.keys, key_of=lambda i: kfmt % i)
        version = server.version()
    finally:
        server.stop()
    return {"server": server.label, "version": version, "argv": shlex.join(server.argv),
            "load_s": round(t, 3), "keys_per_s": round(a.keys / t),
            "rss_before": rss0, "rss_after": rss1,
            "rss_bytes_per_key": (rss1 - rss0) / a.keys,
            "used_memory_before": used0, "used_memory_after": used1,
            "used_memory_bytes_per_key": (used1 - used0) / a.keys
            if used0 is not None and used1 is not None else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="")
    ap.add_argument("--redis-args", default="")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--key-bytes", type=int, default=16)
    ap.add_argument("--value-bytes", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=1, help="fresh servers per round")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds idle before each reading")
    ap.add_argument("--taskset-server")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    if a.key_bytes - 4 < len(str(a.keys - 1)) or a.value_bytes - 4 < len(str(a.keys - 1)):
        ap.error("keys or values too short for their numbering")
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release, or --larder-bin, or "
                 "--only-redis" % a.larder_bin)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-memory_per_key")
    log = base + "-servers.log.raw"

    def server_a():
        if a.only_redis:
            return Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
        return Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                             a.taskset_server)

    def server_b():
        return Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)

    results = []
    for rnd in range(a.rounds):
        makers = [server_a, server_b] if rnd % 2 == 0 else [server_b, server_a]
        for make in makers:
            r = measure(make(), a)
            r["round"] = rnd
            results.append(r)
            print("round %d %-8s rss +%.1f B/key, used_memory +%s B/key, load %.1fs" % (
                rnd, r["server"], r["rss_bytes_per_key"], num(r["used_memory_bytes_per_key"]),
                r["load_s"]), file=sys.stderr)

    labels = [results[0]["server"], results[1]["server"]]
    if results[0]["server"] == "redis":
        labels.reverse()

    def median(lab, m):
        vals = [r[m] for r in results if r["server"] == lab and r[m] is not None]
        return statistics.median(vals) if vals else None

    med = {lab: {m: median(lab, m)
                 for m in ("rss_before", "rss_after", "rss_bytes_per_key", "used_memory_before",
                           "used_memory_after", "used_memory_bytes_per_key", "keys_per_s")}
           for lab in labels}

    def mib(v):
        return "–" if v is None else "%.1f" % (v / 2 ** 20)

    def ratio(x, y):
        return "–" if x is None or not y else "%.2f×" % (x / y)

    out = ["## Memory per key: %d keys, %d-byte keys, %d-byte values\n"
           % (a.keys, a.key_bytes, a.value_bytes),
           "- date: %s; machine: %s" % (time.strftime("%Y-%m-%d %H:%M:%S %Z"), machine_line()),
           "- command: `%s`" % shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                          + sys.argv[1:]),
           "- servers: " + "; ".join("%s = `%s` (%s)" % (r["server"], r["argv"], r["version"])
                                     for r in results[:2]),
           "- each server fresh and alone; pipelined raw-socket SETs; readings after %.1f s idle;"
           " %d round(s), medians shown\n" % (a.settle, a.rounds),
           "| server | RSS before MiB | RSS after MiB | RSS B/key | used_memory before MiB |"
           " used_memory after MiB | used_memory B/key | load keys/s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for lab in labels:
        m = med[lab]
        out.append("| %s | %s | %s | **%.1f** | %s | %s | %s | %.0fk |" % (
            lab, mib(m["rss_before"]), mib(m["rss_after"]), m["rss_bytes_per_key"],
            mib(m["used_memory_before"]), mib(m["used_memory_after"]),
            num(m["used_memory_bytes_per_key"]), m["keys_per_s"] / 1e3))
    ra, rb = med[labels[0]], med[labels[1]]
    out.append("| %s/%s | | | **%s** | | | %s | |" % (
        labels[0], labels[1], ratio(ra["rss_bytes_per_key"], rb["rss_bytes_per_key"]),
        ratio(ra["used_memory_bytes_per_key"], rb["used_memory_bytes_per_key"])))
    md = "\n".join(out)
    with open(base + ".json", "w") as f:
        json.dump({"args": vars(a), "machine": machine_line(), "runs": results}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)


if __name__ == "__main__":
    main()
