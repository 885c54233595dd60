//! A consumer group's pending entries list (PEL): the entries delivered to its
//! consumers and not acknowledged yet, in ID order, as a table of records
//! (`table_pages.rs`) that are the pending entries themselves. The table lies in the
//! stream's meta (`stream.rs`): inline while short; in pages once long, the stream
//! then stored split (`stream_nodes.rs`) so that the pages are released with it. An
//! XREADGROUP, XACK or XCLAIM then copies the root and the page it changes rather
//! than every pending entry, as Redis's radix trees of the group's and consumers'
//! pending entries spare it.
//!
//! ```text
//! record = ms (u64 LE) | seq (u64 LE) | consumer (u64 LE: its number in the group)
//!          | delivered_ms (u64 LE) | deliveries (u64 LE)
//! ```
//!
//! The table's key is the ID's milliseconds; entries that share a millisecond are told
//! apart by their whole IDs, as the stream's node table does.

use std::cell::RefCell;

use engine::Result;

use crate::nodes::NodeStore;
use crate::stream::{Corrupt, Id};
use crate::table_pages::{self, u64_at, Layout};

/// Bytes of a pending entry's record.
const RECORD: usize = 40;
type Record = [u8; RECORD];
type Records<'a> = table_pages::Records<'a, RECORD>;

/// The records are the pending entries themselves, naming no nodes, keyed by their
/// IDs' milliseconds.
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 0,
    id_at: 0,
    count_at: 0,
    bytes_at: 0,
    names_nodes: false,
    inline_records: table_pages::PAGE_RECORDS as u16,
};

/// A message delivered to a consumer and not yet acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub id: Id,
    /// The number of the consumer it was delivered to (see [`crate::stream::Consumer`]).
    pub consumer: u64,
    pub delivered_ms: u64,
    pub deliveries: u64,
}

impl Pending {
    fn of(r: &Record) -> Pending {
        Pending {
            id: Id {
                ms: u64_at(r, 0),
                seq: u64_at(r, 8),
            },
            consumer: u64_at(r, 16),
            delivered_ms: u64_at(r, 24),
            deliveries: u64_at(r, 32),
        }
    }

    fn record(&self) -> Record {
        let mut r = [0u8; RECORD];
        for (at, n) in [
            self.id.ms,
            self.id.seq,
            self.consumer,
            self.delivered_ms,
            self.deliveries,
        ]
        .into_iter()
        .enumerate()
        {
            r[at * 8..at * 8 + 8].copy_from_slice(&n.to_le_bytes());
        }
        r
    }
}

/// The node store of a table that has never been stored paged: it names no pages,
/// so nothing reads or writes one ([`Pel::finish`] writes its pages where the stream
/// is stored).
struct Unstored;

impl NodeStore for Unstored {
    fn write(&self, _: &[u8]) -> u64 {
        unreachable!("a pending table is moved to its stream's store before it is paged")
    }
    fn read(&self, id: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        Err(engine::Error::Corruption {
            file: Default::default(),
            offset: 0,
            detail: format!("an inline pending table names page {id}"),
        })
    }
    fn discard(&self, _: u64) {}
}

static UNSTORED: Unstored = Unstored;

/// A group's pending entries, read and changed where they lie. A page that cannot be
/// read (an engine's error) is noted, the operation answering as if the list ended
/// there; whoever holds the stream reports it ([`Pel::failure`]) and stores nothing.
pub struct Pel<'a> {
    table: Records<'a>,
    failed: RefCell<Option<engine::Error>>,
}

impl std::fmt::Debug for Pel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("Pel").field("len", &self.len()).finish()
    }
}

impl<'a> Pel<'a> {
    /// `pending`, in ID order, held inline.
    pub fn of(pending: &[Pending]) -> Pel<'a> {
        debug_assert!(pending.windows(2).all(|w| w[0].id < w[1].id));
        let records: Vec<Record> = pending.iter().map(Pending::record).collect();
        Pel {
            table: Records::of(&UNSTORED, LAYOUT, records.len() as u64, &records),
            failed: RefCell::default(),
        }
    }

    /// The stored table `table`, its pages read from `store` if it is paged (which
    /// only a split stream's may be: `None` for a stream stored whole). `Corrupt` if it
    /// is not a table of pending entries.
    pub fn stored(
        store: Option<&'a dyn NodeStore>,
        table: Vec<u8>,
    ) -> std::result::Result<Self, Corrupt> {
        if check_form(&table)? {
            return Ok(Pel {
                table: Records::new(store.ok_or(Corrupt)?, LAYOUT, table),
                failed: RefCell::default(),
            });
        }
        let pel = Pel {
            table: Records::new(&UNSTORED, LAYOUT, table),
            failed: RefCell::default(),
        };
        let ordered = (1..pel.len()).all(|at| match (pel.at(at - 1), pel.at(at)) {
            (Ok(a), Ok(b)) => a.id < b.id,
            _ => false,
        });
        if ordered {
            Ok(pel)
        } else {
            Err(Corrupt)
        }
    }

    /// The first error a page read met, if one did: what was answered since is not
    /// to be trusted.
    pub fn failure(&self) -> Option<engine::Error> {
        self.failed.borrow_mut().take()
    }

    fn noted<T>(&self, r: Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.failed.borrow_mut().get_or_insert(e);
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table was stored in pages (a split stream's).
    pub fn is_paged(&self) -> bool {
        self.table.was_paged()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn at(&self, at: usize) -> Result<Pending> {
        Ok(Pending::of(&self.table.get(at)?))
    }

    /// The place of the first pending entry at or after `id`: by milliseconds first
    /// (one page), then by whole IDs among the records that share `id`'s.
    fn find(&self, id: Id) -> Result<usize> {
        self.table
            .partition_at_key(id.ms, |r| Pending::of(r).id < id)
    }

    pub fn get(&self, id: Id) -> Option<Pending> {
        let at = self.noted(self.find(id))?;
        if at == self.len() {
            return None;
        }
        self.noted(self.at(at)).filter(|p| p.id == id)
    }

    pub fn first(&self) -> Option<Pending> {
        if self.is_empty() {
            return None;
        }
        self.noted(self.at(0))
    }

    pub fn last(&self) -> Option<Pending> {
        let last = self.len().checked_sub(1)?;
        self.noted(self.at(last))
    }

    /// Up to `limit` pending entries with IDs from `from` to `to` that `keep` keeps,
    /// in ID order.
    pub fn range(
        &self,
        from: Id,
        to: Id,
        limit: usize,
        mut keep: impl FnMut(&Pending) -> bool,
    ) -> Vec<Pending> {
        let mut out = Vec::new();
        let Some(mut at) = self.noted(self.find(from)) else {
            return out;
        };
        while at < self.len() && out.len() < limit {
            let Some(p) = self.noted(self.at(at)) else {
                break;
            };
            if p.id > to {
                break;
            }
            if keep(&p) {
                out.push(p);
            }
            at += 1;
        }
        out
    }

    /// Every pending entry, in ID order.
    pub fn all(&self) -> Vec<Pending> {
        self.range(Id::ZERO, Id::MAX, usize::MAX, |_| true)
    }

    /// Sets `p`, replacing the pending entry of its ID if there is one: that entry.
    pub fn put(&mut self, p: Pending) -> Option<Pending> {
        let at = self.noted(self.find(p.id))?;
        let old = match at < self.len() {
            true => Some(self.noted(self.at(at))?),
            false => None,
        }
        .filter(|old| old.id == p.id);
        let replaced = at..at + usize::from(old.is_some());
        let r = self.table.splice(replaced, &[p.record()]);
        self.noted(r)?;
        self.table.set_count(self.table.len());
        old
    }

    /// Removes the pending entry `id`: it, if there was one.
    pub fn remove(&mut self, id: Id) -> Option<Pending> {
        let at = self.noted(self.find(id))?;
        if at == self.len() {
            return None;
        }
        let old = self.noted(self.at(at))?;
        if old.id != id {
            return None;
        }
        let r = self.table.splice(at..at + 1, &[]);
        self.noted(r)?;
        self.table.set_count(self.table.len());
        Some(old)
    }

    /// Removes the pending entries `gone` says go: reads and rewrites every record.
    pub fn remove_where(&mut self, mut gone: impl FnMut(&Pending) -> bool) -> usize {
        let Some(all) = self.noted(self.table.all()) else {
            return 0;
        };
        let kept: Vec<Record> = all.into_iter().filter(|r| !gone(&Pending::of(r))).collect();
        let removed = self.len() - kept.len();
        if removed > 0 {
            let r = self.table.splice(0..self.len(), &kept);
            self.noted(r);
            self.table.set_count(self.table.len());
        }
        removed
    }

    /// Whether [`Pel::finish`] stores the table inline: if not, the stream must be
    /// stored split, so that its pages are released with it.
    pub fn stays_inline(&self) -> bool {
        self.table.stays_inline()
    }

    /// The table inline whatever its length, as a stream stored whole holds it.
    pub fn inline(&self) -> Vec<u8> {
        let table = self.noted(self.table.inline());
        table.unwrap_or_else(|| 0u32.to_le_bytes().to_vec())
    }

    /// The table as a split stream stores it, its pages (if paged) written to `store`,
    /// where the stream is stored.
    pub fn finish(self, store: &dyn NodeStore) -> Result<Vec<u8>> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        if self.table.was_paged() || self.table.stays_inline() {
            return self.table.finish();
        }
        // Never stored paged: its records move to `store` as they are paged.
        let records = self.table.all()?;
        Records::of(store, LAYOUT, records.len() as u64, &records).finish()
    }
}

/// Whether the stored pending table `table` is paged; `Corrupt` if it is neither
/// form (`table_pages.rs`): an inline table whose count is not its records', or a
/// length no form has.
pub fn check_form(table: &[u8]) -> std::result::Result<bool, Corrupt> {
    let paged = table_pages::form::<RECORD>(table).ok_or(Corrupt)?;
    // An inline table counts its records: each is one pending entry.
    let counted = || u32::from_le_bytes(table[..4].try_into().expect("4 bytes")) as usize;
    if !paged && counted() != (table.len() - 4) / RECORD {
        return Err(Corrupt);
    }
    Ok(paged)
}

/// The pages the stored pending table `table` names, each its id and stored size.
pub fn pages(store: &dyn NodeStore, table: &[u8]) -> Result<Vec<(u64, usize)>> {
    table_pages::nodes(store, LAYOUT, table)
}

/// The pages the stored pending table `old` names and `new` does not.
pub fn dropped(store: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    table_pages::dropped(store, LAYOUT, old, new)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::entry::Entry as Stored;
    use crate::nodes::{self, MemoryNodes};
    use crate::stream::{Described, Stream};
    use crate::stream_nodes::{decode, stored};

    fn id(ms: u64, seq: u64) -> Id {
        Id { ms, seq }
    }

    fn name(c: u8) -> Vec<u8> {
        format!("c{c}").into_bytes()
    }

    /// The group as plain maps: the oracle. Pending entries by ID: (consumer,
    /// delivery time, deliveries); consumers by name: seen time.
    #[derive(Default)]
    struct Model {
        pending: BTreeMap<Id, (u8, u64, u64)>,
        consumers: BTreeMap<Vec<u8>, u64>,
    }

    impl Model {
        fn described(&self) -> Described {
            let count = |c: &[u8]| {
                let own = self.pending.values().filter(|p| name(p.0) == c);
                own.count() as u64
            };
            (
                b"g".to_vec(),
                Id::ZERO,
                Some(0),
                self.consumers
                    .iter()
                    .map(|(c, &seen)| (c.clone(), seen, count(c)))
                    .collect(),
                self.pending
                    .iter()
                    .map(|(&id, &(c, at, n))| (id, name(c), at, n))
                    .collect(),
            )
        }

        fn nth(&self, n: u16) -> Option<Id> {
            let len = self.pending.len();
            (len > 0).then(|| *self.pending.keys().nth(usize::from(n) % len).unwrap())
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// This many new entries delivered to a consumer (IDs past every pending one),
        /// this many milliseconds apart (0: the same millisecond).
        Deliver {
            count: u8,
            step: u8,
            consumer: u8,
        },
        /// An ID between pending ones (after the nth) delivered.
        DeliverBetween(u16, u8),
        /// The nth pending entry claimed by a consumer, with deliveries set or counted.
        Claim(u16, u8, Option<u8>),
        /// A run of pending entries from the nth acknowledged.
        Ack(u16, u8),
        RemoveConsumer(u8),
        /// Up to `limit` pending entries from the nth, of one consumer or all.
        Range(u16, u8, Option<u8>),
        /// Entries appended to the stream, so that it is split for its entries too.
        Append(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (1u8..40, 0u8..3, 0u8..4).prop_map(|(count, step, consumer)| Op::Deliver { count, step, consumer }),
            1 => (any::<u16>(), 0u8..4).prop_map(|(n, c)| Op::DeliverBetween(n, c)),
            2 => (any::<u16>(), 0u8..4, proptest::option::of(any::<u8>())).prop_map(|(n, c, d)| Op::Claim(n, c, d)),
            3 => (any::<u16>(), 1u8..60).prop_map(|(n, k)| Op::Ack(n, k)),
            1 => (0u8..4).prop_map(Op::RemoveConsumer),
            2 => (any::<u16>(), any::<u8>(), proptest::option::of(0u8..4)).prop_map(|(n, l, c)| Op::Range(n, l, c)),
            1 => (1u8..80).prop_map(Op::Append),
        ]
    }

    /// Runs `ops` on a group of a stream stored in `store` after each, and on the
    /// model, checking every answer and the whole group after each write; returns the
    /// stored stream.
    fn replay(store: &MemoryNodes, ops: &[Op]) -> Vec<u8> {
        let mut model = Model::default();
        let mut s = Stream::default();
        s.add_group(crate::stream::Group::new(b"g", Id::ZERO, Some(0)));
        let mut stored_now = stored(store, s, None).unwrap();
        let (mut last, mut now, mut entries) = (Id::ZERO, 0u64, 0u64);
        for op in ops {
            now += 1;
            let mut s = decode(store, &stored_now).unwrap();
            let g = s.group_mut(b"g").unwrap();
            let touch = |g: &mut crate::stream::Group, model: &mut Model, c: u8| {
                g.touch_consumer(&name(c), now);
                model.consumers.insert(name(c), now);
            };
            match *op {
                Op::Deliver {
                    count,
                    step,
                    consumer,
                } => {
                    touch(g, &mut model, consumer);
                    for _ in 0..count {
                        last = match step {
                            0 => last.next().unwrap(),
                            _ => id(last.ms + u64::from(step), 0),
                        };
                        g.deliver(last, &name(consumer), now);
                        model.pending.insert(last, (consumer, now, 1));
                    }
                }
                Op::DeliverBetween(n, consumer) => {
                    let Some(between) = model.nth(n).and_then(Id::next) else {
                        continue;
                    };
                    if model.pending.contains_key(&between) {
                        continue;
                    }
                    touch(g, &mut model, consumer);
                    g.deliver(between, &name(consumer), now);
                    model.pending.insert(between, (consumer, now, 1));
                }
                Op::Claim(n, consumer, deliveries) => {
                    let Some(at) = model.nth(n) else { continue };
                    touch(g, &mut model, consumer);
                    let p = g.pending().get(at).expect("pending");
                    let deliveries = deliveries.map(u64::from);
                    g.redeliver(p, &name(consumer), now, deliveries);
                    let m = model.pending.get_mut(&at).unwrap();
                    *m = (consumer, now, deliveries.unwrap_or(m.2 + 1));
                }
                Op::Ack(n, k) => {
                    let Some(from) = model.nth(n) else { continue };
                    let run: Vec<Id> = model
                        .pending
                        .range(from..)
                        .take(usize::from(k))
                        .map(|(&id, _)| id)
                        .collect();
                    for id in run {
                        assert!(g.ack(id));
                        assert!(!g.ack(id));
                        model.pending.remove(&id);
                    }
                }
                Op::RemoveConsumer(c) => {
                    let had = model.pending.values().filter(|p| p.0 == c).count();
                    let removed = g.remove_consumer(&name(c));
                    match model.consumers.remove(&name(c)) {
                        Some(_) => assert_eq!(removed, Some(had)),
                        None => assert_eq!(removed, None),
                    }
                    model.pending.retain(|_, p| p.0 != c);
                }
                Op::Range(n, limit, consumer) => {
                    let from = model.nth(n).unwrap_or(Id::ZERO);
                    let number = consumer.and_then(|c| g.consumer(&name(c)).map(|c| c.number()));
                    if consumer.is_some() && number.is_none() {
                        continue;
                    }
                    let got: Vec<Id> = g
                        .pending()
                        .range(from, Id::MAX, usize::from(limit), |p| {
                            number.is_none_or(|n| p.consumer == n)
                        })
                        .iter()
                        .map(|p| p.id)
                        .collect();
                    let want: Vec<Id> = model
                        .pending
                        .range(from..)
                        .filter(|(_, p)| consumer.is_none_or(|c| p.0 == c))
                        .take(usize::from(limit))
                        .map(|(&id, _)| id)
                        .collect();
                    assert_eq!(got, want, "{op:?}");
                    continue;
                }
                Op::Append(k) => {
                    for _ in 0..k {
                        entries += 1;
                        let fields = vec![(b"f".to_vec(), vec![b'v'; 100])];
                        s.append(id(entries, u64::MAX), fields, 100);
                    }
                }
            }
            assert!(s.failure().is_none());
            let new = stored(store, s, None).unwrap();
            for gone in nodes::dropped(store, &stored_now, Some(&new)).unwrap() {
                store.discard(gone);
            }
            stored_now = new;
            let s = decode(store, &stored_now).unwrap();
            let g = s.group(b"g").unwrap();
            assert_eq!(g.described(), model.described(), "after {op:?}");
            assert_eq!(g.pending_count(), model.pending.len());
            if model.pending.len() > table_pages::PAGE_RECORDS {
                assert!(
                    Stored::stored_is_node_table(&stored_now),
                    "a stream with paged pending entries is stored split"
                );
            }
            assert!(s.failure().is_none());
        }
        stored_now
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Every operation answers as the maps do, through the stream stored and read
        /// back after each; the store holds exactly the nodes and pages the final
        /// stream names.
        #[test]
        fn pending_entries_answer_as_a_map_of_them(ops in proptest::collection::vec(op(), 1..300)) {
            let store = MemoryNodes::default();
            let stored_now = replay(&store, &ops);
            prop_assert_eq!(store.len(), nodes::node_ids(&store, &stored_now).unwrap().len());
        }
    }

    #[test]
    fn thousands_pending_are_paged_and_whole_again_when_acknowledged() {
        let store = MemoryNodes::default();
        let mut ops = vec![
            Op::Deliver {
                count: 39,
                step: 1,
                consumer: 0,
            };
            100
        ];
        ops.extend(vec![Op::Ack(0, 59); 70]);
        let stored_now = replay(&store, &ops);
        assert!(!Stored::stored_is_node_table(&stored_now));
        assert_eq!(store.len(), 0);
    }
}
