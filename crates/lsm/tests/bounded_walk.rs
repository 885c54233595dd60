//! `Cursor::next_within`: a walk that gives up after a budget of stored entries stops
//! only between keys, always moves on, and, resumed from where it stopped, returns
//! exactly what an unbounded walk does, over the memtable, frozen memtables and
//! several levels of tables.

mod support;

use std::collections::BTreeMap;

use engine::{Engine, KeyRange, Step};
use lsm::{FsyncPolicy, Lsm, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::stat;

fn options() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        memtable_bytes: 4 * 1024,
        block_size: 256,
        l0_compaction_trigger: 2,
        level1_bytes: 16 * 1024,
        level_size_ratio: 2,
        table_file_bytes: 4 * 1024,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Entries found, and the key the rest of the walk starts at (`None`: the end).
type Page = (Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>);

/// One page: entries from `from` until `want` are found, the range ends, or the
/// budget of `allowed` entries runs out.
fn page(store: &Lsm, from: &[u8], want: usize, allowed: usize) -> Page {
    let mut cursor = store.range(KeyRange::all().from(from)).unwrap();
    let mut budget = allowed;
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    loop {
        match cursor.next_within(&mut budget).unwrap() {
            Step::Entry(k, v) => {
                assert!(k >= from, "an entry before the page's start");
                found.push((k.to_vec(), v.to_vec()));
                if found.len() == want {
                    let mut rest = k.to_vec();
                    rest.push(0);
                    return (found, Some(rest));
                }
            }
            Step::End => return (found, None),
            Step::Stopped(at) => {
                assert_eq!(budget, 0, "stopped with budget left");
                assert!(at > from, "stopped without moving past the page's start");
                if let Some((last, _)) = found.last() {
                    assert!(at > last.as_slice(), "stopped at a key already returned");
                }
                return (found, Some(at.to_vec()));
            }
        }
    }
}

fn walk_in_pages(store: &Lsm, want: usize, allowed: usize) -> (BTreeMap<Vec<u8>, Vec<u8>>, u32) {
    let (mut out, mut pages) = (BTreeMap::new(), 0);
    let mut from = Vec::new();
    loop {
        let (found, rest) = page(store, &from, want, allowed);
        pages += 1;
        for (k, v) in found {
            assert!(out.insert(k, v).is_none(), "a key returned twice");
        }
        match rest {
            Some(rest) => from = rest,
            None => return (out, pages),
        }
    }
}

#[test]
fn pages_with_any_budget_return_exactly_the_live_keys() {
    for seed in 0..8u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let store = Lsm::open(dir.path(), options()).unwrap();
        let mut model = BTreeMap::new();
        for _ in 0..4_000 {
            let i = rng.gen_range(0..600);
            if rng.gen_bool(0.45) {
                // Runs of deletes, so some stretches hold nothing but tombstones.
                for j in i..(i + rng.gen_range(1..40)).min(600) {
                    store.delete(&key(j)).unwrap();
                    model.remove(&key(j));
                }
            } else {
                let value = vec![b'a' + rng.gen_range(0..26u8); rng.gen_range(1..30)];
                store.put(&key(i), &value).unwrap();
                model.insert(key(i), value);
            }
        }
        assert!(
            (1..7).any(|level| stat(&store, &format!("l{level}_tables")) > 0),
            "seed {seed}: the writes reached no level below 0"
        );
        for (want, allowed) in [
            (1, 0),
            (1, 1),
            (3, 2),
            (10, 7),
            (10, 100),
            (1000, usize::MAX),
        ] {
            let (walked, pages) = walk_in_pages(&store, want, allowed);
            assert_eq!(
                walked, model,
                "seed {seed}, {want} per page within {allowed}"
            );
            if allowed == usize::MAX {
                assert_eq!(pages, 1, "seed {seed}: an unbounded walk stopped");
            }
        }
    }
}

#[test]
fn a_walk_stops_soon_in_a_stretch_of_deleted_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), Options::default()).unwrap();
    for i in 0..1_000 {
        store.put(&key(i), b"v").unwrap();
    }
    for i in 0..1_000 {
        store.delete(&key(i)).unwrap();
    }
    store.put(&key(5_000), b"live").unwrap();

    // Each deleted key holds two entries (its put and its tombstone).
    let (found, rest) = page(&store, b"", 10, 100);
    assert!(found.is_empty());
    let stopped_at = rest.expect("a walk through 2,000 entries on a budget of 100 stops");
    assert!(
        stopped_at.as_slice() <= key(60).as_slice(),
        "stopped late: {stopped_at:?}"
    );

    let (walked, pages) = walk_in_pages(&store, 10, 100);
    assert_eq!(
        walked.into_iter().collect::<Vec<_>>(),
        [(key(5_000), b"live".to_vec())]
    );
    assert!(
        (19..=21).contains(&pages),
        "{pages} pages for 2,000 entries at 100 each"
    );

    // The plain walk passes over them all unseen.
    let mut cursor = store.range(KeyRange::all()).unwrap();
    assert_eq!(
        cursor.next().unwrap(),
        Some((key(5_000).as_slice(), b"live".as_slice()))
    );
    assert_eq!(cursor.next().unwrap(), None);
}
