//! A session's deadlines: the handshake, idle and heartbeat timers, and the
//! end of a closing handshake or a drain. The time is always given; the
//! session never reads a clock.

use std::time::{Duration, Instant};

use switchboard_proto::rpc;
use switchboard_proto::ws::OpCode;

use super::{Machine, Phase, Step};
use crate::connection::ConnectionKind;
use crate::errors;
use crate::framing;

/// When the peer was last heard from, and whether our ping is unanswered.
pub(super) struct Liveness {
    pub(super) last_received: Instant,
    ping_sent: bool,
}

impl Liveness {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            last_received: now,
            ping_sent: false,
        }
    }

    /// Any bytes are a sign of life (and the answer to a ping).
    pub(super) fn heard(&mut self, now: Instant) {
        self.last_received = now;
        self.ping_sent = false;
    }
}

impl Machine {
    /// The idle timeout and ping interval of this connection.
    pub(super) fn heartbeat(&self) -> (Duration, Duration) {
        match (self.kind(), self.route) {
            // The protocol's heartbeat (§4): ping after one quiet interval,
            // give up after two.
            (ConnectionKind::RpcStream, _) | (_, None) => {
                let interval =
                    Duration::from_millis(u64::from(self.config().rpc.settings.heartbeat_ms));
                (interval * 2, interval)
            }
            // A SockJS session: no idle timeout (the protocol's clients
            // send nothing when they have nothing to say, and answer no
            // heartbeat), a heartbeat frame every interval.
            (ConnectionKind::SockJsWebSocket, Some(route)) => {
                let route = &self.config().routes[route as usize];
                let interval = route.sockjs.as_ref().map_or(
                    switchboard_proto::sockjs::DEFAULT_HEARTBEAT_DELAY,
                    |sockjs| sockjs.heartbeat,
                );
                (Duration::ZERO, interval)
            }
            (_, Some(route)) => {
                let route = &self.config().routes[route as usize];
                (route.idle_timeout, route.ping_interval)
            }
        }
    }
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let mut deadline = match self.phase {
            Phase::Closing { deadline, .. } => return Some(deadline),
            Phase::Closed => return None,
            Phase::Handshake { deadline } | Phase::Draining { deadline } => Some(deadline),
            Phase::Open => None,
        };
        let (idle_timeout, ping_interval) = self.heartbeat();
        let last = self.liveness.last_received;
        let mut consider = |at: Instant| {
            deadline = Some(deadline.map_or(at, |d| d.min(at)));
        };
        if !idle_timeout.is_zero() {
            consider(last + idle_timeout);
        }
        if self.kind() == ConnectionKind::SockJsWebSocket {
            // See `on_deadline`: the last traffic either way.
            if !ping_interval.is_zero() {
                consider(last + ping_interval);
            }
        } else if !ping_interval.is_zero() && !self.liveness.ping_sent {
            consider(last + ping_interval);
        }
        deadline
    }

    pub(super) fn on_deadline(&mut self, now: Instant) -> Step {
        match self.phase {
            // The peer never answered our close (or never finished draining).
            Phase::Closing { deadline, .. } | Phase::Draining { deadline } if now >= deadline => {
                return Step::End;
            }
            Phase::Closing { .. } | Phase::Closed => return Step::Continue,
            Phase::Handshake { deadline } if now >= deadline => {
                self.fail(errors::HANDSHAKE_TIMEOUT, now);
                return Step::Continue;
            }
            _ => {}
        }
        let (idle_timeout, ping_interval) = self.heartbeat();
        if self.kind() == ConnectionKind::SockJsWebSocket {
            // A SockJS session has no idle timeout, so `last_received`
            // serves as the last traffic either way: a heartbeat frame
            // goes after an interval in which nothing arrived or went as
            // a heartbeat (an extra field would grow every connection's
            // entry; see the reactor's memory budget).
            let last = self.liveness.last_received;
            if !ping_interval.is_zero() && now >= last + ping_interval {
                self.liveness.last_received = now;
                let heartbeat = framing::sockjs_frame(|out| {
                    switchboard_proto::sockjs::Framing::WebSocket.write_heartbeat(out)
                });
                self.push_frame(heartbeat);
            }
            return Step::Continue;
        }
        let last = self.liveness.last_received;
        if !idle_timeout.is_zero() && now >= last + idle_timeout {
            let failure = match self.kind() {
                ConnectionKind::RpcStream => errors::HEARTBEAT_TIMEOUT,
                _ => errors::WS_IDLE_TIMEOUT,
            };
            self.send_close(failure.status, failure.code, now);
            return Step::Continue;
        }
        if !ping_interval.is_zero() && !self.liveness.ping_sent && now >= last + ping_interval {
            self.liveness.ping_sent = true;
            let ping = if self.kind() == ConnectionKind::RpcStream {
                let mut ping = Vec::with_capacity(3);
                rpc::encode_heartbeat(false, &mut ping);
                bytes::Bytes::from(ping)
            } else {
                framing::frame_control(OpCode::Ping, &[])
            };
            self.push_frame(ping);
        }
        Step::Continue
    }
}
