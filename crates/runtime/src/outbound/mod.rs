//! A connection's outbound queue: the one place where senders on any thread
//! (JavaScript workers, publishers) meet the connection's I/O thread.
//!
//! Senders only enqueue shared bytes and, when the queue was empty, wake the
//! I/O thread; the I/O thread takes the whole queue at once and writes it
//! with vectored writes, so a burst of sends costs one wake-up and few
//! syscalls (corking comes for free). Every send returns a [`SendStatus`] so backpressure is
//! visible to the caller, and the queue is bounded by `max_backpressure`.

use std::collections::VecDeque;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;

use crate::config::SlowConsumerPolicy;
use crate::framing;

use crate::wake::WakeTarget;
use direct::Writer;

mod direct;
mod http;

/// The outcome of one send, as JavaScript sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SendStatus {
    /// Queued; the connection keeps up with what it is sent.
    Sent = 0,
    /// Queued behind data the client has not taken yet (the socket's kernel
    /// buffer is full, or the queue passed its high-water mark). A `drain`
    /// event follows when it catches up.
    Buffered = 1,
    /// Not queued: the connection is over `max_backpressure` (and counted as
    /// dropped), or its slow-consumer policy closed it.
    Dropped = 2,
    /// Not queued: the connection is closed or closing.
    Closed = 3,
}

/// What a connection is asked to write.
#[derive(Debug)]
pub enum OutItem {
    /// A complete, already framed WebSocket frame, possibly shared with many
    /// other connections (a published message is framed once).
    Frame(Bytes),
    /// A message payload the connection frames itself, because it compresses
    /// with its own permessage-deflate context.
    Message { payload: Bytes, binary: bool },
    /// Start the closing handshake with this code and reason. A protocol
    /// connection sends a GO_AWAY first unless `go_away` is false (its
    /// JavaScript peer wrote one already: the peer says one GO_AWAY, §8).
    Close {
        code: u16,
        reason: String,
        go_away: bool,
    },
    /// Frames of messages sent to this connection alone, written one after
    /// another into one buffer (see [`Outbound::push_message`]).
    Coalesced(BytesMut),
}

impl OutItem {
    /// The bytes it was counted as when queued.
    pub fn counted_bytes(&self) -> usize {
        match self {
            OutItem::Frame(frame) => frame.len(),
            OutItem::Message { payload, .. } => payload.len(),
            OutItem::Close { .. } => 0,
            OutItem::Coalesced(frames) => frames.len(),
        }
    }
}

/// Queued bytes at which a protocol connection's sends report `Buffered`,
/// so that its peer stops producing stream data until the `drain`: a
/// quarter of `max_backpressure` (4 MiB by default). Enough to keep the
/// socket busy while the worker hears the `drain` (the kernel's own buffer
/// still holds data in flight), and low enough that paused stream data (a
/// quarter, plus the chunk that crossed it: the worker sends chunks of at
/// most 64 KiB) leaves half the limit to the frames credit does not pace.
/// ARCHITECTURE.md ("Backpressure, end to end") has the whole argument.
pub fn rpc_high_water(max_backpressure: usize) -> usize {
    (max_backpressure / 4).max(1)
}

/// A coalescing buffer grows up to this many bytes; past it a new one
/// starts, so one buffer never needs a large reallocation.
const COALESCE_BYTES: usize = 64 * 1024;
/// Frames up to this size may make a coalescing buffer grow.
const COALESCE_GROW_FOR: usize = 4 * 1024;
/// The smallest coalescing buffer: room for a few small frames.
const COALESCE_MIN_CAPACITY: usize = 512;

/// Why the connection must go, set by another thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// Too much queued under the `Close` policy: send 1008 at once, dropping
    /// whatever is queued (the client is not reading it anyway).
    SlowConsumer,
    /// Drop the TCP connection without a closing handshake.
    Terminate,
    /// Its worker died: send 1011 at once.
    WorkerDied,
}

#[derive(Default)]
struct State {
    items: VecDeque<OutItem>,
    /// The front item is partly on the wire (a direct write was cut short):
    /// it must go out whole before anything else, the I/O thread's own
    /// frames included.
    front_partial: bool,
    closed: bool,
    eviction: Option<Eviction>,
    writer: Writer,
    /// HTTP: what the workers did that the I/O thread waits on (`http.rs`);
    /// boxed, made at first use, so other connections pay one pointer.
    http: Option<Box<http::Progress>>,
}

/// What the I/O thread takes from the queue.
pub struct Taken {
    /// Why the connection must go, if another thread said so.
    pub eviction: Option<Eviction>,
    /// The first item taken is partly written already.
    pub front_partial: bool,
}

/// Shared between a connection's I/O thread and everybody who sends to it.
pub struct Outbound {
    state: Mutex<State>,
    /// Bytes accepted and not yet written to the socket.
    buffered: AtomicUsize,
    /// The last write could not take everything: the client is behind.
    congested: AtomicBool,
    /// A send reported `Buffered`; emit `drain` once the queue is empty.
    drain_wanted: AtomicBool,
    /// The connection's I/O thread, told when the queue stops being empty.
    waker: WakeTarget,
    /// 32 bits (options are at most 2^32 - 1): an idle connection's shared
    /// part stays within two cache lines.
    max_backpressure: u32,
    /// See [`Outbound::with_high_water`]; 0 (none) for WebSocket
    /// connections.
    high_water: u32,
    policy: SlowConsumerPolicy,
}

impl Outbound {
    pub fn new(max_backpressure: usize, policy: SlowConsumerPolicy, waker: WakeTarget) -> Self {
        Self {
            state: Mutex::new(State::default()),
            buffered: AtomicUsize::new(0),
            congested: AtomicBool::new(false),
            drain_wanted: AtomicBool::new(false),
            waker,
            max_backpressure: max_backpressure.min(u32::MAX as usize) as u32,
            high_water: 0,
            policy,
        }
    }

    /// A queue whose producer paces itself (a protocol connection's peer
    /// pauses stream data): sends report `Buffered` (and a `drain` follows)
    /// once `high_water` bytes are queued, not only when the socket is
    /// full; and below `high_water` a frame is always admitted, whatever
    /// its size. So a producer that stops at `Buffered` and resumes at
    /// `drain` is never refused nor evicted for what it paced (§7 credit
    /// may allow more than `max_backpressure`), while one that does not
    /// stop still meets the limit.
    pub fn with_high_water(mut self, high_water: usize) -> Self {
        self.high_water = high_water.clamp(1, u32::MAX as usize) as u32;
        self
    }

    fn high_water(&self) -> Option<usize> {
        (self.high_water > 0).then_some(self.high_water as usize)
    }

    /// Queue `item` (`len` bytes on the wire) and wake the connection's
    /// I/O thread if it needs it. Never blocks beyond a short lock: a stalled
    /// client costs only its own queue.
    pub fn enqueue(&self, item: OutItem, len: usize) -> SendStatus {
        let (status, wake) = self.push(item, len);
        if wake {
            self.wake();
        }
        status
    }

    /// Where this queue's wake-ups go (a SockJS session's receiver takes
    /// the session's wake-ups there while it is attached).
    pub fn wake_target(&self) -> WakeTarget {
        self.waker.clone()
    }

    /// Wake the connection's I/O thread to write what is queued.
    pub fn wake(&self) {
        self.waker.wake();
    }

    /// [`Outbound::enqueue`] without the wake-up: also returns whether the
    /// I/O thread must be woken (the queue was empty), so a corked caller can
    /// wake it later (see `server::cork`).
    pub fn push(&self, item: OutItem, len: usize) -> (SendStatus, bool) {
        let is_close = matches!(item, OutItem::Close { .. });
        let mut state = self.state.lock();
        if let Err(refused) = self.admit(&mut state, len, is_close) {
            return (refused, false);
        }
        let was_empty = state.items.is_empty();
        state.items.push_back(item);
        self.accepted(state, len, was_empty)
    }

    /// Frame `payload` straight into the queue. Consecutive small sends to
    /// one connection share one buffer: no allocation per message, and one
    /// slice per batch for the vectored write instead of one per message
    /// (that allocation and its free were ~8% of the echo profile).
    pub fn push_message(&self, payload: &[u8], binary: bool) -> (SendStatus, bool) {
        let len = framing::header_len(payload.len()) + payload.len();
        self.push_coalesced(len, |buffer| {
            framing::append_message(buffer, payload, binary)
        })
    }

    /// Copy an already framed message into the queue's coalescing buffer.
    /// For a small published frame a copy is cheaper than sharing it: no
    /// reference count touched by every recipient's thread, and one slice
    /// per connection for the vectored write instead of one per message.
    pub fn push_frame_copy(&self, frame: &[u8]) -> (SendStatus, bool) {
        self.push_coalesced(frame.len(), |buffer| buffer.extend_from_slice(frame))
    }

    /// Queue `len` bytes written by `write` at the end of the coalescing
    /// buffer (starting a new one when there is none or it is full).
    fn push_coalesced(&self, len: usize, write: impl FnOnce(&mut BytesMut)) -> (SendStatus, bool) {
        let mut state = self.state.lock();
        if let Err(refused) = self.admit(&mut state, len, false) {
            return (refused, false);
        }
        let was_empty = state.items.is_empty();
        Self::coalesce(&mut state, len, write);
        self.accepted(state, len, was_empty)
    }

    /// Write `len` bytes at the end of the coalescing buffer (the caller
    /// admitted them).
    fn coalesce(state: &mut State, len: usize, write: impl FnOnce(&mut BytesMut)) {
        match state.items.back_mut() {
            // A small frame may grow the buffer (amortised doubling); a large
            // one goes in only where it fits, else it would be copied again
            // by every reallocation.
            Some(OutItem::Coalesced(buffer))
                if buffer.len() + len <= COALESCE_BYTES
                    && (len <= COALESCE_GROW_FOR || buffer.capacity() - buffer.len() >= len) =>
            {
                write(buffer);
            }
            _ => {
                let mut buffer = BytesMut::with_capacity(len.max(COALESCE_MIN_CAPACITY));
                write(&mut buffer);
                state.items.push_back(OutItem::Coalesced(buffer));
            }
        }
    }

    /// Whether `len` more bytes may be queued; applies the slow-consumer
    /// policy when not.
    fn admit(&self, state: &mut State, len: usize, is_close: bool) -> Result<(), SendStatus> {
        if state.closed || state.eviction.is_some() {
            return Err(SendStatus::Closed);
        }
        let buffered = self.buffered.load(Ordering::Acquire);
        // A close always gets in: refusing it would make `end()` a silent
        // no-op (or, under the `Close` policy, an eviction) exactly when the
        // connection is behind.
        // An empty queue always takes one message, however large, so a
        // message bigger than the limit is still deliverable to a reader;
        // a paced queue takes one below its high-water mark.
        let always_room = match self.high_water() {
            Some(high_water) => buffered < high_water,
            None => buffered == 0,
        };
        if !is_close && !always_room && buffered + len > self.max_backpressure() {
            if self.policy == SlowConsumerPolicy::Close {
                state.eviction = Some(Eviction::SlowConsumer);
                self.discard(state);
                self.waker.wake();
            }
            return Err(SendStatus::Dropped);
        }
        Ok(())
    }

    /// Count `len` accepted bytes and tell the sender how it went.
    fn accepted(
        &self,
        state: parking_lot::MutexGuard<'_, State>,
        len: usize,
        was_empty: bool,
    ) -> (SendStatus, bool) {
        let buffered = self.buffered.fetch_add(len, Ordering::AcqRel) + len;
        let behind = self.congested.load(Ordering::Acquire)
            || self
                .high_water()
                .is_some_and(|high_water| buffered >= high_water);
        if behind {
            // Under the lock: the I/O thread takes the queue under it too,
            // so one that took this item sees the flag when it has written
            // it, and owes the `drain` a producer may be waiting for.
            self.drain_wanted.store(true, Ordering::Release);
        }
        drop(state);
        let status = if behind {
            SendStatus::Buffered
        } else {
            SendStatus::Sent
        };
        (status, was_empty)
    }

    /// Ask the connection to leave (see [`Eviction`]). Returns false when it
    /// is already closed.
    pub fn evict(&self, why: Eviction) -> bool {
        let mut state = self.state.lock();
        if state.closed {
            return false;
        }
        if state.eviction.is_none() || why == Eviction::Terminate {
            state.eviction = Some(why);
        }
        self.discard(&mut state);
        drop(state);
        self.waker.wake();
        true
    }

    /// The connection's I/O thread takes everything queued (and any
    /// eviction), and the socket with it: until it [`releases`] it, only
    /// it writes. The queue is left without memory: an idle connection
    /// keeps no capacity from its last burst.
    ///
    /// [`releases`]: Outbound::release
    pub fn take(&self, into: &mut VecDeque<OutItem>) -> Taken {
        let mut state = self.state.lock();
        state.writer = Writer::IO_THREAD;
        if into.is_empty() {
            *into = std::mem::take(&mut state.items);
        } else {
            into.extend(state.items.drain(..));
        }
        Taken {
            eviction: state.eviction.clone(),
            front_partial: std::mem::take(&mut state.front_partial),
        }
    }

    /// Why another thread asked the connection to go, if it did (for a
    /// connection no I/O thread takes from: a SockJS session between
    /// receivers).
    pub fn eviction(&self) -> Option<Eviction> {
        self.state.lock().eviction.clone()
    }

    /// Refuse every later send and forget what is still queued; only the
    /// I/O thread touches the socket from now on (it may close it once this
    /// returns: a direct write holds the lock for as long as it uses the
    /// socket).
    pub fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.writer = Writer::IO_THREAD;
        self.discard(&mut state);
    }

    /// Forget what is queued; it no longer counts as buffered.
    fn discard(&self, state: &mut State) {
        let bytes: usize = state.items.drain(..).map(|item| item.counted_bytes()).sum();
        self.buffered.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The I/O thread added `n` bytes of its own (control frames, compression
    /// growth) to what it will write.
    pub fn account(&self, n: usize) {
        self.buffered.fetch_add(n, Ordering::AcqRel);
    }

    /// The I/O thread wrote (or discarded) `n` bytes that were counted in `buffered`.
    pub fn written(&self, n: usize) {
        self.buffered.fetch_sub(n, Ordering::AcqRel);
    }

    /// Bytes that may be queued before the slow-consumer policy applies.
    pub fn max_backpressure(&self) -> usize {
        self.max_backpressure as usize
    }

    pub fn buffered(&self) -> usize {
        self.buffered.load(Ordering::Acquire)
    }

    pub fn set_congested(&self, congested: bool) {
        self.congested.store(congested, Ordering::Release);
    }

    /// Whether a `drain` event is owed now that the queue is empty.
    pub fn take_drain_wanted(&self) -> bool {
        self.drain_wanted.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests;
