//! Iterators over internal keys: every source (memtables, tables) walks its entries in
//! internal-key order through this trait, and `MergingIter` merges any number of them.

use std::sync::Arc;

use engine::Result;

use crate::internal_key::KeyRef;
use crate::memtable::{MemPosition, MemTable};
use crate::table::{Table, TableIter};

pub trait InternalIterator {
    /// Moves to the first entry at or after `target`.
    fn seek(&mut self, target: &KeyRef) -> Result<()>;
    fn seek_to_first(&mut self) -> Result<()>;
    /// Moves to the next entry; only called when valid.
    fn next(&mut self) -> Result<()>;
    fn valid(&self) -> bool;
    /// The current entry's key and value; only called when valid.
    fn key(&self) -> &KeyRef;
    fn value(&self) -> &[u8];
}

/// A memtable's versions. It keeps the memtable alive through its `Arc`, so a cursor
/// can outlive the memtable's flush.
pub struct MemIter {
    // Declared before `memtable` so it is dropped first: it borrows from it.
    position: Option<MemPosition<'static>>,
    memtable: Arc<MemTable>,
    /// The current version's internal key (the memtable stores the user key once).
    key: Vec<u8>,
}

impl MemIter {
    pub fn new(memtable: Arc<MemTable>) -> MemIter {
        MemIter {
            position: None,
            memtable,
            key: Vec::new(),
        }
    }

    fn set(&mut self, position: Option<MemPosition<'_>>) {
        // SAFETY: the position borrows the memtable inside `self.memtable`'s
        // allocation, which does not move and lives as long as this `Arc` does. The
        // field order drops the position before the `Arc`, `set` replaces it only with
        // positions in the same memtable, and the 'static lifetime never leaves this
        // type: `key` and `value` hand out borrows of `&self`.
        self.position = position
            .map(|p| unsafe { std::mem::transmute::<MemPosition<'_>, MemPosition<'static>>(p) });
        if let Some(position) = &self.position {
            self.key.clear();
            self.key.extend_from_slice(position.user_key());
            self.key
                .extend_from_slice(&position.trailer().to_le_bytes());
        }
    }
}

impl InternalIterator for MemIter {
    fn seek(&mut self, target: &KeyRef) -> Result<()> {
        let memtable = Arc::clone(&self.memtable);
        self.set(memtable.seek(target));
        Ok(())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let memtable = Arc::clone(&self.memtable);
        self.set(memtable.first());
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let next = self.position.take().and_then(MemPosition::next);
        self.set(next);
        Ok(())
    }

    fn valid(&self) -> bool {
        self.position.is_some()
    }

    fn key(&self) -> &KeyRef {
        assert!(self.valid(), "a valid iterator");
        KeyRef::new(&self.key)
    }

    fn value(&self) -> &[u8] {
        self.position.as_ref().expect("a valid iterator").value()
    }
}

/// The tables of one level from 1 down, which do not overlap and are sorted: one
/// table is open at a time.
pub struct LevelIter {
    tables: Vec<Arc<Table>>,
    /// Each table's largest internal key, for seeks.
    largest: Vec<Vec<u8>>,
    at: usize,
    current: Option<TableIter<Arc<Table>>>,
}

impl LevelIter {
    pub fn new(tables: Vec<(Arc<Table>, Vec<u8>)>) -> LevelIter {
        let (tables, largest) = tables.into_iter().unzip();
        LevelIter {
            tables,
            largest,
            at: 0,
            current: None,
        }
    }

    fn open(&mut self, at: usize) {
        self.at = at;
        self.current = self.tables.get(at).map(|t| t.iter());
    }

    fn skip_exhausted_tables(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            self.open(self.at + 1);
            if let Some(current) = &mut self.current {
                current.seek_to_first()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for LevelIter {
    fn seek(&mut self, target: &KeyRef) -> Result<()> {
        let at = self
            .largest
            .partition_point(|largest| KeyRef::new(largest) < target);
        self.open(at);
        if let Some(current) = &mut self.current {
            current.seek(target)?;
        }
        self.skip_exhausted_tables()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.open(0);
        if let Some(current) = &mut self.current {
            current.seek_to_first()?;
        }
        self.skip_exhausted_tables()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(current) = &mut self.current {
            current.next()?;
        }
        self.skip_exhausted_tables()
    }

    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn key(&self) -> &KeyRef {
        self.current.as_ref().expect("a valid iterator").key()
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().expect("a valid iterator").value()
    }
}

/// Merges sorted children into one sorted stream. Internal keys are unique (each has
/// its own sequence number), so there are no ties to break. Children are few (the
/// memtables, the level-0 tables, one per deeper level), so the smallest is found by
/// a linear scan.
pub struct MergingIter {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
}

impl MergingIter {
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIter {
        MergingIter {
            children,
            current: None,
        }
    }

    fn find_smallest(&mut self) {
        let mut smallest: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if child.valid() && smallest.is_none_or(|s| child.key() < self.children[s].key()) {
                smallest = Some(i);
            }
        }
        self.current = smallest;
    }
}

impl InternalIterator for MergingIter {
    fn seek(&mut self, target: &KeyRef) -> Result<()> {
        for child in &mut self.children {
            child.seek(target)?;
        }
        self.find_smallest();
        Ok(())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for child in &mut self.children {
            child.seek_to_first()?;
        }
        self.find_smallest();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let current = self.current.expect("a valid iterator");
        self.children[current].next()?;
        self.find_smallest();
        Ok(())
    }

    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn key(&self) -> &KeyRef {
        self.children[self.current.expect("a valid iterator")].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.current.expect("a valid iterator")].value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_key::with_lookup_key;
    use crate::memtable::MemTable;
    use engine::KIND_PUT;

    /// The cursor holds the only reference to its memtable once the store lets go of it
    /// (a flush), and its entry borrows from inside: the case `MemIter::set`'s `unsafe`
    /// argues for. Small enough for Miri (`scripts/test.sh` runs it there).
    #[test]
    fn a_memtable_cursor_outlives_the_stores_reference() {
        let memtable = Arc::new(MemTable::new(1, 1 << 16));
        let mut writer = memtable.writer();
        for (i, k) in [b"b", b"d", b"a", b"c"].iter().enumerate() {
            writer.insert(*k, i as u64 + 1, KIND_PUT, &[i as u8; 3]);
        }
        drop(writer);
        let mut it = MemIter::new(Arc::clone(&memtable));
        drop(memtable);
        it.seek_to_first().unwrap();
        let mut seen = Vec::new();
        while it.valid() {
            seen.push((it.key().user_key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        assert_eq!(
            seen,
            vec![
                (b"a".to_vec(), vec![2; 3]),
                (b"b".to_vec(), vec![0; 3]),
                (b"c".to_vec(), vec![3; 3]),
                (b"d".to_vec(), vec![1; 3]),
            ]
        );
        with_lookup_key(b"bb", 9, |target| it.seek(target)).unwrap();
        assert_eq!(it.key().user_key(), b"c");
        with_lookup_key(b"e", 9, |target| it.seek(target)).unwrap();
        assert!(!it.valid());
        // Dropped while on an entry: the entry must go before the memtable.
        it.seek_to_first().unwrap();
        assert!(it.valid());
    }
}
