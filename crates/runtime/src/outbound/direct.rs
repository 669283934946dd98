//! Direct writes: while a connection's I/O thread has nothing of its own in
//! flight, it releases the socket, and the thread that sends (a worker at
//! the end of a batch of handlers) writes queued frames to it itself, under
//! the queue's lock, instead of waking the I/O thread: one thread hop less
//! per message. The I/O thread takes the socket back with
//! [`Outbound::take`] (or [`Outbound::close`]) under the same lock, so one
//! thread at a time writes, and none after the descriptor is closed.

use std::io::{self, IoSlice};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use bytes::{Buf, BytesMut};

use super::{OutItem, Outbound, SendStatus, State};
use crate::stats::{self, Stats};

/// Who may write to the connection's socket now: only its I/O thread (it
/// has frames of its own in flight, the socket is full, the stream is TLS
/// or compresses, or the session is closing), or any thread that holds the
/// lock, straight to this descriptor (see [`Outbound::write_direct`]). A
/// descriptor and not an enum: descriptors are never negative, so -1 says
/// "the I/O thread" in 4 bytes, which keeps the shared part of an idle
/// connection within two cache lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Writer(RawFd);

impl Writer {
    pub(super) const IO_THREAD: Writer = Writer(-1);

    pub(super) fn direct(fd: RawFd) -> Self {
        debug_assert!(fd >= 0, "a descriptor is never negative");
        Writer(fd)
    }

    /// The descriptor other threads may write to, if the socket is released.
    pub(super) fn fd(self) -> Option<RawFd> {
        (self.0 >= 0).then_some(self.0)
    }
}

impl Default for Writer {
    fn default() -> Self {
        Writer::IO_THREAD
    }
}

/// Most buffers one direct write hands to `writev`.
const MAX_DIRECT_SLICES: usize = 64;

impl Outbound {
    /// The I/O thread has nothing of its own in flight: from now on the
    /// threads that send may write straight to `fd` (none: a TLS or
    /// compressing stream, or a closing session, which only it writes).
    /// Unless something was queued meanwhile: then it stays the writer, and
    /// the wake-up that came with the items brings it back.
    pub fn release(&self, fd: Option<RawFd>) {
        let mut state = self.state.lock();
        if let Some(fd) = fd {
            if state.items.is_empty() && !state.closed && state.eviction.is_none() {
                state.writer = Writer::direct(fd);
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
        let Some(fd) = state.writer.fd() else {
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
        let fd = state.writer.fd()?;
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
                    state.writer = Writer::IO_THREAD;
                    return None;
                }
            };
            if count + extra.len() == MAX_DIRECT_SLICES {
                state.writer = Writer::IO_THREAD;
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
            state.writer = Writer::IO_THREAD;
            self.congested.store(true, Ordering::Release);
        }
        Some(left)
    }
}
