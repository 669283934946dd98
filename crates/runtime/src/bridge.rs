//! The seam between a server and a broker that carries its channels to
//! other nodes (`crates/broker`, Redis). The runtime knows only this trait:
//! it stays free of the broker's client and of its async runtime, and a
//! server without a broker pays one `Option` check per publish.
//!
//! The contract, in one place:
//! - `publish` is called instead of the local fan-out: the broker takes the
//!   message (or refuses it at once) and, once the message comes back from
//!   the broker, hands it to [`crate::Server::deliver`], on every node
//!   including this one, so all nodes see one order per channel.
//! - `channels_changed` is called with the registry's write lock held, in
//!   the order the changes happened, so the broker learns of a channel's
//!   first local subscriber and its last one in order. It must only record
//!   them (no I/O, no waiting).
//! - `history` and `recover` are the questions that wait on the broker:
//!   they return at once and answer through their `Reply`, on the broker's
//!   thread (the binding turns that into a JavaScript promise).
//! - `forward` carries operations on another node's connections
//!   (`remote.rs`): the broker hands each to the node named, which applies
//!   it with the local operations of [`crate::Server`].

use switchboard_pubsub::{ChannelChange, MemberChange, MemberFilter};

use crate::history::{HistoryPage, Position, Recovery, Reply};
use crate::presence::Presence;
use crate::session_store::SessionCommand;

/// Why a broker refused a publish: reported to the caller, never silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BridgeError {
    /// The broker is not connected (`ERR_BROKER_UNAVAILABLE`).
    Unavailable,
    /// Too many publishes wait to be sent (`ERR_BROKER_BACKLOG`).
    Backlog,
}

impl BridgeError {
    /// The stable code JavaScript sees.
    pub fn code(self) -> &'static str {
        match self {
            BridgeError::Unavailable => "ERR_BROKER_UNAVAILABLE",
            BridgeError::Backlog => "ERR_BROKER_BACKLOG",
        }
    }
}

/// A broker carrying this server's channels to other nodes.
pub trait Bridge: Send + Sync {
    /// Take a publish to `channel` for every node. `exclude` is a
    /// connection of this node that must not receive it.
    fn publish(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> Result<(), BridgeError>;

    /// Channels got their first local subscriber or lost their last one.
    /// Called under the registry's write lock: record, do not wait.
    fn channels_changed(&self, changes: Vec<ChannelChange>);

    /// Wait up to `timeout` until publishes are accepted (connected and
    /// subscribed); whether they are. Blocks: called off the JavaScript
    /// thread, once, when the server starts listening.
    fn wait_ready(&self, timeout: std::time::Duration) -> bool;

    /// The server is shutting down: leave the broker (unsubscribe) and
    /// stop. May block briefly; called off the JavaScript thread.
    fn shutdown(&self);

    /// Read `channel`'s history after `since` (from its oldest kept
    /// publication without it), at most `limit` publications.
    fn history(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<HistoryPage>,
    ) {
        let _ = (channel, since, limit);
        reply(Err(crate::history::QueryError::NoHistory));
    }

    /// `subscriber` was just subscribed to `channel` on this node: once
    /// this node's subscription is in effect in the broker, queue for it
    /// what it missed after `since` (at most `limit` publications, through
    /// [`crate::Server::deliver_to`]), then reply. Live publications reach
    /// it meanwhile; a client merges the two by offset.
    fn recover(
        &self,
        subscriber: u64,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<Recovery>,
    ) {
        let _ = (subscriber, channel, since, limit);
        reply(Err(crate::history::QueryError::NoHistory));
    }

    /// The channels whose every member the broker mirrors (presence), if
    /// any: the registry then logs their joins and leaves.
    fn presence_filter(&self) -> Option<MemberFilter> {
        None
    }

    /// Subscribers joined or left channels of the presence filter. Called
    /// under the registry's write lock, in order: record, do not wait.
    fn members_changed(&self, changes: Vec<MemberChange>) {
        let _ = changes;
    }

    /// What others see of `subscriber` in presence (JSON text), from now
    /// on and in the channels it is a member of already.
    fn set_presence_info(&self, subscriber: u64, info: Vec<u8>) {
        let _ = (subscriber, info);
    }

    /// Who is in `channel`, on every node.
    fn presence(&self, channel: &str, reply: Reply<Presence>) {
        let _ = channel;
        reply(Err(crate::history::QueryError::NoPresence));
    }
    /// Take operations for connections of other nodes (`remote.rs`), all
    /// or none: a refusal (down, backlog) leaves nothing half sent. Like
    /// `publish`, it only enqueues.
    fn forward(&self, commands: &[(Destination, NodeCommand<'_>)]) -> Result<(), BridgeError> {
        let _ = commands;
        Err(BridgeError::Unavailable)
    }

    /// The nodes this broker knows of.
    fn nodes(&self) -> NodesView {
        NodesView::default()
    }

    /// Why this broker cannot keep HTTP sessions, if it cannot.
    fn sessions_refusal(&self) -> Option<&'static str> {
        Some("this broker keeps no sessions")
    }

    /// Run a session store operation (`crate::session_store`).
    fn session(&self, command: SessionCommand, reply: Reply<Option<Vec<u8>>>) {
        let _ = command;
        reply(Err(crate::history::QueryError::Unavailable));
    }
}

/// Where a message for other nodes goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// The node with this number (`ids::node_of`).
    Node(u16),
    /// Every node, this one included (a `publishTo` naming channels).
    Every,
}

/// An operation on connections of another node: the broker carries it to
/// that node, which applies it natively on arrival (no JavaScript runs
/// there). Ids are whole ids (`ids.rs`), as JavaScript has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeCommand<'a> {
    /// `send(id, data)`.
    Send {
        id: u64,
        data: &'a [u8],
        binary: bool,
    },
    /// `end(id, code, reason)`: the closing handshake.
    End { id: u64, code: u16, reason: &'a str },
    /// `terminate(id)`.
    Terminate { id: u64 },
    /// `subscribe(ids, channel, delta)`, for the ids of one node.
    Subscribe {
        ids: &'a [u64],
        channel: &'a str,
        delta: i32,
    },
    /// `unsubscribe(id, channel)`.
    Unsubscribe { id: u64, channel: &'a str },
    /// `publishTo`: the receiving node delivers to `channels` and to the
    /// ids of its own group, each recipient once; `exclude` is (node, id)
    /// and applies on that node only.
    PublishTo {
        channels: &'a [&'a str],
        groups: &'a [(u16, Vec<u64>)],
        data: &'a [u8],
        binary: bool,
        exclude: Option<(u16, u64)>,
    },
}

/// What a broker knows of the nodes sharing it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodesView {
    /// This node's number (0: none claimed yet).
    pub node: u16,
    /// The nodes heard from within the node TTL, this one included,
    /// ascending.
    pub live: Vec<u16>,
    /// Node messages from Redis that could not be decoded (ignored).
    pub invalid_messages: u64,
    /// Heartbeats that found this node's number held by another node.
    pub conflicts: u64,
}
