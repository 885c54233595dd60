//! A global allocator that counts bytes in use while counting is switched on, so
//! every structure's footprint is measured the same way (requested bytes, before the
//! allocator's own rounding and headers). It allocates with jemalloc, as hotkv-server
//! does: glibc's malloc made RCU updates with two threads (freed by the epoch collector
//! on another thread than allocated them) an allocator benchmark.

use std::alloc::{GlobalAlloc, Layout};

use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use tikv_jemallocator::Jemalloc;

pub struct CountingAlloc;

static ON: AtomicBool = AtomicBool::new(false);
static IN_USE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: defers every allocation to jemalloc unchanged; only adds bookkeeping.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            IN_USE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { Jemalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ON.load(Ordering::Relaxed) {
            IN_USE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { Jemalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ON.load(Ordering::Relaxed) {
            IN_USE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: same contract as ours.
        unsafe { Jemalloc.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` with counting on; returns its result and the net bytes it left allocated.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, isize) {
    let before = IN_USE.load(Ordering::Relaxed);
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    (r, IN_USE.load(Ordering::Relaxed) - before)
}
