//! The server's request parser on any bytes: it never panics, never claims more bytes
//! than it was given, and what it parses, re-encoded as a multibulk request, parses
//! back to the same arguments. The look-ahead for prefetching agrees with it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resp::{parse_request, Frame, Protocol, RequestLimits};

fuzz_target!(|data: &[u8]| {
    let limits = RequestLimits {
        max_bulk_len: 1 << 20,
        max_args: 1 << 16,
        // Either way: the tighter limits of a client yet to authenticate, or none.
        unauthenticated: data.len() % 2 == 1,
    };
    let mut at = 0;
    while at < data.len() {
        // The look-ahead a connection prefetches by takes a request whole exactly where
        // the parser (with no limit a request this size can pass) parses one.
        let peeked = resp::peek_second_arguments(&data[at..], 1, |_| ());
        if peeked > 0 {
            let (args, n) = parse_request(&data[at..], &RequestLimits::default())
                .expect("a request the look-ahead took parses")
                .expect("a request the look-ahead took is complete");
            assert_eq!(n, peeked);
            assert!(!args.is_empty());
        }
        match parse_request(&data[at..], &limits) {
            Ok(Some((args, used))) => {
                assert!(used > 0 && used <= data.len() - at, "consumed {used} of {}", data.len() - at);
                at += used;
                if args.is_empty() {
                    continue;
                }
                let encoded = Frame::command(&args).to_bytes(Protocol::Resp2);
                // An inline request is not held to the limits of a client yet to
                // authenticate (nor is it in Redis); its multibulk form would be.
                let lenient = RequestLimits {
                    unauthenticated: false,
                    ..limits
                };
                let (again, n) = parse_request(&encoded, &lenient)
                    .expect("re-encoded request parses")
                    .expect("re-encoded request is complete");
                assert_eq!(n, encoded.len());
                assert_eq!(again, args);
            }
            Ok(None) | Err(_) => break,
        }
    }
});
