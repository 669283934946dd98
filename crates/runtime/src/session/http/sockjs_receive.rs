//! A receiving request of a SockJS session (xhr, xhr_streaming,
//! eventsource, htmlfile, jsonp): it attaches to its session
//! (`crate::sockjs`), opening it when it is new, and writes the session's
//! frames in its transport's wrapping.
//!
//! - **Polling** (xhr, jsonp): the response is one frame (the messages
//!   waiting, merged into one `a[...]`; or `o`, `h`, `c[...]`), written
//!   whole with its length once there is one, so HTTP/1.0 and HTTP/1.1
//!   clients alike keep their connection.
//! - **Streaming** (xhr_streaming, eventsource, htmlfile): the head and the
//!   prelude at once, then each frame as it comes, one chunk per frame on
//!   HTTP/1.1 (an HTTP/1.0 response is delimited by closing the
//!   connection). After `responseLimit` bytes of frames the response ends,
//!   so a browser can let go of what it received; the session waits for
//!   the client's next request.
//!
//! While a receiver is attached nothing more is read from its connection
//! (a client waits for a response before it sends on the same connection)
//! and frames are taken from the session only while less than
//! [`QUEUE_LOW`] waits to be written to this socket: a slow client backs
//! up into the session's queue, where the route's `maxBackpressure` and
//! slow-consumer policy apply as on any connection. A heartbeat frame
//! follows a silent `heartbeat` interval.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_proto::http1::{self, BodyKind, RequestHead, ResponseBody, Version};
use switchboard_proto::sockjs::{self, Framing, ANOTHER_CONNECTION_STILL_OPEN};

use super::answers::frame;
use super::sockjs_answer::Answer;
use super::Core;
use crate::config::SlowConsumerPolicy;
use crate::connection::{Connection, ConnectionKind};
use crate::errors;
use crate::events::{Record, TlsRecord};
use crate::outbound::{rpc_high_water, OutItem, Outbound};
use crate::session::Machine;
use crate::sockjs::{close_frame, CarriedOpening, Forward, Refused, RpcCarriage, SockJsSession};
use crate::state::{PendingUpgrade, ServerState, UpgradeDecision};
use crate::tls::TlsInfo;
use crate::wake::WakeTarget;

/// Frames are taken from the session while less than this waits to be
/// written to the receiver's socket (as a file is read, `sending.rs`).
const QUEUE_LOW: usize = 256 * 1024;

/// A receiving request, as the dispatch found it.
pub(super) struct Request<'h> {
    pub(super) route: usize,
    pub(super) session: &'h str,
    pub(super) framing: Framing,
    /// The response's header lines (type, caching, CORS, cookie).
    pub(super) headers: String,
    pub(super) keep_alive: bool,
}

/// A receiving request in progress.
pub(super) struct Receiver {
    session: Arc<SockJsSession>,
    server: Arc<ServerState>,
    framing: Framing,
    headers: String,
    version: Version,
    /// The connection stays open after the response.
    keep_alive: bool,
    /// Streaming: the head and prelude are queued.
    started: bool,
    /// Bytes of frames in this response, against `limit`.
    sent: usize,
    limit: usize,
    heartbeat: Duration,
    next_heartbeat: Instant,
    /// The `upgrade` hook of a new session must decide by then.
    hook_deadline: Option<Instant>,
    /// Attached to the session: it must be detached at the end.
    attached: bool,
    /// Ended as the protocol says (not aborted by the network).
    ended: bool,
    scratch: VecDeque<OutItem>,
    wrapped: Vec<u8>,
    /// Frames (and the end) waiting for the streaming head's turn.
    held: Vec<Bytes>,
    held_end: bool,
}

impl Drop for Receiver {
    /// A receiver dropped before its end was aborted (the client went
    /// away, the connection failed): the session is interrupted.
    fn drop(&mut self) {
        if self.attached && !self.ended {
            self.session.detach(&*self.server, true, Instant::now());
        }
    }
}

impl Receiver {
    /// When `on_receiver_deadline` has something to do.
    pub(super) fn deadline(&self) -> Instant {
        match self.hook_deadline {
            Some(hook) => hook.min(self.next_heartbeat),
            None => self.next_heartbeat,
        }
    }

    fn chunked(&self) -> bool {
        self.version == Version::Http11
    }

    /// Append `frames`, wrapped for the transport (and chunked), to `out`.
    fn wrap(&mut self, frames: &[Bytes], out: &mut Vec<u8>) {
        for frame in frames {
            // Encoded frames are text (they were written from `str`s).
            let Ok(text) = std::str::from_utf8(frame) else {
                continue;
            };
            self.wrapped.clear();
            self.framing.write_encoded(&mut self.wrapped, text);
            self.sent += self.wrapped.len();
            if self.chunked() && !self.framing.is_polling() {
                http1::write_chunk(out, &self.wrapped);
            } else {
                out.extend_from_slice(&self.wrapped);
            }
        }
    }
}

impl Core {
    /// A receiving request: attach to the session (made now if new), then
    /// answer what waits for it, or wait.
    pub(super) fn sockjs_receive(
        &mut self,
        machine: &mut Machine,
        request: Request<'_>,
        head: &RequestHead<'_, '_>,
        now: Instant,
    ) {
        let server = machine.server.clone();
        let route = &server.config.routes[request.route];
        let Some(service) = route.sockjs.as_ref() else {
            return;
        };
        let polling = request.framing.is_polling();
        // A body (none is expected) is not read: the connection closes
        // after the answer. An HTTP/1.0 stream ends by closing.
        let keep_alive = request.keep_alive
            && head.body == BodyKind::Empty
            && (polling || head.version == Version::Http11);
        self.after_own(!keep_alive, now);
        let (session, created) =
            server
                .sockjs
                .get_or_create(request.route, request.session, || {
                    new_session(&server, request.route, request.session, now)
                });
        let mut receiver = Box::new(Receiver {
            session: session.clone(),
            server: server.clone(),
            framing: request.framing,
            headers: request.headers,
            version: head.version,
            keep_alive,
            started: false,
            sent: 0,
            limit: service.response_limit,
            heartbeat: service.heartbeat,
            next_heartbeat: now + service.heartbeat,
            hook_deadline: None,
            attached: false,
            ended: false,
            scratch: VecDeque::new(),
            wrapped: Vec::new(),
            held: Vec::new(),
            held_end: false,
        });
        if created {
            if route.has_upgrade_hook {
                ask_hook(&server, &session, &self.remote, self.tls.as_ref(), head);
                receiver.hook_deadline = Some(now + server.config.upgrade_timeout);
            } else {
                open(&server, &session, &self.remote, self.tls.as_ref(), now);
            }
        }
        let refused = match session.attach(machine.connection.outbound.wake_target()) {
            Ok(()) => None,
            Err(Refused::Busy) => Some(close_frame(
                ANOTHER_CONNECTION_STILL_OPEN.code,
                ANOTHER_CONNECTION_STILL_OPEN.reason,
            )),
            Err(Refused::Closed { code, reason }) => Some(close_frame(code, &reason)),
        };
        receiver.attached = refused.is_none();
        self.receiver = Some(receiver);
        match refused {
            // The close frame alone, and the response ends.
            Some(frame) => self.receiver_frames(machine, vec![frame], true, now),
            None => self.pump_receiver(machine, now),
        }
    }

    /// Go on with the receiver: its hook's decision, its head, the frames
    /// waiting in its session.
    pub(super) fn pump_receiver(&mut self, machine: &mut Machine, now: Instant) {
        let Some(receiver) = self.receiver.as_mut() else {
            return;
        };
        let server = machine.server.clone();
        if receiver.session.in_hook() {
            match receiver.session.take_decision() {
                None => return,
                Some(UpgradeDecision::Accept { .. }) => {
                    receiver.hook_deadline = None;
                    let session = receiver.session.clone();
                    open(&server, &session, &self.remote, self.tls.as_ref(), now);
                }
                Some(UpgradeDecision::Reject { status, reason }) => {
                    self.refuse_receiver(machine, status, &reason, now);
                    return;
                }
            }
        }
        let Some(receiver) = self.receiver.as_mut() else {
            return;
        };
        if receiver.framing.is_polling() {
            let frames = receiver.session.take(&*server, true, &mut receiver.scratch);
            if !frames.frames.is_empty() {
                self.receiver_frames(machine, frames.frames, true, now);
            }
            return;
        }
        let connection = machine.connection.clone();
        while connection.outbound.buffered() < QUEUE_LOW {
            let Some(receiver) = self.receiver.as_mut() else {
                return;
            };
            if !receiver.started {
                // The head first; nothing is taken before it can go.
                if !self.start_stream(machine) {
                    return;
                }
                continue;
            }
            let frames = receiver
                .session
                .take(&*server, false, &mut receiver.scratch);
            if frames.frames.is_empty() {
                return;
            }
            self.receiver_frames(machine, frames.frames, frames.closed, now);
        }
    }

    /// Write `frames` to the receiver's response (its head first when it is
    /// not out yet); the response ends after them with `end`, after the
    /// first frame of a poll, or at the streaming limit.
    fn receiver_frames(
        &mut self,
        machine: &mut Machine,
        frames: Vec<Bytes>,
        end: bool,
        now: Instant,
    ) {
        let Some(receiver) = self.receiver.as_mut() else {
            return;
        };
        if receiver.framing.is_polling() {
            let mut body = Vec::new();
            receiver.wrap(&frames, &mut body);
            let response = frame(
                200,
                receiver.headers.as_bytes(),
                &body,
                body.len(),
                receiver.keep_alive,
                receiver.version,
            );
            let close = !receiver.keep_alive;
            self.end_receiver(machine, now);
            // (`respond` holds it while responses before it are owed.)
            self.respond(machine, response, close, now);
            return;
        }
        receiver.held.extend(frames);
        receiver.held_end |= end;
        if !receiver.started && !self.start_stream(machine) {
            return;
        }
        let Some(receiver) = self.receiver.as_mut() else {
            return;
        };
        let frames = std::mem::take(&mut receiver.held);
        let mut out = Vec::new();
        receiver.wrap(&frames, &mut out);
        if !frames.is_empty() {
            receiver.next_heartbeat = now + receiver.heartbeat;
        }
        let end = std::mem::take(&mut receiver.held_end) || receiver.sent >= receiver.limit;
        if end && receiver.chunked() {
            http1::write_last_chunk(&mut out);
        }
        let outbound = &machine.connection.outbound;
        if !out.is_empty() && !outbound.push_own_bytes(Bytes::from(out)) {
            // The connection closed meanwhile.
            self.end_receiver(machine, now);
            return;
        }
        if end {
            let close = !receiver.keep_alive;
            self.end_receiver(machine, now);
            if close || self.closing_when_idle {
                self.close_now(machine);
            }
        }
    }

    /// Queue a streaming response's head and prelude once its turn came
    /// (the responses before it ended: their end wakes us). Returns whether
    /// it is out.
    fn start_stream(&mut self, machine: &mut Machine) -> bool {
        let Some(receiver) = self.receiver.as_mut() else {
            return false;
        };
        let mut out = Vec::new();
        crate::http::with_date(|date| {
            http1::write_response_head(
                &mut out,
                200,
                None,
                date,
                receiver.headers.as_bytes(),
                if receiver.chunked() {
                    ResponseBody::Chunked
                } else {
                    ResponseBody::None
                },
                receiver.keep_alive,
                receiver.version,
            )
        });
        let mut prelude = Vec::new();
        receiver.framing.write_prelude(&mut prelude);
        if receiver.chunked() {
            http1::write_chunk(&mut out, &prelude);
        } else {
            out.extend_from_slice(&prelude);
        }
        receiver.started =
            machine
                .connection
                .outbound
                .push_own_response(self.dispatched, &out, false);
        receiver.started
    }

    /// The receiver's response is complete: the session waits for the
    /// next one (a disconnect delay at most).
    fn end_receiver(&mut self, machine: &Machine, now: Instant) {
        if let Some(mut receiver) = self.receiver.take() {
            receiver.ended = true;
            if receiver.attached {
                receiver.session.detach(&*machine.server, false, now);
            }
        }
        self.idle_since = now;
    }

    /// The hook refused the new session (or did not answer in time): the
    /// request gets the status, the session is forgotten.
    fn refuse_receiver(&mut self, machine: &mut Machine, status: u16, reason: &str, now: Instant) {
        let Some(receiver) = self.receiver.as_ref() else {
            return;
        };
        let server = machine.server.clone();
        let session = receiver.session.clone();
        let keep_alive = receiver.keep_alive;
        let version = receiver.version;
        self.end_receiver(machine, now);
        session.close(&*server, sockjs::CONNECTION_INTERRUPTED, (1006, ""));
        server.sockjs.remove(&session);
        let answer = Answer::new(status).body(sockjs::CONTENT_TYPE_PLAIN, reason);
        let response = answer.framed(keep_alive, version);
        self.respond(machine, response, !keep_alive, now);
    }

    /// The receiver's deadline passed: its hook took too long, or its
    /// session was silent for a heartbeat interval.
    pub(super) fn on_receiver_deadline(&mut self, machine: &mut Machine, now: Instant) {
        let Some(receiver) = self.receiver.as_mut() else {
            return;
        };
        if receiver.hook_deadline.is_some_and(|at| now >= at) {
            let failure = errors::UPGRADE_TIMEOUT;
            let session = receiver.session.clone();
            machine
                .server
                .pending_upgrades
                .lock()
                .remove(&session.connection.id);
            self.refuse_receiver(machine, failure.status, &failure.reason(), now);
            return;
        }
        if now >= receiver.next_heartbeat && !receiver.session.in_hook() {
            receiver.next_heartbeat = now + receiver.heartbeat;
            let polling = receiver.framing.is_polling();
            self.receiver_frames(machine, vec![Bytes::from_static(b"h")], polling, now);
        }
    }
}

/// A new session of `route`: its connection (not registered until it
/// opens), wake-ups forwarded to its receiver of the moment. On a route
/// with `rpc` it carries the Switchboard protocol, and its queue follows
/// the protocol's rules (`session/start.rs`): never a dropped frame, the
/// protocol's own limit, stream data paused at the high-water mark.
fn new_session(server: &ServerState, route: usize, key: &str, now: Instant) -> Arc<SockJsSession> {
    let config = &server.config.routes[route];
    let forward = Arc::new(Forward::default());
    let waker = WakeTarget::new(forward.clone(), 0, 0);
    let (kind, outbound, carriage) = if config.rpc {
        let max_backpressure = config
            .max_backpressure
            .max(server.config.rpc.max_backpressure);
        let outbound = Outbound::new(max_backpressure, SlowConsumerPolicy::Close, waker)
            .with_high_water(rpc_high_water(max_backpressure));
        let max_frame_size = server.config.rpc.settings.max_frame_size as usize;
        let carriage = RpcCarriage::new(max_frame_size);
        (ConnectionKind::RpcSockJsHttp, outbound, Some(carriage))
    } else {
        let outbound = Outbound::new(config.max_backpressure, config.slow_consumer, waker);
        (ConnectionKind::SockJsHttp, outbound, None)
    };
    let connection = Arc::new(Connection {
        id: server.next_id(),
        worker: server.pick_worker() as u32,
        kind,
        outbound,
        stats: server.stats.clone(),
    });
    let delay = config
        .sockjs
        .as_ref()
        .map_or(sockjs::DEFAULT_DISCONNECT_DELAY, |s| s.disconnect_delay);
    let session = SockJsSession::new(
        connection,
        forward,
        route,
        key,
        delay,
        config.has_upgrade_hook,
        now,
    );
    Arc::new(session.carrying(carriage))
}

/// The session opens: reachable by id, its first frame `o`. A plain
/// session's worker hears `OPEN`; a protocol session's hears `RPC_OPEN`
/// once its HELLO is answered (`sockjs_rpc.rs`), which must come within
/// `handshakeTimeout`.
fn open(
    server: &ServerState,
    session: &SockJsSession,
    remote: &str,
    tls: Option<&TlsInfo>,
    now: Instant,
) {
    let connection = &session.connection;
    server.register(connection);
    match &session.rpc {
        Some(rpc) => {
            let deadline = now + server.config.handshake_timeout;
            let mut rpc = rpc.lock();
            rpc.opening = Some(CarriedOpening {
                remote: remote.to_owned(),
                tls: tls.cloned(),
            });
            rpc.hello_deadline = Some(deadline);
            server.sockjs.expire_at(deadline);
        }
        None => server.queues[connection.worker()].push(&Record::Open {
            id: connection.id,
            route: session.route as u16,
            remote,
            protocol: "",
            extensions: "",
            tls: tls.map(TlsRecord::from),
        }),
    }
    session.opened(Bytes::from_static(b"o"));
}

/// Ask the route's `upgrade` hook about a new session, with the first
/// receiving request's head; the decision wakes the receiver.
fn ask_hook(
    server: &ServerState,
    session: &Arc<SockJsSession>,
    remote: &str,
    tls: Option<&TlsInfo>,
    head: &RequestHead<'_, '_>,
) {
    let connection = &session.connection;
    let worker = connection.worker();
    let decided = session.clone();
    server.pending_upgrades.lock().insert(
        connection.id,
        PendingUpgrade {
            worker,
            reply: Box::new(move |decision| decided.decided(decision)),
        },
    );
    // Names in lower case, as the WebSocket handshake hands them over.
    let lowered: Vec<(String, &str)> = head
        .headers()
        .filter_map(|(name, value)| {
            Some((name.to_ascii_lowercase(), std::str::from_utf8(value).ok()?))
        })
        .collect();
    let headers = lowered
        .iter()
        .map(|(name, value)| (name.as_str(), *value))
        .collect();
    server.queues[worker].push(&Record::Upgrade {
        id: connection.id,
        route: session.route as u16,
        remote,
        path: head.path,
        query: head.query.unwrap_or(""),
        tls: tls.map(TlsRecord::from),
        headers,
    });
}
