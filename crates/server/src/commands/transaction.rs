//! MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! EXEC holds the gate exclusively while it checks the WATCHed keys and runs the
//! queue, so no other command runs in between, as in Redis. WATCH records a version
//! per key (see `Db::watch`); EXEC aborts if any changed. On a durable engine the
//! queue's writes are one atomic batch (see `Db::atomically`).

use std::sync::atomic::Ordering;

use resp::Frame;

use super::{error, execute_in_exec, ok, reply, Ctx, Reply, Session};
use crate::server::Server;

pub fn multi(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    if ctx.session.multi.is_some() {
        return error("ERR MULTI calls can not be nested");
    }
    ctx.session.multi = Some(Vec::new());
    ctx.session.client.buffers.clear_queue();
    ctx.session.multi_failed = false;
    ctx.session.client.in_multi.store(true, Ordering::Relaxed);
    ok()
}

pub fn exec(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    let Some(queue) = ctx.session.multi.take() else {
        return error("ERR EXEC without MULTI");
    };
    ctx.session.client.buffers.clear_queue();
    ctx.session.client.in_multi.store(false, Ordering::Relaxed);
    let server = ctx.server;
    if std::mem::take(&mut ctx.session.multi_failed) {
        ctx.session.unwatch(&server.db);
        return error("EXECABORT Transaction discarded because of previous errors.");
    }
    // The gate is held exclusively (the EXEC flag), so the watched keys' versions
    // cannot change between this check and the queued commands.
    let mut changed = false;
    for watched in &ctx.session.watching {
        if changed_since_watched(server, watched)? {
            changed = true;
            break;
        }
    }
    ctx.session.unwatch(&server.db);
    if changed {
        return reply(Frame::NullArray);
    }
    let session = &mut *ctx.session;
    session.in_exec = true;
    let replies = server.db.atomically(|| {
        queue
            .iter()
            .map(|args| execute_in_exec(server, session, args))
            .collect()
    });
    session.in_exec = false;
    reply(Frame::Array(replies?))
}

/// Whether a watched key changed, as Redis 7 judges it: written or deleted since (its
/// version moved), or expired since, even if not yet deleted. A key already expired
/// when watched is changed only by a write that left a value, even one deleted again
/// before EXEC: its deletion (by lazy expiry, DEL or a flush) is none, since it was
/// gone to any reader.
fn changed_since_watched(server: &Server, watched: &super::Watched) -> Result<bool, engine::Error> {
    let version = server.db.watched_version(&watched.key);
    if watched.stale {
        return Ok(version.written_since(watched.version));
    }
    Ok(version != watched.version || server.db.stale(&watched.key)? == Some(true))
}

pub fn discard(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    if ctx.session.multi.is_none() {
        return error("ERR DISCARD without MULTI");
    }
    end(ctx.server, ctx.session);
    ok()
}

/// The reply to an EXEC refused before it ran (BUSY, NOAUTH, ...): the transaction is
/// discarded, as Redis's `execCommandAbort` does, even outside MULTI.
pub fn abort(server: &Server, session: &mut Session, reason: &str) -> Frame {
    end(server, session);
    // Redis words its formatted refusals (arity, a subscribed client's) without the
    // ERR code here, and keeps the others' (NOAUTH, NOPERM, BUSY).
    let reason = reason.strip_prefix("ERR ").unwrap_or(reason);
    Frame::error(format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ))
}

/// Leaves the MULTI state: the queue, the doom and the watches go.
fn end(server: &Server, session: &mut Session) {
    session.multi = None;
    session.client.buffers.clear_queue();
    session.multi_failed = false;
    session.client.in_multi.store(false, Ordering::Relaxed);
    session.unwatch(&server.db);
}

pub fn watch(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if ctx.session.multi.is_some() {
        return error("ERR WATCH inside MULTI is not allowed");
    }
    for key in &args[1..] {
        if ctx.session.watching.iter().any(|w| w.key == *key) {
            continue;
        }
        let version = ctx.server.db.watch(key);
        // A write counted in `version` may be gathered on another thread (see
        // `gathered_writes.rs`): what this client reads next must show it.
        ctx.server.db.await_writers(key)?;
        let stale = ctx.server.db.stale(key)? == Some(true);
        ctx.session.watching.push(super::Watched {
            key: key.clone(),
            version,
            stale,
        });
    }
    ok()
}

pub fn unwatch(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    ctx.session.unwatch(&ctx.server.db);
    ok()
}
