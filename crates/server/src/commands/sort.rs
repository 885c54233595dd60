//! SORT and SORT_RO: the elements of a list, set or sorted set, sorted by their own
//! value or by keys named after them (`BY`), optionally with other keys' values
//! (`GET`), a range (`LIMIT`) and, for SORT, stored as a list (`STORE`).

use std::cmp::Ordering;

use resp::Frame;

use super::{error, int, parse_integer, reply, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use super::{upper, WRONG_TYPE};
use crate::entry::Kind;
use crate::keyspace_events::LIST;
use crate::packed;

/// A call's options, as Redis parses them: later ones win, LIMIT defaults to all.
struct Options<'a> {
    by: Option<&'a [u8]>,
    /// A BY named a pattern without `*`: the elements keep their own order.
    dont_sort: bool,
    offset: i64,
    count: i64,
    gets: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

/// `reads_every_key`: whether the client may read any key (see
/// [`super::Session::reads_every_key_in`]); without it, a BY that names other keys and
/// any GET are refused, as Redis refuses them, since those keys escape its key check.
fn parse_options(
    args: &[Vec<u8>],
    read_only: bool,
    reads_every_key: bool,
) -> Result<Options<'_>, &'static str> {
    let mut o = Options {
        by: None,
        dont_sort: false,
        offset: 0,
        count: -1,
        gets: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
    };
    let mut at = 2;
    while at < args.len() {
        let left = args.len() - at - 1;
        match upper(&args[at]).as_slice() {
            b"ASC" => o.desc = false,
            b"DESC" => o.desc = true,
            b"ALPHA" => o.alpha = true,
            b"LIMIT" if left >= 2 => {
                let (Some(offset), Some(count)) =
                    (parse_integer(&args[at + 1]), parse_integer(&args[at + 2]))
                else {
                    return Err(NOT_AN_INTEGER);
                };
                (o.offset, o.count) = (offset, count);
                at += 2;
            }
            b"STORE" if left >= 1 && !read_only => {
                o.store = Some(&args[at + 1]);
                at += 1;
            }
            b"BY" if left >= 1 => {
                let pattern = args[at + 1].as_slice();
                let names_keys = pattern.contains(&b'*');
                if names_keys && !reads_every_key {
                    return Err(
                        "ERR BY option of SORT denied due to insufficient ACL permissions.",
                    );
                }
                // As in Redis, a later BY with a `*` does not undo an earlier one without.
                o.dont_sort |= !names_keys;
                o.by = Some(pattern);
                at += 1;
            }
            b"GET" if left >= 1 => {
                if !reads_every_key {
                    return Err(
                        "ERR GET option of SORT denied due to insufficient ACL permissions.",
                    );
                }
                o.gets.push(&args[at + 1]);
                at += 1;
            }
            _ => return Err(SYNTAX_ERROR),
        }
        at += 1;
    }
    Ok(o)
}

/// The key's value `pattern` names for `element`: `#` is the element itself; the first
/// `*` takes the element's place in a key name, and `->field` after it reads that
/// field of a hash. `None` if the pattern has no `*`, or the key is missing or of
/// another type (a string, or a hash when a field is named).
fn lookup(ctx: &Ctx, pattern: &[u8], element: &[u8]) -> engine::Result<Option<Vec<u8>>> {
    if pattern == b"#" {
        return Ok(Some(element.to_vec()));
    }
    let Some(star) = pattern.iter().position(|&b| b == b'*') else {
        return Ok(None);
    };
    let after = &pattern[star + 1..];
    let (suffix, field) = match after.windows(2).position(|w| w == b"->") {
        Some(arrow) if arrow + 2 < after.len() => (&after[..arrow], Some(&after[arrow + 2..])),
        _ => (after, None),
    };
    let key = [&pattern[..star], element, suffix].concat();
    Ok(match (ctx.read(&key)?, field) {
        (Some(e), None) if e.is_string() => Some(e.value),
        (Some(e), Some(field)) if e.kind == Kind::Hash => packed::pairs(&e.value)
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.to_vec()),
        _ => None,
    })
}

/// An element's weight as Redis's numeric SORT reads it (`strtod` over the whole
/// value): leading space allowed, an empty value is 0; `None` for anything else that
/// is not a number, NaN, or out of a double's range.
fn weight(value: &[u8]) -> Option<f64> {
    if value.is_empty() {
        return Some(0.0);
    }
    let text = std::str::from_utf8(value).ok()?;
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let x: f64 = text.parse().ok()?;
    let spelled_infinite = text.to_ascii_lowercase().contains("inf");
    let overflowed = x.is_infinite() && !spelled_infinite;
    let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
    let underflowed =
        (x == 0.0 || x.is_subnormal()) && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    (!x.is_nan() && !overflowed && !underflowed).then_some(x)
}

/// What an element is sorted by.
enum Key {
    Number(f64),
    /// ALPHA with BY: the named value, or `None` (sorts first) if there is none.
    Text(Option<Vec<u8>>),
    /// ALPHA without BY: the element itself.
    Itself,
}

pub fn sort(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    sort_generic(ctx, args, false)
}

pub fn sort_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    sort_generic(ctx, args, true)
}

fn sort_generic(ctx: &Ctx, args: &[Vec<u8>], read_only: bool) -> Reply {
    let mut o = match parse_options(args, read_only, ctx.session.reads_every_key_in(args)) {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let found = ctx.read(&args[1])?;
    let (kind, elements): (Kind, Vec<Vec<u8>>) = match &found {
        None => (Kind::List, Vec::new()),
        Some(e) => match e.kind {
            Kind::List | Kind::Set => (
                e.kind,
                packed::elements(&e.value).map(<[u8]>::to_vec).collect(),
            ),
            Kind::ZSet => (
                e.kind,
                packed::scored(&e.value).map(|(m, _)| m.to_vec()).collect(),
            ),
            _ => return error(WRONG_TYPE),
        },
    };
    // A set has no order of its own to keep: stored, it is sorted as text so that
    // the result does not depend on how it is held.
    if o.dont_sort && kind == Kind::Set && o.store.is_some() {
        (o.dont_sort, o.alpha, o.by) = (false, true, None);
    }
    let len = elements.len() as i64;
    let mut start = o.offset.max(0);
    let mut end = if o.count < 0 {
        len - 1
    } else {
        start.saturating_add(o.count) - 1
    };
    if start >= len {
        (start, end) = (len - 1, len - 2);
    }
    end = end.min(len - 1);
    let mut elements = elements;
    if o.dont_sort {
        // Lists and sorted sets keep their order, reversed by DESC; a set its own.
        if o.desc && kind != Kind::Set {
            elements.reverse();
        }
    } else {
        let mut keyed = Vec::with_capacity(elements.len());
        for element in elements {
            let by = match o.by {
                Some(pattern) => lookup(ctx, pattern, &element)?,
                None => None,
            };
            let key = match (o.alpha, o.by) {
                (true, Some(_)) => Key::Text(by),
                (true, None) => Key::Itself,
                (false, Some(_)) => match by.as_deref().map(weight) {
                    None => Key::Number(0.0),
                    Some(Some(x)) => Key::Number(x),
                    Some(None) => {
                        return error("ERR One or more scores can't be converted into double")
                    }
                },
                (false, None) => match weight(&element) {
                    Some(x) => Key::Number(x),
                    None => return error("ERR One or more scores can't be converted into double"),
                },
            };
            keyed.push((key, element));
        }
        keyed.sort_by(|(ka, a), (kb, b)| {
            let order = match (ka, kb) {
                (Key::Number(x), Key::Number(y)) => x
                    .partial_cmp(y)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.cmp(b)),
                (Key::Text(x), Key::Text(y)) => x.cmp(y),
                _ => a.cmp(b),
            };
            if o.desc {
                order.reverse()
            } else {
                order
            }
        });
        elements = keyed.into_iter().map(|(_, e)| e).collect();
    }
    let chosen = if end >= start {
        &elements[start as usize..=end as usize]
    } else {
        &[]
    };
    let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(chosen.len() * o.gets.len().max(1));
    for element in chosen {
        if o.gets.is_empty() {
            out.push(Some(element.clone()));
        }
        for pattern in &o.gets {
            out.push(lookup(ctx, pattern, element)?);
        }
    }
    let Some(destination) = o.store else {
        let frames = out
            .into_iter()
            .map(|v| v.map_or(Frame::Null, Frame::Bulk))
            .collect();
        return reply(Frame::Array(frames));
    };
    let list = packed::pack(out.iter().map(|v| v.as_deref().unwrap_or_default()));
    super::collections::store_result(ctx, destination, Kind::List, list, LIST, "sortstore")?;
    int(out.len() as i64)
}

/// Where SORT's STORE key is, found as Redis's own key-finding function for SORT finds
/// it: options are skipped by their known argument counts, and the last STORE wins.
pub fn store_key(args: &[Vec<u8>]) -> Option<usize> {
    let mut found = None;
    let mut at = 2;
    while at < args.len() {
        match upper(&args[at]).as_slice() {
            b"LIMIT" => at += 2,
            b"GET" | b"BY" => at += 1,
            b"STORE" if at + 1 < args.len() => found = Some(at + 1),
            _ => {}
        }
        at += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_read_as_strtod_reads_them() {
        assert_eq!(weight(b""), Some(0.0));
        assert_eq!(weight(b" \t1.5"), Some(1.5));
        assert_eq!(weight(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(weight(b"1 "), None);
        assert_eq!(weight(b"  "), None);
        assert_eq!(weight(b"nan"), None);
        assert_eq!(weight(b"1e400"), None);
        assert_eq!(weight(b"1e-400"), None);
        assert_eq!(weight(b"abc"), None);
    }

    #[test]
    fn the_store_key_is_found_as_redis_finds_it() {
        let call = |s: &str| {
            s.split(' ')
                .map(|a| a.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        assert_eq!(store_key(&call("sort k")), None);
        assert_eq!(store_key(&call("sort k STORE d")), Some(3));
        assert_eq!(
            store_key(&call("sort k store a LIMIT 0 1 STORE b")),
            Some(8)
        );
        // The arguments of GET, BY and LIMIT are skipped, even when they say STORE.
        assert_eq!(store_key(&call("sort k GET store d")), None);
        assert_eq!(store_key(&call("sort k LIMIT store d x")), None);
        assert_eq!(store_key(&call("sort k STORE")), None);
    }
}
