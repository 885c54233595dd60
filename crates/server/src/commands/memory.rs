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

/// MEMORY STATS: Redis's fields, from the allocator and the key count. What hotkv
/// has no counterpart for (replication, cluster, scripts) reads 0; the per-database hash-table overheads are left out,
/// the index not being Redis's dict.
fn stats(ctx: &Ctx) -> Frame {
    let server = ctx.server;
    let used = server.refresh_memory();
    let peak = server.peak_memory().max(used);
    let startup = server.startup_memory.min(used);
    let keys = ctx.db().len();
    let clients = server.clients.buffers().2 as u64;
    let overhead = (startup + clients).min(used);
    let dataset = used - overhead;
    let ratio = |a: u64, b: u64| Frame::Double(a as f64 / b.max(1) as f64);
    let percent = |a: u64, b: u64| Frame::Double(a as f64 * 100.0 / b.max(1) as f64);
    let signed = |a: u64, b: u64| Frame::Integer(a as i64 - b as i64);
    let mut fields: Vec<(&str, Frame)> = vec![
        ("peak.allocated", Frame::Integer(peak as i64)),
        ("total.allocated", Frame::Integer(used as i64)),
        ("startup.allocated", Frame::Integer(startup as i64)),
    ];
    for unused in ["replication.backlog", "clients.slaves"] {
        fields.push((unused, Frame::Integer(0)));
    }
    fields.push(("clients.normal", Frame::Integer(clients as i64)));
    for unused in [
        "cluster.links",
        "aof.buffer",
        "lua.caches",
        "functions.caches",
    ] {
        fields.push((unused, Frame::Integer(0)));
    }
    fields.extend([
        ("overhead.total", Frame::Integer(overhead as i64)),
        ("keys.count", Frame::Integer(keys as i64)),
        (
            "keys.bytes-per-key",
            Frame::Integer((dataset / keys.max(1)) as i64),
        ),
        ("dataset.bytes", Frame::Integer(dataset as i64)),
        ("dataset.percentage", percent(dataset, used - startup)),
        ("peak.percentage", percent(used, peak)),
    ]);
    if let Some([allocated, active, resident]) = crate::memory::allocator() {
        fields.extend([
            ("allocator.allocated", Frame::Integer(allocated as i64)),
            ("allocator.active", Frame::Integer(active as i64)),
            ("allocator.resident", Frame::Integer(resident as i64)),
            ("allocator-fragmentation.ratio", ratio(active, allocated)),
            ("allocator-fragmentation.bytes", signed(active, allocated)),
            ("allocator-rss.ratio", ratio(resident, active)),
            ("allocator-rss.bytes", signed(resident, active)),
        ]);
        if let Some(rss) = crate::memory::resident() {
            fields.extend([
                ("rss-overhead.ratio", ratio(rss, resident)),
                ("rss-overhead.bytes", signed(rss, resident)),
                ("fragmentation", ratio(rss, used)),
                ("fragmentation.bytes", signed(rss, used)),
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
