//! Sorted sets: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT
//! ZRANGE (by rank, score or lex, forwards or reversed, with LIMIT and WITHSCORES) and
//! its older forms, ZRANGESTORE, ZPOPMIN ZPOPMAX, ZREMRANGEBYRANK / SCORE / LEX,
//! ZRANDMEMBER, ZSCAN. Members are kept in (score, member) order, as Redis orders them.

use resp::Frame;

use super::collections::{self, notify_edit};
use super::{error, int, parse_integer, reply, upper, Ctx, Reply};
use super::{NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE};
use crate::db::Edited;
use crate::entry::Kind;
use crate::keyspace_events::ZSET;
use crate::packed::{self, score_order, Builder};
use crate::score_nodes::{ZsetEditor, ZsetReader};

type Scored<'a> = (&'a [u8], f64);

pub(super) const NOT_A_FLOAT: &str = "ERR value is not a valid float";
const BAD_SCORE_RANGE: &str = "ERR min or max is not a float";
const BAD_LEX_RANGE: &str = "ERR min or max not valid string range item";

pub(super) fn pack(entries: &[Scored]) -> Vec<u8> {
    let bytes: usize = entries.iter().map(|(m, _)| m.len() + 10).sum();
    let mut b = Builder::with_capacity(bytes);
    for (member, score) in entries {
        b.push_scored(member, *score);
    }
    b.finish()
}

/// A score as Redis reads one (`strtod` over the whole argument): no leading space,
/// no NaN, nothing that overflows to infinity or underflows to zero; `inf` and
/// `-inf` are scores.
pub(super) fn parse_score(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let x: f64 = text.parse().ok()?;
    let spelled_infinite = text.to_ascii_lowercase().contains("inf");
    let overflowed = x.is_infinite() && !spelled_infinite;
    let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
    let underflowed = x == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    (!x.is_nan() && !overflowed && !underflowed).then_some(x)
}

/// A score as the client's protocol carries one: a double in RESP3, text in RESP2.
fn score_frame(score: f64) -> Frame {
    Frame::Double(score)
}

/// One end of a score range: `(` makes it exclusive.
#[derive(Clone, Copy)]
struct ScoreBound {
    value: f64,
    exclusive: bool,
}

impl ScoreBound {
    fn parse(arg: &[u8]) -> Option<ScoreBound> {
        let (exclusive, text) = match arg.strip_prefix(b"(") {
            Some(rest) => (true, rest),
            None => (false, arg),
        };
        // As `strtod` in Redis's range parser: leading space is skipped, and a value
        // too large is infinity.
        let text = std::str::from_utf8(text).ok()?.trim_start();
        let value: f64 = text.parse().ok()?;
        (!value.is_nan()).then_some(ScoreBound { value, exclusive })
    }

    fn below(&self, x: f64) -> bool {
        if self.exclusive {
            self.value < x
        } else {
            self.value <= x
        }
    }

    fn above(&self, x: f64) -> bool {
        if self.exclusive {
            x < self.value
        } else {
            x <= self.value
        }
    }
}

/// One end of a lex range: `[x` inclusive, `(x` exclusive, `-` and `+` the ends.
#[derive(Clone, Copy)]
enum LexBound<'a> {
    Min,
    Max,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl<'a> LexBound<'a> {
    fn parse(arg: &'a [u8]) -> Option<LexBound<'a>> {
        match arg {
            b"-" => Some(LexBound::Min),
            b"+" => Some(LexBound::Max),
            [b'[', rest @ ..] => Some(LexBound::Inclusive(rest)),
            [b'(', rest @ ..] => Some(LexBound::Exclusive(rest)),
            _ => None,
        }
    }

    /// Whether `m` is at or past this lower bound.
    fn below(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(b) => *b <= m,
            LexBound::Exclusive(b) => *b < m,
        }
    }

    /// Whether `m` is at or before this upper bound.
    fn above(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(b) => m <= *b,
            LexBound::Exclusive(b) => m < *b,
        }
    }
}

/// What a range is of.
#[derive(Clone, Copy, PartialEq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// Which members a range command selects.
enum Range<'a> {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound<'a>, LexBound<'a>),
}

impl<'a> Range<'a> {
    /// The range between `min` and `max` of the kind `by` names.
    fn parse(by: By, min: &'a [u8], max: &'a [u8]) -> Result<Range<'a>, &'static str> {
        match by {
            By::Rank => match (parse_integer(min), parse_integer(max)) {
                (Some(a), Some(b)) => Ok(Range::Rank(a, b)),
                _ => Err(NOT_AN_INTEGER),
            },
            By::Score => match (ScoreBound::parse(min), ScoreBound::parse(max)) {
                (Some(a), Some(b)) => Ok(Range::Score(a, b)),
                _ => Err(BAD_SCORE_RANGE),
            },
            By::Lex => match (LexBound::parse(min), LexBound::parse(max)) {
                (Some(a), Some(b)) => Ok(Range::Lex(a, b)),
                _ => Err(BAD_LEX_RANGE),
            },
        }
    }
}

/// The ranks from `start` to `stop` (inclusive, negative ones counted from the end) of
/// a sorted set of `len` members, within it.
fn rank_span(start: i64, stop: i64, len: usize) -> std::ops::Range<usize> {
    let l = len as i64;
    let start = if start < 0 { (start + l).max(0) } else { start };
    let stop = if stop < 0 { stop + l } else { stop.min(l - 1) };
    if start > stop || start >= l {
        0..0
    } else {
        start as usize..stop as usize + 1
    }
}

/// ZADD's options.
#[derive(Default)]
struct AddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]`.
pub fn zadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut o = AddOptions::default();
    let mut i = 2;
    while i < args.len() {
        match upper(&args[i]).as_slice() {
            b"NX" => o.nx = true,
            b"XX" => o.xx = true,
            b"GT" => o.gt = true,
            b"LT" => o.lt = true,
            b"CH" => o.ch = true,
            b"INCR" => o.incr = true,
            _ => break,
        }
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return error(SYNTAX_ERROR);
    }
    if o.nx && o.xx {
        return error("ERR XX and NX options at the same time are not compatible");
    }
    if (o.gt || o.lt) && (o.nx || (o.gt && o.lt)) {
        return error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if o.incr && rest.len() > 2 {
        return error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks(2) {
        let Some(score) = parse_score(&pair[0]) else {
            return error(NOT_A_FLOAT);
        };
        pairs.push((pair[1].as_slice(), score));
    }
    let event = if o.incr { "zincr" } else { "zadd" };
    let Some(edited) = edit_zset(ctx, &args[1], |zset| {
        let (mut added, mut changed) = (0, 0);
        let mut incr_result = None;
        for &(member, score) in &pairs {
            match zset.score(member) {
                Some(_) if o.nx => continue,
                None if o.xx => continue,
                Some(current) => {
                    let new = if o.incr { current + score } else { score };
                    if new.is_nan() {
                        return Err("ERR resulting score is not a number (NaN)");
                    }
                    if (o.gt && new <= current) || (o.lt && new >= current) {
                        continue;
                    }
                    incr_result = Some(new);
                    if new != current {
                        zset.set(member, new);
                        changed += 1;
                    }
                }
                None => {
                    incr_result = Some(score);
                    zset.set(member, score);
                    added += 1;
                }
            }
        }
        Ok((added, changed, incr_result))
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, ZSET, event, &args[1]);
    match edited.result {
        Err(e) => error(e),
        Ok((_, _, incr)) if o.incr => reply(incr.map_or(Frame::Null, score_frame)),
        Ok((added, changed, _)) => int(added + if o.ch { changed } else { 0 }),
    }
}

/// Changes the sorted set at `key` through `f` (see `Db::edit_zset`: a large one's
/// nodes that hold the members named are all that is copied).
fn edit_zset<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnMut(&mut ZsetEditor) -> R,
) -> engine::Result<Option<Edited<R>>> {
    let large = |packed: &[u8]| super::object::held_large(ctx, Kind::ZSet, packed);
    ctx.db().edit_zset(key, &large, f)
}

/// Answers with what `f` makes of the sorted set at `key`, looked up member by member
/// or by rank (see `Db::read_zset`; `None` if missing); WRONGTYPE if the key holds
/// another type. Counts as a read (hits and misses).
pub(super) fn answer_zset(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&ZsetReader>) -> engine::Result<Frame>,
) -> Reply {
    let mut found = true;
    let frame = ctx.db().read_zset(key, |zset| {
        found = zset.is_some();
        f(zset)
    })?;
    ctx.hit(key, found);
    match frame {
        Some(frame) => reply(frame),
        None => error(WRONG_TYPE),
    }
}

pub fn zincrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(delta) = parse_score(&args[2]) else {
        return error(NOT_A_FLOAT);
    };
    let member = args[3].as_slice();
    let Some(edited) = edit_zset(ctx, &args[1], |zset| {
        let new = zset.score(member).unwrap_or(0.0) + delta;
        if new.is_nan() {
            return Err("ERR resulting score is not a number (NaN)");
        }
        zset.set(member, new);
        Ok(new)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, ZSET, "zincr", &args[1]);
    match edited.result {
        Ok(score) => reply(score_frame(score)),
        Err(e) => error(e),
    }
}

pub fn zrem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(edited) = edit_zset(ctx, &args[1], |zset| {
        args[2..]
            .iter()
            .filter(|m| zset.remove(m).is_some())
            .count()
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, ZSET, "zrem", &args[1]);
    int(edited.result as i64)
}

pub fn zcard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        Ok(Frame::Integer(z.map_or(0, ZsetReader::len) as i64))
    })
}

pub fn zscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        let score = match z {
            Some(z) => z.score(&args[2])?,
            None => None,
        };
        Ok(score.map_or(Frame::Null, score_frame))
    })
}

pub fn zmscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        let mut scores = Vec::with_capacity(args.len() - 2);
        for member in &args[2..] {
            let score = match z {
                Some(z) => z.score(member)?,
                None => None,
            };
            scores.push(score.map_or(Frame::Null, score_frame));
        }
        Ok(Frame::Array(scores))
    })
}

fn rank(ctx: &Ctx, args: &[Vec<u8>], reverse: bool) -> Reply {
    answer_zset(ctx, &args[1], |z| {
        let Some(z) = z else {
            return Ok(Frame::Null);
        };
        let rank = z
            .rank(&args[2])?
            .map(|at| if reverse { z.len() - 1 - at } else { at });
        Ok(rank.map_or(Frame::Null, |r| Frame::Integer(r as i64)))
    })
}

pub fn zrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    rank(ctx, args, false)
}

pub fn zrevrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    rank(ctx, args, true)
}

/// The ranks, counted from the least, of the members a range of scores or members
/// spans: by score found from the nodes' first scores, reading the two nodes where the
/// range starts and ends; by member by a binary search on the nodes' first members.
/// As in Redis, a lex range starts at the first member at or past its minimum and goes
/// on while members are within its maximum (a set of equal scores, the only sets lex
/// ranges are defined for, is in order of member).
fn value_span(z: &ZsetReader, range: &Range) -> engine::Result<std::ops::Range<usize>> {
    let (start, end) = match range {
        Range::Score(min, max) => (
            z.count_below(|s| !min.below(s))?,
            z.count_below(|s| max.above(s))?,
        ),
        Range::Lex(min, max) => (
            z.count_below_member(|m| !min.below(m))?,
            z.count_below_member(|m| max.above(m))?,
        ),
        Range::Rank(..) => unreachable!("a range of values"),
    };
    Ok(start..end.max(start))
}

/// ZCOUNT and ZLEXCOUNT: how many members lie in a range.
fn count_in(ctx: &Ctx, args: &[Vec<u8>], by: By) -> Reply {
    let range = match Range::parse(by, &args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    answer_zset(ctx, &args[1], |z| {
        let span = match z {
            Some(z) => value_span(z, &range)?,
            None => 0..0,
        };
        Ok(Frame::Integer(span.len() as i64))
    })
}

pub fn zcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    count_in(ctx, args, By::Score)
}

pub fn zlexcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    count_in(ctx, args, By::Lex)
}

/// What a ZRANGE-like call asks for.
struct RangeQuery<'a> {
    range: Range<'a>,
    reverse: bool,
    /// LIMIT's offset and count (-1: all); by score or lex only.
    limit: (i64, i64),
    with_scores: bool,
}

/// The reply listing `entries`, with their scores if asked: flat in RESP2, pairs in
/// RESP3, as Redis answers.
fn listing(ctx: &Ctx, entries: &[Scored], with_scores: bool) -> Frame {
    let resp3 = ctx.session.proto == resp::Protocol::Resp3;
    let mut out = Vec::with_capacity(entries.len() * if with_scores { 2 } else { 1 });
    for (member, score) in entries {
        let member = Frame::Bulk(member.to_vec());
        match (with_scores, resp3) {
            (false, _) => out.push(member),
            (true, true) => out.push(Frame::Array(vec![member, score_frame(*score)])),
            (true, false) => {
                out.push(member);
                out.push(score_frame(*score));
            }
        }
    }
    Frame::Array(out)
}

/// Parses the options after `min` and `max` as Redis parses them for ZRANGE and its
/// older forms. Those fix the kind of range (`by`) and the direction,
/// so BYSCORE, BYLEX and REV are syntax errors there, as is a second one in ZRANGE.
fn parse_range_query<'a>(
    options: &'a [Vec<u8>],
    min: &'a [u8],
    max: &'a [u8],
    mut by: By,
    mut reverse: bool,
    generic: bool,
) -> Result<RangeQuery<'a>, &'static str> {
    let (mut limit, mut with_scores) = ((0, -1), false);
    let (mut by_given, mut direction_given) = (!generic, !generic);
    let mut i = 0;
    while i < options.len() {
        match upper(&options[i]).as_slice() {
            b"WITHSCORES" => with_scores = true,
            b"LIMIT" if i + 2 < options.len() => {
                let (Some(offset), Some(count)) = (
                    parse_integer(&options[i + 1]),
                    parse_integer(&options[i + 2]),
                ) else {
                    return Err(NOT_AN_INTEGER);
                };
                limit = (offset, count);
                i += 2;
            }
            b"REV" if !direction_given => (reverse, direction_given) = (true, true),
            b"BYSCORE" if !by_given => (by, by_given) = (By::Score, true),
            b"BYLEX" if !by_given => (by, by_given) = (By::Lex, true),
            _ => return Err(SYNTAX_ERROR),
        }
        i += 1;
    }
    // As Redis: only a LIMIT with a count other than -1 is refused on ranks.
    if limit.1 != -1 && by == By::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if with_scores && by == By::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    // Reversed score and lex ranges name the maximum first.
    let (min, max) = if reverse && by != By::Rank {
        (max, min)
    } else {
        (min, max)
    };
    Ok(RangeQuery {
        range: Range::parse(by, min, max)?,
        reverse,
        limit,
        with_scores,
    })
}

/// The ranks, counted from the least, of what a query by rank or score selects from
/// `z` (its LIMIT applied), in the order they lie in the set.
fn forward_ranks(z: &ZsetReader, query: &RangeQuery) -> engine::Result<std::ops::Range<usize>> {
    let len = z.len();
    Ok(match query.range {
        // By rank, REV counts ranks from the greatest.
        Range::Rank(start, stop) => {
            let span = rank_span(start, stop, len);
            if query.reverse {
                len - span.end..len - span.start
            } else {
                span
            }
        }
        Range::Score(..) | Range::Lex(..) => {
            let span = value_span(z, &query.range)?;
            let (offset, count) = query.limit;
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            match usize::try_from(offset) {
                Err(_) => 0..0,
                Ok(offset) if query.reverse => {
                    let end = span.end.saturating_sub(offset).max(span.start);
                    end.saturating_sub(count).max(span.start)..end
                }
                Ok(offset) => {
                    let start = span.start.saturating_add(offset).min(span.end);
                    start..start.saturating_add(count).min(span.end)
                }
            }
        }
    })
}

/// The members (and scores) a query selects from `z`, in the order it returns them:
/// only the nodes that hold their ranks are read.
fn picked(z: Option<&ZsetReader>, query: &RangeQuery) -> engine::Result<Vec<(Vec<u8>, f64)>> {
    let Some(z) = z else {
        return Ok(Vec::new());
    };
    let mut picked = z.by_rank(forward_ranks(z, query)?)?;
    if query.reverse {
        picked.reverse();
    }
    Ok(picked)
}

fn range_reply(ctx: &Ctx, key: &[u8], query: Result<RangeQuery, &'static str>) -> Reply {
    let query = match query {
        Ok(q) => q,
        Err(e) => return error(e),
    };
    answer_zset(ctx, key, |z| {
        let picked = picked(z, &query)?;
        let picked: Vec<Scored> = picked.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
        Ok(listing(ctx, &picked, query.with_scores))
    })
}

/// `ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
pub fn zrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Rank, false, true);
    range_reply(ctx, &args[1], query)
}

pub fn zrevrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Rank, true, false);
    range_reply(ctx, &args[1], query)
}

pub fn zrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Score, false, false);
    range_reply(ctx, &args[1], query)
}

pub fn zrevrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Score, true, false);
    range_reply(ctx, &args[1], query)
}

pub fn zrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Lex, false, false);
    range_reply(ctx, &args[1], query)
}

pub fn zrevrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let query = parse_range_query(&args[4..], &args[2], &args[3], By::Lex, true, false);
    range_reply(ctx, &args[1], query)
}

/// `ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]`: the
/// selection replaces `dst` (no expiry); an empty one deletes it. Runs alone.
pub fn zrangestore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (destination, source) = (&args[1], &args[2]);
    // WITHSCORES is not among ZRANGESTORE's options.
    if args[5..].iter().any(|a| upper(a) == b"WITHSCORES") {
        return error(SYNTAX_ERROR);
    }
    let query = match parse_range_query(&args[5..], &args[3], &args[4], By::Rank, false, true) {
        Ok(q) => q,
        Err(e) => return error(e),
    };
    let mut found = true;
    let picked = ctx.db().read_zset(source, |z| {
        found = z.is_some();
        picked(z, &query)
    })?;
    // The source is read as ZRANGE reads it: a hit or a miss.
    ctx.hit(source, found);
    let Some(picked) = picked else {
        return error(WRONG_TYPE);
    };
    let mut picked: Vec<Scored> = picked.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
    picked.sort_by(|a, b| score_order(*a, *b));
    let packed = pack(&picked);
    collections::store_result(ctx, destination, Kind::ZSet, packed, ZSET, "zrangestore")?;
    int(picked.len() as i64)
}

/// `ZPOPMIN | ZPOPMAX key [count]`.
fn pop(ctx: &Ctx, args: &[Vec<u8>], max: bool) -> Reply {
    if args.len() > 3 {
        return error(SYNTAX_ERROR);
    }
    let count = match args.get(2).map(|c| parse_integer(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as usize),
        Some(_) => return error("ERR value is out of range, must be positive"),
    };
    let Some(taken) = pop_members(ctx, &args[1], max, count.unwrap_or(1))? else {
        return error(WRONG_TYPE);
    };
    let taken: Vec<Scored> = taken.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
    if count.is_none() {
        // One member: a flat pair in either protocol, as Redis answers.
        let flat = taken
            .iter()
            .flat_map(|(m, s)| [Frame::Bulk(m.to_vec()), score_frame(*s)])
            .collect();
        return reply(Frame::Array(flat));
    }
    reply(listing(ctx, &taken, true))
}

/// Pops up to `count` members from the least (or, if `max`, the greatest) end of the
/// sorted set at `key`, firing the event; none if it is missing, `None` if the key
/// holds another type.
fn pop_members(ctx: &Ctx, key: &[u8], max: bool, count: usize) -> engine::Result<Option<Owned>> {
    let Some(edited) = edit_zset(ctx, key, |zset| {
        let n = count.min(zset.len());
        (0..n).map_while(|_| zset.pop(max)).collect::<Vec<_>>()
    })?
    else {
        return Ok(None);
    };
    let event = if max { "zpopmax" } else { "zpopmin" };
    notify_edit(ctx, &edited, ZSET, event, key);
    Ok(Some(edited.result))
}

/// `BZPOPMIN | BZPOPMAX key [key ...] timeout`: pops from the first sorted set that
/// has a member, answering the key, the member and its score, or waits for one.
fn blocking_pop(ctx: &Ctx, args: &[Vec<u8>], max: bool) -> Reply {
    let timeout = match collections::parse_timeout(&args[args.len() - 1]) {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    let keys = &args[1..args.len() - 1];
    for key in keys {
        let Some(mut taken) = pop_members(ctx, key, max, 1)? else {
            match ctx.wrong_source_type() {
                Some(refusal) => return refusal,
                None => continue,
            }
        };
        if let Some((member, score)) = taken.pop() {
            return reply(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Bulk(member),
                score_frame(score),
            ]));
        }
    }
    Ok(super::Action::Block {
        keys: keys.to_vec(),
        timeout,
        timeout_reply: Frame::NullArray,
        rerun: None,
    })
}

/// ZMPOP and BZMPOP from `args` (the key count first): pops up to `count` members
/// from the first non-empty sorted set, answering the key and the members with their
/// scores, or blocks (the blocking form) for `timeout`.
fn multi_pop(ctx: &Ctx, args: &[Vec<u8>], blocking: Option<Option<std::time::Duration>>) -> Reply {
    let (keys, max, count) = match collections::multi_pop_args(args, [b"MIN", b"MAX"]) {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    for key in keys {
        let Some(taken) = pop_members(ctx, key, max, count)? else {
            match (blocking, ctx.wrong_source_type()) {
                (Some(_), None) => continue,
                _ => return error(WRONG_TYPE),
            }
        };
        if !taken.is_empty() {
            let members = taken
                .into_iter()
                .map(|(m, s)| Frame::Array(vec![Frame::Bulk(m), score_frame(s)]))
                .collect();
            return reply(Frame::Array(vec![
                Frame::Bulk(key.clone()),
                Frame::Array(members),
            ]));
        }
    }
    match blocking {
        None => reply(Frame::NullArray),
        Some(timeout) => Ok(super::Action::Block {
            keys: keys.to_vec(),
            timeout,
            timeout_reply: Frame::NullArray,
            rerun: None,
        }),
    }
}

/// `ZMPOP numkeys key ... MIN | MAX [COUNT count]`.
pub fn zmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    multi_pop(ctx, &args[1..], None)
}

/// `BZMPOP timeout numkeys key ... MIN | MAX [COUNT count]`.
pub fn bzmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match collections::parse_timeout(&args[1]) {
        Ok(timeout) => multi_pop(ctx, &args[2..], Some(timeout)),
        Err(e) => error(e),
    }
}

pub fn bzpopmin(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, false)
}

pub fn bzpopmax(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, true)
}

pub fn zpopmin(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, false)
}

pub fn zpopmax(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, true)
}

/// ZREMRANGEBYRANK / SCORE / LEX: removes the members in a range.
fn remove_range(ctx: &Ctx, args: &[Vec<u8>], by: By, event: &'static str) -> Reply {
    let range = match Range::parse(by, &args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    // Only the nodes that hold the ranks removed are changed.
    let Some(edited) = edit_zset(ctx, &args[1], |zset| {
        let ranks = match range {
            Range::Rank(start, stop) => rank_span(start, stop, zset.len()),
            Range::Score(min, max) => {
                let start = zset.count_below(|s| !min.below(s));
                let end = zset.count_below(|s| max.above(s));
                start..end.max(start)
            }
            Range::Lex(min, max) => {
                let start = zset.count_below_member(|m| !min.below(m));
                let end = zset.count_below_member(|m| max.above(m));
                start..end.max(start)
            }
        };
        zset.remove_ranks(ranks)
    })?
    else {
        return error(WRONG_TYPE);
    };
    notify_edit(ctx, &edited, ZSET, event, &args[1]);
    int(edited.result as i64)
}

pub fn zremrangebyrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    remove_range(ctx, args, By::Rank, "zremrangebyrank")
}

pub fn zremrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    remove_range(ctx, args, By::Score, "zremrangebyscore")
}

pub fn zremrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    remove_range(ctx, args, By::Lex, "zremrangebylex")
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub fn zrandmember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (count, with_scores) = match collections::random_count(&args[2..], b"WITHSCORES") {
        Ok(parsed) => parsed,
        Err(e) => return error(e),
    };
    answer_zset(ctx, &args[1], |z| {
        let Some(z) = z else {
            return Ok(if count.is_some() {
                Frame::Array(Vec::new())
            } else {
                Frame::Null
            });
        };
        let Some(count) = count else {
            let rank = collections::random_positions(z.len(), 1, false);
            let mut picked = z.at_ranks(&rank)?;
            return Ok(Frame::Bulk(picked.swap_remove(0).0));
        };
        let ranks =
            collections::random_positions(z.len(), count.unsigned_abs() as usize, count >= 0);
        let picked = z.at_ranks(&ranks)?;
        let picked: Vec<Scored> = picked.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
        Ok(listing(ctx, &picked, with_scores))
    })
}

/// Members and scores, owned.
type Owned = Vec<(Vec<u8>, f64)>;

#[derive(Clone, Copy, PartialEq)]
enum Algebra {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Adds `value` into `total` as `how` says; inf + -inf is 0, as in Redis.
fn aggregate(total: f64, value: f64, how: Aggregate) -> f64 {
    match how {
        Aggregate::Sum => {
            let sum = total + value;
            if sum.is_nan() {
                0.0
            } else {
                sum
            }
        }
        Aggregate::Min => total.min(value),
        Aggregate::Max => total.max(value),
    }
}

/// What ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD are asked: the key
/// count at `args[at]`, the keys, then options.
struct AlgebraCall {
    weights: Vec<f64>,
    how: Aggregate,
    with_scores: bool,
    limit: usize,
}

/// Reads the keys and options as Redis does: the count, each key's type, then the
/// options. `Err` is the reply.
fn algebra_call(
    ctx: &Ctx,
    args: &[Vec<u8>],
    at: usize,
    op: Algebra,
    store: bool,
    cardinality: bool,
) -> engine::Result<Result<(AlgebraCall, Vec<Owned>), Reply>> {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let n = match parse_integer(&args[at]) {
        None => return Ok(Err(error(NOT_AN_INTEGER))),
        Some(n) if n < 1 => {
            return Ok(Err(error(&format!(
                "ERR at least 1 input key is needed for '{name}' command"
            ))))
        }
        Some(n) if n as u64 > (args.len() - at - 1) as u64 => return Ok(Err(error(SYNTAX_ERROR))),
        Some(n) => n as usize,
    };
    let mut inputs = Vec::with_capacity(n);
    for key in &args[at + 1..at + 1 + n] {
        let found = ctx.read(key)?;
        // A set takes part with every member scored 1, as in Redis.
        let members: Owned = match found {
            None => Vec::new(),
            Some(e) if e.kind == Kind::ZSet => packed::scored(&e.value)
                .map(|(m, s)| (m.to_vec(), s))
                .collect(),
            Some(e) if e.kind == Kind::Set => packed::elements(&e.value)
                .map(|m| (m.to_vec(), 1.0))
                .collect(),
            Some(_) => return Ok(Err(error(WRONG_TYPE))),
        };
        inputs.push(members);
    }
    let mut call = AlgebraCall {
        weights: vec![1.0; n],
        how: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let rest = &args[at + 1 + n..];
    let mut i = 0;
    while i < rest.len() {
        let left = rest.len() - i;
        match upper(&rest[i]).as_slice() {
            b"WEIGHTS" if op != Algebra::Diff && !cardinality && left > n => {
                for (w, arg) in call.weights.iter_mut().zip(&rest[i + 1..=i + n]) {
                    match parse_score(arg) {
                        Some(x) => *w = x,
                        None => return Ok(Err(error("ERR weight value is not a float"))),
                    }
                }
                i += n;
            }
            b"AGGREGATE" if op != Algebra::Diff && !cardinality && left >= 2 => {
                call.how = match upper(&rest[i + 1]).as_slice() {
                    b"SUM" => Aggregate::Sum,
                    b"MIN" => Aggregate::Min,
                    b"MAX" => Aggregate::Max,
                    _ => return Ok(Err(error(SYNTAX_ERROR))),
                };
                i += 1;
            }
            b"WITHSCORES" if !store && !cardinality => call.with_scores = true,
            b"LIMIT" if cardinality && left >= 2 => {
                call.limit = match parse_integer(&rest[i + 1]) {
                    Some(l) if l >= 0 => l as usize,
                    _ => return Ok(Err(error("ERR LIMIT can't be negative"))),
                };
                i += 1;
            }
            _ => return Ok(Err(error(SYNTAX_ERROR))),
        }
        i += 1;
    }
    Ok(Ok((call, inputs)))
}

/// The members `op` makes of `inputs` with their scores, in (score, member) order.
fn combine(call: &AlgebraCall, inputs: &[Owned], op: Algebra) -> Owned {
    use std::collections::HashMap;
    let weighted = |score: f64, i: usize| {
        let w = score * call.weights[i];
        if w.is_nan() {
            0.0
        } else {
            w
        }
    };
    let mut result: Owned = match op {
        Algebra::Union => {
            let mut totals: HashMap<&[u8], f64> = HashMap::new();
            let mut order = Vec::new();
            for (i, input) in inputs.iter().enumerate() {
                for (m, s) in input {
                    let v = weighted(*s, i);
                    match totals.get_mut(m.as_slice()) {
                        Some(t) => *t = aggregate(*t, v, call.how),
                        None => {
                            totals.insert(m, v);
                            order.push(m.as_slice());
                        }
                    }
                }
            }
            order.into_iter().map(|m| (m.to_vec(), totals[m])).collect()
        }
        Algebra::Inter => {
            let others: Vec<HashMap<&[u8], f64>> = inputs[1..]
                .iter()
                .map(|input| input.iter().map(|(m, s)| (m.as_slice(), *s)).collect())
                .collect();
            inputs[0]
                .iter()
                .filter_map(|(m, s)| {
                    let mut total = weighted(*s, 0);
                    for (i, other) in others.iter().enumerate() {
                        total =
                            aggregate(total, weighted(*other.get(m.as_slice())?, i + 1), call.how);
                    }
                    Some((m.clone(), total))
                })
                .collect()
        }
        Algebra::Diff => {
            let others: Vec<std::collections::HashSet<&[u8]>> = inputs[1..]
                .iter()
                .map(|input| input.iter().map(|(m, _)| m.as_slice()).collect())
                .collect();
            inputs[0]
                .iter()
                .filter(|(m, _)| !others.iter().any(|o| o.contains(m.as_slice())))
                .cloned()
                .collect()
        }
    };
    result.sort_by(|a, b| score_order((&a.0, a.1), (&b.0, b.1)));
    result
}

fn borrowed(owned: &Owned) -> Vec<Scored<'_>> {
    owned.iter().map(|(m, s)| (m.as_slice(), *s)).collect()
}

/// ZUNION, ZINTER, ZDIFF: `numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM | MIN | MAX]
/// [WITHSCORES]`. Runs alone.
fn algebra(ctx: &Ctx, args: &[Vec<u8>], op: Algebra) -> Reply {
    let (call, inputs) = match algebra_call(ctx, args, 1, op, false, false)? {
        Ok(parsed) => parsed,
        Err(r) => return r,
    };
    let result = combine(&call, &inputs, op);
    reply(listing(ctx, &borrowed(&result), call.with_scores))
}

/// The STORE forms: the result replaces `destination` (no expiry); an empty one
/// deletes it. Runs alone.
fn algebra_store(ctx: &Ctx, args: &[Vec<u8>], op: Algebra, event: &'static str) -> Reply {
    let (call, inputs) = match algebra_call(ctx, args, 2, op, true, false)? {
        Ok(parsed) => parsed,
        Err(r) => return r,
    };
    let result = combine(&call, &inputs, op);
    let packed = pack(&borrowed(&result));
    collections::store_result(ctx, &args[1], Kind::ZSet, packed, ZSET, event)?;
    int(result.len() as i64)
}

pub fn zunion(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Union)
}

pub fn zinter(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Inter)
}

pub fn zdiff(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra(ctx, args, Algebra::Diff)
}

pub fn zunionstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Union, "zunionstore")
}

pub fn zinterstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Inter, "zinterstore")
}

pub fn zdiffstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    algebra_store(ctx, args, Algebra::Diff, "zdiffstore")
}

/// `ZINTERCARD numkeys key ... [LIMIT limit]`: the intersection's size, counted up to
/// `limit` (0: no limit).
pub fn zintercard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (call, inputs) = match algebra_call(ctx, args, 1, Algebra::Inter, false, true)? {
        Ok(parsed) => parsed,
        Err(r) => return r,
    };
    let size = combine(&call, &inputs, Algebra::Inter).len();
    int(if call.limit > 0 {
        size.min(call.limit)
    } else {
        size
    } as i64)
}

pub fn zscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    collections::scan(ctx, args, Kind::ZSet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_read_as_strtod_reads_them_for_redis() {
        for (text, score) in [
            ("1", Some(1.0)),
            ("-1.5e3", Some(-1500.0)),
            ("inf", Some(f64::INFINITY)),
            ("-inf", Some(f64::NEG_INFINITY)),
            ("+inf", Some(f64::INFINITY)),
            (".5", Some(0.5)),
            ("nan", None),
            (" 1", None),
            ("1 ", None),
            ("1e400", None),
            ("1e-400", None),
            ("0e-400", Some(0.0)),
            ("", None),
            ("x", None),
        ] {
            assert_eq!(parse_score(text.as_bytes()), score, "{text}");
        }
    }

    #[test]
    fn ranges_select_as_redis_selects() {
        let all: Vec<Scored> = vec![(b"a", 1.0), (b"b", 2.0), (b"c", 2.0), (b"d", 3.0)];
        let stored = crate::entry::Entry {
            value: pack(&all),
            deadline: None,
            raw: false,
            kind: Kind::ZSet,
        }
        .into_stored();
        let nodes = crate::nodes::MemoryNodes::default();
        let z = ZsetReader::new(&nodes, &stored);
        let span = |by: By, min: &[u8], max: &[u8]| {
            value_span(&z, &Range::parse(by, min, max).unwrap()).unwrap()
        };
        assert_eq!(span(By::Score, b"2", b"2"), 1..3);
        assert_eq!(span(By::Score, b"(1", b"(3"), 1..3);
        assert_eq!(span(By::Score, b"-inf", b"+inf"), 0..4);
        assert_eq!(span(By::Score, b"5", b"1"), 4..4);
        assert_eq!(span(By::Lex, b"[b", b"(d"), 1..3);
        assert_eq!(span(By::Lex, b"-", b"+"), 0..4);
        assert_eq!(span(By::Lex, b"(d", b"[a"), 4..4);
        assert!(Range::parse(By::Lex, b"b", b"+").is_err());
        assert_eq!(rank_span(-2, -1, all.len()), 2..4);
    }
}
