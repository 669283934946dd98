//! The HTTP side of the queue. A connection's responses must leave in the
//! order of its requests, whoever writes them: JavaScript's (written by
//! the workers, which end them in order) and the I/O thread's own (a 404,
//! a fixed route, a 400 that closes). So the queue counts the responses
//! that ended, under the same lock as their bytes, and the I/O thread
//! queues a response of its own only once every response before it ended,
//! behind their bytes. It learns of ends without a wake-up per response:
//! only when it waits for one (`response_awaited`) does an end wake it.

use std::sync::atomic::Ordering;

use bytes::BytesMut;

use super::{OutItem, Outbound, SendStatus};

impl Outbound {
    /// Queue `len` bytes of a response, written by `write` at the end of
    /// the coalescing buffer; `ends`: they are the response's last. Returns
    /// the status and whether the I/O thread must be woken for the bytes
    /// (a wake-up it awaited is sent here).
    pub fn push_response(
        &self,
        len: usize,
        ends: bool,
        write: impl FnOnce(&mut BytesMut),
    ) -> (SendStatus, bool) {
        let mut state = self.state.lock();
        if let Err(refused) = self.admit(&mut state, len, false) {
            return (refused, false);
        }
        let was_empty = state.items.is_empty();
        if len > 0 {
            Self::coalesce(&mut state, len, write);
        }
        let awaited = ends && {
            state.responses_ended = state.responses_ended.wrapping_add(1);
            std::mem::take(&mut state.response_awaited)
        };
        let (status, wake) = self.accepted(state, len, was_empty && len > 0);
        if awaited {
            self.wake();
        }
        (status, wake)
    }

    /// A response ended whose last bytes went out without
    /// [`Outbound::push_response`] (a large body written directly).
    pub fn end_response(&self) {
        let mut state = self.state.lock();
        state.responses_ended = state.responses_ended.wrapping_add(1);
        let awaited = std::mem::take(&mut state.response_awaited);
        drop(state);
        if awaited {
            self.wake();
        }
    }

    /// The I/O thread: how many responses ended; with `await_next`, the
    /// next end wakes it.
    pub fn responses_ended(&self, await_next: bool) -> u32 {
        let mut state = self.state.lock();
        state.response_awaited |= await_next;
        state.responses_ended
    }

    /// The I/O thread queues a response of its own behind the responses
    /// JavaScript owes for the `before` requests it was handed (a wrapping
    /// count), once they all ended, and with `close` the end of the
    /// connection after it. Returns false, and waits for the next end,
    /// while some have not.
    pub fn push_own_response(&self, before: u32, bytes: &[u8], close: bool) -> bool {
        let mut state = self.state.lock();
        if state.responses_ended != before {
            state.response_awaited = true;
            return false;
        }
        if state.closed || state.eviction.is_some() {
            return true;
        }
        // Always admitted: an error page or a fixed route is small, and
        // refusing it would leave the client waiting for an answer. No
        // wake-up: the I/O thread takes the queue next in this same turn.
        if !bytes.is_empty() {
            Self::coalesce(&mut state, bytes.len(), |buffer| {
                buffer.extend_from_slice(bytes)
            });
            self.buffered.fetch_add(bytes.len(), Ordering::AcqRel);
        }
        if close {
            state.items.push_back(OutItem::Close {
                code: 1000,
                reason: String::new(),
                go_away: false,
            });
        }
        true
    }
}
