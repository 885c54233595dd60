//! Splitting one ring (seed 000 section 3.4 within seed 001's extendible directory).
//!
//! Seed 000's rehash has three phases: initialise (rehash items for the two halves),
//! split (insert them, publish the new table), delete (after a grace period, remove the
//! rehash items). Here the items of all rings form one sorted list, so the half-rings
//! are already contiguous runs of it and the rehash item that begins the upper half is
//! the boundary itself: it stays, as that ring's permanent start, and the delete phase
//! reduces to retiring the old ring descriptor after the grace period. Readers never
//! wait: a thread still holding the old descriptor walks the same list and finds every
//! key, just possibly from a farther start.

use crossbeam_epoch::Guard;

use crate::directory::{first_hash, Directory, Ring, MAX_DEPTH};
use crate::head::pin;
use crate::index::HotRing;
use crate::item::ItemPtr;
use crate::link::Link;
use crate::sync::Ordering;

impl HotRing {
    /// Splits `ring` in two if it is still current and no other split is running.
    pub(crate) fn split(&self, ring: &Ring, guard: &Guard) {
        let Ok(_one_splitter) = self.split_lock.try_lock() else { return };
        let mut dir = self.directory(guard);
        if !std::ptr::eq(dir.ring_ptr(ring.sentinel.hash()), ring) || ring.depth >= MAX_DEPTH {
            return;
        }
        if ring.depth == dir.depth {
            dir = self.double_directory(dir, guard);
        }
        let depth = ring.depth + 1;
        let (low, high) = (ring.prefix << 1, (ring.prefix << 1) | 1);
        let boundary_hash = first_hash(high, depth);

        // Split phase, part one: link the upper half's rehash item into the list.
        let boundary = ItemPtr::alloc_sentinel(boundary_hash, std::ptr::null_mut());
        self.live.add(boundary, 1);
        loop {
            let pos = self.find(ring, boundary_hash, None, guard);
            let succ = pos.cur.map_or(std::ptr::null_mut(), |(c, _)| c.as_raw());
            boundary.next().store(Link::to(succ, Link::REHASH).0, Ordering::Relaxed);
            let linked = pos.pred_link.retarget(boundary.as_raw());
            if pos
                .pred
                .next()
                .compare_exchange(pos.pred_link.0, linked.0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                break;
            }
        }

        // Count the halves and pick each one's head from the sampled counters, so the
        // new rings start hotspot-aware instead of relearning (seed 000 loses this for a
        // while after a rehash).
        let old_head = ring.load_head().target();
        let mut halves = [Half::new(ring.sentinel), Half::new(boundary)];
        let mut cur = self.item(ring.sentinel.load_next().target(), guard);
        while let Some(item) = cur {
            if item.is_sentinel() && item != boundary {
                break;
            }
            let link = item.load_next();
            if !item.is_sentinel() && !link.has(Link::OCCUPIED) {
                let half = &mut halves[usize::from(item.hash() >= boundary_hash)];
                half.items += 1;
                if item.as_raw() == old_head {
                    half.keep = Some(item);
                }
                if link.counter() > half.best_count {
                    (half.best, half.best_count) = (Some(item), link.counter());
                }
            }
            cur = self.item(link.target(), guard);
        }

        let mut new_rings = [std::ptr::null_mut::<Ring>(); 2];
        let mut pinned = [None, None];
        for (i, half) in halves.iter().enumerate() {
            // Hold the pin on each chosen head until the rings are published: see `head.rs`.
            let head = [half.keep, half.best].into_iter().flatten().find(|h| pin(*h));
            pinned[i] = head;
            let start = head.map_or(half.sentinel.as_raw(), |h| h.as_raw());
            let prefix = if i == 0 { low } else { high };
            new_rings[i] = Box::into_raw(Box::new(Ring::new(half.sentinel, prefix, depth, start, half.items)));
        }
        let slots = dir.slots_of(ring.prefix, ring.depth);
        let mid = slots.start + slots.len() / 2;
        for s in slots {
            dir.slots[s].store(new_rings[usize::from(s >= mid)], Ordering::Release);
        }
        for (i, head) in pinned.into_iter().enumerate() {
            if let Some(h) = head {
                // SAFETY: just published; descriptors are freed only via the collector.
                self.unpin(unsafe { &*new_rings[i] }, h, guard);
            }
        }
        let old = ring as *const Ring as *mut Ring;
        // SAFETY: the old descriptor is no longer in the directory; threads that loaded it
        // are pinned, and the collector frees it after they unpin.
        unsafe { guard.defer_unchecked(move || drop(Box::from_raw(old))) };
        self.splits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Doubles the directory: slot `j` of the new one is slot `j / 2` of the old.
    fn double_directory<'g>(&self, old: &'g Directory, guard: &'g Guard) -> &'g Directory {
        let doubled =
            Directory::new(old.depth + 1, |j| old.slots[j >> 1].load(Ordering::Acquire));
        let new = Box::into_raw(Box::new(doubled));
        let old_ptr = self.dir.swap(new, Ordering::AcqRel);
        // SAFETY: unpublished by the swap; the collector frees it after current readers.
        unsafe { guard.defer_unchecked(move || drop(Box::from_raw(old_ptr))) };
        // SAFETY: just published by us; it is retired only by a later doubling, through
        // the collector, which cannot free it while `guard` is pinned.
        unsafe { &*new }
    }
}

struct Half {
    sentinel: ItemPtr,
    items: u32,
    /// The old ring's head, if it lies in this half.
    keep: Option<ItemPtr>,
    best: Option<ItemPtr>,
    best_count: u16,
}

impl Half {
    fn new(sentinel: ItemPtr) -> Half {
        Half { sentinel, items: 0, keep: None, best: None, best_count: 0 }
    }
}
