//! Large collections split into nodes, so that a write copies the nodes it changes
//! and the key's node table rather than the whole value: long lists in order
//! (`list_nodes.rs`, as Redis's quicklist) and large hashes and sets by field hash
//! (`field_nodes.rs`, as Redis's hashtable buckets), large sorted sets by member and in
//! order (`score_nodes.rs`, as Redis's dict and skiplist), long streams in ID order
//! (`stream_nodes.rs`, as Redis's radix tree of listpacks). The key's entry holds the node
//! table, marked by a tag bit (`entry.rs`); each node is a packed value (`packed.rs`)
//! kept where the store keeps nodes (a [`NodeStore`]): in memory, an allocation of its
//! own whose address is its id ([`MemoryNodes`]); on an engine, a record of the server's
//! own beside the keys (`engine_keys.rs`), written in one batch with the table
//! (`engine_store.rs`).
//!
//! On an engine, a key's writers and the readers of its nodes hold the key's lock. In
//! memory, readers and writers need no lock:
//! - A node is never changed once written, and its id is not reused while any thread
//!   that may hold it is pinned. A write makes new nodes for what it changes and
//!   publishes a new node table with the key's compare-and-set, as any other write,
//!   pinned from its read of the old table to the compare-and-set: a table equal to the
//!   one it read is the same value, so the compare-and-set is exact; a writer that loses
//!   it frees the nodes it made (its [`Attempt`] remembers them), which nobody else has
//!   seen.
//! - A node that a published table no longer names is freed once every thread pinned
//!   (crossbeam-epoch) when it was dropped has unpinned. Readers and writers pin before
//!   they read the table and stay pinned while they read its nodes, so every node of a
//!   table they read is there. A read of a node outside this rule is a read of freed
//!   memory: test and debug builds check every id read against those allocated.
//! - Everything that replaces or deletes a key's value in memory (`db.rs`) hands the old
//!   value to [`MemoryNodes::retire`], so nodes are released exactly when their table is.
//!   An editor that knows what its write replaced (`Records::finish_releasing`) hands
//!   that over too ([`MemoryNodes::retire_known`]), so the old and new tables are not
//!   read again to find it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_epoch::Guard;

use engine::Result;

use crate::entry::{Entry, Kind};
use crate::{field_nodes, list_nodes, score_nodes, stream_nodes};

/// The packed size past which a collection is split, and up to which a node is
/// filled: Redis's default `list-max-listpack-size -2` is 8 KB; half that halves what
/// a write copies, while a collection of a million short elements still has a table of
/// a few thousand nodes.
pub const NODE_BYTES: usize = 4096;

/// Bytes a node costs beyond its packed elements, for MEMORY USAGE and eviction's
/// accounting: in memory, the length before them (`MemoryNodes`); on an engine, about
/// as much for its record's key.
const NODE_OVERHEAD: usize = 16;

/// Where a store keeps the nodes of its large collections.
pub trait NodeStore {
    /// Stores a node under an id never used before; nobody reads it until a published
    /// table names it.
    fn write(&self, packed: &[u8]) -> u64;
    /// The packed elements of node `id`, named by a table the caller read (see the top
    /// of this file for why it is still there).
    fn read(&self, id: u64) -> Result<Cow<'_, [u8]>>;
    /// Removes node `id`, written by this edit, which no table will name.
    fn discard(&self, id: u64);
}

/// What an editor of a collection leaves to store: `None` if nothing changed,
/// `Some(None)` to delete the key, `Some(Some(stored))` otherwise.
pub type Outcome = Option<Option<Vec<u8>>>;

/// For an editor of split values: `r`'s value, or `None` if it failed (a node or page
/// an engine could not read), the first such error kept in `failed` for the editor to
/// report, writing nothing.
pub fn noted<T>(failed: &mut Option<engine::Error>, r: Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            failed.get_or_insert(e);
            None
        }
    }
}

/// The table of `stored` and its type, if `stored` is a node table.
fn table_of(stored: &[u8]) -> Option<(Kind, &[u8])> {
    Entry::stored_is_node_table(stored)
        .then(|| (Entry::stored_kind(stored), Entry::stored_payload(stored)))
}

/// The nodes `stored` names (and the pages of its tables), each its id and stored
/// size (none if it is not a node table).
fn nodes_of(nodes: &dyn NodeStore, stored: &[u8]) -> Result<Vec<(u64, usize)>> {
    Ok(match table_of(stored) {
        None => Vec::new(),
        Some((Kind::List, _)) => list_nodes::nodes(nodes, stored)?,
        Some((Kind::Stream, table)) => stream_nodes::nodes(nodes, table)?,
        Some((Kind::ZSet, table)) => {
            let mut all = nodes_of(nodes, score_nodes::members(table))?;
            all.extend(score_nodes::order_nodes(nodes, table)?);
            all
        }
        Some((_, table)) => field_nodes::nodes(nodes, table)?,
    })
}

/// The ids of the nodes `stored` names (none if it is not a node table).
pub fn node_ids(nodes: &dyn NodeStore, stored: &[u8]) -> Result<Vec<u64>> {
    Ok(nodes_of(nodes, stored)?
        .into_iter()
        .map(|(id, _)| id)
        .collect())
}

/// The nodes `old` names and `new` does not: what replacing `old` by `new` (or
/// deleting it, `None`) releases.
pub fn dropped(nodes: &dyn NodeStore, old: &[u8], new: Option<&[u8]>) -> Result<Vec<u64>> {
    match (table_of(old), new.and_then(table_of)) {
        (Some((kind, old)), Some((new_kind, new)))
            if matches!(kind, Kind::Hash | Kind::Set) && kind == new_kind =>
        {
            return field_nodes::dropped(nodes, old, new);
        }
        (Some((Kind::List, _)), Some((Kind::List, _))) => {
            return list_nodes::dropped(nodes, old, new.expect("a list's table"));
        }
        (Some((Kind::Stream, old)), Some((Kind::Stream, new))) => {
            return stream_nodes::dropped(nodes, old, new);
        }
        (Some((Kind::ZSet, old)), Some((Kind::ZSet, new))) => {
            let mut released = dropped(
                nodes,
                score_nodes::members(old),
                Some(score_nodes::members(new)),
            )?;
            released.extend(score_nodes::dropped_order(nodes, old, new)?);
            return Ok(released);
        }
        _ => {}
    }
    let mut released = node_ids(nodes, old)?;
    if !released.is_empty() {
        let mut kept = match new {
            Some(new) => node_ids(nodes, new)?,
            None => Vec::new(),
        };
        kept.sort_unstable();
        released.retain(|id| kept.binary_search(id).is_err());
    }
    Ok(released)
}

/// How many of the fixed-size records (`size` bytes each) of two node tables' bodies
/// `a` and `b` are equal at their start, and how many of the rest at their end: the
/// records a write left alone, compared in blocks rather than one record at a time.
pub fn common_records(a: &[u8], b: &[u8], size: usize) -> (usize, usize) {
    const BLOCK: usize = 64;
    let equal_run = |a: &[u8], b: &[u8], from_end: bool| {
        let n = a.len().min(b.len());
        let (a, b) = if from_end {
            (&a[a.len() - n..], &b[b.len() - n..])
        } else {
            (&a[..n], &b[..n])
        };
        let block = |i: usize| {
            if from_end {
                n - i - BLOCK..n - i
            } else {
                i..i + BLOCK
            }
        };
        let mut same = 0;
        while same + BLOCK <= n && a[block(same)] == b[block(same)] {
            same += BLOCK;
        }
        let byte = |i: usize| if from_end { n - 1 - i } else { i };
        while same < n && a[byte(same)] == b[byte(same)] {
            same += 1;
        }
        same
    };
    let front = equal_run(a, b, false) / size;
    let back = equal_run(&a[front * size..], &b[front * size..], true) / size;
    (front, back)
}

/// Bytes the nodes of `stored` take, beyond `stored` itself (0 if it has none).
pub fn node_bytes(nodes: &dyn NodeStore, stored: &[u8]) -> Result<usize> {
    Ok(nodes_of(nodes, stored)?
        .iter()
        .map(|&(_, bytes)| bytes + NODE_OVERHEAD)
        .sum())
}

/// `stored` with a large collection split into nodes written to `nodes`, to be
/// published in place of whatever the key held: a long list, or a hash, set or sorted
/// set in Redis's large encoding (`Entry::raw`) past [`NODE_BYTES`] (a hash or set past
/// `field_nodes::FIELD_NODE_BYTES`). Anything else is returned as it is.
pub fn split_if_large(nodes: &dyn NodeStore, stored: Vec<u8>) -> Vec<u8> {
    if Entry::stored_is_node_table(&stored) {
        return stored;
    }
    let kind = Entry::stored_kind(&stored);
    let payload = Entry::stored_payload(&stored);
    let table = match kind {
        Kind::List => list_nodes::split_if_long(nodes, payload),
        Kind::Hash | Kind::Set if Entry::stored_raw(&stored) => {
            field_nodes::split_if_large(nodes, kind, payload)
        }
        Kind::ZSet if Entry::stored_raw(&stored) => score_nodes::split_if_large(nodes, payload),
        Kind::Stream => stream_nodes::split_if_long(nodes, payload),
        _ => None,
    };
    match table {
        Some(table) => Entry::encode_node_table(
            kind,
            table,
            Entry::stored_deadline(&stored),
            Entry::stored_raw(&stored),
        ),
        None => stored,
    }
}

/// `stored` as a value: a node table expanded to the whole packed collection;
/// anything else copied. The caller read `stored` pinned (memory) or holds the key's
/// lock (engine).
pub fn expand(nodes: &dyn NodeStore, stored: &[u8]) -> Result<Vec<u8>> {
    let Some((kind, table)) = table_of(stored) else {
        return Ok(stored.to_vec());
    };
    let value = match kind {
        Kind::List => list_nodes::expand(nodes, stored)?,
        Kind::ZSet => score_nodes::expand(nodes, table)?,
        Kind::Stream => stream_nodes::expand(nodes, table)?,
        _ => field_nodes::expand(nodes, kind, table)?,
    };
    let entry = Entry {
        value,
        deadline: Entry::stored_deadline(stored),
        raw: Entry::stored_raw(stored),
        kind,
    };
    Ok(entry.into_stored())
}

/// Checks, in debug and test builds, that what an editor says its write released is
/// what [`dropped`] finds (`found`) reading the old and new tables.
pub fn assert_released(known: &[u64], found: impl FnOnce() -> Result<Vec<u64>>) {
    if cfg!(any(test, debug_assertions)) {
        let mut known = known.to_vec();
        let mut found = found().expect("the tables an edit read are readable");
        known.sort_unstable();
        found.sort_unstable();
        assert_eq!(
            known, found,
            "an editor's release is what the tables differ by"
        );
    }
}

/// The nodes of the memory store's large collections. A node is one allocation, its
/// packed length ([`LEN_BYTES`], LE) then its packed bytes, and its id is the
/// allocation's address: a read is one pointer away. (A second index keyed by a
/// counter cost a hash, a ring walk and its own copy per read, insert and removal,
/// about a fifth of a ZADD into a large sorted set.) An address is reused only after
/// its node is freed, which waits for every thread pinned when it was retired, so
/// within any pinned reader's view ids are never reused, as the top of this file needs.
pub struct MemoryNodes {
    /// Nodes allocated and not yet freed, retired ones included.
    live: Arc<AtomicUsize>,
    /// Deleted collections whose nodes were freed after the delete: INFO's
    /// lazyfreed_objects, as Redis counts the values it frees in the background.
    freed_later: AtomicU64,
    ids: LiveIds,
}

/// Bytes before a node's packed elements in its allocation: their length.
const LEN_BYTES: usize = 8;

impl Default for MemoryNodes {
    fn default() -> Self {
        MemoryNodes {
            live: Arc::default(),
            freed_later: AtomicU64::new(0),
            ids: LiveIds::default(),
        }
    }
}

impl NodeStore for MemoryNodes {
    fn write(&self, packed: &[u8]) -> u64 {
        let mut node = Vec::with_capacity(LEN_BYTES + packed.len());
        node.extend_from_slice(&(packed.len() as u64).to_le_bytes());
        node.extend_from_slice(packed);
        let raw: *mut [u8] = Box::into_raw(node.into_boxed_slice());
        let id = raw.cast::<u8>().expose_provenance() as u64;
        self.live.fetch_add(1, Ordering::Relaxed);
        self.ids.added(id);
        id
    }

    fn read(&self, id: u64) -> Result<Cow<'_, [u8]>> {
        self.ids.check(id);
        // SAFETY: `id` is named by a table the caller read pinned and is still pinned
        // for (see the top of this file), or was written by the caller's own edit and
        // not discarded; either way its node is allocated until the caller unpins. The
        // bytes are copied: nothing ties a borrow of them to the caller's pin.
        Ok(Cow::Owned(unsafe { packed_of(id) }.to_vec()))
    }

    fn discard(&self, id: u64) {
        // SAFETY: a store discards only a node its own edit wrote and no published
        // table named, so no other thread has the id; this store's reads copy, so no
        // borrow of the node remains. (Edits under a pin discard through
        // `PinnedNodes`, which waits for the pin to end.)
        unsafe { free_counted(id, &self.live, &self.ids) };
    }
}

/// The memory store's nodes as a thread pinned with `guard` reads them: in place, not
/// copied, since a node that a table read under the guard names stays allocated until
/// the guard is dropped, and the borrow cannot outlive it. Nodes discarded here are
/// freed once the guard is dropped too, as a read of them may still be borrowed.
pub struct PinnedNodes<'g> {
    nodes: &'g MemoryNodes,
    guard: &'g Guard,
}

impl NodeStore for PinnedNodes<'_> {
    fn write(&self, packed: &[u8]) -> u64 {
        self.nodes.write(packed)
    }

    fn read(&self, id: u64) -> Result<Cow<'_, [u8]>> {
        self.nodes.ids.check(id);
        // SAFETY: `id` is named by a table read under `guard` (see the top of this
        // file), or was written by this edit and, if discarded, freed only after the
        // guard is dropped; so its node is allocated while the guard lives, and the
        // slice, borrowed from `self`, which borrows the guard, cannot outlive it.
        Ok(Cow::Borrowed(unsafe { packed_of(id) }))
    }

    fn discard(&self, id: u64) {
        self.nodes.free_after(self.guard, vec![id]);
    }
}

/// The packed bytes of node `id`.
///
/// # Safety
/// `id` was returned by [`MemoryNodes::write`] and its node is not freed for as long
/// as the returned slice lives.
unsafe fn packed_of<'a>(id: u64) -> &'a [u8] {
    let node = std::ptr::with_exposed_provenance::<u8>(id as usize);
    // SAFETY: the allocation begins with LEN_BYTES of length, then that many bytes,
    // all initialised by `write` and never changed (a `[u8; N]` needs no alignment).
    unsafe {
        let len = u64::from_le_bytes(node.cast::<[u8; LEN_BYTES]>().read()) as usize;
        std::slice::from_raw_parts(node.add(LEN_BYTES), len)
    }
}

/// Frees node `id`.
///
/// # Safety
/// `id` was returned by [`MemoryNodes::write`], is not freed yet, and nobody reads it
/// again.
unsafe fn free(id: u64) {
    // SAFETY: by the contract, the node is live, so its length is readable, and the
    // allocation is the boxed slice `write` leaked: LEN_BYTES + len bytes at `id`.
    unsafe {
        let len = packed_of(id).len();
        let node = std::ptr::with_exposed_provenance_mut::<u8>(id as usize);
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            node,
            LEN_BYTES + len,
        )));
    }
}

/// [`free`], counted in `live` and `known`.
///
/// # Safety
/// As [`free`]'s.
unsafe fn free_counted(id: u64, live: &AtomicUsize, known: &LiveIds) {
    known.removed(id);
    // SAFETY: the caller's contract is `free`'s.
    unsafe { free(id) };
    live.fetch_sub(1, Ordering::Relaxed);
}

/// In test and debug builds, the ids of the nodes allocated and not freed, so that a
/// read or free of any other id (a table read unpinned, say) fails an assertion
/// instead of reading freed memory. Nothing in release builds.
#[derive(Clone, Default)]
struct LiveIds {
    #[cfg(any(test, debug_assertions))]
    ids: Arc<std::sync::Mutex<std::collections::HashSet<u64>>>,
}

impl LiveIds {
    #[cfg(any(test, debug_assertions))]
    fn set(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<u64>> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn added(&self, _id: u64) {
        #[cfg(any(test, debug_assertions))]
        assert!(self.set().insert(_id), "node {_id:#x} allocated twice");
    }

    fn check(&self, _id: u64) {
        #[cfg(any(test, debug_assertions))]
        assert!(self.set().contains(&_id), "node {_id:#x} is not allocated");
    }

    fn removed(&self, _id: u64) {
        #[cfg(any(test, debug_assertions))]
        assert!(self.set().remove(&_id), "node {_id:#x} freed twice");
    }
}

#[cfg(test)]
impl MemoryNodes {
    /// Makes any read of node `id` fail its check until [`MemoryNodes::unhide`]: for
    /// tests of what does not read a collection's nodes.
    pub fn hide(&self, id: u64) {
        self.ids.removed(id);
    }

    pub fn unhide(&self, id: u64) {
        self.ids.added(id);
    }
}

impl MemoryNodes {
    /// Nodes allocated, including those waiting for readers to unpin.
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// After `new` (or a delete) replaced `old` in the key's entry: the nodes only
    /// `old` named are freed once the threads pinned now have unpinned.
    pub fn retire(&self, old: &[u8], new: Option<&[u8]>) {
        self.retire_known(old, new, None);
    }

    /// [`MemoryNodes::retire`], given the nodes only `old` named if the editor that
    /// made `new` knows them (`released`), instead of finding them in both tables.
    pub fn retire_known(&self, old: &[u8], new: Option<&[u8]>, released: Option<Vec<u64>>) {
        // Only a node table names nodes: a plain value's replacement (every string
        // write) releases none, known without matching the two values' shapes.
        if !Entry::stored_is_node_table(old) {
            debug_assert!(released.is_none_or(|known| known.is_empty()));
            return;
        }
        let found = || dropped(self, old, new);
        let dropped = match released {
            Some(known) => {
                assert_released(&known, found);
                known
            }
            None => found().expect("memory nodes are read without I/O"),
        };
        if dropped.is_empty() {
            return;
        }
        // SAFETY: `dropped` are nodes of the table this write replaced, and nothing
        // frees them but the deferral below, not made yet: each is allocated here.
        // An edit's released nodes are counted; a deleted collection's are not read.
        let bytes = new.is_some().then(|| {
            dropped
                .iter()
                .map(|&id| LEN_BYTES + unsafe { packed_of(id) }.len())
                .sum()
        });
        let guard = crossbeam_epoch::pin();
        self.free_after(&guard, dropped);
        if let Some(bytes) = bytes {
            // An edit's few KB wait in the thread's bag as the index's replaced items
            // do: handing the bag over after each edit was 4% of an HSET's time.
            hotring::count_retired(bytes, &guard);
        } else {
            self.freed_later.fetch_add(1, Ordering::Relaxed);
            // Hands this thread's deferred work to the global queue now, so an idle
            // thread does not hold a deleted collection's nodes until it is busy again.
            guard.flush();
        }
    }

    /// The memory store's nodes as a thread pinned with `guard` reads them.
    pub fn pinned<'g>(&'g self, guard: &'g Guard) -> PinnedNodes<'g> {
        PinnedNodes { nodes: self, guard }
    }

    /// Frees nodes `ids` once every thread pinned now, `guard`'s included, has
    /// unpinned. No table published from now on may name them, and each may be in
    /// no other call.
    fn free_after(&self, guard: &Guard, ids: Vec<u64>) {
        if ids.is_empty() {
            return;
        }
        let live = Arc::clone(&self.live);
        let known = self.ids.clone();
        // A deferred function must not pin (one that runs where its thread's epoch
        // handle is gone pins through a fresh handle, which runs the next due function
        // one stack level deeper); freeing memory does not.
        guard.defer(move || {
            for id in ids {
                // SAFETY: no table published from now on names `id` (the caller
                // replaced the last that did, or the edit that wrote it published none),
                // and every thread that read such a table, or borrowed a read of the
                // node, was pinned before this deferral and is done with it when it
                // unpins (the top of this file); the collector runs this only after all
                // of them have unpinned. Each id is freed by one call: a node retired
                // is named by no later table, so no later retirement names it.
                unsafe { free_counted(id, &live, &known) };
            }
        });
    }

    /// Frees at once the nodes that `stored`, a value of a store being dropped, names.
    ///
    /// # Safety
    /// No thread reads `stored` or any copy of it again, and no retirement pending or
    /// to come names its nodes: it is what its key holds as the store is dropped.
    pub unsafe fn free_with_store(&self, stored: &[u8]) {
        for id in node_ids(self, stored).expect("memory nodes are read without I/O") {
            // SAFETY: by the contract, nobody reads the node again, and it is freed
            // here once: a table names each of its nodes once.
            unsafe { free_counted(id, &self.live, &self.ids) };
        }
    }

    /// Deleted collections whose nodes were freed after the delete (since the start
    /// or `reset_freed_later`).
    pub fn freed_later(&self) -> u64 {
        self.freed_later.load(Ordering::Relaxed)
    }

    pub fn reset_freed_later(&self) {
        self.freed_later.store(0, Ordering::Relaxed);
    }
}

/// The nodes an [`Attempt`] makes room for at its first.
const MADE_AT_FIRST: usize = 16;

/// The memory store as one compare-and-set attempt at a write sees it: remembers the
/// nodes the attempt wrote and did not discard, so that an attempt that loses the race
/// removes exactly those (nobody else has seen them) without comparing its table with
/// the one it read to find them.
pub struct Attempt<'a> {
    nodes: PinnedNodes<'a>,
    made: RefCell<Vec<u64>>,
}

impl<'a> Attempt<'a> {
    pub fn new(nodes: PinnedNodes<'a>) -> Self {
        Attempt {
            nodes,
            made: RefCell::default(),
        }
    }

    /// Checks, in debug and test builds, that the nodes this attempt made are those
    /// `new` names and `old` (the value it read, if any) does not: a node made and
    /// not named would never be removed.
    pub fn assert_made(&self, new: &[u8], old: Option<&[u8]>) {
        if cfg!(any(test, debug_assertions)) {
            let mut made = self.made.borrow().clone();
            let mut named = match old {
                Some(old) => dropped(&self.nodes, new, Some(old)),
                None => node_ids(&self.nodes, new),
            }
            .expect("memory nodes are read without I/O");
            made.sort_unstable();
            named.sort_unstable();
            assert_eq!(
                made, named,
                "an attempt's new table names the nodes it made"
            );
        }
    }

    /// After the attempt's write was not published: removes the nodes it made.
    pub fn abandon(self) {
        let PinnedNodes { nodes, guard } = self.nodes;
        nodes.free_after(guard, self.made.into_inner());
    }
}

impl NodeStore for Attempt<'_> {
    fn write(&self, packed: &[u8]) -> u64 {
        let id = self.nodes.write(packed);
        let mut made = self.made.borrow_mut();
        if made.capacity() == 0 {
            // Sized once, at the first node: an edit of a large collection makes
            // several (a ZADD into a sorted set of a million members, ~8), and grown
            // from empty the list was allocated three times (780 instructions a ZADD).
            made.reserve_exact(MADE_AT_FIRST);
        }
        made.push(id);
        id
    }

    fn read(&self, id: u64) -> Result<Cow<'_, [u8]>> {
        self.nodes.read(id)
    }

    fn discard(&self, id: u64) {
        let mut made = self.made.borrow_mut();
        let at = made.iter().rposition(|&m| m == id);
        made.swap_remove(at.expect("an edit discards only nodes it wrote"));
        self.nodes.discard(id);
    }
}

/// Waits for the deferred removals of retired nodes to run, until `nodes()` counts
/// `live`; whether it did. Other test threads' pins hold them back: several editor
/// tests stay pinned from start to end, and in a debug build one of them ran past
/// the 20 s this waited before, failing `split_hashes_and_sets_behave_as_maps` when
/// run beside it (`cargo test -p server --bin hotkv-server -- field_nodes list_nodes
/// stream`). A wait only a failure pays for in full.
#[cfg(test)]
pub fn settled(nodes: impl Fn() -> usize, live: usize) -> bool {
    use std::time::{Duration, Instant};
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(180) {
        if nodes() == live {
            return true;
        }
        crossbeam_epoch::pin().flush();
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Redis's default limit of a collection's small encoding, by count only, for tests of
/// editors.
#[cfg(test)]
pub fn large_by_count(packed: &[u8]) -> bool {
    crate::packed::count(packed) > 128
}

/// In a test of an editor: publishes `new` in place of `stored` as the memory store
/// would (`None` from the editor: nothing to store), checking first that what it
/// releases (`known`, if the editor says what it released) is every node only the old
/// value named.
#[cfg(test)]
pub fn publish(
    nodes: &MemoryNodes,
    stored: &mut Option<Vec<u8>>,
    new: Outcome,
    known: Option<Vec<u64>>,
) {
    let Some(new) = new else {
        return;
    };
    if let Some(old) = stored.as_deref() {
        let kept = match new.as_deref() {
            Some(new) => node_ids(nodes, new).unwrap(),
            None => Vec::new(),
        };
        let mut naive: Vec<u64> = node_ids(nodes, old)
            .unwrap()
            .into_iter()
            .filter(|id| !kept.contains(id))
            .collect();
        let mut released = dropped(nodes, old, new.as_deref()).unwrap();
        naive.sort_unstable();
        released.sort_unstable();
        assert_eq!(
            released, naive,
            "a write releases the nodes only the old value named"
        );
        if let Some(mut known) = known.clone() {
            known.sort_unstable();
            assert_eq!(known, naive, "the editor knows what its write released");
        }
        nodes.retire_known(old, new.as_deref(), known);
    } else {
        assert!(
            known.as_ref().is_none_or(Vec::is_empty),
            "a new value releases nothing"
        );
    }
    *stored = new;
}

/// At the end of a test of an editor: the store holds the nodes `stored` names and no
/// others, and none once it is deleted.
#[cfg(test)]
pub fn check_released(nodes: &MemoryNodes, stored: Option<&[u8]>) {
    let named = stored.map_or(0, |s| node_ids(nodes, s).unwrap().len());
    assert!(
        settled(|| nodes.len(), named),
        "{} nodes for {named}",
        nodes.len()
    );
    if let Some(old) = stored {
        nodes.retire(old, None);
    }
    assert!(settled(|| nodes.len(), 0), "{} nodes left", nodes.len());
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{common_records, settled, MemoryNodes, NodeStore};
    use crate::db::Db;
    use crate::entry::{Entry, Kind};
    use crate::list_nodes::End;

    /// Nodes of every size read back as written, each its own allocation; a discarded
    /// node is freed at once, a retired one once the threads pinned at its retirement
    /// have unpinned, and not before.
    #[test]
    fn nodes_read_back_and_are_freed_after_readers_unpin() {
        let nodes = MemoryNodes::default();
        let packed: Vec<Vec<u8>> = [0usize, 1, 7, 8, 9, 4095, 4096, 70_000]
            .iter()
            .map(|&n| (0..n).map(|i| (i * 31 % 251) as u8).collect())
            .collect();
        let ids: Vec<u64> = packed.iter().map(|p| nodes.write(p)).collect();
        assert_eq!(nodes.len(), packed.len());
        for (id, p) in ids.iter().zip(&packed) {
            assert_eq!(&nodes.read(*id).unwrap(), p);
        }
        nodes.discard(ids[0]);
        assert_eq!(nodes.len(), packed.len() - 1);
        // A list table naming the rest, as its key's value, then deleted.
        let mut table = (ids.len() as u32 - 1).to_le_bytes().to_vec();
        for (id, p) in ids.iter().zip(&packed).skip(1) {
            table.extend_from_slice(&id.to_le_bytes());
            table.extend_from_slice(&1u32.to_le_bytes());
            table.extend_from_slice(&(p.len() as u32).to_le_bytes());
        }
        let stored = Entry::encode_node_table(Kind::List, table, None, false);
        let reader = crossbeam_epoch::pin();
        nodes.retire(&stored, None);
        for _ in 0..64 {
            crossbeam_epoch::pin().flush();
        }
        assert_eq!(nodes.len(), packed.len() - 1, "freed under a pinned reader");
        for (id, p) in ids.iter().zip(&packed).skip(1) {
            assert_eq!(&nodes.read(*id).unwrap(), p);
        }
        drop(reader);
        assert!(settled(|| nodes.len(), 0), "{} nodes left", nodes.len());
        assert_eq!(nodes.freed_later(), 1);
    }

    /// A read of a node that is not allocated fails its check in test builds rather
    /// than reading freed memory.
    #[test]
    #[should_panic(expected = "is not allocated")]
    fn a_read_of_a_freed_node_is_caught() {
        let nodes = MemoryNodes::default();
        let id = nodes.write(b"packed");
        nodes.discard(id);
        let _ = nodes.read(id);
    }

    proptest! {
        /// Counted in blocks, the equal records at both ends are those a record-by-record
        /// comparison finds, and never overlap.
        #[test]
        fn common_records_are_those_equal_one_by_one(
            size in 1usize..30,
            shared in prop::collection::vec(any::<u8>(), 0..400),
            a_middle in prop::collection::vec(any::<u8>(), 0..200),
            b_middle in prop::collection::vec(any::<u8>(), 0..200),
            split in any::<prop::sample::Index>(),
        ) {
            let whole = |v: &[u8]| v[..v.len() / size * size].to_vec();
            let (shared, a_middle, b_middle) = (whole(&shared), whole(&a_middle), whole(&b_middle));
            let at = split.index(shared.len() / size + 1) * size;
            let a = [&shared[..at], &a_middle, &shared[at..]].concat();
            let b = [&shared[..at], &b_middle, &shared[at..]].concat();
            let (ra, rb): (Vec<&[u8]>, Vec<&[u8]>) = (a.chunks(size).collect(), b.chunks(size).collect());
            let front = ra.iter().zip(&rb).take_while(|(x, y)| x == y).count();
            let back = ra[front..].iter().rev().zip(rb[front..].iter().rev()).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_records(&a, &b, size), (front, back));
        }
    }

    /// Removals that fall due where a thread's epoch handle is gone: a thread's last
    /// thread-local destructors (here one that pins, as the handle's own teardown does
    /// one exit in 128) pin through a fresh handle, whose first pin runs due deferred
    /// functions. A removal that pinned again there registered another fresh handle,
    /// which ran the next due removal, one stack level deeper per retired table, until
    /// the stack overflowed (SIGSEGV, seen in CI). Every node is released and the
    /// process lives.
    #[test]
    fn removals_due_at_a_threads_exit_release_every_node() {
        struct PinOnExit;
        impl Drop for PinOnExit {
            fn drop(&mut self) {
                drop(crossbeam_epoch::pin());
            }
        }
        thread_local! {
            static PIN_ON_EXIT: PinOnExit = const { PinOnExit };
        }
        const TABLES: usize = 3000;
        let db = Db::default();
        let element = [b'e'; 300];
        let (unpin_tx, unpin_rx) = std::sync::mpsc::channel::<()>();
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let guard = crossbeam_epoch::pin();
            pinned_tx.send(()).unwrap();
            unpin_rx.recv().unwrap();
            drop(guard);
        });
        pinned_rx.recv().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                // Registered before the epoch handle, so destroyed after it.
                PIN_ON_EXIT.with(|_| ());
                for _ in 0..TABLES {
                    let elements = std::iter::repeat_n(&element[..], 30);
                    db.edit_list(b"list", |l| l.push(End::Right, elements.clone()))
                        .unwrap()
                        .expect("a list");
                    assert!(db.remove(b"list").unwrap());
                }
                // The held pin kept every removal waiting; now they fall due together.
                unpin_tx.send(()).unwrap();
                holder.join().unwrap();
                for _ in 0..4 {
                    crossbeam_epoch::pin().flush();
                }
            });
        });
        let nodes = || db.collection_nodes().expect("the memory store");
        assert!(settled(nodes, 0), "{} nodes left", nodes());
    }
}
