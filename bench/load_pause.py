#!/usr/bin/env python3
"""Load pauses: the largest latency a client sees while millions of keys are loaded.

For each server (fresh, alone, one at a time): a prober process sends one command every 1 ms on
its own connection and records each round trip, while writer processes load N keys (16-byte
keys, 32-byte values by default) with pipelined SETs over raw sockets, as fast as the server
takes them. The probe is a GET of a random key of the loaded range by default (it lands on a
random shard, where a PING might be answered without touching the keyspace); --probe ping|set
are available. Reported for the load window: probes, max, p99.9, p99, p50 and the number of
probes over 10 ms; and the same for an idle baseline before the load, which is the noise floor
of the machine. The prober asks for SCHED_FIFO (root only) so that its own scheduling delay,
with writers and server busy on 2 cores, is not blamed on the server; the report says whether
it got it. Samples go to bench/results/*-load_pause-SERVER.raw (CSV: offset_ms,rtt_ms,phase).
"""

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shlex
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    HOST, REPO, RESULTS, Server, default_larder_bin, encode, machine_busy_seconds, machine_line,
    send_all_count_ok, set_batches, verify_keys)


def prober(port, probe, keys, key_bytes, interval_s, rt, stop, ready, out):
    note = "normal priority"
    if rt:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
            note = "SCHED_FIFO 50"
        except (PermissionError, OSError, AttributeError) as e:
            note = "normal priority (SCHED_FIFO refused: %s)" % e
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    kfmt = b"key:%0" + str(key_bytes - 4).encode() + b"d"
    rng = random.Random(7)
    samples = []  # (send time ns, rtt ns)
    buf = bytearray()

    def read_reply():
        nonlocal buf
        while True:
            i = buf.find(b"\r\n")
            if i >= 0:
                if buf[:1] == b"$" and int(buf[1:i]) >= 0:
                    need = i + 2 + int(buf[1:i]) + 2
                    if len(buf) >= need:
                        del buf[:need]
                        return
                else:
                    if buf[:1] == b"-":
                        raise RuntimeError("probe error: %r" % bytes(buf[:i]))
                    del buf[: i + 2]
                    return
            data = s.recv(65536)
            if not data:
                raise ConnectionError("server closed the probe connection")
            buf += data

    ready.set()
    nxt = time.monotonic_ns()
    step = int(interval_s * 1e9)
    while not stop.is_set():
        if probe == "ping":
            cmd = b"*1\r\n$4\r\nPING\r\n"
        elif probe == "get":
            cmd = encode(b"GET", kfmt % rng.randrange(keys))
        else:
            cmd = encode(b"SET", b"probe:%d" % rng.randrange(1024), b"x")
        t0 = time.monotonic_ns()
        s.sendall(cmd)
        read_reply()
        t1 = time.monotonic_ns()
        samples.append((t0, t1 - t0))
        nxt += step
        now = time.monotonic_ns()
        if nxt > now:
            time.sleep((nxt - now) / 1e9)
        else:
            nxt = now  # behind (a slow reply): no burst to catch up
    s.close()
    out.send((note, samples))
    out.close()


def writer(port, lo, hi, key_bytes, value_bytes, batch, barrier, result):
    """Build every batch first (so that the load is paced by the server, not by Python
    formatting competing for the CPUs), wait for the others, then send them all."""
    kfmt = b"key:%0" + str(key_bytes - 4).encode() + b"d"
    vfmt = b"val:%0" + str(value_bytes - 4).encode() + b"d"
    keys = (kfmt % i for i in range(lo, hi))
    batches = list(set_batches(keys, lambda i, k: vfmt % (lo + i), batch))
    barrier.wait()  # all built
    barrier.wait()  # the idle baseline is over
    t = os.times()
    try:
        send_all_count_ok(port, batches, hi - lo)
        err = None
    except Exception as e:  # reported by the parent
        err = repr(e)
    u = os.times()
    result.put((err, u.user + u.system - t.user - t.system))


def stats(rtts_ns):
    if not rtts_ns:
        return {"probes": 0}
    v = sorted(rtts_ns)
    n = len(v)

    def pct(p):
        return v[max(0, min(n - 1, math.ceil(p * n - 1e-9) - 1))] / 1e6

    return {"probes": n, "max_ms": v[-1] / 1e6, "p999_ms": pct(0.999), "p99_ms": pct(0.99),
            "p50_ms": pct(0.5), "over_10ms": sum(1 for x in v if x > 10_000_000),
            "over_1ms": sum(1 for x in v if x > 1_000_000)}


def run_one(server, a, raw_path):
    server.start()
    ctx = mp.get_context("fork")
    stop, ready = ctx.Event(), ctx.Event()
    rx, tx = ctx.Pipe(duplex=False)
    pr = ctx.Process(target=prober, args=(server.port, a.probe, a.keys, a.key_bytes,
                                          a.interval_ms / 1000, not a.no_rt, stop, ready, tx))
    pr.start()
    ready.wait(10)
    result = ctx.Queue()
    per = -(-a.keys // a.writers)
    ranges = [(i * per, min(a.keys, (i + 1) * per)) for i in range(a.writers) if i * per < a.keys]
    barrier = ctx.Barrier(len(ranges) + 1)
    ws = [ctx.Process(target=writer, args=(server.port, lo, hi, a.key_bytes, a.value_bytes,
                                           a.batch, barrier, result)) for lo, hi in ranges]
    for w in ws:
        w.start()
    barrier.wait()  # every writer has built its batches
    t_base = time.monotonic_ns()
    time.sleep(a.baseline)  # idle probing; the writers' last batches go in after this
    cpu0, busy0 = server.cpu_seconds(), machine_busy_seconds()
    barrier.wait()
    t_load = time.monotonic_ns()
    outcomes = [result.get() for _ in ws]
    t_end = time.monotonic_ns()
    server_cpu, busy = server.cpu_seconds() - cpu0, machine_busy_seconds() - busy0
    for w in ws:
        w.join()
    time.sleep(0.2)
    stop.set()
    note, samples = rx.recv()
    pr.join()
    errors = [e for e, _ in outcomes if e]
    try:
        if errors:
            raise RuntimeError("%s: writer failed: %s" % (server.label, errors[0]))
        kfmt = b"key:%0" + str(a.key_bytes - 4).encode() + b"d"
        verify_keys(server, a.keys, a.value_bytes, None if a.probe == "set" else a.keys,
                    key_of=lambda i: kfmt % i)
        dbsize = server.try_call("DBSIZE")
        rss = server.rss_bytes()
        version = server.version()
    finally:
        server.stop()
    with open(raw_path, "w") as f:
        f.write("offset_ms,rtt_ms,phase\n")
        for t0, rtt in samples:
            phase = "idle" if t0 < t_load else ("load" if t0 <= t_end else "after")
            f.write("%.3f,%.4f,%s\n" % ((t0 - t_load) / 1e6, rtt / 1e6, phase))
    load = [(t0, r) for t0, r in samples if t_load <= t0 <= t_end]
    worst = sorted(load, key=lambda x: -x[1])[:5]
    return {"server": server.label, "version": version, "argv": shlex.join(server.argv),
            "prober": note, "load_s": (t_end - t_load) / 1e9,
            "keys_per_s": a.keys / ((t_end - t_load) / 1e9), "dbsize": dbsize, "rss_after": rss,
            "server_cpu_s": server_cpu, "writers_cpu_s": sum(c for _, c in outcomes),
            # busy CPU that was neither the server nor the writers: the prober and other processes
            "other_cpu_s": max(0.0, busy - server_cpu - sum(c for _, c in outcomes)),
            "load": stats([r for _, r in load]),
            "idle": stats([r for t0, r in samples if t_base <= t0 < t_load]),
            "worst": [{"at_s": (t0 - t_load) / 1e9, "rtt_ms": r / 1e6} for t0, r in worst]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="")
    ap.add_argument("--redis-args", default="")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--keys", type=int, default=5_000_000)
    ap.add_argument("--key-bytes", type=int, default=16)
    ap.add_argument("--value-bytes", type=int, default=32)
    ap.add_argument("--writers", type=int, default=2, help="writer processes (connections)")
    ap.add_argument("--batch", type=int, default=1000, help="SETs per pipelined write")
    ap.add_argument("--probe", choices=("get", "ping", "set"), default="get")
    ap.add_argument("--interval-ms", type=float, default=1.0)
    ap.add_argument("--baseline", type=float, default=2.0, help="idle probing seconds first")
    ap.add_argument("--no-rt", action="store_true", help="do not ask SCHED_FIFO for the prober")
    ap.add_argument("--rounds", type=int, default=1)
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
    base = os.path.join(a.out_dir, stamp + "-load_pause")
    log = base + "-servers.log.raw"

    def make(which):
        if which == "b":
            return Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)
        if a.only_redis:
            return Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
        return Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                             a.taskset_server)

    results = []
    for rnd in range(a.rounds):
        for which in ("a", "b") if rnd % 2 == 0 else ("b", "a"):
            s = make(which)
            r = run_one(s, a, "%s-%s-r%d.raw" % (base, s.label, rnd))
            r["round"] = rnd
            results.append(r)
            ld = r["load"]
            print("round %d %-8s %d keys in %.1fs (%.0fk/s): max %.2f ms, p99.9 %.2f, "
                  "p99 %.2f, >10ms %d of %d probes [%s]" % (
                      rnd, r["server"], a.keys, r["load_s"], r["keys_per_s"] / 1e3,
                      ld.get("max_ms", 0), ld.get("p999_ms", 0), ld.get("p99_ms", 0),
                      ld.get("over_10ms", 0), ld["probes"], r["prober"]), file=sys.stderr)

    out = ["## Load pauses: %d keys (%d-byte keys, %d-byte values), probe %s every %g ms\n"
           % (a.keys, a.key_bytes, a.value_bytes, a.probe.upper(), a.interval_ms),
           "- date: %s; machine: %s" % (time.strftime("%Y-%m-%d %H:%M:%S %Z"), machine_line()),
           "- command: `%s`" % shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                          + sys.argv[1:]),
           "- servers: " + "; ".join(sorted({"%s = `%s` (%s)" % (r["server"], r["argv"],
                                                                  r["version"]) for r in results})),
           "- %d writer connections, %d SETs per pipelined write; prober: %s; idle = %.0f s of "
           "probes before the load (noise floor)\n" % (a.writers, a.batch,
                                                       results[0]["prober"], a.baseline),
           "| server | round | load s | keys/s | server CPU/wall | writers CPU/wall |"
           " other CPU/wall | probes | max ms | p99.9 ms | p99 ms | p50 ms | probes > 10 ms |"
           " idle max ms | idle p99.9 ms |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(results, key=lambda r: (r["server"] == "redis", r["round"])):
        ld, idle = r["load"], r["idle"]
        out.append("| %s | %d | %.1f | %.0fk | %.0f%% | %.0f%% | %.0f%% | %d | **%.2f** | %.2f | "
                   "%.2f | %.3f | **%d** | %.2f | %.2f |" % (
                       r["server"], r["round"], r["load_s"], r["keys_per_s"] / 1e3,
                       100 * r["server_cpu_s"] / r["load_s"],
                       100 * r["writers_cpu_s"] / r["load_s"],
                       100 * r["other_cpu_s"] / r["load_s"],
                       ld["probes"], ld["max_ms"],
                                      ld["p999_ms"], ld["p99_ms"], ld["p50_ms"], ld["over_10ms"],
                                      idle.get("max_ms", 0), idle.get("p999_ms", 0)))
    md = "\n".join(out)
    with open(base + ".json", "w") as f:
        json.dump({"args": vars(a), "machine": machine_line(), "runs": results}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json} and per-run samples in *.raw" % os.path.relpath(base, os.getcwd()),
          file=sys.stderr)


if __name__ == "__main__":
    main()
