//! The RDB file: the memory engine's keys as SAVE writes them and the server loads them
//! at startup, in Redis's format, so redis-server loads hotkv's file and hotkv loads
//! Redis's.
//!
//! ```text
//! file   = "REDIS" version (4 ASCII digits) record* EOF (0xFF) CRC-64 (8 bytes LE)
//! record = AUX (0xFA) string(name) string(value)
//!        | SELECTDB (0xFE) length(database)
//!        | RESIZEDB (0xFB) length(keys) length(keys with a deadline)
//!        | EXPIRETIME_MS (0xFC) ms (8 bytes LE)   the next key's deadline
//!        | EXPIRETIME (0xFD) seconds (4 bytes LE)  the same, in older files
//!        | IDLE (0xF8) length(seconds) | FREQ (0xF9) counter (1 byte)
//!                                                 the next key's LRU or LFU stamp
//!        | FUNCTION2 (0xF5) string(a function library's code)
//!        | type string(key) object               a key, as in a DUMP payload
//! ```
//!
//! Strings, lengths, types and objects are a DUMP payload's (see `dump_payload.rs`), and
//! the CRC is its CRC-64, over everything before it; a CRC of 0 is not checked (Redis
//! writes 0 under `rdbchecksum no`). hotkv writes version 10 (Redis 7.0): the aux fields
//! redis-ver, redis-bits, ctime and aof-base, SELECTDB 0, then the function libraries,
//! then each key, after its deadline if it has one. It reads versions up to the newest
//! a DUMP payload may have, in pieces (never the whole file in memory); RESIZEDB, IDLE
//! and FREQ are read and dropped (the index learns heat by itself); a module's aux
//! data, or keys in a database other than 0, are refused: hotkv has neither.

use std::io::{self, Read, Write};

use super::{crc64, put_length, put_string, read_object, Reader, Refusal, FOOTER, TRUNCATED};
use super::{FUNCTION_TYPE, NEWEST_READ_VERSION, WRITTEN_VERSION};
use crate::entry::Kind;

const MAGIC: &[u8] = b"REDIS";
const AUX: u8 = 0xFA;
const SELECTDB: u8 = 0xFE;
const RESIZEDB: u8 = 0xFB;
const EXPIRETIME_MS: u8 = 0xFC;
const EXPIRETIME: u8 = 0xFD;
const IDLE: u8 = 0xF8;
const FREQ: u8 = 0xF9;
const MODULE_AUX: u8 = 0xF7;
const CANDIDATE_FUNCTION: u8 = 0xF6;
const EOF: u8 = 0xFF;

/// Writes an RDB file to `out`, checksumming as it goes.
pub struct RdbWriter<W: Write> {
    out: W,
    crc: u64,
    /// Long keys LZF-compressed (`rdbcompression`), as their values are.
    compress: bool,
}

impl<W: Write> RdbWriter<W> {
    /// The header, the aux fields and database 0's selector; `unix_seconds` is ctime.
    /// With `compress`, keys of over 20 bytes are compressed where that pays; the
    /// payloads given to [`RdbWriter::key`] say for themselves.
    pub fn new(out: W, unix_seconds: u64, compress: bool) -> io::Result<RdbWriter<W>> {
        let mut writer = RdbWriter {
            out,
            crc: 0,
            compress,
        };
        writer.put(MAGIC)?;
        writer.put(format!("{WRITTEN_VERSION:04}").as_bytes())?;
        let ctime = unix_seconds.to_string();
        let aux: [(&str, &str); 4] = [
            ("redis-ver", crate::REDIS_VERSION),
            ("redis-bits", "64"),
            ("ctime", &ctime),
            ("aof-base", "0"),
        ];
        for (name, value) in aux {
            let mut record = vec![AUX];
            put_string(&mut record, name.as_bytes(), false);
            put_string(&mut record, value.as_bytes(), false);
            writer.put(&record)?;
        }
        let mut select = vec![SELECTDB];
        put_length(&mut select, 0);
        writer.put(&select)?;
        Ok(writer)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc = crc64(self.crc, bytes);
        self.out.write_all(bytes)
    }

    /// The function libraries of a FUNCTION DUMP payload: its records are the file's.
    pub fn functions(&mut self, payload: &[u8]) -> io::Result<()> {
        self.put(&payload[..payload.len() - FOOTER])
    }

    /// `key`, with its deadline (ms since the Unix epoch) and value as a DUMP payload.
    pub fn key(&mut self, key: &[u8], deadline: Option<u64>, payload: &[u8]) -> io::Result<()> {
        let object = &payload[..payload.len() - FOOTER];
        let mut head = Vec::with_capacity(key.len() + 16);
        if let Some(ms) = deadline {
            head.push(EXPIRETIME_MS);
            head.extend_from_slice(&ms.to_le_bytes());
        }
        head.push(object[0]);
        put_string(&mut head, key, self.compress);
        self.put(&head)?;
        self.put(&object[1..])
    }

    /// The end marker and checksum; returns the output, for the caller to sync.
    pub fn finish(mut self) -> io::Result<W> {
        self.put(&[EOF])?;
        let crc = self.crc;
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What an RDB file holds, handed over as it is read.
pub trait Loader {
    /// A key of type `kind` with its value as RESTORE stores it, and its deadline.
    fn key(&mut self, key: Vec<u8>, kind: Kind, value: Vec<u8>, deadline: Option<u64>);
    /// A function library's code.
    fn function(&mut self, code: Vec<u8>);
}

/// Bytes read from the file at a time: the file is read in pieces, never whole, so a
/// load needs memory for the data and the largest record, not for the file too.
const CHUNK: usize = 1 << 20;

/// The file as it is read: a window of bytes not yet parsed, refilled from `source`.
struct Window<R: Read> {
    source: R,
    buf: Vec<u8>,
    /// Where in `buf` the bytes not yet parsed start.
    start: usize,
    /// The file offset of `buf[0]`, for error messages.
    offset: usize,
    ended: bool,
    /// CRC-64 of the bytes parsed so far but their last 8, which are in `tail`: a file
    /// cut short may end inside a record, so any 8 bytes parsed may be where its
    /// checksum would be (see [`Window::damaged`]).
    crc: u64,
    tail: [u8; 8],
    tail_len: usize,
}

impl<R: Read> Window<R> {
    fn unparsed(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Reads until `want` bytes are unparsed or the file ends.
    fn fill(&mut self, want: usize) -> Result<(), String> {
        if self.unparsed().len() >= want || self.ended {
            return Ok(());
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.offset += self.start;
            self.start = 0;
        }
        while self.buf.len() < want && !self.ended {
            let have = self.buf.len();
            self.buf.resize(have.max(want).max(have + CHUNK), 0);
            match self.source.read(&mut self.buf[have..]) {
                Ok(n) => {
                    self.ended = n == 0;
                    self.buf.truncate(have + n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.buf.truncate(have),
                Err(e) => return Err(format!("reading the file: {e}")),
            }
        }
        Ok(())
    }

    /// Marks `n` more bytes parsed.
    fn consume(&mut self, n: usize) {
        let new = &self.buf[self.start..self.start + n];
        let mut joined = [0u8; 16];
        let (kept, rest) = if n >= 8 {
            self.crc = crc64(self.crc, &self.tail[..self.tail_len]);
            self.crc = crc64(self.crc, &new[..n - 8]);
            (&new[n - 8..], 8)
        } else {
            joined[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
            joined[self.tail_len..self.tail_len + n].copy_from_slice(new);
            let len = self.tail_len + n;
            let spill = len.saturating_sub(8);
            self.crc = crc64(self.crc, &joined[..spill]);
            (&joined[spill..len], len - spill)
        };
        self.tail[..rest].copy_from_slice(kept);
        self.tail_len = rest;
        self.start += n;
    }

    /// CRC-64 of every byte parsed so far.
    fn crc_so_far(&self) -> u64 {
        crc64(self.crc, &self.tail[..self.tail_len])
    }

    /// The file offset of the first unparsed byte, plus `at`.
    fn position(&self, at: usize) -> usize {
        self.offset + self.start + at
    }

    /// Whether the CRC the file ends with disagrees with its bytes: read to the end
    /// from the first unparsed byte, for a file the parser refused, so that damage is
    /// reported as such and not as whatever it looks like to the parser.
    fn damaged(&mut self) -> Result<bool, String> {
        loop {
            self.fill(self.unparsed().len() + CHUNK)?;
            if self.ended {
                let mut last = self.tail[..self.tail_len].to_vec();
                last.extend_from_slice(self.unparsed());
                let Some(body) = last.len().checked_sub(8) else {
                    return Ok(false);
                };
                let crc = crc64(self.crc, &last[..body]);
                let stored = u64::from_le_bytes(last[body..].try_into().expect("8 bytes"));
                return Ok(stored != 0 && stored != crc);
            }
            let n = self.unparsed().len();
            self.consume(n);
        }
    }
}

/// Reads the RDB file from `source` into `loader`; `max_len` bounds any one string, as
/// for RESTORE. An error says what is wrong and where; a file whose checksum does not
/// match its bytes is reported as damaged. Keys may have been handed to `loader` before
/// an error is found.
pub fn read(source: impl Read, max_len: usize, loader: &mut dyn Loader) -> Result<(), String> {
    let mut w = Window {
        source,
        buf: Vec::new(),
        start: 0,
        offset: 0,
        ended: false,
        crc: 0,
        tail: [0; 8],
        tail_len: 0,
    };
    w.fill(MAGIC.len() + 4)?;
    let header = w
        .unparsed()
        .get(..MAGIC.len() + 4)
        .ok_or("not an RDB file: shorter than its header")?;
    let version = std::str::from_utf8(&header[MAGIC.len()..])
        .ok()
        .and_then(|v| v.parse::<u16>().ok());
    let version = match version {
        Some(v) if &header[..MAGIC.len()] == MAGIC => v,
        _ => return Err("not an RDB file: it does not start with REDIS and a version".into()),
    };
    if version > NEWEST_READ_VERSION {
        return Err(format!(
            "RDB version {version} is newer than hotkv reads ({NEWEST_READ_VERSION})"
        ));
    }
    w.consume(MAGIC.len() + 4);
    let mut deadline = None;
    let mut want = 0;
    let refusal = loop {
        w.fill(want)?;
        let mut r = Reader {
            bytes: w.unparsed(),
            at: 0,
        };
        let parsed = r.byte().and_then(|record| {
            read_record(record, &mut r, max_len, loader, &mut deadline).map(|()| record)
        });
        match parsed {
            Ok(record) => {
                want = 0;
                let n = r.at;
                w.consume(n);
                if record == EOF {
                    break None;
                }
            }
            // The record goes on past the window: read more, parse it again.
            Err(TRUNCATED) if !w.ended => want = (2 * w.unparsed().len()).max(CHUNK),
            Err(TRUNCATED) if r.at == 0 => {
                break Some(format!(
                    "the file ends before its EOF marker (at byte {})",
                    w.position(0)
                ))
            }
            Err(refusal) => {
                let why = match refusal {
                    Refusal::VersionOrChecksum => "a value's checksum is wrong",
                    Refusal::BadFormat(why) => why,
                };
                break Some(format!("{why} (at byte {})", w.position(r.at)));
            }
        }
    };
    if let Some(error) = refusal {
        return Err(if w.damaged()? {
            "the file's checksum is wrong: it is corrupt or cut short".into()
        } else {
            error
        });
    }
    w.fill(9)?;
    let tail = w.unparsed();
    if tail.len() != 8 {
        return Err(format!(
            "the file does not end 8 bytes of checksum after its EOF marker (at byte {})",
            w.position(0)
        ));
    }
    let stored = u64::from_le_bytes(tail.try_into().expect("8 bytes"));
    if stored != 0 && stored != w.crc_so_far() {
        return Err("the file's checksum is wrong: it is corrupt or cut short".into());
    }
    Ok(())
}

/// The record of type `record` at `r` (its type byte read), handed to `loader`; a key's
/// deadline, read before it, waits in `deadline`.
fn read_record(
    record: u8,
    r: &mut Reader,
    max_len: usize,
    loader: &mut dyn Loader,
    deadline: &mut Option<u64>,
) -> Result<(), Refusal> {
    match record {
        AUX => {
            r.string(max_len)?;
            r.string(max_len)?;
        }
        SELECTDB => {
            if r.u64_length()? != 0 {
                return Err(Refusal::BadFormat(
                    "keys in a database other than 0: hotkv serves database 0 only",
                ));
            }
        }
        RESIZEDB => {
            r.u64_length()?;
            r.u64_length()?;
        }
        EXPIRETIME_MS => {
            *deadline = Some(u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes")))
        }
        EXPIRETIME => {
            let seconds = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
            *deadline = Some(u64::from(seconds) * 1000);
        }
        IDLE => {
            r.u64_length()?;
        }
        FREQ => {
            r.byte()?;
        }
        FUNCTION_TYPE => loader.function(r.string(max_len)?),
        CANDIDATE_FUNCTION => {
            return Err(Refusal::BadFormat(
                "functions of a Redis 7.0 release candidate are not read",
            ))
        }
        MODULE_AUX => return Err(Refusal::BadFormat("module data: hotkv has no modules")),
        EOF => {}
        _ => {
            let key = r.string(max_len)?;
            let (kind, value) = read_object(record, r, max_len)?;
            loader.key(key, kind, value, deadline.take());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump_payload::{dump, functions};
    use crate::packed;
    use rand::{Rng, SeedableRng};

    /// A key as the loader is handed it: name, type, value, deadline.
    type Key = (Vec<u8>, Kind, Vec<u8>, Option<u64>);

    #[derive(Debug, Default)]
    struct Collected {
        keys: Vec<Key>,
        codes: Vec<Vec<u8>>,
    }

    impl Loader for Collected {
        fn key(&mut self, key: Vec<u8>, kind: Kind, value: Vec<u8>, deadline: Option<u64>) {
            self.keys.push((key, kind, value, deadline));
        }
        fn function(&mut self, code: Vec<u8>) {
            self.codes.push(code);
        }
    }

    fn sample() -> (Vec<u8>, Collected) {
        let list = packed::pack([b"a".as_slice(), b"12", b"x"]);
        let keys = vec![
            (b"s".to_vec(), Kind::String, b"value".to_vec(), None),
            (b"n".to_vec(), Kind::String, b"-7".to_vec(), Some(1 << 41)),
            (b"".to_vec(), Kind::List, list, Some(5)),
            // Key and value compressed.
            (b"k".repeat(40), Kind::String, b"v".repeat(200), None),
        ];
        let mut rdb = RdbWriter::new(Vec::new(), 1_700_000_000, true).unwrap();
        rdb.functions(&functions([b"code".as_slice()].into_iter(), true))
            .unwrap();
        for (key, kind, value, deadline) in &keys {
            rdb.key(key, *deadline, &dump(*kind, value, true)).unwrap();
        }
        let file = rdb.finish().unwrap();
        let want = Collected {
            keys,
            codes: vec![b"code".to_vec()],
        };
        (file, want)
    }

    fn load(file: &[u8]) -> Result<Collected, String> {
        let mut got = Collected::default();
        read(file, 1 << 20, &mut got).map(|()| got)
    }

    #[test]
    fn what_is_written_reads_back() {
        let (file, want) = sample();
        assert!(file.starts_with(b"REDIS0010"));
        let got = load(&file).unwrap();
        assert_eq!(got.keys, want.keys);
        assert_eq!(got.codes, want.codes);
        // A checksum of 0 is not checked, as Redis writes under `rdbchecksum no`.
        let mut unsummed = file.clone();
        let n = unsummed.len();
        unsummed[n - 8..].fill(0);
        assert_eq!(load(&unsummed).unwrap().keys, want.keys);
    }

    /// Hands a file out in pieces of at most `piece` bytes, as a pipe might.
    struct Pieces<'a> {
        bytes: &'a [u8],
        piece: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.piece.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_file_read_in_pieces_reads_the_same() {
        let (mut file, mut want) = sample();
        // A record longer than a read's chunk, so the window must grow for it.
        let mut rdb = RdbWriter::new(Vec::new(), 0, true).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let big: Vec<u8> = (0..CHUNK * 5 / 2).map(|_| rng.gen()).collect();
        rdb.key(b"big", None, &dump(Kind::String, &big, true))
            .unwrap();
        rdb.key(b"after", None, &dump(Kind::String, b"x", true))
            .unwrap();
        let big_file = rdb.finish().unwrap();
        for piece in [1, 2, 7, 64, 4096, CHUNK + 3] {
            let mut got = Collected::default();
            read(
                Pieces {
                    bytes: &file,
                    piece,
                },
                1 << 20,
                &mut got,
            )
            .unwrap();
            assert_eq!(got.keys, want.keys, "pieces of {piece}");
            let mut got = Collected::default();
            read(
                Pieces {
                    bytes: &big_file,
                    piece: piece.max(4096),
                },
                usize::MAX,
                &mut got,
            )
            .unwrap();
            assert_eq!(got.keys.len(), 2);
            assert_eq!(got.keys[0].2, big);
        }
        // Damage found after keys were handed over is still reported as damage.
        let at = file.len() - 20;
        file[at] ^= 1;
        want.keys.clear();
        let err = read(
            Pieces {
                bytes: &file,
                piece: 5,
            },
            1 << 20,
            &mut want,
        )
        .unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn every_cut_and_a_newer_version_or_another_database_are_refused() {
        let (file, _) = sample();
        for end in 0..file.len() {
            let err = load(&file[..end]).unwrap_err();
            // Past the header and the checksum's reach, the cut is seen as damage.
            if (20..file.len()).contains(&end) {
                assert!(err.contains("checksum"), "cut at {end}: {err}");
            }
        }
        let mut newer = file.clone();
        newer[5..9].copy_from_slice(b"0013");
        let n = newer.len();
        newer[n - 8..].fill(0);
        assert!(load(&newer).unwrap_err().contains("newer"));
        let mut other_db = RdbWriter::new(Vec::new(), 0, true).unwrap();
        other_db.put(&[SELECTDB, 3]).unwrap();
        let err = load(&other_db.finish().unwrap()).unwrap_err();
        assert!(err.contains("database 0 only"), "{err}");
    }

    /// Damage the checksum would catch, with the checksum made to match: the parser
    /// refuses or reads something, and never panics or over-allocates.
    #[test]
    fn damaged_files_with_a_matching_checksum_never_panic() {
        let (file, _) = sample();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let mut bad = file[..file.len() - 8].to_vec();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(9..bad.len());
                bad[at] = rng.gen();
            }
            let crc = crc64(0, &bad);
            bad.extend_from_slice(&crc.to_le_bytes());
            let _ = load(&bad);
        }
    }
}
