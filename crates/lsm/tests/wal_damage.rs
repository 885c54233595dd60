//! What recovery does with a damaged log (the rules are in `src/wal_format.md`): a cut
//! anywhere keeps exactly the whole records before it; trailing zeros are a torn tail;
//! any flipped byte is reported with the file and an offset, or, under
//! `WalRecovery::PointInTime`, recovers exactly the records before the damage.

use std::path::{Path, PathBuf};

use engine::{Engine, Error};
use lsm::{FsyncPolicy, Lsm, Options, WalRecovery};

const BLOCK: usize = 32 * 1024;

fn options(recovery: WalRecovery) -> Options {
    Options {
        fsync: FsyncPolicy::No,
        wal_recovery: recovery,
        ..Options::default()
    }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i}").into_bytes()
}

fn value(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i * 31 + j) as u8).collect()
}

/// A log of one put per value size, and the file length after each put.
fn write_log(sizes: &[usize]) -> (tempfile::TempDir, PathBuf, Vec<u8>, Vec<usize>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options(WalRecovery::TolerateTornTail)).unwrap();
    let wal = dir.path().join("000001.wal");
    let mut ends = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        store.put(&key(i), &value(i, len)).unwrap();
        ends.push(std::fs::metadata(&wal).unwrap().len() as usize);
    }
    store.close().unwrap();
    drop(store);
    let bytes = std::fs::read(&wal).unwrap();
    assert_eq!(bytes.len(), *ends.last().unwrap());
    (dir, wal, bytes, ends)
}

/// Opens a store whose log is `bytes`.
fn open_with(bytes: &[u8], recovery: WalRecovery) -> (tempfile::TempDir, Result<Lsm, Error>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("000001.wal"), bytes).unwrap();
    let store = Lsm::open(dir.path(), options(recovery));
    (dir, store)
}

/// Keys before `first_missing` hold their values; the rest are absent.
fn check_prefix(store: &Lsm, sizes: &[usize], first_missing: usize, context: &str) {
    for (i, &len) in sizes.iter().enumerate() {
        let got = store.get(&key(i)).unwrap();
        if i < first_missing {
            assert_eq!(got, Some(value(i, len)), "{context}: key {i} lost");
        } else {
            assert_eq!(got, None, "{context}: key {i} should not be there");
        }
    }
}

fn reopen_and_write(dir: &Path, sizes: &[usize], first_missing: usize, context: &str) {
    let store = Lsm::open(dir, options(WalRecovery::TolerateTornTail)).unwrap();
    store.put(b"after", b"recovery").unwrap();
    store.close().unwrap();
    drop(store);
    let store = Lsm::open(dir, options(WalRecovery::TolerateTornTail))
        .unwrap_or_else(|e| panic!("{context}: reopening after appending to a recovered log: {e}"));
    check_prefix(&store, sizes, first_missing, context);
    assert_eq!(
        store.get(b"after").unwrap().as_deref(),
        Some(&b"recovery"[..])
    );
}

// Small records, records that span blocks, and one that leaves a block trailer.
const SIZES: &[usize] = &[10, 50, 3, 40_000, 7, 100, 70_000, 5, 1, 20];

#[test]
fn a_cut_anywhere_keeps_exactly_the_whole_records_before_it() {
    let (_dir, _wal, bytes, ends) = write_log(SIZES);
    let mut cuts: Vec<usize> = (0..bytes.len()).step_by(61).collect();
    for &end in &ends {
        cuts.extend(end.saturating_sub(12)..(end + 12).min(bytes.len() + 1));
    }
    cuts.extend(bytes.len().saturating_sub(300)..=bytes.len());
    for b in 1..=bytes.len() / BLOCK {
        cuts.extend(b * BLOCK - 10..b * BLOCK + 10);
    }
    cuts.sort();
    cuts.dedup();
    for cut in cuts {
        let (dir, store) = open_with(&bytes[..cut], WalRecovery::TolerateTornTail);
        let store = store.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let whole = ends.iter().take_while(|&&end| end <= cut).count();
        let context = format!("cut at {cut}");
        check_prefix(&store, SIZES, whole, &context);
        drop(store);
        reopen_and_write(dir.path(), SIZES, whole, &context);
    }
}

#[test]
fn zeros_after_the_last_record_are_a_torn_tail() {
    let (_dir, _wal, mut bytes, ends) = write_log(SIZES);
    let len = bytes.len();
    bytes.resize(len + 50_000, 0);
    let (dir, store) = open_with(&bytes, WalRecovery::TolerateTornTail);
    let store = store.unwrap();
    check_prefix(&store, SIZES, SIZES.len(), "zero tail");
    drop(store);
    // Recovery cut the zeros off, so appends follow the last record.
    assert_eq!(
        std::fs::metadata(dir.path().join("000001.wal"))
            .unwrap()
            .len() as usize,
        len
    );
    assert_eq!(len, *ends.last().unwrap());
    reopen_and_write(dir.path(), SIZES, SIZES.len(), "zero tail");
}

/// The index of the record holding byte `at`.
fn record_of(ends: &[usize], at: usize) -> usize {
    ends.iter().take_while(|&&end| end <= at).count()
}

fn check_flip(bytes: &[u8], ends: &[usize], sizes: &[usize], at: usize, mask: u8) {
    let mut damaged = bytes.to_vec();
    damaged[at] ^= mask;
    let (dir, store) = open_with(&damaged, WalRecovery::TolerateTornTail);
    match store {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, dir.path().join("000001.wal"), "byte {at}");
            let offset = offset as usize;
            assert!(
                offset <= at && at - offset < BLOCK,
                "byte {at} flipped, damage reported at {offset}"
            );
        }
        Err(other) => panic!("byte {at} flipped: expected corruption, got {other}"),
        Ok(_) => panic!("byte {at} flipped (mask {mask:#x}) went unnoticed"),
    }
    drop(dir);
    let (_dir, store) = open_with(&damaged, WalRecovery::PointInTime);
    let store = store.unwrap_or_else(|e| panic!("byte {at} flipped, point-in-time recovery: {e}"));
    check_prefix(
        &store,
        sizes,
        record_of(ends, at),
        &format!("byte {at} flipped, point in time"),
    );
}

#[test]
fn every_flipped_byte_of_a_small_log_is_reported() {
    let sizes = [10, 0, 3, 200, 7, 1];
    let (_dir, _wal, bytes, ends) = write_log(&sizes);
    for at in 0..bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            check_flip(&bytes, &ends, &sizes, at, mask);
        }
    }
}

#[test]
fn flipped_bytes_in_records_spanning_blocks_are_reported() {
    let (_dir, _wal, bytes, ends) = write_log(SIZES);
    for at in (0..bytes.len()).step_by(97) {
        check_flip(&bytes, &ends, SIZES, at, 0x10);
    }
    // The headers of the fragments at block starts.
    for b in 1..=bytes.len() / BLOCK {
        for at in b * BLOCK..(b * BLOCK + 8).min(bytes.len()) {
            check_flip(&bytes, &ends, SIZES, at, 0x04);
        }
    }
}

#[test]
fn a_second_open_of_the_same_store_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let first = Lsm::open(dir.path(), Options::default()).unwrap();
    match Lsm::open(dir.path(), Options::default()) {
        Err(e) => assert!(e.to_string().contains("another process"), "{e}"),
        Ok(_) => panic!("two opens of one store"),
    }
    drop(first);
    let second = Lsm::open(dir.path(), Options::default()).unwrap();
    // Closing releases the directory too, while the closed store still exists.
    second.close().unwrap();
    Lsm::open(dir.path(), Options::default()).unwrap();
    drop(second);
}
