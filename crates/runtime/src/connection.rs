//! What every thread can reach of an open connection: its id, its worker,
//! its kind, and its outbound queue; and the cork, which defers the writes
//! a thread's sends cause until it uncorks. The connection's own thread
//! keeps the rest (its session, `session/`); other threads only enqueue
//! here.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use bytes::Bytes;

use crate::outbound::{OutItem, Outbound, SendStatus};
use crate::stats::Stats;

/// How a connection frames what it is sent: one variant per framing, so a
/// publish can keep one lazily framed copy per kind (`channels.rs`), and a
/// new kind of connection is one more variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectionKind {
    /// WebSocket messages for the route's handlers.
    WebSocket,
    /// The same, compressed with permessage-deflate: the connection frames
    /// its own messages with its own compression context.
    WebSocketDeflate,
    /// The Switchboard protocol on a byte stream (TCP, Unix, TLS): what
    /// JavaScript sends is already protocol frames and goes out as is.
    RpcStream,
    /// The Switchboard protocol in WebSocket binary messages (subprotocol
    /// `switchboard.v1`).
    RpcWebSocket,
    /// HTTP/1.1 requests and responses (`http/`): what JavaScript sends is
    /// responses, framed by `http::respond`; it is never a recipient of a
    /// message or a publish.
    Http,
    /// A SockJS session on the WebSocket transport
    /// (`<prefix>/<server>/<session>/websocket`): each message goes out as
    /// a SockJS frame (`a["..."]`) in a WebSocket text message, and the
    /// client's text messages are JSON arrays of messages
    /// (`switchboard_proto::sockjs`).
    SockJsWebSocket,
    /// A SockJS session on the HTTP transports (xhr, xhr_streaming,
    /// eventsource, htmlfile, jsonp; `sockjs/`): it has no socket of its
    /// own. Each item queued is one encoded frame (`a["..."]`, the same
    /// bytes the WebSocket transport sends inside its WebSocket header),
    /// which the session's receiver of the moment wraps for its transport.
    SockJsHttp,
    /// The Switchboard protocol carried by a SockJS session on the HTTP
    /// transports (`app.sockjs(prefix, { rpc: true })`): like `SockJsHttp`
    /// without a socket, but each message is base64 of whole protocol
    /// frames (`a["<base64>"]`, `switchboard_proto::sockjs::carriage`).
    /// What JavaScript sends is protocol frames, as for `RpcStream`.
    RpcSockJsHttp,
}

impl ConnectionKind {
    /// Whether it speaks the Switchboard protocol.
    pub fn is_rpc(self) -> bool {
        matches!(
            self,
            Self::RpcStream | Self::RpcWebSocket | Self::RpcSockJsHttp
        )
    }

    /// Whether its bytes are WebSocket frames.
    pub fn is_websocket(self) -> bool {
        !matches!(
            self,
            Self::RpcStream | Self::Http | Self::SockJsHttp | Self::RpcSockJsHttp
        )
    }

    /// Whether it is a SockJS session on the HTTP transports, without a
    /// socket: each item queued is one encoded SockJS frame.
    pub fn is_sockjs_http(self) -> bool {
        matches!(self, Self::SockJsHttp | Self::RpcSockJsHttp)
    }
}

/// Messages from this size on, sent to one connection, are written
/// straight from the caller's bytes when the socket is free for it (see
/// `Outbound::send_direct`), instead of being copied into the queue.
const SEND_DIRECT_FROM: usize = 16 * 1024;

/// Published frames up to this size are copied into each recipient's queue
/// rather than shared: below it a copy costs less than the shared buffer's
/// reference counting and a slice of its own in every vectored write.
const COPY_FRAMES_UP_TO: usize = 512;

pub struct Connection {
    pub id: u64,
    /// 32 bits (there are never that many workers), so the shared part of
    /// an idle connection stays within two cache lines: see `worker()`.
    pub(crate) worker: u32,
    pub kind: ConnectionKind,
    pub outbound: Outbound,
    /// The server's counters (a direct write counts its bytes).
    pub stats: Arc<Stats>,
}

impl Connection {
    /// The worker this connection is pinned to.
    pub fn worker(&self) -> usize {
        self.worker as usize
    }

    /// Queue an item; the connection's thread is woken now, or at
    /// [`cork::uncork`] when the calling thread is corked.
    pub fn enqueue(self: &Arc<Self>, item: OutItem, len: usize) -> SendStatus {
        let (status, wake) = self.outbound.push(item, len);
        self.woken(wake);
        status
    }

    /// Queue a frame shared with other recipients: small ones are copied
    /// into the connection's coalescing buffer, larger ones shared.
    pub fn enqueue_frame(self: &Arc<Self>, framed: &Bytes) -> SendStatus {
        // A SockJS session's receiver takes its frames one by one (a poll
        // answers the messages queued so far as one frame): never copied
        // into a run of bytes.
        let (status, wake) = if framed.len() <= COPY_FRAMES_UP_TO && !self.kind.is_sockjs_http() {
            self.outbound.push_frame_copy(framed)
        } else {
            self.outbound
                .push(OutItem::Frame(framed.clone()), framed.len())
        };
        self.woken(wake);
        status
    }

    /// Queue a message for this connection alone, framed for its kind.
    pub fn send_message(self: &Arc<Self>, payload: &[u8], binary: bool) -> SendStatus {
        if payload.len() >= SEND_DIRECT_FROM {
            if let Some(status) = self.send_large(payload, binary) {
                return status;
            }
        }
        let (status, wake) = match self.kind {
            ConnectionKind::WebSocket | ConnectionKind::RpcWebSocket => {
                self.outbound.push_message(payload, binary)
            }
            // Framed here (quoted into `a["..."]`), then queued as a
            // publish's frame is: copied when small, shared when not.
            ConnectionKind::SockJsWebSocket => {
                return match crate::framing::sockjs_message(&[], payload, binary) {
                    Some(frame) => self.enqueue_frame(&frame),
                    None => SendStatus::Dropped,
                };
            }
            ConnectionKind::SockJsHttp => {
                return match crate::framing::sockjs_message(&[], payload, binary) {
                    Some(frame) => self.enqueue_frame(&crate::framing::websocket_payload(&frame)),
                    None => SendStatus::Dropped,
                };
            }
            // Protocol frames from the worker's peer, in base64 in one
            // SockJS message (they are binary: a text send is no frame).
            ConnectionKind::RpcSockJsHttp => {
                if !binary {
                    return SendStatus::Dropped;
                }
                return self.enqueue_frame(&crate::framing::sockjs_carried(payload));
            }
            ConnectionKind::WebSocketDeflate => {
                return self.enqueue_to_compress(Bytes::copy_from_slice(payload), binary);
            }
            // Protocol frames, already framed by the worker's peer.
            ConnectionKind::RpcStream => self.outbound.push_frame_copy(payload),
            // Responses go through `http::respond`, never as messages.
            ConnectionKind::Http => return SendStatus::Closed,
        };
        self.woken(wake);
        status
    }

    /// A large message written from the caller's bytes, without a copy,
    /// when the I/O thread has released the socket; `None` otherwise.
    fn send_large(self: &Arc<Self>, payload: &[u8], binary: bool) -> Option<SendStatus> {
        let mut header = [0u8; 14];
        let head = match self.kind {
            ConnectionKind::WebSocket | ConnectionKind::RpcWebSocket => {
                let len = crate::framing::message_header(payload.len(), binary, &mut header);
                &header[..len]
            }
            // Protocol frames, already framed by the worker's peer.
            ConnectionKind::RpcStream => &header[..0],
            // Framed from a copy: the message is quoted into the frame.
            ConnectionKind::WebSocketDeflate
            | ConnectionKind::SockJsWebSocket
            | ConnectionKind::SockJsHttp
            | ConnectionKind::RpcSockJsHttp => return None,
            ConnectionKind::Http => return Some(SendStatus::Closed),
        };
        let (status, wake) = self.outbound.send_direct(head, payload, &self.stats)?;
        self.woken(wake);
        Some(status)
    }

    /// Queue a payload for a compressing connection, which compresses and
    /// frames it itself with its own deflate context.
    pub fn enqueue_to_compress(self: &Arc<Self>, payload: Bytes, binary: bool) -> SendStatus {
        let len = payload.len();
        self.enqueue(OutItem::Message { payload, binary }, len)
    }

    /// After a batch of sends: write them straight to the socket when its
    /// I/O thread has released it, else wake that thread.
    pub fn flush_or_wake(&self) {
        if !self.outbound.write_direct(&self.stats) {
            self.outbound.wake();
        }
    }

    /// Wake the connection's thread now, or at the outermost `uncork`.
    pub(crate) fn woken(self: &Arc<Self>, wake: bool) {
        if wake && !defer(self) {
            self.outbound.wake();
        }
    }
}

// Corking: a thread defers the writes (or wake-ups) of the connections it
// sends to until it uncorks. A JavaScript worker corks while it dispatches
// a batch of events, so every message its handlers send to one connection
// in that batch leaves in one vectored write instead of one write (and one
// wake-up) each.

thread_local! {
    /// How deeply the calling thread is corked.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Connections whose wake-up waits for the outermost [`uncork`].
    static CORKED: RefCell<Vec<Arc<Connection>>> = const { RefCell::new(Vec::new()) };
}

/// Defer wake-ups on this thread until [`uncork`]. Nests; only the
/// outermost `uncork` wakes.
pub fn cork() {
    let outermost = DEPTH.with(|depth| {
        depth.set(depth.get() + 1);
        depth.get() == 1
    });
    if outermost {
        crate::http::date::batch_began();
    }
}

/// Whether the calling thread is corked (inside a batch).
pub(crate) fn is_corked() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// End a [`cork`]; the outermost one sends what was queued for every
/// connection sent to since: written straight to its socket where its I/O
/// thread has released it (the common case: a worker answering the
/// messages it was given), else by that thread, woken now.
pub fn uncork() {
    let outermost = DEPTH.with(|depth| {
        let d = depth.get().saturating_sub(1);
        depth.set(d);
        d == 0
    });
    if outermost {
        let corked = CORKED.with(|list| std::mem::take(&mut *list.borrow_mut()));
        for connection in corked {
            connection.flush_or_wake();
        }
    }
}

/// When this thread is corked, remember `connection` for the outermost
/// `uncork` and return true; otherwise return false (wake it now).
fn defer(connection: &Arc<Connection>) -> bool {
    if DEPTH.with(Cell::get) == 0 {
        return false;
    }
    CORKED.with(|list| list.borrow_mut().push(connection.clone()));
    true
}
