//! Sorted blocks of key-value entries with prefix-compressed keys and restart points;
//! the unit a table is read, checksummed and cached in. Layout in `table_format.md`.

use std::cmp::Ordering;

use engine::varint;

pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    since_restart: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize) -> BlockBuilder {
        assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval,
            since_restart: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Adds an entry; keys must come in increasing order (by the caller's order).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.since_restart == self.restart_interval {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            key.iter()
                .zip(&self.last_key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        varint::put(&mut self.buf, shared as u64);
        varint::put(&mut self.buf, (key.len() - shared) as u64);
        varint::put(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// The block's size if it were finished now.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// The finished block contents; the builder is reset for the next block.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for &restart in &self.restarts {
            out.extend_from_slice(&restart.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts = vec![0];
        self.since_restart = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}

/// A block's contents, checked for structure when made, so iteration cannot run off
/// the end whatever the bytes (checksums catch damage; this catches the rest).
pub struct Block {
    data: Box<[u8]>,
    /// Where the restart array starts (the end of the entries).
    restarts_at: usize,
    restarts: usize,
}

impl Block {
    pub fn new(data: Vec<u8>) -> Result<Block, String> {
        if data.len() < 4 {
            return Err(format!("a {}-byte block is too short", data.len()));
        }
        let restarts = u32::from_le_bytes(data[data.len() - 4..].try_into().unwrap()) as usize;
        let array = restarts
            .checked_mul(4)
            .and_then(|n| n.checked_add(4))
            .filter(|&n| n <= data.len() && restarts > 0)
            .ok_or_else(|| {
                format!(
                    "restart count {restarts} does not fit a {}-byte block",
                    data.len()
                )
            })?;
        let restarts_at = data.len() - array;
        let block = Block {
            data: data.into_boxed_slice(),
            restarts_at,
            restarts,
        };
        for i in 0..restarts {
            let at = block.restart(i);
            if at > restarts_at || (i > 0 && at <= block.restart(i - 1)) {
                return Err(format!("restart point {i} at {at} is out of place"));
            }
        }
        if block.restart(0) != 0 {
            return Err("the first restart point is not at 0".into());
        }
        Ok(block)
    }

    pub fn size(&self) -> usize {
        self.data.len()
    }

    fn restart(&self, i: usize) -> usize {
        let at = self.restarts_at + 4 * i;
        u32::from_le_bytes(self.data[at..at + 4].try_into().unwrap()) as usize
    }

    /// The entry at `offset`: (shared, unshared key bytes, value range, next offset).
    fn entry(
        &self,
        offset: usize,
    ) -> Result<(usize, std::ops::Range<usize>, std::ops::Range<usize>), String> {
        let bad = || format!("bad entry at block offset {offset}");
        let mut at = offset;
        let mut field = || -> Result<usize, String> {
            let (v, used) = varint::get(&self.data[at..self.restarts_at]).ok_or_else(bad)?;
            at += used;
            usize::try_from(v).map_err(|_| bad())
        };
        let shared = field()?;
        let unshared = field()?;
        let value_len = field()?;
        let key_end = at
            .checked_add(unshared)
            .filter(|&e| e <= self.restarts_at)
            .ok_or_else(bad)?;
        let value_end = key_end
            .checked_add(value_len)
            .filter(|&e| e <= self.restarts_at)
            .ok_or_else(bad)?;
        Ok((shared, at..key_end, key_end..value_end))
    }
}

/// A position in a block. Keys are rebuilt into `key` as the iterator moves.
pub struct BlockIter<B> {
    block: B,
    /// Offset of the current entry; `restarts_at` when past the end.
    at: usize,
    next_at: usize,
    key: Vec<u8>,
    value: std::ops::Range<usize>,
}

impl<B: AsRef<Block>> BlockIter<B> {
    pub fn new(block: B) -> BlockIter<B> {
        let end = block.as_ref().restarts_at;
        BlockIter {
            block,
            at: end,
            next_at: end,
            key: Vec::new(),
            value: 0..0,
        }
    }

    pub fn valid(&self) -> bool {
        self.at < self.block.as_ref().restarts_at
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn value(&self) -> &[u8] {
        &self.block.as_ref().data[self.value.clone()]
    }

    pub fn seek_to_first(&mut self) -> Result<(), String> {
        self.key.clear();
        self.load(0)
    }

    pub fn next(&mut self) -> Result<(), String> {
        debug_assert!(self.valid());
        self.load(self.next_at)
    }

    /// Moves to the first entry whose key is at or after `target` in `order`.
    pub fn seek(
        &mut self,
        target: &[u8],
        order: impl Fn(&[u8], &[u8]) -> Ordering,
    ) -> Result<(), String> {
        let block = self.block.as_ref();
        // The last restart point whose key is before the target; restart keys are
        // stored whole.
        let (mut low, mut high) = (0, block.restarts - 1);
        while low < high {
            let mid = (low + high).div_ceil(2);
            let (shared, key, _) = block.entry(block.restart(mid))?;
            if shared != 0 {
                return Err(format!("restart point {mid} has a shared key prefix"));
            }
            if order(&block.data[key], target) == Ordering::Less {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        self.key.clear();
        self.load(block.restart(low))?;
        while self.valid() && order(&self.key, target) == Ordering::Less {
            self.next()?;
        }
        Ok(())
    }

    fn load(&mut self, offset: usize) -> Result<(), String> {
        let block = self.block.as_ref();
        self.at = offset;
        if offset >= block.restarts_at {
            self.at = block.restarts_at;
            return Ok(());
        }
        let (shared, unshared, value) = block.entry(offset)?;
        if shared > self.key.len() {
            return Err(format!(
                "entry at {offset} shares {shared} bytes of a {}-byte key",
                self.key.len()
            ));
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(&block.data[unshared]);
        self.next_at = value.end;
        self.value = value;
        Ok(())
    }
}

impl AsRef<Block> for Block {
    fn as_ref(&self) -> &Block {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn build(entries: &BTreeMap<Vec<u8>, Vec<u8>>, interval: usize) -> Block {
        let mut builder = BlockBuilder::new(interval);
        for (k, v) in entries {
            builder.add(k, v);
        }
        let data = builder.finish();
        Block::new(data).unwrap()
    }

    proptest! {
        #[test]
        fn iterates_and_seeks_like_a_sorted_map(
            entries in proptest::collection::btree_map(proptest::collection::vec(0u8..4, 0..8), proptest::collection::vec(any::<u8>(), 0..10), 0..60),
            interval in 1usize..20,
            targets in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..8), 0..10),
        ) {
            let block = build(&entries, interval);
            let mut it = BlockIter::new(&block);
            it.seek_to_first().unwrap();
            let mut got = Vec::new();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.next().unwrap();
            }
            let want: Vec<_> = entries.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(got, want);
            for target in targets {
                it.seek(&target, |a, b| a.cmp(b)).unwrap();
                let want = entries.range(target.clone()..).next();
                if let Some((k, v)) = want {
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), &k[..]);
                    prop_assert_eq!(it.value(), &v[..]);
                } else {
                    prop_assert!(!it.valid());
                }
            }
        }

        /// Whatever the bytes, reading a block gives an error or entries, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200), target in proptest::collection::vec(any::<u8>(), 0..8)) {
            if let Ok(block) = Block::new(data) {
                let mut it = BlockIter::new(&block);
                let mut steps = 0;
                if it.seek_to_first().is_ok() {
                    while it.valid() && steps < 1000 {
                        if it.next().is_err() { break; }
                        steps += 1;
                    }
                }
                let _ = it.seek(&target, |a, b| a.cmp(b));
            }
        }
    }

    #[test]
    fn prefix_compression_shrinks_shared_keys() {
        let entries: BTreeMap<Vec<u8>, Vec<u8>> = (0..100)
            .map(|i| (format!("user:profile:{i:05}").into_bytes(), vec![]))
            .collect();
        let block = build(&entries, 16);
        let raw: usize = entries.keys().map(|k| k.len()).sum();
        assert!(
            block.size() < raw / 2,
            "{} bytes for {raw} bytes of keys",
            block.size()
        );
    }
}
