//! Reads a sorted table (`table_format.md`): point lookups through the bloom filter
//! and the index, and iteration. Data blocks come through the block cache; the index
//! and filter stay in memory while the table is open.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use engine::{varint, Error, Result};

use crate::block::{Block, BlockIter};
use crate::block_cache::BlockCache;
use crate::bloom;
use crate::internal_key::{internal_order, KeyRef};
use crate::iterator::InternalIterator;
use crate::table_builder::{BLOCK_TRAILER, FOOTER_SIZE, FORMAT_VERSION, MAGIC};
use crate::wal::mask;

/// Reads from table files, for read amplification.
#[derive(Default)]
pub struct ReadCounters {
    pub block_reads: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bloom_negatives: AtomicU64,
}

pub struct Table {
    number: u64,
    path: PathBuf,
    file: File,
    /// Where the blocks end and the footer begins.
    blocks_end: u64,
    index: Arc<Block>,
    filter: Vec<u8>,
    cache: Arc<BlockCache>,
    counters: Arc<ReadCounters>,
}

impl Table {
    pub fn open(
        path: &Path,
        number: u64,
        cache: Arc<BlockCache>,
        counters: Arc<ReadCounters>,
    ) -> Result<Table> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io(format!("reading the size of {}", path.display()), e))?
            .len();
        if size < FOOTER_SIZE as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("a {size}-byte file is too short for a table"),
            ));
        }
        let blocks_end = size - FOOTER_SIZE as u64;
        let mut footer = [0u8; FOOTER_SIZE];
        file.read_exact_at(&mut footer, blocks_end)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let word = |i: usize| u64::from_le_bytes(footer[8 * i..8 * i + 8].try_into().unwrap());
        let stored_crc = u32::from_le_bytes(footer[40..44].try_into().unwrap());
        let version = u32::from_le_bytes(footer[44..48].try_into().unwrap());
        if u64::from_le_bytes(footer[48..56].try_into().unwrap()) != MAGIC {
            return Err(Error::corruption(
                path,
                blocks_end,
                "not a table (bad magic number)",
            ));
        }
        if mask(crc32c::crc32c(&footer[..40])) != stored_crc {
            return Err(Error::corruption(
                path,
                blocks_end,
                "footer checksum mismatch",
            ));
        }
        if version != FORMAT_VERSION {
            return Err(Error::corruption(
                path,
                blocks_end,
                format!("unknown table format version {version}"),
            ));
        }
        let filter = read_block(&file, path, blocks_end, &counters, word(0), word(1))?;
        let index = read_block(&file, path, blocks_end, &counters, word(2), word(3))?;
        let index = Block::new(index).map_err(|e| Error::corruption(path, word(2), e))?;
        Ok(Table {
            number,
            path: path.to_path_buf(),
            file,
            blocks_end,
            index: Arc::new(index),
            filter,
            cache,
            counters,
        })
    }

    /// The data block a handle (an index entry's value) names, through the cache.
    fn data_block(&self, handle: &[u8]) -> Result<Arc<Block>> {
        let bad = || Error::corruption(&self.path, 0, "bad block handle in the index");
        let (offset, used) = varint::get(handle).ok_or_else(bad)?;
        let (size, _) = varint::get(&handle[used..]).ok_or_else(bad)?;
        self.cache.get_or_load((self.number, offset), || {
            let contents = read_block(
                &self.file,
                &self.path,
                self.blocks_end,
                &self.counters,
                offset,
                size,
            )?;
            Block::new(contents).map_err(|e| Error::corruption(&self.path, offset, e))
        })
    }

    /// The first entry at or after `lookup` if it has the same user key: the newest
    /// version at or below the lookup's sequence. Returns its kind and value.
    pub fn get(&self, lookup: &KeyRef, user_key_hash: u64) -> Result<Option<(u8, Vec<u8>)>> {
        if !bloom::may_contain(&self.filter, user_key_hash) {
            self.counters
                .bloom_negatives
                .fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        // Not through a `TableIter`: the index is borrowed rather than its `Arc`
        // cloned (the count's cache line moves between the threads reading a table).
        // The index names each data block by its last key, so the first block whose
        // last key is at or after the lookup holds the first entry at or after it.
        let mut index = BlockIter::new(&*self.index);
        let found = index.seek(lookup.as_bytes(), internal_order);
        found.map_err(|e| self.corruption(e))?;
        if !index.valid() {
            return Ok(None);
        }
        let mut data = BlockIter::new(self.data_block(index.value())?);
        let found = data.seek(lookup.as_bytes(), internal_order);
        found.map_err(|e| self.corruption(e))?;
        if !data.valid() {
            return Err(
                self.corruption("a data block ends before the key the index names it by".into())
            );
        }
        let key = KeyRef::new(data.key());
        if key.user_key() != lookup.user_key() {
            return Ok(None);
        }
        Ok(Some((key.kind(), data.value().to_vec())))
    }

    fn corruption(&self, detail: String) -> Error {
        Error::corruption(&self.path, 0, detail)
    }
}

/// A block's contents, read from the file and checked against its checksum.
fn read_block(
    file: &File,
    path: &Path,
    blocks_end: u64,
    counters: &ReadCounters,
    offset: u64,
    size: u64,
) -> Result<Vec<u8>> {
    let end = offset
        .checked_add(size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER as u64))
        .filter(|&e| e <= blocks_end)
        .ok_or_else(|| {
            Error::corruption(
                path,
                offset,
                format!("a {size}-byte block here runs past the table's blocks"),
            )
        })?;
    let mut buf = vec![0u8; (end - offset) as usize];
    file.read_exact_at(&mut buf, offset)
        .map_err(|e| Error::io(format!("reading {} at {offset}", path.display()), e))?;
    counters.block_reads.fetch_add(1, Ordering::Relaxed);
    counters
        .bytes_read
        .fetch_add(buf.len() as u64, Ordering::Relaxed);
    let body = size as usize;
    let stored = u32::from_le_bytes(buf[body + 1..].try_into().unwrap());
    if mask(crc32c::crc32c(&buf[..body + 1])) != stored {
        return Err(Error::corruption(path, offset, "block checksum mismatch"));
    }
    if buf[body] != 0 {
        return Err(Error::corruption(
            path,
            offset,
            format!("unknown block type {}", buf[body]),
        ));
    }
    buf.truncate(body);
    Ok(buf)
}

/// Walks a table's entries in order: the index picks the data block, the block
/// iterator the entry.
pub struct TableIter<T> {
    table: T,
    index: BlockIter<Arc<Block>>,
    data: Option<BlockIter<Arc<Block>>>,
}

impl<T: AsRef<Table>> TableIter<T> {
    fn new(index: Arc<Block>, table: T) -> TableIter<T> {
        TableIter {
            table,
            index: BlockIter::new(index),
            data: None,
        }
    }

    /// Opens the data block the index points at, or clears `data` past the last.
    fn load_data(&mut self) -> Result<()> {
        self.data = None;
        if self.index.valid() {
            let block = self.table.as_ref().data_block(self.index.value())?;
            self.data = Some(BlockIter::new(block));
        }
        Ok(())
    }

    /// Opens the data block the index points at, at its first entry.
    fn load_data_at_first(&mut self) -> Result<()> {
        self.load_data()?;
        if let Some(data) = &mut self.data {
            let first = data.seek_to_first();
            self.check(first)?;
        }
        Ok(())
    }

    /// Steps over data blocks until one has an entry under the cursor.
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            let stepped = self.index.next();
            self.check(stepped)?;
            self.load_data_at_first()?;
        }
        Ok(())
    }

    /// A block's structural error as corruption of this table.
    fn check(&self, result: std::result::Result<(), String>) -> Result<()> {
        result.map_err(|e| self.table.as_ref().corruption(e))
    }
}

impl AsRef<Table> for Table {
    fn as_ref(&self) -> &Table {
        self
    }
}

impl<T: AsRef<Table>> InternalIterator for TableIter<T> {
    fn seek(&mut self, target: &KeyRef) -> Result<()> {
        let found = self.index.seek(target.as_bytes(), internal_order);
        self.check(found)?;
        self.load_data()?;
        if let Some(data) = &mut self.data {
            let found = data.seek(target.as_bytes(), internal_order);
            self.check(found)?;
        }
        self.skip_exhausted_blocks()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let first = self.index.seek_to_first();
        self.check(first)?;
        self.load_data_at_first()?;
        self.skip_exhausted_blocks()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(data) = &mut self.data {
            let stepped = data.next();
            self.check(stepped)?;
        }
        self.skip_exhausted_blocks()
    }

    fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn key(&self) -> &KeyRef {
        KeyRef::new(self.data.as_ref().expect("a valid iterator").key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().expect("a valid iterator").value()
    }
}

impl Table {
    /// An iterator that keeps the table open for as long as it lives.
    pub fn iter(self: &Arc<Table>) -> TableIter<Arc<Table>> {
        TableIter::new(Arc::clone(&self.index), Arc::clone(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_key::{encode, internal_order, with_lookup_key};
    use crate::table_builder::{TableBuilder, TableOptions};
    use engine::{KIND_DELETE, KIND_PUT};
    use proptest::prelude::*;

    /// Internal keys and their values.
    type Model = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(dir: &Path, entries: &Model) -> PathBuf {
        let path = dir.join("000001.sst");
        let mut builder = TableBuilder::create(
            &path,
            1,
            TableOptions {
                block_size: 256,
                bloom_bits_per_key: 10,
            },
        )
        .unwrap();
        for (key, value) in entries {
            builder.add(KeyRef::new(key), value).unwrap();
        }
        let meta = builder.finish().unwrap();
        assert_eq!(meta.entries, entries.len() as u64);
        assert_eq!(meta.size, std::fs::metadata(&path).unwrap().len());
        path
    }

    fn open(path: &Path) -> Result<Arc<Table>> {
        let cache = Arc::new(BlockCache::new(1 << 20));
        Table::open(path, 1, cache, Arc::default()).map(Arc::new)
    }

    /// What a lookup of `user` at `sequence` must find, by brute force.
    fn expected(entries: &Model, user: &[u8], sequence: u64) -> Option<(u8, Vec<u8>)> {
        entries.iter().find_map(|(k, v)| {
            let k = KeyRef::new(k);
            (k.user_key() == user && k.sequence() <= sequence).then(|| (k.kind(), v.clone()))
        })
    }

    fn model() -> impl Strategy<Value = Model> {
        proptest::collection::vec(
            (
                proptest::collection::vec(0u8..6, 0..6),
                1u64..50,
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..40),
            ),
            1..300,
        )
        .prop_map(|raw| {
            let mut entries: Model = raw
                .into_iter()
                .map(|(user, seq, put, value)| {
                    let kind = if put { KIND_PUT } else { KIND_DELETE };
                    (encode(&user, seq, kind), if put { value } else { vec![] })
                })
                .collect();
            entries.sort_by(|a, b| internal_order(&a.0, &b.0));
            entries.dedup_by(|a, b| {
                let (a, b) = (KeyRef::new(&a.0), KeyRef::new(&b.0));
                a.user_key() == b.user_key() && a.sequence() == b.sequence()
            });
            entries
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn reads_back_what_was_written(entries in model(), probes in proptest::collection::vec((proptest::collection::vec(0u8..6, 0..6), 0u64..60), 0..40)) {
            let dir = tempfile::tempdir().unwrap();
            let table = open(&build(dir.path(), &entries)).unwrap();
            let mut it = table.iter();
            it.seek_to_first().unwrap();
            for (key, value) in &entries {
                prop_assert!(it.valid());
                prop_assert_eq!(it.key().as_bytes(), &key[..]);
                prop_assert_eq!(it.value(), &value[..]);
                it.next().unwrap();
            }
            prop_assert!(!it.valid());
            for (user, sequence) in probes {
                let got = with_lookup_key(&user, sequence, |lookup| table.get(lookup, bloom::hash(&user))).unwrap();
                prop_assert_eq!(got, expected(&entries, &user, sequence));
            }
        }

        /// A flipped byte anywhere makes open or a read fail with corruption naming the
        /// table; no read ever returns a wrong answer.
        #[test]
        fn damage_is_detected_never_returned(entries in model(), at in any::<prop::sample::Index>(), mask in 1u8..) {
            let dir = tempfile::tempdir().unwrap();
            let path = build(dir.path(), &entries);
            let mut bytes = std::fs::read(&path).unwrap();
            let at = at.index(bytes.len());
            bytes[at] ^= mask;
            std::fs::write(&path, &bytes).unwrap();
            let table = match open(&path) {
                Err(Error::Corruption { file, .. }) => { prop_assert_eq!(file, path); return Ok(()); }
                Err(other) => { prop_assert!(false, "{}", other); unreachable!() }
                Ok(table) => table,
            };
            for (key, _) in &entries {
                let key = KeyRef::new(key);
                let user = key.user_key();
                match with_lookup_key(user, key.sequence(), |lookup| table.get(lookup, bloom::hash(user))) {
                    Ok(got) => prop_assert_eq!(got, expected(&entries, user, key.sequence())),
                    Err(Error::Corruption { file, .. }) => prop_assert_eq!(&file, &path),
                    Err(other) => prop_assert!(false, "{}", other),
                }
            }
        }
    }
}
