//! Server administration through the real binary: AUTH, CLIENT, CONFIG, INFO,
//! HOTKEYS, maxmemory, maxclients, idle timeout, SHUTDOWN and the config file.

mod support;

use std::io::Read;
use std::process::Command;
use std::time::Duration;

use support::{assert_script, eventually, exchange, info_field, run, run_err, Server};

/// As in Redis, a password set while clients are connected binds only the clients
/// that connect (or RESET) after it: the one that set it can go on, and take it off.
#[test]
fn a_password_set_later_binds_new_connections() {
    let server = Server::start();
    let mut early = server.raw();
    assert_eq!(
        exchange(&mut early, b"CONFIG SET requirepass pw\r\nPING\r\n", 12),
        b"+OK\r\n+PONG\r\n"
    );
    let mut late = server.raw();
    assert_script(
        &mut late,
        &[(b"PING\r\n", b"-NOAUTH Authentication required.\r\n")],
    );
    assert_script(
        &mut early,
        &[(
            b"RESET\r\nPING\r\n",
            b"+RESET\r\n-NOAUTH Authentication required.\r\n",
        )],
    );
    assert_script(
        &mut late,
        &[(
            b"AUTH pw\r\nCONFIG SET requirepass \"\"\r\n",
            b"+OK\r\n+OK\r\n",
        )],
    );
    // No password now: every client may run commands, authenticated or not.
    assert_script(&mut early, &[(b"PING\r\n", b"+PONG\r\n")]);
    assert_script(&mut server.raw(), &[(b"PING\r\n", b"+PONG\r\n")]);
}

#[test]
fn auth_guards_every_command_until_given() {
    let server = Server::start_with(&["--requirepass", "s3cret"]);
    let mut s = server.raw();
    let script: &[(&[u8], &[u8])] = &[
        (b"GET k\r\n", b"-NOAUTH Authentication required.\r\n"),
        (b"AUTH wrong\r\n", b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
        (b"AUTH other s3cret\r\n", b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
        (b"HELLO 3\r\n", b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"),
    ];
    assert_script(&mut s, script);
    let got = exchange(&mut s, b"AUTH s3cret\r\nSET k v\r\n", 10);
    assert_eq!(got, b"+OK\r\n+OK\r\n");
    let got = exchange(&mut s, b"RESET\r\nGET k\r\n", 42);
    assert_eq!(got, b"+RESET\r\n-NOAUTH Authentication required.\r\n");
    // The redis crate authenticates from the URL (AUTH) and with HELLO AUTH.
    let mut c = redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}/", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(run::<String>(&mut c, &["GET", "k"]), "v");
    // ACL shows the one user with the password's SHA-256, as Redis does.
    assert_eq!(run::<String>(&mut c, &["ACL", "WHOAMI"]), "default");
    let sha = "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0";
    assert_eq!(
        run::<Vec<String>>(&mut c, &["ACL", "LIST"]),
        [format!("user default on #{sha} ~* &* +@all")]
    );
    let user: Vec<redis::Value> = run(&mut c, &["ACL", "GETUSER", "default"]);
    assert_eq!(
        redis::from_redis_value::<Vec<String>>(&user[1]).unwrap(),
        ["on"]
    );
    assert_eq!(
        redis::from_redis_value::<Vec<String>>(&user[3]).unwrap(),
        [sha]
    );
    let mut s = server.raw();
    assert_script(
        &mut s,
        &[(b"ACL WHOAMI\r\n", b"-NOAUTH Authentication required.\r\n")],
    );
    let got = exchange(&mut s, b"HELLO 2 AUTH default s3cret\r\nGET k\r\n", 1);
    assert!(
        got.starts_with(b"*14\r\n"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // Without a password configured, AUTH says so.
    let open = Server::start();
    let mut c = open.client();
    assert!(run_err(&mut c, &["AUTH", "x"])
        .starts_with("ERR AUTH <password> called without any password configured"));
    assert_eq!(
        run::<String>(&mut c, &["AUTH", "default", "anything"]),
        "OK"
    );
}

/// As Redis: until a client authenticates to a server that asks it to, a request
/// of more than 10 arguments, or an argument over 16 KB, is refused from its header
/// and the connection closed, so a stranger cannot make the server buffer much.
#[test]
fn a_client_yet_to_authenticate_sends_small_requests_only() {
    let server = Server::start_with(&["--requirepass", "s3cret"]);
    // `exchange` reads until the server closes: it must, after the error.
    let got = exchange(&mut server.raw(), b"*11\r\n", 1 << 20);
    assert_eq!(
        got,
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    let got = exchange(&mut server.raw(), b"*1\r\n$100000000\r\n", 1 << 20);
    assert_eq!(got, b"-ERR Protocol error: unauthenticated bulk length\r\n");
    // Within the limits, a stranger is told to authenticate.
    let ten = format!("*10\r\n$6\r\nEXISTS\r\n{}", "$1\r\nx\r\n".repeat(9));
    let got = exchange(&mut server.raw(), ten.as_bytes(), 1);
    assert_eq!(got, b"-NOAUTH Authentication required.\r\n");
    // An AUTH lifts the limits for the requests after it in the same write.
    let value = "v".repeat(20_000);
    let mut s = server.raw();
    let request = format!(
        "AUTH s3cret\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n{value}\r\n",
        value.len()
    );
    assert_eq!(exchange(&mut s, request.as_bytes(), 10), b"+OK\r\n+OK\r\n");
    let got = exchange(&mut s, b"STRLEN k\r\n", 8);
    assert_eq!(got, b":20000\r\n");
    // A server that asks for no password holds no client to them.
    let open = Server::start();
    let got = exchange(
        &mut open.raw(),
        request.split_once("\r\n").unwrap().1.as_bytes(),
        5,
    );
    assert_eq!(got, b"+OK\r\n");
}

/// What a call does to its keys decides what a user needs: BITFIELD with GETs only
/// is a read; SORT's BY and GET read keys the call does not name, so they need a
/// selector that reads every key, as in Redis.
#[test]
fn acl_key_checks_follow_what_the_call_does() {
    let server = Server::start();
    let mut admin = server.client();
    let mut c = server.client();
    let _: () = run(&mut admin, &["SET", "readstr", "a"]);
    let _: () = run(&mut admin, &["SET", "v1", "1"]);
    let _: () = run(&mut admin, &["RPUSH", "mylist", "1"]);
    let _: () = run(
        &mut admin,
        &[
            "ACL", "SETUSER", "reader", "on", "nopass", "%R~read*", "+@all",
        ],
    );
    let _: () = run(&mut c, &["AUTH", "reader", "any"]);
    assert_eq!(
        run::<Vec<i64>>(&mut c, &["BITFIELD", "readstr", "GET", "u4", "0"]),
        [6]
    );
    assert!(run_err(&mut c, &["BITFIELD", "readstr", "SET", "u4", "0", "1"]).starts_with("NOPERM"));
    let denied = |option: &str| {
        format!("ERR {option} option of SORT denied due to insufficient ACL permissions.")
    };
    for (rules, allowed) in [
        (&["(+sort ~mylist)"][..], false),
        (&["(+sort ~mylist ~v*)"], false),
        (&["(+sort ~mylist %W~*)"], false),
        (&["(+sort ~mylist %R~*)"], true),
        (&["(+sort allkeys)"], true),
    ] {
        let mut setuser = vec!["ACL", "SETUSER", "sorter", "reset", "on", "nopass"];
        setuser.extend_from_slice(rules);
        let _: () = run(&mut admin, &setuser);
        let _: () = run(&mut c, &["AUTH", "sorter", "any"]);
        if allowed {
            assert_eq!(
                run::<Vec<String>>(&mut c, &["SORT", "mylist", "BY", "v*"]),
                ["1"]
            );
            assert_eq!(
                run::<Vec<String>>(&mut c, &["SORT", "mylist", "GET", "v*"]),
                ["1"]
            );
        } else {
            assert_eq!(
                run_err(&mut c, &["SORT", "mylist", "BY", "v*"]),
                denied("BY"),
                "{rules:?}"
            );
            assert_eq!(
                run_err(&mut c, &["SORT", "mylist", "GET", "#"]),
                denied("GET"),
                "{rules:?}"
            );
            // A BY without `*` reads no other key.
            assert_eq!(
                run::<Vec<String>>(&mut c, &["SORT", "mylist", "BY", "nosort"]),
                ["1"]
            );
        }
    }
}

/// Users made with ACL SETUSER log in with their passwords and are held to their
/// rules from their next command after any change; CONFIG SET requirepass changes the
/// default user's password; ACL DELUSER drops the deleted user's connections.
#[test]
fn acl_users_log_in_and_are_held_to_their_rules() {
    let server = Server::start();
    let mut admin = server.client();
    let ok = |c: &mut redis::Connection, args: &[&str]| assert_eq!(run::<String>(c, args), "OK");
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "alice",
            "on",
            ">pw",
            "+get",
            "+set",
            "~a*",
            "+acl|whoami",
        ],
    );
    let mut alice = server.raw();
    let got = exchange(
        &mut alice,
        b"AUTH alice nope\r\nAUTH alice pw\r\nACL WHOAMI\r\nSET a1 v\r\nSET b1 v\r\nDEL a1\r\n",
        6,
    );
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n+OK\r\n$5\r\nalice\r\n+OK\r\n\
         -NOPERM this user has no permissions to access one of the keys used as arguments\r\n\
         -NOPERM this user has no permissions to run the 'del' command\r\n"
    );
    // A change reaches the connection at its next command.
    ok(&mut admin, &["ACL", "SETUSER", "alice", "-set"]);
    let got = exchange(&mut alice, b"SET a1 w\r\nGET a1\r\n", 2);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-NOPERM this user has no permissions to run the 'set' command\r\n$1\r\nv\r\n"
    );
    let list: String = run(&mut admin, &["CLIENT", "LIST"]);
    assert_eq!(list.matches("user=alice").count(), 1, "{list}");
    // The log holds the refusals, newest first, the failed login last.
    let log: Vec<redis::Value> = run(&mut admin, &["ACL", "LOG"]);
    assert_eq!(log.len(), 4);
    let entry: std::collections::HashMap<String, redis::Value> =
        redis::from_redis_value(&log[3]).unwrap();
    assert_eq!(
        redis::from_redis_value::<String>(&entry["reason"]).unwrap(),
        "auth"
    );
    // The default user's password follows requirepass.
    ok(&mut admin, &["CONFIG", "SET", "requirepass", "s3cret"]);
    let mut fresh = server.raw();
    let got = exchange(&mut fresh, b"GET a1\r\nAUTH s3cret\r\nGET a1\r\n", 3);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-NOAUTH Authentication required.\r\n+OK\r\n$1\r\nv\r\n"
    );
    // Deleting the user drops its connection.
    assert_eq!(run::<i64>(&mut admin, &["ACL", "DELUSER", "alice"]), 1);
    assert!(eventually(5, || {
        let list: String = run(&mut admin, &["CLIENT", "LIST"]);
        !list.contains("user=alice")
    }));
}

/// As Redis: when ACL SETUSER takes channels from a user, its connections subscribed
/// to one it may no longer use are dropped; its other connections stay.
#[test]
fn revoking_a_channel_drops_the_users_subscribers_of_it() {
    let server = Server::start();
    let mut admin = server.client();
    let setuser = |c: &mut redis::Connection, rules: &[&str]| {
        let args: Vec<&str> = ["ACL", "SETUSER", "bob"]
            .iter()
            .chain(rules)
            .copied()
            .collect();
        assert_eq!(run::<String>(c, &args), "OK");
    };
    setuser(
        &mut admin,
        &["on", ">pw", "+@all", "~*", "&news.*", "&sport"],
    );
    let login = |subscribe: &[u8], want: usize| {
        let mut s = server.raw();
        let mut request = b"AUTH bob pw\r\n".to_vec();
        request.extend_from_slice(subscribe);
        let got = exchange(&mut s, &request, want);
        assert!(
            got.starts_with(b"+OK\r\n*3\r\n"),
            "{}",
            String::from_utf8_lossy(&got)
        );
        s
    };
    let reply_len = |kind: &str, name: &str| {
        format!(
            "+OK\r\n*3\r\n${}\r\n{kind}\r\n${}\r\n{name}\r\n:1\r\n",
            kind.len(),
            name.len()
        )
        .len()
    };
    let _news = login(
        b"SUBSCRIBE news.today\r\n",
        reply_len("subscribe", "news.today"),
    );
    let mut sport_pattern = login(b"PSUBSCRIBE sport\r\n", reply_len("psubscribe", "sport"));
    let mut sport = login(b"SUBSCRIBE sport\r\n", reply_len("subscribe", "sport"));
    let mut idle = server.raw();
    assert_eq!(exchange(&mut idle, b"AUTH bob pw\r\n", 5), b"+OK\r\n");
    let publish =
        |c: &mut redis::Connection, channel: &str| run::<i64>(c, &["PUBLISH", channel, "m"]);
    assert_eq!(publish(&mut admin, "sport"), 2);

    // Adding a channel takes nothing away: every subscriber stays.
    setuser(&mut admin, &["&extra"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(publish(&mut admin, "sport"), 2);

    // Without `sport`, both of its subscribers go (the pattern, which only the very
    // same pattern allows, and the channel); the news subscriber and the connection
    // subscribed to nothing stay.
    setuser(&mut admin, &["resetchannels", "&news.*"]);
    assert!(eventually(5, || publish(&mut admin, "sport") == 0));
    assert_eq!(publish(&mut admin, "news.today"), 1);
    for dropped in [&mut sport_pattern, &mut sport] {
        dropped
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut rest = Vec::new();
        assert!(
            dropped.read_to_end(&mut rest).is_ok(),
            "the connection is closed"
        );
    }
    assert_eq!(exchange(&mut idle, b"PING\r\n", 7), b"+PONG\r\n");
    let list: String = run(&mut admin, &["CLIENT", "LIST"]);
    assert_eq!(list.matches("user=bob").count(), 2, "{list}");
}

#[test]
fn client_names_lists_and_kills() {
    let server = Server::start();
    let (mut a, mut b) = (server.client(), server.client());
    assert_eq!(run::<Option<String>>(&mut a, &["CLIENT", "GETNAME"]), None);
    run::<()>(&mut a, &["CLIENT", "SETNAME", "alpha"]);
    assert_eq!(run::<String>(&mut a, &["CLIENT", "GETNAME"]), "alpha");
    assert_eq!(
        run_err(&mut a, &["CLIENT", "SETNAME", "has space"]),
        "ERR Client names cannot contain spaces, newlines or special characters."
    );
    run::<()>(&mut b, &["CLIENT", "SETINFO", "LIB-NAME", "tests"]);
    let list: String = run(&mut b, &["CLIENT", "LIST"]);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains("name=alpha"), "{list}");
    // Named by subcommand, as Redis 7 does: a's last was SETNAME, b's is this LIST.
    assert!(
        list.contains("lib-name=tests") && list.contains("cmd=client|list"),
        "{list}"
    );
    assert!(list.contains("cmd=client|setname"), "{list}");
    let a_id: i64 = run(&mut a, &["CLIENT", "ID"]);
    let info: String = run(&mut a, &["CLIENT", "INFO"]);
    assert!(info.starts_with(&format!("id={a_id} ")), "{info}");
    assert_eq!(
        run::<i64>(&mut b, &["CLIENT", "KILL", "ID", &a_id.to_string()]),
        1
    );
    assert!(
        eventually(5, || redis::cmd("PING").query::<String>(&mut a).is_err()),
        "killed client still served"
    );
    assert_eq!(run::<i64>(&mut b, &["CLIENT", "KILL", "ID", "999999"]), 0);
    assert_eq!(
        run_err(&mut b, &["CLIENT", "KILL", "1.2.3.4:5"]),
        "ERR No such client"
    );
    assert!(eventually(5, || run::<String>(&mut b, &["CLIENT", "LIST"])
        .lines()
        .count()
        == 1));
}

/// As Redis's own test suite checks a server ("CONFIG sanity"): every setting CONFIG GET
/// lists is set to the value it gave, which CONFIG SET takes (or refuses as a setting
/// it never changes), and afterwards CONFIG GET lists the same values.
#[test]
fn every_setting_takes_back_the_value_config_get_gave() {
    let server = Server::start();
    let mut c = server.client();
    let before: Vec<(String, String)> = run(&mut c, &["CONFIG", "GET", "*"]);
    assert!(before.len() > 170, "{} settings", before.len());
    assert!(before.iter().any(|(name, _)| name == "repl-backlog-size"));
    for (name, value) in &before {
        let set: redis::RedisResult<()> = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query(&mut c);
        if let Err(e) = set {
            let refused = e.to_string();
            assert!(
                refused.contains("can't set immutable config")
                    || refused.contains("can't set protected config"),
                "CONFIG SET {name} {value:?}: {refused}"
            );
        }
    }
    let after: Vec<(String, String)> = run(&mut c, &["CONFIG", "GET", "*"]);
    assert_eq!(after, before);
}

/// CONFIG SET port to a port no one listened on a moment ago (the OS's pick, let go),
/// tried again if another test's server took it meanwhile; the port.
fn move_to_free_port(c: &mut redis::Connection) -> u16 {
    for _ in 0..5 {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let moved: redis::RedisResult<()> = redis::cmd("CONFIG")
            .arg("SET")
            .arg("port")
            .arg(port)
            .query(c);
        match moved {
            Ok(()) => return port,
            Err(e) => assert!(e.to_string().contains("Unable to listen"), "{e}"),
        }
    }
    panic!("no free port in five tries");
}

fn connect_to(port: u16) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))?.get_connection()
}

/// CONFIG SET port moves the listener, as in Redis: new connections go to the new
/// port while open ones stay; a port the server cannot listen on is refused with
/// Redis's words and every value the command set put back; port 0 stops listening
/// until a port is set again.
#[test]
fn config_set_port_moves_the_listener() {
    let server = Server::start();
    let mut c = server.client();
    let port = move_to_free_port(&mut c);
    let mut moved = connect_to(port).expect("the new port takes connections");
    assert_eq!(run::<String>(&mut moved, &["PING"]), "PONG");
    assert!(
        eventually(10, || connect_to(server.port).is_err()),
        "the old port still listens"
    );
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "port"]);
    assert_eq!(got, ["port".to_string(), port.to_string()]);
    assert_eq!(info_field(&mut c, "tcp_port"), port.to_string());

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port().to_string();
    let refused = run_err(
        &mut c,
        &["CONFIG", "SET", "slowlog-max-len", "7", "port", &taken_port],
    );
    assert_eq!(
        refused,
        "ERR CONFIG SET failed (possibly related to argument 'port') - \
         Unable to listen on this port. Check server logs."
    );
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "slowlog-max-len"]);
    assert_eq!(got[1], "128", "put back");
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "port"]);
    assert_eq!(got[1], port.to_string(), "put back");
    assert!(connect_to(port).is_ok(), "still listening where it was");
    let bad = run_err(&mut c, &["CONFIG", "SET", "port", "65536"]);
    assert!(
        bad.ends_with("argument must be between 0 and 65535 inclusive"),
        "{bad}"
    );

    let _: () = run(&mut c, &["CONFIG", "SET", "port", "0"]);
    assert!(
        eventually(10, || connect_to(port).is_err()),
        "port 0 still listens"
    );
    assert_eq!(
        run::<String>(&mut moved, &["PING"]),
        "PONG",
        "open connections stay"
    );
    let again = move_to_free_port(&mut c);
    assert!(
        eventually(10, || connect_to(again).is_ok()),
        "listening again"
    );
    drop(taken);
}

#[test]
fn config_get_set_and_limits() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "maxmemory*"]);
    assert_eq!(
        got,
        [
            "maxmemory",
            "0",
            "maxmemory-policy",
            "noeviction",
            "maxmemory-samples",
            "5",
            "maxmemory-eviction-tenacity",
            "10",
            "maxmemory-clients",
            "0"
        ]
    );
    let save: Vec<String> = run(&mut c, &["CONFIG", "GET", "save"]);
    assert_eq!(save, ["save", ""]);
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory", "10mb", "timeout", "30"],
    );
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "maxmemory", "timeout"]);
    assert_eq!(got, ["maxmemory", "10485760", "timeout", "30"]);
    assert_eq!(
        run_err(&mut c, &["CONFIG", "SET", "nosuch", "1"]),
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    );
    assert_eq!(
        run_err(&mut c, &["CONFIG", "SET", "maxmemory", "lots"]),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(
        run_err(&mut c, &["CONFIG", "SET", "engine", "lsm"]),
        "ERR CONFIG SET failed (possibly related to argument 'engine') - can't set immutable config"
    );
    // Set to the value it has, a setting fixed at startup changes nothing and is not
    // refused (Redis's test suite sets every setting so).
    for name in ["port", "bind", "engine"] {
        let got: Vec<String> = run(&mut c, &["CONFIG", "GET", name]);
        run::<()>(&mut c, &["CONFIG", "SET", name, &got[1]]);
    }
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    // All or nothing: a refused value puts back the ones set before it.
    assert!(run_err(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "5mb",
            "timeout",
            "9",
            "maxmemory-policy",
            "nope"
        ]
    )
    .contains("'maxmemory-policy'"));
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "maxmemory", "timeout"]);
    assert_eq!(got, ["maxmemory", "0", "timeout", "30"]);

    // maxclients: the next connection is told and closed.
    run::<()>(&mut c, &["CONFIG", "SET", "maxclients", "1"]);
    let mut s = server.raw();
    let got = exchange(&mut s, b"", 64);
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    assert_eq!(info_field(&mut c, "rejected_connections"), "1");
    run::<()>(&mut c, &["CONFIG", "SET", "maxclients", "100"]);

    // timeout: an idle client is closed, an active one is not.
    run::<()>(&mut c, &["CONFIG", "SET", "timeout", "1"]);
    let mut idle = server.raw();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(run::<String>(&mut c, &["PING"]), "PONG");
    }
    let got = exchange(&mut idle, b"PING\r\n", 7);
    assert!(got.is_empty(), "idle client still served: {got:?}");
    run::<()>(&mut c, &["CONFIG", "SET", "timeout", "0"]);
}

/// Sets `n` keys `prefix:i` to 100-byte values.
fn fill(c: &mut redis::Connection, prefix: &str, n: usize) {
    for i in 0..n {
        run::<()>(c, &["SET", &format!("{prefix}:{i}"), &"x".repeat(100)]);
    }
}

/// Whether a write is refused within 5 s (the server refreshes its memory figure
/// every 10 ms, so a lowered limit takes effect a moment later).
fn writes_refused_soon(c: &mut redis::Connection) -> bool {
    eventually(5, || {
        redis::cmd("SET").arg("k").arg("v").query::<()>(c).is_err()
    })
}

#[test]
fn maxmemory_refuses_or_evicts() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    fill(&mut c, "key", 2000);
    // A limit below what is already used: with noeviction, writes fail and reads work.
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1000"]);
    assert!(writes_refused_soon(&mut c));
    assert_eq!(
        run_err(&mut c, &["SET", "k", "v"]),
        "OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(run::<String>(&mut c, &["GET", "key:7"]).len(), 100);
    assert_eq!(
        run::<i64>(&mut c, &["DEL", "key:7"]),
        1,
        "DEL frees memory, so it is allowed"
    );
    // Over the limit a transaction queues nothing, reads included, as in Redis.
    let mut s = server.raw();
    assert_script(
        &mut s,
        &[
            (b"MULTI\r\n", b"+OK\r\n"),
            (
                b"GET key:8\r\n",
                b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
            ),
            (
                b"EXEC\r\n",
                b"-EXECABORT Transaction discarded because of previous errors.\r\n",
            ),
        ],
    );
    // A transaction queued under the limit: over it, its EXEC is refused and the
    // transaction discarded if any command may grow the data; reads only still run.
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let mut writes = server.raw();
    let mut reads = server.raw();
    for (conn, command) in [
        (&mut writes, &b"SET k v\r\n"[..]),
        (&mut reads, &b"STRLEN key:8\r\n"[..]),
    ] {
        assert_script(
            conn,
            &[(b"MULTI\r\n", b"+OK\r\n"), (command, b"+QUEUED\r\n")],
        );
    }
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1000"]);
    assert_script(
        &mut writes,
        &[
            (
                b"EXEC\r\n",
                b"-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n",
            ),
            (b"GET k\r\n", b"$-1\r\n"),
        ],
    );
    assert_script(&mut reads, &[(b"EXEC\r\n", b"*1\r\n:100\r\n")]);
    // With an eviction policy, writes succeed and keys are evicted.
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    assert_eq!(run::<String>(&mut c, &["SET", "k", "v"]), "OK");
    let evicted: u64 = info_field(&mut c, "evicted_keys").parse().unwrap();
    assert!(evicted > 0);
    assert!(run::<i64>(&mut c, &["DBSIZE"]) < 2000);
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    fill(&mut c, "keep", 1000);
    // No key has a TTL: a volatile policy has nothing to evict, so writes fail.
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "volatile-lru"],
    );
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1000"]);
    assert!(writes_refused_soon(&mut c));
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let mut temps = Vec::new();
    for policy in ["volatile-random", "volatile-lfu", "volatile-ttl"] {
        // Keys with a TTL for this policy to find: the one before may have evicted all
        // of its own (each command evicts up to 64 keys while over the limit).
        for i in 0..500 {
            let key = format!("temp:{policy}:{i}");
            let ttl = (1000 + i).to_string();
            run::<()>(&mut c, &["SET", &key, &"x".repeat(100), "EX", &ttl]);
            temps.push(key);
        }
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1000"]);
        let before: u64 = info_field(&mut c, "evicted_keys").parse().unwrap();
        assert!(
            eventually(5, || {
                let _ = redis::cmd("SET").arg("k").arg("v").query::<()>(&mut c);
                info_field(&mut c, "evicted_keys").parse::<u64>().unwrap() > before
            }),
            "{policy} evicted nothing"
        );
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    }
    // Every key without a TTL survived.
    for i in 0..1000 {
        assert_eq!(
            run::<i64>(&mut c, &["EXISTS", &format!("keep:{i}")]),
            1,
            "keep:{i}"
        );
    }
    let evicted: u64 = info_field(&mut c, "evicted_keys").parse().unwrap();
    let temps_left = temps
        .iter()
        .filter(|key| run::<i64>(&mut c, &["EXISTS", key]) == 1)
        .count();
    assert_eq!(
        temps_left + evicted as usize,
        temps.len(),
        "evictions came from the keys with a TTL"
    );
}

fn used_memory(c: &mut redis::Connection) -> i64 {
    info_field(c, "used_memory").parse().unwrap()
}

/// `used_memory` counts what the data holds, as Redis's exact count does: deleted
/// values stop counting at once (not when the epoch collector next runs), and a server
/// that has served nothing starts small.
#[test]
fn used_memory_follows_the_data() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let startup: i64 = info_field(&mut c, "used_memory_startup").parse().unwrap();
    assert!(startup < 3 << 20, "{startup} bytes used at startup");
    let empty = used_memory(&mut c);
    for delete in [&["FLUSHALL"][..], &["FLUSHDB", "ASYNC"], &["DEL"]] {
        for j in 0..50 {
            run::<i64>(&mut c, &["SETRANGE", &j.to_string(), "100000", "x"]);
        }
        let full = used_memory(&mut c);
        assert!(full - empty > 5_000_000, "{empty} -> {full}");
        if delete == ["DEL"] {
            for j in 0..50 {
                run::<i64>(&mut c, &["DEL", &j.to_string()]);
            }
        } else {
            run::<()>(&mut c, delete);
        }
        let after = used_memory(&mut c);
        assert!(
            after - empty < 100_000,
            "{delete:?}: {empty} empty, {full} full, {after} after"
        );
    }
}

/// After Redis's own check (unit/maxmemory, "is the memory limit honoured?"): with
/// 100 KB of room, add keys until it is nearly full, then as many again; the limit
/// holds and eviction takes about as many keys as were added, not most of them. Under
/// a volatile policy every key has a TTL, and the hints of evicted keys must not
/// starve the next eviction into OOM. Redis's test allows 4 KB over; INFOs in a row
/// here, with no write between, differ by up to 6 KB on a quiet machine and by 16 KB
/// on a loaded one (a connection's 16 KB input buffer, which the query-buffer cron
/// frees while the client is idle, is there or not), so this one allows 32 KB, still
/// far under the 100-300 KB that jemalloc's thread caches once added. What eviction
/// removes is freed once no reader can hold it (epochs): with this file's other
/// servers busy on both cores, the volatile policies' run ended 34-42 KB over and came
/// under 32 KB within 100-300 ms (session 69), so the figure is read again until it
/// settles, for up to 2 s, and never allowed past 64 KB.
#[test]
fn eviction_keeps_to_the_limit_and_evicts_no_more_than_needed() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    for policy in [
        "allkeys-random",
        "allkeys-lru",
        "volatile-lru",
        "volatile-ttl",
    ] {
        run::<()>(&mut c, &["FLUSHALL"]);
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
        let limit = used_memory(&mut c) + 100 * 1024;
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        run::<()>(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
        let set = |c: &mut redis::Connection, k: usize| {
            run::<()>(c, &["SETEX", &format!("key:{k}"), "10000", &"v".repeat(50)])
        };
        let mut added = 0;
        while used_memory(&mut c) + 4096 <= limit {
            set(&mut c, added);
            added += 1;
        }
        assert!(added > 100, "{policy}: {added} keys filled 100 KB");
        for k in added..2 * added {
            set(&mut c, k);
        }
        let mut used = used_memory(&mut c);
        assert!(used < limit + 65536, "{policy}: {used} used, limit {limit}");
        for _ in 0..20 {
            if used < limit + 32768 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            used = used_memory(&mut c);
        }
        assert!(used < limit + 32768, "{policy}: {used} used, limit {limit}");
        let kept = run::<i64>(&mut c, &["DBSIZE"]) as usize;
        assert!(
            kept > added / 2,
            "{policy}: {kept} keys kept of {} written, {added} fit",
            2 * added
        );
    }
}

#[test]
fn info_sections_and_hotkeys() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    for i in 0..200 {
        run::<()>(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    for _ in 0..3000 {
        run::<String>(&mut c, &["GET", "k7"]);
    }
    run::<Option<String>>(&mut c, &["GET", "missing"]);
    let info: String = run(&mut c, &["INFO"]);
    for section in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Stats",
        "# Cluster",
        "# Keyspace",
        "# Hotring",
    ] {
        assert!(info.contains(section), "INFO lacks {section}");
    }
    assert!(info.contains("db0:keys=200,expires=0"));
    // One client's requests one after another keep one io thread serving.
    assert!(info.contains("\r\nio_threads_active:0\r\n"));
    assert_eq!(info_field(&mut c, "keyspace_hits"), "3000");
    assert_eq!(info_field(&mut c, "keyspace_misses"), "1");
    assert_eq!(info_field(&mut c, "connected_clients"), "1");
    assert!(info_field(&mut c, "used_memory").parse::<u64>().unwrap() > 0);
    // Clients look for these: cluster mode off, and the process's resident memory
    // (on Linux, where CI runs), at least what the allocator has resident.
    assert_eq!(info_field(&mut c, "cluster_enabled"), "0");
    let only: String = run(&mut c, &["INFO", "memory"]);
    let memory_field = |name: &str| -> u64 {
        let line = only.lines().find(|l| l.starts_with(&format!("{name}:")));
        line.unwrap_or_else(|| panic!("no {name}"))
            .split(':')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    let (rss, resident) = (
        memory_field("used_memory_rss"),
        memory_field("allocator_resident"),
    );
    // Read a moment apart, and the kernel's resident count lags by up to 64 pages a
    // thread: a few MB of slack.
    assert!(
        rss + (4 << 20) >= resident && resident > 0,
        "{rss} {resident}"
    );
    assert!(only.starts_with("# Memory") && !only.contains("# Server"));
    // Redis's breakdown: what the server needs for itself plus what the data takes.
    assert_eq!(
        memory_field("used_memory_overhead") + memory_field("used_memory_dataset"),
        memory_field("used_memory")
    );
    for absent in ["lazyfree_pending_objects", "mem_not_counted_for_evict"] {
        assert_eq!(memory_field(absent), 0, "{absent}");
    }
    // The scripts' figures follow SCRIPT LOAD, FUNCTION LOAD and their flushes.
    assert_eq!(info_field(&mut c, "number_of_cached_scripts"), "0");
    run::<String>(&mut c, &["SCRIPT", "LOAD", "return 1"]);
    let library = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    run::<String>(&mut c, &["FUNCTION", "LOAD", library]);
    assert_eq!(info_field(&mut c, "number_of_cached_scripts"), "1");
    assert_eq!(info_field(&mut c, "number_of_functions"), "1");
    assert_eq!(info_field(&mut c, "number_of_libraries"), "1");
    assert!(
        info_field(&mut c, "used_memory_lua")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    run::<()>(&mut c, &["SCRIPT", "FLUSH"]);
    run::<()>(&mut c, &["FUNCTION", "FLUSH"]);
    assert_eq!(info_field(&mut c, "number_of_cached_scripts"), "0");
    assert_eq!(info_field(&mut c, "number_of_libraries"), "0");
    // INFO from a script reads them too, while the script holds the interpreter.
    let from_script: String = run(
        &mut c,
        &["EVAL", "return redis.call('INFO', 'memory')", "0"],
    );
    assert!(
        from_script.contains("number_of_cached_scripts:1"),
        "{from_script}"
    );
    // The key read 3000 times is the hottest the index knows.
    let hot: Vec<(String, f64)> = run(&mut c, &["HOTKEYS", "COUNT", "3"]);
    assert!(!hot.is_empty() && hot.len() <= 3, "{hot:?}");
    assert_eq!(hot[0].0, "k7", "{hot:?}");
    assert!(hot[0].1 > 0.7 && hot[0].1 <= 1.0, "{hot:?}");
    assert_eq!(
        run_err(&mut c, &["HOTKEYS", "COUNT", "0"]),
        "ERR COUNT must be a positive integer"
    );
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(info_field(&mut c, "keyspace_hits"), "0");
}

#[test]
fn shutdown_command_exits_cleanly() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "k", "v"]);
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    server.exited("SHUTDOWN NOSAVE");
}

#[test]
fn config_file_then_flags() {
    let dir = std::env::temp_dir().join(format!("hotkv-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("hotkv.conf");
    std::fs::write(
        &path,
        "# test\nmaxmemory 5mb\nmaxmemory-policy allkeys-random\ntimeout 99\nio-threads 1\n",
    )
    .unwrap();
    let server = Server::start_memory(&[path.to_str().unwrap(), "--timeout", "7"]);
    let mut c = server.client();
    let got: Vec<String> = run(
        &mut c,
        &["CONFIG", "GET", "maxmemory", "maxmemory-policy", "timeout"],
    );
    assert_eq!(
        got,
        [
            "maxmemory",
            "5242880",
            "maxmemory-policy",
            "allkeys-random",
            "timeout",
            "7"
        ]
    );
    let threads: Vec<String> = run(&mut c, &["CONFIG", "GET", "io-threads"]);
    assert_eq!(threads, ["io-threads", "1"]);
    // CONFIG REWRITE puts the running values into the file, comments kept.
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory-samples", "9"]);
    run::<()>(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(
            "# test\nmaxmemory 5242880\nmaxmemory-policy allkeys-random\ntimeout 7\nio-threads 1\n"
        ),
        "{text}"
    );
    assert!(text.contains("maxmemory-samples 9\n"), "{text}");
    std::fs::write(&path, "maxmemory lots\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hotkv-server"))
        .args([path.to_str().unwrap(), "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hotkv.conf:1: bad value 'lots' for 'maxmemory'"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_client_that_stops_reading_is_dropped_at_the_output_limit() {
    let server = Server::start();
    let mut c = server.client();
    let got: Vec<String> = run(&mut c, &["CONFIG", "GET", "client-output-buffer-limit"]);
    assert_eq!(
        got[1],
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    run::<()>(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 1mb 1",
        ],
    );
    assert!(run_err(
        &mut c,
        &["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"]
    )
    .starts_with(
        "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit')"
    ));
    let big = "x".repeat(4 << 20);
    run::<()>(&mut c, &["SET", "big", &big]);
    // Ask for 64 MB of replies and never read them.
    let mut stalled = server.raw();
    std::io::Write::write_all(&mut stalled, &b"GET big\r\n".repeat(16)).unwrap();
    let clients = |c: &mut redis::Connection| run::<String>(c, &["CLIENT", "LIST"]).lines().count();
    assert!(
        eventually(5, || clients(&mut c) == 2),
        "the stalled client never registered"
    );
    assert!(
        eventually(15, || clients(&mut c) == 1),
        "the stalled client was not dropped"
    );
    assert_eq!(run::<String>(&mut c, &["GET", "big"]).len(), big.len());
    // The hard limit drops a client at once, whatever it reads.
    run::<()>(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0",
        ],
    );
    let mut s = server.raw();
    let got = exchange(&mut s, b"GET big\r\n", usize::MAX);
    assert!(got.is_empty(), "a reply above the hard limit was sent");
    server.alive();
}

#[test]
fn client_reply_off_and_skip_drop_replies_but_still_run_commands() {
    let server = Server::start();
    let mut s = server.raw();
    // SKIP drops its own reply and the next one: the SET runs silently, GET answers.
    let got = exchange(&mut s, b"CLIENT REPLY SKIP\r\nSET a 1\r\nGET a\r\n", 7);
    assert_eq!(got, b"$1\r\n1\r\n");
    // OFF drops everything, errors included, until ON, which is answered.
    let got = exchange(
        &mut s,
        b"CLIENT REPLY OFF\r\nSET b 2\r\nNOSUCHCOMMAND\r\nGET b\r\nCLIENT REPLY ON\r\nGET b\r\n",
        12,
    );
    assert_eq!(got, b"+OK\r\n$1\r\n2\r\n");
    // SKIP while off does not turn replies back on afterwards.
    let got = exchange(
        &mut s,
        b"CLIENT REPLY OFF\r\nCLIENT REPLY SKIP\r\nGET a\r\nGET b\r\nCLIENT REPLY ON\r\n",
        5,
    );
    assert_eq!(got, b"+OK\r\n");
    assert_script(
        &mut s,
        &[(b"CLIENT REPLY MAYBE\r\n", b"-ERR syntax error\r\n")],
    );
}

#[test]
fn role_and_info_say_master_with_nothing_to_load() {
    let server = Server::start();
    let mut c = server.client();
    let role: redis::Value = run(&mut c, &["ROLE"]);
    assert_eq!(
        role,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"master".to_vec()),
            redis::Value::Int(0),
            redis::Value::Array(vec![]),
        ])
    );
    assert_eq!(info_field(&mut c, "role"), "master");
    assert_eq!(info_field(&mut c, "connected_slaves"), "0");
    assert_eq!(info_field(&mut c, "loading"), "0");
    let saved: u64 = info_field(&mut c, "rdb_last_save_time").parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        saved <= now && now - saved < 600,
        "start time {saved}, now {now}"
    );
    let user: f64 = info_field(&mut c, "used_cpu_user").parse().unwrap();
    let sys: f64 = info_field(&mut c, "used_cpu_sys").parse().unwrap();
    assert!(
        user >= 0.0 && sys >= 0.0 && user + sys < 3600.0,
        "{user} {sys}"
    );
    let only: String = run(&mut c, &["INFO", "replication"]);
    assert!(only.starts_with("# Replication\r\n"), "{only}");
    assert!(!only.contains("# Server"), "{only}");
}

/// Reads from `s` for up to `wait`; whatever arrived (nothing if it timed out).
fn read_within(s: &mut std::net::TcpStream, wait: Duration) -> Vec<u8> {
    use std::io::Read;
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 256];
    let got = match s.read(&mut buf) {
        Ok(n) => buf[..n].to_vec(),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Vec::new()
        }
        Err(e) => panic!("read failed: {e}"),
    };
    s.set_read_timeout(None).unwrap();
    got
}

#[test]
fn client_pause_holds_writes_or_everything_until_unpause_or_the_deadline() {
    use std::io::Write;
    let server = Server::start();
    let mut admin = server.client();
    let mut reader = server.client();
    let mut writer = server.raw();
    run::<()>(&mut reader, &["SET", "k", "old"]);
    run::<()>(&mut admin, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    writer.write_all(b"SET k new\r\n").unwrap();
    assert_eq!(
        read_within(&mut writer, Duration::from_millis(300)),
        b"",
        "a write ran while paused"
    );
    // Reads go on, and see the value from before the held write.
    assert_eq!(run::<String>(&mut reader, &["GET", "k"]), "old");
    run::<()>(&mut admin, &["CLIENT", "UNPAUSE"]);
    assert_eq!(
        read_within(&mut writer, Duration::from_secs(10)),
        b"+OK\r\n"
    );
    assert_eq!(run::<String>(&mut reader, &["GET", "k"]), "new");
    // ALL holds reads too, and ends by itself at the deadline.
    run::<()>(&mut admin, &["CLIENT", "PAUSE", "2000"]);
    writer.write_all(b"GET k\r\n").unwrap();
    assert_eq!(
        read_within(&mut writer, Duration::from_millis(300)),
        b"",
        "a read ran while paused"
    );
    assert_eq!(
        read_within(&mut writer, Duration::from_secs(10)),
        b"$3\r\nnew\r\n"
    );
    assert_eq!(
        run_err(&mut admin, &["CLIENT", "PAUSE", "-5"]),
        "ERR timeout is negative"
    );
    assert_eq!(
        run_err(&mut admin, &["CLIENT", "PAUSE", "10", "READS"]),
        "ERR CLIENT PAUSE mode must be WRITE or ALL"
    );
}

/// CLIENT KILL ends at once a client held by a pause and one blocked in BLPOP: each
/// connection then waits for its kill in two places, between batches and in the wait.
#[test]
fn client_kill_ends_a_paused_or_blocked_client_at_once() {
    use std::io::{ErrorKind, Read, Write};
    let server = Server::start();
    let mut admin = server.client();
    run::<()>(&mut admin, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    let mut paused = server.raw();
    paused.write_all(b"SET k v\r\n").unwrap();
    let mut blocked = server.raw();
    blocked.write_all(b"BLPOP list 0\r\n").unwrap();
    for s in [&mut paused, &mut blocked] {
        assert_eq!(read_within(s, Duration::from_millis(300)), b"", "not held");
    }
    for s in [&mut paused, &mut blocked] {
        let addr = s.local_addr().unwrap().to_string();
        assert_eq!(
            run::<i64>(&mut admin, &["CLIENT", "KILL", "ADDR", &addr]),
            1
        );
        // Closed with no reply well before the pause or the block would end.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 64];
        match s.read(&mut buf) {
            Ok(0) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            other => panic!("{addr}: a killed client got {other:?}, not its end"),
        }
    }
    run::<()>(&mut admin, &["CLIENT", "UNPAUSE"]);
    assert_eq!(run::<Option<String>>(&mut admin, &["GET", "k"]), None);
}

/// `args` as a RESP request (scripts have line breaks, which inline requests cannot).
fn request(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

/// As Redis: CLIENT PAUSE WRITE holds what writes or may replicate (PUBLISH, PFCOUNT,
/// a script that did not declare `no-writes`, an EXEC of any of these), counts the
/// held clients as blocked, and keeps keys from expiring until it ends.
#[test]
fn client_pause_write_holds_what_may_replicate_and_keeps_keys_from_expiring() {
    use std::io::Write;
    let server = Server::start();
    let mut admin = server.client();
    // Its deadline passes during the pause, with time to spare before it for a slow
    // machine to get the pause on.
    run::<()>(&mut admin, &["SET", "doomed", "v", "PX", "1500"]);
    let doomed_at = std::time::Instant::now() + Duration::from_millis(1600);
    run::<i64>(&mut admin, &["PFADD", "hll", "a"]);
    let expired =
        |c: &mut redis::Connection| -> u64 { info_field(c, "expired_keys").parse().unwrap() };
    let expired_before = expired(&mut admin);
    // Queued before the pause: as in Redis, a write sent inside MULTI is held too.
    let mut in_multi = server.raw();
    assert_script(
        &mut in_multi,
        &[(b"MULTI\r\nINCR n\r\n", b"+OK\r\n+QUEUED\r\n")],
    );
    run::<()>(&mut admin, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    let held_requests: [&[&str]; 5] = [
        &["PUBLISH", "ch", "m"],
        &["PFCOUNT", "hll"],
        &["EVAL", "return 1", "0"],
        &["EVAL", "#!lua\nreturn 1", "0"],
        &["SET", "k", "v"],
    ];
    let mut held = Vec::new();
    for args in held_requests {
        let mut c = server.raw();
        c.write_all(&request(args)).unwrap();
        held.push(c);
    }
    in_multi.write_all(b"EXEC\r\n").unwrap();
    held.push(in_multi);
    let wanted = held.len().to_string();
    assert!(
        eventually(10, || info_field(&mut admin, "blocked_clients") == wanted),
        "blocked_clients {} with {wanted} held",
        info_field(&mut admin, "blocked_clients")
    );
    let list: String = run(&mut admin, &["CLIENT", "LIST"]);
    let blocked = list
        .lines()
        .filter(|l| {
            l.split(' ')
                .any(|f| f.starts_with("flags=") && f.contains('b'))
        })
        .count();
    assert_eq!(blocked, held.len(), "{list}");
    for c in &mut held {
        assert_eq!(
            read_within(c, Duration::from_millis(50)),
            b"",
            "ran while paused"
        );
    }
    // What only reads goes on: declared read-only scripts, EVAL_RO, a transaction of
    // reads; a request with the wrong number of arguments is answered at once.
    let mut reader = server.raw();
    let answered: [(&[&str], &[u8]); 5] = [
        (&["EVAL", "#!lua flags=no-writes\nreturn 2", "0"], b":2\r\n"),
        (
            &["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "nokey"],
            b"$-1\r\n",
        ),
        (
            &["SET", "k"],
            b"-ERR wrong number of arguments for 'set' command\r\n",
        ),
        (&["MULTI"], b"+OK\r\n"),
        (&["GET", "k"], b"+QUEUED\r\n"),
    ];
    for (args, reply) in answered {
        reader.write_all(&request(args)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&read_within(&mut reader, Duration::from_secs(10))),
            String::from_utf8_lossy(reply),
            "{args:?}"
        );
    }
    assert_script(&mut reader, &[(b"EXEC\r\n", b"*1\r\n$-1\r\n")]);
    // The key's deadline passes: it reads as missing but is not expired yet.
    std::thread::sleep(doomed_at.saturating_duration_since(std::time::Instant::now()));
    assert_eq!(run::<Option<String>>(&mut admin, &["GET", "doomed"]), None);
    assert_eq!(expired(&mut admin), expired_before);
    run::<()>(&mut admin, &["CLIENT", "UNPAUSE"]);
    let replies: [&[u8]; 6] = [
        b":0\r\n",
        b":1\r\n",
        b":1\r\n",
        b":1\r\n",
        b"+OK\r\n",
        b"*1\r\n:1\r\n",
    ];
    for (c, reply) in held.iter_mut().zip(replies) {
        assert_eq!(
            String::from_utf8_lossy(&read_within(c, Duration::from_secs(10))),
            String::from_utf8_lossy(reply)
        );
    }
    assert_eq!(info_field(&mut admin, "blocked_clients"), "0");
    assert_eq!(run::<Option<String>>(&mut admin, &["GET", "doomed"]), None);
    assert_eq!(expired(&mut admin), expired_before + 1);
    // A read-only script may not call what may replicate.
    let refused = run_err(
        &mut admin,
        &["EVAL_RO", "return redis.call('publish','ch','m')", "0"],
    );
    assert!(
        refused.starts_with("ERR Write commands are not allowed from read-only scripts."),
        "{refused}"
    );
}

/// The commands of what hotkv does not have, answered as a Redis without it answers:
/// no modules, no replication, no art.
#[test]
fn module_replicaof_and_lolwut_answer_as_a_redis_without_them() {
    let server = Server::start();
    let mut c = server.client();
    assert_eq!(
        run::<Vec<String>>(&mut c, &["MODULE", "LIST"]),
        Vec::<String>::new()
    );
    assert!(run_err(&mut c, &["MODULE", "LOAD", "/x.so"]).contains("enable-module-command"));
    assert!(run_err(&mut c, &["MODULE", "UNLOAD", "x"]).contains("enable-module-command"));
    run::<()>(&mut c, &["REPLICAOF", "NO", "ONE"]);
    run::<()>(&mut c, &["SLAVEOF", "no", "one"]);
    let refused = run_err(&mut c, &["REPLICAOF", "127.0.0.1", "6379"]);
    assert!(refused.contains("does not replicate"), "{refused}");
    assert_eq!(
        run_err(&mut c, &["REPLICAOF", "127.0.0.1", "port"]),
        "ERR Invalid master port"
    );
    let role: Vec<redis::Value> = run(&mut c, &["ROLE"]);
    assert_eq!(role[0], redis::Value::BulkString(b"master".to_vec()));
    for args in [&["LOLWUT"][..], &["LOLWUT", "VERSION", "5"]] {
        let art: String = run(&mut c, args);
        assert!(
            art.starts_with("Redis ver. ") && art.ends_with('\n'),
            "{art:?}"
        );
    }
}

#[test]
fn slowlog_keeps_slow_requests_newest_first_with_passwords_redacted() {
    let server = Server::start();
    let mut c = server.client();
    type Entry = (i64, i64, i64, Vec<String>, String, String);
    // Threshold 0: every request is slow enough.
    run::<()>(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    run::<()>(&mut c, &["SLOWLOG", "RESET"]);
    run::<()>(&mut c, &["SET", "k", "v"]);
    run::<String>(&mut c, &["GET", "k"]);
    let refused = run_err(&mut c, &["AUTH", "hunter2"]);
    assert!(
        refused.contains("without any password configured"),
        "{refused}"
    );
    run::<()>(&mut c, &["CLIENT", "SETNAME", "me"]);
    let entries: Vec<Entry> = run(&mut c, &["SLOWLOG", "GET", "-1"]);
    let commands: Vec<Vec<String>> = entries.iter().map(|e| e.3.clone()).collect();
    let expected: Vec<Vec<&str>> = vec![
        vec!["CLIENT", "SETNAME", "me"],
        vec!["AUTH", "(redacted)"],
        vec!["GET", "k"],
        vec!["SET", "k", "v"],
        vec!["SLOWLOG", "RESET"],
    ];
    assert_eq!(commands, expected);
    assert!(
        entries.windows(2).all(|w| w[0].0 == w[1].0 + 1),
        "ids count down"
    );
    let (_, timestamp, _, _, addr, name) = &entries[0];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - timestamp).abs() < 60, "{timestamp} is not now");
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_eq!(name, "me");
    assert_eq!(
        entries[1].5, "",
        "the name the client had when AUTH was logged"
    );
    // The SLOWLOG GET just run is in the log now.
    assert_eq!(run::<i64>(&mut c, &["SLOWLOG", "LEN"]), 6);
    let two: Vec<Entry> = run(&mut c, &["SLOWLOG", "GET", "2"]);
    assert_eq!(two.len(), 2);
    assert_eq!(two[0].3, ["SLOWLOG", "LEN"]);
    assert_eq!(
        run_err(&mut c, &["SLOWLOG", "GET", "-2"]),
        "ERR count should be greater than or equal to -1"
    );
    // Long arguments are cut, and the log to its length.
    run::<()>(&mut c, &["CONFIG", "SET", "slowlog-max-len", "2"]);
    run::<()>(&mut c, &["SET", "k", &"x".repeat(200)]);
    let kept: Vec<Entry> = run(&mut c, &["SLOWLOG", "GET"]);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].3, ["CONFIG", "SET", "slowlog-max-len", "2"]);
    let set = &kept[0].3;
    assert_eq!(set[..2], ["SET", "k"]);
    assert_eq!(set[2], format!("{}... (72 more bytes)", "x".repeat(128)));
    assert_eq!(run::<i64>(&mut c, &["SLOWLOG", "LEN"]), 2);
    // Off: nothing more is logged.
    run::<()>(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    run::<()>(&mut c, &["SLOWLOG", "RESET"]);
    run::<()>(&mut c, &["SET", "k", "v"]);
    assert_eq!(run::<i64>(&mut c, &["SLOWLOG", "LEN"]), 0);
    let bad = run_err(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "-5"]);
    assert!(bad.contains("between -1 and"), "{bad}");
}

#[test]
fn commandstats_count_calls_refusals_and_failures() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "warm", "up"]);
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    for _ in 0..3 {
        run::<()>(&mut c, &["SET", "n", "1"]);
    }
    run::<String>(&mut c, &["GET", "n"]);
    run::<()>(&mut c, &["SET", "s", "text"]);
    run_err(&mut c, &["INCR"]);
    run_err(&mut c, &["INCR", "s"]);
    run::<i64>(&mut c, &["INCR", "n"]);
    let default: String = run(&mut c, &["INFO"]);
    assert!(!default.contains("# Commandstats"), "only when asked for");
    let stats: String = run(&mut c, &["INFO", "commandstats"]);
    assert!(stats.starts_with("# Commandstats\r\n"), "{stats}");
    let line = |name: &str| -> String {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no cmdstat_{name} in {stats}"))
            .to_string()
    };
    let fields = |name: &str| -> Vec<(String, String)> {
        line(name)
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    };
    let get = |name: &str, field: &str| -> String {
        fields(name)
            .into_iter()
            .find(|(k, _)| k == field)
            .unwrap_or_else(|| panic!("cmdstat_{name} has no {field}"))
            .1
    };
    assert_eq!(get("set", "calls"), "4");
    assert_eq!(get("get", "calls"), "1");
    assert_eq!(get("incr", "calls"), "2", "the refused call is not a call");
    assert_eq!(get("incr", "rejected_calls"), "1");
    assert_eq!(get("incr", "failed_calls"), "1");
    assert_eq!(get("set", "failed_calls"), "0");
    let keys: Vec<String> = fields("set").into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "calls",
            "usec",
            "usec_per_call",
            "rejected_calls",
            "failed_calls"
        ]
    );
    assert!(get("set", "usec_per_call").parse::<f64>().is_ok());
    assert!(
        !stats.contains("cmdstat_del:"),
        "commands never run are not listed"
    );
    // Containers count by subcommand; an unknown one is refused before it runs and
    // counted nowhere (as Redis 7 has no command for it), a known one with the wrong
    // arguments is a refusal.
    assert_eq!(get("config|resetstat", "calls"), "1");
    run_err(&mut c, &["CONFIG", "NOSUCH"]);
    run_err(&mut c, &["CONFIG", "GET"]);
    let stats: String = run(&mut c, &["INFO", "commandstats"]);
    assert!(!stats.contains("cmdstat_config:"), "{stats}");
    assert!(
        stats.contains("cmdstat_config|get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n"),
        "{stats}"
    );
    let all: String = run(&mut c, &["INFO", "all"]);
    assert!(all.contains("# Commandstats\r\ncmdstat_"));
}

#[test]
fn errorstats_count_error_replies_by_code() {
    let server = Server::start();
    let mut c = server.client();
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    run::<()>(&mut c, &["SET", "s", "text"]);
    run_err(&mut c, &["INCR", "s"]);
    run_err(&mut c, &["NOSUCHCOMMAND"]);
    run_err(&mut c, &["GET"]);
    // An error inside EXEC's reply counts too.
    let want = b"+OK\r\n+QUEUED\r\n*1\r\n-ERR value is not an integer or out of range\r\n";
    let got = exchange(
        &mut server.raw(),
        b"MULTI\r\nINCR s\r\nEXEC\r\n",
        want.len(),
    );
    assert_eq!(got, want);
    assert_eq!(info_field(&mut c, "total_error_replies"), "4");
    assert_eq!(info_field(&mut c, "errorstat_ERR"), "count=4");
    let default: String = run(&mut c, &["INFO"]);
    assert!(
        default.contains("# Errorstats\r\nerrorstat_ERR:count=4\r\n"),
        "{default}"
    );
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(info_field(&mut c, "total_error_replies"), "0");
    let after: String = run(&mut c, &["INFO", "errorstats"]);
    assert_eq!(after, "# Errorstats\r\n");
}

#[test]
fn save_makes_writes_durable_and_lastsave_says_when() {
    let server = Server::start();
    let mut c = server.client();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    };
    let started: i64 = run(&mut c, &["LASTSAVE"]);
    assert!(
        (now() - started).abs() < 60,
        "the start time before any save"
    );
    run::<()>(&mut c, &["SET", "k", "v"]);
    std::thread::sleep(Duration::from_millis(1100));
    run::<()>(&mut c, &["SAVE"]);
    let saved: i64 = run(&mut c, &["LASTSAVE"]);
    assert!(saved > started, "LASTSAVE moved from {started} to {saved}");
    assert_eq!(info_field(&mut c, "rdb_last_save_time"), saved.to_string());
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    let started_bg: String = run(&mut c, &["BGSAVE"]);
    assert_eq!(started_bg, "Background saving started");
    assert!(support::eventually(10, || {
        info_field(&mut c, "rdb_bgsave_in_progress") == "0"
    }));
    let scheduled: String = run(&mut c, &["BGSAVE", "SCHEDULE"]);
    assert_eq!(scheduled, "Background saving started");
    assert_eq!(run_err(&mut c, &["BGSAVE", "NOW"]), "ERR syntax error");
    assert_eq!(info_field(&mut c, "aof_rewrites"), "0");
    if support::test_engine() == "memory" {
        let refused = run_err(&mut c, &["BGREWRITEAOF"]);
        assert!(refused.contains("memory engine"), "{refused}");
        assert_eq!(info_field(&mut c, "aof_rewrites"), "0");
        return;
    }
    let rewriting: String = run(&mut c, &["BGREWRITEAOF"]);
    assert_eq!(rewriting, "Background append only file rewriting started");
    assert_eq!(info_field(&mut c, "aof_rewrites"), "1");
    assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "ok");
    assert_eq!(
        run_err(&mut c, &["BGREWRITEAOF", "x"]),
        "ERR wrong number of arguments for 'bgrewriteaof' command"
    );
}

/// INFO's lazyfreed_objects counts the deleted collections whose nodes were freed
/// after the delete (a large set, in memory), not small values, and CONFIG RESETSTAT
/// zeroes it.
#[test]
fn lazyfreed_objects_counts_large_values_freed_after_their_delete() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let lazyfreed =
        |c: &mut redis::Connection| -> u64 { info_field(c, "lazyfreed_objects").parse().unwrap() };
    let members: Vec<String> = (0..5000).map(|i| format!("member:{i}")).collect();
    redis::cmd("SADD")
        .arg("big")
        .arg(&members)
        .query::<i64>(&mut c)
        .unwrap();
    run::<i64>(&mut c, &["SADD", "small", "a", "b"]);
    assert_eq!(lazyfreed(&mut c), 0);
    assert_eq!(run::<i64>(&mut c, &["UNLINK", "small"]), 1);
    assert_eq!(lazyfreed(&mut c), 0);
    assert_eq!(run::<i64>(&mut c, &["UNLINK", "big"]), 1);
    assert_eq!(lazyfreed(&mut c), 1);
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(lazyfreed(&mut c), 0);
}

/// INFO's rdb_changes_since_last_save counts the keys commands wrote or deleted, as
/// Redis's dirty counter does for these commands, and a SAVE sets it back to 0.
#[test]
fn changes_since_last_save_count_writes_and_a_save_clears_them() {
    let server = Server::start_in(tempfile::tempdir().unwrap(), &[]);
    let mut c = server.client();
    let changes = |c: &mut redis::Connection| -> u64 {
        info_field(c, "rdb_changes_since_last_save")
            .parse()
            .unwrap()
    };
    assert_eq!(changes(&mut c), 0);
    let steps: &[(&[&str], u64)] = &[
        (&["SET", "a", "1"], 1),
        (&["SETBIT", "b", "0", "0"], 1),
        (&["SETBIT", "b", "0", "0"], 0),
        (&["DEL", "missing"], 0),
        (&["MSET", "k1", "1", "k2", "2", "k3", "3"], 3),
        (&["RENAME", "k1", "k9"], 1),
        (&["GET", "a"], 0),
        (&["SET", "gone", "v", "PX", "1"], 1),
    ];
    let mut want = 0;
    for (command, added) in steps {
        redis::cmd(command[0])
            .arg(&command[1..])
            .query::<redis::Value>(&mut c)
            .unwrap();
        want += added;
        assert_eq!(changes(&mut c), want, "after {command:?}");
    }
    std::thread::sleep(Duration::from_millis(20));
    // Its expiry is no change a command made.
    assert_eq!(run::<Option<String>>(&mut c, &["GET", "gone"]), None);
    assert_eq!(changes(&mut c), want);
    run::<()>(&mut c, &["SAVE"]);
    assert_eq!(changes(&mut c), 0);
    // FLUSHALL counts each key it removed: a, b, k2, k3, k9.
    run::<()>(&mut c, &["FLUSHALL"]);
    assert_eq!(changes(&mut c), 5);
}

#[test]
fn net_byte_totals_and_instantaneous_rates() {
    let server = Server::start();
    let mut s = server.raw();
    let requests = b"SET k v\r\nGET k\r\nPING\r\n";
    let replies = b"+OK\r\n$1\r\nv\r\n+PONG\r\n";
    assert_eq!(exchange(&mut s, requests, replies.len()), replies);
    // INFO's own request is read before it runs; its reply is written after.
    let info_request = b"INFO stats\r\n";
    let got = exchange(&mut s, info_request, 8);
    let header_end = got.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let len: usize = std::str::from_utf8(&got[1..header_end - 2])
        .unwrap()
        .parse()
        .unwrap();
    let mut body = got[header_end..].to_vec();
    if body.len() < len + 2 {
        body.extend(exchange(&mut s, b"", len + 2 - body.len()));
    }
    let info = String::from_utf8(body).unwrap();
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {info}"))
            .parse()
            .unwrap()
    };
    assert_eq!(
        field("total_net_input_bytes"),
        (requests.len() + info_request.len()) as u64
    );
    assert_eq!(field("total_net_output_bytes"), replies.len() as u64);

    // Under load the ops rate shows; once the load stops it falls back to 0.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let mut s = server.raw();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let batch = b"PING\r\n".repeat(100);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                exchange(&mut s, &batch, 700);
            }
        })
    };
    let mut c = server.client();
    let rate = |c: &mut redis::Connection| -> u64 {
        info_field(c, "instantaneous_ops_per_sec").parse().unwrap()
    };
    assert!(
        eventually(10, || rate(&mut c) > 0),
        "no ops rate under load"
    );
    let kbps: f64 = info_field(&mut c, "instantaneous_input_kbps")
        .parse()
        .unwrap();
    assert!(kbps > 0.0);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.join().unwrap();
    // Quiet for longer than the 16 samples of 100 ms span (each check is one command).
    let quiet = (0..10).any(|_| {
        std::thread::sleep(Duration::from_secs(2));
        rate(&mut c) == 0
    });
    assert!(quiet, "the rate stays up after the load");
}

#[test]
fn wait_answers_no_replicas_after_its_timeout_and_a_waiting_client_can_leave() {
    let server = Server::start();
    let mut s = server.raw();
    assert_eq!(exchange(&mut s, b"WAIT 0 0\r\n", 4), b":0\r\n");
    // Asked for a replica: 0 once the timeout has run out; what follows waits for it.
    let started = std::time::Instant::now();
    let got = exchange(&mut s, b"WAIT 1 150\r\nPING\r\n", 11);
    assert_eq!(got, b":0\r\n+PONG\r\n");
    assert!(started.elapsed() >= Duration::from_millis(150));
    // No timeout: the client waits until it leaves, and then it is gone.
    let mut c = server.client();
    let clients = |c: &mut redis::Connection| run::<String>(c, &["CLIENT", "LIST"]).lines().count();
    // INFO counts blocked clients, and those whose wait ends at a time; CLIENT LIST
    // flags them `b`, as Redis does.
    let blocked = |c: &mut redis::Connection| {
        let info = run::<String>(c, &["INFO", "clients"]);
        let count = |name: &str| {
            info.lines()
                .find_map(|l| {
                    l.strip_prefix(name)?
                        .strip_prefix(':')?
                        .trim()
                        .parse::<u32>()
                        .ok()
                })
                .unwrap_or_else(|| panic!("no {name} in {info}"))
        };
        (count("blocked_clients"), count("clients_in_timeout_table"))
    };
    assert_eq!(blocked(&mut c), (0, 0));
    {
        let mut waiting = server.raw();
        use std::io::Write;
        waiting.write_all(b"WAIT 1 0\r\n").unwrap();
        assert!(eventually(10, || clients(&mut c) == 3));
        assert!(eventually(10, || blocked(&mut c) == (1, 0)));
        let list = run::<String>(&mut c, &["CLIENT", "LIST"]);
        assert!(
            list.lines()
                .any(|l| l.contains(" flags=b ") && l.contains(" cmd=wait ")),
            "{list}"
        );
        let mut timed = server.raw();
        timed.write_all(b"WAIT 1 100000\r\n").unwrap();
        assert!(eventually(10, || blocked(&mut c) == (2, 1)));
    }
    assert!(eventually(10, || blocked(&mut c) == (0, 0)));
    assert!(
        eventually(10, || clients(&mut c) == 2),
        "the waiting client hung up"
    );
    assert_eq!(exchange(&mut s, b"PING\r\n", 7), b"+PONG\r\n");
}

#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_with_an_error() {
    use std::io::Write;
    let server = Server::start();
    let mut c = server.client();
    let mut waiting = server.raw();
    let id = String::from_utf8(exchange(&mut waiting, b"CLIENT ID\r\n", 3)).unwrap();
    let id = id.trim_start_matches(':').trim().to_string();
    // A client that is not blocked is left alone.
    assert_eq!(run::<i64>(&mut c, &["CLIENT", "UNBLOCK", &id]), 0);
    for (how, reply) in [
        ("TIMEOUT", &b":0\r\n"[..]),
        (
            "ERROR",
            b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
        ),
    ] {
        waiting.write_all(b"WAIT 1 0\r\n").unwrap();
        // 1 once the WAIT has started blocking (0 before: nothing to unblock yet).
        assert!(eventually(10, || run::<i64>(
            &mut c,
            &["CLIENT", "UNBLOCK", &id, how]
        ) == 1));
        assert_eq!(exchange(&mut waiting, b"", reply.len()), reply, "{how}");
        assert_eq!(exchange(&mut waiting, b"PING\r\n", 7), b"+PONG\r\n");
        assert_eq!(run::<i64>(&mut c, &["CLIENT", "UNBLOCK", &id]), 0);
    }
    // A blocked pop too; each error counted as an error reply, as Redis counts them.
    waiting.write_all(b"BLPOP list1 0\r\n").unwrap();
    assert!(eventually(10, || run::<i64>(
        &mut c,
        &["CLIENT", "UNBLOCK", &id, "ERROR"]
    ) == 1));
    let reply = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";
    assert_eq!(exchange(&mut waiting, b"", reply.len()), reply);
    assert_eq!(info_field(&mut c, "errorstat_UNBLOCKED"), "count=2");
    assert!(info_field(&mut c, "cmdstat_blpop").ends_with("rejected_calls=0,failed_calls=1"));
    assert_eq!(info_field(&mut c, "total_error_replies"), "2");
    assert!(run_err(&mut c, &["CLIENT", "UNBLOCK", &id, "LATER"]).contains("TIMEOUT or ERROR"));
    // Kill filters it cannot match kill nobody (they were once ignored: everyone).
    assert_eq!(
        run::<i64>(
            &mut c,
            &["CLIENT", "KILL", "TYPE", "replica", "SKIPME", "no"]
        ),
        0
    );
    assert!(run_err(&mut c, &["CLIENT", "KILL", "USER", "bob"]).contains("No such user"));
    assert_eq!(exchange(&mut waiting, b"PING\r\n", 7), b"+PONG\r\n");
}

/// A client that kills itself gets CLIENT KILL's reply before its connection closes,
/// as in Redis (the write once raced the kill, and lost about half the time).
#[test]
fn a_client_that_kills_itself_gets_the_reply_first() {
    let server = Server::start();
    for _ in 0..20 {
        let mut s = server.raw();
        let id = String::from_utf8(exchange(&mut s, b"CLIENT ID\r\n", 4)).unwrap();
        let id = id.trim_start_matches(':').trim_end();
        let kill = format!("CLIENT KILL ID {id} SKIPME no\r\n");
        // Read until the server closes the connection.
        assert_eq!(exchange(&mut s, kill.as_bytes(), usize::MAX), b":1\r\n");
    }
}

#[test]
fn latency_monitor_records_requests_over_its_threshold() {
    let server = Server::start();
    let mut c = server.client();
    // 200,000 keys: KEYS over them takes well over a millisecond.
    for batch in 0..200 {
        let mut mset = redis::cmd("MSET");
        for i in 0..1000 {
            mset.arg(format!("k{batch}:{i}")).arg("v");
        }
        mset.query::<()>(&mut c).unwrap();
    }
    type Latest = Vec<(String, i64, i64, i64)>;
    let keys = |c: &mut redis::Connection| run::<Vec<String>>(c, &["KEYS", "*"]).len();
    assert_eq!(keys(&mut c), 200_000);
    assert_eq!(
        run::<Latest>(&mut c, &["LATENCY", "LATEST"]),
        vec![],
        "off by default"
    );
    let refused = run_err(
        &mut c,
        &["CONFIG", "SET", "latency-monitor-threshold", "-1"],
    );
    assert!(refused.contains("between 0 and"), "{refused}");
    run::<()>(&mut c, &["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    let threshold: Vec<String> = run(&mut c, &["CONFIG", "GET", "latency-monitor-threshold"]);
    assert_eq!(threshold, vec!["latency-monitor-threshold", "1"]);
    assert_eq!(keys(&mut c), 200_000);
    let latest: Latest = run(&mut c, &["LATENCY", "LATEST"]);
    assert_eq!(latest.len(), 1, "{latest:?}");
    let (event, at, last, max) = &latest[0];
    assert_eq!(event, "command", "KEYS is not a fast command");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - at).abs() < 60, "{at} is not now");
    assert!(*last >= 1 && max >= last, "{latest:?}");
    let history: Vec<(i64, i64)> = run(&mut c, &["LATENCY", "HISTORY", "command"]);
    assert_eq!(history.last(), Some(&(*at, *last)));
    let none: Vec<(i64, i64)> = run(&mut c, &["LATENCY", "HISTORY", "nosuch"]);
    assert!(none.is_empty());
    let graph: String = run(&mut c, &["LATENCY", "GRAPH", "command"]);
    assert!(graph.starts_with("command - high "), "{graph}");
    let refused = run_err(&mut c, &["LATENCY", "GRAPH", "nosuch"]);
    assert!(
        refused.contains("No samples available for event 'nosuch'"),
        "{refused}"
    );
    let doctor: String = run(&mut c, &["LATENCY", "DOCTOR"]);
    assert!(doctor.contains("command: "), "{doctor}");
    let refused = run_err(&mut c, &["LATENCY", "HISTORY"]);
    assert!(
        refused.contains("wrong number of arguments for 'latency|history' command"),
        "{refused}"
    );
    assert_eq!(run::<i64>(&mut c, &["LATENCY", "RESET", "nosuch"]), 0);
    assert_eq!(run::<i64>(&mut c, &["LATENCY", "RESET"]), 1);
    assert_eq!(run::<Latest>(&mut c, &["LATENCY", "LATEST"]), vec![]);
    // Every call also goes to its command's latency histogram (latency-tracking is on
    // by default, as in Redis): KEYS ran twice, over 200,000 keys each time.
    let info: String = run(&mut c, &["INFO", "latencystats"]);
    let keys_line = info
        .lines()
        .find(|l| l.starts_with("latency_percentiles_usec_keys:"))
        .unwrap_or_else(|| panic!("no KEYS line in {info}"));
    // The top percentile holds the slower of the two calls, which took at least the
    // `last` ms the monitor recorded for the second (the first may have been faster).
    let p999: f64 = keys_line
        .rsplit_once("p99.9=")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("{keys_line}"));
    assert!(
        p999 >= 1000.0 * *last as f64,
        "{keys_line} for a {last} ms call"
    );
    assert!(
        keys_line.contains(",p99=") && keys_line.contains(",p99.9="),
        "{keys_line}"
    );
    // RESP2: [name, [calls, n, histogram_usec, [bound, calls, ...]]] per command.
    let reply: Vec<redis::Value> = run(&mut c, &["LATENCY", "HISTOGRAM", "keys", "nosuch"]);
    assert_eq!(reply.len(), 2, "one command: {reply:?}");
    let name: String = redis::from_redis_value(&reply[0]).unwrap();
    let fields: Vec<redis::Value> = redis::from_redis_value(&reply[1]).unwrap();
    let calls: i64 = redis::from_redis_value(&fields[1]).unwrap();
    assert_eq!((name.as_str(), calls), ("keys", 2));
    let flat: Vec<i64> = redis::from_redis_value(&fields[3]).unwrap();
    let steps: Vec<(i64, i64)> = flat.chunks(2).map(|p| (p[0], p[1])).collect();
    assert_eq!(steps.last().map(|s| s.1), Some(2), "cumulative: {steps:?}");
    assert!(
        steps.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
        "{steps:?}"
    );
    // A container command names its subcommands; only those called have a histogram.
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    run::<i64>(&mut c, &["CLIENT", "ID"]);
    run::<redis::Value>(&mut c, &["CLIENT", "GETNAME"]);
    let names = |c: &mut redis::Connection, asked: &[&str]| {
        let reply: Vec<redis::Value> = run(c, &[&["LATENCY", "HISTOGRAM"][..], asked].concat());
        let mut names: Vec<String> = reply
            .iter()
            .step_by(2)
            .map(|n| redis::from_redis_value(n).unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&mut c, &["client"]), ["client|getname", "client|id"]);
    assert_eq!(names(&mut c, &["CLIENT|ID"]), ["client|id"]);
    assert!(names(&mut c, &["clien", "client|"]).is_empty());
    run::<()>(&mut c, &["CONFIG", "SET", "latency-tracking", "no"]);
    run::<()>(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(keys(&mut c), 200_000);
    let info: String = run(&mut c, &["INFO", "latencystats"]);
    assert!(!info.contains("_keys:"), "tracking is off: {info}");

    // The command table says which commands are fast, as Redis's does.
    let mut fast = |name: &str| {
        let info: redis::Value = run(&mut c, &["COMMAND", "INFO", name]);
        format!("{info:?}").contains("fast")
    };
    assert!(fast("get") && fast("incr") && fast("ping"));
    assert!(!fast("set") && !fast("keys") && !fast("mset"));
}

/// Active expiry's cycles are a latency event of their own, as in Redis: with 200,000
/// keys due at once, a cycle runs until its time is up (25 ms), far past 1 ms.
#[test]
fn a_long_active_expiry_cycle_is_an_expire_cycle_latency_event() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    run::<()>(&mut c, &["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    for batch in 0..200 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("SET")
                .arg(format!("k{batch}:{i}"))
                .arg("v")
                .arg("PX")
                .arg(200)
                .ignore();
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    assert!(eventually(10, || {
        let latest: Vec<(String, i64, i64, i64)> = run(&mut c, &["LATENCY", "LATEST"]);
        latest.iter().any(|(event, ..)| event == "expire-cycle")
    }));
}

/// Reads MONITOR lines until one ends with `last`; returns each without its timestamp
/// and client address (checked to be `addr`).
fn monitor_lines_until(
    monitor: &mut std::io::BufReader<std::net::TcpStream>,
    addr: &str,
    last: &str,
) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = read_line(monitor);
        let (stamp, rest) = line.split_once(' ').unwrap();
        let (secs, micros) = stamp.trim_start_matches('+').split_once('.').unwrap();
        assert!(
            secs.parse::<u64>().unwrap() > 1_600_000_000 && micros.len() == 6,
            "{line}"
        );
        let args = rest
            .strip_prefix(&format!("[0 {addr}] "))
            .unwrap_or_else(|| panic!("{line} is not from {addr}"));
        lines.push(args.to_string());
        if args.ends_with(last) {
            return lines;
        }
    }
}

/// One line of a reply, without its CRLF.
fn read_line(reader: &mut std::io::BufReader<std::net::TcpStream>) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    assert!(
        reader.read_line(&mut line).unwrap() > 0,
        "connection closed"
    );
    line.trim_end_matches("\r\n").to_string()
}

/// Sends `request` on the connection `reader` reads.
fn send(reader: &mut std::io::BufReader<std::net::TcpStream>, request: &[u8]) {
    std::io::Write::write_all(reader.get_mut(), request).unwrap();
}

#[test]
fn monitor_shows_the_commands_that_run_as_redis_shows_them() {
    let server = Server::start();
    // Connected first: the client library's own greeting commands would be shown.
    let mut admin = server.client();
    let mut monitor = std::io::BufReader::new(server.raw());
    let monitor_addr = monitor.get_ref().local_addr().unwrap().to_string();
    send(&mut monitor, b"MONITOR\r\n");
    assert_eq!(read_line(&mut monitor), "+OK");
    let mut c = server.raw();
    let addr = c.local_addr().unwrap().to_string();
    let script: &[&[&[u8]]] = &[
        &[b"SET", b"k", b"a\"b\\c\n\x01\xff"],
        &[b"get", b"k"],
        // Refused before running: not shown.
        &[b"nosuch", b"x"],
        &[b"GET"],
        &[b"CLIENT", b"NOSUCH"],
        // Administrative: not shown.
        &[b"CONFIG", b"GET", b"port"],
        &[b"CLIENT", b"LIST"],
        // Queued commands show when EXEC runs them, before EXEC itself.
        &[b"MULTI"],
        &[b"SET", b"x", b"1"],
        &[b"INCR", b"x"],
        &[b"EXEC"],
        // Shown though they fail, with their passwords hidden.
        &[b"AUTH", b"secret"],
        &[
            b"HELLO", b"3", b"AUTH", b"user", b"secret", b"SETNAME", b"n",
        ],
        &[b"INCR", b"k"],
        &[b"ECHO", b"end"],
    ];
    for args in script {
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for a in *args {
            request.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            request.extend_from_slice(a);
            request.extend_from_slice(b"\r\n");
        }
        std::io::Write::write_all(&mut c, &request).unwrap();
    }
    let lines = monitor_lines_until(&mut monitor, &addr, "\"end\"");
    assert_eq!(
        lines,
        [
            r#""SET" "k" "a\"b\\c\n\x01\xff""#,
            r#""get" "k""#,
            r#""MULTI""#,
            r#""SET" "x" "1""#,
            r#""INCR" "x""#,
            r#""EXEC""#,
            r#""AUTH" "(redacted)""#,
            r#""HELLO" "3" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n""#,
            r#""INCR" "k""#,
            r#""ECHO" "end""#,
        ]
    );
    // A script shows before the commands it runs, which show as from `lua`.
    let script = "return redis.call('set', KEYS[1], 'v')";
    let eval = format!(
        "*4\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n1\r\n$1\r\ns\r\n",
        script.len()
    );
    std::io::Write::write_all(&mut c, eval.as_bytes()).unwrap();
    let (first, second) = (read_line(&mut monitor), read_line(&mut monitor));
    assert!(
        first.ends_with(&format!("[0 {addr}] \"EVAL\" \"{script}\" \"1\" \"s\"")),
        "{first}"
    );
    assert!(second.ends_with(r#"[0 lua] "set" "s" "v""#), "{second}");

    let list: String = run(&mut admin, &["CLIENT", "LIST"]);
    assert_eq!(list.matches("flags=O ").count(), 1, "{list}");
    // A second MONITOR gets no reply; a monitor's own command is answered, then shown.
    send(&mut monitor, b"MONITOR\r\nPING\r\n");
    assert_eq!(read_line(&mut monitor), "+PONG");
    assert_eq!(
        monitor_lines_until(&mut monitor, &monitor_addr, "\"PING\""),
        ["\"PING\""]
    );
    // RESET ends it: what others run is no longer sent.
    send(&mut monitor, b"RESET\r\n");
    assert_eq!(read_line(&mut monitor), "+RESET");
    let _: () = run(&mut admin, &["SET", "after", "reset"]);
    send(&mut monitor, b"PING\r\n");
    assert_eq!(read_line(&mut monitor), "+PONG");
    let list: String = run(&mut admin, &["CLIENT", "LIST"]);
    assert!(!list.contains("flags=O"), "{list}");
    // Inside a transaction it is refused, as Redis refuses it.
    send(&mut monitor, b"MULTI\r\nMONITOR\r\nEXEC\r\nGET after\r\n");
    for reply in [
        "+OK",
        "+QUEUED",
        "*1",
        "-ERR MONITOR isn't allowed for DENY BLOCKING client",
        "$5",
        "reset",
    ] {
        assert_eq!(read_line(&mut monitor), reply);
    }
}

#[test]
fn a_monitor_that_does_not_read_is_dropped_at_the_output_limit() {
    let server = Server::start();
    let mut c = server.client();
    let _: () = run(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0",
        ],
    );
    let mut monitor = server.raw();
    assert_eq!(exchange(&mut monitor, b"MONITOR\r\n", 5), b"+OK\r\n");
    // 64 MiB of lines: more than socket buffers and the limit hold together.
    let value = "v".repeat(4096);
    for batch in 0..64 {
        let mut pipe = redis::pipe();
        for i in 0..256 {
            pipe.cmd("SET")
                .arg(format!("k{batch}:{i}"))
                .arg(&value)
                .ignore();
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    assert!(eventually(10, || {
        let list: String = run(&mut c, &["CLIENT", "LIST"]);
        list.lines().count() == 1 && !list.contains("flags=O")
    }));
    // The writes themselves were not held back or lost.
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 64 * 256);
    assert_eq!(run::<String>(&mut c, &["GET", "k63:255"]), value);
}

#[test]
fn memory_stats_malloc_stats_and_doctor_describe_the_allocator() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    for i in 0..1000 {
        let _: () = run(&mut c, &["SET", &format!("k{i}"), &"v".repeat(100)]);
    }
    let stats: std::collections::HashMap<String, redis::Value> = run(&mut c, &["MEMORY", "STATS"]);
    let int = |name: &str| match stats.get(name) {
        Some(redis::Value::Int(n)) => *n,
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(int("keys.count"), 1000);
    let (total, startup, peak) = (
        int("total.allocated"),
        int("startup.allocated"),
        int("peak.allocated"),
    );
    assert!(
        startup > 0 && startup <= total && total <= peak,
        "{stats:?}"
    );
    // Overhead: what the server held at startup and what its clients hold now.
    let overhead = int("overhead.total");
    assert_eq!(overhead, startup + int("clients.normal"));
    assert!(
        int("clients.normal") > 0,
        "a client is connected: {stats:?}"
    );
    assert_eq!(int("dataset.bytes"), total - overhead);
    assert_eq!(int("keys.bytes-per-key"), (total - overhead) / 1000);
    // A hundred-byte value and its key cannot take less than a hundred bytes.
    assert!(int("keys.bytes-per-key") >= 100, "{stats:?}");
    assert!(int("allocator.resident") >= int("allocator.active"));
    for name in [
        "fragmentation",
        "allocator-fragmentation.ratio",
        "peak.percentage",
    ] {
        assert!(stats.contains_key(name), "{name} missing: {stats:?}");
    }
    let report: String = run(&mut c, &["MEMORY", "MALLOC-STATS"]);
    assert!(
        report.starts_with("___ Begin jemalloc statistics ___"),
        "{}",
        &report[..80]
    );
    let doctor: String = run(&mut c, &["MEMORY", "DOCTOR"]);
    assert!(
        doctor.contains("bytes allocated") || doctor.starts_with("Memory report"),
        "{doctor}"
    );
    // What is reported is measured when asked: a write acknowledged just before is
    // counted, not left to the next periodic sample.
    let used = |c: &mut redis::Connection| -> u64 { info_field(c, "used_memory").parse().unwrap() };
    let before = used(&mut c);
    let _: () = run(&mut c, &["SET", "big", &"x".repeat(4 << 20)]);
    let after = used(&mut c);
    assert!(after >= before + (4 << 20), "{before} -> {after}");
    let stats: std::collections::HashMap<String, redis::Value> = run(&mut c, &["MEMORY", "STATS"]);
    assert!(
        matches!(stats.get("total.allocated"), Some(redis::Value::Int(n)) if *n as u64 >= after - (1 << 20)),
        "{after} {stats:?}"
    );
    assert_eq!(
        run_err(&mut c, &["MEMORY", "STATS", "extra"]),
        "ERR wrong number of arguments for 'memory|stats' command"
    );
}

#[test]
fn a_synchronous_flush_and_memory_purge_hand_freed_memory_back() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let rss =
        |c: &mut redis::Connection| -> u64 { info_field(c, "used_memory_rss").parse().unwrap() };
    // 80 MB of values: far more than jemalloc keeps as dirty pages on its own.
    let load = |c: &mut redis::Connection| {
        let value = "x".repeat(1000);
        for batch in 0..80 {
            let mut mset = redis::cmd("MSET");
            for i in 0..1000 {
                mset.arg(format!("k{batch}:{i}")).arg(&value);
            }
            let () = mset.query(c).unwrap();
        }
    };
    const DATA: u64 = 80_000_000;
    load(&mut c);
    let loaded = rss(&mut c);
    assert!(loaded > DATA, "{loaded}");
    // ASYNC leaves the pages to the allocator's decay; PURGE returns them.
    let _: () = run(&mut c, &["FLUSHALL", "ASYNC"]);
    let _: () = run(&mut c, &["MEMORY", "PURGE"]);
    let purged = rss(&mut c);
    assert!(purged < loaded - DATA / 2, "{loaded} -> {purged}");
    load(&mut c);
    let loaded = rss(&mut c);
    let _: () = run(&mut c, &["FLUSHALL"]);
    let flushed = rss(&mut c);
    assert!(flushed < loaded - DATA / 2, "{loaded} -> {flushed}");
    assert_eq!(
        run_err(&mut c, &["MEMORY", "PURGE", "now"]),
        "ERR wrong number of arguments for 'memory|purge' command"
    );
}

#[test]
fn allkeys_lru_evicts_the_keys_idle_longest() {
    // Four generations of keys written 1.6 s apart, then a limit that evicts about 250
    // keys. Evicting the key idle longest of each sample of five alone would take
    // 20-34% of its victims from younger generations (a sample misses the oldest a
    // quarter of the time, more as they go); with Redis's pool of the best candidates
    // seen over many samples, nearly all come from the oldest. A simulation of this
    // test (5,000 runs, two serving threads' pools, each starting empty) gave 91-100%
    // from the oldest with the pool, at most 80% without it, so 85% is asked (the unit
    // test eviction::tests::the_pool_takes_nearly_all_victims_from_the_oldest_keys
    // replays it on the real pool). With
    // 80 victims, as this test once asked, the pools' empty start weighed enough for
    // 89.8% to happen on CI. Ranking by hotspot heat (0 for every key here) took any
    // generation.
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    for generation in 0..4 {
        if generation > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1600));
        }
        fill(&mut c, &format!("g{generation}"), 1000);
    }
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    );
    let used: u64 = info_field(&mut c, "used_memory").parse().unwrap();
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "maxmemory", &(used - 150_000).to_string()],
    );
    assert!(
        eventually(5, || {
            let _: () = run(&mut c, &["SET", "k", "v"]);
            info_field(&mut c, "evicted_keys").parse::<u64>().unwrap() >= 250
        }),
        "fewer than 250 keys evicted in 5 s"
    );
    run::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let gone: Vec<usize> = (0..4)
        .map(|g| {
            (0..1000)
                .filter(|i| run::<i64>(&mut c, &["EXISTS", &format!("g{g}:{i}")]) == 0)
                .count()
        })
        .collect();
    let total: usize = gone.iter().sum();
    assert!(total >= 250, "evicted per generation: {gone:?}");
    assert!(
        gone[0] * 100 >= total * 85,
        "evicted per generation: {gone:?}"
    );
}

/// `name=value` from a CLIENT LIST line.
fn client_field(line: &str, name: &str) -> i64 {
    line.split(' ')
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        .parse()
        .unwrap()
}

#[test]
fn client_buffers_are_counted_where_redis_shows_them() {
    // A client halfway through a big request, with two commands queued after MULTI:
    // CLIENT LIST shows what it holds (as Redis, the request's parsed part is out of
    // its query buffer: its whole arguments are argv-mem), INFO the largest input
    // buffer, MEMORY STATS the sum. The asking client's own line counts its
    // command's arguments.
    let server = Server::start();
    let mut admin = server.client();
    let mut s = server.raw();
    assert_script(
        &mut s,
        &[
            (b"MULTI\r\n", b"+OK\r\n"),
            (b"SET a b\r\n", b"+QUEUED\r\n"),
            (b"SET c ddddddd\r\n", b"+QUEUED\r\n"),
        ],
    );
    let partial = [
        &b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n"[..],
        &[b'x'; 50_000],
    ]
    .concat();
    std::io::Write::write_all(&mut s, &partial).unwrap();
    let list = |admin: &mut redis::Connection| run::<String>(admin, &["CLIENT", "LIST"]);
    assert!(
        eventually(5, || list(&mut admin)
            .lines()
            .any(|l| l.contains("qbuf=50000 "))),
        "{}",
        list(&mut admin)
    );
    let all = list(&mut admin);
    let busy = all.lines().find(|l| l.contains("flags=x")).unwrap();
    assert_eq!(client_field(busy, "multi"), 2, "{busy}");
    assert_eq!(
        client_field(busy, "multi-mem"),
        3 + 1 + 1 + 3 + 1 + 7,
        "{busy}"
    );
    assert_eq!(client_field(busy, "argv-mem"), 4, "{busy}");
    assert!(client_field(busy, "tot-mem") > 50_004, "{busy}");
    assert!(
        busy.contains(" cmd=set "),
        "the last command sent, queued: {busy}"
    );
    let me = all.lines().find(|l| l.contains("cmd=client|list")).unwrap();
    assert_eq!(
        client_field(me, "argv-mem"),
        "CLIENTLIST".len() as i64,
        "{me}"
    );
    assert_eq!(client_field(me, "multi"), -1, "{me}");
    let max_input: i64 = info_field(&mut admin, "client_recent_max_input_buffer")
        .parse()
        .unwrap();
    assert_eq!(max_input, 50_000);
    let stats: Vec<redis::Value> = redis::cmd("MEMORY").arg("STATS").query(&mut admin).unwrap();
    let normal = stats
        .chunks(2)
        .find_map(|kv| match (&kv[0], &kv[1]) {
            (redis::Value::BulkString(k), redis::Value::Int(v)) if k == b"clients.normal" => {
                Some(*v)
            }
            _ => None,
        })
        .expect("clients.normal");
    assert!(normal > 50_004, "clients.normal {normal}");
    // Long enough for the server's 100 ms round to note the peak.
    std::thread::sleep(std::time::Duration::from_millis(250));
    // Served and dropped: the buffer empties, the queue with EXEC.
    std::io::Write::write_all(&mut s, &[&[b'x'; 50_000][..], b"\r\nEXEC\r\n"].concat()).unwrap();
    assert!(eventually(5, || {
        let all = list(&mut admin);
        all.lines()
            .filter(|l| !l.contains("cmd=client|list"))
            .all(|l| client_field(l, "qbuf") == 0 && client_field(l, "multi-mem") == 0)
    }));
    assert_eq!(run::<i64>(&mut admin, &["STRLEN", "a"]), 1);
    // INFO looks back over the last 8 seconds, as Redis does.
    let recent: i64 = info_field(&mut admin, "client_recent_max_input_buffer")
        .parse()
        .unwrap();
    assert!(
        recent >= 50_000,
        "{recent}: the peak of a request served a moment ago"
    );
}

/// The CLIENT LIST line of the client named `name`.
fn named_client(admin: &mut redis::Connection, name: &str) -> String {
    let list = run::<String>(admin, &["CLIENT", "LIST"]);
    let line = list.lines().find(|l| l.contains(&format!(" name={name} ")));
    line.unwrap_or_else(|| panic!("no client named {name} in {list}"))
        .to_string()
}

/// A client's query buffer as Redis's client cron resizes it (Redis's unit/querybuf):
/// 16 KB after a small request; a big request's room kept until the cron finds the
/// client's requests small again, then cut (never to nothing while the client is
/// busy); all of it given back once the client is idle for more than 2 s.
#[test]
fn query_buffers_are_resized_as_redis_resizes_them() {
    let server = Server::start();
    let mut admin = server.client();
    let mut c = server.client();
    run::<()>(&mut c, &["CLIENT", "SETNAME", "sized"]);
    let line = |admin: &mut redis::Connection| named_client(admin, "sized");
    let held = |admin: &mut redis::Connection| {
        let line = line(admin);
        client_field(&line, "qbuf") + client_field(&line, "qbuf-free")
    };
    let fresh = held(&mut admin);
    assert!((16_384..32_768).contains(&fresh), "{fresh}");
    run::<()>(&mut c, &["SET", "x", &"A".repeat(400_000)]);
    let big = held(&mut admin);
    assert!(big > 400_000, "the big request's room is kept: {big}");
    let small = "A".repeat(100);
    let mut cut = big;
    assert!(
        eventually(5, || {
            run::<()>(&mut c, &["SET", "x", &small]);
            cut = held(&mut admin);
            cut < big
        }),
        "cut once the requests are small"
    );
    assert!(cut > 0, "not to nothing while busy");
    // Idle: more than 2 s, as Redis counts it (whole seconds); the cut is no activity.
    assert!(
        eventually(10, || {
            let line = line(&mut admin);
            client_field(&line, "qbuf-free") == 0 && client_field(&line, "idle") >= 3
        }),
        "given back when idle: {}",
        line(&mut admin)
    );
    run::<()>(&mut c, &["SET", "x", &small]);
    assert_eq!(
        run::<String>(&mut c, &["GET", "x"]),
        small,
        "read again after"
    );
}

/// A big reply's room is not kept: as Redis frees a reply past its 16 KB buffer once
/// written, the client cron cuts the output buffer once the client's replies are small
/// again, and frees it when the client is idle (CLIENT LIST's `rbs` and `tot-mem`).
/// Before, a client that once read 5 MB held 8 MB for as long as it stayed connected.
/// DEBUG REPLYBUFFER RESIZING 0 (Redis's tests of client memory use it) leaves the
/// room held until it is turned back on.
#[test]
fn a_big_reply_leaves_no_room_held() {
    let server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut admin = server.client();
    let mut c = server.client();
    run::<()>(&mut c, &["CLIENT", "SETNAME", "reader"]);
    let big = "B".repeat(5_000_000);
    run::<()>(&mut admin, &["SET", "big", &big]);
    let field = |admin: &mut redis::Connection, name: &str| {
        client_field(&named_client(admin, "reader"), name)
    };
    run::<()>(&mut admin, &["DEBUG", "REPLYBUFFER", "RESIZING", "0"]);
    assert_eq!(run::<String>(&mut c, &["GET", "big"]), big);
    // Idle past the 2 s after which the cron would free it all.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert!(
        field(&mut admin, "rbs") >= 5_000_000,
        "kept while resizing is off"
    );
    run::<()>(&mut admin, &["DEBUG", "REPLYBUFFER", "RESIZING", "1"]);
    assert!(
        eventually(5, || {
            let _: Option<String> = run(&mut c, &["GET", "small"]);
            field(&mut admin, "rbs") < 1_000_000
        }),
        "cut once the replies are small: rbs={}",
        field(&mut admin, "rbs")
    );
    assert!(
        // Freed down to what wastes no more than 4 KB, as the query buffer.
        eventually(10, || field(&mut admin, "rbs") <= 4096),
        "freed when idle: rbs={}",
        field(&mut admin, "rbs")
    );
    assert!(field(&mut admin, "tot-mem") < 100_000);
    assert_eq!(
        run::<String>(&mut c, &["GET", "big"]),
        big,
        "read again after"
    );
}

/// hotkv has no replicas: with min-replicas-to-write set (and min-replicas-max-lag, 10
/// by default), every write is refused as Redis refuses it without enough good
/// replicas; reads, and scripts that write nothing, still run.
#[test]
fn min_replicas_to_write_refuses_writes() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "x", "some value"]);
    let mut queued = server.raw();
    assert_script(
        &mut queued,
        &[(b"MULTI\r\n", b"+OK\r\n"), (b"INCR n\r\n", b"+QUEUED\r\n")],
    );
    run::<()>(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let setting: Vec<String> = run(&mut c, &["CONFIG", "GET", "min-slaves-to-write"]);
    assert_eq!(setting, ["min-slaves-to-write", "1"]);
    const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
    assert_eq!(run_err(&mut c, &["SET", "x", "1"]), NOREPLICAS);
    assert_eq!(run::<String>(&mut c, &["GET", "x"]), "some value");
    assert_script(
        &mut queued,
        &[(
            b"EXEC\r\n",
            b"-EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.\r\n",
        )],
    );
    let get = "return redis.call('get', KEYS[1])";
    assert_eq!(
        run::<String>(&mut c, &["EVAL", get, "1", "x"]),
        "some value"
    );
    let no_writes = format!("#!lua flags=no-writes\n{get}");
    assert_eq!(
        run::<String>(&mut c, &["EVAL", &no_writes, "1", "x"]),
        "some value"
    );
    let may_write = format!("#!lua\n{get}");
    assert_eq!(run_err(&mut c, &["EVAL", &may_write, "1", "x"]), NOREPLICAS);
    let set = "return redis.call('set', KEYS[1], '1')";
    let refused = run_err(&mut c, &["EVAL", set, "1", "x"]);
    assert!(refused.starts_with("NOREPLICAS "), "{refused}");
    assert_eq!(run::<String>(&mut c, &["GET", "x"]), "some value");
    // No lag allowed switches the check off, as in Redis.
    run::<()>(&mut c, &["CONFIG", "SET", "min-replicas-max-lag", "0"]);
    run::<()>(&mut c, &["SET", "x", "1"]);
    run::<()>(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "min-replicas-max-lag",
            "10",
            "min-replicas-to-write",
            "0",
        ],
    );
    run::<()>(&mut c, &["SET", "x", "2"]);
}

/// The clients named in CLIENT LIST, with their tot-mem.
fn client_memory(c: &mut redis::Connection) -> Vec<(String, u64)> {
    run::<String>(c, &["CLIENT", "LIST"])
        .lines()
        .map(|line| {
            let field = |name: &str| {
                line.split(' ')
                    .find_map(|f| f.strip_prefix(name))
                    .unwrap()
                    .to_string()
            };
            (field("name="), field("tot-mem=").parse().unwrap())
        })
        .collect()
}

/// A client that sends `bytes` of one argument and never the rest: it holds them.
fn send_part_of_a_big_request(
    server: &Server,
    name: &str,
    bytes: usize,
    no_evict: bool,
) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = server.raw();
    let setname = format!("CLIENT SETNAME {name}\r\n");
    assert_eq!(exchange(&mut s, setname.as_bytes(), 5), b"+OK\r\n");
    if no_evict {
        assert_eq!(exchange(&mut s, b"CLIENT NO-EVICT ON\r\n", 5), b"+OK\r\n");
    }
    let mut request = format!("*2\r\n${}\r\n", bytes + 1).into_bytes();
    request.resize(request.len() + bytes, b'v');
    s.write_all(&request).unwrap();
    s
}

/// `maxmemory-clients`, as Redis 7 has it: when the clients together hold the limit
/// or more, the ones that hold most are disconnected until they hold less, sparing
/// CLIENT NO-EVICT ones; INFO counts them; lowering the limit evicts at once; a
/// percent is of `maxmemory`.
#[test]
fn clients_over_maxmemory_clients_are_evicted_biggest_first() {
    let server = Server::start_memory(&[]);
    let mut admin = server.client();
    run::<()>(&mut admin, &["CLIENT", "NO-EVICT", "ON"]);
    run::<()>(&mut admin, &["CONFIG", "SET", "maxmemory-clients", "5mb"]);
    // Three clients part-way through big requests, each holding what it sent (and
    // no more: a big argument is read into room made for exactly it).
    let sizes = [
        (300_000, "small"),
        (1_000_000, "medium"),
        (2_000_000, "large"),
    ];
    let _held: Vec<_> = sizes
        .iter()
        .map(|&(bytes, name)| send_part_of_a_big_request(&server, name, bytes, false))
        .collect();
    let holds = |c: &mut redis::Connection, name: &str| {
        client_memory(c)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| m)
    };
    assert!(
        eventually(10, || sizes
            .iter()
            .all(
                |&(bytes, name)| holds(&mut admin, name).is_some_and(|m| m > bytes as u64)
            )),
        "{:?}",
        client_memory(&mut admin)
    );
    for &(bytes, name) in &sizes {
        let m = holds(&mut admin, name).unwrap();
        assert!(
            m < bytes as u64 + 100_000,
            "{name} holds {m} for {bytes} sent"
        );
    }
    assert_eq!(info_field(&mut admin, "evicted_clients"), "0");
    // A limit that the two smaller fit under takes the large one alone.
    let all: u64 = client_memory(&mut admin).iter().map(|(_, m)| m).sum();
    let limit = all - 2_000_000 + 100_000;
    run::<()>(
        &mut admin,
        &["CONFIG", "SET", "maxmemory-clients", &limit.to_string()],
    );
    let names: Vec<String> = client_memory(&mut admin)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(
        !names.contains(&"large".to_string())
            && names.contains(&"medium".to_string())
            && names.contains(&"small".to_string()),
        "{names:?}"
    );
    assert_eq!(info_field(&mut admin, "evicted_clients"), "1");
    // 5% of 10 MB, which the protected clients alone pass: every other one goes.
    let _protected = send_part_of_a_big_request(&server, "protected", 1_000_000, true);
    assert!(eventually(10, || holds(&mut admin, "protected")
        .is_some_and(|m| m > 1_000_000)));
    run::<()>(&mut admin, &["CONFIG", "SET", "maxmemory", "10mb"]);
    run::<()>(&mut admin, &["CONFIG", "SET", "maxmemory-clients", "5%"]);
    let names: Vec<String> = client_memory(&mut admin)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["", "protected"]);
    assert_eq!(info_field(&mut admin, "evicted_clients"), "3");
    // Off again: nobody else goes, whatever they hold.
    run::<()>(&mut admin, &["CONFIG", "SET", "maxmemory-clients", "0"]);
    let _big = send_part_of_a_big_request(&server, "big", 3_000_000, false);
    assert!(eventually(10, || holds(&mut admin, "big")
        .is_some_and(|m| m > 3_000_000)));
    assert_eq!(info_field(&mut admin, "evicted_clients"), "3");
    server.alive();
}

/// As Redis 7 by default, DEBUG is refused, before it runs (in MULTI the transaction is
/// doomed); `--enable-debug-command local` lets a client on the loopback address in.
#[test]
fn debug_is_refused_unless_its_setting_allows_it() {
    let server = Server::start();
    let mut c = server.client();
    let refusal = run_err(&mut c, &["DEBUG", "SLEEP", "0"]);
    assert!(
        refusal.starts_with("ERR DEBUG command not allowed. If the enable-debug-command"),
        "{refusal}"
    );
    let server = Server::start_with(&["--enable-debug-command", "local"]);
    let mut c = server.client();
    assert_eq!(run::<String>(&mut c, &["DEBUG", "SLEEP", "0"]), "OK");
    assert_eq!(
        run::<Vec<String>>(&mut c, &["CONFIG", "GET", "enable-debug-command"]),
        ["enable-debug-command", "local"]
    );
}

fn debug_server() -> Server {
    Server::start_with(&["--enable-debug-command", "yes"])
}

/// DEBUG DIGEST stands for the data, not its history: equal for the same keys, values
/// and deadlines however written, all zeros with no keys, changed by any write.
#[test]
fn debug_digest_follows_the_data_not_its_history() {
    let server = debug_server();
    let mut c = server.client();
    let digest = |c: &mut redis::Connection| run::<String>(c, &["DEBUG", "DIGEST"]);
    assert_eq!(digest(&mut c), "0".repeat(40));
    for args in [
        &["RPUSH", "l", "a", "b", "c"][..],
        &["SADD", "s", "x", "y", "z"],
        &["HSET", "h", "f", "1", "g", "2"],
        &["ZADD", "z", "1", "a", "2", "b"],
        &["SET", "n", "12", "PXAT", "99999999999999"],
        &["XADD", "st", "1-1", "a", "1"],
    ] {
        let _: redis::Value = run(&mut c, args);
    }
    let full = digest(&mut c);
    assert_eq!(full.len(), 40);
    assert_ne!(full, "0".repeat(40));
    // The same data written in another order, with a detour.
    run::<()>(&mut c, &["FLUSHALL"]);
    for args in [
        &["XADD", "st", "1-1", "a", "1"][..],
        &["SET", "n", "11"],
        &["INCR", "n"],
        &["PEXPIREAT", "n", "99999999999999"],
        &["ZADD", "z", "2", "b", "1", "a"],
        &["HSET", "h", "g", "2", "f", "1"],
        &["SADD", "s", "z", "y", "x", "w"],
        &["SREM", "s", "w"],
        &["RPUSH", "l", "a", "b", "c"],
    ] {
        let _: redis::Value = run(&mut c, args);
    }
    assert_eq!(digest(&mut c), full);
    let _: i64 = run(&mut c, &["HSET", "h", "f", "2"]);
    assert_ne!(digest(&mut c), full);
    // DIGEST-VALUE: the value alone, so a copy has its original's; none for no key.
    let _: i64 = run(&mut c, &["COPY", "s", "s2"]);
    let values: Vec<String> = run(&mut c, &["DEBUG", "DIGEST-VALUE", "s", "s2", "nokey", "l"]);
    assert_eq!(values[0], values[1]);
    assert_eq!(values[2], "0".repeat(40));
    assert_ne!(values[0], values[3]);
}

/// DEBUG RELOAD saves, empties the server and loads the file: the data (deadlines,
/// function libraries) comes back as it was. NOFLUSH fails on a key already there
/// unless MERGE; NOSAVE loads the file as last saved.
#[test]
fn debug_reload_brings_back_what_was_saved() {
    // On lsm too, where the RDB file is written for DEBUG RELOAD alone.
    let server = debug_server();
    let mut c = server.client();
    for args in [
        &["SET", "k", "v", "PXAT", "99999999999999"][..],
        &["RPUSH", "l", "a", "b"],
        &["HSET", "h", "f", "1"],
    ] {
        let _: redis::Value = run(&mut c, args);
    }
    let _: String = run(
        &mut c,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 'hi' end)",
        ],
    );
    let before: String = run(&mut c, &["DEBUG", "DIGEST"]);
    assert_eq!(run::<String>(&mut c, &["DEBUG", "RELOAD"]), "OK");
    assert_eq!(run::<String>(&mut c, &["DEBUG", "DIGEST"]), before);
    assert_eq!(run::<i64>(&mut c, &["PEXPIRETIME", "k"]), 99999999999999);
    assert_eq!(run::<String>(&mut c, &["FCALL", "f", "0"]), "hi");
    let refusal = run_err(&mut c, &["DEBUG", "RELOAD", "NOFLUSH"]);
    assert!(
        refusal.contains("Error trying to load the RDB dump"),
        "{refusal}"
    );
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "RELOAD", "NOFLUSH", "MERGE"]),
        "OK"
    );
    assert_eq!(run::<String>(&mut c, &["DEBUG", "DIGEST"]), before);
    // Written after the last save: NOSAVE goes back to the file, MERGE NOFLUSH keeps it.
    run::<()>(&mut c, &["SET", "later", "1"]);
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]),
        "OK"
    );
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "later"]), 1);
    assert_eq!(run::<String>(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]), "OK");
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "later"]), 0);
    assert_eq!(run::<String>(&mut c, &["DEBUG", "DIGEST"]), before);
    let refusal = run_err(&mut c, &["DEBUG", "RELOAD", "EVERYTHING"]);
    assert!(
        refusal.contains("only supports the MERGE, NOFLUSH and NOSAVE"),
        "{refusal}"
    );
}

/// DEBUG LOADAOF on the lsm engine (whose log is its append-only file) syncs it and
/// brings back every key, deadline and library through the RDB format, and what it
/// loaded is what the engine holds after a restart; the memory engine has no such file
/// and refuses, its keys untouched.
#[test]
fn debug_loadaof_brings_back_the_lsm_engines_data() {
    const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];
    let memory = Server::start_memory(&DEBUG);
    let mut c = memory.client();
    run::<()>(&mut c, &["SET", "k", "v"]);
    let refusal = run_err(&mut c, &["DEBUG", "LOADAOF"]);
    assert!(refusal.contains("needs an append-only file"), "{refusal}");
    assert_eq!(run::<String>(&mut c, &["GET", "k"]), "v");

    let lsm = Server::start_in(tempfile::tempdir().unwrap(), &DEBUG);
    let mut c = lsm.client();
    run::<()>(&mut c, &["SET", "k", "v", "PXAT", "99999999999999"]);
    run::<()>(&mut c, &["SET", "gone", "v", "PX", "1"]);
    // Large enough to be split into nodes.
    let fields: Vec<String> = (0..3000).map(|i| format!("f{i}")).collect();
    let mut hset = vec!["HSET", "h"];
    for f in &fields {
        hset.extend([f.as_str(), f.as_str()]);
    }
    run::<()>(&mut c, &hset);
    run::<()>(&mut c, &["XADD", "s", "1-1", "f", "v"]);
    run::<()>(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    run::<()>(&mut c, &["XGROUP", "CREATECONSUMER", "s", "g", "alice"]);
    let _: String = run(
        &mut c,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('f', function() return 'hi' end)",
        ],
    );
    std::thread::sleep(std::time::Duration::from_millis(5));
    let before: String = run(&mut c, &["DEBUG", "DIGEST"]);
    let groups: redis::Value = run(&mut c, &["XINFO", "GROUPS", "s"]);
    assert_eq!(run::<String>(&mut c, &["DEBUG", "LOADAOF"]), "OK");
    assert_eq!(run::<String>(&mut c, &["DEBUG", "DIGEST"]), before);
    assert_eq!(run::<i64>(&mut c, &["PEXPIRETIME", "k"]), 99999999999999);
    assert_eq!(
        run::<i64>(&mut c, &["DBSIZE"]),
        3,
        "the expired key is not loaded"
    );
    assert_eq!(run::<i64>(&mut c, &["HLEN", "h"]), 3000);
    let after: redis::Value = run(&mut c, &["XINFO", "GROUPS", "s"]);
    assert_eq!(format!("{after:?}"), format!("{groups:?}"));
    assert!(format!("{after:?}").contains("consumers"), "{after:?}");
    assert_eq!(run::<String>(&mut c, &["FCALL", "f", "0"]), "hi");

    let dir = lsm.stop().expect("an lsm server has a directory");
    let lsm = Server::start_in(dir, &DEBUG);
    let mut c = lsm.client();
    assert_eq!(run::<String>(&mut c, &["DEBUG", "DIGEST"]), before);
    assert_eq!(run::<String>(&mut c, &["FCALL", "f", "0"]), "hi");
}

/// DEBUG SET-ACTIVE-EXPIRE 0, and PAUSE-CRON 1, leave expired keys to lazy expiry
/// (they stay counted); SET-ACTIVE-EXPIRE 1 and PAUSE-CRON 0 let the background cycle
/// delete them again.
#[test]
fn debug_set_active_expire_and_pause_cron_stop_the_expiry_cycle() {
    let server = debug_server();
    let mut c = server.client();
    for (stop, start) in [
        (["SET-ACTIVE-EXPIRE", "0"], ["SET-ACTIVE-EXPIRE", "1"]),
        (["PAUSE-CRON", "1"], ["PAUSE-CRON", "0"]),
    ] {
        assert_eq!(run::<String>(&mut c, &["DEBUG", stop[0], stop[1]]), "OK");
        for i in 0..20 {
            run::<()>(&mut c, &["SET", &format!("k{i}"), "v", "PX", "1"]);
        }
        // Ten cycles (100 ms apart) pass with nothing deleted.
        std::thread::sleep(Duration::from_millis(1000));
        assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 20, "after DEBUG {stop:?}");
        assert_eq!(run::<String>(&mut c, &["DEBUG", start[0], start[1]]), "OK");
        assert!(eventually(10, || run::<i64>(&mut c, &["DBSIZE"]) == 0));
    }
}

/// DEBUG OBJECT in Redis's words; its `at:` stays for a key rewritten (as tests of
/// in-place INCR check), and a missing key is an error.
#[test]
fn debug_object_describes_a_key_as_redis_does() {
    let server = debug_server();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "foo", "20000"]);
    let described: String = run(&mut c, &["DEBUG", "OBJECT", "foo"]);
    let words: Vec<&str> = described.split(' ').collect();
    assert_eq!(words[0], "Value");
    assert!(words[1].starts_with("at:0x"), "{described}");
    assert_eq!(words[2], "refcount:1");
    assert_eq!(words[3], "encoding:int");
    // An integer of 2 bytes: a type byte and the 16-bit value.
    assert_eq!(words[4], "serializedlength:3");
    assert!(words[5].starts_with("lru:") && words[6].starts_with("lru_seconds_idle:"));
    let _: i64 = run(&mut c, &["INCR", "foo"]);
    let again: String = run(&mut c, &["DEBUG", "OBJECT", "foo"]);
    assert_eq!(again.split(' ').nth(1), Some(words[1]));
    assert_eq!(
        run_err(&mut c, &["DEBUG", "OBJECT", "nokey"]),
        "ERR no such key"
    );
    // A key past its deadline that nothing deleted yet is there to DEBUG OBJECT, as
    // in Redis, until a read finds it expired.
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        "OK"
    );
    run::<()>(&mut c, &["SET", "brief", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(10));
    let stale: String = run(&mut c, &["DEBUG", "OBJECT", "brief"]);
    assert!(stale.starts_with("Value at:"), "{stale}");
    assert_eq!(run::<i64>(&mut c, &["EXISTS", "brief"]), 0);
    assert_eq!(
        run_err(&mut c, &["DEBUG", "OBJECT", "brief"]),
        "ERR no such key"
    );
}

/// DEBUG PROTOCOL gives each RESP3 type (attributes and pushes too), and what RESP2
/// makes of it.
#[test]
fn debug_protocol_replies_with_each_type() {
    let server = debug_server();
    let mut s = server.raw();
    assert_script(
        &mut s,
        &[
            (
                b"DEBUG PROTOCOL attrib\r\n",
                b"$39\r\nSome real reply following the attribute\r\n",
            ),
            (
                b"DEBUG PROTOCOL push\r\n",
                b"-ERR RESP2 is not supported by this command\r\n",
            ),
            (
                b"DEBUG PROTOCOL map\r\n",
                b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
            ),
        ],
    );
    // HELLO's map, of a length this test need not know, is read up to PING's reply.
    std::io::Write::write_all(&mut s, b"HELLO 3\r\nPING\r\n").unwrap();
    let (mut hello, mut buf) = (Vec::new(), [0u8; 4096]);
    while !hello.ends_with(b"+PONG\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {}", String::from_utf8_lossy(&hello));
        hello.extend_from_slice(&buf[..n]);
    }
    assert!(hello.starts_with(b"%"));
    assert_script(
        &mut s,
        &[
            (
                b"DEBUG PROTOCOL attrib\r\n",
                b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n",
            ),
            (
                b"DEBUG PROTOCOL push\r\n",
                b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n",
            ),
            (b"DEBUG PROTOCOL bignum\r\n", b"(1234567999999999999999999999999999999\r\n"),
            (b"DEBUG PROTOCOL true\r\n", b"#t\r\n"),
            (b"DEBUG PROTOCOL double\r\n", b",3.141\r\n"),
            (b"DEBUG PROTOCOL verbatim\r\n", b"=29\r\ntxt:This is a verbatim\nstring\r\n"),
        ],
    );
}

/// DEBUG POPULATE makes `prefix:i` keys holding `value:i` cut or padded to the size,
/// leaving keys that exist alone.
#[test]
fn debug_populate_makes_keys_and_spares_existing_ones() {
    let server = debug_server();
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "p:1", "mine"]);
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "POPULATE", "3", "p", "10"]),
        "OK"
    );
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 3);
    assert_eq!(run::<Vec<u8>>(&mut c, &["GET", "p:0"]), b"value:0\0\0\0");
    assert_eq!(run::<String>(&mut c, &["GET", "p:1"]), "mine");
    assert_eq!(run::<String>(&mut c, &["DEBUG", "POPULATE", "2"]), "OK");
    assert_eq!(run::<String>(&mut c, &["GET", "key:1"]), "value:1");
    assert!(run_err(&mut c, &["DEBUG", "POPULATE", "-1"]).contains("must be positive"));
    assert!(run_err(&mut c, &["DEBUG", "SLEEP", "soon"]).contains("not a valid float"));
    for size in ["1b", "0", "100mb"] {
        assert_eq!(
            run::<String>(&mut c, &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", size]),
            "OK"
        );
    }
    for size in ["5gb", "big"] {
        let refusal = run_err(&mut c, &["DEBUG", "QUICKLIST-PACKED-THRESHOLD", size]);
        assert!(
            refusal.contains("bigger than 1 and smaller than 4gb"),
            "{refusal}"
        );
    }
    assert!(run_err(&mut c, &["DEBUG", "NOSUCH"]).starts_with("ERR unknown subcommand 'NOSUCH'"));
}

/// DEBUG SET-DISABLE-DENY-SCRIPTS 1 lets scripts call commands flagged `noscript`
/// (DEBUG itself among them); 0 refuses them again.
#[test]
fn debug_set_disable_deny_scripts_opens_noscript_commands_to_scripts() {
    let server = debug_server();
    let mut c = server.client();
    let script = "return redis.call('debug', 'protocol', 'bignum')";
    let refusal = run_err(&mut c, &["EVAL", script, "0"]);
    assert!(
        refusal.contains("This Redis command is not allowed from script"),
        "{refusal}"
    );
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]),
        "OK"
    );
    assert_eq!(
        run::<String>(&mut c, &["EVAL", script, "0"]),
        "1234567999999999999999999999999999999"
    );
    assert_eq!(
        run::<String>(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]),
        "OK"
    );
    assert!(run_err(&mut c, &["EVAL", script, "0"]).contains("not allowed from script"));
}

/// DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 lets RESTORE take a payload whose CRC is wrong
/// (Redis's tests of corrupt payloads lean on it), never one of a newer version; 0
/// checks again.
#[test]
fn debug_can_skip_restore_checksums() {
    let server = debug_server();
    let mut c = server.client();
    run::<()>(&mut c, &["RPUSH", "list", "a", "b"]);
    let mut payload: Vec<u8> = redis::cmd("DUMP").arg("list").query(&mut c).unwrap();
    let last = payload.len() - 1;
    payload[last] ^= 0xff;
    let restore = |c: &mut redis::Connection, payload: &[u8]| {
        redis::cmd("RESTORE")
            .arg("copy")
            .arg(0)
            .arg(payload)
            .arg("REPLACE")
            .query::<()>(c)
            .map_err(|e| e.to_string())
    };
    let refused = restore(&mut c, &payload).unwrap_err();
    assert!(
        refused.contains("DUMP payload version or checksum are wrong"),
        "{refused}"
    );
    run::<()>(&mut c, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]);
    restore(&mut c, &payload).unwrap();
    let copied: Vec<String> = run(&mut c, &["LRANGE", "copy", "0", "-1"]);
    assert_eq!(copied, ["a", "b"]);
    let mut newer = payload.clone();
    newer[last - 9] = 0xff;
    assert!(
        restore(&mut c, &newer).is_err(),
        "the version is checked still"
    );
    run::<()>(&mut c, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"]);
    assert!(restore(&mut c, &payload).is_err());
}
