//! How a key's value is stored in the index.
//!
//! ```text
//! stored = payload | deadline (8 bytes, little-endian, ms since the Unix epoch) | tag
//! tag    = bit 0: a deadline is present (else there are no deadline bytes)
//!          bit 1: raw (see `Entry::raw`; strings, hashes, sets and sorted sets)
//!          bits 2-4: the type: 0 string, 1 list, 2 hash, 3 set, 4 sorted set, 5 stream
//!          bit 5: the payload is a node table (see `nodes.rs`)
//!          bit 6: a list's node table begins with its ends (see `list_nodes.rs`)
//!          the other bits are 0
//! ```
//!
//! A string's payload is its bytes; the other types' is their packed form (see
//! `packed.rs`). The tag sits at the end so decoding only truncates the vector it
//! reads: no copy of the payload. Stores written before the raw bit or the types
//! existed read unchanged (their tags are 0 and 1).

use std::cell::Cell;

const HAS_DEADLINE: u8 = 1;

/// Bytes an entry adds after its payload at most: a deadline and the tag. A buffer
/// built to become a payload leaves room for them, so that [`Entry::into_stored`] does
/// not grow it by a copy (an HSET's root copied once more was 3% of its instructions).
pub const TRAILER_MAX: usize = 9;
const RAW: u8 = 2;
const KIND_SHIFT: u8 = 2;
const KIND_MASK: u8 = 0b111 << KIND_SHIFT;
const NODE_TABLE: u8 = 1 << 5;
const LIST_ENDS: u8 = 1 << 6;

/// A key's type, as TYPE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    List,
    Hash,
    Set,
    ZSet,
    Stream,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::String,
        Kind::List,
        Kind::Hash,
        Kind::Set,
        Kind::ZSet,
        Kind::Stream,
    ];

    /// What TYPE replies.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }

    fn bits(self) -> u8 {
        (self as u8) << KIND_SHIFT
    }

    fn of_tag(tag: u8) -> Option<Kind> {
        Kind::ALL
            .get(((tag & KIND_MASK) >> KIND_SHIFT) as usize)
            .copied()
    }
}

/// A live value and its expiry deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: Vec<u8>,
    /// Milliseconds since the Unix epoch after which the key no longer exists.
    pub deadline: Option<u64>,
    /// Held in Redis's larger encoding whatever it holds now, which OBJECT ENCODING
    /// reports: a string last written by APPEND, SETRANGE, SETBIT or BITOP, which
    /// leave it `raw` (any other write encodes by the value again); a hash, set or
    /// sorted set that once passed Redis's limits for its small encoding, since Redis
    /// never converts one back.
    pub raw: bool,
    pub kind: Kind,
}

impl Entry {
    /// A string written whole (SET and the like): its encoding follows from it.
    pub fn plain(value: Vec<u8>, deadline: Option<u64>) -> Entry {
        Entry {
            value,
            deadline,
            raw: false,
            kind: Kind::String,
        }
    }

    /// A string as APPEND, SETRANGE, SETBIT and BITOP leave it.
    pub fn raw_string(value: Vec<u8>, deadline: Option<u64>) -> Entry {
        Entry {
            raw: true,
            ..Entry::plain(value, deadline)
        }
    }

    pub fn is_string(&self) -> bool {
        self.kind == Kind::String
    }

    /// A list, hash, set or sorted set in its packed form.
    pub fn collection(kind: Kind, packed: Vec<u8>, deadline: Option<u64>) -> Entry {
        debug_assert!(kind != Kind::String);
        Entry {
            value: packed,
            deadline,
            raw: false,
            kind,
        }
    }

    /// The bytes the index stores for this entry.
    pub fn stored(&self) -> Vec<u8> {
        Self::encode_as(self.kind, &self.value, self.deadline, self.raw)
    }

    /// [`Entry::stored`], reusing the payload's buffer: a large collection is not
    /// copied once more.
    pub fn into_stored(self) -> Vec<u8> {
        let mut out = self.value;
        let mut tag = self.kind.bits() | if self.raw { RAW } else { 0 };
        if let Some(d) = self.deadline {
            out.extend_from_slice(&d.to_le_bytes());
            tag |= HAS_DEADLINE;
        }
        out.push(tag);
        out
    }

    /// The stored bytes of a string.
    pub fn encode(value: &[u8], deadline: Option<u64>, raw: bool) -> Vec<u8> {
        Self::encode_as(Kind::String, value, deadline, raw)
    }

    fn encode_as(kind: Kind, value: &[u8], deadline: Option<u64>, raw: bool) -> Vec<u8> {
        debug_assert!(!raw || kind != Kind::List);
        let mut out = Vec::with_capacity(value.len() + TRAILER_MAX);
        out.extend_from_slice(value);
        let mut tag = kind.bits() | if raw { RAW } else { 0 };
        if let Some(d) = deadline {
            out.extend_from_slice(&d.to_le_bytes());
            tag |= HAS_DEADLINE;
        }
        out.push(tag);
        out
    }

    /// The stored bytes of a collection of `kind` split into nodes: its node table,
    /// whose buffer they reuse.
    pub fn encode_node_table(
        kind: Kind,
        table: Vec<u8>,
        deadline: Option<u64>,
        raw: bool,
    ) -> Vec<u8> {
        let entry = Entry {
            value: table,
            deadline,
            raw,
            kind,
        };
        let mut out = entry.into_stored();
        *out.last_mut().expect("a tag") |= NODE_TABLE;
        out
    }

    /// The stored bytes of a long list: its ends and node table (`list_nodes.rs`).
    pub fn encode_list_table(payload: Vec<u8>, deadline: Option<u64>) -> Vec<u8> {
        let mut out = Self::encode_node_table(Kind::List, payload, deadline, false);
        *out.last_mut().expect("a tag") |= LIST_ENDS;
        out
    }

    /// Whether `stored`, a list's node table, begins with its ends: tables written
    /// before ends existed, and by a split of a whole list, do not.
    pub fn stored_has_list_ends(stored: &[u8]) -> bool {
        stored.last().is_some_and(|&tag| tag & LIST_ENDS != 0)
    }

    /// Whether `stored` holds a node table (see `nodes.rs`) rather than the value.
    pub fn stored_is_node_table(stored: &[u8]) -> bool {
        stored.last().is_some_and(|&tag| tag & NODE_TABLE != 0)
    }

    /// Decodes what [`Entry::encode`] wrote. Anything else in the index is a bug, and
    /// so is a node table, which the store expands before decoding.
    pub fn decode(mut stored: Vec<u8>) -> Entry {
        let deadline = Self::stored_deadline(&stored);
        let tag = *stored.last().expect("checked by stored_deadline");
        assert!(tag & NODE_TABLE == 0, "a node table decoded as a value");
        let kind = Kind::of_tag(tag).expect("checked by stored_deadline");
        let trailer = if deadline.is_some() { TRAILER_MAX } else { 1 };
        stored.truncate(stored.len() - trailer);
        Entry {
            value: stored,
            deadline,
            raw: tag & RAW != 0,
            kind,
        }
    }

    /// The entry `stored` holds but for its value, left empty: its type, deadline and
    /// encoding, which is all a command refusing its type needs (a node table is not
    /// expanded for it).
    pub fn stored_without_value(stored: &[u8]) -> Entry {
        Entry {
            value: Vec::new(),
            deadline: Self::stored_deadline(stored),
            raw: Self::stored_raw(stored),
            kind: Self::stored_kind(stored),
        }
    }

    /// The payload of a stored value (a string's bytes, a collection packed), borrowed.
    pub fn stored_payload(stored: &[u8]) -> &[u8] {
        let trailer = if Self::stored_deadline(stored).is_some() {
            TRAILER_MAX
        } else {
            1
        };
        &stored[..stored.len() - trailer]
    }

    /// A copy of [`Entry::stored_payload`] for an editor to change and store again:
    /// it leaves room for the trailer, so that [`Entry::into_stored`] does not
    /// reallocate the buffer to add it.
    pub fn stored_payload_to_edit(stored: &[u8]) -> Vec<u8> {
        let payload = Self::stored_payload(stored);
        let mut out = Vec::with_capacity(payload.len() + TRAILER_MAX);
        out.extend_from_slice(payload);
        out
    }

    /// Whether a stored value is held in Redis's larger encoding (see [`Entry::raw`]).
    pub fn stored_raw(stored: &[u8]) -> bool {
        stored.last().is_some_and(|&tag| tag & RAW != 0)
    }

    /// The type of a stored value, without decoding the payload.
    pub fn stored_kind(stored: &[u8]) -> Kind {
        stored
            .last()
            .and_then(|&tag| Kind::of_tag(tag))
            .expect("hotkv-server wrote this value")
    }

    /// The deadline of a stored value, without decoding the payload. Only values
    /// [`Entry::encode`] wrote get here: a durable engine's are checked once, by
    /// [`Entry::check`], when it opens, so its tag is checked again by debug builds
    /// only (a write reads it several times).
    pub fn stored_deadline(stored: &[u8]) -> Option<u64> {
        debug_assert_eq!(Self::check(stored).err(), None);
        let (&tag, rest) = stored.split_last().expect("a stored value has a tag");
        (tag & HAS_DEADLINE != 0).then(|| {
            let at = rest
                .len()
                .checked_sub(8)
                .expect("a deadline before the tag");
            u64::from_le_bytes(rest[at..].try_into().expect("8 bytes"))
        })
    }

    /// `stored` with its deadline set to `deadline` (`None`: removed), its value and
    /// type left as they are: a node table still names the same nodes.
    pub fn stored_with_deadline(stored: &[u8], deadline: Option<u64>) -> Vec<u8> {
        let (&tag, rest) = stored.split_last().expect("a stored value has a tag");
        let payload = match Self::stored_deadline(stored) {
            Some(_) => &rest[..rest.len() - 8],
            None => rest,
        };
        let mut out = Vec::with_capacity(payload.len() + TRAILER_MAX);
        out.extend_from_slice(payload);
        let mut tag = tag & !HAS_DEADLINE;
        if let Some(d) = deadline {
            out.extend_from_slice(&d.to_le_bytes());
            tag |= HAS_DEADLINE;
        }
        out.push(tag);
        out
    }

    /// The deadline of a stored value, or what is wrong with it if
    /// [`Entry::encode`] did not write it.
    pub fn check(stored: &[u8]) -> Result<Option<u64>, String> {
        let Some((&tag, rest)) = stored.split_last() else {
            return Err("a stored value is empty, which hotkv-server does not write".into());
        };
        let kind = Kind::of_tag(tag);
        let known = tag & !(HAS_DEADLINE | RAW | KIND_MASK | NODE_TABLE | LIST_ENDS) == 0
            && kind.is_some()
            && (tag & RAW == 0 || kind != Some(Kind::List))
            && (tag & LIST_ENDS == 0 || (tag & NODE_TABLE != 0 && kind == Some(Kind::List)))
            && (tag & NODE_TABLE == 0
                || matches!(kind, Some(Kind::List | Kind::Stream))
                || (tag & RAW != 0 && matches!(kind, Some(Kind::Hash | Kind::Set | Kind::ZSet))));
        if !known {
            return Err(format!(
                "a stored value ends in tag {tag} with {} bytes before it, which hotkv-server does not write",
                rest.len()
            ));
        }
        if tag & HAS_DEADLINE == 0 {
            return Ok(None);
        }
        let Some(deadline) = rest.len().checked_sub(8).map(|at| &rest[at..]) else {
            return Err(format!(
                "a stored value's tag says it has a deadline, but only {} bytes precede it",
                rest.len()
            ));
        };
        Ok(Some(u64::from_le_bytes(
            deadline.try_into().expect("8 bytes"),
        )))
    }

    /// Whether the stored value had expired by `now_ms`. As in Redis, a key lives
    /// through its deadline millisecond.
    pub fn stored_expired(stored: &[u8], now_ms: u64) -> bool {
        Self::stored_deadline(stored).is_some_and(|d| d < now_ms)
    }

    /// Whether the stored value has expired by now. The clock is read only for a
    /// value with a deadline: most have none, and a read costs as much as a lookup.
    pub fn stored_expired_now(stored: &[u8]) -> bool {
        Self::stored_deadline(stored).is_some_and(|d| d < now_ms())
    }
}

/// Wall-clock milliseconds since the Unix epoch: the clock Redis expires keys by;
/// inside [`with_time_frozen`], the time it began.
pub fn now_ms() -> u64 {
    FROZEN_AT.with(Cell::get).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    })
}

thread_local! {
    /// Where [`now_ms`] stands still on this thread (see [`with_time_frozen`]).
    static FROZEN_AT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `f` with [`now_ms`] stopped at the time it starts, as Redis stops its clock
/// for a script: a key alive when a script starts does not expire half-way through
/// it, so what the script saw stays true until it ends (and so do its writes'
/// deadlines, reckoned from that time). Nested, the outer time holds.
pub fn with_time_frozen<R>(f: impl FnOnce() -> R) -> R {
    let outer = FROZEN_AT.with(Cell::get);
    FROZEN_AT.with(|t| t.set(Some(now_ms())));
    let result = f();
    FROZEN_AT.with(|t| t.set(outer));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_frozen_stands_still_until_the_outermost_freeze_ends() {
        let before = now_ms();
        with_time_frozen(|| {
            let frozen = now_ms();
            assert!(frozen >= before);
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert_eq!(now_ms(), frozen);
            with_time_frozen(|| assert_eq!(now_ms(), frozen));
            assert_eq!(now_ms(), frozen);
        });
        let after = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(now_ms() > after);
    }

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
                        (e.value.as_slice(), e.deadline, e.raw, e.kind),
                        (value, deadline, raw, Kind::String)
                    );
                }
                for kind in Kind::ALL {
                    let entry = Entry {
                        value: value.to_vec(),
                        deadline,
                        raw: false,
                        kind,
                    };
                    let stored = entry.stored();
                    assert_eq!(entry.clone().into_stored(), stored);
                    assert_eq!(Entry::check(&stored), Ok(deadline));
                    assert_eq!(Entry::stored_kind(&stored), kind);
                    assert_eq!(Entry::decode(stored), entry);
                }
            }
        }
    }

    #[test]
    fn a_payload_copied_to_edit_is_stored_again_in_its_own_buffer() {
        for deadline in [None, Some(1_700_000_000_000)] {
            for payload in [&b""[..], b"packed fields", &[7; 300]] {
                let stored = Entry::collection(Kind::Hash, payload.to_vec(), deadline).stored();
                let copy = Entry::stored_payload_to_edit(&stored);
                assert_eq!(copy, payload);
                let buffer = copy.as_ptr();
                let again = Entry::collection(Kind::Hash, copy, deadline).into_stored();
                assert_eq!(again, stored);
                // The trailer fitted in the room left for it: nothing was reallocated.
                assert_eq!(again.as_ptr(), buffer);
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
            b"abc\x18",
            b"abc\x22",
            b"abc\x40",
            b"abc\x60",
            b"abc\x6c",
        ] {
            assert!(Entry::check(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Entry::check(&Entry::encode(b"v", Some(7), true)),
            Ok(Some(7))
        );
        let list = Entry::encode_list_table(b"ends and table".to_vec(), Some(9));
        assert_eq!(Entry::check(&list), Ok(Some(9)));
        assert!(Entry::stored_has_list_ends(&list) && Entry::stored_is_node_table(&list));
        assert_eq!(Entry::stored_kind(&list), Kind::List);
        let changed = Entry::stored_with_deadline(&list, None);
        assert!(Entry::stored_has_list_ends(&changed));
        assert_eq!(Entry::stored_payload(&changed), b"ends and table");
        // What stores held before the raw bit: tags 0 and 1.
        assert_eq!(Entry::check(b"v\x00"), Ok(None));
    }

    #[test]
    fn a_deadline_changes_alone() {
        let deadlines = [None, Some(0), Some(1_700_000_000_000), Some(u64::MAX)];
        for value in [&b""[..], b"12345678", b"a longer value\r\n"] {
            for kind in Kind::ALL {
                for (raw, table) in [(false, false), (true, false), (false, true)] {
                    for (before, after) in deadlines.iter().flat_map(|&b| deadlines.map(|a| (b, a)))
                    {
                        if raw && kind == Kind::List {
                            // Never raw: `encode_as` asserts it.
                            continue;
                        }
                        let stored = if table {
                            Entry::encode_node_table(kind, value.to_vec(), before, raw)
                        } else {
                            Entry::encode_as(kind, value, before, raw)
                        };
                        if Entry::check(&stored).is_err() {
                            // A type that is never split, or never raw.
                            continue;
                        }
                        let changed = Entry::stored_with_deadline(&stored, after);
                        assert_eq!(Entry::stored_deadline(&changed), after);
                        assert_eq!(Entry::stored_payload(&changed), value);
                        assert_eq!(Entry::stored_kind(&changed), kind);
                        assert_eq!(Entry::stored_raw(&changed), raw);
                        assert_eq!(Entry::stored_is_node_table(&changed), table);
                    }
                }
            }
        }
    }

    #[test]
    fn a_key_lives_through_its_deadline_millisecond() {
        let e = Entry::plain(vec![], Some(100)).stored();
        assert!(!Entry::stored_expired(&e, 100));
        assert!(Entry::stored_expired(&e, 101));
        let forever = Entry::plain(vec![], None).stored();
        assert!(!Entry::stored_expired(&forever, u64::MAX));
    }
}
