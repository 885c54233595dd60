//! A handle that holds one epoch pin for many operations.
//!
//! Every operation on the index reads pointers that only an epoch pin keeps alive, and
//! pinning is not free: a thread-local lookup, a counter and a full fence on the first
//! pin of a thread's nesting, then an unpin that now and then collects garbage. For
//! one lookup of a hot key, reached at the head in a few nanoseconds, that is a large
//! share of the work, so a caller with many operations to do at once (a server's
//! pipeline, a batch of requests) pins once for all of them, as papaya's `pin()` and
//! crossbeam's guards allow.
//!
//! The cost of holding a pin is memory: nothing retired while it is held (replaced
//! values, removed keys, a split's old directory) is freed before it is dropped, so a
//! handle is for a batch, not for a thread's lifetime.

use crossbeam_epoch::{self as epoch, Guard};

use crate::index::{HotRing, WriteMode, Written};

/// The index under one epoch pin: the same operations as [`HotRing`]'s, without a pin
/// each. Not `Send`: a pin belongs to its thread.
pub struct Pinned<'a> {
    index: &'a HotRing,
    guard: Guard,
}

impl HotRing {
    /// Pins the current thread for the operations of a batch.
    ///
    /// ```
    /// let index = hotring::HotRing::new();
    /// let pinned = index.pin();
    /// for i in 0u32..100 {
    ///     pinned.insert(&i.to_le_bytes(), b"v");
    /// }
    /// assert_eq!(pinned.get(&7u32.to_le_bytes()).as_deref(), Some(&b"v"[..]));
    /// ```
    pub fn pin(&self) -> Pinned<'_> {
        Pinned {
            index: self,
            guard: epoch::pin(),
        }
    }
}

impl Pinned<'_> {
    /// Calls `f` with the value stored under `key`. See [`HotRing::get_with`].
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.index
            .accessed(key, &self.guard)
            .map(|item| item.with_value(f))
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get_with(key, |_| ()).is_some()
    }

    /// Inserts `key` if it is absent. Returns whether it was inserted.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> bool {
        self.write(key, value, WriteMode::Insert) == Written::Inserted
    }

    /// Replaces the value of `key` if it is present. Returns whether it was.
    pub fn update(&self, key: &[u8], value: &[u8]) -> bool {
        self.write(key, value, WriteMode::Update) == Written::Updated
    }

    /// Inserts or replaces. Returns true if the key was new.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> bool {
        self.write(key, value, WriteMode::Upsert) == Written::Inserted
    }

    /// Removes `key`. Returns whether it was present.
    pub fn remove(&self, key: &[u8]) -> bool {
        self.index.remove_if_in(key, |_| true, &self.guard)
    }

    #[inline]
    fn write(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Written {
        self.index.write(key, value, mode, |_| {}, &self.guard)
    }
}
