//! Every operation of the index on a few keys, single-threaded, with rings small enough
//! to split: small enough for Miri, which checks the `unsafe` underneath (item layout
//! and allocation, tagged pointers, reclamation through the epoch collector) for
//! use-after-free, out-of-bounds access and misalignment. `scripts/test.sh` runs it as
//! `cargo +nightly miri test -p hotring --test miri`; it is an ordinary test otherwise.

use hotring::{Config, HotRing, HotspotStrategy};

#[test]
fn every_operation_on_a_few_keys() {
    for strategy in [HotspotStrategy::Sampling, HotspotStrategy::Random] {
        let index = HotRing::with_config(Config {
            strategy,
            initial_depth: 0,
            max_ring_len: Some(3),
            split_cost: None,
            shared_split_len: Some(1),
            sample_period: 1,
        });
        let keys: Vec<Vec<u8>> = (0u8..12).map(|i| vec![i; 1 + i as usize % 5]).collect();
        for k in &keys {
            assert!(index.insert(k, &[k[0]; 4]));
        }
        assert!(index.stats().splits > 0, "rings of 3 split");
        for k in &keys {
            // Hot reads move heads; in place, then RCU, then back to inline.
            assert_eq!(index.get(k), Some(vec![k[0]; 4]));
            assert!(!index.upsert(k, &[1; 4]));
            assert!(index.update(k, &[2; 20]));
            assert!(index.compare_and_set(k, &[2; 20], &[3; 8]));
            assert_eq!(index.get(k), Some(vec![3; 8]));
            // Read in place, inline then long, and replaced by version.
            let guard = crossbeam_epoch::pin();
            let version = index.read_version(k, &guard).unwrap();
            assert_eq!(version.value(), [3; 8]);
            assert!(index.replace_version(k, &version, &[4; 30]));
            let version = index.read_version(k, &guard).unwrap();
            assert_eq!(version.value(), [4; 30]);
            assert!(index.replace_version(k, &version, &[3; 8]));
            assert!(!index.replace_version(k, &version, &[5; 8]));
        }
        // Prefetching reads the directory and the heads, missing keys' too.
        index.prefetch(keys.iter().map(|k| &k[..]).chain([&b"absent"[..]]));
        for k in keys.iter().step_by(2) {
            assert!(index.remove(k));
            assert!(!index.remove(k));
        }
        let mut seen: Vec<Vec<u8>> = index.iter().map(|(k, _)| k).collect();
        seen.sort();
        let mut expected: Vec<Vec<u8>> = keys.iter().skip(1).step_by(2).cloned().collect();
        expected.sort();
        assert_eq!(seen, expected);
        assert_eq!(index.len(), 6);
    }
}
