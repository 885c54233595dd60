//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN and the like) and the writes that
//! wake them.
//!
//! A blocked client registers its keys with a [`Wake`] of its own, then tries its
//! command again, and waits only if that try finds nothing. Clients are served in the
//! order they blocked, as in Redis: a write to a key calls [`BlockedKeys::written`],
//! which hands a turn to the client that has waited longest on it; that client tries
//! again and, served or not, passes the turn to the next client on each of its keys
//! ([`BlockedKeys::pass_on`], or [`BlockedKeys::unregister`] once it stops waiting), so
//! the waiters try one after the other, oldest first, until the queue ends.
//!
//! No wake-up is lost: `Notify::notify_one` keeps a permit for a client not yet
//! waiting, and registration and the writer's check are ordered by SeqCst fences (the
//! writer's is the one in `Db::written`), so either the writer sees the registration or
//! the client's next try sees the write.
//!
//! Redis serves the clients a command unblocked before it replies to that command, so
//! a client that pushes and then reads the list sees it after the waiters popped
//! (Redis's own tests depend on it). Here the woken clients run on their own tasks, so
//! the writer's connection waits for them: every turn handed out and not yet tried is
//! counted, a write that hands one marks its thread ([`woke_a_client`]), and that
//! writer's connection goes on only once the count is back at zero
//! ([`BlockedKeys::served`]), chains included (a woken BLMOVE's push wakes the next
//! client before its own turn ends). The count is one for the server: a writer also
//! waits for turns other writers handed out meanwhile, so writers that wake clients
//! move in rounds (each hands out turns, then all wait for the tries), as Redis's one
//! thread serves the woken clients between commands. A write that wakes nobody never
//! waits.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// The longest a writer waits for the clients it woke to try again: they normally
/// take microseconds, but one may be held up (a long script holding the gate, a
/// client paused), and the writer's reply must not wait on it for ever.
pub const SERVED_WITHIN: Duration = Duration::from_millis(200);

thread_local! {
    /// Whether a write on this thread handed a turn to a blocked client since the last
    /// [`woke_a_client`]. Commands run synchronously on their connection's thread, so
    /// the connection reads it right after the command.
    static WOKE: Cell<bool> = const { Cell::new(false) };
}

/// Whether a write on this thread woke a blocked client since the last call.
pub fn woke_a_client() -> bool {
    WOKE.with(|w| w.replace(false))
}

/// How a blocked client is woken, and whether it holds a turn not yet tried.
#[derive(Default)]
pub struct Wake {
    notify: Notify,
    turn: AtomicBool,
}

impl Wake {
    /// Completes once the client is handed a turn (at once if it was handed one
    /// since the last wait).
    pub async fn notified(&self) {
        self.notify.notified().await
    }
}

/// The clients waiting on one key: their ids and how to wake them.
type Waiters = Vec<(u64, Arc<Wake>)>;

#[derive(Default)]
pub struct BlockedKeys {
    /// Registrations, so a write pays one load when nobody is blocked.
    registered: AtomicUsize,
    waiters: Mutex<HashMap<Vec<u8>, Waiters>>,
    /// Turns handed out and not yet tried.
    turns: AtomicUsize,
    /// Notified when `turns` comes back to zero.
    quiet: Notify,
}

impl BlockedKeys {
    /// Client `id` waits on `keys`; `wake` is notified when one is written.
    pub fn register(&self, id: u64, keys: &[Vec<u8>], wake: &Arc<Wake>) {
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
    /// after it on each key gets its turn, and a turn `wake` was handed meanwhile is
    /// dropped.
    pub fn unregister(&self, id: u64, keys: &[Vec<u8>], wake: &Wake) {
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
                    self.hand_turn(next);
                }
            }
            if list.is_empty() {
                waiters.remove(key);
            }
        }
        drop(waiters);
        // After the turns handed on: the count does not pass through zero early.
        self.try_ended(self.try_begins(wake));
    }

    /// Client `id` tried again after a wake-up and still waits: the client after it
    /// on each key gets its turn.
    pub fn pass_on(&self, id: u64, keys: &[Vec<u8>]) {
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for list in keys.iter().filter_map(|key| waiters.get(key)) {
            if let Some(at) = list.iter().position(|(who, _)| *who == id) {
                if let Some((_, next)) = list.get(at + 1) {
                    self.hand_turn(next);
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
            self.hand_turn(first);
            WOKE.with(|w| w.set(true));
        }
    }

    /// Counts a turn for `wake` unless it holds one already, and wakes it.
    fn hand_turn(&self, wake: &Wake) {
        if !wake.turn.swap(true, Ordering::SeqCst) {
            self.turns.fetch_add(1, Ordering::SeqCst);
        }
        wake.notify.notify_one();
    }

    /// The client of `wake` starts a try of its command: whether it holds a turn,
    /// which [`BlockedKeys::try_ended`] gives back once the try is done. A turn handed
    /// during the try is counted anew, and the client tries again for it.
    pub fn try_begins(&self, wake: &Wake) -> bool {
        wake.turn.swap(false, Ordering::SeqCst)
    }

    /// A try begun by [`BlockedKeys::try_begins`] is done, its writes made and the
    /// turns it handed on counted.
    pub fn try_ended(&self, had_turn: bool) {
        if had_turn && self.turns.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.quiet.notify_waiters();
        }
    }

    /// Completes once every turn handed out so far has been tried (the clients a
    /// write woke have run their commands again, and those their writes woke), or
    /// after `within`.
    pub async fn served(&self, within: Duration) {
        let wait = async {
            loop {
                let quiet = self.quiet.notified();
                tokio::pin!(quiet);
                // Registered before the count is read, so a drop to zero after the
                // read still completes it.
                quiet.as_mut().enable();
                if self.turns.load(Ordering::SeqCst) == 0 {
                    return;
                }
                quiet.await;
            }
        };
        let _ = tokio::time::timeout(within, wait).await;
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

    fn woken(w: &Wake) -> bool {
        let f = w.notify.notified();
        tokio::pin!(f);
        // A stored permit completes the future at once.
        f.as_mut().enable()
    }

    fn turns(blocked: &BlockedKeys) -> usize {
        blocked.turns.load(Ordering::SeqCst)
    }

    #[test]
    fn a_write_wakes_the_longest_waiting_client_on_its_key() {
        let blocked = BlockedKeys::default();
        let (a, b) = (Arc::new(Wake::default()), Arc::new(Wake::default()));
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
        blocked.unregister(1, &[b"x".to_vec(), b"y".to_vec()], &a);
        assert!(woken(&b), "the first leaving hands the turn on");
        blocked.written(b"y");
        assert!(!woken(&a), "an unregistered client is not woken");
        assert!(woken(&b));
        blocked.unregister(2, &[b"y".to_vec()], &b);
        assert_eq!(
            (blocked.keys(), blocked.registered.load(Ordering::SeqCst)),
            (0, 0)
        );
    }

    #[test]
    fn every_turn_handed_out_is_counted_until_it_is_tried() {
        let blocked = BlockedKeys::default();
        let (a, b) = (Arc::new(Wake::default()), Arc::new(Wake::default()));
        blocked.register(1, &[b"x".to_vec()], &a);
        blocked.register(2, &[b"x".to_vec()], &b);
        woke_a_client();
        blocked.written(b"x");
        blocked.written(b"x");
        assert!(woke_a_client(), "the writer's thread is marked");
        assert!(!woke_a_client(), "once");
        assert_eq!(turns(&blocked), 1, "a turn not yet tried is counted once");
        let had = blocked.try_begins(&a);
        assert!(had);
        // A write during the try: the try may have read before it, so it counts anew.
        blocked.written(b"x");
        assert!(woke_a_client());
        assert_eq!(turns(&blocked), 2);
        blocked.pass_on(1, &[b"x".to_vec()]);
        blocked.try_ended(had);
        assert_eq!(turns(&blocked), 2, "a's second turn and b's");
        // b is served and leaves: its turn goes to a, which already holds one.
        let had = blocked.try_begins(&b);
        blocked.unregister(2, &[b"x".to_vec()], &b);
        blocked.try_ended(had);
        assert_eq!(turns(&blocked), 1);
        // a times out holding its turn: leaving gives it back.
        blocked.unregister(1, &[b"x".to_vec()], &a);
        assert_eq!(turns(&blocked), 0);
        assert!(!woke_a_client(), "turns handed on are not a write's");
    }

    #[test]
    fn served_waits_for_the_last_turn_or_gives_up() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let blocked = Arc::new(BlockedKeys::default());
        let a = Arc::new(Wake::default());
        blocked.register(1, &[b"x".to_vec()], &a);
        blocked.written(b"x");
        runtime.block_on(async {
            // Nobody tries: the wait ends by its bound, the turn still out.
            blocked.served(Duration::from_millis(10)).await;
            assert_eq!(turns(&blocked), 1);
            let client = {
                let (blocked, a) = (blocked.clone(), a.clone());
                tokio::spawn(async move {
                    a.notified().await;
                    let had = blocked.try_begins(&a);
                    tokio::task::yield_now().await;
                    blocked.unregister(1, &[b"x".to_vec()], &a);
                    blocked.try_ended(had);
                })
            };
            blocked.served(Duration::from_secs(600)).await;
            assert_eq!(turns(&blocked), 0, "served returned before the try ended");
            client.await.unwrap();
        });
    }
}
