//! A stream's entries, in memory or split into nodes in ID order, so that XADD copies
//! the tail node and a page of the node table, XRANGE and XREAD read the nodes that
//! hold the range, and XDEL one node, rather than every entry (Redis keeps a stream's
//! entries in a radix tree of listpacks for the same reason). How nodes are stored and
//! released, and why readers need no lock, is in `nodes.rs`.
//!
//! ```text
//! split stream = meta_len (u32 LE) | meta | node table
//! meta         = the stream's counters and groups (`stream.rs`, up to entry_count)
//! node table   = a table of records (`table_pages.rs`: inline, or in pages once long)
//!                counting the stream's entries
//! record       = first_ms (u64 LE) | first_seq (u64 LE) | id (u64 LE)
//!                | count (u32 LE) | bytes (u32 LE: its stored size) | number (u64 LE)
//! node         = `stream::encode_node`: its entries, without their node number
//! ```
//!
//! Records are in ID order, each naming a node of at least one entry whose first ID
//! is `first_ms-first_seq`. `number` is the Redis node (see `stream.rs`) its entries
//! belong to: one Redis node may span several consecutive nodes, as a node is closed
//! once it would pass [`NODE_BYTES`], so that what an XADD copies stays small whatever
//! `stream-node-max-entries` is. A stream is split once its entries pass [`NODE_BYTES`]
//! in two nodes or more, and stored whole again when one node is left.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::ops::Range;

use engine::Result;

use crate::entry::{Entry as Stored, Kind};
use crate::nodes::{NodeStore, NODE_BYTES};
use crate::stream::{
    decode_fields, encode_node, entry_size, node_entries, node_with, Corrupt, Entry, Id, Stream,
    Trim,
};
use crate::table_pages::{self, u64_at, Layout};
use crate::{stream, stream_pending};

/// Bytes of a node's record in the node table.
const RECORD: usize = 40;
type Record = [u8; RECORD];
type Records<'a> = table_pages::Records<'a, RECORD>;

/// How the records of a node table (`table_pages.rs`) lie: in order of their first
/// ID, of which the key is the milliseconds (equal in consecutive records when many
/// entries share a millisecond; [`Entries::find`] then compares whole IDs).
const LAYOUT: Layout<RECORD> = Layout {
    key_at: 0,
    id_at: 16,
    count_at: 24,
    bytes_at: 28,
    names_nodes: true,
    inline_records: table_pages::PAGE_RECORDS as u16,
};

/// What a record says of its node.
#[derive(Clone, Copy, Debug)]
struct NodeInfo {
    first: Id,
    count: usize,
    bytes: usize,
    number: u64,
}

impl NodeInfo {
    fn of(r: &Record) -> NodeInfo {
        NodeInfo {
            first: Id {
                ms: u64_at(r, 0),
                seq: u64_at(r, 8),
            },
            count: LAYOUT.count(r) as usize,
            bytes: LAYOUT.bytes(r),
            number: u64_at(r, 32),
        }
    }
}

/// A node as stored, and what its record says of it.
struct Packed {
    bytes: Vec<u8>,
    first: Id,
    count: usize,
    number: u64,
}

impl Packed {
    fn of(entries: &[Entry]) -> Packed {
        let first = entries.first().expect("a node is not empty");
        assert!(
            entries.iter().all(|e| e.node == first.node),
            "a node's entries belong to one Redis node"
        );
        Packed {
            bytes: encode_node(entries),
            first: first.id,
            count: entries.len(),
            number: first.node,
        }
    }

    /// Writes the node to `store`: its record.
    fn write(&self, store: &dyn NodeStore) -> (u64, Record) {
        let id = store.write(&self.bytes);
        let mut r = [0u8; RECORD];
        r[0..8].copy_from_slice(&self.first.ms.to_le_bytes());
        r[8..16].copy_from_slice(&self.first.seq.to_le_bytes());
        r[16..24].copy_from_slice(&id.to_le_bytes());
        let count = u32::try_from(self.count).expect("a node's entries fit 32 bits");
        r[24..28].copy_from_slice(&count.to_le_bytes());
        // Only MEMORY USAGE and the choice to fill a node read it: a node past 4 GiB
        // (one huge entry) is counted short, and is full anyway.
        let bytes = u32::try_from(self.bytes.len()).unwrap_or(u32::MAX);
        r[28..32].copy_from_slice(&bytes.to_le_bytes());
        r[32..40].copy_from_slice(&self.number.to_le_bytes());
        (id, r)
    }
}

fn corrupt(detail: String) -> engine::Error {
    engine::Error::Corruption {
        file: Default::default(),
        offset: 0,
        detail,
    }
}

/// A stream's entries in ID order, read and changed where they lie. A node that cannot
/// be read (an engine's error) is noted, the operation answering as if the stream
/// ended there; whoever holds the entries reports it ([`Entries::failure`]) rather
/// than the answer, and stores nothing.
pub struct Entries<'a> {
    form: Form<'a>,
    failed: RefCell<Option<engine::Error>>,
}

enum Form<'a> {
    /// A stream stored whole: its entries in Redis nodes, none empty.
    Whole { nodes: Vec<Vec<Entry>>, len: usize },
    Split {
        store: &'a dyn NodeStore,
        /// Boxed: the whole form is far lighter.
        table: Box<Records<'a>>,
        /// Nodes this edit wrote, so that one it replaces again is discarded at once:
        /// no table names it.
        written: Vec<u64>,
    },
}

impl Default for Entries<'_> {
    fn default() -> Self {
        Entries::whole(Vec::new())
    }
}

impl fmt::Debug for Entries<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let form = match self.form {
            Form::Whole { .. } => "whole",
            Form::Split { .. } => "split",
        };
        f.debug_struct("Entries")
            .field("form", &form)
            .field("len", &self.len())
            .finish()
    }
}

impl<'a> Entries<'a> {
    /// `entries`, in ID order and numbered by Redis node, held in memory.
    pub fn whole(entries: Vec<Entry>) -> Entries<'a> {
        let len = entries.len();
        let mut nodes: Vec<Vec<Entry>> = Vec::new();
        for e in entries {
            match nodes.last_mut() {
                Some(node) if node[0].node == e.node => node.push(e),
                _ => nodes.push(vec![e]),
            }
        }
        Entries {
            form: Form::Whole { nodes, len },
            failed: RefCell::default(),
        }
    }

    fn split(store: &'a dyn NodeStore, table: &'a [u8]) -> Entries<'a> {
        Entries {
            form: Form::Split {
                store,
                table: Box::new(Records::new(store, LAYOUT, table)),
                written: Vec::new(),
            },
            failed: RefCell::default(),
        }
    }

    /// The first error a node read met, if one did: what this stream answered since
    /// is not to be trusted.
    pub fn failure(&self) -> Option<engine::Error> {
        self.failed.borrow_mut().take()
    }

    /// Drops an edit that is not stored: the nodes it wrote are named by no table.
    pub fn abandon(self) {
        if let Form::Split { store, written, .. } = self.form {
            for id in written {
                store.discard(id);
            }
        }
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

    fn has_failed(&self) -> bool {
        self.failed.borrow().is_some()
    }

    pub fn len(&self) -> usize {
        match &self.form {
            Form::Whole { len, .. } => *len,
            Form::Split { table, .. } => table.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn records(&self) -> usize {
        match &self.form {
            Form::Whole { nodes, .. } => nodes.len(),
            Form::Split { table, .. } => table.len(),
        }
    }

    fn info(&self, at: usize) -> Result<NodeInfo> {
        match &self.form {
            Form::Whole { nodes, .. } => {
                let node = &nodes[at];
                Ok(NodeInfo {
                    first: node[0].id,
                    count: node.len(),
                    bytes: node.iter().map(entry_size).sum(),
                    number: node[0].node,
                })
            }
            Form::Split { table, .. } => Ok(NodeInfo::of(&table.get(at)?)),
        }
    }

    /// The entries of node `at`.
    fn node(&self, at: usize) -> Result<Cow<'_, [Entry]>> {
        match &self.form {
            Form::Whole { nodes, .. } => Ok(Cow::Borrowed(&nodes[at])),
            Form::Split { .. } => {
                let (bytes, info, id) = self.raw(at)?;
                let entries = checked(&bytes, info, id)?
                    .into_iter()
                    .map(|(entry_id, fields)| {
                        Ok(Entry {
                            id: entry_id,
                            node: info.number,
                            fields: decode_fields(fields).map_err(|Corrupt| bad_node(id))?,
                        })
                    });
                Ok(Cow::Owned(entries.collect::<Result<_>>()?))
            }
        }
    }

    /// A split stream's node `at` as stored (not parsed yet: see [`checked`]), what
    /// its record says, and its id.
    fn raw(&self, at: usize) -> Result<(Vec<u8>, NodeInfo, u64)> {
        let Form::Split { store, table, .. } = &self.form else {
            unreachable!("only a split stream's nodes are stored")
        };
        let r = table.get(at)?;
        let (id, info) = (LAYOUT.id(&r), NodeInfo::of(&r));
        Ok((store.read(id)?.into_owned(), info, id))
    }

    /// Up to `limit` entries of node `at` with IDs from `from` to `to`, in ID order or,
    /// `reverse`, from the last: a split stream's decoded only as far as they are
    /// taken.
    fn select(
        &self,
        at: usize,
        from: Id,
        to: Id,
        limit: usize,
        reverse: bool,
    ) -> Result<Vec<Entry>> {
        match &self.form {
            Form::Whole { nodes, .. } => {
                let node = &nodes[at];
                let (start, end) = (
                    node.partition_point(|e| e.id < from),
                    node.partition_point(|e| e.id <= to),
                );
                let picked = node[start..end.max(start)].iter();
                Ok(if reverse {
                    picked.rev().take(limit).cloned().collect()
                } else {
                    picked.take(limit).cloned().collect()
                })
            }
            Form::Split { .. } => {
                let (bytes, info, id) = self.raw(at)?;
                let entries = checked(&bytes, info, id)?;
                let (start, end) = (
                    entries.partition_point(|e| e.0 < from),
                    entries.partition_point(|e| e.0 <= to),
                );
                let picked = entries[start..end.max(start)].iter();
                let picked: Vec<&(Id, &[u8])> = if reverse {
                    picked.rev().take(limit).collect()
                } else {
                    picked.take(limit).collect()
                };
                picked
                    .into_iter()
                    .map(|&(entry_id, fields)| {
                        Ok(Entry {
                            id: entry_id,
                            node: info.number,
                            fields: decode_fields(fields).map_err(|Corrupt| bad_node(id))?,
                        })
                    })
                    .collect()
            }
        }
    }

    /// Replaces nodes `range` by `nodes` (none empty, each of one Redis node), which
    /// keep the ID order with their neighbours.
    fn replace(&mut self, range: Range<usize>, new: Vec<Vec<Entry>>) -> Result<()> {
        debug_assert!(new.iter().all(|n| !n.is_empty()));
        if let Form::Split { .. } = self.form {
            let packed = new.iter().map(|n| Packed::of(n)).collect();
            return self.replace_packed(range, packed);
        }
        match &mut self.form {
            Form::Whole { nodes, len } => {
                let removed: usize = nodes[range.clone()].iter().map(Vec::len).sum();
                let added: usize = new.iter().map(Vec::len).sum();
                nodes.splice(range, new);
                *len = *len - removed + added;
            }
            Form::Split { .. } => unreachable!("replaced as packed nodes"),
        }
        Ok(())
    }

    /// [`Entries::replace`] for a split stream, its new nodes packed.
    fn replace_packed(&mut self, range: Range<usize>, new: Vec<Packed>) -> Result<()> {
        let Form::Split {
            store,
            table,
            written,
        } = &mut self.form
        else {
            unreachable!("only a split stream's nodes are packed")
        };
        let mut removed = 0;
        for at in range.clone() {
            let r = table.get(at)?;
            removed += LAYOUT.count(&r) as usize;
            let id = LAYOUT.id(&r);
            if let Some(w) = written.iter().position(|&w| w == id) {
                store.discard(id);
                written.swap_remove(w);
            }
        }
        let mut records = Vec::with_capacity(new.len());
        let mut added = 0;
        for node in &new {
            let (id, record) = node.write(*store);
            written.push(id);
            added += node.count;
            records.push(record);
        }
        let count = table.count() - removed + added;
        table.splice(range, &records)?;
        table.set_count(count);
        Ok(())
    }

    /// The last node whose first ID is at most `id`: the one that holds `id` if any
    /// does.
    fn find(&self, id: Id) -> Result<Option<usize>> {
        match &self.form {
            Form::Whole { nodes, .. } => {
                Ok(nodes.partition_point(|n| n[0].id <= id).checked_sub(1))
            }
            Form::Split { table, .. } => Ok(table
                .partition_at_key(id.ms, |r| NodeInfo::of(r).first <= id)?
                .checked_sub(1)),
        }
    }

    pub fn first_id(&self) -> Option<Id> {
        if self.records() == 0 {
            return None;
        }
        self.noted(self.info(0)).map(|n| n.first)
    }

    /// The Redis node of the last entry.
    pub fn last_node(&self) -> Option<u64> {
        let last = self.records().checked_sub(1)?;
        self.noted(self.info(last)).map(|n| n.number)
    }

    pub fn first(&self) -> Option<Entry> {
        if self.records() == 0 {
            return None;
        }
        let picked = self.select(0, Id::ZERO, Id::MAX, 1, false);
        self.noted(picked)?.pop()
    }

    pub fn last(&self) -> Option<Entry> {
        let last = self.records().checked_sub(1)?;
        let picked = self.select(last, Id::ZERO, Id::MAX, 1, true);
        self.noted(picked)?.pop()
    }

    pub fn get(&self, id: Id) -> Option<Entry> {
        let at = self.noted(self.find(id))??;
        let picked = self.select(at, id, id, 1, false);
        self.noted(picked)?.pop()
    }

    /// Up to `limit` entries with IDs from `from` to `to`, in ID order or, `reverse`,
    /// from the last.
    pub fn range(&self, from: Id, to: Id, limit: usize, reverse: bool) -> Vec<Entry> {
        self.noted(self.try_range(from, to, limit, reverse))
            .unwrap_or_default()
    }

    fn try_range(&self, from: Id, to: Id, limit: usize, reverse: bool) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        if limit == 0 || from > to {
            return Ok(out);
        }
        let Some(mut at) = self.find(if reverse { to } else { from })? else {
            if reverse || self.records() == 0 {
                return Ok(out);
            }
            return self.forward(0, from, to, limit);
        };
        if !reverse {
            return self.forward(at, from, to, limit);
        }
        loop {
            out.extend(self.select(at, from, to, limit - out.len(), true)?);
            if at == 0 || out.len() == limit || self.info(at)?.first <= from {
                return Ok(out);
            }
            at -= 1;
        }
    }

    fn forward(&self, mut at: usize, from: Id, to: Id, limit: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        while at < self.records() && out.len() < limit && self.info(at)?.first <= to {
            out.extend(self.select(at, from, to, limit - out.len(), false)?);
            at += 1;
        }
        Ok(out)
    }

    /// Every entry.
    pub fn all(&self) -> Vec<Entry> {
        self.range(Id::ZERO, Id::MAX, usize::MAX, false)
    }

    /// How many Redis nodes the entries are in.
    pub fn redis_nodes(&self) -> usize {
        let mut count = 0;
        let mut previous = None;
        for at in 0..self.records() {
            let Some(info) = self.noted(self.info(at)) else {
                break;
            };
            if previous != Some(info.number) {
                count += 1;
                previous = Some(info.number);
            }
        }
        count
    }

    /// Appends `e`, whose ID is above every entry's, to the last node if it is of the
    /// same Redis node (and, split, has room), else as a node of its own.
    pub fn push(&mut self, e: Entry) {
        if self.has_failed() {
            return;
        }
        let records = self.records();
        if let Some(last) = records.checked_sub(1) {
            let Some(info) = self.noted(self.info(last)) else {
                return;
            };
            assert!(info.first < e.id, "stream entries are appended in ID order");
            if info.number == e.node {
                if let Form::Whole { nodes, len } = &mut self.form {
                    nodes[last].push(e);
                    *len += 1;
                    return;
                }
                if info.bytes + entry_size(&e) <= NODE_BYTES {
                    // The tail node's bytes with the entry's after them, not decoded.
                    let Some((bytes, _, id)) = self.noted(self.raw(last)) else {
                        return;
                    };
                    let Some(bytes) = self
                        .noted(node_with(&bytes, info.count, &e).map_err(|Corrupt| bad_node(id)))
                    else {
                        return;
                    };
                    let packed = Packed {
                        bytes,
                        first: info.first,
                        count: info.count + 1,
                        number: info.number,
                    };
                    let r = self.replace_packed(last..records, vec![packed]);
                    self.noted(r);
                    return;
                }
            }
        }
        let r = self.replace(records..records, vec![vec![e]]);
        self.noted(r);
    }

    /// Removes the entry `id`, if present.
    pub fn delete(&mut self, id: Id) -> bool {
        if self.has_failed() {
            return false;
        }
        let r = self.try_delete(id);
        self.noted(r).unwrap_or(false)
    }

    fn try_delete(&mut self, id: Id) -> Result<bool> {
        let Some(at) = self.find(id)? else {
            return Ok(false);
        };
        let mut node = self.node(at)?.into_owned();
        let Ok(i) = node.binary_search_by(|e| e.id.cmp(&id)) else {
            return Ok(false);
        };
        node.remove(i);
        let rest = if node.is_empty() { vec![] } else { vec![node] };
        self.replace(at..at + 1, rest)?;
        Ok(true)
    }

    /// Removes entries from the head as [`Stream::trim`] says; returns how many went.
    pub fn trim(&mut self, strategy: Trim, approx: bool, limit: u64) -> u64 {
        if self.has_failed() {
            return 0;
        }
        let r = self.try_trim(strategy, approx, limit);
        self.noted(r).unwrap_or(0)
    }

    fn try_trim(&mut self, strategy: Trim, approx: bool, limit: u64) -> Result<u64> {
        let len = self.len() as u64;
        let records = self.records();
        // Entries removed, the nodes they filled, and what is left of the node cut into.
        let (mut removed, mut gone) = (0u64, 0usize);
        let mut cut = None;
        while gone < records {
            let left = len - removed;
            if let Trim::MaxLen(max) = strategy {
                if left <= max {
                    break;
                }
            }
            // The Redis node at the head: the nodes from `gone` to `run_end`.
            let number = self.info(gone)?.number;
            let (mut run_end, mut in_node) = (gone, 0u64);
            while run_end < records {
                let info = self.info(run_end)?;
                if info.number != number {
                    break;
                }
                in_node += info.count as u64;
                run_end += 1;
            }
            if limit != 0 && removed + in_node > limit {
                break;
            }
            let whole_node = match strategy {
                Trim::MaxLen(max) => left - in_node >= max,
                Trim::MinId(min) => {
                    let last = self.node(run_end - 1)?;
                    last.last().expect("a node is not empty").id < min
                }
            };
            if whole_node {
                removed += in_node;
                gone = run_end;
                continue;
            }
            if approx {
                break;
            }
            let mut to_remove = match strategy {
                Trim::MaxLen(max) => left - max,
                Trim::MinId(_) => u64::MAX,
            };
            while gone < run_end {
                let node = self.node(gone)?;
                let n = match strategy {
                    Trim::MaxLen(_) => to_remove.min(node.len() as u64) as usize,
                    Trim::MinId(min) => node.partition_point(|e| e.id < min),
                };
                removed += n as u64;
                to_remove -= n as u64;
                if n < node.len() {
                    if n > 0 {
                        cut = Some(node[n..].to_vec());
                    }
                    break;
                }
                gone += 1;
            }
            break;
        }
        let rest: Vec<Vec<Entry>> = cut.into_iter().collect();
        let end = gone + rest.len();
        if end > 0 {
            self.replace(0..end, rest)?;
        }
        Ok(removed)
    }
}

/// A stored stream, its entries read from `store` as they are needed if it is split.
pub fn decode<'a>(store: &'a dyn NodeStore, stored: &'a [u8]) -> Result<Stream<'a>> {
    let payload = Stored::stored_payload(stored);
    if !Stored::stored_is_node_table(stored) {
        return Stream::decode(payload).map_err(|Corrupt| corrupt_stream());
    }
    let (meta, table) = parts(payload)?;
    let meta = Stream::decode_meta(store, meta).map_err(|Corrupt| corrupt_stream())?;
    Ok(meta.with_entries(Entries::split(store, table)))
}

/// The entries of node `id` as stored (`bytes`), each its ID and its fields still
/// encoded; its count and first ID checked against its record's `info`.
fn checked(bytes: &[u8], info: NodeInfo, id: u64) -> Result<Vec<(Id, &[u8])>> {
    let entries = node_entries(bytes).map_err(|Corrupt| bad_node(id))?;
    if entries.len() != info.count || entries.first().map(|e| e.0) != Some(info.first) {
        return Err(corrupt(format!(
            "stream node {id} holds {} entries, its record says {}",
            entries.len(),
            info.count
        )));
    }
    Ok(entries)
}

fn bad_node(id: u64) -> engine::Error {
    corrupt(format!("stream node {id} is not one hotkv wrote"))
}

fn corrupt_stream() -> engine::Error {
    corrupt("a stored stream is not one hotkv wrote".into())
}

/// A split stream's meta and node table.
fn parts(payload: &[u8]) -> Result<(&[u8], &[u8])> {
    let meta_len = payload
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .filter(|&n| n <= payload.len() - 4)
        .ok_or_else(corrupt_stream)?;
    Ok(payload[4..].split_at(meta_len))
}

/// `stream` as stored, whole or split (its nodes written to `store`), with `deadline`.
/// Fails if a node could not be read: nothing is to be stored then.
pub fn stored(store: &dyn NodeStore, stream: Stream, deadline: Option<u64>) -> Result<Vec<u8>> {
    let (payload, split) = payload(store, stream)?;
    Ok(if split {
        Stored::encode_node_table(Kind::Stream, payload, deadline, false)
    } else {
        Stored::collection(Kind::Stream, payload, deadline).into_stored()
    })
}

/// The stored payload of `stream`, and whether it is split: it is if its entries
/// take two nodes or more, or a group's pending entries are paged.
fn payload(store: &dyn NodeStore, mut stream: Stream) -> Result<(Vec<u8>, bool)> {
    if let Some(e) = stream.failure() {
        return Err(e);
    }
    let pending_inline = stream.pending_inline();
    let entries = std::mem::take(&mut stream.entries);
    let with_table = |mut stream: Stream, table: Records| {
        let meta = stream.encode_meta(store)?;
        let table = table.finish()?;
        let mut out = Vec::with_capacity(4 + meta.len() + table.len());
        out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&meta);
        out.extend_from_slice(&table);
        Ok((out, true))
    };
    match entries.form {
        Form::Split { table, .. } if table.len() >= 2 || !pending_inline => {
            with_table(stream, *table)
        }
        Form::Split {
            store: nodes,
            ref written,
            ..
        } => {
            // One node left: stored whole, and the nodes this edit wrote are named by
            // no table.
            let all = entries.all();
            if let Some(e) = entries.failure() {
                return Err(e);
            }
            for &id in written {
                nodes.discard(id);
            }
            Ok((stream.with_entries(Entries::whole(all)).encode(), false))
        }
        Form::Whole { ref nodes, len } => {
            let pieces = pieces(nodes);
            if pieces.len() < 2 && pending_inline {
                return Ok((stream.with_entries(entries).encode(), false));
            }
            let records: Vec<Record> = pieces
                .iter()
                .map(|node| Packed::of(node).write(store).1)
                .collect();
            with_table(stream, Records::of(store, LAYOUT, len as u64, &records))
        }
    }
}

/// The nodes a stream stored whole would be split into: each Redis node cut before an
/// entry that would take its piece past [`NODE_BYTES`]. One piece if the stream fits.
fn pieces(nodes: &[Vec<Entry>]) -> Vec<&[Entry]> {
    let total: usize = nodes.iter().flatten().map(entry_size).sum();
    if total <= NODE_BYTES {
        return nodes.iter().map(Vec::as_slice).take(1).collect();
    }
    let mut out = Vec::new();
    for node in nodes {
        let (mut start, mut bytes) = (0, 0);
        for (i, e) in node.iter().enumerate() {
            let size = entry_size(e);
            if i > start && bytes + size > NODE_BYTES {
                out.push(&node[start..i]);
                (start, bytes) = (i, 0);
            }
            bytes += size;
        }
        out.push(&node[start..]);
    }
    out
}

/// The split form of the stream stored whole as `packed`, its nodes written to `store`,
/// if it is long enough to split.
pub fn split_if_long(store: &dyn NodeStore, packed: &[u8]) -> Option<Vec<u8>> {
    let stream = Stream::decode(packed).ok()?;
    match payload(store, stream) {
        Ok((payload, true)) => Some(payload),
        _ => None,
    }
}

/// The split stream `payload` stored whole.
pub fn expand(store: &dyn NodeStore, payload: &[u8]) -> Result<Vec<u8>> {
    let (meta, table) = parts(payload)?;
    let meta = Stream::decode_meta(store, meta).map_err(|Corrupt| corrupt_stream())?;
    let stream = meta.with_entries(Entries::split(store, table));
    let packed = stream.encode();
    match stream.failure() {
        Some(e) => Err(e),
        None => Ok(packed),
    }
}

/// The pages and nodes the split stream `payload` names, each its id and stored size:
/// its entries' and its groups' pending entries'.
pub fn nodes(store: &dyn NodeStore, payload: &[u8]) -> Result<Vec<(u64, usize)>> {
    let (meta, table) = parts(payload)?;
    let mut all = table_pages::nodes(store, LAYOUT, table)?;
    for (_, pending) in pending_tables(meta)? {
        all.extend(stream_pending::pages(store, pending)?);
    }
    Ok(all)
}

/// The pages and nodes the split stream `old` names and `new` does not.
pub fn dropped(store: &dyn NodeStore, old: &[u8], new: &[u8]) -> Result<Vec<u64>> {
    let ((old_meta, old), (new_meta, new)) = (parts(old)?, parts(new)?);
    let mut released = table_pages::dropped(store, LAYOUT, old, new)?;
    let kept = pending_tables(new_meta)?;
    for (group, table) in pending_tables(old_meta)? {
        // A group's pages are named by its own table only.
        released.extend(match kept.iter().find(|(name, _)| *name == group) {
            Some((_, now)) => stream_pending::dropped(store, table, now)?,
            None => stream_pending::pages(store, table)?
                .into_iter()
                .map(|(id, _)| id)
                .collect(),
        });
    }
    Ok(released)
}

/// The pending tables of a split stream's groups.
fn pending_tables(meta: &[u8]) -> Result<Vec<stream::PendingTable<'_>>> {
    stream::pending_tables(meta).map_err(|Corrupt| corrupt_stream())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::nodes::{self, MemoryNodes};

    fn id(ms: u64, seq: u64) -> Id {
        Id { ms, seq }
    }

    /// The entries as a plain list, trimmed as `stream.rs` trimmed them before nodes:
    /// the oracle the stored stream is checked against.
    #[derive(Default)]
    struct Model {
        entries: Vec<Entry>,
    }

    impl Model {
        fn trim(&mut self, strategy: Trim, approx: bool, limit: u64) -> u64 {
            let mut removed = 0usize;
            let len = self.entries.len();
            while removed < len {
                let left = (len - removed) as u64;
                if let Trim::MaxLen(max) = strategy {
                    if left <= max {
                        break;
                    }
                }
                let node = self.entries[removed].node;
                let in_node = self.entries[removed..]
                    .iter()
                    .take_while(|e| e.node == node)
                    .count();
                if limit != 0 && (removed + in_node) as u64 > limit {
                    break;
                }
                let whole_node = match strategy {
                    Trim::MaxLen(max) => left - in_node as u64 >= max,
                    Trim::MinId(min) => self.entries[removed + in_node - 1].id < min,
                };
                if whole_node {
                    removed += in_node;
                    continue;
                }
                if !approx {
                    removed += match strategy {
                        Trim::MaxLen(max) => (left - max) as usize,
                        Trim::MinId(min) => self.entries[removed..removed + in_node]
                            .iter()
                            .take_while(|e| e.id < min)
                            .count(),
                    };
                }
                break;
            }
            self.entries.drain(..removed);
            removed as u64
        }

        fn range(&self, from: Id, to: Id, limit: usize, reverse: bool) -> Vec<Entry> {
            let within = self.entries.iter().filter(|e| from <= e.id && e.id <= to);
            if reverse {
                within.rev().take(limit).cloned().collect()
            } else {
                within.take(limit).cloned().collect()
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Milliseconds to step (0: the same as the last ID's), value bytes.
        Add(u8, u16),
        Delete(u16),
        Trim {
            maxlen: Option<u16>,
            at: u16,
            approx: bool,
            limit: u16,
        },
        Range {
            from: u16,
            len: u16,
            limit: u8,
            reverse: bool,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..3, prop_oneof![0u16..40, 100u16..600, Just(5000)]).prop_map(|(s, v)| Op::Add(s, v)),
            2 => any::<u16>().prop_map(Op::Delete),
            1 => (proptest::option::of(0u16..300), any::<u16>(), any::<bool>(), 0u16..300)
                .prop_map(|(maxlen, at, approx, limit)| Op::Trim { maxlen, at, approx, limit }),
            2 => (any::<u16>(), 0u16..400, any::<u8>(), any::<bool>())
                .prop_map(|(from, len, limit, reverse)| Op::Range { from, len, limit, reverse }),
        ]
    }

    /// Runs `ops` on a stream stored in `store` and on the model, checking every answer
    /// and, after each write, every entry; returns the stored stream.
    fn replay(store: &MemoryNodes, ops: &[Op], per_node: u64) -> Vec<u8> {
        let mut model = Model::default();
        let mut stored = stream_stored(store, Stream::default());
        let mut last = Id::ZERO;
        for op in ops {
            let mut s = decode(store, &stored).unwrap();
            let nth = |n: u16| {
                model
                    .entries
                    .get(usize::from(n) % model.entries.len().max(1))
            };
            let changed = match *op {
                Op::Add(step, size) => {
                    let next = if step == 0 {
                        last.next().unwrap()
                    } else {
                        id(last.ms + u64::from(step), 0)
                    };
                    last = next;
                    let fields = vec![(b"f".to_vec(), vec![b'v'; usize::from(size)])];
                    s.append(next, fields, per_node);
                    model.entries.push(s.entries.last().unwrap());
                    true
                }
                Op::Delete(n) => {
                    let Some(victim) = nth(n).map(|e| e.id) else {
                        continue;
                    };
                    assert!(s.delete(victim));
                    assert!(!s.delete(victim));
                    model.entries.retain(|e| e.id != victim);
                    true
                }
                Op::Trim {
                    maxlen,
                    at,
                    approx,
                    limit,
                } => {
                    let strategy = match maxlen {
                        Some(n) => Trim::MaxLen(u64::from(n)),
                        None => Trim::MinId(nth(at).map_or(Id::MAX, |e| e.id)),
                    };
                    let limit = if approx { u64::from(limit) } else { 0 };
                    let n = s.trim(strategy, approx, limit);
                    assert_eq!(n, model.trim(strategy, approx, limit), "{op:?}");
                    n > 0
                }
                Op::Range {
                    from,
                    len,
                    limit,
                    reverse,
                } => {
                    let from = nth(from).map_or(Id::ZERO, |e| e.id);
                    let to = id(from.ms + u64::from(len), u64::from(len));
                    let limit = usize::from(limit);
                    assert_eq!(
                        s.entries.range(from, to, limit, reverse),
                        model.range(from, to, limit, reverse),
                        "{op:?}"
                    );
                    for e in model.entries.iter().take(5) {
                        assert_eq!(s.entry(e.id).as_ref(), Some(e));
                    }
                    false
                }
            };
            assert!(s.failure().is_none());
            if changed {
                let new = stream_stored(store, s);
                for gone in nodes::dropped(store, &stored, Some(&new)).unwrap() {
                    store.discard(gone);
                }
                stored = new;
                let s = decode(store, &stored).unwrap();
                assert_eq!(s.entries.all(), model.entries);
                assert_eq!(s.len(), model.entries.len());
                assert_eq!(s.first_id, model.entries.first().map_or(Id::ZERO, |e| e.id));
                let split = Stored::stored_is_node_table(&stored);
                let bytes: usize = model.entries.iter().map(entry_size).sum();
                assert!(
                    split || bytes <= NODE_BYTES || model.entries.len() == 1 || {
                        // Whole when its entries fill one node, a single Redis node's
                        // entries being cut by size only once split.
                        pieces(&[model.entries.clone()]).len() < 2
                    }
                );
                if split {
                    let records = Records::new(
                        store,
                        LAYOUT,
                        parts(Stored::stored_payload(&stored)).unwrap().1,
                    );
                    assert!(records.len() >= 2, "a split stream of one node");
                }
            }
        }
        stored
    }

    fn stream_stored(store: &MemoryNodes, s: Stream) -> Vec<u8> {
        stored(store, s, None).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every operation answers as the plain list does, the stream is split and
        /// stored whole again as its size says, and the store holds exactly the nodes
        /// and pages the final stream names.
        #[test]
        fn a_stored_stream_answers_as_a_list_of_its_entries(
            ops in proptest::collection::vec(op(), 1..400),
            per_node in prop_oneof![Just(100u64), 1u64..8],
        ) {
            let store = MemoryNodes::default();
            let stored = replay(&store, &ops, per_node);
            prop_assert_eq!(store.len(), nodes::node_ids(&store, &stored).unwrap().len());
        }
    }

    #[test]
    fn a_long_stream_is_split_into_pages_and_back() {
        let store = MemoryNodes::default();
        let mut stored = stream_stored(&store, Stream::default());
        for i in 1..=30_000 {
            let mut s = decode(&store, &stored).unwrap();
            s.append(id(i / 2, i % 2), vec![(b"f".to_vec(), vec![b'v'; 30])], 100);
            let new = stream_stored(&store, s);
            for gone in nodes::dropped(&store, &stored, Some(&new)).unwrap() {
                store.discard(gone);
            }
            stored = new;
        }
        assert_eq!(store.len(), nodes::node_ids(&store, &stored).unwrap().len());
        let payload = Stored::stored_payload(&stored);
        assert!(Stored::stored_is_node_table(&stored));
        let (_, table) = parts(payload).unwrap();
        let records = Records::new(&store, LAYOUT, table);
        // 30,000 entries of ~60 bytes in Redis nodes of 100: each Redis node cut once by
        // size; the table in pages.
        assert_eq!(records.count(), 30_000);
        assert!(records.len() >= 300, "{}", records.len());
        assert!(nodes::node_ids(&store, &stored).unwrap().len() > records.len());
        // Expanded and split again, it is the same stream.
        let whole = nodes::expand(&store, &stored).unwrap();
        let s = Stream::decode(Stored::stored_payload(&whole)).unwrap();
        assert_eq!(s.len(), 30_000);
        let again = nodes::split_if_large(&store, whole);
        assert_eq!(
            decode(&store, &again).unwrap().entries.all(),
            s.entries.all()
        );
        // Trimmed to a few entries, it is stored whole.
        let mut t = decode(&store, &stored).unwrap();
        assert_eq!(t.trim(Trim::MaxLen(3), false, 0), 29_997);
        let small = stream_stored(&store, t);
        assert!(!Stored::stored_is_node_table(&small));
        assert_eq!(decode(&store, &small).unwrap().len(), 3);
    }
}
