//! Client-side caching: CLIENT TRACKING's invalidation messages, checked against what
//! Redis 7 sends, on raw RESP3 connections so every push is seen as it arrives.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use resp::Frame;
use support::{info_field, run, Conn, Server};

fn ok() -> Frame {
    Frame::Simple("OK".into())
}

fn err(text: &str) -> Frame {
    Frame::Error(text.into())
}

fn bulk(s: &str) -> Frame {
    Frame::bulk(s)
}

/// The `invalidate` message for `keys` (`None`: everything, as after FLUSHALL).
fn invalidate(keys: Option<&[&str]>) -> Frame {
    let keys = keys.map_or(Frame::Null, |k| {
        Frame::Array(k.iter().map(|k| bulk(k)).collect())
    });
    Frame::Push(vec![bulk("invalidate"), keys])
}

#[test]
fn a_key_read_while_tracking_is_invalidated_once_when_it_changes() {
    let server = Server::start();
    let mut reader = Conn::open(&server, true);
    let mut writer = Conn::open(&server, false);
    assert_eq!(reader.call(&["CLIENT", "TRACKING", "ON"]), ok());
    // Read while missing: a later SET still concerns the reader.
    assert_eq!(reader.call(&["GET", "k"]), Frame::Null);
    writer.call(&["SET", "k", "1"]);
    assert_eq!(reader.push(), invalidate(Some(&["k"])));
    // Forgotten once announced: a second write says nothing until the next read.
    writer.call(&["SET", "k", "2"]);
    reader.no_push();
    assert_eq!(
        reader.call(&["MGET", "k", "j"]),
        Frame::Array(vec![bulk("2"), Frame::Null])
    );
    writer.call(&["MSET", "k", "3", "j", "4"]);
    assert_eq!(reader.push(), invalidate(Some(&["k"])));
    assert_eq!(reader.push(), invalidate(Some(&["j"])));
    // Every read-only command remembers its keys; deletes and deadlines are changes.
    for (read, change) in [
        (&["STRLEN", "k"][..], &["DEL", "k"][..]),
        (&["EXISTS", "j"], &["PEXPIRE", "j", "100000"]),
        (&["TTL", "j"], &["PERSIST", "j"]),
        (&["GETRANGE", "j", "0", "-1"], &["APPEND", "j", "x"]),
        (&["TYPE", "j"], &["SETRANGE", "j", "0", "9"]),
    ] {
        reader.call(read);
        writer.call(change);
        assert_eq!(
            reader.push(),
            invalidate(Some(&[read[1]])),
            "{read:?} then {change:?}"
        );
    }
    // A change to a key nobody read says nothing.
    writer.call(&["SET", "unread", "1"]);
    reader.no_push();
    // Writes do not remember: GETDEL reads, but it is a write.
    writer.call(&["SET", "g", "1"]);
    reader.call(&["GETDEL", "g"]);
    writer.call(&["SET", "g", "2"]);
    reader.no_push();
    // FLUSHALL tells every tracking client that everything changed.
    reader.call(&["GET", "k"]);
    writer.call(&["FLUSHALL"]);
    assert_eq!(reader.push(), invalidate(None));
    let mut admin = server.client();
    assert_eq!(info_field(&mut admin, "tracking_clients"), "1");
    assert_eq!(info_field(&mut admin, "tracking_total_keys"), "0");
}

#[test]
fn a_clients_own_write_is_announced_after_its_reply_unless_noloop() {
    let server = Server::start();
    let mut c = Conn::open(&server, true);
    c.call(&["CLIENT", "TRACKING", "ON"]);
    c.call(&["GET", "k"]);
    // The reply comes first, then the push, as in Redis 7.
    c.send(&["SET", "k", "1"]);
    assert_eq!(c.next_frame(Duration::from_secs(5)), Some(ok()));
    assert_eq!(
        c.next_frame(Duration::from_secs(5)),
        Some(invalidate(Some(&["k"])))
    );
    // Inside a transaction, after EXEC's reply.
    c.call(&["GET", "k"]);
    c.call(&["MULTI"]);
    c.call(&["SET", "k", "2"]);
    c.call(&["GET", "k"]);
    c.send(&["EXEC"]);
    assert_eq!(
        c.next_frame(Duration::from_secs(5)),
        Some(Frame::Array(vec![ok(), bulk("2")]))
    );
    assert_eq!(c.push(), invalidate(Some(&["k"])));
    // NOLOOP: not told of its own writes, but still of others'.
    assert_eq!(c.call(&["CLIENT", "TRACKING", "ON", "NOLOOP"]), ok());
    c.call(&["GET", "k"]);
    c.call(&["SET", "k", "3"]);
    c.no_push();
    c.call(&["GET", "k"]);
    Conn::open(&server, false).call(&["SET", "k", "4"]);
    assert_eq!(c.push(), invalidate(Some(&["k"])));
}

#[test]
fn expired_keys_are_invalidated_whether_met_or_found_by_active_expiry() {
    let server = Server::start();
    let mut reader = Conn::open(&server, true);
    let mut writer = Conn::open(&server, false);
    reader.call(&["CLIENT", "TRACKING", "ON"]);
    writer.call(&["SET", "lazy", "v", "PX", "50"]);
    writer.call(&["SET", "active", "v", "PX", "50"]);
    reader.call(&["GET", "lazy"]);
    reader.call(&["GET", "active"]);
    std::thread::sleep(Duration::from_millis(100));
    // Whichever the active cycle or this read deletes first: one message each.
    writer.call(&["GET", "lazy"]);
    let seen = [reader.push(), reader.push()];
    assert!(seen.contains(&invalidate(Some(&["active"]))), "{seen:?}");
    assert!(seen.contains(&invalidate(Some(&["lazy"]))), "{seen:?}");
    reader.no_push();
}

#[test]
fn optin_and_optout_remember_what_client_caching_says() {
    let server = Server::start();
    let mut c = Conn::open(&server, true);
    let mut writer = Conn::open(&server, false);
    let caching_needs_mode = err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    assert_eq!(c.call(&["CLIENT", "CACHING", "YES"]), caching_needs_mode);
    assert_eq!(c.call(&["CLIENT", "TRACKING", "ON", "OPTIN"]), ok());
    // OPTIN: only the read right after CLIENT CACHING YES is remembered.
    c.call(&["GET", "a"]);
    assert_eq!(c.call(&["CLIENT", "CACHING", "YES"]), ok());
    c.call(&["GET", "b"]);
    c.call(&["GET", "c"]);
    writer.call(&["MSET", "a", "1", "b", "1", "c", "1"]);
    assert_eq!(c.push(), invalidate(Some(&["b"])));
    c.no_push();
    // ... or the whole transaction that follows it.
    c.call(&["CLIENT", "CACHING", "YES"]);
    c.call(&["MULTI"]);
    c.call(&["GET", "a"]);
    c.call(&["GET", "c"]);
    c.call(&["EXEC"]);
    writer.call(&["MSET", "a", "2", "c", "2"]);
    assert_eq!(c.push(), invalidate(Some(&["a"])));
    assert_eq!(c.push(), invalidate(Some(&["c"])));
    assert_eq!(
        c.call(&["CLIENT", "CACHING", "NO"]),
        err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );
    assert_eq!(
        c.call(&["CLIENT", "CACHING", "MAYBE"]),
        err("ERR syntax error")
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "OPTOUT"]),
        err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
    // OPTOUT: everything but the read after CLIENT CACHING NO.
    c.call(&["CLIENT", "TRACKING", "OFF"]);
    assert_eq!(c.call(&["CLIENT", "TRACKING", "ON", "OPTOUT"]), ok());
    c.call(&["CLIENT", "CACHING", "NO"]);
    let info = c.call(&["CLIENT", "TRACKINGINFO"]);
    assert_eq!(
        info,
        Frame::Map(vec![
            (
                bulk("flags"),
                Frame::Set(vec![bulk("on"), bulk("optout"), bulk("caching-no")])
            ),
            (bulk("redirect"), Frame::Integer(0)),
            (bulk("prefixes"), Frame::Array(vec![])),
        ])
    );
    c.call(&["GET", "a"]);
    c.call(&["GET", "b"]);
    writer.call(&["MSET", "a", "3", "b", "3"]);
    assert_eq!(c.push(), invalidate(Some(&["b"])));
    c.no_push();
}

#[test]
fn bcast_announces_every_change_under_a_prefix_one_message_per_prefix() {
    let server = Server::start();
    let mut c = Conn::open(&server, true);
    let mut writer = Conn::open(&server, false);
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "PREFIX", "a:"]),
        err("ERR PREFIX option requires BCAST mode to be enabled")
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "a:b"]),
        err("ERR Prefix 'a:' overlaps with another provided prefix 'a:b'. Prefixes for a single client must not overlap.")
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:"]),
        ok()
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:x"]),
        err("ERR Prefix 'a:x' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.")
    );
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON"]),
        err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
    writer.call(&["MULTI"]);
    for key in ["a:1", "a:2", "b:1", "c:1", "b:2"] {
        writer.call(&["INCR", key]);
    }
    writer.call(&["EXEC"]);
    let batches = [c.push(), c.push()];
    assert!(
        batches.contains(&invalidate(Some(&["a:1", "a:2"]))),
        "{batches:?}"
    );
    assert!(
        batches.contains(&invalidate(Some(&["b:1", "b:2"]))),
        "{batches:?}"
    );
    c.no_push();
    // Its own writes too, unless NOLOOP.
    c.call(&["SET", "a:3", "x"]);
    assert_eq!(c.push(), invalidate(Some(&["a:3"])));
    c.call(&["CLIENT", "TRACKING", "OFF"]);
    c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"]);
    let info = c.call(&["CLIENT", "TRACKINGINFO"]);
    assert_eq!(
        info,
        Frame::Map(vec![
            (
                bulk("flags"),
                Frame::Set(vec![bulk("on"), bulk("bcast"), bulk("noloop")])
            ),
            (bulk("redirect"), Frame::Integer(0)),
            (bulk("prefixes"), Frame::Array(vec![bulk("")])),
        ])
    );
    c.call(&["SET", "mine", "x"]);
    writer.call(&["SET", "theirs", "x"]);
    assert_eq!(c.push(), invalidate(Some(&["theirs"])));
    let mut admin = server.client();
    assert_eq!(info_field(&mut admin, "tracking_total_prefixes"), "1");
}

#[test]
fn redirected_messages_go_to_the_target_and_a_departed_target_is_reported() {
    let server = Server::start();
    let mut tracker = Conn::open(&server, false);
    let mut target = Conn::open(&server, true);
    let target_id = target.id();
    assert_eq!(
        tracker.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", "999999"]),
        err("ERR The client ID you want redirect to does not exist")
    );
    let id = target_id.to_string();
    assert_eq!(
        tracker.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id, "REDIRECT", &id]),
        err("ERR A client can only redirect to a single other client")
    );
    assert_eq!(
        tracker.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &id]),
        ok()
    );
    assert_eq!(
        tracker.call(&["CLIENT", "GETREDIR"]),
        Frame::Integer(target_id as i64)
    );
    tracker.call(&["GET", "r"]);
    Conn::open(&server, false).call(&["SET", "r", "1"]);
    assert_eq!(target.push(), invalidate(Some(&["r"])));
    drop(target);
    let mut admin = server.client();
    let tracker_id = tracker.id();
    assert!(support::eventually(5, || {
        let list: String = run(&mut admin, &["CLIENT", "LIST", "ID", &id]);
        list.is_empty()
    }));
    // The tracker speaks RESP2 and has no redirection left: nothing can be sent.
    tracker.call(&["GET", "r"]);
    Conn::open(&server, false).call(&["SET", "r", "2"]);
    let list: String = run(
        &mut admin,
        &["CLIENT", "LIST", "ID", &tracker_id.to_string()],
    );
    assert!(
        list.contains(" flags=tR ") && list.contains(&format!(" redir={id} ")),
        "{list}"
    );
    // In RESP3 it is told the redirection broke, instead of the invalidation.
    tracker.call(&["HELLO", "3"]);
    tracker.call(&["GET", "r"]);
    Conn::open(&server, false).call(&["SET", "r", "3"]);
    assert_eq!(
        tracker.push(),
        Frame::Push(vec![
            bulk("tracking-redir-broken"),
            Frame::Integer(target_id as i64)
        ])
    );
    // RESET turns tracking off.
    tracker.call(&["RESET"]);
    assert_eq!(tracker.call(&["CLIENT", "GETREDIR"]), Frame::Integer(-1));
    assert_eq!(info_field(&mut admin, "tracking_clients"), "0");
}

#[test]
fn the_table_keeps_at_most_tracking_table_max_keys_invalidating_what_it_drops() {
    let server = Server::start();
    let mut admin = server.client();
    let _: () = run(
        &mut admin,
        &["CONFIG", "SET", "tracking-table-max-keys", "3"],
    );
    let mut c = Conn::open(&server, true);
    c.call(&["CLIENT", "TRACKING", "ON"]);
    let keys: Vec<String> = (0..10).map(|i| format!("key:{i}")).collect();
    for k in &keys {
        c.call(&["GET", k]);
    }
    assert_eq!(info_field(&mut admin, "tracking_total_keys"), "3");
    // The seven forgotten keys were invalidated: a cache that kept them would never
    // hear of their changes.
    let mut dropped: Vec<String> = (0..7)
        .map(|_| match c.push() {
            Frame::Push(p) => match &p[1] {
                Frame::Array(k) => match &k[0] {
                    Frame::Bulk(k) => String::from_utf8(k.clone()).unwrap(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    dropped.sort();
    dropped.dedup();
    assert_eq!(dropped.len(), 7);
    // The three kept are still tracked.
    let mut writer = Conn::open(&server, false);
    for k in keys.iter().filter(|k| !dropped.contains(k)) {
        writer.call(&["SET", k, "x"]);
        assert_eq!(c.push(), invalidate(Some(&[k.as_str()])));
    }
}

#[test]
fn a_lower_limit_forgets_the_keys_over_it_at_once() {
    let server = Server::start();
    let mut admin = server.client();
    let mut c = Conn::open(&server, true);
    c.call(&["CLIENT", "TRACKING", "ON"]);
    // More keys than the table has stripes, which one pass over them would not clear.
    let keys: Vec<String> = (0..300).map(|i| format!("key:{i}")).collect();
    for k in &keys {
        c.call(&["GET", k]);
    }
    assert_eq!(info_field(&mut admin, "tracking_total_keys"), "300");
    let _: () = run(
        &mut admin,
        &["CONFIG", "SET", "tracking-table-max-keys", "1"],
    );
    assert_eq!(info_field(&mut admin, "tracking_total_keys"), "1");
    let mut forgotten: Vec<Frame> = (0..299).map(|_| c.push()).collect();
    forgotten.sort_by_key(|f| format!("{f:?}"));
    forgotten.dedup();
    assert_eq!(forgotten.len(), 299);
    let kept = keys
        .iter()
        .find(|k| !forgotten.contains(&invalidate(Some(&[k.as_str()]))))
        .expect("one key kept");
    let mut writer = Conn::open(&server, false);
    writer.call(&["SET", kept, "x"]);
    assert_eq!(c.push(), invalidate(Some(&[kept.as_str()])));
}

/// Applies an `invalidate` push to a client-side cache.
fn absorb(cache: &mut HashMap<String, Frame>, push: Frame) {
    let Frame::Push(p) = push else {
        panic!("{push:?}");
    };
    match &p[1] {
        Frame::Array(keys) => {
            for k in keys {
                let Frame::Bulk(k) = k else { panic!("{k:?}") };
                cache.remove(std::str::from_utf8(k).unwrap());
            }
        }
        Frame::Null => cache.clear(),
        other => panic!("{other:?}"),
    }
}

/// A client-side cache kept the way client libraries keep one: a value read is
/// cached until its invalidation arrives, messages taken in stream order. Writers
/// race with the reader in bursts; after each burst, once the messages in flight are
/// in, every cached value must be the stored one.
#[test]
fn a_cache_kept_by_invalidations_is_never_left_stale_under_concurrent_writes() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    const WRITERS: usize = 3;
    const BURSTS: usize = 60;
    let server = Server::start();
    let keys: Vec<String> = (0..4).map(|i| format!("hot:{i}")).collect();
    let start = Arc::new(Barrier::new(WRITERS + 1));
    let finished = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (keys, start, finished) = (keys.clone(), start.clone(), finished.clone());
            let mut c = server.client();
            std::thread::spawn(move || {
                for burst in 0..BURSTS {
                    start.wait();
                    for i in 0..40 {
                        let key = &keys[(i + w) % keys.len()];
                        let value = format!("{w}:{burst}:{i}");
                        let _: () = redis::cmd("SET").arg(key).arg(value).query(&mut c).unwrap();
                    }
                    finished.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let mut reader = Conn::open(&server, true);
    reader.call(&["CLIENT", "TRACKING", "ON"]);
    let mut check = server.client();
    let mut cache: HashMap<String, Frame> = HashMap::new();
    for burst in 0..BURSTS {
        start.wait();
        while finished.load(Ordering::SeqCst) < WRITERS * (burst + 1) {
            for k in &keys {
                if !cache.contains_key(k) {
                    let v = reader.call(&["GET", k]);
                    while let Some(p) = reader.pushes.pop_front() {
                        absorb(&mut cache, p);
                    }
                    cache.insert(k.clone(), v);
                }
                while let Some(p) = reader.try_push(Duration::from_micros(100)) {
                    absorb(&mut cache, p);
                }
            }
        }
        // Every write of the burst was acknowledged, so announced: its message is in
        // the reader's stream before the PING's reply or right after it.
        reader.call(&["PING"]);
        while let Some(p) = reader.pushes.pop_front() {
            absorb(&mut cache, p);
        }
        while let Some(p) = reader.try_push(Duration::from_millis(50)) {
            absorb(&mut cache, p);
        }
        for (k, cached) in &cache {
            let stored: Option<Vec<u8>> = run(&mut check, &["GET", k]);
            let stored = stored.map_or(Frame::Null, Frame::Bulk);
            assert_eq!(cached, &stored, "{k} cached stale after burst {burst}");
        }
    }
    for w in writers {
        w.join().unwrap();
    }
}

/// A script's keys are remembered as Redis remembers them: the keys EVAL was given,
/// and only if the script called a read-only command; the keys its commands touch
/// besides are not.
#[test]
fn a_script_that_reads_is_tracked_by_its_declared_keys() {
    let server = Server::start();
    let mut reader = Conn::open(&server, true);
    let mut writer = Conn::open(&server, false);
    assert_eq!(reader.call(&["CLIENT", "TRACKING", "ON"]), ok());
    // Only a write: nothing is remembered.
    reader.call(&["EVAL", "redis.call('set', 'other', 'x')", "2", "k1", "k2"]);
    writer.call(&["MSET", "k1", "1", "k2", "1", "other", "2"]);
    reader.no_push();
    // A read: the declared keys are remembered, not the key it read.
    reader.call(&["EVAL", "return redis.call('get', 'other')", "2", "k1", "k2"]);
    writer.call(&["MSET", "other", "3", "k2", "2", "k1", "2"]);
    assert_eq!(reader.push(), invalidate(Some(&["k2"])));
    assert_eq!(reader.push(), invalidate(Some(&["k1"])));
    reader.no_push();
    // EVAL_RO alike.
    reader.call(&["EVAL_RO", "return redis.call('ping')", "1", "k1"]);
    writer.call(&["SET", "k1", "3"]);
    reader.no_push();
}

/// As Redis: under BCAST, a key a NOLOOP client wrote and then found expired in the
/// same transaction is announced to it (the expiry is no client's change), once, while
/// its other writes are not; a key changed several times goes out once, keys in byte
/// order.
#[test]
fn bcast_noloop_hears_of_its_own_key_expiring_and_each_key_once() {
    let server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut c = Conn::open(&server, true);
    // Only the client's reads delete what expires.
    assert_eq!(c.call(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), ok());
    assert_eq!(
        c.call(&["CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"]),
        ok()
    );
    c.call(&["MULTI"]);
    c.call(&["SET", "mykey", "v", "PX", "1"]);
    c.call(&["SET", "other", "v"]);
    c.call(&["EXEC"]);
    std::thread::sleep(Duration::from_millis(20));
    c.call(&["MULTI"]);
    c.call(&["SET", "mykey2", "v", "PX", "1"]);
    c.call(&["EXEC"]);
    std::thread::sleep(Duration::from_millis(20));
    // Lazy expiry of both, in this client's own command; `other` is not announced.
    assert_eq!(
        c.call(&["MGET", "mykey2", "mykey", "other"]),
        Frame::Array(vec![Frame::Null, Frame::Null, bulk("v")])
    );
    assert_eq!(c.push(), invalidate(Some(&["mykey", "mykey2"])));
    c.no_push();
    let mut writer = Conn::open(&server, false);
    writer.call(&["MULTI"]);
    for key in ["b", "a", "b", "a"] {
        writer.call(&["INCR", key]);
    }
    writer.call(&["EXEC"]);
    assert_eq!(c.push(), invalidate(Some(&["a", "b"])));
    c.no_push();
}
