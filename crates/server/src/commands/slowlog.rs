//! SLOWLOG GET [count] | LEN | RESET | HELP: the requests that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, as Redis keeps them.

use resp::Frame;

use super::{error, int, ok, parse_integer, reply, upper, Ctx, Reply};

pub fn slowlog(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let stats = &ctx.server.command_stats;
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"GET", rest @ ([] | [_])) => {
            let count = match rest.first().map(|c| parse_integer(c)) {
                None => Some(10),
                Some(Some(-1)) => None,
                Some(Some(n)) if n >= 0 => Some(n as usize),
                Some(_) => return error("ERR count should be greater than or equal to -1"),
            };
            let entries = stats.with_slow_entries(count, |entries| {
                entries
                    .map(|e| {
                        Frame::Array(vec![
                            Frame::Integer(e.id as i64),
                            Frame::Integer(e.unix_secs as i64),
                            Frame::Integer(e.micros as i64),
                            Frame::Array(e.args.iter().map(|a| Frame::Bulk(a.clone())).collect()),
                            Frame::bulk(e.client_addr.as_str()),
                            Frame::Bulk(e.client_name.clone()),
                        ])
                    })
                    .collect()
            });
            reply(Frame::Array(entries))
        }
        (b"LEN", []) => int(stats.slow_len() as i64),
        (b"RESET", []) => {
            stats.reset_slowlog();
            ok()
        }
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("slowlog", &args[1]),
    }
}

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];
