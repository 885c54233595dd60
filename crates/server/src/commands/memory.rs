//! MEMORY USAGE | HELP.

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
        _ => super::bad_subcommand("memory", &args[1]),
    }
}

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "USAGE <key> [SAMPLES <count>]",
    "    The bytes <key> and its value take in hotkv's index, with its share of the",
    "    index's per-item overhead.",
    "HELP",
    "    Print this help.",
];
