//! Long lists split into nodes in order, so that a push or a pop copies one node of
//! at most [`NODE_BYTES`] and a page of the node table rather than the whole list
//! (Redis's quicklist splits its lists the same way, for the same reason). How nodes
//! are stored and released, and why readers need no lock, is in `nodes.rs`.
//!
//! ```text
//! node table = a table of records (`table_pages.rs`, inline or in pages), head first
//! record     = id (u64 LE) | count (u32 LE) | bytes (u32 LE: its packed size)
//! ```
//!
//! Each node is a packed list (`packed.rs`) of at least one element. A list whose
//! packed form passes [`NODE_BYTES`] is split; one left with a single node is stored
//! whole again. Tables written before pages (`count u32 | record*`) are the inline
//! form and read unchanged.

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
/// node) is never read.
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 0,
    id_at: 0,
    count_at: 8,
    bytes_at: 12,
    names_nodes: true,
};

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

/// The table of a stored list, if it is one.
fn table_of<'a>(nodes: &'a dyn NodeStore, stored: &'a [u8]) -> Option<Records<'a>> {
    Entry::stored_is_node_table(stored)
        .then(|| Records::new(nodes, LAYOUT, Entry::stored_payload(stored)))
}

/// The invariants every stored table keeps: O(records), so checked in full by debug
/// builds only; every build checks that a table has two nodes at least, and
/// [`NodeRef::record`] that no node is empty.
fn check(table: &Records) -> Result<()> {
    assert!(table.len() >= 2, "a table of one node is stored whole");
    if cfg!(debug_assertions) {
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

/// The pages and nodes the stored table `table` names, each its id and stored size.
pub fn nodes(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<(u64, usize)>> {
    table_pages::nodes(nodes, LAYOUT, table)
}

/// The pages and nodes the stored table `old` names and `new` does not.
pub fn dropped(nodes: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    table_pages::dropped(nodes, LAYOUT, old, new)
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

/// The whole packed list whose node table is `table`. The caller read the table
/// pinned (memory) or holds the key's lock (engine).
pub fn expand(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<u8>> {
    let table = Records::new(nodes, LAYOUT, table);
    let refs: Vec<NodeRef> = table.all()?.iter().map(|r| NodeRef::of(r)).collect();
    let bytes: usize = refs.iter().map(|n| n.bytes as usize).sum();
    let mut b = Builder::with_capacity(bytes);
    for node in &refs {
        let packed = nodes.read(node.id)?;
        b.push_packed(
            packed::elements(&packed).remaining_bytes(),
            node.count as usize,
        );
    }
    let list = b.finish();
    assert_eq!(
        packed::count(&list),
        table.count(),
        "a table's count is its nodes'"
    );
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

/// A list as a write finds it and leaves it.
enum Shape<'a> {
    Missing,
    Packed(Vec<u8>),
    Split(Records<'a>),
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
            Some(s) if Entry::stored_is_node_table(s) => Shape::Split(Records::new(
                nodes,
                LAYOUT,
                Entry::stored_payload(s).to_vec(),
            )),
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
            Shape::Split(t) => t.count(),
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
            Shape::Split(mut table) => {
                let count = table.count();
                let at = match end {
                    End::Left => 0,
                    End::Right => table.len() - 1,
                };
                let bytes: usize = items.clone().map(element_size).sum();
                let edge = nodes::noted(&mut self.failed, table.get(at));
                match edge.map(|r| NodeRef::of(&r)) {
                    // The edit failed; it writes nothing.
                    None => {}
                    Some(edge) if edge.bytes as usize + bytes <= NODE_BYTES => {
                        if let Some(old) = self.read(edge) {
                            let new = self.write(&pushed(Some(&old), end, items));
                            self.drop_node(edge.id);
                            self.splice(&mut table, at..at + 1, &[new.record()]);
                        }
                    }
                    Some(_) => {
                        let new = split(self.nodes, &pushed(None, end, items));
                        self.fresh.extend(new.iter().map(|n| n.id));
                        let records: Vec<Record> = new.iter().map(NodeRef::record).collect();
                        let at = match end {
                            End::Left => 0,
                            End::Right => table.len(),
                        };
                        self.splice(&mut table, at..at, &records);
                    }
                }
                table.set_count(count + added);
                self.shape = Shape::Split(table);
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
            Shape::Split(mut table) => {
                let count = table.count();
                let mut out = Vec::with_capacity(n.min(count));
                while out.len() < n && table.len() > 0 {
                    let at = match end {
                        End::Left => 0,
                        End::Right => table.len() - 1,
                    };
                    let Some((edge, node)) = self.edge(&table, at) else {
                        return Vec::new();
                    };
                    let (rest, taken) = popped(&node, end, n - out.len());
                    out.extend(taken);
                    self.drop_node(edge.id);
                    let records = match packed::count(&rest) {
                        0 => Vec::new(),
                        _ => vec![self.write(&rest).record()],
                    };
                    if self.splice(&mut table, at..at + 1, &records).is_none() {
                        return Vec::new();
                    }
                }
                table.set_count(count - out.len());
                self.shape = match table.len() {
                    0 => Shape::Missing,
                    1 => {
                        let Some((last, whole)) = self.edge(&table, 0) else {
                            return Vec::new();
                        };
                        self.drop_node(last.id);
                        Shape::Packed(whole)
                    }
                    _ => Shape::Split(table),
                };
                out
            }
        }
    }

    /// A packed list as stores keep it: split if long.
    fn packed(&mut self, list: Vec<u8>) -> Shape<'a> {
        if !is_long(&list) {
            return Shape::Packed(list);
        }
        let refs = split(self.nodes, &list);
        self.fresh.extend(refs.iter().map(|n| n.id));
        let records: Vec<Record> = refs.iter().map(NodeRef::record).collect();
        Shape::Split(Records::of(
            self.nodes,
            LAYOUT,
            packed::count(&list) as u64,
            &records,
        ))
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
            Shape::Split(t) => {
                let finished = check(&t).and_then(|()| t.finish_releasing());
                let (table, released) = finished.inspect_err(|_| discard_fresh(self.fresh))?;
                let stored = Entry::encode_node_table(Kind::List, table, deadline, false);
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
    if let Some(table) = stored.and_then(|s| table_of(nodes, s)) {
        let elements = match pick(table.count()) {
            Some((from, to)) => range(nodes, &table, from, to)?,
            None => Vec::new(),
        };
        return Ok(ListRange {
            len: table.count(),
            elements,
        });
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
            .map_or(0, |s| {
                super::nodes(nodes, Entry::stored_payload(s)).unwrap().len()
            })
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

    /// A list of some 1,500 nodes keeps its table in pages: a push or pop at either
    /// end writes (and releases) one node and one page, reads find their elements
    /// through the pages, and emptying the list leaves no node or page behind.
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
        for end in [End::Left, End::Right] {
            let (new, released) = edited(&nodes, &stored, |l| {
                assert_eq!(l.pop(end, 1).len(), 1);
                l.push(end, std::iter::once(b"x".as_slice()));
            });
            // The pages are in groups (of a few pages, in unit tests).
            assert_eq!(released.len(), 3, "a node, a page, a group: {released:?}");
            let new = new.unwrap();
            nodes.retire(&stored, Some(&new));
            stored = new;
        }
        let mut want = all.clone();
        want[0] = b"x".to_vec();
        want[59_999] = b"x".to_vec();
        assert_eq!(read(&stored, 0, 59_999), want);
        let (empty, _) = edited(&nodes, &stored, |l| {
            assert_eq!(l.pop(End::Left, 70_000), want);
        });
        assert_eq!(empty, None);
        drop(_pin);
        nodes.retire(&stored, None);
        assert!(settled(|| nodes.len(), 0), "{} left", nodes.len());
    }

    /// A table stored before pages (`count | record*`, any length) is read as it is,
    /// and paged by its next write, which releases only the node it changed.
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
        assert_eq!(released.len(), 1, "the last node alone: {released:?}");
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
