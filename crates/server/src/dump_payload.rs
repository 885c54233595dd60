//! The serialized value of DUMP and RESTORE, in Redis's format, so values move between
//! hotkv and Redis either way (`redis-cli --pipe` of RESTOREs, migration tools).
//!
//! A payload is:
//!
//! ```text
//! type (1 byte: 0, a string) | object | RDB version (2 bytes LE) | CRC-64 (8 bytes LE)
//! ```
//!
//! The CRC (Jones polynomial, reflected, initial value 0, as Redis's crc64) covers
//! everything before it, version included. A string object is a length and the bytes,
//! or an integer, or LZF-compressed bytes. Lengths: `00xxxxxx` (6 bits), `01xxxxxx
//! xxxxxxxx` (14 bits, big-endian), `0x80` + 4 bytes BE, `0x81` + 8 bytes BE. Special
//! forms start `11`: `0xC0`, `0xC1`, `0xC2` an 8, 16 or 32-bit integer (LE) whose
//! decimal text is the value; `0xC3` compressed length, plain length, LZF data.
//!
//! hotkv writes version 10 (Redis 7.0), integers as Redis does (texts of at most 11
//! bytes that are exactly a 32-bit integer's decimal form) and other strings plain, never
//! compressed; Redis reads either. It reads everything Redis 7.0 writes for a string,
//! compressed or not, and payloads of later versions (whose strings are the same).

/// The RDB version hotkv writes: Redis 7.0's.
const WRITTEN_VERSION: u16 = 10;
/// The newest version read: Redis 7.4's, whose string objects are 7.0's.
const NEWEST_READ_VERSION: u16 = 12;
const STRING_TYPE: u8 = 0;
const FOOTER: usize = 2 + 8;

/// Why a payload was refused, in Redis's words.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Too short, a version newer than hotkv reads, or a checksum that does not match.
    VersionOrChecksum,
    /// Checked, but not a string object hotkv can read.
    BadFormat(&'static str),
}

/// `value` as DUMP gives it.
pub fn dump(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 16);
    out.push(STRING_TYPE);
    match small_integer(value) {
        Some(n) => {
            if let Ok(n) = i8::try_from(n) {
                out.push(0xC0);
                out.extend_from_slice(&n.to_le_bytes());
            } else if let Ok(n) = i16::try_from(n) {
                out.push(0xC1);
                out.extend_from_slice(&n.to_le_bytes());
            } else {
                out.push(0xC2);
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        None => {
            put_length(&mut out, value.len() as u64);
            out.extend_from_slice(value);
        }
    }
    out.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The string a payload holds. `max_len` bounds what a compressed string may expand
/// to (the largest value a client could send), so a small payload cannot ask for an
/// unbounded allocation.
pub fn restore(payload: &[u8], max_len: usize) -> Result<Vec<u8>, Refusal> {
    if payload.len() < FOOTER {
        return Err(Refusal::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - FOOTER);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let stored_crc = u64::from_le_bytes(footer[2..].try_into().expect("8 bytes"));
    if version > NEWEST_READ_VERSION || crc64(0, &payload[..payload.len() - 8]) != stored_crc {
        return Err(Refusal::VersionOrChecksum);
    }
    let mut reader = Reader { bytes: body, at: 0 };
    match reader.byte()? {
        STRING_TYPE => {}
        kind => return Err(Refusal::BadFormat(type_name(kind))),
    }
    // As Redis, bytes after the object (before the footer) are not looked at.
    reader.string(max_len)
}

/// What a payload of another type holds, for the error that refuses it.
fn type_name(kind: u8) -> &'static str {
    match kind {
        1 | 10 | 14 | 18 => "the payload holds a list; hotkv stores strings only",
        2 | 11 | 20 => "the payload holds a set; hotkv stores strings only",
        3 | 5 | 12 | 17 => "the payload holds a sorted set; hotkv stores strings only",
        4 | 9 | 13 | 16 => "the payload holds a hash; hotkv stores strings only",
        15 | 19 | 21 => "the payload holds a stream; hotkv stores strings only",
        6 | 7 => "the payload holds a module value; hotkv stores strings only",
        _ => "the payload's type is unknown",
    }
}

/// The value as a 32-bit integer if Redis would store it as one: at most 11 bytes,
/// and exactly the decimal form of the number (no sign on 0, no leading zeros or +).
fn small_integer(value: &[u8]) -> Option<i32> {
    if value.is_empty() || value.len() > 11 {
        return None;
    }
    let n: i32 = std::str::from_utf8(value).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == value).then_some(n)
}

fn put_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(0x80);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

const TRUNCATED: Refusal = Refusal::BadFormat("the payload ends inside its value");

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, Refusal> {
        Ok(self.take(1)?[0])
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Refusal> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(TRUNCATED)?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    /// A plain length, or the special form's tag (`Err` of the low 6 bits).
    fn length(&mut self) -> Result<Result<u64, u8>, Refusal> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Ok(u64::from(first & 0x3F)),
            1 => Ok(u64::from(first & 0x3F) << 8 | u64::from(self.byte()?)),
            2 => match first {
                0x80 => Ok(u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().expect("4 bytes"),
                ))),
                0x81 => Ok(u64::from_be_bytes(
                    self.take(8)?.try_into().expect("8 bytes"),
                )),
                _ => return Err(Refusal::BadFormat("an unknown length form")),
            },
            _ => Err(first & 0x3F),
        })
    }

    fn plain_length(&mut self) -> Result<usize, Refusal> {
        match self.length()? {
            Ok(len) => usize::try_from(len).map_err(|_| TRUNCATED),
            Err(_) => Err(Refusal::BadFormat("a special form where a length belongs")),
        }
    }

    fn string(&mut self, max_len: usize) -> Result<Vec<u8>, Refusal> {
        match self.length()? {
            Ok(len) => {
                let len = usize::try_from(len).map_err(|_| TRUNCATED)?;
                Ok(self.take(len)?.to_vec())
            }
            Err(0) => Ok((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => {
                let n = i16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"));
                Ok(n.to_string().into_bytes())
            }
            Err(2) => {
                let n = i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
                Ok(n.to_string().into_bytes())
            }
            Err(3) => {
                let compressed_len = self.plain_length()?;
                let len = self.plain_length()?;
                if len > max_len {
                    return Err(Refusal::BadFormat(
                        "the value is longer than proto-max-bulk-len",
                    ));
                }
                lzf_decompress(self.take(compressed_len)?, len)
            }
            Err(_) => Err(Refusal::BadFormat("an unknown string encoding")),
        }
    }
}

/// LZF's format: a control byte below 32 starts a run of that many plus one literal
/// bytes; any other is a back reference, length in its top 3 bits (7: plus the next
/// byte) plus 2, distance in its low 5 bits and the next byte, plus 1.
fn lzf_decompress(input: &[u8], len: usize) -> Result<Vec<u8>, Refusal> {
    const BAD: Refusal = Refusal::BadFormat("the compressed value is corrupt");
    // A reference of 3 input bytes yields at most 264 output bytes: a declared length
    // beyond that ratio is a lie, refused before allocating for it.
    if len > input.len().saturating_mul(88) {
        return Err(BAD);
    }
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let control = usize::from(input[i]);
        i += 1;
        if control < 32 {
            let run = input.get(i..i + control + 1).ok_or(BAD)?;
            if out.len() + run.len() > len {
                return Err(BAD);
            }
            out.extend_from_slice(run);
            i += run.len();
        } else {
            let mut run = control >> 5;
            if run == 7 {
                run += usize::from(*input.get(i).ok_or(BAD)?);
                i += 1;
            }
            let low = usize::from(*input.get(i).ok_or(BAD)?);
            i += 1;
            let distance = ((control & 0x1F) << 8 | low) + 1;
            let run = run + 2;
            if distance > out.len() || out.len() + run > len {
                return Err(BAD);
            }
            // Byte by byte: the source may overlap what is being written.
            let from = out.len() - distance;
            for k in 0..run {
                out.push(out[from + k]);
            }
        }
    }
    if out.len() != len {
        return Err(BAD);
    }
    Ok(out)
}

/// CRC-64 with the Jones polynomial, as Redis computes it for payloads and RDB files.
pub fn crc64(mut crc: u64, bytes: &[u8]) -> u64 {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        // The polynomial 0xad93d23594c935a9, bit-reversed: the CRC is reflected.
        const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
        let mut table = [0u64; 256];
        for (i, slot) in table.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            }
            *slot = c;
        }
        table
    });
    for &b in bytes {
        crc = table[((crc ^ u64::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn crc64_is_redis_crc64() {
        // Redis's crc64.c test vector.
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    /// Payloads redis-server 7.0.15 gave for DUMP after SET of each value.
    const FROM_REDIS: &[(&[u8], &[u8])] = &[
        (b"foo", b"\x00\x03foo\n\x00sI9\xdbM\xc1\xba\x97"),
        (b"123", b"\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9"),
        (b"-32768", b"\x00\xc1\x00\x80\n\x00\xb5@\x06GS\xbb\x1a\xce"),
        (
            b"100000",
            b"\x00\xc2\xa0\x86\x01\x00\n\x00\xf1$\x03Po/\xa6t",
        ),
        (b"0123", b"\x00\x040123\n\x00\n\xe4\x0c\x92\x9e;d\""),
        (b"-0", b"\x00\x02-0\n\x00\xd5A\x1f\xd9\xd6\xd0P\xcc"),
        (
            b"12345678901",
            b"\x00\x0b12345678901\n\x000NR\xd7'\x17e\x10",
        ),
        (
            b"2147483647",
            b"\x00\xc2\xff\xff\xff\x7f\n\x00,t\xe5\x9e\xe0.\xad\xa1",
        ),
        (
            b"2147483648",
            b"\x00\n2147483648\n\x00\xe7\xb1)\xa3L\x1dv\xee",
        ),
        (
            b"-2147483648",
            b"\x00\xc2\x00\x00\x00\x80\n\x00\xc7O\x87>3U\x81\x87",
        ),
        (b"-128", b"\x00\xc0\x80\n\x00\x99f2m/\x0c[\xd9"),
        (b"127", b"\x00\xc0\x7f\n\x00\r\xb5\xeb1RT\xc5\x14"),
        (b"128", b"\x00\xc1\x80\x00\n\x00\xebz\xb3\xb5\x10\xcfKe"),
    ];

    #[test]
    fn dumps_as_redis_does() {
        for (value, payload) in FROM_REDIS {
            assert_eq!(
                &dump(value)[..],
                *payload,
                "{}",
                String::from_utf8_lossy(value)
            );
            assert_eq!(restore(payload, 100).as_deref(), Ok(*value));
        }
    }

    #[test]
    fn reads_redis_compressed_strings() {
        // DUMP after SET of 100 'a's, and of "hello world " 10 times: LZF.
        let a = b"\x00\xc3\t@d\x01aa\xe0W\x00\x01aa\n\x00\xe8\xa3\xb5\x07\xb0m\xf2q";
        assert_eq!(restore(a, 1 << 20), Ok(vec![b'a'; 100]));
        let hello = b"\x00\xc3\x14@x\x0chello world h\xe0`\x0b\x01d \n\x00\xd4\x03_Cl\x9a\x1b\xd7";
        assert_eq!(restore(hello, 1 << 20), Ok(b"hello world ".repeat(10)));
        // Longer than the limit allows.
        assert!(matches!(restore(a, 99), Err(Refusal::BadFormat(_))));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let good = dump(b"hello");
        assert_eq!(restore(&good[..9], 100), Err(Refusal::VersionOrChecksum));
        let mut flipped = good.clone();
        flipped[3] ^= 1;
        assert_eq!(restore(&flipped, 100), Err(Refusal::VersionOrChecksum));
        let resealed = |mut body: Vec<u8>| {
            let crc = crc64(0, &body);
            body.extend_from_slice(&crc.to_le_bytes());
            body
        };
        let newer = resealed(b"\x00\x01x\x0d\x00".to_vec());
        assert_eq!(restore(&newer, 100), Err(Refusal::VersionOrChecksum));
        let list = resealed(b"\x12\x00\x0a\x00".to_vec());
        assert!(matches!(restore(&list, 100), Err(Refusal::BadFormat(m)) if m.contains("list")));
        let truncated = resealed(b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xffab\x0a\x00".to_vec());
        assert_eq!(restore(&truncated, 100), Err(TRUNCATED));
        let lzf_lie = resealed(b"\x00\xc3\x02\x80\x00\x7f\xff\x00\x01\x61\x0a\x00".to_vec());
        assert!(matches!(
            restore(&lzf_lie, usize::MAX),
            Err(Refusal::BadFormat(_))
        ));
    }

    proptest! {
        #[test]
        fn every_value_survives_dump_and_restore(value in prop::collection::vec(any::<u8>(), 0..20_000)) {
            prop_assert_eq!(restore(&dump(&value), usize::MAX), Ok(value));
        }

        #[test]
        fn integer_texts_survive_too(n in any::<i64>()) {
            let text = n.to_string().into_bytes();
            prop_assert_eq!(restore(&dump(&text), usize::MAX), Ok(text));
        }

        /// Any body under a valid footer, so the decoder, not the checksum, meets it:
        /// strings, integers and LZF streams built from random bytes.
        #[test]
        fn any_sealed_body_is_read_or_refused(
            form in prop::sample::select(vec![0x00u8, 0x40, 0x80, 0x81, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4]),
            rest in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut payload = vec![STRING_TYPE, form];
            payload.extend_from_slice(&rest);
            payload.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
            let crc = crc64(0, &payload);
            payload.extend_from_slice(&crc.to_le_bytes());
            if let Ok(value) = restore(&payload, 1 << 16) {
                prop_assert!(value.len() <= (1 << 16).max(payload.len()));
            }
        }

        #[test]
        fn damaged_payloads_are_refused_not_crashed_on(
            value in prop::collection::vec(any::<u8>(), 0..300),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut payload = dump(&value);
            let i = at.index(payload.len());
            payload[i] = byte;
            // Whatever it holds, restore answers; reading back a different value
            // would mean the checksum missed a change.
            if let Ok(read) = restore(&payload, 1 << 20) {
                prop_assert!(read == value || payload == dump(&value));
            }
        }
    }
}
