//! Streams through the real server: automatic IDs, blocking reads woken by writers,
//! a stream outliving a restart of the lsm engine. Replies are checked byte for byte
//! against redis-server by `tests/clients/test_compat.py`.

mod support;

use std::time::Duration;

use support::{run, run_err, Server};

type Entries = Vec<(String, Vec<(String, String)>)>;

/// `*` IDs follow the clock and never repeat, even when many land in one millisecond.
#[test]
fn automatic_ids_only_grow() {
    let server = Server::start();
    let mut c = server.client();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut ids = Vec::new();
    for i in 0..500 {
        let id: String = run(&mut c, &["XADD", "s", "*", "n", &i.to_string()]);
        let (ms, seq) = id.split_once('-').unwrap();
        ids.push((ms.parse::<u64>().unwrap(), seq.parse::<u64>().unwrap()));
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "IDs grow");
    assert!(ids[0].0 >= before);
    assert_eq!(run::<i64>(&mut c, &["XLEN", "s"]), 500);
    let last: Entries = run(&mut c, &["XREVRANGE", "s", "+", "-", "COUNT", "1"]);
    assert_eq!(last[0].1, [("n".to_string(), "499".to_string())]);
    // Below the top is refused; an ID past it is taken.
    let top = format!("{}-{}", ids[499].0, ids[499].1);
    assert_eq!(
        run_err(&mut c, &["XADD", "s", &top, "a", "b"]),
        "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    );
    let far = format!("{}-0", ids[499].0 + 1000);
    assert_eq!(run::<String>(&mut c, &["XADD", "s", &far, "a", "b"]), far);
}

/// Four clients block on XREAD (`$`: only entries added later); one XADD wakes them
/// all with that entry; a client blocked past its timeout gets a null reply.
#[test]
fn blocking_reads_wake_on_new_entries() {
    let server = Server::start();
    let mut c = server.client();
    let _: String = run(&mut c, &["XADD", "s", "1-0", "old", "x"]);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let server = &server;
                scope.spawn(move || {
                    let mut c = server.client();
                    let reply: Vec<(String, Entries)> = run(
                        &mut c,
                        &["XREAD", "BLOCK", "10000", "STREAMS", "other", "s", "$", "$"],
                    );
                    reply
                })
            })
            .collect();
        // Wait for the four to block.
        assert!(support::eventually(10, || {
            support::info_field(&mut server.client(), "blocked_clients") == "4"
        }));
        let _: String = run(&mut c, &["XADD", "s", "2-0", "new", "y"]);
        for reader in readers {
            let reply = reader.join().unwrap();
            assert_eq!(reply.len(), 1);
            assert_eq!(reply[0].0, "s");
            assert_eq!(
                reply[0].1,
                [(
                    "2-0".to_string(),
                    vec![("new".to_string(), "y".to_string())]
                )]
            );
        }
    });
    let started = std::time::Instant::now();
    let reply: Option<Vec<(String, Entries)>> =
        run(&mut c, &["XREAD", "BLOCK", "200", "STREAMS", "s", "$"]);
    assert!(reply.is_none());
    assert!(started.elapsed() >= Duration::from_millis(150));
}

/// On the lsm engine a stream, its counters and an emptied stream outlive a restart.
#[test]
fn streams_survive_a_restart() {
    let server = Server::start_in(tempfile::tempdir().unwrap(), &[]);
    let mut c = server.client();
    for i in 1..=300 {
        let _: String = run(
            &mut c,
            &["XADD", "s", &format!("{i}-1"), "f", &format!("v{i}")],
        );
    }
    let _: i64 = run(&mut c, &["XDEL", "s", "5-1"]);
    let _: i64 = run(&mut c, &["XTRIM", "s", "MAXLEN", "250"]);
    let _: String = run(&mut c, &["XADD", "empty", "1-1", "f", "v"]);
    let _: i64 = run(&mut c, &["XDEL", "empty", "1-1"]);
    let dir = server.stop().unwrap();
    let server = Server::start_in(dir, &[]);
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["XLEN", "s"]), 250);
    let first: Entries = run(&mut c, &["XRANGE", "s", "-", "+", "COUNT", "1"]);
    assert_eq!(first[0].0, "51-1");
    // The emptied stream is still a stream, and remembers its last ID.
    assert_eq!(run::<String>(&mut c, &["TYPE", "empty"]), "stream");
    assert_eq!(
        run_err(&mut c, &["XADD", "empty", "1-1", "f", "v"]),
        "ERR The ID specified in XADD is equal or smaller than the target stream top item"
    );
}

/// Six consumers of one group read while a producer adds 3,000 entries: each entry is
/// delivered to exactly one consumer, and once all are acknowledged nothing is pending.
#[test]
fn a_group_delivers_each_entry_once_across_consumers() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(
        &mut c,
        &["XGROUP", "CREATE", "jobs", "workers", "$", "MKSTREAM"],
    );
    const ENTRIES: usize = 3000;
    let produced = std::sync::atomic::AtomicBool::new(false);
    let delivered: Vec<Vec<String>> = std::thread::scope(|scope| {
        let producer = scope.spawn(|| {
            let mut c = server.client();
            for i in 0..ENTRIES {
                let _: String = run(&mut c, &["XADD", "jobs", "*", "n", &i.to_string()]);
            }
            produced.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let consumers: Vec<_> = (0..6)
            .map(|k| {
                let (server, produced) = (&server, &produced);
                scope.spawn(move || {
                    let mut c = server.client();
                    let name = format!("c{k}");
                    let mut got = Vec::new();
                    loop {
                        // Read to know whether the producer was done before this read.
                        let finished = produced.load(std::sync::atomic::Ordering::SeqCst);
                        let reply: Option<Vec<(String, Entries)>> = run(
                            &mut c,
                            &[
                                "XREADGROUP",
                                "GROUP",
                                "workers",
                                &name,
                                "COUNT",
                                "7",
                                "BLOCK",
                                "300",
                                "STREAMS",
                                "jobs",
                                ">",
                            ],
                        );
                        let Some(reply) = reply else {
                            if finished {
                                break;
                            }
                            continue;
                        };
                        for (id, _) in &reply[0].1 {
                            let acked: i64 = run(&mut c, &["XACK", "jobs", "workers", id]);
                            assert_eq!(acked, 1, "{id} acknowledged once");
                            got.push(id.clone());
                        }
                    }
                    got
                })
            })
            .collect();
        producer.join().unwrap();
        consumers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<String> = delivered.into_iter().flatten().collect();
    assert_eq!(all.len(), ENTRIES, "every entry delivered");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), ENTRIES, "no entry delivered twice");
    // The summary: count, first and last IDs, per-consumer counts (nulls when none).
    let summary: Vec<redis::Value> = run(&mut c, &["XPENDING", "jobs", "workers"]);
    assert_eq!(summary[0], redis::Value::Int(0));
    let groups: Vec<std::collections::HashMap<String, redis::Value>> =
        run(&mut c, &["XINFO", "GROUPS", "jobs"]);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["lag"], redis::Value::Int(0));
    assert_eq!(groups[0]["entries-read"], redis::Value::Int(ENTRIES as i64));
}

/// The ID of stream entry number `i` of [`add_numbered`]: ten entries a millisecond,
/// so that nodes share their first IDs' milliseconds.
fn numbered_id(i: u64) -> String {
    format!("{}-{}", i / 10 + 1, i % 10)
}

/// Adds to stream `s` entries `numbers`, each `n` its number, in pipelines of 500.
fn add_numbered(c: &mut redis::Connection, numbers: std::ops::Range<u64>) {
    for chunk in numbers.collect::<Vec<_>>().chunks(500) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let id = numbered_id(i);
            pipe.cmd("XADD").arg("s").arg(id).arg("n").arg(i).ignore();
        }
        let () = pipe.query(c).unwrap();
    }
}

/// A stream of 20,000 entries is split into nodes (`stream_nodes.rs`): ranges from the
/// middle, both ways and with COUNT, reads after an ID, deletes, both trims, XINFO,
/// DUMP and RESTORE, RENAME and COPY answer as for a short one, and deleting it
/// releases its nodes.
#[test]
fn a_long_stream_answers_from_its_nodes() {
    let server = Server::start();
    let mut c = server.client();
    const N: u64 = 20_000;
    let id = numbered_id;
    add_numbered(&mut c, 0..N);
    let numbers = |entries: &Entries| -> Vec<u64> {
        entries
            .iter()
            .map(|(_, f)| f[0].1.parse().unwrap())
            .collect()
    };
    assert_eq!(run::<i64>(&mut c, &["XLEN", "s"]), N as i64);
    let mid: Entries = run(&mut c, &["XRANGE", "s", &id(12_345), "+", "COUNT", "30"]);
    assert_eq!(numbers(&mid), (12_345..12_375).collect::<Vec<_>>());
    let back: Entries = run(&mut c, &["XREVRANGE", "s", &id(7_003), "-", "COUNT", "12"]);
    assert_eq!(numbers(&back), (6_992..=7_003).rev().collect::<Vec<_>>());
    // A millisecond alone: its ten entries, whichever nodes they are in.
    let ms: Entries = run(&mut c, &["XRANGE", "s", "1501", "1501"]);
    assert_eq!(numbers(&ms), (15_000..15_010).collect::<Vec<_>>());
    let read: Vec<(String, Entries)> = run(
        &mut c,
        &["XREAD", "COUNT", "5", "STREAMS", "s", &id(19_990)],
    );
    assert_eq!(numbers(&read[0].1), (19_991..19_996).collect::<Vec<_>>());
    // Deletes in the middle, one of them twice.
    let deleted: i64 = run(
        &mut c,
        &["XDEL", "s", &id(100), &id(101), &id(100), "99999-0"],
    );
    assert_eq!(deleted, 2);
    let around: Entries = run(&mut c, &["XRANGE", "s", &id(99), &id(102)]);
    assert_eq!(numbers(&around), [99, 102]);
    // MAXLEN ~ removes whole Redis nodes of 100 (the second lost two to XDEL) while
    // 15,050 are left; = then goes into one.
    let trimmed: i64 = run(&mut c, &["XTRIM", "s", "MAXLEN", "~", "15050"]);
    assert_eq!(trimmed, 4_898);
    let trimmed: i64 = run(&mut c, &["XTRIM", "s", "MAXLEN", "=", "15000"]);
    assert_eq!(trimmed, 100);
    let trimmed: i64 = run(&mut c, &["XTRIM", "s", "MINID", &id(6_000)]);
    assert_eq!(trimmed, 1_000);
    assert_eq!(run::<i64>(&mut c, &["XLEN", "s"]), 14_000);
    let info: std::collections::HashMap<String, redis::Value> =
        run(&mut c, &["XINFO", "STREAM", "s"]);
    assert_eq!(info["length"], redis::Value::Int(14_000));
    assert_eq!(info["radix-tree-keys"], redis::Value::Int(140));
    assert_eq!(
        info["recorded-first-entry-id"],
        redis::Value::BulkString(id(6_000).into_bytes())
    );
    // Moved and copied whole, and restored from its dump.
    let dump: Vec<u8> = run(&mut c, &["DUMP", "s"]);
    let _: () = run(&mut c, &["RENAME", "s", "t"]);
    let _: i64 = run(&mut c, &["COPY", "t", "u"]);
    let mut restore = redis::cmd("RESTORE");
    restore.arg("v").arg(0).arg(dump);
    let () = restore.query(&mut c).unwrap();
    for key in ["t", "u", "v"] {
        assert_eq!(run::<i64>(&mut c, &["XLEN", key]), 14_000, "{key}");
        let last: Entries = run(&mut c, &["XREVRANGE", key, "+", "-", "COUNT", "1"]);
        assert_eq!(numbers(&last), [N - 1], "{key}");
        let tail: Entries = run(&mut c, &["XRANGE", key, &id(13_000), &id(13_004)]);
        assert_eq!(
            numbers(&tail),
            (13_000..=13_004).collect::<Vec<_>>(),
            "{key}"
        );
    }
    let added: String = run(&mut c, &["XADD", "u", "*", "n", "new"]);
    assert_eq!(run::<i64>(&mut c, &["XLEN", "u"]), 14_001);
    assert_eq!(run::<i64>(&mut c, &["XLEN", "t"]), 14_000);
    let _: i64 = run(&mut c, &["XDEL", "u", &added]);
    assert_eq!(run::<i64>(&mut c, &["DEL", "t", "u", "v"]), 3);
    if support::test_engine() == "memory" {
        assert!(support::eventually(10, || support::info_field(
            &mut c,
            "hotring_collection_nodes"
        ) == "0"));
    }
}

/// XPENDING's summary: count, first and last IDs, and each consumer with entries
/// pending and how many.
type Summary = (i64, String, String, Vec<(String, String)>);

/// A group with thousands of entries pending (`stream_pending.rs`: its pending entries
/// in pages, in a long stream and in one trimmed short): XPENDING's summary and
/// ranges, XACK, XCLAIM, XAUTOCLAIM, a consumer's history, XINFO, DELCONSUMER, DUMP
/// and RESTORE, a restart of the lsm engine, and deleting the streams releases their
/// pages.
#[test]
fn a_long_pending_list_answers_from_its_pages() {
    let server = Server::start();
    let mut c = server.client();
    let mut ids = Vec::new();
    for i in 0..3000 {
        let id = format!("{}-{}", 1000 + i / 3, i % 3);
        let _: String = run(&mut c, &["XADD", "s", &id, "n", &i.to_string()]);
        ids.push(id);
    }
    let _: () = run(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    for (who, count) in [("alice", 1000), ("bob", 1500), ("carol", 400)] {
        let read = ["XREADGROUP", "GROUP", "g", who, "COUNT", &count.to_string()];
        let got: Vec<(String, Entries)> =
            run(&mut c, &[&read[..], &["STREAMS", "s", ">"]].concat());
        assert_eq!(got[0].1.len(), count);
    }
    let pair = |who: &str, n: usize| (who.to_string(), n.to_string());
    let summary: Summary = run(&mut c, &["XPENDING", "s", "g"]);
    assert_eq!(
        summary,
        (
            2900,
            ids[0].clone(),
            ids[2899].clone(),
            vec![pair("alice", 1000), pair("bob", 1500), pair("carol", 400)]
        )
    );
    // A range of one consumer's, from the middle.
    let rows: Vec<(String, String, i64, i64)> =
        run(&mut c, &["XPENDING", "s", "g", &ids[1200], "+", "3", "bob"]);
    let got: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(got, [&ids[1200], &ids[1201], &ids[1202]]);
    assert!(rows.iter().all(|r| r.1 == "bob" && r.3 == 1));
    let acked: i64 = run(
        &mut c,
        &[
            &["XACK", "s", "g"][..],
            &ids.iter().take(500).map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert_eq!(acked, 500);
    let claimed: Vec<String> = run(
        &mut c,
        &["XCLAIM", "s", "g", "dave", "0", &ids[1000], "JUSTID"],
    );
    assert_eq!(claimed, [ids[1000].clone()]);
    let auto: (String, Vec<String>, Vec<String>) = run(
        &mut c,
        &[
            "XAUTOCLAIM",
            "s",
            "g",
            "erin",
            "0",
            "0",
            "COUNT",
            "100",
            "JUSTID",
        ],
    );
    assert_eq!(auto.0, ids[600]);
    assert_eq!(auto.1, ids[500..600]);
    // Bob's history: his own pending entries, delivered once more.
    let history: Vec<(String, Entries)> = run(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            "0",
        ],
    );
    let got: Vec<&str> = history[0].1.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(got, [&ids[1001], &ids[1002]]);
    let summary: Summary = run(&mut c, &["XPENDING", "s", "g"]);
    let expected = vec![
        pair("alice", 400),
        pair("bob", 1499),
        pair("carol", 400),
        pair("dave", 1),
        pair("erin", 100),
    ];
    assert_eq!(
        summary,
        (2400, ids[500].clone(), ids[2899].clone(), expected.clone())
    );
    let consumers: Vec<std::collections::HashMap<String, redis::Value>> =
        run(&mut c, &["XINFO", "CONSUMERS", "s", "g"]);
    let counts: Vec<(String, String)> = consumers
        .iter()
        .map(|c| match (&c["name"], &c["pending"]) {
            (redis::Value::BulkString(n), redis::Value::Int(p)) => {
                (String::from_utf8(n.clone()).unwrap(), p.to_string())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(counts, expected);
    // A copy through DUMP and RESTORE has the same group.
    let dump: Vec<u8> = run(&mut c, &["DUMP", "s"]);
    let _: () = redis::cmd("RESTORE")
        .arg("s2")
        .arg(0)
        .arg(dump)
        .query(&mut c)
        .unwrap();
    let copied: Summary = run(&mut c, &["XPENDING", "s2", "g"]);
    assert_eq!(copied, summary);
    // Destroying the copy's group releases its pages (checked below, once all is gone).
    assert_eq!(run::<i64>(&mut c, &["XGROUP", "DESTROY", "s2", "g"]), 1);
    assert_eq!(
        run::<i64>(&mut c, &["XGROUP", "DELCONSUMER", "s", "g", "bob"]),
        1499
    );
    let summary: Summary = run(&mut c, &["XPENDING", "s", "g"]);
    assert_eq!(summary.0, 901);
    // A short stream (trimmed as it grows) whose group has hundreds pending.
    let _: () = run(&mut c, &["XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"]);
    for i in 1..=400 {
        let _: String = run(
            &mut c,
            &["XADD", "t", "MAXLEN", "5", &format!("{i}-1"), "f", "v"],
        );
        let _: redis::Value = run(
            &mut c,
            &["XREADGROUP", "GROUP", "g", "w", "STREAMS", "t", ">"],
        );
    }
    let short: Summary = run(&mut c, &["XPENDING", "t", "g"]);
    assert_eq!(
        short,
        (400, "1-1".into(), "400-1".into(), vec![pair("w", 400)])
    );
    assert_eq!(run::<i64>(&mut c, &["XLEN", "t"]), 5);
    // Entries trimmed away are still pending; claiming one drops it instead.
    let gone: Vec<String> = run(&mut c, &["XCLAIM", "t", "g", "w", "0", "1-1", "JUSTID"]);
    assert!(gone.is_empty());
    assert_eq!(run::<Summary>(&mut c, &["XPENDING", "t", "g"]).0, 399);
    let (s_before, t_before): (Summary, Summary) = (
        run(&mut c, &["XPENDING", "s", "g"]),
        run(&mut c, &["XPENDING", "t", "g"]),
    );
    let server = server.restarted_if_lsm();
    let mut c = server.client();
    assert_eq!(run::<Summary>(&mut c, &["XPENDING", "s", "g"]), s_before);
    assert_eq!(run::<Summary>(&mut c, &["XPENDING", "t", "g"]), t_before);
    assert_eq!(run::<i64>(&mut c, &["DEL", "s", "s2", "t"]), 3);
    if support::test_engine() == "memory" {
        assert!(support::eventually(10, || support::info_field(
            &mut c,
            "hotring_collection_nodes"
        ) == "0"));
    }
}

/// A group with 30,000 entries pending: more pages than one root names, so the pages
/// are in groups (`table_pages.rs`). Acknowledging a run across groups, single entries
/// here and there, a claim, new deliveries at the end and a restart of the lsm engine
/// leave exactly the entries a model keeps, read back whole with XPENDING and in
/// ranges that start near the groups' bounds; deleting the stream releases every page.
#[test]
fn tens_of_thousands_pending_keep_their_pages_in_groups() {
    let server = Server::start();
    let mut c = server.client();
    let id = |i: usize| numbered_id(i as u64);
    add_numbered(&mut c, 0..30_000);
    let _: () = run(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    let read = |c: &mut redis::Connection, who: &str, count: usize| -> usize {
        let got: Vec<(String, Entries)> = run(
            c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                who,
                "COUNT",
                &count.to_string(),
                "STREAMS",
                "s",
                ">",
            ],
        );
        got[0].1.len()
    };
    assert_eq!(read(&mut c, "alice", 20_000), 20_000);
    assert_eq!(read(&mut c, "bob", 10_000), 10_000);
    // The model: each pending entry's number and consumer.
    let mut pending: Vec<(usize, &str)> = (0..30_000)
        .map(|i| (i, if i < 20_000 { "alice" } else { "bob" }))
        .collect();
    let ack = |c: &mut redis::Connection, ids: &[usize]| -> i64 {
        let ids: Vec<String> = ids.iter().map(|&i| id(i)).collect();
        let args: Vec<&str> = ["XACK", "s", "g"]
            .into_iter()
            .chain(ids.iter().map(String::as_str))
            .collect();
        run(c, &args)
    };
    // A run across the bound of the first two groups (96 pages of 96 records).
    let run_across: Vec<usize> = (9_000..9_500).collect();
    assert_eq!(ack(&mut c, &run_across), 500);
    let singles = [0, 1, 18_431, 18_432, 27_647, 27_648, 29_999];
    assert_eq!(ack(&mut c, &singles), singles.len() as i64);
    pending.retain(|(i, _)| !run_across.contains(i) && !singles.contains(i));
    let claimed: Vec<String> = run(
        &mut c,
        &["XCLAIM", "s", "g", "carol", "0", &id(15_000), "JUSTID"],
    );
    assert_eq!(claimed, [id(15_000)]);
    pending
        .iter_mut()
        .find(|(i, _)| *i == 15_000)
        .expect("pending")
        .1 = "carol";
    add_numbered(&mut c, 30_000..30_300);
    assert_eq!(read(&mut c, "bob", 1_000), 300);
    pending.extend((30_000..30_300).map(|i| (i, "bob")));
    let check = |c: &mut redis::Connection, pending: &[(usize, &str)]| {
        let rows: Vec<(String, String, i64, i64)> =
            run(c, &["XPENDING", "s", "g", "-", "+", "40000"]);
        let got: Vec<(String, &str)> = rows.iter().map(|r| (r.0.clone(), r.1.as_str())).collect();
        let want: Vec<(String, &str)> = pending.iter().map(|&(i, who)| (id(i), who)).collect();
        assert_eq!(got, want);
        for at in [9_100, 9_215, 9_216, 18_400, 27_000] {
            let from = pending.partition_point(|&(i, _)| i < at);
            let rows: Vec<(String, String, i64, i64)> =
                run(c, &["XPENDING", "s", "g", &id(at), "+", "5"]);
            let got: Vec<String> = rows.into_iter().map(|r| r.0).collect();
            let want: Vec<String> = pending[from..from + 5]
                .iter()
                .map(|&(i, _)| id(i))
                .collect();
            assert_eq!(got, want, "from {at}");
        }
        let summary: Summary = run(c, &["XPENDING", "s", "g"]);
        assert_eq!(summary.0, pending.len() as i64);
    };
    check(&mut c, &pending);
    let server = server.restarted_if_lsm();
    let mut c = server.client();
    check(&mut c, &pending);
    assert_eq!(run::<i64>(&mut c, &["DEL", "s"]), 1);
    if support::test_engine() == "memory" {
        assert!(support::eventually(10, || support::info_field(
            &mut c,
            "hotring_collection_nodes"
        ) == "0"));
    }
}
