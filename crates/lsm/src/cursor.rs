//! The user's view of the memtable over a key range: the newest version of each key
//! visible at the cursor's sequence number, tombstones hidden.

use std::borrow::Borrow;

use engine::{Cursor, KeyRange, Result, KIND_PUT};

use crate::memtable::{KeyRef, MemEntry, MemTable};

pub struct MemCursor<'a> {
    memtable: &'a MemTable,
    sequence: u64,
    range: KeyRange,
    /// The entry the next call to `next` starts from.
    at: Option<MemEntry<'a>>,
    /// Whether `at` was already returned (so `next` must step past it first).
    returned_at: bool,
    /// The user key last decided on: its older versions are skipped.
    last_key: Option<Vec<u8>>,
    returned: usize,
}

impl<'a> MemCursor<'a> {
    pub fn new(memtable: &'a MemTable, sequence: u64, range: KeyRange) -> MemCursor<'a> {
        let mut cursor = MemCursor {
            memtable,
            sequence,
            range,
            at: None,
            returned_at: false,
            last_key: None,
            returned: 0,
        };
        cursor.position(&[]);
        cursor
    }

    fn position(&mut self, target: &[u8]) {
        let target = self.range.clamp(target);
        self.at = self.memtable.seek(target, self.sequence);
        self.returned_at = false;
        self.last_key = None;
        self.returned = 0;
    }
}

impl Cursor for MemCursor<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.position(key);
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.range.limit.is_some_and(|limit| self.returned >= limit) {
            return Ok(None);
        }
        if self.returned_at {
            self.at = self.at.take().and_then(|entry| entry.next());
            self.returned_at = false;
        }
        while let Some(entry) = &self.at {
            let key: &KeyRef = entry.key().borrow();
            let visible = key.sequence() <= self.sequence;
            let older = self.last_key.as_deref() == Some(key.user_key());
            if visible && !older {
                if !self.range.before_end(key.user_key()) {
                    self.at = None;
                    return Ok(None);
                }
                let last = self.last_key.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(key.user_key());
                if key.kind() == KIND_PUT {
                    break;
                }
            }
            self.at = entry.next();
        }
        let Some(entry) = &self.at else {
            return Ok(None);
        };
        self.returned_at = true;
        self.returned += 1;
        let key: &KeyRef = entry.key().borrow();
        Ok(Some((key.user_key(), entry.value())))
    }
}
