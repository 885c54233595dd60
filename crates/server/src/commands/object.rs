//! OBJECT ENCODING | REFCOUNT | FREQ | IDLETIME | HELP.

use resp::Frame;

use super::{error, int, parse_integer, reply, upper, Action, Ctx};
use crate::config::Policy;

/// Redis stores a string that reads as a 64-bit integer (in at most 20 bytes) as
/// `int`, a short one inside its object header as `embstr`, a longer one as `raw`.
/// hotkv stores bytes either way; it names the encoding Redis would have used, since
/// tools read it to estimate memory and tests compare it.
const EMBSTR_MAX: usize = 44;

/// Redis shares one object for each integer value below this, when no LRU or LFU
/// policy needs a per-key clock; OBJECT REFCOUNT then reports `i32::MAX`.
const SHARED_INTEGERS: i64 = 10_000;

pub fn object(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    let sub = upper(&args[1]);
    match (sub.as_slice(), &args[2..]) {
        (b"HELP", []) => reply(Frame::Array(
            HELP.iter()
                .map(|line| Frame::Simple((*line).into()))
                .collect(),
        )),
        (b"ENCODING", [key]) => match ctx.db().get(key) {
            None => reply(Frame::Null),
            Some(entry) => reply(Frame::bulk(encoding(&entry.value))),
        },
        (b"REFCOUNT", [key]) => match ctx.db().get(key) {
            None => reply(Frame::Null),
            Some(entry) => {
                let config = &ctx.server.config;
                let clocked = matches!(config.policy(), Policy::AllKeysLru | Policy::AllKeysLfu);
                let shared = (config.maxmemory() == 0 || !clocked)
                    && (0..SHARED_INTEGERS).contains(&parse_int_value(&entry.value));
                int(if shared { i32::MAX as i64 } else { 1 })
            }
        },
        (b"FREQ", [key]) | (b"IDLETIME", [key]) => {
            if !ctx.db().contains(key) {
                return reply(Frame::Null);
            }
            let lfu = ctx.server.config.policy() == Policy::AllKeysLfu;
            match (sub.as_slice(), lfu) {
                (b"FREQ", false) => error(
                    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                     Please note that when switching between policies at runtime LRU and LFU \
                     data will take some time to adjust.",
                ),
                (b"IDLETIME", true) => error(
                    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please \
                     note that when switching between policies at runtime LRU and LFU data \
                     will take some time to adjust.",
                ),
                _ => error(
                    "ERR hotkv keeps no per-key access clock or counter; its index ranks keys \
                     by sampled heat instead: see HOTKEYS",
                ),
            }
        }
        _ => super::bad_subcommand(
            "object",
            &args[1],
            &["HELP", "ENCODING", "REFCOUNT", "FREQ", "IDLETIME"],
        ),
    }
}

fn encoding(value: &[u8]) -> &'static str {
    if value.len() <= 20 && parse_integer(value).is_some() {
        "int"
    } else if value.len() <= EMBSTR_MAX {
        "embstr"
    } else {
        "raw"
    }
}

/// The value as an integer if Redis would store it as one, else -1 (never shared).
fn parse_int_value(value: &[u8]) -> i64 {
    if value.len() <= 20 {
        parse_integer(value).unwrap_or(-1)
    } else {
        -1
    }
}

const HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    The internal representation Redis would use for the value at <key>:",
    "    int, embstr or raw for strings.",
    "FREQ <key>",
    "    Not tracked per key by hotkv (see HOTKEYS); an error says so.",
    "IDLETIME <key>",
    "    Not tracked per key by hotkv; an error says so.",
    "REFCOUNT <key>",
    "    The number of references to the value at <key>.",
    "HELP",
    "    Print this help.",
];
