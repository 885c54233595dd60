//! Large sorted sets split into nodes, so that ZADD, ZINCRBY, ZREM and ZPOPMIN copy
//! the few nodes they change and the tables, not the whole set, and ZSCORE, ZRANK and
//! ranges by rank read only the nodes that hold what they answer. Redis holds a large
//! sorted set as a dict (member to score) beside a skiplist in (score, member) order; a
//! split one here has the same two halves. How nodes are stored and released, and why
//! readers need no lock, is in `nodes.rs`.
//!
//! ```text
//! zset table = members size (u32 LE) | members | order
//! members    = a stored hash (`entry.rs`) of member -> score (8 bytes, an f64 LE):
//!              packed, or itself split by member hash (`field_nodes.rs`)
//! order      = a table of records (`table_pages.rs`: inline, or in pages once long)
//!              counting the members, one record a node, in (score, member) order
//! record     = id (u64 LE) | count (u32 LE) | bytes (u32 LE: its packed size)
//!              | first (f64 LE: the score of its first member)
//! ```
//!
//! An order node is a packed sorted set (`packed.rs`) of at least one member, every
//! one of them after those of the node before. A member is looked up by its score
//! among the nodes' first scores and, where several nodes start with that score, by
//! their first members, read in a binary search (so a large set of equal scores
//! costs a few node reads per lookup).
//!
//! Only a sorted set held in Redis's large encoding (skiplist, `Entry::raw`) whose
//! packed form passes [`NODE_BYTES`] is split. An order node that passes
//! [`ORDER_NODE_BYTES`] is cut in parts of about [`FILL`] bytes, one emptied is dropped,
//! and a set left with one order node, or two holding less than half of
//! [`NODE_BYTES`], is stored whole again.

use std::borrow::Cow;
use std::collections::{btree_map, BTreeMap};
use std::ops::Range;

use engine::Result;

use crate::entry::{Entry, Kind, TRAILER_MAX};
use crate::field_nodes::{FieldEditor, FieldReader};
use crate::nodes::{self, NodeStore, Outcome, NODE_BYTES};
use crate::packed::{self, score_order, Builder};
use crate::table_pages::{self, Layout};

/// Bytes of a node's record in the node table.
const RECORD: usize = 24;
type Record = [u8; RECORD];
type Records<'a> = table_pages::Records<'a, RECORD>;

const SIZE_HEADER: usize = 4;

/// How the records of an order table (`table_pages.rs`) lie: in order of `first`.
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 16,
    id_at: 0,
    count_at: 8,
    bytes_at: 12,
    names_nodes: true,
    inline_records: table_pages::PAGE_RECORDS as u16,
};

/// Bytes an order node holds at most but a member that large on its own: half a
/// collection node, since a ZADD at a random score copies (and, on an engine, logs)
/// the order node it lands in. A quarter was tried: fewer bytes logged still, but
/// slower ZADD in memory and ZRANGE on lsm (BENCHMARKS.md, session 68).
const ORDER_NODE_BYTES: usize = NODE_BYTES / 2;

/// How full a cut leaves an order node, so that the next few inserts into it do not
/// cut it again.
const FILL: usize = ORDER_NODE_BYTES * 3 / 4;

#[derive(Clone, Copy, Debug, PartialEq)]
struct NodeRef {
    id: u64,
    count: u32,
    bytes: u32,
    first: f64,
}

impl NodeRef {
    fn of(r: &[u8]) -> Self {
        NodeRef {
            id: LAYOUT.id(r),
            count: LAYOUT.count(r) as u32,
            bytes: LAYOUT.bytes(r) as u32,
            first: f64::from_bits(LAYOUT.key(r)),
        }
    }

    fn record(&self) -> Record {
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&self.id.to_le_bytes());
        r[8..12].copy_from_slice(&self.count.to_le_bytes());
        r[12..16].copy_from_slice(&self.bytes.to_le_bytes());
        r[16..].copy_from_slice(&self.first.to_bits().to_le_bytes());
        r
    }
}

/// The members half (a stored hash) and the order table of a zset table.
fn halves(table: &[u8]) -> (&[u8], &[u8]) {
    let size = u32::from_le_bytes(table[..SIZE_HEADER].try_into().expect("4 bytes")) as usize;
    table[SIZE_HEADER..].split_at(size)
}

/// The stored hash of member -> score that the zset table `table` holds.
pub fn members(table: &[u8]) -> &[u8] {
    halves(table).0
}

/// A zset table of the stored hash `members` and the order table `order`.
fn encode(members: &[u8], order: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SIZE_HEADER + members.len() + order.len() + TRAILER_MAX);
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    out.extend_from_slice(members);
    out.extend_from_slice(order);
    out
}

/// The invariants every stored zset table keeps, `count` members in all (O(nodes)).
fn check(nodes: &dyn NodeStore, table: &[u8], count: usize) -> Result<()> {
    let order = Records::new(nodes, LAYOUT, halves(table).1);
    let counted = order.count();
    let refs: Vec<NodeRef> = order.all()?.iter().map(|r| NodeRef::of(r)).collect();
    assert!(refs.len() >= 2, "a set of one order node is stored whole");
    assert!(refs.iter().all(|n| n.count >= 1), "an empty order node");
    assert_eq!(counted, count);
    assert_eq!(
        refs.iter().map(|n| n.count as usize).sum::<usize>(),
        count,
        "a table's count is its nodes' counts"
    );
    Ok(())
}

/// The order nodes (and pages) the zset table `table` names, each its id and stored
/// size (the members half names its own, see `nodes.rs`).
pub fn order_nodes(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<(u64, usize)>> {
    table_pages::nodes(nodes, LAYOUT, halves(table).1)
}

/// The order nodes (and pages) the zset table `old` names and the zset table `new`
/// does not.
pub fn dropped_order(nodes: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    table_pages::dropped(nodes, LAYOUT, halves(old).1, halves(new).1)
}

/// A score as the members half stores it: 8 bytes, little-endian.
fn stored_score(bytes: &[u8]) -> f64 {
    f64::from_le_bytes(bytes.try_into().expect("a score is 8 bytes"))
}

/// The members of the packed sorted set `packed`, each with the bytes it takes there.
fn placed(packed: &[u8]) -> impl Iterator<Item = (Range<usize>, &[u8], f64)> + '_ {
    // Lengths read where they lie (`packed::element_at`): a ZADD scans the order node
    // it leaves and the one it enters.
    let mut at = packed::HEADER;
    std::iter::from_fn(move || {
        let start = at;
        let member = packed::element_at(packed, at)?;
        let score = packed::element_at(packed, member.end)?;
        at = score.end;
        Some((start..at, &packed[member], stored_score(&packed[score])))
    })
}

/// The first member of a packed sorted set of at least one.
fn first_member(packed: &[u8]) -> &[u8] {
    packed::elements(packed)
        .next()
        .expect("an order node is never empty")
}

/// `member`'s bytes and score in the packed sorted set `packed`, if it is there.
fn find(packed: &[u8], member: &[u8]) -> Option<(Range<usize>, f64)> {
    placed(packed).find_map(|(r, m, s)| (m == member).then_some((r, s)))
}

/// Puts `member` with `score` in its place in the packed sorted set `packed`, which
/// does not hold it.
fn insert(packed: &mut Vec<u8>, member: &[u8], score: f64) {
    let at = placed(packed)
        .find(|(_, m, s)| score_order((m, *s), (member, score)).is_gt())
        .map_or(packed.len(), |(r, _, _)| r.start);
    let mut entry = Vec::with_capacity(member.len() + 11);
    packed::put_element(&mut entry, member);
    packed::put_element(&mut entry, &score.to_le_bytes());
    packed::replace(packed, at..at, &entry);
    let n = packed::count(packed) + 1;
    packed::set_count(packed, n);
}

/// Removes the member taking the bytes `r` of `packed`.
fn remove_at(packed: &mut Vec<u8>, r: Range<usize>) {
    packed.drain(r);
    let n = packed::count(packed) - 1;
    packed::set_count(packed, n);
}

/// The packed sorted set `packed` cut in parts of about [`FILL`] bytes, none past
/// [`ORDER_NODE_BYTES`] but a member that large on its own.
fn cut(packed: &[u8]) -> Vec<Vec<u8>> {
    // A part's packed size is its members' and its count's.
    let room = ORDER_NODE_BYTES - 4;
    let mut parts = Vec::new();
    let mut part = Builder::with_capacity(FILL);
    let mut bytes = 0;
    for (r, member, score) in placed(packed) {
        if bytes >= FILL || (bytes > 0 && bytes + r.len() > room) {
            parts.push(std::mem::replace(&mut part, Builder::with_capacity(FILL)).finish());
            bytes = 0;
        }
        part.push_scored(member, score);
        bytes += r.len();
    }
    parts.push(part.finish());
    parts
}

fn node_ref(id: u64, packed: &[u8]) -> NodeRef {
    let (_, _, first) = placed(packed).next().expect("an order node is never empty");
    NodeRef {
        id,
        count: packed::count(packed) as u32,
        bytes: packed.len() as u32,
        first,
    }
}

/// The stored hash of member -> score of the packed sorted set `packed`, in Redis's
/// large encoding, so that it is split as soon as it passes [`NODE_BYTES`].
fn members_hash(packed: &[u8]) -> Vec<u8> {
    let mut b = Builder::with_capacity(packed.len());
    for (_, member, score) in placed(packed) {
        b.push_pair(member, &score.to_le_bytes());
    }
    let entry = Entry {
        value: b.finish(),
        deadline: None,
        raw: true,
        kind: Kind::Hash,
    };
    entry.into_stored()
}

/// The zset table of the packed sorted set `packed` split into nodes written to
/// `nodes`, if it passes [`NODE_BYTES`] (only for one held in Redis's large encoding,
/// see the top of this file).
pub fn split_if_large(nodes: &dyn NodeStore, packed: &[u8]) -> Option<Vec<u8>> {
    if packed.len() <= NODE_BYTES {
        return None;
    }
    let parts = cut(packed);
    if parts.len() < 2 {
        return None;
    }
    let members = nodes::split_if_large(nodes, members_hash(packed));
    let records: Vec<Record> = parts
        .iter()
        .map(|part| node_ref(nodes.write(part), part).record())
        .collect();
    let order = Records::of(nodes, LAYOUT, packed::count(packed) as u64, &records);
    let order = order.finish().expect("a new table's pages are at hand");
    let table = encode(&members, &order);
    check(nodes, &table, packed::count(packed)).expect("a new table's pages are at hand");
    Some(table)
}

/// The whole packed sorted set whose zset table is `table`.
pub fn expand(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<u8>> {
    let order = Records::new(nodes, LAYOUT, halves(table).1);
    let count = order.count();
    let refs: Vec<NodeRef> = order.all()?.iter().map(|r| NodeRef::of(r)).collect();
    let bytes = refs.iter().map(|n| n.bytes as usize).sum();
    let mut b = Builder::with_capacity(bytes);
    for n in &refs {
        let node = nodes.read(n.id)?;
        b.push_packed(
            packed::elements(&node).remaining_bytes(),
            packed::count(&node),
        );
    }
    assert_eq!(b.count(), count, "a table's count is its nodes'");
    Ok(b.finish())
}

/// Where the order nodes whose first score is `score` lie: nodes `.0..` start at or
/// after it, nodes `.1..` after it.
fn tied(order: &Records, score: f64) -> Result<(usize, usize)> {
    let at_or_after = order.partition(|first| f64::from_bits(first).total_cmp(&score).is_lt())?;
    // Mostly no node starts with the score: then the first at or after it starts after
    // it, and a second search of the table (a ZADD makes four) is not needed.
    if at_or_after == order.len()
        || f64::from_bits(LAYOUT.key(&order.get(at_or_after)?))
            .total_cmp(&score)
            .is_gt()
    {
        return Ok((at_or_after, at_or_after));
    }
    let after = order.partition(|first| f64::from_bits(first).total_cmp(&score).is_le())?;
    Ok((at_or_after, after))
}

/// The order node that holds, or would hold, a member of some score, given where the
/// nodes starting with that score lie (`tied`) and whether a node's first member
/// comes after the member (`after`): the last node that starts at or before it, the
/// first node if none does.
fn home(bounds: (usize, usize), after: impl FnMut(usize) -> Result<bool>) -> Result<usize> {
    Ok(first_where(bounds, after)?.saturating_sub(1))
}

/// The first of `lo..hi` for which `holds` holds, `holds` failing up to some point and
/// holding after it (`hi` if it never does): a binary search whose probes may read
/// nodes.
fn first_where(
    (lo, hi): (usize, usize),
    mut holds: impl FnMut(usize) -> Result<bool>,
) -> Result<usize> {
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = (a + b) / 2;
        if holds(mid)? {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    Ok(a)
}

/// Members of the packed (part of a) sorted set `p` before the first one `below`
/// fails for.
fn members_below(p: &[u8], below: impl Fn(&[u8]) -> bool) -> usize {
    placed(p).take_while(|(_, m, _)| below(m)).count()
}

/// A sorted set as a read finds it: a split one's members looked up in the members
/// half, and its ranks counted in the order table, reading the nodes that hold them.
pub struct ZsetReader<'a> {
    nodes: &'a dyn NodeStore,
    /// The packed sorted set, if it is not split.
    packed: Option<&'a [u8]>,
    /// If split: its members half, count and order nodes.
    split: Option<(FieldReader<'a>, usize, Records<'a>)>,
}

impl<'a> ZsetReader<'a> {
    /// The sorted set stored as `stored`, its nodes (if split) in `nodes`.
    pub fn new(nodes: &'a dyn NodeStore, stored: &'a [u8]) -> Self {
        let payload = Entry::stored_payload(stored);
        if !Entry::stored_is_node_table(stored) {
            return ZsetReader {
                nodes,
                packed: Some(payload),
                split: None,
            };
        }
        let (members, order) = halves(payload);
        let refs = Records::new(nodes, LAYOUT, order);
        let count = refs.count();
        ZsetReader {
            nodes,
            packed: None,
            split: Some((FieldReader::new(nodes, members), count, refs)),
        }
    }

    pub fn len(&self) -> usize {
        match (&self.packed, &self.split) {
            (Some(p), _) => packed::count(p),
            (None, Some((_, count, _))) => *count,
            (None, None) => unreachable!("a reader holds one shape"),
        }
    }

    /// `member`'s score, if it is there.
    pub fn score(&self, member: &[u8]) -> Result<Option<f64>> {
        Ok(match (&self.packed, &self.split) {
            (Some(p), _) => find(p, member).map(|(_, s)| s),
            (None, Some((members, _, _))) => members.get(member)?.map(|s| stored_score(&s)),
            (None, None) => unreachable!("a reader holds one shape"),
        })
    }

    /// The member and score at each of `ranks` (counted from the least, each within the
    /// set, repeats allowed), in the order given: each node holding one read once.
    pub fn at_ranks(&self, ranks: &[usize]) -> Result<Vec<(Vec<u8>, f64)>> {
        let mut wanted: Vec<usize> = (0..ranks.len()).collect();
        wanted.sort_unstable_by_key(|&i| ranks[i]);
        let mut out = vec![(Vec::new(), 0.0); ranks.len()];
        let Some((_, _, refs)) = &self.split else {
            let entries: Vec<(&[u8], f64)> = placed(self.packed.unwrap_or_default())
                .map(|(_, m, s)| (m, s))
                .collect();
            for i in wanted {
                let (member, score) = entries[ranks[i]];
                out[i] = (member.to_vec(), score);
            }
            return Ok(out);
        };
        // The node last read, by its place, with its members.
        let mut node: Option<(usize, Cow<[u8]>)> = None;
        for i in wanted {
            let (at, skip) = refs.by_element(ranks[i] as u64)?;
            if node.as_ref().is_none_or(|(read, _)| *read != at) {
                node = Some((at, self.nodes.read(NodeRef::of(&refs.get(at)?).id)?));
            }
            let (_, packed) = node.as_ref().expect("read above");
            let (_, member, score) = placed(packed)
                .nth(skip as usize)
                .expect("a record counts its node's members");
            out[i] = (member.to_vec(), score);
        }
        Ok(out)
    }

    /// One page of a scan from `cursor`, each member with its score, and the next
    /// cursor: a split set's members half page by page (see `FieldReader::scan`, so a
    /// member there for the whole scan is seen), a packed one whole with cursor 0.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> Result<u64> {
        match (&self.packed, &self.split) {
            (Some(p), _) => {
                placed(p).for_each(|(_, member, score)| f(member, score));
                Ok(0)
            }
            (None, Some((members, _, _))) => members.scan(cursor, count, |member, score| {
                f(member, stored_score(score))
            }),
            (None, None) => unreachable!("a reader holds one shape"),
        }
    }

    /// `member`'s rank, counted from the least, if it is there.
    pub fn rank(&self, member: &[u8]) -> Result<Option<usize>> {
        let position = |p: &[u8]| placed(p).position(|(_, m, _)| m == member);
        let Some((_, _, refs)) = &self.split else {
            return Ok(self.packed.and_then(position));
        };
        let Some(score) = self.score(member)? else {
            return Ok(None);
        };
        let id = |at: usize| -> Result<u64> { Ok(NodeRef::of(&refs.get(at)?).id) };
        let at = home(tied(refs, score)?, |at| {
            Ok(first_member(&self.nodes.read(id(at)?)?) > member)
        })?;
        let before = refs.elements_before(at)? as usize;
        let node = self.nodes.read(id(at)?)?;
        Ok(position(&node).map(|p| before + p))
    }

    /// How many members have a score for which `below` holds, `below` holding for the
    /// least scores up to some score and for none after it: the rank where a range of
    /// scores starts or ends. Reads one node.
    pub fn count_below(&self, below: impl Fn(f64) -> bool) -> Result<usize> {
        let in_node = |p: &[u8]| placed(p).take_while(|(_, _, s)| below(*s)).count();
        let Some((_, _, refs)) = &self.split else {
            return Ok(self.packed.map_or(0, in_node));
        };
        // Nodes before `k` start below; the last of them may end past it.
        let k = refs.partition(|first| below(f64::from_bits(first)))?;
        let Some(last) = k.checked_sub(1) else {
            return Ok(0);
        };
        let before = refs.elements_before(last)? as usize;
        Ok(before + in_node(&self.nodes.read(NodeRef::of(&refs.get(last)?).id)?))
    }

    /// How many members come before the first that `below` fails for, `below` holding
    /// for members up to some point in the set's order and for none after it (as a lex
    /// bound does in a set of equal scores, the only sets Redis defines lex ranges
    /// for): the rank where a lex range starts or ends. A split set's nodes are found
    /// by a binary search on their first members, reading O(log nodes) nodes.
    pub fn count_below_member(&self, below: impl Fn(&[u8]) -> bool) -> Result<usize> {
        let Some((_, _, refs)) = &self.split else {
            return Ok(self.packed.map_or(0, |p| members_below(p, &below)));
        };
        let read = |at: usize| self.nodes.read(NodeRef::of(&refs.get(at)?).id);
        let k = first_where((0, refs.len()), |at| Ok(!below(first_member(&read(at)?))))?;
        let Some(last) = k.checked_sub(1) else {
            return Ok(0);
        };
        let before = refs.elements_before(last)? as usize;
        Ok(before + members_below(&read(last)?, below))
    }

    /// The members of ranks `ranks` (counted from the least; the caller keeps them
    /// within the set) with their scores, in order.
    pub fn by_rank(&self, ranks: Range<usize>) -> Result<Vec<(Vec<u8>, f64)>> {
        let mut out = Vec::with_capacity(ranks.len());
        let take = |p: &[u8], skip: usize, out: &mut Vec<(Vec<u8>, f64)>| {
            let want = ranks.len() - out.len();
            out.extend(
                placed(p)
                    .skip(skip)
                    .take(want)
                    .map(|(_, m, s)| (m.to_vec(), s)),
            );
        };
        let Some((_, _, refs)) = &self.split else {
            take(self.packed.unwrap_or_default(), ranks.start, &mut out);
            return Ok(out);
        };
        if ranks.is_empty() {
            return Ok(out);
        }
        let (mut at, skip) = refs.by_element(ranks.start as u64)?;
        let mut skip = skip as usize;
        while out.len() < ranks.len() && at < refs.len() {
            let node = self.nodes.read(NodeRef::of(&refs.get(at)?).id)?;
            take(&node, skip, &mut out);
            skip = 0;
            at += 1;
        }
        Ok(out)
    }
}

/// An order node this edit read.
struct Loaded {
    packed: Vec<u8>,
    /// Written at the end of the edit, its record's id then set.
    changed: bool,
}

/// An order table being edited: its records patched in place, so that an edit copies
/// the table once and changes only the records of the nodes it touched, and the nodes
/// it read, by their place in it.
struct Order<'a> {
    records: Records<'a>,
    loaded: BTreeMap<usize, Loaded>,
}

impl<'a> Order<'a> {
    fn new(nodes: &'a dyn NodeStore, table: &'a [u8]) -> Self {
        Order {
            records: Records::new(nodes, LAYOUT, table),
            loaded: BTreeMap::new(),
        }
    }

    /// The order of the packed sorted set `packed`, cut into new nodes.
    fn of(nodes: &'a dyn NodeStore, packed: &[u8]) -> Self {
        let parts = cut(packed);
        let records: Vec<Record> = parts.iter().map(|p| node_ref(0, p).record()).collect();
        let count = packed::count(packed) as u64;
        let mut order = Order {
            records: Records::of(nodes, LAYOUT, count, &records),
            loaded: BTreeMap::new(),
        };
        for (at, packed) in parts.into_iter().enumerate() {
            order.loaded.insert(
                at,
                Loaded {
                    packed,
                    changed: true,
                },
            );
        }
        order
    }

    /// Nodes.
    fn len(&self) -> usize {
        self.records.len()
    }

    /// Members.
    fn count(&self) -> usize {
        self.records.count()
    }

    fn add_count(&mut self, n: isize) {
        let count = self.count().checked_add_signed(n).expect("a count");
        self.records.set_count(count);
    }

    fn node(&self, at: usize) -> Result<NodeRef> {
        Ok(NodeRef::of(&self.records.get(at)?))
    }

    /// Node `at`'s members, read if need be.
    fn load(&mut self, nodes: &dyn NodeStore, at: usize) -> Result<&mut Vec<u8>> {
        if let btree_map::Entry::Vacant(v) = self.loaded.entry(at) {
            let id = NodeRef::of(&self.records.get(at)?).id;
            v.insert(Loaded {
                packed: packed::editable(&nodes.read(id)?),
                changed: false,
            });
        }
        Ok(&mut self.loaded.get_mut(&at).expect("read above").packed)
    }

    /// The node that holds, or would hold, `member` with `score`.
    fn home(&mut self, nodes: &dyn NodeStore, member: &[u8], score: f64) -> Result<usize> {
        let bounds = tied(&self.records, score)?;
        home(
            bounds,
            |at| Ok(first_member(self.load(nodes, at)?) > member),
        )
    }

    /// Node `at` (read) replaced by new nodes of `parts` (removed if none), which the
    /// edit writes at its end.
    fn replace(&mut self, at: usize, parts: Vec<Vec<u8>>) -> Result<()> {
        let records: Vec<Record> = parts.iter().map(|p| node_ref(0, p).record()).collect();
        self.records.splice(at..at + 1, &records)?;
        self.loaded.remove(&at);
        if parts.len() != 1 {
            let more = parts.len() as isize - 1;
            self.loaded = std::mem::take(&mut self.loaded)
                .into_iter()
                .map(|(k, l)| {
                    (
                        if k > at {
                            k.checked_add_signed(more).expect("a place")
                        } else {
                            k
                        },
                        l,
                    )
                })
                .collect();
        }
        for (i, packed) in parts.into_iter().enumerate() {
            let changed = true;
            self.loaded.insert(at + i, Loaded { packed, changed });
        }
        Ok(())
    }

    /// After node `at` (read) changed: drops it if emptied, cuts it if it passed
    /// [`ORDER_NODE_BYTES`], and keeps its record.
    fn settle(&mut self, at: usize) -> Result<()> {
        let packed = self
            .loaded
            .remove(&at)
            .expect("a changed node was read")
            .packed;
        let parts = if packed::count(&packed) == 0 {
            Vec::new()
        } else if packed.len() > ORDER_NODE_BYTES {
            cut(&packed)
        } else {
            vec![packed]
        };
        self.replace(at, parts)
    }

    fn insert(&mut self, nodes: &dyn NodeStore, member: &[u8], score: f64) -> Result<()> {
        if self.len() == 0 {
            let mut packed = Builder::with_capacity(0).finish();
            insert(&mut packed, member, score);
            self.records
                .splice(0..0, &[node_ref(0, &packed).record()])?;
            let changed = true;
            self.loaded.insert(0, Loaded { packed, changed });
        } else {
            let at = self.home(nodes, member, score)?;
            insert(self.load(nodes, at)?, member, score);
            self.settle(at)?;
        }
        self.add_count(1);
        Ok(())
    }

    fn remove(&mut self, nodes: &dyn NodeStore, member: &[u8], score: f64) -> Result<()> {
        let at = self.home(nodes, member, score)?;
        let node = self.load(nodes, at)?;
        let (r, _) = find(node, member).expect("the members half and the order agree");
        remove_at(node, r);
        self.settle(at)?;
        self.add_count(-1);
        Ok(())
    }

    /// Removes the least (or, if `max`, the greatest) member.
    fn pop(&mut self, nodes: &dyn NodeStore, max: bool) -> Result<Option<(Vec<u8>, f64)>> {
        if self.len() == 0 {
            return Ok(None);
        }
        let at = if max { self.len() - 1 } else { 0 };
        let node = self.load(nodes, at)?;
        let end = if max {
            placed(node).last()
        } else {
            placed(node).next()
        };
        let (r, member, score) = end.expect("an order node is never empty");
        let member = member.to_vec();
        remove_at(node, r);
        self.settle(at)?;
        self.add_count(-1);
        Ok(Some((member, score)))
    }

    /// Removes the members of ranks `ranks` (within the set), calling `gone` on each.
    fn remove_ranks(
        &mut self,
        nodes: &dyn NodeStore,
        ranks: Range<usize>,
        mut gone: impl FnMut(&[u8]),
    ) -> Result<()> {
        if ranks.is_empty() {
            return Ok(());
        }
        // The nodes holding the first and last ranks; changed from the last, so that
        // dropping one does not move those still to change.
        let (first_at, _) = self.records.by_element(ranks.start as u64)?;
        let (last_at, _) = self.records.by_element(ranks.end as u64 - 1)?;
        let mut start = self.records.elements_before(first_at)? as usize;
        let mut starts = Vec::with_capacity(last_at - first_at + 1);
        for at in first_at..=last_at {
            starts.push(start);
            start += self.node(at)?.count as usize;
        }
        for at in (first_at..=last_at).rev() {
            let first = starts[at - first_at];
            let end = first + self.node(at)?.count as usize;
            let within = ranks.start.saturating_sub(first)..ranks.end.min(end) - first;
            let node = self.load(nodes, at)?;
            let mut kept = Builder::with_capacity(node.len());
            for (i, (_, member, score)) in placed(node).enumerate() {
                if within.contains(&i) {
                    gone(member);
                } else {
                    kept.push_scored(member, score);
                }
            }
            *node = kept.finish();
            self.settle(at)?;
        }
        self.add_count(-(ranks.len() as isize));
        Ok(())
    }

    /// How many members have a score for which `below` holds (see
    /// `ZsetReader::count_below`).
    fn count_below(&mut self, nodes: &dyn NodeStore, below: impl Fn(f64) -> bool) -> Result<usize> {
        let k = self
            .records
            .partition(|first| below(f64::from_bits(first)))?;
        let Some(last) = k.checked_sub(1) else {
            return Ok(0);
        };
        let before = self.records.elements_before(last)? as usize;
        let node = self.load(nodes, last)?;
        Ok(before + placed(node).take_while(|(_, _, s)| below(*s)).count())
    }

    /// How many members come before the first that `below` fails for (see
    /// `ZsetReader::count_below_member`).
    fn count_below_member(
        &mut self,
        nodes: &dyn NodeStore,
        below: impl Fn(&[u8]) -> bool,
    ) -> Result<usize> {
        let k = first_where((0, self.len()), |at| {
            Ok(!below(first_member(self.load(nodes, at)?)))
        })?;
        let Some(last) = k.checked_sub(1) else {
            return Ok(0);
        };
        let before = self.records.elements_before(last)? as usize;
        Ok(before + members_below(self.load(nodes, last)?, below))
    }

    /// Packed bytes of its nodes.
    fn bytes(&self) -> Result<usize> {
        let mut bytes = 0;
        for at in 0..self.len() {
            bytes += self.node(at)?.bytes as usize;
        }
        Ok(bytes)
    }

    /// The table as stored, with the nodes this edit changed written to `nodes`, and
    /// the nodes and pages the table it was read from names and it does not.
    fn written(mut self, nodes: &dyn NodeStore) -> Result<(Vec<u8>, Vec<u64>)> {
        for (at, l) in &self.loaded {
            if l.changed {
                let node = node_ref(nodes.write(&l.packed), &l.packed);
                self.records.splice(*at..*at + 1, &[node.record()])?;
            }
        }
        let (table, released) = self.records.finish_releasing()?;
        Ok((table.into_owned(), released))
    }
}

/// The members half as an edit leaves it, and what it released if that is known
/// (see `Split::members_after`).
type MembersAfter = (Option<Vec<u8>>, Option<Vec<u64>>);

/// A split sorted set being changed.
struct Split<'a> {
    members: FieldEditor<'a>,
    /// The members half the member editor started from.
    members_base: Cow<'a, [u8]>,
    /// Whether `members_base` was stored before the edit (if not, the edit split the
    /// set): nodes the final half names and a stored base does not are the edit's own.
    members_stored: bool,
    order: Order<'a>,
}

/// A sorted set as a write finds it and leaves it.
enum Shape<'a> {
    Missing,
    Packed(Vec<u8>),
    Split(Box<Split<'a>>),
}

/// A sorted set being changed by one write (see `Db::edit_zset`): members set and
/// removed in its packed form or, if split, in the members half and the order node
/// they fall in only. Every write leaves what it changed within [`NODE_BYTES`].
pub struct ZsetEditor<'a> {
    nodes: &'a dyn NodeStore,
    shape: Shape<'a>,
    /// Held in Redis's large encoding: from before, or since `large` said so.
    raw: bool,
    large: &'a dyn Fn(&[u8]) -> bool,
    changed: bool,
    /// The first node read that failed (an engine's I/O): the edit then writes nothing.
    failed: Option<engine::Error>,
}

/// The member editor's `large`: the members half is always a large hash.
fn always(_: &[u8]) -> bool {
    true
}

impl<'a> Split<'a> {
    fn new(nodes: &'a dyn NodeStore, table: &'a [u8]) -> Self {
        let (members, order) = halves(table);
        Split {
            members: FieldEditor::new(nodes, Kind::Hash, Some(members), &always),
            members_base: Cow::Borrowed(members),
            members_stored: true,
            order: Order::new(nodes, order),
        }
    }

    /// The packed sorted set `packed` split in this edit: its members half is split
    /// at the end, and its order nodes are all new.
    fn of(nodes: &'a dyn NodeStore, packed: &[u8]) -> Self {
        let members = members_hash(packed);
        Split {
            members: FieldEditor::whole(nodes, Kind::Hash, Some(&members), &always),
            members_base: Cow::Owned(members),
            members_stored: false,
            order: Order::of(nodes, packed),
        }
    }

    /// The members half as the edit leaves it, split if it passed [`NODE_BYTES`]
    /// (`None`: the stored half, unchanged), and the nodes the stored half names and
    /// it does not, when that is known without reading both (see
    /// `FieldEditor::finish_releasing`); the error of a node its editor could not read.
    fn members_after(&mut self, nodes: &'a dyn NodeStore) -> Result<MembersAfter> {
        let members = std::mem::replace(
            &mut self.members,
            FieldEditor::new(nodes, Kind::Hash, None, &always),
        );
        let (outcome, released) = members.finish_releasing(None)?;
        // A stored half held whole names no nodes.
        let released = match self.members_stored {
            true if !Entry::stored_is_node_table(&self.members_base) => Some(Vec::new()),
            true => released,
            false => None,
        };
        let after = match outcome {
            None if self.members_stored => return Ok((None, Some(Vec::new()))),
            None => self.members_base.to_vec(),
            Some(None) => Vec::new(),
            Some(Some(stored)) => stored,
        };
        if after.is_empty() {
            return Ok((Some(after), released));
        }
        Ok((Some(nodes::split_if_large(nodes, after)), released))
    }

    /// Removes the nodes of the members half `after` that the stored half did not
    /// name: the edit's own, which nobody else has seen.
    fn discard_members(&self, nodes: &dyn NodeStore, after: Option<&[u8]>) -> Result<()> {
        let Some(after) = after.filter(|a| !a.is_empty()) else {
            return Ok(());
        };
        let before = self.members_stored.then_some(&self.members_base[..]);
        for id in nodes::dropped(nodes, after, before)? {
            nodes.discard(id);
        }
        Ok(())
    }
}

impl<'a> ZsetEditor<'a> {
    /// The sorted set stored as `stored` (`None` if missing), its nodes in `nodes`;
    /// `large` tells whether a packed value passes Redis's limits for its small
    /// encoding.
    pub fn new(
        nodes: &'a dyn NodeStore,
        stored: Option<&'a [u8]>,
        large: &'a dyn Fn(&[u8]) -> bool,
    ) -> Self {
        let shape = match stored {
            None => Shape::Missing,
            Some(s) if Entry::stored_is_node_table(s) => {
                Shape::Split(Box::new(Split::new(nodes, Entry::stored_payload(s))))
            }
            Some(s) => Shape::Packed(Entry::stored_payload_to_edit(s)),
        };
        ZsetEditor {
            nodes,
            shape,
            raw: stored.is_some_and(Entry::stored_raw),
            large,
            changed: false,
            failed: None,
        }
    }

    /// Whether the sorted set has members.
    pub fn exists(&self) -> bool {
        !matches!(self.shape, Shape::Missing)
    }

    /// Members, with this edit's changes.
    pub fn len(&self) -> usize {
        match &self.shape {
            Shape::Missing => 0,
            Shape::Packed(p) => packed::count(p),
            Shape::Split(s) => s.order.count(),
        }
    }

    /// `member`'s score, if it is there.
    pub fn score(&mut self, member: &[u8]) -> Option<f64> {
        if self.failed.is_some() {
            return None;
        }
        match &mut self.shape {
            Shape::Missing => None,
            Shape::Packed(p) => find(p, member).map(|(_, s)| s),
            Shape::Split(s) => s.members.get(member).map(|s| stored_score(&s)),
        }
    }

    /// Gives `member` the score `score`, adding it if it is not there; returns whether
    /// it was added.
    pub fn set(&mut self, member: &[u8], score: f64) -> bool {
        assert!(!score.is_nan(), "a sorted set holds no NaN score");
        let old = self.score(member);
        if self.failed.is_some() || old.is_some_and(|o| o.total_cmp(&score).is_eq()) {
            return false;
        }
        self.changed = true;
        let nodes = self.nodes;
        let done = match &mut self.shape {
            Shape::Missing | Shape::Packed(_) => {
                let mut p = match std::mem::replace(&mut self.shape, Shape::Missing) {
                    Shape::Packed(p) => p,
                    _ => Builder::with_capacity(0).finish(),
                };
                if old.is_some() {
                    let (r, _) = find(&p, member).expect("scored above");
                    remove_at(&mut p, r);
                }
                insert(&mut p, member, score);
                if p.len() > NODE_BYTES && (self.raw || (self.large)(&p)) && cut(&p).len() > 1 {
                    self.raw = true;
                    self.shape = Shape::Split(Box::new(Split::of(nodes, &p)));
                } else {
                    self.shape = Shape::Packed(p);
                }
                Ok(())
            }
            Shape::Split(s) => (|| {
                if let Some(old) = old {
                    s.order.remove(nodes, member, old)?;
                }
                s.members.set(member, &score.to_le_bytes());
                s.order.insert(nodes, member, score)
            })(),
        };
        nodes::noted(&mut self.failed, done);
        old.is_none()
    }

    /// Removes `member`; returns its score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.score(member)?;
        self.changed = true;
        let nodes = self.nodes;
        let done = match &mut self.shape {
            Shape::Missing => unreachable!("scored above"),
            Shape::Packed(p) => {
                let (r, _) = find(p, member).expect("scored above");
                remove_at(p, r);
                Ok(())
            }
            Shape::Split(s) => {
                s.members.remove(member);
                s.order.remove(nodes, member, score)
            }
        };
        nodes::noted(&mut self.failed, done)?;
        Some(score)
    }

    /// Removes the least (or, if `max`, the greatest) member and returns it with its
    /// score; `None` if there is none.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, f64)> {
        if self.failed.is_some() {
            return None;
        }
        let nodes = self.nodes;
        let popped = match &mut self.shape {
            Shape::Missing => Ok(None),
            Shape::Packed(p) => {
                let end = if max {
                    placed(p).last()
                } else {
                    placed(p).next()
                };
                let taken = end.map(|(r, m, s)| (r, m.to_vec(), s));
                Ok(taken.map(|(r, m, s)| {
                    remove_at(p, r);
                    (m, s)
                }))
            }
            Shape::Split(s) => s.order.pop(nodes, max).inspect(|popped| {
                if let Some((member, _)) = popped {
                    s.members.remove(member);
                }
            }),
        };
        let popped = nodes::noted(&mut self.failed, popped)??;
        self.changed = true;
        Some(popped)
    }

    /// How many members have a score for which `below` holds, `below` holding for the
    /// least scores up to some score and for none after it: the rank where a range of
    /// scores starts or ends. 0 if a node could not be read.
    pub fn count_below(&mut self, below: impl Fn(f64) -> bool) -> usize {
        if self.failed.is_some() {
            return 0;
        }
        let nodes = self.nodes;
        let counted = match &mut self.shape {
            Shape::Missing => Ok(0),
            Shape::Packed(p) => Ok(placed(p).take_while(|(_, _, s)| below(*s)).count()),
            Shape::Split(s) => s.order.count_below(nodes, below),
        };
        nodes::noted(&mut self.failed, counted).unwrap_or(0)
    }

    /// How many members come before the first that `below` fails for (see
    /// `ZsetReader::count_below_member`). 0 if a node could not be read.
    pub fn count_below_member(&mut self, below: impl Fn(&[u8]) -> bool) -> usize {
        if self.failed.is_some() {
            return 0;
        }
        let nodes = self.nodes;
        let counted = match &mut self.shape {
            Shape::Missing => Ok(0),
            Shape::Packed(p) => Ok(members_below(p, below)),
            Shape::Split(s) => s.order.count_below_member(nodes, below),
        };
        nodes::noted(&mut self.failed, counted).unwrap_or(0)
    }

    /// Removes the members of ranks `ranks`, counted from the least and kept within
    /// the set by the caller; returns how many went.
    pub fn remove_ranks(&mut self, ranks: Range<usize>) -> usize {
        assert!(ranks.end <= self.len(), "ranks within the set");
        if self.failed.is_some() || ranks.is_empty() {
            return 0;
        }
        self.changed = true;
        let nodes = self.nodes;
        let done = match &mut self.shape {
            Shape::Missing => unreachable!("ranks within an empty set"),
            Shape::Packed(p) => {
                let gone: Vec<Range<usize>> = placed(p)
                    .skip(ranks.start)
                    .take(ranks.len())
                    .map(|(r, _, _)| r)
                    .collect();
                p.drain(gone[0].start..gone[gone.len() - 1].end);
                let n = packed::count(p) - ranks.len();
                packed::set_count(p, n);
                Ok(())
            }
            Shape::Split(s) => {
                let members = &mut s.members;
                s.order.remove_ranks(nodes, ranks.clone(), |m| {
                    members.remove(m);
                })
            }
        };
        nodes::noted(&mut self.failed, done).map_or(0, |()| ranks.len())
    }

    /// What to store: `None` if nothing changed, `Some(None)` to delete the key,
    /// `Some(Some(stored))` otherwise, with `deadline` kept. The error of a node that
    /// could not be read, if one could not: then nothing is to be stored.
    #[cfg(test)]
    pub fn finish(self, deadline: Option<u64>) -> Result<Outcome> {
        Ok(self.finish_releasing(deadline)?.0)
    }

    /// [`ZsetEditor::finish`], and, when a split set stays split, the nodes (and
    /// pages) the value it read names and the one to store does not, so that the store
    /// need not read both tables to find them ([`crate::nodes::dropped`], which took
    /// a tenth of a ZADD's time on a set of 100,000 members).
    pub fn finish_releasing(
        mut self,
        deadline: Option<u64>,
    ) -> Result<(Outcome, Option<Vec<u64>>)> {
        let nodes = self.nodes;
        let shape = std::mem::replace(&mut self.shape, Shape::Missing);
        if let Some(e) = self.failed.take() {
            if let Shape::Split(mut s) = shape {
                // As far as reads still go: on an engine, what is left stays in the
                // failed edit's batch, which is never written.
                if let Ok((after, _)) = s.members_after(nodes) {
                    s.discard_members(nodes, after.as_deref()).ok();
                }
            }
            return Err(e);
        }
        if !self.changed {
            return Ok((None, None));
        }
        let packed = match shape {
            Shape::Missing => unreachable!("a change leaves a packed value or nodes"),
            Shape::Packed(p) => p,
            Shape::Split(mut s) => {
                let (members, members_released) = s.members_after(nodes)?;
                let len = s.order.len();
                // Only a set of two nodes or fewer may be stored whole again.
                let bytes = if len <= 2 { s.order.bytes()? } else { 0 };
                if len > 2 || (len == 2 && bytes >= NODE_BYTES / 2) {
                    let members = members.as_deref().unwrap_or(&s.members_base);
                    let count = s.order.count();
                    let (order, order_released) = s.order.written(nodes)?;
                    let table = encode(members, &order);
                    if cfg!(debug_assertions) {
                        check(nodes, &table, count)?;
                    }
                    let stored = Entry::encode_node_table(Kind::ZSet, table, deadline, true);
                    let released = members_released.map(|mut r| {
                        r.extend(order_released);
                        r
                    });
                    return Ok((Some(Some(stored)), released));
                }
                s.discard_members(nodes, members.as_deref())?;
                let mut b = Builder::with_capacity(bytes);
                for at in 0..len {
                    let node = s.order.load(nodes, at)?;
                    b.push_packed(
                        packed::elements(node).remaining_bytes(),
                        packed::count(node),
                    );
                }
                b.finish()
            }
        };
        if packed::count(&packed) == 0 {
            return Ok((Some(None), None));
        }
        let raw = self.raw || (self.large)(&packed);
        let stored = Entry {
            value: packed,
            deadline,
            raw,
            kind: Kind::ZSet,
        };
        Ok((Some(Some(stored.into_stored())), None))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::db::Db;
    use crate::nodes::{large_by_count as large, settled, MemoryNodes};

    #[derive(Debug, Clone)]
    enum Op {
        Set(Vec<u8>, f64),
        Remove(Vec<u8>),
        Score(Vec<u8>),
        Pop(bool),
        /// Removes ranks from a place (a share of the set) on, this many.
        RemoveRanks(prop::sample::Index, usize),
        /// Counts the members scored below this.
        CountBelow(f64),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Members from a small space so that writes meet, mostly short, a few longer
        // than a node; scores from a few values, so that many nodes start tied.
        let member = prop_oneof![
            30 => (0..700u32).prop_map(|n| format!("m{n}").into_bytes()),
            1 => (0..3u32, 1..2 * NODE_BYTES).prop_map(|(n, len)| vec![b'a' + n as u8; len]),
        ];
        let score = prop_oneof![
            3 => (-3..3i32).prop_map(f64::from),
            1 => any::<f64>().prop_filter("a score", |s| !s.is_nan()),
        ];
        prop_oneof![
            12 => (member.clone(), score).prop_map(|(m, s)| Op::Set(m, s)),
            3 => member.clone().prop_map(Op::Remove),
            2 => member.prop_map(Op::Score),
            1 => any::<bool>().prop_map(Op::Pop),
            1 => (any::<prop::sample::Index>(), prop_oneof![4 => 0..5usize, 1 => 0..100usize])
                .prop_map(|(at, n)| Op::RemoveRanks(at, n)),
            1 => (-4..4i32).prop_map(|s| Op::CountBelow(f64::from(s))),
        ]
    }

    /// The model's members in the set's order.
    fn ordered(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut all: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        all.sort_by(|a, b| score_order((&a.0, a.1), (&b.0, b.1)));
        all
    }

    /// The count and records of the stored order table `order`.
    fn order_refs(nodes: &MemoryNodes, order: &[u8]) -> (usize, Vec<NodeRef>) {
        let records = Records::new(nodes, LAYOUT, order);
        let refs = records
            .all()
            .unwrap()
            .iter()
            .map(|r| NodeRef::of(r))
            .collect();
        (records.count(), refs)
    }

    /// The invariants of a stored split set: order nodes within their size (but for a
    /// member larger on its own), their records true to them, their members in order
    /// across nodes, and the members half holding the same members and scores.
    fn check_split(nodes: &MemoryNodes, stored: &[u8], want: &[(Vec<u8>, f64)]) {
        let table = Entry::stored_payload(stored);
        let (members, order) = halves(table);
        let (count, refs) = order_refs(nodes, order);
        assert_eq!(count, want.len());
        let mut all = Vec::new();
        for n in &refs {
            let node = nodes.read(n.id).unwrap();
            assert_eq!(node_ref(n.id, &node), *n, "a record true to its node");
            assert!(
                node.len() <= ORDER_NODE_BYTES
                    || n.count == 1
                    || placed(&node).any(|(r, _, _)| r.len() > FILL)
            );
            all.extend(placed(&node).map(|(_, m, s)| (m.to_vec(), s)));
        }
        assert_eq!(all, want, "the order nodes hold the set in order");
        let reader = FieldReader::new(nodes, members);
        assert_eq!(reader.len(), want.len());
        for (m, s) in want {
            assert_eq!(reader.get(m).unwrap(), Some(s.to_le_bytes().to_vec()));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Batches of sets, removes, lookups and pops, each batch one edit published as
        /// the store would, checked against a map of member to score: through the
        /// editor, the reader (scores, ranks, ranges by rank) and the expanded value; a
        /// large set is split, and nodes are released with their tables.
        #[test]
        fn split_sorted_sets_behave_as_ordered_maps(
            batches in prop::collection::vec(prop::collection::vec(op(), 1..200), 1..25),
        ) {
            let nodes = MemoryNodes::default();
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            let mut stored: Option<Vec<u8>> = None;
            for batch in batches {
                let _pin = crossbeam_epoch::pin();
                let mut editor = ZsetEditor::new(&nodes, stored.as_deref(), &large);
                for op in &batch {
                    match op {
                        Op::Set(m, s) => {
                            let added = editor.set(m, *s);
                            prop_assert_eq!(added, model.insert(m.clone(), *s).is_none());
                        }
                        Op::Remove(m) => prop_assert_eq!(editor.remove(m), model.remove(m)),
                        Op::Score(m) => prop_assert_eq!(editor.score(m), model.get(m).copied()),
                        Op::RemoveRanks(at, n) => {
                            let all = ordered(&model);
                            let start = at.index(all.len() + 1);
                            let end = (start + n).min(all.len());
                            prop_assert_eq!(editor.remove_ranks(start..end), end - start);
                            for (m, _) in &all[start..end] {
                                model.remove(m);
                            }
                        }
                        Op::CountBelow(limit) => {
                            let want = model.values().filter(|s| **s < *limit).count();
                            prop_assert_eq!(editor.count_below(|s| s < *limit), want);
                        }
                        Op::Pop(max) => {
                            let all = ordered(&model);
                            let want = if *max { all.last() } else { all.first() };
                            let popped = editor.pop(*max);
                            prop_assert_eq!(popped.as_ref(), want);
                            if let Some((m, _)) = want {
                                model.remove(m);
                            }
                        }
                    }
                    prop_assert_eq!(editor.len(), model.len());
                }
                let (new, known) = editor.finish_releasing(None).unwrap();
                crate::nodes::publish(&nodes, &mut stored, new, known);
                prop_assert_eq!(stored.is_none(), model.is_empty());
                let Some(s) = stored.as_deref() else { continue };
                let want = ordered(&model);
                if Entry::stored_is_node_table(s) {
                    check_split(&nodes, s, &want);
                }
                let whole = Entry::decode(crate::nodes::expand(&nodes, s).unwrap());
                prop_assert_eq!(whole.kind, Kind::ZSet);
                let got: Vec<(Vec<u8>, f64)> =
                    packed::scored(&whole.value).map(|(m, s)| (m.to_vec(), s)).collect();
                prop_assert_eq!(&got, &want);
                // Split only in the large encoding, and there whenever it is large.
                if Entry::stored_is_node_table(s) {
                    prop_assert!(whole.raw);
                } else if whole.raw && model.len() >= 2 {
                    prop_assert!(whole.value.len() <= NODE_BYTES || cut(&whole.value).len() < 2);
                }
                let reader = ZsetReader::new(&nodes, s);
                prop_assert_eq!(reader.len(), want.len());
                for op in &batch {
                    let (Op::Set(m, _) | Op::Remove(m) | Op::Score(m)) = op else {
                        if let Op::CountBelow(limit) = op {
                            let want = model.values().filter(|s| **s < *limit).count();
                            prop_assert_eq!(reader.count_below(|s| s < *limit).unwrap(), want);
                        }
                        continue;
                    };
                    prop_assert_eq!(reader.score(m).unwrap(), model.get(m).copied());
                    let rank = want.iter().position(|(w, _)| w == m);
                    prop_assert_eq!(reader.rank(m).unwrap(), rank);
                }
                let len = want.len();
                for ranks in [0..len, 0..len.min(3), len / 2..len, len.saturating_sub(1)..len] {
                    prop_assert_eq!(reader.by_rank(ranks.clone()).unwrap(), want[ranks].to_vec());
                }
                // Scattered, unordered and repeated ranks come back in the order asked.
                let scattered: Vec<usize> = (0..len.min(40)).map(|i| (i * 7919 + len / 3) % len).collect();
                let at: Vec<(Vec<u8>, f64)> = scattered.iter().map(|&r| want[r].clone()).collect();
                prop_assert_eq!(reader.at_ranks(&scattered).unwrap(), at);
            }
            crate::nodes::check_released(&nodes, stored.as_deref());
        }
    }

    /// A set of one score (ordered by member only) is split, and every member is
    /// found by rank through the binary search among the nodes that start tied.
    #[test]
    fn members_of_one_score_are_found_among_tied_nodes() {
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let mut editor = ZsetEditor::new(&nodes, None, &large);
        let members: Vec<Vec<u8>> = (0..60_000)
            .map(|i| format!("member:{i:05}").into_bytes())
            .collect();
        for m in members.iter().rev() {
            assert!(editor.set(m, 1.5));
        }
        let stored = editor.finish(None).unwrap().unwrap().unwrap();
        assert!(Entry::stored_is_node_table(&stored));
        // A write in the middle of the tie finds its node across pages.
        let mut editor = ZsetEditor::new(&nodes, Some(&stored), &large);
        assert_eq!(editor.remove(b"member:31000"), Some(1.5));
        assert!(editor.set(b"member:31000", 1.5));
        let rewritten = editor.finish(None).unwrap().unwrap().unwrap();
        let released = crate::nodes::dropped(&nodes, &stored, Some(&rewritten)).unwrap();
        assert!(released.len() <= 8, "a write released {released:?}");
        nodes.retire(&stored, Some(&rewritten));
        let stored = rewritten;
        let (_, refs) = order_refs(&nodes, halves(Entry::stored_payload(&stored)).1);
        // Enough nodes that the order table is paged, the tie spanning its pages.
        assert!(refs.len() > 300 && refs.iter().all(|n| n.first == 1.5));
        let reader = ZsetReader::new(&nodes, &stored);
        for (i, m) in members.iter().enumerate().step_by(397) {
            assert_eq!(reader.rank(m).unwrap(), Some(i));
        }
        assert_eq!(reader.rank(b"member:31000").unwrap(), Some(31_000));
        assert_eq!(reader.rank(b"member:").unwrap(), None);
        // Lex bounds: the members before each, by a binary search on the nodes' first
        // members, in the reader and the editor alike.
        let mut editor = ZsetEditor::new(&nodes, Some(&stored), &large);
        for probe in [
            "",
            "member:",
            "member:00000",
            "member:00001",
            "member:17",
            "member:31000",
            "member:31000\0",
            "member:59999",
            "member:~",
            "n",
        ] {
            let probe = probe.as_bytes();
            let want = members.partition_point(|m| m.as_slice() < probe);
            let below = |m: &[u8]| m < probe;
            assert_eq!(reader.count_below_member(below).unwrap(), want);
            assert_eq!(editor.count_below_member(below), want);
        }
        assert_eq!(editor.remove_ranks(100..59_900), 59_800);
        // The 100 members left before the bound, and 50 of the last 100.
        assert_eq!(
            editor.count_below_member(|m| m < b"member:59950".as_slice()),
            150
        );
        drop(editor);
        let want: Vec<(Vec<u8>, f64)> = members.iter().map(|m| (m.clone(), 1.5)).collect();
        check_split(&nodes, &stored, &want);
        nodes.retire(&stored, None);
    }

    /// Many threads add, rescore, remove and pop members of one sorted set through
    /// `Db` (compare-and-set races, retried edits, readers pinned across node reads):
    /// every member's last score wins, removed members stay removed, each pop takes a
    /// member once, and every node is released once the key is deleted.
    #[test]
    fn concurrent_sorted_set_writes_and_reads_lose_nothing() {
        const WRITERS: usize = 4;
        const EACH: usize = 1500;
        let db = Db::default();
        let large: &(dyn Fn(&[u8]) -> bool + Sync) = &large;
        let score =
            |w: usize, i: usize, round: usize| ((i * 7 + w) % 50) as f64 + round as f64 / 2.0;
        let popped = std::sync::Mutex::new(Vec::new());
        // Pops start once every writer is done, so none takes a member still written.
        let done = std::sync::Barrier::new(WRITERS);
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (db, popped, done) = (&db, &popped, &done);
                s.spawn(move || {
                    for round in 0..2 {
                        for i in 0..EACH {
                            let member = format!("{w}:{i}");
                            db.edit_zset(b"z", large, |z| {
                                z.set(member.as_bytes(), score(w, i, round))
                            })
                            .unwrap()
                            .expect("a sorted set");
                        }
                    }
                    for chunk in (0..EACH).step_by(3).collect::<Vec<_>>().chunks(7) {
                        let removed = db
                            .edit_zset(b"z", large, |z| {
                                chunk
                                    .iter()
                                    .filter(|i| z.remove(format!("{w}:{i}").as_bytes()).is_some())
                                    .count()
                            })
                            .unwrap()
                            .expect("a sorted set")
                            .result;
                        assert_eq!(removed, chunk.len(), "each removed once");
                    }
                    done.wait();
                    let taken = db.edit_zset(b"z", large, |z| z.pop(w % 2 == 0)).unwrap();
                    popped
                        .lock()
                        .unwrap()
                        .push(taken.expect("a sorted set").result.expect("a member"));
                });
            }
            for r in 0..2 {
                let db = &db;
                s.spawn(move || {
                    for n in 0..3000usize {
                        let (w, i) = ((n + r) % WRITERS, (n * 7) % EACH);
                        let member = format!("{w}:{i}");
                        let got = db
                            .read_zset(b"z", |z| match z {
                                Some(z) => z.score(member.as_bytes()),
                                None => Ok(None),
                            })
                            .unwrap()
                            .expect("a sorted set");
                        if let Some(s) = got {
                            assert!(
                                s == score(w, i, 0) || s == score(w, i, 1),
                                "{member} scored {s}"
                            );
                        }
                    }
                });
            }
        });
        let mut want: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        for w in 0..WRITERS {
            for i in (0..EACH).filter(|i| i % 3 != 0) {
                want.insert(format!("{w}:{i}").into_bytes(), score(w, i, 1));
            }
        }
        let popped = popped.into_inner().unwrap();
        for (m, s) in &popped {
            assert_eq!(want.remove(m), Some(*s), "popped once, with its last score");
        }
        let zset = db.get(b"z").unwrap().expect("the sorted set");
        let got: Vec<(Vec<u8>, f64)> = packed::scored(&zset.value)
            .map(|(m, s)| (m.to_vec(), s))
            .collect();
        assert_eq!(got, ordered(&want));
        assert!(db.collection_nodes().unwrap() > 10, "it was split");
        db.remove(b"z").unwrap();
        let nodes = || db.collection_nodes().expect("the memory store");
        assert!(settled(nodes, 0), "{} nodes left", nodes());
    }
}
