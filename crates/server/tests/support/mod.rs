//! The test harness: starts the real `hotkv-server` binary on a free port and talks
//! to it with the `redis` crate and with raw sockets.
#![allow(dead_code)] // each test binary uses part of the harness

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use resp::{parse_frame, Frame, FrameLimits};

pub struct Server {
    pub child: Child,
    pub port: u16,
    /// The server's directory (the lsm engine's store, the memory engine's RDB file),
    /// removed when the server is dropped.
    pub dir: Option<tempfile::TempDir>,
    /// On the lsm engine (else memory).
    pub lsm: bool,
}

/// The engine the shared tests run on: `HOTKV_TEST_ENGINE` (memory or lsm), memory by
/// default. `scripts/test.sh` runs them on both.
pub fn test_engine() -> String {
    std::env::var("HOTKV_TEST_ENGINE").unwrap_or_else(|_| "memory".into())
}

impl Server {
    /// Starts a server on a port the OS picks, learnt from its "ready" log line, so
    /// parallel tests never race for a port.
    pub fn start() -> Server {
        Self::start_with(&[])
    }

    /// Starts a server on the test engine with extra command-line arguments; an lsm
    /// engine gets a fresh directory.
    pub fn start_with(extra: &[&str]) -> Server {
        match test_engine().as_str() {
            "lsm" => {
                let dir = tempfile::tempdir().unwrap();
                Self::start_in(dir, extra)
            }
            _ => Self::start_memory(extra),
        }
    }

    /// Starts a server on the memory engine, for what only it has (key heat), in a
    /// fresh directory: none loads another's RDB file.
    pub fn start_memory(extra: &[&str]) -> Server {
        Self::start_memory_in(tempfile::tempdir().unwrap(), extra)
    }

    /// Starts a server on the memory engine in `dir` (which may hold an earlier
    /// server's RDB file).
    pub fn start_memory_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let path = dir.path().to_str().unwrap().to_string();
        Self::launch(&["--engine", "memory", "--dir", &path], extra, dir)
    }

    /// Starts a server on the lsm engine in `dir` (which may hold an earlier server's
    /// data).
    pub fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let path = dir.path().to_str().unwrap().to_string();
        Self::launch(&["--engine", "lsm", "--dir", &path], extra, dir)
    }

    /// The server stopped (SIGTERM) and started again on its directory if it runs on
    /// the lsm engine, to read back what it stored; itself on the memory engine.
    pub fn restarted_if_lsm(self) -> Server {
        if !self.lsm {
            return self;
        }
        let dir = self.stop().expect("an lsm server has a directory");
        Self::start_in(dir, &[])
    }

    fn launch(engine: &[&str], extra: &[&str], dir: tempfile::TempDir) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hotkv-server"))
            .args(["--port", "0"])
            .args(engine)
            .args(extra)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let port = ready_port(&mut child);
        let lsm = engine.contains(&"lsm");
        Server {
            child,
            port,
            dir: Some(dir),
            lsm,
        }
    }

    /// Kills the server with SIGKILL (no shutdown, no flush) and hands back its
    /// directory.
    pub fn kill(mut self) -> Option<tempfile::TempDir> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.dir.take()
    }

    /// Stops the server with SIGTERM, requires it to exit 0 within 10 s, and hands
    /// back its directory.
    pub fn stop(self) -> Option<tempfile::TempDir> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.exited("SIGTERM")
    }

    /// Requires the server, told to end by `after` (SIGTERM, SHUTDOWN), to exit 0
    /// within 10 s, and hands back its directory.
    pub fn exited(mut self, after: &str) -> Option<tempfile::TempDir> {
        for _ in 0..500 {
            if let Some(exit) = self.child.try_wait().unwrap() {
                assert!(
                    exit.success(),
                    "hotkv-server exited with {exit} after {after}"
                );
                return self.dir.take();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("hotkv-server did not exit after {after}");
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    pub fn alive(&self) {
        let mut c = self.client();
        let pong: String = redis::cmd("PING").query(&mut c).unwrap();
        assert_eq!(pong, "PONG");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port a starting server listens on, from its "ready" log line (its stderr must
/// be piped). Keeps draining the log afterwards so the server never blocks on a full
/// pipe.
pub fn ready_port(child: &mut Child) -> u16 {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines
            .next()
            .expect("hotkv-server exited before it was ready")
            .unwrap();
        if let Some(addr) = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("addr="))
        {
            break addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    port
}

/// Sends `request` and reads until the server closes or `want` bytes arrived.
pub fn exchange(s: &mut TcpStream, request: &[u8], want: usize) -> Vec<u8> {
    s.write_all(request).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < want {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read failed after {:?}: {e}", String::from_utf8_lossy(&got)),
        }
    }
    got
}

/// Runs a command given as words and converts the reply.
pub fn run<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// Runs a command that must fail; returns the error as Redis sent it (code, detail).
pub fn run_err(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
        Err(e) => format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
    }
}

/// One INFO field's value.
pub fn info_field(c: &mut redis::Connection, name: &str) -> String {
    let info: String = run(c, &["INFO", "everything"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO has no {name}"))
        .to_string()
}

/// Starts hotkv-server with `args` in `dir` expecting it to refuse to run: returns its
/// exit code and what it wrote to stderr.
pub fn refused_start(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hotkv-server"))
        .args(["--port", "0"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `cond` every 20 ms for up to `secs` seconds.
pub fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..secs * 50 {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Sends each request and checks the exact reply, on one connection, in order.
pub fn assert_script(s: &mut TcpStream, script: &[(&[u8], &[u8])]) {
    for (request, reply) in script {
        let got = exchange(s, request, reply.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(reply),
            "for {}",
            String::from_utf8_lossy(request)
        );
    }
}

/// A raw connection that tells replies from push messages.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Push messages that arrived while a reply was awaited, oldest first.
    pub pushes: VecDeque<Frame>,
}

impl Conn {
    pub fn open(server: &Server, resp3: bool) -> Conn {
        let mut c = Conn {
            stream: server.raw(),
            buf: Vec::new(),
            pushes: VecDeque::new(),
        };
        if resp3 {
            assert!(matches!(c.call(&["HELLO", "3"]), Frame::Map(_)));
        }
        c
    }

    pub fn id(&mut self) -> u64 {
        match self.call(&["CLIENT", "ID"]) {
            Frame::Integer(id) => id as u64,
            other => panic!("CLIENT ID answered {other:?}"),
        }
    }

    pub fn send(&mut self, args: &[&str]) {
        let mut out = Vec::new();
        Frame::command(args.iter().map(|a| a.as_bytes())).encode(resp::Protocol::Resp2, &mut out);
        self.stream.write_all(&out).unwrap();
    }

    /// The next frame, push or reply; `None` if nothing arrives within `wait`.
    pub fn next_frame(&mut self, wait: Duration) -> Option<Frame> {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        loop {
            if let Some((frame, n)) = parse_frame(&self.buf, &FrameLimits::default()).unwrap() {
                self.buf.drain(..n);
                return Some(frame);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("server closed the connection"),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return None
                }
                Err(e) => panic!("read failed: {e}"),
            }
        }
    }

    /// The reply to `args`; pushes that come first are kept for [`Conn::push`].
    pub fn call(&mut self, args: &[&str]) -> Frame {
        self.send(args);
        self.reply()
    }

    pub fn reply(&mut self) -> Frame {
        loop {
            match self.next_frame(Duration::from_secs(10)).expect("no reply") {
                Frame::Push(p) => self.pushes.push_back(Frame::Push(p)),
                reply => return reply,
            }
        }
    }

    /// The next push message, waiting up to 5 s for it.
    pub fn push(&mut self) -> Frame {
        self.try_push(Duration::from_secs(5))
            .expect("no push message arrived")
    }

    pub fn try_push(&mut self, wait: Duration) -> Option<Frame> {
        if let Some(p) = self.pushes.pop_front() {
            return Some(p);
        }
        match self.next_frame(wait)? {
            Frame::Push(p) => Some(Frame::Push(p)),
            reply => panic!("a reply nobody asked for: {reply:?}"),
        }
    }

    /// Asserts no push message comes: a PING's reply arrives first, and nothing after.
    pub fn no_push(&mut self) {
        assert_eq!(self.call(&["PING"]), Frame::Simple("PONG".into()));
        if let Some(p) = self.try_push(Duration::from_millis(200)) {
            panic!("unexpected push {p:?}");
        }
    }
}
