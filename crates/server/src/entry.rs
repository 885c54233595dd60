//! How a key's value is stored in the index.
//!
//! ```text
//! stored = payload | deadline (8 bytes, little-endian, ms since the Unix epoch) | tag
//! tag    = bit 0: a deadline is present (else there are no deadline bytes)
//!          bit 1: raw (see `Entry::raw`); the other bits are 0
//! ```
//!
//! The tag sits at the end so decoding only truncates the vector it reads: no copy
//! of the payload. Every value is a Redis string; a type joins the tag when other
//! types arrive. Stores written before the raw bit existed read unchanged.

const HAS_DEADLINE: u8 = 1;
const RAW: u8 = 2;

/// A live value and its expiry deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: Vec<u8>,
    /// Milliseconds since the Unix epoch after which the key no longer exists.
    pub deadline: Option<u64>,
    /// Last written by APPEND, SETRANGE, SETBIT or BITOP, which leave a Redis string
    /// in its `raw` encoding whatever it holds (OBJECT ENCODING reports it; any
    /// other write encodes by the value again).
    pub raw: bool,
}

impl Entry {
    /// A value written whole (SET and the like): its encoding follows from it.
    pub fn plain(value: Vec<u8>, deadline: Option<u64>) -> Entry {
        Entry {
            value,
            deadline,
            raw: false,
        }
    }

    pub fn encode(value: &[u8], deadline: Option<u64>, raw: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(value.len() + 9);
        out.extend_from_slice(value);
        let mut tag = if raw { RAW } else { 0 };
        if let Some(d) = deadline {
            out.extend_from_slice(&d.to_le_bytes());
            tag |= HAS_DEADLINE;
        }
        out.push(tag);
        out
    }

    /// Decodes what [`Entry::encode`] wrote. Anything else in the index is a bug.
    pub fn decode(mut stored: Vec<u8>) -> Entry {
        let deadline = Self::stored_deadline(&stored);
        let raw = stored.last().is_some_and(|tag| tag & RAW != 0);
        let trailer = if deadline.is_some() { 9 } else { 1 };
        stored.truncate(stored.len() - trailer);
        Entry {
            value: stored,
            deadline,
            raw,
        }
    }

    /// The deadline of a stored value, without decoding the payload. Only values
    /// [`Entry::encode`] wrote get here: a durable engine's are checked once, by
    /// [`Entry::check`], when it opens.
    pub fn stored_deadline(stored: &[u8]) -> Option<u64> {
        Self::check(stored).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The deadline of a stored value, or what is wrong with it if
    /// [`Entry::encode`] did not write it.
    pub fn check(stored: &[u8]) -> Result<Option<u64>, String> {
        match stored.split_last() {
            Some((&tag, rest)) if tag & !RAW == HAS_DEADLINE && rest.len() >= 8 => {
                Ok(Some(u64::from_le_bytes(
                    rest[rest.len() - 8..].try_into().expect("8 bytes"),
                )))
            }
            Some((&tag, _)) if tag & !RAW == 0 => Ok(None),
            Some((&tag, _)) => Err(format!(
                "a stored value ends in tag {tag} with {} bytes before it, which hotkv-server does not write",
                stored.len() - 1
            )),
            None => Err("a stored value is empty, which hotkv-server does not write".into()),
        }
    }

    /// As Redis: a key lives through its deadline millisecond.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.deadline.is_some_and(|d| d < now_ms)
    }
}

/// Wall-clock milliseconds since the Unix epoch: the clock Redis expires keys by.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_and_without_deadline() {
        for value in [
            &b""[..],
            b"x",
            b"12345678",
            b"a value with \r\n and \0 bytes",
        ] {
            for deadline in [None, Some(0), Some(1_700_000_000_000), Some(u64::MAX)] {
                for raw in [false, true] {
                    let stored = Entry::encode(value, deadline, raw);
                    assert_eq!(Entry::stored_deadline(&stored), deadline);
                    let e = Entry::decode(stored);
                    assert_eq!(
                        (e.value.as_slice(), e.deadline, e.raw),
                        (value, deadline, raw)
                    );
                }
            }
        }
    }

    #[test]
    fn values_hotkv_did_not_write_are_named_not_trusted() {
        for bad in [
            &b""[..],
            b"x",
            b"\x01short",
            b"ab\x01",
            b"ab\x03",
            b"abc\x07",
            b"abc\x04",
        ] {
            assert!(Entry::check(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Entry::check(&Entry::encode(b"v", Some(7), true)),
            Ok(Some(7))
        );
        // What stores held before the raw bit: tags 0 and 1.
        assert_eq!(Entry::check(b"v\x00"), Ok(None));
    }

    #[test]
    fn a_key_lives_through_its_deadline_millisecond() {
        let e = Entry::plain(vec![], Some(100));
        assert!(!e.expired_at(100));
        assert!(e.expired_at(101));
        assert!(!Entry::plain(vec![], None).expired_at(u64::MAX));
    }
}
