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
# It also prints the load generator's busy share: redis-benchmark's CPU time (user +
# system) over its wall time and threads, median per server and pipeline depth. A
# client busy all the time is the limit, not the server: with a share of S against
# redis-server, no server could be measured above 1/S times Redis's rate.
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
busy=$(mktemp)
result=$(mktemp)
TIMEFORMAT='%U %S %R'
for P in $PIPELINES; do
  for r in $(seq "$ROUNDS"); do
    # Alternate which server goes first.
    order=$(round_order "$r")
    for s in $order; do
      name=${s%%:*}; port=${s##*:}
      tests=(-t "$TESTS"); [ "$TESTS" = default ] && tests=()
      redis-cli -p "$port" flushall >/dev/null
      # bash's `time` reports the CPU of the children it waited for: redis-benchmark's.
      { time redis-benchmark -p "$port" "${tests[@]}" -c "$CLIENTS" -n "$REQUESTS" -P "$P" --threads "$THREADS" ${KEYSPACE:+-r "$KEYSPACE"} -q >"$result" 2>/dev/null; } 2>"$result.time"
      read -r user system wall <"$result.time"
      echo "$name P$P $user $system $wall" >>"$busy"
      tr '\r' '\n' <"$result" |
        awk -F': ' -v n="$name" -v p="$P" -v r="$r" '/requests per second/ {t=$1; gsub(/ /, "_", t); split($2, w, " "); print n, "P" p, t, r, w[1]}' | tee -a "$out"
    done
  done
done
print_medians "$out"
echo "load generator's busy share (CPU / (wall x threads)), median:"
python3 - "$busy" "$THREADS" <<'PY'
import sys, statistics, collections
shares = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, p, user, system, wall = line.split()
    shares[(p, name)].append((float(user) + float(system)) / (float(wall) * int(sys.argv[2])))
for p in sorted({p for p, _ in shares}):
    line = f"-P {p[1:]}: " + "  ".join(f"{n} {statistics.median(shares[(p, n)]):.0%}" for q, n in sorted(shares) if q == p)
    if shares[(p, "redis")]:
        line += f"  (no server could pass {1 / statistics.median(shares[(p, 'redis')]):.2f}x Redis's rate)"
    print(line)
PY
rm -f "$busy" "$result" "$result.time"
