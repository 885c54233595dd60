//! MIGRATE: keys moved (or copied) to another server, hotkv or Redis, as Redis moves
//! them: each key DUMPed here and sent in one pipeline of RESTOREs (after AUTH and
//! SELECT if needed) over a connection kept for the next MIGRATE
//! (`migrate_sockets.rs`); a key is deleted here once the target has acknowledged it.
//!
//! The command runs alone, so the keys cannot change between their DUMP and their
//! deletion; like Redis, the server waits on the target meanwhile, for at most the
//! timeout per step.

use std::io;
use std::time::Duration;

use resp::{Frame, Protocol};

use super::{error, ok, parse_integer, reply, upper, Ctx, Reply, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::entry::now_ms;
use crate::keyspace_events::GENERIC;
use crate::migrate_sockets::{timed_out, NoConnection, Target};

/// `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
/// [AUTH password | AUTH2 username password] [KEYS key...]`: OK once every key found
/// here is on the target, NOKEY if none is here.
pub fn migrate(ctx: &mut Ctx, args: &[Vec<u8>]) -> Reply {
    let request = match Request::parse(args) {
        Ok(request) => request,
        Err(refusal) => return error(refusal),
    };
    let now = now_ms();
    let mut moving = Vec::new();
    let compress = ctx.server.config.rdb_compression();
    for key in request.keys {
        let Some(entry) = ctx.read(key)? else {
            continue;
        };
        let payload = match super::dump::payload(&entry, compress) {
            Ok(payload) => payload,
            Err(refusal) => return error(refusal),
        };
        // Relative, as RESTORE takes it; a key about to expire keeps a millisecond.
        let ttl = entry.deadline.map_or(0, |at| at.saturating_sub(now).max(1));
        moving.push((key, ttl, payload));
    }
    if moving.is_empty() {
        return reply(Frame::Simple("NOKEY".into()));
    }
    let sockets = &ctx.server.migrate_sockets;
    let (host, port) = (
        String::from_utf8_lossy(&args[1]),
        String::from_utf8_lossy(&args[2]),
    );
    let mut may_retry = true;
    loop {
        let mut target = match sockets.take(&host, &port, request.timeout) {
            Ok(target) => target,
            Err(NoConnection::Unreachable) => {
                return error("IOERR error or timeout connecting to the client")
            }
            // Redis connects without blocking and learns of a refusal at its first write.
            Err(NoConnection::Refused) => return transfer_failed(true),
        };
        let exchange = request.exchange(&mut target, &moving);
        if let Some(failure) = &exchange.failure {
            // As Redis: once more on a new connection if nothing was done (a cached
            // connection the target has closed fails so), unless time ran out.
            let untouched = exchange.refused.is_none() && exchange.restored.is_empty();
            if may_retry && untouched && !timed_out(&failure.error) {
                may_retry = false;
                continue;
            }
        }
        if !request.copy && exchange.refused.is_none() {
            for ((key, _, _), refusal) in moving.iter().zip(&exchange.restored) {
                if refusal.is_none() && ctx.db().remove(key)? {
                    ctx.notify(GENERIC, "del", key);
                }
            }
        }
        let refusal = exchange
            .refused
            .as_ref()
            .or_else(|| exchange.restored.iter().flatten().next());
        if exchange.failure.is_none() {
            // After a refusal, the database selected is in doubt.
            target.selected = refusal.is_none().then_some(request.db);
            sockets.put_back(&host, &port, target);
        }
        return match (refusal, exchange.failure) {
            (Some(refusal), _) => error(&format!(
                "ERR Target instance replied with error: {}",
                String::from_utf8_lossy(refusal)
            )),
            (None, Some(failure)) => transfer_failed(failure.writing),
            (None, None) => ok(),
        };
    }
}

/// Redis's words for a connection to the target that failed while the keys were being
/// written to it or its replies read.
fn transfer_failed(writing: bool) -> Reply {
    error(if writing {
        "IOERR error or timeout writing to target instance"
    } else {
        "IOERR error or timeout reading to target instance"
    })
}

struct Request<'a> {
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    /// AUTH's password, or AUTH2's user name and password.
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: &'a [Vec<u8>],
}

/// What the target answered before the exchange ended.
struct Exchange {
    /// AUTH's or SELECT's error, which every RESTORE after it shares.
    refused: Option<Vec<u8>>,
    /// The RESTOREs' replies read, in order: `Some` holds an error.
    restored: Vec<Option<Vec<u8>>>,
    /// The I/O failure that cut the exchange short.
    failure: Option<Failure>,
}

struct Failure {
    error: io::Error,
    writing: bool,
}

impl<'a> Request<'a> {
    /// Checks in Redis's order: the options, then the timeout and the database.
    fn parse(args: &'a [Vec<u8>]) -> Result<Request<'a>, &'static str> {
        let (mut copy, mut replace, mut auth) = (false, false, None);
        let mut keys = &args[3..4];
        for (at, word) in options(args) {
            let more = args.len() - 1 - at;
            match word.as_slice() {
                b"COPY" => copy = true,
                b"REPLACE" => replace = true,
                b"AUTH" if more >= 1 => auth = Some((None, args[at + 1].as_slice())),
                b"AUTH2" if more >= 2 => {
                    auth = Some((Some(args[at + 1].as_slice()), args[at + 2].as_slice()))
                }
                b"KEYS" => {
                    if !args[3].is_empty() {
                        return Err("ERR When using MIGRATE KEYS option, the key argument must \
                                    be set to the empty string");
                    }
                    keys = &args[at + 1..];
                }
                _ => return Err(SYNTAX_ERROR),
            }
        }
        let (Some(timeout), Some(db)) = (parse_integer(&args[5]), parse_integer(&args[4])) else {
            return Err(NOT_AN_INTEGER);
        };
        // As Redis: no timeout means a second.
        let timeout = if timeout <= 0 { 1000 } else { timeout as u64 };
        Ok(Request {
            db,
            timeout: Duration::from_millis(timeout),
            copy,
            replace,
            auth,
            keys,
        })
    }

    /// Sends the pipeline and reads its replies until the end or the first failure.
    fn exchange(&self, target: &mut Target, moving: &[(&Vec<u8>, u64, Vec<u8>)]) -> Exchange {
        let mut commands = Vec::new();
        let mut push = |args: &[&[u8]]| {
            Frame::command(args.iter().copied()).encode(Protocol::Resp2, &mut commands)
        };
        match self.auth {
            Some((None, password)) => push(&[b"AUTH", password]),
            Some((Some(user), password)) => push(&[b"AUTH", user, password]),
            None => {}
        }
        let select = target.selected != Some(self.db);
        if select {
            push(&[b"SELECT", self.db.to_string().as_bytes()]);
        }
        for (key, ttl, payload) in moving {
            let ttl = ttl.to_string();
            let mut restore: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
            if self.replace {
                restore.push(b"REPLACE");
            }
            push(&restore);
        }
        let mut exchange = Exchange {
            refused: None,
            restored: Vec::with_capacity(moving.len()),
            failure: None,
        };
        if let Err(error) = target.send(&commands, self.timeout) {
            exchange.failure = Some(Failure {
                error,
                writing: true,
            });
            return exchange;
        }
        let preludes = usize::from(self.auth.is_some()) + usize::from(select);
        for i in 0..preludes + moving.len() {
            let line = match target.read_line(self.timeout) {
                Ok(line) => line,
                Err(error) => {
                    exchange.failure = Some(Failure {
                        error,
                        writing: false,
                    });
                    break;
                }
            };
            let refusal = line.strip_prefix(b"-").map(<[u8]>::to_vec);
            if i < preludes {
                exchange.refused = exchange.refused.or(refusal);
            } else {
                exchange.restored.push(refusal);
            }
        }
        exchange
    }
}

/// MIGRATE's options: each one's position and its word in upper case, from argument 6
/// on, AUTH's and AUTH2's values stepped over (so a password `KEYS` is not the keyword)
/// and KEYS the last (the keys follow it). Values are stepped over even where too few
/// are given: what that leaves is the parser's to refuse.
fn options(args: &[Vec<u8>]) -> impl Iterator<Item = (usize, Vec<u8>)> + '_ {
    let mut next = 6;
    std::iter::from_fn(move || {
        let at = next;
        let word = upper(args.get(at)?);
        next = match word.as_slice() {
            b"KEYS" => args.len(),
            b"AUTH" => at + 2,
            b"AUTH2" => at + 3,
            _ => at + 1,
        };
        Some((at, word))
    })
}

/// Where MIGRATE's keys are, as Redis's own key finder for it says (its key specs
/// are incomplete): after KEYS (the key argument then empty), else the key argument.
pub fn keys_at(args: &[Vec<u8>]) -> Option<(usize, usize)> {
    match options(args).find(|(_, word)| word == b"KEYS") {
        Some((at, _)) if args[3].is_empty() && at + 1 < args.len() => {
            Some((at + 1, args.len() - 1))
        }
        Some(_) => None,
        None => Some((3, 3)),
    }
}

/// Whether argument `i` is a password or user name (hidden from SLOWLOG and MONITOR).
pub fn is_secret(args: &[Vec<u8>], i: usize) -> bool {
    options(args).any(|(at, word)| match word.as_slice() {
        b"AUTH" => i == at + 1,
        b"AUTH2" => i == at + 1 || i == at + 2,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(line: &str) -> Vec<Vec<u8>> {
        resp::split_args(line.as_bytes()).unwrap()
    }

    #[test]
    fn keys_are_found_as_redis_finds_them() {
        assert_eq!(keys_at(&call("migrate h 1 k 0 5")), Some((3, 3)));
        assert_eq!(
            keys_at(&call("migrate h 1 k 0 5 copy replace")),
            Some((3, 3))
        );
        assert_eq!(keys_at(&call("migrate h 1 '' 0 5 keys a b")), Some((7, 8)));
        assert_eq!(
            keys_at(&call("migrate h 1 '' 0 5 AUTH KEYS KEYS a")),
            Some((9, 9))
        );
        assert_eq!(
            keys_at(&call("migrate h 1 '' 0 5 AUTH2 KEYS 1 KEYS a")),
            Some((10, 10))
        );
        assert_eq!(
            keys_at(&call("migrate h 1 '' 0 5 AUTH2 u KEYS KEYS a")),
            Some((10, 10))
        );
        assert_eq!(
            keys_at(&call("migrate h 1 k 0 5 keys a")),
            None,
            "KEYS needs ''"
        );
        assert_eq!(keys_at(&call("migrate h 1 '' 0 5 keys")), None);
    }

    #[test]
    fn passwords_and_user_names_are_secret() {
        let args = call("migrate h 1 '' 0 5 AUTH p COPY AUTH2 u q KEYS AUTH x");
        let secret: Vec<usize> = (0..args.len()).filter(|&i| is_secret(&args, i)).collect();
        assert_eq!(secret, [7, 10, 11]);
    }

    #[test]
    fn options_are_checked_before_numbers() {
        let refusal = |line: &str| Request::parse(&call(line)).err();
        assert_eq!(refusal("migrate h 1 k x y bogus"), Some(SYNTAX_ERROR));
        assert_eq!(refusal("migrate h 1 k x y AUTH"), Some(SYNTAX_ERROR));
        assert_eq!(refusal("migrate h 1 k x y AUTH2 u"), Some(SYNTAX_ERROR));
        assert!(refusal("migrate h 1 k 0 5 KEYS a")
            .is_some_and(|e| e.contains("must be set to the empty string")));
        assert_eq!(refusal("migrate h 1 k 0 y"), Some(NOT_AN_INTEGER));
        assert_eq!(refusal("migrate h 1 k x 5"), Some(NOT_AN_INTEGER));
        let args = call("migrate h 1 '' 3 0 copy replace AUTH2 u p keys a b");
        let request = Request::parse(&args).unwrap();
        assert_eq!(request.timeout, Duration::from_millis(1000));
        assert_eq!(request.db, 3);
        assert!(request.copy && request.replace);
        assert_eq!(request.auth, Some((Some(&b"u"[..]), &b"p"[..])));
        assert_eq!(request.keys, call("a b"));
    }
}
