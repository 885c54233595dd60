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
//! - EXEC must survive a crash whole or not at all, as Redis's append-only file makes
//!   it. While a transaction runs (alone: it holds the gate exclusively), writes are
//!   held in an overlay that reads and scans see, and reach the engine as one batch
//!   when it ends.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    stripes: Box<[Mutex<()>]>,
    /// Keys stored, expired or not (as Redis's DBSIZE), counting a running
    /// transaction's writes.
    keys: AtomicU64,
    cursors: Mutex<Cursors>,
    /// Whether a transaction runs, so that other commands check `overlay` only then.
    /// Set and cleared under the exclusive gate, which orders it with every command.
    in_transaction: AtomicBool,
    overlay: Mutex<Overlay>,
}

/// The writes of the running transaction: `None` deletes.
#[derive(Default)]
struct Overlay {
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// What the writes added to the key count, taken back if the batch fails.
    added: i64,
}

/// Stored keys and values in order, and whether more may follow.
type Page = (Vec<(Vec<u8>, Vec<u8>)>, bool);

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
        let added = i64::from(self.stored.is_none());
        self.store.write(self.key, Some(stored), added)
    }

    /// Deletes the key; returns whether it existed.
    pub fn delete(self) -> Result<bool> {
        if self.stored.is_none() {
            return Ok(false);
        }
        self.store.write(self.key, None, -1)?;
        Ok(true)
    }
}

impl EngineStore {
    /// Wraps an opened engine; counts its keys and returns, beside the store, every
    /// key that has a stored deadline (for the active expiry's hints), found by
    /// `deadline` on each stored value, which also refuses values the server did not
    /// write (another program's store in the directory).
    pub fn open(
        engine: Box<dyn Engine>,
        deadline: impl Fn(&[u8]) -> std::result::Result<Option<u64>, String>,
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
                let found = deadline(stored).map_err(|why| {
                    Error::InvalidArgument(format!(
                        "key {:?}: {why} (does the directory hold another program's store?)",
                        String::from_utf8_lossy(key)
                    ))
                })?;
                if let Some(d) = found {
                    volatile.push((key.to_vec(), d));
                }
            }
        }
        let store = EngineStore {
            engine,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            keys: AtomicU64::new(keys),
            cursors: Mutex::new(Cursors::new()),
            in_transaction: AtomicBool::new(false),
            overlay: Mutex::new(Overlay::default()),
        };
        Ok((store, volatile))
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.in_transaction.load(Ordering::Relaxed) {
            if let Some(write) = self.overlay().writes.get(key) {
                return Ok(write.clone());
            }
        }
        self.engine.get(key)
    }

    /// Puts (`Some`) or deletes `key`, which the caller has locked, and moves the key
    /// count by `added`: into the overlay while a transaction runs, else to the engine.
    fn write(&self, key: &[u8], stored: Option<&[u8]>, added: i64) -> Result<()> {
        if self.in_transaction.load(Ordering::Relaxed) {
            let mut overlay = self.overlay();
            overlay
                .writes
                .insert(key.to_vec(), stored.map(<[u8]>::to_vec));
            overlay.added += added;
        } else {
            match stored {
                Some(stored) => self.engine.put(key, stored)?,
                None => self.engine.delete(key)?,
            }
        }
        self.keys.fetch_add(added as u64, Ordering::Relaxed);
        Ok(())
    }

    /// From here to [`EngineStore::commit`], writes wait in the overlay. The caller
    /// holds the gate exclusively until it commits.
    pub fn begin(&self) {
        debug_assert!(self.overlay().writes.is_empty());
        self.in_transaction.store(true, Ordering::Relaxed);
    }

    /// Writes the overlay as one batch. If that fails, none of it happened: the count
    /// is taken back and the error returned.
    pub fn commit(&self) -> Result<()> {
        if !self.in_transaction.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let overlay = std::mem::take(&mut *self.overlay());
        let mut batch = WriteBatch::new();
        for (key, write) in &overlay.writes {
            match write {
                Some(stored) => batch.put(key, stored),
                None => batch.delete(key),
            };
        }
        self.engine.write(&batch).inspect_err(|_| {
            self.keys.fetch_sub(overlay.added as u64, Ordering::Relaxed);
        })
    }

    fn overlay(&self) -> MutexGuard<'_, Overlay> {
        self.overlay.lock().unwrap_or_else(|e| e.into_inner())
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
            stored: self.get(key)?,
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
        if self.in_transaction.load(Ordering::Relaxed) {
            // The whole transaction becomes one batch anyway.
            for (key, stored) in pairs {
                let added = i64::from(self.get(key)?.is_none());
                self.write(key, Some(stored), added)?;
            }
            return Ok(());
        }
        let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
        let existing = self.engine.multi_get(&keys)?;
        let mut batch = WriteBatch::new();
        let mut new_keys = HashSet::new();
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
        let resume = match cursor {
            0 => None,
            n => Some(
                self.cursors()
                    .resume(n)
                    .ok_or_else(|| Error::InvalidArgument("invalid cursor".into()))?,
            ),
        };
        let (entries, more) = self.page(resume.as_deref(), None, count.max(1))?;
        for (key, stored) in &entries {
            f(key, stored);
        }
        Ok(match entries.last() {
            // There may be more after the last key; its successor is the key with a
            // zero byte appended.
            Some((last, _)) if more => {
                let mut resume = last.clone();
                resume.push(0);
                self.cursors().register(resume)
            }
            _ => 0,
        })
    }

    /// Up to `n` stored keys and values from a random point of the key order (wrapping
    /// to the start), for RANDOMKEY and sampling.
    pub fn sample(&self, n: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let from: [u8; 8] = rand::random();
        let (mut out, _) = self.page(Some(&from), None, n)?;
        if out.len() < n {
            out.extend(self.page(None, Some(&from), n - out.len())?.0);
        }
        Ok(out)
    }

    /// Up to `count` stored entries from `from` (inclusive) to `until` (exclusive), as
    /// the running transaction's writes would leave them; `more` is false when the
    /// range surely holds no further entry.
    fn page(&self, from: Option<&[u8]>, until: Option<&[u8]>, count: usize) -> Result<Page> {
        let mut range = KeyRange::all();
        if let Some(from) = from {
            range = range.from(from);
        }
        if let Some(until) = until {
            range = range.until(until);
        }
        let overlay = self
            .in_transaction
            .load(Ordering::Relaxed)
            .then(|| self.overlay());
        let written: Vec<(&[u8], Option<&[u8]>)> = match &overlay {
            None => Vec::new(),
            Some(o) => o
                .writes
                .range::<[u8], _>((
                    from.map_or(Bound::Unbounded, Bound::Included),
                    until.map_or(Bound::Unbounded, Bound::Excluded),
                ))
                .map(|(k, v)| (k.as_slice(), v.as_deref()))
                .collect(),
        };
        // Each overlay entry hides at most one engine entry, so this many from the
        // engine leave `count` after the merge unless the engine runs out.
        let want = count + written.len();
        let mut stored = Vec::with_capacity(want.min(1024));
        let mut cursor = self.engine.range(range.limit(want))?;
        while let Some((key, value)) = cursor.next()? {
            stored.push((key.to_vec(), value.to_vec()));
        }
        drop(cursor);
        let engine_done = stored.len() < want;
        // Past the engine's last entry the merge is exact only if the engine is done.
        let horizon = (!engine_done)
            .then(|| stored.last().map(|(k, _)| k.clone()))
            .flatten();
        let mut out = Vec::with_capacity(count);
        let mut written = written
            .into_iter()
            .filter(|(k, _)| horizon.as_deref().is_none_or(|h| *k <= h))
            .peekable();
        let mut stored = stored.into_iter().peekable();
        loop {
            let take_written = match (written.peek(), stored.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((w, _)), Some((s, _))) => *w <= s.as_slice(),
            };
            let entry = if take_written {
                let (key, value) = written.next().expect("peeked");
                if stored.peek().is_some_and(|(s, _)| s.as_slice() == key) {
                    stored.next();
                }
                value.map(|v| (key.to_vec(), v.to_vec()))
            } else {
                stored.next()
            };
            if let Some(entry) = entry {
                if out.len() == count {
                    return Ok((out, true));
                }
                out.push(entry);
            }
        }
        Ok((out, !engine_done))
    }

    /// Deletes every key, calling `removed` on each. The caller keeps every other
    /// writer out (FLUSHALL runs with the transaction gate held exclusively), so the
    /// count ends at zero. Inside a transaction, the writes before it are committed
    /// first: a FLUSHALL is too big for the overlay, so it splits the transaction's
    /// batch in two.
    pub fn clear(&self, mut removed: impl FnMut(&[u8])) -> Result<()> {
        if self.in_transaction.load(Ordering::Relaxed) {
            self.commit()?;
            self.begin();
        }
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

    /// Makes every write so far durable.
    pub fn sync(&self) -> Result<()> {
        self.engine.flush()
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
    use proptest::prelude::*;

    fn open_store(dir: &std::path::Path) -> EngineStore {
        let lsm = lsm::Lsm::open(dir, lsm::Options::default()).unwrap();
        EngineStore::open(Box::new(lsm), |_| Ok(None)).unwrap().0
    }

    /// Every key and value, by SCAN pages of `count`.
    fn scan_all(store: &EngineStore, count: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = store
                .scan(cursor, count, |k, v| out.push((k.to_vec(), v.to_vec())))
                .unwrap();
            if cursor == 0 {
                return out;
            }
        }
    }

    fn check(store: &EngineStore, model: &BTreeMap<Vec<u8>, Vec<u8>>, count: usize) {
        let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(scan_all(store, count), expected);
        assert_eq!(store.len(), model.len() as u64);
        for key in (0u8..12).map(|k| vec![b'k', k]) {
            assert_eq!(store.get(&key).unwrap().as_ref(), model.get(&key));
        }
        let sample = store.sample(3).unwrap();
        assert_eq!(sample.len(), model.len().min(3));
        for (k, v) in sample {
            assert_eq!(model.get(&k), Some(&v));
        }
    }

    proptest! {
        /// Scans, reads, counts and samples see a running transaction's writes over the
        /// engine's data exactly as if they had been applied, and the same after commit.
        #[test]
        fn a_transaction_overlay_reads_as_if_applied(
            initial in proptest::collection::btree_map(0u8..12, any::<u8>(), 0..12),
            writes in proptest::collection::vec((0u8..12, proptest::option::of(any::<u8>())), 0..24),
            count in 1usize..5,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = open_store(dir.path());
            let mut model = BTreeMap::new();
            for (k, v) in initial {
                store.lock(&[b'k', k]).unwrap().put(&[v]).unwrap();
                model.insert(vec![b'k', k], vec![v]);
            }
            store.begin();
            for (k, v) in writes {
                let key = [b'k', k];
                let locked = store.lock(&key).unwrap();
                match v {
                    Some(v) => {
                        locked.put(&[v]).unwrap();
                        model.insert(key.to_vec(), vec![v]);
                    }
                    None => {
                        let existed = locked.delete().unwrap();
                        prop_assert_eq!(existed, model.remove(key.as_slice()).is_some());
                    }
                }
                check(&store, &model, count);
            }
            store.commit().unwrap();
            check(&store, &model, count);
            drop(store);
            // What the batch wrote is what a reopened store has.
            check(&open_store(dir.path()), &model, count);
        }
    }

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
