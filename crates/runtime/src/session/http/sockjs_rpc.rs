//! A send (`xhr_send`, `jsonp_send`) to a SockJS session that carries the
//! Switchboard protocol (`ConnectionKind::RpcSockJsHttp`): each message is
//! the base64 of whole protocol frames (docs/protocol.md, "Over SockJS").
//! They are decoded here and fed to the session's protocol reader
//! (`sockjs/rpc.rs`), which does natively what a socket's protocol session
//! does (`session/rpc.rs`): the preface and HELLO are answered with our
//! WELCOME and the worker hears `RPC_OPEN`; heartbeats are answered
//! without waking a worker; every frame is checked; the rest reach the
//! worker as binary `MESSAGE` records, as the frames of a WebSocket
//! message do. A violation queues a GO_AWAY and the session's close
//! (`c[1002,"ERR_..."]`) for its receiver.

use switchboard_proto::rpc::{self, ProtocolError, MAX_HANDSHAKE_SIZE, PREFACE};
use switchboard_proto::sockjs::{carried_len, decode_carried, Messages};

use crate::errors;
use crate::events::{Record, TlsRecord, Transport};
use crate::framing;
use crate::outbound::OutItem;
use crate::rpc_reader::{RpcEvent, MAX_BATCH_BYTES, MAX_HEADER_BYTES};
use crate::session::rpc::random_seed;
use crate::sockjs::{RpcCarriage, SockJsSession};
use crate::state::ServerState;
use crate::stats;

/// The least body an `xhr_send` to a protocol session may have, whatever
/// `maxPayloadLength` says: clients batch messages into one send up to this
/// (docs/protocol.md, "Over SockJS").
pub(super) const MIN_SEND_BODY: usize = 256 * 1024 + 4;

/// Scratch bytes kept between sends, at most: a large message's buffer is
/// given back instead of being held by an idle session.
const KEEP_SCRATCH: usize = 64 * 1024;

/// Why a send's messages were not all delivered.
pub(super) enum Refusal {
    /// A message was not base64: the send gets `500`, the session closes.
    BrokenBase64,
}

/// The largest send body a protocol session of `route` takes: the route's
/// `maxPayloadLength`, but never less than one maximal frame (or batch, or
/// preface and handshake) in base64 in a JSON array, nor [`MIN_SEND_BODY`]:
/// the same floor as for the protocol's WebSocket messages (§2).
pub(super) fn send_body_limit(server: &ServerState, route: usize) -> usize {
    let max_frame_size = server.config.rpc.settings.max_frame_size as usize;
    let largest_message = (max_frame_size + MAX_HEADER_BYTES)
        .max(MAX_BATCH_BYTES)
        .max(PREFACE.len() + MAX_HEADER_BYTES + MAX_HANDSHAKE_SIZE);
    // `["<base64>"]`
    let body = carried_len(largest_message) + 4;
    server.config.routes[route]
        .max_payload_length
        .max(body)
        .max(MIN_SEND_BODY)
}

/// Feed a send's messages to the session's protocol reader, in order.
/// A session that is not open, or that broke the protocol already, takes
/// nothing (sockjs-node drops sends to closed sessions too).
pub(super) fn feed(
    server: &ServerState,
    session: &SockJsSession,
    messages: Messages<'_>,
) -> Result<(), Refusal> {
    let Some(rpc) = &session.rpc else {
        return Ok(());
    };
    let mut carriage = rpc.lock();
    if carriage.failed || !session.is_open() {
        return Ok(());
    }
    let mut bytes = std::mem::take(&mut carriage.scratch);
    let mut outcome = Ok(());
    for message in messages {
        bytes.clear();
        if decode_carried(&message, &mut bytes).is_err() {
            let failure = errors::SOCKJS_BROKEN_BASE64;
            fail(
                server,
                session,
                &mut carriage,
                failure.code,
                failure.status,
                &failure.reason(),
            );
            outcome = Err(Refusal::BrokenBase64);
            break;
        }
        let fed = feed_message(server, session, &mut carriage, &bytes).and_then(|()| {
            // A message holds whole frames (§2, as a WebSocket message does).
            match carriage.reader.at_boundary() {
                true => Ok(()),
                false => Err(ProtocolError::Malformed(
                    "a SockJS message ended inside a frame",
                )),
            }
        });
        if let Err(error) = fed {
            let (code, status) = (error.code(), error.ws_close_code());
            fail(
                server,
                session,
                &mut carriage,
                code,
                status,
                &error.to_string(),
            );
            break;
        }
    }
    bytes.clear();
    if bytes.capacity() <= KEEP_SCRATCH {
        carriage.scratch = bytes;
    }
    outcome
}

/// One message's frames through the reader.
fn feed_message(
    server: &ServerState,
    session: &SockJsSession,
    carriage: &mut RpcCarriage,
    bytes: &[u8],
) -> Result<(), ProtocolError> {
    let connection = &session.connection;
    let worker = connection.worker();
    let queue = &server.queues[worker];
    let RpcCarriage {
        reader,
        opening,
        hello_deadline,
        welcomed,
        last_call_id,
        ..
    } = carriage;
    let count_in = || {
        stats::add(&server.stats.messages_in, 1);
        stats::add(&server.worker_stats[worker].messages_in, 1);
    };
    reader.feed(bytes, &mut |event| {
        match event {
            RpcEvent::Hello { hello, raw } => {
                let welcome =
                    rpc::accept_hello(&hello, &server.config.rpc.settings, random_seed())?;
                let mut reply = Vec::with_capacity(64);
                reply.extend_from_slice(PREFACE);
                rpc::encode(&welcome.frame(), &mut reply);
                connection.enqueue_frame(&framing::sockjs_carried(&reply));
                *welcomed = true;
                *hello_deadline = None;
                let opening = opening.take();
                queue.push(&Record::RpcOpen {
                    id: connection.id,
                    route: session.route as u16,
                    transport: Transport::SockJs,
                    remote: opening.as_ref().map_or("", |o| o.remote.as_str()),
                    tls: opening
                        .as_ref()
                        .and_then(|o| o.tls.as_ref())
                        .map(TlsRecord::from),
                    hello: raw,
                    welcome: &reply[PREFACE.len()..],
                });
            }
            RpcEvent::Frame {
                raw,
                last_call_id: last,
            } => {
                *last_call_id = last;
                count_in();
                queue.push(&Record::Message {
                    id: connection.id,
                    binary: true,
                    payload: raw,
                });
            }
            // (Only a frame cut across feeds is reassembled, and a message
            // holds whole frames: kept for completeness.)
            RpcEvent::Owned {
                frame,
                last_call_id: last,
            } => {
                *last_call_id = last;
                count_in();
                queue.push(&Record::Message {
                    id: connection.id,
                    binary: true,
                    payload: &frame,
                });
            }
            RpcEvent::Ping => {
                let mut pong = Vec::with_capacity(3);
                rpc::encode_heartbeat(true, &mut pong);
                connection.enqueue_frame(&framing::sockjs_carried(&pong));
            }
        }
        Ok(())
    })
}

/// The client broke the protocol: a GO_AWAY saying why, then the
/// session's close (`c[status,"code"]`), both for its receiver; what it
/// sends from now on is dropped.
fn fail(
    server: &ServerState,
    session: &SockJsSession,
    carriage: &mut RpcCarriage,
    code: &str,
    status: u16,
    message: &str,
) {
    stats::add(&server.stats.protocol_errors, 1);
    carriage.failed = true;
    carriage.hello_deadline = None;
    let connection = &session.connection;
    if let Some(go_away) = carriage.go_away(code, message) {
        connection.enqueue_frame(&go_away);
    }
    connection.enqueue(
        OutItem::Close {
            code: status,
            reason: code.to_owned(),
            go_away: false,
        },
        0,
    );
}
