//! Operations on connections wherever they live (docs/scale-out.md,
//! "Direct sends across nodes"). An id names its node (`ids.rs`): an id of
//! this node (or of no node) is handled here by the local operations
//! (`server.rs`, `channels.rs`); an id of another node becomes one message
//! to that node through the bridge, which applies it there with those same
//! local operations. The binding calls these; the broker calls the local
//! ones, so a message is never forwarded twice.
//!
//! The synchronous call cannot know what the other node will find: a
//! forwarded operation reports [`Delivery::Forwarded`] (or `true`), and a
//! bridge that refuses it (down, backlog) is an error, as for `publish`.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_pubsub::Target;

use crate::bridge::{Bridge, BridgeError, Destination, NodeCommand, NodesView};
use crate::channels::PublishTarget;
use crate::ids;
use crate::outbound::SendStatus;
use crate::server::Server;

/// What became of a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The connection is on this node: what its queue said.
    Local(SendStatus),
    /// Handed to the broker for the connection's node; what that node
    /// finds (the connection may be gone) is not known here.
    Forwarded,
    /// The broker refused it: nothing was sent.
    Refused(BridgeError),
}

/// Ids sorted by where they live (`Server::split`).
struct Split<'a> {
    local: Vec<u64>,
    /// Other nodes' ids, by node, ascending.
    groups: Vec<(u16, Vec<u64>)>,
    bridge: Option<&'a Arc<dyn Bridge>>,
}

impl Server {
    /// This node's number (0: no broker, or none claimed yet).
    pub fn node(&self) -> u16 {
        self.state.node()
    }

    /// The broker claimed `node` for this server: ids allocated from now
    /// on carry it. Called once, before the server accepts connections.
    pub fn set_node(&self, node: u16) {
        self.state.set_node(node);
    }

    /// Start the local id counter at `start` (a broker's random start,
    /// `ids.rs`); never moves it down.
    pub fn seed_ids(&self, start: u64) {
        self.state.seed_ids(start);
    }

    /// What the broker knows of the nodes, when there is a broker.
    pub fn nodes_view(&self) -> Option<NodesView> {
        self.state.bridge.get().map(|bridge| bridge.nodes())
    }

    /// The node of `id` when it is another node's and a broker can reach
    /// it; `None` when it is handled here.
    fn remote(&self, id: u64) -> Option<(u16, &Arc<dyn Bridge>)> {
        let node = ids::node_of(id);
        if node == 0 || node == self.state.node() {
            return None;
        }
        Some((node, self.state.bridge.get()?))
    }

    /// The node that handles `id` here: this one's number for its own ids
    /// and for ids of no node.
    fn home_of(&self, id: u64) -> u16 {
        match ids::node_of(id) {
            0 => self.state.node(),
            node => node,
        }
    }

    /// `send` to a connection on any node.
    pub fn send_anywhere(&self, id: u64, data: &[u8], binary: bool) -> Delivery {
        match self.remote(id) {
            None => Delivery::Local(self.send(id, data, binary)),
            Some((node, bridge)) => {
                let command = NodeCommand::Send { id, data, binary };
                match bridge.forward(&[(Destination::Node(node), command)]) {
                    Ok(()) => Delivery::Forwarded,
                    Err(error) => Delivery::Refused(error),
                }
            }
        }
    }

    /// `end` on any node: true when the closing handshake started here or
    /// the request was handed to the broker.
    pub fn end_anywhere(
        &self,
        id: u64,
        code: u16,
        reason: &str,
        go_away: bool,
    ) -> Result<bool, BridgeError> {
        match self.remote(id) {
            None => Ok(self.end(id, code, reason, go_away)),
            Some((node, bridge)) => {
                let command = NodeCommand::End { id, code, reason };
                bridge.forward(&[(Destination::Node(node), command)])?;
                Ok(true)
            }
        }
    }

    /// `terminate` on any node, as `end_anywhere`.
    pub fn terminate_anywhere(&self, id: u64) -> Result<bool, BridgeError> {
        match self.remote(id) {
            None => Ok(self.terminate(id)),
            Some((node, bridge)) => {
                bridge.forward(&[(Destination::Node(node), NodeCommand::Terminate { id })])?;
                Ok(true)
            }
        }
    }

    /// `subscribe` for subscribers on any node: one message per other node
    /// (all or none), then the local ones. Returns the local subscribers
    /// whose membership changed; forwarded ones are never in it (their
    /// node decides).
    pub fn subscribe_anywhere(
        &self,
        subscribers: &[u64],
        channel: &str,
        delta: i32,
    ) -> Result<Vec<u64>, BridgeError> {
        let Split {
            local,
            groups,
            bridge,
        } = self.split(subscribers);
        // Only when some are another node's: a local subscribe works
        // whether the broker is up or not.
        if let (Some(bridge), false) = (bridge, groups.is_empty()) {
            let commands: Vec<_> = groups
                .iter()
                .map(|(node, ids)| {
                    let command = NodeCommand::Subscribe {
                        ids,
                        channel,
                        delta,
                    };
                    (Destination::Node(*node), command)
                })
                .collect();
            bridge.forward(&commands)?;
        }
        Ok(self.subscribe(&local, channel, delta))
    }

    /// `unsubscribe` on any node: true when a local subscription was
    /// removed or the request was handed to the broker.
    pub fn unsubscribe_anywhere(&self, id: u64, channel: &str) -> Result<bool, BridgeError> {
        match self.remote(id) {
            None => Ok(self.unsubscribe(id, channel)),
            Some((node, bridge)) => {
                let command = NodeCommand::Unsubscribe { id, channel };
                bridge.forward(&[(Destination::Node(node), command)])?;
                Ok(true)
            }
        }
    }

    /// `publishTo` across nodes; each recipient gets the message once.
    /// Returns the recipients on this node.
    ///
    /// - Without a broker, or when every target is local and no channel is
    ///   named: the local `publish_to`.
    /// - Ids only: one message to each other node holding some of them
    ///   (all or none), and the local ids at once.
    /// - With channels: one message to every node (the Redis channel all
    ///   nodes share), carrying the channels and each node's ids; every
    ///   node, this one included, delivers its part when it comes back, as
    ///   a `publish` is delivered. A recipient lives on one node, so each
    ///   gets the message once.
    pub fn publish_to_anywhere(
        &self,
        targets: &[PublishTarget<'_>],
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> Result<usize, BridgeError> {
        let Some(bridge) = self.state.bridge.get() else {
            return Ok(self.publish_to(targets, data, binary, exclude));
        };
        let mut channels: Vec<&str> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        for target in targets {
            match target {
                PublishTarget::Channel(name) => channels.push(name),
                PublishTarget::Subscriber(id) => ids.push(*id),
            }
        }
        let Split {
            local, mut groups, ..
        } = self.split(&ids);
        let exclude_at = exclude.map(|id| (self.home_of(id), id));
        let local_targets: Vec<PublishTarget<'_>> = local
            .iter()
            .map(|&id| PublishTarget::Subscriber(id))
            .collect();
        if channels.is_empty() {
            if !groups.is_empty() {
                // One group per message: a node gets only its own ids.
                let messages: Vec<_> = groups
                    .iter()
                    .map(|group| {
                        let command = NodeCommand::PublishTo {
                            channels: &[],
                            groups: std::slice::from_ref(group),
                            data,
                            binary,
                            exclude: exclude_at,
                        };
                        (Destination::Node(group.0), command)
                    })
                    .collect();
                bridge.forward(&messages)?;
            }
            return Ok(self.publish_to(&local_targets, data, binary, exclude));
        }
        // Channels: every node delivers its part when the message comes
        // back, this one too (its ids under its own number).
        if !local.is_empty() {
            groups.push((self.state.node(), local.clone()));
        }
        let command = NodeCommand::PublishTo {
            channels: &channels,
            groups: &groups,
            data,
            binary,
            exclude: exclude_at,
        };
        bridge.forward(&[(Destination::Every, command)])?;
        let mut counted: Vec<Target<'_>> = channels.iter().map(|c| Target::Channel(c)).collect();
        counted.extend(local.iter().map(|&id| Target::Subscriber(id)));
        Ok(self.count_recipients(&counted, exclude))
    }

    /// Local ids, and the others grouped by node (ascending), with the
    /// bridge that reaches them (`None`: no broker, everything is local).
    fn split(&self, ids: &[u64]) -> Split<'_> {
        let Some(bridge) = self.state.bridge.get() else {
            return Split {
                local: ids.to_vec(),
                groups: Vec::new(),
                bridge: None,
            };
        };
        let mut local = Vec::new();
        let mut groups: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        for &id in ids {
            match self.remote(id) {
                None => local.push(id),
                Some((node, _)) => groups.entry(node).or_default().push(id),
            }
        }
        Split {
            local,
            groups: groups.into_iter().collect(),
            bridge: Some(bridge),
        }
    }

    /// How many of this node's connections a publish to `targets` would
    /// reach now.
    fn count_recipients(&self, targets: &[Target<'_>], exclude: Option<u64>) -> usize {
        let registry = self.state.registry.read();
        let connections = self.state.connections.read();
        let mut count = 0;
        registry.for_each_recipient(targets, exclude, |conn, _| {
            if connections.contains_key(&conn) {
                count += 1;
            }
        });
        count
    }
}
