//! Prefetching for a batch of lookups. One lookup is a chain of dependent cache misses
//! (directory slot, head item, the items after it), so a server answering a pipeline
//! one request at a time waits out each in turn. Told the keys ahead, the index starts
//! the first misses of every lookup together, in passes over all the keys (the slots;
//! the head items, whose addresses the slots hold; the items after the heads, where a
//! lookup that misses the head goes next), as Redis 8 prefetches a batch's keys.

use crossbeam_epoch as epoch;

use crate::index::HotRing;
use crate::item::ring_hash;

/// The most keys one call prefetches: about what the core can have in flight
/// (Zen's 22 outstanding L1 misses), beyond which early lines are evicted or wait.
pub const PREFETCH_MAX: usize = 16;

/// A directory of fewer slots than this (some 50,000 keys, 3 MB of items at the
/// default ring length) is left to the caches: its lines are mostly there already,
/// and looking ahead for the keys would cost more than it saves.
const PREFETCH_FROM_SLOTS: usize = 1 << 14;

impl HotRing {
    /// Whether the index is large enough for [`HotRing::prefetch`] to pay. Costs an
    /// epoch pin: ask once per batch, not per key.
    pub fn prefetch_pays(&self) -> bool {
        self.directory(&epoch::pin()).len() >= PREFETCH_FROM_SLOTS
    }

    /// Brings toward the CPU the lines that looking up each of `keys` starts with
    /// (the first [`PREFETCH_MAX`]). A hint only: nothing is counted as an access, and a
    /// ring changed meanwhile costs nothing but a wasted prefetch. The third pass reads
    /// the head items the second asked for, by then on their way together.
    pub fn prefetch<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        let guard = epoch::pin();
        let mut slots = [None; PREFETCH_MAX];
        for (key, at) in keys.into_iter().zip(&mut slots) {
            let slot = self.slot_for(ring_hash(key), &guard);
            prefetch_line(slot.head_address());
            *at = Some(slot);
        }
        let mut heads = [None; PREFETCH_MAX];
        for (slot, at) in slots.iter().flatten().zip(&mut heads) {
            let head = slot.load_head().target();
            prefetch_line(head);
            *at = self.item(head, &guard);
        }
        for head in heads.iter().flatten() {
            prefetch_line(head.load_next().target());
        }
    }
}

#[inline]
fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults: any address, mapped or not, null
    // included, is allowed, and nothing is read into the program's state.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_counts_no_access_and_changes_nothing() {
        let index = HotRing::new();
        for i in 0..2_000u32 {
            index.insert(&i.to_le_bytes(), &(i * 3).to_le_bytes());
        }
        let before = (index.access_totals(), index.stats().head_moves);
        // Present and absent keys, more than one call takes.
        let keys: Vec<[u8; 4]> = (0..3 * PREFETCH_MAX as u32)
            .map(|i| (i * 97).to_le_bytes())
            .collect();
        index.prefetch(keys.iter().map(|k| &k[..]));
        index.prefetch([]);
        assert!(!index.prefetch_pays(), "2,000 keys stay in the caches");
        assert_eq!((index.access_totals(), index.stats().head_moves), before);
        for (i, k) in (0..3 * PREFETCH_MAX as u32).map(|i| i * 97).zip(&keys) {
            let expected = (i < 2_000).then(|| (i * 3).to_le_bytes().to_vec());
            assert_eq!(index.get(k), expected);
        }
    }

    #[test]
    fn prefetching_pays_once_the_directory_outgrows_the_caches() {
        let index = HotRing::new();
        let mut n = 0u32;
        while !index.prefetch_pays() {
            index.insert(&n.to_le_bytes(), b"v");
            n += 1;
            assert!(
                n < 1 << 20,
                "a million keys and still too small to prefetch for"
            );
        }
        assert!(n > 10_000, "prefetching judged to pay at {n} keys");
    }
}
