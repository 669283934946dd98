//! What the runtime knows of presence (docs/scale-out.md, "Presence"):
//! the shape of the answer to "who is in this channel, on every node". The
//! members themselves are kept by the broker (Redis), which mirrors this
//! node's subscribers of the presence channels from the registry's log.

use crate::history::{QueryError, Reply};
use crate::server::Server;

/// One member of a channel: a subscriber (connection or virtual socket)
/// of some node, and the info its app gave it (JSON text, `null` if none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    pub info: Vec<u8>,
}

/// The members of a channel, every node's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Presence {
    pub members: Vec<Member>,
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
