//! Keyspace notifications (`notify-keyspace-events`) and the read statistics they
//! share a hook with, checked against what redis-server 7.0 publishes and counts for
//! the same commands.

mod support;

use std::time::Duration;

use resp::Frame;
use support::{eventually, info_field, run, run_err, Conn, Server};

/// A subscriber to every keyspace and keyevent channel.
fn listener(server: &Server) -> Conn {
    let mut c = Conn::open(server, false);
    c.call(&["PSUBSCRIBE", "__key*__:*"]);
    c
}

/// The `(channel, payload)` pairs that arrive within a moment.
fn heard(c: &mut Conn) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some(frame) = c.next_frame(Duration::from_millis(150)) {
        let Frame::Array(parts) = frame else {
            panic!("{frame:?}");
        };
        let text = |f: &Frame| match f {
            Frame::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(text(&parts[0]), "pmessage");
        out.push((text(&parts[2]), text(&parts[3])));
    }
    out
}

/// Both messages of one event under `KEA`: the keyspace one, then the keyevent one.
fn event(key: &str, name: &str) -> [(String, String); 2] {
    [
        (format!("__keyspace@0__:{key}"), name.to_string()),
        (format!("__keyevent@0__:{name}"), key.to_string()),
    ]
}

/// A command and the `(key, event)` pairs it publishes.
type Step<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);

#[test]
fn each_command_publishes_the_events_redis_publishes() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut ear = listener(&server);
    let script: &[Step] = &[
        (&["SET", "k", "v"], &[("k", "set")]),
        (
            &["SET", "k", "v2", "EX", "100"],
            &[("k", "set"), ("k", "expire")],
        ),
        (&["SET", "k", "v", "NX"], &[]),
        (&["SET", "k", "v3", "XX", "KEEPTTL"], &[("k", "set")]),
        (&["SETEX", "k", "10", "v"], &[("k", "set"), ("k", "expire")]),
        (&["GETSET", "k", "x"], &[("k", "set")]),
        (&["GETEX", "k", "EX", "100"], &[("k", "expire")]),
        (&["GETEX", "k", "PERSIST"], &[("k", "persist")]),
        (&["GETEX", "k"], &[]),
        (&["GETDEL", "k"], &[("k", "del")]),
        (&["GETDEL", "k"], &[]),
        (&["MSET", "a", "1", "b", "2"], &[("a", "set"), ("b", "set")]),
        (&["APPEND", "a", "x"], &[("a", "append")]),
        (&["SETRANGE", "a", "0", "z"], &[("a", "setrange")]),
        (&["SETRANGE", "a", "0", ""], &[]),
        (&["INCR", "i"], &[("i", "incrby")]),
        (&["DECRBY", "i", "2"], &[("i", "incrby")]),
        (&["INCRBYFLOAT", "i", "1.5"], &[("i", "incrbyfloat")]),
        (&["SETBIT", "bits", "3", "1"], &[("bits", "setbit")]),
        (&["SETBIT", "bits", "3", "1"], &[]),
        (&["BITOP", "AND", "dest", "a", "b"], &[("dest", "set")]),
        (
            &["BITOP", "AND", "dest", "nox1", "nox2"],
            &[("dest", "del")],
        ),
        (&["DEL", "a", "b", "zz"], &[("a", "del"), ("b", "del")]),
        (&["SET", "d", "1"], &[("d", "set")]),
        (&["EXPIRE", "d", "100"], &[("d", "expire")]),
        (&["PERSIST", "d"], &[("d", "persist")]),
        (&["PERSIST", "d"], &[]),
        (&["EXPIRE", "d", "-1"], &[("d", "del")]),
        (&["SET", "r", "1"], &[("r", "set")]),
        (
            &["RENAME", "r", "r2"],
            &[("r", "rename_from"), ("r2", "rename_to")],
        ),
        (&["COPY", "r2", "c2"], &[("c2", "copy_to")]),
        (&["GET", "missing"], &[]),
        (&["FLUSHALL"], &[]),
    ];
    for (command, events) in script {
        let _: redis::Value = run(&mut c, command);
        let expected: Vec<(String, String)> =
            events.iter().flat_map(|(k, e)| event(k, e)).collect();
        assert_eq!(heard(&mut ear), expected, "{command:?}");
    }
    // RESTORE, whose payload is bytes: an event when it stores, del when a TTL already
    // past makes REPLACE delete, nothing when that TTL stores nothing.
    let _: () = run(&mut c, &["SET", "src", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
    heard(&mut ear);
    let mut restore = |ttl: &str, options: &[&str], events: &[(&str, &str)]| {
        let () = redis::cmd("RESTORE")
            .arg("rs")
            .arg(ttl)
            .arg(&payload)
            .arg(options)
            .query(&mut c)
            .unwrap();
        let expected: Vec<(String, String)> =
            events.iter().flat_map(|(k, e)| event(k, e)).collect();
        assert_eq!(heard(&mut ear), expected, "RESTORE {ttl} {options:?}");
    };
    restore("0", &[], &[("rs", "restore")]);
    restore("1", &["REPLACE", "ABSTTL"], &[("rs", "del")]);
    restore("1", &["ABSTTL"], &[]);
}

#[test]
fn expiry_eviction_new_keys_and_misses_are_events_of_their_own_classes() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "notify-keyspace-events", "Exenm"],
    );
    let mut ear = listener(&server);
    let keyevent = |name: &str, key: &str| (format!("__keyevent@0__:{name}"), key.to_string());
    // Found by active expiry, with nobody touching the key.
    let _: () = run(&mut c, &["SET", "brief", "v", "PX", "20"]);
    // The active cycle runs every 100 ms; a loaded machine may delay it.
    let mut got = Vec::new();
    eventually(10, || {
        got.extend(heard(&mut ear));
        got.len() >= 2
    });
    assert_eq!(
        got,
        vec![keyevent("new", "brief"), keyevent("expired", "brief")]
    );
    // String events are not chosen: a SET says only that the key is new.
    let _: () = run(&mut c, &["SET", "k", "v"]);
    let _: () = run(&mut c, &["SET", "k", "v2"]);
    let _: Option<String> = run(&mut c, &["GET", "nothing"]);
    assert_eq!(
        heard(&mut ear),
        vec![keyevent("new", "k"), keyevent("keymiss", "nothing")]
    );
    // GETSET reads first, as Redis: the miss comes before the new key.
    let _: Option<String> = run(&mut c, &["GETSET", "fresh", "v"]);
    assert_eq!(
        heard(&mut ear),
        vec![keyevent("keymiss", "fresh"), keyevent("new", "fresh")]
    );
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    let value = "x".repeat(10_000);
    for i in 0..50 {
        let _: () = run(&mut c, &["SET", &format!("big:{i}"), &value]);
    }
    let used: u64 = info_field(&mut c, "used_memory").parse().unwrap();
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "maxmemory", &(used / 2).to_string()],
    );
    // As in Redis, a limit under the memory in use evicts at once, before any write.
    let evicted: u64 = info_field(&mut c, "evicted_keys").parse().unwrap();
    assert!(evicted > 0);
    let heard = heard(&mut ear);
    let evictions = heard
        .iter()
        .filter(|(ch, _)| ch == "__keyevent@0__:evicted")
        .count();
    assert_eq!(evictions as u64, evicted, "{heard:?}");
}

#[test]
fn the_setting_reads_back_in_redis_form_and_refuses_unknown_classes() {
    let server = Server::start();
    let mut c = server.client();
    for (given, shown) in [("KEA", "AKE"), ("Kg$", "g$K"), ("Exn", "xnE"), ("", "")] {
        let _: () = run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", given]);
        let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "notify-keyspace-events"]);
        assert_eq!(got[1], shown, "{given}");
    }
    assert_eq!(
        run_err(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Kq"]),
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
    // With neither K nor E, nothing is published whatever the classes.
    let _: () = run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "A"]);
    let mut ear = listener(&server);
    let _: () = run(&mut c, &["SET", "k", "v"]);
    assert!(heard(&mut ear).is_empty());
}

#[test]
fn every_command_that_reads_a_value_counts_a_hit_or_a_miss() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "have", "v"]);
    let counts = |c: &mut redis::Connection| -> (u64, u64) {
        (
            info_field(c, "keyspace_hits").parse().unwrap(),
            info_field(c, "keyspace_misses").parse().unwrap(),
        )
    };
    // (command, hits, misses) as redis-server 7.0 counts them.
    let script: &[(&[&str], u64, u64)] = &[
        (&["TYPE", "n"], 0, 1),
        (&["TTL", "have"], 1, 0),
        (&["GETRANGE", "n", "0", "1"], 0, 1),
        (&["GETBIT", "have", "1"], 1, 0),
        (&["BITCOUNT", "n"], 0, 1),
        (&["LCS", "have", "n"], 1, 1),
        (&["OBJECT", "ENCODING", "n"], 0, 1),
        (&["EXISTS", "have", "n"], 1, 1),
        (&["STRLEN", "have"], 1, 0),
        (&["GETSET", "n2", "1"], 0, 1),
        (&["COPY", "have", "have2"], 1, 0),
        (&["MEMORY", "USAGE", "n"], 0, 0),
        (&["APPEND", "have", "x"], 0, 0),
        (&["ZADD", "z", "1", "a"], 0, 0),
        (&["ZRANGESTORE", "d", "z", "0", "-1"], 1, 0),
        (&["ZRANGESTORE", "d", "n", "0", "-1"], 0, 1),
        (&["ZRANGEBYLEX", "z", "-", "+"], 1, 0),
        (&["ZLEXCOUNT", "n", "-", "+"], 0, 1),
        (&["DEL", "n"], 0, 0),
    ];
    for (command, hits, misses) in script {
        let (h0, m0) = counts(&mut c);
        let _: redis::Value = run(&mut c, command);
        let (h1, m1) = counts(&mut c);
        assert_eq!((h1 - h0, m1 - m0), (*hits, *misses), "{command:?}");
    }
}
