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
//! Layout of one event (little-endian), mirrored by
//! `packages/server/src/internal/events.ts`:
//! ```text
//! u8 kind | u32 body length | body
//! ```
//! Bodies (`str` = u16 length + UTF-8 bytes, `id` = u64):
//! - `UPGRADE`: id conn, u16 route, str remote address, str path, str query,
//!   u16 header count, (str name, str value)*
//! - `OPEN`: id conn, u16 route, str remote address, str protocol, str extensions
//! - `MESSAGE`: id conn, u8 binary, payload (the rest)
//! - `CLOSE`: id conn, u16 code, reason (the rest, UTF-8)
//! - `DRAIN`: id conn
//! - `RPC_OPEN`: id conn, u16 route (`0xFFFF` for a protocol listener), u8
//!   transport (0 TCP, 1 Unix, 2 WebSocket, 3 TLS), str remote address, u8
//!   TLS present (0/1) and when 1: str server name (empty: no SNI), str
//!   protocol version, str cipher suite, u32 length + the client
//!   certificate's DER (length 0: none); then u32 HELLO length, the
//!   client's HELLO frame, our WELCOME frame (the rest). A
//!   protocol connection's frames then arrive as `MESSAGE`s (binary, one
//!   frame each), or as `MESSAGE_OWNED`.
//! - `MESSAGE_OWNED`: id conn, u8 binary, u32 index: a `MESSAGE` whose data
//!   is not in the batch but the `index`th buffer drained with it (see
//!   [`Drained`]). Large protocol frames travel this way: the buffer they
//!   were reassembled in becomes JavaScript's, instead of being copied into
//!   the batch.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub const KIND_UPGRADE: u8 = 1;
pub const KIND_OPEN: u8 = 2;
pub const KIND_MESSAGE: u8 = 3;
pub const KIND_CLOSE: u8 = 4;
pub const KIND_DRAIN: u8 = 5;
pub const KIND_RPC_OPEN: u8 = 6;
pub const KIND_MESSAGE_OWNED: u8 = 7;

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

/// Wake the workers of every queue this thread deferred. The runtime calls
/// it when an I/O thread is about to park (it has handled every ready
/// socket), so one read turn over many connections costs each worker one
/// wake-up. Waking per event instead made the worker thread preempt the I/O
/// thread after a message or two when both share a core: a context switch
/// per couple of messages, which dominated the echo profile.
pub fn wake_deferred() {
    DEFERRING.with(|deferring| deferring.set(true));
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
    /// Signalled when the worker drained: producers waiting for room retry.
    room: Notify,
    capacity: usize,
}

impl EventQueue {
    pub fn new(capacity: usize) -> Self {
        Self {
            buffer: Mutex::new(Drained::default()),
            queued_bytes: AtomicUsize::new(0),
            wake_pending: AtomicBool::new(false),
            capacity_hint: AtomicUsize::new(MIN_BATCH_CAPACITY),
            waker: Mutex::new(None),
            room: Notify::new(),
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

    /// Append one event; `write_body` writes the body into the buffer.
    ///
    /// On an I/O thread the worker is woken when the thread parks (or at
    /// once past [`DEFERRED_WAKE_BYTES`]); elsewhere at once.
    pub fn push(self: &Arc<Self>, kind: u8, write_body: impl FnOnce(&mut Vec<u8>)) {
        let queued = {
            let mut pending = self.buffer.lock();
            self.write_event(&mut pending, kind, write_body)
        };
        self.wake_after_push(queued);
    }

    /// Append an event whose body refers to `owned` (the body ends with its
    /// u32 index, written here): the buffer is handed over whole, with no
    /// copy into the batch.
    pub fn push_owned(
        self: &Arc<Self>,
        kind: u8,
        write_body: impl FnOnce(&mut Vec<u8>),
        owned: Vec<u8>,
    ) {
        let queued = {
            let mut pending = self.buffer.lock();
            let index = pending.owned.len() as u32;
            pending.owned.push(owned);
            self.write_event(&mut pending, kind, |out| {
                write_body(out);
                out.extend_from_slice(&index.to_le_bytes());
            })
        };
        self.wake_after_push(queued);
    }

    /// Write one event into the batch; returns the bytes now pending.
    fn write_event(
        &self,
        pending: &mut Drained,
        kind: u8,
        write_body: impl FnOnce(&mut Vec<u8>),
    ) -> usize {
        let buffer = &mut pending.events;
        if buffer.capacity() == 0 {
            // Sized like the last batch: growing by doubling would copy
            // a batch of large messages over and over.
            buffer.reserve(self.capacity_hint.load(Ordering::Relaxed));
        }
        buffer.push(kind);
        let length_at = buffer.len();
        buffer.extend_from_slice(&[0; 4]);
        write_body(buffer);
        let body_len = (buffer.len() - length_at - 4) as u32;
        buffer[length_at..length_at + 4].copy_from_slice(&body_len.to_le_bytes());
        let queued = pending.queued_bytes();
        self.queued_bytes.store(queued, Ordering::SeqCst);
        queued
    }

    fn wake_after_push(self: &Arc<Self>, queued: usize) {
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
        self.room.notify_waiters();
        taken
    }

    /// Discard everything (the worker died; its connections are closed).
    pub fn clear(&self) {
        drop(self.drain());
    }

    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::SeqCst)
    }

    /// Wait until the queue is below its capacity. Connection tasks call this
    /// before reading more from their socket, so a slow worker slows its own
    /// clients down (through TCP) instead of growing memory.
    pub async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            if self.queued_bytes() < self.capacity {
                return;
            }
            notified.await;
        }
    }
}

/// Helpers to write event bodies.
pub mod body {
    pub fn id(out: &mut Vec<u8>, id: u64) {
        out.extend_from_slice(&id.to_le_bytes());
    }
    pub fn u16(out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    /// A string of at most 65535 bytes (longer input is cut on a char
    /// boundary; request heads are far below this by `max_head_bytes`).
    pub fn str(out: &mut Vec<u8>, s: &str) {
        let mut end = s.len().min(u16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        u16(out, end as u16);
        out.extend_from_slice(&s.as_bytes()[..end]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn one_wake_per_batch_and_layout() {
        let queue = Arc::new(EventQueue::new(1024));
        let wakes = Arc::new(AtomicU32::new(0));
        let counter = wakes.clone();
        queue.set_waker(Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })));
        for n in 0..3u64 {
            queue.push(KIND_DRAIN, |out| body::id(out, n));
        }
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        let batch = queue.drain().events;
        assert_eq!(batch.len(), 3 * (1 + 4 + 8));
        assert_eq!(batch[0], KIND_DRAIN);
        assert_eq!(&batch[1..5], &8u32.to_le_bytes());
        assert_eq!(&batch[5..13], &0u64.to_le_bytes());
        queue.push(KIND_DRAIN, |out| body::id(out, 9));
        assert_eq!(wakes.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn owned_buffers_are_handed_over_by_index_and_count_as_queued() {
        let queue = Arc::new(EventQueue::new(1024));
        queue.push(KIND_DRAIN, |out| body::id(out, 1));
        let big = vec![7u8; 100_000];
        queue.push_owned(KIND_MESSAGE_OWNED, |out| body::id(out, 2), big);
        queue.push_owned(KIND_MESSAGE_OWNED, |out| body::id(out, 3), vec![1, 2, 3]);
        assert_eq!(queue.queued_bytes(), 3 * 13 + 2 * 4 + 100_003);
        let Drained { events, owned } = queue.drain();
        assert_eq!(queue.queued_bytes(), 0);
        assert_eq!(owned.len(), 2);
        assert_eq!(owned[0].len(), 100_000);
        assert_eq!(owned[1], vec![1, 2, 3]);
        // The second event: kind, length 12, id 2, index 0.
        assert_eq!(events[13], KIND_MESSAGE_OWNED);
        assert_eq!(&events[14..18], &12u32.to_le_bytes());
        assert_eq!(&events[18..26], &2u64.to_le_bytes());
        assert_eq!(&events[26..30], &0u32.to_le_bytes());
        assert_eq!(&events[43..47], &1u32.to_le_bytes());
    }

    #[test]
    fn events_before_a_waker_are_delivered_when_it_attaches() {
        let queue = Arc::new(EventQueue::new(1024));
        queue.push(KIND_DRAIN, |out| body::id(out, 1));
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
            let queue = Arc::new(EventQueue::new(usize::MAX));
            let wakes = Arc::new(AtomicU32::new(0));
            let counter = wakes.clone();
            queue.set_waker(Some(Arc::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })));
            // The first park marks this thread as an I/O thread.
            wake_deferred();
            for n in 0..10u64 {
                queue.push(KIND_DRAIN, |out| body::id(out, n));
            }
            assert_eq!(wakes.load(Ordering::SeqCst), 0, "held until the park");
            wake_deferred();
            assert_eq!(wakes.load(Ordering::SeqCst), 1);
            assert_eq!(queue.drain().events.len(), 10 * 13);
            // A big backlog wakes at once.
            queue.push(KIND_MESSAGE, |out| out.resize(DEFERRED_WAKE_BYTES, 0));
            assert_eq!(wakes.load(Ordering::SeqCst), 2);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn strings_are_cut_on_char_boundaries() {
        let mut out = Vec::new();
        let long = "é".repeat(40_000);
        body::str(&mut out, &long);
        let len = u16::from_le_bytes([out[0], out[1]]) as usize;
        assert!(std::str::from_utf8(&out[2..2 + len]).is_ok());
    }
}
