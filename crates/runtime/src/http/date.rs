//! The clock of a thread's responses: the `Date` of every response (RFC
//! 9110 §6.6.1), formatted once per second per thread instead of once per
//! response, and the instant a response ends for the latency histogram
//! (`metrics.rs`). The clock is read once per batch: a worker handling a
//! batch of requests (corked) reads it for the first response only.
//! Outside a batch (a response from a timer or after an await, or the I/O
//! thread's own) every response reads it.
//!
//! One read serves both: the monotonic clock is read, and the wall clock
//! is derived from it and an anchor taken when the second last changed
//! (so the wall clock is read about once per second, and a step of the
//! system clock shows within a second).

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use switchboard_proto::http1::HttpDate;

struct Cached {
    /// The wall clock at `anchor`.
    wall_at_anchor: Duration,
    /// `date` was found current at this instant.
    checked_at: Instant,
    anchor: Instant,
    /// The second `date` shows.
    secs: u64,
    date: HttpDate,
}

thread_local! {
    static CACHED: RefCell<Option<Cached>> = const { RefCell::new(None) };
    /// The clock as read since the current batch began, if it was.
    static BATCH_NOW: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// A batch begins (the thread corks): the next response reads the clock.
pub(crate) fn batch_began() {
    BATCH_NOW.with(|now| now.set(None));
}

/// The time of this batch: read at its first response (and at every one
/// outside a batch).
pub(crate) fn now() -> Instant {
    if crate::connection::is_corked() {
        if let Some(now) = BATCH_NOW.with(Cell::get) {
            return now;
        }
        let now = Instant::now();
        BATCH_NOW.with(|cell| cell.set(Some(now)));
        now
    } else {
        Instant::now()
    }
}

/// Run `f` with the date of `now` (this thread's clock, [`now`]).
pub(crate) fn with_date_at<R>(now: Instant, f: impl FnOnce(&HttpDate) -> R) -> R {
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        // The responses of a batch share `now`: the first one checks.
        let fresh = cached.as_ref().is_some_and(|c| {
            c.checked_at == now || {
                let wall = c.wall_at_anchor + now.saturating_duration_since(c.anchor);
                wall.as_secs() == c.secs
            }
        });
        if fresh {
            if let Some(c) = cached.as_mut() {
                c.checked_at = now;
            }
        }
        if !fresh {
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let secs = wall.as_secs();
            *cached = Some(Cached {
                wall_at_anchor: wall,
                checked_at: now,
                anchor: Instant::now(),
                secs,
                date: HttpDate::from_unix_seconds(secs),
            });
        }
        f(&cached.as_ref().expect("set above").date)
    })
}

/// Run `f` with the current date.
pub(crate) fn with_date<R>(f: impl FnOnce(&HttpDate) -> R) -> R {
    with_date_at(now(), f)
}
