//! The memory engine's RDB file on disk (its format: `dump_payload/rdb_file.rs`):
//! written by SAVE and SHUTDOWN (through `Server::save`) and by BGSAVE and the save
//! schedule in a child process (`background_save.rs`), loaded when the server starts.
//! The lsm engine keeps its data itself; there only DEBUG RELOAD and LOADAOF write
//! the keys out in this format and read them back.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::db::Db;
use crate::dump_payload::rdb_file::{self, RdbWriter};
use crate::entry::{Entry, Kind};
use crate::server::Server;

/// Where the file is: `dir`/`dbfilename`, as Redis's.
pub fn path(server: &Server) -> std::path::PathBuf {
    server.config.dir.join(server.config.value("dbfilename"))
}

/// What a save needs besides the keys, read before it starts: a background save's
/// child may take no lock (`background_save.rs`), and the settings and libraries are
/// behind locks.
pub struct SavePlan {
    path: PathBuf,
    /// The function libraries' payload, if any are loaded.
    libraries: Option<Vec<u8>>,
    /// Unix milliseconds the save is of: keys past their deadline then are left out.
    now: u64,
    /// `rdb-key-save-delay`: microseconds to sleep after each key, or, below zero,
    /// one microsecond once in that many keys (as Redis's, for tests that need a
    /// background save to take a while).
    key_delay: i64,
    /// `rdbcompression`.
    compress: bool,
}

impl SavePlan {
    /// Reads what the save needs; the caller runs alone, so it is one moment's.
    pub fn new(server: &Server) -> SavePlan {
        SavePlan {
            path: path(server),
            libraries: crate::commands::function::dump_loaded(server),
            now: crate::entry::now_ms(),
            key_delay: server
                .config
                .value("rdb-key-save-delay")
                .parse()
                .unwrap_or(0),
            compress: server.config.rdb_compression(),
        }
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The file a save by process `pid` writes before renaming it over the RDB file
    /// (Redis's name for it).
    pub fn temp(&self, pid: u32) -> PathBuf {
        self.dir().join(format!("temp-{pid}.rdb"))
    }

    fn pause_after_key(&self) {
        let micros = match self.key_delay {
            0 => return,
            d if d > 0 => d as u64,
            d => u64::from(rand::random::<u64>().is_multiple_of(d.unsigned_abs())),
        };
        if micros > 0 {
            std::thread::sleep(std::time::Duration::from_micros(micros));
        }
    }
}

/// Writes the memory engine's keys and function libraries to its RDB file
/// (`dump_payload/rdb_file.rs`), as Redis does: to a temporary file, synced, then
/// renamed over the old one, so that a crash leaves one or the other whole. The
/// caller runs alone, so the file holds one moment's data.
pub fn write(server: &Server) -> Result<(), String> {
    write_planned(&server.db, &SavePlan::new(server))
}

/// [`write`] with what it needs read beforehand; it reads the keys only, takes no
/// lock and changes nothing, so the child of a background save can run it.
pub fn write_planned(db: &Db, plan: &SavePlan) -> Result<(), String> {
    let dir = plan.dir();
    let temp = plan.temp(std::process::id());
    let write = || -> Result<(), String> {
        let io = |e: std::io::Error| e.to_string();
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = std::fs::File::create(&temp).map_err(io)?;
        let file = write_to(db, plan, BufWriter::with_capacity(1 << 16, file))?;
        let file = file.into_inner().map_err(|e| e.error().to_string())?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&temp, &plan.path).map_err(io)?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("writing {}: {e}", plan.path.display())
    })
}

/// The keys and function libraries in the RDB format, written to `out`.
fn write_to<W: Write>(db: &Db, plan: &SavePlan, out: W) -> Result<W, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut rdb = RdbWriter::new(out, plan.now / 1000, plan.compress).map_err(io)?;
    if let Some(libraries) = &plan.libraries {
        rdb.functions(libraries).map_err(io)?;
    }
    db.for_each_saved(plan.now, |key, entry| {
        let payload = crate::commands::dump::payload(&entry, plan.compress)?;
        rdb.key(key, entry.deadline, &payload).map_err(io)?;
        plan.pause_after_key();
        Ok(())
    })?;
    rdb.finish().map_err(io)
}

/// What an RDB file of the server's keys and function libraries would hold, in
/// memory (DEBUG LOADAOF on the lsm engine, which reloads through it).
pub fn copy(server: &Server) -> Result<Vec<u8>, String> {
    write_to(&server.db, &SavePlan::new(server), Vec::new())
}

/// Loads a [`copy`] over what the server holds, each key replacing one of its name.
pub fn load_copy(server: &Server, copy: &[u8]) -> Result<Counts, String> {
    load_from(server, copy, true)
}

/// What loading the file found.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Keys stored.
    pub keys: u64,
    /// Keys past their deadline, dropped.
    pub expired: u64,
    pub libraries: usize,
}

/// Loads the RDB file, if there is one, into an empty server at startup: merged, as
/// there is nothing to collide with, so no key is looked up first.
pub fn load(server: &Server) -> Result<Option<Counts>, String> {
    load_into(server, true)
}

/// Loads the RDB file, if there is one, over what the server holds (DEBUG RELOAD): a
/// key or function library of a name the server has already fails the load, after
/// what came before it is loaded, unless `merge` lets the file's replace it.
pub fn load_into(server: &Server, merge: bool) -> Result<Option<Counts>, String> {
    let path = path(server);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    load_from(server, file, merge)
        .map(Some)
        .map_err(|e| format!("loading {}: {e}", path.display()))
}

fn load_from(server: &Server, source: impl Read, merge: bool) -> Result<Counts, String> {
    let mut loaded = Loaded {
        db: &server.db,
        now: crate::entry::now_ms(),
        counts: Counts::default(),
        codes: Vec::new(),
        failed: None,
        merge,
    };
    let max_len = server.config.proto_max_bulk_len();
    rdb_file::read(source, max_len, &mut loaded)
        .and_then(|()| loaded.failed.take().map_or(Ok(()), Err))?;
    let mut counts = loaded.counts;
    counts.libraries = crate::commands::function::load_codes(server, &loaded.codes, merge)?;
    Ok(counts)
}

/// An RDB file's keys and libraries, as they are read.
struct Loaded<'a> {
    db: &'a Db,
    now: u64,
    counts: Counts,
    codes: Vec<Vec<u8>>,
    /// The first key that could not be stored.
    failed: Option<String>,
    /// Whether a key replaces one of its name (see [`load_into`]).
    merge: bool,
}

impl rdb_file::Loader for Loaded<'_> {
    fn key(&mut self, key: Vec<u8>, kind: Kind, value: Vec<u8>, deadline: Option<u64>) {
        if self.failed.is_some() {
            return;
        }
        if deadline.is_some_and(|d| d <= self.now) {
            self.counts.expired += 1;
            return;
        }
        if !self.merge {
            match self.db.contains(&key) {
                Ok(false) => {}
                Ok(true) => {
                    self.failed = Some(format!("duplicate key '{}'", key.escape_ascii()));
                    return;
                }
                Err(e) => {
                    self.failed = Some(e.to_string());
                    return;
                }
            }
        }
        let entry = Entry {
            kind,
            ..Entry::plain(value, deadline)
        };
        match self.db.set_entry(&key, &entry) {
            Ok(()) => self.counts.keys += 1,
            Err(e) => self.failed = Some(e.to_string()),
        }
    }

    fn function(&mut self, code: Vec<u8>) {
        self.codes.push(code);
    }
}
