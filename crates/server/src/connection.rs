//! One client connection: read, run every complete request (pipelining), write the
//! replies, repeat. Replies the client has yet to take are held while its requests
//! are read and run on, as Redis holds them: what bounds them is Redis's output
//! buffer limits and client eviction (`maxmemory-clients`, `clients.rs`).
//! On a large memory index the keys of the next requests are prefetched before they
//! run (`prefetch_keys`), so their lookups' cache misses overlap.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use resp::{Frame, RequestLimits, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::blocked_keys::{self, Wake};
use crate::clients::{Client, OutputLimit, NO_RESIZE};
use crate::commands::{self, Action, Session};
use crate::db::Gathering;
use crate::gate_hold::GateHold;
use crate::io_threads::{Place, Seat};
use crate::server::Server;

/// Mid-pipeline, replies are written out after each this much of requests served, as
/// Redis serves what one read of its (PROTO_IOBUF_LEN) brings before it writes: so
/// what is held for a client that reads as it writes, which its output limit judges,
/// is the same as in Redis.
const REQUESTS_PER_WRITE: usize = 16 * 1024;

/// Replies are written out once this much has piled up, however few requests made
/// it; while the client does not take them, the next try waits until this much more
/// has piled up.
const OUTPUT_FLUSH: usize = 1024 * 1024;

/// What a client waiting on a reply (WAIT) may send meanwhile before the server stops
/// reading from it: enough to see it hang up, not enough to cost memory.
const BLOCKED_INPUT: usize = 1 << 20;

/// Redis's PROTO_MBULK_BIG_ARG: an argument at least this long is read into room
/// made for exactly it.
const BIG_ARGUMENT: usize = 32 * 1024;

/// Prefetches the index lines of the keys of the next requests in `input` when there
/// are several: their lookups then wait for memory together, not one after another
/// (`hotring::PREFETCH_MAX`). Returns the bytes of the requests looked at.
fn prefetch_keys(index: &hotring::HotRing, input: &[u8]) -> usize {
    let mut keys: [&[u8]; hotring::PREFETCH_MAX] = [&[]; hotring::PREFETCH_MAX];
    let mut n = 0;
    let scanned = resp::peek_second_arguments(input, hotring::PREFETCH_MAX, |key| {
        keys[n] = key;
        n += 1;
    });
    // A lone request's lookup follows at once: nothing to overlap.
    if n > 1 {
        index.prefetch(keys[..n].iter().copied());
    }
    scanned
}

static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// The reply to a wait cut short by `CLIENT UNBLOCK id ERROR`, counted as the error
/// reply it is (INFO errorstats, `total_error_replies`), as every other one is.
fn unblocked_with_error(server: &Server) -> Frame {
    server.command_stats.record_error(UNBLOCKED);
    Frame::error(UNBLOCKED)
}

pub struct Connection {
    stream: TcpStream,
    server: Arc<Server>,
    input: Vec<u8>,
    /// Keeps its place in a request that has not all arrived.
    parser: RequestParser,
    output: Vec<u8>,
    /// How much of `output` is written: the rest waits for the client to read.
    sent: usize,
    /// The length `output` is to reach before the next try to write it (see
    /// [`OUTPUT_FLUSH`]).
    next_write: usize,
    /// Bytes of requests served since the last try to write (see
    /// [`REQUESTS_PER_WRITE`]).
    served_since_write: usize,
    session: Session,
    /// A request parsed but held by CLIENT PAUSE, run when the pause ends, or refused
    /// the gate by a running script, run when the script ends or turns busy.
    paused: Option<Vec<Vec<u8>>>,
    /// The io thread serving it.
    place: Place,
    /// Requests run since the last were counted on its thread.
    ran: u64,
}

/// A connection on its way to another io thread: its socket taken off the reactor of
/// the one it left, to be registered with the next's (`resume`).
pub struct Detached {
    stream: std::net::TcpStream,
    server: Arc<Server>,
    input: Vec<u8>,
    parser: RequestParser,
    output: Vec<u8>,
    session: Session,
    place: Place,
}

/// Serves a socket the listener accepted for the connection's whole life: on the io
/// thread of `seat`, then on each the balancer moves it to (`io_threads.rs`).
pub async fn serve_accepted(
    socket: std::net::TcpStream,
    peer: SocketAddr,
    server: Arc<Server>,
    seat: Seat,
) {
    let place = seat.place().clone();
    let mut next = seat
        .run(async move {
            let socket = match TcpStream::from_std(socket) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "cannot register connection");
                    return None;
                }
            };
            let Some(conn) = Connection::accept(socket, server, place).await else {
                tracing::warn!(%peer, "refused: maxclients reached");
                return None;
            };
            conn.run_logged(peer).await
        })
        .await
        .flatten();
    while let Some((seat, detached)) = next {
        next = seat.run(detached.resume(peer)).await.flatten();
    }
}

impl Detached {
    async fn resume(self, peer: SocketAddr) -> Option<(Seat, Detached)> {
        let Detached {
            stream,
            server,
            input,
            parser,
            output,
            mut session,
            place,
        } = self;
        let stream = match TcpStream::from_std(stream) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "cannot register connection on another io thread");
                leave(&server, &mut session);
                return None;
            }
        };
        let conn = Connection {
            stream,
            server,
            input,
            parser,
            output,
            sent: 0,
            next_write: OUTPUT_FLUSH,
            served_since_write: 0,
            session,
            paused: None,
            place,
            ran: 0,
        };
        conn.run_logged(peer).await
    }
}

/// The client is gone: what it held is let go.
fn leave(server: &Server, session: &mut Session) {
    session.end(server);
    server.clients.leave(session.client.id);
}

/// Why a connection ended, when it was not the client's doing.
pub enum Ended {
    Io(io::Error),
    IdleTimeout,
    Killed,
    OutputLimit,
    Evicted,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Io(e) => write!(f, "{e}"),
            Ended::IdleTimeout => write!(f, "idle longer than the timeout"),
            Ended::Killed => write!(f, "killed by CLIENT KILL"),
            Ended::OutputLimit => write!(f, "replies not read: client-output-buffer-limit reached"),
            Ended::Evicted => write!(f, "evicted: the clients held more than maxmemory-clients"),
        }
    }
}

/// How a blocking wait (WAIT, BLPOP) ended, when the connection goes on.
enum Waited {
    /// Its time passed, or CLIENT UNBLOCK ended it as if it had (TIMEOUT).
    Elapsed,
    /// CLIENT UNBLOCK ... ERROR.
    UnblockedWithError,
    /// A key it waits on was written.
    Woken,
}

/// A command blocked on keys, to run again when one is written.
struct BlockedCommand {
    args: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    timeout: Option<Duration>,
    timeout_reply: Frame,
}

/// The replies given since gathered writes were last written: what becomes an error
/// if those writes are lost.
struct GatheredReplies {
    /// Where in the output they begin.
    from: usize,
    count: usize,
}

/// Why `run_requests` stopped.
enum Step {
    /// No complete request is left in the input.
    Drained,
    /// Replies piled up: write them out, then go on.
    Flush,
    /// CLIENT PAUSE holds the next request (kept in `paused`) this long at most.
    Paused(Duration),
    /// A command answers after a delay, or when unblocked (WAIT).
    After(Option<Duration>, Frame),
    /// A command waits for keys to be written (BLPOP).
    Block(BlockedCommand),
    /// A command woke blocked clients: they try again before the next command runs
    /// (see `blocked_keys`).
    Woke,
    /// The connection ends once the replies are out (QUIT, a protocol error).
    Close,
    /// CLIENT KILL.
    Killed,
    /// A script command, run on the script thread (see `script_thread.rs`).
    Script(Vec<Vec<u8>>),
    /// A running script holds the gate: the next request (kept in `paused`) waits
    /// until it ends or turns busy.
    AwaitScript,
}

impl Ended {
    fn killed(client: &Client) -> Ended {
        if client.outbox_overflowed() {
            Ended::OutputLimit
        } else if client.was_evicted() {
            Ended::Evicted
        } else {
            Ended::Killed
        }
    }
}

impl From<io::Error> for Ended {
    fn from(e: io::Error) -> Self {
        Ended::Io(e)
    }
}

impl Connection {
    /// Registers the client; `None` (after telling the client why) if maxclients are
    /// connected already.
    pub async fn accept(
        mut stream: TcpStream,
        server: Arc<Server>,
        place: Place,
    ) -> Option<Connection> {
        let id = NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed);
        let (addr, laddr) = (stream.peer_addr().ok()?, stream.local_addr().ok()?);
        let client = server.clients.client(id, addr, laddr);
        if !server
            .clients
            .admit(client.clone(), server.config.maxclients())
        {
            let _ = stream
                .write_all(b"-ERR max number of clients reached\r\n")
                .await;
            return None;
        }
        let session = Session::new(client, &server);
        Some(Connection {
            stream,
            server,
            input: Vec::new(),
            parser: RequestParser::default(),
            output: Vec::new(),
            sent: 0,
            next_write: OUTPUT_FLUSH,
            served_since_write: 0,
            session,
            paused: None,
            place,
            ran: 0,
        })
    }

    /// Serves the client until it disconnects, sends QUIT or a malformed request, is
    /// killed or idle too long, or the server shuts down (requests already read are
    /// answered first); or until the balancer moves it to another io thread, when it
    /// is handed back to resume there.
    async fn run(mut self) -> Result<Option<(Seat, Detached)>, Ended> {
        let result = match self.serve().await {
            Ok(Some(seat)) => match self.stream.into_std() {
                Ok(stream) => {
                    let place = seat.place().clone();
                    return Ok(Some((
                        seat,
                        Detached {
                            stream,
                            server: self.server,
                            input: self.input,
                            parser: self.parser,
                            output: self.output,
                            session: self.session,
                            place,
                        },
                    )));
                }
                Err(e) => Err(e.into()),
            },
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        leave(&self.server, &mut self.session);
        result.map(|()| None)
    }

    async fn run_logged(self, peer: SocketAddr) -> Option<(Seat, Detached)> {
        self.run().await.unwrap_or_else(|e| {
            tracing::info!(%peer, reason = %e, "connection closed");
            None
        })
    }

    /// Writes what the socket takes now of the pending replies, without waiting for
    /// it to take more: meanwhile the client's requests are still read and served and
    /// their replies held, as Redis holds them, so a client that writes a whole
    /// pipeline before it reads a reply is never left waiting on a server that waits
    /// on it. What bounds a client that does not read is Redis's:
    /// `client-output-buffer-limit` (the hard limit judged here, the soft one also by
    /// the client cron, for a client that sends nothing more) and `maxmemory-clients`.
    async fn write_some(&mut self) -> Result<(), Ended> {
        self.served_since_write = 0;
        if self.sent == self.output.len() {
            return Ok(());
        }
        // The replies go out once the other connections this thread has requests
        // from have served theirs, as Redis writes every client's replies at the end
        // of a turn of its event loop. A client waiting on many connections (a pool,
        // a load generator) is then woken once for a burst of replies, not once for
        // each: a wakeup is most of the kernel's work in a send on loopback, and
        // under redis-benchmark `-P 16` on one key, woken for each, LPUSH and INCR
        // ran 1.29x and 1.13x slower (BENCHMARKS.md). And any write a reply shows
        // (this client's or another's) must be in the log before the reply leaves, so
        // that a crash of the process cannot lose it: one log write then covers them
        // all, as Redis writes its append-only file once per turn. Alone on its
        // thread, a connection has nobody to wait for (a yield cost redis-benchmark
        // `-c 1` 5%).
        if self.place.shared() {
            after_ready_tasks().await;
        }
        self.server.db.write_held_back();
        let client = self.session.client.clone();
        let pending = self.output.len() - self.sent;
        // The most the buffer held, for the client cron's cut: noted here, before a
        // write that empties it.
        let peak = &client.buffers.output_peak;
        if peak.load(Ordering::Relaxed) < self.output.len() {
            peak.store(self.output.len(), Ordering::Relaxed);
        }
        let config = &self.server.config;
        let limit = if client.is_subscribed() {
            config.pubsub_output_limit()
        } else {
            config.output_limit()
        };
        // The hard limit counts every byte waiting, as Redis's count of its reply
        // blocks' allocations comes to for a big reply (KEYS).
        let soft = OutputLimit { hard: 0, ..limit };
        if limit.hard > 0 && pending as u64 > limit.hard || client.over_output_limit(pending, soft)
        {
            return Err(Ended::OutputLimit);
        }
        let mut written = 0;
        while written < pending {
            match self.stream.try_write(&self.output[self.sent + written..]) {
                Ok(0) => return Err(Ended::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e.into()),
            }
        }
        client
            .traffic
            .net_out
            .fetch_add(written as u64, Ordering::Relaxed);
        self.sent += written;
        if self.sent == self.output.len() {
            self.output.clear();
            self.sent = 0;
            self.next_write = OUTPUT_FLUSH;
        } else {
            // Moved down only once half is written, so a slow reader's replies are
            // moved O(1) times each.
            if self.sent >= self.output.len() / 2 {
                self.output.drain(..self.sent);
                self.sent = 0;
            }
            self.next_write = self.output.len() + OUTPUT_FLUSH;
        }
        self.report_buffers();
        Ok(())
    }

    /// Writes all the pending replies, waiting for the client to take them: before
    /// the connection waits on something else (a blocking command, a pause) or ends.
    /// A client that does not read is still killed by CLIENT KILL, or when its
    /// output passes its limit.
    async fn flush(&mut self) -> Result<(), Ended> {
        let client = self.session.client.clone();
        loop {
            // The write is tried first: a client that killed itself (CLIENT KILL
            // SKIPME no) gets the reply, as in Redis.
            self.write_some().await?;
            if self.output.is_empty() {
                return Ok(());
            }
            tokio::select! {
                ready = self.stream.writable() => ready?,
                _ = client.killed() => return Err(Ended::killed(&client)),
            }
        }
    }

    /// Tells the client's [`Buffers`](crate::clients::Buffers) what this connection
    /// holds now, and (under `maxmemory-clients`) its share of what all clients hold:
    /// after each read, each write, and each batch of requests served.
    fn report_buffers(&self) {
        let b = &self.session.client.buffers;
        let partial = self.parser.progress();
        // As Redis's query buffer: what of a request is parsed already is not in it.
        b.input.store(
            self.input.len().saturating_sub(partial.parsed),
            Ordering::Relaxed,
        );
        b.argv.store(partial.args, Ordering::Relaxed);
        b.state
            .store(self.session.state_memory(), Ordering::Relaxed);
        // Only the query-buffer cron lowers it, and a race with it loses one sample.
        if b.input_peak.load(Ordering::Relaxed) < self.input.len() {
            b.input_peak.store(self.input.len(), Ordering::Relaxed);
        }
        b.input_capacity
            .store(self.input.capacity(), Ordering::Relaxed);
        b.output
            .store(self.output.len() - self.sent, Ordering::Relaxed);
        b.output_capacity
            .store(self.output.capacity(), Ordering::Relaxed);
        // The share is of use only to client eviction, which accounts for every
        // client when it is turned on.
        if self.server.clients.memory_limit() != 0 {
            self.session.client.account();
        }
    }

    /// Client eviction (`maxmemory-clients`), called after `report_buffers` brought
    /// this client's share up to date: whether this client was the one evicted.
    fn evicted_for_client_memory(&self) -> bool {
        self.server.clients.evict() > 0 && self.session.client.is_killed()
    }

    /// Waits `delay` (or for ever) before a reply, as a blocked client does in Redis,
    /// until CLIENT UNBLOCK, or until `wake` is handed a turn. Returns `None` when the
    /// connection should end instead, cleanly: at shutdown or when the client hangs up
    /// (CLIENT KILL is an error, as elsewhere). What the client sends meanwhile is kept
    /// for after, up to [`BLOCKED_INPUT`] bytes.
    async fn wait(
        &mut self,
        delay: Option<Duration>,
        stop: &mut tokio::sync::watch::Receiver<bool>,
        wake: Option<&Wake>,
    ) -> Result<Option<Waited>, Ended> {
        let client = self.session.client.clone();
        let timed = delay.is_some();
        let delay = async {
            match delay {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(delay);
        let woken = async {
            match wake {
                Some(n) => n.notified().await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(woken);
        let unblocked = client.unblocked();
        tokio::pin!(unblocked);
        unblocked.as_mut().enable();
        client.block(timed);
        let waited = loop {
            tokio::select! {
                _ = &mut delay => break Ok(Some(Waited::Elapsed)),
                _ = &mut woken => break Ok(Some(Waited::Woken)),
                _ = &mut unblocked => break Ok(Some(if client.unblocked_with_error() {
                    Waited::UnblockedWithError
                } else {
                    Waited::Elapsed
                })),
                _ = stop.changed() => break Ok(None),
                _ = client.killed() => break Err(Ended::killed(&client)),
                read = self.stream.read_buf(&mut self.input), if self.input.len() < BLOCKED_INPUT => {
                    match read {
                        Ok(0) => break Ok(None),
                        Ok(n) => {
                            client.traffic.net_in.fetch_add(n as u64, Ordering::Relaxed);
                            self.report_buffers();
                        }
                        Err(e) => break Err(e.into()),
                    }
                }
            }
        };
        client.end_block();
        waited
    }

    /// Serves a command that blocked on keys: runs it again each time one of its keys
    /// is written until it is served, its time passes or CLIENT UNBLOCK ends it, and
    /// writes the reply. `false` if the connection is to end (see [`Connection::wait`]).
    async fn block_on_keys(
        &mut self,
        blocked: BlockedCommand,
        stop: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Result<bool, Ended> {
        let server = self.server.clone();
        let id = self.session.client.id;
        let deadline = blocked.timeout.map(|t| tokio::time::Instant::now() + t);
        let wake = Arc::new(Wake::default());
        let waiters = &server.db.blocked;
        waiters.register(id, &blocked.keys, &wake);
        // The turn (see `blocked_keys`) of the last try, given back once it is done.
        let mut had_turn;
        // Whether a try's writes woke other clients (a BLMOVE's push), whose tries
        // this client's reply waits for, as the writers' replies do.
        let mut woke = false;
        let outcome = loop {
            // First again at once: a key may have been written between the command's
            // try and the registration.
            let was_woken = self.session.woken;
            had_turn = waiters.try_begins(&wake);
            // A write that woke this client, or found it not yet registered, may still
            // be gathered on the writer's thread (see `gathered_writes.rs`). A failure
            // shows in the try.
            for key in &blocked.keys {
                let _ = server.db.await_writers(key);
            }
            let action = {
                let mut gate = GateHold::new(&server.gate);
                let run = commands::execute(&server, &mut self.session, &blocked.args, &mut gate);
                self.session.woken = true;
                run
            };
            woke |= blocked_keys::woke_a_client();
            if let Action::AwaitScript = action {
                // Nothing ran: the turn goes back while the script runs on.
                waiters.try_ended(std::mem::take(&mut had_turn));
                let client = self.session.client.clone();
                tokio::select! {
                    _ = server.running_script.ended() => continue,
                    _ = stop.changed() => break Ok(false),
                    _ = client.killed() => break Err(Ended::killed(&client)),
                }
            }
            if matches!(action, Action::Block { .. }) {
                if was_woken {
                    // Still waiting: the next client in line tries.
                    waiters.pass_on(id, &blocked.keys);
                }
                waiters.try_ended(std::mem::take(&mut had_turn));
            }
            let proto = self.session.proto;
            let reply = match action {
                Action::Block { .. } => None,
                Action::Reply(frame) => Some(frame),
                Action::Ok => Some(Frame::Simple("OK".into())),
                _ => unreachable!("a blocking command answers with one reply or blocks"),
            };
            let waited = match reply {
                Some(frame) => {
                    if !self.session.replies_off {
                        frame.encode(proto, &mut self.output);
                    }
                    break Ok(true);
                }
                None => {
                    let left =
                        deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
                    if left == Some(Duration::ZERO) {
                        Ok(Some(Waited::Elapsed))
                    } else {
                        self.wait(left, stop, Some(&wake)).await
                    }
                }
            };
            let frame = match waited {
                Err(e) => break Err(e),
                Ok(None) => break Ok(false),
                Ok(Some(Waited::Woken)) => continue,
                Ok(Some(Waited::Elapsed)) => {
                    commands::count_unblocked(&server, &blocked.args, false);
                    blocked.timeout_reply.clone()
                }
                Ok(Some(Waited::UnblockedWithError)) => {
                    commands::count_unblocked(&server, &blocked.args, true);
                    unblocked_with_error(&server)
                }
            };
            if !self.session.replies_off {
                frame.encode(proto, &mut self.output);
            }
            break Ok(true);
        };
        waiters.unregister(id, &blocked.keys, &wake);
        waiters.try_ended(had_turn);
        self.session.woken = false;
        if woke {
            waiters.served(blocked_keys::SERVED_WITHIN).await;
        }
        outcome
    }

    /// Runs the complete requests in the input from `consumed` on, holding the gate
    /// across them (see `gate_hold`), until the input runs out or something needs
    /// waiting for, which the caller does with the gate let go. Their writes are
    /// gathered into as few engine batches as may be (`gathered_writes.rs`), all
    /// written before the gate is let go and any reply leaves.
    fn run_requests(&mut self, limits: &RequestLimits, consumed: &mut usize) -> Step {
        let server = self.server.clone();
        let mut gate = GateHold::new(&server.gate);
        let mut replies = GatheredReplies {
            from: self.output.len(),
            count: 0,
        };
        let mut gathering = server.db.gather();
        let step = self.run_gathering(limits, consumed, &mut gate, &mut gathering, &mut replies);
        self.answer_lost(gathering.finish(), &mut replies);
        step
    }

    /// If the gathered writes were lost (`written` failed), the replies to the commands
    /// since `gathered` began become its error: they may have shown or counted on what
    /// was lost (any push between them is lost too). Then a new stretch begins.
    fn answer_lost(&mut self, written: engine::Result<()>, gathered: &mut GatheredReplies) {
        if let Err(e) = written {
            tracing::error!(error = %e, "writes gathered from a pipeline were lost");
            let error = commands::storage_error(&e);
            self.output.truncate(gathered.from);
            for _ in 0..gathered.count {
                error.encode(self.session.proto, &mut self.output);
            }
        }
        *gathered = GatheredReplies {
            from: self.output.len(),
            count: 0,
        };
    }

    /// `limits`, tightened while this client has yet to authenticate. Taken per
    /// request: an AUTH lifts them for the requests after it in the same read.
    fn limits_now(&self, limits: &RequestLimits) -> RequestLimits {
        RequestLimits {
            unauthenticated: !self.session.authenticated && self.server.users.auth_required(),
            ..*limits
        }
    }

    fn run_gathering(
        &mut self,
        limits: &RequestLimits,
        consumed: &mut usize,
        gate: &mut GateHold<'_>,
        gathering: &mut Gathering<'_>,
        replies: &mut GatheredReplies,
    ) -> Step {
        let server = self.server.clone();
        let client = self.session.client.clone();
        // Left by another task on this thread (the flag is per thread).
        blocked_keys::woke_a_client();
        let prefetch = server.db.index().filter(|index| index.prefetch_pays());
        // The input up to here has had its keys prefetched.
        let mut prefetched_to = *consumed;
        loop {
            if let Some(index) = prefetch {
                if *consumed >= prefetched_to
                    && self.paused.is_none()
                    && self.parser.between_requests()
                {
                    prefetched_to = *consumed + prefetch_keys(index, &self.input[*consumed..]);
                }
            }
            let args = match self.paused.take() {
                Some(args) => args,
                None => match self
                    .parser
                    .parse(&self.input[*consumed..], &self.limits_now(limits))
                {
                    Ok(Some((args, n))) => {
                        *consumed += n;
                        self.served_since_write += n;
                        if args.is_empty() {
                            continue;
                        }
                        args
                    }
                    Ok(None) => return Step::Drained,
                    Err(e) => {
                        // As Redis: reply, then close; the stream cannot be resynchronised.
                        tracing::info!(client = client.id, addr = %client.addr, error = %e, "protocol error");
                        let text = format!("ERR {e}");
                        server.command_stats.record_error(&text);
                        if !self.session.replies_off {
                            Frame::error(text).encode(self.session.proto, &mut self.output);
                        }
                        return Step::Close;
                    }
                },
            };
            self.ran += 1;
            // As Redis: clients are evicted before any command, after the last one
            // grew what its client holds. The check is one load while it is off.
            if server.clients.memory_limit() != 0 {
                self.report_buffers();
                if self.evicted_for_client_memory() {
                    return Step::Killed;
                }
            }
            // CLIENT PAUSE. The check is one load while no pause is on.
            if let Some(wait) = server
                .db
                .pause
                .holds(|| commands::held_by_write_pause(&server, &self.session, &args))
            {
                self.paused = Some(args);
                return Step::Paused(wait);
            }
            // As Redis: over maxmemory, keys are evicted before any command, so that a
            // tracking client hears of them before its reply; whether a command that
            // may grow the data still runs is `execute`'s to decide. Under the gate, as
            // any write: never inside another client's transaction or script.
            if server.config.maxmemory() != 0 && gate.any() {
                let _ = server.make_room();
            }
            // What others sent this client (messages, invalidations) goes out in order
            // between replies.
            client.take_outbox(&mut self.output);
            // A script command is handed to the script thread only while no script
            // runs: queued behind a running one it would wait for its end where Redis
            // answers BUSY once it is busy. Meanwhile it waits; once the script is
            // busy, `execute` refuses it with BUSY.
            if commands::runs_script(&self.session, &args) && !server.running_script.is_busy() {
                if server.running_script.is_idle() {
                    return Step::Script(args);
                }
                self.paused = Some(args);
                return Step::AwaitScript;
            }
            // Only a command on keys runs with writes gathered: any other may tell
            // others of them (PUBLISH, CLIENT), or wait for other threads (EXEC, MSET
            // wait for the gate), which may wait for the stripes the writes hold.
            let apart = gathering.is_on() && !commands::gathers(&args);
            if apart {
                self.answer_lost(gathering.write(), replies);
            }
            let before = self.output.len();
            let action = commands::execute(&server, &mut self.session, &args, gate);
            server.note_allocations();
            let step = self.answer(action, args);
            replies.count += usize::from(self.output.len() > before);
            if apart {
                // Its own writes, before the next command takes the gate its own way.
                self.answer_lost(gathering.write(), replies);
            }
            if let Some(step) = step {
                return step;
            }
            if blocked_keys::woke_a_client() {
                return Step::Woke;
            }
            if self.served_since_write >= REQUESTS_PER_WRITE || self.output.len() >= self.next_write
            {
                return Step::Flush;
            }
            if client.is_killed() {
                return Step::Killed;
            }
            if server.gate.exclusive_wanted() {
                // Its holder may want a stripe the gathered writes hold.
                self.answer_lost(gathering.write(), replies);
                gate.yield_to_exclusive();
            }
        }
    }

    /// Writes `action`'s reply to `args`, unless it asks for a step first.
    fn answer(&mut self, action: Action, args: Vec<Vec<u8>>) -> Option<Step> {
        // A command that did not run skips no reply of CLIENT REPLY SKIP's.
        let dropped = !matches!(action, Action::AwaitScript) && self.session.drops_reply();
        let proto = self.session.proto;
        match action {
            Action::AwaitScript => {
                self.paused = Some(args);
                return Some(Step::AwaitScript);
            }
            // Pub/sub confirmations are pushes, not replies (arrays in RESP2): Redis
            // sends them even under CLIENT REPLY OFF or SKIP.
            Action::Reply(frame @ Frame::Push(_)) => frame.encode(proto, &mut self.output),
            Action::Replies(frames) if dropped => {
                for frame in frames.into_iter().filter(|f| matches!(f, Frame::Push(_))) {
                    frame.encode(proto, &mut self.output);
                }
            }
            _ if dropped && !matches!(action, Action::Close(_)) => {}
            // Encoded in the protocol the command ran under: HELLO's reply already
            // speaks the protocol it switched to.
            Action::Reply(frame) => frame.encode(proto, &mut self.output),
            Action::Ok => self.output.extend_from_slice(b"+OK\r\n"),
            Action::Replies(frames) => {
                for frame in frames {
                    frame.encode(proto, &mut self.output);
                }
            }
            Action::After(delay, frame) => return Some(Step::After(delay, frame)),
            Action::Block {
                keys,
                timeout,
                timeout_reply,
                rerun,
            } => {
                return Some(Step::Block(BlockedCommand {
                    args: rerun.unwrap_or(args),
                    keys,
                    timeout,
                    timeout_reply,
                }))
            }
            Action::Close(frame) => {
                if let (Some(frame), false) = (frame, dropped) {
                    frame.encode(proto, &mut self.output);
                }
                return Some(Step::Close);
            }
        }
        self.parser.recycle(args);
        None
    }

    /// Runs a script command on the script thread, this connection's thread serving
    /// its other connections meanwhile, and writes its reply. It is awaited to the
    /// end, even by a killed client or a shutdown: the session is away until then.
    async fn run_script(&mut self, args: Vec<Vec<u8>>) -> Option<Step> {
        let server = self.server.clone();
        let stand_in = Session::new(self.session.client.clone(), &server);
        let session = std::mem::replace(&mut self.session, stand_in);
        let ran = server
            .script_thread
            .run(server.clone(), session, args)
            .await
            .expect("the script thread answers every job");
        self.session = ran.session;
        let step = self.answer(ran.action, ran.args);
        if ran.woke && step.is_none() {
            return Some(Step::Woke);
        }
        step
    }

    /// Serves until the connection ends (`None`) or is to move to another io thread.
    async fn serve(&mut self) -> Result<Option<Seat>, Ended> {
        let mut stop = self.server.shutdown_signal();
        // Set while the connection moved: `changed` would not see it.
        if *stop.borrow() {
            return Ok(None);
        }
        let client = self.session.client.clone();
        // The waits between batches, kept from one batch to the next: made anew, each
        // registered with its notifier and left it again, under the notifier's lock,
        // every batch (50 instructions of a pipelined SET and GET's 5,761). `Client::kill`
        // wakes every waiter, since a pause or a blocking command waits with another.
        let mut stop_between = stop.clone();
        let mut stopped = std::pin::pin!(stop_between.changed());
        let mut delivered = std::pin::pin!(client.delivered());
        let mut killed = std::pin::pin!(client.killed());
        loop {
            let limits = RequestLimits {
                max_bulk_len: self.server.config.proto_max_bulk_len(),
                ..RequestLimits::default()
            };
            let mut consumed = 0;
            let mut close = false;
            let mut next = None;
            loop {
                let step = match next.take() {
                    Some(step) => step,
                    None => self.run_requests(&limits, &mut consumed),
                };
                match step {
                    Step::Drained | Step::Killed => break,
                    Step::Close => {
                        close = true;
                        break;
                    }
                    Step::Flush => self.write_some().await?,
                    Step::Woke => {
                        self.server
                            .db
                            .blocked
                            .served(blocked_keys::SERVED_WITHIN)
                            .await
                    }
                    Step::Paused(wait) => {
                        // Answer what came before, then hold this one. A shutdown or
                        // CLIENT KILL does not wait for the pause.
                        self.flush().await?;
                        client.paused.store(true, Ordering::Relaxed);
                        tokio::select! {
                            _ = self.server.db.pause.wait(wait) => {}
                            _ = stop.changed() => return Ok(None),
                            _ = client.killed() => return Err(Ended::killed(&client)),
                        }
                        client.paused.store(false, Ordering::Relaxed);
                    }
                    Step::After(delay, frame) => {
                        let proto = self.session.proto;
                        self.flush().await?;
                        match self.wait(delay, &mut stop, None).await? {
                            None => return Ok(None),
                            Some(Waited::Elapsed | Waited::Woken) => {
                                frame.encode(proto, &mut self.output)
                            }
                            Some(Waited::UnblockedWithError) => {
                                unblocked_with_error(&self.server).encode(proto, &mut self.output)
                            }
                        }
                    }
                    Step::Block(blocked) => {
                        self.flush().await?;
                        if !self.block_on_keys(blocked, &mut stop).await? {
                            return Ok(None);
                        }
                    }
                    Step::Script(args) => next = self.run_script(args).await,
                    Step::AwaitScript => {
                        self.flush().await?;
                        tokio::select! {
                            _ = self.server.running_script.settled() => {}
                            _ = stop.changed() => return Ok(None),
                            _ = client.killed() => return Err(Ended::killed(&client)),
                        }
                    }
                }
            }
            self.input.drain(..consumed);
            // What of a request not yet whole is parsed is the parser's now: the input
            // keeps only the rest, as Redis trims its query buffer, so a long request
            // is not held twice while it arrives.
            let parsed = self.parser.progress().parsed;
            if parsed > 0 {
                self.input.drain(..parsed);
                self.parser.discard(parsed);
            }
            client.take_outbox(&mut self.output);
            if close || *stop.borrow() {
                self.flush().await?;
                return Ok(None);
            }
            self.write_some().await?;
            self.report_buffers();
            if client.is_killed() {
                return Err(Ended::killed(&client));
            }
            // The client cron's cuts (`Clients::resize_buffers`): a big request's or
            // reply's room is kept until it finds the client's requests or replies
            // small again, and an idle client's buffers are freed, to be allocated at
            // its next read or reply. Never below what a buffer holds.
            let b = &client.buffers;
            let input = asked_resize(&b.input_resize).filter(|&r| r < self.input.capacity());
            let output = asked_resize(&b.output_resize).filter(|&r| r < self.output.capacity());
            if let Some(resize) = input {
                self.input.shrink_to(resize);
            }
            if let Some(resize) = output {
                self.output.shrink_to(resize);
            }
            if input.is_some() || output.is_some() {
                self.report_buffers();
            }
            self.place.count_requests(std::mem::take(&mut self.ran));
            // Between batches: no request is half run, the writes the replies showed
            // are written (`write_some`); what is left of one half read moves with the
            // input and parser. Only once the replies are out: those still waiting for
            // the client stay on this thread with the socket.
            debug_assert!(self.paused.is_none());
            if self.output.is_empty() {
                if let Some(to) = self.place.departure() {
                    return Ok(Some(to));
                }
            }
            // As Redis, a monitor is never idle: it only listens.
            let timeout = if client.monitoring.load(Ordering::Relaxed) {
                0
            } else {
                self.server.config.timeout()
            };
            let idle = async {
                if timeout == 0 {
                    std::future::pending::<()>().await
                } else {
                    tokio::time::sleep(Duration::from_secs(timeout)).await
                }
            };
            tokio::select! {
                // In this order: under load the socket is readable when the task wakes,
                // and the select ends at its first branch without polling the others
                // (50 instructions of a pipelined SET and GET's 5,811). None starves:
                // the top of the loop looks at what they wait for.
                biased;
                ready = self.stream.readable() => {
                    ready?;
                    // Room for a read as Redis makes it (PROTO_IOBUF_LEN), kept across
                    // reads; for a big argument, as Redis too, room for exactly the
                    // rest of it.
                    let partial = self.parser.progress();
                    match partial.bulk_end {
                        Some(end)
                            if end - partial.parsed >= BIG_ARGUMENT && end > self.input.len() =>
                        {
                            self.input.reserve_exact(end - self.input.len())
                        }
                        _ => self.input.reserve(16 * 1024),
                    }
                    // One attempt, through tokio's `poll_read`: a read that leaves room
                    // in the buffer shows the socket drained, and it clears the
                    // readiness then, where `try_read_buf` would leave it set and cost
                    // a second, empty `recv` per request batch (tokio#5866).
                    let read = {
                        let mut read = std::pin::pin!(self.stream.read_buf(&mut self.input));
                        std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await
                    };
                    let n = match read {
                        // The readiness was stale; the read's waker is registered.
                        Poll::Pending => continue,
                        // A client that hung up its side may still read the replies
                        // to what it sent (`redis-cli < file`).
                        Poll::Ready(Ok(0)) => {
                            self.flush().await?;
                            return Ok(None);
                        }
                        Poll::Ready(Ok(n)) => n,
                        Poll::Ready(Err(e)) => return Err(e.into()),
                    };
                    client.traffic.net_in.fetch_add(n as u64, Ordering::Relaxed);
                    // Once per read, not per command: the clock costs as much as a GET.
                    client.touch();
                    self.report_buffers();
                    self.server.note_allocations();
                    if self.server.clients.memory_limit() != 0 && self.evicted_for_client_memory() {
                        return Err(Ended::Evicted);
                    }
                }
                // The client reads again: the loop's top writes on.
                ready = self.stream.writable(), if !self.output.is_empty() => ready?,
                // Written out at the top of the loop, which is activity as Redis counts
                // it; a wake-up for the query-buffer cron's cut alone is not.
                _ = &mut delivered => {
                    delivered.set(client.delivered());
                    if client.has_outbox() {
                        client.touch();
                    }
                }
                _ = &mut stopped => return Ok(None),
                _ = &mut killed => return Err(Ended::killed(&client)),
                _ = idle => return Err(Ended::IdleTimeout),
            }
        }
    }
}

/// The capacity the client cron asked a buffer to be cut to, taken (see
/// `Clients::resize_buffers`).
fn asked_resize(asked: &AtomicUsize) -> Option<usize> {
    if asked.load(Ordering::Relaxed) == NO_RESIZE {
        return None;
    }
    Some(asked.swap(NO_RESIZE, Ordering::Relaxed)).filter(|&r| r != NO_RESIZE)
}

/// Returns once the tasks this thread has ready now have run: the task is woken at
/// once, so it runs again after them, and before any whose sockets turned ready since.
/// Not `tokio::task::yield_now`, which polls the thread's sockets before it runs the
/// task again: under redis-benchmark `-P 16`, an extra `epoll_wait` per turn cost
/// GET 4-6% and LPUSH 6% against this (BENCHMARKS.md).
async fn after_ready_tasks() {
    let mut woken = false;
    std::future::poll_fn(|cx| {
        if woken {
            return Poll::Ready(());
        }
        woken = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::db::Db;
    use crate::io_threads::IoThreads;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::time::Instant;

    /// Clients pipelining SETs and GETs of their own keys, each batch written in two
    /// pieces split inside a command, while their connections are moved back and
    /// forth between two io threads: every reply is the one expected, in order.
    #[test]
    fn connections_moved_between_io_threads_lose_no_request_or_reply() {
        const CLIENTS: usize = 4;
        let io = Arc::new(IoThreads::start_unbalanced(2).unwrap());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = Arc::new(Server::new(Config::default(), Db::default()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn({
            let io = io.clone();
            async move {
                loop {
                    let (socket, peer) = listener.accept().await.unwrap();
                    socket.set_nodelay(true).unwrap();
                    let socket = socket.into_std().unwrap();
                    tokio::spawn(serve_accepted(socket, peer, server.clone(), io.seat()));
                }
            }
        });
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicUsize::new(0));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (stop, started) = (stop.clone(), started.clone());
                std::thread::spawn(move || {
                    let mut socket = std::net::TcpStream::connect(addr).unwrap();
                    socket.set_nodelay(true).unwrap();
                    let mut batches = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut request = Vec::new();
                        let mut expected = Vec::new();
                        let values: Vec<String> =
                            (0..8).map(|i| format!("v{c}-{batches}-{i}")).collect();
                        for (i, v) in values.iter().enumerate() {
                            let key = format!("k{c}:{i}");
                            request.extend(resp_command(&["SET", &key, v]));
                            expected.extend(b"+OK\r\n");
                        }
                        for (i, v) in values.iter().enumerate() {
                            request.extend(resp_command(&["GET", &format!("k{c}:{i}")]));
                            expected.extend(format!("${}\r\n{v}\r\n", v.len()).bytes());
                        }
                        let cut = 1 + (batches as usize * 7919) % (request.len() - 1);
                        socket.write_all(&request[..cut]).unwrap();
                        // Read apart, mostly: a connection then moves with half a
                        // request in its input.
                        std::thread::sleep(Duration::from_micros(100));
                        socket.write_all(&request[cut..]).unwrap();
                        let mut replies = vec![0; expected.len()];
                        socket.read_exact(&mut replies).unwrap();
                        assert_eq!(
                            String::from_utf8_lossy(&replies),
                            String::from_utf8_lossy(&expected),
                            "client {c}, batch {batches}"
                        );
                        batches += 1;
                        if batches == 1 {
                            started.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    batches
                })
            })
            .collect();
        // All served on the one active thread first.
        while started.load(Ordering::Relaxed) < CLIENTS {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Each change of the active threads waits for connections to move.
        for round in 0..10 {
            let before = io.moves();
            io.set_active(if round % 2 == 0 { 2 } else { 1 });
            let deadline = Instant::now() + Duration::from_secs(20);
            while io.moves() < before + (CLIENTS / 2) as u64 {
                assert!(
                    Instant::now() < deadline,
                    "round {round}: no connection moved"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for client in clients {
            assert!(client.join().expect("the client's replies were right") > 0);
        }
    }

    fn resp_command(args: &[&str]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).bytes());
        }
        out
    }
}
