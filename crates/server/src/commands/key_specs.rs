//! Where a command's keys are and what it does to each: Redis 7's key specifications.
//!
//! Most commands find their keys the simple way, a range of arguments from a fixed
//! index (`begin_search` of type `index`, `find_keys` of type `range`), so a spec is
//! four numbers and its flags; some count their keys (`keynum`), some follow a
//! keyword (`keyword`: GEORADIUS's STORE), and SORT's are `unknown` to the specs. COMMAND INFO shows the specs, COMMAND GETKEYS
//! and GETKEYSANDFLAGS read them, CLIENT TRACKING finds a read's keys with them, and
//! the legacy (first, last, step) triple of COMMAND INFO is derived from them, as
//! Redis derives it.

use resp::Frame;

// How the command uses the key's value: exactly one of these per spec (but for
// `NOT_KEY` specs, which name shard channels).
/// Read only.
pub const RO: u16 = 1;
/// Read and written.
pub const RW: u16 = 1 << 1;
/// Overwritten, whatever it held.
pub const OW: u16 = 1 << 2;
/// Removed.
pub const RM: u16 = 1 << 3;
// What happens to the data.
/// The value is returned, copied or used to compute something returned.
pub const ACCESS: u16 = 1 << 4;
/// The value is replaced or changed.
pub const UPDATE: u16 = 1 << 5;
/// Data is only added, never changed or removed.
pub const INSERT: u16 = 1 << 6;
/// Data is removed.
pub const DELETE: u16 = 1 << 7;
/// Not a key: a shard channel (SSUBSCRIBE, SPUBLISH). Shown, never returned as a key.
pub const NOT_KEY: u16 = 1 << 8;
/// The flags above are the most a call can do; some arguments do less (SET without
/// GET does not read), which [`flags_of_call`] works out.
pub const VARIABLE_FLAGS: u16 = 1 << 9;
/// The spec may miss keys or take an argument for one (MIGRATE's): the command's own
/// finder ([`KeySpec::incomplete`]) has the last word.
pub const INCOMPLETE: u16 = 1 << 10;

/// Redis's names, in the order it prints them.
const NAMES: [(u16, &str); 11] = [
    (RO, "RO"),
    (RW, "RW"),
    (OW, "OW"),
    (RM, "RM"),
    (ACCESS, "access"),
    (UPDATE, "update"),
    (INSERT, "insert"),
    (DELETE, "delete"),
    (NOT_KEY, "not_key"),
    (INCOMPLETE, "incomplete"),
    (VARIABLE_FLAGS, "variable_flags"),
];

/// Finds the one key of a call that a spec of the `unknown` kind covers, if any.
pub type KeyFinder = fn(&[Vec<u8>]) -> Option<usize>;

/// Finds all the keys of a call, the first and last of a run, if any: a command's own
/// finder where its specs are incomplete.
pub type KeysFinder = fn(&[Vec<u8>]) -> Option<(usize, usize)>;

pub struct KeySpec {
    flags: u16,
    /// The index of the first key (the command's name is 0).
    begin: i32,
    /// The last key: relative to `begin` when >= 0, from the end of the arguments
    /// when negative (-1: the last argument).
    last: i32,
    step: i32,
    /// Redis's `keynum` form instead of a range: the argument at `begin + .0` counts
    /// the keys, which start at `begin + .1`, `step` apart (ZUNION, SINTERCARD).
    keynum: Option<(i32, i32)>,
    /// Redis's `keyword` search instead of an index: the key range starts after the
    /// first argument from `begin` on that equals this word (any case).
    keyword: Option<&'static str>,
    /// With a `last` counted from the end: only the first 1/`limit` of the arguments
    /// from the first key on are keys (XREAD's keys, then as many IDs). 0: all.
    limit: i32,
    /// Redis's `unknown` kind: the specs cannot say where the keys are. `Some` holds
    /// what finds the one key of a call, as Redis's own key-finding function for the
    /// command does (SORT's STORE key); `None` finds none (keys named by patterns).
    unknown: Option<Option<KeyFinder>>,
    /// For an `INCOMPLETE` spec, what finds the command's keys instead of its specs.
    complete: Option<KeysFinder>,
    notes: &'static str,
}

impl KeySpec {
    #[cfg(test)]
    /// Whether the arguments it finds are shard channels rather than keys.
    pub fn names_channels(&self) -> bool {
        self.flags & NOT_KEY != 0
    }
}

/// Keys from `begin` to `last` (see [`KeySpec`]), `step` apart.
pub const fn range(flags: u16, begin: i32, last: i32, step: i32) -> KeySpec {
    KeySpec {
        flags,
        begin,
        last,
        step,
        keynum: None,
        keyword: None,
        limit: 0,
        unknown: None,
        complete: None,
        notes: "",
    }
}

/// Keys counted by an argument: the count at `begin + keynumidx`, the keys from
/// `begin + firstkey`, `step` apart.
pub const fn counted(flags: u16, begin: i32, keynumidx: i32, firstkey: i32, step: i32) -> KeySpec {
    KeySpec {
        flags,
        begin,
        last: 0,
        step,
        keynum: Some((keynumidx, firstkey)),
        keyword: None,
        limit: 0,
        unknown: None,
        complete: None,
        notes: "",
    }
}

/// The one key after `word`, searched for from the argument `startfrom` on (counted
/// from the end and searched backwards if negative).
pub const fn keyword(flags: u16, word: &'static str, startfrom: i32) -> KeySpec {
    KeySpec {
        keyword: Some(word),
        ..range(flags, startfrom, 0, 1)
    }
}

/// Keys from the argument after `word` (searched for from `startfrom` on) to `last`
/// (see [`KeySpec`]), `step` apart, of the first 1/`limit` of what follows.
pub const fn keyword_range(
    flags: u16,
    word: &'static str,
    startfrom: i32,
    last: i32,
    limit: i32,
) -> KeySpec {
    KeySpec {
        keyword: Some(word),
        limit,
        ..range(flags, startfrom, last, 1)
    }
}

/// Keys the specs cannot place (Redis's `unknown` kind); `find` finds a call's key, if
/// the command's arguments say where it is.
pub const fn unknown_keys(flags: u16, find: Option<KeyFinder>) -> KeySpec {
    KeySpec {
        unknown: Some(find),
        ..range(flags, 0, 0, 1)
    }
}

/// Whether every key count in `args` that `specs` name is a count of keys there.
pub fn counts_hold(specs: &[KeySpec], args: &[Vec<u8>]) -> bool {
    specs
        .iter()
        .filter(|s| s.keynum.is_some())
        .all(|s| s.positions(args).next().is_some())
}

/// Whether any spec finds keys (rather than shard channels).
pub fn names_keys(specs: &[KeySpec]) -> bool {
    specs.iter().any(|s| s.flags & NOT_KEY == 0)
}

/// Whether a command's keys can only be found by reading its arguments (Redis's
/// `movablekeys` flag): a counted, keyword or unknown spec.
pub fn movable(specs: &[KeySpec]) -> bool {
    specs
        .iter()
        .any(|s| s.keynum.is_some() || s.keyword.is_some() || s.unknown.is_some())
}

/// The first argument, the one key.
pub const fn first(flags: u16) -> KeySpec {
    range(flags, 1, 0, 1)
}

/// Every argument a key.
pub const fn every(flags: u16) -> KeySpec {
    range(flags, 1, -1, 1)
}

impl KeySpec {
    /// With Redis's explanation of its flags, which COMMAND INFO shows.
    pub const fn noted(self, notes: &'static str) -> KeySpec {
        KeySpec { notes, ..self }
    }

    /// Marked `INCOMPLETE`: the command's keys are what `finder` finds, whatever its
    /// specs would (Redis's fallback to a command's own key finder).
    pub const fn incomplete(self, finder: KeysFinder) -> KeySpec {
        KeySpec {
            flags: self.flags | INCOMPLETE,
            complete: Some(finder),
            ..self
        }
    }

    /// The positions this spec finds in the call `args` (arity checked). A count that
    /// is not a number or runs past the arguments finds none.
    fn positions(&self, args: &[Vec<u8>]) -> std::iter::StepBy<std::ops::RangeInclusive<usize>> {
        let n = args.len() as i32;
        if let Some(find) = self.complete {
            // None: a range that ends before it starts.
            let (from, to) = find(args).unwrap_or((1, 0));
            return (from..=to).step_by(1);
        }
        if let Some(find) = self.unknown {
            // None: a range that ends before it starts.
            let (from, to) = find
                .and_then(|find| find(args))
                .map_or((1, 0), |at| (at, at));
            return (from..=to).step_by(1);
        }
        if let Some((keynumidx, firstkey)) = self.keynum {
            let count = args
                .get((self.begin + keynumidx) as usize)
                .and_then(|c| resp::parse_integer(c))
                .filter(|&c| c > 0 && c <= i64::from(n));
            let first = (self.begin + firstkey) as usize;
            let last = count.map(|c| first + (c as usize - 1) * self.step as usize);
            let (from, to) = match last {
                Some(last) if last < args.len() => (first, last),
                // None: a range that ends before it starts.
                _ => (1, 0),
            };
            return (from..=to).step_by(self.step as usize);
        }
        let mut begin = self.begin;
        if let Some(word) = self.keyword {
            // As Redis: the word is looked for up to the next-to-last argument, or
            // back to the first from a start counted from the end.
            let is_word = |&i: &usize| args[i].eq_ignore_ascii_case(word.as_bytes());
            let at = if self.begin >= 0 {
                (self.begin as usize..args.len().saturating_sub(1)).find(is_word)
            } else {
                (1..(n + self.begin + 1).max(1) as usize)
                    .rev()
                    .find(is_word)
            };
            match at {
                Some(at) => begin = at as i32 + 1,
                None => {
                    // A range that ends before it starts.
                    let (from, to) = (1, 0);
                    return (from..=to).step_by(1);
                }
            }
        }
        let last = if self.last >= 0 {
            (begin + self.last).min(n - 1)
        } else if self.limit > 0 {
            begin + (n - begin) / self.limit + self.last
        } else {
            n + self.last
        };
        (begin as usize..=last as usize).step_by(self.step as usize)
    }

    /// COMMAND INFO's description, in Redis's field order.
    fn describe(&self) -> Frame {
        let text = |s: &str| Frame::bulk(s);
        let mut fields = Vec::with_capacity(4);
        if !self.notes.is_empty() {
            fields.push((text("notes"), text(self.notes)));
        }
        fields.push((text("flags"), flag_names(self.flags)));
        if self.unknown.is_some() {
            let unknown = || {
                Frame::Map(vec![
                    (text("type"), text("unknown")),
                    (text("spec"), Frame::Map(Vec::new())),
                ])
            };
            fields.push((text("begin_search"), unknown()));
            fields.push((text("find_keys"), unknown()));
            return Frame::Map(fields);
        }
        let begin_search = match self.keyword {
            Some(word) => vec![
                (text("type"), text("keyword")),
                (
                    text("spec"),
                    Frame::Map(vec![
                        (text("keyword"), text(word)),
                        (text("startfrom"), Frame::Integer(self.begin as i64)),
                    ]),
                ),
            ],
            None => vec![
                (text("type"), text("index")),
                (
                    text("spec"),
                    Frame::Map(vec![(text("index"), Frame::Integer(self.begin as i64))]),
                ),
            ],
        };
        fields.push((text("begin_search"), Frame::Map(begin_search)));
        if let Some((keynumidx, firstkey)) = self.keynum {
            fields.push((
                text("find_keys"),
                Frame::Map(vec![
                    (text("type"), text("keynum")),
                    (
                        text("spec"),
                        Frame::Map(vec![
                            (text("keynumidx"), Frame::Integer(keynumidx as i64)),
                            (text("firstkey"), Frame::Integer(firstkey as i64)),
                            (text("keystep"), Frame::Integer(self.step as i64)),
                        ]),
                    ),
                ]),
            ));
            return Frame::Map(fields);
        }
        fields.push((
            text("find_keys"),
            Frame::Map(vec![
                (text("type"), text("range")),
                (
                    text("spec"),
                    Frame::Map(vec![
                        (text("lastkey"), Frame::Integer(self.last as i64)),
                        (text("keystep"), Frame::Integer(self.step as i64)),
                        (text("limit"), Frame::Integer(self.limit as i64)),
                    ]),
                ),
            ]),
        ));
        Frame::Map(fields)
    }
}

/// The specs as COMMAND INFO's tenth field.
pub fn describe(specs: &[KeySpec]) -> Frame {
    Frame::Set(specs.iter().map(KeySpec::describe).collect())
}

/// The flags as a set of status strings, as Redis replies them.
pub fn flag_names(flags: u16) -> Frame {
    Frame::Set(
        NAMES
            .iter()
            .filter(|(bit, _)| flags & bit != 0)
            .map(|(_, name)| Frame::Simple(name.to_string()))
            .collect(),
    )
}

/// The legacy (first key, last key, step) of COMMAND INFO: one spec's own range, or
/// for several, from the first key of any to the last of any, step 1 (what Redis
/// derives; a negative last key counts as past every positive one). (0, 0, 0) for none.
pub fn legacy_range(specs: &[KeySpec]) -> (i32, i32, i32) {
    let absolute_last = |s: &KeySpec| {
        if s.last >= 0 {
            s.begin + s.last
        } else {
            s.last
        }
    };
    // As Redis: a counted, keyword or unknown spec cannot be said as a range and is
    // left out.
    let ranges: Vec<&KeySpec> = specs
        .iter()
        .filter(|s| s.keynum.is_none() && s.keyword.is_none() && s.unknown.is_none())
        .collect();
    match ranges.as_slice() {
        [] => (0, 0, 0),
        [s] => (s.begin, absolute_last(s), s.step),
        _ => {
            let first = ranges.iter().map(|s| s.begin).min().unwrap_or(0);
            // As unsigned, -1 is the largest.
            let last = ranges
                .iter()
                .map(|s| absolute_last(s))
                .max_by_key(|&l| l as u32)
                .unwrap_or(0);
            (first, last, 1)
        }
    }
}

/// The keys of a call `args` (arity checked) with what the command does to each, in
/// spec order; shard channels (`NOT_KEY`) are not keys and are left out.
pub fn keys_of_call<'a>(
    specs: &'a [KeySpec],
    args: &'a [Vec<u8>],
) -> impl Iterator<Item = (usize, u16)> + 'a {
    let complete = specs.iter().any(|s| s.complete.is_some());
    specs
        .iter()
        .filter(move |s| s.flags & NOT_KEY == 0 && (!complete || s.complete.is_some()))
        .flat_map(move |s| {
            let flags = flags_of_call(s.flags & !INCOMPLETE, args);
            s.positions(args).map(move |i| (i, flags))
        })
}

/// A spec's flags for the call `args`: for `VARIABLE_FLAGS` (SET and BITFIELD have
/// them), what this call does, as Redis reports it.
fn flags_of_call(flags: u16, args: &[Vec<u8>]) -> u16 {
    if flags & VARIABLE_FLAGS == 0 {
        return flags;
    }
    if args[0].eq_ignore_ascii_case(b"BITFIELD") {
        bitfield_flags(args)
    } else {
        set_flags(args)
    }
}

/// SET: a plain overwrite, unless GET reads the old value.
fn set_flags(args: &[Vec<u8>]) -> u16 {
    let reads = args[3..].iter().any(|a| a.eq_ignore_ascii_case(b"GET"));
    if reads {
        RW | ACCESS | UPDATE
    } else {
        OW | UPDATE
    }
}

/// BITFIELD: a read if it holds nothing but complete GETs and OVERFLOWs (so a user
/// with read-only access to the key may run it); anything else, a malformed call
/// included, counts as the write it may be.
fn bitfield_flags(args: &[Vec<u8>]) -> u16 {
    let mut at = 2;
    while at < args.len() {
        let left = args.len() - at - 1;
        let word = &args[at];
        if word.eq_ignore_ascii_case(b"GET") && left >= 2 {
            at += 3;
        } else if word.eq_ignore_ascii_case(b"OVERFLOW") && left >= 1 {
            at += 2;
        } else {
            return RW | ACCESS | UPDATE;
        }
    }
    RO | ACCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn legacy_range_is_redis_derivation() {
        assert_eq!(legacy_range(&[]), (0, 0, 0));
        assert_eq!(legacy_range(&[first(RO)]), (1, 1, 1));
        assert_eq!(legacy_range(&[range(OW, 1, -1, 2)]), (1, -1, 2));
        assert_eq!(legacy_range(&[range(RO, 1, 1, 1)]), (1, 2, 1));
        // BITOP: destination at 2, sources from 3 to the end.
        let bitop = [range(OW, 2, 0, 1), range(RO, 3, -1, 1)];
        assert_eq!(legacy_range(&bitop), (2, -1, 1));
        // RENAME: source, then destination.
        let rename = [first(RW), range(OW, 2, 0, 1)];
        assert_eq!(legacy_range(&rename), (1, 2, 1));
    }

    #[test]
    fn keys_of_call_follow_each_spec() {
        let bitop = [range(OW | UPDATE, 2, 0, 1), range(RO | ACCESS, 3, -1, 1)];
        let keys: Vec<_> = keys_of_call(&bitop, &call(&["bitop", "and", "d", "a", "b"])).collect();
        assert_eq!(keys, [(2, OW | UPDATE), (3, RO | ACCESS), (4, RO | ACCESS)]);
        let mset = [range(OW | UPDATE, 1, -1, 2)];
        let keys: Vec<_> = keys_of_call(&mset, &call(&["mset", "a", "1", "b", "2"])).collect();
        assert_eq!(keys, [(1, OW | UPDATE), (3, OW | UPDATE)]);
        // A fixed range stops at the last argument.
        let lcs = [range(RO, 1, 1, 1)];
        assert_eq!(keys_of_call(&lcs, &call(&["lcs", "a", "b"])).count(), 2);
        let channels = [every(NOT_KEY)];
        assert_eq!(
            keys_of_call(&channels, &call(&["ssubscribe", "c"])).count(),
            0
        );
    }

    #[test]
    fn variable_flags_follow_what_the_call_does() {
        let spec = [first(RW | ACCESS | UPDATE | VARIABLE_FLAGS)];
        let flags = |args: &[&str]| keys_of_call(&spec, &call(args)).next().unwrap().1;
        assert_eq!(flags(&["set", "k", "v"]), OW | UPDATE);
        assert_eq!(flags(&["set", "k", "v", "NX", "get"]), RW | ACCESS | UPDATE);
        // BITFIELD reads with complete GETs and OVERFLOWs only, as Redis's getkeys.
        assert_eq!(flags(&["bitfield", "k"]), RO | ACCESS);
        assert_eq!(
            flags(&["BITFIELD", "k", "GET", "u4", "0", "overflow", "sat", "get", "i8", "4"]),
            RO | ACCESS
        );
        for write in [
            &["bitfield", "k", "get", "u4", "0", "set", "u4", "0", "1"][..],
            &["bitfield", "k", "incrby", "u4", "0", "1"],
            &["bitfield", "k", "get", "u4"],
            &["bitfield", "k", "nonsense"],
        ] {
            assert_eq!(flags(write), RW | ACCESS | UPDATE, "{write:?}");
        }
    }

    #[test]
    fn counted_keys_follow_their_count() {
        let zunionstore = [first(OW | UPDATE), counted(RO | ACCESS, 2, 0, 1, 1)];
        let keys = |args: &[&str]| -> Vec<usize> {
            keys_of_call(&zunionstore, &call(args))
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(
            keys(&["zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"]),
            [1, 3, 4]
        );
        // A count that is not one, or runs past the arguments, finds no counted keys.
        for bad in [
            &["zunionstore", "d", "x", "a"][..],
            &["zunionstore", "d", "3", "a", "b"],
            &["zunionstore", "d", "0", "a"],
        ] {
            assert_eq!(keys(bad), [1]);
            assert!(!counts_hold(&zunionstore, &call(bad)));
        }
        assert!(movable(&zunionstore) && !movable(&[first(RO)]));
        assert_eq!(legacy_range(&zunionstore), (1, 1, 1));
        assert_eq!(legacy_range(&[counted(RO, 1, 0, 1, 1)]), (0, 0, 0));
    }

    #[test]
    fn keyword_keys_follow_their_word() {
        let georadius = [
            first(RO | ACCESS),
            keyword(OW | UPDATE, "STORE", 6),
            keyword(OW | UPDATE, "STOREDIST", 6),
        ];
        let keys = |args: &[&str]| -> Vec<usize> {
            keys_of_call(&georadius, &call(args))
                .map(|(i, _)| i)
                .collect()
        };
        let base = ["georadius", "k", "0", "0", "1", "m"];
        let with = |extra: &[&'static str]| [&base[..], extra].concat();
        assert_eq!(keys(&with(&["store", "d"])), [1, 7]);
        assert_eq!(keys(&with(&["STOREDIST", "d", "STORE", "e"])), [1, 9, 7]);
        // The word as the last argument names no key; before `startfrom` it is not looked for.
        assert_eq!(keys(&with(&["WITHDIST", "STORE"])), [1]);
        assert_eq!(keys(&["georadius", "k", "0", "STORE", "1", "m"]), [1]);
        assert!(movable(&georadius));
        // XREAD: the keys are the first half of what follows STREAMS.
        let xread = [keyword_range(RO | ACCESS, "STREAMS", 1, -1, 2)];
        let keys: Vec<usize> = keys_of_call(
            &xread,
            &call(&["xread", "count", "2", "streams", "a", "b", "0", "0"]),
        )
        .map(|(i, _)| i)
        .collect();
        assert_eq!(keys, [4, 5]);
        assert_eq!(legacy_range(&georadius), (1, 1, 1));
    }

    #[test]
    fn a_keyword_counted_from_the_end_is_searched_backwards() {
        // MIGRATE's second spec: the keys after the last KEYS but one argument back.
        let spec = [keyword_range(RW, "KEYS", -2, -1, 0)];
        let keys = |args: &[&str]| -> Vec<usize> {
            keys_of_call(&spec, &call(args)).map(|(i, _)| i).collect()
        };
        assert_eq!(
            keys(&["m", "h", "p", "", "0", "5", "KEYS", "a", "b"]),
            [7, 8]
        );
        assert_eq!(
            keys(&["m", "h", "p", "", "0", "5", "AUTH", "KEYS", "KEYS", "a"]),
            [9]
        );
        assert_eq!(keys(&["m", "h", "p", "k", "0", "5"]), Vec::<usize>::new());
        assert_eq!(keys(&["m"]), Vec::<usize>::new());
    }

    #[test]
    fn an_incomplete_spec_defers_to_the_command_finder() {
        fn after_word(args: &[Vec<u8>]) -> Option<(usize, usize)> {
            let at = args.iter().position(|a| a == b"KEYS")?;
            (at + 1 < args.len()).then(|| (at + 1, args.len() - 1))
        }
        let specs = [
            first(RW | DELETE),
            keyword_range(RW | DELETE, "KEYS", -2, -1, 0).incomplete(after_word),
        ];
        let found: Vec<_> = keys_of_call(&specs, &call(&["m", "", "KEYS", "a", "b"])).collect();
        assert_eq!(
            found,
            [(3, RW | DELETE), (4, RW | DELETE)],
            "no INCOMPLETE per key"
        );
        assert_eq!(keys_of_call(&specs, &call(&["m", "k"])).count(), 0);
        assert!(movable(&specs));
        assert_eq!(legacy_range(&specs), (1, 1, 1));
        assert!(matches!(flag_names(specs[1].flags), Frame::Set(names)
            if names == [Frame::Simple("RW".into()), Frame::Simple("delete".into()),
                         Frame::Simple("incomplete".into())]));
    }

    #[test]
    fn set_reads_only_with_get() {
        let set = [first(RW | ACCESS | UPDATE | VARIABLE_FLAGS)];
        let flags = |args: &[&str]| keys_of_call(&set, &call(args)).next().unwrap().1;
        assert_eq!(flags(&["set", "k", "v"]), OW | UPDATE);
        assert_eq!(flags(&["set", "k", "v", "EX", "10"]), OW | UPDATE);
        assert_eq!(flags(&["set", "k", "v", "nx", "get"]), RW | ACCESS | UPDATE);
    }
}
