//! MGET, STRLEN, APPEND, GETRANGE (SUBSTR), SETRANGE.

use resp::Frame;

use super::{error, int, of_kind, parse_integer, reply, Ctx, Reply, NOT_AN_INTEGER, WRONG_TYPE};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::keyspace_events::STRING;

pub fn mget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut values = Vec::with_capacity(args.len() - 1);
    for key in &args[1..] {
        // As Redis: a key of another type reads as missing here, not as an error.
        let found = ctx.read_of(key, Kind::String)?.filter(Entry::is_string);
        values.push(found.map_or(Frame::Null, |e| Frame::Bulk(e.value)));
    }
    reply(Frame::Array(values))
}

pub fn strlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    int(of_kind!(ctx, &args[1], String).map_or(0, |e| e.value.len()) as i64)
}

const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

pub fn append(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let tail = &args[2];
    let max = ctx.server.config.proto_max_bulk_len();
    let result = ctx.db().update(&args[1], Kind::String, |e| {
        if e.is_some_and(|e| !e.is_string()) {
            return (Change::Keep, Err(WRONG_TYPE));
        }
        let (mut value, deadline) = e.map_or((Vec::new(), None), |e| (e.value.clone(), e.deadline));
        if value.len() + tail.len() > max {
            return (Change::Keep, Err(TOO_LONG));
        }
        value.extend_from_slice(tail);
        let len = value.len();
        (Change::Put(Entry::raw_string(value, deadline)), Ok(len))
    })?;
    match result {
        Ok(len) => {
            ctx.notify(STRING, "append", &args[1]);
            int(len as i64)
        }
        Err(e) => error(e),
    }
}

/// `GETRANGE key start end`, both inclusive, negative from the end, as Redis clamps.
pub fn getrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (Some(mut start), Some(mut end)) = (parse_integer(&args[2]), parse_integer(&args[3]))
    else {
        return error(NOT_AN_INTEGER);
    };
    let value = of_kind!(ctx, &args[1], String)
        .map(|e| e.value)
        .unwrap_or_default();
    let len = value.len() as i64;
    if start < 0 && end < 0 && start > end {
        return reply(Frame::Bulk(Vec::new()));
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0).min(len - 1);
    if len == 0 || start > end {
        return reply(Frame::Bulk(Vec::new()));
    }
    reply(Frame::Bulk(value[start as usize..=end as usize].to_vec()))
}

/// `SETRANGE key offset value`: overwrites from `offset`, zero-padding a short or
/// missing value; keeps the expiry.
pub fn setrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(offset) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    if offset < 0 {
        return error("ERR offset is out of range");
    }
    let patch = &args[3];
    let offset = offset as usize;
    // As Redis: the type is checked before the size, and an empty patch changes nothing.
    // The longest string SETRANGE may build is `proto-max-bulk-len`, as in Redis.
    let too_long =
        offset as u64 + patch.len() as u64 > ctx.server.config.proto_max_bulk_len() as u64;
    let outcome = ctx.db().update(&args[1], Kind::String, |e| match e {
        Some(e) if !e.is_string() => (Change::Keep, Err(WRONG_TYPE)),
        None if patch.is_empty() => (Change::Keep, Ok((0, false))),
        Some(e) if patch.is_empty() => (Change::Keep, Ok((e.value.len(), false))),
        _ if too_long => (Change::Keep, Err(TOO_LONG)),
        e => {
            let (mut value, deadline) =
                e.map_or((Vec::new(), None), |e| (e.value.clone(), e.deadline));
            if value.len() < offset + patch.len() {
                value.resize(offset + patch.len(), 0);
            }
            value[offset..offset + patch.len()].copy_from_slice(patch);
            let len = value.len();
            (
                Change::Put(Entry::raw_string(value, deadline)),
                Ok((len, true)),
            )
        }
    })?;
    let (len, changed) = match outcome {
        Ok(done) => done,
        Err(e) => return error(e),
    };
    if changed {
        ctx.notify(STRING, "setrange", &args[1]);
    }
    int(len as i64)
}
