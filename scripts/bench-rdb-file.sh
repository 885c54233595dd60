#!/usr/bin/env bash
# The RDB file against Redis's: SAVE time, file size, and the time a restart takes to
# load it (spawn to first PONG), for redis-server and hotkv binaries on the memory
# engine, alternating in rounds.
#
#   bash scripts/bench-rdb-file.sh DATA BINARY [BINARY ...]
#       DATA: redis-cli --pipe input (e.g. one `SET key value` per line) loaded into
#       each server first. BINARY: redis-server or a hotkv-server. ROUNDS (default 3).
#       Ports from 7600 up, each server in a fresh directory under /tmp.
set -euo pipefail
data=$1
shift
bins=("$@")
rounds=${ROUNDS:-3}
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

ms() { echo $(($(date +%s%N) / 1000000)); }

start() { # index -> starts server i on its directory, waits for PONG, prints ms taken
    local i=$1 bin=${bins[$1]} port=$((7600 + $1)) dir=/tmp/bench-rdb-$1 t0
    t0=$(ms)
    if [[ $(basename "$bin") == redis-server* ]]; then
        "$bin" --port "$port" --dir "$dir" --save "" --appendonly no >/dev/null 2>&1 &
    else
        "$bin" --engine memory --port "$port" --dir "$dir" >/dev/null 2>&1 &
    fi
    pids[$i]=$!
    until redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; do sleep 0.01; done
    echo $(($(ms) - t0))
}

stop() {
    redis-cli -p $((7600 + $1)) shutdown nosave >/dev/null 2>&1 || true
    wait "${pids[$1]}" 2>/dev/null || true
}

for i in "${!bins[@]}"; do
    rm -rf "/tmp/bench-rdb-$i" && mkdir -p "/tmp/bench-rdb-$i"
    start "$i" >/dev/null
    redis-cli -p $((7600 + i)) --pipe <"$data" >/dev/null
    echo "${bins[$i]}: $(redis-cli -p $((7600 + i)) dbsize) keys loaded"
done
for r in $(seq "$rounds"); do
    for i in "${!bins[@]}"; do
        t0=$(ms)
        redis-cli -p $((7600 + i)) save >/dev/null
        took=$(($(ms) - t0))
        size=$(stat -c %s "/tmp/bench-rdb-$i/dump.rdb")
        stop "$i"
        loaded=$(start "$i")
        echo "round $r ${bins[$i]}: SAVE $took ms, file $size bytes, restart $loaded ms, $(redis-cli -p $((7600 + i)) dbsize) keys"
    done
done
for i in "${!bins[@]}"; do
    stop "$i"
    rm -rf "/tmp/bench-rdb-$i"
done
