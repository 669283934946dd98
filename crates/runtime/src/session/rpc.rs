//! What a protocol session does with what it reads: the HELLO (answered
//! with our WELCOME, then `RPC_OPEN` for the worker), heartbeats (answered
//! here, without waking a worker), frames for the worker, and GO_AWAY on
//! violations, on a byte stream or inside WebSocket binary messages.

use std::time::Instant;

use bytes::Bytes;
use switchboard_proto::rpc::{self, ProtocolError};

use super::{Machine, Phase};
use crate::connection::ConnectionKind;
use crate::events::{Record, TlsRecord};
use crate::framing;
use crate::rpc_reader::RpcEvent;
use crate::stats;

/// 16 bytes from the operating system's random source: the base of the
/// server's UUIDs on one connection (docs/protocol.md §6).
pub(crate) fn random_seed() -> [u8; 16] {
    let mut seed = [0; 16];
    // The OS source failing (no /dev/urandom, no getrandom syscall) leaves
    // nothing sensible to do but stop.
    getrandom::fill(&mut seed).expect("the operating system's random source failed");
    seed
}

impl Machine {
    pub(super) fn on_rpc(&mut self, event: RpcEvent<'_>) -> Result<(), ProtocolError> {
        match event {
            RpcEvent::Frame { raw, last_call_id } => {
                self.peer_last_call_id = last_call_id;
                self.deliver(raw, true);
            }
            RpcEvent::Owned {
                frame,
                last_call_id,
            } => {
                self.peer_last_call_id = last_call_id;
                self.deliver_owned(frame);
            }
            RpcEvent::Ping => {
                if !self.is_closing() {
                    // As for WebSocket pings: one pong owed at most.
                    let mut pong = Vec::with_capacity(3);
                    rpc::encode_heartbeat(true, &mut pong);
                    let pong = self.frame_rpc(&pong);
                    self.writes.push_pong(pong, &self.connection.outbound);
                }
            }
            RpcEvent::Hello { hello, raw } => self.on_hello(&hello, raw)?,
        }
        Ok(())
    }

    fn on_hello(&mut self, hello: &rpc::Hello<'_>, raw: &[u8]) -> Result<(), ProtocolError> {
        let welcome = rpc::accept_hello(hello, &self.config().rpc.settings, random_seed())?;
        let mut reply = Vec::with_capacity(64);
        // Our first bytes start with our preface, like theirs (on a
        // WebSocket, in our first message).
        reply.extend_from_slice(rpc::PREFACE);
        rpc::encode(&welcome.frame(), &mut reply);
        let frame = self.frame_rpc(&reply);
        self.push_frame(frame);
        if matches!(self.phase, Phase::Handshake { .. }) {
            self.phase = Phase::Open;
        }
        let opening = self.opening.take();
        let (route, transport, remote, tls) = match &opening {
            Some(opening) => (
                opening.route,
                opening.transport,
                opening.remote.as_str(),
                opening.tls.as_ref(),
            ),
            None => unreachable!("a protocol session keeps its opening until the HELLO"),
        };
        self.queue().push(&Record::RpcOpen {
            id: self.connection.id,
            route,
            transport,
            remote,
            tls: tls.map(TlsRecord::from),
            hello: raw,
            welcome: &reply[rpc::PREFACE.len()..],
        });
        Ok(())
    }

    /// Protocol bytes in the session's framing.
    fn frame_rpc(&self, bytes: &[u8]) -> Bytes {
        match self.kind() {
            ConnectionKind::RpcStream => Bytes::copy_from_slice(bytes),
            _ => framing::frame_message(bytes, true),
        }
    }

    /// The peer broke the protocol: tell it why in a GO_AWAY, then close.
    pub(super) fn rpc_failed(&mut self, error: ProtocolError, now: Instant) {
        stats::add(&self.server.stats.protocol_errors, 1);
        if !self.is_closing() {
            // What was queued is dropped (as `fail` does); the GO_AWAY says why.
            self.writes.drop_unsent(&self.connection.outbound);
            self.push_go_away(error.code(), &error.to_string());
            if self.kind() == ConnectionKind::RpcStream {
                self.last_frame_queued(error.ws_close_code(), error.code(), now);
            } else {
                self.close_websocket(error.ws_close_code(), error.code(), now);
            }
        }
        self.stop_reading();
    }

    pub(super) fn push_go_away(&mut self, code: &str, message: &str) {
        let mut frame = Vec::with_capacity(20 + code.len() + message.len());
        if matches!(self.phase, Phase::Handshake { .. }) {
            // Before our WELCOME: nothing of ours is on the wire yet. A peer
            // that did not even send our preface is not speaking the
            // protocol (an HTTP request, TLS on a plain port): it gets no
            // answer (§2). Any other gets our preface, then the GO_AWAY.
            if code == "ERR_PROTOCOL_PREFACE" {
                return;
            }
            frame.extend_from_slice(rpc::PREFACE);
        }
        rpc::encode_go_away(self.peer_last_call_id, code, message, &mut frame);
        let frame = self.frame_rpc(&frame);
        self.push_frame(frame);
    }
}
