//! CONFIG GET, SET, RESETSTAT, REWRITE, HELP.

use resp::Frame;

use super::{error, ok, reply, upper, Ctx, Reply};
use crate::config::SetError;

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
            // Check every name first, so an unknown one changes nothing.
            for pair in args[2..].chunks_exact(2) {
                let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                if ctx.server.config.get(name.as_bytes()).len() != 1 {
                    return error(&format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    ));
                }
            }
            // Apply in order; if one value is refused, put back the ones already set,
            // so the command changes all or nothing, as in Redis.
            let config = &ctx.server.config;
            let mut applied: Vec<(String, String)> = Vec::new();
            for pair in args[2..].chunks_exact(2) {
                let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                let before = config.get(name.as_bytes()).pop().map(|(_, v)| v);
                let failed = match config.set(&name, &pair[1]) {
                    Ok(()) => {
                        applied.push((name, before.unwrap_or_default()));
                        continue;
                    }
                    Err(SetError::Immutable) => "can't set immutable config".to_string(),
                    Err(SetError::Invalid(why)) => why,
                    Err(SetError::Unknown) => "unknown option".to_string(),
                };
                for (earlier, value) in applied.iter().rev() {
                    let restored = config.set(earlier, value.as_bytes());
                    debug_assert!(restored.is_ok(), "a value CONFIG GET printed is settable");
                }
                return error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {failed}"
                ));
            }
            if applied.iter().any(|(name, _)| name == "requirepass") {
                let password = config.requirepass();
                ctx.server.users.set_default_password(password.as_deref());
            }
            ctx.server.config_changed();
            ok()
        }
        b"RESETSTAT" if args.len() == 2 => {
            ctx.server.reset_stats();
            ok()
        }
        b"REWRITE" if args.len() == 2 => match ctx.server.config.rewrite() {
            Ok(()) => ok(),
            Err(e) => error(&format!("ERR {e}")),
        },
        b"HELP" if args.len() == 2 => super::help(HELP),
        _ => super::bad_subcommand("config", &args[1]),
    }
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
