//! A node table's records, kept in pages once the table is long, so that a write
//! copies (and, on an engine, logs) the page of the records it changes and a short
//! root, not every record: at 63,000 members a sorted set's two tables held ~600
//! records each, 28 KB that every ZADD copied and logged, and a list of a million
//! short elements has a table of 20 KB. Used by the tables of long lists
//! (`list_nodes.rs`, 16-byte records in list order), of large hashes and sets
//! (`field_nodes.rs`) and of sorted sets' order (`score_nodes.rs`, both 24-byte
//! records ordered by a key), and of long streams (`stream_nodes.rs`, 40-byte records
//! in ID order). Each record counts the elements of its node.
//!
//! ```text
//! table = count (u32 LE: elements) | record*          inline, up to PAGE_RECORDS records
//!       | count (u64 LE: elements) | page*            paged
//! page  = id (u64 LE) | records (u32 LE) | elements (u32 LE)
//!         | key (u64 LE: the key of its first record)
//! ```
//!
//! The two forms are told apart by length: an inline table is 4 more than a multiple
//! of its record size, a root 8 more than a multiple of 24. A page's records are a
//! node of their own in the [`NodeStore`], written once and never changed, as the
//! collections' nodes are: a write makes new pages for what it changed and the root
//! names them, so a page id names the same records in every table that holds it, and
//! what a write releases is the pages and nodes the old table names and the new one
//! does not ([`dropped`]). Tables stored inline before pages existed read unchanged.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use engine::Result;

use crate::nodes::NodeStore;

/// Bytes of a page's entry in a root.
const PAGE_REF: usize = 24;

/// Records a page holds at most; a table with more is paged. At 24 bytes a record, a
/// page is as large as a 3 KB node; at 16, a 2 KB one.
pub const PAGE_RECORDS: usize = 128;

/// Records a page is cut to, so that the next few splits of its nodes do not cut it
/// again.
const PAGE_FILL: usize = PAGE_RECORDS * 3 / 4;

/// A changed page with fewer records than this takes in a neighbour.
const PAGE_MIN: usize = PAGE_RECORDS / 4;

/// A paged table left with this many records or fewer is stored inline again.
const INLINE_AGAIN: usize = PAGE_RECORDS / 2;

const INLINE_HEADER: usize = 4;
const PAGED_HEADER: usize = 8;

/// Where a kind of table keeps, in each record of `R` bytes, what this module reads of
/// it.
#[derive(Clone, Copy, Debug)]
pub struct Layout<const R: usize> {
    /// The 8 bytes (LE) the records are in ascending order of, as the table's kind
    /// orders them (a list's are in list order, and their key is never compared); a
    /// page's entry in the root holds its first record's.
    pub key_at: usize,
    /// The u32 (LE) count of its node's elements.
    pub count_at: usize,
    /// The u64 (LE) id of its node.
    pub id_at: usize,
    /// The u32 (LE) packed size of its node.
    pub bytes_at: usize,
    /// Whether a record names a node (at `id_at`, counting `count_at`'s elements of
    /// `bytes_at` bytes); if not, the records are the elements, each counting one,
    /// and the three offsets are not read.
    pub names_nodes: bool,
}

fn word(record: &[u8], at: usize, n: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&record[at..at + n]);
    u64::from_le_bytes(b)
}

/// The u64 (LE) at `at` of a record.
pub fn u64_at(record: &[u8], at: usize) -> u64 {
    word(record, at, 8)
}

impl<const R: usize> Layout<R> {
    pub fn key(&self, record: &[u8]) -> u64 {
        word(record, self.key_at, 8)
    }

    pub fn count(&self, record: &[u8]) -> u64 {
        if !self.names_nodes {
            return 1;
        }
        word(record, self.count_at, 4)
    }

    pub fn id(&self, record: &[u8]) -> u64 {
        debug_assert!(self.names_nodes, "the records name no nodes");
        word(record, self.id_at, 8)
    }

    pub fn bytes(&self, record: &[u8]) -> usize {
        word(record, self.bytes_at, 4) as usize
    }
}

/// Whether `table`, of `R`-byte records, is paged. An inline table is 4 bytes more than
/// a multiple of `R`, a paged one 8 more than a multiple of 24, which never is for
/// the sizes used (16, 24 and 40: an inline table is 4 more than a multiple of 8).
fn is_paged<const R: usize>(table: &[u8]) -> bool {
    let len = table.len();
    form::<R>(table).unwrap_or_else(|| panic!("a node table of {len} bytes"))
}

/// Whether `table`, of `R`-byte records, is paged (`Some(true)`) or inline
/// (`Some(false)`) by its length; `None` if it has neither form's length.
pub fn form<const R: usize>(table: &[u8]) -> Option<bool> {
    const {
        assert!(
            R == 16 || R == 24 || R == 40,
            "record sizes whose forms differ in length"
        )
    };
    let len = table.len();
    if len >= INLINE_HEADER && (len - INLINE_HEADER).is_multiple_of(R) {
        Some(false)
    } else {
        (len >= PAGED_HEADER && (len - PAGED_HEADER).is_multiple_of(PAGE_REF)).then_some(true)
    }
}

/// A page as a root names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PageRef {
    id: u64,
    records: usize,
    elements: u64,
    key: u64,
}

fn page_refs(table: &[u8]) -> impl Iterator<Item = PageRef> + '_ {
    table[PAGED_HEADER..]
        .chunks_exact(PAGE_REF)
        .map(|r| PageRef {
            id: word(r, 0, 8),
            records: word(r, 8, 4) as usize,
            elements: word(r, 12, 4),
            key: word(r, 16, 8),
        })
}

/// The elements a stored table of `R`-byte records counts.
fn count<const R: usize>(table: &[u8]) -> usize {
    if is_paged::<R>(table) {
        word(table, 0, 8) as usize
    } else {
        word(table, 0, 4) as usize
    }
}

/// A page of a table being read or edited.
struct Page<'a> {
    /// As stored; `None` for an inline table's records and a page this edit changed,
    /// which are written again if the table is stored paged.
    id: Option<u64>,
    records: usize,
    elements: u64,
    key: u64,
    body: OnceCell<Cow<'a, [u8]>>,
}

/// A table's records, read where they lie and pages loaded as they are first needed;
/// changed in place by an edit, which [`Records::finish`] stores.
pub struct Records<'a, const R: usize> {
    nodes: &'a dyn NodeStore,
    layout: Layout<R>,
    count: u64,
    /// Whether it was stored paged.
    paged: bool,
    pages: Vec<Page<'a>>,
    /// The index of each page's first record, and past the last: the table's length.
    starts: Vec<usize>,
}

impl<'a, const R: usize> Records<'a, R> {
    /// The stored table `table`, its pages (if paged) read from `nodes` when needed.
    pub fn new(
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        table: impl Into<Cow<'a, [u8]>>,
    ) -> Self {
        let table = table.into();
        let paged = is_paged::<R>(&table);
        let count = count::<R>(&table) as u64;
        let pages = if paged {
            page_refs(&table)
                .map(|p| Page {
                    id: Some(p.id),
                    records: p.records,
                    elements: p.elements,
                    key: p.key,
                    body: OnceCell::new(),
                })
                .collect()
        } else {
            let body = match table {
                Cow::Borrowed(t) => Cow::Borrowed(&t[INLINE_HEADER..]),
                Cow::Owned(mut t) => {
                    t.drain(..INLINE_HEADER);
                    Cow::Owned(t)
                }
            };
            vec![Page {
                id: None,
                records: body.len() / R,
                elements: count,
                key: if body.is_empty() {
                    0
                } else {
                    layout.key(&body)
                },
                body: OnceCell::from(body),
            }]
        };
        let mut records = Records {
            nodes,
            layout,
            count,
            paged,
            pages,
            starts: Vec::new(),
        };
        records.index();
        records
    }

    /// A table of `count` elements in `records`, none of them stored yet.
    pub fn of(
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        count: u64,
        records: &[[u8; R]],
    ) -> Self {
        let mut table = Records {
            nodes,
            layout,
            count,
            paged: false,
            pages: Vec::new(),
            starts: Vec::new(),
        };
        table.pages.push(table.page_of_body(records.concat()));
        table.index();
        table
    }

    fn index(&mut self) {
        self.starts.clear();
        let mut at = 0;
        for p in &self.pages {
            self.starts.push(at);
            at += p.records;
        }
        self.starts.push(at);
    }

    /// Records in the table.
    pub fn len(&self) -> usize {
        *self.starts.last().expect("starts end with the length")
    }

    /// Elements the table counts.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    pub fn set_count(&mut self, count: usize) {
        self.count = count as u64;
    }

    fn body(&self, p: usize) -> Result<&[u8]> {
        let page = &self.pages[p];
        if let Some(body) = page.body.get() {
            return Ok(body);
        }
        let id = page.id.expect("a page not loaded is stored");
        let body = self.nodes.read(id)?;
        if body.len() != page.records * R {
            return Err(engine::Error::Corruption {
                file: Default::default(),
                offset: 0,
                detail: format!(
                    "page {id} of a node table holds {} bytes, its root says {} records",
                    body.len(),
                    page.records
                ),
            });
        }
        Ok(page.body.get_or_init(|| Cow::Owned(body)))
    }

    /// The page holding record `at`, and `at`'s place in it.
    fn page_of(&self, at: usize) -> (usize, usize) {
        assert!(at < self.len(), "record {at} of {}", self.len());
        let p = self.starts.partition_point(|&s| s <= at) - 1;
        (p, at - self.starts[p])
    }

    /// Record `at`.
    pub fn get(&self, at: usize) -> Result<[u8; R]> {
        let (p, i) = self.page_of(at);
        let body = self.body(p)?;
        Ok(body[i * R..(i + 1) * R].try_into().expect("a record"))
    }

    /// The first record whose key fails `pred`, `pred` holding for the keys of the
    /// records up to some point and failing after it: reads one page.
    pub fn partition(&self, pred: impl Fn(u64) -> bool) -> Result<usize> {
        let p = self.pages.partition_point(|page| pred(page.key));
        let Some(p) = p.checked_sub(1) else {
            return Ok(0);
        };
        let body = self.body(p)?;
        let within = partition(body.len() / R, |i| pred(self.layout.key(&body[i * R..])));
        Ok(self.starts[p] + within)
    }

    /// Elements the records before `at` count: reads one page.
    pub fn elements_before(&self, at: usize) -> Result<u64> {
        if at == self.len() {
            return Ok(self.count);
        }
        let (p, i) = self.page_of(at);
        let before: u64 = self.pages[..p].iter().map(|page| page.elements).sum();
        let body = self.body(p)?;
        let within: u64 = (0..i).map(|j| self.layout.count(&body[j * R..])).sum();
        Ok(before + within)
    }

    /// Elements the records count: the table's count, but for an edit that keeps the
    /// count current and brings its records up to date only when it ends.
    pub fn recorded(&self) -> u64 {
        self.pages.iter().map(|page| page.elements).sum()
    }

    /// The record whose node holds element `rank` (counted over the records in order),
    /// and `rank`'s place in that node: reads one page.
    pub fn by_element(&self, rank: u64) -> Result<(usize, u64)> {
        let mut rest = rank;
        for (p, page) in self.pages.iter().enumerate() {
            if rest >= page.elements {
                rest -= page.elements;
                continue;
            }
            let body = self.body(p)?;
            for i in 0..page.records {
                let n = self.layout.count(&body[i * R..]);
                if rest < n {
                    return Ok((self.starts[p] + i, rest));
                }
                rest -= n;
            }
        }
        panic!("element {rank} of {}", self.recorded())
    }

    /// Every record, in order: reads every page.
    pub fn all(&self) -> Result<Vec<[u8; R]>> {
        let mut out = Vec::with_capacity(self.len());
        for p in 0..self.pages.len() {
            out.extend(
                self.body(p)?
                    .chunks_exact(R)
                    .map(|r| <[u8; R]>::try_from(r).expect("a record")),
            );
        }
        Ok(out)
    }

    /// Replaces records `range` by `records`, which keep the table's order with their
    /// neighbours (the caller's to check: only it knows how its keys compare).
    pub fn splice(&mut self, range: Range<usize>, records: &[[u8; R]]) -> Result<()> {
        assert!(range.start <= range.end && range.end <= self.len());
        // The pages the range lies in; an empty range goes to the page of the record
        // before it, so that appending to a page's end stays in that page.
        let first = match (range.start, self.len()) {
            (_, 0) | (0, _) => 0,
            (s, _) if s == range.end => self.page_of(s - 1).0,
            (s, _) => self.page_of(s).0,
        };
        let last = match range.end > range.start {
            true => self.page_of(range.end - 1).0,
            false => first,
        };
        let mut body = Vec::new();
        for p in first..=last {
            body.extend_from_slice(self.body(p)?);
        }
        let base = self.starts[first];
        body.splice(
            (range.start - base) * R..(range.end - base) * R,
            records.concat(),
        );
        // An emptied page goes, so that the pages' keys stay in order; a table keeps
        // one page, however short.
        let page = (!body.is_empty() || self.pages.len() == last - first + 1)
            .then(|| self.page_of_body(body));
        self.pages.splice(first..=last, page);
        self.index();
        Ok(())
    }

    /// A changed page of the records `body`, not stored yet.
    fn page_of_body(&self, body: Vec<u8>) -> Page<'a> {
        let records = body.len() / R;
        Page {
            id: None,
            records,
            elements: body.chunks_exact(R).map(|r| self.layout.count(r)).sum(),
            key: if records > 0 {
                self.layout.key(&body)
            } else {
                0
            },
            body: OnceCell::from(Cow::Owned(body)),
        }
    }

    /// Whether [`Records::finish`] stores the table inline.
    pub fn stays_inline(&self) -> bool {
        let len = self.len();
        len <= PAGE_RECORDS && (!self.paged || len <= INLINE_AGAIN)
    }

    /// Whether the table was stored paged: its pages are in its node store.
    pub fn was_paged(&self) -> bool {
        self.paged
    }

    /// The table stored inline whatever its length, as a value stored whole holds it:
    /// reads every page.
    pub fn inline(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(INLINE_HEADER + self.len() * R);
        out.extend_from_slice(&u32::try_from(self.count).expect("a count").to_le_bytes());
        for p in 0..self.pages.len() {
            out.extend_from_slice(self.body(p)?);
        }
        Ok(out)
    }

    /// The table as stored. Inline if it has few records (at most [`PAGE_RECORDS`], or
    /// [`INLINE_AGAIN`] if it was paged, so that a table near the bound does not go
    /// back and forth); else paged, each run of changed pages written to the node
    /// store as new pages of at most [`PAGE_RECORDS`] (cut to [`PAGE_FILL`]), a run
    /// left short taking in a neighbour.
    pub fn finish(self) -> Result<Vec<u8>> {
        if self.stays_inline() {
            return self.inline();
        }
        // Which pages to write again: the changed ones (an inline table's records
        // too), and a neighbour of each run of them left short.
        let mut rewrite: Vec<bool> = self.pages.iter().map(|p| p.id.is_none()).collect();
        let mut p = 0;
        while p < rewrite.len() {
            if !rewrite[p] {
                p += 1;
                continue;
            }
            let end = (p..rewrite.len())
                .find(|&q| !rewrite[q])
                .unwrap_or(rewrite.len());
            let records: usize = self.pages[p..end].iter().map(|page| page.records).sum();
            if (1..PAGE_MIN).contains(&records) {
                if end < rewrite.len() {
                    rewrite[end] = true;
                } else if p > 0 {
                    rewrite[p - 1] = true;
                    // The run now starts earlier: look at it again from there.
                    p = (0..p).rev().find(|&q| !rewrite[q]).map_or(0, |q| q + 1);
                    continue;
                }
            }
            p = end;
        }
        let mut root = Vec::with_capacity(PAGED_HEADER + (self.pages.len() + 2) * PAGE_REF);
        root.extend_from_slice(&self.count.to_le_bytes());
        let mut push = |id: u64, records: usize, elements: u64, key: u64| {
            root.extend_from_slice(&id.to_le_bytes());
            root.extend_from_slice(&(records as u32).to_le_bytes());
            let elements = u32::try_from(elements).expect("a page's elements fit 32 bits");
            root.extend_from_slice(&elements.to_le_bytes());
            root.extend_from_slice(&key.to_le_bytes());
        };
        let mut p = 0;
        while p < self.pages.len() {
            let page = &self.pages[p];
            if !rewrite[p] {
                let id = page.id.expect("a page kept is stored");
                push(id, page.records, page.elements, page.key);
                p += 1;
                continue;
            }
            let end = (p..rewrite.len())
                .find(|&q| !rewrite[q])
                .unwrap_or(rewrite.len());
            let mut body = Vec::new();
            for q in p..end {
                body.extend_from_slice(self.body(q)?);
            }
            let records = body.len() / R;
            let parts = if records > PAGE_RECORDS {
                records.div_ceil(PAGE_FILL)
            } else {
                usize::from(records > 0)
            };
            for k in 0..parts {
                let chunk = &body[records * k / parts * R..records * (k + 1) / parts * R];
                let elements = chunk.chunks_exact(R).map(|r| self.layout.count(r)).sum();
                push(
                    self.nodes.write(chunk),
                    chunk.len() / R,
                    elements,
                    self.layout.key(chunk),
                );
            }
            p = end;
        }
        Ok(root)
    }
}

/// The pages and nodes the stored table `table` names, each its id and stored size.
pub fn nodes<const R: usize>(
    nodes: &dyn NodeStore,
    layout: Layout<R>,
    table: &[u8],
) -> Result<Vec<(u64, usize)>> {
    let records = Records::new(nodes, layout, table);
    let mut out: Vec<(u64, usize)> = records
        .pages
        .iter()
        .filter_map(|p| Some((p.id?, p.records * R)))
        .collect();
    if layout.names_nodes {
        out.extend(
            records
                .all()?
                .iter()
                .map(|r| (layout.id(r), layout.bytes(r))),
        );
    }
    Ok(out)
}

/// The pages and nodes the stored table `old` names and the stored table `new` does
/// not: what replacing one by the other releases. A page both name holds the same
/// records in both, so only the records of the pages one of them names alone are
/// compared, and of those, the runs both start and end with are skipped by comparing
/// bytes (a write changes a few records in the middle).
pub fn dropped<const R: usize>(
    nodes: &dyn NodeStore,
    layout: Layout<R>,
    old: &[u8],
    new: &[u8],
) -> Result<Vec<u64>> {
    // The page ids a stored table names, sorted: read from its root alone.
    let page_ids = |table: &[u8]| {
        let mut ids: Vec<u64> = match is_paged::<R>(table) {
            true => page_refs(table).map(|p| p.id).collect(),
            false => Vec::new(),
        };
        ids.sort_unstable();
        ids
    };
    let (old_pages, new_pages) = (page_ids(old), page_ids(new));
    let mut released: Vec<u64> = old_pages
        .iter()
        .copied()
        .filter(|id| new_pages.binary_search(id).is_err())
        .collect();
    if !layout.names_nodes {
        return Ok(released);
    }
    let (old, new) = (
        Records::new(nodes, layout, old),
        Records::new(nodes, layout, new),
    );
    // The records of the pages `t` names and `other` (its sorted page ids) does not.
    let alone = |t: &Records<R>, other: &[u64]| -> Result<Vec<u8>> {
        let mut body = Vec::new();
        for (p, page) in t.pages.iter().enumerate() {
            if page.id.is_none_or(|id| other.binary_search(&id).is_err()) {
                body.extend_from_slice(t.body(p)?);
            }
        }
        Ok(body)
    };
    let (gone, kept) = (alone(&old, &new_pages)?, alone(&new, &old_pages)?);
    let (front, back) = crate::nodes::common_records(&gone, &kept, R);
    let middle = |body: &[u8]| -> Vec<u64> {
        let records = body.len() / R;
        body[front * R..(records - back) * R]
            .chunks_exact(R)
            .map(|r| layout.id(r))
            .collect()
    };
    let mut kept = middle(&kept);
    kept.sort_unstable();
    released.extend(
        middle(&gone)
            .into_iter()
            .filter(|id| kept.binary_search(id).is_err()),
    );
    Ok(released)
}

/// The first of `0..len` for which `pred` fails, `pred` holding up to some point and
/// failing after it.
pub fn partition(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::nodes::MemoryNodes;

    const RECORD: usize = 24;
    type Record = [u8; RECORD];

    const LAYOUT: Layout<RECORD> = Layout {
        key_at: 0,
        id_at: 8,
        count_at: 16,
        bytes_at: 20,
        names_nodes: true,
    };

    fn record(key: u64, id: u64, count: u32) -> Record {
        let mut r = [0u8; RECORD];
        r[..8].copy_from_slice(&key.to_le_bytes());
        r[8..16].copy_from_slice(&id.to_le_bytes());
        r[16..20].copy_from_slice(&count.to_le_bytes());
        r[20..24].copy_from_slice(&(count * 10).to_le_bytes());
        r
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Records of this key (ties with any already there), each of this count, at
        /// their place in the order: this many.
        Insert(u64, u32, usize),
        /// Removes the record at this fraction of the table.
        Remove(f64),
        /// Removes up to this many records from this fraction of the table on, across
        /// pages.
        RemoveRun(f64, usize),
        /// Sets the count of the record at this fraction of the table.
        Recount(f64, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<u64>(), 1..50u32, 1..40usize).prop_map(|(k, c, n)| Op::Insert(k, c, n)),
            2 => (0.0..1.0f64).prop_map(Op::Remove),
            1 => (0.0..1.0f64, 1..100usize).prop_map(|(at, n)| Op::RemoveRun(at, n)),
            1 => (0.0..1.0f64, 1..50u32).prop_map(|(at, c)| Op::Recount(at, c)),
        ]
    }

    fn ids(nodes: &MemoryNodes, table: &[u8]) -> Vec<u64> {
        let mut ids: Vec<u64> = super::nodes(nodes, LAYOUT, table)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Checks that the table `table`, written by [`Records::finish`], is in the form its
    /// length calls for.
    fn check_form(table: &[u8], len: usize) {
        if is_paged::<RECORD>(table) {
            assert!(len > INLINE_AGAIN, "a short table is inline");
            for p in page_refs(table) {
                assert!(
                    (1..=PAGE_RECORDS).contains(&p.records),
                    "a page of {}",
                    p.records
                );
            }
        } else {
            assert!(len <= PAGE_RECORDS, "a long table is paged");
        }
    }

    /// Checks the stored `table` against the model `want`, through a fresh reader.
    fn check(nodes: &MemoryNodes, table: &[u8], want: &[Record], probes: &[u64]) {
        let t = Records::new(nodes, LAYOUT, table);
        let counts: Vec<u64> = want.iter().map(|r| LAYOUT.count(r)).collect();
        let total: u64 = counts.iter().sum();
        assert_eq!(t.len(), want.len());
        assert_eq!(t.count() as u64, total);
        assert_eq!(count::<RECORD>(table) as u64, total);
        assert_eq!(t.all().unwrap(), want);
        for &k in probes {
            let expect = want.partition_point(|r| LAYOUT.key(r) <= k);
            assert_eq!(t.partition(|key| key <= k).unwrap(), expect);
        }
        let mut before = 0;
        for (at, &c) in counts.iter().enumerate() {
            assert_eq!(t.elements_before(at).unwrap(), before);
            assert_eq!(t.by_element(before).unwrap(), (at, 0));
            assert_eq!(t.by_element(before + c - 1).unwrap(), (at, c - 1));
            before += c;
        }
        assert_eq!(t.elements_before(want.len()).unwrap(), total);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Tables edited in rounds of several changes, stored and read again after each
        /// round, hold what a plain vector of records holds; what each round releases is
        /// exactly what the old table names and the new does not; and the node store
        /// ends with the final table's pages alone.
        #[test]
        fn paged_tables_behave_as_vectors(
            rounds in prop::collection::vec(prop::collection::vec(op(), 1..60), 1..20),
            probes in prop::collection::vec(any::<u64>(), 4),
        ) {
            let nodes = MemoryNodes::default();
            let mut want: Vec<Record> = Vec::new();
            let mut stored = Records::of(&nodes, LAYOUT, 0, &[]).finish().unwrap();
            let mut next_id = 1u64 << 40;
            for round in rounds {
                let mut t = Records::new(&nodes, LAYOUT, &stored);
                for op in round {
                    match op {
                        Op::Insert(key, count, n) => {
                            let at = t.partition(|k| k <= key).unwrap();
                            let run: Vec<Record> = (0..n as u64)
                                .map(|i| record(key, next_id + i, count))
                                .collect();
                            next_id += n as u64;
                            t.splice(at..at, &run).unwrap();
                            want.splice(at..at, run);
                            t.set_count(t.count() + n * count as usize);
                        }
                        Op::Remove(_) | Op::RemoveRun(..) | Op::Recount(..) if want.is_empty() => {}
                        Op::Remove(f) => {
                            let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                            t.splice(at..at + 1, &[]).unwrap();
                            let gone = want.remove(at);
                            t.set_count(t.count() - LAYOUT.count(&gone) as usize);
                        }
                        Op::RemoveRun(f, n) => {
                            let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                            let end = (at + n).min(want.len());
                            t.splice(at..end, &[]).unwrap();
                            let gone: u64 = want.drain(at..end).map(|r| LAYOUT.count(&r)).sum();
                            t.set_count(t.count() - gone as usize);
                        }
                        Op::Recount(f, count) => {
                            let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                            let old = want[at];
                            let r = record(LAYOUT.key(&old), LAYOUT.id(&old), count);
                            t.splice(at..at + 1, &[r]).unwrap();
                            want[at] = r;
                            t.set_count(t.count() + count as usize - LAYOUT.count(&old) as usize);
                        }
                    }
                }
                let new = t.finish().unwrap();
                check(&nodes, &new, &want, &probes);
                check_form(&new, want.len());
                let (old_ids, new_ids) = (ids(&nodes, &stored), ids(&nodes, &new));
                let mut released = dropped(&nodes, LAYOUT, &stored, &new).unwrap();
                released.sort_unstable();
                let expect: Vec<u64> =
                    old_ids.iter().copied().filter(|id| new_ids.binary_search(id).is_err()).collect();
                prop_assert_eq!(&released, &expect);
                for id in released.into_iter().filter(|&id| id < 1 << 40) {
                    nodes.discard(id);
                }
                stored = new;
            }
            let pages = if is_paged::<RECORD>(&stored) { page_refs(&stored).count() } else { 0 };
            prop_assert_eq!(nodes.len(), pages);
        }
    }

    /// A root that disagrees with its page (a store damaged on disk) gets an error
    /// naming the page, not a panic or a misread.
    #[test]
    fn a_page_unlike_its_root_is_an_error() {
        let nodes = MemoryNodes::default();
        let records: Vec<Record> = (0..300).map(|i| record(i, i + 1, 1)).collect();
        let mut table = Records::of(&nodes, LAYOUT, 300, &records).finish().unwrap();
        assert!(is_paged::<RECORD>(&table));
        // The first page's record count, one too many.
        let at = PAGED_HEADER + 8;
        let n = u32::from_le_bytes(table[at..at + 4].try_into().unwrap());
        table[at..at + 4].copy_from_slice(&(n + 1).to_le_bytes());
        let damaged = Records::new(&nodes, LAYOUT, &table[..]);
        match damaged.get(0) {
            Err(engine::Error::Corruption { detail, .. }) => {
                assert!(detail.contains("root says"), "{detail}")
            }
            other => panic!("read a damaged page as {other:?}"),
        }
    }

    #[test]
    fn a_table_stored_inline_before_pages_reads_and_pages_when_edited() {
        let nodes = MemoryNodes::default();
        let want: Vec<Record> = (0..600).map(|i| record(i * 1000, i + 1, 3)).collect();
        let mut old = 1800u32.to_le_bytes().to_vec();
        old.extend(want.concat());
        check(&nodes, &old, &want, &[0, 999, 1000, 599_000, u64::MAX]);
        let mut t = Records::new(&nodes, LAYOUT, &old);
        t.splice(300..301, &[record(300_000, 9001, 4)]).unwrap();
        t.set_count(1801);
        let new = t.finish().unwrap();
        assert!(is_paged::<RECORD>(&new));
        check_form(&new, 600);
        let mut want = want;
        want[300] = record(300_000, 9001, 4);
        check(&nodes, &new, &want, &[0, 300_000, u64::MAX]);
        // Only the changed record's node is released, not the records moved to pages.
        assert_eq!(dropped(&nodes, LAYOUT, &old, &new).unwrap(), vec![301]);
        // One more change writes one page again.
        let mut t = Records::new(&nodes, LAYOUT, &new);
        t.splice(10..11, &[record(10_000, 9002, 5)]).unwrap();
        t.set_count(1803);
        let newer = t.finish().unwrap();
        let released = dropped(&nodes, LAYOUT, &new, &newer).unwrap();
        assert_eq!(released.len(), 2, "one page and one node: {released:?}");
        assert!(released.contains(&11));
        let pages_written = page_refs(&newer)
            .filter(|p| !page_refs(&new).any(|q| q.id == p.id))
            .count();
        assert_eq!(pages_written, 1);
    }
}
