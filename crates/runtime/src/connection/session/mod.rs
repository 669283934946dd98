//! The session of one connection: a single task that reads, decodes,
//! delivers events to its worker, and writes what was queued. It speaks one
//! of three [`Dialect`]s: WebSocket, the Switchboard protocol over
//! WebSocket binary messages, or the Switchboard protocol on a raw byte
//! stream (TCP, Unix); everything but the framing (queues, flushing,
//! timers, shutdown) is shared.
//!
//! Memory of an idle connection: the decoder owns no buffer until a partial
//! frame arrives, reads go into one buffer per I/O thread (`READ_BUFFER`),
//! and the write side holds only what is queued. That is what lets tens of
//! thousands of idle connections cost little.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use switchboard_proto::wire::{MAX_HANDSHAKE_SIZE, PREFACE};
use switchboard_proto::ws::deflate::{Compressor, Decompressor};
use switchboard_proto::ws::{Decoder, DecoderConfig, Role};
use tokio::io::Interest;
use tokio::time::{sleep_until, Instant};

mod protocol;
mod timers;
mod writer;

use super::wire::{random_seed, WireEvent, WireReader, MAX_BATCH_BYTES, MAX_HEADER_BYTES};
use super::Accepted;
use crate::config::SlowConsumerPolicy;
use crate::events::{body, EventQueue, KIND_CLOSE, KIND_MESSAGE, KIND_MESSAGE_OWNED, KIND_OPEN};
use crate::outbound::Outbound;
use crate::server::{Connection, Shared};
use crate::socket::{Socket, TlsInfo};
use crate::stats;

/// How a session frames what it reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// WebSocket messages for the route's handlers.
    WebSocket,
    /// The Switchboard protocol in WebSocket binary messages
    /// (subprotocol `switchboard.v1`).
    WireOverWebSocket,
    /// The Switchboard protocol on the raw byte stream.
    Wire,
}

/// The transport byte of the `RPC_OPEN` event.
pub(crate) mod transport {
    pub const TCP: u8 = 0;
    pub const UNIX: u8 = 1;
    pub const WEBSOCKET: u8 = 2;
    pub const TLS: u8 = 3;
}

/// Route index reported for connections that came through no route (raw
/// protocol listeners).
pub(crate) const NO_ROUTE: u16 = u16::MAX;

/// Size of the per-thread read buffer: large enough for many small frames
/// per syscall, small enough that one read cannot flood a worker queue.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Most buffers handed to one vectored write (Linux's IOV_MAX is 1024; 64
/// already amortises the syscall).
const MAX_IO_SLICES: usize = 64;

/// How long we keep reading (and discarding) after our final close frame so
/// that the peer's last bytes do not turn our close into a TCP reset.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

thread_local! {
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_BUFFER_BYTES]);
}

pub(super) async fn run<S: Socket>(stream: S, accepted: Accepted, shared: Arc<Shared>) {
    let route = accepted.route_index.map(|i| &shared.config.routes[i]);
    let wire_config = &shared.config.wire;
    let (max_backpressure, slow_consumer) = match (route, accepted.dialect) {
        (Some(route), Dialect::WebSocket) => (route.max_backpressure, route.slow_consumer),
        // A protocol connection never drops a frame (see `WireConfig`), and
        // the protocol's own limit applies: the client's credit lets us
        // queue a whole window, which may pass the route's.
        (Some(route), _) => (
            route.max_backpressure.max(wire_config.max_backpressure),
            SlowConsumerPolicy::Close,
        ),
        (None, _) => (wire_config.max_backpressure, SlowConsumerPolicy::Close),
    };
    let connection = Arc::new(Connection {
        id: accepted.id,
        worker: accepted.worker,
        outbound: match accepted.dialect {
            Dialect::WebSocket => Outbound::new(max_backpressure, slow_consumer),
            // The worker's peer pauses stream data at `Buffered` and
            // resumes at `drain` (ARCHITECTURE.md, "Backpressure").
            _ => Outbound::new(max_backpressure, slow_consumer)
                .with_high_water(wire_high_water(max_backpressure)),
        },
        deflate: accepted.deflate.is_some(),
        raw: accepted.dialect == Dialect::Wire,
        wire: accepted.dialect != Dialect::WebSocket,
    });
    shared
        .connections
        .write()
        .insert(connection.id, connection.clone());
    stats::add(&shared.stats.connections_open, 1);
    stats::add(&shared.stats.connections_total, 1);
    stats::add(&shared.worker_stats[accepted.worker].connections_open, 1);
    let queue = shared.queues[accepted.worker].clone();
    if accepted.dialect == Dialect::WebSocket {
        queue.push(KIND_OPEN, |out| {
            body::id(out, accepted.id);
            body::u16(out, route_index_of(&accepted));
            body::str(out, &accepted.remote);
            body::str(out, &accepted.protocol);
            body::str(out, &accepted.extensions);
        });
    }
    // A protocol connection opens for JavaScript once its HELLO is accepted.

    let max_frame_size = wire_config.settings.max_frame_size as usize;
    let reader = match (route, accepted.dialect) {
        (_, Dialect::Wire) => Reader::Wire(WireReader::new(max_frame_size)),
        (Some(route), dialect) => {
            // A protocol client may send any frame our WELCOME allows, and a
            // message holds whole frames, the first one its preface and a
            // HELLO of up to the handshake limit (docs/protocol.md §2).
            let max_payload_length = match dialect {
                Dialect::WireOverWebSocket => route
                    .max_payload_length
                    .max(max_frame_size + MAX_HEADER_BYTES)
                    .max(MAX_BATCH_BYTES)
                    .max(PREFACE.len() + MAX_HEADER_BYTES + MAX_HANDSHAKE_SIZE),
                _ => route.max_payload_length,
            };
            let mut decoder = Decoder::new(DecoderConfig {
                max_payload_length,
                max_fragments: route.max_fragments,
                role: Role::Server,
            });
            if let Some(params) = &accepted.deflate {
                decoder.set_decompressor(Decompressor::new(params, Role::Server));
            }
            let wire =
                (dialect == Dialect::WireOverWebSocket).then(|| WireReader::new(max_frame_size));
            Reader::WebSocket(Box::new(decoder), wire)
        }
        (None, _) => unreachable!("a WebSocket session always has a route"),
    };
    let heartbeat = Duration::from_millis(u64::from(wire_config.settings.heartbeat_ms));
    let (idle_timeout, ping_interval) = match (route, accepted.dialect) {
        // The protocol's heartbeat (§4): ping after one quiet interval, give
        // up after two.
        (_, Dialect::Wire) => (heartbeat * 2, heartbeat),
        (Some(route), _) => (route.idle_timeout, route.ping_interval),
        (None, _) => (Duration::ZERO, Duration::ZERO),
    };
    let now = Instant::now();
    let mut session = Session {
        ctx: Context {
            shared: shared.clone(),
            dialect: accepted.dialect,
            transport: accepted.transport,
            route_index: route_index_of(&accepted),
            remote: accepted.remote.clone(),
            idle_timeout,
            ping_interval,
            compress_threshold: route
                .and_then(|r| r.compression.as_ref())
                .map_or(0, |c| c.threshold),
            connection: connection.clone(),
            queue: queue.clone(),
            compressor: accepted
                .deflate
                .as_ref()
                .map(|params| Compressor::new(params, Role::Server)),
            pending: VecDeque::new(),
            pending_bytes: 0,
            front_partial: false,
            close_sent: false,
            close_received: false,
            finished_reading: false,
            draining: false,
            peer_last_call_id: 0,
            result: None,
            last_received: now,
            ping_sent_at: None,
            closing_deadline: None,
            handshake_deadline: (accepted.dialect != Dialect::WebSocket)
                .then(|| now + shared.config.handshake_timeout),
            tls_pending: accepted.transport == transport::TLS,
            tls: None,
        },
        reader,
    };
    let mut leftover = accepted.leftover;
    if !leftover.is_empty() {
        session.on_bytes(&mut leftover);
    }
    drop(leftover);
    let (code, reason) = session.run(stream).await;

    connection.outbound.close();
    shared.connections.write().remove(&connection.id);
    shared.registry.write().remove_subscriber(connection.id);
    stats::sub(&shared.stats.connections_open, 1);
    stats::sub(&shared.worker_stats[accepted.worker].connections_open, 1);
    queue.push(KIND_CLOSE, |out| {
        body::id(out, connection.id);
        body::u16(out, code);
        out.extend_from_slice(reason.as_bytes());
    });
}

/// Queued bytes at which a protocol connection's sends report `Buffered`,
/// so that its peer stops producing stream data until the `drain`: a
/// quarter of `max_backpressure` (4 MiB by default). Enough to keep the
/// socket busy while the worker hears the `drain` (the kernel's own buffer
/// still holds data in flight), and low enough that paused stream data (a
/// quarter, plus the chunk that crossed it: the worker sends chunks of at
/// most 64 KiB) leaves half the limit to the frames credit does not pace.
/// ARCHITECTURE.md ("Backpressure, end to end") has the whole argument.
fn wire_high_water(max_backpressure: usize) -> usize {
    (max_backpressure / 4).max(1)
}

fn route_index_of(accepted: &Accepted) -> u16 {
    accepted.route_index.map_or(NO_ROUTE, |i| i as u16)
}

/// The decoder of the session's dialect.
enum Reader {
    /// A WebSocket decoder, and for the protocol over WebSocket the reader
    /// of the frames in its binary messages. Boxed: the decoder's inline
    /// buffers (~480 bytes) would otherwise size every protocol stream's
    /// session too.
    WebSocket(Box<Decoder>, Option<WireReader>),
    Wire(WireReader),
}

struct Session {
    reader: Reader,
    ctx: Context,
}

/// Everything but the decoder, so the decoder's callback can borrow it.
struct Context {
    shared: Arc<Shared>,
    dialect: Dialect,
    transport: u8,
    route_index: u16,
    remote: String,
    idle_timeout: Duration,
    ping_interval: Duration,
    compress_threshold: usize,
    connection: Arc<Connection>,
    queue: Arc<EventQueue>,
    compressor: Option<Compressor>,
    /// Frames ready for the wire, in order.
    pending: VecDeque<Bytes>,
    pending_bytes: usize,
    /// The front of `pending` is partly written: the peer already has its
    /// first bytes, so it must go out whole before anything else.
    front_partial: bool,
    /// Our last frame is queued (a WebSocket close, or a final GO_AWAY):
    /// nothing more is written after it.
    close_sent: bool,
    close_received: bool,
    /// No more reading: the peer closed, or its bytes broke the protocol.
    finished_reading: bool,
    /// A protocol connection got our graceful GO_AWAY: in-flight calls go
    /// on until the peer closes or `closing_deadline` passes.
    draining: bool,
    /// The highest call id of the peer's seen (the GO_AWAY's last call id).
    peer_last_call_id: u64,
    /// The code and reason reported to JavaScript's `close` handler.
    result: Option<(u16, String)>,
    last_received: Instant,
    ping_sent_at: Option<Instant>,
    closing_deadline: Option<Instant>,
    /// Protocol connections must complete their HELLO by then.
    handshake_deadline: Option<Instant>,
    /// A TLS connection whose handshake results are not taken yet.
    tls_pending: bool,
    /// What its TLS handshake settled, for the `RPC_OPEN` event (taken
    /// with the first plaintext, which comes after the handshake).
    tls: Option<Box<TlsInfo>>,
}

enum ReadOutcome {
    Progress,
    WouldBlock,
    Eof,
}

impl Session {
    async fn run<S: Socket>(&mut self, stream: S) -> (u16, String) {
        let shared = self.ctx.shared.clone();
        let connection = self.ctx.connection.clone();
        let queue = self.ctx.queue.clone();
        let mut paused = false;
        let mut items = VecDeque::new();
        // The futures that outlive one turn of the loop are made once and
        // polled again: re-creating them every turn registered and removed
        // a waiter (each under a lock) and a timer entry per message.
        let force = shared.force.cancelled();
        let stopping = shared.stopping.cancelled();
        let notified = connection.outbound.notified();
        let timer = sleep_until(self.ctx.next_deadline());
        tokio::pin!(force, stopping, notified, timer);
        loop {
            // Take what other threads queued, then write as much as the
            // socket takes without waiting.
            if let Some(eviction) = connection.outbound.take(&mut items) {
                if self.ctx.evict(eviction) {
                    break;
                }
            }
            for item in items.drain(..) {
                self.ctx.on_item(item);
            }
            if self.ctx.flush(&stream).is_err() {
                return self.ctx.outcome(1006, "");
            }
            if self.ctx.is_done() {
                break;
            }
            let reading = !self.ctx.finished_reading && !paused;
            let writing = !self.ctx.pending.is_empty() || stream.has_buffered_output();
            // Deadlines only move later as data arrives (idle, ping), so the
            // timer is re-armed only for an earlier one (a close started);
            // one that fires early finds nothing due and is re-armed.
            let deadline = self.ctx.next_deadline();
            if deadline < timer.deadline() {
                timer.as_mut().reset(deadline);
            }
            tokio::select! {
                _ = &mut force => {
                    return self.ctx.outcome(1001, "ERR_SERVER_SHUTDOWN");
                }
                // Once it fired, `go_away` set `close_sent` or `draining`:
                // never polled again.
                _ = &mut stopping, if !self.ctx.close_sent && !self.ctx.draining => {
                    self.ctx.go_away();
                }
                ready = stream.readable(), if reading => {
                    if ready.is_err() {
                        self.ctx.finished_reading = true;
                        self.ctx.result.get_or_insert((1006, String::new()));
                        continue;
                    }
                    match self.read(&stream) {
                        ReadOutcome::Progress => {
                            if queue.queued_bytes() >= shared.config.max_worker_queue_bytes {
                                paused = true;
                            }
                        }
                        ReadOutcome::WouldBlock => {}
                        ReadOutcome::Eof => {
                            self.ctx.finished_reading = true;
                            // A protocol connection has no closing handshake:
                            // the end of its stream is a normal close.
                            let code = if self.ctx.dialect == Dialect::Wire { 1000 } else { 1006 };
                            self.ctx.result.get_or_insert((code, String::new()));
                            if !self.ctx.close_sent {
                                // The peer vanished without a closing handshake.
                                return self.ctx.outcome(code, "");
                            }
                        }
                    }
                }
                _ = queue.wait_for_room(), if paused => paused = false,
                _ = &mut notified => {
                    notified.set(connection.outbound.notified());
                }
                _ = stream.writable(), if writing => {}
                _ = &mut timer => {
                    if self.ctx.on_timer() {
                        break;
                    }
                    timer.as_mut().reset(self.ctx.next_deadline());
                }
            }
        }
        let result = self.ctx.outcome(1006, "");
        linger(stream, &self.ctx).await;
        result
    }

    fn read<S: Socket>(&mut self, stream: &S) -> ReadOutcome {
        READ_BUFFER.with(|cell| {
            let mut buffer = cell.borrow_mut();
            let capacity = buffer.len();
            let mut received = 0;
            // A read shorter than the buffer emptied the socket: report it as
            // "would block" to `try_io`, which then clears the readiness (only
            // if no newer readiness event arrived meanwhile), so the next turn
            // waits for data instead of spending a `recv` that would fail
            // with EAGAIN. That was one syscall in two at one message per read.
            let outcome = stream.try_io(Interest::READABLE, || {
                received = stream.try_read(&mut buffer[..])?;
                if received > 0 && received < capacity {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            });
            match outcome {
                _ if received > 0 => {
                    if self.ctx.tls_pending {
                        self.ctx.tls = stream.tls_info().map(Box::new);
                        self.ctx.tls_pending = self.ctx.tls.is_none();
                    }
                    self.on_bytes(&mut buffer[..received]);
                    ReadOutcome::Progress
                }
                Ok(()) => ReadOutcome::Eof,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
                Err(_) => ReadOutcome::Eof,
            }
        })
    }

    fn on_bytes(&mut self, bytes: &mut [u8]) {
        let ctx = &mut self.ctx;
        ctx.last_received = Instant::now();
        ctx.ping_sent_at = None;
        stats::add(&ctx.shared.stats.bytes_in, bytes.len() as u64);
        match &mut self.reader {
            Reader::WebSocket(decoder, wire) => {
                let outcome = decoder.feed(bytes, |event| ctx.on_event(event, wire.as_mut()));
                if let Err(error) = outcome {
                    stats::add(&ctx.shared.stats.protocol_errors, 1);
                    ctx.finished_reading = true;
                    ctx.fail(error.close_code(), error.code());
                }
            }
            Reader::Wire(reader) => {
                if let Err(error) = reader.feed(bytes, &mut |event| ctx.on_wire(event)) {
                    ctx.wire_failed(error);
                }
            }
        }
    }
}

impl Context {
    /// The code and reason for the `close` event: what was decided earlier
    /// (a close frame, an error), else the given fallback.
    fn outcome(&mut self, code: u16, reason: &str) -> (u16, String) {
        self.result
            .take()
            .unwrap_or_else(|| (code, reason.to_owned()))
    }

    fn deliver(&mut self, payload: &[u8], binary: bool) {
        let id = self.count_message_in();
        self.queue.push(KIND_MESSAGE, |out| {
            body::id(out, id);
            out.push(binary as u8);
            out.extend_from_slice(payload);
        });
    }

    /// A binary message in its own buffer, handed to the worker as it is.
    fn deliver_owned(&mut self, payload: Vec<u8>) {
        let id = self.count_message_in();
        self.queue.push_owned(
            KIND_MESSAGE_OWNED,
            |out| {
                body::id(out, id);
                out.push(1);
            },
            payload,
        );
    }

    /// Count one message in; returns the connection's id.
    fn count_message_in(&self) -> u64 {
        stats::add(&self.shared.stats.messages_in, 1);
        stats::add(
            &self.shared.worker_stats[self.connection.worker].messages_in,
            1,
        );
        self.connection.id
    }
}

/// After our last frame: half-close and read until the peer closes too (or
/// `LINGER` passes), so unread input does not reset the connection and
/// destroy the close frame in flight.
async fn linger<S: Socket>(mut stream: S, ctx: &Context) {
    let _ = stream.shutdown().await;
    if ctx.close_received {
        return;
    }
    // Discard into the thread's read buffer (no buffer in the task state).
    let _ = tokio::time::timeout(LINGER, async {
        while stream.readable().await.is_ok() {
            let read = READ_BUFFER.with(|cell| stream.try_read(&mut cell.borrow_mut()[..]));
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
    })
    .await;
}
