//! What all connections share: the keyspace, the transaction gate, settings, the
//! client registry, memory accounting, CLIENT PAUSE and the shutdown signal.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::clients::Clients;
use crate::command_stats::CommandStats;
use crate::config::{Config, Policy};
use crate::db::Db;
use crate::eviction;
use crate::instantaneous::Rates;
use crate::latency::LatencyMonitor;
use crate::monitor::Monitors;
use crate::pubsub::PubSub;
use engine::gate::Gate;

pub struct Server {
    pub db: Db,
    pub gate: Gate,
    pub config: Config,
    pub clients: Clients,
    pub started: Instant,
    pub run_id: String,
    pub evicted: AtomicU64,
    pub command_stats: CommandStats,
    pub latency: LatencyMonitor,
    pub rates: Rates,
    pub monitors: Monitors,
    pub pubsub: PubSub,
    /// ACL users.
    pub users: crate::commands::users::Users,
    /// The Lua interpreter and the scripts loaded (EVAL, SCRIPT); see [`Server::scripts`].
    scripts: std::sync::Mutex<crate::scripting::Scripts>,
    /// Runs EVAL and FCALL, so a long script keeps no I/O thread from its clients.
    pub script_thread: crate::script_thread::ScriptThread,
    /// The script running now, as other clients see it (busy, killable).
    pub running_script: Arc<crate::running_script::RunningScript>,
    /// What `scripts` held when last let go: INFO reads it without the lock, which a
    /// running script holds (and INFO may be what the script runs).
    script_counts: [AtomicU64; 4],
    /// Unix seconds of the last successful SAVE or BGSAVE (the start time before one),
    /// and whether the last one succeeded.
    last_save: AtomicU64,
    last_save_failed: AtomicBool,
    /// Unix seconds when the last save began, successful or not: a failed scheduled
    /// save is tried again only [`SAVE_RETRY_SECONDS`] after it.
    save_tried: AtomicU64,
    /// What the RDB file loaded at startup held.
    last_load: std::sync::OnceLock<crate::rdb_save::Counts>,
    /// SHUTDOWN's choice: SAVE (`Some(true)`), NOSAVE (`Some(false)`), or neither.
    shutdown_save: std::sync::Mutex<Option<bool>>,
    /// `Db::changes` when the last successful save began.
    changes_at_save: AtomicU64,
    /// Successful saves since the start (INFO's rdb_saves).
    saves: AtomicU64,
    /// BGSAVE's child process on the memory engine.
    pub background_save: crate::background_save::BackgroundSave,
    /// A BGSAVE asked for inside EXEC, where the process must not fork half-way
    /// through a transaction: started by the periodic work, as Redis schedules it.
    background_save_scheduled: AtomicBool,
    /// BGREWRITEAOFs since the start (INFO's aof_rewrites), and whether the last failed.
    log_rewrites: AtomicU64,
    log_rewrite_failed: AtomicBool,
    used_memory: AtomicU64,
    /// How many times `used_memory` was measured: a thread that sees it change knows
    /// its own allocations until then are in the figure (see `used_memory_here`).
    memory_refreshes: AtomicU64,
    /// The refresh after the last `under_after_retired_freed` (MAX: none yet).
    retired_freed_at: AtomicU64,
    /// When (ms since the Unix epoch) `used_memory` was last measured.
    measured_at: AtomicU64,
    peak_memory: AtomicU64,
    /// What the allocator held before any client came (MEMORY STATS).
    pub startup_memory: u64,
    shutdown: watch::Sender<bool>,
    /// New listeners for the accept loop (CONFIG SET port).
    pub listener_moves: crate::listener::ListenerMoves,
    /// MIGRATE's connections to its targets.
    pub migrate_sockets: crate::migrate_sockets::MigrateSockets,
    /// How many io threads serve now (unset where none do, as in unit tests).
    pub io_threads: Option<crate::io_threads::ActiveThreads>,
    /// Whether the periodic work deletes expired keys (DEBUG SET-ACTIVE-EXPIRE turns
    /// it off, for tests that need expired keys left to lazy expiry).
    pub active_expiry: AtomicBool,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE takes a payload whatever its CRC.
    pub skip_checksum: AtomicBool,
    /// DEBUG PAUSE-CRON: the periodic work every 100 ms (expiry, client limits and
    /// eviction, rates, scheduled saves) is skipped; memory is still measured.
    pub cron_paused: AtomicBool,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call the commands flagged
    /// `noscript` too (Redis's tests use it to reach DEBUG and CLIENT from Lua).
    pub scripts_call_anything: AtomicBool,
}

thread_local! {
    /// What this thread allocated since the last measure it saw (`used_memory_here`).
    static GROWTH: Cell<Option<Growth>> = const { Cell::new(None) };
}

#[derive(Clone, Copy)]
struct Growth {
    /// The measure seen (`memory_refreshes`).
    refresh: u64,
    /// The thread's allocation balance at its last look (`memory::thread_balance`).
    balance: i64,
    /// Bytes allocated less freed by this thread since the measure it saw.
    since: i64,
}

/// Why a write was refused.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// Why a write was refused while min-replicas-to-write asks for replicas (see
/// `Config::lacks_replicas`).
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's answer to a write while its saves fail (`stop-writes-on-bgsave-error`).
pub const SAVES_FAILING: &str = "MISCONF Redis is configured to save RDB snapshots, but it's \
currently unable to persist to disk. Commands that may modify the data set are disabled, \
because this instance is configured to report errors during writes if RDB snapshotting \
fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about \
the RDB error.";

/// What a client's outbox (MONITOR lines) may hold while the normal clients' output
/// buffer limit sets no hard limit, as by default: Redis lets a monitor that does not
/// read grow without bound; hotkv drops it past this.
const OUTBOX_LIMIT: usize = 64 << 20;

impl Server {
    /// How much a client may have waiting in its outbox (see [`Client::deliver`]).
    ///
    /// [`Client::deliver`]: crate::clients::Client::deliver
    pub fn outbox_limit(&self) -> usize {
        match self.config.output_limit().hard {
            0 => OUTBOX_LIMIT,
            hard => hard as usize,
        }
    }

    pub fn new(config: Config, db: Db) -> Server {
        let users = crate::commands::users::Users::new(config.requirepass().as_deref());
        let scripts = crate::scripting::Scripts::new().expect("Lua starts with its libraries");
        let lua_memory = scripts.lua_memory() as u64;
        let server = Server {
            db,
            gate: Gate::default(),
            config,
            clients: Clients::default(),
            started: Instant::now(),
            run_id: (0..40)
                .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).expect("hex digit"))
                .collect(),
            evicted: AtomicU64::new(0),
            command_stats: CommandStats::new(crate::commands::count()),
            latency: LatencyMonitor::default(),
            rates: Rates::default(),
            monitors: Monitors::default(),
            pubsub: PubSub::default(),
            users,
            scripts: std::sync::Mutex::new(scripts),
            script_thread: crate::script_thread::ScriptThread::start()
                .expect("the script thread starts"),
            running_script: Default::default(),
            script_counts: [0, 0, 0, lua_memory].map(AtomicU64::new),
            last_save: AtomicU64::new(crate::entry::now_ms() / 1000),
            last_save_failed: AtomicBool::new(false),
            save_tried: AtomicU64::new(0),
            shutdown_save: Default::default(),
            last_load: Default::default(),
            changes_at_save: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            background_save: Default::default(),
            background_save_scheduled: AtomicBool::new(false),
            active_expiry: AtomicBool::new(true),
            skip_checksum: AtomicBool::new(false),
            cron_paused: AtomicBool::new(false),
            scripts_call_anything: AtomicBool::new(false),
            log_rewrites: AtomicU64::new(0),
            log_rewrite_failed: AtomicBool::new(false),
            used_memory: AtomicU64::new(0),
            memory_refreshes: AtomicU64::new(0),
            retired_freed_at: AtomicU64::new(u64::MAX),
            measured_at: AtomicU64::new(0),
            peak_memory: AtomicU64::new(0),
            startup_memory: crate::memory::allocated(),
            shutdown: watch::channel(false).0,
            listener_moves: Default::default(),
            migrate_sockets: Default::default(),
            io_threads: None,
        };
        server.config_changed();
        server
    }

    /// The latency monitor: notes that `event` took `took`, if that reaches
    /// latency-monitor-threshold (0, the default, notes nothing).
    #[inline]
    pub fn note_latency(&self, event: &'static str, took: Duration) {
        if self.config.latency_threshold().is_some_and(|t| took >= t) {
            self.record_latency(event, took);
        }
    }

    #[cold]
    fn record_latency(&self, event: &'static str, took: Duration) {
        let ms = took.as_millis() as u64;
        self.latency
            .record(event, ms, crate::entry::now_ms() / 1000);
    }

    /// Publishes the queued keyspace notifications (see [`crate::keyspace_events`]).
    /// Inline: after most commands there are none, found by one load.
    #[inline]
    pub fn publish_events(&self) {
        if self.db.events.any_queued() {
            self.publish_queued_events();
        }
    }

    #[cold]
    fn publish_queued_events(&self) {
        use crate::keyspace_events::{KEYEVENT, KEYSPACE};
        let events = self.db.events.take();
        if events.is_empty() {
            return;
        }
        // A subscriber may read the key as soon as it hears.
        self.db.write_gathered();
        let flags = self.db.events.flags();
        let limit = self.config.pubsub_output_limit();
        for e in events {
            if flags & KEYSPACE != 0 {
                let mut channel = b"__keyspace@0__:".to_vec();
                channel.extend_from_slice(&e.key);
                self.pubsub
                    .publish(false, &channel, e.name.as_bytes(), limit);
            }
            if flags & KEYEVENT != 0 {
                let channel = format!("__keyevent@0__:{}", e.name);
                self.pubsub
                    .publish(false, channel.as_bytes(), &e.key, limit);
            }
        }
    }

    /// Hands settings to the parts that keep their own copy (CONFIG SET calls it).
    pub fn config_changed(&self) {
        let max_keys = usize::try_from(self.config.tracking_table_max_keys()).unwrap_or(usize::MAX);
        self.db.tracking.set_limits(max_keys, self.outbox_limit());
        self.db.events.set_flags(self.config.keyspace_events());
        let (log_factor, decay_minutes) = self.config.lfu();
        self.db.set_lfu(log_factor, decay_minutes);
        self.clients
            .set_memory_limit(self.config.client_memory_limit());
    }

    /// SAVE: makes every write so far durable (on the memory engine, in the RDB file),
    /// and notes when for LASTSAVE. The caller runs alone. Refused, as in Redis, while
    /// a background save runs.
    pub fn save(&self) -> Result<(), String> {
        if self.background_save.running() {
            return Err(crate::background_save::IN_PROGRESS.into());
        }
        let changes = self.db.changes();
        self.save_tried
            .store(crate::entry::now_ms() / 1000, Ordering::Relaxed);
        // On lsm the engine syncs its log; the memory engine has the RDB file written.
        let saved = match self.db.save() {
            Ok(true) => Ok(()),
            Ok(false) => crate::rdb_save::write(self),
            Err(e) => Err(e.to_string()),
        };
        self.saved(
            changes,
            saved.map_err(|e| format!("ERR saving failed: {e}")),
        )
    }

    /// Notes how a save of the data as of `changes` (`Db::changes`) ended.
    fn saved(&self, changes: u64, outcome: Result<(), String>) -> Result<(), String> {
        match outcome {
            Ok(()) => {
                // Changes made while it saved may or may not be in the save: counted as
                // not, as Redis counts those made during a BGSAVE.
                self.changes_at_save.store(changes, Ordering::Relaxed);
                self.last_save
                    .store(crate::entry::now_ms() / 1000, Ordering::Relaxed);
                self.last_save_failed.store(false, Ordering::Relaxed);
                self.saves.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.last_save_failed.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// BGSAVE: on the memory engine a child process writes the RDB file while the
    /// server goes on (`background_save.rs`); inside EXEC the save is scheduled for
    /// when the transaction is over. On lsm, as SAVE (a sync of the log). The caller
    /// runs alone. The status line to answer.
    pub fn background_save(&self, in_exec: bool) -> Result<&'static str, String> {
        const STARTED: &str = "Background saving started";
        if self.config.engine != crate::config::EngineKind::Memory {
            return self.save().map(|()| STARTED);
        }
        if self.background_save.running() {
            return Err(crate::background_save::IN_PROGRESS.into());
        }
        if in_exec {
            self.background_save_scheduled
                .store(true, Ordering::Relaxed);
            return Ok("Background saving scheduled");
        }
        self.start_background_save()
            .map(|()| STARTED)
            .map_err(|e| format!("ERR {e}"))
    }

    fn start_background_save(&self) -> Result<(), String> {
        self.background_save_scheduled
            .store(false, Ordering::Relaxed);
        self.save_tried
            .store(crate::entry::now_ms() / 1000, Ordering::Relaxed);
        let plan = crate::rdb_save::SavePlan::new(self);
        let started = self
            .background_save
            .start(&self.db, plan, self.db.changes());
        if let Err(e) = &started {
            self.last_save_failed.store(true, Ordering::Relaxed);
            tracing::warn!(error = %e, "background save not started");
        }
        started
    }

    /// Records a background save that has ended, if one has, and starts the next one
    /// due (the save schedule's, or one BGSAVE scheduled inside EXEC), alone, as
    /// BGSAVE runs; not while a script holds the gate.
    fn background_save_work(&self, now: u64) {
        if let Some(finished) = self.background_save.reap() {
            let path = crate::rdb_save::path(self);
            match self.saved(finished.changes, finished.outcome) {
                Ok(()) => tracing::info!(file = %path.display(), "background save done"),
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "background save failed")
                }
            }
        }
        if self.background_save.running() {
            return;
        }
        let scheduled = self.background_save_scheduled.load(Ordering::Relaxed);
        if scheduled && self.may_try_save(now) || self.save_due(now) {
            if let Some(_alone) = self.gate.try_exclusive() {
                let _ = self.start_background_save();
            }
        }
    }

    /// Whether a save may start at `now` (Unix seconds): after a failed one, only
    /// [`SAVE_RETRY_SECONDS`] after it began, as Redis retries.
    fn may_try_save(&self, now: u64) -> bool {
        !self.last_save_failed.load(Ordering::Relaxed)
            || now >= self.save_tried.load(Ordering::Relaxed) + SAVE_RETRY_SECONDS
    }

    /// Whether the memory engine's save schedule (`save`) asks for a save at `now`
    /// (Unix seconds): as in Redis, once a point's count of changes is in and more than
    /// its seconds have passed since the last save; after a failure, not before
    /// [`SAVE_RETRY_SECONDS`]. The lsm engine keeps every write, so never there.
    fn save_due(&self, now: u64) -> bool {
        if self.config.engine != crate::config::EngineKind::Memory {
            return false;
        }
        let changes = self.changes_since_save();
        if changes == 0 || !self.may_try_save(now) {
            return false;
        }
        let since = now.saturating_sub(self.last_save());
        crate::config::save_points(&self.config.value("save"))
            .any(|(seconds, enough)| changes >= enough && since > seconds)
    }

    /// Loads the memory engine's RDB file at startup, if there is one.
    pub fn load_rdb_file(&self) -> Result<Option<crate::rdb_save::Counts>, String> {
        let loaded = crate::rdb_save::load(self)?;
        // What was loaded is what is saved: no change since, as Redis counts.
        self.changes_at_save
            .store(self.db.changes(), Ordering::Relaxed);
        if let Some(counts) = loaded {
            let _ = self.last_load.set(counts);
        }
        Ok(loaded)
    }

    /// What the RDB file loaded at startup held (INFO's rdb_last_load_keys_loaded and
    /// _expired); zeros without one.
    pub fn last_load(&self) -> crate::rdb_save::Counts {
        self.last_load.get().copied().unwrap_or_default()
    }

    /// BGREWRITEAOF. The lsm engine's log is what Redis's append-only file is to it, and
    /// it never needs rewriting: each memtable flushed to a table drops the log it
    /// covered, so the log holds at most the memtables' writes. What a rewrite leaves
    /// Redis with, a file holding every write so far, is there once the log is synced,
    /// which this does before it answers.
    pub fn rewrite_log(&self) -> Result<(), String> {
        match self.db.save() {
            Ok(true) => {
                self.log_rewrites.fetch_add(1, Ordering::Relaxed);
                self.log_rewrite_failed.store(false, Ordering::Relaxed);
                Ok(())
            }
            Ok(false) => Err("ERR the memory engine keeps no append-only file to rewrite; run hotkv-server --engine lsm to keep data durable".into()),
            Err(e) => {
                self.log_rewrite_failed.store(true, Ordering::Relaxed);
                Err(format!("ERR syncing the log failed: {e}"))
            }
        }
    }

    /// INFO's aof_rewrites and whether aof_last_bgrewrite_status is `err`.
    pub fn log_rewrites(&self) -> (u64, bool) {
        (
            self.log_rewrites.load(Ordering::Relaxed),
            self.log_rewrite_failed.load(Ordering::Relaxed),
        )
    }

    /// Keys written or deleted since the last successful save (or the start), INFO's
    /// rdb_changes_since_last_save.
    pub fn changes_since_save(&self) -> u64 {
        self.db
            .changes()
            .saturating_sub(self.changes_at_save.load(Ordering::Relaxed))
    }

    /// Unix seconds of the last successful save, or of the start before any.
    pub fn last_save(&self) -> u64 {
        self.last_save.load(Ordering::Relaxed)
    }

    /// The scripts, for as long as the guard lives.
    pub fn scripts(&self) -> ScriptsGuard<'_> {
        self.scripts_guard(self.scripts.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The scripts, if no one holds them (a running script does).
    pub fn try_scripts(&self) -> Option<ScriptsGuard<'_>> {
        match self.scripts.try_lock() {
            Ok(scripts) => Some(self.scripts_guard(scripts)),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(self.scripts_guard(e.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    fn scripts_guard<'a>(
        &'a self,
        scripts: std::sync::MutexGuard<'a, crate::scripting::Scripts>,
    ) -> ScriptsGuard<'a> {
        ScriptsGuard {
            scripts,
            counts: &self.script_counts,
        }
    }

    /// Cached scripts, functions, libraries, and the bytes Lua holds, as of the last
    /// use of the scripts (INFO memory).
    pub fn script_counts(&self) -> [u64; 4] {
        self.script_counts
            .each_ref()
            .map(|n| n.load(Ordering::Relaxed))
    }

    pub fn saves(&self) -> u64 {
        self.saves.load(Ordering::Relaxed)
    }

    pub fn last_save_failed(&self) -> bool {
        self.last_save_failed.load(Ordering::Relaxed)
    }

    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// SHUTDOWN SAVE (`Some(true)`) or NOSAVE (`Some(false)`), before it asks for the
    /// shutdown.
    pub fn choose_shutdown_save(&self, save: Option<bool>) {
        *self.shutdown_save.lock().unwrap_or_else(|e| e.into_inner()) = save;
    }

    /// Whether the memory engine saves its RDB file once the last connection is gone:
    /// as Redis, on SHUTDOWN SAVE, or with a save schedule unless SHUTDOWN NOSAVE.
    pub fn saves_at_shutdown(&self) -> bool {
        let chosen = *self.shutdown_save.lock().unwrap_or_else(|e| e.into_inner());
        self.config.engine == crate::config::EngineKind::Memory
            && chosen.unwrap_or_else(|| self.saves_on_schedule())
    }

    /// Why writes are refused now, if they are, in Redis's order: the memory engine's
    /// last save failed while it has a save schedule and `stop-writes-on-bgsave-error`
    /// is yes ([`SAVES_FAILING`]: until a save succeeds, as the schedule retries every
    /// few seconds), or fewer replicas than `min-replicas-to-write` ([`NOREPLICAS`]:
    /// hotkv has none).
    #[inline]
    pub fn write_refusal(&self) -> Option<&'static str> {
        if self.saves_failing() {
            return Some(SAVES_FAILING);
        }
        self.config.lacks_replicas().then_some(NOREPLICAS)
    }

    /// Whether writes, and PING, are refused for the failing saves (see
    /// [`Server::write_refusal`]).
    #[inline]
    pub fn saves_failing(&self) -> bool {
        self.last_save_failed.load(Ordering::Relaxed) && self.failed_saves_stop_writes()
    }

    #[cold]
    fn failed_saves_stop_writes(&self) -> bool {
        self.saves_on_schedule() && self.config.value("stop-writes-on-bgsave-error") == "yes"
    }

    /// Whether the memory engine has a save schedule (`save`).
    pub fn saves_on_schedule(&self) -> bool {
        self.config.engine == crate::config::EngineKind::Memory
            && !self.config.value("save").is_empty()
    }

    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Bytes the process has allocated as this thread can tell now: as of the last
    /// refresh (at most 10 ms old), plus what this thread allocated since, so that
    /// a command right after one that allocated much (a SETBIT growing a string by
    /// 200 KB) sees it, as it would Redis's exact counter. What this thread allocated
    /// between its last look and a refresh is counted as if the refresh missed it:
    /// never under, and over by little, since a connection looks after each command
    /// and each read too (`note_allocations`): a PUBLISH of 100 KB to 20 subscribers
    /// allocates 2 MB, which would otherwise be counted twice until the next command.
    fn used_memory_here(&self) -> u64 {
        let refresh = self.memory_refreshes.load(Ordering::Acquire);
        let balance = crate::memory::thread_balance();
        let since = GROWTH.with(|growth| {
            let since = match growth.get() {
                Some(seen) if seen.refresh == refresh => seen.since + (balance - seen.balance),
                Some(seen) => balance - seen.balance,
                None => 0,
            };
            growth.set(Some(Growth {
                refresh,
                balance,
                since,
            }));
            since
        });
        self.used_memory
            .load(Ordering::Relaxed)
            .saturating_add_signed(since)
    }

    /// A command ran, or a connection's read grew its buffers: this thread's look at
    /// memory is brought up to date, so that what they allocated is not counted
    /// again on top of a refresh that measured it (see [`Server::used_memory_here`]).
    /// Only while `maxmemory` is set, the one use of the look.
    pub fn note_allocations(&self) {
        if self.config.maxmemory() != 0 {
            self.used_memory_here();
        }
    }

    pub fn peak_memory(&self) -> u64 {
        self.peak_memory.load(Ordering::Relaxed)
    }

    /// Measures `used_memory` now and returns it. The 10 ms sample is enough to
    /// enforce `maxmemory`; what INFO and MEMORY report is measured when asked, as
    /// Redis's is, so that it counts the writes acknowledged just before.
    pub fn refresh_memory(&self) -> u64 {
        // What deletes retired and no reader holds is not data: free it before counting.
        self.db.free_retired();
        self.clients.measuring_memory();
        let used = crate::memory::allocated();
        self.used_memory.store(used, Ordering::Relaxed);
        self.measured_at
            .store(crate::entry::now_ms(), Ordering::Relaxed);
        self.memory_refreshes.fetch_add(1, Ordering::Release);
        self.peak_memory.fetch_max(used, Ordering::Relaxed);
        used
    }

    /// CONFIG RESETSTAT: zeroes INFO's counters and the index's access statistics.
    pub fn reset_stats(&self) {
        self.clients.reset_counters();
        self.evicted.store(0, Ordering::Relaxed);
        self.command_stats.reset();
        self.db.reset_stats();
    }

    /// Called before every command, and again before one that may grow memory, which
    /// [`OOM`] refuses: under `maxmemory` or during a CLIENT PAUSE (which keeps the
    /// data as it is) it does nothing; over it, evicts by the policy, or answers
    /// [`OOM`] if the policy evicts nothing or nothing was left to evict.
    pub fn make_room(&self) -> Result<(), &'static str> {
        let max = self.config.maxmemory();
        if max == 0 || self.db.pause.is_on() {
            return Ok(());
        }
        // Evicted clients' buffers are as good as gone (see `Clients::dying`).
        let mut used = self
            .used_memory_here()
            .saturating_sub(self.clients.dying() as u64);
        if used <= max {
            return Ok(());
        }
        // Over the limit on a measure the cron was late to refresh by several of its
        // 10 ms turns (a loaded machine delays it), where each eviction's estimate
        // since took its own error off: measured afresh, so what is evicted follows
        // what the data holds. (At 10 ms, io threads measured on most turns, for a
        // higher median latency at the limit.)
        if crate::entry::now_ms().saturating_sub(self.measured_at.load(Ordering::Relaxed)) > 50 {
            used = self
                .refresh_memory()
                .saturating_sub(self.clients.dying() as u64);
            if used <= max {
                return Ok(());
            }
        }
        let policy = self.config.policy();
        if policy == Policy::NoEviction {
            return self.under_after_retired_freed(max).then_some(()).ok_or(OOM);
        }
        // Frees reach the allocator's statistics late (epoch reclamation defers them),
        // so evict by an estimate of the bytes each key holds, taken off the measure
        // until the next refresh counts what was freed. On lsm, whose data is on disk,
        // a delete frees little memory at once (the memtable holds its tombstone until
        // a flush): the estimate stands for the data given up, as a cache that keeps
        // its data on disk counts it.
        let mut freed = 0u64;
        let excess = used - max;
        let now = crate::entry::now_ms() / 1000;
        eviction::with_pool(|pool| {
            let mut rounds = 0;
            while freed < excess && rounds < 64 {
                rounds += 1;
                let n = self.config.maxmemory_samples();
                let sample = if policy.volatile() {
                    self.db.sample_volatile(n)
                } else {
                    self.db.sample(n)
                };
                let Ok(sample) = sample else { break };
                let current = |key: &[u8]| {
                    let standing = self.db.resample(key).ok().flatten()?;
                    (!policy.volatile() || standing.deadline.is_some()).then_some(standing)
                };
                let Some(victim) = pool.victim(policy, sample, now, current) else {
                    break;
                };
                if self.db.remove(&victim.key).unwrap_or(false) {
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                    self.db
                        .events
                        .fire(crate::keyspace_events::EVICTED, "evicted", &victim.key);
                    freed += victim.bytes as u64;
                }
            }
        });
        let _ = self
            .used_memory
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(freed))
            });
        if freed == 0 && !self.under_after_retired_freed(max) {
            return Err(OOM);
        }
        Ok(())
    }

    /// Whether memory is under `max` once what deletes retired is freed (see
    /// [`Db::free_retired`]): asked before a write is refused, so that a DEL or FLUSHALL
    /// just before it counts. At most once per 10 ms refresh, so writes refused one
    /// after another do not each pay for it.
    fn under_after_retired_freed(&self, max: u64) -> bool {
        let seen = self.memory_refreshes.load(Ordering::Acquire);
        if self.retired_freed_at.swap(seen, Ordering::Relaxed) == seen {
            return false;
        }
        let used = self.refresh_memory();
        // The refresh above counts as one: the next try waits for the cron's.
        self.retired_freed_at.store(seen + 1, Ordering::Relaxed);
        used.saturating_sub(self.clients.dying() as u64) <= max
    }

    /// The periodic work: memory accounting every 10 ms under `maxmemory` while
    /// commands run; every 100 ms (Redis's default `hz 10`) memory accounting
    /// otherwise, the rates, the clients' buffer peaks, their query buffers' resizing,
    /// MIGRATE's idle connections and active expiry, each expiry cycle bounded to 25 ms
    /// as Redis bounds it and skipped while a script runs.
    pub async fn background(&self) {
        const CRON: Duration = Duration::from_millis(100);
        const MEASURE: Duration = Duration::from_millis(10);
        let mut cron_due = tokio::time::Instant::now();
        let mut commands_seen = 0;
        let mut last_failure: Option<String> = None;
        loop {
            // A measure merges every jemalloc arena's statistics, ~300 µs on this VM:
            // at 100 a second, 3% of a core on a server doing nothing. Only `maxmemory`
            // needs it that fresh, and only while commands run (`make_room` measures
            // afresh what is over 50 ms old, as it may be just after CONFIG SET or the
            // first command after a pause); otherwise Redis's hz is enough, INFO and
            // MEMORY measuring when asked.
            let measuring = self.config.maxmemory() != 0 && {
                let commands = self.clients.total(|t| &t.commands);
                std::mem::replace(&mut commands_seen, commands) != commands
            };
            let now = tokio::time::Instant::now();
            let cron = now >= cron_due;
            if cron {
                // From now: turns a loaded machine delayed are not made up in a row.
                cron_due = now + CRON;
            }
            if measuring || cron {
                self.refresh_memory();
            }
            let second = crate::entry::now_ms() / 1000;
            self.db.set_clock(second);
            let wake = if measuring {
                (now + MEASURE).min(cron_due)
            } else {
                cron_due
            };
            if cron && !self.cron_paused.load(Ordering::Relaxed) {
                let c = &self.clients;
                c.record_peaks(second);
                c.resize_buffers();
                // What grew outside any command (deliveries, replies waiting), and
                // clients that CLIENT NO-EVICT OFF left unprotected.
                c.evict();
                c.enforce_output_limits(
                    self.config.output_limit(),
                    self.config.pubsub_output_limit(),
                );
                self.migrate_sockets.close_idle();
                self.background_save_work(second);
                self.rates.sample(
                    [
                        c.total(|t| &t.commands),
                        c.total(|t| &t.net_in),
                        c.total(|t| &t.net_out),
                    ],
                    Instant::now(),
                );
                let start = Instant::now();
                while self.active_expiry.load(Ordering::Relaxed) {
                    // Not while a script holds the gate: this task shares its thread
                    // with the acceptor, which must go on taking connections (SCRIPT
                    // KILL may come on one). Redis expires nothing while a script runs.
                    let cycle = {
                        let Some(_shared) = self.gate.try_shared() else {
                            break;
                        };
                        self.db.expire_cycle(64)
                    };
                    let (examined, deleted) = match cycle {
                        Ok(counts) => counts,
                        Err(e) => {
                            // Once per failure, not every 100 ms while it lasts.
                            let message = e.to_string();
                            if last_failure.as_ref() != Some(&message) {
                                tracing::warn!(error = %message, "active expiry failed");
                                last_failure = Some(message);
                            }
                            break;
                        }
                    };
                    last_failure = None;
                    // Go on while a tenth or more of what was examined had expired.
                    if examined == 0
                        || deleted * 10 < examined
                        || start.elapsed() > Duration::from_millis(25)
                    {
                        break;
                    }
                }
                self.note_latency("expire-cycle", start.elapsed());
                // What active expiry deleted, for BCAST prefixes and notifications.
                self.db.tracking.flush_broadcasts();
                self.publish_events();
            }
            tokio::time::sleep_until(wake).await;
        }
    }
}

/// How long after a failed scheduled save the next is tried (Redis's
/// CONFIG_BGSAVE_RETRY_DELAY).
const SAVE_RETRY_SECONDS: u64 = 5;

/// The scripts, locked; on release it notes what they hold for INFO.
pub struct ScriptsGuard<'a> {
    scripts: std::sync::MutexGuard<'a, crate::scripting::Scripts>,
    counts: &'a [AtomicU64; 4],
}

impl std::ops::Deref for ScriptsGuard<'_> {
    type Target = crate::scripting::Scripts;

    fn deref(&self) -> &Self::Target {
        &self.scripts
    }
}

impl std::ops::DerefMut for ScriptsGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.scripts
    }
}

impl ScriptsGuard<'_> {
    /// Notes what the scripts hold now, for INFO: done on release, and by EVAL once
    /// its script is cached, so that the script sees itself counted as in Redis.
    pub fn note_counts(&self) {
        let s = &self.scripts;
        let now = [
            s.cached(),
            s.libraries.function_count(),
            s.libraries.len(),
            s.lua_memory(),
        ];
        for (count, value) in self.counts.iter().zip(now) {
            count.store(value as u64, Ordering::Relaxed);
        }
    }
}

impl Drop for ScriptsGuard<'_> {
    fn drop(&mut self) {
        self.note_counts();
    }
}
