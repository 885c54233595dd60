//! DEL and UNLINK (the same here: removal never blocks on freeing memory).

use super::{int, Ctx, Reply};

pub fn del(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut removed = 0;
    for key in &args[1..] {
        removed += i64::from(ctx.db().remove(key)?);
    }
    int(removed)
}
