//! The loops that drive a connection's state machines over its socket, one
//! Tokio task per connection: the HTTP phase (`handshake.rs`) on an HTTP
//! listener, then the session (`session/`); the session at once on an RPC
//! listener. Everything a connection decides is in those machines; here
//! are only waiting, reading, writing and the clock.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;
use tokio::sync::oneshot;
use tokio::time::{sleep_until, Instant};

use crate::connection::ConnectionKind;
use crate::errors;
use crate::events::Transport;
use crate::handshake::{self, Decision, Response};
use crate::session::{Accepted, Session, Step};
use crate::socket::Socket;
use crate::state::{ServerState, UpgradeDecision};
use crate::stats;

/// Size of the per-thread read buffer: large enough for many small frames
/// per syscall, small enough that one read cannot flood a worker queue.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// How long we keep reading (and discarding) after our final frame so that
/// the peer's last bytes do not turn our close into a TCP reset.
const LINGER: Duration = Duration::from_secs(2);

/// How long a refusal may take to write before the connection is dropped.
const RESPONSE_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads of a request head grow its buffer by this much.
const HEAD_READ_BYTES: usize = 1024;

thread_local! {
    /// Every connection of an I/O thread reads into this one buffer, so an
    /// idle connection owns none.
    static READ_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_BUFFER_BYTES]);
}

/// A connection on an HTTP listener: its request head, then a response (and
/// the end), or a WebSocket session.
pub(crate) async fn serve_http<S: Socket>(mut socket: S, remote: String, server: Arc<ServerState>) {
    let timeout = server.config.handshake_timeout;
    let outcome = tokio::select! {
        _ = server.stopping.cancelled() => return,
        outcome = tokio::time::timeout(timeout, http_phase(&socket, remote, &server)) => outcome,
    };
    match outcome {
        Ok(Some((accepted, leftover))) => {
            let session = Session::start(accepted, server, std::time::Instant::now());
            drive(socket, session, leftover).await;
        }
        Ok(None) => {}
        Err(_elapsed) => {
            let response = Response::failure(errors::HTTP_REQUEST_TIMEOUT, &[]);
            respond(&mut socket, &server, response).await;
        }
    }
}

/// A connection on an RPC listener: the session reads the preface and the
/// HELLO itself (by the server's `handshake_timeout`).
pub(crate) async fn serve_rpc<S: Socket>(
    socket: S,
    remote: String,
    server: Arc<ServerState>,
    transport: Transport,
) {
    let accepted = Accepted {
        id: server.next_id(),
        worker: server.pick_worker(),
        kind: ConnectionKind::RpcStream,
        route: None,
        transport,
        remote,
        protocol: String::new(),
        extensions: String::new(),
        deflate: None,
        tls: None,
    };
    let session = Session::start(accepted, server, std::time::Instant::now());
    drive(socket, session, Vec::new()).await;
}

/// The HTTP phase; `None` when the connection is done (answered, refused
/// or gone).
async fn http_phase<S: Socket>(
    socket: &S,
    remote: String,
    server: &Arc<ServerState>,
) -> Option<(Accepted, Vec<u8>)> {
    let (head, leftover) = match read_head(socket, server).await? {
        Ok(read) => read,
        Err(response) => {
            write_response(socket, server, response).await;
            return None;
        }
    };
    let upgrade = match handshake::decide(head, &server.config) {
        Decision::Respond(response) => {
            write_response(socket, server, response).await;
            return None;
        }
        Decision::Upgrade(upgrade) => upgrade,
    };
    let id = server.next_id();
    let worker = server.pick_worker();
    let tls = socket.tls_info();
    let decision = if upgrade.ask_hook {
        ask_upgrade_hook(
            server,
            id,
            worker,
            upgrade.hook_record(id, &remote, tls.as_ref()),
        )
        .await
    } else {
        UpgradeDecision::Accept { protocol: None }
    };
    let asked_hook = upgrade.ask_hook;
    match upgrade.accept(decision, id, worker, remote, tls) {
        Ok((response, accepted)) => {
            if write_all(socket, &response).await.is_err() {
                if asked_hook {
                    // The hook accepted and its worker keeps the connection's
                    // data until the connection's events end; end them.
                    server.queues[worker].push(&crate::events::Record::Close {
                        id,
                        code: 1006,
                        reason: "",
                    });
                }
                return None;
            }
            Some((accepted, leftover))
        }
        Err(response) => {
            write_response(socket, server, response).await;
            None
        }
    }
}

/// Read the request head: `None` when the client left; the refusal when it
/// is malformed or too large.
async fn read_head<S: Socket>(
    socket: &S,
    server: &ServerState,
) -> Option<Result<(switchboard_proto::http::RequestHead, Vec<u8>), Response>> {
    // The head's own buffer, grown as it arrives; dropped after the
    // handshake (a session reads into the thread's buffer).
    let mut buffer = Vec::with_capacity(HEAD_READ_BYTES);
    loop {
        socket.readable().await.ok()?;
        let len = buffer.len();
        buffer.resize(len + HEAD_READ_BYTES, 0);
        match socket.try_read(&mut buffer[len..]) {
            Ok(0) => return None,
            Ok(n) => buffer.truncate(len + n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                buffer.truncate(len);
                continue;
            }
            Err(_) => return None,
        }
        match handshake::parse_head(&buffer, &server.config) {
            Ok(Some((head, consumed))) => return Some(Ok((head, buffer.split_off(consumed)))),
            Ok(None) => continue,
            Err(response) => return Some(Err(response)),
        }
    }
}

/// Hand the request to JavaScript and wait for its decision.
async fn ask_upgrade_hook(
    server: &ServerState,
    id: u64,
    worker: usize,
    record: crate::events::Record<'_>,
) -> UpgradeDecision {
    let (sender, receiver) = oneshot::channel();
    server.pending_upgrades.lock().insert(id, (worker, sender));
    server.queues[worker].push(&record);
    drop(record);
    let decision = tokio::time::timeout(server.config.upgrade_timeout, receiver).await;
    server.pending_upgrades.lock().remove(&id);
    match decision {
        Ok(Ok(decision)) => decision,
        // The hook took too long, or its worker died.
        _ => UpgradeDecision::Reject {
            status: errors::UPGRADE_TIMEOUT.status,
            reason: errors::UPGRADE_TIMEOUT.reason(),
        },
    }
}

/// Write a response, then close.
pub(crate) async fn respond<S: Socket>(socket: &mut S, server: &ServerState, response: Response) {
    write_response(socket, server, response).await;
    let _ = socket.shutdown().await;
}

async fn write_response<S: Socket>(socket: &S, server: &ServerState, response: Response) {
    if response.rejected {
        stats::add(&server.stats.handshakes_rejected, 1);
    }
    let _ = tokio::time::timeout(RESPONSE_WRITE_TIMEOUT, write_all(socket, &response.bytes)).await;
}

pub(crate) async fn write_all<S: Socket>(socket: &S, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        socket.writable().await?;
        match socket.try_write_vectored(&[io::IoSlice::new(bytes)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

enum ReadOutcome {
    Progress,
    WouldBlock,
    Eof,
}

/// Run a session over its socket until it ends, then report its close.
async fn drive<S: Socket>(socket: S, mut session: Session, mut leftover: Vec<u8>) {
    let connection = session.connection().clone();
    let state = session.server().clone();
    let queue = state.queues[connection.worker].clone();
    if !leftover.is_empty() {
        session.on_bytes(&mut leftover, std::time::Instant::now());
    }
    drop(leftover);
    let mut paused = false;
    let mut items = VecDeque::new();
    // The futures that outlive one turn of the loop are made once and
    // polled again: re-creating them every turn registered and removed a
    // waiter (each under a lock) and a timer entry per message.
    let force = state.force.cancelled();
    let stopping = state.stopping.cancelled();
    let notified = connection.outbound.notified();
    let far = || Instant::now() + Duration::from_secs(3600);
    let timer = sleep_until(session.next_deadline().map_or_else(far, Instant::from_std));
    tokio::pin!(force, stopping, notified, timer);
    let mut shutdown_seen = false;
    let fallback = loop {
        // Take what other threads queued, then write as much as the socket
        // takes without waiting.
        let eviction = connection.outbound.take(&mut items);
        let now = std::time::Instant::now();
        if session.on_outbound(&mut items, eviction, now) == Step::End {
            break (1006, String::new());
        }
        if flush(&socket, &mut session).is_err() {
            break (1006, String::new());
        }
        if session.is_done() && !socket.has_buffered_output() {
            break linger(socket, &session).await;
        }
        let reading = session.wants_read() && !paused;
        let writing = session.wants_write() || socket.has_buffered_output();
        // Deadlines only move later as data arrives (idle, ping), so the
        // timer is re-armed only for an earlier one (a close started); one
        // that fires early finds nothing due and is re-armed.
        let deadline = session.next_deadline().map_or_else(far, Instant::from_std);
        if deadline < timer.deadline() {
            timer.as_mut().reset(deadline);
        }
        tokio::select! {
            _ = &mut force => {
                let outcome = session.on_force();
                session.finish(outcome);
                return;
            }
            // Polled until it fires once.
            _ = &mut stopping, if !shutdown_seen => {
                shutdown_seen = true;
                session.on_shutdown(std::time::Instant::now());
            }
            ready = socket.readable(), if reading => {
                if ready.is_err() {
                    if session.on_eof() == Step::End {
                        break (1006, String::new());
                    }
                    continue;
                }
                match read(&socket, &mut session) {
                    ReadOutcome::Progress => {
                        if queue.queued_bytes() >= state.config.max_worker_queue_bytes {
                            paused = true;
                        }
                    }
                    ReadOutcome::WouldBlock => {}
                    ReadOutcome::Eof => {
                        if session.on_eof() == Step::End {
                            break (1006, String::new());
                        }
                    }
                }
            }
            _ = queue.wait_for_room(), if paused => paused = false,
            _ = &mut notified => {
                notified.set(connection.outbound.notified());
            }
            _ = socket.writable(), if writing => {}
            _ = &mut timer => {
                let now = std::time::Instant::now();
                if session.on_deadline(now) == Step::End {
                    break linger(socket, &session).await;
                }
                let next = session.next_deadline().map_or_else(far, Instant::from_std);
                timer.as_mut().reset(next);
            }
        }
    };
    session.finish(fallback);
}

/// Write what the session queued, then what the socket itself still holds
/// (TLS records): those go out with an empty write.
fn flush<S: Socket>(socket: &S, session: &mut Session) -> io::Result<()> {
    session.flush(|slices| socket.try_write_vectored(slices))?;
    if !session.wants_write() && socket.has_buffered_output() {
        match socket.try_write_vectored(&[]) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn read<S: Socket>(socket: &S, session: &mut Session) -> ReadOutcome {
    READ_BUFFER.with(|cell| {
        let mut buffer = cell.borrow_mut();
        let capacity = buffer.len();
        let mut received = 0;
        // A read shorter than the buffer emptied the socket: report it as
        // "would block" to `try_io`, which then clears the readiness (only
        // if no newer readiness event arrived meanwhile), so the next turn
        // waits for data instead of spending a `recv` that would fail with
        // EAGAIN. That was one syscall in two at one message per read.
        let outcome = socket.try_io(Interest::READABLE, || {
            received = socket.try_read(&mut buffer[..])?;
            if received > 0 && received < capacity {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(())
        });
        match outcome {
            _ if received > 0 => {
                // TLS: the first plaintext comes after the handshake, whose
                // results the protocol's RPC_OPEN reports.
                if session.wants_tls_info() {
                    if let Some(info) = socket.tls_info() {
                        session.set_tls_info(info);
                    }
                }
                session.on_bytes(&mut buffer[..received], std::time::Instant::now());
                ReadOutcome::Progress
            }
            Ok(()) => ReadOutcome::Eof,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadOutcome::WouldBlock,
            Err(_) => ReadOutcome::Eof,
        }
    })
}

/// After our last frame: half-close and read until the peer closes too (or
/// `LINGER` passes), so unread input does not reset the connection and
/// destroy the close frame in flight. Returns the close event's fallback.
async fn linger<S: Socket>(mut socket: S, session: &Session) -> (u16, String) {
    let _ = socket.shutdown().await;
    if session.needs_linger() {
        // Discard into the thread's read buffer (no buffer in the task).
        let _ = tokio::time::timeout(LINGER, async {
            while socket.readable().await.is_ok() {
                let read = READ_BUFFER.with(|cell| socket.try_read(&mut cell.borrow_mut()[..]));
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
    (1006, String::new())
}
