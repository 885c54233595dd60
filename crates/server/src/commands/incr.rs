//! INCR, DECR, INCRBY, DECRBY: atomic by compare-and-set on the stored value.

use resp::Frame;

use super::{error, parse_integer, reply, Action, Session, NOT_AN_INTEGER};
use crate::db::Db;

fn add(db: &Db, key: &[u8], delta: i64) -> Action {
    loop {
        let Some(current) = db.get(key) else {
            if db.set_new(key, delta.to_string().as_bytes()) {
                return reply(Frame::Integer(delta));
            }
            continue;
        };
        let Some(n) = parse_integer(&current) else {
            return error(NOT_AN_INTEGER);
        };
        let Some(sum) = n.checked_add(delta) else {
            return error("ERR increment or decrement would overflow");
        };
        if db.replace(key, &current, sum.to_string().as_bytes()) {
            return reply(Frame::Integer(sum));
        }
    }
}

pub fn incr(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    add(db, &args[1], 1)
}

pub fn decr(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    add(db, &args[1], -1)
}

pub fn incrby(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    match parse_integer(&args[2]) {
        Some(d) => add(db, &args[1], d),
        None => error(NOT_AN_INTEGER),
    }
}

pub fn decrby(db: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    match parse_integer(&args[2]).and_then(i64::checked_neg) {
        Some(d) => add(db, &args[1], d),
        None => error(NOT_AN_INTEGER),
    }
}
