//! Large hashes and sets split into nodes by the hash of their fields (a set's members
//! are its fields), so that HSET, HGET, HDEL, SADD, SISMEMBER and the like read and
//! copy the one node a field falls in, and the node table, rather than the whole
//! value. How nodes are stored and released, and why readers need no lock, is in
//! `nodes.rs`.
//!
//! ```text
//! node table = a table of records (`table_pages.rs`: inline, or in pages once long)
//!              counting the fields of the hash, the members of the set
//! record     = low (u64 LE) | id (u64 LE) | count (u32 LE) | bytes (u32 LE: its packed size)
//! ```
//!
//! Records are in ascending order of `low`, one a node. A node holds the fields whose
//! hash ([`field_hash`]) lies from its `low` up to the next node's `low` (the last
//! node's up to 2^64 - 1); the first node also holds every hash below its `low`. A
//! node's `low` is fixed when it is written, so a node id names the same range in
//! every table that holds it. A node is a packed hash (field, value pairs) or a packed
//! set (members) of at least one field, in the order they were added to it.
//!
//! Only a hash or set held in Redis's large encoding (`Entry::raw`: a hashtable, whose
//! order is no order) is split, once its packed form passes [`FIELD_NODE_BYTES`]; a
//! small hash keeps the insertion order Redis's listpack lists it in. A node that
//! passes [`FIELD_NODE_BYTES`] is split at hashes between its fields; a node emptied is
//! dropped, the node before it taking its range (or, for the first, the one after); a
//! table left with one node, or with two holding less than half of
//! [`FIELD_NODE_BYTES`], is stored whole again, a set with its members sorted again as
//! `packed::set_order` keeps a whole set.

use std::borrow::Cow;
use std::collections::{btree_map, BTreeMap};
use std::ops::Range;

use engine::Result;
use rand::Rng;

use crate::entry::{Entry, Kind};
use crate::nodes::{NodeStore, Outcome, NODE_BYTES};
use crate::packed::{self, set_order, Builder};
use crate::table_pages::{self, Layout};

/// Bytes of a node's record in the node table.
const RECORD: usize = 24;
type Record = [u8; RECORD];
type Records<'a> = table_pages::Records<'a, RECORD>;

/// How the records of a node table (`table_pages.rs`) lie: in order of `low`.
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 0,
    id_at: 8,
    count_at: 16,
    bytes_at: 20,
    names_nodes: true,
    inline_records: table_pages::PAGE_RECORDS as u16,
};

/// The packed size past which a hash or set in Redis's large encoding is split, and up
/// to which a node is filled: a quarter of the other collections' [`NODE_BYTES`],
/// because every write of a field scans its node for it and copies it (a list's push
/// scans nothing), so the scan and the copy are what a write costs. 200,000 SADDs into
/// one set ran 1.1-1.4x as fast at 1 KB as at 4 KB, 2 KB in between (BENCHMARKS.md).
pub const FIELD_NODE_BYTES: usize = 1024;

/// How full a split leaves a node, so that the next few writes to it do not split it
/// again.
const FILL: usize = FIELD_NODE_BYTES * 3 / 4;

/// The hash that places a field in a node. It is part of the stored format on an
/// engine: a change to it would lose the fields of tables already written.
pub fn field_hash(field: &[u8]) -> u64 {
    hotring::hash::hash64(field)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NodeRef {
    low: u64,
    id: u64,
    count: u32,
    bytes: u32,
}

impl NodeRef {
    fn of(r: &[u8]) -> Self {
        NodeRef {
            low: LAYOUT.key(r),
            id: LAYOUT.id(r),
            count: LAYOUT.count(r) as u32,
            bytes: LAYOUT.bytes(r) as u32,
        }
    }

    fn record(&self) -> Record {
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&self.low.to_le_bytes());
        r[8..16].copy_from_slice(&self.id.to_le_bytes());
        r[16..20].copy_from_slice(&self.count.to_le_bytes());
        r[20..].copy_from_slice(&self.bytes.to_le_bytes());
        r
    }
}

/// A node table: its records read where they lie, its pages (if long) as needed, and
/// changed in place by a write, which stores the pages it changed.
struct Table<'a> {
    records: Records<'a>,
}

impl<'a> Table<'a> {
    fn new(nodes: &'a dyn NodeStore, table: impl Into<Cow<'a, [u8]>>) -> Self {
        let table = Table {
            records: Records::new(nodes, LAYOUT, table),
        };
        assert!(table.len() >= 2, "a table of one node is stored whole");
        table
    }

    fn of(nodes: &'a dyn NodeStore, count: usize, refs: &[NodeRef]) -> Self {
        let records: Vec<Record> = refs.iter().map(NodeRef::record).collect();
        Table {
            records: Records::of(nodes, LAYOUT, count as u64, &records),
        }
    }

    fn count(&self) -> usize {
        self.records.count()
    }

    /// Nodes in the table.
    fn len(&self) -> usize {
        self.records.len()
    }

    fn node(&self, i: usize) -> Result<NodeRef> {
        Ok(NodeRef::of(&self.records.get(i)?))
    }

    fn nodes(&self) -> Result<Vec<NodeRef>> {
        Ok(self.records.all()?.iter().map(|r| NodeRef::of(r)).collect())
    }

    /// The node whose range holds `hash`, as a read looks it up.
    fn node_for(&self, hash: u64) -> Result<NodeRef> {
        Ok(NodeRef::of(&self.records.last_where(|low| low <= hash)?))
    }

    /// The node whose range holds `hash`.
    fn find(&self, hash: u64) -> Result<usize> {
        Ok(self.records.partition(|low| low <= hash)?.max(1) - 1)
    }

    /// The invariants every stored table keeps: O(nodes), so checked in full by debug
    /// builds, and around each change by every build.
    fn check(&self) -> Result<()> {
        let nodes = self.nodes()?;
        assert!(nodes.len() >= 2, "a table of one node is stored whole");
        assert!(
            nodes.windows(2).all(|w| w[0].low < w[1].low),
            "nodes in ascending order of their ranges"
        );
        assert!(nodes.iter().all(|n| n.count >= 1), "an empty node");
        assert!(
            nodes
                .iter()
                .all(|n| n.bytes as usize <= NODE_BYTES || n.count == 1),
            // Tables written before nodes were cut to FIELD_NODE_BYTES hold nodes up to
            // NODE_BYTES; each is split at its next write.
            "a node past NODE_BYTES holds one field"
        );
        assert_eq!(
            nodes.iter().map(|n| n.count as usize).sum::<usize>(),
            self.count(),
            "a table's count is its nodes' counts"
        );
        Ok(())
    }

    fn set_count(&mut self, count: usize) {
        self.records.set_count(count);
    }

    /// Replaces nodes `range` by `nodes`, which keep the ranges in order with their
    /// neighbours.
    fn splice(&mut self, range: Range<usize>, nodes: &[NodeRef]) -> Result<()> {
        let records: Vec<Record> = nodes.iter().map(NodeRef::record).collect();
        let start = range.start;
        self.records.splice(range, &records)?;
        let last = start + nodes.len();
        if start > 0 && last > start {
            assert!(
                self.node(start - 1)?.low < self.node(start)?.low,
                "ranges in order"
            );
        }
        if last > 0 && last < self.len() {
            assert!(
                self.node(last - 1)?.low < self.node(last)?.low,
                "ranges in order"
            );
        }
        Ok(())
    }

    /// Replaces node `at` by `node`, which covers the same range: nothing moves, so
    /// nothing needs checking around it.
    fn replace(&mut self, at: usize, node: NodeRef) -> Result<()> {
        self.records.splice(at..at + 1, &[node.record()])
    }

    /// The table as stored, its changed pages written, and what the table it was read
    /// from names and it does not (see [`Records::finish_releasing`]).
    fn finish(self) -> Result<(Vec<u8>, Vec<u64>)> {
        if cfg!(debug_assertions) {
            self.check()?;
        }
        let (table, released) = self.records.finish_releasing()?;
        Ok((table.into_owned(), released))
    }
}

/// The nodes `table` names (and its pages), each its id and stored size.
pub fn nodes(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<(u64, usize)>> {
    table_pages::nodes(nodes, LAYOUT, table)
}

/// The nodes (and pages) the table `old` names and the table `new` does not.
pub fn dropped(nodes: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    table_pages::dropped(nodes, LAYOUT, old, new)
}

/// The fields of a packed hash or set, each with the bytes of its whole entry as
/// packed (a hash's field and value, a set's member).
fn entries(kind: Kind, packed: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let width = if kind == Kind::Hash { 2 } else { 1 };
    let mut it = packed::elements(packed);
    std::iter::from_fn(move || {
        let before = it.remaining_bytes();
        let field = it.next()?;
        for _ in 1..width {
            it.next()?;
        }
        let used = before.len() - it.remaining_bytes().len();
        Some((field, &before[..used]))
    })
}

/// What a lookup of a field answers: a hash's value; for a set, an empty value.
fn value_of(kind: Kind, entry: &[u8]) -> Vec<u8> {
    if kind == Kind::Set {
        return Vec::new();
    }
    let mut it = packed::elements_of(entry);
    it.next();
    it.next().unwrap_or_default().to_vec()
}

/// Where `field`'s entry lies in the packed value `packed`: its byte range.
/// Every write of a field scans its node (some dozens of entries), so the scan reads
/// lengths where they lie ([`packed::element_at`]), and compares lengths and last bytes
/// before calling memcmp: of a node's fields, few share both with the one sought. The
/// iterator of entries it used spent ~45 instructions an entry (BENCHMARKS.md).
fn locate(kind: Kind, packed: &[u8], field: &[u8]) -> Option<Range<usize>> {
    let mut at = packed::HEADER;
    while at < packed.len() {
        let start = at;
        let Some(f) = packed::element_at(packed, at) else {
            debug_assert!(false, "a packed field cut short");
            return None;
        };
        at = f.end;
        if kind == Kind::Hash {
            let Some(value) = packed::element_at(packed, at) else {
                debug_assert!(false, "a packed value cut short");
                return None;
            };
            at = value.end;
        }
        let f = &packed[f];
        if f.len() == field.len() && f.last() == field.last() && f == field {
            return Some(start..at);
        }
    }
    None
}

/// The packed entry of `field` (and `value`, for a hash).
fn entry_bytes(kind: Kind, field: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len() + value.len() + 10);
    packed::put_element(&mut out, field);
    if kind == Kind::Hash {
        packed::put_element(&mut out, value);
    }
    out
}

/// Cuts `entries` (hash, entry bytes), sorted by hash, into runs of an even share of
/// their bytes, none past [`FILL`] unless one entry is on its own, and at least two if
/// they allow: never between two entries of one hash, so each run is a range of hashes.
/// Returns where each run starts.
fn cut(entries: &[(u64, &[u8])]) -> Vec<usize> {
    let total: usize = entries.iter().map(|e| e.1.len()).sum();
    let share = total / total.div_ceil(FILL).max(2);
    let mut starts = vec![0];
    let mut run = 0;
    for (i, e) in entries.iter().enumerate() {
        let len = e.1.len();
        if i > 0 && e.0 != entries[i - 1].0 && (run >= share || run + len > FILL) {
            starts.push(i);
            run = 0;
        }
        run += len;
    }
    starts
}

/// Writes the entries of the packed hash or set `packed`, a node starting at `low`, as
/// nodes [`cut`] by hash; None if they make one node only. The first part starts at
/// `low`, or below it at its least hash: only the table's first node holds hashes
/// below its `low`, and the parts after it must start above them.
fn split(nodes: &dyn NodeStore, kind: Kind, packed: &[u8], low: u64) -> Option<Vec<NodeRef>> {
    let mut sorted: Vec<(u64, &[u8])> = entries(kind, packed)
        .map(|(f, e)| (field_hash(f), e))
        .collect();
    sorted.sort_by_key(|e| e.0);
    let starts = cut(&sorted);
    if starts.len() < 2 {
        return None;
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(sorted.len());
        let run = &sorted[start..end];
        let mut b = Builder::with_capacity(run.iter().map(|e| e.1.len()).sum());
        for e in run {
            b.push_packed(e.1, 1);
        }
        let node = b.finish();
        out.push(NodeRef {
            low: if i == 0 { low.min(run[0].0) } else { run[0].0 },
            id: nodes.write(&node),
            count: packed::count(&node) as u32,
            bytes: node.len() as u32,
        });
    }
    Some(out)
}

/// The node table of the packed hash or set `packed` split into nodes written to
/// `nodes`, if it passes [`FIELD_NODE_BYTES`] and its fields make two nodes at least.
/// Only for a value held in Redis's large encoding (see the top of this file).
pub fn split_if_large(nodes: &dyn NodeStore, kind: Kind, packed: &[u8]) -> Option<Vec<u8>> {
    if packed.len() <= FIELD_NODE_BYTES {
        return None;
    }
    let refs = split(nodes, kind, packed, 0)?;
    let table = Table::of(nodes, packed::count(packed), &refs);
    Some(table.finish().expect("a new table's pages are at hand").0)
}

/// The whole packed hash or set of `packed` nodes, in table order: a set's members
/// sorted by `packed::set_order`, as a whole set keeps them.
fn joined(kind: Kind, nodes: &[impl AsRef<[u8]>]) -> Vec<u8> {
    let bytes = nodes.iter().map(|n| n.as_ref().len()).sum();
    if kind == Kind::Set {
        let mut members: Vec<&[u8]> = nodes
            .iter()
            .flat_map(|n| packed::elements(n.as_ref()))
            .collect();
        members.sort_by(|a, b| set_order(a, b));
        let mut b = Builder::with_capacity(bytes);
        for m in members {
            b.push(m);
        }
        return b.finish();
    }
    let mut b = Builder::with_capacity(bytes);
    for n in nodes.iter().map(AsRef::as_ref) {
        b.push_packed(packed::elements(n).remaining_bytes(), packed::count(n));
    }
    b.finish()
}

/// The whole packed hash or set whose node table is `table`. The caller read the table
/// pinned (memory) or holds the key's lock (engine).
pub fn expand(nodes: &dyn NodeStore, kind: Kind, table: &[u8]) -> Result<Vec<u8>> {
    let table = Table::new(nodes, table);
    let read: Vec<Cow<[u8]>> = table
        .nodes()?
        .iter()
        .map(|n| nodes.read(n.id))
        .collect::<Result<_>>()?;
    let whole = joined(kind, &read);
    assert_eq!(
        packed::count(&whole),
        table.count(),
        "a table's count is its nodes'"
    );
    Ok(whole)
}

/// A hash or set as a read finds it: its fields looked up one node at a time.
pub struct FieldReader<'a> {
    kind: Kind,
    nodes: &'a dyn NodeStore,
    /// The packed value, or the node table if `table` is set.
    payload: &'a [u8],
    table: Option<Table<'a>>,
}

impl<'a> FieldReader<'a> {
    /// The hash or set stored as `stored`, its nodes (if split) in `nodes`.
    pub fn new(nodes: &'a dyn NodeStore, stored: &'a [u8]) -> Self {
        let payload = Entry::stored_payload(stored);
        FieldReader {
            kind: Entry::stored_kind(stored),
            nodes,
            payload,
            table: Entry::stored_is_node_table(stored).then(|| Table::new(nodes, payload)),
        }
    }

    /// Fields of the hash, members of the set.
    pub fn len(&self) -> usize {
        self.table
            .as_ref()
            .map_or_else(|| packed::count(self.payload), Table::count)
    }

    /// `field`'s value in a hash, an empty value for a member of a set; `None` if
    /// missing.
    pub fn get(&self, field: &[u8]) -> Result<Option<Vec<u8>>> {
        let kind = self.kind;
        let found = |p: &[u8]| locate(kind, p, field).map(|r| value_of(kind, &p[r]));
        Ok(match &self.table {
            None => found(self.payload),
            Some(t) => found(&self.nodes.read(t.node_for(field_hash(field))?.id)?),
        })
    }
}

impl FieldReader<'_> {
    /// A field and its value (empty for a set), chosen uniformly at random; `None` if
    /// there are none.
    pub fn random(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let entry_at = |p: &[u8], skip: usize| {
            entries(self.kind, p)
                .nth(skip)
                .map(|(f, e)| (f.to_vec(), value_of(self.kind, e)))
        };
        Ok(match &self.table {
            None if packed::count(self.payload) == 0 => None,
            None => entry_at(
                self.payload,
                rand::thread_rng().gen_range(0..packed::count(self.payload)),
            ),
            Some(t) => {
                let pick = rand::thread_rng().gen_range(0..t.count() as u64);
                let (at, skip) = t.records.by_element(pick)?;
                entry_at(&self.nodes.read(t.node(at)?.id)?, skip as usize)
            }
        })
    }
}

impl FieldReader<'_> {
    /// HSCAN and SSCAN: from `cursor`, calls `f` on each field and its value (empty for
    /// a set) of whole nodes until `count` are seen; returns the cursor to go on from,
    /// 0 at the end. A cursor is a field hash, the `low` of the next node, so a scan
    /// goes on where it was however the nodes were split or merged meanwhile: a field
    /// there for the whole scan is seen at least once. A value not split is seen whole
    /// at once (as Redis scans its small encodings).
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], &[u8])) -> Result<u64> {
        let kind = self.kind;
        let mut visit = |p: &[u8], from: Option<u64>| {
            let mut seen = 0;
            for (field, entry) in entries(kind, p) {
                if from.is_none_or(|c| field_hash(field) >= c) {
                    let mut parts = packed::elements_of(entry);
                    parts.next();
                    f(field, parts.next().unwrap_or_default());
                    seen += 1;
                }
            }
            seen
        };
        let Some(table) = &self.table else {
            visit(self.payload, None);
            return Ok(0);
        };
        let mut at = table.find(cursor)?;
        let mut seen = visit(&self.nodes.read(table.node(at)?.id)?, Some(cursor));
        while seen < count && at + 1 < table.len() {
            at += 1;
            seen += visit(&self.nodes.read(table.node(at)?.id)?, None);
        }
        Ok(if at + 1 < table.len() {
            table.node(at + 1)?.low
        } else {
            0
        })
    }
}

/// One of `total` fields chosen uniformly at random, from nodes holding `counts`
/// fields each: its node and its place there.
fn pick(total: usize, counts: impl Iterator<Item = usize>) -> (usize, usize) {
    let mut skip = rand::thread_rng().gen_range(0..total);
    for (at, count) in counts.enumerate() {
        match skip.checked_sub(count) {
            Some(rest) => skip = rest,
            None => return (at, skip),
        }
    }
    unreachable!("a table's count is its nodes' counts")
}

/// A field of the split value being edited chosen uniformly at random: its node and its
/// place there. The records count what the nodes held when the edit began; the nodes
/// it changed count what they hold now. If none of those holds more than its record
/// says (an edit that only removed, as SPOP), a pick by the records (one page) that
/// falls past what its node holds now is drawn again, which keeps the pick uniform;
/// after a few misses, or if a changed node grew, every record is weighed.
fn pick_split(table: &Table, loaded: &BTreeMap<usize, Loaded>) -> Result<(usize, usize)> {
    const DRAWS: usize = 8;
    let now = |at: usize| loaded.get(&at).map(|l| packed::count(&l.packed) as u64);
    let mut only_shrunk = true;
    for &at in loaded.keys() {
        only_shrunk &= now(at) <= Some(u64::from(table.node(at)?.count));
    }
    if only_shrunk {
        let recorded = table.records.recorded();
        for _ in 0..DRAWS {
            let rank = rand::thread_rng().gen_range(0..recorded);
            let (at, skip) = table.records.by_element(rank)?;
            if now(at).is_none_or(|n| skip < n) {
                return Ok((at, skip as usize));
            }
        }
    }
    let refs = table.nodes()?;
    let counts = refs
        .iter()
        .enumerate()
        .map(|(at, n)| now(at).map_or(n.count as usize, |c| c as usize));
    Ok(pick(table.count(), counts))
}

/// A hash or set as a write finds it and leaves it.
enum Shape<'a> {
    Missing,
    Packed(Vec<u8>),
    /// The table, and the nodes this edit read, by their place in it.
    Split(Table<'a>, BTreeMap<usize, Loaded>),
}

struct Loaded {
    packed: Vec<u8>,
    changed: bool,
}

/// Where a field lies in an edit ([`FieldEditor::lookup`]).
struct Lookup<'n> {
    /// The node it falls in (0 if not split).
    at: usize,
    /// Its entry's bytes in the node; `None` if it is missing.
    entry: Option<Range<usize>>,
    /// The node's packed bytes.
    packed: &'n mut Vec<u8>,
}

/// A hash or set being changed by one write (see `Db::edit_fields`): fields set and
/// removed in its packed form or, if split, in the nodes they fall in only. Every
/// write leaves what it changed within [`FIELD_NODE_BYTES`] at once, so that a
/// command naming thousands of fields costs what as many commands would, not their
/// square.
pub struct FieldEditor<'a> {
    nodes: &'a dyn NodeStore,
    kind: Kind,
    shape: Shape<'a>,
    /// Held in Redis's large encoding: from before, or since `large` said so.
    raw: bool,
    large: &'a dyn Fn(&[u8]) -> bool,
    /// Nodes this edit wrote: removed at once if the edit drops them again.
    fresh: Vec<u64>,
    changed: bool,
    /// The first node read that failed (an engine's I/O): the edit then writes nothing.
    failed: Option<engine::Error>,
    /// The field last looked up by [`FieldEditor::get`] (`found_field`): its node and
    /// where its entry lies there (`None`: missing). A ZADD reads its member's score
    /// twice, then writes it, each a search of the table and a scan of the member's
    /// node (~1,200 instructions) but for this. Cleared by every access to a node
    /// ([`FieldEditor::node`]), so what it says holds of the bytes as they are.
    found: Option<(usize, Option<Range<usize>>)>,
    found_field: Vec<u8>,
}

impl<'a> FieldEditor<'a> {
    /// The hash or set of `kind` stored as `stored` (`None` if missing), its nodes in
    /// `nodes`; `large` tells whether a packed value passes Redis's limits for its
    /// small encoding. A split one's table is read where it is stored (a copy of a
    /// hash's root of a thousand fields cost an HSET 700 instructions).
    pub fn new(
        nodes: &'a dyn NodeStore,
        kind: Kind,
        stored: Option<&'a [u8]>,
        large: &'a dyn Fn(&[u8]) -> bool,
    ) -> Self {
        match stored {
            Some(s) if Entry::stored_is_node_table(s) => {
                let table = Table::new(nodes, Entry::stored_payload(s));
                let shape = Shape::Split(table, BTreeMap::new());
                Self::of_shape(nodes, kind, shape, Entry::stored_raw(s), large)
            }
            _ => Self::whole(nodes, kind, stored, large),
        }
    }

    /// [`FieldEditor::new`] of a hash or set stored whole (not split), copied: `stored`
    /// need not outlive the editor.
    pub fn whole(
        nodes: &'a dyn NodeStore,
        kind: Kind,
        stored: Option<&[u8]>,
        large: &'a dyn Fn(&[u8]) -> bool,
    ) -> Self {
        let Some(s) = stored else {
            return Self::of_shape(nodes, kind, Shape::Missing, false, large);
        };
        assert!(!Entry::stored_is_node_table(s), "a split hash or set");
        let shape = Shape::Packed(Entry::stored_payload_to_edit(s));
        Self::of_shape(nodes, kind, shape, Entry::stored_raw(s), large)
    }

    /// An editor of the hash or set of `kind` held as `shape`, in Redis's large
    /// encoding if `raw`.
    fn of_shape(
        nodes: &'a dyn NodeStore,
        kind: Kind,
        shape: Shape<'a>,
        raw: bool,
        large: &'a dyn Fn(&[u8]) -> bool,
    ) -> Self {
        assert!(matches!(kind, Kind::Hash | Kind::Set));
        FieldEditor {
            nodes,
            kind,
            shape,
            raw,
            large,
            fresh: Vec::new(),
            changed: false,
            failed: None,
            found: None,
            found_field: Vec::new(),
        }
    }

    /// Whether the hash or set has fields.
    pub fn exists(&self) -> bool {
        !matches!(self.shape, Shape::Missing)
    }

    /// Fields of the hash, members of the set, with this edit's changes.
    pub fn len(&self) -> usize {
        match &self.shape {
            Shape::Missing => 0,
            Shape::Packed(p) => packed::count(p),
            Shape::Split(table, _) => table.count(),
        }
    }

    /// Removes every field; returns them in the order they are kept (a whole set's
    /// `set_order`, a split one's node by node). Empty if a node could not be read.
    pub fn take_all(&mut self) -> Vec<Vec<u8>> {
        if self.failed.is_some() || !self.exists() {
            return Vec::new();
        }
        let count = match &self.shape {
            Shape::Split(table, _) => table.len(),
            _ => 1,
        };
        let mut all = Vec::with_capacity(self.len());
        for at in 0..count {
            let kind = self.kind;
            let Some(node) = self.node(at, true) else {
                return Vec::new();
            };
            all.extend(entries(kind, node).map(|(f, _)| f.to_vec()));
        }
        for id in self.fresh.drain(..) {
            self.nodes.discard(id);
        }
        self.shape = Shape::Packed(Builder::with_capacity(0).finish());
        self.changed = true;
        all
    }

    /// The node `field` falls in (0 if not split), where its entry lies there (`None`:
    /// missing), and its packed bytes, read if need be; `None` if missing, or if a node
    /// could not be read. Known without a search if it is the field last looked up by
    /// [`FieldEditor::get`] and no node was touched since.
    fn lookup(&mut self, field: &[u8]) -> Option<Lookup<'_>> {
        let known = self.found.take().filter(|_| self.found_field == field);
        let at = match (&known, &self.shape) {
            (Some((at, _)), _) => *at,
            (None, Shape::Split(table, _)) => {
                let found = table.find(field_hash(field));
                crate::nodes::noted(&mut self.failed, found)?
            }
            (None, _) => 0,
        };
        let kind = self.kind;
        let packed = self.node(at, false)?;
        let entry = match known {
            Some((_, entry)) => entry,
            None => locate(kind, packed, field),
        };
        Some(Lookup { at, entry, packed })
    }

    /// The packed value, or node `at` of a split one, read if need be and marked
    /// changed if `change`; `None` if missing, or if the node could not be read.
    fn node(&mut self, at: usize, change: bool) -> Option<&mut Vec<u8>> {
        self.found = None;
        if self.failed.is_some() {
            return None;
        }
        match &mut self.shape {
            Shape::Missing => None,
            Shape::Packed(p) => Some(p),
            Shape::Split(table, loaded) => {
                if let btree_map::Entry::Vacant(v) = loaded.entry(at) {
                    let read = table
                        .node(at)
                        .and_then(|n| self.nodes.read(n.id).map(|node| packed::editable(&node)));
                    let packed = crate::nodes::noted(&mut self.failed, read)?;
                    v.insert(Loaded {
                        packed,
                        changed: false,
                    });
                }
                let node = loaded.get_mut(&at).expect("loaded above");
                node.changed |= change;
                Some(&mut node.packed)
            }
        }
    }

    /// A field chosen uniformly at random; `None` if there are none (or a node could
    /// not be read).
    pub fn random_field(&mut self) -> Option<Vec<u8>> {
        // The edit may have removed every field already.
        let picked = match &self.shape {
            Shape::Missing => return None,
            Shape::Packed(p) if packed::count(p) == 0 => return None,
            Shape::Packed(p) => Ok((0, rand::thread_rng().gen_range(0..packed::count(p)))),
            Shape::Split(table, _) if table.count() == 0 => return None,
            Shape::Split(table, loaded) => pick_split(table, loaded),
        };
        let (at, skip) = crate::nodes::noted(&mut self.failed, picked)?;
        let kind = self.kind;
        let node = self.node(at, false)?;
        entries(kind, node).nth(skip).map(|(f, _)| f.to_vec())
    }

    /// `field`'s value in a hash, an empty value for a member of a set; `None` if
    /// missing.
    pub fn get(&mut self, field: &[u8]) -> Option<Vec<u8>> {
        let kind = self.kind;
        let Lookup { at, entry, packed } = self.lookup(field)?;
        let value = entry.clone().map(|r| value_of(kind, &packed[r]));
        self.found = Some((at, entry));
        self.found_field.clear();
        self.found_field.extend_from_slice(field);
        value
    }

    /// Sets `field` to `value` in a hash (a new field goes after the others), adds the
    /// member `field` to a set (`value` unused); returns whether `field` is new. A
    /// hash's write counts as a change even if the value is the same, as in Redis; a
    /// set's member already there changes nothing.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if self.failed.is_some() {
            return false;
        }
        let kind = self.kind;
        if matches!(self.shape, Shape::Missing) {
            self.shape = Shape::Packed(Builder::with_capacity(0).finish());
        }
        let sorted = kind == Kind::Set && matches!(self.shape, Shape::Packed(_));
        let Some(Lookup {
            at,
            entry: found,
            packed,
        }) = self.lookup(field)
        else {
            return false;
        };
        if kind == Kind::Set && found.is_some() {
            return false;
        }
        let entry = entry_bytes(kind, field, value);
        let added = match found {
            Some(r) => {
                packed::replace(packed, r, &entry);
                false
            }
            None => {
                let at = if sorted {
                    // A whole set keeps `set_order` (see `packed.rs`).
                    let mut at = packed::HEADER;
                    for (m, e) in entries(kind, packed) {
                        if set_order(m, field).is_gt() {
                            break;
                        }
                        at += e.len();
                    }
                    at
                } else {
                    packed.len()
                };
                packed::replace(packed, at..at, &entry);
                let n = packed::count(packed) + 1;
                packed::set_count(packed, n);
                true
            }
        };
        self.wrote(at, isize::from(added));
        self.settle(at);
        added
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let Some(Lookup {
            at,
            entry: Some(r),
            packed,
        }) = self.lookup(field)
        else {
            return false;
        };
        packed.drain(r);
        let n = packed::count(packed) - 1;
        packed::set_count(packed, n);
        self.wrote(at, -1);
        true
    }

    /// After a write to node `at` (the packed value if not split) that `added` (1),
    /// removed (-1) or replaced (0) a field: the edit has changed, and if split, so has
    /// the node, and the table's count follows.
    fn wrote(&mut self, at: usize, added: isize) {
        self.changed = true;
        if let Shape::Split(table, loaded) = &mut self.shape {
            loaded
                .get_mut(&at)
                .expect("the node written was read")
                .changed = true;
            let count = table.count().checked_add_signed(added).expect("a count");
            table.set_count(count);
        }
    }

    /// After node `at` (the packed value if not split) was written: splits it if it
    /// passed [`FIELD_NODE_BYTES`] (a packed value in Redis's large encoding into nodes,
    /// a node in two or more).
    fn settle(&mut self, at: usize) {
        let (nodes, kind) = (self.nodes, self.kind);
        match &mut self.shape {
            Shape::Missing => {}
            Shape::Packed(p) => {
                if p.len() <= FIELD_NODE_BYTES || !(self.raw || (self.large)(p)) {
                    return;
                }
                self.raw = true;
                if let Some(refs) = split(nodes, kind, p, 0) {
                    self.fresh.extend(refs.iter().map(|r| r.id));
                    let table = Table::of(nodes, packed::count(p), &refs);
                    self.shape = Shape::Split(table, BTreeMap::new());
                }
            }
            Shape::Split(table, loaded) => {
                let node = &loaded[&at].packed;
                if node.len() <= FIELD_NODE_BYTES {
                    return;
                }
                // The node was read through its record, so its page is loaded.
                let replaced = table.node(at).expect("a record read before");
                let Some(parts) = split(nodes, kind, node, replaced.low) else {
                    return;
                };
                self.fresh.extend(parts.iter().map(|r| r.id));
                let more = parts.len() - 1;
                table
                    .splice(at..at + 1, &parts)
                    .expect("the record's page is loaded");
                *loaded = std::mem::take(loaded)
                    .into_iter()
                    .filter(|(k, _)| *k != at)
                    .map(|(k, v)| (if k > at { k + more } else { k }, v))
                    .collect();
                drop_fresh(nodes, &mut self.fresh, replaced.id);
            }
        }
    }

    /// What to store: `None` if nothing changed, `Some(None)` to delete the key,
    /// `Some(Some(stored))` otherwise, with `deadline` kept. The error of a node that
    /// could not be read, if one could not: then nothing is to be stored.
    #[cfg(test)]
    pub fn finish(self, deadline: Option<u64>) -> Result<Outcome> {
        Ok(self.finish_releasing(deadline)?.0)
    }

    /// [`FieldEditor::finish`], and, when the edit knows them, the nodes (and pages)
    /// the value it read names and the one to store does not: known when a split
    /// value stays split, so that the store need not read both tables to find them
    /// ([`crate::nodes::dropped`]).
    pub fn finish_releasing(
        mut self,
        deadline: Option<u64>,
    ) -> Result<(Outcome, Option<Vec<u64>>)> {
        if let Some(e) = self.failed.take() {
            for id in self.fresh.drain(..) {
                self.nodes.discard(id);
            }
            return Err(e);
        }
        if !self.changed {
            return Ok((None, None));
        }
        let kind = self.kind;
        let packed = match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => unreachable!("a change leaves fields or a packed value"),
            Shape::Packed(p) => p,
            Shape::Split(table, loaded) => match self.rebuilt(table, loaded) {
                Err(e) => {
                    for id in self.fresh.drain(..) {
                        self.nodes.discard(id);
                    }
                    return Err(e);
                }
                Ok(Rebuilt::Split { table, released }) => {
                    let stored = Entry::encode_node_table(kind, table, deadline, true);
                    return Ok((Some(Some(stored)), Some(released)));
                }
                Ok(Rebuilt::Whole(whole)) => {
                    for id in self.fresh.drain(..) {
                        self.nodes.discard(id);
                    }
                    whole
                }
            },
        };
        if packed::count(&packed) == 0 {
            return Ok((Some(None), None));
        }
        let raw = self.raw || (self.large)(&packed);
        let stored = Entry {
            value: packed,
            deadline,
            raw,
            kind,
        };
        Ok((Some(Some(stored.into_stored())), None))
    }

    /// The table as stored, with the changed nodes written (dropped if emptied), and
    /// what it no longer names; or, if it is left with one node, or two holding less
    /// than half of [`FIELD_NODE_BYTES`], the whole packed value instead (empty if
    /// every field went).
    fn rebuilt(&mut self, mut table: Table, loaded: BTreeMap<usize, Loaded>) -> Result<Rebuilt> {
        let changed: BTreeMap<usize, Vec<u8>> = loaded
            .into_iter()
            .filter(|(_, l)| l.changed)
            .map(|(at, l)| (at, l.packed))
            .collect();
        let emptied = changed.values().filter(|p| packed::count(p) == 0).count();
        let left = table.len() - emptied;
        if left <= 2 {
            let mut all = Vec::with_capacity(table.len());
            for (at, node) in table.nodes()?.into_iter().enumerate() {
                match changed.get(&at) {
                    Some(p) => all.push(p.clone()),
                    None => all.push(self.nodes.read(node.id)?.into_owned()),
                }
            }
            let bytes: usize = all.iter().map(Vec::len).sum();
            if left <= 1 || bytes < FIELD_NODE_BYTES / 2 {
                return Ok(Rebuilt::Whole(joined(self.kind, &all)));
            }
        }
        for (at, packed) in changed.into_iter().rev() {
            let old = table.node(at)?;
            drop_fresh(self.nodes, &mut self.fresh, old.id);
            if packed::count(&packed) > 0 {
                let node = NodeRef {
                    low: old.low,
                    id: self.nodes.write(&packed),
                    count: packed::count(&packed) as u32,
                    bytes: packed.len() as u32,
                };
                table.replace(at, node)?;
            } else {
                table.splice(at..at + 1, &[])?;
            }
        }
        let (table, released) = table.finish()?;
        Ok(Rebuilt::Split { table, released })
    }
}

/// A split hash or set as an edit leaves it.
enum Rebuilt {
    /// Still split: its table, and the ids of what the table read names and it does
    /// not.
    Split { table: Vec<u8>, released: Vec<u64> },
    /// Joined again into one packed value.
    Whole(Vec<u8>),
}

/// The table no longer names node `id`: if this edit wrote it (`fresh`), nobody has
/// seen it.
fn drop_fresh(nodes: &dyn NodeStore, fresh: &mut Vec<u64>, id: u64) {
    if let Some(at) = fresh.iter().position(|&f| f == id) {
        fresh.swap_remove(at);
        nodes.discard(id);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use proptest::prelude::*;

    use super::*;
    use crate::db::Db;
    use crate::nodes::{large_by_count as large, settled, MemoryNodes};

    #[derive(Debug, Clone)]
    enum Op {
        Set(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
        Get(Vec<u8>),
        /// A read of the field, then a write of it: ZADD's steps, which the read's
        /// place found serves.
        GetThenSet(Vec<u8>, Vec<u8>),
        GetThenRemove(Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Fields from a small space, so sets, removes and gets meet; values mostly
        // short, some longer than a node.
        let field = (0..600u32).prop_map(|n| format!("f{n}").into_bytes());
        let value = prop_oneof![
            20 => prop::collection::vec(any::<u8>(), 0..30),
            1 => prop::collection::vec(any::<u8>(), 0..(2 * FIELD_NODE_BYTES)),
        ];
        prop_oneof![
            6 => (field.clone(), value.clone()).prop_map(|(f, v)| Op::Set(f, v)),
            3 => field.clone().prop_map(Op::Remove),
            1 => field.clone().prop_map(Op::Get),
            2 => (field.clone(), value).prop_map(|(f, v)| Op::GetThenSet(f, v)),
            1 => field.prop_map(Op::GetThenRemove),
        ]
    }

    /// The case the proptest of split hashes found: a large field among small ones.
    #[test]
    fn a_field_larger_than_a_node_gets_a_node_of_its_own() {
        let (small, large) = (vec![0; 30], vec![0; 6289]);
        let entries: Vec<(u64, &[u8])> = vec![(1, &small), (2, &large), (3, &small)];
        assert_eq!(cut(&entries), vec![0, 1, 2]);
    }

    proptest! {
        /// Runs are ranges of hashes; where no two entries share a hash (fields' hashes,
        /// bar a collision), at least two if the entries pass [`FILL`], and each within
        /// [`FILL`] unless one entry is on its own: a large field among small ones once
        /// shared a node past [`FIELD_NODE_BYTES`], which the table later stored whole.
        #[test]
        fn cuts_keep_runs_within_a_node(
            mut sizes in prop::collection::vec((0u64..4000, prop_oneof![9 => 1usize..200, 1 => 1usize..9000]), 1..120),
        ) {
            sizes.sort_by_key(|e| e.0);
            let bytes: Vec<Vec<u8>> = sizes.iter().map(|&(_, n)| vec![0; n]).collect();
            let entries: Vec<(u64, &[u8])> = sizes.iter().zip(&bytes).map(|(e, b)| (e.0, b.as_slice())).collect();
            let distinct = entries.windows(2).all(|w| w[0].0 != w[1].0);
            let starts = cut(&entries);
            prop_assert_eq!(starts[0], 0);
            prop_assert!(starts.windows(2).all(|w| w[0] < w[1]));
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(entries.len());
                let run = &entries[start..end];
                let total: usize = run.iter().map(|e| e.1.len()).sum();
                prop_assert!(total <= FILL || run.len() == 1 || !distinct, "a run of {} bytes", total);
                prop_assert!(start == 0 || entries[start - 1].0 != entries[start].0, "equal hashes cut apart");
            }
            let total: usize = sizes.iter().map(|e| e.1).sum();
            prop_assert!(starts.len() >= 2 || total <= FILL || entries.len() == 1 || !distinct);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Batches of sets, removes and gets, each batch one edit published as the
        /// store would, read back as a `HashMap` (hash) or `BTreeSet` (set) holds them,
        /// through the editor, the reader and the expanded value; a large value is
        /// split, and nodes are released with their tables.
        #[test]
        fn split_hashes_and_sets_behave_as_maps(
            is_hash in any::<bool>(),
            batches in prop::collection::vec(prop::collection::vec(op(), 1..120), 1..30),
        ) {
            let kind = if is_hash { Kind::Hash } else { Kind::Set };
            let value_of = |v: &[u8]| if is_hash { v.to_vec() } else { Vec::new() };
            let nodes = MemoryNodes::default();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let mut stored: Option<Vec<u8>> = None;
            for batch in batches {
                let _pin = crossbeam_epoch::pin();
                let mut editor = FieldEditor::new(&nodes, kind, stored.as_deref(), &large);
                for op in &batch {
                    match op {
                        Op::Set(f, v) => {
                            let new = editor.set(f, v);
                            let old = model.insert(f.clone(), value_of(v));
                            prop_assert_eq!(new, old.is_none());
                        }
                        Op::Remove(f) => prop_assert_eq!(editor.remove(f), model.remove(f).is_some()),
                        Op::Get(f) => prop_assert_eq!(editor.get(f), model.get(f).cloned()),
                        Op::GetThenSet(f, v) => {
                            prop_assert_eq!(editor.get(f), model.get(f).cloned());
                            let new = editor.set(f, v);
                            let old = model.insert(f.clone(), value_of(v));
                            prop_assert_eq!(new, old.is_none());
                        }
                        Op::GetThenRemove(f) => {
                            prop_assert_eq!(editor.get(f), model.get(f).cloned());
                            prop_assert_eq!(editor.remove(f), model.remove(f).is_some());
                        }
                    }
                }
                let (new, released) = editor.finish_releasing(None).unwrap();
                crate::nodes::publish(&nodes, &mut stored, new, released);
                prop_assert_eq!(stored.is_none(), model.is_empty());
                let Some(s) = stored.as_deref() else { continue };
                let reader = FieldReader::new(&nodes, s);
                prop_assert_eq!(reader.len(), model.len());
                for op in &batch {
                    let (Op::Set(f, _)
                    | Op::Remove(f)
                    | Op::Get(f)
                    | Op::GetThenSet(f, _)
                    | Op::GetThenRemove(f)) = op;
                    prop_assert_eq!(reader.get(f).unwrap(), model.get(f).cloned());
                }
                let whole = Entry::decode(crate::nodes::expand(&nodes, s).unwrap());
                prop_assert_eq!(whole.kind, kind);
                let fields: Vec<(&[u8], &[u8])> = entries(kind, &whole.value).collect();
                prop_assert_eq!(fields.len(), model.len());
                for (f, e) in &fields {
                    prop_assert_eq!(Some(super::value_of(kind, e)), model.get(*f).cloned());
                }
                if kind == Kind::Set {
                    // A whole set keeps `set_order`, however it was stored.
                    prop_assert!(fields.windows(2).all(|w| set_order(w[0].0, w[1].0).is_lt()));
                }
                // Split only in the large encoding, and there whenever fields can be.
                if Entry::stored_is_node_table(s) {
                    Table::new(&nodes, Entry::stored_payload(s)).check().unwrap();
                    prop_assert!(whole.raw && model.len() >= 2);
                } else if whole.raw && model.len() >= 2 {
                    prop_assert!(whole.value.len() <= FIELD_NODE_BYTES, "{} bytes whole", whole.value.len());
                }
            }
            crate::nodes::check_released(&nodes, stored.as_deref());
        }
    }

    /// A hash of a few thousand fields is split, its nodes stay within their size, and
    /// a field's write copies one node: the table names many nodes, each under
    /// [`FIELD_NODE_BYTES`] but for a field larger than that on its own.
    #[test]
    fn a_large_hash_is_split_into_nodes_by_hash() {
        let nodes = MemoryNodes::default();
        let mut stored: Option<Vec<u8>> = None;
        for i in 0..5000 {
            let mut editor = FieldEditor::new(&nodes, Kind::Hash, stored.as_deref(), &large);
            assert!(editor.set(format!("field:{i}").as_bytes(), b"value"));
            let new = editor.finish(None).unwrap().expect("a write");
            if let Some(old) = &stored {
                nodes.retire(old, new.as_deref());
            }
            stored = new;
        }
        let s = stored.unwrap();
        assert!(Entry::stored_is_node_table(&s));
        let table = Table::new(&nodes, Entry::stored_payload(&s));
        table.check().unwrap();
        assert_eq!(table.count(), 5000);
        assert!(table.len() > 20, "{} nodes", table.len());
        let refs = table.nodes().unwrap();
        for &n in &refs {
            assert!(
                n.bytes as usize <= FIELD_NODE_BYTES,
                "a node of {} bytes",
                n.bytes
            );
            let node = nodes.read(n.id).unwrap();
            for (f, _) in entries(Kind::Hash, &node) {
                assert_eq!(
                    table.find(field_hash(f)).unwrap(),
                    refs.iter().position(|&m| m == n).unwrap()
                );
            }
        }
        nodes.retire(&s, None);
    }

    /// A hash of hundreds of nodes keeps its table in pages: a write of one field
    /// releases one node and one page, every field stays found, and emptied down to a
    /// few nodes its table is inline again.
    #[test]
    fn a_hash_of_many_nodes_keeps_its_table_in_pages() {
        let nodes = MemoryNodes::default();
        let fields: Vec<Vec<u8>> = (0..15_000)
            .map(|i| format!("field:{i}").into_bytes())
            .collect();
        let mut stored = written(&nodes, Kind::Hash, None, &fields, b"value");
        let _pin = crossbeam_epoch::pin();
        let paged = |s: &[u8]| (Entry::stored_payload(s).len() - 8).is_multiple_of(RECORD);
        let s = stored.clone().unwrap();
        assert!(
            paged(&s),
            "a table of {} bytes",
            Entry::stored_payload(&s).len()
        );
        let table = Table::new(&nodes, Entry::stored_payload(&s));
        assert!(table.len() > 128, "{} nodes", table.len());
        table.check().unwrap();
        let reader = FieldReader::new(&nodes, &s);
        assert_eq!(reader.len(), fields.len());
        for f in fields.iter().step_by(97) {
            assert_eq!(reader.get(f).unwrap().as_deref(), Some(&b"value"[..]));
        }
        let mut editor = FieldEditor::new(&nodes, Kind::Hash, Some(&s), &large);
        editor.set(b"field:12345", b"changed");
        let (new, released) = editor.finish_releasing(None).unwrap();
        let new = new.unwrap().unwrap();
        assert!(
            Entry::stored_payload(&new).len() < 1000,
            "a root of {} bytes",
            Entry::stored_payload(&new).len()
        );
        assert_eq!(
            crate::nodes::dropped(&nodes, &s, Some(&new)).unwrap().len(),
            2
        );
        crate::nodes::publish(&nodes, &mut stored, Some(Some(new)), released);
        let s = stored.clone().unwrap();
        let reader = FieldReader::new(&nodes, &s);
        assert_eq!(
            reader.get(b"field:12345").unwrap().as_deref(),
            Some(&b"changed"[..])
        );
        assert_eq!(
            reader.get(b"field:12346").unwrap().as_deref(),
            Some(&b"value"[..])
        );
        // Emptying all but the nodes of the least hashes brings the table back inline.
        let (gone, kept): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) =
            fields.iter().partition(|f| field_hash(f) > u64::MAX / 50);
        let mut editor = FieldEditor::new(&nodes, Kind::Hash, Some(&s), &large);
        for f in &gone {
            assert!(editor.remove(f));
        }
        let (new, released) = editor.finish_releasing(None).unwrap();
        crate::nodes::publish(&nodes, &mut stored, new, released);
        let s = stored.clone().unwrap();
        assert!(!paged(&s));
        let reader = FieldReader::new(&nodes, &s);
        assert_eq!(reader.len(), kept.len());
        for f in &kept {
            let want: &[u8] = if f.as_slice() == b"field:12345" {
                b"changed"
            } else {
                b"value"
            };
            assert_eq!(reader.get(f).unwrap().as_deref(), Some(want));
        }
        assert_eq!(reader.get(gone[0]).unwrap(), None);
        drop(_pin);
        crate::nodes::check_released(&nodes, stored.as_deref());
    }

    /// Writes `fields` (with `value`) into the hash or set `stored` in one edit and
    /// returns the new stored value.
    fn written(
        nodes: &MemoryNodes,
        kind: Kind,
        stored: Option<Vec<u8>>,
        fields: &[Vec<u8>],
        value: &[u8],
    ) -> Option<Vec<u8>> {
        let mut editor = FieldEditor::new(nodes, kind, stored.as_deref(), &large);
        for f in fields {
            editor.set(f, value);
        }
        // No fields, no write.
        let Some(new) = editor.finish(None).unwrap() else {
            return stored;
        };
        if let Some(old) = &stored {
            nodes.retire(old, new.as_deref());
        }
        new
    }

    /// The first node, once the node before it is dropped, holds hashes below its
    /// `low`; split, its parts keep the ranges in order and every field is found.
    #[test]
    fn a_first_node_holding_hashes_below_its_low_splits_in_order() {
        let nodes = MemoryNodes::default();
        let fields: Vec<Vec<u8>> = (0..3000).map(|i| format!("f{i}").into_bytes()).collect();
        let mut stored = written(&nodes, Kind::Hash, None, &fields, b"v");
        let _pin = crossbeam_epoch::pin();
        // Empty the first node: the next one becomes first, its `low` above zero.
        let first: Vec<Vec<u8>> = {
            let table = Table::new(&nodes, Entry::stored_payload(stored.as_deref().unwrap()));
            let below = table.node(1).unwrap().low;
            fields
                .iter()
                .filter(|f| field_hash(f) < below)
                .cloned()
                .collect()
        };
        let mut editor = FieldEditor::new(&nodes, Kind::Hash, stored.as_deref(), &large);
        for f in &first {
            assert!(editor.remove(f));
        }
        let new = editor.finish(None).unwrap().expect("a write");
        nodes.retire(stored.as_deref().unwrap(), new.as_deref());
        stored = new;
        let low = Table::new(&nodes, Entry::stored_payload(stored.as_deref().unwrap()))
            .node(0)
            .unwrap()
            .low;
        assert!(low > 0);
        // Fields hashing below that `low` all land in the first node and split it.
        let below: Vec<Vec<u8>> = (0..)
            .map(|i| format!("g{i}").into_bytes())
            .filter(|f| field_hash(f) < low)
            .take(1500)
            .collect();
        stored = written(&nodes, Kind::Hash, stored, &below, b"w");
        let s = stored.unwrap();
        let table = Table::new(&nodes, Entry::stored_payload(&s));
        table.check().unwrap();
        let reader = FieldReader::new(&nodes, &s);
        assert_eq!(reader.len(), 3000 - first.len() + below.len());
        for f in &below {
            assert_eq!(reader.get(f).unwrap().as_deref(), Some(&b"w"[..]));
        }
        for f in fields.iter().filter(|f| !first.contains(f)) {
            assert_eq!(reader.get(f).unwrap().as_deref(), Some(&b"v"[..]));
        }
        nodes.retire(&s, None);
    }

    /// A scan sees every field there for the whole scan, at least once, while other
    /// fields come and go between its pages, splitting and dropping nodes; seeded.
    #[test]
    fn a_scan_sees_every_lasting_field_across_splits() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let nodes = MemoryNodes::default();
        let lasting: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!("lasting:{i}").into_bytes())
            .collect();
        let mut stored = written(&nodes, Kind::Hash, None, &lasting, b"v");
        let mut seen = BTreeSet::new();
        let (mut cursor, mut pages, mut churn) = (0, 0, 0usize);
        loop {
            let _pin = crossbeam_epoch::pin();
            let reader = FieldReader::new(&nodes, stored.as_deref().unwrap());
            cursor = reader
                .scan(cursor, rng.gen_range(1..200), |f, v| {
                    assert!(v == b"v" || v == b"w", "seed {seed}");
                    seen.insert(f.to_vec());
                })
                .unwrap();
            pages += 1;
            if cursor == 0 {
                break;
            }
            // Fields added between pages (enough to split nodes), and some removed.
            let added: Vec<Vec<u8>> = (0..rng.gen_range(0..300))
                .map(|_| {
                    format!("churn:{}", {
                        churn += 1;
                        churn
                    })
                    .into_bytes()
                })
                .collect();
            stored = written(&nodes, Kind::Hash, stored, &added, b"w");
            let mut editor = FieldEditor::new(&nodes, Kind::Hash, stored.as_deref(), &large);
            for i in 0..rng.gen_range(0..100) {
                editor.remove(format!("churn:{}", churn.saturating_sub(i * 3)).as_bytes());
            }
            if let Some(new) = editor.finish(None).unwrap() {
                nodes.retire(stored.as_deref().unwrap(), new.as_deref());
                stored = new;
            }
        }
        let missed = lasting.iter().filter(|f| !seen.contains(*f)).count();
        assert_eq!(
            missed, 0,
            "seed {seed}: {missed} lasting fields missed in {pages} pages"
        );
        assert!(pages > 10, "seed {seed}: {pages} pages");
    }

    /// In an edit that removed fields, a random pick by the records reaches only the
    /// fields left, a node that lost most of its fields in proportion to what it holds
    /// now (not to what its record says).
    #[test]
    fn random_picks_in_an_edit_weigh_nodes_by_what_they_hold_now() {
        let nodes = MemoryNodes::default();
        let members: Vec<Vec<u8>> = (0..20_000)
            .map(|i| format!("member:{i}").into_bytes())
            .collect();
        let stored = written(&nodes, Kind::Set, None, &members, b"").unwrap();
        let _pin = crossbeam_epoch::pin();
        let table = Table::new(&nodes, Entry::stored_payload(&stored));
        let second = table.node(1).unwrap().low;
        let first: Vec<&Vec<u8>> = members.iter().filter(|m| field_hash(m) < second).collect();
        assert!(first.len() > 40, "{} in the first node", first.len());
        let mut editor = FieldEditor::new(&nodes, Kind::Set, Some(&stored), &large);
        let kept = first.len() / 10;
        for m in &first[kept..] {
            assert!(editor.remove(m));
        }
        let left = members.len() - (first.len() - kept);
        const DRAWS: usize = 100_000;
        let mut in_first = 0;
        for _ in 0..DRAWS {
            let m = editor.random_field().expect("a member");
            assert!(editor.get(&m).is_some(), "a removed member picked");
            in_first += usize::from(field_hash(&m) < second);
        }
        // Expected DRAWS * kept / left (a few dozen); by the records it would be ten
        // times that.
        let expected = DRAWS * kept / left;
        assert!(
            in_first > expected / 4 && in_first < expected * 2 + 10,
            "{in_first} picks in the first node, {expected} expected"
        );
    }

    /// Random picks reach every field of a split set, and popping picks one by one
    /// takes each member exactly once.
    #[test]
    fn random_picks_reach_every_field_and_pops_take_each_once() {
        let nodes = MemoryNodes::default();
        let members: Vec<Vec<u8>> = (0..500)
            .map(|i| format!("member:{i}").into_bytes())
            .collect();
        let mut stored = written(&nodes, Kind::Set, None, &members, b"");
        let _pin = crossbeam_epoch::pin();
        let s = stored.clone().unwrap();
        assert!(Entry::stored_is_node_table(&s));
        let reader = FieldReader::new(&nodes, &s);
        let mut picked = BTreeSet::new();
        for _ in 0..20_000 {
            picked.insert(reader.random().unwrap().expect("a member").0);
        }
        assert_eq!(
            picked.len(),
            members.len(),
            "every member picked at some point"
        );
        let mut popped = Vec::new();
        while let Some(s) = stored.take() {
            let mut editor = FieldEditor::new(&nodes, Kind::Set, Some(&s), &large);
            for _ in 0..7.min(members.len() - popped.len()) {
                let m = editor.random_field().expect("a member left");
                assert!(editor.remove(&m));
                popped.push(m);
            }
            assert_eq!(
                editor.random_field().is_none(),
                popped.len() == members.len()
            );
            stored = editor.finish(None).unwrap().expect("a write");
            nodes.retire(&s, stored.as_deref());
        }
        popped.sort();
        let mut want = members.clone();
        want.sort();
        assert_eq!(popped, want);
    }

    /// Where a read found a field is forgotten once the fields change other than by a
    /// write of that field: read, then every field taken, the field is written anew.
    #[test]
    fn a_field_read_then_taken_with_all_is_written_anew() {
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let mut editor = FieldEditor::new(&nodes, Kind::Hash, None, &large);
        for i in 0..50 {
            editor.set(format!("f{i}").as_bytes(), b"v");
        }
        assert_eq!(editor.get(b"f7"), Some(b"v".to_vec()));
        assert_eq!(editor.take_all().len(), 50);
        assert!(editor.set(b"f7", b"w"), "a field taken is new again");
        assert_eq!(editor.len(), 1);
        assert_eq!(editor.get(b"f7"), Some(b"w".to_vec()));
    }

    /// Taking every field of a split set, after writes that split its nodes again in
    /// the same edit, answers each field once and deletes the key, leaving no node.
    #[test]
    fn taking_all_of_a_split_set_deletes_it() {
        let nodes = MemoryNodes::default();
        let members: Vec<Vec<u8>> = (0..12)
            .map(|i| format!("{i}:{}", "m".repeat(600)).into_bytes())
            .collect();
        // Sets of words are always in Redis's large encoding (7.0 has no listpack sets).
        let words = |_: &[u8]| true;
        let mut editor = FieldEditor::new(&nodes, Kind::Set, None, &words);
        for m in &members {
            editor.set(m, b"");
        }
        let stored = editor.finish(None).unwrap().flatten().expect("a set");
        assert!(Entry::stored_is_node_table(&stored));
        let pin = crossbeam_epoch::pin();
        let mut editor = FieldEditor::new(&nodes, Kind::Set, Some(&stored), &words);
        let more: Vec<Vec<u8>> = (0..6)
            .map(|i| format!("more:{i}:{}", "n".repeat(900)).into_bytes())
            .collect();
        for m in &more {
            assert!(editor.set(m, b""));
        }
        assert_eq!(editor.len(), 18);
        let mut all = editor.take_all();
        assert_eq!(editor.len(), 0);
        assert_eq!(
            editor.finish(None).unwrap(),
            Some(None),
            "the key is deleted"
        );
        all.sort();
        let mut want: Vec<Vec<u8>> = members.iter().chain(&more).cloned().collect();
        want.sort();
        assert_eq!(all, want);
        nodes.retire(&stored, None);
        // Pinned, this thread would hold back every thread's deferred removals.
        drop(pin);
        assert!(settled(|| nodes.len(), 0), "{} nodes left", nodes.len());
    }

    /// Many threads set, remove and read fields of one hash and one set through `Db`
    /// (compare-and-set races, retried edits, readers pinned across node reads): every
    /// field's last write wins, removed fields stay removed, and every node is
    /// released once the keys are deleted.
    #[test]
    fn concurrent_field_writes_and_reads_lose_nothing() {
        const WRITERS: usize = 4;
        const EACH: usize = 1500;
        let db = Db::default();
        let large: &(dyn Fn(&[u8]) -> bool + Sync) = &large;
        let value =
            |w: usize, i: usize, round: usize| format!("{w}:{i}:{round}:{}", "v".repeat(i % 40));
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let db = &db;
                s.spawn(move || {
                    for round in 0..2 {
                        for i in 0..EACH {
                            let field = format!("{w}:{i}");
                            let v = value(w, i, round);
                            db.edit_fields(b"hash", Kind::Hash, large, |h| {
                                h.set(field.as_bytes(), v.as_bytes())
                            })
                            .unwrap()
                            .expect("a hash");
                            db.edit_fields(b"set", Kind::Set, large, |h| {
                                h.set(field.as_bytes(), b"")
                            })
                            .unwrap()
                            .expect("a set");
                        }
                    }
                    // Every third field removed, in batches of a few.
                    for chunk in (0..EACH).step_by(3).collect::<Vec<_>>().chunks(7) {
                        let fields: Vec<String> =
                            chunk.iter().map(|i| format!("{w}:{i}")).collect();
                        for key in [&b"hash"[..], b"set"] {
                            let kind = if key == b"hash" {
                                Kind::Hash
                            } else {
                                Kind::Set
                            };
                            let removed = db
                                .edit_fields(key, kind, large, |h| {
                                    fields.iter().filter(|f| h.remove(f.as_bytes())).count()
                                })
                                .unwrap()
                                .expect("the right type")
                                .result;
                            assert_eq!(removed, fields.len(), "each removed once");
                        }
                    }
                });
            }
            for r in 0..2 {
                let db = &db;
                s.spawn(move || {
                    for n in 0..4000usize {
                        let (w, i) = ((n + r) % WRITERS, (n * 7) % EACH);
                        let field = format!("{w}:{i}");
                        let got = db
                            .read_fields(b"hash", Kind::Hash, |h| match h {
                                Some(h) => h.get(field.as_bytes()),
                                None => Ok(None),
                            })
                            .unwrap()
                            .expect("a hash");
                        if let Some(v) = got {
                            let v = String::from_utf8(v).unwrap();
                            assert!(
                                v == value(w, i, 0) || v == value(w, i, 1),
                                "{field} read {v}"
                            );
                        }
                    }
                });
            }
        });
        let hash = db.get(b"hash").unwrap().expect("the hash");
        let set = db.get(b"set").unwrap().expect("the set");
        let mut want: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        for w in 0..WRITERS {
            for i in (0..EACH).filter(|i| i % 3 != 0) {
                want.insert(format!("{w}:{i}").into_bytes(), value(w, i, 1).into_bytes());
            }
        }
        let got: HashMap<Vec<u8>, Vec<u8>> = packed::pairs(&hash.value)
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(got.len(), packed::count(&hash.value));
        assert!(
            got == want,
            "the hash holds every last write and no removed field"
        );
        let members: BTreeSet<Vec<u8>> = packed::elements(&set.value).map(<[u8]>::to_vec).collect();
        assert_eq!(members, want.keys().cloned().collect::<BTreeSet<_>>());
        assert!(db.collection_nodes().unwrap() > 10, "both were split");
        db.remove(b"hash").unwrap();
        db.remove(b"set").unwrap();
        let nodes = || db.collection_nodes().expect("the memory store");
        assert!(settled(nodes, 0), "{} nodes left", nodes());
    }

    /// On an engine, each write of a split hash deletes the node records its editor
    /// noted as released (checked against `nodes::dropped` by every write in test
    /// builds): fields added, rewritten and removed read back, and once the hash is
    /// deleted the engine holds as many records as before it was made.
    #[test]
    fn engine_writes_release_what_their_editor_noted() {
        let dir = tempfile::tempdir().unwrap();
        let records = || {
            let lsm = lsm::Lsm::open(dir.path(), lsm::Options::default()).unwrap();
            let mut cursor = engine::Engine::range(&lsm, engine::KeyRange::all()).unwrap();
            let mut n = 0;
            while cursor.next().unwrap().is_some() {
                n += 1;
            }
            drop(cursor);
            engine::Engine::close(&lsm).unwrap();
            n
        };
        let open = || {
            let lsm = lsm::Lsm::open(dir.path(), lsm::Options::default()).unwrap();
            Db::on_engine(Box::new(lsm)).unwrap()
        };
        open().close().unwrap();
        let before = records();
        let db = open();
        let field = |i: usize| format!("field:{i}").into_bytes();
        let edit = |f: &mut dyn FnMut(&mut FieldEditor)| {
            db.edit_fields(b"hash", Kind::Hash, &large, |h| f(h))
                .unwrap()
                .expect("a hash");
        };
        for i in 0..6000 {
            edit(&mut |h| assert!(h.set(&field(i), b"first")));
        }
        for i in (0..6000).step_by(5) {
            edit(&mut |h| assert!(!h.set(&field(i), &[b'x'; 40])));
        }
        for chunk in (0..6000)
            .filter(|i| i % 3 == 0)
            .collect::<Vec<_>>()
            .chunks(50)
        {
            edit(&mut |h| assert!(chunk.iter().all(|&i| h.remove(&field(i)))));
        }
        let hash = db.get(b"hash").unwrap().expect("the hash");
        let got: HashMap<Vec<u8>, Vec<u8>> = packed::pairs(&hash.value)
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect();
        let want: HashMap<Vec<u8>, Vec<u8>> = (0..6000)
            .filter(|i| i % 3 != 0)
            .map(|i| {
                (
                    field(i),
                    if i % 5 == 0 {
                        vec![b'x'; 40]
                    } else {
                        b"first".to_vec()
                    },
                )
            })
            .collect();
        assert!(got == want, "{} fields, {} wanted", got.len(), want.len());
        db.close().unwrap();
        drop(db);
        let split = records();
        assert!(split > before + 100, "the hash is split: {split} records");
        let db = open();
        assert!(db.remove(b"hash").unwrap());
        db.close().unwrap();
        drop(db);
        assert_eq!(records(), before, "a deleted hash leaves no node record");
    }
}
