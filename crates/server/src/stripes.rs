//! Counters that every request adds to are striped: a thread adds to its own stripe
//! (picked once per thread) and a reader sums the stripes. One shared counter would pass
//! its cache line between the I/O threads on every request.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

pub const STRIPES: usize = 8;

/// The stripe this thread adds to.
pub fn my_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

/// A count that many threads add to and few read.
#[derive(Default)]
pub struct StripedCounter {
    stripes: [CachePadded<AtomicU64>; STRIPES],
}

impl StripedCounter {
    pub fn add(&self, n: u64) {
        self.stripes[my_stripe()].fetch_add(n, Ordering::Relaxed);
    }

    /// The sum of what every thread added before (a total that moves while read).
    pub fn sum(&self) -> u64 {
        self.stripes.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_striped_counter_sums_every_threads_adds() {
        let counter = StripedCounter::default();
        std::thread::scope(|s| {
            for t in 0..2 * STRIPES as u64 {
                let counter = &counter;
                s.spawn(move || {
                    for _ in 0..1000 {
                        counter.add(t);
                    }
                });
            }
        });
        let threads = 2 * STRIPES as u64;
        assert_eq!(counter.sum(), 1000 * threads * (threads - 1) / 2);
    }
}
