//! A weakly consistent iterator over all entries.
//!
//! Items of every ring form one list sorted by (hash, key), and splits only insert
//! rehash items into it, so walking the list in order visits every key present for
//! the whole iteration exactly once, however the rings split meanwhile. The iterator
//! pins the epoch only while it fills a batch, then resumes from the last key it
//! returned, so holding an iterator never holds back memory reclamation.

use std::cmp::Ordering as CmpOrdering;
use std::collections::VecDeque;

use crossbeam_epoch as epoch;

use crate::index::{Access, HotRing};
use crate::link::Link;

const BATCH: usize = 64;

/// Iterator over `(key, value)` pairs, in hash order.
pub struct Iter<'a> {
    index: &'a HotRing,
    /// Order of the last item returned: (hash, key).
    last: Option<(u64, Vec<u8>)>,
    batch: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl HotRing {
    /// Iterates over the entries. Keys present for the whole iteration are returned
    /// exactly once; keys inserted or removed meanwhile may or may not be.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            index: self,
            last: None,
            batch: VecDeque::new(),
            done: false,
        }
    }
}

impl Iter<'_> {
    fn fill(&mut self) {
        let guard = epoch::pin();
        let index = self.index;
        let start = match &self.last {
            None => index.root,
            Some((hash, _)) => index.slot_for(*hash, &guard).sentinel(),
        };
        let mut cur = Some(start);
        while let Some(item) = cur {
            let link = item.load_next();
            let after_last = match &self.last {
                None => true,
                Some((hash, key)) => item.cmp_to(*hash, Some(key)) == CmpOrdering::Greater,
            };
            if after_last && !item.is_sentinel() && !link.has(Link::OCCUPIED) {
                let entry = (item.key().to_vec(), item.with_value(<[u8]>::to_vec));
                self.last = Some((item.hash(), entry.0.clone()));
                self.batch.push_back(entry);
                if self.batch.len() == BATCH {
                    return;
                }
            }
            cur = index.item(link.target(), &guard);
        }
        self.done = true;
    }
}

impl Iterator for Iter<'_> {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.batch.is_empty() && !self.done {
            self.fill();
        }
        self.batch.pop_front()
    }
}

impl HotRing {
    /// A resumable scan for cursors that must fit in a number (Redis's SCAN): calls `f`
    /// on live entries whose key hash is at least `from`, in hash order, until at least
    /// `count` have been seen and the next entry's hash differs from the last one's (so
    /// a resumed scan never splits keys that share a hash). Returns the `from` of the
    /// next call, or `None` at the end. Keys present for a whole sequence of calls are
    /// seen exactly once, across any splits, as with [`HotRing::iter`].
    ///
    /// `f` also gets what is known of the entry's accesses ([`Access`]), for ranking
    /// keys to evict.
    pub fn scan(
        &self,
        from: u64,
        count: usize,
        f: impl FnMut(&[u8], &[u8], Access),
    ) -> Option<u64> {
        self.scan_within(from, count, usize::MAX, f)
    }

    /// [`HotRing::scan`] that also stops at the start of a ring once it has passed
    /// `max_rings` ring starts, as Redis's SCAN stops after ten buckets per key asked
    /// for: on an index whose keys were mostly deleted (its rings stay), a page then
    /// costs a bounded walk, and may hold no key while its cursor is not the end.
    /// Stopping at a ring's start loses nothing: the ring's sentinel sorts before every
    /// key of its hash, so the keys before it all have smaller hashes, and its hash,
    /// the next cursor, is past `from`, so the scan always moves on.
    pub fn scan_within(
        &self,
        from: u64,
        count: usize,
        max_rings: usize,
        mut f: impl FnMut(&[u8], &[u8], Access),
    ) -> Option<u64> {
        let guard = epoch::pin();
        let mut cur = Some(self.slot_for(from, &guard).sentinel());
        let mut seen = 0usize;
        let mut rings = 0usize;
        let mut last_hash = None;
        while let Some(item) = cur {
            let link = item.load_next();
            if link.has(Link::REHASH) {
                if rings >= max_rings && item.hash() > from {
                    return Some(item.hash());
                }
                rings += 1;
            } else if !link.has(Link::OCCUPIED) && item.hash() >= from {
                if seen >= count && last_hash != Some(item.hash()) {
                    return Some(item.hash());
                }
                let is_head =
                    self.slot_for(item.hash(), &guard).load_head().target() == item.as_raw();
                let access = self.access_of(item, is_head);
                item.with_value(|v| f(item.key(), v, access));
                seen += 1;
                last_hash = Some(item.hash());
            }
            cur = self.item(link.target(), &guard);
        }
        None
    }
}
