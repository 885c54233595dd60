//! RocksDB behind the [`Engine`] interface, for side-by-side comparison with the LSM
//! engine. Built with the `rocksdb` feature against the system's librocksdb (Debian's
//! 7.8; see DEVELOPERS.md).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DBRawIterator, ReadOptions, WriteOptions, DB,
};

use crate::{
    check_sizes, BatchOp, Capabilities, Cursor, Engine, Error, KeyRange, Result, Stats, WriteBatch,
};

/// The settings the comparison holds equal between engines.
#[derive(Clone, Debug)]
pub struct RocksDbOptions {
    /// Sync the write-ahead log before acknowledging each write.
    pub sync: bool,
    pub memtable_bytes: usize,
    pub max_immutable_memtables: usize,
    pub block_cache_bytes: usize,
    pub block_size: usize,
    pub bloom_bits_per_key: f64,
}

impl Default for RocksDbOptions {
    fn default() -> RocksDbOptions {
        RocksDbOptions {
            sync: false,
            memtable_bytes: 64 << 20,
            max_immutable_memtables: 2,
            block_cache_bytes: 64 << 20,
            block_size: 4096,
            bloom_bits_per_key: 10.0,
        }
    }
}

pub struct RocksDbEngine {
    db: DB,
    /// Kept for its statistics, which RocksDB collects through the options.
    opts: rocksdb::Options,
    sync: bool,
    closed: AtomicBool,
}

fn rocks_error(context: &str, e: rocksdb::Error) -> Error {
    Error::io(context, std::io::Error::other(e.into_string()))
}

impl RocksDbEngine {
    pub fn open(dir: &Path, options: &RocksDbOptions) -> Result<RocksDbEngine> {
        let mut table = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(options.block_cache_bytes)
            .map_err(|e| rocks_error("making RocksDB's block cache", e))?;
        table.set_block_cache(&cache);
        table.set_block_size(options.block_size);
        table.set_bloom_filter(options.bloom_bits_per_key, false);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts.set_compression_type(DBCompressionType::None);
        opts.set_write_buffer_size(options.memtable_bytes);
        // The active memtable plus the frozen ones.
        opts.set_max_write_buffer_number(options.max_immutable_memtables as i32 + 1);
        opts.enable_statistics();
        let db = DB::open(&opts, dir)
            .map_err(|e| rocks_error(&format!("opening RocksDB in {}", dir.display()), e))?;
        Ok(RocksDbEngine {
            db,
            opts,
            sync: options.sync,
            closed: AtomicBool::new(false),
        })
    }

    /// Opens with the default options (for the conformance suite).
    pub fn open_default(dir: &Path) -> Result<RocksDbEngine> {
        RocksDbEngine::open(dir, &RocksDbOptions::default())
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn write_options(&self) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync);
        wo
    }

    fn property(&self, name: &str) -> u64 {
        self.db.property_int_value(name).ok().flatten().unwrap_or(0)
    }

    /// A ticker from RocksDB's statistics dump ("rocksdb.flush.write.bytes COUNT : n").
    fn ticker(dump: &str, name: &str) -> u64 {
        dump.lines()
            .find_map(|line| {
                line.strip_prefix(name)?
                    .trim()
                    .strip_prefix("COUNT : ")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    }
}

impl Engine for RocksDbEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: true,
            durable: true,
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        self.db.get(key).map_err(|e| rocks_error("RocksDB get", e))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let snapshot = self.db.snapshot();
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snapshot);
        keys.iter()
            .map(|key| {
                self.db
                    .get_opt(key, &ro)
                    .map_err(|e| rocks_error("RocksDB get", e))
            })
            .collect()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_open()?;
        check_sizes(key, value)?;
        self.db
            .put_opt(key, value, &self.write_options())
            .map_err(|e| rocks_error("RocksDB put", e))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.check_open()?;
        self.db
            .delete_opt(key, &self.write_options())
            .map_err(|e| rocks_error("RocksDB delete", e))
    }

    fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.check_open()?;
        let mut rocks = rocksdb::WriteBatch::default();
        for op in batch.iter() {
            match op {
                BatchOp::Put(key, value) => {
                    check_sizes(key, value)?;
                    rocks.put(key, value);
                }
                BatchOp::Delete(key) => rocks.delete(key),
            }
        }
        self.db
            .write_opt(rocks, &self.write_options())
            .map_err(|e| rocks_error("RocksDB write", e))
    }

    fn range(&self, range: KeyRange) -> Result<Box<dyn Cursor + '_>> {
        self.check_open()?;
        let mut ro = ReadOptions::default();
        if let Some(end) = &range.end {
            ro.set_iterate_upper_bound(end.clone());
        }
        let mut cursor = RocksCursor {
            iter: self.db.raw_iterator_opt(ro),
            range,
            returned_current: false,
            returned: 0,
        };
        cursor.seek(&[])?;
        Ok(Box::new(cursor))
    }

    fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.db
            .flush_wal(true)
            .map_err(|e| rocks_error("RocksDB WAL sync", e))
    }

    fn stats(&self) -> Stats {
        let dump = self.opts.get_statistics().unwrap_or_default();
        let ticker = |name| Self::ticker(&dump, name);
        // Named as the LSM engine names them, so the benchmark compares like with like.
        vec![
            ("keys_estimate", self.property("rocksdb.estimate-num-keys")),
            ("table_bytes", self.property("rocksdb.total-sst-files-size")),
            (
                "memtable_bytes",
                self.property("rocksdb.cur-size-all-mem-tables"),
            ),
            ("l0_tables", self.property("rocksdb.num-files-at-level0")),
            ("wal_bytes", ticker("rocksdb.wal.bytes")),
            (
                "table_bytes_written",
                ticker("rocksdb.flush.write.bytes") + ticker("rocksdb.compact.write.bytes"),
            ),
            (
                "compaction_bytes_read",
                ticker("rocksdb.compact.read.bytes"),
            ),
            ("block_cache_hits", ticker("rocksdb.block.cache.hit")),
            ("block_cache_misses", ticker("rocksdb.block.cache.miss")),
            ("stall_micros", ticker("rocksdb.stall.micros")),
        ]
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.db
            .flush_wal(true)
            .map_err(|e| rocks_error("RocksDB WAL sync on close", e))
    }
}

struct RocksCursor<'a> {
    iter: DBRawIterator<'a>,
    range: KeyRange,
    returned_current: bool,
    returned: usize,
}

impl RocksCursor<'_> {
    fn status(&self) -> Result<()> {
        self.iter
            .status()
            .map_err(|e| rocks_error("RocksDB iterator", e))
    }
}

impl Cursor for RocksCursor<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let target = self.range.clamp(key).to_vec();
        self.iter.seek(&target);
        self.returned_current = false;
        self.returned = 0;
        self.status()
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.range.limit.is_some_and(|limit| self.returned >= limit) {
            return Ok(None);
        }
        if self.returned_current {
            self.iter.next();
            self.returned_current = false;
        }
        self.status()?;
        let Some(key) = self.iter.key() else {
            return Ok(None);
        };
        if !self.range.before_end(key) {
            return Ok(None);
        }
        self.returned_current = true;
        self.returned += 1;
        Ok(Some((
            self.iter.key().unwrap_or_default(),
            self.iter.value().unwrap_or_default(),
        )))
    }
}

#[cfg(test)]
mod tests {
    crate::conformance_tests!(super::RocksDbEngine::open_default);
}
