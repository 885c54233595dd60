//! The index: lookups, inserts, updates and deletes over the ordered rings.
//!
//! Removal follows Harris and Michael: an item is first marked `OCCUPIED` (its `next`
//! is frozen, so nothing can be linked after it), then unlinked by whichever thread
//! gets there first. An RCU update marks the old version and links the new one in the
//! same CAS (`old.next = new | OCCUPIED`, `new.next = successor`), so the update is
//! atomic and any thread can finish it by unlinking the old version. This is seed 000's
//! Occupied-bit protocol with the unlink made helpable, which is what makes it
//! lock-free: no operation waits for another to finish a multi-step change.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::Ordering as StdOrdering;
use std::sync::Mutex;

use crossbeam_epoch::{self as epoch, Guard};

use crate::directory::{first_hash, Directory, SlotRef};
use crate::item::{ring_hash, ItemPtr, CLOCK_MASK, INLINE_VALUE_MAX};
use crate::link::{Head, Link};
use crate::stats::{Counters, Stats};
use crate::sync::{AtomicPtr, Ordering};

/// How a ring's head pointer follows the hot items (seed 000 section 3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotspotStrategy {
    /// Statistical sampling: after a cold R-th access, sample as many accesses as the
    /// ring has items and move the head to the item that minimises the expected items
    /// visited per access (`W_t`).
    Sampling,
    /// Random movement: after a cold R-th access, move the head to the item accessed.
    Random,
    /// The head never moves from the ring's rehash item. An ablation baseline only.
    FixedHead,
}

/// A version of a key's value, read in place under an epoch guard
/// ([`HotRing::read_version`]).
pub struct Version<'g> {
    item: ItemPtr,
    value: VersionValue<'g>,
}

enum VersionValue<'g> {
    /// Never changed in place: borrowed.
    Long(&'g [u8]),
    /// Written in place by updates of the same length: copied when read.
    Inline([u8; INLINE_VALUE_MAX], usize),
}

impl Version<'_> {
    pub fn value(&self) -> &[u8] {
        match &self.value {
            VersionValue::Long(v) => v,
            VersionValue::Inline(bytes, len) => &bytes[..*len],
        }
    }
}

/// Index settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub strategy: HotspotStrategy,
    /// The index starts with `2^initial_depth` rings.
    pub initial_depth: u32,
    /// Split a ring when it holds more than this many items. `None` keeps the number of
    /// rings fixed (benchmarks at a chosen keys-per-ring ratio use that).
    pub max_ring_len: Option<u32>,
    /// Split a ring of at least `max_ring_len / 2` items when sampling finds that even
    /// the best head costs more than this many items visited per access: several hot
    /// items share the ring, and only a split can serve them all from a head. Such a
    /// split never doubles the directory: a read load, a uniform one above all, finds
    /// that cost in every ring, and doubling for it took a 1M-key server from 178 to
    /// 217 MB as it read (Redis: 201 MB). Only inserts grow the directory.
    pub split_cost: Option<f64>,
    /// Split a ring that several directory slots share once one of its slots holds more
    /// than this many items; such a split never doubles the directory. A lookup whose
    /// head lies past its key restarts at the ring's rehash item and walks the items of
    /// every slot before its own: at 1M uniform keys, rings of ~10 items over ~4 slots
    /// made that 3.6 items per lookup, against 2.9 with this at 2, for a rehash item
    /// (32 bytes) per extra ring, +2.6% of memory (BENCHMARKS.md, session 14).
    pub shared_split_len: Option<u32>,
    /// R: every R-th access of a thread checks whether the hotspot moved. Seed 000 uses 5.
    /// Under sampling, a thread that follows a shift checks every access for a while.
    pub sample_period: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            strategy: HotspotStrategy::Sampling,
            initial_depth: 4,
            max_ring_len: Some(16),
            split_cost: Some(2.0),
            shared_split_len: Some(2),
            sample_period: 5,
        }
    }
}

impl Config {
    /// A fixed-size index for `keys` keys at `ratio` keys per ring, as in seed 000's
    /// evaluation, which varies the key/bucket ratio from 2 to 16.
    pub fn fixed(strategy: HotspotStrategy, keys: usize, ratio: usize) -> Config {
        let rings = (keys / ratio.max(1)).max(1).next_power_of_two();
        Config {
            strategy,
            initial_depth: rings.trailing_zeros(),
            max_ring_len: None,
            split_cost: None,
            shared_split_len: None,
            sample_period: 5,
        }
    }
}

/// A concurrent, hotspot-aware hash index from byte strings to byte strings.
pub struct HotRing {
    pub(crate) dir: AtomicPtr<Directory>,
    /// The first rehash item (hash 0): the start of the item list.
    pub(crate) root: ItemPtr,
    pub(crate) config: Config,
    /// Held by the one thread splitting a ring; operations never wait for it.
    pub(crate) split_lock: Mutex<()>,
    pub(crate) counters: Counters,
    pub(crate) splits: std::sync::atomic::AtomicU64,
    /// The access clock that reads and writes stamp on items (`set_clock`).
    clock: std::sync::atomic::AtomicU32,
}

/// What the index knows of a key's recent accesses, for ranking keys to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// `u16::MAX` for an item a head points at (the hottest of its ring), else the
    /// accesses hotspot detection has counted on it lately (in the current sampling
    /// round, or cold accesses since the ring's last round); most items have 0.
    pub heat: u16,
    /// Clock units (see [`HotRing::set_clock`]) since its last read or write, modulo 2^24.
    pub idle: u32,
}

/// Where a key belongs: `pred` (unmarked when read) links to `cur`, and
/// `pred < key <= cur` in ring order. `cur_link` is `cur`'s unmarked `next` as read.
pub(crate) struct Position {
    pub(crate) pred: ItemPtr,
    pub(crate) pred_link: Link,
    pub(crate) cur: Option<(ItemPtr, Link)>,
    pub(crate) visits: u32,
    /// `pred` is where the walk started, and that was the head or an entry word's
    /// item: an access charged to `pred` was served at an entry point.
    pub(crate) pred_is_start: bool,
}

/// What a write may do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WriteMode {
    Insert,
    Update,
    Upsert,
}

/// What a write did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Written {
    Inserted,
    Updated,
    Nothing,
}

// SAFETY: all shared state is atomics, epoch-protected pointers and a Mutex.
unsafe impl Send for HotRing {}
// SAFETY: as above.
unsafe impl Sync for HotRing {}

impl Default for HotRing {
    fn default() -> Self {
        Self::new()
    }
}

impl HotRing {
    /// An index with the default configuration: statistical sampling, growing by splits.
    pub fn new() -> HotRing {
        Self::with_config(Config::default())
    }

    pub fn with_config(config: Config) -> HotRing {
        assert!(
            config.initial_depth <= 24,
            "initial_depth {} is above 24",
            config.initial_depth
        );
        assert!(
            config.sample_period >= 1,
            "sample_period must be at least 1"
        );
        let depth = config.initial_depth;
        let n = 1usize << depth;
        // Rehash items for every initial ring, linked in order, built back to front.
        let mut sentinels = Vec::with_capacity(n);
        let mut next = std::ptr::null_mut();
        for prefix in (0..n as u64).rev() {
            let s = ItemPtr::alloc_sentinel(first_hash(prefix, depth), next);
            next = s.as_raw();
            sentinels.push(s);
        }
        sentinels.reverse();
        let root = sentinels[0];
        let dir = Directory::new(depth, |i| (sentinels[i], depth, sentinels[i], 0));
        HotRing {
            dir: AtomicPtr::new(Box::into_raw(Box::new(dir))),
            root,
            config,
            split_lock: Mutex::new(()),
            counters: Counters::new(),
            splits: Default::default(),
            clock: Default::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    #[inline]
    pub(crate) fn directory<'g>(&self, _guard: &'g Guard) -> &'g Directory {
        // SAFETY: the directory pointer is never null; a replaced directory is retired
        // through the epoch collector, so it outlives every guard pinned before that.
        unsafe { &*self.dir.load(Ordering::Acquire) }
    }

    /// The directory slot for `hash`.
    #[inline]
    pub(crate) fn slot_for<'g>(&self, hash: u64, guard: &'g Guard) -> SlotRef<'g> {
        let dir = self.directory(guard);
        dir.slot(dir.index_of(hash))
    }

    /// An item pointer read from the index under `_guard`.
    #[inline]
    pub(crate) fn item(&self, p: *mut crate::item::Item, _guard: &Guard) -> Option<ItemPtr> {
        // SAFETY: pointers in the index's words are null or point to items that are
        // reclaimed only after a grace period covering every guard pinned when they
        // were still reachable, which includes `_guard` (see `head.rs` for the head and
        // the entry words).
        unsafe { ItemPtr::from_raw(p) }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the value stored under `key`.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.pin().get_with(key, f)
    }

    /// The item of `key`, found as a read finds it: the access counted (head moves,
    /// sampling) and the item's clock stamped.
    #[inline]
    pub(crate) fn accessed(&self, key: &[u8], guard: &Guard) -> Option<ItemPtr> {
        let hash = ring_hash(key);
        let slot = self.slot_for(hash, guard);
        let head = slot.load_head();
        let (found, visits, hot) = self.search(slot, head, hash, key, guard);
        self.after_access(slot, head, found, hot, visits, hash, guard);
        let item = found?;
        item.stamp(self.now());
        Some(item)
    }

    /// Calls `f` with the value stored under `key` and what is known of its accesses,
    /// without counting an access: for looking at keys to evict, which must not warm
    /// them, and at a key's idle time, which must not restart it.
    pub fn peek_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8], Access) -> R) -> Option<R> {
        let hash = ring_hash(key);
        let guard = epoch::pin();
        let slot = self.slot_for(hash, &guard);
        let head = slot.load_head();
        let (found, _, at_head) = self.search(slot, head, hash, key, &guard);
        found.map(|item| {
            let access = self.access_of(item, at_head);
            item.with_value(|v| f(v, access))
        })
    }

    /// Sets the access clock, in whatever units the caller keeps (the server: seconds,
    /// as Redis's LRU clock), modulo 2^24. Reads through [`HotRing::get_with`] and every
    /// write stamp the item they reach with it; [`HotRing::idle`] tells how long ago
    /// that was. The index never reads a clock itself: a clock read costs as much as a
    /// lookup, so the caller advances this one now and then (the server, ten times a
    /// second). Until it is first set, every key's idle time is 0.
    pub fn set_clock(&self, now: u32) {
        let now = now & CLOCK_MASK as u32;
        if self.clock.load(StdOrdering::Relaxed) != now {
            self.clock.store(now, StdOrdering::Relaxed);
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> u32 {
        self.clock.load(StdOrdering::Relaxed)
    }

    /// How long ago, in the clock's units, `key` was last read or written, modulo 2^24;
    /// the same lookup as [`HotRing::peek_with`], so asking does not count as an access.
    pub fn idle(&self, key: &[u8]) -> Option<u32> {
        self.peek_with(key, |_, access| access.idle)
    }

    /// Makes `key` look last accessed `idle` clock units ago (capped at the clock's
    /// range), without counting an access: for a key restored with its idle time.
    /// Whether the key was found.
    pub fn set_idle(&self, key: &[u8], idle: u32) -> bool {
        let hash = ring_hash(key);
        let guard = epoch::pin();
        let slot = self.slot_for(hash, &guard);
        let head = slot.load_head();
        let (found, _, _) = self.search(slot, head, hash, key, &guard);
        let idle = idle.min(CLOCK_MASK as u32);
        found
            .map(|item| item.stamp(self.now().wrapping_sub(idle)))
            .is_some()
    }

    /// What the index knows of `item`'s accesses; `at_head` if a head points at it.
    pub(crate) fn access_of(&self, item: ItemPtr, at_head: bool) -> Access {
        Access {
            heat: if at_head {
                u16::MAX
            } else {
                item.load_next().counter()
            },
            idle: self.now().wrapping_sub(item.clock()) & CLOCK_MASK as u32,
        }
    }

    /// The version of `key`'s value stored now, read in place for as long as `guard` is
    /// held: for a read-modify-write that replaces it by [`HotRing::replace_version`]
    /// without copying it out and comparing its bytes again. Counts as an access, as
    /// [`HotRing::get_with`] does.
    pub fn read_version<'g>(&self, key: &[u8], guard: &'g Guard) -> Option<Version<'g>> {
        let item = self.accessed(key, guard)?;
        let value = if item.is_inline() {
            item.with_value(|v| {
                let mut bytes = [0u8; INLINE_VALUE_MAX];
                bytes[..v.len()].copy_from_slice(v);
                VersionValue::Inline(bytes, v.len())
            })
        } else {
            // SAFETY: `item` was reached under `guard`, so it is freed, if it is
            // unlinked, only after `guard` is dropped (`reclaim_unlinked` defers to the
            // epoch); a long value is written once before publication and never
            // changed, so the bytes stay as read for `'g`.
            VersionValue::Long(unsafe { item.long_value() })
        };
        Some(Version { item, value })
    }

    /// Replaces `version`, read by [`HotRing::read_version`] under a guard still held,
    /// with `new` if it is still `key`'s value: the same item for a long value (no
    /// bytes compared), the same bytes for an inline one. False if it is not, or if
    /// `key` is gone.
    pub fn replace_version(&self, key: &[u8], version: &Version<'_>, new: &[u8]) -> bool {
        if let VersionValue::Inline(..) = version.value {
            // An item no one is removing is still the key's, so a value of the same
            // length is rewritten in the item read, with no second walk of the ring
            // (`compare_and_set_by` walks from the ring's start, for the predecessor a
            // replacement needs). Once its write slot is refused the item is gone, and
            // whatever holds the key now is compared below, as before.
            let item = version.item;
            debug_assert_eq!(item.key(), key);
            if new.len() == item.value_len() && item.begin_write() {
                if !item.with_value(|v| v == version.value()) {
                    item.end_write();
                    return false;
                }
                item.write_held(new);
                item.stamp(self.now());
                return true;
            }
        }
        self.compare_and_set_by(key, new, |cur| match version.value {
            VersionValue::Long(_) => cur == version.item,
            VersionValue::Inline(..) => cur.with_value(|v| v == version.value()),
        })
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.pin().get(key)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.pin().contains_key(key)
    }

    /// Walks from the slot's best entry (an entry word's item, its head or its rehash item)
    /// to `key`. Returns the live item holding it, the items visited, and whether the
    /// entry item itself was the answer.
    #[inline]
    fn search(
        &self,
        slot: SlotRef<'_>,
        head: Head,
        hash: u64,
        key: &[u8],
        guard: &Guard,
    ) -> (Option<ItemPtr>, u32, bool) {
        let starts = slot.starts(hash);
        if let Some(entry) = starts.entry {
            let link = entry.load_next();
            if !link.has(Link::OCCUPIED) {
                match entry.cmp_linked(link, hash, Some(key)) {
                    CmpOrdering::Equal => return (Some(entry), 1, true),
                    CmpOrdering::Less => {
                        let (found, visits) = self.walk(entry, 1, hash, key, guard, |_| {});
                        return (found, visits, false);
                    }
                    // Past the key (the hints tied): the head's way below is right.
                    CmpOrdering::Greater => {}
                }
            }
        }
        if let Some(sentinel) = starts.before_head {
            let (found, visits) = self.walk(sentinel, 1, hash, key, guard, |_| {});
            return (found, visits, false);
        }
        let first = self
            .item(head.target(), guard)
            .expect("a ring head is never null");
        let link = first.load_next();
        if link.has(Link::REHASH) {
            return self.search_unplaced(slot, head, first, hash, key, guard);
        }
        let order = first.cmp_linked(link, hash, Some(key));
        if order == CmpOrdering::Equal && !link.has(Link::OCCUPIED) {
            return (Some(first), 1, true);
        }
        // The head may only start the walk if it is still in the list (unmarked) and not
        // past the key; otherwise start at the ring's rehash item, which always is.
        let (found, visits) = if order == CmpOrdering::Greater || link.has(Link::OCCUPIED) {
            self.walk(slot.sentinel(), 2, hash, key, guard, |_| {})
        } else {
            self.walk(first, 1, hash, key, guard, |_| {})
        };
        (found, visits, false)
    }

    /// [`HotRing::search`] in a slot whose head is still a rehash item (no access has
    /// placed it yet): walks from the start of the ring, through the other slots'
    /// items, to its own range; the first item of its range on the way becomes its
    /// head, so the next lookup there starts in its own range, as a bucket of a
    /// chaining hash would. With several slots to a ring that is the difference between
    /// walking half the ring and walking half a slot: a uniform load over 1M keys
    /// visited 8 items per lookup. Once per slot, so kept off the path of the rest.
    #[cold]
    #[inline(never)]
    fn search_unplaced(
        &self,
        slot: SlotRef<'_>,
        head: Head,
        first: ItemPtr,
        hash: u64,
        key: &[u8],
        guard: &Guard,
    ) -> (Option<ItemPtr>, u32, bool) {
        let past = first.cmp_to(hash, Some(key)) == CmpOrdering::Greater;
        let (start, visits) = if past || first.load_next().has(Link::OCCUPIED) {
            (slot.sentinel(), 2)
        } else {
            (first, 1)
        };
        let mut own_first = None;
        let (found, visits) = self.walk(start, visits, hash, key, guard, |item| {
            if own_first.is_none() && !item.is_sentinel() && slot.covers(item.hash()) {
                own_first = Some(item);
            }
        });
        if let Some(item) = own_first {
            // Fails harmlessly if the head moved or the item is being removed.
            let _ = self.try_install_head(slot, head, item, guard);
        }
        (found, visits, false)
    }

    /// Walks the list from `cur`, not past `key`, showing `seen` each item; `visits`
    /// counts `cur` and what came before it. The live item holding `key`, and the
    /// items visited.
    #[inline(always)]
    fn walk(
        &self,
        mut cur: ItemPtr,
        mut visits: u32,
        hash: u64,
        key: &[u8],
        guard: &Guard,
        mut seen: impl FnMut(ItemPtr),
    ) -> (Option<ItemPtr>, u32) {
        loop {
            seen(cur);
            let link = cur.load_next();
            match cur.cmp_linked(link, hash, Some(key)) {
                CmpOrdering::Greater => return (None, visits),
                CmpOrdering::Equal if !link.has(Link::OCCUPIED) => return (Some(cur), visits),
                // Less, or a version being replaced: its successor may be the new version.
                _ => {}
            }
            let Some(next) = self.item(link.target(), guard) else {
                return (None, visits);
            };
            cur = next;
            visits += 1;
        }
    }

    /// Finds where `(hash, key)` belongs, unlinking removed items on the way.
    pub(crate) fn find(
        &self,
        slot: SlotRef<'_>,
        hash: u64,
        key: Option<&[u8]>,
        guard: &Guard,
    ) -> Position {
        'restart: loop {
            // Start at the entry point (the head or an entry word's item) nearest before
            // the key and still in the list, else at the ring's rehash item, which always
            // is; each is read only if the ones nearer the key were no start, as each is
            // a cache miss.
            let from_start = slot
                .starts_before(hash)
                .into_iter()
                .filter_map(|p| self.item(p, guard))
                .find_map(|item| {
                    let link = item.load_next();
                    (!link.has(Link::OCCUPIED)
                        && item.cmp_linked(link, hash, key) == CmpOrdering::Less)
                        .then_some((item, link))
                });
            let mut pred_is_start = from_start.is_some();
            let (mut pred, mut pred_link) = from_start.unwrap_or_else(|| {
                let sentinel = slot.sentinel();
                (sentinel, sentinel.load_next())
            });
            let mut visits = 1;
            loop {
                let Some(cur) = self.item(pred_link.target(), guard) else {
                    return Position {
                        pred,
                        pred_link,
                        cur: None,
                        visits,
                        pred_is_start,
                    };
                };
                let cur_link = cur.load_next();
                if cur_link.has(Link::OCCUPIED) {
                    let unlinked = pred_link.retarget(cur_link.target());
                    match pred.next().compare_exchange(
                        pred_link.0,
                        unlinked.0,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            self.reclaim_unlinked(cur, guard);
                            pred_link = unlinked;
                        }
                        Err(actual) => {
                            let actual = Link(actual);
                            if actual.has(Link::OCCUPIED) {
                                continue 'restart;
                            }
                            pred_link = actual;
                        }
                    }
                    continue;
                }
                visits += 1;
                if cur.cmp_linked(cur_link, hash, key) == CmpOrdering::Less {
                    (pred, pred_link) = (cur, cur_link);
                    pred_is_start = false;
                } else {
                    return Position {
                        pred,
                        pred_link,
                        cur: Some((cur, cur_link)),
                        visits,
                        pred_is_start,
                    };
                }
            }
        }
    }

    /// Inserts `key` if it is absent. Returns whether it was inserted.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> bool {
        self.pin().insert(key, value)
    }

    /// Replaces the value of `key` if it is present. Returns whether it was.
    pub fn update(&self, key: &[u8], value: &[u8]) -> bool {
        self.pin().update(key, value)
    }

    /// Inserts or replaces. Returns true if the key was new.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> bool {
        self.pin().upsert(key, value)
    }

    /// [`HotRing::upsert`] that shows `replaced` the value it replaced, unless that value
    /// was inline (at most [`INLINE_VALUE_MAX`] bytes, which may be overwritten in
    /// place): for a caller whose longer values own something to release.
    pub fn upsert_replacing(&self, key: &[u8], value: &[u8], replaced: impl FnOnce(&[u8])) -> bool {
        let guard = epoch::pin();
        self.write(key, value, WriteMode::Upsert, replaced, &guard) == Written::Inserted
    }

    pub(crate) fn write(
        &self,
        key: &[u8],
        value: &[u8],
        mode: WriteMode,
        replaced: impl FnOnce(&[u8]),
        guard: &Guard,
    ) -> Written {
        let hash = ring_hash(key);
        if mode != WriteMode::Insert
            && value.len() <= INLINE_VALUE_MAX
            && self.write_in_place_from_head(hash, key, value, guard)
        {
            return Written::Updated;
        }
        let mut replaced = Some(replaced);
        // Allocated once and reused across retries; owned by us until a CAS publishes it.
        let mut fresh: Option<ItemPtr> = None;
        let outcome = loop {
            let slot = self.slot_for(hash, guard);
            let head = slot.load_head();
            let pos = self.find(slot, hash, Some(key), guard);
            match pos.cur {
                Some((cur, cur_link)) if cur.cmp_to(hash, Some(key)) == CmpOrdering::Equal => {
                    if mode == WriteMode::Insert {
                        break Written::Nothing;
                    }
                    if cur.is_inline() && cur.value_len() == value.len() {
                        if cur.write_in_place(value) {
                            cur.stamp(self.now());
                            let hot = head.target() == cur.as_raw();
                            self.after_access(slot, head, Some(cur), hot, pos.visits, hash, guard);
                            break Written::Updated;
                        }
                        continue;
                    }
                    let new = *fresh.get_or_insert_with(|| self.alloc(hash, key, value));
                    if self.replace(&pos, cur, cur_link, new, guard) {
                        fresh = None;
                        // `cur` is unlinked but not freed while `guard` is held.
                        if let Some(shown) = replaced.take().filter(|_| !cur.is_inline()) {
                            cur.with_value(shown);
                        }
                        // An RCU update is an access to the predecessor, whose `next` it
                        // rewrites: that is what makes a write-hot item's predecessor the
                        // head, or an entry beside the head on the item when it is read too.
                        // The head is read again: on `cur` it has just moved to `new`, and
                        // every CAS on the word read before would fail (no head move, no
                        // round) for as long as the head stays on a rewritten key.
                        self.after_access(
                            slot,
                            slot.load_head(),
                            Some(pos.pred),
                            pos.pred_is_start,
                            pos.visits,
                            hash,
                            guard,
                        );
                        break Written::Updated;
                    }
                }
                _ => {
                    if mode == WriteMode::Update {
                        break Written::Nothing;
                    }
                    let new = *fresh.get_or_insert_with(|| self.alloc(hash, key, value));
                    if Self::link_new(&pos, new, 0) {
                        fresh = None;
                        self.counters.mine().len.fetch_add(1, StdOrdering::Relaxed);
                        let items = slot.count_insert();
                        // Slots share their ring evenly on average: estimate its length.
                        let ring_len = (items as u64) << (slot.dir.depth - slot.ring_depth());
                        if let Some(max) = self
                            .config
                            .max_ring_len
                            .filter(|max| ring_len > *max as u64)
                        {
                            self.split(slot, max + 1, true, guard);
                        } else if let Some(per_slot) = self
                            .config
                            .shared_split_len
                            .filter(|n| items > *n && slot.ring_depth() < slot.dir.depth)
                        {
                            self.split(slot, per_slot + 1, false, guard);
                        }
                        break Written::Inserted;
                    }
                }
            }
        };
        if let Some(unused) = fresh {
            // SAFETY: never published: no other thread has seen it.
            unsafe { unused.free() };
        }
        outcome
    }

    /// An in-place update reached the way a read is, from the head. `find` would walk
    /// from the ring's start (it needs the predecessor, which an in-place write does
    /// not), so a write to the hot head item would cost half the ring. Returns false,
    /// leaving the write to the general path, when the key is absent, its value is not
    /// inline with this length, or it is being removed.
    fn write_in_place_from_head(&self, hash: u64, key: &[u8], value: &[u8], guard: &Guard) -> bool {
        let slot = self.slot_for(hash, guard);
        let head = slot.load_head();
        let (found, visits, hot) = self.search(slot, head, hash, key, guard);
        let Some(item) = found else { return false };
        if !(item.is_inline() && item.value_len() == value.len() && item.write_in_place(value)) {
            return false;
        }
        item.stamp(self.now());
        self.after_access(slot, head, Some(item), hot, visits, hash, guard);
        true
    }

    /// Links the unpublished `new` between `pos.pred` and `pos.cur`; `flags` are its
    /// own constant bits. Fails if `pos.pred` changed since `find`.
    pub(crate) fn link_new(pos: &Position, new: ItemPtr, flags: usize) -> bool {
        let succ = pos.cur.map_or(std::ptr::null_mut(), |(c, _)| c.as_raw());
        new.next().store(Link::to(succ, flags).0, Ordering::Relaxed);
        let linked = pos.pred_link.retarget(new.as_raw());
        pos.pred
            .next()
            .compare_exchange(
                pos.pred_link.0,
                linked.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    fn alloc(&self, hash: u64, key: &[u8], value: &[u8]) -> ItemPtr {
        ItemPtr::alloc(
            hash,
            self.now(),
            key,
            value,
            Link::to(std::ptr::null_mut(), 0),
        )
    }

    /// RCU: replaces `cur` (whose `next` was `cur_link`) by `new`. Returns false if
    /// `cur` changed first; the caller finds again.
    fn replace(
        &self,
        pos: &Position,
        cur: ItemPtr,
        cur_link: Link,
        new: ItemPtr,
        guard: &Guard,
    ) -> bool {
        debug_assert!(!cur_link.has(Link::OCCUPIED));
        if cur_link.has(Link::WRITING) {
            crate::sync::spin();
            return false;
        }
        // A count added to `cur` since `cur_link` was read fails the CAS below.
        new.next()
            .store(cur_link.for_new_version().0, Ordering::Relaxed);
        // Keep a head-move pin: its owner still has to release it (see `head.rs`).
        let marked = Link::to(
            new.as_raw(),
            Link::OCCUPIED | (cur_link.bits() & Link::PINNED),
        );
        if cur
            .next()
            .compare_exchange(cur_link.0, marked.0, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.unlink(pos, cur, new.as_raw(), guard);
        true
    }

    /// Unlinks the marked `cur` from `pos.pred`, or leaves it to a `find` that helps.
    fn unlink(&self, pos: &Position, cur: ItemPtr, succ: *mut crate::item::Item, guard: &Guard) {
        let unlinked = pos.pred_link.retarget(succ);
        if pos
            .pred
            .next()
            .compare_exchange(
                pos.pred_link.0,
                unlinked.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            self.reclaim_unlinked(cur, guard);
        } else {
            let slot = self.slot_for(cur.hash(), guard);
            let key = cur.key().to_vec();
            self.find(slot, cur.hash(), Some(&key), guard);
        }
    }

    /// Removes `key`. Returns whether it was present.
    pub fn remove(&self, key: &[u8]) -> bool {
        self.pin().remove(key)
    }

    /// Removes `key` if `pred` accepts its current value. Returns whether it removed.
    pub fn remove_if(&self, key: &[u8], pred: impl Fn(&[u8]) -> bool) -> bool {
        self.remove_if_in(key, pred, &epoch::pin())
    }

    pub(crate) fn remove_if_in(
        &self,
        key: &[u8],
        pred: impl Fn(&[u8]) -> bool,
        guard: &Guard,
    ) -> bool {
        let hash = ring_hash(key);
        loop {
            let slot = self.slot_for(hash, guard);
            let pos = self.find(slot, hash, Some(key), guard);
            let Some((cur, _)) = pos
                .cur
                .filter(|(c, _)| c.cmp_to(hash, Some(key)) == CmpOrdering::Equal)
            else {
                return false;
            };
            // An inline value can change under us; hold the write slot while checking.
            let checked = if cur.is_inline() {
                if !cur.begin_write() {
                    continue;
                }
                let ok = cur.with_value(&pred);
                if !ok {
                    cur.end_write();
                    return false;
                }
                Some(cur.remove_while_writing())
            } else {
                if !cur.with_value(&pred) {
                    return false;
                }
                cur.mark_removed()
            };
            let Some(frozen) = checked else { continue };
            self.counters.mine().len.fetch_sub(1, StdOrdering::Relaxed);
            slot.count_remove();
            self.unlink(&pos, cur, frozen.target(), guard);
            return true;
        }
    }

    /// Replaces the value of `key` with `new` if it is currently `expected`.
    pub fn compare_and_set(&self, key: &[u8], expected: &[u8], new: &[u8]) -> bool {
        self.compare_and_set_by(key, new, |cur| cur.with_value(|v| v == expected))
    }

    /// Replaces the value of `key` with `new` if `current` says its item is the one
    /// expected; `current` sees an inline item while holding its write slot.
    fn compare_and_set_by(
        &self,
        key: &[u8],
        new: &[u8],
        current: impl Fn(ItemPtr) -> bool,
    ) -> bool {
        let hash = ring_hash(key);
        let guard = epoch::pin();
        loop {
            let slot = self.slot_for(hash, &guard);
            let pos = self.find(slot, hash, Some(key), &guard);
            let Some((cur, cur_link)) = pos
                .cur
                .filter(|(c, _)| c.cmp_to(hash, Some(key)) == CmpOrdering::Equal)
            else {
                return false;
            };
            if !cur.is_inline() {
                // A long value never changes in place: comparing it and then replacing the
                // version we compared (the CAS fails if it was replaced) is atomic.
                if !current(cur) {
                    return false;
                }
                let fresh = self.alloc(hash, key, new);
                if self.replace(&pos, cur, cur_link, fresh, &guard) {
                    return true;
                }
                // SAFETY: the replace failed, so `fresh` was never published.
                unsafe { fresh.free() };
                continue;
            }
            if !cur.begin_write() {
                continue;
            }
            if !current(cur) {
                cur.end_write();
                return false;
            }
            if new.len() == cur.value_len() {
                cur.write_held(new);
                cur.stamp(self.now());
                return true;
            }
            // Different length: replace the version while holding its write slot, so no
            // in-place write can slip between the comparison and the replacement.
            let fresh = self.alloc(hash, key, new);
            let old = cur.update_next(|l| {
                fresh.next().store(l.for_new_version().0, Ordering::Relaxed);
                Some(Link::to(
                    fresh.as_raw(),
                    Link::OCCUPIED | (l.bits() & Link::PINNED),
                ))
            });
            debug_assert!(old.is_ok());
            self.unlink(&pos, cur, fresh.as_raw(), &guard);
            return true;
        }
    }

    /// A snapshot of sizes and behaviour. Walks the whole index: not for hot paths.
    pub fn stats(&self) -> Stats {
        self.measure(None)
    }

    /// The running totals behind [`Stats::items_per_access`]: `(sampled accesses,
    /// items those accesses visited)`. Cheap (no walk), for watching the index over
    /// time: the difference of two readings is the items per access in between.
    pub fn access_totals(&self) -> (u64, u64) {
        (
            self.counters.sum(|s| s.accesses.load(StdOrdering::Relaxed)),
            self.counters.sum(|s| s.visits.load(StdOrdering::Relaxed)),
        )
    }

    /// As [`HotRing::stats`], with the ring lengths and bytes estimated from at most
    /// `max_items` items, starting at the ring that covers `from` (and wrapping around
    /// once): bounded work whatever the index's size, for a server's INFO. The counters
    /// are exact either way.
    pub fn stats_sampled(&self, from: u64, max_items: usize) -> Stats {
        self.measure(Some((from, max_items.max(1))))
    }

    /// Walks the whole list, or with `sample = Some((from, limit))` at most `limit`
    /// items from the ring covering `from`, counting only rings seen whole.
    fn measure(&self, sample: Option<(u64, usize)>) -> Stats {
        let guard = epoch::pin();
        let dir = self.directory(&guard);
        let start = match sample {
            Some((from, _)) => self.slot_for(from, &guard).sentinel(),
            None => self.root,
        };
        let limit = sample.map_or(usize::MAX, |(_, limit)| limit);
        let mut lengths = std::collections::BTreeMap::<usize, usize>::new();
        // `run` counts the live items of the ring being walked; None until the walk
        // has met a ring's first item, so a ring entered halfway is not counted.
        let mut run: Option<usize> = None;
        let (mut seen, mut seen_bytes, mut wrapped) = (0usize, 0usize, false);
        let mut cur = Some(start);
        while let Some(item) = cur {
            if seen > 0 && item == start {
                // Back where the walk began: the ring before it is complete.
                if let Some(n) = run {
                    *lengths.entry(n).or_default() += 1;
                }
                break;
            }
            if seen >= limit {
                break;
            }
            seen += 1;
            seen_bytes += item.footprint();
            if item.is_sentinel() {
                if let Some(n) = run {
                    *lengths.entry(n).or_default() += 1;
                }
                run = Some(0);
            } else if !item.load_next().has(Link::OCCUPIED) {
                run = run.map(|n| n + 1);
            }
            cur = self.item(item.load_next().target(), &guard);
            if cur.is_none() && !wrapped {
                // The last ring ends at the end of the list.
                if let Some(n) = run.take() {
                    *lengths.entry(n).or_default() += 1;
                }
                wrapped = true;
                cur = Some(self.root);
            }
        }
        // Each split turns one ring into two.
        let rings_total =
            (1usize << self.config.initial_depth) + self.splits.load(StdOrdering::Relaxed) as usize;
        let (rings, item_bytes) = match sample {
            // Every item was seen once.
            None => (lengths.values().sum(), seen_bytes),
            Some(_) => {
                let items_total = self.len() + rings_total;
                (rings_total, seen_bytes * items_total / seen.max(1))
            }
        };
        let bytes = dir.bytes() + item_bytes;
        let len = self.len();
        let c = &self.counters;
        let (accesses, visits) = self.access_totals();
        let ratio = |n: u64| {
            if accesses == 0 {
                0.0
            } else {
                n as f64 / accesses as f64
            }
        };
        Stats {
            len,
            rings,
            directory_slots: dir.len(),
            head_hit_rate: ratio(c.sum(|s| s.head_hits.load(StdOrdering::Relaxed))),
            items_per_access: ratio(visits),
            head_moves: c.sum(|s| s.head_moves.load(StdOrdering::Relaxed)),
            sample_rounds: c.sum(|s| s.sample_rounds.load(StdOrdering::Relaxed)),
            shifts: c.sum(|s| s.shift_watch.shifts()),
            splits: self.splits.load(StdOrdering::Relaxed),
            ring_lengths: lengths.into_iter().collect(),
            bytes,
            bytes_per_key: if len == 0 {
                0.0
            } else {
                bytes as f64 / len as f64
            },
        }
    }

    /// Zeroes the access statistics (head-hit rate, items per access), e.g. after a
    /// benchmark's load phase.
    pub fn reset_access_stats(&self) {
        self.counters.reset_access_stats();
    }
}

impl Drop for HotRing {
    fn drop(&mut self) {
        let guard = epoch::pin();
        let dir = self.dir.load(Ordering::Acquire);
        // SAFETY: `&mut self`: no operation is in flight, so everything reachable from the
        // root and the directory belongs to us alone. Unlinked items are not reachable;
        // they were retired to the collector, which frees them on its own.
        unsafe {
            drop(Box::from_raw(dir));
            let mut cur = Some(self.root);
            while let Some(item) = cur {
                cur = self.item(item.load_next().target(), &guard);
                item.free();
            }
        }
    }
}
