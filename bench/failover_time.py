#!/usr/bin/env python3
"""Sentinel failover time with a larder master against a redis-server master, in the same
harness (tests/python/sentinel_cluster.py): a master, two redis-server replicas and three
redis-server --sentinel processes on 127.0.0.1, down-after-milliseconds 500,
failover-timeout 3000. Each round starts a fresh cluster, waits until the sentinels know
every replica and each other, SIGKILLs the master and measures the time from the first
+sdown of the master to the first +switch-master, as the sentinels publish them.

    LARDER_BIN=target/release/larder python3 bench/failover_time.py --kills 10

prints the median and max over N kills for both masters.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from sentinel_cluster import Cluster, until  # noqa: E402


def one_kill(kind: str, down_after_ms: int, failover_timeout_ms: int) -> float:
    with tempfile.TemporaryDirectory(prefix=f"failover-{kind}-") as tmp:
        c = Cluster(Path(tmp), master_kind=kind, down_after_ms=down_after_ms,
                    failover_timeout_ms=failover_timeout_ms)
        try:
            until("discovery", c.discovered, timeout=30)
            seconds, _ = c.kill_master()
            return seconds
        finally:
            c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--down-after-ms", type=int, default=500)
    ap.add_argument("--failover-timeout-ms", type=int, default=3000)
    args = ap.parse_args()
    rows = []
    for kind in ("larder", "redis"):
        times = []
        for i in range(args.kills):
            t = one_kill(kind, args.down_after_ms, args.failover_timeout_ms)
            times.append(t)
            print(f"{kind} kill {i + 1}/{args.kills}: {t * 1000:.0f} ms", file=sys.stderr)
        rows.append((kind, statistics.median(times), max(times)))
    print(f"failover time (+sdown to +switch-master), {args.kills} kills, "
          f"down-after {args.down_after_ms} ms, failover-timeout {args.failover_timeout_ms} ms")
    print(f"{'master':<8} {'median ms':>10} {'max ms':>10}")
    for kind, med, mx in rows:
        print(f"{kind:<8} {med * 1000:>10.0f} {mx * 1000:>10.0f}")


if __name__ == "__main__":
    main()
