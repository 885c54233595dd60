//! LEB128 variable-length integers, as LevelDB and protobuf write them: seven bits per
//! byte, low groups first, the high bit set on every byte but the last.

/// The most bytes a `u64` takes.
pub const MAX_LEN: usize = 10;

pub fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The value at the start of `input` and the bytes it took, or `None` when `input` ends
/// inside the number or the number overflows 64 bits.
#[inline]
pub fn get(input: &[u8]) -> Option<(u64, usize)> {
    // Block entries' lengths are mostly below 128: one byte, no loop.
    if let Some(&byte) = input.first() {
        if byte < 0x80 {
            return Some((u64::from(byte), 1));
        }
    }
    let mut value = 0u64;
    for (i, &byte) in input.iter().enumerate().take(MAX_LEN) {
        let bits = u64::from(byte & 0x7f);
        if i == MAX_LEN - 1 && bits > 1 {
            return None;
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(value: u64, tail: Vec<u8>) {
            let mut buf = Vec::new();
            super::put(&mut buf, value);
            prop_assert!(buf.len() <= super::MAX_LEN);
            let len = buf.len();
            buf.extend_from_slice(&tail);
            prop_assert_eq!(super::get(&buf), Some((value, len)));
            // Every proper prefix of the encoding is incomplete.
            for cut in 0..len {
                prop_assert_eq!(super::get(&buf[..cut]), None);
            }
        }
    }

    #[test]
    fn rejects_overflow() {
        assert_eq!(super::get(&[0xff; 10]), None);
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(super::get(&max), Some((u64::MAX, 10)));
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(super::get(&over), None);
    }
}
