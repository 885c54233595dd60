//! Drives the real `hotkv-server` binary with the `redis` crate and raw sockets:
//! strings, protocol errors, pipelining, malformed input, shutdown.

mod support;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use support::{assert_script, exchange, info_field, Server};

#[test]
fn strings_and_keys() {
    let server = Server::start();
    let mut c = server.client();
    let binary: &[u8] = b"v\r\n\0\xff value";
    let () = redis::cmd("SET")
        .arg(b"k\r\n\0".as_slice())
        .arg(binary)
        .query(&mut c)
        .unwrap();
    let got: Vec<u8> = redis::cmd("GET")
        .arg(b"k\r\n\0".as_slice())
        .query(&mut c)
        .unwrap();
    assert_eq!(got, binary);
    let missing: Option<Vec<u8>> = redis::cmd("GET").arg("nope").query(&mut c).unwrap();
    assert_eq!(missing, None);
    let nx: Option<String> = redis::cmd("SET")
        .arg("k2")
        .arg("a")
        .arg("NX")
        .query(&mut c)
        .unwrap();
    assert_eq!(nx.as_deref(), Some("OK"));
    let nx_again: Option<String> = redis::cmd("SET")
        .arg("k2")
        .arg("b")
        .arg("nx")
        .query(&mut c)
        .unwrap();
    assert_eq!(nx_again, None);
    let xx: Option<String> = redis::cmd("SET")
        .arg("absent")
        .arg("b")
        .arg("XX")
        .query(&mut c)
        .unwrap();
    assert_eq!(xx, None);
    let n: i64 = redis::cmd("EXISTS")
        .arg("k2")
        .arg("k2")
        .arg("absent")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("INCR").arg("counter").query(&mut c).unwrap();
    assert_eq!(n, 1);
    let n: i64 = redis::cmd("INCRBY")
        .arg("counter")
        .arg(41)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 42);
    let n: i64 = redis::cmd("DECRBY")
        .arg("counter")
        .arg(50)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, -8);
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 3);
    let n: i64 = redis::cmd("DEL")
        .arg("k2")
        .arg("counter")
        .arg("absent")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("SETNX")
        .arg("k2")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    let () = redis::cmd("MSET")
        .arg("m1")
        .arg("a")
        .arg("m2")
        .arg("bb")
        .query(&mut c)
        .unwrap();
    let got: Vec<Option<String>> = redis::cmd("MGET")
        .arg("m1")
        .arg("nope")
        .arg("m2")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, vec![Some("a".into()), None, Some("bb".into())]);
    let n: i64 = redis::cmd("STRLEN").arg("m2").query(&mut c).unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("APPEND")
        .arg("m2")
        .arg(" and more text")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 16);
    let n: i64 = redis::cmd("APPEND")
        .arg("fresh")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    let old: Option<String> = redis::cmd("GETSET")
        .arg("m1")
        .arg("z")
        .query(&mut c)
        .unwrap();
    assert_eq!(old.as_deref(), Some("a"));
    let old: Option<String> = redis::cmd("GETDEL").arg("m1").query(&mut c).unwrap();
    assert_eq!(old.as_deref(), Some("z"));
    let old: Option<String> = redis::cmd("GETDEL").arg("m1").query(&mut c).unwrap();
    assert_eq!(old, None);
    let t: String = redis::cmd("TYPE").arg("m2").query(&mut c).unwrap();
    assert_eq!(t, "string");
    let t: String = redis::cmd("TYPE").arg("m1").query(&mut c).unwrap();
    assert_eq!(t, "none");
}

#[test]
fn concurrent_appends_and_increments_lose_nothing() {
    let server = Server::start();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let mut c = server.client();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let _: i64 = redis::cmd("INCR").arg("shared").query(&mut c).unwrap();
                    let _: i64 = redis::cmd("APPEND")
                        .arg("log")
                        .arg("x")
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = server.client();
    let n: i64 = redis::cmd("GET").arg("shared").query(&mut c).unwrap();
    assert_eq!(n, 1600);
    let n: i64 = redis::cmd("STRLEN").arg("log").query(&mut c).unwrap();
    assert_eq!(n, 1600);
}

#[test]
fn errors_are_worded_as_redis_words_them() {
    let server = Server::start();
    let mut s = server.raw();
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*2\r\n$3\r\nFOO\r\n$1\r\na\r\n",
            b"-ERR unknown command 'FOO', with args beginning with: 'a' \r\n",
        ),
        (
            b"*1\r\n$3\r\nGET\r\n",
            b"-ERR wrong number of arguments for 'get' command\r\n",
        ),
        (b"SET n abc\r\n", b"+OK\r\n"),
        (
            b"INCR n\r\n",
            b"-ERR value is not an integer or out of range\r\n",
        ),
        (
            b"SET big 9223372036854775807\r\nINCR big\r\n",
            b"+OK\r\n-ERR increment or decrement would overflow\r\n",
        ),
        (b"SET k v FOO\r\n", b"-ERR syntax error\r\n"),
        (
            b"MSET a 1 b\r\n",
            b"-ERR wrong number of arguments for 'mset' command\r\n",
        ),
        (b"SELECT 1\r\n", b"-ERR DB index is out of range\r\n"),
        (b"HELLO 4\r\n", b"-NOPROTO unsupported protocol version\r\n"),
    ];
    assert_script(&mut s, cases);
}

#[test]
fn resp3_after_hello_3() {
    let server = Server::start();
    let mut s = server.raw();
    let reply = exchange(&mut s, b"HELLO 3\r\n", 1);
    assert_eq!(reply[0], b'%', "{}", String::from_utf8_lossy(&reply));
    let mut s = server.raw();
    exchange(&mut s, b"HELLO 3\r\n", 100);
    assert_eq!(exchange(&mut s, b"GET missing\r\n", 3), b"_\r\n");
}

#[test]
fn command_docs_in_resp3_are_maps_and_sets() {
    use std::io::{Read, Write};
    let server = Server::start();
    let mut s = server.raw();
    exchange(&mut s, b"HELLO 3\r\n", 100);
    // PING's reply marks the end of DOCS's.
    s.write_all(b"COMMAND DOCS get hotkeys nosuch\r\nPING\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.ends_with(b"+PONG\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {}", String::from_utf8_lossy(&reply));
        reply.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(reply).unwrap();
    // Two entries: the unknown name is left out.
    assert!(
        text.starts_with("%2\r\n$3\r\nget\r\n%5\r\n$7\r\nsummary\r\n"),
        "{text}"
    );
    for part in [
        "$5\r\ngroup\r\n$6\r\nstring\r\n",
        "$9\r\narguments\r\n*1\r\n%3\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n\
         $14\r\nkey_spec_index\r\n:0\r\n",
        "$7\r\nhotkeys\r\n",
        "$5\r\ntoken\r\n$5\r\nCOUNT\r\n$5\r\nflags\r\n~1\r\n+optional\r\n",
    ] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }
}

#[test]
fn ten_thousand_pipelined_commands() {
    let server = Server::start();
    let mut c = server.client();
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        pipe.cmd("SET").arg(format!("key:{i}")).arg(i).ignore();
    }
    for i in (0..10_000).step_by(7) {
        pipe.cmd("GET").arg(format!("key:{i}"));
    }
    let got: Vec<i64> = pipe.query(&mut c).unwrap();
    assert_eq!(got, (0..10_000).step_by(7).collect::<Vec<_>>());
}

#[test]
fn malformed_input_closes_only_that_connection() {
    let server = Server::start();
    let mut c = server.client();
    let () = redis::cmd("SET")
        .arg("kept")
        .arg("yes")
        .query(&mut c)
        .unwrap();
    let bad: &[(&[u8], &[u8])] = &[
        (
            b"*1\r\n$-5\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$536870913\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*x\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n:1\r\n",
            b"-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"GET \"unbalanced\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (request, reply) in bad {
        let mut s = server.raw();
        // Read to the end: the server must reply and then close.
        let got = exchange(&mut s, request, usize::MAX);
        assert_eq!(got, *reply, "{}", String::from_utf8_lossy(request));
    }
    // A declared 512 MB argument that never arrives, then a truncated frame.
    let mut s = server.raw();
    s.write_all(b"*2\r\n$3\r\nSET\r\n$536870912\r\nabc")
        .unwrap();
    drop(s);
    server.alive();
    let v: String = redis::cmd("GET")
        .arg("kept")
        .query(&mut server.client())
        .unwrap();
    assert_eq!(v, "yes");
}

#[test]
fn a_client_that_never_reads_does_not_stall_others() {
    let server = Server::start();
    let mut hog = server.raw();
    hog.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let request = b"*2\r\n$4\r\nECHO\r\n$1024\r\n"
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'x', 1024))
        .chain(*b"\r\n")
        .collect::<Vec<u8>>();
    // Write 100 MB of requests (the server reads on and holds the replies, as Redis
    // does: the normal clients' output limit is off by default); never read.
    for _ in 0..100_000 {
        if hog.write_all(&request).is_err() {
            break;
        }
    }
    server.alive();
    let mut c = server.client();
    let () = redis::cmd("SET").arg("a").arg("b").query(&mut c).unwrap();
    drop(hog);
    server.alive();
}

/// A client that writes its whole pipeline before it reads any reply (redis-py's
/// pipelines do) gets every reply, however far they outgrow the socket buffers: the
/// server reads on while its replies wait. Before, it stopped reading until the
/// client read, which the client never did: both waited for ever.
#[test]
fn a_pipeline_written_whole_before_any_reply_is_read_is_answered() {
    let server = Server::start();
    let mut s = server.raw();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let value = "v".repeat(10_000);
    let request = format!("*2\r\n$4\r\nECHO\r\n${}\r\n{value}\r\n", value.len());
    let count = 5_000; // 50 MB each way
    s.write_all(request.repeat(count).as_bytes())
        .expect("the server reads the whole pipeline");
    let reply = format!("${}\r\n{value}\r\n", value.len());
    let mut got = vec![0; reply.len() * count];
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.read_exact(&mut got).unwrap();
    assert!(got.chunks(reply.len()).all(|r| r == reply.as_bytes()));
    server.alive();
}

/// On an index large enough for the keys of pipelined requests to be prefetched
/// (`HotRing::prefetch_pays`), a pipeline of every shape (hits, misses, writes to the
/// keys just read, commands whose second argument is no key, requests split across
/// reads) is answered as one request at a time would be.
#[test]
fn pipelines_on_an_index_large_enough_to_prefetch_for_are_answered_in_order() {
    // The memory engine's index is what is prefetched from, whichever engine the
    // other tests run on.
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let keys = 200_000;
    for chunk in (0..keys).collect::<Vec<u32>>().chunks(10_000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET").arg(format!("key:{i}")).arg(i).ignore();
        }
        let () = p.query(&mut c).unwrap();
    }
    let slots: usize = info_field(&mut c, "hotring_directory_slots")
        .parse()
        .unwrap();
    assert!(
        slots >= 1 << 14,
        "{slots} directory slots: too few to prefetch for"
    );
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for i in (0..keys).step_by(997) {
        let key = format!("key:{i}");
        let commands: [(&[&str], String); 7] = [
            (
                &["GET", &key],
                format!("${}\r\n{i}\r\n", i.to_string().len()),
            ),
            (&["GET", "absent"], "$-1\r\n".into()),
            (&["INCR", &key], format!(":{}\r\n", i + 1)),
            (
                &["GET", &key],
                format!("${}\r\n{}\r\n", (i + 1).to_string().len(), i + 1),
            ),
            (&["PING"], "+PONG\r\n".into()),
            (&["ECHO", &key], format!("${}\r\n{key}\r\n", key.len())),
            (&["DEL", &key, "absent"], ":1\r\n".into()),
        ];
        for (args, reply) in commands {
            requests.extend(resp::Frame::command(args).to_bytes(resp::Protocol::Resp2));
            expected.extend(reply.into_bytes());
        }
    }
    // Sent in pieces that cut requests anywhere, so the look-ahead meets halves.
    let mut s = server.raw();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let writer = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            for piece in requests.chunks(1_237) {
                s.write_all(piece).unwrap();
            }
        })
    };
    let mut got = vec![0; expected.len()];
    s.read_exact(&mut got).unwrap();
    writer.join().unwrap();
    assert!(
        got == expected,
        "replies differ from one request at a time's"
    );
    let left: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(left, keys as usize - (0..keys).step_by(997).count());
    server.alive();
}

#[test]
fn sigterm_shuts_down_cleanly() {
    sigterm_ends(Server::start());
}

#[test]
fn sigterm_does_not_wait_for_a_client_pause() {
    use std::io::Write;
    let server = Server::start();
    let mut c = server.client();
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg("600000")
        .arg("WRITE")
        .query(&mut c)
        .unwrap();
    // A write held by the pause, on a connection the shutdown must not wait for.
    let mut held = server.raw();
    held.write_all(b"SET k v\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    sigterm_ends(server);
}

/// Sends SIGTERM to a live server and requires a clean exit within 10 s.
fn sigterm_ends(server: Server) {
    server.alive();
    server.stop();
}

#[test]
fn refuses_a_public_address_without_protection_turned_off() {
    let out = Command::new(env!("CARGO_BIN_EXE_hotkv-server"))
        .args(["--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--protected-mode no"));
}
