//! The manifest: the log of version edits that says which tables make up the store.
//! Format in `manifest_format.md`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::{varint, Error, Result};

use crate::table_builder::TableMeta;
use crate::wal_reader::{self, WalRecovery};
use crate::wal_writer::{AppendError, WalWriter};

const LOG_NUMBER: u8 = 1;
const NEXT_FILE_NUMBER: u8 = 2;
const LAST_SEQUENCE: u8 = 3;
const ADD_TABLE: u8 = 4;
const DELETE_TABLE: u8 = 5;

/// A table as an edit adds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTable {
    pub level: usize,
    pub meta: TableMeta,
}

/// A change to the store's shape. Applying a manifest's edits in order gives the
/// current version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Logs numbered below this are in tables and no longer needed.
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub added: Vec<NewTable>,
    /// (level, table number)
    pub deleted: Vec<(usize, u64)>,
}

impl VersionEdit {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (tag, value) in [
            (LOG_NUMBER, self.log_number),
            (NEXT_FILE_NUMBER, self.next_file_number),
            (LAST_SEQUENCE, self.last_sequence),
        ] {
            if let Some(value) = value {
                out.push(tag);
                varint::put(&mut out, value);
            }
        }
        for &(level, number) in &self.deleted {
            out.push(DELETE_TABLE);
            varint::put(&mut out, level as u64);
            varint::put(&mut out, number);
        }
        for NewTable { level, meta } in &self.added {
            out.push(ADD_TABLE);
            for value in [*level as u64, meta.number, meta.size, meta.entries] {
                varint::put(&mut out, value);
            }
            for key in [&meta.smallest, &meta.largest] {
                varint::put(&mut out, key.len() as u64);
                out.extend_from_slice(key);
            }
        }
        out
    }

    pub fn decode(mut input: &[u8]) -> std::result::Result<VersionEdit, String> {
        let mut edit = VersionEdit::default();
        let number = |input: &mut &[u8]| -> std::result::Result<u64, String> {
            let (value, used) = varint::get(input).ok_or("a truncated number")?;
            *input = &input[used..];
            Ok(value)
        };
        let bytes = |input: &mut &[u8]| -> std::result::Result<Vec<u8>, String> {
            let len = usize::try_from(number(input)?).map_err(|_| "a huge length")?;
            if len > input.len() {
                return Err(format!("a {len}-byte key with {} bytes left", input.len()));
            }
            let (key, rest) = input.split_at(len);
            *input = rest;
            Ok(key.to_vec())
        };
        let level = |input: &mut &[u8]| -> std::result::Result<usize, String> {
            let level = number(input)?;
            if level >= crate::version::LEVELS as u64 {
                return Err(format!("level {level} is out of range"));
            }
            Ok(level as usize)
        };
        while let Some((&tag, rest)) = input.split_first() {
            input = rest;
            match tag {
                LOG_NUMBER => edit.log_number = Some(number(&mut input)?),
                NEXT_FILE_NUMBER => edit.next_file_number = Some(number(&mut input)?),
                LAST_SEQUENCE => edit.last_sequence = Some(number(&mut input)?),
                DELETE_TABLE => {
                    let level = level(&mut input)?;
                    edit.deleted.push((level, number(&mut input)?));
                }
                ADD_TABLE => {
                    let level = level(&mut input)?;
                    let (number_, size, entries) = (
                        number(&mut input)?,
                        number(&mut input)?,
                        number(&mut input)?,
                    );
                    edit.added.push(NewTable {
                        level,
                        meta: TableMeta {
                            number: number_,
                            size,
                            entries,
                            smallest: bytes(&mut input)?,
                            largest: bytes(&mut input)?,
                        },
                    });
                }
                other => return Err(format!("unknown field tag {other}")),
            }
        }
        Ok(edit)
    }
}

pub fn file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("MANIFEST-")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())?
}

/// The open manifest, appended to as the version changes.
pub struct Manifest {
    writer: WalWriter,
    number: u64,
}

impl Manifest {
    /// Starts manifest `number` holding `snapshot` (the whole current state), syncs it,
    /// and makes it current by renaming a new `CURRENT` over the old one.
    pub fn create(dir: &Path, number: u64, snapshot: &VersionEdit) -> Result<Manifest> {
        let path = dir.join(file_name(number));
        let writer = WalWriter::open(&path, 0)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        let mut manifest = Manifest { writer, number };
        manifest.append(snapshot)?;
        let current = dir.join("CURRENT");
        let temp = dir.join("CURRENT.tmp");
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&temp)?;
            file.write_all(format!("{}\n", file_name(number)).as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &current)?;
            File::open(dir)?.sync_all()
        };
        write().map_err(|e| Error::io(format!("installing {}", current.display()), e))?;
        Ok(manifest)
    }

    pub fn number(&self) -> u64 {
        self.number
    }

    /// Appends `edit` and syncs it: when this returns, the edit survives a crash.
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let path = self.writer.path().to_path_buf();
        self.writer.append(&edit.encode()).map_err(|e| match e {
            AppendError::Failed(e) => Error::io(format!("appending to {}", path.display()), e),
            // A partial edit at the tail would make every later edit look like damage.
            AppendError::TailUnknown { write, truncate } => Error::WritesStopped(format!(
                "appending to {} failed ({write}) and cutting the partial edit off failed too ({truncate})",
                path.display()
            )),
        })?;
        self.writer
            .sync()
            .map_err(|e| Error::io(format!("syncing {}", path.display()), e))
    }
}

/// The edits of the current manifest (the one `CURRENT` names), or `None` for a new
/// store. Damage anywhere but a torn tail is an error: a store whose table list is in
/// doubt must not open.
pub fn read_current(dir: &Path) -> Result<Option<(PathBuf, Vec<VersionEdit>)>> {
    let current = dir.join("CURRENT");
    let name = match std::fs::read_to_string(&current) {
        Ok(name) => name,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", current.display()), e)),
    };
    let name = name.trim_end_matches('\n');
    if parse_file_name(name).is_none() {
        return Err(Error::corruption(
            &current,
            0,
            format!("{name:?} is not a manifest name"),
        ));
    }
    let path = dir.join(name);
    let data =
        std::fs::read(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let mut edits = Vec::new();
    wal_reader::replay(
        &path,
        &data,
        WalRecovery::TolerateTornTail,
        |offset, record| {
            let edit = VersionEdit::decode(record)
                .map_err(|e| Error::corruption(&path, offset, format!("version edit: {e}")))?;
            edits.push(edit);
            Ok(())
        },
    )?;
    Ok(Some((path, edits)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn edits_round_trip(
            log in proptest::option::of(any::<u64>()),
            next in proptest::option::of(any::<u64>()),
            seq in proptest::option::of(any::<u64>()),
            added in proptest::collection::vec((0usize..7, any::<u64>(), any::<u64>(), any::<u64>(), any::<Vec<u8>>(), any::<Vec<u8>>()), 0..4),
            deleted in proptest::collection::vec((0usize..7, any::<u64>()), 0..4),
        ) {
            let edit = VersionEdit {
                log_number: log,
                next_file_number: next,
                last_sequence: seq,
                added: added.into_iter().map(|(level, number, size, entries, smallest, largest)| NewTable {
                    level,
                    meta: TableMeta { number, size, entries, smallest, largest },
                }).collect(),
                deleted,
            };
            let encoded = edit.encode();
            prop_assert_eq!(VersionEdit::decode(&encoded).unwrap(), edit);
            // Every strict prefix that cuts a field is refused, never misread.
            for cut in 0..encoded.len() {
                if let Ok(partial) = VersionEdit::decode(&encoded[..cut]) {
                    prop_assert!(partial.encode() == encoded[..cut]);
                }
            }
        }
    }
}
