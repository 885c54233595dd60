//! Writes in pinned batches free what they replace as they go. Its own test binary:
//! the count of allocated items is process-wide.

use hotring::chain::ChainingHash;
use hotring::HotRing;

/// A writer that pins once per batch runs the collector on one pin in 128 (crossbeam's
/// rule for outer pins): once per 4,096 writes at 32 a batch, freeing a few bags of 64
/// each time. RCU writes retire one item each, so without the index handing its bags
/// over by bytes the old versions would pile up, as they did in the chaining hash's
/// benchmark (1.9 GB resident after 4 s of 50% writes of 100-byte values). Both
/// structures share that rule; both are checked here, one after the other, as the
/// count of allocated items is process-wide.
#[test]
fn writes_in_pinned_batches_free_the_versions_they_replace() {
    const KEYS: u32 = 1_000;
    const BATCHES: u32 = 20_000;
    // A few rounds of a few bags: far below what 640,000 replaced versions would hold.
    const HELD_MAX: i64 = 20_000;
    let value = |batch: u32| vec![batch as u8; 100];

    let index = HotRing::new();
    let chain = ChainingHash::for_keys(KEYS as usize, 8);
    let before = hotring::allocated_items();
    for k in 0..KEYS {
        index.insert(&k.to_le_bytes(), &value(0));
        chain.upsert(&k.to_le_bytes(), &value(0));
    }
    let mut held = [0i64; 2];
    let mut last_in_index = vec![0u32; KEYS as usize];
    for batch in 1..=BATCHES {
        let v = value(batch);
        let keys = (0..32).map(|i| (batch * 32 + i) % KEYS);
        if batch % 2 == 0 {
            let pinned = index.pin();
            for k in keys {
                assert!(!pinned.upsert(&k.to_le_bytes(), &v));
                last_in_index[k as usize] = batch;
            }
        } else {
            let pinned = chain.pin();
            keys.for_each(|k| assert!(!pinned.upsert(&k.to_le_bytes(), &v)));
        }
        let live = hotring::allocated_items() - before - 2 * KEYS as i64;
        held[(batch % 2) as usize] = held[(batch % 2) as usize].max(live);
    }
    assert!(
        held.iter().all(|&h| h < HELD_MAX),
        "replaced versions still allocated at most {held:?} (hotring, chain), \
         {HELD_MAX} allowed"
    );
    for k in 0..KEYS {
        assert_eq!(
            index.get(&k.to_le_bytes()),
            Some(value(last_in_index[k as usize]))
        );
    }
}
