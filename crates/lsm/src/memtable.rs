//! The memtable: recent writes in a concurrent skiplist, ordered by internal key.
//!
//! An internal key is the user key followed by an 8-byte trailer, `sequence << 8 |
//! kind`, little-endian. Internal keys order by user key ascending, then trailer
//! descending, so a key's newest version comes first and a lookup for "key as of
//! sequence s" is a single lower-bound search.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as MemoryOrdering};

use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use engine::{KIND_DELETE, KIND_PUT};

pub const TRAILER_SIZE: usize = 8;

/// The largest sequence number: it must fit the trailer beside the kind byte.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// A borrowed internal key. `repr(transparent)` over `[u8]` so a byte slice can be
/// viewed as one, which lets the skiplist be searched without building an owned key.
#[repr(transparent)]
#[derive(PartialEq, Eq)]
pub struct KeyRef([u8]);

impl KeyRef {
    pub fn new(bytes: &[u8]) -> &KeyRef {
        debug_assert!(bytes.len() >= TRAILER_SIZE);
        // SAFETY: KeyRef is repr(transparent) over [u8], so the two references have the
        // same layout and metadata (the length), and the lifetime is carried over.
        unsafe { &*(bytes as *const [u8] as *const KeyRef) }
    }

    pub fn user_key(&self) -> &[u8] {
        &self.0[..self.0.len() - TRAILER_SIZE]
    }

    fn trailer(&self) -> u64 {
        u64::from_le_bytes(self.0[self.0.len() - TRAILER_SIZE..].try_into().unwrap())
    }

    pub fn sequence(&self) -> u64 {
        self.trailer() >> 8
    }

    pub fn kind(&self) -> u8 {
        self.trailer() as u8
    }
}

impl Ord for KeyRef {
    fn cmp(&self, other: &KeyRef) -> Ordering {
        self.user_key()
            .cmp(other.user_key())
            .then_with(|| other.trailer().cmp(&self.trailer()))
    }
}

impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &KeyRef) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An owned internal key, as the skiplist stores it.
#[derive(PartialEq, Eq)]
pub struct InternalKey(Box<[u8]>);

impl InternalKey {
    pub fn new(user_key: &[u8], sequence: u64, kind: u8) -> InternalKey {
        let mut bytes = Vec::with_capacity(user_key.len() + TRAILER_SIZE);
        bytes.extend_from_slice(user_key);
        bytes.extend_from_slice(&trailer(sequence, kind).to_le_bytes());
        InternalKey(bytes.into_boxed_slice())
    }
}

impl Borrow<KeyRef> for InternalKey {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(&self.0)
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &InternalKey) -> Ordering {
        // Must agree with KeyRef's order, since searches go through Borrow.
        Borrow::<KeyRef>::borrow(self).cmp(other.borrow())
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &InternalKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn trailer(sequence: u64, kind: u8) -> u64 {
    assert!(
        sequence <= MAX_SEQUENCE,
        "sequence number {sequence} overflows the trailer"
    );
    sequence << 8 | u64::from(kind)
}

/// Calls `f` with the internal key that sorts just before every version of
/// `user_key` visible at `sequence`, built on the stack when it is short.
pub fn with_lookup_key<R>(user_key: &[u8], sequence: u64, f: impl FnOnce(&KeyRef) -> R) -> R {
    // The put kind is the larger, so for equal sequences this sorts first.
    let trailer = trailer(sequence, KIND_PUT).to_le_bytes();
    let len = user_key.len() + TRAILER_SIZE;
    if len <= 128 {
        let mut buf = [0u8; 128];
        buf[..user_key.len()].copy_from_slice(user_key);
        buf[user_key.len()..len].copy_from_slice(&trailer);
        f(KeyRef::new(&buf[..len]))
    } else {
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(user_key);
        buf.extend_from_slice(&trailer);
        f(KeyRef::new(&buf))
    }
}

pub type MemEntry<'a> = Entry<'a, InternalKey, Box<[u8]>>;

/// What the memtable knows about a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

#[derive(Default)]
pub struct MemTable {
    map: SkipMap<InternalKey, Box<[u8]>>,
    /// Key, value and per-node overhead of everything inserted: what flushing frees.
    bytes: AtomicUsize,
    entries: AtomicU64,
}

/// A skiplist node's bookkeeping beyond key and value (tower, lengths, refcount),
/// roughly; it only steers when the memtable counts as full.
const NODE_OVERHEAD: usize = 64;

impl MemTable {
    pub fn insert(&self, user_key: &[u8], sequence: u64, kind: u8, value: &[u8]) {
        debug_assert!(kind == KIND_PUT || kind == KIND_DELETE);
        let key = InternalKey::new(user_key, sequence, kind);
        self.bytes.fetch_add(
            user_key.len() + TRAILER_SIZE + value.len() + NODE_OVERHEAD,
            MemoryOrdering::Relaxed,
        );
        self.entries.fetch_add(1, MemoryOrdering::Relaxed);
        self.map.insert(key, value.into());
    }

    /// The newest version of `user_key` with a sequence number up to `sequence`.
    pub fn get(&self, user_key: &[u8], sequence: u64) -> Option<Lookup> {
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
    use proptest::prelude::*;

    #[test]
    fn newest_visible_version_wins() {
        let m = MemTable::default();
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

    proptest! {
        /// The internal-key order is user key ascending, then sequence descending,
        /// whatever the key bytes (a prefix must not confuse user key and trailer).
        #[test]
        fn order_is_user_key_then_newest(a: Vec<u8>, b: Vec<u8>, sa in 0..MAX_SEQUENCE, sb in 0..MAX_SEQUENCE, ka in 0u8..2, kb in 0u8..2) {
            let x = InternalKey::new(&a, sa, ka);
            let y = InternalKey::new(&b, sb, kb);
            let want = a.cmp(&b).then(sb.cmp(&sa)).then(kb.cmp(&ka));
            prop_assert_eq!(x.cmp(&y), want);
            let xr: &KeyRef = x.borrow();
            prop_assert_eq!(xr.user_key(), &a[..]);
            prop_assert_eq!(xr.sequence(), sa);
            prop_assert_eq!(xr.kind(), ka);
        }
    }
}
