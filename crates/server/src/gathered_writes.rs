//! The writes of one connection's pipelined commands, gathered into one engine batch
//! (seed 002's opportunistic request batching: consecutive writes are merged into one
//! `WriteBatch`, which costs less than the engine's group commit of many, because no
//! thread hands anything to another). Sixteen LPUSHes to one list in a pipeline read
//! and write its root once instead of sixteen times, and lock its stripe once.
//!
//! While a connection runs a batch of requests it lets `EngineStore`
//! (`engine_store.rs`) gather: a write under a key's lock then leaves the lock held
//! and the write here, where this thread's reads find it, instead of in the engine.
//! The gathered writes reach the engine, and the stripes are let go, when the
//! connection ends the batch, before any reply of it leaves: no client is told of a
//! write before every reader can see it. Until then, others that read what this
//! thread holds wait for it by taking the key's lock:
//! - writers, and readers of a split collection's nodes, take it anyway;
//! - a blocked command's tries, WATCH, and a tracking client's reads take it for the
//!   moment (`Db::await_writers`): each learns of writes (a wake, a version, an
//!   invalidation) that a gathered write announced before others can read it;
//! - keyspace events and tracking invalidations sent while writes are gathered first
//!   have them written (`Db::touched`, `Server::publish_events`).
//!
//! A thread holding stripes for gathered writes waits for nothing that may wait for
//! them. A stripe held elsewhere is tried, and if that fails the gathered writes are
//! written first, so two threads gathering cannot wait for each other. Writes stay
//! gathered only across commands on keys (`commands::gathers`), which hold the gate
//! shared from one to the next; before and after any other command, and before the
//! gate is yielded to an exclusive holder (EXEC, MSET, a script), they are written. A
//! thread that writes without gathering waits at most for the end of one batch.
//!
//! If writing them fails, the gathered writes are lost together, and the connection
//! answers every command since they were last written with the error
//! (`Connection::answer_lost`). A command that panics still has them written, and the
//! stripes let go, as its `Gathering` is dropped (`db.rs`).

use std::cell::RefCell;
use std::collections::HashMap;

// Shuttle runs its threads on one OS thread: the model (`engine_store_model.rs`) needs
// its own thread-locals.
#[cfg(feature = "shuttle")]
use shuttle::thread_local;

thread_local! {
    static GATHERED: RefCell<Gathered> = RefCell::new(Gathered::default());
}

/// Past this many bytes of values, gathered writes are written at once: one pipeline
/// of large values must not hold that much memory twice.
pub const MAX_GATHERED_BYTES: usize = 4 << 20;

#[derive(Default)]
pub struct Gathered {
    /// The store that gathers on this thread (its address), if one does.
    store: Option<usize>,
    /// The stripes this thread holds locked for the writes below.
    pub stripes: Vec<usize>,
    /// Engine key and what it is to hold (`None`: deleted).
    pub writes: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// What the writes add to the store's key count.
    pub added: i64,
    /// Bytes of keys and values in `writes`, at most [`MAX_GATHERED_BYTES`] or so.
    pub bytes: usize,
    /// Why gathered writes were lost since the batch began, if they were.
    pub lost: Option<String>,
}

impl Gathered {
    /// Whether nothing is held: no write waits and no stripe is locked.
    pub fn is_empty(&self) -> bool {
        self.stripes.is_empty() && self.writes.is_empty()
    }

    pub fn holds_stripe(&self, stripe: usize) -> bool {
        self.stripes.contains(&stripe)
    }

    /// Takes a write to `key`, which replaces any gathered before it.
    pub fn put(&mut self, key: Vec<u8>, stored: Option<Vec<u8>>) {
        let (key_len, new_len) = (key.len(), stored.as_ref().map_or(0, Vec::len));
        match self.writes.insert(key, stored) {
            Some(old) => self.bytes = self.bytes - old.map_or(0, |v| v.len()) + new_len,
            None => self.bytes += key_len + new_len,
        }
    }
}

/// Runs `f` on this thread's gathered writes if `store` gathers here, else on `None`.
pub fn with<R>(store: usize, f: impl FnOnce(Option<&mut Gathered>) -> R) -> R {
    GATHERED.with(|g| {
        let mut g = g.borrow_mut();
        if g.store == Some(store) {
            f(Some(&mut g))
        } else {
            f(None)
        }
    })
}

/// From now on `store` gathers this thread's writes, until [`stop`].
pub fn start(store: usize) {
    GATHERED.with(|g| {
        let mut g = g.borrow_mut();
        assert!(
            g.store.is_none() && g.is_empty(),
            "a batch's gathered writes outlived it"
        );
        g.store = Some(store);
    });
}

/// Ends gathering on this thread; the caller has written (or lost) what was gathered.
pub fn stop(store: usize) -> Option<String> {
    GATHERED.with(|g| {
        let mut g = g.borrow_mut();
        if g.store != Some(store) {
            return None;
        }
        assert!(g.is_empty(), "gathered writes were left unwritten");
        g.store = None;
        g.lost.take()
    })
}
