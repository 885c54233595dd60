//! Streams: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD (and its BLOCK form) XSETID.
//! The value and its stored form are in `stream.rs`; consumer groups are in
//! `stream_groups.rs`.

use resp::Frame;

use super::{error, int, parse_integer, reply, upper, Ctx, Protocol, Reply};
use super::{NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE};
use crate::entry::{now_ms, Entry as Stored, Kind};
use crate::keyspace_events::STREAM;
use crate::stream::{self, Id, IdSyntax, Stream, Trim};
use crate::stream_nodes;

pub(super) const BAD_ID: &str = "ERR Invalid stream ID specified as stream command argument";
/// Entries a blocked XREAD without COUNT gets at most, as in Redis.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// The value of a `Result<T, Reply>`, or return the reply.
macro_rules! or_reply {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(reply) => return reply,
        }
    };
}
pub(super) use or_reply;

/// What reading a key as a stream found.
pub(super) enum Found<'s, 'a> {
    Missing,
    Stream(&'s Stream<'a>),
    /// Another type: WRONGTYPE.
    Other,
}

/// What `f` makes of `key` read as a stream (a split one's nodes read as `f` needs
/// them), counted as a read; `Err` holds the reply to give instead (a node that could
/// not be read).
pub(super) fn read<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(Found<'_, '_>) -> R,
) -> Result<R, Reply> {
    let mut found = false;
    let outcome = ctx.db().read_live(key, |nodes, stored| {
        let Some(stored) = stored else {
            return Ok(f(Found::Missing));
        };
        found = true;
        if Stored::stored_kind(stored) != Kind::Stream {
            return Ok(f(Found::Other));
        }
        let s = stream_nodes::decode(nodes, stored)?;
        let result = f(Found::Stream(&s));
        match s.failure() {
            Some(e) => Err(e),
            None => Ok(result),
        }
    });
    ctx.hit(key, found);
    match outcome {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(e)) | Err(e) => Err(Err(e)),
    }
}

/// What an edit of a stream does.
pub(super) enum Write {
    Keep,
    /// Store the stream (which may be empty: a stream is kept when its last entry
    /// goes, as in Redis).
    Store,
}

/// Reads `key` as a stream (a new empty one if missing and `create`), lets `decide`
/// change it, and stores it if told, keeping the key's expiry. `Err(WRONGTYPE)` if
/// the key holds another type. `decide` may run more than once: it must only compute.
pub(super) fn edit<R>(
    ctx: &Ctx,
    key: &[u8],
    create: bool,
    mut decide: impl FnMut(Option<&mut Stream>) -> (Write, R),
) -> Result<R, Reply> {
    let outcome = ctx.db().edit_stream(key, |nodes, live| {
        let (mut s, deadline) = match live {
            Some(stored) => (
                Some(stream_nodes::decode(nodes, stored)?),
                Stored::stored_deadline(stored),
            ),
            None if create => (Some(Stream::default()), None),
            None => (None, None),
        };
        let (write, result) = decide(s.as_mut());
        match (write, s) {
            (Write::Store, Some(s)) => {
                Ok((Some(stream_nodes::stored(nodes, s, deadline)?), result))
            }
            (_, Some(s)) => {
                let failed = s.failure();
                s.entries.abandon();
                match failed {
                    Some(e) => Err(e),
                    None => Ok((None, result)),
                }
            }
            (_, None) => Ok((None, result)),
        }
    });
    match outcome {
        Err(e) => Err(Err(e)),
        Ok(None) => Err(error(WRONG_TYPE)),
        Ok(Some(r)) => Ok(r),
    }
}

/// An ID argument, or Redis's error for a bad one.
pub(super) fn id_arg(
    arg: &[u8],
    missing_seq: u64,
    syntax: IdSyntax,
) -> Result<stream::ParsedId, &'static str> {
    stream::parse_id(arg, missing_seq, syntax).ok_or(BAD_ID)
}

pub(super) fn id_frame(id: Id) -> Frame {
    Frame::bulk(id.to_string())
}

pub(super) fn entry_frame(e: &stream::Entry) -> Frame {
    let fields = e
        .fields
        .iter()
        .flat_map(|(f, v)| [Frame::bulk(f), Frame::bulk(v)])
        .collect();
    Frame::Array(vec![id_frame(e.id), Frame::Array(fields)])
}

/// XREAD's and XREADGROUP's reply: per stream, its key and entries; a map in RESP3.
pub(super) fn per_stream(ctx: &Ctx, served: Vec<(Vec<u8>, Frame)>) -> Frame {
    if ctx.session.proto == Protocol::Resp2 {
        let pairs = served
            .into_iter()
            .map(|(key, entries)| Frame::Array(vec![Frame::Bulk(key), entries]));
        Frame::Array(pairs.collect())
    } else {
        let pairs = served
            .into_iter()
            .map(|(key, entries)| (Frame::Bulk(key), entries));
        Frame::Map(pairs.collect())
    }
}

/// XADD's and XTRIM's trimming options.
#[derive(Default)]
struct TrimArgs {
    strategy: Option<Trim>,
    approx: bool,
    limit: Option<u64>,
}

/// What XADD's arguments before the fields say.
struct AddArgs {
    trim: TrimArgs,
    no_create: bool,
    /// `None`: `*`.
    id: Option<stream::ParsedId>,
    /// Where the ID is.
    at: usize,
}

/// Reads XADD's (`adding`) or XTRIM's options from `args[2..]`, in Redis's order and
/// words; for XADD, also NOMKSTREAM and the ID, read where the options end.
fn trim_args(args: &[Vec<u8>], adding: bool) -> Result<AddArgs, &'static str> {
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut t = TrimArgs::default();
    let mut no_create = false;
    let mut id = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let word = upper(&args[i]);
        match word.as_slice() {
            b"*" if adding => break,
            b"MAXLEN" | b"MINID" if more > 0 => {
                if t.strategy.is_some() {
                    return Err(BOTH);
                }
                t.approx = false;
                if more >= 2 && matches!(args[i + 1].as_slice(), b"~" | b"=") {
                    t.approx = args[i + 1] == b"~";
                    i += 1;
                }
                let value = &args[i + 1];
                t.strategy = Some(if word == b"MAXLEN" {
                    let n = parse_integer(value).ok_or(NOT_AN_INTEGER)?;
                    if n < 0 {
                        return Err("ERR The MAXLEN argument must be >= 0.");
                    }
                    Trim::MaxLen(n as u64)
                } else {
                    Trim::MinId(id_arg(value, 0, IdSyntax::Strict)?.id)
                });
                i += 1;
            }
            b"LIMIT" if more > 0 => {
                let n = parse_integer(&args[i + 1]).ok_or(NOT_AN_INTEGER)?;
                if n < 0 {
                    return Err("ERR The LIMIT argument must be >= 0.");
                }
                t.limit = Some(n as u64);
                i += 1;
            }
            b"NOMKSTREAM" if adding => no_create = true,
            _ if adding => {
                id = Some(id_arg(&args[i], 0, IdSyntax::Add)?);
                break;
            }
            _ => return Err(SYNTAX_ERROR),
        }
        i += 1;
    }
    if t.limit.is_some_and(|l| l > 0) && t.strategy.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        );
    }
    if !adding && t.strategy.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy");
    }
    if t.limit.is_some() && !t.approx {
        return Err("ERR syntax error, LIMIT cannot be used without the special ~ option");
    }
    Ok(AddArgs {
        trim: t,
        no_create,
        id,
        at: i,
    })
}

impl TrimArgs {
    /// The most entries one trim removes: unbounded when exact; with `~`, LIMIT or
    /// 100 nodes' worth, as Redis bounds the work.
    fn effective_limit(&self, node_entries: u64) -> u64 {
        match (self.approx, self.limit) {
            (false, _) => 0,
            (true, Some(l)) => l,
            (true, None) => match 100 * node_entries {
                0 => 10_000,
                n => n.min(1_000_000),
            },
        }
    }
}

fn node_entries(ctx: &Ctx) -> u64 {
    ctx.server
        .config
        .encoding_limit(crate::config::EncodingLimit::StreamNodeEntries)
        .max(0) as u64
}

/// `XADD key [NOMKSTREAM] [MAXLEN | MINID [= | ~] threshold [LIMIT count]] * | id
/// field value [field value ...]`.
pub fn xadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let AddArgs {
        trim,
        no_create,
        id: given,
        at,
    } = match trim_args(args, true) {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    let fields = args.get(at + 1..).unwrap_or_default();
    if fields.len() < 2 || !fields.len().is_multiple_of(2) {
        return error("ERR wrong number of arguments for 'xadd' command");
    }
    if given
        .as_ref()
        .is_some_and(|p| p.seq_given && p.id == Id::ZERO)
    {
        return error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = fields
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let per_node = node_entries(ctx);
    let limit = trim.effective_limit(per_node);
    let now = now_ms();
    let outcome = edit(ctx, &args[1], !no_create, |s| {
        let Some(s) = s else {
            return (Write::Keep, Ok(None));
        };
        // A stream created here is kept even if the ID is refused, as in Redis.
        let refused = |e| {
            (
                if s.entries_added == 0 && s.len() == 0 {
                    Write::Store
                } else {
                    Write::Keep
                },
                Err(e),
            )
        };
        if s.last_id == Id::MAX {
            return refused(
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            );
        }
        let id = match &given {
            None if now > s.last_id.ms => Some(Id { ms: now, seq: 0 }),
            None => s.last_id.next(),
            Some(p) if p.seq_given => Some(p.id),
            Some(p) if p.id.ms == s.last_id.ms => s.last_id.next().filter(|n| n.ms == p.id.ms),
            Some(p) => Some(p.id),
        };
        let Some(id) = id.filter(|&id| id > s.last_id) else {
            return refused(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            );
        };
        s.append(id, pairs.clone(), per_node);
        let trimmed = trim
            .strategy
            .is_some_and(|t| s.trim(t, trim.approx, limit) > 0);
        (Write::Store, Ok(Some((id, trimmed))))
    });
    match outcome {
        Err(reply) => reply,
        Ok(Err(e)) => error(e),
        Ok(Ok(None)) => reply(Frame::Null),
        Ok(Ok(Some((id, trimmed)))) => {
            ctx.notify(STREAM, "xadd", &args[1]);
            if trimmed {
                ctx.notify(STREAM, "xtrim", &args[1]);
            }
            reply(id_frame(id))
        }
    }
}

/// `XTRIM key MAXLEN | MINID [= | ~] threshold [LIMIT count]`.
pub fn xtrim(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let trim = match trim_args(args, false) {
        Ok(parsed) => parsed.trim,
        Err(e) => return error(e),
    };
    let strategy = trim.strategy.expect("XTRIM's arguments name a strategy");
    let limit = trim.effective_limit(node_entries(ctx));
    let removed = match edit(ctx, &args[1], false, |s| match s {
        None => (Write::Keep, 0),
        Some(s) => match s.trim(strategy, trim.approx, limit) {
            0 => (Write::Keep, 0),
            n => (Write::Store, n),
        },
    }) {
        Ok(n) => n,
        Err(reply) => return reply,
    };
    if removed > 0 {
        ctx.notify(STREAM, "xtrim", &args[1]);
    }
    int(removed as i64)
}

/// `XDEL key id [id ...]`.
pub fn xdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // Checked after the key, as Redis does: a missing key deletes nothing.
    let ids: Result<Vec<Id>, &str> = args[2..]
        .iter()
        .map(|arg| id_arg(arg, 0, IdSyntax::Strict).map(|p| p.id))
        .collect();
    let deleted = match edit(ctx, &args[1], false, |s| {
        let Some(s) = s else {
            return (Write::Keep, Ok(0));
        };
        let ids = match &ids {
            Ok(ids) => ids,
            Err(e) => return (Write::Keep, Err(*e)),
        };
        let n = ids.iter().filter(|&&id| s.delete(id)).count();
        (if n > 0 { Write::Store } else { Write::Keep }, Ok(n))
    }) {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => return error(e),
        Err(reply) => return reply,
    };
    if deleted > 0 {
        ctx.notify(STREAM, "xdel", &args[1]);
    }
    int(deleted as i64)
}

pub fn xlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    or_reply!(read(ctx, &args[1], |found| match found {
        Found::Missing => int(0),
        Found::Other => error(WRONG_TYPE),
        Found::Stream(s) => int(s.len() as i64),
    }))
}

/// A range end (XRANGE, XPENDING, XAUTOCLAIM): `(` excludes it (then moving one ID
/// inward must be possible).
pub(super) fn range_end(arg: &[u8], missing_seq: u64, start: bool) -> Result<Id, &'static str> {
    let exclusive = arg.len() > 1 && arg[0] == b'(';
    if !exclusive {
        return Ok(id_arg(arg, missing_seq, IdSyntax::Range)?.id);
    }
    let id = id_arg(&arg[1..], missing_seq, IdSyntax::Strict)?.id;
    if start {
        id.next().ok_or("ERR invalid start ID for the interval")
    } else {
        id.previous().ok_or("ERR invalid end ID for the interval")
    }
}

/// `XRANGE key start end [COUNT count]`, or XREVRANGE (`end start`).
fn range(ctx: &Ctx, args: &[Vec<u8>], reverse: bool) -> Reply {
    let (start_arg, end_arg) = if reverse {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = match range_end(start_arg, 0, true) {
        Ok(id) => id,
        Err(e) => return error(e),
    };
    let end = match range_end(end_arg, u64::MAX, false) {
        Ok(id) => id,
        Err(e) => return error(e),
    };
    let mut count = None;
    let mut i = 4;
    while i < args.len() {
        if upper(&args[i]) == b"COUNT" && i + 1 < args.len() {
            let Some(n) = parse_integer(&args[i + 1]) else {
                return error(NOT_AN_INTEGER);
            };
            count = Some(n.max(0) as usize);
            i += 2;
        } else {
            return error(SYNTAX_ERROR);
        }
    }
    or_reply!(read(ctx, &args[1], |found| {
        let s = match found {
            Found::Missing => return reply(Frame::Array(Vec::new())),
            Found::Other => return error(WRONG_TYPE),
            Found::Stream(s) => s,
        };
        if count == Some(0) {
            return reply(Frame::NullArray);
        }
        let picked = s
            .entries
            .range(start, end, count.unwrap_or(usize::MAX), reverse);
        reply(Frame::Array(picked.iter().map(entry_frame).collect()))
    }))
}

pub fn xrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    range(ctx, args, false)
}

pub fn xrevrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    range(ctx, args, true)
}

/// A BLOCK argument: milliseconds, 0 for no limit.
fn block_timeout(arg: &[u8]) -> Result<Option<std::time::Duration>, &'static str> {
    let ms = parse_integer(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok((ms > 0).then(|| std::time::Duration::from_millis(ms as u64)))
}

/// XREAD's and XREADGROUP's arguments.
pub(super) struct ReadArgs<'a> {
    /// 0: no limit.
    pub count: usize,
    /// BLOCK's: `None` without BLOCK, `Some(None)` to wait for ever.
    pub timeout: Option<Option<std::time::Duration>>,
    pub noack: bool,
    /// XREADGROUP's group and consumer.
    pub group: Option<(&'a [u8], &'a [u8])>,
    pub keys: &'a [Vec<u8>],
    pub ids: &'a [Vec<u8>],
}

/// Reads XREAD's (or, `grouped`, XREADGROUP's) arguments in Redis's order and words.
pub(super) fn read_args<'a>(
    ctx: &Ctx,
    args: &'a [Vec<u8>],
    grouped: bool,
) -> Result<ReadArgs<'a>, Reply> {
    const GROUPED_ONLY: &str = "option is only supported by XREADGROUP. You called XREAD instead.";
    let mut parsed = ReadArgs {
        count: 0,
        timeout: None,
        noack: false,
        group: None,
        keys: &[],
        ids: &[],
    };
    let mut streams_at = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        match upper(&args[i]).as_slice() {
            b"BLOCK" if more > 0 => {
                if ctx.session.in_script {
                    return Err(error(&format!(
                        "ERR {} command is not allowed with BLOCK option from scripts",
                        String::from_utf8_lossy(&args[0])
                    )));
                }
                parsed.timeout = Some(block_timeout(&args[i + 1]).map_err(error)?);
                i += 1;
            }
            b"COUNT" if more > 0 => {
                let n = parse_integer(&args[i + 1]).ok_or_else(|| error(NOT_AN_INTEGER))?;
                parsed.count = n.max(0) as usize;
                i += 1;
            }
            b"STREAMS" if more > 0 => {
                streams_at = Some(i + 1);
                break;
            }
            b"GROUP" if more >= 2 => {
                if !grouped {
                    return Err(error(&format!("ERR The GROUP {GROUPED_ONLY}")));
                }
                parsed.group = Some((&args[i + 1], &args[i + 2]));
                i += 2;
            }
            b"NOACK" => {
                if !grouped {
                    return Err(error(&format!("ERR The NOACK {GROUPED_ONLY}")));
                }
                parsed.noack = true;
            }
            _ => return Err(error(SYNTAX_ERROR)),
        }
        i += 1;
    }
    let Some(at) = streams_at else {
        return Err(error(SYNTAX_ERROR));
    };
    let rest = &args[at..];
    if !rest.len().is_multiple_of(2) {
        return Err(error(
            "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
        ));
    }
    if grouped && parsed.group.is_none() {
        return Err(error("ERR Missing GROUP option for XREADGROUP"));
    }
    (parsed.keys, parsed.ids) = rest.split_at(rest.len() / 2);
    Ok(parsed)
}

/// `XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]`.
/// Blocking, it waits after the IDs it resolved (`$`: the last ID then), which the
/// rerun on waking is given in place of `$`.
pub fn xread(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let ReadArgs {
        count,
        timeout,
        keys,
        ids: id_args,
        ..
    } = or_reply!(read_args(ctx, args, false));
    let limit = if count == 0 { usize::MAX } else { count };
    let mut after = Vec::with_capacity(keys.len());
    let mut served = Vec::new();
    for (key, id) in keys.iter().zip(id_args) {
        // Each key's ID resolved (`$`: its last) and the entries after it read.
        let (id, entries) = or_reply!(or_reply!(read(ctx, key, |found| {
            let s = match found {
                // Woken, a key now of another type is waited on, as Redis does.
                Found::Other => match ctx.wrong_source_type() {
                    Some(refusal) => return Err(refusal),
                    None => None,
                },
                Found::Missing => None,
                Found::Stream(s) => Some(s),
            };
            let id = match id.as_slice() {
                b"$" => s.map_or(Id::ZERO, |s| s.last_id),
                b">" => {
                    return Err(error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."))
                }
                _ => match id_arg(id, 0, IdSyntax::Strict) {
                    Ok(p) => p.id,
                    Err(e) => return Err(error(e)),
                },
            };
            let entries = match (s, id.next()) {
                (Some(s), Some(from)) => s.entries.range(from, Id::MAX, limit, false),
                _ => Vec::new(),
            };
            Ok((id, entries))
        })));
        if !entries.is_empty() {
            let entries = entries.iter().map(entry_frame).collect();
            served.push((key.clone(), Frame::Array(entries)));
        }
        after.push(id);
    }
    if !served.is_empty() {
        return reply(per_stream(ctx, served));
    }
    let Some(timeout) = timeout else {
        return reply(Frame::NullArray);
    };
    // Waiting: the rerun reads after the IDs resolved now, with Redis's default count
    // (its BLOCK only makes it wait again: the first call's timeout still holds).
    let mut rerun: Vec<Vec<u8>> = vec![
        b"XREAD".to_vec(),
        b"BLOCK".to_vec(),
        b"0".to_vec(),
        b"COUNT".to_vec(),
    ];
    rerun.push(
        if count == 0 {
            BLOCKED_DEFAULT_COUNT
        } else {
            count
        }
        .to_string()
        .into_bytes(),
    );
    rerun.push(b"STREAMS".to_vec());
    rerun.extend(keys.iter().cloned());
    rerun.extend(after.iter().map(|id| id.to_string().into_bytes()));
    Ok(super::Action::Block {
        keys: keys.to_vec(),
        timeout,
        timeout_reply: Frame::NullArray,
        rerun: Some(rerun),
    })
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]`.
pub fn xsetid(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let id = match id_arg(&args[2], 0, IdSyntax::Strict) {
        Ok(p) => p.id,
        Err(e) => return error(e),
    };
    let (mut entries_added, mut max_deleted) = (None, Id::ZERO);
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        match upper(&args[i]).as_slice() {
            b"ENTRIESADDED" if more > 0 => {
                let Some(n) = parse_integer(&args[i + 1]) else {
                    return error(NOT_AN_INTEGER);
                };
                if n < 0 {
                    return error("ERR entries_added must be positive");
                }
                entries_added = Some(n as u64);
            }
            b"MAXDELETEDID" if more > 0 => {
                max_deleted = match id_arg(&args[i + 1], 0, IdSyntax::Strict) {
                    Ok(p) => p.id,
                    Err(e) => return error(e),
                };
                if id < max_deleted {
                    return error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
                }
            }
            _ => return error(SYNTAX_ERROR),
        }
        i += 2;
    }
    let outcome = edit(ctx, &args[1], false, |s| {
        let Some(s) = s else {
            return (Write::Keep, Err("ERR no such key"));
        };
        if let Some(top) = s.entries.last() {
            if id < top.id {
                return (
                    Write::Keep,
                    Err(
                        "ERR The ID specified in XSETID is smaller than the target stream top item",
                    ),
                );
            }
            if entries_added.is_some_and(|n| (s.len() as u64) > n) {
                return (Write::Keep, Err("ERR The entries_added specified in XSETID is smaller than the target stream length"));
            }
        }
        s.last_id = id;
        if let Some(n) = entries_added {
            s.entries_added = n;
        }
        if max_deleted != Id::ZERO {
            s.max_deleted_id = max_deleted;
        }
        (Write::Store, Ok(()))
    });
    match outcome {
        Err(reply) => reply,
        Ok(Err(e)) => error(e),
        Ok(Ok(())) => {
            ctx.notify(STREAM, "xsetid", &args[1]);
            Ok(super::Action::Ok)
        }
    }
}
