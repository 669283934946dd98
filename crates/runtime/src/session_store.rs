//! HTTP sessions kept in the broker (docs/http.md, "Sessions": the Redis
//! store): the shape of the four store operations the JavaScript
//! `SessionStore` of `app.sessionStore()` asks of the broker, answered
//! asynchronously like the history questions (`history.rs`). The runtime
//! carries them; the broker (`crates/broker/src/sessions.rs`) runs them.

use std::time::Duration;

use crate::history::{QueryError, Reply};
use crate::server::Server;

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

impl Server {
    /// Why this server cannot keep sessions in its broker, if it cannot:
    /// no broker, or a broker without a place for them.
    pub fn sessions_refusal(&self) -> Option<&'static str> {
        match self.state.bridge.get() {
            Some(bridge) => bridge.sessions_refusal(),
            None => Some("sessions in the broker need a broker (the `broker` option)"),
        }
    }

    /// Run `command` in the broker (`Bridge::session`). The answer is the
    /// value for `Get` (`None`: no such session), `None` for the others.
    /// Without a broker the answer is `Unavailable`, at once.
    pub fn session(&self, command: SessionCommand, reply: Reply<Option<Vec<u8>>>) {
        match self.state.bridge.get() {
            Some(bridge) => bridge.session(command, reply),
            None => reply(Err(QueryError::Unavailable)),
        }
    }
}
