//! A table's bloom filter over its user keys. Layout in `table_format.md`.
//!
//! `k` probes per key come from one 64-bit hash by double hashing (Kirsch and
//! Mitzenmacher): probe i tests bit `(h1 + i * h2) mod bits`. With 10 bits per key and
//! k = 7 the false-positive rate is about 0.8%.

/// The filter's key hash: FNV-1a, then the MurmurHash3 finaliser to spread the bits.
/// It is part of the file format and must never change.
pub fn hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Builds the filter for the keys' hashes: the bit array, then k (one byte).
pub fn build(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = ((bits_per_key as f64 * std::f64::consts::LN_2) as u8).clamp(1, 30);
    // At least 64 bits, so a table of few keys does not get a useless filter.
    let bits = (hashes.len() * bits_per_key).max(64).div_ceil(8) * 8;
    let mut filter = vec![0u8; bits / 8];
    for &h in hashes {
        for bit in probes(h, k, bits) {
            filter[bit / 8] |= 1 << (bit % 8);
        }
    }
    filter.push(k);
    filter
}

/// Whether `key_hash` may be in the set `filter` was built from. A filter that is too
/// short to hold anything answers "maybe", so damage can only cost a read.
pub fn may_contain(filter: &[u8], key_hash: u64) -> bool {
    let Some((&k, array)) = filter.split_last() else {
        return true;
    };
    if array.is_empty() || k == 0 || k > 30 {
        return true;
    }
    let bits = array.len() * 8;
    probes(key_hash, k, bits).all(|bit| array[bit / 8] & (1 << (bit % 8)) != 0)
}

fn probes(hash: u64, k: u8, bits: usize) -> impl Iterator<Item = usize> {
    let h1 = hash as u32 as u64;
    let h2 = (hash >> 32) | 1;
    (0..u64::from(k)).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % bits as u64) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<Vec<u8>> = (0..10_000u32)
            .map(|i| format!("key{i}").into_bytes())
            .collect();
        let hashes: Vec<u64> = keys.iter().map(|k| hash(k)).collect();
        let filter = build(&hashes, 10);
        assert!(keys.iter().all(|k| may_contain(&filter, hash(k))));
        let false_positives = (0..10_000u32)
            .filter(|i| may_contain(&filter, hash(format!("other{i}").as_bytes())))
            .count();
        // Expected about 80 (0.8%); 2% leaves room for chance.
        assert!(
            false_positives < 200,
            "{false_positives} false positives in 10000"
        );
    }

    #[test]
    fn the_hash_is_stable() {
        // Stored filters depend on these exact values.
        assert_eq!(hash(b""), 17280346270528514342);
        assert_eq!(hash(b"hotkv"), 15730471272937445057);
    }
}
