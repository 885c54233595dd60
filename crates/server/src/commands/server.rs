//! DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, TIME, ROLE, SHUTDOWN, SAVE, BGSAVE, LASTSAVE, WAIT.

use resp::Frame;

use super::{error, int, ok, parse_integer, reply, upper, Action, Ctx, Reply, SYNTAX_ERROR};

pub fn dbsize(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    int(ctx.db().len() as i64)
}

/// `FLUSHDB | FLUSHALL [ASYNC | SYNC]`: the same with one database. Runs alone, so
/// it is atomic as in Redis; ASYNC is accepted and done synchronously.
pub fn flush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sync = match &args[1..] {
        [] => true,
        [mode] if upper(mode) == b"SYNC" => true,
        [mode] if upper(mode) == b"ASYNC" => false,
        _ => return error(SYNTAX_ERROR),
    };
    ctx.db().clear()?;
    // What the flush deleted is freed now, not when the epoch next moves on its own,
    // so that it stops counting against maxmemory and the purge below can return it.
    ctx.db().free_retired();
    if upper(&args[0]) == b"FLUSHALL" {
        // As Redis: a background save of the data just deleted is pointless, and with
        // a save schedule the file is made to hold what is left at once.
        ctx.server.background_save.kill();
        if ctx.server.saves_on_schedule() {
            if let Err(e) = ctx.server.save() {
                tracing::warn!(error = %e, "saving after FLUSHALL failed");
            }
        }
    }
    if sync {
        // As Redis after a synchronous flush: the freed pages go back to the system
        // now, not after the allocator's decay time.
        if let Err(e) = crate::memory::purge() {
            tracing::warn!("returning memory after a flush: {e}");
        }
    }
    ok()
}

/// `SWAPDB a b`: database 0 is the only one, so swapping it with itself is all there
/// is to do.
pub fn swapdb(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (Some(a), Some(b)) = (parse_integer(&args[1]), parse_integer(&args[2])) else {
        return error(if parse_integer(&args[1]).is_none() {
            "ERR invalid first DB index"
        } else {
            "ERR invalid second DB index"
        });
    };
    if a != 0 || b != 0 {
        return error("ERR DB index is out of range");
    }
    ok()
}

/// A hotkv server has no replication yet: it is a master with no replicas, which is
/// what clients that check the role before writing need to hear.
pub fn role(_: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    reply(Frame::Array(vec![
        Frame::bulk("master"),
        Frame::Integer(0),
        Frame::Array(vec![]),
    ]))
}

pub fn time(_: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    reply(Frame::Array(vec![
        Frame::Bulk(now.as_secs().to_string().into_bytes()),
        Frame::Bulk(now.subsec_micros().to_string().into_bytes()),
    ]))
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE]`: stops accepting, lets every connection
/// finish the requests it has read, then, on the memory engine, saves the RDB file if
/// SAVE is given, or if a save schedule is set and NOSAVE is not (as Redis), and exits.
pub fn shutdown(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut save = None;
    for opt in &args[1..] {
        match upper(opt).as_slice() {
            // Both: a syntax error, as in Redis.
            b"NOSAVE" if save != Some(true) => save = Some(false),
            b"SAVE" if save != Some(false) => save = Some(true),
            b"NOW" | b"FORCE" => {}
            b"ABORT" => return error("ERR No shutdown in progress."),
            _ => return error(SYNTAX_ERROR),
        }
    }
    // Allowed while a script is busy (ALLOW_BUSY), with NOSAVE only, as in Redis: the
    // script is stopped where it is, whatever it has written.
    let running = &ctx.server.running_script;
    if running.is_busy() {
        if !args[1..].iter().any(|opt| upper(opt) == b"NOSAVE") {
            return error(running.busy_error());
        }
        running.stop_for_shutdown();
    }
    tracing::info!(client = ctx.session.client.id, "SHUTDOWN requested");
    ctx.server.choose_shutdown_save(save);
    ctx.server.request_shutdown();
    Ok(Action::Close(None))
}

/// SAVE: every write so far is on disk when it answers: on the lsm engine its log is
/// synced, on the memory engine the RDB file written (`rdb_save.rs`).
pub fn save(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    match ctx.server.save() {
        Ok(()) => ok(),
        Err(e) => error(&e),
    }
}

/// `BGSAVE [SCHEDULE]`: on the memory engine a child process writes the RDB file
/// from a copy of memory as of the fork while the server goes on, as Redis's does
/// (`background_save.rs`); INFO's rdb_bgsave_in_progress says when it is done. On
/// lsm, as SAVE: an fsync of the log. SCHEDULE waits only where Redis's would: for
/// the end of a transaction (hotkv has no other child process to wait for).
pub fn bgsave(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match &args[1..] {
        [] => {}
        [opt] if upper(opt) == b"SCHEDULE" => {}
        _ => return error(SYNTAX_ERROR),
    }
    match ctx.server.background_save(ctx.session.in_exec) {
        Ok(status) => reply(Frame::Simple(status.into())),
        Err(e) => error(&e),
    }
}

/// `BGREWRITEAOF`: see `Server::rewrite_log`; done before the reply, as BGSAVE is.
pub fn bgrewriteaof(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    match ctx.server.rewrite_log() {
        Ok(()) => reply(Frame::Simple(
            "Background append only file rewriting started".into(),
        )),
        Err(e) => error(&e),
    }
}

pub fn lastsave(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    int(ctx.server.last_save() as i64)
}

/// The reply to a protected command (DEBUG, MODULE LOAD) that its setting does not
/// allow, in the words of Redis 7 with its default `enable-debug-command no` and
/// `enable-module-command no`, so tools that probe for them learn what they would from
/// Redis.
pub(crate) fn protected_refusal(name: &str) -> Frame {
    Frame::error(format!(
        "ERR {} command not allowed. If the enable-{name}-command option is set to \"local\", \
         you can run it from a local connection, otherwise you need to set this option in the \
         configuration file, and then restart the server.",
        name.to_ascii_uppercase()
    ))
}

/// `REPLICAOF NO ONE` (and the old SLAVEOF): hotkv is a master already, so nothing
/// changes. It does not replicate, so `REPLICAOF host port` is refused, after the port
/// is checked as Redis checks it.
pub fn replicaof(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args[1].eq_ignore_ascii_case(b"no") && args[2].eq_ignore_ascii_case(b"one") {
        return ok();
    }
    match parse_integer(&args[2]) {
        Some(0..=65535) => error(
            "ERR hotkv does not replicate: it cannot become a replica, only REPLICAOF NO ONE \
             is accepted",
        ),
        _ => error("ERR Invalid master port"),
    }
}

/// `LOLWUT [VERSION version]`: Redis draws computer art for its versions 5 and 6 and
/// otherwise gives its version line alone; hotkv draws none, so the line is the reply.
pub fn lolwut(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len() >= 3
        && args[1].eq_ignore_ascii_case(b"version")
        && parse_integer(&args[2]).is_none()
    {
        return error(super::NOT_AN_INTEGER);
    }
    reply(Frame::Verbatim {
        format: *b"txt",
        text: format!("Redis ver. {}\n", crate::REDIS_VERSION).into_bytes(),
    })
}

/// `WAIT numreplicas timeout`: hotkv has no replicas, so the answer is always 0
/// acknowledgements; as in Redis, it comes at once when none were asked for, and
/// otherwise when the timeout (milliseconds, 0: none) runs out.
pub fn wait(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(replicas) = parse_integer(&args[1]) else {
        return error(super::NOT_AN_INTEGER);
    };
    let Some(timeout) = parse_integer(&args[2]) else {
        return error("ERR timeout is not an integer or out of range");
    };
    if timeout < 0 {
        return error("ERR timeout is negative");
    }
    let acknowledged = Frame::Integer(0);
    if replicas <= 0 {
        return reply(acknowledged);
    }
    let until = (timeout > 0).then(|| std::time::Duration::from_millis(timeout as u64));
    Ok(Action::After(until, acknowledged))
}
