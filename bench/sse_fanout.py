#!/usr/bin/env python3
"""SSE fan-out: one writer at a fixed rate of changes, N watchers on the HTTP door's
`/v1/watch`, every change to every watcher.

    python3 bench/sse_fanout.py                       # 100 and 1000 watchers, 1000 changes/s, 10 s
    python3 bench/sse_fanout.py --watchers 1000 --procs 4 --seconds 30
    python3 bench/sse_fanout.py --seconds 3 --tag smoke
    python3 bench/sse_fanout.py --reader python       # the asyncio readers instead of C

- `--reader c` (the default): the watchers are `bench/sse_reader.c` (compiled here), N
  connections on one epoll loop per reader process, parsing every event as the Python
  readers below do; Python cannot parse a million events a second, so with it the readers,
  not the server, set the pace at 1000 watchers.

- Starts `larder --http-port P` (in memory) and opens N watchers as asyncio readers: raw
  sockets, `GET /v1/watch?prefix=bench:&values=1&heartbeat=1s`, parsed as they arrive. `--procs` spreads
  them over that many reader processes, each one asyncio loop (default 1: every watcher in
  one process; a reader process near 100% CPU is then what sets the pace, and the report says
  so).
- Once every watcher has its response head, a writer (another process's thread, a blocking
  RESP socket, replies read by a second thread) sends `SET bench:<i mod 1000> <i>:<t>` at
  `--rate` changes/s, paced per millisecond, where `<t>` is CLOCK_MONOTONIC in ns when the
  command was written (the same clock in every process on Linux).
- Each watcher records, per event: the change's number `i` (from the value), the SSE `id:`, and
  the latency from `<t>` to the read that brought the event. It counts events, `resync`s, ids
  that did not follow the previous one without a `resync` before them (gaps), and numbers that
  went backwards (out of order). A watcher "keeps up" when it got no `resync` and read the
  last change; for those, lost = changes written − events received. One that has not read
  the last change 60 s after the writer stopped is "unfinished" (its reader was too slow).
- Server CPU is utime+stime from /proc over the writer's run and the drain after it.

Results: `bench/results/STAMP[-TAG]-sse_fanout.md` and `.json`. Standard library only.
"""

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shlex
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    RESULTS, Server, default_larder_bin, encode, free_port, machine_busy_seconds,
    machine_line, build_tool)

HOST = "127.0.0.1"
BUCKET_US = 10
BUCKETS = 200_000  # 10 µs buckets up to 2 s; the last one holds everything slower
KEYS = 1000
GRACE_S = 60


# ---------------------------------------------------------------- readers


class Tally:
    """One watcher's counts."""

    def __init__(self):
        self.events = 0
        self.resyncs = 0
        self.gaps = 0  # an id that did not follow the previous one, without a resync
        self.out_of_order = 0
        self.last_id = None
        self.last_seq = -1
        self.after_resync = False


async def watch_one(path, tally, hist, ready, stop, final_seq):
    reader, writer = await asyncio.open_connection(HOST, PORT)
    writer.write(b"GET " + path + b" HTTP/1.1\r\nHost: bench\r\n\r\n")
    await writer.drain()
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = await reader.read(65536)
        if not data:
            raise RuntimeError("the stream closed before its head")
        buf += data
    head, _, buf = buf.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("watch refused: %r" % head[:80])
    ready()
    monotonic_ns = time.monotonic_ns
    while True:
        # Heartbeats (1 s) bring the loop here when no change comes.
        if stop.is_set() and (tally.last_seq >= final_seq.value or
                              time.monotonic() > STOP_GRACE[0]):
            break
        data = await reader.read(1 << 18)
        if not data:
            break
        now = monotonic_ns()
        buf += data
        blocks = buf.split(b"\n\n")
        buf = blocks.pop()
        for b in blocks:
            if not b or b[0] == 58:  # ':' a heartbeat
                continue
            if b.startswith(b"event: resync"):
                tally.resyncs += 1
                tally.after_resync = True
                continue
            nl = b.index(b"\n")
            eid = int(b[4:nl])
            j = b.index(b'"value":"') + 9
            seq, sent = b[j:b.index(b'"', j)].split(b":")
            seq = int(seq)
            if tally.last_id is not None and eid != tally.last_id + 1 and not tally.after_resync:
                tally.gaps += 1
            if seq <= tally.last_seq:
                tally.out_of_order += 1
            tally.after_resync = False
            tally.last_id = eid
            tally.last_seq = seq
            tally.events += 1
            us = (now - int(sent)) // 1000
            hist[min(us // BUCKET_US, BUCKETS)] += 1
    writer.close()


PORT = 0
STOP_GRACE = [float("inf")]


def reader_proc(port, n, path, ready_q, stop, final_seq, result_q):
    """One reader process: `n` watchers on one asyncio loop."""
    global PORT
    PORT = port

    async def main():
        tallies = [Tally() for _ in range(n)]
        hist = [0] * (BUCKETS + 1)
        start = {}

        def ready():
            ready_q.put(1)
            start["ready"] = start.get("ready", 0) + 1
            if start["ready"] == n:
                # The measured window starts once this process's watchers are all open.
                start["cpu"], start["wall"] = time.process_time(), time.monotonic()

        async def stopper():
            while not stop.is_set():
                await asyncio.sleep(0.05)
            # A watcher that has not read the last change by then stops as unfinished.
            STOP_GRACE[0] = time.monotonic() + GRACE_S
            final["cpu"], final["wall"] = time.process_time(), time.monotonic()

        final = {}
        tasks = [asyncio.ensure_future(stopper())]
        for t in tallies:
            tasks.append(asyncio.ensure_future(
                watch_one(path, t, hist, ready, stop, final_seq)))
        await asyncio.gather(*tasks)
        result_q.put({
            "tallies": [t.__dict__ for t in tallies],
            "hist": {i: c for i, c in enumerate(hist) if c},
            # CPU over the writer's run (from all open to the stop signal).
            "cpu_s": final["cpu"] - start["cpu"],
            "wall_s": final["wall"] - start["wall"],
        })

    asyncio.run(main())


# ---------------------------------------------------------------- writer


def write_changes(port, rate, seconds):
    """SET bench:<i mod KEYS> <i>:<monotonic ns> at `rate` per second; returns (changes,
    wall seconds, worst lag behind schedule in ms)."""
    sock = socket.create_connection((HOST, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    total = int(rate * seconds)
    replies = {"n": 0}

    def drain():
        buf = b""
        while replies["n"] < total:
            data = sock.recv(1 << 16)
            if not data:
                return
            buf += data
            k = buf.count(b"\r\n")
            replies["n"] += k
            buf = buf[buf.rindex(b"\r\n") + 2:] if k else buf

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    start = time.monotonic()
    worst = 0.0
    i = 0
    while i < total:
        due = int((time.monotonic() - start) * rate) + 1
        if due > i:
            out = bytearray()
            for j in range(i, min(due, total)):
                out += encode("SET", "bench:%d" % (j % KEYS), "%d:%d" % (j, time.monotonic_ns()))
            sock.sendall(out)
            worst = max(worst, (time.monotonic() - start - i / rate) * 1000)
            i = min(due, total)
        else:
            time.sleep(max(0.0, start + i / rate - time.monotonic()))
    wall = time.monotonic() - start
    t.join(30)
    sock.close()
    return total, wall, worst


# ---------------------------------------------------------------- one run


def percentile(hist, q):
    n = sum(hist.values())
    if n == 0:
        return None
    want = max(1, -(-int(q * n * 1000) // 1000))  # ceil(q * n), in integers
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= want:
            return (b + 1) * BUCKET_US / 1000.0  # upper edge, ms
    return None


SSE_READER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sse_reader.c")


def build_reader():
    """Compile bench/sse_reader.c once per source version into the temp dir."""
    return build_tool(SSE_READER_SRC)


def start_c_readers(a, path, shares):
    """The C readers: one process per share, each ready once its watchers have heads."""
    exe = build_reader()
    ps = [subprocess.Popen([exe, str(a.http_port), str(n), path.decode()],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
          for n in shares]
    for p in ps:
        line = p.stdout.readline()
        if line.strip() != "ready":
            sys.exit("sse_reader did not get its watchers open")
    return ps


def stop_c_readers(ps, final):
    out = []
    for p in ps:
        p.stdin.write("stop %d\n" % final)
        p.stdin.flush()
    for p in ps:
        out.append(json.loads(p.stdout.readline()))
        p.wait(30)
    return out


def run(a, srv, watchers):
    path = b"/v1/watch?prefix=bench:&values=1&heartbeat=1s"
    procs = max(1, min(a.procs, watchers))
    shares = [watchers // procs + (1 if k < watchers % procs else 0) for k in range(procs)]
    if a.reader == "c":
        ps = start_c_readers(a, path, shares)
        time.sleep(0.5)
        cpu0, busy0, t0 = srv.cpu_seconds(), machine_busy_seconds(), time.monotonic()
        total, wall, lag = write_changes(a.port, a.rate, a.seconds)
        results = stop_c_readers(ps, total - 1)
        return summarize(a, srv, watchers, procs, results, total, wall, lag, cpu0, busy0, t0)
    ready_q, result_q = mp.Queue(), mp.Queue()
    stop, final_seq = mp.Event(), mp.Value("q", -1)
    ps = [mp.Process(target=reader_proc,
                     args=(a.http_port, n, path, ready_q, stop, final_seq, result_q))
          for n in shares]
    for p in ps:
        p.start()
    for _ in range(watchers):
        ready_q.get(timeout=60)
    time.sleep(0.5)
    cpu0, busy0, t0 = srv.cpu_seconds(), machine_busy_seconds(), time.monotonic()
    total, wall, lag = write_changes(a.port, a.rate, a.seconds)
    final_seq.value = total - 1
    stop.set()
    results = [result_q.get(timeout=120) for _ in ps]
    for p in ps:
        p.join(30)
    return summarize(a, srv, watchers, procs, results, total, wall, lag, cpu0, busy0, t0)


def summarize(a, srv, watchers, procs, results, total, wall, lag, cpu0, busy0, t0):
    elapsed = time.monotonic() - t0
    cpu = srv.cpu_seconds() - cpu0
    busy = machine_busy_seconds() - busy0
    tallies = [t for r in results for t in r["tallies"]]
    hist = {}
    for r in results:
        for b, c in r["hist"].items():
            hist[int(b)] = hist.get(int(b), 0) + c
    unfinished = [t for t in tallies if t["last_seq"] < total - 1]
    kept_up = [t for t in tallies if t["resyncs"] == 0 and t["last_seq"] >= total - 1]
    received = sum(t["events"] for t in tallies)
    reader_cpu = [r["cpu_s"] / max(r["wall_s"], 1e-9) for r in results]
    return {
        "watchers": watchers,
        "reader_procs": procs,
        "reader": a.reader,
        "changes": total,
        "writer_wall_s": wall,
        "writer_worst_lag_ms": lag,
        "events_received": received,
        # Until the last watcher finished reading (or gave up).
        "events_per_s": received / elapsed,
        "expected_events": total * watchers,
        "kept_up": len(kept_up),
        "unfinished": len(unfinished),
        "lost_kept_up": sum(total - t["events"] for t in kept_up),
        "gaps_without_resync": sum(t["gaps"] for t in tallies),
        "out_of_order": sum(t["out_of_order"] for t in tallies),
        "resyncs": sum(t["resyncs"] for t in tallies),
        "p50_ms": percentile(hist, 0.50),
        "p99_ms": percentile(hist, 0.99),
        "p999_ms": percentile(hist, 0.999),
        "max_ms": (max(hist) + 1) * BUCKET_US / 1000.0 if hist else None,
        "server_cpu_s": cpu,
        "server_cpu_per_s": cpu / elapsed,
        "machine_busy_per_s": busy / elapsed,
        "reader_cpu_per_wall": reader_cpu,
    }


# ---------------------------------------------------------------- report


def fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        return ("%." + str(digits) + "f") % v
    return str(v)


def render(meta, runs):
    lines = [
        "## SSE fan-out: changes to N watchers over the HTTP door",
        "",
        "- date: %s; machine: %s" % (meta["date"], meta["machine"]),
        "- server: `%s` (%s)" % (meta["argv"], meta["version"]),
        "- command: `%s`" % meta["command"],
        "- writer: %d changes/s for %s s (`SET bench:<i mod %d> <i>:<send time>`), one RESP "
        "connection; watchers: `GET /v1/watch?prefix=bench:&values=1&heartbeat=1s`, %s" % (
            meta["rate"], meta["seconds"], KEYS,
            "C readers (bench/sse_reader.c, one epoll loop per reader process)"
            if meta.get("reader", "python") == "c" else "asyncio readers"),
        "- latency: from the send time in the value to the read that brought the event, "
        "10 µs buckets (upper edges, the last one 2 s and beyond); kept up: no `resync` and "
        "the last change read; lost counts only those; unfinished: the last change not read "
        "%d s after the writer stopped" % GRACE_S,
        "",
        "| watchers | reader procs | changes | events/s delivered | kept up | unfinished "
        "| lost (kept up) "
        "| gaps w/o resync | out of order | resyncs | p50 ms | p99 ms | p99.9 ms | max ms "
        "| server CPU/s | reader CPU/wall | machine busy CPUs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append("| %d | %d | %d | %.0f | %d/%d | %d | %d | %d | %d | %d | %s | %s | %s | %s "
                     "| %.2f | %s | %.2f |" % (
                         r["watchers"], r["reader_procs"], r["changes"], r["events_per_s"],
                         r["kept_up"], r["watchers"], r["unfinished"], r["lost_kept_up"],
                         r["gaps_without_resync"], r["out_of_order"], r["resyncs"],
                         fmt(r["p50_ms"]), fmt(r["p99_ms"]), fmt(r["p999_ms"]),
                         fmt(r["max_ms"]), r["server_cpu_per_s"],
                         " ".join("%.0f%%" % (100 * c) for c in r["reader_cpu_per_wall"]),
                         r["machine_busy_per_s"]))
    lines.append("")
    saturated = [r for r in runs if max(r["reader_cpu_per_wall"]) > 0.9]
    if saturated:
        lines.append("- reader processes above 90% CPU (the client, not the server, set the "
                     "pace) at %s watchers: rerun with more `--procs` on more cores" %
                     ", ".join(str(r["watchers"]) for r in saturated))
    if meta["machine_note"]:
        lines.append("- " + meta["machine_note"])
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--watchers", default="100,1000")
    p.add_argument("--rate", type=int, default=1000, help="changes per second")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--procs", type=int, default=1, help="reader processes")
    p.add_argument("--reader", choices=("c", "python"), default="c",
                   help="watchers in C (bench/sse_reader.c) or as Python asyncio readers")
    p.add_argument("--larder-bin", default=default_larder_bin())
    p.add_argument("--larder-args", default="")
    p.add_argument("--tag", default="")
    p.add_argument("--out-dir", default=RESULTS)
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = os.path.join(a.out_dir, stamp + ("-" + a.tag if a.tag else "") + "-sse_fanout")
    a.http_port = free_port()
    watchers = [int(w) for w in a.watchers.split(",") if w]
    extra = ["--http-port", str(a.http_port),
             "--http-sse-max-watchers", str(max(watchers) + 10)] + shlex.split(a.larder_args)
    srv = Server.larder(a.larder_bin, "larder", base + ".raw", extra=extra).start()
    a.port = srv.port
    runs = []
    try:
        version = srv.version()
        for n in watchers:
            srv.call("FLUSHALL")
            r = run(a, srv, n)
            runs.append(r)
            print("%5d watchers: %.0f events/s, p99 %s ms, kept up %d, lost %d, gaps %d, "
                  "server CPU %.2f/s" % (n, r["events_per_s"], fmt(r["p99_ms"]), r["kept_up"],
                                         r["lost_kept_up"], r["gaps_without_resync"],
                                         r["server_cpu_per_s"]), flush=True)
    finally:
        rc = srv.stop()
    busy_note = ""
    if any(r["machine_busy_per_s"] - r["server_cpu_per_s"] - sum(r["reader_cpu_per_wall"])
           > 0.3 for r in runs):
        busy_note = ("other processes used CPU during the runs (machine busy > server + "
                     "readers + 0.3 CPUs): a noisy machine")
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine_line(),
        "argv": shlex.join(srv.argv),
        "version": version,
        "command": shlex.join(["python3", "bench/sse_fanout.py"] + (argv or sys.argv[1:])),
        "rate": a.rate,
        "seconds": a.seconds,
        "reader": a.reader,
        "server_exit": rc,
        "machine_note": busy_note,
    }
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(render(meta, runs))
    print(render(meta, runs))
    print("wrote %s.md and .json" % base)


if __name__ == "__main__":
    main()
