//! The frame parser (what a client reads) on any bytes: it never panics or claims more
//! bytes than given, and a parsed frame re-encodes to bytes that parse to a frame with
//! the same encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resp::{parse_frame, FrameLimits, Protocol};

fuzz_target!(|data: &[u8]| {
    let limits = FrameLimits {
        max_bulk_len: 1 << 20,
        max_aggregate_len: 1 << 16,
        max_depth: 32,
    };
    if let Ok(Some((frame, used))) = parse_frame(data, &limits) {
        assert!(used > 0 && used <= data.len());
        let encoded = frame.to_bytes(Protocol::Resp3);
        let (again, n) = parse_frame(&encoded, &limits)
            .expect("re-encoded frame parses")
            .expect("re-encoded frame is complete");
        assert_eq!(n, encoded.len());
        assert_eq!(again.to_bytes(Protocol::Resp3), encoded);
    }
});
