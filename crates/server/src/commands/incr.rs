//! INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT: atomic read-modify-writes that keep the
//! key's expiry, as Redis does.

use resp::Frame;

use super::{error, parse_integer, reply, Ctx, Reply, NOT_AN_INTEGER};
use crate::db::Change;

fn add(ctx: &mut Ctx, key: &[u8], delta: i64) -> Reply {
    let result = ctx.db().update(key, |e| {
        let (current, deadline) = match e {
            None => (0, None),
            Some(e) => match parse_integer(&e.value) {
                Some(n) => (n, e.deadline),
                None => return (Change::Keep, Err(NOT_AN_INTEGER)),
            },
        };
        match current.checked_add(delta) {
            Some(sum) => (Change::Put(sum.to_string().into_bytes(), deadline), Ok(sum)),
            None => (
                Change::Keep,
                Err("ERR increment or decrement would overflow"),
            ),
        }
    })?;
    match result {
        Ok(n) => reply(Frame::Integer(n)),
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

/// A float as Redis's INCRBYFLOAT reads one: the whole string, no spaces.
fn parse_float(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty()
        || s.starts_with(|c: char| c.is_ascii_whitespace())
        || s.ends_with(|c: char| c.is_ascii_whitespace())
    {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// The result's text as Redis prints it: Redis adds in `long double` and prints 17
/// decimals with trailing zeros trimmed, so sums like 1.1 + 2.2 read "3.3". In `f64`
/// the same is 15 significant digits (what a double holds exactly), trimmed the same
/// way; never in exponent form.
fn format_float(v: f64) -> String {
    let int_digits = if v == 0.0 {
        1
    } else {
        v.abs().log10().floor() as i64 + 1
    };
    let decimals = (15 - int_digits).clamp(0, 340) as usize;
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.truncate(s.trim_end_matches('0').trim_end_matches('.').len());
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

pub fn incrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(delta) = parse_float(&args[2]) else {
        return error("ERR value is not a valid float");
    };
    let result = ctx.db().update(&args[1], |e| {
        let (current, deadline) = match e {
            None => (0.0, None),
            Some(e) => match parse_float(&e.value) {
                Some(n) => (n, e.deadline),
                None => return (Change::Keep, Err("ERR value is not a valid float")),
            },
        };
        let sum = current + delta;
        if !sum.is_finite() {
            return (
                Change::Keep,
                Err("ERR increment would produce NaN or Infinity"),
            );
        }
        let text = format_float(sum);
        (Change::Put(text.clone().into_bytes(), deadline), Ok(text))
    })?;
    match result {
        Ok(text) => reply(Frame::Bulk(text.into_bytes())),
        Err(e) => error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_and_print_as_redis_does() {
        assert_eq!(parse_float(b"1.5"), Some(1.5));
        assert_eq!(parse_float(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_float(b" 1"), None);
        assert_eq!(parse_float(b"1 "), None);
        assert_eq!(parse_float(b"nan"), None);
        assert_eq!(parse_float(b""), None);
        assert_eq!(format_float(10.5 + 0.1), "10.6");
        assert_eq!(format_float(17179869184.0 + 1.5), "17179869185.5");
        assert_eq!(format_float(1.0 + 5000.0), "5001");
        assert_eq!(format_float(1e20), "100000000000000000000");
        assert_eq!(format_float(1.1 + 2.2), "3.3");
        assert_eq!(format_float(0.1 + 0.2), "0.3");
        assert_eq!(format_float(-1.1 + 0.1), "-1");
        assert_eq!(format_float(0.0), "0");
        assert_eq!(format_float(-0.0), "0");
        assert_eq!(format_float(1.5e-10), "0.00000000015");
    }
}
