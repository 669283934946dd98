//! Nodes on a Redis Cluster (docs/scale-out.md, "Nodes"): the claim, the
//! heartbeat and the goodbye of `crate::nodes`, run at the master of the
//! nodes' slot. Every node name is `<prefix>{\xFF}...` (`nodes::name`):
//! one hash tag, one slot, so the heartbeat's script and its `SPUBLISH`
//! go to one master in one pipeline, and every node message travels
//! through that master.
//!
//! Following the cluster: a command answered `-MOVED` (or `-ASK`, a
//! connection lost to a failover) fails, which makes the subscriber read
//! the map again (`Home::failed`); the next attempt, after the back-off,
//! connects to the slot's master of the new map. The claim's `SET NX`, the
//! heartbeat's refresh and the goodbye's release are safe to send again:
//! an answer `-MOVED`/`-ASK` means the command did not run, and the others
//! are checked against the token. Node messages of other kinds (sends,
//! `publishTo`) are publishes: they go with the channels' publishes, in
//! one queue, through the publisher, which follows `MOVED` in order.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use switchboard_runtime::{BridgeError, Destination, NodeCommand, NodesView, Server};

use super::{command_connection, Cluster, ClusterShared};
use crate::nodes::{self, Connecting, Home};
use crate::{slot, BrokerConfig};

/// The master of the nodes' slot, as the claim and the heartbeat reach it.
pub(crate) struct ClusterHome {
    shared: Arc<ClusterShared>,
    seed: redis::ConnectionInfo,
    config: Arc<BrokerConfig>,
}

impl ClusterHome {
    pub(crate) fn new(
        shared: Arc<ClusterShared>,
        seed: redis::ConnectionInfo,
        config: Arc<BrokerConfig>,
    ) -> Self {
        Self {
            shared,
            seed,
            config,
        }
    }
}

/// The slot of every node name.
pub(crate) fn home_slot(config: &BrokerConfig) -> u16 {
    slot::slot(&nodes::all_name(config))
}

impl Home for ClusterHome {
    fn connect(&self) -> Connecting<'_> {
        Box::pin(async move {
            // No map yet (the subscriber reads it): the caller retries.
            let addr = {
                let view = self.shared.view.read();
                view.map.owner_addr(home_slot(&self.config))?.to_owned()
            };
            command_connection(&self.seed, &addr, &self.config).await
        })
    }

    fn failed(&self) {
        self.shared.refresh.notify_one();
    }
}

/// Claim a number (once the map names the slot's master), give it to the
/// server's ids, have the subscriber subscribe this node's channels, and
/// keep it alive; runs until aborted by the goodbye (`nodes::leave`).
pub(crate) async fn keep(home: ClusterHome, config: Arc<BrokerConfig>, server: Weak<Server>) {
    let shared = home.shared.clone();
    let Some(connection) = nodes::claim(&home, &config, &shared.base).await else {
        return;
    };
    if let Some(server) = server.upgrade() {
        server.set_node(shared.base.nodes.number());
    }
    shared.claimed.notify_one();
    nodes::heartbeat(home, config, shared.base.clone(), connection).await;
}

impl Cluster {
    /// Operations on other nodes' connections: node messages on the
    /// publish queue, refused at once when the nodes' slot's master is not
    /// reachable both ways (as a publish to a channel of that slot).
    pub(crate) fn forward(
        &self,
        config: &BrokerConfig,
        commands: &[(Destination, NodeCommand<'_>)],
    ) -> Result<(), BridgeError> {
        if commands.is_empty() {
            return Ok(());
        }
        {
            let view = self.shared.view.read();
            match view.owner(home_slot(config)) {
                Some(node)
                    if node.subscribed.load(Ordering::Acquire)
                        && node.writable.load(Ordering::Acquire) => {}
                _ => return Err(BridgeError::Unavailable),
            }
        }
        nodes::forward(config, &self.shared.base, self.queues.publishes(), commands)
    }

    /// This node's number and the live nodes.
    pub(crate) fn nodes(&self, ttl: std::time::Duration) -> NodesView {
        self.shared.base.nodes.view(ttl)
    }
}
