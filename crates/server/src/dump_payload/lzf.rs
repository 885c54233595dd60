//! LZF, the compression Redis applies to strings of over 20 bytes in DUMP payloads and
//! RDB files (`rdbcompression yes`, its default).
//!
//! The format is a sequence of two kinds of record:
//!
//! ```text
//! 000LLLLL  then L+1 literal bytes                      (a run of 1 to 32 bytes)
//! LLLDDDDD  DDDDDDDD                                    (a reference, L in 1..=6)
//! 111DDDDD  LLLLLLLL  DDDDDDDD                          (a reference, L = 7 + that byte)
//! ```
//!
//! A reference copies L+2 bytes (3 to 264) from D+1 bytes back (1 to 8,192) in what was
//! produced so far; the copy may overlap what it writes (a distance of 1 repeats a
//! byte). Any encoder's output decodes the same: this one finds its references through
//! a table of the last position of each 3-byte prefix, by hash, as a greedy one-pass
//! encoder does; its output need not be Redis's byte for byte.

use super::Refusal;

const MAX_LITERALS: usize = 32;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 264;
const MAX_DISTANCE: usize = 8192;
/// The most bits a position table's index has: 16 Ki entries, as liblzf's.
const MAX_TABLE_BITS: u32 = 14;

/// `input` compressed, if that takes at most `limit` bytes (Redis keeps a string
/// compressed only if it saves 4 bytes or more, so it asks for `len - 4`).
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(limit.min(input.len()));
    // Positions plus one, so 0 is "none". Sized to the input: clearing 64 KB for
    // each 100-byte string made saving a million of them 50x slower.
    let bits = input
        .len()
        .next_power_of_two()
        .trailing_zeros()
        .clamp(4, MAX_TABLE_BITS);
    let mut last_seen = vec![0u32; 1 << bits];
    let mut literals_from = 0;
    let mut i = 0;
    while i + MIN_MATCH <= input.len() {
        let slot = prefix_hash(&input[i..i + MIN_MATCH], bits);
        let candidate = last_seen[slot] as usize;
        last_seen[slot] = (i + 1) as u32;
        let found = candidate.checked_sub(1).filter(|&c| {
            i - c <= MAX_DISTANCE && input[c..c + MIN_MATCH] == input[i..i + MIN_MATCH]
        });
        let Some(from) = found else {
            i += 1;
            continue;
        };
        let longest = MAX_MATCH.min(input.len() - i);
        let len = MIN_MATCH
            + input[from + MIN_MATCH..]
                .iter()
                .zip(&input[i + MIN_MATCH..i + longest])
                .take_while(|(a, b)| a == b)
                .count();
        put_literals(&mut out, &input[literals_from..i]);
        put_reference(&mut out, len, i - from);
        if out.len() > limit {
            return None;
        }
        // The positions inside the match are left out of the table: cheaper, and
        // the next search starts past it anyway.
        i += len;
        literals_from = i;
    }
    put_literals(&mut out, &input[literals_from..]);
    (out.len() <= limit).then_some(out)
}

fn prefix_hash(prefix: &[u8], bits: u32) -> usize {
    let v = u32::from(prefix[0]) << 16 | u32::from(prefix[1]) << 8 | u32::from(prefix[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - bits)) as usize
}

fn put_literals(out: &mut Vec<u8>, literals: &[u8]) {
    for run in literals.chunks(MAX_LITERALS) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

fn put_reference(out: &mut Vec<u8>, len: usize, distance: usize) {
    debug_assert!((MIN_MATCH..=MAX_MATCH).contains(&len));
    debug_assert!((1..=MAX_DISTANCE).contains(&distance));
    let (len, back) = (len - 2, distance - 1);
    let high = (back >> 8) as u8;
    if len < 7 {
        out.push((len as u8) << 5 | high);
    } else {
        out.push(7 << 5 | high);
        out.push((len - 7) as u8);
    }
    out.push(back as u8);
}

/// The `len` bytes LZF data decodes to; refused if it is corrupt or decodes to any
/// other length.
pub fn decompress(input: &[u8], len: usize) -> Result<Vec<u8>, Refusal> {
    const BAD: Refusal = Refusal::BadFormat("the compressed value is corrupt");
    // A reference of 3 input bytes yields at most 264 output bytes: a declared length
    // beyond that ratio is a lie, refused before allocating for it.
    if len > input.len().saturating_mul(88) {
        return Err(BAD);
    }
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let control = usize::from(input[i]);
        i += 1;
        if control < 32 {
            let run = input.get(i..i + control + 1).ok_or(BAD)?;
            if out.len() + run.len() > len {
                return Err(BAD);
            }
            out.extend_from_slice(run);
            i += run.len();
        } else {
            let mut run = control >> 5;
            if run == 7 {
                run += usize::from(*input.get(i).ok_or(BAD)?);
                i += 1;
            }
            let low = usize::from(*input.get(i).ok_or(BAD)?);
            i += 1;
            let distance = ((control & 0x1F) << 8 | low) + 1;
            let run = run + 2;
            if distance > out.len() || out.len() + run > len {
                return Err(BAD);
            }
            // Byte by byte: the source may overlap what is being written.
            let from = out.len() - distance;
            for k in 0..run {
                out.push(out[from + k]);
            }
        }
    }
    if out.len() != len {
        return Err(BAD);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn repetitive_text_shrinks_and_comes_back() {
        for input in [
            vec![b'x'; 100],
            b"hello world ".repeat(10),
            vec![b'a'; 100_000],
            (0..50_000u32)
                .flat_map(|i| (i % 300).to_le_bytes())
                .collect(),
        ] {
            let packed = compress(&input, input.len() - 4).expect("it compresses");
            assert!(
                packed.len() * 4 < input.len(),
                "{} of {}",
                packed.len(),
                input.len()
            );
            assert_eq!(decompress(&packed, input.len()), Ok(input));
        }
    }

    #[test]
    fn what_does_not_shrink_is_not_compressed() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        assert_eq!(compress(&noise, noise.len() - 4), None);
        assert_eq!(compress(b"abcdefghijklmnopqrstu", 17), None);
    }

    proptest! {
        /// Any input within any limit: what is returned fits the limit and decodes to
        /// the input. Inputs from a small alphabet, so that references of every length
        /// and distance occur.
        #[test]
        fn every_output_decodes_to_its_input(
            input in prop::collection::vec(0u8..4, 0..20_000),
            slack in 0usize..64,
        ) {
            let limit = input.len().saturating_sub(slack);
            if let Some(packed) = compress(&input, limit) {
                prop_assert!(packed.len() <= limit);
                prop_assert_eq!(decompress(&packed, input.len()), Ok(input));
            }
        }

        #[test]
        fn random_bytes_decode_too(input in prop::collection::vec(any::<u8>(), 0..5_000)) {
            let packed = compress(&input, usize::MAX).expect("no limit");
            prop_assert_eq!(decompress(&packed, input.len()), Ok(input));
        }
    }
}
