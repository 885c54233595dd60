//! The keyspace the commands operate on. In memory mode it is the HotRing index
//! itself, called directly from the connection tasks (no lock, no queue); the shard
//! layer will implement the same calls by queueing to per-core workers.

use hotring::HotRing;

pub struct Db {
    index: HotRing,
}

impl Db {
    pub fn new() -> Db {
        Db {
            index: HotRing::new(),
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.index.get(key)
    }

    pub fn set(&self, key: &[u8], value: &[u8]) {
        self.index.upsert(key, value);
    }

    /// Sets only if absent; returns whether it did.
    pub fn set_new(&self, key: &[u8], value: &[u8]) -> bool {
        self.index.insert(key, value)
    }

    /// Sets only if present; returns whether it did.
    pub fn set_existing(&self, key: &[u8], value: &[u8]) -> bool {
        self.index.update(key, value)
    }

    pub fn replace(&self, key: &[u8], old: &[u8], new: &[u8]) -> bool {
        self.index.compare_and_set(key, old, new)
    }

    pub fn remove(&self, key: &[u8]) -> bool {
        self.index.remove(key)
    }

    /// Removes `key` only if it still holds `value`; returns whether it did.
    pub fn remove_if_value(&self, key: &[u8], value: &[u8]) -> bool {
        self.index.remove_if(key, |v| v == value)
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.index.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }
}
