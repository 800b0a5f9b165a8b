#!/usr/bin/env python3
"""Dump pauses: the latency other clients see while `memcached-tool HOST:PORT dump` moves every
item out of the memcached door (issue 16's first target).

For each server (fresh, alone, one at a time): load N items (1M by default; every third with a
TTL) through the memcached text protocol, probe an idle baseline, then run
`memcached-tool dump > file` while a prober process sends one `mg <random key>` every 1 ms on
its own connection (bench/load_pause.py's prober and statistics, over the memcached
protocol). Reported: the dump's time, whether it printed N `add` commands with the TTLs, and
for the baseline and the dump window: probes, max, p99.9, p99, p50 and probes over 10 ms.
--memcached adds memcached 1.6.18 side by side. Not run by the test suite (use a small --items
to try it).
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_pause import stats  # noqa: E402
from resp_compare import HOST, default_larder_bin, free_port  # noqa: E402

TOOL = "/usr/share/memcached/scripts/memcached-tool"


def key(i):
    return b"key:%012d" % i


def wait_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection((HOST, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not open port %d" % port)


def load(port, n, value_bytes, batch=2000):
    """Pipelined noreply sets, an `mn` after each batch to keep pace with the server."""
    s = socket.create_connection((HOST, port))
    value = b"v" * value_bytes
    for lo in range(0, n, batch):
        out = bytearray()
        for i in range(lo, min(n, lo + batch)):
            ttl = 3600 + i % 1000 if i % 3 == 0 else 0
            out += b"set %s %d %d %d noreply\r\n%s\r\n" % (key(i), i % 65536, ttl,
                                                          len(value), value)
        s.sendall(bytes(out) + b"mn\r\n")
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            buf += s.recv(65536)
    s.close()


def prober(port, n, interval_s, stop, ready, out):
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
        note = "SCHED_FIFO 50"
    except (PermissionError, OSError, AttributeError) as e:
        note = "normal priority (%s)" % e
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rng = random.Random(7)
    samples = []
    ready.set()
    nxt = time.monotonic_ns()
    step = int(interval_s * 1e9)
    while not stop.is_set():
        t0 = time.monotonic_ns()
        s.sendall(b"mg %s\r\n" % key(rng.randrange(n)))
        buf = b""
        while not buf.endswith(b"\r\n"):
            buf += s.recv(4096)
        samples.append((t0, time.monotonic_ns() - t0))
        nxt += step
        now = time.monotonic_ns()
        if nxt > now:
            time.sleep((nxt - now) / 1e9)
        else:
            nxt = now
    out.send((note, samples))


def run_one(name, argv, port, a):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        t = time.time()
        load(port, a.items, a.value_bytes)
        load_s = time.time() - t
        ctx = mp.get_context("fork")
        stop, ready = ctx.Event(), ctx.Event()
        rx, tx = ctx.Pipe(duplex=False)
        p = ctx.Process(target=prober, args=(port, a.items, a.interval_ms / 1000, stop, ready, tx))
        p.start()
        ready.wait()
        time.sleep(a.baseline)
        with tempfile.TemporaryFile() as f:
            t0 = time.monotonic_ns()
            subprocess.run(["perl", TOOL, "%s:%d" % (HOST, port), "dump"], stdout=f,
                           stderr=subprocess.DEVNULL, check=True)
            t1 = time.monotonic_ns()
            stop.set()
            note, samples = rx.recv()
            p.join()
            f.seek(0)
            adds = ttls = 0
            for line in f:
                if line.startswith(b"add key:"):
                    adds += 1
                    ttls += line.split(b" ")[3] != b"0"
        base = [r for t, r in samples if t < t0]
        during = [r for t, r in samples if t0 <= t <= t1]
        return {"server": name, "items": a.items, "load_s": round(load_s, 2),
                "dump_s": round((t1 - t0) / 1e9, 2), "dumped": adds,
                "with_ttl": ttls, "want_with_ttl": (a.items + 2) // 3, "prober": note,
                "idle": stats(base), "dump": stats(during)}
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--value-bytes", type=int, default=32)
    ap.add_argument("--interval-ms", type=float, default=1.0)
    ap.add_argument("--baseline", type=float, default=2.0, help="idle probing seconds first")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memcached", action="store_true", help="also run memcached 1.6.18")
    a = ap.parse_args()
    runs = []
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        argv = [a.larder_bin, "--port", str(free_port()), "--http-port", "0", "--memcached-port",
                str(port), "--threads", str(a.threads), "--dir", d, "--appendonly", "no",
                "--save", ""]
        runs.append(run_one("larder", argv, port, a))
    if a.memcached:
        port = free_port()
        argv = [shutil.which("memcached"), "-p", str(port), "-U", "0", "-l", HOST, "-t",
                str(a.threads), "-m", "4096"] + (["-u", "nobody"] if os.geteuid() == 0 else [])
        runs.append(run_one("memcached", argv, port, a))
    for r in runs:
        ok = r["dumped"] == r["items"] and r["with_ttl"] == r["want_with_ttl"]
        print("%-9s dump %6.2fs  %s items dumped (%s)  probes over 10 ms: idle %s, dump %s  "
              "max %.1f ms" % (r["server"], r["dump_s"], r["dumped"], "all, with TTLs" if ok
                               else "MISSING", r["idle"].get("over_10ms"),
                               r["dump"].get("over_10ms"), r["dump"].get("max_ms", 0)))
    print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
