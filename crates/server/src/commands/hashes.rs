//! Hashes: HSET HSETNX HMSET HGET HMGET HDEL HLEN HSTRLEN HEXISTS HGETALL HKEYS HVALS
//! HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN. Fields keep the order they were added in, as
//! in Redis's listpack, so small hashes list as Redis lists them.

use resp::Frame;

use super::collections::{self, answer_fields, edit_fields, notify_edit};
use super::incr::parse_float;
use super::{error, int, of_kind, ok, parse_integer, reply, Ctx, Reply};
use super::{NOT_AN_INTEGER, WRONG_TYPE};
use crate::entry::Kind;
use crate::field_nodes::FieldReader;
use crate::keyspace_events::HASH;
use crate::packed;

fn set_pairs(ctx: &Ctx, args: &[Vec<u8>], name: &str) -> Result<usize, Reply> {
    if !args.len().is_multiple_of(2) {
        return Err(error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    let edited = edit_fields(ctx, &args[1], Kind::Hash, |hash| {
        // A field given twice keeps its first place and its last value.
        args[2..]
            .chunks(2)
            .filter(|p| hash.set(&p[0], &p[1]))
            .count()
    })
    .map_err(Err)?;
    let Some(edited) = edited else {
        return Err(error(WRONG_TYPE));
    };
    notify_edit(ctx, &edited, HASH, "hset", &args[1]);
    Ok(edited.result)
}

/// `HSET key field value [field value ...]`: how many fields are new.
pub fn hset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match set_pairs(ctx, args, "hset") {
        Ok(added) => int(added as i64),
        Err(r) => r,
    }
}

/// `HMSET key field value [field value ...]`: HSET answering OK.
pub fn hmset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match set_pairs(ctx, args, "hmset") {
        Ok(_) => ok(),
        Err(r) => r,
    }
}

pub fn hsetnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (field, value) = (&args[2], &args[3]);
    let Some(edited) = edit_fields(ctx, &args[1], Kind::Hash, |hash| {
        hash.get(field).is_none() && hash.set(field, value)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, HASH, "hset", &args[1]);
    int(edited.result as i64)
}

/// The value of `field` as a reply: nil if missing.
fn value_reply(hash: Option<&FieldReader>, field: &[u8]) -> engine::Result<Frame> {
    let value = match hash {
        Some(h) => h.get(field)?,
        None => None,
    };
    Ok(value.map_or(Frame::Null, Frame::Bulk))
}

pub fn hget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Hash, |hash| {
        value_reply(hash, &args[2])
    })
}

pub fn hmget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Hash, |hash| {
        let values = args[2..].iter().map(|f| value_reply(hash, f));
        Ok(Frame::Array(values.collect::<engine::Result<_>>()?))
    })
}

pub fn hdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(edited) = edit_fields(ctx, &args[1], Kind::Hash, |hash| {
        args[2..].iter().filter(|f| hash.remove(f)).count()
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, HASH, "hdel", &args[1]);
    int(edited.result as i64)
}

pub fn hlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Hash, |hash| {
        Ok(Frame::Integer(hash.map_or(0, FieldReader::len) as i64))
    })
}

pub fn hstrlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Hash, |hash| {
        let len = match hash {
            Some(h) => h.get(&args[2])?.map_or(0, |v| v.len()),
            None => 0,
        };
        Ok(Frame::Integer(len as i64))
    })
}

pub fn hexists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Hash, |hash| {
        let found = match hash {
            Some(h) => h.get(&args[2])?.is_some(),
            None => false,
        };
        Ok(Frame::Integer(found as i64))
    })
}

/// The fields (`keys`), values, or both of a hash, in order.
fn listing(ctx: &Ctx, key: &[u8], keys: bool, values: bool) -> Reply {
    let found = of_kind!(ctx, key, Hash);
    let hash = found.map(|e| e.value).unwrap_or_default();
    let pairs = packed::pairs(&hash);
    if keys && values {
        return reply(Frame::Map(
            pairs
                .map(|(f, v)| (Frame::Bulk(f.to_vec()), Frame::Bulk(v.to_vec())))
                .collect(),
        ));
    }
    let pick = |(f, v): (&[u8], &[u8])| Frame::Bulk(if keys { f } else { v }.to_vec());
    reply(Frame::Array(pairs.map(pick).collect()))
}

pub fn hgetall(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    listing(ctx, &args[1], true, true)
}

pub fn hkeys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    listing(ctx, &args[1], true, false)
}

pub fn hvals(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    listing(ctx, &args[1], false, true)
}

/// Replaces `field`'s value by `next(current)` (`None` when missing), or fails with
/// the error `next` gives; answers with the new value.
fn increment(
    ctx: &Ctx,
    args: &[Vec<u8>],
    event: &'static str,
    next: impl Fn(Option<&[u8]>) -> Result<Vec<u8>, &'static str>,
) -> engine::Result<Result<Vec<u8>, Reply>> {
    let field = &args[2];
    let edited = edit_fields(ctx, &args[1], Kind::Hash, |hash| {
        let value = next(hash.get(field).as_deref())?;
        hash.set(field, &value);
        Ok(value)
    })?;
    let Some(edited) = edited else {
        return Ok(Err(error(WRONG_TYPE)));
    };
    notify_edit(ctx, &edited, HASH, event, &args[1]);
    Ok(edited.result.map_err(error))
}

pub fn hincrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(delta) = parse_integer(&args[3]) else {
        return error(NOT_AN_INTEGER);
    };
    let result = increment(ctx, args, "hincrby", |current| {
        let n = match current {
            None => 0,
            Some(v) => parse_integer(v).ok_or("ERR hash value is not an integer")?,
        };
        let sum = n
            .checked_add(delta)
            .ok_or("ERR increment or decrement would overflow")?;
        Ok(sum.to_string().into_bytes())
    })?;
    match result {
        Ok(v) => int(parse_integer(&v).expect("written as an integer")),
        Err(r) => r,
    }
}

pub fn hincrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(delta) = parse_float(&args[3]) else {
        return error("ERR value is not a valid float");
    };
    // Redis 7.0 refuses an infinite increment before it looks at the hash.
    if delta.is_infinite() {
        return error("ERR value is NaN or Infinity");
    }
    let result = increment(ctx, args, "hincrbyfloat", |current| {
        let n = match current {
            None => crate::long_double::LongDouble::ZERO,
            Some(v) => parse_float(v).ok_or("ERR hash value is not a float")?,
        };
        let sum = n.add(delta);
        if sum.is_infinite() {
            return Err("ERR increment would produce NaN or Infinity");
        }
        Ok(sum.to_human_string().into_bytes())
    })?;
    match result {
        Ok(v) => reply(Frame::Bulk(v)),
        Err(r) => r,
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`: a positive count picks distinct fields, a
/// negative one may pick a field more than once.
pub fn hrandfield(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (count, with_values) = match collections::random_count(&args[2..], b"WITHVALUES") {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    let Some(count) = count else {
        return answer_fields(ctx, &args[1], Kind::Hash, collections::random_field);
    };
    let found = of_kind!(ctx, &args[1], Hash);
    let Some(entry) = found else {
        return reply(Frame::Array(Vec::new()));
    };
    let pairs: Vec<(&[u8], &[u8])> = packed::pairs(&entry.value).collect();
    let positions =
        collections::random_positions(pairs.len(), count.unsigned_abs() as usize, count >= 0);
    let mut out = Vec::with_capacity(positions.len() * if with_values { 2 } else { 1 });
    for i in positions {
        let (field, value) = pairs[i];
        if with_values && ctx.session.proto == resp::Protocol::Resp3 {
            out.push(Frame::Array(vec![
                Frame::Bulk(field.to_vec()),
                Frame::Bulk(value.to_vec()),
            ]));
            continue;
        }
        out.push(Frame::Bulk(field.to_vec()));
        if with_values {
            out.push(Frame::Bulk(value.to_vec()));
        }
    }
    reply(Frame::Array(out))
}

pub fn hscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::scan(ctx, args, Kind::Hash)
}
