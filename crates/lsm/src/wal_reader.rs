//! Reads a log file back into logical records, telling a torn tail (a crash cut the
//! last write short) from damage. The rules are in `wal_format.md`.

use std::path::Path;

use engine::Error;

use crate::wal::{
    fragment_checksum, header_check, BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST, MIDDLE,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalRecovery {
    /// Drop a torn tail; refuse to open on any other damage.
    TolerateTornTail,
    /// Keep every record before the first damage of any kind and drop the rest.
    PointInTime,
}

/// Where replay stopped.
#[derive(Debug, PartialEq, Eq)]
pub struct ReplayEnd {
    /// Bytes of the file that hold whole, good records: appends continue here.
    pub valid_len: u64,
    /// What was dropped after `valid_len`, if anything: why, and how many bytes.
    pub dropped: Option<(String, u64)>,
}

struct Damage {
    /// Where the damaged fragment starts.
    offset: usize,
    detail: String,
    /// A crash's cut rather than damage.
    torn: bool,
}

/// Calls `apply(offset, record)` for each logical record of the log in `data` (the
/// whole file at `path`), in order. Errors from `apply` stop the replay and are
/// returned as they are.
pub fn replay(
    path: &Path,
    data: &[u8],
    mode: WalRecovery,
    mut apply: impl FnMut(u64, &[u8]) -> Result<(), Error>,
) -> Result<ReplayEnd, Error> {
    let mut pos = 0usize;
    // The record being assembled from fragments: where it started, and its data.
    let mut record_start = 0usize;
    let mut record = Vec::new();
    let mut in_record = false;
    let damage = loop {
        let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if block_left < HEADER_SIZE {
            let end = (pos + block_left).min(data.len());
            if data[pos..end].iter().any(|&b| b != 0) {
                break Some(damaged(data, pos, "nonzero bytes in a block trailer"));
            }
            pos = end;
            if pos == data.len() {
                break in_record.then(|| torn(pos, "the file ends inside a record"));
            }
            continue;
        }
        if pos == data.len() {
            break in_record.then(|| torn(pos, "the file ends inside a record"));
        }
        let rest = &data[pos..];
        if rest.len() < HEADER_SIZE {
            break Some(torn(pos, "the file ends inside a fragment header"));
        }
        let header = &rest[..HEADER_SIZE];
        if header.iter().all(|&b| b == 0) {
            break Some(damaged(data, pos, "a zero fragment header"));
        }
        let checksum = u32::from_le_bytes(header[..4].try_into().unwrap());
        let length = u16::from_le_bytes([header[4], header[5]]);
        let kind = header[6];
        if header_check(length, kind) != header[7] {
            break Some(damaged(data, pos, "fragment header check mismatch"));
        }
        let end = pos + HEADER_SIZE + length as usize;
        if HEADER_SIZE + length as usize > block_left {
            break Some(damaged(data, pos, "fragment crosses a block boundary"));
        }
        if end > data.len() {
            break Some(torn(pos, "the file ends inside a fragment"));
        }
        let fragment = &data[pos + HEADER_SIZE..end];
        if fragment_checksum(kind, fragment) != checksum {
            break Some(damaged(data, pos, "fragment checksum mismatch"));
        }
        match (kind, in_record) {
            (FULL, false) | (FIRST, false) => {
                record_start = pos;
                record.clear();
                in_record = kind == FIRST;
            }
            (MIDDLE, true) | (LAST, true) => in_record = kind == MIDDLE,
            (FULL | FIRST, true) => {
                break Some(damaged(data, pos, "a record starts inside another"));
            }
            (MIDDLE | LAST, false) => {
                break Some(damaged(data, pos, "a record continues that never started"));
            }
            (other, _) => {
                break Some(damaged(
                    data,
                    pos,
                    &format!("unknown fragment type {other}"),
                ))
            }
        }
        record.extend_from_slice(fragment);
        pos = end;
        if !in_record {
            apply(record_start as u64, &record)?;
        }
    };
    let Some(damage) = damage else {
        return Ok(ReplayEnd {
            valid_len: data.len() as u64,
            dropped: None,
        });
    };
    // A damaged fragment takes the whole record it belongs to with it.
    let cut = if in_record {
        record_start
    } else {
        damage.offset
    };
    if damage.torn || mode == WalRecovery::PointInTime {
        return Ok(ReplayEnd {
            valid_len: cut as u64,
            dropped: Some((
                format!("{} at offset {}", damage.detail, damage.offset),
                (data.len() - cut) as u64,
            )),
        });
    }
    Err(Error::corruption(path, damage.offset as u64, damage.detail))
}

fn torn(offset: usize, detail: &str) -> Damage {
    Damage {
        offset,
        detail: detail.to_string(),
        torn: true,
    }
}

/// Damage at `offset`, unless it and everything after it is zeros: space a crash left
/// allocated but unwritten.
fn damaged(data: &[u8], offset: usize, detail: &str) -> Damage {
    let zeros = data[offset..].iter().all(|&b| b == 0);
    Damage {
        offset,
        detail: if zeros {
            format!("zeros from here to the end of the file ({detail})")
        } else {
            detail.to_string()
        },
        torn: zeros,
    }
}
