//! Request distributions: which key an operation touches.

use std::str::FromStr;

use rand::Rng;

use crate::permutation::Permutation;
use crate::zipf::Zipf;

/// How keys are drawn, as named on the command line (`--dist`).
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Every key equally likely.
    Uniform,
    /// Zipfian over key popularity, ranks scattered over the key space
    /// (YCSB's scrambled zipfian): `zipf:THETA`.
    Zipf { theta: f64 },
    /// Zipfian with rank r at key r-1, so popular keys are adjacent: `zipf-ordered:THETA`.
    ZipfOrdered { theta: f64 },
    /// YCSB's latest: zipfian over recency, the newest key most popular: `latest`.
    Latest,
    /// A hot set of `hot_fraction` of the keys draws `hot_op_fraction` of the
    /// operations, uniformly within each set: `hotspot:HOT_FRACTION:HOT_OP_FRACTION`.
    /// Seed 001's workload is 50,000 keys with `hotspot:X:0.8`.
    Hotspot {
        hot_fraction: f64,
        hot_op_fraction: f64,
    },
}

impl FromStr for Distribution {
    type Err = String;

    fn from_str(s: &str) -> Result<Distribution, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let num = |p: &str, what: &str| -> Result<f64, String> {
            p.parse::<f64>()
                .map_err(|_| format!("{what} in '{s}' is not a number: '{p}'"))
        };
        let fraction = |p: &str, what: &str| -> Result<f64, String> {
            let f = num(p, what)?;
            if (0.0..=1.0).contains(&f) {
                Ok(f)
            } else {
                Err(format!("{what} in '{s}' must be between 0 and 1, got {f}"))
            }
        };
        let theta = |p: &str| -> Result<f64, String> {
            let t = num(p, "theta")?;
            if t > 0.0 && t.is_finite() {
                Ok(t)
            } else {
                Err(format!("theta in '{s}' must be positive, got {t}"))
            }
        };
        match parts.as_slice() {
            ["uniform"] => Ok(Distribution::Uniform),
            ["latest"] => Ok(Distribution::Latest),
            ["zipf", t] => Ok(Distribution::Zipf { theta: theta(t)? }),
            ["zipf-ordered", t] => Ok(Distribution::ZipfOrdered { theta: theta(t)? }),
            ["hotspot", h, o] => Ok(Distribution::Hotspot {
                hot_fraction: fraction(h, "hot fraction")?,
                hot_op_fraction: fraction(o, "hot operation fraction")?,
            }),
            _ => Err(format!(
                "unknown distribution '{s}': expected uniform, latest, zipf:THETA, \
                 zipf-ordered:THETA or hotspot:HOT_FRACTION:HOT_OP_FRACTION"
            )),
        }
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Distribution::Uniform => write!(f, "uniform"),
            Distribution::Latest => write!(f, "latest"),
            Distribution::Zipf { theta } => write!(f, "zipf:{theta}"),
            Distribution::ZipfOrdered { theta } => write!(f, "zipf-ordered:{theta}"),
            Distribution::Hotspot {
                hot_fraction,
                hot_op_fraction,
            } => {
                write!(f, "hotspot:{hot_fraction}:{hot_op_fraction}")
            }
        }
    }
}

/// Draws key indexes in `0..n` for one distribution.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    n: u64,
    kind: Kind,
    scramble: Permutation,
}

#[derive(Clone, Debug)]
enum Kind {
    Uniform,
    Zipf(Zipf, bool),
    Latest(Zipf),
    Hotspot { hot: u64, hot_op_fraction: f64 },
}

impl KeyChooser {
    /// A chooser over `n` keys; `seed` fixes which keys the scrambled ranks land on.
    pub fn new(dist: &Distribution, n: u64, seed: u64) -> KeyChooser {
        assert!(n >= 1, "no keys to choose from");
        let kind = match *dist {
            Distribution::Uniform => Kind::Uniform,
            Distribution::Zipf { theta } => Kind::Zipf(Zipf::new(n, theta), true),
            Distribution::ZipfOrdered { theta } => Kind::Zipf(Zipf::new(n, theta), false),
            Distribution::Latest => Kind::Latest(Zipf::new(n, 0.99)),
            Distribution::Hotspot {
                hot_fraction,
                hot_op_fraction,
            } => Kind::Hotspot {
                hot: ((n as f64 * hot_fraction).round() as u64).clamp(1, n),
                hot_op_fraction,
            },
        };
        KeyChooser {
            n,
            kind,
            scramble: Permutation::new(n, seed),
        }
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    /// A key index in `0..n`. `newest` is the number of keys inserted so far (for
    /// `latest`); `offset` rotates the key space, which is how a hotspot shift moves
    /// the hot set onto other keys.
    pub fn choose(&self, rng: &mut impl Rng, newest: u64, offset: u64) -> u64 {
        let index = match &self.kind {
            Kind::Uniform => rng.gen_range(0..self.n),
            Kind::Zipf(z, scrambled) => {
                let rank = z.sample(rng) - 1;
                if *scrambled {
                    self.scramble.apply(rank)
                } else {
                    rank
                }
            }
            Kind::Latest(z) => {
                // The newest key is rank 1; older keys follow.
                let newest = newest.clamp(1, self.n);
                let back = z.sample(rng) - 1;
                return if back < newest {
                    newest - 1 - back
                } else {
                    rng.gen_range(0..newest)
                };
            }
            Kind::Hotspot {
                hot,
                hot_op_fraction,
            } => {
                let i = if *hot == self.n || rng.gen::<f64>() < *hot_op_fraction {
                    rng.gen_range(0..*hot)
                } else {
                    rng.gen_range(*hot..self.n)
                };
                self.scramble.apply(i)
            }
        };
        (index + offset) % self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn parses_and_prints_every_form() {
        for s in [
            "uniform",
            "latest",
            "zipf:0.99",
            "zipf:1.22",
            "zipf-ordered:0.5",
            "hotspot:0.01:0.8",
        ] {
            let d: Distribution = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
        for bad in [
            "zipf",
            "zipf:-1",
            "zipf:x",
            "hotspot:2:0.5",
            "hotspot:0.1",
            "gauss",
        ] {
            let err = bad.parse::<Distribution>().unwrap_err();
            assert!(
                err.contains(bad.split(':').next().unwrap()) || err.contains("must"),
                "{err}"
            );
        }
    }

    #[test]
    fn hotspot_sends_the_hot_share_to_the_hot_set() {
        // Seed 001's workload: 50,000 keys, 20% hot, drawn 80% of the time.
        let n = 50_000;
        let d = Distribution::Hotspot {
            hot_fraction: 0.2,
            hot_op_fraction: 0.8,
        };
        let c = KeyChooser::new(&d, n, 7);
        let hot: std::collections::HashSet<u64> =
            (0..10_000).map(|i| c.scramble.apply(i)).collect();
        let mut rng = SmallRng::seed_from_u64(3);
        let draws = 200_000;
        let hits = (0..draws)
            .filter(|_| hot.contains(&c.choose(&mut rng, n, 0)))
            .count();
        assert!((hits as f64 / draws as f64 - 0.8).abs() < 0.01, "{hits}");
    }

    #[test]
    fn uniform_covers_evenly() {
        let c = KeyChooser::new(&Distribution::Uniform, 100, 0);
        let mut rng = SmallRng::seed_from_u64(5);
        let mut counts = [0u32; 100];
        for _ in 0..100_000 {
            counts[c.choose(&mut rng, 100, 0) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&x| (850..1150).contains(&x)),
            "{counts:?}"
        );
    }

    #[test]
    fn latest_prefers_the_newest_keys() {
        let c = KeyChooser::new(&Distribution::Latest, 10_000, 0);
        let mut rng = SmallRng::seed_from_u64(9);
        let newest = 5_000;
        let recent = (0..10_000).filter(|_| {
            let k = c.choose(&mut rng, newest, 0);
            assert!(k < newest);
            k >= newest - 50
        });
        // The 50 newest keys are zipf ranks 1..=50.
        let want = crate::zipf::top_share(10_000, 50, 0.99);
        assert!(
            (recent.count() as f64 / 10_000.0 - want).abs() < 0.03,
            "want {want}"
        );
    }

    #[test]
    fn an_offset_moves_the_hot_key() {
        let c = KeyChooser::new(&Distribution::Zipf { theta: 1.22 }, 1000, 11);
        let mut rng = SmallRng::seed_from_u64(1);
        let top = |offset: u64, rng: &mut SmallRng| {
            let mut counts = vec![0u32; 1000];
            for _ in 0..20_000 {
                counts[c.choose(rng, 1000, offset) as usize] += 1;
            }
            (0..1000).max_by_key(|&i| counts[i]).unwrap()
        };
        let before = top(0, &mut rng);
        let after = top(500, &mut rng);
        assert_eq!((before + 500) % 1000, after as u64 as usize);
    }
}
