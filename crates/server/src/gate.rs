//! The gate that makes EXEC atomic without putting a lock on every command's path.
//!
//! Every command holds the gate shared while it runs; EXEC holds it exclusive. Shared
//! holders count themselves on a per-thread stripe (its own cache line), so commands on
//! different threads never touch the same memory; only EXEC, which is rare, pays:
//! it raises a flag and waits until every stripe drains. Holders never await while
//! holding the gate, so the wait is as short as the commands in flight.
//!
//! The protocol is Dekker's: a shared holder increments its stripe, then reads the
//! flag; EXEC sets the flag, then reads the stripes. With both sides sequentially
//! consistent, at least one of them sees the other, so a command and EXEC never run
//! at once.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

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
        let stripe = &*self.stripes[STRIPE.with(Cell::get)];
        loop {
            stripe.fetch_add(1, Ordering::SeqCst);
            if !self.exclusive.load(Ordering::SeqCst) {
                return Shared { stripe };
            }
            stripe.fetch_sub(1, Ordering::SeqCst);
            while self.exclusive.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
    }

    pub fn exclusive(&self) -> Exclusive<'_> {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.exclusive.store(true, Ordering::SeqCst);
        for stripe in self.stripes.iter() {
            while stripe.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
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

#[cfg(test)]
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
