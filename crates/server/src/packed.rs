//! The packed form of a list, hash, set or sorted set: the payload of its entry (see
//! `entry.rs`), one contiguous byte string as Redis's listpack is.
//!
//! ```text
//! packed  = count (u32, little-endian) | element*
//! element = length (LEB128 varint) | bytes
//! ```
//!
//! - list: its elements, head first; `count` elements.
//! - hash: field, value, field, value ... in the order fields were added (as Redis's
//!   listpack keeps them); `count` is the number of fields.
//! - set: its members, sorted as [`set_order`] says; `count` members.
//! - sorted set: member, score, member, score ... in (score, member) order, each score
//!   an element of 8 bytes (an f64, little-endian); `count` is the number of members.
//!
//! A write builds a new packed value and publishes it with the key's compare-and-set
//! (or under its lock on an engine), like any other value: readers never see one half
//! written, and nothing else is needed for atomicity, expiry, transactions or
//! durability. The price is that a write copies the collection, O(n) bytes; pushes and
//! pops copy the untouched elements as one block, without parsing them. A long list, and
//! a large hash or set, is split into nodes, each a packed value, so that its writes
//! copy the nodes they change (`nodes.rs`).
//!
//! An empty collection is never stored: the write that empties one deletes its key.

use std::cmp::Ordering;
use std::ops::Range;

use engine::varint;

/// Bytes of the count before the elements.
pub const HEADER: usize = 4;

/// The most elements a collection holds (the count is 32 bits).
pub const MAX_ELEMENTS: usize = u32::MAX as usize;

/// The number of elements (list, set) or of pairs (hash, sorted set) of `packed`.
pub fn count(packed: &[u8]) -> usize {
    packed.get(..HEADER).map_or(0, |h| {
        u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize
    })
}

/// The elements of `packed`, in order (for a hash or sorted set, fields and values
/// alternate).
pub fn elements(packed: &[u8]) -> Elements<'_> {
    Elements {
        rest: packed.get(HEADER..).unwrap_or_default(),
    }
}

/// The elements of `bytes`, packed elements without the count before them (as
/// [`Elements::remaining_bytes`] gives them).
pub fn elements_of(bytes: &[u8]) -> Elements<'_> {
    Elements { rest: bytes }
}

/// Iterates over the elements of a packed value.
#[derive(Clone)]
pub struct Elements<'a> {
    rest: &'a [u8],
}

impl<'a> Elements<'a> {
    /// The bytes from the next element to the end, as stored: what a push copies whole.
    pub fn remaining_bytes(&self) -> &'a [u8] {
        self.rest
    }

    /// Passes over the next `n` elements (fewer if the value ends first), reading only
    /// their lengths: a pop at a list's right end, and a read from a rank, find where
    /// they start this way, in fewer instructions than taking each element.
    pub fn pass(&mut self, n: usize) {
        let rest = self.rest;
        let mut at = 0usize;
        for _ in 0..n {
            let Some(&first) = rest.get(at) else {
                break;
            };
            // Most elements are under 128 bytes: a length of one byte, read here.
            if first < 0x80 {
                at += 1 + usize::from(first);
                continue;
            }
            let Some((len, used)) = varint::get(&rest[at..]) else {
                debug_assert!(false, "a packed element's length is cut short");
                at = rest.len();
                break;
            };
            at = at.saturating_add(used).saturating_add(len as usize);
        }
        debug_assert!(at <= rest.len(), "a packed element runs past the value");
        self.rest = rest.get(at..).unwrap_or_default();
    }
}

/// Where the element whose length starts at `at` of `bytes` (packed elements) lies,
/// past its length; `None` if `bytes` ends first. Most elements are under 128 bytes:
/// a length of one byte, read here without a loop, so that a scan for a field in a
/// hash's node or a member in an order node costs a few instructions an element.
/// ([`Elements::pass`] reads them so too, without checking each element's end: a
/// pop at a list's right end passes over a hundred of them.)
#[inline]
pub fn element_at(bytes: &[u8], at: usize) -> Option<Range<usize>> {
    let first = *bytes.get(at)?;
    let (len, used) = if first < 0x80 {
        (usize::from(first), 1)
    } else {
        let (len, used) = varint::get(&bytes[at..])?;
        (usize::try_from(len).ok()?, used)
    };
    let start = at + used;
    let end = start.checked_add(len).filter(|&end| end <= bytes.len())?;
    Some(start..end)
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        // Only this module writes packed values; a malformed one is a bug, but ends
        // the iteration rather than reading out of bounds.
        let rest = self.rest;
        let Some(element) = element_at(rest, 0) else {
            debug_assert!(false, "a packed element is cut short");
            self.rest = &[];
            return None;
        };
        self.rest = &rest[element.end..];
        Some(&rest[element])
    }

    fn nth(&mut self, n: usize) -> Option<&'a [u8]> {
        self.pass(n);
        self.next()
    }
}

/// Builds a packed value.
pub struct Builder {
    out: Vec<u8>,
    count: usize,
}

impl Builder {
    pub fn with_capacity(bytes: usize) -> Builder {
        // Room for the entry's trailer too (see `Entry::into_stored`).
        let mut out = Vec::with_capacity(HEADER + bytes + crate::entry::TRAILER_MAX);
        out.extend_from_slice(&[0; HEADER]);
        Builder { out, count: 0 }
    }

    /// Adds one element without counting it: half of a pair, or a whole list element or
    /// set member that the caller counts.
    fn push_element(&mut self, element: &[u8]) {
        put_element(&mut self.out, element);
    }

    /// Appends a list element or set member.
    pub fn push(&mut self, element: &[u8]) {
        self.push_element(element);
        self.count += 1;
    }

    /// Appends a hash field and its value.
    pub fn push_pair(&mut self, field: &[u8], value: &[u8]) {
        self.push_element(field);
        self.push_element(value);
        self.count += 1;
    }

    /// Appends a sorted-set member and its score.
    pub fn push_scored(&mut self, member: &[u8], score: f64) {
        self.push_element(member);
        self.push_element(&score.to_le_bytes());
        self.count += 1;
    }

    /// Appends `count` elements (or pairs) already packed, as [`Elements::remaining_bytes`]
    /// gives them.
    pub fn push_packed(&mut self, bytes: &[u8], count: usize) {
        self.out.extend_from_slice(bytes);
        self.count += count;
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The packed value; the caller keeps the count within [`MAX_ELEMENTS`].
    pub fn finish(mut self) -> Vec<u8> {
        assert!(
            self.count <= MAX_ELEMENTS,
            "a collection past 2^32 - 1 elements"
        );
        self.out[..HEADER].copy_from_slice(&(self.count as u32).to_le_bytes());
        self.out
    }
}

/// Sets the count of a packed value edited in place (the caller keeps it within
/// [`MAX_ELEMENTS`]).
pub fn set_count(packed: &mut [u8], count: usize) {
    assert!(count <= MAX_ELEMENTS, "a collection past 2^32 - 1 elements");
    packed[..HEADER].copy_from_slice(&(count as u32).to_le_bytes());
}

/// Appends `element` to `out` as a packed value holds it, uncounted (see [`set_count`]).
pub fn put_element(out: &mut Vec<u8>, element: &[u8]) {
    varint::put(out, element.len() as u64);
    out.extend_from_slice(element);
}

/// Bytes a copy to edit ([`editable`]) has room for past its value.
const EDIT_ROOM: usize = 64;

/// A copy of the packed value `packed` for a write to change: with room past it for
/// an element or two, which a write mostly adds, so that adding them does not
/// reallocate, a second copy of it (a ZADD's member node and order node were each
/// copied twice this way, ~650 instructions a ZADD).
pub fn editable(packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed.len() + EDIT_ROOM);
    out.extend_from_slice(packed);
    out
}

/// Replaces the bytes `range` of `packed` by `with`, moving the bytes after it once:
/// `Vec::splice` writes its replacement a byte at a time, which was 3% of a ZADD's
/// instructions.
pub fn replace(packed: &mut Vec<u8>, range: Range<usize>, with: &[u8]) {
    let Range { start, end } = range;
    let kept = start + with.len();
    if kept > end {
        let len = packed.len();
        packed.resize(len + kept - end, 0);
        packed.copy_within(end..len, kept);
    } else {
        packed.drain(kept..end);
    }
    packed[start..kept].copy_from_slice(with);
}

/// The bytes `element` takes in a packed value: its length's varint and itself.
pub fn element_size(element: &[u8]) -> usize {
    let bits = usize::BITS - element.len().leading_zeros();
    (bits.max(1) as usize).div_ceil(7) + element.len()
}

/// A packed list of `items`.
pub fn pack<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut b = Builder::with_capacity(0);
    for item in items {
        b.push(item);
    }
    b.finish()
}

/// The pairs of a packed hash: (field, value).
pub fn pairs(packed: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut it = elements(packed);
    std::iter::from_fn(move || Some((it.next()?, it.next()?)))
}

/// The members of a packed sorted set with their scores, in order.
pub fn scored(packed: &[u8]) -> impl Iterator<Item = (&[u8], f64)> {
    pairs(packed).map(|(member, score)| {
        let score = score.try_into().map_or(0.0, f64::from_le_bytes);
        (member, score)
    })
}

/// The order of a set's members: those that are integers as Redis's intset would hold
/// them (canonical decimal text of an i64), in numeric order, then the others in byte
/// order. An all-integer set thus lists its members as Redis lists a small one.
pub fn set_order(a: &[u8], b: &[u8]) -> Ordering {
    match (set_integer(a), set_integer(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// `member` as an integer if Redis would store it in an intset: the text is exactly an
/// i64 as Redis prints one.
pub fn set_integer(member: &[u8]) -> Option<i64> {
    let n = resp::parse_integer(member)?;
    (n.to_string().as_bytes() == member).then_some(n)
}

/// The order of a sorted set: by score, then by member bytes.
pub fn score_order(a: (&[u8], f64), b: (&[u8], f64)) -> Ordering {
    a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn replace_is_a_splice(
            bytes in prop::collection::vec(any::<u8>(), 0..200),
            with in prop::collection::vec(any::<u8>(), 0..60),
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
        ) {
            let (a, b) = (a.index(bytes.len() + 1), b.index(bytes.len() + 1));
            let range = a.min(b)..a.max(b);
            let mut want = bytes.clone();
            want.splice(range.clone(), with.iter().copied());
            let mut got = bytes;
            replace(&mut got, range, &with);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn elements_read_back_as_packed(items in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40)) {
            let packed = pack(items.iter().map(Vec::as_slice));
            prop_assert_eq!(count(&packed), items.len());
            let back: Vec<Vec<u8>> = elements(&packed).map(<[u8]>::to_vec).collect();
            prop_assert_eq!(back, items.clone());
            // Copying the tail whole after a new head is a push to the front.
            let mut b = Builder::with_capacity(packed.len());
            b.push(b"head");
            b.push_packed(elements(&packed).remaining_bytes(), count(&packed));
            let pushed = b.finish();
            prop_assert_eq!(count(&pushed), items.len() + 1);
            let back: Vec<&[u8]> = elements(&pushed).collect();
            prop_assert_eq!(back[0], &b"head"[..]);
            prop_assert_eq!(back.len(), items.len() + 1);
        }

        /// Passing over elements lands where taking them one by one does, lengths of
        /// one varint byte and of several alike, past the end included.
        #[test]
        fn passing_over_elements_is_taking_them(
            items in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40),
            n in 0usize..45,
        ) {
            let packed = pack(items.iter().map(Vec::as_slice));
            let mut passed = elements(&packed);
            passed.pass(n);
            let mut taken = elements(&packed);
            taken.by_ref().take(n).for_each(drop);
            prop_assert_eq!(passed.remaining_bytes(), taken.remaining_bytes());
            prop_assert_eq!(elements(&packed).nth(n), items.get(n).map(Vec::as_slice));
            let skipped: Vec<&[u8]> = elements(&packed).skip(n).collect();
            prop_assert_eq!(skipped.len(), items.len().saturating_sub(n));
        }

        #[test]
        fn set_order_is_a_total_order(mut members in prop::collection::vec(prop_oneof![
            any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            prop::collection::vec(any::<u8>(), 0..6),
        ], 0..30)) {
            members.sort_by(|a, b| set_order(a, b));
            for w in members.windows(2) {
                prop_assert_ne!(set_order(&w[0], &w[1]), Ordering::Greater);
                prop_assert_eq!(set_order(&w[0], &w[1]), set_order(&w[1], &w[0]).reverse());
            }
        }
    }

    #[test]
    fn pairs_and_scores_read_back() {
        let mut b = Builder::with_capacity(0);
        b.push_pair(b"f", b"v");
        b.push_pair(b"", b"\r\n");
        let packed = b.finish();
        assert_eq!(count(&packed), 2);
        let got: Vec<_> = pairs(&packed).collect();
        assert_eq!(got, vec![(&b"f"[..], &b"v"[..]), (&b""[..], &b"\r\n"[..])]);

        let mut b = Builder::with_capacity(0);
        b.push_scored(b"a", -1.5);
        b.push_scored(b"b", f64::INFINITY);
        let packed = b.finish();
        let got: Vec<_> = scored(&packed).collect();
        assert_eq!(got, vec![(&b"a"[..], -1.5), (&b"b"[..], f64::INFINITY)]);
    }

    #[test]
    fn integers_are_those_an_intset_holds() {
        assert_eq!(set_integer(b"-12"), Some(-12));
        assert_eq!(set_integer(b"012"), None);
        assert_eq!(set_integer(b"+1"), None);
        assert_eq!(set_integer(b"9223372036854775808"), None);
        assert_eq!(set_order(b"10", b"9"), Ordering::Greater);
        assert_eq!(set_order(b"10", b"a"), Ordering::Less);
    }
}
