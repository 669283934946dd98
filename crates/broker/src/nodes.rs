//! Nodes that know each other (docs/scale-out.md, "Nodes"): this node's
//! number, claimed in Redis and kept alive by a heartbeat; the messages
//! that carry operations on another node's connections; and a small view
//! of the live nodes.
//!
//! Names in Redis. Everything of the nodes lives under
//! `<prefix>\xFF`: a user channel's Redis name is `<prefix>` and then the
//! channel's name, which is UTF-8 and so never holds the byte 0xFF; the
//! node names can never be taken for a channel (or a channel for them),
//! whatever the channel is called. In a Redis Cluster the byte is the hash
//! tag, `<prefix>{\xFF}`: every node name is then in one slot (so a
//! script may touch a node key and publish on the nodes' channel), and a
//! channel's name there, `<prefix>{<channel>}`, still has a UTF-8 byte
//! (or the closing brace) where these have 0xFF.
//!
//! - key `<prefix>\xFFnode:<n>`: held by node `n`, value a random token,
//!   with a TTL (`node_ttl`) the heartbeat refreshes;
//! - channel `<prefix>\xFFnode:<n>`: node `n`'s own messages (operations
//!   on its connections), subscribed on the pub/sub connection, so they
//!   keep their order with the channel traffic from the same sender;
//! - channel `<prefix>\xFFnodes`: every node's heartbeats and goodbyes,
//!   and a `publishTo` that names channels.
//!
//! With NATS the names, the claim and the heartbeat are `nats/nodes.rs`'s;
//! the view, the forwarding and the handling of node messages are these.
//!
//! The claim runs on the broker's thread before the publisher and the
//! subscriber start (in a cluster, beside them: it needs the slot map the
//! subscriber reads), and the broker accepts nothing before it succeeded,
//! so `listen()` (which waits for the broker) accepts connections only
//! once their ids can carry the number. How its commands reach Redis is
//! the [`Home`]'s business: a standalone server's client, or the master
//! of the nodes' slot (`cluster::nodes`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use redis::aio::{MultiplexedConnection, PubSubSink};
use switchboard_pubsub::SubscriberId;
use switchboard_runtime::channels::PublishTarget;
use switchboard_runtime::ids::MAX_NODE;
use switchboard_runtime::{BridgeError, Destination, NodeCommand, NodesView, Server};
use tokio::sync::mpsc;

use crate::backoff::Backoff;
use crate::node_wire::{self, Command, Inbound};
use crate::{BrokerConfig, Outgoing, Shared};

/// The byte after the prefix that sets the nodes' names apart from every
/// channel's (never in UTF-8).
const RESERVED: u8 = 0xFF;

/// Refresh this node's key if it still holds it; claim it again if it
/// expired (Redis restarted, or this node was cut off longer than the
/// TTL); report a conflict if another node took it meanwhile.
const REFRESH: &str = "local v = redis.call('GET', KEYS[1]) \
    if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end \
    if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end \
    return 0";

/// Delete this node's key only if it still holds it.
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    return redis.call('DEL', KEYS[1]) end return 0";

/// Picks the shard of the nodes' keys and channels (`Rendezvous::pick`):
/// any fixed name, the same on every node.
pub(crate) const HOME: &str = "\u{0}switchboard-nodes";

/// What the broker knows of the nodes; part of [`Shared`].
#[derive(Default)]
pub(crate) struct Nodes {
    /// Publishes wait for a number. Every engine has nodes; off only in
    /// unit tests that need no claim.
    enabled: bool,
    /// This node's number; 0 until claimed.
    number: AtomicU16,
    /// The random value this node's key holds: proves the key is ours.
    token: AtomicU64,
    /// Other nodes and when they were last heard from.
    seen: Mutex<HashMap<u16, Instant>>,
    /// Node messages that could not be decoded or applied.
    invalid: AtomicU64,
    /// Heartbeats that found the key held by another node.
    conflicts: AtomicU64,
    /// Wakes the heartbeat early: a node not seen before was heard, and
    /// answering at once tells it about this one.
    wake: tokio::sync::Notify,
    /// The heartbeat's connection, for the goodbye.
    connection: Mutex<Option<MultiplexedConnection>>,
}

/// A command connection in the making (`Home::connect`).
pub(crate) type Connecting<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<MultiplexedConnection>> + Send + 'a>>;

/// Where the nodes' keys and channels live, as the claim, the heartbeat
/// and the goodbye reach it: one standalone server (its client), or the
/// master of their slot in a cluster (`cluster::nodes`).
pub(crate) trait Home: Send + Sync + 'static {
    /// A new command connection there; `None` when none can be made now
    /// (the caller bounds it by `connect_timeout` and retries with
    /// back-off).
    fn connect(&self) -> Connecting<'_>;
    /// A command there failed or could not be sent: in a cluster the slot
    /// may have moved (`-MOVED`, a failover), so the map is read again
    /// before the next connection.
    fn failed(&self) {}
}

impl Home for redis::Client {
    fn connect(&self) -> Connecting<'_> {
        Box::pin(async move { self.get_multiplexed_async_connection().await.ok() })
    }
}

impl Nodes {
    pub(crate) fn enabled() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }

    /// Nothing waits for a number: claimed, or not needed.
    pub(crate) fn ready(&self) -> bool {
        !self.enabled || self.number() != 0
    }

    pub(crate) fn number(&self) -> u16 {
        self.number.load(Ordering::Acquire)
    }

    /// The number is this node's (an engine's claim succeeded): publishes
    /// are accepted from now on.
    pub(crate) fn claimed(&self, n: u16) {
        self.number.store(n, Ordering::Release);
    }

    /// Another node was found holding this node's number.
    pub(crate) fn conflict(&self) {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
    }

    /// Resolves when a node not seen before was heard (`handle`): the
    /// heartbeat answers it at once.
    pub(crate) async fn newcomer(&self) {
        self.wake.notified().await
    }

    /// The live nodes: heard from within `ttl`, and this one.
    pub(crate) fn view(&self, ttl: std::time::Duration) -> NodesView {
        let me = self.number();
        let now = Instant::now();
        let mut live: Vec<u16> = {
            let mut seen = self.seen.lock();
            seen.retain(|_, at| now.duration_since(*at) < ttl);
            seen.keys().copied().collect()
        };
        if me != 0 {
            live.push(me);
        }
        live.sort_unstable();
        live.dedup();
        NodesView {
            node: me,
            live,
            invalid_messages: self.invalid.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
        }
    }
}

fn name(config: &BrokerConfig, suffix: &str) -> Vec<u8> {
    let mut name = Vec::with_capacity(config.prefix.len() + 3 + suffix.len());
    name.extend_from_slice(config.prefix.as_bytes());
    if config.braced() {
        // The hash tag: one slot for every node name.
        name.extend_from_slice(&[b'{', RESERVED, b'}']);
    } else {
        name.push(RESERVED);
    }
    name.extend_from_slice(suffix.as_bytes());
    name
}

/// The command that publishes on the nodes' channels: `SPUBLISH` in a
/// cluster (sharded pub/sub, at the nodes' slot's master).
fn publish_command(config: &BrokerConfig) -> &'static str {
    match config.braced() {
        true => "SPUBLISH",
        false => "PUBLISH",
    }
}

/// Node `n`'s key, and the name of its own channel.
pub(crate) fn node_name(config: &BrokerConfig, n: u16) -> Vec<u8> {
    name(config, &format!("node:{n}"))
}

/// The channel every node subscribes.
pub(crate) fn all_name(config: &BrokerConfig) -> Vec<u8> {
    name(config, "nodes")
}

/// Whether a Redis channel is one of the nodes' (not a user channel).
pub(crate) fn is_node_channel(config: &BrokerConfig, redis_channel: &[u8]) -> bool {
    let Some(rest) = redis_channel.strip_prefix(config.prefix.as_bytes()) else {
        return false;
    };
    match config.braced() {
        true => rest.starts_with(&[b'{', RESERVED, b'}']),
        false => rest.first() == Some(&RESERVED),
    }
}

/// Whether a message from Redis came on one of the nodes' channels. Their
/// names are not UTF-8, which `Msg::get_channel_name` reports as `"?"`:
/// only then are the raw bytes looked at, so a channel's message costs no
/// copy of its channel's name here.
pub(crate) fn is_node_message(config: &BrokerConfig, message: &redis::Msg) -> bool {
    message.get_channel_name() == "?"
        && message
            .get_channel::<Vec<u8>>()
            .is_ok_and(|name| is_node_channel(config, &name))
}

pub(crate) fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // Without the OS's randomness the clock's nanoseconds still spread
    // the choices; the claim itself (SET NX, or NATS's objections) is what
    // makes it safe.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return nanos ^ u64::from(std::process::id()).rotate_left(32);
    }
    u64::from_le_bytes(bytes)
}

/// A random start for the local id counter (`switchboard_runtime::ids`).
pub(crate) fn random_id_start() -> u64 {
    random_u64() % switchboard_runtime::ids::LOCAL_START_RANGE
}

fn ttl_ms(config: &BrokerConfig) -> u64 {
    (config.node_ttl.as_millis() as u64).max(1)
}

/// Claim a free node number: `SET <key> <token> NX PX <ttl>` from a
/// random number on, until one is free. Retries (with back-off) while
/// Redis is not there; `None` when the broker closes first. Returns the
/// connection, which the heartbeat then keeps.
pub(crate) async fn claim(
    home: &impl Home,
    config: &BrokerConfig,
    shared: &Shared,
) -> Option<MultiplexedConnection> {
    let token = random_u64().to_string();
    let mut backoff = Backoff::new(config.max_reconnect_delay);
    loop {
        if shared.closing.load(Ordering::Acquire) {
            return None;
        }
        let attempt = async {
            let mut connection = home.connect().await?;
            let max = u64::from(MAX_NODE);
            let start = random_u64() % max;
            for i in 0..max {
                let n = ((start + i) % max + 1) as u16;
                let set: Option<String> = redis::cmd("SET")
                    .arg(node_name(config, n))
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms(config))
                    .query_async(&mut connection)
                    .await
                    .ok()?;
                if set.is_some() {
                    return Some((n, connection));
                }
            }
            // Every number is held: wait for one to expire.
            None
        };
        if let Ok(Some((n, connection))) =
            tokio::time::timeout(config.connect_timeout, attempt).await
        {
            shared
                .nodes
                .token
                .store(token.parse().unwrap_or(0), Ordering::Release);
            shared.nodes.claimed(n);
            *shared.nodes.connection.lock() = Some(connection.clone());
            return Some(connection);
        }
        home.failed();
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// Keep the claim: every `node_ttl / 3`, refresh the key and tell the
/// others this node is alive. Runs until aborted (at the goodbye).
pub(crate) async fn heartbeat(
    home: impl Home,
    config: Arc<BrokerConfig>,
    shared: Arc<Shared>,
    mut connection: MultiplexedConnection,
) {
    let nodes = &shared.nodes;
    let me = nodes.number();
    let token = nodes.token.load(Ordering::Acquire).to_string();
    // At least 100 ms: a tiny TTL must not turn this into a busy loop.
    let interval = (config.node_ttl / 3).max(std::time::Duration::from_millis(100));
    let mut backoff = Backoff::new(config.max_reconnect_delay);
    loop {
        // The announcement first, the refresh last: a connection's last
        // command (`CLIENT LIST`'s `cmd`) then tells a heartbeat (`eval`)
        // from the publisher's connection (`publish`).
        let mut pipe = redis::pipe();
        pipe.cmd(publish_command(&config))
            .arg(all_name(&config))
            .arg(node_wire::alive(me))
            .ignore()
            .cmd("EVAL")
            .arg(REFRESH)
            .arg(1)
            .arg(node_name(&config, me))
            .arg(&token)
            .arg(ttl_ms(&config));
        let beat = pipe.query_async::<(i64,)>(&mut connection);
        match tokio::time::timeout(config.connect_timeout, beat).await {
            Ok(Ok((refreshed,))) => {
                backoff.reset();
                if refreshed == 0 {
                    nodes.conflict();
                }
            }
            _ => {
                // Reconnect; the next beat claims the key again if it
                // expired meanwhile.
                home.failed();
                tokio::time::sleep(backoff.next_delay()).await;
                let connect = home.connect();
                if let Ok(Some(fresh)) = tokio::time::timeout(config.connect_timeout, connect).await
                {
                    *nodes.connection.lock() = Some(fresh.clone());
                    connection = fresh;
                }
                continue;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = nodes.newcomer() => {}
        }
    }
}

/// The goodbye: stop the heartbeat, tell the others, and delete the key
/// (if it is still this node's), within `connect_timeout`.
pub(crate) async fn leave(
    config: &BrokerConfig,
    shared: &Shared,
    heartbeat: tokio::task::JoinHandle<()>,
) {
    heartbeat.abort();
    let _ = heartbeat.await;
    let me = shared.nodes.number();
    let Some(mut connection) = shared.nodes.connection.lock().take() else {
        return;
    };
    let token = shared.nodes.token.load(Ordering::Acquire).to_string();
    let mut pipe = redis::pipe();
    pipe.cmd(publish_command(config))
        .arg(all_name(config))
        .arg(node_wire::leave(me))
        .ignore()
        .cmd("EVAL")
        .arg(RELEASE)
        .arg(1)
        .arg(node_name(config, me))
        .arg(&token)
        .ignore();
    let _ = tokio::time::timeout(
        config.connect_timeout,
        pipe.query_async::<()>(&mut connection),
    )
    .await;
}

/// Subscribe this node's channels on a new pub/sub connection, before
/// the user channels.
pub(crate) async fn subscribe(
    sink: &mut PubSubSink,
    config: &BrokerConfig,
    shared: &Shared,
) -> Result<(), ()> {
    let names = [node_name(config, shared.nodes.number()), all_name(config)];
    sink.subscribe(&names[..]).await.map_err(|_| ())
}

/// Hand operations for other nodes to the publisher, all or none: they
/// leave in order with this node's publishes (one queue, one connection).
pub(crate) fn forward(
    config: &BrokerConfig,
    shared: &Shared,
    publishes: &mpsc::Sender<Outgoing>,
    commands: &[(Destination, NodeCommand<'_>)],
) -> Result<(), BridgeError> {
    forward_to(
        shared,
        publishes,
        commands,
        |destination| match destination {
            Destination::Node(n) => node_name(config, *n),
            Destination::Every => all_name(config),
        },
    )
}

/// [`forward`] for any engine: `name` spells a destination as the
/// engine's channel (a Redis channel, a NATS subject).
pub(crate) fn forward_to(
    shared: &Shared,
    publishes: &mpsc::Sender<Outgoing>,
    commands: &[(Destination, NodeCommand<'_>)],
    name: impl Fn(&Destination) -> Vec<u8>,
) -> Result<(), BridgeError> {
    if commands.is_empty() {
        return Ok(());
    }
    if !shared.available() {
        return Err(BridgeError::Unavailable);
    }
    let from = shared.nodes.number();
    let permits = publishes
        .try_reserve_many(commands.len())
        .map_err(|e| match e {
            mpsc::error::TrySendError::Full(()) => BridgeError::Backlog,
            mpsc::error::TrySendError::Closed(()) => BridgeError::Unavailable,
        })?;
    let ticket = shared.requested.load(Ordering::Acquire);
    for (permit, (destination, command)) in permits.zip(commands) {
        permit.send(Outgoing {
            channel: name(destination),
            message: node_wire::encode(from, command),
            history: None,
            ticket,
        });
    }
    Ok(())
}

/// A node message arrived (on the broker's thread, inside the delivery
/// batch's cork): apply it with the server's local operations. Anything
/// malformed is counted and ignored.
pub(crate) fn handle(server: &Server, shared: &Shared, payload: &[u8]) {
    let nodes = &shared.nodes;
    let me = nodes.number();
    let Some(message) = node_wire::decode(payload) else {
        nodes.invalid.fetch_add(1, Ordering::Relaxed);
        return;
    };
    match message.body {
        Inbound::Alive => {
            if message.from != me && message.from != 0 && message.from <= MAX_NODE {
                let new = nodes
                    .seen
                    .lock()
                    .insert(message.from, Instant::now())
                    .is_none();
                if new {
                    nodes.wake.notify_one();
                }
            }
        }
        Inbound::Leave => {
            nodes.seen.lock().remove(&message.from);
        }
        Inbound::Command(command) => {
            if !apply(server, me, command) {
                nodes.invalid.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Apply an operation on this node's connections; false when it cannot
/// be (a close code no application may send).
fn apply(server: &Server, me: u16, command: Command<'_>) -> bool {
    match command {
        Command::Send { id, data, binary } => {
            server.send(id, data, binary);
        }
        Command::End { id, code, reason } => {
            if !sendable_close_code(code) {
                return false;
            }
            server.end(id, code, reason, true);
        }
        Command::Terminate { id } => {
            server.terminate(id);
        }
        Command::Subscribe {
            ids,
            channel,
            delta,
        } => {
            let ids: Vec<SubscriberId> = ids;
            server.subscribe(&ids, channel, delta);
        }
        Command::Unsubscribe { id, channel } => {
            server.unsubscribe(id, channel);
        }
        Command::PublishTo {
            channels,
            groups,
            data,
            binary,
            exclude,
        } => {
            let mut targets: Vec<PublishTarget<'_>> =
                channels.into_iter().map(PublishTarget::Channel).collect();
            for (node, ids) in &groups {
                if *node == me {
                    targets.extend(ids.iter().map(|&id| PublishTarget::Subscriber(id)));
                }
            }
            if !targets.is_empty() {
                let exclude = exclude.filter(|(node, _)| *node == me).map(|(_, id)| id);
                server.publish_to(&targets, data, binary, exclude);
            }
        }
    }
    true
}

/// RFC 6455 §7.4: the codes an application may send (as
/// `checkCloseCode` in TypeScript checks on the sending node).
fn sendable_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_never_meet_a_channel() {
        let config = BrokerConfig::new("redis://127.0.0.1");
        assert_eq!(node_name(&config, 12), b"switchboard:\xFFnode:12");
        assert_eq!(all_name(&config), b"switchboard:\xFFnodes");
        assert!(is_node_channel(&config, &node_name(&config, 1)));
        assert!(is_node_channel(&config, &all_name(&config)));
        // A channel named like them is still a channel.
        assert!(!is_node_channel(&config, &config.redis_channel("node:1")));
        assert!(!is_node_channel(
            &config,
            &config.redis_channel("\u{ff}nodes")
        ));
        assert!(!is_node_channel(&config, b"other:\xFFnodes"));
    }

    #[test]
    fn in_a_cluster_node_names_share_one_slot_and_never_meet_a_channel() {
        use crate::slot::slot;
        let mut config = BrokerConfig::new("redis://127.0.0.1");
        config.topology = crate::Topology::Cluster(vec!["redis://127.0.0.1:7000".into()]);
        assert_eq!(node_name(&config, 12), b"switchboard:{\xFF}node:12");
        assert_eq!(all_name(&config), b"switchboard:{\xFF}nodes");
        let home = slot(&all_name(&config));
        assert_eq!(home, slot(b"\xFF"), "the tag alone decides the slot");
        // CRC16(0xFF) mod 16384: the tests find the nodes' master by it.
        assert_eq!(home, 7920);
        for n in [1, 2, 500, MAX_NODE] {
            assert_eq!(slot(&node_name(&config, n)), home);
            assert!(is_node_channel(&config, &node_name(&config, n)));
        }
        assert!(is_node_channel(&config, &all_name(&config)));
        // No channel's Redis name (or key) is a node name, whatever the
        // channel is called: after `<prefix>{` a channel has a UTF-8 byte
        // or `}`, never 0xFF; a standalone node name is no cluster one.
        let names = [
            "",
            "}",
            "{",
            "\u{ff}}node:1",
            "node:1",
            "{\u{ff}}nodes",
            "$presence:",
        ];
        for channel in names {
            let redis = config.redis_channel(channel);
            assert!(!is_node_channel(&config, &redis), "{channel:?}");
            assert_ne!(redis, all_name(&config));
            for key in config
                .history_keys(channel)
                .iter()
                .chain(&config.presence_keys(channel))
            {
                assert!(!is_node_channel(&config, key), "{channel:?}");
            }
        }
        assert!(!is_node_channel(&config, b"switchboard:\xFFnodes"));
        // And a node name is nobody's channel.
        assert_eq!(config.channel_of(&node_name(&config, 3)), None);
        assert_eq!(config.channel_of(&all_name(&config)), None);
    }

    #[test]
    fn the_view_keeps_recent_nodes_and_this_one() {
        let nodes = Nodes::default();
        nodes.number.store(3, Ordering::Release);
        let old = Instant::now()
            .checked_sub(std::time::Duration::from_secs(60))
            .unwrap_or_else(Instant::now);
        nodes.seen.lock().insert(9, Instant::now());
        nodes.seen.lock().insert(1, Instant::now());
        nodes.seen.lock().insert(5, old);
        let view = nodes.view(std::time::Duration::from_secs(10));
        assert_eq!(view.node, 3);
        assert_eq!(view.live, [1, 3, 9]);
    }

    #[test]
    fn close_codes() {
        assert!(sendable_close_code(1000) && sendable_close_code(4999));
        assert!(!sendable_close_code(1005) && !sendable_close_code(1006));
        assert!(!sendable_close_code(999) && !sendable_close_code(5000));
    }
}
