//! What the list, hash, set and sorted-set commands share: changing a key of one type
//! through its packed form (`packed.rs`), and the cursor of HSCAN, SSCAN and ZSCAN.

use resp::Frame;

use super::{error, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::db::{Change, Edited};
use crate::entry::{Entry, Kind};
use crate::field_nodes::{FieldEditor, FieldReader};
use crate::glob::glob_match;
use crate::keyspace_events::GENERIC;
use crate::packed;

/// What an edit does with the packed value it was shown.
pub enum Edit {
    Keep,
    /// Store this packed value; an empty one deletes the key, as Redis deletes a
    /// collection the moment it is empty.
    Write(Vec<u8>),
}

/// Reads `key` as a collection of `kind` (its packed value, or `None` if missing),
/// lets `decide` choose an edit, and applies it atomically, keeping the key's expiry.
/// `None` if the key holds another type (the caller answers WRONGTYPE).
pub fn edit<R>(
    ctx: &Ctx,
    key: &[u8],
    kind: Kind,
    mut decide: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> engine::Result<Option<Edited<R>>> {
    ctx.db().update(key, kind, |e| {
        let Some(deadline) = (match e {
            Some(e) if e.kind != kind => None,
            e => Some(e.and_then(|e| e.deadline)),
        }) else {
            return (Change::Keep, None);
        };
        let (edit, result) = decide(e.map(|e| e.value.as_slice()));
        let (change, wrote, emptied) = match edit {
            Edit::Keep => (Change::Keep, false, false),
            Edit::Write(p) if packed::count(&p) == 0 => (Change::Delete, e.is_some(), true),
            Edit::Write(p) => {
                // Redis never converts a collection back to its small encoding.
                let raw = e.is_some_and(|e| e.raw) || super::object::held_large(ctx, kind, &p);
                let entry = Entry {
                    raw,
                    ..Entry::collection(kind, p, deadline)
                };
                (Change::Put(entry), true, false)
            }
        };
        let emptied = emptied && e.is_some();
        (
            change,
            Some(Edited {
                result,
                wrote,
                emptied,
            }),
        )
    })
}

/// Changes the hash or set (`kind`) at `key` through `f`, field by field (see
/// `Db::edit_fields`: a large one's nodes that hold them are all that is copied),
/// keeping its expiry. `None` if the key holds another type.
pub fn edit_fields<R>(
    ctx: &Ctx,
    key: &[u8],
    kind: Kind,
    f: impl FnMut(&mut FieldEditor) -> R,
) -> engine::Result<Option<Edited<R>>> {
    let large = |packed: &[u8]| super::object::held_large(ctx, kind, packed);
    ctx.db().edit_fields(key, kind, &large, f)
}

/// Answers with what `f` makes of the hash or set (`kind`) at `key`, looked up field
/// by field (see `Db::read_fields`; `None` if missing); WRONGTYPE if the key holds
/// another type. Counts as a read (hits and misses).
pub fn answer_fields(
    ctx: &Ctx,
    key: &[u8],
    kind: Kind,
    f: impl FnOnce(Option<&FieldReader>) -> engine::Result<Frame>,
) -> Reply {
    let mut found = true;
    let frame = ctx.db().read_fields(key, kind, |fields| {
        found = fields.is_some();
        f(fields)
    })?;
    ctx.hit(key, found);
    match frame {
        Some(frame) => reply(frame),
        None => error(super::WRONG_TYPE),
    }
}

/// A field of the hash or member of the set `fields` chosen at random, as HRANDFIELD and
/// SRANDMEMBER without a count answer: nil if missing.
pub fn random_field(fields: Option<&FieldReader>) -> engine::Result<Frame> {
    let picked = match fields {
        Some(f) => f.random()?,
        None => None,
    };
    Ok(picked.map_or(Frame::Null, |(field, _)| Frame::Bulk(field)))
}

/// Stores a STORE form's result at `destination`: the collection `packed` of `kind`
/// replaces whatever the key held, with no expiry, firing `event` of `class`; an empty
/// one deletes the key, firing `del` if it existed. The caller runs alone.
pub fn store_result(
    ctx: &Ctx,
    destination: &[u8],
    kind: Kind,
    packed: Vec<u8>,
    class: u32,
    event: &'static str,
) -> engine::Result<()> {
    if packed::count(&packed) == 0 {
        if ctx.db().remove(destination)? {
            ctx.notify(GENERIC, "del", destination);
        }
    } else {
        ctx.db()
            .set_entry(destination, &Entry::collection(kind, packed, None))?;
        ctx.notify(class, event, destination);
    }
    Ok(())
}

/// Fires `event` of `class` if the edit wrote, then `del` if it emptied the key: the
/// order Redis notifies in.
pub fn notify_edit<R>(ctx: &Ctx, edited: &Edited<R>, class: u32, event: &'static str, key: &[u8]) {
    if edited.wrote {
        ctx.notify(class, event, key);
    }
    if edited.emptied {
        ctx.notify(GENERIC, "del", key);
    }
}

/// `HSCAN | SSCAN | ZSCAN key cursor [MATCH pattern] [COUNT count]`: a hash, set or
/// sorted set split into nodes page by page (see `FieldReader::scan`), anything else
/// whole in one page with cursor 0, as Redis answers for its small encodings (any
/// cursor is accepted, as Redis accepts one it did not give). The pattern matches the
/// field or member; a hash's values and a sorted set's scores come with them.
pub fn scan(ctx: &Ctx, args: &[Vec<u8>], kind: Kind) -> Reply {
    let Some(cursor) = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return error("ERR invalid cursor");
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10;
    for option in args[3..].chunks(2) {
        let [name, value] = option else {
            return error(SYNTAX_ERROR);
        };
        match upper(name).as_slice() {
            b"MATCH" => pattern = Some(value),
            b"COUNT" => match parse_integer(value) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return error(SYNTAX_ERROR),
                None => return error(NOT_AN_INTEGER),
            },
            _ => return error(SYNTAX_ERROR),
        }
    }
    let wanted = |field: &[u8]| pattern.is_none_or(|p| glob_match(p, field, false));
    let page = |next: u64, items: Vec<Frame>| {
        Frame::Array(vec![Frame::bulk(next.to_string()), Frame::Array(items)])
    };
    if kind == Kind::ZSet {
        return super::sorted_sets::answer_zset(ctx, &args[1], |zset| {
            let mut items = Vec::new();
            let next = match zset {
                None => 0,
                Some(zset) => zset.scan(cursor, count, |member, score| {
                    if wanted(member) {
                        items.push(Frame::Bulk(member.to_vec()));
                        items.push(Frame::Bulk(scanned_score(score).into_bytes()));
                    }
                })?,
            };
            Ok(page(next, items))
        });
    }
    answer_fields(ctx, &args[1], kind, |fields| {
        let mut items = Vec::new();
        let next = match fields {
            None => 0,
            Some(fields) => fields.scan(cursor, count, |field, value| {
                if wanted(field) {
                    items.push(Frame::Bulk(field.to_vec()));
                    if kind == Kind::Hash {
                        items.push(Frame::Bulk(value.to_vec()));
                    }
                }
            })?,
        };
        Ok(page(next, items))
    })
}

/// A score as ZSCAN shows it: as Redis's listpack stores it, an integer when the
/// score is one within half of i64's range, else `%.17g`.
fn scanned_score(score: f64) -> String {
    let limit = (i64::MAX / 2) as f64;
    if score.fract() == 0.0 && (-limit..=limit).contains(&score) {
        (score as i64).to_string()
    } else {
        resp::format_double(score)
    }
}

/// A blocking command's timeout, in seconds (fractions allowed; 0 waits forever), as
/// Redis reads it.
pub fn parse_timeout(arg: &[u8]) -> Result<Option<std::time::Duration>, &'static str> {
    const NOT_A_FLOAT: &str = "ERR timeout is not a float or out of range";
    let text = std::str::from_utf8(arg).map_err(|_| NOT_A_FLOAT)?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err(NOT_A_FLOAT);
    }
    let seconds: f64 = text.parse().map_err(|_| NOT_A_FLOAT)?;
    if seconds.is_nan() {
        return Err(NOT_A_FLOAT);
    }
    // Whole milliseconds, as Redis truncates them.
    let ms = (seconds * 1000.0).trunc();
    if ms < 0.0 {
        return Err("ERR timeout is negative");
    }
    let now = crate::entry::now_ms() as f64;
    if ms >= i64::MAX as f64 - now {
        return Err("ERR timeout is out of range");
    }
    Ok((ms > 0.0).then(|| std::time::Duration::from_millis(ms as u64)))
}

/// The `numkeys key ... END [COUNT count]` of LMPOP and ZMPOP, from `args[0]` (the
/// count of keys): the keys, whether the end is the second of `ends`, and the count.
/// Checked in Redis's order and words.
pub fn multi_pop_args<'a>(
    args: &'a [Vec<u8>],
    ends: [&[u8]; 2],
) -> Result<(&'a [Vec<u8>], bool, usize), &'static str> {
    let n = match super::parse_integer(&args[0]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    // The end word must follow the keys.
    if n + 1 >= args.len() as u64 {
        return Err(super::SYNTAX_ERROR);
    }
    let n = n as usize;
    let second = match &args[1 + n] {
        end if end.eq_ignore_ascii_case(ends[0]) => false,
        end if end.eq_ignore_ascii_case(ends[1]) => true,
        _ => return Err(super::SYNTAX_ERROR),
    };
    let count = match &args[2 + n..] {
        [] => 1,
        [word, count] if word.eq_ignore_ascii_case(b"COUNT") => match super::parse_integer(count) {
            Some(c) if c >= 1 => c as usize,
            _ => return Err("ERR count should be greater than 0"),
        },
        _ => return Err(super::SYNTAX_ERROR),
    };
    Ok((&args[1..1 + n], second, count))
}

/// The most picks a negative count (which may repeat elements) asks for. Redis has no
/// bound and builds whatever reply is asked; hotkv keeps a reply's memory bounded.
pub const MAX_REPEATS: usize = 10_000_000;
pub const TOO_MANY_REPEATS: &str =
    "ERR count is too large: hotkv returns at most 10000000 random elements at once";

/// The `[count [WITHVALUES | WITHSCORES]]` of HRANDFIELD and ZRANDMEMBER (`pair_word`
/// the option's name), checked in Redis's order and words: the count, and whether the
/// values or scores are wanted too.
pub fn random_count(
    args: &[Vec<u8>],
    pair_word: &[u8],
) -> Result<(Option<i64>, bool), &'static str> {
    let (count, pairs) = match args {
        [] => return Ok((None, false)),
        [n] => (n, false),
        [n, w] if w.eq_ignore_ascii_case(pair_word) => (n, true),
        _ => return Err(super::SYNTAX_ERROR),
    };
    match super::parse_integer(count) {
        None => Err(super::NOT_AN_INTEGER),
        Some(i64::MIN) => Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
        // Redis refuses a repeat count whose doubling (with the values) could overflow.
        Some(n) if n < -(i64::MAX / 2) => Err("ERR value is out of range"),
        Some(n) if n < -(MAX_REPEATS as i64) => Err(TOO_MANY_REPEATS),
        Some(n) => Ok((Some(n), pairs)),
    }
}

/// The elements a random pick takes (HRANDFIELD, SRANDMEMBER, SPOP): `count` distinct
/// positions out of `len` if `distinct`, else `count` positions that may repeat.
pub fn random_positions(len: usize, count: usize, distinct: bool) -> Vec<usize> {
    use rand::seq::index::sample;
    use rand::Rng;
    if len == 0 {
        return Vec::new();
    }
    if distinct {
        let mut picked = sample(&mut rand::thread_rng(), len, count.min(len)).into_vec();
        picked.sort_unstable();
        picked
    } else {
        let mut rng = rand::thread_rng();
        (0..count).map(|_| rng.gen_range(0..len)).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scanned_scores_print_as_a_listpack_holds_them() {
        assert_eq!(super::scanned_score(1e17), "100000000000000000");
        assert_eq!(super::scanned_score(-0.0), "0");
        assert_eq!(super::scanned_score(1.5), "1.5");
        assert_eq!(super::scanned_score(1e19), "1e+19");
        assert_eq!(super::scanned_score(f64::INFINITY), "inf");
    }
}
