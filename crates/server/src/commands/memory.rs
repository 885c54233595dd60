//! MEMORY USAGE, STATS, MALLOC-STATS, PURGE, DOCTOR, HELP.

use resp::Frame;

use super::{error, int, parse_integer, reply, upper, Ctx, Reply, SYNTAX_ERROR};

pub fn memory(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"HELP", []) => super::help(HELP),
        (b"USAGE", [key, options @ ..]) => {
            // SAMPLES bounds how many elements Redis inspects in a collection; a string
            // has none, so the count is checked and has nothing to change.
            match options {
                [] => {}
                [word, count] if upper(word) == b"SAMPLES" => {
                    if parse_integer(count).is_none() {
                        return error(super::NOT_AN_INTEGER);
                    }
                }
                _ => return error(SYNTAX_ERROR),
            }
            match ctx.db().memory_usage(key)? {
                Some(bytes) => int(bytes as i64),
                None => reply(Frame::Null),
            }
        }
        (b"STATS", []) => reply(stats(ctx)),
        (b"MALLOC-STATS", []) => reply(Frame::Verbatim {
            format: *b"txt",
            text: crate::memory::allocator_report().into_bytes(),
        }),
        (b"PURGE", []) => match crate::memory::purge() {
            Ok(()) => super::ok(),
            Err(e) => error(&format!("ERR Error purging dirty pages: {e}")),
        },
        (b"DOCTOR", []) => reply(Frame::Verbatim {
            format: *b"txt",
            text: doctor(ctx).into_bytes(),
        }),
        _ => super::bad_subcommand("memory", &args[1]),
    }
}

/// Where the allocated memory goes, as Redis breaks it down for MEMORY STATS and
/// INFO memory. What hotkv has no counterpart for (replication, cluster, scripts)
/// counts 0; the per-database hash-table overheads are left out, the index not being
/// Redis's dict.
pub struct Breakdown {
    pub used: u64,
    pub peak: u64,
    pub startup: u64,
    /// What the clients' buffers hold (Redis's clients.normal).
    pub clients: u64,
    pub overhead: u64,
    pub dataset: u64,
    /// jemalloc's allocated, active and resident bytes.
    pub allocator: Option<[u64; 3]>,
    pub rss: Option<u64>,
}

impl Breakdown {
    pub fn now(server: &crate::server::Server) -> Breakdown {
        let used = server.refresh_memory();
        let startup = server.startup_memory.min(used);
        let clients = server.clients.buffers().2 as u64;
        let overhead = (startup + clients).min(used);
        Breakdown {
            used,
            peak: server.peak_memory().max(used),
            startup,
            clients,
            overhead,
            dataset: used - overhead,
            allocator: crate::memory::allocator(),
            rss: crate::memory::resident(),
        }
    }

    pub fn peak_percentage(&self) -> f64 {
        self.used as f64 * 100.0 / self.peak.max(1) as f64
    }

    pub fn dataset_percentage(&self) -> f64 {
        self.dataset as f64 * 100.0 / (self.used - self.startup).max(1) as f64
    }
}

/// MEMORY STATS: Redis's fields (see [`Breakdown`]).
fn stats(ctx: &Ctx) -> Frame {
    let b = Breakdown::now(ctx.server);
    let keys = ctx.db().len();
    let ratio = |a: u64, b: u64| Frame::Double(a as f64 / b.max(1) as f64);
    let signed = |a: u64, b: u64| Frame::Integer(a as i64 - b as i64);
    let mut fields: Vec<(&str, Frame)> = vec![
        ("peak.allocated", Frame::Integer(b.peak as i64)),
        ("total.allocated", Frame::Integer(b.used as i64)),
        ("startup.allocated", Frame::Integer(b.startup as i64)),
    ];
    for unused in ["replication.backlog", "clients.slaves"] {
        fields.push((unused, Frame::Integer(0)));
    }
    fields.push(("clients.normal", Frame::Integer(b.clients as i64)));
    for unused in [
        "cluster.links",
        "aof.buffer",
        "lua.caches",
        "functions.caches",
    ] {
        fields.push((unused, Frame::Integer(0)));
    }
    fields.extend([
        ("overhead.total", Frame::Integer(b.overhead as i64)),
        ("keys.count", Frame::Integer(keys as i64)),
        (
            "keys.bytes-per-key",
            Frame::Integer((b.dataset / keys.max(1)) as i64),
        ),
        ("dataset.bytes", Frame::Integer(b.dataset as i64)),
        ("dataset.percentage", Frame::Double(b.dataset_percentage())),
        ("peak.percentage", Frame::Double(b.peak_percentage())),
    ]);
    if let Some([allocated, active, resident]) = b.allocator {
        fields.extend([
            ("allocator.allocated", Frame::Integer(allocated as i64)),
            ("allocator.active", Frame::Integer(active as i64)),
            ("allocator.resident", Frame::Integer(resident as i64)),
            ("allocator-fragmentation.ratio", ratio(active, allocated)),
            ("allocator-fragmentation.bytes", signed(active, allocated)),
            ("allocator-rss.ratio", ratio(resident, active)),
            ("allocator-rss.bytes", signed(resident, active)),
        ]);
        if let Some(rss) = b.rss {
            fields.extend([
                ("rss-overhead.ratio", ratio(rss, resident)),
                ("rss-overhead.bytes", signed(rss, resident)),
                ("fragmentation", ratio(rss, b.used)),
                ("fragmentation.bytes", signed(rss, b.used)),
            ]);
        }
    }
    Frame::Map(
        fields
            .into_iter()
            .map(|(name, value)| (Frame::bulk(name), value))
            .collect(),
    )
}

/// MEMORY DOCTOR: what the figures of MEMORY STATS say, in a sentence or two.
fn doctor(ctx: &Ctx) -> String {
    let used = ctx.server.refresh_memory();
    let peak = ctx.server.peak_memory().max(used);
    let mut findings = Vec::new();
    if peak > used.saturating_mul(3) / 2 {
        findings.push(format!(
            "the peak ({peak} bytes) is more than 150% of what is allocated now ({used} bytes): memory was freed since, and the allocator may still hold it"
        ));
    }
    if let Some(rss) = crate::memory::resident() {
        if used > 10 << 20 && rss > used.saturating_mul(14) / 10 {
            findings.push(format!(
                "the resident set ({rss} bytes) is {:.2} times what is allocated: fragmentation",
                rss as f64 / used as f64
            ));
        }
    }
    if findings.is_empty() {
        format!("No memory problems found: {used} bytes allocated, peak {peak}.")
    } else {
        format!("Memory report: {}.", findings.join("; "))
    }
}

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    The bytes <key> and its value take in hotkv's index, with its share of the",
    "    index's per-item overhead.",
    "HELP",
    "    Print this help.",
];
