#!/bin/bash
# A/B of two larder builds on the costs that hang off the change feed, interleaved rounds (the
# order alternates): server CPU-µs per SET (from /proc/PID/stat) with
#   log       appendonly yes, appendfsync everysec, automatic rewrites off (the log's own cost;
#             256-byte values over 100,000 keys, 50 clients, pipeline 16, 2M SETs)
#   log-rw    the same with the automatic rewrites on (Redis's defaults)
#   repl1     a master with one larder replica, and the replica's CPU-µs per applied SET
#             (32-byte values over 100,000 keys, 50 clients, pipeline 16, 1M SETs)
#   repl2     the same with two replicas
#   repl0     the master alone (the baseline the ratios of issue 17 take)
#   rewrite   server CPU-ms per BGREWRITEAOF (a snapshot and a new log) of 100,000 keys of
#             256-byte values, 10 in a row, no other load
# usage: bench/feed_ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [CELLS]   (CELLS: comma-separated)
# Needs the datatype benchmark's generator (built on first use) and redis-cli.
set -u
OLD=${1:?old binary}; NEW=${2:?new binary}; ROUNDS=${3:-4}; CELLS=${4:-log,repl1}
HERE=$(cd "$(dirname "$0")" && pwd)
DTGEN=$(cd "$HERE" && python3 -c 'from datatype_compare import build_dtgen; print(build_dtgen())') || exit 1
DATA=$(mktemp -d /tmp/feed_ab.XXXXXX); trap 'rm -rf "$DATA"' EXIT
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
ticks=$(getconf CLK_TCK)

start() { # bin port dir args... ; prints the pid
  local bin=$1 port=$2 dir=$3; shift 3
  mkdir -p "$dir"
  "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir" --memcached-port 0 --http-port 0 "$@" \
    >"$dir/log" 2>&1 &
  echo $!
}
up() { for _ in $(seq 1 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.05; done; }

log_cell() { # bin port rewrite(0|100)
  local pid; pid=$(start "$1" "$2" "$DATA/$2" --appendonly yes --appendfsync everysec --save "" \
    --auto-aof-rewrite-percentage "$3"); up "$2"
  local v; v=$(printf 'x%.0s' $(seq 1 256))
  "$DTGEN" run 127.0.0.1 "$2" 50 16 200000 1 SET 'key:{100000:12}' "$v" >/dev/null
  local t0; t0=$(cpu "$pid")
  "$DTGEN" run 127.0.0.1 "$2" 50 16 2000000 2 SET 'key:{100000:12}' "$v" >/dev/null
  local t1; t1=$(cpu "$pid")
  redis-cli -p "$2" shutdown nosave >/dev/null 2>&1; wait "$pid" 2>/dev/null; rm -rf "$DATA/$2"
  echo "master_us_per_set=$(echo "($t1-$t0)*1000000/$ticks/2000000" | bc -l | cut -c1-5)"
}

repl_cell() { # bin port replicas
  local pid reps=() q; pid=$(start "$1" "$2" "$DATA/$2" --appendonly no --save ""); up "$2"
  for i in $(seq 1 "$3"); do
    q=$(start "$1" $(($2 + i)) "$DATA/$(($2 + i))" --appendonly no --save ""); reps+=("$q")
    up $(($2 + i)); redis-cli -p $(($2 + i)) replicaof 127.0.0.1 "$2" >/dev/null
  done
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$2" info replication | grep -c state=online)" = "$3" ] && break; sleep 0.1
  done
  "$DTGEN" run 127.0.0.1 "$2" 50 16 200000 1 SET 'key:{100000:12}' 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >/dev/null
  sleep 0.5
  local t0 r0=0 t1 r1=0; t0=$(cpu "$pid"); for q in "${reps[@]}"; do r0=$((r0 + $(cpu "$q"))); done
  "$DTGEN" run 127.0.0.1 "$2" 50 16 1000000 2 SET 'key:{100000:12}' 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' >/dev/null
  t1=$(cpu "$pid")
  # The replicas finish applying what was sent before their CPU is read.
  local want; want=$(redis-cli -p "$2" info replication | tr -d '\r' | sed -n 's/^master_repl_offset://p')
  for i in $(seq 1 "$3"); do
    for _ in $(seq 1 100); do
      [ "$(redis-cli -p $(($2 + i)) info replication | tr -d '\r' | sed -n 's/^slave_repl_offset://p')" = "$want" ] && break
      sleep 0.05
    done
  done
  for q in "${reps[@]}"; do r1=$((r1 + $(cpu "$q"))); done
  for i in $(seq 1 "$3"); do redis-cli -p $(($2 + i)) shutdown nosave >/dev/null 2>&1; done
  redis-cli -p "$2" shutdown nosave >/dev/null 2>&1; wait 2>/dev/null; rm -rf "$DATA"/*
  local per=""; [ "$3" -gt 0 ] && per=" replica_us_per_set=$(echo "($r1-$r0)*1000000/$ticks/1000000/$3" | bc -l | cut -c1-5)"
  echo "master_us_per_set=$(echo "($t1-$t0)*1000000/$ticks/1000000" | bc -l | cut -c1-5)$per"
}

rewrite_cell() { # bin port
  local pid; pid=$(start "$1" "$2" "$DATA/$2" --appendonly yes --appendfsync everysec --save "" \
    --auto-aof-rewrite-percentage 0); up "$2"
  local v; v=$(printf 'x%.0s' $(seq 1 256))
  "$DTGEN" run 127.0.0.1 "$2" 50 16 400000 1 SET 'key:{100000:12}' "$v" >/dev/null
  rewrite_once() {
    local n; n=$(redis-cli -p "$2" info persistence | tr -d '\r' | sed -n 's/^aof_rewrites://p')
    redis-cli -p "$2" bgrewriteaof >/dev/null
    for _ in $(seq 1 3000); do
      [ "$(redis-cli -p "$2" info persistence | tr -d '\r' | sed -n 's/^aof_rewrites://p')" != "$n" ] && return
      sleep 0.01
    done
  }
  rewrite_once "$@"  # the first one also drops the prefill's log
  local t0; t0=$(cpu "$pid")
  for _ in $(seq 1 10); do rewrite_once "$@"; done
  local t1; t1=$(cpu "$pid")
  redis-cli -p "$2" shutdown nosave >/dev/null 2>&1; wait "$pid" 2>/dev/null; rm -rf "$DATA/$2"
  echo "ms_per_rewrite=$(echo "($t1-$t0)*1000/$ticks/10" | bc -l | cut -c1-5)"
}

cell() { # bin port cell
  case $3 in
    log) log_cell "$1" "$2" 0 ;;
    log-rw) log_cell "$1" "$2" 100 ;;
    repl0) repl_cell "$1" "$2" 0 ;;
    repl1) repl_cell "$1" "$2" 1 ;;
    repl2) repl_cell "$1" "$2" 2 ;;
    rewrite) rewrite_cell "$1" "$2" ;;
    *) echo "unknown cell $3" >&2; exit 2 ;;
  esac
}

echo "# $(date -u '+%F %T') UTC, $(nproc) CPUs, old=$OLD new=$NEW"
for r in $(seq 1 "$ROUNDS"); do
  for c in ${CELLS//,/ }; do
    if [ $((r % 2)) = 1 ]; then
      echo "round $r $c old $(cell "$OLD" 7431 "$c")"; echo "round $r $c new $(cell "$NEW" 7441 "$c")"
    else
      echo "round $r $c new $(cell "$NEW" 7441 "$c")"; echo "round $r $c old $(cell "$OLD" 7431 "$c")"
    fi
  done
done
