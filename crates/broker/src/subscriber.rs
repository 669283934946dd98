//! The pub/sub connection: this node's subscriptions in Redis, mirrored
//! from the registry, and the messages that come back.
//!
//! Policy (docs/scale-out.md): a channel is subscribed when it gets its
//! first local subscriber; when its last one leaves, it is unsubscribed
//! `unsubscribe_delay` later unless someone subscribed again meanwhile.
//! Every change that is waiting when the task wakes goes out in one
//! `SUBSCRIBE` and one `UNSUBSCRIBE` (in chunks of `CHUNK` names). After
//! a lost connection, every channel that has local subscribers is
//! subscribed again on the new one, and the channels with history are
//! brought up to date from it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use redis::aio::PubSubSink;
use switchboard_pubsub::ChannelChange;
use switchboard_runtime::Server;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::history::Reader;
use crate::inbound::{Gone, Inbound};
use crate::probe::Probe;
use crate::{BrokerConfig, Command, Shared};

/// Names per SUBSCRIBE or UNSUBSCRIBE: one command stays well under Redis's
/// argument limits and a resubscription of many channels is a few
/// round trips.
pub(crate) const CHUNK: usize = 512;

/// What this node wants from Redis, apart from any connection.
#[derive(Default)]
pub(crate) struct Wanted {
    /// Channels with local subscribers.
    pub(crate) channels: HashSet<Arc<str>>,
    /// Channels whose last local subscriber left, and when they are due to
    /// be unsubscribed.
    pub(crate) leaving: HashMap<Arc<str>, Instant>,
}

impl Wanted {
    pub(crate) fn apply(&mut self, changes: Vec<ChannelChange>, delay: Duration) {
        let now = Instant::now();
        for change in changes {
            match change {
                ChannelChange::Created(name) => {
                    self.leaving.remove(&name);
                    self.channels.insert(name);
                }
                ChannelChange::Removed(name) => {
                    self.channels.remove(&name);
                    self.leaving.insert(name, now + delay);
                }
            }
        }
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.leaving.values().min().copied()
    }
}

/// What the task works with besides its own connection.
pub(crate) struct Links {
    pub(crate) shared: Arc<Shared>,
    pub(crate) server: Weak<Server>,
    /// Reads histories, to fill gaps.
    pub(crate) reader: Arc<Reader>,
    /// The publisher, awaited at shutdown.
    pub(crate) publisher: tokio::task::JoinHandle<()>,
    /// This shard carries the node channels (`nodes.rs`).
    pub(crate) home: bool,
}

/// The task: connect, subscribe what is wanted, deliver what arrives, keep
/// the subscriptions in step, and start again when the connection is lost.
pub(crate) async fn run(
    client: redis::Client,
    config: Arc<BrokerConfig>,
    node: u64,
    links: Links,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let Links {
        shared,
        server,
        reader,
        publisher,
        home,
    } = links;
    let mut publisher = Some(publisher);
    // The probe publishes through the same query connection.
    let probe_reader = reader.clone();
    let mut inbound = Inbound::new(config.clone(), node, server, reader);
    let mut probe = Probe::new(&config, node);
    let mut wanted = Wanted::default();
    // The highest ticket among the changes applied to `wanted`.
    let mut ticket = 0;
    let mut backoff = Backoff::new(config.max_reconnect_delay);
    loop {
        let connect = client.get_async_pubsub();
        let mut subscribed: HashSet<Arc<str>> = HashSet::new();
        let connected = match tokio::time::timeout(config.connect_timeout, connect).await {
            Ok(Ok(pubsub)) => {
                let (mut sink, stream) = pubsub.split();
                // Channels waiting out their delay are not needed on a new
                // connection: they are simply not subscribed again.
                wanted.leaving.clear();
                // The home shard also carries this node's own channels.
                let own = if home {
                    crate::nodes::subscribe(&mut sink, &config, &shared).await
                } else {
                    Ok(())
                };
                let synced = match own {
                    Ok(()) => sync(&mut sink, &config, &mut wanted, &mut subscribed).await,
                    Err(()) => Err(()),
                };
                let probed = match Probe::interval(&config) {
                    Some(_) => sink.subscribe(probe.channel()).await.is_ok(),
                    None => true,
                };
                (synced.is_ok() && probed).then_some((sink, stream))
            }
            _ => None,
        };
        let Some((mut sink, mut stream)) = connected else {
            // Wait (a refused SUBSCRIBE too, or this would spin), and keep
            // mirroring the registry meanwhile, so the next connection
            // subscribes what is wanted then.
            let wait = tokio::time::sleep(backoff.next_delay());
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    _ = &mut wait => break,
                    command = commands.recv() => match command {
                        Some(Command::Changes(changes, t)) => {
                            wanted.apply(changes, config.unsubscribe_delay);
                            ticket = ticket.max(t);
                        }
                        Some(Command::Shutdown) | None => return,
                    },
                }
            }
            continue;
        };
        confirm(&shared, ticket);
        shared.subscriber_up.store(true, Ordering::Release);
        shared.epoch.fetch_add(1, Ordering::AcqRel);
        backoff.reset();
        // What was published while this node was away: from the histories.
        inbound.positions.retain(|c| subscribed.contains(c));
        if inbound.catch_up().await.is_err() {
            return;
        }
        probe.reset();
        let mut probes = Probe::interval(&config).map(|every| {
            let mut timer = tokio::time::interval_at(Instant::now() + every, every);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            timer
        });
        loop {
            let probe_due = async {
                match probes.as_mut() {
                    Some(timer) => {
                        timer.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let deadline = wanted.next_deadline();
            let due = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let outcome = tokio::select! {
                message = stream.next() => match message {
                    Some(message) => {
                        // Deliver everything already here as one batch: a
                        // connection's messages of the batch leave in one
                        // write, at the uncork.
                        let mut batch = vec![message];
                        while let Some(Some(message)) = stream.next().now_or_never() {
                            batch.push(message);
                        }
                        batch.retain(|m| !probe.received(m.get_channel_name().as_bytes(), m.get_payload_bytes()));
                        let nodes = home.then_some(&*shared);
                        match deliver(&mut inbound, &config, nodes, &batch).await {
                            Ok(()) => Ok(()),
                            Err(Gone) => return,
                        }
                    }
                    None => Err(()),
                },
                command = commands.recv() => match command {
                    Some(Command::Changes(changes, t)) => {
                        wanted.apply(changes, config.unsubscribe_delay);
                        ticket = ticket.max(t);
                        // Take every change already queued: one batch.
                        loop {
                            match commands.try_recv() {
                                Ok(Command::Changes(more, t)) => {
                                    wanted.apply(more, config.unsubscribe_delay);
                                    ticket = ticket.max(t);
                                }
                                Ok(Command::Shutdown) => {
                                    shared.subscriber_up.store(false, Ordering::Release);
                                    return goodbye(&shared, &mut sink, &config, &subscribed, probe.channel(), publisher.take()).await;
                                }
                                Err(_) => break,
                            }
                        }
                        let synced = sync(&mut sink, &config, &mut wanted, &mut subscribed).await;
                        if synced.is_ok() {
                            confirm(&shared, ticket);
                        }
                        inbound.positions.retain(|c| subscribed.contains(c));
                        synced
                    }
                    Some(Command::Shutdown) | None => {
                        shared.subscriber_up.store(false, Ordering::Release);
                        return goodbye(&shared, &mut sink, &config, &subscribed, probe.channel(), publisher.take()).await;
                    }
                },
                _ = probe_due => probe.tick(&probe_reader, config.connect_timeout).await.map_err(|_| ()),
                _ = due => {
                    let synced = sync(&mut sink, &config, &mut wanted, &mut subscribed).await;
                    inbound.positions.retain(|c| subscribed.contains(c));
                    synced
                }
            };
            if outcome.is_err() {
                break;
            }
        }
        shared.subscriber_up.store(false, Ordering::Release);
        shared.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// Redis confirmed the subscriptions of every change up to `ticket`:
/// publishes waiting for them may go.
fn confirm(shared: &Shared, ticket: u64) {
    shared.confirmed.fetch_max(ticket, Ordering::AcqRel);
    shared.confirmations.notify_waiters();
}

/// Leave Redis at shutdown: let the publisher send what it accepted, then
/// unsubscribe everything; each within `connect_timeout` (Redis may be
/// gone).
async fn goodbye(
    shared: &Shared,
    sink: &mut PubSubSink,
    config: &BrokerConfig,
    subscribed: &HashSet<Arc<str>>,
    probe_channel: &[u8],
    publisher: Option<tokio::task::JoinHandle<()>>,
) {
    // Nothing more will be subscribed here: publishes waiting for a
    // subscription of this server (`Shared::requested`) go to the others.
    confirm(shared, u64::MAX);
    if let Some(publisher) = publisher {
        let _ = tokio::time::timeout(config.connect_timeout, publisher).await;
    }
    let mut all: Vec<Vec<u8>> = subscribed.iter().map(|c| config.redis_channel(c)).collect();
    all.push(probe_channel.to_vec());
    let _ = tokio::time::timeout(
        config.connect_timeout,
        chunked(sink, Verb::Unsubscribe, all),
    )
    .await;
}

/// Deliver a batch of messages corked: a connection's messages of the
/// batch leave in one write, at the uncork. On the home shard (`nodes`),
/// this node's own channels carry operations on its connections and the
/// other nodes' heartbeats (`nodes.rs`).
async fn deliver(
    inbound: &mut Inbound,
    config: &BrokerConfig,
    nodes: Option<&Shared>,
    batch: &[redis::Msg],
) -> Result<(), Gone> {
    let server = inbound.server()?;
    switchboard_runtime::cork();
    for message in batch {
        if let Some(shared) = nodes {
            if crate::nodes::is_node_message(config, message) {
                crate::nodes::handle(&server, shared, message.get_payload_bytes());
                continue;
            }
        }
        let channel = message.get_channel_name().as_bytes();
        inbound
            .deliver(&server, channel, message.get_payload_bytes())
            .await;
    }
    switchboard_runtime::uncork();
    Ok(())
}

/// Bring Redis in step with `wanted`: subscribe what is wanted and not
/// subscribed; unsubscribe what is due and not wanted again.
async fn sync(
    sink: &mut PubSubSink,
    config: &BrokerConfig,
    wanted: &mut Wanted,
    subscribed: &mut HashSet<Arc<str>>,
) -> Result<(), ()> {
    let now = Instant::now();
    let mut leave = Vec::new();
    wanted.leaving.retain(|name, at| {
        if *at > now {
            return true;
        }
        if subscribed.remove(name) {
            leave.push(config.redis_channel(name));
        }
        false
    });
    let mut join = Vec::new();
    for name in &wanted.channels {
        if subscribed.insert(name.clone()) {
            join.push(config.redis_channel(name));
        }
    }
    chunked(sink, Verb::Subscribe, join).await?;
    chunked(sink, Verb::Unsubscribe, leave).await
}

enum Verb {
    Subscribe,
    Unsubscribe,
}

async fn chunked(sink: &mut PubSubSink, verb: Verb, names: Vec<Vec<u8>>) -> Result<(), ()> {
    for chunk in names.chunks(CHUNK) {
        let done = match verb {
            Verb::Subscribe => sink.subscribe(chunk).await,
            Verb::Unsubscribe => sink.unsubscribe(chunk).await,
        };
        done.map_err(|_| ())?;
    }
    Ok(())
}
