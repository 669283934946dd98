//! A Redis Cluster with sharded pub/sub (Redis 7: `SSUBSCRIBE`,
//! `SPUBLISH`): a channel is carried by the master of its key slot
//! (`crate::slot`; the Redis channel is `<prefix>{<channel>}`), so each
//! master carries only its share of the traffic, where classic pub/sub in
//! a cluster sends every message to every node.
//!
//! - `map`: which master serves which slot (`CLUSTER SLOTS`).
//! - `subscriber`: one task for the whole cluster: the subscription set,
//!   one pub/sub connection per master (`resp`, our own small RESP2
//!   connection), the slot map and its refreshes, and the messages that
//!   come back. It follows the cluster: a `-MOVED` answer or a
//!   `sunsubscribe` that Redis sends when a slot moves away, a lost master
//!   (failover) or a periodic refresh makes it read the map again and
//!   subscribe the channels where they now live.
//! - `publisher`: one task and one command connection per master:
//!   `SPUBLISH`es (or, for a channel with history, calls of the script that
//!   appends and `SPUBLISH`es) routed by slot, pipelined per master; those
//!   answered `-MOVED` are sent again, in order, to the new master before
//!   anything later (a `MOVED` answer means the command did not run).
//! - `reader`: history reads at the slot's master, following the cluster;
//!   `redirect`: what an error answer means (`MOVED`, `ASK`, `TRYAGAIN`,
//!   `NOSCRIPT`).
//! - `nodes`: this node's number, claimed and kept alive at the master of
//!   the nodes' slot (`crate::nodes` does the work); the subscriber
//!   subscribes the node channels there like any channel.
//!
//! Why not the `redis` crate's cluster client (1.8, `cluster-async`): it
//! runs RESP3 pub/sub on its multiplexed connections, which take the
//! `sunsubscribe` that Redis pushes when a slot moves for the reply to the
//! oldest command in flight, and its subscription tracker then forgets the
//! channel instead of moving it; it also retries failed commands itself,
//! which could deliver a publish twice. Plain connections, with the
//! routing here, keep the failure rules of docs/scale-out.md.

mod map;
mod nodes;
mod presence;
mod publisher;
mod reader;
mod redirect;
mod resp;
mod subscriber;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::RwLock;
use redis::aio::MultiplexedConnection;
use switchboard_pubsub::ChannelChange;
use switchboard_runtime::stats::Stats;
use switchboard_runtime::{BridgeError, Server};

use crate::history::Epochs;
use crate::queues::{Queues, Receivers};
use crate::{slot, Append, BrokerConfig, Shared};
use map::SlotMap;
pub(crate) use reader::ClusterReader;

/// One master as the callers see it.
pub(crate) struct NodeState {
    pub(crate) addr: String,
    /// This node's pub/sub connection to it is up.
    pub(crate) subscribed: AtomicBool,
    /// The publisher's command connection to it is up.
    pub(crate) writable: AtomicBool,
    /// Bumped when the pub/sub connection is lost or made: the publisher
    /// then replaces its command connection before the next batch (the
    /// master may have restarted under it).
    pub(crate) epoch: AtomicU64,
}

/// The slot map as the callers and the publisher read it.
pub(crate) struct View {
    pub(crate) map: SlotMap,
    /// Aligned with `map.nodes`.
    pub(crate) nodes: Vec<Arc<NodeState>>,
    /// Bumped with every new map.
    pub(crate) generation: u64,
}

impl View {
    fn empty() -> Self {
        Self {
            map: SlotMap::default(),
            nodes: Vec::new(),
            generation: 0,
        }
    }

    pub(crate) fn owner(&self, slot: u16) -> Option<&Arc<NodeState>> {
        self.map.owner(slot).map(|i| &self.nodes[i])
    }
}

/// What the cluster's tasks and the callers share.
pub(crate) struct ClusterShared {
    /// Tickets, closing; `subscriber_up` is "a complete slot map is
    /// known", `publisher_up` "the publisher runs".
    pub(crate) base: Arc<Shared>,
    pub(crate) view: RwLock<Arc<View>>,
    /// The publisher saw a `MOVED` or lost a master: read the map again.
    pub(crate) refresh: tokio::sync::Notify,
    /// A new map was published: the publisher connects to new masters.
    pub(crate) view_changed: tokio::sync::Notify,
    /// This node's number was claimed: the subscriber subscribes its
    /// channels.
    pub(crate) claimed: tokio::sync::Notify,
    /// This node's channels are subscribed at the nodes' slot's master:
    /// `listen()` waits for it, so no node message to a new node's
    /// connections is sent before that node listens for it.
    pub(crate) nodes_joined: AtomicBool,
}

/// The callers' side of the cluster.
pub(crate) struct Cluster {
    shared: Arc<ClusterShared>,
    /// Reads the histories, at each channel's master.
    pub(crate) reader: Arc<ClusterReader>,
    queues: Queues,
}

/// The broker thread's side.
pub(crate) struct ClusterTasks {
    shared: Arc<ClusterShared>,
    seed: redis::ConnectionInfo,
    seeds: Vec<String>,
    reader: Arc<ClusterReader>,
    queues: Receivers,
}

impl Cluster {
    pub(crate) fn new(
        seeds: &[String],
        config: &Arc<BrokerConfig>,
        epochs: &Arc<Epochs>,
    ) -> std::io::Result<(Self, ClusterTasks)> {
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        let mut infos = Vec::new();
        for url in seeds {
            let info = redis::Client::open(url.as_str())
                .map_err(|e| invalid(format!("{url}: {e}")))?
                .get_connection_info()
                .clone();
            let redis::ConnectionAddr::Tcp(host, port) = info.addr() else {
                return Err(invalid(format!(
                    "{url}: a cluster is reached over plain TCP"
                )));
            };
            infos.push((format!("{host}:{port}"), info.clone()));
        }
        let Some((_, seed)) = infos.first().cloned() else {
            return Err(invalid("no cluster seed given".into()));
        };
        let shared = Arc::new(ClusterShared {
            base: Arc::new(Shared {
                nodes: Arc::new(crate::nodes::Nodes::enabled()),
                ..Shared::default()
            }),
            view: RwLock::new(Arc::new(View::empty())),
            refresh: tokio::sync::Notify::new(),
            view_changed: tokio::sync::Notify::new(),
            claimed: tokio::sync::Notify::new(),
            nodes_joined: AtomicBool::new(false),
        });
        let (queues, receivers) = Queues::new(config);
        let reader = Arc::new(ClusterReader::new(
            shared.clone(),
            seed.clone(),
            config.clone(),
            epochs.clone(),
        ));
        let tasks = ClusterTasks {
            shared: shared.clone(),
            seed,
            seeds: infos.into_iter().map(|(addr, _)| addr).collect(),
            reader: reader.clone(),
            queues: receivers,
        };
        Ok((
            Self {
                shared,
                reader,
                queues,
            },
            tasks,
        ))
    }

    /// Queue a publish (with the history script's part, for a channel
    /// with history); refused at once when the channel's master is not
    /// reachable both ways, or the queue is full.
    pub(crate) fn publish(
        &self,
        channel: Vec<u8>,
        message: Vec<u8>,
        history: Option<Box<Append>>,
    ) -> Result<(), BridgeError> {
        {
            // The master of the channel's slot must be reachable both ways:
            // a publish refused now is better than one lost later.
            let view = self.shared.view.read();
            match view.owner(slot::slot(&channel)) {
                Some(node)
                    if node.subscribed.load(Ordering::Acquire)
                        && node.writable.load(Ordering::Acquire) => {}
                _ => return Err(BridgeError::Unavailable),
            }
        }
        self.queues
            .publish(&self.shared.base, channel, message, history)
    }

    pub(crate) fn channels_changed(&self, changes: Vec<ChannelChange>) {
        self.queues.channels_changed(&self.shared.base, changes);
    }

    /// What the tasks and the callers share (the subscription tickets a
    /// recovery waits for).
    pub(crate) fn shared(&self) -> &ClusterShared {
        &self.shared
    }

    /// A complete slot map, every master connected both ways, and this
    /// node's number claimed and its channels subscribed.
    pub(crate) fn available(&self) -> bool {
        if !self.shared.base.available() || !self.shared.nodes_joined.load(Ordering::Acquire) {
            return false;
        }
        let view = self.shared.view.read();
        view.map.complete()
            && view
                .nodes
                .iter()
                .all(|n| n.subscribed.load(Ordering::Acquire) && n.writable.load(Ordering::Acquire))
    }

    pub(crate) fn shutdown(&self) {
        self.queues.shutdown(&self.shared.base);
    }
}

impl ClusterTasks {
    pub(crate) async fn run(
        self,
        config: Arc<BrokerConfig>,
        node: u64,
        server: Weak<Server>,
        stats: Arc<Stats>,
    ) {
        let publisher = tokio::spawn(publisher::run(
            self.shared.clone(),
            self.seed.clone(),
            config.clone(),
            stats,
            self.queues.publishes,
        ));
        // Beside the subscriber, which reads the map the claim needs.
        let home = nodes::ClusterHome::new(self.shared.clone(), self.seed.clone(), config.clone());
        let number = tokio::spawn(nodes::keep(home, config.clone(), server.clone()));
        let base = self.shared.base.clone();
        subscriber::run(subscriber::Setup {
            shared: self.shared,
            seed: self.seed,
            seeds: self.seeds,
            config: config.clone(),
            node,
            server,
            reader: self.reader,
            commands: self.queues.commands,
            publisher,
        })
        .await;
        // After the accepted publishes (node messages among them) went out.
        crate::nodes::leave(&config, &base, number).await;
    }
}

/// The connection settings of the master at `addr` (`host:port`): the
/// seed's, with that address.
pub(crate) fn node_info(seed: &redis::ConnectionInfo, addr: &str) -> Option<redis::ConnectionInfo> {
    let (host, port) = addr.rsplit_once(':')?;
    let port = port.parse().ok()?;
    Some(
        seed.clone()
            .set_addr(redis::ConnectionAddr::Tcp(host.to_string(), port)),
    )
}

/// A command connection to the master at `addr`, each step within
/// `connect_timeout` (also its response timeout).
pub(crate) async fn command_connection(
    seed: &redis::ConnectionInfo,
    addr: &str,
    config: &BrokerConfig,
) -> Option<MultiplexedConnection> {
    let client = redis::Client::open(node_info(seed, addr)?).ok()?;
    let settings = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(config.connect_timeout))
        .set_response_timeout(Some(config.connect_timeout));
    let connect = client.get_multiplexed_async_connection_with_config(&settings);
    tokio::time::timeout(config.connect_timeout, connect)
        .await
        .ok()?
        .ok()
}

/// Subscriptions confirmed up to `ticket`: publishes waiting may go.
pub(crate) fn confirm(shared: &Shared, ticket: u64) {
    shared.confirmed.fetch_max(ticket, Ordering::AcqRel);
    shared.confirmations.notify_waiters();
}
