//! One connection from accept to close. On an HTTP listener: the HTTP/1.1
//! request head, the WebSocket upgrade (with JavaScript's `upgrade` hook
//! when the route has one), then the session (`session.rs`). On a protocol
//! listener: the session at once, which reads the preface and HELLO
//! (`wire.rs`).

mod session;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use switchboard_proto::http::{
    accept_key, error_response, parse_request_head, switching_protocols_response, validate_upgrade,
    HeadLimits, RequestHead,
};
use switchboard_proto::ws::deflate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::config::RouteConfig;
use crate::events::{body, KIND_CLOSE, KIND_UPGRADE};
use crate::server::{Shared, UpgradeDecision};
use crate::socket::Socket;
use crate::stats;
pub(crate) use session::{transport, Dialect};

/// What the session needs from the handshake.
pub(crate) struct Accepted {
    pub id: u64,
    pub worker: usize,
    /// The WebSocket route; none for a protocol listener.
    pub route_index: Option<usize>,
    pub dialect: Dialect,
    /// See [`session::transport`].
    pub transport: u8,
    pub remote: String,
    pub protocol: String,
    pub extensions: String,
    pub deflate: Option<deflate::DeflateParams>,
    /// Bytes the client sent after its request head (early frames).
    pub leftover: Vec<u8>,
}

pub async fn run(mut stream: TcpStream, remote: SocketAddr, shared: Arc<Shared>) {
    let timeout = shared.config.handshake_timeout;
    let outcome = tokio::select! {
        _ = shared.stopping.cancelled() => return,
        outcome = tokio::time::timeout(timeout, handshake(&mut stream, remote, &shared)) => outcome,
    };
    let accepted = match outcome {
        Ok(Some(accepted)) => accepted,
        Ok(None) => return,
        Err(_elapsed) => {
            reject(
                &mut stream,
                &shared,
                408,
                "ERR_HTTP_REQUEST_TIMEOUT: request head took too long",
                &[],
            )
            .await;
            return;
        }
    };
    session::run(stream, accepted, shared).await;
}

/// A connection on a protocol listener: no HTTP, the session reads the
/// preface and HELLO itself (its handshake deadline is the server's
/// `handshake_timeout`).
pub(crate) async fn run_wire<S: Socket>(
    stream: S,
    remote: String,
    shared: Arc<Shared>,
    transport: u8,
) {
    let accepted = Accepted {
        id: shared.next_id(),
        worker: shared.pick_worker(),
        route_index: None,
        dialect: Dialect::Wire,
        transport,
        remote,
        protocol: String::new(),
        extensions: String::new(),
        deflate: None,
        leftover: Vec::new(),
    };
    session::run(stream, accepted, shared).await;
}

async fn reject(
    stream: &mut TcpStream,
    shared: &Shared,
    status: u16,
    reason: &str,
    headers: &[(&str, &str)],
) {
    stats::add(&shared.stats.handshakes_rejected, 1);
    let response = error_response(status, reason, headers);
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&response)).await;
    let _ = AsyncWriteExt::shutdown(stream).await;
}

/// Read the request head; `None` when the connection is done (rejected,
/// answered, or gone).
async fn read_head(stream: &mut TcpStream, shared: &Shared) -> Option<(RequestHead, Vec<u8>)> {
    let limits = HeadLimits {
        max_head_bytes: shared.config.max_head_bytes,
        max_headers: shared.config.max_headers,
    };
    let mut buffer = Vec::with_capacity(1024);
    loop {
        // Read straight into the growing head buffer: a stack array held
        // across this await would become part of every connection task's
        // state for the connection's whole life (async state is sized for
        // its largest suspension point).
        buffer.reserve(1024);
        let n = stream.read_buf(&mut buffer).await.ok()?;
        if n == 0 {
            return None;
        }
        match parse_request_head(&buffer, &limits) {
            Ok(Some((head, consumed))) => {
                let leftover = buffer.split_off(consumed);
                return Some((head, leftover));
            }
            Ok(None) => continue,
            Err(error) => {
                let reason = format!("{}: {}", error.code(), error);
                reject(stream, shared, error.status(), &reason, &[]).await;
                return None;
            }
        }
    }
}

async fn handshake(
    stream: &mut TcpStream,
    remote: SocketAddr,
    shared: &Shared,
) -> Option<Accepted> {
    let (head, leftover) = read_head(stream, shared).await?;
    if head.header("upgrade").is_none() {
        serve_plain(stream, shared, &head).await;
        return None;
    }
    let Some((route_index, route)) = shared
        .config
        .routes
        .iter()
        .enumerate()
        .find(|(_, r)| r.matches(&head.path))
    else {
        reject(
            stream,
            shared,
            404,
            "ERR_WS_NO_ROUTE: no WebSocket route at this path",
            &[],
        )
        .await;
        return None;
    };
    let request = match validate_upgrade(&head) {
        Ok(request) => request,
        Err(error) => {
            let reason = format!("{}: {}", error.code(), error);
            let headers = error.extra_headers();
            reject(stream, shared, error.status(), &reason, headers).await;
            return None;
        }
    };
    if !origin_allowed(route, request.origin.as_deref()) {
        reject(
            stream,
            shared,
            403,
            "ERR_WS_ORIGIN_REJECTED: origin not allowed",
            &[],
        )
        .await;
        return None;
    }
    let mut protocol = choose_protocol(route, &request.protocols).unwrap_or_default();
    let (deflate, extensions) = match &route.compression {
        Some(config) => {
            let offers: Vec<&str> = request.extensions.iter().map(String::as_str).collect();
            match deflate::negotiate(&offers, config) {
                Ok(Some((params, response))) => (Some(params), response),
                Ok(None) => (None, String::new()),
                Err(_) => {
                    let reason = "ERR_WS_BAD_EXTENSIONS: malformed Sec-WebSocket-Extensions";
                    reject(stream, shared, 400, reason, &[]).await;
                    return None;
                }
            }
        }
        None => (None, String::new()),
    };
    let id = shared.next_id();
    let worker = shared.pick_worker();
    let remote = remote.to_string();
    if route.has_upgrade_hook {
        match ask_upgrade_hook(shared, id, worker, route_index, &remote, &head).await {
            UpgradeDecision::Accept { protocol: chosen } => {
                if let Some(chosen) = chosen {
                    protocol = chosen;
                }
            }
            UpgradeDecision::Reject { status, reason } => {
                reject(stream, shared, status, &reason, &[]).await;
                return None;
            }
        }
    }
    let key = accept_key(&request.key);
    let response = switching_protocols_response(
        &key,
        (!protocol.is_empty()).then_some(protocol.as_str()),
        (!extensions.is_empty()).then_some(extensions.as_str()),
    );
    if stream.write_all(&response).await.is_err() {
        if route.has_upgrade_hook {
            // The hook accepted and its worker keeps the connection's data
            // until the connection's events end; end them.
            shared.queues[worker].push(KIND_CLOSE, |out| {
                body::id(out, id);
                body::u16(out, 1006);
            });
        }
        return None;
    }
    let dialect = if route.wire && protocol == switchboard_proto::wire::SUBPROTOCOL {
        Dialect::WireOverWebSocket
    } else {
        Dialect::WebSocket
    };
    Some(Accepted {
        id,
        worker,
        route_index: Some(route_index),
        dialect,
        transport: transport::WEBSOCKET,
        remote,
        protocol,
        extensions,
        deflate,
        leftover,
    })
}

/// Hand the request to JavaScript and wait for its decision.
async fn ask_upgrade_hook(
    shared: &Shared,
    id: u64,
    worker: usize,
    route_index: usize,
    remote: &str,
    head: &RequestHead,
) -> UpgradeDecision {
    let (sender, receiver) = oneshot::channel();
    shared.pending_upgrades.lock().insert(id, (worker, sender));
    shared.queues[worker].push(KIND_UPGRADE, |out| {
        body::id(out, id);
        body::u16(out, route_index as u16);
        body::str(out, remote);
        body::str(out, &head.path);
        body::str(out, head.query.as_deref().unwrap_or(""));
        body::u16(out, head.headers.len() as u16);
        for (name, value) in &head.headers {
            body::str(out, name);
            body::str(out, value);
        }
    });
    let decision = tokio::time::timeout(shared.config.upgrade_timeout, receiver).await;
    shared.pending_upgrades.lock().remove(&id);
    match decision {
        Ok(Ok(decision)) => decision,
        // The hook took too long, or its worker died.
        _ => UpgradeDecision::Reject {
            status: 503,
            reason: "ERR_UPGRADE_TIMEOUT: the upgrade hook did not answer in time".into(),
        },
    }
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

/// A request without `Upgrade`: a static route, or 404 / 405.
async fn serve_plain(stream: &mut TcpStream, shared: &Shared, head: &RequestHead) {
    let found = shared
        .config
        .static_routes
        .iter()
        .find(|r| r.path == head.path);
    match found {
        Some(route) if head.method == "GET" || head.method == "HEAD" => {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                route.content_type,
                route.body.len()
            );
            let mut cache_control = false;
            for (name, value) in &route.headers {
                cache_control |= name.eq_ignore_ascii_case("cache-control");
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            if !cache_control {
                response.push_str("Cache-Control: no-cache\r\n");
            }
            response.push_str("\r\n");
            let mut response = response.into_bytes();
            if head.method == "GET" {
                response.extend_from_slice(&route.body);
            }
            let _ = stream.write_all(&response).await;
            let _ = AsyncWriteExt::shutdown(stream).await;
        }
        Some(_) => {
            reject(
                stream,
                shared,
                405,
                "ERR_HTTP_METHOD_NOT_ALLOWED",
                &[("Allow", "GET, HEAD")],
            )
            .await
        }
        None if shared.config.routes.iter().any(|r| r.matches(&head.path)) => {
            reject(
                stream,
                shared,
                426,
                "ERR_WS_UPGRADE_REQUIRED: this path speaks WebSocket",
                &[("Upgrade", "websocket")],
            )
            .await
        }
        None => reject(stream, shared, 404, "ERR_HTTP_NOT_FOUND", &[]).await,
    }
}
