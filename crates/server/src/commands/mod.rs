//! The command table: one file per command or family of commands, each a function
//! from arguments to a reply, and [`execute`], which checks arity, authentication,
//! transactions and memory before running one.

mod acl;
mod arg_syntax;
mod bitfield;
mod bits;
mod client;
mod cluster;
mod collections;
mod command;
mod command_docs;
mod config;
mod connection;
mod debug;
mod del;
pub mod dump;
mod eval;
mod exists;
mod expire;
pub mod function;
mod geo;
mod get;
mod hashes;
mod hotkeys;
mod hyperloglog;
mod incr;
mod info;
mod key_specs;
mod keyspace;
mod latency;
mod lcs;
mod lists;
mod memory;
mod migrate;
mod module;
mod monitor;
mod object;
mod pubsub;
mod scan;
mod server;
mod set;
mod sets;
mod slowlog;
mod sort;
mod sorted_sets;
mod stream_groups;
mod streams;
mod strings;
mod tracking;
mod transaction;
pub mod users;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use resp::{Frame, Protocol};

use crate::clients::Client;
use crate::db::Db;
use crate::gate_hold::GateHold;
use crate::keyspace_events;
use crate::scripting::ScriptFlags;
use crate::server::Server;
use key_specs::{
    counted, every, first, keyword, keyword_range, range, unknown_keys, KeySpec, ACCESS, DELETE,
    INSERT, NOT_KEY, OW, RM, RO, RW, UPDATE, VARIABLE_FLAGS,
};

/// Per-connection state commands may read or change.
pub struct Session {
    pub client: Arc<Client>,
    pub proto: Protocol,
    pub authenticated: bool,
    /// The user the connection runs as, as it was at `users_seen`.
    pub user: Arc<users::User>,
    /// The users' generation when `user` was read: a later one means it may have
    /// changed (see [`Session::check_acl`]).
    users_seen: u64,
    /// Commands queued since MULTI.
    pub multi: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was refused while queueing: EXEC must abort.
    pub multi_failed: bool,
    /// WATCHed keys and the versions they had.
    pub watching: Vec<Watched>,
    /// CLIENT REPLY OFF: replies are dropped until CLIENT REPLY ON.
    pub replies_off: bool,
    /// Replies still to drop for CLIENT REPLY SKIP: its own and the next command's.
    pub replies_to_skip: u8,
    /// Running the commands of an EXEC, which may not block or start MONITOR.
    pub in_exec: bool,
    /// Running the commands of a Lua script (EVAL), where XREAD's BLOCK is refused.
    pub in_script: bool,
    /// The running script called a read-only command (CLIENT TRACKING then
    /// remembers the script's keys).
    pub script_read: bool,
    /// The error the last script replied with was a command's, counted in INFO
    /// errorstats when the script called it: its reply is not counted again.
    pub error_counted: bool,
    /// CLIENT TRACKING's options while it is on.
    pub tracking: Option<crate::tracking::Options>,
    /// CLIENT CACHING was given for the next command (or the transaction it opens).
    pub caching: bool,
    pub subscriptions: pubsub::Subscriptions,
    /// A blocked command runs again because a key it waits for was written: a key of
    /// the wrong type is then passed over, not an error, as Redis serves a blocked
    /// client only from a key of the type it waits for.
    pub woken: bool,
}

impl Session {
    /// A connection's session, as the default user; authenticated if that user needs
    /// no password when it connects: as in Redis, setting one later leaves such
    /// clients authenticated.
    pub fn new(client: Arc<Client>, server: &Server) -> Session {
        let users_seen = server.users.generation();
        Session {
            client,
            proto: Protocol::Resp2,
            authenticated: !server.users.auth_required(),
            user: server.users.default_user(),
            users_seen,
            multi: None,
            multi_failed: false,
            watching: Vec::new(),
            replies_off: false,
            replies_to_skip: 0,
            in_exec: false,
            in_script: false,
            error_counted: false,
            script_read: false,
            tracking: None,
            caching: false,
            subscriptions: Default::default(),
            woken: false,
        }
    }

    /// Called once per command run, after it ran: whether its reply is dropped
    /// (CLIENT REPLY OFF or SKIP).
    pub fn drops_reply(&mut self) -> bool {
        if self.replies_to_skip > 0 {
            self.replies_to_skip -= 1;
            return true;
        }
        self.replies_off
    }

    /// What the session keeps for later commands beyond its own struct: watched
    /// keys, subscriptions, tracking prefixes. Counted per entry, as Redis counts
    /// them (an entry and a small key's allocation, not the key's bytes), so the
    /// count costs the same however many there are.
    pub fn state_memory(&self) -> usize {
        const KEY_ALLOCATION: usize = 16;
        let prefixes = self.tracking.as_ref().map_or(0, |t| t.prefixes.len());
        let entries = self.watching.len() + self.subscriptions.len() + prefixes;
        self.watching.capacity() * std::mem::size_of::<Watched>()
            + entries * (std::mem::size_of::<Vec<u8>>() + KEY_ALLOCATION)
    }

    /// Ends what outlives a command: watches, MONITOR, subscriptions, tracking
    /// (RESET, disconnection).
    pub fn end(&mut self, server: &Server) {
        self.unwatch(&server.db);
        server.monitors.remove(self.client.id);
        self.client.monitoring.store(false, Ordering::Relaxed);
        pubsub::leave_all(server, self);
        self.stop_tracking(server);
    }

    /// Turns CLIENT TRACKING off for this session.
    pub fn stop_tracking(&mut self, server: &Server) {
        server.db.tracking.disable(self.client.id);
        self.tracking = None;
        self.caching = false;
    }

    /// Runs the connection as `user` from now on (AUTH, HELLO AUTH, RESET).
    pub fn set_user(&mut self, server: &Server, user: Arc<users::User>) {
        self.users_seen = server.users.generation();
        *self.client.user.lock().unwrap_or_else(|e| e.into_inner()) = user.name.clone();
        self.user = user;
    }

    /// Whether the connection's user may make the call `args`, counted in `slot`;
    /// the user is read again first if any user changed since it was. A deleted
    /// user's connection (killed by ACL DELUSER) may run nothing more.
    #[inline]
    pub fn check_acl(
        &mut self,
        server: &Server,
        slot: usize,
        args: &[Vec<u8>],
    ) -> Result<(), users::Denied> {
        let now = server.users.generation();
        if now != self.users_seen {
            self.users_seen = now;
            match server.users.get(&self.user.name) {
                Some(user) => self.user = user,
                None => return Err(users::Denied::Command),
            }
        }
        if self.user.unrestricted {
            return Ok(());
        }
        self.user.check(slot, &users::Call::new(slot, args))
    }

    /// Whether this client's user may read every key in the call `args` (see
    /// [`users::User::reads_every_key_in`]). Its user is as fresh as the permission
    /// check of the command running made it.
    pub fn reads_every_key_in(&self, args: &[Vec<u8>]) -> bool {
        let Some((slot, _)) = lookup(&args[0]) else {
            return false;
        };
        self.user
            .reads_every_key_in(slot, &users::Call::new(slot, args))
    }

    /// Forgets WATCHed keys, releasing the database's watch count.
    pub fn unwatch(&mut self, db: &Db) {
        if !self.watching.is_empty() {
            db.unwatch(self.watching.len());
            self.watching.clear();
        }
    }
}

/// A key a client WATCHes.
pub struct Watched {
    pub key: Vec<u8>,
    /// Its version then (`Db::watch`).
    pub version: crate::db::WatchVersion,
    /// Whether it was stored past its deadline then: its deletion is no change (see
    /// `transaction::changed_since_watched`).
    pub stale: bool,
}

/// What a command sees.
pub struct Ctx<'a> {
    pub server: &'a Server,
    pub session: &'a mut Session,
}

impl Ctx<'_> {
    fn db(&self) -> &Db {
        &self.server.db
    }

    /// What a blocking command answers when one of the keys it pops from holds another
    /// type: WRONGTYPE, or, once woken, nothing, so it goes on waiting (see
    /// [`Session::woken`]).
    fn wrong_source_type(&self) -> Option<Reply> {
        (!self.session.woken).then(|| error(WRONG_TYPE))
    }

    /// Counts a read of `key` as a hit or a miss (INFO keyspace_hits / misses); a
    /// miss is also a `keymiss` notification. As in Redis, every command that reads a
    /// key's value counts, writes that read it first do not.
    fn hit(&self, key: &[u8], found: bool) {
        if !found {
            self.notify(keyspace_events::KEY_MISS, "keymiss", key);
        }
        self.count_read(found);
    }

    /// [`Ctx::hit`] without the notification (OBJECT, as Redis).
    fn count_read(&self, found: bool) {
        let traffic = &self.session.client.traffic;
        let counter = if found {
            &traffic.hits
        } else {
            &traffic.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The live entry of `key`, counted as a read ([`Ctx::hit`]).
    fn read(&self, key: &[u8]) -> engine::Result<Option<crate::entry::Entry>> {
        let found = self.db().get(key)?;
        self.hit(key, found.is_some());
        Ok(found)
    }

    /// [`Ctx::read`] for a command on values of type `kind` (see [`Db::get_of`]).
    fn read_of(
        &self,
        key: &[u8],
        kind: crate::entry::Kind,
    ) -> engine::Result<Option<crate::entry::Entry>> {
        let found = self.db().get_of(key, kind)?;
        self.hit(key, found.is_some());
        Ok(found)
    }

    /// Whether `key` is live, counted as a read ([`Ctx::hit`]).
    fn exists(&self, key: &[u8]) -> engine::Result<bool> {
        let found = self.db().contains(key)?;
        self.hit(key, found);
        Ok(found)
    }

    /// The type of `key` if it is live, counted as a read ([`Ctx::hit`]) but not as an
    /// access on the key (see [`Db::peek_kind`]).
    fn kind_untouched(&self, key: &[u8]) -> engine::Result<Option<crate::entry::Kind>> {
        let found = self.db().peek_kind(key)?;
        self.hit(key, found.is_some());
        Ok(found)
    }

    /// [`Ctx::exists`] without counting an access on the key (see [`Db::peek_kind`]).
    fn exists_untouched(&self, key: &[u8]) -> engine::Result<bool> {
        Ok(self.kind_untouched(key)?.is_some())
    }

    /// Queues a keyspace notification (see [`crate::keyspace_events`]).
    fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.db().events.fire(class, event, key);
    }
}

pub enum Action {
    Reply(Frame),
    /// `+OK`, the commonest reply, written without building a frame.
    Ok,
    /// Several replies to one command (SUBSCRIBE confirms each channel apart).
    Replies(Vec<Frame>),
    /// Reply (if anything), then close the connection (QUIT, SHUTDOWN).
    Close(Option<Frame>),
    /// Reply once this long has passed, or never (`None`): the connection answers
    /// what came before, then waits for the time, the client leaving or shutdown
    /// (WAIT for replicas that hotkv does not have). Inside EXEC, at once.
    After(Option<std::time::Duration>, Frame),
    /// Nothing to serve yet: wait until one of `keys` is written, then run the command
    /// again (or `rerun`, if given: XREAD's `$` resolved), for at most `timeout`
    /// (forever if `None`), after which `timeout_reply` answers. Inside EXEC,
    /// `timeout_reply` at once.
    Block {
        keys: Vec<Vec<u8>>,
        timeout: Option<std::time::Duration>,
        timeout_reply: Frame,
        rerun: Option<Vec<Vec<u8>>>,
    },
    /// A script holds the gate (see `script_thread.rs`): nothing has run; the
    /// connection waits until the script ends or turns busy (a woken blocked command:
    /// until it ends), then runs it again.
    AwaitScript,
}

impl Action {
    /// The error reply's text (after the `-`), if the reply is one.
    fn error(&self) -> Option<&str> {
        match self {
            Action::Reply(Frame::Error(e))
            | Action::Close(Some(Frame::Error(e)))
            | Action::After(_, Frame::Error(e))
            | Action::Block {
                timeout_reply: Frame::Error(e),
                ..
            } => Some(e),
            _ => None,
        }
    }
}

/// A command's outcome; `Err` is a storage failure, which [`execute`] turns into an
/// error reply.
pub type Reply = Result<Action, engine::Error>;

type Run = fn(&mut Ctx, &[Vec<u8>]) -> Reply;

/// Modifies the keyspace.
const WRITE: u32 = 1;
/// May grow memory: refused (or evicts first) over maxmemory.
const DENYOOM: u32 = 2;
/// Allowed before AUTH.
const NO_AUTH: u32 = 4;
/// Runs at once inside MULTI instead of being queued.
const NO_QUEUE: u32 = 8;
/// Reads keys.
const READONLY: u32 = 16;
/// Administrative.
const ADMIN: u32 = 32;
/// Touches several keys at once: runs alone (the gate held exclusively), so no other
/// command sees it half done, as in Redis.
const ALONE: u32 = 64;
/// EXEC: runs the queued commands, the gate held exclusively as for ALONE.
const EXEC: u32 = 128;
/// Refused as Redis refuses it by default (DEBUG): before it runs, so inside MULTI the
/// transaction is doomed.
const PROTECTED: u32 = 256;
/// Constant or O(log n) time, as Redis flags it: its latency samples go to the
/// `fast-command` event instead of `command`.
const FAST: u32 = 512;
/// Refused inside MULTI (the transaction is doomed), as Redis refuses SAVE and SHUTDOWN.
const NO_MULTI: u32 = 1 << 10;
/// Not logged in SLOWLOG (EXEC: the commands it runs are, each on its own).
const SKIP_SLOWLOG: u32 = 1 << 11;
/// A publish/subscribe command: in the @pubsub category.
const PUBSUB: u32 = 1 << 12;
// The flags below up to NO_ASYNC_LOADING, but for ALLOW_BUSY, describe what Redis
// allows in states hotkv has no counterpart of: a dump being loaded, a stale replica.
// hotkv only reports them, in COMMAND INFO, because clients and tools read a command's
// flags there.
/// Allowed while Redis loads its dump.
const LOADING: u32 = 1 << 13;
/// Allowed on a replica whose link to its primary is down.
const STALE: u32 = 1 << 14;
/// Allowed whatever the server's state (Redis's CMD_LOADING and CMD_STALE together).
const ANY_STATE: u32 = LOADING | STALE;
/// Not allowed from a script.
const NOSCRIPT: u32 = 1 << 15;
/// Allowed while a script is busy (see `running_script.rs`): runs without the gate.
const ALLOW_BUSY: u32 = 1 << 16;
/// Refused while a replica loads its primary's data in the background.
const NO_ASYNC_LOADING: u32 = 1 << 17;
/// May wait for keys to be written (BLPOP): in the @blocking category.
const BLOCKING: u32 = 1 << 18;
/// Never set in the table: COMMAND INFO shows `movablekeys` for commands whose key
/// specs count their keys (see `key_specs::movable`).
const MOVABLE_KEYS: u32 = 1 << 19;
/// Redis feeds MONITOR these itself (EVAL, then the commands it calls): reported
/// only, as hotkv's MONITOR already shows EVAL and each command a script calls.
const SKIP_MONITOR: u32 = 1 << 20;
/// Its key arguments may all be absent (EVAL with no keys): reported only.
const NO_MANDATORY_KEYS: u32 = 1 << 21;
/// Reads, but Redis may send something to its replicas for it (PUBLISH, PFCOUNT, a
/// script without declared flags): held by CLIENT PAUSE WRITE and refused from a
/// read-only script, as writes are. COMMAND INFO does not show it (Redis 7.0 does not).
const MAY_REPLICATE: u32 = 1 << 22;

// ACL categories (COMMAND INFO, COMMAND LIST FILTERBY ACLCAT) beyond those Redis derives
// from the flags (@write, @read, @admin and @dangerous, @fast or else @slow); see
// `command.rs` for the names and their order.
const KEYSPACE: u16 = 1;
const STRING: u16 = 1 << 1;
const BITMAP: u16 = 1 << 2;
const CONNECTION: u16 = 1 << 3;
const TRANSACTION: u16 = 1 << 4;
/// @admin on a command without the `admin` flag (LASTSAVE, ROLE).
const ADMIN_CATEGORY: u16 = 1 << 5;
const DANGEROUS: u16 = 1 << 6;
const LIST: u16 = 1 << 7;
const HASH: u16 = 1 << 8;
const SET: u16 = 1 << 9;
const SORTEDSET: u16 = 1 << 10;
const HYPERLOGLOG: u16 = 1 << 11;
const SCRIPTING: u16 = 1 << 12;
const GEO: u16 = 1 << 13;
const STREAM_CATEGORY: u16 = 1 << 14;

pub struct Command {
    name: &'static str,
    /// Redis's convention: n > 0 exactly n arguments (with the name), n < 0 at least -n.
    arity: i32,
    flags: u32,
    /// Where its keys are and what it does to them.
    keys: &'static [KeySpec],
    /// ACL categories besides those the flags imply.
    acl: u16,
    run: Run,
}

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: &'static [KeySpec],
    acl: u16,
    run: Run,
) -> Command {
    Command {
        name,
        arity,
        flags,
        keys,
        acl,
        run,
    }
}

const NO_KEYS: &[KeySpec] = &[];
const SET_KEY: &[KeySpec] = &[first(RW | ACCESS | UPDATE | VARIABLE_FLAGS)
    .noted("RW and ACCESS due to the optional `GET` argument")];
const GETEX_KEY: &[KeySpec] =
    &[first(RW | ACCESS | UPDATE).noted("RW and UPDATE because it changes the TTL")];
/// OBJECT ENCODING key, MEMORY USAGE key.
const KEY_AFTER_SUBCOMMAND: &[KeySpec] = &[range(RO, 2, 0, 1)];
const W: u32 = WRITE | DENYOOM;
const R: u32 = READONLY;

#[rustfmt::skip]
/// The notes on the key specs of EVAL, EVAL_RO, FCALL and FCALL_RO, as Redis words
/// them (the EVALSHA forms have none).
const ASSUME_RW: &str =
    "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE";
const ASSUME_RO: &str =
    "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS";

const TABLE: &[Command] = &[
    // Connection.
    cmd("ping", -1, FAST, NO_KEYS, CONNECTION, connection::ping),
    cmd("echo", 2, FAST | ANY_STATE, NO_KEYS, CONNECTION, connection::echo),
    cmd("quit", -1, NO_AUTH | NO_QUEUE | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, CONNECTION, connection::quit),
    cmd("reset", 1, NO_AUTH | NO_QUEUE | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, CONNECTION, connection::reset),
    cmd("hello", -1, NO_AUTH | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, CONNECTION, connection::hello),
    cmd("auth", -2, NO_AUTH | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, CONNECTION, connection::auth),
    cmd("select", 2, FAST | ANY_STATE, NO_KEYS, CONNECTION, connection::select),
    cmd("client", -2, 0, NO_KEYS, 0, client::client),
    cmd("acl", -2, 0, NO_KEYS, 0, acl::acl),
    // Strings.
    cmd("get", 2, R | FAST, &[first(RO | ACCESS)], STRING, get::get),
    cmd("getdel", 2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], STRING, get::getdel),
    cmd("getex", -2, WRITE | FAST, GETEX_KEY, STRING, get::getex),
    cmd("getset", 3, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, set::getset),
    cmd("set", -3, W, SET_KEY, STRING, set::set),
    cmd("setnx", 3, W | FAST, &[first(OW | INSERT)], STRING, set::setnx),
    cmd("setex", 4, W, &[first(OW | UPDATE)], STRING, set::setex),
    cmd("psetex", 4, W, &[first(OW | UPDATE)], STRING, set::psetex),
    cmd("mget", -2, R | FAST, &[every(RO | ACCESS)], STRING, strings::mget),
    cmd("mset", -3, W | ALONE, &[range(OW | UPDATE, 1, -1, 2)], STRING, set::mset),
    cmd("msetnx", -3, W | ALONE, &[range(OW | INSERT, 1, -1, 2)], STRING, set::msetnx),
    cmd("strlen", 2, R | FAST, &[first(RO)], STRING, strings::strlen),
    cmd("append", 3, W | FAST, &[first(RW | INSERT)], STRING, strings::append),
    cmd("getrange", 4, R, &[first(RO | ACCESS)], STRING, strings::getrange),
    cmd("substr", 4, R, &[first(RO | ACCESS)], STRING, strings::getrange),
    cmd("setrange", 4, W, &[first(RW | UPDATE)], STRING, strings::setrange),
    cmd("incr", 2, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, incr::incr),
    cmd("decr", 2, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, incr::decr),
    cmd("incrby", 3, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, incr::incrby),
    cmd("decrby", 3, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, incr::decrby),
    cmd("incrbyfloat", 3, W | FAST, &[first(RW | ACCESS | UPDATE)], STRING, incr::incrbyfloat),
    cmd("getbit", 3, R | FAST, &[first(RO | ACCESS)], BITMAP, bits::getbit),
    cmd("setbit", 4, W, &[first(RW | ACCESS | UPDATE)], BITMAP, bits::setbit),
    cmd("bitcount", -2, R, &[first(RO | ACCESS)], BITMAP, bits::bitcount),
    cmd("bitpos", -3, R, &[first(RO | ACCESS)], BITMAP, bits::bitpos),
    cmd("bitop", -4, W | ALONE, &[range(OW | UPDATE, 2, 0, 1), range(RO | ACCESS, 3, -1, 1)], BITMAP, bits::bitop),
    cmd("bitfield", -2, W, &[first(RW | ACCESS | UPDATE | VARIABLE_FLAGS).noted("This command allows both access and modification of the key")], BITMAP, bitfield::bitfield),
    cmd("bitfield_ro", -2, R | FAST, &[first(RO | ACCESS)], BITMAP, bitfield::bitfield_ro),
    cmd("lcs", -3, R, &[range(RO | ACCESS, 1, 1, 1)], STRING, lcs::lcs),
    // Hashes.
    cmd("hset", -4, W | FAST, &[first(RW | UPDATE)], HASH, hashes::hset),
    cmd("hsetnx", 4, W | FAST, &[first(RW | INSERT)], HASH, hashes::hsetnx),
    cmd("hmset", -4, W | FAST, &[first(RW | UPDATE)], HASH, hashes::hmset),
    cmd("hget", 3, R | FAST, &[first(RO | ACCESS)], HASH, hashes::hget),
    cmd("hmget", -3, R | FAST, &[first(RO | ACCESS)], HASH, hashes::hmget),
    cmd("hdel", -3, WRITE | FAST, &[first(RW | DELETE)], HASH, hashes::hdel),
    cmd("hlen", 2, R | FAST, &[first(RO)], HASH, hashes::hlen),
    cmd("hstrlen", 3, R | FAST, &[first(RO)], HASH, hashes::hstrlen),
    cmd("hexists", 3, R | FAST, &[first(RO)], HASH, hashes::hexists),
    cmd("hgetall", 2, R, &[first(RO | ACCESS)], HASH, hashes::hgetall),
    cmd("hkeys", 2, R, &[first(RO | ACCESS)], HASH, hashes::hkeys),
    cmd("hvals", 2, R, &[first(RO | ACCESS)], HASH, hashes::hvals),
    cmd("hincrby", 4, W | FAST, &[first(RW | ACCESS | UPDATE)], HASH, hashes::hincrby),
    cmd("hincrbyfloat", 4, W | FAST, &[first(RW | ACCESS | UPDATE)], HASH, hashes::hincrbyfloat),
    cmd("hrandfield", -2, R, &[first(RO | ACCESS)], HASH, hashes::hrandfield),
    cmd("hscan", -3, R, &[first(RO | ACCESS)], HASH, hashes::hscan),
    // Lists.
    cmd("lpush", -3, W | FAST, &[first(RW | INSERT)], LIST, lists::lpush),
    cmd("rpush", -3, W | FAST, &[first(RW | INSERT)], LIST, lists::rpush),
    cmd("lpushx", -3, W | FAST, &[first(RW | INSERT)], LIST, lists::lpushx),
    cmd("rpushx", -3, W | FAST, &[first(RW | INSERT)], LIST, lists::rpushx),
    cmd("lpop", -2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], LIST, lists::lpop),
    cmd("rpop", -2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], LIST, lists::rpop),
    cmd("llen", 2, R | FAST, &[first(RO)], LIST, lists::llen),
    cmd("lindex", 3, R, &[first(RO | ACCESS)], LIST, lists::lindex),
    cmd("lrange", 4, R, &[first(RO | ACCESS)], LIST, lists::lrange),
    cmd("lset", 4, W, &[first(RW | UPDATE)], LIST, lists::lset),
    cmd("ltrim", 4, WRITE, &[first(RW | DELETE)], LIST, lists::ltrim),
    cmd("lrem", 4, WRITE, &[first(RW | DELETE)], LIST, lists::lrem),
    cmd("linsert", 5, W, &[first(RW | INSERT)], LIST, lists::linsert),
    cmd("lpos", -3, R, &[first(RO | ACCESS)], LIST, lists::lpos),
    cmd("lmove", 5, W | ALONE, &[first(RW | ACCESS | DELETE), range(RW | INSERT, 2, 0, 1)], LIST, lists::lmove),
    cmd("blpop", -3, WRITE | NOSCRIPT | BLOCKING, &[range(RW | ACCESS | DELETE, 1, -2, 1)], LIST, lists::blpop),
    cmd("brpop", -3, WRITE | NOSCRIPT | BLOCKING, &[range(RW | ACCESS | DELETE, 1, -2, 1)], LIST, lists::brpop),
    cmd("blmove", 6, W | NOSCRIPT | BLOCKING | ALONE, &[first(RW | ACCESS | DELETE), range(RW | INSERT, 2, 0, 1)], LIST, lists::blmove),
    cmd("brpoplpush", 4, W | NOSCRIPT | BLOCKING | ALONE, &[first(RW | ACCESS | DELETE), range(RW | INSERT, 2, 0, 1)], LIST, lists::brpoplpush),
    cmd("lmpop", -4, WRITE, &[counted(RW | ACCESS | DELETE, 1, 0, 1, 1)], LIST, lists::lmpop),
    cmd("blmpop", -5, WRITE | BLOCKING, &[counted(RW | ACCESS | DELETE, 2, 0, 1, 1)], LIST, lists::blmpop),
    cmd("rpoplpush", 3, W | ALONE, &[first(RW | ACCESS | DELETE), range(RW | INSERT, 2, 0, 1)], LIST, lists::rpoplpush),
    // Sets.
    cmd("sadd", -3, W | FAST, &[first(RW | INSERT)], SET, sets::sadd),
    cmd("srem", -3, WRITE | FAST, &[first(RW | DELETE)], SET, sets::srem),
    cmd("smembers", 2, R, &[first(RO | ACCESS)], SET, sets::smembers),
    cmd("sismember", 3, R | FAST, &[first(RO)], SET, sets::sismember),
    cmd("smismember", -3, R | FAST, &[first(RO | ACCESS)], SET, sets::smismember),
    cmd("scard", 2, R | FAST, &[first(RO)], SET, sets::scard),
    cmd("spop", -2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], SET, sets::spop),
    cmd("srandmember", -2, R, &[first(RO | ACCESS)], SET, sets::srandmember),
    cmd("smove", 4, WRITE | FAST | ALONE, &[first(RW | ACCESS | DELETE), range(RW | INSERT, 2, 0, 1)], SET, sets::smove),
    cmd("sinter", -2, R | ALONE, &[every(RO | ACCESS)], SET, sets::sinter),
    cmd("sinterstore", -3, W | ALONE, &[first(RW | UPDATE), range(RO | ACCESS, 2, -1, 1)], SET, sets::sinterstore),
    cmd("sunion", -2, R | ALONE, &[every(RO | ACCESS)], SET, sets::sunion),
    cmd("sunionstore", -3, W | ALONE, &[first(OW | UPDATE), range(RO | ACCESS, 2, -1, 1)], SET, sets::sunionstore),
    cmd("sdiff", -2, R | ALONE, &[every(RO | ACCESS)], SET, sets::sdiff),
    cmd("sdiffstore", -3, W | ALONE, &[first(OW | UPDATE), range(RO | ACCESS, 2, -1, 1)], SET, sets::sdiffstore),
    cmd("sscan", -3, R, &[first(RO | ACCESS)], SET, sets::sscan),
    cmd("sintercard", -3, R | ALONE, &[counted(RO | ACCESS, 1, 0, 1, 1)], SET, sets::sintercard),
    // Sorted sets.
    cmd("zadd", -4, W | FAST, &[first(RW | UPDATE)], SORTEDSET, sorted_sets::zadd),
    cmd("zincrby", 4, W | FAST, &[first(RW | ACCESS | UPDATE)], SORTEDSET, sorted_sets::zincrby),
    cmd("zrem", -3, WRITE | FAST, &[first(RW | DELETE)], SORTEDSET, sorted_sets::zrem),
    cmd("zcard", 2, R | FAST, &[first(RO)], SORTEDSET, sorted_sets::zcard),
    cmd("zscore", 3, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zscore),
    cmd("zmscore", -3, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zmscore),
    cmd("zrank", 3, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrank),
    cmd("zrevrank", 3, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrevrank),
    cmd("zcount", 4, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zcount),
    cmd("zlexcount", 4, R | FAST, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zlexcount),
    cmd("zrange", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrange),
    cmd("zrangebyscore", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrangebyscore),
    cmd("zrevrangebyscore", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrevrangebyscore),
    cmd("zrangebylex", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrangebylex),
    cmd("zrevrangebylex", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrevrangebylex),
    cmd("zrevrange", -4, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrevrange),
    cmd("zrangestore", -5, W | ALONE, &[first(OW | UPDATE), range(RO | ACCESS, 2, 0, 1)], SORTEDSET, sorted_sets::zrangestore),
    cmd("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, &[range(RW | ACCESS | DELETE, 1, -2, 1)], SORTEDSET, sorted_sets::bzpopmin),
    cmd("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, &[range(RW | ACCESS | DELETE, 1, -2, 1)], SORTEDSET, sorted_sets::bzpopmax),
    cmd("zmpop", -4, WRITE, &[counted(RW | ACCESS | DELETE, 1, 0, 1, 1)], SORTEDSET, sorted_sets::zmpop),
    cmd("bzmpop", -5, WRITE | BLOCKING, &[counted(RW | ACCESS | DELETE, 2, 0, 1, 1)], SORTEDSET, sorted_sets::bzmpop),
    cmd("zpopmin", -2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], SORTEDSET, sorted_sets::zpopmin),
    cmd("zpopmax", -2, WRITE | FAST, &[first(RW | ACCESS | DELETE)], SORTEDSET, sorted_sets::zpopmax),
    cmd("zremrangebyrank", 4, WRITE, &[first(RW | DELETE)], SORTEDSET, sorted_sets::zremrangebyrank),
    cmd("zremrangebyscore", 4, WRITE, &[first(RW | DELETE)], SORTEDSET, sorted_sets::zremrangebyscore),
    cmd("zremrangebylex", 4, WRITE, &[first(RW | DELETE)], SORTEDSET, sorted_sets::zremrangebylex),
    cmd("zrandmember", -2, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zrandmember),
    cmd("zscan", -3, R, &[first(RO | ACCESS)], SORTEDSET, sorted_sets::zscan),
    cmd("zunionstore", -4, W | ALONE, &[first(OW | UPDATE), counted(RO | ACCESS, 2, 0, 1, 1)], SORTEDSET, sorted_sets::zunionstore),
    cmd("zinterstore", -4, W | ALONE, &[first(OW | UPDATE), counted(RO | ACCESS, 2, 0, 1, 1)], SORTEDSET, sorted_sets::zinterstore),
    cmd("zdiffstore", -4, W | ALONE, &[first(OW | UPDATE), counted(RO | ACCESS, 2, 0, 1, 1)], SORTEDSET, sorted_sets::zdiffstore),
    cmd("zunion", -3, R | ALONE, &[counted(RO | ACCESS, 1, 0, 1, 1)], SORTEDSET, sorted_sets::zunion),
    cmd("zinter", -3, R | ALONE, &[counted(RO | ACCESS, 1, 0, 1, 1)], SORTEDSET, sorted_sets::zinter),
    cmd("zdiff", -3, R | ALONE, &[counted(RO | ACCESS, 1, 0, 1, 1)], SORTEDSET, sorted_sets::zdiff),
    cmd("zintercard", -3, R | ALONE, &[counted(RO | ACCESS, 1, 0, 1, 1)], SORTEDSET, sorted_sets::zintercard),
    // Streams.
    cmd("xadd", -5, W | FAST, &[first(RW | UPDATE).noted("UPDATE instead of INSERT because of the optional trimming feature")], STREAM_CATEGORY, streams::xadd),
    cmd("xlen", 2, R | FAST, &[first(RO)], STREAM_CATEGORY, streams::xlen),
    cmd("xrange", -4, R, &[first(RO | ACCESS)], STREAM_CATEGORY, streams::xrange),
    cmd("xrevrange", -4, R, &[first(RO | ACCESS)], STREAM_CATEGORY, streams::xrevrange),
    cmd("xdel", -3, WRITE | FAST, &[first(RW | DELETE)], STREAM_CATEGORY, streams::xdel),
    cmd("xtrim", -4, WRITE, &[first(RW | DELETE)], STREAM_CATEGORY, streams::xtrim),
    cmd("xread", -4, R | BLOCKING, &[keyword_range(RO | ACCESS, "STREAMS", 1, -1, 2)], STREAM_CATEGORY, streams::xread),
    cmd("xsetid", -3, W | FAST, &[first(RW | UPDATE)], STREAM_CATEGORY, streams::xsetid),
    cmd("xreadgroup", -7, WRITE | BLOCKING, &[keyword_range(RO | ACCESS, "STREAMS", 4, -1, 2)], STREAM_CATEGORY, stream_groups::xreadgroup),
    cmd("xack", -4, WRITE | FAST, &[first(RW | UPDATE)], STREAM_CATEGORY, stream_groups::xack),
    cmd("xpending", -3, R, &[first(RO | ACCESS)], STREAM_CATEGORY, stream_groups::xpending),
    cmd("xclaim", -6, WRITE | FAST, &[first(RW | UPDATE)], STREAM_CATEGORY, stream_groups::xclaim),
    cmd("xautoclaim", -6, WRITE | FAST, &[first(RW | DELETE)], STREAM_CATEGORY, stream_groups::xautoclaim),
    cmd("xgroup", -2, 0, NO_KEYS, 0, stream_groups::xgroup),
    cmd("xinfo", -2, 0, NO_KEYS, 0, stream_groups::xinfo),
    // Geospatial indexes (sorted sets scored by geohash).
    cmd("geoadd", -5, W, &[first(RW | UPDATE)], GEO, geo::geoadd),
    cmd("geodist", -4, R, &[first(RO | ACCESS)], GEO, geo::geodist),
    cmd("geohash", -2, R, &[first(RO | ACCESS)], GEO, geo::geohash),
    cmd("geopos", -2, R, &[first(RO | ACCESS)], GEO, geo::geopos),
    cmd("georadius", -6, W | ALONE, &[first(RO | ACCESS), keyword(OW | UPDATE, "STORE", 6), keyword(OW | UPDATE, "STOREDIST", 6)], GEO, geo::georadius),
    cmd("georadius_ro", -6, R, &[first(RO | ACCESS)], GEO, geo::georadius_ro),
    cmd("georadiusbymember", -5, W | ALONE, &[first(RO | ACCESS), keyword(OW | UPDATE, "STORE", 5), keyword(OW | UPDATE, "STOREDIST", 5)], GEO, geo::georadiusbymember),
    cmd("georadiusbymember_ro", -5, R, &[first(RO | ACCESS)], GEO, geo::georadiusbymember_ro),
    cmd("geosearch", -7, R, &[first(RO | ACCESS)], GEO, geo::geosearch),
    cmd("geosearchstore", -8, W | ALONE, &[first(OW | UPDATE), range(RO | ACCESS, 2, 0, 1)], GEO, geo::geosearchstore),
    // Keyspace.
    cmd("del", -2, WRITE, &[every(RM | DELETE)], KEYSPACE, del::del),
    cmd("unlink", -2, WRITE | FAST, &[every(RM | DELETE)], KEYSPACE, del::del),
    cmd("exists", -2, R | FAST, &[every(RO)], KEYSPACE, exists::exists),
    cmd("touch", -2, R | FAST, &[every(RO)], KEYSPACE, exists::touch),
    cmd("type", 2, R | FAST, &[first(RO)], KEYSPACE, keyspace::type_of),
    cmd("rename", 3, WRITE | ALONE, &[first(RW | ACCESS | DELETE), range(OW | UPDATE, 2, 0, 1)], KEYSPACE, keyspace::rename),
    cmd("renamenx", 3, WRITE | ALONE | FAST, &[first(RW | ACCESS | DELETE), range(OW | INSERT, 2, 0, 1)], KEYSPACE, keyspace::renamenx),
    cmd("randomkey", 1, R, NO_KEYS, KEYSPACE, keyspace::randomkey),
    cmd("keys", 2, R, NO_KEYS, KEYSPACE | DANGEROUS, scan::keys),
    cmd("pfadd", -2, W | FAST, &[first(RW | INSERT)], HYPERLOGLOG, hyperloglog::pfadd),
    cmd("pfcount", -2, R | ALONE | MAY_REPLICATE, &[every(RW | ACCESS).noted("RW because it may change the internal representation of the key, and propagate to replicas")], HYPERLOGLOG, hyperloglog::pfcount),
    cmd("pfmerge", -2, W | ALONE, &[first(RW | ACCESS | INSERT), range(RO | ACCESS, 2, -1, 1)], HYPERLOGLOG, hyperloglog::pfmerge),
    cmd("sort", -2, W | ALONE, &[
        first(RO | ACCESS),
        unknown_keys(RO | ACCESS, None).noted("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
        unknown_keys(OW | UPDATE, Some(sort::store_key)).noted("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"),
    ], SET | SORTEDSET | LIST | DANGEROUS, sort::sort),
    cmd("sort_ro", -2, R | ALONE, &[
        first(RO | ACCESS),
        unknown_keys(RO | ACCESS, None).noted("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
    ], SET | SORTEDSET | LIST | DANGEROUS, sort::sort_ro),
    cmd("scan", -2, R, NO_KEYS, KEYSPACE, scan::scan),
    cmd("dbsize", 1, R | FAST, NO_KEYS, KEYSPACE, server::dbsize),
    cmd("flushdb", -1, WRITE | ALONE, NO_KEYS, KEYSPACE | DANGEROUS, server::flush),
    cmd("flushall", -1, WRITE | ALONE, NO_KEYS, KEYSPACE | DANGEROUS, server::flush),
    cmd("expire", -3, WRITE | FAST, &[first(RW | UPDATE)], KEYSPACE, expire::expire),
    cmd("pexpire", -3, WRITE | FAST, &[first(RW | UPDATE)], KEYSPACE, expire::pexpire),
    cmd("expireat", -3, WRITE | FAST, &[first(RW | UPDATE)], KEYSPACE, expire::expireat),
    cmd("pexpireat", -3, WRITE | FAST, &[first(RW | UPDATE)], KEYSPACE, expire::pexpireat),
    cmd("ttl", 2, R | FAST, &[first(RO | ACCESS)], KEYSPACE, expire::ttl),
    cmd("pttl", 2, R | FAST, &[first(RO | ACCESS)], KEYSPACE, expire::pttl),
    cmd("expiretime", 2, R | FAST, &[first(RO | ACCESS)], KEYSPACE, expire::expiretime),
    cmd("pexpiretime", 2, R | FAST, &[first(RO | ACCESS)], KEYSPACE, expire::pexpiretime),
    cmd("persist", 2, WRITE | FAST, &[first(RW | UPDATE)], KEYSPACE, expire::persist),
    cmd("object", -2, 0, NO_KEYS, 0, object::object),
    cmd("copy", -3, W | ALONE, &[first(RO | ACCESS), range(OW | UPDATE, 2, 0, 1)], KEYSPACE, keyspace::copy),
    cmd("move", 3, WRITE | FAST, &[first(RW | ACCESS | UPDATE)], KEYSPACE, keyspace::move_key),
    cmd("dump", 2, R, &[first(RO | ACCESS)], KEYSPACE, dump::dump),
    cmd("restore", -4, W, &[first(OW | UPDATE)], KEYSPACE | DANGEROUS, dump::restore),
    cmd("migrate", -6, WRITE | ALONE, &[
        range(RW | ACCESS | DELETE, 3, 0, 1),
        keyword_range(RW | ACCESS | DELETE, "KEYS", -2, -1, 0).incomplete(migrate::keys_at),
    ], KEYSPACE | DANGEROUS, migrate::migrate),
    // Transactions.
    cmd("multi", 1, NO_QUEUE | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, TRANSACTION, transaction::multi),
    cmd("exec", 1, NO_QUEUE | EXEC | ANY_STATE | NOSCRIPT | SKIP_SLOWLOG, NO_KEYS, TRANSACTION, transaction::exec),
    cmd("discard", 1, NO_QUEUE | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, TRANSACTION, transaction::discard),
    cmd("watch", -2, NO_QUEUE | FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, &[every(RO)], TRANSACTION, transaction::watch),
    cmd("unwatch", 1, FAST | ANY_STATE | NOSCRIPT | ALLOW_BUSY, NO_KEYS, TRANSACTION, transaction::unwatch),
    // Server.
    cmd("command", -1, ANY_STATE, NO_KEYS, CONNECTION, command::command),
    cmd("config", -2, 0, NO_KEYS, 0, config::config),
    cmd("info", -1, ANY_STATE, NO_KEYS, DANGEROUS, info::info),
    cmd("time", 1, FAST | ANY_STATE, NO_KEYS, 0, server::time),
    cmd("role", 1, FAST | ANY_STATE | NOSCRIPT, NO_KEYS, ADMIN_CATEGORY | DANGEROUS, server::role),
    cmd("memory", -2, 0, NO_KEYS, 0, memory::memory),
    cmd("swapdb", 3, WRITE | FAST, NO_KEYS, KEYSPACE | DANGEROUS, server::swapdb),
    cmd("shutdown", -1, ADMIN | ANY_STATE | NOSCRIPT | NO_MULTI | ALLOW_BUSY, NO_KEYS, 0, server::shutdown),
    cmd("slowlog", -2, 0, NO_KEYS, 0, slowlog::slowlog),
    cmd("latency", -2, 0, NO_KEYS, 0, latency::latency),
    cmd("save", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI | ALONE, NO_KEYS, 0, server::save),
    cmd("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | ALONE, NO_KEYS, 0, server::bgsave),
    cmd("bgrewriteaof", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, NO_KEYS, 0, server::bgrewriteaof),
    cmd("lastsave", 1, FAST | ANY_STATE, NO_KEYS, ADMIN_CATEGORY | DANGEROUS, server::lastsave),
    cmd("debug", -2, ADMIN | PROTECTED | ANY_STATE | NOSCRIPT | ALONE, NO_KEYS, 0, debug::debug),
    cmd("module", -2, 0, NO_KEYS, 0, module::module),
    cmd("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NO_KEYS, 0, server::replicaof),
    cmd("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NO_KEYS, 0, server::replicaof),
    cmd("lolwut", -1, R | FAST, NO_KEYS, 0, server::lolwut),
    cmd("wait", 3, NOSCRIPT, NO_KEYS, CONNECTION, server::wait),
    cmd("monitor", 1, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0, monitor::monitor),
    cmd("hotkeys", -1, READONLY, NO_KEYS, KEYSPACE, hotkeys::hotkeys),
    // Scripting: Lua scripts (see `eval.rs`) and function libraries (`function.rs`).
    cmd("eval", -3, ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, &[counted(RW | ACCESS | UPDATE, 2, 0, 1, 1).noted(ASSUME_RW)], SCRIPTING, eval::eval),
    cmd("evalsha", -3, ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, &[counted(RW | ACCESS | UPDATE, 2, 0, 1, 1)], SCRIPTING, eval::evalsha),
    cmd("eval_ro", -3, R | ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, &[counted(RO | ACCESS, 2, 0, 1, 1).noted(ASSUME_RO)], SCRIPTING, eval::eval_ro),
    cmd("evalsha_ro", -3, R | ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, &[counted(RO | ACCESS, 2, 0, 1, 1)], SCRIPTING, eval::evalsha_ro),
    cmd("script", -2, 0, NO_KEYS, 0, eval::script),
    cmd("function", -2, 0, NO_KEYS, 0, function::function),
    cmd("fcall", -3, ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | MAY_REPLICATE, &[counted(RW | ACCESS | UPDATE, 2, 0, 1, 1).noted(ASSUME_RW)], SCRIPTING, function::fcall),
    cmd("fcall_ro", -3, R | ALONE | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, &[counted(RO | ACCESS, 2, 0, 1, 1).noted(ASSUME_RO)], SCRIPTING, function::fcall_ro),
    // Pub/sub.
    cmd("subscribe", -2, ANY_STATE | PUBSUB | NOSCRIPT, NO_KEYS, 0, pubsub::subscribe),
    cmd("unsubscribe", -1, ANY_STATE | PUBSUB | NOSCRIPT, NO_KEYS, 0, pubsub::unsubscribe),
    cmd("psubscribe", -2, ANY_STATE | PUBSUB | NOSCRIPT, NO_KEYS, 0, pubsub::psubscribe),
    cmd("punsubscribe", -1, ANY_STATE | PUBSUB | NOSCRIPT, NO_KEYS, 0, pubsub::punsubscribe),
    cmd("ssubscribe", -2, ANY_STATE | PUBSUB | NOSCRIPT, &[every(NOT_KEY)], 0, pubsub::ssubscribe),
    cmd("sunsubscribe", -1, ANY_STATE | PUBSUB | NOSCRIPT, &[every(NOT_KEY)], 0, pubsub::sunsubscribe),
    cmd("publish", 3, FAST | ANY_STATE | PUBSUB | MAY_REPLICATE, NO_KEYS, 0, pubsub::publish),
    cmd("spublish", 3, FAST | ANY_STATE | PUBSUB | MAY_REPLICATE, &[first(NOT_KEY)], 0, pubsub::spublish),
    cmd("pubsub", -2, 0, NO_KEYS, 0, pubsub::pubsub),
    cmd("cluster", -2, 0, NO_KEYS, 0, cluster::cluster),
    cmd("asking", 1, FAST, NO_KEYS, CONNECTION, cluster::not_a_cluster),
    cmd("readonly", 1, FAST | ANY_STATE, NO_KEYS, CONNECTION, cluster::not_a_cluster),
    cmd("readwrite", 1, FAST | ANY_STATE, NO_KEYS, CONNECTION, cluster::not_a_cluster),
];

/// The command table by name: open addressing over the names packed in three words,
/// lowercase and zero-padded, so that a lookup hashes three words and compares three,
/// where a general map would hash and compare bytes (a lookup runs for every request).
struct ByName {
    /// The packed name of each slot, its length (padding hides a name's trailing NULs)
    /// and its command's index in [`TABLE`], `EMPTY` for none. Kept at most half full,
    /// so a probe ends soon.
    slots: Box<[([u64; 3], u8, u16)]>,
}

impl ByName {
    /// The longest name, "georadiusbymember_ro", has 20 letters.
    const LONGEST: usize = 24;
    const EMPTY: u16 = u16::MAX;

    fn new() -> ByName {
        let size = (TABLE.len() * 2).next_power_of_two();
        assert!(TABLE.len() < Self::EMPTY as usize);
        let mut by_name = ByName {
            slots: vec![([0; 3], 0, Self::EMPTY); size].into_boxed_slice(),
        };
        for (i, c) in TABLE.iter().enumerate() {
            let words = Self::pack(c.name.as_bytes())
                .unwrap_or_else(|| panic!("{} is too long to look up", c.name));
            let mut slot = by_name.home(&words);
            while by_name.slots[slot].2 != Self::EMPTY {
                assert_ne!(
                    by_name.slots[slot].0, words,
                    "{} is in the table twice",
                    c.name
                );
                slot = (slot + 1) & (size - 1);
            }
            by_name.slots[slot] = (words, c.name.len() as u8, i as u16);
        }
        by_name
    }

    /// `name` in lowercase, zero-padded to three words; `None` if it is longer than
    /// any command's.
    #[inline]
    fn pack(name: &[u8]) -> Option<[u64; 3]> {
        let mut lower = [0u8; Self::LONGEST];
        for (l, c) in lower.get_mut(..name.len())?.iter_mut().zip(name) {
            *l = c.to_ascii_lowercase();
        }
        let word =
            |i: usize| u64::from_le_bytes(lower[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        Some([word(0), word(1), word(2)])
    }

    #[inline]
    fn home(&self, words: &[u64; 3]) -> usize {
        let mixed = (words[0] ^ words[1].rotate_left(21) ^ words[2].rotate_left(42))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> 32) as usize & (self.slots.len() - 1)
    }

    #[inline]
    fn get(&self, name: &[u8]) -> Option<usize> {
        let words = Self::pack(name)?;
        let mut slot = self.home(&words);
        loop {
            let (there, len, index) = self.slots[slot];
            if index == Self::EMPTY {
                return None;
            }
            if there == words && len as usize == name.len() {
                return Some(index as usize);
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
    }
}

/// The command named `name` (any case) and its index in the table.
fn lookup(name: &[u8]) -> Option<(usize, &'static Command)> {
    static BY_NAME: OnceLock<ByName> = OnceLock::new();
    let i = BY_NAME.get_or_init(ByName::new).get(name)?;
    Some((i, &TABLE[i]))
}

/// The commands that run a Lua script on the script thread (see `script_thread.rs`).
const SCRIPT_COMMANDS: [&str; 6] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// Whether the request runs a Lua script on the script thread: EVAL, FCALL and their
/// forms, unless queued inside MULTI. Asked of every request, so without the table's
/// lookup: a name's length is compared first, and few commands are 4 to 10 letters
/// starting with e or f.
pub fn runs_script(session: &Session, args: &[Vec<u8>]) -> bool {
    session.multi.is_none() && is_script_command(&args[0])
}

fn is_script_command(name: &[u8]) -> bool {
    matches!(name.first(), Some(b'e' | b'E' | b'f' | b'F'))
        && SCRIPT_COMMANDS
            .iter()
            .any(|script| script.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether CLIENT PAUSE WRITE holds this request, as Redis decides it: a command that
/// writes or may replicate, or an EXEC whose queue holds one. Requests refused at once
/// (an unknown command, a wrong number of arguments) are not held: they only get an
/// error.
pub fn held_by_write_pause(server: &Server, session: &Session, args: &[Vec<u8>]) -> bool {
    let Some((index, _)) = lookup(&args[0]) else {
        return false;
    };
    let stat = stat_slot(index, args);
    check_arity(index, stat, args).is_ok()
        && flagged(server, session, index, stat, args, WRITE | MAY_REPLICATE)
}

/// Whether the request for the command at `index` (`stat` its subcommand's slot) has
/// one of the flags `mask`, or, for EXEC, one of the commands queued has. A script or
/// function that declared its flags is judged by them, as Redis judges it before it
/// runs: it writes unless it declared `no-writes`, and may replicate only if it writes.
fn flagged(
    server: &Server,
    session: &Session,
    index: usize,
    stat: usize,
    args: &[Vec<u8>],
    mask: u32,
) -> bool {
    let flags = match declared_script_flags(server, &TABLE[index], args) {
        Some(declared) if declared.no_writes() => 0,
        Some(_) => WRITE,
        None => flags_and_keys(index, stat).0,
    };
    if flags & EXEC != 0 {
        return session.multi.as_ref().is_some_and(|queue| {
            queue.iter().any(|q| {
                lookup(&q[0])
                    .is_some_and(|(i, _)| flagged(server, session, i, stat_slot(i, q), q, mask))
            })
        });
    }
    flags & mask != 0
}

/// The flags the script or function that `args` (of `cmd`) runs declared: `None` if
/// it declared none (a script without a `#!` line), if it is not known (an EVALSHA of
/// a script not cached, an FCALL of no function), or if a running script holds the
/// scripts (the command is then judged by its own flags rather than wait).
fn declared_script_flags(server: &Server, cmd: &Command, args: &[Vec<u8>]) -> Option<ScriptFlags> {
    let flags = match cmd.name {
        "eval" | "eval_ro" => crate::scripting::declared_flags(&args[1])?,
        "evalsha" | "evalsha_ro" => {
            let sha = std::str::from_utf8(&args[1]).ok()?.to_ascii_lowercase();
            server.try_scripts()?.get(&sha)?.flags
        }
        "fcall" | "fcall_ro" => server.try_scripts()?.libraries.function(&args[1])?.flags,
        _ => return None,
    };
    flags.declared.then_some(flags)
}

/// Runs one request from a client. `args` is not empty.
pub fn execute(
    server: &Server,
    session: &mut Session,
    args: &[Vec<u8>],
    gate: &mut GateHold<'_>,
) -> Action {
    let action = crate::tracking::as_caller(session.client.id, || run(server, session, args, gate));
    if matches!(action, Action::AwaitScript) {
        return action;
    }
    let counted = std::mem::take(&mut session.error_counted);
    if let Some(e) = action.error().filter(|_| !counted) {
        server.command_stats.record_error(e);
    }
    // CLIENT CACHING holds for one command, or for the transaction that follows it.
    if session.caching
        && session.multi.is_none()
        && lookup(&args[0]).is_none_or(|(_, c)| c.name != "client")
    {
        session.caching = false;
    }
    server.db.tracking.flush_broadcasts();
    server.publish_events();
    action
}

fn run(
    server: &Server,
    session: &mut Session,
    args: &[Vec<u8>],
    gate: &mut GateHold<'_>,
) -> Action {
    let Some((index, cmd)) = lookup(&args[0]) else {
        return refuse(session, unknown(args));
    };
    let stat = stat_slot(index, args);
    // As Redis 7: a container's unknown subcommand is refused before it runs (so
    // inside MULTI it is not queued, and the transaction is doomed).
    if args.len() >= 2
        && stat_slots().containers[index].is_some()
        && subcommand_at(index, stat).is_none()
    {
        return refuse(session, unknown_subcommand(cmd.name, &args[1]));
    }
    if let Err(e) = check_arity(index, stat, args) {
        server.command_stats.record_rejected(stat);
        return refuse_command(server, session, cmd.flags, e);
    }
    // The subcommand's flags where it has its own (FUNCTION LOAD writes, LIST does not).
    let flags = flags_and_keys(index, stat).0;
    if !session.authenticated && cmd.flags & NO_AUTH == 0 && server.users.auth_required() {
        server.command_stats.record_rejected(stat);
        return refuse_command(
            server,
            session,
            cmd.flags,
            Frame::error("NOAUTH Authentication required."),
        );
    }
    if flags & PROTECTED != 0 && !(cmd.name == "debug" && debug::allowed(server, &session.client)) {
        server.command_stats.record_rejected(stat);
        return refuse_command(
            server,
            session,
            cmd.flags,
            server::protected_refusal(cmd.name),
        );
    }
    if cmd.flags & NO_MULTI != 0 && session.multi.is_some() {
        server.command_stats.record_rejected(stat);
        return refuse_command(
            server,
            session,
            cmd.flags,
            Frame::error("ERR Command not allowed inside a transaction"),
        );
    }
    if let Err(denied) = permitted(server, session, stat, args, LogContext::of(session)) {
        server.command_stats.record_rejected(stat);
        return refuse_command(
            server,
            session,
            cmd.flags,
            Frame::error(denied.refusal(stat)),
        );
    }
    if session.proto == Protocol::Resp2
        && !pubsub::ALLOWED_WHILE_SUBSCRIBED.contains(&cmd.name)
        && session.client.is_subscribed()
    {
        server.command_stats.record_rejected(stat);
        let name =
            subcommand_at(index, stat).map_or(cmd.name.to_string(), |s| full_name(cmd.name, s));
        return refuse_command(server, session, cmd.flags, pubsub::refusal(&name));
    }
    // While a script is busy, only the commands Redis allows then run, without the
    // gate (the script holds it); the rest are refused, queued ones too, which dooms
    // the transaction.
    let busy = server.running_script.is_busy();
    if busy && flags & ALLOW_BUSY == 0 {
        if session.woken {
            // A blocked command woken by the script's writes waits it out: Redis
            // serves blocked clients only once the script has ended.
            return Action::AwaitScript;
        }
        server.command_stats.record_rejected(stat);
        return refuse_command(
            server,
            session,
            cmd.flags,
            Frame::error(server.running_script.busy_error()),
        );
    }
    if cmd.flags & NO_QUEUE == 0 && session.multi.is_some() {
        // As Redis: over maxmemory nothing more is queued, whatever the command, or
        // a transaction could hold any amount of memory.
        if let Err(e) = server.make_room() {
            server.command_stats.record_rejected(stat);
            return refuse(session, Frame::error(e));
        }
        if let Some(queue) = session.multi.as_mut() {
            queue.push(args.to_vec());
            session.client.buffers.queue(args);
        }
        // CLIENT LIST's cmd: the last command sent, queued ones included, as in Redis.
        session
            .client
            .last_command
            .store(stat as u64 + 1, Ordering::Relaxed);
        return Action::Reply(Frame::Simple("QUEUED".into()));
    }
    if busy {
        gate.release();
    } else {
        // Taken before anything is counted or done: refused, the command runs again.
        let held = if cmd.flags & (ALONE | EXEC) != 0 {
            gate.exclusive()
        } else {
            gate.shared()
        };
        if !held {
            return Action::AwaitScript;
        }
    }
    let client = &session.client;
    client.traffic.commands.fetch_add(1, Ordering::Relaxed);
    client
        .last_command
        .store(stat as u64 + 1, Ordering::Relaxed);
    // As Redis, an EXEC is refused over maxmemory (and its transaction discarded) if
    // any command it queued may grow the data; those then run unchecked.
    let may_grow = if cmd.flags & EXEC != 0 {
        session
            .multi
            .as_ref()
            .is_some_and(|queue| queue.iter().any(|queued| may_grow_data(queued)))
    } else {
        flags & DENYOOM != 0
    };
    if may_grow {
        if let Err(e) = server.make_room() {
            server.command_stats.record_rejected(stat);
            return refuse_command(server, session, cmd.flags, Frame::error(e));
        }
    }
    // As Redis, PING too is refused while saves fail: a health check that passes
    // would hide that writes do not.
    let refusal = server.write_refusal().filter(|_| {
        flagged(server, session, index, stat, args, WRITE)
            || cmd.name == "ping" && server.saves_failing()
    });
    if let Some(refusal) = refusal {
        server.command_stats.record_rejected(stat);
        return refuse_command(server, session, cmd.flags, Frame::error(refusal));
    }
    remember_reads(server, session, index, stat, args);
    feed_monitors_before(server, session, index, args);
    let started = server.command_stats.tick();
    let outcome = (cmd.run)(&mut Ctx { server, session }, args);
    let action = outcome.unwrap_or_else(|e| Action::Reply(storage_error(&e)));
    if matches!(action, Action::Block { .. }) {
        // Counted once, when it is served or gives up (`count_unblocked`), as Redis
        // counts a blocked command.
        feed_monitors(server, session, index, stat, args, None);
    } else {
        record(server, session, index, stat, args, started, action.error());
    }
    action
}

/// Whether the command may run with writes gathered (`gathered_writes.rs`): it reads
/// or writes keys, and does not run alone. Any other may tell other clients of the
/// writes (PUBLISH, CLIENT), or wait for other threads (EXEC and MSET wait for the
/// gate), which may wait for the stripes the gathered writes hold.
pub fn gathers(args: &[Vec<u8>]) -> bool {
    lookup(&args[0]).is_some_and(|(index, cmd)| {
        let flags = flags_and_keys(index, stat_slot(index, args)).0;
        flags & (WRITE | READONLY) != 0 && cmd.flags & (ALONE | EXEC) == 0
    })
}

/// Whether the command is refused over maxmemory: by its own flags, or its
/// subcommand's, as FUNCTION LOAD may grow memory and FUNCTION LIST not.
fn may_grow_data(args: &[Vec<u8>]) -> bool {
    lookup(&args[0])
        .is_some_and(|(index, _)| flags_and_keys(index, stat_slot(index, args)).0 & DENYOOM != 0)
}

/// CLIENT TRACKING: the keys a read-only command is about to read are remembered
/// for the client, unless OPTIN / OPTOUT and CLIENT CACHING say otherwise, or BCAST
/// tells it of every change anyway.
/// A script's reads are not remembered one by one: EVAL remembers the keys it was
/// given if the script read anything (`remember_keys`), as Redis does.
#[inline]
fn remember_reads(server: &Server, session: &Session, index: usize, stat: usize, args: &[Vec<u8>]) {
    if session.tracking.is_some() {
        remember_tracked_reads(server, session, index, stat, args);
    }
}

#[cold]
fn remember_tracked_reads(
    server: &Server,
    session: &Session,
    index: usize,
    stat: usize,
    args: &[Vec<u8>],
) {
    let (flags, keys) = flags_and_keys(index, stat);
    if flags & READONLY == 0 || TABLE[index].acl & SCRIPTING != 0 {
        return;
    }
    remember_keys(
        server,
        session,
        key_specs::keys_of_call(keys, args).map(|(i, _)| &args[i]),
    );
}

/// CLIENT TRACKING: remembers `keys` as read by the client, unless its mode says
/// otherwise.
pub(crate) fn remember_keys<'a>(
    server: &Server,
    session: &Session,
    keys: impl Iterator<Item = &'a Vec<u8>>,
) {
    let Some(mode) = &session.tracking else {
        return;
    };
    let wanted = if mode.optin {
        session.caching
    } else {
        !(mode.optout && session.caching)
    };
    let remember = !mode.bcast && wanted;
    for key in keys {
        if remember {
            server.db.tracking.remember(key, session.client.id);
        }
        // A write that found no tracker to tell may still be gathered on another
        // thread (see `gathered_writes.rs`): the read that follows must show it. A
        // failure shows in the read.
        let _ = server.db.await_writers(key);
    }
}

/// Shows the command to MONITOR clients once it has run. As Redis: administrative
/// commands are not shown, nor is a container's unknown subcommand, which Redis
/// refuses before it runs; scripts (`SKIP_MONITOR`) were shown before they ran
/// ([`feed_monitors_before`]).
#[inline]
fn feed_monitors(
    server: &Server,
    session: &Session,
    index: usize,
    stat: usize,
    args: &[Vec<u8>],
    error: Option<&str>,
) {
    if server.monitors.active()
        && flags_and_keys(index, stat).0 & (ADMIN | SKIP_MONITOR) == 0
        && !error.is_some_and(|e| e.starts_with(UNKNOWN_SUBCOMMAND))
    {
        monitor_line(server, session, index, args);
    }
}

/// Shows a script (EVAL and the like) to MONITOR clients before it runs, as Redis
/// does: its line comes before those of the commands it calls.
fn feed_monitors_before(server: &Server, session: &Session, index: usize, args: &[Vec<u8>]) {
    if server.monitors.active() && TABLE[index].flags & SKIP_MONITOR != 0 {
        monitor_line(server, session, index, args);
    }
}

/// A command's MONITOR line; a script's commands are shown as from `lua`, as in
/// Redis.
#[cold]
fn monitor_line(server: &Server, session: &Session, index: usize, args: &[Vec<u8>]) {
    let name = TABLE[index].name;
    let source = match session.in_script {
        true => "lua".to_string(),
        false => session.client.addr.to_string(),
    };
    server.monitors.feed(
        &source,
        args,
        |i| is_secret(name, args, i),
        server.outbox_limit(),
    );
}

/// A blocked command that ended unserved (its time ran out, or CLIENT UNBLOCK): one
/// call, failed if it was unblocked with an error.
pub fn count_unblocked(server: &Server, args: &[Vec<u8>], failed: bool) {
    if let Some((index, _)) = lookup(&args[0]) {
        let stat = stat_slot(index, args);
        server.command_stats.record_call(
            stat,
            std::time::Duration::ZERO,
            failed,
            server.config.latency_tracking(),
        );
    }
}

/// Counts a call of the command at `index` in the table (`stat`: its counters, see
/// [`stat_slot`]) that started at `started` and answered `error` if any (INFO
/// commandstats) and, if it took long enough, logs it (SLOWLOG). A subcommand given the
/// wrong number of arguments, which only the container can tell, is a refusal, as
/// Redis counts it. EXEC is timed as a whole but not logged: the commands it ran are,
/// one by one, as in Redis.
fn record(
    server: &Server,
    session: &Session,
    index: usize,
    stat: usize,
    args: &[Vec<u8>],
    started: u64,
    error: Option<&str>,
) {
    if error.is_some_and(|e| e.starts_with(WRONG_ARITY)) {
        server.command_stats.record_rejected(stat);
        return;
    }
    let took = server.command_stats.took_since(started);
    server.command_stats.record_call(
        stat,
        took,
        error.is_some(),
        server.config.latency_tracking(),
    );
    let event = if TABLE[index].flags & FAST != 0 {
        "fast-command"
    } else {
        "command"
    };
    server.note_latency(event, took);
    feed_monitors(server, session, index, stat, args, error);
    let slow = server.config.slowlog_threshold().is_some_and(|t| took >= t);
    if !slow || TABLE[index].flags & SKIP_SLOWLOG != 0 {
        return;
    }
    let args: Vec<&[u8]> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if is_secret(TABLE[index].name, args, i) {
                b"(redacted)"
            } else {
                a.as_slice()
            }
        })
        .collect();
    let client = &session.client;
    let name = client
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    server.command_stats.log_slow(
        &args,
        took,
        client.addr.to_string(),
        name,
        server.config.slowlog_max_len(),
    );
}

/// The subcommands of the container commands, in capitals: Redis 7 counts a call by
/// its subcommand (`cmdstat_client|list`, CLIENT LIST's `cmd=client|list`), and a
/// container's errors list them.
#[rustfmt::skip]
const SUBCOMMANDS: &[(&str, &[Subcommand])] = &[
    ("cluster", &[
        sub("ADDSLOTS", -3, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("ADDSLOTSRANGE", -4, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("BUMPEPOCH", 2, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("COUNT-FAILURE-REPORTS", 3, ADMIN | STALE, NO_KEYS, 0),
        sub("COUNTKEYSINSLOT", 3, STALE, NO_KEYS, 0),
        sub("DELSLOTS", -3, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("DELSLOTSRANGE", -4, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("FAILOVER", -2, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("FLUSHSLOTS", 2, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("FORGET", 3, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("GETKEYSINSLOT", 4, STALE, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
        sub("INFO", 2, STALE, NO_KEYS, 0),
        sub("KEYSLOT", 3, STALE, NO_KEYS, 0),
        sub("LINKS", 2, STALE, NO_KEYS, 0),
        sub("MEET", -4, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("MYID", 2, STALE, NO_KEYS, 0),
        sub("NODES", 2, STALE, NO_KEYS, 0),
        sub("REPLICAS", 3, ADMIN | STALE, NO_KEYS, 0),
        sub("REPLICATE", 3, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("RESET", -2, ADMIN | NOSCRIPT | STALE, NO_KEYS, 0),
        sub("SAVECONFIG", 2, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("SET-CONFIG-EPOCH", 3, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("SETSLOT", -4, ADMIN | STALE | NO_ASYNC_LOADING, NO_KEYS, 0),
        sub("SHARDS", 2, STALE, NO_KEYS, 0),
        sub("SLAVES", 3, ADMIN | STALE, NO_KEYS, 0),
        sub("SLOTS", 2, STALE, NO_KEYS, 0),
    ]),
    ("acl", &[
        sub("CAT", -2, ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("DELUSER", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("DRYRUN", -4, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("GENPASS", -2, ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("GETUSER", 3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("LIST", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("LOAD", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("LOG", -2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("SAVE", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("SETUSER", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("USERS", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("WHOAMI", 2, ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
    ]),
    ("client", &[
        sub("ID", 2, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("GETNAME", 2, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("SETNAME", 3, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("INFO", 2, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("LIST", -2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("KILL", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("SETINFO", -4, 0, NO_KEYS, CONNECTION),
        sub("NO-EVICT", 3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("REPLY", 3, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("PAUSE", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("UNPAUSE", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("UNBLOCK", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("TRACKING", -3, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("CACHING", 3, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("GETREDIR", 2, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("TRACKINGINFO", 2, ANY_STATE | NOSCRIPT, NO_KEYS, CONNECTION),
        sub("HELP", 2, ANY_STATE, NO_KEYS, CONNECTION),
    ]),
    ("command", &[
        sub("COUNT", 2, ANY_STATE, NO_KEYS, CONNECTION),
        sub("DOCS", -2, ANY_STATE, NO_KEYS, CONNECTION),
        sub("INFO", -2, ANY_STATE, NO_KEYS, CONNECTION),
        sub("LIST", -2, ANY_STATE, NO_KEYS, CONNECTION),
        sub("GETKEYS", -4, ANY_STATE, NO_KEYS, CONNECTION),
        sub("GETKEYSANDFLAGS", -4, ANY_STATE, NO_KEYS, CONNECTION),
        sub("HELP", 2, ANY_STATE, NO_KEYS, CONNECTION),
    ]),
    ("config", &[
        sub("GET", -3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("SET", -4, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("RESETSTAT", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("REWRITE", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
    ]),
    ("memory", &[
        sub("DOCTOR", 2, 0, NO_KEYS, 0),
        sub("MALLOC-STATS", 2, 0, NO_KEYS, 0),
        sub("PURGE", 2, 0, NO_KEYS, 0),
        sub("STATS", 2, 0, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
        sub("USAGE", -3, R, KEY_AFTER_SUBCOMMAND, 0),
    ]),
    ("object", &[
        sub("HELP", 2, ANY_STATE, NO_KEYS, KEYSPACE),
        sub("ENCODING", 3, R, KEY_AFTER_SUBCOMMAND, KEYSPACE),
        sub("REFCOUNT", 3, R, KEY_AFTER_SUBCOMMAND, KEYSPACE),
        sub("FREQ", 3, R, KEY_AFTER_SUBCOMMAND, KEYSPACE),
        sub("IDLETIME", 3, R, KEY_AFTER_SUBCOMMAND, KEYSPACE),
    ]),
    ("latency", &[
        sub("LATEST", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("HISTORY", 3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("RESET", -2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("GRAPH", 3, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("DOCTOR", 2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("HISTOGRAM", -2, ADMIN | ANY_STATE | NOSCRIPT, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
    ]),
    ("pubsub", &[
        sub("CHANNELS", -2, ANY_STATE | PUBSUB, NO_KEYS, 0),
        sub("NUMSUB", -2, ANY_STATE | PUBSUB, NO_KEYS, 0),
        sub("NUMPAT", 2, ANY_STATE | PUBSUB, NO_KEYS, 0),
        sub("SHARDCHANNELS", -2, ANY_STATE | PUBSUB, NO_KEYS, 0),
        sub("SHARDNUMSUB", -2, ANY_STATE | PUBSUB, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
    ]),
    ("xgroup", &[
        sub("CREATE", -5, W, &[range(RW | INSERT, 2, 0, 1)], STREAM_CATEGORY),
        sub("SETID", -5, WRITE, &[range(RW | UPDATE, 2, 0, 1)], STREAM_CATEGORY),
        sub("DESTROY", 4, WRITE, &[range(RW | DELETE, 2, 0, 1)], STREAM_CATEGORY),
        sub("CREATECONSUMER", 5, W, &[range(RW | INSERT, 2, 0, 1)], STREAM_CATEGORY),
        sub("DELCONSUMER", 5, WRITE, &[range(RW | DELETE, 2, 0, 1)], STREAM_CATEGORY),
        sub("HELP", 2, ANY_STATE, NO_KEYS, STREAM_CATEGORY),
    ]),
    ("xinfo", &[
        sub("STREAM", -3, R, &[range(RO | ACCESS, 2, 0, 1)], STREAM_CATEGORY),
        sub("GROUPS", 3, R, &[range(RO | ACCESS, 2, 0, 1)], STREAM_CATEGORY),
        sub("CONSUMERS", 4, R, &[range(RO | ACCESS, 2, 0, 1)], STREAM_CATEGORY),
        sub("HELP", 2, ANY_STATE, NO_KEYS, STREAM_CATEGORY),
    ]),
    ("script", &[
        sub("LOAD", 3, NOSCRIPT | STALE, NO_KEYS, SCRIPTING),
        sub("EXISTS", -3, NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("FLUSH", -2, NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("KILL", 2, NOSCRIPT | ALLOW_BUSY, NO_KEYS, SCRIPTING),
        sub("DEBUG", 3, NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("HELP", 2, ANY_STATE, NO_KEYS, SCRIPTING),
    ]),
    ("function", &[
        sub("DELETE", 3, WRITE | NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("DUMP", 2, NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("FLUSH", -2, WRITE | NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("HELP", 2, ANY_STATE, NO_KEYS, SCRIPTING),
        sub("KILL", 2, NOSCRIPT | ALLOW_BUSY, NO_KEYS, SCRIPTING),
        sub("LIST", -2, NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("LOAD", -3, WRITE | DENYOOM | NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("RESTORE", -3, WRITE | DENYOOM | NOSCRIPT, NO_KEYS, SCRIPTING),
        sub("STATS", 2, NOSCRIPT | ALLOW_BUSY, NO_KEYS, SCRIPTING),
    ]),
    ("module", &[
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
        sub("LIST", 2, ADMIN | NOSCRIPT, NO_KEYS, 0),
        sub("LOAD", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, NO_KEYS, 0),
        sub("LOADEX", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, NO_KEYS, 0),
        sub("UNLOAD", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, NO_KEYS, 0),
    ]),
    ("slowlog", &[
        sub("GET", -2, ADMIN | ANY_STATE, NO_KEYS, 0),
        sub("LEN", 2, ADMIN | ANY_STATE, NO_KEYS, 0),
        sub("RESET", 2, ADMIN | ANY_STATE, NO_KEYS, 0),
        sub("HELP", 2, ANY_STATE, NO_KEYS, 0),
    ]),
];

/// A container's subcommand, as COMMAND describes it (the container runs it). `name`
/// is upper case; arity counts the container's name, as Redis counts it.
pub struct Subcommand {
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: &'static [KeySpec],
    acl: u16,
}

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: &'static [KeySpec],
    acl: u16,
) -> Subcommand {
    Subcommand {
        name,
        arity,
        flags,
        keys,
        acl,
    }
}

/// The subcommands of the container named `name`.
fn subcommands_of(name: &str) -> &'static [Subcommand] {
    SUBCOMMANDS
        .iter()
        .find(|(container, _)| *container == name)
        .map_or(&[], |(_, subs)| subs)
}

/// The subcommand `sub` (any case) of the container named `container`.
fn find_subcommand(container: &str, sub: &[u8]) -> Option<&'static Subcommand> {
    subcommands_of(container)
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
}

/// What a Redis 7 command name (`get`, `client|list`, any case) names.
enum Named {
    Command(&'static Command),
    Subcommand(&'static Command, &'static Subcommand),
}

fn resolve(name: &[u8]) -> Option<Named> {
    match name.iter().position(|&b| b == b'|') {
        None => lookup(name).map(|(_, c)| Named::Command(c)),
        Some(bar) => {
            let (_, c) = lookup(&name[..bar])?;
            find_subcommand(c.name, &name[bar + 1..]).map(|s| Named::Subcommand(c, s))
        }
    }
}

/// A subcommand's Redis 7 name: `container|sub`, in lower case.
fn full_name(container: &str, sub: &Subcommand) -> String {
    format!("{container}|{}", sub.name.to_ascii_lowercase())
}

/// How calls are numbered for the statistics: the table's commands by their place in
/// it, then every container's subcommands, each with its Redis 7 name.
struct StatSlots {
    names: Vec<String>,
    /// For each command of the table, its subcommands' first slot and the subcommands.
    containers: Vec<Option<(usize, &'static [Subcommand])>>,
}

fn stat_slots() -> &'static StatSlots {
    static SLOTS: OnceLock<StatSlots> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let mut names: Vec<String> = TABLE.iter().map(|c| c.name.to_string()).collect();
        let containers = TABLE
            .iter()
            .map(|c| {
                let subs = subcommands_of(c.name);
                let first = names.len();
                names.extend(subs.iter().map(|s| full_name(c.name, s)));
                (!subs.is_empty()).then_some((first, subs))
            })
            .collect();
        StatSlots { names, containers }
    })
}

/// Where the call `args` of the command at `index` is counted: under its subcommand
/// when it is a container's known one, else under the command.
fn stat_slot(index: usize, args: &[Vec<u8>]) -> usize {
    let Some((first, subs)) = stat_slots().containers[index] else {
        return index;
    };
    args.get(1)
        .and_then(|sub| {
            subs.iter()
                .position(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
        })
        .map_or(index, |i| first + i)
}

/// The known subcommand counted in `stat` (see [`stat_slot`]), if the command at
/// `index` is a container.
fn subcommand_at(index: usize, stat: usize) -> Option<&'static Subcommand> {
    // The commands' own slots come first (see `stat_slots`): most calls end here.
    if stat < TABLE.len() {
        return None;
    }
    let (first, subs) = stat_slots().containers[index]?;
    subs.get(stat.checked_sub(first)?)
}

/// The flags and key positions of the call counted in `stat`: its subcommand's if
/// it is a container's known one, else the command's.
fn flags_and_keys(index: usize, stat: usize) -> (u32, &'static [KeySpec]) {
    subcommand_at(index, stat).map_or((TABLE[index].flags, TABLE[index].keys), |s| {
        (s.flags, s.keys)
    })
}

/// How many counters [`CommandStats`](crate::command_stats) keeps: see [`stat_slot`].
pub fn count() -> usize {
    stat_slots().names.len()
}

/// The reply to a command the storage engine failed. Refused writes get Redis's
/// MISCONF (what it answers when it cannot persist), the rest a plain ERR; both say
/// what went wrong.
pub(crate) fn storage_error(e: &engine::Error) -> Frame {
    match e {
        engine::Error::InvalidArgument(what) => Frame::error(format!("ERR {what}")),
        engine::Error::WritesStopped(_) => Frame::error(format!("MISCONF {e}")),
        _ => Frame::error(format!("ERR storage engine: {e}")),
    }
}

/// Whether argument `i` of the call `args` of the command `name` is a password, which
/// SLOWLOG and MONITOR show as `(redacted)`, as Redis does: AUTH's arguments, and the
/// user name and password after HELLO's AUTH.
fn is_secret(name: &str, args: &[Vec<u8>], i: usize) -> bool {
    match name {
        "auth" => i >= 1,
        "migrate" => migrate::is_secret(args, i),
        "hello" => args
            .iter()
            .skip(2)
            .position(|a| a.eq_ignore_ascii_case(b"auth"))
            .is_some_and(|at| (at + 3..at + 5).contains(&i)),
        _ => false,
    }
}

/// Runs a command a script called (`redis.call`), refused as Redis refuses it: unknown,
/// the wrong number of arguments, not allowed in scripts, a write from a read-only
/// script, or over maxmemory unless the script allows that. The caller (EVAL) holds
/// the gate exclusively. An error replied is counted in INFO errorstats here, as Redis
/// counts it: once, whether the script catches it or not.
pub(crate) fn execute_in_script(
    server: &Server,
    session: &mut Session,
    args: &[Vec<u8>],
    read_only: bool,
    allow_oom: bool,
) -> Frame {
    let refused = |text: &str| {
        server.command_stats.record_error(text);
        Frame::error(text)
    };
    let Some((index, _)) = lookup(&args[0]) else {
        return refused("ERR Unknown Redis command called from script");
    };
    let stat = stat_slot(index, args);
    // As Redis, a command the script may not call counts as rejected in its stats.
    let rejected = |text: &str| {
        server.command_stats.record_rejected(stat);
        refused(text)
    };
    if check_arity(index, stat, args).is_err() {
        return rejected("ERR Wrong number of args calling Redis command from script");
    }
    let (flags, _) = flags_and_keys(index, stat);
    if flags & NOSCRIPT != 0 && !server.scripts_call_anything.load(Ordering::Relaxed) {
        return rejected("ERR This Redis command is not allowed from script");
    }
    if let Err(denied) = permitted(server, session, stat, args, LogContext::Lua) {
        let reason = denied.short_reason();
        return rejected(&format!("ERR The user executing the script {reason}"));
    }
    if read_only && flags & (WRITE | MAY_REPLICATE) != 0 {
        return rejected("ERR Write commands are not allowed from read-only scripts.");
    }
    if let Some(refusal) = server.write_refusal().filter(|_| flags & WRITE != 0) {
        return rejected(refusal);
    }
    if flags & WRITE != 0 {
        // From here on SCRIPT KILL would leave the script's work half done.
        server.running_script.note_write();
    }
    execute_queued(server, session, args, !allow_oom)
}

/// `redis.acl_check_cmd`: 1 if the script's caller may run `args`, 0 if not (nothing
/// is logged), an error if no such command exists.
pub(crate) fn acl_check_in_script(
    server: &Server,
    session: &mut Session,
    args: &[Vec<u8>],
) -> Frame {
    let Some((index, _)) = lookup(&args[0]) else {
        return Frame::error("ERR Invalid command passed to redis.acl_check_cmd()");
    };
    let stat = stat_slot(index, args);
    Frame::Integer(session.check_acl(server, stat, args).is_ok() as i64)
}

/// A command an EXEC runs from its queue, checked against the connection's ACL
/// permissions again: they may have changed since it was queued.
fn execute_in_exec(server: &Server, session: &mut Session, args: &[Vec<u8>]) -> Frame {
    let (index, _) = lookup(&args[0]).expect("queued commands were looked up");
    let stat = stat_slot(index, args);
    if let Err(denied) = permitted(server, session, stat, args, LogContext::Multi) {
        let reason = match denied {
            users::Denied::Command => "no permission to execute the command or subcommand",
            users::Denied::Key(_) => "no permission to touch the specified keys",
            users::Denied::Channel(_) => {
                "no permission to access one of the channels used as arguments"
            }
        };
        let text = format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated \
             and the EXEC call. This command is no longer allowed for the following reason: \
             {reason}"
        );
        server.command_stats.record_error(&text);
        return Frame::error(text);
    }
    // Memory was checked for the whole transaction, before EXEC ran.
    execute_queued(server, session, args, false)
}

/// Where ACL LOG says a refusal happened.
#[derive(Clone, Copy)]
pub(crate) enum LogContext {
    TopLevel,
    Multi,
    Lua,
}

impl LogContext {
    fn of(session: &Session) -> LogContext {
        if session.multi.is_some() || session.in_exec {
            LogContext::Multi
        } else {
            LogContext::TopLevel
        }
    }

    fn name(self) -> &'static str {
        match self {
            LogContext::TopLevel => "toplevel",
            LogContext::Multi => "multi",
            LogContext::Lua => "lua",
        }
    }
}

/// The connection's ACL check (see [`Session::check_acl`]) of a call counted in
/// `slot`; a refusal is recorded in ACL LOG.
#[inline]
pub(crate) fn permitted(
    server: &Server,
    session: &mut Session,
    slot: usize,
    args: &[Vec<u8>],
    context: LogContext,
) -> Result<(), users::Denied> {
    session
        .check_acl(server, slot, args)
        .map_err(|denied| refused(server, session, slot, args, context, denied))
}

/// [`permitted`]'s refusal, logged.
#[cold]
fn refused(
    server: &Server,
    session: &mut Session,
    slot: usize,
    args: &[Vec<u8>],
    context: LogContext,
    denied: users::Denied,
) -> users::Denied {
    let (reason, object) = match denied {
        users::Denied::Command => ("command", stat_slots().names[slot].as_bytes().to_vec()),
        users::Denied::Key(at) => ("key", args[at].clone()),
        users::Denied::Channel(at) => ("channel", args[at].clone()),
    };
    let username = session.user.name.clone();
    log_acl(server, session, reason, context, object, username);
    denied
}

/// Records a refusal in ACL LOG, with the connection's CLIENT INFO line.
pub(crate) fn log_acl(
    server: &Server,
    session: &mut Session,
    reason: &'static str,
    context: LogContext,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    let client = session.client.clone();
    let client_info = client::line(&Ctx { server, session }, &client, &[]);
    let entry = users::LogEntry {
        count: 1,
        reason,
        context: context.name(),
        object,
        username,
        updated: Instant::now(),
        client_info: client_info.trim_end().to_string(),
    };
    server.users.log(entry, server.config.acllog_max_len());
}

/// Runs a command queued by MULTI (or called by a script), refused over maxmemory if
/// `check_memory` and it may grow the data; the caller holds the gate exclusively.
fn execute_queued(
    server: &Server,
    session: &mut Session,
    args: &[Vec<u8>],
    check_memory: bool,
) -> Frame {
    let (index, cmd) = lookup(&args[0]).expect("queued commands were looked up");
    let stat = stat_slot(index, args);
    let over_memory = if check_memory && flags_and_keys(index, stat).0 & DENYOOM != 0 {
        server.make_room().err()
    } else {
        None
    };
    let frame = match over_memory {
        Some(e) => {
            server.command_stats.record_rejected(stat);
            Frame::error(e)
        }
        None => {
            if session.in_script {
                session.script_read |= flags_and_keys(index, stat).0 & READONLY != 0;
            } else {
                remember_reads(server, session, index, stat, args);
            }
            feed_monitors_before(server, session, index, args);
            let started = server.command_stats.tick();
            let frame = match (cmd.run)(&mut Ctx { server, session }, args) {
                Ok(
                    Action::Reply(f)
                    | Action::Close(Some(f))
                    | Action::After(_, f)
                    | Action::Block {
                        timeout_reply: f, ..
                    },
                ) => f,
                Ok(Action::Ok) => Frame::Simple("OK".into()),
                // SUBSCRIBE with several channels, in a transaction: hotkv keeps one
                // reply per queued command (Redis would break the EXEC reply's count).
                Ok(Action::Replies(mut frames)) if frames.len() == 1 => frames.remove(0),
                Ok(Action::Replies(frames)) => Frame::Array(frames),
                Ok(Action::Close(None)) => Frame::Null,
                Ok(Action::AwaitScript) => {
                    unreachable!("only `execute` waits for the gate, held here")
                }
                Err(e) => storage_error(&e),
            };
            let error = match &frame {
                Frame::Error(e) => Some(e.as_str()),
                _ => None,
            };
            record(server, session, index, stat, args, started, error);
            frame
        }
    };
    let counted = std::mem::take(&mut session.error_counted);
    match &frame {
        Frame::Error(e) if !counted => server.command_stats.record_error(e),
        _ => {}
    }
    frame
}

const WRONG_ARITY: &str = "ERR wrong number of arguments for";
const UNKNOWN_SUBCOMMAND: &str = "ERR unknown subcommand";

fn check_arity(index: usize, stat: usize, args: &[Vec<u8>]) -> Result<(), Frame> {
    let cmd = &TABLE[index];
    if !arity_allows(cmd.arity, args.len()) {
        return Err(Frame::error(format!(
            "{WRONG_ARITY} '{}' command",
            cmd.name
        )));
    }
    // As Redis, a known subcommand's arity is checked before the container runs.
    if let Some(sub) = subcommand_at(index, stat) {
        if !arity_allows(sub.arity, args.len()) {
            return Err(Frame::error(format!(
                "{WRONG_ARITY} '{}' command",
                full_name(cmd.name, sub)
            )));
        }
    }
    Ok(())
}

/// Whether `args` arguments, the name included, satisfy `arity` ([`Command::arity`]).
fn arity_allows(arity: i32, args: usize) -> bool {
    let n = args as i32;
    if arity > 0 {
        n == arity
    } else {
        n >= -arity
    }
}

/// A command refused before it ran; inside MULTI it also dooms the transaction.
/// Refuses a command Redis knows: as [`refuse`], but a refused EXEC discards the
/// transaction and says why, as Redis's `execCommandAbort` does.
fn refuse_command(server: &Server, session: &mut Session, flags: u32, error: Frame) -> Action {
    match &error {
        Frame::Error(reason) if flags & EXEC != 0 => {
            Action::Reply(transaction::abort(server, session, reason))
        }
        _ => refuse(session, error),
    }
}

fn refuse(session: &mut Session, error: Frame) -> Action {
    if session.multi.is_some() {
        session.multi_failed = true;
    }
    Action::Reply(error)
}

/// Redis's wording, which clients match on: the name as typed, then up to 128
/// bytes of the arguments, each quoted and followed by a space. Redis prints them as
/// C strings, so each ends at a NUL byte; bytes that are not UTF-8 print here as
/// U+FFFD, where Redis copies them (an error reply is text in this server).
fn unknown(args: &[Vec<u8>]) -> Frame {
    let c_string = |a: &[u8]| -> String {
        let end = a.iter().position(|&b| b == 0).unwrap_or(a.len());
        String::from_utf8_lossy(&a[..end]).into_owned()
    };
    let mut rest = String::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        let a: String = c_string(a).chars().take(room).collect();
        rest.push_str(&format!("'{a}' "));
    }
    let name: String = c_string(&args[0]).chars().take(128).collect();
    Frame::error(format!(
        "ERR unknown command '{name}', with args beginning with: {rest}"
    ))
}

/// Redis's replies for a subcommand it cannot run: unknown, or known (in
/// [`SUBCOMMANDS`]) with the wrong number of arguments.
pub(crate) fn bad_subcommand(container: &str, sub: &[u8]) -> Reply {
    if let Some(known) = find_subcommand(container, sub) {
        error(&format!(
            "{WRONG_ARITY} '{}' command",
            full_name(container, known)
        ))
    } else {
        Ok(Action::Reply(unknown_subcommand(container, sub)))
    }
}

fn unknown_subcommand(container: &str, sub: &[u8]) -> Frame {
    Frame::error(format!(
        "{UNKNOWN_SUBCOMMAND} '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        container.to_ascii_uppercase()
    ))
}

/// The name a call is counted under (INFO commandstats, and CLIENT LIST's `cmd` from a
/// client's `last_command`, which is the slot + 1 or 0 before any command).
pub fn name_of(last_command: u64) -> &'static str {
    match last_command {
        0 => "NULL",
        n => stat_slots()
            .names
            .get(n as usize - 1)
            .map_or("NULL", String::as_str),
    }
}

/// A container's HELP: its lines as simple strings, as Redis sends them.
pub(crate) fn help(lines: &[&str]) -> Reply {
    reply(Frame::Array(
        lines.iter().map(|l| Frame::Simple((*l).into())).collect(),
    ))
}

pub(crate) fn ok() -> Reply {
    Ok(Action::Ok)
}

pub(crate) fn reply(f: Frame) -> Reply {
    Ok(Action::Reply(f))
}

pub(crate) fn error(text: &str) -> Reply {
    Ok(Action::Reply(Frame::error(text)))
}

pub(crate) fn int(n: i64) -> Reply {
    Ok(Action::Reply(Frame::Integer(n)))
}

/// Upper-cased option word, for matching Redis's case-insensitive options.
pub(crate) fn upper(arg: &[u8]) -> Vec<u8> {
    arg.to_ascii_uppercase()
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
/// A command meant for one type met a key of another.
pub(crate) const WRONG_TYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The live entry of a key (an `Option<Entry>`, read with [`Ctx::read_of`]) if it is
/// missing or of the kind named; otherwise the command answers WRONGTYPE.
macro_rules! of_kind {
    ($ctx:expr, $key:expr, $kind:ident) => {
        match $ctx.read_of($key, crate::entry::Kind::$kind)? {
            Some(e) if e.kind != crate::entry::Kind::$kind => {
                return super::error(super::WRONG_TYPE)
            }
            found => found,
        }
    };
}
pub(crate) use of_kind;
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";

pub(crate) use resp::parse_integer;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_counted_under_its_own_name() {
        let mut slots = std::collections::HashSet::new();
        for (index, cmd) in TABLE.iter().enumerate() {
            let plain = stat_slot(index, &[cmd.name.as_bytes().to_vec()]);
            assert_eq!(name_of(plain as u64 + 1), cmd.name);
            assert!(slots.insert(plain));
            for sub in subcommands_of(cmd.name) {
                let args = [b"X".to_vec(), sub.name.to_ascii_lowercase().into_bytes()];
                let slot = stat_slot(index, &args);
                let expected = format!("{}|{}", cmd.name, sub.name.to_ascii_lowercase());
                assert_eq!(name_of(slot as u64 + 1), expected);
                assert!(slots.insert(slot), "{expected} shares a slot");
            }
            let unknown = [b"X".to_vec(), b"no-such-subcommand".to_vec()];
            assert_eq!(stat_slot(index, &unknown), plain);
        }
        assert_eq!(slots.len(), count());
        for (container, _) in SUBCOMMANDS {
            assert!(lookup(container.as_bytes()).is_some(), "{container}");
        }
    }

    #[test]
    fn every_command_is_found_by_its_name_in_any_case_and_nothing_else_is() {
        for (index, cmd) in TABLE.iter().enumerate() {
            let name = cmd.name.as_bytes();
            let mixed: Vec<u8> = name
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        *c
                    }
                })
                .collect();
            for spelled in [name.to_vec(), name.to_ascii_uppercase(), mixed] {
                assert_eq!(
                    lookup(&spelled).map(|(i, _)| i),
                    Some(index),
                    "{}",
                    cmd.name
                );
            }
            let mut padded = name.to_vec();
            padded.push(0);
            assert!(
                lookup(&padded).is_none(),
                "{} with a NUL after it",
                cmd.name
            );
            // LPUSH is LPUSHX less its last letter: a name near another is found only
            // as itself.
            let mut longer = name.to_vec();
            longer.push(b'x');
            for near in [&name[..name.len() - 1], &longer] {
                assert!(lookup(near).is_none_or(|(_, c)| c.name.as_bytes() == near));
            }
        }
        assert!(lookup(b"").is_none());
        assert!(lookup(&[b'g'; 200]).is_none());
        assert!(lookup(b"g\0t").is_none());
    }

    #[test]
    fn only_the_script_commands_go_to_the_script_thread_in_any_case() {
        for cmd in TABLE {
            let script = SCRIPT_COMMANDS.contains(&cmd.name);
            assert_eq!(
                script,
                cmd.acl & SCRIPTING != 0
                    && (cmd.name.starts_with("eval") || cmd.name.starts_with("fcall")),
                "{}",
                cmd.name
            );
            for name in [cmd.name.to_string(), cmd.name.to_ascii_uppercase()] {
                assert_eq!(is_script_command(name.as_bytes()), script, "{name}");
            }
        }
        for name in ["EvalSha_RO", "fCALL"] {
            assert!(is_script_command(name.as_bytes()), "{name}");
        }
        for name in ["", "evals", "eval ", "fcall_r", "xeval"] {
            assert!(!is_script_command(name.as_bytes()), "{name}");
        }
    }
}
