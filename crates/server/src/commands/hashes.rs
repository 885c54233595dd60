//! Hashes: HSET HSETNX HMSET HGET HMGET HDEL HLEN HSTRLEN HEXISTS HGETALL HKEYS HVALS
//! HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN. Fields keep the order they were added in, as
//! in Redis's listpack, so small hashes list as Redis lists them.

use std::collections::HashMap;

use resp::Frame;

use super::collections::{self, edit, notify_edit, Edit};
use super::incr::parse_float;
use super::{error, int, of_kind, ok, parse_integer, reply, Ctx, Reply};
use super::{NOT_AN_INTEGER, WRONG_TYPE};
use crate::entry::Kind;
use crate::keyspace_events::HASH;
use crate::packed::{self, Builder};

/// `hash` with `updates` applied: each field set to its value (the last one given
/// wins), new fields after the old ones in the order given. Returns the new packed
/// hash and how many fields it added.
fn with_fields(hash: Option<&[u8]>, updates: &[(&[u8], &[u8])]) -> (Vec<u8>, usize) {
    let mut latest: HashMap<&[u8], (usize, &[u8])> = HashMap::with_capacity(updates.len());
    for (i, (field, value)) in updates.iter().enumerate() {
        latest
            .entry(field)
            .and_modify(|v| v.1 = value)
            .or_insert((i, value));
    }
    let old = hash.unwrap_or_default();
    let extra: usize = updates.iter().map(|(f, v)| f.len() + v.len() + 10).sum();
    let mut b = Builder::with_capacity(old.len() + extra);
    for (field, value) in packed::pairs(old) {
        match latest.remove(field) {
            Some((_, new)) => b.push_pair(field, new),
            None => b.push_pair(field, value),
        }
    }
    let mut added: Vec<(usize, &[u8], &[u8])> =
        latest.into_iter().map(|(f, (i, v))| (i, f, v)).collect();
    added.sort_unstable_by_key(|a| a.0);
    for (_, field, value) in &added {
        b.push_pair(field, value);
    }
    (b.finish(), added.len())
}

/// The value of `field` in a packed hash.
fn field_of<'a>(hash: &'a [u8], field: &[u8]) -> Option<&'a [u8]> {
    packed::pairs(hash)
        .find(|(f, _)| *f == field)
        .map(|(_, v)| v)
}

fn set_pairs(ctx: &Ctx, args: &[Vec<u8>], name: &str) -> Result<usize, Reply> {
    if !args.len().is_multiple_of(2) {
        return Err(error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    let updates: Vec<(&[u8], &[u8])> = args[2..]
        .chunks(2)
        .map(|p| (p[0].as_slice(), p[1].as_slice()))
        .collect();
    let edited = edit(ctx, &args[1], Kind::Hash, |hash| {
        let (new, added) = with_fields(hash, &updates);
        (Edit::Write(new), added)
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
    let Some(edited) = edit(ctx, &args[1], Kind::Hash, |hash| {
        if hash.is_some_and(|h| field_of(h, field).is_some()) {
            return (Edit::Keep, false);
        }
        (Edit::Write(with_fields(hash, &[(field, value)]).0), true)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, HASH, "hset", &args[1]);
    int(edited.result as i64)
}

pub fn hget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::answer(ctx, &args[1], Kind::Hash, |hash| {
        let value = hash.and_then(|h| field_of(h, &args[2]));
        value.map_or(Frame::Null, |v| Frame::Bulk(v.to_vec()))
    })
}

pub fn hmget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::answer(ctx, &args[1], Kind::Hash, |hash| {
        let hash = hash.unwrap_or_default();
        let values = args[2..]
            .iter()
            .map(|f| field_of(hash, f).map_or(Frame::Null, |v| Frame::Bulk(v.to_vec())))
            .collect();
        Frame::Array(values)
    })
}

pub fn hdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let fields = &args[2..];
    let Some(edited) = edit(ctx, &args[1], Kind::Hash, |hash| {
        let Some(hash) = hash else {
            return (Edit::Keep, 0);
        };
        let mut b = Builder::with_capacity(hash.len());
        for (field, value) in packed::pairs(hash) {
            if !fields.iter().any(|f| f == field) {
                b.push_pair(field, value);
            }
        }
        let removed = packed::count(hash) - b.count();
        if removed == 0 {
            return (Edit::Keep, 0);
        }
        (Edit::Write(b.finish()), removed)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, HASH, "hdel", &args[1]);
    int(edited.result as i64)
}

pub fn hlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::answer(ctx, &args[1], Kind::Hash, |hash| {
        Frame::Integer(hash.map_or(0, packed::count) as i64)
    })
}

pub fn hstrlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::answer(ctx, &args[1], Kind::Hash, |hash| {
        let len = hash
            .and_then(|h| field_of(h, &args[2]))
            .map_or(0, <[u8]>::len);
        Frame::Integer(len as i64)
    })
}

pub fn hexists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::answer(ctx, &args[1], Kind::Hash, |hash| {
        Frame::Integer(hash.is_some_and(|h| field_of(h, &args[2]).is_some()) as i64)
    })
}

/// The fields (`keys`), values, or both of a hash, in order.
fn listing(ctx: &Ctx, key: &[u8], keys: bool, values: bool) -> Reply {
    let found = of_kind!(ctx.read(key)?, Hash);
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
    let edited = edit(ctx, &args[1], Kind::Hash, |hash| {
        let current = hash.and_then(|h| field_of(h, field));
        match next(current) {
            Ok(value) => (
                Edit::Write(with_fields(hash, &[(field, &value)]).0),
                Ok(value),
            ),
            Err(e) => (Edit::Keep, Err(e)),
        }
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
    let found = of_kind!(ctx.read(&args[1])?, Hash);
    let Some(entry) = found else {
        return reply(if count.is_some() {
            Frame::Array(Vec::new())
        } else {
            Frame::Null
        });
    };
    let pairs: Vec<(&[u8], &[u8])> = packed::pairs(&entry.value).collect();
    let Some(count) = count else {
        let i = collections::random_positions(pairs.len(), 1, false)[0];
        return reply(Frame::Bulk(pairs[i].0.to_vec()));
    };
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
    collections::scan(ctx, args, Kind::Hash, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_place_and_the_last_value_given_wins() {
        let (h, added) = with_fields(None, &[(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]);
        assert_eq!(added, 2);
        let (h, added) = with_fields(Some(&h), &[(b"c", b"4"), (b"a", b"5")]);
        assert_eq!(added, 1);
        let got: Vec<_> = packed::pairs(&h).collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], &b"5"[..]),
                (&b"b"[..], &b"2"[..]),
                (&b"c"[..], &b"4"[..])
            ]
        );
    }
}
