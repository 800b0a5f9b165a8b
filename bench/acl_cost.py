#!/usr/bin/env python3
"""What ACL checks cost: GET/SET as a user with 1000 key patterns against the open default user,
larder and redis-server side by side, interleaved rounds (issue 15).

Both servers get the same 100 users: 99 with 10 key patterns each, and the benchmark users,
each with 1000 key patterns (400 literal keys `lit:<i>`, 400 prefixes `pre<i>:*`, 200 general
globs `g<i>:*:s?`) and `+@all`, differing only in where the pattern that matches the
benchmark's keys (`key:*`; redis-benchmark's keys are `key:<12 digits>`) stands:

  open    the default user (`+@all ~* &*`): no check at all
  first   `key:*` is the first of the 1000 patterns
  last    `key:*` is the last
  none    no pattern matches: every request is refused with NOPERM (and logged to ACL LOG,
          as Redis does: each refusal names another key, so each is a new entry)

Each round runs every (server, arm, command) cell once, servers alternating which goes first
and the arms' order turning;
per cell: bench/mixgen.c (redis-benchmark stops at the first error reply, and the `none` arm is
all errors), 50 connections logged in with AUTH, pipeline --pipeline, GET only or SET only of
`key:<12 digits>` over 100000 keys, 32-byte values; server CPU-µs per request from
/proc/PID/stat (utime+stime), ops/s, p50/p99/p99.9 (mixgen's, exact). Reported: per arm the
median and [min-max] of CPU-µs per op over the rounds, and the overhead against `open` on the
same server.
Results: bench/results/*.md, *.json (*.raw: generator output, gitignored).

usage: bench/acl_cost.py [--rounds 5] [--requests 2000000] [--pipeline 16] [--tag NAME]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    RESULTS, Server, build_mixgen, default_larder_bin, machine_line, measured_run)

ARMS = ("open", "first", "last", "none")
PASSWORD = "bench-pw"


def patterns(where):
    """The 1000 key patterns of a benchmark user, with `key:*` first, last or absent."""
    pats = ["lit:%d" % i for i in range(400)]
    pats += ["pre%d:*" % i for i in range(400)]
    pats += ["g%d:*:s?" % i for i in range(200 - (0 if where == "none" else 1))]
    if where == "first":
        pats.insert(0, "key:*")
    elif where == "last":
        pats.append("key:*")
    assert len(pats) == 1000
    return pats


def setup_users(server):
    for i in range(99 - 3):
        rules = ["on", ">" + PASSWORD, "+@all"] + ["~u%d:%d:*" % (i, j) for j in range(10)]
        server.call("ACL", "SETUSER", "filler%d" % i, *rules)
    for where in ("first", "last", "none"):
        rules = ["on", ">" + PASSWORD, "+@all", "resetkeys"] + ["~" + p for p in patterns(where)]
        server.call("ACL", "SETUSER", "bench-" + where, *rules)
    users = server.call("ACL", "USERS")
    assert len(users) == 100, len(users)


def bench_cmd(mixgen, server, arm, test, args, rnd):
    cmd = [mixgen, "127.0.0.1", str(server.port), "50", str(args.pipeline), str(args.requests),
           "100000", "32", "1" if test == "set" else "0", "1" if test == "get" else "0",
           str(rnd + 1)]
    if arm != "open":
        cmd = ["env", "MIXGEN_AUTH=bench-%s %s" % (arm, PASSWORD)] + cmd
    return cmd


def check_errors(res, arm, requests):
    """`none` must be refused every time, the other arms never."""
    want = requests if arm == "none" else 0
    if res["errors"] != want:
        raise RuntimeError("arm %s: %d error replies, expected %d" % (arm, res["errors"], want))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--larder", default=default_larder_bin())
    ap.add_argument("--tag", default="acl")
    args = ap.parse_args()

    os.makedirs(RESULTS, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.join(RESULTS, "%s-%s-acl_cost" % (stamp, args.tag))
    raw = open(base + ".raw", "w")
    servers = [Server.larder(args.larder, "larder", base + "-servers.log.raw"),
               Server.redis("redis", base + "-servers.log.raw")]
    mixgen, why = build_mixgen()
    if not mixgen:
        sys.exit("cannot build bench/mixgen.c: %s" % why)
    runs = []
    try:
        for s in servers:
            s.start()
            setup_users(s)
            # Every key exists before the first measured GET, and the allocator is warm.
            warm = bench_cmd(mixgen, s, "open", "set", args, 99)
            warm[5] = "1000000"
            measured_run(s, warm, raw, json.loads, timeout=600)
        for rnd in range(args.rounds):
            order = servers if rnd % 2 == 0 else servers[::-1]
            # Which arm goes first turns every round, so that no arm always follows another.
            arms = ARMS[rnd % len(ARMS):] + ARMS[:rnd % len(ARMS)]
            for test in ("get", "set"):
                for arm in arms:
                    for s in order:
                        res = measured_run(s, bench_cmd(mixgen, s, arm, test, args, rnd),
                                           raw, json.loads, timeout=600)
                        check_errors(res, arm, args.requests)
                        res.update(server=s.label, arm=arm, test=test, round=rnd,
                                   cpu_us_per_op=res["server_cpu_s"] * 1e6 / args.requests)
                        runs.append(res)
                        print("round %d %-6s %-3s %-5s %.3f µs/op  %.0f ops/s" % (
                            rnd, s.label, test, arm, res["cpu_us_per_op"], res["rps"]),
                            flush=True)
    finally:
        for s in servers:
            s.stop()

    lines = ["# ACL check cost (bench/acl_cost.py)", "",
             machine_line(), "",
             "mixgen, pipeline %d, 50 connections, 100000 keys, 32-byte values, %d requests "
             "per cell, %d rounds; "
             "server CPU-µs per request from /proc, median [min-max] over rounds; overhead "
             "against `open` on the same server (medians)." % (
                 args.pipeline, args.requests, args.rounds), "",
             "| server | test | arm | CPU-µs/op | overhead | ops/s (median) | p50 ms | p99 ms "
             "| p99.9 ms |", "|---|---|---|---|---|---|---|---|---|"]
    for s in ("larder", "redis"):
        for test in ("get", "set"):
            med = {}
            for arm in ARMS:
                cell = [r for r in runs if (r["server"], r["test"], r["arm"]) == (s, test, arm)]
                cpu = [r["cpu_us_per_op"] for r in cell]
                med[arm] = statistics.median(cpu)
                over = "" if arm == "open" else "%+.1f%%" % (100 * (med[arm] / med["open"] - 1))
                pick = lambda k: statistics.median(r.get(k, float("nan")) for r in cell)
                lines.append("| %s | %s | %s | %.3f [%.3f-%.3f] | %s | %.0f | %.3f | %.3f | %.3f |"
                             % (s, test, arm, med[arm], min(cpu), max(cpu), over,
                                pick("rps"), pick("p50_ms"), pick("p99_ms"), pick("p999_ms")))
    text = "\n".join(lines) + "\n"
    print(text)
    with open(base + ".md", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
