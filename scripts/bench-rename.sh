#!/usr/bin/env bash
# RENAME of a large collection, hotkv-server against redis-server in alternating
# rounds: a hash of FIELDS fields (default 1,000,000, written 10,000 at a time) is
# renamed back and forth, each round timing MOVES renames with one client; prints
# each round and the median renames/s per server. Redis moves the key's pointer, so
# its rate does not depend on FIELDS.
#   ROUNDS=3 MOVES=200 bash scripts/bench-rename.sh
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
MOVES=${MOVES:-200}
FIELDS=${FIELDS:-1000000}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
out=$(mktemp)
python3 - "$REDIS_PORT" "$HOTKV_PORT" "$ROUNDS" "$MOVES" "$FIELDS" > "$out" <<'PY'
import sys, time
import redis
redis_port, hotkv_port, rounds, moves, fields = map(int, sys.argv[1:])
servers = {"redis": redis.Redis(port=redis_port), "hotkv": redis.Redis(port=hotkv_port)}
for c in servers.values():
    for start in range(0, fields, 10_000):
        c.hset("big", mapping={f"f{i}": f"v{i}" for i in range(start, min(start + 10_000, fields))})
    assert c.hlen("big") == fields
for r in range(1, rounds + 1):
    order = ["redis", "hotkv"] if r % 2 else ["hotkv", "redis"]
    for name in order:
        c = servers[name]
        start = time.perf_counter()
        for i in range(moves):
            c.rename("big" if i % 2 == 0 else "moved", "moved" if i % 2 == 0 else "big")
        rate = moves / (time.perf_counter() - start)
        assert c.hlen("big" if moves % 2 == 0 else "moved") == fields
        print(name, "P1", f"RENAME_hash_of_{fields}", r, f"{rate:.1f}", flush=True)
PY
cat "$out"
print_medians "$out"
