//! Leak check: every item allocated is freed once the index is dropped and the epoch
//! collector has run. Its own test binary, with one test: the count of allocated items
//! is process-wide, and no other test may keep threads pinned.

use std::sync::Arc;

use hotring::{Config, HotRing, HotspotStrategy};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 16;

#[test]
fn every_item_is_reclaimed_after_drop() {
    assert_eq!(
        hotring::allocated_items(),
        0,
        "nothing allocated before the test"
    );
    let index = Arc::new(HotRing::with_config(Config {
        strategy: HotspotStrategy::Random,
        initial_depth: 0,
        max_ring_len: Some(4),
        split_cost: Some(1.5),
        shared_split_len: Some(1),
        sample_period: 2,
    }));
    let handles: Vec<_> = (0..THREADS as u32)
        .map(|t| {
            let index = index.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(0x5eed * 3 + t as u64);
                for _ in 0..5_000 {
                    let k = rng.gen_range(0..500u32).to_le_bytes();
                    match rng.gen_range(0..4) {
                        0 => {
                            index.remove(&k);
                        }
                        1 => {
                            index.upsert(&k, &[7; 30]);
                        }
                        2 => {
                            index.upsert(&k, &[t as u8; 8]);
                        }
                        _ => {
                            index.get(&k);
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let allocated = hotring::allocated_items();
    assert!(
        allocated >= index.len() as i64,
        "{allocated} allocated for {} keys",
        index.len()
    );
    drop(Arc::into_inner(index).expect("all threads joined"));
    // Retired items are freed by the epoch collector once it advances; drive it.
    for _ in 0..10_000 {
        if hotring::allocated_items() == 0 {
            break;
        }
        crossbeam_epoch::pin().flush();
        std::thread::yield_now();
    }
    assert_eq!(hotring::allocated_items(), 0, "items leaked");
}
