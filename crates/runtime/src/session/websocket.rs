//! What a WebSocket session reads and how it frames its own messages: data
//! messages for the worker (or, on a protocol route, the protocol's frames
//! inside binary messages), control frames, and the closing handshake.

use std::time::Instant;

use bytes::Bytes;
use switchboard_proto::rpc::ProtocolError;
use switchboard_proto::sockjs;
use switchboard_proto::ws::encoder::close_payload;
use switchboard_proto::ws::{Event, Flow, OpCode};

use super::{Machine, Phase};
use crate::connection::ConnectionKind;
use crate::errors;
use crate::framing;
use crate::rpc_reader::RpcReader;
use crate::stats;

impl Machine {
    /// An event of a plain WebSocket.
    pub(super) fn on_websocket(&mut self, event: Event<'_>, now: Instant) -> Flow {
        if self.kind() == ConnectionKind::SockJsWebSocket {
            return self.on_sockjs_message(event, now);
        }
        match event {
            Event::Text(payload) => self.deliver(payload, false),
            Event::Binary(payload) => self.deliver(payload, true),
            control => return self.on_control(control),
        }
        Flow::Continue
    }

    /// An event of a SockJS session's WebSocket: each text message is a
    /// JSON array of the client's messages (or one JSON string), each
    /// handed to the worker as a text message of its own. Anything else
    /// breaks the framing, and the session closes as sockjs-node closes it:
    /// the WebSocket closes with 3000 at once, without a `c[...]` frame
    /// first (the protocol suite's `test_broken_json` wants the connection
    /// to end abruptly: no message after the bad one). The `close` event
    /// reports 3000 `ERR_SOCKJS_BROKEN_FRAMING`, which the WebSocket's close
    /// carries too.
    fn on_sockjs_message(&mut self, event: Event<'_>, now: Instant) -> Flow {
        let text = match event {
            Event::Text(payload) => std::str::from_utf8(payload).ok(),
            Event::Binary(_) => None,
            control => return self.on_control(control),
        };
        match text.map(sockjs::parse_websocket_message) {
            Some(Ok(messages)) => {
                for message in messages {
                    self.deliver(message.as_bytes(), false);
                }
                Flow::Continue
            }
            Some(Err(_)) | None => {
                stats::add(&self.server.stats.protocol_errors, 1);
                let broken = errors::SOCKJS_BROKEN_FRAMING;
                if !self.is_closing() {
                    // Not `fail_with`: its SockJS close goes out as a
                    // `c[...]` frame ahead of the WebSocket close.
                    self.writes.drop_unsent(&self.connection.outbound);
                    self.close_websocket(broken.status, broken.code, now);
                }
                self.stop_reading();
                Flow::Stop
            }
        }
    }

    /// An event of a WebSocket that carries the protocol: each binary
    /// message holds whole frames (docs/protocol.md §2).
    pub(super) fn on_rpc_message(
        &mut self,
        event: Event<'_>,
        reader: &mut RpcReader,
        now: Instant,
    ) -> Flow {
        match event {
            Event::Binary(payload) => {
                let outcome = reader
                    .feed(payload, &mut |event| self.on_rpc(event))
                    .and_then(|()| {
                        if reader.at_boundary() {
                            Ok(())
                        } else {
                            Err(ProtocolError::Malformed(
                                "a WebSocket message ended inside a frame",
                            ))
                        }
                    });
                if let Err(error) = outcome {
                    self.rpc_failed(error, now);
                    return Flow::Stop;
                }
                Flow::Continue
            }
            Event::Text(_) => {
                let failure = errors::PROTOCOL_TEXT_MESSAGE;
                self.websocket_failed(failure.status, failure.code, now);
                Flow::Stop
            }
            control => self.on_control(control),
        }
    }

    /// Control frames, the same in both WebSocket kinds.
    fn on_control(&mut self, event: Event<'_>) -> Flow {
        match event {
            Event::Text(_) | Event::Binary(_) => {}
            Event::Ping(payload) => {
                if !self.is_closing() {
                    // Past the backpressure limit only the latest ping is
                    // answered: a client that pings and never reads costs
                    // one pong, not one per ping.
                    let pong = framing::frame_control(OpCode::Pong, payload);
                    self.writes.push_pong(pong, &self.connection.outbound);
                }
            }
            Event::Pong(_) => {}
            Event::Close(frame) => {
                let code = frame.code.unwrap_or(1005);
                if !self.is_closing() {
                    // Echo the peer's code, as RFC 6455 §5.5.1 suggests.
                    let payload = match frame.code {
                        Some(code) => close_payload(code, ""),
                        None => Vec::new(),
                    };
                    self.push_frame(framing::frame_control(OpCode::Close, &payload));
                    self.outcome = Some(Box::new((code, frame.reason.to_owned())));
                }
                self.phase = Phase::Closed;
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// The peer broke the WebSocket protocol: close with the error's code,
    /// read no more.
    pub(super) fn websocket_failed(&mut self, code: u16, reason: &str, now: Instant) {
        stats::add(&self.server.stats.protocol_errors, 1);
        self.fail_with(code, reason, now);
    }

    /// Begin the WebSocket closing handshake from our side.
    pub(super) fn close_websocket(&mut self, code: u16, reason: &str, now: Instant) {
        self.push_frame(framing::frame_control(
            OpCode::Close,
            &close_payload(code, reason),
        ));
        self.phase = Phase::Closing {
            deadline: self.close_deadline(now),
            reading: true,
        };
        self.settle(code, reason);
    }

    /// Frame a message this connection sends alone, compressed when it
    /// negotiated permessage-deflate and the message reaches the threshold.
    pub(super) fn compress(&mut self, payload: &[u8], binary: bool) -> Bytes {
        let threshold = self.route.map_or(0, |route| {
            self.config().routes[route as usize]
                .compression
                .as_ref()
                .map_or(0, |c| c.threshold)
        });
        let mut compressed = Vec::new();
        let deflated = match &mut self.compressor {
            Some(compressor) if payload.len() >= threshold => {
                compressor.compress(payload, &mut compressed).is_ok()
            }
            _ => false,
        };
        // A compressor failure (a zlib internal error) falls back to
        // sending the message uncompressed, which is always legal.
        if deflated {
            framing::frame_compressed(&compressed, binary)
        } else {
            framing::frame_message(payload, binary)
        }
    }
}
