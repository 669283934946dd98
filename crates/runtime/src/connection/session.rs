//! The WebSocket session of one connection: a single task that reads,
//! decodes, delivers events to its worker, and writes what was queued.
//!
//! Memory of an idle connection: the decoder owns no buffer until a partial
//! frame arrives, reads go into one buffer per I/O thread (`READ_BUFFER`),
//! and the write side holds only what is queued. That is what lets tens of
//! thousands of idle connections cost little.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use switchboard_proto::ws::deflate::{Compressor, Decompressor};
use switchboard_proto::ws::encoder::close_payload;
use switchboard_proto::ws::{Decoder, DecoderConfig, Event, Flow, OpCode, Role};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::{sleep_until, Instant};

use super::Accepted;
use crate::config::RouteConfig;
use crate::events::{body, EventQueue, KIND_CLOSE, KIND_DRAIN, KIND_MESSAGE, KIND_OPEN};
use crate::framing;
use crate::outbound::{Eviction, OutItem, Outbound};
use crate::server::{Connection, Shared};
use crate::stats;

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

pub(super) async fn run(stream: TcpStream, accepted: Accepted, shared: Arc<Shared>) {
    let route = &shared.config.routes[accepted.route_index];
    let connection = Arc::new(Connection {
        id: accepted.id,
        worker: accepted.worker,
        outbound: Outbound::new(route.max_backpressure, route.slow_consumer),
        deflate: accepted.deflate.is_some(),
    });
    shared
        .connections
        .write()
        .insert(connection.id, connection.clone());
    stats::add(&shared.stats.connections_open, 1);
    stats::add(&shared.stats.connections_total, 1);
    stats::add(&shared.worker_stats[accepted.worker].connections_open, 1);
    let queue = shared.queues[accepted.worker].clone();
    queue.push(KIND_OPEN, |out| {
        body::id(out, accepted.id);
        body::u16(out, accepted.route_index as u16);
        body::str(out, &accepted.remote);
        body::str(out, &accepted.protocol);
        body::str(out, &accepted.extensions);
    });

    let mut decoder = Decoder::new(DecoderConfig {
        max_payload_length: route.max_payload_length,
        max_fragments: route.max_fragments,
        role: Role::Server,
    });
    let mut compressor = None;
    if let Some(params) = &accepted.deflate {
        decoder.set_decompressor(Decompressor::new(params, Role::Server));
        compressor = Some(Compressor::new(params, Role::Server));
    }
    let mut session = Session {
        ctx: Context {
            shared: shared.clone(),
            route_index: accepted.route_index,
            connection: connection.clone(),
            queue: queue.clone(),
            compressor,
            pending: VecDeque::new(),
            pending_bytes: 0,
            front_partial: false,
            close_sent: false,
            close_received: false,
            finished_reading: false,
            result: None,
            last_received: Instant::now(),
            ping_sent_at: None,
            closing_deadline: None,
        },
        decoder,
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

struct Session {
    decoder: Decoder,
    ctx: Context,
}

/// Everything but the decoder, so the decoder's callback can borrow it.
struct Context {
    shared: Arc<Shared>,
    /// Index into the server's routes: an idle connection holds no copy of
    /// its route's options.
    route_index: usize,
    connection: Arc<Connection>,
    queue: Arc<EventQueue>,
    compressor: Option<Compressor>,
    /// Frames ready for the wire, in order.
    pending: VecDeque<Bytes>,
    pending_bytes: usize,
    /// The front of `pending` is partly written: the peer already has its
    /// first bytes, so it must go out whole before anything else.
    front_partial: bool,
    close_sent: bool,
    close_received: bool,
    /// No more reading: the peer closed, or its bytes broke the protocol.
    finished_reading: bool,
    /// The code and reason reported to JavaScript's `close` handler.
    result: Option<(u16, String)>,
    last_received: Instant,
    ping_sent_at: Option<Instant>,
    closing_deadline: Option<Instant>,
}

enum ReadOutcome {
    Progress,
    WouldBlock,
    Eof,
}

impl Session {
    async fn run(&mut self, stream: TcpStream) -> (u16, String) {
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
            let writing = !self.ctx.pending.is_empty();
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
                // Once it fired, `send_close` set `close_sent`: never polled again.
                _ = &mut stopping, if !self.ctx.close_sent => {
                    self.ctx.send_close(1001, "server shutting down");
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
                            self.ctx.result.get_or_insert((1006, String::new()));
                            if !self.ctx.close_sent {
                                // The peer vanished without a closing handshake.
                                return self.ctx.outcome(1006, "");
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

    fn read(&mut self, stream: &TcpStream) -> ReadOutcome {
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
        let outcome = self.decoder.feed(bytes, |event| ctx.on_event(event));
        if let Err(error) = outcome {
            stats::add(&ctx.shared.stats.protocol_errors, 1);
            ctx.finished_reading = true;
            ctx.fail(error.close_code(), error.code());
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

    fn route(&self) -> &RouteConfig {
        &self.shared.config.routes[self.route_index]
    }

    fn on_event(&mut self, event: Event<'_>) -> Flow {
        match event {
            Event::Text(payload) => self.deliver(payload, false),
            Event::Binary(payload) => self.deliver(payload, true),
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

    fn deliver(&mut self, payload: &[u8], binary: bool) {
        let id = self.connection.id;
        stats::add(&self.shared.stats.messages_in, 1);
        stats::add(
            &self.shared.worker_stats[self.connection.worker].messages_in,
            1,
        );
        self.queue.push(KIND_MESSAGE, |out| {
            body::id(out, id);
            out.push(binary as u8);
            out.extend_from_slice(payload);
        });
    }

    fn push_frame(&mut self, frame: Bytes) {
        self.connection.outbound.account(frame.len());
        self.pending_bytes += frame.len();
        self.pending.push_back(frame);
    }

    /// Begin the closing handshake from our side.
    fn send_close(&mut self, code: u16, reason: &str) {
        if self.close_sent {
            return;
        }
        self.push_frame(framing::frame_control(
            OpCode::Close,
            &close_payload(code, reason),
        ));
        self.close_sent = true;
        self.closing_deadline = Some(Instant::now() + self.shared.config.close_timeout);
        self.result.get_or_insert((code, reason.to_owned()));
    }

    /// Close because of an error: drop what is queued, say why, stop reading.
    fn fail(&mut self, code: u16, reason: &str) {
        self.finished_reading = true;
        if self.close_sent {
            return;
        }
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
        self.send_close(code, reason);
    }

    /// Returns true when the connection must end at once.
    fn evict(&mut self, eviction: Eviction) -> bool {
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

    fn on_item(&mut self, item: OutItem) {
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
                let threshold = self.route().compression.as_ref().map_or(0, |c| c.threshold);
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
            OutItem::Close { code, reason } => self.send_close(code, &reason),
        }
    }

    /// Write without waiting; `Ok` even when the socket is full.
    fn flush(&mut self, stream: &TcpStream) -> io::Result<()> {
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
    fn is_done(&self) -> bool {
        self.close_sent && self.pending.is_empty() && (self.close_received || self.finished_reading)
    }

    fn next_deadline(&self) -> Instant {
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let mut deadline = far;
        if let Some(closing) = self.closing_deadline {
            deadline = deadline.min(closing);
        }
        if !self.close_sent {
            let idle = self.route().idle_timeout;
            if !idle.is_zero() {
                deadline = deadline.min(self.last_received + idle);
            }
            let ping = self.route().ping_interval;
            if !ping.is_zero() && self.ping_sent_at.is_none() {
                deadline = deadline.min(self.last_received + ping);
            }
        }
        deadline
    }

    /// Returns true when the connection must end now.
    fn on_timer(&mut self) -> bool {
        let now = Instant::now();
        if self.closing_deadline.is_some_and(|d| now >= d) {
            // The peer never answered our close.
            return true;
        }
        if self.close_sent {
            return false;
        }
        let idle = self.route().idle_timeout;
        if !idle.is_zero() && now >= self.last_received + idle {
            self.send_close(1001, "ERR_WS_IDLE_TIMEOUT");
            return false;
        }
        let ping = self.route().ping_interval;
        if !ping.is_zero() && self.ping_sent_at.is_none() && now >= self.last_received + ping {
            self.ping_sent_at = Some(now);
            self.push_frame(framing::frame_control(OpCode::Ping, &[]));
        }
        false
    }
}

/// After our last frame: half-close and read until the peer closes too (or
/// `LINGER` passes), so unread input does not reset the connection and
/// destroy the close frame in flight.
async fn linger(stream: TcpStream, ctx: &Context) {
    let mut stream = stream;
    use tokio::io::AsyncWriteExt;
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
