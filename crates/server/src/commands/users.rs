//! ACL users, as Redis 7.0 keeps them (src/acl.c): who may connect, with which
//! passwords, and what each may run on which keys and channels.
//!
//! A user holds password hashes (SHA-256, as `ACL GETUSER` shows them) and selectors:
//! the root one, set by rules given outside parentheses, and any added as `(rules)`.
//! A command is allowed if one selector allows all of it: the command (one bit per
//! command and subcommand, numbered as the statistics number them), each key it names
//! (a pattern giving the read or write access the key's spec says the command needs)
//! and each channel it publishes or subscribes to.
//!
//! Connections keep the user they authenticated as; a change to any user bumps a
//! generation number that each session compares with the one it saw before a command,
//! so a change reaches every connection at its next command. A user allowed everything
//! (the default user, unless changed) skips the checks altogether.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::key_specs::{self, ACCESS, DELETE, INSERT, UPDATE};
use super::{stat_slots, subcommands_of, NO_AUTH, TABLE};
use crate::glob::glob_match;

/// Redis 7.0's ACL categories, in its order (the order `ACL CAT` lists them and
/// `ACL GETUSER` tries them when it describes a user's commands).
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

pub const DEFAULT_USER: &[u8] = b"default";

/// A command, or a container's subcommand, as ACL rules name it.
struct Slot {
    /// `get`, `config|get`.
    name: String,
    /// Bit i: in `CATEGORIES[i]`.
    categories: u32,
    /// A container's subcommands' slots.
    subcommands: Range<usize>,
    /// A subcommand's container.
    container: Option<usize>,
    no_auth: bool,
}

fn slots() -> &'static [Slot] {
    static SLOTS: OnceLock<Vec<Slot>> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let numbered = stat_slots();
        let mask = |flags: u32, acl: u16| {
            super::command::categories(flags, acl)
                .iter()
                .map(|c| {
                    1u32 << CATEGORIES
                        .iter()
                        .position(|k| k == c)
                        .expect("known category")
                })
                .fold(0, |m, b| m | b)
        };
        let mut slots: Vec<Slot> = numbered
            .names
            .iter()
            .map(|name| Slot {
                name: name.clone(),
                categories: 0,
                subcommands: 0..0,
                container: None,
                no_auth: false,
            })
            .collect();
        for (i, c) in TABLE.iter().enumerate() {
            slots[i].categories = mask(c.flags, c.acl);
            slots[i].no_auth = c.flags & NO_AUTH != 0;
            if let Some((first, subs)) = numbered.containers[i] {
                slots[i].subcommands = first..first + subs.len();
                for (j, s) in subs.iter().enumerate() {
                    let slot = &mut slots[first + j];
                    slot.categories = mask(s.flags, s.acl);
                    slot.container = Some(i);
                    slot.no_auth = s.flags & NO_AUTH != 0;
                }
            }
        }
        slots
    })
}

/// The slot a rule's command name (`get`, `config|get`, any case) names.
fn slot_named(name: &[u8]) -> Option<usize> {
    let numbered = stat_slots();
    let (command, sub) = match name.iter().position(|&b| b == b'|') {
        None => (name, None),
        Some(bar) => (&name[..bar], Some(&name[bar + 1..])),
    };
    let (index, c) = super::lookup(command)?;
    match sub {
        None => Some(index),
        Some(sub) => {
            let (first, _) = numbered.containers[index]?;
            let at = subcommands_of(c.name)
                .iter()
                .position(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))?;
            Some(first + at)
        }
    }
}

fn category_bit(name: &[u8]) -> Option<u32> {
    let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    CATEGORIES
        .iter()
        .position(|c| *c == name)
        .map(|i| 1u32 << i)
}

/// Why a rule was refused, in Redis's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    UnknownCommand,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
struct KeyPattern {
    pattern: Vec<u8>,
    read: bool,
    write: bool,
}

impl KeyPattern {
    fn describe(&self) -> String {
        let prefix = match (self.read, self.write) {
            (true, false) => "%R~",
            (false, true) => "%W~",
            _ => "~",
        };
        format!("{prefix}{}", String::from_utf8_lossy(&self.pattern))
    }
}

/// What one selector allows.
#[derive(Clone, PartialEq, Eq)]
struct Selector {
    /// One bit per slot.
    commands: Vec<u64>,
    /// Set by `+@all` and cleared by `-@all` only: the user was given every command,
    /// whatever is taken away after (Redis's reserved bit for commands yet to come).
    every_command: bool,
    /// `+select|0`: a first argument allowed for a command not allowed itself.
    first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    all_keys: bool,
    keys: Vec<KeyPattern>,
    all_channels: bool,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    /// A new selector allows nothing (Redis's `acl-pubsub-default` is resetchannels).
    fn new() -> Selector {
        Selector {
            commands: vec![0; slots().len().div_ceil(64)],
            every_command: false,
            first_args: BTreeMap::new(),
            all_keys: false,
            keys: Vec::new(),
            all_channels: false,
            channels: Vec::new(),
        }
    }

    fn bit(&self, slot: usize) -> bool {
        self.commands[slot / 64] & (1 << (slot % 64)) != 0
    }

    fn set_bit(&mut self, slot: usize, on: bool) {
        if on {
            self.commands[slot / 64] |= 1 << (slot % 64);
        } else {
            self.commands[slot / 64] &= !(1 << (slot % 64));
        }
    }

    /// A command and, for a container, its subcommands.
    fn change(&mut self, slot: usize, on: bool) {
        self.set_bit(slot, on);
        self.first_args.remove(&slot);
        for sub in slots()[slot].subcommands.clone() {
            self.set_bit(sub, on);
        }
    }

    fn change_category(&mut self, category: u32, on: bool) {
        for (i, s) in slots().iter().enumerate() {
            if s.categories & category != 0 {
                if s.container.is_none() {
                    self.change(i, on);
                } else {
                    self.set_bit(i, on);
                }
            }
        }
    }

    fn set_everything(&mut self, on: bool) {
        let fill = if on { u64::MAX } else { 0 };
        self.commands.iter_mut().for_each(|w| *w = fill);
        self.every_command = on;
        self.first_args.clear();
    }

    /// `allkeys`, or a pattern of `*` that may be read.
    fn reads_every_key(&self) -> bool {
        self.all_keys || self.keys.iter().any(|k| k.read && k.pattern == b"*")
    }

    fn allows_everything(&self) -> bool {
        self.all_keys && self.all_channels && (0..slots().len()).all(|i| self.bit(i))
    }

    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => self.set_everything(true),
            b"nocommands" | b"-@all" => self.set_everything(false),
            [b'~' | b'%', ..] => self.add_key_pattern(op)?,
            [b'&', ..] => {
                if self.all_channels {
                    return Err(RuleError::ChannelAfterAll);
                }
                let pattern = &op[1..];
                if has_spaces(pattern) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pattern) {
                    self.channels.push(pattern.to_vec());
                }
                self.all_channels = false;
            }
            [sign @ (b'+' | b'-'), b'@', category @ ..] => {
                let bit = category_bit(category).ok_or(RuleError::UnknownCommand)?;
                self.change_category(bit, *sign == b'+');
            }
            [b'+', name @ ..] => self.allow_command(name)?,
            [b'-', name @ ..] => {
                let slot = slot_named(name).ok_or(RuleError::UnknownCommand)?;
                self.change(slot, false);
            }
            _ => return Err(RuleError::Syntax),
        }
        Ok(())
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (mut read, mut write) = (false, false);
        let mut at = 1;
        if op[0] == b'%' {
            loop {
                match op.get(at).map(u8::to_ascii_uppercase) {
                    Some(b'R') if !read => read = true,
                    Some(b'W') if !write => write = true,
                    Some(b'~') => {
                        at += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                at += 1;
            }
        } else {
            (read, write) = (true, true);
        }
        let pattern = &op[at..];
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+name`, `+container|sub`, or `+command|first-arg` for a command without
    /// subcommands (Redis's deprecated form, as `+select|0`).
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let slot = slot_named(name).ok_or(RuleError::UnknownCommand)?;
            self.change(slot, true);
            return Ok(());
        };
        let container = slot_named(&name[..bar]).ok_or(RuleError::UnknownCommand)?;
        if slots()[container].container.is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        let first_arg = &name[bar + 1..];
        if first_arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !slots()[container].subcommands.is_empty() {
            let slot = slot_named(name).ok_or(RuleError::UnknownCommand)?;
            self.change(slot, true);
        } else {
            let allowed = self.first_args.entry(container).or_default();
            if !allowed.iter().any(|a| a.eq_ignore_ascii_case(first_arg)) {
                allowed.push(first_arg.to_ascii_lowercase());
            }
        }
        Ok(())
    }

    /// Whether this selector allows the call `args` of the command counted in `slot`.
    fn check(&self, slot: usize, call: &Call) -> Result<(), Denied> {
        let s = &slots()[slot];
        if !s.no_auth && !self.bit(slot) {
            let allowed_first = self.first_args.get(&slot).is_some_and(|firsts| {
                let at = if s.container.is_some() { 2 } else { 1 };
                call.args
                    .get(at)
                    .is_some_and(|a| firsts.iter().any(|f| f.eq_ignore_ascii_case(a)))
            });
            if !allowed_first {
                return Err(Denied::Command);
            }
        }
        if !self.all_keys {
            for &(at, flags) in &call.keys {
                let needs_read = flags & ACCESS != 0;
                let needs_write = flags & (INSERT | DELETE | UPDATE) != 0;
                let allowed = self.keys.iter().any(|k| {
                    (k.read || !needs_read)
                        && (k.write || !needs_write)
                        && glob_match(&k.pattern, &call.args[at], false)
                });
                if !allowed {
                    return Err(Denied::Key(at));
                }
            }
        }
        if !self.all_channels {
            for &(at, pattern) in &call.channels {
                let channel = &call.args[at];
                let allowed = self.channels.iter().any(|c| {
                    if pattern {
                        c == channel
                    } else {
                        glob_match(c, channel, false)
                    }
                });
                if !allowed {
                    return Err(Denied::Channel(at));
                }
            }
        }
        Ok(())
    }

    /// The rules that give this selector's commands, as Redis writes them: `+@all` or
    /// `-@all`, then the categories that fit best, then single commands.
    fn describe_commands(&self) -> String {
        let mut rules = Vec::new();
        let additive = !self.every_command;
        let mut fake = Selector::new();
        fake.set_everything(!additive);
        rules.push(if additive { "-@all" } else { "+@all" }.to_string());
        // Each round picks the category with the fewest commands the rule would get
        // wrong (more right than wrong), among those not yet used.
        let mut left = self.clone();
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best: Option<(usize, usize, usize)> = None;
            for (c, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (on, off) = left.count_category(1 << c);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                let better = best.is_none_or(|(_, min_diff, max_same)| {
                    diff < min_diff || (diff == min_diff && same > max_same)
                });
                if same > diff && better {
                    best = Some((c, diff, same));
                }
            }
            let Some((c, _, _)) = best else { break };
            fake.change_category(1 << c, additive);
            left.change_category(1 << c, !additive);
            let sign = if additive { '+' } else { '-' };
            rules.push(format!("{sign}@{}", CATEGORIES[c]));
            applied[c] = true;
        }
        // Then single commands, each container followed by its subcommands.
        for (i, slot) in slots().iter().enumerate() {
            if slot.container.is_some() {
                continue;
            }
            for s in std::iter::once(i).chain(slot.subcommands.clone()) {
                let want = self.bit(s);
                if want != fake.bit(s) {
                    let sign = if want { '+' } else { '-' };
                    rules.push(format!("{sign}{}", slots()[s].name));
                    fake.change(s, want);
                }
                if !want {
                    for first in self.first_args.get(&s).into_iter().flatten() {
                        rules.push(format!(
                            "+{}|{}",
                            slots()[s].name,
                            String::from_utf8_lossy(first)
                        ));
                    }
                }
            }
        }
        debug_assert!(
            fake.commands == self.commands,
            "described rules give the bits"
        );
        rules.join(" ")
    }

    /// Commands in `category` this selector allows and denies.
    fn count_category(&self, category: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for (i, s) in slots().iter().enumerate() {
            if s.categories & category != 0 {
                if self.bit(i) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".to_string();
        }
        let keys: Vec<String> = self.keys.iter().map(KeyPattern::describe).collect();
        keys.join(" ")
    }

    fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".to_string();
        }
        let channels: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        channels.join(" ")
    }

    /// Keys, channels and commands in ACL LIST's form.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.all_keys {
            parts.push("~*".to_string());
        } else {
            parts.extend(self.keys.iter().map(KeyPattern::describe));
        }
        if self.all_channels {
            parts.push("&*".to_string());
        } else {
            parts.push("resetchannels".to_string());
            parts.extend(
                self.channels
                    .iter()
                    .map(|c| format!("&{}", String::from_utf8_lossy(c))),
            );
        }
        parts.push(self.describe_commands());
        parts.join(" ")
    }
}

/// `s` without any of `chars` at either end.
fn trim<'a>(s: &'a [u8], chars: &[u8]) -> &'a [u8] {
    let Some(start) = s.iter().position(|b| !chars.contains(b)) else {
        return &[];
    };
    let end = s
        .iter()
        .rposition(|b| !chars.contains(b))
        .map_or(start, |i| i + 1);
    &s[start..end]
}

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&b| b.is_ascii_whitespace() || b == 0)
}

pub fn hash_password(password: &[u8]) -> String {
    Sha256::digest(password)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The password hash a `>pw`, `<pw`, `#hash` or `!hash` rule names.
fn rule_hash(rule: &[u8]) -> Result<String, RuleError> {
    let (kind, rest) = (rule[0], &rule[1..]);
    if kind == b'>' || kind == b'<' {
        Ok(hash_password(rest))
    } else if valid_hash(rest) {
        Ok(String::from_utf8_lossy(rest).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

fn valid_hash(hash: &[u8]) -> bool {
    hash.len() == 64 && hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A call as the checks see it: its arguments, the keys it names with what it does to
/// each, and the channels it names (and whether as a PSUBSCRIBE pattern).
pub struct Call<'a> {
    args: &'a [Vec<u8>],
    keys: Vec<(usize, u16)>,
    channels: Vec<(usize, bool)>,
}

impl<'a> Call<'a> {
    pub fn new(slot: usize, args: &'a [Vec<u8>]) -> Call<'a> {
        let (index, _) = super::lookup(&args[0]).expect("a known command");
        let (_, specs) = super::flags_and_keys(index, slot);
        // `redis.acl_check_cmd` checks calls whose arity may not hold: their keys
        // cannot be told, and only the command is checked.
        let keys = if super::check_arity(index, slot, args).is_ok() {
            key_specs::keys_of_call(specs, args).collect()
        } else {
            Vec::new()
        };
        let channels = match slots()[slot].name.as_str() {
            "publish" | "spublish" if args.len() > 1 => vec![(1, false)],
            "subscribe" | "ssubscribe" => (1..args.len()).map(|i| (i, false)).collect(),
            "psubscribe" => (1..args.len()).map(|i| (i, true)).collect(),
            _ => Vec::new(),
        };
        Call {
            args,
            keys,
            channels,
        }
    }
}

/// Why a user may not run a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The argument at this position is a key no selector allows.
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// The error a client gets, as Redis words it for a command it refuses.
    pub fn refusal(self, slot: usize) -> String {
        match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                slots()[slot].name
            ),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".to_string(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".to_string(),
        }
    }

    /// What a script's `redis.call` raises and EXEC's refusal ends with.
    pub fn short_reason(self) -> &'static str {
        match self {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        }
    }

    /// ACL DRYRUN's answer.
    pub fn dry_run_answer(self, slot: usize, args: &[Vec<u8>]) -> String {
        match self {
            Denied::Command => format!(
                "This user has no permissions to run the '{}' command",
                slots()[slot].name
            ),
            Denied::Key(at) => format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(&args[at])
            ),
            Denied::Channel(at) => format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(&args[at])
            ),
        }
    }

    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (0, 0),
            Denied::Key(at) => (1, at),
            Denied::Channel(at) => (2, at),
        }
    }
}

#[derive(Clone)]
pub struct User {
    pub name: Vec<u8>,
    enabled: bool,
    nopass: bool,
    /// `sanitize-payload` (true) or `skip-sanitize-payload` (false), once either is set.
    sanitize_payload: Option<bool>,
    passwords: Vec<String>,
    /// The root selector first.
    selectors: Vec<Selector>,
    /// May run everything on everything: the checks are skipped.
    pub unrestricted: bool,
}

impl User {
    /// A new user, as `ACL SETUSER name` makes it: off, no password, allowed nothing.
    fn new(name: &[u8]) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize_payload: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new()],
            unrestricted: false,
        }
    }

    /// The default user of a server whose `requirepass` is `password`.
    fn default_user(password: Option<&[u8]>) -> User {
        let mut user = User::new(DEFAULT_USER);
        for rule in [&b"+@all"[..], b"~*", b"&*", b"on"] {
            user.apply(rule).expect("a valid rule");
        }
        user.set_password(password);
        user
    }

    /// `requirepass`: the default user's only password, or none needed.
    fn set_password(&mut self, password: Option<&[u8]>) {
        self.apply(b"resetpass").expect("a valid rule");
        match password {
            Some(p) => self.passwords.push(hash_password(p)),
            None => self.nopass = true,
        }
    }

    /// Not `nopass`: AUTH with a password alone means this user (for the default).
    pub fn needs_password(&self) -> bool {
        !self.nopass
    }

    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        self.apply_one(op)?;
        self.unrestricted = self.selectors.iter().any(Selector::allows_everything);
        Ok(())
    }

    fn apply_one(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize_payload = Some(false),
            b"sanitize-payload" => self.sanitize_payload = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            [b'>' | b'#', ..] => {
                let hash = rule_hash(op)?;
                if !self.passwords.contains(&hash) {
                    self.passwords.push(hash);
                }
                self.nopass = false;
            }
            [b'<' | b'!', ..] => {
                let hash = rule_hash(op)?;
                let at = self
                    .passwords
                    .iter()
                    .position(|p| *p == hash)
                    .ok_or(RuleError::NoSuchPassword)?;
                self.passwords.remove(at);
            }
            [b'(', .., b')'] => {
                let mut selector = Selector::new();
                let inside = &op[1..op.len() - 1];
                for rule in inside
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|r| !r.is_empty())
                {
                    selector.apply(rule)?;
                }
                self.selectors.push(selector);
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                for rule in [
                    &b"resetpass"[..],
                    b"resetkeys",
                    b"resetchannels",
                    b"off",
                    b"sanitize-payload",
                    b"clearselectors",
                    b"-@all",
                ] {
                    self.apply_one(rule).expect("a valid rule");
                }
            }
            _ => self.selectors[0].apply(op)?,
        }
        Ok(())
    }

    /// Whether `password` lets a client in as this user.
    fn admits(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let given = hash_password(password);
        // Every stored hash is compared in full, so the time taken says nothing of
        // which one, or how much of one, matched.
        self.passwords.iter().fold(false, |found, p| {
            found | same_bytes(p.as_bytes(), given.as_bytes())
        })
    }

    /// Whether this user may run the call (see [`Call`]) counted in `slot`; if no
    /// selector allows it, the most telling refusal, as Redis picks it.
    pub fn check(&self, slot: usize, call: &Call) -> Result<(), Denied> {
        let mut worst = Denied::Command;
        for s in &self.selectors {
            match s.check(slot, call) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }

    /// Whether a selector that lets this user run the call (see [`Call`]) counted in
    /// `slot` also lets it read every key: Redis's test before SORT's BY and GET,
    /// which read keys the call does not name.
    pub fn reads_every_key_in(&self, slot: usize, call: &Call) -> bool {
        self.unrestricted
            || self
                .selectors
                .iter()
                .any(|s| s.reads_every_key() && s.check(slot, call).is_ok())
    }

    /// Whether this user may stay subscribed to `name` (a PSUBSCRIBE pattern if
    /// `pattern`): checked against the channels of all its selectors together, a
    /// pattern only as the very same pattern, as Redis checks subscribers when a
    /// user's channels change.
    pub fn may_subscribe(&self, name: &[u8], pattern: bool) -> bool {
        self.selectors.iter().any(|s| {
            s.all_channels
                || s.channels.iter().any(|c| {
                    if pattern {
                        c == name
                    } else {
                        glob_match(c, name, false)
                    }
                })
        })
    }

    /// Whether every channel rule of `before` is still one of this user's, so no
    /// subscriber can have lost a channel (Redis's shortcut before it looks at the
    /// user's subscribers).
    pub fn keeps_channels_of(&self, before: &User) -> bool {
        if self.selectors.iter().any(|s| s.all_channels) {
            return true;
        }
        before.selectors.iter().all(|b| {
            !b.all_channels
                && b.channels
                    .iter()
                    .all(|c| self.selectors.iter().any(|s| s.channels.contains(c)))
        })
    }

    /// The flags ACL GETUSER and ACL LIST show, in Redis's order.
    fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize_payload {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    /// The user as an ACL LIST line: `user name flags #hash... keys channels commands`,
    /// then each further selector in parentheses.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("user {}", self.name())];
        parts.extend(self.flags().iter().map(|f| f.to_string()));
        parts.extend(self.passwords.iter().map(|p| format!("#{p}")));
        parts.push(self.selectors[0].describe());
        parts.extend(
            self.selectors[1..]
                .iter()
                .map(|s| format!("({})", s.describe())),
        );
        parts.join(" ")
    }

    /// ACL GETUSER's fields, as (name, value) pairs; a selector is (commands, keys,
    /// channels).
    pub fn details(&self) -> UserDetails {
        let selector = |s: &Selector| {
            [
                s.describe_commands(),
                s.describe_keys(),
                s.describe_channels(),
            ]
        };
        UserDetails {
            flags: self.flags(),
            passwords: self.passwords.clone(),
            root: selector(&self.selectors[0]),
            selectors: self.selectors[1..].iter().map(selector).collect(),
        }
    }
}

pub struct UserDetails {
    pub flags: Vec<&'static str>,
    pub passwords: Vec<String>,
    /// Commands, keys, channels.
    pub root: [String; 3],
    pub selectors: Vec<[String; 3]>,
}

fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let diff = a
        .iter()
        .zip(b)
        .fold((a.len() ^ b.len()) as u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// What ACL LOG shows of one refusal (or several alike within a minute).
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub updated: Instant,
    pub client_info: String,
}

/// How long a refusal like an earlier one counts in the earlier one's entry.
const LOG_GROUPING: std::time::Duration = std::time::Duration::from_secs(60);
/// How many of the newest entries a refusal is compared with.
const LOG_MATCH_WINDOW: usize = 10;

pub struct Users {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped by every change to any user.
    generation: AtomicU64,
    /// New connections must authenticate: the default user needs a password or is
    /// off (read by every command of a client not authenticated).
    auth_required: AtomicBool,
    log: Mutex<VecDeque<LogEntry>>,
}

impl Users {
    pub fn new(requirepass: Option<&[u8]>) -> Users {
        let default = User::default_user(requirepass);
        let users = Users {
            users: RwLock::new(BTreeMap::new()),
            generation: AtomicU64::new(0),
            auth_required: AtomicBool::new(false),
            log: Mutex::new(VecDeque::new()),
        };
        users.store(default);
        users
    }

    fn store(&self, user: User) {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        users.insert(user.name.clone(), Arc::new(user));
        drop(users);
        self.note_change();
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Acquire)
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        let users = self.users.read().unwrap_or_else(|e| e.into_inner());
        users.get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get(DEFAULT_USER)
            .expect("the default user cannot be removed")
    }

    pub fn all(&self) -> Vec<Arc<User>> {
        let users = self.users.read().unwrap_or_else(|e| e.into_inner());
        users.values().cloned().collect()
    }

    /// The user `name`, if `password` lets a client in as it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        self.get(name).filter(|u| u.admits(password))
    }

    /// ACL SETUSER: creates or changes the user with every rule or none (the error
    /// names the rule refused). Gives the changed user if it lost channels it had,
    /// so that its subscribers may need to be disconnected.
    pub fn set(&self, name: &[u8], rules: &[Vec<u8>]) -> Result<Option<Arc<User>>, String> {
        let rules = merge_selectors(rules)?;
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let mut user = users
            .get(name)
            .map_or_else(|| User::new(name), |u| (**u).clone());
        for rule in &rules {
            user.apply(rule).map_err(|e| {
                format!(
                    "ERR Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(rule),
                    e.message()
                )
            })?;
        }
        let user = Arc::new(user);
        let before = users.insert(name.to_vec(), user.clone());
        drop(users);
        self.note_change();
        Ok(before
            .filter(|before| !user.keeps_channels_of(before))
            .map(|_| user))
    }

    /// After any change: whether a new connection must log in (the default user's
    /// password or state), and a new generation, which sessions see at their next command.
    fn note_change(&self) {
        let default = self.default_user();
        self.auth_required
            .store(!default.nopass || !default.enabled, Ordering::Release);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// ACL LOAD: every user from `text`, an ACL file's lines (`user <name> <rules>`,
    /// blank lines skipped), in place of all users; or, if any line is refused, no
    /// change and every refusal, each naming `file` and the line as Redis words them.
    /// A file that declares no default user gives the default one (everything, no
    /// password).
    pub fn load(&self, file: &str, text: &[u8]) -> Result<(), String> {
        let mut loaded: BTreeMap<Vec<u8>, Arc<User>> = BTreeMap::new();
        let mut errors = String::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            let line = trim(line, b" \t\r\n");
            if line.is_empty() {
                continue;
            }
            // Split on single spaces, as Redis does: two in a row make an empty word.
            let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let (name, rules) = match words.as_slice() {
                [b"user", name, rules @ ..] => (*name, rules),
                _ => {
                    errors.push_str(&format!(
                        "{file}:{n} should start with user keyword followed by the username. "
                    ));
                    continue;
                }
            };
            let shown = String::from_utf8_lossy(name);
            if has_spaces(name) {
                errors.push_str(&format!(
                    "'{file}:{n}: username '{shown}' contains invalid characters. "
                ));
                continue;
            }
            if loaded.contains_key(name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{shown}' found on line {n}. "
                ));
                continue;
            }
            let rules: Vec<Vec<u8>> = rules.iter().map(|r| r.to_vec()).collect();
            let rules = merge_selectors(&rules).unwrap_or_else(|_| {
                errors.push_str(&format!(
                    "{file}:{n}: Unmatched parenthesis in selector definition."
                ));
                Vec::new()
            });
            let mut user = User::new(name);
            let mut reported = false;
            for rule in &rules {
                let rule = trim(rule, b"\t\r\n");
                match user.apply(rule) {
                    Ok(()) => {}
                    // An unknown command is named; of other refusals only the first
                    // counts, since it may be why the later ones fail.
                    Err(RuleError::UnknownCommand) => errors.push_str(&format!(
                        "{file}:{n}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(rule),
                        RuleError::UnknownCommand.message()
                    )),
                    Err(e) if !reported => {
                        errors.push_str(&format!("{file}:{n}: {}. ", e.message()));
                        reported = true;
                    }
                    Err(_) => {}
                }
            }
            loaded.insert(name.to_vec(), Arc::new(user));
        }
        if !errors.is_empty() {
            errors.push_str(
                "WARNING: ACL errors detected, no change to the previously active ACL rules \
                 was performed",
            );
            return Err(errors);
        }
        loaded
            .entry(DEFAULT_USER.to_vec())
            .or_insert_with(|| Arc::new(User::default_user(None)));
        *self.users.write().unwrap_or_else(|e| e.into_inner()) = loaded;
        self.note_change();
        Ok(())
    }

    /// A user declared by a config file's `user` line (checked by
    /// [`check_declaration`] when the file was read), in place of any of that name.
    pub fn declare(&self, name: &[u8], rules: &[Vec<u8>]) {
        let user = declared_user(name, rules).expect("checked when the config was read");
        self.store(user);
    }

    /// ACL SAVE's text: every user in ACL LIST's form, a line each.
    pub fn file_text(&self) -> String {
        self.all().iter().map(|u| u.describe() + "\n").collect()
    }

    /// ACL DELUSER: how many of `names` existed.
    pub fn delete(&self, names: &[Vec<u8>]) -> usize {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let deleted = names.iter().filter(|n| users.remove(*n).is_some()).count();
        drop(users);
        self.note_change();
        deleted
    }

    /// CONFIG SET requirepass: the default user's password.
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let mut user = (*self.default_user()).clone();
        user.set_password(password);
        self.store(user);
    }

    /// Records a refusal in ACL LOG, or counts it in a recent entry like it.
    pub fn log(&self, entry: LogEntry, max_len: usize) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let alike = log.iter().take(LOG_MATCH_WINDOW).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.updated.duration_since(e.updated) <= LOG_GROUPING
        });
        match alike.and_then(|at| log.remove(at)) {
            Some(mut earlier) => {
                earlier.count += 1;
                earlier.updated = entry.updated;
                earlier.client_info = entry.client_info;
                log.push_front(earlier);
            }
            None => {
                log.push_front(entry);
                log.truncate(max_len);
            }
        }
    }

    /// The newest `count` entries, newest first.
    pub fn log_entries<T>(&self, count: usize, show: impl Fn(&LogEntry) -> T) -> Vec<T> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().take(count).map(show).collect()
    }

    pub fn reset_log(&self) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Whether a config file's `user NAME RULES...` line (`words` without `user`) declares
/// a user, as Redis checks it when it reads the file: the refusal in its words.
pub fn check_declaration(words: &[Vec<u8>]) -> Result<(), String> {
    let refused = |word: &[u8], why: &str| {
        format!(
            "Error in user declaration '{}': {why}",
            String::from_utf8_lossy(word)
        )
    };
    let Some((name, rules)) = words.split_first() else {
        return Err("'user' needs a name and its rules".into());
    };
    if has_spaces(name) {
        return Err(refused(
            name,
            "Usernames can't contain spaces or null characters",
        ));
    }
    declared_user(name, rules)
        .map(|_| ())
        .map_err(|(rule, e)| refused(&rule, e.message()))
}

/// The user a config file's `user` line makes: a new one (for the default user, reset
/// first) with the rules applied. As in Redis, a rule naming an unknown command is
/// skipped there (a file written by a later version still loads); any other refused
/// rule is the error, with the rule.
fn declared_user(name: &[u8], rules: &[Vec<u8>]) -> Result<User, (Vec<u8>, RuleError)> {
    let rules = merge_selectors(rules).map_err(|_| (name.to_vec(), RuleError::Syntax))?;
    let mut user = User::new(name);
    for rule in &rules {
        match user.apply(rule) {
            Ok(()) | Err(RuleError::UnknownCommand) => {}
            Err(e) => return Err((rule.clone(), e)),
        }
    }
    Ok(user)
}

/// Joins a selector given over several arguments (`(~x` `+get)`) into one rule, as
/// Redis reads ACL SETUSER's arguments.
fn merge_selectors(rules: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, String> {
    let mut merged = Vec::with_capacity(rules.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, rule) in rules.iter().enumerate() {
        match open.as_mut() {
            Some((_, selector)) => {
                selector.push(b' ');
                selector.extend_from_slice(rule);
                if rule.last() == Some(&b')') {
                    merged.push(open.take().expect("open").1);
                }
            }
            None if rule.first() == Some(&b'(') && rule.last() != Some(&b')') => {
                open = Some((i, rule.clone()));
            }
            None => merged.push(rule.clone()),
        }
    }
    if let Some((i, _)) = open {
        return Err(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(&rules[i])
        ));
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn user(rules: &[&str]) -> User {
        let mut u = User::new(b"u");
        for r in rules {
            u.apply(r.as_bytes()).unwrap();
        }
        u
    }

    fn check(u: &User, words: &[&str]) -> Result<(), Denied> {
        let a = args(words);
        let (index, _) = crate::commands::lookup(&a[0]).unwrap();
        let slot = crate::commands::stat_slot(index, &a);
        u.check(slot, &Call::new(slot, &a))
    }

    #[test]
    fn commands_keys_and_channels_are_checked_per_selector() {
        let u = user(&[
            "on",
            "+get",
            "+set",
            "~x*",
            "&news.*",
            "+publish",
            "+psubscribe",
        ]);
        assert_eq!(check(&u, &["get", "x1"]), Ok(()));
        assert_eq!(check(&u, &["get", "y1"]), Err(Denied::Key(1)));
        assert_eq!(check(&u, &["hget", "x1", "f"]), Err(Denied::Command));
        assert_eq!(check(&u, &["publish", "news.a", "m"]), Ok(()));
        assert_eq!(
            check(&u, &["publish", "sport", "m"]),
            Err(Denied::Channel(1))
        );
        // A PSUBSCRIBE pattern must be one of the user's patterns, literally.
        assert_eq!(check(&u, &["psubscribe", "news.*"]), Ok(()));
        assert_eq!(
            check(&u, &["psubscribe", "news.a"]),
            Err(Denied::Channel(1))
        );
        // A second selector allows what the root one does not.
        let mut u = u;
        u.apply(b"(+hget ~h*)").unwrap();
        assert_eq!(check(&u, &["hget", "h1", "f"]), Ok(()));
        assert_eq!(check(&u, &["hget", "x1", "f"]), Err(Denied::Key(1)));
    }

    #[test]
    fn read_and_write_patterns_follow_the_key_specs() {
        let u = user(&["+@all", "%R~r*", "%W~w*"]);
        assert_eq!(check(&u, &["get", "r1"]), Ok(()));
        assert_eq!(check(&u, &["set", "r1", "v"]), Err(Denied::Key(1)));
        assert_eq!(check(&u, &["set", "w1", "v"]), Ok(()));
        assert_eq!(check(&u, &["get", "w1"]), Err(Denied::Key(1)));
        // COPY reads its source and writes its destination.
        assert_eq!(check(&u, &["copy", "r1", "w1"]), Ok(()));
        assert_eq!(check(&u, &["copy", "w1", "r1"]), Err(Denied::Key(1)));
    }

    #[test]
    fn subcommands_and_first_args() {
        let u = user(&["-@all", "+config|get", "+select|0"]);
        assert_eq!(check(&u, &["config", "get", "maxmemory"]), Ok(()));
        assert_eq!(
            check(&u, &["config", "set", "maxmemory", "1"]),
            Err(Denied::Command)
        );
        assert_eq!(check(&u, &["select", "0"]), Ok(()));
        assert_eq!(check(&u, &["select", "1"]), Err(Denied::Command));
        // AUTH and HELLO need no permission.
        assert_eq!(check(&u, &["auth", "p"]), Ok(()));
        let mut bad = u.clone();
        assert_eq!(
            bad.apply(b"+config|get|x"),
            Err(RuleError::FirstArgOfSubcommand)
        );
        assert_eq!(bad.apply(b"+config|nosuch"), Err(RuleError::UnknownCommand));
        assert_eq!(bad.apply(b"+nosuch"), Err(RuleError::UnknownCommand));
        assert_eq!(bad.apply(b"+@nosuch"), Err(RuleError::UnknownCommand));
        assert_eq!(bad.apply(b"bogus"), Err(RuleError::Syntax));
    }

    #[test]
    fn rules_are_described_as_redis_writes_them() {
        assert_eq!(
            User::new(b"bob").describe(),
            "user bob off resetchannels -@all"
        );
        let u = user(&["on", ">pw", "~a*", "%R~b*", "&c", "+@all", "-flushall"]);
        assert_eq!(
            u.describe(),
            format!(
                "user u on #{} ~a* %R~b* resetchannels &c +@all -flushall",
                hash_password(b"pw")
            )
        );
        let u = user(&["+@string", "-@write", "+set"]);
        let (commands, _, _) = {
            let d = u.details();
            (d.root[0].clone(), d.root[1].clone(), d.root[2].clone())
        };
        // Whatever the rules chosen, applying them gives the same bits.
        let mut again = User::new(b"again");
        for r in commands.split(' ') {
            again.apply(r.as_bytes()).unwrap();
        }
        assert!(
            again.selectors[0].commands == u.selectors[0].commands,
            "{commands}"
        );
        assert_eq!(
            User::default_user(None).describe(),
            "user default on nopass ~* &* +@all"
        );
    }

    #[test]
    fn a_password_hash_is_the_one_redis_shows() {
        assert_eq!(
            hash_password(b"foo"),
            "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
        );
    }

    #[test]
    fn byte_comparison() {
        assert!(same_bytes(b"secret", b"secret"));
        assert!(same_bytes(b"", b""));
        assert!(!same_bytes(b"secret", b"secreT"));
        assert!(!same_bytes(b"secret", b"secret\0"));
        assert!(!same_bytes(b"", b"x"));
    }

    #[test]
    fn passwords() {
        let mut u = user(&["on", ">a", ">b"]);
        assert!(u.admits(b"a") && u.admits(b"b") && !u.admits(b"c"));
        u.apply(b"<a").unwrap();
        assert!(!u.admits(b"a"));
        assert_eq!(u.apply(b"<a"), Err(RuleError::NoSuchPassword));
        assert_eq!(u.apply(b"#abc"), Err(RuleError::BadHash));
        u.apply(b"off").unwrap();
        assert!(!u.admits(b"b"), "a user that is off lets nobody in");
        u.apply(b"on").unwrap();
        u.apply(b"nopass").unwrap();
        assert!(u.admits(b"anything"));
    }

    #[test]
    fn setuser_applies_every_rule_or_none() {
        let users = Users::new(None);
        assert!(users
            .set(b"bob", &args(&["on", ">p", "+get", "nosuch"]))
            .err()
            .unwrap()
            .contains("'nosuch': Syntax error"));
        assert!(users.get(b"bob").is_none());
        users
            .set(b"bob", &args(&["on", ">p", "(", "+get", "~x)"]))
            .unwrap();
        let bob = users.authenticate(b"bob", b"p").unwrap();
        assert_eq!(bob.selectors.len(), 2);
        assert!(users
            .set(b"bob", &args(&["(+get"]))
            .err()
            .unwrap()
            .contains("Unmatched"));
        assert!(!users.auth_required());
        users.set_default_password(Some(b"secret"));
        assert!(users.auth_required());
        assert!(users.authenticate(b"default", b"secret").is_some());
        assert_eq!(users.delete(&args(&["bob", "nobody"])), 1);
    }

    #[test]
    fn a_change_that_takes_channels_is_told_apart() {
        let users = Users::new(None);
        let set = |rules: &[&str]| users.set(b"bob", &args(rules)).unwrap();
        assert!(
            set(&["&a*", "(&b)"]).is_none(),
            "a new user has no subscribers"
        );
        assert!(set(&["&c"]).is_none(), "adding keeps every channel");
        assert!(
            set(&["resetchannels", "(&a* &b &c)"]).is_none(),
            "moved to a selector"
        );
        let narrowed = set(&["clearselectors"]).expect("a*, b and c are gone");
        assert!(!narrowed.may_subscribe(b"a1", false));
        assert!(set(&["allchannels"]).is_none());
        let narrowed = set(&["resetchannels", "&a*"]).expect("all channels are gone");
        assert!(narrowed.may_subscribe(b"a1", false));
        assert!(narrowed.may_subscribe(b"a*", true));
        assert!(
            !narrowed.may_subscribe(b"a1*", true),
            "a pattern only as itself"
        );
        assert!(!narrowed.may_subscribe(b"b", false));
    }
}
