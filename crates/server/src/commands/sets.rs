//! Sets: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER
//! SUNION SDIFF and their STORE forms, SSCAN. Members are kept in `packed::set_order`,
//! so an all-integer set lists in the order Redis's intset gives.

use std::cmp::Ordering;

use resp::Frame;

use super::collections::{self, answer_fields, edit, edit_fields, notify_edit, Edit};
use super::{error, int, of_kind, parse_integer, reply, Ctx, Reply, WRONG_TYPE};
use crate::entry::Kind;
use crate::field_nodes::FieldReader;
use crate::keyspace_events::SET;
use crate::packed::{self, set_order, Builder};

/// The members of a packed set, in order.
fn members(set: &[u8]) -> Vec<&[u8]> {
    packed::elements(set).collect()
}

/// Whether the sorted `members` hold `m`.
fn holds(members: &[&[u8]], m: &[u8]) -> bool {
    members.binary_search_by(|x| set_order(x, m)).is_ok()
}

/// The union of two sorted member lists, and how many of `b` were not in `a`.
fn merged<'a>(a: &[&'a [u8]], b: &[&'a [u8]]) -> (Vec<&'a [u8]>, usize) {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j, mut added) = (0, 0, 0);
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => set_order(x, y),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j]);
                j += 1;
                added += 1;
            }
            Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    (out, added)
}

pub fn sadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(edited) = edit_fields(ctx, &args[1], Kind::Set, |set| {
        args[2..].iter().filter(|m| set.set(m, b"")).count()
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, SET, "sadd", &args[1]);
    int(edited.result as i64)
}

pub fn srem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(edited) = edit_fields(ctx, &args[1], Kind::Set, |set| {
        args[2..].iter().filter(|m| set.remove(m)).count()
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, SET, "srem", &args[1]);
    int(edited.result as i64)
}

fn as_set(members: impl IntoIterator<Item = impl AsRef<[u8]>>) -> Frame {
    Frame::Set(
        members
            .into_iter()
            .map(|m| Frame::Bulk(m.as_ref().to_vec()))
            .collect(),
    )
}

pub fn smembers(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let found = of_kind!(ctx, &args[1], Set);
    let set = found.map(|e| e.value).unwrap_or_default();
    reply(as_set(packed::elements(&set)))
}

/// Whether `member` is in the set (missing: none is).
fn is_member(set: Option<&FieldReader>, member: &[u8]) -> engine::Result<Frame> {
    let found = match set {
        Some(s) => s.get(member)?.is_some(),
        None => false,
    };
    Ok(Frame::Integer(found as i64))
}

pub fn sismember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Set, |set| is_member(set, &args[2]))
}

pub fn smismember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Set, |set| {
        let answers = args[2..].iter().map(|m| is_member(set, m));
        Ok(Frame::Array(answers.collect::<engine::Result<_>>()?))
    })
}

pub fn scard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_fields(ctx, &args[1], Kind::Set, |set| {
        Ok(Frame::Integer(set.map_or(0, FieldReader::len) as i64))
    })
}

/// `SPOP key [count]`: removes random members.
pub fn spop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len() > 3 {
        return error(super::SYNTAX_ERROR);
    }
    let count = match args.get(2).map(|c| parse_integer(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as usize),
        Some(_) => return error("ERR value is out of range, must be positive"),
    };
    // A few members are popped one by one, touching the nodes that hold them; more
    // are picked from the whole set at once.
    let edited = match count {
        Some(n) if n == 0 || n > FEW => edit_whole(ctx, &args[1], count)?,
        _ => edit_fields(ctx, &args[1], Kind::Set, |set| {
            if count.is_some_and(|n| n >= set.len()) {
                // As Redis: the whole set, in its order.
                return set.take_all();
            }
            let mut taken = Vec::new();
            while taken.len() < count.unwrap_or(1) {
                let Some(member) = set.random_field() else {
                    break;
                };
                set.remove(&member);
                taken.push(member);
            }
            taken
        })?,
    };
    let Some(edited) = edited else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, SET, "spop", &args[1]);
    let mut taken = edited.result;
    reply(match count {
        None => taken.pop().map_or(Frame::Null, Frame::Bulk),
        Some(_) => as_set(taken),
    })
}

/// The most members SPOP pops one by one.
const FEW: usize = 64;

/// SPOP of `count` members picked from the whole set.
fn edit_whole(
    ctx: &Ctx,
    key: &[u8],
    count: Option<usize>,
) -> engine::Result<Option<crate::db::Edited<Vec<Vec<u8>>>>> {
    edit(ctx, key, Kind::Set, |set| {
        let Some(set) = set.filter(|_| count != Some(0)) else {
            return (Edit::Keep, Vec::new());
        };
        let all = members(set);
        let picked = collections::random_positions(all.len(), count.unwrap_or(1), true);
        let taken: Vec<Vec<u8>> = picked.iter().map(|&i| all[i].to_vec()).collect();
        let mut b = Builder::with_capacity(set.len());
        let mut next = picked.iter().peekable();
        for (i, m) in all.iter().enumerate() {
            if next.peek() == Some(&&i) {
                next.next();
            } else {
                b.push(m);
            }
        }
        (Edit::Write(b.finish()), taken)
    })
}

/// `SRANDMEMBER key [count]`: a positive count picks distinct members, a negative one
/// may pick a member more than once.
pub fn srandmember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    if args.len() > 3 {
        return error(super::SYNTAX_ERROR);
    }
    let count = match args.get(2).map(|c| parse_integer(c)) {
        None => None,
        Some(Some(i64::MIN)) => {
            return error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        }
        Some(Some(n)) if n < -(collections::MAX_REPEATS as i64) => {
            return error(collections::TOO_MANY_REPEATS)
        }
        Some(Some(n)) => Some(n),
        Some(None) => return error(super::NOT_AN_INTEGER),
    };
    let Some(count) = count else {
        return answer_fields(ctx, &args[1], Kind::Set, collections::random_field);
    };
    let found = of_kind!(ctx, &args[1], Set);
    let set = found.map(|e| e.value).unwrap_or_default();
    let all = members(&set);
    let picked =
        collections::random_positions(all.len(), count.unsigned_abs() as usize, count >= 0);
    let picked = picked.into_iter().map(|i| Frame::Bulk(all[i].to_vec()));
    reply(if count >= 0 {
        Frame::Set(picked.collect())
    } else {
        Frame::Array(picked.collect())
    })
}

/// `SMOVE source destination member`: touches the nodes that hold the member in each
/// set. Runs alone, so its two edits are one change to everyone else.
pub fn smove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (source, destination, member) = (&args[1], &args[2], args[3].as_slice());
    let (src, dst) = (ctx.db().kind(source)?, ctx.db().kind(destination)?);
    // As Redis: a missing source answers 0 before any type is checked.
    let Some(src) = src else {
        return int(0);
    };
    if src != Kind::Set || dst.is_some_and(|k| k != Kind::Set) {
        return error(WRONG_TYPE);
    }
    if source == destination {
        let found = ctx.db().read_fields(source, Kind::Set, |set| match set {
            Some(set) => Ok(set.get(member)?.is_some()),
            None => Ok(false),
        })?;
        return int(i64::from(found == Some(true)));
    }
    let removed = edit_fields(ctx, source, Kind::Set, |set| set.remove(member))?;
    let removed = removed.expect("the command runs alone");
    if !removed.result {
        return int(0);
    }
    notify_edit(ctx, &removed, SET, "srem", source);
    let added = edit_fields(ctx, destination, Kind::Set, |set| set.set(member, b""))?;
    if added.expect("the command runs alone").result {
        ctx.notify(SET, "sadd", destination);
    }
    int(1)
}

#[derive(Clone, Copy, PartialEq)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

/// The sorted members `op` makes of the sets at `keys` (missing keys are empty sets), or
/// the WRONGTYPE reply if one holds another type.
fn combine(
    ctx: &Ctx,
    keys: &[Vec<u8>],
    op: Algebra,
) -> engine::Result<Result<Vec<Vec<u8>>, Reply>> {
    let mut sets = Vec::with_capacity(keys.len());
    for key in keys {
        match ctx.read(key)? {
            Some(e) if e.kind != Kind::Set => return Ok(Err(error(WRONG_TYPE))),
            found => sets.push(found.map(|e| e.value).unwrap_or_default()),
        }
    }
    let lists: Vec<Vec<&[u8]>> = sets.iter().map(|s| members(s)).collect();
    let mut result: Vec<&[u8]> = lists[0].clone();
    for other in &lists[1..] {
        result = match op {
            Algebra::Inter => result.into_iter().filter(|m| holds(other, m)).collect(),
            Algebra::Union => merged(&result, other).0,
            Algebra::Diff => result.into_iter().filter(|m| !holds(other, m)).collect(),
        };
    }
    Ok(Ok(result.into_iter().map(<[u8]>::to_vec).collect()))
}

fn algebra(ctx: &Ctx, args: &[Vec<u8>], op: Algebra) -> Reply {
    match combine(ctx, &args[1..], op)? {
        Ok(members) => reply(as_set(members)),
        Err(r) => r,
    }
}

/// The STORE forms: the result replaces `destination` whatever it held (no expiry);
/// an empty result deletes it. Runs alone.
fn algebra_store(ctx: &Ctx, args: &[Vec<u8>], op: Algebra, event: &'static str) -> Reply {
    let destination = &args[1];
    let members = match combine(ctx, &args[2..], op)? {
        Ok(members) => members,
        Err(r) => return r,
    };
    let packed = packed::pack(members.iter().map(Vec::as_slice));
    collections::store_result(ctx, destination, Kind::Set, packed, SET, event)?;
    int(members.len() as i64)
}

pub fn sinter(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Inter)
}

pub fn sunion(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Union)
}

pub fn sdiff(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Diff)
}

pub fn sinterstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Inter, "sinterstore")
}

pub fn sunionstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Union, "sunionstore")
}

pub fn sdiffstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Diff, "sdiffstore")
}

/// `SINTERCARD numkeys key ... [LIMIT limit]`: the intersection's size, counted up to
/// `limit` (0: no limit).
pub fn sintercard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // As Redis: a count that is not a number is not greater than 0 either.
    let n = match parse_integer(&args[1]) {
        Some(n) if n > (args.len() - 2) as i64 => {
            return error("ERR Number of keys can't be greater than number of args")
        }
        Some(n) if n >= 1 => n as usize,
        _ => return error("ERR numkeys should be greater than 0"),
    };
    let mut limit = 0;
    match &args[2 + n..] {
        [] => {}
        [word, l] if word.eq_ignore_ascii_case(b"LIMIT") => match parse_integer(l) {
            Some(l) if l >= 0 => limit = l as usize,
            _ => return error("ERR LIMIT can't be negative"),
        },
        _ => return error(super::SYNTAX_ERROR),
    }
    let size = match combine(ctx, &args[2..2 + n], Algebra::Inter)? {
        Ok(members) => members.len(),
        Err(r) => return r,
    };
    int(if limit > 0 { size.min(limit) } else { size } as i64)
}

pub fn sscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::scan(ctx, args, Kind::Set)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `members` sorted and without repeats.
    fn normalized(mut members: Vec<&[u8]>) -> Vec<&[u8]> {
        members.sort_by(|a, b| set_order(a, b));
        members.dedup();
        members
    }

    #[test]
    fn merging_keeps_order_and_counts_what_is_new() {
        let a = normalized(vec![b"b", b"10", b"2"]);
        assert_eq!(a, vec![&b"2"[..], b"10", b"b"]);
        let (all, added) = merged(&a, &normalized(vec![b"a", b"2", b"-1"]));
        assert_eq!(all, vec![&b"-1"[..], b"2", b"10", b"a", b"b"]);
        assert_eq!(added, 2);
        assert!(holds(&all, b"10") && !holds(&all, b"3"));
    }
}
