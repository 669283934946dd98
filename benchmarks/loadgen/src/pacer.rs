//! Open-loop pacing: an aggregate rate held against the clock, not against
//! replies, so a slow server cannot slow the offered load down.

pub struct Pacer {
    start_ns: u64,
    rate: f64,
    sent: u64,
}

impl Pacer {
    /// `rate` messages per second from `start_ns` on; the first is due at once.
    pub fn new(start_ns: u64, rate: f64) -> Pacer {
        Pacer {
            start_ns,
            rate,
            sent: 0,
        }
    }

    /// Messages due by `now_ns` and not yet taken. After a late wake-up the
    /// backlog is due at once: the schedule, not the loop, sets the rate.
    #[inline]
    pub fn due(&self, now_ns: u64) -> u64 {
        let elapsed_s = now_ns.saturating_sub(self.start_ns) as f64 / 1e9;
        let target = (elapsed_s * self.rate).floor() as u64 + 1;
        target.saturating_sub(self.sent)
    }

    /// Marks `n` messages as taken (sent or skipped).
    #[inline]
    pub fn take(&mut self, n: u64) {
        self.sent += n;
    }

    /// When the next message falls due.
    pub fn next_due_ns(&self) -> u64 {
        // due() reaches sent + 1 once elapsed * rate >= sent.
        self.start_ns + (self.sent as f64 / self.rate * 1e9).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_rate() {
        let start = 5_000_000_000;
        let mut p = Pacer::new(start, 1000.0);
        assert_eq!(p.due(start), 1);
        p.take(1);
        assert_eq!(p.due(start + 999_999), 0);
        assert_eq!(p.next_due_ns(), start + 1_000_000);
        assert_eq!(p.due(start + 1_000_000), 1);
        // Woken 10.5 ms late: everything scheduled so far is due at once.
        assert_eq!(p.due(start + 11_500_000), 11);
        p.take(11);
        assert_eq!(p.next_due_ns(), start + 12_000_000);
        assert_eq!(p.due(start + 11_900_000), 0);
    }

    #[test]
    fn total_over_a_second_matches_rate() {
        for rate in [1.0, 333.0, 2500.0, 1_000_000.0] {
            let mut p = Pacer::new(0, rate);
            let mut now = 0;
            // Wake-ups every 1.3 ms, as a coarse timer would give.
            while now < 1_000_000_000 {
                let n = p.due(now);
                p.take(n);
                now += 1_300_000;
            }
            let expected = rate;
            assert!(
                (p.sent as f64 - expected).abs() <= 1.0 + rate * 0.0014,
                "rate {rate}: {}",
                p.sent
            );
        }
    }

    #[test]
    fn clock_before_start() {
        let p = Pacer::new(1_000, 10.0);
        assert_eq!(p.due(0), 1);
    }
}
