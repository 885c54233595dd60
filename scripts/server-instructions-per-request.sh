#!/usr/bin/env bash
# Instructions a hotkv-server binary executes per request, counted by valgrind's
# callgrind: within 0.1% between runs of one binary, so an A/B of a per-request cost
# reads in one run on a machine whose timings vary 1.5-3x. Counts are not time (a cache miss costs no
# instructions): quote them beside a throughput ratio, not instead of one. The
# callgrind profile is kept for `callgrind_annotate --inclusive=yes FILE`. Needs
# valgrind (Debian's package).
#
#   bash scripts/server-instructions-per-request.sh BINARY PORT
#       TEST=one redis-benchmark -t test (default set); N=requests counted (default
#       300000; about 2 minutes under callgrind); R=key space (-r; default 100000; for
#       tests on one collection such as hset or zadd, its fields). Compare binaries
#       at the same N: the first requests of a run fill the key space.
#       FILL=requests sent first and not counted, with callgrind's instrumentation off
#       (several times faster than counted ones): a collection of a million members
#       is filled by FILL=1000000 R=1000000 and then measured by N=100000. With FILL,
#       the requests (of TEST set, get, hset, sadd or zadd, as redis-benchmark words
#       them) come from a seeded generator (scripts/seeded_requests.py) over one
#       connection (`redis-cli --pipe`).
set -euo pipefail
bin=$1
port=$2
dir=$(mktemp -d)
fill=${FILL:-0}
instrumented=yes
[ "$fill" -gt 0 ] && instrumented=no
# Counted within connections' serving only: background tasks (expiry, stats) run by
# the clock, and the clock runs slower under callgrind.
valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
    --instr-atstart=$instrumented \
    --toggle-collect='hotkv_server::connection::Connection::serve*' \
    "$bin" --engine memory --port "$port" --dir "$dir" >/dev/null 2>"$dir/valgrind.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.5
done
n=${N:-300000}
# Requests `$1` to `$1 + $2` of the seeded sequence, for `redis-cli --pipe`.
seeded() {
    python3 "$(dirname "$0")/seeded_requests.py" "${TEST:-set}" "${R:-100000}" "$1" "$2"
}
if [ "$fill" -gt 0 ]; then
    seeded 0 "$fill" | redis-cli -p "$port" --pipe >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    seeded "$fill" "$n" | redis-cli -p "$port" --pipe >/dev/null
    callgrind_control -i off "$pid" >/dev/null 2>&1
else
    redis-benchmark -p "$port" -t "${TEST:-set}" -r "${R:-100000}" -n "$n" -P 16 -c 50 -q >/dev/null 2>&1
fi
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait $pid || true
total=$(grep -o 'Collected : [0-9]*' "$dir/valgrind.log" | grep -o '[0-9]*$')
echo "$bin: $((total / n)) instructions per ${TEST:-set} request ($total over $n after $fill not counted; profile $dir/callgrind.out)"
