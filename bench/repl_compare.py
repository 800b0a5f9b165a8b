#!/usr/bin/env python3
"""Replication side by side: a larder master with larder replicas against a redis-server
master with redis-server replicas, in one run (issue 17's benchmark).

Three sections (`--only`); every round runs larder and redis, alternating which goes first:

- cpu: the master's CPU per write with 0, 1 and 2 replicas attached. A closed-loop SET load
  (dtgen, --cpu-clients at each of --cpu-pipelines, --cpu-requests per run, a quarter of it at
  pipeline 1) on a fresh master;
  the master's utime+stime over the run divided by the writes, each replica count against
  the same round's 0-replica figure. Writes/s and the replicas' CPU beside it.
  The same at an offered rate: the open-loop writer (below) at --cpu-rate writes/s for
  --cpu-rate-seconds, so that neither the master nor the machine is saturated.
- lag: replication lag by a probe. An open-loop writer sends SET at --lag-rates writes/s
  (batches every millisecond) to the master; a prober writes `HSET lagprobe:<t> f 1` on the
  master every --probe-ms, where <t> is CLOCK_MONOTONIC ns just before the send, and a
  subscriber on the replica (`notify-keyspace-events Eh`, SUBSCRIBE __keyevent@0__:hset)
  takes the time each probe's notification arrives. Lag = arrival - <t>: master, stream,
  replica and the notification, end to end. p50/p99/p99.9/max per rate, the achieved write
  rate and both servers' CPU.
- sync: a master of --keys keys (SET key:%012d, --value-bytes), the open-loop writer at
  --sync-write-rate writes/s, then a fresh replica's REPLICAOF. Full sync time (REPLICAOF to
  the replica's link up with its file loaded) and the master's peak memory during it: its RSS
  plus its children's private memory (Redis forks a child for the file, diskless or not),
  sampled every 10 ms, and VmHWM reset before; against its RSS just before (the data set).
  The replica's DBSIZE after the sync must cover the keys. redis-server runs with
  `repl-diskless-sync-delay 0` (its default waits 5 s for more replicas; larder starts at
  once).

Server and load generator share the machine; the numbers that compare are per CPU-second
and at a stated offered rate (bench/README.md). Results: bench/results/<stamp>-repl_compare.
{md,json} (*.raw: server logs).

    LARDER_BIN=target/release/larder python3 bench/repl_compare.py --rounds 3
"""

import argparse
import json
import multiprocessing as mp
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    HOST, RESULTS, Resp, Server, default_larder_bin, encode, machine_busy_seconds,
    machine_line)
from datatype_compare import build_dtgen  # noqa: E402
from persist_compare import MemWatch, load_keys, num  # noqa: E402

SECTIONS = ("cpu", "lag", "sync")
KINDS = ("larder", "redis")


# ---------------------------------------------------------------- servers


class Group:
    """A master and its replicas of one kind, each a fresh process."""

    def __init__(self, a, kind, replicas, log, extra_master=()):
        self.a, self.kind, self.log = a, kind, log
        self.master = self._server("%s-master" % kind, extra_master)
        self.replicas = [self._server("%s-replica%d" % (kind, i)) for i in range(replicas)]

    def _server(self, label, extra=()):
        if self.kind == "larder":
            return Server.larder(self.a.larder_bin, label, self.log,
                                 list(extra) + shlex.split(self.a.larder_args))
        # Redis waits repl-diskless-sync-delay (5 s by default) for more replicas before a
        # diskless transfer; larder starts at once. --redis-args can set it back.
        return Server.redis(label, self.log, ["--repl-diskless-sync-delay", "0"] + list(extra)
                            + shlex.split(self.a.redis_args))

    def start(self):
        self.master.start()
        for r in self.replicas:
            r.start()
        for r in self.replicas:
            attach(r, self.master)
        return self

    def stop(self):
        for s in [self.master] + self.replicas:
            s.stop()


def link_up(replica):
    i = replica.info("replication")
    return i.get("master_link_status") == "up" and i.get("master_sync_in_progress") == "0"


def attach(replica, master, timeout=600, sample=None):
    """REPLICAOF master; wait until the replica's link is up with its file loaded."""
    replica.call("REPLICAOF", HOST, str(master.port))
    deadline = time.monotonic() + timeout
    while not link_up(replica):
        if time.monotonic() > deadline:
            raise RuntimeError("%s did not sync within %ss" % (replica.label, timeout))
        if sample:
            sample()
        time.sleep(0.01)


def caught_up(master, replicas, timeout=60):
    """Wait until every replica acknowledged the master's offset."""
    want = int(master.info("replication").get("master_repl_offset", 0))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(int(r.info("replication").get("slave_repl_offset", -1)) >= want
               for r in replicas):
            return
        time.sleep(0.01)
    raise RuntimeError("replicas did not reach offset %d" % want)


# ---------------------------------------------------------------- open-loop writer


def writer(port, rate, keyspace, value_bytes, stop, ready, out):
    """SET at `rate` writes/s in batches every millisecond until `stop`; sends (writes sent,
    replies read, seconds, how many ticks fell behind) to `out`."""
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    value = b"v" * value_bytes
    per_tick = max(1, rate // 1000)
    batches = [b"".join(encode(b"SET", b"key:%012d" % ((b * per_tick + i) % keyspace), value)
                        for i in range(per_tick)) for b in range(max(1, keyspace // per_tick))]
    counts = {"replies": 0}

    def reader():
        tail = b""
        while True:
            data = s.recv(1 << 20)
            if not data:
                return
            data = tail + data
            counts["replies"] += data.count(b"\r\n")
            tail = b""
            if not data.endswith(b"\r\n"):
                tail = data[data.rfind(b"\r\n") + 2:] if b"\r\n" in data else data

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    ready.set()
    sent = behind = 0
    t0 = time.monotonic_ns()
    nxt = t0
    i = 0
    while not stop.is_set():
        s.sendall(batches[i % len(batches)])
        i += 1
        sent += per_tick
        nxt += 1_000_000
        wait = nxt - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        else:
            behind += 1
    secs = (time.monotonic_ns() - t0) / 1e9
    deadline = time.monotonic() + 30
    while counts["replies"] < sent and time.monotonic() < deadline:
        time.sleep(0.01)
    out.send((sent, counts["replies"], secs, behind))
    s.close()


class Writer:
    def __init__(self, port, rate, keyspace, value_bytes):
        ctx = mp.get_context("fork")
        self.stop_ev, ready = ctx.Event(), ctx.Event()
        self.rx, tx = ctx.Pipe(duplex=False)
        self.p = ctx.Process(target=writer, args=(port, rate, keyspace, value_bytes,
                                                  self.stop_ev, ready, tx), daemon=True)
        self.p.start()
        if not ready.wait(30):
            raise RuntimeError("writer did not start")

    def stop(self):
        self.stop_ev.set()
        if not self.rx.poll(60):
            raise RuntimeError("writer sent no result")
        sent, replies, secs, behind = self.rx.recv()
        self.p.join()
        return {"writes_sent": sent, "replies": replies, "seconds": round(secs, 2),
                "achieved_rate": round(replies / secs), "ticks_behind": behind}


# ---------------------------------------------------------------- the lag probe


def subscriber(port, ready, stop, out):
    c = Resp(port, timeout=1.0)
    c.sock.sendall(encode("SUBSCRIBE", "__keyevent@0__:hset"))
    c.reply()
    ready.set()
    got = []
    while not stop.is_set():
        try:
            msg = c.reply()
        except socket.timeout:
            continue
        now = time.monotonic_ns()
        if isinstance(msg, list) and len(msg) == 3 and msg[0] == b"message":
            key = msg[2]
            if key.startswith(b"lagprobe:"):
                got.append(now - int(key[9:]))
    out.send(got)


def probe_lag(master, replica, seconds, interval_ms):
    """Probe for `seconds`; returns the lags in ns and how many probes were sent."""
    ctx = mp.get_context("fork")
    stop, ready = ctx.Event(), ctx.Event()
    rx, tx = ctx.Pipe(duplex=False)
    sub = ctx.Process(target=subscriber, args=(replica.port, ready, stop, tx), daemon=True)
    sub.start()
    if not ready.wait(10):
        raise RuntimeError("subscriber did not start")
    c = Resp(master.port)
    sent = 0
    end = time.monotonic() + seconds
    nxt = time.monotonic_ns()
    while time.monotonic() < end:
        t = time.monotonic_ns()
        c.call("HSET", b"lagprobe:%d" % t, "f", "1")
        sent += 1
        nxt += int(interval_ms * 1e6)
        wait = nxt - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
    c.close()
    time.sleep(0.5)  # the last probes' notifications
    stop.set()
    if not rx.poll(30):
        raise RuntimeError("subscriber sent no result")
    lags = rx.recv()
    sub.join()
    return lags, sent


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def lag_one(a, kind, rate, rnd, log):
    g = Group(a, kind, 1, log).start()
    try:
        master, replica = g.master, g.replicas[0]
        replica.call("CONFIG", "SET", "notify-keyspace-events", "Eh")
        w = Writer(master.port, rate, a.keyspace, a.value_bytes)
        time.sleep(1.0)  # warm: the writer at its rate
        m0, r0, b0 = master.cpu_seconds(), replica.cpu_seconds(), machine_busy_seconds()
        t0 = time.monotonic()
        lags, sent = probe_lag(master, replica, a.lag_seconds, a.probe_ms)
        wall = time.monotonic() - t0
        m1, r1, b1 = master.cpu_seconds(), replica.cpu_seconds(), machine_busy_seconds()
        wr = w.stop()
        caught_up(master, [replica])
        ms = [x / 1e6 for x in lags]
        return {"section": "lag", "server": kind, "round": rnd, "rate": rate,
                "probes_sent": sent, "probes_seen": len(lags),
                "p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99), "p999_ms": pct(ms, 99.9),
                "max_ms": max(ms) if ms else None,
                "master_cpu_frac": round((m1 - m0) / wall, 3),
                "replica_cpu_frac": round((r1 - r0) / wall, 3),
                "machine_busy_frac": round((b1 - b0) / wall, 3), "writer": wr}
    finally:
        g.stop()


# ---------------------------------------------------------------- master CPU per write


def cpu_one(a, kind, replicas, rnd, dtgen, log, pipeline):
    g = Group(a, kind, replicas, log).start()
    try:
        m = g.master
        requests = a.cpu_requests if pipeline > 1 else a.cpu_requests // 4
        cmd = [dtgen, "run", HOST, str(m.port), str(a.cpu_clients), str(pipeline),
               str(requests), str(rnd + 1), "SET", "key:{%d:12}" % a.keyspace,
               "v" * a.value_bytes]
        c0 = m.cpu_seconds()
        rc0 = [r.cpu_seconds() for r in g.replicas]
        w0 = int(m.info("stats").get("total_commands_processed", 0))
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=a.run_timeout)
        wall = time.monotonic() - t0
        if out.returncode != 0:
            raise RuntimeError("dtgen failed: %s" % out.stderr[-2000:])
        res = json.loads(out.stdout.strip().splitlines()[-1])
        cpu = m.cpu_seconds() - c0
        writes = int(m.info("stats").get("total_commands_processed", 0)) - w0
        caught_up(m, g.replicas)
        return {"section": "cpu", "server": kind, "round": rnd, "replicas": replicas,
                "pipeline": pipeline, "writes": writes, "seconds": round(wall, 3), "ops_per_s": round(writes / wall),
                "master_cpu_s": round(cpu, 3), "master_cpu_us_per_write": cpu / writes * 1e6,
                "replica_cpu_s": [round(r.cpu_seconds() - x, 3)
                                  for r, x in zip(g.replicas, rc0)],
                "p50_ms": res.get("p50_ms"), "p99_ms": res.get("p99_ms"),
                "errors": res.get("errors")}
    finally:
        g.stop()


def cpu_rate_one(a, kind, replicas, rnd, log):
    """The master's CPU per write at an offered rate (the open-loop writer), not saturated."""
    g = Group(a, kind, replicas, log).start()
    try:
        m = g.master
        w = Writer(m.port, a.cpu_rate, a.keyspace, a.value_bytes)
        time.sleep(1.0)
        c0, rc0 = m.cpu_seconds(), [r.cpu_seconds() for r in g.replicas]
        w0 = int(m.info("stats").get("total_commands_processed", 0))
        t0 = time.monotonic()
        time.sleep(a.cpu_rate_seconds)
        wall = time.monotonic() - t0
        cpu = m.cpu_seconds() - c0
        writes = int(m.info("stats").get("total_commands_processed", 0)) - w0
        rc = [round(r.cpu_seconds() - x, 3) for r, x in zip(g.replicas, rc0)]
        wr = w.stop()
        caught_up(m, g.replicas)
        return {"section": "cpu_rate", "server": kind, "round": rnd, "replicas": replicas,
                "rate": a.cpu_rate, "writes": writes, "seconds": round(wall, 3),
                "ops_per_s": round(writes / wall), "master_cpu_s": round(cpu, 3),
                "master_cpu_us_per_write": cpu / writes * 1e6, "replica_cpu_s": rc,
                "writer": wr}
    finally:
        g.stop()


# ---------------------------------------------------------------- full sync


def sync_one(a, kind, rnd, log):
    g = Group(a, kind, 0, log)
    replica = g._server("%s-replica" % kind)
    g.master.start()
    try:
        t_load = load_keys(g.master, a.keys, a.value_bytes)
        time.sleep(a.settle)
        w = Writer(g.master.port, a.sync_write_rate, a.keys, a.value_bytes)
        time.sleep(1.0)
        dataset = g.master.rss_bytes()
        used = int(num(g.master.info("memory"), "used_memory"))
        replica.start()
        mw = MemWatch(g.master)
        t0 = time.monotonic()
        attach(replica, g.master, timeout=a.sync_timeout, sample=mw.sample)
        secs = time.monotonic() - t0
        wr = w.stop()
        caught_up(g.master, [replica], timeout=120)
        mem = mw.result()
        dbsize = replica.call("DBSIZE")
        if dbsize < a.keys:
            raise RuntimeError("%s replica holds %d keys, want >= %d" % (kind, dbsize, a.keys))
        return {"section": "sync", "server": kind, "round": rnd, "keys": a.keys,
                "load_s": round(t_load, 2), "dataset_rss_bytes": dataset, "used_memory": used,
                "sync_s": round(secs, 2), "replica_dbsize": dbsize,
                "replica_rss_bytes": replica.rss_bytes(),
                "peak_over_dataset": round(mem["peak_bytes"] / dataset, 3),
                "memory": mem, "writer": wr}
    finally:
        replica.stop()
        g.stop()


# ---------------------------------------------------------------- report


def mib(v):
    return "%.0f" % (v / 2 ** 20)


def spread(vals, fmt="%.2f"):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt % med
    return (fmt + " (" + fmt + "–" + fmt + ")") % (med, min(vals), max(vals))


def cpu_rows(cells, with_p99):
    """Table rows of CPU-per-write runs: each kind and replica count, the ratio against the
    same round's 0-replica run."""
    rows = []
    for kind in KINDS:
        base = {r["round"]: r["master_cpu_us_per_write"] for r in cells
                if r["server"] == kind and r["replicas"] == 0}
        for n in (0, 1, 2):
            rs = [r for r in cells if r["server"] == kind and r["replicas"] == n]
            if not rs:
                continue
            ratios = [r["master_cpu_us_per_write"] / base[r["round"]] for r in rs
                      if r["round"] in base]
            cols = [kind, str(n), spread([r["ops_per_s"] for r in rs], "%.0f"),
                    spread([r["master_cpu_us_per_write"] for r in rs], "%.2f"),
                    spread(ratios, "%.3f"),
                    spread([statistics.mean(r["replica_cpu_s"]) for r in rs
                            if r["replica_cpu_s"]], "%.2f")]
            if with_p99:
                cols.append(spread([r["p99_ms"] for r in rs], "%.2f"))
            rows.append("| " + " | ".join(cols) + " |")
    return rows


def render(meta, data):
    out = ["# Replication: larder against redis-server", "",
           "%s. %s." % (meta["started"], meta["machine"]),
           "larder: %s; redis: %s. Rounds: %d. `%s`" % (meta["larder"], meta["redis"],
                                                      meta["rounds"], meta["argv"]), "",
           "Cells: median (min–max) over rounds.", ""]
    cpu = [r for r in data if r["section"] == "cpu"]
    pipelines = meta.get("cpu_pipelines") or [meta.get("cpu_pipeline", 16)]
    for pipeline in pipelines:
        cells = [r for r in cpu if r.get("pipeline", pipelines[0]) == pipeline]
        if not cells:
            continue
        out += ["## Master CPU per write with 0, 1 and 2 replicas, pipeline %d" % pipeline, "",
                "SET, %d clients at pipeline %d, closed loop, value %d B; replicas of the "
                "master's kind. `× 0` is each run over the same round's 0-replica run."
                % (meta["cpu_clients"], pipeline, meta["value_bytes"]), "",
                "| master | replicas | writes/s | master µs CPU / write | × 0 replicas "
                "| replica CPU s (each) | client p99 ms |", "|---|---:|---:|---:|---:|---:|---:|"]
        out += cpu_rows(cells, with_p99=True)
        out.append("")
    rate = [r for r in data if r["section"] == "cpu_rate"]
    if rate:
        out += ["## Master CPU per write at an offered rate", "",
                "The open-loop SET writer at %d writes/s for %g s (batches every millisecond), "
                "so neither server is saturated; replicas of the master's kind."
                % (meta["cpu_rate"], meta["cpu_rate_seconds"]), "",
                "| master | replicas | writes/s | master µs CPU / write | × 0 replicas "
                "| replica CPU s (each) |", "|---|---:|---:|---:|---:|---:|"]
        out += cpu_rows(rate, with_p99=False)
        out.append("")
    lag = [r for r in data if r["section"] == "lag"]
    if lag:
        out += ["## Replication lag by probe", "",
                "An open-loop SET writer at the offered rate; `HSET lagprobe:<t>` every %g ms "
                "on the master, its keyspace notification on the replica; %g s a run."
                % (meta["probe_ms"], meta["lag_seconds"]), "",
                "| master | offered writes/s | achieved | probes seen/sent | p50 ms | p99 ms "
                "| p99.9 ms | max ms | master CPU | replica CPU |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for rate in meta["lag_rates"]:
            for kind in KINDS:
                rs = [r for r in lag if r["server"] == kind and r["rate"] == rate]
                if not rs:
                    continue
                out.append("| %s | %d | %s | %d/%d | %s | %s | %s | %s | %s | %s |" % (
                    kind, rate, spread([r["writer"]["achieved_rate"] for r in rs], "%.0f"),
                    sum(r["probes_seen"] for r in rs), sum(r["probes_sent"] for r in rs),
                    spread([r["p50_ms"] for r in rs]), spread([r["p99_ms"] for r in rs]),
                    spread([r["p999_ms"] for r in rs]), spread([r["max_ms"] for r in rs]),
                    spread([r["master_cpu_frac"] for r in rs]),
                    spread([r["replica_cpu_frac"] for r in rs])))
        out.append("")
    sync = [r for r in data if r["section"] == "sync"]
    if sync:
        out += ["## Full sync of %d keys with writes going on" % meta["keys"], "",
                "Values of %d B; the writer at %d writes/s throughout. Peak: the master's RSS "
                "plus its children's private memory (USS) during the sync, sampled every 10 ms, "
                "or its VmHWM (reset before) plus the children's peak, whichever is larger."
                % (meta["value_bytes"], meta["sync_write_rate"]), "",
                "| master | round | data set RSS MiB | sync s | peak MiB | peak / data set "
                "| child peak USS MiB | replica RSS MiB |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sorted(sync, key=lambda r: (r["server"], r["round"])):
            m = r["memory"]
            out.append("| %s | %d | %s | %.1f | %s | %.3f | %s | %s |" % (
                r["server"], r["round"], mib(r["dataset_rss_bytes"]), r["sync_s"],
                mib(m["peak_bytes"]), r["peak_over_dataset"], mib(m["peak_child_uss_bytes"]),
                mib(r["replica_rss_bytes"])))
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help=",".join(SECTIONS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tag", default="")
    ap.add_argument("--larder-bin", default=os.environ.get("LARDER_BIN") or default_larder_bin())
    ap.add_argument("--keyspace", type=int, default=100000)
    ap.add_argument("--value-bytes", type=int, default=32)
    ap.add_argument("--cpu-clients", type=int, default=50)
    ap.add_argument("--cpu-pipelines", default="16,1",
                    help="closed-loop pipelines (at 1, a quarter of --cpu-requests)")
    ap.add_argument("--cpu-requests", type=int, default=2_000_000)
    ap.add_argument("--cpu-rate", type=int, default=100000,
                    help="offered writes/s of the open-loop CPU runs")
    ap.add_argument("--cpu-rate-seconds", type=float, default=10)
    ap.add_argument("--lag-rates", default="10000,100000")
    ap.add_argument("--lag-seconds", type=float, default=10)
    ap.add_argument("--probe-ms", type=float, default=2)
    ap.add_argument("--keys", type=int, default=5_000_000, help="sync section")
    ap.add_argument("--sync-write-rate", type=int, default=10000)
    ap.add_argument("--sync-timeout", type=float, default=600)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--redis-args", default="", help="more redis-server arguments")
    ap.add_argument("--larder-args", default="", help="more larder arguments")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--render", metavar="JSON", help="re-render a result file")
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            doc = json.load(f)
        print(render(doc["meta"], doc["runs"]))
        return
    only = a.only.split(",")
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.join(a.out_dir, "%s-%srepl_compare" % (stamp, a.tag + "-" if a.tag else ""))
    log = base + ".raw"
    probe = Server.larder(a.larder_bin, "version", log)
    meta = {"started": stamp, "machine": machine_line(), "argv": " ".join(sys.argv),
            "rounds": a.rounds, "larder": probe.version(),
            "redis": subprocess.run(["redis-server", "--version"], capture_output=True,
                                    text=True).stdout.strip(),
            "cpu_clients": a.cpu_clients,
            "cpu_pipelines": [int(x) for x in a.cpu_pipelines.split(",")],
            "cpu_requests": a.cpu_requests, "cpu_rate": a.cpu_rate,
            "cpu_rate_seconds": a.cpu_rate_seconds, "value_bytes": a.value_bytes,
            "lag_rates": [int(x) for x in a.lag_rates.split(",")], "lag_seconds": a.lag_seconds,
            "probe_ms": a.probe_ms, "keys": a.keys, "sync_write_rate": a.sync_write_rate}
    probe.stop()
    runs = []
    dtgen = build_dtgen() if "cpu" in only else None

    def save():
        with open(base + ".json", "w") as f:
            json.dump({"meta": meta, "runs": runs}, f, indent=1)
        with open(base + ".md", "w") as f:
            f.write(render(meta, runs) + "\n")

    for rnd in range(a.rounds):
        order = KINDS if rnd % 2 == 0 else KINDS[::-1]
        for kind in order:
            if "cpu" in only:
                for n in (0, 1, 2):
                    cells = [cpu_one(a, kind, n, rnd, dtgen, log, p)
                             for p in meta["cpu_pipelines"]]
                    for r in cells + [cpu_rate_one(a, kind, n, rnd, log)]:
                        print("%s %s r%d %d replicas: %.0f w/s, %.2f µs/write" % (
                            r["section"], kind, rnd, n, r["ops_per_s"],
                            r["master_cpu_us_per_write"]), file=sys.stderr)
                        runs.append(r)
            if "lag" in only:
                for rate in meta["lag_rates"]:
                    r = lag_one(a, kind, rate, rnd, log)
                    print("lag %s r%d %d/s: p50 %s p99 %s ms (%d/%d probes), achieved %d/s" % (
                        kind, rnd, rate, r["p50_ms"], r["p99_ms"], r["probes_seen"],
                        r["probes_sent"], r["writer"]["achieved_rate"]), file=sys.stderr)
                    runs.append(r)
            if "sync" in only:
                r = sync_one(a, kind, rnd, log)
                print("sync %s r%d: %.1f s, peak/data set %.3f" % (
                    kind, rnd, r["sync_s"], r["peak_over_dataset"]), file=sys.stderr)
                runs.append(r)
            save()
    save()
    print(render(meta, runs))
    print("\nwrote %s.{md,json}" % base, file=sys.stderr)


if __name__ == "__main__":
    main()
