//! MGET, MSET, STRLEN, APPEND, GETSET, GETDEL.

use resp::Frame;

use super::{error, ok, reply, Action, Session};
use crate::db::Db;

pub fn mget(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Array(
        args[1..]
            .iter()
            .map(|k| db.get(k).map_or(Frame::Null, Frame::Bulk))
            .collect(),
    ))
}

/// Each key is set atomically; readers may see some of the keys set before others
/// (Redis sets them all at once). Multi-key atomicity comes with transactions.
pub fn mset(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    if args.len().is_multiple_of(2) {
        return error("ERR wrong number of arguments for 'mset' command");
    }
    for pair in args[1..].chunks_exact(2) {
        db.set(&pair[0], &pair[1]);
    }
    ok()
}

pub fn strlen(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::Integer(
        db.get(&args[1]).map_or(0, |v| v.len()) as i64
    ))
}

/// Atomic by compare-and-set: a concurrent write makes it retry on the new value.
pub fn append(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    let (key, tail) = (&args[1], &args[2]);
    loop {
        match db.get(key) {
            None => {
                if db.set_new(key, tail) {
                    return reply(Frame::Integer(tail.len() as i64));
                }
            }
            Some(current) => {
                let mut joined = current.clone();
                joined.extend_from_slice(tail);
                if db.replace(key, &current, &joined) {
                    return reply(Frame::Integer(joined.len() as i64));
                }
            }
        }
    }
}

pub fn getset(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    let (key, value) = (&args[1], &args[2]);
    loop {
        match db.get(key) {
            None => {
                if db.set_new(key, value) {
                    return reply(Frame::Null);
                }
            }
            Some(current) => {
                if db.replace(key, &current, value) {
                    return reply(Frame::Bulk(current));
                }
            }
        }
    }
}

pub fn getdel(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    let key = &args[1];
    loop {
        let Some(current) = db.get(key) else {
            return reply(Frame::Null);
        };
        if db.remove_if_value(key, &current) {
            return reply(Frame::Bulk(current));
        }
    }
}
