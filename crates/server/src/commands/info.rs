//! INFO [section...]: Redis's sections (server, clients, memory, persistence, stats,
//! replication, cpu, modules, errorstats, cluster, keyspace) in its order and with its
//! field names, so monitoring tools read them, and
//! either an `engine` section (the storage engine's counters) or, in memory, a
//! `hotring` section; `commandstats` (calls and time per command) only when asked for.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use resp::Frame;

use super::{reply, Ctx, Reply};
use crate::instantaneous::Metric;
use crate::server::Server;

/// In Redis 7.0's order, hotkv's own sections last.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "engine",
    "hotring",
];

/// Sections INFO lists only when asked for by name or with `all`, as Redis does.
const NOT_DEFAULT: &[&str] = &["commandstats", "latencystats"];

pub fn info(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let asked: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = asked
        .iter()
        .any(|a| matches!(a.as_str(), "all" | "everything"));
    let default = asked.is_empty() || asked.iter().any(|a| a == "default");
    let mut text = String::new();
    for section in SECTIONS {
        let applies = match *section {
            "engine" => ctx.server.db.index().is_none(),
            "hotring" => ctx.server.db.index().is_some(),
            _ => true,
        };
        let listed = all
            || (default && !NOT_DEFAULT.contains(section))
            || asked.iter().any(|a| a == section);
        if applies && listed {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            write_section(ctx.server, section, &mut text);
        }
    }
    reply(Frame::Verbatim {
        format: *b"txt",
        text: text.into_bytes(),
    })
}

/// The readiness API tokio polls with, which INFO names as Redis names its own.
const MULTIPLEXING_API: &str = if cfg!(any(target_os = "linux", target_os = "android")) {
    "epoll"
} else if cfg!(windows) {
    "iocp"
} else {
    "kqueue"
};

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{v:.2}{}", UNITS[unit])
    }
}

fn write_section(server: &Server, section: &str, out: &mut String) {
    let mut title = section.to_string();
    title[..1].make_ascii_uppercase();
    if section == "cpu" {
        title.make_ascii_uppercase();
    }
    let _ = write!(out, "# {title}\r\n");
    let mut field = |name: &str, value: &dyn std::fmt::Display| {
        let _ = write!(out, "{name}:{value}\r\n");
    };
    match section {
        "server" => {
            let uptime = server.started.elapsed().as_secs();
            field("redis_version", &crate::REDIS_VERSION);
            field("hotkv_version", &env!("CARGO_PKG_VERSION"));
            // Not built from Redis's git: its placeholders for that.
            field("redis_git_sha1", &"00000000");
            field("redis_git_dirty", &0);
            field("redis_mode", &"standalone");
            field("os", &std::env::consts::OS);
            field("arch_bits", &(usize::BITS));
            field("process_id", &std::process::id());
            field("run_id", &server.run_id);
            field("tcp_port", &server.config.port());
            field("uptime_in_seconds", &uptime);
            field("uptime_in_days", &(uptime / 86_400));
            field("hz", &10);
            field("configured_hz", &10);
            let now_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros());
            field("server_time_usec", &now_us);
            // Redis's LRU clock: seconds, in 24 bits.
            field("lru_clock", &((now_us / 1_000_000) & ((1 << 24) - 1)));
            field("multiplexing_api", &MULTIPLEXING_API);
            let executable = std::env::current_exe().unwrap_or_default();
            field("executable", &executable.display());
            let config_file = server.config.file.clone().unwrap_or_default();
            field("config_file", &config_file.display());
            // Whether more than one io thread serves now (see `io_threads.rs`).
            let threaded = server.io_threads.as_ref().is_some_and(|t| t.get() > 1);
            field("io_threads_active", &u8::from(threaded));
            field("engine", &server.config.engine.name());
        }
        "clients" => {
            let (blocked, timed) = server.clients.blocked();
            field("connected_clients", &server.clients.len());
            // No cluster bus.
            field("cluster_connections", &0);
            field("maxclients", &server.config.maxclients());
            let (input, output) = server.clients.recent_max(crate::entry::now_ms() / 1000);
            field("client_recent_max_input_buffer", &input);
            field("client_recent_max_output_buffer", &output);
            field("blocked_clients", &blocked);
            field("tracking_clients", &server.db.tracking.stats()[0]);
            field("clients_in_timeout_table", &timed);
        }
        "memory" => {
            // Redis's fields in its order; those for what hotkv lacks (replication,
            // AOF buffers, cluster links, lazy freeing: hotkv frees at once) read 0.
            let b = super::memory::Breakdown::now(server);
            field("used_memory", &b.used);
            field("used_memory_human", &human(b.used));
            if let Some(rss) = b.rss {
                field("used_memory_rss", &rss);
                field("used_memory_rss_human", &human(rss));
            }
            field("used_memory_peak", &b.peak);
            field("used_memory_peak_human", &human(b.peak));
            field(
                "used_memory_peak_perc",
                &format!("{:.2}%", b.peak_percentage()),
            );
            field("used_memory_overhead", &b.overhead);
            field("used_memory_startup", &b.startup);
            field("used_memory_dataset", &b.dataset);
            field(
                "used_memory_dataset_perc",
                &format!("{:.2}%", b.dataset_percentage()),
            );
            if let Some([allocated, active, resident]) = b.allocator {
                field("allocator_allocated", &allocated);
                field("allocator_active", &active);
                field("allocator_resident", &resident);
            }
            if let Some(total) = crate::memory::system_total() {
                field("total_system_memory", &total);
                field("total_system_memory_human", &human(total));
            }
            // One Lua interpreter runs scripts and functions alike; Redis 7 has one
            // for each, so hotkv's is counted as the scripts' one.
            let [scripts, functions, libraries, lua] = server.script_counts();
            field("used_memory_lua", &lua);
            field("used_memory_vm_eval", &lua);
            field("used_memory_lua_human", &human(lua));
            field("number_of_cached_scripts", &scripts);
            field("number_of_functions", &functions);
            field("number_of_libraries", &libraries);
            field("used_memory_vm_functions", &0);
            field("used_memory_vm_total", &lua);
            field("used_memory_vm_total_human", &human(lua));
            field("maxmemory", &server.config.maxmemory());
            field("maxmemory_human", &human(server.config.maxmemory()));
            field(
                "maxmemory_policy",
                &server.config.get(b"maxmemory-policy")[0].1,
            );
            let ratio = |a: u64, b: u64| format!("{:.2}", a as f64 / b.max(1) as f64);
            let bytes = |a: u64, b: u64| a as i64 - b as i64;
            if let Some([allocated, active, resident]) = b.allocator {
                field("allocator_frag_ratio", &ratio(active, allocated));
                field("allocator_frag_bytes", &bytes(active, allocated));
                field("allocator_rss_ratio", &ratio(resident, active));
                field("allocator_rss_bytes", &bytes(resident, active));
                if let Some(rss) = b.rss {
                    field("rss_overhead_ratio", &ratio(rss, resident));
                    field("rss_overhead_bytes", &bytes(rss, resident));
                }
            }
            if let Some(rss) = b.rss {
                // As Redis: the resident set over what the allocator handed out.
                field("mem_fragmentation_ratio", &ratio(rss, b.used));
                field("mem_fragmentation_bytes", &bytes(rss, b.used));
            }
            for absent in [
                "mem_not_counted_for_evict",
                "mem_replication_backlog",
                "mem_total_replication_buffers",
                "mem_clients_slaves",
            ] {
                field(absent, &0);
            }
            field("mem_clients_normal", &b.clients);
            field("mem_cluster_links", &0);
            field("mem_aof_buffer", &0);
            field("mem_allocator", &"jemalloc");
            // Retired nodes wait only for the readers pinned at their delete to move
            // on: none pending, as Redis reports once its background thread is done.
            for absent in ["active_defrag_running", "lazyfree_pending_objects"] {
                field(absent, &0);
            }
            field("lazyfreed_objects", &server.db.lazyfreed_count());
        }
        "persistence" => {
            // No snapshots: never loading (the engine recovers before the server
            // listens), no save in progress (a save syncs the engine's log, at once),
            // and, as Redis reports before its first save, the start time as the last
            // save. A durable engine's log plays the part of Redis's append-only file;
            // its write status is the engine's.
            // The copy-on-write and progress fields read as Redis's do before its
            // first fork: the child reports neither.
            field("loading", &0);
            field("async_loading", &0);
            for no_fork in [
                "current_cow_peak",
                "current_cow_size",
                "current_cow_size_age",
            ] {
                field(no_fork, &0);
            }
            field("current_fork_perc", &"0.00");
            field("current_save_keys_processed", &0);
            field("current_save_keys_total", &0);
            field("rdb_changes_since_last_save", &server.changes_since_save());
            let bgsave = &server.background_save;
            field("rdb_bgsave_in_progress", &u8::from(bgsave.running()));
            field("rdb_last_save_time", &server.last_save());
            let failed = server.last_save_failed();
            field("rdb_last_bgsave_status", &if failed { "err" } else { "ok" });
            field("rdb_last_bgsave_time_sec", &bgsave.last_seconds());
            field("rdb_current_bgsave_time_sec", &bgsave.current_seconds());
            field("rdb_saves", &server.saves());
            field("rdb_last_cow_size", &0);
            let loaded = server.last_load();
            field("rdb_last_load_keys_expired", &loaded.expired);
            field("rdb_last_load_keys_loaded", &loaded.keys);
            let stats = server.db.engine_stats();
            field("aof_enabled", &u8::from(stats.is_some()));
            field("aof_rewrite_in_progress", &0);
            field("aof_rewrite_scheduled", &0);
            field("aof_last_rewrite_time_sec", &-1);
            field("aof_current_rewrite_time_sec", &-1);
            let (rewrites, rewrite_failed) = server.log_rewrites();
            field(
                "aof_last_bgrewrite_status",
                &if rewrite_failed { "err" } else { "ok" },
            );
            field("aof_rewrites", &rewrites);
            field("aof_rewrites_consecutive_failures", &0);
            let stopped = stats
                .is_some_and(|stats| stats.iter().any(|&(n, v)| n == "writes_stopped" && v != 0));
            field("aof_last_write_status", &if stopped { "err" } else { "ok" });
            field("aof_last_cow_size", &0);
            field("module_fork_in_progress", &0);
            field("module_fork_last_cow_size", &0);
        }
        "commandstats" => {
            for (index, t) in server.command_stats.totals() {
                let per_call = if t.calls == 0 {
                    0.0
                } else {
                    t.micros as f64 / t.calls as f64
                };
                field(
                    &format!("cmdstat_{}", super::name_of(index as u64 + 1)),
                    &format_args!(
                        "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                        t.calls, t.micros, t.rejected, t.failed
                    ),
                );
            }
        }
        "latencystats" => {
            let percentiles = server.config.latency_percentiles();
            for (index, h) in server.command_stats.histograms() {
                let values: Vec<String> = percentiles
                    .iter()
                    .map(|p| format!("p{p}={:.3}", h.percentile_usec(*p)))
                    .collect();
                field(
                    &format!(
                        "latency_percentiles_usec_{}",
                        super::name_of(index as u64 + 1)
                    ),
                    &values.join(","),
                );
            }
        }
        "replication" => {
            field("role", &"master");
            field("connected_slaves", &0);
            field("master_failover_state", &"no-failover");
            field("master_replid", &server.run_id);
            field("master_replid2", &"0".repeat(40));
            field("master_repl_offset", &0);
            field("second_repl_offset", &-1);
            field("repl_backlog_active", &0);
            field("repl_backlog_first_byte_offset", &0);
            field("repl_backlog_histlen", &0);
        }
        "stats" => {
            let c = &server.clients;
            field(
                "total_connections_received",
                &c.received.load(Ordering::Relaxed),
            );
            field("total_commands_processed", &c.total(|t| &t.commands));
            let rates = &server.rates;
            field(
                "instantaneous_ops_per_sec",
                &(rates.rate(Metric::Commands).round() as u64),
            );
            field("total_net_input_bytes", &c.total(|t| &t.net_in));
            field("total_net_output_bytes", &c.total(|t| &t.net_out));
            // No replication, forks, defragmentation or client eviction: their
            // counters read 0, as on a Redis that never used them.
            field("total_net_repl_input_bytes", &0);
            field("total_net_repl_output_bytes", &0);
            let kbps = |m| format!("{:.2}", rates.rate(m) / 1024.0);
            field("instantaneous_input_kbps", &kbps(Metric::NetInput));
            field("instantaneous_output_kbps", &kbps(Metric::NetOutput));
            field("instantaneous_input_repl_kbps", &"0.00");
            field("instantaneous_output_repl_kbps", &"0.00");
            field("rejected_connections", &c.rejected.load(Ordering::Relaxed));
            for absent in ["sync_full", "sync_partial_ok", "sync_partial_err"] {
                field(absent, &0);
            }
            field("expired_keys", &server.db.expired_count());
            field("evicted_keys", &server.evicted.load(Ordering::Relaxed));
            field("evicted_clients", &c.evicted.load(Ordering::Relaxed));
            field("keyspace_hits", &c.total(|t| &t.hits));
            field("keyspace_misses", &c.total(|t| &t.misses));
            field(
                "pubsub_channels",
                &server.pubsub.len(crate::pubsub::Kind::Channel),
            );
            field(
                "pubsub_patterns",
                &server.pubsub.len(crate::pubsub::Kind::Pattern),
            );
            field(
                "pubsubshard_channels",
                &server.pubsub.len(crate::pubsub::Kind::Shard),
            );
            let (fork_micros, forks) = server.background_save.forks();
            field("latest_fork_usec", &fork_micros);
            field("total_forks", &forks);
            field("migrate_cached_sockets", &server.migrate_sockets.len());
            for absent in [
                "slave_expires_tracked_keys",
                "active_defrag_hits",
                "active_defrag_misses",
                "active_defrag_key_hits",
                "active_defrag_key_misses",
                "total_active_defrag_time",
                "current_active_defrag_time",
            ] {
                field(absent, &0);
            }
            let [_, keys, items, prefixes] = server.db.tracking.stats();
            field("tracking_total_keys", &keys);
            field("tracking_total_items", &items);
            field("tracking_total_prefixes", &prefixes);
            // Errors from a master or an AOF being loaded, neither of which hotkv has.
            field("unexpected_error_replies", &0);
            field("total_error_replies", &server.command_stats.error_replies());
        }
        "errorstats" => {
            for (code, count) in server.command_stats.error_codes() {
                field(&format!("errorstat_{code}"), &format_args!("count={count}"));
            }
        }
        "cpu" => {
            if let Some([user, sys, children_user, children_sys]) = process_cpu_seconds() {
                field("used_cpu_sys", &format!("{sys:.6}"));
                field("used_cpu_user", &format!("{user:.6}"));
                field("used_cpu_sys_children", &format!("{children_sys:.6}"));
                field("used_cpu_user_children", &format!("{children_user:.6}"));
            }
        }
        // No modules: the section is its title, as Redis's is without any loaded.
        "modules" => {}
        "cluster" => field("cluster_enabled", &0),
        "keyspace" => {
            let keys = server.db.len();
            if keys > 0 {
                let expires = (server.db.volatile_len() as u64).min(keys);
                field("db0", &format!("keys={keys},expires={expires},avg_ttl=0"));
            }
        }
        "engine" => {
            if let Some(stats) = server.db.engine_stats() {
                field("engine_dir", &server.config.dir.display());
                field("engine_fsync", &server.config.fsync());
                for (name, value) in stats {
                    field(&format!("engine_{name}"), &value);
                }
            }
        }
        "hotring" => {
            let Some(s) = server.db.index_stats() else {
                return;
            };
            field("hotring_keys", &s.len);
            field("hotring_rings", &s.rings);
            field("hotring_directory_slots", &s.directory_slots);
            field("hotring_head_hit_rate", &format!("{:.4}", s.head_hit_rate));
            field(
                "hotring_items_per_access",
                &format!("{:.3}", s.items_per_access),
            );
            field("hotring_head_moves", &s.head_moves);
            field("hotring_sample_rounds", &s.sample_rounds);
            field("hotring_shifts", &s.shifts);
            field("hotring_splits", &s.splits);
            field("hotring_lost_write_races", &server.db.lost_write_races());
            let longest = s.ring_lengths.last().map_or(0, |(len, _)| *len);
            field("hotring_ring_length_max_sampled", &longest);
            let lengths: Vec<String> = s
                .ring_lengths
                .iter()
                .map(|(len, n)| format!("{len}={n}"))
                .collect();
            // Ring lengths and bytes per key come from a sample of the index (see
            // `Db::index_stats`); the other fields are exact counters.
            field("hotring_ring_lengths_sampled", &lengths.join(","));
            field("hotring_bytes_per_key", &format!("{:.1}", s.bytes_per_key));
            // Nodes of large collections (see `nodes.rs`), held in a second index.
            field(
                "hotring_collection_nodes",
                &server.db.collection_nodes().unwrap_or(0),
            );
        }
        _ => unreachable!("SECTIONS lists the sections"),
    }
}

/// CPU seconds of this process: user, system, and those of waited-for children, from
/// `/proc/self/stat` (Linux; `None` elsewhere). The kernel reports them in ticks of
/// USER_HZ, which is 100 on every Linux architecture's user ABI.
fn process_cpu_seconds() -> Option<[f64; 4]> {
    const USER_HZ: f64 = 100.0;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is parenthesised and may hold spaces: count fields
    // after its closing parenthesis, where field 3 is the first.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |field: usize| -> Option<f64> { fields.get(field - 3)?.parse::<f64>().ok() };
    Some([
        ticks(14)? / USER_HZ,
        ticks(15)? / USER_HZ,
        ticks(16)? / USER_HZ,
        ticks(17)? / USER_HZ,
    ])
}
