//! The baseline: a lock-free chaining hash like seed 000's comparison (Memcached's
//! structure made lock-free). A fixed array of buckets, each an unordered chain; new
//! items are CAS-inserted at the chain's head; no hotspot awareness. It shares the
//! index's hash function, item layout and update protocol (in place up to 8 bytes,
//! RCU above) so a comparison measures the ring and the head, nothing else.

use std::sync::atomic::{AtomicIsize, Ordering as StdOrdering};

use crossbeam_epoch::{self as epoch, Guard};

use crate::item::{ring_hash, Item, ItemPtr};
use crate::link::Link;
use crate::stats::Counters;
use crate::sync::{AtomicPtr, Ordering};

pub struct ChainingHash {
    buckets: Box<[AtomicPtr<Item>]>,
    depth: u32,
    counters: Counters,
    bytes: AtomicIsize,
    sample_period: u32,
}

// SAFETY: shared state is atomics and epoch-protected items.
unsafe impl Send for ChainingHash {}
// SAFETY: as above.
unsafe impl Sync for ChainingHash {}

std::thread_local! {
    static TICK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl ChainingHash {
    /// A table with `buckets` buckets (rounded up to a power of two).
    pub fn new(buckets: usize) -> ChainingHash {
        let n = buckets.max(1).next_power_of_two();
        ChainingHash {
            buckets: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            depth: n.trailing_zeros(),
            counters: Counters::new(),
            bytes: Default::default(),
            sample_period: 5,
        }
    }

    /// Sized for `keys` keys at `ratio` keys per bucket, matching `Config::fixed`.
    pub fn for_keys(keys: usize, ratio: usize) -> ChainingHash {
        Self::new((keys / ratio.max(1)).max(1))
    }

    #[inline]
    fn bucket(&self, hash: u64) -> &AtomicPtr<Item> {
        let i = if self.depth == 0 {
            0
        } else {
            hash >> (64 - self.depth)
        };
        &self.buckets[i as usize]
    }

    #[inline]
    fn item(&self, p: *mut Item, _guard: &Guard) -> Option<ItemPtr> {
        // SAFETY: chain words hold null or items retired only through the collector
        // after they were unlinked, so they outlive `_guard`.
        unsafe { ItemPtr::from_raw(p) }
    }

    fn record(&self, visits: u32) {
        let tick = TICK.with(|t| {
            t.set(t.get().wrapping_add(1));
            t.get()
        });
        if tick.is_multiple_of(self.sample_period) {
            self.counters.mine().count_access(visits, visits == 1);
        }
    }

    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.pin().get_with(key, f)
    }

    #[inline]
    fn get_with_in<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R, guard: &Guard) -> Option<R> {
        let hash = ring_hash(key);
        let mut cur = self.item(self.bucket(hash).load(Ordering::Acquire), guard);
        let mut visits = 0;
        while let Some(item) = cur {
            visits += 1;
            let link = item.load_next();
            if item.hash() == hash && !link.has(Link::OCCUPIED) && item.key() == key {
                self.record(visits);
                return Some(item.with_value(f));
            }
            cur = self.item(link.target(), guard);
        }
        self.record(visits.max(1));
        None
    }

    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Inserts or replaces. Returns true if the key was new.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> bool {
        self.pin().upsert(key, value)
    }

    fn upsert_in(&self, key: &[u8], value: &[u8], guard: &Guard) -> bool {
        let hash = ring_hash(key);
        let bucket = self.bucket(hash);
        // Allocated when first needed (not by an in-place write) and reused across
        // retries; ours until a CAS publishes it.
        let mut unpublished: Option<ItemPtr> = None;
        let mut alloc = || {
            *unpublished.get_or_insert_with(|| {
                ItemPtr::alloc(hash, 0, key, value, Link::to(std::ptr::null_mut(), 0))
            })
        };
        'restart: loop {
            let first = Link(bucket.load(Ordering::Acquire));
            let (mut pred, mut pred_link) = (bucket, first);
            let mut visits = 0;
            while let Some(cur) = self.item(pred_link.target(), guard) {
                visits += 1;
                let link = cur.load_next();
                if link.has(Link::OCCUPIED) {
                    let unlinked = pred_link.retarget(link.target());
                    if pred
                        .compare_exchange(
                            pred_link.0,
                            unlinked.0,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_err()
                    {
                        continue 'restart;
                    }
                    self.retire(cur, guard);
                    continue 'restart;
                }
                if cur.hash() == hash && cur.key() == key {
                    self.record(visits);
                    if cur.is_inline() && cur.value_len() == value.len() {
                        if !cur.write_in_place(value) {
                            continue 'restart;
                        }
                        if let Some(fresh) = unpublished {
                            self.free_unpublished(fresh);
                        }
                        return false;
                    }
                    if link.has(Link::WRITING) {
                        continue 'restart;
                    }
                    let fresh = alloc();
                    fresh
                        .next()
                        .store(Link::to(link.target(), 0).0, Ordering::Relaxed);
                    let marked = Link::to(fresh.as_raw(), Link::OCCUPIED);
                    if cur
                        .next()
                        .compare_exchange(link.0, marked.0, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                    {
                        continue 'restart;
                    }
                    self.bytes
                        .fetch_add(fresh.footprint() as isize, StdOrdering::Relaxed);
                    let unlinked = pred_link.retarget(fresh.as_raw());
                    if pred
                        .compare_exchange(
                            pred_link.0,
                            unlinked.0,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        self.retire(cur, guard);
                    }
                    // Otherwise the next walk over this chain unlinks it.
                    return false;
                }
                (pred, pred_link) = (cur.next_in(guard), link);
            }
            let fresh = alloc();
            fresh
                .next()
                .store(Link::to(first.target(), 0).0, Ordering::Relaxed);
            let linked = Link::to(fresh.as_raw(), 0);
            if bucket
                .compare_exchange(first.0, linked.0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.bytes
                    .fetch_add(fresh.footprint() as isize, StdOrdering::Relaxed);
                self.counters.mine().len.fetch_add(1, StdOrdering::Relaxed);
                return true;
            }
        }
    }

    /// Pins the current thread for a batch of operations, as [`crate::HotRing::pin`]
    /// does, so a benchmark can give both structures the same batches.
    pub fn pin(&self) -> Pinned<'_> {
        Pinned {
            chain: self,
            guard: epoch::pin(),
        }
    }

    fn free_unpublished(&self, item: ItemPtr) {
        // SAFETY: never linked, so no other thread has seen it.
        unsafe { item.free() }
    }

    fn retire(&self, item: ItemPtr, guard: &Guard) {
        self.bytes
            .fetch_sub(item.footprint() as isize, StdOrdering::Relaxed);
        // SAFETY: unlinked by our CAS (exactly one thread succeeds), so unreachable for
        // threads pinning later, and retired once.
        unsafe { item.retire(guard) }
    }

    pub fn len(&self) -> usize {
        self.counters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items visited per access and the share found first in their chain, over the
    /// accesses sampled since the last reset.
    pub fn access_stats(&self) -> (f64, f64) {
        let c = &self.counters;
        let n = c.sum(|s| s.accesses.load(StdOrdering::Relaxed)).max(1) as f64;
        (
            c.sum(|s| s.visits.load(StdOrdering::Relaxed)) as f64 / n,
            c.sum(|s| s.head_hits.load(StdOrdering::Relaxed)) as f64 / n,
        )
    }

    pub fn reset_access_stats(&self) {
        self.counters.reset_access_stats();
    }

    /// Bytes held by the bucket array and the items.
    pub fn bytes(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<AtomicPtr<Item>>()
            + self.bytes.load(StdOrdering::Relaxed).max(0) as usize
    }
}

/// The chaining hash under one epoch pin.
pub struct Pinned<'a> {
    chain: &'a ChainingHash,
    guard: Guard,
}

impl Pinned<'_> {
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.chain.get_with_in(key, f, &self.guard)
    }

    /// Inserts or replaces. Returns true if the key was new.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> bool {
        self.chain.upsert_in(key, value, &self.guard)
    }
}

impl Drop for ChainingHash {
    fn drop(&mut self) {
        let guard = epoch::pin();
        for b in self.buckets.iter() {
            let mut cur = self.item(b.load(Ordering::Relaxed), &guard);
            while let Some(item) = cur {
                cur = self.item(item.load_next().target(), &guard);
                // SAFETY: `&mut self`: nothing else can reach the chain. A marked item
                // still linked here was never retired (its unlink never succeeded).
                unsafe { item.free() };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upsert_get_inline_and_rcu() {
        let t = ChainingHash::new(4);
        for i in 0u32..1000 {
            assert!(t.upsert(&i.to_le_bytes(), &i.to_le_bytes()));
        }
        for i in 0u32..1000 {
            assert!(!t.upsert(&i.to_le_bytes(), &[i as u8; 20]));
            assert!(!t.upsert(&i.to_le_bytes(), &[i as u8; 21]));
        }
        assert_eq!(t.len(), 1000);
        for i in 0u32..1000 {
            assert_eq!(t.get(&i.to_le_bytes()), Some(vec![i as u8; 21]));
        }
        assert_eq!(t.get(b"absent"), None);
    }

    /// Threads inserting, overwriting in place (8 bytes) and by RCU (longer values) the
    /// same keys at once: each key ends once in its chain with a value some thread
    /// wrote whole, and the count of keys is exact.
    #[test]
    fn concurrent_upserts_keep_each_key_once_with_a_whole_value() {
        const KEYS: u32 = 500;
        const THREADS: u32 = 8;
        let t = ChainingHash::new(16);
        // A value names its writer and round; its length (8 or 40) picks the path.
        let value = |thread: u32, round: u32| {
            let word = (u64::from(thread) << 32 | u64::from(round)).to_le_bytes();
            word.repeat(if round.is_multiple_of(3) { 5 } else { 1 })
        };
        std::thread::scope(|s| {
            for thread in 0..THREADS {
                let t = &t;
                s.spawn(move || {
                    for round in 0..20 {
                        for k in 0..KEYS {
                            let k = (k * 7 + thread * 61) % KEYS;
                            let pinned = t.pin();
                            pinned.upsert(&k.to_le_bytes(), &value(thread, round));
                            assert!(pinned.get_with(&k.to_le_bytes(), |_| ()).is_some());
                        }
                    }
                });
            }
        });
        assert_eq!(t.len(), KEYS as usize);
        for k in 0..KEYS {
            let v = t.get(&k.to_le_bytes()).expect("every key written is there");
            let word: [u8; 8] = v[..8].try_into().unwrap();
            let (thread, round) = (
                (u64::from_le_bytes(word) >> 32) as u32,
                u64::from_le_bytes(word) as u32,
            );
            assert!(thread < THREADS && round < 20, "key {k}: {v:?}");
            assert_eq!(v, value(thread, round), "key {k}: a torn value");
        }
        // No key twice: a walk over the buckets finds exactly the keys.
        let guard = epoch::pin();
        let mut found = 0;
        for b in t.buckets.iter() {
            let mut cur = t.item(b.load(Ordering::Acquire), &guard);
            while let Some(item) = cur {
                let link = item.load_next();
                found += usize::from(!link.has(Link::OCCUPIED));
                cur = t.item(link.target(), &guard);
            }
        }
        assert_eq!(found, KEYS as usize);
    }
}
