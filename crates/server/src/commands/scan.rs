//! KEYS and SCAN.
//!
//! In memory a SCAN cursor is a position in the index's hash order: the smallest key
//! hash the next call returns. Rings split by inserting into that same order, so, as
//! Redis promises, every key present for the whole scan is returned, across any
//! splits, and a key is returned at most once unless it is deleted and added again.
//! On an ordered engine a cursor stands for the key to resume from (see
//! `engine_store.rs`), which keeps the same promise.

use resp::Frame;

use super::{error, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::glob::glob_match;

pub fn keys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let pattern = &args[1];
    let mut found = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = ctx.db().scan(cursor, 1024, |k, _| {
            if glob_match(pattern, k, false) {
                found.push(Frame::Bulk(k.to_vec()));
            }
        })?;
        if cursor == 0 {
            break;
        }
    }
    reply(Frame::Array(found))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub fn scan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let cursor = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    let Some(cursor) = cursor else {
        return error("ERR invalid cursor");
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut kind: Option<Vec<u8>> = None;
    let mut opts = args[2..].chunks(2);
    for opt in opts.by_ref() {
        let [name, value] = opt else {
            return error(SYNTAX_ERROR);
        };
        match upper(name).as_slice() {
            b"MATCH" => pattern = Some(value),
            b"COUNT" => match parse_integer(value) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return error(SYNTAX_ERROR),
                None => return error(NOT_AN_INTEGER),
            },
            b"TYPE" => kind = Some(value.to_ascii_lowercase()),
            _ => return error(SYNTAX_ERROR),
        }
    }
    // An unknown type filters everything out (the cursor still advances), as in Redis.
    let mut found = Vec::new();
    let next = ctx.db().scan(cursor, count, |k, k_kind| {
        if kind
            .as_ref()
            .is_none_or(|want| want == k_kind.name().as_bytes())
            && pattern.is_none_or(|p| glob_match(p, k, false))
        {
            found.push(Frame::Bulk(k.to_vec()));
        }
    })?;
    reply(Frame::Array(vec![
        Frame::Bulk(next.to_string().into_bytes()),
        Frame::Array(found),
    ]))
}
