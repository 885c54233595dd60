//! Client-side caching (CLIENT TRACKING), as Redis 6+ does it: a client that turns
//! tracking on is told, by an `invalidate` push, when a key it may have cached
//! changes, so it can keep hot keys in its own memory.
//!
//! Two modes, as in Redis:
//! - default: the server remembers, per key, which tracking clients read it (the
//!   table). A write to the key sends each of them one `invalidate [key]` and forgets
//!   the key, until one of them reads it again. OPTIN / OPTOUT with CLIENT CACHING
//!   choose which reads are remembered.
//! - BCAST: nothing is remembered; a client subscribes to key prefixes and hears of
//!   every change under them. Changes are batched per prefix and sent when the
//!   command that made them ends ([`Tracking::flush_broadcasts`]), so an MSET or EXEC
//!   sends one message per prefix.
//!
//! A message goes to the client itself if it speaks RESP3, or to the client it
//! redirects to (REDIRECT): as a push if that one speaks RESP3, as a message on
//! `__redis__:invalidate` if it speaks RESP2 and subscribed to anything. RESP2
//! without redirection gets nothing, as in Redis. A redirection to a client that has left is reported
//! once per message as `tracking-redir-broken` (RESP3 only).
//!
//! Races: a read is remembered before it reads the store, and a write is
//! announced after the store holds it. So a read that missed a concurrent write
//! is always followed by that write's invalidation, and since a connection writes
//! what it was sent only after the replies of the requests it is serving, the
//! invalidation reaches the client after the stale reply, never before it.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use resp::{Frame, Protocol};

use crate::clients::{Client, OutputLimit};

/// How a client asked to be told of changes (CLIENT TRACKING ON's options).
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct Options {
    /// The client that receives the messages; 0: the tracking client itself.
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    /// Not told of its own writes.
    pub noloop: bool,
    /// BCAST's prefixes, in the order given; empty with BCAST means every key.
    pub prefixes: Vec<Vec<u8>>,
}

struct Tracker {
    client: Arc<Client>,
    options: Options,
    redirect_to: Option<Arc<Client>>,
    /// The redirection's target has left (CLIENT TRACKINGINFO's `broken_redirect`).
    broken: AtomicBool,
}

/// A BCAST prefix: who subscribed, and the keys changed under it since the last
/// flush, each with the client that changed it (0: none, as active expiry).
#[derive(Default)]
struct Prefix {
    clients: Vec<u64>,
    changed: Vec<(Vec<u8>, u64)>,
}

const STRIPES: usize = 64;

/// One stripe of the table: remembered keys and the clients that read each.
type Readers = Mutex<HashMap<Vec<u8>, Vec<u64>>>;

/// Keys changed under one prefix, with the clients subscribed to it.
type Batch = (Vec<u64>, Vec<(Vec<u8>, u64)>);

pub struct Tracking {
    /// Clients with tracking on: the one load a write pays while there are none.
    enabled: AtomicUsize,
    trackers: RwLock<HashMap<u64, Arc<Tracker>>>,
    /// Default mode: each remembered key with the clients that read it since it last
    /// changed, striped by key hash.
    table: Box<[Readers]>,
    keys: AtomicUsize,
    items: AtomicUsize,
    /// `tracking-table-max-keys`: past it, keys are forgotten (and invalidated, since
    /// their readers would no longer hear of changes). 0: no limit.
    max_keys: AtomicUsize,
    /// Where eviction from the table resumes.
    evict_stripe: AtomicUsize,
    prefixes: Mutex<BTreeMap<Vec<u8>, Prefix>>,
    /// Prefix subscriptions: the check a write makes before locking `prefixes`.
    subscriptions: AtomicUsize,
    /// Changes waiting in `prefixes` for [`Tracking::flush_broadcasts`].
    pending: AtomicUsize,
    /// What a client that does not read its messages may have waiting; see
    /// [`Client::deliver`].
    outbox_limit: AtomicUsize,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            enabled: AtomicUsize::new(0),
            trackers: RwLock::default(),
            table: (0..STRIPES).map(|_| Mutex::default()).collect(),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(1_000_000),
            evict_stripe: AtomicUsize::new(0),
            prefixes: Mutex::default(),
            subscriptions: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            outbox_limit: AtomicUsize::new(64 << 20),
        }
    }
}

thread_local! {
    /// The client whose command runs on this thread (0: none), for NOLOOP. A command
    /// runs without yielding, so it cannot move threads midway.
    static CALLER: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` as client `id`'s command: the writes it makes are that client's own.
pub fn as_caller<R>(id: u64, f: impl FnOnce() -> R) -> R {
    let before = CALLER.with(|c| c.replace(id));
    let result = f();
    CALLER.with(|c| c.set(before));
    result
}

fn caller() -> u64 {
    CALLER.with(Cell::get)
}

/// Whether `a` and `b` overlap as prefixes: one starts with the other.
fn overlap(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl Tracking {
    /// A lower `tracking-table-max-keys` forgets keys at once, as Redis does before
    /// its next command.
    pub fn set_limits(&self, max_keys: usize, outbox_limit: usize) {
        self.max_keys.store(max_keys, Ordering::Relaxed);
        self.outbox_limit.store(outbox_limit, Ordering::Relaxed);
        self.shrink(None);
    }

    fn trackers(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Arc<Tracker>>> {
        self.trackers.read().unwrap_or_else(|e| e.into_inner())
    }

    fn tracker(&self, id: u64) -> Option<Arc<Tracker>> {
        self.trackers().get(&id).cloned()
    }

    /// The client `id`'s options and whether its redirection is broken, if it tracks.
    pub fn state(&self, id: u64) -> Option<(Options, bool)> {
        self.tracker(id)
            .map(|t| (t.options.clone(), t.broken.load(Ordering::Relaxed)))
    }

    /// The first of `new` that overlaps one of `client`'s prefixes or a later one of
    /// `new`, with what it overlaps and whether that was one of the client's: BCAST
    /// prefixes may not overlap, or a key would be announced twice.
    pub fn prefix_collision(&self, id: u64, new: &[Vec<u8>]) -> Option<(Vec<u8>, Vec<u8>, bool)> {
        let existing = self.tracker(id).map(|t| t.options.prefixes.clone());
        let existing = existing.unwrap_or_default();
        for (i, p) in new.iter().enumerate() {
            if let Some(e) = existing.iter().find(|e| overlap(e, p)) {
                return Some((p.clone(), e.clone(), true));
            }
            if let Some(q) = new[i + 1..].iter().find(|q| overlap(q, p)) {
                return Some((p.clone(), q.clone(), false));
            }
        }
        None
    }

    /// CLIENT TRACKING ON, options checked by the caller. Turning it on again
    /// replaces the options but adds the prefixes to those the client had.
    pub fn enable(
        &self,
        client: Arc<Client>,
        mut options: Options,
        redirect_to: Option<Arc<Client>>,
    ) {
        let id = client.id;
        let mut trackers = self.trackers.write().unwrap_or_else(|e| e.into_inner());
        let old = trackers.remove(&id);
        if old.is_none() {
            self.enabled.fetch_add(1, Ordering::SeqCst);
        }
        // As Redis: BCAST with no prefix subscribes to the empty one, every key.
        let mut added = std::mem::take(&mut options.prefixes);
        if options.bcast && added.is_empty() {
            added.push(Vec::new());
        }
        let mut all = old.map(|t| t.options.prefixes.clone()).unwrap_or_default();
        added.retain(|p| !all.contains(p));
        if !added.is_empty() {
            let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
            for p in &added {
                prefixes.entry(p.clone()).or_default().clients.push(id);
                self.subscriptions.fetch_add(1, Ordering::SeqCst);
            }
        }
        all.extend(added);
        options.prefixes = all;
        trackers.insert(
            id,
            Arc::new(Tracker {
                client,
                options,
                redirect_to,
                broken: AtomicBool::new(false),
            }),
        );
        drop(trackers);
        // Pairs with the fence in `written`: a write that then reads no trackers
        // happened before any read this client makes from now on.
        fence(Ordering::SeqCst);
    }

    /// CLIENT TRACKING OFF (and RESET, disconnection). The keys the client read stay
    /// remembered until they change, as in Redis; messages for them go nowhere.
    pub fn disable(&self, id: u64) {
        let mut trackers = self.trackers.write().unwrap_or_else(|e| e.into_inner());
        let Some(old) = trackers.remove(&id) else {
            return;
        };
        self.enabled.fetch_sub(1, Ordering::SeqCst);
        drop(trackers);
        if old.options.prefixes.is_empty() {
            return;
        }
        let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        for p in &old.options.prefixes {
            if let Some(prefix) = prefixes.get_mut(p) {
                prefix.clients.retain(|&c| c != id);
                self.subscriptions.fetch_sub(1, Ordering::SeqCst);
                if prefix.clients.is_empty() {
                    self.pending
                        .fetch_sub(prefix.changed.len(), Ordering::Relaxed);
                    prefixes.remove(p);
                }
            }
        }
    }

    fn stripe(&self, key: &[u8]) -> &Readers {
        &self.table[hotring::hash::hash64(key) as usize % STRIPES]
    }

    /// Remembers that client `id` read `key` (before the read itself: see the module
    /// comment). Past `tracking-table-max-keys`, forgets other keys to make room.
    pub fn remember(&self, key: &[u8], id: u64) {
        let mut stripe = self.stripe(key).lock().unwrap_or_else(|e| e.into_inner());
        let readers = match stripe.get_mut(key) {
            Some(readers) => readers,
            None => {
                self.keys.fetch_add(1, Ordering::Relaxed);
                stripe.entry(key.to_vec()).or_default()
            }
        };
        if readers.contains(&id) {
            return;
        }
        readers.push(id);
        self.items.fetch_add(1, Ordering::Relaxed);
        drop(stripe);
        self.shrink(Some(key));
    }

    /// Past `tracking-table-max-keys`, forgets keys other than `keep` until the table
    /// is back within it, or a visit of every stripe found nothing to forget (others
    /// may be emptying them too).
    fn shrink(&self, keep: Option<&[u8]>) {
        let max = self.max_keys.load(Ordering::Relaxed);
        let mut empty_visits = 0;
        while max != 0 && self.keys.load(Ordering::Relaxed) > max && empty_visits < STRIPES {
            if self.evict_one(keep) {
                empty_visits = 0;
            } else {
                empty_visits += 1;
            }
        }
    }

    /// Forgets one remembered key other than `keep` from the next stripe, invalidating
    /// it for its readers; whether that stripe had one.
    fn evict_one(&self, keep: Option<&[u8]>) -> bool {
        let at = self.evict_stripe.fetch_add(1, Ordering::Relaxed) % STRIPES;
        let victim = {
            let mut stripe = self.table[at].lock().unwrap_or_else(|e| e.into_inner());
            let Some(key) = stripe.keys().find(|k| Some(k.as_slice()) != keep).cloned() else {
                return false;
            };
            let readers = stripe.remove(&key).unwrap_or_default();
            (key, readers)
        };
        self.forget(victim.0, victim.1, 0);
        true
    }

    /// Whether a write may have anyone to tell: a client tracks, or keys are remembered.
    pub fn may_invalidate(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) != 0 || self.keys.load(Ordering::Relaxed) != 0
    }

    /// After `key` changed: tells whoever may cache it. The caller has made the change
    /// visible and then fenced (SeqCst), pairing with the fence in `enable`: a write
    /// that reads no trackers here happened before any read a tracker makes.
    pub fn written(&self, key: &[u8]) {
        self.changed(key, caller())
    }

    /// [`Tracking::written`] for a key deleted as expired (by lazy or active expiry).
    /// As in Redis, under a BCAST prefix that change is no client's, so a NOLOOP
    /// client hears of a key it wrote that then expired in its own command; a reader
    /// in the default mode is spared it all the same (Redis compares the client
    /// running there).
    pub fn expired(&self, key: &[u8]) {
        self.changed(key, 0)
    }

    /// `key` changed; `bcast_by` is the client the change is counted to under BCAST
    /// prefixes.
    fn changed(&self, key: &[u8], bcast_by: u64) {
        if !self.may_invalidate() {
            return;
        }
        let by = caller();
        // Always through the stripe's lock: a reader remembers the key under it
        // before reading the store, so either this sees the reader or the reader
        // sees this write.
        let readers = self
            .stripe(key)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        if let Some(readers) = readers {
            self.forget(key.to_vec(), readers, by);
        }
        if self.subscriptions.load(Ordering::Relaxed) > 0 {
            let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
            for (p, prefix) in prefixes.iter_mut() {
                if key.starts_with(p) {
                    prefix.changed.push((key.to_vec(), bcast_by));
                    self.pending.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Sends `key`'s invalidation to `readers`, which the table no longer holds.
    fn forget(&self, key: Vec<u8>, readers: Vec<u64>, by: u64) {
        self.keys.fetch_sub(1, Ordering::Relaxed);
        self.items.fetch_sub(readers.len(), Ordering::Relaxed);
        let trackers = self.trackers();
        for id in readers {
            let Some(t) = trackers.get(&id) else {
                continue;
            };
            // A client that switched to BCAST hears of keys by prefix now.
            if t.options.bcast || (t.options.noloop && id == by) {
                continue;
            }
            self.send(t, Some(&[key.as_slice()]));
        }
    }

    /// Sends every change batched under BCAST prefixes. Called when a command ends
    /// and by the background tick, for changes active expiry made: inline, so that a
    /// command that changed nothing under a prefix pays one load.
    #[inline]
    pub fn flush_broadcasts(&self) {
        if self.pending.load(Ordering::Relaxed) != 0 {
            self.flush_pending_broadcasts();
        }
    }

    #[cold]
    fn flush_pending_broadcasts(&self) {
        let batches: Vec<Batch> = {
            let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
            prefixes
                .values_mut()
                .filter(|p| !p.changed.is_empty())
                .map(|p| {
                    self.pending.fetch_sub(p.changed.len(), Ordering::Relaxed);
                    (p.clients.clone(), std::mem::take(&mut p.changed))
                })
                .collect()
        };
        let trackers = self.trackers();
        for (clients, changed) in batches {
            // As Redis's radix tree of a prefix's changed keys: each key once, with
            // the client that changed it last, in byte order.
            let changed: std::collections::BTreeMap<&[u8], u64> =
                changed.iter().map(|(k, by)| (k.as_slice(), *by)).collect();
            for id in clients {
                let Some(t) = trackers.get(&id) else {
                    continue;
                };
                let keys: Vec<&[u8]> = changed
                    .iter()
                    .filter(|(_, by)| !(t.options.noloop && **by == id))
                    .map(|(k, _)| *k)
                    .collect();
                if !keys.is_empty() {
                    self.send(t, Some(&keys));
                }
            }
        }
    }

    /// FLUSHDB / FLUSHALL: every tracking client is told that everything changed (an
    /// `invalidate` with no keys), and the table is emptied.
    pub fn flushed(&self) {
        for stripe in self.table.iter() {
            let mut stripe = stripe.lock().unwrap_or_else(|e| e.into_inner());
            let items: usize = stripe.values().map(Vec::len).sum();
            self.keys.fetch_sub(stripe.len(), Ordering::Relaxed);
            self.items.fetch_sub(items, Ordering::Relaxed);
            stripe.clear();
        }
        for t in self.trackers().values() {
            self.send(t, None);
        }
    }

    /// Sends one `invalidate` (`None`: of everything) where `t`'s messages go.
    fn send(&self, t: &Tracker, keys: Option<&[&[u8]]>) {
        let limit = self.outbox_limit.load(Ordering::Relaxed);
        let target = match &t.redirect_to {
            None => &t.client,
            Some(target) if target.has_left() => {
                t.broken.store(true, Ordering::Relaxed);
                if t.client.resp.load(Ordering::Relaxed) == 3 {
                    let broken = Frame::Push(vec![
                        Frame::bulk("tracking-redir-broken"),
                        Frame::Integer(t.options.redirect as i64),
                    ]);
                    t.client
                        .deliver(&encode(broken, Protocol::Resp3), OutputLimit::outbox(limit));
                }
                return;
            }
            Some(target) => target,
        };
        let keys = match keys {
            Some(keys) => Frame::Array(keys.iter().map(Frame::bulk).collect()),
            None => Frame::Null,
        };
        let message = if target.resp.load(Ordering::Relaxed) == 3 {
            encode(
                Frame::Push(vec![Frame::bulk("invalidate"), keys]),
                Protocol::Resp3,
            )
        } else if t.redirect_to.is_some() && target.is_subscribed() {
            // RESP2 has no push: a redirection target that subscribed to anything
            // gets the message as one from the `__redis__:invalidate` channel.
            let message = vec![
                Frame::bulk("message"),
                Frame::bulk(INVALIDATE_CHANNEL),
                keys,
            ];
            encode(Frame::Array(message), Protocol::Resp2)
        } else {
            return;
        };
        target.deliver(&message, OutputLimit::outbox(limit));
    }

    /// INFO: clients tracking, keys remembered, (key, client) pairs remembered, and
    /// BCAST prefixes subscribed to.
    pub fn stats(&self) -> [usize; 4] {
        [
            self.enabled.load(Ordering::Relaxed),
            self.keys.load(Ordering::Relaxed),
            self.items.load(Ordering::Relaxed),
            self.prefixes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len(),
        ]
    }
}

fn encode(frame: Frame, proto: Protocol) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(proto, &mut out);
    out
}

/// The channel RESP2 redirection targets hear invalidations on.
const INVALIDATE_CHANNEL: &str = "__redis__:invalidate";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{test_client as client, test_outbox as client_outbox};

    #[test]
    fn counts_follow_the_table_through_reads_writes_and_flushes() {
        let t = Tracking::default();
        let (a, b) = (client(1, 3), client(2, 3));
        t.enable(a.clone(), Options::default(), None);
        t.enable(b.clone(), Options::default(), None);
        t.remember(b"k", 1);
        t.remember(b"k", 1);
        t.remember(b"k", 2);
        t.remember(b"j", 2);
        assert_eq!(t.stats(), [2, 2, 3, 0]);
        as_caller(1, || t.written(b"k"));
        assert_eq!(t.stats(), [2, 1, 1, 0]);
        let message = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n".to_vec();
        assert_eq!(client_outbox(&a), message);
        assert_eq!(client_outbox(&b), message);
        t.flushed();
        assert_eq!(t.stats(), [2, 0, 0, 0]);
        assert_eq!(client_outbox(&a), b">2\r\n$10\r\ninvalidate\r\n_\r\n");
        t.disable(1);
        t.disable(1);
        assert_eq!(t.stats()[0], 1);
    }

    #[test]
    fn prefixes_are_counted_once_and_released_with_their_last_subscriber() {
        let t = Tracking::default();
        let bcast = |prefixes: &[&str]| Options {
            bcast: true,
            prefixes: prefixes.iter().map(|p| p.as_bytes().to_vec()).collect(),
            ..Options::default()
        };
        t.enable(client(1, 3), bcast(&["a", "b"]), None);
        t.enable(client(2, 3), bcast(&["a"]), None);
        assert_eq!(t.stats()[3], 2);
        assert_eq!(
            t.prefix_collision(1, &[b"ab".to_vec()]),
            Some((b"ab".to_vec(), b"a".to_vec(), true))
        );
        assert_eq!(
            t.prefix_collision(2, &[b"x".to_vec(), b"xy".to_vec()]),
            Some((b"x".to_vec(), b"xy".to_vec(), false))
        );
        assert_eq!(t.prefix_collision(2, &[b"b".to_vec()]), None);
        // A change waiting for a prefix whose subscribers all left is dropped with it.
        t.written(b"b1");
        t.disable(1);
        assert_eq!(t.stats()[3], 1);
        assert_eq!(t.pending.load(Ordering::Relaxed), 0);
        t.disable(2);
        assert_eq!(t.stats(), [0, 0, 0, 0]);
        assert_eq!(t.subscriptions.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_table_never_holds_more_than_its_limit() {
        let t = Tracking::default();
        t.set_limits(10, 1 << 20);
        let a = client(1, 3);
        t.enable(a.clone(), Options::default(), None);
        for i in 0..1000u32 {
            t.remember(&i.to_le_bytes(), 1);
            assert!(t.stats()[1] <= 10);
        }
        // Each forgotten key was announced: 990 messages of one key each.
        let out = client_outbox(&a);
        let messages = out.windows(10).filter(|w| w == b"invalidate").count();
        assert_eq!(messages, 990);
        assert_eq!(t.stats()[2], t.stats()[1]);
    }
}
