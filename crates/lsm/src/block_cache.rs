//! The block cache: a plain LRU over decoded data blocks, sized in bytes. Every data
//! block read goes through [`BlockCache::get_or_load`]; the adaptive AC-Key caches
//! (seed 003) replace this type, so nothing else knows how caching is done.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use engine::Result;

use crate::block::Block;

/// A block is named by its table's number and its offset in the table.
pub type BlockKey = (u64, u64);

pub struct BlockCache {
    capacity: usize,
    state: Mutex<Lru>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

#[derive(Default)]
struct Lru {
    blocks: HashMap<BlockKey, (Arc<Block>, u64)>,
    /// Last use (a tick) to block, oldest first.
    by_use: BTreeMap<u64, BlockKey>,
    tick: u64,
    bytes: usize,
}

impl BlockCache {
    pub fn new(capacity: usize) -> BlockCache {
        BlockCache {
            capacity,
            state: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The block, from the cache or from `load` (whose result is then cached).
    pub fn get_or_load(
        &self,
        key: BlockKey,
        load: impl FnOnce() -> Result<Block>,
    ) -> Result<Arc<Block>> {
        if let Some(block) = self.lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(block);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        // Loaded without the lock: two readers may load the same block at once, and
        // the second insert just replaces the first.
        let block = Arc::new(load()?);
        self.insert(key, block.clone());
        Ok(block)
    }

    fn lookup(&self, key: BlockKey) -> Option<Arc<Block>> {
        let mut lru = self.lock();
        let tick = lru.next_tick();
        let (block, used) = lru.blocks.get_mut(&key)?;
        let (block, old) = (block.clone(), std::mem::replace(used, tick));
        lru.by_use.remove(&old);
        lru.by_use.insert(tick, key);
        Some(block)
    }

    fn insert(&self, key: BlockKey, block: Arc<Block>) {
        if block.size() > self.capacity {
            return;
        }
        let mut lru = self.lock();
        let tick = lru.next_tick();
        lru.bytes += block.size();
        if let Some((old, used)) = lru.blocks.insert(key, (block, tick)) {
            lru.bytes -= old.size();
            lru.by_use.remove(&used);
        }
        lru.by_use.insert(tick, key);
        while lru.bytes > self.capacity {
            let (_, oldest) = lru
                .by_use
                .pop_first()
                .expect("bytes are held by some block");
            let (evicted, _) = lru
                .blocks
                .remove(&oldest)
                .expect("by_use names cached blocks");
            lru.bytes -= evicted.size();
        }
    }

    /// Drops a deleted table's blocks.
    pub fn forget_table(&self, table: u64) {
        let mut lru = self.lock();
        let keys: Vec<BlockKey> = lru
            .blocks
            .keys()
            .filter(|(t, _)| *t == table)
            .copied()
            .collect();
        for key in keys {
            if let Some((block, used)) = lru.blocks.remove(&key) {
                lru.bytes -= block.size();
                lru.by_use.remove(&used);
            }
        }
    }

    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lru {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockBuilder;

    fn block(value_len: usize) -> Block {
        let mut b = BlockBuilder::new(16);
        b.add(b"k", &vec![0u8; value_len]);
        Block::new(b.finish()).unwrap()
    }

    #[test]
    fn evicts_least_recently_used_within_capacity() {
        let size = block(100).size();
        let cache = BlockCache::new(3 * size);
        for offset in 0..3 {
            cache.get_or_load((1, offset), || Ok(block(100))).unwrap();
        }
        // Touch block 0 so block 1 is the oldest.
        cache
            .get_or_load((1, 0), || panic!("block 0 is cached"))
            .unwrap();
        cache.get_or_load((1, 3), || Ok(block(100))).unwrap();
        assert!(cache.bytes() <= 3 * size);
        cache
            .get_or_load((1, 0), || panic!("block 0 was used recently"))
            .unwrap();
        let mut reloaded = false;
        cache
            .get_or_load((1, 1), || {
                reloaded = true;
                Ok(block(100))
            })
            .unwrap();
        assert!(reloaded, "block 1 was the least recently used");
        assert_eq!(cache.hits.load(Ordering::Relaxed), 2);
        cache.forget_table(1);
        assert_eq!(cache.bytes(), 0);
    }
}
