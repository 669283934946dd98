//! One standalone Redis server and this node's two connections to it: the
//! command connection (`publisher`) and the pub/sub connection
//! (`subscriber`), with their shared state. A sharded broker has one per
//! server, each with its own queue, reconnection and back-off, so a server
//! that is down costs only its own channels.

use std::sync::{Arc, Weak};

use switchboard_pubsub::ChannelChange;
use switchboard_runtime::stats::Stats;
use switchboard_runtime::{BridgeError, Server};

use crate::history::{Epochs, Reader};
use crate::nodes::{self, Nodes};
use crate::queues::{Queues, Receivers};
use crate::{publisher, subscriber, Append, BrokerConfig, Shared};
use switchboard_runtime::{Destination, NodeCommand};

/// The callers' side of one server.
pub(crate) struct Shard {
    pub(crate) shared: Arc<Shared>,
    /// Reads the histories of this server's channels.
    pub(crate) reader: Arc<Reader>,
    queues: Queues,
}

/// The broker thread's side of one server: what its tasks need.
pub(crate) struct ShardTasks {
    client: redis::Client,
    shared: Arc<Shared>,
    reader: Arc<Reader>,
    /// This shard carries the nodes' keys and channels.
    home: bool,
    queues: Receivers,
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
        let (queues, receivers) = Queues::new(config);
        // Presence writes share this connection (`presence.rs`).
        let scripts = match config.presence.is_empty() {
            true => Vec::new(),
            false => crate::presence_scripts::scripts(false).sources(),
        };
        let reader = Arc::new(Reader::new(
            client.clone(),
            config.clone(),
            epochs.clone(),
            scripts,
        ));
        let tasks = ShardTasks {
            client,
            shared: shared.clone(),
            reader: reader.clone(),
            home,
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

    /// Queue a publish to `redis_channel` (refused at once when this
    /// server is not connected, or its queue is full).
    pub(crate) fn publish(
        &self,
        channel: Vec<u8>,
        message: Vec<u8>,
        history: Option<Box<Append>>,
    ) -> Result<(), BridgeError> {
        self.queues.publish(&self.shared, channel, message, history)
    }

    /// Operations on other nodes' connections, on this (the home) shard's
    /// publish queue: they keep their order with its publishes.
    pub(crate) fn forward(
        &self,
        config: &BrokerConfig,
        commands: &[(Destination, NodeCommand<'_>)],
    ) -> Result<(), BridgeError> {
        nodes::forward(config, &self.shared, self.queues.publishes(), commands)
    }

    /// Registry changes of this server's channels, in order.
    pub(crate) fn channels_changed(&self, changes: Vec<ChannelChange>) {
        self.queues.channels_changed(&self.shared, changes);
    }

    /// Begin the goodbye: refuse new publishes, let the publisher send
    /// what it accepted, and the subscriber unsubscribe.
    pub(crate) fn shutdown(&self) {
        self.queues.shutdown(&self.shared);
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
            self.queues.publishes,
        ));
        let links = subscriber::Links {
            shared: self.shared.clone(),
            server,
            reader: self.reader,
            publisher,
            home: self.home,
        };
        subscriber::run(
            self.client,
            config.clone(),
            node,
            links,
            self.queues.commands,
        )
        .await;
        if let Some(heartbeat) = heartbeat {
            nodes::leave(&config, &self.shared, heartbeat).await;
        }
    }
}
