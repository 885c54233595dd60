#!/usr/bin/env bash
# A leaderboard: a sorted set filled by 100,000 random ZADDs (~63,000 members, past
# Redis's listpack limits, so split into nodes in hotkv), then lookups, ranks, pages
# and score increments on it, hotkv-server against redis-server in alternating rounds;
# prints each round and the median requests/s per server and command.
#   ROUNDS=3 REQUESTS=50000 bash scripts/bench-sorted-set.sh
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-50000}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
bench() { redis-benchmark -p "$1" -c 50 -r 100000 -q "${@:2}" 2>/dev/null | tr '\r' '\n'; }
for port in "$REDIS_PORT" "$HOTKV_PORT"; do
  bench "$port" -n 100000 ZADD lb __rand_int__ m:__rand_int__ >/dev/null
done
commands=(
  "ZSCORE lb m:__rand_int__"
  "ZRANK lb m:__rand_int__"
  "ZCOUNT lb __rand_int__ +inf"
  "ZRANGEBYSCORE lb __rand_int__ +inf LIMIT 0 10"
  "ZREVRANGE lb 0 9 WITHSCORES"
  "ZINCRBY lb 1 m:__rand_int__"
)
out=$(mktemp)
for command in "${commands[@]}"; do
  test=${command// /_}
  for r in $(seq "$ROUNDS"); do
    if (( r % 2 )); then order="redis:$REDIS_PORT hotkv:$HOTKV_PORT"; else order="hotkv:$HOTKV_PORT redis:$REDIS_PORT"; fi
    for s in $order; do
      name=${s%%:*}; port=${s##*:}
      # shellcheck disable=SC2086 # the command's words are redis-benchmark's arguments
      bench "$port" -n "$REQUESTS" $command |
        awk -v n="$name" -v t="$test" -v r="$r" '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print n, "P1", t, r, $(i - 1)}' | tee -a "$out"
    done
  done
done
print_medians "$out"
