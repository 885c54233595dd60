//! `hotkv-bench engine`: db_bench-style benchmarks of storage engines in-process
//! (the LSM engine against RocksDB and the memory engine), alternating engines round
//! by round with the same memory budget, bloom bits, sync policy and no compression.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use engine::{Engine, KeyRange, MemoryEngine};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::Serialize;
use workload::permutation::Permutation;
use workload::{Distribution, KeyChooser};

use crate::index_bench::median;

#[derive(clap::Args, Debug, Clone)]
pub struct EngineArgs {
    /// Engines, comma-separated: lsm, memory, rocksdb (rocksdb needs the feature).
    /// Ratios are against the first.
    #[arg(long = "engine", value_delimiter = ',', default_value = "lsm")]
    pub engines: Vec<String>,
    /// In order: fillrandom (load every key in random order), readrandom,
    /// readwhilewriting (readers beside one writer), overwrite, seekrandom (seek and
    /// read 10 entries).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fillrandom,readrandom,readwhilewriting,overwrite,seekrandom"
    )]
    pub benchmarks: Vec<String>,
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Reads per read benchmark (seekrandom does a tenth as many seeks), as db_bench's
    /// --reads [default: --keys].
    #[arg(long)]
    pub reads: Option<u64>,
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Key distribution of reads and overwrites: uniform or zipf:THETA (scrambled).
    #[arg(long, default_value = "uniform")]
    pub dist: Distribution,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Block cache size, the same for every engine.
    #[arg(long, default_value_t = 64 << 20)]
    pub cache_bytes: usize,
    /// Memtable size, the same for every engine (each may have 2 more frozen).
    #[arg(long, default_value_t = 64 << 20)]
    pub memtable_bytes: usize,
    /// always, everysec or no. RocksDB syncs each write under always and never
    /// otherwise (it has no once-a-second sync).
    #[arg(long, default_value = "no")]
    pub fsync: lsm::FsyncPolicy,
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Where the stores go (a fresh directory per engine and round, removed after).
    #[arg(long, default_value = "hotkv-bench-data")]
    pub dir: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Serialize, Debug, Clone)]
pub struct BenchmarkResult {
    pub engine: String,
    pub benchmark: String,
    /// Medians over rounds.
    pub ops_per_sec: f64,
    pub p99_micros: f64,
    /// Median over rounds of ops_per_sec / the first engine's in the same round.
    pub ratio: Option<f64>,
    pub rounds_ops_per_sec: Vec<f64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct EngineResult {
    pub engine: String,
    pub benchmarks: Vec<BenchmarkResult>,
    /// Bytes written to the log and tables per byte of keys and values written
    /// (median over rounds).
    pub write_amplification: Option<f64>,
    /// Bytes of files in the store per byte of live keys and values, after the run.
    pub space_amplification: f64,
    pub keys: u64,
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub dist: String,
    pub threads: usize,
    pub fsync: String,
}

fn open(name: &str, dir: &Path, args: &EngineArgs) -> Result<Box<dyn Engine>, String> {
    match name {
        "lsm" => lsm::Lsm::open(
            dir,
            lsm::Options {
                fsync: args.fsync,
                memtable_bytes: args.memtable_bytes,
                block_cache_bytes: args.cache_bytes,
                ..lsm::Options::default()
            },
        )
        .map(|e| Box::new(e) as Box<dyn Engine>)
        .map_err(|e| e.to_string()),
        "memory" => Ok(Box::new(MemoryEngine::new())),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => engine::RocksDbEngine::open(
            dir,
            &engine::RocksDbOptions {
                sync: args.fsync == lsm::FsyncPolicy::Always,
                memtable_bytes: args.memtable_bytes,
                block_cache_bytes: args.cache_bytes,
                ..engine::RocksDbOptions::default()
            },
        )
        .map(|e| Box::new(e) as Box<dyn Engine>)
        .map_err(|e| e.to_string()),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" => Err(
            "rocksdb needs hotkv-bench built with --features rocksdb (see DEVELOPERS.md)".into(),
        ),
        other => Err(format!("unknown engine {other:?} (lsm, memory, rocksdb)")),
    }
}

/// Key `i` as `key_size` bytes: the zero-padded decimal index, so keys sort by index.
fn key(i: u64, key_size: usize) -> Vec<u8> {
    let digits = format!("{i:0key_size$}");
    digits.as_bytes()[digits.len() - key_size..].to_vec()
}

fn value(i: u64, round: u64, size: usize) -> Vec<u8> {
    let word = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ round).to_le_bytes();
    (0..size).map(|j| word[j % 8]).collect()
}

struct Measured {
    ops: u64,
    seconds: f64,
    latency: Histogram<u64>,
}

/// Runs `op(thread, i)` for `i` in `0..ops`, split over `threads`, timing each call.
fn measure(
    threads: usize,
    ops: u64,
    op: impl Fn(usize, u64) -> Result<(), String> + Sync,
) -> Result<Measured, String> {
    let started = Instant::now();
    let histograms = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let op = &op;
                s.spawn(move || -> Result<Histogram<u64>, String> {
                    let mut h =
                        Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram");
                    let mut i = t as u64;
                    while i < ops {
                        let start = Instant::now();
                        op(t, i)?;
                        h.saturating_record(start.elapsed().as_nanos() as u64);
                        i += threads as u64;
                    }
                    Ok(h)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread"))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let mut latency = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram");
    for h in histograms {
        latency.add(h).expect("same histogram bounds");
    }
    Ok(Measured {
        ops,
        seconds,
        latency,
    })
}

/// One engine's pass over the benchmarks.
struct EngineRun {
    /// (benchmark, ops/s, p99 µs)
    benchmarks: Vec<(String, f64, f64)>,
    write_amp: Option<f64>,
    space_amp: f64,
}

fn run_engine(name: &str, args: &EngineArgs, round: u64) -> Result<EngineRun, String> {
    let dir = args.dir.join(format!("{name}-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let db = open(name, &dir, args)?;
    let db = db.as_ref();
    let n = args.keys;
    let reads = args.reads.unwrap_or(n);
    let (ks, vs) = (args.key_size, args.value_size);
    let chooser = KeyChooser::new(&args.dist, n, args.seed);
    let order = Permutation::new(n, args.seed ^ 0x5eed);
    let rng = |t: usize, salt: u64| {
        SmallRng::seed_from_u64(args.seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9) ^ salt)
    };
    let mut written = 0u64;
    let mut results = Vec::new();
    for benchmark in &args.benchmarks {
        let measured = match benchmark.as_str() {
            "fillrandom" => {
                written += n;
                measure(args.threads, n, |_, i| {
                    let k = order.apply(i);
                    db.put(&key(k, ks), &value(k, round, vs))
                        .map_err(|e| e.to_string())
                })?
            }
            "overwrite" => {
                written += n;
                let rngs: Vec<_> = (0..args.threads)
                    .map(|t| std::sync::Mutex::new(rng(t, 1)))
                    .collect();
                measure(args.threads, n, |t, _| {
                    let k = chooser.choose(&mut *rngs[t].lock().unwrap(), n, 0);
                    db.put(&key(k, ks), &value(k, round + 1, vs))
                        .map_err(|e| e.to_string())
                })?
            }
            "readrandom" => {
                let rngs: Vec<_> = (0..args.threads)
                    .map(|t| std::sync::Mutex::new(rng(t, 2)))
                    .collect();
                measure(args.threads, reads, |t, _| {
                    let k = chooser.choose(&mut *rngs[t].lock().unwrap(), n, 0);
                    match db.get(&key(k, ks)).map_err(|e| e.to_string())? {
                        Some(_) => Ok(()),
                        None => Err(format!("key {k} missing after fillrandom")),
                    }
                })?
            }
            "readwhilewriting" => {
                let stop = AtomicBool::new(false);
                let writes = std::sync::atomic::AtomicU64::new(0);
                let rngs: Vec<_> = (0..args.threads)
                    .map(|t| std::sync::Mutex::new(rng(t, 3)))
                    .collect();
                let measured = std::thread::scope(|s| {
                    s.spawn(|| {
                        let mut r = rng(99, 4);
                        while !stop.load(Ordering::Relaxed) {
                            let k = chooser.choose(&mut r, n, 0);
                            if db.put(&key(k, ks), &value(k, round + 2, vs)).is_err() {
                                break;
                            }
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                    let measured = measure(args.threads, reads, |t, _| {
                        let k = chooser.choose(&mut *rngs[t].lock().unwrap(), n, 0);
                        db.get(&key(k, ks)).map(drop).map_err(|e| e.to_string())
                    });
                    stop.store(true, Ordering::Relaxed);
                    measured
                })?;
                written += writes.load(Ordering::Relaxed);
                measured
            }
            "seekrandom" => {
                let rngs: Vec<_> = (0..args.threads)
                    .map(|t| std::sync::Mutex::new(rng(t, 5)))
                    .collect();
                match db.range(KeyRange::all()) {
                    Err(engine::Error::Unsupported(_)) => continue,
                    Err(e) => return Err(e.to_string()),
                    Ok(_) => {}
                }
                measure(args.threads, (reads / 10).max(1), |t, _| {
                    let k = chooser.choose(&mut *rngs[t].lock().unwrap(), n, 0);
                    let mut cursor = db
                        .range(KeyRange::all().from(&key(k, ks)).limit(10))
                        .map_err(|e| e.to_string())?;
                    while cursor.next().map_err(|e| e.to_string())?.is_some() {}
                    Ok(())
                })?
            }
            other => return Err(format!("unknown benchmark {other:?}")),
        };
        results.push((
            benchmark.clone(),
            measured.ops as f64 / measured.seconds,
            measured.latency.value_at_quantile(0.99) as f64 / 1000.0,
        ));
    }
    let stats = db.stats();
    let stat = |name: &str| stats.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let user_bytes = written * (ks + vs) as u64;
    let write_amp = match (stat("wal_bytes"), stat("table_bytes_written")) {
        (Some(wal), Some(tables)) if user_bytes > 0 => {
            Some((wal + tables) as f64 / user_bytes as f64)
        }
        _ => None,
    };
    db.close().map_err(|e| e.to_string())?;
    let space_amp = dir_bytes(&dir) as f64 / (n * (ks + vs) as u64) as f64;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(EngineRun {
        benchmarks: results,
        write_amp,
        space_amp,
    })
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

pub fn run(args: EngineArgs) -> Result<Vec<EngineResult>, String> {
    if args.engines.is_empty() || args.threads == 0 || args.keys == 0 || args.rounds == 0 {
        return Err("need at least one engine, thread, key and round".into());
    }
    if !matches!(args.dist, Distribution::Uniform | Distribution::Zipf { .. }) {
        return Err("--dist is uniform or zipf:THETA".into());
    }
    // runs[engine][round]
    let mut runs: Vec<Vec<EngineRun>> = (0..args.engines.len()).map(|_| Vec::new()).collect();
    for round in 0..args.rounds {
        for j in 0..args.engines.len() {
            let e = (round + j) % args.engines.len();
            let name = &args.engines[e];
            eprintln!("round {}/{}: {name}", round + 1, args.rounds);
            runs[e].push(run_engine(name, &args, round as u64)?);
        }
    }
    let mut out = Vec::new();
    for (e, name) in args.engines.iter().enumerate() {
        let benchmarks = runs[e][0]
            .benchmarks
            .iter()
            .enumerate()
            .map(|(b, (benchmark, _, _))| {
                let ops: Vec<f64> = runs[e].iter().map(|r| r.benchmarks[b].1).collect();
                let p99: Vec<f64> = runs[e].iter().map(|r| r.benchmarks[b].2).collect();
                let ratios: Vec<f64> = runs[e]
                    .iter()
                    .zip(&runs[0])
                    .filter_map(|(mine, base)| {
                        let base = base.benchmarks.iter().find(|(n, _, _)| n == benchmark)?;
                        Some(mine.benchmarks[b].1 / base.1)
                    })
                    .collect();
                BenchmarkResult {
                    engine: name.clone(),
                    benchmark: benchmark.clone(),
                    ops_per_sec: median(&ops),
                    p99_micros: median(&p99),
                    ratio: (e > 0 && !ratios.is_empty()).then(|| median(&ratios)),
                    rounds_ops_per_sec: ops,
                }
            })
            .collect();
        let write_amps: Vec<f64> = runs[e].iter().filter_map(|r| r.write_amp).collect();
        out.push(EngineResult {
            engine: name.clone(),
            benchmarks,
            write_amplification: (!write_amps.is_empty()).then(|| median(&write_amps)),
            space_amplification: median(&runs[e].iter().map(|r| r.space_amp).collect::<Vec<_>>()),
            keys: args.keys,
            reads: args.reads.unwrap_or(args.keys),
            key_size: args.key_size,
            value_size: args.value_size,
            dist: format!("{:?}", args.dist),
            threads: args.threads,
            fsync: args.fsync.to_string(),
        });
    }
    let _ = std::fs::remove_dir(&args.dir);
    Ok(out)
}

pub fn print_table(results: &[EngineResult]) {
    println!(
        "{:<8} {:<17} {:>12} {:>9} {:>8}",
        "engine", "benchmark", "ops/s", "p99 us", "ratio"
    );
    for r in results {
        for b in &r.benchmarks {
            println!(
                "{:<8} {:<17} {:>12.0} {:>9.1} {:>8}",
                r.engine,
                b.benchmark,
                b.ops_per_sec,
                b.p99_micros,
                b.ratio.map_or("-".into(), |x| format!("{x:.2}"))
            );
        }
    }
    for r in results {
        println!(
            "{}: write amplification {}, space amplification {:.2}",
            r.engine,
            r.write_amplification
                .map_or("-".into(), |w| format!("{w:.2}")),
            r.space_amplification
        );
    }
}
