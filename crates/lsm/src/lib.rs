//! hotkv's LSM-tree storage engine.
//!
//! Writes go to a write-ahead log (`wal_format.md`), shared by concurrent writers
//! through group commit (`commit.rs`), then into the memtable (`memtable.rs`). A
//! full memtable is frozen and a background thread flushes it to a level-0 sorted
//! table (`table_format.md`); another merges tables down the levels (leveled
//! compaction, `compaction.rs`), or, when asked (`Lsm::compact_all`, after a mass
//! delete), merges the whole store down so that no tombstone is left for readers to
//! step over. The manifest (`manifest_format.md`) records which
//! tables make up the store. Reads see the newest version at or below a sequence
//! number, through the memtables, then the tables (bloom filter, index, block cache).
//!
//! Failure handling: damage in any file is reported with the file and offset and
//! never returned as data; a failed flush or compaction is retried, and while it
//! fails, writers that would need it get an error instead of using unbounded memory;
//! a failed log sync, or a log or manifest whose tail cannot be cut back after a failed
//! write, stops writes until the store is reopened. Reads keep working throughout.

mod arena;
mod block;
mod block_cache;
mod bloom;
mod commit;
mod compaction;
mod cursor;
mod db;
mod internal_key;
mod iterator;
mod manifest;
mod memtable;
mod memtable_filter;
mod options;
mod table;
mod table_builder;
mod version;
mod wal;
mod wal_reader;
mod wal_writer;

pub use db::{Lsm, Snapshot};
pub use options::{FsyncPolicy, Options, WalRecovery};
