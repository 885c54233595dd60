//! The atomics the index is built on. Under the `shuttle` feature they are shuttle's,
//! so `tests/shuttle.rs` can explore the interleavings of the pointer protocols.

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};

pub(crate) use std::sync::atomic::Ordering;

/// Yields to other threads while waiting out a peer's one-store critical section.
#[inline]
pub(crate) fn spin() {
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
    #[cfg(not(feature = "shuttle"))]
    std::hint::spin_loop();
}
