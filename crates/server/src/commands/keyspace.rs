//! DBSIZE, TYPE.

use resp::Frame;

use super::{reply, Action, Session};
use crate::db::Db;

pub fn dbsize(db: &Db, _: &mut Session, _: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(db.len() as i64))
}

/// Every value is a string so far.
pub fn type_of(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Simple(
        if db.contains(&args[1]) {
            "string"
        } else {
            "none"
        }
        .into(),
    ))
}
