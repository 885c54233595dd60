//! Model-based tests: random operation sequences, replayed against `BTreeMap`, on
//! indexes configured to split often so that sequences cross many splits.

use std::collections::BTreeMap;

use hotring::{Config, HotRing, HotspotStrategy};
use proptest::prelude::*;
use rand::{rngs::SmallRng, Rng, SeedableRng};

#[derive(Clone, Debug)]
enum Op {
    Insert(u16, Vec<u8>),
    Upsert(u16, Vec<u8>),
    Update(u16, Vec<u8>),
    Remove(u16),
    Get(u16),
    CompareAndSet(u16, Vec<u8>, Vec<u8>),
    Iterate,
}

fn key(k: u16) -> Vec<u8> {
    // Varied lengths, including empty-ish and longer than a word.
    let mut v = format!("k{k}").into_bytes();
    v.resize(1 + (k as usize % 13), b'#');
    v.extend_from_slice(&k.to_le_bytes());
    v
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..=8),
        prop::collection::vec(any::<u8>(), 9..40),
    ]
}

fn op(keys: u16) -> impl Strategy<Value = Op> {
    let k = 0..keys;
    prop_oneof![
        3 => (k.clone(), value()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (k.clone(), value()).prop_map(|(k, v)| Op::Upsert(k, v)),
        2 => (k.clone(), value()).prop_map(|(k, v)| Op::Update(k, v)),
        2 => k.clone().prop_map(Op::Remove),
        4 => k.clone().prop_map(Op::Get),
        1 => (k, value(), value()).prop_map(|(k, a, b)| Op::CompareAndSet(k, a, b)),
        1 => Just(Op::Iterate),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop_oneof![
            Just(HotspotStrategy::Sampling),
            Just(HotspotStrategy::Random),
            Just(HotspotStrategy::FixedHead)
        ],
        0u32..3,
        prop_oneof![Just(None), (1u32..6).prop_map(Some)],
        1u32..6,
        prop_oneof![Just(None), (1u32..3).prop_map(Some)],
    )
        .prop_map(
            |(strategy, initial_depth, max_ring_len, sample_period, shared_split_len)| Config {
                strategy,
                initial_depth,
                max_ring_len,
                split_cost: Some(1.2),
                shared_split_len,
                sample_period,
            },
        )
}

fn check(index: &HotRing, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    assert_eq!(index.len(), model.len());
    let mut seen: Vec<_> = index.iter().collect();
    seen.sort();
    let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(seen, expected);
    // The numeric-cursor scan, resumed after every key, sees the same.
    let mut scanned = Vec::new();
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        cursor = index.scan(from, 1, |k, v, _| scanned.push((k.to_vec(), v.to_vec())));
    }
    scanned.sort();
    assert_eq!(scanned, expected);
    // And so does the scan that stops at the first ring start past its cursor.
    let mut scanned = Vec::new();
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        cursor = index.scan_within(from, 2, 1, |k, v, _| scanned.push((k.to_vec(), v.to_vec())));
        assert!(
            cursor.is_none_or(|next| next > from),
            "the scan stalled at {from}"
        );
    }
    scanned.sort();
    assert_eq!(scanned, expected);
}

fn run(config: Config, ops: Vec<Op>) {
    let index = HotRing::with_config(config);
    let mut model = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => {
                let fresh = !model.contains_key(&key(k));
                assert_eq!(index.insert(&key(k), &v), fresh);
                model.entry(key(k)).or_insert(v);
            }
            Op::Upsert(k, v) if v.len() % 2 == 0 => {
                assert_eq!(index.upsert(&key(k), &v), model.insert(key(k), v).is_none())
            }
            Op::Upsert(k, v) => {
                // The replaced value is shown unless it was inline.
                let mut shown = None;
                let created = index.upsert_replacing(&key(k), &v, |old| shown = Some(old.to_vec()));
                let old = model.insert(key(k), v);
                assert_eq!(created, old.is_none());
                let expected = old.filter(|o| o.len() > hotring::INLINE_VALUE_MAX);
                assert_eq!(shown, expected);
            }
            Op::Update(k, v) => {
                let present = model.contains_key(&key(k));
                assert_eq!(index.update(&key(k), &v), present);
                if present {
                    model.insert(key(k), v);
                }
            }
            Op::Remove(k) => assert_eq!(index.remove(&key(k)), model.remove(&key(k)).is_some()),
            Op::Get(k) => assert_eq!(index.get(&key(k)), model.get(&key(k)).cloned()),
            Op::CompareAndSet(k, expected, new) => {
                // Half the time compare against the real value, so the CAS can succeed.
                let expected = match model.get(&key(k)) {
                    Some(cur) if expected.len() % 2 == 0 => cur.clone(),
                    _ => expected,
                };
                let matches = model.get(&key(k)) == Some(&expected);
                assert_eq!(index.compare_and_set(&key(k), &expected, &new), matches);
                if matches {
                    model.insert(key(k), new);
                }
            }
            Op::Iterate => check(&index, &model),
        }
    }
    check(&index, &model);
    let stats = index.stats();
    assert_eq!(stats.len, model.len());
    let ring_items: usize = stats.ring_lengths.iter().map(|(len, n)| len * n).sum();
    assert_eq!(
        ring_items,
        model.len(),
        "ring lengths {:?}",
        stats.ring_lengths
    );
    assert_eq!(
        stats.rings,
        stats.ring_lengths.iter().map(|(_, n)| n).sum::<usize>()
    );
    // A sample large enough to see everything, from any starting ring, sees the
    // same shape; a small one sees whole rings only, never more than exist.
    for from in [0, u64::MAX / 3, u64::MAX] {
        let whole = index.stats_sampled(from, usize::MAX);
        assert_eq!(whole.ring_lengths, stats.ring_lengths, "from {from:#x}");
        assert_eq!((whole.rings, whole.bytes), (stats.rings, stats.bytes));
        let part = index.stats_sampled(from, 10);
        let seen: usize = part.ring_lengths.iter().map(|(_, n)| n).sum();
        assert!(seen <= stats.rings && part.ring_lengths.iter().all(|(len, _)| *len < 10));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(128)
    ))]

    #[test]
    fn matches_btreemap(config in config(), ops in prop::collection::vec(op(200), 1..600)) {
        run(config, ops);
    }
}

#[test]
fn grows_through_many_splits() {
    let index = HotRing::with_config(Config {
        initial_depth: 0,
        max_ring_len: Some(4),
        ..Config::default()
    });
    let mut model = BTreeMap::new();
    for i in 0u32..20_000 {
        let k = i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec();
        index.insert(&k, &i.to_le_bytes());
        model.insert(k, i.to_le_bytes().to_vec());
    }
    let stats = index.stats();
    assert!(stats.splits > 2000, "only {} splits", stats.splits);
    assert!(
        stats.ring_lengths.iter().all(|(len, _)| *len <= 8),
        "{:?}",
        stats.ring_lengths
    );
    check(&index, &model);
    for (k, v) in &model {
        assert_eq!(index.get(k).as_ref(), Some(v));
    }
}

#[test]
fn a_cold_slot_starts_its_lookups_in_its_own_range() {
    // A grown index has several directory slots to a ring. A slot that no access has
    // placed starts at its ring's rehash item and walks the other slots' items to reach
    // its own; its first lookup puts the head on the slot's first item, so a second
    // lookup of the same key walks about half a slot, not half a ring. (Rings shared
    // by slots split early by default; this needs them long.)
    let index = HotRing::with_config(Config {
        shared_split_len: None,
        ..Config::default()
    });
    let mut rng = SmallRng::seed_from_u64(7);
    let space = 200_000u32;
    for _ in 0..space {
        let k = format!("key:{:012}", rng.gen_range(0..space));
        index.upsert(k.as_bytes(), b"v");
    }
    let stats = index.stats();
    let keys_per_slot = stats.len as f64 / stats.directory_slots as f64;
    let keys_per_ring = stats.len as f64 / stats.rings as f64;
    assert!(keys_per_ring >= 2.0 * keys_per_slot, "{stats:?}");
    let present: Vec<String> = (0..space)
        .map(|i| format!("key:{i:012}"))
        .filter(|k| index.contains_key(k.as_bytes()))
        .collect();
    let (mut accesses, mut visits) = (0, 0);
    for _ in 0..5_000 {
        let k = present[rng.gen_range(0..present.len())].as_bytes();
        assert!(index.contains_key(k));
        let before = index.access_totals();
        assert!(index.contains_key(k));
        let after = index.access_totals();
        accesses += after.0 - before.0;
        visits += after.1 - before.1;
    }
    let walked = visits as f64 / accesses as f64;
    // Walking from the ring's start instead visited 5.7 items here.
    assert!(
        walked < keys_per_slot + 1.0,
        "{walked} items per second lookup with {keys_per_slot:.2} keys per slot, {keys_per_ring:.1} per ring"
    );
}

/// Items visited per lookup of uniformly drawn present keys, after a load of random
/// keys as `redis-benchmark -r` makes.
fn uniform_lookup_cost(config: Config) -> (f64, hotring::Stats) {
    let index = HotRing::with_config(config);
    let mut rng = SmallRng::seed_from_u64(5);
    let space = 200_000u32;
    for _ in 0..space {
        let k = format!("key:{:012}", rng.gen_range(0..space));
        index.upsert(k.as_bytes(), b"v");
    }
    let present: Vec<String> = (0..space)
        .map(|i| format!("key:{i:012}"))
        .filter(|k| index.contains_key(k.as_bytes()))
        .collect();
    for _ in 0..400_000 {
        assert!(index.contains_key(present[rng.gen_range(0..present.len())].as_bytes()));
    }
    index.reset_access_stats();
    for _ in 0..200_000 {
        assert!(index.contains_key(present[rng.gen_range(0..present.len())].as_bytes()));
    }
    let stats = index.stats();
    (stats.items_per_access, stats)
}

#[test]
fn a_ring_shared_by_slots_splits_before_a_slot_holds_three_items() {
    // A lookup whose head lies past its key walks from the ring's rehash item through
    // the slots before its own. Long shared rings made that a large part of a uniform
    // load's cost; splitting them early (no doubling, a rehash item each) cuts it.
    let (long, long_stats) = uniform_lookup_cost(Config {
        shared_split_len: None,
        ..Config::default()
    });
    let (split, split_stats) = uniform_lookup_cost(Config::default());
    assert_eq!(split_stats.len, long_stats.len);
    assert_eq!(split_stats.directory_slots, long_stats.directory_slots);
    assert!(split_stats.rings > 2 * long_stats.rings, "{split_stats:?}");
    // Second entries shorten the long rings' walks too (session 90: 1.85 against 2.20
    // items, from 1.94 against 2.45 with heads alone); the early splits still cut a
    // tenth at least.
    assert!(
        split < long * 0.9,
        "{split} items per lookup with early splits, {long} without"
    );
}

#[test]
fn reads_split_rings_within_the_directory_but_never_double_it() {
    // A uniform read load finds every long ring costly. It may split rings that share
    // directory slots, which costs a rehash item each, but doubling the directory for
    // reads would grow the index's memory with no key added.
    let index = HotRing::new();
    let mut rng = SmallRng::seed_from_u64(11);
    let keys: Vec<String> = (0..50_000).map(|i| format!("key:{i:012}")).collect();
    for k in &keys {
        assert!(index.insert(k.as_bytes(), b"v"));
    }
    let loaded = index.stats();
    for _ in 0..1_000_000 {
        let k = &keys[rng.gen_range(0..keys.len())];
        assert!(index.contains_key(k.as_bytes()));
    }
    let read = index.stats();
    assert_eq!(read.directory_slots, loaded.directory_slots, "{read:?}");
    assert!(read.rings > loaded.rings, "no ring split: {read:?}");
    assert_eq!(read.len, keys.len());
    for k in &keys {
        assert!(index.contains_key(k.as_bytes()));
    }
}

/// One ring holding the keys 0..16 (one byte each, valued as themselves).
fn one_ring_of_16(strategy: HotspotStrategy) -> HotRing {
    let index = HotRing::with_config(Config::fixed(strategy, 16, 16));
    for i in 0u8..16 {
        index.insert(&[i], &[i]);
    }
    index
}

#[test]
fn sampling_moves_the_head_to_the_hot_key() {
    // One ring of 16 keys; one key drawn almost always: the head must move to it and
    // nearly every read must then hit the head.
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    for round in 0..2000u32 {
        let k = if round % 50 == 0 {
            (round / 50 % 16) as u8
        } else {
            11
        };
        assert_eq!(index.get(&[k]), Some(vec![k]));
    }
    index.reset_access_stats();
    for _ in 0..5000 {
        index.get(&[11]);
    }
    let stats = index.stats();
    assert!(stats.head_moves >= 1);
    assert!(
        stats.head_hit_rate > 0.95,
        "head hit rate {}",
        stats.head_hit_rate
    );
    assert!(
        stats.items_per_access < 1.1,
        "items per access {}",
        stats.items_per_access
    );
}

#[test]
fn three_hot_keys_of_a_ring_are_each_read_where_a_lookup_starts() {
    // The head and the slot's two entry words: a ring whose three hot keys lie apart
    // reads each of them at an entry point once rounds have placed them, where with
    // two entry points one of the three would walk from its neighbour.
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    let order: Vec<Vec<u8>> = index.iter().map(|(k, _)| k).collect();
    assert_eq!(order.len(), 16);
    // Drawn 3 : 2 : 1 in a cycle of six, which every-fifth-access counting sees whole.
    let cycle = [
        &order[2], &order[7], &order[2], &order[13], &order[7], &order[2],
    ];
    let read = |n: usize| {
        for k in cycle.iter().cycle().take(n) {
            assert!(index.contains_key(k));
        }
    };
    read(30_000);
    index.reset_access_stats();
    read(6_000);
    let stats = index.stats();
    assert!(
        stats.head_hit_rate > 0.95,
        "hit rate {} at the entry points",
        stats.head_hit_rate
    );
    assert!(
        stats.items_per_access < 1.05,
        "{} items per lookup",
        stats.items_per_access
    );
}

#[test]
fn a_key_rewritten_as_often_as_it_is_read_keeps_an_entry_point_for_both() {
    // A value longer than 8 bytes is rewritten by RCU: a new item takes the key's place.
    // Its reads want an entry point on the key's item (one item visited); its writes,
    // charged to the predecessor whose `next` they rewrite, want one there (two). Three
    // faults kept that from settling: the new version started with no count, so a
    // round saw few of the key's reads; the head moved to each new version under the
    // writer, whose head-word CASs (to move the head or start a round) then failed for
    // as long as the head stayed on the key; and a write of the item an entry point
    // holds walked from the ring's rehash item instead of the entry point before it.
    // Before: 0.33-0.84 of accesses at an entry point, 1.64-2.15 items each, over
    // seeds 1-12.
    for seed in [1, 2, 6, 8] {
        let index = HotRing::with_config(Config::fixed(HotspotStrategy::Sampling, 16, 16));
        let value = [7u8; 100];
        for i in 0u8..16 {
            index.insert(&[i], &value);
        }
        let order: Vec<Vec<u8>> = index.iter().map(|(k, _)| k).collect();
        let hot = &order[9];
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut run = |n: u32| {
            for _ in 0..n {
                // The hot key 9 times in 10, read twice as often as written; the rest
                // read.
                match rng.gen_range(0..30) {
                    0..=17 => assert!(index.contains_key(hot)),
                    18..=26 => assert!(!index.upsert(hot, &value)),
                    _ => assert!(index.contains_key(&order[rng.gen_range(0..16)])),
                }
            }
        };
        run(50_000);
        index.reset_access_stats();
        run(10_000);
        let stats = index.stats();
        assert!(
            stats.head_hit_rate > 0.85,
            "seed {seed}: {} of accesses at an entry point",
            stats.head_hit_rate
        );
        // At best 0.6 * 1 + 0.3 * 2 + 0.1 * (1 to 5): 1.3-1.6.
        assert!(
            stats.items_per_access < 1.7,
            "seed {seed}: {} items per access",
            stats.items_per_access
        );
    }
}

#[test]
fn the_head_is_weighed_by_what_a_lookup_behind_it_really_walks() {
    // A lookup whose key lies before the head starts again at the ring's rehash item,
    // not around a circle. Two warm keys, the 2nd item drawn twice as often as the
    // 12th: a head on the 12th costs the 2nd's lookups 4 items (head, rehash item, 1st,
    // 2nd), 3 per lookup overall; a head on the 2nd costs the 12th's 11, 4.3 overall.
    // Seed 000's circular weighing (the 2nd item 7 steps around from the 12th) chose
    // the 2nd: 4.33. The head does not stay on the 12th either: the 2nd, hotter than
    // the head, keeps starting rounds whose opening guess puts the head on it for a
    // while (3.5 per lookup here).
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    let order: Vec<Vec<u8>> = index.iter().map(|(k, _)| k).collect();
    assert_eq!(order.len(), 16);
    let (often, half_as_often) = (&order[1], &order[11]);
    let read = |n: u32| {
        for i in 0..n {
            let k = if i % 3 == 2 { half_as_often } else { often };
            assert!(index.contains_key(k));
        }
    };
    read(30_000);
    index.reset_access_stats();
    read(3_000);
    let walked = index.stats().items_per_access;
    assert!(walked < 4.0, "{walked} items per lookup");
}

#[test]
fn a_flat_ring_is_resampled_rarely_and_still_finds_a_new_hotspot() {
    // One ring of 16 keys read round-robin: no key is hotter than another. Each round
    // then finds no hotspot, and the next waits for an item to draw 12 counted (every
    // fifth) accesses: with equal shares that is 16 * 11 counted accesses, 880 reads,
    // per round. Re-sampling at the hot-ring rate (3) would take ~100 rounds here.
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    for n in 0..16_000u32 {
        let k = (n % 16) as u8;
        assert_eq!(index.get(&[k]), Some(vec![k]));
    }
    let rounds = index.stats().sample_rounds;
    assert!(rounds <= 16_000 / 880 + 2, "{rounds} sampling rounds");
    // A key that turns hot in the flat ring still gets the head.
    for _ in 0..2000 {
        index.get(&[7]);
    }
    index.reset_access_stats();
    for _ in 0..5000 {
        index.get(&[7]);
    }
    let hit = index.stats().head_hit_rate;
    assert!(hit > 0.95, "head hit rate {hit}");
}

#[test]
fn a_calm_ring_whose_head_stays_hottest_is_not_resampled_but_follows_a_swap() {
    // One ring of 16 keys: a hot key drawn three reads in four, a warm key eight items
    // after it (in ring order, which the iterator follows) the fourth, so the best head
    // is the hot key. The warm key draws three counted accesses every 60 reads; the head
    // leads meanwhile, so no round starts (counting only the warm key would start one
    // each time, ~260 in 16,000 reads). When the head is not the hottest item, because
    // the best head sits before it, the lead does not apply and rounds go on as before.
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    let order: Vec<u8> = index.iter().map(|(k, _)| k[0]).collect();
    let (hot, warm) = (order[2], order[10]);
    let read = |hot: u8, warm: u8, reads: u32| {
        for n in 0..reads {
            let k = if n % 4 == 3 { warm } else { hot };
            assert_eq!(index.get(&[k]), Some(vec![k]));
        }
    };
    read(hot, warm, 2000);
    let before = index.stats().sample_rounds;
    index.reset_access_stats();
    read(hot, warm, 16_000);
    let stats = index.stats();
    let rounds = stats.sample_rounds - before;
    assert!(rounds <= 10, "{rounds} sampling rounds");
    assert!(
        stats.head_hit_rate > 0.7,
        "head hit rate {}",
        stats.head_hit_rate
    );
    // The two keys swap shares: the head follows.
    read(warm, hot, 2000);
    index.reset_access_stats();
    read(warm, hot, 4000);
    let hit = index.stats().head_hit_rate;
    assert!(hit > 0.7, "head hit rate {hit} after the swap");
}

#[test]
fn after_a_hotspot_shift_a_cold_access_moves_its_rings_head_at_once() {
    // 2,048 rings of 8 keys. A first set of keys is hot until the rounds have put the
    // heads of their rings on them; then the load moves to other keys, each read five
    // times in a row, so each ring draws one counted access (every fifth of a
    // thread's) of its new key. Alone that would start nothing (a calm ring waits for
    // three, a flat one for twelve). The fall in the head-hit rate marks a shift, after
    // which such an access moves the head of a calm ring, one whose last round found a
    // hotspot: ~1,100 of them here.
    const KEYS: u32 = 16_384;
    let index = HotRing::with_config(Config::fixed(HotspotStrategy::Sampling, KEYS as usize, 8));
    let key = |k: u32| k.to_be_bytes();
    for k in 0..KEYS {
        index.insert(&key(k), &key(k));
    }
    let (hot, shifted) = (0..KEYS / 8, KEYS / 2..KEYS / 2 + KEYS / 8);
    for _ in 0..40 {
        for k in hot.clone() {
            assert!(index.contains_key(&key(k)));
        }
    }
    let moves = index.stats().head_moves;
    for k in shifted.clone() {
        for _ in 0..5 {
            assert!(index.contains_key(&key(k)));
        }
    }
    let moved = index.stats().head_moves - moves;
    assert!(
        moved >= u64::from(shifted.len() as u32 / 4),
        "{moved} heads moved for {} newly hot keys",
        shifted.len()
    );
}

#[test]
fn after_a_hotspot_shift_a_ring_moves_its_head_at_once_only_once() {
    // One ring of 16 keys, key 7 hot until its head sits there; then key 3 hot, one
    // read in ten of another key. The fall of the head-hit rate marks a shift: the
    // first cold counted access then moves the head at once, and from there on the
    // ring waits for rounds as a calm one does. Moving on every cold access instead
    // would send the head off key 3 and back for every cold counted access: 205 moves
    // here with session 71's build.
    let index = one_ring_of_16(HotspotStrategy::Sampling);
    for _ in 0..20_000 {
        index.get(&[7]);
    }
    let moves = index.stats().head_moves;
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..4_000 {
        let k = if rng.gen_bool(0.75) {
            3
        } else {
            rng.gen_range(0..16)
        };
        index.get(&[k]);
    }
    let moved = index.stats().head_moves - moves;
    assert_eq!(index.stats().shifts, 1);
    assert!(moved >= 1, "the head stayed on the key no longer read");
    assert!(moved <= 40, "{moved} head moves for one shift in one ring");
    index.reset_access_stats();
    for _ in 0..1_000 {
        index.get(&[3]);
    }
    // The rounds have the head on the hot key (a counted access or two may come
    // before the last round ends).
    let hit = index.stats().head_hit_rate;
    assert!(hit > 0.9, "head hit rate {hit} on the one key read");
}

#[test]
fn a_thread_counts_every_access_while_it_follows_a_shift_and_one_in_r_after() {
    // Rounds start on counted accesses, one in R = 5. Right after a shift every access
    // counts, so rings that draw a few accesses a second find their heads sooner; once
    // the follow (700 ms) is over, one in five again.
    fn counted(index: &HotRing, rng: &mut SmallRng, reads: u64) -> u64 {
        let (before, _) = index.access_totals();
        for _ in 0..reads {
            let k = if rng.gen_bool(0.75) {
                3
            } else {
                rng.gen_range(0..16)
            };
            index.get(&[k]);
        }
        index.access_totals().0 - before
    }
    let mut rng = SmallRng::seed_from_u64(3);
    // The follow is timed: an attempt whose reads outlasted it (a stalled machine)
    // shows nothing, and is made again with a fresh index, five times at most.
    let index = (0..5)
        .find_map(|_| {
            let index = one_ring_of_16(HotspotStrategy::Sampling);
            assert_eq!(index.config().sample_period, 5);
            for _ in 0..20_000 {
                index.get(&[7]);
            }
            let start = std::time::Instant::now();
            counted(&index, &mut rng, 2_000);
            assert_eq!(
                index.stats().shifts,
                1,
                "the fall of the head-hit rate is a shift"
            );
            let following = counted(&index, &mut rng, 5_000);
            if start.elapsed() >= std::time::Duration::from_millis(600) {
                return None;
            }
            assert!(
                following > 4_500,
                "{following} of 5,000 accesses counted while following"
            );
            Some(index)
        })
        .expect("each of five attempts took longer than a follow lasts");
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    // The first window to end after the follow time ends the follow.
    counted(&index, &mut rng, 2_000);
    let after = counted(&index, &mut rng, 5_000);
    assert!(
        (800..=1_200).contains(&after),
        "{after} of 5,000 accesses counted after the follow"
    );
    assert_eq!(index.stats().shifts, 1);
}

#[test]
fn each_index_judges_a_shift_by_its_own_accesses() {
    // One thread reads two indexes: A's one key (every read hits its head, one item)
    // and B's ring, whose key 3 draws 60% of its reads (~0.63 of them hit the head,
    // ~3 items a read). Nine reads of A to one of B, then one to nine: over both, the
    // thread's head-hit rate falls from ~0.96 to ~0.67 and its items a read rise from
    // ~1.2 to ~2.8; neither index's own figures move, and neither sees a shift. The
    // same reads in one index are one: its figures move.
    fn mix(a: &HotRing, b: &HotRing) {
        let mut rng = SmallRng::seed_from_u64(5);
        let read_b = |rng: &mut SmallRng| {
            let k = if rng.gen_bool(0.6) {
                3
            } else {
                rng.gen_range(0..16)
            };
            b.get(&[k]);
        };
        for i in 0..50_000 {
            if i % 10 == 0 {
                read_b(&mut rng);
            } else {
                a.get(&[7]);
            }
        }
        for i in 0..50_000 {
            if i % 10 == 0 {
                a.get(&[7]);
            } else {
                read_b(&mut rng);
            }
        }
    }
    let (a, b) = (
        one_ring_of_16(HotspotStrategy::Sampling),
        one_ring_of_16(HotspotStrategy::Sampling),
    );
    mix(&a, &b);
    assert_eq!((a.stats().shifts, b.stats().shifts), (0, 0));
    let one = one_ring_of_16(HotspotStrategy::Sampling);
    mix(&one, &one);
    assert!(one.stats().shifts >= 1);
}

#[test]
fn a_steady_load_on_a_ring_whose_best_head_varies_sees_no_shift() {
    // One ring of 16 keys; the 13th in ring order draws 60% of the reads, any key the
    // rest. A key before the head is reached from the ring's rehash item, so the best
    // head is now that key, now one a few items before it, as each round's samples
    // fall: the head-hit rate swings between rounds at the same cost. Judged by the
    // rate alone, 19 of 40 seeds saw a shift in this steady load (BENCHMARKS.md,
    // session 75).
    for seed in 0..10 {
        let index = one_ring_of_16(HotspotStrategy::Sampling);
        let hot = index.iter().map(|(k, _)| k[0]).nth(12).unwrap();
        let mut rng = SmallRng::seed_from_u64(seed);
        for _ in 0..50_000 {
            let k = if rng.gen_bool(0.6) {
                hot
            } else {
                rng.gen_range(0..16)
            };
            assert_eq!(index.get(&[k]), Some(vec![k]));
        }
        assert_eq!(index.stats().shifts, 0, "seed {seed}");
    }
}

#[test]
fn fixed_head_never_moves() {
    let index = one_ring_of_16(HotspotStrategy::FixedHead);
    for _ in 0..1000 {
        index.get(&[15]);
    }
    assert_eq!(index.stats().head_moves, 0);
}

#[test]
fn random_movement_follows_a_single_hotspot() {
    let index = one_ring_of_16(HotspotStrategy::Random);
    for _ in 0..100 {
        index.get(&[7]);
    }
    index.reset_access_stats();
    for _ in 0..1000 {
        index.get(&[7]);
    }
    assert!(index.stats().head_hit_rate > 0.99);
}

#[test]
fn random_movement_keeps_the_heads_last_two_places_as_entries() {
    // Three keys read in turn: each move of the head leaves the key it left to the
    // first entry word and moves that word's key to the second, so all three end up
    // where lookups start and the head stops moving.
    let index = one_ring_of_16(HotspotStrategy::Random);
    let keys = [[3u8], [9], [14]];
    let read = |n: usize| {
        for k in keys.iter().cycle().take(n) {
            assert!(index.contains_key(k));
        }
    };
    read(300);
    let moves = index.stats().head_moves;
    index.reset_access_stats();
    read(3_000);
    let stats = index.stats();
    assert_eq!(stats.head_moves, moves, "the head kept moving");
    assert_eq!(stats.head_hit_rate, 1.0);
}

#[test]
fn a_version_is_replaced_only_while_it_is_the_keys() {
    let index = HotRing::new();
    index.insert(b"long", &[1; 20]);
    index.insert(b"short", b"1");
    let guard = crossbeam_epoch::pin();
    let long = index.read_version(b"long", &guard).unwrap();
    let short = index.read_version(b"short", &guard).unwrap();
    assert_eq!((long.value(), short.value()), (&[1; 20][..], &b"1"[..]));
    // Rewritten with the bytes it held: a long value is a new version, so the one
    // read is stale (its bytes still readable under the guard); an inline value is
    // compared by its bytes, as it changes in place.
    assert!(index.update(b"long", &[1; 20]));
    assert!(index.update(b"short", b"1"));
    assert!(!index.replace_version(b"long", &long, &[2; 20]));
    assert_eq!(long.value(), [1; 20]);
    assert!(index.replace_version(b"short", &short, b"2"));
    assert!(!index.replace_version(b"short", &short, b"3"));
    let long = index.read_version(b"long", &guard).unwrap();
    assert!(index.replace_version(b"long", &long, b"2"));
    assert_eq!(index.get(b"long"), Some(b"2".to_vec()));
    assert!(index.remove(b"short"));
    assert!(index.read_version(b"short", &guard).is_none());
    assert!(!index.replace_version(b"short", &short, b"4"));
    assert_eq!(index.get(b"short"), None);
}

#[test]
fn reads_and_writes_stamp_the_access_clock_and_looking_does_not() {
    let index = HotRing::new();
    index.set_clock(100);
    assert!(index.insert(b"short", b"1"));
    assert!(index.insert(b"long", &[7; 40]));
    index.set_clock(130);
    assert_eq!(index.idle(b"short"), Some(30));
    assert_eq!(index.idle(b"long"), Some(30));
    assert_eq!(index.idle(b"absent"), None);
    // Asking, and peeking (what eviction does), leave the clock alone.
    assert_eq!(
        index.peek_with(b"short", |v, _| v.to_vec()),
        Some(b"1".to_vec())
    );
    assert_eq!(index.idle(b"short"), Some(30));
    assert_eq!(index.get(b"short"), Some(b"1".to_vec()));
    assert_eq!(index.idle(b"short"), Some(0));
    assert_eq!(index.idle(b"long"), Some(30));
    index.set_clock(140);
    // An in-place write, an RCU write and a compare-and-set each stamp.
    assert!(index.update(b"short", b"2"));
    assert_eq!(index.idle(b"short"), Some(0));
    assert!(index.update(b"long", &[8; 40]));
    assert_eq!(index.idle(b"long"), Some(0));
    index.set_clock(150);
    assert!(index.compare_and_set(b"short", b"2", b"3"));
    assert_eq!(index.idle(b"short"), Some(0));
    assert_eq!(index.idle(b"long"), Some(10));
    // The clock has 24 bits and wraps, as Redis's LRU clock does.
    index.set_clock((1 << 24) - 3);
    assert!(index.contains_key(b"long"));
    index.set_clock(2);
    assert_eq!(index.idle(b"long"), Some(5));
    // A restored idle time, capped at what the clock can tell.
    assert!(index.set_idle(b"short", 1_000));
    assert_eq!(index.idle(b"short"), Some(1_000));
    assert!(index.set_idle(b"long", u32::MAX));
    assert_eq!(index.idle(b"long"), Some((1 << 24) - 1));
    assert!(!index.set_idle(b"absent", 1));
}

/// Deleting keys leaves their rings: a scan of a mostly emptied index that stops at
/// the ring starts it was allowed returns a cursor early, with few or no keys, and its
/// pages together still return every key left, each once.
#[test]
fn a_scan_of_a_mostly_deleted_index_stops_after_its_rings() {
    let index = HotRing::new();
    for i in 0..20_000u32 {
        index.insert(&i.to_le_bytes(), b"v");
    }
    for i in 3..20_000u32 {
        assert!(index.remove(&i.to_le_bytes()));
    }
    let rings = index.stats().rings;
    assert!(rings > 1_000, "{rings} rings");
    assert_eq!(index.scan(0, 10, |_, _, _| {}), None, "unbounded: one page");
    let (mut pages, mut keys, mut cursor) = (0, Vec::new(), Some(0));
    while let Some(from) = cursor {
        cursor = index.scan_within(from, 10, 100, |k, _, _| keys.push(k.to_vec()));
        pages += 1;
    }
    assert!(
        pages >= rings / 101,
        "{pages} pages for {rings} rings at 100 per page"
    );
    keys.sort();
    let left: Vec<Vec<u8>> = (0..3u32).map(|i| i.to_le_bytes().to_vec()).collect();
    assert_eq!(keys, left);
}
