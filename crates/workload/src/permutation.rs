//! A seeded bijection on `0..n`, without a table: a Feistel network over the next
//! power of two, cycle-walked back into range. Scrambles zipfian ranks over the key
//! space and moves the hot set when the hotspot shifts.

#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    round_keys: [u64; 4],
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        assert!(n >= 1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut round_keys = [0; 4];
        for (i, k) in round_keys.iter_mut().enumerate() {
            *k = mix(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        Permutation {
            n,
            half_bits,
            round_keys,
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.round_keys {
            (l, r) = (r, l ^ (mix(r ^ k) & mask));
        }
        (l << self.half_bits) | r
    }

    /// The image of `x` (which must be below `n`).
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.feistel(x);
        // The Feistel domain is at most 4n, so this loop ends after a few steps on average.
        while y >= self.n {
            y = self.feistel(y);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn is_a_bijection(n in 1u64..3000, seed: u64) {
            let p = Permutation::new(n, seed);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                prop_assert!(y < n);
                prop_assert!(!seen[y as usize], "{} hit twice", y);
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn seeds_give_different_orders() {
        let (a, b) = (Permutation::new(1000, 1), Permutation::new(1000, 2));
        assert!((0..1000).filter(|&x| a.apply(x) != b.apply(x)).count() > 900);
    }
}
