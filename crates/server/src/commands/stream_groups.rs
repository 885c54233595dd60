//! Stream consumer groups: XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER
//! HELP), XREADGROUP (and its BLOCK form), XACK, XPENDING, XCLAIM, XAUTOCLAIM, and
//! XINFO (STREAM GROUPS CONSUMERS HELP), which reports on streams too.

use resp::Frame;

use super::streams::{
    edit, entry_frame, id_arg, id_frame, or_reply, per_stream, range_end, read, read_args, Found,
    ReadArgs, Write,
};
use super::{error, help, int, parse_integer, reply, upper, Ctx, Reply};
use super::{NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE};
use crate::entry::now_ms;
use crate::keyspace_events::STREAM;
use crate::stream::{Group, Id, IdSyntax, Pending, Stream};

fn subcommand_error(args: &[Vec<u8>], command: &str) -> Reply {
    error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {command} HELP.",
        String::from_utf8_lossy(&args[1])
    ))
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// `XGROUP CREATE key group id | $ [MKSTREAM] [ENTRIESREAD n]`, `SETID key group id |
/// $ [ENTRIESREAD n]`, `DESTROY key group`, `CREATECONSUMER key group consumer`,
/// `DELCONSUMER key group consumer`, `HELP`: checked in Redis's order and words.
pub fn xgroup(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sub = upper(&args[1]);
    if sub == b"HELP" {
        return help(&[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Print this help.",
        ]);
    }
    let (create, setid) = (sub == b"CREATE", sub == b"SETID");
    let (mut mkstream, mut entries_read) = (false, None);
    let mut i = 5;
    while i < args.len() {
        match upper(&args[i]).as_slice() {
            b"MKSTREAM" if create => {
                mkstream = true;
                i += 1;
            }
            b"ENTRIESREAD" if (create || setid) && i + 1 < args.len() => {
                let Some(n) = parse_integer(&args[i + 1]) else {
                    return error(NOT_AN_INTEGER);
                };
                if n < -1 {
                    return error("ERR value for ENTRIESREAD must be positive or -1");
                }
                entries_read = u64::try_from(n).ok();
                i += 2;
            }
            _ => return subcommand_error(args, "XGROUP"),
        }
    }
    let (key, name) = (&args[2], &args[3]);
    // Whether the stream exists, and has the group.
    let found = or_reply!(read(ctx, key, |found| match found {
        Found::Other => None,
        Found::Missing => Some(None),
        Found::Stream(s) => Some(Some(s.group(name).is_some())),
    }));
    let Some(found) = found else {
        return error(WRONG_TYPE);
    };
    if !mkstream {
        let Some(has_group) = found else {
            return error(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            );
        };
        if !has_group
            && matches!(
                sub.as_slice(),
                b"SETID" | b"CREATECONSUMER" | b"DELCONSUMER"
            )
        {
            return error(&format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                text(name),
                text(key)
            ));
        }
    }
    match (sub.as_slice(), args.len()) {
        (b"CREATE", 5..=8) => {
            let id = match args[4].as_slice() {
                b"$" => None,
                arg => match id_arg(arg, 0, IdSyntax::Strict) {
                    Ok(p) => Some(p.id),
                    Err(e) => return error(e),
                },
            };
            let created = or_reply!(edit(ctx, key, true, |s| {
                let s = s.expect("created if missing");
                let last = id.unwrap_or(s.last_id);
                // A new stream is stored even if the group were refused.
                let added = s.add_group(Group::new(name, last, entries_read));
                (Write::Store, added)
            }));
            if !created {
                return error("BUSYGROUP Consumer Group name already exists");
            }
            ctx.notify(STREAM, "xgroup-create", key);
            Ok(super::Action::Ok)
        }
        (b"SETID", 5 | 7) => {
            let id = match args[4].as_slice() {
                b"$" => None,
                arg => match id_arg(arg, 0, IdSyntax::Range) {
                    Ok(p) => Some(p.id),
                    Err(e) => return error(e),
                },
            };
            or_reply!(edit(ctx, key, false, |s| {
                let Some(s) = s else { return (Write::Keep, ()) };
                let last = id.unwrap_or(s.last_id);
                if let Some(g) = s.group_mut(name) {
                    g.last_id = last;
                    g.entries_read = entries_read;
                }
                (Write::Store, ())
            }));
            ctx.notify(STREAM, "xgroup-setid", key);
            Ok(super::Action::Ok)
        }
        (b"DESTROY", 4) => {
            let destroyed = or_reply!(edit(ctx, key, false, |s| {
                let Some(s) = s else {
                    return (Write::Keep, false);
                };
                let before = s.groups.len();
                s.groups.retain(|g| g.name != *name);
                let gone = s.groups.len() < before;
                (if gone { Write::Store } else { Write::Keep }, gone)
            }));
            if destroyed {
                ctx.notify(STREAM, "xgroup-destroy", key);
            }
            int(destroyed as i64)
        }
        (b"CREATECONSUMER", 5) => {
            let now = now_ms();
            let created = or_reply!(edit(ctx, key, false, |s| {
                let g = s.and_then(|s| s.group_mut(name));
                match g {
                    Some(g) if g.consumer(&args[4]).is_none() => {
                        g.touch_consumer(&args[4], now);
                        (Write::Store, true)
                    }
                    _ => (Write::Keep, false),
                }
            }));
            if created {
                ctx.notify(STREAM, "xgroup-createconsumer", key);
            }
            int(created as i64)
        }
        (b"DELCONSUMER", 5) => {
            let removed = or_reply!(edit(ctx, key, false, |s| {
                match s
                    .and_then(|s| s.group_mut(name))
                    .and_then(|g| g.remove_consumer(&args[4]))
                {
                    Some(pending) => (Write::Store, Some(pending)),
                    None => (Write::Keep, None),
                }
            }));
            if removed.is_some() {
                ctx.notify(STREAM, "xgroup-delconsumer", key);
            }
            int(removed.unwrap_or(0) as i64)
        }
        _ => subcommand_error(args, "XGROUP"),
    }
}

/// `XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK]
/// STREAMS key [key ...] id [id ...]`: `>` delivers entries the group has not seen
/// (and makes them pending for the consumer, unless NOACK); another ID rereads the
/// consumer's own pending entries after it.
pub fn xreadgroup(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let ReadArgs {
        count,
        timeout,
        noack,
        group,
        keys,
        ids: id_args,
    } = or_reply!(read_args(ctx, args, true));
    let (group, consumer) = group.expect("read_args requires GROUP");
    // Each key checked, then its ID, in order; `None`: new entries (`>`).
    let mut after = Vec::with_capacity(keys.len());
    for (key, id) in keys.iter().zip(id_args) {
        // Whether the key is a stream, and has the group.
        let found = or_reply!(read(ctx, key, |found| match found {
            Found::Other => None,
            Found::Missing => Some(None),
            Found::Stream(s) => Some(Some(s.group(group).is_some())),
        }));
        let has_group = match found {
            // Woken (see `Session::woken`): what it waited on went away, as Redis
            // tells a blocked consumer.
            None | Some(None) if ctx.session.woken => {
                return error("UNBLOCKED the stream key no longer exists")
            }
            None => return error(WRONG_TYPE),
            Some(has_group) => has_group.unwrap_or(false),
        };
        if !has_group {
            if ctx.session.woken {
                return error(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                );
            }
            return error(&format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                text(key),
                text(group)
            ));
        }
        after.push(match id.as_slice() {
            b"$" => return error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."),
            b">" => None,
            arg => match id_arg(arg, 0, IdSyntax::Strict) {
                Ok(p) => Some(p.id),
                Err(e) => return error(e),
            },
        });
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let now = now_ms();
    let mut served = Vec::new();
    for (key, &history) in keys.iter().zip(&after) {
        let outcome = or_reply!(edit(ctx, key, false, |s| {
            let Some(s) = s.filter(|s| s.group(group).is_some()) else {
                return (Write::Keep, None);
            };
            match history {
                Some(id) => (
                    Write::Store,
                    Some(serve_history(s, group, consumer, id, limit, now)),
                ),
                None => match serve_new(s, group, consumer, limit, noack, now) {
                    Some(served) => (Write::Store, Some(served)),
                    None => (Write::Keep, None),
                },
            }
        }));
        if let Some((entries, created)) = outcome {
            if created {
                ctx.notify(STREAM, "xgroup-createconsumer", key);
            }
            served.push((key.clone(), Frame::Array(entries)));
        }
    }
    if !served.is_empty() {
        return reply(per_stream(ctx, served));
    }
    let Some(timeout) = timeout else {
        return reply(Frame::NullArray);
    };
    Ok(super::Action::Block {
        keys: keys.to_vec(),
        timeout,
        timeout_reply: Frame::NullArray,
        rerun: None,
    })
}

/// The consumer's pending entries after `id` (deleted ones as an ID and a null),
/// each delivered once more; and whether the consumer was created.
fn serve_history(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    id: Id,
    limit: usize,
    now: u64,
) -> (Vec<Frame>, bool) {
    let start = id.next().unwrap_or(Id::ZERO);
    let entries: Vec<(Pending, Option<Frame>)> = {
        let g = s.group(group).expect("checked");
        let own = g.consumer(consumer).map(|c| c.number());
        let pending = match own {
            Some(own) => g
                .pending()
                .range(start, Id::MAX, limit, |p| p.consumer == own),
            None => Vec::new(),
        };
        pending
            .into_iter()
            .map(|p| (p, s.entry(p.id).as_ref().map(entry_frame)))
            .collect()
    };
    let g = s.group_mut(group).expect("checked");
    let created = g.touch_consumer(consumer, now);
    let mut frames = Vec::with_capacity(entries.len());
    for (p, frame) in entries {
        match frame {
            Some(frame) => {
                g.redeliver(p, consumer, now, None);
                frames.push(frame);
            }
            None => frames.push(Frame::Array(vec![id_frame(p.id), Frame::NullArray])),
        }
    }
    (frames, created)
}

/// Entries past the group's last delivered one, delivered to the consumer; `None` if
/// there are none.
fn serve_new(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    limit: usize,
    noack: bool,
    now: u64,
) -> Option<(Vec<Frame>, bool)> {
    let last = s.group(group).expect("checked").last_id;
    let picked: Vec<(Id, Frame)> = match last.next() {
        Some(from) => s.entries.range(from, Id::MAX, limit, false),
        None => Vec::new(),
    }
    .iter()
    .map(|e| (e.id, entry_frame(e)))
    .collect();
    if picked.is_empty() {
        return None;
    }
    let created = s
        .group_mut(group)
        .expect("checked")
        .touch_consumer(consumer, now);
    let mut frames = Vec::with_capacity(picked.len());
    for (id, frame) in picked {
        s.advance_group(group, id);
        if !noack {
            s.group_mut(group)
                .expect("checked")
                .deliver(id, consumer, now);
        }
        frames.push(frame);
    }
    Some((frames, created))
}

fn no_group(key: &[u8], group: &[u8]) -> Reply {
    error(&format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        text(key),
        text(group)
    ))
}

/// `Err` with the reply to give (WRONGTYPE, NOGROUP) unless `key` is a stream with
/// the group `group`.
fn require_group(ctx: &Ctx, key: &[u8], group: &[u8]) -> Result<(), Reply> {
    let found = read(ctx, key, |found| match found {
        Found::Other => None,
        Found::Stream(s) => Some(s.group(group).is_some()),
        Found::Missing => Some(false),
    })?;
    match found {
        None => Err(error(WRONG_TYPE)),
        Some(true) => Ok(()),
        Some(false) => Err(no_group(key, group)),
    }
}

/// `XACK key group id [id ...]`.
pub fn xack(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, group) = (&args[1], &args[2]);
    // A missing key or group acknowledges nothing, before the IDs are read.
    let ids: Result<Vec<Id>, &str> = args[3..]
        .iter()
        .map(|a| id_arg(a, 0, IdSyntax::Strict).map(|p| p.id))
        .collect();
    let acked = or_reply!(edit(ctx, key, false, |s| {
        let Some(g) = s.and_then(|s| s.group_mut(group)) else {
            return (Write::Keep, Ok(0));
        };
        let ids = match &ids {
            Ok(ids) => ids,
            Err(e) => return (Write::Keep, Err(*e)),
        };
        let n = ids.iter().filter(|&&id| g.ack(id)).count();
        (if n > 0 { Write::Store } else { Write::Keep }, Ok(n))
    }));
    match acked {
        Ok(n) => int(n as i64),
        Err(e) => error(e),
    }
}

/// `XPENDING key group [[IDLE min-idle-time] start end count [consumer]]`.
pub fn xpending(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let n = args.len();
    if n != 3 && !(6..=9).contains(&n) {
        return error(SYNTAX_ERROR);
    }
    let mut range = None;
    if n >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if upper(&args[3]) == b"IDLE" {
            let Some(idle) = parse_integer(&args[4]) else {
                return error(NOT_AN_INTEGER);
            };
            if n < 8 {
                return error(SYNTAX_ERROR);
            }
            min_idle = idle;
            at += 2;
        }
        let Some(count) = parse_integer(&args[at + 2]) else {
            return error(NOT_AN_INTEGER);
        };
        let start = match range_end(&args[at], 0, true) {
            Ok(id) => id,
            Err(e) => return error(e),
        };
        let end = match range_end(&args[at + 1], u64::MAX, false) {
            Ok(id) => id,
            Err(e) => return error(e),
        };
        range = Some((
            start,
            end,
            count.max(0) as usize,
            min_idle,
            args.get(at + 3),
        ));
    }
    or_reply!(read(ctx, &args[1], |found| {
        let s = match found {
            Found::Other => return error(WRONG_TYPE),
            Found::Missing => return no_group(&args[1], &args[2]),
            Found::Stream(s) => s,
        };
        let Some(g) = s.group(&args[2]) else {
            return no_group(&args[1], &args[2]);
        };
        let Some((start, end, count, min_idle, consumer)) = range else {
            if g.pending_count() == 0 {
                return reply(Frame::Array(vec![
                    Frame::Integer(0),
                    Frame::Null,
                    Frame::Null,
                    Frame::NullArray,
                ]));
            }
            let per_consumer = g
                .consumers()
                .iter()
                .filter(|c| c.pending() > 0)
                .map(|c| {
                    let n = c.pending().to_string();
                    Frame::Array(vec![Frame::bulk(&c.name), Frame::bulk(n)])
                })
                .collect();
            let ends = [g.pending().first(), g.pending().last()];
            let [first, last] = ends.map(|p| p.map_or(Frame::Null, |p| id_frame(p.id)));
            return reply(Frame::Array(vec![
                Frame::Integer(g.pending_count() as i64),
                first,
                last,
                Frame::Array(per_consumer),
            ]));
        };
        let owner = match consumer.map(|c| g.consumer(c)) {
            Some(None) => return reply(Frame::Array(Vec::new())),
            Some(Some(c)) => Some(c.number()),
            None => None,
        };
        let now = now_ms() as i64;
        let kept = |p: &Pending| {
            owner.is_none_or(|n| p.consumer == n)
                && (min_idle == 0 || now - p.delivered_ms as i64 >= min_idle)
        };
        let rows = g
            .pending()
            .range(start, end, count, kept)
            .iter()
            .map(|p| {
                Frame::Array(vec![
                    id_frame(p.id),
                    Frame::bulk(g.consumer_name(p.consumer)),
                    Frame::Integer((now - p.delivered_ms as i64).max(0)),
                    Frame::Integer(p.deliveries as i64),
                ])
            })
            .collect();
        reply(Frame::Array(rows))
    }))
}

/// XCLAIM's options.
struct ClaimOptions {
    force: bool,
    justid: bool,
    delivered_ms: Option<i64>,
    retry_count: Option<u64>,
    last_id: Id,
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]`.
pub fn xclaim(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, group, consumer) = (&args[1], &args[2], &args[3]);
    or_reply!(require_group(ctx, key, group));
    let Some(min_idle) = parse_integer(&args[4]) else {
        return error("ERR Invalid min-idle-time argument for XCLAIM");
    };
    let min_idle = min_idle.max(0);
    // IDs until one is not an ID; the rest are options.
    let ids: Vec<Id> = args[5..]
        .iter()
        .map_while(|a| crate::stream::parse_id(a, 0, IdSyntax::Strict).map(|p| p.id))
        .collect();
    let now = now_ms() as i64;
    let mut o = ClaimOptions {
        force: false,
        justid: false,
        delivered_ms: None,
        retry_count: None,
        last_id: Id::ZERO,
    };
    let mut j = 5 + ids.len();
    while j < args.len() {
        let more = args.len() - 1 - j;
        let number = |arg: &[u8], what: &str| {
            parse_integer(arg)
                .ok_or_else(|| format!("ERR Invalid {what} option argument for XCLAIM"))
        };
        match upper(&args[j]).as_slice() {
            b"FORCE" => o.force = true,
            b"JUSTID" => o.justid = true,
            b"IDLE" if more > 0 => {
                j += 1;
                match number(&args[j], "IDLE") {
                    Ok(idle) => o.delivered_ms = Some(now - idle),
                    Err(e) => return error(&e),
                }
            }
            b"TIME" if more > 0 => {
                j += 1;
                match number(&args[j], "TIME") {
                    Ok(t) => o.delivered_ms = Some(t),
                    Err(e) => return error(&e),
                }
            }
            b"RETRYCOUNT" if more > 0 => {
                j += 1;
                match number(&args[j], "RETRYCOUNT") {
                    Ok(n) => o.retry_count = Some(n as u64),
                    Err(e) => return error(&e),
                }
            }
            b"LASTID" if more > 0 => {
                j += 1;
                match id_arg(&args[j], 0, IdSyntax::Strict) {
                    Ok(p) => o.last_id = p.id,
                    Err(e) => return error(e),
                }
            }
            _ => {
                return error(&format!(
                    "ERR Unrecognized XCLAIM option '{}'",
                    text(&args[j])
                ));
            }
        }
        j += 1;
    }
    let delivered = match o.delivered_ms {
        Some(t) if (0..=now).contains(&t) => t as u64,
        _ => now as u64,
    };
    let (frames, created) = or_reply!(edit(ctx, key, false, |s| {
        let Some(s) = s else {
            return (Write::Keep, (Vec::new(), false));
        };
        let frames_of: Vec<Option<Frame>> = ids
            .iter()
            .map(|&id| s.entry(id).as_ref().map(entry_frame))
            .collect();
        let g = s.group_mut(group).expect("checked above");
        if o.last_id > g.last_id {
            g.last_id = o.last_id;
        }
        let (mut frames, mut created, mut touched) = (Vec::new(), false, false);
        for (&id, frame) in ids.iter().zip(frames_of) {
            let pending = g.pending().get(id);
            let Some(frame) = frame else {
                // Deleted from the stream: no longer pending either.
                if pending.is_some() {
                    g.ack(id);
                }
                continue;
            };
            let p = match pending {
                Some(p) if min_idle > 0 && now - (p.delivered_ms as i64) < min_idle => continue,
                Some(p) => p,
                None if !o.force => continue,
                // As Redis creates it: delivered now, once, then claimed.
                None => Pending {
                    id,
                    consumer: 0,
                    delivered_ms: now as u64,
                    deliveries: 1,
                },
            };
            if !touched {
                created = g.touch_consumer(consumer, now as u64);
                touched = true;
            }
            let deliveries = o.retry_count.or(o.justid.then_some(p.deliveries));
            g.redeliver(p, consumer, delivered, deliveries);
            frames.push(if o.justid { id_frame(id) } else { frame });
        }
        (Write::Store, (frames, created))
    }));
    if created {
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    reply(Frame::Array(frames))
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`: claims
/// pending entries idle long enough from `start` on; answers the ID to go on from,
/// the claimed entries, and the IDs that no longer exist (dropped from the pending).
pub fn xautoclaim(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, group, consumer) = (&args[1], &args[2], &args[3]);
    let Some(min_idle) = parse_integer(&args[4]) else {
        return error("ERR Invalid min-idle-time argument for XAUTOCLAIM");
    };
    let min_idle = min_idle.max(0);
    let start = match range_end(&args[5], 0, true) {
        Ok(id) => id,
        Err(e) => return error(e),
    };
    let (mut count, mut justid) = (100i64, false);
    let mut j = 6;
    while j < args.len() {
        match upper(&args[j]).as_slice() {
            b"COUNT" if j + 1 < args.len() => {
                // Redis's bound: LONG_MAX / 16, so count * attempts cannot overflow.
                match parse_integer(&args[j + 1]) {
                    Some(n) if (1..=i64::MAX / 16).contains(&n) => count = n,
                    _ => return error("ERR COUNT must be > 0"),
                }
                j += 1;
            }
            b"JUSTID" => justid = true,
            _ => return error(SYNTAX_ERROR),
        }
        j += 1;
    }
    or_reply!(require_group(ctx, key, group));
    let now = now_ms();
    let outcome = or_reply!(edit(ctx, key, false, |s| {
        let Some(s) = s else {
            return (Write::Keep, None);
        };
        // Looked up for as many pending entries as the loop below may attempt.
        let exists: Vec<(Pending, Option<Frame>)> = {
            let g = s.group(group).expect("checked above");
            let attempts = usize::try_from(count.saturating_mul(10)).unwrap_or(usize::MAX);
            let pending = g.pending().range(start, Id::MAX, attempts, |_| true);
            pending
                .into_iter()
                .map(|p| (p, s.entry(p.id).as_ref().map(entry_frame)))
                .collect()
        };
        let g = s.group_mut(group).expect("checked above");
        let (mut left, mut attempts) = (count, count.saturating_mul(10));
        let (mut claimed, mut deleted, mut created, mut touched) =
            (Vec::new(), Vec::new(), false, false);
        // Where the next call goes on from: past the last pending entry looked at.
        let mut from = Some(start);
        let mut entries = exists.into_iter();
        while attempts > 0 && left > 0 {
            attempts -= 1;
            let Some((p, frame)) = entries.next() else {
                break;
            };
            from = p.id.next();
            let Some(frame) = frame else {
                g.ack(p.id);
                deleted.push(id_frame(p.id));
                left -= 1;
                continue;
            };
            if min_idle > 0 && (now as i64 - p.delivered_ms as i64) < min_idle {
                continue;
            }
            if !touched {
                created = g.touch_consumer(consumer, now);
                touched = true;
            }
            let deliveries = justid.then_some(p.deliveries);
            g.redeliver(p, consumer, now, deliveries);
            claimed.push(if justid { id_frame(p.id) } else { frame });
            left -= 1;
        }
        let after = from.and_then(|from| g.pending().range(from, Id::MAX, 1, |_| true).pop());
        let next = after.map_or(Id::ZERO, |p| p.id);
        (Write::Store, Some((next, claimed, deleted, created)))
    }));
    let Some((next, claimed, deleted, created)) = outcome else {
        return no_group(key, group);
    };
    if created {
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    reply(Frame::Array(vec![
        id_frame(next),
        Frame::Array(claimed),
        Frame::Array(deleted),
    ]))
}

fn field(name: &str, value: Frame) -> (Frame, Frame) {
    (Frame::bulk(name), value)
}

fn entries_read_frame(g: &Group) -> Frame {
    g.entries_read
        .map_or(Frame::Null, |n| Frame::Integer(n as i64))
}

fn lag_frame(s: &Stream, g: &Group) -> Frame {
    s.lag(g).map_or(Frame::Null, Frame::Integer)
}

/// Radix-tree figures of XINFO STREAM: hotkv's nodes (see `stream.rs`) as the keys,
/// and one more tree node than keys, which Redis's tree has for a handful of keys.
fn tree_sizes(s: &Stream) -> (i64, i64) {
    let nodes = s.entries.redis_nodes() as i64;
    (nodes, nodes + 1)
}

/// `XINFO STREAM key [FULL [COUNT count]]`, `GROUPS key`, `CONSUMERS key group`, `HELP`.
pub fn xinfo(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sub = upper(&args[1]);
    if sub == b"HELP" {
        return help(&[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Print this help.",
        ]);
    }
    let key = &args[2];
    or_reply!(read(ctx, key, |found| {
        let s = match found {
            Found::Other => return error(WRONG_TYPE),
            Found::Missing => return error("ERR no such key"),
            Found::Stream(s) => s,
        };
        match (sub.as_slice(), args.len()) {
            (b"CONSUMERS", 4) => {
                let Some(g) = s.group(&args[3]) else {
                    return error(&format!(
                        "NOGROUP No such consumer group '{}' for key name '{}'",
                        text(&args[3]),
                        text(key)
                    ));
                };
                let now = now_ms() as i64;
                let consumers = g.consumers().iter().map(|c| {
                    Frame::Map(vec![
                        field("name", Frame::bulk(&c.name)),
                        field("pending", Frame::Integer(c.pending() as i64)),
                        field("idle", Frame::Integer((now - c.seen_ms as i64).max(0))),
                    ])
                });
                reply(Frame::Array(consumers.collect()))
            }
            (b"GROUPS", 3) => {
                let groups = s.groups.iter().map(|g| {
                    Frame::Map(vec![
                        field("name", Frame::bulk(&g.name)),
                        field("consumers", Frame::Integer(g.consumers().len() as i64)),
                        field("pending", Frame::Integer(g.pending_count() as i64)),
                        field("last-delivered-id", id_frame(g.last_id)),
                        field("entries-read", entries_read_frame(g)),
                        field("lag", lag_frame(s, g)),
                    ])
                });
                reply(Frame::Array(groups.collect()))
            }
            (b"STREAM", _) => stream_info(s, args),
            _ => subcommand_error(args, "XINFO"),
        }
    }))
}

fn stream_info(s: &Stream, args: &[Vec<u8>]) -> Reply {
    let options = &args[3..];
    let full = !options.is_empty();
    let mut count = 10usize;
    if full {
        if !matches!(options.len(), 1 | 3) || upper(&options[0]) != b"FULL" {
            return subcommand_error(args, "XINFO");
        }
        if options.len() == 3 {
            if upper(&options[1]) != b"COUNT" {
                return subcommand_error(args, "XINFO");
            }
            let Some(n) = parse_integer(&options[2]) else {
                return error(NOT_AN_INTEGER);
            };
            // 0: everything; negative: the default.
            count = if n < 0 { 10 } else { n as usize };
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let (keys, nodes) = tree_sizes(s);
    let mut fields = vec![
        field("length", Frame::Integer(s.len() as i64)),
        field("radix-tree-keys", Frame::Integer(keys)),
        field("radix-tree-nodes", Frame::Integer(nodes)),
        field("last-generated-id", id_frame(s.last_id)),
        field("max-deleted-entry-id", id_frame(s.max_deleted_id)),
        field("entries-added", Frame::Integer(s.entries_added as i64)),
        field("recorded-first-entry-id", id_frame(s.first_id)),
    ];
    if !full {
        fields.push(field("groups", Frame::Integer(s.groups.len() as i64)));
        fields.push(field(
            "first-entry",
            s.entries.first().as_ref().map_or(Frame::Null, entry_frame),
        ));
        fields.push(field(
            "last-entry",
            s.entries.last().as_ref().map_or(Frame::Null, entry_frame),
        ));
        return reply(Frame::Map(fields));
    }
    fields.push(field(
        "entries",
        Frame::Array(
            s.entries
                .range(Id::ZERO, Id::MAX, limit, false)
                .iter()
                .map(entry_frame)
                .collect(),
        ),
    ));
    let groups = s.groups.iter().map(|g| {
        let listed = g.pending().range(Id::ZERO, Id::MAX, limit, |_| true);
        let pending = listed.iter().map(|p| {
            Frame::Array(vec![
                id_frame(p.id),
                Frame::bulk(g.consumer_name(p.consumer)),
                Frame::Integer(p.delivered_ms as i64),
                Frame::Integer(p.deliveries as i64),
            ])
        });
        let consumers = g.consumers().iter().map(|c| {
            let own = g
                .pending()
                .range(Id::ZERO, Id::MAX, limit, |p| p.consumer == c.number());
            let rows = own.iter().map(|p| {
                Frame::Array(vec![
                    id_frame(p.id),
                    Frame::Integer(p.delivered_ms as i64),
                    Frame::Integer(p.deliveries as i64),
                ])
            });
            Frame::Map(vec![
                field("name", Frame::bulk(&c.name)),
                field("seen-time", Frame::Integer(c.seen_ms as i64)),
                field("pel-count", Frame::Integer(c.pending() as i64)),
                field("pending", Frame::Array(rows.collect())),
            ])
        });
        Frame::Map(vec![
            field("name", Frame::bulk(&g.name)),
            field("last-delivered-id", id_frame(g.last_id)),
            field("entries-read", entries_read_frame(g)),
            field("lag", lag_frame(s, g)),
            field("pel-count", Frame::Integer(g.pending_count() as i64)),
            field("pending", Frame::Array(pending.collect())),
            field("consumers", Frame::Array(consumers.collect())),
        ])
    });
    fields.push(field("groups", Frame::Array(groups.collect())));
    reply(Frame::Map(fields))
}
