//! A snapshot keeps seeing the store as it was, through overwrites, deletes,
//! flushes and compactions that drop the old versions from the current tables.

mod support;

use engine::{Engine, KeyRange};
use lsm::{FsyncPolicy, Lsm, Options};
use support::stat;

#[test]
fn a_snapshot_sees_its_moment_through_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(
        dir.path(),
        Options {
            fsync: FsyncPolicy::No,
            memtable_bytes: 4096,
            block_size: 256,
            l0_compaction_trigger: 2,
            level1_bytes: 16 * 1024,
            level_size_ratio: 4,
            table_file_bytes: 4096,
            ..Options::default()
        },
    )
    .unwrap();
    let key = |i: u32| format!("k{i:04}").into_bytes();
    for i in 0..500 {
        store.put(&key(i), b"v1").unwrap();
    }
    let snapshot = store.snapshot().unwrap();
    for i in 0..500 {
        if i % 2 == 0 {
            store.delete(&key(i)).unwrap();
        } else {
            store.put(&key(i), b"v2").unwrap();
        }
    }
    // Fill until compactions have run over the overwritten keys' tables.
    let mut filler = 0u32;
    while stat(&store, "compactions") < 3 {
        store
            .put(format!("z{filler:08}").as_bytes(), &[0u8; 64])
            .unwrap();
        filler += 1;
        assert!(filler < 1_000_000, "no compaction ran");
    }
    assert!(snapshot.sequence() < stat(&store, "sequence"));
    for i in 0..500 {
        assert_eq!(
            store.get_at(&snapshot, &key(i)).unwrap().as_deref(),
            Some(&b"v1"[..]),
            "key {i}"
        );
        let now = store.get(&key(i)).unwrap();
        assert_eq!(
            now.as_deref(),
            (i % 2 == 1).then_some(&b"v2"[..]),
            "key {i}"
        );
    }
    let mut cursor = store
        .range_at(&snapshot, KeyRange::all().until(b"z"))
        .unwrap();
    let mut seen = 0;
    while let Some((k, v)) = cursor.next().unwrap() {
        assert_eq!(k, key(seen).as_slice());
        assert_eq!(v, b"v1");
        seen += 1;
    }
    assert_eq!(seen, 500);
    assert!(store
        .range_at(&snapshot, KeyRange::all().from(b"z"))
        .unwrap()
        .next()
        .unwrap()
        .is_none());
}

/// A hot key overwritten many times is flushed as the versions a reader can still
/// see, not every one (so a flush writes a fraction of what was put), while a snapshot
/// taken among the overwrites reads its own version after the flush, and a reopened
/// store the last one.
#[test]
fn a_flush_drops_the_versions_no_reader_sees() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        fsync: FsyncPolicy::No,
        memtable_bytes: 64 * 1024,
        ..Options::default()
    };
    let store = Lsm::open(dir.path(), options.clone()).unwrap();
    let value = |i: u32| format!("{i:08}").repeat(128).into_bytes();
    let mut snapshot = None;
    let mut i = 0;
    while stat(&store, "flushes") < 3 {
        store.put(b"hot", &value(i)).unwrap();
        if i == 10 {
            snapshot = Some(store.snapshot().unwrap());
        }
        i += 1;
        assert!(i < 1_000_000, "no flush ran");
    }
    let (written, put) = (
        stat(&store, "table_bytes_written"),
        stat(&store, "user_bytes_written"),
    );
    assert!(
        written * 8 < put,
        "{written} bytes flushed for {put} bytes put"
    );
    let snapshot = snapshot.unwrap();
    assert_eq!(store.get_at(&snapshot, b"hot").unwrap(), Some(value(10)));
    assert_eq!(store.get(b"hot").unwrap(), Some(value(i - 1)));
    drop(snapshot);
    drop(store);
    let store = Lsm::open(dir.path(), options).unwrap();
    assert_eq!(store.get(b"hot").unwrap(), Some(value(i - 1)));
}
