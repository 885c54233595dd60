//! DEL and UNLINK (the same here: removal never blocks on freeing memory).

use resp::Frame;

use super::{reply, Action, Session};
use crate::db::Db;

pub fn del(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(
        args[1..].iter().filter(|k| db.remove(k)).count() as i64,
    ))
}
