#!/usr/bin/env python3
"""What idle blocked clients cost everyone else: GET throughput with N clients blocked.

    python3 bench/blocked_idle.py                       # N = 0 and 5000, 3 rounds
    python3 bench/blocked_idle.py --blocked 0,1000,10000 --rounds 5 --tag x

A job queue's workers sit in BLPOP/BRPOP most of the time; a server that spends time on each
of them in every event-loop turn slows every other client. Per round and per N, larder and
redis-server 7.0 (which goes first alternates) are each started fresh, N connections send
`BLPOP idle:<i> <timeout>` (each its own key, so nothing wakes them; timeout 0 by default, and
with `--timeout` they block again at once when it ends), then `redis-benchmark -t get -c 50
-P 1 -n REQUESTS` runs against it. Reported: GET ops/s, p50/p99 (redis-benchmark's summary),
ops per server CPU-second (utime+stime from /proc over the benchmark), and each server's figure
with N blocked ÷ its figure with none (the cost of the idle clients to that server).

Results: `bench/results/STAMP[-TAG]-blocked_idle.md` and `.json`. Standard library only, plus
redis-benchmark (redis-tools).
"""

import argparse
import json
import os
import selectors
import shlex
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    RESULTS, Server, cell, default_larder_bin, encode, machine_line, parse_redis_benchmark)

HOST = "127.0.0.1"


class Blockers:
    """`n` connections blocked in BLPOP on keys of their own; with a timeout, each blocks
    again as soon as its wait ends (a thread reads the nil replies)."""

    def __init__(self, port, n, timeout_s):
        self.socks = []
        self.stop = threading.Event()
        self.sel = selectors.DefaultSelector()
        for i in range(n):
            s = socket.create_connection((HOST, port))
            s.setblocking(False)
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_READ, i)
            s.sendall(self.request(i, timeout_s))
        self.timeout_s = timeout_s
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    @staticmethod
    def request(i, timeout_s):
        return encode("BLPOP", "idle:%d" % i, str(timeout_s))

    def loop(self):
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(4096)
                except BlockingIOError:
                    continue
                if data and self.timeout_s:
                    key.fileobj.sendall(self.request(key.data, self.timeout_s))

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def blocked_clients(srv):
    info = srv.info("clients")
    return int(info.get("blocked_clients", 0))


def run_one(srv, n, a):
    blockers = Blockers(srv.port, n, a.timeout) if n else None
    try:
        deadline = time.time() + 60
        while blocked_clients(srv) < n:
            if time.time() > deadline:
                raise RuntimeError("only %d of %d clients blocked" % (blocked_clients(srv), n))
            time.sleep(0.1)
        cmd = ["redis-benchmark", "-h", HOST, "-p", str(srv.port), "-t", "get", "-c", "50",
               "-P", "1", "-n", str(a.requests), "-r", "10000", "-d", "32"]
        cpu0 = srv.cpu_seconds()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
        cpu = srv.cpu_seconds() - cpu0
    finally:
        if blockers:
            blockers.close()
    r = parse_redis_benchmark(out, a.requests)
    return {"server": srv.label, "blocked": n, "rps": r["rps"], "p50_ms": r.get("p50_ms"),
            "p99_ms": r.get("p99_ms"), "server_cpu_s": round(cpu, 3),
            "ops_per_server_cpu_s": round(a.requests / cpu) if cpu else None}


def spread(values, fmt):
    """median [min–max] of `values`, each written with `fmt`."""
    return cell(values, lambda v: fmt % v)


def render(meta, runs, ns):
    lines = [
        "## Idle blocked clients: GET with N clients blocked in BLPOP",
        "",
        "- date: %s; machine: %s" % (meta["date"], meta["machine"]),
        "- command: `%s`" % meta["command"],
        "- N connections each blocked in `BLPOP idle:<i> %d` (own key: never woken%s); then "
        "`redis-benchmark -t get -c 50 -P 1 -n %d`; each server fresh per cell; %d rounds, "
        "which server goes first alternating" % (
            meta["timeout"], "; blocking again at once after each timeout" if meta["timeout"]
            else "", meta["requests"], meta["rounds"]),
        "- cells: median [min–max] over rounds; \"÷ N=0\": the server's ops per CPU-second with "
        "N blocked over its own figure with none, per round",
        "",
        "| server | blocked | GET ops/s | p50 ms | p99 ms | ops per server CPU-s | ÷ N=0 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label in ("larder", "redis"):
        base = {r["round"]: r["ops_per_server_cpu_s"] for r in runs
                if r["server"] == label and r["blocked"] == ns[0]}
        for n in ns:
            mine = [r for r in runs if r["server"] == label and r["blocked"] == n]
            if not mine:
                continue
            rel = [r["ops_per_server_cpu_s"] / base[r["round"]] for r in mine
                   if base.get(r["round"])]
            lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                label, n, spread([r["rps"] for r in mine], "%.0f"),
                spread([r["p50_ms"] for r in mine], "%.3f"),
                spread([r["p99_ms"] for r in mine], "%.3f"),
                spread([r["ops_per_server_cpu_s"] for r in mine], "%.0f"),
                spread(rel, "%.2f×") if rel else "–"))
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocked", default="0,5000", help="blocked client counts; the first is "
                   "the baseline")
    p.add_argument("--timeout", type=int, default=0,
                   help="BLPOP timeout in seconds (0: for ever); each blocks again when it ends")
    p.add_argument("--requests", type=int, default=200000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--larder-bin", default=default_larder_bin())
    p.add_argument("--tag", default="")
    p.add_argument("--out-dir", default=RESULTS)
    a = p.parse_args(argv)
    ns = [int(x) for x in a.blocked.split(",")]
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = os.path.join(a.out_dir, stamp + ("-" + a.tag if a.tag else "") + "-blocked_idle")
    extra = ["--maxclients", str(max(ns) + 1000)]
    runs = []
    for rnd in range(a.rounds):
        for n in ns:
            order = ["larder", "redis"] if rnd % 2 == 0 else ["redis", "larder"]
            for label in order:
                if label == "larder":
                    srv = Server.larder(a.larder_bin, "larder", base + ".raw", extra)
                else:
                    srv = Server.redis("redis", base + ".raw", extra)
                srv.start()
                try:
                    r = run_one(srv, n, a)
                finally:
                    srv.stop()
                r["round"] = rnd
                runs.append(r)
                print("round %d %-6s blocked %5d: %.0f ops/s, %s ops/CPU-s, p99 %s ms" % (
                    rnd, label, n, r["rps"], r["ops_per_server_cpu_s"], r["p99_ms"]), flush=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine_line(),
        "command": shlex.join(["python3", "bench/blocked_idle.py"] + (argv or sys.argv[1:])),
        "timeout": a.timeout, "requests": a.requests, "rounds": a.rounds, "blocked": ns,
    }
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(render(meta, runs, ns))
    print(render(meta, runs, ns))
    print("wrote %s.md and .json" % base)


if __name__ == "__main__":
    main()
