//! Keyspace and string commands through the real server: SCAN's guarantee under
//! concurrent writes, KEYS, RENAME, RANDOMKEY, FLUSHALL, ranges and float increments.

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use support::{run, run_err, Server};

#[test]
fn scan_returns_every_stable_key_once_while_others_churn() {
    let server = Server::start();
    let mut c = server.client();
    let stable: Vec<String> = (0..3000).map(|i| format!("stable:{i}")).collect();
    for chunk in stable.chunks(500) {
        let mut mset = redis::cmd("MSET");
        for k in chunk {
            mset.arg(k).arg("v");
        }
        mset.query::<()>(&mut c).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, mut c) = (stop.clone(), server.client());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Inserts force ring splits under the scan; deletes drop half again.
                run::<()>(&mut c, &["SET", &format!("churn:{i}"), "x"]);
                if i.is_multiple_of(2) {
                    run::<i64>(&mut c, &["DEL", &format!("churn:{}", i / 2)]);
                }
                i += 1;
            }
        })
    };
    for count in ["1", "7", "100"] {
        let mut seen = HashSet::new();
        let mut cursor = "0".to_string();
        loop {
            let (next, keys): (String, Vec<String>) = run(
                &mut c,
                &["SCAN", &cursor, "MATCH", "stable:*", "COUNT", count],
            );
            for k in keys {
                assert!(k.starts_with("stable:"), "MATCH let {k} through");
                assert!(seen.insert(k.clone()), "{k} returned twice");
            }
            if next == "0" {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len(), stable.len(), "COUNT {count}");
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    let (_, keys): (String, Vec<String>) =
        run(&mut c, &["SCAN", "0", "TYPE", "hash", "COUNT", "10000"]);
    assert!(keys.is_empty());
    assert_eq!(run_err(&mut c, &["SCAN", "x"]), "ERR invalid cursor");
    assert_eq!(
        run_err(&mut c, &["SCAN", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(run_err(&mut c, &["SCAN", "0", "MATCH"]), "ERR syntax error");
}

#[test]
fn keys_rename_randomkey_flush() {
    let server = Server::start();
    let mut c = server.client();
    assert_eq!(run::<Option<String>>(&mut c, &["RANDOMKEY"]), None);
    for k in ["hello", "hallo", "hxllo", "world"] {
        run::<()>(&mut c, &["SET", k, k]);
    }
    let mut keys: Vec<String> = run(&mut c, &["KEYS", "h[ae]llo"]);
    keys.sort();
    assert_eq!(keys, ["hallo", "hello"]);
    assert_eq!(run::<Vec<String>>(&mut c, &["KEYS", "*"]).len(), 4);
    let random: String = run(&mut c, &["RANDOMKEY"]);
    assert!(["hello", "hallo", "hxllo", "world"].contains(&random.as_str()));

    run::<()>(&mut c, &["EXPIRE", "hello", "100"]);
    run::<()>(&mut c, &["RENAME", "hello", "moved"]);
    assert_eq!(run::<String>(&mut c, &["GET", "moved"]), "hello");
    assert!(
        run::<i64>(&mut c, &["TTL", "moved"]) > 0,
        "RENAME keeps the TTL"
    );
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "hello"]), 0);
    assert_eq!(run::<i64>(&mut c, &["RENAMENX", "moved", "world"]), 0);
    assert_eq!(run::<i64>(&mut c, &["RENAMENX", "moved", "fresh"]), 1);
    assert_eq!(run_err(&mut c, &["RENAME", "nope", "x"]), "ERR no such key");
    assert_eq!(run::<String>(&mut c, &["TYPE", "fresh"]), "string");
    assert_eq!(run::<String>(&mut c, &["TYPE", "nope"]), "none");
    assert_eq!(run::<i64>(&mut c, &["TOUCH", "fresh", "nope", "fresh"]), 2);

    assert_eq!(run::<String>(&mut c, &["FLUSHALL", "ASYNC"]), "OK");
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(run_err(&mut c, &["FLUSHDB", "LATER"]), "ERR syntax error");
}

#[test]
fn ranges_floats_and_msetnx() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "s", "This is a string"]);
    for (start, end, want) in [
        ("0", "3", "This"),
        ("-3", "-1", "ing"),
        ("0", "-1", "This is a string"),
        ("10", "100", "string"),
        ("5", "3", ""),
        ("-1", "-5", ""),
        ("-100", "2", "Thi"),
    ] {
        assert_eq!(
            run::<String>(&mut c, &["GETRANGE", "s", start, end]),
            want,
            "{start} {end}"
        );
    }
    assert_eq!(
        run::<String>(&mut c, &["GETRANGE", "missing", "0", "-1"]),
        ""
    );
    assert_eq!(run::<i64>(&mut c, &["SETRANGE", "s", "5", "IS"]), 16);
    assert_eq!(run::<String>(&mut c, &["GET", "s"]), "This IS a string");
    assert_eq!(run::<i64>(&mut c, &["SETRANGE", "pad", "3", "x"]), 4);
    assert_eq!(run::<Vec<u8>>(&mut c, &["GET", "pad"]), b"\0\0\0x");
    assert_eq!(run::<i64>(&mut c, &["SETRANGE", "none", "3", ""]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "none"]), 0);
    assert_eq!(
        run_err(&mut c, &["SETRANGE", "s", "-1", "x"]),
        "ERR offset is out of range"
    );
    assert_eq!(
        run_err(&mut c, &["SETRANGE", "s", "536870911", "xx"]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );

    assert_eq!(run::<String>(&mut c, &["INCRBYFLOAT", "f", "10.5"]), "10.5");
    assert_eq!(run::<String>(&mut c, &["INCRBYFLOAT", "f", "0.1"]), "10.6");
    // Redis adds in long double and prints 17 decimals: 10.6 + 5000 shows the
    // nearest long double's tail, as redis-server 7.0 prints it.
    assert_eq!(
        run::<String>(&mut c, &["INCRBYFLOAT", "f", "5.0e3"]),
        "5010.60000000000000009"
    );
    run::<()>(&mut c, &["SET", "big", "17179869184"]);
    assert_eq!(
        run::<String>(&mut c, &["INCRBYFLOAT", "big", "1.5"]),
        "17179869185.5"
    );
    assert_eq!(
        run_err(&mut c, &["INCRBYFLOAT", "s", "1"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        run_err(&mut c, &["INCRBYFLOAT", "f", " 1"]),
        "ERR value is not a valid float"
    );
    // Past a double's range but not a long double's (up to 1.19e4932).
    run::<()>(&mut c, &["SET", "huge", "1.7e308"]);
    let sum = run::<String>(&mut c, &["INCRBYFLOAT", "huge", "1.7e308"]);
    assert!(
        sum.starts_with("34000000000000000000627") && sum.len() == 309,
        "{sum}"
    );
    run::<()>(&mut c, &["SET", "huge", "1e4932"]);
    assert_eq!(
        run_err(&mut c, &["INCRBYFLOAT", "huge", "1e4932"]),
        "ERR increment would produce NaN or Infinity"
    );
    assert_eq!(run::<String>(&mut c, &["GET", "huge"]), "1e4932");
    assert_eq!(run::<i64>(&mut c, &["MSETNX", "m1", "a", "m2", "b"]), 1);
    assert_eq!(run::<i64>(&mut c, &["MSETNX", "m2", "x", "m3", "c"]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "m3"]), 0);
    assert_eq!(run::<String>(&mut c, &["GET", "m2"]), "b");
}

#[test]
fn copy_duplicates_value_and_expiry_and_object_names_the_encoding() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "src", "hello", "EX", "100"]);
    assert_eq!(run::<i64>(&mut c, &["COPY", "src", "dst"]), 1);
    assert_eq!(run::<String>(&mut c, &["GET", "dst"]), "hello");
    let ttl: i64 = run(&mut c, &["TTL", "dst"]);
    assert!((1..=100).contains(&ttl), "{ttl}");
    let _: () = run(&mut c, &["SET", "src", "changed"]);
    assert_eq!(run::<i64>(&mut c, &["COPY", "src", "dst"]), 0);
    assert_eq!(run::<String>(&mut c, &["GET", "dst"]), "hello");
    assert_eq!(run::<i64>(&mut c, &["COPY", "src", "dst", "REPLACE"]), 1);
    assert_eq!(run::<String>(&mut c, &["GET", "dst"]), "changed");
    assert_eq!(run::<i64>(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(run::<i64>(&mut c, &["COPY", "missing", "dst"]), 0);
    assert_eq!(
        run_err(&mut c, &["COPY", "src", "src"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        run_err(&mut c, &["COPY", "src", "x", "DB", "3"]),
        "ERR DB index is out of range"
    );
    for (value, encoding) in [
        ("12345", "int"),
        ("-7", "int"),
        ("007", "embstr"),
        ("short", "embstr"),
        (&"x".repeat(44), "embstr"),
        (&"x".repeat(45), "raw"),
    ] {
        let _: () = run(&mut c, &["SET", "k", value]);
        assert_eq!(
            run::<String>(&mut c, &["OBJECT", "ENCODING", "k"]),
            encoding,
            "{value}"
        );
    }
    let none: Option<String> = run(&mut c, &["OBJECT", "ENCODING", "nokey"]);
    assert_eq!(none, None);
    let _: () = run(&mut c, &["SET", "small", "42"]);
    assert_eq!(
        run::<i64>(&mut c, &["OBJECT", "REFCOUNT", "small"]),
        i32::MAX as i64
    );
    assert_eq!(run::<i64>(&mut c, &["OBJECT", "REFCOUNT", "k"]), 1);
    // As in Redis, integers are not shared under a policy that keeps a per-key LRU
    // or LFU clock, all keys' or volatile keys'; under the others they are.
    let _: () = run(&mut c, &["CONFIG", "SET", "maxmemory", "1gb"]);
    for (policy, shared) in [
        ("allkeys-lru", false),
        ("volatile-lru", false),
        ("allkeys-lfu", false),
        ("volatile-lfu", false),
        ("allkeys-random", true),
        ("volatile-ttl", true),
    ] {
        let _: () = run(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        let want = if shared { i32::MAX as i64 } else { 1 };
        assert_eq!(
            run::<i64>(&mut c, &["OBJECT", "REFCOUNT", "small"]),
            want,
            "{policy}"
        );
    }
    let _: () = run(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    assert!(run_err(&mut c, &["OBJECT", "FREQ", "k"])
        .starts_with("ERR An LFU maxmemory policy is not selected"));
    // MEMORY USAGE: key and value bytes plus the index's overhead; nil once gone.
    let _: () = run(&mut c, &["SET", "big", &"v".repeat(1000)]);
    let used: i64 = run(&mut c, &["MEMORY", "USAGE", "big"]);
    assert!((1003..1200).contains(&used), "{used}");
    let _: () = run(&mut c, &["SET", "brief", "v", "PX", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let gone: Option<i64> = run(&mut c, &["MEMORY", "USAGE", "brief"]);
    assert_eq!(gone, None);
}

#[test]
fn memory_usage_counts_a_large_collections_nodes() {
    memory_usage_counts_a_large_collections_nodes_on(Server::start());
    memory_usage_counts_a_large_collections_nodes_on(Server::start_memory(&[]));
}

/// A collection split into nodes is counted whole, on either engine: 20,000 elements
/// of 100 bytes hold 2 MB, far more than the root that names their nodes.
fn memory_usage_counts_a_large_collections_nodes_on(server: Server) {
    let mut c = server.client();
    let element = |i: usize| format!("{i:0100}");
    for chunk in (0..20_000).collect::<Vec<_>>().chunks(1000) {
        let mut list = vec!["RPUSH".to_string(), "list".to_string()];
        let mut set = vec!["SADD".to_string(), "set".to_string()];
        let mut zset = vec!["ZADD".to_string(), "zset".to_string()];
        let mut hash = vec!["HSET".to_string(), "hash".to_string()];
        for &i in chunk {
            list.push(element(i));
            set.push(element(i));
            zset.extend([i.to_string(), element(i)]);
            hash.extend([element(i), i.to_string()]);
        }
        for args in [list, set, zset, hash] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let _: i64 = run(&mut c, &args);
        }
    }
    for key in ["list", "set", "zset", "hash"] {
        let used: i64 = run(&mut c, &["MEMORY", "USAGE", key]);
        assert!((2_000_000..20_000_000).contains(&used), "{key}: {used}");
    }
    let _: () = run(&mut c, &["LTRIM", "list", "0", "9"]);
    let used: i64 = run(&mut c, &["MEMORY", "USAGE", "list"]);
    assert!(used < 10_000, "a trimmed list: {used}");
}

#[test]
fn lcs_refuses_a_table_larger_than_a_value_may_be() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    let _: () = run(&mut c, &["SET", "a", &"ab".repeat(500)]);
    let _: () = run(&mut c, &["SET", "b", &"ba".repeat(500)]);
    // 1001 x 1001 lengths of 4 bytes is about 4 MB, over the 1 MB limit.
    assert_eq!(
        run_err(&mut c, &["LCS", "a", "b", "LEN"]),
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
    );
    let _: () = run(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "512mb"]);
    assert_eq!(run::<i64>(&mut c, &["LCS", "a", "b", "LEN"]), 999);
}

#[test]
fn restore_idletime_sets_the_access_clock_back() {
    restore_idletime_sets_the_access_clock_back_on(Server::start_memory(&[]));
    restore_idletime_sets_the_access_clock_back_on(Server::start_in(
        tempfile::tempdir().unwrap(),
        &[],
    ));
}

fn restore_idletime_sets_the_access_clock_back_on(server: Server) {
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "src", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
    let restore = |c: &mut redis::Connection, key: &str, idle: &str| {
        let () = redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(&payload)
            .arg("IDLETIME")
            .arg(idle)
            .query(c)
            .unwrap();
    };
    restore(&mut c, "aged", "1000");
    let idle: i64 = run(&mut c, &["OBJECT", "IDLETIME", "aged"]);
    assert!((1000..=1001).contains(&idle), "{idle}");
    // Under an LFU policy it does not apply, as in Redis.
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    restore(&mut c, "fresh", "1000");
    let _: () = run(&mut c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let idle: i64 = run(&mut c, &["OBJECT", "IDLETIME", "fresh"]);
    assert!(idle <= 1, "{idle}");
}

#[test]
fn object_freq_on_lsm_is_redis_lfu_counter() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir, &[]);
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "src", "v"]);
    let payload: Vec<u8> = redis::cmd("DUMP").arg("src").query(&mut c).unwrap();
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    // No decay, so that a minute turning mid-test takes nothing off.
    let _: () = run(&mut c, &["CONFIG", "SET", "lfu-decay-time", "0"]);
    // A new key starts at 5; with a log factor of 0 each read adds one.
    let _: () = run(&mut c, &["SET", "k", "v"]);
    assert_eq!(run::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 5);
    let _: () = run(&mut c, &["CONFIG", "SET", "lfu-log-factor", "0"]);
    for _ in 0..10 {
        let _: String = run(&mut c, &["GET", "k"]);
    }
    assert_eq!(run::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 15);
    // EXISTS and OBJECT only look.
    let _: i64 = run(&mut c, &["EXISTS", "k"]);
    assert_eq!(run::<i64>(&mut c, &["OBJECT", "FREQ", "k"]), 15);
    // RESTORE's FREQ sets it, as in Redis's own test.
    let () = redis::cmd("RESTORE")
        .arg("restored")
        .arg(0)
        .arg(&payload)
        .arg("FREQ")
        .arg(100)
        .query(&mut c)
        .unwrap();
    assert_eq!(run::<i64>(&mut c, &["OBJECT", "FREQ", "restored"]), 100);
    let none: Option<i64> = run(&mut c, &["OBJECT", "FREQ", "nokey"]);
    assert_eq!(none, None);
}

#[test]
fn object_idletime_counts_seconds_since_the_last_access() {
    object_idletime_counts_seconds_since_the_last_access_on(Server::start_memory(&[]));
}

#[test]
fn object_idletime_counts_seconds_since_the_last_access_on_lsm() {
    let dir = tempfile::tempdir().unwrap();
    object_idletime_counts_seconds_since_the_last_access_on(Server::start_in(dir, &[]));
}

fn object_idletime_counts_seconds_since_the_last_access_on(server: Server) {
    // As Redis's own test of TOUCH: idle for 3 s, then an access starts it again.
    // EXISTS, TYPE, TTL, RANDOMKEY and OBJECT only look (LOOKUP_NOTOUCH in Redis).
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "foo", "bar"]);
    let _: () = run(&mut c, &["SET", "n", "1"]);
    assert!(run::<i64>(&mut c, &["OBJECT", "IDLETIME", "foo"]) <= 1);
    std::thread::sleep(std::time::Duration::from_millis(3000));
    for look in [
        &["EXISTS", "foo"][..],
        &["TYPE", "foo"],
        &["TTL", "foo"],
        &["PTTL", "foo"],
        &["RANDOMKEY"],
        &["OBJECT", "ENCODING", "foo"],
    ] {
        let _: redis::Value = run(&mut c, look);
    }
    let idle: i64 = run(&mut c, &["OBJECT", "IDLETIME", "foo"]);
    assert!(idle >= 2, "idle {idle} s after 3 s and only looks");
    assert_eq!(run::<i64>(&mut c, &["TOUCH", "foo", "nokey"]), 1);
    assert!(run::<i64>(&mut c, &["OBJECT", "IDLETIME", "foo"]) <= 1);
    let _: String = run(&mut c, &["GET", "n"]);
    assert!(run::<i64>(&mut c, &["OBJECT", "IDLETIME", "n"]) <= 1);
    let none: Option<i64> = run(&mut c, &["OBJECT", "IDLETIME", "nokey"]);
    assert_eq!(none, None);
    // An LFU policy tracks frequency instead, as in Redis.
    let _: () = run(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    assert!(run_err(&mut c, &["OBJECT", "IDLETIME", "foo"])
        .starts_with("ERR An LFU maxmemory policy is selected"));
}
