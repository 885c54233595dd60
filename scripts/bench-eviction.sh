#!/usr/bin/env bash
# SET throughput while evicting: a 50 MB maxmemory under allkeys-lru, 2M SETs of
# 100-byte values over 3M distinct keys (redis-benchmark -P 16 -c 50), against each
# hotkv-server binary given and redis-server, alternating, ROUNDS times.
#
#   bash scripts/bench-eviction.sh NAME=BINARY [NAME=BINARY ...]
#
# Prints per run: name, requests per second, evicted_keys, used_memory.
set -u
ROUNDS=${ROUNDS:-3}
port=7901
run() { # name binary|redis
    if [ "$2" = redis ]; then
        (cd /tmp && redis-server --port $port --save "" --appendonly no --daemonize yes \
            --maxmemory 50mb --maxmemory-policy allkeys-lru >/dev/null)
    else
        ("$2" --port $port --engine memory --maxmemory 50mb --maxmemory-policy allkeys-lru \
            >/dev/null 2>&1 &)
    fi
    sleep 0.7
    rate=$(redis-benchmark -p $port -t set -n 2000000 -r 3000000 -d 100 -c 50 -P 16 -q 2>/dev/null |
        grep -o "[0-9.]* requests per second" | cut -d' ' -f1)
    evicted=$(redis-cli -p $port info stats | grep evicted_keys | tr -d '\r')
    used=$(redis-cli -p $port info memory | grep "^used_memory:" | tr -d '\r')
    echo "$1 $rate $evicted $used"
    redis-cli -p $port shutdown nosave >/dev/null 2>&1
    sleep 0.5
    port=$((port + 1))
}
for _ in $(seq "$ROUNDS"); do
    for side in "$@" redis=redis; do
        run "${side%%=*}" "${side#*=}"
    done
done
