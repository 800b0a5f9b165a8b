#!/usr/bin/env bash
# User-space instructions per EVALSHA, larder and redis-server side by side, under valgrind's
# callgrind (issue 14). Instruction counts do not depend on the machine's load, so a change of
# a few percent to the script path shows where timings on a shared 2-vCPU machine cannot show
# it; they leave out the kernel, cache misses and the generator, so the timed comparison
# (bench/script_compare.py) stays the measure of the targets.
#
#   bench/script_callgrind.sh [LARDER_BIN] [PIPELINE] [REQUESTS]
#
# Each server runs under callgrind with instrumentation off; 20,000 requests warm it up, then
# instrumentation is on for REQUESTS (default 100,000) requests of `EVALSHA getincr 1
# g:{10000}` from 50 connections at PIPELINE (default 16), sent by scriptgen (bench/scriptgen.c).
# BODY=<lua> runs another script (one key, no arguments); KEEP=<dir> keeps the callgrind files
# there for callgrind_annotate. Needs valgrind and redis-server.
#
# WORKLOAD=pushpop counts issue 10's LPUSH + BRPOP instead: `dtgen pushpop` (bench/dtgen.c),
# one producer and one consumer at PIPELINE, window 16, 32-byte items; REQUESTS pops are
# counted, and "per request" is then per push and pop.
#
# WORKLOAD=cmd counts any dtgen command template instead (bench/dtgen.c's placeholders), given
# in CMD, e.g. CMD='PFADD hll:{100} e:{1000000000}': 50 connections at PIPELINE; WARMUP
# (default 20,000) requests before counting, so a data set the template builds (HyperLogLogs
# turned dense, say) is in place when counting starts. PREFILL, another template, runs first
# at pipeline 16 for PREFILL_N (default 200,000) requests, for a data set CMD only reads or
# updates (CMD='ZRANK zs:10000 m:{10000}' after PREFILL='ZADD zs:10000 {f1000000} m:{10000}').
#
# LARDER_ARGS and REDIS_ARGS are more arguments for each server, after the defaults (which
# turn persistence off), e.g. LARDER_ARGS='--appendonly yes --appendfsync everysec' and
# REDIS_ARGS='--appendonly yes' to count what the append-only log adds per write; the data
# directories are temporary. SERVERS=larder or SERVERS=redis runs one of them (comparing two
# larder builds, say).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LARDER=${1:-$ROOT/target/release/larder}
PIPE=${2:-16}
REQS=${3:-100000}
BODY=${BODY:-$'redis.call(\'GET\', KEYS[1])\nreturn redis.call(\'INCR\', KEYS[1])'}
WORKLOAD=${WORKLOAD:-evalsha}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for tool in valgrind callgrind_control callgrind_annotate redis-server redis-cli cc; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
cc -O2 -o "$WORK/scriptgen" "$ROOT/bench/scriptgen.c"
cc -O2 -o "$WORK/dtgen" "$ROOT/bench/dtgen.c" -lm

# Runs $3 requests of the workload against port $1 (seed $2).
load() {
    local port=$1 seed=$2 n=$3
    case $WORKLOAD in
    evalsha)
        "$WORK/scriptgen" 127.0.0.1 "$port" 50 "$PIPE" "$n" 0 "$seed" EVALSHA "$SHA" 1 'g:{10000}' ;;
    pushpop)
        "$WORK/dtgen" pushpop 127.0.0.1 "$port" 1 1 "$PIPE" "$n" 16 32 "$seed" bq ;;
    cmd)
        # shellcheck disable=SC2086 # CMD is a template of words
        "$WORK/dtgen" run 127.0.0.1 "$port" 50 "$PIPE" "$n" "$seed" $CMD ;;
    *)
        echo "unknown WORKLOAD $WORKLOAD" >&2; exit 2 ;;
    esac >/dev/null
}

# Prints the instructions per request of one server: $1 its name, then its command line.
measure() {
    local name=$1 port
    shift
    rm -f "${KEEP:-$WORK}/$name".cg.*
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="${KEEP:-$WORK}/$name.cg.%p" \
        "$@" --port "$port" >"$WORK/$name.log" 2>&1 &
    local pid=$!
    for _ in $(seq 300); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.2
    done
    SHA=$(redis-cli -p "$port" script load "$BODY")
    if [[ -n ${PREFILL:-} ]]; then
        # shellcheck disable=SC2086 # PREFILL is a template of words
        "$WORK/dtgen" run 127.0.0.1 "$port" 50 16 "${PREFILL_N:-200000}" 3 $PREFILL >/dev/null
    fi
    load "$port" 1 "${WARMUP:-20000}"
    callgrind_control -i on "$pid" >/dev/null
    load "$port" 2 "$REQS"
    callgrind_control -i off "$pid" >/dev/null
    callgrind_control -d "$pid" >/dev/null
    sleep 1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    local total
    # The dump asked for and the one at exit (after instrumentation went off): the larger
    # holds the measured requests.
    total=$(for f in "${KEEP:-$WORK}/$name".cg.*; do callgrind_annotate "$f" 2>/dev/null || true; done |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0 } END { printf "%.0f\n", max }')
    printf '%-7s %12d instructions  %7d per request\n' "$name" "$total" $((total / REQS))
}

case $WORKLOAD in
evalsha) echo "EVALSHA at pipeline $PIPE, $REQS requests, 50 connections; script: ${BODY//$'\n'/ }" ;;
pushpop) echo "LPUSH + BRPOP at pipeline $PIPE, $REQS pops, one producer and one consumer" ;;
cmd) echo "$CMD at pipeline $PIPE, $REQS requests, 50 connections, after ${WARMUP:-20000}" ;;
esac
SERVERS=${SERVERS:-larder,redis}
if [[ ,$SERVERS, == *,larder,* ]]; then
    # shellcheck disable=SC2086 # the extra arguments are words
    measure larder "$LARDER" --memcached-port 0 --http-port 0 --appendonly no --save "" --threads 1 \
        --dir "$WORK/larder-data" ${LARDER_ARGS:-}
fi
if [[ ,$SERVERS, == *,redis,* ]]; then
    # shellcheck disable=SC2086
    measure redis redis-server --save "" --appendonly no --dir "$WORK" ${REDIS_ARGS:-}
fi
