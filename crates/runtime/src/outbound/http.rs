//! The HTTP side of the queue: what the workers do that the I/O thread
//! waits on, kept under the queue's lock.
//!
//! **Responses in order.** A connection's responses must leave in the
//! order of its requests, whoever writes them: JavaScript's (written by the
//! workers, which end them in order) and the I/O thread's own (a 404, a
//! fixed route, a 400 that closes). So the queue counts the responses that
//! ended, under the same lock as their bytes, and the I/O thread queues a
//! response of its own only once every response before it ended, behind
//! their bytes.
//!
//! **Bodies at the handler's pace.** The I/O thread hands a body to the
//! worker up to a window ahead of what the handler consumed (acknowledged
//! here); then it stops reading the socket until more is consumed, so an
//! upload a handler reads slowly holds a bounded amount of memory. A
//! handler that answers without reading its body has the rest discarded.
//!
//! **Files a handler sends** (`res.file`). The worker hands the order over
//! here, under the same lock, behind the bytes of the responses before it,
//! and wakes the I/O thread, which takes it with the progress and answers
//! (the worker never touches the disk). The response ends when the I/O
//! thread queued the file's last byte: it counts that end itself.
//!
//! The I/O thread learns of the rest without a wake-up per event: only while
//! it waits (`awaited`) does an end, an acknowledgement or a discard wake it.

use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};

use super::{OutItem, Outbound, SendStatus, State};
use crate::http::FileOrder;

/// What the I/O thread of an HTTP connection waits on.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// Responses whose last bytes are queued (or written). Wrapping: only
    /// the distance to the requests handed out counts.
    responses_ended: u32,
    /// Body bytes the handlers consumed, over the connection's life.
    body_consumed: u64,
    /// The handlers want the body numbered `discard_body - 1` (bodies
    /// counted from 0 over the connection's life) discarded; 0: none.
    discard_body: u32,
    /// The I/O thread waits: the next change wakes it.
    awaited: bool,
    /// A file the first response in line is to be answered with. One at a
    /// time: the worker holds the responses after it until it is sent.
    file: Option<Box<FileOrder>>,
    /// SockJS sends whose messages a session's worker handled (wrapping):
    /// their answers wait for it (`session/http/sockjs_send.rs`).
    sockjs_acks: u32,
}

/// A snapshot of [`Progress`] for the I/O thread.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HttpProgress {
    pub responses_ended: u32,
    pub body_consumed: u64,
    /// The body of this number (wrapping) is to be discarded.
    pub discard_body: Option<u32>,
    /// A file to answer with (taken: the next snapshot has none).
    pub file: Option<Box<FileOrder>>,
    /// SockJS sends acknowledged (wrapping).
    pub sockjs_acks: u32,
}

fn progress(state: &mut State) -> &mut Progress {
    state.http.get_or_insert_with(Box::default)
}

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
            let progress = progress(&mut state);
            progress.responses_ended = progress.responses_ended.wrapping_add(1);
            std::mem::take(&mut progress.awaited)
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
        self.changed(|progress| {
            progress.responses_ended = progress.responses_ended.wrapping_add(1)
        });
    }

    /// The handlers consumed `bytes` more of the connection's bodies.
    pub fn body_consumed(&self, bytes: u64) {
        self.changed(|progress| progress.body_consumed += bytes);
    }

    /// A SockJS session's worker handled the messages of a send this
    /// connection carried: its answer may go.
    pub fn sockjs_acked(&self) {
        self.changed(|progress| progress.sockjs_acks = progress.sockjs_acks.wrapping_add(1));
    }

    /// The handlers want body number `body` (wrapping count) discarded.
    pub fn discard_body(&self, body: u32) {
        self.changed(|progress| progress.discard_body = body.wrapping_add(1));
    }

    fn changed(&self, change: impl FnOnce(&mut Progress)) {
        let mut state = self.state.lock();
        let progress = progress(&mut state);
        change(progress);
        let awaited = std::mem::take(&mut progress.awaited);
        drop(state);
        if awaited {
            self.wake();
        }
    }

    /// The I/O thread: where the handlers are; with `await_next`, the next
    /// change wakes it.
    pub fn http_progress(&self, await_next: bool) -> HttpProgress {
        let mut state = self.state.lock();
        let progress = progress(&mut state);
        progress.awaited |= await_next;
        HttpProgress {
            responses_ended: progress.responses_ended,
            body_consumed: progress.body_consumed,
            discard_body: progress.discard_body.checked_sub(1),
            file: progress.file.take(),
            sockjs_acks: progress.sockjs_acks,
        }
    }

    /// A worker: answer the first response in line with a file. The I/O
    /// thread is woken at once, not at the worker's uncork: a direct write
    /// at uncork would not wake it, and only it may open the file. Returns
    /// `Closed` when the connection is gone.
    pub fn order_file(&self, order: Box<FileOrder>) -> SendStatus {
        let mut state = self.state.lock();
        if state.closed || state.eviction.is_some() {
            return SendStatus::Closed;
        }
        let progress = progress(&mut state);
        progress.file = Some(order);
        progress.awaited = false;
        drop(state);
        self.wake();
        SendStatus::Sent
    }

    /// The I/O thread queued the last bytes of a response JavaScript
    /// handed it (a file): count its end, and with `close` end the
    /// connection after it. The I/O thread takes the queue next in this
    /// same turn; a wake-up it awaited (a response of its own held behind
    /// this one) brings it back for another.
    pub fn end_own_response(&self, close: bool) {
        let mut state = self.state.lock();
        let progress = progress(&mut state);
        progress.responses_ended = progress.responses_ended.wrapping_add(1);
        let awaited = std::mem::take(&mut progress.awaited);
        if close && !state.closed && state.eviction.is_none() {
            state.items.push_back(OutItem::Close {
                code: 1000,
                reason: String::new(),
                go_away: false,
            });
        }
        drop(state);
        if awaited {
            self.wake();
        }
    }

    /// Whether the I/O thread waits for the next change (for tests).
    #[cfg(test)]
    pub(crate) fn http_awaited(&self) -> bool {
        let mut state = self.state.lock();
        progress(&mut state).awaited
    }

    /// The I/O thread queues a response of its own behind the responses
    /// JavaScript owes for the `before` requests it was handed (a wrapping
    /// count), once they all ended, and with `close` the end of the
    /// connection after it. Returns false, and waits for the next end,
    /// while some have not.
    pub fn push_own_response(&self, before: u32, bytes: &[u8], close: bool) -> bool {
        let mut state = self.state.lock();
        let progress = progress(&mut state);
        if progress.responses_ended != before {
            progress.awaited = true;
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

    /// The I/O thread queues more of a response of its own whose head
    /// [`Outbound::push_own_response`] queued (a static file's next piece):
    /// shared, not copied, and admitted whatever the limit, since the
    /// I/O thread paces these itself by [`Outbound::buffered`]. Returns
    /// false when the connection is closed or closing.
    pub fn push_own_bytes(&self, bytes: Bytes) -> bool {
        let mut state = self.state.lock();
        if state.closed || state.eviction.is_some() {
            return false;
        }
        self.buffered.fetch_add(bytes.len(), Ordering::AcqRel);
        state.items.push_back(OutItem::Frame(bytes));
        true
    }
}
