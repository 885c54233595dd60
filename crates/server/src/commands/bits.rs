//! SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP: a string as an array of bits, bit 0 being the most
//! significant bit of the first byte, as in Redis.

use super::{
    error, int, of_kind, parse_integer, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR, WRONG_TYPE,
};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::keyspace_events::{GENERIC, STRING};

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// A bit offset: at least 0 and inside the longest string allowed
/// (`proto-max-bulk-len` bytes).
fn offset(ctx: &Ctx, arg: &[u8]) -> Result<u64, &'static str> {
    match parse_integer(arg) {
        Some(n) if n >= 0 && (n as u64 >> 3) < ctx.server.config.proto_max_bulk_len() as u64 => {
            Ok(n as u64)
        }
        _ => Err(BAD_OFFSET),
    }
}

fn bit_at(value: &[u8], offset: u64) -> bool {
    value
        .get((offset >> 3) as usize)
        .is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

pub fn getbit(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let offset = match offset(ctx, &args[2]) {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let value = of_kind!(ctx, &args[1], String)
        .map(|e| e.value)
        .unwrap_or_default();
    int(bit_at(&value, offset) as i64)
}

/// `SETBIT key offset 0|1`: returns the bit's old value; grows the string with zero
/// bytes as needed and keeps the expiry.
pub fn setbit(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let offset = match offset(ctx, &args[2]) {
        Ok(o) => o,
        Err(e) => return error(e),
    };
    let on = match parse_integer(&args[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return error("ERR bit is not an integer or out of range"),
    };
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let old = ctx.db().update(&args[1], Kind::String, |e| {
        if e.is_some_and(|e| !e.is_string()) {
            return (Change::Keep, None);
        }
        let (mut value, deadline) = e.map_or((Vec::new(), None), |e| (e.value.clone(), e.deadline));
        let grown = e.is_none() || value.len() <= byte;
        if value.len() <= byte {
            value.resize(byte + 1, 0);
        }
        let old = value[byte] & mask != 0;
        // As Redis 7.0: a bit set to what it was changes nothing (and aborts no WATCH).
        if !grown && old == on {
            return (Change::Keep, Some((old, false)));
        }
        if on {
            value[byte] |= mask;
        } else {
            value[byte] &= !mask;
        }
        (
            Change::Put(Entry::raw_string(value, deadline)),
            Some((old, true)),
        )
    })?;
    let Some((old, changed)) = old else {
        return error(WRONG_TYPE);
    };
    if changed {
        ctx.notify(STRING, "setbit", &args[1]);
    }
    int(old as i64)
}

/// Redis's `start end [BYTE | BIT]` over a string of `len` bytes, as an inclusive
/// range of bit offsets, or `None` if empty. Negative positions count from the end;
/// both are clamped into the string.
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = if in_bits { len as i64 * 8 } else { len as i64 };
    let resolve = |p: i64| {
        if p < 0 {
            p.saturating_add(total).max(0)
        } else {
            p
        }
    };
    let (start, end) = (resolve(start), resolve(end).min(total - 1));
    if start > end {
        return None;
    }
    Some(if in_bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    })
}

/// `BYTE` or `BIT`, as the optional unit of a range.
fn unit(arg: &[u8]) -> Result<bool, &'static str> {
    match upper(arg).as_slice() {
        b"BYTE" => Ok(false),
        b"BIT" => Ok(true),
        _ => Err(SYNTAX_ERROR),
    }
}

fn integer(arg: &[u8]) -> Result<i64, &'static str> {
    parse_integer(arg).ok_or(NOT_AN_INTEGER)
}

/// Set bits in `value` within the inclusive bit range.
fn count_ones(value: &[u8], (lo, hi): (u64, u64)) -> u64 {
    let (first, last) = ((lo >> 3) as usize, (hi >> 3) as usize);
    // Masks keep the bits of the edge bytes that fall inside the range.
    let head = 0xFFu8 >> (lo & 7);
    let tail = 0xFFu8 << (7 - (hi & 7));
    if first == last {
        return (value[first] & head & tail).count_ones() as u64;
    }
    let middle: u64 = value[first + 1..last]
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum();
    (value[first] & head).count_ones() as u64 + middle + (value[last] & tail).count_ones() as u64
}

/// `BITCOUNT key [start end [BYTE | BIT]]`.
pub fn bitcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // Redis 7.0 looks the key up first: a missing key counts 0 whatever follows.
    let Some(entry) = of_kind!(ctx, &args[1], String) else {
        return int(0);
    };
    let value = entry.value;
    let range = match &args[2..] {
        [] => bit_range(value.len(), 0, -1, false),
        [start, end, rest @ ..] if rest.len() <= 1 => {
            // Redis 7.0's order: the numbers, then a range counted from the end and the
            // wrong way round answers 0 before the unit is looked at.
            let parsed = (|| {
                let (start, end) = (integer(start)?, integer(end)?);
                if start < 0 && end < 0 && start > end {
                    return Ok(None);
                }
                let in_bits = rest.first().map_or(Ok(false), |u| unit(u))?;
                Ok::<_, &str>(bit_range(value.len(), start, end, in_bits))
            })();
            match parsed {
                Ok(range) => range,
                Err(e) => return error(e),
            }
        }
        _ => return error(SYNTAX_ERROR),
    };
    int(range.map_or(0, |r| count_ones(&value, r)) as i64)
}

/// The first offset in the inclusive range whose bit is `want`.
fn first_bit(value: &[u8], (lo, hi): (u64, u64), want: bool) -> Option<u64> {
    // A whole byte that cannot hold the answer is skipped in one step.
    let skip = if want { 0x00 } else { 0xFF };
    let mut i = lo;
    while i <= hi {
        if i & 7 == 0 && i + 7 <= hi && value[(i >> 3) as usize] == skip {
            i += 8;
            continue;
        }
        if bit_at(value, i) == want {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// `BITPOS key bit [start [end [BYTE | BIT]]]`: the first bit equal to `bit` in the
/// range, or -1. A missing key is all zeros. Looking for a 0 with no end given, the
/// string counts as followed by zeros, so a string of all ones answers its length in
/// bits.
pub fn bitpos(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let want = match parse_integer(&args[2]) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return error("ERR The bit argument must be 1 or 0."),
        None => return error(NOT_AN_INTEGER),
    };
    let Some(entry) = of_kind!(ctx, &args[1], String) else {
        return int(if want { -1 } else { 0 });
    };
    let value = entry.value;
    let parsed = (|| match &args[3..] {
        [] => Ok((bit_range(value.len(), 0, -1, false), false)),
        [start] => Ok((bit_range(value.len(), integer(start)?, -1, false), false)),
        [start, end] => Ok((
            bit_range(value.len(), integer(start)?, integer(end)?, false),
            true,
        )),
        [start, end, u] => {
            let (start, in_bits) = (integer(start)?, unit(u)?);
            Ok((bit_range(value.len(), start, integer(end)?, in_bits), true))
        }
        _ => Err(SYNTAX_ERROR),
    })();
    let (range, end_given) = match parsed {
        Ok(p) => p,
        Err(e) => return error(e),
    };
    let Some((lo, hi)) = range else {
        return int(-1);
    };
    match first_bit(&value, (lo, hi), want) {
        Some(i) => int(i as i64),
        None if !want && !end_given => int(hi as i64 + 1),
        None => int(-1),
    }
}

/// `BITOP AND | OR | XOR | NOT destkey key...`: combines the sources byte by byte,
/// shorter ones (and missing keys) read as zeros, into `destkey`; an empty result
/// deletes it. Returns the result's length. Runs alone, so no one sees a source
/// change halfway.
pub fn bitop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let op = upper(&args[1]);
    // As Redis: the operation is checked before any key is read.
    match op.as_slice() {
        b"AND" | b"OR" | b"XOR" => {}
        b"NOT" if args.len() == 4 => {}
        b"NOT" => return error("ERR BITOP NOT must be called with a single source key."),
        _ => return error(SYNTAX_ERROR),
    }
    let mut sources = Vec::with_capacity(args.len() - 3);
    for key in &args[3..] {
        let found = of_kind!(ctx, key, String);
        sources.push(found.map(|e| e.value).unwrap_or_default());
    }
    let len = sources.iter().map(Vec::len).max().unwrap_or(0);
    let byte = |s: &Vec<u8>, i: usize| s.get(i).copied().unwrap_or(0);
    let result: Vec<u8> = match op.as_slice() {
        b"NOT" => sources[0].iter().map(|b| !b).collect(),
        b"AND" => (0..len)
            .map(|i| sources.iter().fold(0xFF, |acc, s| acc & byte(s, i)))
            .collect(),
        b"OR" => (0..len)
            .map(|i| sources.iter().fold(0, |acc, s| acc | byte(s, i)))
            .collect(),
        b"XOR" => (0..len)
            .map(|i| sources.iter().fold(0, |acc, s| acc ^ byte(s, i)))
            .collect(),
        _ => unreachable!("checked above"),
    };
    let len = result.len();
    if result.is_empty() {
        if ctx.db().remove(&args[2])? {
            ctx.notify(GENERIC, "del", &args[2]);
        }
    } else {
        ctx.db()
            .set_entry(&args[2], &Entry::raw_string(result, None))?;
        ctx.notify(STRING, "set", &args[2]);
    }
    int(len as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bits of `value`, most significant first, one per entry.
    fn bits(value: &[u8]) -> Vec<bool> {
        (0..value.len() as u64 * 8)
            .map(|i| bit_at(value, i))
            .collect()
    }

    proptest! {
        #[test]
        fn counting_and_searching_match_a_bit_by_bit_model(
            value in proptest::collection::vec(any::<u8>(), 1..40),
            a in any::<u16>(),
            b in any::<u16>(),
            want in any::<bool>(),
        ) {
            let n = value.len() as u64 * 8;
            let (lo, hi) = ((a as u64 % n).min(b as u64 % n), (a as u64 % n).max(b as u64 % n));
            let model = bits(&value);
            let ones = model[lo as usize..=hi as usize].iter().filter(|b| **b).count() as u64;
            prop_assert_eq!(count_ones(&value, (lo, hi)), ones);
            let first = (lo..=hi).find(|&i| model[i as usize] == want);
            prop_assert_eq!(first_bit(&value, (lo, hi), want), first);
        }

        #[test]
        fn ranges_stay_inside_the_string(
            len in 0usize..50,
            start in any::<i64>(),
            end in any::<i64>(),
            in_bits in any::<bool>(),
        ) {
            if let Some((lo, hi)) = bit_range(len, start, end, in_bits) {
                prop_assert!(lo <= hi && hi < len as u64 * 8, "{lo}..={hi} of {len} bytes");
            }
        }
    }

    #[test]
    fn ranges_count_from_the_end_and_clamp() {
        assert_eq!(bit_range(6, 1, -2, false), Some((8, 39)));
        assert_eq!(bit_range(6, -100, 2, false), Some((0, 23)));
        assert_eq!(bit_range(6, 5, 100, false), Some((40, 47)));
        assert_eq!(bit_range(6, 3, 2, false), None);
        assert_eq!(bit_range(0, 0, -1, false), None);
        assert_eq!(bit_range(2, 3, -2, true), Some((3, 14)));
    }
}
