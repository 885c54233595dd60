//! CLIENT ID, GETNAME, SETNAME, LIST, INFO, KILL, SETINFO, NO-EVICT, REPLY, PAUSE,
//! UNPAUSE, UNBLOCK, HELP; TRACKING, CACHING, GETREDIR and TRACKINGINFO are in
//! `tracking.rs`.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use resp::Frame;

use super::{
    error, int, ok, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR,
};
use crate::clients::{Client, REPLY_BUFFER};

pub fn client(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sub = upper(&args[1]);
    let rest = &args[2..];
    match (sub.as_slice(), rest) {
        (b"ID", []) => int(ctx.session.client.id as i64),
        (b"GETNAME", []) => {
            let name = ctx
                .session
                .client
                .name
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            reply(if name.is_empty() {
                Frame::Null
            } else {
                Frame::Bulk(name)
            })
        }
        (b"SETNAME", [name]) => match set_name(ctx, name) {
            Ok(()) => ok(),
            Err(e) => error(e),
        },
        (b"INFO", []) => reply(Frame::Verbatim {
            format: *b"txt",
            text: line(ctx, &ctx.session.client, args).into_bytes(),
        }),
        (b"LIST", filters) => list(ctx, filters, args),
        (b"KILL", filters) => kill(ctx, filters),
        (b"SETINFO", [attr, value]) => {
            let value = String::from_utf8_lossy(value).into_owned();
            if value.contains(|c: char| c == ' ' || c == '\n' || !c.is_ascii_graphic()) {
                return error(&format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    String::from_utf8_lossy(attr)
                ));
            }
            let mut lib = ctx
                .session
                .client
                .lib
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match upper(attr).as_slice() {
                b"LIB-NAME" => lib.0 = value,
                b"LIB-VER" => lib.1 = value,
                _ => {
                    return error(&format!(
                        "ERR Unrecognized option '{}'",
                        String::from_utf8_lossy(attr)
                    ))
                }
            }
            ok()
        }
        (b"PAUSE", [timeout, mode @ ..]) => {
            let all = match mode {
                [] => true,
                [mode] => match upper(mode).as_slice() {
                    b"ALL" => true,
                    b"WRITE" => false,
                    _ => return error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
                },
                _ => {
                    return error(&format!(
                        "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                        String::from_utf8_lossy(&args[1])
                    ))
                }
            };
            let ms = match parse_integer(timeout) {
                Some(ms) if ms < 0 => return error("ERR timeout is negative"),
                Some(ms) => ms as u64,
                None => return error("ERR timeout is not an integer or out of range"),
            };
            ctx.server
                .db
                .pause
                .pause(crate::entry::now_ms().saturating_add(ms), all);
            ok()
        }
        (b"UNPAUSE", []) => {
            ctx.server.db.pause.unpause();
            ok()
        }
        (b"REPLY", [mode]) => match upper(mode).as_slice() {
            b"ON" => {
                ctx.session.replies_off = false;
                ctx.session.replies_to_skip = 0;
                ok()
            }
            b"OFF" => {
                ctx.session.replies_off = true;
                ok()
            }
            b"SKIP" => {
                // This command's reply and the next one's; nothing to skip while off.
                if !ctx.session.replies_off {
                    ctx.session.replies_to_skip = 2;
                }
                ok()
            }
            _ => error(SYNTAX_ERROR),
        },
        (b"NO-EVICT", [flag]) => match upper(flag).as_slice() {
            b"ON" => {
                ctx.session.client.no_evict.store(true, Ordering::Relaxed);
                ok()
            }
            b"OFF" => {
                ctx.session.client.no_evict.store(false, Ordering::Relaxed);
                ok()
            }
            _ => error(SYNTAX_ERROR),
        },
        (b"UNBLOCK", [id, how @ ..]) => {
            let with_error = match how {
                [] => false,
                [how] if upper(how) == b"TIMEOUT" => false,
                [how] if upper(how) == b"ERROR" => true,
                _ => return error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
            };
            let Some(id) = parse_integer(id) else {
                return error(NOT_AN_INTEGER);
            };
            let target = u64::try_from(id)
                .ok()
                .and_then(|id| ctx.server.clients.get(id));
            int(target.is_some_and(|c| c.unblock(with_error)) as i64)
        }
        (b"TRACKING", [on_off, options @ ..]) => super::tracking::tracking(ctx, on_off, options),
        (b"CACHING", [answer]) => super::tracking::caching(ctx, answer),
        (b"GETREDIR", []) => super::tracking::getredir(ctx),
        (b"TRACKINGINFO", []) => super::tracking::trackinginfo(ctx),
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("client", &args[1]),
    }
}

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETNAME",
    "    Return the name of the current connection.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * ID <client-id> [<client-id> ...]",
    "      Return clients of specified IDs only.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set the client library name or version, shown in CLIENT LIST and INFO.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client (one waiting in WAIT).",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "HELP",
    "    Print this help.",
];

/// CLIENT SETNAME's rule: printable ASCII, no spaces; empty clears the name.
pub fn set_name(ctx: &mut Ctx, name: &[u8]) -> Result<(), &'static str> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    *ctx.session
        .client
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = name.to_vec();
    Ok(())
}

/// One client as CLIENT LIST describes it, with Redis's field names. Fields hotkv
/// has no counterpart for (pub/sub) read as Redis reports an idle client.
/// One client's line; `args` is the command asking (its own `argv-mem`).
pub(super) fn line(ctx: &Ctx, c: &Client, args: &[Vec<u8>]) -> String {
    let name =
        String::from_utf8_lossy(&c.name.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    let (lib_name, lib_ver) = c.lib.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let multi = c.in_multi.load(Ordering::Relaxed);
    let mut flags = String::new();
    if c.monitoring.load(Ordering::Relaxed) {
        flags.push('O');
    }
    if c.is_subscribed() {
        flags.push('P');
    }
    if multi {
        flags.push('x');
    }
    if c.is_blocked() {
        flags.push('b');
    }
    let (tracking_flags, redirect) = super::tracking::list_fields(ctx, c.id);
    flags.push_str(&tracking_flags);
    if c.no_evict.load(Ordering::Relaxed) {
        flags.push('e');
    }

    if flags.is_empty() {
        flags.push('N');
    }
    let b = &c.buffers;
    let (input, input_capacity) = (
        b.input.load(Ordering::Relaxed),
        b.input_capacity.load(Ordering::Relaxed),
    );
    let output = c.pending_output();
    let output_capacity = b.output_capacity.load(Ordering::Relaxed);
    // Past Redis's fixed reply buffer: its reply list (`oll`, `omem`).
    let beyond = output.saturating_sub(REPLY_BUFFER);
    // The command being run, for the client that runs it (CLIENT LIST itself); for
    // another, the arguments of a request that has not all arrived.
    let argv = if c.id == ctx.session.client.id {
        args.iter().map(Vec::len).sum()
    } else {
        b.argv.load(Ordering::Relaxed)
    };
    let memory = c.memory().saturating_sub(b.argv.load(Ordering::Relaxed)) + argv;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db=0 sub={} psub={} ssub={} multi={} \
         qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r \
         cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        name,
        c.created.elapsed().as_secs(),
        c.idle_secs(),
        flags,
        c.subscriptions[0].load(Ordering::Relaxed),
        c.subscriptions[1].load(Ordering::Relaxed),
        c.subscriptions[2].load(Ordering::Relaxed),
        if multi {
            b.queued.load(Ordering::Relaxed) as i64
        } else {
            -1
        },
        input,
        input_capacity.saturating_sub(input),
        argv,
        b.multi.load(Ordering::Relaxed),
        // The reply buffer's size and peak: what the connection holds for replies.
        output_capacity,
        output_capacity,
        output.min(REPLY_BUFFER),
        beyond.div_ceil(REPLY_BUFFER),
        beyond,
        memory,
        super::name_of(c.last_command.load(Ordering::Relaxed)),
        String::from_utf8_lossy(&c.user.lock().unwrap_or_else(|e| e.into_inner())),
        redirect,
        c.resp.load(Ordering::Relaxed),
        lib_name,
        lib_ver,
    );
    s
}

/// A client's type for CLIENT LIST and KILL's TYPE filter: hotkv has no replicas.
fn client_type(c: &Client) -> &'static str {
    if c.is_subscribed() {
        "pubsub"
    } else {
        "normal"
    }
}

/// `CLIENT LIST [TYPE normal] [ID id...]`.
fn list(ctx: &mut Ctx, filters: &[Vec<u8>], args: &[Vec<u8>]) -> Reply {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind = None;
    match filters {
        [] => {}
        [t, wanted] if upper(t) == b"TYPE" => {
            let typed = String::from_utf8_lossy(wanted);
            let wanted = typed.to_ascii_lowercase();
            if !matches!(wanted.as_str(), "normal" | "master" | "replica" | "pubsub") {
                return error(&format!("ERR Unknown client type '{typed}'"));
            }
            kind = Some(wanted);
        }
        [t, rest @ ..] if upper(t) == b"ID" && !rest.is_empty() => {
            let mut v = Vec::new();
            for id in rest {
                match parse_integer(id).filter(|n| *n > 0) {
                    Some(n) => v.push(n as u64),
                    None => return error("ERR Invalid client ID"),
                }
            }
            ids = Some(v);
        }
        _ => return error(SYNTAX_ERROR),
    }
    let text: String = ctx
        .server
        .clients
        .snapshot()
        .iter()
        // As in Redis, where a kill frees the client at once (but its own, which
        // comes after the reply).
        .filter(|c| !c.is_killed() || c.id == ctx.session.client.id)
        .filter(|c| ids.as_ref().is_none_or(|ids| ids.contains(&c.id)))
        .filter(|c| kind.as_ref().is_none_or(|k| k == client_type(c)))
        .map(|c| line(ctx, c, args))
        .collect();
    reply(Frame::Verbatim {
        format: *b"txt",
        text: text.into_bytes(),
    })
}

/// `CLIENT KILL addr` (replies OK) or `CLIENT KILL [ID id] [ADDR a] [LADDR a]
/// [SKIPME yes|no]...` (replies with the number killed).
fn kill(ctx: &mut Ctx, filters: &[Vec<u8>]) -> Reply {
    let me = ctx.session.client.id;
    if let [addr] = filters {
        let addr = String::from_utf8_lossy(addr);
        let victim = ctx
            .server
            .clients
            .snapshot()
            .into_iter()
            .find(|c| c.addr.to_string() == addr);
        return match victim {
            Some(c) => {
                c.kill();
                ok()
            }
            None => error("ERR No such client"),
        };
    }
    if filters.is_empty() || !filters.len().is_multiple_of(2) {
        return error(SYNTAX_ERROR);
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut skipme = true;
    let mut kind = None;
    let mut max_age = None;
    let mut user = None;
    for pair in filters.chunks_exact(2) {
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        match upper(&pair[0]).as_slice() {
            b"ID" => match parse_integer(&pair[1]).filter(|n| *n > 0) {
                Some(n) => id = Some(n as u64),
                None => return error("ERR client-id should be greater than 0"),
            },
            b"ADDR" => addr = Some(value),
            b"LADDR" => laddr = Some(value),
            b"SKIPME" => match value.to_ascii_lowercase().as_str() {
                "yes" => skipme = true,
                "no" => skipme = false,
                _ => return error(SYNTAX_ERROR),
            },
            // Every client here is a normal or pub/sub one: other types match none
            // (never ignored, which would kill everyone).
            b"TYPE" => match value.to_ascii_lowercase().as_str() {
                "slave" => kind = Some("replica".to_string()),
                k @ ("normal" | "master" | "replica" | "pubsub") => kind = Some(k.to_string()),
                _ => return error(&format!("ERR Unknown client type '{value}'")),
            },
            b"USER" => {
                if ctx.server.users.get(&pair[1]).is_none() {
                    return error(&format!("ERR No such user '{value}'"));
                }
                user = Some(pair[1].clone());
            }
            b"MAXAGE" => match parse_integer(&pair[1]) {
                Some(n) => max_age = Some(n),
                None => return error(NOT_AN_INTEGER),
            },
            _ => return error(SYNTAX_ERROR),
        }
    }
    let mut killed = 0;
    for c in ctx.server.clients.snapshot() {
        let chosen = id.is_none_or(|id| id == c.id)
            && addr.as_ref().is_none_or(|a| *a == c.addr.to_string())
            && laddr.as_ref().is_none_or(|a| *a == c.laddr.to_string())
            && max_age.is_none_or(|age| c.created.elapsed().as_secs() as i64 > age)
            && kind.as_ref().is_none_or(|k| k == client_type(&c))
            && user
                .as_ref()
                .is_none_or(|u| *u == *c.user.lock().unwrap_or_else(|e| e.into_inner()))
            && !(skipme && c.id == me);
        if chosen {
            c.kill();
            killed += 1;
        }
    }
    int(killed)
}
