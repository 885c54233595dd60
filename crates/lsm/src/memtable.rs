//! The memtable: recent writes in a concurrent skiplist, ordered by internal key
//! (`internal_key.rs`).

use std::borrow::Borrow;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as MemoryOrdering};

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use engine::{KIND_DELETE, KIND_PUT};

use crate::internal_key::{with_lookup_key, InternalKey, KeyRef, TRAILER_SIZE};
use crate::memtable_filter::MemTableFilter;

pub type MemEntry<'a> = Entry<'a, InternalKey, Box<[u8]>>;

/// What the memtable knows about a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

pub struct MemTable {
    /// The oldest log holding this memtable's writes: once it is flushed, logs below
    /// the next memtable's are no longer needed.
    pub wal_number: u64,
    map: SkipMap<InternalKey, Box<[u8]>>,
    /// Which user keys `map` may hold, for point reads.
    filter: MemTableFilter,
    /// Key, value and per-node overhead of everything inserted: what flushing frees.
    bytes: AtomicUsize,
    entries: AtomicU64,
}

/// A skiplist node's bookkeeping beyond key and value (tower, lengths, refcount),
/// roughly; it only steers when the memtable counts as full.
const NODE_OVERHEAD: usize = 64;

impl MemTable {
    /// A memtable that will be frozen at about `capacity_bytes` (which sizes its
    /// filter).
    pub fn new(wal_number: u64, capacity_bytes: usize) -> MemTable {
        MemTable {
            wal_number,
            map: SkipMap::new(),
            filter: MemTableFilter::new(capacity_bytes),
            bytes: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
        }
    }

    pub fn insert(&self, user_key: &[u8], sequence: u64, kind: u8, value: &[u8]) {
        debug_assert!(kind == KIND_PUT || kind == KIND_DELETE);
        let key = InternalKey::new(user_key, sequence, kind);
        self.bytes.fetch_add(
            user_key.len() + TRAILER_SIZE + value.len() + NODE_OVERHEAD,
            MemoryOrdering::Relaxed,
        );
        self.entries.fetch_add(1, MemoryOrdering::Relaxed);
        self.filter.insert(user_key);
        self.map.insert(key, value.into());
    }

    /// The newest version of `user_key` with a sequence number up to `sequence`.
    pub fn get(&self, user_key: &[u8], sequence: u64) -> Option<Lookup> {
        if !self.filter.may_contain(user_key) {
            return None;
        }
        let entry = self.seek(user_key, sequence)?;
        let key: &KeyRef = entry.key().borrow();
        if key.user_key() != user_key {
            return None;
        }
        Some(match key.kind() {
            KIND_PUT => Lookup::Value(entry.value().to_vec()),
            _ => Lookup::Deleted,
        })
    }

    /// The first entry at or after `user_key` as of `sequence`: the newest visible
    /// version of `user_key` if there is one, else something later (of any sequence).
    pub fn seek(&self, user_key: &[u8], sequence: u64) -> Option<MemEntry<'_>> {
        with_lookup_key(user_key, sequence, |lookup| {
            self.map.lower_bound(Bound::Included(lookup))
        })
    }

    /// The first entry at or after an internal key.
    pub fn seek_internal(&self, target: &KeyRef) -> Option<MemEntry<'_>> {
        self.map.lower_bound(Bound::Included(target))
    }

    pub fn first(&self) -> Option<MemEntry<'_>> {
        self.map.front()
    }

    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(MemoryOrdering::Relaxed)
    }

    pub fn entries(&self) -> u64 {
        self.entries.load(MemoryOrdering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_visible_version_wins() {
        let m = MemTable::new(1, 1 << 20);
        m.insert(b"k", 1, KIND_PUT, b"one");
        m.insert(b"k", 2, KIND_DELETE, b"");
        m.insert(b"k", 3, KIND_PUT, b"three");
        m.insert(b"ka", 4, KIND_PUT, b"other");
        assert_eq!(m.get(b"k", 0), None);
        assert_eq!(m.get(b"k", 1), Some(Lookup::Value(b"one".to_vec())));
        assert_eq!(m.get(b"k", 2), Some(Lookup::Deleted));
        assert_eq!(m.get(b"k", 9), Some(Lookup::Value(b"three".to_vec())));
        assert_eq!(m.get(b"", 9), None);
        assert_eq!(m.get(b"kb", 9), None);
        // A long key takes the heap path of the lookup key.
        let long = vec![7u8; 300];
        m.insert(&long, 5, KIND_PUT, b"long");
        assert_eq!(m.get(&long, 5), Some(Lookup::Value(b"long".to_vec())));
        assert_eq!(m.get(&long[..299], 5), None);
        assert_eq!(m.entries(), 5);
    }
}
