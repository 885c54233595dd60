//! The user's view of the store over a key range: the merged internal entries of the
//! memtables and tables, reduced to the newest version of each key visible at the
//! cursor's sequence number, tombstones hidden.

use std::sync::Arc;

use engine::{Cursor, KeyRange, Result, Step, KIND_PUT};

use crate::internal_key::with_lookup_key;
use crate::iterator::{InternalIterator, MergingIter};

pub struct DbCursor<S> {
    iter: MergingIter,
    /// What the iterators read from, kept alive for as long as the cursor is.
    _source: Arc<S>,
    sequence: u64,
    range: KeyRange,
    /// Whether the entry under `iter` was already returned (so `next` steps first).
    returned_current: bool,
    exhausted: bool,
    /// The user key last decided on: its older versions are skipped.
    last_key: Option<Vec<u8>>,
    returned: usize,
}

impl<S> DbCursor<S> {
    pub fn new(
        iter: MergingIter,
        source: Arc<S>,
        sequence: u64,
        range: KeyRange,
    ) -> Result<DbCursor<S>> {
        let mut cursor = DbCursor {
            iter,
            _source: source,
            sequence,
            range,
            returned_current: false,
            exhausted: false,
            last_key: None,
            returned: 0,
        };
        cursor.seek(&[])?;
        Ok(cursor)
    }
}

impl<S> Cursor for DbCursor<S> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let target = self.range.clamp(key).to_vec();
        with_lookup_key(&target, self.sequence, |lookup| self.iter.seek(lookup))?;
        self.returned_current = false;
        self.exhausted = false;
        self.last_key = None;
        self.returned = 0;
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        let mut unbounded = usize::MAX;
        match self.next_within(&mut unbounded)? {
            Step::Entry(key, value) => Ok(Some((key, value))),
            Step::End => Ok(None),
            Step::Stopped(_) => unreachable!("a budget of usize::MAX never runs out"),
        }
    }

    fn next_within(&mut self, budget: &mut usize) -> Result<Step<'_>> {
        if self.exhausted || self.range.limit.is_some_and(|limit| self.returned >= limit) {
            return Ok(Step::End);
        }
        if self.returned_current {
            self.iter.next()?;
            self.returned_current = false;
        }
        let mut decided = false;
        while self.iter.valid() {
            let key = self.iter.key();
            let visible = key.sequence() <= self.sequence;
            if visible && self.last_key.as_deref() != Some(key.user_key()) {
                if !self.range.before_end(key.user_key()) {
                    self.exhausted = true;
                    return Ok(Step::End);
                }
                if decided && *budget == 0 {
                    return Ok(Step::Stopped(self.iter.key().user_key()));
                }
                decided = true;
                let last = self.last_key.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(key.user_key());
                if key.kind() == KIND_PUT {
                    *budget = budget.saturating_sub(1);
                    self.returned_current = true;
                    self.returned += 1;
                    return Ok(Step::Entry(self.iter.key().user_key(), self.iter.value()));
                }
            }
            *budget = budget.saturating_sub(1);
            self.iter.next()?;
        }
        self.exhausted = true;
        Ok(Step::End)
    }
}
