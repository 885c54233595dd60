//! `hotkv-bench resp`: YCSB load on Redis-protocol servers over TCP, several servers
//! measured in alternating rounds and compared (seed 001's client/server evaluation).
//!
//! Connections are driven by `--client-threads` event loops (a single-threaded tokio
//! runtime each), as redis-benchmark and memtier drive theirs: a thread per connection
//! spends more CPU switching threads than the server spends answering, and on a small
//! machine that CPU is taken from the servers being measured. Each connection sends
//! `--pipeline` requests, then reads their replies; a batch's round trip is the latency
//! of each request in it (as redis-benchmark counts). Throughput is sampled every 100 ms
//! for the timeline. Each round's operations are drawn before it starts ([`draw`]), so
//! the draws' CPU is not taken from the servers while they are measured.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;
use resp::{parse_frame, Frame, FrameLimits};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
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
    /// Concurrent connections.
    #[arg(long, default_value_t = 50)]
    pub clients: usize,
    /// Threads driving the connections (each an event loop over its share of them).
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
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
    pub client_threads: usize,
    pub pipeline: usize,
    pub seconds: f64,
}

struct Round {
    ops_per_sec: f64,
    hist: Histogram<u64>,
    timeline: Vec<f64>,
}

// The client's own CPU is taken from the servers it measures on a small machine, so
// requests are built and replies read without `format!` or a frame per reply.

/// `n` in decimal, zero-padded to `width` digits (at most 20).
fn push_decimal(out: &mut Vec<u8>, mut n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i.min(digits.len() - width)..]);
}

/// Key `index` (`key:` and at least 12 digits) in `buf`, which it replaces.
fn key(buf: &mut Vec<u8>, index: u64) -> &[u8] {
    buf.clear();
    buf.extend_from_slice(b"key:");
    push_decimal(buf, index, 12);
    buf
}

fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    push_decimal(out, args.len() as u64, 1);
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        push_decimal(out, a.len() as u64, 1);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A command on one key of [`key`]'s form, its bytes made once around the key's
/// digits: a request is the two halves and the digits between them, where [`command`]
/// wrote each length and each argument anew (~10% of the client's CPU at 16 requests
/// per round trip). Other arguments follow the key.
struct KeyedCommand {
    /// Through `key:`.
    before: Vec<u8>,
    /// From the key's `\r\n` on.
    after: Vec<u8>,
    name: Vec<u8>,
    rest: Vec<Vec<u8>>,
}

/// Keys below this have [`key`]'s 12 digits, the length the halves were made for.
const TWELVE_DIGITS: u64 = 1_000_000_000_000;

impl KeyedCommand {
    fn new(name: &[u8], rest: &[&[u8]]) -> KeyedCommand {
        let placeholder = key(&mut Vec::new(), 0).to_vec();
        let mut whole = Vec::new();
        let args: Vec<&[u8]> = [name, &placeholder[..]]
            .into_iter()
            .chain(rest.iter().copied())
            .collect();
        command(&mut whole, &args);
        // The name comes first and is no key; the first match is the key.
        let at = whole
            .windows(placeholder.len())
            .position(|w| w == placeholder)
            .expect("the key is in its command")
            + b"key:".len();
        KeyedCommand {
            before: whole[..at].to_vec(),
            after: whole[at + 12..].to_vec(),
            name: name.to_vec(),
            rest: rest.iter().map(|a| a.to_vec()).collect(),
        }
    }

    /// Appends the command on key `index` to `out`.
    fn push(&self, out: &mut Vec<u8>, index: u64) {
        if index >= TWELVE_DIGITS {
            let mut key_buf = Vec::new();
            let args: Vec<&[u8]> = [&self.name[..], key(&mut key_buf, index)]
                .into_iter()
                .chain(self.rest.iter().map(Vec::as_slice))
                .collect();
            return command(out, &args);
        }
        out.extend_from_slice(&self.before);
        push_decimal(out, index, 12);
        out.extend_from_slice(&self.after);
    }
}

/// What [`quick_reply`] found at the front of a buffer.
#[derive(Debug, PartialEq)]
enum Quick {
    /// A reply of this many bytes.
    Reply(usize),
    /// The start of one, not yet whole.
    Incomplete,
    /// Something the full parser must judge (an error, a null, an aggregate, ...).
    Other,
}

/// The replies SET and GET give, a simple string or a bulk string, measured without
/// building a frame.
fn quick_reply(buf: &[u8], max_bulk_len: usize) -> Quick {
    let line_end = |from: usize| match buf[from..].iter().position(|&b| b == b'\r') {
        Some(i) if buf.get(from + i + 1).is_none() => Err(Quick::Incomplete),
        Some(i) if buf[from + i + 1] == b'\n' => Ok(from + i),
        Some(_) => Err(Quick::Other),
        None => Err(Quick::Incomplete),
    };
    match buf.first() {
        None => Quick::Incomplete,
        Some(b'+') => match line_end(1) {
            Ok(cr) => Quick::Reply(cr + 2),
            Err(q) => q,
        },
        Some(b'$') => {
            let cr = match line_end(1) {
                Ok(cr) => cr,
                Err(q) => return q,
            };
            let digits = &buf[1..cr];
            if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
                return Quick::Other;
            }
            let len = digits
                .iter()
                .fold(0usize, |n, d| n * 10 + usize::from(d - b'0'));
            if len > max_bulk_len {
                return Quick::Other;
            }
            let end = cr + 2 + len + 2;
            if buf.len() < end {
                Quick::Incomplete
            } else if &buf[end - 2..end] == b"\r\n" {
                Quick::Reply(end)
            } else {
                Quick::Other
            }
        }
        Some(_) => Quick::Other,
    }
}

/// One connection and its reply buffer.
struct Connection {
    stream: TcpStream,
    input: Vec<u8>,
    limits: FrameLimits,
}

/// Connects with the standard library, so every connection is open before a round's
/// clock starts; `Connection::new` hands it to the event loop that will drive it.
fn connect(addr: &str) -> Result<std::net::TcpStream, String> {
    let stream =
        std::net::TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(stream)
}

impl Connection {
    /// Must run inside the tokio runtime that will drive the connection.
    fn new(stream: std::net::TcpStream) -> Result<Connection, String> {
        Ok(Connection {
            stream: TcpStream::from_std(stream).map_err(|e| e.to_string())?,
            input: Vec::with_capacity(64 * 1024),
            limits: FrameLimits::default(),
        })
    }

    /// Sends `requests` (holding `n` commands) and reads `n` replies; an error reply
    /// fails the benchmark, since it would measure the wrong thing.
    async fn round_trip(&mut self, requests: &[u8], n: usize) -> Result<(), String> {
        self.stream
            .write_all(requests)
            .await
            .map_err(|e| e.to_string())?;
        let mut got = 0;
        let mut at = 0;
        while got < n {
            let quick = quick_reply(&self.input[at..], self.limits.max_bulk_len);
            let parsed = match quick {
                Quick::Reply(used) => Some(used),
                Quick::Incomplete => None,
                Quick::Other => {
                    match parse_frame(&self.input[at..], &self.limits).map_err(|e| e.to_string())? {
                        Some((Frame::Error(e), _)) => {
                            return Err(format!("server replied with an error: {e}"))
                        }
                        Some((_, used)) => Some(used),
                        None => None,
                    }
                }
            };
            match parsed {
                Some(used) => {
                    at += used;
                    got += 1;
                }
                None => {
                    self.input.reserve(16 * 1024);
                    let r = self
                        .stream
                        .read_buf(&mut self.input)
                        .await
                        .map_err(|e| e.to_string())?;
                    if r == 0 {
                        return Err("server closed the connection".into());
                    }
                }
            }
        }
        self.input.drain(..at);
        Ok(())
    }
}

/// Runs `connections` on `threads` event loops: each thread builds a single-threaded
/// runtime and drives its share with `drive`, whose results come back in no set order.
fn on_event_loops<T, F, Fut>(
    connections: Vec<std::net::TcpStream>,
    threads: usize,
    drive: F,
) -> Vec<std::thread::JoinHandle<Result<Vec<T>, String>>>
where
    T: Send + 'static,
    F: Fn(usize, Connection) -> Fut + Send + Clone + 'static,
    Fut: std::future::Future<Output = Result<T, String>> + 'static,
{
    let mut shares: Vec<Vec<(usize, std::net::TcpStream)>> =
        (0..threads).map(|_| Vec::new()).collect();
    for (i, c) in connections.into_iter().enumerate() {
        shares[i % threads].push((i, c));
    }
    shares
        .into_iter()
        .map(|share| {
            let drive = drive.clone();
            std::thread::spawn(move || -> Result<Vec<T>, String> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build()
                    .map_err(|e| format!("cannot start an event loop: {e}"))?;
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    let tasks: Vec<_> = share
                        .into_iter()
                        .map(|(i, stream)| {
                            let drive = drive.clone();
                            tokio::task::spawn_local(async move {
                                drive(i, Connection::new(stream)?).await
                            })
                        })
                        .collect();
                    let mut out = Vec::with_capacity(tasks.len());
                    for t in tasks {
                        out.push(t.await.map_err(|e| format!("client task failed: {e}"))??);
                    }
                    Ok(out)
                })
            })
        })
        .collect()
}

fn join_all<T>(
    handles: Vec<std::thread::JoinHandle<Result<Vec<T>, String>>>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for h in handles {
        out.extend(
            h.join()
                .map_err(|_| "client thread panicked".to_string())??,
        );
    }
    Ok(out)
}

const LOADERS: u64 = 4;

fn load(addr: &str, keys: u64, value: &[u8]) -> Result<(), String> {
    let connections = (0..LOADERS)
        .map(|_| connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let value = Arc::new(value.to_vec());
    let handles = on_event_loops(connections, 1, move |t, mut c| {
        let value = value.clone();
        async move {
            let (mut batch, mut key_buf) = (Vec::new(), Vec::new());
            let mut n = 0;
            for i in (t as u64..keys).step_by(LOADERS as usize) {
                command(&mut batch, &[b"SET", key(&mut key_buf, i), &value]);
                n += 1;
                if n == 1000 {
                    c.round_trip(&batch, n).await?;
                    batch.clear();
                    n = 0;
                }
            }
            if n > 0 {
                c.round_trip(&batch, n).await?;
            }
            Ok(())
        }
    });
    join_all(handles).map(|_| ())
}

/// Operations drawn ahead of a round, split evenly over its connections, each of which
/// replays its share in a loop (one pass is about as long as a 5-second round at 1.2M
/// requests/s, about what this machine serves). Drawing as the requests went out took
/// ~20% of the client's CPU (a zipf draw computes a logarithm and an exponential, and
/// the key's permutation a few multiplications), which on a machine the client shares
/// with the server is taken from the server being measured; BENCHMARKS.md, session 81.
/// 16 bytes an operation: 128 MB.
const ROUND_OPS: usize = 1 << 23;

/// The operations of round `round` for `clients` connections, `per_connection` each:
/// connection `c` replays the generator stream `round * clients + c`, so every server
/// measured in a round is sent the same requests. Drawn on every core.
fn draw(
    spec: &Spec,
    clients: usize,
    per_connection: usize,
    seed: u64,
    round: usize,
) -> Vec<Arc<[Op]>> {
    let shared = Shared::new(spec.keys);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = clients.div_ceil(threads);
    let mut streams: Vec<Option<Arc<[Op]>>> = vec![None; clients];
    std::thread::scope(|scope| {
        for (t, share) in streams.chunks_mut(chunk).enumerate() {
            let shared = shared.clone();
            scope.spawn(move || {
                for (i, slot) in share.iter_mut().enumerate() {
                    let stream = (round * clients + t * chunk + i) as u64;
                    let generator = Generator::new(spec.clone(), shared.clone(), seed, stream);
                    *slot = Some(generator.take(per_connection).collect());
                }
            });
        }
    });
    streams
        .into_iter()
        .map(|s| s.expect("every connection's stream drawn"))
        .collect()
}

fn measure(
    args: &RespArgs,
    addr: &str,
    streams: &[Arc<[Op]>],
    round: usize,
) -> Result<Round, String> {
    let value = Arc::new(vec![b'v'; args.value_size]);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let connections = (0..args.clients)
        .map(|_| connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    let pipeline = args.pipeline;
    let streams = streams.to_vec();
    let drive = {
        let (stop, ops) = (stop.clone(), ops.clone());
        move |c: usize, mut connection: Connection| {
            let stream = streams[c].clone();
            let (stop, ops, value) = (stop.clone(), ops.clone(), value.clone());
            async move {
                let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
                let get = KeyedCommand::new(b"GET", &[]);
                let set = KeyedCommand::new(b"SET", &[&value]);
                let mut batch = Vec::new();
                let mut next = stream.iter().cycle();
                while !stop.load(Ordering::Relaxed) {
                    batch.clear();
                    let mut commands = 0;
                    for _ in 0..pipeline {
                        match *next.next().expect("a stream holds at least one operation") {
                            Op::Read(k) => get.push(&mut batch, k),
                            Op::Update(k) | Op::Insert(k) => set.push(&mut batch, k),
                            Op::ReadModifyWrite(k) => {
                                get.push(&mut batch, k);
                                set.push(&mut batch, k);
                                commands += 1;
                            }
                            Op::Scan(..) => unreachable!("workload e is refused"),
                        }
                        commands += 1;
                    }
                    let start = Instant::now();
                    connection.round_trip(&batch, commands).await?;
                    let us = start.elapsed().as_micros().max(1) as u64;
                    hist.record_n(us.min(60_000_000), pipeline as u64)
                        .expect("in bounds");
                    ops.fetch_add(pipeline as u64, Ordering::Relaxed);
                }
                Ok(hist)
            }
        }
    };
    let handles = on_event_loops(connections, args.client_threads, drive);
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
    for h in join_all(handles)? {
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
    if args.clients == 0
        || args.client_threads == 0
        || args.pipeline == 0
        || args.rounds == 0
        || args.addr.is_empty()
    {
        return Err(
            "--clients, --client-threads, --pipeline, --rounds and --addr need at least one".into(),
        );
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
        let per_connection = (ROUND_OPS / args.clients).max(1);
        let streams = draw(&spec, args.clients, per_connection, args.seed, r);
        for i in 0..n {
            let s = (i + r) % n;
            let round = measure(&args, &args.addr[s], &streams, r)?;
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
                client_threads: args.client_threads,
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

#[cfg(test)]
mod tests {
    use super::*;
    use resp::Protocol;

    #[test]
    fn keys_and_commands_are_the_bytes_format_and_the_encoder_make() {
        let mut buf = Vec::new();
        for index in [0, 7, 999_999, 999_999_999_999, 1_000_000_000_000, u64::MAX] {
            assert_eq!(key(&mut buf, index), format!("key:{index:012}").as_bytes());
        }
        let value = vec![b'v'; 1000];
        for args in [
            vec![&b"GET"[..], b"key:000000000001"],
            vec![b"SET", b"key:000000000002", &value],
            vec![b"SET", b"", b"\r\n"],
        ] {
            let mut out = Vec::new();
            command(&mut out, &args);
            assert_eq!(out, Frame::command(&args).to_bytes(Protocol::Resp2));
        }
        let (get, set) = (
            KeyedCommand::new(b"GET", &[]),
            KeyedCommand::new(b"SET", &[&value]),
        );
        for index in [0, 42, TWELVE_DIGITS - 1, TWELVE_DIGITS, u64::MAX] {
            let k = format!("key:{index:012}");
            let mut out = b"before".to_vec();
            get.push(&mut out, index);
            set.push(&mut out, index);
            let mut expected = b"before".to_vec();
            expected.extend(Frame::command([b"GET", k.as_bytes()]).to_bytes(Protocol::Resp2));
            expected
                .extend(Frame::command([b"SET", k.as_bytes(), &value]).to_bytes(Protocol::Resp2));
            assert_eq!(out, expected, "{index}");
        }
    }

    /// A round's streams are its connections' generator streams, whichever thread drew
    /// them, so all servers of a round get the same requests and rounds differ.
    #[test]
    fn each_connection_replays_its_own_generator_stream() {
        let spec = Spec::new(Workload::A, Distribution::Zipf { theta: 1.22 }, 1000);
        for clients in [1, 2, 3, 7] {
            for round in [0, 1] {
                let streams = draw(&spec, clients, 50, 9, round);
                assert_eq!(streams.len(), clients);
                for (c, stream) in streams.iter().enumerate() {
                    let generator = Generator::new(
                        spec.clone(),
                        Shared::new(1000),
                        9,
                        (round * clients + c) as u64,
                    );
                    assert_eq!(
                        &stream[..],
                        &generator.take(50).collect::<Vec<_>>()[..],
                        "{clients} {round} {c}"
                    );
                }
            }
            assert_ne!(
                draw(&spec, clients, 50, 9, 0)[0],
                draw(&spec, clients, 50, 9, 1)[0]
            );
        }
    }

    /// On every prefix of replies of each kind, the quick reader agrees with the full
    /// parser whenever it answers: a whole reply of the same length, or not yet whole.
    #[test]
    fn quick_replies_agree_with_the_parser_on_every_prefix() {
        let replies: [&[u8]; 9] = [
            b"+OK\r\n",
            b"$3\r\nfoo\r\n",
            b"$0\r\n\r\n",
            b"$6\r\na\r\nb\r\n\r\n",
            b"$-1\r\n",
            b"-ERR wrong\r\n",
            b":12\r\n",
            b"*2\r\n$1\r\na\r\n+b\r\n",
            b"$3\r\nfoox\r\n",
        ];
        let limits = FrameLimits::default();
        for reply in replies {
            let mut stream = reply.to_vec();
            stream.extend_from_slice(b"+NEXT\r\n");
            for end in 0..=stream.len() {
                let prefix = &stream[..end];
                let parsed = parse_frame(prefix, &limits);
                match quick_reply(prefix, limits.max_bulk_len) {
                    Quick::Reply(n) => assert_eq!(
                        parsed
                            .as_ref()
                            .ok()
                            .and_then(|p| p.as_ref().map(|(_, n)| *n)),
                        Some(n),
                        "{prefix:?}"
                    ),
                    Quick::Incomplete => {
                        assert!(matches!(parsed, Ok(None)), "{prefix:?}: {parsed:?}")
                    }
                    Quick::Other => {}
                }
            }
            let whole = quick_reply(reply, limits.max_bulk_len);
            let simple = reply.starts_with(b"+") || reply.starts_with(b"$") && reply[1] != b'-';
            if simple && reply != b"$3\r\nfoox\r\n" {
                assert_eq!(whole, Quick::Reply(reply.len()), "{reply:?}");
            } else {
                assert_eq!(whole, Quick::Other, "{reply:?}");
            }
        }
    }
}
