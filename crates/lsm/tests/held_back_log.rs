//! `defer_log_writes`: groups' log records are held back, visible at once, and reach
//! the log file only at `write_held_back` (or a memtable switch, a sync, close). The
//! crash harness (`tests/crash.rs`) checks that what was written then survives a kill.

mod support;

use std::path::Path;

use engine::Engine;
use lsm::{FsyncPolicy, Lsm, Options};
use support::stat;

/// Bytes in the store's newest write-ahead log.
fn newest_log_len(dir: &Path) -> u64 {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .collect();
    logs.sort();
    std::fs::metadata(logs.last().expect("a log"))
        .unwrap()
        .len()
}

fn options(memtable_bytes: usize) -> Options {
    Options {
        fsync: FsyncPolicy::No,
        defer_log_writes: true,
        memtable_bytes,
        ..Options::default()
    }
}

#[test]
fn held_back_writes_are_visible_and_reach_the_log_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options(64 << 20)).unwrap();
    let empty = newest_log_len(dir.path());
    for i in 0..100u32 {
        store.put(&i.to_be_bytes(), b"value").unwrap();
        assert_eq!(store.get(&i.to_be_bytes()).unwrap().unwrap(), b"value");
    }
    assert_eq!(newest_log_len(dir.path()), empty, "nothing written yet");
    store.write_held_back().unwrap();
    let written = newest_log_len(dir.path());
    assert!(
        written > empty + 100 * 5,
        "{written} bytes after write_held_back"
    );
    store.write_held_back().unwrap();
    assert_eq!(
        newest_log_len(dir.path()),
        written,
        "nothing more held back"
    );
    store.close().unwrap();
    let store = Lsm::open(dir.path(), options(64 << 20)).unwrap();
    for i in 0..100u32 {
        assert_eq!(store.get(&i.to_be_bytes()).unwrap().unwrap(), b"value");
    }
}

/// Under `fsync always` nothing is held back: the option only applies where writes
/// are not synced before they are acknowledged.
#[test]
fn fsync_always_holds_nothing_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(
        dir.path(),
        Options {
            fsync: FsyncPolicy::Always,
            ..options(64 << 20)
        },
    )
    .unwrap();
    let empty = newest_log_len(dir.path());
    store.put(b"key", b"value").unwrap();
    assert!(newest_log_len(dir.path()) > empty);
}

/// Memtables switch (and logs with them) many times with records held back; each
/// switch writes them to the old log first, so a reopen finds every write.
#[test]
fn memtable_switches_keep_held_back_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options(4096)).unwrap();
    for i in 0..2000u32 {
        store.put(&i.to_be_bytes(), &[i as u8; 40]).unwrap();
    }
    // Only the writes since the last switch are still held back; sync writes them.
    store.flush().unwrap();
    let synced = newest_log_len(dir.path());
    store.close().unwrap();
    assert_eq!(newest_log_len(dir.path()), synced, "close had nothing left");
    let store = Lsm::open(dir.path(), options(4096)).unwrap();
    for i in 0..2000u32 {
        assert_eq!(
            store.get(&i.to_be_bytes()).unwrap().unwrap(),
            [i as u8; 40],
            "key {i}"
        );
    }
}

fn wal_syncs(store: &Lsm) -> u64 {
    stat(store, "wal_syncs")
}

/// CONFIG SET appendfsync: a switch to `always` writes what was held back and syncs
/// it, then syncs each write before it returns; a switch back holds writes back
/// again and syncs none. A reopen finds every write.
#[test]
fn the_fsync_policy_switches_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options(64 << 20)).unwrap();
    let empty = newest_log_len(dir.path());
    for i in 0..50u32 {
        store.put(&i.to_be_bytes(), b"value").unwrap();
    }
    assert_eq!(newest_log_len(dir.path()), empty, "held back under `no`");
    let syncs = wal_syncs(&store);

    store.set_fsync(FsyncPolicy::Always).unwrap();
    let switched = newest_log_len(dir.path());
    assert!(
        switched > empty + 50 * 5,
        "{switched} bytes after the switch"
    );
    assert_eq!(wal_syncs(&store), syncs + 1, "the switch syncs once");
    for i in 50..60u32 {
        store.put(&i.to_be_bytes(), b"value").unwrap();
    }
    assert!(newest_log_len(dir.path()) > switched, "written at once");
    assert_eq!(wal_syncs(&store), syncs + 11, "one sync per write");

    store.set_fsync(FsyncPolicy::No).unwrap();
    let before = newest_log_len(dir.path());
    store.put(&60u32.to_be_bytes(), b"value").unwrap();
    assert_eq!(newest_log_len(dir.path()), before, "held back again");
    assert_eq!(wal_syncs(&store), syncs + 11, "no sync under `no`");
    store.close().unwrap();

    let store = Lsm::open(dir.path(), options(64 << 20)).unwrap();
    for i in 0..=60u32 {
        assert_eq!(store.get(&i.to_be_bytes()).unwrap().unwrap(), b"value");
    }
}
