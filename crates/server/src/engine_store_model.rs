//! A shuttle model of gathered writes' stripe protocol (`gathered_writes.rs`): threads
//! that gather take stripes in opposite orders, beside threads that write or wait for
//! writers without gathering. Shuttle explores their interleavings and fails on a
//! deadlock; each test then checks that no write was lost or seen early.
//!
//! Run with `cargo test -p server --release --features shuttle --bin hotkv-server
//! engine_store::model` (`SHUTTLE_ITERATIONS`, default 2000, per test and scheduler).
//! The store has two stripes in this build, so the model's keys share them.

use std::collections::BTreeMap;
use std::sync::Mutex;

use engine::{BatchOp, Capabilities, Cursor, Engine, KeyRange, Result, Stats, WriteBatch};
use shuttle::sync::atomic::{AtomicBool, Ordering};
use shuttle::sync::Arc;

use super::tests::increment;
use super::{EngineStore, STRIPES};

fn iterations() -> usize {
    std::env::var("SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Runs `model` under shuttle's random scheduler and under PCT, which finds the
/// schedules that need a thread held back at a few chosen steps (the server's other
/// shuttle models too).
pub(crate) fn explore(model: fn()) {
    shuttle::check_random(model, iterations());
    shuttle::check_pct(model, iterations(), 3);
}

/// An ordered engine in memory whose reads and writes are scheduling points. Its own
/// lock is std's: it is never held across a shuttle operation, so it never blocks.
#[derive(Default)]
struct ModelEngine {
    map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl ModelEngine {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u8>, Vec<u8>>> {
        shuttle::thread::yield_now();
        self.map.lock().unwrap()
    }
}

impl Engine for ModelEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: true,
            durable: false,
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.map().get(key).cloned())
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let map = self.map();
        Ok(keys.iter().map(|k| map.get(*k).cloned()).collect())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.map().insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.map().remove(key);
        Ok(())
    }

    fn write(&self, batch: &WriteBatch) -> Result<()> {
        let mut map = self.map();
        for op in batch.iter() {
            match op {
                BatchOp::Put(key, value) => map.insert(key.to_vec(), value.to_vec()),
                BatchOp::Delete(key) => map.remove(key),
            };
        }
        Ok(())
    }

    fn range(&self, range: KeyRange) -> Result<Box<dyn Cursor + '_>> {
        let entries = self
            .map()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut cursor = Snapshot {
            entries,
            at: 0,
            left: None,
            range,
        };
        let start = cursor.range.start.clone().unwrap_or_default();
        cursor.seek(&start)?;
        Ok(Box::new(cursor))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Stats {
        Vec::new()
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }
}

/// The engine's entries when the cursor was made.
struct Snapshot {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    at: usize,
    left: Option<usize>,
    range: KeyRange,
}

impl Cursor for Snapshot {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let key = self.range.clamp(key);
        self.at = self.entries.partition_point(|(k, _)| k.as_slice() < key);
        self.left = self.range.limit;
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        let at = self.at;
        if self.left == Some(0)
            || at >= self.entries.len()
            || !self.range.before_end(&self.entries[at].0)
        {
            return Ok(None);
        }
        self.at += 1;
        if let Some(left) = &mut self.left {
            *left -= 1;
        }
        let (key, value) = &self.entries[at];
        Ok(Some((key, value)))
    }
}

fn open_store() -> Arc<EngineStore> {
    let engine = Box::new(ModelEngine::default());
    Arc::new(EngineStore::open(engine, |_| Ok(None)).unwrap().0)
}

fn count(store: &EngineStore, key: &[u8]) -> u64 {
    store
        .get(key)
        .unwrap()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// Keys `x` and `z` on one stripe and `y` on the other.
fn keys(store: &EngineStore) -> [Vec<u8>; 3] {
    assert_eq!(STRIPES, 2);
    let mut on_stripe: [Vec<Vec<u8>>; 2] = Default::default();
    for i in 0.. {
        let key = format!("k{i}").into_bytes();
        on_stripe[store.stripe(&key)].push(key);
        if on_stripe[0].len() >= 2 && !on_stripe[1].is_empty() {
            break;
        }
    }
    let [mut first, mut second] = on_stripe;
    [first.remove(0), second.remove(0), first.remove(0)]
}

/// Two threads gather increments over two stripes in opposite orders (each may hold
/// one stripe and want the other), a third lets its writes go mid-batch as a count
/// does, and a fourth writes without gathering. None may wait for ever (shuttle fails
/// on a deadlock) and every increment must land.
#[test]
fn gatherers_in_opposite_orders_neither_deadlock_nor_lose_writes() {
    explore(|| {
        let store = open_store();
        let [x, y, z] = keys(&store);
        let batches: [(bool, Vec<&[u8]>); 4] = [
            (true, vec![&x, &y, &z]),
            (true, vec![&y, &x, &y]),
            (true, vec![&z, b"count", &y]),
            (false, vec![&y, &z]),
        ];
        let threads: Vec<_> = batches
            .into_iter()
            .map(|(gathers, batch)| {
                let store = Arc::clone(&store);
                let batch: Vec<Vec<u8>> = batch.into_iter().map(<[u8]>::to_vec).collect();
                shuttle::thread::spawn(move || {
                    if gathers {
                        store.start_gathering();
                    }
                    for key in &batch {
                        if key == b"count" {
                            store.len();
                        } else {
                            increment(&store, key);
                        }
                    }
                    if gathers {
                        store.finish_gathering().unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(
            [count(&store, &x), count(&store, &y), count(&store, &z)],
            [2, 5, 3]
        );
        assert_eq!(store.len(), 3);
    });
}

/// A gathering writer announces its write before the batch ends, as a blocked
/// client's wake or a WATCH's version does. A reader told of it that awaits the key's
/// writers reads it, a reader that sees the batch end reads all of it, and no reader
/// sees half a batch.
#[test]
fn gathered_writes_are_seen_whole_and_by_whoever_awaits_their_writers() {
    explore(|| {
        let store = open_store();
        let [x, y, _] = keys(&store);
        let announced = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, x, y) = (Arc::clone(&store), x.clone(), y.clone());
            let (announced, finished) = (Arc::clone(&announced), Arc::clone(&finished));
            shuttle::thread::spawn(move || {
                store.start_gathering();
                increment(&store, &x);
                announced.store(true, Ordering::SeqCst);
                increment(&store, &y);
                store.finish_gathering().unwrap();
                finished.store(true, Ordering::SeqCst);
            })
        };
        let was_finished = finished.load(Ordering::SeqCst);
        // y is written after x in the batch, so y seen means the batch landed.
        let (seen_y, seen_x) = (count(&store, &y), count(&store, &x));
        assert!(
            seen_y <= seen_x,
            "half a batch seen: x {seen_x}, y {seen_y}"
        );
        if was_finished {
            assert_eq!((seen_x, seen_y), (1, 1), "a finished batch not seen");
        }
        if announced.load(Ordering::SeqCst) {
            store.await_writers(&x).unwrap();
            assert_eq!(count(&store, &x), 1, "an announced write not seen");
        }
        writer.join().unwrap();
    });
}
