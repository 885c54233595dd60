//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN and the like) and the writes that
//! wake them.
//!
//! A blocked client registers its keys with a [`Notify`] of its own, then tries its
//! command again, and waits only if that try finds nothing. Clients are served in the
//! order they blocked, as in Redis: a write to a key calls [`BlockedKeys::written`],
//! which wakes the client that has waited longest on it; that client tries again and,
//! served or not, passes the turn to the next client on each of its keys
//! ([`BlockedKeys::pass_on`], or [`BlockedKeys::unregister`] once it stops waiting), so
//! the waiters try one after the other, oldest first, until the queue ends.
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

    /// Client `id` stops waiting (served, timed out, unblocked or gone); the client
    /// after it on each key gets its turn.
    pub fn unregister(&self, id: u64, keys: &[Vec<u8>]) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            let Some(list) = waiters.get_mut(key) else {
                continue;
            };
            if let Some(at) = list.iter().position(|(who, _)| *who == id) {
                // `remove`, not `swap_remove`: the queue stays in blocking order.
                list.remove(at);
                self.registered.fetch_sub(1, Ordering::SeqCst);
                if let Some((_, next)) = list.get(at) {
                    next.notify_one();
                }
            }
            if list.is_empty() {
                waiters.remove(key);
            }
        }
    }

    /// Client `id` tried again after a wake-up and still waits: the client after it
    /// on each key gets its turn.
    pub fn pass_on(&self, id: u64, keys: &[Vec<u8>]) {
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for list in keys.iter().filter_map(|key| waiters.get(key)) {
            if let Some(at) = list.iter().position(|(who, _)| *who == id) {
                if let Some((_, next)) = list.get(at + 1) {
                    next.notify_one();
                }
            }
        }
    }

    /// Called after a write to `key` is visible and a SeqCst fence: wakes the client
    /// that has waited longest on it.
    pub fn written(&self, key: &[u8]) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, first)) = waiters.get(key).and_then(|list| list.first()) {
            first.notify_one();
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

    fn woken(n: &Notify) -> bool {
        let f = n.notified();
        tokio::pin!(f);
        // A stored permit completes the future at once.
        f.as_mut().enable()
    }

    #[test]
    fn a_write_wakes_the_longest_waiting_client_on_its_key() {
        let blocked = BlockedKeys::default();
        let (a, b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        blocked.register(1, &[b"x".to_vec(), b"y".to_vec()], &a);
        blocked.register(2, &[b"y".to_vec()], &b);
        assert_eq!(blocked.keys(), 2);
        blocked.written(b"x");
        assert!(woken(&a), "x's waiter keeps a permit");
        assert!(!woken(&b));
        blocked.written(b"y");
        assert!(woken(&a) && !woken(&b), "y's oldest waiter first");
        blocked.pass_on(1, &[b"x".to_vec(), b"y".to_vec()]);
        assert!(woken(&b), "then the next, once the first has tried");
        blocked.unregister(1, &[b"x".to_vec(), b"y".to_vec()]);
        assert!(woken(&b), "the first leaving hands the turn on");
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
