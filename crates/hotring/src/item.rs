//! Items: one allocation holding the header, the key bytes and, for values longer
//! than 8 bytes, the value bytes. Values of at most 8 bytes live in `value_word`
//! and are rewritten in place; longer values are immutable and replaced by RCU.

use std::alloc::{self, Layout};
use std::cmp::Ordering as CmpOrdering;
use std::ptr::NonNull;

use crossbeam_epoch::Guard;

use crate::link::{Link, ADDRESS_BITS};
use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// Values of this many bytes or fewer are stored inline and updated in place.
pub const INLINE_VALUE_MAX: usize = 8;

/// The low bits of an item's hash word are its access clock (see
/// [`HotRing::set_clock`](crate::HotRing::set_clock)): the time of its last access in
/// the caller's units, modulo 2^24 (194 days of seconds, as Redis's LRU clock). The
/// ring order and the directory use the high 40 bits, which no ring outgrows
/// (`MAX_DEPTH`); keys that agree in them are ordered by their bytes.
pub(crate) const CLOCK_BITS: u32 = 24;
pub(crate) const CLOCK_MASK: u64 = (1 << CLOCK_BITS) - 1;

/// A key's hash as the index orders and places it.
#[inline]
pub(crate) fn ring_hash(key: &[u8]) -> u64 {
    crate::hash::hash64(key) & !CLOCK_MASK
}

#[repr(C)]
pub(crate) struct Item {
    pub(crate) next: AtomicPtr<Item>,
    /// The hash (high bits) and the access clock (`CLOCK_MASK`). The hash never changes;
    /// the clock is a hint that any reader may overwrite, so it is std's atomic even
    /// in the shuttle build, where each access of shuttle's is a scheduling point.
    hash_and_clock: std::sync::atomic::AtomicU64,
    /// Inline value bytes (little-endian packed) when `value_len <= 8`.
    pub(crate) value_word: AtomicU64,
    key_len: u32,
    value_len: u32,
}

const HEADER: usize = std::mem::size_of::<Item>();

/// A pointer to a live item. It carries the provenance of the whole allocation, so the
/// trailing key and value bytes may be read through it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct ItemPtr(NonNull<Item>);

fn layout(key_len: usize, value_len: usize) -> Layout {
    let trailing = key_len
        + if value_len > INLINE_VALUE_MAX {
            value_len
        } else {
            0
        };
    Layout::from_size_align(HEADER + trailing, std::mem::align_of::<Item>())
        .expect("item layout overflows isize")
}

pub(crate) fn pack_inline(value: &[u8]) -> u64 {
    debug_assert!(value.len() <= INLINE_VALUE_MAX);
    let mut b = [0u8; 8];
    b[..value.len()].copy_from_slice(value);
    u64::from_le_bytes(b)
}

/// How many bytes of retired items a thread may hold back. The collector keeps a
/// thread's deferred frees in a local bag of 64 until it fills: a thread that deleted
/// 64 values of 100 KB and went quiet would hold 6.4 MB that `maxmemory` counts and no
/// eviction can free. And it runs itself only on every 128th outer pin, freeing a few
/// bags each time: a caller that pins once per batch of writes would retire items
/// faster than that frees them.
const RETIRED_BYTES_HELD: usize = 16 * 1024;

std::thread_local! {
    /// Bytes this thread retired (items, and what callers count with
    /// [`count_retired`]) since it last handed its deferred frees to the collector's
    /// global queue.
    static RETIRED_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` of memory just deferred to `guard`'s collector (crossbeam-epoch's
/// default one, which the index's items go to), and past 16 KB since
/// the last time hands the thread's bag to the global queue and runs the collector:
/// the rule the index keeps for its items, for memory of the caller's own that waits
/// in the same bag (the server's collection nodes).
pub fn count_retired(bytes: usize, guard: &Guard) {
    let held = RETIRED_BYTES.with(|held| {
        let now = held.get() + bytes;
        held.set(if now >= RETIRED_BYTES_HELD { 0 } else { now });
        now
    });
    if held >= RETIRED_BYTES_HELD {
        guard.flush();
    }
}

impl ItemPtr {
    /// Allocates an item whose `next` is `next`. The caller owns it until it is published.
    /// `hash` as [`ring_hash`] gives it; the item's clock starts at `clock`.
    pub(crate) fn alloc(hash: u64, clock: u32, key: &[u8], value: &[u8], next: Link) -> ItemPtr {
        debug_assert_eq!(hash & CLOCK_MASK, 0, "a ring hash has no clock bits");
        let key_len = u32::try_from(key.len()).expect("key longer than 4 GiB");
        let value_len = u32::try_from(value.len()).expect("value longer than 4 GiB");
        let layout = layout(key.len(), value.len());
        // SAFETY: the layout has non-zero size (the header alone is 32 bytes).
        let raw = unsafe { alloc::alloc(layout) } as *mut Item;
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        assert!(
            raw.addr() >> ADDRESS_BITS == 0,
            "allocator returned an address above 2^48; the packed pointers cannot hold it"
        );
        crate::stats::count_allocation(1);
        let inline = if value.len() <= INLINE_VALUE_MAX {
            pack_inline(value)
        } else {
            0
        };
        // SAFETY: `raw` is a fresh allocation of `layout`, which holds the header followed
        // by `key.len()` bytes and, for long values, `value.len()` bytes. Nothing else can
        // see it yet, so plain writes are race-free.
        unsafe {
            raw.write(Item {
                next: AtomicPtr::new(next.0),
                hash_and_clock: std::sync::atomic::AtomicU64::new(
                    hash | (u64::from(clock) & CLOCK_MASK),
                ),
                value_word: AtomicU64::new(inline),
                key_len,
                value_len,
            });
            let bytes = (raw as *mut u8).add(HEADER);
            std::ptr::copy_nonoverlapping(key.as_ptr(), bytes, key.len());
            if value.len() > INLINE_VALUE_MAX {
                std::ptr::copy_nonoverlapping(value.as_ptr(), bytes.add(key.len()), value.len());
            }
        }
        ItemPtr(ptr)
    }

    /// A rehash item (ring sentinel): no key, no value, `REHASH` set for life.
    pub(crate) fn alloc_sentinel(hash: u64, next: *mut Item) -> ItemPtr {
        Self::alloc(hash, 0, &[], &[], Link::to(next, Link::REHASH))
    }

    /// Frees the item.
    ///
    /// # Safety
    /// The item must be unreachable by every thread: unpublished, or retired through the
    /// epoch collector whose grace period has passed, or the index is being dropped.
    pub(crate) unsafe fn free(self) {
        // SAFETY: the caller guarantees exclusive access; the header is initialised and
        // its lengths give back the layout it was allocated with.
        unsafe {
            let it = self.0.as_ptr();
            let layout = layout((*it).key_len as usize, (*it).value_len as usize);
            std::ptr::drop_in_place(it);
            alloc::dealloc(it as *mut u8, layout);
        }
        crate::stats::count_allocation(-1);
    }

    /// Hands the item to the epoch collector, to be freed once every thread pinned now
    /// has unpinned. A thread's retired items wait in its own bag until it fills (64
    /// items), and only the global queue is ever freed, so past [`RETIRED_BYTES_HELD`]
    /// the bag is handed over at once, and the collector run.
    ///
    /// # Safety
    /// The item must be unreachable for threads that pin from now on (unlinked, and no
    /// head or other word pointing at it), and retired exactly once.
    pub(crate) unsafe fn retire(self, guard: &Guard) {
        let bytes = self.footprint();
        // SAFETY: the caller guarantees it is unreachable for later pins; threads that
        // read it earlier are pinned, and the collector frees it only after they unpin.
        unsafe { guard.defer_unchecked(move || self.free()) };
        count_retired(bytes, guard);
    }

    /// # Safety
    /// `p` must be null or point to an item that stays allocated for the caller's use
    /// (it was read from the index while the caller's epoch guard is pinned).
    #[inline]
    pub(crate) unsafe fn from_raw(p: *mut Item) -> Option<ItemPtr> {
        NonNull::new(p).map(ItemPtr)
    }

    #[inline]
    pub(crate) fn as_raw(self) -> *mut Item {
        self.0.as_ptr()
    }

    #[inline]
    pub(crate) fn header(&self) -> &Item {
        // SAFETY: an `ItemPtr` is only made from a live allocation (fresh, or read under a
        // pinned epoch guard that keeps it from being freed), and the header is never
        // mutated except through its atomics.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    pub(crate) fn next(&self) -> &AtomicPtr<Item> {
        &self.header().next
    }

    /// The `next` word, borrowed for as long as the epoch guard that protects the item.
    #[inline]
    pub(crate) fn next_in(self, _guard: &crossbeam_epoch::Guard) -> &AtomicPtr<Item> {
        // SAFETY: the item was read under `_guard` (or is owned by the caller), so it is
        // not freed before the guard unpins.
        unsafe { &(*self.0.as_ptr()).next }
    }

    #[inline]
    pub(crate) fn load_next(&self) -> Link {
        Link(self.next().load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn hash(&self) -> u64 {
        self.header().hash_and_clock.load(Ordering::Relaxed) & !CLOCK_MASK
    }

    /// The access clock at the item's last stamped access.
    #[inline]
    pub(crate) fn clock(&self) -> u32 {
        (self.header().hash_and_clock.load(Ordering::Relaxed) & CLOCK_MASK) as u32
    }

    /// Records an access at `clock`. Written only when the clock moved since the last
    /// one, so a hot item's cache line is not rewritten by every read of it.
    #[inline]
    pub(crate) fn stamp(&self, clock: u32) {
        let word = &self.header().hash_and_clock;
        let current = word.load(Ordering::Relaxed);
        let clock = u64::from(clock) & CLOCK_MASK;
        if current & CLOCK_MASK != clock {
            // Racing stamps all write the same hash bits and a recent clock.
            word.store((current & !CLOCK_MASK) | clock, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(crate) fn is_sentinel(&self) -> bool {
        self.load_next().has(Link::REHASH)
    }

    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        let len = self.header().key_len as usize;
        // SAFETY: the allocation holds `key_len` initialised bytes right after the header,
        // written before publication and never changed; the pointer's provenance covers
        // the whole allocation (it came from `alloc` and was only ever re-addressed).
        unsafe { std::slice::from_raw_parts((self.0.as_ptr() as *const u8).add(HEADER), len) }
    }

    #[inline]
    pub(crate) fn value_len(&self) -> usize {
        self.header().value_len as usize
    }

    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        self.value_len() <= INLINE_VALUE_MAX
    }

    /// Calls `f` with the current value.
    #[inline]
    pub(crate) fn with_value<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let len = self.value_len();
        if len <= INLINE_VALUE_MAX {
            let bytes = self
                .header()
                .value_word
                .load(Ordering::Acquire)
                .to_le_bytes();
            f(&bytes[..len])
        } else {
            // SAFETY: the item is alive for this call: callers reach items under an
            // epoch guard that they hold across it.
            f(unsafe { self.long_value() })
        }
    }

    /// The value of a long (not inline) item, for as long as the caller keeps the item
    /// alive.
    ///
    /// # Safety
    /// The item must not be freed during `'g`: the caller holds, for `'g`, an epoch
    /// guard under which it reached the item.
    pub(crate) unsafe fn long_value<'g>(&self) -> &'g [u8] {
        let len = self.value_len();
        assert!(len > INLINE_VALUE_MAX, "an inline value changes in place");
        let key_len = self.header().key_len as usize;
        // SAFETY: long values are written once before publication right after the key
        // and never change; provenance as in `key`; the caller keeps the allocation
        // alive for `'g`.
        unsafe {
            std::slice::from_raw_parts((self.0.as_ptr() as *const u8).add(HEADER + key_len), len)
        }
    }

    /// Ring order: by hash, a rehash item before the data items of its hash, then key.
    /// `key: None` stands for the rehash item of `hash`.
    #[inline]
    pub(crate) fn cmp_to(&self, hash: u64, key: Option<&[u8]>) -> CmpOrdering {
        self.cmp_linked(self.load_next(), hash, key)
    }

    /// [`ItemPtr::cmp_to`] with the item's `next` word, `link`, already read: a walk
    /// reads it once per item for the order, the removal mark and the successor.
    #[inline]
    pub(crate) fn cmp_linked(&self, link: Link, hash: u64, key: Option<&[u8]>) -> CmpOrdering {
        match self.hash().cmp(&hash) {
            CmpOrdering::Equal => match (link.has(Link::REHASH), key) {
                (true, None) => CmpOrdering::Equal,
                (true, Some(_)) => CmpOrdering::Less,
                (false, None) => CmpOrdering::Greater,
                (false, Some(k)) => cmp_keys(self.key(), k),
            },
            o => o,
        }
    }

    /// Atomically replaces the `next` word with `f(current)` until it sticks or `f`
    /// declines; returns the word that was replaced, or the one `f` declined.
    #[inline]
    pub(crate) fn update_next(
        &self,
        mut f: impl FnMut(Link) -> Option<Link>,
    ) -> Result<Link, Link> {
        let mut cur = self.load_next();
        loop {
            let Some(new) = f(cur) else { return Err(cur) };
            match self.next().compare_exchange_weak(
                cur.0,
                new.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(cur),
                Err(actual) => cur = Link(actual),
            }
        }
    }

    /// Adds one to the access counter unless it has reached `cap`; returns the word
    /// before, or `Err` (and writes nothing) at the cap.
    #[inline]
    pub(crate) fn count_up(&self, cap: u16) -> Result<Link, Link> {
        self.update_next(|l| (l.counter() < cap).then(|| l.with_counter(l.counter() + 1)))
    }

    /// Takes one from the access counter unless it is zero; returns the word before.
    #[inline]
    pub(crate) fn count_down(&self) -> Result<Link, Link> {
        self.update_next(|l| (l.counter() > 0).then(|| l.with_counter(l.counter() - 1)))
    }

    /// Sets the access counter to zero; returns the word before, or `Err` if it was.
    #[inline]
    pub(crate) fn clear_count(&self) -> Result<Link, Link> {
        self.update_next(|l| (l.counter() != 0).then(|| l.with_counter(0)))
    }

    /// Takes the item's write slot (`WRITING`) so no one can remove it until
    /// `end_write`. Fails if the item is already being removed. A competing writer holds
    /// the slot for a single store, so the wait is bounded.
    pub(crate) fn begin_write(&self) -> bool {
        loop {
            let l = self.load_next();
            if l.has(Link::OCCUPIED) {
                return false;
            }
            if l.has(Link::WRITING) {
                crate::sync::spin();
                continue;
            }
            if self
                .next()
                .compare_exchange_weak(
                    l.0,
                    l.with(Link::WRITING).0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return true;
            }
        }
    }

    pub(crate) fn end_write(&self) {
        let released = self.update_next(|l| Some(l.without(Link::WRITING)));
        debug_assert!(released.is_ok_and(|l| l.has(Link::WRITING)));
    }

    /// Rewrites an inline value of the same length in place. Fails if the item is being
    /// removed, in which case the caller retries on whatever replaced it.
    pub(crate) fn write_in_place(&self, value: &[u8]) -> bool {
        debug_assert!(self.is_inline() && value.len() == self.value_len());
        if !self.begin_write() {
            return false;
        }
        self.write_held(value);
        true
    }

    /// Stores an inline value of the same length while the caller holds the write slot
    /// (`begin_write`), and lets the slot go.
    pub(crate) fn write_held(&self, value: &[u8]) {
        debug_assert!(self.is_inline() && value.len() == self.value_len());
        debug_assert!(self.load_next().has(Link::WRITING));
        self.header()
            .value_word
            .store(pack_inline(value), Ordering::Release);
        self.end_write();
    }

    /// Ends a write slot taken with `begin_write` by marking the item removed, so no
    /// write can come between what the holder checked and the removal. Returns the
    /// frozen word.
    pub(crate) fn remove_while_writing(&self) -> Link {
        let old = self
            .update_next(|l| Some(l.without(Link::WRITING).with(Link::OCCUPIED)))
            .expect("an unconditional update always applies");
        debug_assert!(old.has(Link::WRITING) && !old.has(Link::OCCUPIED));
        old.without(Link::WRITING).with(Link::OCCUPIED)
    }

    /// Sets `OCCUPIED`, freezing `next`: the item is logically gone from this moment.
    /// Waits out an in-flight in-place write. Returns the frozen word, or `None` if
    /// another thread removed or replaced the item first.
    pub(crate) fn mark_removed(&self) -> Option<Link> {
        loop {
            let l = self.load_next();
            if l.has(Link::OCCUPIED) {
                return None;
            }
            if l.has(Link::WRITING) {
                crate::sync::spin();
                continue;
            }
            let marked = l.with(Link::OCCUPIED);
            if self
                .next()
                .compare_exchange_weak(l.0, marked.0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(marked);
            }
        }
    }

    /// Bytes this item's allocation takes (before allocator rounding).
    pub(crate) fn footprint(&self) -> usize {
        layout(self.header().key_len as usize, self.value_len()).size()
    }
}

/// Lexicographic order, with the common 8-byte key compared as one big-endian word
/// instead of a call to `memcmp`.
#[inline]
fn cmp_keys(a: &[u8], b: &[u8]) -> CmpOrdering {
    match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        (Ok(x), Ok(y)) => u64::from_be_bytes(x).cmp(&u64::from_be_bytes(y)),
        _ => a.cmp(b),
    }
}

// SAFETY: an ItemPtr is a shared reference to an item whose mutable state is atomics
// only; reclamation is governed by the epoch protocol, not by ownership of the pointer.
unsafe impl Send for ItemPtr {}
// SAFETY: as above.
unsafe impl Sync for ItemPtr {}
