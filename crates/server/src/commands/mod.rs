//! The command table: one file per command (or per family of one command's
//! variants), each a function from arguments to a reply.

mod connection;
mod del;
mod exists;
mod get;
mod incr;
mod keyspace;
mod set;
mod strings;

use resp::{Frame, Protocol};

use crate::db::Db;

/// Per-connection state commands may read or change.
pub struct Session {
    pub id: u64,
    pub proto: Protocol,
}

pub enum Action {
    Reply(Frame),
    /// Reply, then close the connection (QUIT).
    Close(Frame),
}

type Run = fn(&Db, &mut Session, &[Vec<u8>]) -> Action;

struct Command {
    name: &'static str,
    /// Redis's convention: n > 0 exactly n arguments (with the name), n < 0 at least -n.
    arity: i32,
    run: Run,
}

const TABLE: &[Command] = &[
    Command {
        name: "ping",
        arity: -1,
        run: connection::ping,
    },
    Command {
        name: "echo",
        arity: 2,
        run: connection::echo,
    },
    Command {
        name: "quit",
        arity: -1,
        run: connection::quit,
    },
    Command {
        name: "hello",
        arity: -1,
        run: connection::hello,
    },
    Command {
        name: "select",
        arity: 2,
        run: connection::select,
    },
    Command {
        name: "command",
        arity: -1,
        run: connection::command,
    },
    Command {
        name: "get",
        arity: 2,
        run: get::get,
    },
    Command {
        name: "set",
        arity: -3,
        run: set::set,
    },
    Command {
        name: "setnx",
        arity: 3,
        run: set::setnx,
    },
    Command {
        name: "del",
        arity: -2,
        run: del::del,
    },
    Command {
        name: "unlink",
        arity: -2,
        run: del::del,
    },
    Command {
        name: "exists",
        arity: -2,
        run: exists::exists,
    },
    Command {
        name: "incr",
        arity: 2,
        run: incr::incr,
    },
    Command {
        name: "decr",
        arity: 2,
        run: incr::decr,
    },
    Command {
        name: "incrby",
        arity: 3,
        run: incr::incrby,
    },
    Command {
        name: "decrby",
        arity: 3,
        run: incr::decrby,
    },
    Command {
        name: "dbsize",
        arity: 1,
        run: keyspace::dbsize,
    },
    Command {
        name: "type",
        arity: 2,
        run: keyspace::type_of,
    },
    Command {
        name: "mget",
        arity: -2,
        run: strings::mget,
    },
    Command {
        name: "mset",
        arity: -3,
        run: strings::mset,
    },
    Command {
        name: "strlen",
        arity: 2,
        run: strings::strlen,
    },
    Command {
        name: "append",
        arity: 3,
        run: strings::append,
    },
    Command {
        name: "getset",
        arity: 3,
        run: strings::getset,
    },
    Command {
        name: "getdel",
        arity: 2,
        run: strings::getdel,
    },
];

pub fn count() -> usize {
    TABLE.len()
}

/// Runs one request. `args` is not empty.
pub fn execute(db: &Db, session: &mut Session, args: &[Vec<u8>]) -> Action {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let Some(cmd) = TABLE.iter().find(|c| c.name == name) else {
        return Action::Reply(unknown(args));
    };
    let n = args.len() as i32;
    if (cmd.arity > 0 && n != cmd.arity) || (cmd.arity < 0 && n < -cmd.arity) {
        return Action::Reply(Frame::error(format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.name
        )));
    }
    (cmd.run)(db, session, args)
}

/// Redis's wording, which clients match on: the name as typed, then up to 128
/// bytes of the arguments, each quoted and followed by a space.
fn unknown(args: &[Vec<u8>]) -> Frame {
    let mut rest = String::new();
    for a in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        let a = String::from_utf8_lossy(a);
        let a: String = a.chars().take(room).collect();
        rest.push_str(&format!("'{a}' "));
    }
    let name: String = String::from_utf8_lossy(&args[0])
        .chars()
        .take(128)
        .collect();
    Frame::error(format!(
        "ERR unknown command '{name}', with args beginning with: {rest}"
    ))
}

pub(crate) fn ok() -> Action {
    Action::Reply(Frame::Simple("OK".into()))
}

pub(crate) fn reply(f: Frame) -> Action {
    Action::Reply(f)
}

pub(crate) fn error(text: &str) -> Action {
    Action::Reply(Frame::error(text))
}

pub(crate) const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX_ERROR: &str = "ERR syntax error";

pub(crate) use resp::parse_integer;
