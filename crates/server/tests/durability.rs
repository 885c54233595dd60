//! The lsm engine behind the server: data and deadlines outlive restarts and SIGKILL,
//! one server per directory, storage failures reach the client as errors while reads
//! go on.

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use support::{eventually, info_field, refused_start, run, run_err, Server};

fn lsm_server(extra: &[&str]) -> Server {
    Server::start_in(tempfile::tempdir().unwrap(), extra)
}

/// CONFIG SET appendfsync (or its hotkv name, fsync) switches the engine's policy
/// while it runs, as in Redis: under `always` every write is synced before its reply,
/// under `no` none is; a value Redis would refuse is refused with its words.
#[test]
fn config_set_appendfsync_switches_the_engine() {
    let server = lsm_server(&["--fsync", "no"]);
    let mut c = server.client();
    let syncs =
        |c: &mut redis::Connection| -> u64 { info_field(c, "engine_wal_syncs").parse().unwrap() };
    let _: () = run(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
    assert_eq!(info_field(&mut c, "engine_fsync"), "always");
    let switched = syncs(&mut c);
    for i in 0..5 {
        let _: () = run(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    assert!(
        syncs(&mut c) >= switched + 5,
        "a sync per write under always"
    );

    let _: () = run(&mut c, &["CONFIG", "SET", "fsync", "no"]);
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "appendfsync"]);
    assert_eq!(got, ["appendfsync", "no"]);
    let quiet = syncs(&mut c);
    for i in 0..5 {
        let _: () = run(&mut c, &["SET", &format!("k{i}"), "w"]);
    }
    assert_eq!(syncs(&mut c), quiet, "no sync under no");

    assert_eq!(
        run_err(&mut c, &["CONFIG", "SET", "appendfsync", "sometimes"]),
        "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - \
         argument(s) must be one of the following: everysec, always, no"
    );
    assert_eq!(info_field(&mut c, "engine_fsync"), "no");
    let server = server.restarted_if_lsm();
    let mut c = server.client();
    assert_eq!(run::<String>(&mut c, &["GET", "k4"]), "w");
}

#[test]
fn values_of_every_type_deadlines_and_the_key_count_survive_a_restart() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    for i in 0..2000 {
        run::<()>(&mut c, &["SET", &format!("k{i}"), &format!("v{i}")]);
    }
    for i in 0..100 {
        run::<()>(&mut c, &["DEL", &format!("k{i}")]);
    }
    run::<()>(&mut c, &["SET", "lasting", "x", "EX", "1000"]);
    run::<()>(&mut c, &["SET", "brief", "x", "PX", "300"]);
    run::<i64>(&mut c, &["INCRBY", "counter", "41"]);
    run::<i64>(&mut c, &["INCR", "counter"]);
    run::<()>(&mut c, &["SET", "bin\r\n\0", "\0\r\n"]);
    // One atomic batch; a key named twice counts once and keeps its last value (k5
    // was deleted above, so MSET adds two keys).
    run::<()>(&mut c, &["MSET", "m1", "a", "k5", "b", "m1", "c"]);
    run::<i64>(&mut c, &["RPUSH", "list", "a", "b\r\n", "c"]);
    run::<i64>(&mut c, &["HSET", "hash", "f", "v", "g", "w"]);
    run::<i64>(&mut c, &["SADD", "set", "10", "2", "x"]);
    run::<i64>(&mut c, &["ZADD", "zset", "1.5", "a", "-2", "b"]);
    run::<i64>(&mut c, &["EXPIRE", "hash", "1000"]);
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 1900 + 10);
    let dir = server.stop().unwrap();

    std::thread::sleep(Duration::from_millis(400));
    let server = Server::start_in(dir, &[]);
    let mut c = server.client();
    assert_eq!(
        run::<Option<String>>(&mut c, &["GET", "k100"]).as_deref(),
        Some("v100")
    );
    assert_eq!(
        run::<Option<String>>(&mut c, &["GET", "k1999"]).as_deref(),
        Some("v1999")
    );
    assert_eq!(run::<Option<String>>(&mut c, &["GET", "k99"]), None);
    assert_eq!(run::<i64>(&mut c, &["GET", "counter"]), 42);
    assert_eq!(run::<Vec<u8>>(&mut c, &["GET", "bin\r\n\0"]), b"\0\r\n");
    assert_eq!(run::<String>(&mut c, &["GET", "m1"]), "c");
    assert_eq!(run::<String>(&mut c, &["GET", "k5"]), "b");
    let ttl: i64 = run(&mut c, &["TTL", "lasting"]);
    assert!((990..=1000).contains(&ttl), "TTL {ttl}");
    let list: Vec<String> = run(&mut c, &["LRANGE", "list", "0", "-1"]);
    assert_eq!(list, ["a", "b\r\n", "c"]);
    let hash: Vec<String> = run(&mut c, &["HGETALL", "hash"]);
    assert_eq!(hash, ["f", "v", "g", "w"]);
    assert!(run::<i64>(&mut c, &["TTL", "hash"]) > 990);
    let set: Vec<String> = run(&mut c, &["SMEMBERS", "set"]);
    assert_eq!(set, ["2", "10", "x"]);
    let zset: Vec<String> = run(&mut c, &["ZRANGE", "zset", "0", "-1", "WITHSCORES"]);
    assert_eq!(zset, ["b", "-2", "a", "1.5"]);
    // The key that expired while the server was down is found by the active cycle,
    // from the deadlines read back at open.
    assert!(eventually(5, || run::<i64>(&mut c, &["DBSIZE"]) == 1900 + 9));
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "brief"]), 0);
    let keys: Vec<String> = run(&mut c, &["KEYS", "*"]);
    assert_eq!(keys.len(), 1909);
    assert!(info_field(&mut c, "db0").starts_with("keys=1909,expires=2,"));
    assert_eq!(info_field(&mut c, "aof_enabled"), "1");
    assert!(
        info_field(&mut c, "engine_wal_bytes")
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

/// Writers on their own connections set keys in order and bump a counter, half of
/// them as two commands, half in MULTI/EXEC; the server is killed with SIGKILL at a
/// random moment, several times, alternately under `--fsync always` and `--fsync no`
/// (where the log is written once per batch of replies, before they leave), with
/// memtables small enough that kills land in flushes and compactions too. After each
/// restart every acknowledged write is there, nothing a writer never sent, and every
/// transaction is there whole or not at all. `SERVER_CRASH_CYCLES` (default 3) and
/// `SERVER_CRASH_SEED` for longer runs.
#[test]
fn kill_9_loses_no_acknowledged_write() {
    const WRITERS: usize = 4;
    let cycles: usize = std::env::var("SERVER_CRASH_CYCLES").map_or(3, |n| n.parse().unwrap());
    let seed = std::env::var("SERVER_CRASH_SEED")
        .map_or_else(|_| rand::random(), |s| s.parse::<u64>().unwrap());
    eprintln!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let value = "v".repeat(200);
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let mut dir = tempfile::tempdir().unwrap();
    for cycle in 0..cycles {
        let fsync = if cycle % 2 == 0 { "always" } else { "no" };
        let server = Server::start_in(dir, &["--fsync", fsync, "--memtable-size", "1mb"]);
        let mut c = server.client();
        for (w, acked) in acked.iter().enumerate() {
            let n = acked.load(Ordering::SeqCst);
            let counter: Option<u64> = run(&mut c, &["GET", &format!("counter:{w}")]);
            // The counter is bumped after the key is set: it may trail the keys by one
            // write that was sent but not acknowledged, never lead them; in a
            // transaction it cannot trail either.
            let counter = counter.unwrap_or(0);
            if transactional(w) {
                let unpaired: Option<String> = run(&mut c, &["GET", &format!("w{w}:{counter}")]);
                assert_eq!(
                    unpaired, None,
                    "cycle {cycle} writer {w}: half a transaction"
                );
            }
            assert!(
                counter >= n,
                "cycle {cycle} writer {w}: counter {counter} < acked {n}"
            );
            for i in 0..counter {
                let got: Option<String> = run(&mut c, &["GET", &format!("w{w}:{i}")]);
                assert_eq!(
                    got.as_deref(),
                    Some(value.as_str()),
                    "cycle {cycle} writer {w}: key {i} of {counter} acked"
                );
            }
            let next: Option<String> = run(&mut c, &["GET", &format!("w{w}:{}", counter + 1)]);
            assert_eq!(
                next, None,
                "cycle {cycle} writer {w}: a key never sent exists"
            );
            acked.store(counter, Ordering::SeqCst);
        }
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut c = server.client();
                let acked = acked.clone();
                let value = value.clone();
                std::thread::spawn(move || {
                    let mut i = acked[w].load(Ordering::SeqCst);
                    loop {
                        let key = format!("w{w}:{i}");
                        let counter = format!("counter:{w}");
                        let (set, incr) = if transactional(w) {
                            match redis::pipe()
                                .atomic()
                                .set(&key, &value)
                                .incr(&counter, 1)
                                .query::<((), u64)>(&mut c)
                            {
                                Ok((set, n)) => (Ok(set), Ok(n)),
                                Err(e) => (Err(e), Ok(0)),
                            }
                        } else {
                            (
                                redis::cmd("SET").arg(&key).arg(&value).query::<()>(&mut c),
                                redis::cmd("INCR").arg(&counter).query::<u64>(&mut c),
                            )
                        };
                        match (set, incr) {
                            (Ok(()), Ok(n)) => {
                                assert_eq!(n, i + 1, "writer {w}");
                                acked[w].store(n, Ordering::SeqCst);
                                i = n;
                            }
                            _ => return,
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.gen_range(300..1500)));
        dir = server.kill().unwrap();
        for w in writers {
            w.join().unwrap();
        }
    }
    let total: u64 = acked.iter().map(|a| a.load(Ordering::SeqCst)).sum();
    eprintln!("{cycles} kills, {total} acknowledged SET+INCR pairs checked");
    assert!(total > 0, "no write was acknowledged");
}

/// Per writer of a crash test: (the first item not yet taken away, the next item to
/// add), as acknowledged by the server.
type Acked = Arc<Vec<[AtomicU64; 2]>>;

/// Crash cycles over a collection per writer: `writers` threads write to a server under
/// `--fsync always` (memtables small enough that kills land in flushes and compactions
/// too) until it is killed with SIGKILL, `SERVER_CRASH_CYCLES` times (default 3;
/// `SERVER_CRASH_SEED` replays one run). A cycle's kill comes once every collection
/// has grown past its share of `grow_past` plus a random margin, so the collections end
/// past `grow_past` items however fast the machine is, and the moment of the kill
/// within a write stays random. After each restart `held` reads writer w's collection
/// as the items from its first to its end (`None` if it is empty), checking each, and
/// the range must hold every acknowledged write and at most the one unacknowledged of
/// each kind; `write(w, connection, acked)` then writes until its connection fails.
/// Returns how many items each writer's collection ends with.
fn kill_9_cycles(
    writers: usize,
    grow_past: u64,
    held: impl Fn(usize, &mut redis::Connection) -> Option<(u64, u64)>,
    write: impl Fn(usize, redis::Connection, &[AtomicU64; 2]) + Send + Sync + Copy + 'static,
) -> Vec<u64> {
    let cycles: usize = std::env::var("SERVER_CRASH_CYCLES").map_or(3, |n| n.parse().unwrap());
    let seed = std::env::var("SERVER_CRASH_SEED")
        .map_or_else(|_| rand::random(), |s| s.parse::<u64>().unwrap());
    eprintln!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let acked: Acked = Arc::new(
        (0..writers)
            .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
            .collect(),
    );
    let mut dir = tempfile::tempdir().unwrap();
    // The last round checks the last kill's store and writes no more.
    for cycle in 0..=cycles {
        let server = Server::start_in(dir, &["--fsync", "always", "--memtable-size", "1mb"]);
        let mut c = server.client();
        for (w, acked) in acked.iter().enumerate() {
            let (taken, added) = (
                acked[0].load(Ordering::SeqCst),
                acked[1].load(Ordering::SeqCst),
            );
            let (first, end) = held(w, &mut c).unwrap_or((added, added));
            let empty = first == end;
            assert!(
                first == taken || first == taken + 1 || empty,
                "cycle {cycle} writer {w}: starts at {first}, {taken} removals acknowledged"
            );
            assert!(
                end == added || end == added + 1 || (empty && first <= added + 1),
                "cycle {cycle} writer {w}: ends at {end}, {added} additions acknowledged"
            );
            acked[0].store(first, Ordering::SeqCst);
            acked[1].store(end, Ordering::SeqCst);
        }
        if cycle == cycles {
            break;
        }
        let threads: Vec<_> = (0..writers)
            .map(|w| {
                let c = server.client();
                let acked = acked.clone();
                std::thread::spawn(move || write(w, c, &acked[w]))
            })
            .collect();
        // Two more than the share: a kill may lose the unacknowledged write, and a
        // writer's size dips by one between its additions and its removals.
        let share = grow_past * (cycle as u64 + 1) / cycles as u64 + 2;
        let target = share + rng.gen_range(0..=grow_past / cycles as u64 / 2);
        let size = |a: &[AtomicU64; 2]| {
            let [taken, added] = a.each_ref().map(|n| n.load(Ordering::SeqCst));
            added.saturating_sub(taken)
        };
        let grown = || acked.iter().all(|a| size(a) >= target);
        while !grown() && !threads.iter().all(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..20)));
        dir = server.kill().unwrap();
        for t in threads {
            t.join().unwrap();
        }
    }
    let sizes: Vec<u64> = acked
        .iter()
        .map(|a| a[1].load(Ordering::SeqCst) - a[0].load(Ordering::SeqCst))
        .collect();
    eprintln!("{cycles} kills; collections of {sizes:?} items checked after the last");
    sizes
}

/// Elements of 60-360 bytes: a list node holds a few dozen, a list soon spans many.
fn list_element(w: usize, i: u64) -> String {
    format!("{w}:{i}:{}", "x".repeat(60 + (i as usize * 37) % 300))
}

/// Long lists (split into nodes written in one batch with their table) under SIGKILL:
/// writers push at the right and pop at the left of their own list, one element per
/// command. After each restart a list holds exactly the elements from the first not yet
/// popped to the last pushed, each whole (see [`kill_9_cycles`]).
#[test]
fn kill_9_leaves_long_lists_whole() {
    let held = |w: usize, c: &mut redis::Connection| {
        let list: Vec<String> = run(c, &["LRANGE", &format!("list:{w}"), "0", "-1"]);
        let head = list.first()?;
        let first: u64 = head.split(':').nth(1).unwrap().parse().unwrap();
        for (at, e) in list.iter().enumerate() {
            assert_eq!(
                e,
                &list_element(w, first + at as u64),
                "writer {w}: element {at}"
            );
        }
        Some((first, first + list.len() as u64))
    };
    let write = |w: usize, mut c: redis::Connection, acked: &[AtomicU64; 2]| {
        let key = format!("list:{w}");
        let [popped, pushed] = acked;
        for op in 0u64.. {
            if op % 3 == 2 {
                let Ok(got) = redis::cmd("LPOP").arg(&key).query::<Option<String>>(&mut c) else {
                    return;
                };
                if let Some(e) = got {
                    assert_eq!(
                        e,
                        list_element(w, popped.load(Ordering::SeqCst)),
                        "writer {w}"
                    );
                    popped.fetch_add(1, Ordering::SeqCst);
                }
            } else {
                let i = pushed.load(Ordering::SeqCst);
                let mut push = redis::cmd("RPUSH");
                push.arg(&key).arg(list_element(w, i));
                if push.query::<u64>(&mut c).is_err() {
                    return;
                }
                pushed.store(i + 1, Ordering::SeqCst);
            }
        }
    };
    let lengths = kill_9_cycles(2, 100, held, write);
    assert!(
        lengths.iter().all(|&n| n > 100),
        "the lists grew long: {lengths:?}"
    );
}

/// Values of 10-200 bytes: a hash node holds a few dozen fields, a hash soon spans many.
fn hash_value(w: usize, i: u64) -> String {
    format!("{w}:{i}:{}", "x".repeat(10 + (i as usize * 37) % 190))
}

/// Large hashes (split into nodes by field hash, written in one batch with their table)
/// under SIGKILL: writers set field i of their own hash, and remove their oldest field
/// every third command. After each restart a hash holds exactly the fields from the
/// first not yet removed to the last set, each with its value (see [`kill_9_cycles`]).
#[test]
fn kill_9_leaves_large_hashes_whole() {
    let held = |w: usize, c: &mut redis::Connection| {
        let hash: std::collections::HashMap<u64, String> =
            run(c, &["HGETALL", &format!("hash:{w}")]);
        let (&first, &last) = (hash.keys().min()?, hash.keys().max()?);
        assert_eq!(
            hash.len() as u64,
            last + 1 - first,
            "writer {w}: the fields have gaps"
        );
        for (i, v) in &hash {
            assert_eq!(v, &hash_value(w, *i), "writer {w}: field {i}");
        }
        Some((first, last + 1))
    };
    let write = |w: usize, mut c: redis::Connection, acked: &[AtomicU64; 2]| {
        let key = format!("hash:{w}");
        let [removed, set] = acked;
        for op in 0u64.. {
            if op % 3 == 2 {
                let i = removed.load(Ordering::SeqCst);
                let Ok(n) = redis::cmd("HDEL").arg(&key).arg(i).query::<u64>(&mut c) else {
                    return;
                };
                if n == 1 {
                    removed.store(i + 1, Ordering::SeqCst);
                }
            } else {
                let i = set.load(Ordering::SeqCst);
                let mut hset = redis::cmd("HSET");
                hset.arg(&key).arg(i).arg(hash_value(w, i));
                if hset.query::<u64>(&mut c).is_err() {
                    return;
                }
                set.store(i + 1, Ordering::SeqCst);
            }
        }
    };
    let sizes = kill_9_cycles(2, 300, held, write);
    assert!(
        sizes.iter().all(|&n| n > 300),
        "the hashes grew large: {sizes:?}"
    );
}

/// Long streams (split into nodes in ID order, written in one batch with their table)
/// under SIGKILL: writers add entry i (ID `i+1-0`, a value of 10-200 bytes) to their own
/// stream and delete their oldest entry every third command. After each restart a
/// stream holds exactly the entries from the first not yet deleted to the last added,
/// each with its value (see [`kill_9_cycles`]).
#[test]
fn kill_9_leaves_long_streams_whole() {
    type Entries = Vec<(String, Vec<(String, String)>)>;
    let held = |w: usize, c: &mut redis::Connection| {
        let stream: Entries = run(c, &["XRANGE", &format!("stream:{w}"), "-", "+"]);
        let number = |id: &str| id.split_once('-').unwrap().0.parse::<u64>().unwrap() - 1;
        let first = number(&stream.first()?.0);
        for (at, (id, fields)) in stream.iter().enumerate() {
            let i = first + at as u64;
            assert_eq!(number(id), i, "writer {w}: entry {at}");
            assert_eq!(
                fields,
                &[("v".to_string(), hash_value(w, i))],
                "writer {w}: {id}"
            );
        }
        Some((first, first + stream.len() as u64))
    };
    let write = |w: usize, mut c: redis::Connection, acked: &[AtomicU64; 2]| {
        let key = format!("stream:{w}");
        let [deleted, added] = acked;
        for op in 0u64.. {
            if op % 3 == 2 {
                let i = deleted.load(Ordering::SeqCst);
                let id = format!("{}-0", i + 1);
                let Ok(n) = redis::cmd("XDEL").arg(&key).arg(id).query::<u64>(&mut c) else {
                    return;
                };
                if n == 1 {
                    deleted.store(i + 1, Ordering::SeqCst);
                }
            } else {
                let i = added.load(Ordering::SeqCst);
                let mut xadd = redis::cmd("XADD");
                xadd.arg(&key)
                    .arg(format!("{}-0", i + 1))
                    .arg("v")
                    .arg(hash_value(w, i));
                if xadd.query::<String>(&mut c).is_err() {
                    return;
                }
                added.store(i + 1, Ordering::SeqCst);
            }
        }
    };
    let lengths = kill_9_cycles(2, 100, held, write);
    assert!(
        lengths.iter().all(|&n| n > 100),
        "the streams grew long: {lengths:?}"
    );
}

/// As `kill_9_leaves_large_hashes_whole`, for sorted sets: each writer adds members
/// scored by their number and pops the least, and after every crash its set holds a
/// run of members, each with its score, in order.
#[test]
fn kill_9_leaves_large_sorted_sets_whole() {
    let held = |w: usize, c: &mut redis::Connection| {
        let zset: Vec<(String, f64)> = run(
            c,
            &["ZRANGE", &format!("zset:{w}"), "0", "-1", "WITHSCORES"],
        );
        let (first, _) = zset.first()?;
        let first: u64 = first.trim_start_matches('m').parse().unwrap();
        for (at, (member, score)) in zset.iter().enumerate() {
            let i = first + at as u64;
            assert_eq!(
                member,
                &format!("m{i:06}"),
                "writer {w}: the members have gaps"
            );
            assert_eq!(*score, i as f64, "writer {w}: member {i}");
        }
        Some((first, first + zset.len() as u64))
    };
    let write = |w: usize, mut c: redis::Connection, acked: &[AtomicU64; 2]| {
        let key = format!("zset:{w}");
        let [popped, added] = acked;
        for op in 0u64.. {
            if op % 3 == 2 {
                let i = popped.load(Ordering::SeqCst);
                let Ok(got) = redis::cmd("ZPOPMIN").arg(&key).query::<Vec<String>>(&mut c) else {
                    return;
                };
                if got.first() == Some(&format!("m{i:06}")) {
                    popped.store(i + 1, Ordering::SeqCst);
                }
            } else {
                let i = added.load(Ordering::SeqCst);
                let mut zadd = redis::cmd("ZADD");
                zadd.arg(&key).arg(i).arg(format!("m{i:06}"));
                if zadd.query::<u64>(&mut c).is_err() {
                    return;
                }
                added.store(i + 1, Ordering::SeqCst);
            }
        }
    };
    let sizes = kill_9_cycles(2, 300, held, write);
    assert!(
        sizes.iter().all(|&n| n > 300),
        "the sorted sets grew large: {sizes:?}"
    );
}

fn transactional(writer: usize) -> bool {
    writer % 2 == 1
}

#[test]
fn scan_cursors_resume_from_keys_and_unknown_ones_are_refused() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    for i in 0..50 {
        run::<()>(&mut c, &["SET", &format!("key:{i:02}"), "v"]);
    }
    let (cursor, first): (String, Vec<String>) = run(&mut c, &["SCAN", "0", "COUNT", "20"]);
    assert_eq!(first.len(), 20);
    assert_eq!(first[0], "key:00", "an ordered engine scans in key order");
    // A cursor may be used again (a client retrying), and gives the same page.
    let again: (String, Vec<String>) = run(&mut c, &["SCAN", &cursor, "COUNT", "20"]);
    let (_, second): (String, Vec<String>) = run(&mut c, &["SCAN", &cursor, "COUNT", "20"]);
    assert_eq!(again.1, second);
    assert_eq!(second[0], "key:20");
    assert_eq!(
        run_err(&mut c, &["SCAN", "12345", "COUNT", "20"]),
        "ERR invalid cursor"
    );
    assert_eq!(run_err(&mut c, &["SCAN", "-1"]), "ERR invalid cursor");
}

#[test]
fn one_server_per_directory() {
    let server = lsm_server(&[]);
    let (code, err) = refused_start(server.dir.as_ref().unwrap().path(), &[]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("cannot open the lsm engine") && err.contains("another process"),
        "{err}"
    );
    server.alive();
}

/// maxmemory on lsm: with noeviction, over it writes are refused with Redis's OOM
/// error and reads and deletes go on; with an eviction policy every command over it
/// evicts (here, under a limit of 1 byte, every key, as Redis evicts under a limit
/// below its own footprint), the coldest first: LFU by the access clock's counters.
#[test]
fn maxmemory_on_lsm_refuses_writes_or_evicts() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    for i in 0..300 {
        run::<()>(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    // Each access counts: the read key's counter climbs far above the rest.
    run::<()>(&mut c, &["CONFIG", "SET", "lfu-log-factor", "0"]);
    for _ in 0..100 {
        run::<String>(&mut c, &["GET", "k7"]);
    }
    run::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ee"]);
    let mut events = server.client();
    let mut events = events.as_pubsub();
    events.subscribe("__keyevent@0__:evicted").unwrap();
    events
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
    let err = run_err(&mut c, &["SET", "another", "v"]);
    assert!(err.starts_with("OOM command not allowed"), "{err}");
    assert_eq!(run::<String>(&mut c, &["GET", "k5"]), "v");
    run::<()>(&mut c, &["DEL", "k5"]);
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 299);
    assert_eq!(info_field(&mut c, "evicted_keys"), "0");
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    assert!(eventually(5, || run::<i64>(&mut c, &["DBSIZE"]) == 0));
    assert_eq!(info_field(&mut c, "evicted_keys"), "299");
    let order: Vec<String> = (0..299)
        .map(|_| events.get_message().unwrap().get_payload().unwrap())
        .collect();
    let hot = order.iter().position(|k| k == "k7").unwrap();
    assert!(hot >= 290, "the hot key went {hot}th of 299");
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    drop(c);
    drop(server);
    // Set at startup too.
    let server = lsm_server(&["--maxmemory", "1", "--maxmemory-policy", "volatile-ttl"]);
    let mut c = server.client();
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "maxmemory*"]);
    assert_eq!(
        got[..4],
        ["maxmemory", "1", "maxmemory-policy", "volatile-ttl"]
    );
    // The first write may come before the server has measured its memory.
    // No key has a deadline, so there is nothing to evict: refused, as in Redis.
    assert!(eventually(5, || {
        let set = redis::cmd("SET").arg("k").arg("v").query::<()>(&mut c);
        set.is_err_and(|e| e.to_string().contains("OOM"))
    }));
}

/// A file size limit stands in for a full disk (SIGXFSZ ignored, so writes past it
/// fail with EFBIG): writes get an error that says what failed, reads go on, and after
/// a restart with room every acknowledged write is there.
#[test]
fn a_full_disk_fails_writes_clearly_and_keeps_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("bash")
        .args([
            "-c",
            "trap '' XFSZ; ulimit -f 256; exec \"$0\" --port 0 --fsync always --dir \"$1\"",
            env!("CARGO_BIN_EXE_hotkv-server"),
            dir.path().to_str().unwrap(),
        ])
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let port = support::ready_port(&mut child);
    let server = Server {
        child,
        port,
        dir: Some(dir),
        lsm: true,
    };
    let mut c = server.client();
    let value = "x".repeat(1000);
    let mut acked = 0;
    let error = loop {
        assert!(acked < 10_000, "256 KiB of log should have filled long ago");
        match redis::cmd("SET")
            .arg(format!("k{acked}"))
            .arg(&value)
            .query::<()>(&mut c)
        {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
    };
    let text = format!(
        "{} {}",
        error.code().unwrap_or("?"),
        error.detail().unwrap_or("")
    );
    assert!(
        text.contains("File too large") || text.contains("writes stopped"),
        "{text}"
    );
    assert!(acked > 0);
    eprintln!("{acked} writes, then: {text}");
    // Reads still work. The failed write was cut off the log, so a write small enough
    // for the room left may still succeed; a write that does not fit fails again.
    assert_eq!(run::<String>(&mut c, &["GET", "k0"]), value);
    let small = redis::cmd("SET")
        .arg("small")
        .arg("v")
        .query::<()>(&mut c)
        .is_ok();
    assert!(redis::cmd("SET")
        .arg("big")
        .arg(&value)
        .query::<()>(&mut c)
        .is_err());
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "big"]), 0);
    let dir = server.kill().unwrap();
    let server = Server::start_in(dir, &[]);
    let mut c = server.client();
    for i in 0..acked {
        assert_eq!(
            run::<String>(&mut c, &["GET", &format!("k{i}")]),
            value,
            "key {i}"
        );
    }
    assert_eq!(run::<i64>(&mut c, &["EXISTS", &format!("k{acked}")]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "small"]), i64::from(small));
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), acked + i64::from(small));
    run::<()>(&mut c, &["SET", "big", &value]);
}

#[test]
fn a_directory_holding_another_programs_store_is_refused() {
    use engine::Engine;
    let dir = tempfile::tempdir().unwrap();
    let store = lsm::Lsm::open(dir.path(), lsm::Options::default()).unwrap();
    store.put(b"foreign", b"not a hotkv value\x07").unwrap();
    store.close().unwrap();
    let (code, err) = refused_start(dir.path(), &[]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("key \"foreign\"") && err.contains("another program's store"),
        "{err}"
    );
}

/// Hashes and sets split into nodes (`field_nodes.rs`), whose nodes are the server's
/// own records written in one batch with the key's table, outlive a restart: every
/// field and member, after single and batched writes and removals.
#[test]
fn large_hashes_sets_and_sorted_sets_survive_a_restart() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    let mut pipe = redis::pipe();
    for i in 0..4000 {
        pipe.cmd("HSET")
            .arg("hash")
            .arg(format!("f{i}"))
            .arg(format!("v{i}"))
            .ignore();
        pipe.cmd("SADD").arg("set").arg(format!("m{i}")).ignore();
        pipe.cmd("ZADD")
            .arg("zset")
            .arg(i % 7)
            .arg(format!("m{i}"))
            .ignore();
    }
    for i in (0..4000).step_by(3) {
        pipe.cmd("HDEL").arg("hash").arg(format!("f{i}")).ignore();
        pipe.cmd("SREM").arg("set").arg(format!("m{i}")).ignore();
        pipe.cmd("ZREM").arg("zset").arg(format!("m{i}")).ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let dir = server.stop().unwrap();

    let server = Server::start_in(dir, &[]);
    let mut c = server.client();
    let kept: Vec<usize> = (0..4000).filter(|i| i % 3 != 0).collect();
    assert_eq!(run::<i64>(&mut c, &["HLEN", "hash"]), kept.len() as i64);
    assert_eq!(run::<i64>(&mut c, &["SCARD", "set"]), kept.len() as i64);
    let hash: std::collections::HashMap<String, String> = run(&mut c, &["HGETALL", "hash"]);
    let want: std::collections::HashMap<String, String> = kept
        .iter()
        .map(|i| (format!("f{i}"), format!("v{i}")))
        .collect();
    assert!(hash == want, "the hash read back differs");
    let set: std::collections::BTreeSet<String> = run(&mut c, &["SMEMBERS", "set"]);
    assert_eq!(set, kept.iter().map(|i| format!("m{i}")).collect());
    assert_eq!(run::<String>(&mut c, &["HGET", "hash", "f3998"]), "v3998");
    assert_eq!(run::<i64>(&mut c, &["SISMEMBER", "set", "m3"]), 0);
    let zset: Vec<(String, f64)> = run(&mut c, &["ZRANGE", "zset", "0", "-1", "WITHSCORES"]);
    let mut want: Vec<(String, f64)> = kept
        .iter()
        .map(|i| (format!("m{i}"), (i % 7) as f64))
        .collect();
    want.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(zset, want);
    assert_eq!(
        run::<f64>(&mut c, &["ZSCORE", "zset", "m3998"]),
        (3998 % 7) as f64
    );
    let rank = want.iter().position(|(m, _)| m == "m3998").unwrap();
    assert_eq!(run::<usize>(&mut c, &["ZRANK", "zset", "m3998"]), rank);
    assert_eq!(run::<i64>(&mut c, &["DEL", "hash", "set", "zset"]), 3);
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 0);
}

/// A consumer group's pending entries (in pages once there are many,
/// `stream_pending.rs`) under SIGKILL: each writer adds entry i and delivers it to its
/// group in one script, so that it is pending, and acknowledges its oldest pending
/// entry every third command. After each restart the group's pending entries are
/// exactly the entries from the first not yet acknowledged to the last delivered, each
/// delivered once to the one consumer (see [`kill_9_cycles`]).
#[test]
fn kill_9_leaves_pending_entries_whole() {
    const ADD_AND_DELIVER: &str = "redis.call('XADD', KEYS[1], ARGV[1], 'v', ARGV[2]) \
        return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', 1, 'STREAMS', KEYS[1], '>')";
    let held = |w: usize, c: &mut redis::Connection| {
        let key = format!("pending:{w}");
        // No group yet: the first cycle, or killed before it was made.
        let rows: Vec<(String, String, i64, i64)> = match redis::cmd("XPENDING")
            .arg(&[key.as_str(), "g", "-", "+", "1000000"][..])
            .query(c)
        {
            Err(e) if e.code() == Some("NOGROUP") => return None,
            rows => rows.unwrap(),
        };
        let number = |id: &str| id.split_once('-').unwrap().0.parse::<u64>().unwrap() - 1;
        let first = number(&rows.first()?.0);
        for (at, (id, consumer, _, deliveries)) in rows.iter().enumerate() {
            assert_eq!(number(id), first + at as u64, "writer {w}: pending {at}");
            assert_eq!(
                (consumer.as_str(), *deliveries),
                ("c", 1),
                "writer {w}: {id}"
            );
        }
        let summary: (i64, String, String, Vec<(String, String)>) =
            run(c, &["XPENDING", &key, "g"]);
        assert_eq!(
            summary.0 as usize,
            rows.len(),
            "writer {w}: the summary's count"
        );
        assert_eq!(summary.3, [("c".to_string(), rows.len().to_string())]);
        Some((first, first + rows.len() as u64))
    };
    let write = |w: usize, mut c: redis::Connection, acked: &[AtomicU64; 2]| {
        let key = format!("pending:{w}");
        let created = redis::cmd("XGROUP")
            .arg(&["CREATE", key.as_str(), "g", "0", "MKSTREAM"][..])
            .query::<()>(&mut c);
        if let Err(e) = created {
            if e.code() != Some("BUSYGROUP") {
                return;
            }
        }
        let [done, added] = acked;
        for op in 0u64.. {
            if op % 3 == 2 {
                let i = done.load(Ordering::SeqCst);
                let id = format!("{}-0", i + 1);
                let Ok(n) = redis::cmd("XACK")
                    .arg(&key)
                    .arg("g")
                    .arg(id)
                    .query::<u64>(&mut c)
                else {
                    return;
                };
                if n == 1 {
                    done.store(i + 1, Ordering::SeqCst);
                }
            } else {
                let i = added.load(Ordering::SeqCst);
                let mut script = redis::cmd("EVAL");
                script
                    .arg(ADD_AND_DELIVER)
                    .arg(1)
                    .arg(&key)
                    .arg(format!("{}-0", i + 1))
                    .arg(hash_value(w, i));
                if script.query::<redis::Value>(&mut c).is_err() {
                    return;
                }
                added.store(i + 1, Ordering::SeqCst);
            }
        }
    };
    let lengths = kill_9_cycles(2, 200, held, write);
    assert!(
        lengths.iter().all(|&n| n > 200),
        "the pending lists grew past a page: {lengths:?}"
    );
}

/// FLUSHALL deletes each key with a tombstone, which every later walk of the keys
/// (SCAN, KEYS, RANDOMKEY, the next FLUSHALL) would step over until compaction reached
/// it: after FLUSHALL of many keys the server has the engine compact the whole store,
/// so the tables soon hold only the server's own records, and keys written after, as
/// well as a restart, are unaffected.
#[test]
fn flushall_of_many_keys_leaves_no_tombstones_in_the_tables() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    let table_bytes = |c: &mut redis::Connection| -> u64 {
        (0..7)
            .map(|level| {
                info_field(c, &format!("engine_l{level}_bytes"))
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    for chunk in 0..20 {
        let mut mset = vec!["MSET".to_string()];
        for i in 0..500 {
            mset.push(format!("key:{chunk}:{i}"));
            mset.push("x".repeat(100));
        }
        let args: Vec<&str> = mset.iter().map(String::as_str).collect();
        run::<()>(&mut c, &args);
    }
    run::<()>(&mut c, &["FLUSHALL"]);
    assert!(
        eventually(20, || {
            info_field(&mut c, "engine_whole_compactions") == "1"
                && info_field(&mut c, "engine_immutable_memtables") == "0"
        }),
        "no whole-store compaction after FLUSHALL"
    );
    // 10,000 keys of 100 bytes took a megabyte; their tombstones some 100 KB.
    let left = table_bytes(&mut c);
    assert!(left < 4096, "{left} bytes of tables left after FLUSHALL");
    run::<()>(&mut c, &["SET", "after", "1"]);
    let (cursor, keys): (String, Vec<String>) = run(&mut c, &["SCAN", "0"]);
    assert_eq!((cursor.as_str(), keys), ("0", vec!["after".to_string()]));
    let server = server.restarted_if_lsm();
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 1);
    assert_eq!(run::<String>(&mut c, &["GET", "after"]), "1");
}

/// Keys deleted one by one also leave tombstones. A SCAN page gives up after stepping
/// over about a hundred entries per key asked for (the reply may then be empty, with a
/// cursor to go on from, as Redis's after ten empty buckets per key); a full scan still
/// returns every live key once, and once scans have stepped over as many deleted keys
/// as the store holds, the store is compacted so that SCAN 0 finds the rest at once.
#[test]
fn scans_through_deleted_keys_answer_soon_and_get_them_compacted_away() {
    let server = lsm_server(&[]);
    let mut c = server.client();
    let keys: Vec<String> = (0..5_000).map(|i| format!("key:{i:05}")).collect();
    for chunk in keys.chunks(500) {
        let mut mset = vec!["MSET"];
        for key in chunk {
            mset.extend([key.as_str(), "v"]);
        }
        run::<()>(&mut c, &mset);
    }
    for chunk in keys.chunks(500) {
        let mut del = vec!["DEL"];
        del.extend(chunk.iter().map(String::as_str));
        assert_eq!(run::<i64>(&mut c, &del), 500);
    }
    run::<()>(&mut c, &["MSET", "a", "1", "zz", "2"]);

    let (cursor, page): (u64, Vec<String>) = run(&mut c, &["SCAN", "0"]);
    assert_eq!(page, ["a"], "the first page ends in the deleted keys");
    assert_ne!(cursor, 0);
    let (mut cursor, mut found, mut pages) = (cursor, vec!["a".to_string()], 1);
    while cursor != 0 {
        let (next, page): (u64, Vec<String>) = run(&mut c, &["SCAN", &cursor.to_string()]);
        (cursor, pages) = (next, pages + 1);
        found.extend(page);
    }
    assert_eq!(found, ["a", "zz"]);
    assert!(
        pages > 2,
        "a scan through 10,000 entries took {pages} pages of 10 keys"
    );
    // One or more: a page whose cursor predates the first compaction's end may still
    // count the tombstones it steps over toward another.
    assert!(
        eventually(20, || info_field(&mut c, "engine_whole_compactions") != "0"),
        "scans stepped over 10,000 entries and no compaction followed"
    );
    let (cursor, page): (u64, Vec<String>) = run(&mut c, &["SCAN", "0"]);
    assert_eq!((cursor, page), (0, vec!["a".to_string(), "zz".to_string()]));
    assert_eq!(run::<Vec<String>>(&mut c, &["KEYS", "*"]), ["a", "zz"]);
}
