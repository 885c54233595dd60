//! SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH and
//! PUBSUB (see [`crate::pubsub`]). Each (un)subscription is confirmed by its own
//! message, as in Redis; in RESP2 a subscribed client may then run only these and
//! PING, QUIT and RESET (`execute` refuses the rest).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use resp::Frame;

use super::{int, reply, upper, Action, Ctx, Reply, Session};
use crate::pubsub::Kind;

/// What a session is subscribed to, by kind.
#[derive(Default)]
pub struct Subscriptions([BTreeSet<Vec<u8>>; 3]);

impl Subscriptions {
    /// Channels, patterns and shard channels together.
    pub fn len(&self) -> usize {
        self.0.iter().map(BTreeSet::len).sum()
    }

    fn of(&self, kind: Kind) -> &BTreeSet<Vec<u8>> {
        &self.0[kind.index()]
    }

    fn of_mut(&mut self, kind: Kind) -> &mut BTreeSet<Vec<u8>> {
        &mut self.0[kind.index()]
    }
}

/// The count a confirmation carries, as Redis counts it: channels and patterns
/// together, shard channels apart.
fn count(session: &Session, kind: Kind) -> i64 {
    let subs = &session.subscriptions;
    let n = match kind {
        Kind::Shard => subs.of(Kind::Shard).len(),
        _ => subs.of(Kind::Channel).len() + subs.of(Kind::Pattern).len(),
    };
    n as i64
}

fn confirmation(word: &str, name: Option<&[u8]>, count: i64) -> Frame {
    Frame::Push(vec![
        Frame::bulk(word),
        name.map_or(Frame::Null, Frame::bulk),
        Frame::Integer(count),
    ])
}

fn publish_counts(session: &Session, kind: Kind) {
    let n = session.subscriptions.of(kind).len();
    session.client.subscriptions[kind.index()].store(n, Ordering::Relaxed);
}

fn subscribe_to(ctx: &mut Ctx, kind: Kind, word: &str, names: &[Vec<u8>]) -> Reply {
    let mut confirmations = Vec::with_capacity(names.len());
    for name in names {
        if ctx.session.subscriptions.of_mut(kind).insert(name.clone()) {
            ctx.server.pubsub.subscribe(kind, name, &ctx.session.client);
        }
        publish_counts(ctx.session, kind);
        let n = count(ctx.session, kind);
        confirmations.push(confirmation(word, Some(name), n));
    }
    Ok(Action::Replies(confirmations))
}

/// Unsubscribes from `names`, or from everything of `kind` if none are given.
fn unsubscribe_from(ctx: &mut Ctx, kind: Kind, word: &str, names: &[Vec<u8>]) -> Reply {
    let names: Vec<Vec<u8>> = if names.is_empty() {
        ctx.session.subscriptions.of(kind).iter().cloned().collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        let n = count(ctx.session, kind);
        return Ok(Action::Replies(vec![confirmation(word, None, n)]));
    }
    let mut confirmations = Vec::with_capacity(names.len());
    for name in &names {
        if ctx.session.subscriptions.of_mut(kind).remove(name) {
            let id = ctx.session.client.id;
            ctx.server.pubsub.unsubscribe(kind, name, id);
        }
        publish_counts(ctx.session, kind);
        let n = count(ctx.session, kind);
        confirmations.push(confirmation(word, Some(name), n));
    }
    Ok(Action::Replies(confirmations))
}

pub fn subscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    subscribe_to(ctx, Kind::Channel, "subscribe", &args[1..])
}

pub fn psubscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    subscribe_to(ctx, Kind::Pattern, "psubscribe", &args[1..])
}

pub fn ssubscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    subscribe_to(ctx, Kind::Shard, "ssubscribe", &args[1..])
}

pub fn unsubscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    unsubscribe_from(ctx, Kind::Channel, "unsubscribe", &args[1..])
}

pub fn punsubscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    unsubscribe_from(ctx, Kind::Pattern, "punsubscribe", &args[1..])
}

pub fn sunsubscribe(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    unsubscribe_from(ctx, Kind::Shard, "sunsubscribe", &args[1..])
}

/// Drops every subscription without confirmations (RESET, disconnection).
pub fn leave_all(server: &crate::server::Server, session: &mut Session) {
    for kind in Kind::ALL {
        for name in std::mem::take(session.subscriptions.of_mut(kind)) {
            server.pubsub.unsubscribe(kind, &name, session.client.id);
        }
        publish_counts(session, kind);
    }
}

pub fn publish(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    publish_to(ctx, false, args)
}

pub fn spublish(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    publish_to(ctx, true, args)
}

/// `[S]PUBLISH channel message`: the number of subscribers that received it.
fn publish_to(ctx: &mut Ctx, shard: bool, args: &[Vec<u8>]) -> Reply {
    let limit = ctx.server.config.pubsub_output_limit();
    int(ctx.server.pubsub.publish(shard, &args[1], &args[2], limit) as i64)
}

/// PUBSUB CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB, HELP.
pub fn pubsub(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let registry = &ctx.server.pubsub;
    let names = |kind: Kind, pattern: Option<&Vec<u8>>| {
        let names = registry.names(kind, pattern.map(Vec::as_slice));
        reply(Frame::Array(names.into_iter().map(Frame::Bulk).collect()))
    };
    let numbers = |kind: Kind, names: &[Vec<u8>]| {
        let mut out = Vec::with_capacity(names.len() * 2);
        for name in names {
            out.push(Frame::bulk(name));
            out.push(Frame::Integer(registry.subscribers(kind, name) as i64));
        }
        reply(Frame::Array(out))
    };
    match (upper(&args[1]).as_slice(), &args[2..]) {
        (b"CHANNELS", []) => names(Kind::Channel, None),
        (b"CHANNELS", [pattern]) => names(Kind::Channel, Some(pattern)),
        (b"SHARDCHANNELS", []) => names(Kind::Shard, None),
        (b"SHARDCHANNELS", [pattern]) => names(Kind::Shard, Some(pattern)),
        (b"NUMSUB", channels) => numbers(Kind::Channel, channels),
        (b"SHARDNUMSUB", channels) => numbers(Kind::Shard, channels),
        (b"NUMPAT", []) => int(registry.len(Kind::Pattern) as i64),
        (b"HELP", []) => super::help(HELP),
        _ => super::bad_subcommand("pubsub", &args[1]),
    }
}

/// Redis's refusal of a command a RESP2 subscriber may not run.
pub fn refusal(name: &str) -> Frame {
    Frame::error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// The commands a RESP2 subscriber may run.
pub const ALLOWED_WHILE_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
    "ping",
    "quit",
    "reset",
];

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];
