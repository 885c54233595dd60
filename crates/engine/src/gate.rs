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
//!
//! A long exclusive holder (a Lua script, which may run for seconds and must be
//! killable meanwhile) does not keep `writer` locked, so no one sleeps on it: it raises
//! `long` before `exclusive`, and a caller of the `try_` forms that finds both up is
//! told so at once and waits its own way (a connection awaits the script's end without
//! holding up the other connections of its thread).

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
    /// The exclusive holder is a long one, which does not hold `writer` while it runs.
    long: AtomicBool,
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

pub struct LongExclusive<'a> {
    gate: &'a Gate,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = Cell::new(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            exclusive: AtomicBool::new(false),
            long: AtomicBool::new(false),
            writer: Mutex::new(()),
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }
}

impl Gate {
    /// Holds the gate shared, waiting for any exclusive holder, a long one included
    /// (for threads that serve no connections, such as active expiry's).
    pub fn shared(&self) -> Shared<'_> {
        self.shared_on(STRIPE.with(Cell::get), true)
            .expect("waits out long holders")
    }

    /// Holds the gate shared; `None` at once if a long exclusive holder is in.
    pub fn try_shared(&self) -> Option<Shared<'_>> {
        self.shared_on(STRIPE.with(Cell::get), false)
    }

    /// [`Gate::shared`] counting on a given stripe.
    fn shared_on(&self, stripe: usize, wait_long: bool) -> Option<Shared<'_>> {
        let stripe = &*self.stripes[stripe % STRIPES];
        loop {
            stripe.fetch_add(1, Ordering::SeqCst);
            if !self.exclusive.load(Ordering::SeqCst) {
                return Some(Shared { stripe });
            }
            stripe.fetch_sub(1, Ordering::SeqCst);
            // `long` goes up before `exclusive`: having seen a long holder's
            // `exclusive`, this sees its `long` (or, if it has left since, finds
            // `writer` free below).
            if self.long.load(Ordering::SeqCst) {
                if !wait_long {
                    return None;
                }
                wait_for_long();
            } else if self.exclusive.load(Ordering::SeqCst) {
                // The exclusive holder keeps `writer` until it is done: sleeping on
                // that lock, rather than spinning, leaves this core to it while a long
                // one (an MSET of many keys, FLUSHALL) runs.
                drop(self.lock_writer());
            }
        }
    }

    /// Whether an exclusive holder is in or waiting to get in: a shared holder that
    /// keeps the gate across several commands lets go when this turns true.
    pub fn exclusive_wanted(&self) -> bool {
        self.exclusive.load(Ordering::Relaxed)
    }

    /// Holds the gate exclusively, waiting for any other holder, a long one included.
    pub fn exclusive(&self) -> Exclusive<'_> {
        self.exclusive_inner(true).expect("waits out long holders")
    }

    /// Holds the gate exclusively; `None` at once if a long exclusive holder is in.
    pub fn try_exclusive(&self) -> Option<Exclusive<'_>> {
        self.exclusive_inner(false)
    }

    fn exclusive_inner(&self, wait_long: bool) -> Option<Exclusive<'_>> {
        loop {
            let writer = self.lock_writer();
            // A long holder raised `long` under `writer`, so it is seen here.
            if !self.long.load(Ordering::SeqCst) {
                self.enter();
                return Some(Exclusive {
                    gate: self,
                    _writer: writer,
                });
            }
            drop(writer);
            if !wait_long {
                return None;
            }
            wait_for_long();
        }
    }

    /// Holds the gate exclusively without keeping `writer`, for a holder that may stay
    /// for long: others are not put to sleep on it but told (the `try_` forms).
    pub fn exclusive_long(&self) -> LongExclusive<'_> {
        loop {
            let writer = self.lock_writer();
            if !self.long.load(Ordering::SeqCst) {
                self.long.store(true, Ordering::SeqCst);
                self.enter();
                drop(writer);
                return LongExclusive { gate: self };
            }
            drop(writer);
            wait_for_long();
        }
    }

    /// Raises the flag and waits for the shared holders to drain; `writer` is held.
    fn enter(&self) {
        self.exclusive.store(true, Ordering::SeqCst);
        for stripe in self.stripes.iter() {
            while stripe.load(Ordering::SeqCst) != 0 {
                wait();
            }
        }
    }

    fn lock_writer(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A blocking caller's wait for a long holder to leave: it holds no lock to sleep on,
/// and such a wait is rare (threads that serve no connections).
fn wait_for_long() {
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
    #[cfg(not(feature = "shuttle"))]
    std::thread::sleep(std::time::Duration::from_millis(1));
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

impl Drop for LongExclusive<'_> {
    fn drop(&mut self) {
        // Under `writer`, so an exclusive candidate that found `long` up and let
        // `writer` go finds both down when it next takes it.
        let _writer = self.gate.lock_writer();
        self.gate.exclusive.store(false, Ordering::SeqCst);
        self.gate.long.store(false, Ordering::SeqCst);
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
/// on a third that re-enters) against two exclusive holders, one of them long: no
/// shared holder ever runs while an exclusive one does, and exclusive holders never
/// overlap.
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
                            // The third holder waits out long holders as active expiry
                            // does; the others are refused and try again.
                            let _g = loop {
                                match gate.shared_on(stripe, stripe == 2) {
                                    Some(g) => break g,
                                    None => shuttle::thread::yield_now(),
                                }
                            };
                            s.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(e.load(Ordering::SeqCst), 0, "shared holder inside EXEC");
                            s.fetch_sub(1, Ordering::SeqCst);
                        }
                    }));
                }
                for long in [false, true] {
                    let (gate, s, e) = (
                        gate.clone(),
                        shared_inside.clone(),
                        exclusive_inside.clone(),
                    );
                    threads.push(shuttle::thread::spawn(move || {
                        let inside = || {
                            assert_eq!(
                                e.fetch_add(1, Ordering::SeqCst),
                                0,
                                "two exclusive holders"
                            );
                            assert_eq!(s.load(Ordering::SeqCst), 0, "EXEC beside a shared holder");
                            shuttle::thread::yield_now();
                            assert_eq!(s.load(Ordering::SeqCst), 0, "EXEC beside a shared holder");
                            e.fetch_sub(1, Ordering::SeqCst);
                        };
                        if long {
                            let _g = gate.exclusive_long();
                            inside();
                        } else {
                            // As a connection: refused while a long holder is in, it
                            // tries again.
                            let _g = loop {
                                match gate.try_exclusive() {
                                    Some(g) => break g,
                                    None => shuttle::thread::yield_now(),
                                }
                            };
                            inside();
                        }
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
