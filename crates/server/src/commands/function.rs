//! FUNCTION LOAD | DELETE | LIST | STATS | KILL | FLUSH | DUMP | RESTORE | HELP and
//! FCALL, FCALL_RO: Redis 7's function libraries. A library's code registers
//! functions (see `libraries.rs`, and `scripting.rs` for the Lua side); FCALL runs
//! one as EVAL runs a script, given its keys and arguments.
//!
//! On the lsm engine the libraries are saved with the data, as FUNCTION DUMP's payload
//! in one record (`engine_keys.rs`), rewritten whole at each change (libraries are
//! few and small), and loaded again when the server starts. FLUSHALL keeps them, as
//! Redis's does.

use resp::Frame;

use super::eval::{key_count, run_lua};
use super::{error, ok, reply, upper, Ctx, Reply};
use crate::dump_payload::{self, Refusal};
use crate::libraries::{self, Libraries, Library};
use crate::scripting::{Scripts, Target, LOAD_TIME_LIMIT};
use crate::server::Server;

pub fn fcall(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    call(ctx, args, false)
}

pub fn fcall_ro(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    call(ctx, args, true)
}

/// `FCALL function numkeys [key ...] [arg ...]`.
fn call(ctx: &mut Ctx, args: &[Vec<u8>], read_only: bool) -> Reply {
    let server = ctx.server;
    let scripts = server.scripts();
    let Some(function) = scripts.libraries.function(&args[1]) else {
        return error("ERR Function not found");
    };
    let count = match key_count(args, "ERR Bad number of keys provided") {
        Ok(count) => count,
        Err(e) => return error(e),
    };
    let flags = function.flags;
    run_lua(
        ctx,
        &scripts,
        Target::Function(function),
        args,
        count,
        flags,
        read_only,
    )
}

pub fn function(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let server = ctx.server;
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"LOAD", [options @ .., code]) => {
            let mut replace = false;
            for option in options {
                if upper(option) != b"REPLACE" {
                    return error(&format!(
                        "ERR Unknown option given: {}",
                        String::from_utf8_lossy(option)
                    ));
                }
                replace = true;
            }
            let mut scripts = server.scripts();
            let name = match load(&scripts, code, replace, Some(LOAD_TIME_LIMIT)) {
                Ok(library) => {
                    let name = library.name.clone();
                    if let Err(e) = scripts.libraries.add_one(library, replace) {
                        return error(&format!("ERR {e}"));
                    }
                    name
                }
                Err(e) => return error(&format!("ERR {e}")),
            };
            save(server, &scripts.libraries)?;
            reply(Frame::bulk(name))
        }
        (b"DELETE", [name]) => {
            let mut scripts = server.scripts();
            let name = String::from_utf8_lossy(name);
            if scripts.libraries.remove(&name).is_none() {
                return error("ERR Library not found");
            }
            save(server, &scripts.libraries)?;
            ok()
        }
        (b"FLUSH", mode @ ([] | [_])) => {
            if let Some(mode) = mode.first() {
                if !matches!(upper(mode).as_slice(), b"SYNC" | b"ASYNC") {
                    return error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
                }
            }
            let mut scripts = server.scripts();
            scripts.libraries.clear();
            save(server, &scripts.libraries)?;
            ok()
        }
        (b"LIST", options) => list(&server.scripts().libraries, options),
        (b"STATS", []) => {
            // Allowed while a script is busy, so not from the scripts, which it holds
            // locked, but from the counts noted when they were last let go.
            let [_, functions, libraries, _] = server.script_counts();
            let count = |n: u64| Frame::Integer(n as i64);
            reply(Frame::Map(vec![
                (Frame::bulk("running_script"), server.running_script.stats()),
                (
                    Frame::bulk("engines"),
                    Frame::Map(vec![(
                        Frame::bulk("LUA"),
                        Frame::Map(vec![
                            (Frame::bulk("libraries_count"), count(libraries)),
                            (Frame::bulk("functions_count"), count(functions)),
                        ]),
                    )]),
                ),
            ]))
        }
        (b"KILL", []) => match server.running_script.kill(true) {
            Ok(()) => ok(),
            Err(why) => error(why.message()),
        },
        (b"DUMP", []) => {
            let compress = server.config.rdb_compression();
            reply(Frame::Bulk(dump(&server.scripts().libraries, compress)))
        }
        (b"RESTORE", [payload, policy @ ..]) if policy.len() <= 1 => {
            let policy = match policy.first().map(|p| upper(p)) {
                None => Policy::Append,
                Some(p) if p == b"APPEND" => Policy::Append,
                Some(p) if p == b"REPLACE" => Policy::Replace,
                Some(p) if p == b"FLUSH" => Policy::Flush,
                Some(_) => return error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."),
            };
            let mut scripts = server.scripts();
            let max_len = server.config.proto_max_bulk_len();
            if let Err(e) = restore(&mut scripts, payload, policy, max_len) {
                return error(&format!("ERR {e}"));
            }
            save(server, &scripts.libraries)?;
            ok()
        }
        (b"HELP", []) => super::help(HELP),
        // Extra arguments: Redis's words for these two differ from the arity error.
        (b"FLUSH" | b"RESTORE", _) => error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(&args[1])
        )),
        _ => super::bad_subcommand("function", &args[1]),
    }
}

/// Checks a library's metadata and loads its code, refusing a name already taken
/// unless `replace`. The error is the reply, less its `ERR `.
fn load(
    scripts: &Scripts,
    code: &[u8],
    replace: bool,
    time_limit: Option<std::time::Duration>,
) -> Result<Library, String> {
    let (name, body) = libraries::metadata(code)?;
    if !replace && scripts.libraries.get(&name).is_some() {
        return Err(format!("Library '{name}' already exists"));
    }
    scripts.load_library(name, code, body, time_limit)
}

/// What FUNCTION RESTORE does with the libraries already loaded.
#[derive(PartialEq)]
enum Policy {
    /// Keeps them; a library of the same name refuses the restore.
    Append,
    /// Keeps them, less those of the names restored.
    Replace,
    /// Deletes them.
    Flush,
}

/// Loads every library `payload` holds, then adds them as `policy` says: all or none.
fn restore(
    scripts: &mut Scripts,
    payload: &[u8],
    policy: Policy,
    max_len: usize,
) -> Result<(), String> {
    let codes = dump_payload::function_codes(payload, max_len).map_err(|e| match e {
        Refusal::VersionOrChecksum => "DUMP payload version or checksum are wrong".to_string(),
        Refusal::BadFormat(why) => why.to_string(),
    })?;
    let mut restored = Libraries::default();
    for code in codes {
        let (name, body) = libraries::metadata(&code)?;
        // As Redis loads saved libraries: no time limit (they loaded once).
        restored.push(scripts.load_library(name, &code, body, None)?)?;
    }
    if policy == Policy::Flush {
        scripts.libraries = restored;
        return Ok(());
    }
    scripts.libraries.join(restored, policy == Policy::Replace)
}

fn dump(libraries: &Libraries, compress: bool) -> Vec<u8> {
    dump_payload::functions(libraries.iter().map(|l| l.code.as_slice()), compress)
}

/// Saves the libraries with the data (on the lsm engine).
fn save(server: &Server, libraries: &Libraries) -> Result<(), engine::Error> {
    let payload = (!libraries.is_empty()).then(|| dump(libraries, false));
    server.db.save_functions(payload.as_deref())
}

/// FUNCTION DUMP's payload of the libraries loaded, if there are any (for the memory
/// engine's RDB file).
pub fn dump_loaded(server: &Server) -> Option<Vec<u8>> {
    let compress = server.config.rdb_compression();
    let scripts = server.scripts();
    (!scripts.libraries.is_empty()).then(|| dump(&scripts.libraries, compress))
}

/// Loads libraries of these codes (an RDB file's), keeping those loaded already; one
/// of the same name fails the load unless `replace`. Returns how many are loaded.
pub fn load_codes(server: &Server, codes: &[Vec<u8>], replace: bool) -> Result<usize, String> {
    let payload = dump_payload::functions(codes.iter().map(Vec::as_slice), false);
    let policy = if replace {
        Policy::Replace
    } else {
        Policy::Append
    };
    let loaded = load_payload(server, &payload, policy)?;
    save(server, &server.scripts().libraries).map_err(|e| e.to_string())?;
    Ok(loaded)
}

/// Deletes every library (DEBUG RELOAD, before it loads the file).
pub fn flush_libraries(server: &Server) -> Result<(), engine::Error> {
    let mut scripts = server.scripts();
    scripts.libraries.clear();
    save(server, &scripts.libraries)
}

/// Loads the libraries saved with the data, when the server starts; returns how many.
pub fn load_saved(server: &Server) -> Result<usize, String> {
    let Some(payload) = server
        .db
        .saved_functions()
        .map_err(|e| format!("reading the saved function libraries: {e}"))?
    else {
        return Ok(0);
    };
    load_payload(server, &payload, Policy::Flush)
}

fn load_payload(server: &Server, payload: &[u8], policy: Policy) -> Result<usize, String> {
    let mut scripts = server.scripts();
    restore(&mut scripts, payload, policy, usize::MAX)
        .map_err(|e| format!("loading the saved function libraries: {e}"))?;
    Ok(scripts.libraries.len())
}

/// LIST [LIBRARYNAME pattern] [WITHCODE]: each option once, in any order.
fn list(libraries: &Libraries, options: &[Vec<u8>]) -> Reply {
    let (mut with_code, mut pattern) = (false, None);
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        match upper(option).as_slice() {
            b"WITHCODE" if !with_code => with_code = true,
            b"LIBRARYNAME" if pattern.is_none() => match rest.next() {
                Some(p) => pattern = Some(p),
                None => return error("ERR library name argument was not given"),
            },
            _ => {
                return error(&format!(
                    "ERR Unknown argument {}",
                    String::from_utf8_lossy(option)
                ))
            }
        }
    }
    let matches =
        |name: &str| pattern.is_none_or(|p| crate::glob::glob_match(p, name.as_bytes(), true));
    let describe = |library: &Library| {
        let functions = library
            .functions
            .iter()
            .map(|f| {
                Frame::Map(vec![
                    (Frame::bulk("name"), Frame::bulk(f.name.as_str())),
                    (
                        Frame::bulk("description"),
                        f.description.clone().map_or(Frame::Null, Frame::Bulk),
                    ),
                    (
                        Frame::bulk("flags"),
                        Frame::Set(
                            f.flags
                                .names()
                                .into_iter()
                                .map(|name| Frame::Simple(name.into()))
                                .collect(),
                        ),
                    ),
                ])
            })
            .collect();
        let mut fields = vec![
            (
                Frame::bulk("library_name"),
                Frame::bulk(library.name.as_str()),
            ),
            (Frame::bulk("engine"), Frame::bulk("LUA")),
            (Frame::bulk("functions"), Frame::Array(functions)),
        ];
        if with_code {
            fields.push((
                Frame::bulk("library_code"),
                Frame::Bulk(library.code.clone()),
            ));
        }
        Frame::Map(fields)
    };
    reply(Frame::Array(
        libraries
            .iter()
            .filter(|l| matches(&l.name))
            .map(describe)
            .collect(),
    ))
}

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];
