//! A version: the set of tables in each level at one moment. Versions are immutable;
//! a flush or compaction makes a new one from an edit, and readers keep the one they
//! started with for as long as they need it.

use std::collections::BTreeSet;
use std::sync::Arc;

use engine::{Error, Result};

use crate::internal_key::KeyRef;
use crate::iterator::{InternalIterator, LevelIter};
use crate::manifest::{NewTable, VersionEdit};
use crate::table::Table;
use crate::table_builder::TableMeta;

pub const LEVELS: usize = 7;

pub struct TableFile {
    pub meta: TableMeta,
    pub table: Arc<Table>,
}

impl TableFile {
    pub fn smallest(&self) -> &KeyRef {
        KeyRef::new(&self.meta.smallest)
    }

    pub fn largest(&self) -> &KeyRef {
        KeyRef::new(&self.meta.largest)
    }

    /// Whether the table's user-key span holds `user_key`.
    fn spans(&self, user_key: &[u8]) -> bool {
        self.smallest().user_key() <= user_key && user_key <= self.largest().user_key()
    }
}

#[derive(Default)]
pub struct Version {
    /// Level 0 oldest first (tables may overlap; a higher number is newer); deeper
    /// levels sorted by key and not overlapping.
    pub levels: [Vec<Arc<TableFile>>; LEVELS],
}

impl Version {
    /// This version with `edit` applied; `open` opens each added table.
    pub fn apply(
        &self,
        edit: &VersionEdit,
        mut open: impl FnMut(&TableMeta) -> Result<Arc<Table>>,
    ) -> Result<Version> {
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted {
            levels[level].retain(|t| t.meta.number != number);
        }
        for NewTable { level, meta } in &edit.added {
            levels[*level].push(Arc::new(TableFile {
                meta: meta.clone(),
                table: open(meta)?,
            }));
        }
        levels[0].sort_by_key(|t| t.meta.number);
        for (n, level) in levels.iter_mut().enumerate().skip(1) {
            level.sort_by(|a, b| a.smallest().cmp(b.smallest()));
            // Reads below level 0 look in one table per level, so an overlap would
            // hide data: refuse such a version (only a damaged manifest can say so).
            if let Some(w) = level
                .windows(2)
                .find(|w| w[0].largest().user_key() >= w[1].smallest().user_key())
            {
                return Err(Error::corruption(
                    format!("{:06}.sst", w[1].meta.number),
                    0,
                    format!("overlaps table {} in level {n}", w[0].meta.number),
                ));
            }
        }
        Ok(Version { levels })
    }

    /// The newest entry for `lookup`'s user key at or below its sequence, as (kind,
    /// value), looking from the newest tables down.
    pub fn get(&self, lookup: &KeyRef, user_key_hash: u64) -> Result<Option<(u8, Vec<u8>)>> {
        let user_key = lookup.user_key();
        for file in self.levels[0].iter().rev() {
            if file.spans(user_key) {
                if let Some(found) = file.table.get(lookup, user_key_hash)? {
                    return Ok(Some(found));
                }
            }
        }
        for level in &self.levels[1..] {
            let at = level.partition_point(|t| t.largest() < lookup);
            if let Some(file) = level.get(at) {
                if file.spans(user_key) {
                    if let Some(found) = file.table.get(lookup, user_key_hash)? {
                        return Ok(Some(found));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Iterators over every table: one per level-0 table, one per deeper level.
    pub fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) {
        for file in self.levels[0].iter().rev() {
            out.push(Box::new(file.table.iter()));
        }
        for level in &self.levels[1..] {
            if !level.is_empty() {
                let tables = level
                    .iter()
                    .map(|f| (f.table.clone(), f.meta.largest.clone()))
                    .collect();
                out.push(Box::new(LevelIter::new(tables)));
            }
        }
    }

    /// An edit that builds this version from nothing (a new manifest's first record).
    pub fn snapshot(&self) -> VersionEdit {
        VersionEdit {
            added: self
                .levels
                .iter()
                .enumerate()
                .flat_map(|(level, files)| {
                    files.iter().map(move |f| NewTable {
                        level,
                        meta: f.meta.clone(),
                    })
                })
                .collect(),
            ..VersionEdit::default()
        }
    }

    pub fn table_numbers(&self) -> BTreeSet<u64> {
        self.levels
            .iter()
            .flatten()
            .map(|f| f.meta.number)
            .collect()
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.meta.size).sum()
    }
}
