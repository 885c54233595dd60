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
//!
//! Edits inside the list copy the node they change, not the list: LSET and LINSERT
//! rewrite the node that holds their element (or the root's end), LREM each node that
//! held a match, each split again if it grew past [`NODE_BYTES`] and dropped if it was
//! emptied; an end node's popped elements are left out of its rewrite, so its count
//! in the root goes back to 0. LTRIM pops at both ends, dropping whole nodes unread.

use std::borrow::Cow;

use engine::Result;

use crate::entry::{Entry, Kind, TRAILER_MAX};
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
        let mut out = Vec::with_capacity(ENDS_HEADER + pushed + table.len() + TRAILER_MAX);
        self.put_header(&mut out, [self.pushed[0].len(), self.pushed[1].len()]);
        out.extend_from_slice(&self.pushed[0]);
        out.extend_from_slice(&self.pushed[1]);
        out.extend_from_slice(table);
        out
    }

    /// Appends the root's header: these ends' popped counts, and `sizes` as the sizes
    /// of their pushed elements.
    fn put_header(&self, out: &mut Vec<u8>, sizes: [usize; 2]) {
        for w in [self.popped[0], self.popped[1], sizes[0], sizes[1]] {
            out.extend_from_slice(&u32::try_from(w).expect("bounded by a node").to_le_bytes());
        }
    }

    /// The elements of a list whose table counts `in_table`.
    fn len(&self, in_table: usize) -> usize {
        in_table - self.popped[0] - self.popped[1]
            + packed::count(&self.pushed[0])
            + packed::count(&self.pushed[1])
    }
}

/// The packed elements of `node` but its first `front` and last `back`, and how many.
fn body_without(node: &[u8], front: usize, back: usize) -> (&[u8], usize) {
    let kept = packed::count(node) - front - back;
    let mut elements = packed::elements(node);
    elements.pass(front);
    let start = elements.remaining_bytes();
    elements.pass(kept);
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
/// builds only; every build checks that a table it changed has two nodes at least
/// (one as stored was checked when it was written), that its ends are within their
/// bounds, and [`NodeRef::record`] that no node is empty.
fn check(table: &Records, ends: &Ends) -> Result<()> {
    assert!(
        table.is_as_stored() || table.len() >= 2,
        "a table of one node is stored whole"
    );
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
    if packed.len() - packed::HEADER <= NODE_BYTES && packed::count(packed) > 0 {
        // One node, the loop below would build byte for byte: written as it is.
        return vec![node_ref(nodes.write(packed), packed)];
    }
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
    items: impl DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator + Clone,
) -> Vec<u8> {
    let list = list.unwrap_or_default();
    let extra: usize = items.clone().map(element_size).sum();
    // Room for the entry's trailer too (see `Entry::into_stored`).
    let mut out = Vec::with_capacity(packed::HEADER + list.len() + extra + TRAILER_MAX);
    put_pushed(&mut out, list, end, items);
    out
}

/// Appends to `out` the packed list `list` with `items` pushed one by one at `end`:
/// its count, the items reversed at the left, the old elements as one block, the
/// items at the right. The caller keeps the count within [`MAX_ELEMENTS`].
fn put_pushed<'a>(
    out: &mut Vec<u8>,
    list: &[u8],
    end: End,
    items: impl DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator,
) {
    let count = packed::count(list) + items.len();
    assert!(count <= MAX_ELEMENTS, "a list past 2^32 - 1 elements");
    out.extend_from_slice(&(count as u32).to_le_bytes());
    let body = packed::elements(list).remaining_bytes();
    match end {
        End::Left => {
            for item in items.rev() {
                packed::put_element(out, item);
            }
            out.extend_from_slice(body);
        }
        End::Right => {
            out.extend_from_slice(body);
            for item in items {
                packed::put_element(out, item);
            }
        }
    }
}

/// `list` without `n` elements at `end`, and those elements in the order popped.
fn popped(list: &[u8], end: End, n: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let (kept, count, out) = parted(list, end, n);
    let mut b = Builder::with_capacity(list.len());
    b.push_packed(kept, count);
    (b.finish(), out)
}

/// The packed elements `list` keeps once `n` (or all, if fewer) are popped at `end`, and
/// how many, untouched as one block; and the elements popped, in the order popped.
fn parted(list: &[u8], end: End, n: usize) -> (&[u8], usize, Vec<Vec<u8>>) {
    let len = packed::count(list);
    let n = n.min(len);
    let mut elements = packed::elements(list);
    if end == End::Left {
        let out: Vec<Vec<u8>> = elements.by_ref().take(n).map(<[u8]>::to_vec).collect();
        (elements.remaining_bytes(), len - n, out)
    } else {
        // Find where the kept elements end, then take them as one block.
        let body = elements.remaining_bytes();
        elements.pass(len - n);
        let tail = elements.remaining_bytes();
        let mut out: Vec<Vec<u8>> = elements.map(<[u8]>::to_vec).collect();
        out.reverse();
        (&body[..body.len() - tail.len()], len - n, out)
    }
}

/// What a root's end holds for the packed elements `rest`: no bytes if there are none.
fn as_end(rest: Vec<u8>) -> Cow<'static, [u8]> {
    Cow::Owned(if packed::count(&rest) == 0 {
        Vec::new()
    } else {
        rest
    })
}

/// The packed list `list` with element `at` (< its count) replaced by `value`: the
/// bytes around the old element copied as they are, only the lengths before it read.
fn replaced(list: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut elements = packed::elements(list);
    elements.pass(at);
    let start = list.len() - elements.remaining_bytes().len();
    assert!(elements.next().is_some(), "LSET checks the index");
    let after = elements.remaining_bytes();
    let mut out = Vec::with_capacity(start + element_size(value) + after.len());
    // The count, unchanged, and the elements before.
    out.extend_from_slice(&list[..start]);
    packed::put_element(&mut out, value);
    out.extend_from_slice(after);
    out
}

/// The packed list `list` with `element` inserted before its element `at` (or last).
fn inserted(list: &[u8], at: usize, element: &[u8]) -> Vec<u8> {
    let mut b = Builder::with_capacity(list.len() + element.len() + 5);
    let mut elements = packed::elements(list);
    elements.by_ref().take(at).for_each(|e| b.push(e));
    b.push(element);
    elements.for_each(|e| b.push(e));
    b.finish()
}

/// The packed list `list` without its elements equal to `target`, `limit` at most,
/// the first or, if `from_back`, the last; and how many went.
fn without(list: &[u8], target: &[u8], limit: usize, from_back: bool) -> (Vec<u8>, usize) {
    let elements: Vec<&[u8]> = packed::elements(list).collect();
    let mut matches: Vec<usize> = (0..elements.len())
        .filter(|&i| elements[i] == target)
        .collect();
    if from_back {
        matches.reverse();
    }
    matches.truncate(limit);
    if matches.is_empty() {
        return (list.to_vec(), 0);
    }
    let mut gone = vec![false; elements.len()];
    for &i in &matches {
        gone[i] = true;
    }
    let mut b = Builder::with_capacity(list.len());
    for (e, _) in elements.iter().zip(&gone).filter(|(_, g)| !**g) {
        b.push(e);
    }
    (b.finish(), matches.len())
}

/// The elements of node `at` (its packed form `packed`) of a table of `nodes` that
/// are in the list, packed: all but those popped from an end node.
fn live_elements(packed: &[u8], ends: &Ends, at: usize, nodes: usize) -> Vec<u8> {
    let front = if at == 0 { ends.popped[0] } else { 0 };
    let back = if at == nodes - 1 { ends.popped[1] } else { 0 };
    let (live, count) = body_without(packed, front, back);
    let mut b = Builder::with_capacity(live.len());
    b.push_packed(live, count);
    b.finish()
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

/// A push or a pop that changes a split list's root alone: the elements it adds or
/// takes are those waiting in the root's end (see [`END_BYTES`]), as they are for all
/// pushes but one in every `END_BYTES` bytes pushed, and for as many pops. Its root is
/// built in one pass from the stored one, the node table copied as it lies, unread,
/// where [`ListEditor`] parses the table, copies the end into a new one, then both
/// ends and the table into the root (~1,600 of the ~5,450 instructions of a one-key
/// LPUSH). The root is byte for byte the one the editor stores (a test holds them
/// equal), so a reader cannot tell which wrote it.
pub struct RootEdit<'a> {
    stored: &'a [u8],
    ends: Ends<'a>,
    table: &'a [u8],
}

impl<'a> RootEdit<'a> {
    /// The stored root `stored`, if it is a split list's with ends.
    pub fn of(stored: &'a [u8]) -> Option<RootEdit<'a>> {
        if !Entry::stored_is_node_table(stored) || !Entry::stored_has_list_ends(stored) {
            return None;
        }
        let (ends, table) = Ends::of(stored);
        Some(RootEdit {
            stored,
            ends,
            table,
        })
    }

    /// The list's length.
    pub fn len(&self) -> usize {
        self.ends.len(table_pages::count::<RECORD>(self.table))
    }

    /// The root with `items` pushed one by one at `end`, if they fit in its end.
    pub fn pushed(&self, end: End, items: &[Vec<u8>]) -> Option<Vec<u8>> {
        let old = &self.ends.pushed[side(end)];
        let body = packed::elements(old).remaining_bytes();
        let added: usize = items.iter().map(|i| element_size(i)).sum();
        let size = packed::HEADER + body.len() + added;
        if items.is_empty() || size > END_BYTES {
            return None;
        }
        Some(self.root(end, size, |out| {
            put_pushed(out, old, end, items.iter().map(Vec::as_slice));
        }))
    }

    /// The root with `n` elements popped at `end`, and those elements in the order
    /// popped, if its end holds `n` at least.
    pub fn popped(&self, end: End, n: usize) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
        let old = &self.ends.pushed[side(end)];
        if n == 0 || n > packed::count(old) {
            return None;
        }
        let (kept, count, out) = parted(old, end, n);
        let header = (count as u32).to_le_bytes();
        // An end with no elements holds no bytes (see `as_end`).
        let parts: [&[u8]; 2] = if count == 0 {
            [&[], &[]]
        } else {
            [&header, kept]
        };
        let root = self.root(end, parts[0].len() + parts[1].len(), |out| {
            parts.iter().for_each(|p| out.extend_from_slice(p));
        });
        Some((root, out))
    }

    /// The root with its end at `end` made `size` bytes by `put_end`, all else as stored.
    fn root(&self, end: End, size: usize, put_end: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let payload = Entry::stored_payload(self.stored);
        let trailer = &self.stored[payload.len()..];
        let mut sizes = [self.ends.pushed[0].len(), self.ends.pushed[1].len()];
        sizes[side(end)] = size;
        let ends_size = ENDS_HEADER + sizes[0] + sizes[1];
        let mut out = Vec::with_capacity(ends_size + self.table.len() + trailer.len());
        self.ends.put_header(&mut out, sizes);
        match end {
            End::Left => {
                put_end(&mut out);
                out.extend_from_slice(&self.ends.pushed[1]);
            }
            End::Right => {
                out.extend_from_slice(&self.ends.pushed[0]);
                put_end(&mut out);
            }
        }
        assert_eq!(out.len(), ends_size, "an end written at another size");
        out.extend_from_slice(self.table);
        out.extend_from_slice(trailer);
        out
    }
}

/// A list as a write finds it and leaves it, read in place until the edit changes it:
/// a push at a long list's end mostly copies what it changes, the root's end.
enum Shape<'a> {
    Missing,
    Packed(Cow<'a, [u8]>),
    Split(Records<'a>, Box<Ends<'a>>),
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
    pub fn new(nodes: &'a dyn NodeStore, stored: Option<&'a [u8]>) -> Self {
        let shape = match stored {
            None => Shape::Missing,
            Some(s) if Entry::stored_is_node_table(s) => {
                let (ends, table) = Ends::of(s);
                Shape::Split(Records::new(nodes, LAYOUT, table), Box::new(ends))
            }
            Some(s) => Shape::Packed(Cow::Borrowed(Entry::stored_payload(s))),
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
    pub fn push<'i>(
        &mut self,
        end: End,
        items: impl DoubleEndedIterator<Item = &'i [u8]> + ExactSizeIterator + Clone,
    ) {
        let added = items.len();
        if added == 0 || self.failed.is_some() {
            return;
        }
        assert!(self.len() + added <= MAX_ELEMENTS);
        self.changed = true;
        match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => self.shape = self.packed(pushed(None, end, items)),
            Shape::Packed(p) => self.shape = self.packed(pushed(Some(&p), end, items)),
            Shape::Split(mut table, mut ends) => {
                let grown = pushed(Some(&ends.pushed[side(end)]), end, items);
                self.set_end(&mut table, &mut ends, end, grown);
                self.shape = Shape::Split(table, ends);
            }
        }
    }

    /// Makes `elements` (packed, in list order) the elements at `end` not yet in a
    /// node: kept in the root up to [`END_BYTES`], else moved into nodes (see
    /// [`ListEditor::flush`]).
    fn set_end(&mut self, table: &mut Records, ends: &mut Ends, end: End, elements: Vec<u8>) {
        let s = side(end);
        if elements.len() <= END_BYTES {
            ends.pushed[s] = Cow::Owned(elements);
        } else {
            ends.pushed[s] = Cow::Owned(Vec::new());
            // If it fails, the edit writes nothing.
            let _ = self.flush(table, ends, end, &elements);
        }
    }

    /// Replaces element `at` (< [`ListEditor::len`]) by `value` (LSET): on a long list,
    /// in the root's end or in the one node that holds it.
    pub fn set(&mut self, at: usize, value: &[u8]) {
        assert!(at < self.len(), "LSET checks the index");
        if self.failed.is_some() {
            return;
        }
        self.changed = true;
        match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => unreachable!("a missing list has no element {at}"),
            Shape::Packed(p) => self.shape = self.packed(replaced(&p, at, value)),
            Shape::Split(mut table, mut ends) => {
                let left = packed::count(&ends.pushed[0]);
                let middle = table.count() - ends.popped[0] - ends.popped[1];
                if at < left {
                    let grown = replaced(&ends.pushed[0], at, value);
                    self.set_end(&mut table, &mut ends, End::Left, grown);
                } else if at >= left + middle {
                    let grown = replaced(&ends.pushed[1], at - left - middle, value);
                    self.set_end(&mut table, &mut ends, End::Right, grown);
                } else if let Some((node, skip)) = nodes::noted(
                    &mut self.failed,
                    table.by_element((at - left + ends.popped[0]) as u64),
                ) {
                    // A node's popped elements go with the rewrite: none is left below
                    // the node's count, however the node is split again.
                    let front = if node == 0 { ends.popped[0] } else { 0 };
                    let live = skip as usize - front;
                    let _ = self.rewrite_node(&mut table, &mut ends, node, |elements| {
                        replaced(elements, live, value)
                    });
                }
                self.shape = Shape::Split(table, ends);
            }
        }
    }

    /// Replaces node `at` of `table` by what `edit` makes of its elements but the
    /// popped ones (packed), split into nodes as a long list is, or by none if it
    /// leaves none; `None` if the node or a page could not be read. The caller settles
    /// a table left with fewer than two nodes ([`ListEditor::settle`]).
    fn rewrite_node(
        &mut self,
        table: &mut Records,
        ends: &mut Ends,
        at: usize,
        edit: impl FnOnce(&[u8]) -> Vec<u8>,
    ) -> Option<()> {
        let (node, packed) = self.edge(table, at)?;
        let edited = edit(&live_elements(&packed, ends, at, table.len()));
        if at == 0 {
            ends.popped[0] = 0;
        }
        if at == table.len() - 1 {
            ends.popped[1] = 0;
        }
        let new = split(self.nodes, &edited);
        self.fresh.extend(new.iter().map(|n| n.id));
        self.drop_node(node.id);
        let records: Vec<Record> = new.iter().map(NodeRef::record).collect();
        self.splice(table, at..at + 1, &records)?;
        table.set_count(table.count() - node.count as usize + packed::count(&edited));
        Some(())
    }

    /// The shape of a split list after an edit that may have left its table with
    /// fewer than two nodes: then stored whole (see [`ListEditor::pop`]).
    fn settle(&mut self, table: Records<'a>, ends: Box<Ends<'a>>) -> Shape<'a> {
        if table.len() >= 2 {
            return Shape::Split(table, ends);
        }
        match self.whole(&table, &ends) {
            Some(whole) if packed::count(&whole) > 0 => Shape::Packed(whole.into()),
            _ => Shape::Missing,
        }
    }

    /// Inserts `element` next to the first element equal to `pivot`, after it if
    /// `after` (LINSERT); whether there was one. A long list's nodes are read up to the
    /// pivot's, which alone is copied.
    pub fn insert(&mut self, pivot: &[u8], element: &[u8], after: bool) -> bool {
        if self.failed.is_some() {
            return false;
        }
        let at_pivot = |list: &[u8]| {
            packed::elements(list)
                .position(|e| e == pivot)
                .map(|i| i + usize::from(after))
        };
        let found = match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => false,
            Shape::Packed(p) => {
                let at = at_pivot(&p);
                self.shape = match at {
                    Some(at) => self.packed(inserted(&p, at, element)),
                    None => Shape::Packed(p),
                };
                at.is_some()
            }
            Shape::Split(mut table, mut ends) => {
                let found = self.insert_split(&mut table, &mut ends, &at_pivot, element);
                self.shape = Shape::Split(table, ends);
                found
            }
        };
        self.changed |= found;
        found
    }

    fn insert_split(
        &mut self,
        table: &mut Records,
        ends: &mut Ends,
        at_pivot: &dyn Fn(&[u8]) -> Option<usize>,
        element: &[u8],
    ) -> bool {
        if let Some(at) = at_pivot(&ends.pushed[0]) {
            let grown = inserted(&ends.pushed[0], at, element);
            self.set_end(table, ends, End::Left, grown);
            return true;
        }
        for node_at in 0..table.len() {
            let Some((_, packed)) = self.edge(table, node_at) else {
                return false;
            };
            if let Some(at) = at_pivot(&live_elements(&packed, ends, node_at, table.len())) {
                let edit = |live: &[u8]| inserted(live, at, element);
                return self.rewrite_node(table, ends, node_at, edit).is_some();
            }
        }
        if let Some(at) = at_pivot(&ends.pushed[1]) {
            let grown = inserted(&ends.pushed[1], at, element);
            self.set_end(table, ends, End::Right, grown);
            return true;
        }
        false
    }

    /// Removes the elements equal to `target`, `limit` at most, the first ones or, if
    /// `from_back`, the last (LREM); how many. A long list's nodes are read until
    /// `limit` is reached, and those that held a match copied.
    pub fn remove_equal(&mut self, target: &[u8], limit: usize, from_back: bool) -> usize {
        if self.failed.is_some() || limit == 0 {
            return 0;
        }
        let removed = match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => 0,
            Shape::Packed(p) => {
                let (rest, removed) = without(&p, target, limit, from_back);
                self.shape = if packed::count(&rest) > 0 {
                    Shape::Packed(rest.into())
                } else {
                    Shape::Missing
                };
                removed
            }
            Shape::Split(mut table, mut ends) => {
                let removed = self.remove_split(&mut table, &mut ends, target, limit, from_back);
                self.shape = self.settle(table, ends);
                removed
            }
        };
        self.changed |= removed > 0;
        removed
    }

    fn remove_split(
        &mut self,
        table: &mut Records,
        ends: &mut Ends,
        target: &[u8],
        limit: usize,
        from_back: bool,
    ) -> usize {
        let mut removed = 0;
        let from_end = |ends: &mut Ends, end: End, removed: &mut usize| {
            let s = side(end);
            let (rest, n) = without(&ends.pushed[s], target, limit - *removed, from_back);
            if n > 0 {
                ends.pushed[s] = as_end(rest);
                *removed += n;
            }
        };
        let (first, last) = if from_back {
            (End::Right, End::Left)
        } else {
            (End::Left, End::Right)
        };
        from_end(ends, first, &mut removed);
        // Nodes from the first end's: `next` counts those not yet looked at.
        let mut next = table.len();
        while removed < limit && next > 0 {
            let at = if from_back {
                next - 1
            } else {
                table.len() - next
            };
            next -= 1;
            let Some((_, packed)) = self.edge(table, at) else {
                return removed;
            };
            let live = live_elements(&packed, ends, at, table.len());
            let (rest, n) = without(&live, target, limit - removed, from_back);
            if n == 0 {
                continue;
            }
            removed += n;
            if self.rewrite_node(table, ends, at, |_| rest).is_none() {
                return removed;
            }
        }
        if removed < limit {
            from_end(ends, last, &mut removed);
        }
        removed
    }

    /// Counts the edit as a change though it changes no element (Redis counts an
    /// LTRIM that keeps every element as one).
    pub fn touch(&mut self) {
        self.changed |= self.exists();
    }

    /// Pops up to `n` elements at `end`, returned in the order popped.
    pub fn pop(&mut self, end: End, n: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.take(end, n, Some(&mut out));
        out
    }

    /// Removes up to `n` elements at `end` (LTRIM): as [`ListEditor::pop`], but the
    /// nodes it drops whole are not read.
    pub fn remove(&mut self, end: End, n: usize) {
        self.take(end, n, None);
    }

    /// Takes up to `n` elements at `end`, into `out` (in the order taken) if given.
    fn take(&mut self, end: End, n: usize, mut out: Option<&mut Vec<Vec<u8>>>) {
        if n == 0 || !self.exists() || self.failed.is_some() {
            return;
        }
        self.changed = true;
        let copied = out.is_some();
        let mut keep = |taken: Vec<Vec<u8>>| {
            let count = taken.len();
            if let Some(out) = out.as_deref_mut() {
                out.extend(taken);
            }
            count
        };
        match std::mem::replace(&mut self.shape, Shape::Missing) {
            Shape::Missing => unreachable!("checked above"),
            Shape::Packed(p) => {
                let (rest, first) = popped(&p, end, n);
                keep(first);
                if packed::count(&rest) > 0 {
                    self.shape = Shape::Packed(rest.into());
                }
            }
            Shape::Split(mut table, mut ends) => {
                let s = side(end);
                let (rest, first) = popped(&ends.pushed[s], end, n);
                let mut got = keep(first);
                if got > 0 {
                    ends.pushed[s] = as_end(rest);
                }
                while got < n && table.len() >= 2 {
                    let at = edge_at(&table, end);
                    let Some(record) = nodes::noted(&mut self.failed, table.get(at)) else {
                        return;
                    };
                    let edge = NodeRef::of(&record);
                    let gone = ends.popped[s];
                    let take = (edge.count as usize - gone).min(n - got);
                    if !copied && gone + take == edge.count as usize {
                        // Removed whole, unread.
                        got += take;
                        self.drop_node(edge.id);
                        if self.splice(&mut table, at..at + 1, &[]).is_none() {
                            return;
                        }
                        table.set_count(table.count() - edge.count as usize);
                        ends.popped[s] = 0;
                        continue;
                    }
                    let Some(node) = self.read(edge) else {
                        return;
                    };
                    got += keep(taken(&node, end, gone, take));
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
                        return;
                    }
                    table.set_count(table.count() - edge.count as usize);
                    ends.popped[s] = 0;
                }
                if table.len() >= 2 {
                    self.shape = Shape::Split(table, ends);
                    return;
                }
                // A node or none left: the list is whole again (stored whole even if
                // its ends make it long, as a node is; the next push splits it).
                let Some(whole) = self.whole(&table, &ends) else {
                    return;
                };
                let (rest, last) = popped(&whole, end, n - got);
                keep(last);
                self.shape = match packed::count(&rest) {
                    0 => Shape::Missing,
                    _ => Shape::Packed(rest.into()),
                };
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
            return Shape::Packed(list.into());
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
        nodes::noted(
            &mut self.failed,
            self.nodes.read(node.id).map(Cow::into_owned),
        )
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
                let stored = Entry::collection(Kind::List, p.into_owned(), deadline).into_stored();
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
        /// LTRIM's removal, unread.
        Remove(bool, usize),
        /// LSET of the element at this share (in 1/1000ths) of the list.
        Set(usize, Vec<u8>),
        /// LINSERT next to the element at this share of the list (or a pivot not in it,
        /// if `None`), after it if true.
        Insert(Option<usize>, Vec<u8>, bool),
        /// LREM of the element at this share of the list, with this count.
        RemoveEqual(usize, i64),
        Range(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Mostly short elements, some longer than a node.
        let element = || {
            prop_oneof![
                8 => prop::collection::vec(any::<u8>(), 0..40),
                // Few values: LREM finds several.
                2 => prop::collection::vec(0..2u8, 0..3),
                1 => prop::collection::vec(any::<u8>(), 0..(2 * NODE_BYTES)),
            ]
        };
        // Enough ~1 KB elements at once for a few dozen nodes, so that tables grow
        // past a page.
        let many = (any::<u8>(), 600..1400usize, 80..200usize)
            .prop_map(|(b, size, n)| (0..n).map(|i| vec![b ^ i as u8; size + i]).collect());
        prop_oneof![
            4 => (any::<bool>(), prop::collection::vec(element(), 1..60))
                .prop_map(|(l, items)| Op::Push(l, items)),
            2 => (any::<bool>(), many).prop_map(|(l, items)| Op::Push(l, items)),
            2 => (any::<bool>(), 1..150usize).prop_map(|(l, n)| Op::Pop(l, n)),
            1 => (any::<bool>(), 1..400usize).prop_map(|(l, n)| Op::Remove(l, n)),
            2 => (0..1000usize, element()).prop_map(|(at, e)| Op::Set(at, e)),
            2 => (prop::option::weighted(0.9, 0..1000usize), element(), any::<bool>())
                .prop_map(|(at, e, after)| Op::Insert(at, e, after)),
            2 => (0..1000usize, -3..4i64).prop_map(|(at, n)| Op::RemoveEqual(at, n)),
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
                // What the root alone makes of a push or pop, where it can: the
                // editor's root, byte for byte.
                let root = stored.as_deref().and_then(RootEdit::of);
                let mut in_root = None;
                match &op {
                    Op::Push(left, items) => {
                        let end = if *left { End::Left } else { End::Right };
                        in_root = root.and_then(|r| r.pushed(end, items));
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
                        if let Some((new, popped)) = root.and_then(|r| r.popped(end, *n)) {
                            prop_assert_eq!(&popped, &want);
                            in_root = Some(new);
                        }
                        prop_assert_eq!(got, want);
                    }
                    Op::Remove(left, n) => {
                        let end = if *left { End::Left } else { End::Right };
                        editor.remove(end, *n);
                        for _ in 0..*n {
                            if *left { model.pop_front() } else { model.pop_back() };
                        }
                    }
                    Op::Set(share, value) => {
                        if model.is_empty() {
                            continue;
                        }
                        let at = share * model.len() / 1000;
                        editor.set(at, value);
                        model[at] = value.clone();
                    }
                    Op::Insert(share, element, after) => {
                        let pivot = match share {
                            Some(share) if !model.is_empty() => model[share * model.len() / 1000].clone(),
                            _ => vec![b'!'; 41],
                        };
                        let found = model.iter().position(|e| *e == pivot);
                        prop_assert_eq!(editor.insert(&pivot, element, *after), found.is_some());
                        // Without the pivot nothing changes: a long list a pop left
                        // whole stays whole.
                        let Some(at) = found else {
                            continue;
                        };
                        model.insert(at + usize::from(*after), element.clone());
                    }
                    Op::RemoveEqual(share, count) => {
                        if model.is_empty() {
                            continue;
                        }
                        let target = model[share * model.len() / 1000].clone();
                        let limit = if *count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                        let mut at: Vec<usize> = (0..model.len()).filter(|&i| model[i] == target).collect();
                        if *count < 0 {
                            at.reverse();
                        }
                        at.truncate(limit);
                        at.sort_unstable();
                        for i in at.iter().rev() {
                            model.remove(*i);
                        }
                        prop_assert_eq!(editor.remove_equal(&target, limit, *count < 0), at.len());
                    }
                    Op::Range(..) => unreachable!(),
                }
                prop_assert_eq!(editor.len(), model.len());
                let (new, released) = editor.finish_releasing(None).unwrap();
                if let Some(root) = in_root {
                    prop_assert_eq!(new.as_ref(), Some(&Some(root)));
                    prop_assert_eq!(released.as_deref(), Some(&[][..]));
                }
                crate::nodes::publish(&nodes, &mut stored, new, released);
                let whole = stored.as_deref().map(|s| Entry::decode(crate::nodes::expand(&nodes, s).unwrap()).value);
                let elements: Vec<&[u8]> = whole.as_deref().map(packed::elements).into_iter().flatten().collect();
                prop_assert!(elements.iter().copied().eq(model.iter().map(Vec::as_slice)));
                // A long list is split, a short one whole.
                let bytes: usize = model.iter().map(|e| element_size(e)).sum();
                let split = stored.as_deref().is_some_and(Entry::stored_is_node_table);
                prop_assert!(!split || model.len() >= 2);
                prop_assert!(split || model.len() < 2 || bytes <= NODE_BYTES || matches!(op, Op::Pop(..) | Op::Remove(..) | Op::RemoveEqual(..)));
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

    /// Pushes and pops of a few short elements at either end of a long list with a
    /// deadline, seeded: most are made by the root alone ([`RootEdit`]), each into the
    /// root the editor stores, deadline and all, popping what the editor pops.
    #[test]
    fn a_push_or_pop_in_the_root_alone_stores_what_the_editor_does() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = rand::random();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let deadline = Some(1_900_000_000_000);
        let mut editor = ListEditor::new(&nodes, None);
        let base: Vec<Vec<u8>> = (0..2_000).map(element).collect();
        editor.push(End::Right, base.iter().map(Vec::as_slice));
        let mut stored = editor.finish(deadline).unwrap().unwrap().unwrap();
        let mut in_root = 0;
        for i in 0..4_000 {
            let end = if rng.gen() { End::Left } else { End::Right };
            let items: Vec<Vec<u8>> = (0..rng.gen_range(1..4))
                .map(|j| format!("{i}.{j}").into_bytes())
                .collect();
            let n = rng.gen_range(1..3);
            let push = rng.gen_bool(0.55);
            let mut editor = ListEditor::new(&nodes, Some(&stored));
            let len = editor.len();
            let root = RootEdit::of(&stored).expect("a split list with ends");
            assert_eq!(root.len(), len, "seed {seed}");
            let quick = if push {
                editor.push(end, items.iter().map(Vec::as_slice));
                root.pushed(end, &items)
            } else {
                let popped = editor.pop(end, n);
                root.popped(end, n).map(|(new, by_root)| {
                    assert_eq!(by_root, popped, "seed {seed}");
                    new
                })
            };
            let (new, released) = editor.finish_releasing(deadline).unwrap();
            let new = new.flatten().expect("the list stays");
            if let Some(quick) = quick {
                assert_eq!(quick, new, "seed {seed}, step {i}");
                assert_eq!(released, Some(Vec::new()), "seed {seed}");
                in_root += 1;
            }
            assert_eq!(Entry::stored_deadline(&new), deadline);
            nodes.retire(&stored, Some(&new));
            stored = new;
        }
        assert!(
            in_root >= 3_000,
            "{in_root} of 4,000 in the root alone, seed {seed}"
        );
    }

    /// A node store that counts the reads of nodes and pages.
    struct CountingReads<'a> {
        nodes: &'a MemoryNodes,
        reads: std::cell::Cell<usize>,
    }

    impl NodeStore for CountingReads<'_> {
        fn write(&self, packed: &[u8]) -> u64 {
            self.nodes.write(packed)
        }

        fn read(&self, id: u64) -> Result<Cow<'_, [u8]>> {
            self.reads.set(self.reads.get() + 1);
            self.nodes.read(id)
        }

        fn discard(&self, id: u64) {
            self.nodes.discard(id)
        }
    }

    /// LSET of an element in a long list's middle writes the node that holds it (and
    /// its page), not the list; LTRIM drops the nodes it removes unread.
    #[test]
    fn lset_and_ltrim_of_a_long_list_copy_the_nodes_they_change() {
        let nodes = MemoryNodes::default();
        let _pin = crossbeam_epoch::pin();
        let mut editor = ListEditor::new(&nodes, None);
        let mut want: Vec<Vec<u8>> = (0..60_000).map(element).collect();
        editor.push(End::Right, want.iter().map(Vec::as_slice));
        let mut stored = editor.finish(None).unwrap().unwrap().unwrap();
        let all = |stored: &[u8]| {
            read_range(&nodes, Some(stored), |len| Some((0, len - 1)))
                .unwrap()
                .elements
        };
        let counting = CountingReads {
            nodes: &nodes,
            reads: Default::default(),
        };
        for (at, value) in [
            (30_000, b"x".to_vec()),
            (41_234, vec![b'y'; 3 * NODE_BYTES]),
        ] {
            let mut editor = ListEditor::new(&counting, Some(&stored));
            editor.set(at, &value);
            let new = editor.finish(None).unwrap().unwrap().unwrap();
            let released = crate::nodes::dropped(&nodes, &stored, Some(&new)).unwrap();
            // The node, its page and its group (the pages are in groups).
            assert_eq!(released.len(), 3, "{released:?}");
            nodes.retire(&stored, Some(&new));
            stored = new;
            want[at] = value;
            assert_eq!(all(&stored), want);
        }
        counting.reads.set(0);
        let mut editor = ListEditor::new(&counting, Some(&stored));
        editor.remove(End::Left, 50_000);
        editor.remove(End::Right, 5_000);
        let new = editor.finish(None).unwrap().unwrap().unwrap();
        // Of ~1,400 nodes dropped, the two cut through are read, and pages of the table.
        let reads = counting.reads.get();
        assert!(reads < 100, "{reads} reads");
        nodes.retire(&stored, Some(&new));
        assert_eq!(all(&new), want[50_000..55_000]);
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
                        let e = vec![element(p, i)];
                        // Half the pushers edit the root alone where they can, racing
                        // the editor's writes.
                        let in_root = |r: &RootEdit| Some((r.pushed(End::Right, &e)?, ()));
                        let push =
                            |l: &mut ListEditor| l.push(End::Right, e.iter().map(Vec::as_slice));
                        match p % 2 {
                            0 => db.edit_list_or_root(key, in_root, push),
                            _ => db.edit_list(key, push),
                        }
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
                .map(|popper| {
                    let db = &db;
                    let done = &done;
                    s.spawn(move || {
                        let mut got = Vec::new();
                        loop {
                            let finished =
                                done.load(std::sync::atomic::Ordering::SeqCst) == PUSHERS;
                            let n = 1 + got.len() % 5;
                            let in_root = |r: &RootEdit| r.popped(End::Left, n);
                            let pop = |l: &mut ListEditor| l.pop(End::Left, n);
                            let out = match popper {
                                0 => db.edit_list_or_root(key, in_root, pop),
                                _ => db.edit_list(key, pop),
                            }
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
