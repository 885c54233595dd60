//! Appends logical records to a log file, fragmenting them across 32 KiB blocks.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::wal::{
    fragment_checksum, header_check, BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST, MIDDLE,
};

pub struct WalWriter {
    file: Arc<File>,
    path: PathBuf,
    /// Bytes in the file that hold whole records.
    len: u64,
    /// Framed records not yet written to the file: the one being appended, or those
    /// [`WalWriter::buffer`] holds back (their blocks continue from `len`).
    framed: Vec<u8>,
}

impl WalWriter {
    /// Continues the log at `path` after its first `len` bytes, cutting anything after
    /// them (a torn tail recovery found).
    /// The file is in append mode, so after a cut the next write lands at the new end.
    pub fn open(path: &Path, len: u64) -> std::io::Result<WalWriter> {
        let file = File::options().create(true).append(true).open(path)?;
        if file.metadata()?.len() != len {
            file.set_len(len)?;
            file.sync_all()?;
        }
        Ok(WalWriter {
            file: Arc::new(file),
            path: path.to_path_buf(),
            len,
            framed: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file, for a background syncer.
    pub fn file(&self) -> Arc<File> {
        self.file.clone()
    }

    /// Writes `record` as one logical record with a single `write`; returns the bytes
    /// written. A log either appends or holds back: a failed append drops what it
    /// frames, which must be only this record (its caller applies nothing then).
    pub fn append(&mut self, record: &[u8]) -> Result<u64, AppendError> {
        assert!(!self.is_buffering(), "append to a log holding records back");
        self.buffer(record);
        self.write_buffered()
    }

    /// Whether records are held back.
    pub fn is_buffering(&self) -> bool {
        !self.framed.is_empty()
    }

    /// Writes the records held back with a single `write`; returns the bytes written.
    /// On failure they are dropped and the file is cut back to where it was, so no
    /// partial record is left behind; if even that fails, the second error is
    /// returned and the log must not be appended to again.
    pub fn write_buffered(&mut self) -> Result<u64, AppendError> {
        if self.framed.is_empty() {
            return Ok(0);
        }
        let mut file = &*self.file;
        let written = file.write_all(&self.framed);
        let framed = self.framed.len() as u64;
        self.framed.clear();
        match written {
            Ok(()) => {
                self.len += framed;
                Ok(framed)
            }
            Err(write) => match self.file.set_len(self.len) {
                Ok(()) => Err(AppendError::Failed(write)),
                Err(truncate) => Err(AppendError::TailUnknown { write, truncate }),
            },
        }
    }

    /// Makes the written records durable (not those held back).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Frames `record` after the records held back, for a later
    /// [`WalWriter::write_buffered`]: many records then cost one system call.
    pub fn buffer(&mut self, record: &[u8]) {
        let mut offset = ((self.len + self.framed.len() as u64) % BLOCK_SIZE as u64) as usize;
        let mut rest = record;
        let mut first = true;
        loop {
            let left_in_block = BLOCK_SIZE - offset;
            if left_in_block < HEADER_SIZE {
                self.framed.resize(self.framed.len() + left_in_block, 0);
                offset = 0;
                continue;
            }
            let room = left_in_block - HEADER_SIZE;
            let take = rest.len().min(room);
            let last = take == rest.len();
            let kind = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, false) => MIDDLE,
                (false, true) => LAST,
            };
            let data = &rest[..take];
            self.framed
                .extend_from_slice(&fragment_checksum(kind, data).to_le_bytes());
            self.framed.extend_from_slice(&(take as u16).to_le_bytes());
            self.framed.push(kind);
            self.framed.push(header_check(take as u16, kind));
            self.framed.extend_from_slice(data);
            offset += HEADER_SIZE + take;
            rest = &rest[take..];
            first = false;
            if last {
                return;
            }
        }
    }
}

#[derive(Debug)]
pub enum AppendError {
    /// The write failed and the file is back as it was: later appends may succeed.
    Failed(std::io::Error),
    /// The write failed and so did cutting the partial write off.
    TailUnknown {
        write: std::io::Error,
        truncate: std::io::Error,
    },
}
