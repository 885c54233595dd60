//! The keyspace the commands operate on, on one of two stores:
//! - memory: the HotRing index itself, called directly from the connection tasks (no
//!   lock, no queue). Every single-key command is one [`Db::update`]: read the entry,
//!   decide, and publish the decision with a compare-and-set on the stored bytes,
//!   retrying if another writer got there first.
//! - an ordered durable engine (the LSM tree) through [`EngineStore`]: the same
//!   update runs under the key's stripe lock, since the engine has no compare-and-set.
//!
//! A long list, and a large hash or set, is split into nodes (`nodes.rs`): in memory
//! each its own allocation, on an engine the server's own records beside the keys.
//! Reads here expand it, so only [`Db::edit_list`], [`Db::read_list`],
//! [`Db::edit_fields`] and [`Db::read_fields`] work on the nodes themselves.
//!
//! Expired keys read as absent everywhere and are deleted when met (lazy expiry) or
//! by [`Db::expire_cycle`] (active expiry). Only engine calls can fail (I/O,
//! corruption); the memory store never returns an error.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

use engine::Result;
use hotring::{Access, HotRing, Version};

use crate::access_clock::AccessClock;
use crate::blocked_keys::BlockedKeys;
use crate::engine_keys;
use crate::engine_store::{EngineNodes, EngineStore, NodeWrites};
use crate::entry::{now_ms, Entry, Kind};
use crate::field_nodes::{FieldEditor, FieldReader};
use crate::keyspace_events::{self as events, KeyspaceEvents};
use crate::list_nodes::{self, ListEditor, ListRange, RootEdit};
use crate::nodes::{self, Attempt, MemoryNodes, NodeStore, Outcome};
use crate::pause::Pause;
use crate::score_nodes::{ZsetEditor, ZsetReader};
use crate::stripes::StripedCounter;
use crate::tracking::Tracking;

/// What a SCAN page may walk per key asked for: ring starts in memory, stored entries
/// (deleted keys and old versions included) on an engine. Redis's page stops after
/// ten buckets per key, but its table shrinks after deletes and its empty buckets cost
/// a nanosecond each. A hundred ring starts take some 2 us and a hundred stored entries
/// some 12, so a page of the ten keys clients ask for by default walks for less than
/// its round trip takes: a scan through deleted keys makes more round trips, but none
/// of them waits long.
const SCAN_WALK_PER_KEY: usize = 100;

/// What an [`Db::update`] decides to do with the key.
pub enum Change {
    Keep,
    Put(Entry),
    Delete,
}

/// What [`Db::retime`] decides to do with the key's deadline.
pub enum Retime {
    Keep,
    /// Set it (`None`: remove it).
    Set(Option<u64>),
    /// Delete the key (a deadline already past).
    Delete,
}

/// A [`Change`] in stored form: what a store publishes.
enum Write {
    Keep,
    /// The value to store and, if its editor knows them, the nodes the value it
    /// replaces names and it does not (else the store finds them: `nodes::dropped`).
    Put(Vec<u8>, Option<Vec<u64>>),
    Delete,
}

/// How an edit of a collection ended, besides its own result.
pub struct Edited<R> {
    pub result: R,
    /// The key now holds a new value.
    pub wrote: bool,
    /// The write emptied the collection, so the key is gone.
    pub emptied: bool,
}

// One per server, for its whole life: boxing the larger variant would save no memory
// and add an indirection to every access.
#[allow(clippy::large_enum_variant)]
enum Store {
    Memory(HotRing),
    /// With when and how often its keys were accessed lately (OBJECT IDLETIME and
    /// FREQ; the memory store's items keep the first, its index ranks heat).
    Engine(EngineStore, AccessClock),
}

pub struct Db {
    store: Store,
    /// The nodes of large collections in memory (an engine keeps them itself).
    nodes: Option<MemoryNodes>,
    /// Keys given a deadline, each with that deadline: where the active expiry cycle
    /// looks. A hint only: the stored entry decides, and stale hints are dropped when
    /// the cycle meets them. On an engine it is rebuilt by the scan at open.
    volatile: HotRing,
    /// Where the active cycle resumes in `volatile`.
    expire_cursor: AtomicU64,
    watches: Watches,
    /// Who to tell when a key changes (CLIENT TRACKING).
    pub tracking: Tracking,
    /// Keyspace notifications waiting to be published.
    pub events: KeyspaceEvents,
    /// Clients waiting for keys to be written (BLPOP and the like).
    pub blocked: BlockedKeys,
    /// CLIENT PAUSE: while one is on, keys are neither expired nor evicted, so the
    /// data stays as it was (Redis keeps it still for a failover).
    pub pause: Pause,
    expired: AtomicU64,
    /// In memory, read-modify-writes whose compare-and-set another writer of the key
    /// beat, and which ran again (INFO hotring's `hotring_lost_write_races`): how much
    /// a hot key's writers redo.
    lost_write_races: AtomicU64,
    /// Keys written or deleted by commands since the start, as Redis's `dirty` counts
    /// changes (INFO's rdb_changes_since_last_save).
    changes: StripedCounter,
}

impl Default for Db {
    fn default() -> Self {
        let db = Db::on(Store::Memory(HotRing::new()));
        // Keys written before the server's first tick get today's clock, not 0.
        db.set_clock(now_ms() / 1000);
        db
    }
}

/// Whether `stored`, live, is a split collection of another type than `kind`: what a
/// command on `kind` refuses without expanding it.
fn refused_unread(stored: &[u8], kind: Kind) -> bool {
    Entry::stored_is_node_table(stored)
        && Entry::stored_kind(stored) != kind
        && !Entry::stored_expired_now(stored)
}

/// This thread's writes being gathered (see [`Db::gather`]). Dropped unfinished (a
/// command panicked), it still writes them, and lets their stripes go.
pub struct Gathering<'a> {
    db: &'a Db,
    finished: bool,
}

impl Gathering<'_> {
    /// Whether writes are gathered at all: not in memory.
    pub fn is_on(&self) -> bool {
        matches!(self.db.store, Store::Engine(..))
    }

    /// Writes what was gathered so far; gathering goes on. An error if any write
    /// gathered since the last was lost.
    pub fn write(&mut self) -> Result<()> {
        let written = self.db.finish_gathering();
        if let Store::Engine(store, _) = &self.db.store {
            store.start_gathering();
        }
        written
    }

    /// Writes what was gathered, and ends gathering.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.db.finish_gathering()
    }
}

impl Drop for Gathering<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.db.finish_gathering();
        }
    }
}

impl Drop for Db {
    /// The nodes of the large collections still stored live outside the index
    /// (`nodes.rs`): they go with it.
    fn drop(&mut self) {
        if let (Store::Memory(index), Some(nodes)) = (&self.store, &self.nodes) {
            for (_, stored) in index.iter() {
                // SAFETY: `&mut self`: no other thread holds the store, so no reader
                // is left, and what a key holds now is in no retirement (those name
                // only nodes a key's value no longer names).
                unsafe { nodes.free_with_store(&stored) };
            }
        }
    }
}

impl Db {
    fn on(store: Store) -> Db {
        let nodes = matches!(store, Store::Memory(_)).then(MemoryNodes::default);
        Db {
            store,
            nodes,
            volatile: HotRing::new(),
            expire_cursor: AtomicU64::new(0),
            watches: Watches::default(),
            tracking: Tracking::default(),
            events: KeyspaceEvents::default(),
            blocked: BlockedKeys::default(),
            pause: Pause::default(),
            expired: AtomicU64::new(0),
            lost_write_races: AtomicU64::new(0),
            changes: StripedCounter::default(),
        }
    }

    /// The keyspace on an opened ordered engine. Reads every key once, to count them
    /// and to find those with deadlines.
    pub fn on_engine(engine: Box<dyn engine::Engine>) -> Result<Db> {
        let (store, volatile) = EngineStore::open(engine, Entry::check)?;
        let clock = AccessClock::new((now_ms() / 1000) as u32);
        let db = Db::on(Store::Engine(store, clock));
        for (key, deadline) in volatile {
            db.volatile.upsert(&key, &deadline.to_le_bytes());
        }
        Ok(db)
    }

    /// The stored bytes of `key`, live or expired.
    fn stored(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match &self.store {
            Store::Memory(index) => Ok(index.get(key)),
            Store::Engine(store, clock) => {
                let found = store.get(key)?;
                if found.is_some() {
                    clock.touch(key);
                }
                Ok(found)
            }
        }
    }

    /// The access clock of an engine's keys.
    fn engine_clock(&self) -> Option<&AccessClock> {
        match &self.store {
            Store::Memory(_) => None,
            Store::Engine(_, clock) => Some(clock),
        }
    }

    /// The live entry of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        let _pin = crossbeam_epoch::pin();
        let stored = self.stored(key)?;
        self.live(key, stored)
    }

    /// [`Db::get`] for a command on values of type `kind`: a split collection of
    /// another type comes without its value ([`Entry::stored_without_value`]) rather
    /// than expanded only to be refused.
    pub fn get_of(&self, key: &[u8], kind: Kind) -> Result<Option<Entry>> {
        self.read_of(key, kind, true)
    }

    /// [`Db::get_of`] leaving the key's access clock as it was (see [`Db::peek`]).
    pub fn peek_of(&self, key: &[u8], kind: Kind) -> Result<Option<Entry>> {
        self.read_of(key, kind, false)
    }

    fn read_of(&self, key: &[u8], kind: Kind, touch: bool) -> Result<Option<Entry>> {
        let _pin = crossbeam_epoch::pin();
        let stored = match touch {
            true => self.stored(key)?,
            false => self.stored_untouched(key)?,
        };
        match &stored {
            Some(s) if refused_unread(s, kind) => Ok(Some(Entry::stored_without_value(s))),
            _ => self.live(key, stored),
        }
    }

    /// The live entry of `key`, leaving its access clock (OBJECT IDLETIME) as it was,
    /// as Redis's lookups with `LOOKUP_NOTOUCH` do (EXISTS, TYPE, OBJECT).
    pub fn peek(&self, key: &[u8]) -> Result<Option<Entry>> {
        let _pin = crossbeam_epoch::pin();
        let stored = self.stored_untouched(key)?;
        self.live(key, stored)
    }

    /// [`Db::peek`], but a key past its deadline is given as it is, not deleted
    /// (DEBUG OBJECT, as Redis's, which looks at the key table alone). A split
    /// collection past its deadline is deleted all the same: its nodes are read only
    /// for a live key.
    pub fn peek_even_expired(&self, key: &[u8]) -> Result<Option<Entry>> {
        let _pin = crossbeam_epoch::pin();
        match self.stored_untouched(key)? {
            Some(stored) if !Entry::stored_is_node_table(&stored) => {
                Ok(Some(Entry::decode(stored)))
            }
            stored => self.live(key, stored),
        }
    }

    /// [`Db::stored`] leaving the key's access clock as it was.
    fn stored_untouched(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match &self.store {
            Store::Memory(index) => Ok(index.peek_with(key, |v, _| v.to_vec())),
            Store::Engine(store, _) => store.get(key),
        }
    }

    /// `stored` (what `key` holds) decoded if it has not expired; deleted if it has.
    /// The caller read `stored` pinned; a node table is expanded.
    fn live(&self, key: &[u8], stored: Option<Vec<u8>>) -> Result<Option<Entry>> {
        let Some(stored) = stored else {
            return Ok(None);
        };
        if Entry::stored_expired_now(&stored) {
            self.remove_expired(key, &stored)?;
            return Ok(None);
        }
        if !Entry::stored_is_node_table(&stored) {
            return Ok(Some(Entry::decode(stored)));
        }
        match &self.store {
            Store::Memory(_) => {
                // Nested in the caller's pin, under which `stored` was read.
                let guard = crossbeam_epoch::pin();
                let whole = nodes::expand(&self.memory_nodes().pinned(&guard), &stored)?;
                Ok(Some(Entry::decode(whole)))
            }
            Store::Engine(store, _) => {
                // An engine's nodes are read under the key's lock, which its writers
                // hold; what the key holds now decides.
                let locked = store.lock(key)?;
                let Some(now) = locked.stored() else {
                    return Ok(None);
                };
                if Entry::stored_expired_now(now) {
                    let now = now.to_vec();
                    drop(locked);
                    self.remove_expired(key, &now)?;
                    return Ok(None);
                }
                let whole = nodes::expand(&EngineNodes::new(store), now)?;
                Ok(Some(Entry::decode(whole)))
            }
        }
    }

    /// The memory store's node store.
    fn memory_nodes(&self) -> &MemoryNodes {
        self.nodes
            .as_ref()
            .expect("the memory store has a node store")
    }

    /// What `read` makes of the stored form of `key` (its tag, say), the value neither
    /// copied from the index nor expanded. With `touch` the read counts as an access to
    /// the key; without, it does not, as Redis's lookups with `LOOKUP_NOTOUCH`. `None`
    /// if the key is missing or has expired (an expired one is handed to [`Db::get`] or
    /// [`Db::peek`], which delete it).
    fn read_tag<R>(&self, key: &[u8], touch: bool, read: impl Fn(&[u8]) -> R) -> Result<Option<R>> {
        let found = match &self.store {
            Store::Memory(index) if touch => {
                index.get_with(key, |s| (Entry::stored_deadline(s), read(s)))
            }
            Store::Memory(index) => {
                index.peek_with(key, |s, _| (Entry::stored_deadline(s), read(s)))
            }
            Store::Engine(store, clock) => {
                let found = store.get(key)?;
                if touch && found.is_some() {
                    clock.touch(key);
                }
                found.map(|s| (Entry::stored_deadline(&s), read(&s)))
            }
        };
        match found {
            Some((Some(d), _)) if d < now_ms() => {
                let live = if touch {
                    self.get(key)?
                } else {
                    self.peek(key)?
                };
                Ok(live.map(|e| read(&e.stored())))
            }
            found => Ok(found.map(|(_, r)| r)),
        }
    }

    /// The type of `key` if it is live, without copying or expanding its value.
    pub fn kind(&self, key: &[u8]) -> Result<Option<Kind>> {
        self.read_tag(key, true, Entry::stored_kind)
    }

    /// [`Db::kind`], leaving the key's access clock as it was (TYPE, EXISTS).
    pub fn peek_kind(&self, key: &[u8]) -> Result<Option<Kind>> {
        self.read_tag(key, false, Entry::stored_kind)
    }

    /// The deadline of `key` if it is live (`Some(None)`: it has none), read from its
    /// stored tag: the value is not copied or expanded, and its access clock is left
    /// as it was (TTL, as Redis's `LOOKUP_NOTOUCH`).
    pub fn peek_deadline(&self, key: &[u8]) -> Result<Option<Option<u64>>> {
        self.read_tag(key, false, Entry::stored_deadline)
    }

    /// Whether `key` is live, without copying or expanding its value.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.read_tag(key, true, |_| ())?.is_some())
    }

    /// Sets `key` whatever it held.
    pub fn set(&self, key: &[u8], value: &[u8], deadline: Option<u64>) -> Result<()> {
        self.put(key, Entry::encode(value, deadline, false), deadline)
    }

    /// Sets `key` to `entry` whatever it held, keeping its encoding (RENAME, COPY).
    pub fn set_entry(&self, key: &[u8], entry: &Entry) -> Result<()> {
        let stored = entry.stored();
        self.put(key, stored, entry.deadline)
    }

    /// Moves `from`'s value and deadline to `to`, whatever `to` held (RENAME); returns
    /// whether `from` held anything. A split collection's node table moves as it is,
    /// its nodes neither read nor copied (a table names its nodes by id, whatever the
    /// key), so a rename costs the same whatever the value's size, as in Redis.
    ///
    /// The caller runs alone (the gate held exclusively) and has checked that `from`
    /// is live. In memory that is what makes the move safe: between `to` taking the
    /// table and `from` losing it, both name the same nodes, and a writer of `from`
    /// meanwhile would retire nodes that `to` still names.
    pub fn rename(&self, from: &[u8], to: &[u8]) -> Result<bool> {
        let (stored, created) = match &self.store {
            Store::Memory(index) => {
                let node_store = self.memory_nodes();
                let _pin = crossbeam_epoch::pin();
                let Some(stored) = index.get(from) else {
                    return Ok(false);
                };
                assert_ne!(from, to, "a key renamed to itself is not moved");
                // `to`'s old value shares no node with `stored`: no two keys do.
                let created =
                    index.upsert_replacing(to, &stored, |old| node_store.retire(old, None));
                let removed = index.remove_if(from, |v| v == stored.as_slice());
                assert!(
                    removed,
                    "a writer changed a key being renamed, which runs alone"
                );
                (stored, created)
            }
            Store::Engine(store, _) => match store.rename(from, to)? {
                Some(moved) => moved,
                None => return Ok(false),
            },
        };
        if created {
            self.events.fire(events::NEW, "new", to);
        }
        // One change, as Redis counts a rename.
        self.touched(from, None, Touch::Deleted);
        self.written(to, Entry::stored_deadline(&stored));
        Ok(true)
    }

    fn put(&self, key: &[u8], stored: Vec<u8>, deadline: Option<u64>) -> Result<()> {
        let created = match &self.store {
            Store::Memory(index) => self.upsert(index, key, stored),
            Store::Engine(store, _) => {
                let locked = store.lock(key)?;
                let created = locked.stored().is_none();
                let nodes = EngineNodes::new(store);
                let stored = nodes::split_if_large(&nodes, stored);
                let released = match locked.stored() {
                    Some(old) => nodes::dropped(&nodes, old, Some(&stored))?,
                    None => Vec::new(),
                };
                locked.write(Some(&stored), nodes.into_writes(released))?;
                created
            }
        };
        if created {
            self.events.fire(events::NEW, "new", key);
        }
        self.written(key, deadline);
        Ok(())
    }

    /// Sets every key to its value, with no deadline (MSET). On an engine the pairs are
    /// one atomic write: a crash keeps all or none.
    pub fn set_all(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        match &self.store {
            Store::Memory(index) => {
                for (key, value) in pairs {
                    if self.upsert(index, key, Entry::encode(value, None, false)) {
                        self.events.fire(events::NEW, "new", key);
                    }
                }
            }
            Store::Engine(store, _) => {
                // Runs alone: nothing creates these keys between the check and the write.
                if self.events.wants(events::NEW) {
                    for (key, _) in pairs {
                        if store.get(key)?.is_none() {
                            self.events.fire(events::NEW, "new", key);
                        }
                    }
                }
                let encoded: Vec<(&[u8], Vec<u8>)> = pairs
                    .iter()
                    .map(|(k, v)| (*k, Entry::encode(v, None, false)))
                    .collect();
                store.put_all(&encoded)?;
            }
        }
        for (key, _) in pairs {
            self.written(key, None);
        }
        Ok(())
    }

    /// Stores `stored` under `key` in memory whatever it held (a large collection split into
    /// nodes); returns whether the key was new.
    fn upsert(&self, index: &HotRing, key: &[u8], stored: Vec<u8>) -> bool {
        let node_store = self.memory_nodes();
        let stored = nodes::split_if_large(node_store, stored);
        index.upsert_replacing(key, &stored, |old| node_store.retire(old, Some(&stored)))
    }

    /// Reads `key`'s live entry, lets `decide` choose a change, and applies it
    /// atomically: if another writer changed the key in between, `decide` runs again
    /// on the new entry. Returns what the last `decide` returned.
    ///
    /// `decide` works on values of type `kind`: a split collection of another type
    /// comes without its value ([`Entry::stored_without_value`]).
    pub fn update<R>(
        &self,
        key: &[u8],
        kind: Kind,
        mut decide: impl FnMut(Option<&Entry>) -> (Change, R),
    ) -> Result<R> {
        self.write(key, |live, nodes| {
            let entry = match live {
                Some(stored) if refused_unread(stored, kind) => {
                    Some(Entry::stored_without_value(stored))
                }
                Some(stored) => Some(Entry::decode(nodes::expand(nodes, stored)?)),
                None => None,
            };
            let (change, result) = decide(entry.as_ref());
            let write = match change {
                Change::Keep => Write::Keep,
                Change::Put(e) => Write::Put(nodes::split_if_large(nodes, e.into_stored()), None),
                Change::Delete => Write::Delete,
            };
            Ok((write, result))
        })
    }

    /// Sets, removes or acts on `key`'s deadline as `decide` chooses from the current
    /// one (`None`: the key is missing; `Some(None)`: it has no deadline), rewriting
    /// only the key's entry: a split collection's nodes stay where they are.
    pub fn retime<R>(
        &self,
        key: &[u8],
        mut decide: impl FnMut(Option<Option<u64>>) -> (Retime, R),
    ) -> Result<R> {
        self.write(key, |live, _| {
            let (retime, result) = decide(live.map(Entry::stored_deadline));
            let write = match (retime, live) {
                (Retime::Set(deadline), Some(stored)) => {
                    Write::Put(Entry::stored_with_deadline(stored, deadline), None)
                }
                (Retime::Delete, Some(_)) => Write::Delete,
                _ => Write::Keep,
            };
            Ok((write, result))
        })
    }

    /// Changes the list at `key` through `f`, which pushes and pops at its ends: a long
    /// list's end nodes are all that is copied. `None` if the key holds another type.
    /// A missing key is an empty list, and a list emptied is deleted.
    pub fn edit_list<R>(
        &self,
        key: &[u8],
        f: impl FnMut(&mut ListEditor) -> R,
    ) -> Result<Option<Edited<R>>> {
        self.edit_list_with(key, None::<fn(&RootEdit) -> Option<(Vec<u8>, R)>>, f)
    }

    /// [`Db::edit_list`], but a split list's root is given first to `in_root`: the
    /// root it makes and its result, if it makes one, are stored and given back, with
    /// no node or page changed (see [`RootEdit`]); else `f` edits the list.
    pub fn edit_list_or_root<R>(
        &self,
        key: &[u8],
        in_root: impl FnMut(&RootEdit) -> Option<(Vec<u8>, R)>,
        f: impl FnMut(&mut ListEditor) -> R,
    ) -> Result<Option<Edited<R>>> {
        self.edit_list_with(key, Some(in_root), f)
    }

    /// [`Db::edit_list_or_root`], or [`Db::edit_list`] if `in_root` is `None`: the
    /// root is not parsed for an edit that cannot use it.
    fn edit_list_with<R>(
        &self,
        key: &[u8],
        mut in_root: Option<impl FnMut(&RootEdit) -> Option<(Vec<u8>, R)>>,
        mut f: impl FnMut(&mut ListEditor) -> R,
    ) -> Result<Option<Edited<R>>> {
        self.edit_collection(key, Kind::List, |nodes, live| {
            if let Some(in_root) = in_root.as_mut() {
                if let Some((root, result)) = live.and_then(RootEdit::of).and_then(|r| in_root(&r))
                {
                    return Ok((true, Some(Some(root)), Some(Vec::new()), result));
                }
            }
            let mut editor = ListEditor::new(nodes, live);
            let existed = editor.exists();
            let result = f(&mut editor);
            let deadline = live.and_then(Entry::stored_deadline);
            let (stored, released) = editor.finish_releasing(deadline)?;
            Ok((existed, stored, released, result))
        })
    }

    /// Changes the hash or set (`kind`) at `key` through `f`, which sets, removes and
    /// reads fields: a large one's nodes that hold them are all that is copied.
    /// `large` tells whether a packed value passes Redis's limits for its small
    /// encoding. `None` if the key holds another type. A missing key is an empty
    /// collection, and one emptied is deleted.
    pub fn edit_fields<R>(
        &self,
        key: &[u8],
        kind: Kind,
        large: &dyn Fn(&[u8]) -> bool,
        mut f: impl FnMut(&mut FieldEditor) -> R,
    ) -> Result<Option<Edited<R>>> {
        self.edit_collection(key, kind, |nodes, live| {
            let mut editor = FieldEditor::new(nodes, kind, live, large);
            let existed = editor.exists();
            let result = f(&mut editor);
            let deadline = live.and_then(Entry::stored_deadline);
            let (stored, released) = editor.finish_releasing(deadline)?;
            Ok((existed, stored, released, result))
        })
    }

    /// Changes the sorted set at `key` through `f`, which scores, sets, removes and pops
    /// members: a large one's nodes that hold them are all that is copied. `large`
    /// tells whether a packed value passes Redis's limits for its small encoding.
    /// `None` if the key holds another type. A missing key is an empty sorted set, and
    /// one emptied is deleted.
    pub fn edit_zset<R>(
        &self,
        key: &[u8],
        large: &dyn Fn(&[u8]) -> bool,
        mut f: impl FnMut(&mut ZsetEditor) -> R,
    ) -> Result<Option<Edited<R>>> {
        self.edit_collection(key, Kind::ZSet, |nodes, live| {
            let mut editor = ZsetEditor::new(nodes, live, large);
            let existed = editor.exists();
            let result = f(&mut editor);
            let deadline = live.and_then(Entry::stored_deadline);
            let (stored, released) = editor.finish_releasing(deadline)?;
            Ok((existed, stored, released, result))
        })
    }

    /// Changes the stream at `key` through `edit`, which sees its live stored value (a
    /// split stream's nodes in the store it is given) and says what to store (`None`:
    /// nothing) and its result. `None` if the key holds another type.
    pub fn edit_stream<R>(
        &self,
        key: &[u8],
        mut edit: impl FnMut(&dyn NodeStore, Option<&[u8]>) -> Result<(Option<Vec<u8>>, R)>,
    ) -> Result<Option<R>> {
        let edited = self.edit_collection(key, Kind::Stream, |nodes, live| {
            let (stored, result) = edit(nodes, live)?;
            Ok((live.is_some(), stored.map(Some), None, result))
        })?;
        Ok(edited.map(|e| e.result))
    }

    /// Under [`Db::edit_list`], [`Db::edit_fields`], [`Db::edit_zset`] and
    /// [`Db::edit_stream`]: `edit` sees the live stored value of `key` if it is of
    /// `kind`, and says whether it existed, what to store (`None`: nothing;
    /// `Some(None)`: delete the key), what that releases if it knows ([`Write::Put`])
    /// and its result.
    fn edit_collection<R>(
        &self,
        key: &[u8],
        kind: Kind,
        mut edit: impl FnMut(
            &dyn NodeStore,
            Option<&[u8]>,
        ) -> Result<(bool, Outcome, Option<Vec<u64>>, R)>,
    ) -> Result<Option<Edited<R>>> {
        self.write(key, |live, nodes| {
            if live.is_some_and(|s| Entry::stored_kind(s) != kind) {
                return Ok((Write::Keep, None));
            }
            let (existed, stored, released, result) = edit(nodes, live)?;
            let (write, wrote, emptied) = match stored {
                None => (Write::Keep, false, false),
                Some(None) => (Write::Delete, existed, existed),
                Some(Some(new)) => (Write::Put(new, released), true, false),
            };
            let edited = Edited {
                result,
                wrote,
                emptied,
            };
            Ok((write, Some(edited)))
        })
    }

    /// What `f` makes of the hash or set (`kind`) at `key`, whose fields it looks up
    /// one by one: a large one's nodes that hold them are all that is read (in memory,
    /// a small one is read in place). `f` sees `None` if the key is missing; `None` if
    /// it holds another type.
    pub fn read_fields<R>(
        &self,
        key: &[u8],
        kind: Kind,
        f: impl FnOnce(Option<&FieldReader>) -> Result<R>,
    ) -> Result<Option<R>> {
        self.read_live(key, |nodes, stored| match stored {
            Some(s) if Entry::stored_kind(s) != kind => Ok(None),
            Some(s) => f(Some(&FieldReader::new(nodes, s))).map(Some),
            None => f(None).map(Some),
        })?
    }

    /// What `f` makes of the sorted set at `key`, whose members it looks up by name or
    /// rank: a large one's nodes that hold them are all that is read (in memory, a
    /// small one is read in place). `f` sees `None` if the key is missing; `None` if it
    /// holds another type.
    pub fn read_zset<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&ZsetReader>) -> Result<R>,
    ) -> Result<Option<R>> {
        self.read_live(key, |nodes, stored| match stored {
            Some(s) if Entry::stored_kind(s) != Kind::ZSet => Ok(None),
            Some(s) => f(Some(&ZsetReader::new(nodes, s))).map(Some),
            None => f(None).map(Some),
        })?
    }

    /// The length of the list at `key` and its elements in the inclusive range `pick`
    /// chooses from that length, copying only the nodes of a long list that hold them
    /// (in memory, a short list is read in place). A missing key reads as an empty
    /// list; `None` if the key holds another type.
    pub fn read_list(
        &self,
        key: &[u8],
        pick: impl FnOnce(usize) -> Option<(usize, usize)>,
    ) -> Result<Option<ListRange>> {
        self.read_live(key, |nodes, stored| match stored {
            Some(s) if Entry::stored_kind(s) != Kind::List => Ok(None),
            stored => list_nodes::read_range(nodes, stored, pick).map(Some),
        })?
    }

    /// Runs `read` on `key`'s live stored value (`None` if missing), a node table's
    /// nodes in the store it is given: in memory pinned and in place, on an engine
    /// under the key's lock. An expired value is left to [`Db::get`], which deletes it
    /// and may find a value written meanwhile, read whole.
    pub fn read_live<R>(
        &self,
        key: &[u8],
        read: impl FnOnce(&dyn NodeStore, Option<&[u8]>) -> R,
    ) -> Result<R> {
        let mut read = Some(read);
        let seen = match &self.store {
            Store::Memory(index) => {
                let guard = crossbeam_epoch::pin();
                let nodes = self.memory_nodes().pinned(&guard);
                index.get_with(key, |stored| {
                    if Entry::stored_expired_now(stored) {
                        return None;
                    }
                    let read = read.take().expect("called once");
                    Some(read(&nodes, Some(stored)))
                })
            }
            Store::Engine(store, clock) => {
                let locked = store.lock(key)?;
                if locked.stored().is_some() {
                    clock.touch(key);
                }
                locked.stored().map(|stored| {
                    if Entry::stored_expired_now(stored) {
                        return None;
                    }
                    let read = read.take().expect("called once");
                    Some(read(&EngineNodes::new(store), Some(stored)))
                })
            }
        };
        if let Some(Some(result)) = seen {
            return Ok(result);
        }
        let read = read.expect("`read` runs only on a live value");
        let found = self.get(key)?.map(Entry::into_stored);
        let engine_nodes;
        let nodes: &dyn NodeStore = match &self.store {
            Store::Memory(_) => self.memory_nodes(),
            Store::Engine(store, _) => {
                engine_nodes = EngineNodes::new(store);
                &engine_nodes
            }
        };
        Ok(read(nodes, found.as_deref()))
    }

    /// Under [`Db::update`] and [`Db::edit_list`]: `decide` sees the live stored bytes
    /// (a long list's node table, its nodes in the `NodeStore` it is given) and chooses
    /// a write, which is applied atomically: in memory by the key's compare-and-set,
    /// `decide` running again if another writer got there first; on an engine under
    /// the key's lock, with the nodes in the same batch.
    fn write<R>(
        &self,
        key: &[u8],
        decide: impl FnMut(Option<&[u8]>, &dyn NodeStore) -> Result<(Write, R)>,
    ) -> Result<R> {
        match &self.store {
            Store::Memory(index) => self.write_in_memory(index, key, decide),
            Store::Engine(store, _) => self.write_locked(store, key, decide),
        }
    }

    fn write_in_memory<R>(
        &self,
        index: &HotRing,
        key: &[u8],
        mut decide: impl FnMut(Option<&[u8]>, &dyn NodeStore) -> Result<(Write, R)>,
    ) -> Result<R> {
        let node_store = self.memory_nodes();
        loop {
            let guard = crossbeam_epoch::pin();
            let version = index.read_version(key, &guard);
            let stored = version.as_ref().map(Version::value);
            let expired = stored.is_some_and(Entry::stored_expired_now);
            let live = if expired { None } else { stored };
            let attempt = Attempt::new(node_store.pinned(&guard));
            let (write, result) = match decide(live, &attempt) {
                Ok(decided) => decided,
                Err(e) => {
                    attempt.abandon();
                    return Err(e);
                }
            };
            let done = match (write, stored) {
                (Write::Keep, _) => {
                    attempt.abandon();
                    if let Some(old) = stored.filter(|_| expired) {
                        self.remove_expired(key, old)?;
                    }
                    true
                }
                (Write::Put(new, _), None) => {
                    attempt.assert_made(&new, None);
                    let deadline = Entry::stored_deadline(&new);
                    let ok = index.insert(key, &new);
                    if ok {
                        self.events.fire(events::NEW, "new", key);
                        self.written(key, deadline);
                    } else {
                        attempt.abandon();
                    }
                    ok
                }
                (Write::Put(new, released), Some(old)) => {
                    attempt.assert_made(&new, Some(old));
                    let deadline = Entry::stored_deadline(&new);
                    let version = version.as_ref().expect("a version was read");
                    let ok = index.replace_version(key, version, &new);
                    if ok {
                        // What the editor knows it released is of the live value.
                        let released = released.filter(|_| !expired);
                        node_store.retire_known(old, Some(&new), released);
                        if expired {
                            self.replaced_expired(key);
                        }
                        self.written(key, deadline);
                    } else {
                        attempt.abandon();
                    }
                    ok
                }
                (Write::Delete, None) => {
                    attempt.abandon();
                    true
                }
                (Write::Delete, Some(old)) => {
                    attempt.abandon();
                    let ok = index.remove_if(key, |v| v == old);
                    if ok {
                        node_store.retire(old, None);
                        self.deleted(key, Entry::stored_deadline(old).is_some())?;
                    }
                    ok
                }
            };
            if done {
                return Ok(result);
            }
            self.lost_write_races.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn write_locked<R>(
        &self,
        store: &EngineStore,
        key: &[u8],
        mut decide: impl FnMut(Option<&[u8]>, &dyn NodeStore) -> Result<(Write, R)>,
    ) -> Result<R> {
        let locked = store.lock(key)?;
        let old = locked.stored();
        let expired = old.is_some_and(Entry::stored_expired_now);
        let nodes = EngineNodes::new(store);
        let (write, result) = decide(if expired { None } else { old }, &nodes)?;
        let released = |new: Option<&[u8]>| match old {
            Some(old) => nodes::dropped(&nodes, old, new),
            None => Ok(Vec::new()),
        };
        match write {
            Write::Keep if expired && !self.pause.is_on() => {
                let nodes = NodeWrites {
                    delete: released(None)?,
                    ..NodeWrites::default()
                };
                locked.write(None, nodes)?;
                self.expired.fetch_add(1, Ordering::Relaxed);
                self.events.fire(events::EXPIRED, "expired", key);
                self.changed(key, None, Touch::Deleted);
            }
            Write::Keep => {}
            Write::Put(new, known) => {
                let created = old.is_none();
                let deadline = Entry::stored_deadline(&new);
                // What the editor knows it released is of the live value.
                let released = match known {
                    Some(known) if old.is_some() && !expired => {
                        nodes::assert_released(&known, || released(Some(&new)));
                        known
                    }
                    _ => released(Some(&new))?,
                };
                let writes = nodes.into_writes(released);
                locked.write(Some(&new), writes)?;
                if expired {
                    self.replaced_expired(key);
                } else if created {
                    self.events.fire(events::NEW, "new", key);
                }
                self.written(key, deadline);
            }
            Write::Delete => {
                if let Some(old) = old {
                    let nodes = NodeWrites {
                        delete: released(None)?,
                        ..NodeWrites::default()
                    };
                    let had_deadline = Entry::stored_deadline(old).is_some();
                    locked.write(None, nodes)?;
                    self.deleted(key, had_deadline)?;
                }
            }
        }
        Ok(result)
    }

    /// Removes `key`; returns whether it was live.
    pub fn remove(&self, key: &[u8]) -> Result<bool> {
        // The value is not read: a split collection is not expanded to be deleted.
        self.write(key, |live, _| {
            let write = if live.is_some() {
                Write::Delete
            } else {
                Write::Keep
            };
            Ok((write, live.is_some()))
        })
    }

    /// Keys stored, including expired ones not yet deleted (as Redis's DBSIZE).
    pub fn len(&self) -> u64 {
        match &self.store {
            Store::Memory(index) => index.len() as u64,
            Store::Engine(store, _) => store.len(),
        }
    }

    /// Keys with a deadline (an estimate: hints not yet cleaned up count).
    pub fn volatile_len(&self) -> usize {
        self.volatile.len()
    }

    /// Deleted values freed in the background (INFO's lazyfreed_objects): in memory,
    /// a split collection's nodes are removed once no reader can reach them; an engine
    /// deletes them in the delete's own batch.
    pub fn lazyfreed_count(&self) -> u64 {
        self.nodes.as_ref().map_or(0, MemoryNodes::freed_later)
    }

    /// Keys deleted because they expired, lazily or actively.
    pub fn expired_count(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// Read-modify-writes run again after another writer of their key beat their
    /// compare-and-set, since the start or CONFIG RESETSTAT.
    pub fn lost_write_races(&self) -> u64 {
        self.lost_write_races.load(Ordering::Relaxed)
    }

    /// One page of a resumable scan: calls `f` on each live key; returns the next
    /// cursor, 0 at the end. In memory a cursor is a position in hash order (see
    /// [`HotRing::scan`]); on an engine, a number standing for the key to resume from.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], Kind)) -> Result<u64> {
        let now = now_ms();
        let mut stale = Vec::new();
        let mut visit = |k: &[u8], v: &[u8]| {
            if Entry::stored_expired(v, now) {
                stale.push((k.to_vec(), v.to_vec()));
            } else {
                f(k, Entry::stored_kind(v));
            }
        };
        let walk = count.max(1).saturating_mul(SCAN_WALK_PER_KEY);
        let next = match &self.store {
            Store::Memory(index) => index
                .scan_within(cursor, count, walk, |k, v, _| visit(k, v))
                .unwrap_or(0),
            Store::Engine(store, _) => store.scan(cursor, count, walk, visit)?,
        };
        for (k, stored) in stale {
            self.remove_expired(&k, &stored)?;
        }
        Ok(next)
    }

    /// Calls `f` with every key not past its deadline at `now` (Unix ms) and its
    /// entry, a node table expanded: what an RDB file holds. In memory it only reads
    /// the index, lock-free; nothing is deleted, counted or locked, so the child of a
    /// background save, a copy of one thread of this process, may call it
    /// (`background_save.rs`). On an engine (DEBUG RELOAD there) the keys are read
    /// one by one, and those found expired deleted: the caller keeps writers out.
    pub fn for_each_saved(
        &self,
        now: u64,
        mut f: impl FnMut(&[u8], Entry) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        let Store::Memory(index) = &self.store else {
            return self.for_each_engine_key(now, f);
        };
        for (key, mut stored) in index.iter() {
            if Entry::stored_is_node_table(&stored) {
                // The iterator unpins between batches, and a table's nodes may be
                // freed once it is replaced: read what the key holds now, and its
                // nodes, under one pin.
                let guard = crossbeam_epoch::pin();
                let Some(now_stored) = index.peek_with(&key, |v, _| v.to_vec()) else {
                    continue;
                };
                stored = match Entry::stored_is_node_table(&now_stored) {
                    true => nodes::expand(&self.memory_nodes().pinned(&guard), &now_stored)
                        .map_err(|e| e.to_string())?,
                    false => now_stored,
                };
            }
            if Entry::stored_expired(&stored, now) {
                continue;
            }
            f(&key, Entry::decode(stored))?;
        }
        Ok(())
    }

    fn for_each_engine_key(
        &self,
        now: u64,
        mut f: impl FnMut(&[u8], Entry) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        let mut cursor = 0;
        loop {
            let mut keys = Vec::new();
            cursor = self
                .scan(cursor, 1024, |key, _| keys.push(key.to_vec()))
                .map_err(|e| e.to_string())?;
            for key in keys {
                match self.peek(&key).map_err(|e| e.to_string())? {
                    Some(entry) if entry.deadline.is_none_or(|d| d > now) => f(&key, entry)?,
                    _ => {}
                }
            }
            if cursor == 0 {
                return Ok(());
            }
        }
    }

    /// Deletes every key. On an engine, the caller keeps other writers out.
    pub fn clear(&self) -> Result<()> {
        let removed = |k: &[u8]| {
            self.changes.add(1);
            fence(Ordering::SeqCst);
            self.watches.touch(k, Touch::Deleted);
            // A blocked XREADGROUP learns its stream is gone.
            self.blocked.written(k);
        };
        match &self.store {
            Store::Memory(index) => {
                let node_store = self.memory_nodes();
                remove_all(index, Entry::stored_is_node_table, |k, old| {
                    if let Some(old) = old {
                        node_store.retire(old, None);
                    }
                    removed(k)
                })
            }
            Store::Engine(store, _) => store.clear(removed)?,
        }
        remove_all(&self.volatile, |_| false, |_, _| {});
        self.tracking.flushed();
        Ok(())
    }

    /// One step of active expiry: examines up to `budget` keys that have deadlines,
    /// deletes the expired ones, and returns `(examined, deleted)`. Resumes where the
    /// last step stopped, wrapping around. Does nothing during a CLIENT PAUSE.
    pub fn expire_cycle(&self, budget: usize) -> Result<(usize, usize)> {
        if self.pause.is_on() {
            return Ok((0, 0));
        }
        let now = now_ms();
        let mut hints = Vec::with_capacity(budget);
        let from = self.expire_cursor.load(Ordering::Relaxed);
        let next = self
            .volatile
            .scan(from, budget, |k, v, _| hints.push((k.to_vec(), v.to_vec())));
        self.expire_cursor
            .store(next.unwrap_or(0), Ordering::Relaxed);
        let mut deleted = 0;
        for (key, hint) in &hints {
            let stored = self.stored(key)?;
            let deadline = stored.as_deref().and_then(Entry::stored_deadline);
            if let Some(stored) = stored
                .as_deref()
                .filter(|_| deadline.is_some_and(|d| d < now))
            {
                if self.remove_expired(key, stored)? {
                    deleted += 1;
                }
            } else if deadline
                .map(u64::to_le_bytes)
                .as_ref()
                .map(<[u8; 8]>::as_slice)
                == Some(hint.as_slice())
            {
                continue;
            }
            // The key is gone, lost its deadline or got another: drop this hint.
            self.drop_hint_if(key, |v| v == hint.as_slice())?;
        }
        Ok((hints.len(), deleted))
    }

    /// Bookkeeping after a command deleted `key`. A deadline's hint goes with it: left
    /// to the expiry cycle (64 hints a tenth of a second), the hints of keys deleted
    /// faster than that piled up, and eviction under a volatile policy, which samples
    /// hints, found only stale ones and answered OOM.
    fn deleted(&self, key: &[u8], had_deadline: bool) -> Result<()> {
        self.changed(key, None, Touch::Deleted);
        if had_deadline {
            self.drop_hint_if(key, |_| true)?;
        }
        Ok(())
    }

    /// Drops `key`'s deadline hint if `stale` says it is, then re-checks the key, so
    /// that a deadline set meanwhile keeps a hint.
    fn drop_hint_if(&self, key: &[u8], stale: impl Fn(&[u8]) -> bool) -> Result<()> {
        if self.volatile.remove_if(key, stale) {
            if let Some(d) = self
                .stored(key)?
                .as_deref()
                .and_then(Entry::stored_deadline)
            {
                self.volatile.upsert(key, &d.to_le_bytes());
            }
        }
        Ok(())
    }

    /// Deletes `key` if it still holds the expired value `stored`; returns whether it did.
    fn remove_expired(&self, key: &[u8], stored: &[u8]) -> Result<bool> {
        // Read as missing all the same: the key expires once the pause ends.
        if self.pause.is_on() {
            return Ok(false);
        }
        let removed = match &self.store {
            Store::Memory(index) => {
                let removed = index.remove_if(key, |v| v == stored);
                if removed {
                    if let Some(nodes) = &self.nodes {
                        nodes.retire(stored, None);
                    }
                }
                removed
            }
            Store::Engine(store, _) => {
                let locked = store.lock(key)?;
                let current = locked.stored() == Some(stored);
                if current {
                    let nodes = NodeWrites {
                        delete: nodes::dropped(&EngineNodes::new(store), stored, None)?,
                        ..NodeWrites::default()
                    };
                    locked.write(None, nodes)?;
                }
                current
            }
        };
        if removed {
            self.expired.fetch_add(1, Ordering::Relaxed);
            self.events.fire(events::EXPIRED, "expired", key);
            self.touched(key, None, Touch::Expired);
        }
        Ok(removed)
    }

    /// A write replaced an expired value: as Redis sees it, the key expired and a new
    /// one was made.
    fn replaced_expired(&self, key: &[u8]) {
        self.expired.fetch_add(1, Ordering::Relaxed);
        self.events.fire(events::EXPIRED, "expired", key);
        self.events.fire(events::NEW, "new", key);
    }

    /// Bookkeeping after a successful write to `key` that left a value there.
    fn written(&self, key: &[u8], deadline: Option<u64>) {
        self.changed(key, deadline, Touch::Written)
    }

    /// Bookkeeping after a command changed `key`.
    fn changed(&self, key: &[u8], deadline: Option<u64>, change: Touch) {
        self.changes.add(1);
        // A delete stamps its key too: its slot, no longer read, is soon the
        // stalest of its bucket and the first taken over.
        if let Some(clock) = self.engine_clock() {
            clock.touch(key);
        }
        self.touched(key, deadline, change);
    }

    /// Keys written or deleted by commands since the start (an expiry is no change a
    /// command made, and Redis counts none for it).
    pub fn changes(&self) -> u64 {
        self.changes.sum()
    }

    /// Bookkeeping after `key` changed, by a command or by its expiry.
    fn touched(&self, key: &[u8], deadline: Option<u64>, change: Touch) {
        if let Some(d) = deadline {
            self.volatile.upsert(key, &d.to_le_bytes());
        }
        // An invalidation may send its reader to the key at once.
        if self.tracking.may_invalidate() {
            self.write_gathered();
        }
        // One fence for all three: WATCH, tracking and blocked clients each pair it with
        // one of their own.
        fence(Ordering::SeqCst);
        self.watches.touch(key, change);
        if change == Touch::Expired {
            self.tracking.expired(key);
        } else {
            self.tracking.written(key);
        }
        self.blocked.written(key);
    }

    /// Whether `key` is stored past its deadline (`Some(true)`), stored and live
    /// (`Some(false)`) or missing, as WATCH and EXEC judge it: an expired key is left
    /// where it is, and so is its access clock.
    pub fn stale(&self, key: &[u8]) -> Result<Option<bool>> {
        Ok(match &self.store {
            Store::Memory(index) => index.peek_with(key, |s, _| Entry::stored_expired_now(s)),
            Store::Engine(store, _) => store.get(key)?.map(|s| Entry::stored_expired_now(&s)),
        })
    }

    /// Starts watching `key` for WATCH: returns the version EXEC compares against.
    pub fn watch(&self, key: &[u8]) -> WatchVersion {
        self.watches.watch(key)
    }

    pub fn unwatch(&self, keys: usize) {
        self.watches.unwatch(keys);
    }

    pub fn watched_version(&self, key: &[u8]) -> WatchVersion {
        self.watches.version(key)
    }

    /// Runs `f` (the commands of an EXEC) so that on an engine its writes reach the
    /// disk as one batch: after a crash, all or none. If that write fails, the
    /// transaction did not happen and its error is returned instead. The caller holds
    /// the gate exclusively.
    pub fn atomically<R>(&self, f: impl FnOnce() -> R) -> Result<R> {
        let Store::Engine(store, _) = &self.store else {
            return Ok(f());
        };
        store.begin()?;
        let result = f();
        store.commit()?;
        Ok(result)
    }

    /// The engine's counters (INFO's `engine` section); `None` in memory,
    /// where INFO has the `hotring` section instead.
    /// The function libraries saved with the data (FUNCTION DUMP's payload): on an
    /// engine only (the memory engine's are in its RDB file).
    pub fn saved_functions(&self) -> Result<Option<Vec<u8>>> {
        match &self.store {
            Store::Memory(_) => Ok(None),
            Store::Engine(store, _) => store.record(engine_keys::FUNCTIONS_KEY),
        }
    }

    /// Saves the function libraries (`None`: there are none).
    pub fn save_functions(&self, payload: Option<&[u8]>) -> Result<()> {
        match &self.store {
            Store::Memory(_) => Ok(()),
            Store::Engine(store, _) => store.put_record(engine_keys::FUNCTIONS_KEY, payload),
        }
    }

    pub fn engine_stats(&self) -> Option<engine::Stats> {
        match &self.store {
            Store::Memory(_) => None,
            Store::Engine(store, _) => Some(store.stats()),
        }
    }

    /// SAVE on an engine: makes every write so far durable. `false` in memory, whose
    /// keys the server saves itself (`rdb_save.rs`).
    pub fn save(&self) -> Result<bool> {
        match &self.store {
            Store::Memory(_) => Ok(false),
            Store::Engine(store, _) => store.sync().map(|()| true),
        }
    }

    /// Hands the writes the engine holds back to the operating system: call before
    /// sending a reply, which may show any visible write. If that fails, the engine
    /// has logged why and refuses writes from then on; the reply goes out regardless,
    /// as Redis's does when its append-only file cannot be written.
    pub fn write_held_back(&self) {
        if let Store::Engine(store, _) = &self.store {
            let _ = store.write_held_back();
        }
    }

    /// Until the returned [`Gathering`] ends, this thread's writes to an engine are
    /// gathered into one batch (`gathered_writes.rs`); in memory, a write is one anyway.
    pub fn gather(&self) -> Gathering<'_> {
        if let Store::Engine(store, _) = &self.store {
            store.start_gathering();
        }
        Gathering {
            db: self,
            finished: false,
        }
    }

    fn finish_gathering(&self) -> Result<()> {
        match &self.store {
            Store::Memory(_) => Ok(()),
            Store::Engine(store, _) => store.finish_gathering(),
        }
    }

    /// Writes what this thread gathered so far, before others are told of it (a
    /// keyspace event, an invalidation). A failure is `finish_gathering`'s to report.
    pub fn write_gathered(&self) {
        if let Store::Engine(store, _) = &self.store {
            let _ = store.write_gathered();
        }
    }

    /// Waits until writes to `key` that another thread gathered are visible: for a
    /// client that has just made sure it will hear of the key's next change (a
    /// blocked command, WATCH, tracking), before it reads.
    pub fn await_writers(&self, key: &[u8]) -> Result<()> {
        if let Store::Engine(store, _) = &self.store {
            store.await_writers(key)?;
        }
        Ok(())
    }

    /// When the engine's writes reach the disk from now on; the memory engine keeps
    /// nothing to sync.
    pub fn set_fsync(&self, policy: lsm::FsyncPolicy) -> Result<()> {
        match &self.store {
            Store::Memory(_) => Ok(()),
            Store::Engine(store, _) => store.set_fsync(policy),
        }
    }

    /// Makes every write durable and closes the engine (at shutdown).
    pub fn close(&self) -> Result<()> {
        match &self.store {
            Store::Memory(_) => Ok(()),
            Store::Engine(store, _) => store.close(),
        }
    }
}

/// Collector passes [`Db::free_retired`] makes: two move the epoch past everything
/// retired before the call, the rest free the bags queued meanwhile.
const FREE_RETIRED_PASSES: usize = 8;

/// Version counters for WATCH, one per stripe of the key space. A change to a key
/// bumps its stripe's counter, but only while some client watches anything, so
/// writes pay one shared load when nobody does. A stripe shared by two keys can make
/// EXEC fail without cause (1 in 65,536), never succeed wrongly.
struct Watches {
    watchers: AtomicUsize,
    versions: Box<[AtomicU64]>,
}

/// What a change did to its key, as WATCH and client tracking tell changes apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Touch {
    /// A command left a value there.
    Written,
    /// A command (or a flush, or a rename away) removed it.
    Deleted,
    /// It was removed as expired, which client tracking counts to no client (see
    /// [`Tracking::expired`]).
    Expired,
}

/// A WATCH stripe's counters at one moment: changes of every kind in the low half,
/// writes that left a value in the high half (a key already expired when watched is
/// changed only by those; see `transaction::changed_since_watched`). The low half's
/// carry, once in 2^32 changes of a stripe, reads as a write: a spurious abort at
/// worst.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WatchVersion(u64);

impl WatchVersion {
    const WRITE: u64 = 1 << 32;

    /// Whether a write left a value in the stripe since `then`.
    pub fn written_since(self, then: WatchVersion) -> bool {
        self.0 >> 32 != then.0 >> 32
    }
}

const WATCH_STRIPES: usize = 1 << 16;

impl Default for Watches {
    fn default() -> Self {
        Watches {
            watchers: AtomicUsize::new(0),
            versions: (0..WATCH_STRIPES).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Watches {
    fn stripe(&self, key: &[u8]) -> &AtomicU64 {
        &self.versions[hotring::hash::hash64(key) as usize % WATCH_STRIPES]
    }

    /// Called after the write is visible and a SeqCst fence, which pairs with the one
    /// in `watch`: a writer that reads no watchers wrote before the watcher read its
    /// version.
    fn touch(&self, key: &[u8], change: Touch) {
        if self.watchers.load(Ordering::Relaxed) > 0 {
            let bump = match change {
                Touch::Written => WatchVersion::WRITE + 1,
                Touch::Deleted | Touch::Expired => 1,
            };
            self.stripe(key).fetch_add(bump, Ordering::SeqCst);
        }
    }

    fn watch(&self, key: &[u8]) -> WatchVersion {
        self.watchers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.version(key)
    }

    fn unwatch(&self, keys: usize) {
        self.watchers.fetch_sub(keys, Ordering::SeqCst);
    }

    fn version(&self, key: &[u8]) -> WatchVersion {
        WatchVersion(self.stripe(key).load(Ordering::SeqCst))
    }
}

/// Removes every key of `index`, calling `removed` on each it removed, with the value it
/// removed if `wanted` asks for that value.
fn remove_all(
    index: &HotRing,
    wanted: impl Fn(&[u8]) -> bool,
    mut removed: impl FnMut(&[u8], Option<&[u8]>),
) {
    let mut cursor = Some(0);
    while let Some(from) = cursor {
        let mut keys = Vec::new();
        cursor = index.scan(from, 1024, |k, _, _| keys.push(k.to_vec()));
        for k in keys {
            let last_seen = std::cell::RefCell::new(None);
            // The predicate's last call saw the value removed.
            let accept = |v: &[u8]| {
                *last_seen.borrow_mut() = wanted(v).then(|| v.to_vec());
                true
            };
            if index.remove_if(&k, accept) {
                removed(&k, last_seen.borrow().as_deref());
            }
        }
    }
}

/// Scans at least `n` entries of `index` from a random hash, wrapping around once if
/// that point was near the end.
fn scan_from_random_point(index: &HotRing, n: usize, f: &mut impl FnMut(&[u8], &[u8], Access)) {
    if index.scan(rand::random(), n, &mut *f).is_none() {
        index.scan(0, n, f);
    }
}

/// Items INFO's `hotring` section looks at for ring lengths and bytes per key.
const STATS_SAMPLE_ITEMS: usize = 16_384;

/// A key met by [`Db::sample`] or [`Db::sample_volatile`].
#[derive(Clone)]
pub struct Sampled {
    pub key: Vec<u8>,
    /// What the index knows of the key's accesses; nothing (0 heat, 0 idle) on an engine.
    pub access: Access,
    /// Bytes of key and stored value, plus a rough per-item overhead.
    pub bytes: usize,
    pub deadline: Option<u64>,
}

/// What an engine's access clock knows of `key`'s accesses, as the index would say
/// it: its LFU counter for heat (both rank keys the same way: more is hotter).
fn engine_access(clock: &AccessClock, key: &[u8]) -> Access {
    Access {
        heat: u16::from(clock.frequency(key)),
        idle: clock.idle(key),
    }
}

/// Index overhead per item beyond key and value: header, link and directory share.
const ITEM_OVERHEAD: usize = 48;

/// Bytes a key takes in the store: its name, its stored value, the per-item overhead
/// and `node_bytes`, what a large collection's nodes take beyond the value.
fn item_bytes(key: &[u8], stored: &[u8], node_bytes: usize) -> usize {
    key.len() + stored.len() + ITEM_OVERHEAD + node_bytes
}

impl Db {
    /// Up to `n` keys that follow a random point of the key space, with what the index
    /// knows of their accesses (on an engine, what its access clock knows).
    pub fn sample(&self, n: usize) -> Result<Vec<Sampled>> {
        let sampled = |k: &[u8], v: &[u8], access: Access, node_bytes: usize| Sampled {
            key: k.to_vec(),
            access,
            bytes: item_bytes(k, v, node_bytes),
            deadline: Entry::stored_deadline(v),
        };
        let mut out = Vec::with_capacity(n);
        match &self.store {
            Store::Memory(index) => {
                // Pinned, so that the nodes of a table read are there (`nodes.rs`).
                let guard = crossbeam_epoch::pin();
                let nodes = self.memory_nodes().pinned(&guard);
                scan_from_random_point(index, n, &mut |k, v, access| {
                    if out.len() < n {
                        let node_bytes = nodes::node_bytes(&nodes, v).expect("memory reads");
                        out.push(sampled(k, v, access, node_bytes))
                    }
                })
            }
            // As `resample` counts it: a collection's nodes would need its key's lock.
            Store::Engine(store, clock) => {
                for (k, v) in store.sample(n)? {
                    out.push(sampled(&k, &v, engine_access(clock, &k), 0));
                }
            }
        }
        Ok(out)
    }

    /// `key` as sampling would meet it now: its accesses, bytes and deadline; None if
    /// it is gone. Reads leave its access clock as it was.
    pub fn resample(&self, key: &[u8]) -> Result<Option<Sampled>> {
        let found = match &self.store {
            Store::Memory(index) => {
                // Pinned, so that the nodes of a table read are there (`nodes.rs`).
                let guard = crossbeam_epoch::pin();
                let nodes = self.memory_nodes().pinned(&guard);
                index.peek_with(key, |v, access| {
                    let node_bytes = nodes::node_bytes(&nodes, v).expect("memory reads");
                    (
                        item_bytes(key, v, node_bytes),
                        access,
                        Entry::stored_deadline(v),
                    )
                })
            }
            Store::Engine(store, clock) => store.get(key)?.map(|v| {
                (
                    item_bytes(key, &v, 0),
                    engine_access(clock, key),
                    Entry::stored_deadline(&v),
                )
            }),
        };
        Ok(found.map(|(bytes, access, deadline)| Sampled {
            key: key.to_vec(),
            access,
            bytes,
            deadline,
        }))
    }

    /// Up to `n` keys with deadlines that follow a random point of the key space, with
    /// their accesses in the main index (for the volatile-* eviction policies).
    pub fn sample_volatile(&self, n: usize) -> Result<Vec<Sampled>> {
        let mut keys = Vec::with_capacity(n);
        scan_from_random_point(&self.volatile, n, &mut |k, _, _| {
            if keys.len() < n {
                keys.push(k.to_vec())
            }
        });
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            // Stale hints (the key is gone or lost its deadline) are skipped here
            // and dropped by the expiry cycle.
            if let Some(sampled) = self.resample(&key)?.filter(|s| s.deadline.is_some()) {
                out.push(sampled);
            }
        }
        Ok(out)
    }

    /// Bytes `key` takes in the store (key, stored value, the nodes of a large
    /// collection and the per-item overheads), or `None` if it is not live. Does not
    /// count as an access. On an engine a collection's nodes are counted too (their
    /// sizes are in its table: its pages are read, not the nodes), so that `redis-cli
    /// --memkeys` finds the large keys there as well; eviction's sampling leaves them
    /// out, as reading them needs the key's lock.
    pub fn memory_usage(&self, key: &[u8]) -> Result<Option<usize>> {
        let live = |deadline: Option<u64>| deadline.is_none_or(|d| d >= now_ms());
        match &self.store {
            Store::Memory(_) => Ok(self
                .resample(key)?
                .filter(|s| live(s.deadline))
                .map(|s| s.bytes)),
            Store::Engine(store, _) => {
                let locked = store.lock(key)?;
                let Some(stored) = locked.stored() else {
                    return Ok(None);
                };
                if !live(Entry::stored_deadline(stored)) {
                    return Ok(None);
                }
                let node_bytes = nodes::node_bytes(&EngineNodes::new(store), stored)?;
                Ok(Some(item_bytes(key, stored, node_bytes)))
            }
        }
    }

    /// A live key chosen at random (RANDOMKEY), or `None` if there are none.
    pub fn random_key(&self) -> Result<Option<Vec<u8>>> {
        // Expired keys met on the way are deleted; give up after a few rounds of them
        // as Redis does, rather than loop on a keyspace full of expired keys.
        for _ in 0..100 {
            let Some(sampled) = self.sample(1)?.pop() else {
                return Ok(None);
            };
            if self.peek(&sampled.key)?.is_some() {
                return Ok(Some(sampled.key));
            }
        }
        Ok(None)
    }

    /// Seconds since `key`, which the caller found live, was last read or written
    /// (OBJECT IDLETIME), modulo 2^24 as in Redis. On an engine, a key not accessed
    /// lately reads as idle since the start or since its clock was dropped for lack
    /// of room, whichever is later (`access_clock.rs`): never more than the truth.
    pub fn idle_seconds(&self, key: &[u8]) -> Option<u32> {
        match self.engine_clock() {
            Some(clock) => Some(clock.idle(key)),
            None => self.index().and_then(|index| index.idle(key)),
        }
    }

    /// Makes `key` look last accessed `seconds` ago (RESTORE's IDLETIME).
    pub fn set_idle(&self, key: &[u8], seconds: u64) {
        let seconds = u32::try_from(seconds).unwrap_or(u32::MAX);
        if let Some(clock) = self.engine_clock() {
            clock.set_idle(key, seconds);
        } else if let Some(index) = self.index() {
            index.set_idle(key, seconds);
        }
    }

    /// `key`'s LFU counter as Redis keeps it (OBJECT FREQ) on an engine; `None` in
    /// memory, whose index ranks keys by its own measure of heat.
    pub fn lfu_counter(&self, key: &[u8]) -> Option<u8> {
        self.engine_clock().map(|c| c.frequency(key))
    }

    /// Sets `key`'s LFU counter (RESTORE's FREQ) on an engine; in memory, nothing: a
    /// key's heat is the index's to learn.
    pub fn set_lfu_counter(&self, key: &[u8], counter: u8) {
        if let Some(clock) = self.engine_clock() {
            clock.set_frequency(key, counter);
        }
    }

    /// `lfu-log-factor` and `lfu-decay-time`, for an engine's LFU counters.
    pub fn set_lfu(&self, log_factor: u32, decay_minutes: u32) {
        if let Some(clock) = self.engine_clock() {
            clock.set_lfu(log_factor, decay_minutes);
        }
    }

    /// Advances the access clock that reads and writes stamp on keys: seconds, as
    /// Redis's LRU clock.
    pub fn set_clock(&self, unix_seconds: u64) {
        if let Some(clock) = self.engine_clock() {
            clock.set_clock(unix_seconds as u32);
        } else if let Some(index) = self.index() {
            index.set_clock(unix_seconds as u32);
        }
    }

    /// Frees what the memory store's deletes and overwrites retired and no reader can
    /// reach any more: the index's items and the large collections' nodes. The epoch
    /// collector frees a retired bag only once the epoch has moved twice since, and
    /// moves it only when some thread asks (every 128th pin, or a flush); on a server
    /// gone idle, or before a write is refused for memory, that would leave counted
    /// against `maxmemory` bytes no key holds. Each pass below may move the epoch once
    /// and frees up to 8 bags (the collector's step), a microsecond or so in all.
    pub fn free_retired(&self) {
        if self.nodes.is_some() {
            for _ in 0..FREE_RETIRED_PASSES {
                crossbeam_epoch::pin().flush();
            }
        }
    }

    /// Nodes the memory store's large collections take (see `nodes.rs`), counting
    /// those waiting for readers to unpin; `None` on an engine, which keeps its own.
    pub fn collection_nodes(&self) -> Option<usize> {
        self.nodes.as_ref().map(MemoryNodes::len)
    }

    /// The HotRing index, where key heat is known; `None` on an engine.
    pub fn index(&self) -> Option<&HotRing> {
        match &self.store {
            Store::Memory(index) => Some(index),
            Store::Engine(..) => None,
        }
    }

    pub fn reset_stats(&self) {
        self.expired.store(0, Ordering::Relaxed);
        self.lost_write_races.store(0, Ordering::Relaxed);
        if let Some(nodes) = &self.nodes {
            nodes.reset_freed_later();
        }
        if let Some(index) = self.index() {
            index.reset_access_stats();
        }
    }

    /// The index's counters, with ring lengths and bytes estimated from the items
    /// after a random point: a full walk of millions of keys would stall INFO, and
    /// every client of its io thread, for the better part of a second.
    pub fn index_stats(&self) -> Option<hotring::Stats> {
        self.index()
            .map(|index| index.stats_sampled(rand::random(), STATS_SAMPLE_ITEMS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list_nodes::End;

    /// A read-modify-write whose key another writer changes between its read and its
    /// compare-and-set decides again on the new value, and is counted as a lost race.
    #[test]
    fn a_write_beaten_to_its_key_decides_again_and_is_counted() {
        let db = Db::default();
        db.set(b"k", b"1", None).unwrap();
        let mut runs = 0;
        let seen = db.update(b"k", Kind::String, |e| {
            runs += 1;
            if runs == 1 {
                db.set(b"k", b"2", None).unwrap();
            }
            let seen = e.expect("the string").value.clone();
            let new = [seen.as_slice(), b"+"].concat();
            (Change::Put(Entry::plain(new, None)), seen)
        });
        assert_eq!((runs, seen.unwrap()), (2, b"2".to_vec()));
        assert_eq!(db.get(b"k").unwrap().unwrap().value, b"2+");
        assert_eq!(db.lost_write_races(), 1);
        db.reset_stats();
        assert_eq!(db.lost_write_races(), 0);
    }

    /// A split list whose nodes are all gone from the store: whatever expanded it would
    /// panic (in memory a node outlives its readers). What needs only the key's type or
    /// deadline answers all the same, and string commands refuse it, without reading a
    /// node.
    #[test]
    fn a_split_collection_is_typed_and_refused_without_reading_its_nodes() {
        let db = Db::default();
        let element = vec![b'e'; 100];
        // A dozen nodes: few enough for a table inline, so that every id it names is a
        // node's (a paged table's pages are read to release its nodes).
        for _ in 0..500 {
            let pushed = db.edit_list(b"list", |l| {
                l.push(End::Right, std::iter::once(element.as_slice()))
            });
            pushed.unwrap().expect("a list");
        }
        let stored = db.stored(b"list").unwrap().unwrap();
        assert!(Entry::stored_is_node_table(&stored));
        let store = db.memory_nodes();
        let ids = nodes::node_ids(store, &stored).unwrap();
        for &id in &ids {
            store.hide(id);
        }
        assert_eq!(db.kind(b"list").unwrap(), Some(Kind::List));
        assert_eq!(db.peek_kind(b"list").unwrap(), Some(Kind::List));
        assert_eq!(db.peek_deadline(b"list").unwrap(), Some(None));
        assert!(db.contains(b"list").unwrap());
        for refused in [
            db.get_of(b"list", Kind::String),
            db.peek_of(b"list", Kind::Hash),
        ] {
            let refused = refused.unwrap().unwrap();
            assert_eq!((refused.kind, refused.value.len()), (Kind::List, 0));
        }
        let kept = db.update(b"list", Kind::String, |e| {
            let e = e.expect("the list");
            assert_eq!((e.kind, e.value.len()), (Kind::List, 0));
            (Change::Keep, ())
        });
        assert!(kept.is_ok());
        // Replaced by a string without being read (SET), its nodes are not read either.
        // They are freed once every thread pinned now has unpinned: this one shows them
        // again first.
        let pinned = crossbeam_epoch::pin();
        let replaced = db.update(b"list", Kind::String, |_| {
            (Change::Put(Entry::plain(b"v".to_vec(), None)), ())
        });
        for &id in &ids {
            store.unhide(id);
        }
        drop(pinned);
        assert!(replaced.is_ok());
        assert_eq!(db.get(b"list").unwrap().unwrap().value, b"v");
    }
}
