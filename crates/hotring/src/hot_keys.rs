//! The hottest keys, for operators (Redis users ask for this; the index samples its
//! accesses anyway). Each counter stripe keeps a Space-Saving table of the key hashes
//! of one in every `HOT_SAMPLE_PERIOD` accesses, halving its counts every second;
//! merging the stripes
//! gives each tracked hash's share of the sampled accesses, and a scan from the hash
//! finds its key.

use std::collections::HashMap;

use crate::index::HotRing;
use crate::item::ring_hash;

impl HotRing {
    /// `key`'s estimated share of recent accesses (between 0 and 1): 0 unless it is
    /// among the keys the hot-key tables track.
    pub fn access_share(&self, key: &[u8]) -> f64 {
        let hash = ring_hash(key);
        let (mut count, mut total) = (0.0, 0.0);
        for stripe in self.counters.stripes() {
            let (entries, samples) = stripe.hot.read();
            total += samples;
            count += entries
                .iter()
                .filter(|(h, _)| *h == hash)
                .map(|(_, c)| c)
                .sum::<f64>();
        }
        if total > 0.0 {
            count / total
        } else {
            0.0
        }
    }

    /// Up to `n` keys that recent accesses went to most, hottest first, each with its
    /// estimated share of all accesses (between 0 and 1). Keys removed since they were
    /// sampled are left out.
    pub fn hot_keys(&self, n: usize) -> Vec<(Vec<u8>, f64)> {
        let mut counts: HashMap<u64, f64> = HashMap::new();
        let mut total = 0.0;
        for stripe in self.counters.stripes() {
            let (entries, samples) = stripe.hot.read();
            total += samples;
            for (hash, count) in entries {
                *counts.entry(hash).or_default() += count;
            }
        }
        let mut ranked: Vec<(u64, f64)> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut out = Vec::with_capacity(n);
        for (hash, count) in ranked {
            if out.len() == n {
                break;
            }
            let mut keys = Vec::new();
            self.scan(hash, 1, |k, _, _| {
                if ring_hash(k) == hash {
                    keys.push(k.to_vec());
                }
            });
            // Keys that share a hash split its count: rare enough to ignore.
            for key in keys {
                out.push((key, count / total.max(1.0)));
            }
        }
        out.truncate(n);
        out
    }
}
