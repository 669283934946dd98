//! This node's NATS subscriptions, mirrored from the registry, and the
//! messages that come back.
//!
//! Policy as for Redis (`crate::subscriber`): a channel is subscribed with
//! its first local subscriber and unsubscribed `unsubscribe_delay` after
//! its last one left, unless someone subscribed again meanwhile. Each
//! subscription is one NATS subscription (its own SID) with a small
//! forwarding task that moves what arrives, in order, to one queue this
//! task reads: each task wakes only for its own channel's messages, so a
//! message costs the same with ten channels or ten thousand, and what is
//! in the queue when this task wakes is delivered as one corked batch.
//!
//! The client is touched only while connected: changes made while NATS is
//! away are kept in `Wanted` and applied once the `Connected` event comes
//! (the client itself sent the SUBs it already held first). Only then are
//! publishes accepted again, and tickets confirmed.
//!
//! Node messages (this node's subject and the one every node shares,
//! subscribed by `nats/nodes.rs`) come through the same queue and are
//! applied in the same corked batches (`crate::nodes::handle`).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_runtime::Server;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::subscriber::Wanted;
use crate::{wire, BrokerConfig, Command, Shared};

use super::arrivals::{self, Arrival, Source};
use super::subject;

/// Messages delivered in one corked batch, at most.
const BATCH: usize = 256;
/// After a SUB the client could not take (it was closing, or its queue
/// stayed full for `connect_timeout`), try again this much later.
const RETRY: Duration = Duration::from_millis(250);

pub(crate) struct Setup {
    pub(crate) client: async_nats::Client,
    pub(crate) config: Arc<BrokerConfig>,
    pub(crate) node: u64,
    pub(crate) server: Weak<Server>,
    pub(crate) shared: Arc<Shared>,
    /// The client's connection events: `true` connected, `false` lost.
    pub(crate) links: mpsc::UnboundedReceiver<bool>,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) publisher: tokio::task::JoinHandle<()>,
    /// This node's claim and heartbeat (`nats/nodes.rs`), ended at the
    /// goodbye.
    pub(crate) membership: tokio::task::JoinHandle<()>,
    /// What the subscriptions receive (both ends: the node subscriptions
    /// feed it too).
    pub(crate) arrivals: (mpsc::Sender<Arrival>, mpsc::Receiver<Arrival>),
}

struct Task {
    client: async_nats::Client,
    config: Arc<BrokerConfig>,
    node: u64,
    server: Weak<Server>,
    shared: Arc<Shared>,
    wanted: Wanted,
    /// Channels subscribed in the client; dropping the sender makes the
    /// channel's forwarder send the UNSUB and end.
    subscribed: HashMap<Arc<str>, oneshot::Sender<()>>,
    /// The highest ticket among the changes applied to `wanted`.
    ticket: u64,
    connected: bool,
    /// When to try a sync again that could not finish.
    retry_at: Option<Instant>,
    arrivals: mpsc::Sender<Arrival>,
}

pub(crate) async fn run(setup: Setup) {
    let Setup {
        client,
        config,
        node,
        server,
        shared,
        mut links,
        mut commands,
        publisher,
        membership,
        arrivals: (arrivals, mut inbound),
    } = setup;
    let mut task = Task {
        client,
        config,
        node,
        server,
        shared,
        wanted: Wanted::default(),
        subscribed: HashMap::new(),
        ticket: 0,
        connected: false,
        retry_at: None,
        arrivals,
    };
    let mut batch: Vec<Arrival> = Vec::with_capacity(BATCH);
    loop {
        let wake = match (task.wanted.next_deadline(), task.retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let due = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            link = links.recv() => match link {
                Some(true) => {
                    task.connected = true;
                    task.sync().await;
                }
                Some(false) => {
                    task.connected = false;
                    task.shared.subscriber_up.store(false, Ordering::Release);
                }
                None => {}
            },
            command = commands.recv() => {
                let mut shutdown = !matches!(command, Some(Command::Changes(..)));
                if let Some(Command::Changes(changes, t)) = command {
                    task.apply(changes, t);
                    // Take every change already queued: one batch.
                    while let Ok(command) = commands.try_recv() {
                        match command {
                            Command::Changes(more, t) => task.apply(more, t),
                            Command::Shutdown => shutdown = true,
                        }
                    }
                }
                if shutdown {
                    return task.goodbye(publisher, membership).await;
                }
                task.sync().await;
            }
            received = inbound.recv_many(&mut batch, BATCH) => {
                if received == 0 || task.deliver(&mut batch).is_err() {
                    return task.goodbye(publisher, membership).await;
                }
            }
            _ = due => task.sync().await,
        }
    }
}

/// The server went away.
struct Gone;

impl Task {
    fn apply(&mut self, changes: Vec<switchboard_pubsub::ChannelChange>, ticket: u64) {
        self.wanted.apply(changes, self.config.unsubscribe_delay);
        self.ticket = self.ticket.max(ticket);
    }

    /// Bring the client's subscriptions in step with `wanted` (while
    /// connected): unsubscribe what is due, subscribe what is wanted and
    /// missing; then confirm the tickets and accept publishes.
    async fn sync(&mut self) {
        self.retry_at = None;
        if !self.connected {
            return;
        }
        let now = Instant::now();
        let subscribed = &mut self.subscribed;
        self.wanted.leaving.retain(|name, at| {
            if *at > now {
                return true;
            }
            // Dropping the sender stops the forwarder, which unsubscribes.
            subscribed.remove(name);
            false
        });
        let missing: Vec<Arc<str>> = self
            .wanted
            .channels
            .iter()
            .filter(|name| !self.subscribed.contains_key(*name))
            .cloned()
            .collect();
        for name in missing {
            let subject = subject::subject(&self.config.prefix, &name);
            let subscribe = self.client.subscribe(subject);
            let subscriber =
                match tokio::time::timeout(self.config.connect_timeout, subscribe).await {
                    Ok(Ok(subscriber)) => subscriber,
                    _ => {
                        self.retry_at = Some(Instant::now() + RETRY);
                        return;
                    }
                };
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(arrivals::forward(
                Source::Channel(name.clone()),
                subscriber,
                stopped,
                self.arrivals.clone(),
            ));
            self.subscribed.insert(name, stop);
        }
        // Every SUB wanted up to `ticket` is queued in the client, ahead of
        // any PUB queued from now on.
        crate::cluster::confirm(&self.shared, self.ticket);
        if self.connected {
            self.shared.subscriber_up.store(true, Ordering::Release);
        }
    }

    /// Deliver a batch corked: a connection's messages of the batch leave
    /// in one write, at the uncork. No position: NATS keeps no history.
    fn deliver(&self, batch: &mut Vec<Arrival>) -> Result<(), Gone> {
        let server = self.server.upgrade().ok_or(Gone)?;
        switchboard_runtime::cork();
        for (source, payload) in batch.drain(..) {
            let channel = match source {
                Source::Channel(channel) => channel,
                Source::Nodes => {
                    crate::nodes::handle(&server, &self.shared, &payload);
                    continue;
                }
            };
            let Some(decoded) = wire::decode(&payload) else {
                continue;
            };
            // The excluded connection is one of the origin's.
            let exclude = decoded.exclude.filter(|_| decoded.origin == self.node);
            server.deliver(&channel, decoded.payload, decoded.binary, exclude, None);
        }
        switchboard_runtime::uncork();
        Ok(())
    }

    /// Leave NATS at shutdown: the publisher sends what it accepted, the
    /// node says goodbye, then every subscription is dropped (`drain`:
    /// UNSUB for each, then the connection closes); each step within
    /// `connect_timeout`.
    async fn goodbye(
        mut self,
        publisher: tokio::task::JoinHandle<()>,
        membership: tokio::task::JoinHandle<()>,
    ) {
        self.shared.subscriber_up.store(false, Ordering::Release);
        // Nothing more will be subscribed here: publishes waiting for a
        // subscription of this node go to the others.
        crate::cluster::confirm(&self.shared, u64::MAX);
        let timeout = self.config.connect_timeout;
        let _ = tokio::time::timeout(timeout, publisher).await;
        super::nodes::leave(&self.client, &self.config, &self.shared, membership).await;
        let client = self.client.clone();
        let leave = async move {
            client.flush().await.ok()?;
            client.drain().await.ok()?;
            // Ends with an error once the drained connection closed.
            client.flush().await.ok()
        };
        let _ = tokio::time::timeout(timeout, leave).await;
        self.subscribed.clear();
    }
}
