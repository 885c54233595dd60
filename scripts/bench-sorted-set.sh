#!/usr/bin/env bash
# Large sorted sets, hotkv-server against redis-server in alternating rounds; prints
# each round and the median requests/s per server and command. WORKLOAD picks one:
# - leaderboard (default): a sorted set filled by 100,000 random ZADDs (~63,000
#   members, past Redis's listpack limits, so split into nodes in hotkv), then lookups,
#   ranks, pages, score increments, random picks and a scan's first page on it;
# - geo: a GEO index of ~63,000 points in a 10-degree square (0-10 E, 0-10 N, about
#   5 a 100 km2), then positions, distances, searches by radius and by box, and more
#   points;
# - lex: a sorted set of ~63,000 members of one score (as for autocompletion), then
#   ranges and counts by member, and a ZRANGESTORE of a page of it.
#   ROUNDS=3 REQUESTS=50000 [WORKLOAD=geo] bash scripts/bench-sorted-set.sh
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-50000}
WORKLOAD=${WORKLOAD:-leaderboard}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
case "$WORKLOAD" in
  leaderboard)
    fill="ZADD lb __rand_int__ m:__rand_int__"
    commands=(
      "ZSCORE lb m:__rand_int__"
      "ZRANK lb m:__rand_int__"
      "ZCOUNT lb __rand_int__ +inf"
      "ZRANGEBYSCORE lb __rand_int__ +inf LIMIT 0 10"
      "ZREVRANGE lb 0 9 WITHSCORES"
      "ZINCRBY lb 1 m:__rand_int__"
      "ZRANDMEMBER lb 5 WITHSCORES"
      "ZSCAN lb 0 COUNT 10"
    ) ;;
  geo)
    # -r makes each __rand_int__ its own 12 digits: 000000012345e-4 is 1.2345 degrees.
    fill="GEOADD geo __rand_int__e-4 __rand_int__e-4 m:__rand_int__"
    commands=(
      "GEOPOS geo m:__rand_int__"
      "GEODIST geo m:__rand_int__ m:__rand_int__ km"
      "GEOSEARCH geo FROMLONLAT 5 5 BYRADIUS 20 km ASC COUNT 10 WITHDIST"
      "GEOSEARCH geo FROMLONLAT __rand_int__e-4 __rand_int__e-4 BYBOX 50 50 km"
      "$fill"
    ) ;;
  lex)
    fill="ZADD lex 0 m:__rand_int__"
    commands=(
      "ZRANGEBYLEX lex [m:__rand_int__ + LIMIT 0 10"
      "ZREVRANGEBYLEX lex + [m:__rand_int__ LIMIT 0 10"
      "ZLEXCOUNT lex [m:__rand_int__ +"
      "ZRANGESTORE page lex [m:__rand_int__ + BYLEX LIMIT 0 10"
    ) ;;
  *) echo "WORKLOAD is leaderboard, geo or lex, not $WORKLOAD" >&2; exit 2 ;;
esac
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
bench() { redis-benchmark -p "$1" -c 50 -r 100000 -q "${@:2}" 2>/dev/null | tr '\r' '\n'; }
for port in "$REDIS_PORT" "$HOTKV_PORT"; do
  # shellcheck disable=SC2086 # the command's words are redis-benchmark's arguments
  bench "$port" -n 100000 $fill >/dev/null
done
out=$(mktemp)
for command in "${commands[@]}"; do
  test=${command// /_}
  for r in $(seq "$ROUNDS"); do
    order=$(round_order "$r")
    for s in $order; do
      name=${s%%:*}; port=${s##*:}
      # shellcheck disable=SC2086 # the command's words are redis-benchmark's arguments
      bench "$port" -n "$REQUESTS" $command |
        awk -v n="$name" -v t="$test" -v r="$r" '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print n, "P1", t, r, $(i - 1)}' | tee -a "$out"
    done
  done
done
print_medians "$out"
