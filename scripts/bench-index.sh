#!/usr/bin/env bash
# The index benchmark matrix behind BENCHMARKS.md: each line is one hotkv-bench run
# of alternating rounds; JSON lands in $OUT (default benchmarks/index).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-benchmarks/index}
KEYS=${KEYS:-1048576}
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-1}
mkdir -p "$OUT"
cargo build --release --bin hotkv-bench
bench() {
    local name=$1
    shift
    echo "== $name: $*"
    ./target/release/hotkv-bench index --keys "$KEYS" --rounds "$ROUNDS" --seconds "$SECONDS_PER_RUN" \
        --json "$OUT/$name.json" "$@"
}
for t in 1 2; do
    for ratio in 2 8 16; do
        bench "b-zipf1.22-r$ratio-t$t" --workload b --dist zipf:1.22 --ratio "$ratio" --threads "$t" --impl hotring-s,hotring-r,chain
    done
    bench "b-zipf0.99-r8-t$t" --workload b --dist zipf:0.99 --ratio 8 --threads "$t" --impl hotring-s,hotring-r,chain
    bench "b-uniform-r8-t$t" --workload b --dist uniform --ratio 8 --threads "$t" --impl hotring-s,hotring-r,chain
    bench "a-zipf1.22-v100-r8-t$t" --workload a --dist zipf:1.22 --ratio 8 --value-size 100 --threads "$t" --impl hotring-s,hotring-r,chain
    bench "c-zipf1.22-grow-t$t" --workload c --dist zipf:1.22 --grow --threads "$t" --impl hotring-s,chain,dashmap,papaya
done
ROUNDS=5 SECONDS_PER_RUN=6 bench "c-zipf1.22-shift-t1" --workload c --dist zipf:1.22 --ratio 8 --threads 1 --shift-at 3 --impl hotring-s,hotring-r,chain
