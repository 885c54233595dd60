//! The memtable: recent writes, each user key held once, with its versions chained
//! newest first. The keys sit in a concurrent skiplist, for ordered reads, and in a
//! hash index, for point reads and for writes to a key the memtable already holds:
//! a skiplist search was a dozen cache misses, and a SET paid for two (reading the
//! old value, then inserting), most of a SET's profile. A hot key overwritten many
//! times costs one search in all. Read in order, a memtable yields internal keys
//! (`internal_key.rs`) in their order: keys ascending, each key's versions newest
//! first.
//!
//! One writer at a time ([`MemTable::writer`]); readers run beside it without locks.
//! Nothing is removed or changed once published (a version's value, a key's older
//! versions, a bucket's chain) except the one pointer to a key's newest version, and
//! nothing is freed before the memtable drops: a reference into it stays good for as
//! long as the memtable is borrowed.

use std::ops::Bound;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as MemoryOrdering};
use std::sync::{Mutex, MutexGuard};

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use engine::{KIND_DELETE, KIND_PUT};

use crate::bloom;
use crate::internal_key::{trailer, KeyRef, TRAILER_SIZE};
use crate::memtable_filter::MemTableFilter;
use crate::stored_key::StoredKey;

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
    keys: SkipMap<StoredKey, KeyNode>,
    /// Hash-indexed chains of the nodes in `keys` (inside the skiplist's entries,
    /// which never move). A fixed count, sized by capacity so that a full memtable has
    /// about one key per bucket.
    buckets: Box<[AtomicPtr<KeyNode>]>,
    /// Which user keys the memtable may hold: most point reads miss every memtable,
    /// and this answers them with one cache line.
    filter: MemTableFilter,
    writer: Mutex<()>,
    /// Keys, values and bookkeeping of everything inserted: what flushing frees.
    bytes: AtomicUsize,
    /// Versions inserted.
    entries: AtomicU64,
}

/// One user key and its versions.
struct KeyNode {
    hash: u64,
    key: StoredKey,
    /// The next node in this one's bucket; set before this node is published.
    next_in_bucket: AtomicPtr<KeyNode>,
    /// Never null: a node is created with its first version.
    newest: AtomicPtr<Version>,
}

struct Version {
    /// `sequence << 8 | kind`, as in the internal key.
    trailer: u64,
    value: Box<[u8]>,
    /// The next older version of the key, or null; set before this one is published.
    older: AtomicPtr<Version>,
}

/// Bookkeeping per key beyond its bytes (skiplist entry and tower, the index's part,
/// the key stored inline twice), roughly; it only steers when the memtable counts as
/// full.
const KEY_OVERHEAD: usize = 144;
/// Bookkeeping per version beyond its value (the version, the value's allocation).
const VERSION_OVERHEAD: usize = 48;
/// One bucket per this many bytes of capacity: every key costs more than this.
const CAPACITY_BYTES_PER_BUCKET: usize = 128;
const _: () = assert!(KEY_OVERHEAD >= CAPACITY_BYTES_PER_BUCKET);

impl MemTable {
    /// A memtable that will be frozen at about `capacity_bytes` (which sizes its
    /// filter and index).
    pub fn new(wal_number: u64, capacity_bytes: usize) -> MemTable {
        let buckets = (capacity_bytes / CAPACITY_BYTES_PER_BUCKET)
            .next_power_of_two()
            .max(64);
        MemTable {
            wal_number,
            keys: SkipMap::new(),
            buckets: (0..buckets)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            filter: MemTableFilter::new(capacity_bytes),
            writer: Mutex::new(()),
            bytes: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
        }
    }

    /// The one writer, until the returned guard drops.
    pub fn writer(&self) -> MemTableWriter<'_> {
        MemTableWriter {
            memtable: self,
            _exclusive: self.writer.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// The newest version of `user_key` (whose `bloom::hash` is `hash`) with a
    /// sequence number up to `sequence`.
    pub fn get(&self, user_key: &[u8], hash: u64, sequence: u64) -> Option<Lookup> {
        if !self.filter.may_contain(hash) {
            return None;
        }
        let version = self
            .find(user_key, hash)?
            .newest_at_most(trailer(sequence, KIND_PUT))?;
        Some(match version.trailer as u8 {
            KIND_PUT => Lookup::Value(version.value.to_vec()),
            _ => Lookup::Deleted,
        })
    }

    /// The first version at or after an internal key.
    pub fn seek(&self, target: &KeyRef) -> Option<MemPosition<'_>> {
        let mut entry = self.keys.lower_bound(Bound::Included(target.user_key()))?;
        if entry.key().as_bytes() == target.user_key() {
            if let Some(version) = node(&entry).newest_at_most(target.trailer()) {
                return Some(MemPosition { entry, version });
            }
            entry = entry.next()?;
        }
        Some(MemPosition::newest_of(entry))
    }

    pub fn first(&self) -> Option<MemPosition<'_>> {
        self.keys.front().map(MemPosition::newest_of)
    }

    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(MemoryOrdering::Relaxed)
    }

    pub fn entries(&self) -> u64 {
        self.entries.load(MemoryOrdering::Relaxed)
    }

    fn bucket(&self, hash: u64) -> &AtomicPtr<KeyNode> {
        // The filter picks its word with the hash's low bits; the high ones spread
        // the keys of one word over buckets.
        &self.buckets[(hash.rotate_left(24) as usize) & (self.buckets.len() - 1)]
    }

    fn find(&self, user_key: &[u8], hash: u64) -> Option<&KeyNode> {
        let mut at = self.bucket(hash).load(MemoryOrdering::Acquire);
        // SAFETY: a bucket or `next_in_bucket` holds null or a node in `self.keys`,
        // stored (Release, or before the node was published with Release) once the
        // node was complete; the Acquire loads make it visible here. Nodes are freed
        // only when `self` drops, which the borrow of `self` rules out.
        while let Some(node) = unsafe { at.as_ref() } {
            if node.hash == hash && node.key.as_bytes() == user_key {
                return Some(node);
            }
            at = node.next_in_bucket.load(MemoryOrdering::Acquire);
        }
        None
    }
}

/// The node an entry of `keys` holds, for as long as the skiplist is borrowed.
fn node<'a>(entry: &Entry<'a, StoredKey, KeyNode>) -> &'a KeyNode {
    let node: *const KeyNode = entry.value();
    // SAFETY: the node lives inside a skiplist entry, allocated once and never moved;
    // the skiplist frees an entry only after it is removed, or when the skiplist
    // drops. Nothing is ever removed (the writer inserts only keys it does not hold,
    // asserting so), and the skiplist is borrowed for 'a.
    unsafe { &*node }
}

impl KeyNode {
    fn newest(&self) -> &Version {
        let newest = self.newest.load(MemoryOrdering::Acquire);
        // SAFETY: `newest` is never null, and holds a version leaked from a `Box` and
        // complete before it was stored (Release, paired with the Acquire above).
        // Versions are freed only in this node's `Drop`, which the borrow rules out.
        unsafe { &*newest }
    }

    /// The newest version whose trailer is at most `max_trailer`.
    fn newest_at_most(&self, max_trailer: u64) -> Option<&Version> {
        let mut version = self.newest();
        while version.trailer > max_trailer {
            version = version.older()?;
        }
        Some(version)
    }
}

impl Drop for KeyNode {
    fn drop(&mut self) {
        let mut at = *self.newest.get_mut();
        while !at.is_null() {
            // SAFETY: every version was leaked from a `Box` and is reachable only along
            // this node's chain, once; `&mut self` means no reader remains.
            let mut version = unsafe { Box::from_raw(at) };
            at = *version.older.get_mut();
        }
    }
}

impl Version {
    fn older(&self) -> Option<&Version> {
        // SAFETY: `older` was set before this version was published and never changes;
        // it is null or a version freed only with the node that holds both.
        unsafe { self.older.load(MemoryOrdering::Acquire).as_ref() }
    }
}

/// The memtable's one writer (see [`MemTable::writer`]).
pub struct MemTableWriter<'a> {
    memtable: &'a MemTable,
    _exclusive: MutexGuard<'a, ()>,
}

impl MemTableWriter<'_> {
    /// Adds a version of `user_key`. Its sequence must be above every sequence the
    /// key already has here (the commit order guarantees it).
    pub fn insert(&mut self, user_key: &[u8], sequence: u64, kind: u8, value: &[u8]) {
        debug_assert!(kind == KIND_PUT || kind == KIND_DELETE);
        let memtable = self.memtable;
        let hash = bloom::hash(user_key);
        let trailer = trailer(sequence, kind);
        let version = Box::into_raw(Box::new(Version {
            trailer,
            value: value.into(),
            older: AtomicPtr::new(std::ptr::null_mut()),
        }));
        let mut bytes = VERSION_OVERHEAD + TRAILER_SIZE + value.len();
        match memtable.find(user_key, hash) {
            Some(node) => {
                // Relaxed: only this writer stores it.
                let newest = node.newest.load(MemoryOrdering::Relaxed);
                // SAFETY: `version` was just leaked and is not yet shared; `newest` is a
                // live version of this node (see `KeyNode::newest`).
                unsafe {
                    assert!(
                        (*newest).trailer >> 8 < sequence,
                        "memtable versions of a key arrive in sequence order"
                    );
                    (*version).older = AtomicPtr::new(newest);
                }
                node.newest.store(version, MemoryOrdering::Release);
            }
            None => {
                let bucket = memtable.bucket(hash);
                let fresh = KeyNode {
                    hash,
                    key: StoredKey::new(user_key),
                    next_in_bucket: AtomicPtr::new(bucket.load(MemoryOrdering::Relaxed)),
                    newest: AtomicPtr::new(version),
                };
                // The filter first: a reader that finds the key by any path must not
                // be turned away by the filter.
                memtable.filter.insert(hash);
                let entry = memtable.keys.get_or_insert(StoredKey::new(user_key), fresh);
                let node = node(&entry);
                // Had the skiplist held the key (it cannot: the index did not), our
                // node and its version would have been dropped instead.
                assert!(
                    std::ptr::eq(node.newest.load(MemoryOrdering::Relaxed), version),
                    "a key missing from the memtable's index was in its skiplist"
                );
                bucket.store(std::ptr::from_ref(node).cast_mut(), MemoryOrdering::Release);
                bytes += KEY_OVERHEAD + user_key.len();
            }
        }
        memtable.bytes.fetch_add(bytes, MemoryOrdering::Relaxed);
        memtable.entries.fetch_add(1, MemoryOrdering::Relaxed);
    }
}

/// A place in a memtable's order: one version of one key.
pub struct MemPosition<'a> {
    entry: Entry<'a, StoredKey, KeyNode>,
    version: &'a Version,
}

impl<'a> MemPosition<'a> {
    fn newest_of(entry: Entry<'a, StoredKey, KeyNode>) -> MemPosition<'a> {
        MemPosition {
            version: node(&entry).newest(),
            entry,
        }
    }

    pub fn user_key(&self) -> &[u8] {
        self.entry.key().as_bytes()
    }

    pub fn trailer(&self) -> u64 {
        self.version.trailer
    }

    pub fn value(&self) -> &'a [u8] {
        &self.version.value
    }

    /// The next version in order: this key's next older one, else the next key's
    /// newest.
    pub fn next(self) -> Option<MemPosition<'a>> {
        match self.version.older() {
            Some(version) => Some(MemPosition {
                entry: self.entry,
                version,
            }),
            None => self.entry.next().map(MemPosition::newest_of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_key::with_lookup_key;
    use proptest::prelude::*;

    fn get(m: &MemTable, key: &[u8], sequence: u64) -> Option<Lookup> {
        m.get(key, bloom::hash(key), sequence)
    }

    /// Every version in order, as (user key, sequence, kind, value).
    fn all(m: &MemTable) -> Vec<(Vec<u8>, u64, u8, Vec<u8>)> {
        let mut versions = Vec::new();
        let mut at = m.first();
        while let Some(p) = at {
            versions.push((
                p.user_key().to_vec(),
                p.trailer() >> 8,
                p.trailer() as u8,
                p.value().to_vec(),
            ));
            at = p.next();
        }
        versions
    }

    /// A memtable holding `writes`, as (user key, sequence, kind, value).
    fn filled(writes: &[(&[u8], u64, u8, &[u8])]) -> MemTable {
        let m = MemTable::new(1, 1 << 16);
        let mut w = m.writer();
        for &(key, sequence, kind, value) in writes {
            w.insert(key, sequence, kind, value);
        }
        drop(w);
        m
    }

    #[test]
    fn newest_visible_version_wins() {
        let m = filled(&[
            (b"k", 1, KIND_PUT, b"one"),
            (b"k", 2, KIND_DELETE, b""),
            (b"k", 3, KIND_PUT, b"three"),
            (b"ka", 4, KIND_PUT, b"other"),
        ]);
        assert_eq!(get(&m, b"k", 0), None);
        assert_eq!(get(&m, b"k", 1), Some(Lookup::Value(b"one".to_vec())));
        assert_eq!(get(&m, b"k", 2), Some(Lookup::Deleted));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"three".to_vec())));
        assert_eq!(get(&m, b"", 9), None);
        assert_eq!(get(&m, b"kb", 9), None);
        // A long key is stored on the heap.
        let long = vec![7u8; 300];
        m.writer().insert(&long, 5, KIND_PUT, b"long");
        assert_eq!(get(&m, &long, 5), Some(Lookup::Value(b"long".to_vec())));
        assert_eq!(get(&m, &long[..299], 5), None);
        assert_eq!(m.entries(), 5);
    }

    #[test]
    fn reads_in_internal_key_order() {
        let m = filled(&[
            (b"b", 1, KIND_PUT, b"b1"),
            (b"a", 2, KIND_PUT, b"a2"),
            (b"b", 3, KIND_DELETE, b""),
            (b"c", 4, KIND_PUT, b"c4"),
            (b"b", 5, KIND_PUT, b"b5"),
        ]);
        let want = vec![
            (b"a".to_vec(), 2, KIND_PUT, b"a2".to_vec()),
            (b"b".to_vec(), 5, KIND_PUT, b"b5".to_vec()),
            (b"b".to_vec(), 3, KIND_DELETE, b"".to_vec()),
            (b"b".to_vec(), 1, KIND_PUT, b"b1".to_vec()),
            (b"c".to_vec(), 4, KIND_PUT, b"c4".to_vec()),
        ];
        assert_eq!(all(&m), want);
        // A seek lands on the first version at or after the target in that order.
        let seek = |key: &[u8], sequence| {
            with_lookup_key(key, sequence, |target| {
                m.seek(target)
                    .map(|p| (p.user_key().to_vec(), p.trailer() >> 8))
            })
        };
        assert_eq!(seek(b"b", 9), Some((b"b".to_vec(), 5)));
        assert_eq!(seek(b"b", 4), Some((b"b".to_vec(), 3)));
        assert_eq!(seek(b"b", 1), Some((b"b".to_vec(), 1)));
        assert_eq!(seek(b"b", 0), Some((b"c".to_vec(), 4)), "past b's oldest");
        assert_eq!(seek(b"bb", 0), Some((b"c".to_vec(), 4)));
        assert_eq!(
            seek(b"c", 3),
            None,
            "c's only version is newer; nothing after"
        );
        assert_eq!(seek(b"", 0), Some((b"a".to_vec(), 2)));
    }

    /// Readers beside the writer see, at each sequence the writer has published, the
    /// value written at or below it, and whole chains; small enough for Miri.
    #[test]
    fn readers_beside_the_writer_see_what_was_published() {
        const KEYS: u64 = 8;
        const WRITES: u64 = if cfg!(miri) { 60 } else { 20_000 };
        let m = MemTable::new(1, 1 << 12);
        let published = AtomicU64::new(0);
        let value = |sequence: u64| sequence.to_le_bytes();
        let key = |sequence: u64| (sequence % KEYS).to_le_bytes();
        std::thread::scope(|s| {
            s.spawn(|| {
                for sequence in 1..=WRITES {
                    m.writer()
                        .insert(&key(sequence), sequence, KIND_PUT, &value(sequence));
                    published.store(sequence, MemoryOrdering::Release);
                }
            });
            for _ in 0..2 {
                s.spawn(|| loop {
                    let at = published.load(MemoryOrdering::Acquire);
                    for k in 0..KEYS.min(at) {
                        // Key k is written at the sequences k mod KEYS; 0 is none.
                        let newest = at - (at - k) % KEYS;
                        assert_eq!(
                            get(&m, &k.to_le_bytes(), at),
                            (newest > 0).then(|| Lookup::Value(value(newest).to_vec())),
                            "key {k} at {at}"
                        );
                    }
                    let versions = all(&m);
                    assert!(versions.len() as u64 >= at);
                    assert!(versions
                        .windows(2)
                        .all(|w| (&w[0].0, u64::MAX - w[0].1) < (&w[1].0, u64::MAX - w[1].1)));
                    if at == WRITES {
                        break;
                    }
                });
            }
        });
        assert_eq!(m.entries(), WRITES);
    }

    /// One write of the model: (user key, sequence, kind, value).
    type Write = (Vec<u8>, u64, u8, Vec<u8>);

    fn writes() -> impl Strategy<Value = Vec<Write>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(0u8..4, 0..4),
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..8),
            ),
            0..200,
        )
        .prop_map(|raw| {
            raw.into_iter()
                .zip(1u64..)
                .map(|((key, put, value), sequence)| match put {
                    true => (key, sequence, KIND_PUT, value),
                    false => (key, sequence, KIND_DELETE, Vec::new()),
                })
                .collect()
        })
    }

    proptest! {
        /// Against a sorted list of every write: reading in order, seeks to any key
        /// and sequence, and point reads at any sequence.
        #[test]
        #[cfg_attr(miri, ignore = "proptest's failure files need the file system, which Miri isolates")]
        fn agrees_with_a_sorted_list(writes in writes(), probes in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..5), 0u64..210), 1..40)) {
            let m = MemTable::new(1, 1 << 16);
            let mut w = m.writer();
            for (key, sequence, kind, value) in &writes {
                w.insert(key, *sequence, *kind, value);
            }
            drop(w);
            let mut model = writes.clone();
            model.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            prop_assert_eq!(all(&m), model.clone());
            for (key, sequence) in probes {
                let found = with_lookup_key(&key, sequence, |target| {
                    m.seek(target).map(|p| (p.user_key().to_vec(), p.trailer() >> 8))
                });
                let want = model
                    .iter()
                    .find(|w| w.0 > key || (w.0 == key && w.1 <= sequence))
                    .map(|w| (w.0.clone(), w.1));
                prop_assert_eq!(found, want);
                let newest = model.iter().find(|w| w.0 == key && w.1 <= sequence);
                let want = newest.map(|w| match w.2 {
                    KIND_PUT => Lookup::Value(w.3.clone()),
                    _ => Lookup::Deleted,
                });
                prop_assert_eq!(get(&m, &key, sequence), want);
            }
        }
    }

    #[test]
    #[should_panic(expected = "sequence order")]
    fn an_older_version_after_a_newer_one_is_refused() {
        let m = MemTable::new(1, 1 << 12);
        let mut w = m.writer();
        w.insert(b"k", 5, KIND_PUT, b"five");
        w.insert(b"k", 4, KIND_PUT, b"four");
    }
}
