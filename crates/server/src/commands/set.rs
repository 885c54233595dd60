//! SET and SETNX.

use resp::Frame;

use super::{error, ok, reply, Action, Session, SYNTAX_ERROR};
use crate::db::Db;

/// `SET key value [NX | XX]`. Expiry and GET options arrive with key expiry.
pub fn set(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    let (key, value) = (&args[1], &args[2]);
    let (mut nx, mut xx) = (false, false);
    for opt in &args[3..] {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" | b"KEEPTTL" | b"GET" => {
                return error(&format!(
                    "ERR SET option '{}' is not supported yet by hotkv",
                    String::from_utf8_lossy(opt)
                ))
            }
            _ => return error(SYNTAX_ERROR),
        }
    }
    let done = if nx {
        db.set_new(key, value)
    } else if xx {
        db.set_existing(key, value)
    } else {
        db.set(key, value);
        true
    };
    if done {
        ok()
    } else {
        reply(Frame::Null)
    }
}

pub fn setnx(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(db.set_new(&args[1], &args[2]) as i64))
}
