//! DEL and UNLINK (the same here: removal never blocks on freeing memory).

use super::{int, Ctx, Reply};
use crate::keyspace_events::GENERIC;

pub fn del(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut removed = 0;
    for key in &args[1..] {
        if ctx.db().remove(key)? {
            ctx.notify(GENERIC, "del", key);
            removed += 1;
        }
    }
    int(removed)
}
