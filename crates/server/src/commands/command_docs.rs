//! COMMAND DOCS: each command's summary, the Redis version it first appeared in, its
//! group, its cost and its arguments, which redis-cli turns into its `help` pages and
//! the hints it shows while a command is typed. The argument lines are in the notation
//! of `arg_syntax.rs`; their trees match redis-server 7.0's for every command both have.

use resp::Frame;

use super::arg_syntax::{self, Arg, Kind, Repeat};
use super::{full_name, reply, resolve, subcommands_of, KeySpec, Named, Reply};

struct Doc {
    /// A command, or a subcommand as `container|sub`.
    name: &'static str,
    group: &'static str,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
    arguments: &'static str,
}

const fn doc(
    name: &'static str,
    group: &'static str,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
    arguments: &'static str,
) -> Doc {
    Doc {
        name,
        group,
        since,
        complexity,
        summary,
        arguments,
    }
}

/// COMMAND DOCS [name ...]: a map from each named command (every command when none
/// is named) to its documentation; names not known are left out, as Redis does.
pub fn command_docs(names: &[Vec<u8>]) -> Reply {
    let entries: Vec<(String, Frame)> = if names.is_empty() {
        super::TABLE
            .iter()
            .map(|c| (c.name.to_string(), describe(c.name)))
            .collect()
    } else {
        names
            .iter()
            .filter_map(|name| {
                let name = canonical(name)?;
                let entry = describe(&name);
                Some((name, entry))
            })
            .collect()
    };
    reply(Frame::Map(
        entries
            .into_iter()
            .map(|(name, entry)| (Frame::bulk(&name), entry))
            .collect(),
    ))
}

/// The table's name for `name`: `get` for `GET`, `client|list` for `Client|List`.
fn canonical(name: &[u8]) -> Option<String> {
    Some(match resolve(name)? {
        Named::Command(c) => c.name.to_string(),
        Named::Subcommand(c, s) => full_name(c.name, s),
    })
}

/// One command's entry, in the order Redis gives its fields.
fn describe(name: &str) -> Frame {
    let doc = find(name);
    let mut fields = vec![
        ("summary", Frame::bulk(doc.summary)),
        ("since", Frame::bulk(doc.since)),
        ("group", Frame::bulk(doc.group)),
        ("complexity", Frame::bulk(doc.complexity)),
    ];
    if let Some(note) = NOTES.iter().find(|n| n.name == name) {
        let flag = if note.deprecated_since.is_some() {
            "deprecated"
        } else {
            "syscmd"
        };
        fields.push(("doc_flags", Frame::Set(vec![Frame::Simple(flag.into())])));
        if let Some(since) = note.deprecated_since {
            fields.push(("deprecated_since", Frame::bulk(since)));
        }
        if let Some(by) = note.replaced_by {
            fields.push(("replaced_by", Frame::bulk(by)));
        }
    }
    let args = arg_syntax::parse(doc.arguments)
        .unwrap_or_else(|e| panic!("the docs of {name}: {e} (the table's tests parse every line)"));
    if !args.is_empty() {
        let specs = key_specs_of(name).len();
        let mut keys = 0;
        let args = args
            .iter()
            .map(|a| arg_frame(a, specs, &mut keys))
            .collect();
        fields.push(("arguments", Frame::Array(args)));
    }
    let (container, sub) = name.split_once('|').unwrap_or((name, ""));
    if sub.is_empty() && !subcommands_of(container).is_empty() {
        let subs = subcommands_of(container)
            .iter()
            .map(|s| {
                let full = full_name(container, s);
                let entry = describe(&full);
                (Frame::bulk(&full), entry)
            })
            .collect();
        fields.push(("subcommands", Frame::Map(subs)));
    }
    named_fields(fields)
}

/// A map of named fields, as both entries and arguments are.
fn named_fields(fields: Vec<(&str, Frame)>) -> Frame {
    Frame::Map(
        fields
            .into_iter()
            .map(|(k, v)| (Frame::bulk(k), v))
            .collect(),
    )
}

fn find(name: &str) -> &'static Doc {
    DOCS.iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} has no docs (the table's tests check every command)"))
}

fn key_specs_of(name: &str) -> &'static [KeySpec] {
    match resolve(name.as_bytes()) {
        Some(Named::Command(c)) => c.keys,
        Some(Named::Subcommand(_, s)) => s.keys,
        None => &[],
    }
}

/// An argument's map. Key arguments point at their key spec: the n-th key argument at
/// the n-th spec, and any after the last spec at the last (LCS's two keys share one).
fn arg_frame(arg: &Arg, specs: usize, keys: &mut usize) -> Frame {
    let mut fields = vec![
        ("name", Frame::bulk(&arg.name)),
        ("type", Frame::bulk(arg.kind.word())),
    ];
    if let Some(spec) = arg.key_spec {
        assert!(
            spec < specs,
            "{} names key spec {spec} of {specs}",
            arg.name
        );
        fields.push(("key_spec_index", Frame::Integer(spec as i64)));
    } else if arg.kind == Kind::Key {
        assert!(specs > 0, "a key argument in a command with no key specs");
        fields.push((
            "key_spec_index",
            Frame::Integer((*keys).min(specs - 1) as i64),
        ));
        *keys += 1;
    }
    if let Some(token) = &arg.token {
        fields.push(("token", Frame::bulk(token)));
    }
    let mut flags = Vec::new();
    if arg.optional {
        flags.push("optional");
    }
    match arg.repeat {
        Repeat::Once => {}
        Repeat::Multiple => flags.push("multiple"),
        Repeat::MultipleToken => flags.extend(["multiple", "multiple_token"]),
    }
    if !flags.is_empty() {
        let flags = flags.into_iter().map(|f| Frame::Simple(f.into())).collect();
        fields.push(("flags", Frame::Set(flags)));
    }
    if matches!(arg.kind, Kind::OneOf | Kind::Block) {
        let children = arg
            .children
            .iter()
            .map(|c| arg_frame(c, specs, keys))
            .collect();
        fields.push(("arguments", Frame::Array(children)));
    }
    named_fields(fields)
}

/// Commands that are kept for old clients, or that are not meant for applications.
struct Note {
    name: &'static str,
    /// None: a system command (DEBUG).
    deprecated_since: Option<&'static str>,
    replaced_by: Option<&'static str>,
}

const NOTES: &[Note] = &[
    Note {
        name: "slaveof",
        deprecated_since: Some("5.0.0"),
        replaced_by: Some("`REPLICAOF`"),
    },
    Note {
        name: "brpoplpush",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`BLMOVE` with the `RIGHT` and `LEFT` arguments"),
    },
    Note {
        name: "zrangebyscore",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`ZRANGE` with the `BYSCORE` argument"),
    },
    Note {
        name: "zrevrangebyscore",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`ZRANGE` with the `REV` and `BYSCORE` arguments"),
    },
    Note {
        name: "zrangebylex",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`ZRANGE` with the `BYLEX` argument"),
    },
    Note {
        name: "zrevrangebylex",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`ZRANGE` with the `REV` and `BYLEX` arguments"),
    },
    Note {
        name: "zrevrange",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`ZRANGE` with the `REV` argument"),
    },
    Note {
        name: "georadius",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument"),
    },
    Note {
        name: "georadius_ro",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`GEOSEARCH` with the `BYRADIUS` argument"),
    },
    Note {
        name: "georadiusbymember",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some(
            "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
        ),
    },
    Note {
        name: "georadiusbymember_ro",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments"),
    },
    Note {
        name: "rpoplpush",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`LMOVE` with the `RIGHT` and `LEFT` arguments"),
    },
    Note {
        name: "hmset",
        deprecated_since: Some("4.0.0"),
        replaced_by: Some("`HSET` with multiple field-value pairs"),
    },
    Note {
        name: "getset",
        deprecated_since: Some("6.2.0"),
        replaced_by: Some("`SET` with the `!GET` argument"),
    },
    Note {
        name: "substr",
        deprecated_since: Some("2.0.0"),
        replaced_by: Some("`GETRANGE`"),
    },
    Note {
        name: "cluster|slaves",
        deprecated_since: Some("5.0.0"),
        replaced_by: Some("`CLUSTER REPLICAS`"),
    },
    Note {
        name: "cluster|slots",
        deprecated_since: Some("7.0.0"),
        replaced_by: Some("`CLUSTER SHARDS`"),
    },
    Note {
        name: "debug",
        deprecated_since: None,
        replaced_by: None,
    },
];

/// The GEO searches' cost: a copy of the sorted set, then a scan of the nine geohash
/// boxes around the shape.
const GEO_SEARCH_COST: &str = "O(N+M) where N is the size of the sorted set (hotkv copies it) and M the number of elements inside the grid-aligned bounding box around the shape";

/// A stream is decoded whole to be read, and stored whole again to be changed.
const STREAM_READ_COST: &str = "O(N) where N is the size of the stream (hotkv decodes it)";
const STREAM_WRITE_COST: &str =
    "O(N) where N is the size of the stream: hotkv copies a stream to change it";

#[rustfmt::skip]
const DOCS: &[Doc] = &[
    // Connection.
    doc("ping", "connection", "1.0.0", "O(1)",
        "Replies PONG, or the message given, to show the connection is alive.",
        "[message]"),
    doc("echo", "connection", "1.0.0", "O(1)",
        "Replies with the message given.",
        "message"),
    doc("quit", "connection", "1.0.0", "O(1)",
        "Closes the connection once the replies before it are sent.",
        ""),
    doc("reset", "connection", "6.2.0", "O(1)",
        "Returns the connection to its state when it was opened.",
        ""),
    doc("hello", "connection", "6.0.0", "O(1)",
        "Chooses the protocol version (2 or 3), optionally authenticating and naming the connection, and describes the server.",
        "[arguments=protover:integer [AUTH (username_password=username password)] [SETNAME clientname]]"),
    doc("auth", "connection", "1.0.0", "O(N) where N is the number of passwords defined for the user",
        "Authenticates the connection.",
        "[username] password"),
    doc("select", "connection", "1.0.0", "O(1)",
        "Selects the logical database; hotkv has database 0 only.",
        "index:integer"),
    doc("client", "connection", "2.4.0", "Depends on subcommand.",
        "A container for commands about client connections.",
        ""),
    doc("client|id", "connection", "5.0.0", "O(1)",
        "Returns the connection's unique ID.",
        ""),
    doc("client|getname", "connection", "2.6.9", "O(1)",
        "Returns the connection's name.",
        ""),
    doc("client|setname", "connection", "2.6.9", "O(1)",
        "Names the connection.",
        "connection-name"),
    doc("client|info", "connection", "6.2.0", "O(1)",
        "Describes this connection, as one line of CLIENT LIST.",
        ""),
    doc("client|list", "connection", "2.4.0", "O(N) where N is the number of client connections",
        "Describes the open connections, one line each.",
        "[TYPE (normal_master_replica_pubsub=NORMAL|MASTER|REPLICA|PUBSUB)] [ID (id=client-id:integer...)]"),
    doc("client|kill", "connection", "2.4.0", "O(N) where N is the number of client connections",
        "Closes the connections that match an address or filters.",
        "(filter=ip:port|(new-format=[ID client-id:integer]|[TYPE (normal_master_slave_pubsub=NORMAL|MASTER|SLAVE|REPLICA|PUBSUB)]|[USER username]|[ADDR ip:port]|[LADDR ip:port]|[SKIPME yes/no])...)"),
    doc("client|setinfo", "connection", "7.2.0", "O(1)",
        "Records the name or version of the client library, shown by CLIENT LIST.",
        "(attr=LIB-NAME libname|LIB-VER libver)"),
    doc("client|no-evict", "connection", "7.0.0", "O(1)",
        "Exempts the connection from client eviction, or ends the exemption.",
        "(enabled=ON|OFF)"),
    doc("client|reply", "connection", "3.2.0", "O(1)",
        "Turns the server's replies to this connection on or off, or skips the next one.",
        "(on_off_skip=ON|OFF|SKIP)"),
    doc("client|pause", "connection", "2.9.50", "O(1)",
        "Holds the commands of all clients, or only their writes, for a time.",
        "timeout:integer [mode=WRITE|ALL]"),
    doc("client|unpause", "connection", "6.2.0", "O(N) where N is the number of paused clients",
        "Ends a CLIENT PAUSE.",
        ""),
    doc("client|unblock", "connection", "5.0.0", "O(log N) where N is the number of client connections",
        "Wakes a connection blocked in a blocking command.",
        "client-id:integer [timeout_error=TIMEOUT|ERROR]"),
    doc("client|tracking", "connection", "6.0.0", "O(1), or O(N) for BCAST where N is the number of prefixes",
        "Turns server-assisted client-side caching on or off for the connection.",
        "(status=ON|OFF) [REDIRECT client-id:integer] [PREFIX prefix^...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]"),
    doc("client|caching", "connection", "6.0.0", "O(1)",
        "Says whether the next command's keys are tracked, in OPTIN or OPTOUT tracking.",
        "(mode=YES|NO)"),
    doc("client|getredir", "connection", "6.0.0", "O(1)",
        "Returns the ID of the connection that tracking invalidations are redirected to.",
        ""),
    doc("client|trackinginfo", "connection", "6.2.0", "O(1)",
        "Describes the connection's client-side caching.",
        ""),
    doc("client|help", "connection", "5.0.0", "O(1)",
        "Lists the CLIENT subcommands.",
        ""),
    doc("acl", "server", "6.0.0", "Depends on subcommand.",
        "A container for commands about users and what they may run; hotkv has the one user default.",
        ""),
    doc("acl|cat", "server", "6.0.0", "O(1)",
        "Lists the ACL categories, or the commands in one.",
        "[categoryname]"),
    doc("acl|deluser", "server", "6.0.0", "O(1) amortized time considering the typical user.",
        "Deletes users; default cannot be deleted, and hotkv has no other.",
        "username..."),
    doc("acl|dryrun", "server", "7.0.0", "O(1).",
        "Says whether a user may run a command, without running it.",
        "username command [arg...]"),
    doc("acl|genpass", "server", "6.0.0", "O(N) where N is the number of bits",
        "Returns a random password of 256 bits, or of the bits asked for, in hex.",
        "[bits:integer]"),
    doc("acl|getuser", "server", "6.0.0", "O(N) where N is the number of password, command and pattern rules",
        "Describes a user's rules.",
        "username"),
    doc("acl|list", "server", "6.0.0", "O(N) where N is the number of users",
        "Lists the users' rules as an ACL file writes them.",
        ""),
    doc("acl|load", "server", "6.0.0", "O(N) where N is the number of users",
        "Reloads users from the ACL file; hotkv has none.",
        ""),
    doc("acl|log", "server", "6.0.0", "O(N) where N is the number of entries shown",
        "Lists the commands and authentications ACL refused; hotkv logs none.",
        "[operation=count:integer|RESET]"),
    doc("acl|save", "server", "6.0.0", "O(N) where N is the number of users",
        "Writes the users to the ACL file; hotkv has none.",
        ""),
    doc("acl|setuser", "server", "6.0.0", "O(N) where N is the number of rules",
        "Creates or changes a user; hotkv refuses it (its one user's password is requirepass).",
        "username [rule...]"),
    doc("acl|users", "server", "6.0.0", "O(N) where N is the number of users",
        "Lists the user names.",
        ""),
    doc("acl|whoami", "server", "6.0.0", "O(1)",
        "Returns the name of the connection's user.",
        ""),
    doc("acl|help", "server", "6.0.0", "O(1)",
        "Lists the ACL subcommands.",
        ""),
    // Strings.
    doc("get", "string", "1.0.0", "O(1)",
        "Returns the string value of a key.",
        "key:key"),
    doc("getdel", "string", "6.2.0", "O(1)",
        "Returns the string value of a key and deletes the key.",
        "key:key"),
    doc("getex", "string", "6.2.0", "O(1)",
        "Returns the string value of a key and sets or clears its expiry.",
        "key:key [expiration=EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|PERSIST]"),
    doc("getset", "string", "1.0.0", "O(1)",
        "Sets the string value of a key and returns the value it replaced.",
        "key:key value"),
    doc("set", "string", "1.0.0", "O(1)",
        "Sets the string value of a key, with optional expiry, condition and the old value returned.",
        "key:key value [condition=NX|XX] [GET] [expiration=EX seconds:integer|PX milliseconds:integer|EXAT unix-time-seconds:unix-time|PXAT unix-time-milliseconds:unix-time|KEEPTTL]"),
    doc("setnx", "string", "1.0.0", "O(1)",
        "Sets the string value of a key only if the key does not exist.",
        "key:key value"),
    doc("setex", "string", "2.0.0", "O(1)",
        "Sets the string value of a key and its expiry in seconds.",
        "key:key seconds:integer value"),
    doc("psetex", "string", "2.6.0", "O(1)",
        "Sets the string value of a key and its expiry in milliseconds.",
        "key:key milliseconds:integer value"),
    doc("mget", "string", "1.0.0", "O(N) where N is the number of keys",
        "Returns the string values of several keys.",
        "key:key..."),
    doc("mset", "string", "1.0.1", "O(N) where N is the number of keys",
        "Sets the string values of several keys, all at once.",
        "(key_value=key:key value)..."),
    doc("msetnx", "string", "1.0.1", "O(N) where N is the number of keys",
        "Sets the string values of several keys, all at once, only if none of them exists.",
        "(key_value=key:key value)..."),
    doc("strlen", "string", "2.2.0", "O(1)",
        "Returns the length of a string value.",
        "key:key"),
    doc("append", "string", "2.0.0", "O(1) amortized",
        "Appends to the string value of a key, creating the key if it does not exist.",
        "key:key value"),
    doc("getrange", "string", "2.4.0", "O(N) where N is the length of the returned string",
        "Returns a substring of a string value, by inclusive byte offsets.",
        "key:key start:integer end:integer"),
    doc("substr", "string", "1.0.0", "O(N) where N is the length of the returned string",
        "Returns a substring of a string value, by inclusive byte offsets.",
        "key:key start:integer end:integer"),
    doc("setrange", "string", "2.2.0", "O(1), or O(M) where M is the length of value when the string grows",
        "Overwrites part of a string value from an offset, padding with zero bytes.",
        "key:key offset:integer value"),
    doc("incr", "string", "1.0.0", "O(1)",
        "Adds one to the integer value of a key, from 0 if it does not exist.",
        "key:key"),
    doc("decr", "string", "1.0.0", "O(1)",
        "Subtracts one from the integer value of a key, from 0 if it does not exist.",
        "key:key"),
    doc("incrby", "string", "1.0.0", "O(1)",
        "Adds an integer to the integer value of a key, from 0 if it does not exist.",
        "key:key increment:integer"),
    doc("decrby", "string", "1.0.0", "O(1)",
        "Subtracts an integer from the integer value of a key, from 0 if it does not exist.",
        "key:key decrement:integer"),
    doc("incrbyfloat", "string", "2.6.0", "O(1)",
        "Adds a floating point number to the value of a key, from 0 if it does not exist.",
        "key:key increment:double"),
    // Hashes.
    doc("hset", "hash", "2.0.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Sets fields of a hash to values, creating the hash if needed; returns how many fields are new.",
        "key:key (field_value=field value)..."),
    doc("hsetnx", "hash", "2.0.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Sets a field of a hash only if the hash does not have it.",
        "key:key field value"),
    doc("hmset", "hash", "2.0.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Sets fields of a hash to values (HSET that answers OK).",
        "key:key (field_value=field value)..."),
    doc("hget", "hash", "2.0.0", "O(N) where N is the size of the hash",
        "Returns the value of a field of a hash.",
        "key:key field"),
    doc("hmget", "hash", "2.0.0", "O(N) where N is the size of the hash, for each field asked for",
        "Returns the values of several fields of a hash.",
        "key:key field..."),
    doc("hdel", "hash", "2.0.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Removes fields from a hash, and the key with its last field.",
        "key:key field..."),
    doc("hlen", "hash", "2.0.0", "O(1)",
        "Returns the number of fields of a hash.",
        "key:key"),
    doc("hstrlen", "hash", "3.2.0", "O(N) where N is the size of the hash",
        "Returns the length of the value of a field of a hash.",
        "key:key field"),
    doc("hexists", "hash", "2.0.0", "O(N) where N is the size of the hash",
        "Tells whether a hash has a field.",
        "key:key field"),
    doc("hgetall", "hash", "2.0.0", "O(N) where N is the size of the hash",
        "Returns every field of a hash with its value.",
        "key:key"),
    doc("hkeys", "hash", "2.0.0", "O(N) where N is the size of the hash",
        "Returns every field of a hash.",
        "key:key"),
    doc("hvals", "hash", "2.0.0", "O(N) where N is the size of the hash",
        "Returns every value of a hash.",
        "key:key"),
    doc("hincrby", "hash", "2.0.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Adds an integer to the integer value of a field of a hash, from 0 if the field is missing.",
        "key:key field increment:integer"),
    doc("hincrbyfloat", "hash", "2.6.0", "O(N) where N is the size of the hash: hotkv copies a hash to change it",
        "Adds a floating point number to the value of a field of a hash, from 0 if the field is missing.",
        "key:key field increment:double"),
    doc("hrandfield", "hash", "6.2.0", "O(N) where N is the size of the hash",
        "Returns random fields of a hash, distinct ones for a positive count, with their values if asked.",
        "key:key [options=count:integer [WITHVALUES]]"),
    doc("hscan", "hash", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        "Iterates over the fields and values of a hash, optionally only fields that match a pattern.",
        "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]"),
    // Lists.
    doc("lpush", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pushes elements, one after the other, at the head of a list, creating it if needed.",
        "key:key element..."),
    doc("rpush", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pushes elements, one after the other, at the tail of a list, creating it if needed.",
        "key:key element..."),
    doc("lpushx", "list", "2.2.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pushes elements at the head of a list only if the list exists.",
        "key:key element..."),
    doc("rpushx", "list", "2.2.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pushes elements at the tail of a list only if the list exists.",
        "key:key element..."),
    doc("lpop", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Removes and returns the first element of a list, or the first count elements.",
        "key:key [count:integer]"),
    doc("rpop", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Removes and returns the last element of a list, or the last count elements.",
        "key:key [count:integer]"),
    doc("llen", "list", "1.0.0", "O(1)",
        "Returns the length of a list.",
        "key:key"),
    doc("lindex", "list", "1.0.0", "O(N) where N is the index of the element",
        "Returns the element of a list at an index, negative indexes counting from the tail.",
        "key:key index:integer"),
    doc("lrange", "list", "1.0.0", "O(S+N) where S is the start offset and N the number of elements returned",
        "Returns the elements of a list between two inclusive indexes.",
        "key:key start:integer stop:integer"),
    doc("lset", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Replaces the element of a list at an index.",
        "key:key index:integer element"),
    doc("ltrim", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Keeps only the elements of a list between two inclusive indexes.",
        "key:key start:integer stop:integer"),
    doc("lrem", "list", "1.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Removes occurrences of an element from a list: the first count, the last -count, or all for 0.",
        "key:key count:integer element"),
    doc("linsert", "list", "2.2.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Inserts an element before or after the first occurrence of a pivot element in a list.",
        "key:key (where=BEFORE|AFTER) pivot element"),
    doc("lpos", "list", "6.0.6", "O(N) where N is the length of the list",
        "Returns the indexes of the elements of a list equal to an element.",
        "key:key element [RANK rank:integer] [COUNT num-matches:integer] [MAXLEN len:integer]"),
    doc("lmove", "list", "6.2.0", "O(N) where N is the length of the lists",
        "Pops an element from one end of a list and pushes it at one end of another, atomically.",
        "source:key destination:key (wherefrom=LEFT|RIGHT) (whereto=LEFT|RIGHT)"),
    doc("blpop", "list", "2.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pops the first element of the first non-empty list, waiting for one up to a timeout (0: forever).",
        "key:key... timeout:double"),
    doc("brpop", "list", "2.0.0", "O(N) where N is the length of the list: hotkv copies a list to change it",
        "Pops the last element of the first non-empty list, waiting for one up to a timeout (0: forever).",
        "key:key... timeout:double"),
    doc("blmove", "list", "6.2.0", "O(N) where N is the length of the lists",
        "LMOVE that waits, up to a timeout (0: forever), for the source list to have an element.",
        "source:key destination:key (wherefrom=LEFT|RIGHT) (whereto=LEFT|RIGHT) timeout:double"),
    doc("brpoplpush", "list", "2.2.0", "O(N) where N is the length of the lists",
        "RPOPLPUSH that waits, up to a timeout (0: forever), for the source list to have an element.",
        "source:key destination:key timeout:double"),
    doc("lmpop", "list", "7.0.0", "O(N) where N is the length of the list popped from: hotkv copies a list to change it",
        "Pops up to count elements from one end of the first non-empty list among several.",
        "numkeys:integer key:key... (where=LEFT|RIGHT) [COUNT count:integer]"),
    doc("blmpop", "list", "7.0.0", "O(N) where N is the length of the list popped from: hotkv copies a list to change it",
        "LMPOP that waits, up to a timeout (0: forever), for one of the lists to have an element.",
        "timeout:double numkeys:integer key:key... (where=LEFT|RIGHT) [COUNT count:integer]"),
    doc("rpoplpush", "list", "1.2.0", "O(N) where N is the length of the lists",
        "Pops the last element of a list and pushes it at the head of another, atomically.",
        "source:key destination:key"),
    // Sets.
    doc("sadd", "set", "1.0.0", "O(N) where N is the size of the set: hotkv copies a set to change it",
        "Adds members to a set, creating it if needed; returns how many were new.",
        "key:key member..."),
    doc("srem", "set", "1.0.0", "O(N) where N is the size of the set: hotkv copies a set to change it",
        "Removes members from a set, and the key with its last member.",
        "key:key member..."),
    doc("pfadd", "hyperloglog", "2.8.9", "O(1) to add every element.",
        "Adds the specified elements to the specified HyperLogLog.",
        "key:key [element...]"),
    doc("pfcount", "hyperloglog", "2.8.9", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
        "key:key..."),
    doc("pfmerge", "hyperloglog", "2.8.9", "O(N) to merge N HyperLogLogs, but with high constant times.",
        "Merge N different HyperLogLogs into a single one.",
        "destkey:key sourcekey:key..."),
    doc("sort", "generic", "1.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        "Sort the elements in a list, set or sorted set",
        "key:key [BY pattern:pattern@1] [LIMIT (offset_count=offset:integer count:integer)] [GET pattern:pattern@1^...] [order=ASC|DESC] [sorting=ALPHA] [STORE destination:key@2]"),
    doc("sort_ro", "generic", "7.0.0", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        "key:key [BY pattern:pattern@1] [LIMIT (offset_count=offset:integer count:integer)] [GET pattern:pattern@1^...] [order=ASC|DESC] [sorting=ALPHA]"),
    doc("smembers", "set", "1.0.0", "O(N) where N is the size of the set",
        "Returns every member of a set.",
        "key:key"),
    doc("sismember", "set", "1.0.0", "O(log N) where N is the size of the set",
        "Tells whether a set has a member.",
        "key:key member"),
    doc("smismember", "set", "6.2.0", "O(M log N) for M members asked about in a set of N",
        "Tells, for each of several members, whether a set has it.",
        "key:key member..."),
    doc("scard", "set", "1.0.0", "O(1)",
        "Returns the number of members of a set.",
        "key:key"),
    doc("spop", "set", "1.0.0", "O(N) where N is the size of the set: hotkv copies a set to change it",
        "Removes and returns a random member of a set, or count distinct random members.",
        "key:key [count:integer]"),
    doc("srandmember", "set", "1.0.0", "O(N) where N is the size of the set",
        "Returns random members of a set, distinct ones for a positive count.",
        "key:key [count:integer]"),
    doc("smove", "set", "1.0.0", "O(N) where N is the size of the sets",
        "Moves a member from one set to another, atomically.",
        "source:key destination:key member"),
    doc("sinter", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Returns the members every one of the sets has.",
        "key:key..."),
    doc("sinterstore", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Stores the intersection of sets in a key, replacing what it held.",
        "destination:key key:key..."),
    doc("sunion", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Returns the members any of the sets has.",
        "key:key..."),
    doc("sunionstore", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Stores the union of sets in a key, replacing what it held.",
        "destination:key key:key..."),
    doc("sdiff", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Returns the members of the first set that none of the others has.",
        "key:key..."),
    doc("sdiffstore", "set", "1.0.0", "O(N) where N is the total size of the sets",
        "Stores the difference of the first set and the others in a key, replacing what it held.",
        "destination:key key:key..."),
    doc("sscan", "set", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        "Iterates over the members of a set, optionally only those that match a pattern.",
        "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]"),
    // Sorted sets.
    doc("zadd", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Adds members with scores to a sorted set or updates their scores, under conditions; creates the set if needed.",
        "key:key [condition=NX|XX] [comparison=GT|LT] [change=CH] [increment=INCR] (score_member=score:double member)..."),
    doc("zincrby", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Adds to the score of a member of a sorted set, from 0 if it is missing.",
        "key:key increment:integer member"),
    doc("zrem", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes members from a sorted set, and the key with its last member.",
        "key:key member..."),
    doc("zcard", "sorted-set", "1.2.0", "O(1)",
        "Returns the number of members of a sorted set.",
        "key:key"),
    doc("zscore", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set",
        "Returns the score of a member of a sorted set.",
        "key:key member"),
    doc("zmscore", "sorted-set", "6.2.0", "O(N) where N is the size of the sorted set, for each member asked for",
        "Returns the scores of several members of a sorted set.",
        "key:key member..."),
    doc("zrank", "sorted-set", "2.0.0", "O(N) where N is the size of the sorted set",
        "Returns the position of a member in a sorted set, lowest score first.",
        "key:key member"),
    doc("zrevrank", "sorted-set", "2.0.0", "O(N) where N is the size of the sorted set",
        "Returns the position of a member in a sorted set, highest score first.",
        "key:key member"),
    doc("zcount", "sorted-set", "2.0.0", "O(N) where N is the size of the sorted set",
        "Counts the members of a sorted set with scores in a range.",
        "key:key min:double max:double"),
    doc("zlexcount", "sorted-set", "2.8.9", "O(N) where N is the size of the sorted set",
        "Counts the members of a sorted set between two members, for a set whose scores are all equal.",
        "key:key min max"),
    doc("zrange", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set in a range of positions, scores or members, in either direction, with their scores if asked.",
        "key:key start stop [sortby=BYSCORE|BYLEX] [REV] [LIMIT (offset_count=offset:integer count:integer)] [WITHSCORES]"),
    doc("zrangebyscore", "sorted-set", "1.0.5", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set with scores in a range, lowest first.",
        "key:key min:double max:double [WITHSCORES] [LIMIT (offset_count=offset:integer count:integer)]"),
    doc("zrevrangebyscore", "sorted-set", "2.2.0", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set with scores in a range, highest first.",
        "key:key max:double min:double [WITHSCORES] [LIMIT (offset_count=offset:integer count:integer)]"),
    doc("zrangebylex", "sorted-set", "2.8.9", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set between two members, for a set whose scores are all equal.",
        "key:key min max [LIMIT (offset_count=offset:integer count:integer)]"),
    doc("zrevrangebylex", "sorted-set", "2.8.9", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set between two members, last first, for a set whose scores are all equal.",
        "key:key max min [LIMIT (offset_count=offset:integer count:integer)]"),
    doc("zrevrange", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set",
        "Returns the members of a sorted set in a range of positions, highest score first.",
        "key:key start:integer stop:integer [WITHSCORES]"),
    doc("zrangestore", "sorted-set", "6.2.0", "O(N) where N is the size of the sorted set",
        "Stores a range of a sorted set (as ZRANGE selects it) in a key, replacing what it held.",
        "dst:key src:key min max [sortby=BYSCORE|BYLEX] [REV] [LIMIT (offset_count=offset:integer count:integer)]"),
    doc("bzpopmin", "sorted-set", "5.0.0", "O(N) where N is the size of the sorted set",
        "Pops the lowest-scored member of the first non-empty sorted set, waiting for one up to a timeout (0: forever).",
        "key:key... timeout:double"),
    doc("bzpopmax", "sorted-set", "5.0.0", "O(N) where N is the size of the sorted set",
        "Pops the highest-scored member of the first non-empty sorted set, waiting for one up to a timeout (0: forever).",
        "key:key... timeout:double"),
    doc("zmpop", "sorted-set", "7.0.0", "O(N) where N is the size of the sorted set popped from",
        "Pops up to count of the lowest- or highest-scored members of the first non-empty sorted set among several.",
        "numkeys:integer key:key... (where=MIN|MAX) [COUNT count:integer]"),
    doc("bzmpop", "sorted-set", "7.0.0", "O(N) where N is the size of the sorted set popped from",
        "ZMPOP that waits, up to a timeout (0: forever), for one of the sorted sets to have a member.",
        "timeout:double numkeys:integer key:key... (where=MIN|MAX) [COUNT count:integer]"),
    doc("zpopmin", "sorted-set", "5.0.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes and returns the members of a sorted set with the lowest scores.",
        "key:key [count:integer]"),
    doc("zpopmax", "sorted-set", "5.0.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes and returns the members of a sorted set with the highest scores.",
        "key:key [count:integer]"),
    doc("zremrangebyrank", "sorted-set", "2.0.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes the members of a sorted set in a range of positions.",
        "key:key start:integer stop:integer"),
    doc("zremrangebyscore", "sorted-set", "1.2.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes the members of a sorted set with scores in a range.",
        "key:key min:double max:double"),
    doc("zremrangebylex", "sorted-set", "2.8.9", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Removes the members of a sorted set between two members, for a set whose scores are all equal.",
        "key:key min max"),
    doc("zrandmember", "sorted-set", "6.2.0", "O(N) where N is the size of the sorted set",
        "Returns random members of a sorted set, distinct ones for a positive count, with their scores if asked.",
        "key:key [options=count:integer [WITHSCORES]]"),
    doc("zscan", "sorted-set", "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        "Iterates over the members and scores of a sorted set, optionally only members that match a pattern.",
        "key:key cursor:integer [MATCH pattern:pattern] [COUNT count:integer]"),
    doc("zunionstore", "sorted-set", "2.0.0", "O(N log N) where N is the total size of the inputs",
        "Stores the union of sorted sets (and sets, scored 1) in a key, scores weighted and summed, or their minimum or maximum.",
        "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE (aggregate=SUM|MIN|MAX)]"),
    doc("zinterstore", "sorted-set", "2.0.0", "O(N log N) where N is the total size of the inputs",
        "Stores the intersection of sorted sets (and sets, scored 1) in a key, scores weighted and summed, or their minimum or maximum.",
        "destination:key numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE (aggregate=SUM|MIN|MAX)]"),
    doc("zdiffstore", "sorted-set", "6.2.0", "O(N log N) where N is the total size of the inputs",
        "Stores the members of the first sorted set that none of the others has in a key, with their scores.",
        "destination:key numkeys:integer key:key..."),
    doc("zunion", "sorted-set", "6.2.0", "O(N log N) where N is the total size of the inputs",
        "Returns the union of sorted sets (and sets, scored 1), scores weighted and summed, or their minimum or maximum.",
        "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE (aggregate=SUM|MIN|MAX)] [WITHSCORES]"),
    doc("zinter", "sorted-set", "6.2.0", "O(N log N) where N is the total size of the inputs",
        "Returns the intersection of sorted sets (and sets, scored 1), scores weighted and summed, or their minimum or maximum.",
        "numkeys:integer key:key... [WEIGHTS weight:integer...] [AGGREGATE (aggregate=SUM|MIN|MAX)] [WITHSCORES]"),
    doc("zdiff", "sorted-set", "6.2.0", "O(N log N) where N is the total size of the inputs",
        "Returns the members of the first sorted set that none of the others has.",
        "numkeys:integer key:key... [WITHSCORES]"),
    doc("zintercard", "sorted-set", "7.0.0", "O(N log N) where N is the total size of the inputs",
        "Counts the members every one of the sorted sets has, stopping at a limit if given.",
        "numkeys:integer key:key... [LIMIT limit:integer]"),
    doc("xadd", "stream", "5.0.0", STREAM_WRITE_COST,
        "Appends a new entry to a stream",
        "key:key [NOMKSTREAM] [trim=(strategy=MAXLEN|MINID) [operator=(equal=\\=)|(approximately=\\~)] threshold [LIMIT count:integer]] (id_or_auto=(auto_id=\\*)|id) (field_value=field value)..."),
    doc("xlen", "stream", "5.0.0", STREAM_READ_COST,
        "Return the number of entries in a stream",
        "key:key"),
    doc("xrange", "stream", "5.0.0", STREAM_READ_COST,
        "Return a range of elements in a stream, with IDs matching the specified IDs interval",
        "key:key start end [COUNT count:integer]"),
    doc("xrevrange", "stream", "5.0.0", STREAM_READ_COST,
        "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        "key:key end start [COUNT count:integer]"),
    doc("xdel", "stream", "5.0.0", STREAM_WRITE_COST,
        "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
        "key:key id..."),
    doc("xtrim", "stream", "5.0.0", STREAM_WRITE_COST,
        "Trims the stream to (approximately if '~' is passed) a certain size",
        "key:key (trim=(strategy=MAXLEN|MINID) [operator=(equal=\\=)|(approximately=\\~)] threshold [LIMIT count:integer])"),
    doc("xread", "stream", "5.0.0", "O(N) for each stream mentioned, where N is the size of the stream (hotkv decodes it)",
        "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
        "[COUNT count:integer] [BLOCK milliseconds:integer] STREAMS (streams=key:key... id...)"),
    doc("xsetid", "stream", "5.0.0", STREAM_WRITE_COST,
        "An internal command for replicating stream values",
        "key:key last-id [ENTRIESADDED entries_added:integer] [MAXDELETEDID max_deleted_entry_id]"),
    doc("xreadgroup", "stream", "5.0.0", "O(N) for each stream mentioned, where N is the size of the stream: hotkv copies a stream to change it",
        "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
        "GROUP (group_consumer=group consumer) [COUNT count:integer] [BLOCK milliseconds:integer] [NOACK] STREAMS (streams=key:key... id...)"),
    doc("xack", "stream", "5.0.0", STREAM_WRITE_COST,
        "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        "key:key group id..."),
    doc("xpending", "stream", "5.0.0", STREAM_READ_COST,
        "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        "key:key group [filters=[IDLE min-idle-time:integer] start end count:integer [consumer]]"),
    doc("xclaim", "stream", "5.0.0", STREAM_WRITE_COST,
        "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        "key:key group consumer min-idle-time id... [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer] [FORCE] [JUSTID] [LASTID id]"),
    doc("xautoclaim", "stream", "6.2.0", STREAM_WRITE_COST,
        "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        "key:key group consumer min-idle-time start [COUNT count:integer] [JUSTID]"),
    doc("xgroup", "stream", "5.0.0", "Depends on subcommand.",
        "A container for consumer groups commands",
        ""),
    doc("xgroup|create", "stream", "5.0.0", STREAM_WRITE_COST,
        "Create a consumer group.",
        "key:key groupname (id=id|(new_id=\\$)) [MKSTREAM] [ENTRIESREAD entries_read:integer]"),
    doc("xgroup|setid", "stream", "5.0.0", STREAM_WRITE_COST,
        "Set a consumer group to an arbitrary last delivered ID value.",
        "key:key groupname (id=id|(new_id=\\$)) [ENTRIESREAD entries_read:integer]"),
    doc("xgroup|destroy", "stream", "5.0.0", STREAM_WRITE_COST,
        "Destroy a consumer group.",
        "key:key groupname"),
    doc("xgroup|createconsumer", "stream", "6.2.0", STREAM_WRITE_COST,
        "Create a consumer in a consumer group.",
        "key:key groupname consumername"),
    doc("xgroup|delconsumer", "stream", "5.0.0", STREAM_WRITE_COST,
        "Delete a consumer from a consumer group.",
        "key:key groupname consumername"),
    doc("xgroup|help", "stream", "5.0.0", "O(1)",
        "Show helpful text about the different subcommands",
        ""),
    doc("xinfo", "stream", "5.0.0", "Depends on subcommand.",
        "A container for stream introspection commands",
        ""),
    doc("xinfo|stream", "stream", "5.0.0", STREAM_READ_COST,
        "Get information about a stream",
        "key:key [FULL (full=[COUNT count:integer])]"),
    doc("xinfo|groups", "stream", "5.0.0", STREAM_READ_COST,
        "List the consumer groups of a stream",
        "key:key"),
    doc("xinfo|consumers", "stream", "5.0.0", STREAM_READ_COST,
        "List the consumers in a consumer group",
        "key:key groupname"),
    doc("xinfo|help", "stream", "5.0.0", "O(1)",
        "Show helpful text about the different subcommands",
        ""),
    doc("geoadd", "geo", "3.2.0", "O(N) where N is the size of the sorted set: hotkv copies a sorted set to change it",
        "Add one or more geospatial items in the geospatial index represented using a sorted set",
        "key:key [condition=NX|XX] [change=CH] (longitude_latitude_member=longitude:double latitude:double member)..."),
    doc("geodist", "geo", "3.2.0", "O(N) where N is the size of the sorted set",
        "Returns the distance between two members of a geospatial index",
        "key:key member1 member2 [unit=M|KM|FT|MI]"),
    doc("geohash", "geo", "3.2.0", "O(N) for each member requested, where N is the number of elements in the sorted set.",
        "Returns members of a geospatial index as standard geohash strings",
        "key:key member..."),
    doc("geopos", "geo", "3.2.0", "O(N) for each member requested, where N is the number of elements in the sorted set.",
        "Returns longitude and latitude of members of a geospatial index",
        "key:key member..."),
    doc("georadius", "geo", "3.2.0", GEO_SEARCH_COST,
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        "key:key longitude:double latitude:double radius:double (unit=M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=COUNT count:integer [ANY]] [order=ASC|DESC] [STORE key:key] [STOREDIST key:key]"),
    doc("georadius_ro", "geo", "3.2.10", GEO_SEARCH_COST,
        "A read-only variant for GEORADIUS",
        "key:key longitude:double latitude:double radius:double (unit=M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=COUNT count:integer [ANY]] [order=ASC|DESC]"),
    doc("georadiusbymember", "geo", "3.2.0", GEO_SEARCH_COST,
        "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        "key:key member radius:double (unit=M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=COUNT count:integer [ANY]] [order=ASC|DESC] [STORE key:key] [STOREDIST key:key]"),
    doc("georadiusbymember_ro", "geo", "3.2.10", GEO_SEARCH_COST,
        "A read-only variant for GEORADIUSBYMEMBER",
        "key:key member radius:double (unit=M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count=COUNT count:integer [ANY]] [order=ASC|DESC]"),
    doc("geosearch", "geo", "6.2.0", GEO_SEARCH_COST,
        "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
        "key:key (from=FROMMEMBER member|FROMLONLAT (longitude_latitude=longitude:double latitude:double)) (by=(circle=BYRADIUS radius:double (unit=M|KM|FT|MI))|(box=BYBOX width:double height:double (unit=M|KM|FT|MI))) [order=ASC|DESC] [count=COUNT count:integer [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]"),
    doc("geosearchstore", "geo", "6.2.0", GEO_SEARCH_COST,
        "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        "destination:key source:key (from=FROMMEMBER member|FROMLONLAT (longitude_latitude=longitude:double latitude:double)) (by=(circle=BYRADIUS radius:double (unit=M|KM|FT|MI))|(box=BYBOX width:double height:double (unit=M|KM|FT|MI))) [order=ASC|DESC] [count=COUNT count:integer [ANY]] [STOREDIST]"),
    doc("sintercard", "set", "7.0.0", "O(N) where N is the total size of the sets",
        "Counts the members every one of the sets has, stopping at a limit if given.",
        "numkeys:integer key:key... [LIMIT limit:integer]"),
    doc("getbit", "bitmap", "2.2.0", "O(1)",
        "Returns the bit at an offset of a string value.",
        "key:key offset:integer"),
    doc("setbit", "bitmap", "2.2.0", "O(1)",
        "Sets or clears the bit at an offset of a string value, growing it as needed.",
        "key:key offset:integer value:integer"),
    doc("bitcount", "bitmap", "2.6.0", "O(N)",
        "Counts the set bits of a string value, or of a range of its bytes or bits.",
        "key:key [index=start:integer end:integer [index_unit=BYTE|BIT]]"),
    doc("bitpos", "bitmap", "2.8.7", "O(N)",
        "Finds the first set or clear bit of a string value, or of a range of it.",
        "key:key bit:integer [index=start:integer [end_index=end:integer [index_unit=BYTE|BIT]]]"),
    doc("bitop", "bitmap", "2.6.0", "O(N)",
        "Combines string values bit by bit (AND, OR, XOR, NOT) into a destination key.",
        "operation destkey:key key:key..."),
    doc("bitfield", "bitmap", "3.2.0", "O(1) for each subcommand specified",
        "Reads, writes and increments integers of any width at any bit offset of a string.",
        "key:key [(operation=GET (encoding_offset=encoding offset:integer)|(write=[OVERFLOW (wrap_sat_fail=WRAP|SAT|FAIL)] (write_operation=SET (encoding_offset_value=encoding offset:integer value:integer)|INCRBY (encoding_offset_increment=encoding offset:integer increment:integer))))...]"),
    doc("bitfield_ro", "bitmap", "6.0.0", "O(1) for each subcommand specified",
        "Reads integers of any width at any bit offset of a string.",
        "key:key [GET (encoding_offset=encoding offset:integer)^...]"),
    doc("lcs", "string", "7.0.0", "O(N*M) where N and M are the lengths of the two strings",
        "Finds the longest common subsequence of two string values.",
        "key1:key key2:key [LEN] [IDX] [MINMATCHLEN len:integer] [WITHMATCHLEN]"),
    // Keyspace.
    doc("del", "generic", "1.0.0", "O(N) where N is the number of keys",
        "Deletes keys.",
        "key:key..."),
    doc("unlink", "generic", "4.0.0", "O(1) for each key; memory is reclaimed afterwards",
        "Deletes keys, reclaiming their memory in the background.",
        "key:key..."),
    doc("exists", "generic", "1.0.0", "O(N) where N is the number of keys",
        "Counts how many of the keys exist; a key named twice counts twice.",
        "key:key..."),
    doc("touch", "generic", "3.2.1", "O(N) where N is the number of keys",
        "Marks keys as just accessed and counts how many exist.",
        "key:key..."),
    doc("type", "generic", "1.0.0", "O(1)",
        "Returns the type of a key's value, or none.",
        "key:key"),
    doc("rename", "generic", "1.0.0", "O(1)",
        "Renames a key, replacing any key of the new name.",
        "key:key newkey:key"),
    doc("renamenx", "generic", "1.0.0", "O(1)",
        "Renames a key only if the new name is free.",
        "key:key newkey:key"),
    doc("randomkey", "generic", "1.0.0", "O(1)",
        "Returns a key chosen at random.",
        ""),
    doc("keys", "generic", "1.0.0", "O(N) where N is the number of keys in the database",
        "Returns every key that matches a glob pattern.",
        "pattern:pattern"),
    doc("scan", "generic", "2.8.0", "O(1) per call, O(N) for a complete iteration",
        "Iterates over the keys with a cursor; every key present for the whole iteration is returned.",
        "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type]"),
    doc("dbsize", "server", "1.0.0", "O(1)",
        "Returns the number of keys.",
        ""),
    doc("flushdb", "server", "1.0.0", "O(N) where N is the number of keys",
        "Deletes every key of the database.",
        "[async=ASYNC|SYNC]"),
    doc("flushall", "server", "1.0.0", "O(N) where N is the number of keys",
        "Deletes every key of every database.",
        "[async=ASYNC|SYNC]"),
    doc("expire", "generic", "1.0.0", "O(1)",
        "Sets a key's time to live in seconds.",
        "key:key seconds:integer [condition=NX|XX|GT|LT]"),
    doc("pexpire", "generic", "2.6.0", "O(1)",
        "Sets a key's time to live in milliseconds.",
        "key:key milliseconds:integer [condition=NX|XX|GT|LT]"),
    doc("expireat", "generic", "1.2.0", "O(1)",
        "Sets the Unix time, in seconds, at which a key expires.",
        "key:key unix-time-seconds:unix-time [condition=NX|XX|GT|LT]"),
    doc("pexpireat", "generic", "2.6.0", "O(1)",
        "Sets the Unix time, in milliseconds, at which a key expires.",
        "key:key unix-time-milliseconds:unix-time [condition=NX|XX|GT|LT]"),
    doc("ttl", "generic", "1.0.0", "O(1)",
        "Returns a key's time to live in seconds.",
        "key:key"),
    doc("pttl", "generic", "2.6.0", "O(1)",
        "Returns a key's time to live in milliseconds.",
        "key:key"),
    doc("expiretime", "generic", "7.0.0", "O(1)",
        "Returns the Unix time, in seconds, at which a key expires.",
        "key:key"),
    doc("pexpiretime", "generic", "7.0.0", "O(1)",
        "Returns the Unix time, in milliseconds, at which a key expires.",
        "key:key"),
    doc("persist", "generic", "2.2.0", "O(1)",
        "Removes a key's expiry.",
        "key:key"),
    doc("object", "generic", "2.2.3", "Depends on subcommand.",
        "A container for commands about how values are kept.",
        ""),
    doc("object|help", "generic", "6.2.0", "O(1)",
        "Lists the OBJECT subcommands.",
        ""),
    doc("object|encoding", "generic", "2.2.3", "O(1)",
        "Returns how a key's value is encoded.",
        "key:key"),
    doc("object|refcount", "generic", "2.2.3", "O(1)",
        "Returns the reference count of a key's value.",
        "key:key"),
    doc("object|freq", "generic", "4.0.0", "O(1)",
        "Returns a key's access frequency counter, under an LFU maxmemory policy.",
        "key:key"),
    doc("object|idletime", "generic", "2.2.3", "O(1)",
        "Returns the seconds since a key was last read or written.",
        "key:key"),
    doc("copy", "generic", "6.2.0", "O(N) where N is the size of the value",
        "Copies a key's value to another key.",
        "source:key destination:key [DB destination-db:integer] [REPLACE]"),
    doc("move", "generic", "1.0.0", "O(1)",
        "Moves a key to another database.",
        "key:key db:integer"),
    doc("dump", "generic", "2.6.0", "O(1) to find the key, O(N) to serialize a value of N bytes",
        "Returns a key's value serialized in Redis's format, for RESTORE here or in Redis.",
        "key:key"),
    doc("restore", "generic", "2.6.0", "O(1) to create the key, O(N) to read a value of N bytes",
        "Creates a key from a value DUMP serialized, here or in Redis.",
        "key:key ttl:integer serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds:integer] [FREQ frequency:integer]"),
    doc("migrate", "generic", "2.6.0", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        "Atomically transfer a key from a Redis instance to another one.",
        "host port:integer (key_or_empty_string=key:key|(empty_string=\"\")) destination-db:integer timeout:integer [COPY] [REPLACE] [authentication=[AUTH password]|[AUTH2 (username_password=username password)]] [KEYS key:key@1...]"),
    // Transactions.
    doc("multi", "transactions", "1.2.0", "O(1)",
        "Starts a transaction: the commands after it are queued until EXEC.",
        ""),
    doc("exec", "transactions", "1.2.0", "Depends on the commands in the transaction",
        "Runs the queued commands of a transaction as one step.",
        ""),
    doc("discard", "transactions", "2.0.0", "O(N) where N is the number of queued commands",
        "Drops the queued commands of a transaction.",
        ""),
    doc("watch", "transactions", "2.2.0", "O(1) for every key",
        "Makes the next EXEC fail if any of the keys changes before it.",
        "key:key..."),
    doc("unwatch", "transactions", "2.2.0", "O(1)",
        "Forgets the keys WATCH named.",
        ""),
    // Server.
    doc("command", "server", "2.8.13", "O(N) where N is the number of commands",
        "Describes every command.",
        ""),
    doc("command|count", "server", "2.8.13", "O(1)",
        "Returns the number of commands.",
        ""),
    doc("command|docs", "server", "7.0.0", "O(N) where N is the number of commands described",
        "Returns the documentation of the commands named, or of every command.",
        "[command-name...]"),
    doc("command|info", "server", "2.8.13", "O(N) where N is the number of commands described",
        "Describes the commands named, or every command.",
        "[command-name...]"),
    doc("command|list", "server", "7.0.0", "O(N) where N is the number of commands",
        "Lists the command names, optionally those of an ACL category or matching a pattern.",
        "[FILTERBY (filterby=MODULE module-name|ACLCAT category|PATTERN pattern:pattern)]"),
    doc("command|getkeys", "server", "2.8.13", "O(N) where N is the number of arguments",
        "Returns the keys a full command names.",
        ""),
    doc("command|getkeysandflags", "server", "7.0.0", "O(N) where N is the number of arguments",
        "Returns the keys a full command names, with what it does to each.",
        ""),
    doc("command|help", "server", "5.0.0", "O(1)",
        "Lists the COMMAND subcommands.",
        ""),
    doc("config", "server", "2.0.0", "Depends on subcommand.",
        "A container for commands about the configuration.",
        ""),
    doc("config|get", "server", "2.0.0", "O(N) where N is the number of parameters",
        "Returns the values of configuration parameters, named or by glob pattern.",
        "(parameter=parameter)..."),
    doc("config|set", "server", "2.0.0", "O(N) where N is the number of parameters",
        "Sets configuration parameters, all or none.",
        "(parameter_value=parameter value)..."),
    doc("config|resetstat", "server", "2.0.0", "O(1)",
        "Resets the statistics INFO reports.",
        ""),
    doc("config|rewrite", "server", "2.8.0", "O(1)",
        "Writes the running configuration to the configuration file.",
        ""),
    doc("config|help", "server", "5.0.0", "O(1)",
        "Lists the CONFIG subcommands.",
        ""),
    doc("info", "server", "1.0.0", "O(1)",
        "Returns information and statistics about the server, by section; hotkv adds a hotring section.",
        "[section...]"),
    doc("time", "server", "2.6.0", "O(1)",
        "Returns the server's time as seconds and microseconds.",
        ""),
    doc("role", "server", "2.8.12", "O(1)",
        "Returns the replication role: hotkv is always a master.",
        ""),
    doc("memory", "server", "4.0.0", "Depends on subcommand.",
        "A container for commands about memory use.",
        ""),
    doc("memory|doctor", "server", "4.0.0", "O(1)",
        "Reports memory problems and what to do about them.",
        ""),
    doc("memory|malloc-stats", "server", "4.0.0", "Depends on how much memory is allocated",
        "Returns the allocator's statistics.",
        ""),
    doc("memory|purge", "server", "4.0.0", "Depends on how much memory is allocated",
        "Asks the allocator to return free memory to the system.",
        ""),
    doc("memory|stats", "server", "4.0.0", "O(1)",
        "Returns how the server's memory is used.",
        ""),
    doc("memory|help", "server", "4.0.0", "O(1)",
        "Lists the MEMORY subcommands.",
        ""),
    doc("memory|usage", "server", "4.0.0", "O(1)",
        "Returns the bytes a key and its value take.",
        "key:key [SAMPLES count:integer]"),
    doc("swapdb", "server", "4.0.0", "O(1)",
        "Swaps two databases; with database 0 only, swaps it with itself.",
        "index1:integer index2:integer"),
    doc("shutdown", "server", "1.0.0", "O(N) where N is the number of keys written when saving",
        "Stops the server after answering what is in flight, saving first if asked.",
        "[nosave_save=NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"),
    doc("slowlog", "server", "2.2.12", "Depends on subcommand.",
        "A container for commands about the slow log.",
        ""),
    doc("slowlog|get", "server", "2.2.12", "O(N) where N is the number of entries returned",
        "Returns the newest entries of the slow log.",
        "[count:integer]"),
    doc("slowlog|len", "server", "2.2.12", "O(1)",
        "Returns the number of entries in the slow log.",
        ""),
    doc("slowlog|reset", "server", "2.2.12", "O(N) where N is the number of entries",
        "Empties the slow log.",
        ""),
    doc("slowlog|help", "server", "6.2.0", "O(1)",
        "Lists the SLOWLOG subcommands.",
        ""),
    doc("latency", "server", "2.8.13", "Depends on subcommand.",
        "A container for commands about latency events.",
        ""),
    doc("latency|latest", "server", "2.8.13", "O(1)",
        "Returns the latest sample of every latency event.",
        ""),
    doc("latency|history", "server", "2.8.13", "O(1)",
        "Returns the samples of one latency event.",
        "event"),
    doc("latency|reset", "server", "2.8.13", "O(1)",
        "Forgets the samples of the events named, or of every event.",
        "[event...]"),
    doc("latency|graph", "server", "2.8.13", "O(1)",
        "Draws the samples of one latency event as an ASCII graph.",
        "event"),
    doc("latency|doctor", "server", "2.8.13", "O(1)",
        "Explains the latency events in words.",
        ""),
    doc("latency|histogram", "server", "7.0.0", "O(N) where N is the number of commands",
        "Returns the latency histograms of the commands named, or of every command called.",
        "[command...]"),
    doc("latency|help", "server", "2.8.13", "O(1)",
        "Lists the LATENCY subcommands.",
        ""),
    doc("save", "server", "1.0.0", "O(N) where N is the number of keys",
        "Makes the data durable before replying (the lsm engine flushes its memtable).",
        ""),
    doc("bgsave", "server", "1.0.0", "O(1)",
        "Makes the data durable in the background.",
        "[SCHEDULE]"),
    doc("bgrewriteaof", "server", "1.0.0", "O(1)",
        "Makes the log (the lsm engine's append-only file) hold every write so far.",
        ""),
    doc("lastsave", "server", "1.0.0", "O(1)",
        "Returns the Unix time of the last successful save.",
        ""),
    doc("debug", "server", "1.0.0", "Depends on subcommand.",
        "Commands for testing and debugging the server.",
        ""),
    doc("module", "server", "4.0.0", "Depends on subcommand.",
        "A container for module commands; hotkv loads no modules.",
        ""),
    doc("module|help", "server", "5.0.0", "O(1)",
        "Lists the MODULE subcommands.",
        ""),
    doc("module|list", "server", "4.0.0", "O(N) where N is the number of loaded modules.",
        "Lists the modules loaded: none in hotkv.",
        ""),
    doc("module|load", "server", "4.0.0", "O(1)",
        "Loads a module; refused, as Redis refuses it unless enable-module-command allows it.",
        "path [arg...]"),
    doc("module|loadex", "server", "7.0.0", "O(1)",
        "Loads a module with configurations; refused, as MODULE LOAD is.",
        "path [CONFIG (configs=name value)^...] [ARGS (args=arg)...]"),
    doc("module|unload", "server", "4.0.0", "O(1)",
        "Unloads a module; refused, as MODULE LOAD is.",
        "name"),
    doc("replicaof", "server", "5.0.0", "O(1)",
        "Makes the server a replica of another, or a master (NO ONE): hotkv is always a master.",
        "(args=(host-port=host port:integer)|(no-one=NO ONE))"),
    doc("slaveof", "server", "1.0.0", "O(1)",
        "Makes the server a replica of another, or a master (NO ONE): hotkv is always a master.",
        "(args=(host-port=host port:integer)|(no-one=NO ONE))"),
    doc("lolwut", "server", "5.0.0", "O(1)",
        "Displays the version line Redis shows under its computer art; hotkv draws none.",
        "[VERSION version:integer]"),
    doc("wait", "generic", "3.0.0", "O(1)",
        "Waits for replicas to acknowledge the writes before it; hotkv has no replicas.",
        "numreplicas:integer timeout:integer"),
    doc("monitor", "server", "1.0.0", "O(N) where N is the number of commands sent while monitoring",
        "Streams every command the server runs.",
        ""),
    doc("hotkeys", "server", "7.0.0", "O(N) where N is the number of rings in the index",
        "Returns the keys the index finds hottest, with each one's share of the sampled accesses.",
        "[COUNT count:integer]"),
    // Scripting.
    doc("eval", "scripting", "2.6.0", "Depends on the script that is executed.",
        "Runs a Lua script.",
        "script numkeys:integer [key:key...] [arg...]"),
    doc("evalsha", "scripting", "2.6.0", "Depends on the script that is executed.",
        "Runs a Lua script loaded before, named by its SHA-1.",
        "sha1 numkeys:integer [key:key...] [arg...]"),
    doc("eval_ro", "scripting", "7.0.0", "Depends on the script that is executed.",
        "Runs a Lua script that may only read.",
        "script numkeys:integer [key:key...] [arg...]"),
    doc("evalsha_ro", "scripting", "7.0.0", "Depends on the script that is executed.",
        "Runs a Lua script loaded before, named by its SHA-1, that may only read.",
        "sha1 numkeys:integer [key:key...] [arg...]"),
    doc("script", "scripting", "2.6.0", "Depends on subcommand.",
        "A container for commands about the scripts kept.",
        ""),
    doc("script|load", "scripting", "2.6.0", "O(N) with N being the length in bytes of the script body.",
        "Compiles a script and keeps it, answering its SHA-1.",
        "script"),
    doc("script|exists", "scripting", "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        "Tells, for each SHA-1, whether that script is kept.",
        "sha1..."),
    doc("script|flush", "scripting", "2.6.0", "O(N) with N being the number of scripts in cache",
        "Forgets every script kept.",
        "[async=ASYNC|SYNC]"),
    doc("script|kill", "scripting", "2.6.0", "O(1)",
        "Stops the script running now.",
        ""),
    doc("script|debug", "scripting", "3.2.0", "O(1)",
        "Sets the debug mode of the scripts run next (hotkv: NO only).",
        "(mode=YES|SYNC|NO)"),
    doc("script|help", "scripting", "5.0.0", "O(1)",
        "Lists the SCRIPT subcommands.",
        ""),
    // Function libraries (see `function.rs`).
    doc("fcall", "scripting", "7.0.0", "Depends on the function that is executed.",
        "Runs a function of a library.",
        "function numkeys:integer [key:key...] [arg...]"),
    doc("fcall_ro", "scripting", "7.0.0", "Depends on the function that is executed.",
        "Runs a function of a library that may only read.",
        "function numkeys:integer [key:key...] [arg...]"),
    doc("function", "scripting", "7.0.0", "Depends on subcommand.",
        "A container for commands about function libraries.",
        ""),
    doc("function|load", "scripting", "7.0.0", "O(1) (considering compilation time is redundant)",
        "Loads a library of functions.",
        "[REPLACE] function-code"),
    doc("function|delete", "scripting", "7.0.0", "O(1)",
        "Deletes a library and its functions.",
        "library-name"),
    doc("function|list", "scripting", "7.0.0", "O(N) where N is the number of functions",
        "Lists the libraries and their functions.",
        "[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    doc("function|stats", "scripting", "7.0.0", "O(1)",
        "Returns the function running now, if any, and the engines.",
        ""),
    doc("function|kill", "scripting", "7.0.0", "O(1)",
        "Stops the function running now.",
        ""),
    doc("function|flush", "scripting", "7.0.0", "O(N) where N is the number of functions deleted",
        "Deletes every library.",
        "[async=ASYNC|SYNC]"),
    doc("function|dump", "scripting", "7.0.0", "O(N) where N is the number of functions",
        "Returns every library as one serialized payload.",
        ""),
    doc("function|restore", "scripting", "7.0.0", "O(N) where N is the number of functions on the payload",
        "Loads the libraries of a FUNCTION DUMP payload.",
        "serialized-value [policy=FLUSH|APPEND|REPLACE]"),
    doc("function|help", "scripting", "7.0.0", "O(1)",
        "Lists the FUNCTION subcommands.",
        ""),
    // Cluster: Not a cluster node: hotkv answers that cluster support is disabled.
    doc("asking", "cluster", "3.0.0", "O(1)",
        "Sent by cluster clients after an -ASK redirect",
        ""),
    doc("readonly", "cluster", "3.0.0", "O(1)",
        "Enables read queries for a connection to a cluster replica node",
        ""),
    doc("readwrite", "cluster", "3.0.0", "O(1)",
        "Disables read queries for a connection to a cluster replica node",
        ""),
    doc("cluster", "cluster", "3.0.0", "Depends on subcommand.",
        "A container for cluster commands; hotkv is not a cluster node.",
        ""),
    doc("cluster|addslots", "cluster", "3.0.0", "O(N) where N is the number of slots",
        "Assigns hash slots to this node.",
        "slot:integer..."),
    doc("cluster|addslotsrange", "cluster", "7.0.0", "O(N) where N is the number of slots",
        "Assigns ranges of hash slots to this node.",
        "(start-slot_end-slot=start-slot:integer end-slot:integer)..."),
    doc("cluster|bumpepoch", "cluster", "3.0.0", "O(1)",
        "Advances the node's configuration epoch.",
        ""),
    doc("cluster|count-failure-reports", "cluster", "3.0.0", "O(N) where N is the number of failure reports",
        "Counts the failure reports about a node.",
        "node-id"),
    doc("cluster|countkeysinslot", "cluster", "3.0.0", "O(1)",
        "Counts the keys in a hash slot.",
        "slot:integer"),
    doc("cluster|delslots", "cluster", "3.0.0", "O(N) where N is the number of slots",
        "Unassigns hash slots from this node.",
        "slot:integer..."),
    doc("cluster|delslotsrange", "cluster", "7.0.0", "O(N) where N is the number of slots",
        "Unassigns ranges of hash slots from this node.",
        "(start-slot_end-slot=start-slot:integer end-slot:integer)..."),
    doc("cluster|failover", "cluster", "3.0.0", "O(1)",
        "Makes this replica take over from its primary.",
        "[options=FORCE|TAKEOVER]"),
    doc("cluster|flushslots", "cluster", "3.0.0", "O(1)",
        "Unassigns every hash slot of this node.",
        ""),
    doc("cluster|forget", "cluster", "3.0.0", "O(1)",
        "Removes a node from this node's table.",
        "node-id"),
    doc("cluster|getkeysinslot", "cluster", "3.0.0", "O(N) where N is the number of keys returned",
        "Returns key names in a hash slot.",
        "slot:integer count:integer"),
    doc("cluster|help", "cluster", "5.0.0", "O(1)",
        "Lists the CLUSTER subcommands.",
        ""),
    doc("cluster|info", "cluster", "3.0.0", "O(1)",
        "Describes the cluster's state.",
        ""),
    doc("cluster|keyslot", "cluster", "3.0.0", "O(N) where N is the number of bytes in the key",
        "Returns the hash slot of a key name.",
        "key"),
    doc("cluster|links", "cluster", "7.0.0", "O(N) where N is the number of cluster links",
        "Lists the links to other nodes.",
        ""),
    doc("cluster|meet", "cluster", "3.0.0", "O(1)",
        "Joins this node to another node's cluster.",
        "ip port:integer [cluster_bus_port:integer]"),
    doc("cluster|myid", "cluster", "3.0.0", "O(1)",
        "Returns this node's ID.",
        ""),
    doc("cluster|nodes", "cluster", "3.0.0", "O(N) where N is the number of nodes",
        "Describes every node of the cluster.",
        ""),
    doc("cluster|replicas", "cluster", "5.0.0", "O(N) where N is the number of replicas",
        "Lists the replicas of a primary node.",
        "node-id"),
    doc("cluster|replicate", "cluster", "3.0.0", "O(1)",
        "Makes this node a replica of another.",
        "node-id"),
    doc("cluster|reset", "cluster", "3.0.0", "O(N) where N is the number of known nodes",
        "Resets this node's cluster state.",
        "[hard_soft=HARD|SOFT]"),
    doc("cluster|saveconfig", "cluster", "3.0.0", "O(1)",
        "Writes the cluster configuration to disk.",
        ""),
    doc("cluster|set-config-epoch", "cluster", "3.0.0", "O(1)",
        "Sets a new node's configuration epoch.",
        "config-epoch:integer"),
    doc("cluster|setslot", "cluster", "3.0.0", "O(1)",
        "Changes the state of a hash slot.",
        "slot:integer (subcommand=IMPORTING node-id|MIGRATING node-id|NODE node-id|STABLE)"),
    doc("cluster|shards", "cluster", "7.0.0", "O(N) where N is the number of shards",
        "Describes the cluster's shards.",
        ""),
    doc("cluster|slaves", "cluster", "3.0.0", "O(N) where N is the number of replicas",
        "Lists the replicas of a primary node.",
        "node-id"),
    doc("cluster|slots", "cluster", "3.0.0", "O(N) where N is the number of slots",
        "Maps hash slots to nodes.",
        ""),
    // Pub/sub.
    doc("subscribe", "pubsub", "2.0.0", "O(N) where N is the number of channels",
        "Listens for messages published to channels.",
        "channel..."),
    doc("unsubscribe", "pubsub", "2.0.0", "O(N) where N is the number of channels",
        "Stops listening to channels, or to every channel.",
        "[channel...]"),
    doc("psubscribe", "pubsub", "2.0.0", "O(N) where N is the number of patterns",
        "Listens for messages published to channels that match patterns.",
        "(pattern=pattern:pattern)..."),
    doc("punsubscribe", "pubsub", "2.0.0", "O(N) where N is the number of patterns",
        "Stops listening to patterns, or to every pattern.",
        "[pattern:pattern...]"),
    doc("ssubscribe", "pubsub", "7.0.0", "O(N) where N is the number of shard channels",
        "Listens for messages published to shard channels.",
        "shardchannel..."),
    doc("sunsubscribe", "pubsub", "7.0.0", "O(N) where N is the number of shard channels",
        "Stops listening to shard channels, or to every shard channel.",
        "[shardchannel...]"),
    doc("publish", "pubsub", "2.0.0", "O(N+M) where N is the number of subscribers and M of patterns",
        "Sends a message to a channel and returns how many clients received it.",
        "channel message"),
    doc("spublish", "pubsub", "7.0.0", "O(N) where N is the number of subscribers",
        "Sends a message to a shard channel and returns how many clients received it.",
        "shardchannel message"),
    doc("pubsub", "pubsub", "2.8.0", "Depends on subcommand.",
        "A container for commands about channels and subscribers.",
        ""),
    doc("pubsub|channels", "pubsub", "2.8.0", "O(N) where N is the number of active channels",
        "Lists the channels with subscribers, optionally those matching a pattern.",
        "[pattern:pattern]"),
    doc("pubsub|numsub", "pubsub", "2.8.0", "O(N) where N is the number of channels named",
        "Returns the number of subscribers of each channel named.",
        "[channel...]"),
    doc("pubsub|numpat", "pubsub", "2.8.0", "O(1)",
        "Returns the number of patterns subscribed to.",
        ""),
    doc("pubsub|shardchannels", "pubsub", "7.0.0", "O(N) where N is the number of active shard channels",
        "Lists the shard channels with subscribers, optionally those matching a pattern.",
        "[pattern:pattern]"),
    doc("pubsub|shardnumsub", "pubsub", "7.0.0", "O(N) where N is the number of shard channels named",
        "Returns the number of subscribers of each shard channel named.",
        "[shardchannel...]"),
    doc("pubsub|help", "pubsub", "6.2.0", "O(1)",
        "Lists the PUBSUB subcommands.",
        ""),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::TABLE;

    /// Every command and subcommand the server runs, by its docs name, with its arity
    /// and the words of its name.
    fn every_command() -> Vec<(String, i32, usize)> {
        let mut all = Vec::new();
        for c in TABLE {
            all.push((c.name.to_string(), c.arity, 1));
            for s in subcommands_of(c.name) {
                all.push((full_name(c.name, s), s.arity, 2));
            }
        }
        all
    }

    #[test]
    fn every_command_has_docs_and_every_doc_a_command() {
        let commands = every_command();
        for (name, _, _) in &commands {
            assert_eq!(DOCS.iter().filter(|d| d.name == name).count(), 1, "{name}");
        }
        for d in DOCS {
            assert!(
                commands.iter().any(|(n, _, _)| n == d.name),
                "docs of no command: {}",
                d.name
            );
            assert!(
                !d.summary.is_empty() && !d.complexity.is_empty(),
                "{}",
                d.name
            );
        }
        for n in NOTES {
            assert!(DOCS.iter().any(|d| d.name == n.name), "{}", n.name);
        }
    }

    #[test]
    fn groups_are_redis_groups() {
        const GROUPS: &[&str] = &[
            "generic",
            "string",
            "list",
            "set",
            "sorted-set",
            "hash",
            "pubsub",
            "transactions",
            "connection",
            "server",
            "scripting",
            "hyperloglog",
            "cluster",
            "sentinel",
            "geo",
            "stream",
            "bitmap",
        ];
        for d in DOCS {
            assert!(GROUPS.contains(&d.group), "{}: {}", d.name, d.group);
            let parts: Vec<_> = d.since.split('.').collect();
            assert!(
                parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
                "{}",
                d.name
            );
        }
    }

    /// The fewest words the arguments can take, and the most (None: no bound).
    fn words(args: &[Arg]) -> (usize, Option<usize>) {
        args.iter().fold((0, Some(0)), |(lo, hi), a| {
            let (a_lo, a_hi) = words_of(a);
            (lo + a_lo, hi.zip(a_hi).map(|(x, y)| x + y))
        })
    }

    fn words_of(arg: &Arg) -> (usize, Option<usize>) {
        let token = usize::from(arg.token.is_some() && arg.kind != Kind::PureToken);
        let (lo, hi) = match arg.kind {
            Kind::OneOf => {
                let each: Vec<_> = arg.children.iter().map(words_of).collect();
                let lo = each.iter().map(|w| w.0).min().unwrap_or(0);
                let hi = each
                    .iter()
                    .map(|w| w.1)
                    .try_fold(0, |m, h| h.map(|h| m.max(h)));
                (lo, hi)
            }
            Kind::Block => words(&arg.children),
            _ => (1, Some(1)),
        };
        let lo = if arg.optional { 0 } else { lo + token };
        let hi = match arg.repeat {
            Repeat::Once => hi.map(|h| h + token),
            Repeat::Multiple | Repeat::MultipleToken => None,
        };
        (lo, hi)
    }

    /// The arguments each line describes are those the command's arity allows: as
    /// few as it needs, and no more when its arity is fixed. The exceptions are
    /// Redis's own documentation, which these lines match.
    #[test]
    fn argument_lines_agree_with_arities() {
        // Described with fewer words than they need: GETKEYS's command and DEBUG's
        // subcommands are not described at all, and CLIENT KILL's filters are each
        // optional. Or with more than they need: PFMERGE's sources and GEOHASH's and
        // GEOPOS's members, which Redis 7.0's docs do not mark optional though its
        // arity does.
        const UNDERSTATED: &[&str] = &[
            "command|getkeys",
            "command|getkeysandflags",
            "client|kill",
            "debug",
            "pfmerge",
            "geohash",
            "geopos",
        ];
        let mut wrong = Vec::new();
        for (name, arity, name_words) in every_command() {
            if !subcommands_of(&name).is_empty() {
                // A container: its subcommands are described instead.
                continue;
            }
            let args =
                arg_syntax::parse(find(&name).arguments).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (lo, hi) = words(&args);
            let (lo, hi) = (lo + name_words, hi.map(|h| h + name_words));
            let agrees = if arity > 0 {
                (lo, hi) == (arity as usize, Some(arity as usize))
            } else {
                lo == (-arity) as usize
            };
            if agrees == UNDERSTATED.contains(&name.as_str()) {
                wrong.push(format!("{name}: {lo} to {hi:?} words, arity {arity}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn key_arguments_point_at_key_specs() {
        for (name, _, _) in every_command() {
            let specs = key_specs_of(&name).len();
            let args = arg_syntax::parse(find(&name).arguments).unwrap();
            let mut keys = 0;
            // Panics on a key argument of a command without key specs.
            let _ = args.iter().map(|a| arg_frame(a, specs, &mut keys)).count();
            // Shard channels have key specs (for cluster routing) but are no keys.
            let real_keys = key_specs_of(&name).iter().any(|s| !s.names_channels());
            assert_eq!(keys > 0, real_keys, "{name}");
        }
    }
}
