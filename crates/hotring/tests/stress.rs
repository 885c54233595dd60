//! Multi-threaded stress: many more threads than cores, hot and cold keys, every
//! operation at once, rings forced to split constantly.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use hotring::{Config, HotRing, HotspotStrategy};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 16;

fn small_rings(strategy: HotspotStrategy) -> Config {
    Config {
        strategy,
        initial_depth: 0,
        max_ring_len: Some(4),
        split_cost: Some(1.5),
        shared_split_len: Some(1),
        sample_period: 2,
    }
}

/// A value that names its key, and whose length picks the in-place or RCU path.
fn value_for(key: u32, writer: u32, seq: u32, long: bool) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(&(writer ^ seq.rotate_left(8)).to_le_bytes());
    if long {
        v.extend(std::iter::repeat_n((key ^ seq) as u8, 24));
        v.extend_from_slice(&key.to_le_bytes());
    }
    v
}

fn assert_written_for(key: u32, v: &[u8]) {
    assert!(
        v.len() == 8 || v.len() == 36,
        "torn length {} for key {key}",
        v.len()
    );
    assert_eq!(
        &v[..4],
        &key.to_le_bytes(),
        "value of another key under key {key}"
    );
    if v.len() == 36 {
        assert_eq!(&v[32..], &key.to_le_bytes());
        assert!(v[8..32].iter().all(|b| *b == v[8]), "torn long value");
    }
}

fn seed() -> u64 {
    std::env::var("HOTRING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed)
}

fn rounds() -> u32 {
    std::env::var("HOTRING_STRESS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

#[test]
fn no_lost_writes_and_reads_see_written_values() {
    for strategy in [HotspotStrategy::Sampling, HotspotStrategy::Random] {
        let index = Arc::new(HotRing::with_config(small_rings(strategy)));
        let barrier = Arc::new(Barrier::new(THREADS));
        let hot_keys = 8u32;
        let handles: Vec<_> = (0..THREADS as u32)
            .map(|t| {
                let (index, barrier) = (index.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed() ^ t as u64);
                    // Keys this thread owns: it alone writes them, so it knows their state.
                    let own = |i: u32| 1_000 + t * 100_000 + i;
                    let mut present = HashSet::new();
                    barrier.wait();
                    for seq in 0..rounds() {
                        let roll = rng.gen_range(0..100);
                        if roll < 40 {
                            // Shared hot keys: everyone writes, everyone reads.
                            let k = rng.gen_range(0..hot_keys);
                            if roll < 15 {
                                index.upsert(&k.to_le_bytes(), &value_for(k, t, seq, rng.gen()));
                            } else if let Some(v) = index.get(&k.to_le_bytes()) {
                                assert_written_for(k, &v);
                            }
                        } else {
                            let i = rng.gen_range(0..400);
                            let k = own(i);
                            let key = k.to_le_bytes();
                            match roll {
                                40..=64 => {
                                    let fresh =
                                        index.insert(&key, &value_for(k, t, seq, rng.gen()));
                                    assert_eq!(fresh, present.insert(k), "insert of own key {k}");
                                }
                                65..=74 => {
                                    let updated =
                                        index.update(&key, &value_for(k, t, seq, rng.gen()));
                                    assert_eq!(updated, present.contains(&k));
                                }
                                75..=84 => {
                                    assert_eq!(
                                        index.remove(&key),
                                        present.remove(&k),
                                        "remove of own key {k}"
                                    );
                                    assert_eq!(
                                        index.get(&key),
                                        None,
                                        "delete of {k} did not stick"
                                    );
                                }
                                85..=87 => {
                                    // Reads the directory a split may be replacing.
                                    let near: Vec<[u8; 4]> =
                                        (i..i + 20).map(|i| own(i).to_le_bytes()).collect();
                                    index.prefetch(near.iter().map(|k| &k[..]));
                                }
                                _ => match index.get(&key) {
                                    Some(v) => {
                                        assert!(present.contains(&k), "deleted key {k} came back");
                                        assert_written_for(k, &v);
                                    }
                                    None => assert!(!present.contains(&k), "lost insert of {k}"),
                                },
                            }
                        }
                    }
                    present
                })
            })
            .collect();
        let mut expected: HashSet<Vec<u8>> = HashSet::new();
        for h in handles {
            expected.extend(
                h.join()
                    .unwrap()
                    .into_iter()
                    .map(|k| k.to_le_bytes().to_vec()),
            );
        }
        let found: HashSet<Vec<u8>> = index
            .iter()
            .map(|(k, _)| k)
            .filter(|k| u32::from_le_bytes(k[..4].try_into().unwrap()) >= 1000)
            .collect();
        assert_eq!(found, expected);
        let stats = index.stats();
        assert!(stats.splits > 100, "{strategy:?}: {} splits", stats.splits);
        assert_eq!(
            stats.len,
            expected.len()
                + (0..hot_keys)
                    .filter(|k| index.get(&k.to_le_bytes()).is_some())
                    .count()
        );
    }
}

#[test]
fn compare_and_set_counters_lose_no_increment() {
    // Counters: one fits in 8 bytes (in-place path), two do not (RCU path; the last
    // replaced by version, read in place).
    let index = Arc::new(HotRing::with_config(small_rings(HotspotStrategy::Sampling)));
    let encode_long = |n: u64| format!("counter={n:020}").into_bytes();
    index.insert(b"short", &0u64.to_le_bytes());
    index.insert(b"long", &encode_long(0));
    index.insert(b"by version", &encode_long(0));
    for i in 0u32..200 {
        index.insert(&i.to_be_bytes(), b"filler");
    }
    let per_thread = rounds() as u64 / 10;
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let index = index.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    loop {
                        let cur = index.get(b"short").unwrap();
                        let n = u64::from_le_bytes(cur.as_slice().try_into().unwrap());
                        if index.compare_and_set(b"short", &cur, &(n + 1).to_le_bytes()) {
                            break;
                        }
                    }
                    loop {
                        let cur = index.get(b"long").unwrap();
                        let n: u64 = std::str::from_utf8(&cur[8..]).unwrap().parse().unwrap();
                        if index.compare_and_set(b"long", &cur, &encode_long(n + 1)) {
                            break;
                        }
                    }
                    loop {
                        let guard = crossbeam_epoch::pin();
                        let version = index.read_version(b"by version", &guard).unwrap();
                        let n: u64 = std::str::from_utf8(&version.value()[8..])
                            .unwrap()
                            .parse()
                            .unwrap();
                        if index.replace_version(b"by version", &version, &encode_long(n + 1)) {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total = per_thread * THREADS as u64;
    assert_eq!(index.get(b"short").unwrap(), total.to_le_bytes());
    assert_eq!(index.get(b"long").unwrap(), encode_long(total));
    assert_eq!(index.get(b"by version").unwrap(), encode_long(total));
}

#[test]
fn iterator_sees_every_stable_key_exactly_once_across_splits() {
    let index = Arc::new(HotRing::with_config(small_rings(HotspotStrategy::Sampling)));
    let stable: Vec<u32> = (0..3_000).map(|i| i * 7 + 1).collect();
    for k in &stable {
        index.insert(&k.to_le_bytes(), b"stable");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..THREADS as u32 - 1)
        .map(|t| {
            let (index, stop) = (index.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed() + t as u64);
                // Churn keys that are never stable (multiples of 7), forcing splits.
                while !stop.load(Ordering::Relaxed) {
                    let k = rng.gen_range(0..200_000u32) * 7;
                    let key = k.to_le_bytes();
                    match rng.gen_range(0..3) {
                        0 => {
                            index.insert(&key, b"churn");
                        }
                        1 => {
                            index.remove(&key);
                        }
                        _ => {
                            index.upsert(&key, b"churned value of some length");
                        }
                    }
                }
            })
        })
        .collect();
    // Odd rounds use the numeric-cursor scan, resumed every few keys.
    for round in 0..6 {
        let mut entries = Vec::new();
        if round % 2 == 0 {
            entries.extend(index.iter());
        } else {
            let mut cursor = Some(0);
            while let Some(from) = cursor {
                // Round 3 also stops at every second ring start, as a sparse
                // index's SCAN does.
                let max_rings = if round == 3 { 2 } else { usize::MAX };
                cursor = index.scan_within(from, round, max_rings, |k, v, _| {
                    entries.push((k.to_vec(), v.to_vec()))
                });
            }
        }
        let mut seen = HashSet::new();
        for (k, v) in entries {
            assert!(seen.insert(k.clone()), "key {k:?} returned twice");
            let n = u32::from_le_bytes(k[..4].try_into().unwrap());
            if n % 7 == 1 {
                assert_eq!(v, b"stable");
            }
        }
        for k in &stable {
            assert!(
                seen.contains(k.to_le_bytes().as_slice()),
                "stable key {k} missed"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in churners {
        c.join().unwrap();
    }
    assert!(index.stats().splits > 100);
}
