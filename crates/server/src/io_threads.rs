//! The threads that serve connections. Each runs its own single-threaded tokio runtime;
//! a connection is served on one of them at a time, from read to reply.
//!
//! Why not tokio's multi-threaded scheduler: there a connection's task may be woken on
//! one core and stolen by another, and every wakeup goes through shared run queues; for
//! a request that costs a few hundred nanoseconds of work, that bookkeeping and the
//! cache lines it moves are a large share. Pinning connections keeps each request on one
//! core from read to reply, as Redis's io-threads and memcached's workers do. Commands
//! still reach the store directly: the index is lock-free, so threads need no hand-off.
//!
//! How many of the threads serve is decided by load, as Redis turns its io threads off
//! when few clients wait. A second thread pays only when one thread is what holds the
//! clients back: when they are the limit (a load generator on the same cores, a cheap
//! request), each of two threads finds little ready, sleeps after nearly every batch
//! and takes a core the clients need, and two serve fewer requests than one
//! (BENCHMARKS.md, "two io threads against one"). So connections start on one thread;
//! when it stays busy, the [`Balancer`] spreads them over all and keeps that only if
//! the request rate rose; when the load falls, it gathers them back. A connection
//! moves between batches (see [`Place::departure`]), its socket registered anew on the
//! thread it moves to.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

pub struct IoThreads {
    placement: Arc<Placement>,
    stops: Vec<oneshot::Sender<()>>,
    joins: Vec<std::thread::JoinHandle<()>>,
    /// Dropped to stop the balancer, which is then joined.
    balancer: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

/// The threads as connections see them.
struct Placement {
    threads: Box<[CachePadded<IoThread>]>,
    /// New and moving connections go to the first `active` threads.
    active: AtomicUsize,
    /// Connections moved between threads since the start.
    moves: AtomicU64,
}

struct IoThread {
    handle: Handle,
    /// Connections this thread serves now.
    live: AtomicUsize,
    /// How many of them the balancer asked to move elsewhere.
    leaving: AtomicUsize,
    /// Requests its connections ran.
    requests: AtomicU64,
    /// `/proc/<pid>/task/<tid>/schedstat`, where Linux keeps the time the thread ran
    /// and waited to run; unset where there is none, and then the balancer keeps
    /// every thread serving.
    schedstat: OnceLock<PathBuf>,
}

/// How many threads serve now, for INFO.
pub struct ActiveThreads(Arc<Placement>);

impl ActiveThreads {
    pub fn get(&self) -> usize {
        self.0.active.load(Ordering::Relaxed)
    }
}

/// A connection's thread.
#[derive(Clone)]
pub struct Place {
    placement: Arc<Placement>,
    on: usize,
}

/// A connection counted live on its thread from the moment the thread is chosen (so
/// that the next choice, a burst of accepts later, sees it) until this is dropped:
/// when the connection's task there ends, however it ends, or if it never starts.
pub struct Seat(Place);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.thread().live.fetch_sub(1, Ordering::Relaxed);
    }
}

impl IoThreads {
    /// Starts `n` threads (at least one), and with more than one the balancer.
    pub fn start(n: usize) -> std::io::Result<IoThreads> {
        IoThreads::launch(n, true)
    }

    fn launch(n: usize, balanced: bool) -> std::io::Result<IoThreads> {
        let n = n.max(1);
        let mut runtimes = Vec::with_capacity(n);
        for _ in 0..n {
            runtimes.push(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?,
            );
        }
        let placement = Arc::new(Placement {
            threads: runtimes
                .iter()
                .map(|r| {
                    CachePadded::new(IoThread {
                        handle: r.handle().clone(),
                        live: AtomicUsize::new(0),
                        leaving: AtomicUsize::new(0),
                        requests: AtomicU64::new(0),
                        schedstat: OnceLock::new(),
                    })
                })
                .collect(),
            active: AtomicUsize::new(1),
            moves: AtomicU64::new(0),
        });
        let mut io = IoThreads {
            placement: placement.clone(),
            stops: Vec::with_capacity(n),
            joins: Vec::with_capacity(n),
            balancer: None,
        };
        let (named, named_all) = mpsc::channel::<()>();
        for (i, runtime) in runtimes.into_iter().enumerate() {
            let (stop, stopped) = oneshot::channel::<()>();
            let (placement, named) = (placement.clone(), named.clone());
            io.joins.push(
                std::thread::Builder::new()
                    .name(format!("hotkv-io-{i}"))
                    .spawn(move || {
                        if let Ok(task) = std::fs::read_link("/proc/thread-self") {
                            let _ = placement.threads[i]
                                .schedstat
                                .set(PathBuf::from("/proc").join(task).join("schedstat"));
                        }
                        drop(named);
                        // Tasks spawned through the handle run while this thread drives
                        // the runtime; a dropped sender ends it as a sent stop does.
                        let _ = runtime.block_on(stopped);
                    })?,
            );
            io.stops.push(stop);
        }
        // Each thread has named its statistics (or found none) before the balancer
        // first reads them: the channel closes when every sender is gone.
        drop(named);
        while named_all.recv().is_ok() {}
        if n > 1 && balanced {
            let (stop, stopped) = mpsc::channel::<()>();
            let thread = std::thread::Builder::new()
                .name("hotkv-io-balance".into())
                .spawn(move || balance(&placement, &stopped))?;
            io.balancer = Some((stop, thread));
        }
        Ok(io)
    }

    /// Where a new connection is to be served: the active thread with the fewest.
    pub fn seat(&self) -> Seat {
        Place {
            on: self.placement.least_loaded(None),
            placement: self.placement.clone(),
        }
        .take_seat()
    }

    /// Threads serving connections now (1 while the load is light).
    #[cfg(test)]
    fn active(&self) -> usize {
        self.active_threads().get()
    }

    pub fn active_threads(&self) -> ActiveThreads {
        ActiveThreads(self.placement.clone())
    }

    /// Threads whose connections only the caller moves (`set_active`).
    #[cfg(test)]
    pub fn start_unbalanced(n: usize) -> std::io::Result<IoThreads> {
        IoThreads::launch(n, false)
    }

    #[cfg(test)]
    pub fn set_active(&self, k: usize) {
        self.placement.set_active(k);
    }

    /// Connections moved between threads since the start.
    #[cfg(test)]
    pub fn moves(&self) -> u64 {
        self.placement.moves.load(Ordering::Relaxed)
    }
}

impl Placement {
    /// The active thread serving the fewest connections, other than `except`; `except`
    /// itself if no other is active.
    fn least_loaded(&self, except: Option<usize>) -> usize {
        let active = self.active.load(Ordering::Relaxed).min(self.threads.len());
        (0..active)
            .filter(|&i| Some(i) != except)
            .min_by_key(|&i| self.threads[i].live.load(Ordering::Relaxed))
            .or(except)
            .unwrap_or(0)
    }

    /// Serves from the first `k` threads: the others' connections are asked to leave,
    /// and the busiest of the `k` give up what they hold above an even share.
    fn set_active(&self, k: usize) {
        let k = k.clamp(1, self.threads.len());
        self.active.store(k, Ordering::Relaxed);
        let live: Vec<usize> = self
            .threads
            .iter()
            .map(|s| s.live.load(Ordering::Relaxed))
            .collect();
        let share = live.iter().sum::<usize>().div_ceil(k);
        for (i, thread) in self.threads.iter().enumerate() {
            let leaving = if i < k {
                live[i].saturating_sub(share)
            } else {
                live[i]
            };
            thread.leaving.store(leaving, Ordering::Relaxed);
        }
    }
}

impl Place {
    fn thread(&self) -> &IoThread {
        &self.placement.threads[self.on]
    }

    fn take_seat(self) -> Seat {
        self.thread().live.fetch_add(1, Ordering::Relaxed);
        Seat(self)
    }

    /// Counts requests run on this thread: the balancer's measure of what serving
    /// more threads gained.
    pub fn count_requests(&self, n: u64) {
        if n > 0 {
            self.thread().requests.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Whether this thread serves other connections too.
    pub fn shared(&self) -> bool {
        self.thread().live.load(Ordering::Relaxed) > 1
    }

    /// Where the connection is to move, if the balancer asked one of this thread's
    /// to and none has answered yet. The caller moves between requests, with nothing
    /// of its own left on this thread (see `Connection::run`), by running itself on
    /// the returned seat.
    pub fn departure(&self) -> Option<Seat> {
        let thread = self.thread();
        // The common case, one load: nobody is asked to leave.
        if thread.leaving.load(Ordering::Relaxed) == 0 {
            return None;
        }
        thread
            .leaving
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()?;
        let to = self.placement.least_loaded(Some(self.on));
        if to == self.on {
            return None;
        }
        self.placement.moves.fetch_add(1, Ordering::Relaxed);
        Some(
            Place {
                placement: self.placement.clone(),
                on: to,
            }
            .take_seat(),
        )
    }
}

impl Seat {
    pub fn place(&self) -> &Place {
        &self.0
    }

    /// Runs `task` on the seat's thread, counted live there until it ends, and waits
    /// for its output (`None` if it panicked).
    pub async fn run<F>(self, task: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = self.0.thread().handle.clone();
        let output = handle
            .spawn(async move {
                let _seat = self;
                task.await
            })
            .await;
        output.ok()
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.balancer.take() {
            drop(stop);
            let _ = thread.join();
        }
        for stop in self.stops.drain(..) {
            let _ = stop.send(());
        }
        for thread in self.joins.drain(..) {
            let _ = thread.join();
        }
    }
}

/// How often the balancer looks.
const TICK: Duration = Duration::from_millis(100);

/// The balancer's loop, until `stopped`'s sender is dropped.
fn balance(placement: &Placement, stopped: &mpsc::Receiver<()>) {
    let threads = placement.threads.len();
    let mut balancer = Balancer::new(threads);
    let Some(first) = measure(placement) else {
        // No way to tell how busy a thread is: serve from every one, as a fixed pool
        // would.
        placement.set_active(threads);
        return;
    };
    let mut last = (Instant::now(), first);
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
        // A read that fails now (out of file descriptors, say) skips a tick.
        let Some(now) = measure(placement) else {
            continue;
        };
        let at = Instant::now();
        let elapsed = at.duration_since(last.0).as_nanos().max(1) as f64;
        let before = &last.1;
        let sample = Sample {
            demand: (0..threads)
                .map(|i| now.busy_ns[i].saturating_sub(before.busy_ns[i]) as f64 / elapsed)
                .collect(),
            parks: (0..threads)
                .map(|i| now.parks[i].saturating_sub(before.parks[i]))
                .collect(),
            rate: now.requests.saturating_sub(before.requests) as f64 * 1e9 / elapsed,
            connections: placement
                .threads
                .iter()
                .map(|s| s.live.load(Ordering::Relaxed))
                .sum(),
        };
        tracing::trace!(demand = ?sample.demand, parks = ?sample.parks, rate = sample.rate, "io threads");
        if let Some(k) = balancer.tick(&sample) {
            tracing::debug!(threads = k, demand = ?sample.demand, rate = sample.rate, "io threads rebalanced");
            placement.set_active(k);
        }
        last = (at, now);
    }
}

/// Counters read at one tick.
struct Reading {
    /// Per thread: nanoseconds it ran or waited to run.
    busy_ns: Vec<u64>,
    /// Per thread: times it found nothing to do and slept.
    parks: Vec<u64>,
    requests: u64,
}

fn measure(placement: &Placement) -> Option<Reading> {
    let mut busy_ns = Vec::with_capacity(placement.threads.len());
    for thread in placement.threads.iter() {
        let stat = std::fs::read_to_string(thread.schedstat.get()?).ok()?;
        let mut fields = stat.split_ascii_whitespace().map(|f| f.parse::<u64>());
        let (Some(Ok(ran)), Some(Ok(waited))) = (fields.next(), fields.next()) else {
            return None;
        };
        busy_ns.push(ran + waited);
    }
    let requests = placement
        .threads
        .iter()
        .map(|s| s.requests.load(Ordering::Relaxed))
        .sum();
    let parks = placement
        .threads
        .iter()
        .map(|s| s.handle.metrics().worker_park_count(0))
        .collect();
    Some(Reading {
        busy_ns,
        parks,
        requests,
    })
}

/// What the balancer sees of one tick.
struct Sample {
    /// Per thread, the share of the tick it ran or was ready to run: waiting for a
    /// core is demand too, or a thread that shares its core with the clients would
    /// never look busy.
    demand: Vec<f64>,
    /// Per thread, the times it slept for want of anything to do.
    parks: Vec<u64>,
    /// Requests run per second.
    rate: f64,
    connections: usize,
}

/// A lone thread this busy, that went to sleep at most `SATURATED_PARKS` times per
/// thousand requests, may be what holds the clients back. One that often finds
/// nothing to do is faster than its clients, however busy: on a machine they share,
/// it shares their cores. (Measured with redis-benchmark -P 16 -c 50: serving one
/// key, 3,000-5,000 parks a tick at 1.5M requests a second, about 27 a thousand;
/// a million keys, 50-80 at 400K-600K, about 1.4 a thousand.)
const SATURATED: f64 = 0.9;
const SATURATED_PARKS: f64 = 5.0;
/// Ticks in a row it must be so before all threads are tried.
const SATURATED_TICKS: u32 = 2;
/// Ticks of a trial measured, after one for the connections to move.
const TRIAL_TICKS: u32 = 2;
/// All threads serve only if they run this much more than one does: they cost more
/// CPU for the same requests.
const GAIN: f64 = 1.05;
/// Work below this (in threads' worth, all together) one thread serves.
const LIGHT: f64 = 0.5;
const LIGHT_TICKS: u32 = 5;
/// After a trial, none for this many ticks, doubling each time a trial keeps what
/// served before, up to `MAX_HOLD` (a load that one thread serves best, or all, pays
/// for a trial about once a minute), and back to the first when one changes it. A
/// trial costs: a million keys served by one thread instead of two run at 0.6-0.7x.
/// Another load is told apart by its rate and cost without trials (`CHANGE`), so
/// these only guard against what those miss.
const FIRST_HOLD: u64 = 50;
const MAX_HOLD: u64 = 640;
/// Another load ends a hold: a rate or a cost per request this many times higher or
/// lower than the trial found, for `CHANGED_TICKS` busy ticks in a row (not one:
/// redis-benchmark's tests, for one, each open their connections anew). The cost
/// tells loads apart that the rate alone does not: serving one key costs half what
/// a million do, at much the same rate.
const CHANGE: f64 = 1.5;
const CHANGED_TICKS: u32 = 3;
/// A trial of one thread starts only on two busy ticks whose rates are this close, the
/// two that make its `before`. Measured here (`hotkv-bench resp`, zipf 1.22, P16): a
/// steady load's 100 ms rates move 5% (median) to 19% (90th percentile) from one tick
/// to the next; a benchmark's round starting up climbs faster, and a trial begun on its
/// first ticks found one thread as good as two and kept it for a whole hold.
const STEADY: f64 = 1.2;

/// Requests a second, and the threads' worth of work they took (`Sample::demand`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Load {
    rate: f64,
    demand: f64,
}

impl Load {
    fn of(sample: &Sample) -> Load {
        Load {
            rate: sample.rate,
            demand: sample.demand.iter().sum(),
        }
    }

    fn add(self, other: Load) -> Load {
        Load {
            rate: self.rate + other.rate,
            demand: self.demand + other.demand,
        }
    }

    fn scaled(self, by: f64) -> Load {
        Load {
            rate: self.rate * by,
            demand: self.demand * by,
        }
    }

    /// Whether `self` looks like another load than `was`.
    fn differs(self, was: Load) -> bool {
        let cost = |l: Load| l.demand / l.rate.max(1.0);
        !within(self.rate, was.rate, CHANGE) || !within(cost(self), cost(was), CHANGE)
    }
}

/// Whether neither of `a` and `b` is more than `factor` times the other.
fn within(a: f64, b: f64, factor: f64) -> bool {
    a <= b * factor && b <= a * factor
}

/// Decides, tick by tick, whether one thread or all serve.
struct Balancer {
    threads: usize,
    state: State,
    tick: u64,
    /// The last two ticks' loads.
    recent: [Load; 2],
    /// The next hold's length, in ticks.
    hold: u64,
    /// No trial before this tick.
    held_until: u64,
    /// What the last trial measured of what it kept.
    held_load: Load,
    /// Busy ticks in a row that looked like another load.
    changed: u32,
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Serving {
    One,
    All,
}

#[derive(Debug, PartialEq)]
enum State {
    /// One thread serves; it has been saturated for `saturated` ticks.
    One { saturated: u32 },
    /// All threads serve; the load has been light for `light` ticks.
    All { light: u32 },
    /// `serving` serves, to see whether it runs more than the other did (`before`);
    /// `measured` sums the loads of the ticks measured so far; `interrupted` if one of
    /// them was light (the load stopped: the trial measured nothing).
    Trial {
        serving: Serving,
        ticks: u32,
        before: Load,
        measured: Load,
        interrupted: bool,
    },
}

impl Balancer {
    fn new(threads: usize) -> Balancer {
        Balancer {
            threads,
            state: State::One { saturated: 0 },
            tick: 0,
            recent: [Load::default(); 2],
            hold: FIRST_HOLD,
            held_until: 0,
            held_load: Load::default(),
            changed: 0,
        }
    }

    /// The number of threads to serve from, if it changes.
    fn tick(&mut self, sample: &Sample) -> Option<usize> {
        self.tick += 1;
        let load = Load::of(sample);
        self.recent = [self.recent[1], load];
        let light = load.demand < LIGHT;
        if self.tick < self.held_until && !light {
            if load.differs(self.held_load) {
                self.changed += 1;
            } else {
                self.changed = 0;
            }
            if self.changed >= CHANGED_TICKS {
                // What the last trial found says nothing of this load.
                self.held_until = self.tick;
                self.hold = FIRST_HOLD;
            }
        }
        let held = self.tick < self.held_until;
        let before = self.recent[0].add(self.recent[1]).scaled(0.5);
        match &mut self.state {
            State::One { saturated } => {
                let requests = sample.rate * TICK.as_secs_f64();
                if sample.demand[0] >= SATURATED
                    && sample.parks[0] as f64 * 1000.0 <= SATURATED_PARKS * requests
                    && sample.connections > 1
                {
                    *saturated += 1;
                } else {
                    *saturated = 0;
                }
                if held || *saturated < SATURATED_TICKS {
                    return None;
                }
                Some(self.try_serving(Serving::All, before))
            }
            State::All { light: light_ticks } => {
                if light {
                    *light_ticks += 1;
                } else {
                    *light_ticks = 0;
                }
                if *light_ticks >= LIGHT_TICKS {
                    return Some(self.settle(Serving::One));
                }
                // `before` must be one load: a tick just after a pause (a benchmark
                // between rounds) made half of it, and the trial then kept one thread
                // for a whole hold.
                if held || light || !self.steady() {
                    return None;
                }
                Some(self.try_serving(Serving::One, before))
            }
            State::Trial {
                serving,
                ticks,
                before,
                measured,
                interrupted,
            } => {
                *ticks += 1;
                if *ticks == 1 {
                    return None;
                }
                *measured = measured.add(load);
                *interrupted |= light;
                if *ticks <= TRIAL_TICKS {
                    return None;
                }
                let (serving, before) = (*serving, *before);
                if *interrupted {
                    // Back as before, free to try again once the load is back.
                    tracing::debug!(?serving, "io threads: a trial the load left");
                    self.held_until = self.tick;
                    let other = match serving {
                        Serving::All => Serving::One,
                        Serving::One => Serving::All,
                    };
                    return Some(self.settle(other));
                }
                let tried = measured.scaled(1.0 / f64::from(TRIAL_TICKS));
                let (one, all) = match serving {
                    Serving::All => (before, tried),
                    Serving::One => (tried, before),
                };
                let keep = if all.rate > GAIN * one.rate {
                    Serving::All
                } else {
                    Serving::One
                };
                tracing::debug!(?serving, ?one, ?all, ?keep, "io threads: a trial");
                if keep == serving {
                    self.hold = FIRST_HOLD;
                }
                self.held_until = self.tick + self.hold;
                self.changed = 0;
                if keep != serving {
                    // It changed nothing: held off longer next time.
                    self.hold = (self.hold * 2).min(MAX_HOLD);
                }
                self.held_load = match keep {
                    Serving::One => one,
                    Serving::All => all,
                };
                let threads = self.settle(keep);
                (keep != serving).then_some(threads)
            }
        }
    }

    /// Whether the last two ticks were busy with one load, at rates within `STEADY`.
    fn steady(&self) -> bool {
        let [a, b] = self.recent;
        a.demand >= LIGHT && b.demand >= LIGHT && within(a.rate, b.rate, STEADY)
    }

    /// Starts a trial of `serving`, the other having served `before`; returns the
    /// threads it serves from.
    fn try_serving(&mut self, serving: Serving, before: Load) -> usize {
        self.state = State::Trial {
            serving,
            ticks: 0,
            before,
            measured: Load::default(),
            interrupted: false,
        };
        self.threads_of(serving)
    }

    /// Settles on `serving`, its counts of saturated or light ticks begun afresh;
    /// returns the threads it serves from.
    fn settle(&mut self, serving: Serving) -> usize {
        self.state = match serving {
            Serving::One => State::One { saturated: 0 },
            Serving::All => State::All { light: 0 },
        };
        self.threads_of(serving)
    }

    fn threads_of(&self, serving: Serving) -> usize {
        match serving {
            Serving::One => 1,
            Serving::All => self.threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    fn thread_name() -> String {
        std::thread::current().name().unwrap_or("?").to_string()
    }

    #[test]
    fn connections_start_on_one_thread_and_spread_evenly_over_all() {
        let io = IoThreads::start(2).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (release, released) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        let mut hold_open = |io: &IoThreads| {
            let (seen, mut released) = (seen.clone(), released.clone());
            let seat = io.seat();
            tasks.push(runtime.spawn(async move {
                seat.run(async move {
                    seen.lock().unwrap().push(thread_name());
                    // Held open, as a connection is, so later ones see it as live.
                    let _ = released.wait_for(|r| *r).await;
                })
                .await
                .expect("the task ran")
            }));
        };
        let wait_live = |io: &IoThreads, n: usize| {
            while io
                .placement
                .threads
                .iter()
                .map(|s| s.live.load(Ordering::Relaxed))
                .sum::<usize>()
                < n
            {
                std::thread::yield_now();
            }
        };
        // The balancer starts with one thread; held at one here whatever it measures,
        // as nothing runs.
        for _ in 0..3 {
            hold_open(&io);
        }
        wait_live(&io, 3);
        assert_eq!(io.active(), 1);
        io.set_active(2);
        for _ in 0..4 {
            hold_open(&io);
        }
        wait_live(&io, 7);
        runtime.block_on(async {
            release.send(true).unwrap();
            for t in tasks {
                t.await.unwrap();
            }
        });
        let mut per_thread: HashMap<String, usize> = HashMap::new();
        for name in seen.lock().unwrap().iter() {
            *per_thread.entry(name.clone()).or_default() += 1;
        }
        // Three on the first; then the next four fill the second up to it, and then
        // alternate.
        let expected: HashMap<String, usize> =
            [("hotkv-io-0".to_string(), 4), ("hotkv-io-1".to_string(), 3)].into();
        assert_eq!(per_thread, expected);
        // Every task has ended, so no thread counts a live connection.
        assert!(io
            .placement
            .threads
            .iter()
            .all(|s| s.live.load(Ordering::Relaxed) == 0));
    }

    /// Tasks that move when asked, as connections do between steps: after each
    /// change of the active count the threads hold them evenly (or all on one), a
    /// task never runs on two threads at once, and no step is lost or run twice.
    #[test]
    fn tasks_asked_to_leave_move_to_the_active_threads() {
        const TASKS: usize = 12;
        // Fixed by the test alone: the balancer would see these tasks' busy loop.
        let io = IoThreads::start_unbalanced(2).unwrap();
        // Its own thread runs the tasks that wait on each segment, while this one
        // changes the active count.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let steps = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (steps, stopped) = (steps.clone(), stopped.clone());
                let mut seat = io.seat();
                runtime.spawn(async move {
                    let mut done = 0u64;
                    loop {
                        // Steps on one thread until asked to leave.
                        let segment = {
                            let (place, steps, stopped) =
                                (seat.place().clone(), steps.clone(), stopped.clone());
                            async move {
                                let thread = thread_name();
                                while !*stopped.borrow() {
                                    assert_eq!(thread_name(), thread, "a task moved by itself");
                                    done += 1;
                                    steps.fetch_add(1, Ordering::Relaxed);
                                    if let Some(to) = place.departure() {
                                        return (done, Some(to));
                                    }
                                    tokio::task::yield_now().await;
                                }
                                (done, None)
                            }
                        };
                        let (d, next) = seat.run(segment).await.expect("no panic");
                        done = d;
                        match next {
                            Some(to) => seat = to,
                            None => return done,
                        }
                    }
                })
            })
            .collect();
        let live = |io: &IoThreads| -> Vec<usize> {
            io.placement
                .threads
                .iter()
                .map(|s| s.live.load(Ordering::Relaxed))
                .collect()
        };
        let settled = |io: &IoThreads, want: &[usize]| {
            let deadline = Instant::now() + Duration::from_secs(20);
            while live(io) != want {
                assert!(
                    Instant::now() < deadline,
                    "live {:?}, want {want:?}",
                    live(io)
                );
                std::thread::yield_now();
            }
        };
        settled(&io, &[TASKS, 0]);
        for _ in 0..3 {
            io.set_active(2);
            settled(&io, &[TASKS / 2, TASKS / 2]);
            io.set_active(1);
            settled(&io, &[TASKS, 0]);
        }
        stop.send(true).unwrap();
        let done: u64 = runtime.block_on(async {
            let mut done = 0;
            for t in tasks {
                done += t.await.unwrap();
            }
            done
        });
        assert_eq!(done, steps.load(Ordering::Relaxed));
        assert_eq!(io.moves(), 6 * TASKS as u64 / 2);
    }

    fn sample(demand: &[f64], rate: f64) -> Sample {
        Sample {
            demand: demand.to_vec(),
            parks: vec![0; demand.len()],
            rate,
            connections: 50,
        }
    }

    /// Ticks `samples` through `b`, returning each tick's decision.
    fn run(b: &mut Balancer, samples: &[Sample]) -> Vec<Option<usize>> {
        samples.iter().map(|s| b.tick(s)).collect()
    }

    /// A trial's ticks, all alike.
    fn trial_of(s: impl Fn() -> Sample) -> Vec<Sample> {
        (0..=TRIAL_TICKS).map(|_| s()).collect()
    }

    const NO_CHANGE: [Option<usize>; 1 + TRIAL_TICKS as usize] = [None; 1 + TRIAL_TICKS as usize];

    #[test]
    fn a_saturated_thread_is_joined_by_the_others_when_that_pays() {
        let mut b = Balancer::new(2);
        let busy = || sample(&[0.97, 0.0], 400_000.0);
        assert_eq!(run(&mut b, &[sample(&[0.3, 0.0], 100_000.0)]), [None]);
        assert_eq!(run(&mut b, &[busy(), busy()]), [None, Some(2)]);
        // The tick the connections move is not measured; then 1.5x the rate.
        let spread = || sample(&[0.7, 0.7], 600_000.0);
        let mut ticks = trial_of(spread);
        ticks[0] = sample(&[0.5, 0.5], 1.0);
        assert_eq!(run(&mut b, &ticks), NO_CHANGE);
        assert_eq!(b.state, State::All { light: 0 });
        // A light load for LIGHT_TICKS gathers them back; a busy tick restarts the count.
        let idle = || sample(&[0.1, 0.1], 400_000.0);
        let mut decisions = run(&mut b, &[idle(), idle(), sample(&[0.4, 0.4], 400_000.0)]);
        decisions.extend(run(
            &mut b,
            &(0..LIGHT_TICKS).map(|_| idle()).collect::<Vec<_>>(),
        ));
        let mut expected = vec![None; 2 + LIGHT_TICKS as usize];
        expected.push(Some(1));
        assert_eq!(decisions, expected);
    }

    #[test]
    fn all_threads_are_tried_against_one_again_and_one_kept_when_it_serves_as_much() {
        let mut b = Balancer::new(2);
        let busy = || sample(&[0.97, 0.0], 400_000.0);
        let spread = || sample(&[0.7, 0.7], 600_000.0);
        run(&mut b, &[busy(), busy()]);
        run(&mut b, &trial_of(spread));
        assert_eq!(b.state, State::All { light: 0 });
        // The same load: one thread is tried again once the hold is over, and found
        // worse; held off again, the hold after twice as long.
        let decisions = run(
            &mut b,
            &(0..FIRST_HOLD).map(|_| spread()).collect::<Vec<_>>(),
        );
        assert_eq!(decisions.iter().flatten().collect::<Vec<_>>(), [&1]);
        assert_eq!(decisions.last(), Some(&Some(1)));
        let mut back = NO_CHANGE.to_vec();
        *back.last_mut().unwrap() = Some(2);
        assert_eq!(run(&mut b, &trial_of(busy)), back);
        assert_eq!(b.state, State::All { light: 0 });
        assert_eq!(
            (b.held_until, b.hold),
            (b.tick + FIRST_HOLD, 2 * FIRST_HOLD)
        );
        // The load changes to one that costs less a request, and that one thread
        // serves better: one is tried after CHANGED_TICKS, and kept.
        let cheaper = || sample(&[0.6, 0.6], 900_000.0);
        let decisions = run(&mut b, &[cheaper(), cheaper(), cheaper()]);
        assert_eq!(decisions, [None, None, Some(1)]);
        let alone = || sample(&[0.95, 0.0], 1_000_000.0);
        assert_eq!(run(&mut b, &trial_of(alone)), NO_CHANGE);
        assert_eq!(b.state, State::One { saturated: 0 });
    }

    #[test]
    fn a_trial_that_does_not_pay_is_held_off_longer_each_time() {
        let mut b = Balancer::new(2);
        let busy = || sample(&[0.95, 0.0], 1_000_000.0);
        let worse = || sample(&[0.5, 0.5], 850_000.0);
        let step = |b: &mut Balancer| {
            let s = match b.state {
                State::Trial { .. } => worse(),
                _ => busy(),
            };
            b.tick(&s)
        };
        let mut trials = Vec::new();
        for tick in 0..3000u64 {
            if step(&mut b) == Some(2) {
                trials.push(tick);
            }
        }
        // The trial's ticks, then the hold (FIRST_HOLD, twice that, four times ...
        // up to MAX_HOLD); the thread was saturated all along.
        let trial = 1 + u64::from(TRIAL_TICKS);
        let gaps: Vec<u64> = trials.windows(2).map(|w| w[1] - w[0]).collect();
        let doubling: Vec<u64> = (0..3).map(|i| trial + (FIRST_HOLD << i)).collect();
        assert_eq!(&gaps[..3], doubling);
        assert!(gaps.iter().all(|&g| g <= trial + MAX_HOLD));
        assert_eq!(*gaps.last().unwrap(), trial + MAX_HOLD);
        // Another load (more than double the rate) for CHANGED_TICKS busy ticks ends a
        // hold; idle ticks between do not count, nor break the count.
        while !(matches!(b.state, State::One { .. }) && b.tick + 10 < b.held_until) {
            step(&mut b);
        }
        let heavier = || sample(&[0.95, 0.0], 2_500_000.0);
        let idle = || sample(&[0.0, 0.0], 0.0);
        let decisions = run(&mut b, &[heavier(), idle(), heavier(), heavier()]);
        assert_eq!(decisions, [None, None, None, Some(2)]);
    }

    /// A trial compares two steady loads: none starts on the first busy tick after a
    /// quiet one (half of `before` would be the quiet tick), and one the load leaves
    /// counts for nothing.
    #[test]
    fn trials_start_on_a_steady_load_and_one_the_load_leaves_counts_for_nothing() {
        let mut b = Balancer::new(2);
        let busy = || sample(&[0.97, 0.0], 400_000.0);
        let spread = || sample(&[0.7, 0.7], 600_000.0);
        let idle = || sample(&[0.0, 0.0], 0.0);
        run(&mut b, &[busy(), busy()]);
        run(&mut b, &trial_of(spread));
        assert_eq!(b.state, State::All { light: 0 });
        let hold: Vec<_> = (1..FIRST_HOLD).map(|_| spread()).collect();
        assert_eq!(run(&mut b, &hold), vec![None; hold.len()]);
        // The hold is over; a pause, then the load again, climbing for a tick: one
        // thread is tried once two ticks ran alike, not before.
        let climbing = || sample(&[0.5, 0.5], 400_000.0);
        assert_eq!(
            run(&mut b, &[idle(), climbing(), spread(), spread()]),
            [None, None, None, Some(1)]
        );
        // The load stops during the trial: all threads serve again at once, and one
        // is tried again as soon as the load is steady, with no hold.
        let mut ticks = trial_of(|| sample(&[0.97, 0.0], 400_000.0));
        *ticks.last_mut().unwrap() = idle();
        let mut back = NO_CHANGE.to_vec();
        *back.last_mut().unwrap() = Some(2);
        assert_eq!(run(&mut b, &ticks), back);
        assert_eq!(b.state, State::All { light: 0 });
        assert_eq!(run(&mut b, &[spread(), spread()]), [None, Some(1)]);
        // Likewise from one thread: a trial of all the load leaves goes back to one.
        let mut b = Balancer::new(2);
        run(&mut b, &[busy(), busy()]);
        let mut ticks = trial_of(spread);
        *ticks.last_mut().unwrap() = idle();
        let mut back = NO_CHANGE.to_vec();
        *back.last_mut().unwrap() = Some(1);
        assert_eq!(run(&mut b, &ticks), back);
        assert_eq!(b.state, State::One { saturated: 0 });
        assert_eq!(run(&mut b, &[busy(), busy()]), [None, Some(2)]);
    }

    #[test]
    fn one_connection_a_thread_with_room_or_one_that_sleeps_stays_on_one_thread() {
        let mut b = Balancer::new(2);
        let mut one = sample(&[1.0, 0.0], 1_000_000.0);
        one.connections = 1;
        let roomy = sample(&[0.85, 0.0], 1_000_000.0);
        let mut sleeper = sample(&[1.0, 0.0], 1_000_000.0);
        // Just more than SATURATED_PARKS a thousand requests, at 100,000 a tick.
        sleeper.parks[0] = 100 * SATURATED_PARKS as u64 + 1;
        for s in [one, roomy, sleeper] {
            for _ in 0..100 {
                assert_eq!(b.tick(&s), None);
            }
        }
    }
}
