//! NATS as the broker (docs/scale-out.md, "NATS"): core NATS pub/sub for
//! channel traffic between nodes, no history (a channel with history is
//! refused at start-up).
//!
//! - `subject`: channel names as NATS subjects and back (an escaping that
//!   keeps `.` as NATS's token separator and leaves no wildcard token).
//! - `subscriber`: the subscription set, mirrored from the registry as for
//!   Redis (`crate::subscriber::Wanted`), one NATS subscription per channel
//!   with local subscribers, and the messages that come back, delivered
//!   corked by the native fan-out.
//! - `arrivals`: the queue the subscriptions (channels and node subjects)
//!   feed and the subscriber delivers from.
//! - `publisher`: every publish of this node, in order, on the same client.
//! - `nodes`: this node's number (claimed by the rules of `claim`, pure,
//!   with the notes of `note`), its heartbeat and goodbye; node messages
//!   use `crate::nodes` as with Redis, on the subjects of
//!   `subject::node_subject`.
//!
//! **One connection for both directions.** Redis needs a separate
//! connection for pub/sub, so a `PUBLISH` could overtake the `SUBSCRIBE` of
//! a channel's first local subscriber, and publishes wait for Redis to
//! confirm it (a round trip). A NATS server reads one connection's
//! protocol lines in order, and the `async-nats` client writes its commands
//! (SUB, PUB, UNSUB) in the order they entered its one command queue. So
//! the ticket rule (`Shared::requested`) is kept, but a ticket is
//! confirmed as soon as the SUB is *queued* on the client, before any PUB
//! that waits for it: subscribe-then-publish on one node reaches the new
//! subscriber with no round trip.
//!
//! **Reconnection is the client's.** `async-nats` reconnects on its own
//! (with our back-off: `reconnect_delay`) and, on the new connection,
//! sends the SUB of every subscription it holds before any command queued
//! meanwhile. Its events drive `available`: `Disconnected` refuses
//! publishes at once; `Connected` makes the subscriber task apply the
//! changes the registry made meanwhile (it touches the client only while
//! connected) and then accept publishes again.

mod arrivals;
mod claim;
mod nodes;
mod note;
mod publisher;
pub(crate) mod subject;
mod subscriber;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_pubsub::ChannelChange;
use switchboard_runtime::stats::Stats;
use switchboard_runtime::{BridgeError, Destination, NodeCommand, NodesView, Server};
use tokio::sync::mpsc;

use crate::queues::{Queues, Receivers};
use crate::{BrokerConfig, Shared};

/// Commands (PUB, SUB, UNSUB) queued in the client for its connection, at
/// most: the client's own queue. Publishes are bounded before it by
/// `maxPendingPublishes`, and subscriptions are changed only while
/// connected, so this is a burst allowance, not a store; 2,048 (the
/// client's default) would make a resubscription of many channels wait.
const CLIENT_CAPACITY: usize = 65_536;
/// How often the client pings an idle server: after two unanswered pings
/// the connection is given up. 5 s (the client's default is 60 s): a
/// server that vanished without closing its sockets is noticed within
/// about 15 s, for one small frame per 5 s.
const PING_INTERVAL: Duration = Duration::from_secs(5);

/// The callers' side.
pub(crate) struct Nats {
    shared: Arc<Shared>,
    prefix: String,
    queues: Queues,
}

/// The broker thread's side.
pub(crate) struct NatsTasks {
    servers: Vec<async_nats::ServerAddr>,
    shared: Arc<Shared>,
    queues: Receivers,
}

impl Nats {
    pub(crate) fn new(
        urls: &[String],
        config: &BrokerConfig,
    ) -> std::io::Result<(Self, NatsTasks)> {
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        if urls.is_empty() {
            return Err(invalid("no NATS server given".into()));
        }
        if !subject::valid_prefix(&config.prefix) {
            return Err(invalid(format!(
                "prefix {:?} is not the start of a NATS subject (printable ASCII without space, `*`, `>`, `$` or `%`; no empty token)",
                config.prefix
            )));
        }
        let mut servers = Vec::with_capacity(urls.len());
        for url in urls {
            let server = url
                .parse::<async_nats::ServerAddr>()
                .map_err(|e| invalid(format!("{url}: {e}")))?;
            servers.push(server);
        }
        let shared = Arc::new(Shared {
            nodes: Arc::new(crate::nodes::Nodes::enabled()),
            ..Shared::default()
        });
        let (queues, receivers) = Queues::new(config);
        let tasks = NatsTasks {
            servers,
            shared: shared.clone(),
            queues: receivers,
        };
        let nats = Self {
            shared,
            prefix: config.prefix.clone(),
            queues,
        };
        Ok((nats, tasks))
    }

    /// Queue a publish (refused at once while disconnected, or when the
    /// queue is full).
    pub(crate) fn publish(&self, channel: &str, message: Vec<u8>) -> Result<(), BridgeError> {
        let subject = subject::subject(&self.prefix, channel).into_bytes();
        // History is refused with NATS (see `Broker::attach`).
        self.queues.publish(&self.shared, subject, message, None)
    }

    pub(crate) fn channels_changed(&self, changes: Vec<ChannelChange>) {
        self.queues.channels_changed(&self.shared, changes);
    }

    /// Operations on other nodes' connections, on the publish queue: they
    /// keep their order with this node's publishes.
    pub(crate) fn forward(
        &self,
        commands: &[(Destination, NodeCommand<'_>)],
    ) -> Result<(), BridgeError> {
        let prefix = &self.prefix;
        let publishes = self.queues.publishes();
        crate::nodes::forward_to(&self.shared, publishes, commands, |to| match to {
            Destination::Node(n) => subject::node_subject(prefix, *n).into_bytes(),
            Destination::Every => subject::all_subject(prefix).into_bytes(),
        })
    }

    pub(crate) fn nodes(&self, ttl: Duration) -> NodesView {
        self.shared.nodes.view(ttl)
    }

    pub(crate) fn available(&self) -> bool {
        self.shared.available()
    }

    pub(crate) fn shutdown(&self) {
        self.queues.shutdown(&self.shared);
    }
}

impl NatsTasks {
    /// Connect (in the background: the client retries on its own) and run
    /// the publisher and the subscriber until the goodbye is done.
    pub(crate) async fn run(
        self,
        config: Arc<BrokerConfig>,
        node: u64,
        server: Weak<Server>,
        stats: Arc<Stats>,
    ) {
        let (links, link_rx) = mpsc::unbounded_channel();
        let options = {
            let shared = self.shared.clone();
            let max = config.max_reconnect_delay;
            async_nats::ConnectOptions::new()
                .name("switchboard")
                .retry_on_initial_connect()
                .max_reconnects(None)
                .connection_timeout(config.connect_timeout)
                .reconnect_delay_callback(move |attempts| reconnect_delay(attempts, max))
                .client_capacity(CLIENT_CAPACITY)
                .ping_interval(PING_INTERVAL)
                .event_callback(move |event| {
                    let (shared, links) = (shared.clone(), links.clone());
                    async move {
                        match event {
                            async_nats::Event::Connected => {
                                let _ = links.send(true);
                            }
                            async_nats::Event::Disconnected | async_nats::Event::Closed => {
                                // Refuse publishes at once; the subscriber
                                // task learns of it too.
                                shared.subscriber_up.store(false, Ordering::Release);
                                let _ = links.send(false);
                            }
                            _ => {}
                        }
                    }
                })
        };
        // With `retry_on_initial_connect` this returns at once; it fails
        // only on settings, which `Nats::new` checked.
        let Ok(client) = options.connect(self.servers).await else {
            return;
        };
        self.shared.publisher_up.store(true, Ordering::Release);
        let (arrivals, inbound) = arrivals::arrivals();
        let membership = tokio::spawn(nodes::run(
            client.clone(),
            config.clone(),
            self.shared.clone(),
            server.clone(),
            arrivals.clone(),
        ));
        let publisher = tokio::spawn(publisher::run(
            client.clone(),
            config.clone(),
            self.shared.clone(),
            stats,
            self.queues.publishes,
        ));
        subscriber::run(subscriber::Setup {
            client,
            config,
            node,
            server,
            shared: self.shared,
            links: link_rx,
            commands: self.queues.commands,
            publisher,
            membership,
            arrivals: (arrivals, inbound),
        })
        .await;
    }
}

/// The wait before connection attempt `attempts` (counted from 1 since the
/// last success): none before the first, then 50 ms doubling up to `max`,
/// as for Redis (`crate::backoff`).
fn reconnect_delay(attempts: usize, max: Duration) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    let doublings = (attempts - 2).min(20) as u32;
    (Duration::from_millis(50) * 2u32.pow(doublings)).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_delays_double_up_to_the_cap() {
        let max = Duration::from_millis(300);
        let waits: Vec<u128> = (1..=6)
            .map(|a| reconnect_delay(a, max).as_millis())
            .collect();
        assert_eq!(waits, [0, 50, 100, 200, 300, 300]);
        assert_eq!(reconnect_delay(usize::MAX, max), max);
    }
}
