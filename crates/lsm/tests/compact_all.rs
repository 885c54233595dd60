//! `Lsm::compact_all` merges the whole store down: what it keeps reads back exactly
//! (now, through an older snapshot, and after a reopen), the tombstones of deleted keys
//! are gone from the tables, and writers running meanwhile lose nothing.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engine::{Engine, Error, KeyRange, WriteBatch};
use lsm::{FsyncPolicy, Lsm, Options};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::stat;

/// Small memtables, tables and levels, so that a few thousand writes fill several
/// levels before the whole-store compaction.
fn options() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        memtable_bytes: 8 * 1024,
        block_size: 512,
        l0_compaction_trigger: 2,
        level1_bytes: 32 * 1024,
        level_size_ratio: 2,
        table_file_bytes: 8 * 1024,
        ..Options::default()
    }
}

/// Tables per level, shallowest first.
fn tables(store: &Lsm) -> Vec<u64> {
    (0..7)
        .map(|level| stat(store, &format!("l{level}_tables")))
        .collect()
}

fn contents(store: &Lsm) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut cursor = store.range(KeyRange::all()).unwrap();
    let mut out = BTreeMap::new();
    while let Some((k, v)) = cursor.next().unwrap() {
        out.insert(k.to_vec(), v.to_vec());
    }
    out
}

#[test]
fn deleting_every_key_then_compacting_leaves_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options()).unwrap();
    let key = |i: u32| format!("key{i:05}").into_bytes();
    for i in 0..3_000 {
        store.put(&key(i), &[b'v'; 40]).unwrap();
    }
    assert!(
        tables(&store).iter().skip(1).sum::<u64>() > 0,
        "the writes reached no level below 0: {:?}",
        tables(&store)
    );
    for i in 0..3_000 {
        store.delete(&key(i)).unwrap();
    }
    store.compact_all().unwrap();
    assert_eq!(tables(&store), vec![0; 7], "tombstones or values left");
    assert_eq!(stat(&store, "whole_compactions"), 1);
    assert!(contents(&store).is_empty());
    store.put(b"after", b"1").unwrap();
    drop(store);
    let store = Lsm::open(dir.path(), options()).unwrap();
    assert_eq!(
        contents(&store),
        BTreeMap::from([(b"after".to_vec(), b"1".to_vec())])
    );
}

/// Seeded random puts and deletes over several levels; after the compaction the
/// store matches a model, every table sits in one level, and a snapshot taken before
/// still reads its own moment.
#[test]
fn compacting_keeps_exactly_the_live_keys_and_old_snapshots() {
    for seed in 0..4u64 {
        let dir = tempfile::tempdir().unwrap();
        let store = Lsm::open(dir.path(), options()).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = BTreeMap::new();
        for _ in 0..6_000 {
            let key = format!("k{:04}", rng.gen_range(0..1_500)).into_bytes();
            if rng.gen_range(0..3) == 0 {
                store.delete(&key).unwrap();
                model.remove(&key);
            } else {
                let value = vec![rng.gen::<u8>(); rng.gen_range(0..60)];
                store.put(&key, &value).unwrap();
                model.insert(key, value);
            }
        }
        let snapshot = store.snapshot().unwrap();
        let before = model.clone();
        let deleted: Vec<Vec<u8>> = model.keys().step_by(3).cloned().collect();
        let mut batch = WriteBatch::new();
        for key in &deleted {
            batch.delete(key);
            model.remove(key);
        }
        store.write(&batch).unwrap();

        store.compact_all().unwrap();
        assert_eq!(contents(&store), model, "seed {seed}");
        let filled: Vec<usize> = tables(&store)
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(level, _)| level)
            .collect();
        assert_eq!(filled.len(), 1, "seed {seed}: tables in levels {filled:?}");
        assert_ne!(filled[0], 0, "seed {seed}: level 0 is never the last");
        let mut old = store.range_at(&snapshot, KeyRange::all()).unwrap();
        let mut seen = BTreeMap::new();
        while let Some((k, v)) = old.next().unwrap() {
            seen.insert(k.to_vec(), v.to_vec());
        }
        assert_eq!(seen, before, "seed {seed}: the snapshot's moment");
        drop((old, snapshot, store));
        let store = Lsm::open(dir.path(), options()).unwrap();
        assert_eq!(contents(&store), model, "seed {seed}: after reopening");
    }
}

/// Writers keep writing their own keys while another thread compacts the whole
/// store again and again: every write acknowledged is read back.
#[test]
fn writers_lose_nothing_to_compactions_running_beside_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Lsm::open(dir.path(), options()).unwrap());
    let writers: Vec<_> = (0..3u32)
        .map(|writer| {
            let store = store.clone();
            std::thread::spawn(move || {
                for round in 0..6u32 {
                    for i in 0..400u32 {
                        let key = format!("w{writer}-{i:04}");
                        if (i + round) % 5 == 0 {
                            store.delete(key.as_bytes()).unwrap();
                        } else {
                            store.put(key.as_bytes(), &round.to_le_bytes()).unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    let compactor = {
        let store = store.clone();
        std::thread::spawn(move || {
            let mut runs = 0;
            while store
                .stats()
                .iter()
                .any(|&(n, v)| n == "sequence" && v < 7_200)
            {
                store.compact_all().unwrap();
                runs += 1;
            }
            store.compact_all().unwrap();
            runs + 1
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    let runs = compactor.join().unwrap();
    assert!(runs >= 1);
    assert_eq!(stat(&store, "whole_compactions"), runs);
    let mut expected = BTreeMap::new();
    for writer in 0..3u32 {
        for i in 0..400u32 {
            if (i + 5) % 5 != 0 {
                expected.insert(
                    format!("w{writer}-{i:04}").into_bytes(),
                    5u32.to_le_bytes().to_vec(),
                );
            }
        }
    }
    assert_eq!(contents(&store), expected);
}

/// A whole-store compaction whose tables cannot be created (directories squat on their
/// names) fails with a clear error while reads go on, and succeeds once they can.
#[test]
fn a_failing_whole_compaction_is_reported_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options()).unwrap();
    let key = |i: u32| format!("key{i:05}").into_bytes();
    for i in 0..200 {
        store.put(&key(i), b"v").unwrap();
    }
    for i in 0..100 {
        store.delete(&key(i)).unwrap();
    }
    // Every table number not taken yet (background flushes may still be taking some).
    let squatters: Vec<_> = (1..2000)
        .map(|n| dir.path().join(format!("{n:06}.sst")))
        .filter(|path| std::fs::create_dir(path).is_ok())
        .collect();
    let error = store.compact_all().unwrap_err();
    assert!(matches!(error, Error::Io { .. }), "{error}");
    assert!(error.to_string().contains("failed"), "{error}");
    for i in 0..200 {
        let want = (i >= 100).then_some(&b"v"[..]);
        assert_eq!(store.get(&key(i)).unwrap().as_deref(), want, "key {i}");
    }
    for path in &squatters {
        std::fs::remove_dir(path).unwrap();
    }
    // The background thread retries with a backoff of at most a few seconds; until its
    // retry succeeds, `compact_all` reports the standing failure.
    let mut done = false;
    for _ in 0..400 {
        if store.compact_all().is_ok() {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        done,
        "the compaction never succeeded once tables could be made"
    );
    assert!(stat(&store, "whole_compactions") >= 1);
    let live: BTreeMap<Vec<u8>, Vec<u8>> = (100..200).map(|i| (key(i), b"v".to_vec())).collect();
    assert_eq!(contents(&store), live);
}
