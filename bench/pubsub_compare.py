#!/usr/bin/env python3
"""Pub/sub, keyspace-notification and MULTI/EXEC benchmarks: larder against redis-server, in one run.

Four workloads (--workloads, default all), each driven by a compiled C helper (bench/pubsub_bench.c,
built with cc on first use) against one server at a time, larder and redis alternating which
goes first every round:

  publish  PUBLISH to 1, 100 and 1000 subscribers (spread over receiver threads that use epoll):
           max throughput (pipelined publisher, bounded end-to-end window) and a fixed offered
           rate (paced publisher), with publish-to-receive latency of every delivery.
  expiry   N keys with PX TTLs spread over S seconds, a subscriber on __keyevent@0__:expired:
           lateness of every expired event against the deadline encoded in the key name.
  multi    MULTI, SET, INCR, GET, SET, GET, EXEC as one write per transaction from 50 closed-loop
           clients (and the same five commands pipelined without MULTI/EXEC, for reference).
  stalled  a subscriber that never reads while 1 MB/s is published to its channel, and SET/GET
           latency at a fixed offered rate, against the same run without that subscriber.

Per run: the helper's JSON (throughput, latency percentiles, server CPU seconds and RSS read from
/proc/PID at the edges of the measured window) plus the whole-run figures of resp_compare's
measured_run (client CPU, other processes' CPU). A server that answers an error to a command a
workload needs (say `ERR unknown command 'SUBSCRIBE'`) gets that workload reported as refused,
with the server's message; the other workloads still run. Results: bench/results/*.md, *.json
(*.raw: helper output and server logs, gitignored). See bench/README.md.
"""

import argparse
import json
import os
import resource
import shlex
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    run_lines,
    REPO, RESULTS, Resp, RespError, Server, cell, default_larder_bin, encode, fmt_num,
    machine_busy_seconds, machine_line, measured_run, ratio_cell, build_tool)

HELPER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pubsub_bench.c")
WORKLOADS = ("publish", "expiry", "multi", "stalled")
PUBSUB_LIMIT = "pubsub 32mb 8mb 60"


# ---------------------------------------------------------------- the C helper


def build_helper():
    """Compile pubsub_bench.c once per source version into the temp dir."""
    return build_tool(HELPER_SRC, ("-pthread",))


# ---------------------------------------------------------------- what each server supports


def _call(c, *args):
    """c.call, with the command named in the error."""
    try:
        return c.call(*args)
    except RespError as e:
        raise RespError("%s: %s" % (" ".join(map(str, args[:2 if args[0] in (
            "CONFIG", "CLIENT") else 1])), e)) from None


def probe(server, wl):
    """None if the server takes the commands workload wl needs, else why not (its message)."""
    try:
        c = Resp(server.port, timeout=10)
        try:
            if wl in ("publish", "expiry", "stalled"):
                n = _call(c, "PUBLISH", "bench:probe", "x")
                if not isinstance(n, int):
                    return "PUBLISH answered %r, not an integer" % (n,)
                sub = Resp(server.port, timeout=10)
                try:
                    sub.sock.sendall(encode("SUBSCRIBE", "bench:probe"))
                    r = sub.reply()
                finally:
                    sub.close()
                if isinstance(r, RespError):
                    return "SUBSCRIBE: %s" % r
                if not (isinstance(r, list) and r and r[0] == b"subscribe"):
                    return "SUBSCRIBE answered %r" % (r,)
            if wl == "expiry":
                _call(c, "CONFIG", "SET", "notify-keyspace-events", "Ex")
                _call(c, "CONFIG", "SET", "notify-keyspace-events", "")
                _call(c, "SET", "bench:probe", "1", "PX", "100")
            if wl == "multi":
                if _call(c, "MULTI") != "OK":
                    return "MULTI did not answer OK"
                r = _call(c, "EXEC")
                if r != []:
                    return "EXEC of an empty transaction answered %r" % (r,)
        finally:
            c.close()
    except RespError as e:
        return str(e).strip()
    except (OSError, ValueError) as e:
        return "%s: %r" % (wl, e)
    return None


def config_set(server, name, value):
    """CONFIG SET; returns None or the server's error."""
    try:
        server.call("CONFIG", "SET", name, value)
        return None
    except RespError as e:
        return "CONFIG SET %s: %s" % (name, e)
    except OSError as e:
        return "CONFIG SET %s: %r" % (name, e)


def config_get(server, name):
    try:
        r = server.call("CONFIG", "GET", name)
        return r[1].decode() if isinstance(r, list) and len(r) >= 2 else None
    except (RespError, OSError):
        return None


# ---------------------------------------------------------------- cells and runs


def parse_rates(text):
    out = {}
    for part in text.split(","):
        if part:
            n, r = part.split(":")
            out[int(n)] = float(r)
    return out


def cells_for(a, wl):
    """The cells of a workload: dicts with an id, a label and the helper's arguments."""
    if wl == "publish":
        cells = []
        for mode in a.publish_modes:
            for n in a.subs:
                if mode == "max":
                    cells.append({"id": "max/%d" % n, "mode": "max", "subs": n,
                                  "label": "max, %d sub%s" % (n, "s" * (n > 1)),
                                  "args": ["--mode", "max", "--subs", n]})
                else:
                    rate = a.rates.get(n, 1000.0)
                    cells.append({"id": "rate/%d" % n, "mode": "rate", "subs": n, "rate": rate,
                                  "label": "%s msg/s, %d sub%s" % (fmt_num(rate), n,
                                                                   "s" * (n > 1)),
                                  "args": ["--mode", "rate", "--rate", rate, "--subs", n]})
        for c in cells:
            c["args"] += ["--seconds", a.publish_seconds, "--payload", a.payload,
                          "--rx-threads", a.rx_threads, "--pipeline", a.pipeline,
                          "--window", a.window]
        return cells
    if wl == "expiry":
        return [{"id": "expiry", "label": "%s keys over %g s" % (fmt_num(a.expiry_keys),
                                                                   a.expiry_spread),
                 "args": ["--keys", a.expiry_keys, "--spread-ms", int(a.expiry_spread * 1000),
                          "--grace-ms", int(a.expiry_grace * 1000)]}]
    if wl == "multi":
        base = ["--clients", a.multi_clients, "--txns", a.multi_txns]
        cells = [{"id": "multi", "label": "MULTI+5+EXEC", "args": base}]
        if not a.no_multi_plain:
            cells.append({"id": "plain", "label": "5 pipelined, no MULTI (reference)",
                          "args": base + ["--plain", 1]})
        return cells
    base = ["--seconds", a.stall_seconds, "--kv-rate", a.kv_rate,
            "--pub-bytes-per-s", a.stall_bytes_per_s, "--msg-bytes", a.stall_msg_bytes]
    if a.stall_rcvbuf:
        base += ["--rcvbuf", a.stall_rcvbuf]
    return [{"id": "stalled", "label": "with stalled subscriber", "args": base + ["--stalled", 1]},
            {"id": "baseline", "label": "without", "args": base + ["--stalled", 0]}]


def run_timeout(a, wl):
    if a.run_timeout:
        return a.run_timeout
    if wl == "publish":
        return a.publish_seconds + 90
    if wl == "expiry":
        return a.expiry_spread + a.expiry_grace + a.expiry_keys / 20000 + 90
    if wl == "multi":
        return 300
    return a.stall_seconds + 90


def helper_error(e):
    """The helper's own message out of measured_run's RuntimeError."""
    msg = str(e)
    i = msg.rfind("pubsub_bench: ")
    if i >= 0:
        msg = msg[i + len("pubsub_bench: "):].strip()
    return msg


def run_one(a, s, wl, c, rnd, helper, raw):
    r = {"server": s.label, "round": rnd, "workload": wl, "cell": c["id"], "label": c["label"]}
    if s.proc.poll() is not None:
        r["error"] = "server exited with %s" % s.proc.returncode
        return r
    # a comparable starting state: empty keyspace, notifications only where needed
    s.try_call("FLUSHALL")
    if wl == "expiry":
        err = config_set(s, "notify-keyspace-events", "Ex")
        if err:
            r["error"] = "refused: " + err
            return r
    stats0 = s.info("stats") if wl == "stalled" else {}
    cmd = [helper, wl, "--port", s.port, "--pid", s.pid, "--seed", 1000 * rnd + 1] + c["args"]
    cmd = [str(x) for x in cmd]
    if a.taskset_client:
        cmd = ["taskset", "-c", a.taskset_client] + cmd
    try:
        r.update(measured_run(s, cmd, raw, json.loads, run_timeout(a, wl)))
    except (RuntimeError, ValueError, OSError) as e:
        r["error"] = helper_error(e)
        if "(rc 4)" in str(e):
            r["error"] = "refused: " + r["error"]
    finally:
        if wl == "expiry":
            config_set(s, "notify-keyspace-events", "")
            s.try_call("FLUSHALL")
    if "error" in r:
        return r
    if wl == "stalled":
        stats1 = s.info("stats")
        k = "client_output_buffer_limit_disconnections"
        if k in stats1:
            r["obuf_limit_disconnections"] = int(stats1[k]) - int(stats0.get(k, 0))
    ws = r.get("window_s")
    r["client_busy"] = round(r["window_client_cpu_s"] / ws, 3) if ws else None
    r["server_busy"] = round(r["window_server_cpu_s"] / ws, 3) if ws else None
    return r


def progress_line(r):
    if "error" in r:
        return "FAILED: " + r["error"]
    wl = r["workload"]
    if wl == "publish":
        return "%s msg/s, %s deliveries/server-CPU-s, p50 %.3f p99 %.3f p99.9 %.3f ms, lost %d" % (
            fmt_num(r["msg_per_s"]), fmt_num(r["deliveries_per_server_cpu_s"]), r["p50_ms"],
            r["p99_ms"], r["p999_ms"], r["lost_deliveries"])
    if wl == "expiry":
        return "received %d/%d, lateness p50 %.0f p99 %.0f max %.0f ms" % (
            r["received"], r["keys"], r.get("lateness_p50_ms", -1), r.get("lateness_p99_ms", -1),
            r.get("lateness_max_ms", -1))
    if wl == "multi":
        return "%s txn/s, %s txn/server-CPU-s, p50 %.3f p99 %.3f ms" % (
            fmt_num(r["txn_per_s"]), fmt_num(r["txn_per_server_cpu_s"]), r["p50_ms"],
            r["p99_ms"])
    return "KV p50 %.3f p99 %.3f p99.9 %.3f max %.1f ms; stalled disconnected: %s; omem %s" % (
        r["p50_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"], r["stalled_disconnected"],
        r["stalled_omem_bytes"])


def run_workload(a, wl, servers, helper, raw, meta, runs):
    refused = {}
    for s in servers:
        why = probe(s, wl)
        if why:
            refused[s.label] = why
            print("%s: %s not measured: %s" % (s.label, wl, why), file=sys.stderr)
    meta["refused"][wl] = refused
    if wl == "stalled":
        for s in servers:
            if s.label in refused:
                continue
            err = config_set(s, "client-output-buffer-limit", PUBSUB_LIMIT)
            meta["server_config"].setdefault(s.label, {})["client-output-buffer-limit"] = (
                config_get(s, "client-output-buffer-limit") if not err else "refused: " + err)
            if err:
                print("%s: %s (runs with its own limits)" % (s.label, err), file=sys.stderr)
    if wl == "expiry":
        for s in servers:
            meta["server_config"].setdefault(s.label, {})["hz"] = config_get(s, "hz")
    rounds = {"expiry": a.expiry_rounds, "stalled": a.stall_rounds}.get(wl, a.rounds)
    cells = cells_for(a, wl)
    for rnd in range(rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for c in (cells if rnd % 2 == 0 or wl != "stalled" else cells[::-1]):
            for s in order:
                # the reference row of multi needs no MULTI: it runs where MULTI is refused
                if s.label in refused and not (wl == "multi" and c["id"] == "plain"):
                    r = {"server": s.label, "round": rnd, "workload": wl, "cell": c["id"],
                         "label": c["label"], "error": "refused: " + refused[s.label]}
                else:
                    r = run_one(a, s, wl, c, rnd, helper, raw)
                    print("round %d %-8s %-8s %-34s %s" % (rnd, s.label, wl, c["label"],
                                                           progress_line(r)), file=sys.stderr)
                runs.append(r)


# ---------------------------------------------------------------- report


def ms(v):
    return "%.3f" % v if v < 10 else "%.1f" % v if v < 1000 else "%.0f" % v


def mib(v):
    return "%.1f" % (v / 2 ** 20) if v is not None and v >= 0 else "–"


def pct(v):
    return "%.0f%%" % (100 * v)


def sec(v):
    return "%.2f" % v


# (title, metric, format, ratio column?)
COLUMNS = {
    "publish_max": [("msg/s", "msg_per_s", fmt_num, True),
                    ("deliveries/s", "deliveries_per_s", fmt_num, False),
                    ("deliveries per server CPU-s", "deliveries_per_server_cpu_s", fmt_num, True),
                    ("p50 ms (closed loop)", "p50_ms", ms, False),
                    ("p99 ms (closed loop)", "p99_ms", ms, False)],
    "publish_rate": [("deliveries/s", "deliveries_per_s", fmt_num, False),
                     ("p50 ms", "p50_ms", ms, False), ("p99 ms", "p99_ms", ms, True),
                     ("p99.9 ms", "p999_ms", ms, False), ("max ms", "max_ms", ms, False),
                     ("deliveries per server CPU-s", "deliveries_per_server_cpu_s", fmt_num,
                      True)],
    "publish_res": [("server CPU s", "window_server_cpu_s", sec, False),
                    ("server RSS MiB", "window_server_rss_bytes", mib, False),
                    ("client CPU/wall", "client_busy", pct, False),
                    ("lost deliveries", "lost_deliveries", fmt_num, False)],
    "expiry": [("received", "received", fmt_num, False),
               ("lateness p50 ms", "lateness_p50_ms", ms, False),
               ("lateness p99 ms", "lateness_p99_ms", ms, True),
               ("lateness p99.9 ms", "lateness_p999_ms", ms, False),
               ("lateness max ms", "lateness_max_ms", ms, True)],
    "expiry_res": [("load s", "load_s", sec, False),
                   ("server CPU s while expiring", "expire_server_cpu_s", sec, False),
                   ("server RSS MiB loaded", "server_rss_loaded_bytes", mib, False),
                   ("early events", "early", fmt_num, False)],
    "multi": [("txn/s", "txn_per_s", fmt_num, True),
              ("txn per server CPU-s", "txn_per_server_cpu_s", fmt_num, True),
              ("p50 ms", "p50_ms", ms, False), ("p99 ms", "p99_ms", ms, True),
              ("p99.9 ms", "p999_ms", ms, False)],
    "multi_res": [("server CPU s", "window_server_cpu_s", sec, False),
                  ("server RSS MiB", "window_server_rss_bytes", mib, False),
                  ("client CPU/wall", "client_busy", pct, False)],
    "stalled": [("KV p50 ms", "p50_ms", ms, False), ("KV p99 ms", "p99_ms", ms, True),
                ("KV p99.9 ms", "p999_ms", ms, False), ("KV max ms", "max_ms", ms, False)],
    "stalled_res": [("stalled sub's omem MiB at end", "stalled_omem_bytes", mib, False),
                    ("server RSS MiB at end", "window_server_rss_bytes", mib, False),
                    ("server CPU s", "window_server_cpu_s", sec, False),
                    ("published MB/s", "pub_bytes_per_s", lambda v: "%.2f" % (v / 1e6), False)],
}

# per-round listings: (title, metric, format)
PER_ROUND = {
    "publish": [("msg/s", "msg_per_s", fmt_num), ("deliveries/s", "deliveries_per_s", fmt_num),
                ("deliv/server CPU-s", "deliveries_per_server_cpu_s", fmt_num),
                ("p50 ms", "p50_ms", ms), ("p99 ms", "p99_ms", ms), ("p99.9 ms", "p999_ms", ms),
                ("server CPU s", "window_server_cpu_s", sec),
                ("RSS MiB", "window_server_rss_bytes", mib), ("lost", "lost_deliveries", fmt_num),
                ("other CPU/wall", "foreign_cpu_frac", pct)],
    "expiry": [("loaded", "keys", fmt_num), ("received", "received", fmt_num),
               ("p50 ms", "lateness_p50_ms", ms), ("p99 ms", "lateness_p99_ms", ms),
               ("max ms", "lateness_max_ms", ms), ("load s", "load_s", sec),
               ("CPU s expiring", "expire_server_cpu_s", sec),
               ("RSS MiB", "server_rss_loaded_bytes", mib),
               ("other CPU/wall", "foreign_cpu_frac", pct)],
    "multi": [("txn/s", "txn_per_s", fmt_num), ("txn/server CPU-s", "txn_per_server_cpu_s", fmt_num),
              ("p50 ms", "p50_ms", ms), ("p99 ms", "p99_ms", ms), ("p99.9 ms", "p999_ms", ms),
              ("server CPU s", "window_server_cpu_s", sec),
              ("other CPU/wall", "foreign_cpu_frac", pct)],
    "stalled": [("KV p50 ms", "p50_ms", ms), ("KV p99 ms", "p99_ms", ms),
                ("KV p99.9 ms", "p999_ms", ms), ("KV max ms", "max_ms", ms),
                ("stalled disconnected", "disconnect", str),
                ("omem MiB", "stalled_omem_bytes", mib),
                ("RSS MiB end", "window_server_rss_bytes", mib),
                ("server CPU s", "window_server_cpu_s", sec),
                ("other CPU/wall", "foreign_cpu_frac", pct)],
}


def disconnect_text(r):
    if not r.get("stalled"):
        return "–"
    if r.get("stalled_disconnected"):
        t = r.get("stalled_disconnected_after_s", -1)
        return "yes, after %.1f s" % t if t >= 0 else "yes (gone from CLIENT LIST)"
    if r.get("obuf_limit_disconnections"):
        return "yes (INFO: %d)" % r["obuf_limit_disconnections"]
    return "no" + ("" if r.get("stalled_in_client_list") else " (not in CLIENT LIST%s)" % (
        ": " + r["client_list_error"] if r.get("client_list_error") else ""))


def render(meta, runs):
    A, B = meta["server_a"], meta["server_b"]
    out = []
    w = out.append
    w("## Pub/sub, notifications, MULTI: %s vs %s\n" % (A, B))
    out.extend(run_lines(meta))
    w("- taskset server=%s client=%s; background CPU before the runs %.0f%% of one CPU; "
      "load generators: bench/pubsub_bench.c (built with cc -O2)" % (
          meta["taskset_server"] or "none", meta["taskset_client"] or "none",
          100 * meta["background_cpu_frac"]))
    for label, cfg in sorted(meta.get("server_config", {}).items()):
        w("- %s config: %s" % (label, ", ".join("%s = `%s`" % kv for kv in sorted(cfg.items()))))
    for err in meta.get("errors", []):
        w("- **ERROR: %s**" % err)
    worst = max((r.get("foreign_cpu_frac") or 0 for r in runs), default=0)
    if worst > 0.15 or meta.get("background_cpu_frac", 0) > 0.1:
        w("- **WARNING: the machine was not quiet**: other processes used %.0f%% of a CPU before "
          "the runs and up to %.0f%% during one; treat these numbers as noisy." % (
              100 * meta.get("background_cpu_frac", 0), 100 * worst))
    w("- cells: median [min–max] over rounds; ratio = %s/%s per round, median [min–max]. Above 1 "
      "favours %s for throughput and per-CPU columns, below 1 for latency columns. Server CPU "
      "and RSS are read from /proc at the edges of the measured window (after connections and "
      "subscriptions are set up).\n" % (A, B, A))

    by_wl = {}
    for r in runs:
        by_wl.setdefault(r["workload"], []).append(r)

    def pairs_of(rs, cell_id):
        rounds = {}
        for r in rs:
            if r["cell"] == cell_id and "error" not in r:
                rounds.setdefault(r["round"], {})[r["server"]] = r
        return [(rd.get(A), rd.get(B)) for _, rd in sorted(rounds.items())]

    def table(rs, cells, cols, first="case"):
        head = ["| " + first]
        for title, _, _, ratio in cols:
            head.append("%s %s | %s %s" % (A, title, B, title) + (" | ratio" if ratio else ""))
        w(" | ".join(head) + " |")
        ncols = sum(3 if c[3] else 2 for c in cols)
        w("|---|" + "---:|" * ncols)
        for cid, label in cells:
            pairs = pairs_of(rs, cid)
            row = [label]
            for _, metric, fmt, ratio in cols:
                av = [x[0].get(metric) if x[0] else None for x in pairs]
                bv = [x[1].get(metric) if x[1] else None for x in pairs]
                row += [cell(av, fmt), cell(bv, fmt)]
                if ratio:
                    row.append(ratio_cell(list(zip(av, bv))))
            w("| " + " | ".join(row) + " |")
        w("")

    def errors(rs):
        seen = []
        for r in rs:
            if "error" in r and (r["server"], r["error"]) not in seen:
                seen.append((r["server"], r["error"]))
        for label, err in seen:
            w("- **%s: %s**" % (label, err))
        if seen:
            w("")

    def per_round(rs, wl):
        cols = PER_ROUND[wl]
        w("<details><summary>per-round figures</summary>\n")
        w("| round | server | case | " + " | ".join(c[0] for c in cols) + " |")
        w("|---:|---|---|" + "---:|" * len(cols))
        for r in rs:
            if "error" in r:
                w("| %d | %s | %s | %s |" % (r["round"], r["server"], r["label"],
                                            "error: " + r["error"]))
                continue
            vals = []
            for _, metric, fmt in cols:
                v = disconnect_text(r) if metric == "disconnect" else r.get(metric)
                vals.append("–" if v is None else fmt(v))
            w("| %d | %s | %s | %s |" % (r["round"], r["server"], r["label"], " | ".join(vals)))
        w("\n</details>\n")

    order_cells = lambda rs: list(dict.fromkeys((r["cell"], r["label"]) for r in rs))  # noqa: E731
    for wl in WORKLOADS:
        rs = by_wl.get(wl)
        if not rs:
            continue
        cells = order_cells(rs)
        p = meta["params"]
        if wl == "publish":
            w("### publish: PUBLISH to N subscribers\n")
            w("One publisher connection; N subscriber connections on one channel, read by %d "
              "receiver threads (epoll); %d-byte payloads carrying the send time (CLOCK_MONOTONIC "
              "ns); %g s of publishing per run. **max**: the publisher pipelines up to %d "
              "PUBLISHes per write and keeps at most %d messages published but not yet received "
              "by every subscriber (so latency there is queueing inside that window). **rate**: "
              "one PUBLISH at each scheduled time (stamped with the scheduled time, so a "
              "publisher or server stall counts against the messages behind it). Latency: "
              "publish-to-receive of every delivery.\n" % (
                  p["rx_threads"], p["payload"], p["publish_seconds"], p["pipeline"],
                  p["window"]))
            errors(rs)
            mx = [c for c in cells if c[0].startswith("max/")]
            rt = [c for c in cells if c[0].startswith("rate/")]
            if mx:
                w("Max throughput:\n")
                table(rs, mx, COLUMNS["publish_max"])
            if rt:
                w("Fixed offered rate:\n")
                table(rs, rt, COLUMNS["publish_rate"])
            w("Resources (measured window):\n")
            table(rs, cells, COLUMNS["publish_res"])
        elif wl == "expiry":
            w("### expiry: lateness of `__keyevent@0__:expired` events\n")
            w("%s keys `exp:<deadline ms>:<n>` set with `PX` TTLs uniform in [1 ms, %g s] "
              "(pipelined, 1000 a batch), nobody reads them; one subscriber on "
              "`__keyevent@0__:expired` (`notify-keyspace-events Ex`). Lateness = receive time "
              "(CLOCK_REALTIME) − the deadline in the key name, which the loader computes just "
              "before writing the batch: it includes the ~ms between that clock read and the "
              "server's. The run waits for every event or until %g s after the last deadline. "
              "Redis's active expiry runs `hz` times a second (see config above).\n" % (
                  fmt_num(p["expiry_keys"]), p["expiry_spread"], p["expiry_grace"]))
            errors(rs)
            table(rs, cells, COLUMNS["expiry"])
            table(rs, cells, COLUMNS["expiry_res"])
        elif wl == "multi":
            w("### multi: MULTI / SET, INCR, GET, SET, GET / EXEC\n")
            w("%d closed-loop connections, one thread (epoll); each writes a whole transaction "
              "(7 commands) at once and waits for its 7 replies; %s transactions a run; 32-byte "
              "values, keys uniform over 100k per slot. Latency: the write to the EXEC reply. "
              "The reference row sends the same 5 commands pipelined without MULTI/EXEC.\n" % (
                  p["multi_clients"], fmt_num(p["multi_txns"])))
            errors(rs)
            table(rs, cells, COLUMNS["multi"])
            table(rs, cells, COLUMNS["multi_res"])
        else:
            w("### stalled: a subscriber that never reads\n")
            w("`CONFIG SET client-output-buffer-limit \"%s\"` on both servers. One subscriber "
              "subscribes and then never reads; a publisher sends %s B messages at %.2f MB/s to "
              "its channel (also in the run without it, where they reach nobody); a KV client "
              "sends SET and GET alternately (64-byte values, 10k keys) at %s ops/s on one "
              "connection, open loop, latency from each request's scheduled time to its reply; "
              "%g s a run. \"disconnected\": PUBLISH to its channel began to answer 0 receivers (the "
              "time shown is then), or the stalled socket saw the server's FIN (rarely: the FIN "
              "queues behind data the client never reads), or it was gone from `CLIENT LIST` at "
              "the end, or `INFO stats` counted an output-buffer-limit disconnection. omem: its "
              "output buffer in `CLIENT LIST` at the end (– when gone).\n" % (
                  PUBSUB_LIMIT, p["stall_msg_bytes"], p["stall_bytes_per_s"] / 1e6,
                  fmt_num(p["kv_rate"]), p["stall_seconds"]))
            errors(rs)
            table(rs, cells, COLUMNS["stalled"])
            # disconnection per server per round
            for side in (A, B):
                d = [disconnect_text(r) for r in rs if r["server"] == side and
                     r["cell"] == "stalled" and "error" not in r]
                if d:
                    w("- %s stalled subscriber disconnected, per round: %s" % (side, "; ".join(d)))
            w("")
            table(rs, cells, COLUMNS["stalled_res"])
        per_round(rs, wl)
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--redis-bin", default="redis-server")
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags, one shell string")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 round, short runs, 100k keys over 10 s (~2.5 min)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds for publish and multi")
    ap.add_argument("--taskset-server", help="CPU list for the servers, e.g. 1")
    ap.add_argument("--taskset-client", help="CPU list for the helpers, e.g. 0")
    g = ap.add_argument_group("publish")
    g.add_argument("--subs", default="1,100,1000", help="subscriber counts")
    g.add_argument("--publish-modes", default="max,rate")
    g.add_argument("--rates", default="1:10000,100:2000,1000:1000",
                   help="offered msg/s per subscriber count, SUBS:RATE,... (others: 1000)")
    g.add_argument("--publish-seconds", type=float, help="per run (default 3; --quick 1.5)")
    g.add_argument("--payload", type=int, default=64, help="message bytes (>= 20)")
    g.add_argument("--rx-threads", type=int, default=2, help="receiver threads")
    g.add_argument("--pipeline", type=int, default=32, help="max mode: PUBLISHes per write")
    g.add_argument("--window", type=int, default=256,
                   help="max mode: messages published but not yet delivered to all")
    g = ap.add_argument_group("expiry")
    g.add_argument("--expiry-keys", type=int, help="default 1000000; --quick 100000")
    g.add_argument("--expiry-spread", type=float, help="TTL spread, s (default 60; --quick 10)")
    g.add_argument("--expiry-grace", type=float,
                   help="wait after the last deadline, s (default 30; --quick 15)")
    g.add_argument("--expiry-rounds", type=int, default=1)
    g = ap.add_argument_group("multi")
    g.add_argument("--multi-txns", type=int, help="per run (default 300000; --quick 100000)")
    g.add_argument("--multi-clients", type=int, default=50)
    g.add_argument("--no-multi-plain", action="store_true",
                   help="skip the reference row without MULTI/EXEC")
    g = ap.add_argument_group("stalled")
    g.add_argument("--stall-seconds", type=float,
                   help="per run (default 45: past the 32mb hard limit at 1 MB/s; --quick 10)")
    g.add_argument("--stall-rounds", type=int, default=1)
    g.add_argument("--kv-rate", type=float, default=2000, help="SET/GET offered ops/s")
    g.add_argument("--stall-bytes-per-s", type=float, default=1048576)
    g.add_argument("--stall-msg-bytes", type=int, default=1024)
    g.add_argument("--stall-rcvbuf", type=int, default=0,
                   help="SO_RCVBUF of the stalled subscriber (default: the kernel's)")
    ap.add_argument("--run-timeout", type=float, help="seconds per helper run (default: derived)")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="", help="suffix for the result file names")
    ap.add_argument("--render", metavar="JSON", help="print the tables of an earlier run's JSON")
    a = ap.parse_args(argv)
    q = a.quick
    a.publish_seconds = a.publish_seconds or (1.5 if q else 3.0)
    a.expiry_keys = a.expiry_keys or (100000 if q else 1000000)
    a.expiry_spread = a.expiry_spread or (10.0 if q else 60.0)
    a.expiry_grace = a.expiry_grace if a.expiry_grace is not None else (15.0 if q else 30.0)
    a.multi_txns = a.multi_txns or (100000 if q else 300000)
    a.stall_seconds = a.stall_seconds or (10.0 if q else 45.0)
    if q:
        a.rounds = a.expiry_rounds = a.stall_rounds = 1
    a.workloads = [x for x in a.workloads.split(",") if x]
    for x in a.workloads:
        if x not in WORKLOADS:
            ap.error("unknown workload %r (%s)" % (x, ", ".join(WORKLOADS)))
    a.subs = [int(x) for x in a.subs.split(",") if x]
    a.publish_modes = [x for x in a.publish_modes.split(",") if x]
    for x in a.publish_modes:
        if x not in ("max", "rate"):
            ap.error("unknown publish mode %r (max, rate)" % x)
    a.rates = parse_rates(a.rates)
    if a.payload < 20:
        ap.error("--payload must be at least 20 bytes (the timestamp)")
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], data["runs"]))
        return 0
    redis_bin = shutil.which(a.redis_bin)
    if not redis_bin:
        sys.exit("%s not found: apt-get install -y redis-server redis-tools" % a.redis_bin)
    if (a.taskset_server or a.taskset_client) and not shutil.which("taskset"):
        sys.exit("taskset not found: apt-get install -y util-linux")
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release, or pass --larder-bin, "
                 "or --only-redis" % a.larder_bin)
    helper = build_helper()
    # 1000 subscribers need 1000+ descriptors in the helper and in both servers (inherited)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 16384 and (hard == resource.RLIM_INFINITY or hard > soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(65536, hard) if hard !=
                                                    resource.RLIM_INFINITY else 65536, hard))

    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-pubsub_compare")
    raw = open(base + ".raw", "w")
    log = base + "-servers.log.raw"

    def redis(label):
        s = Server.redis(label, log, shlex.split(a.redis_args), a.taskset_server)
        s.argv[s.argv.index("redis-server")] = redis_bin
        s.binary = redis_bin
        return s

    A = redis("redis-b") if a.only_redis else Server.larder(
        a.larder_bin, "larder", log, shlex.split(a.larder_args), a.taskset_server)
    B = redis("redis")
    servers = [A, B]
    runs = []
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "server_a": A.label, "server_b": B.label, "taskset_server": a.taskset_server,
            "taskset_client": a.taskset_client, "refused": {}, "server_config": {},
            "params": {k: getattr(a, k) for k in (
                "rounds", "subs", "publish_modes", "publish_seconds", "payload", "rx_threads",
                "pipeline", "window", "expiry_keys", "expiry_spread", "expiry_grace",
                "expiry_rounds", "multi_txns", "multi_clients", "stall_seconds", "stall_rounds",
                "kv_rate", "stall_bytes_per_s", "stall_msg_bytes", "stall_rcvbuf",
                "quick", "workloads")}}
    meta["params"]["rates"] = {str(k): v for k, v in a.rates.items()}
    t_start = time.perf_counter()
    try:
        for s in servers:
            s.start()
        meta["servers"] = [{"label": s.label, "argv": shlex.join(s.argv), "version": s.version(),
                            "threads": s.threads(),
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
        for wl in a.workloads:
            try:
                run_workload(a, wl, servers, helper, raw, meta, runs)
            except (RuntimeError, OSError) as e:  # a crashed server: keep the other workloads
                msg = "workload %s abandoned: %r" % (wl, e)
                print("FAILED " + msg, file=sys.stderr)
                meta.setdefault("errors", []).append(msg)
    finally:
        rcs = {s.label: s.stop() for s in servers}
        raw.close()
    meta["server_exit_codes"] = rcs
    meta["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    meta["refused_commands"] = {s.label: sorted(s.missing) for s in servers if s.missing}
    md = render(meta, runs)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json,raw} in %.0f s" % (os.path.relpath(base, os.getcwd()),
                                                  meta["elapsed_s"]), file=sys.stderr)
    return 1 if meta.get("errors") or any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
