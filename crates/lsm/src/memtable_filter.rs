//! A bloom filter over a memtable's user keys, so that a point read of a key the
//! memtable does not hold (most reads, once data outgrows the memtables) skips the
//! memtable's index: a bucket and the nodes chained from it, a cache miss each.
//!
//! It is blocked: a key's probes all fall in one 64-bit word chosen by its hash, so a
//! lookup costs one cache line. The writer sets bits with `fetch_or` before it
//! publishes the key; a reader that can see the key's version (its sequence was
//! published after the insert, with release ordering) therefore sees its bits.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::memtable::zeroed_and_written;

/// One bit per this many bytes of memtable capacity (512 KiB of filter for a 64 MiB
/// memtable). Every key takes over 144 bytes (`memtable.rs`), so a full memtable has
/// at least 9 bits per key: a few percent of false positives.
const CAPACITY_BYTES_PER_BIT: usize = 16;

/// Probes per key, each a 6-bit slice of the hash's upper half.
const PROBES: u32 = 4;

pub struct MemTableFilter {
    words: Box<[AtomicU64]>,
    /// `words.len() - 1`; the length is a power of two.
    mask: u64,
}

impl MemTableFilter {
    /// A filter for a memtable of about `capacity_bytes`.
    pub fn new(capacity_bytes: usize) -> MemTableFilter {
        let words = (capacity_bytes / CAPACITY_BYTES_PER_BIT / 64)
            .next_power_of_two()
            .max(64);
        MemTableFilter {
            words: zeroed_and_written(words, |w: &AtomicU64| w.store(0, Ordering::Relaxed)),
            mask: words as u64 - 1,
        }
    }

    /// Adds a key by its `bloom::hash`.
    pub fn insert(&self, hash: u64) {
        let (word, bits) = self.locate(hash);
        // Relaxed: the key's publication and the sequence's release store come after.
        word.fetch_or(bits, Ordering::Relaxed);
    }

    /// False only if the key hashing to `hash` was never inserted (as seen by a reader
    /// that can see the insert's entry).
    pub fn may_contain(&self, hash: u64) -> bool {
        let (word, bits) = self.locate(hash);
        word.load(Ordering::Relaxed) & bits == bits
    }

    fn locate(&self, hash: u64) -> (&AtomicU64, u64) {
        let word = &self.words[(hash & self.mask) as usize];
        let mut bits = 0u64;
        for probe in 0..PROBES {
            bits |= 1 << ((hash >> (32 + 6 * probe)) & 63);
        }
        (word, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom;

    #[test]
    fn every_inserted_key_is_found_and_few_others() {
        // As full as a 1 MiB memtable of the smallest keys (~144 bytes each) gets.
        let filter = MemTableFilter::new(1 << 20);
        let n = (1 << 20) / 144;
        for i in 0..n {
            filter.insert(bloom::hash(format!("key{i}").as_bytes()));
        }
        assert!((0..n).all(|i| filter.may_contain(bloom::hash(format!("key{i}").as_bytes()))));
        let false_positives = (0..n)
            .filter(|i| filter.may_contain(bloom::hash(format!("other{i}").as_bytes())))
            .count();
        assert!(false_positives < n / 20, "{false_positives} of {n}");
    }

    #[test]
    fn concurrent_inserts_lose_no_bits() {
        let filter = MemTableFilter::new(64 << 10);
        std::thread::scope(|s| {
            for t in 0..8 {
                let filter = &filter;
                s.spawn(move || {
                    for i in 0..2_000 {
                        let key = format!("{t}:{i}");
                        filter.insert(bloom::hash(key.as_bytes()));
                        assert!(filter.may_contain(bloom::hash(key.as_bytes())));
                    }
                });
            }
        });
        for t in 0..8 {
            assert!(
                (0..2_000).all(|i| filter.may_contain(bloom::hash(format!("{t}:{i}").as_bytes())))
            );
        }
    }
}
