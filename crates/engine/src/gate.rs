//! The gate that makes EXEC atomic without putting a lock on every command's path.
//!
//! Every command holds the gate shared while it runs; EXEC holds it exclusive. Shared
//! holders count themselves on a per-thread stripe (its own cache line), so commands on
//! different threads never touch the same memory; only EXEC, which is rare, pays:
//! it raises a flag and waits until every stripe drains. Holders never await while
//! holding the gate, so the wait is as short as the commands in flight. A shared
//! holder that finds the flag up sleeps on the lock the exclusive holder keeps.
//!
//! The protocol is Dekker's: a shared holder increments its stripe, then reads the
//! flag; EXEC sets the flag, then reads the stripes. With both sides sequentially
//! consistent, at least one of them sees the other, so a command and EXEC never run
//! at once.

use std::cell::Cell;
use std::sync::atomic::Ordering;

// Under the `shuttle` feature the gate is built on shuttle's primitives, so the model
// below can explore its interleavings.
#[cfg(feature = "shuttle")]
use shuttle::sync::{
    atomic::{AtomicBool, AtomicUsize},
    Mutex, MutexGuard,
};
#[cfg(not(feature = "shuttle"))]
use std::sync::{
    atomic::{AtomicBool, AtomicUsize},
    Mutex, MutexGuard,
};

use crossbeam_utils::CachePadded;

fn wait() {
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
    #[cfg(not(feature = "shuttle"))]
    std::thread::yield_now();
}

const STRIPES: usize = 64;

pub struct Gate {
    exclusive: AtomicBool,
    /// Serialises exclusive holders.
    writer: Mutex<()>,
    stripes: Box<[CachePadded<AtomicUsize>]>,
}

pub struct Shared<'a> {
    stripe: &'a AtomicUsize,
}

pub struct Exclusive<'a> {
    gate: &'a Gate,
    _writer: MutexGuard<'a, ()>,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = Cell::new(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            exclusive: AtomicBool::new(false),
            writer: Mutex::new(()),
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }
}

impl Gate {
    pub fn shared(&self) -> Shared<'_> {
        self.shared_on(STRIPE.with(Cell::get))
    }

    /// [`Gate::shared`] counting on a given stripe.
    fn shared_on(&self, stripe: usize) -> Shared<'_> {
        let stripe = &*self.stripes[stripe % STRIPES];
        loop {
            stripe.fetch_add(1, Ordering::SeqCst);
            if !self.exclusive.load(Ordering::SeqCst) {
                return Shared { stripe };
            }
            stripe.fetch_sub(1, Ordering::SeqCst);
            if self.exclusive.load(Ordering::SeqCst) {
                // The exclusive holder keeps `writer` until it is done: sleeping on
                // that lock, rather than spinning, leaves this core to it while a long
                // one (an MSET of many keys, FLUSHALL) runs.
                drop(self.writer.lock().unwrap_or_else(|e| e.into_inner()));
            }
        }
    }

    /// Whether an exclusive holder is in or waiting to get in: a shared holder that
    /// keeps the gate across several commands lets go when this turns true.
    pub fn exclusive_wanted(&self) -> bool {
        self.exclusive.load(Ordering::Relaxed)
    }

    pub fn exclusive(&self) -> Exclusive<'_> {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.exclusive.store(true, Ordering::SeqCst);
        for stripe in self.stripes.iter() {
            while stripe.load(Ordering::SeqCst) != 0 {
                wait();
            }
        }
        Exclusive {
            gate: self,
            _writer: writer,
        }
    }
}

impl Drop for Shared<'_> {
    fn drop(&mut self) {
        self.stripe.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        self.gate.exclusive.store(false, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Exclusive holders move a unit between two counters in two steps; shared holders
    /// must never see the unit in flight, and no update may be lost.
    #[test]
    fn shared_holders_never_see_an_exclusive_holder_midway() {
        let gate = Arc::new(Gate::default());
        let (a, b) = (
            Arc::new(AtomicU64::new(1_000_000)),
            Arc::new(AtomicU64::new(0)),
        );
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (gate, a, b) = (gate.clone(), a.clone(), b.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        if t % 4 == 0 {
                            let _g = gate.exclusive();
                            a.fetch_sub(1, Ordering::Relaxed);
                            std::hint::spin_loop();
                            b.fetch_add(1, Ordering::Relaxed);
                        } else {
                            let _g = gate.shared();
                            let sum = a.load(Ordering::Relaxed) + b.load(Ordering::Relaxed);
                            assert_eq!(sum, 1_000_000);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(b.load(Ordering::Relaxed), 40_000);
    }
}

/// Shuttle explores interleavings of two shared holders on different stripes (and one
/// on a third that re-enters) against two exclusive holders: no shared holder ever
/// runs while an exclusive one does, and exclusive holders never overlap.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use super::*;
    use shuttle::sync::Arc;

    fn iterations() -> usize {
        std::env::var("SHUTTLE_ITERATIONS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000)
    }

    #[test]
    fn exclusive_holders_run_alone() {
        // PCT runs each thread for long stretches between a few preemptions, which is
        // what it takes for an exclusive holder to get all the way in between a shared
        // holder's check and its entry; a uniformly random schedule rarely does.
        shuttle::check_pct(
            || {
                let gate = Arc::new(Gate::default());
                let shared_inside = Arc::new(AtomicUsize::new(0));
                let exclusive_inside = Arc::new(AtomicUsize::new(0));
                let mut threads = Vec::new();
                for stripe in [0, 1, 2] {
                    let (gate, s, e) = (
                        gate.clone(),
                        shared_inside.clone(),
                        exclusive_inside.clone(),
                    );
                    threads.push(shuttle::thread::spawn(move || {
                        for _ in 0..2 {
                            let _g = gate.shared_on(stripe);
                            s.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(e.load(Ordering::SeqCst), 0, "shared holder inside EXEC");
                            s.fetch_sub(1, Ordering::SeqCst);
                        }
                    }));
                }
                for _ in 0..2 {
                    let (gate, s, e) = (
                        gate.clone(),
                        shared_inside.clone(),
                        exclusive_inside.clone(),
                    );
                    threads.push(shuttle::thread::spawn(move || {
                        let _g = gate.exclusive();
                        assert_eq!(e.fetch_add(1, Ordering::SeqCst), 0, "two exclusive holders");
                        assert_eq!(s.load(Ordering::SeqCst), 0, "EXEC beside a shared holder");
                        shuttle::thread::yield_now();
                        assert_eq!(s.load(Ordering::SeqCst), 0, "EXEC beside a shared holder");
                        e.fetch_sub(1, Ordering::SeqCst);
                    }));
                }
                for t in threads {
                    t.join().unwrap();
                }
            },
            iterations(),
            3,
        );
    }
}
