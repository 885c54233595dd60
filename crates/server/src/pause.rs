//! CLIENT PAUSE: holds clients' commands (all of them, or only writes) until a
//! deadline or CLIENT UNPAUSE, as Redis does during a failover.
//!
//! Every command checks whether a pause is on, so the check is one relaxed load of a
//! word that only PAUSE and UNPAUSE write: no lock, and no cache line that the io
//! threads write to each other.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::entry::now_ms;

#[derive(Default)]
pub struct Pause {
    /// Unix milliseconds the pause ends at; 0 when none is on.
    until_ms: AtomicU64,
    /// Every command is held, not only writes.
    all: AtomicBool,
    unpaused: Notify,
}

impl Pause {
    /// Pauses until `until_ms` (a longer pause already on keeps its end) holding all
    /// commands or only writes; the latest call sets which.
    pub fn pause(&self, until_ms: u64, all: bool) {
        self.all.store(all, Ordering::Relaxed);
        self.until_ms.fetch_max(until_ms.max(1), Ordering::Release);
    }

    pub fn unpause(&self) {
        self.until_ms.store(0, Ordering::Release);
        self.unpaused.notify_waiters();
    }

    /// How long a command must still wait (`writes` says whether it writes, asked only
    /// while a pause is on), or `None` if it may run now.
    pub fn holds(&self, writes: impl FnOnce() -> bool) -> Option<Duration> {
        if self.until_ms.load(Ordering::Relaxed) == 0
            || !(self.all.load(Ordering::Relaxed) || writes())
        {
            return None;
        }
        self.remaining()
    }

    /// Whether a pause is on.
    pub fn is_on(&self) -> bool {
        self.remaining().is_some()
    }

    /// How long the pause on lasts yet; `None` if none is on.
    fn remaining(&self) -> Option<Duration> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == 0 {
            return None;
        }
        let now = now_ms();
        if now >= until {
            // Ended by the clock: clear it so later checks take the fast path, unless
            // a new pause replaced this one meanwhile.
            let _ = self
                .until_ms
                .compare_exchange(until, 0, Ordering::AcqRel, Ordering::Relaxed);
            return None;
        }
        Some(Duration::from_millis(until - now))
    }

    /// Waits until `wait` has passed or the pause is lifted, whichever is first.
    pub async fn wait(&self, wait: Duration) {
        let unpaused = self.unpaused.notified();
        tokio::pin!(unpaused);
        // Registered before re-checking, so an UNPAUSE in between is not missed.
        unpaused.as_mut().enable();
        if self.until_ms.load(Ordering::Acquire) == 0 {
            return;
        }
        tokio::select! {
            _ = unpaused => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}
