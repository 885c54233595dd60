//! Redis settings that hotkv accepts and reports but does not act on: replication,
//! cluster, RDB and append-only-file persistence, active defragmentation, logging,
//! process supervision and the like, which have no counterpart here (hotkv's own are in
//! `config.rs`). Tools and client libraries read and set them as they would on Redis
//! (Redis's own test suite sets every setting CONFIG GET lists to the value it gave),
//! so CONFIG GET lists them with Redis 7.0's defaults and CONFIG SET checks a value as
//! Redis checks it and keeps it, and refuses those Redis refuses at run time. The TLS
//! settings are left out, as in a Redis built without TLS: hotkv has none. Of these,
//! `lfu-log-factor` and `lfu-decay-time` are read (`Config::lfu`: the lsm engine's LFU
//! counters follow them), `maxmemory-clients` (`Config::client_memory_limit`: client
//! eviction, `clients.rs`), and for Redis's RDB file, which the memory engine writes,
//! `dbfilename`, `rdbcompression` (DUMP payloads follow it too) and
//! `rdb-key-save-delay` (`rdb_save.rs`): these are flagged [`READ`].
//!
//! The table is Redis 7.0.15's `config.c` (name, old name, form, bounds, flags) with
//! the defaults its `CONFIG GET` printed.

use std::sync::RwLock;

use crate::config::{parse_memory, parse_yes_no, yes_no};

/// The values a setting takes, and how Redis checks one.
pub enum Form {
    YesNo,
    Text,
    /// One of these words (any case).
    OneOf(&'static [&'static str]),
    /// Any of these words together; the first is the value with none set.
    Flags(&'static [&'static str]),
    Integer(i128, i128),
    /// An integer within the first two bounds, then kept within the last two (Redis's
    /// `hz` is a hint it caps).
    Capped(i128, i128, i128, i128),
    /// A byte count with an optional unit (`10mb`).
    Memory(i128, i128),
    /// A byte count within the bounds, then raised to the last figure if below it (the
    /// replication backlog's least size).
    MemoryAtLeast(i128, i128, i128),
    /// A byte count, or a percent (`5%`, kept as its negative).
    MemoryOrPercent(i128, i128),
    Octal(i128, i128),
    /// Three integers from -2000 to 2000 (the OOM score adjustments for a primary, a
    /// replica and a forked child).
    OomScores,
}

/// Refused by CONFIG SET at run time (the config file may set it).
pub const IMMUTABLE: u8 = 1;
/// Listed by CONFIG GET only when asked for by its exact name.
pub const HIDDEN: u8 = 2;
/// Refused by CONFIG SET, as Redis refuses it with `enable-protected-configs no`.
pub const PROTECTED: u8 = 4;
/// Read by hotkv, which acts on it (the others are only kept).
pub const READ: u8 = 8;

pub struct Setting {
    pub name: &'static str,
    /// The name Redis gave it before 7.0, or "".
    pub alias: &'static str,
    pub form: Form,
    pub default: &'static str,
    pub flags: u8,
}

const fn accepted(
    name: &'static str,
    alias: &'static str,
    form: Form,
    default: &'static str,
    flags: u8,
) -> Setting {
    Setting {
        name,
        alias,
        form,
        default,
        flags,
    }
}

use Form::*;

#[rustfmt::skip]
pub const SETTINGS: &[Setting] = &[
    accepted("rdbchecksum", "", YesNo, "yes", IMMUTABLE),
    accepted("daemonize", "", YesNo, "no", IMMUTABLE),
    accepted("io-threads-do-reads", "", YesNo, "no", IMMUTABLE),
    accepted("always-show-logo", "", YesNo, "no", IMMUTABLE),
    accepted("rdbcompression", "", YesNo, "yes", READ),
    accepted("rdb-del-sync-files", "", YesNo, "no", 0),
    accepted("activerehashing", "", YesNo, "yes", 0),
    accepted("stop-writes-on-bgsave-error", "", YesNo, "yes", 0),
    accepted("set-proc-title", "", YesNo, "yes", IMMUTABLE),
    accepted("dynamic-hz", "", YesNo, "yes", 0),
    accepted("lazyfree-lazy-eviction", "", YesNo, "no", 0),
    accepted("lazyfree-lazy-expire", "", YesNo, "no", 0),
    accepted("lazyfree-lazy-server-del", "", YesNo, "no", 0),
    accepted("lazyfree-lazy-user-del", "", YesNo, "no", 0),
    accepted("lazyfree-lazy-user-flush", "", YesNo, "no", 0),
    accepted("repl-disable-tcp-nodelay", "", YesNo, "no", 0),
    accepted("repl-diskless-sync", "", YesNo, "yes", 0),
    accepted("aof-rewrite-incremental-fsync", "", YesNo, "yes", 0),
    accepted("no-appendfsync-on-rewrite", "", YesNo, "no", 0),
    accepted("cluster-require-full-coverage", "", YesNo, "yes", 0),
    accepted("rdb-save-incremental-fsync", "", YesNo, "yes", 0),
    accepted("aof-load-truncated", "", YesNo, "yes", 0),
    accepted("aof-use-rdb-preamble", "", YesNo, "yes", 0),
    accepted("aof-timestamp-enabled", "", YesNo, "no", 0),
    accepted("cluster-replica-no-failover", "cluster-slave-no-failover", YesNo, "no", 0),
    accepted("replica-lazy-flush", "slave-lazy-flush", YesNo, "no", 0),
    accepted("replica-serve-stale-data", "slave-serve-stale-data", YesNo, "yes", 0),
    accepted("replica-read-only", "slave-read-only", YesNo, "yes", 0),
    accepted("replica-ignore-maxmemory", "slave-ignore-maxmemory", YesNo, "yes", 0),
    accepted("jemalloc-bg-thread", "", YesNo, "yes", 0),
    accepted("activedefrag", "", YesNo, "no", 0),
    accepted("syslog-enabled", "", YesNo, "no", IMMUTABLE),
    accepted("cluster-enabled", "", YesNo, "no", IMMUTABLE),
    accepted("cluster-allow-reads-when-down", "", YesNo, "no", 0),
    accepted("cluster-allow-pubsubshard-when-down", "", YesNo, "yes", 0),
    accepted("crash-log-enabled", "", YesNo, "yes", 0),
    accepted("crash-memcheck-enabled", "", YesNo, "yes", 0),
    accepted("use-exit-on-panic", "", YesNo, "no", HIDDEN),
    accepted("disable-thp", "", YesNo, "yes", IMMUTABLE),
    accepted("cluster-allow-replica-migration", "", YesNo, "yes", 0),
    accepted("replica-announced", "", YesNo, "yes", 0),
    accepted("aof-disable-auto-gc", "", YesNo, "no", 0),
    accepted("replica-ignore-disk-write-errors", "", YesNo, "no", 0),
    accepted("aclfile", "", Text, "", IMMUTABLE),
    accepted("unixsocket", "", Text, "", IMMUTABLE),
    accepted("pidfile", "", Text, "", IMMUTABLE),
    accepted("replica-announce-ip", "slave-announce-ip", Text, "", 0),
    accepted("masteruser", "", Text, "", 0),
    accepted("cluster-announce-ip", "", Text, "", 0),
    accepted("cluster-config-file", "", Text, "nodes.conf", IMMUTABLE),
    accepted("cluster-announce-hostname", "", Text, "", 0),
    accepted("syslog-ident", "", Text, "redis", IMMUTABLE),
    accepted("dbfilename", "", Text, "dump.rdb", PROTECTED | READ),
    accepted("appendfilename", "", Text, "appendonly.aof", IMMUTABLE),
    accepted("appenddirname", "", Text, "appendonlydir", IMMUTABLE),
    accepted("server_cpulist", "", Text, "", IMMUTABLE),
    accepted("bio_cpulist", "", Text, "", IMMUTABLE),
    accepted("aof_rewrite_cpulist", "", Text, "", IMMUTABLE),
    accepted("bgsave_cpulist", "", Text, "", IMMUTABLE),
    accepted("ignore-warnings", "", Text, "", 0),
    accepted("proc-title-template", "", Text, "{title} {listen-addr} {server-mode}", 0),
    accepted("bind-source-addr", "", Text, "", 0),
    accepted("logfile", "", Text, "", IMMUTABLE),
    accepted("masterauth", "", Text, "", 0),
    accepted("supervised", "", OneOf(&["upstart", "systemd", "auto", "no"]), "no", IMMUTABLE),
    accepted("syslog-facility", "", OneOf(&["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"]), "local0", IMMUTABLE),
    accepted("repl-diskless-load", "", OneOf(&["disabled", "on-empty-db", "swapdb"]), "disabled", 0),
    accepted("loglevel", "", OneOf(&["debug", "verbose", "notice", "warning"]), "notice", 0),
    accepted("oom-score-adj", "", OneOf(&["no", "yes", "relative", "absolute"]), "no", 0),
    accepted("acl-pubsub-default", "", OneOf(&["allchannels", "resetchannels"]), "resetchannels", 0),
    accepted("sanitize-dump-payload", "", OneOf(&["no", "yes", "clients"]), "no", 0),
    accepted("enable-protected-configs", "", OneOf(&["no", "yes", "local"]), "no", IMMUTABLE),
    accepted("enable-debug-command", "", OneOf(&["no", "yes", "local"]), "no", IMMUTABLE),
    accepted("enable-module-command", "", OneOf(&["no", "yes", "local"]), "no", IMMUTABLE),
    accepted("cluster-preferred-endpoint-type", "", OneOf(&["ip", "hostname", "unknown-endpoint"]), "ip", 0),
    accepted("propagation-error-behavior", "", OneOf(&["ignore", "panic", "panic-on-replicas"]), "ignore", 0),
    accepted("shutdown-on-sigint", "", Flags(&["default", "save", "nosave", "now", "force"]), "default", 0),
    accepted("shutdown-on-sigterm", "", Flags(&["default", "save", "nosave", "now", "force"]), "default", 0),
    accepted("auto-aof-rewrite-percentage", "", Integer(0, 2147483647), "100", 0),
    accepted("cluster-replica-validity-factor", "cluster-slave-validity-factor", Integer(0, 2147483647), "10", 0),
    accepted("tcp-keepalive", "", Integer(0, 2147483647), "300", 0),
    accepted("cluster-migration-barrier", "", Integer(0, 2147483647), "1", 0),
    accepted("active-defrag-cycle-min", "", Integer(1, 99), "1", 0),
    accepted("active-defrag-cycle-max", "", Integer(1, 99), "25", 0),
    accepted("active-defrag-threshold-lower", "", Integer(0, 1000), "10", 0),
    accepted("active-defrag-threshold-upper", "", Integer(0, 1000), "100", 0),
    accepted("lfu-log-factor", "", Integer(0, 2147483647), "10", READ),
    accepted("lfu-decay-time", "", Integer(0, 2147483647), "1", READ),
    accepted("replica-priority", "slave-priority", Integer(0, 2147483647), "100", 0),
    accepted("repl-diskless-sync-delay", "", Integer(0, 2147483647), "5", 0),
    accepted("maxmemory-eviction-tenacity", "", Integer(0, 100), "10", 0),
    accepted("replica-announce-port", "slave-announce-port", Integer(0, 65535), "0", 0),
    accepted("tcp-backlog", "", Integer(0, 2147483647), "511", IMMUTABLE),
    accepted("cluster-port", "", Integer(0, 65535), "0", IMMUTABLE),
    accepted("cluster-announce-bus-port", "", Integer(0, 65535), "0", 0),
    accepted("cluster-announce-port", "", Integer(0, 65535), "0", 0),
    accepted("cluster-announce-tls-port", "", Integer(0, 65535), "0", 0),
    accepted("repl-timeout", "", Integer(1, 2147483647), "60", 0),
    accepted("repl-ping-replica-period", "repl-ping-slave-period", Integer(1, 2147483647), "10", 0),
    accepted("rdb-key-save-delay", "", Integer(-2147483648, 2147483647), "0", HIDDEN | READ),
    accepted("key-load-delay", "", Integer(-2147483648, 2147483647), "0", HIDDEN),
    accepted("active-expire-effort", "", Integer(1, 10), "1", 0),
    accepted("hz", "", Capped(0, 2147483647, 1, 500), "10", 0),
    accepted("watchdog-period", "", Integer(0, 2147483647), "0", HIDDEN),
    accepted("shutdown-timeout", "", Integer(0, 2147483647), "10", 0),
    accepted("repl-diskless-sync-max-replicas", "", Integer(0, 2147483647), "0", 0),
    accepted("unixsocketperm", "", Octal(0, 511), "0", IMMUTABLE),
    accepted("socket-mark-id", "", Integer(0, 4294967295), "0", IMMUTABLE),
    accepted("active-defrag-max-scan-fields", "", Integer(1, 9223372036854775807), "1000", 0),
    accepted("cluster-node-timeout", "", Integer(0, 9223372036854775807), "15000", 0),
    accepted("repl-backlog-size", "", MemoryAtLeast(1, 9223372036854775807, 16384), "1048576", 0),
    accepted("cluster-link-sendbuf-limit", "", Memory(0, 18446744073709551615), "0", 0),
    accepted("active-defrag-ignore-bytes", "", Memory(1, 9223372036854775807), "104857600", 0),
    accepted("hll-sparse-max-bytes", "", Memory(0, 9223372036854775807), "3000", 0),
    accepted("client-query-buffer-limit", "", Memory(1048576, 9223372036854775807), "1073741824", 0),
    accepted("maxmemory-clients", "", MemoryOrPercent(-100, 9223372036854775807), "0", READ),
    accepted("repl-backlog-ttl", "", Integer(0, 9223372036854775807), "3600", 0),
    accepted("auto-aof-rewrite-min-size", "", Memory(0, 9223372036854775807), "67108864", 0),
    accepted("loading-process-events-interval-bytes", "", Integer(1024, 2147483647), "2097152", HIDDEN),
    accepted("oom-score-adj-values", "", OomScores, "0 200 800", 0),
    accepted("replicaof", "slaveof", Text, "", IMMUTABLE),
];

/// The index in [`SETTINGS`] of `name` (lower case), by its name or old name.
pub fn find(name: &str) -> Option<usize> {
    SETTINGS
        .iter()
        .position(|s| s.name == name || (!s.alias.is_empty() && s.alias == name))
}

impl Form {
    /// `text` as CONFIG GET prints it once set, or why Redis refuses it.
    pub fn check(&self, text: &str) -> Result<String, String> {
        match *self {
            YesNo => parse_yes_no(text)
                .map(|on| yes_no(on).into())
                .ok_or_else(|| "argument must be 'yes' or 'no'".into()),
            Text => Ok(text.into()),
            OneOf(words) => words
                .iter()
                .find(|w| w.eq_ignore_ascii_case(text))
                .map(|w| w.to_string())
                .ok_or_else(|| one_of(words)),
            Flags(words) => {
                let mut set = vec![false; words.len()];
                for word in arguments(text) {
                    let at = words
                        .iter()
                        .position(|w| w.eq_ignore_ascii_case(word))
                        .ok_or_else(|| one_of(words))?;
                    set[at] = true;
                }
                let named: Vec<&str> = (1..words.len())
                    .filter(|&i| set[i])
                    .map(|i| words[i])
                    .collect();
                Ok(if named.is_empty() {
                    words[0].into()
                } else {
                    named.join(" ")
                })
            }
            Integer(low, high) => {
                // As Redis's string2ll reads it: no plus sign, no leading zero.
                let n = resp::parse_integer(text.as_bytes())
                    .ok_or("argument couldn't be parsed into an integer")?;
                within(n.into(), low, high)
            }
            Capped(low, high, floor, cap) => {
                let n: i128 = Integer(low, high).check(text)?.parse().expect("an integer");
                Ok(n.clamp(floor, cap).to_string())
            }
            Memory(low, high) => {
                let n = parse_memory(text).ok_or("argument must be a memory value")?;
                within(n.into(), low, high)
            }
            MemoryAtLeast(low, high, least) => {
                let n: i128 = Memory(low, high).check(text)?.parse().expect("an integer");
                Ok(n.max(least).to_string())
            }
            MemoryOrPercent(low, high) => {
                if let Some(n) = parse_memory(text) {
                    return within(n.into(), low, high);
                }
                let percent = text
                    .strip_suffix('%')
                    .and_then(|p| p.parse::<i128>().ok())
                    .filter(|p| *p >= 0)
                    .ok_or("argument must be a memory or percent value")?;
                if -percent < low {
                    return Err(format!(
                        "percentage argument must be less or equal to {}",
                        -low
                    ));
                }
                Ok(format!("{percent}%"))
            }
            Octal(low, high) => {
                let n = i128::from_str_radix(text, 8)
                    .map_err(|_| "argument couldn't be parsed as an octal number".to_string())?;
                if !(low..=high).contains(&n) {
                    return Err(format!(
                        "argument must be between {low:o} and {high:o} inclusive"
                    ));
                }
                Ok(format!("{n:o}"))
            }
            OomScores => {
                let words = arguments(text);
                if words.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                let scores: Option<Vec<i64>> = words
                    .iter()
                    .map(|w| w.parse().ok().filter(|n| (-2000..=2000).contains(n)))
                    .collect();
                let scores = scores.ok_or(
                    "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
                )?;
                Ok(scores
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(" "))
            }
        }
    }
}

/// The arguments of a setting that takes several, as Redis splits CONFIG SET's value:
/// at each single space, so two spaces make an empty argument.
pub fn arguments(text: &str) -> Vec<&str> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split(' ').collect()
    }
}

fn one_of(words: &[&str]) -> String {
    format!(
        "argument(s) must be one of the following: {}",
        words.join(", ")
    )
}

fn within(n: i128, low: i128, high: i128) -> Result<String, String> {
    if (low..=high).contains(&n) {
        Ok(n.to_string())
    } else {
        Err(format!(
            "argument must be between {low} and {high} inclusive"
        ))
    }
}

/// The current values of [`SETTINGS`], in its order.
pub struct Values(RwLock<Vec<String>>);

impl Default for Values {
    fn default() -> Self {
        Values(RwLock::new(
            SETTINGS.iter().map(|s| s.default.to_string()).collect(),
        ))
    }
}

impl Values {
    pub fn get(&self, index: usize) -> String {
        self.0.read().unwrap_or_else(|e| e.into_inner())[index].clone()
    }

    /// Sets setting `index` to `text`, checked by its form; the error says why not.
    pub fn set(&self, index: usize, text: &str) -> Result<(), String> {
        let value = SETTINGS[index].form.check(text)?;
        self.0.write().unwrap_or_else(|e| e.into_inner())[index] = value;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's checks and printed forms, as redis-server 7.0.15 answered them.
    #[test]
    fn values_are_checked_and_printed_as_redis_does() {
        let check = |name: &str, text: &str| SETTINGS[find(name).unwrap()].form.check(text);
        assert_eq!(check("activerehashing", "YES").unwrap(), "yes");
        assert_eq!(
            check("activerehashing", "1").unwrap_err(),
            "argument must be 'yes' or 'no'"
        );
        assert_eq!(check("loglevel", "WARNING").unwrap(), "warning");
        assert_eq!(
            check("loglevel", "bogus").unwrap_err(),
            "argument(s) must be one of the following: debug, verbose, notice, warning"
        );
        assert_eq!(
            check("shutdown-on-sigint", "force nosave now").unwrap(),
            "nosave now force"
        );
        assert_eq!(check("shutdown-on-sigint", "").unwrap(), "default");
        for bad in ["abc", "+5", "010", " 5", "5x"] {
            assert_eq!(
                check("hz", bad).unwrap_err(),
                "argument couldn't be parsed into an integer",
                "{bad:?}"
            );
        }
        assert_eq!(
            check("lfu-log-factor", "-1").unwrap_err(),
            "argument must be between 0 and 2147483647 inclusive"
        );
        assert_eq!(check("repl-backlog-size", "10mb").unwrap(), "10485760");
        assert_eq!(
            check("repl-backlog-size", "lots").unwrap_err(),
            "argument must be a memory value"
        );
        assert_eq!(
            check("repl-backlog-size", "0").unwrap_err(),
            "argument must be between 1 and 9223372036854775807 inclusive"
        );
        assert_eq!(check("maxmemory-clients", "5%").unwrap(), "5%");
        assert_eq!(check("maxmemory-clients", "1kb").unwrap(), "1024");
        assert_eq!(
            check("maxmemory-clients", "200%").unwrap_err(),
            "percentage argument must be less or equal to 100"
        );
        assert_eq!(
            check("maxmemory-clients", "-5").unwrap_err(),
            "argument must be a memory or percent value"
        );
        assert_eq!(check("unixsocketperm", "700").unwrap(), "700");
        assert_eq!(
            check("unixsocketperm", "9").unwrap_err(),
            "argument couldn't be parsed as an octal number"
        );
        assert_eq!(find("slave-read-only"), find("replica-read-only"));
        // What Redis's apply step makes of some values.
        assert_eq!(check("hz", "1000").unwrap(), "500");
        assert_eq!(check("hz", "0").unwrap(), "1");
        assert_eq!(check("repl-backlog-size", "1kb").unwrap(), "16384");
        assert_eq!(check("oom-score-adj-values", "1 -2 +3").unwrap(), "1 -2 3");
        assert_eq!(
            check("oom-score-adj-values", " 1 -2  3").unwrap_err(),
            "wrong number of arguments"
        );
        assert_eq!(
            check("oom-score-adj-values", "1 2").unwrap_err(),
            "wrong number of arguments"
        );
        assert_eq!(
            check("oom-score-adj-values", "1 2 2001").unwrap_err(),
            "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
        );
    }

    #[test]
    fn values_keep_what_was_set_and_refuse_the_rest() {
        let values = Values::default();
        let hz = find("hz").unwrap();
        assert_eq!(values.get(hz), "10");
        values.set(hz, "20").unwrap();
        assert!(values.set(hz, "x").is_err());
        assert_eq!(values.get(hz), "20");
    }
}
