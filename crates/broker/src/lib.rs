//! switchboard-broker: many Switchboard nodes as one, through Redis
//! pub/sub (docs/scale-out.md).
//!
//! A [`Broker`] implements the runtime's [`Bridge`]: a publish becomes one
//! `PUBLISH` on a connection kept for commands, and this node subscribes,
//! on a connection kept for pub/sub, to the channels that have local
//! subscribers. Messages coming back are fanned out by the runtime's
//! native fan-out ([`Server::deliver`]), framed once per kind of
//! recipient: no JavaScript runs per message.
//!
//! The Redis client (the `redis` crate) is async, so the broker runs its
//! own single-threaded Tokio runtime on one thread; the runtime crate keeps
//! its readiness loops and knows only the `Bridge` trait. Files: `config`
//! (options), `wire` (the message format), `topology` (which Redis carries
//! a channel), `shard` (one standalone Redis: `publisher`, the `PUBLISH`
//! connection, and `subscriber`, the subscription set and its connection),
//! `cluster` (a Redis Cluster with sharded pub/sub) and `slot` (its key
//! slots), `history` (the scripts and reads), `positions` (the gap
//! tracking), `inbound` (messages from Redis to the fan-out, in offset
//! order; both subscribers'), `sessions` (HTTP sessions as keys, on the
//! query connection), `backoff`; `queues` (the callers' queues to an
//! engine's tasks, alike for every engine); `queries` (presence, history
//! and recovery, answered from the broker's thread); `presence` (the
//! members task), `presence_scripts` (its Lua) and `presence_store` (where
//! its commands run); `nodes` (this node's number, its heartbeat,
//! operations on other nodes' connections) and `node_wire` (their message
//! format); `nats` carries the channels and the node messages through NATS
//! instead (no history).

mod backoff;
mod cluster;
mod config;
mod history;
mod inbound;
mod nats;
pub mod node_wire;
mod nodes;
mod positions;
pub mod presence;
mod presence_scripts;
mod presence_store;
mod probe;
mod publisher;
mod queries;
mod queues;
mod sessions;
mod shard;
pub mod slot;
mod subscriber;
pub mod topology;
pub mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use switchboard_pubsub::ChannelChange;
use switchboard_runtime::history::{HistoryPage, Recovery, Reply};
use switchboard_runtime::{
    Bridge, BridgeError, Destination, NodeCommand, NodesView, Position, Server,
};

pub use config::{BrokerConfig, HistoryRule};
use history::{Epochs, Reader};
use presence::PresenceCommand;
use switchboard_pubsub::{MemberChange, MemberFilter};
use switchboard_runtime::presence::Presence;
use switchboard_runtime::session_store::SessionCommand;
use tokio::sync::mpsc;
pub use topology::Topology;

use shard::Shard;
use topology::Rendezvous;

/// What the broker's thread and the callers share, per Redis server.
#[derive(Default)]
pub(crate) struct Shared {
    /// Both connections are up (and the subscriptions made): publishes are
    /// accepted only then, since a message published while this node is
    /// not subscribed would not come back to its own subscribers.
    pub(crate) publisher_up: AtomicBool,
    pub(crate) subscriber_up: AtomicBool,
    /// Bumped whenever the pub/sub connection is lost or made: the
    /// publisher then reconnects before its next batch, since the server
    /// may have restarted under a command connection that has not noticed.
    pub(crate) epoch: AtomicU64,
    /// Subscription tickets: bumped (under the registry's lock) whenever a
    /// channel gets its first local subscriber; `confirmed` follows once
    /// Redis confirmed the SUBSCRIBEs of every change up to that ticket. A
    /// publish carries the ticket of its moment and is not written before
    /// it is confirmed, so `subscribe` then `publish` on one server reaches
    /// the new subscriber as it does without a broker (the two connections
    /// are not ordered with each other otherwise).
    pub(crate) requested: AtomicU64,
    pub(crate) confirmed: AtomicU64,
    pub(crate) confirmations: tokio::sync::Notify,
    /// Set at `close()`: new publishes are refused, and the publisher
    /// (woken by `close`) sends what it accepted and ends.
    pub(crate) closing: AtomicBool,
    pub(crate) close: tokio::sync::Notify,
    /// This node's number and what it knows of the others (`nodes.rs`).
    /// This node's number and what it knows of the others (`nodes.rs`),
    /// one for every shard (the home shard claims it).
    pub(crate) nodes: Arc<nodes::Nodes>,
}

impl Shared {
    pub(crate) fn available(&self) -> bool {
        self.publisher_up.load(Ordering::Acquire)
            && self.subscriber_up.load(Ordering::Acquire)
            && !self.closing.load(Ordering::Acquire)
            && self.nodes.ready()
    }

    /// Wait until Redis confirmed the subscriptions up to `ticket`.
    pub(crate) async fn subscribed(&self, ticket: u64) {
        loop {
            let confirmed = self.confirmations.notified();
            if self.confirmed.load(Ordering::Acquire) >= ticket {
                return;
            }
            confirmed.await;
        }
    }
}

/// A publish on its way to Redis: the Redis channel and the encoded message
/// (for a channel with history, a publication of the batch its run makes,
/// `wire.rs`).
pub(crate) struct Outgoing {
    pub(crate) channel: Vec<u8>,
    pub(crate) message: Vec<u8>,
    pub(crate) history: Option<Box<Append>>,
    /// The subscription ticket to wait for (`Shared::requested`).
    pub(crate) ticket: u64,
}

/// What the history script needs besides the channel and the payload.
pub(crate) struct Append {
    pub(crate) keys: [Vec<u8>; 2],
    pub(crate) size: usize,
    pub(crate) ttl: u64,
    pub(crate) epoch: [u8; 8],
}

/// What a subscriber task is told.
pub(crate) enum Command {
    /// Registry changes, and the ticket that covers them.
    Changes(Vec<ChannelChange>, u64),
    /// Unsubscribe from everything and stop.
    Shutdown,
}

/// How this broker reaches Redis.
enum Engine {
    /// Standalone servers, each channel on the one `route` picks.
    Sharded {
        shards: Vec<Shard>,
        route: Rendezvous,
        /// The shard of the nodes' keys and channels.
        home: usize,
    },
    /// A Redis Cluster.
    Cluster(cluster::Cluster),
    /// NATS (`nats/`).
    Nats(nats::Nats),
}

/// The Redis engine of one server.
pub struct Broker {
    config: Arc<BrokerConfig>,
    node: u64,
    engine: Engine,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The broker thread's runtime, for the questions that wait on Redis.
    runtime: tokio::runtime::Handle,
    epochs: Arc<Epochs>,
    server: Weak<Server>,
    /// The presence task, when some channel keeps presence.
    presence: Option<Presences>,
}

/// The callers' side of the presence task.
struct Presences {
    commands: mpsc::UnboundedSender<PresenceCommand>,
}

impl Broker {
    /// Start the broker's thread for `server` and attach it. Connecting
    /// happens on that thread; until it succeeds publishes fail with
    /// `ERR_BROKER_UNAVAILABLE`.
    pub fn attach(server: &Arc<Server>, config: BrokerConfig) -> std::io::Result<Arc<Self>> {
        let config = Arc::new(config);
        let node = random_node_id()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Ids of this node start at a random point (`ids.rs`), and carry
        // its number once it is claimed.
        server.seed_ids(nodes::random_id_start());
        let weak: Weak<Server> = Arc::downgrade(server);
        let stats = server.state().stats.clone();
        let epochs = Arc::new(Epochs::new(random_node_id()?));
        let handle = runtime.handle().clone();
        let (engine, tasks): (Engine, Tasks) = match &config.topology {
            Topology::Sharded(urls) => {
                if urls.is_empty() {
                    return Err(invalid("no Redis server given"));
                }
                let route = Rendezvous::new(urls);
                // The nodes' keys and channels live on one server, the same
                // for every node whatever the order of its list.
                let home = route.pick(nodes::HOME);
                let nodes = Arc::new(nodes::Nodes::enabled());
                let mut shards = Vec::with_capacity(urls.len());
                let mut tasks = Vec::with_capacity(urls.len());
                for (i, url) in urls.iter().enumerate() {
                    let (shard, task) = Shard::new(url, &config, &epochs, &nodes, i == home)?;
                    shards.push(shard);
                    tasks.push(task);
                }
                let engine = Engine::Sharded {
                    shards,
                    route,
                    home,
                };
                (engine, Tasks::Sharded(tasks))
            }
            Topology::Cluster(seeds) => {
                let (cluster, task) = cluster::Cluster::new(seeds, &config, &epochs)?;
                (Engine::Cluster(cluster), Tasks::Cluster(task))
            }
            Topology::Nats(_) if !config.history.is_empty() => {
                return Err(invalid(
                    "history is kept in Redis; with NATS, channels keep none (give broker.redis for history)",
                ));
            }
            Topology::Nats(servers) => {
                let (nats, task) = nats::Nats::new(servers, &config)?;
                (Engine::Nats(nats), Tasks::Nats(task))
            }
        };
        // Where the presence task's commands run, and the nodes' view its
        // evictions follow.
        let presence = match (&engine, config.presence.is_empty()) {
            (_, true) => None,
            (Engine::Nats(_), false) => {
                return Err(invalid(
                    "presence is kept in Redis; NATS does not keep it (give broker.redis or broker.cluster)",
                ));
            }
            (Engine::Cluster(cluster), false) => Some(cluster.presence_store(&config)),
            (
                Engine::Sharded {
                    shards,
                    route,
                    home,
                },
                false,
            ) => {
                let readers: Vec<Arc<Reader>> = shards.iter().map(|s| s.reader.clone()).collect();
                let route = route.clone();
                let store = presence_store::Servers {
                    route: Arc::new(move |c| readers[route.pick(c)].clone()),
                    home: shards[*home].reader.clone(),
                    timeout: config.connect_timeout,
                };
                let store: Box<dyn presence_store::Store> = Box::new(store);
                Some((store, shards[*home].shared.nodes.clone()))
            }
        };
        let presence = presence.map(|(store, nodes)| {
            let (commands, receiver) = mpsc::unbounded_channel();
            let task = presence::Task::new(config.clone(), store, node, Some(nodes));
            (Presences { commands }, handle.spawn(task.run(receiver)))
        });
        let (presence, presence_task) = match presence {
            Some((presence, task)) => (Some(presence), Some(task)),
            None => (None, None),
        };
        let thread = {
            let (config, weak) = (config.clone(), weak.clone());
            std::thread::Builder::new()
                .name("switchboard-broker".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        match tasks {
                            Tasks::Sharded(tasks) => {
                                let running = tasks.into_iter().map(|task| {
                                    tokio::spawn(task.run(
                                        config.clone(),
                                        node,
                                        weak.clone(),
                                        stats.clone(),
                                    ))
                                });
                                let running: Vec<_> = running.collect();
                                for task in running {
                                    let _ = task.await;
                                }
                            }
                            Tasks::Cluster(task) => task.run(config, node, weak, stats).await,
                            Tasks::Nats(task) => task.run(config, node, weak, stats).await,
                        }
                        // Its goodbye (the leaves) is written before the
                        // thread ends.
                        if let Some(task) = presence_task {
                            let _ = task.await;
                        }
                    });
                })?
        };
        let broker = Arc::new(Self {
            config,
            node,
            engine,
            thread: Mutex::new(Some(thread)),
            runtime: handle,
            epochs,
            server: weak,
            presence,
        });
        server.attach_bridge(broker.clone());
        Ok(broker)
    }

    /// This node's id in the messages it publishes.
    pub fn node_id(&self) -> u64 {
        self.node
    }

    /// Every Redis server (or every slot's master) is connected.
    fn available(&self) -> bool {
        match &self.engine {
            Engine::Sharded { shards, .. } => shards.iter().all(|s| s.shared.available()),
            Engine::Cluster(cluster) => cluster.available(),
            Engine::Nats(nats) => nats.available(),
        }
    }
}

/// The broker thread's side of the engine.
enum Tasks {
    Sharded(Vec<shard::ShardTasks>),
    Cluster(cluster::ClusterTasks),
    Nats(nats::NatsTasks),
}

impl Bridge for Broker {
    fn publish(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> Result<(), BridgeError> {
        match &self.engine {
            Engine::Sharded { shards, route, .. } => {
                let (message, history) = self.with_history(channel, data, binary, exclude);
                shards[route.pick(channel)].publish(
                    self.config.redis_channel(channel),
                    message,
                    history,
                )
            }
            Engine::Cluster(cluster) => {
                let (message, history) = self.with_history(channel, data, binary, exclude);
                cluster.publish(self.config.redis_channel(channel), message, history)
            }
            Engine::Nats(nats) => {
                nats.publish(channel, wire::encode(self.node, binary, exclude, data))
            }
        }
    }

    fn channels_changed(&self, changes: Vec<ChannelChange>) {
        match &self.engine {
            Engine::Sharded { shards, .. } if shards.len() == 1 => {
                shards[0].channels_changed(changes)
            }
            Engine::Sharded { shards, route, .. } => {
                // Each server learns of its own channels' changes, in order.
                let mut split: Vec<Vec<ChannelChange>> = vec![Vec::new(); shards.len()];
                for change in changes {
                    let name = match &change {
                        ChannelChange::Created(name) | ChannelChange::Removed(name) => name,
                    };
                    split[route.pick(name)].push(change);
                }
                for (shard, changes) in shards.iter().zip(split) {
                    if !changes.is_empty() {
                        shard.channels_changed(changes);
                    }
                }
            }
            Engine::Cluster(cluster) => cluster.channels_changed(changes),
            Engine::Nats(nats) => nats.channels_changed(changes),
        }
    }

    fn wait_ready(&self, timeout: std::time::Duration) -> bool {
        // Polled: this runs once per `listen()`, on a pool thread, and
        // waits a connection's set-up at most; a condition variable shared
        // with the Tokio tasks would cost every state change a lock.
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.available() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn shutdown(&self) {
        let Some(thread) = self.thread.lock().take() else {
            return;
        };
        // Publishes accepted so far still go out (to the other servers);
        // then this server unsubscribes. The subscriber tasks bound both
        // (`connect_timeout` each), so joining cannot hang on a dead Redis.
        if let Some(presence) = &self.presence {
            let _ = presence.commands.send(PresenceCommand::Shutdown);
        }
        match &self.engine {
            Engine::Sharded { shards, .. } => shards.iter().for_each(Shard::shutdown),
            Engine::Cluster(cluster) => cluster.shutdown(),
            Engine::Nats(nats) => nats.shutdown(),
        }
        let _ = thread.join();
    }

    fn forward(&self, commands: &[(Destination, NodeCommand<'_>)]) -> Result<(), BridgeError> {
        match &self.engine {
            Engine::Sharded { shards, home, .. } => shards[*home].forward(&self.config, commands),
            Engine::Cluster(cluster) => cluster.forward(&self.config, commands),
            Engine::Nats(nats) => nats.forward(commands),
        }
    }

    fn nodes(&self) -> NodesView {
        let ttl = self.config.node_ttl;
        match &self.engine {
            Engine::Sharded { shards, home, .. } => shards[*home].shared.nodes.view(ttl),
            Engine::Cluster(cluster) => cluster.nodes(ttl),
            Engine::Nats(nats) => nats.nodes(ttl),
        }
    }

    fn presence_filter(&self) -> Option<MemberFilter> {
        self.presence
            .as_ref()
            .map(|_| Self::presence_filter_of(&self.config))
    }

    fn members_changed(&self, changes: Vec<MemberChange>) {
        if let Some(presence) = &self.presence {
            let _ = presence.commands.send(PresenceCommand::Members(changes));
        }
    }

    fn set_presence_info(&self, subscriber: u64, info: Vec<u8>) {
        if let Some(presence) = &self.presence {
            let _ = presence
                .commands
                .send(PresenceCommand::Info(subscriber, info));
        }
    }

    fn presence(&self, channel: &str, reply: Reply<Presence>) {
        self.read_presence(channel, reply)
    }

    fn sessions_refusal(&self) -> Option<&'static str> {
        self.sessions_refusal_of()
    }

    fn session(&self, command: SessionCommand, reply: Reply<Option<Vec<u8>>>) {
        self.session_of(command, reply)
    }

    fn history(
        &self,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<HistoryPage>,
    ) {
        self.read_history(channel, since, limit, reply)
    }

    fn recover(
        &self,
        subscriber: u64,
        channel: &str,
        since: Option<Position>,
        limit: usize,
        reply: Reply<Recovery>,
    ) {
        self.replay(subscriber, channel, since, limit, reply)
    }
}

impl Broker {
    fn presence_filter_of(config: &Arc<BrokerConfig>) -> MemberFilter {
        let config = config.clone();
        MemberFilter(Arc::new(move |channel| config.presence_logged(channel)))
    }

    /// A publish as Redis takes it: the encoded message, and for a channel
    /// with history what the append script needs (the script gives the
    /// run's batch its position, `wire.rs`).
    fn with_history(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> (Vec<u8>, Option<Box<Append>>) {
        let message = wire::encode(self.node, binary, exclude, data);
        let history = self.config.history_of(channel).map(|rule| {
            Box::new(Append {
                keys: self.config.history_keys(channel),
                size: rule.size,
                ttl: rule.ttl.as_secs().max(1),
                epoch: self.epochs.offer(),
            })
        });
        (message, history)
    }
}

fn invalid(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message.to_string())
}

/// A random node id from the OS: two nodes must not take each other's
/// messages for their own (the excluded connection applies only on the
/// origin).
fn random_node_id() -> std::io::Result<u64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(u64::from_le_bytes(bytes))
}
