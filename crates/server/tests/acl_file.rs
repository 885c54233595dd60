//! The ACL file: users read at startup and by ACL LOAD (all or nothing), written by
//! ACL SAVE, with Redis's error words.

mod support;

use std::process::Command;

use support::{run, run_err, Server};

const NOT_LOADED: &str =
    "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";

fn users(c: &mut redis::Connection) -> Vec<String> {
    run(c, &["ACL", "USERS"])
}

/// What a server started on config file `conf` in `dir` says as it fails to start.
fn refused_startup(conf: &std::path::Path, dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hotkv-server"))
        .args([conf.to_str().unwrap(), "--port", "0", "--engine", "memory"])
        .args(["--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn users_come_from_the_acl_file_and_go_back_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("users.acl");
    std::fs::write(
        &acl,
        "user default on nopass ~* &* +@all\n\n  user alice on >secret ~cache:* +get \r\n",
    )
    .unwrap();
    // A relative path is read from `dir`.
    let conf = dir.path().join("hotkv.conf");
    std::fs::write(&conf, "aclfile users.acl\n").unwrap();
    let conf = conf.to_str().unwrap().to_string();
    let server = Server::start_memory_in(dir, &[&conf]);
    let mut admin = server.client();
    assert_eq!(users(&mut admin), ["alice", "default"]);
    let mut alice = server.client();
    run::<()>(&mut alice, &["AUTH", "alice", "secret"]);
    assert_eq!(run::<Option<String>>(&mut alice, &["GET", "cache:x"]), None);
    assert!(run_err(&mut alice, &["SET", "cache:x", "1"]).starts_with("NOPERM"));

    run::<()>(&mut admin, &["ACL", "SETUSER", "bob", "on", ">pw", "+ping"]);
    let mut bob = server.client();
    run::<()>(&mut bob, &["AUTH", "bob", "pw"]);
    run::<()>(&mut admin, &["ACL", "SAVE"]);
    let saved = std::fs::read_to_string(&acl).unwrap();
    let listed: Vec<String> = run(&mut admin, &["ACL", "LIST"]);
    assert_eq!(saved, listed.join("\n") + "\n");
    assert_eq!(saved.lines().count(), 3, "{saved}");

    // One refused line and nothing changes; every refusal is named.
    std::fs::write(
        &acl,
        "user carol on +nosuchcommand\nnot a user line\nuser alice on\nuser alice off\n\
         user dave on >x (+get ~a\n",
    )
    .unwrap();
    assert_eq!(
        run_err(&mut admin, &["ACL", "LOAD"]),
        format!(
            "ERR users.acl:1: Error in applying operation '+nosuchcommand': Unknown command or \
             category name in ACL. users.acl:2 should start with user keyword followed by the \
             username. WARNING: Duplicate user 'alice' found on line 4. users.acl:5: Unmatched \
             parenthesis in selector definition.{NOT_LOADED}"
        )
    );
    assert_eq!(users(&mut admin), ["alice", "bob", "default"]);
    run::<String>(&mut bob, &["PING"]);

    // A good file replaces every user: bob's connection goes with him, alice's serves
    // on with her new rules, and the default user, not declared, has every right.
    std::fs::write(&acl, "user alice on >newpw ~* +@all\n").unwrap();
    run::<()>(&mut admin, &["ACL", "LOAD"]);
    assert_eq!(users(&mut admin), ["alice", "default"]);
    run::<()>(&mut alice, &["SET", "cache:x", "1"]);
    assert!(
        support::eventually(5, || redis::cmd("PING").query::<String>(&mut bob).is_err()),
        "bob's connection closed"
    );
    let default: Vec<String> = run(&mut admin, &["ACL", "LIST"]);
    assert_eq!(default[1], "user default on nopass ~* &* +@all");

    // What the file holds is what a restart finds.
    let dir = server.stop().unwrap();
    let server = Server::start_memory_in(dir, &[&conf]);
    let mut c = server.client();
    assert!(run_err(&mut c, &["AUTH", "alice", "secret"]).starts_with("WRONGPASS"));
    run::<()>(&mut c, &["AUTH", "alice", "newpw"]);
    assert_eq!(users(&mut c), ["alice", "default"]);
}

#[test]
fn a_bad_or_missing_acl_file_stops_the_server_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("users.acl");
    let conf = dir.path().join("hotkv.conf");
    std::fs::write(&conf, format!("aclfile {}\n", acl.display())).unwrap();
    let err = refused_startup(&conf, dir.path());
    assert!(
        err.contains(&format!(
            "Aborting startup because of ACL errors: Error loading ACLs, opening file '{}': \
             No such file or directory",
            acl.display()
        )),
        "{err}"
    );
    std::fs::write(&acl, "# a comment is no user line\n").unwrap();
    let err = refused_startup(&conf, dir.path());
    assert!(
        err.contains("users.acl:1 should start with user keyword followed by the username."),
        "{err}"
    );
}

#[test]
fn without_an_acl_file_load_and_save_are_refused() {
    let server = Server::start();
    let mut c = server.client();
    for sub in ["LOAD", "SAVE"] {
        assert!(
            run_err(&mut c, &["ACL", sub])
                .starts_with("ERR This Redis instance is not configured to use an ACL file."),
            "{sub}"
        );
    }
}

/// Users declared by `user` lines of the config file, as Redis reads them (a rule naming
/// an unknown command skipped, any other bad rule refused), and CONFIG REWRITE writing
/// the users back in their place; an ACL file and `user` lines together are refused.
#[test]
fn users_declared_in_the_config_file_are_made_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("hotkv.conf");
    std::fs::write(
        &conf,
        "# users\nuser alice on >pw ~* +@all +nosuchcommand\ntimeout 9\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let conf_arg = conf.to_str().unwrap().to_string();
    let server = Server::start_memory_in(dir, &[&conf_arg]);
    let mut c = server.client();
    assert_eq!(users(&mut c), ["alice", "default"]);
    let mut alice = server.client();
    run::<()>(&mut alice, &["AUTH", "alice", "pw"]);
    run::<()>(&mut c, &["ACL", "SETUSER", "bob", "on", ">b", "+ping"]);
    run::<()>(&mut c, &["CONFIG", "REWRITE"]);
    let listed: Vec<String> = run(&mut c, &["ACL", "LIST"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.starts_with(&format!("# users\n{}\ntimeout 9\n", listed.join("\n"))),
        "{text}"
    );
    let dir = server.stop().unwrap();
    let server = Server::start_memory_in(dir, &[&conf_arg]);
    let mut c = server.client();
    assert_eq!(users(&mut c), ["alice", "bob", "default"]);
    let mut bob = server.client();
    run::<()>(&mut bob, &["AUTH", "bob", "b"]);
    let dir = server.stop().unwrap();

    let refused = |text: &str| {
        std::fs::write(&conf, text).unwrap();
        refused_startup(&conf, dir.path())
    };
    let err = refused("timeout 1\nuser carol on nosuchflag\n");
    assert!(
        err.contains("hotkv.conf:2: Error in user declaration 'nosuchflag': Syntax error"),
        "{err}"
    );
    let err = refused("user carol on\nuser carol off\n");
    assert!(
        err.contains("hotkv.conf:2: Error in user declaration 'carol': Duplicate user"),
        "{err}"
    );
    std::fs::write(dir.path().join("users.acl"), "").unwrap();
    let err = refused("aclfile users.acl\nuser carol on\n");
    assert!(
        err.contains("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid."),
        "{err}"
    );
}
