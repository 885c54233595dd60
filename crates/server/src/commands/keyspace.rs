//! TYPE, RENAME, RENAMENX, RANDOMKEY.

use resp::Frame;

use super::{error, int, ok, reply, Action, Ctx};

/// Every value is a string so far.
pub fn type_of(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    let kind = if ctx.db().contains(&args[1]) {
        "string"
    } else {
        "none"
    };
    reply(Frame::Simple(kind.into()))
}

/// Moves `from` to `to`, value and expiry. Runs alone (the command table says so), so
/// no one sees both keys or neither. Returns false if `to` exists and `replace` is off.
fn rename_key(ctx: &mut Ctx, from: &[u8], to: &[u8], replace: bool) -> Result<bool, &'static str> {
    let db = ctx.db();
    let Some(entry) = db.get(from) else {
        return Err("ERR no such key");
    };
    if from == to {
        return Ok(replace);
    }
    if !replace && db.contains(to) {
        return Ok(false);
    }
    db.set(to, &entry.value, entry.deadline);
    db.remove(from);
    Ok(true)
}

pub fn rename(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    match rename_key(ctx, &args[1], &args[2], true) {
        Ok(_) => ok(),
        Err(e) => error(e),
    }
}

pub fn renamenx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    match rename_key(ctx, &args[1], &args[2], false) {
        Ok(done) => int(done as i64),
        Err(e) => error(e),
    }
}

pub fn randomkey(ctx: &mut Ctx, _: &[Vec<u8>]) -> Action {
    reply(ctx.db().random_key().map_or(Frame::Null, Frame::Bulk))
}
