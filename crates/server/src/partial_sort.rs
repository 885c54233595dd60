//! The partial quicksort Redis uses to put the first few of many results in order
//! (GEORADIUS ... COUNT n): Bentley and McIlroy's three-way quicksort that skips every
//! part lying wholly outside the wanted positions. hotkv follows its steps exactly
//! because the order it leaves equal elements in is what Redis replies with.

use std::cmp::Ordering;
use std::ops::RangeInclusive;

/// Sorts `v` enough that the positions in `wanted` hold what a full sort would put
/// there; equal elements land where Redis's `pqsort` lands them.
pub fn sort_range<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering, wanted: RangeInclusive<usize>) {
    sort_part(v, &cmp, 0, v.len(), &wanted);
}

/// Whether the part `start..start + len` holds a wanted position.
fn touches(wanted: &RangeInclusive<usize>, start: usize, len: usize) -> bool {
    *wanted.end() >= start && *wanted.start() < start + len
}

/// The median of three positions by `cmp`, chosen as Redis's `med3` chooses.
fn median<T>(v: &[T], cmp: &impl Fn(&T, &T) -> Ordering, a: usize, b: usize, c: usize) -> usize {
    if cmp(&v[a], &v[b]).is_lt() {
        if cmp(&v[b], &v[c]).is_lt() {
            b
        } else if cmp(&v[a], &v[c]).is_lt() {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]).is_gt() {
        b
    } else if cmp(&v[a], &v[c]).is_lt() {
        a
    } else {
        c
    }
}

/// Swaps the `n` elements from `a` with the `n` from `b`, pairwise.
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn sort_part<T>(
    v: &mut [T],
    cmp: &impl Fn(&T, &T) -> Ordering,
    mut start: usize,
    mut len: usize,
    wanted: &RangeInclusive<usize>,
) {
    loop {
        let a = start;
        if len < 7 {
            for m in a + 1..a + len {
                let mut l = m;
                while l > a && cmp(&v[l - 1], &v[l]).is_gt() {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let mut pivot = a + len / 2;
        if len > 7 {
            let (mut first, mut last) = (a, a + len - 1);
            if len > 40 {
                let d = len / 8;
                first = median(v, cmp, first, first + d, first + 2 * d);
                pivot = median(v, cmp, pivot - d, pivot, pivot + d);
                last = median(v, cmp, last - 2 * d, last - d, last);
            }
            pivot = median(v, cmp, first, pivot, last);
        }
        v.swap(a, pivot);
        // Elements equal to the pivot (now at `a`) gather at both ends: before `pa`
        // and after `pd`; smaller ones end before `pb`, larger ones after `pc`.
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + len - 1, a + len - 1);
        loop {
            while pb <= pc {
                let order = cmp(&v[pb], &v[a]);
                if order.is_gt() {
                    break;
                }
                if order.is_eq() {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let order = cmp(&v[pc], &v[a]);
                if order.is_lt() {
                    break;
                }
                if order.is_eq() {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        // Move the equal runs to the middle.
        let end = a + len;
        let r = (pa - a).min(pb - pa);
        swap_runs(v, a, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - r, r);
        let smaller = pb - pa;
        if smaller > 1 && touches(wanted, a, smaller) {
            sort_part(v, cmp, a, smaller, wanted);
        }
        let larger = pd - pc;
        if larger > 1 && touches(wanted, end - larger, larger) {
            start = end - larger;
            len = larger;
            continue;
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded, so a failure replays.
    fn numbers(seed: u64) -> impl Iterator<Item = u64> {
        let mut x = seed;
        std::iter::from_fn(move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Some(x >> 33)
        })
    }

    #[test]
    fn wanted_positions_hold_what_a_full_sort_puts_there() {
        let mut rng = numbers(11);
        for round in 0..2000 {
            let len = (rng.next().unwrap() % 120) as usize + 1;
            // Few distinct keys, so there are many ties.
            let keys = rng.next().unwrap() % 20 + 1;
            let v: Vec<(u64, usize)> = (0..len).map(|i| (rng.next().unwrap() % keys, i)).collect();
            let from = (rng.next().unwrap() as usize) % len;
            let to = from + (rng.next().unwrap() as usize) % (len - from);
            let mut partial = v.clone();
            sort_range(&mut partial, |x, y| x.0.cmp(&y.0), from..=to);
            let mut full = v.clone();
            full.sort_by_key(|x| x.0);
            for i in from..=to {
                assert_eq!(partial[i].0, full[i].0, "round {round}, position {i}");
            }
            // A permutation: nothing lost or repeated.
            let mut ids: Vec<usize> = partial.iter().map(|x| x.1).collect();
            ids.sort_unstable();
            assert!(
                ids.iter().enumerate().all(|(i, &id)| i == id),
                "round {round}"
            );
        }
    }

    #[test]
    fn ties_land_as_redis_leaves_them() {
        // What Redis 7.0's pqsort.c leaves (run on the same input in C): equal keys in
        // neither input order nor reversed.
        let mut v = [
            (1, 'a'),
            (0, 'b'),
            (1, 'c'),
            (0, 'd'),
            (1, 'e'),
            (0, 'f'),
            (0, 'g'),
            (1, 'h'),
        ];
        sort_range(&mut v, |x, y| x.0.cmp(&y.0), 0..=7);
        let order: String = v.iter().map(|x| x.1).collect();
        assert_eq!(order, "bfgdhcea");
    }
}
