//! The keyspace on an ordered, durable [`Engine`] (the LSM tree): what [`crate::db::Db`]
//! needs beyond get and put.
//!
//! - Read-modify-write commands (INCR, APPEND, SET NX ...) must not interleave on one
//!   key, and the engine has no compare-and-set: a writer holds its key's stripe lock
//!   from the read to the write. Stripes are few enough to allocate once and many
//!   enough that two busy keys rarely share one.
//! - DBSIZE is exact, as in Redis: every write knows (under the stripe lock) whether
//!   the key existed, and the count starts from a scan when the store opens.
//! - A SCAN cursor must be a number, but the engine resumes from a key. Each SCAN
//!   reply registers the key to resume from under a fresh number; the table of them is
//!   bounded, and a number it does not know gets `ERR invalid cursor`. Resuming from a
//!   key (not a position) is what guarantees that every key present for the whole scan
//!   is returned exactly once.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use engine::{Engine, Error, KeyRange, Result, WriteBatch};

/// Read-modify-write locks over the key space.
const STRIPES: usize = 4096;

/// SCAN cursors remembered; older ones are forgotten first.
const MAX_CURSORS: usize = 65_536;

/// Bytes of resume keys the cursor table may hold (keys can be large).
const MAX_CURSOR_BYTES: usize = 64 << 20;

/// Keys deleted per write batch by [`EngineStore::clear`].
const CLEAR_BATCH: u64 = 1024;

/// A key and the deadline stored with it (ms since the Unix epoch).
pub type KeyDeadline = (Vec<u8>, u64);

pub struct EngineStore {
    engine: Box<dyn Engine>,
    name: &'static str,
    stripes: Box<[Mutex<()>]>,
    /// Keys stored, expired or not (as Redis's DBSIZE).
    keys: AtomicU64,
    cursors: Mutex<Cursors>,
}

/// A key whose stripe lock is held, with what the engine held for it when locked.
pub struct Locked<'a> {
    store: &'a EngineStore,
    key: &'a [u8],
    stored: Option<Vec<u8>>,
    _stripe: MutexGuard<'a, ()>,
}

impl Locked<'_> {
    /// The stored bytes, which no other writer can change while this is held.
    pub fn stored(&self) -> Option<&[u8]> {
        self.stored.as_deref()
    }

    pub fn put(self, stored: &[u8]) -> Result<()> {
        self.store.engine.put(self.key, stored)?;
        if self.stored.is_none() {
            self.store.keys.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Deletes the key; returns whether it existed.
    pub fn delete(self) -> Result<bool> {
        if self.stored.is_none() {
            return Ok(false);
        }
        self.store.engine.delete(self.key)?;
        self.store.keys.fetch_sub(1, Ordering::Relaxed);
        Ok(true)
    }
}

impl EngineStore {
    /// Wraps an opened engine; counts its keys and returns, beside the store, every
    /// key that has a stored deadline (for the active expiry's hints), found by
    /// `deadline` on each stored value.
    pub fn open(
        engine: Box<dyn Engine>,
        name: &'static str,
        deadline: impl Fn(&[u8]) -> Option<u64>,
    ) -> Result<(EngineStore, Vec<KeyDeadline>)> {
        if !engine.capabilities().ordered {
            return Err(Error::Unsupported(
                "serving from an engine without key order (SCAN needs it)",
            ));
        }
        let mut keys = 0u64;
        let mut volatile = Vec::new();
        {
            let mut cursor = engine.range(KeyRange::all())?;
            while let Some((key, stored)) = cursor.next()? {
                keys += 1;
                if let Some(d) = deadline(stored) {
                    volatile.push((key.to_vec(), d));
                }
            }
        }
        let store = EngineStore {
            engine,
            name,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            keys: AtomicU64::new(keys),
            cursors: Mutex::new(Cursors::new()),
        };
        Ok((store, volatile))
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.engine.get(key)
    }

    fn stripe(&self, key: &[u8]) -> usize {
        hotring::hash::hash64(key) as usize % STRIPES
    }

    /// A panic while holding a stripe leaves no half-done state behind it (engine
    /// writes are atomic), so a poisoned stripe is as good as a clean one.
    fn lock_stripe(&self, stripe: usize) -> MutexGuard<'_, ()> {
        self.stripes[stripe]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Locks `key` against other writers and reads it.
    pub fn lock<'a>(&'a self, key: &'a [u8]) -> Result<Locked<'a>> {
        let guard = self.lock_stripe(self.stripe(key));
        Ok(Locked {
            store: self,
            key,
            stored: self.engine.get(key)?,
            _stripe: guard,
        })
    }

    /// Stores every pair in one atomic batch (MSET): after a crash, all of them or
    /// none. A key named twice keeps its last value.
    pub fn put_all(&self, pairs: &[(&[u8], Vec<u8>)]) -> Result<()> {
        // Stripes are taken in ascending order, so two batches never wait on each other
        // in a cycle; a single-key writer holds one stripe and waits for no other.
        let mut stripes: Vec<usize> = pairs.iter().map(|(k, _)| self.stripe(k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _guards: Vec<_> = stripes.iter().map(|&s| self.lock_stripe(s)).collect();
        let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
        let existing = self.engine.multi_get(&keys)?;
        let mut batch = WriteBatch::new();
        let mut new_keys = std::collections::HashSet::new();
        for ((key, stored), old) in pairs.iter().zip(existing) {
            batch.put(key, stored);
            if old.is_none() {
                new_keys.insert(*key);
            }
        }
        self.engine.write(&batch)?;
        self.keys
            .fetch_add(new_keys.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.keys.load(Ordering::Relaxed)
    }

    /// One SCAN step: calls `f` on up to `count` stored keys and their values from
    /// where `cursor` left off (0: the beginning); returns the next cursor, 0 at the end.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> Result<u64> {
        let mut range = KeyRange::all().limit(count.max(1));
        if cursor != 0 {
            let resume = self
                .cursors()
                .resume(cursor)
                .ok_or_else(|| Error::InvalidArgument("invalid cursor".into()))?;
            range = range.from(&resume);
        }
        let mut engine_cursor = self.engine.range(range)?;
        let mut last = None;
        let mut seen = 0;
        while let Some((key, stored)) = engine_cursor.next()? {
            f(key, stored);
            seen += 1;
            if seen == count.max(1) {
                last = Some(key.to_vec());
            }
        }
        Ok(match last {
            // A full page: there may be more after the last key (its successor is
            // the key with a zero byte appended).
            Some(mut key) => {
                key.push(0);
                self.cursors().register(key)
            }
            None => 0,
        })
    }

    /// Up to `n` stored keys and values from a random point of the key order (wrapping
    /// to the start), for RANDOMKEY and sampling.
    pub fn sample(&self, n: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let from: [u8; 8] = rand::random();
        let mut out = Vec::with_capacity(n);
        let mut after = self.engine.range(KeyRange::all().from(&from).limit(n))?;
        while let Some((key, stored)) = after.next()? {
            out.push((key.to_vec(), stored.to_vec()));
        }
        drop(after);
        if out.len() < n {
            let mut before = self
                .engine
                .range(KeyRange::all().until(&from).limit(n - out.len()))?;
            while let Some((key, stored)) = before.next()? {
                out.push((key.to_vec(), stored.to_vec()));
            }
        }
        Ok(out)
    }

    /// Deletes every key, calling `removed` on each. The caller keeps every other
    /// writer out (FLUSHALL runs with the transaction gate held exclusively), so the
    /// count ends at zero.
    pub fn clear(&self, mut removed: impl FnMut(&[u8])) -> Result<()> {
        let mut cursor = self.engine.range(KeyRange::all())?;
        let mut batch = WriteBatch::new();
        let mut pending = 0u64;
        while let Some((key, _)) = cursor.next()? {
            batch.delete(key);
            removed(key);
            pending += 1;
            if pending == CLEAR_BATCH {
                self.engine.write(&batch)?;
                self.keys.fetch_sub(pending, Ordering::Relaxed);
                batch = WriteBatch::new();
                pending = 0;
            }
        }
        self.engine.write(&batch)?;
        self.keys.fetch_sub(pending, Ordering::Relaxed);
        debug_assert_eq!(self.len(), 0, "a writer ran during FLUSHALL");
        Ok(())
    }

    pub fn stats(&self) -> engine::Stats {
        self.engine.stats()
    }

    pub fn close(&self) -> Result<()> {
        self.engine.close()
    }

    fn cursors(&self) -> MutexGuard<'_, Cursors> {
        self.cursors.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// SCAN cursor numbers and the keys they resume from.
struct Cursors {
    next: u64,
    resume: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
    bytes: usize,
}

impl Cursors {
    fn new() -> Cursors {
        // Numbers start at a random point so that a cursor from an earlier run of the
        // server is (almost surely) unknown rather than someone else's. They stay
        // below 2^53 for clients that hold them as doubles.
        Cursors {
            next: rand::random::<u64>() % (1 << 52) + 1,
            resume: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        }
    }

    fn register(&mut self, key: Vec<u8>) -> u64 {
        let id = self.next;
        self.next = if self.next >= (1 << 53) - 1 {
            1
        } else {
            self.next + 1
        };
        self.bytes += key.len();
        self.resume.insert(id, key);
        self.order.push_back(id);
        while self.order.len() > MAX_CURSORS || self.bytes > MAX_CURSOR_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(key) = self.resume.remove(&old) {
                self.bytes -= key.len();
            }
        }
        id
    }

    /// The key `id` resumes from. Kept (not taken): a client may repeat a SCAN call,
    /// as a stateless cursor allows.
    fn resume(&self, id: u64) -> Option<Vec<u8>> {
        self.resume.get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_table_forgets_the_oldest_first_and_stays_bounded() {
        let mut c = Cursors::new();
        let first = c.register(b"a".to_vec());
        let ids: Vec<u64> = (0..MAX_CURSORS)
            .map(|i| c.register(i.to_le_bytes().to_vec()))
            .collect();
        assert_eq!(c.resume(first), None, "the oldest cursor is forgotten");
        assert_eq!(c.resume(ids[0]), Some(0usize.to_le_bytes().to_vec()));
        assert_eq!(c.resume.len(), MAX_CURSORS);
        assert_ne!(first, 0);
        let big = c.register(vec![7; MAX_CURSOR_BYTES]);
        assert_eq!(c.resume(big).map(|k| k.len()), Some(MAX_CURSOR_BYTES));
        assert_eq!(c.resume.len(), 1, "one huge key pushes the rest out");
        assert!(c.bytes <= MAX_CURSOR_BYTES);
    }
}
