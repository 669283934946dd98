//! The write side of a session: queued frames, closing, eviction and the
//! vectored flush.

use std::io::{self, IoSlice};

use bytes::{Buf, Bytes};
use switchboard_proto::ws::encoder::close_payload;
use switchboard_proto::ws::OpCode;
use tokio::time::Instant;

use super::{Context, Dialect, MAX_IO_SLICES};
use crate::events::{body, KIND_DRAIN};
use crate::framing;
use crate::outbound::{Eviction, OutItem};
use crate::socket::Socket;
use crate::stats;

impl Context {
    pub(super) fn push_frame(&mut self, frame: Bytes) {
        self.connection.outbound.account(frame.len());
        self.pending_bytes += frame.len();
        self.pending.push_back(frame);
    }

    /// Close from our side. A protocol connection first gets a GO_AWAY whose
    /// code is the reason's `ERR_*` code; a raw stream then just ends (it has
    /// no closing handshake), a WebSocket starts its closing handshake.
    pub(super) fn send_close(&mut self, code: u16, reason: &str) {
        if self.close_sent {
            return;
        }
        if self.dialect != Dialect::WebSocket {
            // Only a code the protocol allows (§3: printable ASCII) goes
            // on the wire; a reason that does not start with one gets the
            // generic code.
            let wire_code = reason
                .split(':')
                .next()
                .filter(|c| c.starts_with("ERR_") && switchboard_proto::wire::is_code(c));
            self.push_go_away(wire_code.unwrap_or("ERR_GOING_AWAY"), reason);
            if self.dialect == Dialect::Wire {
                self.last_frame_queued(code, reason);
                return;
            }
        }
        self.close_websocket(code, reason);
    }

    /// Close a protocol connection whose GO_AWAY JavaScript's peer already
    /// queued (a violation it found): a second one would tell the client
    /// two different last call ids.
    pub(super) fn close_after_go_away(&mut self, code: u16, reason: &str) {
        if self.close_sent {
            return;
        }
        if self.dialect == Dialect::Wire {
            self.last_frame_queued(code, reason);
        } else {
            self.close_websocket(code, reason);
        }
    }

    /// Begin the WebSocket closing handshake from our side.
    pub(super) fn close_websocket(&mut self, code: u16, reason: &str) {
        self.push_frame(framing::frame_control(
            OpCode::Close,
            &close_payload(code, reason),
        ));
        self.close_sent = true;
        self.closing_deadline = Some(Instant::now() + self.shared.config.close_timeout);
        self.result.get_or_insert((code, reason.to_owned()));
    }

    /// Close because of an error: drop what is queued, say why, stop reading.
    pub(super) fn fail(&mut self, code: u16, reason: &str) {
        self.finished_reading = true;
        if self.close_sent {
            return;
        }
        self.drop_unsent();
        self.send_close(code, reason);
    }

    /// Drop every queued frame not yet on the wire.
    pub(super) fn drop_unsent(&mut self) {
        // A frame already partly on the wire must be finished, or the close
        // frame would be read as the rest of its payload.
        let partial = if self.front_partial {
            self.pending.pop_front()
        } else {
            None
        };
        let kept = partial.as_ref().map_or(0, Bytes::len);
        self.connection.outbound.written(self.pending_bytes - kept);
        self.pending.clear();
        self.pending_bytes = kept;
        self.pending.extend(partial);
    }

    /// Returns true when the connection must end at once.
    pub(super) fn evict(&mut self, eviction: Eviction) -> bool {
        match eviction {
            Eviction::Terminate => {
                self.result = Some((1006, "terminated".into()));
                true
            }
            Eviction::SlowConsumer => {
                self.fail(1008, "ERR_WS_SLOW_CONSUMER");
                false
            }
            Eviction::WorkerDied => {
                self.fail(1011, "ERR_WORKER_DIED");
                false
            }
        }
    }

    pub(super) fn on_item(&mut self, item: OutItem) {
        if self.close_sent {
            // Nothing follows a close frame on the wire.
            return;
        }
        match item {
            OutItem::Frame(frame) => {
                self.pending_bytes += frame.len();
                self.pending.push_back(frame);
            }
            OutItem::Message { payload, binary } => {
                // Counted as payload bytes at enqueue; recount as framed.
                self.connection.outbound.written(payload.len());
                let threshold = self.compress_threshold;
                let mut compressed = Vec::new();
                let deflated = match &mut self.compressor {
                    Some(compressor) if payload.len() >= threshold => {
                        compressor.compress(&payload, &mut compressed).is_ok()
                    }
                    _ => false,
                };
                // A compressor failure (a zlib internal error) falls back to
                // sending the message uncompressed, which is always legal.
                let frame = if deflated {
                    framing::frame_compressed(&compressed, binary)
                } else {
                    framing::frame_message(&payload, binary)
                };
                self.push_frame(frame);
            }
            OutItem::Coalesced(frames) => {
                self.pending_bytes += frames.len();
                self.pending.push_back(frames.freeze());
            }
            OutItem::Close {
                code,
                reason,
                go_away,
            } => {
                if go_away || self.dialect == Dialect::WebSocket {
                    self.send_close(code, &reason);
                } else {
                    self.close_after_go_away(code, &reason);
                }
            }
        }
    }

    /// Write without waiting; `Ok` even when the socket is full.
    pub(super) fn flush<S: Socket>(&mut self, stream: &S) -> io::Result<()> {
        if self.pending.is_empty() && stream.has_buffered_output() {
            // Only the socket's own buffer (TLS records) is left.
            match stream.try_write_vectored(&[]) {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
        }
        while !self.pending.is_empty() {
            // On the stack: a flush allocates nothing.
            let mut slices = [IoSlice::new(&[]); MAX_IO_SLICES];
            let mut count = 0;
            for (slot, bytes) in slices.iter_mut().zip(self.pending.iter()) {
                *slot = IoSlice::new(bytes);
                count += 1;
            }
            match stream.try_write_vectored(&slices[..count]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(mut n) => {
                    self.connection.outbound.written(n);
                    self.pending_bytes -= n;
                    stats::add(&self.shared.stats.bytes_out, n as u64);
                    while n > 0 {
                        let front = self.pending.front_mut().expect("wrote more than pending");
                        if n >= front.len() {
                            n -= front.len();
                            self.pending.pop_front();
                            self.front_partial = false;
                        } else {
                            front.advance(n);
                            self.front_partial = true;
                            n = 0;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.connection.outbound.set_congested(true);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        self.connection.outbound.set_congested(false);
        if self.connection.outbound.take_drain_wanted() && !self.close_sent {
            let id = self.connection.id;
            self.queue.push(KIND_DRAIN, |out| body::id(out, id));
        }
        Ok(())
    }

    /// The session is over once our close frame is out and either the peer
    /// answered or it broke the protocol.
    pub(super) fn is_done(&self) -> bool {
        self.close_sent && self.pending.is_empty() && (self.close_received || self.finished_reading)
    }

    /// A protocol stream's last frame (a GO_AWAY) is queued: nothing more is
    /// written or read, and a peer that does not take it gets
    /// `close_timeout` before the connection is dropped.
    pub(super) fn last_frame_queued(&mut self, code: u16, reason: &str) {
        self.close_sent = true;
        self.finished_reading = true;
        self.closing_deadline = Some(Instant::now() + self.shared.config.close_timeout);
        self.result.get_or_insert((code, reason.to_owned()));
    }
}
