//! HTTP sessions kept in the broker (docs/http.md, "Sessions": the Redis
//! store): the shape of the four store operations the JavaScript
//! `SessionStore` of `app.sessionStore()` asks of the broker, answered
//! asynchronously like the history questions (`history.rs`). The runtime
//! carries them; the broker (`crates/broker/src/sessions.rs`) runs them.

use std::time::Duration;

/// One operation on one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionOp {
    /// The session's value (`GET`); `None` when unknown or expired.
    Get,
    /// Store `value` for `ttl` from now (`SET key value PX ttl`).
    Set { value: Vec<u8>, ttl: Duration },
    /// Extend a live session's life to `ttl` from now (`PEXPIRE`); nothing
    /// for an unknown one.
    Touch { ttl: Duration },
    /// Forget the session (`DEL`).
    Destroy,
}

/// A store operation: the session's id (which picks the Redis server when
/// there are several, as a channel's name does), its key, and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionCommand {
    pub id: String,
    pub key: Vec<u8>,
    pub op: SessionOp,
}
