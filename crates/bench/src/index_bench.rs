//! `hotkv-bench index`: in-process load on the hash indexes, alternating rounds.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use workload::{key_bytes, shift_offset, Distribution, Generator, Op, Shared, Spec, Workload};

use crate::counting_alloc;
use crate::cpu_time;
use crate::targets::{self, Request, Target};

#[derive(clap::Args, Debug, Clone)]
pub struct IndexArgs {
    /// Implementations to compare, comma-separated:
    /// hotring-s, hotring-r, hotring-fixed, chain, dashmap, papaya.
    #[arg(
        long = "impl",
        value_delimiter = ',',
        default_value = "hotring-s,hotring-r,chain,dashmap,papaya"
    )]
    pub impls: Vec<String>,
    /// YCSB workload: a, b, c, d or f (e needs scans, which a hash index has not).
    #[arg(long, default_value = "b")]
    pub workload: Workload,
    /// Key distribution: zipf:THETA, zipf-ordered:THETA, uniform, latest or
    /// hotspot:HOT_FRACTION:HOT_OP_FRACTION. Default: the workload's own.
    #[arg(long)]
    pub dist: Option<Distribution>,
    /// Keys loaded before the run.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Keys per bucket for the fixed-size hash indexes (hotring, chain).
    #[arg(long, default_value_t = 8)]
    pub ratio: usize,
    /// Let hotring grow by splitting rings instead of fixing the ring count by --ratio.
    #[arg(long)]
    pub grow: bool,
    /// With --grow: split a ring past this many items (default: the index's default).
    #[arg(long, requires = "grow")]
    pub max_ring_len: Option<u32>,
    /// Value size in bytes (<= 8 updates in place, larger by RCU).
    #[arg(long, default_value_t = 8)]
    pub value_size: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Operations each thread runs in every run (the warm-up too) instead of running for
    /// --seconds: the same work each time, for counting instructions under valgrind
    /// (`scripts/instructions-per-read.sh`), where a timed run's length varies.
    #[arg(long, conflicts_with = "shift_at", value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,
    /// Rounds; each round runs every implementation once, in rotating order.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Operations a worker hands the map at once; maps that pin an epoch (hotring,
    /// chain, papaya) pin once per batch. 1 (the default): one pin per operation, as a
    /// caller of `get` and `upsert` pays.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batch: u32,
    /// Seed for the key popularity and the operation streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Move the hotspot this many seconds into each run and record throughput every
    /// 100 ms to measure the reaction delay.
    #[arg(long)]
    pub shift_at: Option<f64>,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Serialize, Debug, Clone)]
pub struct ImplResult {
    #[serde(rename = "impl")]
    pub name: String,
    /// Median over rounds.
    pub ops_per_sec: f64,
    pub rounds_ops_per_sec: Vec<f64>,
    /// Operations all threads ran in each round.
    pub rounds_operations: Vec<u64>,
    /// Median over rounds of this impl's throughput divided by chain's in the same round.
    pub ratio_vs_chain: Option<f64>,
    pub items_per_read: Option<f64>,
    pub head_hit_rate: Option<f64>,
    pub bytes_per_key: f64,
    /// Median over rounds, when --shift-at is given; null if the median round did not
    /// recover before the run ended.
    pub reaction_delay_ms: Option<f64>,
    /// Throughput every 100 ms in the last round, when --shift-at is given.
    pub timeline_ops_per_sec: Option<Vec<f64>>,
    /// The same windows' operations per second of CPU time spent by the benchmark's
    /// threads (null where the OS does not report it): the workers' work rate with the
    /// time they were descheduled taken out. The reaction delay is computed from it.
    pub timeline_ops_per_cpu_sec: Option<Vec<f64>>,
    /// Items visited per access in the same windows (null where the structure does not
    /// count them), in the last round.
    pub timeline_items_per_access: Option<Vec<f64>>,
    /// Median over rounds: milliseconds after the shift until items per access are back
    /// within 10% of the second before it. Unlike throughput it does not move with the
    /// machine's other tenants, so it shows how fast heads follow the hotspot.
    pub items_recovery_ms: Option<f64>,
    pub workload: String,
    pub dist: String,
    pub keys: u64,
    pub ratio: usize,
    pub value_size: usize,
    pub threads: usize,
    /// Operations per batch (one epoch pin each, where the map pins).
    pub batch: u32,
    pub seconds: f64,
    /// Operations a thread ran in each run, when --ops is given.
    pub ops: Option<u64>,
}

/// Operations per thread generated ahead of the run and replayed in a loop, so the
/// generator's cost (a zipf draw takes a few logarithms) stays out of the measurement,
/// as in seed 000's evaluation, which counts the benchmark's own cost separately. Each
/// pass starts at a random point: replayed from the start, a key drawn once per stream
/// met the index's every-R-th-access counter at a fixed phase, so all such keys were
/// examined in lockstep (every R passes) and reached the hotspot trigger together.
///
/// Long enough that the keys a stream draws are the distribution's, not a sample the
/// index can learn: 2^20 operations of zipf 1.22 over 2^20 keys draw only ~74,000
/// distinct keys, whose items fit in the CPU caches and whose rings' heads learned the
/// sample, and hotring-s read 2.45-2.61x chain at ratio 8 against 1.69-1.79x with 2^23
/// (~291,000 keys; items per read 1.08 against 1.13, where `head-placement-bound.py`
/// puts the best a head per ring can do on the whole distribution at 1.14).
/// BENCHMARKS.md, session 72. 128 MB a thread.
const STREAM_LEN: usize = 1 << 23;

struct Loaded {
    name: String,
    target: Box<dyn Target>,
    shared: Arc<Shared>,
    /// One pre-generated stream per thread, drawn before any shift.
    streams: Vec<Vec<Op>>,
    bytes_per_key: f64,
    runs: Vec<Run>,
}

struct Run {
    ops_per_sec: f64,
    /// Operations all threads ran.
    operations: u64,
    reaction_delay_ms: Option<f64>,
    timeline: Vec<f64>,
    cpu_timeline: Option<Vec<f64>>,
    items_timeline: Option<Vec<f64>>,
    items_recovery_ms: Option<f64>,
}

fn value(size: usize, key: u64, salt: u64) -> Vec<u8> {
    let mut v = vec![0u8; size];
    let word = (key ^ salt.rotate_left(32)).to_le_bytes();
    for (i, b) in v.iter_mut().enumerate() {
        *b = word[i % 8];
    }
    v
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        return f64::NAN;
    }
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

pub fn run(args: IndexArgs) -> Result<Vec<ImplResult>, String> {
    if args.workload == Workload::E {
        return Err("workload e is 95% scans; hash indexes have no ordered scan".into());
    }
    if args.keys == 0 || args.threads == 0 || args.rounds == 0 || args.seconds <= 0.0 {
        return Err("--keys, --threads, --rounds and --seconds must be positive".into());
    }
    if let Some(s) = args.shift_at {
        if s <= 0.0 || s >= args.seconds {
            return Err(format!(
                "--shift-at {s} must fall inside the run (--seconds {})",
                args.seconds
            ));
        }
    }
    let dist = args
        .dist
        .clone()
        .unwrap_or_else(|| args.workload.default_distribution());
    let sizing = if args.grow {
        targets::Sizing::Grow {
            max_ring_len: args.max_ring_len,
        }
    } else {
        targets::Sizing::Fixed { ratio: args.ratio }
    };
    let mut loaded = Vec::new();
    for name in &args.impls {
        let shared = Shared::new(args.keys);
        let (target, bytes) = counting_alloc::measure(|| {
            let t = targets::build(name, args.keys as usize, args.ratio, &sizing)?;
            load(t.as_ref(), args.keys, args.value_size, args.threads);
            Ok::<_, String>(t)
        });
        let target = target?;
        eprintln!(
            "loaded {name}: {} keys, {:.1} bytes/key",
            args.keys,
            bytes as f64 / args.keys as f64
        );
        let spec = Spec::new(args.workload, dist.clone(), args.keys);
        let streams = (0..args.threads)
            .map(|t| {
                Generator::new(spec.clone(), shared.clone(), args.seed, t as u64)
                    .take(STREAM_LEN)
                    .collect()
            })
            .collect();
        loaded.push(Loaded {
            name: name.clone(),
            target,
            shared,
            streams,
            bytes_per_key: bytes as f64 / args.keys as f64,
            runs: Vec::new(),
        });
    }
    // Warm up: let hotspot detection settle and caches fill, unmeasured.
    for l in &loaded {
        measure_run(l, &args, 0, 0.5_f64.min(args.seconds), None);
        l.target.reset_access_stats();
    }
    for round in 0..args.rounds {
        let n = loaded.len();
        for i in 0..n {
            let l = &loaded[(i + round) % n];
            let r = measure_run(l, &args, round as u64 + 1, args.seconds, args.shift_at);
            eprintln!("round {round} {:<14} {:>14.0} ops/s", l.name, r.ops_per_sec);
            loaded[(i + round) % n].runs.push(r);
        }
    }
    let chain_runs: Option<Vec<f64>> = loaded
        .iter()
        .find(|l| l.name == "chain")
        .map(|l| l.runs.iter().map(|r| r.ops_per_sec).collect());
    let results = loaded
        .iter()
        .map(|l| {
            let ops: Vec<f64> = l.runs.iter().map(|r| r.ops_per_sec).collect();
            let (items_per_read, head_hit_rate) = l.target.access_stats();
            let delays: Vec<f64> = l.runs.iter().filter_map(|r| r.reaction_delay_ms).collect();
            let recoveries: Vec<f64> = l.runs.iter().filter_map(|r| r.items_recovery_ms).collect();
            let d = l.target.describe();
            if !d.is_empty() {
                eprintln!("{}: {d}", l.name);
            }
            ImplResult {
                name: l.name.clone(),
                ops_per_sec: median(&ops),
                ratio_vs_chain: chain_runs
                    .as_ref()
                    .map(|c| median(&ops.iter().zip(c).map(|(a, b)| a / b).collect::<Vec<_>>())),
                rounds_ops_per_sec: ops,
                rounds_operations: l.runs.iter().map(|r| r.operations).collect(),
                items_per_read,
                head_hit_rate,
                bytes_per_key: l.bytes_per_key,
                reaction_delay_ms: args.shift_at.map(|_| median(&delays)),
                timeline_ops_per_sec: args
                    .shift_at
                    .and_then(|_| l.runs.last().map(|r| r.timeline.clone())),
                timeline_ops_per_cpu_sec: args
                    .shift_at
                    .and_then(|_| l.runs.last().and_then(|r| r.cpu_timeline.clone())),
                timeline_items_per_access: args
                    .shift_at
                    .and_then(|_| l.runs.last().and_then(|r| r.items_timeline.clone())),
                items_recovery_ms: (!recoveries.is_empty()).then(|| median(&recoveries)),
                workload: format!("{:?}", args.workload).to_lowercase(),
                dist: dist.to_string(),
                keys: args.keys,
                ratio: args.ratio,
                value_size: args.value_size,
                threads: args.threads,
                batch: args.batch,
                seconds: args.seconds,
                ops: args.ops,
            }
        })
        .collect();
    Ok(results)
}

fn load(target: &dyn Target, keys: u64, value_size: usize, threads: usize) {
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let start = next.fetch_add(4096, Ordering::Relaxed);
                if start >= keys {
                    break;
                }
                for k in start..(start + 4096).min(keys) {
                    target.put(&key_bytes(k), &value(value_size, k, 0));
                }
            });
        }
    });
}

/// One run of `seconds` (or of `--ops` operations a thread) over the loaded target;
/// `run` numbers it (0 for the warm-up).
fn measure_run(l: &Loaded, args: &IndexArgs, run: u64, seconds: f64, shift_at: Option<f64>) -> Run {
    let stop = AtomicBool::new(false);
    let counters: Vec<CachePadded<AtomicU64>> =
        (0..args.threads).map(|_| Default::default()).collect();
    let duration = Duration::from_secs_f64(seconds);
    let mut timeline = Vec::new();
    let mut cpu_timeline = Vec::new();
    let mut items_timeline = Vec::new();
    let mut last_totals = l.target.access_totals();
    let start = Instant::now();
    let ctx = &RunContext {
        target: l.target.as_ref(),
        shared: &l.shared,
        args,
        run,
        stop: &stop,
    };
    let total = std::thread::scope(|s| {
        let workers: Vec<_> = (0..args.threads)
            .map(|t| {
                let (stream, counter) = (&l.streams[t], &counters[t]);
                s.spawn(move || drive(ctx, stream, t, counter))
            })
            .collect();
        // The collector (seed 001): sample throughput every 100 ms.
        let tick = Duration::from_millis(100);
        let mut last = 0u64;
        let mut last_cpu = cpu_time::process_cpu_ns();
        let mut shifted = false;
        while args.ops.is_none() && start.elapsed() < duration {
            std::thread::sleep(tick.min(duration.saturating_sub(start.elapsed())));
            if let Some(at) = shift_at {
                if !shifted && start.elapsed().as_secs_f64() >= at {
                    l.shared.shift_hotspot();
                    shifted = true;
                }
            }
            let now: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            timeline.push((now - last) as f64 / tick.as_secs_f64());
            let cpu = cpu_time::process_cpu_ns();
            if let (Some(cpu), Some(before)) = (cpu, last_cpu) {
                cpu_timeline.push((now - last) as f64 * 1e9 / (cpu - before).max(1) as f64);
            }
            last = now;
            last_cpu = cpu;
            let totals = l.target.access_totals();
            if let (Some((accesses, visits)), Some((a0, v0))) = (totals, last_totals) {
                items_timeline.push((visits - v0) as f64 / (accesses - a0).max(1) as f64);
            }
            last_totals = totals;
        }
        // With --ops the workers stop by themselves.
        if args.ops.is_none() {
            stop.store(true, Ordering::Relaxed);
        }
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .sum::<u64>()
    });
    let elapsed = start.elapsed().as_secs_f64();
    // Every window has a CPU figure or none has (the OS reports it or does not).
    let cpu_timeline = (cpu_timeline.len() == timeline.len()).then_some(cpu_timeline);
    let reaction_delay_ms = shift_at.map(|at| {
        let timeline = cpu_timeline.as_ref().unwrap_or(&timeline);
        recovery_ms(timeline, at, |window, steady| window >= 0.9 * steady)
    });
    let items_timeline = (items_timeline.len() == timeline.len()).then_some(items_timeline);
    let items_recovery_ms = shift_at
        .zip(items_timeline.as_ref())
        .map(|(at, items)| recovery_ms(items, at, |window, steady| window <= 1.1 * steady));
    Run {
        ops_per_sec: total as f64 / elapsed,
        operations: total,
        reaction_delay_ms,
        timeline,
        cpu_timeline,
        items_timeline,
        items_recovery_ms,
    }
}

/// Milliseconds after the shift until a 100 ms timeline is `back` to the mean of the
/// second before it: the start of the first 300 ms window (three samples) whose mean
/// passes `back(window mean, steady mean)`, so one noisy sample neither ends nor
/// prolongs the dip. Infinite (null in JSON) if the run ends first. The reaction delay
/// is throughput (per CPU-second where the OS reports it) back to 90%.
fn recovery_ms(timeline: &[f64], shift_at: f64, back: impl Fn(f64, f64) -> bool) -> f64 {
    let shift = ((shift_at * 10.0).round() as usize).min(timeline.len());
    let before = &timeline[shift.saturating_sub(10)..shift];
    let steady = before.iter().sum::<f64>() / before.len().max(1) as f64;
    timeline[shift..]
        .windows(3)
        .position(|w| back(w.iter().sum::<f64>() / 3.0, steady))
        .map_or(f64::INFINITY, |i| i as f64 * 100.0)
}

/// Where a thread's passes over its stream start, in one run: a seeded draw per pass.
/// Each run (the warm-up, each round) draws other points. With the same ones, a round
/// replayed in its first half-second the very operations the warm-up had just run, in
/// the same order, with the heads the warm-up left for them: hotring-s read 1.06-1.09
/// items per access there and 1.10-1.16 after (BENCHMARKS.md, session 74).
fn pass_starts(seed: u64, thread: usize, run: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (thread as u64).rotate_left(32) ^ run.rotate_left(48))
}

/// What every worker of one run shares.
struct RunContext<'a> {
    target: &'a dyn Target,
    shared: &'a Shared,
    args: &'a IndexArgs,
    /// The run's number (0 for the warm-up).
    run: u64,
    stop: &'a AtomicBool,
}

/// One worker's run: replays `stream` until told to stop or `--ops` are done, publishing
/// its count of operations in `counter` every ~1,024.
fn drive(ctx: &RunContext, stream: &[Op], thread: usize, counter: &AtomicU64) -> u64 {
    let RunContext {
        target,
        shared,
        args,
        run,
        stop,
    } = *ctx;
    let mut done = 0u64;
    let mut reported = 0u64;
    let mut buf = value(args.value_size, 0, 1);
    let batch_len = args.batch as usize;
    // A read-modify-write takes two places.
    let mut batch = Vec::with_capacity(batch_len + 1);
    let mut offset = shift_offset(shared.shifts(), args.keys);
    // Keys past the loaded ones (inserts) are not rotated by a shift.
    let key = |k: u64, offset: u64| {
        key_bytes(if k < args.keys {
            (k + offset) % args.keys
        } else {
            k
        })
    };
    let mut rng = pass_starts(args.seed, thread, run);
    'run: loop {
        let (before, from) = stream.split_at(rng.gen_range(0..stream.len()));
        for op in from.iter().chain(before) {
            match *op {
                Op::Read(k) => batch.push(Request::Read(key(k, offset))),
                Op::Update(k) | Op::Insert(k) => batch.push(Request::Write(key(k, offset))),
                Op::ReadModifyWrite(k) => {
                    batch.push(Request::Read(key(k, offset)));
                    batch.push(Request::Write(key(k, offset)));
                }
                Op::Scan(..) => unreachable!("rejected before the run"),
            }
            done += 1;
            if batch.len() < batch_len {
                continue;
            }
            // Each batch writes a new value.
            buf[0] = buf[0].wrapping_add(1);
            target.serve(&batch, &buf);
            batch.clear();
            if args.ops.is_some_and(|n| done >= n) {
                break 'run;
            }
            if done - reported >= 1024 {
                reported = done;
                counter.store(done, Ordering::Relaxed);
                offset = shift_offset(shared.shifts(), args.keys);
                if stop.load(Ordering::Relaxed) {
                    break 'run;
                }
            }
        }
    }
    done
}

pub fn print_table(results: &[ImplResult]) {
    let opt = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |v| format!("{v:.p$}"));
    println!(
        "{:<14} {:>14} {:>9} {:>11} {:>9} {:>11} {:>10} {:>10}",
        "impl", "ops/s", "vs chain", "items/read", "head hit", "bytes/key", "delay ms", "items ms"
    );
    for r in results {
        println!(
            "{:<14} {:>14.0} {:>9} {:>11} {:>9} {:>11.1} {:>10} {:>10}",
            r.name,
            r.ops_per_sec,
            opt(r.ratio_vs_chain, 2),
            opt(r.items_per_read, 2),
            opt(r.head_hit_rate, 3),
            r.bytes_per_key,
            opt(r.reaction_delay_ms, 0),
            opt(r.items_recovery_ms, 0),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{pass_starts, recovery_ms, STREAM_LEN};
    use rand::Rng;

    #[test]
    fn each_run_starts_its_passes_elsewhere() {
        let starts = |thread, run| {
            let mut rng = pass_starts(7, thread, run);
            (0..4)
                .map(|_| rng.gen_range(0..STREAM_LEN))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            starts(0, 1),
            starts(0, 1),
            "a run's starts replay from its seed"
        );
        assert_ne!(
            starts(0, 0),
            starts(0, 1),
            "the warm-up and the first round"
        );
        assert_ne!(starts(0, 1), starts(0, 2), "two rounds");
        assert_ne!(starts(0, 1), starts(1, 1), "two threads of a round");
    }

    #[test]
    fn recovery_is_the_first_three_windows_back_near_the_second_before() {
        // Ten windows of 10 before a shift at 1 s, a dip, then back.
        let mut throughput = vec![10.0; 10];
        throughput.extend([2.0, 5.0, 9.5, 8.0, 9.5, 9.5, 9.5]);
        let up = |w: f64, steady: f64| w >= 0.9 * steady;
        // Windows 2-4 average 9.0: back 200 ms after the shift; one good window alone
        // (window 2) does not end the dip.
        assert_eq!(recovery_ms(&throughput, 1.0, up), 200.0);
        let mut items = vec![1.1; 10];
        items.extend([1.6, 1.3, 1.25, 1.2, 1.15, 1.1]);
        let down = |w: f64, steady: f64| w <= 1.1 * steady;
        // Windows 1-3 average 1.25, 2-4 average 1.20, within 10% of 1.1 (1.21).
        assert_eq!(recovery_ms(&items, 1.0, down), 200.0);
        let never = [vec![10.0; 10], vec![1.0; 5]].concat();
        assert!(recovery_ms(&never, 1.0, up).is_infinite());
    }
}
