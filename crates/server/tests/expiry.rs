//! Key expiry through the real server: the SET/GETEX/EXPIRE options, TTL queries,
//! lazy expiry on access and the active cycle for keys nobody touches.

mod support;

use support::{eventually, info_field, run, run_err, Server};

#[test]
fn set_options_and_ttl_queries() {
    let server = Server::start();
    let mut c = server.client();
    assert_eq!(run::<String>(&mut c, &["SET", "k", "v", "EX", "100"]), "OK");
    let ttl: i64 = run(&mut c, &["TTL", "k"]);
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
    let pttl: i64 = run(&mut c, &["PTTL", "k"]);
    assert!((98_000..=100_000).contains(&pttl), "pttl {pttl}");
    let at: i64 = run(&mut c, &["EXPIRETIME", "k"]);
    let pat: i64 = run(&mut c, &["PEXPIRETIME", "k"]);
    // Seconds rounded to the nearest, as Redis rounds.
    assert_eq!(at, (pat + 500) / 1000);
    assert_eq!(run::<i64>(&mut c, &["TTL", "missing"]), -2);
    run::<()>(&mut c, &["SET", "plain", "v"]);
    assert_eq!(run::<i64>(&mut c, &["TTL", "plain"]), -1);
    assert_eq!(run::<i64>(&mut c, &["EXPIRETIME", "plain"]), -1);

    // KEEPTTL keeps it, a plain SET clears it, INCR and APPEND keep it.
    run::<()>(&mut c, &["SET", "k", "w", "KEEPTTL"]);
    assert!(run::<i64>(&mut c, &["TTL", "k"]) > 0);
    run::<()>(&mut c, &["SET", "n", "1", "PX", "100000"]);
    run::<i64>(&mut c, &["INCR", "n"]);
    run::<i64>(&mut c, &["APPEND", "n", "0"]);
    assert_eq!(run::<String>(&mut c, &["GET", "n"]), "20");
    assert!(run::<i64>(&mut c, &["PTTL", "n"]) > 0);
    run::<()>(&mut c, &["SET", "k", "x"]);
    assert_eq!(run::<i64>(&mut c, &["TTL", "k"]), -1);

    // SET ... GET returns the old value; NX GET does not overwrite.
    assert_eq!(
        run::<Option<String>>(&mut c, &["SET", "k", "y", "GET"]),
        Some("x".into())
    );
    assert_eq!(
        run::<Option<String>>(&mut c, &["SET", "new", "y", "GET"]),
        None
    );
    assert_eq!(
        run::<Option<String>>(&mut c, &["SET", "k", "z", "NX", "GET"]),
        Some("y".into())
    );
    assert_eq!(run::<String>(&mut c, &["GET", "k"]), "y");

    // SETEX, PSETEX, GETEX.
    run::<()>(&mut c, &["SETEX", "s", "50", "v"]);
    assert!((49..=50).contains(&run::<i64>(&mut c, &["TTL", "s"])));
    run::<()>(&mut c, &["PSETEX", "p", "50000", "v"]);
    assert!((49..=50).contains(&run::<i64>(&mut c, &["TTL", "p"])));
    assert_eq!(run::<String>(&mut c, &["GETEX", "p", "PERSIST"]), "v");
    assert_eq!(run::<i64>(&mut c, &["TTL", "p"]), -1);
    assert_eq!(run::<String>(&mut c, &["GETEX", "p", "EX", "7"]), "v");
    assert_eq!(run::<i64>(&mut c, &["TTL", "p"]), 7);
    assert_eq!(
        run::<Option<String>>(&mut c, &["GETEX", "nope", "EX", "7"]),
        None
    );

    for (args, want) in [
        (
            &["SET", "k", "v", "EX", "0"][..],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "PX", "-5"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["SET", "k", "v", "EX", "9223372036854775807"],
            "ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "10", "PX", "10"],
            "ERR syntax error",
        ),
        (&["SET", "k", "v", "NX", "XX"], "ERR syntax error"),
        (
            &["SET", "k", "v", "KEEPTTL", "EX", "10"],
            "ERR syntax error",
        ),
        (
            &["SETEX", "k", "0", "v"],
            "ERR invalid expire time in 'setex' command",
        ),
        (
            &["GETEX", "k", "EX", "0"],
            "ERR invalid expire time in 'getex' command",
        ),
        (&["GETEX", "k", "FOO"], "ERR syntax error"),
        (
            &["EXPIRE", "k", "10", "NX", "XX"],
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            &["EXPIRE", "k", "10", "GT", "LT"],
            "ERR GT and LT options at the same time are not compatible",
        ),
        (&["EXPIRE", "k", "10", "FOO"], "ERR Unsupported option FOO"),
    ] {
        assert_eq!(run_err(&mut c, args), want, "{args:?}");
    }
}

#[test]
fn expire_conditions_follow_redis() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "missing", "10"]), 0);
    // No deadline: XX and GT refuse (no deadline is an infinite one), LT and NX set.
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "100", "LT"]), 1);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "50", "GT"]), 0);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "200", "GT"]), 1);
    assert_eq!(run::<i64>(&mut c, &["TTL", "k"]), 200);
    assert_eq!(run::<i64>(&mut c, &["PEXPIRE", "k", "300000", "XX"]), 1);
    assert_eq!(run::<i64>(&mut c, &["TTL", "k"]), 300);
    assert_eq!(run::<i64>(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(run::<i64>(&mut c, &["PERSIST", "k"]), 0);
    // A deadline in the past deletes the key at once.
    assert_eq!(run::<i64>(&mut c, &["EXPIREAT", "k", "1000"]), 1);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "k"]), 0);
    run::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(run::<i64>(&mut c, &["EXPIRE", "k", "-1"]), 1);
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn expired_keys_vanish_lazily_and_actively() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "lazy", "v", "PX", "30"]);
    run::<()>(&mut c, &["SET", "kept", "v", "EX", "1000"]);
    // Nobody reads these: only the active cycle can remove them.
    for i in 0..500 {
        run::<()>(&mut c, &["SET", &format!("active:{i}"), "v", "PX", "30"]);
    }
    std::thread::sleep(std::time::Duration::from_millis(60));
    assert_eq!(run::<Option<String>>(&mut c, &["GET", "lazy"]), None);
    assert!(
        eventually(10, || run::<i64>(&mut c, &["DBSIZE"]) == 1),
        "dbsize stayed {}",
        run::<i64>(&mut c, &["DBSIZE"])
    );
    assert_eq!(run::<String>(&mut c, &["GET", "kept"]), "v");
    let expired: u64 = info_field(&mut c, "expired_keys").parse().unwrap();
    assert_eq!(expired, 501);
    let keyspace: String = run(&mut c, &["INFO", "keyspace"]);
    assert!(keyspace.contains("db0:keys=1,expires=1"), "{keyspace}");
}

#[test]
fn setbit_keeps_the_expiry_and_grows_with_zeros() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(&mut c, &["SET", "k", "\u{1}", "EX", "100"]);
    assert_eq!(run::<i64>(&mut c, &["SETBIT", "k", "23", "1"]), 0);
    assert_eq!(run::<Vec<u8>>(&mut c, &["GET", "k"]), vec![1u8, 0, 1]);
    let ttl: i64 = run(&mut c, &["TTL", "k"]);
    assert!((1..=100).contains(&ttl), "SETBIT dropped the TTL: {ttl}");
    assert_eq!(run::<i64>(&mut c, &["BITCOUNT", "k"]), 2);
    assert_eq!(run::<i64>(&mut c, &["BITPOS", "k", "1", "1"]), 23);
}

/// A deadline set on, read from and removed from large collections split into nodes
/// (a list, a hash, a stream) changes the key's entry alone: in memory no node is
/// written or released (the node count stays), the values answer as before, and the
/// deadline, once due, removes each key and all its nodes.
#[test]
fn deadlines_of_split_collections_leave_their_nodes() {
    let server = Server::start();
    let mut c = server.client();
    for chunk in (0..30_000).collect::<Vec<u32>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.cmd("RPUSH").arg("list").arg(i).ignore();
            pipe.cmd("HSET").arg("hash").arg(i).arg(i).ignore();
            pipe.cmd("XADD")
                .arg("stream")
                .arg(format!("{}-1", i + 1))
                .arg("n")
                .arg(i)
                .ignore();
        }
        let () = pipe.query(&mut c).unwrap();
    }
    let memory = support::test_engine() == "memory";
    let nodes = |c: &mut redis::Connection| -> usize {
        info_field(c, "hotring_collection_nodes").parse().unwrap()
    };
    // The nodes the last writes replaced are freed by the server's cycle a moment
    // later: start from a count that has stopped falling.
    let mut before = usize::MAX;
    assert!(
        !memory
            || eventually(20, || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let now = nodes(&mut c);
                std::mem::replace(&mut before, now) == now
            }),
        "the node count never settled: {before}"
    );
    assert!(!memory || before > 100, "{before} nodes");
    for key in ["list", "hash", "stream"] {
        assert_eq!(run::<i64>(&mut c, &["TTL", key]), -1);
        assert_eq!(run::<i64>(&mut c, &["EXPIRE", key, "1000"]), 1);
        assert_eq!(run::<i64>(&mut c, &["EXPIRE", key, "2000", "LT"]), 0);
        assert!((999..=1000).contains(&run::<i64>(&mut c, &["TTL", key])));
        assert_eq!(run::<i64>(&mut c, &["PERSIST", key]), 1);
        assert_eq!(run::<i64>(&mut c, &["PERSIST", key]), 0);
        assert_eq!(run::<i64>(&mut c, &["TTL", key]), -1);
        assert_eq!(run::<i64>(&mut c, &["PEXPIRE", key, "300000"]), 1);
    }
    if memory {
        assert_eq!(nodes(&mut c), before, "no node written or released");
    }
    assert_eq!(run::<String>(&mut c, &["LINDEX", "list", "12345"]), "12345");
    assert_eq!(run::<String>(&mut c, &["HGET", "hash", "29999"]), "29999");
    assert_eq!(run::<i64>(&mut c, &["XLEN", "stream"]), 30_000);
    // Writes keep the deadline they find.
    let _: i64 = run(&mut c, &["RPUSH", "list", "more"]);
    let _: String = run(&mut c, &["XADD", "stream", "*", "n", "more"]);
    for key in ["list", "hash", "stream"] {
        let pttl: i64 = run(&mut c, &["PTTL", key]);
        assert!((290_000..=300_000).contains(&pttl), "{key}: {pttl}");
        assert_eq!(run::<i64>(&mut c, &["PEXPIRE", key, "1"]), 1);
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    for key in ["list", "hash", "stream"] {
        assert_eq!(run::<i64>(&mut c, &["TTL", key]), -2, "{key}");
    }
    if memory {
        assert!(eventually(10, || nodes(&mut c) == 0));
    }
}
