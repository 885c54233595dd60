//! Writing frames, with Redis's RESP2 downgrades of RESP3-only types.

use crate::frame::{Frame, Protocol};

/// Simple strings and errors are one line: Redis turns CR and LF inside them into spaces.
fn push_line(out: &mut Vec<u8>, prefix: u8, text: &[u8]) {
    out.push(prefix);
    out.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

fn push_header(out: &mut Vec<u8>, prefix: u8, n: usize) {
    out.push(prefix);
    push_decimal(out, n as u64);
    out.extend_from_slice(b"\r\n");
}

/// `n` in decimal, as `to_string` writes it, without a string made and freed for it:
/// every bulk and array header and every integer reply is written through here.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn push_signed_decimal(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_decimal(out, n.unsigned_abs());
}

fn push_bulk(out: &mut Vec<u8>, data: &[u8]) {
    push_header(out, b'$', data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// A double as Redis 7.0 writes it: `inf`, `-inf`, `nan`, else C's `%.17g` (17
/// significant digits, trailing zeros dropped, an exponent below 1e-4 or from 1e17),
/// which reads back to the same value.
pub fn format_double(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Integers below 1e17 are their own 17 significant digits: the usual case (scores,
    // counters), printed without the slower exact formatting below.
    if x.fract() == 0.0 && x.abs() < 1e17 {
        return (x as i64).to_string();
    }
    // The 17 significant digits, rounded once; `%.17g` shows the same digits either
    // as they are (fixed) or with an exponent.
    let scientific = format!("{x:.16e}");
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e}'s exponent is a number");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let mut out = String::with_capacity(24);
    if x < 0.0 {
        out.push('-');
    }
    if (-4..17).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(digits);
        } else {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        out.push_str(&format!("e{sign}{:02}", exponent.abs()));
    }
    out
}

impl Frame {
    /// Appends the wire form of this frame for a client speaking `proto`.
    pub fn encode(&self, proto: Protocol, out: &mut Vec<u8>) {
        let v3 = proto == Protocol::Resp3;
        match self {
            Frame::Simple(s) => push_line(out, b'+', s.as_bytes()),
            Frame::Error(s) => push_line(out, b'-', s.as_bytes()),
            Frame::Integer(n) => {
                out.push(b':');
                push_signed_decimal(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Bulk(b) => push_bulk(out, b),
            Frame::Array(items) => {
                push_header(out, b'*', items.len());
                for f in items {
                    f.encode(proto, out);
                }
            }
            Frame::Null if v3 => out.extend_from_slice(b"_\r\n"),
            Frame::Null => out.extend_from_slice(b"$-1\r\n"),
            Frame::NullArray if v3 => out.extend_from_slice(b"_\r\n"),
            Frame::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Frame::Boolean(b) if v3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Frame::Boolean(b) => out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
            Frame::Double(x) if v3 => push_line(out, b',', format_double(*x).as_bytes()),
            Frame::Double(x) => push_bulk(out, format_double(*x).as_bytes()),
            Frame::DoubleText(s) if v3 => push_line(out, b',', s.as_bytes()),
            Frame::DoubleText(s) => push_bulk(out, s.as_bytes()),
            Frame::BigNumber(s) if v3 => push_line(out, b'(', s.as_bytes()),
            Frame::BigNumber(s) => push_bulk(out, s.as_bytes()),
            Frame::BulkError(b) if v3 => {
                push_header(out, b'!', b.len());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Frame::BulkError(b) => push_line(out, b'-', b),
            Frame::Verbatim { format, text } if v3 => {
                push_header(out, b'=', text.len() + 4);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Frame::Verbatim { text, .. } => push_bulk(out, text),
            Frame::Map(pairs) => {
                if v3 {
                    push_header(out, b'%', pairs.len());
                } else {
                    push_header(out, b'*', pairs.len() * 2);
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Frame::Attribute { pairs, reply } => {
                if v3 {
                    push_header(out, b'|', pairs.len());
                    for (k, v) in pairs {
                        k.encode(proto, out);
                        v.encode(proto, out);
                    }
                }
                reply.encode(proto, out);
            }
            Frame::Set(items) | Frame::Push(items) => {
                let prefix = match (v3, self) {
                    (false, _) => b'*',
                    (true, Frame::Set(_)) => b'~',
                    _ => b'>',
                };
                push_header(out, prefix, items.len());
                for f in items {
                    f.encode(proto, out);
                }
            }
        }
    }

    /// The wire form of this frame for `proto`.
    pub fn to_bytes(&self, proto: Protocol) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(proto, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn resp2_downgrades_like_redis() {
        let cases: Vec<(Frame, &[u8], &[u8])> = vec![
            (Frame::Null, b"$-1\r\n", b"_\r\n"),
            (Frame::NullArray, b"*-1\r\n", b"_\r\n"),
            (Frame::Boolean(true), b":1\r\n", b"#t\r\n"),
            (Frame::Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n"),
            (Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n"),
            (
                Frame::DoubleText("0.25".into()),
                b"$4\r\n0.25\r\n",
                b",0.25\r\n",
            ),
            (
                Frame::Map(vec![(Frame::bulk("a"), Frame::Integer(1))]),
                b"*2\r\n$1\r\na\r\n:1\r\n",
                b"%1\r\n$1\r\na\r\n:1\r\n",
            ),
            (
                Frame::Set(vec![Frame::Integer(7)]),
                b"*1\r\n:7\r\n",
                b"~1\r\n:7\r\n",
            ),
            (Frame::Push(vec![]), b"*0\r\n", b">0\r\n"),
            (
                Frame::Attribute {
                    pairs: vec![(Frame::bulk("ttl"), Frame::Integer(3))],
                    reply: Box::new(Frame::bulk("v")),
                },
                b"$1\r\nv\r\n",
                b"|1\r\n$3\r\nttl\r\n:3\r\n$1\r\nv\r\n",
            ),
            (
                Frame::Verbatim {
                    format: *b"txt",
                    text: b"hi".to_vec(),
                },
                b"$2\r\nhi\r\n",
                b"=6\r\ntxt:hi\r\n",
            ),
            (
                Frame::BulkError(b"ERR x".to_vec()),
                b"-ERR x\r\n",
                b"!5\r\nERR x\r\n",
            ),
        ];
        for (frame, v2, v3) in cases {
            assert_eq!(frame.to_bytes(Protocol::Resp2), v2, "{frame:?}");
            assert_eq!(frame.to_bytes(Protocol::Resp3), v3, "{frame:?}");
        }
    }

    #[test]
    fn line_frames_cannot_break_the_stream() {
        assert_eq!(
            Frame::error("ERR bad\r\nthing").to_bytes(Protocol::Resp2),
            b"-ERR bad  thing\r\n"
        );
    }

    /// `%.17g` spelled out as its definition reads: the value printed with 17
    /// significant digits in fixed or scientific notation, trailing zeros dropped.
    fn printf_g17(x: f64) -> String {
        let scientific = format!("{x:.16e}");
        let (mantissa, exponent) = scientific.split_once('e').unwrap();
        let exponent: i32 = exponent.parse().unwrap();
        let trim = |s: &str| -> String {
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s.to_string()
            }
        };
        if (-4..17).contains(&exponent) {
            trim(&format!("{x:.*}", (16 - exponent) as usize))
        } else {
            let sign = if exponent < 0 { '-' } else { '+' };
            format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
        }
    }

    proptest! {
        /// Integers and lengths read as Rust's own formatting writes them.
        #[test]
        fn decimals_are_written_as_to_string_writes_them(
            n in prop_oneof![
                any::<i64>(),
                Just(i64::MIN),
                Just(i64::MAX),
                Just(0i64),
                -1000i64..1000,
            ],
            len in prop_oneof![any::<u64>(), Just(u64::MAX), 0u64..1000],
        ) {
            let mut out = b"x".to_vec();
            push_signed_decimal(&mut out, n);
            push_decimal(&mut out, len);
            prop_assert_eq!(out, format!("x{n}{len}").into_bytes());
        }

        /// Digits formatted once and placed agree with formatting in each notation.
        #[test]
        fn doubles_format_as_the_definition_of_g17(
            x in prop_oneof![
                prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL,
                (-1_000_000i64..1_000_000).prop_map(|n| n as f64 / 8.0),
                (-100_000_000_000_000_000i64..100_000_000_000_000_000).prop_map(|n| n as f64),
            ],
        ) {
            prop_assert_eq!(format_double(x), printf_g17(x));
        }
    }

    #[test]
    fn doubles_print_as_printf_g17_does() {
        for (x, text) in [
            (3.0, "3"),
            (-0.5, "-0.5"),
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (1e300, "1.0000000000000001e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-0.0, "-0"),
        ] {
            assert_eq!(format_double(x), text, "{x}");
            if x.is_finite() {
                assert_eq!(text.parse::<f64>(), Ok(x), "{text} reads back");
            }
        }
    }
}
