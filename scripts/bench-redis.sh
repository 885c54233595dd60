#!/usr/bin/env bash
# hotkv-server against redis-server under redis-benchmark, in alternating rounds;
# prints each round and the median requests/s per server and test.
#   ROUNDS=3 REQUESTS=1000000 CLIENTS=50 PIPELINES="1 16" THREADS=1 TESTS=set,get bash scripts/bench-redis.sh
# TESTS is redis-benchmark's -t; TESTS=default runs its default list (PING to MSET, with
# the list, set, hash and sorted-set tests).
# THREADS is redis-benchmark's --threads (its default is 1). By default both servers
# keep data in memory only; HOTKV_ENGINE=lsm compares hotkv's LSM engine with Redis's
# append-only file, both syncing once a second (see scripts/servers.sh). KEYSPACE=N
# spreads the keys over N random ones (redis-benchmark's -r); without it every SET and
# GET goes to one key. HOTKV_BASE_BIN=path/to/hotkv-server also measures that build in
# the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-1000000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
THREADS=${THREADS:-1}
TESTS=${TESTS:-set,get}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
out=$(mktemp)
for P in $PIPELINES; do
  for r in $(seq "$ROUNDS"); do
    # Alternate which server goes first.
    order=$(round_order "$r")
    for s in $order; do
      name=${s%%:*}; port=${s##*:}
      tests=(-t "$TESTS"); [ "$TESTS" = default ] && tests=()
      redis-cli -p "$port" flushall >/dev/null
      redis-benchmark -p "$port" "${tests[@]}" -c "$CLIENTS" -n "$REQUESTS" -P "$P" --threads "$THREADS" ${KEYSPACE:+-r "$KEYSPACE"} -q 2>/dev/null | tr '\r' '\n' |
        awk -F': ' -v n="$name" -v p="$P" -v r="$r" '/requests per second/ {t=$1; gsub(/ /, "_", t); split($2, w, " "); print n, "P" p, t, r, w[1]}' | tee -a "$out"
    done
  done
done
print_medians "$out"
