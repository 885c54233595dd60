//! GET.

use resp::Frame;

use super::{reply, Action, Session};
use crate::db::Db;

pub fn get(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(db.get(&args[1]).map_or(Frame::Null, Frame::Bulk))
}
