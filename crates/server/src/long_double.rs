//! The x86-64 `long double` that Redis's INCRBYFLOAT computes in, emulated exactly:
//! reading text as `strtold` does, adding, and printing as `%.17Lf`, so results match
//! Redis's digit for digit (1.1 + 0.6 reads "1.7000000000000002" there, where an
//! `f64` sum would print differently).
//!
//! The format is Intel's 80-bit extended precision: a 64-bit significand with an
//! explicit leading bit, binary exponents from -16382 (normal) down to -16445
//! (subnormal), up to 16383. Every operation rounds the exact result to nearest, ties
//! to even, as the hardware does. Exact results come from a small unsigned big integer
//! (`Big`), since a decimal string can hold thousands of digits and reach 1e-4950.

use std::cmp::Ordering;

/// A finite extended-precision value, `(-1)^negative * significand * 2^exponent`, or
/// an infinity (`significand` and `exponent` then unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongDouble {
    negative: bool,
    significand: u64,
    exponent: i32,
    infinite: bool,
}

/// The exponent of the last significand bit of the smallest normal value.
const MIN_ULP_EXPONENT: i32 = -16382 - 63;
/// The largest exponent of the leading significand bit.
const MAX_EXPONENT: i32 = 16383;
/// Decimal exponents past which text surely over- or underflows: 1e4933 is above the
/// largest value (1.19e4932), and 1e-4951 below half the smallest (3.6e-4951).
const MAX_DECIMAL_EXPONENT: i64 = 4932;
const MIN_DECIMAL_EXPONENT: i64 = -4951;

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble {
        negative: false,
        significand: 0,
        exponent: 0,
        infinite: false,
    };

    fn zero(negative: bool) -> LongDouble {
        LongDouble {
            negative,
            ..LongDouble::ZERO
        }
    }

    fn infinity(negative: bool) -> LongDouble {
        LongDouble {
            negative,
            infinite: true,
            ..LongDouble::ZERO
        }
    }

    /// A double's exact value (every double is a long double).
    pub fn from_f64(x: f64) -> LongDouble {
        let negative = x.is_sign_negative();
        if x.is_infinite() {
            return LongDouble::infinity(negative);
        }
        assert!(!x.is_nan(), "no caller has a NaN to convert");
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1 << 52) - 1);
        let (mantissa, exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1 << 52), biased - 1075)
        };
        if mantissa == 0 {
            return LongDouble::zero(negative);
        }
        let shift = mantissa.leading_zeros() as i32;
        LongDouble {
            negative,
            significand: mantissa << shift,
            exponent: exponent - shift,
            infinite: false,
        }
    }

    pub fn is_infinite(&self) -> bool {
        self.infinite
    }

    /// Reads `text` as `strtold` reads a whole string: decimal (`[+-]digits[.digits]
    /// [e[+-]digits]`), hexadecimal (`[+-]0x` hex digits with an optional `.` and
    /// `p[+-]digits`), or `inf` / `infinity`. `None` for anything else, NaN, and
    /// what overflows or underflows to zero from non-zero digits (strtold's range
    /// errors, which Redis refuses).
    pub fn parse(text: &[u8]) -> Option<LongDouble> {
        let (negative, body) = match text.first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(LongDouble::infinity(negative));
        }
        let value = match body {
            [b'0', b'x' | b'X', hex @ ..] => parse_hex(negative, hex)?,
            _ => parse_decimal(negative, body)?,
        };
        (!value.infinite).then_some(value)
    }

    /// The sum, rounded once.
    pub fn add(self, other: LongDouble) -> LongDouble {
        if self.infinite || other.infinite {
            // inf + -inf is NaN in hardware; callers refuse either, so one will do.
            return if self.infinite { self } else { other };
        }
        let low = self.exponent.min(other.exponent);
        let scaled = |v: &LongDouble| Big::from_u64(v.significand).shl((v.exponent - low) as usize);
        let (a, b) = (scaled(&self), scaled(&other));
        let (negative, sum) = if self.negative == other.negative {
            (self.negative, a.add(&b))
        } else {
            match a.cmp(&b) {
                Ordering::Less => (other.negative, b.sub(&a)),
                _ => (self.negative, a.sub(&b)),
            }
        };
        // An exact zero sum is +0 when rounding to nearest.
        let negative = negative && !sum.is_zero();
        round(negative, &sum, &Big::from_u64(1), i64::from(low))
    }

    /// `printf("%.17Lf")` with the trailing zeros of the fraction trimmed (and the
    /// point, if nothing follows it), and "-0" written "0": Redis's "human" format.
    pub fn to_human_string(self) -> String {
        assert!(!self.infinite, "INCRBYFLOAT refuses infinite results first");
        const DECIMALS: usize = 17;
        let scaled = Big::from_u64(self.significand).mul_pow10(DECIMALS as u64);
        // The value times 10^17, rounded to an integer, ties to even.
        let units = if self.exponent >= 0 {
            scaled.shl(self.exponent as usize)
        } else {
            let drop = self.exponent.unsigned_abs() as usize;
            let kept = scaled.shr(drop);
            let half = scaled.bit(drop - 1);
            let below = scaled.any_bits_below(drop - 1);
            if half && (below || kept.bit(0)) {
                kept.add(&Big::from_u64(1))
            } else {
                kept
            }
        };
        let mut digits = units.to_decimal();
        if digits.len() <= DECIMALS {
            digits = format!("{}{digits}", "0".repeat(DECIMALS + 1 - digits.len()));
        }
        let (whole, fraction) = digits.split_at(digits.len() - DECIMALS);
        let fraction = fraction.trim_end_matches('0');
        let mut text = String::new();
        if self.negative && !(whole == "0" && fraction.is_empty()) {
            text.push('-');
        }
        text.push_str(whole);
        if !fraction.is_empty() {
            text.push('.');
            text.push_str(fraction);
        }
        text
    }
}

/// The parts of a number's text: `whole[.fraction][<marker>exponent]`, with digits
/// that `is_digit` accepts; at least one digit before the marker. Gives the digits
/// without leading zeros, the fraction's length and the exponent.
fn split_number(
    body: &[u8],
    marker: u8,
    is_digit: fn(&u8) -> bool,
) -> Option<(Vec<u8>, usize, i64)> {
    let (mantissa, exponent) = match body.iter().position(|c| c.to_ascii_lowercase() == marker) {
        Some(m) => (&body[..m], Some(&body[m + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = match mantissa.iter().position(|&c| c == b'.') {
        Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
        None => (mantissa, &mantissa[mantissa.len()..]),
    };
    let digits_only = |s: &[u8]| s.iter().all(is_digit);
    if (whole.is_empty() && fraction.is_empty()) || !digits_only(whole) || !digits_only(fraction) {
        return None;
    }
    let exponent = match exponent {
        None => 0,
        Some(e) => parse_exponent(e)?,
    };
    let digits = whole
        .iter()
        .chain(fraction)
        .copied()
        .skip_while(|&c| c == b'0')
        .collect();
    Some((digits, fraction.len(), exponent))
}

fn parse_decimal(negative: bool, body: &[u8]) -> Option<LongDouble> {
    let (digits, fraction, exponent) = split_number(body, b'e', u8::is_ascii_digit)?;
    if digits.is_empty() {
        return Some(LongDouble::zero(negative));
    }
    // value = digits * 10^scale
    let scale = exponent - fraction as i64;
    let magnitude = scale + digits.len() as i64 - 1;
    if magnitude > MAX_DECIMAL_EXPONENT {
        return None;
    }
    if scale + (digits.len() as i64) < MIN_DECIMAL_EXPONENT {
        return None;
    }
    // Nine digits at a time: a 5 KiB string is thousands of them.
    let mut num = Big::from_u64(0);
    for chunk in digits.chunks(9) {
        let value = chunk
            .iter()
            .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
        num = num
            .mul_small(10u32.pow(chunk.len() as u32))
            .add(&Big::from_u64(u64::from(value)));
    }
    let mut den = Big::from_u64(1);
    let power = scale.unsigned_abs();
    if scale > 0 {
        num = num.mul_pow10(power);
    } else {
        den = den.mul_pow10(power);
    }
    finite(round(negative, &num, &den, 0))
}

fn parse_hex(negative: bool, hex: &[u8]) -> Option<LongDouble> {
    let (digits, fraction, exponent) = split_number(hex, b'p', u8::is_ascii_hexdigit)?;
    if digits.is_empty() {
        return Some(LongDouble::zero(negative));
    }
    // value = digits * 2^scale, below 2^top and at least 2^(top - 4): far past the
    // range either way, no need to compute.
    let scale = exponent - 4 * fraction as i64;
    let top = scale + 4 * digits.len() as i64;
    if top - 4 > i64::from(MAX_EXPONENT) {
        return None;
    }
    if top < i64::from(MIN_ULP_EXPONENT) - 1 {
        return None;
    }
    let mut num = Big::from_u64(0);
    for &d in &digits {
        let value = (d as char).to_digit(16).expect("checked hex digit");
        num = num.mul_small(16).add(&Big::from_u64(u64::from(value)));
    }
    finite(round(negative, &num, &Big::from_u64(1), scale))
}

/// strtold's range errors: an infinite result, or zero from non-zero digits.
fn finite(v: LongDouble) -> Option<LongDouble> {
    (!v.infinite && v.significand != 0).then_some(v)
}

/// An exponent's digits with an optional sign, saturating far past any range.
fn parse_exponent(e: &[u8]) -> Option<i64> {
    let (negative, digits) = match e.first()? {
        b'-' => (true, &e[1..]),
        b'+' => (false, &e[1..]),
        _ => (false, e),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().fold(0i64, |n, &d| {
        (n * 10 + i64::from(d - b'0')).min(1_000_000_000)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// The extended value nearest `num / den * 2^exp2`, ties to even.
fn round(negative: bool, num: &Big, den: &Big, exp2: i64) -> LongDouble {
    if num.is_zero() {
        return LongDouble::zero(negative);
    }
    // Scale so the quotient has 66 or 67 bits: 64 kept, a rounding bit, and one more.
    let shift = 66 - (num.bit_len() as i64 - den.bit_len() as i64);
    let a = num.shl(shift.max(0) as usize);
    let b = den.shl((-shift).max(0) as usize);
    let (quotient, remainder) = a.div_small_quotient(&b);
    let bits = 128 - quotient.leading_zeros() as i64;
    let lowest = exp2 - shift; // the exponent of the quotient's last bit
    let top = lowest + bits - 1;
    let ulp = (top - 63).max(i64::from(MIN_ULP_EXPONENT));
    let drop = (ulp - lowest) as u32; // at least 2: the quotient has 66+ bits
    let kept = if drop >= 128 { 0 } else { quotient >> drop };
    let half = drop <= 128 && (quotient >> (drop - 1)) & 1 == 1;
    let below_mask = if drop > 128 {
        u128::MAX
    } else {
        (1u128 << (drop - 1)) - 1
    };
    let sticky = !remainder.is_zero() || quotient & below_mask != 0;
    let mut significand = kept + u128::from(half && (sticky || kept & 1 == 1));
    let mut ulp = ulp;
    if significand == 1 << 64 {
        significand >>= 1;
        ulp += 1;
    }
    if ulp + 63 > i64::from(MAX_EXPONENT) {
        return LongDouble::infinity(negative);
    }
    LongDouble {
        negative,
        significand: significand as u64,
        exponent: ulp as i32,
        infinite: false,
    }
}

/// An unsigned integer of any size, little-endian 32-bit limbs, no trailing zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(n: u64) -> Big {
        let mut b = Big(vec![n as u32, (n >> 32) as u32]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bit_len(&self) -> usize {
        self.0
            .last()
            .map_or(0, |top| self.0.len() * 32 - top.leading_zeros() as usize)
    }

    fn bit(&self, i: usize) -> bool {
        self.0
            .get(i / 32)
            .is_some_and(|limb| limb >> (i % 32) & 1 == 1)
    }

    fn any_bits_below(&self, i: usize) -> bool {
        let (whole, part) = (i / 32, i % 32);
        self.0.iter().take(whole).any(|&l| l != 0)
            || (part > 0
                && self
                    .0
                    .get(whole)
                    .is_some_and(|l| l & ((1 << part) - 1) != 0))
    }

    fn shl(&self, bits: usize) -> Big {
        if self.is_zero() {
            return self.clone();
        }
        let (whole, part) = (bits / 32, bits % 32);
        let mut out = vec![0u32; whole];
        let mut carry = 0u32;
        for &l in &self.0 {
            out.push(if part == 0 { l } else { l << part | carry });
            carry = if part == 0 { 0 } else { l >> (32 - part) };
        }
        out.push(carry);
        let mut b = Big(out);
        b.trim();
        b
    }

    fn shr(&self, bits: usize) -> Big {
        let (whole, part) = (bits / 32, bits % 32);
        let limbs = self.0.get(whole..).unwrap_or(&[]);
        let out: Vec<u32> = limbs
            .iter()
            .enumerate()
            .map(|(i, &l)| {
                let high = limbs.get(i + 1).copied().unwrap_or(0);
                if part == 0 {
                    l
                } else {
                    l >> part | high << (32 - part)
                }
            })
            .collect();
        let mut b = Big(out);
        b.trim();
        b
    }

    fn add(&self, other: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len().max(other.0.len()) + 1);
        let mut carry = 0u64;
        for i in 0..self.0.len().max(other.0.len()) {
            let sum = u64::from(*self.0.get(i).unwrap_or(&0))
                + u64::from(*other.0.get(i).unwrap_or(&0))
                + carry;
            out.push(sum as u32);
            carry = sum >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - other`, which must not be negative.
    fn sub(&self, other: &Big) -> Big {
        debug_assert!(self.cmp(other) != Ordering::Less);
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let mut d = i64::from(self.0[i]) - i64::from(*other.0.get(i).unwrap_or(&0)) - borrow;
            borrow = i64::from(d < 0);
            if d < 0 {
                d += 1 << 32;
            }
            out.push(d as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn mul_small(&self, m: u32) -> Big {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut carry = 0u64;
        for &l in &self.0 {
            let p = u64::from(l) * u64::from(m) + carry;
            out.push(p as u32);
            carry = p >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    fn mul_pow10(&self, mut power: u64) -> Big {
        let mut out = self.clone();
        while power > 0 {
            let step = power.min(9);
            out = out.mul_small(10u32.pow(step as u32));
            power -= step;
        }
        out
    }

    /// `self / divisor` when the quotient is below 2^128, and the remainder: binary
    /// long division, one quotient bit per step.
    fn div_small_quotient(&self, divisor: &Big) -> (u128, Big) {
        let mut rest = self.clone();
        let steps = self.bit_len() as i64 - divisor.bit_len() as i64;
        let mut quotient = 0u128;
        for i in (0..=steps.max(-1)).rev() {
            let shifted = divisor.shl(i as usize);
            if rest.cmp(&shifted) != Ordering::Less {
                rest = rest.sub(&shifted);
                assert!(i < 128, "quotient past 128 bits");
                quotient |= 1 << i;
            }
        }
        (quotient, rest)
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut chunks = Vec::new();
        let mut rest = self.0.clone();
        while !rest.is_empty() {
            let mut remainder = 0u64;
            for limb in rest.iter_mut().rev() {
                let cur = remainder << 32 | u64::from(*limb);
                *limb = (cur / 1_000_000_000) as u32;
                remainder = cur % 1_000_000_000;
            }
            chunks.push(remainder as u32);
            while rest.last() == Some(&0) {
                rest.pop();
            }
        }
        let mut text = chunks.pop().expect("non-zero").to_string();
        for c in chunks.iter().rev() {
            text.push_str(&format!("{c:09}"));
        }
        text
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded, so a failure replays.
    fn numbers(seed: u64) -> impl Iterator<Item = u64> {
        let mut x = seed;
        std::iter::from_fn(move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Some(x ^ (x >> 29))
        })
    }

    #[test]
    fn doubles_convert_exactly() {
        // Redis's GEOPOS prints coordinates so; Palermo's, from its documentation.
        let human = |x: f64| LongDouble::from_f64(x).to_human_string();
        assert_eq!(human(13.361389338970184), "13.36138933897018433");
        assert_eq!(human(38.1155563954963), "38.11555639549629859");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(-0.0), "0");
        assert_eq!(human(5e-324), "0");
        assert_eq!(human(-2.5), "-2.5");
        // Against Rust's own exact formatting, on random doubles of every magnitude.
        let mut rng = numbers(5);
        for _ in 0..20_000 {
            let x = f64::from_bits(
                rng.next().unwrap() & !(0x7ffu64 << 52) | ((rng.next().unwrap() % 90 + 990) << 52),
            );
            let exact = format!("{x:.17}");
            let trimmed = exact.trim_end_matches('0').trim_end_matches('.');
            let expected = if trimmed == "-0" { "0" } else { trimmed };
            assert_eq!(human(x), expected, "{x:e}");
        }
    }

    #[test]
    fn big_integers_agree_with_u128() {
        let big = |n: u128| {
            Big::from_u64((n >> 64) as u64)
                .shl(64)
                .add(&Big::from_u64(n as u64))
        };
        let mut rng = numbers(7);
        for _ in 0..2000 {
            let (a, b) = (rng.next().unwrap() as u128, rng.next().unwrap() as u128);
            // a below 2^120, so a * 10 and the shifts below stay inside u128.
            let (a, b) = (a * (b >> 8), b);
            let bits = (rng.next().unwrap() % 40) as usize;
            assert_eq!(big(a).to_decimal(), a.to_string());
            assert_eq!(big(a).add(&big(b)), big(a + b));
            assert_eq!(big(a.max(b)).sub(&big(a.min(b))), big(a.max(b) - a.min(b)));
            assert_eq!(big(a).mul_small(10), big(a * 10));
            assert_eq!(big(a >> 48).shl(bits), big((a >> 48) << bits));
            assert_eq!(big(a).shr(bits), big(a >> bits));
            assert_eq!(big(a).cmp(&big(b)), a.cmp(&b));
            assert_eq!(big(a).bit_len(), 128 - a.leading_zeros() as usize);
            assert_eq!(big(a).any_bits_below(bits), a & ((1 << bits) - 1) != 0);
            if b != 0 {
                let (q, r) = big(a).div_small_quotient(&big(b));
                assert_eq!((q, r), (a / b, big(a % b)), "{a} / {b}");
            }
        }
    }

    #[test]
    fn values_print_with_seventeen_decimals_rounded_to_nearest() {
        for (text, printed) in [
            ("0x1p-1", "0.5"),
            ("0x1.8p1", "3"),
            ("-0x1p-3", "-0.125"),
            ("1e-17", "0.00000000000000001"),
            // The long double nearest 5e-18 is just below it (as redis-server prints).
            ("5e-18", "0"),
            ("4e-18", "0"),
            ("0x1p64", "18446744073709551616"),
        ] {
            let v = LongDouble::parse(text.as_bytes()).unwrap();
            assert_eq!(v.to_human_string(), printed, "{text}");
        }
    }
}
