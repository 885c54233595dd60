//! PING, ECHO, QUIT, RESET, HELLO, AUTH, SELECT.

use std::sync::atomic::Ordering;

use resp::{Frame, Protocol};

use super::{error, ok, parse_integer, reply, upper, Action, Ctx, Reply, NOT_AN_INTEGER};

pub fn ping(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    // A RESP2 subscriber's replies must look like messages: Redis sends a pair.
    if ctx.session.proto == Protocol::Resp2 && ctx.session.client.is_subscribed() {
        let message = args.get(1).map_or(&[][..], Vec::as_slice);
        return reply(Frame::Array(vec![
            Frame::bulk("pong"),
            Frame::bulk(message),
        ]));
    }
    match args {
        [_] => reply(Frame::Simple("PONG".into())),
        [_, msg] => reply(Frame::bulk(msg)),
        _ => error("ERR wrong number of arguments for 'ping' command"),
    }
}

pub fn echo(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    reply(Frame::bulk(&args[1]))
}

pub fn quit(_: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    Ok(Action::Close(Some(Frame::Simple("OK".into()))))
}

/// Back to a fresh connection's state: no transaction, no watches, RESP2, and
/// not authenticated if a password is set now.
pub fn reset(ctx: &mut Ctx, _: &[Vec<u8>]) -> Reply {
    let s = &mut *ctx.session;
    s.multi = None;
    s.client.buffers.clear_queue();
    s.multi_failed = false;
    s.client.in_multi.store(false, Ordering::Relaxed);
    s.end(ctx.server);
    set_protocol(s, Protocol::Resp2);
    s.set_user(ctx.server, ctx.server.users.default_user());
    s.authenticated = !ctx.server.users.auth_required();
    s.client.no_evict.store(false, Ordering::Relaxed);
    reply(Frame::Simple("RESET".into()))
}

fn set_protocol(s: &mut super::Session, proto: Protocol) {
    s.proto = proto;
    let n = if proto == Protocol::Resp3 { 3 } else { 2 };
    s.client.resp.store(n, Ordering::Relaxed);
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Checks `user`'s `password` for the command `args` (AUTH, HELLO): if they pass, the
/// connection runs as that user from now on; if not, ACL LOG records it.
fn authenticate(
    ctx: &mut Ctx,
    args: &[Vec<u8>],
    user: &[u8],
    password: &[u8],
) -> Option<&'static str> {
    let (server, session) = (ctx.server, &mut *ctx.session);
    match server.users.authenticate(user, password) {
        Some(user) => {
            session.set_user(server, user);
            session.authenticated = true;
            None
        }
        None => {
            let context = super::LogContext::of(session);
            super::log_acl(
                server,
                session,
                "auth",
                context,
                args[0].clone(),
                user.to_vec(),
            );
            Some(WRONGPASS)
        }
    }
}

/// `AUTH password` or `AUTH username password`.
pub fn auth(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let failed = match args {
        [_, password] => {
            if !ctx.server.users.default_user().needs_password() {
                return error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
            }
            authenticate(ctx, args, b"default", password)
        }
        [_, user, password] => authenticate(ctx, args, user, password),
        _ => return error(super::SYNTAX_ERROR),
    };
    match failed {
        None => ok(),
        Some(e) => error(e),
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`: switches
/// RESP2/RESP3 and describes the server with the fields clients check.
pub fn hello(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let mut proto = ctx.session.proto;
    if let Some(v) = args.get(1) {
        proto = match parse_integer(v) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return error("NOPROTO unsupported protocol version"),
            None => return error("ERR Protocol version is not an integer or out of range"),
        };
    }
    let mut auth = None;
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        match upper(&args[i]).as_slice() {
            b"AUTH" if i + 2 < args.len() => {
                auth = Some((&args[i + 1], &args[i + 2]));
                i += 3;
            }
            b"SETNAME" if i + 1 < args.len() => {
                name = Some(&args[i + 1]);
                i += 2;
            }
            _ => {
                return error(&format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&args[i])
                ))
            }
        }
    }
    if let Some((user, password)) = auth {
        if let Some(e) = authenticate(ctx, args, user, password) {
            return error(e);
        }
    }
    if !ctx.session.authenticated {
        return error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(name) = name {
        if let Err(e) = super::client::set_name(ctx, name) {
            return error(e);
        }
    }
    set_protocol(ctx.session, proto);
    let s = |t: &str| Frame::bulk(t);
    let proto = if proto == Protocol::Resp3 { 3 } else { 2 };
    reply(Frame::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(crate::REDIS_VERSION)),
        (s("proto"), Frame::Integer(proto)),
        (s("id"), Frame::Integer(ctx.session.client.id as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Frame::Array(vec![])),
    ]))
}

/// hotkv has one database: SELECT 0 works, any other index is out of range.
pub fn select(_: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    match parse_integer(&args[1]) {
        Some(0) => ok(),
        Some(_) => error("ERR DB index is out of range"),
        None => error(NOT_AN_INTEGER),
    }
}
