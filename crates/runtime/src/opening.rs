//! What a connection starts its session with, once it is let in: by the
//! HTTP phase (an accepted upgrade, `handshake.rs`) or by an RPC listener
//! at once. Both produce it; the session (`session/`) consumes it.

use switchboard_proto::ws::deflate::DeflateParams;

use crate::connection::ConnectionKind;
use crate::events::Transport;
use crate::tls::TlsInfo;

/// A connection the handshake (or an RPC listener) let in, as the session
/// starts it.
pub(crate) struct Accepted {
    pub id: u64,
    pub worker: usize,
    pub kind: ConnectionKind,
    /// The WebSocket route; none for an RPC listener.
    pub route: Option<usize>,
    pub transport: Transport,
    pub remote: String,
    /// The negotiated subprotocol and extensions (WebSocket).
    pub protocol: String,
    pub extensions: String,
    pub deflate: Option<DeflateParams>,
    /// What the TLS handshake settled, when it is already done (HTTP over
    /// TLS reads its request head after it); an RPC stream over TLS learns
    /// it with its first bytes (see [`Session::wants_tls_info`]).
    pub tls: Option<TlsInfo>,
}
