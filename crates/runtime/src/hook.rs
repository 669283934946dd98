//! What JavaScript's `upgrade` hook decides, and how a decision reaches
//! the request that waits for it (a WebSocket upgrade, or the first
//! receiving request of a SockJS session).

/// What JavaScript's `upgrade` hook decided.
#[derive(Debug)]
pub enum UpgradeDecision {
    /// Complete the handshake, optionally choosing the subprotocol.
    Accept { protocol: Option<String> },
    /// Answer with this HTTP status and reason instead of `101`.
    Reject { status: u16, reason: String },
}

/// An upgrade waiting for JavaScript's hook: which worker was asked, and
/// how its decision reaches the connection's I/O thread.
pub struct PendingUpgrade {
    pub worker: usize,
    pub reply: Box<dyn FnOnce(UpgradeDecision) + Send>,
}
