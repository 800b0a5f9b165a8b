#!/usr/bin/env python3
"""Scripting side by side: larder against redis-server on loopback, in one run (issue 14).

Section `throughput`: both servers are started once, the scripts loaded with SCRIPT LOAD; then,
round after round, each cell (workload x pipeline) runs against one server and then the other
(which goes first alternates every round) with `scriptgen` (bench/scriptgen.c, compiled with cc
on first use), closed loop, --clients connections:

  getincr     EVALSHA of `GET k; return INCR k` on g:{K}
  lock        EVALSHA of a lock taken and given back: SET l:{K} <token> NX PX 30000, then the
              compare-and-DEL release (GET == token -> DEL); tokens never repeat
  ratelimit   EVALSHA of a sliding-window rate limiter on r:{K}: TIME, ZREMRANGEBYSCORE older
              than 1 s, ZCARD, ZADD when under 100, EXPIRE 2 s; replies {admitted, count}

Section `latency`: the same three at pipeline 1 in an open loop at --rate requests/s offered
(latency from each request's due time, so queueing is charged), interleaved rounds.

Section `parallel`: scripts on disjoint keys (`EVALSHA getincr 1 p:{c}`: connection c alone
touches p:c) from --parallel-clients connections, against larder with `--threads N` for each N
in --parallel-threads (default 1,2) and redis-server, interleaved rounds; reported: ops/s and
the ratio of larder's N-thread to 1-thread throughput (redis-server runs every script on one
thread). On a machine with more cores, pin servers and generators apart (--taskset-server,
--taskset-client) and give --parallel-gens G: G generator processes (bench/gen_fanout.py)
share the connections, each on its own keys (p<g>:<c>), since one generator thread cannot keep
several server threads busy.

Section `cache`: EVAL of --cache-scripts distinct scripts on a fresh server each: INFO memory's
used_memory_lua / used_memory_vm_eval, used_memory_scripts_eval / used_memory_scripts,
number_of_cached_scripts, used_memory and RSS before and after, both servers.

Per throughput/latency run: ops/s, p50/p99/p99.9 (exact, over every request), server CPU seconds
(utime+stime from /proc/PID/stat), ops per server CPU-second (the headline), server RSS, the
generator's and other processes' CPU, and a reply check. Results: bench/results/*.md, *.json
(*.raw: generator output and server logs, gitignored). Standard library only.
"""

import argparse
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    REPO, RESULTS, Resp, RespError, Server, build_tool, cell, default_larder_bin, encode,
    TARGET_NOTE, fmt_num, machine_busy_seconds, machine_line, measured_run, ratio_cell,
    run_lines, target_cell)

SCRIPTGEN_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scriptgen.c")
FANOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_fanout.py")
TARGETS = {1: 1.0, 16: 1.3}  # ops per server CPU-second, larder/redis, by pipeline

SCRIPTS = {
    "getincr": "redis.call('GET', KEYS[1])\nreturn redis.call('INCR', KEYS[1])",
    "lock": """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 30000) then
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
  end
end
return 0""",
    "ratelimit": """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 1000)
local n = redis.call('ZCARD', KEYS[1])
local admitted = 0
if n < 100 then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  admitted = 1
end
redis.call('EXPIRE', KEYS[1], 2)
return {admitted, n}""",
}
# workload -> (key template, extra ARGV templates, check)
SHAPES = {
    "getincr": ("g:{%d}", [], "nonzero"),
    "lock": ("l:{%d}", ["t{c}-{i}"], "nonzero"),
    "ratelimit": ("r:{%d}", ["m{c}-{i}"], "arrays"),
}
INFO_FIELDS = ("used_memory", "used_memory_lua", "used_memory_vm_eval",
               "used_memory_scripts_eval", "used_memory_scripts", "number_of_cached_scripts")


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


def template(workload, keys):
    key, extra, check = SHAPES[workload]
    return ["EVALSHA", sha1(SCRIPTS[workload]), "1", key % keys] + extra, check


def check_value(r, check):
    n = r["requests"]
    return (r["nonzero"] if check == "nonzero" else r["array_replies"]) / n if n else 0


def load_scripts(s):
    for body in SCRIPTS.values():
        got = s.call("SCRIPT", "LOAD", body)
        got = got.decode() if isinstance(got, bytes) else got
        if got != sha1(body):
            raise RuntimeError("%s: SCRIPT LOAD gave %r, expected %s" % (s.label, got,
                                                                        sha1(body)))


def run_cell(a, s, gen, row, argv_tail, check, pipeline, rate, clients, rnd, raw, section,
             gens=1):
    n = (a.latency_requests if rate else
         a.requests if pipeline == 1 else a.requests_pipelined)
    r = dict(server=s.label, round=rnd, section=section, workload=row, pipeline=pipeline,
             rate=rate, clients=clients, check=check, command=" ".join(argv_tail))
    if s.proc.poll() is not None:
        r["error"] = "server exited with %s" % s.proc.returncode
        return r
    argv = [gen, "127.0.0.1", str(s.port), str(clients), str(pipeline), str(n), str(rate),
            str(1000 * rnd + pipeline)] + argv_tail
    if gens > 1:
        argv = [sys.executable, FANOUT, str(gens)] + argv
    if a.taskset_client:
        argv = ["taskset", "-c", a.taskset_client] + argv
    try:
        r.update(measured_run(s, argv, raw, json.loads, a.run_timeout))
    except (RuntimeError, ValueError, OSError) as e:
        r["error"] = str(e)
        return r
    r["ops_per_server_cpu_s"] = round(n / r["server_cpu_s"]) if r["server_cpu_s"] else None
    r["client_busy"] = round(r["client_cpu_s"] / r["wall_s"], 3) if r["wall_s"] else None
    r["check_value"] = round(check_value(r, check), 4)
    if r["errors"]:
        r["error"] = "%d error replies, first: %s" % (r["errors"], r["first_error"])
    return r


def report_line(rnd, r):
    if "error" in r:
        return "round %d %-10s %-10s P%-2d FAILED: %s" % (rnd, r["server"], r["workload"],
                                                          r["pipeline"], r["error"][:200])
    return "round %d %-10s %-10s P%-2d %s%.0f ops/s %.0f ops/CPU-s p99 %.3f ms check %.2f" % (
        rnd, r["server"], r["workload"], r["pipeline"],
        "@%.0f/s " % r["rate"] if r["rate"] else "", r["rps"], r["ops_per_server_cpu_s"] or 0,
        r["p99_ms"], r["check_value"])


def start_servers(servers, meta):
    for s in servers:
        s.start()
        load_scripts(s)
    meta.setdefault("servers", []).extend(
        {"label": s.label, "argv": shlex.join(s.argv), "version": s.version(),
         "threads": s.threads(), "idle_cpu_fraction": round(s.idle_cpu_fraction(), 4)}
        for s in servers)


def quiet_check(meta):
    b0, t0 = machine_busy_seconds(), time.perf_counter()
    time.sleep(1.0)
    meta["background_cpu_frac"] = round(
        (machine_busy_seconds() - b0) / (time.perf_counter() - t0), 3)
    print("# %s; background CPU %.0f%% of one CPU" % (
        meta["machine"], 100 * meta["background_cpu_frac"]), file=sys.stderr)
    if meta["background_cpu_frac"] > 0.1:
        print("WARNING: the machine is busy; results will be noisy", file=sys.stderr)


def larder(a, label, log, extra=()):
    return Server.larder(a.larder_bin, label, log, shlex.split(a.larder_args) + list(extra),
                         a.taskset_server)


def redis(a, label, log):
    return Server.redis(label, log, shlex.split(a.redis_args), a.taskset_server)


def throughput_and_latency(a, meta, runs, base, gen):
    raw = open(base + ".raw", "a")
    log = base + "-servers.log.raw"
    A = redis(a, "redis-b", log) if a.only_redis else larder(a, "larder", log)
    servers = [A, redis(a, "redis", log)]
    try:
        start_servers(servers, meta)
        quiet_check(meta)
        cells = []
        if "throughput" in a.sections:
            cells += [("throughput", w, p, 0) for w in a.workloads for p in a.pipelines]
        if "latency" in a.sections:
            cells += [("latency", w, 1, a.rate) for w in a.workloads]
        for rnd in range(a.rounds):
            order = servers if rnd % 2 == 0 else servers[::-1]
            for section, w, p, rate in cells:
                argv_tail, check = template(w, a.keys)
                for s in order:
                    r = run_cell(a, s, gen, w, argv_tail, check, p, rate, a.clients, rnd, raw,
                                 section)
                    runs.append(r)
                    print(report_line(rnd, r), file=sys.stderr)
    finally:
        meta.setdefault("server_exit_codes", {}).update({s.label: s.stop() for s in servers})
        raw.close()


def parallel(a, meta, runs, base, gen):
    raw = open(base + ".raw", "a")
    log = base + "-parallel-servers.log.raw"
    servers = [larder(a, "larder-t%d" % n, log, ["--threads", str(n)])
               for n in a.parallel_threads] + [redis(a, "redis", log)]
    if a.only_redis:
        servers = [redis(a, "redis-b", log), redis(a, "redis", log)]
    key = "p{g}:{c}" if a.parallel_gens > 1 else "p:{c}"
    argv_tail = ["EVALSHA", sha1(SCRIPTS["getincr"]), "1", key]
    try:
        start_servers(servers, meta)
        for rnd in range(a.rounds):
            order = servers[rnd % len(servers):] + servers[:rnd % len(servers)]
            for p in a.pipelines:
                for s in order:
                    r = run_cell(a, s, gen, "disjoint", argv_tail, "nonzero", p, 0,
                                 a.parallel_clients, rnd, raw, "parallel", a.parallel_gens)
                    runs.append(r)
                    print(report_line(rnd, r), file=sys.stderr)
    finally:
        meta.setdefault("server_exit_codes", {}).update({s.label: s.stop() for s in servers})
        raw.close()


def eval_distinct(port, n, batch=500):
    """EVAL n distinct scripts, pipelined in batches; returns the replies that were not i."""
    bad = 0
    c = Resp(port, timeout=60)
    try:
        for start in range(0, n, batch):
            end = min(n, start + batch)
            c.sock.sendall(b"".join(encode("EVAL", "return %d -- distinct script" % i, "0")
                                    for i in range(start, end)))
            bad += sum(c.reply() != i for i in range(start, end))
    finally:
        c.close()
    return bad


def cache(a, meta, cache_runs, base):
    log = base + "-cache-servers.log.raw"
    makers = [("larder", lambda: redis(a, "redis-b", log) if a.only_redis
               else larder(a, "larder", log)), ("redis", lambda: redis(a, "redis", log))]
    for rnd in range(a.cache_rounds):
        for _, make in (makers if rnd % 2 == 0 else makers[::-1]):
            s = make()
            r = {"server": s.label, "round": rnd, "scripts": a.cache_scripts}
            try:
                s.start()
                r["version"] = s.version()
                time.sleep(a.settle)
                before = {k: s.info("memory").get(k) for k in INFO_FIELDS}
                rss0 = s.rss_bytes()
                t0 = time.perf_counter()
                r["wrong_replies"] = eval_distinct(s.port, a.cache_scripts)
                r["load_s"] = round(time.perf_counter() - t0, 3)
                time.sleep(a.settle)
                after = {k: s.info("memory").get(k) for k in INFO_FIELDS}
                r["rss_delta"] = s.rss_bytes() - rss0
                r["info_before"], r["info_after"] = before, after
                if r["wrong_replies"]:
                    r["error"] = "%d wrong replies to EVAL" % r["wrong_replies"]
            except (RespError, RuntimeError, OSError) as e:
                r["error"] = str(e)
            finally:
                r["exit_code"] = s.stop()
            cache_runs.append(r)
            print("cache round %d %-8s %s" % (rnd, r["server"], r.get("error") or
                  "rss +%d, info after %s" % (r["rss_delta"], r["info_after"])),
                  file=sys.stderr)


# ---------------------------------------------------------------- report


def pair_rows(runs, section, a, b):
    rows, order = {}, []
    for r in runs:
        if r["section"] != section:
            continue
        key = (r["workload"], r["pipeline"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key].setdefault(r["round"], {})[r["server"]] = r
    return [(key, [(rd.get(a), rd.get(b)) for _, rd in sorted(rows[key].items())])
            for key in order]


def col(pairs, side, metric):
    return [(x[side] if x[side] and "error" not in x[side] else {}).get(metric) for x in pairs]


def both(pairs, metric, fmt=fmt_num, with_ratio=True):
    av, bv = col(pairs, 0, metric), col(pairs, 1, metric)
    return [cell(av, fmt), cell(bv, fmt)] + ([ratio_cell(list(zip(av, bv)))] if with_ratio
                                             else [])


def per_request(pairs, metric, fmt):
    """Both servers' `metric` (seconds) per request in µs, and their ratio per round (b/a, so
    that above 1 means `a` spent less, as in the throughput table)."""
    def side(i):
        return [v * 1e6 / n if v is not None and n else None
                for v, n in zip(col(pairs, i, metric), col(pairs, i, "requests"))]
    av, bv = side(0), side(1)
    return [cell(av, fmt), cell(bv, fmt), ratio_cell(list(zip(bv, av)))]


def verdict(pairs, pipeline):
    rs = [x / y for x, y in zip(col(pairs, 0, "ops_per_server_cpu_s"),
                                col(pairs, 1, "ops_per_server_cpu_s")) if x and y]
    return target_cell(rs, TARGETS.get(pipeline, TARGETS[16]))


def ms(v):
    return "%.3f" % v if v < 10 else "%.1f" % v


def table(w, title, rows, cols, fn):
    w("### " + title + "\n")
    w("| workload | pipeline | " + " | ".join(cols) + " |")
    w("|---|---:|" + "---:|" * len(cols))
    for key, ps in rows:
        w("| %s | %d | %s |" % (key[0], key[1], " | ".join(fn(ps, key[1]))))
    w("")


def render(meta, runs, cache_runs):
    a, b = meta["server_a"], meta["server_b"]
    out = []
    w = out.append
    w("## Scripting side by side: %s vs %s\n" % (a, b))
    out.extend(run_lines(meta) if meta.get("servers") else
               ["- date: %s; machine: %s" % (meta["date"], meta["machine"]),
                "- command: `%s`" % meta["command"]])
    for err in meta.get("errors", []):
        w("- **ERROR: %s**" % err)
    worst = max((r.get("foreign_cpu_frac") or 0 for r in runs), default=0)
    if worst > 0.15 or meta.get("background_cpu_frac", 0) > 0.1:
        w("- **WARNING: the machine was not quiet**: other processes used %.0f%% of a CPU "
          "before the runs and up to %.0f%% during one; treat these numbers as noisy."
          % (100 * meta.get("background_cpu_frac", 0), 100 * worst))
    w("- %d round(s), servers alternate first/second each round; scriptgen (bench/scriptgen.c)"
      ", one epoll thread: %d connections, %s requests per run at pipeline 1 and %s pipelined "
      "(closed loop); latency runs: open loop at %s requests/s offered, %s requests; %s keys "
      "per workload; taskset server=%s client=%s" % (
          meta["rounds"], meta["clients"], "{:,}".format(meta["requests"]),
          "{:,}".format(meta["requests_pipelined"]), "{:,}".format(meta["rate"]),
          "{:,}".format(meta["latency_requests"]), "{:,}".format(meta["keys"]),
          meta["taskset_server"] or "none", meta["taskset_client"] or "none"))
    w("- cells: median [min–max] over rounds; ratio = %s/%s per round, median [min–max]; "
      "target: ops/CPU-s ratio ≥ 1.0× at pipeline 1, ≥ 1.3× at pipeline 16; %s.\n"
      % (a, b, TARGET_NOTE))
    rows = pair_rows(runs, "throughput", a, b)
    if rows:
        table(w, "Throughput and efficiency (closed loop)", rows,
              ["%s ops/CPU-s" % a, "%s ops/CPU-s" % b, "ratio", "target", "%s ops/s" % a,
               "%s ops/s" % b, "ratio"],
              lambda ps, p: both(ps, "ops_per_server_cpu_s") + [verdict(ps, p)]
              + both(ps, "rps"))
        mib = lambda v: "%.0f" % (v / 2 ** 20)  # noqa: E731
        pct = lambda v: "%.0f%%" % (100 * v)  # noqa: E731
        table(w, "Closed-loop latency (ms), resources and reply checks", rows,
              ["%s p50" % a, "%s p50" % b, "%s p99" % a, "%s p99" % b, "%s RSS MiB" % a,
               "%s RSS MiB" % b, "check %s" % a, "check %s" % b, "other CPU/wall"],
              lambda ps, p: both(ps, "p50_ms", ms, False) + both(ps, "p99_ms", ms, False)
              + both(ps, "server_rss_bytes", mib, False) + both(ps, "check_value", pct, False)
              + [cell(col(ps, 0, "foreign_cpu_frac") + col(ps, 1, "foreign_cpu_frac"), pct)])
        if any(r.get("server_user_s") is not None for r in runs):
            us = lambda v: "%.2f" % v  # noqa: E731
            table(w, "Server CPU per request (µs): user space and kernel", rows,
                  ["%s user" % a, "%s user" % b, "ratio", "%s system" % a, "%s system" % b,
                   "ratio"],
                  lambda ps, p: per_request(ps, "server_user_s", us)
                  + per_request(ps, "server_sys_s", us))
    rows = pair_rows(runs, "latency", a, b)
    if rows:
        table(w, "Latency (ms), open loop at %s requests/s offered" % "{:,}".format(meta["rate"]),
              rows, ["%s ops/s" % a, "%s ops/s" % b, "%s p50" % a, "%s p50" % b, "%s p99" % a,
                     "%s p99" % b, "%s p99.9" % a, "%s p99.9" % b, "%s CPU s" % a,
                     "%s CPU s" % b],
              lambda ps, p: both(ps, "rps", fmt_num, False) + both(ps, "p50_ms", ms, False)
              + both(ps, "p99_ms", ms, False) + both(ps, "p999_ms", ms, False)
              + both(ps, "server_cpu_s", lambda v: "%.2f" % v, False))
    parallel_table(meta, runs, w)
    if cache_runs:
        cache_table(meta, cache_runs, w)
    w("Scripts (EVALSHA of each, {N} a random integer in [0, N), {c} the connection's index, "
      "{i} its request counter); check = share of replies that were `nonzero` integers "
      "(getincr, lock) or `arrays` (ratelimit):\n")
    for name in meta["workloads"]:
        body = SCRIPTS[name]
        w("- %s (`%s`): `%s`" % (name, " ".join(template(name, meta["keys"])[0]),
                                  " ".join(body.split())))
    errs = sorted({"%s %s P%d: %s" % (r["server"], r["workload"], r["pipeline"], r["error"])
                   for r in runs if "error" in r})
    if errs:
        w("\nFailed runs:\n")
        for e in errs:
            w("- " + e)
    w("")
    return "\n".join(out)


def parallel_table(meta, runs, w):
    pr = [r for r in runs if r["section"] == "parallel"]
    if not pr:
        return
    labels = list(dict.fromkeys(r["server"] for r in pr))
    wider = [x for x in labels if x.startswith("larder-t") and x != "larder-t1"]
    gens = meta.get("parallel_gens", 1)
    w("### Scripts on disjoint keys (%d connections%s, `EVALSHA getincr 1 %s`)\n"
      % (meta["parallel_clients"], " from %d generators" % gens if gens > 1 else "",
         "p<g>:{c}" if gens > 1 else "p:{c}"))
    w("| pipeline | " + " | ".join("%s ops/s | %s ops/CPU-s" % (x, x) for x in labels)
      + "".join(" | %s/larder-t1 ops/s" % x for x in wider) + " |")
    w("|---:|" + "---:|---:|" * len(labels) + "---:|" * len(wider))
    for p in sorted({r["pipeline"] for r in pr}):
        by = {x: {r["round"]: r for r in pr if r["server"] == x and r["pipeline"] == p
                  and "error" not in r} for x in labels}
        cells = []
        for x in labels:
            cells += [cell([r["rps"] for r in by[x].values()]),
                      cell([r["ops_per_server_cpu_s"] for r in by[x].values()])]
        t1 = by.get("larder-t1", {})
        ratios = [ratio_cell([(by[x][k]["rps"], t1[k]["rps"]) for k in t1 if k in by[x]])
                  for x in wider]
        w("| %d | %s |" % (p, " | ".join(cells + ratios)))
    w("")


def cache_table(meta, cache_runs, w):
    w("### Script cache: EVAL of %s distinct scripts (fresh server each)\n"
      % "{:,}".format(meta["cache_scripts"]))
    w("| server | round | used_memory Δ | used_memory_lua Δ | used_memory_scripts Δ | "
      "cached scripts | RSS Δ | seconds |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")

    def delta(r, k):
        x, y = r["info_before"].get(k), r["info_after"].get(k)
        return "–" if x is None or y is None else "{:,}".format(int(y) - int(x))

    for r in cache_runs:
        if "error" in r:
            w("| %s | %d | **%s** | | | | | |" % (r["server"], r["round"],
                                                  r["error"].replace("|", "\\|")))
            continue
        w("| %s | %d | %s | %s | %s | %s | %s | %.2f |" % (
            r["server"], r["round"], delta(r, "used_memory"), delta(r, "used_memory_lua"),
            delta(r, "used_memory_scripts"), r["info_after"].get("number_of_cached_scripts")
            or "–", "{:,}".format(r["rss_delta"]), r["load_s"]))
    w("")


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--sections", default="throughput,latency,parallel,cache",
                    help="comma-separated subset of: throughput, latency, parallel, cache")
    ap.add_argument("--workloads", default="getincr,lock,ratelimit")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 2 rounds, a twentieth of the requests, 1,000 cache scripts")
    ap.add_argument("--rounds", type=int, help="default 3; 2 with --quick")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--parallel-clients", type=int, default=64)
    ap.add_argument("--parallel-threads", default="1,2",
                    help="larder --threads values for the parallel section")
    ap.add_argument("--parallel-gens", type=int, default=1,
                    help="generator processes in the parallel section (bench/gen_fanout.py)")
    ap.add_argument("--keys", type=int, default=10000, help="keys per workload ({K})")
    ap.add_argument("--requests", type=int, help="per run at pipeline 1 (default 200000)")
    ap.add_argument("--requests-pipelined", type=int, help="pipelined runs (default 2000000)")
    ap.add_argument("--rate", type=int, default=20000, help="offered requests/s, latency runs")
    ap.add_argument("--latency-requests", type=int, help="per latency run (default 10 s worth)")
    ap.add_argument("--cache-scripts", type=int, help="distinct EVAL scripts (default 10000)")
    ap.add_argument("--cache-rounds", type=int, default=1)
    ap.add_argument("--settle", type=float, default=1.0, help="seconds idle before a reading")
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--taskset-server", help="CPU list for the servers")
    ap.add_argument("--taskset-client", help="CPU list for the load generator")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    ap.add_argument("--render", metavar="JSON", help="print an earlier run's tables and exit")
    a = ap.parse_args(argv)
    q = a.quick
    a.parallel_threads = [int(x) for x in a.parallel_threads.split(",")]
    a.requests = a.requests or (10000 if q else 200000)
    a.requests_pipelined = a.requests_pipelined or (100000 if q else 2000000)
    a.latency_requests = a.latency_requests or a.rate * (1 if q else 10)
    a.cache_scripts = a.cache_scripts or (1000 if q else 10000)
    a.rounds = a.rounds or (2 if q else 3)
    if q:
        a.settle = min(a.settle, 0.3)
    a.sections = [x for x in a.sections.split(",") if x]
    a.workloads = [x for x in a.workloads.split(",") if x]
    for x in a.sections:
        if x not in ("throughput", "latency", "parallel", "cache"):
            ap.error("unknown section %r" % x)
    for x in a.workloads:
        if x not in SCRIPTS:
            ap.error("unknown workload %r (%s)" % (x, ", ".join(SCRIPTS)))
    a.pipelines = [int(x) for x in a.pipelines.split(",") if x]
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], data["runs"], data["cache_runs"]))
        return 0
    if not shutil.which("redis-server"):
        sys.exit("redis-server not found: apt-get install -y redis-server")
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin, or --only-redis" % a.larder_bin)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-script_compare")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "server_a": "redis-b" if a.only_redis else "larder", "server_b": "redis",
            "rounds": a.rounds, "clients": a.clients, "parallel_clients": a.parallel_clients,
            "parallel_threads": a.parallel_threads, "parallel_gens": a.parallel_gens,
            "requests": a.requests, "requests_pipelined": a.requests_pipelined,
            "rate": a.rate, "latency_requests": a.latency_requests, "keys": a.keys,
            "cache_scripts": a.cache_scripts, "workloads": a.workloads,
            "taskset_server": a.taskset_server,
            "taskset_client": a.taskset_client}
    runs, cache_runs = [], []
    gen = build_tool(SCRIPTGEN_SRC) if set(a.sections) - {"cache"} else None
    sections = [(bool({"throughput", "latency"} & set(a.sections)),
                 lambda: throughput_and_latency(a, meta, runs, base, gen)),
                ("parallel" in a.sections, lambda: parallel(a, meta, runs, base, gen)),
                ("cache" in a.sections, lambda: cache(a, meta, cache_runs, base))]
    for wanted, run in sections:
        if not wanted:
            continue
        try:
            run()
        except (RespError, RuntimeError, OSError) as e:  # one section failing spares the rest
            meta.setdefault("errors", []).append(str(e))
            print("FAILED: %s" % e, file=sys.stderr)
    md = render(meta, runs, cache_runs)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs, "cache_runs": cache_runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    bad = meta.get("errors") or any("error" in r for r in runs + cache_runs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
