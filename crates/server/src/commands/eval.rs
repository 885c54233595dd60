//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO: run a Lua script (see `scripting.rs`); SCRIPT
//! LOAD | EXISTS | FLUSH | KILL | DEBUG | HELP: the scripts kept (DEBUG: only NO, as
//! hotkv has no Lua debugger).
//!
//! EVAL runs alone (the gate held exclusively), so a script is atomic, as in Redis;
//! on the lsm engine its writes reach the disk as one batch, as a transaction's do.
//! The commands it calls run as in a transaction: a blocking command answers at once.

use resp::{Frame, Protocol};

use super::{error, execute_in_script, ok, parse_integer, reply, upper, Ctx, Reply};
use crate::scripting::{Script, ScriptFlags, Scripts, Target};

pub fn eval(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, Source::Text, false)
}

pub fn evalsha(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, Source::Sha, false)
}

pub fn eval_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, Source::Text, true)
}

pub fn evalsha_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    run(ctx, args, Source::Sha, true)
}

/// What EVAL's first argument is: the script, or the SHA-1 of one loaded before.
#[derive(PartialEq)]
enum Source {
    Text,
    Sha,
}

/// `EVAL script numkeys [key ...] [arg ...]` and its kin.
fn run(ctx: &mut Ctx, args: &[Vec<u8>], source: Source, read_only: bool) -> Reply {
    let count = match key_count(args, super::NOT_AN_INTEGER) {
        Ok(count) => count,
        Err(e) => return error(e),
    };
    let server = ctx.server;
    let mut scripts = server.scripts();
    let (sha, script): (String, Script) = match source {
        Source::Text => match scripts.load(&args[1]) {
            Ok(loaded) => loaded,
            Err(e) => return error(&e),
        },
        Source::Sha => {
            let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            match scripts.get(&sha) {
                Some(script) => (sha, script),
                None => return error("NOSCRIPT No matching script. Please use EVAL."),
            }
        }
    };
    scripts.note_counts();
    let target = Target::Script {
        sha: &sha,
        script: &script,
    };
    run_lua(ctx, &scripts, target, args, count, script.flags, read_only)
}

/// The number of keys a script or function is given (`args[2]`), checked against
/// the arguments that follow it; `not_integer` is the error if it is not a number.
pub(super) fn key_count(
    args: &[Vec<u8>],
    not_integer: &'static str,
) -> Result<usize, &'static str> {
    match parse_integer(&args[2]) {
        Some(n) if n < 0 => Err("ERR Number of keys can't be negative"),
        Some(n) if n as u64 > (args.len() - 3) as u64 => {
            Err("ERR Number of keys can't be greater than number of args")
        }
        Some(n) => Ok(n as usize),
        None => Err(not_integer),
    }
}

/// Runs `target` (the caller holds `scripts`) as Redis runs a script or a function:
/// its declared flags checked first (a script that may write is refused by the `_RO`
/// commands, and over maxmemory unless it allows that); then alone and atomically, the
/// commands it calls answering in its protocol and never blocking. `command` is the
/// EVAL or FCALL, whose `key_count` keys follow its third argument.
pub(super) fn run_lua(
    ctx: &mut Ctx,
    scripts: &Scripts,
    target: Target,
    command: &[Vec<u8>],
    key_count: usize,
    flags: ScriptFlags,
    read_only_command: bool,
) -> Reply {
    let (keys, argv) = command[3..].split_at(key_count);
    let server = ctx.server;
    if flags.declared && !flags.no_writes() {
        if read_only_command {
            return error("ERR Can not execute a script with write flag using *_ro command.");
        }
        // Redis refuses it before it starts, as a command that may grow memory.
        if !flags.allow_oom() && server.make_room().is_err() {
            return error(crate::server::OOM);
        }
        if let Some(refusal) = server.write_refusal() {
            return error(refusal);
        }
    }
    let read_only = read_only_command || flags.no_writes();
    let limit = Some(server.config.busy_reply_threshold()).filter(|l| !l.is_zero());
    let session = &mut *ctx.session;
    // On the script thread it turns busy past the limit; inside EXEC it is stopped.
    let running = (!session.in_exec).then(|| {
        let (function, sha) = match &target {
            Target::Script { sha, .. } => (None, Some(*sha)),
            Target::Function(f) => (Some(f.name.as_str()), None),
        };
        server.running_script.starts(function, sha, command);
        server.running_script.clone()
    });
    // Commands called from a script answer in the script's protocol (RESP2 unless it
    // calls `redis.setresp(3)`), whatever the caller speaks, and do not block (as
    // inside EXEC).
    let proto = std::mem::replace(&mut session.proto, Protocol::Resp2);
    let in_exec = std::mem::replace(&mut session.in_exec, true);
    session.in_script = true;
    session.script_read = false;
    let ran = server.db.atomically(|| {
        scripts.run(target, keys, argv, limit, running, |request, protocol| {
            if request.acl_check_only {
                return super::acl_check_in_script(server, session, request.args);
            }
            session.proto = protocol;
            execute_in_script(server, session, request.args, read_only, flags.allow_oom())
        })
    });
    session.proto = proto;
    session.in_exec = in_exec;
    session.in_script = false;
    if session.script_read {
        super::remember_keys(server, session, keys.iter());
    }
    let (frame, error_counted) = ran?;
    session.error_counted = error_counted;
    reply(frame)
}

pub fn script(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let lock = || ctx.server.scripts();
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"LOAD", [text]) => match lock().load(text) {
            Ok((sha, _)) => reply(Frame::bulk(sha)),
            Err(e) => error(&e),
        },
        (b"EXISTS", shas) if !shas.is_empty() => {
            let scripts = lock();
            reply(Frame::Array(
                shas.iter()
                    .map(|sha| {
                        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                        Frame::Integer(scripts.contains(&sha) as i64)
                    })
                    .collect(),
            ))
        }
        (b"FLUSH", mode @ ([] | [_])) => {
            if let Some(mode) = mode.first() {
                if !matches!(upper(mode).as_slice(), b"SYNC" | b"ASYNC") {
                    return error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
                }
            }
            lock().clear();
            ok()
        }
        // Runs only while no script does or the one running is busy (ALLOW_BUSY).
        (b"KILL", []) => match ctx.server.running_script.kill(false) {
            Ok(()) => ok(),
            Err(why) => error(why.message()),
        },
        (b"DEBUG", [mode]) => match upper(mode).as_slice() {
            b"NO" => ok(),
            b"YES" | b"SYNC" => {
                error("ERR hotkv has no Lua debugger: SCRIPT DEBUG NO is the one mode")
            }
            _ => error("ERR Use SCRIPT DEBUG YES/SYNC/NO"),
        },
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("script", &args[1]),
    }
}

const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];
