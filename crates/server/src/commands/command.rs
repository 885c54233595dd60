//! COMMAND [COUNT | LIST [FILTERBY ...] | INFO [name ...] | DOCS [name ...] | GETKEYS command arg ... |
//! GETKEYSANDFLAGS command arg ... | HELP]: what the command table holds, in Redis 7's shapes,
//! for clients that look commands up (cluster clients find keys with GETKEYS or the
//! key positions of INFO) and for redis-cli.

use resp::Frame;

use super::{
    arity_allows, error, find_subcommand, full_name, int, key_specs, reply, subcommands_of, upper,
    Command, Ctx, KeySpec, Named, Reply, Subcommand, ADMIN, ADMIN_CATEGORY, ALLOW_BUSY, BITMAP,
    BLOCKING, CONNECTION, DANGEROUS, DENYOOM, FAST, GEO, HASH, HYPERLOGLOG, KEYSPACE, LIST,
    LOADING, MOVABLE_KEYS, NOSCRIPT, NO_ASYNC_LOADING, NO_AUTH, NO_MANDATORY_KEYS, NO_MULTI,
    PUBSUB, READONLY, SCRIPTING, SET, SKIP_MONITOR, SKIP_SLOWLOG, SORTEDSET, STALE,
    STREAM_CATEGORY, STRING, SYNTAX_ERROR, TABLE, TRANSACTION, WRITE,
};

pub fn command(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let Some(sub) = args.get(1) else {
        return reply(Frame::Array(TABLE.iter().map(describe).collect()));
    };
    match upper(sub).as_slice() {
        b"COUNT" => int(TABLE.len() as i64),
        b"LIST" => list(&args[2..]),
        b"INFO" if args.len() == 2 => reply(Frame::Array(TABLE.iter().map(describe).collect())),
        b"INFO" => reply(Frame::Array(
            args[2..]
                .iter()
                .map(|name| find(name).unwrap_or(Frame::Null))
                .collect(),
        )),
        b"DOCS" => super::command_docs::command_docs(&args[2..]),
        b"GETKEYS" => getkeys(&args[2..], false),
        b"GETKEYSANDFLAGS" => getkeys(&args[2..], true),
        b"HELP" => super::help(HELP),
        _ => super::bad_subcommand("command", sub),
    }
}

/// LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]: every command's
/// name, each container followed by its subcommands (`client|list`), as Redis lists them.
fn list(filter: &[Vec<u8>]) -> Reply {
    let filter = match filter {
        [] => Filter::All,
        [by, kind, arg] if upper(by) == b"FILTERBY" => match upper(kind).as_slice() {
            // No modules are loaded.
            b"MODULE" => Filter::Nothing,
            b"ACLCAT" => Filter::Category(String::from_utf8_lossy(arg).to_ascii_lowercase()),
            b"PATTERN" => Filter::Pattern(arg),
            _ => return error(SYNTAX_ERROR),
        },
        _ => return error(SYNTAX_ERROR),
    };
    reply(Frame::Array(names(&filter)))
}

/// The commands and subcommands in an ACL category (lower case), as ACL CAT lists them.
pub fn in_category(category: &str) -> Vec<Frame> {
    names(&Filter::Category(category.to_string()))
}

fn names(filter: &Filter) -> Vec<Frame> {
    let mut names = Vec::new();
    for c in TABLE {
        if filter.keeps(c.name, c.flags, c.acl) {
            names.push(Frame::bulk(c.name));
        }
        for s in subcommands_of(c.name) {
            let name = full_name(c.name, s);
            if filter.keeps(&name, s.flags, s.acl) {
                names.push(Frame::bulk(&name));
            }
        }
    }
    names
}

enum Filter<'a> {
    All,
    Nothing,
    Category(String),
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn keeps(&self, name: &str, flags: u32, acl: u16) -> bool {
        match self {
            Filter::All => true,
            Filter::Nothing => false,
            Filter::Category(wanted) => categories(flags, acl).contains(&wanted.as_str()),
            // Case-insensitive, as Redis matches command names.
            Filter::Pattern(p) => crate::glob::glob_match(p, name.as_bytes(), true),
        }
    }
}

/// GETKEYS: the keys of a full command, from its key specs; GETKEYSANDFLAGS: each
/// with what the command does to it.
fn getkeys(full: &[Vec<u8>], with_flags: bool) -> Reply {
    const INVALID: &str = "ERR Invalid command specified";
    let Some((_, c)) = super::lookup(&full[0]) else {
        return error(INVALID);
    };
    let (arity, flags, specs) = if subcommands_of(c.name).is_empty() {
        (c.arity, c.flags, c.keys)
    } else {
        match find_subcommand(c.name, &full[1]) {
            Some(s) => (s.arity, s.flags, s.keys),
            None => return error(INVALID),
        }
    };
    if !arity_allows(arity, full.len()) {
        return error("ERR Invalid number of arguments specified for command");
    }
    let keys: Vec<Frame> = key_specs::keys_of_call(specs, full)
        .map(|(i, flags)| {
            let key = Frame::Bulk(full[i].clone());
            if with_flags {
                Frame::Array(vec![key, key_specs::flag_names(flags)])
            } else {
                key
            }
        })
        .collect();
    // As Redis: a command whose keys may all be absent (EVAL) has none, not an error.
    if flags & NO_MANDATORY_KEYS != 0 && (keys.is_empty() || !key_specs::counts_hold(specs, full)) {
        return reply(Frame::Array(Vec::new()));
    }
    if !key_specs::counts_hold(specs, full) {
        return error("ERR Invalid arguments specified for command");
    }
    if keys.is_empty() {
        // As Redis: keys its specs could find and did not (XREAD without STREAMS) are
        // bad arguments; a command without specs has none to find.
        return error(if key_specs::names_keys(specs) {
            "ERR Invalid arguments specified for command"
        } else {
            "ERR The command has no key arguments"
        });
    }
    reply(Frame::Array(keys))
}

/// The entry for `name`: a command, or a subcommand as `container|sub`.
fn find(name: &[u8]) -> Option<Frame> {
    Some(match super::resolve(name)? {
        Named::Command(c) => describe(c),
        Named::Subcommand(c, s) => describe_subcommand(c.name, s),
    })
}

/// A command's COMMAND INFO entry, with its subcommands'.
fn describe(c: &Command) -> Frame {
    let subs = subcommands_of(c.name)
        .iter()
        .map(|s| describe_subcommand(c.name, s))
        .collect();
    entry(c.name, c.arity, c.flags, c.keys, c.acl, subs)
}

fn describe_subcommand(container: &str, s: &Subcommand) -> Frame {
    entry(
        &full_name(container, s),
        s.arity,
        s.flags,
        s.keys,
        s.acl,
        vec![],
    )
}

/// One entry in Redis 7's shape: name, arity, flags, first key, last key, step, ACL
/// categories, tips, key specifications, subcommands.
fn entry(
    name: &str,
    arity: i32,
    flags: u32,
    keys: &[KeySpec],
    acl: u16,
    subcommands: Vec<Frame>,
) -> Frame {
    let (first, last, step) = key_specs::legacy_range(keys);
    let tips = TIPS
        .iter()
        .find(|(command, _)| *command == name)
        .map_or(&[][..], |(_, tips)| tips)
        .iter()
        .map(Frame::bulk)
        .collect();
    // In the order Redis lists them.
    let flag_names = [
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ]
    .iter()
    .filter(|(bit, _)| flags & bit != 0 || (*bit == MOVABLE_KEYS && key_specs::movable(keys)))
    .map(|(_, name)| Frame::Simple(name.to_string()))
    .collect();
    let categories = categories(flags, acl)
        .into_iter()
        .map(|c| Frame::Simple(format!("@{c}")))
        .collect();
    Frame::Array(vec![
        Frame::bulk(name),
        Frame::Integer(arity as i64),
        Frame::Set(flag_names),
        Frame::Integer(first as i64),
        Frame::Integer(last as i64),
        Frame::Integer(step as i64),
        Frame::Set(categories),
        Frame::Set(tips),
        key_specs::describe(keys),
        Frame::Set(subcommands),
    ])
}

/// A command's ACL categories, in Redis's order: those of the table, and those Redis
/// derives from the flags (write, readonly, admin with dangerous, fast or else slow).
pub(super) fn categories(flags: u32, acl: u16) -> Vec<&'static str> {
    let has = |bit: u16| acl & bit != 0;
    let admin = flags & ADMIN != 0 || has(ADMIN_CATEGORY);
    [
        ("keyspace", has(KEYSPACE)),
        // As Redis: a read-only scripting command (EVAL_RO) is not in @read.
        ("read", flags & READONLY != 0 && !has(SCRIPTING)),
        ("write", flags & WRITE != 0),
        ("set", has(SET)),
        ("sortedset", has(SORTEDSET)),
        ("list", has(LIST)),
        ("hash", has(HASH)),
        ("string", has(STRING)),
        ("bitmap", has(BITMAP)),
        ("hyperloglog", has(HYPERLOGLOG)),
        ("geo", has(GEO)),
        ("stream", has(STREAM_CATEGORY)),
        ("pubsub", flags & PUBSUB != 0),
        ("admin", admin),
        ("fast", flags & FAST != 0),
        ("slow", flags & FAST == 0),
        ("blocking", flags & BLOCKING != 0),
        ("dangerous", flags & ADMIN != 0 || has(DANGEROUS)),
        ("connection", has(CONNECTION)),
        ("transaction", has(TRANSACTION)),
        ("scripting", has(SCRIPTING)),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(name, _)| name)
    .collect()
}

/// Redis's tips to clients, COMMAND INFO's eighth field: how a cluster client sends
/// the command to shards and merges their replies, and whether the output may differ
/// between identical calls (HOTKEYS's does, as the access pattern moves).
#[rustfmt::skip]
const TIPS: &[(&str, &[&str])] = &[
    ("ping", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("client|info", &["nondeterministic_output"]),
    ("client|list", &["nondeterministic_output"]),
    ("mget", &["request_policy:multi_shard"]),
    ("hgetall", &["nondeterministic_output_order"]),
    ("zrandmember", &["nondeterministic_output"]),
    ("zscan", &["nondeterministic_output"]),
    ("migrate", &["nondeterministic_output"]),
    ("xadd", &["nondeterministic_output"]),
    ("xpending", &["nondeterministic_output"]),
    ("xclaim", &["nondeterministic_output"]),
    ("xautoclaim", &["nondeterministic_output"]),
    ("xinfo|consumers", &["nondeterministic_output"]),
    ("xtrim", &["nondeterministic_output"]),
    ("smembers", &["nondeterministic_output_order"]),
    ("spop", &["nondeterministic_output"]),
    ("srandmember", &["nondeterministic_output"]),
    ("sinter", &["nondeterministic_output_order"]),
    ("sunion", &["nondeterministic_output_order"]),
    ("sdiff", &["nondeterministic_output_order"]),
    ("sscan", &["nondeterministic_output"]),
    ("hkeys", &["nondeterministic_output_order"]),
    ("hvals", &["nondeterministic_output_order"]),
    ("hrandfield", &["nondeterministic_output"]),
    ("hscan", &["nondeterministic_output"]),
    ("mset", &["request_policy:multi_shard", "response_policy:all_succeeded"]),
    ("msetnx", &["request_policy:multi_shard", "response_policy:agg_min"]),
    ("del", &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("unlink", &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("exists", &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("touch", &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("randomkey", &["request_policy:all_shards", "nondeterministic_output"]),
    ("dump", &["nondeterministic_output"]),
    ("keys", &["request_policy:all_shards", "nondeterministic_output_order"]),
    ("scan", &["nondeterministic_output", "request_policy:special"]),
    ("dbsize", &["request_policy:all_shards", "response_policy:agg_sum"]),
    ("flushdb", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("flushall", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("ttl", &["nondeterministic_output"]),
    ("script|load", &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("script|exists", &["request_policy:all_shards", "response_policy:agg_logical_and"]),
    ("script|flush", &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("script|kill", &["request_policy:all_shards", "response_policy:one_succeeded"]),
    ("function|list", &["nondeterministic_output_order"]),
    ("function|kill", &["request_policy:all_shards", "response_policy:one_succeeded"]),
    ("function|load", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("function|restore", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("function|delete", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("function|flush", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("function|stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("pttl", &["nondeterministic_output"]),
    ("object|encoding", &["nondeterministic_output"]),
    ("object|refcount", &["nondeterministic_output"]),
    ("object|freq", &["nondeterministic_output"]),
    ("object|idletime", &["nondeterministic_output"]),
    ("command", &["nondeterministic_output_order"]),
    ("command|docs", &["nondeterministic_output_order"]),
    ("command|info", &["nondeterministic_output_order"]),
    ("command|list", &["nondeterministic_output_order"]),
    ("config|set", &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("info", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("time", &["nondeterministic_output"]),
    ("memory|doctor", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("memory|malloc-stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("memory|purge", &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("memory|stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("module|list", &["nondeterministic_output_order"]),
    ("slowlog|get", &["request_policy:all_nodes", "nondeterministic_output"]),
    ("slowlog|len", &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"]),
    ("slowlog|reset", &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("latency|latest", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    ("latency|history", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    ("latency|reset", &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("latency|graph", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    ("latency|doctor", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    ("latency|histogram", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"]),
    ("lastsave", &["nondeterministic_output"]),
    ("wait", &["request_policy:all_shards", "response_policy:agg_min"]),
    ("hotkeys", &["nondeterministic_output"]),
    ("cluster|bumpepoch", &["nondeterministic_output"]),
    ("cluster|count-failure-reports", &["nondeterministic_output"]),
    ("cluster|getkeysinslot", &["nondeterministic_output"]),
    ("cluster|info", &["nondeterministic_output"]),
    ("cluster|links", &["nondeterministic_output"]),
    ("cluster|nodes", &["nondeterministic_output"]),
    ("cluster|replicas", &["nondeterministic_output"]),
    ("cluster|shards", &["nondeterministic_output"]),
    ("cluster|slaves", &["nondeterministic_output"]),
    ("cluster|slots", &["nondeterministic_output"]),
];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];
