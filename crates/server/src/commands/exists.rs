//! EXISTS: a key named twice counts twice, as in Redis.

use resp::Frame;

use super::{reply, Action, Session};
use crate::db::Db;

pub fn exists(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(
        args[1..].iter().filter(|k| db.contains(k)).count() as i64,
    ))
}
