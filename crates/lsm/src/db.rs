//! The LSM engine: opening (and recovering) a store, the write path through the
//! write-ahead log and group commit into the memtable, and reads at a sequence number.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use engine::{
    check_sizes, BatchOp, Capabilities, Cursor, Engine, Error, KeyRange, Result, Stats, WriteBatch,
    KIND_DELETE, KIND_PUT,
};

use crate::commit::{CommitQueue, Group};
use crate::cursor::MemCursor;
use crate::memtable::{Lookup, MemTable, MAX_SEQUENCE};
use crate::options::{FsyncPolicy, Options};
use crate::wal::{self, RECORD_PREFIX};
use crate::wal_reader;
use crate::wal_writer::{AppendError, WalWriter};

pub struct Lsm {
    inner: Arc<Inner>,
    syncer: Mutex<Option<Syncer>>,
    /// Held (and locked) for as long as the store is open, so a second process cannot
    /// open it too.
    _lock: File,
}

struct Inner {
    options: Options,
    memtable: MemTable,
    log: Mutex<Log>,
    commit: CommitQueue,
    /// The last sequence number whose write is complete: readers see up to here.
    visible: AtomicU64,
    closed: AtomicBool,
    /// Set once the log's state is uncertain (a failed sync, a failed cut-back); from
    /// then on writes fail with this reason until the store is reopened.
    writes_stopped: Mutex<Option<String>>,
    /// Bytes written since the last sync (for `everysec`).
    unsynced: AtomicBool,
    counters: Counters,
}

/// The log and the buffer a group's record is built in; only a group's leader (and
/// `close`) locks it.
struct Log {
    writer: WalWriter,
    record: Vec<u8>,
}

#[derive(Default)]
struct Counters {
    wal_bytes: AtomicU64,
    wal_syncs: AtomicU64,
    write_groups: AtomicU64,
    write_batches: AtomicU64,
    user_bytes_written: AtomicU64,
    recovered_records: AtomicU64,
    recovery_dropped_bytes: AtomicU64,
}

struct Syncer {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Lsm {
    /// Opens the store in `dir`, creating it if needed, and replays its log.
    pub fn open(dir: &Path, options: Options) -> Result<Lsm> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let lock_path = dir.join("LOCK");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(format!("opening {}", lock_path.display()), e))?;
        lock.try_lock().map_err(|e| {
            Error::io(
                format!(
                    "locking {} (is another process using this store?)",
                    lock_path.display()
                ),
                std::io::Error::other(e.to_string()),
            )
        })?;

        let memtable = MemTable::default();
        let counters = Counters::default();
        let logs = log_files(dir)?;
        let mut last_sequence = 0;
        let mut writer_at = (dir.join(wal::file_name(1)), 0);
        for (i, path) in logs.iter().enumerate() {
            let is_last = i + 1 == logs.len();
            let end = replay_log(path, &options, &memtable, &mut last_sequence, &counters)?;
            if let Some((why, bytes)) = &end.dropped {
                if !is_last {
                    // Only the newest log can have been cut by a crash.
                    return Err(Error::corruption(path, end.valid_len, why.clone()));
                }
                tracing::warn!(file = %path.display(), offset = end.valid_len, bytes, "write-ahead log: dropped {why}");
                counters
                    .recovery_dropped_bytes
                    .fetch_add(*bytes, Ordering::Relaxed);
            }
            writer_at = (path.clone(), end.valid_len);
        }
        let writer = WalWriter::open(&writer_at.0, writer_at.1)
            .map_err(|e| Error::io(format!("opening {}", writer_at.0.display()), e))?;
        if logs.is_empty() {
            sync_dir(dir)?;
        }

        let inner = Arc::new(Inner {
            options: options.clone(),
            memtable,
            log: Mutex::new(Log {
                writer,
                record: Vec::new(),
            }),
            commit: CommitQueue::default(),
            visible: AtomicU64::new(last_sequence),
            closed: AtomicBool::new(false),
            writes_stopped: Mutex::new(None),
            unsynced: AtomicBool::new(false),
            counters,
        });
        let syncer = (options.fsync == FsyncPolicy::EverySec).then(|| Syncer::start(inner.clone()));
        Ok(Lsm {
            inner,
            syncer: Mutex::new(syncer),
            _lock: lock,
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn read(&self, key: &[u8], sequence: u64) -> Option<Vec<u8>> {
        match self.inner.memtable.get(key, sequence) {
            Some(Lookup::Value(value)) => Some(value),
            Some(Lookup::Deleted) | None => None,
        }
    }

    fn snapshot(&self) -> u64 {
        self.inner.visible.load(Ordering::Acquire)
    }
}

/// The store's log files, oldest first.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut logs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        if let Some(number) = entry.file_name().to_str().and_then(wal::parse_file_name) {
            logs.push((number, entry.path()));
        }
    }
    logs.sort();
    Ok(logs.into_iter().map(|(_, path)| path).collect())
}

fn replay_log(
    path: &Path,
    options: &Options,
    memtable: &MemTable,
    last_sequence: &mut u64,
    counters: &Counters,
) -> Result<wal_reader::ReplayEnd> {
    let data =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    wal_reader::replay(path, &data, options.wal_recovery, |offset, record| {
        if record.len() < RECORD_PREFIX {
            return Err(Error::corruption(
                path,
                offset,
                format!("a {}-byte record is too short", record.len()),
            ));
        }
        let sequence = u64::from_le_bytes(record[..8].try_into().unwrap());
        let count = u32::from_le_bytes(record[8..12].try_into().unwrap());
        if sequence <= *last_sequence || sequence + u64::from(count) > MAX_SEQUENCE {
            return Err(Error::corruption(
                path,
                offset,
                format!("record sequence {sequence} after {last_sequence}: out of order"),
            ));
        }
        let batch =
            WriteBatch::decode(count, &record[RECORD_PREFIX..]).map_err(|(at, detail)| {
                Error::corruption(path, offset, format!("record entries, byte {at}: {detail}"))
            })?;
        apply(memtable, sequence, &batch);
        *last_sequence = sequence + u64::from(count) - u64::from(count > 0);
        counters.recovered_records.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

fn apply(memtable: &MemTable, first_sequence: u64, batch: &WriteBatch) {
    for (i, op) in batch.iter().enumerate() {
        let sequence = first_sequence + i as u64;
        match op {
            BatchOp::Put(key, value) => memtable.insert(key, sequence, KIND_PUT, value),
            BatchOp::Delete(key) => memtable.insert(key, sequence, KIND_DELETE, &[]),
        }
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("syncing directory {}", dir.display()), e))
}

impl Inner {
    fn lock_log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopped(&self) -> Option<String> {
        self.writes_stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn stop_writes(&self, why: String) -> Error {
        tracing::error!("{why}; writes stop until the store is reopened");
        let mut stopped = self
            .writes_stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Error::WritesStopped(stopped.get_or_insert(why).clone())
    }

    /// The leader's work for one group: log it, sync it if the policy says so, apply it
    /// to the memtable and make it visible.
    fn write_group(&self, group: Group<'_>) -> Result<()> {
        let mut log = self.lock_log();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(why) = self.stopped() {
            return Err(Error::WritesStopped(why));
        }
        let batch = group.batch;
        let first = self.visible.load(Ordering::Relaxed) + 1;
        if first + u64::from(batch.len()) > MAX_SEQUENCE {
            return Err(self.stop_writes("sequence numbers are exhausted".into()));
        }
        let log = &mut *log;
        log.record.clear();
        log.record.extend_from_slice(&first.to_le_bytes());
        log.record.extend_from_slice(&batch.len().to_le_bytes());
        log.record.extend_from_slice(batch.entries());
        let written = match log.writer.append(&log.record) {
            Ok(written) => written,
            Err(AppendError::Failed(e)) => {
                return Err(Error::io(
                    format!("appending to {}", log.writer.path().display()),
                    e,
                ));
            }
            Err(AppendError::TailUnknown { write, truncate }) => {
                return Err(self.stop_writes(format!(
                    "appending to {} failed ({write}) and cutting the partial write off failed too ({truncate})",
                    log.writer.path().display()
                )));
            }
        };
        self.counters
            .wal_bytes
            .fetch_add(written, Ordering::Relaxed);
        match self.options.fsync {
            FsyncPolicy::Always => {
                log.writer.sync().map_err(|e| {
                    self.stop_writes(format!(
                        "syncing {} failed: {e}",
                        log.writer.path().display()
                    ))
                })?;
                self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
            FsyncPolicy::EverySec => self.unsynced.store(true, Ordering::Release),
            FsyncPolicy::No => {}
        }
        apply(&self.memtable, first, batch);
        let last = first + u64::from(batch.len()) - 1;
        self.visible.store(last, Ordering::Release);
        self.counters.write_groups.fetch_add(1, Ordering::Relaxed);
        self.counters
            .write_batches
            .fetch_add(group.writers, Ordering::Relaxed);
        self.counters
            .user_bytes_written
            .fetch_add(batch.payload_bytes(), Ordering::Relaxed);
        Ok(())
    }

    fn sync_log(&self) -> Result<()> {
        let file = self.lock_log().writer.file();
        self.unsynced.store(false, Ordering::Release);
        file.sync_data()
            .map_err(|e| self.stop_writes(format!("syncing the write-ahead log failed: {e}")))?;
        self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Syncer {
    /// The `everysec` thread: once a second, sync the log if anything was written.
    fn start(inner: Arc<Inner>) -> Syncer {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lsm-wal-sync".into())
            .spawn(move || loop {
                match stopped.recv_timeout(Duration::from_secs(1)) {
                    Err(RecvTimeoutError::Timeout) => {
                        if inner.unsynced.load(Ordering::Acquire) {
                            // The error stops writes and is logged; the thread carries on
                            // so a reopen is the only way back, as for any sync failure.
                            let _ = inner.sync_log();
                        }
                    }
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            })
            .expect("spawn the log sync thread");
        Syncer { stop, thread }
    }
}

impl Engine for Lsm {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: true,
            durable: true,
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        Ok(self.read(key, self.snapshot()))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let sequence = self.snapshot();
        Ok(keys.iter().map(|key| self.read(key, sequence)).collect())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write(&batch)
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.write(&batch)
    }

    fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.check_open()?;
        for op in batch.iter() {
            if let BatchOp::Put(key, value) = op {
                check_sizes(key, value)?;
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.inner
            .commit
            .commit(batch, |group| self.inner.write_group(group))
    }

    fn range(&self, range: KeyRange) -> Result<Box<dyn Cursor + '_>> {
        self.check_open()?;
        Ok(Box::new(MemCursor::new(
            &self.inner.memtable,
            self.snapshot(),
            range,
        )))
    }

    fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.inner.sync_log()
    }

    fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        vec![
            ("sequence", self.snapshot()),
            (
                "memtable_bytes",
                self.inner.memtable.approximate_bytes() as u64,
            ),
            ("memtable_entries", self.inner.memtable.entries()),
            ("wal_bytes", load(&c.wal_bytes)),
            ("wal_syncs", load(&c.wal_syncs)),
            ("write_groups", load(&c.write_groups)),
            ("write_batches", load(&c.write_batches)),
            ("user_bytes_written", load(&c.user_bytes_written)),
            ("recovered_records", load(&c.recovered_records)),
            ("recovery_dropped_bytes", load(&c.recovery_dropped_bytes)),
            ("writes_stopped", u64::from(self.inner.stopped().is_some())),
        ]
    }

    fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Some(syncer) = self.syncer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = syncer.stop.send(());
            let _ = syncer.thread.join();
        }
        // Taking the log waits out a group in flight; later groups see `closed`.
        let log = self.inner.lock_log();
        log.writer.sync().map_err(|e| {
            Error::io(
                format!("syncing {} on close", log.writer.path().display()),
                e,
            )
        })
    }
}

impl Drop for Lsm {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("closing the store: {e}");
        }
    }
}
