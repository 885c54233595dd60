//! Workload generators for hotkv's benchmarks: YCSB core workloads A-F over uniform,
//! zipfian (any theta), scrambled zipfian, latest and hot-set distributions, with a
//! hotspot that can move mid-run. Everything is deterministic from a seed.

pub mod distribution;
pub mod permutation;
pub mod ycsb;
pub mod zipf;

pub use distribution::{Distribution, KeyChooser};
pub use ycsb::{key_bytes, shift_offset, Generator, Mix, Op, Shared, Spec, Workload};
pub use zipf::{top_share, Zipf};
