//! ACL: hotkv has one user, `default`, whose password is `requirepass` (none: any
//! password, Redis's `nopass`) and who may run every command on every key and
//! channel. The subcommands that read users answer as Redis 7.0 does for that user;
//! those that would create, change or load users are refused, saying why.

use rand::RngCore;
use resp::Frame;
use sha2::{Digest, Sha256};

use super::{
    arity_allows, error, find_subcommand, int, lookup, ok, parse_integer, reply, subcommands_of,
    upper, Ctx, Reply, NOT_AN_INTEGER,
};

const USER: &str = "default";

/// Redis 7.0's ACL categories, in its order.
const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. \
    You may want to specify users via the ACL SETUSER command and then issue a CONFIG \
    REWRITE (assuming you have a Redis configuration file set) in order to store users in \
    the Redis configuration.";

pub fn acl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"WHOAMI", []) => reply(Frame::bulk(USER)),
        (b"USERS", []) => reply(Frame::Array(vec![Frame::bulk(USER)])),
        (b"LIST", []) => {
            let password = password_rule(ctx);
            let line = format!("user {USER} on {password} ~* &* +@all");
            reply(Frame::Array(vec![Frame::bulk(&line)]))
        }
        (b"GETUSER", [user]) if user.as_slice() != USER.as_bytes() => reply(Frame::Null),
        (b"GETUSER", [_]) => {
            let hash = ctx.server.config.requirepass().map(|p| sha256_hex(&p));
            let flags = ["on"].into_iter().chain(hash.is_none().then_some("nopass"));
            let field = |name: &str, value: Frame| (Frame::bulk(name), value);
            reply(Frame::Map(vec![
                field("flags", Frame::Array(flags.map(Frame::bulk).collect())),
                field(
                    "passwords",
                    Frame::Array(hash.iter().map(Frame::bulk).collect()),
                ),
                field("commands", Frame::bulk("+@all")),
                field("keys", Frame::bulk("~*")),
                field("channels", Frame::bulk("&*")),
                field("selectors", Frame::Array(vec![])),
            ]))
        }
        (b"CAT", []) => reply(Frame::Array(CATEGORIES.iter().map(Frame::bulk).collect())),
        (b"CAT", [category]) => {
            let category = String::from_utf8_lossy(category).to_ascii_lowercase();
            if !CATEGORIES.contains(&category.as_str()) {
                return error(&format!("ERR Unknown category '{category}'"));
            }
            reply(Frame::Array(super::command::in_category(&category)))
        }
        (b"GENPASS", rest @ ([] | [_])) => {
            let bits = match rest.first().map(|b| parse_integer(b)) {
                None => 256,
                Some(Some(bits)) if (1..=4096).contains(&bits) => bits as usize,
                Some(Some(_)) => return error(
                    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                ),
                Some(None) => return error(NOT_AN_INTEGER),
            };
            let mut bytes = vec![0u8; bits.div_ceil(8)];
            rand::thread_rng().fill_bytes(&mut bytes);
            let mut hex = hex(&bytes);
            hex.truncate(bits.div_ceil(4));
            reply(Frame::bulk(&hex))
        }
        // Failed authentications are not logged: the log is always empty.
        (b"LOG", [reset]) if upper(reset) == b"RESET" => ok(),
        (b"LOG", rest @ ([] | [_])) => match rest.first().map(|c| parse_integer(c)) {
            None | Some(Some(_)) => reply(Frame::Array(vec![])),
            Some(None) => error(NOT_AN_INTEGER),
        },
        (b"DRYRUN", [user, command @ ..]) if !command.is_empty() => {
            if user.as_slice() != USER.as_bytes() {
                let user = String::from_utf8_lossy(user);
                return error(&format!("ERR User '{user}' not found"));
            }
            dry_run(command)
        }
        (b"SETUSER", [_, ..]) => error(
            "ERR ACL SETUSER is not supported: hotkv has one user, default, whose password is requirepass (CONFIG SET requirepass)",
        ),
        (b"DELUSER", [_, ..]) => {
            if args[2..].iter().any(|u| u.as_slice() == USER.as_bytes()) {
                return error("ERR The 'default' user cannot be removed");
            }
            int(0)
        }
        (b"LOAD", []) | (b"SAVE", []) => error(NO_ACL_FILE),
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("acl", &args[1]),
    }
}

/// `nopass`, or `#` and the password's SHA-256.
fn password_rule(ctx: &Ctx) -> String {
    match ctx.server.config.requirepass() {
        None => "nopass".to_string(),
        Some(password) => format!("#{}", sha256_hex(&password)),
    }
}

/// Whether the default user may run `command` (it may run any that exists, with
/// arguments its arity allows), as ACL DRYRUN answers.
fn dry_run(command: &[Vec<u8>]) -> Reply {
    let not_found = || {
        let name = String::from_utf8_lossy(&command[0]);
        error(&format!("ERR Command '{name}' not found"))
    };
    let Some((_, c)) = lookup(&command[0]) else {
        return not_found();
    };
    let (name, arity) = if subcommands_of(c.name).is_empty() {
        (c.name.to_string(), c.arity)
    } else {
        match command.get(1).and_then(|sub| find_subcommand(c.name, sub)) {
            Some(s) => (super::full_name(c.name, s), s.arity),
            None => return not_found(),
        }
    };
    if !arity_allows(arity, command.len()) {
        return error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    ok()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_password_is_the_one_redis_shows() {
        assert_eq!(
            sha256_hex(b"foo"),
            "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        );
    }
}
