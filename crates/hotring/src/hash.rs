//! The 64-bit key hash shared by the index and its baseline, so comparisons between
//! them measure the structure and not the hash.
//!
//! A multiply-fold mix in the style of wyhash: each 8-byte word is folded with a
//! 64x64->128 multiply. The top bits pick the directory slot, the whole value is the
//! ring order's tag, so all 64 bits must be well mixed.

const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;
const K2: u64 = 0x8ebc_6af0_9c88_c6e3;

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let r = (a as u128).wrapping_mul(b as u128);
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn read_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Hashes a key to 64 well-mixed bits.
#[inline]
pub fn hash64(key: &[u8]) -> u64 {
    let len = key.len() as u64;
    let mut h = K0 ^ len.wrapping_mul(K2);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        h = fold(h ^ read_u64(c), K1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        h = fold(h ^ u64::from_le_bytes(tail), K2);
    }
    fold(h ^ K0, len ^ K1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_bits_are_balanced() {
        // The directory uses the top bits: 65536 sequential keys over 256 slots must
        // land within a few standard deviations of 256 each.
        let mut slots = [0u32; 256];
        for i in 0u64..65536 {
            slots[(hash64(&i.to_le_bytes()) >> 56) as usize] += 1;
        }
        let (min, max) = (slots.iter().min().unwrap(), slots.iter().max().unwrap());
        assert!(*min > 256 - 80 && *max < 256 + 80, "min {min} max {max}");
    }

    #[test]
    fn length_and_content_both_matter() {
        assert_ne!(hash64(b""), hash64(b"\0"));
        assert_ne!(hash64(b"abc"), hash64(b"abd"));
        assert_ne!(hash64(&[0u8; 8]), hash64(&[0u8; 9]));
    }
}
