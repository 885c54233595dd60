//! The extendible directory (seed 001) over rings.
//!
//! All items form one list sorted by (hash, rehash-item-first, key). A ring with
//! prefix `p` at local depth `d` is the run of that list from its rehash item (hash
//! `p << (64 - d)`) up to the next rehash item. Directory slot `i` at global depth `G`
//! covers the hashes whose top `G` bits are `i`; the `2^(G-d)` slots under a ring's
//! prefix all point at that ring's descriptor. Splitting a ring inserts one rehash item
//! in the middle of its run and publishes two new descriptors; no item moves and every
//! other ring keeps its head.

use crate::item::{Item, ItemPtr};
use crate::link::Head;
use crate::sync::{AtomicPtr, AtomicU32, Ordering};

pub(crate) struct Ring {
    /// The ring's rehash item; never removed while the index lives.
    pub(crate) sentinel: ItemPtr,
    pub(crate) prefix: u64,
    pub(crate) depth: u32,
    pub(crate) head: AtomicPtr<Item>,
    /// Items in the ring, kept approximately (operations through a descriptor that a
    /// split just replaced land on the old one). Drives sample sizes and splits only.
    pub(crate) items: AtomicU32,
    /// Items visited per access under the best head, from the last sampling round, in
    /// 1/256ths (0: not sampled yet).
    pub(crate) cost_x256: AtomicU32,
}

impl Ring {
    pub(crate) fn new(sentinel: ItemPtr, prefix: u64, depth: u32, head: *mut Item, items: u32) -> Ring {
        debug_assert!(depth <= MAX_DEPTH);
        debug_assert_eq!(sentinel.hash(), first_hash(prefix, depth));
        Ring {
            sentinel,
            prefix,
            depth,
            head: AtomicPtr::new(head),
            items: AtomicU32::new(items),
            cost_x256: AtomicU32::new(0),
        }
    }

    #[inline]
    pub(crate) fn load_head(&self) -> Head {
        Head(self.head.load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn cas_head(&self, current: Head, new: Head) -> Result<Head, Head> {
        self.head
            .compare_exchange(current.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(Head)
            .map_err(Head)
    }

    #[inline]
    pub(crate) fn contains(&self, hash: u64) -> bool {
        prefix_of(hash, self.depth) == self.prefix
    }
}

/// Rings never get deeper than this: the hash has 64 bits, and a ring at this depth
/// already holds only keys whose hashes agree in 48 bits.
pub(crate) const MAX_DEPTH: u32 = 48;

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
    pub(crate) slots: Box<[AtomicPtr<Ring>]>,
}

impl Directory {
    pub(crate) fn new(depth: u32, slot: impl Fn(usize) -> *mut Ring) -> Directory {
        let slots = (0..1usize << depth).map(|i| AtomicPtr::new(slot(i))).collect();
        Directory { depth, slots }
    }

    #[inline]
    pub(crate) fn ring_ptr(&self, hash: u64) -> *mut Ring {
        self.slots[prefix_of(hash, self.depth) as usize].load(Ordering::Acquire)
    }

    /// The slots a ring with `prefix` at `depth` owns.
    pub(crate) fn slots_of(&self, prefix: u64, depth: u32) -> std::ops::Range<usize> {
        debug_assert!(depth <= self.depth);
        let width = self.depth - depth;
        let start = (prefix as usize) << width;
        start..start + (1usize << width)
    }

    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Directory>() + self.slots.len() * std::mem::size_of::<AtomicPtr<Ring>>()
    }
}
