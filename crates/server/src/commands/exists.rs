//! EXISTS and TOUCH: a key named twice counts twice, as in Redis. TOUCH is an access
//! (OBJECT IDLETIME starts again from 0); EXISTS only looks, as in Redis.

use super::{int, Ctx, Reply};

pub fn exists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut found = 0;
    for key in &args[1..] {
        found += i64::from(ctx.exists_untouched(key)?);
    }
    int(found)
}

pub fn touch(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut found = 0;
    for key in &args[1..] {
        found += i64::from(ctx.exists(key)?);
    }
    int(found)
}
