#!/usr/bin/env bash
# hotkv-server against redis-server (no persistence) under `hotkv-bench resp`: YCSB-B
# at zipf 0.99 and 1.22, 1M keys, 100-byte values; JSON and SVG in benchmarks/resp/.
#   ROUNDS=3 SECONDS_PER_RUN=10 CLIENTS=50 CLIENT_THREADS=1 PIPELINE=1 bash scripts/bench-resp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-50}
CLIENT_THREADS=${CLIENT_THREADS:-1}
PIPELINE=${PIPELINE:-1}
KEYS=${KEYS:-1000000}
. scripts/servers.sh
start_servers 6431 6432
mkdir -p benchmarks/resp
load=""
for dist in zipf:0.99 zipf:1.22; do
  name="b-${dist/:/}-c$CLIENTS-t$CLIENT_THREADS-p$PIPELINE"
  echo "== $name"
  ./target/release/hotkv-bench resp --addr 127.0.0.1:6431,127.0.0.1:6432 --workload b --dist "$dist" \
    --keys "$KEYS" --value-size 100 --clients "$CLIENTS" --client-threads "$CLIENT_THREADS" --pipeline "$PIPELINE" \
    --seconds "$SECONDS_PER_RUN" --rounds "$ROUNDS" $load \
    --json "benchmarks/resp/$name.json" --plot "benchmarks/resp/$name.svg"
  load="--no-load"
done
