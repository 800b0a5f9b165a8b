#!/usr/bin/env bash
# User-space instructions per SET on a master with 0, 1 or 2 replicas of its own kind, larder
# and redis-server side by side, under valgrind's callgrind (issue 17's master CPU per write,
# counted where timings on a shared 2-vCPU machine cannot resolve a few percent). Only the
# master runs under callgrind; its replicas run natively. The counts leave out the kernel
# (sending the stream to a replica), so bench/repl_compare.py stays the measure of the target.
#
#   bench/repl_callgrind.sh [LARDER_BIN] [REPLICAS] [REQUESTS]
#
# REPLICAS: a comma-separated list of replica counts (default 0,1); REQUESTS (default
# 100,000) SETs of 32-byte values over 100,000 keys from 50 connections at pipeline 16
# (bench/dtgen.c), counted after 50,000 to warm up with every replica online. larder runs
# with one I/O thread (callgrind runs one thread at a time anyway). SERVERS=larder or
# SERVERS=redis runs one of them. MEASURE=replica counts the first replica instead (per SET
# it applies; the master and any other replica run natively, and counting stops once the
# replica has caught up). KEEP=<dir> copies each counted server's callgrind files there (as
# <kind>-<replicas>.cg.<pid>) for callgrind_annotate. Needs valgrind, redis-server and
# redis-cli.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LARDER=${1:-$ROOT/target/release/larder}
REPLICAS=${2:-0,1}
REQS=${3:-100000}
SERVERS=${SERVERS:-larder,redis}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

for tool in valgrind callgrind_control callgrind_annotate redis-server redis-cli cc; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
cc -O2 -o "$WORK/dtgen" "$ROOT/bench/dtgen.c" -lm

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

up() {
    for _ in $(seq 300); do
        redis-cli -p "$1" ping >/dev/null 2>&1 && return
        sleep 0.2
    done
    echo "server on port $1 did not start" >&2
    exit 1
}

# A server of kind $1 on port $2 in directory $3; the rest of the arguments go before it
# (valgrind and its options, or nothing).
server() {
    local kind=$1 port=$2 dir=$3
    shift 3
    mkdir -p "$dir"
    local cmd
    case $kind in
    larder) cmd=("$LARDER" --port "$port" --bind 127.0.0.1 --dir "$dir" --memcached-port 0
        --http-port 0 --appendonly no --save "" --threads 1) ;;
    redis) cmd=(redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save ""
        --appendonly no) ;;
    esac
    "$@" "${cmd[@]}" >"$dir/log" 2>&1 &
    PIDS+=($!)
}

load() {
    "$WORK/dtgen" run 127.0.0.1 "$1" 50 16 "$2" "$3" SET 'key:{100000:12}' \
        xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx >/dev/null
}

field() { # port section name
    redis-cli -p "$1" info "$2" | tr -d '\r' | sed -n "s/^$3://p"
}

# Waits until the replica on port $2 has applied the stream of the master on port $1.
caught_up() {
    local want
    want=$(field "$1" replication master_repl_offset)
    for _ in $(seq 3000); do
        # At or past it: the master's pings go on meanwhile.
        (($(field "$2" replication slave_repl_offset) >= want)) && return
        sleep 0.1
    done
    echo "the replica on port $2 did not catch up (at $(field "$2" replication slave_repl_offset) of $want)" >&2
    exit 1
}

# Prints the instructions per SET of the master (or with MEASURE=replica, of the first
# replica): $1 the kind, $2 how many replicas.
measure() {
    local kind=$1 n=$2 port dir="$WORK/$1-$2" replica_ports=() p counted
    local grind=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/counted.cg.%p")
    port=$(free_port)
    if [[ $MEASURE == master ]]; then
        server "$kind" "$port" "$dir/master" "${grind[@]}"
        counted=${PIDS[-1]}
    else
        server "$kind" "$port" "$dir/master"
    fi
    local master=${PIDS[-1]}
    up "$port"
    for i in $(seq 1 "$n"); do
        p=$(free_port)
        if [[ $MEASURE == replica && $i == 1 ]]; then
            server "$kind" "$p" "$dir/replica$i" "${grind[@]}"
            counted=${PIDS[-1]}
        else
            server "$kind" "$p" "$dir/replica$i"
        fi
        replica_ports+=("$p")
        up "$p"
        redis-cli -p "$p" replicaof 127.0.0.1 "$port" >/dev/null
    done
    for _ in $(seq 600); do
        [[ $(redis-cli -p "$port" info replication | grep -c 'state=online') == "$n" ]] && break
        sleep 0.2
    done
    load "$port" 50000 1
    [[ $MEASURE == replica ]] && caught_up "$port" "${replica_ports[0]}"
    callgrind_control -i on "$counted" >/dev/null
    load "$port" "$REQS" 2
    [[ $MEASURE == replica ]] && caught_up "$port" "${replica_ports[0]}"
    callgrind_control -i off "$counted" >/dev/null
    callgrind_control -d "$counted" >/dev/null
    sleep 1
    for p in "${replica_ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    kill "$master"
    wait 2>/dev/null || true
    if [[ -n ${KEEP:-} ]]; then
        mkdir -p "$KEEP"
        for f in "$dir"/counted.cg.*; do cp "$f" "$KEEP/$kind-$n.cg.${f##*.cg.}"; done
    fi
    local total
    # The dump asked for and the one at exit: the larger holds the measured requests.
    total=$(for f in "$dir"/counted.cg.*; do callgrind_annotate "$f" 2>/dev/null || true; done |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0 } END { printf "%.0f\n", max }')
    printf '%-7s %d replica(s) %12d instructions  %7d per SET\n' "$kind" "$n" "$total" $((total / REQS))
}

MEASURE=${MEASURE:-master}
case $MEASURE in
master) ;;
replica) REPLICAS=$(echo "${REPLICAS//,/ }" | tr ' ' '\n' | awk '$1 > 0' | paste -sd, -) ;;
*) echo "MEASURE is master or replica" >&2; exit 2 ;;
esac
echo "SET of 32-byte values, 50 connections at pipeline 16, $REQS requests counted on the $MEASURE"
for kind in ${SERVERS//,/ }; do
    for n in ${REPLICAS//,/ }; do
        measure "$kind" "$n"
    done
done
