//! The questions a server asks its broker, each answered through a
//! `Reply` (history, recovery, presence, session keys): the `Server`
//! methods the binding calls. Apart from the types they carry
//! (`history.rs`, `presence.rs`, `session_store.rs`), which the `Bridge`
//! trait names, so those files need nothing of the server's.

use crate::history::{HistoryPage, Position, QueryError, Recovery, Reply};
use crate::presence::Presence;
use crate::server::Server;
use crate::session_store::SessionCommand;

impl Server {
    /// Read `channel`'s history through the broker (`Bridge::history`);
    /// without a broker the answer is `NoHistory`, at once.
    pub fn history(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<HistoryPage>,
    ) {
        match self.state.bridge.get() {
            Some(bridge) => bridge.history(channel, since, limit, reply),
            None => reply(Err(QueryError::NoHistory)),
        }
    }

    /// Queue for `subscriber`, just subscribed to `channel`, what it missed
    /// since `since` (`Bridge::recover`).
    pub fn recover(
        &self,
        subscriber: u64,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<Recovery>,
    ) {
        match self.state.bridge.get() {
            Some(bridge) => bridge.recover(subscriber, channel, since, limit, reply),
            None => reply(Err(QueryError::NoHistory)),
        }
    }
}

impl Server {
    /// Who is in `channel` (`Bridge::presence`); without a broker the
    /// answer is `NoPresence`, at once.
    pub fn presence(&self, channel: &str, reply: Reply<Presence>) {
        match self.state.bridge.get() {
            Some(bridge) => bridge.presence(channel, reply),
            None => reply(Err(QueryError::NoPresence)),
        }
    }

    /// Set what others see of `subscriber` in presence. False without a
    /// broker (there is no presence to show it in).
    pub fn set_presence_info(&self, subscriber: u64, info: Vec<u8>) -> bool {
        match self.state.bridge.get() {
            Some(bridge) => {
                bridge.set_presence_info(subscriber, info);
                true
            }
            None => false,
        }
    }
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
