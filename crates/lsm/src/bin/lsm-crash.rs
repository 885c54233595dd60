//! The LSM engine's crash harness.
//!
//! `lsm-crash [--cycles N] [--seed S] [--dir D]` runs N cycles: start a child that
//! writes batches from several threads and prints each one it got an acknowledgement
//! for (every other cycle under `fsync always`, the others under `fsync no` with log
//! writes held back, each batch acknowledged only after `write_held_back`, as the
//! server does before a reply); SIGKILL it at a random moment (while it recovers, writes,
//! syncs, flushes, compacts, or merges the whole store down, which one more thread asks
//! for every few milliseconds); reopen the store here and check that it opens, that every acknowledged batch
//! is there, and that the state is exactly some prefix of each writer's batches (no
//! batch half-applied, no stray bytes). The store carries over between cycles.
//!
//! `lsm-crash full-disk [--dir D]` runs a child whose file size limit (`ulimit -f`)
//! stands in for a full disk: its writes must fail with a clear I/O error while reads
//! keep working, and a reopen without the limit must give back every acknowledged write.
//!
//! Every batch is a function of (seed, writer, batch number), so a failing cycle is
//! replayed by its seed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::{Engine, Error, WriteBatch};
use lsm::{FsyncPolicy, Lsm, Options};

const WRITERS: u64 = 3;
const KEYS_PER_WRITER: u64 = 200;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("child") => child(
            Path::new(&args[1]),
            args[2].parse().expect("seed"),
            args[3] == "held-back",
        ),
        Some("full-disk-child") => full_disk_child(Path::new(&args[1])),
        Some("full-disk") => full_disk(&flags(&args[1..])),
        _ => crash_cycles(&flags(&args)),
    };
    if let Err(e) = result {
        eprintln!("lsm-crash: {e}");
        std::process::exit(1);
    }
}

struct Flags {
    cycles: u64,
    seed: u64,
    dir: Option<PathBuf>,
}

fn flags(args: &[String]) -> Flags {
    let mut flags = Flags {
        cycles: 50,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
        dir: None,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--cycles" => {
                flags.cycles = value
                    .parse()
                    .unwrap_or_else(|_| usage("--cycles takes a number"))
            }
            "--seed" => {
                flags.seed = value
                    .parse()
                    .unwrap_or_else(|_| usage("--seed takes a number"))
            }
            "--dir" => flags.dir = Some(PathBuf::from(value)),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    flags
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "lsm-crash: {problem}\nusage: lsm-crash [full-disk] [--cycles N] [--seed S] [--dir D]"
    );
    std::process::exit(2);
}

/// splitmix64: small, and the same everywhere, so batches replay from a seed.
struct Rng(u64);

impl Rng {
    fn new(parts: &[u64]) -> Rng {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for &part in parts {
            rng.0 ^= part;
            rng.next();
        }
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn marker_key(writer: u64) -> Vec<u8> {
    format!("marker:{writer}").into_bytes()
}

fn data_key(writer: u64, k: u64) -> Vec<u8> {
    format!("w{writer}:{k}").into_bytes()
}

/// Batch `n` (from 1) of `writer`: three puts or deletes of its own keys, and its
/// marker set to `n`. Now and then a value spans several log blocks.
fn batch(seed: u64, writer: u64, n: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut rng = Rng::new(&[seed, writer, n]);
    let mut ops = Vec::new();
    for _ in 0..3 {
        let k = rng.below(KEYS_PER_WRITER);
        let value = (rng.below(4) != 0).then(|| {
            let len = if rng.below(50) == 0 {
                30_000 + rng.below(40_000)
            } else {
                rng.below(200)
            };
            let mut value = format!("{writer}:{n}:{k}:").into_bytes();
            value.extend((0..len).map(|i| (i as u8) ^ (n as u8)));
            value
        });
        ops.push((data_key(writer, k), value));
    }
    ops.push((marker_key(writer), Some(n.to_string().into_bytes())));
    ops
}

/// Small memtables and levels, so kills land during memtable freezes, flushes,
/// compactions and manifest edits too, not only log writes.
fn open(dir: &Path) -> Result<Lsm, Error> {
    Lsm::open(dir, crash_options())
}

/// Small memtables and tables, so that cycles cross flushes and compactions.
fn crash_options() -> Options {
    Options {
        memtable_bytes: 64 * 1024,
        block_size: 1024,
        l0_compaction_trigger: 2,
        level1_bytes: 256 * 1024,
        level_size_ratio: 4,
        table_file_bytes: 64 * 1024,
        ..full_disk_options()
    }
}

/// One memtable larger than the file size limit, so the log is the file that fills.
fn full_disk_options() -> Options {
    Options {
        fsync: FsyncPolicy::Always,
        ..Options::default()
    }
}

fn open_for_full_disk(dir: &Path) -> Result<Lsm, Error> {
    Lsm::open(dir, full_disk_options())
}

fn marker(store: &Lsm, writer: u64) -> Result<u64, String> {
    match store.get(&marker_key(writer)).map_err(|e| e.to_string())? {
        None => Ok(0),
        Some(v) => String::from_utf8(v)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("writer {writer}'s marker is not a number")),
    }
}

/// The child: writers continue from their markers until killed, printing `ack W N`
/// after batch N of writer W is acknowledged.
fn child(dir: &Path, seed: u64, held_back: bool) -> Result<(), String> {
    let options = if held_back {
        Options {
            fsync: FsyncPolicy::No,
            defer_log_writes: true,
            ..crash_options()
        }
    } else {
        crash_options()
    };
    let store = Arc::new(Lsm::open(dir, options).map_err(|e| e.to_string())?);
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (store, stdout) = (store.clone(), stdout.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut n = marker(&store, writer)?;
                loop {
                    n += 1;
                    let mut write = WriteBatch::new();
                    for (key, value) in batch(seed, writer, n) {
                        match value {
                            Some(v) => write.put(&key, &v),
                            None => write.delete(&key),
                        };
                    }
                    store.write(&write).map_err(|e| e.to_string())?;
                    if held_back {
                        store.write_held_back().map_err(|e| e.to_string())?;
                    }
                    let mut out = stdout.lock().unwrap();
                    writeln!(out, "ack {writer} {n}")
                        .and_then(|()| out.flush())
                        .map_err(|e| e.to_string())?;
                }
            })
        })
        .collect();
    // Whole-store compactions drop tombstones at once, so a kill in one must leave
    // no deleted value showing again.
    let compactor = std::thread::spawn(move || -> Result<(), String> {
        loop {
            store.compact_all().map_err(|e| e.to_string())?;
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    for t in threads.into_iter().chain([compactor]) {
        t.join().map_err(|_| "a thread panicked".to_string())??;
    }
    Ok(())
}

fn crash_cycles(flags: &Flags) -> Result<(), String> {
    let (dir, _temp) = store_dir(flags)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut rng = Rng::new(&[flags.seed]);
    println!("lsm-crash: seed {} in {}", flags.seed, dir.display());
    let mut total_acks = 0u64;
    for cycle in 0..flags.cycles {
        let mut child = Command::new(&exe)
            .arg("child")
            .arg(&dir)
            .arg(flags.seed.to_string())
            .arg(if cycle % 2 == 0 {
                "always"
            } else {
                "held-back"
            })
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the child: {e}"))?;
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut acked, mut lines) = (BTreeMap::new(), 0u64);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut parts = line.split(' ');
                if let (Some("ack"), Some(w), Some(n)) = (parts.next(), parts.next(), parts.next())
                {
                    if let (Ok(w), Ok(n)) = (w.parse::<u64>(), n.parse::<u64>()) {
                        acked.insert(w, n);
                        lines += 1;
                    }
                }
            }
            (acked, lines)
        });
        // Mostly while it writes; sometimes while it is still opening the store.
        let delay = if rng.below(5) == 0 {
            rng.below(15)
        } else {
            15 + rng.below(150)
        };
        std::thread::sleep(Duration::from_millis(delay));
        child
            .kill()
            .map_err(|e| format!("killing the child: {e}"))?;
        let status = child.wait().map_err(|e| e.to_string())?;
        let (acked, acks) = reader.join().unwrap();
        total_acks += acks;
        if status.success() {
            return Err(format!("cycle {cycle}: the child exited by itself"));
        }

        let store =
            open(&dir).map_err(|e| format!("cycle {cycle}: reopening after the kill: {e}"))?;
        for writer in 0..WRITERS {
            let n = marker(&store, writer)?;
            let acked = acked.get(&writer).copied().unwrap_or(0);
            if n < acked {
                return Err(format!(
                    "cycle {cycle}: writer {writer} had batch {acked} acknowledged but the store holds only up to {n}"
                ));
            }
            let mut want = BTreeMap::new();
            for i in 1..=n {
                for (key, value) in batch(flags.seed, writer, i) {
                    want.insert(key, value);
                }
            }
            for k in 0..KEYS_PER_WRITER {
                let key = data_key(writer, k);
                let got = store.get(&key).map_err(|e| e.to_string())?;
                if got != want.get(&key).cloned().flatten() {
                    return Err(format!(
                        "cycle {cycle}: writer {writer} key {k} is not what batches 1..={n} leave (seed {})",
                        flags.seed
                    ));
                }
            }
        }
        store.close().map_err(|e| e.to_string())?;
    }
    let store = open(&dir).map_err(|e| e.to_string())?;
    let tables: u64 = store
        .stats()
        .iter()
        .filter(|(name, _)| name.ends_with("_tables"))
        .map(|(_, n)| n)
        .sum();
    println!(
        "lsm-crash: {} cycles passed ({total_acks} acknowledged batches, {tables} tables at the end, seed {})",
        flags.cycles, flags.seed
    );
    Ok(())
}

/// Writes 1 KiB values until a write fails, then checks the failure is a clear I/O
/// error, that reads still work and that writes keep failing the same way.
fn full_disk_child(dir: &Path) -> Result<(), String> {
    let store = open_for_full_disk(dir).map_err(|e| e.to_string())?;
    let value = vec![b'x'; 1024];
    let mut acked = 0u64;
    let error = loop {
        match store.put(format!("key{acked}").as_bytes(), &value) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
        if acked > 1_000_000 {
            return Err("the file size limit never took effect".into());
        }
    };
    if !matches!(error, Error::Io { .. }) {
        return Err(format!("a full disk should be an I/O error, got: {error}"));
    }
    for i in 0..acked {
        if store
            .get(format!("key{i}").as_bytes())
            .map_err(|e| e.to_string())?
            .as_deref()
            != Some(&value[..])
        {
            return Err(format!("key{i} unreadable after the write error"));
        }
    }
    match store.put(b"one more", &value) {
        Err(Error::Io { .. }) => {}
        other => return Err(format!("a second write on a full disk gave {other:?}")),
    }
    println!("acked {acked}");
    println!("error {error}");
    Ok(())
}

fn full_disk(flags: &Flags) -> Result<(), String> {
    let (dir, _temp) = store_dir(flags)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // A file size limit (in KiB for bash's ulimit) stands in for a full disk. SIGXFSZ
    // would kill the child; ignored, the write fails with EFBIG instead.
    let script = "trap '' XFSZ; ulimit -f 256; exec \"$0\" full-disk-child \"$1\"";
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(&exe)
        .arg(&dir)
        .output()
        .map_err(|e| format!("running bash: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "full-disk child failed: {}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let acked: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("acked "))
        .and_then(|n| n.parse().ok())
        .ok_or("the child did not report its acknowledged writes")?;
    let store =
        open_for_full_disk(&dir).map_err(|e| format!("reopening after the full disk: {e}"))?;
    for i in 0..acked {
        if store
            .get(format!("key{i}").as_bytes())
            .map_err(|e| e.to_string())?
            .is_none()
        {
            return Err(format!(
                "key{i} was acknowledged before the disk filled but is gone"
            ));
        }
    }
    store
        .put(b"after", b"room again")
        .map_err(|e| format!("writing after the limit is gone: {e}"))?;
    print!("{stdout}");
    println!("lsm-crash: full disk handled ({acked} writes acknowledged and kept)");
    Ok(())
}

/// Where the store goes: `--dir`, or a temporary directory removed when the second
/// value drops.
fn store_dir(flags: &Flags) -> Result<(PathBuf, Option<TempDir>), String> {
    match &flags.dir {
        Some(dir) => Ok((dir.clone(), None)),
        None => {
            let temp = tempdir()?;
            Ok((temp.0.clone(), Some(temp)))
        }
    }
}

/// A directory removed on drop (the binary avoids a tempfile dependency of its own).
struct TempDir(PathBuf);

fn tempdir() -> Result<TempDir, String> {
    let dir = std::env::temp_dir().join(format!("lsm-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(TempDir(dir))
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
