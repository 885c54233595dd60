//! CONFIG SET port: the command binds the new port itself, so that it can refuse a
//! port it cannot take and change nothing, and hands the bound listener to the accept
//! loop in `main.rs`, which drops the old one. Port 0 closes the listener, as in Redis:
//! connections already open stay, new ones are refused until a port is set again.

use std::net::{IpAddr, TcpListener};
use std::sync::Mutex;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// The listener the accept loop is to take next (`None`: stop listening).
pub type Move = Option<TcpListener>;

pub struct ListenerMoves {
    sender: UnboundedSender<Move>,
    /// Taken once, by the accept loop.
    receiver: Mutex<Option<UnboundedReceiver<Move>>>,
}

impl Default for ListenerMoves {
    fn default() -> ListenerMoves {
        let (sender, receiver) = unbounded_channel();
        ListenerMoves {
            sender,
            receiver: Mutex::new(Some(receiver)),
        }
    }
}

impl ListenerMoves {
    /// Listens on `port` at `addr` (port 0: nowhere) from now on; an error if the port
    /// cannot be bound, with the old listener left as it was.
    pub fn move_to(&self, addr: IpAddr, port: u16) -> std::io::Result<()> {
        let listener = match port {
            0 => None,
            port => {
                let listener = TcpListener::bind((addr, port))?;
                // Tokio takes over a listener only in non-blocking mode.
                listener.set_nonblocking(true)?;
                Some(listener)
            }
        };
        // Unsent only if the accept loop has ended (shutting down), when no listener
        // is wanted anyway.
        let _ = self.sender.send(listener);
        Ok(())
    }

    /// The moves, for the accept loop; `None` once taken.
    pub fn take_receiver(&self) -> Option<UnboundedReceiver<Move>> {
        self.receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
