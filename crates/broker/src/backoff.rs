//! Waits between reconnection attempts: 50 ms, doubling, capped.

use std::time::Duration;

const FIRST: Duration = Duration::from_millis(50);

pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(max: Duration) -> Self {
        Self {
            next: FIRST.min(max),
            max,
        }
    }

    /// The wait before the next attempt.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// A connection was made: the next failure starts from the beginning.
    pub(crate) fn reset(&mut self) {
        self.next = FIRST.min(self.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(300));
        let waits: Vec<u128> = (0..5).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(waits, [50, 100, 200, 300, 300]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 50);
    }
}
