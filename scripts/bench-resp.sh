#!/usr/bin/env bash
# hotkv-server against redis-server (no persistence) under `hotkv-bench resp`: YCSB-B
# at zipf 0.99 and 1.22, 1M keys, 100-byte values; JSON and SVG in benchmarks/resp/.
#   ROUNDS=3 SECONDS_PER_RUN=10 CLIENTS=50 PIPELINE=1 bash scripts/bench-resp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
KEYS=${KEYS:-1000000}
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
cargo build --release -q -p server -p bench
mkdir -p benchmarks/resp
redis-server --port 6431 --save "" --appendonly no >/dev/null &
REDIS=$!
./target/release/hotkv-server --port 6432 2>/dev/null &
HOTKV=$!
trap 'kill $REDIS $HOTKV 2>/dev/null || true' EXIT
for p in 6431 6432; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
load=""
for dist in zipf:0.99 zipf:1.22; do
  name="b-${dist/:/}-c$CLIENTS-p$PIPELINE"
  echo "== $name"
  ./target/release/hotkv-bench resp --addr 127.0.0.1:6431,127.0.0.1:6432 --workload b --dist "$dist" \
    --keys "$KEYS" --value-size 100 --clients "$CLIENTS" --pipeline "$PIPELINE" \
    --seconds "$SECONDS_PER_RUN" --rounds "$ROUNDS" $load \
    --json "benchmarks/resp/$name.json" --plot "benchmarks/resp/$name.svg"
  load="--no-load"
done
