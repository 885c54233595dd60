//! INFO's `instantaneous_*` rates, as Redis computes them: every 100 ms the background
//! task samples a running total, and the rate is the mean of the last 16 samples' rates.

use std::sync::Mutex;
use std::time::Instant;

/// Redis's `STATS_METRIC_SAMPLES`.
const SAMPLES: usize = 16;

/// What INFO reports a rate of.
#[derive(Clone, Copy)]
pub enum Metric {
    Commands = 0,
    NetInput = 1,
    NetOutput = 2,
}

const METRICS: usize = 3;

struct Meter {
    last_total: u64,
    /// Per-second rates, a ring of the last `SAMPLES`.
    rates: [f64; SAMPLES],
    next: usize,
}

#[derive(Default)]
struct State {
    last_at: Option<Instant>,
    meters: [Option<Meter>; METRICS],
}

#[derive(Default)]
pub struct Rates {
    state: Mutex<State>,
}

impl Rates {
    /// Records the running totals, indexed by [`Metric`], as of `now`.
    pub fn sample(&self, totals: [u64; METRICS], now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let elapsed = state
            .last_at
            .map(|at| now.saturating_duration_since(at).as_secs_f64());
        state.last_at = Some(now);
        for (meter, total) in state.meters.iter_mut().zip(totals) {
            match (meter.as_mut(), elapsed) {
                (Some(m), Some(secs)) if secs > 0.0 => {
                    // A total reset by CONFIG RESETSTAT reads as no traffic, not as a
                    // negative rate.
                    let delta = total.saturating_sub(m.last_total);
                    m.rates[m.next] = delta as f64 / secs;
                    m.next = (m.next + 1) % SAMPLES;
                    m.last_total = total;
                }
                (Some(m), _) => m.last_total = total,
                (None, _) => {
                    *meter = Some(Meter {
                        last_total: total,
                        rates: [0.0; SAMPLES],
                        next: 0,
                    })
                }
            }
        }
    }

    /// The mean per-second rate over the last samples.
    pub fn rate(&self, metric: Metric) -> f64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.meters[metric as usize]
            .as_ref()
            .map_or(0.0, |m| m.rates.iter().sum::<f64>() / SAMPLES as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_rate_is_the_mean_of_the_last_sixteen_samples() {
        let rates = Rates::default();
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        rates.sample([0, 0, 0], at(0));
        assert_eq!(rates.rate(Metric::Commands), 0.0);
        // 100 commands and 1,000 bytes in per 100 ms: 1,000/s and 10,000 B/s.
        for i in 1..=16 {
            rates.sample([100 * i, 1000 * i, 0], at(100 * i));
        }
        assert!((rates.rate(Metric::Commands) - 1000.0).abs() < 1e-6);
        assert!((rates.rate(Metric::NetInput) - 10_000.0).abs() < 1e-6);
        assert_eq!(rates.rate(Metric::NetOutput), 0.0);
        // Traffic stops: eight idle samples halve the mean, sixteen clear it.
        for i in 17..=24 {
            rates.sample([1600, 16_000, 0], at(100 * i));
        }
        assert!((rates.rate(Metric::Commands) - 500.0).abs() < 1e-6);
        for i in 25..=32 {
            rates.sample([0, 0, 0], at(100 * i));
        }
        assert_eq!(rates.rate(Metric::Commands), 0.0, "a reset is no traffic");
    }
}
