//! How a session starts: its connection's outbound queue (limits and
//! policy by kind), its registration, the worker's opening event, and the
//! reader of its kind.

use std::sync::Arc;
use std::time::Instant;

use switchboard_proto::rpc::{MAX_HANDSHAKE_SIZE, PREFACE};
use switchboard_proto::sockjs;
use switchboard_proto::ws::deflate::{Compressor, Decompressor};
use switchboard_proto::ws::{Decoder, DecoderConfig, Role};

use super::http::HttpReader;
use super::timers::Liveness;
use super::writes::WriteQueue;
use super::{Machine, Opening, Phase, Reader, Session};
use crate::config::SlowConsumerPolicy;
use crate::connection::{Connection, ConnectionKind};
use crate::events::{Record, TlsRecord, Transport, NO_ROUTE};
use crate::framing;
use crate::opening::Accepted;
use crate::outbound::{rpc_high_water, Outbound};
use crate::rpc_reader::{RpcReader, MAX_BATCH_BYTES, MAX_HEADER_BYTES};
use crate::state::ServerState;
use crate::wake::WakeTarget;

impl Session {
    /// Open the session: the connection becomes reachable by other threads,
    /// and a WebSocket's worker hears `OPEN` (a protocol connection's hears
    /// `RPC_OPEN` once its HELLO is accepted).
    pub(crate) fn start(
        accepted: Accepted,
        server: Arc<ServerState>,
        waker: WakeTarget,
        now: Instant,
    ) -> Self {
        let config = &server.config;
        let route = accepted.route.map(|i| &config.routes[i]);
        let rpc = &config.rpc;
        let kind = accepted.kind;
        let (max_backpressure, slow_consumer) = match route {
            // A response cannot be dropped: past the limit the connection
            // closes; streamed bodies pause at the high-water mark.
            _ if kind == ConnectionKind::Http => {
                (config.http.max_backpressure, SlowConsumerPolicy::Close)
            }
            Some(route) if !kind.is_rpc() => (route.max_backpressure, route.slow_consumer),
            // A protocol connection never drops a frame (see `RpcConfig`),
            // and the protocol's own limit applies: the client's credit
            // lets us queue a whole window, which may pass the route's.
            Some(route) => (
                route.max_backpressure.max(rpc.max_backpressure),
                SlowConsumerPolicy::Close,
            ),
            None => (rpc.max_backpressure, SlowConsumerPolicy::Close),
        };
        let outbound = Outbound::new(max_backpressure, slow_consumer, waker);
        let outbound = if kind.is_rpc() || kind == ConnectionKind::Http {
            // The worker's peer pauses stream data at `Buffered` and
            // resumes at `drain` (ARCHITECTURE.md, "Backpressure").
            outbound.with_high_water(rpc_high_water(max_backpressure))
        } else {
            outbound
        };
        let connection = Arc::new(Connection {
            id: accepted.id,
            worker: accepted.worker as u32,
            kind,
            outbound,
            stats: server.stats.clone(),
        });
        server.register(&connection);
        let queue = &server.queues[accepted.worker];
        let route_index = accepted.route.map(|i| i as u16);
        if kind.is_websocket() && !kind.is_rpc() {
            queue.push(&Record::Open {
                id: accepted.id,
                route: route_index.unwrap_or(NO_ROUTE),
                remote: &accepted.remote,
                protocol: &accepted.protocol,
                extensions: &accepted.extensions,
                tls: accepted.tls.as_ref().map(TlsRecord::from),
            });
        }
        let max_frame_size = rpc.settings.max_frame_size as usize;
        let websocket_decoder = |max_payload_length: usize| {
            let route = route.expect("a WebSocket session always has a route");
            let mut decoder = Decoder::new(DecoderConfig {
                max_payload_length,
                max_fragments: route.max_fragments,
                role: Role::Server,
            });
            if let Some(params) = &accepted.deflate {
                decoder.set_decompressor(Decompressor::new(params, Role::Server));
            }
            decoder
        };
        let reader = match kind {
            ConnectionKind::WebSocket
            | ConnectionKind::WebSocketDeflate
            | ConnectionKind::SockJsWebSocket => {
                Reader::WebSocket(websocket_decoder(route.map_or(0, |r| r.max_payload_length)))
            }
            // A protocol client may send any frame our WELCOME allows, and a
            // message holds whole frames, the first one its preface and a
            // HELLO of up to the handshake limit (docs/protocol.md §2).
            ConnectionKind::RpcWebSocket => Reader::RpcWebSocket(Box::new((
                websocket_decoder(
                    route
                        .map_or(0, |r| r.max_payload_length)
                        .max(max_frame_size + MAX_HEADER_BYTES)
                        .max(MAX_BATCH_BYTES)
                        .max(PREFACE.len() + MAX_HEADER_BYTES + MAX_HANDSHAKE_SIZE),
                ),
                RpcReader::new(max_frame_size),
            ))),
            ConnectionKind::RpcStream => {
                Reader::RpcStream(Box::new(RpcReader::new(max_frame_size)))
            }
            ConnectionKind::SockJsHttp | ConnectionKind::RpcSockJsHttp => {
                unreachable!("a SockJS session over HTTP lives in `sockjs/`, not on a socket")
            }
            ConnectionKind::Http => Reader::Http(Box::new(HttpReader::new(
                config,
                accepted.remote.clone(),
                accepted.tls.clone(),
                now,
            ))),
        };
        let phase = if kind.is_rpc() {
            Phase::Handshake {
                deadline: now + config.handshake_timeout,
            }
        } else {
            Phase::Open
        };
        let opening = kind.is_rpc().then(|| {
            Box::new(Opening {
                route: route_index.unwrap_or(NO_ROUTE),
                transport: accepted.transport,
                tls_pending: accepted.transport == Transport::Tls && accepted.tls.is_none(),
                remote: accepted.remote,
                tls: accepted.tls,
            })
        });
        let mut session = Self {
            reader,
            machine: Machine {
                compressor: accepted
                    .deflate
                    .as_ref()
                    .map(|params| Box::new(Compressor::new(params, Role::Server))),
                connection,
                phase,
                route: route_index,
                writes: WriteQueue::default(),
                liveness: Liveness::new(now),
                outcome: None,
                peer_last_call_id: 0,
                opening,
                server,
            },
        };
        if kind == ConnectionKind::SockJsWebSocket {
            // A SockJS session begins with its open frame (after the 101).
            let open = framing::sockjs_frame(|out| sockjs::Framing::WebSocket.write_open(out));
            session.machine.push_frame(open);
        }
        session
    }
}
