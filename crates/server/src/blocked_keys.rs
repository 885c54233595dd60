//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN and the like) and the writes that
//! wake them.
//!
//! A blocked client registers its keys with a [`Notify`] of its own, then tries its
//! command again, and waits only if that try finds nothing. A write to a key calls
//! [`BlockedKeys::written`], which wakes every client waiting on it; each woken client
//! tries again (the first to run wins the element, as Redis serves the longest waiting
//! first only approximately here) and waits again if it lost.
//!
//! No wake-up is lost: `Notify::notify_one` keeps a permit for a client not yet
//! waiting, and registration and the writer's check are ordered by SeqCst fences (the
//! writer's is the one in `Db::written`), so either the writer sees the registration or
//! the client's next try sees the write.

use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The clients waiting on one key: their ids and how to wake them.
type Waiters = Vec<(u64, Arc<Notify>)>;

#[derive(Default)]
pub struct BlockedKeys {
    /// Registrations, so a write pays one load when nobody is blocked.
    registered: AtomicUsize,
    waiters: Mutex<HashMap<Vec<u8>, Waiters>>,
}

impl BlockedKeys {
    /// Client `id` waits on `keys`; `wake` is notified when one is written.
    pub fn register(&self, id: u64, keys: &[Vec<u8>], wake: &Arc<Notify>) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            waiters
                .entry(key.clone())
                .or_default()
                .push((id, wake.clone()));
            self.registered.fetch_add(1, Ordering::SeqCst);
        }
        drop(waiters);
        // Pairs with the writer's fence: the client's next look at the keys comes after.
        fence(Ordering::SeqCst);
    }

    pub fn unregister(&self, id: u64, keys: &[Vec<u8>]) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            let Some(list) = waiters.get_mut(key) else {
                continue;
            };
            if let Some(at) = list.iter().position(|(who, _)| *who == id) {
                list.swap_remove(at);
                self.registered.fetch_sub(1, Ordering::SeqCst);
            }
            if list.is_empty() {
                waiters.remove(key);
            }
        }
    }

    /// Called after a write to `key` is visible and a SeqCst fence.
    pub fn written(&self, key: &[u8]) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for (_, wake) in waiters.get(key).into_iter().flatten() {
            wake.notify_one();
        }
    }

    /// Keys some client waits on.
    #[cfg(test)]
    fn keys(&self) -> usize {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_wakes_exactly_the_clients_waiting_on_its_key() {
        let blocked = BlockedKeys::default();
        let (a, b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        blocked.register(1, &[b"x".to_vec(), b"y".to_vec()], &a);
        blocked.register(2, &[b"y".to_vec()], &b);
        assert_eq!(blocked.keys(), 2);
        blocked.written(b"x");
        let woken = |n: &Notify| {
            let f = n.notified();
            tokio::pin!(f);
            // A stored permit completes the future at once.
            f.as_mut().enable()
        };
        assert!(woken(&a), "x's waiter keeps a permit");
        assert!(!woken(&b));
        blocked.unregister(1, &[b"x".to_vec(), b"y".to_vec()]);
        blocked.written(b"y");
        assert!(!woken(&a), "an unregistered client is not woken");
        assert!(woken(&b));
        blocked.unregister(2, &[b"y".to_vec()]);
        assert_eq!(
            (blocked.keys(), blocked.registered.load(Ordering::SeqCst)),
            (0, 0)
        );
    }
}
