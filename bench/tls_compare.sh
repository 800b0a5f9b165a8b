#!/bin/bash
# usage: bench/tls_compare.sh [LARDER_BINARY]
#   env: ROUNDS (5), REQUESTS (1000000), CLIENTS (50), KEYSPACE (100000), VALUE (3 bytes),
#        OUT (bench/results/<date>-tls_compare.md)
#
# TLS: larder's tls-port vs redis-server 7.0.15's --tls-port, the same certificates
# (testdata/tls, made by its gen.sh; client certificates required on both), driven by
# redis-benchmark --tls: SET then GET at pipeline 1 and 16, in interleaved rounds (larder,
# redis, larder, redis, ...). Per run: server CPU (utime+stime from /proc/PID/stat) → ops per
# server CPU-second, redis-benchmark's ops/s, p50 and p99 from its latency summary, p99.9 as
# the upper bound its percentile listing gives, and the server's RSS after the run. The table:
# median [min-max] over rounds, ratio = larder/redis per round. Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/larder}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-1000000}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-100000}
VALUE=${VALUE:-3}
OUT=${OUT:-bench/results/$(date -u +%Y%m%d-%H%M%S)-tls_compare.md}
CERTS=$PWD/testdata/tls
[ -f $CERTS/server.crt ] || $CERTS/gen.sh
TICK=$(getconf CLK_TCK)
WORK=$(mktemp -d)
trap 'kill $LPID $RPID 2>/dev/null || true; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TLS=(--tls-cert-file $CERTS/server.crt --tls-key-file $CERTS/server.key --tls-ca-cert-file $CERTS/ca.crt)
LPORT=$(free_port); LTLS=$(free_port); RPORT=$(free_port); RTLS=$(free_port)
$BIN --port "$LPORT" --tls-port "$LTLS" "${TLS[@]}" --bind 127.0.0.1 --memcached-port 0 \
    --http-port 0 --appendonly no --save "" >"$WORK/larder.log" 2>&1 & LPID=$!
redis-server --port "$RPORT" --tls-port "$RTLS" "${TLS[@]}" --bind 127.0.0.1 --save '' \
    --appendonly no --daemonize no --logfile "$WORK/redis.log" --dir "$WORK" & RPID=$!
for p in "$LPORT" "$RPORT"; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# run SERVER TEST PIPELINE ROUND: one redis-benchmark run, one result line.
run() {
    local name=$1 test=$2 pipe=$3 round=$4 pid port
    if [ "$name" = larder ]; then pid=$LPID port=$LTLS; else pid=$RPID port=$RTLS; fi
    local c0 c1 t0 t1
    c0=$(cpu "$pid"); t0=$(date +%s.%N)
    redis-benchmark -p "$port" --tls --cacert $CERTS/ca.crt --cert $CERTS/client.crt \
        --key $CERTS/client.key -t "$test" -P "$pipe" -n "$REQUESTS" -c "$CLIENTS" \
        -r "$KEYSPACE" -d "$VALUE" 2>/dev/null | tr '\r' '\n' >"$WORK/rb.out"
    c1=$(cpu "$pid"); t1=$(date +%s.%N)
    python3 - "$WORK/rb.out" "$name" "$test" "$pipe" "$round" "$((c1 - c0))" "$TICK" \
        "$(rss "$pid")" "$REQUESTS" "$t0" "$t1" >>"$WORK/rows" <<'EOF'
import re, sys
path, name, test, pipe, rnd, ticks, tick, rss, n, t0, t1 = sys.argv[1:]
text = open(path).read()
rps = re.search(r"throughput summary: ([\d.]+) requests per second", text)
summ = re.search(r"latency summary \(msec\):\s*\n\s*avg.*\n\s*([\d.\s]+)\n", text)
p50 = p99 = None
if summ:
    cols = summ.group(1).split()  # avg min p50 p95 p99 max
    p50, p99 = float(cols[2]), float(cols[4])
p999 = None
for m in re.finditer(r"^\s*([\d.]+)% <= ([\d.]+) milliseconds", text, re.M):
    if float(m.group(1)) >= 99.9:
        p999 = float(m.group(2))
        break
cpu_s = int(ticks) / int(tick)
ops_cpu = int(n) / cpu_s if cpu_s > 0 else float("nan")
print(name, test, pipe, rnd, rps.group(1) if rps else "nan", f"{ops_cpu:.0f}", p50, p99,
      p999, rss, f"{cpu_s:.2f}", f"{float(t1) - float(t0):.2f}")
EOF
    tail -1 "$WORK/rows" >&2
}

: >"$WORK/rows"
for round in $(seq "$ROUNDS"); do
    for pipe in 1 16; do
        for test in set get; do
            run larder "$test" "$pipe" "$round"
            run redis "$test" "$pipe" "$round"
        done
    done
done

mkdir -p "$(dirname "$OUT")"
python3 - "$WORK/rows" "$BIN" "$ROUNDS" "$REQUESTS" "$CLIENTS" "$KEYSPACE" "$VALUE" >"$OUT" <<'EOF'
import statistics, sys
from collections import defaultdict
rows, binary, rounds, n, clients, keyspace, value = sys.argv[1:]
data = defaultdict(dict)  # (test, pipe) -> {(name, round): fields}
for line in open(rows):
    name, test, pipe, rnd, rps, ops_cpu, p50, p99, p999, rss, cpu_s, wall = line.split()
    f = lambda x: float(x) if x not in ("None", "nan") else float("nan")
    data[(test, int(pipe))][(name, rnd)] = dict(rps=f(rps), ops_cpu=f(ops_cpu), p50=f(p50),
                                               p99=f(p99), p999=f(p999), rss=f(rss))
def span(xs):
    xs = [x for x in xs if x == x]
    if not xs:
        return "n/a"
    fmt = (lambda v: f"{v:.2f}") if max(xs) < 100 else (lambda v: f"{v:,.0f}")
    return f"{fmt(statistics.median(xs))} [{fmt(min(xs))}-{fmt(max(xs))}]"
print("# TLS: larder vs redis-server 7.0.15 (redis-benchmark --tls)\n")
print(f"- larder: `{binary}`; rounds {rounds}, interleaved; {n} requests, {clients} clients, "
      f"{keyspace} keys, {value}-byte values; client certificates required on both")
print("- cells: median [min-max] over rounds; ratio = larder/redis per round; latency in ms; "
      "p99.9 is the upper bound from redis-benchmark's percentile listing; RSS in KiB after "
      "the run\n")
print("| test | pipeline | larder ops/CPU-s | redis ops/CPU-s | ratio | larder ops/s | "
      "redis ops/s | ratio | larder p50/p99/p99.9 | redis p50/p99/p99.9 | larder RSS | "
      "redis RSS |")
print("|" + " --- |" * 12)
for (test, pipe), cells in sorted(data.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    rnds = sorted({r for (_, r) in cells})
    col = lambda name, k: [cells[(name, r)][k] for r in rnds if (name, r) in cells]
    ratio = lambda k: [cells[("larder", r)][k] / cells[("redis", r)][k] for r in rnds
                       if ("larder", r) in cells and ("redis", r) in cells
                       and cells[("redis", r)][k] > 0]
    lat = lambda name: "/".join(f"{statistics.median(col(name, k)):.3f}"
                                for k in ("p50", "p99", "p999"))
    print(f"| {test.upper()} | {pipe} | {span(col('larder', 'ops_cpu'))} | "
          f"{span(col('redis', 'ops_cpu'))} | {span(ratio('ops_cpu'))} | "
          f"{span(col('larder', 'rps'))} | {span(col('redis', 'rps'))} | {span(ratio('rps'))} | "
          f"{lat('larder')} | {lat('redis')} | {span(col('larder', 'rss'))} | "
          f"{span(col('redis', 'rss'))} |")
EOF
cat "$OUT"
