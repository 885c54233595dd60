//! GET, GETDEL, GETEX.

use resp::Frame;

use super::expire::{parse_expiry, take_expiry_option, Expiry};
use super::{error, of_kind, reply, Ctx, Reply, SYNTAX_ERROR, WRONG_TYPE};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::keyspace_events::GENERIC;

pub fn get(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let found = of_kind!(ctx, &args[1], String);
    reply(found.map_or(Frame::Null, |e| Frame::Bulk(e.value)))
}

pub fn getdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let old = ctx.db().update(&args[1], Kind::String, |e| match e {
        Some(e) if !e.is_string() => (Change::Keep, Err(())),
        e => (Change::Delete, Ok(e.map(|e| e.value.clone()))),
    })?;
    let Ok(old) = old else {
        ctx.hit(&args[1], true);
        return error(WRONG_TYPE);
    };
    ctx.hit(&args[1], old.is_some());
    if old.is_some() {
        ctx.notify(GENERIC, "del", &args[1]);
    }
    reply(old.map_or(Frame::Null, Frame::Bulk))
}

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`: GET that also sets or
/// clears the expiry.
pub fn getex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut expiry_option = None;
    let mut i = 2;
    while i < args.len() {
        if take_expiry_option(args, &mut i, b"PERSIST", &mut expiry_option) != Ok(true) {
            return error(SYNTAX_ERROR);
        }
        i += 1;
    }
    // None: leave the expiry; Some(None): PERSIST; Some(Some(t)): expire at t. A bad
    // time is an error only for a key that exists, as in Redis, which looks it up first.
    let expiry = match expiry_option {
        None => Ok(None),
        Some((_, None)) => Ok(Some(None)),
        Some((kind, Some(arg))) => match parse_expiry(&kind, arg, "getex") {
            Ok(Some(Expiry::At(at))) => Ok(Some(Some(at))),
            Ok(_) => return error(SYNTAX_ERROR),
            Err(e) => Err(e),
        },
    };
    let value = ctx
        .db()
        .update(&args[1], Kind::String, |e| match (e, &expiry) {
            (None, _) => (Change::Keep, Ok((None, None))),
            (Some(e), _) if !e.is_string() => (Change::Keep, Err(Frame::error(WRONG_TYPE))),
            (Some(_), Err(e)) => (Change::Keep, Err(e.clone())),
            (Some(e), Ok(None)) => (Change::Keep, Ok((Some(e.value.clone()), None))),
            // PERSIST on a key with no expiry changes nothing (and so aborts no WATCH).
            (Some(e), Ok(Some(None))) if e.deadline.is_none() => {
                (Change::Keep, Ok((Some(e.value.clone()), None)))
            }
            (Some(e), Ok(Some(deadline))) => (
                Change::Put(Entry {
                    deadline: *deadline,
                    ..e.clone()
                }),
                Ok((
                    Some(e.value.clone()),
                    Some(if deadline.is_some() {
                        "expire"
                    } else {
                        "persist"
                    }),
                )),
            ),
        })?;
    let (value, event) = match value {
        Ok(found) => found,
        Err(e) => return reply(e),
    };
    ctx.hit(&args[1], value.is_some());
    if let Some(event) = event {
        ctx.notify(GENERIC, event, &args[1]);
    }
    reply(value.map_or(Frame::Null, Frame::Bulk))
}
