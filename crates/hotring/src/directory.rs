//! The extendible directory (seed 001) over rings.
//!
//! All items form one list sorted by (hash, rehash-item-first, key). A ring with
//! prefix `p` at local depth `d` is the run of that list from its rehash item (hash
//! `p << (64 - d)`) up to the next rehash item. The directory has `2^G` slots; slot `i`
//! covers the hashes whose top `G` bits are `i`, and the `2^(G-d)` slots under a ring's
//! prefix share that ring.
//!
//! Each slot holds its own head pointer, always at an item of the slot's own hash range
//! (or at a rehash item), beside it its ring's rehash item, where a lookup for a key
//! before the head starts, and two more entries, items of its range where a lookup
//! for a key past them starts: the four share a cache line, so a lookup costs one line of
//! the directory and then the items (with the rehash item in a parallel array, a
//! uniform load missed in it on every other lookup). What only inserts and splits
//! need lives in a parallel array.
//! Splitting a ring inserts one rehash item in the middle of its run and points the
//! upper half's slots at it; every head stays where it is.

use crate::item::{Item, ItemPtr};
use crate::link::{Head, ADDRESS_BITS, ADDRESS_MASK};
use crate::sync::{AtomicPtr, AtomicU32, Ordering};

/// What a lookup reads of a slot: 32 bytes, so two slots to a cache line and none
/// across two.
#[repr(C, align(32))]
struct SlotHead {
    head: AtomicPtr<Item>,
    /// The *start word*: the rehash item that starts this slot's ring (never reclaimed
    /// while the index lives) in the low 48 bits, and in the high 16 the head's
    /// [`hint`] (layout in `POINTERS.md`).
    start: AtomicPtr<Item>,
    /// The *entry words*: more entries into the slot's items besides the head, each a
    /// data item of its range in the low 48 bits and its [`hint`] in the high 16; null
    /// for none. Set and cleared under the head's reclamation handshake (`head.rs`).
    entries: [AtomicPtr<Item>; ENTRIES],
}

/// Entry words a slot has besides its head: the slot's 32 bytes hold two.
pub(crate) const ENTRIES: usize = 2;

/// Where the head hint sits in the start word.
const HINT_SHIFT: u32 = ADDRESS_BITS;

/// The 16 bits of `hash` after the directory's `depth` bits. Every hash of one slot has
/// the same first `depth` bits, so between two of them these compare as the hashes do,
/// unless equal. A lookup whose key's hint is below its head's finds the head past the
/// key without reading the head item, one cache miss fewer for a key before the head.
#[inline]
fn hint(hash: u64, depth: u32) -> usize {
    debug_assert!(depth <= MAX_DEPTH);
    ((hash << depth) >> HINT_SHIFT) as usize
}

/// The hint of a head at `item`: 0, which no key is below, for a rehash item (a
/// lookup must read it: it may be a head never placed).
fn head_hint(item: ItemPtr, depth: u32) -> usize {
    if item.is_sentinel() {
        0
    } else {
        hint(item.hash(), depth)
    }
}

/// What a slot knows besides what a lookup reads.
pub(crate) struct SlotMeta {
    /// The ring's local depth `d`.
    pub(crate) ring_depth: AtomicU32,
    /// Items in this slot's hash range, kept approximately (a write through a directory
    /// that a doubling just replaced counts in the old one). For sampling and splits.
    pub(crate) items: AtomicU32,
}

impl SlotMeta {
    /// Counts an insert; returns the new estimate.
    #[inline]
    pub(crate) fn count_insert(&self) -> u32 {
        self.items.fetch_add(1, Ordering::Relaxed).saturating_add(1)
    }

    /// Counts a removal. The count is an estimate (see `items`) and stops at zero.
    #[inline]
    pub(crate) fn count_remove(&self) {
        let _ = self
            .items
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn ring_depth(&self) -> u32 {
        self.ring_depth.load(Ordering::Acquire)
    }
}

/// Rings never get deeper than this: the hash has 64 bits, and a ring at this depth
/// already holds only keys whose hashes agree in 40 bits.
pub(crate) const MAX_DEPTH: u32 = 40;

#[inline]
pub(crate) fn prefix_of(hash: u64, depth: u32) -> u64 {
    debug_assert!(depth <= 63);
    // Two shifts, as a shift by 64 (depth 0) is not one.
    (hash >> 1) >> (63 - depth)
}

/// The smallest hash under `prefix` at `depth`: its rehash item's hash.
#[inline]
pub(crate) fn first_hash(prefix: u64, depth: u32) -> u64 {
    if depth == 0 {
        0
    } else {
        prefix << (64 - depth)
    }
}

pub(crate) struct Directory {
    pub(crate) depth: u32,
    heads: Box<[SlotHead]>,
    meta: Box<[SlotMeta]>,
}

impl Directory {
    /// `2^depth` slots; `init(i)` gives slot `i`'s (rehash item, ring depth, head, items),
    /// the head an item the caller keeps from being freed meanwhile.
    pub(crate) fn new(
        depth: u32,
        init: impl Fn(usize) -> (ItemPtr, u32, ItemPtr, u32),
    ) -> Directory {
        let (heads, meta): (Vec<_>, Vec<_>) = (0..1usize << depth)
            .map(|i| {
                let (sentinel, ring_depth, head, items) = init(i);
                debug_assert!(ring_depth <= depth);
                let meta = SlotMeta {
                    ring_depth: AtomicU32::new(ring_depth),
                    items: AtomicU32::new(items),
                };
                let start = sentinel
                    .as_raw()
                    .map_addr(|a| a | head_hint(head, depth) << HINT_SHIFT);
                // A doubling places no entries besides the heads: each would need the
                // handshake's pin, and the next sampling round places them again.
                let head = SlotHead {
                    head: AtomicPtr::new(Head::to(head.as_raw()).0),
                    start: AtomicPtr::new(start),
                    entries: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
                };
                (head, meta)
            })
            .unzip();
        Directory {
            depth,
            heads: heads.into_boxed_slice(),
            meta: meta.into_boxed_slice(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.heads.len()
    }

    /// Slot `index`.
    #[inline]
    pub(crate) fn slot(&self, index: usize) -> SlotRef<'_> {
        SlotRef {
            dir: self,
            index,
            line: &self.heads[index],
        }
    }

    #[inline]
    pub(crate) fn index_of(&self, hash: u64) -> usize {
        prefix_of(hash, self.depth) as usize
    }

    /// Whether `hash` falls in slot `index`'s range.
    #[inline]
    pub(crate) fn covers(&self, index: usize, hash: u64) -> bool {
        self.index_of(hash) == index
    }

    /// The slots a ring with `prefix` at `depth` spans.
    pub(crate) fn slots_of(&self, prefix: u64, depth: u32) -> std::ops::Range<usize> {
        debug_assert!(depth <= self.depth);
        let width = self.depth - depth;
        let start = (prefix as usize) << width;
        start..start + (1usize << width)
    }

    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Directory>()
            + self.len() * (std::mem::size_of::<SlotHead>() + std::mem::size_of::<SlotMeta>())
    }
}

/// Where a lookup starts besides the head ([`SlotRef::starts`]).
pub(crate) struct Starts {
    /// An entry at or before the key, nearer to it than the head.
    pub(crate) entry: Option<ItemPtr>,
    /// The ring's rehash item, when the head is past the key.
    pub(crate) before_head: Option<ItemPtr>,
}

/// A slot together with the directory it belongs to, which gives its hash range.
#[derive(Clone, Copy)]
pub(crate) struct SlotRef<'g> {
    pub(crate) dir: &'g Directory,
    pub(crate) index: usize,
    /// `dir`'s slot `index`, looked up once.
    line: &'g SlotHead,
}

impl<'g> SlotRef<'g> {
    /// Where the slot's head word lives, for a prefetch.
    #[inline]
    pub(crate) fn head_address(&self) -> *const AtomicPtr<Item> {
        &self.line.head
    }

    #[inline]
    pub(crate) fn load_head(&self) -> Head {
        Head(self.line.head.load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn cas_head(&self, current: Head, new: Head) -> Result<Head, Head> {
        self.line
            .head
            .compare_exchange(current.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(Head)
            .map_err(Head)
    }

    /// The rehash item that starts the slot's ring.
    #[inline]
    pub(crate) fn sentinel(&self) -> ItemPtr {
        Self::sentinel_of(self.load_start())
    }

    #[inline]
    fn load_start(&self) -> *mut Item {
        self.line.start.load(Ordering::Acquire)
    }

    #[inline]
    fn sentinel_of(start: *mut Item) -> ItemPtr {
        // SAFETY: rehash items are freed only when the index is dropped.
        unsafe { ItemPtr::from_raw(start.map_addr(|a| a & ADDRESS_MASK)) }
            .expect("every slot has a rehash item")
    }

    /// Where a lookup of `hash` may start besides the head, from the slot's line
    /// alone: the entry word nearest before the key by its hint, if that is past the
    /// head or the key is before the head; and the ring's rehash item, if the head
    /// hint says the head is past the key. Hints may lag and tie, so the caller reads
    /// an entry to be sure; a walk from any live item at or before the key is right,
    /// whatever the hints said, and only its length depends on them.
    #[inline]
    pub(crate) fn starts(&self, hash: u64) -> Starts {
        let key = hint(hash, self.dir.depth);
        let start = self.line.start.load(Ordering::Acquire);
        let head = start.addr() >> HINT_SHIFT;
        let before_head = (key < head).then(|| Self::sentinel_of(start));
        // The entry with the greatest hint at or before the key's. A word is null or
        // holds an item (whose hint may be 0).
        let [first, second] = &self.line.entries;
        let (w0, w1) = (
            first.load(Ordering::Acquire),
            second.load(Ordering::Acquire),
        );
        let (a0, a1) = (w0.addr() >> HINT_SHIFT, w1.addr() >> HINT_SHIFT);
        let (ok0, ok1) = (!w0.is_null() && a0 <= key, !w1.is_null() && a1 <= key);
        let (word, at) = if ok1 && (!ok0 || a1 > a0) {
            (w1, a1)
        } else {
            (w0, a0)
        };
        let entry = ((ok0 || ok1) && (at > head || key < head)).then(|| {
            // SAFETY: an entry is a data item that its unlinker takes out of the entry
            // words before retiring it, and that no one can put back once it is marked
            // (the handshake in `head.rs`), so it lives as long as the caller's guard,
            // pinned before it read the word.
            unsafe { ItemPtr::from_raw(Self::entry_target(word)) }.expect("checked non-null")
        });
        Starts { entry, before_head }
    }

    /// Where a walk for the item before `hash`'s key may start: the head and the
    /// entry words whose hints are at or before the key's, nearest to the key first,
    /// null where there is none. A write needs the predecessor, so the entry point
    /// nearest a key is no start when it is the key's own item (a hot key written):
    /// the caller reads these in turn until one is live and before the key, and walks
    /// from the ring's rehash item if none is. Hints may lag and tie; only the walk's
    /// length depends on them.
    #[inline]
    pub(crate) fn starts_before(&self, hash: u64) -> [*mut Item; 1 + ENTRIES] {
        let key = hint(hash, self.dir.depth);
        let head_hint = self.line.start.load(Ordering::Acquire).addr() >> HINT_SHIFT;
        let head = self.load_head().target();
        let mut points = [(head_hint, head); 1 + ENTRIES];
        for (point, word) in points[1..].iter_mut().zip(&self.line.entries) {
            let word = word.load(Ordering::Acquire);
            *point = (word.addr() >> HINT_SHIFT, Self::entry_target(word));
        }
        // Three words: an insertion sort, nearest (greatest hint) first.
        for i in 1..points.len() {
            let mut j = i;
            while j > 0 && points[j - 1].0 < points[j].0 {
                points.swap(j - 1, j);
                j -= 1;
            }
        }
        points.map(|(at, item)| {
            if at <= key {
                item
            } else {
                std::ptr::null_mut()
            }
        })
    }

    /// Entry word `i` as it is: compare it to an item with [`SlotRef::entry_is`],
    /// replace it with [`SlotRef::cas_entry`].
    #[inline]
    pub(crate) fn load_entry(&self, i: usize) -> *mut Item {
        self.line.entries[i].load(Ordering::Acquire)
    }

    /// The item entry word `word` points at, null for none.
    pub(crate) fn entry_target(word: *mut Item) -> *mut Item {
        word.map_addr(|a| a & ADDRESS_MASK)
    }

    /// Whether the entry word `word` points at `item`.
    pub(crate) fn entry_is(word: *mut Item, item: ItemPtr) -> bool {
        word.addr() & ADDRESS_MASK == item.as_raw().addr()
    }

    /// Replaces entry word `i` from `current` to `to` (none for `None`), its hint
    /// beside it. Fails if the word changed.
    pub(crate) fn cas_entry(&self, i: usize, current: *mut Item, to: Option<ItemPtr>) -> bool {
        let new = to.map_or(std::ptr::null_mut(), |item| {
            debug_assert!(!item.is_sentinel() && self.covers(item.hash()));
            let bits = hint(item.hash(), self.dir.depth) << HINT_SHIFT;
            item.as_raw().map_addr(|a| a | bits)
        });
        self.line.entries[i]
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Replaces the start word's rehash item or hint, keeping the other part.
    fn update_start(&self, f: impl Fn(*mut Item) -> *mut Item) {
        let word = &self.line.start;
        let mut current = word.load(Ordering::Acquire);
        loop {
            let new = f(current);
            if new == current {
                return;
            }
            match word.compare_exchange_weak(current, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    pub(crate) fn set_sentinel(&self, s: ItemPtr) {
        self.update_start(|start| s.as_raw().map_addr(|a| a | (start.addr() & !ADDRESS_MASK)));
    }

    /// Sets the hint to that of the head at `item`, which the caller keeps from being
    /// freed (a guard held since it read the head). Called after each move of the head
    /// and again as long as the head moved meanwhile (see `HotRing::note_head_moved`).
    pub(crate) fn set_hint_for(&self, item: ItemPtr) {
        let bits = head_hint(item, self.dir.depth) << HINT_SHIFT;
        self.update_start(|start| start.map_addr(|a| (a & ADDRESS_MASK) | bits));
    }

    /// Whether `hash` falls in this slot's range; heads stay inside it.
    #[inline]
    pub(crate) fn covers(&self, hash: u64) -> bool {
        self.dir.covers(self.index, hash)
    }
}

impl std::ops::Deref for SlotRef<'_> {
    type Target = SlotMeta;
    #[inline]
    fn deref(&self) -> &SlotMeta {
        &self.dir.meta[self.index]
    }
}

#[cfg(test)]
mod tests {
    use crossbeam_epoch as epoch;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    use super::*;
    use crate::index::HotRing;
    use crate::link::Link;

    /// Checks, once the threads moving entries are done, that every slot's hint is its
    /// head's, as a lookup assumes, and that every entry word holds a live data item of
    /// its slot's range beside its own hint, as reclamation does. How many slots' heads
    /// are data items, and how many entry words hold one.
    pub(super) fn check_entries(index: &HotRing) -> (usize, usize) {
        let guard = epoch::pin();
        let dir = index.directory(&guard);
        let (mut heads, mut entries) = (0, 0);
        for i in 0..dir.len() {
            let slot = dir.slot(i);
            let head = index
                .item(slot.load_head().target(), &guard)
                .expect("a ring head is never null");
            heads += usize::from(!head.is_sentinel());
            let stored = slot.load_start().addr() >> HINT_SHIFT;
            assert_eq!(
                stored,
                head_hint(head, dir.depth),
                "slot {i} of {}",
                dir.len()
            );
            for e in 0..ENTRIES {
                let word = slot.load_entry(e);
                if word.is_null() {
                    continue;
                }
                entries += 1;
                let entry = index
                    .item(SlotRef::entry_target(word), &guard)
                    .expect("an entry word with a hint has an address");
                assert!(!entry.is_sentinel(), "slot {i}: a rehash item as entry {e}");
                assert!(
                    slot.covers(entry.hash()),
                    "slot {i}: entry {e} out of range"
                );
                let link = entry.load_next();
                assert!(!link.has(Link::OCCUPIED), "slot {i}: a removed entry {e}");
                assert_eq!(word.addr() >> HINT_SHIFT, hint(entry.hash(), dir.depth));
            }
        }
        (heads, entries)
    }

    /// Reads `reads` keys of `0..keys`, one in 50 of them hot (which ones depends on
    /// `seed`), from a generator seeded with `seed`, so heads move to them.
    fn read_hot(index: &HotRing, keys: u32, reads: u32, seed: u64) {
        let mut rng = SmallRng::seed_from_u64(seed);
        for _ in 0..reads {
            let k = if rng.gen_bool(0.8) {
                rng.gen_range(0..keys / 50) * 50 + (seed % 50) as u32
            } else {
                rng.gen_range(0..keys)
            };
            assert!(index.get(&k.to_le_bytes()).is_some(), "key {k} lost");
        }
    }

    /// An index of the keys `0..keys`, each its own value.
    fn filled(keys: u32) -> HotRing {
        let index = HotRing::new();
        for k in 0..keys {
            index.insert(&k.to_le_bytes(), &k.to_le_bytes());
        }
        index
    }

    #[test]
    fn each_slots_hint_follows_its_head_through_moves_splits_and_removals() {
        let keys = 40_000u32;
        let index = filled(keys);
        read_hot(&index, keys, 400_000, 1);
        assert!(index.stats().splits > 0, "the index never split");
        let (placed, entries) = check_entries(&index);
        assert!(placed > 1000, "only {placed} heads left their rehash items");
        assert!(entries > 2000, "only {entries} entry words hold an item");
        // Removals move heads off the removed items (to a successor or the rehash
        // item); RCU updates move them to the new versions.
        for k in (0..keys).step_by(3) {
            index.remove(&k.to_le_bytes());
        }
        for k in (1..keys).step_by(3) {
            index.upsert(&k.to_le_bytes(), &[7u8; 40]);
        }
        check_entries(&index);
    }

    #[test]
    fn the_last_thread_to_move_a_head_leaves_its_hint() {
        let keys = 20_000u32;
        let index = filled(keys);
        // Four threads with different hot keys move the same slots' heads back and
        // forth, each bringing the hint up after its own moves.
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let index = &index;
                s.spawn(move || read_hot(index, keys, 200_000, 10 + t));
            }
        });
        let (placed, entries) = check_entries(&index);
        assert!(
            placed > 100 && entries > 200,
            "{placed} heads, {entries} entries"
        );
    }
}

/// Shuttle's schedules of threads moving one slot's head (and with it its entries,
/// which take the items the head leaves) while others bring its hint up and one
/// removes and replaces the items they move to: whatever the interleaving, the hint
/// left is the head's and every entry is a live item.
#[cfg(all(test, feature = "shuttle"))]
mod model {
    use std::sync::Arc;

    use crate::{Config, HotRing, HotspotStrategy};

    /// One slot; random movement with every access counted moves the head to each cold
    /// item read.
    fn one_slot() -> Arc<HotRing> {
        Arc::new(HotRing::with_config(Config {
            strategy: HotspotStrategy::Random,
            initial_depth: 0,
            max_ring_len: None,
            split_cost: None,
            shared_split_len: None,
            sample_period: 1,
        }))
    }

    fn scenario() {
        let index = one_slot();
        for k in [b"a", b"b", b"c", b"d"] {
            index.insert(k, b"v");
        }
        let readers: Vec<_> = [[b"a", b"c"], [b"d", b"b"]]
            .into_iter()
            .map(|keys| {
                let index = index.clone();
                shuttle::thread::spawn(move || {
                    for k in keys.iter().cycle().take(4) {
                        // "b" may be gone; "c" is replaced, never absent.
                        let found = index.get(*k).is_some();
                        assert!(found || *k == b"b", "{k:?} lost");
                    }
                })
            })
            .collect();
        let writer = {
            let index = index.clone();
            shuttle::thread::spawn(move || {
                assert!(index.remove(b"b"));
                assert!(index.update(b"c", b"a value past eight bytes"));
            })
        };
        for t in readers.into_iter().chain([writer]) {
            t.join().unwrap();
        }
        super::tests::check_entries(&index);
        assert_eq!(index.get(b"b"), None);
        assert_eq!(
            index.get(b"c").as_deref(),
            Some(&b"a value past eight bytes"[..])
        );
        assert_eq!(index.len(), 3);
    }

    /// The narrow races of the handshake: the first entry taking the item the head
    /// leaves ("b"), and the second taking what the first held ("a"), while `victim`
    /// is removed.
    fn entry_races_removal(victim: &'static [u8]) {
        let index = one_slot();
        for k in [b"a", b"b", b"c"] {
            index.insert(k, b"v");
        }
        // The first read places the head at the slot's first item, "a"; the second moves
        // it to "b", leaving "a" to the first entry. The reader's read of "c" moves it
        // on, leaving "b" to the first entry and moving "a" to the second.
        index.get(b"b");
        index.get(b"b");
        let reader = {
            let index = index.clone();
            shuttle::thread::spawn(move || assert!(index.get(b"c").is_some()))
        };
        let remover = {
            let index = index.clone();
            shuttle::thread::spawn(move || assert!(index.remove(victim)))
        };
        reader.join().unwrap();
        remover.join().unwrap();
        super::tests::check_entries(&index);
        assert_eq!(index.get(victim), None);
    }

    #[test]
    fn entries_left_by_racing_moves_and_removals_are_right_in_every_schedule() {
        shuttle::check_random(scenario, 3000);
        shuttle::check_pct(scenario, 3000, 3);
        for victim in [&b"b"[..], b"a"] {
            shuttle::check_random(move || entry_races_removal(victim), 3000);
            shuttle::check_pct(move || entry_races_removal(victim), 3000, 3);
        }
    }
}
