//! The allocator: jemalloc, whose statistics give `used_memory` (as in Redis) cheaply
//! enough to read every 10 ms.

use tikv_jemalloc_ctl::{epoch, stats};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Bytes currently allocated by the process. Statistics are refreshed by advancing
/// jemalloc's epoch, a few microseconds.
pub fn allocated() -> u64 {
    if epoch::advance().is_err() {
        return 0;
    }
    stats::allocated::read().map_or(0, |n| n as u64)
}

/// jemalloc's view, for INFO: bytes allocated, in active pages, and resident.
pub fn allocator() -> Option<[u64; 3]> {
    epoch::advance().ok()?;
    Some([
        stats::allocated::read().ok()? as u64,
        stats::active::read().ok()? as u64,
        stats::resident::read().ok()? as u64,
    ])
}

/// jemalloc's full statistics report, as MEMORY MALLOC-STATS gives Redis's.
pub fn allocator_report() -> String {
    let mut text = Vec::new();
    match tikv_jemalloc_ctl::stats_print::stats_print(&mut text, Default::default()) {
        Ok(()) => String::from_utf8_lossy(&text).into_owned(),
        Err(e) => format!("jemalloc statistics unavailable: {e}"),
    }
}

/// The process's resident set (Redis's `used_memory_rss`), from `/proc/self/status`
/// (Linux; `None` elsewhere).
pub fn resident() -> Option<u64> {
    kilobytes_field("/proc/self/status", "VmRSS:")
}

/// The machine's memory (`total_system_memory`), from `/proc/meminfo`.
pub fn system_total() -> Option<u64> {
    kilobytes_field("/proc/meminfo", "MemTotal:")
}

/// A `Name:   1234 kB` line of a /proc file, in bytes.
fn kilobytes_field(path: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
