//! Splitting one ring (seed 000 section 3.4 within seed 001's extendible directory).
//!
//! Seed 000's rehash has three phases: initialise (rehash items for the two halves),
//! split (insert them, publish the new table), delete (after a grace period, remove the
//! rehash items). Here the items of all rings form one sorted list, so the half-rings
//! are already contiguous runs of it, and the rehash item that begins the upper half is
//! the boundary itself: it stays, as that ring's permanent start, and what the grace
//! period protects is the replaced directory after a doubling. Readers never wait: a
//! thread that still starts from the old rehash item walks the same list and finds
//! every key. Heads live in the slots, inside their slot's range, so a split leaves
//! every head where it is (seed 000 loses its hotspots for a while at a rehash).
//!
//! Three things split a ring: an insert that makes it longer than `max_ring_len`, which
//! doubles the directory if the ring has a slot to itself; an insert that leaves a slot
//! of a shared ring with more than `shared_split_len` items (a lookup that restarts at
//! the ring's rehash item walks the slots before its own); and a sampling round that
//! finds even the best head costing more than `split_cost` items per access (seed 000's
//! trigger). The last two split only a ring that shares its slots, so only inserts past
//! `max_ring_len` grow the directory, and reads never do.

use crossbeam_epoch::Guard;

use crate::directory::{first_hash, prefix_of, Directory, SlotRef, MAX_DEPTH};
use crate::head::pin;
use crate::index::HotRing;
use crate::item::ItemPtr;
use crate::link::Link;
use crate::sync::Ordering;

impl HotRing {
    /// Splits the ring of `slot` in two if it still holds at least `min_len` items and
    /// no other split is running. A ring that has one slot to itself splits only if
    /// `may_double`: the directory doubles for it.
    pub(crate) fn split(&self, slot: SlotRef<'_>, min_len: u32, may_double: bool, guard: &Guard) {
        let Ok(_one_splitter) = self.split_lock.try_lock() else {
            return;
        };
        let mut dir = self.directory(guard);
        if !std::ptr::eq(dir, slot.dir) {
            return; // a doubling replaced the directory; the caller's view is stale
        }
        let sentinel = slot.sentinel();
        let depth = slot.ring_depth();
        if depth >= MAX_DEPTH
            || (depth == dir.depth && !may_double)
            || self.ring_len(sentinel, guard) < min_len
        {
            return;
        }
        if depth == dir.depth {
            dir = self.double_directory(dir, guard);
        }
        let ring = prefix_of(sentinel.hash(), depth);
        let boundary_hash = first_hash(ring * 2 + 1, depth + 1);
        let boundary = ItemPtr::alloc_sentinel(boundary_hash, std::ptr::null_mut());
        let lower = dir.slot(dir.index_of(sentinel.hash()));
        loop {
            let pos = self.find(lower, boundary_hash, None, guard);
            if Self::link_new(&pos, boundary, Link::REHASH) {
                break;
            }
        }
        let slots = dir.slots_of(ring, depth);
        let mid = slots.start + slots.len() / 2;
        for i in slots {
            let s = dir.slot(i);
            if i >= mid {
                s.set_sentinel(boundary);
                // A head parked on the old rehash item would make every lookup walk the
                // lower half first.
                let head = s.load_head();
                if head.target() == sentinel.as_raw() {
                    // One rehash item for another: the head hint stays 0.
                    let _ = s.cas_head(head, head.retarget(boundary.as_raw()));
                }
            }
            s.ring_depth.store(depth + 1, Ordering::Release);
        }
        self.splits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Items in the ring starting at `sentinel`, counted exactly (slots only estimate it).
    fn ring_len(&self, sentinel: ItemPtr, guard: &Guard) -> u32 {
        let mut n = 0u32;
        let mut cur = self.item(sentinel.load_next().target(), guard);
        while let Some(item) = cur {
            let link = item.load_next();
            if item.is_sentinel() {
                break;
            }
            n += u32::from(!link.has(Link::OCCUPIED));
            cur = self.item(link.target(), guard);
        }
        n
    }

    /// Doubles the directory: slots `2j` and `2j + 1` of the new one take slot `j`'s
    /// ring, and its head goes to whichever of the two covers it.
    fn double_directory<'g>(&self, old: &'g Directory, guard: &'g Guard) -> &'g Directory {
        // Heads copied into the new directory stay pinned until it is published: a head
        // item removed meanwhile is then taken out of the new slot by `unpin`.
        let pinned: Vec<Option<ItemPtr>> = (0..old.len())
            .map(|i| old.slot(i))
            .map(|s| {
                self.item(s.load_head().target(), guard)
                    .filter(|h| !h.is_sentinel() && pin(*h))
            })
            .collect();
        let new = Directory::new(old.depth + 1, |j| {
            let parent = old.slot(j >> 1);
            let sentinel = parent.sentinel();
            let head = match pinned[j >> 1] {
                Some(h) if prefix_of(h.hash(), old.depth + 1) == j as u64 => h,
                // The other half starts from the ring's rehash item until sampling moves it.
                _ => self
                    .item(parent.load_head().target(), guard)
                    // Read under `guard`; only rehash items are kept unpinned.
                    .filter(|h| h.is_sentinel())
                    .unwrap_or(sentinel),
            };
            let items = parent.items.load(Ordering::Relaxed) / 2;
            (sentinel, parent.ring_depth(), head, items)
        });
        let new = Box::into_raw(Box::new(new));
        let old_ptr = self.dir.swap(new, Ordering::AcqRel);
        // SAFETY: just published by us; it is retired only by a later doubling, through
        // the collector, which cannot free it while `guard` is pinned.
        let published: &'g Directory = unsafe { &*new };
        for h in pinned.into_iter().flatten() {
            let slot = published.slot(published.index_of(h.hash()));
            self.unpin(slot, h, guard);
        }
        // SAFETY: unpublished by the swap; threads that loaded it are pinned, and the
        // collector frees it after they unpin.
        unsafe { guard.defer_unchecked(move || drop(Box::from_raw(old_ptr))) };
        published
    }
}
