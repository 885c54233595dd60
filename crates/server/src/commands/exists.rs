//! EXISTS and TOUCH: a key named twice counts twice, as in Redis.

use super::{int, Action, Ctx};

pub fn exists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Action {
    int(args[1..].iter().filter(|k| ctx.db().contains(k)).count() as i64)
}
