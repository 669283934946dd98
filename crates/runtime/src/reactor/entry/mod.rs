//! One connection in an I/O thread's slab: its stream and where it stands,
//! from the request head to the last byte. Each phase is a state of its
//! own; the state machines that decide (`handshake.rs`, `session/`) are fed
//! here, and here is all the I/O they cause.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Protocol;
use crate::connection::ConnectionKind;
use crate::errors;
use crate::events::Transport;
use crate::handshake::{self, Response, Upgrade};
use crate::opening::Accepted;
use crate::outbound::OutItem;
use crate::session::{Session, Step};
use crate::state::ServerState;
use crate::stats;
use crate::stream::Stream;
use crate::tls::TlsInfo;
use crate::wake::{IoWaker, WakeTarget};
use switchboard_proto::http1::HeadParser;

mod head;

use super::inbox::Inbox;

/// How long we keep reading (and discarding) after our final frame so that
/// the peer's last bytes do not turn our close into a TCP reset.
const LINGER: Duration = Duration::from_secs(2);

/// How long a response may take to write before the connection is dropped.
const RESPONSE_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads of a request head grow its buffer by this much.
const HEAD_READ_BYTES: usize = 1024;

pub(crate) struct Entry {
    pub stream: Stream,
    pub phase: Phase,
    /// Distinguishes this connection from earlier ones at the same slab key
    /// (in tokens, timer entries and wake-ups).
    pub generation: u32,
    /// The deadline armed in the timer heap, if any.
    pub armed: Option<Instant>,
    /// Counted in `ServerState::admitted` (refused connections are not).
    pub admitted: bool,
    /// Not reading: its worker's event queue is full.
    pub paused: bool,
    /// In the reactor's list of paused entries (`Reactor::paused`), which
    /// `Room` walks: kept here so that knowing it costs no search of the
    /// list (a search per event made 1,000 paused connections quadratic).
    pub listed: bool,
    /// The peer closed or reset its side: the end of the stream (or the
    /// error) waits behind whatever data is still unread, and no new
    /// readiness edge will announce it, so reading goes on until it shows.
    pub hung_up: bool,
}

pub(crate) enum Phase {
    /// HTTP: reading the request head until `deadline`.
    Head(Box<Head>),
    /// HTTP: waiting for the route's `upgrade` hook.
    Hook(Box<Hook>),
    /// Writing a response, then closing.
    Respond(Box<Respond>),
    /// An open connection: its state machine.
    Session(Session),
    /// After the last frame: reading and discarding until the peer closes
    /// or `deadline`.
    Linger { deadline: Instant },
}

pub(crate) struct Head {
    buffer: Vec<u8>,
    /// The strict parser of every request (`switchboard_proto::http1`):
    /// it decides whether the head is complete and well formed, and
    /// whether it asks for a WebSocket.
    parser: HeadParser,
    remote: String,
    deadline: Instant,
}

pub(crate) struct Hook {
    upgrade: Box<Upgrade>,
    id: u64,
    worker: usize,
    remote: String,
    tls: Option<TlsInfo>,
    leftover: Vec<u8>,
    deadline: Instant,
}

pub(crate) struct Respond {
    bytes: Vec<u8>,
    written: usize,
    deadline: Instant,
}

/// What an entry's owner does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Keep,
    /// Close the stream and free the slot.
    Remove,
}

/// What the I/O thread lends an entry while it works.
pub(crate) struct Context<'a> {
    pub server: &'a Arc<ServerState>,
    pub inbox: &'a Arc<Inbox>,
    pub waker: &'a Arc<dyn IoWaker>,
    pub read_buffer: &'a mut [u8],
    pub items: &'a mut VecDeque<OutItem>,
    /// Entries to service again before sleeping: a read filled the buffer,
    /// or TLS holds plaintext already.
    pub again: &'a mut Vec<usize>,
    pub now: Instant,
}

impl Entry {
    /// A connection accepted on an HTTP listener: its request head next.
    pub(crate) fn http(
        stream: Stream,
        remote: String,
        generation: u32,
        now: Instant,
        server: &ServerState,
    ) -> Self {
        Self::new(
            stream,
            Phase::Head(Box::new(Head {
                buffer: Vec::new(),
                parser: HeadParser::new(handshake::head_limits(&server.config)),
                remote,
                deadline: now + server.config.handshake_timeout,
            })),
            generation,
        )
    }

    /// A connection that gets a response and nothing else (a refusal).
    pub(crate) fn respond(
        stream: Stream,
        response: Response,
        generation: u32,
        now: Instant,
        server: &ServerState,
    ) -> Self {
        if response.rejected {
            stats::add(&server.stats.handshakes_rejected, 1);
        }
        Self::new(
            stream,
            Phase::Respond(Box::new(Respond {
                bytes: response.bytes,
                written: 0,
                deadline: now + RESPONSE_WRITE_TIMEOUT,
            })),
            generation,
        )
    }

    /// A connection whose session starts at once (an RPC listener).
    pub(crate) fn session(stream: Stream, session: Session, generation: u32) -> Self {
        Self::new(stream, Phase::Session(session), generation)
    }

    fn new(stream: Stream, phase: Phase, generation: u32) -> Self {
        Self {
            stream,
            phase,
            generation,
            armed: None,
            admitted: false,
            paused: false,
            listed: false,
            hung_up: false,
        }
    }

    /// The time the current phase next needs attention.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Head(head) => Some(head.deadline),
            Phase::Hook(hook) => Some(hook.deadline),
            Phase::Respond(respond) => Some(respond.deadline),
            Phase::Session(session) => session.next_deadline(),
            Phase::Linger { deadline } => Some(*deadline),
        }
    }

    /// Do what can be done now: read (when `readable` or the phase wants
    /// to), handle queued items, write.
    pub(crate) fn service(&mut self, key: usize, readable: bool, cx: &mut Context<'_>) -> Next {
        let next = match &mut self.phase {
            Phase::Head(_) => self.read_head(key, cx),
            Phase::Hook(_) => Next::Keep,
            Phase::Respond(_) => self.write_response(),
            Phase::Session(_) => self.run_session(key, readable, cx),
            Phase::Linger { .. } => self.discard_input(cx),
        };
        if next == Next::Keep && self.stream.has_buffered_output() {
            // TLS records (a handshake in progress, a close_notify).
            if self.stream.flush_buffered().is_err() {
                return self.end();
            }
        }
        next
    }

    /// A deadline armed for this entry passed.
    pub(crate) fn on_deadline(&mut self, key: usize, cx: &mut Context<'_>) -> Next {
        let now = cx.now;
        match &mut self.phase {
            Phase::Head(head) if now >= head.deadline => {
                let response = Response::failure(errors::HTTP_REQUEST_TIMEOUT, &[]);
                self.respond_then_close(response, cx)
            }
            Phase::Hook(hook) if now >= hook.deadline => {
                // The hook took too long (or its worker died and nobody
                // answered): the client gets 503.
                cx.server.pending_upgrades.lock().remove(&hook.id);
                let failure = errors::UPGRADE_TIMEOUT;
                let response = Response::rejection(failure.status, &failure.reason());
                self.respond_then_close(response, cx)
            }
            Phase::Respond(respond) if now >= respond.deadline => Next::Remove,
            Phase::Linger { deadline } if now >= *deadline => Next::Remove,
            Phase::Session(session) => {
                if session.on_deadline(now) == Step::End {
                    return self.end_session((1006, String::new()), true);
                }
                self.service(key, false, cx)
            }
            _ => Next::Keep,
        }
    }

    /// The server begins a graceful shutdown: a connection still in its
    /// HTTP phase is dropped; a session closes or drains.
    pub(crate) fn on_shutdown(&mut self, key: usize, cx: &mut Context<'_>) -> Next {
        match &mut self.phase {
            Phase::Head(_) => Next::Remove,
            Phase::Hook(hook) => {
                cx.server.pending_upgrades.lock().remove(&hook.id);
                Next::Remove
            }
            Phase::Session(session) => {
                session.on_shutdown(cx.now);
                self.service(key, false, cx)
            }
            Phase::Respond(_) | Phase::Linger { .. } => Next::Keep,
        }
    }

    /// The drain timeout passed: the connection ends now.
    pub(crate) fn on_force(&mut self) {
        if let Phase::Session(_) = self.phase {
            let Phase::Session(mut session) = std::mem::replace(
                &mut self.phase,
                Phase::Linger {
                    deadline: Instant::now(),
                },
            ) else {
                unreachable!("matched above");
            };
            let outcome = session.on_force();
            session.finish(outcome);
        }
    }

    /// Its worker's event queue has room again.
    pub(crate) fn resume(&mut self, key: usize, cx: &mut Context<'_>) -> Next {
        if !self.paused {
            return Next::Keep;
        }
        self.paused = false;
        // Data may have arrived while paused, with no new edge to tell.
        self.service(key, true, cx)
    }

    fn run_session(&mut self, key: usize, readable: bool, cx: &mut Context<'_>) -> Next {
        let Phase::Session(session) = &mut self.phase else {
            return Next::Keep;
        };
        if readable && !self.paused && session.wants_read() {
            // The server's reference, not `cx`'s: the queue is used across
            // the read, which takes `cx`.
            let server = cx.server;
            let queue = &server.queues[session.connection().worker()];
            if queue.is_full() && queue.wait_for_room(cx.waker) {
                // Full already (other connections filled it): pause before
                // reading, so a worker's queue passes its bound by one read
                // at most, not by one read per ready connection.
                self.paused = true;
            } else {
                match read_into(&mut self.stream, session, cx) {
                    Read::Progress { filled } => {
                        if queue.is_full() && queue.wait_for_room(cx.waker) {
                            self.paused = true;
                        } else if filled || self.hung_up || self.stream.may_have_more() {
                            // More may wait; after the other ready connections.
                            cx.again.push(key);
                        }
                    }
                    Read::WouldBlock => {}
                    Read::Eof => {
                        if session.on_eof() == Step::End {
                            return self.end_session((1006, String::new()), false);
                        }
                    }
                }
            }
        }
        let Phase::Session(session) = &mut self.phase else {
            return Next::Keep;
        };
        // What other threads queued (the socket is ours from here), then
        // everything the socket takes.
        // Responses that ended may let an HTTP session's own response (or
        // its next requests) through: queued before the queue is taken, so
        // they go out in this turn, behind the responses before them.
        if session.read_resumed(cx.now) && !self.paused {
            // Input may wait in the socket with no new edge to announce it.
            cx.again.push(key);
        }
        let taken = session.connection().outbound.take(cx.items);
        if session.on_outbound(cx.items, taken, cx.now) == Step::End {
            return self.end_session((1006, String::new()), false);
        }
        let stream = &mut self.stream;
        if session
            .flush(|slices| stream.write_vectored(slices), cx.now)
            .is_err()
        {
            return self.end_session((1006, String::new()), false);
        }
        if session.wants_another_turn() {
            // A file of ours is being sent and the socket took all of it.
            cx.again.push(key);
        }
        if session.is_done() && !self.stream.has_buffered_output() {
            return self.end_session((1006, String::new()), true);
        }
        // Nothing of ours in flight: the workers may write their replies
        // themselves until we queue or take something again.
        let direct = session
            .allows_direct_writes()
            .then(|| self.stream.direct_fd())
            .flatten();
        session.connection().outbound.release(direct);
        Next::Keep
    }

    /// The session is over: its worker hears `CLOSE` (with what was decided,
    /// else `fallback`), and the stream lingers or closes.
    fn end_session(&mut self, fallback: (u16, String), linger: bool) -> Next {
        let deadline = Instant::now() + LINGER;
        let Phase::Session(session) =
            std::mem::replace(&mut self.phase, Phase::Linger { deadline })
        else {
            return Next::Remove;
        };
        let needs_linger = linger && session.needs_linger();
        session.finish(fallback);
        if !needs_linger {
            self.stream.shutdown_write();
            return Next::Remove;
        }
        self.stream.shutdown_write();
        Next::Keep
    }

    /// End whatever phase this is, now (an I/O error).
    fn end(&mut self) -> Next {
        if let Phase::Session(_) = self.phase {
            self.end_session((1006, String::new()), false);
        }
        Next::Remove
    }

    fn discard_input(&mut self, cx: &mut Context<'_>) -> Next {
        loop {
            match self.stream.read(cx.read_buffer) {
                Ok(0) => return Next::Remove,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                Err(_) => return Next::Remove,
            }
        }
    }
}

enum Read {
    /// Bytes went to the session; `filled`: they filled the buffer, so more
    /// may be waiting.
    Progress {
        filled: bool,
    },
    WouldBlock,
    Eof,
}

/// One read into the thread's buffer, fed to the session. One read per
/// turn per connection keeps a fast sender from starving the others; a
/// read shorter than the buffer emptied the socket, and the next arrival
/// brings a new edge.
fn read_into(stream: &mut Stream, session: &mut Session, cx: &mut Context<'_>) -> Read {
    match stream.read(cx.read_buffer) {
        Ok(0) => Read::Eof,
        Ok(n) => {
            // TLS: the first plaintext comes after the handshake, whose
            // results the protocol's RPC_OPEN reports.
            if session.wants_tls_info() {
                if let Some(info) = stream.tls_info() {
                    session.set_tls_info(info);
                }
            }
            session.on_bytes(&mut cx.read_buffer[..n], cx.now);
            Read::Progress {
                filled: n == cx.read_buffer.len(),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Read::WouldBlock,
        Err(_) => Read::Eof,
    }
}

/// Start serving a connection a listener accepted (on this thread).
pub(crate) fn adopt(
    stream: Stream,
    remote: String,
    protocol: Protocol,
    transport: Transport,
    key: usize,
    generation: u32,
    cx: &mut Context<'_>,
) -> Entry {
    match protocol {
        Protocol::Http => Entry::http(stream, remote, generation, cx.now, cx.server),
        Protocol::Rpc => {
            let server = cx.server;
            let accepted = Accepted {
                id: server.next_id(),
                worker: server.pick_worker(),
                kind: ConnectionKind::RpcStream,
                route: None,
                transport,
                remote,
                protocol: String::new(),
                extensions: String::new(),
                deflate: None,
                tls: None,
            };
            let waker = WakeTarget::new(cx.waker.clone(), key, generation);
            let session = Session::start(accepted, server.clone(), waker, cx.now);
            Entry::session(stream, session, generation)
        }
    }
}
