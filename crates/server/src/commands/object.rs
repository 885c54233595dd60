//! OBJECT ENCODING | REFCOUNT | FREQ | IDLETIME | HELP.

use resp::Frame;

use super::{error, int, parse_integer, reply, upper, Ctx, Reply};
use crate::config::{EncodingLimit, Policy};
use crate::entry::Kind;
use crate::packed;

/// Redis stores a string that reads as a 64-bit integer (in at most 20 bytes) as
/// `int`, a short one inside its object header as `embstr`, a longer one as `raw`.
/// hotkv stores bytes either way; it names the encoding Redis would have used, since
/// tools read it to estimate memory and tests compare it. A string last written in
/// place (APPEND, SETRANGE, SETBIT, BITOP) is `raw` whatever it holds, as in Redis.
const EMBSTR_MAX: usize = 44;

/// Redis shares one object for each integer value below this, when no LRU or LFU
/// policy needs a per-key clock; OBJECT REFCOUNT then reports `i32::MAX`.
const SHARED_INTEGERS: i64 = 10_000;

/// The entry OBJECT describes: a read for the statistics, but no `keymiss` event and
/// no access (its idle time goes on), as in Redis. With `split_unread`, a collection
/// split into nodes comes without its value (see [`crate::db::Db::get_of`]), which is
/// not expanded for what its tag tells.
fn read(ctx: &Ctx, key: &[u8], split_unread: bool) -> engine::Result<Option<crate::entry::Entry>> {
    let found = match split_unread {
        true => ctx.db().peek_of(key, Kind::String)?,
        false => ctx.db().peek(key)?,
    };
    ctx.count_read(found.is_some());
    Ok(found)
}

pub fn object(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sub = upper(&args[1]);
    match (sub.as_slice(), &args[2..]) {
        (b"HELP", []) => super::help(HELP),
        // A split hash, set or sorted set is in the large encoding (`Entry::raw`: only
        // those are split), and a list or stream is named by its type alone.
        (b"ENCODING", [key]) => match read(ctx, key, true)? {
            None => reply(Frame::Null),
            Some(entry) => reply(Frame::bulk(encoding_of(ctx, &entry))),
        },
        (b"REFCOUNT", [key]) => match read(ctx, key, true)? {
            None => reply(Frame::Null),
            Some(entry) => int(refcount(ctx, &entry)),
        },
        (b"FREQ", [key]) | (b"IDLETIME", [key]) => {
            if read(ctx, key, true)?.is_none() {
                return reply(Frame::Null);
            }
            let lfu = ctx.server.config.policy().lfu();
            match (sub.as_slice(), lfu) {
                (b"FREQ", true) => match (ctx.db().lfu_counter(key), ctx.db().index()) {
                    (Some(counter), _) => int(counter.into()),
                    (None, Some(index)) => int(frequency(index.access_share(key))),
                    (None, None) => unreachable!("a store without LFU counters is an index"),
                },
                (b"FREQ", false) => error(
                    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                     Please note that when switching between policies at runtime LRU and LFU \
                     data will take some time to adjust.",
                ),
                (b"IDLETIME", true) => error(
                    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please \
                     note that when switching between policies at runtime LRU and LFU data \
                     will take some time to adjust.",
                ),
                // `None`: the key went since it was found.
                _ => match ctx.db().idle_seconds(key) {
                    Some(idle) => int(idle.into()),
                    None => reply(Frame::Null),
                },
            }
        }
        _ => super::bad_subcommand("object", &args[1]),
    }
}

/// OBJECT REFCOUNT's count for `entry`: Redis's for a shared integer, else 1.
pub(super) fn refcount(ctx: &Ctx, entry: &crate::entry::Entry) -> i64 {
    let config = &ctx.server.config;
    let clocked = matches!(
        config.policy(),
        Policy::AllKeysLru | Policy::AllKeysLfu | Policy::VolatileLru | Policy::VolatileLfu
    );
    let shared = (config.maxmemory() == 0 || !clocked)
        && entry.is_string()
        && (0..SHARED_INTEGERS).contains(&parse_int_value(&entry.value));
    if shared {
        i32::MAX as i64
    } else {
        1
    }
}

/// The encoding OBJECT ENCODING (and DEBUG OBJECT) names for `entry`. A split hash,
/// set or sorted set is in the large encoding (`Entry::raw`: only those are split), and
/// a list or stream is named by its type alone, so a split entry need not be expanded.
pub(super) fn encoding_of(ctx: &Ctx, entry: &crate::entry::Entry) -> &'static str {
    if entry.is_string() {
        return if entry.raw {
            "raw"
        } else {
            encoding(&entry.value)
        };
    }
    if entry.raw || matches!(entry.kind, Kind::List | Kind::Stream) {
        return large_encoding(entry.kind);
    }
    let limit = |which| ctx.server.config.encoding_limit(which);
    collection_encoding(entry.kind, &entry.value, limit)
}

/// OBJECT FREQ's number from a key's share of recent accesses (as the hot-key tables
/// estimate it): like Redis's LFU counter, 0-255 and growing with the logarithm of the
/// access rate, so tools that rank keys by it (`redis-cli --hotkeys`) rank them as
/// HOTKEYS does. A key drawing all accesses gets 255; one the tables do not track, 0.
fn frequency(share: f64) -> i64 {
    (16.0 * (1.0 + share * 65_536.0).log2()).round().min(255.0) as i64
}

fn encoding(value: &[u8]) -> &'static str {
    if value.len() <= 20 && parse_integer(value).is_some() {
        "int"
    } else if value.len() <= EMBSTR_MAX {
        "embstr"
    } else {
        "raw"
    }
}

/// Whether Redis 7.0 would hold a hash, set or sorted set of this value in its larger
/// encoding under the configured limits: once it does, it stays there (`Entry::raw`).
pub fn held_large(ctx: &Ctx, kind: Kind, value: &[u8]) -> bool {
    let limit = |which| ctx.server.config.encoding_limit(which);
    kind != Kind::List && collection_encoding(kind, value, limit) == large_encoding(kind)
}

/// The larger encoding of a list, hash, set or sorted set.
fn large_encoding(kind: Kind) -> &'static str {
    match kind {
        Kind::String => unreachable!("strings are named by `encoding`"),
        Kind::List => "quicklist",
        Kind::Hash | Kind::Set => "hashtable",
        Kind::ZSet => "skiplist",
        Kind::Stream => "stream",
    }
}

/// What Redis 7.0 would call a collection's representation under the thresholds
/// `limit` gives (`hash-max-listpack-entries` and `-value`, `set-max-intset-entries`,
/// `zset-max-listpack-entries` and `-value`), from what it holds now. Redis converts a
/// small representation to a large one once and never back, which `Entry::raw` keeps.
fn collection_encoding(
    kind: Kind,
    value: &[u8],
    limit: impl Fn(EncodingLimit) -> i64,
) -> &'static str {
    let count = packed::count(value) as i64;
    // At most `entries` entries, none of whose parts is longer than `bytes`.
    // Called on each write of a small hash or sorted set (`held_large`): the lengths
    // are borrowed, not boxed, and the limit read once.
    let small = |entries, bytes, mut lengths: &mut dyn Iterator<Item = usize>| {
        let longest = limit(bytes);
        count <= limit(entries) && Iterator::all(&mut lengths, |n| n as i64 <= longest)
    };
    match kind {
        Kind::String => unreachable!("strings are named by `encoding`"),
        Kind::List => "quicklist",
        Kind::Hash
            if small(
                EncodingLimit::HashEntries,
                EncodingLimit::HashValue,
                &mut packed::elements(value).map(<[u8]>::len),
            ) =>
        {
            "listpack"
        }
        Kind::Hash => "hashtable",
        Kind::Set
            if count <= limit(EncodingLimit::SetIntsetEntries)
                && packed::elements(value).all(|m| packed::set_integer(m).is_some()) =>
        {
            "intset"
        }
        Kind::Set => "hashtable",
        Kind::ZSet
            if small(
                EncodingLimit::ZsetEntries,
                EncodingLimit::ZsetValue,
                &mut packed::scored(value).map(|(m, _)| m.len()),
            ) =>
        {
            "listpack"
        }
        Kind::ZSet => "skiplist",
        Kind::Stream => "stream",
    }
}

/// The value as an integer if Redis would store it as one, else -1 (never shared).
fn parse_int_value(value: &[u8]) -> i64 {
    if value.len() <= 20 {
        parse_integer(value).unwrap_or(-1)
    } else {
        -1
    }
}

const HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    The internal representation Redis would use for the value at <key>:",
    "    int, embstr or raw for strings; quicklist for lists; listpack or hashtable",
    "    for hashes; intset or hashtable for sets; listpack or skiplist for sorted sets.",
    "FREQ <key>",
    "    Under an LFU policy, a number from 0 to 255 that grows with the logarithm",
    "    of <key>'s share of recent accesses (0 if it is not among the hottest).",
    "IDLETIME <key>",
    "    Seconds since <key> was last read or written (memory engine; not under",
    "    an LFU policy, which tracks frequency instead).",
    "REFCOUNT <key>",
    "    The number of references to the value at <key>.",
    "HELP",
    "    Print this help.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequency_grows_with_the_log_of_the_share_from_0_to_255() {
        assert_eq!(frequency(0.0), 0);
        assert_eq!(frequency(1.0), 255);
        let shares = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5];
        let freqs: Vec<i64> = shares.iter().map(|s| frequency(*s)).collect();
        assert!(freqs.windows(2).all(|w| w[0] < w[1]), "{freqs:?}");
    }

    #[test]
    fn encodings_follow_redis_thresholds() {
        assert_eq!(encoding(b"9223372036854775807"), "int");
        assert_eq!(encoding(b"9223372036854775808"), "embstr");
        assert_eq!(encoding(b" 1"), "embstr");
        assert_eq!(encoding(&[b'x'; 44]), "embstr");
        assert_eq!(encoding(&[b'x'; 45]), "raw");
    }
}
