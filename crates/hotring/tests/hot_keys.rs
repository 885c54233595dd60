//! `HotRing::hot_keys` finds the keys that draw the traffic, with about their share,
//! from several threads at once, and follows the hotspot when it moves.

use std::sync::Arc;

use hotring::HotRing;
use rand::{rngs::SmallRng, Rng, SeedableRng};

fn key(i: u32) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

/// Four threads read; `hot` draws half the reads, `warm` a fifth, the rest spread
/// over 5,000 keys.
fn drive(index: &Arc<HotRing>, hot: u32, warm: u32, seed: u64) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let index = index.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed + t);
                for _ in 0..200_000 {
                    let p: f64 = rng.gen();
                    let k = if p < 0.5 {
                        hot
                    } else if p < 0.7 {
                        warm
                    } else {
                        rng.gen_range(0..5_000)
                    };
                    assert!(index.get(&key(k)).is_some());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn finds_the_hot_keys_and_their_shares() {
    let index = Arc::new(HotRing::new());
    for i in 0..5_000 {
        index.insert(&key(i), b"v");
    }
    drive(&index, 42, 7, 1);
    let top = index.hot_keys(3);
    assert_eq!(top.len(), 3, "{top:?}");
    assert_eq!(top[0].0, key(42), "{top:?}");
    assert_eq!(top[1].0, key(7), "{top:?}");
    assert!((0.4..0.6).contains(&top[0].1), "{top:?}");
    assert!((0.12..0.28).contains(&top[1].1), "{top:?}");
    // One key's share, as OBJECT FREQ asks for it, agrees with the ranking (within
    // the decay of the milliseconds between the two reads).
    for (k, share) in [(42, top[0].1), (7, top[1].1)] {
        let alone = index.access_share(&key(k));
        assert!(
            (alone - share).abs() < 0.01 * share,
            "{k}: {alone} vs {share}"
        );
    }
    assert_eq!(index.access_share(&key(99_999)), 0.0);

    // The hotspot moves; counts halve every second, so the table follows it.
    std::thread::sleep(std::time::Duration::from_secs(3));
    drive(&index, 4_000, 3_000, 2);
    let top = index.hot_keys(2);
    assert_eq!(top[0].0, key(4_000), "{top:?}");
    assert_eq!(top[1].0, key(3_000), "{top:?}");

    // A removed key is not reported.
    index.remove(&key(4_000));
    assert!(index.hot_keys(5).iter().all(|(k, _)| *k != key(4_000)));
}

#[test]
fn peeking_reports_heat_without_counting_an_access() {
    let index = HotRing::new();
    for i in 0..5_000 {
        index.insert(&key(i), b"v");
    }
    // Make key 7 hot enough that hotspot detection moves its ring's head onto it.
    for _ in 0..50_000 {
        assert!(index.get(&key(7)).is_some());
    }
    assert_eq!(
        index.peek_with(&key(7), |v, access| (v.to_vec(), access.heat)),
        Some((b"v".to_vec(), u16::MAX))
    );
    assert_eq!(index.peek_with(&key(99_999), |_, access| access.heat), None);
    index.reset_access_stats();
    for i in 0..5_000 {
        assert!(index.peek_with(&key(i), |_, _| ()).is_some());
    }
    let stats = index.stats();
    assert_eq!(
        stats.items_per_access, 0.0,
        "peeks were counted as accesses: {stats:?}"
    );
    assert!(index.hot_keys(1).first().is_some_and(|(k, _)| k == &key(7)));
}
