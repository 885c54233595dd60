//! One interface to every storage engine hotkv runs on: the in-memory HotRing index
//! ([`MemoryEngine`]), the LSM tree (crate `lsm`), and RocksDB for comparison.
//!
//! Every implementation passes the same conformance suite ([`conformance`], built
//! with the `conformance` feature), which states the contract below as tests.
//!
//! The contract:
//! - `put`, `delete` and `write` are atomic: a reader sees all of a batch or none of it,
//!   and operations inside a batch apply in the order they were added.
//! - `multi_get` and a [`Cursor`] each see one point in time.
//! - Keys and values are arbitrary bytes; the empty key and the empty value are
//!   ordinary keys and values.
//! - After `close`, every operation returns [`Error::Closed`].
//! - A durable engine gives back, after reopening, every write that returned `Ok` under
//!   its strongest sync policy.

mod batch;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
mod fsync;
pub mod gate;
mod memory;
#[cfg(feature = "rocksdb")]
mod rocksdb;
pub mod varint;

#[cfg(feature = "rocksdb")]
pub use crate::rocksdb::{RocksDbEngine, RocksDbOptions};
pub use batch::{check_sizes, BatchOp, WriteBatch, KIND_DELETE, KIND_PUT};
pub use error::{Error, Result};
pub use fsync::FsyncPolicy;
pub use memory::MemoryEngine;

/// What an engine can do, so callers (and the conformance suite) need not guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Keys come back from [`Engine::range`] in byte order.
    pub ordered: bool,
    /// Data outlives the process.
    pub durable: bool,
}

/// Keys from `start` (inclusive) to `end` (exclusive), at most `limit` of them after
/// the start and after each seek. `None` means unbounded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Option<Vec<u8>>,
    pub end: Option<Vec<u8>>,
    pub limit: Option<usize>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange::default()
    }

    pub fn from(mut self, start: &[u8]) -> KeyRange {
        self.start = Some(start.to_vec());
        self
    }

    pub fn until(mut self, end: &[u8]) -> KeyRange {
        self.end = Some(end.to_vec());
        self
    }

    pub fn limit(mut self, limit: usize) -> KeyRange {
        self.limit = Some(limit);
        self
    }

    /// Where a seek to `key` lands: never before the start.
    pub fn clamp<'a>(&'a self, key: &'a [u8]) -> &'a [u8] {
        match &self.start {
            Some(start) if start.as_slice() > key => start,
            _ => key,
        }
    }

    /// Whether `key` is before the end bound.
    pub fn before_end(&self, key: &[u8]) -> bool {
        self.end.as_deref().is_none_or(|end| key < end)
    }
}

/// An ordered walk over a [`KeyRange`], forward only. Entries are lent: each is valid
/// until the next call.
pub trait Cursor {
    /// Moves so that the next entry is the first key at or after `key` (and not before
    /// the range's start); resets the range's limit.
    fn seek(&mut self, key: &[u8]) -> Result<()>;

    /// The next key and value, or `None` at the end of the range or the limit.
    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>>;

    /// [`Cursor::next`] that gives up once it has walked `budget` stored entries,
    /// counting deleted keys and old versions, which `next` passes over unseen: a
    /// caller that must answer in bounded time (a SCAN page) resumes later from the
    /// key it stopped at. Each entry walked takes one from `budget`. It stops only
    /// between two keys, and never before deciding one key in the call, so repeated
    /// calls always move on, even with no budget left. Engines that hold no deleted
    /// keys never stop.
    fn next_within(&mut self, budget: &mut usize) -> Result<Step<'_>> {
        Ok(match self.next()? {
            Some((key, value)) => {
                *budget = budget.saturating_sub(1);
                Step::Entry(key, value)
            }
            None => Step::End,
        })
    }
}

/// What [`Cursor::next_within`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    Entry(&'a [u8], &'a [u8]),
    /// The end of the range or its limit.
    End,
    /// The budget ran out; the walk resumes at this key (inclusive), the first not yet
    /// decided.
    Stopped(&'a [u8]),
}

/// Named counters an engine reports (for INFO and the benchmarks).
pub type Stats = Vec<(&'static str, u64)>;

pub trait Engine: Send + Sync {
    fn capabilities(&self) -> Capabilities;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// The values of `keys`, in order, all read at one point in time.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>>;

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Deleting a missing key is not an error.
    fn delete(&self, key: &[u8]) -> Result<()>;

    fn write(&self, batch: &WriteBatch) -> Result<()>;

    /// A cursor over `range` that sees the engine as it was when the cursor was made.
    /// Engines without key order return [`Error::Unsupported`].
    fn range(&self, range: KeyRange) -> Result<Box<dyn Cursor + '_>>;

    /// Makes every write so far durable (a no-op for engines that are not).
    fn flush(&self) -> Result<()>;
    /// Hands to the operating system the writes an engine holds back to write many
    /// with one system call (the LSM tree's `defer_log_writes`): from then on they
    /// survive the process's crash. A server calls this before it sends a reply,
    /// which may reveal any write that is visible. Engines that hold nothing back do
    /// nothing.
    fn write_held_back(&self) -> Result<()> {
        Ok(())
    }

    /// When writes reach the disk from now on (Redis's CONFIG SET appendfsync). An
    /// engine whose policy is fixed when it opens refuses.
    fn set_fsync(&self, policy: FsyncPolicy) -> Result<()> {
        let _ = policy;
        Err(Error::Unsupported(
            "this engine's fsync policy is fixed when it opens",
        ))
    }

    /// Starts merging the whole store down in the background, so that the tombstones
    /// a mass delete leaves (which every walk of the keys steps over) are dropped soon,
    /// not whenever the levels fill. Engines that keep no tombstones do nothing; an
    /// engine may also do nothing while a compaction it started is still under way.
    fn compact_in_background(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self) -> Stats;

    /// Flushes and releases the engine's resources; later calls return
    /// [`Error::Closed`]. Closing twice is not an error.
    fn close(&self) -> Result<()>;
}
