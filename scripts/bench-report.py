#!/usr/bin/env python3
"""Renders hotkv-bench JSON reports (default: benchmarks/index/*.json) as the
markdown tables in BENCHMARKS.md."""
import glob
import json
import sys


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def main(pattern):
    for path in sorted(glob.glob(pattern)):
        rows = json.load(open(path))
        r0 = rows[0]
        print(f"#### `{path.split('/')[-1][:-5]}`: workload {r0['workload']}, {r0['dist']}, "
              f"{r0['keys']} keys, ratio {r0['ratio']}, {r0['value_size']}-byte values, "
              f"{r0['threads']} thread(s), {len(r0['rounds_ops_per_sec'])} rounds of {r0['seconds']} s\n")
        print("| impl | Mops/s (median) | vs chain (median of per-round ratios) | items/read | head hit | bytes/key | reaction ms | rounds Mops/s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            rounds = " ".join(f"{x / 1e6:.2f}" for x in r["rounds_ops_per_sec"])
            print(f"| {r['impl']} | {r['ops_per_sec'] / 1e6:.2f} | {fmt(r['ratio_vs_chain'])} | "
                  f"{fmt(r['items_per_read'])} | {fmt(r['head_hit_rate'], 3)} | {r['bytes_per_key']:.1f} | "
                  f"{fmt(r['reaction_delay_ms'], 0)} | {rounds} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/index/*.json")
