//! A stream value: entries ordered by ID, the stream's counters, and its consumer
//! groups, with the stored form the index keeps.
//!
//! ```text
//! stream   = last_id first_id max_deleted_id entries_added:u64
//!            tail_node:u64 tail_node_added:u64
//!            group_count:u32 group* entry_count:u64 entry*
//! id       = ms:u64 seq:u64
//! entry    = id node:u64 field_count:u32 (bytes bytes)*field_count
//! group    = name:bytes last_id entries_read:i64 (-1: unknown) 0xffffffff:u32
//!            next_consumer:u64 consumer_count:u32 consumer* pending:bytes
//! consumer = name:bytes seen_ms:u64 number:u64 pending_count:u64
//! pending  = the group's pending entries, a table (`stream_pending.rs`)
//! bytes    = len:u32 byte*len
//! ```
//!
//! Integers are little-endian. Groups stored before their pending entries were a
//! table read as well: where `0xffffffff` is, they have `pending_count:u32
//! (id consumer:bytes delivered_ms:u64 deliveries:u64)*pending_count
//! consumer_count:u32 (name:bytes seen_ms:u64)*consumer_count`.
//!
//! This is the stored form of a stream whose entries take at most `NODE_BYTES`; a
//! longer one keeps its counters and groups (`stream` up to `entry_count`) with a table
//! of nodes of entries (`stream_nodes.rs`), so that a command reads and copies the
//! nodes it touches rather than every entry.
//!
//! Redis keeps entries in nodes of up to `stream-node-max-entries` (100) and
//! `stream-node-max-bytes` (4096), and trims with `~` only whole nodes. The `node`
//! number of each entry models those nodes by count alone, so `MAXLEN ~` trims what
//! Redis trims for entries small enough that the byte limit does not close a node
//! first; with larger entries hotkv's nodes are larger than Redis's.

use std::fmt;

use crate::nodes::NodeStore;
pub use crate::stream_nodes::Entries;
use crate::stream_pending::Pel;
pub use crate::stream_pending::Pending;

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

#[derive(Clone, Debug, PartialEq)]
pub struct Consumer {
    pub name: Vec<u8>,
    pub seen_ms: u64,
    /// What its group's pending entries call it: numbers are given in order of
    /// creation and never reused.
    number: u64,
    /// Its pending entries.
    pending: u64,
}

impl Consumer {
    pub fn pending(&self) -> u64 {
        self.pending
    }

    pub fn number(&self) -> u64 {
        self.number
    }
}

/// A group as Redis describes it: name, last ID, entries read, its consumers (name,
/// seen time, pending count) and its pending entries (ID, consumer's name, delivery
/// time, deliveries). The consumers' numbers are left out: they are hotkv's own.
pub type Described = (
    Vec<u8>,
    Id,
    Option<u64>,
    Vec<(Vec<u8>, u64, u64)>,
    Vec<(Id, Vec<u8>, u64, u64)>,
);

#[derive(Debug)]
pub struct Group<'a> {
    pub name: Vec<u8>,
    pub last_id: Id,
    /// Entries the group has read, counted as Redis counts them for its lag; `None`
    /// when it cannot be known.
    pub entries_read: Option<u64>,
    /// Ordered by name, as Redis lists them.
    consumers: Vec<Consumer>,
    next_consumer: u64,
    pending: Pel<'a>,
}

/// Groups are equal if Redis would describe them alike ([`Group::described`]).
impl PartialEq for Group<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.described() == other.described()
    }
}

impl<'a> Group<'a> {
    pub fn new(name: &[u8], last_id: Id, entries_read: Option<u64>) -> Group<'a> {
        Group {
            name: name.to_vec(),
            last_id,
            entries_read,
            consumers: Vec::new(),
            next_consumer: 0,
            pending: Pel::of(&[]),
        }
    }

    /// A group as a DUMP payload held it: `consumers` (name, seen time) in name order,
    /// numbered by their place, and `pending` in ID order, each its consumer's number.
    pub fn restored(
        name: &[u8],
        last_id: Id,
        entries_read: Option<u64>,
        consumers: Vec<(Vec<u8>, u64)>,
        pending: &[Pending],
    ) -> Group<'a> {
        let mut g = Group::new(name, last_id, entries_read);
        for (name, seen_ms) in consumers {
            let at = g.consumers.len();
            g.add_consumer(at, &name, seen_ms);
        }
        for p in pending {
            g.count_pending(p.consumer, true);
        }
        g.pending = Pel::of(pending);
        g
    }

    pub fn described(&self) -> Described {
        let consumers = self.consumers.iter();
        let pending = self.pending.all().into_iter();
        (
            self.name.clone(),
            self.last_id,
            self.entries_read,
            consumers
                .map(|c| (c.name.clone(), c.seen_ms, c.pending))
                .collect(),
            pending
                .map(|p| {
                    let consumer = self.consumer_name(p.consumer).to_vec();
                    (p.id, consumer, p.delivered_ms, p.deliveries)
                })
                .collect(),
        )
    }

    pub fn consumers(&self) -> &[Consumer] {
        &self.consumers
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        let at = self
            .consumers
            .binary_search_by(|c| c.name.as_slice().cmp(name))
            .ok()?;
        Some(&self.consumers[at])
    }

    /// The name of the consumer numbered `number`: empty if the group has none, which
    /// only a damaged page of pending entries can say (an inline table is checked
    /// when the stream is read, see `counts_agree`).
    pub fn consumer_name(&self, number: u64) -> &[u8] {
        let c = self.consumers.iter().find(|c| c.number == number);
        c.map_or(&[], |c| &c.name)
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
                self.add_consumer(at, name, now);
                true
            }
        }
    }

    fn add_consumer(&mut self, at: usize, name: &[u8], seen_ms: u64) {
        self.consumers.insert(
            at,
            Consumer {
                name: name.to_vec(),
                seen_ms,
                number: self.next_consumer,
                pending: 0,
            },
        );
        self.next_consumer += 1;
    }

    /// Removes the consumer `name` and its pending entries: how many it had, `None`
    /// if there was no such consumer.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let at = self.consumers.iter().position(|c| c.name == name)?;
        let c = self.consumers.remove(at);
        if c.pending > 0 {
            self.pending.remove_where(|p| p.consumer == c.number);
        }
        Some(c.pending as usize)
    }

    fn number_of(&self, consumer: &[u8]) -> u64 {
        self.consumer(consumer)
            .expect("a consumer is touched before it is given entries")
            .number
    }

    /// Counts one more or one fewer pending entry for consumer `number` (which a
    /// damaged page may name without the group having it: counted for nobody then).
    fn count_pending(&mut self, number: u64, more: bool) {
        let Some(c) = self.consumers.iter_mut().find(|c| c.number == number) else {
            return;
        };
        c.pending = match more {
            true => c.pending + 1,
            false => c.pending.saturating_sub(1),
        };
    }

    /// Sets the pending entry `p.id` (its consumer's count kept).
    fn put_pending(&mut self, p: Pending) {
        self.count_pending(p.consumer, true);
        if let Some(old) = self.pending.put(p) {
            self.count_pending(old.consumer, false);
        }
    }

    /// Delivers `id` to `consumer` (touched before) at `now`: pending for it alone,
    /// delivered once.
    pub fn deliver(&mut self, id: Id, consumer: &[u8], now: u64) {
        let number = self.number_of(consumer);
        self.put_pending(Pending {
            id,
            consumer: number,
            delivered_ms: now,
            deliveries: 1,
        });
    }

    /// The pending entry `id` delivered to `consumer` (touched before) at
    /// `delivered_ms`, `deliveries` times (`None`: once more than it was), as XCLAIM
    /// and XAUTOCLAIM move it, and XREADGROUP reads it again (to its own consumer).
    pub fn redeliver(
        &mut self,
        p: Pending,
        consumer: &[u8],
        delivered_ms: u64,
        deliveries: Option<u64>,
    ) {
        let number = self.number_of(consumer);
        self.put_pending(Pending {
            id: p.id,
            consumer: number,
            delivered_ms,
            deliveries: deliveries.unwrap_or(p.deliveries + 1),
        });
    }

    /// Acknowledges `id`: whether it was pending.
    pub fn ack(&mut self, id: Id) -> bool {
        match self.pending.remove(id) {
            Some(p) => {
                self.count_pending(p.consumer, false);
                true
            }
            None => false,
        }
    }

    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    pub fn pending(&self) -> &Pel<'a> {
        &self.pending
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
    pub groups: Vec<Group<'a>>,
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

/// The node [`encode_node`] wrote as `node`, of `count` entries, with `e` appended,
/// copied as bytes: only its count is read (and checked).
pub fn node_with(node: &[u8], count: usize, e: &Entry) -> Result<Vec<u8>, Corrupt> {
    let mut r = Reader { bytes: node };
    if r.u32()? as usize != count {
        return Err(Corrupt);
    }
    let mut out = Vec::with_capacity(node.len() + entry_size(e));
    put_u32(&mut out, count + 1);
    out.extend_from_slice(&node[4..]);
    put_id(&mut out, e.id);
    put_fields(&mut out, e);
    Ok(out)
}

/// Where a group stored before its pending entries were a table has its count of
/// them, this marks the table form.
const TABLE_FORM: u32 = u32::MAX;

/// A group as stored, its pending entries not read yet.
struct StoredGroup<'r> {
    name: Vec<u8>,
    last_id: Id,
    entries_read: Option<u64>,
    consumers: Vec<Consumer>,
    next_consumer: u64,
    pending: StoredPending<'r>,
}

enum StoredPending<'r> {
    /// A table (`stream_pending.rs`).
    Table(&'r [u8]),
    /// Listed, as groups were stored before.
    Listed(Vec<Pending>),
}

fn read_group<'r>(r: &mut Reader<'r>) -> Result<StoredGroup<'r>, Corrupt> {
    let name = r.bytes()?;
    let last_id = r.id()?;
    let entries_read = u64::try_from(r.u64()? as i64).ok();
    let form = r.u32()?;
    if form != TABLE_FORM {
        return read_listed_group(r, name, last_id, entries_read, form);
    }
    let next_consumer = r.u64()?;
    let count = r.u32()?;
    let mut consumers: Vec<Consumer> = Vec::with_capacity(r.count(u64::from(count), 28)?);
    for _ in 0..count {
        consumers.push(Consumer {
            name: r.bytes()?,
            seen_ms: r.u64()?,
            number: r.u64()?,
            pending: r.u64()?,
        });
    }
    let mut numbers: Vec<u64> = consumers.iter().map(|c| c.number).collect();
    numbers.sort_unstable();
    numbers.dedup();
    if numbers.len() != consumers.len()
        || numbers.last().is_some_and(|&n| n >= next_consumer)
        || !consumers.windows(2).all(|w| w[0].name < w[1].name)
    {
        return Err(Corrupt);
    }
    let n = r.u32()? as usize;
    Ok(StoredGroup {
        name,
        last_id,
        entries_read,
        consumers,
        next_consumer,
        pending: StoredPending::Table(r.take(n)?),
    })
}

/// A group stored before its pending entries were a table: its consumers numbered
/// in name order.
fn read_listed_group<'r>(
    r: &mut Reader<'r>,
    name: Vec<u8>,
    last_id: Id,
    entries_read: Option<u64>,
    pending_count: u32,
) -> Result<StoredGroup<'r>, Corrupt> {
    let mut listed = Vec::with_capacity(r.count(u64::from(pending_count), 36)?);
    for _ in 0..pending_count {
        listed.push((r.id()?, r.bytes()?, r.u64()?, r.u64()?));
    }
    let count = r.u32()?;
    let mut consumers: Vec<Consumer> = Vec::with_capacity(r.count(u64::from(count), 12)?);
    for number in 0..u64::from(count) {
        consumers.push(Consumer {
            name: r.bytes()?,
            seen_ms: r.u64()?,
            number,
            pending: 0,
        });
    }
    if !consumers.windows(2).all(|w| w[0].name < w[1].name)
        || !listed.windows(2).all(|w| w[0].0 < w[1].0)
    {
        return Err(Corrupt);
    }
    let mut pending = Vec::with_capacity(listed.len());
    for (id, consumer, delivered_ms, deliveries) in listed {
        let at = consumers
            .binary_search_by(|c| c.name.cmp(&consumer))
            .map_err(|_| Corrupt)?;
        consumers[at].pending += 1;
        pending.push(Pending {
            id,
            consumer: consumers[at].number,
            delivered_ms,
            deliveries,
        });
    }
    Ok(StoredGroup {
        name,
        last_id,
        entries_read,
        next_consumer: consumers.len() as u64,
        consumers,
        pending: StoredPending::Listed(pending),
    })
}

/// Whether the consumers' pending counts are those of `pending`: entry by entry
/// when it is inline (every entry's consumer one of them), in sum when it is paged
/// (its pages are not read to decode the stream).
fn counts_agree(consumers: &[Consumer], pending: &Pel) -> bool {
    let sum = consumers
        .iter()
        .try_fold(0u64, |n, c| n.checked_add(c.pending));
    if sum != Some(pending.len() as u64) {
        return false;
    }
    if pending.is_paged() {
        return true;
    }
    let mut counts: Vec<(u64, u64)> = consumers.iter().map(|c| (c.number, 0)).collect();
    counts.sort_unstable();
    for p in pending.all() {
        match counts.binary_search_by_key(&p.consumer, |&(number, _)| number) {
            Ok(at) => counts[at].1 += 1,
            Err(_) => return false,
        }
    }
    consumers.iter().all(|c| {
        let at = counts.binary_search_by_key(&c.number, |&(number, _)| number);
        at.is_ok_and(|at| counts[at].1 == c.pending)
    })
}

/// A group's name and its stored pending table.
pub type PendingTable<'m> = (Vec<u8>, &'m [u8]);

/// The pending tables of the groups of a split stream's `meta`: what names their
/// pages.
pub fn pending_tables(meta: &[u8]) -> Result<Vec<PendingTable<'_>>, Corrupt> {
    let mut r = Reader { bytes: meta };
    let (_, groups) = Stream::read_counters(&mut r)?;
    let mut out = Vec::new();
    for _ in 0..groups {
        let g = read_group(&mut r)?;
        if let StoredPending::Table(table) = g.pending {
            crate::stream_pending::check_form(table)?;
            out.push((g.name, table));
        }
    }
    if !r.bytes.is_empty() {
        return Err(Corrupt);
    }
    Ok(out)
}

impl<'a> Stream<'a> {
    /// The stream stored whole (its entries in memory).
    pub fn decode(bytes: &[u8]) -> Result<Stream<'a>, Corrupt> {
        let mut r = Reader { bytes };
        let mut s = Stream::read_meta(&mut r, None)?;
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

    /// A split stream's counters and groups ([`Stream::encode_meta`]), the pages of
    /// its groups' pending entries read from `store`; its entries left empty for the
    /// caller to give.
    pub fn decode_meta(store: &'a dyn NodeStore, bytes: &[u8]) -> Result<Stream<'a>, Corrupt> {
        let mut r = Reader { bytes };
        let s = Stream::read_meta(&mut r, Some(store))?;
        if !r.bytes.is_empty() {
            return Err(Corrupt);
        }
        Ok(s)
    }

    /// The counters, and how many groups follow.
    fn read_counters(r: &mut Reader) -> Result<(Stream<'a>, usize), Corrupt> {
        let s = Stream {
            last_id: r.id()?,
            first_id: r.id()?,
            max_deleted_id: r.id()?,
            entries_added: r.u64()?,
            tail_node: r.u64()?,
            tail_node_added: r.u64()?,
            ..Stream::default()
        };
        let groups = r.u32()?;
        Ok((s, r.count(u64::from(groups), 4 + 16 + 8 + 4)?))
    }

    fn read_meta(r: &mut Reader, store: Option<&'a dyn NodeStore>) -> Result<Stream<'a>, Corrupt> {
        let (mut s, groups) = Stream::read_counters(r)?;
        for _ in 0..groups {
            let g = read_group(r)?;
            let pending = match g.pending {
                StoredPending::Listed(pending) => Pel::of(&pending),
                StoredPending::Table(table) => Pel::stored(store, table.to_vec())?,
            };
            if !counts_agree(&g.consumers, &pending) {
                return Err(Corrupt);
            }
            s.groups.push(Group {
                name: g.name,
                last_id: g.last_id,
                entries_read: g.entries_read,
                consumers: g.consumers,
                next_consumer: g.next_consumer,
                pending,
            });
        }
        Ok(s)
    }

    /// The stream stored whole, every entry and pending entry read (from the nodes and
    /// pages of a split stream).
    pub fn encode(&self) -> Vec<u8> {
        let tables: Vec<Vec<u8>> = self.groups.iter().map(|g| g.pending.inline()).collect();
        let entries = self.entries.all();
        let bytes: usize = entries.iter().map(entry_size).sum();
        let mut out = Vec::with_capacity(100 + bytes + entries.len() * 8);
        self.put_meta(&mut out, &tables);
        put_u64(&mut out, entries.len() as u64);
        for e in &entries {
            put_id(&mut out, e.id);
            put_u64(&mut out, e.node);
            put_fields(&mut out, e);
        }
        out
    }

    /// The counters and groups as a split stream stores them (the stored form up to the
    /// entries), each group's pending entries finished in `store`: paged if long.
    /// Takes the pending entries out of the groups.
    pub fn encode_meta(&mut self, store: &dyn NodeStore) -> engine::Result<Vec<u8>> {
        let tables = self
            .groups
            .iter_mut()
            .map(|g| std::mem::replace(&mut g.pending, Pel::of(&[])).finish(store))
            .collect::<engine::Result<Vec<Vec<u8>>>>()?;
        let mut out = Vec::with_capacity(100);
        self.put_meta(&mut out, &tables);
        Ok(out)
    }

    /// Whether every group's pending entries fit inline, so that the stream may be
    /// stored whole.
    pub fn pending_inline(&self) -> bool {
        self.groups.iter().all(|g| g.pending.stays_inline())
    }

    /// The first error a node or page read met, if one did: what was answered since is
    /// not to be trusted, and nothing is to be stored.
    pub fn failure(&self) -> Option<engine::Error> {
        let pending = || self.groups.iter().find_map(|g| g.pending.failure());
        self.entries.failure().or_else(pending)
    }

    fn put_meta(&self, out: &mut Vec<u8>, tables: &[Vec<u8>]) {
        put_id(out, self.last_id);
        put_id(out, self.first_id);
        put_id(out, self.max_deleted_id);
        put_u64(out, self.entries_added);
        put_u64(out, self.tail_node);
        put_u64(out, self.tail_node_added);
        put_u32(out, self.groups.len());
        for (g, table) in self.groups.iter().zip(tables) {
            put_bytes(out, &g.name);
            put_id(out, g.last_id);
            put_u64(out, g.entries_read.map_or(u64::MAX, |n| n));
            out.extend_from_slice(&TABLE_FORM.to_le_bytes());
            put_u64(out, g.next_consumer);
            put_u32(out, g.consumers.len());
            for c in &g.consumers {
                put_bytes(out, &c.name);
                put_u64(out, c.seen_ms);
                put_u64(out, c.number);
                put_u64(out, c.pending);
            }
            put_bytes(out, table);
        }
    }

    /// This stream's counters and groups with `entries`.
    pub fn with_entries(self, entries: Entries<'a>) -> Stream<'a> {
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
        groups: Vec<Group<'a>>,
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

    pub fn group(&self, name: &[u8]) -> Option<&Group<'a>> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group<'a>> {
        self.groups.iter_mut().find(|g| g.name == name)
    }

    /// Adds `group`, kept in name order; `false` if one of that name exists.
    pub fn add_group(&mut self, group: Group<'a>) -> bool {
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
        let mut g = Group::new(b"g", id(10, 0), Some(9));
        g.touch_consumer(b"alice", 456);
        g.touch_consumer(b"bob", 457);
        g.deliver(id(4, 0), b"bob", 100);
        let first = g.pending().get(id(4, 0)).unwrap();
        g.redeliver(first, b"alice", 123, Some(2));
        g.deliver(id(5, 0), b"bob", 124);
        g.deliver(id(6, 0), b"bob", 125);
        s.groups.push(g);
        s.groups.push(Group::new(b"h", Id::ZERO, None));
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
        // Consumers' counts that add up but are not theirs: alice has 1, bob 2.
        let mut swapped = bytes.clone();
        let count_at = |name: &[u8]| {
            let at = bytes.windows(name.len()).position(|w| w == name).unwrap();
            at + name.len() + 16
        };
        let (alice, bob) = (count_at(b"alice"), count_at(b"bob"));
        assert_eq!((swapped[alice], swapped[bob]), (1, 2));
        (swapped[alice], swapped[bob]) = (2, 1);
        assert!(Stream::decode(&swapped).is_err());
    }

    #[test]
    fn groups_stored_before_pending_tables_read_the_same() {
        // A stream of one entry and a group whose two consumers have an entry each
        // pending, as hotkv stored it before (the pending entries listed by name).
        let mut old = Vec::new();
        // Last, first and max deleted IDs; entries added, tail node and its count.
        for n in [2, 0, 1, 0, 0, 0, 1, 1, 1] {
            put_u64(&mut old, n);
        }
        put_u32(&mut old, 1);
        put_bytes(&mut old, b"g");
        put_id(&mut old, id(2, 0));
        put_u64(&mut old, 2);
        put_u32(&mut old, 2);
        for (ms, who, at, n) in [(1, "bob", 10, 1), (2, "al", 20, 3)] {
            put_id(&mut old, id(ms, 0));
            put_bytes(&mut old, who.as_bytes());
            put_u64(&mut old, at);
            put_u64(&mut old, n);
        }
        put_u32(&mut old, 2);
        for (who, seen) in [("al", 5), ("bob", 6)] {
            put_bytes(&mut old, who.as_bytes());
            put_u64(&mut old, seen);
        }
        put_u64(&mut old, 1);
        put_id(&mut old, id(1, 0));
        put_u64(&mut old, 1);
        put_u32(&mut old, 0);
        let s = Stream::decode(&old).unwrap();
        let (al, bob) = (b"al".to_vec(), b"bob".to_vec());
        assert_eq!(
            s.groups[0].described(),
            (
                b"g".to_vec(),
                id(2, 0),
                Some(2),
                vec![(al.clone(), 5, 1), (bob.clone(), 6, 1)],
                vec![(id(1, 0), bob, 10, 1), (id(2, 0), al, 20, 3)],
            )
        );
        // Stored again in the table form, it reads the same.
        let again = Stream::decode(&s.encode()).unwrap();
        assert_eq!(again.groups, s.groups);
        // A pending entry of a consumer the group does not have is refused.
        let mut orphan = old.clone();
        let at = orphan.windows(3).position(|w| w == b"bob").unwrap();
        orphan[at..at + 3].copy_from_slice(b"eve");
        assert!(Stream::decode(&orphan).is_err());
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
