//! The deadlines of one I/O thread's connections: a heap of (time, slab
//! key, generation). A connection has at most one entry that counts (the
//! one equal to its armed time); entries of a connection that re-armed
//! earlier, or of a key since reused, are skipped when they surface. A
//! deadline that moves later is not re-armed: its entry fires early, finds
//! nothing due, and the connection arms its next one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, usize, u32)>>,
}

impl Timers {
    /// Arm `key` (of `generation`) for `at` if that is earlier than what it
    /// has armed (`armed`, updated).
    pub(crate) fn arm(
        &mut self,
        armed: &mut Option<Instant>,
        key: usize,
        generation: u32,
        at: Instant,
    ) {
        if armed.is_some_and(|current| current <= at) {
            return;
        }
        *armed = Some(at);
        self.heap.push(Reverse((at, key, generation)));
    }

    /// The next entry due by `now`, removed: (key, generation, its time).
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(usize, u32, Instant)> {
        let Reverse((at, key, generation)) = *self.heap.peek()?;
        if at > now {
            return None;
        }
        self.heap.pop();
        Some((key, generation, at))
    }

    /// How long until the next entry (rounded up to whole milliseconds,
    /// as `epoll_wait` takes them), or `None` when there is none.
    pub(crate) fn timeout(&self, now: Instant) -> Option<Duration> {
        let Reverse((at, ..)) = self.heap.peek()?;
        let wait = at.saturating_duration_since(now);
        Some(Duration::from_millis(
            wait.as_nanos().div_ceil(1_000_000) as u64
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_surface_in_order_and_only_earlier_arming_pushes() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut timers = Timers::default();
        let (mut a, mut b) = (None, None);
        timers.arm(&mut a, 1, 0, ms(50));
        timers.arm(&mut a, 1, 0, ms(80)); // later: ignored
        timers.arm(&mut b, 2, 0, ms(20));
        timers.arm(&mut a, 1, 0, ms(10)); // earlier: pushed
        assert_eq!(a, Some(ms(10)));
        assert_eq!(timers.timeout(t0), Some(Duration::from_millis(10)));
        assert_eq!(timers.pop_due(ms(5)), None);
        assert_eq!(timers.pop_due(ms(60)), Some((1, 0, ms(10))));
        assert_eq!(timers.pop_due(ms(60)), Some((2, 0, ms(20))));
        // The stale 50 ms entry still surfaces; the caller compares it
        // with what the connection armed and skips it.
        assert_eq!(timers.pop_due(ms(60)), Some((1, 0, ms(50))));
        assert_eq!(timers.pop_due(ms(60)), None);
    }

    #[test]
    fn timeouts_round_up_to_whole_milliseconds() {
        let t0 = Instant::now();
        let mut timers = Timers::default();
        let mut armed = None;
        timers.arm(&mut armed, 1, 0, t0 + Duration::from_micros(1500));
        assert_eq!(timers.timeout(t0), Some(Duration::from_millis(2)));
        assert_eq!(
            timers.timeout(t0 + Duration::from_secs(1)),
            Some(Duration::ZERO)
        );
    }
}
