pub use crate::wal_reader::WalRecovery;
pub use engine::FsyncPolicy;

#[derive(Clone, Debug)]
pub struct Options {
    pub fsync: FsyncPolicy,
    /// Under `fsync everysec` or `no`, hold each group's log record back, and write
    /// all held back with one system call at [`engine::Engine::write_held_back`] (or
    /// a sync, a memtable switch, close), as Redis writes its append-only file once
    /// per event loop. Writes are visible before they are in the file: a caller that
    /// sets this must call `write_held_back` before it acknowledges a write or shows
    /// one (a reply), or a process crash may lose what it showed.
    pub defer_log_writes: bool,
    /// What recovery does with a damaged log (see `wal_format.md`).
    pub wal_recovery: WalRecovery,
    /// A memtable this full is frozen and flushed to a table.
    pub memtable_bytes: usize,
    /// Frozen memtables waiting for flush; writers stall while there are this many.
    pub max_immutable_memtables: usize,
    /// Capacity of the block cache.
    pub block_cache_bytes: usize,
    /// Data blocks are cut at this size.
    pub block_size: usize,
    pub bloom_bits_per_key: usize,
    /// Level 0 is compacted into level 1 at this many tables.
    pub l0_compaction_trigger: usize,
    /// Writers stall while level 0 has this many tables.
    pub l0_stop_writes_trigger: usize,
    /// The size limit of level 1; each deeper level may hold `level_size_ratio` times
    /// the one above.
    pub level1_bytes: usize,
    pub level_size_ratio: usize,
    /// Compaction cuts its output tables near this size.
    pub table_file_bytes: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            fsync: FsyncPolicy::default(),
            defer_log_writes: false,
            wal_recovery: WalRecovery::TolerateTornTail,
            memtable_bytes: 64 << 20,
            max_immutable_memtables: 2,
            block_cache_bytes: 64 << 20,
            block_size: 4096,
            bloom_bits_per_key: 10,
            l0_compaction_trigger: 4,
            l0_stop_writes_trigger: 12,
            level1_bytes: 256 << 20,
            level_size_ratio: 10,
            table_file_bytes: 64 << 20,
        }
    }
}
