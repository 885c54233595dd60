//! A node table's records, kept in pages once the table is long, so that a write
//! copies (and, on an engine, logs) the page of the records it changes and a short
//! root, not every record: at 63,000 members a sorted set's two tables held ~600
//! records each, 28 KB that every ZADD copied and logged, and a list of a million
//! short elements has a table of 20 KB. Used by the tables of long lists
//! (`list_nodes.rs`, 16-byte records in list order), of large hashes and sets
//! (`field_nodes.rs`) and of sorted sets' order (`score_nodes.rs`, both 24-byte
//! records ordered by a key), of long streams (`stream_nodes.rs`, 40-byte records in
//! ID order) and of consumer groups' pending entries (`stream_pending.rs`, 40-byte
//! records that are the entries). Each record counts the elements of its node.
//!
//! ```text
//! table = count (u32 LE: elements) | record*            inline, up to `inline_records`
//!       | count (u64 LE: elements) | page*              paged, up to GROUP_PAGES pages
//!       | count (u64 LE: elements) | 2 (u64 LE) | group*   grouped
//! page  = id (u64 LE) | records (u32 LE) | elements (u32 LE)
//!         | key (u64 LE: the key of its first record)
//! group = id (u64 LE) | records (u32 LE) | elements (u32 LE) | key (u64 LE)
//! ```
//!
//! The forms are told apart by length: an inline table is 4 more than a multiple of
//! its record size, a paged root 8 more than a multiple of 24, a grouped root 16 more
//! (its second word, the levels of nodes under it, is 2). A page's records are a node
//! of their own in the [`NodeStore`]; so is a group's pages (`page*`: the pages' entries
//! as a paged root holds them), and a group's entry totals the records and elements of
//! its pages and holds its first page's key. Pages go in groups once a table has more
//! than [`GROUP_PAGES`], so that a write to a table of a million records copies a page,
//! a group of pages and a root of a few hundred bytes, not a root naming every page
//! (at 200,000 pending entries a group's root was 50 KB, rewritten by each
//! XREADGROUP). Pages and groups are written once and never changed, as the
//! collections' nodes are: a write makes new pages and groups for what it changed and
//! the root names them, so an id names the same records in every table that holds it,
//! and what a write releases is the groups, pages and nodes the old table names and the
//! new one does not ([`dropped`]; an edit notes them as it goes,
//! [`Records::finish_releasing`]). Tables stored inline before pages existed, and paged
//! before groups, read unchanged. There is no third level: a root names a group per
//! ~9,000 records (at most 128 pages of 128 records, cut to 96 of 96 when written), so
//! a table of ten million records has a root of ~26 KB.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use engine::Result;

use crate::entry::TRAILER_MAX;
use crate::nodes::NodeStore;

/// Bytes of a page's or a group's entry.
const REF: usize = 24;

/// Records a page holds at most, and a table inline unless its layout says fewer. At 24
/// bytes a record, a page is as large as a 3 KB node; at 16, a 2 KB one.
pub const PAGE_RECORDS: usize = 128;

/// Pages a group names at most; a table with more pages has them in groups. Small in
/// unit tests, so that their tables of a few thousand records are grouped.
const GROUP_PAGES: usize = if cfg!(test) { 8 } else { 128 };

/// How each level's nodes are cut and joined when a write stores them again.
#[derive(Clone, Copy)]
struct Level {
    /// Bytes of one of its entries: a record or a page's entry.
    unit: usize,
    /// Entries a node holds at most.
    most: usize,
    /// Entries a node is cut to, so that the next few writes to it do not cut it again.
    fill: usize,
    /// A changed node with fewer entries than this takes in a neighbour.
    least: usize,
}

const fn level(unit: usize, most: usize) -> Level {
    Level {
        unit,
        most,
        fill: most * 3 / 4,
        least: most / 4,
    }
}

const INLINE_HEADER: usize = 4;
const PAGED_HEADER: usize = 8;
const GROUPED_HEADER: usize = 16;

/// The second word of a grouped root: the levels of nodes under it (groups, pages).
const GROUPED_LEVELS: u64 = 2;

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
    /// Records a table keeps in its root at most (at most [`PAGE_RECORDS`]); one with
    /// more is paged, and a paged one left with half as many or fewer is inline again.
    pub inline_records: u16,
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

    /// The entry naming the page of `records` (of this layout) stored as node `id`.
    fn page_entry(&self, id: u64, records: &[u8]) -> Entry {
        Entry {
            id,
            records: records.len() / R,
            elements: records.chunks_exact(R).map(|r| self.count(r)).sum(),
            key: self.key(records),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Inline,
    Paged,
    Grouped,
}

/// The form of `table`, of `R`-byte records, by its length (and a grouped root's
/// levels); `None` if it has no form's. An inline table is 4 bytes more than a
/// multiple of `R` (so of 8, for the sizes used), a paged root 8 more than a multiple
/// of 24, a grouped one 16 more: no length has two forms.
fn form_of<const R: usize>(table: &[u8]) -> Option<Form> {
    const {
        assert!(
            R == 16 || R == 24 || R == 40,
            "record sizes whose forms differ in length"
        )
    };
    let len = table.len();
    if len >= INLINE_HEADER && (len - INLINE_HEADER).is_multiple_of(R) {
        Some(Form::Inline)
    } else if len >= PAGED_HEADER && (len - PAGED_HEADER).is_multiple_of(REF) {
        Some(Form::Paged)
    } else {
        (len >= GROUPED_HEADER
            && (len - GROUPED_HEADER).is_multiple_of(REF)
            && word(table, 8, 8) == GROUPED_LEVELS)
            .then_some(Form::Grouped)
    }
}

fn stored_form<const R: usize>(table: &[u8]) -> Form {
    let len = table.len();
    form_of::<R>(table).unwrap_or_else(|| panic!("a node table of {len} bytes"))
}

/// Whether `table`, of `R`-byte records, is in pages (`Some(true)`) or inline
/// (`Some(false)`) by its length; `None` if it has no form's length.
pub fn form<const R: usize>(table: &[u8]) -> Option<bool> {
    form_of::<R>(table).map(|f| f != Form::Inline)
}

/// A page or a group as the node above it names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    id: u64,
    records: usize,
    elements: u64,
    key: u64,
}

impl Entry {
    fn read(bytes: &[u8]) -> Entry {
        Entry {
            id: word(bytes, 0, 8),
            records: word(bytes, 8, 4) as usize,
            elements: word(bytes, 12, 4),
            key: word(bytes, 16, 8),
        }
    }

    /// The counts fit 32 bits by the bounds: a group names at most 128 pages of at most
    /// 128 records, each counting one element or a node's, and a node of at most
    /// [`crate::nodes::NODE_BYTES`] (4 KB) holds fewer elements than it has bytes (one
    /// element over that alone): at most ~67 million elements a group.
    fn bytes(&self) -> [u8; REF] {
        let records = u32::try_from(self.records).expect("a group's records fit 32 bits");
        let elements = u32::try_from(self.elements).expect("a group's elements fit 32 bits");
        let mut bytes = [0u8; REF];
        bytes[..8].copy_from_slice(&self.id.to_le_bytes());
        bytes[8..12].copy_from_slice(&records.to_le_bytes());
        bytes[12..16].copy_from_slice(&elements.to_le_bytes());
        bytes[16..].copy_from_slice(&self.key.to_le_bytes());
        bytes
    }

    fn write(&self, out: &mut Vec<u8>) {
        // Built whole and added at once: a root is a few hundred of these, and four
        // appends each were 4% of a ZADD's time.
        out.extend_from_slice(&self.bytes());
    }

    /// The entry naming the group of the pages `entries` (as stored) stored as node `id`.
    fn of_group(id: u64, pages: &[u8]) -> Entry {
        let mut group = Entry {
            id,
            records: 0,
            elements: 0,
            key: Entry::read(pages).key,
        };
        for page in entries(pages) {
            group.records += page.records;
            group.elements += page.elements;
        }
        group
    }
}

fn entries(bytes: &[u8]) -> impl ExactSizeIterator<Item = Entry> + '_ {
    bytes.chunks_exact(REF).map(Entry::read)
}

/// The elements a stored table of `R`-byte records counts.
pub fn count<const R: usize>(table: &[u8]) -> usize {
    match stored_form::<R>(table) {
        Form::Inline => word(table, 0, 4) as usize,
        Form::Paged | Form::Grouped => word(table, 0, 8) as usize,
    }
}

/// The records of page `id`, which the entry naming it (in the node `above`, a root
/// or a group) says are `records` of `R` bytes; a corruption error if they are not.
fn read_page<'a, const R: usize>(
    nodes: &'a dyn NodeStore,
    id: u64,
    records: usize,
    above: &str,
) -> Result<Cow<'a, [u8]>> {
    let body = nodes.read(id)?;
    if body.len() != records * R {
        return Err(corrupt(format!(
            "page {id} of a node table holds {} bytes, its {above} says {records} records",
            body.len()
        )));
    }
    Ok(body)
}

/// The page entries of group `id`: a corruption error if they are not whole entries.
fn read_group(nodes: &dyn NodeStore, id: u64) -> Result<Cow<'_, [u8]>> {
    let pages = nodes.read(id)?;
    if pages.is_empty() || !pages.len().is_multiple_of(REF) {
        return Err(corrupt(format!(
            "group {id} of a node table holds {} bytes",
            pages.len()
        )));
    }
    Ok(pages)
}

/// Whether the page entries `pages` of a group total the records and elements its entry
/// `group` says; a corruption error if not.
fn check_group(pages: &[u8], group: Entry) -> Result<()> {
    let named = Entry::of_group(group.id, pages);
    if (named.records, named.elements) != (group.records, group.elements) {
        return Err(corrupt(format!(
            "group {} of a node table names {} records of {} elements, its root says {} \
             records of {}",
            group.id, named.records, named.elements, group.records, group.elements
        )));
    }
    Ok(())
}

fn corrupt(detail: String) -> engine::Error {
    engine::Error::Corruption {
        file: Default::default(),
        offset: 0,
        detail,
    }
}

/// A page (its contents: its records) or a group of pages (its contents: its pages)
/// of a table being read or edited, with what its entry says of it.
struct Node<T> {
    /// As stored; `None` for a page or group this edit changed (and for an inline
    /// table's records and the pages of a root with no groups), written again if the
    /// table is stored in pages, and whose contents are loaded.
    id: Option<u64>,
    records: usize,
    elements: u64,
    key: u64,
    contents: OnceCell<T>,
}

type Page<'a> = Node<Cow<'a, [u8]>>;
type Group<'a> = Node<Pages<'a>>;

impl<T> Node<T> {
    fn stored(entry: Entry) -> Self {
        Node {
            id: Some(entry.id),
            records: entry.records,
            elements: entry.elements,
            key: entry.key,
            contents: OnceCell::new(),
        }
    }

    /// Its entry, if it is as stored.
    fn entry(&self) -> Option<Entry> {
        Some(Entry {
            id: self.id?,
            records: self.records,
            elements: self.elements,
            key: self.key,
        })
    }
}

impl<'a> Page<'a> {
    /// A page of the records `body` (of `layout`), not stored yet.
    fn changed<const R: usize>(layout: Layout<R>, body: Cow<'a, [u8]>) -> Self {
        let elements = body.chunks_exact(R).map(|r| layout.count(r)).sum();
        Page::unstored(layout, body, elements)
    }

    /// A page of the records `body` (of `layout`), counting `elements`, not stored as a
    /// page.
    fn unstored<const R: usize>(layout: Layout<R>, body: Cow<'a, [u8]>, elements: u64) -> Self {
        let records = body.len() / R;
        Node {
            id: None,
            records,
            elements,
            key: if records > 0 { layout.key(&body) } else { 0 },
            contents: OnceCell::from(body),
        }
    }
}

/// The pages of a group, and the index (within the group) of each page's first record
/// and past the last.
struct Pages<'a> {
    list: Vec<Page<'a>>,
    starts: Vec<usize>,
}

/// The index of the first record of each of `list`, and past the last.
fn starts<T>(list: &[Node<T>]) -> Vec<usize> {
    starts_of(list.iter().map(|node| node.records))
}

impl<'a> Pages<'a> {
    fn new(list: Vec<Page<'a>>) -> Self {
        let starts = starts(&list);
        Pages { list, starts }
    }

    fn records(&self) -> usize {
        *self.starts.last().expect("starts end with the length")
    }

    /// The page holding record `at`, and `at`'s place in it.
    fn page_of(&self, at: usize) -> (usize, usize) {
        assert!(at < self.records(), "record {at} of {}", self.records());
        let p = self.starts.partition_point(|&s| s <= at) - 1;
        (p, at - self.starts[p])
    }

    /// The records of page `p`, of `R` bytes each, read from `nodes` when first needed.
    fn body<const R: usize>(&self, nodes: &'a dyn NodeStore, p: usize) -> Result<&[u8]> {
        let page = &self.list[p];
        if let Some(body) = page.contents.get() {
            return Ok(body);
        }
        let id = page.id.expect("a page not loaded is stored");
        let body = read_page::<R>(nodes, id, page.records, "root")?;
        Ok(page.contents.get_or_init(|| body))
    }

    /// Replaces records `range` (of this group) by `records`, noting in `replaced` the
    /// stored pages and the records it replaced; changes nothing if a page cannot be
    /// read.
    fn splice<const R: usize>(
        &mut self,
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        range: Range<usize>,
        records: &[[u8; R]],
        replaced: &mut Replaced,
    ) -> Result<()> {
        let len = self.records();
        // The pages the range lies in; an empty range goes to the page of the record
        // before it, so that appending to a page's end stays in that page.
        let first = match (range.start, len) {
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
            body.extend_from_slice(self.body::<R>(nodes, p)?);
        }
        let base = self.starts[first];
        let cut = (range.start - base) * R..(range.end - base) * R;
        replaced
            .stored
            .extend(self.list[first..=last].iter().filter_map(|p| p.id));
        replaced.spliced(layout, &body[cut.clone()], records);
        body.splice(cut, records.concat());
        // An emptied page goes, so that the pages' keys stay in order; a group keeps
        // one page, however short.
        let page = (!body.is_empty() || self.list.len() == last - first + 1)
            .then(|| Page::changed(layout, Cow::Owned(body)));
        let mut list = std::mem::take(&mut self.list);
        list.splice(first..=last, page);
        *self = Pages::new(list);
        Ok(())
    }
}

impl<'a> Group<'a> {
    /// A group of `pages`, not stored (as a group) yet.
    fn changed(pages: Pages<'a>) -> Self {
        Node {
            id: None,
            records: pages.records(),
            elements: pages.list.iter().map(|p| p.elements).sum(),
            key: pages.list.first().map_or(0, |p| p.key),
            contents: OnceCell::from(pages),
        }
    }
}

/// A table's groups, and the index (within the table) of each group's first record
/// and past the last.
struct Groups<'a> {
    list: Vec<Group<'a>>,
    starts: Vec<usize>,
}

impl<'a> Groups<'a> {
    fn new(list: Vec<Group<'a>>) -> Self {
        let starts = starts(&list);
        Groups { list, starts }
    }

    fn len(&self) -> usize {
        *self.starts.last().expect("starts end with the length")
    }

    fn group_of(&self, at: usize) -> usize {
        assert!(at < self.len(), "record {at} of {}", self.len());
        self.starts.partition_point(|&s| s <= at) - 1
    }
}

/// The entries of a root in pages or groups: its pages' or its groups'.
fn root_entries(form: Form, root: &[u8]) -> impl ExactSizeIterator<Item = Entry> + '_ {
    let header = match form {
        Form::Paged => PAGED_HEADER,
        Form::Grouped => GROUPED_HEADER,
        Form::Inline => unreachable!("an inline table names no pages"),
    };
    entries(&root[header..])
}

/// What an edit of a table replaced, so that the store can release what the old table
/// named and the new one does not without reading both again ([`dropped`]).
#[derive(Default)]
struct Replaced {
    /// Pages and groups, as stored, that the edit changed, merged into a neighbour's
    /// rewrite or dropped. A page or group is written once and never again, so the new
    /// table names none of them.
    stored: Vec<u64>,
    /// The nodes of the records spliced out and in: released are those out and not
    /// back in (a node the edit wrote and replaced again went both ways, and a record
    /// spliced out and back was kept).
    spliced_out: Vec<u64>,
    spliced_in: Vec<u64>,
}

impl Replaced {
    /// Notes the nodes of the records `out` (of `layout`) spliced out and of `records`
    /// spliced in, if the records name nodes.
    fn spliced<const R: usize>(&mut self, layout: Layout<R>, out: &[u8], records: &[[u8; R]]) {
        if layout.names_nodes {
            self.spliced_out
                .extend(out.chunks_exact(R).map(|r| layout.id(r)));
            self.spliced_in.extend(records.iter().map(|r| layout.id(r)));
        }
    }
}

/// A table's records, read where they lie and groups and pages loaded as they are
/// first needed; changed in place by an edit, which [`Records::finish`] stores.
pub struct Records<'a, const R: usize> {
    nodes: &'a dyn NodeStore,
    layout: Layout<R>,
    count: u64,
    /// The form it was stored in; `Inline` for a table not stored yet.
    form: Form,
    /// Read from the root when first needed (a table in pages or groups): a list's
    /// push or pop mostly changes its root's ends alone and never looks at them.
    groups: OnceCell<Groups<'a>>,
    replaced: Replaced,
    /// The table as stored, in pages or groups, until an edit changes it other than by
    /// `patched` and the count: written back as it is if nothing changed. A list's
    /// push or pop mostly changes its root's ends alone, and writing again a table of
    /// many pages costs a walk of them all. Kept until the groups are changed.
    /// Boxed: an editor's enum holds a table beside lighter forms.
    stored: Option<Box<Stored<'a>>>,
}

/// A table's root as stored, in pages or groups, and what an edit wrote over in it.
struct Stored<'a> {
    root: Cow<'a, [u8]>,
    /// Pages of the table whose records an edit wrote over while its groups were not
    /// read (each page once, in the order first written): the table is then the
    /// stored root with these pages' records, and its count. Reading the groups
    /// applies them. Most writes to a large hash, set or sorted set change one node's
    /// record, and building the lists of every page (and group) to find it and write
    /// it back was a fifth of an HSET's instructions in a paged table and two fifths
    /// in a grouped one (BENCHMARKS.md).
    patched: Vec<Patch>,
    /// Of a grouped root, the groups holding `patched` pages, their page entries as
    /// stored: written again with the patched pages' entries when the edit ends.
    patched_groups: Vec<PatchedGroup<'a>>,
    /// The index of the first record of each page (or group) the root names, and past
    /// the last, counted when first needed: an HSET into a large hash asks the table's
    /// length and the page holding a record four times, and each walk of a root of
    /// dozens of pages was ~200 instructions.
    starts: OnceCell<Vec<usize>>,
    /// Of a grouped root, [`Records::stored_page_starts`] of each group asked, by its
    /// place among the root's groups.
    group_starts: OnceCell<Box<[OnceCell<Vec<usize>>]>>,
}

impl Stored<'_> {
    /// [`Stored::starts`], of a root of `form`.
    fn starts(&self, form: Form) -> &[usize] {
        self.starts
            .get_or_init(|| starts_of(root_entries(form, &self.root).map(|e| e.records)))
    }
}

/// The index of the first record of each of the nodes of `records` records, and past
/// the last. Sized first, and extended rather than pushed to: grown by `push`, it cost
/// ~1,600 instructions in jemalloc's `rallocx` an HSET, and pushed to a record at a
/// time, 1,900 instructions for 128 records against 615.
fn starts_of(records: impl ExactSizeIterator<Item = usize>) -> Vec<usize> {
    let mut starts = Vec::with_capacity(records.len() + 1);
    starts.push(0);
    let mut at = 0;
    starts.extend(records.map(|n| {
        at += n;
        at
    }));
    starts
}

/// A page of a stored root, its records as an edit wrote them over.
struct Patch {
    /// Its group's place among a grouped root's groups; 0 in a paged root, whose pages
    /// are its one group's.
    group: usize,
    /// Its place among its group's pages.
    page: usize,
    records: Vec<u8>,
}

/// The page [`Records::overwrite_stored`] writes over.
enum PageToPatch {
    /// Patched before, at this place among the patches.
    Patched(usize),
    /// Not patched yet: its records as stored.
    Stored(Vec<u8>),
}

/// A group of a stored grouped root holding a patched page.
struct PatchedGroup<'a> {
    /// Its place among the root's groups.
    group: usize,
    /// Its pages' entries, as stored.
    pages: Cow<'a, [u8]>,
}

impl<'a, const R: usize> Records<'a, R> {
    /// The stored table `table`, its groups and pages (if any) read from `nodes` when
    /// needed.
    pub fn new(
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        table: impl Into<Cow<'a, [u8]>>,
    ) -> Self {
        let table = table.into();
        let form = stored_form::<R>(&table);
        let count = count::<R>(&table) as u64;
        let (groups, stored) = match form {
            Form::Grouped | Form::Paged => {
                let stored = Stored {
                    root: table,
                    patched: Vec::new(),
                    patched_groups: Vec::new(),
                    group_starts: OnceCell::new(),
                    starts: OnceCell::new(),
                };
                (OnceCell::new(), Some(Box::new(stored)))
            }
            Form::Inline => {
                let body = match table {
                    Cow::Borrowed(t) => Cow::Borrowed(&t[INLINE_HEADER..]),
                    Cow::Owned(mut t) => {
                        t.drain(..INLINE_HEADER);
                        Cow::Owned(t)
                    }
                };
                // Its count is its records': not counted again.
                let page = Page::unstored(layout, body, count);
                let groups = Groups::new(vec![Group::changed(Pages::new(vec![page]))]);
                (OnceCell::from(groups), None)
            }
        };
        let mut records = Records::of_groups(nodes, layout, count, form, groups);
        records.stored = stored;
        records
    }

    /// A table of `count` elements in `records`, none of them stored yet.
    pub fn of(
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        count: u64,
        records: &[[u8; R]],
    ) -> Self {
        let page = Page::changed(layout, Cow::Owned(records.concat()));
        let groups = Groups::new(vec![Group::changed(Pages::new(vec![page]))]);
        let mut table = Records::of_groups(nodes, layout, count, Form::Inline, groups.into());
        if layout.names_nodes {
            // None of them was in a stored table: spliced out again, none is released.
            let ids = records.iter().map(|r| layout.id(r));
            table.replaced.spliced_in.extend(ids);
        }
        table
    }

    fn of_groups(
        nodes: &'a dyn NodeStore,
        layout: Layout<R>,
        count: u64,
        form: Form,
        groups: OnceCell<Groups<'a>>,
    ) -> Self {
        Records {
            nodes,
            layout,
            count,
            form,
            groups,
            replaced: Replaced::default(),
            stored: None,
        }
    }

    /// The groups, read from the stored root when first needed, with its patches.
    fn groups(&self) -> &Groups<'a> {
        self.groups.get_or_init(|| {
            let stored = self
                .stored
                .as_deref()
                .expect("groups not read are as stored");
            // The pages of group `g`, whose entries are `pages`, patched.
            let patched = |g: usize, pages: &[u8]| {
                let mut list: Vec<Page> = entries(pages).map(Node::stored).collect();
                for patch in stored.patched.iter().filter(|patch| patch.group == g) {
                    let records = Cow::Owned(patch.records.clone());
                    list[patch.page] = Page::changed(self.layout, records);
                }
                Group::changed(Pages::new(list))
            };
            match self.form {
                Form::Paged => Groups::new(vec![patched(0, &stored.root[PAGED_HEADER..])]),
                Form::Grouped => {
                    let nodes = root_entries(self.form, &stored.root);
                    let mut list: Vec<Group> = nodes.map(Node::stored).collect();
                    for read in &stored.patched_groups {
                        list[read.group] = patched(read.group, &read.pages);
                    }
                    Groups::new(list)
                }
                Form::Inline => unreachable!("an inline table's groups are read when it is"),
            }
        })
    }

    /// Reads the groups, which are to be changed: the table is no longer as stored.
    fn groups_to_change(&mut self) {
        self.groups();
        // Its patches are in the groups.
        self.stored = None;
    }

    /// Records in the table.
    pub fn len(&self) -> usize {
        match self.groups.get() {
            Some(groups) => groups.len(),
            None => *self.stored_starts().last().expect("past the last"),
        }
    }

    /// Elements the table counts.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Sets the elements the table counts: stored in its root, whether or not a record
    /// changes (an edit brings its records' counts up to date when it ends).
    pub fn set_count(&mut self, count: usize) {
        self.count = count as u64;
    }

    /// The pages of group `g`, read from the node store when first needed.
    fn pages(&self, g: usize) -> Result<&Pages<'a>> {
        let group = &self.groups().list[g];
        if let Some(pages) = group.contents.get() {
            return Ok(pages);
        }
        let id = group.id.expect("a group not loaded is stored");
        let body = read_group(self.nodes, id)?;
        check_group(&body, group.entry().expect("stored"))?;
        let list: Vec<Page> = entries(&body).map(Node::stored).collect();
        let pages = Pages::new(list);
        Ok(group.contents.get_or_init(|| pages))
    }

    /// The records of page `p` of group `g`.
    fn body(&self, g: usize, p: usize) -> Result<&[u8]> {
        self.pages(g)?.body::<R>(self.nodes, p)
    }

    fn group_of(&self, at: usize) -> usize {
        self.groups().group_of(at)
    }

    /// The group and page holding record `at`, and `at`'s place in the page.
    fn find(&self, at: usize) -> Result<(usize, usize, usize)> {
        let g = self.group_of(at);
        let (p, i) = self.pages(g)?.page_of(at - self.groups().starts[g]);
        Ok((g, p, i))
    }

    /// Record `at`.
    pub fn get(&self, at: usize) -> Result<[u8; R]> {
        if self.unread() {
            let (g, p, i, pages) = self.stored_find(at)?;
            let body = self.stored_page(&pages, g, p)?;
            return Ok(body[i * R..(i + 1) * R].try_into().expect("a record"));
        }
        let (g, p, i) = self.find(at)?;
        let body = self.body(g, p)?;
        Ok(body[i * R..(i + 1) * R].try_into().expect("a record"))
    }

    /// The first record whose key fails `pred`, `pred` holding for the keys of the
    /// records up to some point and failing after it: reads one group and one page.
    pub fn partition(&self, pred: impl Fn(u64) -> bool) -> Result<usize> {
        if self.unread() {
            return self.stored_partition(pred);
        }
        let groups = self.groups();
        let g = groups.list.partition_point(|group| pred(group.key));
        let Some(g) = g.checked_sub(1) else {
            return Ok(0);
        };
        let pages = self.pages(g)?;
        // A group's key is its first page's: the page is found.
        let p = pages.list.partition_point(|page| pred(page.key)).max(1) - 1;
        let body = pages.body::<R>(self.nodes, p)?;
        let within = partition(body.len() / R, |i| pred(self.layout.key(&body[i * R..])));
        Ok(groups.starts[g] + pages.starts[p] + within)
    }

    /// [`Records::partition`] in the stored root and its patches, nothing built.
    fn stored_partition(&self, pred: impl Fn(u64) -> bool) -> Result<usize> {
        let g = match self.form {
            Form::Paged => 0,
            _ => {
                let n = self.stored_starts().len() - 1;
                let after = partition(n, |g| pred(self.stored_group_key(g)));
                let Some(g) = after.checked_sub(1) else {
                    return Ok(0);
                };
                g
            }
        };
        let pages = self.stored_group(g)?;
        let after = partition(pages.len() / REF, |p| {
            pred(self.stored_page_key(&pages, g, p))
        });
        // A paged root's first page's key is the table's, as a group's is.
        let Some(p) = after.checked_sub(1) else {
            return Ok(self.stored_starts()[g]);
        };
        let body = self.stored_page(&pages, g, p)?;
        let within = partition(body.len() / R, |i| pred(self.layout.key(&body[i * R..])));
        let before = match self.form {
            Form::Paged => self.stored_starts()[p],
            _ => self.stored_starts()[g] + self.stored_page_starts(g, &pages)[p],
        };
        Ok(before + within)
    }

    /// The last record whose key holds `pred` (the first record if none does), `pred`
    /// holding for the keys up to some point and failing after it: the record a point
    /// lookup wants, `get(partition(pred).max(1) - 1)`. A table as stored is searched
    /// where it lies, its root, one group and one page, with nothing built: an HGET of
    /// a hash of 100,000 fields spent a fifth of its time on the lists of pages that
    /// [`Records::partition`] builds, and their allocations (BENCHMARKS.md).
    pub fn last_where(&self, pred: impl Fn(u64) -> bool) -> Result<[u8; R]> {
        if self.groups.get().is_none() && self.patches().is_empty() {
            if let Some(record) = self.last_where_stored(&pred)? {
                return Ok(record);
            }
        }
        self.get(self.partition(pred)?.max(1) - 1)
    }

    /// [`Records::last_where`] in the stored root; `None` if it is not that simple (an
    /// inline table, or an empty page).
    fn last_where_stored(&self, pred: &impl Fn(u64) -> bool) -> Result<Option<[u8; R]>> {
        let Some(root) = self.stored_root() else {
            return Ok(None);
        };
        // Of `entries`, pages' or groups' entries as stored, the last whose key holds
        // (the first if none does).
        let last_holding = |entries: &[u8]| {
            let n = entries.len() / REF;
            let i = partition(n, |i| pred(Entry::read(&entries[i * REF..]).key));
            (n > 0).then(|| Entry::read(&entries[(i.max(1) - 1) * REF..]))
        };
        let page = match self.form {
            Form::Paged => last_holding(&root[PAGED_HEADER..]),
            Form::Grouped => {
                let Some(group) = last_holding(&root[GROUPED_HEADER..]) else {
                    return Ok(None);
                };
                last_holding(&read_group(self.nodes, group.id)?)
            }
            Form::Inline => None,
        };
        let Some(page) = page else { return Ok(None) };
        let body = read_page::<R>(self.nodes, page.id, page.records, self.above_pages())?;
        let n = body.len() / R;
        if n == 0 {
            return Ok(None);
        }
        let i = partition(n, |i| pred(self.layout.key(&body[i * R..]))).max(1) - 1;
        Ok(Some(body[i * R..(i + 1) * R].try_into().expect("a record")))
    }

    /// Whether the table is its stored root (in pages or groups), its patches and its
    /// count: its groups are not read.
    fn unread(&self) -> bool {
        self.groups.get().is_none()
    }

    /// [`Stored::starts`] of the stored root, while the groups are not changed.
    fn stored_starts(&self) -> &[usize] {
        let stored = self.stored.as_deref().expect("a table as stored");
        stored.starts(self.form)
    }

    /// The page entries of group `g` of the stored root, as stored: a paged root's own
    /// (its pages are one group's), or a grouped root's group's, read when not patched.
    fn stored_group(&self, g: usize) -> Result<Cow<'_, [u8]>> {
        let stored = self.stored.as_deref().expect("a table as stored");
        if self.form == Form::Paged {
            return Ok(Cow::Borrowed(&stored.root[PAGED_HEADER..]));
        }
        match stored.patched_groups.iter().find(|read| read.group == g) {
            Some(read) => Ok(Cow::Borrowed(&read.pages)),
            None => read_group(self.nodes, self.stored_group_entry(g).id),
        }
    }

    /// The entry of group `g` of the stored grouped root.
    fn stored_group_entry(&self, g: usize) -> Entry {
        let root = self.stored_root().expect("a table as stored");
        Entry::read(&root[GROUPED_HEADER + g * REF..])
    }

    /// The group and page of the stored root holding record `at` (a paged root's pages
    /// are group 0's), `at`'s place in the page, and the group's page entries.
    fn stored_find(&self, at: usize) -> Result<(usize, usize, usize, Cow<'_, [u8]>)> {
        let (e, within) = self.stored_entry_of(at);
        let pages = self.stored_group(e)?;
        let (g, p, i) = self.stored_find_in(e, within, &pages)?;
        Ok((g, p, i, pages))
    }

    /// The entry of the stored root (a page of a paged root, a group of a grouped one)
    /// holding record `at`, and `at`'s place in it.
    fn stored_entry_of(&self, at: usize) -> (usize, usize) {
        let starts = self.stored_starts();
        let records = *starts.last().expect("past the last");
        assert!(at < records, "record {at} of {records}");
        let e = starts.partition_point(|&s| s <= at) - 1;
        (e, at - starts[e])
    }

    /// [`Records::stored_find`] of the record `within` entry `e` of the stored root,
    /// whose group's page entries are `pages`.
    fn stored_find_in(
        &self,
        e: usize,
        within: usize,
        pages: &[u8],
    ) -> Result<(usize, usize, usize)> {
        if self.form == Form::Paged {
            return Ok((0, e, within));
        }
        let starts = self.stored_page_starts(e, pages);
        let group = self.stored_group_entry(e);
        let named = *starts.last().expect("past the last");
        if named != group.records {
            return Err(corrupt(format!(
                "group {} of a node table names {named} records, its root says {}",
                group.id, group.records
            )));
        }
        let p = starts.partition_point(|&s| s <= within) - 1;
        Ok((e, p, within - starts[p]))
    }

    /// The index (within group `g` of the stored grouped root, whose page entries are
    /// `pages`) of each page's first record, and past the last: counted once for each
    /// group an edit looks in (an HSET looks three times, a ZADD at a million members
    /// in two or three groups; a walk of the entries each time cost 570 instructions
    /// more an HSET, and a count kept for the first group only, 1,950 more a ZADD).
    fn stored_page_starts(&self, g: usize, pages: &[u8]) -> &[usize] {
        let stored = self.stored.as_deref().expect("a table as stored");
        let groups = || {
            let n = stored.starts(self.form).len() - 1;
            (0..n).map(|_| OnceCell::new()).collect()
        };
        stored.group_starts.get_or_init(groups)[g]
            .get_or_init(|| starts_of(entries(pages).map(|e| e.records)))
    }

    /// The root as stored, while the groups are not changed.
    fn stored_root(&self) -> Option<&[u8]> {
        self.stored.as_deref().map(|stored| &stored.root[..])
    }

    /// The pages patched while the groups were not read.
    fn patches(&self) -> &[Patch] {
        self.stored.as_deref().map_or(&[], |stored| &stored.patched)
    }

    /// The patch of page `p` of group `g`, if the edit wrote over that page.
    fn patch(&self, g: usize, p: usize) -> Option<&Patch> {
        self.patch_place(g, p).map(|at| &self.patches()[at])
    }

    /// Where [`Records::patch`] lies among the patches.
    fn patch_place(&self, g: usize, p: usize) -> Option<usize> {
        self.patches()
            .iter()
            .position(|patch| (patch.group, patch.page) == (g, p))
    }

    /// The key of group `g` of the stored grouped root: its first page's, which an
    /// edit may have written over.
    fn stored_group_key(&self, g: usize) -> u64 {
        match self.patch(g, 0) {
            Some(patch) if !patch.records.is_empty() => self.layout.key(&patch.records),
            _ => self.stored_group_entry(g).key,
        }
    }

    /// The key of page `p` of group `g` of the stored root, whose page entries are
    /// `pages` (the key of its first record, which an edit may have written over).
    fn stored_page_key(&self, pages: &[u8], g: usize, p: usize) -> u64 {
        match self.patch(g, p) {
            Some(patch) if !patch.records.is_empty() => self.layout.key(&patch.records),
            _ => Entry::read(&pages[p * REF..]).key,
        }
    }

    /// The records of page `p` of group `g` of the stored root, whose page entries are
    /// `pages`, as the edit left them.
    fn stored_page(&self, pages: &[u8], g: usize, p: usize) -> Result<Cow<'_, [u8]>> {
        if let Some(patch) = self.patch(g, p) {
            return Ok(Cow::Borrowed(&patch.records));
        }
        let page = Entry::read(&pages[p * REF..]);
        read_page::<R>(self.nodes, page.id, page.records, self.above_pages())
    }

    /// What names a stored table's pages, for an error's words.
    fn above_pages(&self) -> &'static str {
        match self.form {
            Form::Paged => "root",
            _ => "group",
        }
    }

    /// [`Records::overwrite`] in a table whose groups are not read: the page's records
    /// copied once and written over (and, in a grouped root, its group's entries read
    /// once), nothing else built; false, changing nothing, if the groups are read or
    /// the range spans pages.
    fn overwrite_stored(&mut self, range: &Range<usize>, records: &[[u8; R]]) -> Result<bool> {
        if !self.unread() {
            return Ok(false);
        }
        let (e, within) = self.stored_entry_of(range.start);
        let stored = self.stored.as_deref().expect("a table as stored");
        // A group not patched yet is read here, to be kept.
        let group = match self.form {
            Form::Grouped if !stored.patched_groups.iter().any(|read| read.group == e) => {
                let entry = self.stored_group_entry(e);
                Some((entry, read_group(self.nodes, entry.id)?))
            }
            _ => None,
        };
        let (page, body, g, p, i) = {
            let pages = match &group {
                Some((_, pages)) => Cow::Borrowed(&pages[..]),
                None => self.stored_group(e)?,
            };
            let (g, p, i) = self.stored_find_in(e, within, &pages)?;
            let page = Entry::read(&pages[p * REF..]);
            if i + records.len() > page.records {
                return Ok(false);
            }
            let body = match self.patch_place(g, p) {
                Some(at) => PageToPatch::Patched(at),
                None => PageToPatch::Stored(self.stored_page(&pages, g, p)?.into_owned()),
            };
            (page, body, g, p, i)
        };
        let stored = self.stored.as_mut().expect("read above");
        if let Some((entry, pages)) = group {
            // Checked once, as it is to be written again: its entry is made anew from
            // its pages' (a read of a record needs only their records).
            check_group(&pages, entry)?;
            self.replaced.stored.push(entry.id);
            stored.patched_groups.push(PatchedGroup { group: g, pages });
        }
        let patched = &mut stored.patched;
        let patch = match body {
            PageToPatch::Patched(at) => &mut patched[at],
            PageToPatch::Stored(records) => {
                self.replaced.stored.push(page.id);
                patched.push(Patch {
                    group: g,
                    page: p,
                    records,
                });
                patched.last_mut().expect("pushed")
            }
        };
        let cut = &mut patch.records[i * R..(i + records.len()) * R];
        self.replaced.spliced(self.layout, cut, records);
        for (old, new) in cut.chunks_exact_mut(R).zip(records) {
            old.copy_from_slice(new);
        }
        Ok(true)
    }

    /// The root of a table whose groups were not read, as the edit left it: the stored
    /// root with its count, and the entries of its patched pages (and groups), written
    /// now; `None` if a patched page or group is to be joined with a neighbour, or the
    /// table is to change form, as the general way ([`Records::finish_noting`]) would
    /// (a paged root kept within [`GROUP_PAGES`] pages; a grouped root with a group as
    /// stored).
    fn patched_root(&self) -> Option<Vec<u8>> {
        if !self.unread() {
            return None;
        }
        let stored = self.stored.as_deref().expect("a table as stored");
        let header = match self.form {
            Form::Paged => PAGED_HEADER,
            Form::Grouped => GROUPED_HEADER,
            Form::Inline => unreachable!("an inline table's groups are read when it is"),
        };
        let entries = &stored.root[header..];
        let n = entries.len() / REF;
        let (page_level, group_level) = (level(R, PAGE_RECORDS), level(REF, GROUP_PAGES));
        let within =
            |level: Level, bytes: usize| (level.least..=level.most).contains(&(bytes / level.unit));
        let stays = match self.form {
            Form::Paged => n <= GROUP_PAGES,
            _ => {
                stored.patched_groups.len() < n
                    && stored
                        .patched_groups
                        .iter()
                        .all(|read| within(group_level, read.pages.len()))
            }
        };
        if !stays
            || self.stays_inline()
            || !stored
                .patched
                .iter()
                .all(|patch| within(page_level, patch.records.len()))
        {
            return None;
        }
        // The stored entries copied whole, the patched ones written over: a root names
        // dozens of pages or groups, an edit patches one or two.
        let mut root = Vec::with_capacity(header + entries.len() + TRAILER_MAX);
        root.extend_from_slice(&self.count.to_le_bytes());
        root.extend_from_slice(&stored.root[8..]);
        if self.form == Form::Paged {
            // Its elements are its count, which the edit keeps.
            self.write_patches(0, &mut root[PAGED_HEADER..]);
            return Some(root);
        }
        for read in &stored.patched_groups {
            let mut pages = read.pages.to_vec();
            let more = self.write_patches(read.group, &mut pages);
            let at = GROUPED_HEADER + read.group * REF;
            let before = Entry::read(&root[at..]);
            // Its records as stored (an overwrite keeps them), its elements as stored
            // and changed (checked when the group was first patched): not counted again.
            let group = Entry {
                id: self.nodes.write(&pages),
                records: before.records,
                elements: before.elements.checked_add_signed(more).expect("elements"),
                key: Entry::read(&pages).key,
            };
            debug_assert_eq!(group, Entry::of_group(group.id, &pages));
            root[at..at + REF].copy_from_slice(&group.bytes());
        }
        Some(root)
    }

    /// Writes the patched pages of group `g` to the node store, and their entries over
    /// theirs in `pages`, the group's page entries; how many more elements they count.
    fn write_patches(&self, g: usize, pages: &mut [u8]) -> i64 {
        let mut more = 0;
        for patch in self.patches().iter().filter(|patch| patch.group == g) {
            let records = &patch.records;
            let at = patch.page * REF;
            let before = Entry::read(&pages[at..]);
            debug_assert_eq!(records.len() / R, before.records);
            let page = self.layout.page_entry(self.nodes.write(records), records);
            more += page.elements as i64 - before.elements as i64;
            pages[at..at + REF].copy_from_slice(&page.bytes());
        }
        more
    }

    /// The first record for which `pred` fails, `pred` holding up to some point and
    /// failing after it, for all records whose key is below `key` and for none whose
    /// key is above: finds the records of key `key` by their keys (a page at each
    /// end), then reads those it needs among them (records of one key may span pages).
    pub fn partition_at_key(&self, key: u64, pred: impl Fn(&[u8; R]) -> bool) -> Result<usize> {
        let lo = self.partition(|k| k < key)?;
        let hi = self.partition(|k| k <= key)?;
        let mut failed = None;
        let within = partition(hi - lo, |i| match self.get(lo + i) {
            Ok(r) => pred(&r),
            Err(e) => {
                failed.get_or_insert(e);
                false
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(lo + within),
        }
    }

    /// Elements the records before `at` count: reads one group and one page.
    pub fn elements_before(&self, at: usize) -> Result<u64> {
        if at == self.len() {
            return Ok(self.count);
        }
        let (g, p, i) = self.find(at)?;
        let pages = self.pages(g)?;
        let before: u64 = self.groups().list[..g]
            .iter()
            .map(|group| group.elements)
            .sum::<u64>()
            + pages.list[..p]
                .iter()
                .map(|page| page.elements)
                .sum::<u64>();
        let body = pages.body::<R>(self.nodes, p)?;
        let within: u64 = (0..i).map(|j| self.layout.count(&body[j * R..])).sum();
        Ok(before + within)
    }

    /// Elements the records count: the table's count, but for an edit that keeps the
    /// count current and brings its records up to date only when it ends.
    pub fn recorded(&self) -> u64 {
        self.groups().list.iter().map(|group| group.elements).sum()
    }

    /// The record whose node holds element `rank` (counted over the records in order),
    /// and `rank`'s place in that node: reads one group and one page.
    pub fn by_element(&self, rank: u64) -> Result<(usize, u64)> {
        let mut rest = rank;
        let groups = self.groups();
        for (g, group) in groups.list.iter().enumerate() {
            if rest >= group.elements {
                rest -= group.elements;
                continue;
            }
            let pages = self.pages(g)?;
            for (p, page) in pages.list.iter().enumerate() {
                if rest >= page.elements {
                    rest -= page.elements;
                    continue;
                }
                let body = pages.body::<R>(self.nodes, p)?;
                for i in 0..page.records {
                    let n = self.layout.count(&body[i * R..]);
                    if rest < n {
                        return Ok((groups.starts[g] + pages.starts[p] + i, rest));
                    }
                    rest -= n;
                }
            }
        }
        panic!("element {rank} of {}", self.recorded())
    }

    /// Every record, in order: reads every group and page.
    pub fn all(&self) -> Result<Vec<[u8; R]>> {
        let mut out = Vec::with_capacity(self.len());
        for g in 0..self.groups().list.len() {
            for p in 0..self.pages(g)?.list.len() {
                out.extend(
                    self.body(g, p)?
                        .chunks_exact(R)
                        .map(|r| <[u8; R]>::try_from(r).expect("a record")),
                );
            }
        }
        Ok(out)
    }

    /// Replaces records `range` by `records`, which keep the table's order with their
    /// neighbours (the caller's to check: only it knows how its keys compare).
    pub fn splice(&mut self, range: Range<usize>, records: &[[u8; R]]) -> Result<()> {
        assert!(range.start <= range.end && range.end <= self.len());
        if !range.is_empty()
            && range.len() == records.len()
            && (self.overwrite_stored(&range, records)? || self.overwrite(&range, records)?)
        {
            return Ok(());
        }
        // The groups the range lies in, chosen as `Pages::splice` chooses pages.
        let first = match (range.start, self.len()) {
            (_, 0) | (0, _) => 0,
            (s, _) if s == range.end => self.group_of(s - 1),
            (s, _) => self.group_of(s),
        };
        let last = match range.end > range.start {
            true => self.group_of(range.end - 1),
            false => first,
        };
        for g in first..=last {
            self.pages(g)?;
        }
        // They become one group, changed, which the splice leaves whole if it fails.
        let base = self.groups().starts[first];
        self.groups_to_change();
        let groups = self.groups.get_mut().expect("read above");
        let mut list = Vec::new();
        for group in &mut groups.list[first..=last] {
            self.replaced.stored.extend(group.id);
            list.extend(group.contents.take().expect("loaded").list);
        }
        let mut pages = Pages::new(list);
        let spliced = pages.splice(
            self.nodes,
            self.layout,
            range.start - base..range.end - base,
            records,
            &mut self.replaced,
        );
        // An emptied group goes, as an emptied page does; a table keeps one group.
        let group = Group::changed(pages);
        let keep = group.records > 0 || groups.list.len() == last - first + 1;
        let mut list = std::mem::take(&mut groups.list);
        list.splice(first..=last, keep.then_some(group));
        *groups = Groups::new(list);
        spliced
    }

    /// [`Records::splice`] of as many records as it replaces, all in one page: they are
    /// written over where they lie, and the page and its group marked changed, with
    /// nothing around them rebuilt; false, changing nothing, if the range spans pages.
    /// Most writes to a large hash, set or sorted set change one node's record this way
    /// (its id, count and size), and the general splice's rebuilding of its group's and
    /// the table's page lists was a fifth of an HSET's time (BENCHMARKS.md).
    fn overwrite(&mut self, range: &Range<usize>, records: &[[u8; R]]) -> Result<bool> {
        let (g, p, i) = self.find(range.start)?;
        if i + records.len() > self.pages(g)?.list[p].records {
            return Ok(false);
        }
        self.body(g, p)?;
        self.groups_to_change();
        let layout = self.layout;
        let groups = self.groups.get_mut().expect("read by find");
        let group = &mut groups.list[g];
        self.replaced.stored.extend(group.id.take());
        let pages = group.contents.get_mut().expect("loaded by find");
        let page = &mut pages.list[p];
        self.replaced.stored.extend(page.id.take());
        let body = page.contents.get_mut().expect("loaded above").to_mut();
        let cut = &mut body[i * R..(i + records.len()) * R];
        let before: u64 = cut.chunks_exact(R).map(|r| layout.count(r)).sum();
        let after: u64 = records.iter().map(|r| layout.count(r)).sum();
        self.replaced.spliced(layout, cut, records);
        for (old, new) in cut.chunks_exact_mut(R).zip(records) {
            old.copy_from_slice(new);
        }
        page.key = layout.key(body);
        page.elements = page.elements - before + after;
        group.elements = group.elements - before + after;
        group.key = pages.list[0].key;
        Ok(true)
    }

    /// Whether [`Records::finish`] stores the table inline.
    pub fn stays_inline(&self) -> bool {
        let len = self.len();
        let most = usize::from(self.layout.inline_records);
        len <= most && (self.form == Form::Inline || len <= most / 2)
    }

    /// Whether the table is as it was read: no record or count changed.
    pub fn is_as_stored(&self) -> bool {
        self.stored.as_deref().is_some_and(|stored| {
            stored.patched.is_empty() && self.count == count::<R>(&stored.root) as u64
        })
    }

    /// Whether the table was stored in pages: its pages are in its node store.
    pub fn was_paged(&self) -> bool {
        self.form != Form::Inline
    }

    /// The table stored inline whatever its length, as a value stored whole holds it:
    /// reads every page.
    pub fn inline(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(INLINE_HEADER + self.len() * R + TRAILER_MAX);
        out.extend_from_slice(&u32::try_from(self.count).expect("a count").to_le_bytes());
        for g in 0..self.groups().list.len() {
            for p in 0..self.pages(g)?.list.len() {
                out.extend_from_slice(self.body(g, p)?);
            }
        }
        Ok(out)
    }

    /// The entries of the pages of changed group `g`, its changed pages written to the
    /// node store first; stored pages written again with them go in `replaced`.
    fn store_pages(&self, g: usize, replaced: &mut Vec<u64>) -> Result<Vec<u8>> {
        let pages = self.pages(g)?;
        let stored: Vec<Option<Entry>> = pages.list.iter().map(Page::entry).collect();
        let level = level(R, PAGE_RECORDS);
        let runs = runs(&stored, level, replaced, |p| {
            pages.body::<R>(self.nodes, p).map(Cow::Borrowed)
        })?;
        let entries = write_runs(&runs, level, |records| {
            self.layout.page_entry(self.nodes.write(records), records)
        });
        Ok(entries_bytes(&entries))
    }

    /// The table as stored. Inline if it has few records (at most its layout's
    /// `inline_records`, or half as many if it was paged, so that a table near the
    /// bound does not go back and forth); else in pages, each run of changed pages
    /// written as new pages (see [`runs`]), and if there are more than [`GROUP_PAGES`]
    /// of them, in groups, each run of changed groups written likewise as new groups.
    pub fn finish(self) -> Result<Vec<u8>> {
        Ok(self.finish_releasing()?.0.into_owned())
    }

    /// [`Records::finish`], and the ids the old table names and the new one does not
    /// (its groups, pages and, if its records name nodes, nodes): what [`dropped`]
    /// finds, known here without reading the old table again. A table not changed is
    /// given back where it lies.
    pub fn finish_releasing(mut self) -> Result<(Cow<'a, [u8]>, Vec<u64>)> {
        if self.is_as_stored() {
            debug_assert!(self.replaced.stored.is_empty() && self.replaced.spliced_out.is_empty());
            let table = self.stored.take().expect("as stored").root;
            return Ok((table, Vec::new()));
        }
        let mut replaced = std::mem::take(&mut self.replaced);
        let table = match self.patched_root() {
            Some(root) => root,
            None => {
                // The patches, if any, go into the groups read here.
                self.groups_to_change();
                self.finish_noting(&mut replaced.stored)?
            }
        };
        let mut released = replaced.stored;
        // Out and not back in, counted: a record spliced out, back and out again (a
        // node's count changed, then the node removed) was released.
        let (mut out, mut back) = (replaced.spliced_out, replaced.spliced_in);
        out.sort_unstable();
        back.sort_unstable();
        let mut back = back.into_iter().peekable();
        for id in out {
            while back.next_if(|&b| b < id).is_some() {}
            if back.next_if_eq(&id).is_none() {
                released.push(id);
            }
        }
        Ok((Cow::Owned(table), released))
    }

    /// The table as stored, the stored pages and groups it writes again noted in
    /// `replaced`.
    fn finish_noting(&self, replaced: &mut Vec<u64>) -> Result<Vec<u8>> {
        if self.stays_inline() {
            let table = self.inline()?;
            // Every page and group it was stored in is let go: `inline` read them all.
            for (g, group) in self.groups().list.iter().enumerate() {
                replaced.extend(group.id);
                replaced.extend(self.pages(g)?.list.iter().filter_map(|p| p.id));
            }
            return Ok(table);
        }
        if let Some(root) = self.as_they_are()? {
            return Ok(root);
        }
        // Each changed group's page entries, its changed pages written.
        let groups = &self.groups().list;
        let mut changed: Vec<Option<Vec<u8>>> = Vec::with_capacity(groups.len());
        for (g, group) in groups.iter().enumerate() {
            changed.push(match group.id {
                Some(_) => None,
                None => Some(self.store_pages(g, replaced)?),
            });
        }
        let stored: Vec<Option<Entry>> = groups.iter().map(Group::entry).collect();
        let level = level(REF, GROUP_PAGES);
        let runs = runs(&stored, level, replaced, |g| match &changed[g] {
            Some(pages) => Ok(Cow::Borrowed(&pages[..])),
            None => {
                let pages = self
                    .pages(g)?
                    .list
                    .iter()
                    .map(|page| page.entry().expect("a stored group's pages are stored"));
                Ok(Cow::Owned(entries_bytes(&pages.collect::<Vec<_>>())))
            }
        })?;
        let mut root = self.count.to_le_bytes().to_vec();
        // Few pages, all written again or kept in one run: the root names them.
        if let [Run::Write(pages)] = &runs[..] {
            if pages.len() / REF <= GROUP_PAGES {
                root.extend_from_slice(pages);
                return Ok(root);
            }
        }
        let groups = write_runs(&runs, level, |pages| {
            Entry::of_group(self.nodes.write(pages), pages)
        });
        root.extend_from_slice(&GROUPED_LEVELS.to_le_bytes());
        root.extend_from_slice(&entries_bytes(&groups));
        Ok(root)
    }

    /// The root of a table whose pages and groups all stay as they are, each changed
    /// one within its level's bounds, so that each is written as it is and the stored
    /// ones are named as before: with one group, a paged root of at most
    /// [`GROUP_PAGES`] pages; with more, a grouped root of which at least one group is
    /// as stored. `None` if a page or group is to be cut or joined, or the table is to
    /// change form: [`runs`] decides those. A write to a large hash, set or sorted set
    /// mostly changes one page, and the general way's lists of entries and runs over
    /// every page were a tenth of an HSET's time (BENCHMARKS.md), and over a third of
    /// it in a grouped table (a hash of ~630,000 fields).
    fn as_they_are(&self) -> Result<Option<Vec<u8>>> {
        let groups = &self.groups().list;
        // Each check is made before anything is written, so that nothing is written
        // for a table the general way then writes again.
        if let [group] = &groups[..] {
            let pages = self.pages(0)?.list.len();
            if group.id.is_some() || pages > GROUP_PAGES || !self.pages_stay(0)? {
                return Ok(None);
            }
            let mut root = Vec::with_capacity(PAGED_HEADER + pages * REF + TRAILER_MAX);
            root.extend_from_slice(&self.count.to_le_bytes());
            self.write_pages(0, &mut root)?;
            return Ok(Some(root));
        }
        if groups.iter().all(|group| group.id.is_none()) {
            return Ok(None);
        }
        let group_level = level(REF, GROUP_PAGES);
        for (g, group) in groups.iter().enumerate() {
            if group.id.is_none() {
                let pages = self.pages(g)?.list.len();
                if !(group_level.least..=group_level.most).contains(&pages)
                    || !self.pages_stay(g)?
                {
                    return Ok(None);
                }
            }
        }
        let mut root = Vec::with_capacity(GROUPED_HEADER + groups.len() * REF + TRAILER_MAX);
        root.extend_from_slice(&self.count.to_le_bytes());
        root.extend_from_slice(&GROUPED_LEVELS.to_le_bytes());
        for (g, group) in groups.iter().enumerate() {
            let entry = match group.entry() {
                Some(stored) => stored,
                None => {
                    let mut pages = Vec::with_capacity(self.pages(g)?.list.len() * REF);
                    self.write_pages(g, &mut pages)?;
                    let entry = Entry::of_group(self.nodes.write(&pages), &pages);
                    debug_assert_eq!(
                        (entry.records, entry.elements),
                        (group.records, group.elements)
                    );
                    entry
                }
            };
            entry.write(&mut root);
        }
        Ok(Some(root))
    }

    /// Whether every changed page of group `g` is within a page's bounds.
    fn pages_stay(&self, g: usize) -> Result<bool> {
        let level = level(R, PAGE_RECORDS);
        let within =
            |page: &Page| page.id.is_some() || (level.least..=level.most).contains(&page.records);
        Ok(self.pages(g)?.list.iter().all(within))
    }

    /// Appends to `out` the entries of group `g`'s pages, its changed ones written as
    /// they are.
    fn write_pages(&self, g: usize, out: &mut Vec<u8>) -> Result<()> {
        let pages = self.pages(g)?;
        for (p, page) in pages.list.iter().enumerate() {
            let entry = match page.entry() {
                Some(stored) => stored,
                None => {
                    let body = pages.body::<R>(self.nodes, p)?;
                    let entry = Entry {
                        id: self.nodes.write(body),
                        records: page.records,
                        elements: page.elements,
                        key: page.key,
                    };
                    debug_assert_eq!(entry, self.layout.page_entry(entry.id, body));
                    entry
                }
            };
            entry.write(out);
        }
        Ok(())
    }
}

fn entries_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * REF);
    for e in entries {
        e.write(&mut out);
    }
    out
}

/// A level of a table (its pages, or its groups) as an edit leaves it, node by node:
/// one kept as stored, or a run of entries (records, or pages' entries) to be written
/// as new nodes.
enum Run {
    Kept(Entry),
    Write(Vec<u8>),
}

/// The runs of a level whose nodes are `stored` (each one's entry if it is as stored,
/// `None` if it changed), `load` giving a node's entries (a changed one's as they are
/// now): each run of changed nodes is to be written again, and one left with fewer than
/// `level.least` entries takes in a neighbour, whose id goes in `replaced`.
fn runs<'b>(
    stored: &[Option<Entry>],
    level: Level,
    replaced: &mut Vec<u64>,
    load: impl Fn(usize) -> Result<Cow<'b, [u8]>>,
) -> Result<Vec<Run>> {
    let mut rewrite: Vec<bool> = stored.iter().map(Option::is_none).collect();
    let run_end = |rewrite: &[bool], p: usize| {
        (p..rewrite.len())
            .find(|&q| !rewrite[q])
            .unwrap_or(rewrite.len())
    };
    let mut p = 0;
    while p < rewrite.len() {
        if !rewrite[p] {
            p += 1;
            continue;
        }
        let end = run_end(&rewrite, p);
        let mut entries = 0;
        for q in p..end {
            entries += load(q)?.len() / level.unit;
        }
        if (1..level.least).contains(&entries) {
            if end < rewrite.len() {
                rewrite[end] = true;
                replaced.extend(stored[end].map(|e| e.id));
            } else if p > 0 {
                rewrite[p - 1] = true;
                replaced.extend(stored[p - 1].map(|e| e.id));
                // The run now starts earlier: look at it again from there.
                p = (0..p).rev().find(|&q| !rewrite[q]).map_or(0, |q| q + 1);
                continue;
            }
        }
        p = end;
    }
    let mut out = Vec::with_capacity(stored.len());
    let mut p = 0;
    while p < stored.len() {
        if !rewrite[p] {
            out.push(Run::Kept(stored[p].expect("a node kept is stored")));
            p += 1;
            continue;
        }
        let end = run_end(&rewrite, p);
        let mut body = Vec::new();
        for q in p..end {
            body.extend_from_slice(&load(q)?);
        }
        out.push(Run::Write(body));
        p = end;
    }
    Ok(out)
}

/// The entries naming a level's nodes: those kept, and each run's entries written by
/// `write` as new nodes of at most `level.most` entries (cut to `level.fill`).
fn write_runs(runs: &[Run], level: Level, mut write: impl FnMut(&[u8]) -> Entry) -> Vec<Entry> {
    let mut out = Vec::with_capacity(runs.len() + 2);
    for run in runs {
        match run {
            Run::Kept(entry) => out.push(*entry),
            Run::Write(body) => {
                let n = body.len() / level.unit;
                let cuts = if n > level.most {
                    n.div_ceil(level.fill)
                } else {
                    usize::from(n > 0)
                };
                for k in 0..cuts {
                    let at = |k: usize| n * k / cuts * level.unit;
                    out.push(write(&body[at(k)..at(k + 1)]));
                }
            }
        }
    }
    out
}

/// The groups, pages and nodes the stored table `table` names, each its id and stored
/// size.
pub fn nodes<const R: usize>(
    nodes: &dyn NodeStore,
    layout: Layout<R>,
    table: &[u8],
) -> Result<Vec<(u64, usize)>> {
    let records = Records::new(nodes, layout, table);
    let mut out: Vec<(u64, usize)> = Vec::new();
    for (g, group) in records.groups().list.iter().enumerate() {
        let pages = records.pages(g)?;
        if let Some(id) = group.id {
            out.push((id, pages.list.len() * REF));
        }
        out.extend(
            pages
                .list
                .iter()
                .filter_map(|p| Some((p.id?, p.records * R))),
        );
    }
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

/// The groups, pages and nodes the stored table `old` names and the stored table `new`
/// does not: what replacing one by the other releases. A group both name holds the
/// same pages in both, and a page both name the same records, so only the pages of the
/// groups one of them names alone are compared, and only the records of the pages one
/// of them names alone; of those, the runs both start and end with are skipped by
/// comparing bytes (a write changes a few records in the middle).
pub fn dropped<const R: usize>(
    nodes: &dyn NodeStore,
    layout: Layout<R>,
    old: &[u8],
    new: &[u8],
) -> Result<Vec<u64>> {
    let (old, new) = (
        Records::new(nodes, layout, old),
        Records::new(nodes, layout, new),
    );
    let sorted = |mut ids: Vec<u64>| {
        ids.sort_unstable();
        ids
    };
    let among = |ids: &[u64], id: Option<u64>| id.is_some_and(|id| ids.binary_search(&id).is_ok());
    let group_ids = |t: &Records<R>| sorted(t.groups().list.iter().filter_map(|g| g.id).collect());
    let (old_groups, new_groups) = (group_ids(&old), group_ids(&new));
    // The pages (group, page, id) of the groups `t` names and `other` does not.
    let alone = |t: &Records<R>, other: &[u64]| -> Result<Vec<(usize, usize, Option<u64>)>> {
        let mut out = Vec::new();
        for g in 0..t.groups().list.len() {
            if !among(other, t.groups().list[g].id) {
                out.extend(
                    t.pages(g)?
                        .list
                        .iter()
                        .enumerate()
                        .map(|(p, page)| (g, p, page.id)),
                );
            }
        }
        Ok(out)
    };
    let (old_pages, new_pages) = (alone(&old, &new_groups)?, alone(&new, &old_groups)?);
    let page_ids = |pages: &[(usize, usize, Option<u64>)]| {
        sorted(pages.iter().filter_map(|&(_, _, id)| id).collect())
    };
    let (old_page_ids, new_page_ids) = (page_ids(&old_pages), page_ids(&new_pages));
    let mut released: Vec<u64> = old_groups
        .iter()
        .chain(&old_page_ids)
        .copied()
        .filter(|&id| !among(&new_groups, Some(id)) && !among(&new_page_ids, Some(id)))
        .collect();
    if !layout.names_nodes {
        return Ok(released);
    }
    // The records of `pages` (of `t`) that `other` (page ids) does not name.
    let records_alone = |t: &Records<R>, pages: &[(usize, usize, Option<u64>)], other: &[u64]| {
        let mut body = Vec::new();
        for &(g, p, id) in pages {
            if !among(other, id) {
                body.extend_from_slice(t.body(g, p)?);
            }
        }
        Result::Ok(body)
    };
    let gone = records_alone(&old, &old_pages, &new_page_ids)?;
    let kept = records_alone(&new, &new_pages, &old_page_ids)?;
    let (front, back) = crate::nodes::common_records(&gone, &kept, R);
    let middle = |body: &[u8]| -> Vec<u64> {
        let records = body.len() / R;
        body[front * R..(records - back) * R]
            .chunks_exact(R)
            .map(|r| layout.id(r))
            .collect()
    };
    let kept = sorted(middle(&kept));
    released.extend(
        middle(&gone)
            .into_iter()
            .filter(|id| kept.binary_search(id).is_err()),
    );
    Ok(released)
}

/// The first of `0..len` for which `pred` fails, `pred` holding up to some point and
/// failing after it.
fn partition(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
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
        inline_records: PAGE_RECORDS as u16,
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
        /// Replaces up to this many records from this fraction of the table on by as
        /// many of the same keys, new ids and this count: within a page or across.
        Rewrite(f64, usize, u32),
        /// Gives the record at this fraction of the table a new key, at this fraction
        /// of the way between its neighbours' keys (a sorted set's order node whose
        /// first member changed).
        Rekey(f64, f64),
        /// Looks up the key of the record at this fraction of the table plus this
        /// much, and reads the record at the other fraction, in the edit: what it
        /// finds is what the records are so far.
        Probe(f64, i16, f64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<u64>(), 1..50u32, 1..40usize).prop_map(|(k, c, n)| Op::Insert(k, c, n)),
            2 => (0.0..1.0f64).prop_map(Op::Remove),
            1 => (0.0..1.0f64, 1..100usize).prop_map(|(at, n)| Op::RemoveRun(at, n)),
            1 => (0.0..1.0f64, 1..50u32).prop_map(|(at, c)| Op::Recount(at, c)),
            1 => (0.0..1.0f64, 1..20usize, 1..50u32).prop_map(|(at, n, c)| Op::Rewrite(at, n, c)),
            1 => (0.0..1.0f64, 0.0..1.0f64).prop_map(|(at, k)| Op::Rekey(at, k)),
            2 => (0.0..1.0f64, any::<i16>(), 0.0..1.0f64).prop_map(|(k, d, at)| Op::Probe(k, d, at)),
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

    /// The entries of the groups of the stored table `table` (none unless grouped), and
    /// of its pages.
    fn groups_and_pages(nodes: &MemoryNodes, table: &[u8]) -> (Vec<Entry>, Vec<Entry>) {
        match stored_form::<RECORD>(table) {
            Form::Inline => (vec![], vec![]),
            Form::Paged => (vec![], entries(&table[PAGED_HEADER..]).collect()),
            Form::Grouped => {
                let groups: Vec<Entry> = entries(&table[GROUPED_HEADER..]).collect();
                let pages = groups
                    .iter()
                    .flat_map(|g| entries(&nodes.read(g.id).unwrap()).collect::<Vec<_>>())
                    .collect();
                (groups, pages)
            }
        }
    }

    /// Checks that the table `table`, written by [`Records::finish`], is in the form its
    /// length calls for, its pages and groups within their bounds.
    fn check_form(nodes: &MemoryNodes, table: &[u8], len: usize) {
        let form = stored_form::<RECORD>(table);
        if form == Form::Inline {
            assert!(
                len <= usize::from(LAYOUT.inline_records),
                "a long table is paged"
            );
            return;
        }
        assert!(
            len > usize::from(LAYOUT.inline_records) / 2,
            "a short table is inline"
        );
        let (groups, pages) = groups_and_pages(nodes, table);
        if form == Form::Paged {
            assert!(
                pages.len() <= GROUP_PAGES,
                "{} pages in a root",
                pages.len()
            );
        }
        for g in &groups {
            let named = nodes.read(g.id).unwrap().len() / REF;
            assert!((1..=GROUP_PAGES).contains(&named), "a group of {named}");
        }
        for p in &pages {
            assert!(
                (1..=PAGE_RECORDS).contains(&p.records),
                "a page of {}",
                p.records
            );
        }
        assert_eq!(pages.iter().map(|p| p.records).sum::<usize>(), len);
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
            if let Some(last) = want.get(expect.max(1) - 1) {
                // Read where it lies by a fresh reader; through the loaded pages by `t`.
                let fresh = Records::new(nodes, LAYOUT, table);
                assert_eq!(&fresh.last_where(|key| key <= k).unwrap(), last);
                assert_eq!(&t.last_where(|key| key <= k).unwrap(), last);
            }
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

    /// Applies `op` to the table being edited `t` and to its model `want`, checking
    /// what the edit reads as it goes.
    fn apply(
        t: &mut Records<'_, RECORD>,
        want: &mut Vec<Record>,
        next_id: &mut u64,
        op: Op,
    ) -> std::result::Result<(), TestCaseError> {
        match op {
            Op::Insert(key, count, n) => {
                let at = t.partition(|k| k <= key).unwrap();
                let run: Vec<Record> = (0..n as u64)
                    .map(|i| record(key, *next_id + i, count))
                    .collect();
                *next_id += n as u64;
                t.splice(at..at, &run).unwrap();
                want.splice(at..at, run);
                t.set_count(t.count() + n * count as usize);
            }
            Op::Remove(_)
            | Op::RemoveRun(..)
            | Op::Recount(..)
            | Op::Rewrite(..)
            | Op::Rekey(..)
            | Op::Probe(..)
                if want.is_empty() => {}
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
            Op::Rewrite(f, n, count) => {
                let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                let end = (at + n).min(want.len());
                let new: Vec<Record> = want[at..end]
                    .iter()
                    .zip(*next_id..)
                    .map(|(old, id)| record(LAYOUT.key(old), id, count))
                    .collect();
                *next_id += new.len() as u64;
                let gone: u64 = want[at..end].iter().map(|r| LAYOUT.count(r)).sum();
                t.splice(at..end, &new).unwrap();
                want.splice(at..end, new.iter().copied());
                t.set_count(t.count() + (end - at) * count as usize - gone as usize);
            }
            Op::Rekey(f, between) => {
                let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                let low = at.checked_sub(1).map_or(0, |b| LAYOUT.key(&want[b]));
                let high = want.get(at + 1).map_or(u64::MAX, |r| LAYOUT.key(r));
                let key = low + ((high - low) as f64 * between) as u64;
                let old = want[at];
                let r = record(
                    key.clamp(low, high),
                    LAYOUT.id(&old),
                    LAYOUT.count(&old) as u32,
                );
                t.splice(at..at + 1, &[r]).unwrap();
                want[at] = r;
                // Found by its new key at once: a page's first record's key is its
                // page's.
                let expect = want.partition_point(|r| LAYOUT.key(r) <= LAYOUT.key(&want[at]));
                prop_assert_eq!(t.partition(|k| k <= LAYOUT.key(&want[at])).unwrap(), expect);
            }
            Op::Probe(k, delta, f) => {
                let near = ((want.len() as f64 * k) as usize).min(want.len() - 1);
                let key = LAYOUT.key(&want[near]).wrapping_add_signed(delta.into());
                let expect = want.partition_point(|r| LAYOUT.key(r) <= key);
                prop_assert_eq!(t.partition(|k| k <= key).unwrap(), expect);
                let last = want[expect.max(1) - 1];
                prop_assert_eq!(t.last_where(|k| k <= key).unwrap(), last);
                let at = ((want.len() as f64 * f) as usize).min(want.len() - 1);
                prop_assert_eq!(t.get(at).unwrap(), want[at]);
            }
        }
        Ok(())
    }

    /// Finishes the edit `t` of the table `stored` and checks the new table against
    /// `want`, and what it released against what the old table names and the new does
    /// not; the released ids go from `nodes`. The new table.
    fn finish_round(
        nodes: &MemoryNodes,
        t: Records<'_, RECORD>,
        stored: &[u8],
        want: &[Record],
        probes: &[u64],
    ) -> std::result::Result<Vec<u8>, TestCaseError> {
        let (new, mut known) = t.finish_releasing().unwrap();
        check(nodes, &new, want, probes);
        check_form(nodes, &new, want.len());
        let (old_ids, new_ids) = (ids(nodes, stored), ids(nodes, &new));
        let mut released = dropped(nodes, LAYOUT, stored, &new).unwrap();
        released.sort_unstable();
        let expect: Vec<u64> = old_ids
            .iter()
            .copied()
            .filter(|id| new_ids.binary_search(id).is_err())
            .collect();
        prop_assert_eq!(&released, &expect);
        known.sort_unstable();
        prop_assert_eq!(&known, &expect, "the edit knows what it released");
        for id in released.into_iter().filter(|&id| id < 1 << 63) {
            nodes.discard(id);
        }
        Ok(new.into_owned())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Tables edited in rounds of several changes, stored and read again after each
        /// round, hold what a plain vector of records holds; what each round releases is
        /// exactly what the old table names and the new does not, as `dropped` finds it
        /// and as the edit itself noted it; and the node store
        /// ends with the final table's pages alone.
        #[test]
        fn paged_tables_behave_as_vectors(
            rounds in prop::collection::vec(prop::collection::vec(op(), 1..60), 1..20),
            probes in prop::collection::vec(any::<u64>(), 4),
        ) {
            let nodes = MemoryNodes::default();
            let mut want: Vec<Record> = Vec::new();
            let mut stored = Records::of(&nodes, LAYOUT, 0, &[]).finish().unwrap();
            // Records' ids that name no node: a pointer's top bit is never set.
            let mut next_id = 1u64 << 63;
            for round in rounds {
                let mut t = Records::new(&nodes, LAYOUT, &stored);
                for op in round {
                    apply(&mut t, &mut want, &mut next_id, op)?;
                }
                stored = finish_round(&nodes, t, &stored, &want, &probes)?;
            }
            let (groups, pages) = groups_and_pages(&nodes, &stored);
            prop_assert_eq!(nodes.len(), groups.len() + pages.len());
        }

        /// A table stored in pages whose edits write records over in place (as most
        /// writes to a large hash or sorted set do) is edited in the stored root and
        /// the pages it patches, its groups never built: what each edit reads, stores
        /// and releases is what the model says.
        #[test]
        fn pages_written_over_in_place_behave_as_vectors(
            len in 130..700usize,
            rounds in prop::collection::vec(prop::collection::vec(overwrite(), 1..12), 1..12),
            probes in prop::collection::vec(any::<u64>(), 4),
        ) {
            let nodes = MemoryNodes::default();
            let mut want: Vec<Record> =
                (0..len as u64).map(|i| record(i * 1_000, (1 << 63) + i, 1)).collect();
            let mut next_id = (1 << 63) + len as u64;
            let mut stored = Records::of(&nodes, LAYOUT, len as u64, &want).finish().unwrap();
            prop_assert_eq!(stored_form::<RECORD>(&stored), Form::Paged);
            for round in rounds {
                let mut t = Records::new(&nodes, LAYOUT, &stored);
                for op in round {
                    apply(&mut t, &mut want, &mut next_id, op)?;
                    prop_assert!(t.groups.get().is_none(), "an overwrite within a page built the groups");
                }
                stored = finish_round(&nodes, t, &stored, &want, &probes)?;
            }
        }
    }

    /// The operations that write one record over where it lies, and lookups.
    fn overwrite() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0.0..1.0f64, 1..50u32).prop_map(|(at, c)| Op::Recount(at, c)),
            (0.0..1.0f64, 1..50u32).prop_map(|(at, c)| Op::Rewrite(at, 1, c)),
            (0.0..1.0f64, 0.0..1.0f64).prop_map(|(at, k)| Op::Rekey(at, k)),
            (0.0..1.0f64, any::<i16>(), 0.0..1.0f64).prop_map(|(k, d, at)| Op::Probe(k, d, at)),
        ]
    }

    /// A root that disagrees with its page or its group (a store damaged on disk) gets
    /// an error naming it, not a panic or a misread.
    #[test]
    fn a_page_or_group_unlike_its_root_is_an_error() {
        let nodes = MemoryNodes::default();
        let damaged = |records: usize, form: Form, at: usize| {
            let all: Vec<Record> = (0..records as u64).map(|i| record(i, i + 1, 1)).collect();
            let table = Records::of(&nodes, LAYOUT, records as u64, &all);
            let mut table = table.finish().unwrap();
            assert_eq!(stored_form::<RECORD>(&table), form);
            // One more than it says.
            let n = u32::from_le_bytes(table[at..at + 4].try_into().unwrap());
            table[at..at + 4].copy_from_slice(&(n + 1).to_le_bytes());
            // A read of the records the damaged count misplaces is an error.
            let t = Records::new(&nodes, LAYOUT, &table[..]);
            match (0..records).map(|at| t.get(at)).find(Result::is_err) {
                Some(Err(engine::Error::Corruption { detail, .. })) => detail,
                other => panic!("read a damaged table as {other:?}"),
            }
        };
        // The first page's record count.
        let detail = damaged(300, Form::Paged, PAGED_HEADER + 8);
        assert!(
            detail.starts_with("page ") && detail.contains("root says"),
            "{detail}"
        );
        // The first group's record count, and its element count: a read needs only
        // the records, a write of the group checks both.
        let detail = damaged(3_000, Form::Grouped, GROUPED_HEADER + 8);
        assert!(
            detail.starts_with("group ") && detail.contains("root says"),
            "{detail}"
        );
        let all: Vec<Record> = (0..3_000).map(|i| record(i, i + 1, 1)).collect();
        let mut table = Records::of(&nodes, LAYOUT, 3_000, &all).finish().unwrap();
        let at = GROUPED_HEADER + 12;
        let n = u32::from_le_bytes(table[at..at + 4].try_into().unwrap());
        table[at..at + 4].copy_from_slice(&(n + 1).to_le_bytes());
        let mut t = Records::new(&nodes, LAYOUT, &table[..]);
        assert_eq!(t.get(0).unwrap(), all[0]);
        match t.splice(0..1, &[record(0, 9, 1)]) {
            Err(engine::Error::Corruption { detail, .. }) => {
                assert!(detail.contains("root says"), "{detail}")
            }
            other => panic!("wrote into a damaged table: {other:?}"),
        }
        match Records::new(&nodes, LAYOUT, &table[..]).elements_before(1) {
            Err(engine::Error::Corruption { detail, .. }) => {
                assert!(detail.contains("root says"), "{detail}")
            }
            other => panic!("counted a damaged table as {other:?}"),
        }
        // A group whose node has a length no entries have.
        let all: Vec<Record> = (0..3_000).map(|i| record(i, i + 1, 1)).collect();
        let mut table = Records::of(&nodes, LAYOUT, 3_000, &all).finish().unwrap();
        let bad = nodes.write(&[0u8; REF + 1]);
        table[GROUPED_HEADER..GROUPED_HEADER + 8].copy_from_slice(&bad.to_le_bytes());
        assert!(matches!(
            Records::new(&nodes, LAYOUT, &table[..]).get(0),
            Err(engine::Error::Corruption { .. })
        ));
    }

    /// A page's first record given a lower key (a sorted set's node whose first member
    /// went down) is found by that key while the edit holds it as a patch of the
    /// stored root, and once stored: the page's key, and its group's, are the record's.
    #[test]
    fn a_first_record_keyed_lower_is_found_by_its_key() {
        let nodes = MemoryNodes::default();
        for (len, form) in [(300, Form::Paged), (3_000, Form::Grouped)] {
            let all: Vec<Record> = (0..len).map(|i| record(i * 10 + 10, i + 1, 1)).collect();
            let stored = Records::of(&nodes, LAYOUT, len, &all).finish().unwrap();
            assert_eq!(stored_form::<RECORD>(&stored), form);
            let (_, pages) = groups_and_pages(&nodes, &stored);
            let firsts = pages.iter().scan(0, |at, page| {
                *at += page.records;
                Some(*at - page.records)
            });
            for at in firsts.skip(1) {
                let mut want = all.clone();
                let key = LAYOUT.key(&all[at]) - 5;
                want[at] = record(key, LAYOUT.id(&all[at]), 1);
                let mut t = Records::new(&nodes, LAYOUT, &stored[..]);
                t.splice(at..at + 1, &[want[at]]).unwrap();
                assert_eq!(t.partition(|k| k <= key).unwrap(), at + 1, "record {at}");
                assert_eq!(t.last_where(|k| k <= key).unwrap(), want[at]);
                check(&nodes, &t.finish().unwrap(), &want, &[key - 1, key]);
            }
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
        assert_eq!(stored_form::<RECORD>(&new), Form::Paged);
        check_form(&nodes, &new, 600);
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
        let (_, old_pages) = groups_and_pages(&nodes, &new);
        let (_, new_pages) = groups_and_pages(&nodes, &newer);
        let pages_written = new_pages
            .iter()
            .filter(|p| !old_pages.iter().any(|q| q.id == p.id))
            .count();
        assert_eq!(pages_written, 1);
    }

    /// An edit of one record of a grouped table writes one page, one group and a root
    /// naming the groups: what it copies does not grow with the table.
    #[test]
    fn an_edit_of_a_grouped_table_writes_a_page_and_a_group() {
        let nodes = MemoryNodes::default();
        let mut want: Vec<Record> = (0..20_000).map(|i| record(i * 10, i + 1, 2)).collect();
        let table = Records::of(&nodes, LAYOUT, 40_000, &want).finish().unwrap();
        assert_eq!(stored_form::<RECORD>(&table), Form::Grouped);
        check_form(&nodes, &table, want.len());
        check(&nodes, &table, &want, &[0, 5, 99_990, 199_990, u64::MAX]);
        let (groups, pages) = groups_and_pages(&nodes, &table);
        assert!(groups.len() > 20, "{} groups", groups.len());
        let stored_before = nodes.len();
        for at in [0, 9_999, 19_999] {
            let before = nodes.len();
            let mut t = Records::new(&nodes, LAYOUT, &table);
            let r = record(at as u64 * 10, 50_000 + at as u64, 3);
            t.splice(at..at + 1, &[r]).unwrap();
            t.set_count(40_001);
            let new = t.finish().unwrap();
            assert_eq!(nodes.len() - before, 2, "one page and one group written");
            assert_eq!(new.len(), table.len(), "the root names as many groups");
            let mut released = dropped(&nodes, LAYOUT, &table, &new).unwrap();
            released.sort_unstable();
            assert_eq!(
                released.len(),
                3,
                "a page, a group and a node: {released:?}"
            );
            assert!(released.contains(&(at as u64 + 1)));
            let mut edited = want.clone();
            edited[at] = r;
            check(&nodes, &new, &edited, &[at as u64 * 10]);
        }
        assert_eq!(nodes.len(), stored_before + 6);
        // Removing all but a few records takes the table back to pages, then inline.
        let mut t = Records::new(&nodes, LAYOUT, &table);
        t.splice(500..19_990, &[]).unwrap();
        t.set_count(1020);
        want.drain(500..19_990);
        let short = t.finish().unwrap();
        assert_eq!(stored_form::<RECORD>(&short), Form::Paged);
        check_form(&nodes, &short, want.len());
        check(&nodes, &short, &want, &[0, 4_990, 199_900]);
        let released = dropped(&nodes, LAYOUT, &table, &short).unwrap();
        assert!(released.len() > groups.len() + pages.len() - 10);
        let mut t = Records::new(&nodes, LAYOUT, &short);
        t.splice(10..500, &[]).unwrap();
        t.set_count(40);
        want.drain(10..500);
        let inline = t.finish().unwrap();
        assert_eq!(stored_form::<RECORD>(&inline), Form::Inline);
        check(&nodes, &inline, &want, &[0, 199_900]);
    }

    /// A list's push mostly changes its root's ends alone: its table, paged or grouped,
    /// read but not changed, is written back as stored, nothing written or released.
    #[test]
    fn a_table_read_but_not_changed_is_written_back_as_stored() {
        let nodes = MemoryNodes::default();
        for (len, form) in [(300u64, Form::Paged), (20_000, Form::Grouped)] {
            let want: Vec<Record> = (0..len).map(|i| record(i * 10, i + 1, 2)).collect();
            let table = Records::of(&nodes, LAYOUT, 2 * len, &want)
                .finish()
                .unwrap();
            assert_eq!(stored_form::<RECORD>(&table), form);
            let stored_before = nodes.len();
            let mut t = Records::new(&nodes, LAYOUT, &table);
            assert_eq!(t.all().unwrap(), want);
            t.set_count(2 * len as usize);
            let (same, released) = t.finish_releasing().unwrap();
            assert_eq!((same == table, released), (true, Vec::new()), "{form:?}");
            assert_eq!(nodes.len(), stored_before, "nothing written");
            // A new count is a change: the root is written again with it.
            let mut t = Records::new(&nodes, LAYOUT, &table);
            t.set_count(2 * len as usize + 1);
            let recounted = t.finish().unwrap();
            assert_eq!(count::<RECORD>(&recounted), 2 * len as usize + 1);
            let reread = Records::new(&nodes, LAYOUT, &recounted).all().unwrap();
            assert_eq!(reread, want);
        }
    }

    /// A table paged before groups existed, with more pages than a root of pages now
    /// holds, reads as it did and is grouped by its first edit, its pages kept.
    #[test]
    fn a_root_of_many_pages_reads_and_is_grouped_when_edited() {
        let nodes = MemoryNodes::default();
        let want: Vec<Record> = (0..3_000).map(|i| record(i, i + 1, 1)).collect();
        let mut old = 3_000u64.to_le_bytes().to_vec();
        for chunk in want.chunks(100) {
            let body = chunk.concat();
            LAYOUT.page_entry(nodes.write(&body), &body).write(&mut old);
        }
        assert_eq!(stored_form::<RECORD>(&old), Form::Paged);
        check(&nodes, &old, &want, &[0, 1_500, u64::MAX]);
        let mut t = Records::new(&nodes, LAYOUT, &old);
        t.splice(1_500..1_501, &[record(1_500, 9_001, 2)]).unwrap();
        t.set_count(3_001);
        let new = t.finish().unwrap();
        assert_eq!(stored_form::<RECORD>(&new), Form::Grouped);
        let mut want = want;
        want[1_500] = record(1_500, 9_001, 2);
        check(&nodes, &new, &want, &[0, 1_500, u64::MAX]);
        check_form(&nodes, &new, want.len());
        // The old pages are kept, but the one changed.
        let (_, pages) = groups_and_pages(&nodes, &new);
        let old_pages: Vec<Entry> = entries(&old[PAGED_HEADER..]).collect();
        let kept = pages.iter().filter(|p| old_pages.contains(p)).count();
        assert_eq!(kept, old_pages.len() - 1);
        let mut released = dropped(&nodes, LAYOUT, &old, &new).unwrap();
        released.sort_unstable();
        let mut expect = [1_501, old_pages[15].id];
        expect.sort_unstable();
        assert_eq!(released, expect);
    }
}
