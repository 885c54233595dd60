//! The engine contract (`engine::conformance`) under each sync policy.

mod always {
    use lsm::{FsyncPolicy, Lsm, Options};
    engine::conformance_tests!(|dir: &std::path::Path| Lsm::open(
        dir,
        Options {
            fsync: FsyncPolicy::Always,
            ..Options::default()
        }
    ));
}

mod everysec {
    use lsm::{Lsm, Options};
    engine::conformance_tests!(|dir: &std::path::Path| Lsm::open(dir, Options::default()));
}

mod no_sync {
    use lsm::{FsyncPolicy, Lsm, Options};
    engine::conformance_tests!(|dir: &std::path::Path| Lsm::open(
        dir,
        Options {
            fsync: FsyncPolicy::No,
            ..Options::default()
        }
    ));
}

/// Tiny memtables, blocks, levels and tables, so the checks run through frozen
/// memtables, flushes, compactions across several levels and multi-block reads
/// rather than one memtable.
mod tiny_levels {
    use lsm::{Lsm, Options};
    engine::conformance_tests!(|dir: &std::path::Path| Lsm::open(
        dir,
        Options {
            memtable_bytes: 4096,
            block_size: 256,
            block_cache_bytes: 8192,
            l0_compaction_trigger: 2,
            level1_bytes: 16 * 1024,
            level_size_ratio: 4,
            table_file_bytes: 4096,
            ..Options::default()
        }
    ));
}
