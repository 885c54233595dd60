//! DUMP and RESTORE: a value serialized in Redis's format (`dump_payload.rs`), so keys
//! move between hotkv and Redis with the tools made for Redis.

use std::sync::atomic::Ordering;

use resp::Frame;

use super::{error, ok, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::db::Change;
use crate::dump_payload::{self, Refusal};
use crate::entry::{now_ms, Entry, Kind};
use crate::keyspace_events::GENERIC;
use crate::stream::Stream;

const BUSY_KEY: &str = "BUSYKEY Target key name already exists.";

/// `DUMP key`: the value serialized, or nil.
pub fn dump(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match ctx.read(&args[1])? {
        Some(entry) => match payload(&entry, ctx.server.config.rdb_compression()) {
            Ok(payload) => reply(Frame::Bulk(payload)),
            Err(refusal) => error(refusal),
        },
        None => reply(Frame::Null),
    }
}

/// `entry` serialized as DUMP gives it (and MIGRATE sends it); long strings compressed
/// if `compress` (`rdbcompression`).
pub fn payload(entry: &Entry, compress: bool) -> Result<Vec<u8>, &'static str> {
    if entry.kind != Kind::Stream {
        return Ok(dump_payload::dump(entry.kind, &entry.value, compress));
    }
    match Stream::decode(&entry.value) {
        Ok(stream) => Ok(dump_payload::dump_stream(&stream)),
        Err(_) => Err("ERR the stored stream is corrupt"),
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`:
/// checks in Redis's order (options, an existing key, the TTL, the payload). A TTL
/// already past stores nothing (and with REPLACE deletes the key it would replace).
/// IDLETIME sets the key's access clock back, FREQ its LFU counter: as in Redis, the
/// one the policy uses (FREQ on the lsm engine only: in memory a key's heat is the
/// index's to learn).
pub fn restore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (key, payload) = (&args[1], &args[3]);
    let (mut replace, mut absolute) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut i = 4;
    while i < args.len() {
        let has_value = i + 1 < args.len();
        match upper(&args[i]).as_slice() {
            b"REPLACE" => replace = true,
            b"ABSTTL" => absolute = true,
            b"IDLETIME" if has_value && freq.is_none() => {
                i += 1;
                match parse_integer(&args[i]) {
                    Some(n) if n < 0 => return error("ERR Invalid IDLETIME value, must be >= 0"),
                    Some(n) => idle = Some(n),
                    None => return error(NOT_AN_INTEGER),
                }
            }
            b"FREQ" if has_value && idle.is_none() => {
                i += 1;
                match parse_integer(&args[i]) {
                    Some(n) if !(0..=255).contains(&n) => {
                        return error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                    }
                    Some(n) => freq = Some(n),
                    None => return error(NOT_AN_INTEGER),
                }
            }
            _ => return error(SYNTAX_ERROR),
        }
        i += 1;
    }
    if !replace && ctx.db().contains(key)? {
        return error(BUSY_KEY);
    }
    let ttl = match parse_integer(&args[2]) {
        Some(ttl) if ttl < 0 => return error("ERR Invalid TTL value, must be >= 0"),
        Some(ttl) => ttl as u64,
        None => return error(NOT_AN_INTEGER),
    };
    let max_len = ctx.server.config.proto_max_bulk_len();
    let verify_crc = !ctx.server.skip_checksum.load(Ordering::Relaxed);
    let (kind, value) = match dump_payload::restore(payload, max_len, verify_crc) {
        Ok(restored) => restored,
        Err(Refusal::VersionOrChecksum) => {
            return error("ERR DUMP payload version or checksum are wrong")
        }
        Err(Refusal::BadFormat(why)) => return error(&format!("ERR Bad data format: {why}")),
    };
    let now = now_ms();
    let deadline = match (ttl, absolute) {
        (0, _) => None,
        (at, true) => Some(at),
        (ttl, false) => Some(now.saturating_add(ttl)),
    };
    let past = deadline.is_some_and(|d| d <= now);
    // The existence check again, now atomically with the write.
    let outcome = ctx
        .db()
        .update(key, kind, |old| match (old.is_some(), replace, past) {
            (true, false, _) => (Change::Keep, Outcome::Busy),
            (true, true, true) => (Change::Delete, Outcome::Deleted),
            (false, _, true) => (Change::Keep, Outcome::Stored),
            _ => (
                Change::Put(Entry {
                    kind,
                    ..Entry::plain(value.clone(), deadline)
                }),
                Outcome::Stored,
            ),
        })?;
    match outcome {
        Outcome::Busy => error(BUSY_KEY),
        Outcome::Deleted => {
            ctx.notify(GENERIC, "del", key);
            ok()
        }
        Outcome::Stored => {
            if !past {
                let lfu = ctx.server.config.policy().lfu();
                if let Some(seconds) = idle.filter(|_| !lfu) {
                    ctx.db().set_idle(key, seconds as u64);
                }
                if let Some(counter) = freq.filter(|_| lfu) {
                    ctx.db().set_lfu_counter(key, counter as u8);
                }
                ctx.notify(GENERIC, "restore", key);
            }
            ok()
        }
    }
}

enum Outcome {
    Busy,
    Deleted,
    Stored,
}
