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
//! (options), `wire` (the message format), `publisher` (the `PUBLISH`
//! connection), `subscriber` (the subscription set and its connection),
//! `nodes` (this node's number, its heartbeat, operations on other nodes'
//! connections) and `node_wire` (their message format), `backoff`.

mod backoff;
mod config;
pub mod node_wire;
mod nodes;
mod publisher;
mod subscriber;
pub mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use switchboard_pubsub::ChannelChange;
use switchboard_runtime::{Bridge, BridgeError, Destination, NodeCommand, NodesView, Server};
use tokio::sync::mpsc;

pub use config::BrokerConfig;

/// What the broker's thread and the callers share.
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
    pub(crate) nodes: nodes::Nodes,
}

impl Shared {
    fn available(&self) -> bool {
        self.publisher_up.load(Ordering::Acquire)
            && self.subscriber_up.load(Ordering::Acquire)
            && !self.closing.load(Ordering::Acquire)
            && self.nodes.number() != 0
    }
}

/// A publish on its way to Redis: the Redis channel and the encoded message.
pub(crate) struct Outgoing {
    pub(crate) channel: Vec<u8>,
    pub(crate) message: Vec<u8>,
    /// The subscription ticket to wait for (`Shared::requested`).
    pub(crate) ticket: u64,
}

/// What the subscriber task is told.
pub(crate) enum Command {
    /// Registry changes, and the ticket that covers them.
    Changes(Vec<ChannelChange>, u64),
    /// Unsubscribe from everything and stop.
    Shutdown,
}

/// The Redis engine of one server.
pub struct Broker {
    config: Arc<BrokerConfig>,
    node: u64,
    shared: Arc<Shared>,
    publishes: mpsc::Sender<Outgoing>,
    commands: mpsc::UnboundedSender<Command>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Broker {
    /// Start the broker's thread for `server` and attach it. Connecting
    /// happens on that thread; until it succeeds publishes fail with
    /// `ERR_BROKER_UNAVAILABLE`.
    pub fn attach(server: &Arc<Server>, config: BrokerConfig) -> std::io::Result<Arc<Self>> {
        let client = redis::Client::open(config.url.as_str())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let config = Arc::new(config);
        let node = random_node_id()?;
        let shared = Arc::new(Shared::default());
        let (publishes, publish_rx) = mpsc::channel(config.max_pending_publishes.max(1));
        // Unbounded on purpose: a registry change cannot be refused (it is
        // reported under the registry's lock, which must not wait), and the
        // task coalesces them; there is at most one entry per change.
        let (commands, command_rx) = mpsc::unbounded_channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Ids of this node start at a random point (`ids.rs`), and carry
        // its number once it is claimed.
        server.seed_ids(nodes::random_id_start());
        let weak: Weak<Server> = Arc::downgrade(server);
        let stats = server.state().stats.clone();
        let thread = {
            let (config, shared) = (config.clone(), shared.clone());
            std::thread::Builder::new()
                .name("switchboard-broker".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        // A number first: nothing is accepted before it.
                        let Some(connection) = nodes::claim(&client, &config, &shared).await else {
                            return;
                        };
                        if let Some(server) = weak.upgrade() {
                            server.set_node(shared.nodes.number());
                        }
                        let heartbeat = tokio::spawn(nodes::heartbeat(
                            client.clone(),
                            config.clone(),
                            shared.clone(),
                            connection,
                        ));
                        let publisher = tokio::spawn(publisher::run(
                            client.clone(),
                            config.clone(),
                            shared.clone(),
                            stats,
                            publish_rx,
                        ));
                        subscriber::run(
                            client,
                            config.clone(),
                            shared.clone(),
                            node,
                            weak,
                            command_rx,
                            publisher,
                        )
                        .await;
                        nodes::leave(&config, &shared, heartbeat).await;
                    });
                })?
        };
        let broker = Arc::new(Self {
            config,
            node,
            shared,
            publishes,
            commands,
            thread: Mutex::new(Some(thread)),
        });
        server.attach_bridge(broker.clone());
        Ok(broker)
    }

    /// This node's id in the messages it publishes.
    pub fn node_id(&self) -> u64 {
        self.node
    }
}

impl Bridge for Broker {
    fn publish(
        &self,
        channel: &str,
        data: &[u8],
        binary: bool,
        exclude: Option<u64>,
    ) -> Result<(), BridgeError> {
        if !self.shared.available() {
            return Err(BridgeError::Unavailable);
        }
        let outgoing = Outgoing {
            channel: self.config.redis_channel(channel),
            message: wire::encode(self.node, binary, exclude, data),
            ticket: self.shared.requested.load(Ordering::Acquire),
        };
        self.publishes.try_send(outgoing).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => BridgeError::Backlog,
            mpsc::error::TrySendError::Closed(_) => BridgeError::Unavailable,
        })
    }

    fn channels_changed(&self, changes: Vec<ChannelChange>) {
        let joined = changes
            .iter()
            .any(|c| matches!(c, ChannelChange::Created(_)));
        let ticket = if joined {
            self.shared.requested.fetch_add(1, Ordering::AcqRel) + 1
        } else {
            self.shared.requested.load(Ordering::Acquire)
        };
        // A closed receiver means the broker stopped: nothing to mirror.
        let _ = self.commands.send(Command::Changes(changes, ticket));
    }

    fn wait_ready(&self, timeout: std::time::Duration) -> bool {
        // Polled: this runs once per `listen()`, on a pool thread, and
        // waits a connection's set-up at most; a condition variable shared
        // with the Tokio tasks would cost every state change a lock.
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.shared.available() {
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
        // then this server unsubscribes. The subscriber task bounds both
        // (`connect_timeout` each), so joining cannot hang on a dead Redis.
        self.shared.closing.store(true, Ordering::Release);
        self.shared.close.notify_one();
        let _ = self.commands.send(Command::Shutdown);
        let _ = thread.join();
    }

    fn forward(&self, commands: &[(Destination, NodeCommand<'_>)]) -> Result<(), BridgeError> {
        nodes::forward(&self.config, &self.shared, &self.publishes, commands)
    }

    fn nodes(&self) -> NodesView {
        self.shared.nodes.view(self.config.node_ttl)
    }
}

/// A random node id from the OS: two nodes must not take each other's
/// messages for their own (the excluded connection applies only on the
/// origin).
fn random_node_id() -> std::io::Result<u64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(u64::from_le_bytes(bytes))
}
