//! FUNCTION LOAD | DELETE | LIST | STATS | KILL | FLUSH | DUMP | RESTORE | HELP: Redis
//! 7's function libraries. hotkv has no scripting engine, so it never holds a library:
//! each subcommand answers as Redis does with none loaded (FLUSH succeeds, LIST is
//! empty, DELETE finds nothing, DUMP gives the empty payload that RESTORE takes back),
//! and LOAD checks the library's metadata line as Redis does before it says that the
//! engine named there does not exist. Tools that flush or copy functions on every
//! server (Redis's own test suite, migration tools) work unchanged.

use resp::Frame;

use super::{error, ok, reply, upper, Ctx, Reply};
use crate::dump_payload::{self, Refusal};

pub fn function(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"FLUSH", []) => ok(),
        (b"FLUSH", [mode]) => match upper(mode).as_slice() {
            b"SYNC" | b"ASYNC" => ok(),
            _ => error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"),
        },
        (b"LIST", options) => list(options),
        (b"STATS", []) => reply(Frame::Map(vec![
            (Frame::bulk("running_script"), Frame::Null),
            (Frame::bulk("engines"), Frame::Map(Vec::new())),
        ])),
        (b"KILL", []) => error("NOTBUSY No scripts in execution right now."),
        (b"DELETE", [_]) => error("ERR Library not found"),
        (b"DUMP", []) => reply(Frame::Bulk(dump_payload::no_functions())),
        (b"RESTORE", [payload, policy @ ..]) if policy.len() <= 1 => {
            let known =
                |p: &Vec<u8>| [&b"APPEND"[..], b"REPLACE", b"FLUSH"].contains(&upper(p).as_slice());
            if !policy.iter().all(known) {
                return error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
            }
            let max_len = ctx.server.config.proto_max_bulk_len();
            match dump_payload::function_codes(payload, max_len) {
                Ok(codes) => match codes.first() {
                    None => ok(),
                    Some(code) => error(&format!("ERR {}", load_refusal(code))),
                },
                Err(Refusal::VersionOrChecksum) => {
                    error("ERR DUMP payload version or checksum are wrong")
                }
                Err(Refusal::BadFormat(why)) => error(&format!("ERR {why}")),
            }
        }
        (b"LOAD", [options @ .., code]) => {
            if let Some(other) = options.iter().find(|o| upper(o) != b"REPLACE") {
                return error(&format!(
                    "ERR Unknown option given: {}",
                    String::from_utf8_lossy(other)
                ));
            }
            error(&format!("ERR {}", load_refusal(code)))
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

/// LIST [LIBRARYNAME pattern] [WITHCODE]: the options checked as Redis checks them;
/// no library matches.
fn list(options: &[Vec<u8>]) -> Reply {
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        match upper(option).as_slice() {
            b"WITHCODE" => {}
            b"LIBRARYNAME" => {
                if rest.next().is_none() {
                    return error("ERR library name argument was not given");
                }
            }
            _ => {
                return error(&format!(
                    "ERR Unknown argument {}",
                    String::from_utf8_lossy(option)
                ))
            }
        }
    }
    reply(Frame::Array(Vec::new()))
}

/// Why a library's code is not loaded: its first line (`#!engine name=library`) is
/// checked as Redis checks it, and then its engine is not found, as hotkv has none.
fn load_refusal(code: &[u8]) -> String {
    let Some(shebang) = code.strip_prefix(b"#!") else {
        return "Missing library metadata".into();
    };
    let Some(end) = shebang.iter().position(|&b| b == b'\n') else {
        return "Invalid library metadata".into();
    };
    let line = String::from_utf8_lossy(&shebang[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("");
    let mut name = None;
    for part in parts {
        match part.get(..5) {
            Some(key) if key.eq_ignore_ascii_case("name=") => {
                if name.is_some() {
                    return "Invalid metadata value, name argument was given multiple times".into();
                }
                name = Some(&part[5..]);
            }
            _ => return format!("Invalid metadata value given: {part}"),
        }
    }
    let Some(name) = name else {
        return "Library name was not given".into();
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        return "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into();
    }
    format!("Engine '{engine}' not found")
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
