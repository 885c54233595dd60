//! Long lists split into nodes in order, so that a push or a pop copies one node of
//! at most [`NODE_BYTES`] and the node table rather than the whole list (Redis's
//! quicklist splits its lists the same way, for the same reason). How nodes are stored
//! and released, and why readers need no lock, is in `nodes.rs`.
//!
//! ```text
//! node table = count (u32 LE: elements in the list) | node*        head first
//! node       = id (u64 LE) | count (u32 LE) | bytes (u32 LE: its packed size)
//! ```
//!
//! Each node is a packed list (`packed.rs`) of at least one element. A list whose
//! packed form passes [`NODE_BYTES`] is split; one left with a single node is stored
//! whole again.

use engine::Result;

use crate::entry::{Entry, Kind};
use crate::nodes::{NodeStore, NODE_BYTES};
use crate::packed::{self, element_size, Builder, MAX_ELEMENTS};

const TABLE_HEADER: usize = 4;
const NODE_REF: usize = 16;

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

/// A node table, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Table {
    count: usize,
    nodes: Vec<NodeRef>,
}

impl Table {
    fn parse(payload: &[u8]) -> Table {
        let word = |at: usize, n: usize| -> u64 {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&payload[at..at + n]);
            u64::from_le_bytes(b)
        };
        assert!(
            payload.len() >= TABLE_HEADER
                && (payload.len() - TABLE_HEADER).is_multiple_of(NODE_REF),
            "a node table of {} bytes",
            payload.len()
        );
        let nodes: Vec<NodeRef> = (TABLE_HEADER..payload.len())
            .step_by(NODE_REF)
            .map(|at| NodeRef {
                id: word(at, 8),
                count: word(at + 8, 4) as u32,
                bytes: word(at + 12, 4) as u32,
            })
            .collect();
        let table = Table {
            count: word(0, 4) as usize,
            nodes,
        };
        table.check();
        table
    }

    fn encode(&self) -> Vec<u8> {
        self.check();
        let mut out = Vec::with_capacity(TABLE_HEADER + NODE_REF * self.nodes.len() + 9);
        out.extend_from_slice(&(self.count as u32).to_le_bytes());
        for n in &self.nodes {
            out.extend_from_slice(&n.id.to_le_bytes());
            out.extend_from_slice(&n.count.to_le_bytes());
            out.extend_from_slice(&n.bytes.to_le_bytes());
        }
        out
    }

    /// The invariants every stored table keeps (O(nodes), as reading the table is).
    fn check(&self) {
        assert!(self.nodes.len() >= 2, "a table of one node is stored whole");
        assert!(self.nodes.iter().all(|n| n.count >= 1), "an empty node");
        assert_eq!(
            self.nodes.iter().map(|n| n.count as usize).sum::<usize>(),
            self.count,
            "a table's count is its nodes' counts"
        );
    }

    fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter().map(|n| n.id)
    }
}

/// The table of a stored list, if it is one.
fn table_of(stored: &[u8]) -> Option<Table> {
    Entry::stored_is_node_table(stored).then(|| Table::parse(Entry::stored_payload(stored)))
}

/// The nodes `table` names, each its id and packed size.
pub fn nodes(table: &[u8]) -> Vec<(u64, usize)> {
    let table = Table::parse(table);
    table
        .nodes
        .iter()
        .map(|n| (n.id, n.bytes as usize))
        .collect()
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
    is_long(list).then(|| split(nodes, list).encode())
}

/// Writes the elements of `packed` as nodes of up to [`NODE_BYTES`] each.
fn split(nodes: &dyn NodeStore, packed: &[u8]) -> Table {
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
    Table {
        count: packed::count(packed),
        nodes: written,
    }
}

/// The whole packed list whose node table is `table`. The caller read the table
/// pinned (memory) or holds the key's lock (engine).
pub fn expand(nodes: &dyn NodeStore, table: &[u8]) -> Result<Vec<u8>> {
    let table = Table::parse(table);
    let bytes: usize = table.nodes.iter().map(|n| n.bytes as usize).sum();
    let mut b = Builder::with_capacity(bytes);
    for node in &table.nodes {
        let packed = nodes.read(node.id)?;
        b.push_packed(
            packed::elements(&packed).remaining_bytes(),
            node.count as usize,
        );
    }
    let list = b.finish();
    assert_eq!(
        packed::count(&list),
        table.count,
        "a table's count is its nodes'"
    );
    Ok(list)
}

/// Elements `from..=to` of the list whose table is `table`.
fn range(nodes: &dyn NodeStore, table: &Table, from: usize, to: usize) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(to + 1 - from);
    let mut first = 0;
    for &node in &table.nodes {
        let last = first + node.count as usize - 1;
        if last >= from && first <= to {
            let packed = nodes.read(node.id)?;
            let skip = from.saturating_sub(first);
            let take = to.min(last) + 1 - (first + skip);
            out.extend(
                packed::elements(&packed)
                    .skip(skip)
                    .take(take)
                    .map(<[u8]>::to_vec),
            );
        }
        if last >= to {
            break;
        }
        first = last + 1;
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
enum Shape {
    Missing,
    Packed(Vec<u8>),
    Split(Table),
}

/// A list being changed by one write (see `Db::edit_list`): pushes and pops at its
/// ends, on its packed form or, for a long list, on its end nodes only.
pub struct ListEditor<'a> {
    nodes: &'a dyn NodeStore,
    shape: Shape,
    /// Nodes this edit wrote: removed at once if the edit drops them again.
    fresh: Vec<u64>,
    changed: bool,
    /// The first node read that failed (an engine's I/O): the edit then writes nothing.
    failed: Option<engine::Error>,
}

impl<'a> ListEditor<'a> {
    /// The list whose stored value is `stored` (`None` if missing), its long form's
    /// nodes in `nodes`.
    pub fn new(nodes: &'a dyn NodeStore, stored: Option<&[u8]>) -> Self {
        let shape = match stored {
            None => Shape::Missing,
            Some(s) => match table_of(s) {
                Some(table) => Shape::Split(table),
                None => Shape::Packed(Entry::stored_payload(s).to_vec()),
            },
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
            Shape::Split(t) => t.count,
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
                let at = match end {
                    End::Left => 0,
                    End::Right => table.nodes.len() - 1,
                };
                let edge = table.nodes[at];
                let bytes: usize = items.clone().map(element_size).sum();
                if edge.bytes as usize + bytes <= NODE_BYTES {
                    if let Some(old) = self.read(edge) {
                        table.nodes[at] = self.write(&pushed(Some(&old), end, items));
                        self.drop_node(edge.id);
                    }
                } else {
                    let new = split(self.nodes, &pushed(None, end, items));
                    self.fresh.extend(new.ids());
                    let at = if end == End::Left {
                        0
                    } else {
                        table.nodes.len()
                    };
                    table.nodes.splice(at..at, new.nodes);
                }
                table.count += added;
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
                let mut out = Vec::with_capacity(n.min(table.count));
                while out.len() < n && !table.nodes.is_empty() {
                    let at = match end {
                        End::Left => 0,
                        End::Right => table.nodes.len() - 1,
                    };
                    let edge = table.nodes[at];
                    let Some(node) = self.read(edge) else {
                        return Vec::new();
                    };
                    let (rest, taken) = popped(&node, end, n - out.len());
                    out.extend(taken);
                    self.drop_node(edge.id);
                    if packed::count(&rest) == 0 {
                        table.nodes.remove(at);
                    } else {
                        table.nodes[at] = self.write(&rest);
                    }
                }
                table.count -= out.len();
                self.shape = match table.nodes.len() {
                    0 => Shape::Missing,
                    1 => {
                        let last = table.nodes[0];
                        let Some(whole) = self.read(last) else {
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
    fn packed(&mut self, list: Vec<u8>) -> Shape {
        if !is_long(&list) {
            return Shape::Packed(list);
        }
        let table = split(self.nodes, &list);
        self.fresh.extend(table.ids());
        Shape::Split(table)
    }

    fn read(&mut self, node: NodeRef) -> Option<Vec<u8>> {
        match self.nodes.read(node.id) {
            Ok(packed) => Some(packed),
            Err(e) => {
                self.failed.get_or_insert(e);
                None
            }
        }
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
    /// `Some(Some(stored))` otherwise, with `deadline` kept. The error of a node that
    /// could not be read, if one could not: then nothing is to be stored.
    pub fn finish(self, deadline: Option<u64>) -> Result<Option<Option<Vec<u8>>>> {
        if let Some(e) = self.failed {
            for id in self.fresh {
                self.nodes.discard(id);
            }
            return Err(e);
        }
        if !self.changed {
            return Ok(None);
        }
        Ok(Some(match self.shape {
            Shape::Missing => None,
            Shape::Packed(p) => Some(Entry::collection(Kind::List, p, deadline).into_stored()),
            Shape::Split(t) => Some(Entry::encode_node_table(
                Kind::List,
                t.encode(),
                deadline,
                false,
            )),
        }))
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
    if let Some(table) = stored.and_then(table_of) {
        let elements = match pick(table.count) {
            Some((from, to)) => range(nodes, &table, from, to)?,
            None => Vec::new(),
        };
        return Ok(ListRange {
            len: table.count,
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

    fn nodes_named(stored: &Option<Vec<u8>>) -> usize {
        stored
            .as_deref()
            .and_then(table_of)
            .map_or(0, |t| t.nodes.len())
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
        prop_oneof![
            4 => (any::<bool>(), prop::collection::vec(element, 1..60))
                .prop_map(|(l, items)| Op::Push(l, items)),
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
                if let Some(new) = editor.finish(None).unwrap() {
                    if let Some(old) = &stored {
                        nodes.retire(old, new.as_deref());
                    }
                    stored = new;
                }
                let whole = stored.as_deref().map(|s| Entry::decode(crate::nodes::expand(&nodes, s).unwrap()).value);
                let elements: Vec<&[u8]> = whole.as_deref().map(packed::elements).into_iter().flatten().collect();
                prop_assert!(elements.iter().copied().eq(model.iter().map(Vec::as_slice)));
                // A long list is split, a short one whole.
                let bytes: usize = model.iter().map(|e| element_size(e)).sum();
                let split = stored.as_deref().is_some_and(Entry::stored_is_node_table);
                prop_assert!(!split || model.len() >= 2);
                prop_assert!(split || model.len() < 2 || bytes <= NODE_BYTES || matches!(op, Op::Pop(..)));
            }
            prop_assert!(settled(|| nodes.len(), nodes_named(&stored)), "{} nodes for {}", nodes.len(), nodes_named(&stored));
            if let Some(old) = &stored {
                nodes.retire(old, None);
            }
            prop_assert!(settled(|| nodes.len(), 0), "{} nodes left", nodes.len());
        }
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
