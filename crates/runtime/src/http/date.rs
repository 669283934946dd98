//! The `Date` of every response (RFC 9110 §6.6.1), formatted once per
//! second per thread instead of once per response, and the clock read once
//! per batch: a worker handling a batch of requests (corked) reads it for
//! the first response only. Outside a batch (a response from a timer or
//! after an await) every response reads it.

use std::cell::{Cell, RefCell};
use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_proto::http1::HttpDate;

thread_local! {
    static CACHED: RefCell<Option<(u64, HttpDate)>> = const { RefCell::new(None) };
    /// The clock was read since the current batch began.
    static READ_IN_BATCH: Cell<bool> = const { Cell::new(false) };
}

/// A batch begins (the thread corks): the next response reads the clock.
pub(crate) fn batch_began() {
    READ_IN_BATCH.with(|read| read.set(false));
}

/// Run `f` with the current date.
pub(crate) fn with_date<R>(f: impl FnOnce(&HttpDate) -> R) -> R {
    let fresh = crate::connection::is_corked() && READ_IN_BATCH.with(Cell::get);
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        if !fresh || cached.is_none() {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            if !matches!(&*cached, Some((secs, _)) if *secs == now) {
                *cached = Some((now, HttpDate::from_unix_seconds(now)));
            }
            READ_IN_BATCH.with(|read| read.set(true));
        }
        let (_, date) = cached.as_ref().expect("set above");
        f(date)
    })
}
