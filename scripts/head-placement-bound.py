#!/usr/bin/env python3
"""The best K heads per ring can do, for `hotkv-bench index`'s zipf loads.

Keys 0..N-1 drawn with probability proportional to 1/(rank+1)^theta fall into
N/ratio rings at random, in an order unrelated to their popularity (the ring's hash
order). For each ring, the heads that minimise the expected items an access visits
under the index's walk: a key at or past a head costs (i - t) + 1 items from the
nearest head t before it, one before every head 1 (the rehash item: the slot's head
hint sends it there without reading a head) + (i + 1). Prints that optimum and the
head-hit bound (the ring's K hottest keys at its heads), to hold the measured items
per read and head-hit rate against.

The index keeps one head a ring (seed 000), K = 1, searched exactly. K > 1 measures
what more entry points a ring would buy; its heads are sought among the ring's
2K + 2 hottest keys, which holds the optimum in every case tried but is not a proof.

    python3 scripts/head-placement-bound.py --ratio 16 [--theta 1.22] [--keys 1048576] [--heads K]
"""
import argparse
import itertools
import random


def cost(ring, heads):
    """Expected items visited over `ring` (probabilities in hash order) with `heads`
    (sorted positions) as entry points."""
    total, h, start = 0.0, 0, None
    for i, p in enumerate(ring):
        while h < len(heads) and heads[h] <= i:
            start, h = heads[h], h + 1
        total += p * ((i - start) + 1 if start is not None else i + 2)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ratio", type=int, required=True)
    ap.add_argument("--theta", type=float, default=1.22)
    ap.add_argument("--keys", type=int, default=1 << 20)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.heads < 1:
        ap.error("--heads must be at least 1")
    rng = random.Random(args.seed)
    weights = [1.0 / (k + 1) ** args.theta for k in range(args.keys)]
    total = sum(weights)
    rings = [[] for _ in range(args.keys // args.ratio)]
    for w in weights:
        rings[rng.randrange(len(rings))].append(w / total)
    items = hits = 0.0
    for ring in rings:
        if not ring:
            continue
        rng.shuffle(ring)
        by_weight = sorted(range(len(ring)), key=lambda i: -ring[i])
        hits += sum(ring[i] for i in by_weight[: args.heads])
        candidates = range(len(ring)) if args.heads == 1 else by_weight[: 2 * args.heads + 2]
        k = min(args.heads, len(ring))
        items += min(cost(ring, sorted(c)) for c in itertools.combinations(candidates, k))
    print(f"ratio {args.ratio}, theta {args.theta}, {args.keys} keys, {args.heads} head(s): "
          f"items per access at best {items:.3f}, head-hit rate at most {hits:.3f}")


if __name__ == "__main__":
    main()
