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

/// Tiny memtables and blocks, so the checks run through frozen memtables, flushes,
/// many tables and multi-block reads rather than one memtable.
mod small_memtables {
    use lsm::{Lsm, Options};
    engine::conformance_tests!(|dir: &std::path::Path| Lsm::open(
        dir,
        Options {
            memtable_bytes: 4096,
            block_size: 256,
            block_cache_bytes: 8192,
            ..Options::default()
        }
    ));
}
