//! A streaming parser for any RESP2/RESP3 frame.

use crate::frame::Frame;
use crate::request::ProtocolError;

/// Bounds on what a peer can make the parser allocate or recurse into.
#[derive(Clone, Copy, Debug)]
pub struct FrameLimits {
    pub max_bulk_len: usize,
    /// Most elements in one aggregate (array, map, set, push, attribute).
    pub max_aggregate_len: usize,
    /// Deepest nesting of aggregates.
    pub max_depth: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_bulk_len: 512 * 1024 * 1024,
            max_aggregate_len: i32::MAX as usize,
            max_depth: 128,
        }
    }
}

fn err(what: impl AsRef<str>) -> ProtocolError {
    ProtocolError(format!("Protocol error: {}", what.as_ref()))
}

/// Parses one frame from the front of `buf`: the frame and the bytes it took, or
/// `None` if `buf` ends before the frame does.
pub fn parse_frame(
    buf: &[u8],
    limits: &FrameLimits,
) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let mut p = Parser { buf, at: 0, limits };
    match p.frame(0) {
        Ok(f) => Ok(Some((f, p.at))),
        Err(Stop::Incomplete) => Ok(None),
        Err(Stop::Invalid(e)) => Err(e),
    }
}

enum Stop {
    Incomplete,
    Invalid(ProtocolError),
}

impl From<ProtocolError> for Stop {
    fn from(e: ProtocolError) -> Self {
        Stop::Invalid(e)
    }
}

struct Parser<'a> {
    buf: &'a [u8],
    at: usize,
    limits: &'a FrameLimits,
}

impl Parser<'_> {
    /// The rest of the current line (without CRLF), advancing past it.
    fn line(&mut self) -> Result<&[u8], Stop> {
        let rest = &self.buf[self.at..];
        let Some(cr) = rest.windows(2).position(|w| w == b"\r\n") else {
            return Err(Stop::Incomplete);
        };
        self.at += cr + 2;
        Ok(&rest[..cr])
    }

    /// A line as text. RESP does not promise UTF-8 on simple strings and errors
    /// (clients such as hiredis pass bytes through), so invalid sequences become U+FFFD.
    fn text(&mut self) -> Result<String, Stop> {
        Ok(String::from_utf8_lossy(self.line()?).into_owned())
    }

    fn int(&mut self, what: &str) -> Result<i64, Stop> {
        let t = self.text()?;
        t.parse()
            .map_err(|_| err(format!("invalid {what} '{t}'")).into())
    }

    /// A length line: -1 means null.
    fn len(&mut self, what: &str, max: usize) -> Result<Option<usize>, Stop> {
        match self.int(what)? {
            -1 => Ok(None),
            n if n >= 0 && (n as u64) <= max as u64 => Ok(Some(n as usize)),
            n => Err(err(format!("invalid {what} {n}")).into()),
        }
    }

    fn blob(&mut self, len: usize) -> Result<Vec<u8>, Stop> {
        let end = self
            .at
            .checked_add(len)
            .and_then(|e| e.checked_add(2))
            .ok_or_else(|| err("length overflow"))?;
        if self.buf.len() < end {
            return Err(Stop::Incomplete);
        }
        if &self.buf[end - 2..end] != b"\r\n" {
            return Err(err("bulk data not followed by CRLF").into());
        }
        let data = self.buf[self.at..end - 2].to_vec();
        self.at = end;
        Ok(data)
    }

    fn frames(&mut self, n: usize, depth: usize) -> Result<Vec<Frame>, Stop> {
        // Allocate as elements arrive, not for the declared count.
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(self.frame(depth + 1)?);
        }
        Ok(v)
    }

    fn pairs(&mut self, n: usize, depth: usize) -> Result<Vec<(Frame, Frame)>, Stop> {
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let k = self.frame(depth + 1)?;
            v.push((k, self.frame(depth + 1)?));
        }
        Ok(v)
    }

    fn frame(&mut self, depth: usize) -> Result<Frame, Stop> {
        if depth > self.limits.max_depth {
            return Err(err(format!("nesting deeper than {}", self.limits.max_depth)).into());
        }
        let Some(&kind) = self.buf.get(self.at) else {
            return Err(Stop::Incomplete);
        };
        self.at += 1;
        let agg = self.limits.max_aggregate_len;
        Ok(match kind {
            b'+' => Frame::Simple(self.text()?),
            b'-' => Frame::Error(self.text()?),
            b':' => Frame::Integer(self.int("integer")?),
            b'$' => match self.len("bulk length", self.limits.max_bulk_len)? {
                None => Frame::Null,
                Some(n) => Frame::Bulk(self.blob(n)?),
            },
            b'*' => match self.len("multibulk length", agg)? {
                None => Frame::NullArray,
                Some(n) => Frame::Array(self.frames(n, depth)?),
            },
            b'_' => {
                if !self.line()?.is_empty() {
                    return Err(err("null with a payload").into());
                }
                Frame::Null
            }
            b'#' => match self.line()? {
                b"t" => Frame::Boolean(true),
                b"f" => Frame::Boolean(false),
                _ => return Err(err("boolean is neither t nor f").into()),
            },
            b',' => {
                let t = self.text()?;
                let x = match t.as_str() {
                    "inf" | "+inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" => f64::NAN,
                    _ => t
                        .parse()
                        .map_err(|_| err(format!("invalid double '{t}'")))?,
                };
                Frame::Double(x)
            }
            b'(' => {
                let t = self.text()?;
                let digits = t.strip_prefix('-').unwrap_or(&t);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err(format!("invalid big number '{t}'")).into());
                }
                Frame::BigNumber(t)
            }
            b'!' => match self.len("bulk error length", self.limits.max_bulk_len)? {
                None => return Err(err("null bulk error").into()),
                Some(n) => Frame::BulkError(self.blob(n)?),
            },
            b'=' => {
                let n = self
                    .len("verbatim length", self.limits.max_bulk_len)?
                    .ok_or_else(|| err("null verbatim string"))?;
                let body = self.blob(n)?;
                if body.len() < 4 || body[3] != b':' {
                    return Err(err("verbatim string without a format").into());
                }
                Frame::Verbatim {
                    format: [body[0], body[1], body[2]],
                    text: body[4..].to_vec(),
                }
            }
            b'%' | b'|' | b'~' | b'>' => {
                let what = match kind {
                    b'%' => "map length",
                    b'|' => "attribute length",
                    b'~' => "set length",
                    _ => "push length",
                };
                let n = self
                    .len(what, agg)?
                    .ok_or_else(|| err(format!("null {what}")))?;
                match kind {
                    b'%' => Frame::Map(self.pairs(n, depth)?),
                    // Attributes annotate the frame that follows and do not count as an
                    // element of an enclosing aggregate; nothing here uses them, so they
                    // are read and dropped, as most clients do.
                    b'|' => {
                        self.pairs(n, depth)?;
                        self.frame(depth)?
                    }
                    b'~' => Frame::Set(self.frames(n, depth)?),
                    _ => Frame::Push(self.frames(n, depth)?),
                }
            }
            other => {
                return Err(err(format!("unknown frame type '{}'", other.escape_ascii())).into())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_parses() {
        let input = b"*3\r\n%1\r\n+a\r\n,1.5\r\n~1\r\n#t\r\n=6\r\ntxt:hi\r\n";
        let (f, n) = parse_frame(input, &FrameLimits::default())
            .unwrap()
            .unwrap();
        assert_eq!(n, input.len());
        assert_eq!(
            f,
            Frame::Array(vec![
                Frame::Map(vec![(Frame::Simple("a".into()), Frame::Double(1.5))]),
                Frame::Set(vec![Frame::Boolean(true)]),
                Frame::Verbatim {
                    format: *b"txt",
                    text: b"hi".to_vec()
                },
            ])
        );
    }

    #[test]
    fn attributes_are_skipped_and_not_counted() {
        let input = b"*2\r\n:1\r\n|1\r\n+ttl\r\n:3\r\n:2\r\n";
        let (f, n) = parse_frame(input, &FrameLimits::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            (f, n),
            (
                Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)]),
                input.len()
            )
        );
    }

    #[test]
    fn limits_hold() {
        let limits = FrameLimits {
            max_bulk_len: 10,
            max_aggregate_len: 3,
            max_depth: 2,
        };
        assert!(parse_frame(b"$11\r\n", &limits).is_err());
        assert!(parse_frame(b"*4\r\n", &limits).is_err());
        assert!(parse_frame(b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", &limits).is_err());
        assert!(parse_frame(b"*1\r\n*1\r\n:1\r\n", &limits)
            .unwrap()
            .is_some());
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            &b"?\r\n"[..],
            b":x\r\n",
            b"$2\r\nabcd\r\n",
            b"#x\r\n",
            b"_x\r\n",
            b"=2\r\nab\r\n",
            b"(1a\r\n",
        ] {
            assert!(
                parse_frame(bad, &FrameLimits::default()).is_err(),
                "{:?}",
                bad.escape_ascii().to_string()
            );
        }
    }
}
