//! This node's number with NATS (docs/scale-out.md, "Nodes with NATS"):
//! the claim (the rules are `claim.rs`'s) on the claim subject, then the
//! heartbeat, the answers to other nodes' roll-calls and claims, and the
//! goodbye. The node messages themselves (operations on this node's
//! connections, heartbeats, goodbyes) arrive through the subscriber's
//! queue beside the channels and are applied by `crate::nodes::handle`, as
//! with Redis; this task only subscribes their subjects.
//!
//! Everything goes through the one client of the channel traffic: a node's
//! operations for another node leave on the connection its publishes
//! leave on, in the order they were accepted.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use switchboard_runtime::Server;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::arrivals::{self, Arrival, Source};
use super::claim::{Action, Claim};
use super::note::{self, Note};
use super::subject;
use crate::{node_wire, BrokerConfig, Shared};

/// How long a roll-call collects answers, and a claim waits for
/// objections. An answer is one round trip through NATS (well under a
/// millisecond on a LAN, a few across a NATS cluster's routes); 250 ms
/// leaves room for a node busy with a burst, and a start costs two windows
/// (half a second) of the `connectTimeout` that `listen()` waits.
const WINDOW: Duration = Duration::from_millis(250);
/// The shortest heartbeat interval, as with Redis: a tiny `nodeTtl` must
/// not turn the heartbeat into a busy loop.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

struct Member {
    client: async_nats::Client,
    config: Arc<BrokerConfig>,
    shared: Arc<Shared>,
    server: Weak<Server>,
    arrivals: mpsc::Sender<Arrival>,
    claim: Claim,
    inbox: String,
    /// Keep the node subscriptions' forwarders running (dropped at the
    /// goodbye, when the client drains anyway).
    forwarders: Vec<oneshot::Sender<()>>,
}

/// Claim a number, then keep it: runs until aborted (the goodbye) or the
/// client ends.
pub(crate) async fn run(
    client: async_nats::Client,
    config: Arc<BrokerConfig>,
    shared: Arc<Shared>,
    server: Weak<Server>,
    arrivals: mpsc::Sender<Arrival>,
) {
    let token = crate::nodes::random_u64();
    let (claim, first) = Claim::new(token, WINDOW, crate::nodes::random_u64());
    let mut member = Member {
        inbox: subject::inbox_subject(&config.prefix, token),
        client,
        config,
        shared,
        server,
        arrivals,
        claim,
        forwarders: Vec::new(),
    };
    // Everything is subscribed before this node says anything: an answer
    // or a rival's claim cannot slip past (one ordered connection).
    let all = subject::all_subject(&member.config.prefix);
    let claims = subject::claim_subject(&member.config.prefix);
    if member.forward(all).await.is_none() {
        return;
    }
    let (Ok(mut notes), Ok(mut inbox)) = (
        member.client.subscribe(claims).await,
        member.client.subscribe(member.inbox.clone()).await,
    ) else {
        return;
    };
    member.act(first, None).await;
    let interval = (member.config.node_ttl / 3).max(MIN_INTERVAL);
    let mut beat = tokio::time::interval(interval);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let held = member.claim.number().is_some();
        let deadline = member.claim.deadline().map(Instant::from_std);
        let window = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            message = notes.next() => {
                let Some(message) = message else { return };
                if let Some(note) = Note::decode(&message.payload) {
                    if let Some(action) = member.claim.heard(note) {
                        member.act(action, message.reply.map(|r| r.to_string())).await;
                    }
                }
            }
            message = inbox.next() => {
                let Some(message) = message else { return };
                if let Some(action) = Note::decode(&message.payload).and_then(|n| member.claim.heard(n)) {
                    member.act(action, None).await;
                }
            }
            _ = window => {
                if let Some(action) = member.claim.tick(std::time::Instant::now()) {
                    member.act(action, None).await;
                }
            }
            _ = beat.tick(), if held => member.heartbeat().await,
            // A newcomer learns of this node at once.
            _ = member.shared.nodes.newcomer(), if held => member.heartbeat().await,
        }
    }
}

impl Member {
    async fn act(&mut self, action: Action, reply: Option<String>) {
        match action {
            Action::Announce(note) => self.announce(note).await,
            Action::Reply(note) => {
                if let Some(reply) = reply {
                    if let Note::Held { .. } = note {
                        self.others_held(&reply).await;
                    }
                    let _ = self.client.publish(reply, note.encode().into()).await;
                }
            }
            Action::Claimed(n) => {
                // Its subject is subscribed before anyone can address it:
                // ids carry the number only from `claimed` on.
                if self
                    .forward(subject::node_subject(&self.config.prefix, n))
                    .await
                    .is_none()
                {
                    return;
                }
                if let Some(server) = self.server.upgrade() {
                    server.set_node(n);
                }
                self.shared.nodes.claimed(n);
                self.heartbeat().await;
            }
            Action::Conflict => self.shared.nodes.conflict(),
        }
    }

    /// Publish on the claim subject and wait until it is written (the
    /// window starts then); while NATS is away, keep trying.
    async fn announce(&mut self, note: Note) {
        let claims = subject::claim_subject(&self.config.prefix);
        loop {
            let sent = self
                .client
                .publish_with_reply(claims.clone(), self.inbox.clone(), note.encode().into())
                .await;
            let written = tokio::time::timeout(self.config.connect_timeout, self.client.flush());
            if sent.is_ok() && matches!(written.await, Ok(Ok(()))) {
                self.claim.sent(std::time::Instant::now());
                return;
            }
            // The client is reconnecting (or gone: the task is aborted at
            // the goodbye). A repeated roll-call or claim is harmless.
            tokio::time::sleep(self.config.max_reconnect_delay.min(Duration::from_secs(1))).await;
        }
    }

    /// With this node's answer to a roll-call, the other nodes it heard
    /// from within `node_ttl`, in one note: a node cut
    /// off for a moment, or killed, keeps its number that long, as its key
    /// would in Redis, instead of losing it to the first newcomer.
    async fn others_held(&self, reply: &str) {
        let view = self.shared.nodes.view(self.config.node_ttl);
        let mut live = [0; 16];
        for number in view.live.into_iter().filter(|&n| n != view.node) {
            note::insert(&mut live, number);
        }
        if live != [0; 16] {
            let seen = Note::Seen { live }.encode();
            let _ = self.client.publish(reply.to_string(), seen.into()).await;
        }
    }

    /// Tell the others this node is alive (for their views) and prove its
    /// number (a conflict shows on the claim subject).
    async fn heartbeat(&self) {
        let Some(number) = self.claim.number() else {
            return;
        };
        let prefix = &self.config.prefix;
        let alive = node_wire::alive(number);
        let held = Note::Held {
            number,
            token: self.claim.token(),
        };
        let _ = self
            .client
            .publish(subject::all_subject(prefix), alive.into())
            .await;
        let _ = self
            .client
            .publish(subject::claim_subject(prefix), held.encode().into())
            .await;
    }

    /// Subscribe a node subject, its messages going to the subscriber's
    /// queue; `None` when the client is gone.
    async fn forward(&mut self, subject: String) -> Option<()> {
        let subscription = self.client.subscribe(subject).await.ok()?;
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(arrivals::forward(
            Source::Nodes,
            subscription,
            stopped,
            self.arrivals.clone(),
        ));
        self.forwarders.push(stop);
        Some(())
    }
}

/// The goodbye, once this node's accepted publishes are in the client's
/// queue: stop answering for the number and tell the others, who drop this
/// node from their views at once. The drain that follows writes it.
pub(crate) async fn leave(
    client: &async_nats::Client,
    config: &BrokerConfig,
    shared: &Shared,
    membership: tokio::task::JoinHandle<()>,
) {
    membership.abort();
    let _ = membership.await;
    let number = shared.nodes.number();
    if number != 0 {
        let all = subject::all_subject(&config.prefix);
        let _ = client.publish(all, node_wire::leave(number).into()).await;
    }
}
