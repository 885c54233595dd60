//! Internal keys: a user key followed by an 8-byte trailer, `sequence << 8 | kind`,
//! little-endian. They order by user key ascending, then trailer descending, so a
//! key's newest version comes first and "key as of sequence s" is one lower-bound
//! search. The tables store them; the memtable stores a key once with its trailers
//! beside it, and yields internal keys when read in order.

use std::cmp::Ordering;

use engine::KIND_PUT;

pub const TRAILER_SIZE: usize = 8;

/// The largest sequence number: it must fit the trailer beside the kind byte.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// A borrowed internal key. `repr(transparent)` over `[u8]` so a byte slice can be
/// viewed as one, which lets keys in blocks be compared without copying them.
#[repr(transparent)]
#[derive(PartialEq, Eq)]
pub struct KeyRef([u8]);

impl KeyRef {
    /// Views `bytes` as an internal key. Bytes too short for a trailer (only damaged
    /// data could hold them) read as a key with trailer 0 rather than panic.
    pub fn new(bytes: &[u8]) -> &KeyRef {
        // SAFETY: KeyRef is repr(transparent) over [u8], so the two references have the
        // same layout and metadata (the length), and the lifetime is carried over.
        unsafe { &*(bytes as *const [u8] as *const KeyRef) }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn user_key(&self) -> &[u8] {
        &self.0[..self.0.len().saturating_sub(TRAILER_SIZE)]
    }

    pub fn trailer(&self) -> u64 {
        match self.0.len().checked_sub(TRAILER_SIZE) {
            Some(at) => u64::from_le_bytes(self.0[at..].try_into().unwrap()),
            None => 0,
        }
    }

    pub fn sequence(&self) -> u64 {
        self.trailer() >> 8
    }

    pub fn kind(&self) -> u8 {
        self.trailer() as u8
    }
}

impl Ord for KeyRef {
    fn cmp(&self, other: &KeyRef) -> Ordering {
        self.user_key()
            .cmp(other.user_key())
            .then_with(|| other.trailer().cmp(&self.trailer()))
    }
}

impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &KeyRef) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The internal-key order over encoded keys, for blocks and tables.
pub fn internal_order(a: &[u8], b: &[u8]) -> Ordering {
    KeyRef::new(a).cmp(KeyRef::new(b))
}

/// The trailer of a key's version.
pub fn trailer(sequence: u64, kind: u8) -> u64 {
    assert!(
        sequence <= MAX_SEQUENCE,
        "sequence number {sequence} overflows the trailer"
    );
    sequence << 8 | u64::from(kind)
}

/// Calls `f` with the internal key that sorts just before every version of
/// `user_key` visible at `sequence`, built on the stack when it is short.
pub fn with_lookup_key<R>(user_key: &[u8], sequence: u64, f: impl FnOnce(&KeyRef) -> R) -> R {
    // The put kind is the larger, so for equal sequences this sorts first.
    let trailer = trailer(sequence, KIND_PUT).to_le_bytes();
    let len = user_key.len() + TRAILER_SIZE;
    if len <= 128 {
        let mut buf = [0u8; 128];
        buf[..user_key.len()].copy_from_slice(user_key);
        buf[user_key.len()..len].copy_from_slice(&trailer);
        f(KeyRef::new(&buf[..len]))
    } else {
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(user_key);
        buf.extend_from_slice(&trailer);
        f(KeyRef::new(&buf))
    }
}

/// An internal key's bytes, for tests that build keys by hand.
#[cfg(test)]
pub fn encode(user_key: &[u8], sequence: u64, kind: u8) -> Vec<u8> {
    let mut key = user_key.to_vec();
    key.extend_from_slice(&trailer(sequence, kind).to_le_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The internal-key order is user key ascending, then sequence descending,
        /// whatever the key bytes (a prefix must not confuse user key and trailer).
        #[test]
        fn order_is_user_key_then_newest(a: Vec<u8>, b: Vec<u8>, sa in 0..MAX_SEQUENCE, sb in 0..MAX_SEQUENCE, ka in 0u8..2, kb in 0u8..2) {
            let (x, y) = (encode(&a, sa, ka), encode(&b, sb, kb));
            let (x, y) = (KeyRef::new(&x), KeyRef::new(&y));
            let want = a.cmp(&b).then(sb.cmp(&sa)).then(kb.cmp(&ka));
            prop_assert_eq!(x.cmp(y), want);
            prop_assert_eq!(x.user_key(), &a[..]);
            prop_assert_eq!(x.sequence(), sa);
            prop_assert_eq!(x.kind(), ka);
        }
    }
}
