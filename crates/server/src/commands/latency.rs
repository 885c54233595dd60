//! LATENCY LATEST | HISTORY event | RESET [event ...] | GRAPH event | DOCTOR | HELP:
//! what the latency monitor recorded (see `latency.rs`); LATENCY HISTOGRAM [command ...]:
//! the per-command latency histograms (see `command_stats.rs`).

use resp::Frame;

use super::{error, int, reply, upper, Ctx, Reply};

pub fn latency(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let monitor = &ctx.server.latency;
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"LATEST", []) => {
            let rows = monitor
                .latest()
                .into_iter()
                .map(|l| {
                    Frame::Array(vec![
                        Frame::bulk(l.event),
                        Frame::Integer(l.last.unix_secs as i64),
                        Frame::Integer(l.last.ms as i64),
                        Frame::Integer(l.max_ms as i64),
                    ])
                })
                .collect();
            reply(Frame::Array(rows))
        }
        (b"HISTORY", [event]) => {
            let rows = monitor
                .history(event)
                .0
                .into_iter()
                .map(|s| {
                    Frame::Array(vec![
                        Frame::Integer(s.unix_secs as i64),
                        Frame::Integer(s.ms as i64),
                    ])
                })
                .collect();
            reply(Frame::Array(rows))
        }
        (b"RESET", events) => int(monitor.reset(events) as i64),
        (b"GRAPH", [event]) => {
            let (samples, max) = monitor.history(event);
            if samples.is_empty() {
                return error(&format!(
                    "ERR No samples available for event '{}'",
                    String::from_utf8_lossy(event)
                ));
            }
            reply(Frame::Verbatim {
                format: *b"txt",
                text: graph(&String::from_utf8_lossy(event), &samples, max).into_bytes(),
            })
        }
        (b"DOCTOR", []) => reply(Frame::Verbatim {
            format: *b"txt",
            text: doctor(ctx).into_bytes(),
        }),
        (b"HISTOGRAM", commands) => reply(Frame::Map(histograms(ctx, commands))),
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("latency", &args[1]),
    }
}

/// LATENCY HISTOGRAM: for each command named (all without names) that has a
/// histogram, its calls and the calls at or below each power of two microseconds.
fn histograms(ctx: &Ctx, only: &[Vec<u8>]) -> Vec<(Frame, Frame)> {
    ctx.server
        .command_stats
        .histograms()
        .into_iter()
        .filter_map(|(index, h)| {
            let name = super::name_of(index as u64 + 1);
            let wanted = only.is_empty() || only.iter().any(|o| names(o, name));
            if !wanted {
                return None;
            }
            let steps = h
                .cumulative_usec()
                .into_iter()
                .map(|(bound, calls)| (Frame::Integer(bound as i64), Frame::Integer(calls as i64)))
                .collect();
            Some((
                Frame::bulk(name),
                Frame::Map(vec![
                    (Frame::bulk("calls"), Frame::Integer(h.calls() as i64)),
                    (Frame::bulk("histogram_usec"), Frame::Map(steps)),
                ]),
            ))
        })
        .collect()
}

/// Whether `asked` names the command or subcommand `name` (`client|id`): as Redis, a
/// container command (CLIENT) names each of its subcommands.
fn names(asked: &[u8], name: &str) -> bool {
    let name = name.as_bytes();
    name.len() >= asked.len()
        && name[..asked.len()].eq_ignore_ascii_case(asked)
        && matches!(name.get(asked.len()), None | Some(b'|'))
}

/// One line per sample, oldest first, with a bar scaled to the highest.
fn graph(event: &str, samples: &[crate::latency::Sample], all_time: u64) -> String {
    let high = samples.iter().map(|s| s.ms).max().unwrap_or(0);
    let low = samples.iter().map(|s| s.ms).min().unwrap_or(0);
    let mut out = format!("{event} - high {high} ms, low {low} ms (all time high {all_time} ms)\n");
    out.push_str(&"-".repeat(80));
    out.push('\n');
    let now = crate::entry::now_ms() / 1000;
    for s in samples {
        let bar = (s.ms * 50).div_ceil(high.max(1)) as usize;
        let ago = now.saturating_sub(s.unix_secs);
        out.push_str(&format!(
            "{:>6}s ago {:>8} ms {}\n",
            ago,
            s.ms,
            "#".repeat(bar)
        ));
    }
    out
}

fn doctor(ctx: &Ctx) -> String {
    let Some(threshold) = ctx.server.config.latency_threshold() else {
        return "Latency monitoring is off in this server: turn it on with \
                CONFIG SET latency-monitor-threshold <milliseconds>.\n"
            .into();
    };
    let latest = ctx.server.latency.latest();
    if latest.is_empty() {
        return format!(
            "No request has taken {} ms or more since latency monitoring was last reset.\n",
            threshold.as_millis()
        );
    }
    let mut out = String::new();
    for l in latest {
        let (samples, max) = ctx.server.latency.history(l.event.as_bytes());
        let mean = samples.iter().map(|s| s.ms).sum::<u64>() / samples.len().max(1) as u64;
        out.push_str(&format!(
            "{}: {} seconds with a request of {} ms or more; mean of those {} ms, worst {} ms, latest {} ms.\n",
            l.event,
            samples.len(),
            threshold.as_millis(),
            mean,
            max,
            l.last.ms
        ));
    }
    out.push_str(
        "Slow requests: see SLOWLOG GET. On this server they are mostly KEYS, SCAN with a \
         large COUNT, FLUSHALL on the lsm engine, and multi-key commands over many keys.\n",
    );
    out
}

const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];
