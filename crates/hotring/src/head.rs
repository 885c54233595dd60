//! Head pointers: hotspot detection (seed 000 section 3.2), head moves, hotspot
//! inheritance, and the reclamation handshake that keeps a head from ever pointing at
//! a freed item.
//!
//! Beyond the seed, each slot has two more entries (`directory.rs`): a lookup of a key
//! at or past one starts at the nearest rather than at the head or the rehash item. A
//! sampling round places them, one after the other, where beside the head it chose
//! and the entry placed before they shorten the walks most (`best_entry`); random
//! movement, and a round's guess, leave the first the item the head moved off and
//! move what it held to the second. With one entry, the accesses that miss the head
//! walk its cold neighbours, each a cache miss: at zipf 0.99 and 8 keys a ring a
//! second entry took items per read from 1.69 to 1.37 (BENCHMARKS.md, session 90).
//! Entries follow the same handshake as heads, below, and inherit as heads do.
//!
//! The hazard: a head move reads item X, then stores X into a slot's head. If X is
//! removed and reclaimed between the read and the store, the head would dangle for
//! every reader that pins afterwards, which the epoch collector does not protect. So
//! every store of a data item into a head follows this protocol:
//!
//! 1. *Pin*: set `PINNED` in X's `next`, only if X is not `OCCUPIED` (not removed).
//! 2. Store X into the head (CAS).
//! 3. *Unpin*: clear `PINNED` if X is still unmarked. Otherwise X was removed meanwhile:
//!    first take it out of the head, then clear `PINNED`; if its unlinker already set
//!    `UNLINKED`, the unlinker left the reclamation to us, so we retire X.
//!
//! The thread that unlinks X (exactly one CAS succeeds) moves the head and the entries
//! of the slot covering X off X, then sets `UNLINKED`; if it finds `PINNED`, the
//! pinner retires X instead. A pin fails once X is marked, so no entry can take X
//! after its unlinker checked the slot. Heads and entries only ever point into
//! their own slot's hash range, so one slot of the current directory is the only place
//! to check; the slots of a directory that a doubling replaced are read only by threads
//! pinned before the replacement, which the grace period covers. Rehash items are never
//! reclaimed and need no pin.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering as StdOrdering};

use crossbeam_epoch::Guard;

use crate::directory::{SlotRef, ENTRIES};
use crate::index::{HotRing, HotspotStrategy};
use crate::item::{Item, ItemPtr};
use crate::link::{Head, Link};
use crate::stats::{now_ms, HOT_SAMPLE_PERIOD};

thread_local! {
    /// Accesses made by this thread: every R-th one checks for a hotspot shift.
    static TICK: Cell<u32> = const { Cell::new(0) };
}

/// Shifts seen by any thread: each gets its own slot mark (see [`ShiftWatch`]).
static SHIFTS: AtomicU16 = AtomicU16::new(0);

/// Counted accesses per window of [`ShiftWatch`]: at ~20 ns an access, a window is
/// ~25 µs of one thread's work, and the standard deviation of a head-hit rate measured
/// over it is at most ~0.03 (at a rate of one half).
const SHIFT_WINDOW: u32 = 256;

/// A window whose head-hit rate falls this far below the thread's running rate, and
/// whose accesses visit `SHIFT_RISE` more items than the running mean, marks a hotspot
/// shift. The fall alone is five standard deviations of a window's rate, so a steady
/// load (a uniform one, whose rate is 0.27 at 8 keys a ring, included) never shows
/// one; the rise keeps out the falls that cost nothing (see [`ShiftWatch`]). A shift
/// at zipf 1.22 takes the mean from ~1.12 items to ~3 in the first window.
const SHIFT_DROP: f32 = 0.15;
const SHIFT_RISE: f32 = 0.5;

/// How long a thread follows a shift: it moves heads at once and counts every access,
/// not one in `sample_period`, so the rings that draw a few accesses a second reach
/// their triggers and rounds five times sooner. Counting each access costs about a
/// tenth of the throughput while it lasts, so the follow is short: with every access
/// counted, items per access are back within ~700 ms (BENCHMARKS.md, session 74).
const SHIFT_FOLLOW_MS: u64 = 700;

/// A thread's view of whether the hotspot of an index just moved. In a calm slot a cold
/// access starts a round only once one item has drawn `CALM_TRIGGER` counted accesses
/// and the head's lead has drained, ~15 of the ring's accesses; right after a hotspot
/// shift every ring's head is wrong at once, and the rings that draw a few accesses a
/// second held throughput back for 1-2 s after items per access were back
/// (BENCHMARKS.md, session 62). A shift shows as a sudden fall of the head-hit rate of
/// the thread's counted accesses, with a rise of the items they visit. The rate alone
/// misled: a ring whose best head is not its hottest key (a key at the ring's front is
/// reached from its rehash item as cheaply) flips its hit rate between rounds at the
/// same cost, and a steady load on a small index was taken for shifts in 15-28 of 40
/// seeded runs; judged by the cost alone, a window's few long walks passed for a shift
/// now and then (BENCHMARKS.md, session 75). For `SHIFT_FOLLOW_MS` after one, a cold
/// counted access in a calm slot moves the head to its item at once, as random movement
/// does, and later rounds settle the heads where the samples say. Once per slot and
/// shift: the move marks the slot with the shift's number, and a marked slot waits for
/// rounds as a calm one does. Moving on every cold access kept ~35,000 heads a tenth of
/// a second hopping between the cold items of rings with no one hot key, and throughput
/// 10-15% low until the follow ended (BENCHMARKS.md, session 72). A steady load never
/// follows, so its heads stay where the rounds put them; following for 2 s instead of 1
/// was slower to recover (BENCHMARKS.md, session 71). Counting one access in five while
/// following, items per access stayed 0.03-0.05 above their level before the shift for
/// seconds, and each 0.01 cost ~1.7% of the throughput (session 74).
///
/// Kept in the thread's stripe of the index's counters, so watching costs no shared
/// write but one per shift (its number), and a thread that serves two indexes (a
/// server's keys and their deadlines) judges each by its own accesses. Threads that
/// share a stripe (more than 64) may lose each other's updates: it is a heuristic, and
/// any state it reaches is a valid one. Std's atomics even in the shuttle build, as the
/// access clock, so watching adds no scheduling points.
#[derive(Default)]
pub(crate) struct ShiftWatch {
    /// Counted accesses in the current window, its head hits, and the items they
    /// visited.
    checks: AtomicU32,
    hits: AtomicU32,
    visits: AtomicU64,
    /// The running [`Window`] of past windows (`f32` bits), once `rated`.
    rate: AtomicU32,
    mean: AtomicU32,
    rated: AtomicBool,
    /// Whether the last window fell.
    falling: AtomicBool,
    /// `now_ms` until which the thread follows a shift.
    follow_until: AtomicU64,
    /// The number of the shift last followed.
    shift: AtomicU32,
    /// The slot mark of the shift followed as of the last window, 0 if none.
    mark: AtomicU32,
    /// Shifts followed, for the stats.
    shifts: AtomicU64,
}

impl ShiftWatch {
    /// The slot mark of the shift the thread follows, if it follows one.
    pub(crate) fn following(&self) -> Option<u16> {
        let mark = self.mark.load(StdOrdering::Relaxed) as u16;
        (mark != 0).then_some(mark)
    }

    pub(crate) fn shifts(&self) -> u64 {
        self.shifts.load(StdOrdering::Relaxed)
    }

    /// Notes one counted access: whether it `hit` the head, and the items it visited;
    /// the mark of the shift the thread follows, if any.
    pub(crate) fn note(&self, hit: bool, visits: u32) -> Option<u16> {
        let visits = u64::from(visits);
        let checks = self.checks.load(StdOrdering::Relaxed) + 1;
        let hits = self.hits.load(StdOrdering::Relaxed) + u32::from(hit);
        let sum = self.visits.load(StdOrdering::Relaxed) + visits;
        if checks < SHIFT_WINDOW {
            self.checks.store(checks, StdOrdering::Relaxed);
            self.hits.store(hits, StdOrdering::Relaxed);
            self.visits.store(sum, StdOrdering::Relaxed);
            return self.following();
        }
        self.checks.store(0, StdOrdering::Relaxed);
        self.hits.store(0, StdOrdering::Relaxed);
        self.visits.store(0, StdOrdering::Relaxed);
        let window = Window {
            rate: hits as f32 / SHIFT_WINDOW as f32,
            mean: sum as f32 / SHIFT_WINDOW as f32,
        };
        let now = now_ms();
        let running = self.rated.load(StdOrdering::Relaxed).then(|| Window {
            rate: f32::from_bits(self.rate.load(StdOrdering::Relaxed)),
            mean: f32::from_bits(self.mean.load(StdOrdering::Relaxed)),
        });
        let falling = running.is_some_and(|running| window.falls_from(&running));
        let mut follow_until = self.follow_until.load(StdOrdering::Relaxed);
        if falling {
            // A fall spans several windows: one shift, one number, also when a window
            // near the end of the fall does not fall and the next does again (while
            // the thread still follows). Numbered across threads and indexes, so a new
            // thread's first shift has a new mark.
            if !self.falling.load(StdOrdering::Relaxed) && now >= follow_until {
                let shift = SHIFTS.fetch_add(1, StdOrdering::Relaxed);
                self.shift.store(u32::from(shift), StdOrdering::Relaxed);
                self.shifts.fetch_add(1, StdOrdering::Relaxed);
            }
            follow_until = now + SHIFT_FOLLOW_MS;
            self.follow_until.store(follow_until, StdOrdering::Relaxed);
        }
        self.falling.store(falling, StdOrdering::Relaxed);
        // A load whose rate stays lower and cost higher (a thread that loaded keys,
        // then serves a uniform load) is the running one within ~10 windows, and is
        // followed for no longer than `SHIFT_FOLLOW_MS` after that.
        let running = running.map_or(window, |running| running.blend(&window));
        self.rate
            .store(running.rate.to_bits(), StdOrdering::Relaxed);
        self.mean
            .store(running.mean.to_bits(), StdOrdering::Relaxed);
        self.rated.store(true, StdOrdering::Relaxed);
        let mark = if now < follow_until {
            let shift = self.shift.load(StdOrdering::Relaxed) as u16;
            FOLLOWED + shift % (Head::TOTAL_MAX - FOLLOWED + 1)
        } else {
            0
        };
        self.mark.store(u32::from(mark), StdOrdering::Relaxed);
        self.following()
    }
}

/// What [`ShiftWatch`] measures of a window of counted accesses, or keeps as the
/// running value of past windows.
#[derive(Clone, Copy)]
struct Window {
    /// The share of accesses that hit the head.
    rate: f32,
    /// The mean of the items the accesses visited.
    mean: f32,
}

impl Window {
    /// Whether this window marks a shift against the `running` one: its head-hit
    /// rate fell by `SHIFT_DROP` and the items its accesses visited rose by
    /// `SHIFT_RISE` of the running mean.
    fn falls_from(&self, running: &Window) -> bool {
        self.rate < running.rate - SHIFT_DROP && self.mean > running.mean * (1.0 + SHIFT_RISE)
    }

    /// The running value after this window: nine parts of it to one of `window`.
    fn blend(&self, window: &Window) -> Window {
        let mix = |old: f32, new: f32| old * 0.9 + new * 0.1;
        Window {
            rate: mix(self.rate, window.rate),
            mean: mix(self.mean, window.mean),
        }
    }
}

/// The minimum number of accesses a sampling round collects. Seed 000 samples as many
/// accesses as the ring has items; a ring of two or three items would then decide from
/// two or three accesses, so we take at least this many.
const MIN_SAMPLES: u32 = 8;

/// A slot that has finished a sampling round is *calm*: its head reflects the recent
/// distribution, so a cold R-th access there only counts toward the item it reached,
/// and starts a new round once one item has drawn this many. Without it, a ring whose
/// head is already right but whose other items still draw accesses (any ring of a
/// uniform workload, and most rings of a skewed one) is sampled over and over for
/// nothing; an item that has become hot repeats within a few R-th accesses.
///
/// Meanwhile the head item's counter holds its *lead*, at most this much: an R-th
/// access that hits the head adds one, a cold one takes one away. While the head
/// leads, it draws more than the rest of the ring together, and an item reaching the
/// trigger starts over instead of starting a round. A lead this small drains within
/// as many cold accesses, so a hotspot that moved off the head is not held up.
const CALM_TRIGGER: u16 = 3;

/// A round that found no item drawing at least half of its samples leaves the slot
/// *flat* (no hotspot, as every ring of a uniform load): its next round waits for an
/// item to draw this many counted accesses instead. Re-sampling flat rings at the
/// calm rate cost a uniform load about a fifth of its throughput; a key that turns
/// hot still reaches this within a few hundred of its accesses.
const FLAT_TRIGGER: u16 = 12;

/// The head's `total` field between rounds: 0 before the slot's first round, then
/// whether the last round found a hotspot; from `FOLLOWED` on, a calm slot whose head
/// a thread following a shift moved or settled, the shift's number added.
const CALM: u16 = 1;
const FLAT: u16 = 2;
const FOLLOWED: u16 = 3;

fn is_calm(total: u16) -> bool {
    total == CALM || total >= FOLLOWED
}

impl HotRing {
    /// Records an access for hotspot detection. `counted` is the item whose counter
    /// the access charges: the item read or written in place, or the predecessor of an
    /// item updated by RCU. `hot` says the walk started on it. `hash` is the key's, for
    /// the hot-key tables.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn after_access(
        &self,
        slot: SlotRef<'_>,
        head: Head,
        counted: Option<ItemPtr>,
        hot: bool,
        visits: u32,
        hash: u64,
        guard: &Guard,
    ) {
        let tick = TICK.with(|t| {
            let n = t.get().wrapping_add(1);
            t.set(n);
            n
        });
        if counted.is_some() && tick.is_multiple_of(HOT_SAMPLE_PERIOD) {
            self.counters.mine().hot.record(hash);
        }
        if head.active() {
            if let Some(item) = counted {
                self.sample(slot, item, guard);
            }
        }
        if !tick.is_multiple_of(self.config.sample_period) {
            return;
        }
        let stripe = self.counters.mine();
        stripe.count_access(visits, hot);
        // Only sampling acts on a shift; the other strategies skip the watch.
        let following_shift = match self.config.strategy {
            HotspotStrategy::Sampling => stripe.shift_watch.note(hot, visits),
            _ => None,
        };
        if following_shift.is_some() {
            // Count the thread's next access too, by making its tick the next multiple
            // of R: no cost to an access when no shift is followed. The tick still
            // moves on (by R), so one access in 64 still goes to the hot-key table at
            // R = 5. A thread that serves two indexes counts both while it follows
            // either.
            TICK.with(|t| t.set(tick.wrapping_add(self.config.sample_period - 1)));
        }
        if hot {
            if is_calm(head.total()) && !head.active() {
                if let Some(item) = counted {
                    // The head's lead (see CALM_TRIGGER); no write once it is full.
                    let _ = item.count_up(CALM_TRIGGER);
                }
            }
            return;
        }
        if head.active() {
            return;
        }
        let Some(item) = counted else { return };
        match self.config.strategy {
            HotspotStrategy::FixedHead => {}
            HotspotStrategy::Random => {
                if item.as_raw() != head.target() && self.try_install_head(slot, head, item, guard)
                {
                    stripe.head_moves.fetch_add(1, StdOrdering::Relaxed);
                    self.keep_as_entry(slot, head, guard);
                }
            }
            HotspotStrategy::Sampling => {
                // When not sampling, the head's counter field says what the last round found.
                let total = head.total();
                if let Some(mark) = following_shift {
                    // A guess while heads are wrong everywhere. Not in a flat slot: a
                    // thread that follows a fall of its rate to a uniform load's moved
                    // heads around its flat rings for nothing (items per read 3.25-3.29
                    // -> 3.34-3.47, BENCHMARKS.md, session 71).
                    if is_calm(total) && total != mark {
                        if self.try_install_head(slot, head, item, guard) {
                            stripe.head_moves.fetch_add(1, StdOrdering::Relaxed);
                            let moved = head.retarget(item.as_raw());
                            let _ = slot.cas_head(moved, moved.with_sampling(false, mark));
                        }
                        return;
                    }
                }
                let trigger = match total {
                    0 => None,
                    FLAT => Some(FLAT_TRIGGER),
                    _ => Some(CALM_TRIGGER),
                };
                if let Some(trigger) = trigger {
                    let reached = item
                        .count_up(Link::COUNTER_MAX)
                        .is_ok_and(|l| l.counter() + 1 >= trigger);
                    let head_leads = is_calm(total) && self.take_lead(head, item, guard);
                    if !reached {
                        return;
                    }
                    if head_leads {
                        // A round would only confirm the head, after a guess that sends
                        // its accesses past a cold item until the round ends.
                        let _ = item.clear_count();
                        return;
                    }
                }
                if slot.items.load(crate::sync::Ordering::Relaxed) <= 1 {
                    // One item: nothing to weigh, it is the head.
                    if self.try_install_head(slot, head, item, guard) {
                        stripe.head_moves.fetch_add(1, StdOrdering::Relaxed);
                    }
                } else {
                    // Guess as random movement would, so a shifted hotspot is served at
                    // once; the round then settles where the samples say.
                    let head = if self.try_install_head(slot, head, item, guard) {
                        stripe.head_moves.fetch_add(1, StdOrdering::Relaxed);
                        self.keep_as_entry(slot, head, guard);
                        head.retarget(item.as_raw())
                    } else {
                        head
                    };
                    let _ = slot.cas_head(head, head.with_sampling(true, 0));
                }
            }
        }
    }

    /// A cold access to `item` in a calm slot takes one from the head's lead (see
    /// `CALM_TRIGGER`); whether the head still leads after it.
    fn take_lead(&self, head: Head, item: ItemPtr, guard: &Guard) -> bool {
        let current = self
            .item(head.target(), guard)
            .expect("a head is never null");
        current != item && current.count_down().is_ok_and(|l| l.counter() > 1)
    }

    /// Counts one sampled access; the access that completes the round adjusts the head.
    fn sample(&self, slot: SlotRef<'_>, item: ItemPtr, guard: &Guard) {
        let _ = item.count_up(Link::COUNTER_MAX);
        let target = slot
            .items
            .load(crate::sync::Ordering::Relaxed)
            .clamp(MIN_SAMPLES, Head::TOTAL_MAX as u32);
        let mut head = slot.load_head();
        while head.active() {
            let total = head.total() + 1;
            match slot.cas_head(head, head.with_sampling(true, total)) {
                Ok(_) => {
                    if total as u32 >= target {
                        self.adjust(slot, guard);
                    }
                    return;
                }
                Err(now) => head = now,
            }
        }
    }

    /// Ends a sampling round: computes, for every candidate head t, the expected number
    /// of items an access walks past, and moves the head to the minimum. Runs in the one
    /// thread whose CAS turned `Active` off.
    ///
    /// Seed 000's rings are circular, so an item before the head costs its distance
    /// around the ring, `W_t = sum_i n_i/N * ((i - t) mod k)`. Here a lookup that finds
    /// the head past its key starts again at the ring's rehash item and walks the items
    /// of the slots before this one too: item i < t costs `base + i + 1`, where `base`
    /// is what lies between the rehash item and the slot's first item (0 for a ring's
    /// first slot, where the rehash item is a candidate itself).
    fn adjust(&self, slot: SlotRef<'_>, guard: &Guard) {
        let mut head = slot.load_head();
        loop {
            if !head.active() {
                return;
            }
            match slot.cas_head(head, head.with_sampling(false, 0)) {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        let stripe = self.counters.mine();
        stripe.sample_rounds.fetch_add(1, StdOrdering::Relaxed);
        // The slot's items in ring order. The ring's rehash item is a candidate too when
        // it starts this slot's range (RCU updates of the first item charge it).
        let mut ring_items: Vec<(ItemPtr, u64)> = Vec::new();
        let mut base = 0u64;
        let sentinel = slot.sentinel();
        let mut cur = Some(sentinel);
        while let Some(item) = cur {
            if item != sentinel && item.is_sentinel() {
                break;
            }
            let candidate = slot.covers(item.hash());
            base += u64::from(ring_items.is_empty() && !candidate);
            if let Ok(old) = item.clear_count() {
                if candidate && !old.has(Link::OCCUPIED) {
                    ring_items.push((item, old.counter() as u64));
                }
            } else if candidate && !item.load_next().has(Link::OCCUPIED) {
                ring_items.push((item, 0));
            }
            cur = self.item(item.load_next().target(), guard);
        }
        let k = ring_items.len() as u64;
        let total: u64 = ring_items.iter().map(|(_, n)| n).sum();
        if k < 2 || total == 0 {
            return;
        }
        let hottest = ring_items.iter().map(|(_, n)| *n).max().unwrap_or(0);
        let found = if hottest * 2 < total {
            FLAT
        } else {
            // A round that settles a slot while its thread follows a shift leaves it
            // marked, or the next cold access would move its head again.
            stripe.shift_watch.following().unwrap_or(CALM)
        };
        // W_0 = sum i*n_i; moving the head from t to t+1 brings the items past t one step
        // closer and makes item t one reached by starting again:
        // W_{t+1} = W_t - (sum_{i>t} n_i) + n_t (base + t + 1).
        let mut w: u64 = ring_items
            .iter()
            .enumerate()
            .map(|(i, (_, n))| i as u64 * n)
            .sum();
        let (mut best, mut best_w) = (0usize, w);
        let mut past = total;
        for (t, (_, n)) in ring_items.iter().enumerate().take(ring_items.len() - 1) {
            past -= n;
            w = w + n * (base + t as u64 + 1) - past;
            if w < best_w {
                (best, best_w) = (t + 1, w);
            }
        }
        let cost = 1.0 + best_w as f64 / total as f64;
        let chosen = ring_items[best].0;
        let head = slot.load_head();
        if chosen.as_raw() != head.target() && self.try_install_head(slot, head, chosen, guard) {
            stripe.head_moves.fetch_add(1, StdOrdering::Relaxed);
        }
        let counts: Vec<u64> = ring_items.iter().map(|(_, n)| *n).collect();
        // The rehash item may be the head, never an entry.
        let first = usize::from(ring_items[0].0.is_sentinel());
        let mut taken = vec![best];
        for e in 0..ENTRIES {
            let place = best_entry(&counts, &taken, base, first);
            taken.extend(place);
            let word = slot.load_entry(e);
            match place.map(|p| ring_items[p].0) {
                Some(item) if !SlotRef::entry_is(word, item) => {
                    let _ = self.try_install_entry(slot, e, word, item, guard);
                }
                None if !word.is_null() => {
                    let _ = slot.cas_entry(e, word, None);
                }
                _ => {}
            }
        }
        let head = slot.load_head();
        if !head.active() {
            let _ = slot.cas_head(head, head.with_sampling(false, found));
        }
        if let (Some(limit), Some(max)) = (self.config.split_cost, self.config.max_ring_len) {
            let min_len = (max / 2).max(2) + 1;
            if cost > limit && k >= min_len as u64 {
                self.split(slot, min_len, false, guard);
            }
        }
    }

    /// Moves `slot`'s head from `expected` to `to`. Fails if the head changed or `to`
    /// is being removed.
    pub(crate) fn try_install_head(
        &self,
        slot: SlotRef<'_>,
        expected: Head,
        to: ItemPtr,
        guard: &Guard,
    ) -> bool {
        if to.is_sentinel() {
            let moved = slot
                .cas_head(expected, expected.retarget(to.as_raw()))
                .is_ok();
            if moved {
                self.note_head_moved(slot, guard);
            }
            return moved;
        }
        // Reclamation relies on a head never leaving its slot's range (see the top of
        // this file); an RCU update charges a predecessor that may lie outside it.
        if !slot.covers(to.hash()) {
            return false;
        }
        if !pin(to) {
            return false;
        }
        let moved = slot
            .cas_head(expected, expected.retarget(to.as_raw()))
            .is_ok();
        if moved {
            self.note_head_moved(slot, guard);
        }
        self.unpin(slot, to, guard);
        moved
    }

    /// Brings `slot`'s head hint (`directory.rs`) up to its head after a move, again
    /// for as long as the head moved meanwhile: the last thread to move a head leaves
    /// the hint of where it is. A hint that lags only lengthens lookups.
    pub(crate) fn note_head_moved(&self, slot: SlotRef<'_>, guard: &Guard) {
        loop {
            let head = slot.load_head();
            let item = self
                .item(head.target(), guard)
                .expect("a ring head is never null");
            slot.set_hint_for(item);
            if slot.load_head().target() == head.target() {
                return;
            }
        }
    }

    /// Releases a pin taken by `pin`; `slot` is the one whose head the pinner may have
    /// set to `item`.
    pub(crate) fn unpin(&self, slot: SlotRef<'_>, item: ItemPtr, guard: &Guard) {
        let released =
            item.update_next(|l| (!l.has(Link::OCCUPIED)).then(|| l.without(Link::PINNED)));
        if released.is_ok() {
            return;
        }
        // Removed while pinned: our head or entry store may have come after its
        // unlinker looked.
        self.move_head_off(slot, item, false, guard);
        self.move_entries_off(slot, item, false, guard);
        let old = item
            .update_next(|l| Some(l.without(Link::PINNED)))
            .expect("an unconditional update always applies");
        debug_assert!(old.has(Link::PINNED));
        if old.has(Link::UNLINKED) {
            self.retire(item, guard);
        }
    }

    /// Called by the one thread whose CAS unlinked the marked `item`.
    pub(crate) fn reclaim_unlinked(&self, item: ItemPtr, guard: &Guard) {
        // A head only ever points into its own slot's range, so this is the one slot of
        // the current directory that can hold the item.
        let slot = self.slot_for(item.hash(), guard);
        self.move_head_off(slot, item, true, guard);
        self.move_entries_off(slot, item, true, guard);
        let old = item
            .update_next(|l| Some(l.with(Link::UNLINKED)))
            .expect("an unconditional update always applies");
        debug_assert!(old.has(Link::OCCUPIED) && !old.has(Link::UNLINKED));
        if !old.has(Link::PINNED) {
            self.retire(item, guard);
        }
    }

    /// Makes sure `slot`'s head no longer points at the removed `item`. With `inherit`,
    /// the head goes to the item's successor, which for an RCU update is the new
    /// version and for a delete the next item (hotspot inheritance, seed 000 section
    /// 3.2.3); otherwise, and whenever that fails, to the ring's rehash item.
    fn move_head_off(&self, slot: SlotRef<'_>, item: ItemPtr, inherit: bool, guard: &Guard) {
        loop {
            let head = slot.load_head();
            if head.target() != item.as_raw() {
                return;
            }
            let successor = self
                .item(item.load_next().target(), guard)
                .filter(|s| inherit && !s.is_sentinel() && slot.covers(s.hash()));
            if let Some(s) = successor {
                if self.try_install_head(slot, head, s, guard) {
                    return;
                }
            }
            if slot
                .cas_head(head, head.retarget(slot.sentinel().as_raw()))
                .is_ok()
            {
                self.note_head_moved(slot, guard);
            }
        }
    }

    /// After a move of `slot`'s head off `left`, makes the item it left the first entry
    /// (it was hot a moment ago) and moves what the first entry held to the second.
    fn keep_as_entry(&self, slot: SlotRef<'_>, left: Head, guard: &Guard) {
        let item = self
            .item(left.target(), guard)
            .expect("a head is never null");
        let first = slot.load_entry(0);
        if SlotRef::entry_is(first, item) || !self.try_install_entry(slot, 0, first, item, guard) {
            return;
        }
        if let Some(older) = self.item(SlotRef::entry_target(first), guard) {
            let second = slot.load_entry(1);
            if !SlotRef::entry_is(second, older) {
                let _ = self.try_install_entry(slot, 1, second, older, guard);
            }
        }
    }

    /// Makes sure no entry word of `slot` points at the removed `item`: with `inherit`,
    /// the item's successor takes its place as the head's does (for an RCU update, the
    /// new version); otherwise, and whenever that fails, the word is cleared.
    fn move_entries_off(&self, slot: SlotRef<'_>, item: ItemPtr, inherit: bool, guard: &Guard) {
        for e in 0..ENTRIES {
            loop {
                let word = slot.load_entry(e);
                if !SlotRef::entry_is(word, item) {
                    break;
                }
                if inherit {
                    let successor = self.item(item.load_next().target(), guard);
                    if successor.is_some_and(|s| self.try_install_entry(slot, e, word, s, guard)) {
                        break;
                    }
                }
                if slot.cas_entry(e, word, None) {
                    break;
                }
            }
        }
    }

    /// Sets `slot`'s entry word `e` from `expected` to `to`, under the pin of the
    /// handshake at the top of this file, as a head move. Fails if the word changed,
    /// `to` is being removed or is pinned, or it lies outside the slot's range.
    pub(crate) fn try_install_entry(
        &self,
        slot: SlotRef<'_>,
        e: usize,
        expected: *mut Item,
        to: ItemPtr,
        guard: &Guard,
    ) -> bool {
        // Reclamation looks for an item's entries in its own slot only.
        if to.is_sentinel() || !slot.covers(to.hash()) || !pin(to) {
            return false;
        }
        let set = slot.cas_entry(e, expected, Some(to));
        self.unpin(slot, to, guard);
        set
    }

    /// Hands an unlinked, unpinned item to the epoch collector.
    pub(crate) fn retire(&self, item: ItemPtr, guard: &Guard) {
        // SAFETY: the item is unlinked (no list word points at it), no head or entry
        // word points at it (the handshake above), and none can take it again (it is
        // marked, so pins fail). It is retired exactly once: by its unlinker, or by the
        // pinner that cleared `PINNED` after `UNLINKED` was set.
        unsafe { item.retire(guard) }
    }
}

/// Where in a slot's items (`counts`, the accesses each drew in ring order), from
/// position `first` on, one more entry saves the most walking beside the head and
/// entries at the positions `taken`, if anywhere. An entry at `s` shortens the walks to
/// it and to the items after it up to the next entry: by `s - p` each, `p` the nearest
/// entry before it, or if there is none by `base + s + 1`, as those walks start at the
/// rehash item (`base` as in `HotRing::adjust`).
fn best_entry(counts: &[u64], taken: &[usize], base: u64, first: usize) -> Option<usize> {
    let mut from = vec![0u64; counts.len() + 1];
    for i in (0..counts.len()).rev() {
        from[i] = from[i + 1] + counts[i];
    }
    (first..counts.len())
        .filter(|s| !taken.contains(s))
        .map(|s| {
            let before = taken.iter().copied().filter(|&t| t < s).max();
            let next = taken.iter().copied().filter(|&t| t > s).min();
            let reached = from[s] - from[next.unwrap_or(counts.len())];
            let step = before.map_or(base + s as u64 + 1, |p| (s - p) as u64);
            (step * reached, s)
        })
        .filter(|&(saved, _)| saved > 0)
        // Of equal savings, the first position.
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, s)| s)
}

/// Takes the head-move pin on `item` unless it is being removed or already pinned.
pub(crate) fn pin(item: ItemPtr) -> bool {
    item.update_next(|l| {
        (!l.has(Link::OCCUPIED) && !l.has(Link::PINNED)).then(|| l.with(Link::PINNED))
    })
    .is_ok()
}

#[cfg(test)]
mod tests {
    use std::ops::RangeInclusive;

    use rand::{rngs::SmallRng, Rng, SeedableRng};

    use super::{best_entry, ShiftWatch, SHIFT_FOLLOW_MS, SHIFT_WINDOW};

    /// Feeds `watch` `windows` windows of counted accesses that hit the head (one
    /// item) with probability `rate`, or else walk 2-9 items; the mark of the shift it
    /// ended up following, if any.
    fn feed(watch: &ShiftWatch, rng: &mut SmallRng, rate: f64, windows: u32) -> Option<u16> {
        feed_walks(watch, rng, rate, 2..=9, windows)
    }

    /// As `feed`, the accesses that miss the head walking `walks` items.
    fn feed_walks(
        watch: &ShiftWatch,
        rng: &mut SmallRng,
        rate: f64,
        walks: RangeInclusive<u32>,
        windows: u32,
    ) -> Option<u16> {
        let mut following = None;
        for _ in 0..windows * SHIFT_WINDOW {
            let visits = if rng.gen_bool(rate) {
                1
            } else {
                rng.gen_range(walks.clone())
            };
            following = watch.note(visits == 1, visits);
        }
        following
    }

    #[test]
    fn a_fall_of_the_hit_rate_at_the_same_cost_is_no_shift() {
        // 0.6 of the accesses hit, the rest walk 5.5 items on average: 2.8 items an
        // access. Then 0.1 hit and the rest walk 3: the same 2.8, as when a round
        // puts the head before the hottest key, which is then reached as cheaply.
        let watch = ShiftWatch::default();
        let mut rng = SmallRng::seed_from_u64(3);
        assert_eq!(feed_walks(&watch, &mut rng, 0.6, 2..=9, 20), None);
        assert_eq!(feed_walks(&watch, &mut rng, 0.1, 2..=4, 20), None);
        // The same fall with the walks of before is a shift.
        assert_eq!(feed_walks(&watch, &mut rng, 0.6, 2..=9, 20), None);
        assert!(feed_walks(&watch, &mut rng, 0.1, 2..=9, 1).is_some());
    }

    #[test]
    fn a_steady_load_never_looks_like_a_shift_and_a_sudden_fall_does() {
        let watch = ShiftWatch::default();
        let mut rng = SmallRng::seed_from_u64(7);
        // A uniform load's rate at 8 keys a ring, window after window, one at a time.
        for _ in 0..2000 {
            assert_eq!(
                feed(&watch, &mut rng, 0.27, 1),
                None,
                "a steady rate was taken for a shift"
            );
        }
        // The rate climbs as heads find their keys: no shift either.
        for step in 0..70 {
            assert_eq!(
                feed(&watch, &mut rng, 0.27 + f64::from(step) * 0.01, 10),
                None
            );
        }
        // Heads all wrong at once.
        let shift = feed(&watch, &mut rng, 0.5, 1);
        assert!(shift.is_some());
        // Still following while heads come back, within the follow time, and the fall
        // that goes on for another window is the same shift.
        assert_eq!(feed(&watch, &mut rng, 0.3, 1), shift);
        assert_eq!(feed(&watch, &mut rng, 0.9, 1), shift);
    }

    #[test]
    fn each_shift_gets_a_mark_of_its_own() {
        let watch = ShiftWatch::default();
        let mut rng = SmallRng::seed_from_u64(11);
        assert_eq!(feed(&watch, &mut rng, 0.9, 20), None);
        let first = feed(&watch, &mut rng, 0.4, 1);
        assert!(first.is_some());
        // The follow ends with the time; heads settle at the new hot keys.
        assert_eq!(feed(&watch, &mut rng, 0.9, 40), first);
        std::thread::sleep(std::time::Duration::from_millis(SHIFT_FOLLOW_MS + 100));
        assert_eq!(feed(&watch, &mut rng, 0.9, 1), None);
        // The hotspot moves again: a mark the slots moved for the first shift lack.
        let second = feed(&watch, &mut rng, 0.4, 1);
        assert!(second.is_some());
        assert_ne!(second, first);
    }

    /// Items an access walks past, summed over `counts` (ring order), with entries at
    /// `entries` (sorted): a lookup starts at the last entry at or before its item, or
    /// at the rehash item, `base` items before the slot's first, as `search` does.
    fn walked(counts: &[u64], entries: &[usize], base: u64) -> u64 {
        (0..counts.len())
            .map(|i| {
                let extra = match entries.iter().rev().find(|&&e| e <= i) {
                    Some(&e) => (i - e) as u64,
                    None => base + i as u64 + 1,
                };
                counts[i] * extra
            })
            .sum()
    }

    /// `entries` with `s` added, sorted.
    fn with(entries: &[usize], s: usize) -> Vec<usize> {
        let mut all = entries.to_vec();
        all.push(s);
        all.sort_unstable();
        all
    }

    #[test]
    fn each_entry_goes_where_the_walks_are_shortest() {
        let mut rng = SmallRng::seed_from_u64(5);
        for round in 0..4000 {
            let len = rng.gen_range(3..12);
            let counts: Vec<u64> = (0..len)
                .map(|_| {
                    if rng.gen_bool(0.3) {
                        0
                    } else {
                        rng.gen_range(0..50)
                    }
                })
                .collect();
            let base = rng.gen_range(0..4);
            let first = rng.gen_range(0..2);
            // The head, and on every other round an entry placed before.
            let mut taken = vec![rng.gen_range(0..len)];
            if round % 2 == 1 {
                let s = rng.gen_range(first..len);
                if !taken.contains(&s) {
                    taken.push(s);
                }
            }
            taken.sort_unstable();
            let alone = walked(&counts, &taken, base);
            let best = (first..len)
                .filter(|s| !taken.contains(s))
                .map(|s| walked(&counts, &with(&taken, s), base))
                .min()
                .unwrap_or(alone);
            let case = format!("{counts:?} taken {taken:?} base {base} first {first}");
            match best_entry(&counts, &taken, base, first) {
                Some(s) => {
                    assert!(s >= first && !taken.contains(&s), "{case}: {s}");
                    let walks = walked(&counts, &with(&taken, s), base);
                    assert_eq!(walks, best, "{case}: {s}");
                    assert!(walks < alone, "{case}: {s}");
                }
                // None only where no entry shortens any walk.
                None => assert_eq!(best, alone, "{case}"),
            }
        }
    }

    #[test]
    fn an_entry_goes_to_the_hot_item_the_head_leaves_far() {
        // The head at the hottest item; the runner-up before it, reached from the
        // rehash item until it is an entry.
        assert_eq!(best_entry(&[10, 1, 1, 50, 1], &[3], 0, 0), Some(0));
        assert_eq!(best_entry(&[50, 1, 1, 10], &[0], 0, 0), Some(3));
        // The next entry goes to the third hottest, in the longest walk left.
        assert_eq!(best_entry(&[50, 1, 9, 1, 10], &[0, 4], 0, 0), Some(2));
        // Not to the rehash item when the caller starts past it.
        assert_eq!(best_entry(&[9, 5, 0, 1], &[3], 0, 1), Some(1));
        // Nothing else is read: no entry saves anything.
        assert_eq!(best_entry(&[5, 0, 0], &[0], 0, 0), None);
    }
}
