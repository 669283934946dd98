//! What a session reads, by dialect: WebSocket messages and control
//! frames, and the Switchboard protocol's frames (its handshake, heartbeats
//! and GO_AWAY) on a raw stream or inside WebSocket binary messages.

use bytes::Bytes;
use switchboard_proto::wire::{self, WireError};
use switchboard_proto::ws::encoder::close_payload;
use switchboard_proto::ws::{Event, Flow, OpCode};
use tokio::time::Instant;

use super::{random_seed, Context, Dialect, WireEvent, WireReader};
use crate::events::{body, KIND_RPC_OPEN};
use crate::framing;
use crate::stats;

impl Context {
    pub(super) fn on_event(&mut self, event: Event<'_>, wire: Option<&mut WireReader>) -> Flow {
        match (event, wire) {
            (Event::Binary(payload), Some(reader)) => {
                // Each message carries whole frames (docs/protocol.md §2).
                let outcome = reader
                    .feed(payload, &mut |event| self.on_wire(event))
                    .and_then(|()| {
                        if reader.at_boundary() {
                            Ok(())
                        } else {
                            Err(WireError::Malformed(
                                "a WebSocket message ended inside a frame",
                            ))
                        }
                    });
                if let Err(error) = outcome {
                    self.wire_failed(error);
                    return Flow::Stop;
                }
            }
            (Event::Text(_), Some(_)) => {
                stats::add(&self.shared.stats.protocol_errors, 1);
                self.fail(1003, "ERR_PROTOCOL_TEXT_MESSAGE");
                return Flow::Stop;
            }
            (Event::Text(payload), None) => self.deliver(payload, false),
            (Event::Binary(payload), None) => self.deliver(payload, true),
            (event, _) => return self.on_control(event),
        }
        Flow::Continue
    }

    /// WebSocket control frames, the same in both WebSocket dialects.
    pub(super) fn on_control(&mut self, event: Event<'_>) -> Flow {
        match event {
            Event::Text(_) | Event::Binary(_) => {}
            Event::Ping(payload) => {
                if !self.close_sent {
                    self.push_frame(framing::frame_control(OpCode::Pong, payload));
                }
            }
            Event::Pong(_) => {}
            Event::Close(frame) => {
                self.close_received = true;
                self.finished_reading = true;
                let code = frame.code.unwrap_or(1005);
                let reason = frame.reason.to_owned();
                if !self.close_sent {
                    // Echo the peer's code, as RFC 6455 §5.5.1 suggests.
                    let payload = match frame.code {
                        Some(code) => close_payload(code, ""),
                        None => Vec::new(),
                    };
                    self.push_frame(framing::frame_control(OpCode::Close, &payload));
                    self.close_sent = true;
                    self.result = Some((code, reason));
                }
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    pub(super) fn on_wire(&mut self, event: WireEvent<'_>) -> Result<(), WireError> {
        match event {
            WireEvent::Frame { raw, last_call_id } => {
                self.peer_last_call_id = last_call_id;
                self.deliver(raw, true);
            }
            WireEvent::Owned {
                frame,
                last_call_id,
            } => {
                self.peer_last_call_id = last_call_id;
                self.deliver_owned(frame);
            }
            WireEvent::Ping => {
                if !self.close_sent {
                    let mut pong = Vec::with_capacity(3);
                    wire::encode_heartbeat(true, &mut pong);
                    self.push_wire(&pong);
                }
            }
            WireEvent::Hello { hello, raw } => {
                let welcome =
                    wire::accept_hello(&hello, &self.shared.config.wire.settings, random_seed())?;
                let mut reply = Vec::with_capacity(64);
                if self.dialect == Dialect::Wire {
                    reply.extend_from_slice(wire::PREFACE);
                }
                let preface_len = reply.len();
                wire::encode(&welcome.frame(), &mut reply);
                if self.dialect == Dialect::WireOverWebSocket {
                    // Our first message starts with our preface, like theirs.
                    let mut message = wire::PREFACE.to_vec();
                    message.extend_from_slice(&reply);
                    self.push_wire(&message);
                } else {
                    self.push_wire(&reply);
                }
                self.handshake_deadline = None;
                let id = self.connection.id;
                let (route, transport, remote) = (self.route_index, self.transport, &self.remote);
                let tls = self.tls.take();
                let welcome_frame = &reply[preface_len..];
                self.queue.push(KIND_RPC_OPEN, |out| {
                    body::id(out, id);
                    body::u16(out, route);
                    out.push(transport);
                    body::str(out, remote);
                    match tls {
                        None => out.push(0),
                        Some(tls) => {
                            out.push(1);
                            body::str(out, &tls.server_name);
                            body::str(out, tls.protocol);
                            body::str(out, &tls.cipher);
                            out.extend_from_slice(
                                &(tls.peer_certificate.len() as u32).to_le_bytes(),
                            );
                            out.extend_from_slice(&tls.peer_certificate);
                        }
                    }
                    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
                    out.extend_from_slice(raw);
                    out.extend_from_slice(welcome_frame);
                });
            }
        }
        Ok(())
    }

    /// Queue protocol bytes in the session's framing.
    pub(super) fn push_wire(&mut self, bytes: &[u8]) {
        let frame = match self.dialect {
            Dialect::Wire => Bytes::copy_from_slice(bytes),
            _ => framing::frame_message(bytes, true),
        };
        self.push_frame(frame);
    }

    /// The peer broke the protocol: tell it why in a GO_AWAY, then close.
    pub(super) fn wire_failed(&mut self, error: WireError) {
        stats::add(&self.shared.stats.protocol_errors, 1);
        self.finished_reading = true;
        if self.close_sent {
            return;
        }
        // What was queued is dropped (as `fail` does); the GO_AWAY says why.
        self.drop_unsent();
        self.push_go_away(error.code(), &error.to_string());
        if self.dialect == Dialect::Wire {
            self.last_frame_queued(error.ws_close_code(), error.code());
        } else {
            self.close_websocket(error.ws_close_code(), error.code());
        }
    }

    pub(super) fn push_go_away(&mut self, code: &str, message: &str) {
        let mut frame = Vec::with_capacity(20 + code.len() + message.len());
        if self.handshake_deadline.is_some() {
            // Before our WELCOME: nothing of ours is on the wire yet. A peer
            // that did not even send our preface is not speaking the
            // protocol (an HTTP request, TLS on a plain port): it gets no
            // answer (§2). Any other gets our preface, then the GO_AWAY.
            if code == "ERR_PROTOCOL_PREFACE" {
                return;
            }
            frame.extend_from_slice(wire::PREFACE);
        }
        wire::encode_go_away(self.peer_last_call_id, code, message, &mut frame);
        self.push_wire(&frame);
    }

    /// The server is shutting down. A WebSocket (either dialect) starts its
    /// closing handshake; a protocol stream gets a GO_AWAY and drains: its
    /// in-flight calls complete until the peer closes or the close timeout.
    pub(super) fn go_away(&mut self) {
        if self.dialect == Dialect::WebSocket {
            self.send_close(1001, "server shutting down");
            return;
        }
        // Calls in flight complete (docs/protocol.md §2): the client closes
        // once it has nothing in flight, or we do at the close timeout.
        self.push_go_away("ERR_GOING_AWAY", "server shutting down");
        self.draining = true;
        self.closing_deadline = Some(Instant::now() + self.shared.config.close_timeout);
        self.result.get_or_insert((1001, "ERR_GOING_AWAY".into()));
    }
}
