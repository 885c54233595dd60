//! DEBUG: refused unless `enable-debug-command` allows it (`yes`, or `local` for a
//! client on the loopback address), as in Redis 7, whose own test suite and tools lean
//! on it. Subcommands: HELP, SLEEP, SET-ACTIVE-EXPIRE, PAUSE-CRON,
//! SET-DISABLE-DENY-SCRIPTS, SET-SKIP-CHECKSUM-VALIDATION, OBJECT, DIGEST,
//! DIGEST-VALUE, RELOAD, LOADAOF, PROTOCOL, POPULATE, LOG, ERROR, QUICKLIST-PACKED-THRESHOLD, JMAP,
//! CHANGE-REPL-ID, REPLYBUFFER RESIZING; the others Redis has
//! look at its own structures (quicklists, dicts, the allocator) or crash it on purpose,
//! and are refused as unknown subcommands.
//!
//! DEBUG runs alone (the gate held exclusively), so SLEEP stalls the whole server as it
//! does Redis's, and DIGEST and RELOAD see one moment of the data.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use resp::{Frame, Protocol};
use sha1::{Digest, Sha1};

use super::{error, ok, parse_integer, reply, upper, Action, Ctx, Reply};
use crate::clients::Client;
use crate::entry::{Entry, Kind};
use crate::packed;
use crate::rdb_save;
use crate::server::Server;

/// Whether DEBUG may run for `client`: `enable-debug-command` is `yes`, or `local` and
/// the client came from the loopback address.
pub fn allowed(server: &Server, client: &Client) -> bool {
    match server.config.value("enable-debug-command").as_str() {
        "yes" => true,
        "local" => client.addr.ip().is_loopback(),
        _ => false,
    }
}

pub fn debug(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"HELP", []) => super::help(HELP),
        (b"SLEEP", [seconds]) => sleep(seconds),
        (b"SET-ACTIVE-EXPIRE", [on]) => switch(&ctx.server.active_expiry, on),
        (b"PAUSE-CRON", [on]) => switch(&ctx.server.cron_paused, on),
        (b"SET-DISABLE-DENY-SCRIPTS", [on]) => switch(&ctx.server.scripts_call_anything, on),
        (b"SET-SKIP-CHECKSUM-VALIDATION", [on]) => switch(&ctx.server.skip_checksum, on),
        // Redis keeps a list element over this size in a node of its own. hotkv's list
        // nodes hold elements of any size alike, so there is nothing to change; the
        // argument is checked as Redis checks it.
        (b"QUICKLIST-PACKED-THRESHOLD", [size]) => {
            match std::str::from_utf8(size)
                .ok()
                .and_then(crate::config::parse_memory)
            {
                Some(size) if size <= (1 << 32) - (1 << 20) => ok(),
                _ => {
                    error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
                }
            }
        }
        (b"OBJECT", [key]) => object(ctx, key),
        (b"DIGEST", []) => {
            let digest = dataset_digest(ctx)?;
            reply(Frame::Simple(hex(&digest)))
        }
        (b"DIGEST-VALUE", keys) => {
            let mut digests = Vec::with_capacity(keys.len());
            for key in keys {
                let digest = match ctx.db().peek(key)? {
                    Some(entry) => value_digest(&entry),
                    None => [0; 20],
                };
                digests.push(Frame::Simple(hex(&digest)));
            }
            reply(Frame::Array(digests))
        }
        (b"RELOAD", options) => reload(ctx, options),
        (b"LOADAOF", []) => load_aof(ctx),
        (b"PROTOCOL", [name]) => protocol(ctx.session.proto, name),
        (b"POPULATE", [count, rest @ ..]) if rest.len() <= 2 => populate(ctx, count, rest),
        (b"LOG", [message]) => {
            tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(message));
            ok()
        }
        (b"ERROR", [message]) => reply(Frame::Error(String::from_utf8_lossy(message).into())),
        // Redis's: the allocator's heap map to its log, and a new replication id. hotkv
        // has neither a heap map to print nor replication: there is nothing to do.
        (b"JMAP", []) | (b"CHANGE-REPL-ID", []) => ok(),
        // Redis's tests of client memory turn the cuts off so that a client holds what
        // it was given for as long as they measure it.
        (b"REPLYBUFFER", [sub, on]) if upper(sub) == b"RESIZING" => {
            set_switch(on, |on| ctx.server.clients.set_output_resizing(on))
        }
        _ => super::bad_subcommand("debug", &args[1]),
    }
}

/// Sets a DEBUG switch (see [`set_switch`]).
fn switch(flag: &AtomicBool, on: &[u8]) -> Reply {
    set_switch(on, |on| flag.store(on, Ordering::Relaxed))
}

/// Reads a DEBUG switch's argument, any integer but 0 meaning on as Redis's `atoi`
/// reads it, and hands it to `set`.
fn set_switch(on: &[u8], set: impl FnOnce(bool)) -> Reply {
    let Some(on) = parse_integer(on) else {
        return error(super::NOT_AN_INTEGER);
    };
    set(on != 0);
    ok()
}

/// `SLEEP seconds` (a decimal fraction allowed; 0 or less: none). The server stalls:
/// the caller holds the gate exclusively.
fn sleep(seconds: &[u8]) -> Reply {
    let seconds: f64 = match std::str::from_utf8(seconds)
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) if f64::is_finite(s) => s,
        _ => return error("ERR value is not a valid float"),
    };
    if seconds > 0.0 {
        std::thread::sleep(std::time::Duration::from_secs_f64(seconds.min(1e9)));
    }
    ok()
}

/// `OBJECT key`, in Redis's words: `Value at:<address> refcount:<n> encoding:<name>
/// serializedlength:<bytes> lru:<clock> lru_seconds_idle:<seconds>`. A value here moves
/// when it is rewritten (a new item replaces it), so `at` names the key instead: the
/// same for a key for as long as the server runs. `serializedlength` is what the value
/// takes in an RDB file (its DUMP payload without type byte and footer).
fn object(ctx: &mut Ctx, key: &[u8]) -> Reply {
    // As Redis's, it finds a key past its deadline that is yet to be deleted.
    let Some(entry) = ctx.db().peek_even_expired(key)? else {
        return error("ERR no such key");
    };
    let payload = match super::dump::payload(&entry, ctx.server.config.rdb_compression()) {
        Ok(payload) => payload,
        Err(refusal) => return error(refusal),
    };
    let serialized = payload
        .len()
        .saturating_sub(1 + crate::dump_payload::FOOTER);
    let idle = ctx.db().idle_seconds(key).unwrap_or(0);
    // Redis's LRU clock: seconds, in 24 bits.
    let lru = (crate::entry::now_ms() / 1000).wrapping_sub(idle.into()) & ((1 << 24) - 1);
    reply(Frame::Simple(format!(
        "Value at:{:#x} refcount:{} encoding:{} serializedlength:{serialized} lru:{lru} \
         lru_seconds_idle:{idle}",
        key_address(key),
        super::object::refcount(ctx, &entry),
        super::object::encoding_of(ctx, &entry),
    )))
}

/// A stand-in for an object's address, from the key (see [`object`]): 47 bits, as a
/// user-space pointer has.
fn key_address(key: &[u8]) -> u64 {
    let digest = Sha1::digest(key);
    let bits = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
    (bits & ((1 << 47) - 1)) | (1 << 44)
}

/// The digest of every key with its value and deadline: equal for equal data however it
/// came to be (order of writes, encodings), so a test can compare data before and
/// after a reload; 20 zero bytes for no keys, as Redis's. Keys are collected first: a
/// scan may give a key twice, and the digests are combined by XOR.
fn dataset_digest(ctx: &Ctx) -> Result<[u8; 20], engine::Error> {
    let mut keys = HashSet::new();
    let mut cursor = 0;
    loop {
        cursor = ctx.db().scan(cursor, 1024, |key, _| {
            keys.insert(key.to_vec());
        })?;
        if cursor == 0 {
            break;
        }
    }
    let mut total = [0; 20];
    for key in keys {
        let Some(entry) = ctx.db().peek(&key)? else {
            continue;
        };
        let mut h = Sha1::new();
        put(&mut h, &key);
        h.update(value_digest(&entry));
        h.update(entry.deadline.map_or(-1, |d| d as i64).to_le_bytes());
        xor(&mut total, &h.finalize().into());
    }
    Ok(total)
}

/// The digest of a value: its type and contents, a set's members and a hash's fields in
/// any order. A value with a deadline differs from one without, whatever the deadline,
/// as in Redis (a copy made later has another).
fn value_digest(entry: &Entry) -> [u8; 20] {
    let mut h = Sha1::new();
    put(&mut h, entry.kind.name().as_bytes());
    match entry.kind {
        Kind::String => put(&mut h, &entry.value),
        Kind::List => packed::elements(&entry.value).for_each(|e| put(&mut h, e)),
        Kind::Set => {
            let mut members = [0; 20];
            for member in packed::elements(&entry.value) {
                xor(&mut members, &Sha1::digest(member).into());
            }
            h.update(members);
        }
        Kind::Hash => {
            let mut fields = [0; 20];
            for (field, value) in packed::pairs(&entry.value) {
                let mut f = Sha1::new();
                put(&mut f, field);
                put(&mut f, value);
                xor(&mut fields, &f.finalize().into());
            }
            h.update(fields);
        }
        Kind::ZSet => {
            let mut members: Vec<_> = packed::scored(&entry.value).collect();
            members.sort_by(|a, b| packed::score_order(*a, *b));
            for (member, score) in members {
                put(&mut h, member);
                h.update(score.to_le_bytes());
            }
        }
        // A stream's payload lists its entries and groups in their order.
        Kind::Stream => match super::dump::payload(entry, false) {
            Ok(payload) => h.update(payload),
            Err(_) => h.update(b"corrupt stream"),
        },
    }
    if entry.deadline.is_some() {
        h.update(b"!!expire!!");
    }
    h.finalize().into()
}

/// Feeds `bytes` with its length first, so that no two sequences feed the same bytes.
fn put(h: &mut Sha1, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

fn xor(total: &mut [u8; 20], digest: &[u8; 20]) {
    total.iter_mut().zip(digest).for_each(|(t, d)| *t ^= d);
}

fn hex(digest: &[u8; 20]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: saves the RDB file, empties the server (keys
/// and function libraries) and loads the file again. NOSAVE loads the file as it is;
/// NOFLUSH loads over what is there, where a key or library of the same name fails the
/// load unless MERGE lets the file's replace it. The lsm engine keeps its data itself
/// (its SAVE syncs its log): there the RDB file is written for this alone.
fn reload(ctx: &mut Ctx, options: &[Vec<u8>]) -> Reply {
    let (mut merge, mut flush, mut save) = (false, true, true);
    for option in options {
        match upper(option).as_slice() {
            b"MERGE" => merge = true,
            b"NOFLUSH" => flush = false,
            b"NOSAVE" => save = false,
            _ => {
                return error(
                    "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                )
            }
        }
    }
    let server = ctx.server;
    if save {
        let saved = match server.db.index() {
            Some(_) => server.save(),
            None => rdb_save::write(server).map_err(|e| format!("ERR saving failed: {e}")),
        };
        if let Err(e) = saved {
            return error(&e);
        }
    }
    if flush {
        empty(server)?;
    }
    match rdb_save::load_into(server, merge) {
        Ok(_) => {
            tracing::warn!("DB reloaded by DEBUG RELOAD");
            ok()
        }
        Err(e) => {
            tracing::warn!(error = %e, "DEBUG RELOAD failed");
            error("ERR Error trying to load the RDB dump")
        }
    }
}

/// `LOADAOF`: Redis's flushes its append-only file, empties the server and loads the
/// file. On the lsm engine, whose log is its append-only file (`appendonly` reads
/// `yes`), the log is synced, and the keys and libraries are written out in the RDB
/// format, in memory, and loaded back into the emptied server: what a value keeps
/// through persistence is what Redis's tests of LOADAOF check. The memory engine keeps
/// no such file, and refuses, rather than empty the server as Redis's would.
fn load_aof(ctx: &mut Ctx) -> Reply {
    let server = ctx.server;
    if server.db.index().is_some() {
        return error(
            "ERR DEBUG LOADAOF needs an append-only file: the memory engine keeps none \
             (appendonly is no); its RDB file reloads with DEBUG RELOAD",
        );
    }
    server.db.save()?;
    let copy = match rdb_save::copy(server) {
        Ok(copy) => copy,
        Err(e) => return error(&format!("ERR saving failed: {e}")),
    };
    empty(server)?;
    match rdb_save::load_copy(server, &copy) {
        Ok(_) => {
            tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
            ok()
        }
        Err(e) => {
            // The server is left empty, or with part of its keys: logged loudly, as
            // Redis's exits here.
            tracing::error!(error = %e, "DEBUG LOADAOF failed to load the keys back");
            error(&format!(
                "ERR DEBUG LOADAOF failed to load the keys back: {e}"
            ))
        }
    }
}

/// Deletes every key and function library (before a reload).
fn empty(server: &Server) -> Result<(), engine::Error> {
    server.db.clear()?;
    server.db.free_retired();
    super::function::flush_libraries(server)
}

/// `PROTOCOL type`: a reply of each RESP type, as Redis's (for testing clients).
fn protocol(proto: Protocol, name: &[u8]) -> Reply {
    let three = || (0..3).map(Frame::Integer).collect::<Vec<_>>();
    let frame = match upper(name).as_slice() {
        b"STRING" => Frame::bulk("Hello World"),
        b"INTEGER" => Frame::Integer(12345),
        b"DOUBLE" => Frame::DoubleText("3.141".into()),
        b"BIGNUM" => Frame::BigNumber("1234567999999999999999999999999999999".into()),
        b"NULL" => Frame::Null,
        b"ARRAY" => Frame::Array(three()),
        b"SET" => Frame::Set(three()),
        b"MAP" => Frame::Map(
            (0..3)
                .map(|j| (Frame::Integer(j), Frame::Boolean(j == 1)))
                .collect(),
        ),
        b"ATTRIB" => Frame::Attribute {
            pairs: vec![(
                Frame::bulk("key-popularity"),
                Frame::Array(vec![Frame::bulk("key:123"), Frame::Integer(90)]),
            )],
            reply: Box::new(Frame::bulk("Some real reply following the attribute")),
        },
        b"PUSH" if proto == Protocol::Resp2 => {
            return error("ERR RESP2 is not supported by this command")
        }
        // A push is no reply: a normal one follows, for clients that skip pushes.
        b"PUSH" => {
            return Ok(Action::Replies(vec![
                Frame::Push(vec![Frame::bulk("server-cpu-usage"), Frame::Integer(42)]),
                Frame::bulk("Some real reply following the push reply"),
            ]))
        }
        b"TRUE" => Frame::Boolean(true),
        b"FALSE" => Frame::Boolean(false),
        b"VERBATIM" => Frame::Verbatim {
            format: *b"txt",
            text: b"This is a verbatim\nstring".to_vec(),
        },
        _ => {
            return error(
                "ERR Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            )
        }
    };
    reply(frame)
}

/// `POPULATE count [prefix [size]]`: keys `<prefix>:<i>` (prefix `key`) for i below
/// `count` holding `value:<i>`, padded with zero bytes or cut to `size` bytes if given;
/// keys that exist are left alone, as in Redis.
fn populate(ctx: &mut Ctx, count: &[u8], rest: &[Vec<u8>]) -> Reply {
    let Some(count) = parse_integer(count).filter(|n| *n >= 0) else {
        return error("ERR value is out of range, must be positive");
    };
    let prefix = rest.first().map_or(&b"key"[..], Vec::as_slice);
    let size = match rest.get(1).map(|s| parse_integer(s)) {
        None => None,
        // As Redis: 0 leaves the value as it is.
        Some(Some(0)) => None,
        Some(Some(n)) if n > 0 => Some(n as usize),
        Some(_) => return error("ERR value is out of range, must be positive"),
    };
    if size.is_some_and(|s| s > ctx.server.config.proto_max_bulk_len()) {
        return error("ERR size is larger than proto-max-bulk-len");
    }
    let db = ctx.db();
    for i in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{i}").as_bytes());
        if db.contains(&key)? {
            continue;
        }
        let mut value = format!("value:{i}").into_bytes();
        if let Some(size) = size {
            value.resize(size, 0);
        }
        db.set(&key, &value, None)?;
    }
    ok()
}

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Does nothing: hotkv does not replicate.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "JMAP",
    "    Does nothing: hotkv prints no heap map.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory (lsm engine:",
    "    its log synced, the data written out as an RDB and loaded back).",
    "LOG <message>",
    "    Write <message> to the server log.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the cut of client output buffers held past their need.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Accepted and checked; hotkv's lists have no separate nodes for large elements.",
    "OBJECT <key>",
    "    Show low level info about the <key> and associated value.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    Enable or disable the execution of commands flagged noscript from scripts.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RESTORE's payloads.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Prints this help.",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: Kind, value: Vec<u8>, deadline: Option<u64>) -> Entry {
        Entry {
            kind,
            ..Entry::plain(value, deadline)
        }
    }

    #[test]
    fn a_set_or_hash_digest_ignores_order_and_a_list_digest_does_not() {
        let packed = |items: &[&str]| packed::pack(items.iter().map(|s| s.as_bytes()));
        let digest = |kind, items: &[&str]| value_digest(&entry(kind, packed(items), None));
        assert_eq!(
            digest(Kind::Set, &["a", "b"]),
            digest(Kind::Set, &["b", "a"])
        );
        assert_ne!(
            digest(Kind::Set, &["a", "b"]),
            digest(Kind::Set, &["a", "c"])
        );
        assert_eq!(
            digest(Kind::Hash, &["f", "1", "g", "2"]),
            digest(Kind::Hash, &["g", "2", "f", "1"])
        );
        // A field's value stays with its field.
        assert_ne!(
            digest(Kind::Hash, &["f", "1", "g", "2"]),
            digest(Kind::Hash, &["f", "2", "g", "1"])
        );
        assert_ne!(
            digest(Kind::List, &["a", "b"]),
            digest(Kind::List, &["b", "a"])
        );
        // The type counts: a list and a set of the same members differ.
        assert_ne!(digest(Kind::List, &["a"]), digest(Kind::Set, &["a"]));
        // Lengths come first: ["ab"] is not ["a", "b"].
        assert_ne!(digest(Kind::List, &["ab"]), digest(Kind::List, &["a", "b"]));
    }

    #[test]
    fn a_deadline_changes_a_value_digest_whatever_it_is() {
        let with = |deadline| value_digest(&entry(Kind::String, b"v".to_vec(), deadline));
        assert_ne!(with(None), with(Some(1)));
        assert_eq!(with(Some(1)), with(Some(2)));
    }

    #[test]
    fn a_key_address_is_stable_and_looks_like_a_user_space_pointer() {
        assert_eq!(key_address(b"k"), key_address(b"k"));
        assert_ne!(key_address(b"k"), key_address(b"j"));
        assert!(key_address(b"k") < 1 << 47);
    }
}
