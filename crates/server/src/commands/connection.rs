//! PING, ECHO, QUIT, HELLO, SELECT, COMMAND.

use resp::{Frame, Protocol};

use super::{error, ok, parse_integer, reply, Action, Session, NOT_AN_INTEGER};
use crate::db::Db;

pub fn ping(_: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    match args {
        [_] => reply(Frame::Simple("PONG".into())),
        [_, msg] => reply(Frame::bulk(msg)),
        _ => error("ERR wrong number of arguments for 'ping' command"),
    }
}

pub fn echo(_: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    reply(Frame::bulk(&args[1]))
}

pub fn quit(_: &Db, _: &mut Session, _: &[Vec<u8>]) -> Action {
    Action::Close(Frame::Simple("OK".into()))
}

/// `HELLO [protover]`: switches RESP2/RESP3 and describes the server with the
/// fields clients check. AUTH and SETNAME options come with the server issue's
/// AUTH and CLIENT work.
pub fn hello(_: &Db, session: &mut Session, args: &[Vec<u8>]) -> Action {
    if let Some(v) = args.get(1) {
        match parse_integer(v) {
            Some(2) => session.proto = Protocol::Resp2,
            Some(3) => session.proto = Protocol::Resp3,
            Some(_) => return error("NOPROTO unsupported protocol version"),
            None => return error("ERR Protocol version is not an integer or out of range"),
        }
        if args.len() > 2 {
            return error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[2])
            ));
        }
    }
    let s = |t: &str| Frame::bulk(t);
    let proto = if session.proto == Protocol::Resp3 {
        3
    } else {
        2
    };
    reply(Frame::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s("7.0.0")),
        (s("proto"), Frame::Integer(proto)),
        (s("id"), Frame::Integer(session.id as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Frame::Array(vec![])),
    ]))
}

/// hotkv has one database: SELECT 0 works, any other index is out of range.
pub fn select(_: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    match parse_integer(&args[1]) {
        Some(0) => ok(),
        Some(_) => error("ERR DB index is out of range"),
        None => error(NOT_AN_INTEGER),
    }
}

/// Enough of COMMAND for redis-cli's start-up: COUNT, and empty DOCS / INFO / list.
pub fn command(_: &Db, _: &mut Session, args: &[Vec<u8>]) -> Action {
    let sub = args
        .get(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase());
    match sub.as_deref() {
        None => reply(Frame::Array(vec![])),
        Some("count") => reply(Frame::Integer(super::count() as i64)),
        Some("docs") => reply(Frame::Map(vec![])),
        Some("info") => reply(Frame::Array(
            args[2..].iter().map(|_| Frame::NullArray).collect(),
        )),
        Some(other) => error(&format!(
            "ERR unknown subcommand '{other}'. Try COMMAND HELP."
        )),
    }
}
