//! The thread Lua scripts run on (EVAL, EVALSHA, FCALL and their read-only forms).
//!
//! Why a thread of their own: a script holds the gate until it ends, and one that runs
//! past `busy-reply-threshold` must let the other clients in, to be told `-BUSY` and to
//! send SCRIPT KILL (see `running_script.rs`). Run on an I/O thread, it would stall
//! every other connection of that thread until it ended. So the connection hands the
//! command and its session to this thread and awaits the answer, and its I/O thread
//! serves its other connections meanwhile; those refused the gate (held long, see
//! `engine::gate`) await the script's end or busy turn without holding up theirs.
//!
//! Scripts inside EXEC run on the connection's thread, within the transaction, and are
//! stopped at the threshold instead (see `scripting.rs`).

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::Arc;

use resp::Frame;
use tokio::sync::oneshot;

use crate::blocked_keys;
use crate::commands::{self, Action, Session};
use crate::gate_hold::GateHold;
use crate::server::Server;

type Job = Box<dyn FnOnce() + Send>;

pub struct ScriptThread {
    jobs: mpsc::Sender<Job>,
}

/// A script command's outcome, with the session handed back.
pub struct Ran {
    pub session: Session,
    pub args: Vec<Vec<u8>>,
    pub action: Action,
    /// The script's writes woke blocked clients (see `blocked_keys::woke_a_client`).
    pub woke: bool,
}

impl ScriptThread {
    /// Starts the thread; it ends when the last sender (the server) is dropped.
    pub fn start() -> std::io::Result<ScriptThread> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("hotkv-scripts".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })?;
        Ok(ScriptThread { jobs })
    }

    /// Runs the script command `args` for `session` on the script thread.
    pub fn run(
        &self,
        server: Arc<Server>,
        mut session: Session,
        args: Vec<Vec<u8>>,
    ) -> oneshot::Receiver<Ran> {
        let (answer, answered) = oneshot::channel();
        let job = move || {
            server.running_script.begin();
            // A panic in a command would otherwise end the thread and every script
            // after it. The session may be left midway (inside the script, in the
            // script's protocol), so the client is answered with an error and closed,
            // as a panic on its own thread closes its connection.
            let action = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let mut gate = GateHold::long(&server.gate);
                commands::execute(&server, &mut session, &args, &mut gate)
            }))
            .unwrap_or_else(|_| {
                Action::Close(Some(Frame::error(
                    "ERR the script's command failed unexpectedly; closing the connection",
                )))
            });
            server.running_script.end();
            let woke = blocked_keys::woke_a_client();
            // The connection may have gone (its runtime stopped): nothing to answer.
            let _ = answer.send(Ran {
                session,
                args,
                action,
                woke,
            });
        };
        self.jobs
            .send(Box::new(job))
            .expect("the script thread lives as long as the server");
        answered
    }
}
