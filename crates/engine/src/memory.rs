//! The in-memory engine: the HotRing index, with the EXEC gate making batches atomic.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use hotring::HotRing;

use crate::gate::Gate;
use crate::{
    check_sizes, BatchOp, Capabilities, Cursor, Engine, Error, KeyRange, Result, Stats, WriteBatch,
};

/// HotRing behind the [`Engine`] interface. Single-key operations stay lock-free (they
/// hold the gate shared, which touches only the calling thread's stripe); a batch holds
/// the gate exclusive, so readers see all of it or none.
///
/// The gate is not re-entrant: a thread must not call `write` from inside something
/// that already holds the same gate shared.
#[derive(Default)]
pub struct MemoryEngine {
    index: HotRing,
    gate: Gate,
    closed: AtomicBool,
}

impl MemoryEngine {
    pub fn new() -> MemoryEngine {
        MemoryEngine::default()
    }

    /// A fresh, empty engine; the directory is not used (the signature matches the
    /// durable engines' so the conformance suite can open any of them).
    pub fn open(_dir: &Path) -> Result<MemoryEngine> {
        Ok(MemoryEngine::new())
    }

    pub fn index(&self) -> &HotRing {
        &self.index
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(Error::Closed);
        }
        Ok(())
    }
}

impl Engine for MemoryEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: false,
            durable: false,
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        let _shared = self.gate.shared();
        Ok(self.index.get(key))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let _shared = self.gate.shared();
        Ok(keys.iter().map(|key| self.index.get(key)).collect())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_open()?;
        check_sizes(key, value)?;
        let _shared = self.gate.shared();
        self.index.upsert(key, value);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.check_open()?;
        let _shared = self.gate.shared();
        self.index.remove(key);
        Ok(())
    }

    fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.check_open()?;
        for op in batch.iter() {
            if let BatchOp::Put(key, value) = op {
                check_sizes(key, value)?;
            }
        }
        let _exclusive = self.gate.exclusive();
        for op in batch.iter() {
            match op {
                BatchOp::Put(key, value) => {
                    self.index.upsert(key, value);
                }
                BatchOp::Delete(key) => {
                    self.index.remove(key);
                }
            }
        }
        Ok(())
    }

    fn range(&self, _range: KeyRange) -> Result<Box<dyn Cursor + '_>> {
        self.check_open()?;
        Err(Error::Unsupported(
            "the memory engine is a hash index and keeps no key order; ordered ranges need the lsm engine",
        ))
    }

    fn flush(&self) -> Result<()> {
        self.check_open()
    }

    fn stats(&self) -> Stats {
        let sampled = self.index.stats_sampled(0, 4096);
        vec![
            ("keys", self.index.len() as u64),
            ("rings", sampled.rings as u64),
            ("head_moves", sampled.head_moves),
            ("ring_splits", sampled.splits),
        ]
    }

    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    crate::conformance_tests!(super::MemoryEngine::open);
}
