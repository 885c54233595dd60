//! The latency monitor (LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR): for each
//! event, the requests that took at least `latency-monitor-threshold` milliseconds,
//! one sample per second (the worst in it), the last 160 seconds that had one, and
//! the worst ever. Events are `command` and `fast-command`, as Redis splits them by the
//! command's `fast` flag. Threshold 0, the default, keeps it off.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Samples kept per event, as in Redis.
const SAMPLES: usize = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub unix_secs: u64,
    pub ms: u64,
}

struct Series {
    /// Oldest first; at most one per second.
    samples: VecDeque<Sample>,
    max_ms: u64,
}

/// One event's record as LATENCY LATEST reports it.
pub struct Latest {
    pub event: &'static str,
    pub last: Sample,
    pub max_ms: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    /// By event, in the order first seen. Recording is the rare path (a request over
    /// the threshold), so one lock does.
    events: Mutex<Vec<(&'static str, Series)>>,
}

impl LatencyMonitor {
    pub fn record(&self, event: &'static str, ms: u64, unix_secs: u64) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let series = match events.iter().position(|(name, _)| *name == event) {
            Some(i) => &mut events[i].1,
            None => {
                events.push((
                    event,
                    Series {
                        samples: VecDeque::with_capacity(SAMPLES),
                        max_ms: 0,
                    },
                ));
                &mut events.last_mut().expect("just pushed").1
            }
        };
        series.max_ms = series.max_ms.max(ms);
        match series.samples.back_mut() {
            Some(last) if last.unix_secs == unix_secs => last.ms = last.ms.max(ms),
            _ => {
                if series.samples.len() == SAMPLES {
                    series.samples.pop_front();
                }
                series.samples.push_back(Sample { unix_secs, ms });
            }
        }
        debug_assert!(series.samples.len() <= SAMPLES);
    }

    pub fn latest(&self) -> Vec<Latest> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .filter_map(|(event, s)| {
                Some(Latest {
                    event,
                    last: *s.samples.back()?,
                    max_ms: s.max_ms,
                })
            })
            .collect()
    }

    /// The event's samples, oldest first (none for an event never recorded), and its
    /// worst ever.
    pub fn history(&self, event: &[u8]) -> (Vec<Sample>, u64) {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map_or((Vec::new(), 0), |(_, s)| {
                (s.samples.iter().copied().collect(), s.max_ms)
            })
    }

    /// Forgets the named events (all with none given); returns how many it forgot.
    pub fn reset(&self, only: &[Vec<u8>]) -> usize {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let before = events.len();
        events.retain(|(name, _)| {
            !only.is_empty() && !only.iter().any(|o| o.as_slice() == name.as_bytes())
        });
        before - events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_the_worst_and_at_most_160() {
        let m = LatencyMonitor::default();
        m.record("command", 5, 100);
        m.record("command", 9, 100);
        m.record("command", 3, 100);
        m.record("command", 2, 101);
        let (samples, max) = m.history(b"command");
        assert_eq!(
            samples,
            vec![
                Sample {
                    unix_secs: 100,
                    ms: 9
                },
                Sample {
                    unix_secs: 101,
                    ms: 2
                }
            ]
        );
        assert_eq!(max, 9);
        let latest = m.latest();
        assert_eq!(latest.len(), 1);
        assert_eq!(
            (latest[0].event, latest[0].last.ms, latest[0].max_ms),
            ("command", 2, 9)
        );
        for s in 0..200 {
            m.record("command", 1, 1000 + s);
        }
        let (samples, max) = m.history(b"command");
        assert_eq!(samples.len(), SAMPLES);
        assert_eq!(samples[0].unix_secs, 1000 + 200 - SAMPLES as u64);
        assert_eq!(max, 9, "the worst ever outlives its sample");
    }

    #[test]
    fn reset_forgets_the_named_events_or_all() {
        let m = LatencyMonitor::default();
        m.record("command", 5, 100);
        m.record("fast-command", 5, 100);
        assert_eq!(m.reset(&[b"nosuch".to_vec(), b"command".to_vec()]), 1);
        assert_eq!(m.history(b"command").0, vec![]);
        assert_eq!(m.latest().len(), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.latest().is_empty());
    }
}
