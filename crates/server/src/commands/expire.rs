//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST,
//! and the parsing of expiry options that SET and GETEX share.

use resp::Frame;

use super::{error, int, parse_integer, upper, Ctx, Reply, NOT_AN_INTEGER};
use crate::db::Retime;
use crate::entry::now_ms;
use crate::keyspace_events::GENERIC;

pub enum Expiry {
    /// An absolute deadline in ms since the epoch.
    At(u64),
    /// KEEPTTL.
    Keep,
}

/// Collects the expiry option of SET or GETEX as Redis does: one kind at most among
/// EX, PX, EXAT, PXAT and `bare` (KEEPTTL for SET, PERSIST for GETEX), repeatable,
/// the last value winning and only that one checked. `Ok(None)` if `args[*i]` is not
/// an expiry option; otherwise advances `*i` past its argument.
pub fn take_expiry_option<'a>(
    args: &'a [Vec<u8>],
    i: &mut usize,
    bare: &[u8],
    found: &mut Option<(Vec<u8>, Option<&'a [u8]>)>,
) -> Result<bool, ()> {
    let opt = upper(&args[*i]);
    let takes_arg = matches!(opt.as_slice(), b"EX" | b"PX" | b"EXAT" | b"PXAT");
    if !takes_arg && opt != bare {
        return Ok(false);
    }
    if found.as_ref().is_some_and(|(kind, _)| *kind != opt) {
        return Err(());
    }
    let arg = if takes_arg {
        *i += 1;
        Some(args.get(*i).ok_or(())?.as_slice())
    } else {
        None
    };
    *found = Some((opt, arg));
    Ok(true)
}

/// One expiry option (`EX`, `PX`, `EXAT`, `PXAT`) and its argument, as Redis checks
/// them: an integer, positive, and not overflowing as milliseconds. `Ok(None)` if
/// `opt` is not an expiry option.
pub fn parse_expiry(opt: &[u8], arg: &[u8], command: &str) -> Result<Option<Expiry>, Frame> {
    let (unit, absolute) = match upper(opt).as_slice() {
        b"EX" => (1000, false),
        b"PX" => (1, false),
        b"EXAT" => (1000, true),
        b"PXAT" => (1, true),
        _ => return Ok(None),
    };
    let n = parse_integer(arg).ok_or_else(|| Frame::error(NOT_AN_INTEGER))?;
    let invalid = || Frame::error(format!("ERR invalid expire time in '{command}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let ms = n.checked_mul(unit).ok_or_else(invalid)?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms() as i64).ok_or_else(invalid)?
    };
    Ok(Some(Expiry::At(at as u64)))
}

/// The four EXPIRE commands: `key n [NX | XX | GT | LT]`, `n` in `unit` ms, relative
/// or absolute.
fn set_expiry(ctx: &mut Ctx, args: &[Vec<u8>], unit: i64, absolute: bool, command: &str) -> Reply {
    // Options first, then the time: the order in which Redis reports what is wrong.
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        match upper(opt).as_slice() {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return error(&format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    let invalid = format!("ERR invalid expire time in '{command}' command");
    let Some(ms) = n.checked_mul(unit) else {
        return error(&invalid);
    };
    let at = if absolute {
        Some(ms)
    } else {
        ms.checked_add(now_ms() as i64)
    };
    let Some(at) = at else {
        return error(&invalid);
    };
    let done = ctx.db().retime(&args[1], |deadline| {
        let Some(deadline) = deadline else {
            return (Retime::Keep, None);
        };
        // No deadline counts as an infinite one for GT and LT.
        let allowed = match deadline {
            None => !xx && !gt,
            Some(d) => !nx && (!gt || at > d as i64) && (!lt || at < d as i64),
        };
        if !allowed {
            (Retime::Keep, None)
        } else if at <= now_ms() as i64 {
            // A deadline already passed deletes the key, as Redis does.
            (Retime::Delete, Some("del"))
        } else {
            (Retime::Set(Some(at as u64)), Some("expire"))
        }
    })?;
    if let Some(event) = done {
        ctx.notify(GENERIC, event, &args[1]);
    }
    int(done.is_some() as i64)
}

pub fn expire(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_expiry(ctx, args, 1000, false, "expire")
}

pub fn pexpire(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_expiry(ctx, args, 1, false, "pexpire")
}

pub fn expireat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_expiry(ctx, args, 1000, true, "expireat")
}

pub fn pexpireat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    set_expiry(ctx, args, 1, true, "pexpireat")
}

/// -2 for a missing key, -1 for one without a deadline, else `f(deadline)`. Not an
/// access of the key (OBJECT IDLETIME goes on), as in Redis.
fn deadline_reply(ctx: &mut Ctx, key: &[u8], f: impl Fn(u64) -> i64) -> Reply {
    let found = ctx.db().peek_deadline(key)?;
    ctx.hit(key, found.is_some());
    match found {
        None => int(-2),
        Some(deadline) => int(deadline.map_or(-1, f)),
    }
}

pub fn ttl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // Rounded to the nearest second, as Redis rounds.
    deadline_reply(ctx, &args[1], |d| {
        (d.saturating_sub(now_ms()) as i64 + 500) / 1000
    })
}

pub fn pttl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    deadline_reply(ctx, &args[1], |d| d.saturating_sub(now_ms()) as i64)
}

pub fn expiretime(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // Rounded, as Redis rounds.
    deadline_reply(ctx, &args[1], |d| (d as i64 + 500) / 1000)
}

pub fn pexpiretime(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    deadline_reply(ctx, &args[1], |d| d as i64)
}

pub fn persist(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let done = ctx.db().retime(&args[1], |deadline| match deadline {
        Some(Some(_)) => (Retime::Set(None), true),
        _ => (Retime::Keep, false),
    })?;
    if done {
        ctx.notify(GENERIC, "persist", &args[1]);
    }
    int(done as i64)
}
