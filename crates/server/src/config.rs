//! Server settings: from defaults, then the config file, then command-line flags, and
//! at run time from CONFIG SET. The file uses redis.conf syntax: one `name value`
//! directive per line, `#` comments, arguments quoted as Redis quotes them; names are
//! the ones CONFIG GET lists.

use std::net::IpAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use std::sync::{Mutex, RwLock};

use crate::accepted_settings::{self, HIDDEN, IMMUTABLE, PROTECTED, READ, SETTINGS};
use crate::clients::OutputLimit;
use crate::glob::glob_match;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// Evicts only keys that have a deadline.
    /// Whether keys are ranked by access frequency (OBJECT FREQ answers; OBJECT
    /// IDLETIME and RESTORE's IDLETIME do not apply).
    pub fn lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    pub fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// Where the keyspace lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The HotRing index alone: fastest; what outlives the process is its RDB file.
    Memory,
    /// The LSM tree in `dir`: durable per `fsync`.
    Lsm,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Memory => "memory",
            EngineKind::Lsm => "lsm",
        }
    }
}

/// The default policy's place in `POLICIES`.
const NO_EVICTION: u8 = 7;

/// Redis's policy names, in the order its error message lists them.
const POLICIES: [(&str, Policy); 8] = [
    ("volatile-lru", Policy::VolatileLru),
    ("volatile-lfu", Policy::VolatileLfu),
    ("volatile-random", Policy::VolatileRandom),
    ("volatile-ttl", Policy::VolatileTtl),
    ("allkeys-lru", Policy::AllKeysLru),
    ("allkeys-lfu", Policy::AllKeysLfu),
    ("allkeys-random", Policy::AllKeysRandom),
    ("noeviction", Policy::NoEviction),
];

pub struct Config {
    pub bind: IpAddr,
    /// The TCP port: CONFIG SET moves the listener (`commands/config.rs`); 0 at startup
    /// takes one the OS picks, at run time closes the listener, as in Redis.
    port: AtomicU16,
    pub protected_mode: bool,
    pub engine: EngineKind,
    /// Where the lsm engine keeps its files, and the memory engine its RDB file.
    pub dir: std::path::PathBuf,
    /// When a durable engine's log reaches the disk.
    fsync: Mutex<lsm::FsyncPolicy>,
    /// The LSM engine's block cache, in bytes.
    pub cache_size: u64,
    /// The LSM engine's memtable size, in bytes (up to three are in memory at once:
    /// one taking writes, two waiting for flush).
    pub memtable_size: u64,
    /// Threads that may serve connections (Redis's `io-threads`); 0: one per core.
    /// How many of them do is decided by load (`io_threads.rs`).
    pub io_threads: usize,
    /// The config file the server started from: where CONFIG REWRITE writes.
    pub file: Option<std::path::PathBuf>,
    /// Users its `user` lines declare (each its name, then its rules), made at startup.
    pub users: Vec<Vec<Vec<u8>>>,
    /// The default user's password (see `commands/users.rs`, which the server keeps
    /// in step with it).
    requirepass: RwLock<Option<Vec<u8>>>,
    maxclients: AtomicU64,
    maxmemory: AtomicU64,
    policy: AtomicU8,
    maxmemory_samples: AtomicU64,
    /// The collection sizes up to which Redis keeps its compact encodings, in
    /// [`ENCODING_SETTINGS`] order: what OBJECT ENCODING names (hotkv packs every
    /// collection the same way).
    encoding_limits: [AtomicI64; ENCODING_SETTINGS.len()],
    timeout: AtomicU64,
    proto_max_bulk_len: AtomicU64,
    /// Requests taking at least this many microseconds go to the slow log; negative: none.
    slowlog_log_slower_than: AtomicI64,
    slowlog_max_len: AtomicU64,
    /// How many entries ACL LOG keeps.
    acllog_max_len: AtomicU64,
    /// Requests taking at least this many milliseconds go to the latency monitor; 0: none.
    latency_monitor_threshold: AtomicU64,
    /// Per-command latency histograms (INFO latencystats, LATENCY HISTOGRAM).
    latency_tracking: AtomicBool,
    /// Writes are refused unless this many replicas are at most min-replicas-max-lag
    /// seconds behind (0: no check).
    min_replicas_to_write: AtomicU64,
    min_replicas_max_lag: AtomicU64,
    /// The percentiles INFO latencystats prints.
    latency_percentiles: RwLock<Vec<f64>>,
    /// `client-output-buffer-limit` for normal clients: hard bytes, soft bytes, soft
    /// seconds (0: no limit), as in Redis.
    output_limit: [AtomicU64; 3],
    /// The same for clients subscribed to pub/sub channels, applied to all they have
    /// waiting (`Client::deliver` and the client cron).
    pubsub_output_limit: [AtomicU64; 3],
    /// The same for replicas: hotkv has none, so it is kept and reported, not used.
    replica_output_limit: [AtomicU64; 3],
    /// Keys CLIENT TRACKING remembers at most (0: no limit).
    tracking_table_max_keys: AtomicU64,
    /// `notify-keyspace-events`, as flags (see [`crate::keyspace_events`]).
    keyspace_events: AtomicU32,
    /// Milliseconds a Lua script may run before hotkv stops it (`busy-reply-threshold`,
    /// once `lua-time-limit`; see `scripting.rs`).
    busy_reply_threshold: AtomicU64,
    /// Redis's snapshot schedule (`save`), pairs of seconds and changes, as CONFIG GET
    /// prints it.
    save: RwLock<String>,
    /// Redis's settings that hotkv keeps but does not act on (`accepted_settings.rs`).
    accepted: accepted_settings::Values,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: AtomicU16::new(6379),
            protected_mode: true,
            engine: EngineKind::Lsm,
            dir: "hotkv-data".into(),
            fsync: Mutex::new(lsm::FsyncPolicy::EverySec),
            cache_size: 64 << 20,
            memtable_size: 64 << 20,
            io_threads: 0,
            file: None,
            users: Vec::new(),
            requirepass: RwLock::new(None),
            maxclients: AtomicU64::new(10_000),
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(NO_EVICTION),
            maxmemory_samples: AtomicU64::new(5),
            encoding_limits: ENCODING_SETTINGS.map(|(_, _, default)| AtomicI64::new(default)),
            timeout: AtomicU64::new(0),
            proto_max_bulk_len: AtomicU64::new(512 * 1024 * 1024),
            slowlog_log_slower_than: AtomicI64::new(10_000),
            slowlog_max_len: AtomicU64::new(128),
            acllog_max_len: AtomicU64::new(128),
            latency_monitor_threshold: AtomicU64::new(0),
            latency_tracking: AtomicBool::new(true),
            min_replicas_to_write: AtomicU64::new(0),
            min_replicas_max_lag: AtomicU64::new(10),
            latency_percentiles: RwLock::new(vec![50.0, 99.0, 99.9]),
            output_limit: Default::default(),
            pubsub_output_limit: [32 << 20, 8 << 20, 60].map(AtomicU64::new),
            replica_output_limit: [256 << 20, 64 << 20, 60].map(AtomicU64::new),
            tracking_table_max_keys: AtomicU64::new(1_000_000),
            keyspace_events: AtomicU32::new(0),
            busy_reply_threshold: AtomicU64::new(5000),
            save: RwLock::default(),
            accepted: Default::default(),
        }
    }
}

/// Redis's encoding thresholds: name, the name Redis before 7.0 gave it (still
/// accepted), default. The list settings only describe Redis's nodes and are kept for
/// CONFIG GET.
const ENCODING_SETTINGS: [(&str, &str, i64); 9] = [
    ("hash-max-listpack-entries", "hash-max-ziplist-entries", 512),
    ("hash-max-listpack-value", "hash-max-ziplist-value", 64),
    ("set-max-intset-entries", "", 512),
    ("zset-max-listpack-entries", "zset-max-ziplist-entries", 128),
    ("zset-max-listpack-value", "zset-max-ziplist-value", 64),
    ("list-max-listpack-size", "list-max-ziplist-size", -2),
    ("list-compress-depth", "", 0),
    ("stream-node-max-entries", "", 100),
    ("stream-node-max-bytes", "", 4096),
];

/// Which of [`ENCODING_SETTINGS`] OBJECT ENCODING consults.
#[derive(Clone, Copy)]
pub enum EncodingLimit {
    HashEntries = 0,
    HashValue = 1,
    SetIntsetEntries = 2,
    ZsetEntries = 3,
    ZsetValue = 4,
    /// How many entries a stream's node holds before the next goes to a new one.
    StreamNodeEntries = 7,
}

/// The index in [`ENCODING_SETTINGS`] of `name` or of its old name.
fn encoding_setting(name: &str) -> Option<usize> {
    ENCODING_SETTINGS
        .iter()
        .position(|(new, old, _)| name == *new || (!old.is_empty() && name == *old))
}

/// Names CONFIG GET answers, in the order it lists them.
const NAMES: &[&str] = &[
    "hash-max-listpack-entries",
    "hash-max-ziplist-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-value",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-ziplist-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-value",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "list-compress-depth",
    "stream-node-max-entries",
    "stream-node-max-bytes",
    "bind",
    "port",
    "protected-mode",
    "io-threads",
    "engine",
    "dir",
    "fsync",
    "cache-size",
    "memtable-size",
    "requirepass",
    "maxclients",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "timeout",
    "proto-max-bulk-len",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "acllog-max-len",
    "latency-monitor-threshold",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "client-output-buffer-limit",
    "tracking-table-max-keys",
    "notify-keyspace-events",
    "busy-reply-threshold",
    "lua-time-limit",
    "min-replicas-to-write",
    "min-slaves-to-write",
    "min-replicas-max-lag",
    "min-slaves-max-lag",
    "databases",
    "save",
    "appendonly",
    "appendfsync",
];

/// Settings whose value is a list of words, written as several arguments in a file.
const LISTS: &[&str] = &[
    "client-output-buffer-limit",
    "save",
    "latency-tracking-info-percentiles",
];

/// Settings CONFIG REWRITE keeps out of the file: they describe hotkv rather than
/// configure it (and `bind`, `port`, `io-threads` and `protected-mode` are written only
/// when they differ from the defaults, like the rest).
const NOT_REWRITTEN: &[&str] = &[
    "databases",
    "lua-time-limit",
    "min-slaves-to-write",
    "min-slaves-max-lag",
    "appendonly",
    "appendfsync",
    // Old names of settings written under their new ones.
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
    "list-max-ziplist-size",
];

/// The index in [`POLICIES`] of the policy named `name`.
fn policy_index(name: &str) -> Option<usize> {
    POLICIES
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// Names only the config file and flags may set: the listener exists by then.
const STARTUP_ONLY: &[&str] = &[
    "bind",
    "protected-mode",
    "engine",
    "dir",
    "cache-size",
    "memtable-size",
    "io-threads",
];

impl Config {
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        self.requirepass
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    /// When a durable engine's log reaches the disk.
    pub fn fsync(&self) -> lsm::FsyncPolicy {
        *self.fsync.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn port(&self) -> u16 {
        self.port.load(Ordering::Relaxed)
    }
    pub fn maxclients(&self) -> u64 {
        self.maxclients.load(Ordering::Relaxed)
    }
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }
    pub fn policy(&self) -> Policy {
        POLICIES[self.policy.load(Ordering::Relaxed) as usize].1
    }

    pub fn maxmemory_samples(&self) -> usize {
        self.maxmemory_samples.load(Ordering::Relaxed) as usize
    }
    /// Idle seconds before a client is closed; 0: never.
    pub fn timeout(&self) -> u64 {
        self.timeout.load(Ordering::Relaxed)
    }
    /// `rdbcompression`: whether DUMP payloads and RDB files compress long strings.
    pub fn rdb_compression(&self) -> bool {
        self.value("rdbcompression") == "yes"
    }
    pub fn proto_max_bulk_len(&self) -> usize {
        self.proto_max_bulk_len.load(Ordering::Relaxed) as usize
    }
    /// The slow log's threshold, or `None` when it is off.
    pub fn slowlog_threshold(&self) -> Option<std::time::Duration> {
        let micros = self.slowlog_log_slower_than.load(Ordering::Relaxed);
        (micros >= 0).then(|| std::time::Duration::from_micros(micros as u64))
    }
    /// Writes are refused for want of good replicas, as Redis's checkGoodReplicasStatus
    /// refuses them: hotkv has no replicas, so any min-replicas-to-write (with a
    /// min-replicas-max-lag) is more than it has.
    pub fn lacks_replicas(&self) -> bool {
        self.min_replicas_to_write.load(Ordering::Relaxed) > 0
            && self.min_replicas_max_lag.load(Ordering::Relaxed) > 0
    }

    /// The latency monitor's threshold, or `None` when it is off.
    pub fn latency_threshold(&self) -> Option<std::time::Duration> {
        let ms = self.latency_monitor_threshold.load(Ordering::Relaxed);
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }
    pub fn latency_tracking(&self) -> bool {
        self.latency_tracking.load(Ordering::Relaxed)
    }
    pub fn latency_percentiles(&self) -> Vec<f64> {
        self.latency_percentiles
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    pub fn busy_reply_threshold(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.busy_reply_threshold.load(Ordering::Relaxed))
    }

    pub fn slowlog_max_len(&self) -> usize {
        self.slowlog_max_len.load(Ordering::Relaxed) as usize
    }

    pub fn acllog_max_len(&self) -> usize {
        self.acllog_max_len.load(Ordering::Relaxed) as usize
    }

    /// `(hard bytes, soft bytes, soft seconds)` for normal clients; 0 turns a limit off.
    /// The output limit of normal clients.
    pub fn output_limit(&self) -> OutputLimit {
        Self::limit_of(&self.output_limit)
    }

    /// One of Redis's encoding thresholds (see [`ENCODING_SETTINGS`]).
    pub fn encoding_limit(&self, which: EncodingLimit) -> i64 {
        self.encoding_limits[which as usize].load(Ordering::Relaxed)
    }

    pub fn keyspace_events(&self) -> u32 {
        self.keyspace_events.load(Ordering::Relaxed)
    }

    pub fn tracking_table_max_keys(&self) -> u64 {
        self.tracking_table_max_keys.load(Ordering::Relaxed)
    }

    /// `lfu-log-factor` and `lfu-decay-time`, which the lsm engine's LFU counters
    /// follow (the memory engine ranks keys by its own measure of heat).
    pub fn lfu(&self) -> (u32, u32) {
        let value = |name| {
            let i = accepted_settings::find(name).expect("an accepted setting");
            self.accepted
                .get(i)
                .parse()
                .expect("checked as 0 to 2^31 - 1")
        };
        (value("lfu-log-factor"), value("lfu-decay-time"))
    }

    /// `maxmemory-clients` in bytes: a percent is of `maxmemory` (and off without
    /// one, as in Redis); 0 is off.
    pub fn client_memory_limit(&self) -> usize {
        let i = accepted_settings::find("maxmemory-clients").expect("an accepted setting");
        let value = self.accepted.get(i);
        let bytes = match value.strip_suffix('%') {
            Some(percent) => {
                let percent: u64 = percent.parse().expect("checked as 0 to 100");
                (self.maxmemory() as u128 * percent as u128 / 100) as u64
            }
            None => value.parse().expect("checked as a byte count"),
        };
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// `client-output-buffer-limit`'s classes in Redis's order, named as CONFIG GET
    /// names them.
    fn output_limit_classes(&self) -> [(&'static str, &[AtomicU64; 3]); 3] {
        [
            ("normal", &self.output_limit),
            ("slave", &self.replica_output_limit),
            ("pubsub", &self.pubsub_output_limit),
        ]
    }

    /// The output limit of pub/sub subscribers.
    pub fn pubsub_output_limit(&self) -> OutputLimit {
        Self::limit_of(&self.pubsub_output_limit)
    }

    fn limit_of(class: &[AtomicU64; 3]) -> OutputLimit {
        let [hard, soft, soft_secs] = class.each_ref().map(|v| v.load(Ordering::Relaxed));
        OutputLimit {
            hard,
            soft,
            soft_secs,
            outbox_only: false,
        }
    }

    /// `(name, value)` for every setting whose name matches `pattern` (any case).
    /// Hidden settings only by their exact name, as in Redis.
    pub fn get(&self, pattern: &[u8]) -> Vec<(String, String)> {
        let accepted = SETTINGS.iter().flat_map(|s| {
            let shown = s.flags & HIDDEN == 0 || pattern.eq_ignore_ascii_case(s.name.as_bytes());
            [s.name, s.alias]
                .into_iter()
                .filter(move |n| !n.is_empty() && shown)
        });
        NAMES
            .iter()
            .copied()
            .chain(accepted)
            .filter(|n| glob_match(pattern, n.as_bytes(), true))
            .map(|n| (n.to_string(), self.value(n)))
            .collect()
    }

    /// Why CONFIG SET refuses `name` (lower case) whatever its value, if it does: an
    /// accepted setting Redis lets only the config file set, or protects.
    pub fn refused(&self, name: &str) -> Option<SetError> {
        let flags = SETTINGS[accepted_settings::find(name)?].flags;
        if flags & IMMUTABLE != 0 {
            Some(SetError::Immutable)
        } else if flags & PROTECTED != 0 {
            Some(SetError::Protected)
        } else {
            None
        }
    }

    pub fn value(&self, name: &str) -> String {
        if let Some(i) = encoding_setting(name) {
            return self.encoding_limits[i].load(Ordering::Relaxed).to_string();
        }
        match name {
            "bind" => self.bind.to_string(),
            "port" => self.port().to_string(),
            "protected-mode" => yes_no(self.protected_mode).into(),
            "io-threads" => self.io_threads.to_string(),
            "engine" => self.engine.name().into(),
            // As Redis answers for its `dir`: absolute.
            "dir" => std::path::absolute(&self.dir)
                .unwrap_or_else(|_| self.dir.clone())
                .display()
                .to_string(),
            // Redis's name for what hotkv's `fsync` sets.
            "fsync" | "appendfsync" => self.fsync().to_string(),
            "cache-size" => self.cache_size.to_string(),
            "memtable-size" => self.memtable_size.to_string(),
            "requirepass" => self
                .requirepass()
                .map(|p| String::from_utf8_lossy(&p).into_owned())
                .unwrap_or_default(),
            "maxclients" => self.maxclients().to_string(),
            "maxmemory" => self.maxmemory().to_string(),
            "maxmemory-policy" => POLICIES[self.policy.load(Ordering::Relaxed) as usize]
                .0
                .into(),
            "maxmemory-samples" => self.maxmemory_samples().to_string(),
            "timeout" => self.timeout().to_string(),
            "tracking-table-max-keys" => self.tracking_table_max_keys().to_string(),
            "notify-keyspace-events" => crate::keyspace_events::format(self.keyspace_events()),
            "proto-max-bulk-len" => self.proto_max_bulk_len().to_string(),
            "slowlog-log-slower-than" => self
                .slowlog_log_slower_than
                .load(Ordering::Relaxed)
                .to_string(),
            "slowlog-max-len" => self.slowlog_max_len().to_string(),
            "acllog-max-len" => self.acllog_max_len().to_string(),
            "busy-reply-threshold" | "lua-time-limit" => {
                self.busy_reply_threshold().as_millis().to_string()
            }
            "latency-monitor-threshold" => self
                .latency_monitor_threshold
                .load(Ordering::Relaxed)
                .to_string(),
            "min-replicas-to-write" | "min-slaves-to-write" => self
                .min_replicas_to_write
                .load(Ordering::Relaxed)
                .to_string(),
            "min-replicas-max-lag" | "min-slaves-max-lag" => self
                .min_replicas_max_lag
                .load(Ordering::Relaxed)
                .to_string(),
            "latency-tracking" => yes_no(self.latency_tracking()).into(),
            "latency-tracking-info-percentiles" => self
                .latency_percentiles()
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            "client-output-buffer-limit" => self
                .output_limit_classes()
                .iter()
                .map(|(class, limits)| {
                    let [h, s, t] = limits.each_ref().map(|v| v.load(Ordering::Relaxed));
                    format!("{class} {h} {s} {t}")
                })
                .collect::<Vec<_>>()
                .join(" "),
            "databases" => "1".into(),
            "save" => self.save.read().unwrap_or_else(|e| e.into_inner()).clone(),
            // The LSM engine's log is what Redis's append-only file is to it.
            "appendonly" => yes_no(self.engine != EngineKind::Memory).into(),
            other => {
                let i = accepted_settings::find(other).expect("every name listed has a value");
                self.accepted.get(i)
            }
        }
    }

    /// CONFIG SET of one setting. The error says what was wrong with the value.
    pub fn set(&self, name: &str, value: &[u8]) -> Result<(), SetError> {
        let text = std::str::from_utf8(value)
            .map_err(|_| SetError::Invalid("argument must be text".into()))?;
        let invalid = |why: &str| SetError::Invalid(why.to_string());
        if let Some(i) = encoding_setting(name) {
            let n: i64 = text
                .parse()
                .map_err(|_| invalid("argument couldn't be parsed into an integer"))?;
            let (low, high) = match ENCODING_SETTINGS[i].0 {
                "list-max-listpack-size" => (i32::MIN as i64, i32::MAX as i64),
                "list-compress-depth" => (0, i32::MAX as i64),
                _ => (0, i64::MAX),
            };
            if !(low..=high).contains(&n) {
                return Err(invalid(&format!(
                    "argument must be between {low} and {high} inclusive"
                )));
            }
            self.encoding_limits[i].store(n, Ordering::Relaxed);
            return Ok(());
        }
        match name {
            // Only the value: the command tells the engine (`commands/config.rs`).
            "fsync" | "appendfsync" => {
                let policy = accepted_settings::Form::OneOf(&["everysec", "always", "no"])
                    .check(text)
                    .map_err(SetError::Invalid)?;
                *self.fsync.lock().unwrap_or_else(|e| e.into_inner()) =
                    policy.parse().expect("checked to be a policy");
            }
            // Only the value: the command binds the port (`commands/config.rs`).
            "port" => {
                let port = accepted_settings::Form::Integer(0, u16::MAX.into())
                    .check(text)
                    .map_err(SetError::Invalid)?;
                let port = port.parse().expect("checked to be a port number");
                self.port.store(port, Ordering::Relaxed);
            }
            "requirepass" => {
                let mut password = self.requirepass.write().unwrap_or_else(|e| e.into_inner());
                *password = (!value.is_empty()).then(|| value.to_vec());
            }
            "maxclients" => {
                let n = parse_count(text)
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| invalid("argument must be an integer of at least 1"))?;
                self.maxclients.store(n, Ordering::Relaxed);
            }
            "maxmemory" => {
                let n =
                    parse_memory(text).ok_or_else(|| invalid("argument must be a memory value"))?;
                self.maxmemory.store(n, Ordering::Relaxed);
            }
            "maxmemory-policy" => {
                let i = policy_index(text).ok_or_else(|| invalid("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"))?;
                self.policy.store(i as u8, Ordering::Relaxed);
            }
            "maxmemory-samples" => {
                let n = parse_count(text)
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| invalid("argument must be between 1 and 64 inclusive"))?;
                self.maxmemory_samples.store(n, Ordering::Relaxed);
            }
            "timeout" => {
                let n = parse_count(text)
                    .ok_or_else(|| invalid("argument couldn't be parsed into an integer"))?;
                self.timeout.store(n, Ordering::Relaxed);
            }
            "notify-keyspace-events" => {
                let flags = crate::keyspace_events::parse(text)
                    .ok_or_else(|| invalid(crate::keyspace_events::INVALID))?;
                self.keyspace_events.store(flags, Ordering::Relaxed);
            }
            "tracking-table-max-keys" => {
                let n = parse_count(text)
                    .ok_or_else(|| invalid("argument couldn't be parsed into an integer"))?;
                self.tracking_table_max_keys.store(n, Ordering::Relaxed);
            }
            "proto-max-bulk-len" => {
                let n = parse_memory(text)
                    .filter(|n| *n >= 1024 * 1024)
                    .ok_or_else(|| invalid("argument must be a memory value of at least 1mb"))?;
                self.proto_max_bulk_len.store(n, Ordering::Relaxed);
            }
            "slowlog-log-slower-than" => {
                let n: i64 = text
                    .parse()
                    .map_err(|_| invalid("argument couldn't be parsed into an integer"))?;
                if n < -1 {
                    return Err(invalid(
                        "argument must be between -1 and 9223372036854775807 inclusive",
                    ));
                }
                self.slowlog_log_slower_than.store(n, Ordering::Relaxed);
            }
            "slowlog-max-len" => {
                let n = non_negative(text).map_err(invalid)?;
                self.slowlog_max_len.store(n, Ordering::Relaxed);
            }
            "acllog-max-len" => {
                let n = non_negative(text).map_err(invalid)?;
                self.acllog_max_len.store(n, Ordering::Relaxed);
            }
            "busy-reply-threshold" | "lua-time-limit" => {
                let n = non_negative(text).map_err(invalid)?;
                self.busy_reply_threshold.store(n, Ordering::Relaxed);
            }
            "latency-monitor-threshold" => {
                let n = non_negative(text).map_err(invalid)?;
                self.latency_monitor_threshold.store(n, Ordering::Relaxed);
            }
            "min-replicas-to-write" | "min-slaves-to-write" => {
                let n = non_negative(text).map_err(invalid)?;
                self.min_replicas_to_write.store(n, Ordering::Relaxed);
            }
            "min-replicas-max-lag" | "min-slaves-max-lag" => {
                let n = non_negative(text).map_err(invalid)?;
                self.min_replicas_max_lag.store(n, Ordering::Relaxed);
            }
            "latency-tracking" => {
                let on = parse_yes_no(text).ok_or_else(|| invalid("argument must be 'yes' or 'no'"))?;
                self.latency_tracking.store(on, Ordering::Relaxed);
            }
            "latency-tracking-info-percentiles" => {
                let percentiles = text
                    .split_whitespace()
                    .map(|w| w.parse::<f64>())
                    .collect::<Result<Vec<f64>, _>>()
                    .map_err(|_| invalid("Invalid latency-tracking-info-percentiles parameters"))?;
                if percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
                    return Err(invalid(
                        "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                    ));
                }
                *self
                    .latency_percentiles
                    .write()
                    .unwrap_or_else(|e| e.into_inner()) = percentiles;
            }
            // Redis's checks and words: the whole value is refused or taken.
            "client-output-buffer-limit" => {
                let words: Vec<&str> = text.split_whitespace().collect();
                if !words.len().is_multiple_of(4) {
                    return Err(invalid(
                        "Wrong number of arguments in buffer limit configuration.",
                    ));
                }
                let classes = self.output_limit_classes();
                let mut given = Vec::new();
                for group in words.chunks_exact(4) {
                    let lower = group[0].to_ascii_lowercase();
                    let name = if lower == "replica" { "slave" } else { &lower };
                    let Some(at) = classes.iter().position(|(class, _)| *class == name) else {
                        return Err(invalid(
                            "Invalid client class specified in buffer limit configuration.",
                        ));
                    };
                    let limits = (
                        parse_memory(group[1]),
                        parse_memory(group[2]),
                        parse_count(group[3]),
                    );
                    let (Some(h), Some(s), Some(t)) = limits else {
                        return Err(invalid(
                            "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                        ));
                    };
                    given.push((at, [h, s, t]));
                }
                for (at, values) in given {
                    for (slot, v) in classes[at].1.iter().zip(values) {
                        slot.store(v, Ordering::Relaxed);
                    }
                }
            }
            // The memory engine saves its RDB file on this schedule (`Server::background`).
            // The lsm engine keeps every write (`fsync`), which is more than Redis's
            // snapshots after so many changes in so many seconds would: there the
            // schedule is kept and reported, for the tools that set it.
            "save" => {
                let schedule = save_schedule(text).map_err(invalid)?;
                *self.save.write().unwrap_or_else(|e| e.into_inner()) = schedule;
            }
            "appendonly" if text.eq_ignore_ascii_case(&self.value("appendonly")) => {}
            // As in Redis, whose count of databases is fixed at startup.
            "databases" => return Err(SetError::Immutable),
            "appendonly" => {
                return Err(invalid(
                    "hotkv keeps no append-only file; its durability is the engine's (--engine, --fsync)",
                ))
            }
            // Its value already: nothing to change (Redis's own test suite sets every
            // setting to the value CONFIG GET gave).
            n if STARTUP_ONLY.contains(&n) && text == self.value(n) => {}
            // Redis protects `dir` (refused under its default enable-protected-configs
            // no); hotkv cannot move its data at all, and says what Redis says.
            "dir" => return Err(SetError::Protected),
            n if STARTUP_ONLY.contains(&n) => return Err(SetError::Immutable),
            n => {
                let i = accepted_settings::find(n).ok_or(SetError::Unknown)?;
                if let Some(refused) = self.refused(n) {
                    return Err(refused);
                }
                self.accepted.set(i, text).map_err(SetError::Invalid)?;
            }
        }
        Ok(())
    }

    /// A setting from the config file or a flag, before the server starts.
    pub fn set_at_startup(&mut self, name: &str, value: &str) -> Result<(), String> {
        let name = name.to_ascii_lowercase();
        let bad = |why: &str| format!("bad value '{value}' for '{name}': {why}");
        match name.as_str() {
            "bind" => self.bind = value.parse().map_err(|_| bad("not an IP address"))?,
            "port" => self.port.store(
                value.parse().map_err(|_| bad("not a port number"))?,
                Ordering::Relaxed,
            ),
            "protected-mode" => {
                self.protected_mode = parse_yes_no(value).ok_or_else(|| bad("use yes or no"))?
            }
            "engine" => {
                self.engine = match value.to_ascii_lowercase().as_str() {
                    "memory" => EngineKind::Memory,
                    "lsm" => EngineKind::Lsm,
                    _ => return Err(bad("use lsm or memory")),
                }
            }
            // These two checked against the engine once every setting is in
            // (`Config::check`): the engine may come after them.
            "maxmemory" => self.maxmemory.store(
                parse_memory(value).ok_or_else(|| bad("not a memory value"))?,
                Ordering::Relaxed,
            ),
            "maxmemory-policy" => self.policy.store(
                policy_index(value).ok_or_else(|| bad("not an eviction policy"))? as u8,
                Ordering::Relaxed,
            ),
            "dir" if value.is_empty() => return Err(bad("give a directory")),
            "dir" => self.dir = value.into(),
            "fsync" => {
                *self.fsync.get_mut().unwrap_or_else(|e| e.into_inner()) =
                    value.parse().map_err(|e: String| bad(&e))?
            }
            "cache-size" | "memtable-size" => {
                let n = parse_memory(value)
                    .filter(|n| *n >= 1 << 20 && *n <= 1 << 40)
                    .ok_or_else(|| bad("a memory value from 1mb to 1tb"))?;
                if name == "cache-size" {
                    self.cache_size = n;
                } else {
                    self.memtable_size = n;
                }
            }
            "io-threads" => {
                self.io_threads = value
                    .parse()
                    .ok()
                    .filter(|n| *n <= 128)
                    .ok_or_else(|| bad("a thread count from 0 (one per core) to 128"))?
            }
            other => match accepted_settings::find(other) {
                // The file may set what CONFIG SET may not.
                Some(i) => {
                    self.accepted.set(i, value).map_err(|why| bad(&why))?;
                    if self.accepted.get(i) != SETTINGS[i].default && SETTINGS[i].flags & READ == 0
                    {
                        tracing::warn!(
                            setting = SETTINGS[i].name,
                            "kept for Redis's tools, but hotkv has nothing it changes"
                        );
                    }
                }
                None => self.set(other, value.as_bytes()).map_err(|e| match e {
                    SetError::Invalid(why) => bad(&why),
                    SetError::Unknown => format!("unknown setting '{name}'"),
                    SetError::Immutable | SetError::Protected => {
                        unreachable!("startup settings and accepted ones are handled above")
                    }
                })?,
            },
        }
        Ok(())
    }

    /// Settings that cannot go together, checked once the file and flags are in.
    pub fn check(&self) -> Result<(), String> {
        if !self.users.is_empty() && !self.value("aclfile").is_empty() {
            return Err(
                "Configuring Redis with users defined in redis.conf and at the same \
                        setting an ACL file path is invalid. This setup is very likely to lead \
                        to configuration errors and security holes, please define either an ACL \
                        file or declare users directly in your redis.conf, but not both."
                    .into(),
            );
        }
        if !self.bind.is_loopback() && self.protected_mode && self.requirepass().is_none() {
            return Err(format!(
                "refusing to listen on {} without a password; set requirepass, or pass --protected-mode no",
                self.bind
            ));
        }
        Ok(())
    }

    /// CONFIG REWRITE: puts the current settings into the config file the server
    /// started from, as Redis does: a line setting a name gets its current value (later
    /// lines setting the same name go), comments and unknown lines stay, settings that
    /// differ from the defaults and have no line are appended. The new file replaces
    /// the old one by rename, after an fsync, so a crash leaves one or the other.
    ///
    /// `users` are the `user` lines to write (ACL LIST's), in place of the file's own:
    /// none when the users live in an ACL file, as Redis writes them.
    pub fn rewrite(&self, users: &[String]) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("The server is running without a config file".into());
        };
        let old = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("Rewriting config file: {e}")),
        };
        let defaults = Config::default();
        let names: Vec<&str> = NAMES
            .iter()
            .copied()
            .filter(|n| !NOT_REWRITTEN.contains(n))
            .chain(SETTINGS.iter().map(|s| s.name))
            .collect();
        let mut written: Vec<&str> = Vec::new();
        let mut out = String::new();
        let mut users_written = false;
        for line in old.lines() {
            let name = resp::split_args(line.trim().as_bytes())
                .filter(|_| !line.trim_start().starts_with('#'))
                .and_then(|words| {
                    words
                        .first()
                        .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
                });
            if name.as_deref() == Some("user") {
                if !users_written {
                    users_written = true;
                    out.extend(users.iter().map(|u| format!("{u}\n")));
                }
                continue;
            }
            match name
                .as_deref()
                .and_then(|n| names.iter().find(|m| **m == n))
            {
                Some(n) if written.contains(n) => continue,
                Some(n) => {
                    written.push(n);
                    out.push_str(&self.directive(n));
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        let mut header = false;
        for n in names {
            if written.contains(&n) || self.value(n) == defaults.value(n) {
                continue;
            }
            if !header {
                out.push_str("# Generated by CONFIG REWRITE\n");
                header = true;
            }
            out.push_str(&self.directive(n));
            out.push('\n');
        }
        if !users_written && !users.is_empty() {
            if !header {
                out.push_str("# Generated by CONFIG REWRITE\n");
            }
            out.extend(users.iter().map(|u| format!("{u}\n")));
        }
        crate::replace_file::write_atomically(path, out.as_bytes())
            .map_err(|e| format!("Rewriting config file: {e}"))
    }

    /// `name value` as a config file line: list settings as separate words, any other
    /// value quoted when it is empty or holds spaces, quotes or backslashes.
    fn directive(&self, name: &str) -> String {
        let value = self.value(name);
        if LISTS.contains(&name) {
            return format!("{name} {value}");
        }
        let plain = !value.is_empty()
            && !value.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '\\');
        if plain {
            format!("{name} {value}")
        } else {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
            format!("{name} \"{escaped}\"")
        }
    }

    /// Applies a redis.conf-syntax file.
    pub fn load_file(&mut self, text: &str, path: &str) -> Result<(), String> {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |e: String| format!("{path}:{}: {e}", n + 1);
            let words =
                resp::split_args(line.as_bytes()).ok_or_else(|| at("unbalanced quotes".into()))?;
            if let Some((keyword, declared)) = words.split_first() {
                if keyword.eq_ignore_ascii_case(b"user") {
                    crate::commands::users::check_declaration(declared).map_err(at)?;
                    if self.users.iter().any(|u| u[0] == declared[0]) {
                        return Err(at(format!(
                            "Error in user declaration '{}': Duplicate user found. A user can \
                             only be defined once in config files",
                            String::from_utf8_lossy(&declared[0])
                        )));
                    }
                    self.users.push(declared.to_vec());
                    continue;
                }
            }
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            match words.as_slice() {
                [name, value] => self.set_at_startup(name, value).map_err(at)?,
                // Settings that are lists take their words as separate arguments.
                [name, values @ ..] if LISTS.contains(&name.to_ascii_lowercase().as_str()) => {
                    self.set_at_startup(name, &values.join(" ")).map_err(at)?
                }
                [name, ..] => return Err(at(format!("'{name}' takes exactly one argument"))),
                [] => {}
            }
        }
        Ok(())
    }
}

pub enum SetError {
    Unknown,
    Immutable,
    Protected,
    Invalid(String),
}

pub(crate) fn parse_yes_no(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

pub(crate) fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn parse_count(text: &str) -> Option<u64> {
    text.parse().ok()
}

/// Redis's memory values: a byte count with an optional unit, k/m/g (powers of 1000)
/// or kb/mb/gb (powers of 1024), in any case.
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1_000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// `text` as a snapshot schedule (pairs of seconds, at least 1, and changes, at least
/// 0) printed as CONFIG GET prints it, or Redis's error.
/// The save schedule's points, (seconds, changes) each: save once that many changes
/// are that many seconds old.
pub fn save_points(schedule: &str) -> impl Iterator<Item = (u64, u64)> + '_ {
    let numbers: Vec<u64> = schedule.split(' ').filter_map(|n| n.parse().ok()).collect();
    (0..numbers.len() / 2).map(move |i| (numbers[2 * i], numbers[2 * i + 1]))
}

fn save_schedule(text: &str) -> Result<String, &'static str> {
    let numbers: Option<Vec<i64>> = accepted_settings::arguments(text)
        .iter()
        .enumerate()
        .map(|(i, w)| w.parse::<i64>().ok().filter(|n| *n >= 1 - (i % 2) as i64))
        .collect();
    match numbers {
        Some(numbers) if numbers.len().is_multiple_of(2) => Ok(numbers
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(" ")),
        _ => Err("Invalid save parameters"),
    }
}

/// An integer from 0 to `i64::MAX`, as Redis bounds its counts and thresholds.
fn non_negative(text: &str) -> Result<u64, &'static str> {
    let n: i128 = text
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer")?;
    u64::try_from(n)
        .ok()
        .filter(|n| *n <= i64::MAX as u64)
        .ok_or("argument must be between 0 and 9223372036854775807 inclusive")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_values_as_redis_reads_them() {
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("2mb"), Some(2 << 20));
        assert_eq!(parse_memory("3g"), Some(3_000_000_000));
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("1tb"), None);
        assert_eq!(parse_memory(""), None);
    }

    #[test]
    fn rewrite_updates_lines_keeps_comments_and_appends_the_rest() {
        let dir = std::env::temp_dir().join(format!("hotkv-rewrite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hotkv.conf");
        let original =
            "# my settings\nport 7000\nmaxmemory 10mb\n\nmaxmemory 1mb\nunknown-thing 3\n";
        std::fs::write(&path, original).unwrap();
        let mut c = Config {
            engine: EngineKind::Memory,
            ..Config::default()
        };
        assert!(c
            .rewrite(&[])
            .unwrap_err()
            .contains("without a config file"));
        c.load_file(original.replace("unknown-thing 3\n", "").as_str(), "test")
            .unwrap();
        c.file = Some(path.clone());
        c.set("maxmemory", b"20mb").ok().unwrap();
        c.set("timeout", b"5").ok().unwrap();
        assert!(c.requirepass().is_none());
        c.set("requirepass", b"p \"w\\").ok().unwrap();
        assert_eq!(c.requirepass().as_deref(), Some(&b"p \"w\\"[..]));
        c.set("client-output-buffer-limit", b"normal 1mb 512kb 10")
            .ok()
            .unwrap();
        // Redis's settings that hotkv only keeps are written and read back too, an
        // immutable one (which the file may set) and values with spaces among them.
        c.set("hz", b"20").ok().unwrap();
        c.set("shutdown-on-sigterm", b"force NOSAVE").ok().unwrap();
        assert!(matches!(
            c.set("daemonize", b"yes"),
            Err(SetError::Immutable)
        ));
        c.set_at_startup("daemonize", "yes").unwrap();
        c.set_at_startup("oom-score-adj-values", "1 2 3").unwrap();
        c.rewrite(&[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my settings\nport 7000\nmaxmemory 20971520\n\nunknown-thing 3\n# Generated by CONFIG REWRITE\n"), "{text}");
        assert_eq!(text.matches("maxmemory ").count(), 1, "{text}");
        // Everything written reads back as the same settings.
        let mut again = Config::default();
        again
            .load_file(&text.replace("unknown-thing 3\n", ""), "test")
            .unwrap();
        for name in NAMES.iter().chain(SETTINGS.iter().map(|s| &s.name)) {
            assert_eq!(again.value(name), c.value(name), "{name} in\n{text}");
        }
        assert_eq!(again.value("shutdown-on-sigterm"), "nosave force");
        assert_eq!(again.value("daemonize"), "yes");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Redis's settings that hotkv only keeps: none is also one of hotkv's own, each
    /// default is a value CONFIG SET takes back unchanged (Redis's test suite sets every
    /// setting to what CONFIG GET gave), and hidden ones are listed only when named.
    #[test]
    fn accepted_settings_take_back_their_defaults() {
        let c = Config::default();
        for s in SETTINGS {
            assert!(
                !NAMES.contains(&s.name) && !NAMES.contains(&s.alias),
                "{}",
                s.name
            );
            assert_eq!(
                s.form.check(s.default).as_deref(),
                Ok(s.default),
                "{}",
                s.name
            );
            assert_eq!(c.get(s.name.as_bytes()).len(), 1, "{}", s.name);
        }
        let listed: Vec<String> = c.get(b"*").into_iter().map(|(n, _)| n).collect();
        assert!(listed.iter().any(|n| n == "slaveof") && listed.iter().any(|n| n == "replicaof"));
        assert!(!listed.iter().any(|n| n == "key-load-delay"));
        assert_eq!(
            c.get(b"KEY-LOAD-DELAY"),
            [("key-load-delay".into(), "0".into())]
        );
        assert!(c.get(b"key-load-*").is_empty());
        assert!(matches!(
            c.set("dbfilename", b"x.rdb"),
            Err(SetError::Protected)
        ));
        assert!(matches!(
            c.set("dir", b"/elsewhere"),
            Err(SetError::Protected)
        ));
        // The value it has is taken, as Redis's test suite sets every setting so.
        let dir = c.value("dir");
        assert!(c.set("dir", dir.as_bytes()).is_ok());
    }

    #[test]
    fn save_schedules_as_redis_checks_and_prints_them() {
        let lsm = Config::default();
        lsm.set("save", b"3000 5 +60 010").ok().unwrap();
        assert_eq!(lsm.value("save"), "3000 5 60 10");
        for bad in ["3000", "0 5", "10 -1", "10 x", "3000  5", " 3000 5"] {
            assert!(
                matches!(lsm.set("save", bad.as_bytes()), Err(SetError::Invalid(e)) if e == "Invalid save parameters"),
                "{bad}"
            );
        }
        assert_eq!(lsm.value("save"), "3000 5 60 10");
        lsm.set("save", b"").ok().unwrap();
        assert_eq!(lsm.value("save"), "");
        let mut file = Config::default();
        file.load_file("save 60 1\nengine memory\nsave 3600 1 300 100\n", "f")
            .unwrap();
        file.check().unwrap();
        let points: Vec<_> = save_points(&file.value("save")).collect();
        assert_eq!(points, [(3600, 1), (300, 100)]);
        assert_eq!(save_points("").count(), 0);
    }

    #[test]
    fn encoding_settings_answer_to_both_names() {
        let mut c = Config::default();
        c.load_file(
            "hash-max-ziplist-entries 100\nzset-max-listpack-value 10\n",
            "redis.conf",
        )
        .unwrap();
        assert_eq!(c.encoding_limit(EncodingLimit::HashEntries), 100);
        assert_eq!(c.encoding_limit(EncodingLimit::ZsetValue), 10);
        assert_eq!(
            c.get(b"hash-max-*-entries"),
            vec![
                ("hash-max-listpack-entries".to_string(), "100".to_string()),
                ("hash-max-ziplist-entries".to_string(), "100".to_string()),
            ]
        );
        assert!(matches!(
            c.set("set-max-intset-entries", b"-1"),
            Err(SetError::Invalid(e)) if e.contains("between 0 and")
        ));
        assert_eq!(c.encoding_limit(EncodingLimit::SetIntsetEntries), 512);
    }

    #[test]
    fn file_then_get() {
        let mut c = Config::default();
        c.load_file(
            "# comment\nport 7000\nmaxmemory 10mb\nmaxmemory-policy allkeys-lru\nrequirepass \"p w\"\n",
            "test.conf",
        )
        .unwrap();
        assert_eq!(c.port(), 7000);
        assert_eq!(c.maxmemory(), 10 << 20);
        assert_eq!(c.policy(), Policy::AllKeysLru);
        assert_eq!(c.check(), Ok(()));
        assert_eq!(c.requirepass().as_deref(), Some(&b"p w"[..]));
        assert_eq!(
            c.get(b"maxmemory*"),
            vec![
                ("maxmemory".to_string(), (10u64 << 20).to_string()),
                ("maxmemory-policy".to_string(), "allkeys-lru".to_string()),
                ("maxmemory-samples".to_string(), "5".to_string()),
                ("maxmemory-eviction-tenacity".to_string(), "10".to_string()),
                ("maxmemory-clients".to_string(), "0".to_string()),
            ]
        );
        let e = c.load_file("maxmemory lots\n", "x.conf").unwrap_err();
        assert!(
            e.starts_with("x.conf:1: bad value 'lots' for 'maxmemory'"),
            "{e}"
        );
        assert!(c
            .load_file("nosuch 1\n", "x.conf")
            .unwrap_err()
            .contains("unknown setting 'nosuch'"));
    }
}
