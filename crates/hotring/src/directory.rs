//! The extendible directory (seed 001) over rings.
//!
//! All items form one list sorted by (hash, rehash-item-first, key). A ring with
//! prefix `p` at local depth `d` is the run of that list from its rehash item (hash
//! `p << (64 - d)`) up to the next rehash item. The directory has `2^G` slots; slot `i`
//! covers the hashes whose top `G` bits are `i`, and the `2^(G-d)` slots under a ring's
//! prefix share that ring.
//!
//! Each slot holds its own head pointer, always at an item of the slot's own hash range
//! (or at a rehash item), and beside it its ring's rehash item, where a lookup for a
//! key before the head starts: the two share a cache line, so a lookup costs one line
//! of the directory and then the items (with the rehash item in a parallel array, a
//! uniform load missed in it on every other lookup). What only inserts and splits
//! need lives in a parallel array.
//! Splitting a ring inserts one rehash item in the middle of its run and points the
//! upper half's slots at it; every head stays where it is.

use crate::item::{Item, ItemPtr};
use crate::link::Head;
use crate::sync::{AtomicPtr, AtomicU32, Ordering};

/// What a lookup reads of a slot: 16 bytes, so four slots to a cache line and none
/// across two.
#[repr(C, align(16))]
struct SlotHead {
    head: AtomicPtr<Item>,
    /// The rehash item that starts this slot's ring; never reclaimed while the index lives.
    sentinel: AtomicPtr<Item>,
}

/// What a slot knows besides what a lookup reads.
pub(crate) struct SlotMeta {
    /// The ring's local depth `d`.
    pub(crate) ring_depth: AtomicU32,
    /// Items in this slot's hash range, kept approximately (a write through a directory
    /// that a doubling just replaced counts in the old one). For sampling and splits.
    pub(crate) items: AtomicU32,
}

impl SlotMeta {
    /// Counts an insert; returns the new estimate.
    #[inline]
    pub(crate) fn count_insert(&self) -> u32 {
        self.items.fetch_add(1, Ordering::Relaxed).saturating_add(1)
    }

    /// Counts a removal. The count is an estimate (see `items`) and stops at zero.
    #[inline]
    pub(crate) fn count_remove(&self) {
        let _ = self
            .items
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn ring_depth(&self) -> u32 {
        self.ring_depth.load(Ordering::Acquire)
    }
}

/// Rings never get deeper than this: the hash has 64 bits, and a ring at this depth
/// already holds only keys whose hashes agree in 40 bits.
pub(crate) const MAX_DEPTH: u32 = 40;

#[inline]
pub(crate) fn prefix_of(hash: u64, depth: u32) -> u64 {
    if depth == 0 {
        0
    } else {
        hash >> (64 - depth)
    }
}

/// The smallest hash under `prefix` at `depth`: its rehash item's hash.
#[inline]
pub(crate) fn first_hash(prefix: u64, depth: u32) -> u64 {
    if depth == 0 {
        0
    } else {
        prefix << (64 - depth)
    }
}

pub(crate) struct Directory {
    pub(crate) depth: u32,
    heads: Box<[SlotHead]>,
    meta: Box<[SlotMeta]>,
}

impl Directory {
    /// `2^depth` slots; `init(i)` gives slot `i`'s (rehash item, ring depth, head, items).
    pub(crate) fn new(
        depth: u32,
        init: impl Fn(usize) -> (ItemPtr, u32, *mut Item, u32),
    ) -> Directory {
        let (heads, meta): (Vec<_>, Vec<_>) = (0..1usize << depth)
            .map(|i| {
                let (sentinel, ring_depth, head, items) = init(i);
                debug_assert!(ring_depth <= depth);
                let meta = SlotMeta {
                    ring_depth: AtomicU32::new(ring_depth),
                    items: AtomicU32::new(items),
                };
                let head = SlotHead {
                    head: AtomicPtr::new(head),
                    sentinel: AtomicPtr::new(sentinel.as_raw()),
                };
                (head, meta)
            })
            .unzip();
        Directory {
            depth,
            heads: heads.into_boxed_slice(),
            meta: meta.into_boxed_slice(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.heads.len()
    }

    #[inline]
    pub(crate) fn index_of(&self, hash: u64) -> usize {
        prefix_of(hash, self.depth) as usize
    }

    /// Whether `hash` falls in slot `index`'s range.
    #[inline]
    pub(crate) fn covers(&self, index: usize, hash: u64) -> bool {
        self.index_of(hash) == index
    }

    /// The slots a ring with `prefix` at `depth` spans.
    pub(crate) fn slots_of(&self, prefix: u64, depth: u32) -> std::ops::Range<usize> {
        debug_assert!(depth <= self.depth);
        let width = self.depth - depth;
        let start = (prefix as usize) << width;
        start..start + (1usize << width)
    }

    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Directory>()
            + self.len() * (std::mem::size_of::<SlotHead>() + std::mem::size_of::<SlotMeta>())
    }
}

/// A slot together with the directory it belongs to, which gives its hash range.
#[derive(Clone, Copy)]
pub(crate) struct SlotRef<'g> {
    pub(crate) dir: &'g Directory,
    pub(crate) index: usize,
}

impl<'g> SlotRef<'g> {
    /// Where the slot's head word lives, for a prefetch.
    #[inline]
    pub(crate) fn head_address(&self) -> *const AtomicPtr<Item> {
        &self.dir.heads[self.index].head
    }

    #[inline]
    pub(crate) fn load_head(&self) -> Head {
        Head(self.dir.heads[self.index].head.load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn cas_head(&self, current: Head, new: Head) -> Result<Head, Head> {
        self.dir.heads[self.index]
            .head
            .compare_exchange(current.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(Head)
            .map_err(Head)
    }

    /// The rehash item that starts the slot's ring.
    #[inline]
    pub(crate) fn sentinel(&self) -> ItemPtr {
        // SAFETY: rehash items are freed only when the index is dropped.
        unsafe { ItemPtr::from_raw(self.dir.heads[self.index].sentinel.load(Ordering::Acquire)) }
            .expect("every slot has a rehash item")
    }

    pub(crate) fn set_sentinel(&self, s: ItemPtr) {
        self.dir.heads[self.index]
            .sentinel
            .store(s.as_raw(), Ordering::Release);
    }

    /// Whether `hash` falls in this slot's range; heads stay inside it.
    #[inline]
    pub(crate) fn covers(&self, hash: u64) -> bool {
        self.dir.covers(self.index, hash)
    }
}

impl std::ops::Deref for SlotRef<'_> {
    type Target = SlotMeta;
    #[inline]
    fn deref(&self) -> &SlotMeta {
        &self.dir.meta[self.index]
    }
}
