//! DBSIZE.

use resp::Frame;

use super::{reply, Action, Session};
use crate::db::Db;

pub fn dbsize(db: &Db, _: &mut Session, _: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(db.len() as i64))
}
