//! The memory engine's RDB file: SAVE, BGSAVE, the save schedule and SHUTDOWN write it,
//! the next start loads it, and a damaged one stops the start with the reason.

mod support;

use std::time::Duration;

use support::{eventually, info_field, refused_start, run, run_err, Server};

/// Writes a key of every type and encoding the file must carry, and a library;
/// returns the keys.
fn fill(c: &mut redis::Connection) -> Vec<String> {
    run::<()>(c, &["SET", "text", "hello"]);
    run::<()>(c, &["SET", "int", "-12345"]);
    run::<()>(c, &["SET", "long", &"x".repeat(5000)]);
    run::<()>(c, &["SET", "ttl", "v", "PX", "1000000"]);
    run::<i64>(c, &["RPUSH", "list", "a", "1", "b"]);
    run::<i64>(c, &["HSET", "hash", "f", "v", "n", "7"]);
    run::<i64>(c, &["SADD", "ints", "1", "2", "3"]);
    run::<i64>(c, &["ZADD", "zset", "1.5", "a", "-inf", "b", "3", "c"]);
    for i in 0..2000 {
        let (i, member) = (i.to_string(), format!("member:{i}"));
        run::<i64>(c, &["RPUSH", "biglist", &member]);
        run::<i64>(c, &["HSET", "bighash", &member, &i]);
        run::<i64>(c, &["SADD", "bigset", &member]);
        run::<i64>(c, &["ZADD", "bigzset", &i, &member]);
    }
    run::<String>(c, &["XADD", "stream", "1-1", "f", "v"]);
    run::<String>(c, &["XADD", "stream", "2-1", "f", "w"]);
    run::<()>(c, &["XGROUP", "CREATE", "stream", "group", "0"]);
    run::<redis::Value>(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "group",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "stream",
            ">",
        ],
    );
    let library = "#!lua name=lib\nredis.register_function('one', function() return 1 end)";
    run::<String>(c, &["FUNCTION", "LOAD", library]);
    let mut keys: Vec<String> = run(c, &["KEYS", "*"]);
    keys.sort();
    keys
}

/// Each key's DUMP payload, which holds its whole value.
fn dumps(c: &mut redis::Connection, keys: &[String]) -> Vec<Option<Vec<u8>>> {
    keys.iter().map(|k| run(c, &["DUMP", k])).collect()
}

#[test]
fn save_writes_what_the_next_start_loads() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let keys = fill(&mut c);
    let before = dumps(&mut c, &keys);
    run::<()>(&mut c, &["SET", "gone", "v", "PX", "300"]);
    run::<()>(&mut c, &["SAVE"]);
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    // After the save, so not in the file.
    run::<()>(&mut c, &["SET", "later", "v"]);
    let dir = server.kill().unwrap();
    std::thread::sleep(Duration::from_millis(350));

    let server = Server::start_memory_in(dir, &[]);
    let mut c = server.client();
    let mut now: Vec<String> = run(&mut c, &["KEYS", "*"]);
    now.sort();
    assert_eq!(
        now, keys,
        "the saved keys, without the expired one or the later one"
    );
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    assert_eq!(
        info_field(&mut c, "rdb_last_load_keys_loaded"),
        keys.len().to_string()
    );
    assert_eq!(info_field(&mut c, "rdb_last_load_keys_expired"), "1");
    assert_eq!(dumps(&mut c, &keys), before);
    let ttl: i64 = run(&mut c, &["PTTL", "ttl"]);
    assert!(ttl > 900_000 && ttl <= 1_000_000, "{ttl}");
    assert_eq!(run::<i64>(&mut c, &["FCALL", "one", "0"]), 1);
    let pending: Vec<redis::Value> = run(&mut c, &["XPENDING", "stream", "group"]);
    assert_eq!(pending[0], redis::Value::Int(1));
}

#[test]
fn the_save_schedule_and_shutdown_save_as_redis_does() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let saved = |c: &mut redis::Connection| info_field(c, "rdb_saves").parse::<u64>().unwrap();
    assert_eq!(saved(&mut c), 0);
    // Two changes past a point asking for 3: no save.
    run::<()>(&mut c, &["CONFIG", "SET", "save", "1 3"]);
    run::<()>(&mut c, &["SET", "a", "1"]);
    run::<()>(&mut c, &["SET", "b", "2"]);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(saved(&mut c), 0);
    run::<()>(&mut c, &["SET", "c", "3"]);
    assert!(eventually(10, || saved(&mut c) == 1), "the schedule saved");
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    let dir = server.kill().unwrap();
    let server = Server::start_memory_in(dir, &[]);
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 3);

    // SHUTDOWN NOSAVE leaves the file as it was, though a schedule is set.
    run::<()>(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    run::<()>(&mut c, &["SET", "d", "4"]);
    assert!(run_err(&mut c, &["SHUTDOWN", "SAVE", "NOSAVE"]).contains("syntax error"));
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    let dir = server.exited("SHUTDOWN NOSAVE").unwrap();
    let server = Server::start_memory_in(dir, &[]);
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 3);

    // With a schedule, SIGTERM saves; without one, SHUTDOWN SAVE does.
    run::<()>(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    run::<()>(&mut c, &["SET", "e", "5"]);
    let server = Server::start_memory_in(server.stop().unwrap(), &[]);
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 4);
    run::<()>(&mut c, &["SET", "f", "6"]);
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").query::<()>(&mut c);
    let server = Server::start_memory_in(server.exited("SHUTDOWN SAVE").unwrap(), &[]);
    let mut c = server.client();
    assert_eq!(run::<i64>(&mut c, &["DBSIZE"]), 5);
    // And SIGTERM without a schedule does not.
    run::<()>(&mut c, &["SET", "g", "7"]);
    let server = Server::start_memory_in(server.stop().unwrap(), &[]);
    assert_eq!(run::<i64>(&mut server.client(), &["DBSIZE"]), 5);
}

#[test]
fn a_damaged_file_stops_the_start_with_the_reason() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    fill(&mut c);
    run::<()>(&mut c, &["SAVE"]);
    let dir = server.kill().unwrap();
    let path = dir.path().join("dump.rdb");
    let good = std::fs::read(&path).unwrap();
    let cases: [(&str, Vec<u8>); 3] = [
        ("checksum is wrong: it is corrupt", {
            let mut flipped = good.clone();
            flipped[good.len() / 2] ^= 0x40;
            flipped
        }),
        ("cut short", good[..good.len() - 20].to_vec()),
        ("not an RDB file", b"hello".to_vec()),
    ];
    for (reason, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let (code, err) = refused_start(dir.path(), &["--engine", "memory"]);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains("dump.rdb") && err.contains(reason),
            "{reason}: {err}"
        );
    }
    // The file as it was loads.
    std::fs::write(&path, &good).unwrap();
    let server = Server::start_memory_in(dir, &[]);
    assert!(run::<i64>(&mut server.client(), &["DBSIZE"]) > 10);
}

/// The save's child processes: those of the server's process.
fn save_children(server: &Server) -> Vec<u32> {
    let tasks = format!("/proc/{}/task", server.child.id());
    let mut pids = Vec::new();
    for task in std::fs::read_dir(tasks).unwrap().flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        pids.extend(
            children
                .split_whitespace()
                .map(|p| p.parse::<u32>().unwrap()),
        );
    }
    pids
}

/// Kills a save's child process as something outside the server might.
fn kill(pid: u32) {
    let status = std::process::Command::new("sh")
        .args(["-c", &format!("kill -9 {pid}")])
        .status()
        .unwrap();
    assert!(status.success());
}

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("temp-"))
        .collect()
}

fn saving(c: &mut redis::Connection) -> bool {
    info_field(c, "rdb_bgsave_in_progress") == "1"
}

#[test]
fn bgsave_writes_the_moment_it_began_while_clients_go_on() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let keys = fill(&mut c);
    let before = dumps(&mut c, &keys);
    // 13 keys at 0.1 s each: the child is still writing while this test looks.
    run::<()>(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    let started: String = run(&mut c, &["BGSAVE"]);
    assert_eq!(started, "Background saving started");
    // Served while the save goes on, and not in it.
    run::<()>(&mut c, &["SET", "later", "v"]);
    run::<i64>(&mut c, &["DEL", "text"]);
    run::<i64>(&mut c, &["RPUSH", "biglist", "after"]);
    assert!(saving(&mut c));
    assert_eq!(save_children(&server).len(), 1);
    assert_eq!(info_field(&mut c, "total_forks"), "1");
    let in_progress = "ERR Background save already in progress";
    assert_eq!(run_err(&mut c, &["SAVE"]), in_progress);
    assert_eq!(run_err(&mut c, &["BGSAVE"]), in_progress);
    assert_eq!(run_err(&mut c, &["BGSAVE", "SCHEDULE"]), in_progress);
    assert_eq!(info_field(&mut c, "rdb_saves"), "0");

    assert!(eventually(30, || !saving(&mut c)), "the save ended");
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(info_field(&mut c, "rdb_saves"), "1");
    assert_eq!(info_field(&mut c, "rdb_current_bgsave_time_sec"), "-1");
    assert!(
        info_field(&mut c, "rdb_last_bgsave_time_sec")
            .parse::<i64>()
            .unwrap()
            >= 1
    );
    // The three changes made after the fork are not in the file.
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "3");
    assert!(save_children(&server).is_empty(), "the child was reaped");
    let dir = server.kill().unwrap();
    assert!(temp_files(dir.path()).is_empty());

    let server = Server::start_memory_in(dir, &[]);
    let mut c = server.client();
    let mut now: Vec<String> = run(&mut c, &["KEYS", "*"]);
    now.sort();
    assert_eq!(now, keys, "the keys as they were when BGSAVE answered");
    assert_eq!(dumps(&mut c, &keys), before);
    assert_eq!(run::<i64>(&mut c, &["FCALL", "one", "0"]), 1);
}

#[test]
fn a_background_save_cut_short_leaves_the_last_file() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    run::<()>(&mut c, &["SET", "first", "1"]);
    run::<()>(&mut c, &["SAVE"]);
    run::<()>(&mut c, &["SET", "second", "2"]);
    run::<()>(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);

    // Killed from outside: the status says so, the half-written file is removed.
    run::<String>(&mut c, &["BGSAVE"]);
    let children = save_children(&server);
    assert_eq!(children.len(), 1);
    assert!(eventually(10, || !temp_files(
        server.dir.as_ref().unwrap().path()
    )
    .is_empty()));
    kill(children[0]);
    assert!(eventually(10, || !saving(&mut c)));
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "err");
    assert_eq!(info_field(&mut c, "rdb_saves"), "1");
    assert!(temp_files(server.dir.as_ref().unwrap().path()).is_empty());

    // FLUSHALL stops one at once, and is no failure.
    run::<String>(&mut c, &["BGSAVE"]);
    assert!(saving(&mut c));
    run::<()>(&mut c, &["FLUSHALL"]);
    assert!(!saving(&mut c));
    assert!(save_children(&server).is_empty());
    assert!(temp_files(server.dir.as_ref().unwrap().path()).is_empty());
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "err");
    assert_eq!(info_field(&mut c, "rdb_saves"), "1");

    // SHUTDOWN SAVE does not wait for one: it stops it and saves everything.
    run::<()>(&mut c, &["SET", "third", "3"]);
    run::<String>(&mut c, &["BGSAVE"]);
    let child = save_children(&server)[0];
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").query::<()>(&mut c);
    let dir = server.exited("SHUTDOWN SAVE").unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{child}")).exists());
    assert!(temp_files(dir.path()).is_empty());
    let server = Server::start_memory_in(dir, &[]);
    let mut c = server.client();
    let keys: Vec<String> = run(&mut c, &["KEYS", "*"]);
    assert_eq!(keys, ["third"]);
}

#[test]
fn bgsave_in_a_transaction_starts_once_it_is_over() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    let replies: Vec<String> = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("k")
        .arg("v")
        .cmd("BGSAVE")
        .query(&mut c)
        .unwrap();
    assert_eq!(replies, ["OK", "Background saving scheduled"]);
    assert!(eventually(10, || info_field(&mut c, "rdb_saves") == "1"));
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    let server = Server::start_memory_in(server.kill().unwrap(), &[]);
    assert_eq!(run::<String>(&mut server.client(), &["GET", "k"]), "v");
}

#[test]
fn failing_saves_stop_writes_as_redis_does() {
    let server = Server::start_memory(&[]);
    let mut c = server.client();
    run::<()>(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    run::<()>(&mut c, &["SET", "a", "1"]);
    run::<()>(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    run::<String>(&mut c, &["BGSAVE"]);
    let child = save_children(&server)[0];
    kill(child);
    assert!(eventually(10, || !saving(&mut c)));
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "err");

    // Writes and PING refused, reads served, scripts' writes refused.
    let misconf = run_err(&mut c, &["SET", "b", "2"]);
    assert!(misconf.starts_with("MISCONF"), "{misconf}");
    assert!(misconf.contains("stop-writes-on-bgsave-error"), "{misconf}");
    assert!(run_err(&mut c, &["PING"]).starts_with("MISCONF"));
    assert_eq!(run::<String>(&mut c, &["GET", "a"]), "1");
    let script = run_err(&mut c, &["EVAL", "return redis.call('SET', 'c', '3')", "0"]);
    assert!(script.contains("MISCONF"), "{script}");
    // Not with the option off, nor without a schedule.
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    );
    run::<()>(&mut c, &["SET", "b", "2"]);
    run::<()>(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    );
    run::<()>(&mut c, &["CONFIG", "SET", "save", ""]);
    run::<()>(&mut c, &["SET", "b", "2"]);
    run::<()>(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    assert!(run_err(&mut c, &["SET", "b", "2"]).starts_with("MISCONF"));

    // A save that succeeds lets writes in again.
    run::<()>(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    run::<String>(&mut c, &["BGSAVE"]);
    assert!(eventually(10, || info_field(
        &mut c,
        "rdb_last_bgsave_status"
    ) == "ok"));
    run::<()>(&mut c, &["SET", "b", "3"]);
    assert_eq!(run::<String>(&mut c, &["PING"]), "PONG");
}
