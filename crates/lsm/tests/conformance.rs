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
