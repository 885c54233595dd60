//! What INFO commandstats, INFO errorstats, INFO latencystats, LATENCY HISTOGRAM and
//! SLOWLOG report: calls, time, errors and a latency histogram per command, error
//! replies by their code word, and the requests that ran longer than
//! `slowlog-log-slower-than`.
//!
//! Every request adds to the counters, so they are striped (`stripes.rs`); INFO sums
//! the stripes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::stripes::{my_stripe, STRIPES};

/// Redis keeps at most this many arguments of a slow request, and this many bytes of
/// each; the last kept argument, or the rest of a long one, says how much was left out.
const SLOWLOG_MAX_ARGS: usize = 32;
const SLOWLOG_MAX_ARG_BYTES: usize = 128;

/// Distinct error codes INFO errorstats tracks, as Redis caps them: a client cannot
/// grow the table without bound by making up error words (from scripts, in Redis).
const MAX_ERROR_CODES: usize = 128;

/// Latency histograms are log-linear over nanoseconds: values below 4 have a bucket
/// each, then every power of two is cut into 4, so a bucket is at most a quarter of
/// its lower bound wide (Redis's HDR histograms keep 2 significant digits; a quarter
/// is enough for p50/p99 and costs a 1.2 KiB array per command and stripe). Times
/// from 2^40 ns (18 minutes) up share the last bucket.
const SUB_BUCKETS: u64 = 4;
const MAX_EXPONENT: u32 = 39;
const BUCKETS: usize = (SUB_BUCKETS + (MAX_EXPONENT as u64 - 1) * SUB_BUCKETS) as usize;
type Buckets = [AtomicU64; BUCKETS];

fn bucket_of(ns: u64) -> usize {
    if ns < SUB_BUCKETS {
        return ns as usize;
    }
    let exponent = (63 - ns.leading_zeros()).min(MAX_EXPONENT);
    let ns = ns.min((1 << (MAX_EXPONENT + 1)) - 1);
    let sub = (ns >> (exponent - 2)) & (SUB_BUCKETS - 1);
    (SUB_BUCKETS + (exponent as u64 - 2) * SUB_BUCKETS + sub) as usize
}

/// The highest time, in nanoseconds, that falls in bucket `b`.
fn bucket_ceiling(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB_BUCKETS {
        return b;
    }
    let exponent = (b - SUB_BUCKETS) / SUB_BUCKETS + 2;
    let sub = (b - SUB_BUCKETS) % SUB_BUCKETS;
    ((SUB_BUCKETS + sub + 1) << (exponent - 2)) - 1
}

/// One command's latency histogram, summed over the stripes.
pub struct Histogram {
    counts: Vec<u64>,
    calls: u64,
}

impl Histogram {
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The `p`th percentile in microseconds, as the highest time of the bucket that
    /// holds it (Redis reports its HDR histogram's highest equivalent value too).
    pub fn percentile_usec(&self, p: f64) -> f64 {
        let rank = ((p / 100.0 * self.calls as f64).ceil() as u64).clamp(1, self.calls.max(1));
        let mut seen = 0;
        for (b, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_ceiling(b) as f64 / 1000.0;
            }
        }
        0.0
    }

    /// `(bound, calls at or below it)` at each power of two from 1024 ns up, in units
    /// of 1024 ns, where calls fall in the step below it: LATENCY HISTOGRAM's
    /// `histogram_usec`, which Redis draws from the same steps.
    pub fn cumulative_usec(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let (mut seen, mut last) = (0, 0);
        let mut bound_exponent = 10;
        for (b, n) in self.counts.iter().enumerate() {
            while bucket_ceiling(b) >= 1 << bound_exponent {
                if seen > last {
                    out.push((1 << (bound_exponent - 10), seen));
                    last = seen;
                }
                bound_exponent += 1;
            }
            seen += n;
        }
        if seen > last {
            out.push((1 << (bound_exponent - 10), seen));
        }
        out
    }
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    micros: AtomicU64,
    /// Refused before running: wrong arity, not authenticated, over maxmemory.
    rejected: AtomicU64,
    /// Ran and answered with an error.
    failed: AtomicU64,
}

/// The totals of one command, summed over the stripes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CommandTotals {
    pub calls: u64,
    pub micros: u64,
    pub rejected: u64,
    pub failed: u64,
}

/// One slow request, as SLOWLOG GET shows it.
pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Vec<u8>>,
    pub client_addr: String,
    pub client_name: Vec<u8>,
}

#[derive(Default)]
struct SlowLog {
    /// Newest first.
    entries: VecDeque<SlowEntry>,
    next_id: u64,
}

pub struct CommandStats {
    /// `STRIPES` arrays of one `Counters` per command; each array is its own allocation,
    /// so two threads' stripes do not share cache lines.
    stripes: Vec<Box<[Counters]>>,
    /// Per stripe, each command's latency counts, made at its first call there:
    /// made up front for every command, they were 3.6 MB of a server that had served
    /// nothing, where Redis starts in under 1 MB, and `maxmemory` counts them.
    histograms: Vec<Box<[OnceLock<Box<Buckets>>]>>,
    slowlog: Mutex<SlowLog>,
    /// Error replies by code (the reply's first word), in the order first seen. Error
    /// replies are the uncommon path, so one lock does.
    errors: Mutex<Vec<(String, u64)>>,
    error_replies: AtomicU64,
    /// The clock commands are timed by: read raw (the CPU's counter) at a command's
    /// start and end, and only their difference scaled to time, where an `Instant`
    /// scales each reading (the two were ~80 instructions of a ~2,400 GET).
    clock: quanta::Clock,
}

impl CommandStats {
    /// Counters for `commands` commands, numbered from 0.
    pub fn new(commands: usize) -> CommandStats {
        CommandStats {
            stripes: (0..STRIPES)
                .map(|_| (0..commands).map(|_| Counters::default()).collect())
                .collect(),
            histograms: (0..STRIPES)
                .map(|_| (0..commands).map(|_| OnceLock::new()).collect())
                .collect(),
            slowlog: Mutex::default(),
            errors: Mutex::default(),
            error_replies: AtomicU64::new(0),
            clock: quanta::Clock::new(),
        }
    }

    /// The clock's reading now, for [`CommandStats::took_since`].
    #[inline]
    pub fn tick(&self) -> u64 {
        self.clock.raw()
    }

    /// The time since `started`, a [`CommandStats::tick`] read before the command ran.
    #[inline]
    pub fn took_since(&self, started: u64) -> Duration {
        self.clock.delta(started, self.clock.raw())
    }

    /// `(index, histogram)` of every command whose latency histogram holds a call.
    pub fn histograms(&self) -> Vec<(usize, Histogram)> {
        (0..self.stripes[0].len())
            .filter_map(|i| Some((i, self.histogram(i)?)))
            .collect()
    }

    /// Command `index`'s latency histogram, or `None` if it recorded no call.
    fn histogram(&self, index: usize) -> Option<Histogram> {
        let mut counts = vec![0u64; BUCKETS];
        for buckets in self.histograms.iter().filter_map(|s| s[index].get()) {
            for (count, n) in counts.iter_mut().zip(buckets.iter()) {
                *count += n.load(Ordering::Relaxed);
            }
        }
        let calls = counts.iter().sum();
        (calls > 0).then_some(Histogram { counts, calls })
    }

    /// An error reply was sent; `text` is what follows the `-`.
    pub fn record_error(&self, text: &str) {
        self.error_replies.fetch_add(1, Ordering::Relaxed);
        let code = text.split(' ').next().unwrap_or_default();
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = errors.iter_mut().find(|(c, _)| c == code) {
            *n += 1;
        } else if errors.len() < MAX_ERROR_CODES {
            errors.push((code.to_string(), 1));
        }
    }

    /// INFO stats' `total_error_replies`.
    pub fn error_replies(&self) -> u64 {
        self.error_replies.load(Ordering::Relaxed)
    }

    /// `(code, count)` for INFO errorstats, sorted by code as Redis lists them.
    pub fn error_codes(&self) -> Vec<(String, u64)> {
        let mut codes = self
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        codes.sort();
        codes
    }

    /// A call of command `index` that ran for `took`; `failed` if it answered an error.
    /// With `histogram`, the call also goes to the command's latency histogram.
    pub fn record_call(&self, index: usize, took: Duration, failed: bool, histogram: bool) {
        let stripe = my_stripe();
        let c = &self.stripes[stripe][index];
        c.calls.fetch_add(1, Ordering::Relaxed);
        c.micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        if failed {
            c.failed.fetch_add(1, Ordering::Relaxed);
        }
        if histogram {
            let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            self.histograms[stripe][index]
                .get_or_init(|| Box::new(std::array::from_fn(|_| AtomicU64::new(0))))
                [bucket_of(ns)]
            .fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn record_rejected(&self, index: usize) {
        self.stripes[my_stripe()][index]
            .rejected
            .fetch_add(1, Ordering::Relaxed);
    }

    /// `(index, totals)` of every command that has been called or refused.
    pub fn totals(&self) -> Vec<(usize, CommandTotals)> {
        let commands = self.stripes[0].len();
        (0..commands)
            .map(|i| {
                let mut t = CommandTotals::default();
                for stripe in &self.stripes {
                    let c = &stripe[i];
                    t.calls += c.calls.load(Ordering::Relaxed);
                    t.micros += c.micros.load(Ordering::Relaxed);
                    t.rejected += c.rejected.load(Ordering::Relaxed);
                    t.failed += c.failed.load(Ordering::Relaxed);
                }
                (i, t)
            })
            .filter(|(_, t)| t.calls + t.rejected > 0)
            .collect()
    }

    /// CONFIG RESETSTAT. The slow log is SLOWLOG RESET's.
    pub fn reset(&self) {
        for c in self.stripes.iter().flat_map(|s| s.iter()) {
            for counter in [&c.calls, &c.micros, &c.rejected, &c.failed] {
                counter.store(0, Ordering::Relaxed);
            }
        }
        let made = self
            .histograms
            .iter()
            .flat_map(|h| h.iter().filter_map(OnceLock::get));
        for n in made.flat_map(|buckets| buckets.iter()) {
            n.store(0, Ordering::Relaxed);
        }
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.error_replies.store(0, Ordering::Relaxed);
    }

    /// Adds a request to the slow log, dropping the oldest entries past `max_len`.
    /// `args` are as the client sent them (passwords redacted); they are cut to Redis's
    /// limits here.
    pub fn log_slow(
        &self,
        args: &[&[u8]],
        took: Duration,
        client_addr: String,
        client_name: Vec<u8>,
        max_len: usize,
    ) {
        let kept = args.len().min(SLOWLOG_MAX_ARGS);
        let args = args[..kept]
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i == kept - 1 && kept < args.len() {
                    format!("... ({} more arguments)", args.len() - kept + 1).into_bytes()
                } else if a.len() > SLOWLOG_MAX_ARG_BYTES {
                    let mut cut = a[..SLOWLOG_MAX_ARG_BYTES].to_vec();
                    let more = a.len() - SLOWLOG_MAX_ARG_BYTES;
                    cut.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
                    cut
                } else {
                    a.to_vec()
                }
            })
            .collect();
        let unix_secs = crate::entry::now_ms() / 1000;
        let mut log = self.slowlog.lock().unwrap_or_else(|e| e.into_inner());
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(SlowEntry {
            id,
            unix_secs,
            micros: took.as_micros() as u64,
            args,
            client_addr,
            client_name,
        });
        log.entries.truncate(max_len);
    }

    /// Calls `f` with the newest `count` entries (all with `None`), newest first.
    pub fn with_slow_entries<R>(
        &self,
        count: Option<usize>,
        f: impl FnOnce(&mut dyn Iterator<Item = &SlowEntry>) -> R,
    ) -> R {
        let log = self.slowlog.lock().unwrap_or_else(|e| e.into_inner());
        let mut entries = log.entries.iter().take(count.unwrap_or(usize::MAX));
        f(&mut entries)
    }

    pub fn slow_len(&self) -> usize {
        self.slowlog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }

    /// SLOWLOG RESET: empties the log; entry ids keep counting, as in Redis.
    pub fn reset_slowlog(&self) {
        self.slowlog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_falls_in_the_one_bucket_that_bounds_it_within_a_quarter() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let samples = (0..64).flat_map(|e| [1u64 << e, (1u64 << e) - 1, (1u64 << e) + 1]);
        let random = (0..100_000).map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng >> (rng % 64)
        });
        for ns in samples.chain(random) {
            let b = bucket_of(ns);
            assert!(b < BUCKETS, "{ns} ns: bucket {b}");
            if ns < 1 << (MAX_EXPONENT + 1) {
                assert!(bucket_ceiling(b) >= ns, "{ns} ns above its bucket {b}");
                assert!(
                    b == 0 || bucket_ceiling(b - 1) < ns,
                    "{ns} ns fits bucket {}",
                    b - 1
                );
                let floor = if b == 0 { 0 } else { bucket_ceiling(b - 1) + 1 };
                assert!(
                    bucket_ceiling(b) - floor <= floor / 4,
                    "bucket {b} too wide"
                );
            } else {
                assert_eq!(b, BUCKETS - 1);
            }
        }
    }

    #[test]
    fn percentiles_and_the_cumulative_histogram() {
        let stats = CommandStats::new(2);
        assert!(stats.histogram(0).is_none());
        for _ in 0..98 {
            stats.record_call(0, Duration::from_micros(5), false, true);
        }
        stats.record_call(0, Duration::from_micros(100), false, true);
        stats.record_call(0, Duration::from_millis(3), false, true);
        let h = stats.histogram(0).unwrap();
        assert_eq!(h.calls(), 100);
        let p50 = h.percentile_usec(50.0);
        assert!((5.0..=5.0 * 1.25).contains(&p50), "p50 {p50}");
        let p99 = h.percentile_usec(99.0);
        assert!((100.0..=125.0).contains(&p99), "p99 {p99}");
        let p999 = h.percentile_usec(99.9);
        assert!((3000.0..=3750.0).contains(&p999), "p99.9 {p999}");
        // 5 us is below 8 * 1024 ns, 100 us below 128 * 1024, 3 ms below 4096 * 1024.
        assert_eq!(h.cumulative_usec(), vec![(8, 98), (128, 99), (4096, 100)]);
        assert!(
            stats.histogram(1).is_none(),
            "commands do not share histograms"
        );
        stats.reset();
        assert!(stats.histogram(0).is_none());
    }

    #[test]
    fn totals_sum_every_threads_stripe() {
        let stats = std::sync::Arc::new(CommandStats::new(3));
        let threads: Vec<_> = (0..2 * STRIPES)
            .map(|_| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        stats.record_call(1, Duration::from_micros(2), false, false);
                    }
                    stats.record_call(2, Duration::from_micros(5), true, false);
                    stats.record_rejected(2);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = 2 * STRIPES as u64;
        let totals = stats.totals();
        assert_eq!(totals.len(), 2, "command 0 never ran and is not listed");
        assert_eq!(
            totals[0],
            (
                1,
                CommandTotals {
                    calls: 1000 * n,
                    micros: 2000 * n,
                    rejected: 0,
                    failed: 0
                }
            )
        );
        assert_eq!(
            totals[1].1,
            CommandTotals {
                calls: n,
                micros: 5 * n,
                rejected: n,
                failed: n
            }
        );
        stats.reset();
        assert!(stats.totals().is_empty());
    }

    #[test]
    fn errors_are_counted_by_code_and_the_codes_are_bounded() {
        let stats = CommandStats::new(1);
        stats.record_error("ERR syntax error");
        stats.record_error("WRONGTYPE Operation against a key holding the wrong kind of value");
        stats.record_error("ERR value is not an integer or out of range");
        for i in 0..2 * MAX_ERROR_CODES {
            stats.record_error(&format!("MADEUP{i} words"));
        }
        let codes = stats.error_codes();
        assert_eq!(codes.len(), MAX_ERROR_CODES);
        assert!(codes.contains(&("ERR".to_string(), 2)));
        assert!(codes.contains(&("WRONGTYPE".to_string(), 1)));
        assert!(codes.windows(2).all(|w| w[0].0 < w[1].0), "sorted by code");
        assert_eq!(stats.error_replies(), 3 + 2 * MAX_ERROR_CODES as u64);
        stats.reset();
        assert!(stats.error_codes().is_empty());
        assert_eq!(stats.error_replies(), 0);
    }

    #[test]
    fn slow_entries_are_cut_to_redis_limits_and_the_log_to_its_length() {
        let stats = CommandStats::new(1);
        let many: Vec<Vec<u8>> = (0..40).map(|i| format!("a{i}").into_bytes()).collect();
        let many: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let x130 = [b'x'; 130];
        let long: Vec<&[u8]> = vec![&x130];
        for (i, args) in [&many, &long, &many].into_iter().enumerate() {
            let name = format!("c{i}").into_bytes();
            stats.log_slow(args, Duration::from_millis(20), "1.2.3.4:5".into(), name, 2);
        }
        assert_eq!(stats.slow_len(), 2, "the oldest entry fell off");
        stats.with_slow_entries(None, |entries| {
            let entries: Vec<_> = entries.collect();
            assert_eq!(entries[0].id, 2);
            assert_eq!(entries[0].micros, 20_000);
            assert_eq!(entries[0].client_name, b"c2");
            assert_eq!(entries[0].args.len(), 32);
            assert_eq!(entries[0].args[30], b"a30");
            assert_eq!(entries[0].args[31], b"... (9 more arguments)");
            let mut cut = vec![b'x'; 128];
            cut.extend_from_slice(b"... (2 more bytes)");
            assert_eq!(entries[1].args, vec![cut]);
        });
        stats.with_slow_entries(Some(1), |entries| assert_eq!(entries.count(), 1));
        stats.reset_slowlog();
        assert_eq!(stats.slow_len(), 0);
        stats.log_slow(&long, Duration::ZERO, String::new(), Vec::new(), 2);
        stats.with_slow_entries(None, |e| assert_eq!(e.next().map(|e| e.id), Some(3)));
    }
}
