//! MONITOR: from now on, a line for every command any client runs (see
//! [`crate::monitor`] for what is shown). RESET or disconnecting ends it
//! (`Session::end`).

use std::sync::atomic::Ordering;

use super::{error, ok, Ctx, Reply};

pub fn monitor(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    // Redis's word for it: a client in EXEC expects one reply per command, which a
    // stream of lines would break.
    if ctx.session.in_exec {
        return error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    let client = ctx.session.client.clone();
    if !ctx.server.monitors.add(client.clone()) {
        // A second MONITOR gets no reply at all from Redis; dropping this reply only,
        // not one that CLIENT REPLY SKIP dropped already.
        ctx.session.replies_to_skip = ctx.session.replies_to_skip.max(1);
        return ok();
    }
    client.monitoring.store(true, Ordering::Relaxed);
    ok()
}
