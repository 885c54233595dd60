//! HotRing: a concurrent, hotspot-aware hash index (seed 000) whose rings are the
//! buckets of an extendible directory (seed 001).
//!
//! Keys hash to 64 bits. The top bits pick a ring through the directory; within the
//! ring items are ordered by (hash, key), so a lookup stops as soon as it passes the
//! key's place. Each ring's head points at the item that minimises the expected walk,
//! found by statistical sampling (or random movement), so hot keys are found in one
//! step. All operations are lock-free; memory is reclaimed by epochs.
//!
//! ```
//! let index = hotring::HotRing::new();
//! assert!(index.insert(b"k", b"v1"));
//! assert!(index.upsert(b"k", b"v2") == false);
//! assert_eq!(index.get(b"k").as_deref(), Some(&b"v2"[..]));
//! assert!(index.remove(b"k"));
//! ```
//!
//! The layout of the packed words is in `POINTERS.md` beside this file.

pub mod chain;
mod directory;
pub mod hash;
mod head;
mod hot_keys;
mod index;
mod item;
mod iter;
mod link;
mod pinned;
mod prefetch;
mod split;
mod stats;
mod sync;

pub use index::{Access, Config, HotRing, HotspotStrategy, Version};
pub use item::{count_retired, INLINE_VALUE_MAX};
pub use iter::Iter;
pub use pinned::Pinned;
pub use prefetch::PREFETCH_MAX;
pub use stats::{allocated_items, Stats};
