//! The serialized value of DUMP and RESTORE, in Redis's format, so values move between
//! hotkv and Redis either way (`redis-cli --pipe` of RESTOREs, migration tools).
//!
//! A payload is:
//!
//! ```text
//! type (1 byte) | object | RDB version (2 bytes LE) | CRC-64 (8 bytes LE)
//! ```
//!
//! The CRC (Jones polynomial, reflected, initial value 0, as Redis's crc64) covers
//! everything before it, version included. A string object is a length and the bytes,
//! or an integer, or LZF-compressed bytes. Lengths: `00xxxxxx` (6 bits), `01xxxxxx
//! xxxxxxxx` (14 bits, big-endian), `0x80` + 4 bytes BE, `0x81` + 8 bytes BE. Special
//! forms start `11`: `0xC0`, `0xC1`, `0xC2` an 8, 16 or 32-bit integer (LE) whose
//! decimal text is the value; `0xC3` compressed length, plain length, LZF data.
//!
//! Objects by type (a length is counted in elements, or pairs for hashes and sorted sets):
//! - 0 string; 1 list, 2 set: a length, then strings; 4 hash: a length, then field and
//!   value strings; 5 sorted set: a length, then member strings each followed by its
//!   score, an 8-byte little-endian double; 3, the older sorted set: scores as a length
//!   byte and decimal text (253 NaN, 254 inf, 255 -inf).
//! - 11 set of integers: one string holding an intset (element width 2, 4 or 8 as a
//!   u32, count as a u32, then the integers, all little-endian).
//! - 16 hash, 17 sorted set, 20 set: one string holding a listpack (see [`listpack`]).
//! - 18 list: a length of nodes, each a container tag (1 one element, 2 a listpack of
//!   elements) and a string.
//! - 19 stream (15 without 7.0's counters, 21 with consumers' active times): nodes of entries in listpacks, the
//!   stream's IDs and counters, its consumer groups (see `dump_payload/stream.rs`).
//!
//! hotkv writes version 10 (Redis 7.0): strings with integers as Redis does (texts of at
//! most 11 bytes that are exactly a 32-bit integer's decimal form) and other strings
//! LZF-compressed where that saves 4 bytes or more (strings of over 20 bytes, under
//! `rdbcompression yes`, as Redis; `dump_payload/lzf.rs`), else plain; collections in the plain forms 1, 2, 4 and 5, which Redis
//! reads (and packs as it likes), and streams as 19. It reads what Redis 7.0 to 7.4 write for these types,
//! compressed or not, except the ziplist forms older Redis wrote (9, 10, 12, 13, 14).

use crate::entry::Kind;
use crate::packed;

mod lzf;
pub mod rdb_file;
mod stream;
pub use stream::dump as dump_stream;

/// The RDB version hotkv writes: Redis 7.0's.
const WRITTEN_VERSION: u16 = 10;
/// The newest version read: Redis 7.4's, whose string objects are 7.0's.
const NEWEST_READ_VERSION: u16 = 12;
const STRING_TYPE: u8 = 0;
const LIST_TYPE: u8 = 1;
const SET_TYPE: u8 = 2;
const OLD_ZSET_TYPE: u8 = 3;
const HASH_TYPE: u8 = 4;
const ZSET_TYPE: u8 = 5;
const INTSET_TYPE: u8 = 11;
const HASH_LISTPACK_TYPE: u8 = 16;
const ZSET_LISTPACK_TYPE: u8 = 17;
const QUICKLIST_TYPE: u8 = 18;
const SET_LISTPACK_TYPE: u8 = 20;
pub const FOOTER: usize = 2 + 8;

/// Why a payload was refused, in Redis's words.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Too short, a version newer than hotkv reads, or a checksum that does not match.
    VersionOrChecksum,
    /// Checked, but not a string object hotkv can read.
    BadFormat(&'static str),
}

/// A value of `kind` (its stored payload: bytes, or packed) as DUMP gives it; strings
/// compressed where that pays if `compress` (`rdbcompression`, see [`put_string`]).
pub fn dump(kind: Kind, value: &[u8], compress: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 16);
    match kind {
        Kind::String => {
            out.push(STRING_TYPE);
            put_string(&mut out, value, compress);
        }
        Kind::List | Kind::Set => {
            out.push(if kind == Kind::List {
                LIST_TYPE
            } else {
                SET_TYPE
            });
            put_length(&mut out, packed::count(value) as u64);
            for element in packed::elements(value) {
                put_string(&mut out, element, compress);
            }
        }
        Kind::Hash => {
            out.push(HASH_TYPE);
            put_length(&mut out, packed::count(value) as u64);
            for (field, v) in packed::pairs(value) {
                put_string(&mut out, field, compress);
                put_string(&mut out, v, compress);
            }
        }
        Kind::ZSet => {
            out.push(ZSET_TYPE);
            put_length(&mut out, packed::count(value) as u64);
            for (member, score) in packed::scored(value) {
                put_string(&mut out, member, compress);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Kind::Stream => unreachable!("DUMP decodes streams and calls dump_stream"),
    }
    seal(out)
}

/// The version and checksum footer appended.
fn seal(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// What precedes the footer, once the footer's version and checksum are checked.
fn checked_body(payload: &[u8], verify_crc: bool) -> Result<&[u8], Refusal> {
    if payload.len() < FOOTER {
        return Err(Refusal::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - FOOTER);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let stored_crc = u64::from_le_bytes(footer[2..].try_into().expect("8 bytes"));
    if version > NEWEST_READ_VERSION
        || verify_crc && crc64(0, &payload[..payload.len() - 8]) != stored_crc
    {
        return Err(Refusal::VersionOrChecksum);
    }
    Ok(body)
}

/// A FUNCTION DUMP payload for libraries of these codes: each a type byte (245) and
/// a string, as Redis 7.0 writes them (no libraries: the footer alone); `compress` as
/// for [`dump`].
pub fn functions<'a>(codes: impl Iterator<Item = &'a [u8]>, compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(FUNCTION_TYPE);
        put_string(&mut out, code, compress);
    }
    seal(out)
}

const FUNCTION_TYPE: u8 = 245;

/// The code of each library a FUNCTION DUMP payload holds (see [`functions`]); the
/// records of Redis 7.0's release candidates (246) are not read.
pub fn function_codes(payload: &[u8], max_len: usize) -> Result<Vec<Vec<u8>>, Refusal> {
    const CANDIDATE_FUNCTION_TYPE: u8 = 246;
    let mut r = Reader {
        bytes: checked_body(payload, true)?,
        at: 0,
    };
    let mut codes = Vec::new();
    while r.at < r.bytes.len() {
        match r.byte()? {
            FUNCTION_TYPE => codes.push(r.string(max_len)?),
            CANDIDATE_FUNCTION_TYPE => {
                return Err(Refusal::BadFormat(
                    "functions of a Redis 7.0 release candidate are not read",
                ))
            }
            _ => return Err(Refusal::BadFormat("given type is not a function")),
        }
    }
    Ok(codes)
}

/// A string as Redis writes it: an integer's text as the integer; with `compress`
/// (`rdbcompression yes`), one of over 20 bytes LZF-compressed if that saves 4 bytes or
/// more; else its length and bytes.
fn put_string(out: &mut Vec<u8>, value: &[u8], compress: bool) {
    const COMPRESSED_OVER: usize = 20;
    if compress && value.len() > COMPRESSED_OVER {
        if let Some(packed) = lzf::compress(value, value.len() - 4) {
            out.push(0xC3);
            put_length(out, packed.len() as u64);
            put_length(out, value.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
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
            put_length(out, value.len() as u64);
            out.extend_from_slice(value);
        }
    }
}

/// The value a payload holds: its type and stored payload (a string's bytes, or a
/// collection packed). `max_len` bounds what a compressed string may expand to (the
/// largest value a client could send), so a small payload cannot ask for an unbounded
/// allocation. `verify_crc` off (DEBUG SET-SKIP-CHECKSUM-VALIDATION) lets a test hand
/// the decoder any body without sealing it first; the version is checked still.
pub fn restore(
    payload: &[u8],
    max_len: usize,
    verify_crc: bool,
) -> Result<(Kind, Vec<u8>), Refusal> {
    let mut r = Reader {
        bytes: checked_body(payload, verify_crc)?,
        at: 0,
    };
    // As Redis, bytes after the object (before the footer) are not looked at.
    let kind = r.byte()?;
    read_object(kind, &mut r, max_len)
}

/// The object of type `kind` at `r` (see [`restore`]).
fn read_object(kind: u8, r: &mut Reader, max_len: usize) -> Result<(Kind, Vec<u8>), Refusal> {
    let value = match kind {
        STRING_TYPE => return Ok((Kind::String, r.string(max_len)?)),
        LIST_TYPE | SET_TYPE => {
            let n = r.plain_length()?;
            let items = (0..n)
                .map(|_| r.string(max_len))
                .collect::<Result<Vec<_>, _>>()?;
            if kind == LIST_TYPE {
                Value::List(items)
            } else {
                Value::Set(items)
            }
        }
        HASH_TYPE => {
            let n = r.plain_length()?;
            let mut pairs = Vec::new();
            for _ in 0..n {
                pairs.push((r.string(max_len)?, r.string(max_len)?));
            }
            Value::Hash(pairs)
        }
        ZSET_TYPE | OLD_ZSET_TYPE => {
            let n = r.plain_length()?;
            let mut scored = Vec::new();
            for _ in 0..n {
                let member = r.string(max_len)?;
                let score = if kind == ZSET_TYPE {
                    f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))
                } else {
                    r.text_score()?
                };
                scored.push((member, score));
            }
            Value::ZSet(scored)
        }
        INTSET_TYPE => Value::Set(intset(&r.string(max_len)?)?),
        SET_LISTPACK_TYPE => Value::Set(listpack(&r.string(max_len)?)?),
        HASH_LISTPACK_TYPE => Value::Hash(in_pairs(listpack(&r.string(max_len)?)?)?),
        ZSET_LISTPACK_TYPE => {
            let pairs = in_pairs(listpack(&r.string(max_len)?)?)?;
            let scored = pairs
                .into_iter()
                .map(|(member, score)| Ok((member, text_to_score(&score)?)))
                .collect::<Result<Vec<_>, Refusal>>()?;
            Value::ZSet(scored)
        }
        stream::OLD_STREAM_TYPE | stream::STREAM_TYPE | stream::STREAM_WITH_ACTIVE_TIME_TYPE => {
            let restored = stream::restore(r, kind, max_len)?;
            return Ok((Kind::Stream, restored.encode()));
        }
        QUICKLIST_TYPE => {
            let nodes = r.plain_length()?;
            let mut items = Vec::new();
            for _ in 0..nodes {
                // As Redis, a node of no bytes is refused, even a plain one (whose
                // one element could be empty).
                let tag = r.plain_length()?;
                match tag {
                    1 | 2 => match r.string(max_len)? {
                        node if node.is_empty() => {
                            return Err(Refusal::BadFormat("an empty list node"))
                        }
                        element if tag == 1 => items.push(element),
                        packed => items.extend(listpack(&packed)?),
                    },
                    _ => return Err(Refusal::BadFormat("a list node of an unknown kind")),
                }
            }
            Value::List(items)
        }
        kind => return Err(Refusal::BadFormat(type_name(kind))),
    };
    value.packed()
}

/// Hash fields and values, in order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A collection as read from a payload, before it is checked and packed.
enum Value {
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Hash(Pairs),
    ZSet(Vec<(Vec<u8>, f64)>),
}

impl Value {
    /// The collection packed, refused if empty or holding a member twice, as Redis
    /// refuses such payloads.
    fn packed(self) -> Result<(Kind, Vec<u8>), Refusal> {
        const EMPTY: Refusal = Refusal::BadFormat("the payload holds an empty collection");
        const TWICE: Refusal = Refusal::BadFormat("the payload holds a member twice");
        let distinct = |mut keys: Vec<&[u8]>| {
            let n = keys.len();
            keys.sort_unstable();
            keys.dedup();
            keys.len() == n
        };
        match self {
            Value::List(items) if items.is_empty() => Err(EMPTY),
            Value::List(items) => Ok((Kind::List, packed::pack(items.iter().map(Vec::as_slice)))),
            Value::Set(mut items) => {
                items.sort_by(|a, b| packed::set_order(a, b));
                let n = items.len();
                items.dedup();
                match (n, items.len()) {
                    (0, _) => Err(EMPTY),
                    (a, b) if a != b => Err(TWICE),
                    _ => Ok((Kind::Set, packed::pack(items.iter().map(Vec::as_slice)))),
                }
            }
            Value::Hash(pairs) if pairs.is_empty() => Err(EMPTY),
            Value::Hash(pairs) => {
                if !distinct(pairs.iter().map(|p| p.0.as_slice()).collect()) {
                    return Err(TWICE);
                }
                let mut b = packed::Builder::with_capacity(0);
                for (field, value) in &pairs {
                    b.push_pair(field, value);
                }
                Ok((Kind::Hash, b.finish()))
            }
            Value::ZSet(scored) if scored.is_empty() => Err(EMPTY),
            Value::ZSet(mut scored) => {
                if scored.iter().any(|s| s.1.is_nan()) {
                    return Err(Refusal::BadFormat(
                        "the payload holds a score that is not a number",
                    ));
                }
                if !distinct(scored.iter().map(|p| p.0.as_slice()).collect()) {
                    return Err(TWICE);
                }
                scored.sort_by(|a, b| packed::score_order((&a.0, a.1), (&b.0, b.1)));
                let mut b = packed::Builder::with_capacity(0);
                for (member, score) in &scored {
                    b.push_scored(member, *score);
                }
                Ok((Kind::ZSet, b.finish()))
            }
        }
    }
}

/// Pairs of consecutive elements (hash fields and values, members and scores).
fn in_pairs(items: Vec<Vec<u8>>) -> Result<Pairs, Refusal> {
    if !items.len().is_multiple_of(2) {
        return Err(Refusal::BadFormat(
            "a listpack of pairs holds an odd number of elements",
        ));
    }
    let mut it = items.into_iter();
    Ok(std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect())
}

fn text_to_score(text: &[u8]) -> Result<f64, Refusal> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or(Refusal::BadFormat("a score that is not a number"))
}

/// The integers of an intset, as decimal text.
fn intset(bytes: &[u8]) -> Result<Vec<Vec<u8>>, Refusal> {
    const BAD: Refusal = Refusal::BadFormat("the intset is corrupt");
    let header = bytes.get(..8).ok_or(BAD)?;
    let width = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let count = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
    if ![2, 4, 8].contains(&width) || bytes.len() != 8 + width * count {
        return Err(BAD);
    }
    Ok(bytes[8..]
        .chunks(width)
        .map(|c| {
            let n = match width {
                2 => i64::from(i16::from_le_bytes(c.try_into().expect("2 bytes"))),
                4 => i64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))),
                _ => i64::from_le_bytes(c.try_into().expect("8 bytes")),
            };
            n.to_string().into_bytes()
        })
        .collect())
}

/// The elements of a listpack, integers as decimal text. A listpack is its size in
/// bytes (u32) and element count (u16), the elements, and 0xFF. Each element is an
/// encoding byte, maybe more length bytes, the data, and its own length again
/// backwards (1 to 5 bytes). Encodings: `0xxxxxxx` a 7-bit unsigned integer; `10xxxxxx`
/// a string of up to 63 bytes; `110xxxxx` and a byte, a 13-bit signed integer;
/// `1110xxxx` and a byte, the length of a string of up to 4095 bytes; 0xF0 and a u32,
/// a longer string's; 0xF1 to 0xF4, a 16, 24, 32 or 64-bit signed integer follows.
/// All little-endian.
pub fn listpack(bytes: &[u8]) -> Result<Vec<Vec<u8>>, Refusal> {
    const BAD: Refusal = Refusal::BadFormat("the listpack is corrupt");
    let total = bytes.get(..4).ok_or(BAD)?;
    if u32::from_le_bytes(total.try_into().expect("4 bytes")) as usize != bytes.len() {
        return Err(BAD);
    }
    let mut r = Reader { bytes, at: 6 };
    let mut out = Vec::new();
    loop {
        let start = r.at;
        let first = r.byte().map_err(|_| BAD)?;
        let signed = |r: &mut Reader, n: usize| -> Result<Vec<u8>, Refusal> {
            let raw = r.take(n).map_err(|_| BAD)?;
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(raw);
            let shift = 64 - 8 * n as u32;
            Ok(((i64::from_le_bytes(buf) << shift) >> shift)
                .to_string()
                .into_bytes())
        };
        let element = match first {
            0xFF => break,
            b if b & 0x80 == 0 => (b & 0x7F).to_string().into_bytes(),
            b if b & 0xC0 == 0x80 => r.take(usize::from(b & 0x3F)).map_err(|_| BAD)?.to_vec(),
            b if b & 0xE0 == 0xC0 => {
                let v = (i64::from(b & 0x1F) << 8) | i64::from(r.byte().map_err(|_| BAD)?);
                (if v >= 1 << 12 { v - (1 << 13) } else { v })
                    .to_string()
                    .into_bytes()
            }
            b if b & 0xF0 == 0xE0 => {
                let len = (usize::from(b & 0x0F) << 8) | usize::from(r.byte().map_err(|_| BAD)?);
                r.take(len).map_err(|_| BAD)?.to_vec()
            }
            0xF0 => {
                let len =
                    u32::from_le_bytes(r.take(4).map_err(|_| BAD)?.try_into().expect("4 bytes"));
                r.take(len as usize).map_err(|_| BAD)?.to_vec()
            }
            0xF1 => signed(&mut r, 2)?,
            0xF2 => signed(&mut r, 3)?,
            0xF3 => signed(&mut r, 4)?,
            0xF4 => signed(&mut r, 8)?,
            _ => return Err(BAD),
        };
        r.take(backlen_size(r.at - start)).map_err(|_| BAD)?;
        out.push(element);
    }
    if r.at != bytes.len() {
        return Err(BAD);
    }
    Ok(out)
}

/// The bytes a listpack element of `len` bytes (encoding and data) stores its length
/// backwards in, by Redis's thresholds.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// What a payload of another type holds, for the error that refuses it.
fn type_name(kind: u8) -> &'static str {
    match kind {
        10 | 14 => "the payload holds a list in the ziplist form of Redis before 7.0, which hotkv does not read",
        12 => "the payload holds a sorted set in the ziplist form of Redis before 7.0, which hotkv does not read",
        9 | 13 => "the payload holds a hash in a form of Redis before 7.0, which hotkv does not read",
        6 | 7 => "the payload holds a module value; hotkv has no modules",
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

/// What a read past the end of the bytes meets.
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

    /// A score of the older sorted-set form: a length byte (253 NaN, 254 inf, 255
    /// -inf) and that much decimal text.
    fn text_score(&mut self) -> Result<f64, Refusal> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => text_to_score(self.take(usize::from(len))?),
        }
    }

    fn u64_length(&mut self) -> Result<u64, Refusal> {
        match self.length()? {
            Ok(len) => Ok(len),
            Err(_) => Err(Refusal::BadFormat("a special form where a length belongs")),
        }
    }

    fn plain_length(&mut self) -> Result<usize, Refusal> {
        usize::try_from(self.u64_length()?).map_err(|_| TRUNCATED)
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
                lzf::decompress(self.take(compressed_len)?, len)
            }
            Err(_) => Err(Refusal::BadFormat("an unknown string encoding")),
        }
    }
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

    /// As DUMP writes it under Redis's default, `rdbcompression yes`.
    fn dump_string(value: &[u8]) -> Vec<u8> {
        dump(Kind::String, value, true)
    }

    #[test]
    fn function_payloads_round_trip_and_match_redis() {
        // FUNCTION DUMP of an empty Redis 7.0: the footer alone.
        assert_eq!(
            functions(std::iter::empty(), true),
            b"\x0a\x00\x5d\x9b\x5c\x40\x0f\x7f\xa2\xda"
        );
        let codes: Vec<Vec<u8>> = vec![
            b"#!lua name=a\nredis.register_function('f', function() return 1 end)".to_vec(),
            vec![b'#'; 20_000],
        ];
        let payload = functions(codes.iter().map(Vec::as_slice), true);
        assert!(payload.len() < 1000, "the long library compressed");
        assert_eq!(function_codes(&payload, usize::MAX), Ok(codes));
        let mut torn = payload.clone();
        torn[3] ^= 1;
        assert_eq!(
            function_codes(&torn, usize::MAX),
            Err(Refusal::VersionOrChecksum)
        );
    }

    fn restore_string(payload: &[u8], max_len: usize) -> Result<Vec<u8>, Refusal> {
        restore(payload, max_len, true).map(|(kind, value)| {
            assert_eq!(kind, Kind::String);
            value
        })
    }

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
                &dump_string(value)[..],
                *payload,
                "{}",
                String::from_utf8_lossy(value)
            );
            assert_eq!(restore_string(payload, 100).as_deref(), Ok(*value));
        }
    }

    #[test]
    fn reads_redis_compressed_strings() {
        // DUMP after SET of 100 'a's, and of "hello world " 10 times: LZF.
        let a = b"\x00\xc3\t@d\x01aa\xe0W\x00\x01aa\n\x00\xe8\xa3\xb5\x07\xb0m\xf2q";
        assert_eq!(restore_string(a, 1 << 20), Ok(vec![b'a'; 100]));
        let hello = b"\x00\xc3\x14@x\x0chello world h\xe0`\x0b\x01d \n\x00\xd4\x03_Cl\x9a\x1b\xd7";
        assert_eq!(
            restore_string(hello, 1 << 20),
            Ok(b"hello world ".repeat(10))
        );
        // Longer than the limit allows.
        assert!(matches!(restore_string(a, 99), Err(Refusal::BadFormat(_))));
    }

    #[test]
    fn compresses_long_strings_where_redis_does() {
        // Redis's payloads for the same values (above) are 23 and 45 bytes.
        for (value, redis_len) in [(vec![b'a'; 100], 23), (b"hello world ".repeat(10), 45)] {
            let payload = dump_string(&value);
            assert_eq!(payload[1], 0xC3, "compressed");
            assert!(payload.len() <= redis_len, "{} bytes", payload.len());
            assert_eq!(restore_string(&payload, 1 << 20), Ok(value.clone()));
            let plain = dump(Kind::String, &value, false);
            assert_eq!(
                plain.len(),
                1 + 2 + value.len() + FOOTER, // type, a two-byte length (over 63), the bytes
                "rdbcompression no"
            );
        }
        // 20 bytes or fewer, or nothing saved: plain, as Redis writes them.
        let short = b"aaaaaaaaaaaaaaaaaaaa";
        assert_eq!(dump_string(short), dump(Kind::String, short, false));
        let varied = b"abcdefghijklmnopqrstuvwxyz";
        assert_eq!(dump_string(varied), dump(Kind::String, varied, false));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let good = dump_string(b"hello");
        assert_eq!(
            restore_string(&good[..9], 100),
            Err(Refusal::VersionOrChecksum)
        );
        let mut flipped = good.clone();
        flipped[3] ^= 1;
        assert_eq!(
            restore_string(&flipped, 100),
            Err(Refusal::VersionOrChecksum)
        );
        let resealed = |mut body: Vec<u8>| {
            let crc = crc64(0, &body);
            body.extend_from_slice(&crc.to_le_bytes());
            body
        };
        let newer = resealed(b"\x00\x01x\x0d\x00".to_vec());
        assert_eq!(restore_string(&newer, 100), Err(Refusal::VersionOrChecksum));
        let list = resealed(b"\x0e\x00\x0a\x00".to_vec());
        assert!(
            matches!(restore(&list, 100, true), Err(Refusal::BadFormat(m)) if m.contains("list"))
        );
        let empty = resealed(b"\x12\x00\x0a\x00".to_vec());
        assert!(
            matches!(restore(&empty, 100, true), Err(Refusal::BadFormat(m)) if m.contains("empty"))
        );
        let empty_node = resealed(b"\x12\x01\x01\x00\x0a\x00".to_vec());
        assert!(
            matches!(restore(&empty_node, 100, true), Err(Refusal::BadFormat(m)) if m.contains("empty list node"))
        );
        let one_empty_element = resealed(b"\x01\x01\x00\x0a\x00".to_vec());
        assert_eq!(
            restore(&one_empty_element, 100, true).map(|(kind, _)| kind),
            Ok(Kind::List)
        );
        let twice = resealed(b"\x02\x02\x01a\x01a\x0a\x00".to_vec());
        assert!(
            matches!(restore(&twice, 100, true), Err(Refusal::BadFormat(m)) if m.contains("twice"))
        );
        let truncated = resealed(b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xffab\x0a\x00".to_vec());
        assert_eq!(restore_string(&truncated, 100), Err(TRUNCATED));
        let lzf_lie = resealed(b"\x00\xc3\x02\x80\x00\x7f\xff\x00\x01\x61\x0a\x00".to_vec());
        assert!(matches!(
            restore_string(&lzf_lie, usize::MAX),
            Err(Refusal::BadFormat(_))
        ));
    }

    proptest! {
        #[test]
        fn every_value_survives_dump_and_restore(value in prop::collection::vec(any::<u8>(), 0..20_000)) {
            prop_assert_eq!(restore_string(&dump_string(&value), usize::MAX), Ok(value));
        }

        #[test]
        fn integer_texts_survive_too(n in any::<i64>()) {
            let text = n.to_string().into_bytes();
            prop_assert_eq!(restore_string(&dump_string(&text), usize::MAX), Ok(text));
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
            if let Ok(value) = restore_string(&payload, 1 << 16) {
                prop_assert!(value.len() <= (1 << 16).max(payload.len()));
            }
        }

        #[test]
        fn damaged_payloads_are_refused_not_crashed_on(
            value in prop::collection::vec(any::<u8>(), 0..300),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut payload = dump_string(&value);
            let i = at.index(payload.len());
            payload[i] = byte;
            // Whatever it holds, restore answers; reading back a different value
            // would mean the checksum missed a change.
            if let Ok(read) = restore_string(&payload, 1 << 20) {
                prop_assert!(read == value || payload == dump_string(&value));
            }
        }
    }

    /// Payloads redis-server 7.0.15 gave for DUMP of a list (a quicklist node holding
    /// an LZF-compressed listpack with every integer width), a set of integers (an
    /// intset), a hash and a sorted set (listpacks).
    #[test]
    fn reads_redis_collections() {
        let elements = |kind: Kind, payload: &[u8]| {
            let (k, packed) = restore(payload, 1 << 20, true).unwrap();
            assert_eq!(k, kind);
            packed::elements(&packed)
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        };
        let list = b"\x12\x01\x02\xc3*@j\x16j\x00\x00\x00\x07\x00\x81a\x02\x0c\x01\xf1x\xec\x03\xf2p\x11\x01\x04\xe0Fx\xe0<\x00\rH\xf4\x00\xe6\x8e\xe7\xfd\xff\xff\xff\t\x7f\x01\xff\n\x00|\xdd)<\xe9\x87\xdb\x9f";
        let long = "x".repeat(70);
        let want: Vec<&[u8]> = vec![
            b"a",
            b"12",
            b"-5000",
            b"70000",
            long.as_bytes(),
            b"-9000000000",
            b"127",
        ];
        assert_eq!(elements(Kind::List, list), want);
        let intset = b"\x0b\x14\x04\x00\x00\x00\x03\x00\x00\x00\x90\xee\xfe\xff\x01\x00\x00\x00\x03\x00\x00\x00\n\x00\t\x0e\xecI\xa6PM\x88";
        assert_eq!(elements(Kind::Set, intset), [&b"-70000"[..], b"1", b"3"]);
        let hash = b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02*\x01\xff\n\x00\xff0\xe8\x7frb\xd9\x91";
        assert_eq!(elements(Kind::Hash, hash), [&b"f"[..], b"v", b"n", b"42"]);
        let zset = b"\x11\x1a\x1a\x00\x00\x00\x06\x00\x81b\x02\xdf\xfe\x02\x81a\x02\x831.5\x04\x81c\x02\x03\x01\xff\n\x00\xe5\xc1h\x147?kN";
        let (kind, packed) = restore(zset, 100, true).unwrap();
        assert_eq!(kind, Kind::ZSet);
        let scored: Vec<_> = packed::scored(&packed).collect();
        assert_eq!(
            scored,
            [(&b"b"[..], -2.0), (&b"a"[..], 1.5), (&b"c"[..], 3.0)]
        );
    }

    fn collection() -> impl Strategy<Value = (Kind, Vec<u8>)> {
        let bytes = || prop::collection::vec(any::<u8>(), 0..12);
        prop_oneof![
            prop::collection::vec(bytes(), 1..20)
                .prop_map(|items| (Kind::List, packed::pack(items.iter().map(Vec::as_slice)))),
            prop::collection::btree_set(bytes(), 1..20).prop_map(|items| {
                let mut items: Vec<_> = items.into_iter().collect();
                items.sort_by(|a, b| packed::set_order(a, b));
                (Kind::Set, packed::pack(items.iter().map(Vec::as_slice)))
            }),
            prop::collection::btree_map(bytes(), bytes(), 1..20).prop_map(|pairs| {
                let mut b = packed::Builder::with_capacity(0);
                for (f, v) in &pairs {
                    b.push_pair(f, v);
                }
                (Kind::Hash, b.finish())
            }),
            prop::collection::btree_map(bytes(), -1e6f64..1e6, 1..20).prop_map(|scored| {
                let mut scored: Vec<_> = scored.into_iter().collect();
                scored.sort_by(|a, b| packed::score_order((&a.0, a.1), (&b.0, b.1)));
                let mut b = packed::Builder::with_capacity(0);
                for (m, s) in &scored {
                    b.push_scored(m, *s);
                }
                (Kind::ZSet, b.finish())
            }),
        ]
    }

    proptest! {
        #[test]
        fn every_collection_survives_dump_and_restore(
            (kind, value) in collection(),
            compress in any::<bool>(),
        ) {
            prop_assert_eq!(restore(&dump(kind, &value, compress), usize::MAX, true), Ok((kind, value)));
        }

        /// Bodies of every type byte under a valid footer: read or refused, never a
        /// panic, and never more than the limit per string.
        #[test]
        fn any_sealed_body_of_any_type_is_read_or_refused(
            kind in 0u8..24,
            rest in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut payload = vec![kind];
            payload.extend_from_slice(&rest);
            payload.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
            let crc = crc64(0, &payload);
            payload.extend_from_slice(&crc.to_le_bytes());
            let _ = restore(&payload, 1 << 16, true);
        }
    }
}
