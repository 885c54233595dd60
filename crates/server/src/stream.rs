//! A stream value: entries ordered by ID, the stream's counters, and its consumer
//! groups, with the stored form the index keeps.
//!
//! ```text
//! stream   = last_id first_id max_deleted_id entries_added:u64
//!            tail_node:u64 tail_node_added:u64
//!            group_count:u32 group* entry_count:u64 entry*
//! id       = ms:u64 seq:u64
//! entry    = id node:u64 field_count:u32 (bytes bytes)*field_count
//! group    = name:bytes last_id entries_read:i64 (-1: unknown)
//!            pending_count:u32 pending* consumer_count:u32 consumer*
//! pending  = id consumer:bytes delivered_ms:u64 deliveries:u64
//! consumer = name:bytes seen_ms:u64
//! bytes    = len:u32 byte*len
//! ```
//!
//! Integers are little-endian. This is the stored form of a stream whose entries take
//! at most `NODE_BYTES`; a longer one keeps its counters and groups (`stream` up to
//! `entry_count`) with a table of nodes of entries (`stream_nodes.rs`), so that a
//! command reads and copies the nodes it touches rather than every entry.
//!
//! Redis keeps entries in nodes of up to `stream-node-max-entries` (100) and
//! `stream-node-max-bytes` (4096), and trims with `~` only whole nodes. The `node`
//! number of each entry models those nodes by count alone, so `MAXLEN ~` trims what
//! Redis trims for entries small enough that the byte limit does not close a node
//! first; with larger entries hotkv's nodes are larger than Redis's.

use std::fmt;

pub use crate::stream_nodes::Entries;

/// A stream entry ID: milliseconds, then a sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Id {
    pub ms: u64,
    pub seq: u64,
}

impl Id {
    pub const ZERO: Id = Id { ms: 0, seq: 0 };
    pub const MAX: Id = Id {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The next ID, `None` past the last.
    pub fn next(self) -> Option<Id> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(Id { ms: ms + 1, seq: 0 }),
            (ms, seq) => Some(Id { ms, seq: seq + 1 }),
        }
    }

    /// The previous ID, `None` before 0-0.
    pub fn previous(self) -> Option<Id> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(Id {
                ms: ms - 1,
                seq: u64::MAX,
            }),
            (ms, seq) => Some(Id { ms, seq: seq - 1 }),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How an ID argument is read.
#[derive(Clone, Copy, PartialEq)]
pub enum IdSyntax {
    /// `-` and `+` allowed (range ends).
    Range,
    /// A concrete ID only.
    Strict,
    /// A concrete ID, or `ms-*` (XADD: the sequence is chosen).
    Add,
}

/// A parsed ID argument: the ID, and whether its sequence was given (not `ms-*`).
pub struct ParsedId {
    pub id: Id,
    pub seq_given: bool,
}

/// Reads an ID as Redis does: `ms[-seq]` (a missing sequence is `missing_seq`), or
/// with [`IdSyntax::Range`] `-` / `+`.
pub fn parse_id(arg: &[u8], missing_seq: u64, syntax: IdSyntax) -> Option<ParsedId> {
    if arg.len() > 127 {
        return None;
    }
    let given = |id| ParsedId {
        id,
        seq_given: true,
    };
    match arg {
        b"-" if syntax == IdSyntax::Range => return Some(given(Id::ZERO)),
        b"+" if syntax == IdSyntax::Range => return Some(given(Id::MAX)),
        _ => {}
    }
    let number = |s: &[u8]| -> Option<u64> {
        // As Redis's string2ull: digits only, no sign, no leading zeros but "0".
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) || (s.len() > 1 && s[0] == b'0') {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    let (ms, seq) = match arg.iter().position(|&c| c == b'-') {
        None => {
            return Some(given(Id {
                ms: number(arg)?,
                seq: missing_seq,
            }))
        }
        Some(dash) => (&arg[..dash], &arg[dash + 1..]),
    };
    let ms = number(ms)?;
    if syntax == IdSyntax::Add && seq == b"*" {
        return Some(ParsedId {
            id: Id { ms, seq: 0 },
            seq_given: false,
        });
    }
    Some(given(Id {
        ms,
        seq: number(seq)?,
    }))
}

/// An entry's field-value pairs, in the order given.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: Id,
    /// The Redis node this entry was added to (see the module's documentation).
    pub node: u64,
    pub fields: Fields,
}

/// A message delivered to a consumer and not yet acknowledged.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub id: Id,
    pub consumer: Vec<u8>,
    pub delivered_ms: u64,
    pub deliveries: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Consumer {
    pub name: Vec<u8>,
    pub seen_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: Vec<u8>,
    pub last_id: Id,
    /// Entries the group has read, counted as Redis counts them for its lag; `None`
    /// when it cannot be known.
    pub entries_read: Option<u64>,
    /// Ordered by ID.
    pub pending: Vec<Pending>,
    /// Ordered by name, as Redis lists them.
    pub consumers: Vec<Consumer>,
}

impl Group {
    pub fn new(name: &[u8], last_id: Id, entries_read: Option<u64>) -> Group {
        Group {
            name: name.to_vec(),
            last_id,
            entries_read,
            pending: Vec::new(),
            consumers: Vec::new(),
        }
    }

    /// The position of the first pending message at or after `id`.
    pub fn pending_from(&self, id: Id) -> usize {
        self.pending.partition_point(|p| p.id < id)
    }

    pub fn pending_of(&self, consumer: &[u8]) -> usize {
        self.pending
            .iter()
            .filter(|p| p.consumer == consumer)
            .count()
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.iter().find(|c| c.name == name)
    }

    /// The consumer `name`, created if missing (`true` then), its seen time set to
    /// `now`.
    pub fn touch_consumer(&mut self, name: &[u8], now: u64) -> bool {
        match self
            .consumers
            .binary_search_by(|c| c.name.as_slice().cmp(name))
        {
            Ok(at) => {
                self.consumers[at].seen_ms = now;
                false
            }
            Err(at) => {
                self.consumers.insert(
                    at,
                    Consumer {
                        name: name.to_vec(),
                        seen_ms: now,
                    },
                );
                true
            }
        }
    }

    /// Removes the consumer `name` and its pending messages: how many it had, `None`
    /// if there was no such consumer.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let at = self.consumers.iter().position(|c| c.name == name)?;
        self.consumers.remove(at);
        let before = self.pending.len();
        self.pending.retain(|p| p.consumer != name);
        Some(before - self.pending.len())
    }

    /// Delivers `id` to `consumer` at `now`: pending for it alone, delivered once.
    pub fn deliver(&mut self, id: Id, consumer: &[u8], now: u64) {
        let fresh = Pending {
            id,
            consumer: consumer.to_vec(),
            delivered_ms: now,
            deliveries: 1,
        };
        let at = self.pending_from(id);
        match self.pending.get_mut(at) {
            Some(p) if p.id == id => *p = fresh,
            _ => self.pending.insert(at, fresh),
        }
    }
}

#[derive(Debug, Default)]
pub struct Stream<'a> {
    pub last_id: Id,
    /// The first entry's ID, 0-0 when empty (kept as Redis keeps it).
    pub first_id: Id,
    pub max_deleted_id: Id,
    /// Entries ever added.
    pub entries_added: u64,
    tail_node: u64,
    tail_node_added: u64,
    pub groups: Vec<Group>,
    /// Ordered by ID: in memory, or in nodes a split stream's table names
    /// (`stream_nodes.rs`).
    pub entries: Entries<'a>,
}

/// Why a stored value could not be read: the store holds a value no version of
/// hotkv wrote.
#[derive(Debug)]
pub struct Corrupt;

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.bytes.len() < n {
            return Err(Corrupt);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, Corrupt> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn id(&mut self) -> Result<Id, Corrupt> {
        Ok(Id {
            ms: self.u64()?,
            seq: self.u64()?,
        })
    }
    fn bytes(&mut self) -> Result<Vec<u8>, Corrupt> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    /// A count of things each at least `min_size` bytes long, checked against what
    /// is left, so a corrupt count cannot make a huge allocation.
    fn count(&mut self, n: u64, min_size: usize) -> Result<usize, Corrupt> {
        let n = usize::try_from(n).map_err(|_| Corrupt)?;
        if n.saturating_mul(min_size) > self.bytes.len() {
            return Err(Corrupt);
        }
        Ok(n)
    }
    /// An entry's fields.
    fn fields(&mut self) -> Result<Fields, Corrupt> {
        let field_count = self.u32()?;
        let mut fields = Vec::with_capacity(self.count(u64::from(field_count), 8)?);
        for _ in 0..field_count {
            fields.push((self.bytes()?, self.bytes()?));
        }
        Ok(fields)
    }
}

fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("a stream part is below 4 GiB");
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_id(out: &mut Vec<u8>, id: Id) {
    put_u64(out, id.ms);
    put_u64(out, id.seq);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len());
    out.extend_from_slice(b);
}

/// An entry's fields.
fn put_fields(out: &mut Vec<u8>, e: &Entry) {
    put_u32(out, e.fields.len());
    for (f, v) in &e.fields {
        put_bytes(out, f);
        put_bytes(out, v);
    }
}

/// Bytes `e` takes in a node (`stream_nodes.rs`): what a split stream's nodes are
/// filled up to by.
pub fn entry_size(e: &Entry) -> usize {
    16 + 4
        + e.fields
            .iter()
            .map(|(f, v)| 8 + f.len() + v.len())
            .sum::<usize>()
}

/// A node of a split stream (`stream_nodes.rs`): `count:u32 (id field_count (bytes
/// bytes)*field_count)*count`, each entry without its node number, which the node's
/// record holds.
pub fn encode_node(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + entries.iter().map(entry_size).sum::<usize>());
    put_u32(&mut out, entries.len());
    for e in entries {
        put_id(&mut out, e.id);
        put_fields(&mut out, e);
    }
    out
}

/// The entries of a node [`encode_node`] wrote, numbered `node`.
pub fn decode_node(bytes: &[u8], node: u64) -> Result<Vec<Entry>, Corrupt> {
    let mut r = Reader { bytes };
    let count = r.u32()?;
    let mut entries = Vec::with_capacity(r.count(u64::from(count), 20)?);
    for _ in 0..count {
        entries.push(Entry {
            id: r.id()?,
            node,
            fields: r.fields()?,
        });
    }
    if !r.bytes.is_empty() {
        return Err(Corrupt);
    }
    Ok(entries)
}

/// The entries of a node [`encode_node`] wrote, each its ID and its fields still
/// encoded ([`decode_fields`]): what a read of a few entries decodes no more of.
pub fn node_entries(bytes: &[u8]) -> Result<Vec<(Id, &[u8])>, Corrupt> {
    let mut r = Reader { bytes };
    let count = r.u32()?;
    let mut entries = Vec::with_capacity(r.count(u64::from(count), 20)?);
    for _ in 0..count {
        let id = r.id()?;
        let rest = r.bytes;
        for _ in 0..r.u32()?.saturating_mul(2) {
            let n = r.u32()? as usize;
            r.take(n)?;
        }
        entries.push((id, &rest[..rest.len() - r.bytes.len()]));
    }
    if !r.bytes.is_empty() {
        return Err(Corrupt);
    }
    Ok(entries)
}

/// Fields as [`node_entries`] gives them.
pub fn decode_fields(bytes: &[u8]) -> Result<Fields, Corrupt> {
    let mut r = Reader { bytes };
    let fields = r.fields()?;
    if !r.bytes.is_empty() {
        return Err(Corrupt);
    }
    Ok(fields)
}

/// The node [`encode_node`] wrote as `node` with `e` appended, copied as bytes.
pub fn node_with(node: &[u8], e: &Entry) -> Result<Vec<u8>, Corrupt> {
    let count = Reader { bytes: node }.u32()? as usize;
    let mut out = Vec::with_capacity(node.len() + entry_size(e));
    put_u32(&mut out, count + 1);
    out.extend_from_slice(&node[4..]);
    put_id(&mut out, e.id);
    put_fields(&mut out, e);
    Ok(out)
}

impl<'a> Stream<'a> {
    /// The stream stored whole (its entries in memory).
    pub fn decode(bytes: &[u8]) -> Result<Stream<'a>, Corrupt> {
        let mut r = Reader { bytes };
        let mut s = Stream::read_meta(&mut r)?;
        let count = r.u64()?;
        let mut entries = Vec::with_capacity(r.count(count, 28)?);
        for _ in 0..count {
            entries.push(Entry {
                id: r.id()?,
                node: r.u64()?,
                fields: r.fields()?,
            });
        }
        if !r.bytes.is_empty()
            || !entries
                .windows(2)
                .all(|w| w[0].id < w[1].id && w[0].node <= w[1].node)
        {
            return Err(Corrupt);
        }
        s.entries = Entries::whole(entries);
        Ok(s)
    }

    /// A stream's counters and groups ([`Stream::encode_meta`]), its entries left empty
    /// for the caller to give.
    pub fn decode_meta(bytes: &[u8]) -> Result<Stream<'a>, Corrupt> {
        let mut r = Reader { bytes };
        let s = Stream::read_meta(&mut r)?;
        if !r.bytes.is_empty() {
            return Err(Corrupt);
        }
        Ok(s)
    }

    fn read_meta(r: &mut Reader) -> Result<Stream<'a>, Corrupt> {
        let mut s = Stream {
            last_id: r.id()?,
            first_id: r.id()?,
            max_deleted_id: r.id()?,
            entries_added: r.u64()?,
            tail_node: r.u64()?,
            tail_node_added: r.u64()?,
            ..Stream::default()
        };
        let groups = r.u32()?;
        for _ in 0..r.count(u64::from(groups), 4 + 16 + 8 + 8)? {
            let name = r.bytes()?;
            let last_id = r.id()?;
            let entries_read = r.u64()? as i64;
            let pending_count = r.u32()?;
            let mut pending = Vec::with_capacity(r.count(u64::from(pending_count), 36)?);
            for _ in 0..pending.capacity() {
                pending.push(Pending {
                    id: r.id()?,
                    consumer: r.bytes()?,
                    delivered_ms: r.u64()?,
                    deliveries: r.u64()?,
                });
            }
            let consumer_count = r.u32()?;
            let mut consumers = Vec::with_capacity(r.count(u64::from(consumer_count), 12)?);
            for _ in 0..consumers.capacity() {
                consumers.push(Consumer {
                    name: r.bytes()?,
                    seen_ms: r.u64()?,
                });
            }
            s.groups.push(Group {
                name,
                last_id,
                entries_read: u64::try_from(entries_read).ok(),
                pending,
                consumers,
            });
        }
        Ok(s)
    }

    /// The stream stored whole, every entry read (from its nodes if it is split).
    pub fn encode(&self) -> Vec<u8> {
        let entries = self.entries.all();
        let bytes: usize = entries.iter().map(entry_size).sum();
        let mut out = Vec::with_capacity(100 + bytes + entries.len() * 8);
        self.put_meta(&mut out);
        put_u64(&mut out, entries.len() as u64);
        for e in &entries {
            put_id(&mut out, e.id);
            put_u64(&mut out, e.node);
            put_fields(&mut out, e);
        }
        out
    }

    /// The counters and groups: the stored form up to the entries.
    pub fn encode_meta(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(100);
        self.put_meta(&mut out);
        out
    }

    fn put_meta(&self, out: &mut Vec<u8>) {
        put_id(out, self.last_id);
        put_id(out, self.first_id);
        put_id(out, self.max_deleted_id);
        put_u64(out, self.entries_added);
        put_u64(out, self.tail_node);
        put_u64(out, self.tail_node_added);
        put_u32(out, self.groups.len());
        for g in &self.groups {
            put_bytes(out, &g.name);
            put_id(out, g.last_id);
            put_u64(out, g.entries_read.map_or(u64::MAX, |n| n));
            put_u32(out, g.pending.len());
            for p in &g.pending {
                put_id(out, p.id);
                put_bytes(out, &p.consumer);
                put_u64(out, p.delivered_ms);
                put_u64(out, p.deliveries);
            }
            put_u32(out, g.consumers.len());
            for c in &g.consumers {
                put_bytes(out, &c.name);
                put_u64(out, c.seen_ms);
            }
        }
    }

    /// This stream's counters and groups with `entries`.
    pub fn with_entries<'b>(self, entries: Entries<'b>) -> Stream<'b> {
        Stream {
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted_id: self.max_deleted_id,
            entries_added: self.entries_added,
            tail_node: self.tail_node,
            tail_node_added: self.tail_node_added,
            groups: self.groups,
            entries,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// A stream as a DUMP payload held it: `entries` ordered by ID and numbered by the
    /// node they came in, the last of which was given `tail_node_added` entries (live
    /// or deleted), so that appends fill it as they would have filled it there.
    pub fn restored(
        last_id: Id,
        first_id: Id,
        max_deleted_id: Id,
        entries_added: u64,
        groups: Vec<Group>,
        entries: Vec<Entry>,
        tail_node_added: u64,
    ) -> Stream<'a> {
        debug_assert!(entries
            .windows(2)
            .all(|w| w[0].id < w[1].id && w[0].node <= w[1].node));
        Stream {
            last_id,
            first_id,
            max_deleted_id,
            entries_added,
            tail_node: entries.last().map_or(0, |e| e.node),
            tail_node_added: if entries.is_empty() {
                0
            } else {
                tail_node_added
            },
            groups,
            entries: Entries::whole(entries),
        }
    }

    /// Appends an entry with `id`, which must be above `last_id`, into the tail node
    /// or a new one once the tail holds `node_entries` (live or deleted).
    pub fn append(&mut self, id: Id, fields: Fields, node_entries: u64) {
        assert!(id > self.last_id, "stream IDs only grow");
        let tail_gone = self.entries.last_node() != Some(self.tail_node);
        if self.tail_node_added == 0 || tail_gone || self.tail_node_added >= node_entries.max(1) {
            self.tail_node += 1;
            self.tail_node_added = 0;
        }
        self.tail_node_added += 1;
        if self.entries.is_empty() {
            self.first_id = id;
        }
        self.entries.push(Entry {
            id,
            node: self.tail_node,
            fields,
        });
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Removes the entry `id`, if present; keeps `first_id` and `max_deleted_id` as
    /// XDEL does.
    pub fn delete(&mut self, id: Id) -> bool {
        if !self.entries.delete(id) {
            return false;
        }
        self.max_deleted_id = self.max_deleted_id.max(id);
        self.first_id = self.entries.first_id().unwrap_or(Id::ZERO);
        true
    }

    /// Removes entries from the head: while more than `maxlen` remain, or those below
    /// `minid`. With `approx`, only whole nodes, and no more than `limit` entries
    /// (0: no limit). Returns how many went.
    pub fn trim(&mut self, strategy: Trim, approx: bool, limit: u64) -> u64 {
        let removed = self.entries.trim(strategy, approx, limit);
        self.first_id = self.entries.first_id().unwrap_or(Id::ZERO);
        removed
    }

    pub fn entry(&self, id: Id) -> Option<Entry> {
        self.entries.get(id)
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.iter_mut().find(|g| g.name == name)
    }

    /// Adds `group`, kept in name order; `false` if one of that name exists.
    pub fn add_group(&mut self, group: Group) -> bool {
        match self.groups.binary_search_by(|g| g.name.cmp(&group.name)) {
            Ok(_) => false,
            Err(at) => {
                self.groups.insert(at, group);
                true
            }
        }
    }

    /// Whether an entry from `start` on may have been deleted (Redis's tombstone
    /// test: only the largest deleted ID is known).
    pub fn may_have_deleted_from(&self, start: Id) -> bool {
        !self.entries.is_empty()
            && self.max_deleted_id != Id::ZERO
            && self.first_id <= self.max_deleted_id
            && start <= self.max_deleted_id
    }

    /// How many entries were added up to `id`, when that can be known (Redis's
    /// estimate of a group's place from the first entry ever).
    pub fn entries_up_to(&self, id: Id) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let len = self.entries.len() as u64;
        if len == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted_id == Id::ZERO || self.max_deleted_id < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return Some(self.entries_added - len),
                std::cmp::Ordering::Equal => return Some(self.entries_added - len + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// How far behind the stream's end the group `g` is, when that can be known.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let read = match g.entries_read {
            Some(read) if !self.may_have_deleted_from(g.last_id) => Some(read),
            _ => self.entries_up_to(g.last_id),
        };
        // Negative if XGROUP SETID claimed more entries read than were added.
        read.map(|read| self.entries_added as i64 - read as i64)
    }

    /// Moves the group `name`'s place to `id` as XREADGROUP delivers it, counting
    /// the entries read as Redis counts them.
    pub fn advance_group(&mut self, name: &[u8], id: Id) {
        let exact = !self.may_have_deleted_from(id);
        let estimate = self.entries_up_to(id);
        let added = self.entries_added;
        let g = self.group_mut(name).expect("the group was looked up");
        if id <= g.last_id {
            return;
        }
        match g.entries_read {
            Some(read) if exact => g.entries_read = Some(read + 1),
            _ if added > 0 => g.entries_read = estimate,
            _ => {}
        }
        g.last_id = id;
    }
}

/// What XTRIM and XADD's trimming keep.
#[derive(Clone, Copy, Debug)]
pub enum Trim {
    MaxLen(u64),
    MinId(Id),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> Id {
        Id { ms, seq }
    }

    fn filled(n: u64, node_entries: u64) -> Stream<'static> {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(
                id(i, 0),
                vec![(b"f".to_vec(), i.to_string().into_bytes())],
                node_entries,
            );
        }
        s
    }

    #[test]
    fn ids_parse_as_redis_reads_them() {
        let p = |a: &str, syntax| parse_id(a.as_bytes(), 7, syntax).map(|p| (p.id, p.seq_given));
        assert_eq!(p("5", IdSyntax::Strict), Some((id(5, 7), true)));
        assert_eq!(p("5-3", IdSyntax::Strict), Some((id(5, 3), true)));
        assert_eq!(p("5-*", IdSyntax::Add), Some((id(5, 0), false)));
        assert_eq!(p("5-*", IdSyntax::Strict), None);
        assert_eq!(p("-", IdSyntax::Range), Some((Id::ZERO, true)));
        assert_eq!(p("+", IdSyntax::Range), Some((Id::MAX, true)));
        assert_eq!(p("+", IdSyntax::Strict), None);
        for bad in [
            "",
            "-1",
            "1-",
            "01",
            "a",
            "1-2-3",
            "18446744073709551616",
            " 1",
        ] {
            assert_eq!(p(bad, IdSyntax::Strict), None, "{bad:?}");
        }
        assert_eq!(
            p(
                "18446744073709551615-18446744073709551615",
                IdSyntax::Strict
            ),
            Some((Id::MAX, true))
        );
    }

    #[test]
    fn ids_step_across_their_limits() {
        assert_eq!(id(1, u64::MAX).next(), Some(id(2, 0)));
        assert_eq!(Id::MAX.next(), None);
        assert_eq!(id(2, 0).previous(), Some(id(1, u64::MAX)));
        assert_eq!(Id::ZERO.previous(), None);
    }

    #[test]
    fn the_stored_form_round_trips() {
        let mut s = filled(250, 100);
        s.delete(id(3, 0));
        s.groups.push(Group {
            name: b"g".to_vec(),
            last_id: id(10, 0),
            entries_read: Some(9),
            pending: vec![Pending {
                id: id(4, 0),
                consumer: b"alice".to_vec(),
                delivered_ms: 123,
                deliveries: 2,
            }],
            consumers: vec![Consumer {
                name: b"alice".to_vec(),
                seen_ms: 456,
            }],
        });
        s.groups.push(Group {
            name: b"h".to_vec(),
            last_id: Id::ZERO,
            entries_read: None,
            pending: vec![],
            consumers: vec![],
        });
        let bytes = s.encode();
        let decoded = Stream::decode(&bytes).unwrap();
        assert_eq!(decoded.entries.all(), s.entries.all());
        assert_eq!(decoded.groups, s.groups);
        assert_eq!(decoded.encode(), bytes);
        // Every cut, and a byte too many, is refused rather than misread.
        for cut in 0..bytes.len() {
            assert!(Stream::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Stream::decode(&longer).is_err());
    }

    #[test]
    fn approximate_trims_remove_whole_nodes_only() {
        let mut s = filled(1000, 100);
        assert_eq!(s.trim(Trim::MaxLen(555), true, 0), 400);
        assert_eq!(s.len(), 600);
        // Exact trimming goes into the node.
        assert_eq!(s.trim(Trim::MaxLen(555), false, 0), 45);
        assert_eq!(s.first_id, id(446, 0));
        // A limit stops before a node that would pass it.
        let mut s = filled(1000, 100);
        assert_eq!(s.trim(Trim::MaxLen(0), true, 250), 200);
        let mut s = filled(1000, 100);
        assert_eq!(s.trim(Trim::MinId(id(250, 0)), true, 0), 200);
        assert_eq!(s.trim(Trim::MinId(id(250, 0)), false, 0), 49);
        assert_eq!(s.first_id, id(250, 0));
    }

    #[test]
    fn a_node_emptied_by_deletes_is_not_appended_to() {
        let mut s = filled(3, 100);
        for i in 1..=3 {
            assert!(s.delete(id(i, 0)));
        }
        assert!(!s.delete(id(2, 0)));
        assert_eq!((s.first_id, s.max_deleted_id), (Id::ZERO, id(3, 0)));
        s.append(id(4, 0), vec![], 100);
        s.append(id(5, 0), vec![], 100);
        let entries = s.entries.all();
        assert_ne!(entries[0].node, 1);
        assert_eq!(entries[0].node, entries[1].node);
    }
}
