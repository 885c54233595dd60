#!/usr/bin/env bash
# CPU time a hotkv-server binary spends per request, for A/B checks of per-request
# costs that throughput cannot show on a machine whose load generator is the limit:
# utime+stime from /proc over one `redis-benchmark -t set,get -P 16` run.
#
#   bash scripts/server-cpu-per-request.sh BINARY PORT [CONFIG_FILE]
#       (N requests per test, default 2000000; CONFIG_FILE as hotkv-server takes it)
set -euo pipefail
bin=$1
port=$2
n=${N:-2000000}
"$bin" --engine memory --port "$port" ${3:+"$3"} >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
rates=$(redis-benchmark -p "$port" -t set,get -n "$n" -P 16 -c 50 -q 2>&1 | tr '\r' '\n' |
    grep -E 'requests per second' | cut -d, -f1 | tr '\n' ' ')
after=$(ticks)
echo "$bin: $(( (after - before) * 1000000000 / hz / (2 * n) )) ns of server CPU per request; $rates"
