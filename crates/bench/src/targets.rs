//! The maps `hotkv-bench index` can measure, behind one interface.

use hotring::chain::ChainingHash;
use hotring::{Config, HotRing, HotspotStrategy};

/// One operation of a batch: a read, or a write of the batch's value.
#[derive(Clone, Copy, Debug)]
pub enum Request {
    Read([u8; 8]),
    Write([u8; 8]),
}

pub trait Target: Send + Sync {
    /// Runs `batch` in order, each write storing `value`. A map whose operations pin
    /// an epoch (hotring, chain, papaya) pins once for the batch, as a server serving a
    /// pipeline or a client holding papaya's `pin()` would.
    fn serve(&self, batch: &[Request], value: &[u8]);
    fn put(&self, key: &[u8], value: &[u8]);
    /// (items visited per read, head-hit rate), where the structure knows them.
    fn access_stats(&self) -> (Option<f64>, Option<f64>) {
        (None, None)
    }
    fn reset_access_stats(&self) {}
    /// (accesses, items visited) so far, counted the way `access_stats` reads them,
    /// where the structure keeps them cheaply.
    fn access_totals(&self) -> Option<(u64, u64)> {
        None
    }
    /// Anything worth printing about the structure after a run.
    fn describe(&self) -> String {
        String::new()
    }
}

/// The implementations, by `--impl` name.
pub const NAMES: &[&str] = &[
    "hotring-s",
    "hotring-r",
    "hotring-fixed",
    "chain",
    "dashmap",
    "papaya",
];

/// How hotring is sized.
pub enum Sizing {
    /// A fixed number of rings: `keys / ratio`, like the chaining hash's buckets.
    Fixed { ratio: usize },
    /// Growing by splits, past `max_ring_len` items per ring (default: the index's).
    Grow { max_ring_len: Option<u32> },
}

/// Builds an empty target for `keys` keys. The chaining hash has `keys / ratio`
/// buckets; dashmap and papaya take their own default sizing.
pub fn build(
    name: &str,
    keys: usize,
    ratio: usize,
    sizing: &Sizing,
) -> Result<Box<dyn Target>, String> {
    let ring = |strategy| -> Box<dyn Target> {
        let config = match *sizing {
            Sizing::Grow { max_ring_len } => {
                let default = Config::default();
                Config {
                    strategy,
                    max_ring_len: max_ring_len.or(default.max_ring_len),
                    ..default
                }
            }
            Sizing::Fixed { ratio } => Config::fixed(strategy, keys, ratio),
        };
        Box::new(HotRing::with_config(config))
    };
    Ok(match name {
        "hotring-s" => ring(HotspotStrategy::Sampling),
        "hotring-r" => ring(HotspotStrategy::Random),
        "hotring-fixed" => ring(HotspotStrategy::FixedHead),
        "chain" => Box::new(ChainingHash::for_keys(keys, ratio)),
        "dashmap" => Box::new(dashmap::DashMap::<Box<[u8]>, Box<[u8]>>::new()),
        "papaya" => Box::new(papaya::HashMap::<Box<[u8]>, Box<[u8]>>::new()),
        other => {
            return Err(format!(
                "unknown implementation '{other}': expected one of {}",
                NAMES.join(", ")
            ))
        }
    })
}

/// Runs `batch` through `read` (which returns something of the value, kept from the
/// optimiser) and `write`.
#[inline(always)]
fn serve_each<R>(
    batch: &[Request],
    value: &[u8],
    read: impl Fn(&[u8]) -> R,
    write: impl Fn(&[u8], &[u8]),
) {
    for request in batch {
        match request {
            Request::Read(key) => {
                std::hint::black_box(read(key));
            }
            Request::Write(key) => write(key, value),
        }
    }
}

/// `serve` and `put` of hotring and the chaining hash, whose pinned handles share
/// their methods' names and signatures.
macro_rules! serve_pinned {
    () => {
        fn serve(&self, batch: &[Request], value: &[u8]) {
            let pinned = self.pin();
            serve_each(
                batch,
                value,
                |k| pinned.get_with(k, |v| v.first().copied()),
                |k, v| {
                    pinned.upsert(k, v);
                },
            );
        }
        fn put(&self, key: &[u8], value: &[u8]) {
            self.upsert(key, value);
        }
    };
}

impl Target for HotRing {
    serve_pinned!();
    fn access_stats(&self) -> (Option<f64>, Option<f64>) {
        let s = self.stats();
        (Some(s.items_per_access), Some(s.head_hit_rate))
    }
    fn reset_access_stats(&self) {
        HotRing::reset_access_stats(self)
    }
    fn access_totals(&self) -> Option<(u64, u64)> {
        Some(HotRing::access_totals(self))
    }
    fn describe(&self) -> String {
        let s = self.stats();
        format!(
            "rings {} splits {} head moves {} sample rounds {} shifts {}",
            s.rings, s.splits, s.head_moves, s.sample_rounds, s.shifts
        )
    }
}

impl Target for ChainingHash {
    serve_pinned!();
    fn access_stats(&self) -> (Option<f64>, Option<f64>) {
        let (items, hits) = ChainingHash::access_stats(self);
        (Some(items), Some(hits))
    }
    fn reset_access_stats(&self) {
        ChainingHash::reset_access_stats(self)
    }
}

impl Target for dashmap::DashMap<Box<[u8]>, Box<[u8]>> {
    fn serve(&self, batch: &[Request], value: &[u8]) {
        serve_each(
            batch,
            value,
            |k| self.get(k).map(|v| v.first().copied()),
            |k, v| {
                self.insert(k.into(), v.into());
            },
        );
    }
    fn put(&self, key: &[u8], value: &[u8]) {
        self.insert(key.into(), value.into());
    }
}

impl Target for papaya::HashMap<Box<[u8]>, Box<[u8]>> {
    fn serve(&self, batch: &[Request], value: &[u8]) {
        let pinned = self.pin();
        serve_each(
            batch,
            value,
            |k| pinned.get(k).map(|v| v.first().copied()),
            |k, v| {
                pinned.insert(k.into(), v.into());
            },
        );
    }
    fn put(&self, key: &[u8], value: &[u8]) {
        self.pin().insert(key.into(), value.into());
    }
}
