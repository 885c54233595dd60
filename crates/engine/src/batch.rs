//! A write batch: puts and deletes applied together, all or none, in the order added.
//!
//! The batch keeps its operations encoded, because that encoding is what the LSM
//! engine's write-ahead log stores (see `crates/lsm/src/wal_format.md`):
//!
//! ```text
//! entry := kind: u8 (0 delete, 1 put) | varint key length | key | (put only) varint value length | value
//! ```

use crate::error::{Error, Result};
use crate::varint;

pub const KIND_DELETE: u8 = 0;
pub const KIND_PUT: u8 = 1;

#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    count: u32,
    entries: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    Put(&'a [u8], &'a [u8]),
    Delete(&'a [u8]),
}

impl<'a> BatchOp<'a> {
    pub fn key(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put(key, _) | BatchOp::Delete(key) => key,
        }
    }
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.entries.push(KIND_PUT);
        put_slice(&mut self.entries, key);
        put_slice(&mut self.entries, value);
        self.count += 1;
        self
    }

    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.entries.push(KIND_DELETE);
        put_slice(&mut self.entries, key);
        self.count += 1;
        self
    }

    /// Adds `other`'s operations after this batch's.
    pub fn append(&mut self, other: &WriteBatch) {
        self.count = self
            .count
            .checked_add(other.count)
            .expect("a write batch holds at most u32::MAX operations");
        self.entries.extend_from_slice(&other.entries);
    }

    /// How many operations the batch holds.
    pub fn len(&self) -> u32 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn clear(&mut self) {
        self.count = 0;
        self.entries.clear();
    }

    /// The encoded operations (without the count).
    pub fn entries(&self) -> &[u8] {
        &self.entries
    }

    /// A batch from its encoded form, checked: every entry must parse and there must be
    /// exactly `count` of them. On failure the error says at which byte of `entries`.
    pub fn decode(count: u32, entries: &[u8]) -> std::result::Result<WriteBatch, (usize, String)> {
        let mut ops = Ops {
            rest: entries,
            offset: 0,
        };
        let mut seen = 0u32;
        while !ops.rest.is_empty() {
            ops.next_op()?;
            seen += 1;
        }
        if seen != count {
            return Err((
                entries.len(),
                format!("batch header says {count} operations, found {seen}"),
            ));
        }
        Ok(WriteBatch {
            count,
            entries: entries.to_vec(),
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> {
        let mut ops = Ops {
            rest: &self.entries,
            offset: 0,
        };
        std::iter::from_fn(move || {
            if ops.rest.is_empty() {
                return None;
            }
            // Entries were either encoded by this type or checked by `decode`.
            Some(
                ops.next_op()
                    .expect("a write batch holds well-formed entries"),
            )
        })
    }

    /// The key and value bytes the batch carries, the "user bytes" that write
    /// amplification is measured against.
    pub fn payload_bytes(&self) -> u64 {
        self.iter()
            .map(|op| match op {
                BatchOp::Put(k, v) => (k.len() + v.len()) as u64,
                BatchOp::Delete(k) => k.len() as u64,
            })
            .sum()
    }
}

/// Rejects keys an engine cannot store: the only limit is that lengths fit the formats.
pub fn check_sizes(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > u32::MAX as usize || value.len() > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "keys and values are limited to {} bytes (key {}, value {})",
            u32::MAX,
            key.len(),
            value.len()
        )));
    }
    Ok(())
}

fn put_slice(out: &mut Vec<u8>, bytes: &[u8]) {
    varint::put(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

struct Ops<'a> {
    rest: &'a [u8],
    offset: usize,
}

impl<'a> Ops<'a> {
    fn next_op(&mut self) -> std::result::Result<BatchOp<'a>, (usize, String)> {
        let kind = self.rest[0];
        self.advance(1);
        let key = self.slice("key")?;
        match kind {
            KIND_PUT => Ok(BatchOp::Put(key, self.slice("value")?)),
            KIND_DELETE => Ok(BatchOp::Delete(key)),
            other => Err((self.offset - 1, format!("unknown operation kind {other}"))),
        }
    }

    fn slice(&mut self, what: &str) -> std::result::Result<&'a [u8], (usize, String)> {
        let Some((len, used)) = varint::get(self.rest) else {
            return Err((self.offset, format!("bad {what} length")));
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > self.rest.len() - used {
            return Err((
                self.offset,
                format!(
                    "{what} length {len} runs past the batch's end ({} bytes left)",
                    self.rest.len() - used
                ),
            ));
        }
        self.advance(used);
        let bytes = &self.rest[..len];
        self.advance(len);
        Ok(bytes)
    }

    fn advance(&mut self, n: usize) {
        self.rest = &self.rest[n..];
        self.offset += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = (Vec<u8>, Option<Vec<u8>>)> {
        (
            proptest::collection::vec(any::<u8>(), 0..300),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        )
    }

    proptest! {
        #[test]
        fn decode_gives_back_what_was_encoded(ops in proptest::collection::vec(op(), 0..20)) {
            let mut batch = WriteBatch::new();
            for (key, value) in &ops {
                match value {
                    Some(v) => batch.put(key, v),
                    None => batch.delete(key),
                };
            }
            let decoded = WriteBatch::decode(batch.len(), batch.entries()).unwrap();
            prop_assert_eq!(&decoded, &batch);
            let back: Vec<_> = decoded
                .iter()
                .map(|op| match op {
                    BatchOp::Put(k, v) => (k.to_vec(), Some(v.to_vec())),
                    BatchOp::Delete(k) => (k.to_vec(), None),
                })
                .collect();
            prop_assert_eq!(back, ops);
        }

        /// Damaged encodings are refused with an offset, never a panic or a wrong batch
        /// that claims the stated count.
        #[test]
        fn decode_refuses_damage(ops in proptest::collection::vec(op(), 1..8), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            let mut batch = WriteBatch::new();
            for (key, value) in &ops {
                match value {
                    Some(v) => batch.put(key, v),
                    None => batch.delete(key),
                };
            }
            let entries = batch.entries();
            let cut = cut.index(entries.len());
            if let Err((offset, _)) = WriteBatch::decode(batch.len(), &entries[..cut]) {
                prop_assert!(offset <= cut);
            } else {
                prop_assert!(false, "a batch cut at {} of {} bytes decoded", cut, entries.len());
            }
            let mut flipped = entries.to_vec();
            let at = flip.0.index(flipped.len());
            flipped[at] ^= flip.1 | 1;
            // A flip may still parse (inside a key or value); it must never panic.
            let _ = WriteBatch::decode(batch.len(), &flipped);
        }
    }

    #[test]
    fn counts_and_payload() {
        let mut batch = WriteBatch::new();
        batch.put(b"ab", b"xyz").delete(b"q");
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.payload_bytes(), 6);
        assert!(WriteBatch::decode(3, batch.entries()).is_err());
        batch.clear();
        assert!(batch.is_empty());
    }
}
