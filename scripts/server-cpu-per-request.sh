#!/usr/bin/env bash
# CPU time a hotkv-server binary spends per request, for A/B checks of per-request
# costs that throughput cannot show on a machine whose load generator is the limit:
# utime+stime from /proc over `redis-benchmark -t set` then `-t get` (or TESTS), -P 16.
#
#   bash scripts/server-cpu-per-request.sh BINARY PORT [CONFIG_FILE]
#       N=requests per test (default 2000000); R=key space (redis-benchmark -r: SET
#       loads random keys of it, GET reads them uniformly, hits and misses; default one
#       key); ENGINE=lsm runs hotkv on its LSM engine (fsync everysec, in a fresh
#       directory; the default is memory); TESTS="zadd" (redis-benchmark's -t, one
#       at a time, in order; default "set get"); CONFIG_FILE as hotkv-server takes it.
#       Works on redis-server too.
set -euo pipefail
bin=$1
port=$2
n=${N:-2000000}
if [[ $(basename "$bin") == redis-server* ]]; then
    # In an empty directory: a dump.rdb where it starts would be loaded.
    dir=$(mktemp -d)
    (cd "$dir" && exec "$bin" --port "$port" --save "" --appendonly no ${3:+"$3"} >/dev/null 2>&1) &
else
    engine=(--engine memory)
    if [ "${ENGINE:-memory}" = lsm ]; then
        dir=$(mktemp -d)
        engine=(--engine lsm --fsync everysec --dir "$dir")
    fi
    "$bin" "${engine[@]}" --port "$port" ${3:+"$3"} >/dev/null 2>&1 &
fi
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; [ -z "${dir:-}" ] || rm -rf "$dir"' EXIT
for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
report=""
rates=""
total=0
tests=(${TESTS:-set get})
for t in "${tests[@]}"; do
    before=$(ticks)
    rate=$(redis-benchmark -p "$port" -t "$t" -n "$n" -P 16 -c 50 ${R:+-r "$R"} -q 2>&1 |
        tr '\r' '\n' | grep -E 'requests per second' | cut -d, -f1 | tr '\n' ' ')
    after=$(ticks)
    total=$((total + after - before))
    report+="$t $(( (after - before) * 1000000000 / hz / n )) ns, "
    rates+="$rate"
done
echo "$bin: $(( total * 1000000000 / hz / (${#tests[@]} * n) )) ns of server CPU per request ($report${R:+key space $R}); $rates"
