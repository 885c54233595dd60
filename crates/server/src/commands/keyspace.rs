//! TYPE, RENAME, RENAMENX, COPY, MOVE, RANDOMKEY.

use resp::Frame;

use crate::keyspace_events::GENERIC;

use super::{
    error, int, ok, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR,
};

pub fn type_of(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let found = ctx.kind_untouched(&args[1])?;
    reply(Frame::Simple(found.map_or("none", |k| k.name()).into()))
}

/// Moves `from` to `to`, value and expiry. Runs alone (the command table says so), so
/// no one sees both keys or neither. Returns false if `to` exists and `replace` is off.
/// The outer error is the engine's, the inner one the reply to a missing `from`.
fn rename_key(
    ctx: &mut Ctx,
    from: &[u8],
    to: &[u8],
    replace: bool,
) -> engine::Result<Result<bool, &'static str>> {
    let db = ctx.db();
    if !db.contains(from)? {
        return Ok(Err("ERR no such key"));
    }
    if from == to {
        return Ok(Ok(replace));
    }
    if !replace && db.contains(to)? {
        return Ok(Ok(false));
    }
    if !db.rename(from, to)? {
        return Ok(Err("ERR no such key"));
    }
    ctx.notify(GENERIC, "rename_from", from);
    ctx.notify(GENERIC, "rename_to", to);
    Ok(Ok(true))
}

pub fn rename(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match rename_key(ctx, &args[1], &args[2], true)? {
        Ok(_) => ok(),
        Err(e) => error(e),
    }
}

pub fn renamenx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match rename_key(ctx, &args[1], &args[2], false)? {
        Ok(done) => int(done as i64),
        Err(e) => error(e),
    }
}

/// `COPY source destination [DB destination-db] [REPLACE]`: value and expiry. Runs
/// alone, like RENAME. Only database 0 exists, so `DB` accepts 0 alone.
pub fn copy(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut replace = false;
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        match upper(option).as_slice() {
            b"REPLACE" => replace = true,
            b"DB" => match options.next().map(|db| parse_integer(db)) {
                Some(Some(0)) => {}
                Some(Some(_)) => return error("ERR DB index is out of range"),
                Some(None) => return error(NOT_AN_INTEGER),
                None => return error(SYNTAX_ERROR),
            },
            _ => return error(SYNTAX_ERROR),
        }
    }
    let (from, to) = (&args[1], &args[2]);
    if from == to {
        return error("ERR source and destination objects are the same");
    }
    let db = ctx.db();
    let Some(entry) = ctx.read(from)? else {
        return int(0);
    };
    if !replace && db.contains(to)? {
        return int(0);
    }
    db.set_entry(to, &entry)?;
    ctx.notify(GENERIC, "copy_to", to);
    int(1)
}

/// `MOVE key db`: with database 0 the only one, the destination is either the
/// source (Redis's error for that) or out of range.
pub fn move_key(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match parse_integer(&args[2]) {
        Some(0) => error("ERR source and destination objects are the same"),
        Some(_) => error("ERR DB index is out of range"),
        None => error(NOT_AN_INTEGER),
    }
}

pub fn randomkey(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    reply(ctx.db().random_key()?.map_or(Frame::Null, Frame::Bulk))
}
