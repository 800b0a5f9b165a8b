#!/usr/bin/env python3
"""A runaway script, side by side: how long other clients are held, and how fast SCRIPT KILL
ends it (issue 14's third target).

For each server (larder with --threads 1 and 2, redis-server 7.0) and each round:
  1. CONFIG SET busy-reply-threshold <T> ms;
  2. client A sends EVAL "while true do end" 0 (at t0);
  3. client B sends PING in a loop (each waits for its reply) and records when the first
     -BUSY reply arrives: "held" = that time − t0 (target: about T, never much more);
  4. client B sends SCRIPT KILL (at t1) and A's error reply arrives at t2: "kill" = t2 − t1
     (target: within 100 ms);
  5. a PING on B must answer PONG again.
Reported: held and kill per round, median and max, and the replies seen.

    python3 bench/script_busy.py                    # 5 rounds, threshold 200 ms
    python3 bench/script_busy.py --rounds 20 --threshold-ms 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import Resp, RespError, Server, default_larder_bin, encode  # noqa: E402


def one_round(port: int, threshold_ms: int) -> dict:
    a, b = Resp(port, timeout=30), Resp(port, timeout=30)
    b.sock.sendall(encode("CONFIG", "SET", "busy-reply-threshold", str(threshold_ms)))
    assert b.reply() == "OK"
    t0 = time.perf_counter()
    a.sock.sendall(encode("EVAL", "while true do end", "0"))
    first_busy = None
    while first_busy is None:
        b.sock.sendall(encode("PING"))
        r = b.reply()
        if isinstance(r, RespError) and str(r).startswith("BUSY"):
            first_busy = time.perf_counter()
        elif time.perf_counter() - t0 > 30:
            raise RuntimeError("no BUSY within 30 s")
    t1 = time.perf_counter()
    b.sock.sendall(encode("SCRIPT", "KILL"))
    killed = b.reply()
    err = a.reply()
    t2 = time.perf_counter()
    b.sock.sendall(encode("PING"))
    after = b.reply()
    a.close()
    b.close()
    return {
        "held_ms": (first_busy - t0) * 1000,
        "kill_ms": (t2 - t1) * 1000,
        "kill_reply": str(killed),
        "script_error": str(err)[:60],
        "after": str(after),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threshold-ms", type=int, default=200)
    args = ap.parse_args()
    log = "/tmp/script_busy.log"
    servers = [
        Server.larder(args.larder_bin, "larder-t1", log, ["--threads", "1"]),
        Server.larder(args.larder_bin, "larder-t2", log, ["--threads", "2"]),
        Server.redis("redis", log),
    ]
    print(f"busy-reply-threshold {args.threshold_ms} ms, {args.rounds} rounds per server\n")
    print("| server | held median ms | held max ms | kill median ms | kill max ms | replies |")
    print("|---|---:|---:|---:|---:|---|")
    for s in servers:
        s.start()
        try:
            rounds = [one_round(s.port, args.threshold_ms) for _ in range(args.rounds)]
        finally:
            s.stop()
        held = [r["held_ms"] for r in rounds]
        kill = [r["kill_ms"] for r in rounds]
        seen = sorted({(r["kill_reply"], r["script_error"], r["after"]) for r in rounds})
        print(f"| {s.label} | {statistics.median(held):.1f} | {max(held):.1f} | "
              f"{statistics.median(kill):.2f} | {max(kill):.2f} | {seen} |")


if __name__ == "__main__":
    main()
