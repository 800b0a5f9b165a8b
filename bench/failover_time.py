#!/usr/bin/env python3
"""Sentinel failover time with larder against redis-server, in the same harness
(tests/python/sentinel_cluster.py): a master, two replicas and three redis-server --sentinel
processes on 127.0.0.1, down-after-milliseconds 500, failover-timeout 3000 (both options).

`--replicas same` (the default) makes the replicas of the master's kind, so an all-larder
cluster is measured against an all-redis one; `--replicas larder` or `--replicas redis` puts
that kind under both masters. Each round kills one larder master and one redis master, the
order alternating from round to round; each kill starts a fresh cluster, waits until the
sentinels know every replica and each other, SIGKILLs the master and measures the time from
the first +sdown of the master to the first +switch-master away from it, as the sentinels
publish them. Sentinels run with stock periods unless --fast-sentinels (the tests' `SENTINEL
DEBUG` periods, see sentinel_cluster.FAST_SENTINEL).

    LARDER_BIN=target/release/larder python3 bench/failover_time.py --rounds 10

prints the median and max per kind and writes bench/results/<stamp>-failover_time.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests" / "python"))
sys.path.insert(0, str(BENCH))

from resp_compare import RESULTS, machine_line  # noqa: E402
from sentinel_cluster import FAST_SENTINEL, Cluster, larder_bin, redis_bin, until  # noqa: E402

KINDS = ("larder", "redis")


def one_kill(kind: str, a: argparse.Namespace) -> dict:
    replica_kind = kind if a.replicas == "same" else a.replicas
    with tempfile.TemporaryDirectory(prefix=f"failover-{kind}-") as tmp:
        c = Cluster(Path(tmp), master_kind=kind, replica_kind=replica_kind,
                    down_after_ms=a.down_after_ms, failover_timeout_ms=a.failover_timeout_ms,
                    fast_sentinels=a.fast_sentinels)
        try:
            until("discovery", c.discovered, timeout=30)
            seconds, _ = c.kill_master()
            return {"master": kind, "replicas": replica_kind, "seconds": seconds}
        finally:
            c.close()


def version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    except OSError as e:
        return f"? ({e})"
    return out.strip().splitlines()[0] if out.strip() else "?"


def summary(kills: list[dict]) -> dict:
    out = {}
    for kind in KINDS:
        times = [k["seconds"] for k in kills if k["master"] == kind]
        if times:
            out[kind] = {"kills": len(times), "median_ms": statistics.median(times) * 1000,
                         "max_ms": max(times) * 1000, "replicas": next(
                             k["replicas"] for k in kills if k["master"] == kind)}
    return out


def render(meta: dict, summ: dict, kills: list[dict]) -> str:
    lines = [
        "# Sentinel failover time: larder against redis-server",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']}",
        f"- command: `{meta['command']}`",
        f"- larder: {meta['larder']}; redis: {meta['redis']}",
        f"- {meta['rounds']} rounds (one kill of each master kind per round, order "
        f"alternating), down-after {meta['down_after_ms']} ms, failover-timeout "
        f"{meta['failover_timeout_ms']} ms, sentinel periods: {meta['sentinel_periods']}",
        "- time: first +sdown of the killed master to the first +switch-master away from it "
        "(sentinel events, 3 sentinels, quorum 2)",
        "",
        "| master | replicas | kills | median ms | max ms |",
        "|---|---|---:|---:|---:|",
    ]
    for kind, s in summ.items():
        lines.append(f"| {kind} | {s['replicas']} | {s['kills']} | {s['median_ms']:.0f} | "
                     f"{s['max_ms']:.0f} |")
    lines += ["", "Kills in order: " + ", ".join(
        f"{k['master']} {k['seconds'] * 1000:.0f}" for k in kills) + " (ms)"]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", "--kills", dest="rounds", type=int, default=10,
                    help="kills of each master kind (larder and redis interleaved)")
    ap.add_argument("--replicas", choices=("larder", "redis", "same"), default="same",
                    help="the replicas' kind; same: the master's")
    ap.add_argument("--down-after-ms", type=int, default=500)
    ap.add_argument("--failover-timeout-ms", type=int, default=3000)
    ap.add_argument("--fast-sentinels", action="store_true",
                    help=f"SENTINEL DEBUG {FAST_SENTINEL} on every sentinel")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    if not Path(larder_bin()).exists():
        sys.exit(f"larder binary {larder_bin()} not found: cargo build --release -p "
                 "larder-server, or LARDER_BIN")
    kills = []
    for rnd in range(a.rounds):
        order = KINDS if rnd % 2 == 0 else KINDS[::-1]
        for kind in order:
            k = one_kill(kind, a)
            k["round"] = rnd + 1
            kills.append(k)
            print(f"round {rnd + 1}/{a.rounds} {kind} (replicas {k['replicas']}): "
                  f"{k['seconds'] * 1000:.0f} ms", file=sys.stderr)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
        "command": shlex.join(["python3", "bench/failover_time.py", *sys.argv[1:]]),
        "larder": version([larder_bin(), "--version"]),
        "redis": version([redis_bin(), "--version"]),
        "rounds": a.rounds, "replicas": a.replicas, "down_after_ms": a.down_after_ms,
        "failover_timeout_ms": a.failover_timeout_ms,
        "sentinel_periods": f"SENTINEL DEBUG {FAST_SENTINEL}" if a.fast_sentinels
        else "stock (ping 1000, info 10000, publish 2000 ms)",
    }
    summ = summary(kills)
    md = render(meta, summ, kills)
    Path(a.out_dir).mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = str(Path(a.out_dir) / f"{stamp}-failover_time")
    Path(base + ".json").write_text(
        json.dumps({"meta": meta, "summary": summ, "kills": kills}, indent=1) + "\n")
    Path(base + ".md").write_text(md + "\n")
    print(md)
    print(f"\nwrote {base}.{{md,json}}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
