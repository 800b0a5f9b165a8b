#!/usr/bin/env python3
"""Durability side by side: larder's append-only log and snapshots against redis-server's.

Four sections (`--only`), each larder next to redis-server 7.0 with the same setting:

- everysec: SET at pipeline 16 (dtgen, 50 clients) against larder in memory, larder with
  `--appendonly yes --appendfsync everysec` and Redis with the same; ops/s, ops per server
  CPU-second, p50/p99/p99.9, RSS. Servers rotate which goes first every round.
- always: SET at pipeline 1 with 1, 10 and 50 clients against both with `appendfsync always`,
  data directories on the repository's disk; fsyncs counted in the kernel for both servers
  (`perf stat` on the fdatasync/fsync syscall tracepoints of the server process) and larder's
  INFO `aof_fsyncs` beside it; writes per fsync.
- snapshot: a fresh server of --keys keys, a 1:1 SET:GET load (mixgen), a prober (load_pause.py's)
  sending GET every 1 ms; BGSAVE, then BGREWRITEAOF. Peak memory during the snapshot (parent RSS
  plus the fork child's private memory, sampled; parent VmHWM after clear_refs), and the probes
  over 10 ms in each phase against the same run's idle and load-only floors.
- restart: --keys keys written, then kill -9 and a timed restart: larder from snapshot + log,
  Redis from its RDB, and Redis from its AOF (RDB preamble + tail).

Results: bench/results/<stamp>-persist_compare.{md,json} (*.raw: tool output, server logs, probe
samples). Helpers come from resp_compare.py, load_pause.py and datatype_compare.py. See
bench/README.md.
"""

import argparse
import json
import multiprocessing as mp
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    HOST, REPO, RESULTS, Server, build_mixgen, cell, default_larder_bin, fmt_num, key_name,
    machine_busy_seconds, machine_line, measured_run, proc_status, ratio_cell, run_lines,
    send_all_count_ok, set_batches, verify_keys)
from load_pause import prober, stats  # noqa: E402
from datatype_compare import build_dtgen  # noqa: E402

SECTIONS = ("everysec", "always", "snapshot", "restart")
EVERYSEC = ["--appendonly", "yes", "--appendfsync", "everysec"]
ALWAYS = ["--appendonly", "yes", "--appendfsync", "always"]


# ---------------------------------------------------------------- servers and files


def filesystem_of(path):
    """(mount point, fstype, device) of the mount that holds path, from /proc/mounts."""
    path, best = os.path.realpath(path), ("?", "?", "?")
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and \
                    len(mnt) >= len(best[0] if best[0] != "?" else ""):
                best = (mnt, fstype, dev)
    return best


class Maker:
    """Builds the servers of a section: larder (or a redis stand-in with --only-redis) and
    redis, each in its own scratch directory under the data root."""

    def __init__(self, a, log):
        self.a, self.log = a, log

    def _place(self, s):
        shutil.rmtree(s.workdir, ignore_errors=True)
        s.workdir = tempfile.mkdtemp(prefix="%s-" % s.label, dir=self.a.data_root)
        return s

    def larder(self, label, persist, larder_only=()):
        a = self.a
        if a.only_redis:
            return self.redis(label.replace("larder", "redis-b"), persist)
        extra = shlex.split(a.larder_args) + list(persist) + list(larder_only)
        return self._place(Server.larder(a.larder_bin, label, self.log, extra, a.taskset_server))

    def redis(self, label, persist):
        a = self.a
        extra = list(persist) + shlex.split(a.redis_args)
        return self._place(Server.redis(label, self.log, extra, a.taskset_server))


def persistence(s):
    return s.info("persistence")


def num(d, k, default=0):
    try:
        return float(d.get(k, default))
    except (TypeError, ValueError):
        return default


def load_keys(s, n, value_bytes, first=0, fill=b"x"):
    """SET key:%012d for ids [first, first+n) over one pipelined connection; seconds taken."""
    value = fill * value_bytes
    return send_all_count_ok(s.port, set_batches((key_name(i) for i in range(first, first + n)),
                                                 lambda i, k: value, 1000), n)


def wait_until(pred, timeout, step=0.01, sample=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sample:
            sample()
        if pred():
            return True
        time.sleep(step)
    raise RuntimeError("timed out after %ss" % timeout)


def persistence_idle(s):
    """No snapshot or log rewrite runs (an automatic rewrite may have started on its own)."""
    p = persistence(s)
    return num(p, "rdb_bgsave_in_progress") == 0 and num(p, "aof_rewrite_in_progress") == 0


def bgsave_done(s, saves0):
    p = persistence(s)
    return num(p, "rdb_bgsave_in_progress") == 0 and num(p, "rdb_saves") > saves0


def rewrite_done(s, rewrites0):
    p = persistence(s)
    return (num(p, "aof_rewrite_in_progress") == 0 and num(p, "aof_rewrite_scheduled") == 0
            and num(p, "aof_rewrites") > rewrites0)


def start_ready(s, timeout=600):
    """Start s and wait until INFO says loading:0 (a server may answer PING with -LOADING)."""
    s.start(timeout=timeout)
    wait_until(lambda: num(persistence(s), "loading", 1) == 0, timeout, 0.005)
    return s


def kill9(s):
    s.proc.kill()
    s.proc.wait()
    s.log.close()


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


# ---------------------------------------------------------------- everysec: SET at pipeline 16


def dtgen_set(a, dtgen, port, clients, pipeline, n, seed):
    cmd = [dtgen, "run", HOST, str(port), str(clients), str(pipeline), str(n), str(seed), "SET",
           "key:{%d:12}" % a.keyspace, "x" * a.value_bytes]
    return (["taskset", "-c", a.taskset_client] if a.taskset_client else []) + cmd


def one_run(a, s, cmd, raw, n, fsync_count=False):
    """measured_run plus the INFO persistence counters and (optionally) the kernel's count of
    the server's fdatasync/fsync calls, from `perf stat` on the syscall tracepoints."""
    p0 = persistence(s)
    perf, perf_out = None, None
    if fsync_count and a.perf:
        perf_out = os.path.join(a.data_root, "perf-%d.txt" % s.pid)
        perf = subprocess.Popen(["perf", "stat", "-x", ",", "-o", perf_out, "-e",
                                 "syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync",
                                 "-p", str(s.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(0.3)  # attached
    try:
        r = measured_run(s, cmd, raw, json.loads, a.run_timeout)
    finally:
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=10)
    p1 = persistence(s)
    r["requests"] = n
    r["ops_per_server_cpu_s"] = round(n / r["server_cpu_s"]) if r["server_cpu_s"] else None
    r["client_busy"] = round(r["client_cpu_s"] / r["wall_s"], 3) if r["wall_s"] else None
    if "aof_fsyncs" in p1:
        r["info_fsyncs"] = int(num(p1, "aof_fsyncs") - num(p0, "aof_fsyncs"))
        r["info_groups_per_fsync"] = p1.get("aof_groups_per_fsync")
    r["aof_rewrites"] = int(num(p1, "aof_rewrites") - num(p0, "aof_rewrites"))
    if perf_out and os.path.exists(perf_out):
        count = 0
        with open(perf_out) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) > 2 and parts[2].startswith("syscalls:sys_enter_f") and \
                        parts[0].isdigit():
                    count += int(parts[0])
        os.unlink(perf_out)
        r["kernel_fsyncs"] = count
    fs = r.get("kernel_fsyncs", r.get("info_fsyncs"))
    if fs:
        r["fsyncs_per_s"] = round(fs / r["wall_s"], 1)
        r["writes_per_fsync"] = round(n / fs, 2)
    if r.get("errors"):
        r["error"] = "%d error replies, first: %s" % (r["errors"], r.get("first_error"))
    return r


def section_throughput(a, mk, dtgen, raw, name, servers, cells):
    """Start servers, prefill the keyspace, then every (clients, pipeline, requests) cell per
    round with the servers rotating which goes first."""
    runs = []
    try:
        for s in servers:
            start_ready(s)
            t = load_keys(s, a.keyspace, a.value_bytes)
            verify_keys(s, a.keyspace, a.value_bytes, a.keyspace, samples=50)
            print("%s: %s prefilled %d keys in %.1fs" % (name, s.label, a.keyspace, t),
                  file=sys.stderr)
        meta = [server_meta(s) for s in servers]
        for rnd in range(a.rounds):
            k = rnd % len(servers)
            order = servers[k:] + servers[:k]
            for clients, pipeline, n in cells:
                for s in order:
                    cmd = dtgen_set(a, dtgen, s.port, clients, pipeline, n, 1000 * rnd + clients)
                    r = dict(section=name, server=s.label, round=rnd, clients=clients,
                             pipeline=pipeline)
                    try:
                        r.update(one_run(a, s, cmd, raw, n, fsync_count=name == "always"))
                    except (RuntimeError, ValueError, OSError) as e:
                        r["error"] = str(e)
                    runs.append(r)
                    print("%s round %d %-16s c%-2d P%-2d %s" % (
                        name, rnd, s.label, clients, pipeline,
                        "%.0f ops/s, %s ops/CPU-s, p99 %.3f ms, fsyncs %s" % (
                            r["rps"], r["ops_per_server_cpu_s"], r.get("p99_ms") or 0,
                            r.get("kernel_fsyncs", r.get("info_fsyncs", "-")))
                        if "error" not in r else "FAILED: " + r["error"]), file=sys.stderr)
    finally:
        for s in servers:
            s.stop()
    return meta, runs


def server_meta(s):
    return {"label": s.label, "argv": shlex.join(s.argv), "version": s.version(),
            "threads": s.threads(), "idle_cpu_fraction": round(s.idle_cpu_fraction(0.5), 4),
            "filesystem": "%s (%s on %s)" % ((s.workdir,) + filesystem_of(s.workdir)[1:3])}


# ---------------------------------------------------------------- snapshot and rewrite


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def private_kb(pid):
    """(USS, PSS) in KiB of a process from smaps_rollup; (0, 0) once it is gone."""
    uss = pss = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    uss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
    except OSError:
        pass
    return uss, pss


class MemWatch:
    """Samples parent RSS and every child's USS while a background save runs."""

    def __init__(self, s):
        self.s, self.peak, self.peak_parent = s, 0, 0
        self.peak_child_uss = self.peak_child_pss = 0
        self.child_seen, self.samples = False, 0
        try:  # reset VmHWM (Linux >= 4.0) so that it reads the peak from here on
            with open("/proc/%d/clear_refs" % s.pid, "w") as f:
                f.write("5")
            self.hwm_reset = True
        except OSError:
            self.hwm_reset = False

    def sample(self):
        rss = self.s.rss_bytes()
        kids = [private_kb(c) for c in children(self.s.pid)]
        uss, pss = sum(k[0] for k in kids) * 1024, sum(k[1] for k in kids) * 1024
        self.child_seen |= bool(kids)
        self.samples += 1
        self.peak = max(self.peak, rss + uss)
        self.peak_parent = max(self.peak_parent, rss)
        self.peak_child_uss = max(self.peak_child_uss, uss)
        self.peak_child_pss = max(self.peak_child_pss, pss)

    def result(self):
        hwm = (proc_status(self.s.pid, "VmHWM") or 0) * 1024 if self.hwm_reset else None
        peak = max(self.peak, (hwm or 0) + self.peak_child_uss)
        return {"peak_bytes": peak, "sampled_peak_bytes": self.peak,
                "parent_vmhwm_bytes": hwm, "peak_parent_rss_bytes": self.peak_parent,
                "peak_child_uss_bytes": self.peak_child_uss,
                "peak_child_pss_bytes": self.peak_child_pss, "child_seen": self.child_seen,
                "samples": self.samples}


def snapshot_one(a, s, mixgen, rnd, raw_base):
    ctx = mp.get_context("fork")
    stop, ready = ctx.Event(), ctx.Event()
    start_ready(s)
    try:
        sm = server_meta(s)
        t_load = load_keys(s, a.keys, a.snap_value_bytes)
        time.sleep(a.settle)
        r = {"section": "snapshot", "server": s.label, "round": rnd, "server_meta": sm,
             "load_s": round(t_load, 2), "dataset_rss_bytes": s.rss_bytes(),
             "used_memory": int(num(s.info("memory"), "used_memory"))}
        rx, tx = ctx.Pipe(duplex=False)
        pr = ctx.Process(target=prober, args=(s.port, "get", a.keys, 16, a.interval_ms / 1000,
                                              not a.no_rt, stop, ready, tx))
        pr.daemon = True  # never outlives a failed run
        pr.start()
        ready.wait(10)
        marks = {"idle": time.monotonic_ns()}
        time.sleep(a.baseline)
        load = subprocess.Popen([mixgen, HOST, str(s.port), str(a.snap_clients), "1",
                                 str(10 ** 9), str(a.keys), str(a.snap_value_bytes), "1", "1",
                                 str(rnd + 1)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        c0, b0 = s.cpu_seconds(), machine_busy_seconds()
        st0 = s.info("stats")
        try:
            marks["load"] = time.monotonic_ns()
            time.sleep(a.baseline)
            for phase, cmd, done in (("snapshot", "BGSAVE", bgsave_done),
                                     ("rewrite", "BGREWRITEAOF", rewrite_done)):
                if phase == "rewrite" and a.no_rewrite:
                    continue
                p0 = persistence(s)
                before = num(p0, "rdb_saves" if phase == "snapshot" else "aof_rewrites")
                mw = MemWatch(s)
                rss_before = s.rss_bytes()
                marks[phase] = time.monotonic_ns()
                s.call(cmd)
                wait_until(lambda: done(s, before), a.save_timeout, 0.01, mw.sample)
                marks[phase + "_end"] = time.monotonic_ns()
                p1 = persistence(s)
                r[phase] = dict(mw.result(), rss_before_bytes=rss_before,
                                seconds=(marks[phase + "_end"] - marks[phase]) / 1e9,
                                cow_peak=int(num(p1, "current_cow_peak")),
                                last_cow_size=int(num(p1, "rdb_last_cow_size" if phase ==
                                                      "snapshot" else "aof_last_cow_size")))
                r[phase]["peak_over_dataset"] = round(
                    r[phase]["peak_bytes"] / r["dataset_rss_bytes"], 3)
                time.sleep(a.gap)
            marks["end"] = time.monotonic_ns()
        finally:
            load.terminate()
            load.wait()
        st1 = s.info("stats")
        wall = (marks["end"] - marks["load"]) / 1e9
        r["load_ops_per_s"] = round((num(st1, "total_commands_processed")
                                     - num(st0, "total_commands_processed")) / wall)
        r["server_cpu_frac"] = round((s.cpu_seconds() - c0) / wall, 3)
        r["machine_busy_frac"] = round((machine_busy_seconds() - b0) / wall, 3)
        stop.set()
        if not rx.poll(30):
            raise RuntimeError("the prober sent no samples (server stalled?)")
        r["prober"], samples = rx.recv()
        pr.join()
        r["dataset_check"] = s.try_call("DBSIZE")
    finally:
        stop.set()
        s.stop()
    edges = sorted((t, k) for k, t in marks.items())

    def phase_of(t0):
        name = "before"
        for t, k in edges:
            if t0 >= t:
                name = k
        return name

    by = {}
    with open("%s-%s-r%d.raw" % (raw_base, s.label, rnd), "w") as f:
        f.write("offset_ms,rtt_ms,phase\n")
        for t0, rtt in samples:
            ph = phase_of(t0)
            by.setdefault(ph, []).append(rtt)
            f.write("%.3f,%.4f,%s\n" % ((t0 - marks["load"]) / 1e6, rtt / 1e6, ph))
    r["probes"] = {ph: stats(v) for ph, v in by.items()}
    return r


# ---------------------------------------------------------------- restart


def restart_one(a, mk, variant, rnd):
    """Write --keys keys (plus a tail of overwrites where a log follows the base file), make it
    durable the variant's way, kill -9, and time the restart until the data is all there."""
    n, tail = a.keys, int(a.keys * a.tail_fraction)
    if variant == "larder":
        s = mk.larder("larder", EVERYSEC)
    elif variant == "redis-rdb":
        s = mk.redis("redis-rdb", ["--appendonly", "no"])
    else:
        s = mk.redis("redis-aof", EVERYSEC + ["--aof-use-rdb-preamble", "yes"])
    r = {"section": "restart", "server": s.label, "round": rnd, "keys": n}
    start_ready(s)
    try:
        r["server_meta"] = server_meta(s)
        load_keys(s, n, a.snap_value_bytes)
        if variant == "redis-rdb":
            load_keys(s, tail, a.snap_value_bytes, fill=b"y")
            s.call("SAVE")
            r["from"] = "RDB (SAVE after every write)"
        else:
            wait_until(lambda: persistence_idle(s), a.save_timeout)
            p0 = persistence(s)
            if variant == "larder":
                s.call("BGSAVE")
                wait_until(lambda: bgsave_done(s, num(p0, "rdb_saves")), a.save_timeout)
            else:
                s.call("BGREWRITEAOF")
                wait_until(lambda: rewrite_done(s, num(p0, "aof_rewrites")), a.save_timeout)
            load_keys(s, tail, a.snap_value_bytes, fill=b"y")
            time.sleep(2.0)  # everysec: the tail is fsynced
            r["from"] = ("snapshot + log tail of %d SETs" if variant == "larder" else
                         "AOF: RDB-preamble base + tail of %d SETs") % tail
        r["files_bytes"] = dir_bytes(s.workdir)
        kill9(s)
        t0 = time.perf_counter()
        s.start(timeout=a.save_timeout)
        r["first_reply_s"] = round(time.perf_counter() - t0, 3)
        wait_until(lambda: num(persistence(s), "loading", 1) == 0, a.save_timeout, 0.005)
        r["ready_s"] = round(time.perf_counter() - t0, 3)
        r["keys_per_s"] = round(n / r["ready_s"])
        verify_keys(s, n, a.snap_value_bytes, n, samples=200)
        r["rss_after_bytes"] = s.rss_bytes()
        r["keys_loaded_info"] = persistence(s).get("rdb_last_load_keys_loaded")
    except (RuntimeError, OSError) as e:
        r["error"] = str(e)
    finally:
        s.stop()
    return r


# ---------------------------------------------------------------- report


def mib(v):
    return "%.0f" % (v / 2 ** 20) if v is not None else "–"


def ms(v):
    return "–" if v is None else ("%.3f" % v if v < 10 else "%.1f" % v)


def vals(runs, **match):
    return [r for r in runs if "error" not in r and all(r.get(k) == v for k, v in match.items())]


def per_round_ratio(runs, metric, a_label, b_label, **match):
    pairs = []
    for rnd in sorted({r["round"] for r in runs}):
        x = vals(runs, server=a_label, round=rnd, **match)
        y = vals(runs, server=b_label, round=rnd, **match)
        if x and y:
            pairs.append((x[0].get(metric), y[0].get(metric)))
    return ratio_cell(pairs)


def render(meta, data):
    out = []
    w = out.append
    w("## Durability side by side: larder vs redis-server\n")
    out.extend(run_lines(meta))
    w("- data directories: %s; %d round(s); servers alternate (rotate) which goes first each "
      "round; cells are median [min–max] over rounds, ratios per round" % (
          meta["data_fs"], meta["rounds"]))
    for e in meta.get("errors", []):
        w("- **ERROR: %s**" % e)
    ev = data.get("everysec")
    if ev:
        labels = [s["label"] for s in ev["servers"]]
        w("\n### everysec: SET, %d clients, pipeline 16, %d-byte values, %d keys\n" % (
            meta["clients"], meta["value_bytes"], meta["keyspace"]))
        w("| server | ops/s | ops/CPU-s | p50 ms | p99 ms | p99.9 ms | server CPU s | RSS MiB |"
          " log rewrites | client CPU/wall | other CPU/wall |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for lb in labels:
            rs = vals(ev["runs"], server=lb)
            g = lambda k: [r.get(k) for r in rs]  # noqa: E731
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                lb, cell(g("rps")), cell(g("ops_per_server_cpu_s")), cell(g("p50_ms"), ms),
                cell(g("p99_ms"), ms), cell(g("p999_ms"), ms),
                cell(g("server_cpu_s"), lambda v: "%.2f" % v), cell(g("server_rss_bytes"), mib),
                cell(g("aof_rewrites"), lambda v: "%d" % v),
                cell(g("client_busy"), lambda v: "%.0f%%" % (100 * v)),
                cell(g("foreign_cpu_frac"), lambda v: "%.0f%%" % (100 * v))))
        if len(labels) == 3:
            mem, lev, rev = labels
            w("\n| ratio (per round) | ops/CPU-s | ops/s | p99 | target |")
            w("|---|---:|---:|---:|---|")
            w("| %s / %s | %s | %s | %s | ops/CPU-s ≥ 0.9× |" % (
                lev, mem, per_round_ratio(ev["runs"], "ops_per_server_cpu_s", lev, mem),
                per_round_ratio(ev["runs"], "rps", lev, mem),
                per_round_ratio(ev["runs"], "p99_ms", lev, mem)))
            w("| %s / %s | %s | %s | %s | ≥ 1.3× |" % (
                lev, rev, per_round_ratio(ev["runs"], "ops_per_server_cpu_s", lev, rev),
                per_round_ratio(ev["runs"], "rps", lev, rev),
                per_round_ratio(ev["runs"], "p99_ms", lev, rev)))
    al = data.get("always")
    if al:
        labels = [s["label"] for s in al["servers"]]
        w("\n### always: SET, pipeline 1, %d-byte values (fsyncs: %s)\n" % (
            meta["value_bytes"], meta["fsync_source"]))
        w("| clients | server | writes/s | p50 ms | p99 ms | p99.9 ms | fsyncs/s | writes per "
          "fsync | INFO aof_fsyncs | server CPU s | ratio writes/s (target ≥ 1) |")
        w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in sorted({r["clients"] for r in al["runs"]}):
            for lb in labels:
                rs = vals(al["runs"], server=lb, clients=c)
                g = lambda k: [r.get(k) for r in rs]  # noqa: E731
                ratio = (per_round_ratio(al["runs"], "rps", labels[0], labels[1], clients=c)
                         if lb == labels[0] and len(labels) == 2 else "")
                w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    c, lb, cell(g("rps")), cell(g("p50_ms"), ms), cell(g("p99_ms"), ms),
                    cell(g("p999_ms"), ms),
                    cell(g("fsyncs_per_s")), cell(g("writes_per_fsync"), lambda v: "%.2f" % v),
                    cell(g("info_fsyncs")), cell(g("server_cpu_s"), lambda v: "%.2f" % v),
                    ratio))
    sn = data.get("snapshot")
    if sn:
        w("\n### snapshot and log rewrite under a 1:1 SET:GET load (%d keys, %d-byte values, "
          "mixgen %d clients), GET probe every %g ms\n" % (
              meta["keys"], meta["snap_value_bytes"], meta["snap_clients"], meta["interval_ms"]))
        w("Data set RSS: after the keys are loaded, before the load starts; peak / data set "
          "uses it. ")
        w("Peak = max over samples (every ~10 ms) of parent RSS + fork child's private memory "
          "(USS, smaps_rollup), and parent VmHWM (reset by clear_refs before the command) + the "
          "child's peak USS. Probes: max ms / p99.9 ms / count over 10 ms, per phase.\n")
        w("| server | round | data set RSS MiB | RSS at BGSAVE MiB | snapshot s | peak MiB | "
          "peak / data set | child USS MiB | last_cow_size MiB | rewrite s | rewrite peak / data "
          "set | idle | load only | during BGSAVE | during BGREWRITEAOF | load ops/s |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---:|")
        for r in sn:
            if "error" in r:
                w("| %s | %d | ERROR: %s |" % (r["server"], r["round"], r["error"]))
                continue
            p = r["probes"]
            pc = lambda ph: ("%.2f / %.2f / **%d**" % (p[ph]["max_ms"], p[ph]["p999_ms"],  # noqa
                                                     p[ph]["over_10ms"])
                             if p.get(ph, {}).get("probes") else "–")
            snap, rw = r.get("snapshot", {}), r.get("rewrite", {})
            w("| %s | %d | %s | %s | %.2f | %s | **%.2f×** | %s | %s | %s | %s | %s | %s | %s "
              "| %s | %s |" % (
                  r["server"], r["round"], mib(r["dataset_rss_bytes"]),
                  mib(snap.get("rss_before_bytes")), snap.get("seconds", 0),
                  mib(snap.get("peak_bytes")), snap.get("peak_over_dataset", 0),
                  mib(snap.get("peak_child_uss_bytes")), mib(snap.get("last_cow_size")),
                  "%.2f" % rw["seconds"] if rw else "–",
                  "%.2f×" % rw["peak_over_dataset"] if rw else "–",
                  pc("idle"), pc("load"), pc("snapshot"), pc("rewrite"),
                  fmt_num(r["load_ops_per_s"])))
    rs = data.get("restart")
    if rs:
        w("\n### restart after kill -9 (%d keys, %d-byte values)\n" % (
            meta["keys"], meta["snap_value_bytes"]))
        w("Time from spawn to INFO `loading:0` (then DBSIZE and sample GETs are checked).\n")
        w("| server | from | files MiB | first reply s | ready s | keys/s (target ≥ 1M) | "
          "RSS after MiB |")
        w("|---|---|---:|---:|---:|---:|---:|")
        for lb in sorted({r["server"] for r in rs}):
            ok = vals(rs, server=lb)
            bad = [r for r in rs if r["server"] == lb and "error" in r]
            g = lambda k: [r.get(k) for r in ok]  # noqa: E731
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                lb, ok[0]["from"] if ok else "ERROR: %s" % bad[0]["error"],
                cell(g("files_bytes"), mib), cell(g("first_reply_s"), lambda v: "%.2f" % v),
                cell(g("ready_s"), lambda v: "%.2f" % v), cell(g("keys_per_s")),
                cell(g("rss_after_bytes"), mib)))
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections: " + ",".join(SECTIONS))
    ap.add_argument("--keys", type=int, default=5_000_000, help="snapshot and restart sections")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tag", default="")
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--larder-args", default="")
    ap.add_argument("--redis-args", default="")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: redis-server stands in for larder")
    ap.add_argument("--data-root", help="where the servers' directories go (default: "
                    "bench/results/persist-data.raw, on the repository's disk)")
    ap.add_argument("--keyspace", type=int, default=100000, help="everysec and always sections")
    ap.add_argument("--value-bytes", type=int, default=256)
    ap.add_argument("--clients", type=int, default=50, help="everysec section")
    ap.add_argument("--requests", type=int, default=2_000_000, help="everysec, per run")
    ap.add_argument("--always-clients", default="1,10,50")
    ap.add_argument("--always-requests", default="5000,50000,200000",
                    help="per run, one per --always-clients")
    ap.add_argument("--no-perf", dest="perf", action="store_false",
                    help="do not count fsyncs with perf stat")
    ap.add_argument("--snap-value-bytes", type=int, default=32)
    ap.add_argument("--snap-clients", type=int, default=10, help="mixgen clients, pipeline 1")
    ap.add_argument("--interval-ms", type=float, default=1.0)
    ap.add_argument("--baseline", type=float, default=2.0,
                    help="seconds of idle probing, then of load before BGSAVE")
    ap.add_argument("--gap", type=float, default=1.0, help="seconds after each background job")
    ap.add_argument("--no-rewrite", action="store_true", help="skip BGREWRITEAOF")
    ap.add_argument("--no-rt", action="store_true")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--tail-fraction", type=float, default=0.1,
                    help="restart: overwrites after the base file, as a share of --keys")
    ap.add_argument("--save-timeout", type=float, default=600)
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--taskset-server")
    ap.add_argument("--taskset-client")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--render", metavar="JSON")
    a = ap.parse_args(argv)
    a.only = [x for x in a.only.split(",") if x]
    for x in a.only:
        if x not in SECTIONS:
            ap.error("unknown section %r" % x)
    a.always_clients = [int(x) for x in a.always_clients.split(",")]
    a.always_requests = [int(x) for x in a.always_requests.split(",")]
    if len(a.always_requests) != len(a.always_clients):
        ap.error("--always-requests needs one count per --always-clients")
    return a


def run_section(a, mk, name, data, raw, base):
    meta = data["meta"]
    if name in ("everysec", "always"):
        dtgen = build_dtgen()
        if name == "everysec":
            servers = [mk.larder("larder-mem", []), mk.larder("larder-everysec", EVERYSEC),
                       mk.redis("redis-everysec", EVERYSEC)]
            cells = [(a.clients, 16, a.requests)]
        else:
            servers = [mk.larder("larder-always", ALWAYS), mk.redis("redis-always", ALWAYS)]
            cells = [(c, 1, n) for c, n in zip(a.always_clients, a.always_requests)]
        sm, runs = section_throughput(a, mk, dtgen, raw, name, servers, cells)
        data[name] = {"servers": sm, "runs": runs}
        meta["servers"] += sm
    elif name == "snapshot":
        mixgen, why = build_mixgen()
        if why:
            raise RuntimeError("mixgen: %s" % why)
        data["snapshot"] = []
        for rnd in range(a.rounds):
            for which in (("larder", "redis") if rnd % 2 == 0 else ("redis", "larder")):
                s = (mk.larder("larder-snap", EVERYSEC) if which == "larder"
                     else mk.redis("redis-snap", EVERYSEC))
                try:
                    r = snapshot_one(a, s, mixgen, rnd, base)
                except (RuntimeError, OSError) as e:
                    r = {"section": "snapshot", "server": s.label, "round": rnd,
                         "error": str(e)}
                data["snapshot"].append(r)
                print("snapshot round %d %s: %s" % (rnd, s.label, json.dumps(
                    {k: r.get(k) for k in ("snapshot", "rewrite", "error")})), file=sys.stderr)
    else:
        data["restart"] = []
        variants = ["larder", "redis-rdb", "redis-aof"]
        for rnd in range(a.rounds):
            for v in (variants if rnd % 2 == 0 else variants[::-1]):
                r = restart_one(a, mk, v, rnd)
                data["restart"].append(r)
                print("restart round %d %s: %s" % (rnd, r["server"], r.get("error") or
                      "ready in %.2fs (%d keys/s)" % (r["ready_s"], r["keys_per_s"])),
                      file=sys.stderr)


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            d = json.load(f)
        print(render(d["meta"], d))
        return 0
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin, or --only-redis" % a.larder_bin)
    if a.perf and not shutil.which("perf"):
        print("note: perf not found; Redis's fsyncs are not counted (larder's from INFO)",
              file=sys.stderr)
        a.perf = False
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-persist_compare")
    own_root = not a.data_root
    a.data_root = a.data_root or os.path.join(RESULTS, "persist-data.raw")
    os.makedirs(a.data_root, exist_ok=True)
    mount, fstype, dev = filesystem_of(a.data_root)
    data_fs = "%s (%s, %s on %s)" % (a.data_root, fstype, dev, mount)
    if fstype in ("tmpfs", "ramfs"):
        print("WARNING: data directories on %s: fsync costs nothing there" % fstype,
              file=sys.stderr)
    raw = open(base + ".raw", "w")
    mk = Maker(a, base + "-servers.log.raw")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "servers": [], "rounds": a.rounds, "data_fs": data_fs, "keys": a.keys,
            "keyspace": a.keyspace, "value_bytes": a.value_bytes, "clients": a.clients,
            "snap_value_bytes": a.snap_value_bytes, "snap_clients": a.snap_clients,
            "interval_ms": a.interval_ms,
            "fsync_source": "kernel count of the server's fdatasync+fsync syscalls (perf stat "
                            "on the syscalls tracepoints, whole process)" if a.perf else
                            "larder INFO aof_fsyncs only; Redis's are not observable here"}
    data = {"meta": meta}
    try:
        for name in a.only:
            try:
                run_section(a, mk, name, data, raw, base)
            except (RuntimeError, OSError) as e:  # a failed section: the others still run
                meta.setdefault("errors", []).append("%s: %r" % (name, e))
                print("FAILED %s: %r" % (name, e), file=sys.stderr)
    finally:
        raw.close()
        if own_root:
            shutil.rmtree(a.data_root, ignore_errors=True)
    for sec in ("snapshot", "restart"):
        for r in data.get(sec, []):
            sm = r.get("server_meta")
            if sm and sm["label"] not in {x["label"] for x in meta["servers"]}:
                meta["servers"].append(sm)
    md = render(meta, data)
    with open(base + ".json", "w") as f:
        json.dump(data, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json,raw}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    bad = meta.get("errors") or any(
        "error" in r for sec in SECTIONS for r in (
            data.get(sec, {}).get("runs", []) if isinstance(data.get(sec), dict)
            else data.get(sec, [])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
