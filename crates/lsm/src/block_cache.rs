//! The block cache: data blocks by table and offset, sized in bytes, in shards that
//! each evict by CLOCK (a second chance for every block read since the hand last
//! passed it), which approximates LRU. Every data block read goes through
//! [`BlockCache::get_or_load`]; the adaptive AC-Key caches (seed 003) replace this
//! type, so nothing else knows how caching is done.
//!
//! Why not an exact LRU: a hit then costs a hash lookup and a flag under one shard's
//! lock, where an LRU list (or an ordered map by last use) is rewritten on every hit
//! under a lock that every reader shares; point reads of a table hit the cache for
//! its index's data blocks many times a second.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use engine::Result;

use crate::block::Block;

/// A block is named by its table's number and its offset in the table.
pub type BlockKey = (u64, u64);

/// Shards at most; a small cache has fewer, so each can hold many blocks.
const MAX_SHARDS: usize = 16;

/// A shard is given at least this many bytes.
const MIN_SHARD_BYTES: usize = 4 << 20;

pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

struct Shard {
    capacity: usize,
    bytes: usize,
    /// Where each cached block sits in `slots`.
    index: HashMap<BlockKey, usize, BuildHasherDefault<BlockKeyHasher>>,
    slots: Vec<Option<Slot>>,
    /// Empty places in `slots`.
    free: Vec<usize>,
    /// The next slot the eviction sweep looks at.
    hand: usize,
}

struct Slot {
    key: BlockKey,
    block: Arc<Block>,
    /// Read since the hand last passed: spared once.
    referenced: bool,
}

impl BlockCache {
    pub fn new(capacity: usize) -> BlockCache {
        let shards = (capacity / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        BlockCache {
            shards: (0..shards)
                .map(|_| Mutex::new(Shard::new(capacity / shards)))
                .collect(),
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
        if let Some(block) = self.shard(key).lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(block);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        // Loaded without the lock: two readers may load the same block at once, and
        // the second insert just replaces the first.
        let block = Arc::new(load()?);
        self.shard(key).insert(key, block.clone());
        Ok(block)
    }

    /// Drops a deleted table's blocks.
    pub fn forget_table(&self, table: u64) {
        for shard in self.shards.iter() {
            lock(shard).forget_table(table);
        }
    }

    pub fn bytes(&self) -> usize {
        self.shards.iter().map(|s| lock(s).bytes).sum()
    }

    fn shard(&self, key: BlockKey) -> MutexGuard<'_, Shard> {
        let mut hasher = BlockKeyHasher::default();
        hasher.write_u64(key.0);
        hasher.write_u64(key.1);
        // The high bits: the index's hash table uses the low ones.
        let at = (hasher.finish() >> 32) as usize % self.shards.len();
        lock(&self.shards[at])
    }
}

fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shard {
    fn new(capacity: usize) -> Shard {
        Shard {
            capacity,
            bytes: 0,
            index: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            hand: 0,
        }
    }

    fn lookup(&mut self, key: BlockKey) -> Option<Arc<Block>> {
        let at = *self.index.get(&key)?;
        let slot = self.slots[at].as_mut().expect("the index names full slots");
        slot.referenced = true;
        Some(slot.block.clone())
    }

    /// A block larger than the shard (a table block of one huge value) is not
    /// cached: it would evict everything else for one value.
    fn insert(&mut self, key: BlockKey, block: Arc<Block>) {
        if block.size() > self.capacity {
            return;
        }
        if let Some(&at) = self.index.get(&key) {
            self.remove(at);
        }
        self.bytes += block.size();
        let slot = Some(Slot {
            key,
            block,
            referenced: false,
        });
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at] = slot;
                at
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.index.insert(key, at);
        while self.bytes > self.capacity {
            self.evict_one();
        }
    }

    /// Sweeps the hand to the first block not read since it last passed, and drops it.
    fn evict_one(&mut self) {
        loop {
            self.hand = (self.hand + 1) % self.slots.len();
            match &mut self.slots[self.hand] {
                Some(slot) if slot.referenced => slot.referenced = false,
                Some(_) => return self.remove(self.hand),
                None => {}
            }
        }
    }

    fn remove(&mut self, at: usize) {
        let slot = self.slots[at].take().expect("removing a full slot");
        self.index.remove(&slot.key);
        self.bytes -= slot.block.size();
        self.free.push(at);
    }

    fn forget_table(&mut self, table: u64) {
        let doomed: Vec<usize> = self
            .index
            .iter()
            .filter(|((t, _), _)| *t == table)
            .map(|(_, &at)| at)
            .collect();
        for at in doomed {
            self.remove(at);
        }
    }
}

/// A multiply-and-rotate hash for block keys: two integers need no DoS-resistant
/// hash (they come from the store's own files), and SipHash was a visible part of a
/// point read.
#[derive(Default)]
struct BlockKeyHasher(u64);

impl Hasher for BlockKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
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
    fn spares_a_block_read_since_the_hand_passed() {
        let size = block(100).size();
        let cache = BlockCache::new(3 * size);
        for offset in 0..3 {
            cache.get_or_load((1, offset), || Ok(block(100))).unwrap();
        }
        // Read block 0 again, so the sweep spares it and drops block 1.
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
        assert!(reloaded, "block 1 was not read since it was cached");
        assert_eq!(cache.hits.load(Ordering::Relaxed), 2);
        cache.forget_table(1);
        assert_eq!(cache.bytes(), 0);
    }

    proptest::proptest! {
        /// Whatever the reads, loads and forgotten tables: bytes held stay within the
        /// capacity and equal the sizes of the blocks held; a block is served only as
        /// it was last loaded, and never after its table is forgotten.
        #[test]
        fn holds_within_capacity_and_serves_what_was_loaded(
            shards in 1usize..4,
            ops in proptest::collection::vec((0u64..3, 0u64..40, 0usize..300, proptest::bool::ANY), 1..400),
        ) {
            let cache = BlockCache::new(shards * MIN_SHARD_BYTES);
            // Shrink each shard so that a few blocks fill it.
            for shard in cache.shards.iter() {
                lock(shard).capacity = 2_000;
            }
            // The value length each cached key was last loaded with.
            let mut model = std::collections::HashMap::new();
            for (table, offset, len, forget) in ops {
                if forget && offset == 0 {
                    cache.forget_table(table);
                    model.retain(|&(t, _), _| t != table);
                    continue;
                }
                let mut loaded = false;
                let got = cache
                    .get_or_load((table, offset), || {
                        loaded = true;
                        Ok(block(len))
                    })
                    .unwrap();
                if loaded {
                    model.insert((table, offset), len);
                } else {
                    proptest::prop_assert!(model.contains_key(&(table, offset)), "a forgotten or never loaded block served");
                }
                let mut it = crate::block::BlockIter::new(&*got);
                it.seek_to_first().unwrap();
                proptest::prop_assert_eq!(it.value().len(), model[&(table, offset)]);
                for shard in cache.shards.iter() {
                    let shard = lock(shard);
                    let held: usize = shard.slots.iter().flatten().map(|s| s.block.size()).sum();
                    proptest::prop_assert_eq!(held, shard.bytes);
                    proptest::prop_assert!(shard.bytes <= shard.capacity);
                    proptest::prop_assert_eq!(shard.index.len(), shard.slots.iter().flatten().count());
                    for (key, &at) in &shard.index {
                        proptest::prop_assert_eq!(shard.slots[at].as_ref().map(|s| s.key), Some(*key));
                    }
                }
            }
        }
    }
}
