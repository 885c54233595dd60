//! A user key as the memtable stores it: inside the skiplist node when short, so
//! comparing with it costs no second cache miss (most keys are short: 16 bytes for
//! redis-benchmark's `key:000000123456`).

use std::borrow::Borrow;
use std::cmp::Ordering;

/// Keys up to this long are inline; sized so the whole type is 48 bytes.
const INLINE: usize = 46;

const _: () = assert!(INLINE <= u8::MAX as usize);
const _: () = assert!(std::mem::size_of::<StoredKey>() == 48);

pub enum StoredKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl StoredKey {
    pub fn new(key: &[u8]) -> StoredKey {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            StoredKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            StoredKey::Heap(key.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            StoredKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            StoredKey::Heap(bytes) => bytes,
        }
    }
}

// The skiplist is searched with byte slices, through `Borrow`: every comparison must
// be the bytes' own.
impl Borrow<[u8]> for StoredKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for StoredKey {
    fn eq(&self, other: &StoredKey) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for StoredKey {}

impl Ord for StoredKey {
    fn cmp(&self, other: &StoredKey) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for StoredKey {
    fn partial_cmp(&self, other: &StoredKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.as_bytes().escape_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys on either side of the inline limit, and across it, order as their bytes.
    #[test]
    fn inline_and_heap_keys_order_alike() {
        let keys: Vec<Vec<u8>> = [INLINE - 1, INLINE, INLINE + 1]
            .iter()
            .flat_map(|&n| [vec![b'a'; n], vec![b'b'; n]])
            .collect();
        for a in &keys {
            let x = StoredKey::new(a);
            assert_eq!(matches!(x, StoredKey::Inline { .. }), a.len() <= INLINE);
            assert_eq!(x.as_bytes(), &a[..]);
            for b in &keys {
                let y = StoredKey::new(b);
                assert_eq!(x.cmp(&y), a.cmp(b), "{a:?} against {b:?}");
                assert_eq!(x == y, a == b);
            }
        }
    }
}
