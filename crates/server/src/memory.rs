//! The allocator: jemalloc, whose statistics give `used_memory` (as in Redis) cheaply
//! enough to read every 10 ms while `maxmemory` is set (a few hundred µs each: every
//! arena's statistics are merged), every 100 ms otherwise.

use tikv_jemalloc_ctl::thread::{allocatedp, deallocatedp, ThreadLocal};
use tikv_jemalloc_ctl::{epoch, stats};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Bytes the process holds. Statistics are refreshed by advancing jemalloc's epoch,
/// which merges every arena's (~300 µs on this 2-core VM). jemalloc's
/// `stats.allocated` counts the objects each thread keeps cached for its next
/// allocations (its tcache) as allocated: hundreds of KB that come and go with a
/// thread's recent frees, not with the data. They are taken out, so that the figure
/// moves with what is stored as Redis's exact count does (`maxmemory` tests leave 4
/// KB of slack) and starts near Redis's.
pub fn allocated() -> u64 {
    if epoch::advance().is_err() {
        return 0;
    }
    let allocated = stats::allocated::read().map_or(0, |n| n as u64);
    // 4096 is MALLCTL_ARENAS_ALL: the sum over every arena.
    // SAFETY: jemalloc documents `stats.arenas.<i>.tcache_bytes` as a size_t, which
    // `usize` is; the name is NUL-terminated.
    let cached =
        unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"stats.arenas.4096.tcache_bytes\0") };
    allocated.saturating_sub(cached.map_or(0, |n| n as u64))
}

thread_local! {
    /// jemalloc's counters of the bytes this thread has allocated and freed, found once.
    static THREAD_COUNTERS: Option<(ThreadLocal<u64>, ThreadLocal<u64>)> =
        allocatedp::read().ok().zip(deallocatedp::read().ok());
}

/// Bytes this thread has allocated less those it has freed since it started (less
/// than 0 once it has freed more than it allocated, as memory other threads
/// allocated). Two loads: cheap enough to read before every command.
pub fn thread_balance() -> i64 {
    THREAD_COUNTERS.with(|counters| {
        counters.map_or(0, |(allocated, freed)| {
            allocated.get().wrapping_sub(freed.get()) as i64
        })
    })
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

/// Hands the allocator's dirty pages (freed, not yet returned) back to the system
/// now instead of after jemalloc's decay time, as Redis's MEMORY PURGE does: after a
/// large delete the resident set drops at once.
pub fn purge() -> Result<(), String> {
    // 4096 is MALLCTL_ARENAS_ALL: every arena.
    let name = c"arena.4096.purge";
    // SAFETY: `arena.<i>.purge` is a void control: jemalloc refuses it unless the
    // old-value pointers are null and the new value is null with length 0, which is
    // what is passed, so jemalloc reads and writes no memory of ours; `name` is a
    // NUL-terminated string that outlives the call.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc).to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_balance_counts_what_it_holds() {
        let before = thread_balance();
        let block = std::hint::black_box(vec![1u8; 1 << 20]);
        let holding = thread_balance();
        drop(block);
        let after = thread_balance();
        assert!(holding - before >= 1 << 20, "{before} -> {holding}");
        assert!(holding - after >= 1 << 20, "{holding} -> {after}");
        // Another thread's balance is its own.
        let other = std::thread::spawn(|| {
            let start = thread_balance();
            let block = std::hint::black_box(vec![1u8; 1 << 20]);
            (thread_balance() - start, block.len())
        });
        assert!(other.join().unwrap().0 >= 1 << 20);
        assert!((thread_balance() - after).abs() < 1 << 16);
    }
}
