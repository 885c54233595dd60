//! The two packed 64-bit words of the index (layout in `POINTERS.md`).
//!
//! Both are stored in `AtomicPtr<Item>` so the address keeps its provenance: the
//! metadata bits are added and removed with `map_addr`, never by casting an integer
//! back to a pointer.

use crate::item::Item;

/// Width of a user-space address on the targets we support (x86-64 and AArch64 with
/// 4-level page tables). `Item::alloc` asserts every item lies below it.
pub(crate) const ADDRESS_BITS: u32 = 48;
pub(crate) const ADDRESS_MASK: usize = (1 << ADDRESS_BITS) - 1;

/// An item's `next` word: Rehash, Occupied, a 14-bit access counter, the successor's
/// address, and three handshake bits that live in the address's alignment zeros.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Link(pub(crate) *mut Item);

impl Link {
    /// Set on a rehash item (a ring's boundary sentinel). Constant for the item's life.
    pub(crate) const REHASH: usize = 1 << 63;
    /// The item is being removed (deleted or replaced by a newer version): its `next`
    /// is frozen, nothing may be linked after it, and any thread may unlink it.
    pub(crate) const OCCUPIED: usize = 1 << 62;
    const COUNTER_SHIFT: u32 = ADDRESS_BITS;
    pub(crate) const COUNTER_MAX: u16 = (1 << 14) - 1;
    const COUNTER_MASK: usize = (Self::COUNTER_MAX as usize) << Self::COUNTER_SHIFT;
    /// A head move to this item is in flight (see `head.rs`).
    pub(crate) const PINNED: usize = 1 << 0;
    /// The item has been unlinked; whoever clears `PINNED` last reclaims it.
    pub(crate) const UNLINKED: usize = 1 << 1;
    /// An in-place value write is in flight; removal waits for it (one store).
    pub(crate) const WRITING: usize = 1 << 2;
    const LOW_FLAGS: usize = Self::PINNED | Self::UNLINKED | Self::WRITING;
    const ADDR_ONLY: usize = ADDRESS_MASK & !Self::LOW_FLAGS;

    #[inline]
    pub(crate) fn to(target: *mut Item, flags: usize) -> Link {
        debug_assert_eq!(target as usize & !Self::ADDR_ONLY, 0);
        Link(target.map_addr(|a| a | flags))
    }
    #[inline]
    pub(crate) fn bits(self) -> usize {
        self.0.addr()
    }
    #[inline]
    pub(crate) fn target(self) -> *mut Item {
        self.0.map_addr(|a| a & Self::ADDR_ONLY)
    }
    #[inline]
    pub(crate) fn has(self, flag: usize) -> bool {
        self.bits() & flag != 0
    }
    #[inline]
    pub(crate) fn with(self, flag: usize) -> Link {
        Link(self.0.map_addr(|a| a | flag))
    }
    #[inline]
    pub(crate) fn without(self, flag: usize) -> Link {
        Link(self.0.map_addr(|a| a & !flag))
    }
    /// The same flags and counter, pointing at `target`.
    #[inline]
    pub(crate) fn retarget(self, target: *mut Item) -> Link {
        Link::to(target, self.bits() & !Self::ADDR_ONLY)
    }
    #[inline]
    pub(crate) fn counter(self) -> u16 {
        ((self.bits() & Self::COUNTER_MASK) >> Self::COUNTER_SHIFT) as u16
    }
    #[inline]
    pub(crate) fn with_counter(self, n: u16) -> Link {
        let n = n.min(Self::COUNTER_MAX) as usize;
        Link(
            self.0
                .map_addr(|a| (a & !Self::COUNTER_MASK) | (n << Self::COUNTER_SHIFT)),
        )
    }
    /// The `next` word of a new version of the item whose word this is: the same
    /// successor and access count, no flags. The count goes along because a sampling
    /// round reads it: a value rewritten as often as it is read would otherwise lose
    /// the round's reads at every write, and the round would put the head on the
    /// predecessor its writes charge.
    #[inline]
    pub(crate) fn for_new_version(self) -> Link {
        Link::to(self.target(), 0).with_counter(self.counter())
    }
}

/// A ring's head word: Active (sampling in progress), a 15-bit total access counter,
/// and the address of the item the ring's lookups start from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Head(pub(crate) *mut Item);

impl Head {
    pub(crate) const ACTIVE: usize = 1 << 63;
    const TOTAL_SHIFT: u32 = ADDRESS_BITS;
    pub(crate) const TOTAL_MAX: u16 = (1 << 15) - 1;
    const TOTAL_MASK: usize = (Self::TOTAL_MAX as usize) << Self::TOTAL_SHIFT;

    #[inline]
    pub(crate) fn to(target: *mut Item) -> Head {
        debug_assert_eq!(target as usize & !ADDRESS_MASK, 0);
        Head(target)
    }
    #[inline]
    pub(crate) fn target(self) -> *mut Item {
        self.0.map_addr(|a| a & ADDRESS_MASK)
    }
    #[inline]
    pub(crate) fn active(self) -> bool {
        self.0.addr() & Self::ACTIVE != 0
    }
    #[inline]
    pub(crate) fn total(self) -> u16 {
        ((self.0.addr() & Self::TOTAL_MASK) >> Self::TOTAL_SHIFT) as u16
    }
    /// Same address; sampling state replaced.
    #[inline]
    pub(crate) fn with_sampling(self, active: bool, total: u16) -> Head {
        let total = total.min(Self::TOTAL_MAX) as usize;
        let flag = if active { Self::ACTIVE } else { 0 };
        Head(
            self.0
                .map_addr(|a| (a & ADDRESS_MASK) | flag | (total << Self::TOTAL_SHIFT)),
        )
    }
    /// Same sampling state; new address.
    #[inline]
    pub(crate) fn retarget(self, target: *mut Item) -> Head {
        Head::to(target).with_sampling(self.active(), self.total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(addr: usize) -> *mut Item {
        std::ptr::without_provenance_mut(addr)
    }

    #[test]
    fn link_fields_do_not_overlap() {
        let a = fake(0x7fff_ffff_fff8);
        let l = Link::to(a, Link::REHASH)
            .with(Link::OCCUPIED)
            .with_counter(Link::COUNTER_MAX)
            .with(Link::PINNED)
            .with(Link::WRITING);
        assert_eq!(l.target(), a);
        assert!(l.has(Link::REHASH) && l.has(Link::OCCUPIED) && l.has(Link::PINNED));
        assert!(l.has(Link::WRITING) && !l.has(Link::UNLINKED));
        assert_eq!(l.counter(), Link::COUNTER_MAX);
        let l = l.with_counter(3).without(Link::PINNED);
        assert_eq!((l.counter(), l.target()), (3, a));
        assert!(!l.has(Link::PINNED) && l.has(Link::OCCUPIED));
        let b = fake(0x1000);
        let r = l.retarget(b);
        assert_eq!((r.target(), r.counter()), (b, 3));
        assert!(r.has(Link::REHASH) && r.has(Link::WRITING));
        assert_eq!(
            Link::to(a, 0).with_counter(u16::MAX).counter(),
            Link::COUNTER_MAX
        );
    }

    #[test]
    fn head_fields_do_not_overlap() {
        let a = fake(0x7fff_ffff_fff8);
        let h = Head::to(a).with_sampling(true, Head::TOTAL_MAX);
        assert_eq!(
            (h.target(), h.active(), h.total()),
            (a, true, Head::TOTAL_MAX)
        );
        let b = fake(0x40);
        let h2 = h.retarget(b);
        assert_eq!(
            (h2.target(), h2.active(), h2.total()),
            (b, true, Head::TOTAL_MAX)
        );
        let h3 = h2.with_sampling(false, 7);
        assert_eq!((h3.target(), h3.active(), h3.total()), (b, false, 7));
    }
}
