//! The keyspace the commands operate on. In memory mode it is the HotRing index
//! itself, called directly from the connection tasks (no lock, no queue); the shard
//! layer will implement the same calls by queueing to per-core workers.
//!
//! Every single-key command is one [`Db::update`]: read the entry, decide, and
//! publish the decision with a compare-and-set on the stored bytes, retrying if
//! another writer got there first. Expired keys read as absent everywhere and are
//! deleted when met (lazy expiry) or by [`Db::expire_cycle`] (active expiry).

use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use hotring::HotRing;

use crate::entry::{now_ms, Entry};

/// What an [`Db::update`] decides to do with the key.
pub enum Change {
    Keep,
    Put(Vec<u8>, Option<u64>),
    Delete,
}

pub struct Db {
    index: HotRing,
    /// Keys given a deadline, each with that deadline: where the active expiry cycle
    /// looks. A hint only: the entry in `index` decides, and stale hints are dropped
    /// when the cycle meets them.
    volatile: HotRing,
    /// Where the active cycle resumes in `volatile`.
    expire_cursor: AtomicU64,
    watches: Watches,
    expired: AtomicU64,
}

impl Default for Db {
    fn default() -> Self {
        Db {
            index: HotRing::new(),
            volatile: HotRing::new(),
            expire_cursor: AtomicU64::new(0),
            watches: Watches::default(),
            expired: AtomicU64::new(0),
        }
    }
}

impl Db {
    /// The live entry of `key`.
    pub fn get(&self, key: &[u8]) -> Option<Entry> {
        let stored = self.index.get(key)?;
        if Entry::stored_deadline(&stored).is_some_and(|d| d < now_ms()) {
            self.remove_expired(key, Some(&stored));
            return None;
        }
        Some(Entry::decode(stored))
    }

    /// Whether `key` is live, without copying its value (an expired one is handed to
    /// [`Db::get`], which deletes it).
    pub fn contains(&self, key: &[u8]) -> bool {
        match self.index.get_with(key, Entry::stored_deadline) {
            None => false,
            Some(Some(d)) if d < now_ms() => self.get(key).is_some(),
            Some(_) => true,
        }
    }

    /// Sets `key` whatever it held.
    pub fn set(&self, key: &[u8], value: &[u8], deadline: Option<u64>) {
        self.index.upsert(key, &Entry::encode(value, deadline));
        self.written(key, deadline);
    }

    /// Reads `key`'s live entry, lets `decide` choose a change, and applies it
    /// atomically: if another writer changed the key in between, `decide` runs again
    /// on the new entry. Returns what the last `decide` returned.
    pub fn update<R>(
        &self,
        key: &[u8],
        mut decide: impl FnMut(Option<&Entry>) -> (Change, R),
    ) -> R {
        loop {
            let stored = self.index.get(key);
            let entry = stored.clone().map(Entry::decode);
            let expired = entry
                .as_ref()
                .is_some_and(|e| e.deadline.is_some() && e.expired_at(now_ms()));
            let live = if expired { None } else { entry.as_ref() };
            let (change, result) = decide(live);
            let done = match (change, &stored) {
                (Change::Keep, _) => {
                    if expired {
                        self.remove_expired(key, stored.as_deref());
                    }
                    true
                }
                (Change::Put(value, deadline), None) => {
                    let ok = self.index.insert(key, &Entry::encode(&value, deadline));
                    if ok {
                        self.written(key, deadline);
                    }
                    ok
                }
                (Change::Put(value, deadline), Some(old)) => {
                    let ok = self
                        .index
                        .compare_and_set(key, old, &Entry::encode(&value, deadline));
                    if ok {
                        if expired {
                            self.expired.fetch_add(1, Ordering::Relaxed);
                        }
                        self.written(key, deadline);
                    }
                    ok
                }
                (Change::Delete, None) => true,
                (Change::Delete, Some(old)) => {
                    let ok = self.index.remove_if(key, |v| v == old.as_slice());
                    if ok {
                        self.written(key, None);
                    }
                    ok
                }
            };
            if done {
                return result;
            }
        }
    }

    /// Removes `key`; returns whether it was live.
    pub fn remove(&self, key: &[u8]) -> bool {
        self.update(key, |e| (Change::Delete, e.is_some()))
    }

    /// Keys stored, including expired ones not yet deleted (as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Keys with a deadline (an estimate: hints not yet cleaned up count).
    pub fn volatile_len(&self) -> usize {
        self.volatile.len()
    }

    /// Keys deleted because they expired, lazily or actively.
    pub fn expired_count(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// One page of a resumable scan (see [`HotRing::scan`]): calls `f` on each live
    /// key; returns the next cursor, 0 at the end.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8])) -> u64 {
        let now = now_ms();
        let mut stale = Vec::new();
        let next = self.index.scan(cursor, count, |k, v, _| {
            if Entry::stored_deadline(v).is_some_and(|d| d < now) {
                stale.push((k.to_vec(), v.to_vec()));
            } else {
                f(k);
            }
        });
        for (k, stored) in stale {
            self.remove_expired(&k, Some(&stored));
        }
        next.unwrap_or(0)
    }

    /// Deletes every key.
    pub fn clear(&self) {
        remove_all(&self.index, |k| self.written(k, None));
        remove_all(&self.volatile, |_| {});
    }

    /// One step of active expiry: examines up to `budget` keys that have deadlines,
    /// deletes the expired ones, and returns `(examined, deleted)`. Resumes where the
    /// last step stopped, wrapping around.
    pub fn expire_cycle(&self, budget: usize) -> (usize, usize) {
        let now = now_ms();
        let mut hints = Vec::with_capacity(budget);
        let from = self.expire_cursor.load(Ordering::Relaxed);
        let next = self
            .volatile
            .scan(from, budget, |k, v, _| hints.push((k.to_vec(), v.to_vec())));
        self.expire_cursor
            .store(next.unwrap_or(0), Ordering::Relaxed);
        let mut deleted = 0;
        for (key, hint) in &hints {
            let stored = self.index.get(key);
            let deadline = stored.as_deref().and_then(Entry::stored_deadline);
            if deadline.is_some_and(|d| d < now) && self.remove_expired(key, stored.as_deref()) {
                deleted += 1;
            } else if deadline
                .map(u64::to_le_bytes)
                .as_ref()
                .map(<[u8; 8]>::as_slice)
                == Some(hint.as_slice())
            {
                continue;
            }
            // The key is gone, lost its deadline or got another: drop this hint, then
            // re-check, so that a deadline set meanwhile keeps a hint.
            if self.volatile.remove_if(key, |v| v == hint.as_slice()) {
                if let Some(d) = self
                    .index
                    .get(key)
                    .as_deref()
                    .and_then(Entry::stored_deadline)
                {
                    self.volatile.upsert(key, &d.to_le_bytes());
                }
            }
        }
        (hints.len(), deleted)
    }

    /// Deletes `key` if it still holds the expired value `stored`; returns whether it did.
    fn remove_expired(&self, key: &[u8], stored: Option<&[u8]>) -> bool {
        let Some(stored) = stored else { return false };
        let removed = self.index.remove_if(key, |v| v == stored);
        if removed {
            self.expired.fetch_add(1, Ordering::Relaxed);
            self.written(key, None);
        }
        removed
    }

    /// Bookkeeping after a successful write to `key`.
    fn written(&self, key: &[u8], deadline: Option<u64>) {
        if let Some(d) = deadline {
            self.volatile.upsert(key, &d.to_le_bytes());
        }
        self.watches.touch(key);
    }

    /// Starts watching `key` for WATCH: returns the version EXEC compares against.
    pub fn watch(&self, key: &[u8]) -> u32 {
        self.watches.watch(key)
    }

    pub fn unwatch(&self, keys: usize) {
        self.watches.unwatch(keys);
    }

    pub fn watched_version(&self, key: &[u8]) -> u32 {
        self.watches.version(key)
    }
}

/// Version counters for WATCH, one per stripe of the key space. A write to a key
/// bumps its stripe's counter, but only while some client watches anything, so
/// writes pay one shared load when nobody does. A stripe shared by two keys can make
/// EXEC fail without cause (1 in 65,536), never succeed wrongly.
struct Watches {
    watchers: AtomicUsize,
    versions: Box<[AtomicU32]>,
}

const WATCH_STRIPES: usize = 1 << 16;

impl Default for Watches {
    fn default() -> Self {
        Watches {
            watchers: AtomicUsize::new(0),
            versions: (0..WATCH_STRIPES).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl Watches {
    fn stripe(&self, key: &[u8]) -> &AtomicU32 {
        &self.versions[hotring::hash::hash64(key) as usize % WATCH_STRIPES]
    }

    /// Called after the write is visible. The fence pairs with the one in `watch`: a
    /// writer that reads no watchers wrote before the watcher read its version.
    fn touch(&self, key: &[u8]) {
        fence(Ordering::SeqCst);
        if self.watchers.load(Ordering::Relaxed) > 0 {
            self.stripe(key).fetch_add(1, Ordering::SeqCst);
        }
    }

    fn watch(&self, key: &[u8]) -> u32 {
        self.watchers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.version(key)
    }

    fn unwatch(&self, keys: usize) {
        self.watchers.fetch_sub(keys, Ordering::SeqCst);
    }

    fn version(&self, key: &[u8]) -> u32 {
        self.stripe(key).load(Ordering::SeqCst)
    }
}

/// Removes every key of `index`, calling `removed` on each it removed.
fn remove_all(index: &HotRing, mut removed: impl FnMut(&[u8])) {
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        let mut keys = Vec::new();
        cursor = index.scan(from, 1024, |k, _, _| keys.push(k.to_vec()));
        for k in keys {
            if index.remove(&k) {
                removed(&k);
            }
        }
    }
}

/// Scans at least `n` entries of `index` from a random hash, wrapping around once if
/// that point was near the end.
fn scan_from_random_point(index: &HotRing, n: usize, f: &mut impl FnMut(&[u8], &[u8], u16)) {
    if index.scan(rand::random(), n, &mut *f).is_none() {
        index.scan(0, n, f);
    }
}

/// Items INFO's `hotring` section looks at for ring lengths and bytes per key.
const STATS_SAMPLE_ITEMS: usize = 16_384;

/// A key met by [`Db::sample`] or [`Db::sample_volatile`].
pub struct Sampled {
    pub key: Vec<u8>,
    pub heat: u16,
    /// Bytes of key and stored value, plus a rough per-item overhead.
    pub bytes: usize,
    pub deadline: Option<u64>,
}

/// Index overhead per item beyond key and value: header, link and directory share.
const ITEM_OVERHEAD: usize = 48;

impl Db {
    /// Up to `n` keys that follow a random point of the key space, with their heat.
    pub fn sample(&self, n: usize) -> Vec<Sampled> {
        let mut out = Vec::with_capacity(n);
        let mut push = |k: &[u8], v: &[u8], heat: u16| {
            if out.len() < n {
                out.push(Sampled {
                    key: k.to_vec(),
                    heat,
                    bytes: k.len() + v.len() + ITEM_OVERHEAD,
                    deadline: Entry::stored_deadline(v),
                })
            }
        };
        scan_from_random_point(&self.index, n, &mut push);
        out
    }

    /// Up to `n` keys with deadlines that follow a random point of the key space, with
    /// their heat in the main index (for the volatile-* eviction policies).
    pub fn sample_volatile(&self, n: usize) -> Vec<Sampled> {
        let mut keys = Vec::with_capacity(n);
        scan_from_random_point(&self.volatile, n, &mut |k, _, _| {
            if keys.len() < n {
                keys.push(k.to_vec())
            }
        });
        keys.into_iter()
            .filter_map(|key| {
                // Stale hints (the key is gone or lost its deadline) are skipped here
                // and dropped by the expiry cycle.
                let (bytes, heat, deadline) = self.index.peek_with(&key, |v, heat| {
                    (
                        key.len() + v.len() + ITEM_OVERHEAD,
                        heat,
                        Entry::stored_deadline(v),
                    )
                })?;
                deadline.map(|d| Sampled {
                    key,
                    heat,
                    bytes,
                    deadline: Some(d),
                })
            })
            .collect()
    }

    /// Bytes `key` takes in the index (key, stored value and the per-item overhead),
    /// or `None` if it is not live. Does not count as an access.
    pub fn memory_usage(&self, key: &[u8]) -> Option<usize> {
        let (bytes, deadline) = self.index.peek_with(key, |stored, _| {
            (
                key.len() + stored.len() + ITEM_OVERHEAD,
                Entry::stored_deadline(stored),
            )
        })?;
        deadline.is_none_or(|d| d >= now_ms()).then_some(bytes)
    }

    /// A live key chosen at random (RANDOMKEY), or `None` if there are none.
    pub fn random_key(&self) -> Option<Vec<u8>> {
        // Expired keys met on the way are deleted; give up after a few rounds of them
        // as Redis does, rather than loop on a keyspace full of expired keys.
        for _ in 0..100 {
            let key = self.sample(1).pop()?.key;
            if self.contains(&key) {
                return Some(key);
            }
        }
        None
    }

    /// `key`'s share of recent accesses (see `HotRing::access_share`).
    pub fn access_share(&self, key: &[u8]) -> f64 {
        self.index.access_share(key)
    }

    /// The hottest keys and their shares of recent accesses (see `HotRing::hot_keys`).
    pub fn hot_keys(&self, n: usize) -> Vec<(Vec<u8>, f64)> {
        self.index.hot_keys(n)
    }

    pub fn reset_stats(&self) {
        self.expired.store(0, Ordering::Relaxed);
        self.index.reset_access_stats();
    }

    /// The index's counters, with ring lengths and bytes estimated from the items
    /// after a random point: a full walk of millions of keys would stall INFO, and
    /// every client of its io thread, for the better part of a second.
    pub fn index_stats(&self) -> hotring::Stats {
        self.index.stats_sampled(rand::random(), STATS_SAMPLE_ITEMS)
    }
}
