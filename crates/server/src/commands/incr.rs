//! INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT: atomic read-modify-writes that keep the
//! key's expiry, as Redis does.

use resp::Frame;

use super::{error, parse_integer, reply, Ctx, Reply, NOT_AN_INTEGER, WRONG_TYPE};
use crate::db::Change;
use crate::entry::{Entry, Kind};
use crate::keyspace_events::STRING;
use crate::long_double::LongDouble;

fn add(ctx: &mut Ctx, key: &[u8], delta: i64) -> Reply {
    let result = ctx.db().update(key, Kind::String, |e| {
        let (current, deadline) = match e {
            None => (0, None),
            Some(e) if !e.is_string() => return (Change::Keep, Err(WRONG_TYPE)),
            Some(e) => match parse_integer(&e.value) {
                Some(n) => (n, e.deadline),
                None => return (Change::Keep, Err(NOT_AN_INTEGER)),
            },
        };
        match current.checked_add(delta) {
            Some(sum) => (
                Change::Put(Entry::plain(sum.to_string().into_bytes(), deadline)),
                Ok(sum),
            ),
            None => (
                Change::Keep,
                Err("ERR increment or decrement would overflow"),
            ),
        }
    })?;
    match result {
        Ok(n) => {
            ctx.notify(STRING, "incrby", key);
            reply(Frame::Integer(n))
        }
        Err(e) => error(e),
    }
}

pub fn incr(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    add(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    add(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match parse_integer(&args[2]) {
        Some(d) => add(ctx, &args[1], d),
        None => error(NOT_AN_INTEGER),
    }
}

pub fn decrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match parse_integer(&args[2]) {
        Some(d) => match d.checked_neg() {
            Some(d) => add(ctx, &args[1], d),
            None => error("ERR decrement would overflow"),
        },
        None => error(NOT_AN_INTEGER),
    }
}

/// A float as Redis's INCRBYFLOAT reads one: the whole string, as `strtold` reads it,
/// with no leading space and at most Redis's buffer's length.
pub(super) fn parse_float(b: &[u8]) -> Option<LongDouble> {
    if b.len() >= MAX_FLOAT_TEXT || b.first().is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    LongDouble::parse(b)
}

/// Redis copies a float's text into a buffer of this many bytes first.
const MAX_FLOAT_TEXT: usize = 5 * 1024;

pub fn incrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(delta) = parse_float(&args[2]) else {
        return error("ERR value is not a valid float");
    };
    let result = ctx.db().update(&args[1], Kind::String, |e| {
        let (current, deadline) = match e {
            None => (LongDouble::ZERO, None),
            Some(e) if !e.is_string() => return (Change::Keep, Err(WRONG_TYPE)),
            Some(e) => match parse_float(&e.value) {
                Some(n) => (n, e.deadline),
                None => return (Change::Keep, Err("ERR value is not a valid float")),
            },
        };
        let sum = current.add(delta);
        if sum.is_infinite() {
            return (
                Change::Keep,
                Err("ERR increment would produce NaN or Infinity"),
            );
        }
        let text = sum.to_human_string();
        (
            Change::Put(Entry::plain(text.clone().into_bytes(), deadline)),
            Ok(text),
        )
    })?;
    match result {
        Ok(text) => {
            ctx.notify(STRING, "incrbyfloat", &args[1]);
            reply(Frame::Bulk(text.into_bytes()))
        }
        Err(e) => error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_redis_reads_them() {
        let reads = |t: &[u8]| parse_float(t).is_some();
        for good in [
            &b"1.5"[..],
            b"5.0e3",
            b"0x10",
            b"-0X1.8p1",
            b"0x.8",
            b"0x1p+4",
            b"Infinity",
            b"-inf",
            b"1e-400",
            b"0e-5000",
            b"1.",
            b".5",
            b"+4",
            b"1e4932",
            b"0x1p16383",
        ] {
            assert!(reads(good), "{good:?}");
        }
        for bad in [
            &b" 1"[..],
            b"1 ",
            b"nan",
            b"",
            b"0x",
            b"0x1p",
            b"0x1g",
            b".",
            b"1e",
            b"e5",
            // Over- and underflows of a long double; exponents past any range.
            b"1e-5000",
            b"0x1p-20000",
            b"1e4933",
            b"1e400000",
            b"0x1p16384",
            b"1e-99999999999",
            b"1e99999999999",
            b"0x1p-99999999999",
        ] {
            assert!(!reads(bad), "{bad:?}");
        }
        assert!(!reads(&vec![b'1'; MAX_FLOAT_TEXT]));
    }

    /// Sums as redis-server 7.0 on x86-64 printed them (its long double).
    #[test]
    fn sums_print_as_redis_prints_them() {
        let sum = |a: &str, b: &str| {
            let (a, b) = (
                parse_float(a.as_bytes()).unwrap(),
                parse_float(b.as_bytes()).unwrap(),
            );
            a.add(b).to_human_string()
        };
        assert_eq!(sum("10.5", "0.1"), "10.6");
        assert_eq!(sum("17179869184", "1.5"), "17179869185.5");
        assert_eq!(sum("1e20", "0"), "100000000000000000000");
        assert_eq!(sum("1.1", "2.2"), "3.3");
        assert_eq!(sum("0.7", "1.0000000000000002"), "1.7000000000000002");
        assert_eq!(sum("0", "0.024390243902439025"), "0.02439024390243902");
        assert_eq!(sum("0.02439024390243902", "-0.024390243902439025"), "0");
        assert_eq!(
            sum("3.7416", "123456789.123456789"),
            "123456792.86505678899993654"
        );
        assert_eq!(sum("1", "-1.1"), "-0.1");
        assert_eq!(sum("0", "-0"), "0");
        assert_eq!(sum("1.5e-10", "0"), "0.00000000015");
        assert_eq!(sum("1e-18", "0"), "0");
        assert_eq!(sum("-1e-17", "0"), "-0.00000000000000001");
    }
}
