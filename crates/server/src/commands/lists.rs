//! Lists: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LINDEX LRANGE LSET LTRIM LREM
//! LINSERT LPOS LMOVE RPOPLPUSH and the blocking pops. Pushes, pops and reads of a
//! range, LSET, LTRIM, LREM and LINSERT go through `Db::edit_list` and
//! `Db::read_list`, which touch only a long list's root (its ends) and the nodes they
//! need (see `list_nodes.rs`).

use resp::Frame;

use super::collections::{notify_edit, parse_timeout};
use super::{error, int, of_kind, ok, parse_integer, reply, upper, Action, Ctx, Reply};
use super::{NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE};
use crate::db::Edited;
use crate::entry::Kind;
use crate::keyspace_events::{GENERIC, LIST};
use crate::list_nodes::{End, ListRange, RootEdit};
use crate::packed::{self, MAX_ELEMENTS};

impl End {
    fn parse(arg: &[u8]) -> Option<End> {
        match upper(arg).as_slice() {
            b"LEFT" => Some(End::Left),
            b"RIGHT" => Some(End::Right),
            _ => None,
        }
    }

    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

fn push(ctx: &Ctx, args: &[Vec<u8>], end: End, only_existing: bool) -> Reply {
    let items = args[2..].iter().map(Vec::as_slice);
    let in_root = |root: &RootEdit| {
        let len = root.len() + items.len();
        if len > MAX_ELEMENTS {
            return None;
        }
        Some((root.pushed(end, &args[2..])?, Ok(len)))
    };
    let Some(edited) = ctx.db().edit_list_or_root(&args[1], in_root, |list| {
        if only_existing && !list.exists() {
            return Ok(0);
        }
        let len = list.len() + items.len();
        if len > MAX_ELEMENTS {
            return Err(());
        }
        list.push(end, items.clone());
        Ok(len)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, end.push_event(), &args[1]);
    match edited.result {
        Ok(len) => int(len as i64),
        Err(()) => error("ERR the list would pass 4294967295 elements, hotkv's limit"),
    }
}

pub fn lpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, End::Left, false)
}

pub fn rpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, End::Right, false)
}

pub fn lpushx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, End::Left, true)
}

pub fn rpushx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, End::Right, true)
}

/// `LPOP | RPOP key [count]`: one element (or nil), or an array of up to `count`.
fn pop(ctx: &Ctx, args: &[Vec<u8>], end: End) -> Reply {
    if args.len() > 3 {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        return error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let count = match args.get(2).map(|c| parse_integer(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as usize),
        Some(_) => return error("ERR value is out of range, must be positive"),
    };
    let n = count.unwrap_or(1);
    let in_root = |root: &RootEdit| {
        let (root, popped) = root.popped(end, n)?;
        Some((root, Some(popped)))
    };
    let Some(edited) = ctx.db().edit_list_or_root(&args[1], in_root, |list| {
        list.exists().then(|| list.pop(end, n))
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, end.pop_event(), &args[1]);
    reply(match (edited.result, count) {
        (None, None) => Frame::Null,
        (None, Some(_)) => Frame::NullArray,
        (Some(mut out), None) => Frame::Bulk(out.pop().expect("a stored list is not empty")),
        (Some(out), Some(_)) => Frame::Array(out.into_iter().map(Frame::Bulk).collect()),
    })
}

pub fn lpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, End::Left)
}

pub fn rpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, End::Right)
}

/// Reads the elements of the list at `key` that `pick` chooses from its length, and
/// answers with what `f` makes of them; WRONGTYPE on another type. Counts as a read.
fn read(
    ctx: &Ctx,
    key: &[u8],
    pick: impl FnOnce(usize) -> Option<(usize, usize)>,
    f: impl FnOnce(ListRange) -> Frame,
) -> Reply {
    let Some(range) = ctx.db().read_list(key, pick)? else {
        ctx.hit(key, true);
        return error(WRONG_TYPE);
    };
    ctx.hit(key, range.len > 0);
    reply(f(range))
}

pub fn llen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    read(ctx, &args[1], |_| None, |l| Frame::Integer(l.len as i64))
}

/// A position counted from the end when negative, as Redis's list commands take it.
fn position(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { index + len as i64 } else { index };
    (0..len as i64).contains(&i).then_some(i as usize)
}

pub fn lindex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(index) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    let pick = |len| position(index, len).map(|i| (i, i));
    read(ctx, &args[1], pick, |mut l| {
        l.elements.pop().map_or(Frame::Null, Frame::Bulk)
    })
}

/// The inclusive range `start..=stop` of a list of `len` clamped as Redis clamps it, or
/// `None` if it is empty.
fn clamp(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as usize, stop as usize))
}

fn range_args(args: &[Vec<u8>]) -> Option<(i64, i64)> {
    Some((parse_integer(&args[2])?, parse_integer(&args[3])?))
}

pub fn lrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some((start, stop)) = range_args(args) else {
        return error(NOT_AN_INTEGER);
    };
    read(
        ctx,
        &args[1],
        |len| clamp(start, stop, len),
        |l| Frame::Array(l.elements.into_iter().map(Frame::Bulk).collect()),
    )
}

pub fn lset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(index) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    let value = &args[3];
    let Some(edited) = ctx.db().edit_list(&args[1], |list| {
        if !list.exists() {
            return Err("ERR no such key");
        }
        let at = position(index, list.len()).ok_or("ERR index out of range")?;
        list.set(at, value);
        Ok(())
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, "lset", &args[1]);
    match edited.result {
        Ok(()) => ok(),
        Err(e) => error(e),
    }
}

pub fn ltrim(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some((start, stop)) = range_args(args) else {
        return error(NOT_AN_INTEGER);
    };
    let Some(edited) = ctx.db().edit_list(&args[1], |list| {
        let len = list.len();
        match clamp(start, stop, len) {
            Some((from, to)) => {
                list.remove(End::Left, from);
                list.remove(End::Right, len - 1 - to);
            }
            None => list.remove(End::Left, len),
        }
        // Redis counts LTRIM as a change even when it keeps every element.
        list.touch();
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, "ltrim", &args[1]);
    ok()
}

/// `LREM key count element`: removes the first `count` matches (the last `-count` if
/// negative, all if 0).
pub fn lrem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(count) = parse_integer(&args[2]) else {
        return error(NOT_AN_INTEGER);
    };
    let target = args[3].as_slice();
    let limit = match count {
        0 => usize::MAX,
        n => usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX),
    };
    let Some(edited) = ctx
        .db()
        .edit_list(&args[1], |list| list.remove_equal(target, limit, count < 0))?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, "lrem", &args[1]);
    int(edited.result as i64)
}

/// `LINSERT key BEFORE | AFTER pivot element`: the new length, -1 without the pivot,
/// 0 without the list.
pub fn linsert(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let after = match upper(&args[2]).as_slice() {
        b"BEFORE" => false,
        b"AFTER" => true,
        _ => return error(SYNTAX_ERROR),
    };
    let (pivot, element) = (args[3].as_slice(), args[4].as_slice());
    let Some(edited) = ctx.db().edit_list(&args[1], |list| {
        if !list.exists() {
            return Ok(0);
        }
        if list.len() >= MAX_ELEMENTS {
            return Err(());
        }
        Ok(if list.insert(pivot, element, after) {
            list.len() as i64
        } else {
            -1
        })
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, LIST, "linsert", &args[1]);
    match edited.result {
        Ok(len) => int(len),
        Err(()) => error("ERR the list would pass 4294967295 elements, hotkv's limit"),
    }
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`.
pub fn lpos(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut options = args[3..].chunks(2);
    for option in options.by_ref() {
        let [name, value] = option else {
            return error(SYNTAX_ERROR);
        };
        let Some(n) = parse_integer(value) else {
            return error(NOT_AN_INTEGER);
        };
        match upper(name).as_slice() {
            b"RANK" if n == 0 => return error(
                "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
            ),
            b"RANK" if n == i64::MIN => return error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ),
            b"RANK" => rank = n,
            b"COUNT" if n < 0 => return error("ERR COUNT can't be negative"),
            b"COUNT" => count = Some(n as usize),
            b"MAXLEN" if n < 0 => return error("ERR MAXLEN can't be negative"),
            b"MAXLEN" => maxlen = n as usize,
            _ => return error(SYNTAX_ERROR),
        }
    }
    let found = of_kind!(ctx, &args[1], List);
    let Some(entry) = found else {
        return reply(if count.is_some() {
            Frame::Array(Vec::new())
        } else {
            Frame::Null
        });
    };
    let elements: Vec<&[u8]> = packed::elements(&entry.value).collect();
    let len = elements.len();
    let order: Box<dyn Iterator<Item = usize>> = if rank < 0 {
        Box::new((0..len).rev())
    } else {
        Box::new(0..len)
    };
    let limit = if maxlen == 0 { len } else { maxlen };
    let wanted = match count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    let mut skip = rank.unsigned_abs() - 1;
    let mut matches = Vec::new();
    for i in order.take(limit) {
        if elements[i] != args[2].as_slice() {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        matches.push(Frame::Integer(i as i64));
        if matches.len() == wanted {
            break;
        }
    }
    if count.is_some() {
        reply(Frame::Array(matches))
    } else {
        reply(matches.pop().unwrap_or(Frame::Null))
    }
}

/// Pops from one end of `source` and pushes at one end of `destination`, atomically
/// (the command runs alone). Answers the element moved, or nil if `source` is empty.
fn move_element(ctx: &Ctx, source: &[u8], destination: &[u8], from: End, to: End) -> Reply {
    match ctx.db().kind(source)? {
        None => return reply(Frame::Null),
        Some(Kind::List) => {}
        Some(_) => return error(WRONG_TYPE),
    }
    if source != destination && ctx.db().kind(destination)?.is_some_and(|k| k != Kind::List) {
        return error(WRONG_TYPE);
    }
    let popped = ctx
        .db()
        .edit_list(source, |list| {
            let element = list.pop(from, 1).pop();
            if source == destination {
                if let Some(e) = &element {
                    list.push(to, std::iter::once(e.as_slice()));
                }
            }
            element
        })?
        .expect("the command runs alone: `source` is still a list");
    let element = popped
        .result
        .expect("the command runs alone: `source` is not empty");
    if source != destination {
        let pushed = ctx
            .db()
            .edit_list(destination, |list| {
                list.push(to, std::iter::once(element.as_slice()))
            })?
            .expect("the command runs alone: `destination` is a list or missing");
        notify_edit(ctx, &pushed, LIST, to.push_event(), destination);
    } else {
        let pushed = Edited {
            result: (),
            wrote: true,
            emptied: popped.emptied,
        };
        notify_edit(ctx, &pushed, LIST, to.push_event(), destination);
    }
    ctx.notify(LIST, from.pop_event(), source);
    if popped.emptied {
        ctx.notify(GENERIC, "del", source);
    }
    reply(Frame::Bulk(element))
}

pub fn lmove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (Some(from), Some(to)) = (End::parse(&args[3]), End::parse(&args[4])) else {
        return error(SYNTAX_ERROR);
    };
    move_element(ctx, &args[1], &args[2], from, to)
}

pub fn rpoplpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    move_element(ctx, &args[1], &args[2], End::Right, End::Left)
}

/// `BLPOP | BRPOP key [key ...] timeout`: pops from the first of the lists that has an
/// element, answering the key and the element, or waits for one.
fn blocking_pop(ctx: &Ctx, args: &[Vec<u8>], end: End) -> Reply {
    let timeout = match parse_timeout(&args[args.len() - 1]) {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    let keys = &args[1..args.len() - 1];
    for key in keys {
        let Some(edited) = ctx.db().edit_list(key, |list| list.pop(end, 1).pop())? else {
            match ctx.wrong_source_type() {
                Some(refusal) => return refusal,
                None => continue,
            }
        };
        notify_edit(ctx, &edited, LIST, end.pop_event(), key);
        if let Some(element) = edited.result {
            return reply(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Bulk(element),
            ]));
        }
    }
    Ok(Action::Block {
        keys: keys.to_vec(),
        timeout,
        timeout_reply: Frame::NullArray,
        rerun: None,
    })
}

pub fn blpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, End::Left)
}

pub fn brpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, End::Right)
}

/// BLMOVE and BRPOPLPUSH: LMOVE once `source` has an element. Runs alone.
fn blocking_move(ctx: &Ctx, args: &[Vec<u8>], from: End, to: End, timeout: &[u8]) -> Reply {
    let timeout = match parse_timeout(timeout) {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    match ctx.db().kind(&args[1])? {
        Some(Kind::List) => return move_element(ctx, &args[1], &args[2], from, to),
        Some(_) if !ctx.session.woken => return error(WRONG_TYPE),
        _ => {}
    }
    Ok(Action::Block {
        keys: vec![args[1].clone()],
        timeout,
        timeout_reply: Frame::Null,
        rerun: None,
    })
}

/// LMPOP and BLMPOP from `args` (the key count first): pops up to `count` elements
/// from the first non-empty list, answering the key and the elements, or blocks (the
/// blocking form) for `timeout`.
fn multi_pop(ctx: &Ctx, args: &[Vec<u8>], blocking: Option<Option<std::time::Duration>>) -> Reply {
    let (keys, right, count) = match super::collections::multi_pop_args(args, [b"LEFT", b"RIGHT"]) {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    let end = if right { End::Right } else { End::Left };
    for key in keys {
        let Some(edited) = ctx
            .db()
            .edit_list(key, |list| list.exists().then(|| list.pop(end, count)))?
        else {
            match (blocking, ctx.wrong_source_type()) {
                (Some(_), None) => continue,
                _ => return error(WRONG_TYPE),
            }
        };
        notify_edit(ctx, &edited, LIST, end.pop_event(), key);
        if let Some(out) = edited.result {
            let elements = out.into_iter().map(Frame::Bulk).collect();
            return reply(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Array(elements),
            ]));
        }
    }
    match blocking {
        None => reply(Frame::NullArray),
        Some(timeout) => Ok(Action::Block {
            keys: keys.to_vec(),
            timeout,
            timeout_reply: Frame::NullArray,
            rerun: None,
        }),
    }
}

/// `LMPOP numkeys key ... LEFT | RIGHT [COUNT count]`.
pub fn lmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    multi_pop(ctx, &args[1..], None)
}

/// `BLMPOP timeout numkeys key ... LEFT | RIGHT [COUNT count]`.
pub fn blmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match parse_timeout(&args[1]) {
        Ok(timeout) => multi_pop(ctx, &args[2..], Some(timeout)),
        Err(e) => error(e),
    }
}

pub fn blmove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (Some(from), Some(to)) = (End::parse(&args[3]), End::parse(&args[4])) else {
        return error(SYNTAX_ERROR);
    };
    blocking_move(ctx, args, from, to, &args[5])
}

pub fn brpoplpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    blocking_move(ctx, args, End::Right, End::Left, &args[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_clamp_as_redis_clamps() {
        assert_eq!(clamp(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp(2, 1, 3), None);
        assert_eq!(clamp(5, 10, 3), None);
        assert_eq!(clamp(-1, -1, 3), Some((2, 2)));
        assert_eq!(clamp(0, -5, 3), None);
        assert_eq!(clamp(0, 0, 0), None);
    }
}
