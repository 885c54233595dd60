//! Long lists split into nodes in order, so that a write copies the nodes it changes
//! and a page of the node table rather than the whole list (Redis's quicklist splits
//! its lists the same way, for the same reason). How nodes are stored and released,
//! and why readers need no lock, is in `nodes.rs`.
//!
//! ```text
//! root       = ends | node table        (the entry's list-ends bit, `entry.rs`)
//!            | node table               (written before ends, or by a split of a whole list)
//! ends       = popped left (u32 LE) | popped right (u32 LE)
//!              | pushed left size (u32 LE) | pushed right size (u32 LE)
//!              | pushed left (packed, or no bytes) | pushed right (packed, or no bytes)
//! node table = a table of records (`table_pages.rs`, inline or in pages), head first
//! record     = id (u64 LE) | count (u32 LE) | bytes (u32 LE: its packed size)
//! ```
//!
//! Each node is a packed list (`packed.rs`) of at least one element. A list whose
//! packed form passes [`NODE_BYTES`] is split; one left with a single node is stored
//! whole again. Tables written before pages (`count u32 | record*`) are the inline
//! form and read unchanged.
//!
//! The ends are why a push or a pop at an end writes the root alone most of the time:
//! a node rewritten for each push (up to 4 KB, and its page of the table, up to 2 KB)
//! made a queue on the engine log 3.3 KB per LPUSH of a 3-byte value. Elements pushed
//! at an end wait in the root, packed, until they pass [`END_BYTES`]; then they go
//! into the end node if they fit beside it, or into nodes of their own. A pop takes the
//! waiting elements first, then the end node's, counting them popped in the root and
//! moving the node's next [`END_BYTES`] there too (counted popped from the node), so
//! that the next pops need not read it; the node is dropped from the table when the
//! last of its elements is popped. So the list is the left end's pushed elements, the
//! first node but its popped ones, the nodes between, the last node but its popped
//! ones, the right end's pushed elements; the table's count is its nodes' (popped
//! elements included).

use std::borrow::Cow;

use engine::Result;

use crate::entry::{Entry, Kind};
use crate::nodes::{self, NodeStore, Outcome, NODE_BYTES};
use crate::packed::{self, element_size, Builder, MAX_ELEMENTS};
use crate::table_pages::{self, Layout};

/// Bytes of a node's record in the node table.
const RECORD: usize = 16;
type Record = [u8; RECORD];
type Records<'a> = table_pages::Records<'a, RECORD>;

/// How a list's records lie. They are in list order, not in order of a key: nothing
/// partitions them, and the key a page's entry in the root holds (the id of its first
/// node) is never read. Few are kept inline: most pushes and pops write the root alone
/// (see [`END_BYTES`]), so what it holds beside the ends is written with each of them;
/// a page of the table only when a node changes.
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 0,
    id_at: 0,
    count_at: 8,
    bytes_at: 12,
    names_nodes: true,
    inline_records: 16,
};

/// Bytes of elements (packed, with its count) an end of a split list holds in the root
/// before they go into a node. Per push, a store writes the root (this much at most
/// beside the table's root) and, once every this many bytes, a node and a page: with
/// ~6 KB for the node and page, a push of a short element writes least near 512.
const END_BYTES: usize = 512;

const ENDS_HEADER: usize = 16;

/// What a split list's root holds beside its node table (see the top of this file).
#[derive(Clone, Debug, Default)]
struct Ends<'a> {
    /// Elements pushed at the left and at the right and not yet in a node: packed, in
    /// list order; no bytes when there are none.
    pushed: [Cow<'a, [u8]>; 2],
    /// Elements of the first node and of the last popped already: fewer than the
    /// node's.
    popped: [usize; 2],
}

fn side(end: End) -> usize {
    match end {
        End::Left => 0,
        End::Right => 1,
    }
}

impl<'a> Ends<'a> {
    /// The ends and the node table of `stored`, a split list's root.
    fn of(stored: &'a [u8]) -> (Ends<'a>, &'a [u8]) {
        let payload = Entry::stored_payload(stored);
        if !Entry::stored_has_list_ends(stored) {
            return (Ends::default(), payload);
        }
        let word = |i: usize| {
            u32::from_le_bytes(payload[4 * i..4 * i + 4].try_into().expect("4 bytes")) as usize
        };
        let left_end = ENDS_HEADER + word(2);
        let table_at = left_end + word(3);
        assert!(table_at <= payload.len(), "a list's ends past its root");
        let ends = Ends {
            pushed: [
                Cow::Borrowed(&payload[ENDS_HEADER..left_end]),
                Cow::Borrowed(&payload[left_end..table_at]),
            ],
            popped: [word(0), word(1)],
        };
        (ends, &payload[table_at..])
    }

    /// The root's payload: these ends, then `table`.
    fn encode(&self, table: &[u8]) -> Vec<u8> {
        let pushed: usize = self.pushed.iter().map(|p| p.len()).sum();
        let mut out = Vec::with_capacity(ENDS_HEADER + pushed + table.len() + 9);
        let words = [
            self.popped[0],
            self.popped[1],
            self.pushed[0].len(),
            self.pushed[1].len(),
        ];
        for w in words {
            out.extend_from_slice(&u32::try_from(w).expect("bounded by a node").to_le_bytes());
        }
        out.extend_from_slice(&self.pushed[0]);
        out.extend_from_slice(&self.pushed[1]);
        out.extend_from_slice(table);
        out
    }

    /// The elements of a list whose table counts `in_table`.
    fn len(&self, in_table: usize) -> usize {
        in_table - self.popped[0] - self.popped[1]
            + packed::count(&self.pushed[0])
            + packed::count(&self.pushed[1])
    }

    fn into_owned(self) -> Ends<'static> {
        let [left, right] = self.pushed;
        Ends {
            pushed: [
                Cow::Owned(left.into_owned()),
                Cow::Owned(right.into_owned()),
            ],
            popped: self.popped,
        }
    }
}

/// The packed elements of `node` but its first `front` and last `back`, and how many.
fn body_without(node: &[u8], front: usize, back: usize) -> (&[u8], usize) {
    let kept = packed::count(node) - front - back;
    let mut elements = packed::elements(node);
    elements.by_ref().take(front).for_each(drop);
    let start = elements.remaining_bytes();
    elements.by_ref().take(kept).for_each(drop);
    let end = elements.remaining_bytes();
    (&start[..start.len() - end.len()], kept)
}

/// The packed elements of `packed` and how many, for [`Builder::push_packed`].
fn body(packed: &[u8]) -> (&[u8], usize) {
    (
        packed::elements(packed).remaining_bytes(),
        packed::count(packed),
    )
}

/// One end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NodeRef {
    id: u64,
    count: u32,
    bytes: u32,
}

impl NodeRef {
    fn of(record: &[u8]) -> NodeRef {
        NodeRef {
            id: LAYOUT.id(record),
            count: LAYOUT.count(record) as u32,
            bytes: LAYOUT.bytes(record) as u32,
        }
    }

    fn record(&self) -> Record {
        assert!(self.count >= 1, "an empty node");
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&self.id.to_le_bytes());
        r[8..12].copy_from_slice(&self.count.to_le_bytes());
        r[12..].copy_from_slice(&self.bytes.to_le_bytes());
        r
    }
}

/// The ends and table of a stored list, if it is split.
fn split_of<'a>(nodes: &'a dyn NodeStore, stored: &'a [u8]) -> Option<(Ends<'a>, Records<'a>)> {
    Entry::stored_is_node_table(stored).then(|| {
        let (ends, table) = Ends::of(stored);
        (ends, Records::new(nodes, LAYOUT, table))
    })
}

/// The node table of a split list's root `stored`, without its ends.
fn table_bytes(stored: &[u8]) -> &[u8] {
    Ends::of(stored).1
}

/// The invariants every stored table keeps: O(records), so checked in full by debug
/// builds only; every build checks that a table has two nodes at least, that its ends
/// are within their bounds, and [`NodeRef::record`] that no node is empty.
fn check(table: &Records, ends: &Ends) -> Result<()> {
    assert!(table.len() >= 2, "a table of one node is stored whole");
    assert!(
        ends.pushed.iter().all(|p| p.len() <= END_BYTES),
        "an end holds more than END_BYTES"
    );
    if cfg!(debug_assertions) {
        for (at, popped) in [(0, ends.popped[0]), (table.len() - 1, ends.popped[1])] {
            assert!(
                popped < LAYOUT.count(&table.get(at)?) as usize,
                "an end node popped whole is dropped"
            );
        }
        let records = table.all()?;
        assert!(
            records.iter().all(|r| LAYOUT.count(r) >= 1),
            "an empty node"
        );
        assert_eq!(
            records.iter().map(|r| LAYOUT.count(r)).sum::<u64>(),
            table.count() as u64,
            "a table's count is its nodes' counts"
        );
    }
    Ok(())
}

/// The pages and nodes the split list stored as `stored` names, each its id and stored
/// size.
pub fn nodes(nodes: &dyn NodeStore, stored: &[u8]) -> Result<Vec<(u64, usize)>> {
    table_pages::nodes(nodes, LAYOUT, table_bytes(stored))
}

/// The pages and nodes the split list stored as `old` names and `new` does not.
pub fn dropped(nodes: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    table_pages::dropped(nodes, LAYOUT, table_bytes(old), table_bytes(new))
}

fn node_ref(id: u64, packed: &[u8]) -> NodeRef {
    NodeRef {
        id,
        count: packed::count(packed) as u32,
        bytes: packed.len() as u32,
    }
}

/// The node table of the packed list `list` split into nodes written to `nodes`, if
/// it is long.
pub fn split_if_long(nodes: &dyn NodeStore, list: &[u8]) -> Option<Vec<u8>> {
    if !is_long(list) {
        return None;
    }
    let records: Vec<Record> = split(nodes, list).iter().map(NodeRef::record).collect();
    let table = Records::of(nodes, LAYOUT, packed::count(list) as u64, &records);
    Some(table.finish().expect("a new table's pages are at hand"))
}

/// Writes the elements of `packed` as nodes of up to [`NODE_BYTES`] each.
fn split(nodes: &dyn NodeStore, packed: &[u8]) -> Vec<NodeRef> {
    let mut written = Vec::new();
    let mut node = Builder::with_capacity(NODE_BYTES);
    let mut bytes = 0;
    let mut flush = |node: Builder| {
        let packed = node.finish();
        written.push(node_ref(nodes.write(&packed), &packed));
    };
    for e in packed::elements(packed) {
        let size = element_size(e);
        if node.count() > 0 && bytes + size > NODE_BYTES {
            flush(std::mem::replace(
                &mut node,
                Builder::with_capacity(NODE_BYTES),
            ));
            bytes = 0;
        }
        node.push(e);
        bytes += size;
    }
    if node.count() > 0 {
        flush(node);
    }
    written
}

/// The whole packed list the split list stored as `stored` holds. The caller read it
/// pinned (memory) or holds the key's lock (engine).
pub fn expand(nodes: &dyn NodeStore, stored: &[u8]) -> Result<Vec<u8>> {
    let (ends, table) = Ends::of(stored);
    let table = Records::new(nodes, LAYOUT, table);
    let refs: Vec<NodeRef> = table.all()?.iter().map(|r| NodeRef::of(r)).collect();
    let pushed: usize = ends.pushed.iter().map(|p| p.len()).sum();
    let bytes: usize = refs.iter().map(|n| n.bytes as usize).sum();
    let mut b = Builder::with_capacity(bytes + pushed);
    let (left, count) = body(&ends.pushed[0]);
    b.push_packed(left, count);
    let last = refs.len() - 1;
    let mut in_nodes = 0;
    for (at, node) in refs.iter().enumerate() {
        let packed = nodes.read(node.id)?;
        in_nodes += packed::count(&packed);
        let front = if at == 0 { ends.popped[0] } else { 0 };
        let back = if at == last { ends.popped[1] } else { 0 };
        let (elements, count) = body_without(&packed, front, back);
        b.push_packed(elements, count);
    }
    let (right, count) = body(&ends.pushed[1]);
    b.push_packed(right, count);
    let list = b.finish();
    assert_eq!(in_nodes, table.count(), "a table's count is its nodes'");
    assert_eq!(packed::count(&list), ends.len(table.count()));
    Ok(list)
}

/// Elements `from..=to` of the list whose table is `table`: reads the nodes that hold
/// them, found from the first one's place (one page of the table).
fn range(nodes: &dyn NodeStore, table: &Records, from: usize, to: usize) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(to + 1 - from);
    let (mut at, mut skip) = table.by_element(from as u64)?;
    while out.len() < to + 1 - from {
        let node = NodeRef::of(&table.get(at)?);
        let packed = nodes.read(node.id)?;
        let take = (to + 1 - from - out.len()).min(node.count as usize - skip as usize);
        out.extend(
            packed::elements(&packed)
                .skip(skip as usize)
                .take(take)
                .map(<[u8]>::to_vec),
        );
        at += 1;
        skip = 0;
    }
    Ok(out)
}

/// Elements `from..=to` of the split list of `ends` and `table`: those pushed at the
/// left, those in nodes but the popped (see [`range`]), those pushed at the right.
fn range_with_ends(
    nodes: &dyn NodeStore,
    table: &Records,
    ends: &Ends,
    from: usize,
    to: usize,
) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(to + 1 - from);
    let left = packed::count(&ends.pushed[0]);
    let middle = table.count() - ends.popped[0] - ends.popped[1];
    let take = |packed: &[u8], start: usize, out: &mut Vec<Vec<u8>>| {
        // This part holds the list's elements `start..start + count`.
        let count = packed::count(packed);
        if count == 0 {
            return;
        }
        let (a, b) = (from.max(start), to.min(start + count - 1));
        if a <= b {
            let part = packed::elements(packed).skip(a - start).take(b + 1 - a);
            out.extend(part.map(<[u8]>::to_vec));
        }
    };
    take(&ends.pushed[0], 0, &mut out);
    let (a, b) = (from.max(left), to.min(left + middle - 1));
    if a <= b {
        let shift = ends.popped[0];
        out.extend(range(nodes, table, a - left + shift, b - left + shift)?);
    }
    take(&ends.pushed[1], left + middle, &mut out);
    Ok(out)
}

/// Whether the packed list `list` is split where lists are: its elements take more than
/// one node, so splitting makes two nodes at least.
fn is_long(list: &[u8]) -> bool {
    let elements = packed::elements(list).remaining_bytes();
    elements.len() > NODE_BYTES && packed::count(list) >= 2
}

/// `list` (or an empty one) with `items` pushed one by one at `end`.
fn pushed<'a>(
    list: Option<&[u8]>,
    end: End,
    items: impl Iterator<Item = &'a [u8]> + Clone,
) -> Vec<u8> {
    let list = list.unwrap_or_default();
    let extra: usize = items.clone().map(|i| i.len() + 5).sum();
    let old = packed::elements(list).remaining_bytes();
    let mut b = Builder::with_capacity(list.len() + extra);
    if end == End::Left {
        let items: Vec<&[u8]> = items.collect();
        for item in items.iter().rev() {
            b.push(item);
        }
        b.push_packed(old, packed::count(list));
    } else {
        b.push_packed(old, packed::count(list));
        for item in items {
            b.push(item);
        }
    }
    b.finish()
}

/// `list` without `n` elements at `end`, and those elements in the order popped.
fn popped(list: &[u8], end: End, n: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let len = packed::count(list);
    let n = n.min(len);
    let mut elements = packed::elements(list);
    let mut b = Builder::with_capacity(list.len());
    let out = if end == End::Left {
        let out: Vec<Vec<u8>> = elements.by_ref().take(n).map(<[u8]>::to_vec).collect();
        b.push_packed(elements.remaining_bytes(), len - n);
        out
    } else {
        // Find where the kept elements end, then copy them as one block.
        let body = elements.remaining_bytes();
        elements.by_ref().take(len - n).for_each(drop);
        let tail = elements.remaining_bytes();
        b.push_packed(&body[..body.len() - tail.len()], len - n);
        let mut out: Vec<Vec<u8>> = elements.map(<[u8]>::to_vec).collect();
        out.reverse();
        out
    };
    (b.finish(), out)
}

/// Where `table`'s node at `end` is.
fn edge_at(table: &Records, end: End) -> usize {
    match end {
        End::Left => 0,
        End::Right => table.len() - 1,
    }
}

/// `take` elements of the packed `node` at `end`, after the `gone` already popped
/// there, in the order popped.
fn taken(node: &[u8], end: End, gone: usize, take: usize) -> Vec<Vec<u8>> {
    let count = packed::count(node);
    let at = match end {
        End::Left => gone,
        End::Right => count - gone - take,
    };
    let mut out: Vec<Vec<u8>> = packed::elements(node)
        .skip(at)
        .take(take)
        .map(<[u8]>::to_vec)
        .collect();
    if end == End::Right {
        out.reverse();
    }
    out
}

/// The elements of the packed `node` next to the `gone` popped at its `end`, packed in
/// list order, as many as [`END_BYTES`] holds, and how many.
fn next_elements(node: &[u8], end: End, gone: usize) -> (Vec<u8>, usize) {
    let rest = packed::count(node) - gone;
    let elements = packed::elements(node);
    let fits = |picked: &mut dyn Iterator<Item = &[u8]>| {
        let mut bytes = packed::HEADER;
        picked
            .take_while(|e| {
                bytes += element_size(e);
                bytes <= END_BYTES
            })
            .count()
    };
    let (from, count) = match end {
        End::Left => (gone, fits(&mut elements.clone().skip(gone))),
        End::Right => {
            let kept: Vec<&[u8]> = elements.clone().take(rest).collect();
            let count = fits(&mut kept.into_iter().rev());
            (rest - count, count)
        }
    };
    if count == 0 {
        return (Vec::new(), 0);
    }
    (packed::pack(elements.skip(from).take(count)), count)
}

/// A list as a write finds it and leaves it.
enum Shape<'a> {
    Missing,
    Packed(Vec<u8>),
    Split(Records<'a>, Box<Ends<'static>>),
}

/// A list being changed by one write (see `Db::edit_list`): pushes and pops at its
/// ends, on its packed form or, for a long list, on its end nodes only.
pub struct ListEditor<'a> {
    nodes: &'a dyn NodeStore,
    shape: Shape<'a>,
    /// Nodes this edit wrote: removed at once if the edit drops them again.
    fresh: Vec<u64>,
    changed: bool,
    /// The first node or page read that failed (an engine's I/O): the edit then
    /// writes nothing.
    failed: Option<engine::Error>,
}

impl<'a> ListEditor<'a> {
    /// The list whose stored value is `stored` (`None` if missing), its long form's
    /// nodes in `nodes`.
    pub fn new(nodes: &'a dyn NodeStore, stored: Option<&[u8]>) -> Self {
        let shape = match stored {
            None => Shape::Missing,
            Some(s) if Entry::stored_is_node_table(s) => {
                let (ends, table) = Ends::of(s);
                Shape::Split(
                    Records::new(nodes, LAYOUT, table.to_vec()),
                    Box::new(ends.into_owned()),
                )
            }
            Some(s) => Shape::Packed(Entry::stored_payload(s).to_vec()),
        };
        ListEditor {
            nodes,
            shape,
            fresh: Vec::new(),
            changed: false,
            failed: None,
        }
    }

    pub fn len(&self) -> usize {
        match &self.shape {
            Shape::Missing => 0,
            Shape::Packed(p) => packed::count(p),
            Shape::Split(t, ends) => ends.len(t.count()),
        }
    }

    /// Whether the list has elements.
    pub fn exists(&self) -> bool {
        !matches!(self.shape, Shape::Missing)
    }

    /// Pushes `items` one by one at `end`; the caller keeps the length within
    /// [`MAX_ELEMENTS`].
    pub fn push<'i>(&mut self, end: End, items: impl Iterator<Item = &'i [u8]> + Clone) {
        let added = items.clone().count();
        if added == 0 || self.failed.is_some() {
            return;
        }
        assert!(self.len() + added <= MAX_ELEMENTS);
        self.changed = true;
        match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => self.shape = self.packed(pushed(None, end, items)),
            Shape::Packed(p) => self.shape = self.packed(pushed(Some(&p), end, items)),
            Shape::Split(mut table, mut ends) => {
                let s = side(end);
                let grown = pushed(Some(&ends.pushed[s]), end, items);
                if grown.len() <= END_BYTES {
                    ends.pushed[s] = Cow::Owned(grown);
                } else {
                    ends.pushed[s] = Cow::Owned(Vec::new());
                    // If it fails, the edit writes nothing.
                    let _ = self.flush(&mut table, &mut ends, end, &grown);
                }
                self.shape = Shape::Split(table, ends);
            }
        }
    }

    /// Pops up to `n` elements at `end`, returned in the order popped.
    pub fn pop(&mut self, end: End, n: usize) -> Vec<Vec<u8>> {
        if n == 0 || !self.exists() || self.failed.is_some() {
            return Vec::new();
        }
        self.changed = true;
        match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => unreachable!("checked above"),
            Shape::Packed(p) => {
                let (rest, out) = popped(&p, end, n);
                if packed::count(&rest) > 0 {
                    self.shape = Shape::Packed(rest);
                }
                out
            }
            Shape::Split(mut table, mut ends) => {
                let s = side(end);
                let (rest, mut out) = popped(&ends.pushed[s], end, n);
                if !out.is_empty() {
                    let rest = if packed::count(&rest) == 0 {
                        Vec::new()
                    } else {
                        rest
                    };
                    ends.pushed[s] = Cow::Owned(rest);
                }
                while out.len() < n && table.len() >= 2 {
                    let at = edge_at(&table, end);
                    let Some((edge, node)) = self.edge(&table, at) else {
                        return Vec::new();
                    };
                    let gone = ends.popped[s];
                    let take = (edge.count as usize - gone).min(n - out.len());
                    out.extend(taken(&node, end, gone, take));
                    // The elements next to those popped move into the root, so that
                    // the next pops need not read the node.
                    let (moved, count) = next_elements(&node, end, gone + take);
                    if count > 0 {
                        assert!(ends.pushed[s].is_empty(), "the root's end was popped first");
                        ends.pushed[s] = Cow::Owned(moved);
                    }
                    let gone = gone + take + count;
                    if gone < edge.count as usize {
                        ends.popped[s] = gone;
                        continue;
                    }
                    self.drop_node(edge.id);
                    if self.splice(&mut table, at..at + 1, &[]).is_none() {
                        return Vec::new();
                    }
                    table.set_count(table.count() - edge.count as usize);
                    ends.popped[s] = 0;
                }
                if table.len() >= 2 {
                    self.shape = Shape::Split(table, ends);
                    return out;
                }
                // A node or none left: the list is whole again (stored whole even if
                // its ends make it long, as a node is; the next push splits it).
                let Some(whole) = self.whole(&table, &ends) else {
                    return Vec::new();
                };
                let (rest, taken) = popped(&whole, end, n - out.len());
                out.extend(taken);
                self.shape = match packed::count(&rest) {
                    0 => Shape::Missing,
                    _ => Shape::Packed(rest),
                };
                out
            }
        }
    }

    /// Moves `elements` (packed, in list order), pushed at `end` and not yet in a node,
    /// into the end node if they fit beside what is left of it, else into nodes of
    /// their own beyond it; `None` if a node or page could not be read.
    fn flush(
        &mut self,
        table: &mut Records,
        ends: &mut Ends,
        end: End,
        elements: &[u8],
    ) -> Option<()> {
        let s = side(end);
        let at = edge_at(table, end);
        let (edge, node) = self.edge(table, at)?;
        let gone = std::mem::take(&mut ends.popped[s]);
        let (front, back) = match end {
            End::Left => (gone, 0),
            End::Right => (0, gone),
        };
        let (kept, kept_count) = body_without(&node, front, back);
        let (added, added_count) = body(elements);
        let count = table.count() - gone + added_count;
        let fits = kept.len() + added.len() <= NODE_BYTES;
        if fits || gone > 0 {
            // The end node again: without its popped elements, and with the new ones
            // if they fit beside it.
            let (with, with_count) = if fits {
                (added, added_count)
            } else {
                (&[][..], 0)
            };
            let mut b = Builder::with_capacity(kept.len() + with.len());
            if end == End::Left {
                b.push_packed(with, with_count);
            }
            b.push_packed(kept, kept_count);
            if end == End::Right {
                b.push_packed(with, with_count);
            }
            let new = self.write(&b.finish());
            self.drop_node(edge.id);
            self.splice(table, at..at + 1, &[new.record()])?;
        }
        if !fits {
            let new = split(self.nodes, elements);
            self.fresh.extend(new.iter().map(|n| n.id));
            let records: Vec<Record> = new.iter().map(NodeRef::record).collect();
            let at = match end {
                End::Left => 0,
                End::Right => table.len(),
            };
            self.splice(table, at..at, &records)?;
        }
        table.set_count(count);
        Some(())
    }

    /// The list as one packed value, from its ends and a table of one node or none;
    /// `None` if the node could not be read.
    fn whole(&mut self, table: &Records, ends: &Ends) -> Option<Vec<u8>> {
        assert!(table.len() <= 1);
        let mut b = Builder::with_capacity(END_BYTES * 2 + NODE_BYTES);
        let (left, count) = body(&ends.pushed[0]);
        b.push_packed(left, count);
        if table.len() == 1 {
            let (last, node) = self.edge(table, 0)?;
            self.drop_node(last.id);
            let (kept, count) = body_without(&node, ends.popped[0], ends.popped[1]);
            b.push_packed(kept, count);
        }
        let (right, count) = body(&ends.pushed[1]);
        b.push_packed(right, count);
        Some(b.finish())
    }

    /// A packed list as stores keep it: split if long.
    fn packed(&mut self, list: Vec<u8>) -> Shape<'a> {
        if !is_long(&list) {
            return Shape::Packed(list);
        }
        let refs = split(self.nodes, &list);
        self.fresh.extend(refs.iter().map(|n| n.id));
        let records: Vec<Record> = refs.iter().map(NodeRef::record).collect();
        let table = Records::of(self.nodes, LAYOUT, packed::count(&list) as u64, &records);
        Shape::Split(table, Box::default())
    }

    /// Record `at` of `table` and its node, read; `None` if either could not be read.
    fn edge(&mut self, table: &Records, at: usize) -> Option<(NodeRef, Vec<u8>)> {
        let node = NodeRef::of(&nodes::noted(&mut self.failed, table.get(at))?);
        Some((node, self.read(node)?))
    }

    /// `node`'s packed elements; `None` if it could not be read.
    fn read(&mut self, node: NodeRef) -> Option<Vec<u8>> {
        nodes::noted(&mut self.failed, self.nodes.read(node.id))
    }

    /// `table`'s records `range` replaced by `records`; `None` if a page could not be
    /// read.
    fn splice(
        &mut self,
        table: &mut Records,
        range: std::ops::Range<usize>,
        records: &[Record],
    ) -> Option<()> {
        nodes::noted(&mut self.failed, table.splice(range, records))
    }

    fn write(&mut self, packed: &[u8]) -> NodeRef {
        let id = self.nodes.write(packed);
        self.fresh.push(id);
        node_ref(id, packed)
    }

    /// The table no longer names node `id`: if this edit wrote it, nobody has seen it.
    fn drop_node(&mut self, id: u64) {
        if let Some(at) = self.fresh.iter().position(|&f| f == id) {
            self.fresh.swap_remove(at);
            self.nodes.discard(id);
        }
    }

    /// What to store: `None` if nothing changed, `Some(None)` to delete the key,
    /// `Some(Some(stored))` otherwise, with `deadline` kept. The error of a node or
    /// page that could not be read, if one could not: then nothing is to be stored.
    #[cfg(test)]
    pub fn finish(self, deadline: Option<u64>) -> Result<Outcome> {
        Ok(self.finish_releasing(deadline)?.0)
    }

    /// [`ListEditor::finish`], and, when a split list stays split, the nodes and pages
    /// the list it read names and the one to store does not (see
    /// `FieldEditor::finish_releasing`).
    pub fn finish_releasing(self, deadline: Option<u64>) -> Result<(Outcome, Option<Vec<u64>>)> {
        let discard_fresh = |fresh: Vec<u64>| {
            for id in fresh {
                self.nodes.discard(id);
            }
        };
        if let Some(e) = self.failed {
            discard_fresh(self.fresh);
            return Err(e);
        }
        if !self.changed {
            return Ok((None, None));
        }
        Ok(match self.shape {
            Shape::Missing => (Some(None), None),
            Shape::Packed(p) => {
                let stored = Entry::collection(Kind::List, p, deadline).into_stored();
                (Some(Some(stored)), None)
            }
            Shape::Split(t, ends) => {
                let finished = check(&t, &ends).and_then(|()| t.finish_releasing());
                let (table, released) = finished.inspect_err(|_| discard_fresh(self.fresh))?;
                let stored = Entry::encode_list_table(ends.encode(&table), deadline);
                (Some(Some(stored)), Some(released))
            }
        })
    }
}

/// What a read of part of a list sees: its length and the elements asked for.
pub struct ListRange {
    pub len: usize,
    pub elements: Vec<Vec<u8>>,
}

/// The elements of the list stored as `stored` (`None`: missing, an empty list) in the
/// inclusive range `pick` chooses from its length. The caller read `stored` pinned
/// (memory) or holds the key's lock (engine).
pub fn read_range(
    nodes: &dyn NodeStore,
    stored: Option<&[u8]>,
    pick: impl FnOnce(usize) -> Option<(usize, usize)>,
) -> Result<ListRange> {
    if let Some((ends, table)) = stored.and_then(|s| split_of(nodes, s)) {
        let len = ends.len(table.count());
        let elements = match pick(len) {
            Some((from, to)) => range_with_ends(nodes, &table, &ends, from, to)?,
            None => Vec::new(),
        };
        return Ok(ListRange { len, elements });
    }
    Ok(read_packed(
        stored.map(Entry::stored_payload).unwrap_or_default(),
        pick,
    ))
}

/// [`read_range`] of a list in its packed form, `payload`.
fn read_packed(payload: &[u8], pick: impl FnOnce(usize) -> Option<(usize, usize)>) -> ListRange {
    let len = packed::count(payload);
    let elements = match pick(len) {
        Some((from, to)) => packed::elements(payload)
            .skip(from)
            .take(to + 1 - from)
            .map(<[u8]>::to_vec)
            .collect(),
        None => Vec::new(),
    };
    ListRange { len, elements }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;
    use crate::db::Db;
    use crate::nodes::{settled, MemoryNodes};

    fn list(items: &[&str]) -> Vec<u8> {
        packed::pack(items.iter().map(|s| s.as_bytes()))
    }

    fn items(packed: &[u8]) -> Vec<String> {
        packed::elements(packed)
            .map(|e| String::from_utf8(e.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn pushes_and_pops_at_both_ends() {
        let l = pushed(None, End::Left, [&b"a"[..], b"b"].into_iter());
        assert_eq!(items(&l), ["b", "a"]);
        let l = pushed(Some(&l), End::Right, [&b"c"[..]].into_iter());
        assert_eq!(items(&l), ["b", "a", "c"]);
        let (rest, out) = popped(&l, End::Right, 2);
        assert_eq!(
            (items(&rest), out),
            (vec!["b".to_string()], vec![b"c".to_vec(), b"a".to_vec()])
        );
        let (rest, out) = popped(&list(&["x", "y"]), End::Left, 5);
        assert_eq!((packed::count(&rest), out.len()), (0, 2));
    }

    /// The nodes and pages the stored list names.
    fn nodes_named(nodes: &MemoryNodes, stored: &Option<Vec<u8>>) -> usize {
        stored
            .as_deref()
            .filter(|s| Entry::stored_is_node_table(s))
            .map_or(0, |s| super::nodes(nodes, s).unwrap().len())
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<Vec<u8>>),
        Pop(bool, usize),
        Range(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Mostly short elements, some longer than a node.
        let element = prop_oneof![
            8 => prop::collection::vec(any::<u8>(), 0..40),
            1 => prop::collection::vec(any::<u8>(), 0..(2 * NODE_BYTES)),
        ];
        // Enough ~1 KB elements at once for a few dozen nodes, so that tables grow
        // past a page.
        let many = (any::<u8>(), 600..1400usize, 80..200usize)
            .prop_map(|(b, size, n)| (0..n).map(|i| vec![b ^ i as u8; size + i]).collect());
        prop_oneof![
            4 => (any::<bool>(), prop::collection::vec(element, 1..60))
                .prop_map(|(l, items)| Op::Push(l, items)),
            2 => (any::<bool>(), many).prop_map(|(l, items)| Op::Push(l, items)),
            2 => (any::<bool>(), 1..150usize).prop_map(|(l, n)| Op::Pop(l, n)),
            1 => (0..3000usize, 0..3000usize).prop_map(|(a, b)| Op::Range(a.min(b), a.max(b))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Pushes, pops and reads of random sizes, each published as the store would,
        /// read back as a `VecDeque` holds them; nodes are released with their tables.
        #[test]
        fn a_split_list_behaves_as_a_deque(ops in prop::collection::vec(op(), 1..80)) {
            let nodes = MemoryNodes::default();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            let mut stored: Option<Vec<u8>> = None;
            for op in ops {
                let _pin = crossbeam_epoch::pin();
                if let Op::Range(from, to) = op {
                    let read = read_range(&nodes, stored.as_deref(), |len| {
                        (from < len).then(|| (from, to.min(len - 1)))
                    }).unwrap();
                    prop_assert_eq!(read.len, model.len());
                    let want: Vec<Vec<u8>> = model.iter().skip(from).take(to + 1 - from).cloned().collect();
                    prop_assert_eq!(read.elements, want);
                    continue;
                }
                let mut editor = ListEditor::new(&nodes, stored.as_deref());
                match &op {
                    Op::Push(left, items) => {
                        let end = if *left { End::Left } else { End::Right };
                        editor.push(end, items.iter().map(Vec::as_slice));
                        for item in items {
                            if *left { model.push_front(item.clone()) } else { model.push_back(item.clone()) }
                        }
                    }
                    Op::Pop(left, n) => {
                        let end = if *left { End::Left } else { End::Right };
                        let got = editor.pop(end, *n);
                        let want: Vec<Vec<u8>> = (0..*n)
                            .map_while(|_| if *left { model.pop_front() } else { model.pop_back() })
                            .collect();
                        prop_assert_eq!(got, want);
                    }
                    Op::Range(..) => unreachable!(),
                }
                prop_assert_eq!(editor.len(), model.len());
                let (new, released) = editor.finish_releasing(None).unwrap();
                crate::nodes::publish(&nodes, &mut stored, new, released);
                let whole = stored.as_deref().map(|s| Entry::decode(crate::nodes::expand(&nodes, s).unwrap()).value);
                let elements: Vec<&[u8]> = whole.as_deref().map(packed::elements).into_iter().flatten().collect();
                prop_assert!(elements.iter().copied().eq(model.iter().map(Vec::as_slice)));
                // A long list is split, a short one whole.
                let bytes: usize = model.iter().map(|e| element_size(e)).sum();
                let split = stored.as_deref().is_some_and(Entry::stored_is_node_table);
                prop_assert!(!split || model.len() >= 2);
                prop_assert!(split || model.len() < 2 || bytes <= NODE_BYTES || matches!(op, Op::Pop(..)));
            }
            let named = nodes_named(&nodes, &stored);
            prop_assert!(settled(|| nodes.len(), named), "{} nodes for {}", nodes.len(), named);
            if let Some(old) = &stored {
                nodes.retire(old, None);
            }
            prop_assert!(settled(|| nodes.len(), 0), "{} nodes left", nodes.len());
        }
    }

    /// One edit of `stored` by `edit`: returns the new stored value (`None`: the list
    /// was emptied) and what the write released.
    fn edited(
        nodes: &MemoryNodes,
        stored: &[u8],
        edit: impl FnOnce(&mut ListEditor),
    ) -> (Option<Vec<u8>>, Vec<u64>) {
        let mut editor = ListEditor::new(nodes, Some(stored));
        edit(&mut editor);
        let new = editor.finish(None).unwrap().expect("a change");
        let released = crate::nodes::dropped(nodes, stored, new.as_deref()).unwrap();
        (new, released)
    }

    fn element(i: usize) -> Vec<u8> {
        format!("{i:0100}").into_bytes()
    }

    /// A list of some 1,500 nodes keeps its table in pages: a pop and a push of a short
    /// element at either end write the root alone, a push past [`END_BYTES`] writes
    /// (and releases) one node and one page, reads find their elements through the
    /// pages, and emptying the list leaves no node or page behind.
    #[test]
    fn a_long_list_keeps_its_table_in_pages() {
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let mut editor = ListEditor::new(&nodes, None);
        let all: Vec<Vec<u8>> = (0..60_000).map(element).collect();
        editor.push(End::Right, all.iter().map(Vec::as_slice));
        let mut stored = editor.finish(None).unwrap().unwrap().unwrap();
        let named = nodes_named(&nodes, &Some(stored.clone()));
        assert!(named > 1500, "{named} nodes and pages");
        // A root of a page entry per ~100 nodes, not a record per node.
        assert!(Entry::stored_payload(&stored).len() < 24 * named / 50);
        let read = |stored: &[u8], from: usize, to: usize| {
            read_range(&nodes, Some(stored), |len| {
                assert_eq!(len, 60_000);
                Some((from, to))
            })
            .unwrap()
            .elements
        };
        for (from, to) in [(0, 3), (29_990, 30_010), (59_000, 59_999)] {
            assert_eq!(read(&stored, from, to), all[from..=to]);
        }
        let root = Entry::stored_payload(&stored).len();
        for end in [End::Left, End::Right] {
            let (new, released) = edited(&nodes, &stored, |l| {
                assert_eq!(l.pop(end, 1).len(), 1);
                l.push(end, std::iter::once(b"x".as_slice()));
            });
            assert!(released.is_empty(), "the root alone: {released:?}");
            let new = new.unwrap();
            assert!(Entry::stored_payload(&new).len() <= root + ENDS_HEADER + 2 * END_BYTES);
            nodes.retire(&stored, Some(&new));
            stored = new;
        }
        let mut want = all.clone();
        want[0] = b"x".to_vec();
        want[59_999] = b"x".to_vec();
        assert_eq!(read(&stored, 0, 59_999), want);
        let long = vec![b'y'; END_BYTES];
        let (new, released) = edited(&nodes, &stored, |l| {
            l.push(End::Right, std::iter::once(long.as_slice()))
        });
        // The pages are in groups (of a few pages, in unit tests).
        assert_eq!(released.len(), 3, "a node, a page, a group: {released:?}");
        let new = new.unwrap();
        nodes.retire(&stored, Some(&new));
        stored = new;
        want.push(long);
        let read = |stored: &[u8], from: usize, to: usize| {
            read_range(&nodes, Some(stored), |len| {
                assert_eq!(len, 60_001);
                Some((from, to))
            })
            .unwrap()
            .elements
        };
        assert_eq!(read(&stored, 0, 60_000), want);
        assert_eq!(read(&stored, 59_998, 60_000), want[59_998..]);
        let (empty, _) = edited(&nodes, &stored, |l| {
            assert_eq!(l.pop(End::Left, 70_001), want);
        });
        assert_eq!(empty, None);
        drop(_pin);
        nodes.retire(&stored, None);
        assert!(settled(|| nodes.len(), 0), "{} left", nodes.len());
    }

    /// A queue of short elements on a long list: of 20,000 pushes one at a time, and
    /// then 20,000 pops, only about one in a hundred writes a node (the rest write the
    /// root alone), and what is popped is what was pushed.
    #[test]
    fn pushes_and_pops_of_short_elements_mostly_write_the_root_alone() {
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let mut editor = ListEditor::new(&nodes, None);
        let base: Vec<Vec<u8>> = (0..20_000).map(element).collect();
        editor.push(End::Right, base.iter().map(Vec::as_slice));
        let mut stored = editor.finish(None).unwrap().unwrap().unwrap();
        let mut step = |edit: &dyn Fn(&mut ListEditor)| {
            let (new, released) = edited(&nodes, &stored, edit);
            let new = new.expect("the list stays");
            nodes.retire(&stored, Some(&new));
            stored = new;
            !released.is_empty()
        };
        let short = |i: usize| format!("{:03}", i % 1000).into_bytes();
        let mut wrote_nodes = 0;
        for i in 0..20_000 {
            let e = short(i);
            wrote_nodes += usize::from(step(&|l| l.push(End::Left, std::iter::once(e.as_slice()))));
        }
        assert!(
            wrote_nodes <= 200,
            "{wrote_nodes} of 20,000 pushes wrote a node"
        );
        wrote_nodes = 0;
        for i in (0..20_000).rev() {
            let want = short(i);
            wrote_nodes += usize::from(step(&|l| {
                assert_eq!(l.pop(End::Left, 1), std::slice::from_ref(&want))
            }));
        }
        assert!(
            wrote_nodes <= 200,
            "{wrote_nodes} of 20,000 pops wrote a node"
        );
        let rest = read_range(&nodes, Some(&stored), |len| Some((0, len - 1))).unwrap();
        assert_eq!(rest.elements, base);
    }

    /// A table stored before pages (`count | record*`, any length) is read as it is,
    /// and paged by its next write, which releases no node when it pushes to an end.
    #[test]
    fn a_list_table_stored_before_pages_reads_and_pages_when_edited() {
        let nodes = MemoryNodes::default();
        let all: Vec<Vec<u8>> = (0..6000).map(element).collect();
        let mut old = 6000u32.to_le_bytes().to_vec();
        for chunk in all.chunks(10) {
            let packed = packed::pack(chunk.iter().map(Vec::as_slice));
            old.extend(node_ref(nodes.write(&packed), &packed).record());
        }
        let stored = Entry::encode_node_table(Kind::List, old, None, false);
        let read = read_range(&nodes, Some(&stored), |len| Some((0, len - 1))).unwrap();
        assert_eq!(read.elements, all);
        let (new, released) = edited(&nodes, &stored, |l| {
            l.push(End::Right, std::iter::once(b"y".as_slice()))
        });
        assert!(released.is_empty(), "no node changed: {released:?}");
        let new = new.unwrap();
        assert!(Entry::stored_payload(&new).len() < 600 * RECORD / 10);
        let read = read_range(&nodes, Some(&new), |len| Some((len - 3, len - 1))).unwrap();
        assert_eq!(
            read.elements,
            [all[5998].clone(), all[5999].clone(), b"y".to_vec()]
        );
    }

    /// Many threads push, pop and read one long list through `Db` (compare-and-set
    /// races, retried edits, readers pinned across node reads): every element is popped
    /// exactly once, in the order its pusher pushed it, and every node is released.
    #[test]
    fn concurrent_pushes_pops_and_reads_lose_nothing() {
        const PUSHERS: usize = 4;
        const EACH: usize = 3000;
        let db = Db::default();
        let key = b"queue".as_slice();
        let element = |pusher: usize, i: usize| {
            // Varied sizes, so nodes fill at different counts.
            let mut e = format!("{pusher}:{i}:").into_bytes();
            e.resize(e.len() + (i * 7 + pusher * 13) % 90, b'.');
            e
        };
        let parse = |e: &[u8]| -> (usize, usize) {
            let text = std::str::from_utf8(e).unwrap();
            let mut parts = text.split(':');
            let pusher = parts.next().unwrap().parse().unwrap();
            let i = parts.next().unwrap().parse().unwrap();
            assert_eq!(e, element(pusher, i).as_slice(), "an element read whole");
            (pusher, i)
        };
        let done = std::sync::atomic::AtomicUsize::new(0);
        let popped: Vec<Vec<(usize, usize)>> = std::thread::scope(|s| {
            for p in 0..PUSHERS {
                let db = &db;
                let done = &done;
                s.spawn(move || {
                    for i in 0..EACH {
                        let e = element(p, i);
                        db.edit_list(key, |l| l.push(End::Right, std::iter::once(e.as_slice())))
                            .unwrap()
                            .expect("a list");
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
            for _ in 0..2 {
                let db = &db;
                s.spawn(move || {
                    for n in 0..2000usize {
                        let read = db
                            .read_list(key, |len| {
                                (len > 0).then(|| (len / 3, (len / 3 + n % 700).min(len - 1)))
                            })
                            .unwrap()
                            .expect("a list");
                        for e in &read.elements {
                            parse(e);
                        }
                        if n % 200 == 0 {
                            if let Some(entry) = db.get(key).unwrap() {
                                let count = packed::count(&entry.value);
                                assert_eq!(packed::elements(&entry.value).count(), count);
                            }
                        }
                    }
                });
            }
            let poppers: Vec<_> = (0..3)
                .map(|_| {
                    let db = &db;
                    let done = &done;
                    s.spawn(move || {
                        let mut got = Vec::new();
                        loop {
                            let finished =
                                done.load(std::sync::atomic::Ordering::SeqCst) == PUSHERS;
                            let out = db
                                .edit_list(key, |l| l.pop(End::Left, 1 + got.len() % 5))
                                .unwrap()
                                .expect("a list")
                                .result;
                            if out.is_empty() && finished {
                                return got;
                            }
                            got.extend(out.iter().map(|e| parse(e)));
                        }
                    })
                })
                .collect();
            poppers.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<(usize, usize)> = popped.iter().flatten().copied().collect();
        for seq in &popped {
            for p in 0..PUSHERS {
                let mine: Vec<usize> = seq.iter().filter(|e| e.0 == p).map(|e| e.1).collect();
                assert!(
                    mine.windows(2).all(|w| w[0] < w[1]),
                    "one popper saw pusher {p} out of order"
                );
            }
        }
        all.sort_unstable();
        let want: Vec<(usize, usize)> = (0..PUSHERS)
            .flat_map(|p| (0..EACH).map(move |i| (p, i)))
            .collect();
        assert_eq!(all, want, "every element popped exactly once");
        assert!(
            db.get(key).unwrap().is_none(),
            "the emptied list is deleted"
        );
        let nodes = || db.collection_nodes().expect("the memory store");
        assert!(settled(nodes, 0), "{} nodes left", nodes());
    }
}
