#!/usr/bin/env bash
# Instructions an index read costs, counted by valgrind's callgrind: deterministic where
# timings on a shared machine are not. Prints the inclusive cost of the benchmark's
# `Target::serve` over its calls: workload C and one request a batch, so one read a call.
#
#   scripts/instructions-per-read.sh IMPL [DIST] [RATIO]     (defaults: zipf:1.22, 8)
#
# Uses target/release/hotkv-bench, or the binary in $HOTKV_BENCH_BIN. The warm-up and
# the measured run are a fixed number of reads (--ops, default 2,000,000 each), so the
# count does not depend on how fast valgrind ran; what is left to vary is the index's
# own use of time (a shift followed for a fixed number of milliseconds).
set -euo pipefail
impl=${1:?usage: $0 IMPL [DIST] [RATIO]}
dist=${2:-zipf:1.22}
ratio=${3:-8}
bin=${HOTKV_BENCH_BIN:-target/release/hotkv-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" index --keys 131072 \
    --rounds 1 --ops "${OPS:-2000000}" --workload c --dist "$dist" --ratio "$ratio" --threads 1 \
    --impl "$impl" > /dev/null 2>&1
# The calling tree lists `serve` once per caller: the load's puts and the timed reads.
# The reads are the caller with the most calls.
callgrind_annotate --tree=calling --inclusive=yes "$out" 2>/dev/null | grep ">.*Target>::serve (" |
    python3 -c "
import re, sys
best = None
for line in sys.stdin:
    m = re.match(r'\s*([\d,]+).*\(([\d,]+)x\)', line)
    if m:
        instructions, reads = (int(g.replace(',', '')) for g in m.groups())
        if best is None or reads > best[1]:
            best = (instructions, reads)
if best is None:
    sys.exit('no Target::serve in the profile')
print(f'$impl $dist ratio $ratio: {best[0] / best[1]:.1f} instructions a read ({best[0]} over {best[1]} reads)')
"
