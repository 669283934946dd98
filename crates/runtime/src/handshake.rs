//! The HTTP/1.1 phase of a connection on an HTTP listener, as decisions
//! apart from the socket: a first request that asks for a WebSocket either
//! gets a response (a rejection with its status) or becomes an upgrade,
//! possibly after the route's `upgrade` hook agrees; any other request
//! starts an HTTP session (`session/http.rs`). The reactor reads the head
//! and writes what is decided (`reactor/entry.rs`).

use switchboard_proto::http::{
    accept_key, error_response, parse_request_head, switching_protocols_response, validate_upgrade,
    HandshakeError, HeadLimits, RequestHead,
};
use switchboard_proto::http1;
use switchboard_proto::sockjs;
use switchboard_proto::ws::deflate::{self, DeflateParams};

use crate::config::{RouteConfig, ServerConfig};
use crate::connection::ConnectionKind;
use crate::errors::{self, Failure};
use crate::events::{Record, TlsRecord, Transport};
use crate::opening::Accepted;
use crate::state::UpgradeDecision;
use crate::tls::TlsInfo;

/// A complete HTTP response to write before closing.
pub(crate) struct Response {
    pub bytes: Vec<u8>,
    /// A refusal (counted in `handshakesRejected`), not a served page.
    pub rejected: bool,
}

impl Response {
    pub(crate) fn failure(failure: Failure, headers: &[(&str, &str)]) -> Self {
        Self {
            bytes: error_response(failure.status, &failure.reason(), headers),
            rejected: true,
        }
    }

    /// A request the strict parser refused: its status, then close.
    pub(crate) fn http_error(error: http1::HttpError) -> Self {
        let reason = format!("{}: {}", error.code(), error);
        Self {
            bytes: error_response(error.status(), &reason, &[]),
            rejected: true,
        }
    }

    fn handshake_error(error: HandshakeError) -> Self {
        let reason = format!("{}: {}", error.code(), error);
        Self {
            bytes: error_response(error.status(), &reason, error.extra_headers()),
            rejected: true,
        }
    }

    /// A refusal with a status and reason of the `upgrade` hook's choosing.
    pub(crate) fn rejection(status: u16, reason: &str) -> Self {
        Self {
            bytes: error_response(status, reason, &[]),
            rejected: true,
        }
    }
}

/// Read a request head from the start of `buffer`: `Ok(None)` while it is
/// incomplete; the head and the bytes it took once complete; the response
/// that refuses it when it is malformed or too large.
pub(crate) fn parse_head(
    buffer: &[u8],
    config: &ServerConfig,
) -> Result<Option<(RequestHead, usize)>, Response> {
    let limits = HeadLimits {
        max_head_bytes: config.max_head_bytes,
        max_headers: config.max_headers,
    };
    parse_request_head(buffer, &limits).map_err(Response::handshake_error)
}

/// The limits of every request head, from the server's options.
pub(crate) fn head_limits(config: &ServerConfig) -> http1::Limits {
    http1::Limits {
        max_head_bytes: config.max_head_bytes,
        max_headers: config.max_headers,
        max_url_bytes: config.http.max_url_bytes,
    }
}

/// Whether a request asks for a WebSocket: anything else (no `Upgrade`, or
/// one for another protocol, which a server may ignore: RFC 9110 §7.8) is
/// a plain HTTP request for the HTTP session (`session/http.rs`).
pub(crate) fn wants_websocket(head: &http1::RequestHead<'_, '_>) -> bool {
    head.upgrade
        && head.headers().any(|(name, value)| {
            name.eq_ignore_ascii_case("upgrade")
                && value
                    .split(|&b| b == b',')
                    .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"websocket"))
        })
}

/// What to do with a request.
pub(crate) enum Decision {
    Respond(Response),
    Upgrade(Box<Upgrade>),
}

/// A valid upgrade request for a route, waiting to be accepted.
pub(crate) struct Upgrade {
    pub route: usize,
    /// Whether the route's `upgrade` hook decides first.
    pub ask_hook: bool,
    head: RequestHead,
    key: String,
    protocol: String,
    extensions: String,
    deflate: Option<DeflateParams>,
    rpc: bool,
    /// A SockJS session's WebSocket (`<prefix>/<server>/<session>/websocket`).
    sockjs: bool,
}

/// Decide what a request gets.
pub(crate) fn decide(head: RequestHead, config: &ServerConfig) -> Decision {
    let Some((route_index, route)) = config
        .routes
        .iter()
        .enumerate()
        .find(|(_, r)| r.matches(&head.path))
    else {
        return Decision::Respond(Response::failure(errors::WS_NO_ROUTE, &[]));
    };
    // A SockJS service's WebSocket endpoints: a session, or the raw
    // WebSocket (a plain one); every other path under it is no WebSocket.
    // A service that carries the Switchboard protocol has no session
    // WebSocket (SockJS would carry its bytes as base64 text, where the
    // protocol's own WebSocket carries them as they are), and its raw
    // WebSocket is the protocol's: the subprotocol is required.
    let sockjs_session = match &route.sockjs {
        None => false,
        Some(sockjs) => {
            let path = sockjs::strip_prefix(&head.path, &sockjs.prefix);
            match path.and_then(sockjs::Route::parse) {
                Some(sockjs::Route::RawWebSocket)
                    if sockjs.websocket && (!route.rpc || offers_rpc(&head)) =>
                {
                    false
                }
                Some(sockjs::Route::Session {
                    transport: sockjs::Transport::WebSocket,
                    ..
                }) if sockjs.websocket && !route.rpc => true,
                _ => return Decision::Respond(Response::failure(errors::WS_NO_ROUTE, &[])),
            }
        }
    };
    if route.sockjs.is_some() && head.method != "GET" {
        // The protocol's 405: `Allow`, no body (`verify405`).
        return Decision::Respond(Response {
            bytes: b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            rejected: true,
        });
    }
    let request = match validate_upgrade(&head) {
        Ok(request) => request,
        Err(error) => return Decision::Respond(Response::handshake_error(error)),
    };
    if !origin_allowed(route, request.origin.as_deref()) {
        return Decision::Respond(Response::failure(errors::WS_ORIGIN_REJECTED, &[]));
    }
    let protocol = choose_protocol(route, &request.protocols).unwrap_or_default();
    let (deflate, extensions) = match &route.compression {
        // A SockJS session frames its own messages, uncompressed.
        Some(_) if sockjs_session => (None, String::new()),
        Some(config) => {
            let offers: Vec<&str> = request.extensions.iter().map(String::as_str).collect();
            match deflate::negotiate(&offers, config) {
                Ok(Some((params, response))) => (Some(params), response),
                Ok(None) => (None, String::new()),
                Err(_) => {
                    let error = HandshakeError::BadExtensions;
                    return Decision::Respond(Response::handshake_error(error));
                }
            }
        }
        None => (None, String::new()),
    };
    Decision::Upgrade(Box::new(Upgrade {
        route: route_index,
        ask_hook: route.has_upgrade_hook,
        key: request.key,
        protocol,
        extensions,
        deflate,
        rpc: route.rpc,
        sockjs: sockjs_session,
        head,
    }))
}

impl Upgrade {
    /// The `UPGRADE` event that asks the route's hook.
    pub(crate) fn hook_record<'a>(
        &'a self,
        id: u64,
        remote: &'a str,
        tls: Option<&'a TlsInfo>,
    ) -> Record<'a> {
        Record::Upgrade {
            id,
            route: self.route as u16,
            remote,
            path: &self.head.path,
            query: self.head.query.as_deref().unwrap_or(""),
            tls: tls.map(TlsRecord::from),
            headers: self
                .head
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect(),
        }
    }

    /// Apply the hook's decision: the `101` and what the session starts
    /// with, or the refusal.
    pub(crate) fn accept(
        mut self,
        decision: UpgradeDecision,
        id: u64,
        worker: usize,
        remote: String,
        tls: Option<TlsInfo>,
    ) -> Result<(Vec<u8>, Accepted), Response> {
        match decision {
            UpgradeDecision::Accept { protocol: chosen } => {
                if let Some(chosen) = chosen {
                    self.protocol = chosen;
                }
            }
            UpgradeDecision::Reject { status, reason } => {
                return Err(Response::rejection(status, &reason));
            }
        }
        let response = switching_protocols_response(
            &accept_key(&self.key),
            (!self.protocol.is_empty()).then_some(self.protocol.as_str()),
            (!self.extensions.is_empty()).then_some(self.extensions.as_str()),
        );
        let kind = if self.sockjs {
            ConnectionKind::SockJsWebSocket
        } else if self.rpc && self.protocol == switchboard_proto::rpc::SUBPROTOCOL {
            ConnectionKind::RpcWebSocket
        } else if self.deflate.is_some() {
            ConnectionKind::WebSocketDeflate
        } else {
            ConnectionKind::WebSocket
        };
        Ok((
            response,
            Accepted {
                id,
                worker,
                kind,
                route: Some(self.route),
                transport: Transport::WebSocket,
                remote,
                protocol: self.protocol,
                extensions: self.extensions,
                deflate: self.deflate,
                tls,
            },
        ))
    }
}

/// Whether the request offers the Switchboard protocol's subprotocol.
fn offers_rpc(head: &RequestHead) -> bool {
    head.headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("sec-websocket-protocol"))
        .flat_map(|(_, value)| value.split(','))
        .any(|offered| offered.trim() == switchboard_proto::rpc::SUBPROTOCOL)
}

fn origin_allowed(route: &RouteConfig, origin: Option<&str>) -> bool {
    route.allowed_origins.is_empty()
        || origin.is_some_and(|o| route.allowed_origins.iter().any(|a| a == o))
}

/// The first protocol in the client's list that the route speaks.
fn choose_protocol(route: &RouteConfig, offered: &[String]) -> Option<String> {
    offered
        .iter()
        .find(|p| route.protocols.iter().any(|ours| ours == *p))
        .cloned()
}
