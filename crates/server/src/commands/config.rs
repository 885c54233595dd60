//! CONFIG GET, SET, RESETSTAT, REWRITE, HELP.

use resp::Frame;

use super::{error, ok, reply, upper, Ctx, Reply};
use crate::config::SetError;
use crate::server::Server;

pub fn config(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let sub = upper(&args[1]);
    match sub.as_slice() {
        b"GET" if args.len() >= 3 => {
            let mut pairs: Vec<(String, String)> = Vec::new();
            for pattern in &args[2..] {
                for pair in ctx.server.config.get(pattern) {
                    if !pairs.iter().any(|(n, _)| *n == pair.0) {
                        pairs.push(pair);
                    }
                }
            }
            reply(Frame::Map(
                pairs
                    .into_iter()
                    .map(|(n, v)| (Frame::Bulk(n.into_bytes()), Frame::Bulk(v.into_bytes())))
                    .collect(),
            ))
        }
        b"SET" if args.len() >= 4 && args.len().is_multiple_of(2) => {
            let config = &ctx.server.config;
            let names: Vec<String> = args[2..]
                .iter()
                .step_by(2)
                .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
                .collect();
            // Check every name first, so that nothing changes if one is unknown, one
            // Redis never lets CONFIG SET change, or one given twice (by the same name:
            // Redis 7.0 takes a setting's old and new names as two), the first such
            // reported.
            for (i, name) in names.iter().enumerate() {
                if config.get(name.as_bytes()).len() != 1 {
                    return error(&format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    ));
                }
                if let Some(why) = config.refused(name) {
                    return set_failed(name, why);
                }
                if names[..i].contains(name) {
                    return set_failed(name, SetError::Invalid("duplicate parameter".into()));
                }
            }
            // Apply in order; if one value is refused, put back the ones already set,
            // so the command changes all or nothing, as in Redis.
            let mut applied: Vec<(&str, String)> = Vec::new();
            for (name, value) in names.iter().zip(args[3..].iter().step_by(2)) {
                let before = config.get(name.as_bytes()).pop().map(|(_, v)| v);
                if let Err(failed) = config.set(name, value) {
                    put_back(config, &applied);
                    return set_failed(name, failed);
                }
                applied.push((name, before.unwrap_or_default()));
            }
            if let Err((name, failed)) = apply(ctx.server, &applied) {
                put_back(config, &applied);
                return set_failed(name, failed);
            }
            if applied.iter().any(|(name, _)| *name == "requirepass") {
                let password = config.requirepass();
                ctx.server.users.set_default_password(password.as_deref());
            }
            ctx.server.config_changed();
            if applied.iter().any(|(name, _)| *name == "maxmemory") {
                limit_set(ctx.server);
            }
            ok()
        }
        b"RESETSTAT" if args.len() == 2 => {
            ctx.server.reset_stats();
            ok()
        }
        b"REWRITE" if args.len() == 2 => {
            // Users go into the config file unless an ACL file keeps them.
            let users: Vec<String> = match crate::acl_file::configured(ctx.server) {
                Some(_) => Vec::new(),
                None => ctx
                    .server
                    .users
                    .all()
                    .iter()
                    .map(|u| u.describe())
                    .collect(),
            };
            rewrite(ctx, &users)
        }
        b"HELP" if args.len() == 2 => super::help(HELP),
        _ => super::bad_subcommand("config", &args[1]),
    }
}

fn rewrite(ctx: &Ctx, users: &[String]) -> Reply {
    match ctx.server.config.rewrite(users) {
        Ok(()) => ok(),
        Err(e) => error(&format!("ERR {e}")),
    }
}

/// A new `maxmemory` under the memory in use evicts at once, as Redis's does (not
/// only at the next write), with Redis's warning.
fn limit_set(server: &Server) {
    let (max, used) = (server.config.maxmemory(), server.refresh_memory());
    if max == 0 || used <= max {
        return;
    }
    tracing::warn!(
        maxmemory = max,
        used,
        "the new maxmemory is smaller than the memory in use: keys will be evicted or \
         writes refused, as maxmemory-policy says"
    );
    // Refused: writes are refused from now on, which is what the warning said.
    let _ = server.make_room();
}

/// Redis's apply step, for the settings that take more than a value once set: the
/// engine's fsync policy, then the port. Fails with the setting's name if the engine
/// cannot switch or the server cannot listen on the port, having undone the switch;
/// the caller puts the values back.
fn apply<'a>(server: &Server, applied: &[(&'a str, String)]) -> Result<(), (&'a str, SetError)> {
    let config = &server.config;
    let fsync = config.fsync();
    // The policy before the command: the first of its two names set held it.
    let fsync_was = applied
        .iter()
        .find(|(name, _)| matches!(*name, "fsync" | "appendfsync"))
        .map(|(name, before)| (*name, before.parse().expect("a policy it printed")))
        .filter(|(_, was)| *was != fsync);
    if let Some((name, _)) = fsync_was {
        server
            .db
            .set_fsync(fsync)
            .map_err(|e| (name, SetError::Invalid(e.to_string())))?;
    }
    let port = config.port();
    let port_was = applied
        .iter()
        .find(|(name, before)| *name == "port" && *before != port.to_string());
    let Some((name, _)) = port_was else {
        return Ok(());
    };
    let Err(e) = server.listener_moves.move_to(config.bind, port) else {
        return Ok(());
    };
    tracing::warn!(port, error = %e, "CONFIG SET port: cannot listen");
    if let Some((_, was)) = fsync_was {
        if let Err(e) = server.db.set_fsync(was) {
            tracing::warn!(error = %e, "CONFIG SET: the fsync policy not put back");
        }
    }
    let why = "Unable to listen on this port. Check server logs.";
    Err((name, SetError::Invalid(why.into())))
}

/// Sets back the values `applied` replaced, last first.
fn put_back(config: &crate::config::Config, applied: &[(&str, String)]) {
    for (name, value) in applied.iter().rev() {
        let restored = config.set(name, value.as_bytes());
        debug_assert!(restored.is_ok(), "a value CONFIG GET printed is settable");
    }
}

/// Redis's reply to a CONFIG SET that `failed` on setting `name`.
fn set_failed(name: &str, failed: SetError) -> Reply {
    let why = match failed {
        SetError::Immutable => "can't set immutable config".to_string(),
        SetError::Protected => "can't set protected config".to_string(),
        SetError::Invalid(why) => why,
        SetError::Unknown => "unknown option".to_string(),
    };
    error(&format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];
