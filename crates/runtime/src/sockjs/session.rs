//! One SockJS session on the HTTP transports, as every thread sees it.
//!
//! The session is a connection of the core like any other: an id, a
//! worker, channels, an outbound queue that sends and publishes fill
//! (`ConnectionKind::SockJsHttp`: each item an encoded frame, `a[...]`).
//! What it lacks is a socket. Its frames leave through whichever HTTP
//! request is its *receiver* now (an xhr poll, an xhr_streaming response,
//! an EventSource...), on whichever I/O thread that request's connection
//! lives. So the queue's wake-ups go to a [`Forward`], which passes them to
//! the receiver attached at the time, and to nobody between receivers:
//! what is sent meanwhile waits in the queue, bounded by the route's
//! `maxBackpressure` and its slow-consumer policy, for the next receiver.
//!
//! At most one receiver at a time (a second one is told `2010`). A
//! receiver that ends as the protocol says (a poll answered, a streaming
//! response at its byte limit) leaves the session waiting for the next
//! one for the disconnect delay; one that the network aborts interrupts
//! the session (the protocol's suite accepts a `1002` close frame or a
//! fresh session after that, and what was in flight may be lost either
//! way). A closed session answers its close frame to every receiver until
//! it expires.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use switchboard_proto::sockjs::CloseReason;

use super::rpc::{reason_code, RpcCarriage};
use super::Host;
use crate::connection::Connection;
use crate::hook::UpgradeDecision;
use crate::outbound::{Eviction, OutItem};
use crate::wake::{IoWaker, WakeTarget};

/// Passes the session queue's wake-ups to its receiver of the moment.
#[derive(Default)]
pub(crate) struct Forward {
    target: Mutex<Option<WakeTarget>>,
}

impl IoWaker for Forward {
    fn connection(&self, _key: usize, _generation: u32) {
        let target = self.target.lock().clone();
        if let Some(target) = target {
            target.wake();
        }
    }

    fn room(&self, _worker: usize) {}
}

/// Where a session stands.
#[derive(Debug)]
pub(crate) enum Phase {
    /// The route's `upgrade` hook decides (`decision` once it did); the
    /// first receiver waits for it.
    Hook {
        decision: Option<UpgradeDecision>,
    },
    Open,
    /// Over: every receiver is answered this close frame until the session
    /// expires, a disconnect delay after its last receiver.
    Closed {
        code: u16,
        reason: String,
    },
}

/// Why a receiver could not attach.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Another receiver is attached: answer `2010`.
    Busy,
    /// The session is over: answer its close frame.
    Closed { code: u16, reason: String },
}

/// What a receiver takes from the session in one go.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    /// Encoded frames (`o`, `h`, `a[...]`, `c[...]`), in order; the
    /// messages sent one after another are merged into one `a[...]`.
    pub frames: Vec<Bytes>,
    /// The last frame closed the session.
    pub closed: bool,
}

struct State {
    phase: Phase,
    /// A receiver is attached.
    receiving: bool,
    /// When the last receiver left (or the session began).
    detached_at: Instant,
    /// Frames taken from the queue and not delivered yet: a poll answers
    /// one frame, and the rest waits here for the next poll.
    carry: VecDeque<OutItem>,
    /// Encoded frames of the session's own waiting for a receiver (the
    /// open frame).
    own: VecDeque<Bytes>,
}

pub(crate) struct SockJsSession {
    pub(crate) connection: Arc<Connection>,
    /// The route (`ServerConfig::routes`) whose SockJS service it belongs
    /// to.
    pub(crate) route: usize,
    /// Its id, as the client chose it.
    pub(crate) key: Box<str>,
    /// How long it outlives its last receiver (the route's
    /// `disconnectDelay`).
    pub(crate) disconnect_delay: Duration,
    forward: Arc<Forward>,
    state: Mutex<State>,
    /// A session that carries the Switchboard protocol: its reader and
    /// handshake (`rpc.rs`). Locked before `state` when both are, never
    /// the other way round.
    pub(crate) rpc: Option<Box<Mutex<RpcCarriage>>>,
}

impl SockJsSession {
    pub(crate) fn new(
        connection: Arc<Connection>,
        forward: Arc<Forward>,
        route: usize,
        key: &str,
        disconnect_delay: Duration,
        hook: bool,
        now: Instant,
    ) -> Self {
        Self {
            connection,
            route,
            key: key.into(),
            disconnect_delay,
            forward,
            rpc: None,
            state: Mutex::new(State {
                phase: if hook {
                    Phase::Hook { decision: None }
                } else {
                    Phase::Open
                },
                receiving: false,
                detached_at: now,
                carry: VecDeque::new(),
                own: VecDeque::new(),
            }),
        }
    }

    /// The session carries the Switchboard protocol (`rpc.rs`).
    pub(crate) fn carrying(mut self, carriage: Option<RpcCarriage>) -> Self {
        self.rpc = carriage.map(|carriage| Box::new(Mutex::new(carriage)));
        self
    }

    /// Attach a receiver whose connection `target` wakes: from now on the
    /// queue's wake-ups go to it.
    pub(crate) fn attach(&self, target: WakeTarget) -> Result<(), Refused> {
        let mut state = self.state.lock();
        if let Phase::Closed { code, reason } = &state.phase {
            return Err(Refused::Closed {
                code: *code,
                reason: reason.clone(),
            });
        }
        if state.receiving {
            return Err(Refused::Busy);
        }
        state.receiving = true;
        *self.forward.target.lock() = Some(target);
        Ok(())
    }

    /// The receiver leaves. `interrupted`: the network aborted it (not the
    /// protocol): the session closes, as [`SockJsSession::close`] with
    /// `1002`, and its worker hears `close` with 1006.
    pub(crate) fn detach(&self, server: &dyn Host, interrupted: bool, now: Instant) {
        {
            let mut state = self.state.lock();
            if !state.receiving {
                return;
            }
            state.receiving = false;
            state.detached_at = now;
            *self.forward.target.lock() = None;
        }
        // Nobody takes what is sent until the next receiver: sends report
        // `Buffered` (and `drain` follows once a receiver took it all).
        self.connection.outbound.set_congested(true);
        if interrupted {
            let reason = switchboard_proto::sockjs::CONNECTION_INTERRUPTED;
            self.close(server, reason, (1006, ""));
        }
        server.sessions().expire_at(now + self.disconnect_delay);
    }

    /// The session ends: every later receiver gets `frame`'s close frame;
    /// the connection leaves the server (channels, the connection table)
    /// and its worker hears `close` with `reported`. Once only.
    pub(crate) fn close(
        &self,
        server: &dyn Host,
        frame: CloseReason,
        reported: (u16, &str),
    ) -> bool {
        self.close_with(server, frame.code, frame.reason.to_owned(), reported)
    }

    fn close_with(
        &self,
        server: &dyn Host,
        code: u16,
        reason: String,
        reported: (u16, &str),
    ) -> bool {
        let was = {
            let mut state = self.state.lock();
            if matches!(state.phase, Phase::Closed { .. }) {
                return false;
            }
            state.carry.clear();
            std::mem::replace(&mut state.phase, Phase::Closed { code, reason })
        };
        match was {
            Phase::Open => server.unregister(&self.connection, reported.0, reported.1),
            // Never opened: its worker never heard of it.
            Phase::Hook { .. } => server.forget_upgrade(self.connection.id),
            Phase::Closed { .. } => unreachable!("checked above"),
        }
        true
    }

    /// The hook decided: store it for the waiting receiver, and wake it.
    pub(crate) fn decided(&self, decision: UpgradeDecision) {
        let mut state = self.state.lock();
        if let Phase::Hook { decision: slot } = &mut state.phase {
            *slot = Some(decision);
        }
        drop(state);
        self.forward.connection(0, 0);
    }

    /// The hook's decision, taken (for the receiver that waits on it).
    pub(crate) fn take_decision(&self) -> Option<UpgradeDecision> {
        match &mut self.state.lock().phase {
            Phase::Hook { decision } => decision.take(),
            _ => None,
        }
    }

    /// Whether the session is open (it takes messages).
    pub(crate) fn is_open(&self) -> bool {
        matches!(self.state.lock().phase, Phase::Open)
    }

    /// Whether the session waits for its hook.
    pub(crate) fn in_hook(&self) -> bool {
        matches!(self.state.lock().phase, Phase::Hook { .. })
    }

    /// The hook accepted: the session is open, its first frame `o`.
    pub(crate) fn opened(&self, open: Bytes) {
        let mut state = self.state.lock();
        state.phase = Phase::Open;
        state.own.push_back(open);
    }

    /// Take what waits for the receiver: the session's own frames, then
    /// its queue (with any eviction another thread asked for). `one`: a
    /// poll, which takes one frame (a run of messages is one frame); the
    /// rest stays for the next receiver.
    pub(crate) fn take(
        &self,
        server: &dyn Host,
        one: bool,
        scratch: &mut VecDeque<OutItem>,
    ) -> Frames {
        let mut frames = Frames::default();
        let mut state = self.state.lock();
        if let Phase::Closed { code, reason } = &state.phase {
            frames.frames.push(close_frame(*code, reason));
            frames.closed = true;
            return frames;
        }
        if !matches!(state.phase, Phase::Open) {
            return frames;
        }
        while let Some(own) = state.own.pop_front() {
            frames.frames.push(own);
            if one {
                return frames;
            }
        }
        let taken = self.connection.outbound.take(scratch);
        state.carry.extend(scratch.drain(..));
        let mut messages: Vec<Bytes> = Vec::new();
        let mut consumed = 0;
        let mut close = None;
        while let Some(item) = state.carry.front() {
            match item {
                OutItem::Frame(frame) if frame.first() == Some(&b'a') => {
                    messages.push(frame.clone());
                }
                OutItem::Close {
                    code,
                    reason,
                    go_away,
                } => {
                    close = Some((*code, reason.clone(), *go_away));
                }
                // (Nothing else is queued for this kind.)
                _ => {}
            }
            let item = state.carry.pop_front().expect("the front item");
            consumed += item.counted_bytes();
            if close.is_some() {
                break;
            }
            let next_is_message = matches!(
                state.carry.front(),
                Some(OutItem::Frame(frame)) if frame.first() == Some(&b'a')
            );
            if one && !messages.is_empty() && !next_is_message {
                break;
            }
        }
        let emptied = state.carry.is_empty();
        drop(state);
        let outbound = &self.connection.outbound;
        outbound.written(consumed);
        if emptied {
            // The client took everything: sends report `Sent` again, and a
            // sender that was told `Buffered` hears `drain`.
            outbound.set_congested(false);
            if outbound.take_drain_wanted() {
                server.drained(&self.connection);
            }
        }
        if let (Some((_, reason, true)), Some(rpc)) = (&close, &self.rpc) {
            // The application closed a protocol session: a GO_AWAY with the
            // reason's code goes before the close frame, as on a socket
            // (`session/closing.rs`); without the flag its peer wrote one.
            if let Some(go_away) = rpc.lock().go_away(reason_code(reason), reason) {
                messages.push(go_away);
            }
        }
        if !messages.is_empty() {
            frames.frames.push(merge_messages(&messages));
        }
        let failure = match taken.eviction {
            Some(Eviction::SlowConsumer) => Some(crate::errors::WS_SLOW_CONSUMER),
            Some(Eviction::WorkerDied) => Some(crate::errors::WORKER_DIED),
            // `terminate()`: no close frame, as a WebSocket is dropped
            // without one; later receivers hear the session was cut.
            Some(Eviction::Terminate) => {
                let interrupted = switchboard_proto::sockjs::CONNECTION_INTERRUPTED;
                self.close(server, interrupted, (1006, "terminated"));
                frames.closed = true;
                return frames;
            }
            None => None,
        };
        let close = close
            .map(|(code, reason, _)| (code, reason))
            .or_else(|| failure.map(|failure| (failure.status, failure.reason())));
        if let Some((code, reason)) = close {
            // The application's close, or why the session was evicted: the
            // client gets it as the close frame, the worker as `close`.
            frames.frames.push(close_frame(code, &reason));
            frames.closed = true;
            self.close_with(server, code, reason.clone(), (code, &reason));
        }
        frames
    }

    /// No receiver came for a disconnect delay: the session is forgotten.
    /// Its worker hears 1006, as for a WebSocket whose client vanished, or
    /// why another thread evicted it meanwhile (the slow-consumer policy, a
    /// dead worker), which no receiver was there to deliver.
    pub(crate) fn expire(&self, server: &dyn Host) {
        let reported = match self.connection.outbound.eviction() {
            Some(Eviction::SlowConsumer) => crate::errors::WS_SLOW_CONSUMER,
            Some(Eviction::WorkerDied) => crate::errors::WORKER_DIED,
            Some(Eviction::Terminate) | None => {
                let reason = switchboard_proto::sockjs::CONNECTION_INTERRUPTED;
                self.close(server, reason, (1006, ""));
                return;
            }
        };
        let reason = reported.reason();
        self.close_with(
            server,
            reported.status,
            reason.clone(),
            (reported.status, &reason),
        );
    }

    /// When a protocol session must have sent its HELLO (`None`: it did,
    /// it has not opened yet, or it carries no protocol).
    pub(crate) fn hello_deadline(&self) -> Option<Instant> {
        self.rpc.as_ref().and_then(|rpc| rpc.lock().hello_deadline)
    }

    /// No HELLO in time: the session closes with `ERR_HANDSHAKE_TIMEOUT`,
    /// its GO_AWAY and close frame queued for the receiver (attached now,
    /// or the next one).
    pub(crate) fn hello_timed_out(&self) {
        let Some(rpc) = &self.rpc else {
            return;
        };
        {
            let mut rpc = rpc.lock();
            if rpc.hello_deadline.take().is_none() {
                return;
            }
            rpc.failed = true;
        }
        let failure = crate::errors::HANDSHAKE_TIMEOUT;
        self.connection.enqueue(
            OutItem::Close {
                code: failure.status,
                reason: failure.code.to_owned(),
                go_away: true,
            },
            0,
        );
    }

    /// When it expires if no receiver comes (`None`: one is attached).
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        let state = self.state.lock();
        (!state.receiving).then(|| state.detached_at + self.disconnect_delay)
    }
}

/// `c[code,"reason"]`, encoded.
pub(crate) fn close_frame(code: u16, reason: &str) -> Bytes {
    let mut out = Vec::with_capacity(16 + reason.len());
    switchboard_proto::sockjs::Framing::WebSocket.write_close(&mut out, code, reason);
    Bytes::from(out)
}

/// One `a[...]` frame carrying the messages of `frames` (each an `a[...]`
/// of its own) in order. One frame is shared as it is.
fn merge_messages(frames: &[Bytes]) -> Bytes {
    if let [only] = frames {
        return only.clone();
    }
    let len = frames.iter().map(|f| f.len()).sum::<usize>();
    let mut merged = Vec::with_capacity(len);
    merged.extend_from_slice(b"a[");
    for frame in frames {
        // Between `a[` and `]`: the frame's quoted messages.
        let inner = &frame[2..frame.len() - 1];
        if inner.is_empty() {
            continue;
        }
        if merged.len() > 2 {
            merged.push(b',');
        }
        merged.extend_from_slice(inner);
    }
    merged.push(b']');
    Bytes::from(merged)
}
