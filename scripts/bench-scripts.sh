#!/usr/bin/env bash
# Lua on the server, hotkv-server against redis-server in alternating rounds: 50
# clients run a counter increment through EVALSHA and through FCALL (each reads a key,
# then writes it: `INCR` through `redis.call`), REQUESTS each, pipelined PIPELINE
# deep; prints each round and the median calls/s per server. A script runs alone in
# both servers, so this is the cost of one call: parsing, the interpreter, the command.
#   ROUNDS=3 REQUESTS=200000 PIPELINE=1 bash scripts/bench-scripts.sh
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh);
# HOTKV_BASE_BIN=path/to/hotkv-server also measures that build in the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
PIPELINE=${PIPELINE:-1}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
script="return redis.call('INCR', KEYS[1])"
library="#!lua name=bench
redis.register_function('incr', function(keys) return redis.call('INCR', keys[1]) end)"
for port in "$REDIS_PORT" "$HOTKV_PORT" $BASE_PORT; do
  redis-cli -p "$port" function load replace "$library" >/dev/null
done
sha=$(redis-cli -p "$REDIS_PORT" script load "$script")
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
  order=$(round_order "$r")
  for s in $order; do
    name=${s%%:*}; port=${s##*:}
    redis-cli -p "$port" script load "$script" >/dev/null
    for call in "EVALSHA $sha 1 counter" "FCALL incr 1 counter"; do
      # shellcheck disable=SC2086 # the call is words
      redis-benchmark -p "$port" -c 50 -n "$REQUESTS" -P "$PIPELINE" -q $call </dev/null 2>/dev/null |
        tr '\r' '\n' |
        awk -v n="$name" -v r="$r" -v p="$PIPELINE" -v t="${call%% *}_INCR" '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print n, "P" p, t, r, $(i - 1)}' |
        tee -a "$out"
    done
  done
done
print_medians "$out"
