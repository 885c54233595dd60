//! INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT: atomic read-modify-writes that keep the
//! key's expiry, as Redis does.

use resp::Frame;

use super::{error, parse_integer, reply, Ctx, Reply, NOT_AN_INTEGER};
use crate::db::Change;
use crate::entry::Entry;

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
    // Redis reads with strtold and refuses what it leaves unread, leading space,
    // NaN, and what over- or underflows (a range error with an infinite or zero result).
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.len() >= MAX_FLOAT_TEXT || s.starts_with(|c: char| c.is_ascii_whitespace())
    {
        return None;
    }
    let (v, digits, exponent) = match parse_hex_float(s) {
        Some(hex) => hex?,
        None => {
            let (mantissa, exponent) = s.split_once(['e', 'E']).unwrap_or((s, "0"));
            // The number parsed, so the exponent is digits.
            let exponent = parse_exponent(exponent).unwrap_or(0);
            (s.parse::<f64>().ok()?, mantissa, exponent)
        }
    };
    let written_infinite = s
        .trim_start_matches(['+', '-'])
        .get(..3)
        .is_some_and(|w| w.eq_ignore_ascii_case("inf"));
    let overflow = v.is_infinite() && !written_infinite;
    // A long double reaches down to 1e-4951: what f64 rounds to zero above that is
    // zero to Redis's 17 printed decimals too, so only below it is an error.
    let underflow = v == 0.0
        && exponent < LONG_DOUBLE_MIN_EXP10
        && digits.bytes().any(|c| c.is_ascii_hexdigit() && c != b'0');
    (!v.is_nan() && !overflow && !underflow).then_some(v)
}

const LONG_DOUBLE_MIN_EXP10: i32 = -4950;

/// An exponent's digits with an optional sign; one past `i32` saturates, since
/// it over- or underflows any float just the same.
fn parse_exponent(e: &str) -> Option<i32> {
    let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(e.parse().unwrap_or(if e.starts_with('-') {
        i32::MIN
    } else {
        i32::MAX
    }))
}

/// Redis copies a float's text into a buffer of this many bytes first.
const MAX_FLOAT_TEXT: usize = 5 * 1024;

/// C's hexadecimal float, `[+-]0x`, hex digits with an optional `.`, and an optional
/// binary exponent `p[+-]N`, which strtold reads too. `None` if `s` does not start
/// so; `Some(None)` if it does but is not such a number. Gives the value, its
/// digits, and its exponent in powers of ten.
fn parse_hex_float(s: &str) -> Option<Option<(f64, &str, i32)>> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let body = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    let (digits, exponent) = match body.split_once(['p', 'P']) {
        Some((digits, exponent)) => (digits, Some(exponent)),
        None => (body, None),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Some(None);
    }
    let mut mantissa = 0f64;
    for c in whole.chars().chain(fraction.chars()) {
        let Some(d) = c.to_digit(16) else {
            return Some(None);
        };
        mantissa = mantissa * 16.0 + f64::from(d);
    }
    let exponent: i32 = match exponent.map(parse_exponent) {
        None => 0,
        Some(Some(e)) => e,
        Some(None) => return Some(None),
    };
    let scale = exponent.saturating_sub(4 * fraction.len() as i32);
    let v = mantissa * 2f64.powi(scale);
    let exponent10 = (f64::from(exponent) * std::f64::consts::LOG10_2) as i32;
    Some(Some((if negative { -v } else { v }, digits, exponent10)))
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
        (
            Change::Put(Entry::plain(text.clone().into_bytes(), deadline)),
            Ok(text),
        )
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
        // As strtold reads them.
        assert_eq!(parse_float(b"0x10"), Some(16.0));
        assert_eq!(parse_float(b"-0X1.8p1"), Some(-3.0));
        assert_eq!(parse_float(b"0x.8"), Some(0.5));
        assert_eq!(parse_float(b"0x"), None);
        assert_eq!(parse_float(b"0x1p"), None);
        assert_eq!(parse_float(b"0x1g"), None);
        assert_eq!(parse_float(b"Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"1e-400"), Some(0.0), "a long double's range");
        assert_eq!(parse_float(b"1e-5000"), None, "underflows a long double");
        assert_eq!(parse_float(b"0x1p-20000"), None, "underflows a long double");
        assert_eq!(parse_float(b"0e-5000"), Some(0.0));
        assert_eq!(parse_float(b"1e400"), None, "overflows");
        assert_eq!(parse_float(b"1e-99999999999"), None, "an exponent past i32");
        assert_eq!(parse_float(b"1e99999999999"), None);
        assert_eq!(parse_float(b"0x1p-99999999999"), None);
        assert_eq!(parse_float(b"0x1p+4"), Some(16.0));
        assert_eq!(parse_float(&vec![b'1'; MAX_FLOAT_TEXT]), None);
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
