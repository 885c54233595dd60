//! When an engine's keys were last read or written (OBJECT IDLETIME, RESTORE's
//! IDLETIME), and how often (OBJECT FREQ, RESTORE's FREQ: Redis's LFU counter). The
//! memory store keeps the first in each index item and ranks heat by its own tables;
//! an engine's keys are on disk and may far outnumber memory, so those accessed lately
//! are kept here, in a table of fixed size: buckets of [`WAYS`] slots, each holding a
//! key's fingerprint, LFU counter and the second it was last accessed. A key new to a
//! full bucket takes the slot of the bucket's least recently accessed key.
//!
//! The counter is Redis's (`evict.c`): a key starts at 5, an access adds one with
//! probability 1 / ((counter - 5) * lfu-log-factor + 1), and it loses one for each
//! lfu-decay-time minutes since its last access. Redis keeps either the counter or the
//! access time, by policy; both are kept here, so a switch of policy finds either
//! ready. A key the table does not hold has the counter of a key loaded at start.
//!
//! Invariant: every key the table does not hold was last accessed no later than
//! `floor` (the table's start, or the latest second of a slot taken over). Such a key
//! reads as idle since `floor`: a lower bound, as Redis's idle time of a key loaded at
//! start is (it counts from the load). The floor is raised before a slot is taken, so a
//! reader that no longer finds the key finds the raised floor.
//!
//! Two keys of one bucket with the same 24-bit fingerprint share a slot: the staler
//! reads as recently and as often accessed as the other.

#[cfg(feature = "shuttle")]
use shuttle::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(feature = "shuttle"))]
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Slots per bucket: one cache line.
const WAYS: usize = 8;

/// Buckets of a server's table: the last access of 256 Ki keys in 2 MiB.
const BUCKETS: usize = 1 << 15;

/// Idle times are seconds modulo 2^24, as Redis's LRU clock (and the memory store's).
const IDLE_MASK: u32 = (1 << 24) - 1;

/// Redis's LFU counter of a key just created or loaded.
const LFU_INIT: u8 = 5;

#[repr(align(64))]
struct Bucket([AtomicU64; WAYS]);

pub struct AccessClock {
    buckets: Box<[Bucket]>,
    /// The current second (Unix time), advanced by the server's tick.
    now: AtomicU32,
    floor: AtomicU32,
    /// `lfu-log-factor` and `lfu-decay-time` (minutes).
    log_factor: AtomicU32,
    decay_minutes: AtomicU32,
}

/// A slot: the key's fingerprint (24 bits, never 0), its LFU counter and the second it
/// was last accessed; 0 is an empty slot.
fn slot(fingerprint: u32, counter: u8, second: u32) -> u64 {
    (u64::from(fingerprint) << 40) | (u64::from(counter) << 32) | u64::from(second)
}

fn fingerprint(slot: u64) -> u32 {
    (slot >> 40) as u32
}

fn counter(slot: u64) -> u8 {
    (slot >> 32) as u8
}

fn second(slot: u64) -> u32 {
    slot as u32
}

impl AccessClock {
    /// A table whose keys all read as last accessed at `now` until they are accessed.
    pub fn new(now: u32) -> AccessClock {
        AccessClock::with_buckets(BUCKETS, now)
    }

    fn with_buckets(buckets: usize, now: u32) -> AccessClock {
        assert!(buckets.is_power_of_two());
        AccessClock {
            buckets: (0..buckets)
                .map(|_| Bucket(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            now: AtomicU32::new(now),
            floor: AtomicU32::new(now),
            log_factor: AtomicU32::new(10),
            decay_minutes: AtomicU32::new(1),
        }
    }

    /// `lfu-log-factor` and `lfu-decay-time`, as Redis's LFU counter uses them.
    pub fn set_lfu(&self, log_factor: u32, decay_minutes: u32) {
        self.log_factor.store(log_factor, Ordering::Relaxed);
        self.decay_minutes.store(decay_minutes, Ordering::Relaxed);
    }

    pub fn set_clock(&self, now: u32) {
        self.now.store(now, Ordering::Relaxed);
    }

    /// `key` was read or written now. A key new to the table starts at the counter
    /// of a new key; one it holds counts the access.
    pub fn touch(&self, key: &[u8]) {
        let now = self.now.load(Ordering::Relaxed);
        self.stamp(key, |held| match held {
            Some(s) => (self.counted(self.decayed(counter(s), second(s), now)), now),
            None => (LFU_INIT, now),
        });
    }

    /// Makes `key` look last accessed `idle` seconds ago (capped at the clock's range).
    pub fn set_idle(&self, key: &[u8], idle: u32) {
        let at = self
            .now
            .load(Ordering::Relaxed)
            .saturating_sub(idle.min(IDLE_MASK));
        self.stamp(key, |held| (held.map_or(LFU_INIT, counter), at));
    }

    /// Sets `key`'s LFU counter, as of now (RESTORE's FREQ).
    pub fn set_frequency(&self, key: &[u8], counter: u8) {
        let now = self.now.load(Ordering::Relaxed);
        self.stamp(key, |_| (counter, now));
    }

    /// `key`'s LFU counter, decayed to now (OBJECT FREQ).
    pub fn frequency(&self, key: &[u8]) -> u8 {
        let now = self.now.load(Ordering::Relaxed);
        match self.held(key) {
            Some(s) => self.decayed(counter(s), second(s), now),
            None => self.decayed(LFU_INIT, self.floor.load(Ordering::SeqCst), now),
        }
    }

    /// `counter` after the decay Redis applies for the time since `last` (seconds).
    fn decayed(&self, counter: u8, last: u32, now: u32) -> u8 {
        let minutes = (now / 60).saturating_sub(last / 60);
        let periods = match self.decay_minutes.load(Ordering::Relaxed) {
            0 => 0,
            decay => minutes / decay,
        };
        counter.saturating_sub(periods.min(255) as u8)
    }

    /// `counter` after an access: one more with a chance that shrinks as it grows.
    fn counted(&self, counter: u8) -> u8 {
        if counter == u8::MAX {
            return counter;
        }
        let above_start = f64::from(counter.saturating_sub(LFU_INIT));
        let factor = f64::from(self.log_factor.load(Ordering::Relaxed));
        let chance = 1.0 / (above_start * factor + 1.0);
        counter + u8::from(rand::random::<f64>() < chance)
    }

    /// Seconds since `key` was last read or written, modulo 2^24; for a key the table
    /// does not hold, since the floor (see the module's comment).
    pub fn idle(&self, key: &[u8]) -> u32 {
        let now = self.now.load(Ordering::Relaxed);
        now.saturating_sub(self.last_access(key)) & IDLE_MASK
    }

    /// The latest second `key` may have been accessed at: its slot's, else the
    /// floor. The slots are read before the floor, which is raised before a slot is
    /// taken over.
    fn last_access(&self, key: &[u8]) -> u32 {
        self.held(key)
            .map_or_else(|| self.floor.load(Ordering::SeqCst), second)
    }

    /// `key`'s slot (the latest, if a race left it two), if the table holds it.
    fn held(&self, key: &[u8]) -> Option<u64> {
        let (bucket, fp) = self.place(key);
        bucket
            .0
            .iter()
            .map(|s| s.load(Ordering::SeqCst))
            .filter(|&s| fingerprint(s) == fp)
            .max_by_key(|&s| second(s))
    }

    /// Sets `key`'s slot to the counter and second `next` makes of what it holds
    /// (`None`: nothing), taking over the bucket's stalest slot if it holds none.
    fn stamp(&self, key: &[u8], next: impl Fn(Option<u64>) -> (u8, u32)) {
        let (bucket, fp) = self.place(key);
        'retry: loop {
            let mut stalest: Option<(usize, u64)> = None;
            for (i, s) in bucket.0.iter().enumerate() {
                let seen = s.load(Ordering::SeqCst);
                if fingerprint(seen) == fp {
                    let (counter, at) = next(Some(seen));
                    let stamped = slot(fp, counter, at);
                    if seen == stamped {
                        return;
                    }
                    if s.compare_exchange(seen, stamped, Ordering::SeqCst, Ordering::SeqCst)
                        .is_err()
                    {
                        continue 'retry;
                    }
                    self.drop_duplicates(bucket, i + 1, fp);
                    return;
                }
                // An empty slot is stalest of all (second 0).
                if stalest.is_none_or(|(_, st)| second(seen) < second(st)) {
                    stalest = Some((i, seen));
                }
            }
            let (i, seen) = stalest.expect("a bucket has slots");
            let (counter, at) = next(None);
            let stamped = slot(fp, counter, at);
            if seen != 0 {
                self.floor.fetch_max(second(seen), Ordering::SeqCst);
            }
            if bucket.0[i]
                .compare_exchange(seen, stamped, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Empties the slots after `from` that also hold `fp`: two threads meeting a key
    /// new to the bucket at once each give it a slot, and the one just set must decide.
    fn drop_duplicates(&self, bucket: &Bucket, from: usize, fp: u32) {
        for s in &bucket.0[from..] {
            let seen = s.load(Ordering::SeqCst);
            if fingerprint(seen) == fp {
                // The key stays in the table, so the floor stays as it is; losing the
                // race to another stamp of the key leaves that stamp, as good a one.
                let _ = s.compare_exchange(seen, 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }

    fn place(&self, key: &[u8]) -> (&Bucket, u32) {
        let hash = hotring::hash::hash64(key);
        let bucket = &self.buckets[hash as usize & (self.buckets.len() - 1)];
        (bucket, (hash >> 40) as u32 | 1)
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn a_touched_key_is_idle_since_its_touch_and_others_since_the_start() {
        let clock = AccessClock::new(1000);
        clock.set_clock(1010);
        clock.touch(b"read");
        clock.set_clock(1013);
        assert_eq!(clock.idle(b"read"), 3);
        assert_eq!(clock.idle(b"never"), 13);
        clock.touch(b"read");
        assert_eq!(clock.idle(b"read"), 0);
    }

    #[test]
    fn set_idle_moves_the_last_access_back_and_a_touch_forward_again() {
        let clock = AccessClock::new(5000);
        clock.touch(b"k");
        clock.set_idle(b"k", 1000);
        assert_eq!(clock.idle(b"k"), 1000);
        clock.set_clock(5004);
        assert_eq!(clock.idle(b"k"), 1004);
        clock.touch(b"k");
        assert_eq!(clock.idle(b"k"), 0);
        // Beyond the clock's range it is capped, as Redis caps RESTORE's IDLETIME.
        clock.set_clock(1 << 25);
        clock.set_idle(b"k", u32::MAX);
        assert_eq!(clock.idle(b"k"), IDLE_MASK);
    }

    #[test]
    fn a_key_pushed_out_of_a_full_bucket_reads_as_idle_since_the_stalest_slot() {
        let clock = AccessClock::with_buckets(1, 0);
        for (i, key) in (0..WAYS as u32 + 1).enumerate() {
            clock.set_clock(100 + i as u32);
            clock.touch(&key.to_le_bytes());
        }
        clock.set_clock(200);
        // Key 0 (touched at 100) gave its slot to the last; the others are exact.
        assert_eq!(clock.idle(&0u32.to_le_bytes()), 100);
        for i in 1..=WAYS as u32 {
            assert_eq!(clock.idle(&i.to_le_bytes()), 100 - i);
        }
    }

    #[test]
    fn the_lfu_counter_starts_at_five_grows_with_accesses_and_decays_by_the_minute() {
        let clock = AccessClock::new(6000);
        assert_eq!(clock.frequency(b"loaded"), LFU_INIT);
        clock.touch(b"k");
        assert_eq!(clock.frequency(b"k"), LFU_INIT);
        // With a log factor of 0 every access counts; the counter stops at 255.
        clock.set_lfu(0, 1);
        for _ in 0..10 {
            clock.touch(b"k");
        }
        assert_eq!(clock.frequency(b"k"), LFU_INIT + 10);
        for _ in 0..300 {
            clock.touch(b"k");
        }
        assert_eq!(clock.frequency(b"k"), 255);
        // With the default factor, 1000 accesses count for far fewer (Redis's table:
        // about 18 at factor 10 from 5).
        clock.set_lfu(10, 1);
        for _ in 0..1000 {
            clock.touch(b"busy");
        }
        let busy = clock.frequency(b"busy");
        assert!((10..40).contains(&busy), "{busy}");
        clock.set_frequency(b"restored", 100);
        clock.set_clock(6000 + 3 * 60 + 59);
        assert_eq!(clock.frequency(b"restored"), 97);
        assert_eq!(clock.frequency(b"loaded"), LFU_INIT - 3);
        clock.set_lfu(10, 2);
        assert_eq!(clock.frequency(b"restored"), 99);
        clock.set_lfu(10, 0);
        assert_eq!(clock.frequency(b"restored"), 100);
        // An access counts from the decayed counter, and restarts the decay.
        clock.set_lfu(0, 1);
        clock.touch(b"restored");
        assert_eq!(clock.frequency(b"restored"), 98);
    }

    /// Seeded random touches and restores over more keys than a small table holds,
    /// against a model of each key's true last access: the idle time read is never
    /// more than the true one, and exact for a key the table still holds.
    #[test]
    fn idle_times_never_exceed_the_truth() {
        for seed in 0..20u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let clock = AccessClock::with_buckets(4, 1_000);
            let mut truth = vec![1_000u32; 100];
            let mut now = 1_000;
            for _ in 0..5_000 {
                let key = rng.gen_range(0..truth.len());
                let name = (key as u64).to_le_bytes();
                match rng.gen_range(0..10) {
                    0 => {
                        now += rng.gen_range(0..3);
                        clock.set_clock(now);
                    }
                    1 => {
                        let idle = rng.gen_range(0..50);
                        clock.set_idle(&name, idle);
                        truth[key] = now.saturating_sub(idle);
                    }
                    2..=6 => {
                        clock.touch(&name);
                        truth[key] = now;
                    }
                    _ => {
                        let read = clock.idle(&name);
                        assert!(read <= now - truth[key], "seed {seed}: key {key}");
                    }
                }
            }
            let touched = truth.iter().position(|&t| t == now);
            if let Some(key) = touched {
                assert_eq!(clock.idle(&(key as u64).to_le_bytes()), 0, "seed {seed}");
            }
        }
    }
}

/// A shuttle model of taking over a slot: readers of a key pushed out meanwhile must
/// find the raised floor, never an older second than the key's last access. Run with
/// `cargo test -p server --release --features shuttle --bin hotkv-server access_clock::model`.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use shuttle::sync::Arc;
    use shuttle::thread;

    use super::*;
    use crate::engine_store::model::explore;

    fn key(i: u32) -> [u8; 4] {
        i.to_le_bytes()
    }

    fn stamp(clock: &AccessClock, key: &[u8], at: u32) {
        clock.stamp(key, |_| (LFU_INIT, at));
    }

    /// One bucket, full at the start (key 0 stalest); two writers push new keys in
    /// while a reader checks key 0 and a key one writer re-touches.
    fn pushed_out_keys_never_read_older() {
        let clock = Arc::new(AccessClock::with_buckets(1, 0));
        for i in 0..WAYS as u32 {
            stamp(&clock, &key(i), 10 + i);
        }
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let clock = clock.clone();
                thread::spawn(move || {
                    for i in 0..2 {
                        stamp(&clock, &key(100 + 10 * w + i), 50 + i);
                    }
                    if w == 0 {
                        stamp(&clock, &key(1), 60);
                    }
                })
            })
            .collect();
        let reader = {
            let clock = clock.clone();
            thread::spawn(move || {
                for _ in 0..3 {
                    assert!(clock.last_access(&key(0)) >= 10);
                    assert!(clock.last_access(&key(1)) >= 11);
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        assert!(clock.last_access(&key(1)) >= 60);
    }

    /// Two threads meet a key new to the bucket at once: whatever slots it got, it
    /// reads as one of their stamps, and a later stamp decides.
    fn racing_first_stamps_leave_one_answer() {
        let clock = Arc::new(AccessClock::with_buckets(1, 0));
        let racers: Vec<_> = (0..2u32)
            .map(|t| {
                let clock = clock.clone();
                thread::spawn(move || stamp(&clock, &key(7), 30 + t))
            })
            .collect();
        for r in racers {
            r.join().unwrap();
        }
        assert!([30, 31].contains(&clock.last_access(&key(7))));
        stamp(&clock, &key(7), 5);
        assert_eq!(clock.last_access(&key(7)), 5);
    }

    #[test]
    fn pushed_out_keys_never_read_older_than_their_last_access() {
        explore(pushed_out_keys_never_read_older);
    }

    #[test]
    fn racing_first_stamps_of_a_key_leave_one_answer() {
        explore(racing_first_stamps_leave_one_answer);
    }
}
