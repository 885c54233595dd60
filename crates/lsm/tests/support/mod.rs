//! What the lsm crate's integration tests share.

use engine::Engine;
use lsm::Lsm;

/// The store's counter `name` (see `Lsm`'s `stats`).
pub fn stat(store: &Lsm, name: &str) -> u64 {
    store
        .stats()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("the store reports no {name}"))
}
