#!/usr/bin/env bash
# Writes at the memory limit: hotkv-server and redis-server (and HOTKV_BASE_BIN, an
# earlier build, if set) with maxmemory MAXMEMORY (default 20mb) and allkeys-lru, filled
# past it, then ROUNDS (default 3) alternating rounds of redis-benchmark SET of random
# keys (-r 1000000, -d 100, -P 16). Prints each round's requests/s and median latency,
# then per server the keys it keeps within the limit and its used_memory.
#   [HOTKV_BASE_BIN=old/hotkv-server] bash scripts/bench-eviction.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REDIS_PORT=6421 HOTKV_PORT=6422 BASE_PORT=${HOTKV_BASE_BIN:+6423}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
rounds=${ROUNDS:-3}
results=$(mktemp)
for s in $(round_order 1); do
    port=${s##*:}
    redis-cli -p "$port" config set maxmemory "${MAXMEMORY:-20mb}" >/dev/null
    redis-cli -p "$port" config set maxmemory-policy allkeys-lru >/dev/null
    redis-benchmark -p "$port" -t set -r 1000000 -n 300000 -d 100 -P 16 -q >/dev/null 2>&1
done
for round in $(seq "$rounds"); do
    for s in $(round_order "$round"); do
        name=${s%%:*}; port=${s##*:}
        line=$(redis-benchmark -p "$port" -t set -r 1000000 -n 1000000 -d 100 -P 16 -q 2>&1 |
            tr '\r' '\n' | grep "requests per second" | tail -1)
        rps=$(sed -E 's/.*SET: ([0-9.]+) requests.*/\1/' <<< "$line")
        echo "$name round $round: $line"
        echo "$name P16 set $round $rps" >> "$results"
    done
done
print_medians "$results"
for s in $(round_order 1); do
    name=${s%%:*}; port=${s##*:}
    used=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}')
    echo "$name: keys $(redis-cli -p "$port" dbsize) used_memory $used evicted $(redis-cli -p "$port" info stats | tr -d '\r' | awk -F: '/^evicted_keys:/ {print $2}')"
done
rm -f "$results"
