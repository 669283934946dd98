//! The `Date` of every response (RFC 9110 §6.6.1), formatted once per
//! second per thread instead of once per response.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use switchboard_proto::http1::HttpDate;

thread_local! {
    static CACHED: RefCell<Option<(u64, HttpDate)>> = const { RefCell::new(None) };
}

/// Run `f` with the current date.
pub(crate) fn with_date<R>(f: impl FnOnce(&HttpDate) -> R) -> R {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        let fresh = matches!(&*cached, Some((secs, _)) if *secs == now);
        if !fresh {
            *cached = Some((now, HttpDate::from_unix_seconds(now)));
        }
        let (_, date) = cached.as_ref().expect("set above");
        f(date)
    })
}
