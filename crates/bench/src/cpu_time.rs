//! CPU time consumed by this process's threads, for throughput per CPU-second.
//!
//! On a shared machine a worker thread is descheduled for tens of milliseconds at a
//! time, so throughput per 100 ms of wall time swings by a third in steady state and
//! hides the dip a hotspot shift causes. Operations per second of the workers' CPU time
//! does not move when the thread is off the CPU. Linux reports each thread's time on
//! the CPU, in nanoseconds, as the first field of `/proc/self/task/TID/schedstat`.

/// Nanoseconds all threads of this process have spent on a CPU, or `None` where the
/// kernel does not say (not Linux, or schedstat unavailable).
pub fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread that exits between the listing and the read is skipped: its time
        // is no longer part of the process's running total either way.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn grows_while_a_thread_spins() {
        let before = process_cpu_ns().expect("Linux reports schedstat");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = process_cpu_ns().expect("Linux reports schedstat");
        // Spinning for 50 ms of wall time is some CPU time, however loaded the machine.
        assert!(after > before, "{before} -> {after}");
    }
}
