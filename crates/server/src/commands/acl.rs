//! ACL: users and what each may do (the model is in `users.rs`), and the log of
//! refusals. LOAD and SAVE read and write the ACL file (`acl_file.rs`), and are
//! refused as Redis refuses them when none is configured.

use rand::RngCore;
use resp::Frame;

use crate::clients::Client;
use crate::pubsub::Kind;

use super::users::{Call, DEFAULT_USER};
use super::{
    arity_allows, error, find_subcommand, int, lookup, ok, parse_integer, reply, stat_slot,
    subcommands_of, upper, Ctx, Reply, NOT_AN_INTEGER,
};

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. \
    You may want to specify users via the ACL SETUSER command and then issue a CONFIG \
    REWRITE (assuming you have a Redis configuration file set) in order to store users in \
    the Redis configuration.";

/// ACL LOG's default count.
const LOG_COUNT: i64 = 10;

pub fn acl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let users = &ctx.server.users;
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"WHOAMI", []) => reply(Frame::Bulk(ctx.session.user.name.clone())),
        (b"USERS", []) => reply(Frame::Array(
            users
                .all()
                .iter()
                .map(|u| Frame::Bulk(u.name.clone()))
                .collect(),
        )),
        (b"LIST", []) => reply(Frame::Array(
            users
                .all()
                .iter()
                .map(|u| Frame::bulk(u.describe()))
                .collect(),
        )),
        (b"GETUSER", [name]) => {
            let Some(user) = users.get(name) else {
                return reply(Frame::Null);
            };
            let d = user.details();
            let field = |name: &str, value: Frame| (Frame::bulk(name), value);
            let selector = |[commands, keys, channels]: &[String; 3]| {
                vec![
                    field("commands", Frame::bulk(commands)),
                    field("keys", Frame::bulk(keys)),
                    field("channels", Frame::bulk(channels)),
                ]
            };
            let mut fields = vec![
                field(
                    "flags",
                    Frame::Set(d.flags.iter().map(Frame::bulk).collect()),
                ),
                field(
                    "passwords",
                    Frame::Array(d.passwords.iter().map(Frame::bulk).collect()),
                ),
            ];
            fields.extend(selector(&d.root));
            fields.push(field(
                "selectors",
                Frame::Array(
                    d.selectors
                        .iter()
                        .map(|s| Frame::Map(selector(s)))
                        .collect(),
                ),
            ));
            reply(Frame::Map(fields))
        }
        (b"SETUSER", [name, rules @ ..]) => {
            if name.iter().any(|&b| b.is_ascii_whitespace() || b == 0) {
                return error("ERR Usernames can't contain spaces or null characters");
            }
            match users.set(name, rules) {
                Ok(None) => ok(),
                Ok(Some(narrowed)) => {
                    // As Redis: a subscriber of a channel its user may no longer use
                    // is disconnected.
                    kill_clients_where(ctx, |user, c| {
                        user == name.as_slice()
                            && c.is_subscribed()
                            && ctx.server.pubsub.subscribes_outside(c.id, |kind, channel| {
                                narrowed.may_subscribe(channel, kind == Kind::Pattern)
                            })
                    });
                    ok()
                }
                Err(e) => error(&e),
            }
        }
        (b"DELUSER", names @ [_, ..]) => {
            if names.iter().any(|u| u.as_slice() == DEFAULT_USER) {
                return error("ERR The 'default' user cannot be removed");
            }
            let deleted = users.delete(names);
            // As Redis: the connections of a deleted user go with it.
            kill_clients_where(ctx, |user, _| names.iter().any(|n| n.as_slice() == user));
            int(deleted as i64)
        }
        (b"CAT", []) => reply(Frame::Array(
            super::users::CATEGORIES.iter().map(Frame::bulk).collect(),
        )),
        (b"CAT", [category]) => {
            let category = String::from_utf8_lossy(category).to_ascii_lowercase();
            if !super::users::CATEGORIES.contains(&category.as_str()) {
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
            let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            hex.truncate(bits.div_ceil(4));
            reply(Frame::bulk(&hex))
        }
        (b"LOG", [reset]) if upper(reset) == b"RESET" => {
            users.reset_log();
            ok()
        }
        (b"LOG", rest @ ([] | [_])) => {
            let count = match rest.first().map(|c| parse_integer(c)) {
                None => LOG_COUNT,
                Some(Some(n)) => n.max(0),
                Some(None) => return error(NOT_AN_INTEGER),
            };
            let entries = users.log_entries(count as usize, |e| {
                let field = |name: &str, value: Frame| (Frame::bulk(name), value);
                Frame::Map(vec![
                    field("count", Frame::Integer(e.count as i64)),
                    field("reason", Frame::bulk(e.reason)),
                    field("context", Frame::bulk(e.context)),
                    field("object", Frame::Bulk(e.object.clone())),
                    field("username", Frame::Bulk(e.username.clone())),
                    field(
                        "age-seconds",
                        Frame::Double(e.updated.elapsed().as_millis() as f64 / 1000.0),
                    ),
                    field("client-info", Frame::bulk(&e.client_info)),
                ])
            });
            reply(Frame::Array(entries))
        }
        (b"DRYRUN", [user, command @ ..]) if !command.is_empty() => {
            let Some(user) = users.get(user) else {
                let user = String::from_utf8_lossy(user);
                return error(&format!("ERR User '{user}' not found"));
            };
            dry_run(&user, command)
        }
        (b"LOAD", []) => {
            let Some((name, path)) = crate::acl_file::configured(ctx.server) else {
                return error(NO_ACL_FILE);
            };
            if let Err(errors) = crate::acl_file::load(ctx.server, &name, &path) {
                return error(&format!("ERR {errors}"));
            }
            // As Redis: a client whose user is gone goes, and so does a subscriber to
            // a channel its user may no longer use; the rest serve on as their users
            // are now.
            kill_clients_where(ctx, |user, c| match users.get(user) {
                None => true,
                Some(now) => {
                    c.is_subscribed()
                        && ctx.server.pubsub.subscribes_outside(c.id, |kind, channel| {
                            now.may_subscribe(channel, kind == Kind::Pattern)
                        })
                }
            });
            ok()
        }
        (b"SAVE", []) => {
            let Some((_, path)) = crate::acl_file::configured(ctx.server) else {
                return error(NO_ACL_FILE);
            };
            if let Err(e) = crate::acl_file::save(ctx.server, &path) {
                tracing::warn!(file = %path.display(), error = %e, "ACL SAVE failed");
                return error(
                    "ERR There was an error trying to save the ACLs. Please check the server \
                     logs for more information",
                );
            }
            ok()
        }
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("acl", &args[1]),
    }
}

/// Whether `user` may run `command`, as ACL DRYRUN answers: OK, or why not.
fn dry_run(user: &super::users::User, command: &[Vec<u8>]) -> Reply {
    let not_found = || {
        let name = String::from_utf8_lossy(&command[0]);
        error(&format!("ERR Command '{name}' not found"))
    };
    let Some((index, c)) = lookup(&command[0]) else {
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
    let slot = stat_slot(index, command);
    match user.check(slot, &Call::new(slot, command)) {
        Ok(()) => ok(),
        Err(denied) => reply(Frame::bulk(denied.dry_run_answer(slot, command))),
    }
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

/// Disconnects each client for which `doomed(its user's name, it)` holds.
fn kill_clients_where(ctx: &Ctx, doomed: impl Fn(&[u8], &Client) -> bool) {
    for c in ctx.server.clients.snapshot() {
        let user = c.user.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if doomed(&user, &c) {
            c.kill();
        }
    }
}
