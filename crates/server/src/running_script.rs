//! The Lua script that runs now, as the other connections see it (Redis's script run
//! context). A script runs on the script thread with the gate held (see
//! `script_thread.rs`); while it runs, other connections' commands wait for it. Past
//! `busy-reply-threshold` it is busy: it runs on, the others are refused with `-BUSY`
//! but for the few commands Redis allows then (SCRIPT KILL, FUNCTION KILL, SHUTDOWN
//! NOSAVE, ...), which run without the gate.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use resp::Frame;
use tokio::sync::Notify;

const IDLE: u8 = 0;
const RUNNING: u8 = 1;
const BUSY: u8 = 2;

/// What SCRIPT KILL, FUNCTION KILL or a shutdown asked of the running script.
const NO_KILL: u8 = 0;
const KILL: u8 = 1;
const SHUTDOWN: u8 = 2;

const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

#[derive(Default)]
pub struct RunningScript {
    state: AtomicU8,
    kill: AtomicU8,
    /// The script has called a write command: SCRIPT KILL would leave it half done.
    wrote: AtomicBool,
    /// The run is a function's (FCALL), not a script's (EVAL).
    function: AtomicBool,
    /// For FUNCTION STATS, which must not wait for the scripts' lock the script holds.
    details: Mutex<Option<Details>>,
    /// Told when the state leaves RUNNING: the script ended or turned busy.
    changed: Notify,
}

struct Details {
    /// The function's name; for EVAL, `f_` and the script's SHA-1, as Redis names it.
    name: String,
    command: Vec<Vec<u8>>,
    started: Instant,
}

/// Why SCRIPT KILL or FUNCTION KILL did not kill.
pub enum Unkilled {
    NotBusy,
    /// The script wrote: killing it would leave its work half done.
    Wrote,
    /// SCRIPT KILL of a function, or FUNCTION KILL of a script: the busy error says
    /// which KILL to use.
    OtherKind(&'static str),
}

impl Unkilled {
    pub fn message(&self) -> &'static str {
        match self {
            Unkilled::NotBusy => "NOTBUSY No scripts in execution right now.",
            Unkilled::Wrote => {
                "UNKILLABLE Sorry the script already executed write commands against the \
                 dataset. You can either wait the script termination or kill the server in a \
                 hard way using the SHUTDOWN NOSAVE command."
            }
            Unkilled::OtherKind(busy) => busy,
        }
    }
}

/// Why a script must stop now.
pub enum Stopped {
    Killed,
    ShuttingDown,
}

impl RunningScript {
    /// A job on the script thread begins: until [`RunningScript::end`], a connection
    /// refused the gate waits for a change.
    pub fn begin(&self) {
        debug_assert_eq!(
            self.state.load(Ordering::SeqCst),
            IDLE,
            "one script at a time"
        );
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// The script (or function `name`, for FUNCTION STATS) starts running `command`.
    pub fn starts(&self, function: Option<&str>, sha: Option<&str>, command: &[Vec<u8>]) {
        let name = match (function, sha) {
            (Some(name), _) => name.to_string(),
            (None, sha) => format!("f_{}", sha.unwrap_or_default()),
        };
        self.function.store(function.is_some(), Ordering::Relaxed);
        self.wrote.store(false, Ordering::Relaxed);
        *self.lock_details() = Some(Details {
            name,
            command: command.to_vec(),
            started: Instant::now(),
        });
    }

    /// The job is done and the gate let go: waiting connections run their commands.
    pub fn end(&self) {
        *self.lock_details() = None;
        self.kill.store(NO_KILL, Ordering::SeqCst);
        self.state.store(IDLE, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// The script has run past `busy-reply-threshold`: others are answered `-BUSY`.
    pub fn turn_busy(&self) {
        if self
            .state
            .compare_exchange(RUNNING, BUSY, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            tracing::warn!("a Lua script has run past busy-reply-threshold: other clients get BUSY until it ends or SCRIPT KILL stops it");
            self.changed.notify_waiters();
        }
    }

    pub fn is_busy(&self) -> bool {
        self.state.load(Ordering::SeqCst) == BUSY
    }

    pub fn is_idle(&self) -> bool {
        self.state.load(Ordering::SeqCst) == IDLE
    }

    /// The error others get while the script is busy.
    pub fn busy_error(&self) -> &'static str {
        if self.function.load(Ordering::Relaxed) {
            BUSY_FUNCTION
        } else {
            BUSY_EVAL
        }
    }

    /// The script called a write command.
    pub fn note_write(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL: asks the busy script to stop,
    /// if it has written nothing and is of the kind named.
    pub fn kill(&self, function: bool) -> Result<(), Unkilled> {
        if !self.is_busy() {
            return Err(Unkilled::NotBusy);
        }
        if self.wrote.load(Ordering::Relaxed) {
            return Err(Unkilled::Wrote);
        }
        match (function, self.function.load(Ordering::Relaxed)) {
            (false, true) => return Err(Unkilled::OtherKind(BUSY_FUNCTION)),
            (true, false) => return Err(Unkilled::OtherKind(BUSY_EVAL)),
            _ => {}
        }
        let _ = self
            .kill
            .compare_exchange(NO_KILL, KILL, Ordering::SeqCst, Ordering::SeqCst);
        Ok(())
    }

    /// SHUTDOWN NOSAVE: the script stops whatever it has written.
    pub fn stop_for_shutdown(&self) {
        self.kill.store(SHUTDOWN, Ordering::SeqCst);
    }

    /// Whether the script must stop now (asked by the script's clock checks).
    pub fn stopped(&self) -> Option<Stopped> {
        match self.kill.load(Ordering::Relaxed) {
            NO_KILL => None,
            KILL => Some(Stopped::Killed),
            _ => Some(Stopped::ShuttingDown),
        }
    }

    /// Waits until no script runs or the one running is busy (at once if so now).
    pub async fn settled(&self) {
        self.wait_until(|state| state != RUNNING).await
    }

    /// Waits until no script runs (at once if none does now).
    pub async fn ended(&self) {
        self.wait_until(|state| state == IDLE).await
    }

    async fn wait_until(&self, done: impl Fn(u8) -> bool) {
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the state is read, so a change in between is not lost.
            notified.as_mut().enable();
            if done(self.state.load(Ordering::SeqCst)) {
                return;
            }
            notified.await;
        }
    }

    /// FUNCTION STATS's `running_script`: the name, the command and how long it has
    /// run, or null.
    pub fn stats(&self) -> Frame {
        match &*self.lock_details() {
            None => Frame::Null,
            Some(d) => Frame::Map(vec![
                (Frame::bulk("name"), Frame::bulk(d.name.as_str())),
                (
                    Frame::bulk("command"),
                    Frame::Array(
                        d.command
                            .iter()
                            .map(|a| Frame::bulk(a.as_slice()))
                            .collect(),
                    ),
                ),
                (
                    Frame::bulk("duration_ms"),
                    Frame::Integer(d.started.elapsed().as_millis() as i64),
                ),
            ]),
        }
    }

    fn lock_details(&self) -> std::sync::MutexGuard<'_, Option<Details>> {
        self.details.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn kill_reaches_only_a_busy_script_of_its_kind_that_wrote_nothing() {
        let run = RunningScript::default();
        assert!(matches!(run.kill(false), Err(Unkilled::NotBusy)));
        run.begin();
        run.starts(None, Some("abc"), &[b"EVAL".to_vec()]);
        // Running but not busy: as Redis, KILL finds nothing to kill.
        assert!(matches!(run.kill(false), Err(Unkilled::NotBusy)));
        run.turn_busy();
        assert!(matches!(
            run.kill(true),
            Err(Unkilled::OtherKind(BUSY_EVAL))
        ));
        assert!(run.stopped().is_none());
        assert!(run.kill(false).is_ok());
        assert!(matches!(run.stopped(), Some(Stopped::Killed)));
        run.end();
        assert!(run.stopped().is_none());

        run.begin();
        run.starts(Some("f"), None, &[b"FCALL".to_vec()]);
        run.turn_busy();
        assert_eq!(run.busy_error(), BUSY_FUNCTION);
        run.note_write();
        assert!(matches!(run.kill(true), Err(Unkilled::Wrote)));
        run.stop_for_shutdown();
        assert!(matches!(run.stopped(), Some(Stopped::ShuttingDown)));
        run.end();
        assert!(!run.is_busy());
    }

    #[test]
    fn waiters_hear_of_the_end_and_of_turning_busy() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = Arc::new(RunningScript::default());
        for busy in [false, true] {
            run.begin();
            let waiter = {
                let run = run.clone();
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    runtime.block_on(run.settled());
                })
            };
            std::thread::sleep(Duration::from_millis(20));
            assert!(!waiter.is_finished(), "waits while the script runs");
            if busy {
                run.turn_busy();
            } else {
                run.end();
            }
            waiter.join().unwrap();
            // Settled already: no wait.
            runtime.block_on(run.settled());
            if busy {
                run.end();
            }
        }
    }
}
