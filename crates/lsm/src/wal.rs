//! The write-ahead log's framing, shared by its writer and reader. The format is in
//! `wal_format.md` beside this file.

pub const BLOCK_SIZE: usize = 32 * 1024;
pub const HEADER_SIZE: usize = 8;

pub const FULL: u8 = 1;
pub const FIRST: u8 = 2;
pub const MIDDLE: u8 = 3;
pub const LAST: u8 = 4;

/// Bytes before a logical record's entries: sequence (8) and count (4).
pub const RECORD_PREFIX: usize = 12;

/// LevelDB's checksum mask: a CRC over bytes that contain CRCs would be weak, so the
/// stored value is rotated and offset.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

pub fn fragment_checksum(kind: u8, data: &[u8]) -> u32 {
    mask(crc32c::crc32c_append(crc32c::crc32c(&[kind]), data))
}

/// CRC-8 (polynomial x^8 + x^2 + x + 1) of the length and type, inverted so an
/// all-zero header never passes.
pub fn header_check(length: u16, kind: u8) -> u8 {
    let mut crc = 0u8;
    for byte in [length as u8, (length >> 8) as u8, kind] {
        crc ^= byte;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc ^ 0xff
}

pub fn file_name(number: u64) -> String {
    format!("{number:06}.wal")
}

/// The number in a log file's name, if `name` is one.
pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".wal")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every change to one byte of the checked header bytes changes the check.
    #[test]
    fn header_check_catches_any_single_byte_change() {
        for (length, kind) in [(0u16, FULL), (100, FIRST), (32760, LAST), (513, MIDDLE)] {
            let good = header_check(length, kind);
            let bytes = [length as u8, (length >> 8) as u8, kind];
            for at in 0..3 {
                for delta in 1..=255u8 {
                    let mut b = bytes;
                    b[at] ^= delta;
                    let changed = header_check(u16::from_le_bytes([b[0], b[1]]), b[2]);
                    assert_ne!(
                        changed, good,
                        "length {length} kind {kind} byte {at} ^ {delta}"
                    );
                }
            }
        }
        assert_ne!(header_check(0, 0), 0);
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(file_name(7), "000007.wal");
        assert_eq!(parse_file_name("000007.wal"), Some(7));
        assert_eq!(parse_file_name("1234567.wal"), Some(1234567));
        assert_eq!(parse_file_name(".wal"), None);
        assert_eq!(parse_file_name("x1.wal"), None);
        assert_eq!(parse_file_name("000007.sst"), None);
    }
}
