//! Statistics: counters striped per thread so recording never contends, and the
//! snapshot type users read.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use crate::head::ShiftWatch;

const STRIPES: usize = 64;

#[derive(Default)]
pub(crate) struct Stripe {
    pub(crate) len: AtomicI64,
    /// Accesses recorded (one in every `sample_period` per thread, each one while the
    /// thread follows a hotspot shift).
    pub(crate) accesses: AtomicU64,
    pub(crate) head_hits: AtomicU64,
    pub(crate) visits: AtomicU64,
    pub(crate) head_moves: AtomicU64,
    pub(crate) sample_rounds: AtomicU64,
    pub(crate) hot: HotTable,
    pub(crate) shift_watch: ShiftWatch,
}

impl Stripe {
    /// Counts one access that visited `visits` items, a head hit if `hit`. Loads and
    /// stores, not read-modify-writes: a stripe has one writer unless more than
    /// `STRIPES` threads record at once, and then a lost count only blurs a statistic;
    /// a locked add would make every counted access wait for its store, for no other
    /// writer (BENCHMARKS.md, session 89).
    #[inline]
    pub(crate) fn count_access(&self, visits: u32, hit: bool) {
        let add = |counter: &AtomicU64, n: u64| {
            counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed)
        };
        add(&self.accesses, 1);
        add(&self.visits, u64::from(visits));
        if hit {
            add(&self.head_hits, 1);
        }
    }
}

/// How often a thread's access is offered to its stripe's [`HotTable`]: one in this many.
pub(crate) const HOT_SAMPLE_PERIOD: u32 = 64;
const HOT_ENTRIES: usize = 16;
/// Counts halve every this many milliseconds, so the tables follow the current
/// hotspot, and a stripe no thread records into any more fades away.
const HOT_HALF_LIFE_MS: u64 = 1000;

/// Milliseconds since the first call in this process.
pub(crate) fn now_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

/// The most frequent key hashes among sampled accesses, by the Space-Saving algorithm
/// (Metwally et al.): a sample of a tracked hash counts on it; an untracked one takes
/// the entry with the smallest count and that count plus one. Updated with relaxed
/// atomics by whichever threads share the stripe, so concurrent samples may now and
/// then be lost or misattributed: the table is an estimate, and never unsafe.
#[derive(Default)]
pub(crate) struct HotTable {
    hashes: [AtomicU64; HOT_ENTRIES],
    counts: [AtomicU64; HOT_ENTRIES],
    /// Samples taken, decayed with the counts.
    total: AtomicU64,
    /// When the counts last halved ([`now_ms`]).
    decayed_at: AtomicU64,
}

impl HotTable {
    pub(crate) fn record(&self, hash: u64) {
        let now = now_ms();
        let last = self.decayed_at.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= HOT_HALF_LIFE_MS
            && self
                .decayed_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let halvings = ((now - last) / HOT_HALF_LIFE_MS).min(63);
            for c in self.counts.iter().chain([&self.total]) {
                c.store(c.load(Ordering::Relaxed) >> halvings, Ordering::Relaxed);
            }
        }
        self.total.fetch_add(1, Ordering::Relaxed);
        let (mut min_i, mut min_c) = (0, u64::MAX);
        for i in 0..HOT_ENTRIES {
            if self.hashes[i].load(Ordering::Relaxed) == hash {
                self.counts[i].fetch_add(1, Ordering::Relaxed);
                return;
            }
            let c = self.counts[i].load(Ordering::Relaxed);
            if c < min_c {
                (min_i, min_c) = (i, c);
            }
        }
        self.hashes[min_i].store(hash, Ordering::Relaxed);
        self.counts[min_i].store(min_c + 1, Ordering::Relaxed);
    }

    /// `(hash, count)` of the tracked entries and the samples taken, decayed to now
    /// (a stripe not recorded into lately counts for less).
    pub(crate) fn read(&self) -> (Vec<(u64, f64)>, f64) {
        let idle = now_ms().saturating_sub(self.decayed_at.load(Ordering::Relaxed));
        let weight = 0.5f64.powf(idle as f64 / HOT_HALF_LIFE_MS as f64);
        let entries = (0..HOT_ENTRIES)
            .map(|i| {
                (
                    self.hashes[i].load(Ordering::Relaxed),
                    self.counts[i].load(Ordering::Relaxed) as f64 * weight,
                )
            })
            .filter(|&(_, c)| c > 0.0)
            .collect();
        (entries, self.total.load(Ordering::Relaxed) as f64 * weight)
    }
}

pub(crate) struct Counters {
    stripes: Box<[CachePadded<Stripe>]>,
}

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

/// The stripe this thread records into.
#[inline]
fn stripe_index() -> usize {
    STRIPE.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
        }
        s.get()
    })
}

/// Items allocated and not yet freed, in this process, striped like the counters. Kept
/// process-wide so freeing a retired item (in whatever thread the epoch collector runs
/// it) needs no handle back to its index.
static ALLOCATED: [CachePadded<AtomicI64>; STRIPES] =
    [const { CachePadded::new(AtomicI64::new(0)) }; STRIPES];

#[inline]
pub(crate) fn count_allocation(delta: i64) {
    ALLOCATED[stripe_index()].fetch_add(delta, Ordering::Relaxed);
}

/// Items (of every index and chaining table in this process) allocated and not yet
/// freed, including removed ones still waiting for their grace period. For leak checks.
pub fn allocated_items() -> i64 {
    ALLOCATED.iter().map(|c| c.load(Ordering::Relaxed)).sum()
}

impl Counters {
    pub(crate) fn new() -> Counters {
        Counters {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(Stripe::default()))
                .collect(),
        }
    }

    /// This thread's stripe.
    #[inline]
    pub(crate) fn mine(&self) -> &Stripe {
        &self.stripes[stripe_index()]
    }

    pub(crate) fn stripes(&self) -> impl Iterator<Item = &Stripe> {
        self.stripes.iter().map(|s| &**s)
    }

    pub(crate) fn sum(&self, field: impl Fn(&Stripe) -> u64) -> u64 {
        self.stripes.iter().map(|s| field(s)).sum()
    }

    pub(crate) fn len(&self) -> usize {
        let n: i64 = self
            .stripes
            .iter()
            .map(|s| s.len.load(Ordering::Relaxed))
            .sum();
        n.max(0) as usize
    }

    pub(crate) fn reset_access_stats(&self) {
        for s in self.stripes.iter() {
            s.accesses.store(0, Ordering::Relaxed);
            s.head_hits.store(0, Ordering::Relaxed);
            s.visits.store(0, Ordering::Relaxed);
        }
    }
}

/// A snapshot of the index's state and behaviour.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Keys stored.
    pub len: usize,
    /// Rings (buckets) in the directory.
    pub rings: usize,
    /// Directory slots (2^global depth).
    pub directory_slots: usize,
    /// Share of accesses answered by the item a slot's entry points at: its head or
    /// one of its entry words.
    pub head_hit_rate: f64,
    /// Items (including rehash items) visited per access.
    pub items_per_access: f64,
    /// Head pointer moves made by hotspot detection.
    pub head_moves: u64,
    /// Completed statistical-sampling rounds.
    pub sample_rounds: u64,
    /// Hotspot shifts followed: sudden falls of a thread's head-hit rate, after which
    /// calm rings moved their heads at once.
    pub shifts: u64,
    /// Ring splits.
    pub splits: u64,
    /// `(ring length, number of rings of that length)`, by length.
    pub ring_lengths: Vec<(usize, usize)>,
    /// Bytes held by the items in the index (as requested from the allocator) and the
    /// directory.
    pub bytes: usize,
    /// `bytes / len`.
    pub bytes_per_key: f64,
}

#[cfg(test)]
mod tests {
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    use super::{Ordering, Stripe};

    #[test]
    fn a_stripes_one_writer_counts_every_access() {
        let stripe = Stripe::default();
        let mut rng = SmallRng::seed_from_u64(89);
        let (mut visits, mut hits) = (0u64, 0u64);
        for _ in 0..10_000 {
            let (v, hit) = (rng.gen_range(1..=9u32), rng.gen_bool(1.0 / 3.0));
            stripe.count_access(v, hit);
            visits += u64::from(v);
            hits += u64::from(hit);
        }
        assert_eq!(stripe.accesses.load(Ordering::Relaxed), 10_000);
        assert_eq!(stripe.visits.load(Ordering::Relaxed), visits);
        assert_eq!(stripe.head_hits.load(Ordering::Relaxed), hits);
    }
}
