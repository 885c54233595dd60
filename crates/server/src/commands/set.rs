//! SET, SETNX, SETEX, PSETEX, GETSET, MSET, MSETNX.

use resp::Frame;

use super::expire::{parse_expiry, take_expiry_option, Expiry};
use super::{
    error, int, ok, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR,
    WRONG_TYPE,
};
use crate::db::Change;
use crate::entry::Entry;
use crate::entry::{now_ms, Kind};
use crate::keyspace_events::{GENERIC, KEY_MISS, STRING};

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]`.
pub fn set(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, value) = (&args[1], &args[2]);
    if args.len() == 3 {
        ctx.db().set(key, value, None)?;
        ctx.notify(STRING, "set", key);
        return ok();
    }
    let (mut nx, mut xx, mut get) = (false, false, false);
    let mut expiry_option = None;
    let mut i = 3;
    while i < args.len() {
        match take_expiry_option(args, &mut i, b"KEEPTTL", &mut expiry_option) {
            Ok(true) => {}
            Ok(false) => match upper(&args[i]).as_slice() {
                b"NX" if !xx => nx = true,
                b"XX" if !nx => xx = true,
                b"GET" => get = true,
                _ => return error(SYNTAX_ERROR),
            },
            Err(()) => return error(SYNTAX_ERROR),
        }
        i += 1;
    }
    let expiry = match expiry_option {
        None => None,
        Some((_, None)) => Some(Expiry::Keep),
        Some((kind, Some(arg))) => match parse_expiry(&kind, arg, "set") {
            Ok(e) => e,
            Err(e) => return reply(e),
        },
    };
    let outcome = ctx.db().update(key, Kind::String, |e| {
        // SET GET reads the old value as GET does; without GET, SET replaces any type.
        if get && e.is_some_and(|e| !e.is_string()) {
            return (Change::Keep, None);
        }
        let old = e.map(|e| e.value.clone());
        if (nx && e.is_some()) || (xx && e.is_none()) {
            return (Change::Keep, Some((false, old)));
        }
        let deadline = match expiry {
            None => None,
            Some(Expiry::At(at)) => Some(at),
            Some(Expiry::Keep) => e.and_then(|e| e.deadline),
        };
        (
            Change::Put(Entry::plain(value.clone(), deadline)),
            Some((true, old)),
        )
    })?;
    let Some((done, old)) = outcome else {
        return error(WRONG_TYPE);
    };
    if done {
        ctx.notify(STRING, "set", key);
        if matches!(expiry, Some(Expiry::At(_))) {
            ctx.notify(GENERIC, "expire", key);
        }
    }
    if get {
        reply(old.map_or(Frame::Null, Frame::Bulk))
    } else if done {
        ok()
    } else {
        reply(Frame::Null)
    }
}

pub fn setnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let value = &args[2];
    let done = ctx.db().update(&args[1], Kind::String, |e| match e {
        Some(_) => (Change::Keep, false),
        None => (Change::Put(Entry::plain(value.clone(), None)), true),
    })?;
    if done {
        ctx.notify(STRING, "set", &args[1]);
    }
    int(done as i64)
}

fn set_with_ttl(ctx: &mut Ctx, args: &[Vec<u8>], unit: i64, command: &str) -> Reply {
    let Some(n) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    let deadline = n
        .checked_mul(unit)
        .filter(|_| n > 0)
        .and_then(|ms| ms.checked_add(now_ms() as i64));
    let Some(deadline) = deadline else {
        return error(&format!("ERR invalid expire time in '{command}' command"));
    };
    ctx.db().set(&args[1], &args[3], Some(deadline as u64))?;
    ctx.notify(STRING, "set", &args[1]);
    ctx.notify(GENERIC, "expire", &args[1]);
    ok()
}

/// `SETEX key seconds value`.
pub fn setex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_with_ttl(ctx, args, 1000, "setex")
}

/// `PSETEX key milliseconds value`.
pub fn psetex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_with_ttl(ctx, args, 1, "psetex")
}

pub fn getset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, value) = (&args[1], &args[2]);
    // Redis runs a GET first: a read, for the statistics and `keymiss`, which comes
    // before the `new` event of the write. Told once even if a racing writer makes
    // the update look again (Redis, one thread, has no such race).
    let mut miss_told = false;
    let old = ctx.db().update(key, Kind::String, |e| {
        if e.is_none() && !miss_told {
            ctx.notify(KEY_MISS, "keymiss", key);
            miss_told = true;
        }
        match e {
            Some(e) if !e.is_string() => (Change::Keep, Err(())),
            e => (
                Change::Put(Entry::plain(value.clone(), None)),
                Ok(e.map(|e| e.value.clone())),
            ),
        }
    })?;
    let Ok(old) = old else {
        ctx.count_read(true);
        return error(WRONG_TYPE);
    };
    ctx.count_read(old.is_some());
    ctx.notify(STRING, "set", key);
    reply(old.map_or(Frame::Null, Frame::Bulk))
}

/// Runs alone (the command table says so), so no reader sees some keys set and
/// others not; on a durable engine one atomic write, so no crash does either.
pub fn mset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len().is_multiple_of(2) {
        return error("ERR wrong number of arguments for 'mset' command");
    }
    let pairs = pairs(args);
    ctx.db().set_all(&pairs)?;
    notify_set(ctx, &pairs);
    ok()
}

fn pairs(args: &[Vec<u8>]) -> Vec<(&[u8], &[u8])> {
    args[1..]
        .chunks_exact(2)
        .map(|p| (p[0].as_slice(), p[1].as_slice()))
        .collect()
}

/// Sets every pair, or none if any key exists. Runs alone, like MSET.
pub fn msetnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len().is_multiple_of(2) {
        return error("ERR wrong number of arguments for 'msetnx' command");
    }
    let pairs = pairs(args);
    for (key, _) in &pairs {
        if ctx.db().contains(key)? {
            return int(0);
        }
    }
    ctx.db().set_all(&pairs)?;
    notify_set(ctx, &pairs);
    int(1)
}

fn notify_set(ctx: &Ctx, pairs: &[(&[u8], &[u8])]) {
    for (key, _) in pairs {
        ctx.notify(STRING, "set", key);
    }
}
