//! BGSAVE on the memory engine, made as Redis makes it: the process forks while the
//! caller runs alone (the gate held exclusively, so no command is half done), the
//! child writes the RDB file from its copy-on-write image of memory and exits, and
//! the parent goes on serving. The periodic work reaps the child ([`BackgroundSave::
//! reap`]) and the server records the outcome (LASTSAVE, INFO persistence).
//!
//! The child is a copy of one thread of a multi-threaded process: a lock another
//! thread held at the fork stays held in it for ever. So the parent reads beforehand
//! everything behind a lock (`rdb_save::SavePlan`: settings, function libraries), and
//! the child reads only the key space, which is lock-free, changes nothing (keys past
//! their deadline are skipped, not deleted), logs nothing, and leaves through
//! `_exit`, running no destructor and no exit handler. What went wrong, if anything,
//! it writes to a pipe that the parent reads once it has exited.

use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::db::Db;
use crate::rdb_save::{self, SavePlan};

/// The error Redis answers a save with while a background save runs.
pub const IN_PROGRESS: &str = "ERR Background save already in progress";

/// The most of a child's error message the parent keeps.
const MAX_REPORT: usize = 4096;

/// The background save running, if any, and what INFO reports of past ones.
pub struct BackgroundSave {
    child: Mutex<Option<Child>>,
    /// Seconds the last finished one took (INFO's rdb_last_bgsave_time_sec), -1
    /// before any.
    last_seconds: AtomicI64,
    /// Microseconds the last fork took (INFO's latest_fork_usec) and how many there
    /// were (total_forks).
    latest_fork_micros: AtomicU64,
    forks: AtomicU64,
}

struct Child {
    pid: libc::pid_t,
    started: Instant,
    /// `Db::changes` at the fork: what the file holds once it is written.
    changes: u64,
    temp: PathBuf,
    /// The child's error message, written before it exits.
    report: PipeReader,
}

/// How a background save ended.
pub struct Finished {
    /// `Db::changes` at its fork.
    pub changes: u64,
    pub outcome: Result<(), String>,
}

impl Default for BackgroundSave {
    fn default() -> Self {
        BackgroundSave {
            child: Mutex::new(None),
            last_seconds: AtomicI64::new(-1),
            latest_fork_micros: AtomicU64::new(0),
            forks: AtomicU64::new(0),
        }
    }
}

impl BackgroundSave {
    fn child(&self) -> MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forks a child that writes `db` as `plan` says, unless one runs already. The
    /// caller runs alone, so the child's copy holds one moment's data; `changes` is
    /// `Db::changes` now.
    pub fn start(&self, db: &Db, plan: SavePlan, changes: u64) -> Result<(), String> {
        let mut child = self.child();
        if child.is_some() {
            return Err(IN_PROGRESS.into());
        }
        let (report, report_writer) =
            std::io::pipe().map_err(|e| format!("ERR opening a pipe for the save: {e}"))?;
        let parent = std::process::id();
        let started = Instant::now();
        // SAFETY: the child runs `write_in_child`, which never returns: it takes no
        // lock (the plan holds what was behind one), reads memory the fork copied,
        // and leaves through `_exit`. The parent goes on as before.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            drop(report);
            write_in_child(db, &plan, report_writer, parent);
        }
        drop(report_writer);
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("ERR could not fork the background save: {e}"));
        }
        let micros = started.elapsed().as_micros().try_into().unwrap_or(u64::MAX);
        self.latest_fork_micros.store(micros, Ordering::Relaxed);
        self.forks.fetch_add(1, Ordering::Relaxed);
        *child = Some(Child {
            pid,
            started,
            changes,
            temp: plan.temp(pid as u32),
            report,
        });
        Ok(())
    }

    /// Whether a background save runs.
    pub fn running(&self) -> bool {
        self.child().is_some()
    }

    /// How the background save ended, if it has since the last call.
    pub fn reap(&self) -> Option<Finished> {
        let mut slot = self.child();
        let child = slot.as_mut()?;
        let mut status = 0;
        // SAFETY: waits, without blocking, for a child this process forked and has
        // not reaped; `status` is a valid place for its status.
        let reaped = unsafe { libc::waitpid(child.pid, &mut status, libc::WNOHANG) };
        if reaped == 0 {
            return None;
        }
        let mut child = slot.take().expect("a child was running");
        drop(slot);
        let seconds = child.started.elapsed().as_secs();
        self.last_seconds
            .store(seconds.try_into().unwrap_or(i64::MAX), Ordering::Relaxed);
        let outcome = if reaped < 0 {
            Err(format!(
                "waiting for the save's process: {}",
                std::io::Error::last_os_error()
            ))
        } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            Ok(())
        } else if libc::WIFEXITED(status) {
            let mut message = String::new();
            let _ = (&mut child.report)
                .take(MAX_REPORT as u64)
                .read_to_string(&mut message);
            Err(message)
        } else {
            Err(format!(
                "the save's process ended by signal {}",
                libc::WTERMSIG(status)
            ))
        };
        if outcome.is_err() {
            // A child that failed removed its file; one killed could not.
            let _ = std::fs::remove_file(&child.temp);
        }
        Some(Finished {
            changes: child.changes,
            outcome,
        })
    }

    /// Stops the background save, if one runs, and removes its unfinished file: for
    /// SHUTDOWN and FLUSHALL, which make it pointless, as Redis does. Nothing is
    /// recorded of it: it neither failed nor saved.
    pub fn kill(&self) {
        let Some(child) = self.child().take() else {
            return;
        };
        // SAFETY: `child.pid` is a child of this process not yet reaped, so the pid is
        // still its own; `waitpid` reaps it once the signal has ended it.
        unsafe {
            libc::kill(child.pid, libc::SIGKILL);
            libc::waitpid(child.pid, std::ptr::null_mut(), 0);
        }
        let _ = std::fs::remove_file(&child.temp);
    }

    /// Seconds the running one has taken so far (rdb_current_bgsave_time_sec), or -1.
    pub fn current_seconds(&self) -> i64 {
        self.child()
            .as_ref()
            .map_or(-1, |c| c.started.elapsed().as_secs() as i64)
    }

    /// Seconds the last one took, or -1 before any (rdb_last_bgsave_time_sec).
    pub fn last_seconds(&self) -> i64 {
        self.last_seconds.load(Ordering::Relaxed)
    }

    /// Microseconds the last fork took and how many there were.
    pub fn forks(&self) -> (u64, u64) {
        (
            self.latest_fork_micros.load(Ordering::Relaxed),
            self.forks.load(Ordering::Relaxed),
        )
    }
}

/// The child's whole life: writes the file and exits, 0 if it was written. It must
/// not return into the parent's code, which would go on as a second server.
fn write_in_child(db: &Db, plan: &SavePlan, mut report: PipeWriter, parent: u32) -> ! {
    // SAFETY: plain system calls on this process. If the server dies, the child
    // goes too rather than write a file for a server that is gone (and it may have
    // died before the request was made: hence the check). Linux sends the signal when
    // the thread that forked ends: an io thread or the main one, each of which lives
    // as long as the server serves. The child needs
    // none of the descriptors it inherited (sockets, the listener, the reactors')
    // but the pipe and the standard ones; holding them would keep connections the
    // parent closes open until it exits.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() as u32 != parent {
            libc::_exit(1);
        }
        let keep = report.as_raw_fd() as libc::c_uint;
        libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, keep - 1, 0);
        libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
    }
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rdb_save::write_planned(db, plan)
    }));
    let code = match written {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            let _ = report.write_all(&e.as_bytes()[..e.len().min(MAX_REPORT)]);
            1
        }
        Err(_) => {
            let _ = report.write_all(b"the save panicked");
            1
        }
    };
    // SAFETY: ends this process at once, as a forked child must: no destructor or
    // exit handler of the parent's runs twice.
    unsafe { libc::_exit(code) }
}
