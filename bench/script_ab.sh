#!/usr/bin/env bash
# A/B of two larder builds on the script path, interleaved rounds (which build goes first
# alternates): server CPU-µs per EVALSHA, user space and kernel apart (from /proc/PID/stat),
# for `redis.call('GET', KEYS[1]) return redis.call('INCR', KEYS[1])` on g:{10000} from 50
# connections (bench/scriptgen.c), REQUESTS requests after 100,000 to warm up, one worker
# thread. BODY=<lua> runs another one-key script.
#
#   bench/script_ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [PIPELINE] [REQUESTS]
#
# Prints one line per run and, at the end, per build: median [min–max] of user, system and
# their sum, and the per-round NEW ÷ OLD ratio of the sum.
set -euo pipefail

OLD=${1:?old binary}
NEW=${2:?new binary}
ROUNDS=${3:-6}
PIPE=${4:-16}
REQS=${5:-1000000}
BODY=${BODY:-$'redis.call(\'GET\', KEYS[1])\nreturn redis.call(\'INCR\', KEYS[1])'}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/scriptgen" "$ROOT/bench/scriptgen.c"
TICKS=$(getconf CLK_TCK)

# One run: $1 label, $2 binary; prints "label user_us sys_us".
run() {
    local port pid sha
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$2" --port "$port" --bind 127.0.0.1 --memcached-port 0 --http-port 0 --appendonly no \
        --save "" --threads 1 >"$WORK/$1.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.05
    done
    sha=$(redis-cli -p "$port" script load "$BODY")
    "$WORK/scriptgen" 127.0.0.1 "$port" 50 "$PIPE" 100000 0 1 EVALSHA "$sha" 1 'g:{10000}' >/dev/null
    local before after
    before=$(awk '{print $14, $15}' "/proc/$pid/stat")
    "$WORK/scriptgen" 127.0.0.1 "$port" 50 "$PIPE" "$REQS" 0 2 EVALSHA "$sha" 1 'g:{10000}' >/dev/null
    after=$(awk '{print $14, $15}' "/proc/$pid/stat")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$1 $before $after" | awk -v n="$REQS" -v t="$TICKS" \
        '{ printf "%s %.3f %.3f\n", $1, ($4 - $2) * 1e6 / t / n, ($5 - $3) * 1e6 / t / n }'
}

echo "EVALSHA at pipeline $PIPE, $REQS requests a run, $ROUNDS rounds; script: ${BODY//$'\n'/ }"
for r in $(seq "$ROUNDS"); do
    if ((r % 2)); then
        run old "$OLD" | tee -a "$WORK/runs"
        run new "$NEW" | tee -a "$WORK/runs"
    else
        run new "$NEW" | tee -a "$WORK/runs"
        run old "$OLD" | tee -a "$WORK/runs"
    fi
done
python3 - "$WORK/runs" <<'EOF'
import statistics, sys
runs = {"old": [], "new": []}
for line in open(sys.argv[1]):
    label, user, system = line.split()
    runs[label].append((float(user), float(system)))
def cell(vs):
    return "%.2f [%.2f–%.2f]" % (statistics.median(vs), min(vs), max(vs))
for label, rs in runs.items():
    print("%s: user %s, system %s, total %s µs per request" % (
        label, cell([u for u, _ in rs]), cell([s for _, s in rs]), cell([u + s for u, s in rs])))
ratios = [(n[0] + n[1]) / (o[0] + o[1]) for o, n in zip(runs["old"], runs["new"])]
print("new ÷ old, per round: %s; median %.3f" % (
    " ".join("%.3f" % r for r in ratios), statistics.median(ratios)))
EOF
