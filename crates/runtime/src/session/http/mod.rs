//! What an HTTP connection reads: requests one after another (pipelined or
//! not), each matched natively (`http/routes.rs`). A request for a route
//! of JavaScript's crosses to the connection's worker as one record with
//! its route, parameters and raw header lines, its body after it in
//! pieces; everything else (a fixed route, 404, 405, 426, a malformed
//! request) is answered here, never reaching JavaScript.
//!
//! Responses leave in the order of the requests. JavaScript ends its own in
//! order; a response of ours waits until every one before it ended
//! (`outbound/http.rs`), and while it waits, nothing more is read. So does
//! a connection with `max_pipelined` requests in JavaScript's hands: the
//! rest wait in the socket, and TCP holds the client back.
//!
//! Deadlines: a request head must be complete `header_timeout` after its
//! first byte, and a body must progress every `body_timeout` (else `408`
//! and the connection closes); a connection with nothing in progress
//! closes after `keep_alive_timeout`. The time a handler takes has no
//! native limit: JavaScript owns it.
//!
//! Files: `app.static`'s requests are answered here (`files.rs`), and a
//! handler may hand its response over to be answered with a file
//! (`res.file`: the order arrives with the queue's progress); both are
//! decided by `serve.rs` and streamed by `sending.rs`.

use std::collections::VecDeque;
use std::time::Instant;

use switchboard_proto::http1::{BodyDecoder, HeadParser};

mod answers;
mod body;
mod files;
#[cfg(test)]
mod files_tests;
#[cfg(test)]
mod kept_tests;
#[cfg(test)]
mod order_tests;
mod request;
mod sending;
mod serve;
mod sockjs;
mod sockjs_answer;
mod sockjs_receive;
mod sockjs_rpc;
mod sockjs_send;
#[cfg(test)]
mod tests;

use super::Machine;
use crate::errors;
use crate::http::metrics::{RowId, Unrouted};
use crate::http::FileOrder;
use crate::tls::TlsInfo;

/// The interim response that lets a client waiting on
/// `Expect: 100-continue` send its body (RFC 9110 §10.1.1).
pub(super) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Input kept while a SockJS receiver is attached (a client that sends the
/// next request before the response ends); past it, reading pauses.
const RECEIVER_PENDING_MAX: usize = 64 * 1024;

pub(crate) struct HttpReader {
    parser: HeadParser,
    /// Input not used yet: a partial head or chunk line, or requests that
    /// wait (pipelining limit, a response of ours waiting its turn).
    pending: Vec<u8>,
    core: Core,
}

/// Everything but the parser, which lends the head it parsed.
struct Core {
    state: ReadState,
    /// Requests handed to JavaScript, and how many of their responses
    /// ended as last read from the queue (wrapping counts).
    dispatched: u32,
    ended: u32,
    /// Body bytes handed to the worker, and how many of them its handlers
    /// consumed as last read from the queue, over the connection's life:
    /// at most `body_window` apart (`outbound/http.rs`).
    body_sent: u64,
    body_consumed: u64,
    /// A `100 Continue` owed once the responses to the first this many
    /// requests ended (its request waits behind them).
    continue_owed: Option<u32>,
    /// Bodies begun (the one being read is number `bodies - 1`), and
    /// whether its handler asked for the rest of it to be discarded.
    bodies: u32,
    discarding: bool,
    /// The body being read, gathered whole before it crosses (`body.rs`).
    gathered: Vec<u8>,
    /// The worker heard `HTTP_OPEN`.
    opened: bool,
    remote: String,
    tls: Option<TlsInfo>,
    /// The first byte of the request head being read arrived then.
    head_started: Option<Instant>,
    /// The latest request's head was complete then, and the row its
    /// response of ours is counted in (`http/metrics.rs`): nothing more
    /// is read while a response of ours waits, so they are that
    /// response's when it is queued.
    started: Instant,
    row: RowId,
    /// The route (plus one) and start of the handler's file being
    /// answered (`serve.rs`), counted when it ends.
    order_counted: Option<(u32, u64)>,
    /// Since when nothing was in progress, as far as this side knows.
    idle_since: Instant,
    /// After the body being read, read nothing more (the request did not
    /// keep the connection alive).
    last_request: bool,
    /// The server is shutting down: serve what is in flight, then close.
    closing_when_idle: bool,
    /// Parameter values' storage, reused (see `recycle`).
    params: Vec<&'static str>,
    /// Files being sent, the front one moving (`sending.rs`); while there
    /// is one, nothing more is read.
    sending: VecDeque<sending::FileSend>,
    /// A handler's file order taken with the progress, answered in
    /// `on_outbound`.
    file_order: Option<Box<FileOrder>>,
    /// A SockJS session's receiving request in progress
    /// (`sockjs_receive.rs`); while there is one, nothing more is read.
    receiver: Option<Box<sockjs_receive::Receiver>>,
    /// SockJS sends on this connection whose answers waited for their
    /// handlers, and the acknowledgements read so far (wrapping).
    sockjs_acks_owed: u32,
    sockjs_acks: u32,
}

enum ReadState {
    Head,
    /// The body of the last request handed to JavaScript.
    Body(BodyDecoder),
    /// The body of a send to a SockJS session (`sockjs_send.rs`).
    SockJsSend(Box<sockjs_send::Send>),
    /// A SockJS send's answer waits for its messages' handlers
    /// (`sockjs_send.rs`); nothing more is read meanwhile.
    SockJsAck(Box<sockjs_send::AckWait>),
    /// A response of ours waits for JavaScript's responses before it.
    Held {
        response: Vec<u8>,
        close: bool,
    },
    /// Nothing more is read (the last response closes the connection).
    Done,
}

impl HttpReader {
    pub(super) fn new(
        config: &crate::config::ServerConfig,
        remote: String,
        tls: Option<TlsInfo>,
        now: Instant,
    ) -> Self {
        Self {
            parser: HeadParser::new(crate::handshake::head_limits(config)),
            pending: Vec::new(),
            core: Core {
                state: ReadState::Head,
                dispatched: 0,
                ended: 0,
                body_sent: 0,
                body_consumed: 0,
                continue_owed: None,
                bodies: 0,
                discarding: false,
                opened: false,
                remote,
                tls,
                head_started: None,
                started: now,
                row: RowId::MAX,
                order_counted: None,
                idle_since: now,
                last_request: false,
                closing_when_idle: false,
                params: Vec::new(),
                gathered: Vec::new(),
                sending: VecDeque::new(),
                file_order: None,
                receiver: None,
                sockjs_acks_owed: 0,
                sockjs_acks: 0,
            },
        }
    }

    /// Whether the worker knows this connection (and must hear `CLOSE`).
    pub(super) fn opened(&self) -> bool {
        self.core.opened
    }

    /// Whether reading the socket is any use now.
    pub(super) fn wants_read(&self, machine: &Machine) -> bool {
        if !self.core.sending.is_empty() {
            return false;
        }
        if self.core.receiver.is_some() {
            // Read on, keeping what comes for later, only to see the client
            // go away: an aborted receiver interrupts its session. What a
            // client may send meanwhile is bounded.
            return self.pending.len() < RECEIVER_PENDING_MAX;
        }
        match self.core.state {
            ReadState::Held { .. } | ReadState::Done | ReadState::SockJsAck(_) => false,
            ReadState::SockJsSend(_) => true,
            ReadState::Body(_) => !self.core.body_window_full(machine),
            ReadState::Head => {
                !self.core.closing_when_idle
                    && self.core.in_flight() < machine.config().http.max_pipelined as u32
            }
        }
    }

    /// Bytes that arrived.
    pub(super) fn on_bytes(&mut self, machine: &mut Machine, bytes: &[u8], now: Instant) {
        if self.pending.is_empty() {
            // The common case: whole requests in one read, parsed where
            // they lie.
            let used = self.process(machine, bytes, now);
            if used < bytes.len() && !matches!(self.core.state, ReadState::Done) {
                self.pending.extend_from_slice(&bytes[used..]);
            }
        } else {
            self.pending.extend_from_slice(bytes);
            self.resume(machine, now);
        }
        self.core.await_if_blocked(machine);
    }

    /// Go on with what waits in `pending`.
    fn resume(&mut self, machine: &mut Machine, now: Instant) {
        let pending = std::mem::take(&mut self.pending);
        let used = self.process(machine, &pending, now);
        self.pending = pending;
        if matches!(self.core.state, ReadState::Done) {
            self.pending = Vec::new();
        } else {
            self.pending.drain(..used);
            if self.pending.is_empty() {
                // A burst of pipelined requests leaves no capacity behind.
                self.pending = Vec::new();
            }
        }
    }

    /// Use what `input` holds; returns the bytes used.
    fn process(&mut self, machine: &mut Machine, input: &[u8], now: Instant) -> usize {
        let mut at = 0;
        loop {
            let core = &mut self.core;
            if (!core.sending.is_empty() || core.receiver.is_some())
                && !matches!(core.state, ReadState::Done)
            {
                // A file is being sent, or a SockJS receiver is attached:
                // what follows waits.
                return at;
            }
            if matches!(core.state, ReadState::Body(_)) {
                if at == input.len() {
                    return at;
                }
                if core.body_window_full(machine) {
                    // The handler is behind: wait until it consumes more
                    // (or discards the rest), reading nothing meanwhile.
                    core.refresh(machine, true);
                    if core.body_window_full(machine) {
                        return at;
                    }
                }
            }
            match &mut core.state {
                ReadState::Done => return input.len(),
                ReadState::Held { .. } | ReadState::SockJsAck(_) => return at,
                ReadState::SockJsSend(_) => {
                    if at == input.len() {
                        return at;
                    }
                    let used = core.sockjs_send_bytes(machine, &input[at..], now);
                    at += used;
                    if used == 0 && matches!(self.core.state, ReadState::SockJsSend(_)) {
                        return at;
                    }
                }
                ReadState::Body(decoder) => {
                    let chunk = match decoder.decode(&input[at..]) {
                        Ok(chunk) => chunk,
                        Err(error) => {
                            let reason = format!("{}: {}", error.code(), error);
                            core.body_failed(machine, error.status(), &reason);
                            return input.len();
                        }
                    };
                    at += chunk.consumed;
                    if !chunk.data.is_empty() || chunk.done {
                        let remaining = decoder.remaining();
                        core.body_piece(machine, chunk.data, chunk.done, remaining);
                    }
                    if chunk.done {
                        core.request_read(now);
                    } else if chunk.consumed == 0 {
                        return at;
                    }
                }
                ReadState::Head => {
                    if at == input.len() {
                        return at;
                    }
                    if core.closing_when_idle {
                        core.state = ReadState::Done;
                        return input.len();
                    }
                    let max_pipelined = machine.config().http.max_pipelined as u32;
                    if core.in_flight() >= max_pipelined {
                        core.refresh(machine, true);
                        if core.in_flight() >= max_pipelined {
                            return at;
                        }
                    }
                    core.head_started.get_or_insert(now);
                    match self.parser.parse(&input[at..]) {
                        Ok(None) => return at,
                        Ok(Some(head)) => {
                            at += head.head_len;
                            core.on_request(machine, &head, now);
                        }
                        Err(error) => {
                            core.reject(machine, error, now);
                            return input.len();
                        }
                    }
                }
            }
        }
    }

    /// What the queue says after other threads wrote to it: responses may
    /// have ended, letting a response of ours out or more requests in.
    /// Returns true when reading may resume (the driver reads again: the
    /// socket may hold data that no new readiness edge will announce).
    pub(super) fn on_outbound(&mut self, machine: &mut Machine, now: Instant) -> bool {
        let could_read = self.wants_read(machine);
        let core = &mut self.core;
        // A handler's file order can only be pending while its request is
        // in flight (and `in_flight` as last read never undercounts).
        let waiting = core.continue_owed.is_some()
            || !core.sending.is_empty()
            || core.receiver.is_some()
            || core.file_order.is_some()
            || match core.state {
                ReadState::Held { .. } | ReadState::SockJsAck(_) => true,
                ReadState::Head
                | ReadState::Done
                | ReadState::Body(_)
                | ReadState::SockJsSend(_) => core.in_flight() > 0,
            };
        if !waiting {
            return false;
        }
        core.refresh(machine, false);
        if core.in_flight() == 0 {
            core.idle_since = now;
        }
        if let Some(before) = core.continue_owed {
            // Its turn: the responses before it ended. Past it (its own
            // response ended already): a final status went instead.
            let turn = core.ended == before;
            if turn
                || core.dispatched.wrapping_sub(core.ended) < core.dispatched.wrapping_sub(before)
            {
                core.continue_owed = None;
                if turn {
                    machine
                        .connection
                        .outbound
                        .push_own_response(before, CONTINUE, false);
                }
            }
        }
        if let Some(order) = core.file_order.take() {
            // Its response is first in line: ahead of a held response of
            // ours, or a static file waiting for it.
            core.answer_order(machine, &order, now);
        }
        core.answer_if_acked(machine, now);
        if let ReadState::Held { .. } = core.state {
            let ReadState::Held { response, close } =
                std::mem::replace(&mut core.state, ReadState::Head)
            else {
                unreachable!("matched above");
            };
            core.respond(machine, response, close, now);
        }
        core.pump(machine, now);
        core.pump_receiver(machine, now);
        let sending = !core.sending.is_empty() || core.receiver.is_some();
        if core.closing_when_idle && core.in_flight() == 0 && !sending {
            core.close_now(machine);
            return false;
        }
        if matches!(core.state, ReadState::Head | ReadState::Body(_))
            && core.receiver.is_none()
            && !self.pending.is_empty()
        {
            self.resume(machine, now);
        }
        self.core.await_if_blocked(machine);
        !could_read && self.wants_read(machine)
    }

    /// Whether a static file is being sent, its head queued.
    pub(super) fn sending(&self) -> bool {
        self.core.sending()
    }

    /// Whether nothing is in progress: no request partly read, none in
    /// JavaScript's hands (as far as this side knows).
    pub(super) fn is_idle(&self) -> bool {
        matches!(self.core.state, ReadState::Head | ReadState::Done)
            && self.core.sending.is_empty()
            && self.core.receiver.is_none()
            && self.core.head_started.is_none()
            && self.core.in_flight() == 0
    }

    /// The server shuts down: requests in flight are answered, no new one
    /// is read.
    pub(super) fn on_shutdown(&mut self, machine: &mut Machine) {
        let core = &mut self.core;
        core.closing_when_idle = true;
        core.refresh(machine, true);
        if matches!(core.state, ReadState::Head)
            && core.in_flight() == 0
            && core.sending.is_empty()
            && core.receiver.is_none()
        {
            core.close_now(machine);
        }
    }

    /// The earliest time `on_deadline` has something to do.
    pub(super) fn next_deadline(&self, machine: &Machine) -> Option<Instant> {
        let http = &machine.config().http;
        let core = &self.core;
        if let Some(send) = core.sending.front() {
            return send.deadline(http.body_timeout);
        }
        if let Some(receiver) = &core.receiver {
            return Some(receiver.deadline());
        }
        match core.state {
            ReadState::Body(_) | ReadState::SockJsSend(_) => {
                Some(machine.liveness.last_received + http.body_timeout)
            }
            ReadState::Head => match core.head_started {
                Some(started) => Some(started + http.header_timeout),
                None => Some(core.idle_since + http.keep_alive_timeout),
            },
            ReadState::SockJsAck(ref wait) => Some(wait.deadline),
            ReadState::Held { .. } | ReadState::Done => None,
        }
    }

    pub(super) fn on_deadline(&mut self, machine: &mut Machine, now: Instant) {
        let http = &machine.config().http;
        let (header_timeout, body_timeout, keep_alive) = (
            http.header_timeout,
            http.body_timeout,
            http.keep_alive_timeout,
        );
        let core = &mut self.core;
        if !core.sending.is_empty() {
            core.send_stalled(machine, now, body_timeout);
            return;
        }
        if core.receiver.is_some() {
            core.on_receiver_deadline(machine, now);
            return;
        }
        match core.state {
            ReadState::SockJsAck(_) => core.answer_if_acked(machine, now),
            ReadState::SockJsSend(_) if now >= machine.liveness.last_received + body_timeout => {
                core.state = ReadState::Done;
                let failure = errors::HTTP_REQUEST_TIMEOUT;
                core.refuse(machine, failure.status, &failure.reason(), now);
            }
            ReadState::Body(_) if now >= machine.liveness.last_received + body_timeout => {
                let failure = errors::HTTP_REQUEST_TIMEOUT;
                core.body_failed(machine, failure.status, &failure.reason());
            }
            ReadState::Head => match core.head_started {
                Some(started) if now >= started + header_timeout => {
                    let failure = errors::HTTP_REQUEST_TIMEOUT;
                    core.started = started;
                    core.row = machine
                        .server
                        .http_metrics
                        .unrouted_row(Unrouted::BadRequest);
                    core.refuse(machine, failure.status, &failure.reason(), now);
                }
                None if now >= core.idle_since + keep_alive => {
                    core.refresh(machine, false);
                    if core.in_flight() > 0 {
                        // Still answering (or the ends were not read yet):
                        // idle counts from now.
                        core.idle_since = now;
                    } else {
                        core.close_now(machine);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

impl Core {
    fn in_flight(&self) -> u32 {
        self.dispatched.wrapping_sub(self.ended)
    }

    /// Read where the handlers are (responses ended, body consumed, a
    /// discard asked for); with `await_next` the next change wakes us.
    fn refresh(&mut self, machine: &Machine, await_next: bool) {
        let progress = machine.connection.outbound.http_progress(await_next);
        if progress.file.is_some() {
            self.file_order = progress.file;
        }
        self.ended = progress.responses_ended;
        self.body_consumed = progress.body_consumed;
        self.sockjs_acks = progress.sockjs_acks;
        let current = self.bodies.wrapping_sub(1);
        if matches!(self.state, ReadState::Body(_)) && progress.discard_body == Some(current) {
            self.discarding = true;
        }
    }

    /// Reading stops (`wants_read`) while the handlers hold `max_pipelined`
    /// requests or a body is a window ahead of its handler: then the next
    /// change of theirs must wake us, whether or not input is waiting.
    fn await_if_blocked(&mut self, machine: &Machine) {
        let blocked = match self.state {
            ReadState::Body(_) => self.body_window_full(machine),
            ReadState::Head => self.in_flight() >= machine.config().http.max_pipelined as u32,
            ReadState::Held { .. } | ReadState::Done | ReadState::SockJsSend(_) => false,
            // The acknowledgement it waits for must wake it.
            ReadState::SockJsAck(_) => true,
        };
        if blocked && self.sending.is_empty() {
            self.refresh(machine, true);
        }
    }

    /// Whether the body being read is a window ahead of its handler.
    fn body_window_full(&self, machine: &Machine) -> bool {
        !self.discarding
            && self.body_sent.saturating_sub(self.body_consumed)
                >= machine.config().http.body_window as u64
    }

    /// A request's head and body are read: the next head may come.
    fn request_read(&mut self, now: Instant) {
        self.head_started = None;
        self.idle_since = now;
        self.state = if self.last_request {
            ReadState::Done
        } else {
            ReadState::Head
        };
    }
}
