//! One client connection: read, run every complete request (pipelining), write the
//! replies, repeat.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use resp::{parse_request, Frame, Protocol, RequestLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::commands::{self, Action, Session};
use crate::db::Db;

/// Replies are written out once this much has piled up, even mid-pipeline, so a long
/// pipeline does not buffer all its replies.
const OUTPUT_FLUSH: usize = 64 * 1024;

static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

pub struct Connection {
    stream: TcpStream,
    db: Arc<Db>,
    input: Vec<u8>,
    output: Vec<u8>,
    session: Session,
}

impl Connection {
    pub fn new(stream: TcpStream, db: Arc<Db>) -> Connection {
        let id = NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed);
        Connection {
            stream,
            db,
            input: Vec::new(),
            output: Vec::new(),
            session: Session {
                id,
                proto: Protocol::Resp2,
            },
        }
    }

    /// Serves the client until it disconnects, sends QUIT or a malformed request, or
    /// `stop` turns true (requests already read are answered first).
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) -> io::Result<()> {
        let limits = RequestLimits::default();
        loop {
            let mut consumed = 0;
            let mut close = false;
            loop {
                match parse_request(&self.input[consumed..], &limits) {
                    Ok(Some((args, n))) => {
                        consumed += n;
                        if args.is_empty() {
                            continue;
                        }
                        match commands::execute(&self.db, &mut self.session, &args) {
                            Action::Reply(frame) => {
                                frame.encode(self.session.proto, &mut self.output)
                            }
                            Action::Close(frame) => {
                                frame.encode(self.session.proto, &mut self.output);
                                close = true;
                                break;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        // As Redis: reply, then close; the stream cannot be resynchronised.
                        Frame::error(format!("ERR {e}"))
                            .encode(self.session.proto, &mut self.output);
                        close = true;
                        break;
                    }
                }
                if self.output.len() >= OUTPUT_FLUSH {
                    self.stream.write_all(&self.output).await?;
                    self.output.clear();
                }
            }
            self.input.drain(..consumed);
            if !self.output.is_empty() {
                self.stream.write_all(&self.output).await?;
                self.output.clear();
            }
            if close || *stop.borrow() {
                return Ok(());
            }
            self.input.reserve(16 * 1024);
            tokio::select! {
                read = self.stream.read_buf(&mut self.input) => {
                    if read? == 0 {
                        return Ok(());
                    }
                }
                _ = stop.changed() => return Ok(()),
            }
        }
    }
}
