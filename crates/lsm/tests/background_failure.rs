//! A flush that fails is retried: while it fails, writers that would need it get a
//! clear error, reads keep working, and once the cause is gone writes resume, with
//! nothing acknowledged lost. The cause here: directories squatting on the names the
//! next tables would take, so creating them fails.

use std::time::Duration;

use engine::{Engine, Error};
use lsm::{FsyncPolicy, Lsm, Options};

fn options() -> Options {
    Options {
        fsync: FsyncPolicy::No,
        memtable_bytes: 4096,
        max_immutable_memtables: 2,
        ..Options::default()
    }
}

fn assert_all_present(store: &Lsm, acked: u64, value: &[u8]) {
    for i in 0..acked {
        let got = store.get(format!("key{i:06}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value), "key{i:06} lost");
    }
}

#[test]
fn a_failing_flush_fails_writers_clearly_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Lsm::open(dir.path(), options()).unwrap();
    let squatters: Vec<_> = (1..2000)
        .map(|n| dir.path().join(format!("{n:06}.sst")))
        .collect();
    for path in &squatters {
        std::fs::create_dir(path).unwrap();
    }
    let value = vec![7u8; 100];
    let mut acked = 0u64;
    let error = loop {
        match store.put(format!("key{acked:06}").as_bytes(), &value) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 100_000, "writes never noticed the failing flush");
    };
    assert!(matches!(error, Error::Io { .. }), "{error}");
    assert!(
        error.to_string().contains("flushing a memtable failed"),
        "{error}"
    );
    assert_all_present(&store, acked, &value);

    for path in &squatters {
        std::fs::remove_dir(path).unwrap();
    }
    // The flush thread retries with a backoff of at most a few seconds.
    let mut resumed = false;
    for _ in 0..400 {
        if store
            .put(format!("key{acked:06}").as_bytes(), &value)
            .is_ok()
        {
            acked += 1;
            resumed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        resumed,
        "writes did not resume once tables could be created again"
    );
    for _ in 0..2000 {
        store
            .put(format!("key{acked:06}").as_bytes(), &value)
            .unwrap();
        acked += 1;
    }
    assert!(store
        .stats()
        .iter()
        .any(|(name, n)| *name == "flushes" && *n > 0));
    store.close().unwrap();
    drop(store);

    let store = Lsm::open(dir.path(), options()).unwrap();
    assert_all_present(&store, acked, &value);
}
