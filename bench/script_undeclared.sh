#!/bin/bash
# usage: bench/script_undeclared.sh [LARDER_BINARY]   (3 rounds, redis-benchmark -P 16 -c 50, 10,000 keys)
# CPU µs per EVALSHA: INCR of a declared key vs the same key passed undeclared (runs with its db locked)
BIN=${1:-target/release/larder}
$BIN --port 7410 --memcached-port 0 --http-port 0 --appendonly no --save "" >/dev/null 2>&1 & pid=$!; sleep 0.5
D=$(redis-cli -p 7410 script load "return redis.call('INCR', KEYS[1])")
U=$(redis-cli -p 7410 script load "return redis.call('INCR', ARGV[1])")
run() { # label args...
  redis-benchmark -p 7410 -n 200000 -P 16 -c 50 -r 10000 -q "$@" >/dev/null 2>&1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  redis-benchmark -p 7410 -n 1000000 -P 16 -c 50 -r 10000 -q "$@" 2>/dev/null | tr '\r' '\n' | grep -v '^$' | tail -1 > /tmp/u.rb
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  echo "$LABEL cpu_us_per_op=$(echo "($t1-$t0)*10000/1000000" | bc -l | cut -c1-5) $(grep -o 'requests per second' /tmp/u.rb >/dev/null && awk '{for(i=1;i<=NF;i++) if($i=="requests") print $(i-1)}' /tmp/u.rb)"
}
for r in 1 2 3; do
  LABEL=declared run EVALSHA $D 1 k:__rand_int__
  LABEL=undeclared run EVALSHA $U 0 k:__rand_int__
done
kill $pid
