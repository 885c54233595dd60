//! Keyspace notifications (`notify-keyspace-events`), as Redis publishes them: for
//! each change of the classes chosen, a message on `__keyspace@0__:<key>` carrying the
//! event's name (K) and one on `__keyevent@0__:<event>` carrying the key (E).
//!
//! Events are queued where they happen, commands and the keyspace itself (expiry,
//! new keys), and published in order once the command that made them ends, or by the
//! background tick for active expiry ([`KeyspaceEvents::take`]).

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

pub const KEYSPACE: u32 = 1;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;
/// `A`: every class but key misses and new keys, as in Redis.
const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The class letters in the order Redis prints them (after `A` or the classes, K, E, m).
const CLASSES: [(char, u32); 11] = [
    ('g', GENERIC),
    ('$', STRING),
    ('l', LIST),
    ('s', SET),
    ('h', HASH),
    ('z', ZSET),
    ('x', EXPIRED),
    ('e', EVICTED),
    ('t', STREAM),
    ('d', MODULE),
    ('n', NEW),
];

/// Parses a `notify-keyspace-events` value; `None` names the first bad character's
/// problem as Redis does (the caller words the error).
pub fn parse(text: &str) -> Option<u32> {
    let mut flags = 0;
    for c in text.chars() {
        flags |= match c {
            'A' => ALL,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => KEY_MISS,
            c => CLASSES.iter().find(|(l, _)| *l == c)?.1,
        };
    }
    Some(flags)
}

/// The canonical text of `flags`, as CONFIG GET shows it (`KEA` reads back `AKE`).
/// Like Redis, `n` is not printed next to `A`.
pub fn format(flags: u32) -> String {
    let mut text = String::new();
    if flags & ALL == ALL {
        text.push('A');
    } else {
        text.extend(
            CLASSES
                .iter()
                .filter(|(_, f)| flags & f != 0)
                .map(|(l, _)| *l),
        );
    }
    for (letter, flag) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
        if flags & flag != 0 {
            text.push(letter);
        }
    }
    text
}

pub const INVALID: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// One change to publish.
pub struct Event {
    pub name: &'static str,
    pub key: Vec<u8>,
}

#[derive(Default)]
pub struct KeyspaceEvents {
    flags: AtomicU32,
    queued: Mutex<Vec<Event>>,
    /// Events in `queued`: the one load a command pays when nothing happened.
    pending: AtomicUsize,
}

impl KeyspaceEvents {
    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Whether events of `class` are published at all (a class chosen, and K or E).
    pub fn wants(&self, class: u32) -> bool {
        let flags = self.flags();
        flags & class != 0 && flags & (KEYSPACE | KEYEVENT) != 0
    }

    /// Queues the event `name` of `class` for `key`, if that class is published.
    #[inline]
    pub fn fire(&self, class: u32, name: &'static str, key: &[u8]) {
        if self.wants(class) {
            self.queue(name, key);
        }
    }

    #[cold]
    fn queue(&self, name: &'static str, key: &[u8]) {
        let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        queued.push(Event {
            name,
            key: key.to_vec(),
        });
        self.pending.fetch_add(1, Ordering::Release);
    }

    /// Whether any notification waits to be taken.
    #[inline]
    pub fn any_queued(&self) -> bool {
        self.pending.load(Ordering::Acquire) != 0
    }

    /// The queued events, oldest first.
    pub fn take(&self) -> Vec<Event> {
        if !self.any_queued() {
            return Vec::new();
        }
        let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
        self.pending.fetch_sub(queued.len(), Ordering::Relaxed);
        std::mem::take(&mut *queued)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_back_as_redis_prints_them() {
        for (given, shown) in [
            ("KEA", "AKE"),
            ("AKE", "AKE"),
            ("Kg$", "g$K"),
            ("E", "E"),
            ("x", "x"),
            ("KEAn", "AKE"),
            ("Km", "Km"),
            ("", ""),
            ("Exg", "gxE"),
        ] {
            assert_eq!(format(parse(given).unwrap()), shown, "{given}");
        }
        assert_eq!(parse("Kq"), None);
    }

    #[test]
    fn only_chosen_classes_are_queued_and_only_with_k_or_e() {
        let events = KeyspaceEvents::default();
        events.fire(STRING, "set", b"k");
        events.set_flags(parse("$").unwrap());
        events.fire(STRING, "set", b"k");
        assert!(events.take().is_empty());
        events.set_flags(parse("E$").unwrap());
        events.fire(GENERIC, "del", b"k");
        events.fire(STRING, "set", b"k");
        let taken = events.take();
        assert_eq!(taken.len(), 1);
        assert_eq!((taken[0].name, taken[0].key.as_slice()), ("set", &b"k"[..]));
        assert!(events.take().is_empty());
    }
}
