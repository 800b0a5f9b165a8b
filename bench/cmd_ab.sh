#!/usr/bin/env bash
# A/B of two larder builds on any pipelined command, interleaved in many short rounds: server
# CPU nanoseconds per request, from the kernel's scheduler statistics of every server thread
# (/proc/PID/task/*/schedstat: exact to the nanosecond, where /proc/PID/stat counts 10 ms
# ticks), so a round of a few hundred thousand requests is enough and slow periods of a
# shared machine hit both builds alike.
#
#   bench/cmd_ab.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# Environment: CMD, a bench/dtgen.c template (default `PFADD hll:{100} e:{1000000000}`);
# PREFILL, a template run first at pipeline 16 for PREFILL_N (default 2,000,000) requests
# (e.g. `HSET h:{100000} f{10} v{10000000:7}` before HGET); WARM requests of CMD before the
# rounds (default 400,000); N requests per round (default 300,000); P pipeline (default 16);
# C connections (default 50); REDIS=1 adds a redis-server, for the ratio the comparisons
# report. Prints each build's median and the per-round NEW/OLD ratio: its median, range and
# how many rounds NEW used less CPU (a count near half is no result); and per server the
# split of that CPU into user space and kernel (/proc/PID/stat's ticks, so only rounds of
# some tenths of a second give it) and the voluntary context switches (sleeps in the event
# loop's wait) per 1,000 requests.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=${1:?old binary}
NEW=${2:?new binary}
ROUNDS=${3:-20}
CMD=${CMD:-'PFADD hll:{100} e:{1000000000}'}
P=${P:-16}
C=${C:-50}
N=${N:-300000}
WARM=${WARM:-400000}
HZ=$(getconf CLK_TCK)
WORK=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/dtgen" "$ROOT/bench/dtgen.c" -lm

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start() { # binary... -> "pid port"
    local port
    port=$(free_port)
    "$@" --port "$port" --bind 127.0.0.1 >/dev/null 2>&1 &
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    echo "$! $port"
}
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# user and system ticks (fields 14 and 15 of /proc/PID/stat, the comm has no spaces here)
ticks() { awk '{ print $14, $15 }' /proc/"$1"/stat; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s }'; }
# shellcheck disable=SC2086 # CMD and PREFILL are templates of words
load() { "$WORK/dtgen" run 127.0.0.1 "$1" "$C" "$2" "$3" "$4" $5 >/dev/null; }

LARDER_ARGS=(--memcached-port 0 --http-port 0 --appendonly no --save "")
read -r a_pid a_port < <(start "$OLD" "${LARDER_ARGS[@]}")
read -r b_pid b_port < <(start "$NEW" "${LARDER_ARGS[@]}")
pids+=("$a_pid" "$b_pid")
servers=("A $a_pid $a_port" "B $b_pid $b_port")
if [[ -n ${REDIS:-} ]]; then
    read -r r_pid r_port < <(start redis-server --save "" --appendonly no --logfile "")
    pids+=("$r_pid")
    servers+=("R $r_pid $r_port")
fi
for s in "${servers[@]}"; do
    read -r _ _ port <<<"$s"
    if [[ -n ${PREFILL:-} ]]; then load "$port" 16 "${PREFILL_N:-2000000}" 1 "$PREFILL"; fi
    load "$port" "$P" "$WARM" 1 "$CMD"
done
echo "$CMD at pipeline $P, $C connections, $N requests a round, $ROUNDS rounds; A = $OLD, B = $NEW"
for r in $(seq "$ROUNDS"); do
    order=("${servers[@]}")
    if ((r % 2 == 0)); then order=("${servers[1]}" "${servers[0]}" "${servers[@]:2}"); fi
    for s in "${order[@]}"; do
        read -r name pid port <<<"$s"
        before=$(cpu_ns "$pid")
        read -r u0 s0 < <(ticks "$pid")
        v0=$(switches "$pid")
        load "$port" "$P" "$N" $((r + 10)) "$CMD"
        after=$(cpu_ns "$pid")
        read -r u1 s1 < <(ticks "$pid")
        v1=$(switches "$pid")
        echo "$name $r $(((after - before) / N)) $(((u1 - u0) * 1000000000 / HZ / N))" \
            "$(((s1 - s0) * 1000000000 / HZ / N)) $(((v1 - v0) * 1000 / N))"
    done
done >"$WORK/rounds"
python3 - "$WORK/rounds" <<'EOF'
import statistics as st
import sys

by = {}
split = {}
for line in open(sys.argv[1]):
    name, rnd, ns, user, system, sw = line.split()
    by.setdefault(name, {})[int(rnd)] = int(ns)
    split.setdefault(name, []).append((int(user), int(system), int(sw)))
for name in sorted(by):
    v = list(by[name].values())
    print("%s: server CPU ns per request, median %d [%d-%d]" % (name, st.median(v), min(v), max(v)))
for name in sorted(split):
    user, system, sw = zip(*split[name])
    print("%s: medians per request: user %d ns, kernel %d ns; %d voluntary switches per 1,000"
          % (name, st.median(user), st.median(system), st.median(sw)))
rounds = sorted(by["A"])
ratio = [by["B"][r] / by["A"][r] for r in rounds]
print("B/A per round: median %.3f [%.3f-%.3f], B below A in %d of %d rounds"
      % (st.median(ratio), min(ratio), max(ratio), sum(x < 1 for x in ratio), len(ratio)))
if "R" in by:
    for name in "AB":
        x = [by["R"][r] / by[name][r] for r in rounds]
        print("redis/%s (ops per server CPU-second, %s over redis): median %.2f [%.2f-%.2f]"
              % (name, name, st.median(x), min(x), max(x)))
EOF
