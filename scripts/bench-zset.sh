#!/usr/bin/env bash
# Builds of hotkv-server against each other on a large sorted set: each round starts a
# fresh server of each build in turn (lsm, then memory), grows `myzset` to ~95,000
# members with 200,000 random ZADDs, then measures ZADD, ZRANGE of 100 members, ZSCORE,
# ZRANK and ZPOPMIN under `redis-benchmark -c 50 -P 16` (requests/s), and on lsm the
# bytes logged per ZADD (INFO engine_user_bytes_written).
#   ROUNDS=3 PORT=6461 bash scripts/bench-zset.sh BIN [BIN ...]
set -euo pipefail
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-6461}
[ $# -gt 0 ] || { echo "usage: bash scripts/bench-zset.sh BIN [BIN ...]" >&2; exit 2; }
rps() {
    redis-benchmark -p "$PORT" -c 50 -P 16 -q "$@" | tr '\r' '\n' | grep -oE '[0-9.]+ requests' | tail -1 | cut -d' ' -f1
}
logged() {
    redis-cli -p "$PORT" info engine | tr -d '\r' | awk -F: '$1 == "engine_user_bytes_written" { print $2 }'
}
for round in $(seq "$ROUNDS"); do
    for engine in lsm memory; do
        for bin in "$@"; do
            dir=$(mktemp -d)
            "$bin" --engine "$engine" --dir "$dir" --port "$PORT" >/dev/null 2>&1 &
            server=$!
            for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
            redis-benchmark -p "$PORT" -t zadd -r 100000 -n 200000 -c 50 -P 16 -q >/dev/null
            before=$(logged)
            zadd=$(rps -t zadd -r 100000 -n 100000)
            after=$(logged)
            per_zadd=${before:+$(( (after - before) / 100000 ))}
            echo "round $round $engine $bin zadd $zadd bytes/zadd ${per_zadd:--}" \
                "zrange100 $(rps -n 50000 zrange myzset 40000 40099)" \
                "zscore $(rps -n 100000 -r 100000 zscore myzset element:__rand_int__)" \
                "zrank $(rps -n 100000 -r 100000 zrank myzset element:__rand_int__)" \
                "zpopmin $(rps -n 50000 zpopmin myzset)"
            kill "$server"
            wait "$server" 2>/dev/null || true
            rm -rf "$dir"
        done
    done
done
