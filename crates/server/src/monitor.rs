//! MONITOR: every command the server runs, as one line to each monitoring client.
//!
//! A line is what Redis 7 writes: a simple string `+<unix seconds>.<microseconds>
//! [0 <ip:port>] "arg" "arg" ...`, each argument quoted and escaped as Redis's
//! `sdscatrepr` does. Commands are fed after they run (so the commands an EXEC runs
//! come before the `exec` line); refused commands (unknown, wrong arity, NOAUTH, OOM)
//! and administrative ones (CONFIG, CLIENT LIST, MONITOR itself, ...) are not fed, and
//! passwords are redacted, all as in Redis.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::clients::{Client, OutputLimit};

#[derive(Default)]
pub struct Monitors {
    /// How many clients monitor: the one load every command pays while none do.
    count: AtomicUsize,
    clients: Mutex<Vec<Arc<Client>>>,
}

impl Monitors {
    /// Makes `client` a monitor; false if it is one already.
    pub fn add(&self, client: Arc<Client>) -> bool {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.iter().any(|c| c.id == client.id) {
            return false;
        }
        clients.push(client);
        self.count.store(clients.len(), Ordering::Relaxed);
        true
    }

    /// Stops feeding the client `id` (RESET, disconnection); false if it was not a
    /// monitor.
    pub fn remove(&self, id: u64) -> bool {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let before = clients.len();
        clients.retain(|c| c.id != id);
        self.count.store(clients.len(), Ordering::Relaxed);
        clients.len() != before
    }

    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Sends the command `args` that `from` (a client's address, or `lua` for a
    /// script's command) ran to every monitor; arguments for which
    /// `redacted` holds show as `(redacted)`. `limit` bounds what a monitor that does
    /// not read may have waiting (see [`Client::deliver`]).
    pub fn feed(
        &self,
        from: &str,
        args: &[Vec<u8>],
        redacted: impl Fn(usize) -> bool,
        limit: usize,
    ) {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let text = line(
            since_epoch.as_secs(),
            since_epoch.subsec_micros(),
            from,
            args,
            redacted,
        );
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        for monitor in clients.iter() {
            monitor.deliver(&text, OutputLimit::outbox(limit));
        }
    }
}

/// One monitor line, with its `+` and `\r\n`.
fn line(
    secs: u64,
    micros: u32,
    addr: &str,
    args: &[Vec<u8>],
    redacted: impl Fn(usize) -> bool,
) -> Vec<u8> {
    let mut out = format!("+{secs}.{micros:06} [0 {addr}]").into_bytes();
    for (i, arg) in args.iter().enumerate() {
        out.push(b' ');
        if redacted(i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote(arg, &mut out);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// `arg` in double quotes, escaped as Redis's `sdscatrepr` escapes: backslash and
/// quote with a backslash, the usual control characters by name, other bytes outside
/// printable ASCII as `\xhh`. The result never holds a CR or LF, so it fits a simple
/// string.
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_quotes_and_escapes_as_redis_does() {
        // The bytes redis-server 7.0.15 wrote to `redis-cli monitor` for this SET.
        let args = vec![
            b"set".to_vec(),
            b"k".to_vec(),
            b"a\"b\\c\n\x01\xff".to_vec(),
        ];
        let text = line(1795558263, 38598, "127.0.0.1:56088", &args, |_| false);
        assert_eq!(
            text,
            b"+1795558263.038598 [0 127.0.0.1:56088] \"set\" \"k\" \"a\\\"b\\\\c\\n\\x01\\xff\"\r\n"
        );
        let auth = vec![b"auth".to_vec(), b"secret".to_vec()];
        let text = line(7, 5, "[::1]:6379", &auth, |i| i >= 1);
        assert_eq!(
            text,
            b"+7.000005 [0 [::1]:6379] \"auth\" \"(redacted)\"\r\n".to_vec()
        );
    }

    #[test]
    fn no_byte_escapes_to_a_line_break_or_unquoted_text() {
        let every_byte: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        quote(&every_byte, &mut out);
        assert!(!out.contains(&b'\r') && !out.contains(&b'\n'));
        assert!(out.iter().all(|b| (0x20..=0x7e).contains(b)));
        // Every byte but the quotes themselves is escaped or printable: 95 printable
        // bytes, two of which (\\ and ") gain a backslash, five named escapes, and four
        // characters for each of the other 156.
        assert_eq!(out.len(), 2 + 95 + 2 + 5 * 2 + (256 - 95 - 5) * 4);
    }
}
