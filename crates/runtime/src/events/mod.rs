//! Events on their way to a JavaScript worker.
//!
//! Each worker has one [`EventQueue`]: connection tasks append events to a
//! single byte buffer in a compact binary layout, and the worker takes the
//! whole buffer in one call (`drain`) and decodes it in JavaScript. Crossing
//! the N-API boundary once per batch, with bytes instead of JS objects, is
//! what DESIGN.md measured as 15-50x cheaper than one call per event. The
//! payload of a message is copied exactly once on its way in: from the
//! decoder's (unmasked) bytes into this buffer.
//!
//! The records' layout and kinds are in [`record`], checked against the
//! vectors of `spec/events/` that the TypeScript decoder reads too.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::wake::IoWaker;

pub mod record;

pub use record::{
    Record, TlsRecord, Transport, NO_ROUTE, REQUEST_ACCEPTS_BR, REQUEST_ACCEPTS_GZIP, REQUEST_BODY,
    REQUEST_COUNTED, REQUEST_HTTP10, REQUEST_KEEP_ALIVE,
};

/// Queued bytes beyond which an I/O thread wakes the worker at once instead
/// of at the end of its turn (see [`wake_deferred`]): it bounds how long a
/// busy I/O thread can hold events back, and the size of one batch.
const DEFERRED_WAKE_BYTES: usize = 64 * 1024;

/// Bounds of a new batch buffer's capacity (it still grows past the upper
/// one when needed).
const MIN_BATCH_CAPACITY: usize = 4 * 1024;
const MAX_BATCH_CAPACITY: usize = 4 * 1024 * 1024;

thread_local! {
    /// Set once the calling thread is an I/O thread that has parked: its
    /// pushes leave the wake-up to [`wake_deferred`].
    static DEFERRING: Cell<bool> = const { Cell::new(false) };
    /// Queues this thread pushed to whose wake-up waits for its next park.
    static DEFERRED: RefCell<Vec<Arc<EventQueue>>> = const { RefCell::new(Vec::new()) };
}

/// Mark the calling thread as an I/O thread: its pushes leave the wake-up
/// to [`wake_deferred`], which its loop calls once per turn.
pub fn defer_wakes_on_this_thread() {
    DEFERRING.with(|deferring| deferring.set(true));
}

/// Wake the workers of every queue this thread deferred. The runtime calls
/// it when an I/O thread is about to park (it has handled every ready
/// socket), so one read turn over many connections costs each worker one
/// wake-up. Waking per event instead made the worker thread preempt the I/O
/// thread after a message or two when both share a core: a context switch
/// per couple of messages, which dominated the echo profile.
pub fn wake_deferred() {
    DEFERRED.with(|list| {
        for queue in list.borrow_mut().drain(..) {
            queue.wake();
        }
    });
}

/// How a worker is told that events are waiting. The binding implements it
/// with a thread-safe function call; tests implement it with a channel.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// What waits in a worker's queue, and what the worker takes from it at
/// once: the events, and the buffers that `MESSAGE_OWNED` events refer to
/// by index.
#[derive(Debug, Default)]
pub struct Drained {
    pub events: Vec<u8>,
    pub owned: Vec<Vec<u8>>,
}

impl Drained {
    /// The bytes waiting: events and owned buffers (only large frames are
    /// owned, so the list is short).
    fn queued_bytes(&self) -> usize {
        self.events.len() + self.owned.iter().map(Vec::len).sum::<usize>()
    }
}

/// The events of one worker, waiting to be drained.
pub struct EventQueue {
    buffer: Mutex<Drained>,
    /// Mirrors the bytes pending (events and owned buffers) so producers
    /// can check capacity without the lock.
    queued_bytes: AtomicUsize,
    /// Set when a wake-up is in flight, so a burst of events costs one wake.
    wake_pending: AtomicBool,
    waker: Mutex<Option<Waker>>,
    /// Capacity for the next batch's buffer: the last batch's size.
    capacity_hint: AtomicUsize,
    /// I/O threads with connections that stopped reading because this queue
    /// was full: told when the worker drains it.
    waiting_for_room: Mutex<Vec<Arc<dyn IoWaker>>>,
    capacity: usize,
    /// The worker this queue feeds.
    worker: usize,
}

impl EventQueue {
    pub fn new(worker: usize, capacity: usize) -> Self {
        Self {
            buffer: Mutex::new(Drained::default()),
            queued_bytes: AtomicUsize::new(0),
            wake_pending: AtomicBool::new(false),
            capacity_hint: AtomicUsize::new(MIN_BATCH_CAPACITY),
            waker: Mutex::new(None),
            waiting_for_room: Mutex::new(Vec::new()),
            worker,
            capacity,
        }
    }

    /// Attach (or replace, for a restarted worker) the worker's waker. Events
    /// queued before it attached are delivered at once.
    pub fn set_waker(&self, waker: Option<Waker>) {
        *self.waker.lock() = waker;
        self.wake_pending.store(false, Ordering::SeqCst);
        if self.queued_bytes.load(Ordering::SeqCst) > 0 {
            self.wake();
        }
    }

    /// Append one record.
    ///
    /// On an I/O thread the worker is woken when the thread parks (or at
    /// once past [`DEFERRED_WAKE_BYTES`]); elsewhere at once.
    pub fn push(self: &Arc<Self>, record: &Record<'_>) {
        let queued = {
            let mut pending = self.buffer.lock();
            Self::write(&mut pending, &self.capacity_hint, record)
        };
        self.wake_after_push(queued);
    }

    /// Append a record whose bytes are `owned`, handed over whole with the
    /// batch instead of being copied into it: `record` makes the record
    /// (`MESSAGE_OWNED`, `HTTP_BODY_OWNED`) from the buffer's index.
    pub fn push_owned(
        self: &Arc<Self>,
        owned: Vec<u8>,
        record: impl FnOnce(u32) -> Record<'static>,
    ) {
        let queued = {
            let mut pending = self.buffer.lock();
            let index = pending.owned.len() as u32;
            pending.owned.push(owned);
            Self::write(&mut pending, &self.capacity_hint, &record(index))
        };
        self.wake_after_push(queued);
    }

    /// Write one record into the batch; returns the bytes now pending.
    fn write(pending: &mut Drained, capacity_hint: &AtomicUsize, record: &Record<'_>) -> usize {
        let buffer = &mut pending.events;
        if buffer.capacity() == 0 {
            // Sized like the last batch: growing by doubling would copy
            // a batch of large messages over and over.
            buffer.reserve(capacity_hint.load(Ordering::Relaxed));
        }
        record.write(buffer);
        pending.queued_bytes()
    }

    fn wake_after_push(self: &Arc<Self>, queued: usize) {
        self.queued_bytes.store(queued, Ordering::SeqCst);
        if self.wake_pending.load(Ordering::SeqCst) {
            // A wake-up is on its way; the drain it causes takes this too
            // (`drain` clears the flag before it takes the buffer).
            return;
        }
        if queued < DEFERRED_WAKE_BYTES && DEFERRING.with(Cell::get) {
            DEFERRED.with(|list| {
                let mut list = list.borrow_mut();
                if !list.iter().any(|queue| Arc::ptr_eq(queue, self)) {
                    list.push(self.clone());
                }
            });
        } else {
            self.wake();
        }
    }

    fn wake(&self) {
        // Only the first event after a drain wakes the worker; the drain that
        // follows takes everything queued up to that moment.
        if !self.wake_pending.swap(true, Ordering::SeqCst) {
            if let Some(waker) = self.waker.lock().clone() {
                waker();
            } else {
                // Nobody to wake yet: let `set_waker` do it.
                self.wake_pending.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Take every queued event. The wake flag is cleared first, so an event
    /// pushed during or after the take triggers a fresh wake.
    pub fn drain(&self) -> Drained {
        self.wake_pending.store(false, Ordering::SeqCst);
        let taken = {
            let mut buffer = self.buffer.lock();
            self.queued_bytes.store(0, Ordering::SeqCst);
            // The next buffer is allocated by the next push, not here: an
            // idle worker's queue holds no memory.
            std::mem::take(&mut *buffer)
        };
        self.capacity_hint.store(
            taken
                .events
                .len()
                .clamp(MIN_BATCH_CAPACITY, MAX_BATCH_CAPACITY),
            Ordering::Relaxed,
        );
        let waiting = std::mem::take(&mut *self.waiting_for_room.lock());
        for waker in waiting {
            waker.room(self.worker);
        }
        taken
    }

    /// Discard everything (the worker died; its connections are closed).
    pub fn clear(&self) {
        drop(self.drain());
    }

    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::SeqCst)
    }

    /// Whether the queue is at or past its capacity: connections then stop
    /// reading, so a slow worker slows its own clients down (through TCP)
    /// instead of growing memory.
    pub fn is_full(&self) -> bool {
        self.queued_bytes() >= self.capacity
    }

    /// Tell `waker` (once) when the worker next drains the queue. Returns
    /// false when there is room already (nothing to wait for).
    pub fn wait_for_room(&self, waker: &Arc<dyn IoWaker>) -> bool {
        let mut waiting = self.waiting_for_room.lock();
        // Checked under the lock `drain` takes too: no drain can slip
        // between the check and the registration.
        if !self.is_full() {
            return false;
        }
        if !waiting.iter().any(|w| Arc::ptr_eq(w, waker)) {
            waiting.push(waker.clone());
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::record::{KIND_DRAIN, KIND_MESSAGE_OWNED};
    use super::*;
    use std::sync::atomic::AtomicU32;

    fn drain(id: u64) -> Record<'static> {
        Record::Drain { id }
    }

    #[test]
    fn one_wake_per_batch_and_layout() {
        let queue = Arc::new(EventQueue::new(0, 1024));
        let wakes = Arc::new(AtomicU32::new(0));
        let counter = wakes.clone();
        queue.set_waker(Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })));
        for n in 0..3u64 {
            queue.push(&drain(n));
        }
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        let batch = queue.drain().events;
        assert_eq!(batch.len(), 3 * (1 + 4 + 8));
        assert_eq!(batch[0], KIND_DRAIN);
        assert_eq!(&batch[1..5], &8u32.to_le_bytes());
        assert_eq!(&batch[5..13], &0u64.to_le_bytes());
        queue.push(&drain(9));
        assert_eq!(wakes.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn owned_buffers_are_handed_over_by_index_and_count_as_queued() {
        let queue = Arc::new(EventQueue::new(0, 1024));
        queue.push(&drain(1));
        let big = vec![7u8; 100_000];
        let message = |id| {
            move |index| Record::MessageOwned {
                id,
                binary: true,
                index,
            }
        };
        queue.push_owned(big, message(2));
        queue.push_owned(vec![1, 2, 3], message(3));
        // Two records of 5 + 13 bytes (id, flag, index) and the buffers.
        assert_eq!(queue.queued_bytes(), 13 + 2 * 18 + 100_003);
        let Drained { events, owned } = queue.drain();
        assert_eq!(queue.queued_bytes(), 0);
        assert_eq!(owned.len(), 2);
        assert_eq!(owned[0].len(), 100_000);
        assert_eq!(owned[1], vec![1, 2, 3]);
        // The second event: kind, length 13, id 2, binary, index 0.
        assert_eq!(events[13], KIND_MESSAGE_OWNED);
        let (second, _) = Record::read(&events[13..]).unwrap();
        assert_eq!(
            second,
            Record::MessageOwned {
                id: 2,
                binary: true,
                index: 0
            }
        );
        let (third, _) = Record::read(&events[31..]).unwrap();
        assert_eq!(
            third,
            Record::MessageOwned {
                id: 3,
                binary: true,
                index: 1
            }
        );
    }

    #[test]
    fn events_before_a_waker_are_delivered_when_it_attaches() {
        let queue = Arc::new(EventQueue::new(0, 1024));
        queue.push(&drain(1));
        let wakes = Arc::new(AtomicU32::new(0));
        let counter = wakes.clone();
        queue.set_waker(Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })));
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_io_thread_wakes_once_per_turn_or_past_the_threshold() {
        std::thread::spawn(|| {
            let queue = Arc::new(EventQueue::new(0, usize::MAX));
            let wakes = Arc::new(AtomicU32::new(0));
            let counter = wakes.clone();
            queue.set_waker(Some(Arc::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })));
            defer_wakes_on_this_thread();
            for n in 0..10u64 {
                queue.push(&drain(n));
            }
            assert_eq!(wakes.load(Ordering::SeqCst), 0, "held until the park");
            wake_deferred();
            assert_eq!(wakes.load(Ordering::SeqCst), 1);
            assert_eq!(queue.drain().events.len(), 10 * 13);
            // A big backlog wakes at once.
            let big = vec![0; DEFERRED_WAKE_BYTES];
            queue.push(&Record::Message {
                id: 1,
                binary: true,
                payload: &big,
            });
            assert_eq!(wakes.load(Ordering::SeqCst), 2);
        })
        .join()
        .unwrap();
    }
}
