//! MIGRATE's connections to the servers it moves keys to, kept open between calls as
//! Redis keeps them: at most 64, each closed once unused for 10 seconds (INFO's
//! `migrate_cached_sockets` counts them). A connection remembers the database it last
//! selected, so that a MIGRATE to the same one sends no SELECT.
//!
//! The I/O is blocking, with MIGRATE's timeout on every step, as Redis's: MIGRATE runs
//! alone (the keys it moves must not change while they travel), so there is nothing
//! else the connection's thread could do for it meanwhile.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Redis's MIGRATE_SOCKET_CACHE_ITEMS and MIGRATE_SOCKET_CACHE_TTL.
const MAX_OPEN: usize = 64;
const IDLE_LIMIT: Duration = Duration::from_secs(10);
/// The replies MIGRATE reads are one-line statuses and errors; a longer line is not
/// one of them, and is not buffered without end.
const MAX_LINE: usize = 64 * 1024;

/// One connection to a target server.
pub struct Target {
    conn: BufReader<TcpStream>,
    /// The database the last successful MIGRATE selected; `None`: unknown.
    pub selected: Option<i64>,
    last_use: Instant,
}

/// Why [`MigrateSockets::take`] has no connection to give. Redis connects without
/// blocking and waits for the socket to become writable, which a refused connection
/// makes it at once: it learns of the refusal at its first write, and says so.
#[derive(Debug)]
pub enum NoConnection {
    /// No address for the host, or none answered within the timeout.
    Unreachable,
    /// An address answered with a refusal (or another error).
    Refused,
}

#[derive(Default)]
pub struct MigrateSockets {
    /// By `host:port` as the client wrote them. A connection in use is out of the map.
    open: Mutex<HashMap<String, Target>>,
}

impl MigrateSockets {
    /// The cached connection to `host:port`, or a new one opened within `timeout`.
    pub fn take(&self, host: &str, port: &str, timeout: Duration) -> Result<Target, NoConnection> {
        if let Some(target) = self.lock().remove(&name(host, port)) {
            return Ok(target);
        }
        // Redis tries any port it is given (`abc` is port 0) and meets a refusal.
        let port: u16 = port.parse().map_err(|_| NoConnection::Refused)?;
        let addresses = (host, port)
            .to_socket_addrs()
            .map_err(|_| NoConnection::Unreachable)?;
        let mut failure = NoConnection::Unreachable;
        for address in addresses {
            match TcpStream::connect_timeout(&address, timeout) {
                Ok(stream) => {
                    stream
                        .set_nodelay(true)
                        .map_err(|_| NoConnection::Refused)?;
                    return Ok(Target {
                        conn: BufReader::new(stream),
                        selected: None,
                        last_use: Instant::now(),
                    });
                }
                Err(e) if timed_out(&e) => {}
                Err(_) => failure = NoConnection::Refused,
            }
        }
        Err(failure)
    }

    /// Keeps `target` for the next MIGRATE to `host:port` (a connection that failed is
    /// dropped instead, which closes it). A full cache closes one at random for it.
    pub fn put_back(&self, host: &str, port: &str, mut target: Target) {
        target.last_use = Instant::now();
        let mut open = self.lock();
        if open.len() >= MAX_OPEN {
            if let Some(victim) = open.keys().next().cloned() {
                open.remove(&victim);
            }
        }
        open.insert(name(host, port), target);
    }

    /// Closes the connections unused for 10 seconds (the server's periodic work).
    pub fn close_idle(&self) {
        self.lock()
            .retain(|_, target| target.last_use.elapsed() < IDLE_LIMIT);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Target>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn name(host: &str, port: &str) -> String {
    format!("{host}:{port}")
}

impl Target {
    /// Writes all of `bytes`, each write allowed `timeout`.
    pub fn send(&mut self, bytes: &[u8], timeout: Duration) -> io::Result<()> {
        let stream = self.conn.get_mut();
        stream.set_write_timeout(Some(timeout))?;
        stream.write_all(bytes)?;
        stream.flush()
    }

    /// The next reply line without its CRLF, read within `timeout` however the bytes
    /// trickle in.
    pub fn read_line(&mut self, timeout: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut line = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.conn.get_ref().set_read_timeout(Some(left))?;
            let available = self.conn.fill_buf()?;
            if available.is_empty() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let (taken, done) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            line.extend_from_slice(&available[..taken]);
            self.conn.consume(taken);
            if line.len() > MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a reply line too long",
                ));
            }
            if done {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
        }
    }
}

/// Whether an I/O failure is the timeout running out (which a retry would not mend).
pub fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn listener() -> (TcpListener, String) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        (listener, port)
    }

    #[test]
    fn connections_are_reused_until_idle_and_bounded() {
        let sockets = MigrateSockets::default();
        let (listener, port) = listener();
        let target = sockets
            .take("127.0.0.1", &port, Duration::from_secs(1))
            .unwrap();
        let opened = target.conn.get_ref().local_addr().unwrap();
        let (_accepted, _) = listener.accept().unwrap();
        sockets.put_back("127.0.0.1", &port, target);
        assert_eq!(sockets.len(), 1);
        let mut target = sockets
            .take("127.0.0.1", &port, Duration::from_secs(1))
            .unwrap();
        assert_eq!(target.conn.get_ref().local_addr().unwrap(), opened);
        assert_eq!(sockets.len(), 0, "a connection in use is out of the cache");
        target.last_use = Instant::now() - IDLE_LIMIT;
        sockets.lock().insert(name("127.0.0.1", &port), target);
        sockets.close_idle();
        assert_eq!(sockets.len(), 0);

        let mut kept = Vec::new();
        for i in 0..MAX_OPEN + 3 {
            let target = sockets
                .take("127.0.0.1", &port, Duration::from_secs(1))
                .unwrap();
            kept.push(listener.accept().unwrap());
            sockets.put_back("127.0.0.1", &i.to_string(), target);
            assert_eq!(sockets.len(), (i + 1).min(MAX_OPEN));
        }
    }

    #[test]
    fn lines_are_read_across_segments_and_bounded() {
        let (listener, port) = listener();
        let sockets = MigrateSockets::default();
        let mut target = sockets
            .take("127.0.0.1", &port, Duration::from_secs(5))
            .unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        target.send(b"PING\r\n", Duration::from_secs(5)).unwrap();
        let mut got = [0; 6];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"PING\r\n");
        let writer = std::thread::spawn(move || {
            for part in [&b"+O"[..], b"K\r\n-ERR no\r", b"\n"] {
                peer.write_all(part).unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
            peer.write_all(&vec![b'x'; MAX_LINE + 10]).unwrap();
            peer
        });
        let timeout = Duration::from_secs(5);
        assert_eq!(target.read_line(timeout).unwrap(), b"+OK");
        assert_eq!(target.read_line(timeout).unwrap(), b"-ERR no");
        let too_long = target.read_line(timeout).unwrap_err();
        assert_eq!(too_long.kind(), io::ErrorKind::InvalidData);
        let peer = writer.join().unwrap();
        // Nothing more comes: the timeout ends the wait.
        let mut silent = sockets
            .take("127.0.0.1", &port, Duration::from_secs(1))
            .unwrap();
        let (_quiet, _) = listener.accept().unwrap();
        let e = silent.read_line(Duration::from_millis(50)).unwrap_err();
        assert!(timed_out(&e), "{e:?}");
        drop(peer);
        assert_eq!(
            target.read_line(timeout).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof,
            "the peer's close ends the read"
        );
    }

    #[test]
    fn an_unreachable_target_or_bad_port_is_an_error() {
        let sockets = MigrateSockets::default();
        assert!(sockets
            .take("127.0.0.1", "not-a-port", Duration::from_secs(1))
            .is_err());
        let (listener, port) = listener();
        drop(listener);
        assert!(sockets
            .take("127.0.0.1", &port, Duration::from_secs(1))
            .is_err());
    }
}
