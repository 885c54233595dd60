//! hotkv's LSM-tree storage engine.
//!
//! Writes go to a write-ahead log (`wal_format.md`), shared by concurrent writers
//! through group commit, then into a concurrent skiplist memtable; reads see the
//! newest version at or below a sequence number. This is the engine's first stage:
//! sorted tables, flushing, compaction and the block cache come next (issue 4), so the
//! memtable is, for now, the whole store and the log is replayed in full on open.

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
mod options;
mod table;
mod table_builder;
mod version;
mod wal;
mod wal_reader;
mod wal_writer;

pub use db::Lsm;
pub use options::{FsyncPolicy, Options, WalRecovery};
