//! YCSB core workloads and the operation stream.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::distribution::{Distribution, KeyChooser};

/// The YCSB core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Update heavy: 50% reads, 50% updates.
    A,
    /// Read mostly: 95% reads, 5% updates.
    B,
    /// Read only.
    C,
    /// Read latest: 95% reads, 5% inserts, reads favour new keys.
    D,
    /// Short ranges: 95% scans, 5% inserts.
    E,
    /// Read-modify-write: 50% reads, 50% read-modify-writes.
    F,
}

/// Operation proportions, summing to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

impl Workload {
    pub fn mix(self) -> Mix {
        let m = |read, update, insert, scan, read_modify_write| Mix {
            read,
            update,
            insert,
            scan,
            read_modify_write,
        };
        match self {
            Workload::A => m(0.5, 0.5, 0.0, 0.0, 0.0),
            Workload::B => m(0.95, 0.05, 0.0, 0.0, 0.0),
            Workload::C => m(1.0, 0.0, 0.0, 0.0, 0.0),
            Workload::D => m(0.95, 0.0, 0.05, 0.0, 0.0),
            Workload::E => m(0.0, 0.0, 0.05, 0.95, 0.0),
            Workload::F => m(0.5, 0.0, 0.0, 0.0, 0.5),
        }
    }

    /// YCSB's request distribution for the workload.
    pub fn default_distribution(self) -> Distribution {
        match self {
            Workload::D => Distribution::Latest,
            _ => Distribution::Zipf { theta: 0.99 },
        }
    }
}

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Workload, String> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Ok(Workload::A),
            "b" => Ok(Workload::B),
            "c" => Ok(Workload::C),
            "d" => Ok(Workload::D),
            "e" => Ok(Workload::E),
            "f" => Ok(Workload::F),
            _ => Err(format!(
                "unknown workload '{s}': expected one of a, b, c, d, e, f"
            )),
        }
    }
}

/// One request. Keys are indexes; `key_bytes` turns them into keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read(u64),
    Update(u64),
    Insert(u64),
    /// Start key and number of keys.
    Scan(u64, u32),
    ReadModifyWrite(u64),
}

/// The 8-byte key for an index (the size HotRing's evaluation uses).
pub fn key_bytes(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// State shared by every thread's generator: how many keys exist (inserts append) and
/// how many times the hotspot has shifted.
#[derive(Debug)]
pub struct Shared {
    records: AtomicU64,
    shifts: AtomicU64,
}

impl Shared {
    pub fn new(loaded: u64) -> Arc<Shared> {
        Arc::new(Shared {
            records: AtomicU64::new(loaded),
            shifts: AtomicU64::new(0),
        })
    }

    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Moves the hot set to other keys, now, for every generator sharing this state.
    pub fn shift_hotspot(&self) {
        self.shifts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn shifts(&self) -> u64 {
        self.shifts.load(Ordering::Relaxed)
    }
}

/// How far the key space is rotated after `shifts` hotspot shifts over `n` keys:
/// far enough that the new hot keys were cold before, and not a divisor of `n`, so
/// repeated shifts keep moving. Key `k` drawn before any shift is key
/// `(k + shift_offset(s, n)) % n` after `s` shifts.
pub fn shift_offset(shifts: u64, n: u64) -> u64 {
    shifts.wrapping_mul(n / 2 + 1) % n.max(1)
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct Spec {
    pub workload: Workload,
    pub distribution: Distribution,
    /// Keys loaded before the run; reads, updates and scans draw among them.
    pub keys: u64,
    /// Longest scan (YCSB: uniform in 1..=100).
    pub max_scan: u32,
    /// Shift the hotspot automatically after this many operations of each generator.
    pub shift_after_ops: Option<u64>,
}

impl Spec {
    pub fn new(workload: Workload, distribution: Distribution, keys: u64) -> Spec {
        Spec {
            workload,
            distribution,
            keys,
            max_scan: 100,
            shift_after_ops: None,
        }
    }
}

/// A deterministic stream of operations for one thread.
pub struct Generator {
    spec: Spec,
    mix: Mix,
    chooser: KeyChooser,
    shared: Arc<Shared>,
    rng: SmallRng,
    issued: u64,
}

impl Generator {
    /// Generators with the same `spec`, `seed` and `stream` produce the same operations
    /// (given the same interleaving of inserts through `shared`). `seed` fixes which
    /// keys are hot; `stream` gives each thread its own sequence.
    pub fn new(spec: Spec, shared: Arc<Shared>, seed: u64, stream: u64) -> Generator {
        let chooser = KeyChooser::new(&spec.distribution, spec.keys.max(1), seed);
        let mix = spec.workload.mix();
        let rng = SmallRng::seed_from_u64(
            seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17),
        );
        Generator {
            spec,
            mix,
            chooser,
            shared,
            rng,
            issued: 0,
        }
    }

    fn offset(&self) -> u64 {
        shift_offset(self.shared.shifts(), self.chooser.n())
    }

    fn key(&mut self) -> u64 {
        let offset = self.offset();
        let newest = self.shared.records();
        self.chooser.choose(&mut self.rng, newest, offset)
    }
}

impl Iterator for Generator {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        self.issued += 1;
        if self.spec.shift_after_ops.is_some_and(|n| self.issued == n) {
            self.shared.shift_hotspot();
        }
        let m = self.mix;
        let roll = self.rng.gen::<f64>();
        // Cumulative thresholds in the order read, update, insert, scan, rmw.
        let op = if roll < m.read {
            Op::Read(self.key())
        } else if roll < m.read + m.update {
            Op::Update(self.key())
        } else if roll < m.read + m.update + m.insert {
            Op::Insert(self.shared.records.fetch_add(1, Ordering::Relaxed))
        } else if roll < m.read + m.update + m.insert + m.scan {
            let len = self.rng.gen_range(1..=self.spec.max_scan.max(1));
            Op::Scan(self.key(), len)
        } else {
            Op::ReadModifyWrite(self.key())
        };
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(workload: Workload) -> [f64; 5] {
        let spec = Spec::new(workload, Distribution::Uniform, 1000);
        let g = Generator::new(spec, Shared::new(1000), 1, 0);
        let mut c = [0f64; 5];
        let n = 100_000;
        for op in g.take(n) {
            let i = match op {
                Op::Read(_) => 0,
                Op::Update(_) => 1,
                Op::Insert(_) => 2,
                Op::Scan(_, len) => {
                    assert!((1..=100).contains(&len));
                    3
                }
                Op::ReadModifyWrite(_) => 4,
            };
            c[i] += 1.0 / n as f64;
        }
        c
    }

    #[test]
    fn proportions_match_each_workload() {
        for w in [
            Workload::A,
            Workload::B,
            Workload::C,
            Workload::D,
            Workload::E,
            Workload::F,
        ] {
            let m = w.mix();
            let want = [m.read, m.update, m.insert, m.scan, m.read_modify_write];
            assert!((want.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            let got = count(w);
            for i in 0..5 {
                assert!(
                    (got[i] - want[i]).abs() < 0.01,
                    "{w:?}: {got:?} vs {want:?}"
                );
            }
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let spec = Spec::new(Workload::A, Distribution::Zipf { theta: 1.22 }, 10_000);
        let a: Vec<Op> = Generator::new(spec.clone(), Shared::new(10_000), 5, 1)
            .take(1000)
            .collect();
        let b: Vec<Op> = Generator::new(spec.clone(), Shared::new(10_000), 5, 1)
            .take(1000)
            .collect();
        let c: Vec<Op> = Generator::new(spec, Shared::new(10_000), 5, 2)
            .take(1000)
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn inserts_append_new_keys() {
        let spec = Spec::new(Workload::D, Distribution::Latest, 100);
        let shared = Shared::new(100);
        let inserted: Vec<u64> = Generator::new(spec, shared.clone(), 1, 0)
            .take(10_000)
            .filter_map(|op| {
                if let Op::Insert(k) = op {
                    Some(k)
                } else {
                    None
                }
            })
            .collect();
        assert!(!inserted.is_empty());
        assert_eq!(
            inserted,
            (100..100 + inserted.len() as u64).collect::<Vec<_>>()
        );
        assert_eq!(shared.records(), 100 + inserted.len() as u64);
    }

    #[test]
    fn a_shift_after_n_ops_moves_the_hot_set() {
        let mut spec = Spec::new(
            Workload::C,
            Distribution::Hotspot {
                hot_fraction: 0.01,
                hot_op_fraction: 0.9,
            },
            10_000,
        );
        spec.shift_after_ops = Some(50_000);
        let shared = Shared::new(10_000);
        let keys: Vec<u64> = Generator::new(spec, shared.clone(), 3, 0)
            .take(100_000)
            .map(|op| {
                if let Op::Read(k) = op {
                    k
                } else {
                    unreachable!()
                }
            })
            .collect();
        assert_eq!(shared.shifts(), 1);
        let hot = |ks: &[u64]| {
            let mut c = std::collections::HashMap::new();
            for k in ks {
                *c.entry(*k).or_insert(0u32) += 1;
            }
            let mut v: Vec<_> = c.into_iter().collect();
            v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            v.iter()
                .take(100)
                .map(|(k, _)| *k)
                .collect::<std::collections::HashSet<_>>()
        };
        let (before, after) = (hot(&keys[..50_000]), hot(&keys[50_000..]));
        assert!(before.intersection(&after).count() < 5);
    }
}
