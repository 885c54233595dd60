#!/usr/bin/env bash
# Edits inside a long list (LSET, LINSERT, LREM, LTRIM) and a capped list (LPUSH then
# LTRIM to 1,000 elements), hotkv-server against redis-server in alternating rounds;
# prints each round and the median requests/s per server and test.
#   ROUNDS=3 LENGTH=200000 REQUESTS=2000 HOTKV_ENGINE=lsm bash scripts/bench-list-edits.sh
# Before each round the list is rebuilt: LENGTH elements of 10 bytes. LSET writes its
# middle; LINSERT puts an element before the middle one (a pivot found halfway
# through the list); LREM 1 removes one element from the middle, then finds none;
# LTRIM 1 -2 cuts an element at each end. HOTKV_ENGINE and HOTKV_BASE_BIN as in
# scripts/bench-redis.sh (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
LENGTH=${LENGTH:-200000}
REQUESTS=${REQUESTS:-2000}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
out=$(mktemp)
mid=$((LENGTH / 2))
for r in $(seq "$ROUNDS"); do
  for s in $(round_order "$r"); do
    name=${s%%:*}; port=${s##*:}
    bench() { # bench TEST COMMAND...: one redis-benchmark run of COMMAND, as TEST
      local test=$1; shift
      redis-benchmark -p "$port" -c 10 -n "$REQUESTS" -q "$@" 2>/dev/null | tr '\r' '\n' |
        awk -v n="$name" -v t="$test" -v r="$r" '/requests per second/ {split($0, a, ": "); split(a[2], w, " "); print n, "P1", t, r, w[1]}' | tee -a "$out"
    }
    redis-cli -p "$port" flushall >/dev/null
    redis-benchmark -p "$port" -c 10 -n "$LENGTH" -P 100 -q rpush big element-0 >/dev/null 2>&1
    redis-cli -p "$port" lset big "$mid" pivot >/dev/null
    bench LSET lset big "$((mid + 1))" changed
    bench LINSERT linsert big before pivot inserted
    redis-cli -p "$port" lset big "$((mid + 10))" once >/dev/null
    bench LREM lrem big 1 once
    bench LTRIM ltrim big 1 -2
    redis-cli -p "$port" del big >/dev/null
    bench LPUSH_LTRIM_1000 eval "redis.call('lpush', KEYS[1], ARGV[1]); return redis.call('ltrim', KEYS[1], 0, 999)" 1 capped element-0
  done
done
print_medians "$out"
