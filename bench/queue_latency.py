#!/usr/bin/env python3
"""The work queue's end-to-end latency: put → get over the RESP door.

    python3 bench/queue_latency.py                     # 1000 puts/s, 100 workers, 10 s
    python3 bench/queue_latency.py --rate 2000 --workers 200 --seconds 20 --tag x
    python3 bench/queue_latency.py --rounds 5 --seconds 20   # 5 rounds, order alternating

- Starts `larder` (in memory) and, as the reference, `redis-server` 7.0.
- larder: 100 workers, each one connection looping `QGET q w<i> AUTOACK BLOCK 0` (the queue's
  own commands: priorities, TTLs and redelivery included); one producer connection sends
  `QPUT q <seq>:<t>` at `--rate` per second, paced per millisecond, where `<t>` is
  CLOCK_MONOTONIC in ns when the put was written.
- redis-server: the same workers and producer over the nearest Redis equivalent, a stream and a
  consumer group (`XADD q * m <seq>:<t>`; workers loop `XREADGROUP GROUP g w<i> COUNT 1 BLOCK 0
  STREAMS q >` and `XACK` what they got), so the figure is what a Redis user builds by hand.
- Latency: from `<t>` to the read that brought the message to a worker. Every message must
  arrive exactly once: lost and duplicated counts are reported (and must be 0).
- Server CPU: utime+stime from /proc over the run.
- `--rounds N`: N rounds, each a fresh run of both servers, which goes first alternating; the
  summary gives each figure's median [min–max] over the rounds and in how many rounds p99 was
  over 1 ms (the issue's target), since one run's tail moves with the machine's own pauses.

Results:
`bench/results/STAMP[-TAG]-queue_latency.md` and `.json`. Standard library only.
"""

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    RESULTS, Server, build_tool, cell, default_larder_bin, encode, machine_busy_seconds,
    machine_line)

HOST = "127.0.0.1"


async def read_reply(reader):
    """One RESP2 reply, parsed (bulk strings as bytes, nulls as None)."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = await reader.readexactly(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        if n < 0:
            return None
        return [await read_reply(reader) for _ in range(n)]
    raise RuntimeError("unexpected reply %r" % line)


async def call(reader, writer, *args):
    writer.write(encode(*args))
    await writer.drain()
    return await read_reply(reader)


def produce_proc(port, target, rate, seconds, out):
    """The producer, in a process of its own so that its pacing and the workers' reads do
    not share one event loop (a put waiting for its reply would delay the reads it times)."""
    out.put(asyncio.run(produce(port, target, rate, seconds)))


async def produce(port, target, rate, seconds):
    reader, writer = await asyncio.open_connection(HOST, port)
    total = int(rate * seconds)
    start = time.monotonic()
    sent = 0
    while sent < total:
        due = start + sent / rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        # Every put due by now (at most one millisecond's worth when on time).
        while sent < total and start + sent / rate <= time.monotonic():
            payload = b"%d:%d" % (sent, time.monotonic_ns())
            if target == "larder":
                await call(reader, writer, "QPUT", "q", payload)
            else:
                await call(reader, writer, "XADD", "q", "*", "m", payload)
            sent += 1
    writer.close()
    return sent


WORKERS_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queue_workers.c")
BUCKET_US = 10


def build_workers():
    """Compile bench/queue_workers.c once per source version into the temp dir."""
    return build_tool(WORKERS_SRC)


def percentile(hist, q):
    total = sum(hist.values())
    want, seen = q * total, 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= want:
            return (b + 1) * BUCKET_US / 1000.0
    return None


def run_one(srv, target, a, exe):
    port = int(srv.port)
    if target == "redis":
        srv.call("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
    workers = subprocess.Popen([exe, str(port), str(a.workers), target],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if workers.stdout.readline().strip() != "ready":
        sys.exit("queue_workers did not start")
    time.sleep(1.0)  # every worker blocked
    cpu0, busy0, t0 = srv.cpu_seconds(), machine_busy_seconds(), time.monotonic()
    out = mp.Queue()
    proc = mp.Process(target=produce_proc, args=(port, target, a.rate, a.seconds, out))
    proc.start()
    total = out.get(timeout=a.seconds + 60)
    proc.join(10)
    time.sleep(1.0)  # the last messages reach their workers
    elapsed = time.monotonic() - t0
    cpu, busy = srv.cpu_seconds() - cpu0, machine_busy_seconds() - busy0
    workers.stdin.write("stop\n")
    workers.stdin.flush()
    res = json.loads(workers.stdout.readline())
    workers.wait(10)
    hist = {int(b): c for b, c in res["hist"].items()}
    return {
        "target": target,
        "puts": total,
        "received": res["messages"],
        "lost": total - res["messages"],
        "duplicated": res["duplicates"],
        "p50_ms": percentile(hist, 0.50),
        "p99_ms": percentile(hist, 0.99),
        "p999_ms": percentile(hist, 0.999),
        "max_ms": (max(hist) + 1) * BUCKET_US / 1000.0 if hist else None,
        "server_cpu_per_s": cpu / elapsed,
        "machine_busy_per_s": busy / elapsed,
    }


def render(meta, runs):
    lines = [
        "## Queue put → get latency over RESP",
        "",
        "- date: %s; machine: %s" % (meta["date"], meta["machine"]),
        "- command: `%s`" % meta["command"],
        "- %d puts/s for %s s, %d workers (bench/queue_workers.c: one epoll loop, one "
        "connection each; the producer another process)"
        % (meta["rate"], meta["seconds"], meta["workers"]),
        "- larder: `QPUT q <seq>:<t>`; workers `QGET q w<i> AUTOACK BLOCK 0`. redis-server "
        "7.0 (reference): `XADD q * m <seq>:<t>`; workers `XREADGROUP GROUP g w<i> COUNT 1 "
        "BLOCK 0 STREAMS q >` then `XACK`",
        "- latency: from the send time in the message to the read that brought it to a worker",
        "",
        "| round | server | puts | received | lost | duplicated | p50 ms | p99 ms | p99.9 ms "
        "| max ms | server CPU/s | machine busy CPUs |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append("| %d | %s | %d | %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |" % (
            r.get("round", 0), r["target"], r["puts"], r["received"], r["lost"], r["duplicated"], r["p50_ms"],
            r["p99_ms"], r["p999_ms"], r["max_ms"], r["server_cpu_per_s"],
            r["machine_busy_per_s"]))
    if meta.get("rounds", 1) > 1:
        lines += [
            "Over %d rounds, median [min–max]:" % meta["rounds"],
            "",
            "| server | p50 ms | p99 ms | p99.9 ms | rounds with p99 > 1 ms | lost | duplicated "
            "| server CPU/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for target in sorted({r["target"] for r in runs}):
            mine = [r for r in runs if r["target"] == target]
            lines.append("| %s | %s | %s | %s | %d of %d | %d | %d | %s |" % (
                target, spread([r["p50_ms"] for r in mine]), spread([r["p99_ms"] for r in mine]),
                spread([r["p999_ms"] for r in mine]), sum(r["p99_ms"] > 1.0 for r in mine),
                len(mine), sum(r["lost"] for r in mine), sum(r["duplicated"] for r in mine),
                spread([r["server_cpu_per_s"] for r in mine], "%.2f")))
    lines.append("")
    return "\n".join(lines)


def spread(values, fmt="%.3f"):
    """median [min–max] of `values`, each written with `fmt`."""
    return cell(values, lambda v: fmt % v)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--larder-bin", default=default_larder_bin())
    p.add_argument("--no-redis", action="store_true", help="larder only")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds of both servers, which goes first alternating")
    p.add_argument("--tag", default="")
    p.add_argument("--out-dir", default=RESULTS)
    a = p.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = os.path.join(a.out_dir, stamp + ("-" + a.tag if a.tag else "") + "-queue_latency")
    exe = build_workers()
    runs = []
    targets = ["larder"] + ([] if a.no_redis else ["redis"])
    for rnd in range(a.rounds):
        order = targets if rnd % 2 == 0 else targets[::-1]
        for target in order:
            if target == "larder":
                srv = Server.larder(a.larder_bin, "larder", base + ".raw").start()
            else:
                srv = Server.redis("redis", base + ".raw").start()
            try:
                r = run_one(srv, target, a, exe)
            finally:
                srv.stop()
            r["round"] = rnd
            runs.append(r)
            print("round %d %s: p50 %.3f ms, p99 %.3f ms, lost %d, duplicated %d" % (
                rnd, target, r["p50_ms"], r["p99_ms"], r["lost"], r["duplicated"]), flush=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine_line(),
        "command": shlex.join(["python3", "bench/queue_latency.py"] + (argv or sys.argv[1:])),
        "rate": a.rate, "seconds": a.seconds, "workers": a.workers, "rounds": a.rounds,
    }
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(render(meta, runs))
    print(render(meta, runs))
    print("wrote %s.md and .json" % base)


if __name__ == "__main__":
    main()
