#!/usr/bin/env python3
"""The best a single head per ring can do, for `hotkv-bench index`'s zipf loads.

Keys 0..N-1 drawn with probability proportional to 1/(rank+1)^theta fall into
N/ratio rings at random, in an order unrelated to their popularity (the ring's hash
order). For each ring, the head that minimises the expected items an access visits
under the index's walk: a key at or past the head costs (i - t) + 1 items, one before
it 1 (the rehash item: the slot's head hint sends it there without reading the head)
+ (i + 1). Prints that optimum and the head-hit bound (the hottest key of every ring
at its head), to hold the measured items per read and head-hit rate against.

    python3 scripts/head-placement-bound.py --ratio 16 [--theta 1.22] [--keys 1048576]
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ratio", type=int, required=True)
    ap.add_argument("--theta", type=float, default=1.22)
    ap.add_argument("--keys", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
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
        hits += max(ring)
        items += min(
            sum(p * ((i - t) + 1 if i >= t else i + 2) for i, p in enumerate(ring))
            for t in range(len(ring))
        )
    print(f"ratio {args.ratio}, theta {args.theta}, {args.keys} keys: "
          f"items per access at best {items:.3f}, head-hit rate at most {hits:.3f}")


if __name__ == "__main__":
    main()
