//! How any thread tells an I/O thread that something awaits it there. The
//! queues that other threads fill (a connection's outbound queue, a
//! worker's event queue) hold one of these and call it; the I/O thread's
//! inbox implements it (`reactor/inbox.rs`), tests implement it with
//! counters.

use std::sync::Arc;

pub trait IoWaker: Send + Sync {
    /// The connection at slab `key` (of `generation`) has queued items or
    /// an eviction to handle.
    fn connection(&self, key: usize, generation: u32);
    /// Worker `worker`'s event queue has room again: its connections that
    /// stopped reading may go on.
    fn room(&self, worker: usize);
}

/// Where a connection's wake-ups go: its I/O thread, and its place there.
#[derive(Clone)]
pub struct WakeTarget {
    waker: Arc<dyn IoWaker>,
    /// Slab keys stay far below 2^32 (one per open connection).
    key: u32,
    generation: u32,
}

impl WakeTarget {
    pub fn new(waker: Arc<dyn IoWaker>, key: usize, generation: u32) -> Self {
        Self {
            waker,
            key: key as u32,
            generation,
        }
    }

    /// A target that wakes nobody (tests that drive a session by hand).
    pub fn none() -> Self {
        struct Nobody;
        impl IoWaker for Nobody {
            fn connection(&self, _: usize, _: u32) {}
            fn room(&self, _: usize) {}
        }
        Self::new(Arc::new(Nobody), 0, 0)
    }

    pub fn wake(&self) {
        self.waker.connection(self.key as usize, self.generation);
    }
}
