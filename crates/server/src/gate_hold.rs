//! The transaction gate as one connection holds it across the pipelined requests of a
//! read, instead of taking it anew for each (seed 002's opportunistic batching: pay
//! for synchronisation once per batch). Two threads running MSETs, which run alone,
//! handed the gate to each other through a futex wake for every command, a fifth of
//! the server's CPU.
//!
//! A hold never outlives the batch: the connection gives it up before it waits on
//! anything (a flush, CLIENT PAUSE, WAIT, the next read). A shared hold also gives way
//! between commands as soon as an exclusive holder wants in, so EXEC and MSET on other
//! connections wait for one command, not for a whole pipeline. An exclusive hold runs
//! on across consecutive commands that must run alone, as Redis runs a client's
//! whole pipeline before turning to the next client; a command that can share ends it.
//!
//! The script thread's hold is a long one (see `script_thread.rs`): while a script
//! runs, a connection's hold is refused at once (`false`), and the connection waits
//! for the script's end without holding up its thread's other connections.

use engine::gate::{Exclusive, Gate, LongExclusive, Shared};

pub struct GateHold<'a> {
    gate: &'a Gate,
    held: Held<'a>,
    /// Exclusive holds are long ones (the script thread's).
    long: bool,
}

/// The guards are kept for what dropping them does.
enum Held<'a> {
    Nothing,
    Shared { _guard: Shared<'a> },
    Exclusive { _guard: Exclusive<'a> },
    Long { _guard: LongExclusive<'a> },
}

impl<'a> GateHold<'a> {
    pub fn new(gate: &'a Gate) -> GateHold<'a> {
        GateHold {
            gate,
            held: Held::Nothing,
            long: false,
        }
    }

    /// The script thread's hold, whose exclusive holds are long ones.
    pub fn long(gate: &'a Gate) -> GateHold<'a> {
        GateHold {
            long: true,
            ..GateHold::new(gate)
        }
    }

    /// Holds the gate shared for a command that may run beside others; `false` if a
    /// script holds it.
    #[must_use]
    pub fn shared(&mut self) -> bool {
        if !matches!(self.held, Held::Shared { .. }) {
            // Given up rather than kept: other threads' commands may run meanwhile.
            self.held = Held::Nothing;
            match self.gate.try_shared() {
                Some(guard) => self.held = Held::Shared { _guard: guard },
                None => return false,
            }
        }
        true
    }

    /// Holds the gate exclusively, for a command that must run alone; `false` if a
    /// script holds it.
    #[must_use]
    pub fn exclusive(&mut self) -> bool {
        if matches!(self.held, Held::Exclusive { .. } | Held::Long { .. }) {
            return true;
        }
        // A shared hold of our own would keep `exclusive` waiting for ever.
        self.held = Held::Nothing;
        if self.long {
            self.held = Held::Long {
                _guard: self.gate.exclusive_long(),
            };
            return true;
        }
        match self.gate.try_exclusive() {
            Some(guard) => self.held = Held::Exclusive { _guard: guard },
            None => return false,
        }
        true
    }

    /// Holds the gate either way, an exclusive hold kept, else shared: for a write that
    /// may run beside other commands but not inside another's transaction or script;
    /// `false` if a script holds it.
    #[must_use]
    pub fn any(&mut self) -> bool {
        matches!(self.held, Held::Exclusive { .. } | Held::Long { .. }) || self.shared()
    }

    /// Lets go, for a command that takes the gate itself (EXEC) or before a wait.
    pub fn release(&mut self) {
        self.held = Held::Nothing;
    }

    /// Between commands: a shared hold lets an exclusive holder that wants in go first.
    pub fn yield_to_exclusive(&mut self) {
        if matches!(self.held, Held::Shared { .. }) && self.gate.exclusive_wanted() {
            self.held = Held::Nothing;
        }
    }

    #[cfg(test)]
    fn is_held(&self) -> bool {
        !matches!(self.held, Held::Nothing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_shared_hold_becomes_exclusive_without_waiting_on_itself() {
        let gate = Gate::default();
        let mut hold = GateHold::new(&gate);
        assert!(hold.shared());
        assert!(hold.shared());
        assert!(hold.exclusive());
        assert!(hold.exclusive());
        assert!(hold.shared());
        // `any` keeps what is held, an exclusive hold as it is.
        assert!(hold.any());
        assert!(hold.exclusive());
        assert!(hold.any());
        assert!(matches!(hold.held, Held::Exclusive { .. }));
        hold.release();
        assert!(hold.any());
        assert!(matches!(hold.held, Held::Shared { .. }));
        hold.release();
        assert!(!hold.is_held());
        // Nothing is left held: another exclusive holder gets straight in.
        drop(gate.exclusive());
    }

    #[test]
    fn a_shared_hold_gives_way_to_an_exclusive_holder_between_commands() {
        let gate = Arc::new(Gate::default());
        let mut hold = GateHold::new(&gate);
        assert!(hold.shared());
        let got_in = Arc::new(AtomicBool::new(false));
        let other = {
            let (gate, got_in) = (gate.clone(), got_in.clone());
            std::thread::spawn(move || {
                let _alone = gate.exclusive();
                got_in.store(true, Ordering::SeqCst);
            })
        };
        while !gate.exclusive_wanted() {
            std::thread::yield_now();
        }
        // Still held: the other thread waits however long this takes.
        std::thread::sleep(Duration::from_millis(20));
        assert!(!got_in.load(Ordering::SeqCst));
        hold.yield_to_exclusive();
        assert!(!hold.is_held());
        other.join().unwrap();
        assert!(got_in.load(Ordering::SeqCst));
    }

    #[test]
    fn a_long_hold_refuses_others_at_once_until_it_ends() {
        let gate = Gate::default();
        let mut script = GateHold::long(&gate);
        let mut other = GateHold::new(&gate);
        assert!(script.exclusive());
        assert!(!other.shared());
        assert!(!other.exclusive());
        assert!(!other.is_held());
        script.release();
        assert!(other.exclusive());
        other.release();
        assert!(other.shared());
    }

    #[test]
    fn commands_under_held_gates_never_see_an_exclusive_run_half_done() {
        // Threads run "pipelines" of commands under one hold each: exclusive ones move
        // a unit between two counters in two steps, shared ones check the sum. A hold
        // that let a shared command in beside an exclusive one would see a unit missing.
        // Thread 0 holds as the script thread does (long exclusive holds); the others
        // try again when it refuses them, as a connection does after its wait.
        let gate = Arc::new(Gate::default());
        let (a, b) = (
            Arc::new(AtomicU64::new(1_000_000)),
            Arc::new(AtomicU64::new(0)),
        );
        let threads: Vec<_> = (0..6u64)
            .map(|t| {
                let (gate, a, b) = (gate.clone(), a.clone(), b.clone());
                std::thread::spawn(move || {
                    let mut moved = 0;
                    for batch in 0..2_000u64 {
                        let mut hold = if t == 0 {
                            GateHold::long(&gate)
                        } else {
                            GateHold::new(&gate)
                        };
                        for i in 0..8 {
                            if (t + batch + i) % 3 == 0 {
                                while !hold.exclusive() {
                                    std::thread::yield_now();
                                }
                                a.fetch_sub(1, Ordering::Relaxed);
                                std::hint::spin_loop();
                                b.fetch_add(1, Ordering::Relaxed);
                                moved += 1;
                            } else {
                                while !hold.shared() {
                                    std::thread::yield_now();
                                }
                                let sum = a.load(Ordering::Relaxed) + b.load(Ordering::Relaxed);
                                assert_eq!(sum, 1_000_000);
                            }
                            hold.yield_to_exclusive();
                        }
                    }
                    moved
                })
            })
            .collect();
        let moved: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(b.load(Ordering::Relaxed), moved);
        assert_eq!(a.load(Ordering::Relaxed) + moved, 1_000_000);
    }
}
