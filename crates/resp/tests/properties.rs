//! Property tests: encode/parse round trips over arbitrary frames, every split of the
//! byte stream, and arbitrary or mutated bytes that must never panic either parser.
//! `PROPTEST_CASES` raises the count for longer fuzzing runs.

use proptest::prelude::*;
use resp::{
    parse_frame, parse_integer, parse_request, Frame, FrameLimits, Parsed, Protocol, RequestLimits,
    RequestParser,
};

fn line_text() -> impl Strategy<Value = String> {
    "[^\r\n]{0,20}"
}

fn frame() -> impl Strategy<Value = Frame> {
    let leaf = prop_oneof![
        line_text().prop_map(Frame::Simple),
        line_text().prop_map(Frame::Error),
        any::<i64>().prop_map(Frame::Integer),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Frame::Bulk),
        Just(Frame::Null),
        any::<bool>().prop_map(Frame::Boolean),
        any::<f64>()
            .prop_filter("NaN never equals itself", |x| !x.is_nan())
            .prop_map(Frame::Double),
        "-?[1-9][0-9]{0,40}".prop_map(Frame::BigNumber),
        prop::collection::vec(any::<u8>(), 0..20).prop_map(Frame::BulkError),
        prop::collection::vec(any::<u8>(), 0..20).prop_map(|text| Frame::Verbatim {
            format: *b"txt",
            text
        }),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
            prop::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
        ]
    })
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(512)
}

/// Redis's string2ll, stated plainly: the model the fast parser must agree with.
fn string2ll_model(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if (digits.len() > 1 && digits.starts_with('0')) || s == "-0" {
        return None;
    }
    s.parse().ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn resp3_round_trips_through_any_split(f in frame()) {
        let bytes = f.to_bytes(Protocol::Resp3);
        let limits = FrameLimits::default();
        prop_assert_eq!(parse_frame(&bytes, &limits).unwrap(), Some((f.clone(), bytes.len())));
        for cut in 0..bytes.len() {
            prop_assert_eq!(parse_frame(&bytes[..cut], &limits).unwrap(), None, "cut at {}", cut);
        }
        let mut two = bytes.clone();
        two.extend_from_slice(&bytes);
        prop_assert_eq!(parse_frame(&two, &limits).unwrap().unwrap().1, bytes.len());
    }

    #[test]
    fn resp2_output_is_valid_resp2(f in frame()) {
        let bytes = f.to_bytes(Protocol::Resp2);
        let (parsed, n) = parse_frame(&bytes, &FrameLimits::default()).unwrap().unwrap();
        prop_assert_eq!(n, bytes.len());
        // Only RESP2 types come back.
        fn resp2_only(f: &Frame) -> bool {
            match f {
                Frame::Simple(_) | Frame::Error(_) | Frame::Integer(_) | Frame::Bulk(_) | Frame::Null | Frame::NullArray => true,
                Frame::Array(v) => v.iter().all(resp2_only),
                _ => false,
            }
        }
        prop_assert!(resp2_only(&parsed), "{:?}", parsed);
    }

    #[test]
    fn commands_parse_back_from_any_split(args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 1..8)) {
        let bytes = Frame::command(&args).to_bytes(Protocol::Resp2);
        let limits = RequestLimits::default();
        prop_assert_eq!(parse_request(&bytes, &limits).unwrap(), Some((args.clone(), bytes.len())));
        for cut in 0..bytes.len() {
            prop_assert_eq!(parse_request(&bytes[..cut], &limits).unwrap(), None);
        }
    }

    #[test]
    fn a_stream_read_in_any_pieces_parses_as_it_does_whole(
        requests in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 0..8), 1..5),
        flip in prop::option::of((any::<prop::sample::Index>(), any::<u8>())),
        pieces in prop::collection::vec(1usize..40, 1..64),
        discard in any::<bool>(),
    ) {
        let mut bytes: Vec<u8> = requests
            .iter()
            .flat_map(|args| Frame::command(args).to_bytes(Protocol::Resp2))
            .collect();
        // Sometimes a corrupted byte: the same error must come out either way.
        if let Some((i, b)) = flip {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        let limits = RequestLimits { max_bulk_len: 64, max_args: 16, unauthenticated: false };
        // Whole: a fresh parse at each request's start.
        let whole = outcomes(&bytes, |buf| parse_request(buf, &limits));
        // In pieces, the way a connection reads: what has arrived, minus what was
        // consumed (and, with `discard`, the parsed part of a request not yet whole),
        // parsed by one parser that keeps its place and is given back each request's
        // arguments to fill again.
        let mut parser = RequestParser::default();
        let mut input = Vec::new();
        let mut pieced = Vec::new();
        let mut sizes = pieces.iter().cycle();
        let mut sent = 0;
        'reading: while sent < bytes.len() {
            let n = (*sizes.next().unwrap()).min(bytes.len() - sent);
            input.extend_from_slice(&bytes[sent..sent + n]);
            sent += n;
            let mut consumed = 0;
            loop {
                match parser.parse(&input[consumed..], &limits) {
                    Ok(Some((args, used))) => {
                        consumed += used;
                        pieced.push(Ok(args.clone()));
                        parser.recycle(args);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        pieced.push(Err(e));
                        break 'reading;
                    }
                }
            }
            input.drain(..consumed);
            if discard {
                let parsed = parser.progress().parsed;
                input.drain(..parsed);
                parser.discard(parsed);
            }
        }
        prop_assert_eq!(pieced, whole);
    }

    #[test]
    fn a_look_ahead_sees_what_the_parser_will_parse(
        requests in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 0..5), 1..8),
        // Bytes of the protocol's lines most often: a zero or sign before a length.
        flips in prop::collection::vec((any::<prop::sample::Index>(), prop_oneof![
            any::<u8>(),
            prop::sample::select(b"0123456789$*\r\n-".to_vec()),
        ]), 0..3),
        cut in any::<prop::sample::Index>(),
        max in 1usize..10,
    ) {
        let mut bytes: Vec<u8> = requests
            .iter()
            .flat_map(|args| Frame::command(args).to_bytes(Protocol::Resp2))
            .collect();
        for (i, b) in flips {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        let bytes = &bytes[..cut.index(bytes.len() + 1)];
        let mut seen = Vec::new();
        let scanned = resp::peek_second_arguments(bytes, max, |arg| seen.push(arg.to_vec()));
        // What it looked at, the parser parses into the same requests, whole...
        let limits = RequestLimits::default();
        let mut at = 0;
        let mut parsed = 0;
        let mut seconds = Vec::new();
        while at < scanned {
            let (args, n) = parse_request(&bytes[at..], &limits).unwrap().unwrap();
            prop_assert!(!args.is_empty());
            seconds.extend(args.get(1).cloned());
            at += n;
            parsed += 1;
        }
        prop_assert_eq!(at, scanned);
        prop_assert!(parsed <= max);
        prop_assert_eq!(seen, seconds);
        // ... and it stops short only at the limit or where no multibulk request
        // with arguments follows whole.
        if parsed < max && bytes.get(scanned) == Some(&b'*') {
            if let Ok(Some((args, _))) = parse_request(&bytes[scanned..], &limits) {
                prop_assert!(args.is_empty(), "stopped before {:?}", args);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(Some((_, n))) = parse_frame(&bytes, &FrameLimits::default()) {
            prop_assert!(n <= bytes.len());
        }
        if let Ok(Some((_, n))) = parse_request(&bytes, &RequestLimits::default()) {
            prop_assert!(n <= bytes.len() && n > 0);
        }
        prop_assert!(resp::peek_second_arguments(&bytes, usize::MAX, |_| ()) <= bytes.len());
    }

    #[test]
    fn mutated_frames_never_panic(f in frame(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut bytes = f.to_bytes(Protocol::Resp3);
        for (i, b) in flips {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        if let Ok(Some((_, n))) = parse_frame(&bytes, &FrameLimits::default()) {
            prop_assert!(n <= bytes.len());
        }
        if let Ok(Some((_, n))) = parse_request(&bytes, &RequestLimits::default()) {
            prop_assert!(n <= bytes.len() && n > 0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases() * 8))]

    #[test]
    fn integers_parse_as_string2ll(n in any::<i64>(), junk in "[-+0-9 a]{0,22}") {
        prop_assert_eq!(parse_integer(n.to_string().as_bytes()), Some(n));
        prop_assert_eq!(parse_integer(junk.as_bytes()), string2ll_model(junk.as_bytes()));
        let wide = format!("{n}0");
        prop_assert_eq!(parse_integer(wide.as_bytes()), string2ll_model(wide.as_bytes()));
    }
}

/// Every request of `bytes` parsed by `parse`, each from its own first byte, up to the
/// first error or the end of complete requests.
fn outcomes(
    bytes: &[u8],
    mut parse: impl FnMut(&[u8]) -> Parsed,
) -> Vec<Result<Vec<Vec<u8>>, resp::ProtocolError>> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        match parse(&bytes[at..]) {
            Ok(Some((args, n))) => {
                at += n;
                out.push(Ok(args));
            }
            Ok(None) => return out,
            Err(e) => {
                out.push(Err(e));
                return out;
            }
        }
    }
}
