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


def goals(directory="benchmarks/index"):
    """The goals table of issue 2, from the runs of scripts/bench-index.sh."""
    def get(name, impl):
        for r in json.load(open(f"{directory}/{name}.json")):
            if r["impl"] == impl:
                return r

    def row(goal, name, value, ok):
        print(f"| {goal} | `{name}` | {value} | {'met' if ok else 'not met'} |")

    print("| goal | run | measured | |")
    print("|---|---|---|---|")
    for t in (1, 2):
        for ratio, want in ((8, 2.5), (16, 4.0), (2, 1.5)):
            name = f"b-zipf1.22-r{ratio}-t{t}"
            r = get(name, "hotring-s")["ratio_vs_chain"]
            row(f"YCSB-B zipf 1.22, ratio {ratio}, {t} thread(s): >= {want}x chain", name, f"{r:.2f}x", r >= want)
        for name, goal, want in ((f"b-zipf0.99-r8-t{t}", "zipf 0.99, ratio 8", 1.5),
                                 (f"b-uniform-r8-t{t}", "uniform, ratio 8", 0.9),
                                 (f"a-zipf1.22-v100-r8-t{t}", "100-byte values (RCU), 50% writes, ratio 8", 1.3)):
            r = get(name, "hotring-s")["ratio_vs_chain"]
            row(f"{goal}, {t} thread(s): >= {want}x chain", name, f"{r:.2f}x", r >= want)
        name = f"b-zipf1.22-r8-t{t}"
        g = get(name, "hotring-s")["items_per_read"]
        row(f"items per read, zipf 1.22, ratio 8, {t} thread(s): <= 1.3", name, f"{g:.2f}", g <= 1.3)
        name = f"c-zipf1.22-grow-t{t}"
        hs = get(name, "hotring-s")
        for other in ("dashmap", "papaya"):
            o = get(name, other)
            r = hs["ratio_vs_chain"] / o["ratio_vs_chain"]
            row(f"YCSB-C zipf 1.22 vs {other} at its default sizing, {t} thread(s): >= 1.0x with no more bytes/key",
                name, f"{r:.2f}x, {hs['bytes_per_key']:.1f} vs {o['bytes_per_key']:.1f} B/key",
                r >= 1.0 and hs["bytes_per_key"] <= o["bytes_per_key"])
    name = "c-zipf1.22-shift-t1"
    d = get(name, "hotring-s")["reaction_delay_ms"]
    dr = get(name, "hotring-r")["reaction_delay_ms"]
    show = lambda x: "not recovered in the run" if x is None else f"{x:.0f} ms"
    row("reaction delay after a hotspot shift: <= 1 s", name, f"{show(d)} (hotring-r {show(dr)})", d is not None and d <= 1000)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--goals"]:
        goals()
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/index/*.json")
