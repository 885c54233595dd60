//! The LSM engine: opening (and recovering) a store; the write path through the
//! write-ahead log and group commit into the memtable; freezing full memtables and
//! flushing them to level-0 tables in the background; reads at a sequence number over
//! memtables and tables.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::{
    check_sizes, BatchOp, Capabilities, Cursor, Engine, Error, KeyRange, Result, Stats, WriteBatch,
    KIND_DELETE, KIND_PUT,
};

use crate::block_cache::BlockCache;
use crate::bloom;
use crate::commit::{CommitQueue, Group};
use crate::compaction::{self, Compaction};
use crate::cursor::DbCursor;
use crate::internal_key::{with_lookup_key, KeyRef, MAX_SEQUENCE};
use crate::iterator::{InternalIterator, MemIter, MergingIter};
use crate::manifest::{self, Manifest, NewTable, VersionEdit};
use crate::memtable::{Lookup, MemTable};
use crate::options::{FsyncPolicy, Options};
use crate::table::{ReadCounters, Table};
use crate::table_builder::{TableBuilder, TableMeta, TableOptions};
use crate::version::{Version, LEVELS};
use crate::wal::{self, RECORD_PREFIX};
use crate::wal_reader;
use crate::wal_writer::{AppendError, WalWriter};

pub struct Lsm {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Locked from open until close (or drop), so a second process cannot open the
    /// store meanwhile.
    lock: File,
}

/// What a read needs, swapped as a whole when a memtable is frozen or a flush or
/// compaction installs a new version.
pub struct SuperVersion {
    mem: Arc<MemTable>,
    /// Frozen memtables, newest first.
    imm: Vec<Arc<MemTable>>,
    version: Arc<Version>,
}

struct Inner {
    dir: PathBuf,
    options: Options,
    cache: Arc<BlockCache>,
    read_counters: Arc<ReadCounters>,
    current: Mutex<Arc<SuperVersion>>,
    log: Mutex<Log>,
    commit: CommitQueue,
    /// The last sequence number whose write is complete: readers see up to here.
    visible: AtomicU64,
    next_file_number: AtomicU64,
    /// Tables being written by a flush or compaction: not in any version yet, and not
    /// to be deleted as unused.
    pending_tables: Mutex<BTreeSet<u64>>,
    /// Background work (flushes) and writers stalled on it meet here.
    background: Mutex<Background>,
    background_changed: Condvar,
    closed: AtomicBool,
    /// Set once the store's files are in doubt (a failed sync, a failed flush); from
    /// then on writes fail with this reason until the store is reopened.
    writes_stopped: Mutex<Option<String>>,
    /// Why the last flush or compaction failed, while it is being retried. Writers that
    /// would otherwise wait for a flush fail with it instead.
    background_error: Mutex<Option<String>>,
    /// Bytes written to the log since the last sync (for `everysec`).
    unsynced: AtomicBool,
    /// Records held back in the log writer (`defer_log_writes`). Set and cleared under
    /// the log lock, cleared only once they are written; set before their writes
    /// become visible, so whoever has seen a write and then finds this clear knows
    /// it is in the file.
    log_behind: AtomicBool,
    counters: Counters,
}

/// The log and the buffer a group's record is built in; only a group's leader (and
/// `close`) locks it.
struct Log {
    writer: WalWriter,
    record: Vec<u8>,
    /// `Options::fsync` until [`Engine::set_fsync`] changes it: kept under the log's
    /// lock, so a group is logged and synced under one policy.
    fsync: FsyncPolicy,
}

/// What the compaction thread does next.
enum Work {
    /// The merge a level over its limit needs.
    Merge(Compaction, Arc<Version>),
    /// A whole-store compaction, for the ask with this number and those before it.
    Whole(u64),
}

struct Background {
    manifest: Manifest,
    /// The log number last recorded: logs below it are obsolete.
    log_number: u64,
    /// Per level, the largest key of the last table compacted out of it, so the next
    /// compaction of the level starts after it.
    compact_pointers: [Vec<u8>; LEVELS],
    /// Whole-store compactions asked for ([`Lsm::compact_all`]) and finished: one is
    /// due while `whole_asked > whole_done`, once no memtable frozen at or before the
    /// last ask (log number `whole_after_log` or below) waits for flush.
    whole_asked: u64,
    whole_done: u64,
    whole_after_log: u64,
    shutting_down: bool,
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
    flushes: AtomicU64,
    table_bytes_written: AtomicU64,
    compactions: AtomicU64,
    whole_compactions: AtomicU64,
    compaction_micros: AtomicU64,
    compaction_bytes_read: AtomicU64,
    stall_micros: AtomicU64,
}

impl Lsm {
    /// Opens the store in `dir`, creating it if needed: reads the manifest, replays the
    /// logs newer than the tables, and starts a new manifest.
    pub fn open(dir: &Path, options: Options) -> Result<Lsm> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let lock = lock_dir(dir)?;
        let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
        let read_counters = Arc::<ReadCounters>::default();
        let counters = Counters::default();

        // The tables, from the manifest's edits folded together.
        let mut log_number = 0;
        let mut next_file_number = 1;
        let mut last_sequence = 0;
        let mut tables = BTreeMap::new();
        if let Some((_, edits)) = manifest::read_current(dir)? {
            for edit in edits {
                log_number = edit.log_number.unwrap_or(log_number);
                next_file_number = edit.next_file_number.unwrap_or(next_file_number);
                last_sequence = edit.last_sequence.unwrap_or(last_sequence);
                for (level, number) in edit.deleted {
                    tables.remove(&(level, number));
                }
                for NewTable { level, meta } in edit.added {
                    tables.insert((level, meta.number), meta);
                }
            }
        }
        let snapshot = VersionEdit {
            added: tables
                .into_iter()
                .map(|((level, _), meta)| NewTable { level, meta })
                .collect(),
            ..VersionEdit::default()
        };
        let version = Version::default().apply(&snapshot, |meta| {
            open_table(dir, meta, &cache, &read_counters)
        })?;

        let files = list_files(dir)?;
        next_file_number = next_file_number.max(files.iter().map(|f| f.0 + 1).max().unwrap_or(1));
        let logs: Vec<u64> = files
            .iter()
            .filter(|(number, kind)| *kind == FileKind::Wal && *number >= log_number)
            .map(|f| f.0)
            .collect();

        // Replay the logs the tables do not cover.
        let mem_wal = logs.first().copied().unwrap_or(next_file_number);
        let memtable = MemTable::new(mem_wal, options.memtable_bytes);
        let mut replayed_sequence = 0;
        let mut writer_at = None;
        for (i, &number) in logs.iter().enumerate() {
            let path = dir.join(wal::file_name(number));
            let end = replay_log(
                &path,
                &options,
                &memtable,
                &mut replayed_sequence,
                &counters,
            )?;
            if let Some((why, bytes)) = &end.dropped {
                if i + 1 != logs.len() {
                    // Only the newest log can have been cut by a crash.
                    return Err(Error::corruption(&path, end.valid_len, why.clone()));
                }
                tracing::warn!(file = %path.display(), offset = end.valid_len, bytes, "write-ahead log: dropped {why}");
                counters
                    .recovery_dropped_bytes
                    .fetch_add(*bytes, Ordering::Relaxed);
            }
            writer_at = Some((path, end.valid_len));
        }
        let last_sequence = last_sequence.max(replayed_sequence);
        let (wal_path, wal_len) = writer_at.unwrap_or_else(|| {
            let number = next_file_number;
            next_file_number += 1;
            (dir.join(wal::file_name(number)), 0)
        });
        let writer = WalWriter::open(&wal_path, wal_len)
            .map_err(|e| Error::io(format!("opening {}", wal_path.display()), e))?;

        let manifest_number = next_file_number;
        next_file_number += 1;
        let manifest = Manifest::create(
            dir,
            manifest_number,
            &VersionEdit {
                log_number: Some(mem_wal),
                next_file_number: Some(next_file_number),
                last_sequence: Some(last_sequence),
                ..version.snapshot()
            },
        )?;

        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            options: options.clone(),
            cache,
            read_counters,
            current: Mutex::new(Arc::new(SuperVersion {
                mem: Arc::new(memtable),
                imm: Vec::new(),
                version: Arc::new(version),
            })),
            log: Mutex::new(Log {
                writer,
                record: Vec::new(),
                fsync: options.fsync,
            }),
            commit: CommitQueue::default(),
            visible: AtomicU64::new(last_sequence),
            next_file_number: AtomicU64::new(next_file_number),
            pending_tables: Mutex::default(),
            background: Mutex::new(Background {
                manifest,
                log_number: mem_wal,
                compact_pointers: Default::default(),
                whole_asked: 0,
                whole_done: 0,
                whole_after_log: 0,
                shutting_down: false,
            }),
            background_changed: Condvar::new(),
            closed: AtomicBool::new(false),
            writes_stopped: Mutex::new(None),
            background_error: Mutex::new(None),
            unsynced: AtomicBool::new(false),
            log_behind: AtomicBool::new(false),
            counters,
        });
        inner.delete_obsolete_files(&inner.lock_background())?;

        let mut threads = vec![
            spawn("lsm-flush", {
                let inner = inner.clone();
                move || inner.flush_loop()
            }),
            spawn("lsm-compact", {
                let inner = inner.clone();
                move || inner.compaction_loop()
            }),
        ];
        // Under every policy: CONFIG SET may switch to `everysec` at any time.
        threads.push(spawn("lsm-wal-sync", {
            let inner = inner.clone();
            move || inner.sync_loop()
        }));
        Ok(Lsm {
            inner,
            threads: Mutex::new(threads),
            lock,
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// What to read and the sequence to read at, taken in that order.
    ///
    /// The super version first: its tables never change, so nothing a compaction does
    /// later can take a version this read needs (a compaction only drops versions
    /// hidden from every sequence up to the visible one when it started, and a super
    /// version installed after it is paired here with a later sequence). Writes up to
    /// the sequence that went into a memtable frozen after the super version was
    /// taken are not seen: the read sees the store as of that freeze, which is still
    /// one consistent point.
    fn read_point(&self) -> (u64, Arc<SuperVersion>) {
        let sv = self.inner.current();
        (self.inner.visible.load(Ordering::Acquire), sv)
    }

    fn read(&self, sv: &SuperVersion, key: &[u8], sequence: u64) -> Result<Option<Vec<u8>>> {
        let hash = bloom::hash(key);
        for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
            match mem.get(key, hash, sequence) {
                Some(Lookup::Value(value)) => return Ok(Some(value)),
                Some(Lookup::Deleted) => return Ok(None),
                None => {}
            }
        }
        let found = with_lookup_key(key, sequence, |lookup| sv.version.get(lookup, hash))?;
        Ok(match found {
            Some((KIND_PUT, value)) => Some(value),
            _ => None,
        })
    }
}

fn cursor(sv: Arc<SuperVersion>, sequence: u64, range: KeyRange) -> Result<Box<dyn Cursor>> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
        children.push(Box::new(MemIter::new(mem.clone())));
    }
    sv.version.iterators(&mut children);
    Ok(Box::new(DbCursor::new(
        MergingIter::new(children),
        sv,
        sequence,
        range,
    )?))
}

/// The store frozen at one sequence number: reads through it see every write up to
/// then and none after, for as long as it is held. It keeps the memtables and tables
/// of that moment alive (tables that compaction replaces are unlinked but stay open),
/// so a snapshot held for long holds their memory and disk space.
pub struct Snapshot {
    sv: Arc<SuperVersion>,
    sequence: u64,
}

impl Snapshot {
    pub fn sequence(&self) -> u64 {
        self.sequence
    }
}

impl Lsm {
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.check_open()?;
        let (sequence, sv) = self.read_point();
        Ok(Snapshot { sv, sequence })
    }

    pub fn get_at(&self, snapshot: &Snapshot, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        self.read(&snapshot.sv, key, snapshot.sequence)
    }

    /// Merges every table down to the deepest level that has any (see
    /// `compaction::pick_whole`), with the memtable's writes flushed first, and returns
    /// once that is done: every tombstone and overwritten version no reader needs is
    /// gone. Writes meanwhile go on; those after the call may remain above.
    pub fn compact_all(&self) -> Result<()> {
        let ask = self.ask_whole_compaction()?;
        let mut background = self.inner.lock_background();
        while background.whole_done < ask {
            if background.shutting_down {
                return Err(Error::Closed);
            }
            if let Some(why) = self.inner.stopped() {
                return Err(Error::WritesStopped(why));
            }
            if let Some(why) = self.inner.background_error() {
                return Err(Error::io(
                    "compacting the whole store (retried in the background)",
                    std::io::Error::other(why),
                ));
            }
            background = self
                .inner
                .background_changed
                .wait_timeout(background, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Ok(())
    }

    /// Freezes the memtable (if it holds anything) and asks the compaction thread for a
    /// whole-store compaction once it is flushed. Returns the ask's number.
    fn ask_whole_compaction(&self) -> Result<u64> {
        self.check_open()?;
        let inner = &self.inner;
        let after_log = {
            let mut log = inner.lock_log();
            // Checked under the log's lock, as a write group does: `close` takes it
            // after setting `closed`, so no log is made once the store is closed.
            if inner.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            if let Some(why) = inner.stopped() {
                return Err(Error::WritesStopped(why));
            }
            // Under the log's lock no other writer can freeze the memtable meanwhile.
            let sv = inner.current();
            if sv.mem.entries() > 0 {
                inner.freeze_memtable(&mut log)?;
                sv.mem.wal_number
            } else {
                sv.imm.first().map_or(0, |newest| newest.wal_number)
            }
        };
        let mut background = inner.lock_background();
        background.whole_asked += 1;
        background.whole_after_log = background.whole_after_log.max(after_log);
        inner.background_changed.notify_all();
        Ok(background.whole_asked)
    }

    pub fn range_at(&self, snapshot: &Snapshot, range: KeyRange) -> Result<Box<dyn Cursor>> {
        self.check_open()?;
        cursor(snapshot.sv.clone(), snapshot.sequence, range)
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawn a background thread")
}

fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join("LOCK");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    lock.try_lock().map_err(|e| {
        Error::io(
            format!(
                "locking {} (is another process using this store?)",
                path.display()
            ),
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(lock)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum FileKind {
    Wal,
    Table,
    Manifest,
}

fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// The store's numbered files, in number order.
fn list_files(dir: &Path) -> Result<Vec<(u64, FileKind)>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        // Only regular files are the store's; anything else with such a name is left be.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let parsed = if let Some(n) = wal::parse_file_name(&name) {
            Some((n, FileKind::Wal))
        } else if let Some(n) = manifest::parse_file_name(&name) {
            Some((n, FileKind::Manifest))
        } else {
            name.strip_suffix(".sst")
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse().ok())
                .map(|n| (n, FileKind::Table))
        };
        files.extend(parsed);
    }
    files.sort();
    Ok(files)
}

fn open_table(
    dir: &Path,
    meta: &TableMeta,
    cache: &Arc<BlockCache>,
    counters: &Arc<ReadCounters>,
) -> Result<Arc<Table>> {
    let path = dir.join(table_file_name(meta.number));
    Table::open(&path, meta.number, cache.clone(), counters.clone()).map(Arc::new)
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
    let mut writer = memtable.writer();
    for (i, op) in batch.iter().enumerate() {
        let sequence = first_sequence + i as u64;
        match op {
            BatchOp::Put(key, value) => writer.insert(key, sequence, KIND_PUT, value),
            BatchOp::Delete(key) => writer.insert(key, sequence, KIND_DELETE, &[]),
        }
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("syncing directory {}", dir.display()), e))
}

/// The tables a flush or compaction is writing. Their numbers are kept from deletion
/// while this lives; when it drops they are released, and unless the tables were
/// installed their files (partial or whole) are deleted, so a failed attempt leaves
/// nothing behind.
struct NewTables<'a> {
    inner: &'a Inner,
    numbers: Vec<u64>,
    installed: bool,
}

impl<'a> NewTables<'a> {
    fn new(inner: &'a Inner) -> NewTables<'a> {
        NewTables {
            inner,
            numbers: Vec::new(),
            installed: false,
        }
    }

    /// A number for the next table, registered before its file exists.
    fn allocate(&mut self) -> u64 {
        let number = self.inner.next_file_number.fetch_add(1, Ordering::Relaxed);
        self.inner
            .pending_tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(number);
        self.numbers.push(number);
        number
    }
}

impl Drop for NewTables<'_> {
    fn drop(&mut self) {
        let mut pending = self
            .inner
            .pending_tables
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for number in &self.numbers {
            pending.remove(number);
            if !self.installed {
                let _ = std::fs::remove_file(self.inner.dir.join(table_file_name(*number)));
            }
        }
    }
}

impl Inner {
    fn current(&self) -> Arc<SuperVersion> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether groups are held back in the log writer until `write_held_back`; not
    /// under `fsync always`, whose groups are synced before they are acknowledged.
    fn defers_log_writes(&self, log: &Log) -> bool {
        self.options.defer_log_writes && log.fsync != FsyncPolicy::Always
    }

    /// Writes the records held back to the log file. Their writes are already visible,
    /// so if that fails the log no longer holds every visible write: writes stop.
    fn write_held_back(&self, log: &mut Log) -> Result<()> {
        if !log.writer.is_buffering() {
            return Ok(());
        }
        let written = log.writer.write_buffered().map_err(|e| {
            let why = match e {
                AppendError::Failed(e) => e.to_string(),
                AppendError::TailUnknown { write, truncate } => {
                    format!("{write}, and cutting the partial write off failed too ({truncate})")
                }
            };
            self.stop_writes(format!(
                "writing held-back records to {} failed ({why}); they are lost",
                log.writer.path().display()
            ))
        });
        // Cleared even on failure: the records are gone, and writes have stopped.
        self.log_behind.store(false, Ordering::Release);
        self.counters
            .wal_bytes
            .fetch_add(written?, Ordering::Relaxed);
        Ok(())
    }

    fn lock_log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_background(&self) -> MutexGuard<'_, Background> {
        self.background.lock().unwrap_or_else(|e| e.into_inner())
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
        let why = stopped.get_or_insert(why).clone();
        drop(stopped);
        // Writers stalled on a flush that will not come must hear about it.
        self.background_changed.notify_all();
        Error::WritesStopped(why)
    }

    /// The leader's work for one group: make room in the memtable if it is full, log
    /// the group, sync it if the policy says so, apply it and make it visible.
    fn write_group(&self, group: Group<'_>) -> Result<()> {
        let mut log = self.lock_log();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(why) = self.stopped() {
            return Err(Error::WritesStopped(why));
        }
        let mut mem = self.current().mem.clone();
        if mem.approximate_bytes() >= self.options.memtable_bytes {
            mem = self.freeze_memtable(&mut log)?;
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
        if self.defers_log_writes(log) {
            log.writer.buffer(&log.record);
            self.log_behind.store(true, Ordering::Release);
        } else {
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
        }
        match log.fsync {
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
        apply(&mem, first, batch);
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

    /// Freezes the full memtable and starts a new one with a new log, first waiting
    /// (a write stall) while too many frozen memtables wait for flush: memory stays
    /// bounded when flushing falls behind. Called by the group leader, holding the log.
    fn freeze_memtable(&self, log: &mut Log) -> Result<Arc<MemTable>> {
        let stall_start = Instant::now();
        let mut background = self.lock_background();
        while self.must_stall() {
            // Closing joins the threads that would end the stall.
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            if let Some(why) = self.stopped() {
                return Err(Error::WritesStopped(why));
            }
            if let Some(why) = self.background_error() {
                return Err(Error::io(
                    "no room for more writes while background work fails",
                    std::io::Error::other(why),
                ));
            }
            background = self
                .background_changed
                .wait_timeout(background, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(background);
        let stalled = stall_start.elapsed();
        if stalled > Duration::from_micros(100) {
            self.counters
                .stall_micros
                .fetch_add(stalled.as_micros() as u64, Ordering::Relaxed);
        }

        self.write_held_back(log)?;
        let number = self.next_file_number.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(wal::file_name(number));
        // The old log's writes must be durable before the new log's are acknowledged
        // under `always`; under the other policies a sync here costs one per memtable.
        log.writer.sync().map_err(|e| {
            self.stop_writes(format!(
                "syncing {} failed: {e}",
                log.writer.path().display()
            ))
        })?;
        let writer = WalWriter::open(&path, 0)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        sync_dir(&self.dir)?;
        log.writer = writer;
        let mem = Arc::new(MemTable::new(number, self.options.memtable_bytes));
        // One step under the lock, so a version installed meanwhile is kept.
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let mut imm = vec![current.mem.clone()];
        imm.extend(current.imm.iter().cloned());
        *current = Arc::new(SuperVersion {
            mem: mem.clone(),
            imm,
            version: current.version.clone(),
        });
        drop(current);
        self.background_changed.notify_all();
        Ok(mem)
    }

    /// Writers wait while frozen memtables or level-0 tables pile up faster than
    /// flushes and compactions clear them.
    fn must_stall(&self) -> bool {
        let sv = self.current();
        sv.imm.len() >= self.options.max_immutable_memtables
            || sv.version.levels[0].len() >= self.options.l0_stop_writes_trigger
    }

    /// The flush thread: writes the oldest frozen memtable to a level-0 table, records
    /// it in the manifest, then drops the memtable and the logs it covered.
    fn flush_loop(&self) {
        let mut failures = 0;
        loop {
            let mut background = self.lock_background();
            while !background.shutting_down && self.current().imm.is_empty() {
                background = self
                    .background_changed
                    .wait(background)
                    .unwrap_or_else(|e| e.into_inner());
            }
            if background.shutting_down {
                return;
            }
            drop(background);
            let result = self.flush_oldest();
            if !self.settle("flushing a memtable", result, &mut failures) {
                return;
            }
        }
    }

    /// After a flush or compaction: on success clears a standing failure; on failure
    /// records it (so stalled writers fail fast) and waits a growing while before the
    /// caller retries. Returns false when the thread should end: at shutdown, or when
    /// the failure leaves the store's files in doubt.
    fn settle(&self, what: &str, result: Result<()>, failures: &mut u32) -> bool {
        match result {
            Ok(()) => {
                if *failures > 0 {
                    *failures = 0;
                    *self
                        .background_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = None;
                    tracing::info!("{what} succeeded again");
                }
                self.background_changed.notify_all();
                true
            }
            Err(Error::WritesStopped(why)) => {
                self.stop_writes(format!("{what} failed: {why}"));
                false
            }
            Err(e) => {
                *failures += 1;
                let why = format!("{what} failed: {e}");
                tracing::warn!("{why}; retrying");
                *self
                    .background_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(why);
                self.background_changed.notify_all();
                let backoff = Duration::from_millis(50 << (*failures).min(6));
                let background = self.lock_background();
                let (background, _) = self
                    .background_changed
                    .wait_timeout_while(background, backoff, |b| !b.shutting_down)
                    .unwrap_or_else(|e| e.into_inner());
                !background.shutting_down
            }
        }
    }

    fn background_error(&self) -> Option<String> {
        self.background_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Writes the oldest frozen memtable to a table (without holding any lock: this
    /// thread is the only one that removes frozen memtables), then installs it.
    fn flush_oldest(&self) -> Result<()> {
        let sv = self.current();
        let oldest = sv.imm.last().expect("a frozen memtable to flush").clone();
        // The logs below the next newer memtable's hold nothing else.
        let log_number = match sv.imm.len() {
            1 => sv.mem.wal_number,
            n => sv.imm[n - 2].wal_number,
        };
        let mut edit = VersionEdit {
            log_number: Some(log_number),
            last_sequence: Some(self.visible.load(Ordering::Acquire)),
            ..VersionEdit::default()
        };
        let mut new_tables = NewTables::new(self);
        if oldest.entries() > 0 {
            let number = new_tables.allocate();
            let meta = self.write_table(number, &oldest)?;
            self.counters
                .table_bytes_written
                .fetch_add(meta.size, Ordering::Relaxed);
            edit.added.push(NewTable { level: 0, meta });
        }
        let mut background = self.lock_background();
        background.log_number = log_number;
        self.install_edit(&mut background, &mut edit, |imm| {
            let flushed = imm.pop().expect("the flushed memtable is still frozen");
            assert!(
                Arc::ptr_eq(&flushed, &oldest),
                "memtables flush oldest first"
            );
        })?;
        new_tables.installed = true;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Records `edit` in the manifest, then applies it to the current version and
    /// installs the result (with `change_imm` applied to the frozen memtables), then
    /// deletes the files nothing uses any more. The caller holds `background`, which
    /// orders version changes.
    fn install_edit(
        &self,
        background: &mut Background,
        edit: &mut VersionEdit,
        change_imm: impl FnOnce(&mut Vec<Arc<MemTable>>),
    ) -> Result<()> {
        edit.next_file_number = Some(self.next_file_number.load(Ordering::Relaxed));
        // Versions change only here, under `background`, so `base` stays current. The
        // new tables are opened (and so checked) before the manifest names them.
        let base = self.current().version.clone();
        let version = base.apply(edit, |meta| {
            open_table(&self.dir, meta, &self.cache, &self.read_counters)
        })?;
        background.manifest.append(edit)?;
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(
            Arc::ptr_eq(&current.version, &base),
            "versions change under `background` only"
        );
        let mut imm = current.imm.clone();
        change_imm(&mut imm);
        *current = Arc::new(SuperVersion {
            mem: current.mem.clone(),
            imm,
            version: Arc::new(version),
        });
        drop(current);
        self.delete_obsolete_files(background)
    }

    /// The compaction thread: a whole-store compaction once one is asked for and its
    /// memtables are flushed; otherwise, while some level is over its limit, merge
    /// tables down.
    fn compaction_loop(&self) {
        let mut failures = 0;
        loop {
            let mut background = self.lock_background();
            let work = loop {
                if background.shutting_down {
                    return;
                }
                let sv = self.current();
                if background.whole_asked > background.whole_done
                    && sv
                        .imm
                        .iter()
                        .all(|frozen| frozen.wal_number > background.whole_after_log)
                {
                    break Work::Whole(background.whole_asked);
                }
                let version = sv.version.clone();
                if let Some(compaction) =
                    compaction::pick(&version, &self.options, &background.compact_pointers)
                {
                    break Work::Merge(compaction, version);
                }
                background = self
                    .background_changed
                    .wait(background)
                    .unwrap_or_else(|e| e.into_inner());
            };
            drop(background);
            let result = match work {
                Work::Merge(compaction, version) => self.compact(compaction, &version),
                Work::Whole(ask) => self.compact_whole().map(|()| {
                    self.counters
                        .whole_compactions
                        .fetch_add(1, Ordering::Relaxed);
                    let mut background = self.lock_background();
                    background.whole_done = background.whole_done.max(ask);
                }),
            };
            if !self.settle("compaction", result, &mut failures) {
                return;
            }
        }
    }

    /// Runs the steps of a whole-store compaction. Flushes may add level-0 tables
    /// meanwhile, which the steps take too; the count of steps is bounded so that a
    /// steady stream of flushes cannot keep it going.
    fn compact_whole(&self) -> Result<()> {
        for _ in 0..=LEVELS {
            let version = self.current().version.clone();
            let Some((compaction, last)) = compaction::pick_whole(&version) else {
                return Ok(());
            };
            self.compact(compaction, &version)?;
            if last {
                break;
            }
        }
        Ok(())
    }

    fn compact(&self, compaction: Compaction, version: &Version) -> Result<()> {
        let started = Instant::now();
        let output_level = compaction.output_level;
        let options = TableOptions {
            block_size: self.options.block_size,
            bloom_bits_per_key: self.options.bloom_bits_per_key,
        };
        let mut new_tables = NewTables::new(self);
        let outputs = compaction::run(
            &compaction,
            version,
            &self.options,
            self.visible.load(Ordering::Acquire),
            || {
                let number = new_tables.allocate();
                TableBuilder::create(
                    &self.dir.join(table_file_name(number)),
                    number,
                    options.clone(),
                )
            },
        )?;
        sync_dir(&self.dir)?;
        let inputs = compaction.inputs.iter().map(|f| (compaction.level, f));
        let overlapping = compaction.overlapping.iter().map(|f| (output_level, f));
        let mut edit = VersionEdit {
            deleted: inputs
                .chain(overlapping)
                .map(|(level, f)| (level, f.meta.number))
                .collect(),
            added: outputs
                .iter()
                .map(|meta| NewTable {
                    level: output_level,
                    meta: meta.clone(),
                })
                .collect(),
            ..VersionEdit::default()
        };
        let read: u64 = compaction
            .inputs
            .iter()
            .chain(&compaction.overlapping)
            .map(|f| f.meta.size)
            .sum();
        let written: u64 = outputs.iter().map(|m| m.size).sum();
        let mut background = self.lock_background();
        if let Some(largest) = compaction
            .inputs
            .iter()
            .map(|f| f.meta.largest.clone())
            .max_by(|a, b| KeyRef::new(a).cmp(KeyRef::new(b)))
        {
            background.compact_pointers[compaction.level] = largest;
        }
        self.install_edit(&mut background, &mut edit, |_| {})?;
        drop(background);
        new_tables.installed = true;
        let c = &self.counters;
        c.compactions.fetch_add(1, Ordering::Relaxed);
        c.compaction_bytes_read.fetch_add(read, Ordering::Relaxed);
        c.table_bytes_written.fetch_add(written, Ordering::Relaxed);
        c.compaction_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn write_table(&self, number: u64, mem: &Arc<MemTable>) -> Result<TableMeta> {
        let path = self.dir.join(table_file_name(number));
        let mut builder = TableBuilder::create(
            &path,
            number,
            TableOptions {
                block_size: self.options.block_size,
                bloom_bits_per_key: self.options.bloom_bits_per_key,
            },
        )?;
        // A hot key overwritten many times in the memtable leaves only the versions a
        // reader can still see: the rest would be written only to be compacted away.
        let mut versions = compaction::HiddenVersions::new(self.visible.load(Ordering::Acquire));
        let mut it = MemIter::new(mem.clone());
        it.seek_to_first()?;
        while it.valid() {
            if !versions.next(it.key()).0 {
                builder.add(it.key(), it.value())?;
            }
            it.next()?;
        }
        let meta = builder.finish()?;
        sync_dir(&self.dir)?;
        Ok(meta)
    }

    /// Deletes logs below `log_number`, tables no version uses and old manifests.
    /// Readers hold tables open by `Arc`, and an open file outlives its unlinking, so
    /// a cursor still reading a deleted table keeps working.
    fn delete_obsolete_files(&self, background: &Background) -> Result<()> {
        // Listed before the live set is taken: a table's number is pending before its
        // file exists, so any table file listed is in the live set below unless it
        // really is obsolete.
        let files = list_files(&self.dir)?;
        let mut live = self.current().version.table_numbers();
        live.extend(
            self.pending_tables
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter(),
        );
        let (log_number, manifest) = (background.log_number, background.manifest.number());
        for (number, kind) in files {
            let (obsolete, name) = match kind {
                FileKind::Wal => (number < log_number, wal::file_name(number)),
                FileKind::Table => (!live.contains(&number), table_file_name(number)),
                FileKind::Manifest => (number != manifest, manifest::file_name(number)),
            };
            if obsolete {
                if kind == FileKind::Table {
                    self.cache.forget_table(number);
                }
                let path = self.dir.join(name);
                std::fs::remove_file(&path)
                    .map_err(|e| Error::io(format!("deleting {}", path.display()), e))?;
            }
        }
        Ok(())
    }

    fn sync_log(&self) -> Result<()> {
        let file = {
            let mut log = self.lock_log();
            self.write_held_back(&mut log)?;
            log.writer.file()
        };
        self.unsynced.store(false, Ordering::Release);
        file.sync_data()
            .map_err(|e| self.stop_writes(format!("syncing the write-ahead log failed: {e}")))?;
        self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The `everysec` thread: once a second, sync the log if anything was written.
    fn sync_loop(&self) {
        let mut background = self.lock_background();
        while !background.shutting_down {
            background = self
                .background_changed
                .wait_timeout(background, Duration::from_secs(1))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if self.unsynced.load(Ordering::Acquire) {
                drop(background);
                // A failure stops writes and is logged; only a reopen recovers.
                let _ = self.sync_log();
                background = self.lock_background();
            }
        }
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
        let (sequence, sv) = self.read_point();
        self.read(&sv, key, sequence)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let (sequence, sv) = self.read_point();
        keys.iter()
            .map(|key| self.read(&sv, key, sequence))
            .collect()
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
        let (sequence, sv) = self.read_point();
        cursor(sv, sequence, range)
    }

    fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.inner.sync_log()
    }

    fn write_held_back(&self) -> Result<()> {
        // Called before every reply: the log's lock only when records wait.
        if !self.inner.log_behind.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut log = self.inner.lock_log();
        self.inner.write_held_back(&mut log)
    }

    fn set_fsync(&self, policy: FsyncPolicy) -> Result<()> {
        self.check_open()?;
        let was = {
            let mut log = self.inner.lock_log();
            // Records held back under the old policy go to the file first: `always`
            // appends straight to it, and must not land ahead of them.
            self.inner.write_held_back(&mut log)?;
            std::mem::replace(&mut log.fsync, policy)
        };
        if policy == FsyncPolicy::Always && was != FsyncPolicy::Always {
            // What was acknowledged before the switch is made as durable as what
            // follows it.
            self.inner.sync_log()?;
        }
        Ok(())
    }

    /// Does nothing while a whole-store compaction is asked for and not finished:
    /// callers ask when walks meet deleted keys, and while one runs they meet many,
    /// but asking again would switch the memtable (a log sync, under the log's lock)
    /// and compact again for the few deleted since. Those are left for the next ask.
    fn compact_in_background(&self) -> Result<()> {
        let background = self.inner.lock_background();
        if background.whole_asked > background.whole_done {
            return Ok(());
        }
        drop(background);
        self.ask_whole_compaction().map(drop)
    }

    fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let r = &self.inner.read_counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let (sequence, sv) = self.read_point();
        let mut stats = vec![
            ("sequence", sequence),
            ("memtable_bytes", sv.mem.approximate_bytes() as u64),
            ("immutable_memtables", sv.imm.len() as u64),
            ("wal_bytes", load(&c.wal_bytes)),
            ("wal_syncs", load(&c.wal_syncs)),
            ("write_groups", load(&c.write_groups)),
            ("write_batches", load(&c.write_batches)),
            ("user_bytes_written", load(&c.user_bytes_written)),
            ("table_bytes_written", load(&c.table_bytes_written)),
            ("flushes", load(&c.flushes)),
            ("compactions", load(&c.compactions)),
            ("whole_compactions", load(&c.whole_compactions)),
            ("compaction_micros", load(&c.compaction_micros)),
            ("compaction_bytes_read", load(&c.compaction_bytes_read)),
            ("stall_micros", load(&c.stall_micros)),
            ("block_reads", load(&r.block_reads)),
            ("table_bytes_read", load(&r.bytes_read)),
            ("bloom_negatives", load(&r.bloom_negatives)),
            ("block_cache_hits", load(&self.inner.cache.hits)),
            ("block_cache_misses", load(&self.inner.cache.misses)),
            ("block_cache_bytes", self.inner.cache.bytes() as u64),
            ("recovered_records", load(&c.recovered_records)),
            ("recovery_dropped_bytes", load(&c.recovery_dropped_bytes)),
            ("writes_stopped", u64::from(self.inner.stopped().is_some())),
        ];
        const LEVEL_NAMES: [(&str, &str); LEVELS] = [
            ("l0_tables", "l0_bytes"),
            ("l1_tables", "l1_bytes"),
            ("l2_tables", "l2_bytes"),
            ("l3_tables", "l3_bytes"),
            ("l4_tables", "l4_bytes"),
            ("l5_tables", "l5_bytes"),
            ("l6_tables", "l6_bytes"),
        ];
        for (level, (tables, bytes)) in LEVEL_NAMES.iter().enumerate() {
            stats.push((tables, sv.version.levels[level].len() as u64));
            stats.push((bytes, sv.version.level_bytes(level)));
        }
        stats
    }

    fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.lock_background().shutting_down = true;
        self.inner.background_changed.notify_all();
        for thread in self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = thread.join();
        }
        // Taking the log waits out a group in flight; later groups see `closed`.
        let mut log = self.inner.lock_log();
        self.inner.write_held_back(&mut log)?;
        log.writer.sync().map_err(|e| {
            Error::io(
                format!("syncing {} on close", log.writer.path().display()),
                e,
            )
        })?;
        // Another process (or another `Lsm` here) may open the directory now.
        self.lock
            .unlock()
            .map_err(|e| Error::io("releasing the directory lock", e))
    }
}

impl Drop for Lsm {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("closing the store: {e}");
        }
    }
}
