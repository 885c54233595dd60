//! How the server's keys map onto a durable engine's: users' keys, and the server's
//! own records (list nodes, the format marker, the function libraries), which no user
//! key can name.
//!
//! ```text
//! user key k, k[0] != 0xFF  ->  k                   (as stored before this format)
//! user key k, k[0] == 0xFF  ->  0xFF 0xFF k[1..]
//! list node id              ->  0xFF 0x00 id (u64 big-endian)
//! format marker             ->  0xFF 0x01 "hotkv-keys"  = "2" (no user value ends so: see `entry.rs`)
//! function libraries        ->  0xFF 0x02 "functions"   = FUNCTION DUMP's payload (`dump_payload.rs`)
//! ```
//!
//! The map keeps users' keys in their byte order (SCAN resumes from a key), and puts
//! the server's records in one range, `0xFF 0x00 ..= 0xFF 0xFE ...`, that scans step
//! over. Stores written before this format kept every user key as it is: at open, a
//! store without the marker has its keys starting with 0xFF rewritten escaped, and the
//! marker written, in one atomic batch (see `EngineStore::open`).

use std::borrow::Cow;

const ESCAPE: u8 = 0xFF;
const NODE: u8 = 0x00;

/// Where the server's own records start; user keys are below it or from
/// [`INTERNAL_END`] on.
pub const INTERNAL_START: &[u8] = &[ESCAPE];
/// The first key past the server's records: user keys that start with 0xFF, escaped.
pub const INTERNAL_END: &[u8] = &[ESCAPE, ESCAPE];

/// Marks a store whose keys are in this format, and holds the format's number.
pub const FORMAT_KEY: &[u8] = b"\xff\x01hotkv-keys";
pub const FORMAT: &[u8] = b"2";

/// Holds the function libraries (FUNCTION LOAD), which FLUSHALL keeps.
pub const FUNCTIONS_KEY: &[u8] = b"\xff\x02functions";

/// Whether FLUSHALL deletes engine key `stored`: a user's key or a node of one, not
/// the format marker or the function libraries.
pub fn is_data(stored: &[u8]) -> bool {
    stored != FORMAT_KEY && stored != FUNCTIONS_KEY
}

/// The engine key of user key `key`.
pub fn encode(key: &[u8]) -> Cow<'_, [u8]> {
    match key.first() {
        Some(&ESCAPE) => {
            let mut out = Vec::with_capacity(key.len() + 1);
            out.push(ESCAPE);
            out.extend_from_slice(key);
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(key),
    }
}

/// The user key stored under engine key `stored`, or `None` for one of the server's
/// own records.
pub fn decode(stored: &[u8]) -> Option<&[u8]> {
    match stored {
        [ESCAPE, ESCAPE, ..] => Some(&stored[1..]),
        [ESCAPE, ..] => None,
        _ => Some(stored),
    }
}

/// The engine key of list node `id`.
pub fn node(id: u64) -> [u8; 10] {
    let mut out = [0u8; 10];
    out[0] = ESCAPE;
    out[1] = NODE;
    out[2..].copy_from_slice(&id.to_be_bytes());
    out
}

/// The id of the list node stored under engine key `stored`, if it is one.
pub fn node_id(stored: &[u8]) -> Option<u64> {
    match stored {
        [ESCAPE, NODE, id @ ..] => Some(u64::from_be_bytes(id.try_into().ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = Vec<u8>> {
        // Mostly keys near the escape byte, where mistakes would be.
        prop::collection::vec(
            prop_oneof![Just(0xFFu8), Just(0u8), Just(1u8), any::<u8>()],
            0..6,
        )
    }

    proptest! {
        /// Users' keys round-trip, keep their order, and never land among the
        /// server's records.
        #[test]
        fn user_keys_keep_their_order_and_stay_out_of_the_internal_range(a in key(), b in key()) {
            let (ea, eb) = (encode(&a), encode(&b));
            prop_assert_eq!(decode(&ea), Some(a.as_slice()));
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
            for e in [&ea, &eb] {
                prop_assert!(e.as_ref() < INTERNAL_START || e.as_ref() >= INTERNAL_END);
                prop_assert_eq!(node_id(e), None);
            }
        }
    }

    #[test]
    fn the_servers_records_are_not_user_keys() {
        for id in [0, 1, 255, u64::MAX] {
            let k = node(id);
            assert_eq!(decode(&k), None);
            assert_eq!(node_id(&k), Some(id));
            assert!(k.as_slice() >= INTERNAL_START && k.as_slice() < INTERNAL_END);
        }
        assert_eq!(decode(FORMAT_KEY), None);
        assert_eq!(node_id(FORMAT_KEY), None);
        assert!(FORMAT_KEY >= INTERNAL_START && FORMAT_KEY < INTERNAL_END);
    }
}
