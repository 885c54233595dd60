//! Systematic concurrency tests of the pointer protocols with shuttle: small rings,
//! head moves on every cold access, and splits, with insert, RCU update, in-place
//! update, delete and head movement racing. Each scenario's outcome is fixed whatever
//! the interleaving, so any schedule that loses or resurrects a write fails.
//!
//! Run with `cargo test -p hotring --features shuttle --test shuttle`; the number of
//! schedules per scenario is `SHUTTLE_ITERATIONS` (default 2000).
#![cfg(feature = "shuttle")]

use std::sync::Arc;

use hotring::{Config, HotRing, HotspotStrategy};
use shuttle::thread;

fn iterations() -> usize {
    std::env::var("SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000)
}

fn tiny(strategy: HotspotStrategy, max_ring_len: Option<u32>) -> Config {
    Config {
        strategy,
        initial_depth: 0,
        max_ring_len,
        split_cost: None,
        shared_split_len: max_ring_len.map(|_| 1),
        sample_period: 1,
    }
}

/// The orders three operations can run in, one after another: the outcomes a race of
/// the three may have.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// Uniformly random schedules, then PCT's (long runs between a few preemptions), which
/// reach interleavings where one thread completes several steps inside another's window.
fn explore(f: impl Fn() + Send + Sync + 'static) {
    let f = std::sync::Arc::new(f);
    let g = f.clone();
    shuttle::check_random(move || f(), iterations());
    shuttle::check_pct(move || g(), iterations(), 3);
}

#[test]
fn insert_update_delete_and_head_moves_on_one_ring() {
    explore(|| {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Random, None)));
        for k in [b"a", b"b", b"c"] {
            index.insert(k, b"old-value-longer-than-8");
        }
        let t1 = {
            let index = index.clone();
            // RCU update (long value) of b, then in-place of the new version's length class.
            thread::spawn(move || {
                assert!(index.update(b"b", b"new-value-longer-than-8!"));
                assert!(index.upsert(b"e", b"8bytes!!"));
                assert!(!index.upsert(b"e", b"8bytes??"));
            })
        };
        let t2 = {
            let index = index.clone();
            thread::spawn(move || {
                assert!(index.remove(b"a"));
                assert!(index.insert(b"d", b"d"));
            })
        };
        let t3 = {
            let index = index.clone();
            // Reads move the head to every cold item they touch (R = 1).
            thread::spawn(move || {
                for k in [b"c", b"b", b"a", b"c", b"b"] {
                    if let Some(v) = index.get(k) {
                        assert!(v.starts_with(b"old-value") || v.starts_with(b"new-value"));
                    }
                }
            })
        };
        for t in [t1, t2, t3] {
            t.join().unwrap();
        }
        assert_eq!(index.get(b"a"), None);
        assert_eq!(
            index.get(b"b").as_deref(),
            Some(&b"new-value-longer-than-8!"[..])
        );
        assert_eq!(
            index.get(b"c").as_deref(),
            Some(&b"old-value-longer-than-8"[..])
        );
        assert_eq!(index.get(b"d").as_deref(), Some(&b"d"[..]));
        assert_eq!(index.get(b"e").as_deref(), Some(&b"8bytes??"[..]));
        assert_eq!(index.len(), 4);
        assert_eq!(index.iter().count(), 4);
    });
}

#[test]
fn deleting_and_replacing_neighbours_loses_nothing() {
    // The classic bug: an insert linked after an item that a concurrent delete or RCU
    // update is unlinking. Adjacent keys in one ring make that the common case.
    explore(|| {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Sampling, None)));
        for k in 0u8..4 {
            index.insert(&[k * 2], &[k; 16]);
        }
        let handles: Vec<_> = (0u8..3)
            .map(|t| {
                let index = index.clone();
                thread::spawn(move || match t {
                    0 => assert!(index.remove(&[2])),
                    1 => assert!(index.update(&[4], &[9; 20])),
                    _ => {
                        assert!(index.insert(&[3], &[3]));
                        assert!(index.insert(&[5], &[5]));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let mut keys: Vec<_> = index.iter().map(|(k, _)| k[0]).collect();
        keys.sort();
        assert_eq!(keys, vec![0, 3, 4, 5, 6]);
        assert_eq!(index.get(&[4]), Some(vec![9; 20]));
    });
}

#[test]
fn splits_race_with_writes_and_reads() {
    explore(|| {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Random, Some(2))));
        for k in 0u8..3 {
            index.insert(&[k], &[k; 12]);
        }
        let handles: Vec<_> = (0u8..3)
            .map(|t| {
                let index = index.clone();
                thread::spawn(move || {
                    for k in 0u8..3 {
                        let key = [10 + t * 3 + k];
                        assert!(index.insert(&key, &key));
                        assert_eq!(index.get(&key), Some(key.to_vec()));
                    }
                    assert!(index.update(&[t], &[t; 30]));
                    if t == 0 {
                        assert!(index.remove(&[10]));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(index.stats().splits >= 1);
        assert_eq!(index.len(), 3 + 9 - 1);
        for t in 0u8..3 {
            assert_eq!(index.get(&[t]), Some(vec![t; 30]));
        }
        assert_eq!(index.get(&[10]), None);
        assert_eq!(index.iter().count(), 11);
    });
}

#[test]
fn compare_and_set_increments_are_not_lost() {
    explore(|| {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Sampling, None)));
        index.insert(b"n", &[0]);
        index.insert(b"m", b"counter:0");
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let index = index.clone();
                thread::spawn(move || {
                    loop {
                        let cur = index.get(b"n").unwrap();
                        if index.compare_and_set(b"n", &cur, &[cur[0] + 1]) {
                            break;
                        }
                    }
                    loop {
                        // Grows past 8 bytes on the way: switches from in place to RCU.
                        let cur = index.get(b"m").unwrap();
                        let mut next = cur.clone();
                        next.push(b'+');
                        if index.compare_and_set(b"m", &cur, &next) {
                            break;
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(index.get(b"n"), Some(vec![3]));
        assert_eq!(index.get(b"m").as_deref(), Some(&b"counter:0+++"[..]));
    });
}

/// Read-modify-writes by version: each thread reads the value in place and replaces
/// that version, while another rewrites one key with the bytes it already holds, which
/// a version held across it must not survive (the same bytes, not the same version).
#[test]
fn replaced_versions_are_not_lost() {
    explore(|| {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Sampling, None)));
        index.insert(b"n", &[0]);
        index.insert(b"m", b"counter:0");
        let mut handles: Vec<_> = (0..2)
            .map(|_| {
                let index = index.clone();
                thread::spawn(move || {
                    for key in [&b"n"[..], b"m"] {
                        loop {
                            let guard = crossbeam_epoch::pin();
                            let version = index.read_version(key, &guard).unwrap();
                            let next = match version.value() {
                                [n] => vec![n + 1],
                                long => [long, b"+"].concat(),
                            };
                            if index.replace_version(key, &version, &next) {
                                break;
                            }
                        }
                    }
                })
            })
            .collect();
        let same = index.clone();
        handles.push(thread::spawn(move || {
            let guard = crossbeam_epoch::pin();
            let version = same.read_version(b"m", &guard).unwrap();
            let bytes = version.value().to_vec();
            // Another version of the same bytes, unless a counter got there first.
            if same.compare_and_set(b"m", &bytes, &bytes) {
                assert!(!same.replace_version(b"m", &version, b"lost"));
            }
        }));
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(index.get(b"n"), Some(vec![2]));
        assert_eq!(index.get(b"m").as_deref(), Some(&b"counter:0++"[..]));
    });
}

/// A read-modify-write of an inline value by version (rewritten in the item read, with
/// no predecessor in hand) races two read-modify-writes that make the value long, each
/// replacing the item (RCU). All three are compare-and-sets from the value they read,
/// so the final value must be one the three make in some order, one after another: a
/// version written into an item another had replaced would be lost, and the final
/// value built on the bytes it was to replace.
#[test]
fn a_version_replaced_in_its_item_races_replacements_of_the_item() {
    fn sequential(order: [usize; 3]) -> (bool, Vec<u8>) {
        let mut value = b"aaaaaaaa".to_vec();
        let mut replaced = false;
        for op in order {
            match op {
                0 => {
                    replaced = value == b"aaaaaaaa";
                    if replaced {
                        value = b"bbbbbbbb".to_vec();
                    }
                }
                1 => value = [&b"x"[..], &value].concat(),
                _ => value.push(b'y'),
            }
        }
        (replaced, value)
    }
    let allowed: Vec<(bool, Vec<u8>)> = ORDERS.into_iter().map(sequential).collect();
    explore(move || {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Random, None)));
        for k in [b"j", b"k", b"l"] {
            index.insert(k, b"aaaaaaaa");
        }
        let rewrite = |index: Arc<HotRing>, f: fn(&[u8]) -> Vec<u8>| loop {
            let v = index.get(b"k").unwrap();
            if index.compare_and_set(b"k", &v, &f(&v)) {
                break;
            }
        };
        let by_version = {
            let index = index.clone();
            thread::spawn(move || {
                let guard = crossbeam_epoch::pin();
                let v = index.read_version(b"k", &guard).unwrap();
                v.value() == b"aaaaaaaa" && index.replace_version(b"k", &v, b"bbbbbbbb")
            })
        };
        let prefixed = {
            let index = index.clone();
            thread::spawn(move || rewrite(index, |v| [&b"x"[..], v].concat()))
        };
        let suffixed = {
            let index = index.clone();
            thread::spawn(move || rewrite(index, |v| [v, &b"y"[..]].concat()))
        };
        let replaced = by_version.join().unwrap();
        prefixed.join().unwrap();
        suffixed.join().unwrap();
        let outcome = (replaced, index.get(b"k").unwrap());
        assert!(allowed.contains(&outcome), "not linearizable: {outcome:?}");
        assert_eq!(index.get(b"j").as_deref(), Some(&b"aaaaaaaa"[..]));
        assert_eq!(index.get(b"l").as_deref(), Some(&b"aaaaaaaa"[..]));
    });
}

/// One key's in-place update (reached from the head, with no predecessor in hand), a
/// delete and an RCU update that changes the value's length, all at once. The outcome
/// must be one of the six orders the three could have run in, one after another.
#[test]
fn in_place_update_races_delete_and_rcu_update_of_its_item() {
    type Outcome = (bool, bool, bool, Option<Vec<u8>>);
    // (upsert inserted, remove removed, update updated, final value) for each order.
    fn sequential(order: [usize; 3]) -> Outcome {
        let mut value: Option<Vec<u8>> = Some(b"aaaaaaaa".to_vec());
        let mut out = (false, false, false);
        for op in order {
            match op {
                0 => {
                    out.0 = value.is_none();
                    value = Some(b"bbbbbbbb".to_vec());
                }
                1 => out.1 = value.take().is_some(),
                _ => {
                    out.2 = value.is_some();
                    if out.2 {
                        value = Some(b"cc".to_vec());
                    }
                }
            }
        }
        (out.0, out.1, out.2, value)
    }
    let allowed: Vec<Outcome> = ORDERS.into_iter().map(sequential).collect();
    explore(move || {
        let index = Arc::new(HotRing::with_config(tiny(HotspotStrategy::Random, None)));
        for k in [b"j", b"k", b"l"] {
            index.insert(k, b"aaaaaaaa");
        }
        let spawn = |op: usize| {
            let index = index.clone();
            thread::spawn(move || match op {
                0 => index.upsert(b"k", b"bbbbbbbb"),
                1 => index.remove(b"k"),
                _ => index.update(b"k", b"cc"),
            })
        };
        let handles = [spawn(0), spawn(1), spawn(2)];
        let [a, b, c] = handles.map(|h| h.join().unwrap());
        let outcome = (a, b, c, index.get(b"k"));
        assert!(allowed.contains(&outcome), "not linearizable: {outcome:?}");
        assert_eq!(index.get(b"j").as_deref(), Some(&b"aaaaaaaa"[..]));
        assert_eq!(index.get(b"l").as_deref(), Some(&b"aaaaaaaa"[..]));
        assert_eq!(index.len(), 2 + usize::from(outcome.3.is_some()));
    });
}
