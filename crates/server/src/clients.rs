//! The connected clients, for CLIENT LIST / KILL / INFO, maxclients and INFO's
//! counters. A client's own counters live in its `Client`, written only by its own
//! task, so commands never contend on shared counters; INFO sums them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

pub struct Client {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub created: Instant,
    /// Milliseconds after `created` of the last command.
    last_active: AtomicU64,
    pub name: Mutex<Vec<u8>>,
    /// The ACL user it runs as (CLIENT LIST's user, CLIENT KILL USER).
    pub user: Mutex<Vec<u8>>,
    pub lib: Mutex<(String, String)>,
    /// Where the last command was counted (`commands::name_of`), +1 (0: none yet).
    pub last_command: AtomicU64,
    pub traffic: Traffic,
    pub buffers: Buffers,
    pub resp: AtomicU8,
    pub in_multi: AtomicBool,
    pub no_evict: AtomicBool,
    killed: AtomicBool,
    kill: Notify,
    /// Set while the connection waits in a blocking command (WAIT), which CLIENT
    /// UNBLOCK may end early, as a timeout or (`unblock_error`) with an error.
    blocked: AtomicBool,
    /// Whether the wait `blocked` marks ends at a time (INFO's clients_in_timeout_table).
    blocked_with_timeout: AtomicBool,
    unblock_error: AtomicBool,
    unblock: Notify,
    /// Set while CLIENT PAUSE holds the connection's next command. Redis counts such a
    /// client as blocked (INFO's blocked_clients, CLIENT LIST's `b`), though CLIENT
    /// UNBLOCK does not end its wait.
    pub paused: AtomicBool,
    /// What other clients' commands send this one (MONITOR lines), encoded, until its
    /// connection writes it out; `outbox_ready` wakes the connection.
    outbox: Mutex<Vec<u8>>,
    /// Something waits in the outbox: the one load a connection pays per command to
    /// write it in order between replies.
    outbox_pending: AtomicBool,
    outbox_ready: Notify,
    /// The outbox grew past its limit and the client was killed for it.
    outbox_overflowed: AtomicBool,
    /// Killed by client eviction (`maxmemory-clients`): what it held then (0: not
    /// evicted), counted in `Clients::dying` until it is gone.
    evicted: AtomicUsize,
    /// What all clients hold together (`Clients::memory`), which this one's
    /// [`Client::account`] keeps its share of.
    memory_of_all: Arc<AtomicIsize>,
    /// When (ms since the Unix epoch) what waits for the client last went over its
    /// soft output limit; 0 while under it.
    over_soft_limit_since: AtomicU64,
    pub monitoring: AtomicBool,
    /// Pub/sub subscriptions: channels, patterns, shard channels (CLIENT LIST's sub,
    /// psub, ssub).
    pub subscriptions: [AtomicUsize; 3],
    /// Disconnected: what is delivered now goes nowhere.
    left: AtomicBool,
}

impl Client {
    fn new(
        id: u64,
        addr: SocketAddr,
        laddr: SocketAddr,
        memory_of_all: Arc<AtomicIsize>,
    ) -> Client {
        Client {
            id,
            addr,
            laddr,
            created: Instant::now(),
            last_active: AtomicU64::new(0),
            name: Mutex::new(Vec::new()),
            user: Mutex::new(crate::commands::users::DEFAULT_USER.to_vec()),
            lib: Mutex::new(Default::default()),
            last_command: AtomicU64::new(0),
            traffic: Traffic::default(),
            buffers: Buffers::default(),
            resp: AtomicU8::new(2),
            in_multi: AtomicBool::new(false),
            no_evict: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            blocked: AtomicBool::new(false),
            blocked_with_timeout: AtomicBool::new(false),
            unblock_error: AtomicBool::new(false),
            unblock: Notify::new(),
            paused: AtomicBool::new(false),
            outbox: Mutex::new(Vec::new()),
            outbox_pending: AtomicBool::new(false),
            outbox_ready: Notify::new(),
            outbox_overflowed: AtomicBool::new(false),
            evicted: AtomicUsize::new(0),
            memory_of_all,
            over_soft_limit_since: AtomicU64::new(0),
            monitoring: AtomicBool::new(false),
            subscriptions: Default::default(),
            left: AtomicBool::new(false),
        }
    }

    pub fn touch(&self) {
        self.last_active
            .store(self.created.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    pub fn idle_secs(&self) -> u64 {
        (self.created.elapsed().as_millis() as u64)
            .saturating_sub(self.last_active.load(Ordering::Relaxed))
            / 1000
    }

    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        // Every waiter: the connection keeps one waiting across its batches while a
        // pause or a blocking command waits with another. The permit is for a waiter
        // that looked at `killed` just before it was set and has yet to register.
        self.kill.notify_waiters();
        self.kill.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Marks the client blocked, until a time (`timeout`) or for ever. Register the
    /// [`Client::unblocked`] future before blocking, so an unblock in between is not
    /// missed.
    pub fn block(&self, timeout: bool) {
        self.blocked_with_timeout.store(timeout, Ordering::SeqCst);
        self.blocked.store(true, Ordering::SeqCst);
    }

    pub fn end_block(&self) {
        self.blocked.store(false, Ordering::SeqCst);
    }

    /// In a blocking wait, or held by CLIENT PAUSE.
    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::SeqCst) || self.paused.load(Ordering::Relaxed)
    }

    /// Resolves when CLIENT UNBLOCK ends the wait; then [`Client::unblocked_with_error`]
    /// says how.
    pub fn unblocked(&self) -> tokio::sync::futures::Notified<'_> {
        self.unblock.notified()
    }

    pub fn unblocked_with_error(&self) -> bool {
        self.unblock_error.load(Ordering::SeqCst)
    }

    /// CLIENT UNBLOCK: ends the client's blocking wait, if it is in one.
    pub fn unblock(&self, error: bool) -> bool {
        if !self.blocked.swap(false, Ordering::SeqCst) {
            return false;
        }
        self.unblock_error.store(error, Ordering::SeqCst);
        self.unblock.notify_waiters();
        true
    }

    /// Queues `message` for the client's connection to write. A client that does not
    /// read what it is sent is disconnected once it is over `limit` (see
    /// [`OutputLimit`]: its outbox, and what its connection is still writing unless
    /// the limit counts the outbox alone), as the output buffer limit disconnects one
    /// that does not read its replies; the message is dropped with it.
    pub fn deliver(&self, message: &[u8], limit: OutputLimit) {
        let mut outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        let writing = if limit.outbox_only {
            0
        } else {
            self.buffers.output.load(Ordering::Relaxed)
        };
        if self.over_output_limit(writing + outbox.len() + message.len(), limit) {
            drop(outbox);
            self.kill_for_output();
            return;
        }
        outbox.extend_from_slice(message);
        self.outbox_pending.store(true, Ordering::Release);
        self.buffers
            .outbox
            .store(outbox.capacity(), Ordering::Relaxed);
        drop(outbox);
        self.account();
        // A stored permit if the connection is busy: it looks again before it waits.
        self.outbox_ready.notify_one();
    }

    /// Whether `pending` bytes waiting for the client pass `limit` now, as Redis
    /// judges it: over the hard limit, or over the soft one for longer than its
    /// seconds (the time it went over is noted, and forgotten once back under). As
    /// in Redis, what fits its fixed reply buffer is not counted: the limits apply
    /// to what CLIENT LIST shows as `omem`.
    pub fn over_output_limit(&self, pending: usize, limit: OutputLimit) -> bool {
        let pending = pending.saturating_sub(REPLY_BUFFER) as u64;
        if limit.hard > 0 && pending > limit.hard {
            return true;
        }
        if limit.soft == 0 || pending <= limit.soft {
            if self.over_soft_limit_since.load(Ordering::Relaxed) != 0 {
                self.over_soft_limit_since.store(0, Ordering::Relaxed);
            }
            return false;
        }
        let now = crate::entry::now_ms().max(1);
        match self.over_soft_limit_since.load(Ordering::Relaxed) {
            0 => {
                self.over_soft_limit_since.store(now, Ordering::Relaxed);
                false
            }
            since => now.saturating_sub(since) > limit.soft_secs * 1000,
        }
    }

    fn kill_for_output(&self) {
        self.outbox_overflowed.store(true, Ordering::SeqCst);
        self.kill();
    }

    /// Reply bytes waiting to be written: those its connection holds, as it last
    /// reported them, and what was delivered to it since it last looked (a
    /// subscriber that does not read: the messages that pile up for it).
    pub fn pending_output(&self) -> usize {
        let delivered = self.outbox.lock().unwrap_or_else(|e| e.into_inner()).len();
        self.buffers.output.load(Ordering::Relaxed) + delivered
    }

    /// Whether something delivered to the client waits to be written.
    pub fn has_outbox(&self) -> bool {
        self.outbox_pending.load(Ordering::Acquire)
    }

    /// Moves what was delivered to the client onto the end of `output`.
    pub fn take_outbox(&self, output: &mut Vec<u8>) {
        if !self.has_outbox() {
            return;
        }
        let mut outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        self.outbox_pending.store(false, Ordering::Relaxed);
        output.append(&mut outbox);
        // A burst's capacity is not kept for an idle client.
        if outbox.capacity() > 1 << 20 {
            *outbox = Vec::new();
        }
        self.buffers
            .outbox
            .store(outbox.capacity(), Ordering::Relaxed);
    }

    /// Resolves when something was delivered since the last call resolved.
    pub fn delivered(&self) -> tokio::sync::futures::Notified<'_> {
        self.outbox_ready.notified()
    }

    /// Whether the client was killed because its outbox overflowed.
    pub fn outbox_overflowed(&self) -> bool {
        self.outbox_overflowed.load(Ordering::SeqCst)
    }

    /// Whether the client was killed by client eviction.
    pub fn was_evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst) != 0
    }

    /// Everything the client holds: buffers, queued commands, what its session
    /// keeps, and the connection's own state (CLIENT LIST's tot-mem, what
    /// `maxmemory-clients` limits).
    pub fn memory(&self) -> usize {
        let b = &self.buffers;
        std::mem::size_of::<Client>()
            + std::mem::size_of::<crate::commands::Session>()
            + [
                &b.input_capacity,
                &b.output_capacity,
                &b.outbox,
                &b.multi,
                &b.argv,
                &b.state,
            ]
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum::<usize>()
    }

    /// Brings the client's share of what all clients hold (`Clients::memory`) up to
    /// date with [`Client::memory`]; a killed or departed client has none. Racing
    /// calls each move the sum by what they swapped, so it stays the sum of the
    /// shares.
    pub fn account(&self) {
        let gone = || self.is_killed() || self.has_left();
        let now = if gone() { 0 } else { self.memory() };
        self.set_share(now);
        // Killed meanwhile by an eviction that already took the share out, before
        // this put it back (the swaps are ordered, and the kill came before its).
        if now != 0 && gone() {
            self.set_share(0);
        }
    }

    fn set_share(&self, now: usize) {
        let was = self.buffers.accounted.swap(now, Ordering::AcqRel);
        // Signed: a racing call's subtraction may come before the addition it
        // follows in swap order.
        let delta = now as isize - was as isize;
        if delta != 0 {
            self.memory_of_all.fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// Disconnects the client for client eviction, its share out of the sum at once;
    /// returns what it held.
    fn evict(&self) -> usize {
        let held = self.buffers.accounted.load(Ordering::Relaxed).max(1);
        self.evicted.store(held, Ordering::SeqCst);
        self.kill();
        self.account();
        held
    }

    /// Subscribed to any pub/sub channel, pattern or shard channel.
    pub fn is_subscribed(&self) -> bool {
        self.subscriptions
            .iter()
            .any(|n| n.load(Ordering::Relaxed) > 0)
    }

    pub fn has_left(&self) -> bool {
        self.left.load(Ordering::SeqCst)
    }

    /// Resolves once the client is killed (immediately if it already is).
    pub async fn killed(&self) {
        if !self.is_killed() {
            self.kill.notified().await;
        }
    }
}

/// An output buffer limit (a class of Redis's `client-output-buffer-limit`): a client
/// with more than `hard` bytes waiting, or more than `soft` for longer than
/// `soft_secs`, is disconnected. 0 turns either limit off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
    /// Counts the outbox alone, not what the connection is still writing too.
    pub outbox_only: bool,
}

impl OutputLimit {
    /// A hard limit of `bytes` on the outbox alone: the bound on what other clients'
    /// commands send a client (MONITOR lines, invalidations), whose own replies,
    /// however large, are the normal class's to limit.
    pub fn outbox(bytes: usize) -> OutputLimit {
        OutputLimit {
            hard: bytes as u64,
            soft: 0,
            soft_secs: 0,
            outbox_only: true,
        }
    }
}

/// A connection's buffers as it last reported them, for CLIENT LIST (qbuf, omem,
/// tot-mem...), INFO's client_recent_max_* and MEMORY STATS: stored once per read and
/// per write to the socket, not per command.
pub struct Buffers {
    /// Bytes read and not yet dropped as served (the request being run included).
    pub input: AtomicUsize,
    pub input_capacity: AtomicUsize,
    /// The most `input` held since the query-buffer cron last looked.
    pub input_peak: AtomicUsize,
    /// The capacity the query-buffer cron asks the connection to cut its input
    /// buffer to ([`NO_RESIZE`] for none).
    pub input_resize: AtomicUsize,
    /// Reply bytes waiting to be written.
    pub output: AtomicUsize,
    pub output_capacity: AtomicUsize,
    /// The most the output buffer held (written or not) since the client cron last
    /// looked.
    pub output_peak: AtomicUsize,
    /// The capacity the client cron asks the connection to cut its output buffer to
    /// ([`NO_RESIZE`] for none).
    pub output_resize: AtomicUsize,
    /// Bytes of the commands queued since MULTI, and how many (CLIENT LIST's multi).
    pub multi: AtomicUsize,
    pub queued: AtomicUsize,
    /// The outbox's capacity.
    pub outbox: AtomicUsize,
    /// Bytes of the whole arguments of a request that has not all arrived.
    pub argv: AtomicUsize,
    /// What the session keeps: watched keys, subscriptions, tracking prefixes.
    pub state: AtomicUsize,
    /// The client's share of what all clients hold, as it last accounted for it.
    accounted: AtomicUsize,
}

/// [`Buffers::input_resize`] and [`Buffers::output_resize`] when no resize is asked for.
pub const NO_RESIZE: usize = usize::MAX;

/// The capacity [`Clients::resize_buffers`] cuts a buffer to, if any: one holding
/// `held` bytes of `capacity`, and at most `peak` since the last look.
fn cut_to(held: usize, capacity: usize, peak: usize, idle: bool) -> Option<usize> {
    const WASTE: usize = 4 * 1024;
    const RESIZE_THRESHOLD: usize = 32 * 1024;
    if capacity.saturating_sub(held) <= WASTE {
        None
    } else if idle {
        Some(held)
    } else if capacity > RESIZE_THRESHOLD && capacity / 2 > peak {
        Some(held.max(peak))
    } else {
        None
    }
}

/// Redis's fixed per-client reply buffer: CLIENT LIST's `obl` counts pending reply bytes
/// up to this, `oll`/`omem` the blocks and bytes past it.
pub const REPLY_BUFFER: usize = 16 * 1024;

impl Default for Buffers {
    fn default() -> Self {
        Buffers {
            input: AtomicUsize::new(0),
            input_capacity: AtomicUsize::new(0),
            input_peak: AtomicUsize::new(0),
            input_resize: AtomicUsize::new(NO_RESIZE),
            output: AtomicUsize::new(0),
            output_capacity: AtomicUsize::new(0),
            output_peak: AtomicUsize::new(0),
            output_resize: AtomicUsize::new(NO_RESIZE),
            multi: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            outbox: AtomicUsize::new(0),
            argv: AtomicUsize::new(0),
            state: AtomicUsize::new(0),
            accounted: AtomicUsize::new(0),
        }
    }
}

impl Buffers {
    /// A command queued after MULTI.
    pub fn queue(&self, args: &[Vec<u8>]) {
        let bytes = args.iter().map(Vec::len).sum::<usize>();
        self.multi.fetch_add(bytes, Ordering::Relaxed);
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The queue ran or was dropped (EXEC, DISCARD, RESET), or a new one starts.
    pub fn clear_queue(&self) {
        self.multi.store(0, Ordering::Relaxed);
        self.queued.store(0, Ordering::Relaxed);
    }
}

/// What INFO sums over clients: one client's, or (`Clients::departed`) the totals of
/// those that have disconnected, so INFO's counters never go backwards.
#[derive(Default)]
pub struct Traffic {
    pub commands: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    /// Bytes read from and written to the client's socket.
    pub net_in: AtomicU64,
    pub net_out: AtomicU64,
}

impl Traffic {
    fn counters(&self) -> [&AtomicU64; 5] {
        [
            &self.commands,
            &self.hits,
            &self.misses,
            &self.net_in,
            &self.net_out,
        ]
    }
}

#[derive(Default)]
pub struct Clients {
    live: Mutex<BTreeMap<u64, Arc<Client>>>,
    departed: Traffic,
    peaks: Mutex<RecentPeaks>,
    pub received: AtomicU64,
    pub rejected: AtomicU64,
    /// What the clients hold together: the sum of their shares (`Client::account`),
    /// which `maxmemory-clients` limits.
    memory: Arc<AtomicIsize>,
    /// `maxmemory-clients` in bytes (0: off).
    memory_limit: AtomicUsize,
    /// Clients disconnected by client eviction (INFO's evicted_clients).
    pub evicted: AtomicU64,
    /// What evicted clients held, until a measure of memory no longer counts it:
    /// Redis frees an evicted client at once, and its memory must not make keys go
    /// meanwhile. Those that have left since the last measure are in `departed_dying`.
    dying: AtomicUsize,
    departed_dying: AtomicUsize,
    /// Whether `resize_buffers` leaves output buffers uncut (DEBUG REPLYBUFFER
    /// RESIZING 0).
    output_kept: AtomicBool,
}

impl Clients {
    /// A client that counts toward these clients' memory, not yet admitted.
    pub fn client(&self, id: u64, addr: SocketAddr, laddr: SocketAddr) -> Arc<Client> {
        Arc::new(Client::new(id, addr, laddr, self.memory.clone()))
    }

    /// What evicted clients held that the last measure of memory may still count.
    pub fn dying(&self) -> usize {
        self.dying.load(Ordering::Relaxed)
    }

    /// Memory is about to be measured: what evicted clients that have left held is
    /// let go by then.
    pub fn measuring_memory(&self) {
        let gone = self.departed_dying.swap(0, Ordering::Relaxed);
        self.dying.fetch_sub(gone, Ordering::Relaxed);
    }

    /// What the clients hold together, as they last accounted for it.
    pub fn memory(&self) -> usize {
        self.memory.load(Ordering::Relaxed).max(0) as usize
    }

    /// `maxmemory-clients` in bytes, 0 when off.
    pub fn memory_limit(&self) -> usize {
        self.memory_limit.load(Ordering::Relaxed)
    }

    /// Sets `maxmemory-clients` (0: off) and evicts clients at once if they hold
    /// more, as Redis does when the setting is lowered.
    pub fn set_memory_limit(&self, bytes: usize) {
        let was = self.memory_limit.swap(bytes, Ordering::Relaxed);
        if was == 0 && bytes != 0 {
            // Connections keep their shares only while the limit is on.
            let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            for c in live.values() {
                c.account();
            }
        }
        self.evict();
    }

    /// Redis's client eviction: while the clients together hold `maxmemory-clients`
    /// or more, disconnects the one that holds most, of those CLIENT NO-EVICT does
    /// not protect. Each counts as it last accounted for itself, so the sum and the
    /// choice agree. Returns how many were evicted.
    pub fn evict(&self) -> usize {
        let limit = self.memory_limit();
        if limit == 0 || self.memory() < limit {
            return 0;
        }
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let mut evictable: Vec<&Arc<Client>> = live
            .values()
            .filter(|c| !c.no_evict.load(Ordering::Relaxed) && !c.is_killed())
            .collect();
        evictable.sort_by_key(|c| std::cmp::Reverse(c.buffers.accounted.load(Ordering::Relaxed)));
        let mut evicted = 0;
        for c in evictable {
            if self.memory() < limit {
                break;
            }
            tracing::info!(
                client = c.id,
                addr = %c.addr,
                holds = c.buffers.accounted.load(Ordering::Relaxed),
                all_clients_hold = self.memory(),
                maxmemory_clients = limit,
                "client evicted: the clients hold more than maxmemory-clients"
            );
            self.dying.fetch_add(c.evict(), Ordering::Relaxed);
            evicted += 1;
        }
        self.evicted.fetch_add(evicted as u64, Ordering::Relaxed);
        evicted
    }

    /// Registers a client unless `max` are connected already.
    pub fn admit(&self, client: Arc<Client>, max: u64) -> bool {
        self.received.fetch_add(1, Ordering::Relaxed);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live.len() as u64 >= max {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        live.insert(client.id, client);
        true
    }

    /// The connected client with this id.
    pub fn get(&self, id: u64) -> Option<Arc<Client>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.get(&id).cloned()
    }

    /// Unregisters a client, folding its counters into the departed totals under the
    /// same lock `total` reads them with, so no sum ever counts it twice or not at all.
    pub fn leave(&self, id: u64) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = live.remove(&id) {
            c.left.store(true, Ordering::SeqCst);
            c.account();
            self.departed_dying
                .fetch_add(c.evicted.load(Ordering::SeqCst), Ordering::Relaxed);
            for (total, own) in self
                .departed
                .counters()
                .into_iter()
                .zip(c.traffic.counters())
            {
                total.fetch_add(own.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
    }

    /// CONFIG RESETSTAT: zeroes the connection counts and every client's counters,
    /// live and departed.
    pub fn reset_counters(&self) {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let clients = live.values().flat_map(|c| c.traffic.counters());
        for counter in [&self.received, &self.rejected, &self.evicted]
            .into_iter()
            .chain(self.departed.counters())
            .chain(clients)
        {
            counter.store(0, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> Vec<Arc<Client>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Clients in a blocking wait or held by CLIENT PAUSE, and those in a wait that
    /// ends at a time (a pause's end is not the client's: Redis does not count it).
    pub fn blocked(&self) -> (usize, usize) {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.values()
            .filter(|c| c.is_blocked())
            .fold((0, 0), |(all, timed), c| {
                let timed_wait = c.blocked.load(Ordering::SeqCst)
                    && c.blocked_with_timeout.load(Ordering::SeqCst);
                (all + 1, timed + usize::from(timed_wait))
            })
    }

    /// Notes the largest buffers held now in the peaks of second `second` (Unix
    /// seconds); the server does it ten times a second, as Redis's client cron.
    pub fn record_peaks(&self, second: u64) {
        let (input, output, _) = self.buffers();
        let mut peaks = self.peaks.lock().unwrap_or_else(|e| e.into_inner());
        peaks.record(second, input, output);
    }

    /// Disconnects the clients that have had more than their class's soft limit
    /// (`normal` or `pubsub`) waiting for longer than its seconds, or more than its
    /// hard limit: run by the client cron, since one that is sent nothing more, or
    /// sends nothing more, is not judged on delivery or on a write.
    pub fn enforce_output_limits(&self, normal: OutputLimit, pubsub: OutputLimit) {
        let off = |l: OutputLimit| l.hard == 0 && l.soft == 0;
        if off(normal) && off(pubsub) {
            return;
        }
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        for c in live.values() {
            let limit = if c.is_subscribed() { pubsub } else { normal };
            if !off(limit) && c.over_output_limit(c.pending_output(), limit) {
                c.kill_for_output();
            }
        }
    }

    /// Redis's client cron for query buffers, run ten times a second: a client idle
    /// for more than 2 s gives back its input buffer's free space (all of it, if no
    /// request is pending), and one whose buffer is past 32 KB and more than twice the
    /// most it held since the last look is cut to that most; either only if it wastes
    /// more than 4 KB. The output buffer is cut by the same rule: Redis frees a reply
    /// past its 16 KB buffer once it is written, and shrinks that buffer when it goes
    /// unused, so one big reply leaves an idle client holding nothing. The connection
    /// does the cuts, woken for them if idle.
    pub fn resize_buffers(&self) {
        let output_kept = self.output_kept.load(Ordering::Relaxed);
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        for c in live.values() {
            let b = &c.buffers;
            let idle = c.idle_secs() > 2;
            let mut asked = false;
            for (held, capacity, peak, resize) in [
                (&b.input, &b.input_capacity, &b.input_peak, &b.input_resize),
                (
                    &b.output,
                    &b.output_capacity,
                    &b.output_peak,
                    &b.output_resize,
                ),
            ]
            .into_iter()
            .take(if output_kept { 1 } else { 2 })
            {
                let held = held.load(Ordering::Relaxed);
                let peak = peak.swap(held, Ordering::Relaxed);
                if let Some(target) = cut_to(held, capacity.load(Ordering::Relaxed), peak, idle) {
                    resize.store(target, Ordering::Relaxed);
                    asked = true;
                }
            }
            if asked {
                c.outbox_ready.notify_one();
            }
        }
    }

    pub fn set_output_resizing(&self, on: bool) {
        self.output_kept.store(!on, Ordering::Relaxed);
    }

    /// The largest input and output buffers held now or noted over the last
    /// [`PEAK_SECONDS`] seconds: INFO's client_recent_max_input_buffer and
    /// client_recent_max_output_buffer.
    pub fn recent_max(&self, second: u64) -> (usize, usize) {
        let (input, output, _) = self.buffers();
        let peaks = self.peaks.lock().unwrap_or_else(|e| e.into_inner());
        let (recent_input, recent_output) = peaks.max(second);
        (input.max(recent_input), output.max(recent_output))
    }

    /// The largest input and output buffers any client holds now, and what all
    /// clients hold together (MEMORY STATS' clients.normal).
    pub fn buffers(&self) -> (usize, usize, usize) {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.values().fold((0, 0, 0), |(input, output, total), c| {
            let b = &c.buffers;
            (
                input.max(b.input.load(Ordering::Relaxed)),
                output.max(b.output.load(Ordering::Relaxed)),
                total + c.memory(),
            )
        })
    }

    /// A counter summed over live and departed clients.
    pub fn total(&self, field: impl Fn(&Traffic) -> &AtomicU64) -> u64 {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        field(&self.departed).load(Ordering::Relaxed)
            + live
                .values()
                .map(|c| field(&c.traffic).load(Ordering::Relaxed))
                .sum::<u64>()
    }
}

/// Seconds INFO's client_recent_max_* look back, as Redis's CLIENTS_PEAK_MEM_USAGE_SLOTS.
pub const PEAK_SECONDS: u64 = 8;

/// The largest input and output buffers noted in each of the last [`PEAK_SECONDS`]
/// seconds, so a client whose big request was just served still shows for a while.
#[derive(Default)]
struct RecentPeaks {
    /// By second modulo PEAK_SECONDS: (the second, input, output).
    slots: [(u64, usize, usize); PEAK_SECONDS as usize],
}

impl RecentPeaks {
    fn record(&mut self, second: u64, input: usize, output: usize) {
        let slot = &mut self.slots[(second % PEAK_SECONDS) as usize];
        if slot.0 != second {
            *slot = (second, 0, 0);
        }
        slot.1 = slot.1.max(input);
        slot.2 = slot.2.max(output);
    }

    fn max(&self, second: u64) -> (usize, usize) {
        self.slots
            .iter()
            .filter(|slot| slot.0 <= second && second - slot.0 < PEAK_SECONDS)
            .fold((0, 0), |(input, output), slot| {
                (input.max(slot.1), output.max(slot.2))
            })
    }
}

/// A client of protocol `resp` that no connection serves, for unit tests of what is
/// delivered to clients.
#[cfg(test)]
pub fn test_client(id: u64, resp: u8) -> Arc<Client> {
    let addr = "127.0.0.1:1".parse().expect("a literal address");
    let c = Arc::new(Client::new(id, addr, addr, Arc::default()));
    c.resp.store(resp, Ordering::Relaxed);
    c
}

/// Everything delivered to `c` so far.
#[cfg(test)]
pub fn test_outbox(c: &Client) -> Vec<u8> {
    let mut out = Vec::new();
    c.take_outbox(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_limits_are_judged_as_redis_judges_them() {
        let c = test_client(1, 2);
        let hard = OutputLimit::outbox(100);
        // Counted past the fixed reply buffer, as omem.
        assert!(!c.over_output_limit(REPLY_BUFFER + 100, hard));
        assert!(c.over_output_limit(REPLY_BUFFER + 101, hard));
        // Soft: over it for longer than its seconds (none here: any time at all).
        let soft = OutputLimit {
            hard: 0,
            soft: 100,
            soft_secs: 0,
            outbox_only: false,
        };
        let over = REPLY_BUFFER + 101;
        let noted = !c.over_output_limit(1 << 30, soft);
        assert!(noted, "the first time over is noted");
        std::thread::sleep(std::time::Duration::from_millis(3));
        assert!(c.over_output_limit(over, soft));
        // Back under, the clock starts again.
        assert!(!c.over_output_limit(over - 1, soft));
        assert!(!c.over_output_limit(over, soft));
        let patient = OutputLimit {
            soft_secs: 3600,
            ..soft
        };
        std::thread::sleep(std::time::Duration::from_millis(3));
        assert!(!c.over_output_limit(over, patient));
        // Delivery kills a client over its limit and drops the message.
        let fits = vec![b'x'; REPLY_BUFFER + 100];
        c.deliver(&fits, hard);
        assert!(!c.is_killed());
        c.deliver(b"y", hard);
        assert!(c.is_killed() && c.outbox_overflowed());
        assert_eq!(test_outbox(&c), fits);
    }

    /// The shares of many clients, accounted from their own threads while others
    /// deliver to them and evictions run: at rest, the sum is the sum of the live
    /// clients' shares, and nothing once all have left.
    #[test]
    fn client_shares_add_up_under_racing_accounts_and_evictions() {
        let clients = Arc::new(Clients::default());
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let all: Vec<Arc<Client>> = (0..8)
            .map(|id| {
                let c = clients.client(id, addr, addr);
                assert!(clients.admit(c.clone(), 100));
                c
            })
            .collect();
        clients.set_memory_limit(usize::MAX);
        std::thread::scope(|s| {
            for (i, c) in all.iter().enumerate() {
                let others = all.clone();
                s.spawn(move || {
                    for round in 0..2_000usize {
                        c.buffers
                            .input_capacity
                            .store((round * 7919 + i) % 50_000, Ordering::Relaxed);
                        c.account();
                        others[round % others.len()]
                            .deliver(b"message", OutputLimit::outbox(1 << 30));
                        if round % 100 == 0 {
                            let mut out = Vec::new();
                            c.take_outbox(&mut out);
                        }
                    }
                });
            }
            let clients = &clients;
            s.spawn(move || {
                for limit in [usize::MAX, 400_000, usize::MAX, 50_000, usize::MAX] {
                    clients.set_memory_limit(limit);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        });
        for c in &all {
            c.account();
        }
        let shares: usize = all
            .iter()
            .map(|c| c.buffers.accounted.load(Ordering::Relaxed))
            .sum();
        assert_eq!(clients.memory(), shares);
        // Under 50 KB a few clients fit at most: the others went, and hold nothing.
        let evicted = all.iter().filter(|c| c.was_evicted()).count();
        assert!(evicted > 0);
        assert_eq!(clients.evicted.load(Ordering::Relaxed) as usize, evicted);
        assert!(all.iter().filter(|c| c.was_evicted()).all(|c| c
            .buffers
            .accounted
            .load(Ordering::Relaxed)
            == 0));
        for c in &all {
            clients.leave(c.id);
        }
        assert_eq!(clients.memory(), 0);
        clients.measuring_memory();
        assert_eq!(clients.dying(), 0);
    }

    #[test]
    fn recent_peaks_last_eight_seconds() {
        let mut peaks = RecentPeaks::default();
        assert_eq!(peaks.max(1_000), (0, 0));
        peaks.record(1_000, 50_000, 10);
        peaks.record(1_000, 20, 7_000);
        peaks.record(1_003, 100, 100);
        assert_eq!(peaks.max(1_003), (50_000, 7_000));
        assert_eq!(peaks.max(1_007), (50_000, 7_000));
        // Second 1,000 falls out of the window; 1,003 stays until 1,010.
        assert_eq!(peaks.max(1_008), (100, 100));
        // Second 1,008 reuses 1,000's slot from scratch.
        peaks.record(1_008, 30, 0);
        assert_eq!(peaks.max(1_008), (100, 100));
        assert_eq!(peaks.max(1_011), (30, 0));
        assert_eq!(peaks.max(1_016), (0, 0));
    }
}
