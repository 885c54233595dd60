//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching (see
//! [`crate::tracking`]), with Redis's options, checks and error words.

use resp::Frame;

use super::{error, int, ok, parse_integer, reply, upper, Ctx, Reply, SYNTAX_ERROR};
use crate::tracking::Options;

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN] [OPTOUT]
/// [NOLOOP]`. Options are read (and REDIRECT's target looked up) before ON or OFF
/// is, in Redis's order, so its errors come in the same order too.
pub fn tracking(ctx: &mut Ctx, on_off: &[u8], rest: &[Vec<u8>]) -> Reply {
    let mut options = Options::default();
    let mut redirect_to = None;
    let mut i = 0;
    while i < rest.len() {
        let has_value = i + 1 < rest.len();
        match upper(&rest[i]).as_slice() {
            b"REDIRECT" if has_value => {
                i += 1;
                if options.redirect != 0 {
                    return error("ERR A client can only redirect to a single other client");
                }
                let Some(id) = parse_integer(&rest[i]) else {
                    return error(super::NOT_AN_INTEGER);
                };
                let target = u64::try_from(id)
                    .ok()
                    .and_then(|id| ctx.server.clients.get(id));
                let Some(target) = target else {
                    return error("ERR The client ID you want redirect to does not exist");
                };
                options.redirect = target.id;
                redirect_to = Some(target);
            }
            b"BCAST" => options.bcast = true,
            b"OPTIN" => options.optin = true,
            b"OPTOUT" => options.optout = true,
            b"NOLOOP" => options.noloop = true,
            b"PREFIX" if has_value => {
                i += 1;
                options.prefixes.push(rest[i].clone());
            }
            _ => return error(SYNTAX_ERROR),
        }
        i += 1;
    }
    let tracking = &ctx.server.db.tracking;
    let id = ctx.session.client.id;
    match upper(on_off).as_slice() {
        b"ON" => {
            let current = ctx.session.tracking.as_ref();
            if !options.bcast && !options.prefixes.is_empty() {
                return error("ERR PREFIX option requires BCAST mode to be enabled");
            }
            if current.is_some_and(|c| c.bcast != options.bcast) {
                return error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
            if options.bcast && (options.optin || options.optout) {
                return error("ERR OPTIN and OPTOUT are not compatible with BCAST");
            }
            if options.optin && options.optout {
                return error("ERR You can't specify both OPTIN mode and OPTOUT mode");
            }
            if current.is_some_and(|c| (c.optin && options.optout) || (c.optout && options.optin)) {
                return error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
            if let Some((new, old, held)) = tracking.prefix_collision(id, &options.prefixes) {
                let (new, old) = (String::from_utf8_lossy(&new), String::from_utf8_lossy(&old));
                let what = if held {
                    "an existing"
                } else {
                    "another provided"
                };
                return error(&format!("ERR Prefix '{new}' overlaps with {what} prefix '{old}'. Prefixes for a single client must not overlap."));
            }
            tracking.enable(ctx.session.client.clone(), options, redirect_to);
            ctx.session.tracking = tracking.state(id).map(|(options, _)| options);
            ctx.session.caching = false;
            ok()
        }
        b"OFF" => {
            ctx.session.stop_tracking(ctx.server);
            ok()
        }
        _ => error(SYNTAX_ERROR),
    }
}

/// `CLIENT CACHING YES|NO`: whether the next command's reads are remembered, against
/// the OPTIN or OPTOUT default.
pub fn caching(ctx: &mut Ctx, answer: &[u8]) -> Reply {
    let Some(mode) = &ctx.session.tracking else {
        return error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    };
    match upper(answer).as_slice() {
        b"YES" if mode.optin => {}
        b"YES" => {
            return error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            )
        }
        b"NO" if mode.optout => {}
        b"NO" => {
            return error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            )
        }
        _ => return error(SYNTAX_ERROR),
    }
    ctx.session.caching = true;
    ok()
}

/// CLIENT GETREDIR: -1 when not tracking, else the redirection (0: none).
pub fn getredir(ctx: &mut Ctx) -> Reply {
    int(ctx
        .session
        .tracking
        .as_ref()
        .map_or(-1, |t| t.redirect as i64))
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes, as Redis lists them.
pub fn trackinginfo(ctx: &mut Ctx) -> Reply {
    let s = |t: &str| Frame::bulk(t);
    let state = ctx.server.db.tracking.state(ctx.session.client.id);
    let (flags, redirect, prefixes) = match state {
        None => (vec![s("off")], -1, Vec::new()),
        Some((o, broken)) => {
            let caching = ctx.session.caching;
            let flags = [
                ("on", true),
                ("bcast", o.bcast),
                ("optin", o.optin),
                ("optout", o.optout),
                ("caching-yes", caching && o.optin),
                ("caching-no", caching && o.optout),
                ("noloop", o.noloop),
                ("broken_redirect", broken),
            ];
            let flags = flags
                .iter()
                .filter(|(_, on)| *on)
                .map(|(f, _)| s(f))
                .collect();
            let prefixes = o.prefixes.iter().map(Frame::bulk).collect();
            (flags, o.redirect as i64, prefixes)
        }
    };
    reply(Frame::Map(vec![
        (s("flags"), Frame::Set(flags)),
        (s("redirect"), Frame::Integer(redirect)),
        (s("prefixes"), Frame::Array(prefixes)),
    ]))
}

/// CLIENT LIST's flags for tracking (`t`, `R` for a broken redirection, `B`) and its
/// `redir` field.
pub fn list_fields(ctx: &Ctx, id: u64) -> (String, i64) {
    match ctx.server.db.tracking.state(id) {
        None => (String::new(), -1),
        Some((o, broken)) => {
            let mut flags = String::from("t");
            if broken {
                flags.push('R');
            }
            if o.bcast {
                flags.push('B');
            }
            (flags, o.redirect as i64)
        }
    }
}
