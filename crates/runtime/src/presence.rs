//! What the runtime knows of presence (docs/scale-out.md, "Presence"):
//! the shape of the answer to "who is in this channel, on every node". The
//! members themselves are kept by the broker (Redis), which mirrors this
//! node's subscribers of the presence channels from the registry's log.

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
