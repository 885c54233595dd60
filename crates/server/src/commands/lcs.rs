//! LCS: the longest common subsequence of two strings, its length, or where it lies.

use resp::Frame;

use super::{error, int, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::entry::Kind;

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`, answered as Redis
/// answers it, matches listed from the ends of the strings backwards.
pub fn lcs(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let (a, b) = (
        ctx.read_of(&args[1], Kind::String)?,
        ctx.read_of(&args[2], Kind::String)?,
    );
    if [&a, &b]
        .iter()
        .any(|e| e.as_ref().is_some_and(|e| !e.is_string()))
    {
        return error("ERR The specified keys must contain string values");
    }
    let a = a.map(|e| e.value).unwrap_or_default();
    let b = b.map(|e| e.value).unwrap_or_default();
    let (mut want_len, mut want_idx, mut with_match_len, mut min_match_len) =
        (false, false, false, 0u64);
    let mut options = args[3..].iter();
    while let Some(option) = options.next() {
        match upper(option).as_slice() {
            b"LEN" => want_len = true,
            b"IDX" => want_idx = true,
            b"WITHMATCHLEN" => with_match_len = true,
            b"MINMATCHLEN" if options.len() > 0 => {
                let Some(n) = options.next().and_then(|n| parse_integer(n)) else {
                    return error(NOT_AN_INTEGER);
                };
                min_match_len = n.max(0) as u64;
            }
            _ => return error(SYNTAX_ERROR),
        }
    }
    if want_len && want_idx {
        return error("ERR If you want both the length and indexes, please just use IDX.");
    }
    // The table holds a 4-byte length per pair of prefixes: bounded as any one
    // value is, so a pair of long strings gets an error, not gigabytes.
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1);
    if cells.saturating_mul(4) > ctx.server.config.proto_max_bulk_len() as u64 {
        return error(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        );
    }
    let table = Table::new(&a, &b);
    let total = table.at(a.len(), b.len());
    if want_len {
        return int(total as i64);
    }
    let (common, matches) = table.walk_back(&a, &b);
    if !want_idx {
        return reply(Frame::Bulk(common));
    }
    let matches = matches
        .into_iter()
        .filter(|m| min_match_len == 0 || m.len() >= min_match_len)
        .map(|m| {
            let mut entry = vec![
                Frame::Array(vec![
                    Frame::Integer(m.a.0 as i64),
                    Frame::Integer(m.a.1 as i64),
                ]),
                Frame::Array(vec![
                    Frame::Integer(m.b.0 as i64),
                    Frame::Integer(m.b.1 as i64),
                ]),
            ];
            if with_match_len {
                entry.push(Frame::Integer(m.len() as i64));
            }
            Frame::Array(entry)
        })
        .collect();
    reply(Frame::Map(vec![
        (Frame::bulk("matches"), Frame::Array(matches)),
        (Frame::bulk("len"), Frame::Integer(total as i64)),
    ]))
}

/// `at(i, j)`: the LCS length of the first `i` bytes of `a` and the first `j` of `b`.
struct Table {
    width: usize,
    cells: Vec<u32>,
}

/// A run of the common subsequence contiguous in both strings: inclusive ranges.
struct Match {
    a: (usize, usize),
    b: (usize, usize),
}

impl Match {
    fn len(&self) -> u64 {
        (self.a.1 - self.a.0 + 1) as u64
    }
}

impl Table {
    fn new(a: &[u8], b: &[u8]) -> Table {
        let width = b.len() + 1;
        let mut cells = vec![0u32; (a.len() + 1) * width];
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                cells[i * width + j] = if a[i - 1] == b[j - 1] {
                    cells[(i - 1) * width + j - 1] + 1
                } else {
                    cells[(i - 1) * width + j].max(cells[i * width + j - 1])
                };
            }
        }
        Table { width, cells }
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }

    /// The subsequence itself and its runs, from the ends of the strings backwards.
    /// On a tie the walk steps back in `b`, which decides which of several equally
    /// long subsequences is reported (as Redis decides it).
    fn walk_back(&self, a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<Match>) {
        let mut common = Vec::with_capacity(self.at(a.len(), b.len()) as usize);
        let mut matches = Vec::new();
        let mut run: Option<Match> = None;
        let (mut i, mut j) = (a.len(), b.len());
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                common.push(a[i - 1]);
                match &mut run {
                    Some(m) => {
                        m.a.0 = i - 1;
                        m.b.0 = j - 1;
                    }
                    None => {
                        run = Some(Match {
                            a: (i - 1, i - 1),
                            b: (j - 1, j - 1),
                        })
                    }
                }
                i -= 1;
                j -= 1;
                // A run that reached the start of either string is complete.
                if i == 0 || j == 0 {
                    matches.extend(run.take());
                }
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                matches.extend(run.take());
            }
        }
        common.reverse();
        (common, matches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_subsequence(s: &[u8], of: &[u8]) -> bool {
        let mut rest = of.iter();
        s.iter().all(|c| rest.any(|d| d == c))
    }

    proptest! {
        #[test]
        fn the_result_is_a_common_subsequence_of_the_computed_length(
            a in proptest::collection::vec(0u8..4, 0..30),
            b in proptest::collection::vec(0u8..4, 0..30),
        ) {
            let table = Table::new(&a, &b);
            let (common, matches) = table.walk_back(&a, &b);
            prop_assert_eq!(common.len() as u32, table.at(a.len(), b.len()));
            prop_assert!(is_subsequence(&common, &a) && is_subsequence(&common, &b));
            // The runs cover the subsequence exactly, each the same bytes in both.
            let covered: u64 = matches.iter().map(Match::len).sum();
            prop_assert_eq!(covered, common.len() as u64);
            for m in &matches {
                prop_assert_eq!(&a[m.a.0..=m.a.1], &b[m.b.0..=m.b.1]);
            }
        }
    }
}
