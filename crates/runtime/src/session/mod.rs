//! The session of one open connection, as a state machine apart from its
//! socket (the shape of tungstenite's `WebSocketContext`): it is fed the
//! bytes that arrived, what other threads queued, shutdown and the time,
//! and it answers with frames to write (its [`WriteQueue`]), events for the
//! connection's worker, and its next deadline. A thin loop drives it over
//! a socket (`reactor/entry.rs`); the unit tests drive it with no socket at all.
//!
//! One session serves every [`ConnectionKind`]: WebSocket (with or without
//! permessage-deflate), and the Switchboard protocol on a byte stream or in
//! WebSocket binary messages. Only what is read and how it is framed
//! differs (`websocket.rs`, `rpc.rs`).
//!
//! Memory of an idle connection: the decoders own no buffer until a partial
//! frame arrives, reads go into one buffer per I/O thread, and the write
//! side holds only what is queued.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;
use std::time::Instant;

use switchboard_proto::ws::deflate::Compressor;
use switchboard_proto::ws::Decoder;

mod closing;
mod http;
mod rpc;
mod start;
mod timers;
mod websocket;
mod writes;

#[cfg(test)]
mod sockjs_tests;
#[cfg(test)]
mod tests;

use crate::config::ServerConfig;
use crate::connection::{Connection, ConnectionKind};
use crate::errors;
use crate::events::{EventQueue, Record, Transport};
use crate::outbound::{Eviction, OutItem, Taken};
use crate::rpc_reader::RpcReader;
use crate::state::ServerState;
use crate::stats;
use crate::tls::TlsInfo;
use timers::Liveness;
use writes::WriteQueue;

/// Where the connection stands. One enum instead of a set of flags
/// (`close_sent`, `close_received`, `finished_reading`, `draining`), so a
/// combination that makes no sense cannot be represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The Switchboard protocol before the client's HELLO is accepted; it
    /// must arrive by `deadline`.
    Handshake {
        deadline: Instant,
    },
    Open,
    /// The protocol after our graceful GO_AWAY: calls in flight complete
    /// until the peer closes, or the deadline passes.
    Draining {
        deadline: Instant,
    },
    /// Our last frame (a close frame, or a final GO_AWAY) is queued and
    /// nothing is written after it. `reading`: a WebSocket reads on for the
    /// peer's close frame; after an error, or on a protocol stream, nothing
    /// more is read. The connection ends at `deadline` at the latest.
    Closing {
        deadline: Instant,
        reading: bool,
    },
    /// The peer's close frame arrived (and ours is queued or out): done
    /// once the writes are out.
    Closed,
}

/// What the driver does after feeding an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Continue,
    /// Drop the connection now: nothing more is written.
    End,
}

/// The decoder of the session's kind. A WebSocket's decoder is a few words
/// when idle and lives inline; the protocol's readers are boxed, so plain
/// WebSocket sessions are not sized for them.
enum Reader {
    WebSocket(Decoder),
    /// The protocol's frames inside WebSocket binary messages.
    RpcWebSocket(Box<(Decoder, RpcReader)>),
    RpcStream(Box<RpcReader>),
    Http(Box<http::HttpReader>),
}

/// What `RPC_OPEN` reports, kept until the HELLO arrives.
struct Opening {
    route: u16,
    transport: Transport,
    remote: String,
    tls: Option<TlsInfo>,
    /// TLS on a byte stream: the handshake results are taken with the first
    /// plaintext, which comes after the handshake.
    tls_pending: bool,
}

pub(crate) struct Session {
    reader: Reader,
    machine: Machine,
}

/// Everything but the decoder, so the decoder's callback can borrow it.
pub(crate) struct Machine {
    connection: Arc<Connection>,
    server: Arc<ServerState>,
    phase: Phase,
    route: Option<u16>,
    writes: WriteQueue,
    liveness: Liveness,
    compressor: Option<Box<Compressor>>,
    /// The code and reason the `close` event reports: the first decided
    /// (a close frame, an error, a GO_AWAY), unless a termination overrides.
    /// Boxed: decided only when the connection ends.
    outcome: Option<Box<(u16, String)>>,
    /// The highest call id of the peer's (the last call id of a GO_AWAY).
    peer_last_call_id: u64,
    opening: Option<Box<Opening>>,
}

impl Session {
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.machine.connection
    }

    /// Queue bytes to go out before anything else (the `101` of an
    /// upgrade).
    pub(crate) fn push_first(&mut self, bytes: Vec<u8>) {
        self.machine.writes.push_preamble(bytes::Bytes::from(bytes));
    }

    #[cfg(test)]
    pub(crate) fn phase(&self) -> Phase {
        self.machine.phase
    }

    /// Bytes that arrived (`bytes` may be unmasked in place).
    pub(crate) fn on_bytes(&mut self, bytes: &mut [u8], now: Instant) {
        let machine = &mut self.machine;
        if !machine.wants_read() {
            return;
        }
        machine.liveness.heard(now);
        stats::add(&machine.server.stats.bytes_in, bytes.len() as u64);
        match &mut self.reader {
            Reader::WebSocket(decoder) => {
                let outcome = decoder.feed(bytes, |event| machine.on_websocket(event, now));
                if let Err(error) = outcome {
                    machine.websocket_failed(error.close_code(), error.code(), now);
                }
            }
            Reader::RpcWebSocket(readers) => {
                let (decoder, reader) = &mut **readers;
                let outcome =
                    decoder.feed(bytes, |event| machine.on_rpc_message(event, reader, now));
                if let Err(error) = outcome {
                    machine.websocket_failed(error.close_code(), error.code(), now);
                }
            }
            Reader::RpcStream(reader) => {
                if let Err(error) = reader.feed(bytes, &mut |event| machine.on_rpc(event)) {
                    machine.rpc_failed(error, now);
                }
            }
            Reader::Http(reader) => reader.on_bytes(machine, bytes, now),
        }
    }

    /// The peer closed its side (or reading failed).
    pub(crate) fn on_eof(&mut self) -> Step {
        if let Reader::Http(reader) = &mut self.reader {
            // The client went away: what is in flight is aborted (its
            // handlers' `req.signal` fires), as nginx treats a client's FIN
            // (499). A client that only half-closed after its requests
            // loses their answers; browsers and HTTP libraries never do.
            // After our last response, nothing is lost.
            let code = if reader.is_idle() { 1000 } else { 1006 };
            self.machine.settle(code, "");
            return Step::End;
        }
        self.machine.on_eof()
    }

    /// After [`Session::on_outbound`]: whether reading, stopped for a
    /// while (an HTTP connection waiting for its responses), may resume;
    /// the driver then reads without waiting for a readiness edge.
    pub(crate) fn read_resumed(&mut self, now: Instant) -> bool {
        match &mut self.reader {
            Reader::Http(reader) => reader.on_outbound(&mut self.machine, now),
            _ => false,
        }
    }

    /// After a flush: whether the driver should service the connection
    /// again at once instead of waiting for writability. A flush that
    /// stopped at its budget (`writes.rs`, `FLUSH_BUDGET`) left bytes the
    /// socket would take; an HTTP connection sending a static file queues
    /// it a piece at a time. Either way no writability edge will come to
    /// ask for more.
    pub(crate) fn wants_another_turn(&self) -> bool {
        self.machine.writes.wants_more()
            || matches!(&self.reader, Reader::Http(reader) if reader.sending())
                && self.machine.writes.is_empty()
    }

    /// What other threads queued (`taken` says how), and the eviction
    /// they asked for.
    pub(crate) fn on_outbound(
        &mut self,
        items: &mut VecDeque<OutItem>,
        taken: Taken,
        now: Instant,
    ) -> Step {
        if taken.front_partial {
            // Another thread began writing it; nothing may come before its
            // rest, not even our own frames.
            match items.pop_front() {
                Some(OutItem::Frame(rest)) => self.machine.writes.push_partial_front(rest),
                Some(OutItem::Coalesced(rest)) => {
                    self.machine.writes.push_partial_front(rest.freeze())
                }
                Some(other) => items.push_front(other),
                None => {}
            }
        }
        self.machine.on_outbound(items, taken.eviction, now)
    }

    /// Whether other threads may write this connection's frames straight
    /// to its socket: it is open (or draining), frames what it is sent as
    /// sent (no compression), and has nothing of its own in flight.
    pub(crate) fn allows_direct_writes(&self) -> bool {
        let machine = &self.machine;
        matches!(machine.phase, Phase::Open | Phase::Draining { .. })
            && machine.kind() != ConnectionKind::WebSocketDeflate
            && machine.writes.is_empty()
    }

    /// The server begins a graceful shutdown.
    pub(crate) fn on_shutdown(&mut self, now: Instant) {
        match &mut self.reader {
            Reader::Http(reader) => reader.on_shutdown(&mut self.machine),
            _ => self.machine.go_away(now),
        }
    }

    /// The drain timeout passed: the connection ends now; returns what its
    /// close event reports.
    pub(crate) fn on_force(&mut self) -> (u16, String) {
        self.machine.outcome.take().map(|o| *o).unwrap_or_else(|| {
            (
                errors::SERVER_SHUTDOWN.status,
                errors::SERVER_SHUTDOWN.code.into(),
            )
        })
    }

    /// A deadline may have passed.
    pub(crate) fn on_deadline(&mut self, now: Instant) -> Step {
        if let Reader::Http(reader) = &mut self.reader {
            if self.machine.phase == Phase::Open {
                reader.on_deadline(&mut self.machine, now);
                return Step::Continue;
            }
        }
        self.machine.on_deadline(now)
    }

    /// The earliest time [`Session::on_deadline`] has something to do.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match &self.reader {
            Reader::Http(reader) if self.machine.phase == Phase::Open => {
                reader.next_deadline(&self.machine)
            }
            _ => self.machine.next_deadline(),
        }
    }

    /// Whether the session reads more input.
    pub(crate) fn wants_read(&self) -> bool {
        self.machine.wants_read()
            && match &self.reader {
                Reader::Http(reader) => reader.wants_read(&self.machine),
                _ => true,
            }
    }

    /// Write what is queued through `write` (a vectored, non-blocking write
    /// that returns how much it took); `Ok` also when the socket is full.
    pub(crate) fn flush(
        &mut self,
        write: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
        now: Instant,
    ) -> io::Result<()> {
        self.machine.flush(write, now)
    }

    /// The closing is complete: nothing more to read or write.
    pub(crate) fn is_done(&self) -> bool {
        let machine = &self.machine;
        machine.writes.is_empty()
            && matches!(
                machine.phase,
                Phase::Closed | Phase::Closing { reading: false, .. }
            )
    }

    /// After the last frame: whether to read on (discarding) until the peer
    /// closes, so unread input does not turn our close into a reset. Not
    /// needed once the peer's own close frame arrived.
    pub(crate) fn needs_linger(&self) -> bool {
        self.machine.phase != Phase::Closed
    }

    /// Whether the driver should hand over the TLS handshake's results (a
    /// protocol stream over TLS, before its HELLO).
    pub(crate) fn wants_tls_info(&self) -> bool {
        self.machine
            .opening
            .as_ref()
            .is_some_and(|opening| opening.tls_pending)
    }

    pub(crate) fn set_tls_info(&mut self, info: TlsInfo) {
        if let Some(opening) = &mut self.machine.opening {
            opening.tls = Some(info);
            opening.tls_pending = false;
        }
    }

    /// The connection is over: it leaves the server's table and its
    /// channels, and its worker hears `CLOSE` with `outcome` (what was
    /// decided, else the fallback given). (Dropping the session closes its
    /// outbound queue too.)
    pub(crate) fn finish(mut self, fallback: (u16, String)) {
        let (code, reason) = self.machine.outcome.take().map_or(fallback, |o| *o);
        let notify = match &self.reader {
            Reader::Http(reader) => reader.opened(),
            _ => true,
        };
        self.machine
            .server
            .unregister(&self.machine.connection, code, &reason, notify);
    }
}

impl Machine {
    fn config(&self) -> &ServerConfig {
        &self.server.config
    }

    /// The event queue of the connection's worker.
    fn queue(&self) -> &Arc<EventQueue> {
        &self.server.queues[self.connection.worker()]
    }

    fn kind(&self) -> ConnectionKind {
        self.connection.kind
    }

    fn wants_read(&self) -> bool {
        !matches!(
            self.phase,
            Phase::Closed | Phase::Closing { reading: false, .. }
        )
    }

    fn on_eof(&mut self) -> Step {
        match self.phase {
            // Our close is queued: finish writing it, read no more.
            Phase::Closing { deadline, .. } => {
                self.settle(1006, "");
                self.phase = Phase::Closing {
                    deadline,
                    reading: false,
                };
                Step::Continue
            }
            Phase::Closed => Step::Continue,
            // The peer vanished without a closing handshake; a protocol
            // stream has none: the end of its stream is a normal close.
            _ => {
                let code = if self.kind() == ConnectionKind::RpcStream {
                    1000
                } else {
                    1006
                };
                self.settle(code, "");
                Step::End
            }
        }
    }

    fn on_outbound(
        &mut self,
        items: &mut VecDeque<OutItem>,
        eviction: Option<Eviction>,
        now: Instant,
    ) -> Step {
        match eviction {
            Some(Eviction::Terminate) => {
                self.outcome = Some(Box::new((1006, "terminated".into())));
                return Step::End;
            }
            Some(Eviction::SlowConsumer) => self.fail(errors::WS_SLOW_CONSUMER, now),
            Some(Eviction::WorkerDied) => self.fail(errors::WORKER_DIED, now),
            None => {}
        }
        for item in items.drain(..) {
            self.on_item(item, now);
        }
        Step::Continue
    }

    fn on_item(&mut self, item: OutItem, now: Instant) {
        if self.is_closing() {
            // Nothing follows our last frame on the wire.
            self.connection.outbound.written(item.counted_bytes());
            return;
        }
        match item {
            OutItem::Frame(frame) => self.writes.push_counted(frame),
            OutItem::Coalesced(frames) => self.writes.push_counted(frames.freeze()),
            OutItem::Message { payload, binary } => {
                // Counted as payload bytes at enqueue; recounted as framed.
                self.connection.outbound.written(payload.len());
                let frame = self.compress(&payload, binary);
                self.push_frame(frame);
            }
            OutItem::Close {
                code,
                reason,
                go_away,
            } => {
                if go_away || !self.kind().is_rpc() {
                    self.send_close(code, &reason, now);
                } else {
                    self.close_after_go_away(code, &reason, now);
                }
            }
        }
    }

    /// Queue a frame of the session's own (a reply, a close frame).
    fn push_frame(&mut self, frame: bytes::Bytes) {
        self.writes.push_own(frame, &self.connection.outbound);
    }

    fn flush(
        &mut self,
        write: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
        now: Instant,
    ) -> io::Result<()> {
        let outbound = &self.connection.outbound;
        let flushed = self.writes.flush(write, outbound, &self.server.stats)?;
        outbound.set_congested(!flushed.all);
        if let Phase::Closing { deadline, reading } = self.phase {
            if flushed.progress && !flushed.all {
                // Our last frame is still on its way behind frames a slow
                // reader is taking: the close timeout counts from the last
                // progress, so a client that reads (however slowly) gets
                // the close frame that says why, not a bare disconnect.
                self.phase = Phase::Closing {
                    deadline: deadline.max(self.close_deadline(now)),
                    reading,
                };
            }
        }
        let all_written = flushed.all;
        if all_written && outbound.take_drain_wanted() && !self.is_closing() {
            self.queue().push(&Record::Drain {
                id: self.connection.id,
            });
        }
        Ok(())
    }

    /// Count one message in.
    fn count_message_in(&self) {
        stats::add(&self.server.stats.messages_in, 1);
        stats::add(
            &self.server.worker_stats[self.connection.worker()].messages_in,
            1,
        );
    }

    fn deliver(&mut self, payload: &[u8], binary: bool) {
        self.count_message_in();
        self.queue().push(&Record::Message {
            id: self.connection.id,
            binary,
            payload,
        });
    }

    /// A binary message in its own buffer, handed to the worker as it is.
    fn deliver_owned(&mut self, payload: Vec<u8>) {
        self.count_message_in();
        let id = self.connection.id;
        self.queue()
            .push_owned(payload, |index| Record::MessageOwned {
                id,
                binary: true,
                index,
            });
    }
}

impl Drop for Session {
    /// However the session ends (`finish`, or dropped with its I/O thread),
    /// no other thread may write to its socket afterwards: the socket
    /// closes after this.
    fn drop(&mut self) {
        self.machine.connection.outbound.close();
    }
}
