#!/usr/bin/env bash
# Where a larder's CPU goes, thread by thread, under a SET load (issue 11's everysec target:
# which part of the log's cost is the workers' own, the log writer's, the rewrites').
#
#   bench/thread_cpu.sh [LARDER_BIN] [-- LARDER_ARGS...]
#
# Starts the server (persistence off unless LARDER_ARGS turn it on, e.g. `-- --appendonly
# yes --appendfsync everysec`), warms it with 200,000 SETs, then sends REQUESTS (default
# 2,000,000) SETs of VALUE_BYTES (default 256) bytes over 100,000 keys from 50 connections
# at pipeline 16 (bench/dtgen.c) and prints, per thread, the user and system CPU it used
# meanwhile (/proc/<pid>/task/*/stat, in clock ticks of 10 ms), its voluntary context
# switches, and the log rewrites INFO counted. Run it twice, with and without the log, and
# compare thread by thread; timings on a shared machine vary from run to run, so run each
# a few times.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LARDER=$ROOT/target/release/larder
if [[ $# -gt 0 && $1 != -- ]]; then
    LARDER=$1
    shift
fi
[[ ${1:-} == -- ]] && shift
REQUESTS=${REQUESTS:-2000000}
VALUE_BYTES=${VALUE_BYTES:-256}

for tool in redis-cli cc; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
WORK=$(mktemp -d)
PID=
cleanup() {
    [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
cc -O2 -o "$WORK/dtgen" "$ROOT/bench/dtgen.c" -lm
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$LARDER" --port "$PORT" --bind 127.0.0.1 --dir "$WORK/data" --memcached-port 0 --http-port 0 \
    --appendonly no --save "" "$@" >"$WORK/log" 2>&1 &
PID=$!
for _ in $(seq 100); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
done

# One line per thread: "<tid>_<name> <utime> <stime> <voluntary switches>".
snapshot() {
    for t in /proc/"$PID"/task/*; do
        echo "$(basename "$t")_$(tr ' ' _ <"$t/comm") $(awk '{print $14, $15}' "$t/stat")" \
            "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")"
    done | sort
}

VALUE=$(head -c "$VALUE_BYTES" /dev/zero | tr '\0' x)
load() {
    "$WORK/dtgen" run 127.0.0.1 "$PORT" 50 16 "$1" "$2" SET 'key:{100000:12}' "$VALUE"
}
load 200000 1 >/dev/null
snapshot >"$WORK/before"
load "$REQUESTS" 2 | tail -1 | python3 -c 'import json, sys; d = json.load(sys.stdin); print("%d SETs in %.2f s, %.0f/s, p99 %.2f ms" % (d["requests"], d["elapsed_s"], d["rps"], d["p99_ms"]))'
snapshot >"$WORK/after"
echo "args: ${*:-(none)}; $(redis-cli -p "$PORT" info persistence | tr -d '\r' | grep '^aof_rewrites:')"
join "$WORK/before" "$WORK/after" | awk '
    { u = $5 - $2; s = $6 - $3; v = $7 - $4; tu += u; ts += s
      if (u + s > 0) printf "%-22s user %5d  sys %5d  voluntary switches %d\n", $1, u, s, v }
    END { printf "%-22s user %5d  sys %5d  (ticks of 10 ms)\n", "all threads", tu, ts }'
