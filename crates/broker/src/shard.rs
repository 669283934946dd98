//! One standalone Redis server and this node's two connections to it: the
//! command connection (`publisher`) and the pub/sub connection
//! (`subscriber`), with their shared state. A sharded broker has one per
//! server, each with its own queue, reconnection and back-off, so a server
//! that is down costs only its own channels.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use switchboard_pubsub::ChannelChange;
use switchboard_runtime::stats::Stats;
use switchboard_runtime::{BridgeError, Server};
use tokio::sync::mpsc;

use crate::history::{Epochs, Reader};
use crate::nodes::{self, Nodes};
use crate::{publisher, subscriber, Append, BrokerConfig, Command, Outgoing, Shared};
use switchboard_runtime::{Destination, NodeCommand};

/// The callers' side of one server.
pub(crate) struct Shard {
    pub(crate) shared: Arc<Shared>,
    /// Reads the histories of this server's channels.
    pub(crate) reader: Arc<Reader>,
    publishes: mpsc::Sender<Outgoing>,
    commands: mpsc::UnboundedSender<Command>,
}

/// The broker thread's side of one server: what its tasks need.
pub(crate) struct ShardTasks {
    client: redis::Client,
    shared: Arc<Shared>,
    reader: Arc<Reader>,
    /// This shard carries the nodes' keys and channels.
    home: bool,
    publishes: mpsc::Receiver<Outgoing>,
    commands: mpsc::UnboundedReceiver<Command>,
}

impl Shard {
    pub(crate) fn new(
        url: &str,
        config: &Arc<BrokerConfig>,
        epochs: &Arc<Epochs>,
        nodes: &Arc<Nodes>,
        home: bool,
    ) -> std::io::Result<(Self, ShardTasks)> {
        let client = redis::Client::open(url).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{url}: {e}"))
        })?;
        let shared = Arc::new(Shared {
            nodes: nodes.clone(),
            ..Shared::default()
        });
        let (publishes, publish_rx) = mpsc::channel(config.max_pending_publishes.max(1));
        // Unbounded on purpose: a registry change cannot be refused (it is
        // reported under the registry's lock, which must not wait), and the
        // task coalesces them; there is at most one entry per change.
        let (commands, command_rx) = mpsc::unbounded_channel();
        let reader = Arc::new(Reader::new(client.clone(), config.clone(), epochs.clone()));
        let tasks = ShardTasks {
            client,
            shared: shared.clone(),
            reader: reader.clone(),
            home,
            publishes: publish_rx,
            commands: command_rx,
        };
        Ok((
            Self {
                shared,
                reader,
                publishes,
                commands,
            },
            tasks,
        ))
    }

    /// Queue a publish to `redis_channel` (refused at once when this
    /// server is not connected, or its queue is full).
    pub(crate) fn publish(
        &self,
        channel: Vec<u8>,
        message: Vec<u8>,
        history: Option<Box<Append>>,
    ) -> Result<(), BridgeError> {
        if !self.shared.available() {
            return Err(BridgeError::Unavailable);
        }
        let outgoing = Outgoing {
            channel,
            message,
            history,
            ticket: self.shared.requested.load(Ordering::Acquire),
        };
        self.publishes.try_send(outgoing).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => BridgeError::Backlog,
            mpsc::error::TrySendError::Closed(_) => BridgeError::Unavailable,
        })
    }

    /// Operations on other nodes' connections, on this (the home) shard's
    /// publish queue: they keep their order with its publishes.
    pub(crate) fn forward(
        &self,
        config: &BrokerConfig,
        commands: &[(Destination, NodeCommand<'_>)],
    ) -> Result<(), BridgeError> {
        nodes::forward(config, &self.shared, &self.publishes, commands)
    }

    /// Registry changes of this server's channels, in order.
    pub(crate) fn channels_changed(&self, changes: Vec<ChannelChange>) {
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

    /// Begin the goodbye: refuse new publishes, let the publisher send
    /// what it accepted, and the subscriber unsubscribe.
    pub(crate) fn shutdown(&self) {
        self.shared.closing.store(true, Ordering::Release);
        self.shared.close.notify_one();
        let _ = self.commands.send(Command::Shutdown);
    }
}

impl ShardTasks {
    /// Run this server's two tasks (on the broker's thread) until the
    /// goodbye is done.
    pub(crate) async fn run(
        self,
        config: Arc<BrokerConfig>,
        node: u64,
        server: Weak<Server>,
        stats: Arc<Stats>,
    ) {
        // The home shard claims a number first: no publish is accepted
        // before it (`Nodes::ready`), and ids carry it from then on.
        let heartbeat = if self.home {
            let Some(connection) = nodes::claim(&self.client, &config, &self.shared).await else {
                return;
            };
            if let Some(server) = server.upgrade() {
                server.set_node(self.shared.nodes.number());
            }
            Some(tokio::spawn(nodes::heartbeat(
                self.client.clone(),
                config.clone(),
                self.shared.clone(),
                connection,
            )))
        } else {
            None
        };
        let publisher = tokio::spawn(publisher::run(
            self.client.clone(),
            config.clone(),
            self.shared.clone(),
            stats,
            self.publishes,
        ));
        let links = subscriber::Links {
            shared: self.shared.clone(),
            server,
            reader: self.reader,
            publisher,
            home: self.home,
        };
        subscriber::run(self.client, config.clone(), node, links, self.commands).await;
        if let Some(heartbeat) = heartbeat {
            nodes::leave(&config, &self.shared, heartbeat).await;
        }
    }
}
