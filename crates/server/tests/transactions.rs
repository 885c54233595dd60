//! MULTI/EXEC/WATCH through the real server, including their atomicity against
//! concurrent clients.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use support::{assert_script, run, run_err, Server};

/// Pipelines whose writes the lsm engine's server gathers, holding their keys' locks
/// until the pipeline's batch is written (`gathered_writes.rs`), beside commands that
/// run alone (MSET, EXEC, scripts) on the same keys: nothing waits for ever, and no
/// increment is lost.
#[test]
fn gathered_pipelines_beside_commands_that_run_alone_lose_nothing() {
    const ROUNDS: usize = 100;
    let server = Server::start();
    let mut popped = 0;
    std::thread::scope(|s| {
        for t in 0..2 {
            let server = &server;
            s.spawn(move || {
                let mut c = server.client();
                for r in 0..ROUNDS {
                    let value = format!("{t}:{r}");
                    let _: () = redis::pipe()
                        .cmd("INCR")
                        .arg("n")
                        .ignore()
                        .cmd("RPUSH")
                        .arg("l")
                        .arg(&value)
                        .ignore()
                        .cmd("MSET")
                        .arg("m")
                        .arg(&value)
                        .arg("o")
                        .arg(&value)
                        .ignore()
                        .cmd("INCR")
                        .arg("n")
                        .ignore()
                        .cmd("PUBLISH")
                        .arg("ch")
                        .arg(&value)
                        .ignore()
                        .cmd("INCR")
                        .arg("n")
                        .ignore()
                        .query(&mut c)
                        .unwrap();
                }
            });
        }
        let server = &server;
        let transactions = s.spawn(move || {
            let mut c = server.client();
            let mut popped = 0;
            for _ in 0..ROUNDS {
                let (_, pop): (i64, Option<String>) = redis::pipe()
                    .atomic()
                    .cmd("INCR")
                    .arg("n")
                    .cmd("RPOP")
                    .arg("l")
                    .query(&mut c)
                    .unwrap();
                popped += usize::from(pop.is_some());
            }
            popped
        });
        s.spawn(move || {
            let mut c = server.client();
            for _ in 0..ROUNDS {
                let _: i64 = run(
                    &mut c,
                    &["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"],
                );
            }
        });
        popped = transactions.join().unwrap();
    });
    let mut c = server.client();
    assert_eq!(
        run::<usize>(&mut c, &["GET", "n"]),
        2 * ROUNDS * 3 + 2 * ROUNDS
    );
    assert_eq!(
        run::<usize>(&mut c, &["LLEN", "l"]),
        2 * ROUNDS - popped,
        "each push stays until a pop takes it"
    );
}

#[test]
fn queue_exec_discard_and_errors() {
    let server = Server::start();
    let mut s = server.raw();
    let script: &[(&[u8], &[u8])] = &[
        (b"EXEC\r\n", b"-ERR EXEC without MULTI\r\n"),
        (b"DISCARD\r\n", b"-ERR DISCARD without MULTI\r\n"),
        (b"MULTI\r\n", b"+OK\r\n"),
        (b"MULTI\r\n", b"-ERR MULTI calls can not be nested\r\n"),
        (
            b"WATCH x\r\n",
            b"-ERR WATCH inside MULTI is not allowed\r\n",
        ),
        (b"SET a 1\r\n", b"+QUEUED\r\n"),
        (b"INCR a\r\n", b"+QUEUED\r\n"),
        (b"INCR nan\r\n", b"+QUEUED\r\n"),
        (b"SET nan x\r\n", b"+QUEUED\r\n"),
        (b"INCR nan\r\n", b"+QUEUED\r\n"),
        // A runtime error fails only its command, as in Redis.
        (
            b"EXEC\r\n",
            b"*5\r\n+OK\r\n:2\r\n:1\r\n+OK\r\n-ERR value is not an integer or out of range\r\n",
        ),
        (b"MULTI\r\n", b"+OK\r\n"),
        (b"SET a 5\r\n", b"+QUEUED\r\n"),
        (b"DISCARD\r\n", b"+OK\r\n"),
        (b"GET a\r\n", b"$1\r\n2\r\n"),
        // A command refused while queueing dooms the transaction.
        (b"MULTI\r\n", b"+OK\r\n"),
        (b"SET a 7\r\n", b"+QUEUED\r\n"),
        (
            b"NOSUCH\r\n",
            b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n",
        ),
        (
            b"GET\r\n",
            b"-ERR wrong number of arguments for 'get' command\r\n",
        ),
        (
            b"EXEC\r\n",
            b"-EXECABORT Transaction discarded because of previous errors.\r\n",
        ),
        // SAVE and SHUTDOWN are refused inside a transaction, and doom it.
        (b"MULTI\r\n", b"+OK\r\n"),
        (
            b"SHUTDOWN NOSAVE\r\n",
            b"-ERR Command not allowed inside a transaction\r\n",
        ),
        (
            b"SAVE\r\n",
            b"-ERR Command not allowed inside a transaction\r\n",
        ),
        (b"SET a 8\r\n", b"+QUEUED\r\n"),
        (
            b"EXEC\r\n",
            b"-EXECABORT Transaction discarded because of previous errors.\r\n",
        ),
        (b"GET a\r\n", b"$1\r\n2\r\n"),
        (b"MULTI\r\n", b"+OK\r\n"),
        (b"EXEC\r\n", b"*0\r\n"),
    ];
    assert_script(&mut s, script);
}

/// An EXEC refused before it runs discards the transaction and says why, in Redis's
/// words: a formatted refusal without its ERR code, a coded one with it.
#[test]
fn a_refused_exec_discards_the_transaction() {
    let server = Server::start();
    let mut s = server.raw();
    assert_script(
        &mut s,
        &[
            (b"MULTI\r\n", b"+OK\r\n"),
            (b"SET k v\r\n", b"+QUEUED\r\n"),
            (
                b"EXEC extra\r\n",
                b"-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n",
            ),
            (b"EXEC\r\n", b"-ERR EXEC without MULTI\r\n"),
            (b"GET k\r\n", b"$-1\r\n"),
            (b"CONFIG SET requirepass pw\r\n", b"+OK\r\n"),
        ],
    );
    assert_script(
        &mut server.raw(),
        &[(
            b"EXEC\r\n",
            b"-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n",
        )],
    );
}

#[test]
fn watch_aborts_exactly_when_a_watched_key_changed() {
    let server = Server::start();
    let (mut a, mut b) = (server.client(), server.client());
    run::<()>(&mut a, &["SET", "w", "1"]);
    // Untouched: runs.
    run::<()>(&mut a, &["WATCH", "w"]);
    run::<()>(&mut a, &["MULTI"]);
    run::<()>(&mut a, &["SET", "w", "2"]);
    let r: Option<Vec<String>> = run(&mut a, &["EXEC"]);
    assert_eq!(r, Some(vec!["OK".to_string()]));
    // Another key changed: runs.
    run::<()>(&mut a, &["WATCH", "w"]);
    run::<()>(&mut b, &["SET", "other", "x"]);
    run::<()>(&mut a, &["MULTI"]);
    run::<()>(&mut a, &["SET", "w", "3"]);
    let r: Option<Vec<String>> = run(&mut a, &["EXEC"]);
    assert!(r.is_some());
    // The watched key rewritten with the same value: aborts, as Redis does.
    for change in [
        &["SET", "w", "3"][..],
        &["DEL", "w"],
        &["EXPIRE", "w", "100"],
    ] {
        run::<()>(&mut a, &["SET", "w", "3"]);
        run::<()>(&mut a, &["WATCH", "w"]);
        run::<redis::Value>(&mut b, change);
        run::<()>(&mut a, &["MULTI"]);
        run::<()>(&mut a, &["SET", "w", "4"]);
        let r: Option<Vec<String>> = run(&mut a, &["EXEC"]);
        assert_eq!(r, None, "after {change:?}");
        assert_ne!(
            run::<Option<String>>(&mut a, &["GET", "w"]).as_deref(),
            Some("4")
        );
    }
    // EXEC and UNWATCH forget the watch.
    run::<()>(&mut a, &["WATCH", "w"]);
    run::<()>(&mut a, &["UNWATCH"]);
    run::<()>(&mut b, &["SET", "w", "5"]);
    run::<()>(&mut a, &["MULTI"]);
    run::<()>(&mut a, &["SET", "w", "6"]);
    assert!(run::<Option<Vec<String>>>(&mut a, &["EXEC"]).is_some());
    assert_eq!(run_err(&mut a, &["EXEC"]), "ERR EXEC without MULTI");
}

/// Runs `writers` threads, each `write(its number, a connection)`, while `readers`
/// threads call `check` (which returns how many checks it made) until the writers are
/// done; every reader must have checked something. Returns a connection for a last look.
fn write_while_checking(
    server: &Server,
    readers: usize,
    check: fn(&mut redis::Connection) -> usize,
    writers: usize,
    write: fn(usize, &mut redis::Connection),
) -> redis::Connection {
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..readers)
        .map(|_| {
            let (stop, mut c) = (stop.clone(), server.client());
            std::thread::spawn(move || {
                let mut checks = 0;
                while !stop.load(Ordering::Relaxed) {
                    checks += check(&mut c);
                }
                checks
            })
        })
        .collect();
    let writers: Vec<_> = (0..writers)
        .map(|w| {
            let mut c = server.client();
            std::thread::spawn(move || write(w, &mut c))
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    server.client()
}

/// Writers move both counters together inside MULTI; readers of both (MGET, which
/// runs with the gate shared) must never see them differ, and optimistic WATCH
/// increments from many clients must lose none.
#[test]
fn transactions_are_atomic_under_concurrency() {
    let server = Server::start();
    let check = |c: &mut redis::Connection| {
        let (a, b): (Option<i64>, Option<i64>) =
            redis::cmd("MGET").arg("a").arg("b").query(c).unwrap();
        assert_eq!(a, b, "MGET saw a transaction half done");
        1
    };
    let write = |_, c: &mut redis::Connection| {
        for _ in 0..300 {
            let _: Vec<i64> = redis::pipe()
                .atomic()
                .cmd("INCR")
                .arg("a")
                .cmd("INCR")
                .arg("b")
                .query(c)
                .unwrap();
            // Check-and-set with WATCH, retried until it commits.
            loop {
                run::<()>(c, &["WATCH", "cas"]);
                let n: Option<i64> = run(c, &["GET", "cas"]);
                let next = (n.unwrap_or(0) + 1).to_string();
                let r: Option<Vec<String>> = redis::pipe()
                    .atomic()
                    .cmd("SET")
                    .arg("cas")
                    .arg(&next)
                    .query(c)
                    .unwrap();
                if r.is_some() {
                    break;
                }
            }
        }
    };
    let mut c = write_while_checking(&server, 3, check, 4, write);
    assert_eq!(run::<i64>(&mut c, &["GET", "a"]), 1200);
    assert_eq!(run::<i64>(&mut c, &["GET", "b"]), 1200);
    assert_eq!(run::<i64>(&mut c, &["GET", "cas"]), 1200);
}

/// A connection holds the gate across a pipeline's commands (exclusively across a run
/// of MSETs). Pipelines that mix MSETs, which run alone, with commands that share the
/// gate must still never show a reader (pipelined MGETs) one key of an MSET without
/// the other, nor lose an increment.
#[test]
fn pipelined_msets_run_alone_under_concurrency() {
    let server = Server::start();
    let check = |c: &mut redis::Connection| {
        let mut pipe = redis::pipe();
        for _ in 0..8 {
            pipe.cmd("MGET").arg("a").arg("b");
        }
        let pairs: Vec<(Option<String>, Option<String>)> = pipe.query(c).unwrap();
        for (a, b) in &pairs {
            assert_eq!(a, b, "MGET saw an MSET half done");
        }
        pairs.len()
    };
    let write = |w, c: &mut redis::Connection| {
        for round in 0..150 {
            let mut pipe = redis::pipe();
            for i in 0..16 {
                let v = format!("{w}-{round}-{i}");
                pipe.cmd("MSET").arg("a").arg(&v).arg("b").arg(&v).ignore();
                if i % 5 == 4 {
                    pipe.cmd("INCR").arg("n").ignore();
                }
            }
            pipe.query::<()>(c).unwrap();
        }
    };
    let mut c = write_while_checking(&server, 2, check, 3, write);
    assert_eq!(run::<i64>(&mut c, &["GET", "n"]), 3 * 150 * 3);
    let (a, b): (String, String) = redis::cmd("MGET").arg("a").arg("b").query(&mut c).unwrap();
    assert_eq!(a, b);
}

/// WATCH and expiry as Redis 7 judges them (active expiry off, so that only what the
/// test does deletes): a key live when watched that expires before EXEC fails it, even
/// undeleted; one already expired when watched fails nothing when lazy expiry, DEL or
/// FLUSHDB deletes it, but does when it is written again, even if deleted again
/// before EXEC.
#[test]
fn watch_judges_expired_keys_as_redis_does() {
    let server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut s = server.raw();
    let wait_past_deadlines = || std::thread::sleep(std::time::Duration::from_millis(60));
    assert_script(
        &mut s,
        &[
            (b"DEBUG SET-ACTIVE-EXPIRE 0\r\n", b"+OK\r\n"),
            (b"SET key 1 PX 50\r\nWATCH key\r\n", b"+OK\r\n+OK\r\n"),
        ],
    );
    wait_past_deadlines();
    assert_script(
        &mut s,
        &[(
            b"MULTI\r\nINCR key\r\nEXEC\r\n",
            b"+OK\r\n+QUEUED\r\n*-1\r\n",
        )],
    );
    let deletions: [&[u8]; 5] = [
        b"EXISTS x\r\n",
        b"DEL x\r\n",
        b"FLUSHDB\r\n",
        b"SET x again\r\n",
        b"SET x again\r\nDEL x\r\n",
    ];
    let replies: [&[u8]; 5] = [
        b":0\r\n",
        b":0\r\n",
        b"+OK\r\n",
        b"+OK\r\n",
        b"+OK\r\n:1\r\n",
    ];
    for (deletion, reply) in deletions.into_iter().zip(replies) {
        assert_script(&mut s, &[(b"SET x foo PX 1\r\n", b"+OK\r\n")]);
        wait_past_deadlines();
        assert_script(&mut s, &[(b"WATCH x\r\n", b"+OK\r\n"), (deletion, reply)]);
        let exec: &[u8] = if deletion.starts_with(b"SET") {
            b"+OK\r\n+QUEUED\r\n*-1\r\n"
        } else {
            b"+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n"
        };
        assert_script(&mut s, &[(b"MULTI\r\nPING\r\nEXEC\r\n", exec)]);
    }
    // Left alone, a key expired when watched is no change either.
    assert_script(&mut s, &[(b"SET x foo PX 1\r\n", b"+OK\r\n")]);
    wait_past_deadlines();
    assert_script(
        &mut s,
        &[(
            b"WATCH x\r\nMULTI\r\nPING\r\nEXEC\r\n",
            b"+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n",
        )],
    );
}
