//! HOTKEYS [COUNT n]: the keys the index currently finds hottest.

use resp::Frame;

use super::{error, parse_integer, reply, upper, Action, Ctx, SYNTAX_ERROR};

/// Replies with up to `n` (default 10) `[key, share]` pairs, hottest first. `share`
/// is the key's part of the accesses hotspot detection has counted lately (its
/// sampling counters, see `HotRing::scan`): an estimate of its share of the traffic,
/// which reads the whole index to compute, so this is for operators, not hot paths.
pub fn hotkeys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    let n = match &args[1..] {
        [] => 10,
        [opt, n] if upper(opt) == b"COUNT" => match parse_integer(n) {
            Some(n) if n >= 1 => n as usize,
            _ => return error("ERR COUNT must be a positive integer"),
        },
        _ => return error(SYNTAX_ERROR),
    };
    let (mut hot, total) = ctx.db().heats();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    hot.truncate(n);
    reply(Frame::Array(
        hot.into_iter()
            .map(|(key, heat)| {
                Frame::Array(vec![
                    Frame::Bulk(key),
                    Frame::Double(heat as f64 / total.max(1) as f64),
                ])
            })
            .collect(),
    ))
}
