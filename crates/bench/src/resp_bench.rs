//! `hotkv-bench resp`: YCSB load on Redis-protocol servers over TCP, several servers
//! measured in alternating rounds and compared (seed 001's client/server evaluation).
//!
//! Each client is a thread with one connection that sends `--pipeline` requests, then
//! reads their replies; a batch's round trip is the latency of each request in it (as
//! redis-benchmark counts). Throughput is sampled every 100 ms for the timeline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use resp::{parse_frame, Frame, FrameLimits};
use serde::Serialize;
use workload::{Distribution, Generator, Op, Shared, Spec, Workload};

use crate::index_bench::median;

#[derive(Args, Debug)]
pub struct RespArgs {
    /// Servers to compare, comma-separated HOST:PORT; ratios are against the first.
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:6379")]
    pub addr: Vec<String>,
    /// YCSB workload: a, b, c, d or f (e's scans have no Redis string command).
    #[arg(long, default_value = "b")]
    pub workload: Workload,
    /// Key distribution (as for `index`); default: the workload's own.
    #[arg(long)]
    pub dist: Option<Distribution>,
    /// Keys loaded into every server before the first round.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Concurrent connections, one thread each.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Requests each client sends before reading the replies.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Rounds; each round measures every server once, in rotating order.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Seed for key popularity and the operation streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Skip loading (the servers already hold the keys).
    #[arg(long)]
    pub no_load: bool,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Draw throughput over time and the latency CDF of each server's median round
    /// into this SVG file.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
}

#[derive(Serialize, Debug, Clone)]
pub struct ServerResult {
    pub addr: String,
    /// Median over rounds.
    pub ops_per_sec: f64,
    pub rounds_ops_per_sec: Vec<f64>,
    /// Median over rounds of this server's throughput over the first server's.
    pub ratio_vs_first: f64,
    /// Latency percentiles in microseconds, medians over rounds.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Throughput every 100 ms in the round with the median throughput.
    pub timeline_ops_per_sec: Vec<f64>,
    /// `(latency µs, fraction of requests at or below it)` in that round.
    pub latency_cdf: Vec<(f64, f64)>,
    pub workload: String,
    pub dist: String,
    pub keys: u64,
    pub value_size: usize,
    pub clients: usize,
    pub pipeline: usize,
    pub seconds: f64,
}

struct Round {
    ops_per_sec: f64,
    hist: Histogram<u64>,
    timeline: Vec<f64>,
}

fn key(index: u64) -> Vec<u8> {
    format!("key:{index:012}").into_bytes()
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// One connection and its reply buffer.
struct Client {
    stream: TcpStream,
    input: Vec<u8>,
    limits: FrameLimits,
}

impl Client {
    fn connect(addr: &str) -> Result<Client, String> {
        let stream =
            TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Client {
            stream,
            input: Vec::with_capacity(64 * 1024),
            limits: FrameLimits::default(),
        })
    }

    /// Sends `requests` (holding `n` commands) and reads `n` replies; an error reply
    /// fails the benchmark, since it would measure the wrong thing.
    fn round_trip(&mut self, requests: &[u8], n: usize) -> Result<(), String> {
        self.stream.write_all(requests).map_err(|e| e.to_string())?;
        let mut got = 0;
        let mut at = 0;
        let mut buf = [0u8; 64 * 1024];
        while got < n {
            match parse_frame(&self.input[at..], &self.limits).map_err(|e| e.to_string())? {
                Some((frame, used)) => {
                    if let Frame::Error(e) = frame {
                        return Err(format!("server replied with an error: {e}"));
                    }
                    at += used;
                    got += 1;
                }
                None => {
                    let r = self.stream.read(&mut buf).map_err(|e| e.to_string())?;
                    if r == 0 {
                        return Err("server closed the connection".into());
                    }
                    self.input.extend_from_slice(&buf[..r]);
                }
            }
        }
        self.input.drain(..at);
        Ok(())
    }
}

fn load(addr: &str, keys: u64, value: &[u8]) -> Result<(), String> {
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (addr, value) = (addr.to_string(), value.to_vec());
            std::thread::spawn(move || -> Result<(), String> {
                let mut c = Client::connect(&addr)?;
                let mut batch = Vec::new();
                let mut n = 0;
                for i in (t..keys).step_by(4) {
                    command(&mut batch, &[b"SET", &key(i), &value]);
                    n += 1;
                    if n == 1000 {
                        c.round_trip(&batch, n)?;
                        batch.clear();
                        n = 0;
                    }
                }
                if n > 0 {
                    c.round_trip(&batch, n)?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().map_err(|_| "loader panicked".to_string())??;
    }
    Ok(())
}

fn measure(args: &RespArgs, addr: &str, spec: &Spec, round: usize) -> Result<Round, String> {
    let value = vec![b'v'; args.value_size];
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let shared = Shared::new(args.keys);
    let clients = (0..args.clients)
        .map(|_| Client::connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let handles: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(c, mut client)| {
            let mut generator = Generator::new(
                spec.clone(),
                shared.clone(),
                args.seed,
                (round * args.clients + c) as u64,
            );
            let (stop, ops, value, pipeline) =
                (stop.clone(), ops.clone(), value.clone(), args.pipeline);
            std::thread::spawn(move || -> Result<Histogram<u64>, String> {
                let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
                let mut batch = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    batch.clear();
                    let mut commands = 0;
                    for _ in 0..pipeline {
                        match generator.next().expect("endless") {
                            Op::Read(k) => command(&mut batch, &[b"GET", &key(k)]),
                            Op::Update(k) | Op::Insert(k) => {
                                command(&mut batch, &[b"SET", &key(k), &value])
                            }
                            Op::ReadModifyWrite(k) => {
                                command(&mut batch, &[b"GET", &key(k)]);
                                command(&mut batch, &[b"SET", &key(k), &value]);
                                commands += 1;
                            }
                            Op::Scan(..) => unreachable!("workload e is refused"),
                        }
                        commands += 1;
                    }
                    let start = Instant::now();
                    client.round_trip(&batch, commands)?;
                    let us = start.elapsed().as_micros().max(1) as u64;
                    hist.record_n(us.min(60_000_000), pipeline as u64)
                        .expect("in bounds");
                    ops.fetch_add(pipeline as u64, Ordering::Relaxed);
                }
                Ok(hist)
            })
        })
        .collect();
    let start = Instant::now();
    let mut timeline = Vec::new();
    let mut last = 0;
    let ticks = (args.seconds * 10.0).round().max(1.0) as usize;
    let progress = crate::progress::bar(ticks as u64, &format!("round {} {addr}", round + 1));
    for t in 1..=ticks {
        let due = start + Duration::from_millis(100 * t as u64);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let now = ops.load(Ordering::Relaxed);
        timeline.push((now - last) as f64 * 10.0);
        last = now;
        progress.inc(1);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let total = ops.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    progress.finish_and_clear();
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    for h in handles {
        let h = h
            .join()
            .map_err(|_| "client thread panicked".to_string())??;
        hist.add(h).map_err(|e| e.to_string())?;
    }
    Ok(Round {
        ops_per_sec: total as f64 / elapsed,
        hist,
        timeline,
    })
}

pub fn run(args: RespArgs) -> Result<Vec<ServerResult>, String> {
    if args.workload == Workload::E {
        return Err("workload e is 95% scans, which Redis strings have no command for".into());
    }
    if args.clients == 0 || args.pipeline == 0 || args.rounds == 0 || args.addr.is_empty() {
        return Err("--clients, --pipeline, --rounds and --addr need at least one".into());
    }
    if let Some(plot) = &args.plot {
        if plot.extension().and_then(|e| e.to_str()) != Some("svg") {
            return Err(format!(
                "--plot draws SVG (no plotting library or fonts needed): name the file .svg, not {}",
                plot.display()
            ));
        }
    }
    let dist = args
        .dist
        .clone()
        .unwrap_or_else(|| args.workload.default_distribution());
    let spec = Spec::new(args.workload, dist.clone(), args.keys);
    if !args.no_load {
        let value = vec![b'v'; args.value_size];
        for addr in &args.addr {
            eprintln!("loading {} keys into {addr}", args.keys);
            load(addr, args.keys, &value)?;
        }
    }
    let n = args.addr.len();
    let mut rounds: Vec<Vec<Round>> = (0..n).map(|_| Vec::new()).collect();
    for r in 0..args.rounds {
        for i in 0..n {
            let s = (i + r) % n;
            let round = measure(&args, &args.addr[s], &spec, r)?;
            eprintln!(
                "round {r} {:<22} {:>12.0} ops/s",
                args.addr[s], round.ops_per_sec
            );
            rounds[s].push(round);
        }
    }
    let results = (0..n)
        .map(|s| {
            let runs = &rounds[s];
            let ops: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
            let ratios: Vec<f64> = runs
                .iter()
                .zip(&rounds[0])
                .map(|(a, b)| a.ops_per_sec / b.ops_per_sec)
                .collect();
            let pct = |q: f64| {
                median(
                    &runs
                        .iter()
                        .map(|r| r.hist.value_at_quantile(q) as f64)
                        .collect::<Vec<_>>(),
                )
            };
            let mid = median(&ops);
            let typical = runs
                .iter()
                .min_by(|a, b| {
                    (a.ops_per_sec - mid)
                        .abs()
                        .total_cmp(&(b.ops_per_sec - mid).abs())
                })
                .expect("at least one round");
            let latency_cdf = typical
                .hist
                .iter_quantiles(1)
                .map(|v| (v.value_iterated_to() as f64, v.quantile_iterated_to()))
                .collect();
            ServerResult {
                addr: args.addr[s].clone(),
                ops_per_sec: mid,
                rounds_ops_per_sec: ops,
                ratio_vs_first: median(&ratios),
                p50_us: pct(0.5),
                p99_us: pct(0.99),
                p999_us: pct(0.999),
                timeline_ops_per_sec: typical.timeline.clone(),
                latency_cdf,
                workload: format!("{:?}", args.workload).to_lowercase(),
                dist: dist.to_string(),
                keys: args.keys,
                value_size: args.value_size,
                clients: args.clients,
                pipeline: args.pipeline,
                seconds: args.seconds,
            }
        })
        .collect();
    Ok(results)
}

pub fn print_table(results: &[ServerResult]) {
    println!(
        "{:<22} {:>12} {:>9} {:>9} {:>9} {:>9}",
        "server", "ops/s", "vs first", "p50 µs", "p99 µs", "p999 µs"
    );
    for r in results {
        println!(
            "{:<22} {:>12.0} {:>9.2} {:>9.0} {:>9.0} {:>9.0}",
            r.addr, r.ops_per_sec, r.ratio_vs_first, r.p50_us, r.p99_us, r.p999_us
        );
    }
}
