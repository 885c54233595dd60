#!/usr/bin/env bash
# Seconds each server takes to answer N requests of the seeded sequence
# (scripts/seeded_requests.py) over one connection (`redis-cli --pipe`), after FILL
# requests of it not timed: a write into a collection of a million members, the same
# collection and writes for every build. Servers alternate round by round, each started
# alone on an empty keyspace. Prints each round's seconds and each server's median
# against the first's (first / this: above 1 is faster than the first).
#
#   ROUNDS=3 FILL=1000000 N=200000 TEST=zadd R=1000000 \
#       bash scripts/server-time-seeded.sh SERVER [SERVER...]
#
# A SERVER is a hotkv-server binary (run as --engine memory) or `redis` (redis-server
# with no persistence). TEST is one of set, get, hset, sadd, zadd; R the numbers drawn
# (keys, or fields and members of one collection). Timings vary 1.5-3x on a shared
# machine: quote the median ratio of several rounds, beside an instruction count
# (scripts/server-instructions-per-request.sh), never one round.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bash $0 SERVER [SERVER...]" >&2; exit 2; }
rounds=${ROUNDS:-3}
fill=${FILL:-1000000}
n=${N:-200000}
test=${TEST:-zadd}
space=${R:-1000000}
port=${PORT:-7450}
work=$(mktemp -d)
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
generate() {
    python3 "$(dirname "$0")/seeded_requests.py" "$test" "$space" "$1" "$2"
}
generate 0 "$fill" >"$work/fill.txt"
generate "$fill" "$n" >"$work/timed.txt"
# One timed run of server $1: prints its seconds.
timed_run() {
    local data="$work/data"
    rm -rf "$data" && mkdir -p "$data"
    if [ "$1" = redis ]; then
        redis-server --port "$port" --save "" --appendonly no --dir "$data" >/dev/null 2>&1 &
    else
        "$1" --engine memory --port "$port" --dir "$data" >/dev/null 2>&1 &
    fi
    local pid=$!
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-cli -p "$port" --pipe <"$work/fill.txt" >/dev/null
    local start end
    start=$(date +%s.%N)
    redis-cli -p "$port" --pipe <"$work/timed.txt" >/dev/null
    end=$(date +%s.%N)
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" || true
    python3 -c "print(f'{$end - $start:.3f}')"
}
for round in $(seq "$rounds"); do
    for i in $(seq $#); do
        seconds=$(timed_run "${!i}")
        echo "round $round server $i ${!i}: $seconds s"
        echo "$i $seconds" >>"$work/times"
    done
done
python3 - "$work/times" "$@" <<'PY'
import statistics, sys
times, servers = {}, sys.argv[2:]
for line in open(sys.argv[1]):
    i, s = line.split()
    times.setdefault(int(i), []).append(float(s))
first = statistics.median(times[1])
for i, name in enumerate(servers, 1):
    m = statistics.median(times[i])
    print(f"server {i} {name}: median {m:.3f} s, first/this {first / m:.2f}x")
PY
