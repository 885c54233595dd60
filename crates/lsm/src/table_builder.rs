//! Writes a sorted table (`table_format.md`) from entries in internal-key order.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use engine::{varint, Error, Result};

use crate::block::BlockBuilder;
use crate::bloom;
use crate::internal_key::KeyRef;
use crate::wal::mask;

pub const BLOCK_TRAILER: usize = 5;
pub const FOOTER_SIZE: usize = 56;
pub const MAGIC: u64 = 0x6873_7461_626c_6531;
pub const FORMAT_VERSION: u32 = 1;
const RESTART_INTERVAL: usize = 16;

#[derive(Clone)]
pub struct TableOptions {
    pub block_size: usize,
    pub bloom_bits_per_key: usize,
}

/// What the version set records about a finished table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    pub number: u64,
    pub size: u64,
    pub entries: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

pub struct TableBuilder {
    out: BufWriter<File>,
    path: PathBuf,
    number: u64,
    options: TableOptions,
    offset: u64,
    data: BlockBuilder,
    index: BlockBuilder,
    hashes: Vec<u64>,
    last_user_key: Option<Vec<u8>>,
    smallest: Option<Vec<u8>>,
    entries: u64,
}

impl TableBuilder {
    pub fn create(path: &Path, number: u64, options: TableOptions) -> Result<TableBuilder> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(TableBuilder {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_path_buf(),
            number,
            options,
            offset: 0,
            data: BlockBuilder::new(RESTART_INTERVAL),
            index: BlockBuilder::new(1),
            hashes: Vec::new(),
            last_user_key: None,
            smallest: None,
            entries: 0,
        })
    }

    /// Adds an entry; internal keys must increase.
    pub fn add(&mut self, key: &KeyRef, value: &[u8]) -> Result<()> {
        let bytes = key.as_bytes();
        debug_assert!(
            self.data.is_empty() || KeyRef::new(self.data.last_key()) < key,
            "table keys out of order"
        );
        if self.smallest.is_none() {
            self.smallest = Some(bytes.to_vec());
        }
        if self.last_user_key.as_deref() != Some(key.user_key()) {
            self.hashes.push(bloom::hash(key.user_key()));
            self.last_user_key = Some(key.user_key().to_vec());
        }
        self.data.add(bytes, value);
        self.entries += 1;
        if self.data.estimated_size() >= self.options.block_size {
            self.finish_data_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the unfinished block: where the table would end.
    pub fn file_size(&self) -> u64 {
        self.offset + self.data.estimated_size() as u64
    }

    fn finish_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let last = self.data.last_key().to_vec();
        let contents = self.data.finish();
        let (offset, size) = self.write_block(&contents)?;
        let mut handle = Vec::new();
        varint::put(&mut handle, offset);
        varint::put(&mut handle, size);
        self.index.add(&last, &handle);
        Ok(())
    }

    fn write_block(&mut self, contents: &[u8]) -> Result<(u64, u64)> {
        let offset = self.offset;
        let kind = [0u8];
        let crc = mask(crc32c::crc32c_append(crc32c::crc32c(contents), &kind));
        self.write(contents)?;
        self.write(&kind)?;
        self.write(&crc.to_le_bytes())?;
        Ok((offset, contents.len() as u64))
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Writes the filter, index and footer, syncs the file, and describes it.
    pub fn finish(mut self) -> Result<TableMeta> {
        self.finish_data_block()?;
        let largest = self.index_last_key();
        let filter = bloom::build(&self.hashes, self.options.bloom_bits_per_key);
        let (filter_offset, filter_size) = self.write_block(&filter)?;
        let index = self.index.finish();
        let (index_offset, index_size) = self.write_block(&index)?;
        let mut footer = Vec::with_capacity(FOOTER_SIZE);
        for field in [
            filter_offset,
            filter_size,
            index_offset,
            index_size,
            self.entries,
        ] {
            footer.extend_from_slice(&field.to_le_bytes());
        }
        footer.extend_from_slice(&mask(crc32c::crc32c(&footer)).to_le_bytes());
        footer.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        footer.extend_from_slice(&MAGIC.to_le_bytes());
        debug_assert_eq!(footer.len(), FOOTER_SIZE);
        self.write(&footer)?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e.into_error()))?;
        file.sync_all()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))?;
        Ok(TableMeta {
            number: self.number,
            size: self.offset,
            entries: self.entries,
            smallest: self.smallest.unwrap_or_default(),
            largest,
        })
    }

    fn index_last_key(&self) -> Vec<u8> {
        self.index.last_key().to_vec()
    }
}
