//! The server's request parser on any bytes: it never panics, never claims more bytes
//! than it was given, and what it parses, re-encoded as a multibulk request, parses
//! back to the same arguments.
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
