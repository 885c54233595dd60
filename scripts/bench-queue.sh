#!/usr/bin/env bash
# A list used as a job queue, hotkv-server against redis-server in alternating
# rounds: CONSUMERS clients loop on BLPOP (redis-benchmark, 1 s timeout) while 40
# producers push REQUESTS jobs with LPUSH; prints each round and the median pushes/s
# per server. Each push that finds a consumer waiting wakes it, and its reply waits
# for that consumer's pop, as in Redis (see blocked_keys.rs).
#   ROUNDS=3 REQUESTS=200000 CONSUMERS=10 bash scripts/bench-queue.sh
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CONSUMERS=${CONSUMERS:-10}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
  order=$(round_order "$r")
  for s in $order; do
    name=${s%%:*}; port=${s##*:}
    redis-cli -p "$port" del queue >/dev/null
    redis-benchmark -p "$port" -c "$CONSUMERS" -n "$REQUESTS" -q BLPOP queue 1 \
      </dev/null >/dev/null 2>&1 &
    consumers=$!
    redis-benchmark -p "$port" -c 40 -n "$REQUESTS" -q LPUSH queue job </dev/null 2>/dev/null |
      tr '\r' '\n' |
      awk -v n="$name" -v r="$r" '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print n, "P1", "LPUSH_with_blocked_consumers", r, $(i - 1)}' |
      tee -a "$out"
    wait "$consumers" || true
  done
done
print_medians "$out"
