//! Corking: a thread defers the writes (or wake-ups) of the connections it
//! sends to until it uncorks. A JavaScript worker corks while it dispatches
//! a batch of events, so every message its handlers send to one connection
//! in that batch leaves in one vectored write instead of one write (and one
//! wake-up) each.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crate::connection::Connection;

thread_local! {
    /// How deeply the calling thread is corked.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Connections whose wake-up waits for the outermost [`uncork`].
    static CORKED: RefCell<Vec<Arc<Connection>>> = const { RefCell::new(Vec::new()) };
}

/// Defer wake-ups on this thread until [`uncork`]. Nests; only the
/// outermost `uncork` wakes.
pub fn cork() {
    DEPTH.with(|depth| depth.set(depth.get() + 1));
}

/// End a [`cork`]; the outermost one sends what was queued for every
/// connection sent to since: written straight to its socket where its I/O
/// thread has released it (the common case: a worker answering the
/// messages it was given), else by that thread, woken now.
pub fn uncork() {
    let outermost = DEPTH.with(|depth| {
        let d = depth.get().saturating_sub(1);
        depth.set(d);
        d == 0
    });
    if outermost {
        let corked = CORKED.with(|list| std::mem::take(&mut *list.borrow_mut()));
        for connection in corked {
            connection.flush_or_wake();
        }
    }
}

/// When this thread is corked, remember `connection` for the outermost
/// `uncork` and return true; otherwise return false (wake it now).
pub(crate) fn defer(connection: &Arc<Connection>) -> bool {
    if DEPTH.with(Cell::get) == 0 {
        return false;
    }
    CORKED.with(|list| list.borrow_mut().push(connection.clone()));
    true
}
