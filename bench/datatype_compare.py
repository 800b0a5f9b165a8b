#!/usr/bin/env python3
"""Data-type commands side by side: larder against redis-server on loopback, in one run.

Both servers are started once and prefilled with the same seeded data sets (hashes, integer
sets, small sorted sets, HyperLogLogs, and one big sorted set per --sweep-sizes). Then, round
after round, each cell (workload x pipeline) runs against one server and then the other (which
goes first alternates every round) with `dtgen`, the C load generator in bench/dtgen.c (compiled
with cc on first use): 50 closed-loop connections on one epoll thread, random keys, members and
values drawn afresh for every command. LPUSH + BRPOP runs a producer and a blocked consumer at
the same time and times every item from its push to its pop.

Per run: ops/s, p50/p99/p99.9 latency (exact, over every request), server CPU seconds
(utime+stime from /proc/PID/stat), ops per server CPU-second (the headline: generator and server
share the machine's cores), server RSS, the generator's and other processes' CPU, and a check of
the replies (errors, hits). Tables: median [min-max] over rounds, and the larder/redis ratio per
round. Results: bench/results/*.md, *.json (*.raw: generator output and server logs,
gitignored). Standard library only; helpers come from resp_compare.py and datatype_memory.py.
See bench/README.md.
"""

import argparse
import json
import os
import random
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    run_lines,
    REPO, RESULTS, Resp, RespError, Server, cell, default_larder_bin, fmt_num,
    machine_busy_seconds, machine_line, measured_run, ratio_cell, build_tool, TARGET_NOTE,
    sign_p, target_cell)
from datatype_memory import cmd, pipe_file, protocol_file, short_error  # noqa: E402

DTGEN_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtgen.c")


def build_dtgen():
    """Compile dtgen.c once per source version into the temp dir."""
    return build_tool(DTGEN_SRC)


# ---------------------------------------------------------------- data sets (prefill)
#
# Each is a pure function of (count, seed); the protocol is written once to a cache file and
# streamed unchanged to both servers. Replies must all be integers.


def gen_hashes(n, seed):
    """`h:{i}`, i < n: fields f0..f9, values `v%07d` (8 bytes), as HSET in the workloads."""
    for i in range(n):
        args = [b"HSET", b"h:%d" % i]
        for j in range(10):
            args += [b"f%d" % j, b"v%07d" % ((10 * i + j) % 10 ** 7)]
        yield cmd(*args)


def gen_sets(n, seed):
    """`s:{i}`, i < n: 100 distinct integers from [0, 200) (intset; SADD's range too)."""
    rng = random.Random(seed)
    for i in range(n):
        yield cmd(b"SADD", b"s:%d" % i, *(b"%d" % m for m in rng.sample(range(200), 100)))


def gen_zsets(n, seed):
    """`z:{i}`, i < n: 100 members m0..m99 (listpack), scores uniform in [0, 1e6)."""
    rng = random.Random(seed)
    for i in range(n):
        args = [b"ZADD", b"z:%d" % i]
        for j in range(100):
            args += [b"%.6f" % (rng.random() * 1e6), b"m%d" % j]
        yield cmd(*args)


def gen_hll(n, seed, per_key=10000, batch=1000):
    """`hll:{i}`, i < n: 10k distinct elements each, so every HyperLogLog is dense."""
    for i in range(n):
        for lo in range(0, per_key, batch):
            yield cmd(b"PFADD", b"hll:%d" % i,
                      *(b"e:%d:%d" % (i, j) for j in range(lo, lo + batch)))


def gen_del(key_format):
    """DEL of keys key_format % i, i < n, a thousand a command (the reload of a data set)."""
    def gen(n, _seed, batch=1000):
        for lo in range(0, n, batch):
            yield cmd(b"DEL", *(key_format % i for i in range(lo, min(n, lo + batch))))
    return gen


def gen_big_zset(n, seed, batch=1000):
    """`zs:{n}`: n members m:0..m:{n-1}, scores uniform in [0, 1e6) (skiplist)."""
    rng = random.Random(seed)
    for lo in range(0, n, batch):
        args = [b"ZADD", b"zs:%d" % n]
        for i in range(lo, min(n, lo + batch)):
            args += [b"%.6f" % (rng.random() * 1e6), b"m:%d" % i]
        yield cmd(*args)


# ---------------------------------------------------------------- workloads

TARGETS = {1: 1.0, 16: 1.3}  # issue 10: ops per server CPU-second, larder/redis, by pipeline

# name: (data set it needs, dtgen command template, what the reply check column shows).
# {N} is a random integer in [0, N), {N:W} the same zero-padded, {fN} a random double in [0, N).
# HKEYS, SKEYS and ZKEYS are replaced by the key counts in force.

WORKLOADS = {
    "hset": ("hashes", ["HSET", "h:{HKEYS}", "f{10}", "v{10000000:7}"], "nonzero"),
    "hget": ("hashes", ["HGET", "h:{HKEYS}", "f{10}"], "nonnil"),
    "sadd": ("sets", ["SADD", "s:{SKEYS}", "{200}"], "nonzero"),
    "sismember": ("sets", ["SISMEMBER", "s:{SKEYS}", "{200}"], "nonzero"),
    "zadd": ("zsets", ["ZADD", "z:{ZKEYS}", "{f1000000}", "m{100}"], "nonzero"),
    "zrange": ("zsets", ["ZRANGE", "z:{ZKEYS}", "0", "10"], "arrays"),
    "zrank": ("zsets", ["ZRANK", "z:{ZKEYS}", "m{100}"], "nonnil"),
    "lpush_brpop": (None, None, "arrays"),
    "pfadd": ("hll", ["PFADD", "hll:{100}", "e:{1000000000}"], "nonzero"),
}
SWEEP = {
    "zadd": (["ZADD", "zs:SIZE", "{f1000000}", "m:{SIZE}"], "nonzero"),
    "zrank": (["ZRANK", "zs:SIZE", "m:{SIZE}"], "nonnil"),
}
# what the "check" column counts, per reply counter of dtgen
CHECKS = {"nonzero": "integer replies > 0 (HSET: new fields, SADD: added, SISMEMBER: members, "
          "ZADD: new members, PFADD: registers changed)",
          "nonnil": "non-nil replies (HGET: hits, ZRANK: members found)",
          "arrays": "array replies (ZRANGE; BRPOP: items popped)"}
HLL_KEYS = 100
# Workloads whose writes move their data set away from the state its generator describes:
# SADD fills the sets (an added member makes the next SADD of it a no-op) and PFADD raises the
# registers (past some 100k elements nearly every PFADD changes nothing). Left alone, the
# data set would drift from round to round, so that a later round measured another workload
# than the first and a run's result depended on its number of rounds. The data set is loaded
# again (its keys deleted, then the same prefill) before the next run that uses it.
RESTORE_AFTER = {"sadd", "pfadd"}
# the data sets those workloads write to -> the format of their keys, %d from 0 to the count
KEY_FORMATS = {"sets": b"s:%d", "hll": b"hll:%d"}


def datasets_for(a):
    """name -> (generator, count, keys it creates, (command, key) for OBJECT ENCODING...)."""
    ds = {"hashes": (gen_hashes, a.hash_keys, a.hash_keys, [("HLEN", "h:0")]),
          "sets": (gen_sets, a.set_keys, a.set_keys, [("SCARD", "s:0")]),
          "zsets": (gen_zsets, a.zset_keys, a.zset_keys, [("ZCARD", "z:0")]),
          "hll": (gen_hll, HLL_KEYS, HLL_KEYS, [("PFCOUNT", "hll:0")])}
    for size in a.sweep_sizes:
        ds["zs:%d" % size] = (gen_big_zset, size, 1, [("ZCARD", "zs:%d" % size)])
    return ds


def cells_for(a):
    """Every (row name, data set, kind, template, check, sweep size) in report order."""
    subst = {"HKEYS": a.hash_keys, "SKEYS": a.set_keys, "ZKEYS": a.zset_keys}
    out = []
    for w in a.workloads:
        ds, tmpl, check = WORKLOADS[w]
        if w == "lpush_brpop":
            out.append((w, None, "pushpop", None, check, None))
            continue
        args = []
        for x in tmpl:
            for k, v in subst.items():
                x = x.replace(k, str(v))
            args.append(x)
        out.append((w, ds, "run", args, check, None))
    for w in a.sweep_commands:
        tmpl, check = SWEEP[w]
        for size in a.sweep_sizes:
            out.append(("%s@%s" % (w, size_name(size)), "zs:%d" % size, "run",
                        [x.replace("SIZE", str(size)) for x in tmpl], check, size))
    return out


def size_name(n):
    for div, suf in ((10 ** 6, "M"), (10 ** 3, "k")):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, suf)
    return str(n)


# ---------------------------------------------------------------- prefill


def reload(server, name, datasets, a):
    """Delete data set `name`'s keys and load it again (RESTORE_AFTER)."""
    gen, count, keys, probes = datasets[name]
    path, commands = protocol_file("del-" + name, keys, a.seed, a.tmp_dir,
                                   gen=gen_del(KEY_FORMATS[name]), prefix="dtcmp")
    _, error = pipe_file(server.port, path, commands, a.run_timeout)
    if error:
        raise RespError(error)
    prefill(server, name, gen, count, keys, probes, a)


def prefill(server, name, gen, count, keys, probes, a):
    """Load one data set; returns (seconds, encodings) or raises RespError with the refusal."""
    path, commands = protocol_file(name.replace(":", "-"), count, a.seed, a.tmp_dir, gen=gen,
                                   prefix="dtcmp")
    t, error = pipe_file(server.port, path, commands, a.run_timeout)
    if error:
        raise RespError(error)
    c = Resp(server.port)
    enc = {}
    try:
        for probe, key in probes:
            n = c.call(probe, key)
            if not isinstance(n, int) or n <= 0:
                raise RuntimeError("%s: %s %s after the prefill: %r" % (server.label, probe,
                                                                        key, n))
            try:
                e = c.call("OBJECT", "ENCODING", key)
                enc[key] = e.decode() if isinstance(e, bytes) else str(e)
            except RespError as e:
                server.missing.add("OBJECT ENCODING (%s)" % e)
    finally:
        c.close()
    return t, enc


# ---------------------------------------------------------------- runs


def dtgen_command(dtgen, kind, port, a, pipeline, n, seed, args):
    if kind == "pushpop":
        window = a.window or a.consumers * pipeline
        cmd_ = [dtgen, "pushpop", "127.0.0.1", str(port), str(a.producers), str(a.consumers),
                str(pipeline), str(n), str(window), str(a.item_bytes), str(seed), "bq"]
    else:
        cmd_ = [dtgen, "run", "127.0.0.1", str(port), str(a.clients), str(pipeline), str(n),
                str(seed)] + args
    if a.taskset_client:
        cmd_ = ["taskset", "-c", a.taskset_client] + cmd_
    return cmd_


def check_value(r, check):
    """The share of replies the 'check' column shows (CHECKS), from dtgen's reply counters."""
    n = r["requests"]
    if check == "nonnil":
        return 1 - (r["nil_replies"] + r["errors"]) / n
    if check == "arrays":
        return r["array_replies"] / n
    return r["nonzero_int_replies"] / n


def run_cell(a, s, dtgen, row, ds, kind, args, check, pipeline, rnd, raw, refused):
    n = (a.pushpop_requests if kind == "pushpop" else
         a.requests if pipeline == 1 else a.requests_pipelined)
    r = dict(server=s.label, round=rnd, workload=row, pipeline=pipeline, requests=n,
             command=" ".join(args) if args else
             "LPUSH bq <item> + BRPOP bq 0 (%d producer(s), %d consumer(s))"
             % (a.producers, a.consumers), check=check)
    if ds in refused.get(s.label, {}):
        r["error"] = "refused in the prefill: " + short_error(refused[s.label][ds])
        return r
    if s.proc.poll() is not None:
        r["error"] = "server exited with %s" % s.proc.returncode
        return r
    if kind == "pushpop":
        s.try_call("DEL", "bq")
    cmd_ = dtgen_command(dtgen, kind, s.port, a, pipeline, n, 1000 * rnd + pipeline, args)
    try:
        r.update(measured_run(s, cmd_, raw, json.loads, a.run_timeout))
    except (RuntimeError, ValueError, OSError) as e:
        r["error"] = str(e)
        return r
    r["ops_per_server_cpu_s"] = round(n / r["server_cpu_s"]) if r["server_cpu_s"] else None
    r["client_busy"] = round(r["client_cpu_s"] / r["wall_s"], 3) if r["wall_s"] else None
    r["check_value"] = round(check_value(r, check), 4)
    if r["errors"]:  # a command the server lacks, say: its numbers are not comparable
        r["error"] = "%d error replies of %d, first: %s" % (r["errors"], n, r["first_error"])
    return r


# ---------------------------------------------------------------- report


def render(meta, runs):
    a, b = meta["server_a"], meta["server_b"]
    out = []
    w = out.append
    w("## Data-type commands side by side: %s vs %s\n" % (a, b))
    out.extend(run_lines(meta))
    w("- %d round(s), servers alternate first/second each round; dtgen (bench/dtgen.c): %d "
      "connections on one epoll thread, pipeline as shown, requests per run %s at pipeline 1 "
      "and %s pipelined (LPUSH+BRPOP: %s pops); taskset server=%s client=%s" % (
          meta["rounds"], meta["clients"], "{:,}".format(meta["requests"]),
          "{:,}".format(meta["requests_pipelined"]), "{:,}".format(meta["pushpop_requests"]),
          meta["taskset_server"] or "none", meta["taskset_client"] or "none"))
    w("- data, prefilled once (the same bytes to both servers, seed %d); %s:" % (
        meta["seed"], "after each run of %s its data set is deleted and loaded again before "
        "the next run that uses it (%d reloads)" % (" or ".join(sorted(RESTORE_AFTER)),
                                                     meta["reloads"]))
      if meta.get("reloads") is not None else "written to by the workloads as they run")
    for k, v in meta["datasets"].items():
        w("  - %s: %s" % (k, v))
    for lab, encs in meta.get("encodings", {}).items():
        w("- %s encodings after the prefill: %s" % (lab, ", ".join(
            "%s %s" % kv for kv in sorted(encs.items()))))
    for lab, sec in meta.get("prefill_s", {}).items():
        w("- %s prefill seconds: %s" % (lab, ", ".join("%s %.1f" % kv for kv in sec.items())))
    for err in meta.get("errors", []):
        w("- **ERROR: %s**" % err)
    for lab, refs in meta.get("refused", {}).items():
        for ds, msg in refs.items():
            w("- **%s refused the %s prefill** (its workloads are left out): `%s`"
              % (lab, ds, short_error(msg)))
    for label, cmds in (meta.get("refused_commands") or {}).items():
        w("- %s refused: %s" % (label, "; ".join(cmds)))
    worst = max((r.get("foreign_cpu_frac") or 0 for r in runs), default=0)
    if worst > 0.15 or meta.get("background_cpu_frac", 0) > 0.1:
        w("- **WARNING: the machine was not quiet**: other processes used %.0f%% of a CPU before "
          "the runs and up to %.0f%% during one (column 'other CPU/wall'); treat these numbers "
          "as noisy." % (100 * meta.get("background_cpu_frac", 0), 100 * worst))
    w("- cells: median [min–max] over rounds; ratio = %s/%s, per round, median [min–max]. "
      "Above 1 favours %s for ops/s and ops/CPU-s, below 1 for latency. Compare ops/CPU-s "
      "first: server and generator share the cores, and at pipeline 1 the generator sets the "
      "pace (client CPU/wall). Target (issue 10): ops/CPU-s ratio ≥ 1.3× at pipeline 16, "
      "≥ 1.0× at pipeline 1; %s; and p99 no worse: the rounds where %s's p99 was above %s's, "
      "with the same test's p (a small p: the tail is worse beyond the round-to-round spread). "
      "LPUSH+BRPOP: ops = items popped by the consumer (each one "
      "LPUSH and one BRPOP); latency = from the write of the LPUSH to the BRPOP reply that "
      "carried the item. `zadd@1M` etc.: random ZADD updates / ZRANK lookups in one sorted set "
      "of that many members.\n" % (a, b, a, TARGET_NOTE, a, b))

    rows, order = {}, []
    for r in runs:
        key = (r["workload"], r["pipeline"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key].setdefault(r["round"], {})[r["server"]] = r

    def pairs_of(key):
        return [(rd.get(a), rd.get(b)) for _, rd in sorted(rows[key].items())]

    def ok(r):
        return r if r and "error" not in r else None

    def col(pairs, side, metric):
        return [(ok(x[side]) or {}).get(metric) for x in pairs]

    def both(pairs, metric, fmt=fmt_num, with_ratio=True):
        av, bv = col(pairs, 0, metric), col(pairs, 1, metric)
        cells_ = [cell(av, fmt), cell(bv, fmt)]
        if with_ratio:
            cells_.append(ratio_cell(list(zip(av, bv))))
        return cells_

    def ps_pipeline(pairs):
        return next(r["pipeline"] for pair in pairs for r in pair if r)

    def verdict(pairs, pipeline):
        rs = [x / y for x, y in zip(col(pairs, 0, "ops_per_server_cpu_s"),
                                    col(pairs, 1, "ops_per_server_cpu_s")) if x and y]
        return target_cell(rs, TARGETS.get(pipeline, TARGETS[16]))

    def table(title, cols, fn):
        w("### " + title + "\n")
        w("| workload | pipeline | " + " | ".join(cols) + " |")
        w("|---|---:|" + "---:|" * len(cols))
        for key in order:
            w("| %s | %d | %s |" % (key[0], key[1], " | ".join(fn(pairs_of(key)))))
        w("")

    ms = lambda v: "%.3f" % v if v < 10 else "%.1f" % v  # noqa: E731
    table("Throughput and efficiency",
          ["%s ops/CPU-s" % a, "%s ops/CPU-s" % b, "ratio", "target", "%s ops/s" % a,
           "%s ops/s" % b, "ratio"],
          lambda ps: both(ps, "ops_per_server_cpu_s") + [verdict(ps, ps_pipeline(ps))]
          + both(ps, "rps"))

    def p99_above(pairs):
        """Issue 10's "p99 no worse": the rounds where A's p99 was above B's, and the sign
        test's chance of that many or more if each round were a coin flip (a small p: A's
        tail is worse beyond the round-to-round spread)."""
        above = [x > y for x, y in zip(col(pairs, 0, "p99_ms"), col(pairs, 1, "p99_ms"))
                 if x is not None and y is not None]
        if not above:
            return ["–"]
        k = sum(above)
        return ["%d/%d (p=%.3f)" % (k, len(above), sign_p(k, len(above)))]

    table("Latency (ms)",
          ["%s p50" % a, "%s p50" % b, "%s p99" % a, "%s p99" % b, "p99 ratio",
           "rounds %s p99 above %s" % (a, b), "%s p99.9" % a, "%s p99.9" % b],
          lambda ps: both(ps, "p50_ms", ms, False) + both(ps, "p99_ms", ms) + p99_above(ps)
          + both(ps, "p999_ms", ms, False))
    sweep = [key for key in order if "@" in key[0]]
    if sweep:
        sizes = sorted({r["sweep_size"] for r in runs if r.get("sweep_size")})
        w("### Sorted-set size sweep: ops per server CPU-second (median over rounds)\n")
        w("| command | pipeline | server | " + " | ".join(size_name(z) for z in sizes) + " |")
        w("|---|---:|---|" + "---:|" * len(sizes))
        cmds = []
        for key in sweep:
            c_ = (key[0].split("@")[0], key[1])
            if c_ not in cmds:
                cmds.append(c_)
        for c_, p_ in cmds:
            cols = {z: pairs_of(("%s@%s" % (c_, size_name(z)), p_))
                    if ("%s@%s" % (c_, size_name(z)), p_) in rows else [] for z in sizes}
            for side, lab in ((0, a), (1, b)):
                w("| %s | %d | %s | %s |" % (c_.upper(), p_, lab, " | ".join(
                    cell(col(cols[z], side, "ops_per_server_cpu_s")) for z in sizes)))
            w("| %s | %d | ratio | %s |" % (c_.upper(), p_, " | ".join(ratio_cell(list(zip(
                col(cols[z], 0, "ops_per_server_cpu_s"), col(cols[z], 1,
                                                              "ops_per_server_cpu_s"))))
                for z in sizes)))
        w("")
    mib = lambda v: "%.0f" % (v / 2 ** 20)  # noqa: E731
    pct = lambda v: "%.0f%%" % (100 * v)  # noqa: E731
    table("Resources and reply checks",
          ["%s CPU s" % a, "%s CPU s" % b, "%s RSS MiB" % a, "%s RSS MiB" % b,
           "client CPU/wall %s" % a, "client CPU/wall %s" % b, "check %s" % a, "check %s" % b,
           "other CPU/wall"],
          lambda ps: both(ps, "server_cpu_s", lambda v: "%.2f" % v, False)
          + both(ps, "server_rss_bytes", mib, False)
          + both(ps, "client_busy", pct, False)
          + both(ps, "check_value", pct, False)
          + [cell(col(ps, 0, "foreign_cpu_frac") + col(ps, 1, "foreign_cpu_frac"), pct)])
    w("Commands (placeholders drawn per command: {N} integer in [0, N), {N:W} zero-padded, "
      "{fN} double in [0, N)); the check column is the share of replies that were:\n")
    seen = set()
    for r in runs:
        if r["workload"] not in seen:
            seen.add(r["workload"])
            w("- %s: `%s`; check `%s`" % (r["workload"], r["command"], r["check"]))
    for k, v in CHECKS.items():
        w("- check `%s`: %s" % (k, v))
    errs = sorted({"%s %s P%d: %s" % (r["server"], r["workload"], r["pipeline"], r["error"])
                   for r in runs if "error" in r and not r["error"].startswith("refused in")})
    if errs:
        w("\nFailed or refused runs:\n")
        for e in errs:
            w("- " + e)
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags, one shell string")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--rounds", type=int, help="default 3 (2 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 2 rounds, a tenth of the keys, a twentieth of the requests,"
                    " sweep sizes 1k,10k,100k (each unless given)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated subset of: " + ", ".join(WORKLOADS))
    ap.add_argument("--sweep-commands", default=",".join(SWEEP),
                    help="sorted-set size sweep commands (zadd, zrank; empty for none)")
    ap.add_argument("--sweep-sizes", default="10000,100000,1000000",
                    help="members of each swept sorted set")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, help="per run at pipeline 1 (default 200000)")
    ap.add_argument("--requests-pipelined", type=int,
                    help="per run at pipeline > 1 (default 2000000)")
    ap.add_argument("--pushpop-requests", type=int,
                    help="items popped per LPUSH+BRPOP run (default 200000)")
    ap.add_argument("--producers", type=int, default=1)
    ap.add_argument("--consumers", type=int, default=1)
    ap.add_argument("--window", type=int, default=0,
                    help="most items pushed and not yet popped (default consumers x pipeline)")
    ap.add_argument("--item-bytes", type=int, default=32)
    ap.add_argument("--hash-keys", type=int, help="hashes of 10 fields (default 100000)")
    ap.add_argument("--set-keys", type=int, help="sets of 100 integers (default 100000)")
    ap.add_argument("--zset-keys", type=int, help="sorted sets of 100 members (default 10000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run-timeout", type=float, default=300,
                    help="seconds before one generator run (or one prefill) counts as stalled")
    ap.add_argument("--taskset-server", help="CPU list for the servers, e.g. 1")
    ap.add_argument("--taskset-client", help="CPU list for the load generator, e.g. 0")
    ap.add_argument("--tmp-dir", default=os.path.join(tempfile.gettempdir(), "larder-bench"),
                    help="where the generated prefill protocol files are cached")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="", help="suffix for the result file names")
    ap.add_argument("--render", metavar="JSON",
                    help="print the tables of an earlier run's JSON and exit")
    a = ap.parse_args(argv)
    q = a.quick
    a.requests = a.requests or (10000 if q else 200000)
    a.requests_pipelined = a.requests_pipelined or (100000 if q else 2000000)
    a.pushpop_requests = a.pushpop_requests or (10000 if q else 200000)
    a.hash_keys = a.hash_keys or (10000 if q else 100000)
    a.set_keys = a.set_keys or (10000 if q else 100000)
    a.zset_keys = a.zset_keys or (1000 if q else 10000)
    a.rounds = a.rounds or (2 if q else 3)
    if q:
        if a.sweep_sizes == "10000,100000,1000000":
            a.sweep_sizes = "1000,10000,100000"
    a.workloads = [x for x in a.workloads.split(",") if x]
    for x in a.workloads:
        if x not in WORKLOADS:
            ap.error("unknown workload %r (%s)" % (x, ", ".join(WORKLOADS)))
    a.sweep_commands = [x for x in a.sweep_commands.split(",") if x]
    for x in a.sweep_commands:
        if x not in SWEEP:
            ap.error("unknown sweep command %r (%s)" % (x, ", ".join(SWEEP)))
    a.sweep_sizes = [int(x) for x in a.sweep_sizes.split(",") if x] if a.sweep_commands else []
    a.pipelines = [int(x) for x in a.pipelines.split(",") if x]
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], data["runs"]))
        return 0
    if not shutil.which("redis-server"):
        sys.exit("redis-server not found: apt-get install -y redis-server")
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin, or --only-redis" % a.larder_bin)
    dtgen = build_dtgen()
    os.makedirs(a.out_dir, exist_ok=True)
    os.makedirs(a.tmp_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-datatype_compare")
    raw = open(base + ".raw", "w")
    log = base + "-servers.log.raw"
    if a.only_redis:
        A = Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
    else:
        A = Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                          a.taskset_server)
    B = Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)
    servers = [A, B]
    runs, refused = [], {}
    datasets = datasets_for(a)
    cells = cells_for(a)
    needed = {c[1] for c in cells if c[1]}
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "server_a": A.label, "server_b": B.label, "rounds": a.rounds,
            "clients": a.clients, "requests": a.requests,
            "requests_pipelined": a.requests_pipelined,
            "pushpop_requests": a.pushpop_requests, "producers": a.producers,
            "consumers": a.consumers, "window": a.window, "item_bytes": a.item_bytes,
            "seed": a.seed, "taskset_server": a.taskset_server,
            "taskset_client": a.taskset_client,
            "datasets": {name: "%s × %s" % ("{:,}".format(d[1]),
                                            (d[0].__doc__ or "").strip().rstrip("."))
                         for name, d in datasets.items() if name in needed},
            "encodings": {}, "prefill_s": {}}
    try:
        for s in servers:
            s.start()
        meta["servers"] = [{"label": s.label, "argv": shlex.join(s.argv),
                            "version": s.version(), "threads": s.threads(),
                            "idle_cpu_fraction": round(s.idle_cpu_fraction(), 4)}
                           for s in servers]
        b0, t0 = machine_busy_seconds(), time.perf_counter()
        time.sleep(1.0)
        meta["background_cpu_frac"] = round(
            (machine_busy_seconds() - b0) / (time.perf_counter() - t0), 3)
        print("# %s; background CPU %.0f%% of one CPU" % (
            meta["machine"], 100 * meta["background_cpu_frac"]), file=sys.stderr)
        if meta["background_cpu_frac"] > 0.1:
            print("WARNING: the machine is busy; results will be noisy", file=sys.stderr)
        for s in servers:
            s.try_call("FLUSHALL")
            for name, (gen, count, _keys, probes) in datasets.items():
                if name not in needed:
                    continue
                try:
                    t, enc = prefill(s, name, gen, count, _keys, probes, a)
                except RespError as e:
                    refused.setdefault(s.label, {})[name] = str(e)
                    print("prefill %s %s: REFUSED %s" % (s.label, name, e), file=sys.stderr)
                    continue
                except (RuntimeError, OSError) as e:
                    refused.setdefault(s.label, {})[name] = "failed: %s" % e
                    meta.setdefault("errors", []).append("%s prefill %s: %s" % (s.label, name, e))
                    print("prefill %s %s: FAILED %s" % (s.label, name, e), file=sys.stderr)
                    continue
                meta["encodings"].setdefault(s.label, {}).update(enc)
                meta["prefill_s"].setdefault(s.label, {})[name] = round(t, 2)
                print("prefill %s %s: %s in %.1fs %s" % (s.label, name, "{:,}".format(count),
                                                         t, enc), file=sys.stderr)
        changed = set()  # (server, data set) a RESTORE_AFTER workload wrote to
        meta["reloads"] = 0
        for rnd in range(a.rounds):
            order = servers if rnd % 2 == 0 else servers[::-1]
            for row, ds, kind, args, check, size in cells:
                for pipeline in a.pipelines:
                    for s in order:
                        if (s.label, ds) in changed:
                            changed.discard((s.label, ds))
                            try:
                                reload(s, ds, datasets, a)
                                meta["reloads"] += 1
                            except (RespError, RuntimeError, OSError) as e:
                                refused.setdefault(s.label, {})[ds] = "reload failed: %s" % e
                        r = run_cell(a, s, dtgen, row, ds, kind, args, check, pipeline, rnd, raw,
                                     refused)
                        if row in RESTORE_AFTER:
                            changed.add((s.label, ds))
                        r["sweep_size"] = size
                        runs.append(r)
                        print("round %d %-7s %-13s P%-2d %s" % (
                            rnd, s.label, row, pipeline,
                            "%.0f ops/s %.0f ops/CPU-s p99 %.3f ms check %.2f" % (
                                r["rps"], r["ops_per_server_cpu_s"] or 0, r["p99_ms"],
                                r["check_value"])
                            if "error" not in r else "FAILED: " + r["error"][:200]),
                            file=sys.stderr)
    finally:
        rcs = {s.label: s.stop() for s in servers}
        raw.close()
    meta["server_exit_codes"] = rcs
    meta["refused"] = refused
    meta["refused_commands"] = {s.label: sorted(s.missing) for s in servers if s.missing}
    md = render(meta, runs)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json,raw}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    bad = meta.get("errors") or refused or any("error" in r for r in runs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
