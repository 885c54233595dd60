//! Lists, hashes, sets and sorted sets through the real server: their atomicity under
//! concurrent clients, and how they live with the keyspace (types, expiry, RENAME,
//! COPY, transactions). Replies to single commands are checked byte for byte against
//! redis-server by `tests/clients/test_compat.py`.

mod support;

use std::collections::{BTreeSet, HashSet};

use support::{run, run_err, Server};

const WRONG_TYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Pipelines from several clients on the same keys, whose writes the lsm engine's
/// server gathers into one batch per pipeline (`gathered_writes.rs`): no write is
/// lost, each pipeline reads its own writes, and a client blocked on a stream (read
/// without the key's lock) is woken by a pipelined write and finds it.
#[test]
fn pipelined_writers_on_shared_keys_lose_no_write() {
    const THREADS: usize = 4;
    const PIPELINES: usize = 50;
    const EACH: usize = 10;
    let server = Server::start();
    std::thread::scope(|s| {
        let mut reader = server.client();
        let waiter = s.spawn(move || {
            let read: redis::Value = redis::cmd("XREAD")
                .arg(&["BLOCK", "0", "STREAMS", "events", "$"])
                .query(&mut reader)
                .unwrap();
            read
        });
        let mut c = server.client();
        assert!(support::eventually(5, || {
            let info: String = run(&mut c, &["INFO", "clients"]);
            info.contains("blocked_clients:1")
        }));
        for t in 0..THREADS {
            let server = &server;
            s.spawn(move || {
                let mut c = server.client();
                for p in 0..PIPELINES {
                    let mut pipe = redis::pipe();
                    for i in 0..EACH {
                        pipe.cmd("INCR").arg("n");
                        pipe.cmd("RPUSH").arg("list").arg(format!("{t}:{p}:{i}"));
                        pipe.cmd("HINCRBY")
                            .arg("hash")
                            .arg(format!("f{}", i % 3))
                            .arg(1);
                        pipe.cmd("GET").arg("n");
                    }
                    if t == 0 && p == PIPELINES / 2 {
                        pipe.cmd("XADD").arg(&["events", "*", "from", "a pipeline"]);
                    }
                    let replies: Vec<redis::Value> = pipe.query(&mut c).unwrap();
                    for four in replies.chunks_exact(4) {
                        let incr: i64 = redis::from_redis_value(&four[0]).unwrap();
                        let get: String = redis::from_redis_value(&four[3]).unwrap();
                        assert!(
                            get.parse::<i64>().unwrap() >= incr,
                            "a pipeline's GET {get} missed its INCR {incr}"
                        );
                    }
                }
            });
        }
        let read = waiter.join().unwrap();
        assert!(format!("{read:?}").contains("a pipeline"), "{read:?}");
    });
    let mut c = server.client();
    let total = THREADS * PIPELINES * EACH;
    assert_eq!(run::<usize>(&mut c, &["GET", "n"]), total);
    let list: Vec<String> = run(&mut c, &["LRANGE", "list", "0", "-1"]);
    assert_eq!(
        list.iter().collect::<HashSet<_>>().len(),
        total,
        "each element once"
    );
    let counts: Vec<usize> = run(&mut c, &["HMGET", "hash", "f0", "f1", "f2"]);
    assert_eq!(counts.iter().sum::<usize>(), total);
}

#[test]
fn concurrent_writers_lose_no_element_field_or_member() {
    let server = Server::start();
    const THREADS: usize = 8;
    const EACH: usize = 300;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let server = &server;
            s.spawn(move || {
                let mut c = server.client();
                for i in 0..EACH {
                    let item = format!("{t}:{i}");
                    let _: i64 = run(&mut c, &["RPUSH", "list", &item]);
                    let _: i64 = run(&mut c, &["HINCRBY", "hash", &format!("f{}", i % 7), "1"]);
                    let _: i64 = run(&mut c, &["SADD", "set", &item]);
                    let _: String = run(&mut c, &["ZINCRBY", "zset", "1", &format!("m{}", i % 5)]);
                }
            });
        }
    });
    let mut c = server.client();
    let list: Vec<String> = run(&mut c, &["LRANGE", "list", "0", "-1"]);
    assert_eq!(list.len(), THREADS * EACH);
    assert_eq!(
        list.iter().collect::<HashSet<_>>().len(),
        THREADS * EACH,
        "an element was pushed twice"
    );
    // Each writer's elements keep its order.
    for t in 0..THREADS {
        let mine: Vec<usize> = list
            .iter()
            .filter_map(|e| e.strip_prefix(&format!("{t}:")))
            .map(|i| i.parse().unwrap())
            .collect();
        assert_eq!(mine, (0..EACH).collect::<Vec<_>>());
    }
    let fields: Vec<(String, i64)> = run(&mut c, &["HGETALL", "hash"]);
    assert_eq!(
        fields.iter().map(|f| f.1).sum::<i64>(),
        (THREADS * EACH) as i64
    );
    let card: usize = run(&mut c, &["SCARD", "set"]);
    assert_eq!(card, THREADS * EACH);
    let scores: Vec<(String, f64)> = run(&mut c, &["ZRANGE", "zset", "0", "-1", "WITHSCORES"]);
    assert_eq!(
        scores.iter().map(|s| s.1).sum::<f64>(),
        (THREADS * EACH) as f64
    );
}

/// Readers of a large hash and a large sorted set (split into nodes) while writers
/// change both from other connections, each read and write on whichever io thread
/// serves its connection (the memory engine's readers borrow the nodes of the table
/// they read, which writers replace and retire): every reply is whole (the fields and
/// members no writer touches, with their values, scores and ranks), every written
/// value is one its writer wrote, and the end state is the last writes. (Db-level
/// threads race on the nodes directly: `concurrent_*` in `field_nodes.rs`,
/// `score_nodes.rs` and `list_nodes.rs`.)
#[test]
fn readers_of_large_collections_see_whole_values_while_writers_replace_nodes() {
    const BASE: usize = 2_000;
    const WRITERS: usize = 3;
    const READERS: usize = 3;
    // Long enough for the server to spread its connections over its io threads.
    const WRITING: std::time::Duration = std::time::Duration::from_millis(1500);
    const SLOTS: usize = 50;
    let server = Server::start();
    let mut c = server.client();
    let base_value = "b".repeat(40);
    for chunk in (0..BASE).collect::<Vec<_>>().chunks(500) {
        let mut hset = vec!["HSET".to_string(), "h".into()];
        let mut zadd = vec!["ZADD".to_string(), "z".into()];
        for i in chunk {
            hset.extend([format!("base:{i}"), base_value.clone()]);
            zadd.extend([i.to_string(), format!("base:{i}")]);
        }
        let _: i64 = run(&mut c, &hset.iter().map(String::as_str).collect::<Vec<_>>());
        let _: i64 = run(&mut c, &zadd.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let writing = std::sync::atomic::AtomicUsize::new(WRITERS);
    let check_hash = |fields: &[(String, String)]| {
        let base = fields
            .iter()
            .filter(|(f, _)| f.starts_with("base:"))
            .count();
        assert_eq!(base, BASE, "a read lost or doubled untouched fields");
        for (f, v) in fields {
            match f.strip_prefix('w') {
                None => assert_eq!(v, &base_value, "field {f}"),
                // Writer t's slot field holds "t:round".
                Some(rest) => {
                    let t = rest.split(':').next().unwrap();
                    assert!(v.starts_with(&format!("{t}:")), "field {f} holds {v}");
                }
            }
        }
    };
    let rounds: Vec<usize> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (server, writing) = (&server, &writing);
                s.spawn(move || {
                    let mut c = server.client();
                    let start = std::time::Instant::now();
                    let mut round = 0;
                    while start.elapsed() < WRITING {
                        let slot = round % SLOTS;
                        let field = format!("w{t}:{slot}");
                        let mut pipe = redis::pipe();
                        pipe.cmd("HSET")
                            .arg("h")
                            .arg(&field)
                            .arg(format!("{t}:{round}"));
                        // Scored after every base member, whose ranks then stay put.
                        pipe.cmd("ZADD").arg("z").arg(BASE + round).arg(&field);
                        if round % 3 == 2 {
                            let gone = format!("w{t}:{}", (round + SLOTS / 2) % SLOTS);
                            pipe.cmd("HDEL").arg("h").arg(&gone);
                            pipe.cmd("ZREM").arg("z").arg(&gone);
                        }
                        let _: redis::Value = pipe.query(&mut c).unwrap();
                        round += 1;
                    }
                    writing.fetch_sub(1, std::sync::atomic::Ordering::Release);
                    round
                })
            })
            .collect();
        for r in 0..READERS {
            let (server, writing, check_hash) = (&server, &writing, &check_hash);
            let base_value = &base_value;
            s.spawn(move || {
                let mut c = server.client();
                let mut reads = 0;
                while writing.load(std::sync::atomic::Ordering::Acquire) > 0 || reads < 3 {
                    reads += 1;
                    let fields: Vec<(String, String)> = run(&mut c, &["HGETALL", "h"]);
                    check_hash(&fields);
                    let i = (reads * 7 + r * 13) % BASE;
                    let v: String = run(&mut c, &["HGET", "h", &format!("base:{i}")]);
                    assert_eq!(&v, base_value);
                    let score: f64 = run(&mut c, &["ZSCORE", "z", &format!("base:{i}")]);
                    assert_eq!(score, i as f64);
                    let rank: usize = run(&mut c, &["ZRANK", "z", &format!("base:{i}")]);
                    assert_eq!(rank, i);
                    let slice: Vec<(String, f64)> = run(
                        &mut c,
                        &[
                            "ZRANGE",
                            "z",
                            &rank.to_string(),
                            &(rank + 40).to_string(),
                            "WITHSCORES",
                        ],
                    );
                    assert_eq!(slice[0], (format!("base:{i}"), i as f64));
                    assert!(slice.windows(2).all(|w| w[0].1 <= w[1].1), "out of order");
                }
            });
        }
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let fields: Vec<(String, String)> = run(&mut c, &["HGETALL", "h"]);
    check_hash(&fields);
    let card: usize = run(&mut c, &["ZCARD", "z"]);
    assert_eq!(
        card,
        fields.len(),
        "the hash and the sorted set name the same fields"
    );
    // The last write of each writer's slot: set, or deleted after it.
    for (t, &rounds) in rounds.iter().enumerate() {
        for slot in 0..SLOTS {
            let mut last = None;
            for round in 0..rounds {
                if round % SLOTS == slot {
                    last = Some(format!("{t}:{round}"));
                }
                if round % 3 == 2 && (round + SLOTS / 2) % SLOTS == slot {
                    last = None;
                }
            }
            let got: Option<String> = run(&mut c, &["HGET", "h", &format!("w{t}:{slot}")]);
            assert_eq!(got, last, "writer {t} slot {slot}");
        }
    }
}

#[test]
fn concurrent_pops_hand_each_element_to_one_client() {
    let server = Server::start();
    let mut c = server.client();
    const N: usize = 2000;
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let mut args = vec!["RPUSH".to_string(), "queue".into()];
        args.extend(chunk.iter().map(|i| i.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _: i64 = run(&mut c, &args);
    }
    let popped: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|t| {
                let server = &server;
                s.spawn(move || {
                    let mut c = server.client();
                    let mut mine = Vec::new();
                    loop {
                        let (cmd, count) = if t % 2 == 0 {
                            ("LPOP", "3")
                        } else {
                            ("RPOP", "2")
                        };
                        let got: Option<Vec<String>> = run(&mut c, &[cmd, "queue", count]);
                        match got {
                            Some(items) => mine.extend(items),
                            None => return mine,
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<usize> = popped
        .iter()
        .flatten()
        .map(|e| e.parse().unwrap())
        .collect();
    assert_eq!(all.len(), N, "every element popped exactly once");
    assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), N);
    let exists: i64 = run(&mut c, &["EXISTS", "queue"]);
    assert_eq!(exists, 0, "the emptied list is deleted");
}

#[test]
fn types_are_kept_and_checked() {
    let server = Server::start();
    let mut c = server.client();
    let _: i64 = run(&mut c, &["LPUSH", "l", "a"]);
    let _: i64 = run(&mut c, &["HSET", "h", "f", "v"]);
    let _: i64 = run(&mut c, &["SADD", "s", "m"]);
    let _: i64 = run(&mut c, &["ZADD", "z", "1", "m"]);
    let _: () = run(&mut c, &["SET", "str", "v"]);
    for (key, kind) in [
        ("l", "list"),
        ("h", "hash"),
        ("s", "set"),
        ("z", "zset"),
        ("str", "string"),
    ] {
        let t: String = run(&mut c, &["TYPE", key]);
        assert_eq!(t, kind);
        let scanned: (u64, Vec<String>) = run(&mut c, &["SCAN", "0", "COUNT", "100", "TYPE", kind]);
        assert_eq!(scanned.1, vec![key.to_string()], "SCAN TYPE {kind}");
    }
    for (cmd, args) in [
        ("GET", vec!["l"]),
        ("INCR", vec!["h"]),
        ("APPEND", vec!["s", "x"]),
        ("LPUSH", vec!["h", "x"]),
        ("HGET", vec!["l", "f"]),
        ("SADD", vec!["z", "x"]),
        ("ZADD", vec!["s", "1", "x"]),
        ("LRANGE", vec!["str", "0", "1"]),
    ] {
        let mut call = vec![cmd];
        call.extend(args);
        assert_eq!(run_err(&mut c, &call), WRONG_TYPE, "{call:?}");
    }
    // SET replaces any type; nothing else was changed by the refused writes.
    let _: () = run(&mut c, &["SET", "l", "now a string"]);
    let t: String = run(&mut c, &["TYPE", "l"]);
    assert_eq!(t, "string");
    let members: Vec<String> = run(&mut c, &["SMEMBERS", "s"]);
    assert_eq!(members, vec!["m"]);
}

#[test]
fn collections_expire_rename_copy_and_join_transactions() {
    let server = Server::start();
    let mut c = server.client();
    let _: i64 = run(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    let _: i64 = run(&mut c, &["PEXPIRE", "l", "100000"]);
    // A write keeps the expiry, as in Redis.
    let _: i64 = run(&mut c, &["RPUSH", "l", "d"]);
    let ttl: i64 = run(&mut c, &["PTTL", "l"]);
    assert!(ttl > 0 && ttl <= 100_000, "{ttl}");
    let _: () = run(&mut c, &["RENAME", "l", "l2"]);
    let _: i64 = run(&mut c, &["COPY", "l2", "l3"]);
    let _: i64 = run(&mut c, &["RPUSH", "l3", "e"]);
    let l2: Vec<String> = run(&mut c, &["LRANGE", "l2", "0", "-1"]);
    let l3: Vec<String> = run(&mut c, &["LRANGE", "l3", "0", "-1"]);
    assert_eq!(l2, ["a", "b", "c", "d"]);
    assert_eq!(l3, ["a", "b", "c", "d", "e"]);
    let _: i64 = run(&mut c, &["HSET", "h", "f", "1"]);
    let _: i64 = run(&mut c, &["PEXPIRE", "h", "30"]);
    std::thread::sleep(std::time::Duration::from_millis(60));
    let gone: Option<String> = run(&mut c, &["HGET", "h", "f"]);
    assert_eq!(gone, None, "an expired hash reads as missing");
    let replies: (i64, i64, Vec<String>) = redis::pipe()
        .atomic()
        .cmd("SADD")
        .arg("s")
        .arg("1")
        .arg("2")
        .cmd("SREM")
        .arg("s")
        .arg("1")
        .cmd("SMEMBERS")
        .arg("s")
        .query(&mut c)
        .unwrap();
    assert_eq!(replies, (2, 1, vec!["2".to_string()]));
}

#[test]
fn blocked_poppers_each_get_every_element_once() {
    let server = Server::start();
    const CONSUMERS: usize = 6;
    const N: usize = 600;
    let got: Vec<Vec<String>> = std::thread::scope(|s| {
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|t| {
                let server = &server;
                s.spawn(move || {
                    let mut c = server.client();
                    let mut mine = Vec::new();
                    loop {
                        // Two queues, no timeout; a stop mark ends the consumer.
                        let cmd = if t % 2 == 0 { "BLPOP" } else { "BRPOP" };
                        let popped: Option<(String, String)> =
                            run(&mut c, &[cmd, "q1", "q2", "q3", "0"]);
                        let (key, element) = popped.expect("no timeout");
                        if element == "stop" {
                            return mine;
                        }
                        assert!(element.starts_with(&key), "{key} gave {element}");
                        mine.push(element);
                    }
                })
            })
            .collect();
        let server = &server;
        s.spawn(move || {
            let mut c = server.client();
            for i in 0..N {
                let key = if i % 3 == 0 { "q1" } else { "q2" };
                let _: i64 = run(&mut c, &["RPUSH", key, &format!("{key}-{i}")]);
                if i % 50 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
            // Each consumer takes one stop mark and then pops no more; the elements
            // before the marks in each queue are taken first.
            for _ in 0..CONSUMERS {
                let _: i64 = run(&mut c, &["RPUSH", "q3", "stop"]);
            }
        });
        consumers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<&String> = got.iter().flatten().collect();
    assert_eq!(all.len(), N);
    assert_eq!(
        all.iter().collect::<HashSet<_>>().len(),
        N,
        "an element was delivered twice"
    );
}

#[test]
fn a_blocked_client_times_out_is_unblocked_or_moves_what_arrives() {
    let server = Server::start();
    let mut c = server.client();
    let started = std::time::Instant::now();
    let none: Option<(String, String)> = run(&mut c, &["BLPOP", "nothing", "0.2"]);
    assert_eq!(none, None);
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    // Inside a transaction a blocking command answers at once.
    let replies: (Option<(String, String)>,) = redis::pipe()
        .atomic()
        .cmd("BRPOP")
        .arg("nothing")
        .arg("0")
        .query(&mut c)
        .unwrap();
    assert_eq!(replies.0, None);
    // BLMOVE waits for its source, then moves.
    std::thread::scope(|s| {
        let mover = s.spawn(|| {
            let mut c = server.client();
            let moved: Option<String> =
                run(&mut c, &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]);
            moved
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let _: i64 = run(&mut c, &["RPUSH", "src", "x"]);
        assert_eq!(mover.join().unwrap().as_deref(), Some("x"));
    });
    let dst: Vec<String> = run(&mut c, &["LRANGE", "dst", "0", "-1"]);
    assert_eq!(dst, ["x"]);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "src"]), 0);
    // CLIENT UNBLOCK ends a wait that has no timeout.
    std::thread::scope(|s| {
        let mut blocked = server.client();
        let id: i64 = run(&mut blocked, &["CLIENT", "ID"]);
        let waiter = s.spawn(move || {
            let popped: Option<(String, String)> = run(&mut blocked, &["BZPOPMIN", "z", "0"]);
            popped
        });
        assert!(support::eventually(5, || {
            let n: i64 = run(&mut c, &["CLIENT", "UNBLOCK", &id.to_string()]);
            n == 1
        }));
        assert_eq!(waiter.join().unwrap(), None);
    });
}

/// A blocked pop is not answered WRONGTYPE when the key it waits for becomes another
/// type: as in Redis, it goes on waiting and is served by the next write of its type.
/// (On its first try, a key of another type is an error, as before.)
#[test]
fn a_blocked_pop_waits_past_a_key_of_another_type() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "str", "x"]);
    assert_eq!(run_err(&mut c, &["BLPOP", "str", "0"]), WRONG_TYPE);
    assert_eq!(
        run_err(&mut c, &["BLMOVE", "str", "d", "LEFT", "LEFT", "0"]),
        WRONG_TYPE
    );
    for (pop, wait_key, push) in [
        (
            &["BZPOPMIN", "k", "0"][..],
            "k",
            &["ZADD", "k", "1", "bar"][..],
        ),
        (&["BLPOP", "k", "0"][..], "k", &["RPUSH", "k", "bar"][..]),
        (
            &["BLMPOP", "0", "1", "k", "LEFT"][..],
            "k",
            &["RPUSH", "k", "bar"][..],
        ),
        (
            &["BZMPOP", "0", "1", "k", "MIN"][..],
            "k",
            &["ZADD", "k", "1", "bar"][..],
        ),
        (
            &["BLMOVE", "k", "d", "LEFT", "LEFT", "0"][..],
            "k",
            &["RPUSH", "k", "bar"][..],
        ),
    ] {
        let _: i64 = run(&mut c, &["DEL", "k", "d"]);
        std::thread::scope(|s| {
            let mut blocked = server.client();
            let waiter = s.spawn(move || {
                redis::cmd(pop[0])
                    .arg(&pop[1..])
                    .query::<redis::Value>(&mut blocked)
            });
            assert!(support::eventually(5, || {
                let info: String = run(&mut c, &["INFO", "clients"]);
                info.contains("blocked_clients:1")
            }));
            // Written, then replaced by a string, in one transaction; the waiter is woken
            // and finds the string.
            let _: () = redis::pipe()
                .atomic()
                .cmd(push[0])
                .arg(&push[1..])
                .cmd("DEL")
                .arg(wait_key)
                .cmd("SET")
                .arg(wait_key)
                .arg("foo")
                .query(&mut c)
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            let blocked: String = run(&mut c, &["INFO", "clients"]);
            assert!(
                blocked.contains("blocked_clients:1"),
                "{pop:?} stopped waiting"
            );
            let _: i64 = run(&mut c, &["DEL", wait_key]);
            let _: i64 = run(&mut c, push);
            let reply = waiter.join().unwrap().expect("served, not an error");
            assert!(format!("{reply:?}").contains("bar"), "{pop:?}: {reply:?}");
        });
    }
}

/// Clients blocked on one key are served in the order they blocked, as in Redis: four
/// BLPOPs, then one push of four elements, give the first waiter the first element.
#[test]
fn blocked_clients_are_served_in_the_order_they_blocked() {
    let server = Server::start();
    let mut c = server.client();
    for round in 0..3 {
        std::thread::scope(|s| {
            let mut waiters = Vec::new();
            for i in 0..4 {
                let server = &server;
                waiters.push(s.spawn(move || {
                    let mut w = server.client();
                    let got: (String, String) = run(&mut w, &["BLPOP", "queue", "0"]);
                    got.1
                }));
                let blocked = format!("blocked_clients:{}", i + 1);
                assert!(support::eventually(5, || {
                    let info: String = run(&mut c, &["INFO", "clients"]);
                    info.contains(&blocked)
                }));
            }
            let _: i64 = run(&mut c, &["RPUSH", "queue", "a", "b", "c", "d"]);
            let got: Vec<String> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
            assert_eq!(got, ["a", "b", "c", "d"], "round {round}");
        });
    }
}

/// As in Redis, a push's reply comes after the clients it woke have run their
/// commands again, and those their own pushes woke: the pusher's next command sees
/// the lists as the waiters left them. Two BRPOPLPUSHes in a circle (Redis's own
/// test), a BLPOP woken by a pipelined push and read in the same pipeline, and a
/// BLMOVE chain of three; many rounds, since a race would lose only some of them.
#[test]
fn a_push_replies_after_the_clients_it_woke_are_served() {
    let server = Server::start();
    let mut c = server.client();
    let blocked = |c: &mut redis::Connection, n: usize| {
        let want = format!("blocked_clients:{n}");
        assert!(support::eventually(5, || {
            let info: String = run(c, &["INFO", "clients"]);
            info.contains(&want)
        }));
    };
    for round in 0..40 {
        std::thread::scope(|s| {
            let server = &server;
            let circle = [("l1", "l2"), ("l2", "l1")].map(|(from, to)| {
                let waiter = s.spawn(move || {
                    let mut w = server.client();
                    run::<String>(&mut w, &["BRPOPLPUSH", from, to, "0"])
                });
                waiter
            });
            blocked(&mut c, 2);
            let _: i64 = run(&mut c, &["RPUSH", "l1", "x"]);
            let l1: Vec<String> = run(&mut c, &["LRANGE", "l1", "0", "-1"]);
            let l2: Vec<String> = run(&mut c, &["LRANGE", "l2", "0", "-1"]);
            assert_eq!((l1, l2), (vec!["x".to_string()], vec![]), "round {round}");
            for waiter in circle {
                assert_eq!(waiter.join().unwrap(), "x");
            }
            let _: i64 = run(&mut c, &["DEL", "l1"]);

            let popper = s.spawn(move || {
                let mut w = server.client();
                run::<(String, String)>(&mut w, &["BLPOP", "q", "0"])
            });
            blocked(&mut c, 1);
            let (pushed, left): (i64, i64) = redis::pipe()
                .cmd("RPUSH")
                .arg("q")
                .arg("only")
                .cmd("LLEN")
                .arg("q")
                .query(&mut c)
                .unwrap();
            assert_eq!((pushed, left), (1, 0), "round {round}");
            assert_eq!(popper.join().unwrap().1, "only");

            let chain = [("c1", "c2"), ("c2", "c3"), ("c3", "c4")].map(|(from, to)| {
                let mover = s.spawn(move || {
                    let mut w = server.client();
                    run::<String>(&mut w, &["BLMOVE", from, to, "LEFT", "RIGHT", "0"])
                });
                mover
            });
            blocked(&mut c, 3);
            let _: i64 = run(&mut c, &["RPUSH", "c1", "y"]);
            let at_end: Vec<String> = run(&mut c, &["LRANGE", "c4", "0", "-1"]);
            assert_eq!(at_end, ["y"], "round {round}");
            for mover in chain {
                assert_eq!(mover.join().unwrap(), "y");
            }
            let _: i64 = run(&mut c, &["DEL", "c4"]);
        });
    }
}

/// Every field or member a full HSCAN or SSCAN of `key` returns, page by page with
/// `COUNT count`, and how many pages it took.
fn scanned(
    c: &mut redis::Connection,
    command: &str,
    key: &str,
    count: usize,
) -> (Vec<String>, usize) {
    let (mut cursor, mut pages, mut out) = ("0".to_string(), 0, Vec::new());
    loop {
        let (next, items): (String, Vec<String>) =
            run(c, &[command, key, &cursor, "COUNT", &count.to_string()]);
        let step = if command == "HSCAN" { 2 } else { 1 };
        out.extend(items.into_iter().step_by(step));
        pages += 1;
        cursor = next;
        if cursor == "0" {
            return (out, pages);
        }
    }
}

/// Hashes and sets large enough to be split into nodes (`field_nodes.rs`) answer as
/// a map and a set would: fields set one by one and thousands at once, removed,
/// incremented, scanned page by page, popped and picked at random, copied, renamed
/// and deleted.
#[test]
fn large_hashes_and_sets_answer_field_by_field() {
    let server = Server::start();
    let mut c = server.client();
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("HSET")
            .arg("big")
            .arg(format!("f{i}"))
            .arg(format!("v{i}"))
            .ignore();
        pipe.cmd("SADD")
            .arg("members")
            .arg(format!("m{i}"))
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    // One command naming 3,000 fields, a third of them already there.
    let mut hset = redis::cmd("HSET");
    hset.arg("big");
    for i in 2000..5000 {
        hset.arg(format!("f{i}")).arg(format!("w{i}"));
    }
    assert_eq!(hset.query::<i64>(&mut c).unwrap(), 2000);
    assert_eq!(
        run::<String>(&mut c, &["OBJECT", "ENCODING", "big"]),
        "hashtable"
    );
    assert_eq!(run::<i64>(&mut c, &["HLEN", "big"]), 5000);
    assert_eq!(run::<String>(&mut c, &["HGET", "big", "f10"]), "v10");
    assert_eq!(run::<String>(&mut c, &["HGET", "big", "f2500"]), "w2500");
    assert_eq!(
        run::<Option<String>>(&mut c, &["HGET", "big", "f5000"]),
        None
    );
    let got: Vec<Option<String>> = run(&mut c, &["HMGET", "big", "f1", "nope", "f4999"]);
    assert_eq!(got, [Some("v1".into()), None, Some("w4999".into())]);
    let fields: Vec<String> = (0..5000).step_by(2).map(|i| format!("f{i}")).collect();
    let mut hdel = redis::cmd("HDEL");
    hdel.arg("big").arg(&fields).arg("f0");
    assert_eq!(hdel.query::<i64>(&mut c).unwrap(), 2500);
    assert_eq!(run::<i64>(&mut c, &["HINCRBY", "big", "counter", "5"]), 5);
    assert_eq!(run::<i64>(&mut c, &["HINCRBY", "big", "counter", "-7"]), -2);
    assert_eq!(run::<i64>(&mut c, &["HEXISTS", "big", "f2"]), 0);
    assert_eq!(run::<i64>(&mut c, &["HSTRLEN", "big", "f4001"]), 5);
    assert_eq!(run::<i64>(&mut c, &["HSETNX", "big", "f3", "x"]), 0);
    let want: BTreeSet<String> = (1..5000)
        .step_by(2)
        .map(|i| format!("f{i}"))
        .chain(["counter".to_string()])
        .collect();
    let (seen, pages) = scanned(&mut c, "HSCAN", "big", 50);
    assert!(pages > 10, "{pages} pages");
    assert_eq!(seen.len(), want.len(), "a field scanned twice or missed");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), want);
    let all: Vec<String> = run(&mut c, &["HKEYS", "big"]);
    assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), want);
    let field: String = run(&mut c, &["HRANDFIELD", "big"]);
    assert!(want.contains(&field));

    assert_eq!(run::<i64>(&mut c, &["SCARD", "members"]), 3000);
    assert_eq!(run::<i64>(&mut c, &["SISMEMBER", "members", "m2999"]), 1);
    let got: Vec<i64> = run(&mut c, &["SMISMEMBER", "members", "m0", "x", "m7"]);
    assert_eq!(got, [1, 0, 1]);
    assert_eq!(run::<i64>(&mut c, &["SADD", "members", "m1", "new"]), 1);
    assert_eq!(
        run::<i64>(&mut c, &["SREM", "members", "m1", "m1", "gone"]),
        1
    );
    let mut popped: Vec<String> = run(&mut c, &["SPOP", "members", "40"]);
    popped.push(run(&mut c, &["SPOP", "members"]));
    assert_eq!(popped.iter().collect::<BTreeSet<_>>().len(), 41);
    let mut left: BTreeSet<String> = (0..3000).map(|i| format!("m{i}")).collect();
    left.insert("new".into());
    left.remove("m1");
    for m in &popped {
        assert!(left.remove(m), "{m} popped but not a member");
    }
    assert_eq!(run::<i64>(&mut c, &["SCARD", "members"]), left.len() as i64);
    let (seen, _) = scanned(&mut c, "SSCAN", "members", 100);
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), left);
    let member: String = run(&mut c, &["SRANDMEMBER", "members"]);
    assert!(left.contains(&member));
    let _: i64 = run(&mut c, &["SADD", "small", "m5", "m6", "absent"]);
    let inter: BTreeSet<String> = run(&mut c, &["SINTER", "small", "members"]);
    let want_inter: BTreeSet<String> = ["m5", "m6"]
        .iter()
        .filter(|m| left.contains(**m))
        .map(|m| m.to_string())
        .collect();
    assert_eq!(inter, want_inter);

    // The keyspace moves and copies a split value whole.
    assert_eq!(run::<i64>(&mut c, &["COPY", "big", "copy"]), 1);
    let _: () = run(&mut c, &["RENAME", "big", "renamed"]);
    assert_eq!(run::<i64>(&mut c, &["HDEL", "copy", "f1"]), 1);
    assert_eq!(run::<String>(&mut c, &["HGET", "renamed", "f1"]), "v1");
    assert_eq!(run::<i64>(&mut c, &["HLEN", "copy"]), want.len() as i64 - 1);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "renamed", "100"]), 1);
    let _: i64 = run(&mut c, &["HSET", "renamed", "f1", "again"]);
    assert!(
        run::<i64>(&mut c, &["TTL", "renamed"]) > 90,
        "a field's write keeps the deadline"
    );
    assert_eq!(
        run::<i64>(&mut c, &["DEL", "renamed", "copy", "members"]),
        3
    );
    if support::test_engine() == "memory" {
        assert!(support::eventually(10, || support::info_field(
            &mut c,
            "hotring_collection_nodes"
        ) == "0"));
    }
}

/// What one of `renaming_moves_a_split_collection_whole`'s keys holds, read whole
/// in an order that does not depend on how it is stored.
fn contents(c: &mut redis::Connection, key: &str) -> Vec<String> {
    let kind: String = run(c, &["TYPE", key]);
    let mut all: Vec<String> = match kind.as_str() {
        "list" => return run(c, &["LRANGE", key, "0", "-1"]),
        "zset" => return run(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "stream" => {
            let entries: Vec<(String, Vec<String>)> = run(c, &["XRANGE", key, "-", "+"]);
            return entries
                .into_iter()
                .flat_map(|(id, f)| [id].into_iter().chain(f))
                .collect();
        }
        "hash" => run(c, &["HGETALL", key]),
        "set" => run(c, &["SMEMBERS", key]),
        other => panic!("{key} is a {other}"),
    };
    all.sort();
    all
}

/// RENAME of a collection split into nodes moves its node table alone (the nodes are
/// named by id, whatever the key): each kind, onto a missing key and onto another
/// split collection, whose nodes are released; in a transaction; with a deadline.
/// Every value reads whole afterwards (on memory a node released too early is a
/// failed read; on lsm, after a restart), and deleting them all leaves no node behind.
#[test]
fn renaming_moves_a_split_collection_whole() {
    let server = Server::start();
    let mut c = server.client();
    let kinds = ["list", "hash", "set", "zset", "stream"];
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        let (n, f, v) = (i.to_string(), format!("f{i}"), format!("v{i}"));
        pipe.cmd("RPUSH").arg("list").arg(&v).ignore();
        pipe.cmd("HSET").arg("hash").arg(&f).arg(&v).ignore();
        pipe.cmd("SADD").arg("set").arg(&f).ignore();
        pipe.cmd("ZADD").arg("zset").arg(&n).arg(&f).ignore();
        pipe.cmd("XADD")
            .arg("stream")
            .arg(format!("{}-1", i + 1))
            .arg(&f)
            .arg(&v)
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let memory = support::test_engine() == "memory";
    let live_nodes = |c: &mut redis::Connection| -> usize {
        support::info_field(c, "hotring_collection_nodes")
            .parse()
            .unwrap()
    };
    assert!(
        !memory || live_nodes(&mut c) > 5 * 3,
        "the values are not split"
    );
    let want: Vec<Vec<String>> = kinds.iter().map(|k| contents(&mut c, k)).collect();
    let encodings: Vec<String> = kinds
        .iter()
        .map(|k| run(&mut c, &["OBJECT", "ENCODING", k]))
        .collect();
    assert_eq!(
        encodings,
        ["quicklist", "hashtable", "hashtable", "skiplist", "stream"]
    );
    let _: i64 = run(&mut c, &["HSET", "dest", "small", "1"]);

    for kind in kinds {
        let _: () = run(&mut c, &["RENAME", kind, &format!("{kind}2")]);
    }
    let _: i64 = run(&mut c, &["PEXPIRE", "hash2", "100000"]);
    let _: () = run(&mut c, &["RENAME", "hash2", "dest"]);
    let ttl: i64 = run(&mut c, &["PTTL", "dest"]);
    assert!(ttl > 90_000, "RENAME keeps the deadline: {ttl}");
    assert_eq!(run::<i64>(&mut c, &["RENAMENX", "set2", "dest"]), 0);
    assert_eq!(contents(&mut c, "dest"), want[1]);
    // A split destination is replaced, and its nodes released.
    let _: () = run(&mut c, &["RENAME", "list2", "dest"]);
    assert_eq!(run::<i64>(&mut c, &["PTTL", "dest"]), -1);
    let _: () = run(&mut c, &["RENAME", "dest", "hash2"]);
    let moved: ((), (), Vec<String>) = redis::pipe()
        .atomic()
        .cmd("RENAME")
        .arg("zset2")
        .arg("zset3")
        .cmd("RENAME")
        .arg("zset3")
        .arg("stream3")
        .cmd("ZRANGE")
        .arg("stream3")
        .arg("0")
        .arg("1")
        .query(&mut c)
        .unwrap();
    assert_eq!(moved.2, ["f0", "f1"]);
    let _: () = run(&mut c, &["RENAME", "stream2", "zset2"]);
    let _: () = run(&mut c, &["RENAME", "stream3", "stream2"]);
    // On memory, nodes retired wrongly are removed once readers unpin: wait for that.
    std::thread::sleep(std::time::Duration::from_millis(300));

    let server = server.restarted_if_lsm();
    let mut c = server.client();
    let now = ["hash2", "set2", "zset2", "stream2"];
    for (key, want) in now.iter().zip([&want[0], &want[2], &want[4], &want[3]]) {
        assert_eq!(&contents(&mut c, key), want, "{key} after its renames");
    }
    for gone in [
        "list", "hash", "set", "zset", "stream", "list2", "dest", "zset3", "stream3",
    ] {
        assert_eq!(
            run::<i64>(&mut c, &["EXISTS", gone]),
            0,
            "{gone} moved away"
        );
    }
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 4);
    assert_eq!(
        run::<i64>(&mut c, &["DEL", "hash2", "set2", "zset2", "stream2"]),
        4
    );
    if memory {
        assert!(
            support::eventually(10, || live_nodes(&mut c) == 0),
            "deleting the renamed keys leaves nodes behind"
        );
    }
}

/// A sorted set of thousands of members is split (`score_nodes.rs`): members written,
/// scored, ranked, ranged and popped one node at a time answer as a whole one would,
/// a deadline is kept by a member's write, and deleting it releases its nodes.
#[test]
fn large_sorted_sets_answer_member_by_member() {
    let server = Server::start();
    let mut c = server.client();
    // One command naming 5,000 members, scores 0 to 9 so that many nodes tie.
    let mut zadd = redis::cmd("ZADD");
    zadd.arg("board");
    for i in 0..5000 {
        zadd.arg(i % 10).arg(format!("p{i:04}"));
    }
    assert_eq!(zadd.query::<i64>(&mut c).unwrap(), 5000);
    assert_eq!(
        run::<String>(&mut c, &["OBJECT", "ENCODING", "board"]),
        "skiplist"
    );
    if support::test_engine() == "memory" {
        let nodes: usize = support::info_field(&mut c, "hotring_collection_nodes")
            .parse()
            .unwrap();
        assert!(nodes > 20, "{nodes} nodes");
    }
    let mut want: Vec<(String, f64)> = (0..5000)
        .map(|i| (format!("p{i:04}"), (i % 10) as f64))
        .collect();
    let order = |want: &mut Vec<(String, f64)>| {
        want.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
    };
    order(&mut want);
    assert_eq!(run::<i64>(&mut c, &["ZCARD", "board"]), 5000);
    assert_eq!(run::<f64>(&mut c, &["ZSCORE", "board", "p1237"]), 7.0);
    let rank = want.iter().position(|(m, _)| m == "p1237").unwrap();
    assert_eq!(run::<usize>(&mut c, &["ZRANK", "board", "p1237"]), rank);
    assert_eq!(
        run::<usize>(&mut c, &["ZREVRANK", "board", "p1237"]),
        4999 - rank
    );
    let got: Vec<(String, f64)> = run(&mut c, &["ZRANGE", "board", "2490", "2509", "WITHSCORES"]);
    assert_eq!(got, want[2490..2510]);
    let got: Vec<String> = run(&mut c, &["ZREVRANGE", "board", "0", "2"]);
    let top: Vec<String> = want[4997..].iter().rev().map(|(m, _)| m.clone()).collect();
    assert_eq!(got, top);
    // Rescored members move; removed and popped ones go.
    assert_eq!(
        run::<f64>(&mut c, &["ZINCRBY", "board", "100", "p0000"]),
        100.0
    );
    assert_eq!(
        run::<i64>(
            &mut c,
            &["ZADD", "board", "XX", "CH", "-1", "p4999", "5", "new"]
        ),
        1
    );
    assert_eq!(
        run::<i64>(&mut c, &["ZREM", "board", "p0001", "p0001", "none"]),
        1
    );
    let got: Vec<(String, f64)> = run(&mut c, &["ZPOPMAX", "board"]);
    assert_eq!(got, [("p0000".to_string(), 100.0)]);
    let got: Vec<(String, f64)> = run(&mut c, &["ZPOPMIN", "board", "2"]);
    assert_eq!(got[0], ("p4999".to_string(), -1.0));
    assert_eq!(got[1], want[1], "p0000 was rescored");
    assert_eq!(run::<i64>(&mut c, &["ZCARD", "board"]), 4996);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "board", "100"]), 1);
    let _: i64 = run(&mut c, &["ZADD", "board", "3", "late"]);
    assert!(
        run::<i64>(&mut c, &["TTL", "board"]) > 90,
        "a member's write keeps the deadline"
    );
    assert_eq!(run::<i64>(&mut c, &["ZCOUNT", "board", "3", "3"]), 501);
    // ZSCAN pages through the members half: each member once, with its score.
    let mut want: Vec<(String, f64)> = run(&mut c, &["ZRANGE", "board", "0", "-1", "WITHSCORES"]);
    let (mut cursor, mut pages, mut seen) = ("0".to_string(), 0, Vec::new());
    loop {
        let (next, page): (String, Vec<(String, f64)>) =
            run(&mut c, &["ZSCAN", "board", &cursor, "COUNT", "50"]);
        seen.extend(page);
        pages += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert!(pages > 10, "{pages} pages");
    let by_member = |a: &(String, f64), b: &(String, f64)| a.0.cmp(&b.0);
    seen.sort_by(by_member);
    want.sort_by(by_member);
    assert_eq!(seen, want);
    // ZRANDMEMBER picks members that are there, with their scores; distinct ones for a
    // positive count.
    let is_member = |(m, s): &(String, f64)| {
        want.binary_search_by(|w| w.0.cmp(m))
            .is_ok_and(|at| want[at].1 == *s)
    };
    let one: String = run(&mut c, &["ZRANDMEMBER", "board"]);
    assert!(want.binary_search_by(|w| w.0.cmp(&one)).is_ok(), "{one}");
    let mut distinct: Vec<(String, f64)> =
        run(&mut c, &["ZRANDMEMBER", "board", "300", "WITHSCORES"]);
    assert!(distinct.iter().all(is_member));
    distinct.sort_by(by_member);
    distinct.dedup();
    assert_eq!(distinct.len(), 300);
    let repeated: Vec<(String, f64)> =
        run(&mut c, &["ZRANDMEMBER", "board", "-6000", "WITHSCORES"]);
    assert_eq!(repeated.len(), 6000);
    assert!(repeated.iter().all(is_member));
    assert_eq!(run::<i64>(&mut c, &["DEL", "board"]), 1);
    if support::test_engine() == "memory" {
        assert!(support::eventually(10, || support::info_field(
            &mut c,
            "hotring_collection_nodes"
        ) == "0"));
    }
}

/// A long list (split into nodes, see `list_nodes.rs`) edited in its middle by LSET,
/// LINSERT, LREM and LTRIM and at its ends by pushes and pops, in a seeded random
/// order (`LIST_EDITS_SEED` replays one), reads back as a model `VecDeque` holds it
/// after every command.
#[test]
fn a_long_list_edited_anywhere_matches_a_model() {
    use rand::{Rng, SeedableRng};
    let seed = std::env::var("LIST_EDITS_SEED")
        .map_or_else(|_| rand::random(), |s| s.parse::<u64>().unwrap());
    eprintln!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let server = Server::start();
    let mut c = server.client();
    let mut model: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    // Elements of 20-220 bytes from few stems, so LREM and LINSERT find repeats.
    let element = |rng: &mut rand::rngs::StdRng| {
        format!(
            "{}{}",
            rng.gen_range(0..50),
            "e".repeat(rng.gen_range(20..220))
        )
    };
    let all: Vec<String> = (0..5000).map(|_| element(&mut rng)).collect();
    let mut push = vec!["RPUSH", "list"];
    push.extend(all.iter().map(String::as_str));
    let _: i64 = run(&mut c, &push);
    model.extend(all);
    for step in 0..400 {
        let len = model.len() as i64;
        let at = rng.gen_range(-len.max(1)..len.max(1));
        let index = |at: i64| {
            if at < 0 {
                (at + len) as usize
            } else {
                at as usize
            }
        };
        let what = match rng.gen_range(0..6) {
            0 if len > 0 => {
                let value = element(&mut rng);
                let reply: String = run(&mut c, &["LSET", "list", &at.to_string(), &value]);
                assert_eq!(reply, "OK");
                model[index(at)] = value;
                "LSET"
            }
            1 if len > 0 => {
                let pivot = model[index(at)].clone();
                let value = element(&mut rng);
                let after = rng.gen_bool(0.5);
                let place = if after { "AFTER" } else { "BEFORE" };
                let reply: i64 = run(&mut c, &["LINSERT", "list", place, &pivot, &value]);
                let found = model.iter().position(|e| *e == pivot).unwrap();
                model.insert(found + usize::from(after), value);
                assert_eq!(reply, model.len() as i64);
                "LINSERT"
            }
            2 if len > 0 => {
                let target = model[index(at)].clone();
                let count: i64 = rng.gen_range(-3..4);
                let reply: i64 = run(&mut c, &["LREM", "list", &count.to_string(), &target]);
                let mut hits: Vec<usize> =
                    (0..model.len()).filter(|&i| model[i] == target).collect();
                if count < 0 {
                    hits.reverse();
                }
                if count != 0 {
                    hits.truncate(count.unsigned_abs() as usize);
                }
                hits.sort_unstable();
                for i in hits.iter().rev() {
                    model.remove(*i);
                }
                assert_eq!(reply, hits.len() as i64);
                "LREM"
            }
            3 => {
                // Mostly a cut of a few elements, as a capped list's LTRIM makes.
                let (start, stop) = (rng.gen_range(0..3), -1 - rng.gen_range(0..3));
                let reply: String = run(
                    &mut c,
                    &["LTRIM", "list", &start.to_string(), &stop.to_string()],
                );
                assert_eq!(reply, "OK");
                let keep = (len + stop + 1 - start).max(0) as usize;
                model = model.into_iter().skip(start as usize).take(keep).collect();
                "LTRIM"
            }
            4 => {
                let value = element(&mut rng);
                let left = rng.gen_bool(0.5);
                let _: i64 = run(
                    &mut c,
                    &[if left { "LPUSH" } else { "RPUSH" }, "list", &value],
                );
                if left {
                    model.push_front(value);
                } else {
                    model.push_back(value);
                }
                "PUSH"
            }
            _ => {
                let n = rng.gen_range(1..40);
                let left = rng.gen_bool(0.5);
                let cmd = if left { "LPOP" } else { "RPOP" };
                let got: Option<Vec<String>> = run(&mut c, &[cmd, "list", &n.to_string()]);
                let want: Vec<String> = (0..n)
                    .map_while(|_| {
                        if left {
                            model.pop_front()
                        } else {
                            model.pop_back()
                        }
                    })
                    .collect();
                assert_eq!(got.unwrap_or_default(), want, "step {step}");
                "POP"
            }
        };
        let list: Vec<String> = run(&mut c, &["LRANGE", "list", "0", "-1"]);
        assert!(list.iter().eq(model.iter()), "step {step}: after {what}");
    }
}
