#!/usr/bin/env python3
"""HTTP door benchmark: small GETs and PUTs over HTTP/1.1 keep-alive against larder's own RESP
door on the same server, and against webdis in front of redis-server where webdis is installed.

One larder serves both doors (`--port` for RESP, `--http-port` for HTTP) over one keyspace, so
the HTTP/RESP comparison is the cost of the door alone. webdis (Debian's `webdis`) is an HTTP
front for Redis: its numbers count webdis and redis-server together as "the server".

Load comes from `httpgen` (bench/httpgen.c, compiled with cc on first use): one thread, epoll,
one request in flight per connection, the same code path for every protocol, so the generator
costs the same whichever door it drives. Per round and cell (operation × connections) it runs
each target in turn, rotating which goes first every round. Per run it records ops/s, server
CPU seconds (utime+stime from /proc/PID/stat) and ops per server CPU-second; then, per target,
latency percentiles in an open loop at a fixed offered rate (latency counted from when each
request was due); and the servers' RSS at the end. Results: bench/results/STAMP-http_compare.md
(tables) and .json (every number).

Standard library only; helpers come from resp_compare.py.
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (HOST, RESULTS, Server, cell, default_larder_bin, fmt_num,  # noqa: E402
                          free_port, machine_line, prefill, ratio_cell, size_label, build_tool)

HTTPGEN_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "httpgen.c")


def build_httpgen():
    """Compile bench/httpgen.c once per source version into the temp dir."""
    return build_tool(HTTPGEN_SRC)


class Webdis:
    """webdis in front of a redis-server, started from a JSON config in a scratch dir."""

    def __init__(self, redis_port, threads, log_path):
        self.port = free_port()
        self.workdir = tempfile.mkdtemp(prefix="larder-bench-webdis-")
        self.config = {"redis_host": HOST, "redis_port": redis_port, "http_host": HOST,
                       "http_port": self.port, "threads": threads, "pool_size": 20,
                       "daemonize": False, "verbosity": 0, "logfile": log_path,
                       "acl": [{"disabled": ["DEBUG", "FLUSHDB", "FLUSHALL"]}]}
        path = os.path.join(self.workdir, "webdis.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        self.argv = ["webdis", path]
        self.proc = None

    def start(self, timeout=15.0):
        self.proc = subprocess.Popen(self.argv, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout
        import socket
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("webdis exited with %s" % self.proc.returncode)
            try:
                with socket.create_connection((HOST, self.port), timeout=2) as s:
                    s.sendall(b"GET /PING HTTP/1.1\r\nHost: b\r\n\r\n")
                    if b"PONG" in s.recv(4096):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("webdis did not answer /PING")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


def cpu_seconds(pids):
    from resp_compare import proc_cpu_seconds
    return sum(proc_cpu_seconds(p) for p in pids)


def rss_bytes(pids):
    from resp_compare import proc_status
    return sum((proc_status(p, "VmRSS") or 0) * 1024 for p in pids)


def run_gen(httpgen, target, op, conns, n, keyspace, size, rate, seed):
    """One httpgen run against `target`; its JSON plus the server CPU it cost."""
    argv = [httpgen, target["proto"], HOST, str(target["port"]), str(conns), str(n),
            str(keyspace), str(size), "set" if op == "put" else "get", str(rate), str(seed)]
    c0 = cpu_seconds(target["pids"])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    cpu = cpu_seconds(target["pids"]) - c0
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (shlex.join(argv), r.stderr[-2000:]))
    out = json.loads(r.stdout)
    out.update(target=target["label"], op=op, server_cpu_s=cpu,
               ops_per_cpu_s=out["requests"] / cpu if cpu > 0 else None)
    if out["errors"]:
        raise RuntimeError("%s: %d errors" % (shlex.join(argv), out["errors"]))
    if op == "get" and out["misses"]:
        raise RuntimeError("%s: %d misses on a prefilled keyspace" % (target["label"],
                                                                      out["misses"]))
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--larder-bin", default=default_larder_bin())
    p.add_argument("--larder-args", default="", help="extra larder flags, e.g. '--threads 2'")
    p.add_argument("--conns", default="8,32", help="connections per run (no pipelining)")
    p.add_argument("--ops", default="get,put")
    p.add_argument("--value-bytes", type=int, default=64)
    p.add_argument("--keyspace", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200_000, help="per throughput run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rate", type=float, default=10_000,
                   help="offered requests/s of the latency runs")
    p.add_argument("--latency-seconds", type=float, default=10.0)
    p.add_argument("--no-webdis", action="store_true")
    p.add_argument("--quick", action="store_true",
                   help="1 round, a tenth of the requests, 2 s latency runs")
    p.add_argument("--tag", default="")
    p.add_argument("--out-dir", default=RESULTS)
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.requests, a.latency_seconds = 1, a.requests // 10, 2.0
    return a


def main(argv=None):
    a = parse_args(argv)
    conns = [int(x) for x in a.conns.split(",")]
    ops = a.ops.split(",")
    httpgen = build_httpgen()
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    os.makedirs(a.out_dir, exist_ok=True)
    base = os.path.join(a.out_dir, stamp + "-http_compare")
    log_path = base + ".raw"
    http_port = free_port()
    larder = Server.larder(a.larder_bin, "larder", log_path,
                           ["--http-port", str(http_port)] + shlex.split(a.larder_args))
    servers, targets = [larder], []
    webdis = None
    try:
        larder.start()
        prefill(larder, a.keyspace, a.value_bytes)
        targets.append({"label": "larder HTTP", "proto": "http", "port": http_port,
                        "pids": [larder.pid]})
        targets.append({"label": "larder RESP", "proto": "resp", "port": larder.port,
                        "pids": [larder.pid]})
        if not a.no_webdis and shutil.which("webdis") and shutil.which("redis-server"):
            redis = Server.redis("redis", log_path)
            servers.append(redis)
            redis.start()
            prefill(redis, a.keyspace, a.value_bytes)
            webdis = Webdis(redis.port, os.cpu_count() or 1, log_path).start()
            targets.append({"label": "webdis+redis", "proto": "webdis", "port": webdis.port,
                            "pids": [webdis.pid, redis.pid]})
        meta = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": machine_line(),
            "command": shlex.join([sys.executable] + sys.argv),
            "larder_argv": shlex.join(larder.argv), "larder_version": larder.version(),
            "larder_threads": larder.threads(),
            "webdis": webdis and {"argv": shlex.join(webdis.argv), "config": webdis.config},
            "redis_version": servers[1].version() if len(servers) > 1 else None,
            "value_bytes": a.value_bytes, "keyspace": a.keyspace, "requests": a.requests,
            "rounds": a.rounds, "conns": conns, "ops": ops, "rate": a.rate,
            "latency_seconds": a.latency_seconds, "cpus": os.cpu_count(),
        }
        runs, latency = [], []
        for rnd in range(a.rounds):
            order = targets[rnd % len(targets):] + targets[:rnd % len(targets)]
            for op in ops:
                for c in conns:
                    for t in order:
                        r = run_gen(httpgen, t, op, c, a.requests, a.keyspace, a.value_bytes,
                                    0, 1000 * rnd + c)
                        r["round"] = rnd
                        runs.append(r)
                        print("round %d %-4s c=%-3d %-13s %9.0f ops/s %9.0f ops/CPU-s" % (
                            rnd, op, c, t["label"], r["ops_per_s"], r["ops_per_cpu_s"] or 0),
                            flush=True)
        n_lat = max(1, int(a.rate * a.latency_seconds))
        for op in ops:
            for t in targets:
                r = run_gen(httpgen, t, op, max(conns), n_lat, a.keyspace, a.value_bytes,
                            a.rate, 7)
                latency.append(r)
                print("latency %-4s %-13s at %.0f/s: p50 %.0f us p99 %.0f us p99.9 %.0f us" % (
                    op, t["label"], a.rate, r["p50_us"], r["p99_us"], r["p999_us"]),
                    flush=True)
        memory = {t["label"]: rss_bytes(t["pids"]) for t in targets}
        meta["targets"] = [{k: v for k, v in t.items() if k != "pids"} for t in targets]
        result = {"meta": meta, "runs": runs, "latency": latency, "rss_bytes": memory}
        with open(base + ".json", "w") as f:
            json.dump(result, f, indent=1)
        md = render(result)
        with open(base + ".md", "w") as f:
            f.write(md)
        print(md)
        print("wrote %s.md and .json" % base)
    finally:
        if webdis:
            webdis.stop()
        for s in servers:
            s.stop()


def render(result):
    meta, runs = result["meta"], result["runs"]
    labels = [t["label"] for t in meta["targets"]]
    lines = [
        "## HTTP door: GET/PUT of %s values over keep-alive (`bench/http_compare.py`)" %
        size_label(meta["value_bytes"]),
        "",
        "- date: %s; machine: %s" % (meta["date"], meta["machine"]),
        "- larder: `%s` (%s, %s threads), RESP and HTTP doors of one process" % (
            meta["larder_argv"], meta["larder_version"], meta["larder_threads"]),
    ]
    if meta["webdis"]:
        lines.append("- webdis: `%s` (threads %s) in front of redis-server %s; its CPU and "
                     "memory are webdis's plus redis-server's" % (
                         meta["webdis"]["argv"], meta["webdis"]["config"]["threads"],
                         meta["redis_version"]))
    lines += [
        "- load: `httpgen`, one request in flight per connection, %d keys prefilled, "
        "%d requests per run, %d round(s), target order rotated every round" % (
            meta["keyspace"], meta["requests"], meta["rounds"]),
        "- command: `%s`" % meta["command"],
        "",
        "Throughput, closed loop: median [min–max] over rounds.",
        "",
        "| op | conns | target | ops/s | server CPU µs/op | ops per server CPU-s | "
        "÷ larder RESP (ops per CPU-s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in meta["ops"]:
        for c in meta["conns"]:
            by = {}
            for r in runs:
                if r["op"] == op and r["clients"] == c:
                    by.setdefault(r["target"], {})[r["round"]] = r
            resp = by.get("larder RESP", {})
            for label in labels:
                rs = by.get(label, {})
                vals = list(rs.values())
                pairs = [(rs[k]["ops_per_cpu_s"], resp[k]["ops_per_cpu_s"])
                         for k in rs if k in resp]
                lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                    op.upper(), c, label, cell([r["ops_per_s"] for r in vals]),
                    cell([1e6 * r["server_cpu_s"] / r["requests"] for r in vals],
                         fmt=lambda v: "%.1f" % v),
                    cell([r["ops_per_cpu_s"] for r in vals]),
                    "–" if label == "larder RESP" else ratio_cell(pairs)))
    lines += [
        "",
        "Latency, open loop at %s requests/s offered over %d connections for %.0f s "
        "(from when each request was due):" % (fmt_num(meta["rate"]), max(meta["conns"]),
                                                meta["latency_seconds"]),
        "",
        "| op | target | achieved ops/s | p50 µs | p99 µs | p99.9 µs | max µs |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["latency"]:
        lines.append("| %s | %s | %s | %.0f | %.0f | %.0f | %.0f |" % (
            r["op"].upper(), r["target"], fmt_num(r["ops_per_s"]), r["p50_us"], r["p99_us"],
            r["p999_us"], r["max_us"]))
    lines += ["", "Resident memory after the runs (larder: one process for both doors):", ""]
    seen = set()
    for label, rss in result["rss_bytes"].items():
        name = "larder" if label.startswith("larder") else label
        if name not in seen:
            seen.add(name)
            lines.append("- %s: %.1f MiB" % (name, rss / 2 ** 20))
    ratios = [r for r in ratio_rows(result)]
    if ratios:
        lines += ["", "HTTP GET ÷ RESP GET, ops per server CPU-second (target ≥ 0.5×): " +
                  "; ".join("%d conns %s" % (c, v) for c, v in ratios)]
    return "\n".join(lines) + "\n"


def ratio_rows(result):
    by = {}
    for r in result["runs"]:
        if r["op"] == "get":
            by.setdefault(r["clients"], {}).setdefault(r["round"], {})[r["target"]] = r
    for c, rounds in sorted(by.items()):
        pairs = [(rd["larder HTTP"]["ops_per_cpu_s"], rd["larder RESP"]["ops_per_cpu_s"])
                 for rd in rounds.values() if "larder HTTP" in rd and "larder RESP" in rd]
        yield c, ratio_cell(pairs)


if __name__ == "__main__":
    main()
