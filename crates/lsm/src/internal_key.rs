//! Internal keys: a user key followed by an 8-byte trailer, `sequence << 8 | kind`,
//! little-endian. They order by user key ascending, then trailer descending, so a
//! key's newest version comes first and "key as of sequence s" is one lower-bound
//! search. The memtable and the tables both store them.

use std::borrow::Borrow;
use std::cmp::Ordering;

use engine::KIND_PUT;

pub const TRAILER_SIZE: usize = 8;

/// The largest sequence number: it must fit the trailer beside the kind byte.
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// A borrowed internal key. `repr(transparent)` over `[u8]` so a byte slice can be
/// viewed as one, which lets the skiplist be searched without building an owned key.
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

    fn trailer(&self) -> u64 {
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

/// Internal keys up to this long are stored inside the skiplist node: comparing with
/// one then costs no second cache miss (most keys are short: 24 bytes for
/// redis-benchmark's `key:000000123456` with its trailer). Sized so the key is 48 bytes.
const INLINE: usize = 46;

/// An owned internal key, as the skiplist stores it: inline when short.
pub enum InternalKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

const _: () = assert!(INLINE <= u8::MAX as usize);

impl InternalKey {
    pub fn new(user_key: &[u8], sequence: u64, kind: u8) -> InternalKey {
        let trailer = trailer(sequence, kind).to_le_bytes();
        let len = user_key.len() + TRAILER_SIZE;
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..user_key.len()].copy_from_slice(user_key);
            bytes[user_key.len()..len].copy_from_slice(&trailer);
            InternalKey::Inline {
                len: len as u8,
                bytes,
            }
        } else {
            let mut bytes = Vec::with_capacity(len);
            bytes.extend_from_slice(user_key);
            bytes.extend_from_slice(&trailer);
            InternalKey::Heap(bytes.into_boxed_slice())
        }
    }

    fn as_bytes(&self) -> &[u8] {
        match self {
            InternalKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            InternalKey::Heap(bytes) => bytes,
        }
    }
}

impl PartialEq for InternalKey {
    fn eq(&self, other: &InternalKey) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InternalKey {}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key: &KeyRef = self.borrow();
        write!(
            f,
            "{}@{}/{}",
            key.user_key().escape_ascii(),
            key.sequence(),
            key.kind()
        )
    }
}

impl Borrow<KeyRef> for InternalKey {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(self.as_bytes())
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &InternalKey) -> Ordering {
        // Must agree with KeyRef's order, since searches go through Borrow.
        Borrow::<KeyRef>::borrow(self).cmp(other.borrow())
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &InternalKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn trailer(sequence: u64, kind: u8) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The internal-key order is user key ascending, then sequence descending,
        /// whatever the key bytes (a prefix must not confuse user key and trailer).
        #[test]
        fn order_is_user_key_then_newest(a: Vec<u8>, b: Vec<u8>, sa in 0..MAX_SEQUENCE, sb in 0..MAX_SEQUENCE, ka in 0u8..2, kb in 0u8..2) {
            let x = InternalKey::new(&a, sa, ka);
            let y = InternalKey::new(&b, sb, kb);
            let want = a.cmp(&b).then(sb.cmp(&sa)).then(kb.cmp(&ka));
            prop_assert_eq!(x.cmp(&y), want);
            let xr: &KeyRef = x.borrow();
            prop_assert_eq!(xr.user_key(), &a[..]);
            prop_assert_eq!(xr.sequence(), sa);
            prop_assert_eq!(xr.kind(), ka);
        }
    }

    /// Keys on either side of the inline limit, and across it, order as their bytes.
    #[test]
    fn inline_and_heap_keys_order_alike() {
        let lens = [
            INLINE - TRAILER_SIZE - 1,
            INLINE - TRAILER_SIZE,
            INLINE - TRAILER_SIZE + 1,
        ];
        let keys: Vec<Vec<u8>> = lens
            .iter()
            .flat_map(|&n| [vec![b'a'; n], vec![b'b'; n]])
            .collect();
        for a in &keys {
            let x = InternalKey::new(a, 7, KIND_PUT);
            let inline = matches!(x, InternalKey::Inline { .. });
            assert_eq!(inline, a.len() + TRAILER_SIZE <= INLINE);
            for b in &keys {
                let y = InternalKey::new(b, 7, KIND_PUT);
                assert_eq!(x.cmp(&y), a.cmp(b), "{a:?} against {b:?}");
                assert_eq!(x == y, a == b);
            }
            let xr: &KeyRef = x.borrow();
            assert_eq!(xr.user_key(), &a[..]);
        }
    }
}
