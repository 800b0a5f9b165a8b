#!/bin/bash
# A/B of two larder builds, interleaved (5 rounds, SET and GET, redis-benchmark -P 16 -c 50);
# server CPU-µs per op from /proc/PID/stat.
# usage: bench/writepath_ab.sh OLD_BINARY NEW_BINARY (two builds of larder, e.g. before and after a change)
OLD=${1:?old binary}; NEW=${2:?new binary}
run() { # bin port test
  $1 --port $2 --memcached-port 0 --http-port 0 --appendonly no --save "" >/dev/null 2>&1 & pid=$!; sleep 0.4
  redis-benchmark -p $2 -t $3 -n 300000 -P 16 -c 50 -r 100000 -d 32 -q >/dev/null 2>&1 # warm
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  redis-benchmark -p $2 -t $3 -n 3000000 -P 16 -c 50 -r 100000 -d 32 -q 2>/dev/null | tr '\r' '\n' | grep -v '^$' | tail -1 >/tmp/ab.rb
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  kill $pid; wait $pid 2>/dev/null
  echo "$1 $3 cpu_us_per_op=$(echo "($t1-$t0)*10000/3000000" | bc -l | cut -c1-6) $(cat /tmp/ab.rb)"
}
for r in 1 2 3 4 5 6 7; do
  for t in set get; do
    if [ $((r%2)) = 1 ]; then run $OLD 7401 $t; run $NEW 7402 $t; else run $NEW 7402 $t; run $OLD 7401 $t; fi
  done
done
