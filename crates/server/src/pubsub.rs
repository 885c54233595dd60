//! Publish/subscribe: who listens to which channel, pattern or shard channel, and
//! the delivery of what is published to them.
//!
//! A message is encoded once per protocol and queued in each subscriber's outbox
//! ([`Client::deliver`]); its connection writes it between replies. Subscribers that
//! do not read are disconnected at the `pubsub` class's output limits.
//! Without a cluster, shard channels (SSUBSCRIBE, SPUBLISH) are a namespace of their
//! own, as on a single Redis node.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use resp::{Frame, Protocol};

use crate::clients::{Client, OutputLimit};

/// What a client subscribes to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Channel, Kind::Pattern, Kind::Shard];

    pub fn index(self) -> usize {
        self as usize
    }
}

type Subscribers = RwLock<HashMap<Vec<u8>, Vec<Arc<Client>>>>;

#[derive(Default)]
pub struct PubSub {
    /// For each kind, each name with a subscriber and its subscribers.
    subscribers: [Subscribers; 3],
}

impl PubSub {
    fn map(&self, kind: Kind) -> &Subscribers {
        &self.subscribers[kind.index()]
    }

    /// Adds `client` to `name`'s subscribers; the caller knows it was not one.
    pub fn subscribe(&self, kind: Kind, name: &[u8], client: &Arc<Client>) {
        let mut map = self.map(kind).write().unwrap_or_else(|e| e.into_inner());
        map.entry(name.to_vec()).or_default().push(client.clone());
    }

    pub fn unsubscribe(&self, kind: Kind, name: &[u8], id: u64) {
        let mut map = self.map(kind).write().unwrap_or_else(|e| e.into_inner());
        if let Some(subscribers) = map.get_mut(name) {
            subscribers.retain(|c| c.id != id);
            if subscribers.is_empty() {
                map.remove(name);
            }
        }
    }

    /// PUBLISH (or SPUBLISH, `shard`): sends `message` to the channel's subscribers
    /// and, for PUBLISH, to those of every matching pattern; returns how many
    /// deliveries that made, as Redis counts them. A subscriber over `limit` (the
    /// pubsub class's output limit) is disconnected instead.
    pub fn publish(
        &self,
        shard: bool,
        channel: &[u8],
        message: &[u8],
        limit: OutputLimit,
    ) -> usize {
        let (kind, word) = if shard {
            (Kind::Shard, "smessage")
        } else {
            (Kind::Channel, "message")
        };
        let mut sent = 0;
        {
            let map = self.map(kind).read().unwrap_or_else(|e| e.into_inner());
            if let Some(subscribers) = map.get(channel) {
                let parts = vec![
                    Frame::bulk(word),
                    Frame::bulk(channel),
                    Frame::bulk(message),
                ];
                sent += deliver(subscribers, parts, limit);
            }
        }
        if shard {
            return sent;
        }
        let patterns = self
            .map(Kind::Pattern)
            .read()
            .unwrap_or_else(|e| e.into_inner());
        for (pattern, subscribers) in patterns.iter() {
            if !crate::glob::glob_match(pattern, channel, false) {
                continue;
            }
            let parts = vec![
                Frame::bulk("pmessage"),
                Frame::bulk(pattern),
                Frame::bulk(channel),
                Frame::bulk(message),
            ];
            sent += deliver(subscribers, parts, limit);
        }
        sent
    }

    /// The names of `kind` with subscribers, those matching `pattern` if given
    /// (PUBSUB CHANNELS, SHARDCHANNELS).
    pub fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let map = self.map(kind).read().unwrap_or_else(|e| e.into_inner());
        map.keys()
            .filter(|name| pattern.is_none_or(|p| crate::glob::glob_match(p, name, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of `name` (PUBSUB NUMSUB, SHARDNUMSUB).
    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> usize {
        let map = self.map(kind).read().unwrap_or_else(|e| e.into_inner());
        map.get(name).map_or(0, Vec::len)
    }

    /// Whether client `id` subscribes to something `keep` refuses (given the kind
    /// and the name). Looks through every subscription, so it is for rare
    /// administrative checks, not for each message.
    pub fn subscribes_outside(&self, id: u64, keep: impl Fn(Kind, &[u8]) -> bool) -> bool {
        Kind::ALL.into_iter().any(|kind| {
            let map = self.map(kind).read().unwrap_or_else(|e| e.into_inner());
            map.iter().any(|(name, subscribers)| {
                subscribers.iter().any(|c| c.id == id) && !keep(kind, name)
            })
        })
    }

    /// Names of `kind` with at least one subscriber (INFO, PUBSUB NUMPAT).
    pub fn len(&self, kind: Kind) -> usize {
        self.map(kind)
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// Sends the message `parts` to each of `subscribers`; returns how many there were.
fn deliver(subscribers: &[Arc<Client>], parts: Vec<Frame>, limit: OutputLimit) -> usize {
    let encoded = Encoded::new(parts);
    for c in subscribers {
        c.deliver(encoded.for_client(c), limit);
    }
    subscribers.len()
}

/// A message as a push, encoded for each protocol the first time a subscriber
/// speaking it needs it.
struct Encoded {
    frame: Frame,
    resp2: std::cell::OnceCell<Vec<u8>>,
    resp3: std::cell::OnceCell<Vec<u8>>,
}

impl Encoded {
    fn new(parts: Vec<Frame>) -> Encoded {
        Encoded {
            frame: Frame::Push(parts),
            resp2: Default::default(),
            resp3: Default::default(),
        }
    }

    fn for_client(&self, c: &Client) -> &[u8] {
        let (cell, proto) = if c.resp.load(Ordering::Relaxed) == 3 {
            (&self.resp3, Protocol::Resp3)
        } else {
            (&self.resp2, Protocol::Resp2)
        };
        cell.get_or_init(|| {
            let mut out = Vec::new();
            self.frame.encode(proto, &mut out);
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{test_client as client, test_outbox as client_outbox};

    const LIMIT: OutputLimit = OutputLimit {
        hard: 1 << 20,
        soft: 0,
        soft_secs: 0,
        outbox_only: false,
    };

    #[test]
    fn messages_reach_channel_and_pattern_subscribers_in_their_protocol() {
        let p = PubSub::default();
        let (a, b) = (client(1, 2), client(2, 3));
        p.subscribe(Kind::Channel, b"news", &a);
        p.subscribe(Kind::Pattern, b"n*", &b);
        p.subscribe(Kind::Shard, b"news", &b);
        assert_eq!(p.publish(false, b"news", b"hi", LIMIT), 2);
        assert_eq!(
            client_outbox(&a),
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert_eq!(
            client_outbox(&b),
            b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert_eq!(p.publish(true, b"news", b"s", LIMIT), 1);
        assert_eq!(
            client_outbox(&b),
            b">3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$1\r\ns\r\n"
        );
        assert_eq!(p.publish(false, b"other", b"x", LIMIT), 0);
        p.unsubscribe(Kind::Channel, b"news", 1);
        assert_eq!(p.len(Kind::Channel), 0);
        assert_eq!(p.subscribers(Kind::Shard, b"news"), 1);
        assert_eq!(p.names(Kind::Pattern, Some(b"n\\*")), vec![b"n*".to_vec()]);
    }
}
