#!/usr/bin/env bash
# MIGRATE's keys per second, hotkv-server to hotkv-server against redis-server to
# redis-server, in alternating rounds; prints each round and the median per server and
# batch size.
#   ROUNDS=3 KEYS=20000 BATCHES="1 100" VALUE=100 HOTKV_ENGINE=lsm bash scripts/bench-migrate.sh
# Each round fills the source with KEYS strings of VALUE bytes, then moves them all to
# the target (flushed first) with MIGRATE ... KEYS of BATCH keys each, sent pipelined by
# redis-cli --pipe, and checks that the source is empty and the target holds them.
# HOTKV_ENGINE as in scripts/servers.sh: lsm compares against redis-server with its
# append-only file, both syncing once a second.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-20000}
BATCHES=${BATCHES:-1 100}
VALUE=${VALUE:-100}
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
cargo build --release -q -p server
data=$(mktemp -d)
pids=()
# shellcheck disable=SC2064 # expand the directory now
trap 'kill "${pids[@]}" 2>/dev/null || true; sleep 1; rm -rf "'"$data"'"' EXIT
start() { # start NAME PORT: one server, by kind
    local dir="$data/$1-$2"
    mkdir -p "$dir"
    if [ "${1}" = redis ]; then
        local args=(--save "" --appendonly no)
        [ "${HOTKV_ENGINE:-memory}" = lsm ] && args=(--save "" --appendonly yes --appendfsync everysec --dir "$dir")
        redis-server --port "$2" "${args[@]}" >/dev/null &
    else
        local args=(--engine memory)
        [ "${HOTKV_ENGINE:-memory}" = lsm ] && args=(--engine lsm --fsync everysec --dir "$dir")
        ./target/release/hotkv-server --port "$2" "${args[@]}" 2>/dev/null &
    fi
    pids+=($!)
    for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
start redis 6411; start redis 6412; start hotkv 6413; start hotkv 6414
resp() { # the commands on stdin, one per line of words (`""`: an empty one), as RESP
    awk '{ printf "*%d\r\n", NF
           for (i = 1; i <= NF; i++) { a = $i == "\"\"" ? "" : $i; printf "$%d\r\n%s\r\n", length(a), a } }'
}
value=$(head -c "$VALUE" /dev/zero | tr '\0' v)
fill=$(mktemp -p "$data")
seq "$KEYS" | awk -v v="$value" '{ print "SET key:" $1, v }' | resp > "$fill"
out=$(mktemp -p "$data")
for r in $(seq "$ROUNDS"); do
    order="redis:6411:6412 hotkv:6413:6414"
    (( r % 2 )) || order="hotkv:6413:6414 redis:6411:6412"
    for s in $order; do
        IFS=: read -r name from to <<< "$s"
        for batch in $BATCHES; do
            redis-cli -p "$from" flushall >/dev/null
            redis-cli -p "$to" flushall >/dev/null
            redis-cli -p "$from" --pipe < "$fill" >/dev/null
            moves=$(mktemp -p "$data")
            seq "$KEYS" | awk -v b="$batch" -v to="$to" '
                { keys = keys " key:" $1 }
                NR % b == 0 { print "MIGRATE 127.0.0.1", to, "\"\" 0 5000 KEYS" keys; keys = "" }
                END { if (keys != "") print "MIGRATE 127.0.0.1", to, "\"\" 0 5000 KEYS" keys }' |
                resp > "$moves"
            start_ns=$(date +%s%N)
            redis-cli -p "$from" --pipe < "$moves" >/dev/null
            took_ns=$(( $(date +%s%N) - start_ns ))
            left=$(redis-cli -p "$from" dbsize); arrived=$(redis-cli -p "$to" dbsize)
            [ "$left" = 0 ] && [ "$arrived" = "$KEYS" ] ||
                { echo "round $r $name batch $batch: $left left, $arrived arrived"; exit 1; }
            echo "$name B$batch MIGRATE $r $(( KEYS * 1000000000 / took_ns ))" | tee -a "$out"
        done
    done
done
echo "median keys/s (server batch: median, hotkv/redis):"
python3 - "$out" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, batch, _test, _round, rate = line.split()
    runs[(batch, name)].append(float(rate))
for batch in sorted({b for b, _ in runs}, key=lambda b: int(b[1:])):
    h, r = statistics.median(runs[(batch, "hotkv")]), statistics.median(runs[(batch, "redis")])
    print(f"KEYS batch {batch[1:]}: hotkv {h:,.0f}  redis {r:,.0f}  ratio {h / r:.2f}x")
PY
