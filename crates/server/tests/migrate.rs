//! MIGRATE between two hotkv servers, and against targets that misbehave (silent,
//! hanging up), with what Redis replies in each case.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use support::{info_field, run, run_err, Server};

/// `MIGRATE 127.0.0.1 port rest...`, as `run` takes it.
fn migrate_args<'a>(port: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    [&["MIGRATE", "127.0.0.1", port][..], rest].concat()
}

fn migrate(c: &mut redis::Connection, to: &Server, rest: &[&str]) -> String {
    run(c, &migrate_args(&to.port.to_string(), rest))
}

fn migrate_err(c: &mut redis::Connection, to: &Server, rest: &[&str]) -> String {
    run_err(c, &migrate_args(&to.port.to_string(), rest))
}

#[test]
fn keys_move_with_their_ttl_and_copies_stay() {
    let (source, target) = (Server::start(), Server::start());
    let (mut s, mut t) = (source.client(), target.client());
    assert_eq!(info_field(&mut s, "migrate_cached_sockets"), "0");
    run::<()>(&mut s, &["SET", "key", "Some Value", "EX", "100"]);
    run::<()>(&mut s, &["RPUSH", "list", "a", "b", "c"]);
    run::<()>(&mut s, &["HSET", "hash", "f1", "v1", "f2", "v2"]);

    assert_eq!(migrate(&mut s, &target, &["key", "0", "5000"]), "OK");
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "key"]), 0);
    assert_eq!(run::<String>(&mut t, &["GET", "key"]), "Some Value");
    let ttl: i64 = run(&mut t, &["TTL", "key"]);
    assert!((95..=100).contains(&ttl), "{ttl}");
    assert_eq!(info_field(&mut s, "migrate_cached_sockets"), "1");

    assert_eq!(
        migrate(&mut s, &target, &["list", "0", "5000", "COPY"]),
        "OK"
    );
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "list"]), 1);
    assert_eq!(
        run::<Vec<String>>(&mut t, &["LRANGE", "list", "0", "-1"]),
        ["a", "b", "c"]
    );
    assert_eq!(run::<i64>(&mut t, &["TTL", "list"]), -1);
    // The target has it now: refused unless REPLACE, and then kept here.
    run::<()>(&mut s, &["RPUSH", "list", "d"]);
    assert_eq!(
        migrate_err(&mut s, &target, &["list", "0", "5000"]),
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    assert_eq!(run::<i64>(&mut s, &["LLEN", "list"]), 4);
    assert_eq!(
        migrate(&mut s, &target, &["list", "0", "5000", "REPLACE"]),
        "OK"
    );
    assert_eq!(run::<i64>(&mut t, &["LLEN", "list"]), 4);
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "list"]), 0);

    assert_eq!(migrate(&mut s, &target, &["nothing", "0", "5000"]), "NOKEY");
    assert_eq!(
        migrate(&mut s, &target, &["", "0", "5000", "KEYS", "no1", "no2"]),
        "NOKEY"
    );
    assert_eq!(
        migrate(&mut s, &target, &["", "0", "5000", "KEYS", "no1", "hash"]),
        "OK"
    );
    assert_eq!(run::<String>(&mut t, &["HGET", "hash", "f2"]), "v2");
    assert_eq!(run::<i64>(&mut s, &["DBSIZE"]), 0);

    // A value far past what the sockets buffer (Redis's test moves 800,000 items).
    let items: Vec<String> = (0..20_000).map(|i| format!("item {i}")).collect();
    let mut push = vec!["RPUSH", "big"];
    push.extend(items.iter().map(String::as_str));
    for _ in 0..20 {
        run::<()>(&mut s, &push);
    }
    let payload: Vec<u8> = run(&mut s, &["DUMP", "big"]);
    assert!(payload.len() > 1 << 20, "{}", payload.len());
    assert_eq!(migrate(&mut s, &target, &["big", "0", "10000"]), "OK");
    assert_eq!(run::<i64>(&mut t, &["LLEN", "big"]), 400_000);
    assert_eq!(
        run::<String>(&mut t, &["LINDEX", "big", "-1"]),
        "item 19999"
    );
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "big"]), 0);
}

#[test]
fn only_the_keys_the_target_took_are_deleted() {
    let (source, target) = (Server::start(), Server::start());
    let (mut s, mut t) = (source.client(), target.client());
    run::<()>(
        &mut s,
        &["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"],
    );
    run::<()>(&mut t, &["MSET", "c", "_", "d", "_"]);
    let refused = migrate_err(
        &mut s,
        &target,
        &["", "0", "5000", "KEYS", "a", "b", "c", "d", "e"],
    );
    assert!(refused.contains("BUSYKEY"), "{refused}");
    assert_eq!(run::<i64>(&mut s, &["DBSIZE"]), 2);
    assert_eq!(run::<Vec<String>>(&mut s, &["MGET", "c", "d"]), ["3", "4"]);
    assert_eq!(
        run::<Vec<String>>(&mut t, &["MGET", "a", "b", "c", "d", "e"]),
        ["1", "2", "_", "_", "5"]
    );
    // A database the target refuses fails every key, and the error says so.
    let refused = migrate_err(&mut s, &target, &["c", "9", "5000"]);
    assert_eq!(
        refused,
        "ERR Target instance replied with error: ERR DB index is out of range"
    );
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "c"]), 1);
    // The failed SELECT is not remembered: the next MIGRATE selects again.
    run::<()>(&mut t, &["DEL", "c"]);
    assert_eq!(migrate(&mut s, &target, &["c", "0", "5000"]), "OK");
    assert_eq!(run::<String>(&mut t, &["GET", "c"]), "3");
}

#[test]
fn auth_reaches_a_target_that_asks_for_it() {
    let (source, target) = (
        Server::start(),
        Server::start_with(&["--requirepass", "foobar"]),
    );
    let mut s = source.client();
    run::<()>(&mut s, &["LPUSH", "list", "a", "b", "c", "d"]);
    let refused = migrate_err(&mut s, &target, &["list", "0", "5000"]);
    assert!(refused.contains("NOAUTH"), "{refused}");
    let refused = migrate_err(&mut s, &target, &["list", "0", "5000", "AUTH", "wrong"]);
    assert!(refused.contains("WRONGPASS"), "{refused}");
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "list"]), 1);
    assert_eq!(
        migrate(&mut s, &target, &["list", "0", "5000", "AUTH", "foobar"]),
        "OK"
    );
    run::<()>(&mut s, &["SET", "k", "v"]);
    assert_eq!(
        migrate(
            &mut s,
            &target,
            &["", "0", "5000", "AUTH2", "default", "foobar", "KEYS", "k"]
        ),
        "OK"
    );
    let mut t = target.client();
    run::<()>(&mut t, &["AUTH", "foobar"]);
    assert_eq!(
        run::<Vec<String>>(&mut t, &["LRANGE", "list", "0", "-1"]),
        ["d", "c", "b", "a"]
    );
    assert_eq!(run::<String>(&mut t, &["GET", "k"]), "v");
    // The password never reaches the slow log.
    run::<()>(&mut s, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    run::<()>(&mut s, &["SET", "k2", "v"]);
    migrate(&mut s, &target, &["k2", "0", "5000", "AUTH", "foobar"]);
    let log: redis::Value = run(&mut s, &["SLOWLOG", "GET", "10"]);
    let shown = format!("{log:?}");
    assert!(
        shown.contains("redacted") && !shown.contains("foobar"),
        "{shown}"
    );
}

#[test]
fn arguments_are_checked_as_redis_checks_them() {
    let source = Server::start();
    let mut s = source.client();
    let refused = |c: &mut redis::Connection, args: &[&str]| run_err(c, &migrate_args("1", args));
    assert_eq!(
        refused(&mut s, &["k", "0", "5000", "KEYS", "a"]),
        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
    );
    assert_eq!(
        refused(&mut s, &["k", "0", "5000", "BOGUS"]),
        "ERR syntax error"
    );
    assert_eq!(
        refused(&mut s, &["k", "0", "5000", "AUTH"]),
        "ERR syntax error"
    );
    assert_eq!(
        refused(&mut s, &["k", "x", "5000"]),
        "ERR value is not an integer or out of range"
    );
    // Nothing to move: no connection is tried.
    assert_eq!(
        run::<String>(&mut s, &migrate_args("1", &["k", "0", "10"])),
        "NOKEY"
    );
    run::<()>(&mut s, &["SET", "k", "v"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = listener.local_addr().unwrap().port().to_string();
    drop(listener);
    // Redis learns of a refused connection only at its first write, and says so; a
    // port that is no port is tried too and refused.
    for port in [closed.as_str(), "99999", "abc"] {
        assert_eq!(
            run_err(&mut s, &migrate_args(port, &["k", "0", "1000"])),
            "IOERR error or timeout writing to target instance"
        );
    }
    // A host with no address is never connected to.
    assert_eq!(
        run_err(&mut s, &["MIGRATE", "", &closed, "k", "0", "1000"]),
        "IOERR error or timeout connecting to the client"
    );
    assert_eq!(run::<String>(&mut s, &["GET", "k"]), "v");
    let keys: Vec<String> = run(
        &mut s,
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH", "KEYS", "KEYS", "a",
            "b",
        ],
    );
    assert_eq!(keys, ["a", "b"]);
}

/// A target that reads requests and answers each line of `replies` in turn, then
/// hangs up or goes silent.
fn fake_target(replies: Vec<&'static str>, hang_up: bool) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        // The commands come as RESP arrays; a reply goes out per `*` header seen.
        let mut replies = replies.into_iter();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.starts_with('*') {
                match replies.next() {
                    Some(reply) => writer.write_all(reply.as_bytes()).unwrap(),
                    None if hang_up => return,
                    None => {
                        std::thread::sleep(Duration::from_secs(2));
                        return;
                    }
                }
            }
            line.clear();
        }
    });
    (port, serve)
}

#[test]
fn a_silent_target_times_out_and_a_hang_up_is_an_error() {
    let source = Server::start();
    let mut s = source.client();
    run::<()>(&mut s, &["MSET", "a", "1", "b", "2"]);
    // SELECT answered, then nothing: the reading times out, and nothing is deleted.
    let (port, serve) = fake_target(vec!["+OK\r\n"], false);
    let port = port.to_string();
    assert_eq!(
        run_err(&mut s, &migrate_args(&port, &["a", "0", "200"])),
        "IOERR error or timeout reading to target instance"
    );
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "a"]), 1);
    assert_eq!(info_field(&mut s, "migrate_cached_sockets"), "0");
    serve.join().unwrap();
    // SELECT and the first RESTORE answered, then a hang-up: the acknowledged key is
    // gone, the other kept, and the error is the reading's.
    let (port, serve) = fake_target(vec!["+OK\r\n", "+OK\r\n"], true);
    let port = port.to_string();
    assert_eq!(
        run_err(
            &mut s,
            &migrate_args(&port, &["", "0", "2000", "KEYS", "a", "b"])
        ),
        "IOERR error or timeout reading to target instance"
    );
    serve.join().unwrap();
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "a"]), 0);
    assert_eq!(run::<i64>(&mut s, &["EXISTS", "b"]), 1);
}

#[test]
fn a_cached_connection_the_target_closed_is_replaced() {
    let (source, target) = (Server::start(), Server::start());
    let (mut s, mut t) = (source.client(), target.client());
    run::<()>(&mut s, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(migrate(&mut s, &target, &["a", "0", "5000"]), "OK");
    // The target drops MIGRATE's connection (the only other client it has).
    let clients: String = run(&mut t, &["CLIENT", "LIST"]);
    let mine = run::<i64>(&mut t, &["CLIENT", "ID"]).to_string();
    for line in clients.lines() {
        let id = line.split(' ').next().unwrap().trim_start_matches("id=");
        if id != mine {
            run::<()>(&mut t, &["CLIENT", "KILL", "ID", id]);
        }
    }
    assert_eq!(migrate(&mut s, &target, &["b", "0", "5000"]), "OK");
    assert_eq!(run::<Vec<String>>(&mut t, &["MGET", "a", "b"]), ["1", "2"]);
}
