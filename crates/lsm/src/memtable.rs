//! The memtable: recent writes, each user key held once, with its versions chained
//! newest first. The keys sit in a skiplist, for ordered reads, and in a hash index,
//! for point reads and for writes to a key the memtable already holds: a skiplist
//! search is a dozen cache misses, and a SET paid for two (reading the old value, then
//! inserting). A hot key overwritten many times costs one search in all. Read in order,
//! a memtable yields internal keys (`internal_key.rs`) in their order: keys ascending,
//! each key's versions newest first.
//!
//! The skiplist is LevelDB's: one writer at a time ([`MemTable::writer`]), readers
//! beside it without locks, a quarter of the nodes reaching each level above the last.
//! A key's node (its index fields, its tower of skiplist links and its bytes) is one
//! allocation from the memtable's arena (`arena.rs`), and so is each version with its
//! value. Once published (by a Release store of the pointer that links it in) nothing
//! changes but the links to nodes added later and a key's pointer to its newest
//! version; nothing is freed before the memtable drops, so a reference into it is good
//! for as long as the memtable is borrowed.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as MemoryOrdering};
use std::sync::{Mutex, MutexGuard};

use engine::{KIND_DELETE, KIND_PUT};

use crate::arena::Arena;
use crate::bloom;
use crate::internal_key::{trailer, KeyRef};
use crate::memtable_filter::MemTableFilter;

/// What the memtable knows about a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

/// The most levels a node reaches: searches stay short up to 4^12 (16M) keys.
const MAX_HEIGHT: usize = 12;
/// One bucket per this many bytes of capacity: a key with its version takes at least
/// 64, and 200 with a 100-byte value.
const CAPACITY_BYTES_PER_BUCKET: usize = 128;

pub struct MemTable {
    /// The oldest log holding this memtable's writes: once it is flushed, logs below
    /// the next memtable's are no longer needed.
    pub wal_number: u64,
    /// The skiplist's head: a node with no key and no versions, MAX_HEIGHT links high.
    head: NonNull<KeyNode>,
    /// Levels in use. A reader may see it late, which only makes it start lower; the
    /// head's links above it are null until a node is linked there.
    height: AtomicUsize,
    /// Hash-indexed chains of the skiplist's nodes. A fixed count, sized by capacity
    /// so that a full memtable has about one key per bucket.
    buckets: Box<[AtomicPtr<KeyNode>]>,
    /// Which user keys the memtable may hold: most point reads miss every memtable,
    /// and this answers them with one cache line.
    filter: MemTableFilter,
    writer: Mutex<WriterState>,
    /// Bytes of nodes, versions and buckets: what flushing frees.
    bytes: AtomicUsize,
    /// Versions inserted.
    entries: AtomicU64,
}

// SAFETY: the memtable owns its nodes and versions (in the arena inside `writer`,
// freed when it drops). Shared, they change only through atomics (links, buckets, a
// key's newest version), and everything else about a node or version is written by
// the one writer (holding `writer`) before a Release store publishes it; readers reach
// it only through Acquire loads of those pointers.
unsafe impl Send for MemTable {}
// SAFETY: as for Send.
unsafe impl Sync for MemTable {}

/// What only the writer touches.
struct WriterState {
    arena: Arena,
    /// xorshift64 state for nodes' heights.
    random: u64,
}

/// One user key and its versions; its allocation goes on with its tower (`height`
/// links, level 0 first) and then its `key_len` bytes.
#[repr(C)]
struct KeyNode {
    hash: u64,
    /// Never null (but in the head): a node is created with its first version.
    newest: AtomicPtr<Version>,
    /// The next node in this one's bucket; set before this node is published.
    next_in_bucket: AtomicPtr<KeyNode>,
    key_len: usize,
    height: usize,
}

/// One version of a key; its allocation goes on with its `value_len` bytes.
#[repr(C)]
struct Version {
    /// `sequence << 8 | kind`, as in the internal key.
    trailer: u64,
    /// The next older version of the key, or null; set before this one is published.
    older: *const Version,
    value_len: usize,
}

/// A published node of a memtable borrowed for 'a. The pointer keeps the provenance of
/// the node's whole allocation (a `&KeyNode` would cover the header alone), so the
/// tower and key after the header are reached through it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node<'a> {
    ptr: NonNull<KeyNode>,
    _memtable: PhantomData<&'a MemTable>,
}

/// A published version of a memtable borrowed for 'a.
#[derive(Clone, Copy)]
struct VersionRef<'a> {
    ptr: NonNull<Version>,
    _memtable: PhantomData<&'a MemTable>,
}

/// `len` slots of `T::default()` (all zero), and `zero` written to a slot in each
/// 4 KB page of them. A large zeroed allocation comes as pages no one has touched; a
/// page first read (a lookup finding its bucket empty) maps the kernel's shared zero
/// page, and the write that follows maps a page of its own in its place and flushes
/// the old mapping from every core's TLB, an interrupt to each. Written first, a page
/// faults once, here.
/// On ZADDs into a large sorted set, which fill a memtable every ~8,000 writes, those
/// faults took 8% of the server's CPU (BENCHMARKS.md, session 69).
pub(crate) fn zeroed_and_written<T: Default>(len: usize, zero: impl Fn(&T)) -> Box<[T]> {
    let slots: Box<[T]> = (0..len).map(|_| T::default()).collect();
    for slot in slots.iter().step_by((4096 / size_of::<T>()).max(1)) {
        zero(slot);
    }
    slots
}

impl MemTable {
    /// A memtable that will be frozen at about `capacity_bytes` (which sizes its
    /// filter and index).
    pub fn new(wal_number: u64, capacity_bytes: usize) -> MemTable {
        let buckets = (capacity_bytes / CAPACITY_BYTES_PER_BUCKET)
            .next_power_of_two()
            .max(64);
        let mut writer = WriterState {
            arena: Arena::new(),
            random: 0x9e37_79b9_7f4a_7c15,
        };
        let head = writer.new_node(0, &[], std::ptr::null_mut(), MAX_HEIGHT, |_| {
            std::ptr::null_mut()
        });
        MemTable {
            wal_number,
            head,
            height: AtomicUsize::new(1),
            buckets: zeroed_and_written(buckets, |b: &AtomicPtr<KeyNode>| {
                b.store(std::ptr::null_mut(), MemoryOrdering::Relaxed)
            }),
            filter: MemTableFilter::new(capacity_bytes),
            bytes: AtomicUsize::new(
                writer.arena.used() + buckets * size_of::<AtomicPtr<KeyNode>>(),
            ),
            writer: Mutex::new(writer),
            entries: AtomicU64::new(0),
        }
    }

    /// The one writer, until the returned guard drops.
    pub fn writer(&self) -> MemTableWriter<'_> {
        MemTableWriter {
            memtable: self,
            state: self.writer.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// The newest version of `user_key` (whose `bloom::hash` is `hash`) with a
    /// sequence number up to `sequence`.
    pub fn get(&self, user_key: &[u8], hash: u64, sequence: u64) -> Option<Lookup> {
        if !self.filter.may_contain(hash) {
            return None;
        }
        let version = self
            .find(user_key, hash)?
            .newest_at_most(trailer(sequence, KIND_PUT))?;
        Some(match version.trailer() as u8 {
            KIND_PUT => Lookup::Value(version.value().to_vec()),
            _ => Lookup::Deleted,
        })
    }

    /// The first version at or after an internal key.
    pub fn seek(&self, target: &KeyRef) -> Option<MemPosition<'_>> {
        let mut node = self.search(target.user_key(), |_, _| ());
        let found = node?;
        if found.key() == target.user_key() {
            if let Some(version) = found.newest_at_most(target.trailer()) {
                return Some(MemPosition {
                    node: found,
                    version,
                });
            }
            node = found.next(0);
        }
        node.map(MemPosition::newest_of)
    }

    pub fn first(&self) -> Option<MemPosition<'_>> {
        self.head().next(0).map(MemPosition::newest_of)
    }

    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(MemoryOrdering::Relaxed)
    }

    pub fn entries(&self) -> u64 {
        self.entries.load(MemoryOrdering::Relaxed)
    }

    fn head(&self) -> Node<'_> {
        Node {
            ptr: self.head,
            _memtable: PhantomData,
        }
    }

    /// The first node whose key is at least `key`, if any. `before(level, node)` is
    /// told, for each level from the top down, the last node before that one there
    /// (the head if none).
    fn search<'a>(
        &'a self,
        key: &[u8],
        mut before: impl FnMut(usize, Node<'a>),
    ) -> Option<Node<'a>> {
        let mut at = self.head();
        let mut level = self.height.load(MemoryOrdering::Relaxed) - 1;
        // A node already found not to be before `key`: met again one level down, it
        // needs no second comparison (LevelDB's trick; the upper levels mostly end on
        // the same node).
        let mut not_before: Option<Node<'a>> = None;
        loop {
            let next = at.next(level);
            match next {
                Some(n) if next != not_before && n.key() < key => at = n,
                _ => {
                    not_before = next;
                    before(level, at);
                    if level == 0 {
                        return next;
                    }
                    level -= 1;
                }
            }
        }
    }

    fn bucket(&self, hash: u64) -> &AtomicPtr<KeyNode> {
        // The filter picks its word with the hash's low bits; the high ones spread
        // the keys of one word over buckets.
        &self.buckets[(hash.rotate_left(24) as usize) & (self.buckets.len() - 1)]
    }

    fn find(&self, user_key: &[u8], hash: u64) -> Option<Node<'_>> {
        let mut at = self.published(self.bucket(hash));
        while let Some(node) = at {
            let header = node.header();
            if header.hash == hash && node.key() == user_key {
                return Some(node);
            }
            at = self.published(&header.next_in_bucket);
        }
        None
    }

    /// The node a link of this memtable's points to, if any.
    fn published<'a>(&'a self, link: &AtomicPtr<KeyNode>) -> Option<Node<'a>> {
        NonNull::new(link.load(MemoryOrdering::Acquire)).map(|ptr| Node {
            ptr,
            _memtable: PhantomData,
        })
    }
}

impl<'a> Node<'a> {
    fn header(self) -> &'a KeyNode {
        // SAFETY: the node is complete (it was written before the Release store that
        // published it, which the Acquire load that found it pairs with) and lives
        // until the memtable drops, which its borrow for 'a rules out. The header's
        // non-atomic fields never change once published.
        unsafe { self.ptr.as_ref() }
    }

    /// The node's tower, `height` links.
    fn tower(self) -> *const AtomicPtr<KeyNode> {
        // SAFETY: the tower follows the header in the node's allocation (KeyNode's
        // size is a multiple of the links' alignment), within its bounds.
        unsafe { self.ptr.as_ptr().add(1).cast::<AtomicPtr<KeyNode>>() }
    }

    fn link(self, level: usize) -> &'a AtomicPtr<KeyNode> {
        assert!(level < self.header().height);
        // SAFETY: `level` is below the node's height, so the link is within its tower,
        // initialised before the node was published, and lives as the node does.
        unsafe { &*self.tower().add(level) }
    }

    /// The next node at `level`.
    fn next(self, level: usize) -> Option<Node<'a>> {
        NonNull::new(self.link(level).load(MemoryOrdering::Acquire)).map(|ptr| Node {
            ptr,
            _memtable: PhantomData,
        })
    }

    fn key(self) -> &'a [u8] {
        let header = self.header();
        // SAFETY: the key's bytes follow the tower in the node's allocation, were
        // copied there before the node was published, and never change.
        unsafe {
            std::slice::from_raw_parts(self.tower().add(header.height).cast::<u8>(), header.key_len)
        }
    }

    fn newest(self) -> VersionRef<'a> {
        let newest = self.header().newest.load(MemoryOrdering::Acquire);
        VersionRef {
            // A published node other than the head always has a version.
            ptr: NonNull::new(newest).expect("a memtable key without versions"),
            _memtable: PhantomData,
        }
    }

    /// The newest version whose trailer is at most `max_trailer`.
    fn newest_at_most(self, max_trailer: u64) -> Option<VersionRef<'a>> {
        let mut version = self.newest();
        while version.trailer() > max_trailer {
            version = version.older()?;
        }
        Some(version)
    }
}

impl<'a> VersionRef<'a> {
    fn header(self) -> &'a Version {
        // SAFETY: as for `Node::header`: complete before the Release store of the
        // pointer it was found by (a node's `newest`, or the `older` of a version found
        // so), unchanged since, and freed only with the memtable.
        unsafe { self.ptr.as_ref() }
    }

    fn trailer(self) -> u64 {
        self.header().trailer
    }

    fn older(self) -> Option<VersionRef<'a>> {
        NonNull::new(self.header().older.cast_mut()).map(|ptr| VersionRef {
            ptr,
            _memtable: PhantomData,
        })
    }

    fn value(self) -> &'a [u8] {
        // SAFETY: the value's bytes follow the header in the version's allocation,
        // written before it was published and never changed.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().add(1).cast::<u8>(),
                self.header().value_len,
            )
        }
    }
}

impl WriterState {
    /// A node for `key` whose first version is `newest`, with the links `next(level)`
    /// gives it; not yet published.
    fn new_node(
        &mut self,
        hash: u64,
        key: &[u8],
        newest: *mut Version,
        height: usize,
        next: impl Fn(usize) -> *mut KeyNode,
    ) -> NonNull<KeyNode> {
        let links = height * size_of::<AtomicPtr<KeyNode>>();
        let node = self
            .arena
            .allocate(size_of::<KeyNode>() + links + key.len())
            .cast::<KeyNode>();
        // SAFETY: the allocation is ours alone, aligned for KeyNode (the arena's
        // alignment covers u64s and pointers) and large enough for the header, the
        // tower and the key, which are written one after another.
        unsafe {
            node.as_ptr().write(KeyNode {
                hash,
                newest: AtomicPtr::new(newest),
                next_in_bucket: AtomicPtr::new(std::ptr::null_mut()),
                key_len: key.len(),
                height,
            });
            let tower = node.as_ptr().add(1).cast::<AtomicPtr<KeyNode>>();
            for level in 0..height {
                tower.add(level).write(AtomicPtr::new(next(level)));
            }
            let bytes = tower.add(height).cast::<u8>();
            std::ptr::copy_nonoverlapping(key.as_ptr(), bytes, key.len());
        }
        node
    }

    /// A version of `trailer` with `value`, older than nothing yet; not published.
    fn new_version(&mut self, trailer: u64, value: &[u8]) -> NonNull<Version> {
        let version = self
            .arena
            .allocate(size_of::<Version>() + value.len())
            .cast::<Version>();
        // SAFETY: as in `new_node`: ours alone, aligned, large enough for both.
        unsafe {
            version.as_ptr().write(Version {
                trailer,
                older: std::ptr::null(),
                value_len: value.len(),
            });
            let bytes = version.as_ptr().add(1).cast::<u8>();
            std::ptr::copy_nonoverlapping(value.as_ptr(), bytes, value.len());
        }
        version
    }

    /// A new node's height: 1, and one more with probability 1/4 each, up to
    /// MAX_HEIGHT (two random bits per level).
    fn random_height(&mut self) -> usize {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.random = x;
        (1 + x.trailing_zeros() as usize / 2).min(MAX_HEIGHT)
    }
}

/// The memtable's one writer (see [`MemTable::writer`]).
pub struct MemTableWriter<'a> {
    memtable: &'a MemTable,
    state: MutexGuard<'a, WriterState>,
}

impl MemTableWriter<'_> {
    /// Adds a version of `user_key`. Its sequence must be above every sequence the
    /// key already has here (the commit order guarantees it).
    pub fn insert(&mut self, user_key: &[u8], sequence: u64, kind: u8, value: &[u8]) {
        debug_assert!(kind == KIND_PUT || kind == KIND_DELETE);
        let memtable = self.memtable;
        let hash = bloom::hash(user_key);
        let version = self.state.new_version(trailer(sequence, kind), value);
        match memtable.find(user_key, hash) {
            Some(node) => {
                let newest = node.newest();
                assert!(
                    newest.trailer() >> 8 < sequence,
                    "memtable versions of a key arrive in sequence order"
                );
                // SAFETY: `version` is not yet published: ours alone.
                unsafe { (*version.as_ptr()).older = newest.ptr.as_ptr() };
                node.header()
                    .newest
                    .store(version.as_ptr(), MemoryOrdering::Release);
            }
            None => self.link_new_key(user_key, hash, version),
        }
        memtable.bytes.store(
            self.state.arena.used() + memtable.buckets.len() * size_of::<AtomicPtr<KeyNode>>(),
            MemoryOrdering::Relaxed,
        );
        memtable.entries.fetch_add(1, MemoryOrdering::Relaxed);
    }

    /// Links a node for `user_key`, which the memtable does not hold, into the
    /// skiplist and the index.
    fn link_new_key(&mut self, user_key: &[u8], hash: u64, version: NonNull<Version>) {
        let memtable = self.memtable;
        let mut before = [memtable.head(); MAX_HEIGHT];
        let at = memtable.search(user_key, |level, node| before[level] = node);
        assert!(
            at.is_none_or(|n| n.key() != user_key),
            "a key missing from the memtable's index was in its skiplist"
        );
        let height = self.state.random_height();
        // Readers that see the new height early find null head links up there and
        // step down; `before` already holds the head for those levels.
        memtable.height.fetch_max(height, MemoryOrdering::Relaxed);
        let node = self
            .state
            .new_node(hash, user_key, version.as_ptr(), height, |level| {
                before[level].link(level).load(MemoryOrdering::Relaxed)
            });
        let bucket = memtable.bucket(hash);
        // SAFETY: the node is not yet published: ours alone.
        unsafe {
            (*node.as_ptr()).next_in_bucket.store(
                bucket.load(MemoryOrdering::Relaxed),
                MemoryOrdering::Relaxed,
            );
        }
        // The filter first: a reader that finds the key by any path must not be
        // turned away by the filter.
        memtable.filter.insert(hash);
        for (level, node_before) in before.iter().enumerate().take(height) {
            node_before
                .link(level)
                .store(node.as_ptr(), MemoryOrdering::Release);
        }
        bucket.store(node.as_ptr(), MemoryOrdering::Release);
    }
}

/// A place in a memtable's order: one version of one key.
#[derive(Clone, Copy)]
pub struct MemPosition<'a> {
    node: Node<'a>,
    version: VersionRef<'a>,
}

impl<'a> MemPosition<'a> {
    fn newest_of(node: Node<'a>) -> MemPosition<'a> {
        MemPosition {
            version: node.newest(),
            node,
        }
    }

    pub fn user_key(&self) -> &'a [u8] {
        self.node.key()
    }

    pub fn trailer(&self) -> u64 {
        self.version.trailer()
    }

    pub fn value(&self) -> &'a [u8] {
        self.version.value()
    }

    /// The next version in order: this key's next older one, else the next key's
    /// newest.
    pub fn next(self) -> Option<MemPosition<'a>> {
        match self.version.older() {
            Some(version) => Some(MemPosition {
                node: self.node,
                version,
            }),
            None => self.node.next(0).map(MemPosition::newest_of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_key::with_lookup_key;
    use proptest::prelude::*;

    fn get(m: &MemTable, key: &[u8], sequence: u64) -> Option<Lookup> {
        m.get(key, bloom::hash(key), sequence)
    }

    /// Every version in order, as (user key, sequence, kind, value).
    fn all(m: &MemTable) -> Vec<(Vec<u8>, u64, u8, Vec<u8>)> {
        let mut versions = Vec::new();
        let mut at = m.first();
        while let Some(p) = at {
            versions.push((
                p.user_key().to_vec(),
                p.trailer() >> 8,
                p.trailer() as u8,
                p.value().to_vec(),
            ));
            at = p.next();
        }
        versions
    }

    /// A memtable holding `writes`, as (user key, sequence, kind, value).
    fn filled(writes: &[(&[u8], u64, u8, &[u8])]) -> MemTable {
        let m = MemTable::new(1, 1 << 16);
        let mut w = m.writer();
        for &(key, sequence, kind, value) in writes {
            w.insert(key, sequence, kind, value);
        }
        drop(w);
        m
    }

    #[test]
    fn zeroed_and_written_writes_once_a_page() {
        let written = std::cell::Cell::new(0);
        let slots = zeroed_and_written(10_000, |s: &AtomicU64| {
            s.store(0, MemoryOrdering::Relaxed);
            written.set(written.get() + 1);
        });
        assert_eq!(slots.len(), 10_000);
        assert!(slots.iter().all(|s| s.load(MemoryOrdering::Relaxed) == 0));
        // 80,000 bytes: 20 pages, the last partly.
        assert_eq!(written.get(), 20);
    }

    #[test]
    fn newest_visible_version_wins() {
        let m = filled(&[
            (b"k", 1, KIND_PUT, b"one"),
            (b"k", 2, KIND_DELETE, b""),
            (b"k", 3, KIND_PUT, b"three"),
            (b"ka", 4, KIND_PUT, b"other"),
        ]);
        assert_eq!(get(&m, b"k", 0), None);
        assert_eq!(get(&m, b"k", 1), Some(Lookup::Value(b"one".to_vec())));
        assert_eq!(get(&m, b"k", 2), Some(Lookup::Deleted));
        assert_eq!(get(&m, b"k", 9), Some(Lookup::Value(b"three".to_vec())));
        assert_eq!(get(&m, b"", 9), None);
        assert_eq!(get(&m, b"kb", 9), None);
        // A long key: its bytes run past the cache line its node starts on.
        let long = vec![7u8; 300];
        m.writer().insert(&long, 5, KIND_PUT, b"long");
        assert_eq!(get(&m, &long, 5), Some(Lookup::Value(b"long".to_vec())));
        assert_eq!(get(&m, &long[..299], 5), None);
        assert_eq!(m.entries(), 5);
    }

    #[test]
    fn reads_in_internal_key_order() {
        let m = filled(&[
            (b"b", 1, KIND_PUT, b"b1"),
            (b"a", 2, KIND_PUT, b"a2"),
            (b"b", 3, KIND_DELETE, b""),
            (b"c", 4, KIND_PUT, b"c4"),
            (b"b", 5, KIND_PUT, b"b5"),
        ]);
        let want = vec![
            (b"a".to_vec(), 2, KIND_PUT, b"a2".to_vec()),
            (b"b".to_vec(), 5, KIND_PUT, b"b5".to_vec()),
            (b"b".to_vec(), 3, KIND_DELETE, b"".to_vec()),
            (b"b".to_vec(), 1, KIND_PUT, b"b1".to_vec()),
            (b"c".to_vec(), 4, KIND_PUT, b"c4".to_vec()),
        ];
        assert_eq!(all(&m), want);
        // A seek lands on the first version at or after the target in that order.
        let seek = |key: &[u8], sequence| {
            with_lookup_key(key, sequence, |target| {
                m.seek(target)
                    .map(|p| (p.user_key().to_vec(), p.trailer() >> 8))
            })
        };
        assert_eq!(seek(b"b", 9), Some((b"b".to_vec(), 5)));
        assert_eq!(seek(b"b", 4), Some((b"b".to_vec(), 3)));
        assert_eq!(seek(b"b", 1), Some((b"b".to_vec(), 1)));
        assert_eq!(seek(b"b", 0), Some((b"c".to_vec(), 4)), "past b's oldest");
        assert_eq!(seek(b"bb", 0), Some((b"c".to_vec(), 4)));
        assert_eq!(
            seek(b"c", 3),
            None,
            "c's only version is newer; nothing after"
        );
        assert_eq!(seek(b"", 0), Some((b"a".to_vec(), 2)));
    }

    /// Readers beside the writer see, at each sequence the writer has published, the
    /// value written at or below it, and whole chains; small enough for Miri.
    #[test]
    fn readers_beside_the_writer_see_what_was_published() {
        const KEYS: u64 = 8;
        const WRITES: u64 = if cfg!(miri) { 60 } else { 20_000 };
        let m = MemTable::new(1, 1 << 12);
        let published = AtomicU64::new(0);
        let value = |sequence: u64| sequence.to_le_bytes();
        let key = |sequence: u64| (sequence % KEYS).to_le_bytes();
        std::thread::scope(|s| {
            s.spawn(|| {
                for sequence in 1..=WRITES {
                    m.writer()
                        .insert(&key(sequence), sequence, KIND_PUT, &value(sequence));
                    published.store(sequence, MemoryOrdering::Release);
                }
            });
            for _ in 0..2 {
                s.spawn(|| loop {
                    let at = published.load(MemoryOrdering::Acquire);
                    for k in 0..KEYS.min(at) {
                        // Key k is written at the sequences k mod KEYS; 0 is none.
                        let newest = at - (at - k) % KEYS;
                        assert_eq!(
                            get(&m, &k.to_le_bytes(), at),
                            (newest > 0).then(|| Lookup::Value(value(newest).to_vec())),
                            "key {k} at {at}"
                        );
                    }
                    let versions = all(&m);
                    assert!(versions.len() as u64 >= at);
                    assert!(versions
                        .windows(2)
                        .all(|w| (&w[0].0, u64::MAX - w[0].1) < (&w[1].0, u64::MAX - w[1].1)));
                    if at == WRITES {
                        break;
                    }
                });
            }
        });
        assert_eq!(m.entries(), WRITES);
    }

    /// New keys linked into the skiplist, in a seeded random order, while readers
    /// search it: each published key is found by a point read and by a seek, and an
    /// ordered read holds every published key, sorted.
    #[test]
    fn readers_beside_the_writer_find_every_published_key() {
        use rand::{seq::SliceRandom, SeedableRng};
        const KEYS: usize = if cfg!(miri) { 150 } else { 20_000 };
        let mut keys: Vec<Vec<u8>> = (0..KEYS)
            .map(|i| format!("key:{i:06}").into_bytes())
            .collect();
        keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(7));
        let m = MemTable::new(1, 1 << 12);
        let published = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for (i, key) in keys.iter().enumerate() {
                    m.writer().insert(key, i as u64 + 1, KIND_PUT, key);
                    published.store(i + 1, MemoryOrdering::Release);
                }
            });
            for reader in 0..2 {
                let (keys, m, published) = (&keys, &m, &published);
                s.spawn(move || loop {
                    let at = published.load(MemoryOrdering::Acquire);
                    // A few published keys, different ones each pass.
                    for key in keys[..at].iter().skip(reader).step_by(at / 8 + 1) {
                        let newest = KEYS as u64;
                        assert_eq!(get(m, key, newest), Some(Lookup::Value(key.clone())));
                        let found = with_lookup_key(key, newest, |target| {
                            m.seek(target).map(|p| p.user_key().to_vec())
                        });
                        assert_eq!(found.as_ref(), Some(key));
                    }
                    let ordered: Vec<Vec<u8>> = all(m).into_iter().map(|v| v.0).collect();
                    assert!(ordered.len() >= at);
                    assert!(ordered.windows(2).all(|w| w[0] < w[1]));
                    if at == KEYS {
                        assert_eq!(ordered.len(), KEYS);
                        break;
                    }
                });
            }
        });
    }

    /// One write of the model: (user key, sequence, kind, value).
    type Write = (Vec<u8>, u64, u8, Vec<u8>);

    fn writes() -> impl Strategy<Value = Vec<Write>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(0u8..4, 0..4),
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..8),
            ),
            0..200,
        )
        .prop_map(|raw| {
            raw.into_iter()
                .zip(1u64..)
                .map(|((key, put, value), sequence)| match put {
                    true => (key, sequence, KIND_PUT, value),
                    false => (key, sequence, KIND_DELETE, Vec::new()),
                })
                .collect()
        })
    }

    proptest! {
        /// Against a sorted list of every write: reading in order, seeks to any key
        /// and sequence, and point reads at any sequence.
        #[test]
        #[cfg_attr(miri, ignore = "proptest's failure files need the file system, which Miri isolates")]
        fn agrees_with_a_sorted_list(writes in writes(), probes in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..5), 0u64..210), 1..40)) {
            let m = MemTable::new(1, 1 << 16);
            let mut w = m.writer();
            for (key, sequence, kind, value) in &writes {
                w.insert(key, *sequence, *kind, value);
            }
            drop(w);
            let mut model = writes.clone();
            model.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            prop_assert_eq!(all(&m), model.clone());
            for (key, sequence) in probes {
                let found = with_lookup_key(&key, sequence, |target| {
                    m.seek(target).map(|p| (p.user_key().to_vec(), p.trailer() >> 8))
                });
                let want = model
                    .iter()
                    .find(|w| w.0 > key || (w.0 == key && w.1 <= sequence))
                    .map(|w| (w.0.clone(), w.1));
                prop_assert_eq!(found, want);
                let newest = model.iter().find(|w| w.0 == key && w.1 <= sequence);
                let want = newest.map(|w| match w.2 {
                    KIND_PUT => Lookup::Value(w.3.clone()),
                    _ => Lookup::Deleted,
                });
                prop_assert_eq!(get(&m, &key, sequence), want);
            }
        }
    }

    #[test]
    #[should_panic(expected = "sequence order")]
    fn an_older_version_after_a_newer_one_is_refused() {
        let m = MemTable::new(1, 1 << 12);
        let mut w = m.writer();
        w.insert(b"k", 5, KIND_PUT, b"five");
        w.insert(b"k", 4, KIND_PUT, b"four");
    }
}
