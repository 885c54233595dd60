//! What INFO commandstats, INFO errorstats and SLOWLOG report: calls, time and errors
//! per command, error replies by their code word, and the requests that ran longer
//! than `slowlog-log-slower-than`.
//!
//! Every request adds to the counters, so they are striped: a thread adds to its own
//! stripe (picked once per thread) and INFO sums the stripes. One shared counter per
//! command would pass its cache line between the io threads on every GET.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const STRIPES: usize = 8;

/// Redis keeps at most this many arguments of a slow request, and this many bytes of
/// each; the last kept argument, or the rest of a long one, says how much was left out.
const SLOWLOG_MAX_ARGS: usize = 32;
const SLOWLOG_MAX_ARG_BYTES: usize = 128;

/// Distinct error codes INFO errorstats tracks, as Redis caps them: a client cannot
/// grow the table without bound by making up error words (from scripts, in Redis).
const MAX_ERROR_CODES: usize = 128;

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
    slowlog: Mutex<SlowLog>,
    /// Error replies by code (the reply's first word), in the order first seen. Error
    /// replies are the uncommon path, so one lock does.
    errors: Mutex<Vec<(String, u64)>>,
    error_replies: AtomicU64,
}

fn my_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

impl CommandStats {
    /// Counters for `commands` commands, numbered from 0.
    pub fn new(commands: usize) -> CommandStats {
        CommandStats {
            stripes: (0..STRIPES)
                .map(|_| (0..commands).map(|_| Counters::default()).collect())
                .collect(),
            slowlog: Mutex::default(),
            errors: Mutex::default(),
            error_replies: AtomicU64::new(0),
        }
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
    pub fn record_call(&self, index: usize, took: Duration, failed: bool) {
        let c = &self.stripes[my_stripe()][index];
        c.calls.fetch_add(1, Ordering::Relaxed);
        c.micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        if failed {
            c.failed.fetch_add(1, Ordering::Relaxed);
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
    fn totals_sum_every_threads_stripe() {
        let stats = std::sync::Arc::new(CommandStats::new(3));
        let threads: Vec<_> = (0..2 * STRIPES)
            .map(|_| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        stats.record_call(1, Duration::from_micros(2), false);
                    }
                    stats.record_call(2, Duration::from_micros(5), true);
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
