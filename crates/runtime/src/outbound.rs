//! A connection's outbound queue: the one place where senders on any thread
//! (JavaScript workers, publishers) meet the connection's I/O thread.
//!
//! Senders only enqueue shared bytes and, when the queue was empty, wake the
//! I/O thread; the I/O thread takes the whole queue at once and writes it
//! with vectored writes, so a burst of sends costs one wake-up and few
//! syscalls (corking comes for free). Every send returns a [`SendStatus`] so backpressure is
//! visible to the caller, and the queue is bounded by `max_backpressure`.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use parking_lot::Mutex;

use crate::config::SlowConsumerPolicy;
use crate::framing;
use crate::stats::{self, Stats};
use crate::wake::WakeTarget;

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

/// Who may write to the connection's socket now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Writer {
    /// Only its I/O thread: it has frames of its own in flight, the socket
    /// is full, the stream is TLS or compresses, or the session is closing.
    #[default]
    IoThread,
    /// Any thread that holds the lock may write queued frames straight to
    /// this socket (see [`Outbound::write_direct`]).
    Direct(RawFd),
}

/// Most buffers one direct write hands to `writev`.
const MAX_DIRECT_SLICES: usize = 64;

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
        self.accepted(state, len, was_empty)
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
        state.writer = Writer::IoThread;
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

    /// The I/O thread has nothing of its own in flight: from now on the
    /// threads that send may write straight to `fd` (none: a TLS or
    /// compressing stream, or a closing session, which only it writes).
    /// Unless something was queued meanwhile: then it stays the writer, and
    /// the wake-up that came with the items brings it back.
    pub fn release(&self, fd: Option<RawFd>) {
        let mut state = self.state.lock();
        if let Some(fd) = fd {
            if state.items.is_empty() && !state.closed && state.eviction.is_none() {
                state.writer = Writer::Direct(fd);
            }
        }
    }

    /// Write what is queued straight to the socket, on the calling thread,
    /// when the I/O thread has released it: a worker that just handled a
    /// batch writes its replies itself instead of handing them to the I/O
    /// thread (one thread hop less per message). Returns false when the I/O
    /// thread must be woken: the socket is its (or just became its, being
    /// full), or an item needs its work (compression, a close).
    pub fn write_direct(&self, stats: &Stats) -> bool {
        let mut state = self.state.lock();
        let Writer::Direct(fd) = state.writer else {
            return state.items.is_empty();
        };
        if state.items.is_empty() {
            return true;
        }
        match self.write_queued(&mut state, fd, &[], stats) {
            Some(0) => true,
            Some(_) | None => false,
        }
    }

    /// Send one large message straight from the caller's bytes (`head`,
    /// then `payload`), behind what is queued, in one `writev`, when the
    /// I/O thread has released the socket: no copy of the payload unless
    /// the socket does not take all of it (then its unsent rest is queued).
    /// `None`: the socket is not released; queue it as usual. Otherwise the
    /// send's status, and whether the I/O thread must be woken.
    pub fn send_direct(
        &self,
        head: &[u8],
        payload: &[u8],
        stats: &Stats,
    ) -> Option<(SendStatus, bool)> {
        let mut state = self.state.lock();
        let Writer::Direct(fd) = state.writer else {
            return None;
        };
        let len = head.len() + payload.len();
        if let Err(refused) = self.admit(&mut state, len, false) {
            return Some((refused, false));
        }
        let left = self.write_queued(&mut state, fd, &[head, payload], stats)?;
        if left == 0 {
            return Some((SendStatus::Sent, false));
        }
        // The sender was told it is behind: it is owed a `drain` once the
        // I/O thread has written the rest (a peer pauses its stream data
        // until then).
        self.drain_wanted.store(true, Ordering::Release);
        Some((SendStatus::Buffered, true))
    }

    /// One `writev` of the queued frames and then `extra` (parts of one
    /// more frame, not queued yet); what is not written stays queued (the
    /// rest of `extra` copied), and the socket goes back to the I/O thread.
    /// Returns the bytes left for it, or `None` when nothing could be tried
    /// (an item needs the I/O thread, or there are too many to write at
    /// once); the socket is then the I/O thread's.
    fn write_queued(
        &self,
        state: &mut State,
        fd: RawFd,
        extra: &[&[u8]],
        stats: &Stats,
    ) -> Option<usize> {
        let mut slices = [IoSlice::new(&[]); MAX_DIRECT_SLICES];
        let mut count = 0;
        for item in &state.items {
            let bytes: &[u8] = match item {
                OutItem::Frame(frame) => frame,
                OutItem::Coalesced(frames) => frames,
                // The I/O thread compresses and closes.
                OutItem::Message { .. } | OutItem::Close { .. } => {
                    state.writer = Writer::IoThread;
                    return None;
                }
            };
            if count + extra.len() == MAX_DIRECT_SLICES {
                state.writer = Writer::IoThread;
                return None;
            }
            slices[count] = IoSlice::new(bytes);
            count += 1;
        }
        let queued_count = count;
        for part in extra {
            slices[count] = IoSlice::new(part);
            count += 1;
        }
        let written = match crate::fd_write::write_vectored(fd, &slices[..count]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            // The I/O thread finds the error on its own next write or read.
            Err(_) => 0,
        };
        stats::add(&stats.bytes_out, written as u64);
        // What was queued went first.
        let queued_bytes: usize = slices[..queued_count].iter().map(|s| s.len()).sum();
        let from_queue = written.min(queued_bytes);
        self.buffered.fetch_sub(from_queue, Ordering::AcqRel);
        let mut left = from_queue;
        while left > 0 {
            let front = state.items.front_mut().expect("wrote more than queued");
            let len = front.counted_bytes();
            if left >= len {
                state.items.pop_front();
                state.front_partial = false;
                left -= len;
            } else {
                match front {
                    OutItem::Frame(frame) => frame.advance(left),
                    OutItem::Coalesced(frames) => frames.advance(left),
                    OutItem::Message { .. } | OutItem::Close { .. } => unreachable!("not written"),
                }
                state.front_partial = true;
                left = 0;
            }
        }
        // Then the extra frame: its unsent rest is copied into the queue.
        let extra_len: usize = extra.iter().map(|part| part.len()).sum();
        let extra_written = written - from_queue;
        if extra_written < extra_len {
            let mut rest = BytesMut::with_capacity(extra_len - extra_written);
            let mut skip = extra_written;
            for part in extra {
                let taken = skip.min(part.len());
                rest.extend_from_slice(&part[taken..]);
                skip -= taken;
            }
            if extra_written > 0 {
                // All that was queued went out before it, so it is the front.
                state.front_partial = true;
            }
            self.buffered.fetch_add(rest.len(), Ordering::AcqRel);
            state.items.push_back(OutItem::Frame(rest.freeze()));
        }
        let left: usize = state.items.iter().map(OutItem::counted_bytes).sum();
        if left > 0 {
            // The socket is full: the I/O thread goes on, on writability.
            state.writer = Writer::IoThread;
            self.congested.store(true, Ordering::Release);
        }
        Some(left)
    }

    /// Refuse every later send and forget what is still queued; only the
    /// I/O thread touches the socket from now on (it may close it once this
    /// returns: a direct write holds the lock for as long as it uses the
    /// socket).
    pub fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.writer = Writer::IoThread;
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
mod tests {
    use super::*;

    fn frame(n: usize) -> OutItem {
        OutItem::Frame(Bytes::from(vec![0u8; n]))
    }

    #[test]
    fn drop_policy_refuses_over_the_limit_but_keeps_the_connection() {
        let out = Outbound::new(100, SlowConsumerPolicy::Drop, WakeTarget::none());
        assert_eq!(out.enqueue(frame(80), 80), SendStatus::Sent);
        assert_eq!(out.enqueue(frame(30), 30), SendStatus::Dropped);
        assert_eq!(out.enqueue(frame(20), 20), SendStatus::Sent);
        let mut items = VecDeque::new();
        assert_eq!(out.take(&mut items).eviction, None);
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn an_empty_queue_takes_one_oversized_message() {
        let out = Outbound::new(10, SlowConsumerPolicy::Drop, WakeTarget::none());
        assert_eq!(out.enqueue(frame(50), 50), SendStatus::Sent);
        assert_eq!(out.enqueue(frame(1), 1), SendStatus::Dropped);
    }

    #[test]
    fn close_policy_evicts_and_discards_the_queue() {
        let out = Outbound::new(100, SlowConsumerPolicy::Close, WakeTarget::none());
        out.enqueue(frame(80), 80);
        assert_eq!(out.enqueue(frame(30), 30), SendStatus::Dropped);
        assert_eq!(out.enqueue(frame(1), 1), SendStatus::Closed);
        let mut items = VecDeque::new();
        assert_eq!(out.take(&mut items).eviction, Some(Eviction::SlowConsumer));
        assert!(items.is_empty());
    }

    #[test]
    fn a_close_is_queued_even_over_the_limit() {
        for policy in [SlowConsumerPolicy::Drop, SlowConsumerPolicy::Close] {
            let out = Outbound::new(10, policy, WakeTarget::none());
            assert_eq!(out.enqueue(frame(50), 50), SendStatus::Sent);
            let close = OutItem::Close {
                code: 1000,
                reason: String::new(),
                go_away: true,
            };
            assert_eq!(out.enqueue(close, 0), SendStatus::Sent);
            let mut items = VecDeque::new();
            assert_eq!(out.take(&mut items).eviction, None);
            assert_eq!(items.len(), 2);
        }
    }

    #[test]
    fn small_messages_share_one_buffer_until_it_is_taken() {
        let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        assert_eq!(out.push_message(b"ab", false), (SendStatus::Sent, true));
        assert_eq!(out.push_message(b"cd", true), (SendStatus::Sent, false));
        assert_eq!(out.buffered(), 8);
        let mut items = VecDeque::new();
        out.take(&mut items);
        assert_eq!(items.len(), 1);
        let Some(OutItem::Coalesced(frames)) = items.pop_front() else {
            panic!("expected one coalesced buffer");
        };
        assert_eq!(&frames[..], &[0x81, 2, b'a', b'b', 0x82, 2, b'c', b'd']);
        // After the take, the next send starts a new buffer and wakes.
        assert_eq!(out.push_message(b"e", false), (SendStatus::Sent, true));
    }

    #[test]
    fn a_full_coalescing_buffer_starts_another_and_limits_still_apply() {
        let out = Outbound::new(100 * 1024, SlowConsumerPolicy::Drop, WakeTarget::none());
        let payload = vec![7u8; 40 * 1024];
        assert_eq!(out.push_message(&payload, true).0, SendStatus::Sent);
        assert_eq!(out.push_message(&payload, true).0, SendStatus::Sent);
        assert_eq!(out.push_message(&payload, true).0, SendStatus::Dropped);
        let mut items = VecDeque::new();
        out.take(&mut items);
        assert_eq!(items.len(), 2, "64 KiB per buffer at most");
    }

    #[test]
    fn direct_writes_go_straight_to_a_released_socket() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let stats = Stats::default();
        let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        out.push_message(b"held", false);
        // Not released yet: the I/O thread must be woken.
        assert!(!out.write_direct(&stats));
        let mut items = VecDeque::new();
        out.take(&mut items);
        // The I/O thread wrote what it took, then released the socket.
        out.written(6);
        out.release(Some(ours.as_raw_fd()));
        out.push_message(b"ab", false);
        out.push_message(b"cd", true);
        assert!(out.write_direct(&stats), "written on the calling thread");
        assert_eq!(out.buffered(), 0);
        assert_eq!(stats.bytes_out.load(Ordering::Relaxed), 8);
        let mut got = [0u8; 8];
        theirs.read_exact(&mut got).unwrap();
        assert_eq!(&got, &[0x81, 2, b'a', b'b', 0x82, 2, b'c', b'd']);
        // A take gives the socket back to the I/O thread.
        out.take(&mut items);
        out.push_message(b"e", false);
        assert!(!out.write_direct(&stats));
    }

    #[test]
    fn a_full_socket_hands_the_rest_to_the_io_thread_as_a_partial_front() {
        use std::os::fd::AsRawFd;
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let stats = Stats::default();
        let out = Outbound::new(64 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        out.release(Some(ours.as_raw_fd()));
        // Far more than a socket buffer holds, in frames too large to
        // coalesce: the write stops inside one of them.
        let payload = vec![7u8; 1 << 20];
        for _ in 0..16 {
            out.push_message(&payload, true);
        }
        let queued = out.buffered();
        assert!(!out.write_direct(&stats), "the rest needs the I/O thread");
        let written = stats.bytes_out.load(Ordering::Relaxed) as usize;
        assert!(written > 0 && written < queued, "{written} of {queued}");
        assert_eq!(out.buffered(), queued - written);
        // Congested: the next send reports it.
        assert_eq!(out.push_message(b"x", false).0, SendStatus::Buffered);
        let mut items = VecDeque::new();
        let taken = out.take(&mut items);
        assert!(taken.front_partial, "the first item is the rest of a frame");
        let rest: usize = items.iter().map(OutItem::counted_bytes).sum();
        assert_eq!(rest, queued - written + 3);
    }

    #[test]
    fn a_large_send_goes_out_from_the_callers_bytes_behind_what_is_queued() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let stats = Stats::default();
        let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        // Not released: the caller queues it as usual.
        assert_eq!(out.send_direct(b"H", b"payload", &stats), None);
        out.release(Some(ours.as_raw_fd()));
        out.push_message(b"ab", false);
        assert_eq!(
            out.send_direct(b"HH", b"payload", &stats),
            Some((SendStatus::Sent, false))
        );
        assert_eq!(out.buffered(), 0);
        let mut got = [0u8; 13];
        theirs.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"\x81\x02abHHpayload");
    }

    #[test]
    fn a_large_send_into_a_full_socket_queues_only_its_unsent_rest() {
        use std::os::fd::AsRawFd;
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let stats = Stats::default();
        let out = Outbound::new(64 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        out.release(Some(ours.as_raw_fd()));
        let payload = vec![9u8; 16 << 20];
        let (status, wake) = out.send_direct(b"HEAD", &payload, &stats).unwrap();
        assert_eq!((status, wake), (SendStatus::Buffered, true));
        assert!(out.take_drain_wanted(), "a drain is owed for the BUFFERED");
        let written = stats.bytes_out.load(Ordering::Relaxed) as usize;
        assert!(written > 4 && written < payload.len(), "{written}");
        assert_eq!(out.buffered(), payload.len() + 4 - written);
        let mut items = VecDeque::new();
        assert!(out.take(&mut items).front_partial, "its rest is the front");
        assert_eq!(items.len(), 1);
        // Now the I/O thread's: the next large send is queued as usual.
        assert_eq!(out.send_direct(b"H", b"x", &stats), None);
    }

    #[test]
    fn a_closed_queue_never_writes_directly() {
        use std::os::fd::AsRawFd;
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let stats = Stats::default();
        let out = Outbound::new(1 << 20, SlowConsumerPolicy::Drop, WakeTarget::none());
        out.release(Some(ours.as_raw_fd()));
        out.close();
        assert_eq!(out.push_message(b"x", false).0, SendStatus::Closed);
        assert!(out.write_direct(&stats));
        assert_eq!(stats.bytes_out.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_paced_queue_reports_buffered_at_its_high_water_mark_and_admits_below_it() {
        let none = WakeTarget::none;
        let out = Outbound::new(100, SlowConsumerPolicy::Close, none()).with_high_water(40);
        assert_eq!(out.enqueue(frame(30), 30), SendStatus::Sent);
        // Below the mark: admitted whatever its size (30 + 90 > 100).
        assert_eq!(out.enqueue(frame(90), 90), SendStatus::Buffered);
        assert!(out.take_drain_wanted(), "a drain is owed");
        // At or over it, the limit applies as usual.
        assert_eq!(out.enqueue(frame(1), 1), SendStatus::Dropped);
        let mut items = VecDeque::new();
        assert_eq!(out.take(&mut items).eviction, Some(Eviction::SlowConsumer));

        let out = Outbound::new(100, SlowConsumerPolicy::Close, none()).with_high_water(40);
        assert_eq!(out.enqueue(frame(39), 39), SendStatus::Sent);
        assert!(!out.take_drain_wanted());
        assert_eq!(out.enqueue(frame(1), 1), SendStatus::Buffered);
        out.written(40);
        assert_eq!(out.enqueue(frame(10), 10), SendStatus::Sent);
        // Without a mark (WebSocket), only an empty queue is exempt.
        let out = Outbound::new(100, SlowConsumerPolicy::Drop, none());
        assert_eq!(out.enqueue(frame(30), 30), SendStatus::Sent);
        assert_eq!(out.enqueue(frame(90), 90), SendStatus::Dropped);
    }

    #[test]
    fn congestion_reports_buffered_and_owes_a_drain() {
        let out = Outbound::new(1000, SlowConsumerPolicy::Drop, WakeTarget::none());
        out.set_congested(true);
        assert_eq!(out.enqueue(frame(10), 10), SendStatus::Buffered);
        assert!(out.take_drain_wanted());
        assert!(!out.take_drain_wanted());
    }
}
