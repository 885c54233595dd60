//! BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
//! [OVERFLOW WRAP|SAT|FAIL] ...; BITFIELD_RO key [GET type offset] ...: a string as an
//! array of integers of any width from 1 to 64 bits (`i1`..`i64`, `u1`..`u63`), at any
//! bit offset (`#N`: the Nth integer of that width), as Redis reads and writes them:
//! bit 0 is the most significant bit of the first byte, integers are big-endian.
//!
//! As in Redis, every operation is parsed before any runs (a bad one fails the whole
//! command), a write first grows the string with zero bytes to the furthest bit any
//! write reaches (creating the key, even if every write then fails under OVERFLOW
//! FAIL), and the `setbit` event is published only if some write changed a value or
//! the string was created or grown.

use resp::Frame;

use super::{error, parse_integer, reply, upper, Ctx, Reply, SYNTAX_ERROR, WRONG_TYPE};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::keyspace_events::STRING;

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy)]
struct Field {
    signed: bool,
    bits: u32,
    offset: u64,
}

#[derive(Clone, Copy)]
enum Op {
    Get(Field),
    Set(Field, i64, Overflow),
    IncrBy(Field, i64, Overflow),
}

pub fn bitfield(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, false)
}

pub fn bitfield_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, true)
}

fn run(ctx: &mut Ctx, args: &[Vec<u8>], read_only: bool) -> Reply {
    let ops = match parse(ctx, &args[2..]) {
        Ok(ops) => ops,
        Err(e) => return error(e),
    };
    let furthest_write = ops
        .iter()
        .filter_map(|op| match op {
            Op::Get(_) => None,
            Op::Set(f, ..) | Op::IncrBy(f, ..) => Some(f.offset + u64::from(f.bits) - 1),
        })
        .max();
    let Some(furthest) = furthest_write else {
        let found = ctx.read_of(&args[1], Kind::String)?;
        if found.as_ref().is_some_and(|e| !e.is_string()) {
            return error(WRONG_TYPE);
        }
        let value = found.map(|e| e.value).unwrap_or_default();
        let replies = ops
            .iter()
            .map(|op| match op {
                Op::Get(f) => Frame::Integer(get(&value, *f)),
                _ => unreachable!("no writes"),
            })
            .collect();
        return reply(Frame::Array(replies));
    };
    if read_only {
        return error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let outcome = ctx.db().update(&args[1], Kind::String, |e| {
        if e.is_some_and(|e| !e.is_string()) {
            return (Change::Keep, None);
        }
        let (mut value, deadline) = e.map_or((Vec::new(), None), |e| (e.value.clone(), e.deadline));
        let needed = (furthest >> 3) as usize + 1;
        let grown = e.is_none() || value.len() < needed;
        if value.len() < needed {
            value.resize(needed, 0);
        }
        // Writes that changed something (Redis's `changes`).
        let mut applied = 0;
        let replies: Vec<Frame> = ops
            .iter()
            .map(|op| match *op {
                Op::Get(f) => Frame::Integer(get(&value, f)),
                Op::Set(f, new, overflow) => {
                    let old = get(&value, f);
                    match fit(f, new, 0, overflow) {
                        Some(stored) => {
                            put(&mut value, f, stored);
                            applied += (grown || stored != old) as usize;
                            Frame::Integer(old)
                        }
                        None => Frame::Null,
                    }
                }
                Op::IncrBy(f, by, overflow) => {
                    let old = get(&value, f);
                    match fit(f, old, by, overflow) {
                        Some(stored) => {
                            put(&mut value, f, stored);
                            applied += (grown || stored != old) as usize;
                            Frame::Integer(stored)
                        }
                        None => Frame::Null,
                    }
                }
            })
            .collect();
        let change = if grown || applied > 0 {
            Change::Put(Entry::raw_string(value, deadline))
        } else {
            Change::Keep
        };
        (change, Some((replies, applied > 0)))
    })?;
    let Some((replies, applied)) = outcome else {
        return error(WRONG_TYPE);
    };
    if applied {
        ctx.notify(STRING, "setbit", &args[1]);
    }
    reply(Frame::Array(replies))
}

/// The operations, checked as Redis checks them, in order.
fn parse(ctx: &Ctx, mut rest: &[Vec<u8>]) -> Result<Vec<Op>, &'static str> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    while let Some((word, after)) = rest.split_first() {
        let word = upper(word);
        let operands = match word.as_slice() {
            b"GET" => 2,
            b"SET" | b"INCRBY" => 3,
            b"OVERFLOW" if !after.is_empty() => {
                overflow = match upper(&after[0]).as_slice() {
                    b"WRAP" => Overflow::Wrap,
                    b"SAT" => Overflow::Sat,
                    b"FAIL" => Overflow::Fail,
                    _ => return Err("ERR Invalid OVERFLOW type specified"),
                };
                rest = &after[1..];
                continue;
            }
            _ => return Err(SYNTAX_ERROR),
        };
        if after.len() < operands {
            return Err(SYNTAX_ERROR);
        }
        let (signed, bits) = field_type(&after[0])?;
        let offset = field_offset(ctx, &after[1], bits)?;
        let field = Field {
            signed,
            bits,
            offset,
        };
        ops.push(match word.as_slice() {
            b"GET" => Op::Get(field),
            op => {
                let n = parse_integer(&after[2]).ok_or(super::NOT_AN_INTEGER)?;
                if op == b"SET" {
                    Op::Set(field, n, overflow)
                } else {
                    Op::IncrBy(field, n, overflow)
                }
            }
        });
        rest = &after[operands..];
    }
    Ok(ops)
}

/// `i1`..`i64` or `u1`..`u63`, in lower case only, as Redis reads them.
fn field_type(arg: &[u8]) -> Result<(bool, u32), &'static str> {
    let (signed, digits) = match arg.split_first() {
        Some((b'i', digits)) => (true, digits),
        Some((b'u', digits)) => (false, digits),
        _ => return Err(BAD_TYPE),
    };
    match parse_integer(digits) {
        Some(bits) if bits >= 1 && bits <= if signed { 64 } else { 63 } => {
            Ok((signed, bits as u32))
        }
        _ => Err(BAD_TYPE),
    }
}

/// A bit offset, or `#N` for the Nth field of `bits` bits; within the longest string
/// allowed (`proto-max-bulk-len` bytes).
fn field_offset(ctx: &Ctx, arg: &[u8], bits: u32) -> Result<u64, &'static str> {
    let (n, scale) = match arg.strip_prefix(b"#") {
        Some(index) => (parse_integer(index), i64::from(bits)),
        None => (parse_integer(arg), 1),
    };
    let offset = n
        .and_then(|n| n.checked_mul(scale))
        .filter(|o| *o >= 0)
        .ok_or(BAD_OFFSET)? as u64;
    if offset >> 3 >= ctx.server.config.proto_max_bulk_len() as u64 {
        return Err(BAD_OFFSET);
    }
    Ok(offset)
}

/// The field's value (sign-extended if signed); bytes past the end read as zeros.
fn get(value: &[u8], f: Field) -> i64 {
    let mut raw: u64 = 0;
    for i in 0..u64::from(f.bits) {
        let bit = f.offset + i;
        let set = value
            .get((bit >> 3) as usize)
            .is_some_and(|b| b & (0x80 >> (bit & 7)) != 0);
        raw = (raw << 1) | set as u64;
    }
    if f.signed && f.bits < 64 && raw >> (f.bits - 1) & 1 == 1 {
        raw |= u64::MAX << f.bits;
    }
    raw as i64
}

/// Writes the low `bits` bits of `n` into the field; the string is long enough.
fn put(value: &mut [u8], f: Field, n: i64) {
    for i in 0..u64::from(f.bits) {
        let bit = f.offset + i;
        let on = (n as u64) >> (u64::from(f.bits) - 1 - i) & 1 == 1;
        let byte = &mut value[(bit >> 3) as usize];
        let mask = 0x80 >> (bit & 7);
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// `base + by` as the field stores it under `overflow`, or `None` if it does not fit
/// and the policy is FAIL. WRAP keeps the low bits (two's complement for signed
/// fields), SAT clamps to the type's range.
fn fit(f: Field, base: i64, by: i64, overflow: Overflow) -> Option<i64> {
    let direction = if f.signed {
        signed_overflow(base, by, f.bits)
    } else {
        // A SET's value of an unsigned field is read as Redis reads it: as a u64.
        let max = (1i128 << f.bits) - 1;
        let sum = i128::from(base as u64) + i128::from(by);
        (sum > max) as i8 - (sum < 0) as i8
    };
    if direction == 0 {
        return Some(base.wrapping_add(by));
    }
    let (min, max) = if f.signed {
        let max = if f.bits == 64 {
            i64::MAX
        } else {
            (1i64 << (f.bits - 1)) - 1
        };
        (-max - 1, max)
    } else {
        (0, ((1u64 << f.bits) - 1) as i64)
    };
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if direction > 0 { max } else { min }),
        Overflow::Wrap => {
            let low = (base as u64).wrapping_add(by as u64) & (u64::MAX >> (64 - f.bits));
            let negative = f.signed && f.bits < 64 && low >> (f.bits - 1) & 1 == 1;
            Some(if negative {
                (low | u64::MAX << f.bits) as i64
            } else {
                low as i64
            })
        }
    }
}

/// Whether `value + incr` passes a signed field's maximum (1) or minimum (-1), decided
/// exactly as Redis 7.0 decides it, including its wrapping bounds: a SET (`incr` 0) of
/// a value so far below the minimum that `max - value` wraps counts as passing the
/// maximum, so SAT stores the maximum there.
fn signed_overflow(value: i64, incr: i64, bits: u32) -> i8 {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        1
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        -1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(signed: bool, bits: u32, offset: u64) -> Field {
        Field {
            signed,
            bits,
            offset,
        }
    }

    #[test]
    fn fields_read_back_what_was_written_at_any_offset_and_width() {
        let mut value = vec![0u8; 20];
        for bits in 1..=64u32 {
            for offset in [0u64, 1, 7, 13, 40] {
                let f = field(true, bits, offset);
                let n = if bits == 64 {
                    i64::MIN + 5
                } else {
                    -(1i64 << (bits - 1))
                };
                put(&mut value, f, n);
                assert_eq!(get(&value, f), n, "i{bits} at {offset}");
                if bits < 64 {
                    let u = field(false, bits, offset);
                    let top = ((1u64 << bits) - 1) as i64;
                    put(&mut value, u, top);
                    assert_eq!(get(&value, u), top, "u{bits} at {offset}");
                }
            }
        }
    }

    #[test]
    fn overflow_as_redis_handles_it() {
        let u8f = field(false, 8, 0);
        let i8f = field(true, 8, 0);
        assert_eq!(fit(u8f, 250, 10, Overflow::Wrap), Some(4));
        assert_eq!(fit(u8f, 250, 10, Overflow::Sat), Some(255));
        assert_eq!(fit(u8f, 250, 10, Overflow::Fail), None);
        assert_eq!(fit(u8f, 5, -10, Overflow::Sat), Some(0));
        assert_eq!(fit(u8f, 5, -10, Overflow::Wrap), Some(251));
        assert_eq!(fit(i8f, 120, 10, Overflow::Wrap), Some(-126));
        assert_eq!(fit(i8f, -120, -10, Overflow::Sat), Some(-128));
        // SET of a negative value in an unsigned field: read as a huge u64.
        assert_eq!(fit(u8f, -1, 0, Overflow::Sat), Some(255));
        assert_eq!(fit(u8f, -1, 0, Overflow::Wrap), Some(255));
        let i64f = field(true, 64, 0);
        assert_eq!(fit(i64f, i64::MAX, 1, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(fit(i64f, i64::MAX, 1, Overflow::Sat), Some(i64::MAX));
        assert_eq!(
            fit(field(false, 63, 0), 0, -1, Overflow::Wrap),
            Some(i64::MAX)
        );
        // Redis's wrapping bound: far below the minimum saturates to the maximum.
        assert_eq!(
            fit(field(true, 31, 0), i64::MIN, 0, Overflow::Sat),
            Some((1 << 30) - 1)
        );
        assert_eq!(
            fit(field(true, 31, 0), -(1 << 40), 0, Overflow::Sat),
            Some(-(1 << 30))
        );
    }
}
