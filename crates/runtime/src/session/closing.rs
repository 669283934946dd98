//! How a session closes, whatever started it: an error it found, a close
//! asked for from JavaScript, a GO_AWAY the worker's peer already sent, or
//! the server shutting down. Each path ends in one phase (`Closing` or
//! `Draining`) with its deadline, and settles the close outcome once.

use std::time::Instant;

use switchboard_proto::sockjs;
use switchboard_proto::ws::close::is_valid_close_code;

use super::{Machine, Phase};
use crate::connection::ConnectionKind;
use crate::errors::{self, Failure};
use crate::framing;

impl Machine {
    /// Decide what the `close` event reports, unless it is decided already.
    pub(super) fn settle(&mut self, code: u16, reason: &str) {
        if self.outcome.is_none() {
            self.outcome = Some(Box::new((code, reason.to_owned())));
        }
    }

    pub(super) fn is_closing(&self) -> bool {
        matches!(self.phase, Phase::Closing { .. } | Phase::Closed)
    }

    pub(super) fn close_deadline(&self, now: Instant) -> Instant {
        now + self.config().close_timeout
    }

    /// Close because of an error: drop what is queued, say why, read no
    /// more.
    pub(super) fn fail(&mut self, failure: Failure, now: Instant) {
        self.fail_with(failure.status, failure.code, now);
    }

    pub(super) fn fail_with(&mut self, code: u16, reason: &str, now: Instant) {
        if !self.is_closing() {
            self.writes.drop_unsent(&self.connection.outbound);
            self.send_close(code, reason, now);
        }
        self.stop_reading();
    }

    pub(super) fn stop_reading(&mut self) {
        if let Phase::Closing { deadline, .. } = self.phase {
            self.phase = Phase::Closing {
                deadline,
                reading: false,
            };
        }
    }

    /// Close from our side. A protocol connection first gets a GO_AWAY whose
    /// code is the reason's `ERR_*` code; a protocol stream then just ends
    /// (it has no closing handshake), a WebSocket starts its closing
    /// handshake.
    pub(super) fn send_close(&mut self, code: u16, reason: &str, now: Instant) {
        if self.is_closing() {
            return;
        }
        if self.kind() == ConnectionKind::Http {
            // HTTP has no closing handshake: the last response is queued,
            // the connection ends once it is written.
            self.last_frame_queued(code, reason, now);
            return;
        }
        if self.kind().is_rpc() {
            // Only a code the protocol allows (§3: printable ASCII) goes on
            // the wire; a reason that does not start with one gets the
            // generic code.
            let rpc_code = reason
                .split(':')
                .next()
                .filter(|c| c.starts_with("ERR_") && switchboard_proto::rpc::is_code(c));
            self.push_go_away(rpc_code.unwrap_or(errors::GOING_AWAY.code), reason);
            if self.kind() == ConnectionKind::RpcStream {
                self.last_frame_queued(code, reason, now);
                return;
            }
        }
        if self.kind() == ConnectionKind::SockJsWebSocket {
            // The session's close frame first: sockjs-client hands its code
            // and reason to the application. The WebSocket's own close
            // carries them too when the code is one a WebSocket close may
            // carry (2010, say, may not: RFC 6455 §7.4).
            let frame = framing::sockjs_frame(|out| {
                sockjs::Framing::WebSocket.write_close(out, code, reason)
            });
            self.push_frame(frame);
            if !is_valid_close_code(code) {
                // The close event reports the session's code.
                self.settle(code, reason);
                self.close_websocket(1000, "", now);
                return;
            }
        }
        self.close_websocket(code, reason, now);
    }

    /// Close a protocol connection whose GO_AWAY JavaScript's peer already
    /// queued (a violation it found): a second one would tell the client
    /// two different last call ids.
    pub(super) fn close_after_go_away(&mut self, code: u16, reason: &str, now: Instant) {
        if self.is_closing() {
            return;
        }
        if self.kind() == ConnectionKind::RpcStream {
            self.last_frame_queued(code, reason, now);
        } else {
            self.close_websocket(code, reason, now);
        }
    }

    /// A protocol stream's last frame (a GO_AWAY) is queued: nothing more is
    /// written or read, and a peer that does not take it gets
    /// `close_timeout` before the connection is dropped.
    pub(super) fn last_frame_queued(&mut self, code: u16, reason: &str, now: Instant) {
        self.phase = Phase::Closing {
            deadline: self.close_deadline(now),
            reading: false,
        };
        self.settle(code, reason);
    }

    /// The server is shutting down. A WebSocket (either kind) starts its
    /// closing handshake; a protocol stream gets a GO_AWAY and drains: its
    /// calls in flight complete until the peer closes or the close timeout.
    pub(super) fn go_away(&mut self, now: Instant) {
        if !matches!(self.phase, Phase::Open | Phase::Handshake { .. }) {
            return;
        }
        match self.kind() {
            ConnectionKind::WebSocket
            | ConnectionKind::WebSocketDeflate
            | ConnectionKind::SockJsWebSocket => {
                self.send_close(1001, "server shutting down", now);
            }
            // The HTTP reader handles its own (`session/http.rs`); a SockJS
            // session over HTTP has no session of this kind (`sockjs/`).
            ConnectionKind::Http | ConnectionKind::SockJsHttp | ConnectionKind::RpcSockJsHttp => {}
            ConnectionKind::RpcStream | ConnectionKind::RpcWebSocket => {
                self.push_go_away(errors::GOING_AWAY.code, "server shutting down");
                self.phase = Phase::Draining {
                    deadline: self.close_deadline(now),
                };
                self.settle(errors::GOING_AWAY.status, errors::GOING_AWAY.code);
            }
        }
    }
}
