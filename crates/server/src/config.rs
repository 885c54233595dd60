//! Server settings: from defaults, then the config file, then command-line flags, and
//! at run time from CONFIG SET. The file uses redis.conf syntax: one `name value`
//! directive per line, `#` comments, arguments quoted as Redis quotes them; names are
//! the ones CONFIG GET lists.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::RwLock;

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
    pub port: u16,
    pub protected_mode: bool,
    pub engine: String,
    /// Threads serving connections (Redis's `io-threads`); 0: one per core.
    pub io_threads: usize,
    requirepass: RwLock<Option<Vec<u8>>>,
    maxclients: AtomicU64,
    maxmemory: AtomicU64,
    policy: AtomicU8,
    maxmemory_samples: AtomicU64,
    timeout: AtomicU64,
    proto_max_bulk_len: AtomicU64,
    /// `client-output-buffer-limit` for normal clients: hard bytes, soft bytes, soft
    /// seconds (0: no limit), as in Redis.
    output_limit: [AtomicU64; 3],
}

/// The classes Redis's `client-output-buffer-limit` names besides `normal`, with
/// Redis's defaults: hotkv has no replicas or pub/sub, so they are reported, not used.
const OTHER_OUTPUT_LIMITS: &str = "slave 268435456 67108864 60 pubsub 33554432 8388608 60";

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 6379,
            protected_mode: true,
            engine: "memory".into(),
            io_threads: 0,
            requirepass: RwLock::new(None),
            maxclients: AtomicU64::new(10_000),
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(NO_EVICTION),
            maxmemory_samples: AtomicU64::new(5),
            timeout: AtomicU64::new(0),
            proto_max_bulk_len: AtomicU64::new(512 * 1024 * 1024),
            output_limit: Default::default(),
        }
    }
}

/// Names CONFIG GET answers, in the order it lists them.
const NAMES: &[&str] = &[
    "bind",
    "port",
    "protected-mode",
    "io-threads",
    "requirepass",
    "maxclients",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "timeout",
    "proto-max-bulk-len",
    "client-output-buffer-limit",
    "databases",
    "save",
    "appendonly",
];

/// Names only the config file and flags may set: the listener exists by then.
const STARTUP_ONLY: &[&str] = &["bind", "port", "protected-mode", "engine", "io-threads"];

impl Config {
    pub fn requirepass(&self) -> Option<Vec<u8>> {
        self.requirepass
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
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
    pub fn proto_max_bulk_len(&self) -> usize {
        self.proto_max_bulk_len.load(Ordering::Relaxed) as usize
    }

    /// `(hard bytes, soft bytes, soft seconds)` for normal clients; 0 turns a limit off.
    pub fn output_limit(&self) -> (u64, u64, u64) {
        let [h, s, t] = &self.output_limit;
        (
            h.load(Ordering::Relaxed),
            s.load(Ordering::Relaxed),
            t.load(Ordering::Relaxed),
        )
    }

    /// `(name, value)` for every setting whose name matches `pattern` (any case).
    pub fn get(&self, pattern: &[u8]) -> Vec<(String, String)> {
        NAMES
            .iter()
            .filter(|n| glob_match(pattern, n.as_bytes(), true))
            .map(|n| (n.to_string(), self.value(n)))
            .collect()
    }

    fn value(&self, name: &str) -> String {
        match name {
            "bind" => self.bind.to_string(),
            "port" => self.port.to_string(),
            "protected-mode" => yes_no(self.protected_mode).into(),
            "io-threads" => self.io_threads.to_string(),
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
            "proto-max-bulk-len" => self.proto_max_bulk_len().to_string(),
            "client-output-buffer-limit" => {
                let (h, s, t) = self.output_limit();
                format!("normal {h} {s} {t} {OTHER_OUTPUT_LIMITS}")
            }
            "databases" => "1".into(),
            "save" => String::new(),
            "appendonly" => "no".into(),
            _ => unreachable!("every name in NAMES has a value"),
        }
    }

    /// CONFIG SET of one setting. The error says what was wrong with the value.
    pub fn set(&self, name: &str, value: &[u8]) -> Result<(), SetError> {
        let text = std::str::from_utf8(value)
            .map_err(|_| SetError::Invalid("argument must be text".into()))?;
        let invalid = |why: &str| SetError::Invalid(why.to_string());
        match name {
            "requirepass" => {
                *self.requirepass.write().unwrap_or_else(|e| e.into_inner()) =
                    (!value.is_empty()).then(|| value.to_vec());
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
                let i = POLICIES
                    .iter()
                    .position(|(n, _)| n.eq_ignore_ascii_case(text))
                    .ok_or_else(|| invalid("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"))?;
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
            "proto-max-bulk-len" => {
                let n = parse_memory(text)
                    .filter(|n| *n >= 1024 * 1024)
                    .ok_or_else(|| invalid("argument must be a memory value of at least 1mb"))?;
                self.proto_max_bulk_len.store(n, Ordering::Relaxed);
            }
            "client-output-buffer-limit" => {
                let words: Vec<&str> = text.split_whitespace().collect();
                if words.is_empty() || !words.len().is_multiple_of(4) {
                    return Err(invalid(
                        "wrong number of arguments: give <class> <hard> <soft> <soft seconds> ...",
                    ));
                }
                let mut normal = None;
                for group in words.chunks_exact(4) {
                    let limits = (
                        parse_memory(group[1]),
                        parse_memory(group[2]),
                        parse_count(group[3]),
                    );
                    let (Some(h), Some(s), Some(t)) = limits else {
                        return Err(invalid("limits must be memory values and seconds a count"));
                    };
                    match group[0].to_ascii_lowercase().as_str() {
                        "normal" => normal = Some([h, s, t]),
                        "slave" | "replica" | "pubsub" => {}
                        other => return Err(invalid(&format!("invalid client class '{other}'"))),
                    }
                }
                if let Some(values) = normal {
                    for (slot, v) in self.output_limit.iter().zip(values) {
                        slot.store(v, Ordering::Relaxed);
                    }
                }
            }
            "save" if text.is_empty() => {}
            "appendonly" if text.eq_ignore_ascii_case("no") => {}
            "save" | "appendonly" | "databases" => {
                return Err(invalid(
                    "hotkv keeps no snapshot or append-only file and has one database",
                ))
            }
            n if STARTUP_ONLY.contains(&n) => return Err(SetError::Immutable),
            _ => return Err(SetError::Unknown),
        }
        Ok(())
    }

    /// A setting from the config file or a flag, before the server starts.
    pub fn set_at_startup(&mut self, name: &str, value: &str) -> Result<(), String> {
        let name = name.to_ascii_lowercase();
        let bad = |why: &str| format!("bad value '{value}' for '{name}': {why}");
        match name.as_str() {
            "bind" => self.bind = value.parse().map_err(|_| bad("not an IP address"))?,
            "port" => self.port = value.parse().map_err(|_| bad("not a port number"))?,
            "protected-mode" => {
                self.protected_mode = match value.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(bad("use yes or no")),
                }
            }
            "engine" => self.engine = value.to_string(),
            "io-threads" => {
                self.io_threads = value
                    .parse()
                    .ok()
                    .filter(|n| *n <= 128)
                    .ok_or_else(|| bad("a thread count from 0 (one per core) to 128"))?
            }
            other => self.set(other, value.as_bytes()).map_err(|e| match e {
                SetError::Invalid(why) => bad(&why),
                SetError::Unknown => format!("unknown setting '{name}'"),
                SetError::Immutable => unreachable!("startup settings are handled above"),
            })?,
        }
        Ok(())
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
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            match words.as_slice() {
                [name, value] => self.set_at_startup(name, value).map_err(at)?,
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
    Invalid(String),
}

fn yes_no(b: bool) -> &'static str {
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
    fn file_then_get() {
        let mut c = Config::default();
        c.load_file(
            "# comment\nport 7000\nmaxmemory 10mb\nmaxmemory-policy allkeys-lru\nrequirepass \"p w\"\n",
            "test.conf",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.maxmemory(), 10 << 20);
        assert_eq!(c.policy(), Policy::AllKeysLru);
        assert_eq!(c.requirepass().as_deref(), Some(&b"p w"[..]));
        assert_eq!(
            c.get(b"maxmemory*"),
            vec![
                ("maxmemory".to_string(), (10u64 << 20).to_string()),
                ("maxmemory-policy".to_string(), "allkeys-lru".to_string()),
                ("maxmemory-samples".to_string(), "5".to_string()),
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
