//! DEL and UNLINK (the same here: removal never blocks on freeing memory).

use super::{int, Action, Ctx};

pub fn del(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    int(args[1..].iter().filter(|k| ctx.db().remove(k)).count() as i64)
}
