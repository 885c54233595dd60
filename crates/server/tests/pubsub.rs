//! Publish/subscribe, checked against what Redis 7 sends, in RESP2 (where a
//! subscriber's replies and messages are plain arrays) and RESP3 (pushes).

mod support;

use std::io::Write;
use std::time::Duration;

use resp::Frame;
use support::{eventually, info_field, run, Conn, Server};

fn bulk(s: &str) -> Frame {
    Frame::bulk(s)
}

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

/// A RESP2 message or confirmation: `[kind, parts...]`.
fn array(parts: &[Frame]) -> Frame {
    Frame::Array(parts.to_vec())
}

fn next(c: &mut Conn) -> Frame {
    c.next_frame(Duration::from_secs(5))
        .expect("nothing arrived")
}

fn quiet(c: &mut Conn) {
    if let Some(f) = c.next_frame(Duration::from_millis(200)) {
        panic!("unexpected {f:?}");
    }
}

#[test]
fn a_resp2_subscriber_gets_messages_and_may_run_only_subscription_commands() {
    let server = Server::start();
    let mut sub = Conn::open(&server, false);
    let mut publisher = Conn::open(&server, false);
    sub.send(&["SUBSCRIBE", "ch1", "ch2", "ch1"]);
    for (channel, count) in [("ch1", 1), ("ch2", 2), ("ch1", 2)] {
        assert_eq!(
            next(&mut sub),
            array(&[bulk("subscribe"), bulk(channel), int(count)])
        );
    }
    assert_eq!(
        sub.call(&["GET", "k"]),
        Frame::Error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    assert_eq!(
        sub.call(&["CLIENT", "ID"]),
        Frame::Error("ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    assert_eq!(sub.call(&["PING"]), array(&[bulk("pong"), bulk("")]));
    assert_eq!(
        sub.call(&["PING", "hi"]),
        array(&[bulk("pong"), bulk("hi")])
    );
    sub.send(&["PSUBSCRIBE", "c*", "d?"]);
    assert_eq!(
        next(&mut sub),
        array(&[bulk("psubscribe"), bulk("c*"), int(3)])
    );
    assert_eq!(
        next(&mut sub),
        array(&[bulk("psubscribe"), bulk("d?"), int(4)])
    );
    // One delivery per subscription that matches: the channel's, then the pattern's.
    assert_eq!(publisher.call(&["PUBLISH", "ch1", "hello"]), int(2));
    assert_eq!(
        next(&mut sub),
        array(&[bulk("message"), bulk("ch1"), bulk("hello")])
    );
    assert_eq!(
        next(&mut sub),
        array(&[bulk("pmessage"), bulk("c*"), bulk("ch1"), bulk("hello")])
    );
    assert_eq!(publisher.call(&["PUBLISH", "nobody", "x"]), int(0));
    let mut channels = match publisher.call(&["PUBSUB", "CHANNELS", "ch*"]) {
        Frame::Array(c) => c,
        other => panic!("{other:?}"),
    };
    channels.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(channels, vec![bulk("ch1"), bulk("ch2")]);
    assert_eq!(
        publisher.call(&["PUBSUB", "NUMSUB", "ch1", "zz"]),
        array(&[bulk("ch1"), int(1), bulk("zz"), int(0)])
    );
    assert_eq!(publisher.call(&["PUBSUB", "NUMPAT"]), int(2));
    let mut admin = server.client();
    let list: String = run(&mut admin, &["CLIENT", "LIST", "TYPE", "pubsub"]);
    assert!(
        list.contains(" flags=P ") && list.contains(" sub=2 psub=2 ssub=0 "),
        "{list}"
    );
    assert_eq!(info_field(&mut admin, "pubsub_channels"), "2");
    assert_eq!(info_field(&mut admin, "pubsub_patterns"), "2");
    // Unsubscribing from everything (in any order, as Redis), then from nothing.
    sub.send(&["UNSUBSCRIBE"]);
    let mut names = Vec::new();
    for count in [3, 2] {
        match next(&mut sub) {
            Frame::Array(parts) if parts[0] == bulk("unsubscribe") && parts[2] == int(count) => {
                names.push(parts[1].clone())
            }
            other => panic!("{other:?}"),
        }
    }
    names.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(names, vec![bulk("ch1"), bulk("ch2")]);
    sub.send(&["PUNSUBSCRIBE"]);
    for count in [1, 0] {
        match next(&mut sub) {
            Frame::Array(parts) if parts[0] == bulk("punsubscribe") && parts[2] == int(count) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        sub.call(&["UNSUBSCRIBE"]),
        array(&[bulk("unsubscribe"), Frame::Null, int(0)])
    );
    // No longer subscribed: any command again.
    assert_eq!(sub.call(&["GET", "k"]), Frame::Null);
    assert_eq!(info_field(&mut admin, "pubsub_channels"), "0");
}

#[test]
fn a_resp3_subscriber_gets_pushes_and_may_run_anything() {
    let server = Server::start();
    let mut sub = Conn::open(&server, true);
    let mut publisher = Conn::open(&server, false);
    sub.send(&["SUBSCRIBE", "ch"]);
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("subscribe"), bulk("ch"), int(1)])
    );
    assert_eq!(sub.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(sub.call(&["GET", "k"]), Frame::Null);
    sub.send(&["SSUBSCRIBE", "s1", "s2"]);
    // Shard channels are counted apart.
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("ssubscribe"), bulk("s1"), int(1)])
    );
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("ssubscribe"), bulk("s2"), int(2)])
    );
    assert_eq!(publisher.call(&["SPUBLISH", "s1", "m"]), int(1));
    assert_eq!(
        sub.push(),
        Frame::Push(vec![bulk("smessage"), bulk("s1"), bulk("m")])
    );
    // A shard channel and a channel of the same name are different things.
    assert_eq!(publisher.call(&["PUBLISH", "s1", "m"]), int(0));
    assert_eq!(publisher.call(&["PUBLISH", "ch", "m"]), int(1));
    assert_eq!(
        sub.push(),
        Frame::Push(vec![bulk("message"), bulk("ch"), bulk("m")])
    );
    assert_eq!(
        publisher.call(&["PUBSUB", "SHARDNUMSUB", "s1", "ch"]),
        array(&[bulk("s1"), int(1), bulk("ch"), int(0)])
    );
    assert_eq!(
        publisher.call(&["PUBSUB", "SHARDCHANNELS", "s2"]),
        array(&[bulk("s2")])
    );
    // RESET drops every subscription, silently.
    assert_eq!(sub.call(&["RESET"]), Frame::Simple("RESET".into()));
    assert_eq!(publisher.call(&["PUBLISH", "ch", "m"]), int(0));
    assert_eq!(publisher.call(&["SPUBLISH", "s2", "m"]), int(0));
    quiet(&mut sub);
}

/// Under CLIENT REPLY OFF a client still gets its subscription confirmations and
/// messages, which are pushes, not replies (as in Redis, in RESP2 too); its replies
/// stay dropped.
#[test]
fn client_reply_off_drops_replies_but_not_pushes() {
    let server = Server::start();
    let mut resp2 = Conn::open(&server, false);
    resp2.send(&["CLIENT", "REPLY", "SKIP"]);
    resp2.send(&["PSUBSCRIBE", "*"]);
    assert_eq!(
        next(&mut resp2),
        array(&[bulk("psubscribe"), bulk("*"), int(1)])
    );
    let mut sub = Conn::open(&server, true);
    let mut publisher = Conn::open(&server, false);
    sub.send(&["CLIENT", "REPLY", "OFF"]);
    sub.send(&["SUBSCRIBE", "ch"]);
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("subscribe"), bulk("ch"), int(1)])
    );
    sub.send(&["PSUBSCRIBE", "c*", "d*"]);
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("psubscribe"), bulk("c*"), int(2)])
    );
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("psubscribe"), bulk("d*"), int(3)])
    );
    sub.send(&["PING"]);
    // The RESP2 client's pattern matches too.
    assert_eq!(publisher.call(&["PUBLISH", "ch", "m"]), int(3));
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("message"), bulk("ch"), bulk("m")])
    );
    assert_eq!(
        next(&mut sub),
        Frame::Push(vec![bulk("pmessage"), bulk("c*"), bulk("ch"), bulk("m")])
    );
    quiet(&mut sub);
}

#[test]
fn messages_come_in_order_and_none_after_the_unsubscribe_confirmation() {
    let server = Server::start();
    let mut sub = Conn::open(&server, false);
    let mut publisher = Conn::open(&server, false);
    sub.call(&["SUBSCRIBE", "ch"]);
    for i in 0..100 {
        assert_eq!(publisher.call(&["PUBLISH", "ch", &i.to_string()]), int(1));
    }
    sub.send(&["UNSUBSCRIBE", "ch"]);
    // Published (and acknowledged) before the UNSUBSCRIBE ran: all of them first.
    for i in 0..100 {
        assert_eq!(
            next(&mut sub),
            array(&[bulk("message"), bulk("ch"), bulk(&i.to_string())])
        );
    }
    assert_eq!(
        next(&mut sub),
        array(&[bulk("unsubscribe"), bulk("ch"), int(0)])
    );
    assert_eq!(publisher.call(&["PUBLISH", "ch", "late"]), int(0));
    quiet(&mut sub);
}

#[test]
fn subscriptions_end_with_the_connection_and_client_kill_type_pubsub() {
    let server = Server::start();
    let mut admin = server.client();
    let mut publisher = Conn::open(&server, false);
    {
        let mut sub = Conn::open(&server, false);
        sub.call(&["SUBSCRIBE", "gone"]);
        sub.call(&["PSUBSCRIBE", "g*"]);
        assert_eq!(publisher.call(&["PUBLISH", "gone", "x"]), int(2));
    }
    assert!(eventually(5, || publisher.call(&["PUBLISH", "gone", "x"]) == int(0)));
    assert_eq!(info_field(&mut admin, "pubsub_patterns"), "0");
    let mut sub = Conn::open(&server, false);
    sub.call(&["SUBSCRIBE", "victim"]);
    let killed: i64 = run(&mut admin, &["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert_eq!(killed, 1);
    let normal: String = run(&mut admin, &["CLIENT", "LIST", "TYPE", "normal"]);
    assert_eq!(normal.lines().count(), 2, "{normal}");
    assert!(eventually(5, || publisher
        .call(&["PUBLISH", "victim", "x"])
        == int(0)));
}

/// Sets the pub/sub output limit to `limit`, subscribes a client that never reads,
/// and publishes 64 KB messages until that client is dropped, pausing 10 ms after
/// each while more than `slow_past` bytes wait for it (so that what waits grows
/// slowly); returns the most CLIENT LIST's omem showed for it.
fn flood_a_subscriber_until_dropped(server: &Server, limit: &str, slow_past: u64) -> u64 {
    let mut admin = server.client();
    let _: () = run(
        &mut admin,
        &["CONFIG", "SET", "client-output-buffer-limit", limit],
    );
    let mut sleeper = server.raw();
    sleeper
        .write_all(b"CLIENT SETNAME sleeper\r\nSUBSCRIBE flood\r\n")
        .unwrap();
    assert!(eventually(5, || {
        let n: i64 = run(&mut admin, &["PUBLISH", "flood", "x"]);
        n == 1
    }));
    // The socket buffers fill first (and may grow and swallow what waited), then
    // what waits shows in omem.
    let payload = "x".repeat(64 * 1024);
    let mut most_waiting = 0;
    let started = std::time::Instant::now();
    loop {
        assert!(started.elapsed().as_secs() < 60, "never dropped");
        let n: i64 = run(&mut admin, &["PUBLISH", "flood", &payload]);
        if n == 0 {
            return most_waiting;
        }
        let list: String = run(&mut admin, &["CLIENT", "LIST"]);
        let Some(line) = list.lines().find(|l| l.contains(" name=sleeper ")) else {
            return most_waiting;
        };
        let omem: u64 = line
            .split(' ')
            .find_map(|f| f.strip_prefix("omem="))
            .unwrap()
            .parse()
            .unwrap();
        most_waiting = most_waiting.max(omem);
        if omem > slow_past {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

#[test]
fn a_subscriber_that_does_not_read_is_dropped_at_the_pubsub_output_limit() {
    let server = Server::start();
    let most_waiting = flood_a_subscriber_until_dropped(&server, "pubsub 1mb 512kb 60", u64::MAX);
    let limits: Vec<String> = run(
        &mut server.client(),
        &["CONFIG", "GET", "client-output-buffer-limit"],
    );
    assert!(
        limits[1].ends_with("pubsub 1048576 524288 60"),
        "{limits:?}"
    );
    // What waited showed as it piled up, and never went past the hard limit.
    assert!(
        (512 * 1024..=1024 * 1024).contains(&most_waiting),
        "omem reached {most_waiting}"
    );
    server.alive();
}

/// With a soft limit alone, a subscriber kept over it is disconnected once its
/// seconds are up.
#[test]
fn a_subscriber_over_the_soft_output_limit_is_dropped_after_its_seconds() {
    let server = Server::start();
    let most_waiting = flood_a_subscriber_until_dropped(&server, "pubsub 0 100000 1", 100_000);
    assert!(most_waiting > 100_000, "omem reached {most_waiting}");
    server.alive();
}

#[test]
fn tracking_redirected_to_a_resp2_subscriber_arrives_on_the_invalidate_channel() {
    let server = Server::start();
    let mut target = Conn::open(&server, false);
    let target_id = target.id().to_string();
    target.send(&["SUBSCRIBE", "__redis__:invalidate"]);
    next(&mut target);
    let mut tracker = Conn::open(&server, false);
    tracker.call(&["CLIENT", "TRACKING", "ON", "REDIRECT", &target_id]);
    tracker.call(&["GET", "k"]);
    Conn::open(&server, false).call(&["SET", "k", "v"]);
    assert_eq!(
        next(&mut target),
        array(&[
            bulk("message"),
            bulk("__redis__:invalidate"),
            array(&[bulk("k")])
        ])
    );
    tracker.call(&["GET", "k"]);
    Conn::open(&server, false).call(&["FLUSHALL"]);
    assert_eq!(
        next(&mut target),
        array(&[bulk("message"), bulk("__redis__:invalidate"), Frame::Null])
    );
}

#[test]
fn the_redis_crate_subscribes_and_receives() {
    let server = Server::start();
    let mut c = server.client();
    let mut publisher = server.client();
    let mut pubsub = c.as_pubsub();
    pubsub.subscribe("news").unwrap();
    pubsub.psubscribe("sport.*").unwrap();
    pubsub
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let sent: i64 = run(&mut publisher, &["PUBLISH", "news", "hello"]);
    assert_eq!(sent, 1);
    let message = pubsub.get_message().unwrap();
    assert_eq!(message.get_channel_name(), "news");
    assert_eq!(message.get_payload::<String>().unwrap(), "hello");
    let _: i64 = run(&mut publisher, &["PUBLISH", "sport.tennis", "ace"]);
    let message = pubsub.get_message().unwrap();
    assert_eq!(message.get_pattern::<String>().unwrap(), "sport.*");
    assert_eq!(message.get_payload::<String>().unwrap(), "ace");
    pubsub.unsubscribe("news").unwrap();
    pubsub.punsubscribe("sport.*").unwrap();
    drop(pubsub);
    // Back to commands on the same connection.
    let pong: String = run(&mut c, &["PING"]);
    assert_eq!(pong, "PONG");
}
