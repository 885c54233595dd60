#!/usr/bin/env bash
# Instructions an index read costs, counted by valgrind's callgrind: deterministic where
# timings on a shared machine are not. Prints the inclusive cost of the benchmark's
# `Target::serve` over its calls: workload C and one request a batch, so one read a call.
#
#   scripts/instructions-per-read.sh IMPL [DIST] [RATIO]     (defaults: zipf:1.22, 8)
#
# Uses target/release/hotkv-bench, or the binary in $HOTKV_BENCH_BIN.
set -euo pipefail
impl=${1:?usage: $0 IMPL [DIST] [RATIO]}
dist=${2:-zipf:1.22}
ratio=${3:-8}
bin=${HOTKV_BENCH_BIN:-target/release/hotkv-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" index --keys 131072 \
    --rounds 1 --seconds 2 --workload c --dist "$dist" --ratio "$ratio" --threads 1 \
    --impl "$impl" > /dev/null 2>&1
callgrind_annotate --tree=calling --inclusive=yes "$out" 2>/dev/null | grep -m1 ">.*Target>::serve (" |
    python3 -c "
import re, sys
line = sys.stdin.read()
m = re.match(r'\s*([\d,]+).*\(([\d,]+)x\)', line)
if not m:
    sys.exit('no Target::serve in the profile')
instructions, reads = (int(g.replace(',', '')) for g in m.groups())
print(f'$impl $dist ratio $ratio: {instructions / reads:.1f} instructions a read over {reads} reads')
"
