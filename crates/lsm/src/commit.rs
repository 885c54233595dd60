//! Group commit: writers that arrive while a log write is in progress queue up, and
//! the next of them to get in writes all their batches with one log write and one
//! sync. Under `fsync always` this is what makes many small durable writes affordable.
//!
//! Each writer takes a ticket and appends its batch to the pending group. Whoever finds
//! no leader becomes one: it takes the whole pending group, writes it with the lock
//! released, then marks every ticket in it complete and wakes the waiters. Tickets
//! complete in order, so "my ticket is below `completed`" means "my batch is durable
//! and visible" (or failed with the group).
//!
//! A writer that finds a group being written spins a few microseconds before it
//! sleeps: a group under `fsync everysec` takes a microsecond or two, and sleeping
//! then being woken adds two system calls and a context switch to the wait (with the
//! server's two io threads taking turns, 15% of a SET's CPU went there, and the
//! sleeper woke long after the group was done).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use engine::{Error, WriteBatch};

#[derive(Default)]
pub struct CommitQueue {
    state: Mutex<State>,
    wake: Condvar,
    /// Groups written so far, read without the lock by writers spinning on one.
    groups_done: AtomicU64,
}

/// How long a writer spins on a group in flight before it sleeps: a few log writes.
const SPIN_LIMIT: Duration = Duration::from_micros(10);

/// Spins while `busy` holds, up to [`SPIN_LIMIT`].
fn spin_while(busy: impl Fn() -> bool) {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if !busy() {
                return;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= SPIN_LIMIT {
            return;
        }
    }
}

#[derive(Default)]
struct State {
    pending: WriteBatch,
    /// The first ticket in `pending`; `next_ticket` is one past its last.
    pending_from: u64,
    next_ticket: u64,
    /// Every ticket below this is done.
    completed: u64,
    leading: bool,
    /// Writers asleep on `wake`. A wake-up is a system call even with nobody to wake,
    /// and most groups (one writer, or two io threads taking turns) have no one.
    sleeping: u64,
    /// Groups that failed and still have writers to tell.
    failures: Vec<Failure>,
}

struct Failure {
    tickets: std::ops::Range<u64>,
    error: Error,
    untold: u64,
}

/// What the leader learns about its group.
pub struct Group<'a> {
    pub batch: &'a WriteBatch,
    /// Batches (writers) in the group.
    pub writers: u64,
}

impl CommitQueue {
    /// Commits `batch` through `lead`, which some writer (maybe this one) calls for a
    /// group holding it; returns what `lead` returned for that group.
    pub fn commit(
        &self,
        batch: &WriteBatch,
        lead: impl FnOnce(Group<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.pending.append(batch);
        let mut spun = false;
        loop {
            if ticket < state.completed {
                return state.outcome(ticket);
            }
            if !state.leading {
                return self.lead(state, lead);
            }
            if !spun {
                spun = true;
                let in_flight = self.groups_done.load(Ordering::Acquire);
                drop(state);
                spin_while(|| self.groups_done.load(Ordering::Acquire) == in_flight);
                state = self.lock();
                continue;
            }
            state.sleeping += 1;
            state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            state.sleeping -= 1;
        }
    }

    fn lead(
        &self,
        mut state: MutexGuard<'_, State>,
        lead: impl FnOnce(Group<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        state.leading = true;
        let mut group = std::mem::take(&mut state.pending);
        let tickets = state.pending_from..state.next_ticket;
        state.pending_from = state.next_ticket;
        drop(state);

        // A panic in `lead` must not leave everyone waiting for a leader forever.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lead(Group {
                batch: &group,
                writers: tickets.end - tickets.start,
            })
        }))
        .unwrap_or_else(|_| {
            Err(Error::WritesStopped(
                "a write group's leader panicked".into(),
            ))
        });

        let mut state = self.lock();
        debug_assert_eq!(
            state.completed, tickets.start,
            "groups complete in ticket order"
        );
        state.completed = tickets.end;
        state.leading = false;
        self.groups_done.fetch_add(1, Ordering::Release);
        if let Err(error) = &result {
            let untold = tickets.end - tickets.start - 1;
            if untold > 0 {
                state.failures.push(Failure {
                    tickets,
                    error: error.clone(),
                    untold,
                });
            }
        }
        if state.pending.is_empty() {
            // Hand the buffer back so the next group reuses its allocation.
            group.clear();
            state.pending = group;
        }
        let sleeping = state.sleeping > 0;
        drop(state);
        if sleeping {
            self.wake.notify_all();
        }
        result
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    fn outcome(&mut self, ticket: u64) -> Result<(), Error> {
        let Some(at) = self
            .failures
            .iter()
            .position(|f| f.tickets.contains(&ticket))
        else {
            return Ok(());
        };
        let failure = &mut self.failures[at];
        failure.untold -= 1;
        let error = failure.error.clone();
        if failure.untold == 0 {
            self.failures.swap_remove(at);
        }
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Many writers: every batch is applied exactly once, in some group, and groups
    /// form (fewer leader calls than writes) while the leader is slow.
    #[test]
    fn every_batch_lands_once_and_groups_form() {
        let queue = CommitQueue::default();
        let applied = Mutex::new(Vec::new());
        let groups = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let (queue, applied, groups) = (&queue, &applied, &groups);
                s.spawn(move || {
                    for i in 0..200u8 {
                        let mut batch = WriteBatch::new();
                        batch.put(&[t, i], b"");
                        queue
                            .commit(&batch, |group| {
                                groups.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                let mut applied = applied.lock().unwrap();
                                for op in group.batch.iter() {
                                    applied.push(op.key().to_vec());
                                }
                                assert_eq!(group.writers, u64::from(group.batch.len()));
                                Ok(())
                            })
                            .unwrap();
                        // Returned means applied.
                        assert!(applied.lock().unwrap().contains(&vec![t, i]));
                    }
                });
            }
        });
        let mut applied = applied.into_inner().unwrap();
        assert_eq!(applied.len(), 1600);
        applied.sort();
        applied.dedup();
        assert_eq!(applied.len(), 1600);
        assert!(groups.load(Ordering::Relaxed) < 1600);
    }

    /// A failed group's error reaches every writer in it, and later groups succeed.
    #[test]
    fn a_failed_group_fails_all_its_writers() {
        let queue = CommitQueue::default();
        let fail_next = std::sync::atomic::AtomicBool::new(false);
        let (ok, failed) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for t in 0..6u8 {
                let (queue, fail_next, ok, failed) = (&queue, &fail_next, &ok, &failed);
                s.spawn(move || {
                    for i in 0..100u8 {
                        let mut batch = WriteBatch::new();
                        batch.put(&[t, i], b"");
                        let result = queue.commit(&batch, |group| {
                            std::thread::sleep(std::time::Duration::from_micros(100));
                            if fail_next.swap(i % 7 == 0, Ordering::Relaxed) {
                                return Err(Error::InvalidArgument(format!(
                                    "{} writers",
                                    group.writers
                                )));
                            }
                            Ok(())
                        });
                        match result {
                            Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                            Err(Error::InvalidArgument(_)) => {
                                failed.fetch_add(1, Ordering::Relaxed)
                            }
                            Err(other) => panic!("unexpected {other}"),
                        };
                    }
                });
            }
        });
        assert_eq!(
            ok.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed),
            600
        );
        assert!(failed.load(Ordering::Relaxed) > 0);
        assert!(queue.lock().failures.is_empty(), "every failure was told");
    }
}
