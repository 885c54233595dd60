//! Leveled compaction: which tables to merge next, and the merge itself.
//!
//! Level 0 holds flushed memtables, which overlap; it is compacted into level 1 once
//! it has `l0_compaction_trigger` tables. Each deeper level `n` may hold
//! `level1_bytes * ratio^(n-1)` bytes; past that, one of its tables (round-robin by
//! key) is merged into the tables of level `n + 1` it overlaps. The level with the
//! highest ratio of size to limit goes first.
//!
//! A whole-store compaction (`Lsm::compact_all`, asked for after FLUSHALL) instead
//! merges each level that has tables into the next that has any, down to the deepest,
//! so that the tombstones a mass delete leaves, which every walk of the keys steps
//! over, are dropped at once rather than whenever the levels fill.

use std::sync::Arc;

use engine::{Result, KIND_DELETE};

use crate::internal_key::KeyRef;
use crate::iterator::{InternalIterator, MergingIter};
use crate::options::Options;
use crate::table_builder::{TableBuilder, TableMeta};
use crate::version::{TableFile, Version, LEVELS};

pub struct Compaction {
    /// Tables move from `level` to `output_level`.
    pub level: usize,
    pub inputs: Vec<Arc<TableFile>>,
    /// `level + 1`, except in a whole-store compaction: there it is the next level
    /// that has tables (those between are empty), or `level` itself when that level
    /// holds every table.
    pub output_level: usize,
    /// The tables of `output_level` that overlap the inputs.
    pub overlapping: Vec<Arc<TableFile>>,
}

impl Compaction {
    /// Merges `inputs`, tables of `level`, into `output_level`, with the tables there
    /// that overlap them. None if `inputs` is empty.
    fn new(
        version: &Version,
        level: usize,
        inputs: Vec<Arc<TableFile>>,
        output_level: usize,
    ) -> Option<Compaction> {
        let smallest = inputs.iter().map(|f| f.smallest().user_key()).min()?;
        let largest = inputs.iter().map(|f| f.largest().user_key()).max()?;
        let overlapping = if output_level == level {
            Vec::new()
        } else {
            version.levels[output_level]
                .iter()
                .filter(|f| {
                    f.largest().user_key() >= smallest && f.smallest().user_key() <= largest
                })
                .cloned()
                .collect()
        };
        Some(Compaction {
            level,
            inputs,
            output_level,
            overlapping,
        })
    }
}

fn level_limit(options: &Options, level: usize) -> u64 {
    let mut limit = options.level1_bytes as u64;
    for _ in 1..level {
        limit = limit.saturating_mul(options.level_size_ratio as u64);
    }
    limit
}

/// How far past its limit each level is; 1.0 or more needs compaction.
pub fn scores(version: &Version, options: &Options) -> [f64; LEVELS - 1] {
    let mut scores = [0.0; LEVELS - 1];
    scores[0] = version.levels[0].len() as f64 / options.l0_compaction_trigger as f64;
    for (level, score) in scores.iter_mut().enumerate().skip(1) {
        *score = version.level_bytes(level) as f64 / level_limit(options, level) as f64;
    }
    scores
}

/// The next compaction, if any level needs one. `pointers` holds, per level, the
/// largest key of the last table compacted out of it.
pub fn pick(
    version: &Version,
    options: &Options,
    pointers: &[Vec<u8>; LEVELS],
) -> Option<Compaction> {
    let scores = scores(version, options);
    let (level, &score) = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("levels to score");
    if score < 1.0 {
        return None;
    }
    let inputs: Vec<Arc<TableFile>> = if level == 0 {
        version.levels[0].clone()
    } else {
        let files = &version.levels[level];
        let next = files
            .iter()
            .find(|f| {
                pointers[level].is_empty()
                    || KeyRef::new(&f.meta.smallest) > KeyRef::new(&pointers[level])
            })
            .or_else(|| files.first())?;
        vec![next.clone()]
    };
    Compaction::new(version, level, inputs, level + 1)
}

/// The next step of a whole-store compaction, and whether it is the last: every table
/// of the shallowest level that has any merges into the next level that has any.
/// Once one level holds every table, its tables merge into themselves (level 0's into
/// level 1), which drops the tombstones in it, and that is the last step. None if the
/// store has no tables.
pub fn pick_whole(version: &Version) -> Option<(Compaction, bool)> {
    let mut filled = (0..LEVELS).filter(|&level| !version.levels[level].is_empty());
    let top = filled.next()?;
    let (output_level, last) = match filled.next() {
        Some(next) => (next, false),
        None if top == 0 => (1, true),
        None => (top, true),
    };
    let inputs = version.levels[top].clone();
    Compaction::new(version, top, inputs, output_level).map(|c| (c, last))
}

/// Whether no level below `output_level` can hold `user_key`: a tombstone for it then
/// has nothing left to hide.
fn is_bottom_for(version: &Version, output_level: usize, user_key: &[u8]) -> bool {
    version.levels[output_level + 1..]
        .iter()
        .flatten()
        .all(|f| !(f.smallest().user_key() <= user_key && user_key <= f.largest().user_key()))
}

/// Which entries of a run in internal-key order (user key ascending, newest version
/// first) no reader can see: a version of a key is hidden once a newer version of it
/// is visible to every reader, at or below `oldest_readable`, the smallest sequence
/// number a reader of the current version may read at. (A snapshot reads the tables
/// and memtables of its own moment, which it keeps alive, so it needs nothing a flush
/// or compaction drops.)
pub struct HiddenVersions {
    oldest_readable: u64,
    current_key: Option<Vec<u8>>,
    /// The sequence of the newer entry seen for the current user key.
    newer_sequence: u64,
}

impl HiddenVersions {
    pub fn new(oldest_readable: u64) -> Self {
        HiddenVersions {
            oldest_readable,
            current_key: None,
            newer_sequence: u64::MAX,
        }
    }

    /// Whether the next entry, `key`, is hidden, and whether it starts a new user key.
    pub fn next(&mut self, key: &KeyRef) -> (bool, bool) {
        let new_user_key = self.current_key.as_deref() != Some(key.user_key());
        if new_user_key {
            self.current_key = Some(key.user_key().to_vec());
            self.newer_sequence = u64::MAX;
        }
        let hidden = self.newer_sequence <= self.oldest_readable;
        self.newer_sequence = key.sequence();
        (hidden, new_user_key)
    }
}

/// Merges the compaction's tables into new tables for `output_level`, each cut near
/// `table_file_bytes` at a user-key boundary (so tables of a level never share a user
/// key). Versions of a key hidden by a newer version that every reader sees are
/// dropped, and so are tombstones with nothing below them.
///
/// `oldest_readable` is the smallest sequence number any reader may still read at;
/// `new_table` makes the builder for the next output table.
pub fn run(
    compaction: &Compaction,
    version: &Version,
    options: &Options,
    oldest_readable: u64,
    mut new_table: impl FnMut() -> Result<TableBuilder>,
) -> Result<Vec<TableMeta>> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for file in compaction.inputs.iter().chain(&compaction.overlapping) {
        children.push(Box::new(file.table.iter()));
    }
    let mut merged = MergingIter::new(children);
    merged.seek_to_first()?;
    let output_level = compaction.output_level;
    let mut outputs = Vec::new();
    let mut builder: Option<TableBuilder> = None;
    let mut versions = HiddenVersions::new(oldest_readable);
    while merged.valid() {
        let key = merged.key();
        let (hidden, new_user_key) = versions.next(key);
        if new_user_key {
            if let Some(full) =
                builder.take_if(|b| b.file_size() >= options.table_file_bytes as u64)
            {
                outputs.push(full.finish()?);
            }
        }
        let dead_tombstone = key.kind() == KIND_DELETE
            && key.sequence() <= oldest_readable
            && is_bottom_for(version, output_level, key.user_key());
        if !hidden && !dead_tombstone {
            let out = match &mut builder {
                Some(builder) => builder,
                None => builder.insert(new_table()?),
            };
            out.add(key, merged.value())?;
        }
        merged.next()?;
    }
    if let Some(last) = builder {
        outputs.push(last.finish()?);
    }
    Ok(outputs)
}
