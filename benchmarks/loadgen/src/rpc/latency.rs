//! Round-trip times of the measured window, in nanoseconds.
//!
//! Not the WebSocket loadgen's `metrics::Stats`: that one records whole
//! microseconds, which at the 20–60 µs of a serial round trip is up to 5 %
//! of truncation; here the histogram holds nanoseconds (three significant
//! digits: 0.1 % at every magnitude) and the JSON gives µs to 0.1.

use hdrhistogram::Histogram;

/// Round trips above a minute are recorded as a minute (the exact maximum
/// is kept beside the histogram).
const MAX_TRACKABLE_NS: u64 = 60_000_000_000;

pub struct Latency {
    hist: Histogram<u64>,
    sum_ns: u128,
    max_ns: u64,
}

/// A window's figures in µs; `None` without any call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    pub fn new() -> Latency {
        Latency {
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, 3)
                .expect("valid histogram bounds"),
            sum_ns: 0,
            max_ns: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
        self.hist.saturating_record(ns.max(1));
    }

    pub fn summary(&self) -> Summary {
        let count = self.hist.len();
        if count == 0 {
            return Summary::default();
        }
        let us = |ns: u64| Some(ns as f64 / 1000.0);
        let q = |q: f64| us(self.hist.value_at_quantile(q));
        Summary {
            count,
            mean: Some(self.sum_ns as f64 / count as f64 / 1000.0),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: us(self.max_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanosecond_resolution() {
        let mut l = Latency::new();
        assert_eq!(l.summary().count, 0);
        assert_eq!(l.summary().p50, None);
        for ns in [21_300u64, 21_700, 22_100, 25_000, 1_000_000] {
            l.record(ns);
        }
        let s = l.summary();
        assert_eq!(s.count, 5);
        // Within the histogram's 0.1 %, and not truncated to 22 µs.
        assert!((s.p50.unwrap() - 22.1).abs() < 0.03, "{s:?}");
        assert_eq!(s.max, Some(1000.0));
        assert!((s.mean.unwrap() - 218.02).abs() < 1e-9);
    }
}
