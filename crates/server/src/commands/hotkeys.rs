//! HOTKEYS [COUNT n]: the keys the index currently finds hottest.

use resp::Frame;

use super::{error, parse_integer, reply, upper, Ctx, Reply, SYNTAX_ERROR};

/// What HOTKEYS answers on an engine, which does not rank keys by heat.
const NO_HEAT: &str =
    "ERR key heat is tracked by the memory engine only; start hotkv-server with --engine memory";

/// Replies with up to `n` (default 10) `[key, share]` pairs, hottest first. `share`
/// estimates the key's part of recent accesses, from the index's sampled hot-key
/// tables (one access in 64, counts halving every second).
pub fn hotkeys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let n = match &args[1..] {
        [] => 10,
        [opt, n] if upper(opt) == b"COUNT" => match parse_integer(n) {
            Some(n) if n >= 1 => n as usize,
            _ => return error("ERR COUNT must be a positive integer"),
        },
        _ => return error(SYNTAX_ERROR),
    };
    let Some(index) = ctx.db().index() else {
        return error(NO_HEAT);
    };
    reply(Frame::Array(
        index
            .hot_keys(n)
            .into_iter()
            .map(|(key, share)| Frame::Array(vec![Frame::Bulk(key), Frame::Double(share)]))
            .collect(),
    ))
}
