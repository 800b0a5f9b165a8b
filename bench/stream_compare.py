#!/usr/bin/env python3
"""Streams side by side: larder against redis-server on loopback, in one run (issue 13).

Section `throughput`: both servers are started once and prefilled with the same seeded streams;
then, round after round, each cell (workload x pipeline) runs against one server and then the
other (which goes first alternates every round) with `dtgen` (bench/dtgen.c, compiled with cc on
first use, as in datatype_compare.py):

  xadd          XADD a:{K} * f1 <8B> f2 <8B> f3 <8B>, into K empty streams (deleted before
                each run)
  xadd_maxlen   XADD t:{K} MAXLEN ~ 1000 * f1 <8B> f2 <8B> f3 <8B>, into K streams prefilled
                with 1000 entries, so every run trims
  xrange        XRANGE x:{K} <random start> + COUNT 10, K prefilled streams of 1000 entries
                with IDs 1-0..1000-0; the start is drawn from [0, 990), so 10 entries always
  xreadgroup@C  C consumers (1, 10, 100 connections) of group g on the prefilled stream q, each
                in a loop XREADGROUP GROUP g c<i> COUNT <pipeline> STREAMS q > and then XACK q g
                <the IDs received>: "pipeline 16" is COUNT 16, one XREADGROUP of 16 entries and
                one XACK of 16 IDs per cycle. The group is created at 0 before every run; ops =
                entries acked.

Section `memory`: bytes per entry, each shape on a fresh server alone: 1M entries of 3 fields
(names f1 f2 f3 shared by every entry, 8-byte values `v%07d`) into one stream, and into 1000
streams of 1000; RSS delta, INFO used_memory delta and the sum of MEMORY USAGE (SAMPLES 0).

Per throughput run: ops/s, p50/p99/p99.9 latency (exact, over every request; xreadgroup: per
cycle, from the XREADGROUP write to the XACK reply), server CPU seconds (utime+stime from
/proc/PID/stat), ops per server CPU-second (the headline), server RSS, the generator's and other
processes' CPU, and a reply check. Tables: median [min-max] over rounds, and the larder/redis
ratio per round against the issue's targets. Results: bench/results/*.md, *.json (*.raw:
generator output and server logs, gitignored). Standard library only. See bench/README.md.

The queue's end-to-end put->get latency is measured by bench/queue_latency.py.
"""

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    REPO, RESULTS, Resp, RespError, Server, TARGET_NOTE, cell, default_larder_bin, fmt_num,
    machine_busy_seconds, machine_line, measured_run, ratio_cell, run_lines, target_cell)
from datatype_compare import build_dtgen  # noqa: E402
from datatype_memory import cmd, pipe_file, protocol_file, short_error  # noqa: E402

STREAM_LEN = 1000  # entries per prefilled stream of the xrange and xadd_maxlen data sets
CONSUMERS = (1, 10, 100)
TARGETS = {1: 1.0, 16: 1.3}  # ops per server CPU-second, larder/redis, by pipeline


# ---------------------------------------------------------------- data (prefill)


def entry_fields(i):
    """The 3 fields of entry number i: names f1 f2 f3, 8-byte values that are not integers."""
    out = []
    for k in range(3):
        out += [b"f%d" % (k + 1), b"v%07d" % ((3 * i + k) % 10 ** 7)]
    return out


def gen_streams(prefix, streams, per):
    """`prefix:{s}`, s < streams, each `per` entries with explicit IDs 1-0..per-0, filled one
    stream after the other; one stream is named `prefix` alone."""
    def gen(_n, _seed):
        for s in range(streams):
            key = prefix if streams == 1 else b"%s:%d" % (prefix, s)
            for j in range(per):
                yield cmd(b"XADD", key, b"%d" % (j + 1), *entry_fields(s * per + j))
    gen.tag = "%s-%dx%d" % (prefix.decode(), streams, per)  # the cache file's name
    gen.__doc__ = "%s stream(s) `%s%s` × %s entries, IDs 1-0..%d-0, fields f1 f2 f3 = 8-byte " \
        "`v%%07d` values" % ("{:,}".format(streams), prefix.decode(),
                             "" if streams == 1 else ":{i}", "{:,}".format(per), per)
    return gen


def load(server, name, gen, a):
    """Load one data set; returns seconds, or raises RespError with the server's refusal."""
    path, commands = protocol_file(name, 0, a.seed, a.tmp_dir, gen=gen, prefix="stcmp")
    t, error = pipe_file(server.port, path, commands, a.run_timeout)
    if error:
        raise RespError(error)
    return t


def check_stream(c, key, per, first):
    """XLEN key == per, and entry 500 (or the last) holds entry number first+499's fields."""
    n = c.call("XLEN", key)
    if n != per:
        raise RuntimeError("XLEN %s: %r, expected %d" % (key, n, per))
    j = min(500, per)
    got = c.call("XRANGE", key, b"%d" % j, b"%d" % j)
    want = [[b"%d-0" % j, entry_fields(first + j - 1)]]
    if got != want:
        raise RuntimeError("XRANGE %s %d %d: %r, expected %r" % (key, j, j, got, want))


# ---------------------------------------------------------------- throughput


def cells_for(a):
    """Every (row, data set, template or consumer count, check) in report order."""
    vals = ["f1", "v{10000000:7}", "f2", "v{10000000:7}", "f3", "v{10000000:7}"]
    out = []
    for w in a.workloads:
        if w == "xadd":
            out.append((w, None, ["XADD", "a:{%d}" % a.keys, "*"] + vals, "nonnil"))
        elif w == "xadd_maxlen":
            out.append((w, "t", ["XADD", "t:{%d}" % a.keys, "MAXLEN", "~", "1000", "*"] + vals,
                        "nonnil"))
        elif w == "xrange":
            out.append((w, "x", ["XRANGE", "x:{%d}" % a.keys, "{%d}" % (STREAM_LEN - 10), "+",
                                 "COUNT", "10"], "arrays"))
        else:
            for n in a.consumers:
                out.append(("xreadgroup@%d" % n, "q", n, "acked"))
    return out


def datasets_for(a):
    q = a.requests_pipelined + 2 * max(a.consumers or [1]) * max(a.pipelines)
    return {"x": gen_streams(b"x", a.keys, STREAM_LEN), "t": gen_streams(b"t", a.keys, STREAM_LEN),
            "q": gen_streams(b"q", 1, q)}


def check_value(r, check):
    n = r["requests"]
    if check == "nonnil":
        return 1 - (r["nil_replies"] + r["errors"]) / n
    if check == "arrays":
        return r["array_replies"] / n
    return r["acked"] / r["delivered"] if r.get("delivered") else 0


def run_cell(a, s, dtgen, row, ds, spec, check, pipeline, rnd, raw, refused):
    n = a.requests if pipeline == 1 else a.requests_pipelined
    group = isinstance(spec, int)
    r = dict(server=s.label, round=rnd, workload=row, pipeline=pipeline, check=check,
             command=" ".join(spec) if not group else
             "%d consumer(s): XREADGROUP GROUP g c<i> COUNT <pipeline> STREAMS q >, then XACK "
             "q g <IDs>" % spec)
    if ds in refused.get(s.label, {}):
        r["error"] = "refused in the prefill: " + short_error(refused[s.label][ds])
        return r
    if s.proc.poll() is not None:
        r["error"] = "server exited with %s" % s.proc.returncode
        return r
    seed = 1000 * rnd + pipeline
    try:
        if row == "xadd":
            s.call("DEL", *("a:%d" % i for i in range(a.keys)))
        if group:
            s.call("XGROUP", "DESTROY", "q", "g")
            s.call("XGROUP", "CREATE", "q", "g", "0")
            argv = [dtgen, "group", "127.0.0.1", str(s.port), str(spec), str(pipeline), str(n),
                    str(seed), "q", "g"]
        else:
            argv = [dtgen, "run", "127.0.0.1", str(s.port), str(a.clients), str(pipeline),
                    str(n), str(seed)] + spec
        if a.taskset_client:
            argv = ["taskset", "-c", a.taskset_client] + argv
        r.update(measured_run(s, argv, raw, json.loads, a.run_timeout))
    except (RuntimeError, ValueError, OSError) as e:
        r["error"] = str(e)
        return r
    n = r["requests"]  # xreadgroup: the entries acked, a few more than asked for
    r["ops_per_server_cpu_s"] = round(n / r["server_cpu_s"]) if r["server_cpu_s"] else None
    r["client_busy"] = round(r["client_cpu_s"] / r["wall_s"], 3) if r["wall_s"] else None
    r["check_value"] = round(check_value(r, check), 4) if n else 0
    if r["errors"]:
        r["error"] = "%d error replies, first: %s" % (r["errors"], r["first_error"])
    elif group and (r["empty_reads"] or r["acked"] < r["delivered"]):
        r["error"] = "the stream ran dry or entries went unacked: %d empty reads, %d of %d " \
            "acked" % (r["empty_reads"], r["acked"], r["delivered"])
    return r


def throughput(a, meta, runs, out_base):
    dtgen = build_dtgen()
    raw = open(out_base + ".raw", "w")
    log = out_base + "-servers.log.raw"
    A = (Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
         if a.only_redis else Server.larder(a.larder_bin, "larder", log,
                                            shlex.split(a.larder_args), a.taskset_server))
    B = Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)
    servers, refused = [A, B], {}
    datasets = datasets_for(a)
    cells = cells_for(a)
    needed = {c[1] for c in cells if c[1]}
    meta["datasets"] = {k: (g.__doc__ or "").strip() for k, g in datasets.items() if k in needed}
    meta["prefill_s"] = {}
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
            for name in sorted(needed):
                gen = datasets[name]
                try:
                    t = load(s, gen.tag, gen, a)
                    c = Resp(s.port)
                    try:
                        if name == "q":
                            c.call("XLEN", "q")
                        else:
                            check_stream(c, "%s:%d" % (name, a.keys - 1), STREAM_LEN,
                                         (a.keys - 1) * STREAM_LEN)
                        enc = c.call("OBJECT", "ENCODING", "%s:0" % name if name != "q" else "q")
                        meta.setdefault("encodings", {}).setdefault(s.label, {})[name] = \
                            enc.decode() if isinstance(enc, bytes) else str(enc)
                    finally:
                        c.close()
                except RespError as e:
                    refused.setdefault(s.label, {})[name] = str(e)
                    print("prefill %s %s: REFUSED %s" % (s.label, name, e), file=sys.stderr)
                    continue
                except (RuntimeError, OSError) as e:
                    refused.setdefault(s.label, {})[name] = "failed: %s" % e
                    meta.setdefault("errors", []).append("%s prefill %s: %s" % (s.label, name, e))
                    print("prefill %s %s: FAILED %s" % (s.label, name, e), file=sys.stderr)
                    continue
                meta["prefill_s"].setdefault(s.label, {})[name] = round(t, 2)
                print("prefill %s %s in %.1fs" % (s.label, name, t), file=sys.stderr)
        for rnd in range(a.rounds):
            order = servers if rnd % 2 == 0 else servers[::-1]
            for row, ds, spec, check in cells:
                for pipeline in a.pipelines:
                    for s in order:
                        r = run_cell(a, s, dtgen, row, ds, spec, check, pipeline, rnd, raw,
                                     refused)
                        runs.append(r)
                        print("round %d %-7s %-14s P%-2d %s" % (
                            rnd, s.label, row, pipeline,
                            "%.0f ops/s %.0f ops/CPU-s p99 %.3f ms check %.2f" % (
                                r["rps"], r["ops_per_server_cpu_s"] or 0, r["p99_ms"],
                                r["check_value"])
                            if "error" not in r else "FAILED: " + r["error"][:200]),
                            file=sys.stderr)
    finally:
        meta["server_exit_codes"] = {s.label: s.stop() for s in servers}
        raw.close()
    meta["refused"] = refused
    meta["refused_commands"] = {s.label: sorted(s.missing) for s in servers if s.missing}


# ---------------------------------------------------------------- memory (bytes per entry)


def memory_shapes(a):
    """name -> (generator, streams, entries per stream)."""
    n = a.memory_entries
    per = min(n, 1000)
    return {"one stream": (gen_streams(b"m", 1, n), 1, n),
            "%d streams" % (n // per): (gen_streams(b"m", n // per, per), n // per, per)}


def memory_usage(server, keys):
    """The sum of MEMORY USAGE key SAMPLES 0 over keys; None where the server refuses it."""
    c = Resp(server.port, timeout=60)
    try:
        total = 0
        for k in keys:
            total += c.call("MEMORY", "USAGE", k, "SAMPLES", "0")
        return total
    except RespError as e:
        server.missing.add("MEMORY USAGE (%s)" % e)
        return None
    finally:
        c.close()


def measure_memory(server, shape, gen, streams, per, a):
    r = {"server": server.label, "shape": shape, "streams": streams, "entries": streams * per}
    server.start()
    try:
        r["version"], r["argv"] = server.version(), shlex.join(server.argv)
        time.sleep(a.settle)
        rss0 = server.rss_bytes()
        used0 = server.info("memory").get("used_memory")
        r["load_s"] = round(load(server, gen.tag, gen, a), 3)
        time.sleep(a.settle)
        rss1 = server.rss_bytes()
        used1 = server.info("memory").get("used_memory")
        keys = [b"m"] if streams == 1 else [b"m:%d" % i for i in range(streams)]
        c = Resp(server.port, timeout=60)
        try:
            for i in sorted({0, streams - 1} | set(random.Random(7).sample(range(streams),
                                                                          min(streams, 20)))):
                check_stream(c, keys[i], per, i * per)
            enc = c.call("OBJECT", "ENCODING", keys[0])
            r["encoding"] = enc.decode() if isinstance(enc, bytes) else str(enc)
        finally:
            c.close()
        mu = memory_usage(server, keys)
        e = r["entries"]
        r.update(rss_per_entry=(rss1 - rss0) / e,
                 used_per_entry=(int(used1) - int(used0)) / e if used0 and used1 else None,
                 memory_usage_per_entry=mu / e if mu is not None else None)
    except RespError as e:
        r["error"] = "refused: " + short_error(str(e))
    except (RuntimeError, OSError) as e:
        r["error"] = str(e)
    finally:
        r["exit_code"] = server.stop()
    return r


def memory(a, meta, mem_runs, out_base):
    log = out_base + "-memory-servers.log.raw"
    shapes = memory_shapes(a)
    meta["memory_shapes"] = {k: (v[0].__doc__ or "").strip() for k, v in shapes.items()}
    for shape, (gen, streams, per) in shapes.items():
        for rnd in range(a.memory_rounds):
            makers = ["a", "b"] if rnd % 2 == 0 else ["b", "a"]
            for m in makers:
                if m == "b":
                    s = Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)
                elif a.only_redis:
                    s = Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
                else:
                    s = Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                                      a.taskset_server)
                r = measure_memory(s, shape, gen, streams, per, a)
                r["round"] = rnd
                mem_runs.append(r)
                print("memory %-12s round %d %-7s %s" % (
                    shape, rnd, r["server"], "FAILED: " + r["error"] if "error" in r else
                    "rss %.1f B/entry, used_memory %s, MEMORY USAGE %s" % (
                        r["rss_per_entry"], fmt_b(r["used_per_entry"]),
                        fmt_b(r["memory_usage_per_entry"]))), file=sys.stderr)


def fmt_b(v):
    return "–" if v is None else "%.1f" % v


# ---------------------------------------------------------------- report


def render(meta, runs, mem_runs):
    a, b = meta["server_a"], meta["server_b"]
    out = []
    w = out.append
    w("## Streams side by side: %s vs %s\n" % (a, b))
    if meta.get("servers"):
        out.extend(run_lines(meta))
    else:
        w("- date: %s; machine: %s" % (meta["date"], meta["machine"]))
        w("- command: `%s`" % meta["command"])
    for err in meta.get("errors", []):
        w("- **ERROR: %s**" % err)
    for lab, refs in (meta.get("refused") or {}).items():
        for ds, msg in refs.items():
            w("- **%s refused the %s prefill** (its workloads are left out): `%s`"
              % (lab, ds, short_error(msg)))
    for label, cmds in (meta.get("refused_commands") or {}).items():
        w("- %s refused: %s" % (label, "; ".join(cmds)))
    if runs:
        throughput_tables(meta, runs, w)
    if mem_runs:
        memory_table(meta, mem_runs, w)
    return "\n".join(out)


def throughput_tables(meta, runs, w):
    a, b = meta["server_a"], meta["server_b"]
    w("- %d round(s), servers alternate first/second each round; dtgen (bench/dtgen.c): %d "
      "connections on one epoll thread for xadd/xrange (xreadgroup: the consumers shown), "
      "requests per run %s at pipeline 1 and %s pipelined; taskset server=%s client=%s" % (
          meta["rounds"], meta["clients"], "{:,}".format(meta["requests"]),
          "{:,}".format(meta["requests_pipelined"]), meta["taskset_server"] or "none",
          meta["taskset_client"] or "none"))
    w("- data, prefilled once (the same bytes to both servers):")
    for k, v in meta.get("datasets", {}).items():
        w("  - %s: %s" % (k, v))
    for lab, encs in meta.get("encodings", {}).items():
        w("- %s encodings after the prefill: %s" % (lab, ", ".join(
            "%s %s" % kv for kv in sorted(encs.items()))))
    for lab, sec in meta.get("prefill_s", {}).items():
        w("- %s prefill seconds: %s" % (lab, ", ".join("%s %.1f" % kv for kv in sec.items())))
    worst = max((r.get("foreign_cpu_frac") or 0 for r in runs), default=0)
    if worst > 0.15 or meta.get("background_cpu_frac", 0) > 0.1:
        w("- **WARNING: the machine was not quiet**: other processes used %.0f%% of a CPU before "
          "the runs and up to %.0f%% during one (column 'other CPU/wall'); treat these numbers "
          "as noisy." % (100 * meta.get("background_cpu_frac", 0), 100 * worst))
    w("- cells: median [min–max] over rounds; ratio = %s/%s, per round, median [min–max]; "
      "target: ops/CPU-s ratio ≥ 1.3× at pipeline 16, ≥ 1.0× at pipeline 1; %s. "
      "xreadgroup@C: C consumers, \"pipeline\" = COUNT (entries per XREADGROUP, IDs per "
      "XACK), ops = entries acked, latency = one XREADGROUP + XACK cycle.\n"
      % (a, b, TARGET_NOTE))

    rows, order = {}, []
    for r in runs:
        key = (r["workload"], r["pipeline"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key].setdefault(r["round"], {})[r["server"]] = r

    def col(pairs, side, metric):
        return [(x[side] if x[side] and "error" not in x[side] else {}).get(metric)
                for x in pairs]

    def both(pairs, metric, fmt=fmt_num, with_ratio=True):
        av, bv = col(pairs, 0, metric), col(pairs, 1, metric)
        return [cell(av, fmt), cell(bv, fmt)] + ([ratio_cell(list(zip(av, bv)))]
                                                 if with_ratio else [])

    def verdict(pairs, pipeline):
        rs = [x / y for x, y in zip(col(pairs, 0, "ops_per_server_cpu_s"),
                                    col(pairs, 1, "ops_per_server_cpu_s")) if x and y]
        return target_cell(rs, TARGETS.get(pipeline, TARGETS[16]))

    def table(title, cols, fn):
        w("### " + title + "\n")
        w("| workload | pipeline | " + " | ".join(cols) + " |")
        w("|---|---:|" + "---:|" * len(cols))
        for key in order:
            ps = [(rd.get(a), rd.get(b)) for _, rd in sorted(rows[key].items())]
            w("| %s | %d | %s |" % (key[0], key[1], " | ".join(fn(ps, key[1]))))
        w("")

    ms = lambda v: "%.3f" % v if v < 10 else "%.1f" % v  # noqa: E731
    table("Throughput and efficiency",
          ["%s ops/CPU-s" % a, "%s ops/CPU-s" % b, "ratio", "target", "%s ops/s" % a,
           "%s ops/s" % b, "ratio"],
          lambda ps, p: both(ps, "ops_per_server_cpu_s") + [verdict(ps, p)] + both(ps, "rps"))
    table("Latency (ms)",
          ["%s p50" % a, "%s p50" % b, "%s p99" % a, "%s p99" % b, "p99 ratio",
           "%s p99.9" % a, "%s p99.9" % b],
          lambda ps, p: both(ps, "p50_ms", ms, False) + both(ps, "p99_ms", ms)
          + both(ps, "p999_ms", ms, False))
    mib = lambda v: "%.0f" % (v / 2 ** 20)  # noqa: E731
    pct = lambda v: "%.0f%%" % (100 * v)  # noqa: E731
    table("Resources and reply checks",
          ["%s CPU s" % a, "%s CPU s" % b, "%s RSS MiB" % a, "%s RSS MiB" % b,
           "client CPU/wall %s" % a, "client CPU/wall %s" % b, "check %s" % a, "check %s" % b,
           "other CPU/wall"],
          lambda ps, p: both(ps, "server_cpu_s", lambda v: "%.2f" % v, False)
          + both(ps, "server_rss_bytes", mib, False)
          + both(ps, "client_busy", pct, False)
          + both(ps, "check_value", pct, False)
          + [cell(col(ps, 0, "foreign_cpu_frac") + col(ps, 1, "foreign_cpu_frac"), pct)])
    w("Commands ({N} a random integer in [0, N), {N:W} the same zero-padded to W digits, drawn "
      "per command); check = share of replies that were: `nonnil` an ID (XADD), `arrays` an "
      "array (XRANGE), `acked` entries acked of entries delivered (XREADGROUP + XACK):\n")
    seen = set()
    for r in runs:
        if r["workload"] not in seen:
            seen.add(r["workload"])
            w("- %s: `%s`; check `%s`" % (r["workload"], r["command"], r["check"]))
    errs = sorted({"%s %s P%d: %s" % (r["server"], r["workload"], r["pipeline"], r["error"])
                   for r in runs if "error" in r and not r["error"].startswith("refused in")})
    if errs:
        w("\nFailed runs:\n")
        for e in errs:
            w("- " + e)
    w("")


def memory_table(meta, mem_runs, w):
    a, b = meta["server_a"], meta["server_b"]
    w("### Bytes per entry (each shape on a fresh server, alone)\n")
    w("- %d round(s), medians [min–max]; readings after %.1f s idle. RSS = VmRSS delta over the "
      "load; used = INFO used_memory delta; MEMORY USAGE = the sum over the keys of `MEMORY "
      "USAGE key SAMPLES 0`. Ratio = %s/%s of RSS bytes per entry, per round; target ≤ 1.0×."
      % (meta["memory_rounds"], meta["settle"], a, b))
    for k, v in meta["memory_shapes"].items():
        w("- %s: %s" % (k, v))
    w("")
    w("| shape | entries | %s enc | %s enc | %s RSS B/entry | %s RSS B/entry | ratio | target | "
      "%s used B/entry | %s used B/entry | %s MEMORY USAGE B/entry | %s MEMORY USAGE B/entry |"
      % (a, b, a, b, a, b, a, b))
    w("|---|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
    f1 = lambda v: "%.1f" % v  # noqa: E731
    for shape in meta["memory_shapes"]:
        rs = {lab: [r for r in mem_runs if r["shape"] == shape and r["server"] == lab
                    and "error" not in r] for lab in (a, b)}
        rounds = sorted({r["round"] for r in mem_runs if r["shape"] == shape})
        pairs = [(next((r["rss_per_entry"] for r in rs[a] if r["round"] == k), None),
                  next((r["rss_per_entry"] for r in rs[b] if r["round"] == k), None))
                 for k in rounds]
        ratios = [x / y for x, y in pairs if x is not None and y]
        ok = "–" if not ratios else ("≤ 1.0× ✓" if statistics.median(ratios) <= 1.0
                                     else "≤ 1.0× **✗**")
        enc = {lab: "/".join(sorted({str(r.get("encoding")) for r in rs[lab]})) or "–"
               for lab in (a, b)}
        n = next((r["entries"] for r in mem_runs if r["shape"] == shape), 0)
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            shape, "{:,}".format(n), enc[a], enc[b],
            cell([r["rss_per_entry"] for r in rs[a]], f1),
            cell([r["rss_per_entry"] for r in rs[b]], f1), ratio_cell(pairs), ok,
            cell([r["used_per_entry"] for r in rs[a]], f1),
            cell([r["used_per_entry"] for r in rs[b]], f1),
            cell([r["memory_usage_per_entry"] for r in rs[a]], f1),
            cell([r["memory_usage_per_entry"] for r in rs[b]], f1)))
        for r in mem_runs:
            if r["shape"] == shape and "error" in r:
                w("|   ↳ **%s: %s** | | | | | | | | | | | |"
                  % (r["server"], r["error"].replace("|", "\\|")))
    w("")


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags, one shell string")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--sections", default="throughput,memory",
                    help="comma-separated subset of: throughput, memory")
    ap.add_argument("--rounds", type=int, help="throughput rounds (default 3; 2 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 2 rounds, a tenth of the keys and memory entries, a "
                    "twentieth of the requests (each unless given)")
    ap.add_argument("--workloads", default="xadd,xadd_maxlen,xrange,xreadgroup",
                    help="comma-separated subset of: xadd, xadd_maxlen, xrange, xreadgroup")
    ap.add_argument("--consumers", default=",".join(map(str, CONSUMERS)),
                    help="xreadgroup consumer counts")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--clients", type=int, default=50, help="connections for xadd and xrange")
    ap.add_argument("--keys", type=int,
                    help="streams per xadd/xrange data set (default 1000; 100 with --quick)")
    ap.add_argument("--requests", type=int, help="per run at pipeline 1 (default 200000)")
    ap.add_argument("--requests-pipelined", type=int,
                    help="per run at pipeline > 1 (default 2000000)")
    ap.add_argument("--memory-entries", type=int,
                    help="entries in the bytes-per-entry shapes (default 1000000)")
    ap.add_argument("--memory-rounds", type=int, default=1)
    ap.add_argument("--settle", type=float, default=1.0, help="seconds idle before a reading")
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
    a.keys = a.keys or (100 if q else 1000)
    a.memory_entries = a.memory_entries or (100000 if q else 1000000)
    a.rounds = a.rounds or (2 if q else 3)
    if q:
        a.settle = min(a.settle, 0.3)
    a.sections = [x for x in a.sections.split(",") if x]
    a.workloads = [x for x in a.workloads.split(",") if x]
    for x in a.sections:
        if x not in ("throughput", "memory"):
            ap.error("unknown section %r (throughput, memory)" % x)
    for x in a.workloads:
        if x not in ("xadd", "xadd_maxlen", "xrange", "xreadgroup"):
            ap.error("unknown workload %r" % x)
    a.consumers = [int(x) for x in a.consumers.split(",") if x]
    a.pipelines = [int(x) for x in a.pipelines.split(",") if x]
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], data["runs"], data["memory_runs"]))
        return 0
    if not shutil.which("redis-server"):
        sys.exit("redis-server not found: apt-get install -y redis-server")
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin, or --only-redis" % a.larder_bin)
    os.makedirs(a.out_dir, exist_ok=True)
    os.makedirs(a.tmp_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-stream_compare")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "server_a": "redis-b" if a.only_redis else "larder", "server_b": "redis",
            "rounds": a.rounds, "clients": a.clients, "requests": a.requests,
            "requests_pipelined": a.requests_pipelined, "keys": a.keys, "seed": a.seed,
            "taskset_server": a.taskset_server, "taskset_client": a.taskset_client,
            "memory_rounds": a.memory_rounds, "settle": a.settle,
            "queue_latency": "not measured: the queue is not built yet"}
    runs, mem_runs = [], []
    if "throughput" in a.sections:
        throughput(a, meta, runs, base)
    if "memory" in a.sections:
        memory(a, meta, mem_runs, base)
    md = render(meta, runs, mem_runs)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs, "memory_runs": mem_runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    bad = (meta.get("errors") or meta.get("refused") or any("error" in r for r in runs)
           or any("error" in r for r in mem_runs))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
