//! # switchboard-proto
//!
//! Switchboard's protocol layer: the WebSocket protocol (RFC 6455), its
//! permessage-deflate extension (RFC 7692), the HTTP/1.1 upgrade handshake
//! and Switchboard's own binary RPC protocol (`docs/protocol.md`), written
//! as pure state machines.
//!
//! Nothing here does I/O, reads a clock, spawns tasks or draws random
//! numbers. The runtime (`switchboard-runtime`) owns sockets, timers and
//! randomness; it feeds received bytes to these types and sends the bytes
//! they produce. That keeps every rule testable with byte vectors and
//! fuzzable without a network.
//!
//! - [`http`]: parse a request head, validate a WebSocket upgrade, build the
//!   `101` or error response;
//! - [`http1`]: a strict HTTP/1.1 request codec (RFC 9112) for plain HTTP
//!   requests, keep-alive and pipelined: zero-copy head parser, body
//!   decoder (length or chunked), response framing;
//! - [`ws`]: decode frames into events, encode frames, negotiate and apply
//!   compression;
//! - [`rpc`]: the RPC protocol's frames, codec, UUIDs, handshake and
//!   ordering checks.
//! - [`sockjs`]: the SockJS protocol as `sockjs-client` 1.x speaks it:
//!   URL layout, frames and each transport's wrapping, the protocol's
//!   JSON quoting, what clients send, and the fixed documents.
//!
//! Every error carries a stable string code (`ERR_WS_*`, `ERR_HTTP_*`,
//! `ERR_PROTOCOL_*`) and the close code or HTTP status to answer with;
//! [`all_error_codes`] lists them for the documentation.

// Every public item is documented; CI runs clippy with -D warnings.
#![warn(missing_docs)]

pub mod http;
pub mod http1;
pub mod rpc;
pub mod sockjs;
pub mod ws;

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;

#[cfg(test)]
pub(crate) mod test_util;

/// Every error code of this crate as `(code, close code or HTTP status,
/// description)`: the WebSocket codes ([`ws::ALL_ERROR_CODES`]) followed by
/// the handshake codes ([`http::ALL_ERROR_CODES`]), the RPC protocol's
/// ([`rpc::ALL_ERROR_CODES`], with WebSocket close codes), then the codes
/// the HTTP/1.1 request codec adds ([`http1::ALL_ERROR_CODES`]; it shares
/// the handshake's 400, 431 and 505 codes).
pub fn all_error_codes() -> impl Iterator<Item = &'static (&'static str, u16, &'static str)> {
    ws::ALL_ERROR_CODES
        .iter()
        .chain(http::ALL_ERROR_CODES.iter())
        .chain(rpc::ALL_ERROR_CODES.iter())
        .chain(http1::ALL_ERROR_CODES.iter())
}
