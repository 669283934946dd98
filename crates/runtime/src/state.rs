//! The state one server's threads share: its configuration, the worker
//! queues, the table of open connections, the channel registry, the
//! upgrades waiting for JavaScript, the counters, and the shutdown
//! signals. Everything here is reached from many threads; each part has
//! its own lock or is atomic.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

pub use crate::hook::{PendingUpgrade, UpgradeDecision};

use crate::config::ServerConfig;
use crate::connection::Connection;
use crate::events::{EventQueue, Record};
use crate::http::file_cache::FileCache;
use crate::http::metrics::HttpMetrics;
use crate::http::routes::{InvalidRoute, Routes};
use crate::outbound::SendStatus;
use crate::sockjs::SockJsSessions;
use crate::stats::{self, Stats, StatsSnapshot, WorkerSnapshot, WorkerStats};

/// How many deliveries were queued and how many dropped.
#[derive(Default)]
pub struct Outcomes {
    pub queued: u64,
    pub dropped: u64,
}

impl Outcomes {
    pub fn of(status: SendStatus) -> Self {
        let mut outcomes = Self::default();
        outcomes.add(status);
        outcomes
    }

    pub fn add(&mut self, status: SendStatus) {
        match status {
            SendStatus::Sent | SendStatus::Buffered => self.queued += 1,
            SendStatus::Dropped => self.dropped += 1,
            SendStatus::Closed => {}
        }
    }
}

pub struct ServerState {
    pub config: ServerConfig,
    /// The HTTP routes and fixed responses, matched by the I/O threads.
    pub(crate) http_routes: Routes,
    /// The kept files of `config.static_dirs[i]` (`None`: it keeps none).
    pub(crate) file_caches: Vec<Option<FileCache>>,
    pub queues: Vec<Arc<EventQueue>>,
    pub worker_stats: Vec<WorkerStats>,
    /// Keyed by ids the server allocates itself, so a fast non-randomised
    /// hash is safe (no client chooses a key); SipHash was ~4% of a fan-out.
    pub connections: RwLock<FxHashMap<u64, Arc<Connection>>>,
    pub registry: RwLock<switchboard_pubsub::Registry>,
    /// Upgrades waiting for JavaScript's hook, by connection id.
    pub pending_upgrades: Mutex<HashMap<u64, PendingUpgrade>>,
    /// SockJS sessions on the HTTP transports (`sockjs/`).
    pub(crate) sockjs: SockJsSessions,
    pub stats: Arc<Stats>,
    /// HTTP responses by route and status, and their latency.
    pub http_metrics: HttpMetrics,
    /// Connections accepted and not yet closed (in any phase), against
    /// `max_connections`.
    pub admitted: AtomicUsize,
    /// Set when graceful shutdown begins: nothing new is accepted.
    pub stopping: AtomicBool,
    /// The broker carrying channels to other nodes, when there is one
    /// (`bridge.rs`); set once, before the server listens.
    pub(crate) bridge: std::sync::OnceLock<Arc<dyn crate::bridge::Bridge>>,
    next_id: AtomicU64,
    /// This node's number in ids (`ids.rs`): 0 until a broker claims one.
    node: std::sync::atomic::AtomicU16,
    next_worker: AtomicUsize,
    next_http_worker: AtomicUsize,
}

impl ServerState {
    /// The state of a server with `config`; fails when an HTTP route
    /// cannot be put in the route table.
    pub fn new(config: ServerConfig) -> Result<Self, InvalidRoute> {
        let workers = config.workers.max(1);
        let http_routes = Routes::new(&config)?;
        let file_caches = config
            .static_dirs
            .iter()
            .map(|dir| dir.cache.clone().map(FileCache::new))
            .collect();
        Ok(Self {
            http_routes,
            file_caches,
            http_metrics: HttpMetrics::new(&config),
            queues: (0..workers)
                .map(|worker| Arc::new(EventQueue::new(worker, config.max_worker_queue_bytes)))
                .collect(),
            worker_stats: (0..workers).map(|_| WorkerStats::default()).collect(),
            connections: RwLock::new(FxHashMap::default()),
            registry: RwLock::new(switchboard_pubsub::Registry::new()),
            pending_upgrades: Mutex::new(HashMap::new()),
            sockjs: SockJsSessions::new(),
            stats: Arc::new(Stats::default()),
            admitted: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            bridge: std::sync::OnceLock::new(),
            next_id: AtomicU64::new(1),
            node: std::sync::atomic::AtomicU16::new(0),
            next_worker: AtomicUsize::new(0),
            next_http_worker: AtomicUsize::new(0),
            config,
        })
    }

    /// Every counter and gauge, read now (each exact on its own).
    pub fn stats_snapshot(&self) -> StatsSnapshot {
        let s = &self.stats;
        let outbound: u64 = self
            .connections
            .read()
            .values()
            .map(|c| c.outbound.buffered() as u64)
            .sum();
        let nodes = self.bridge.get().map(|bridge| bridge.nodes());
        let registry = self.registry.read();
        StatsSnapshot {
            broker_nodes_live: nodes.as_ref().map_or(0, |n| n.live.len() as u64),
            broker_node_messages_invalid: nodes.as_ref().map_or(0, |n| n.invalid_messages),
            connections_open: stats::get(&s.connections_open),
            connections_total: stats::get(&s.connections_total),
            handshakes_rejected: stats::get(&s.handshakes_rejected),
            messages_in: stats::get(&s.messages_in),
            bytes_in: stats::get(&s.bytes_in),
            messages_out: stats::get(&s.messages_out),
            bytes_out: stats::get(&s.bytes_out),
            messages_dropped: stats::get(&s.messages_dropped),
            protocol_errors: stats::get(&s.protocol_errors),
            http_requests: stats::get(&s.http_requests),
            outbound_buffered_bytes: outbound,
            channels: registry.channel_count() as u64,
            subscriptions: registry.subscription_count() as u64,
            broker_publishes_lost: stats::get(&s.broker_publishes_lost),
            workers: self
                .worker_stats
                .iter()
                .zip(&self.queues)
                .map(|(w, q)| WorkerSnapshot {
                    connections_open: stats::get(&w.connections_open),
                    messages_in: stats::get(&w.messages_in),
                    queued_event_bytes: q.queued_bytes() as u64,
                })
                .collect(),
        }
    }

    /// Ids of connections and virtual sockets share one space, so a number
    /// in JavaScript names either. They start at 1: 0 means "none". With a
    /// broker they carry this node's number (`ids.rs`), so any node can
    /// tell where a connection lives.
    pub fn next_id(&self) -> u64 {
        loop {
            let local = self.next_id.fetch_add(1, Ordering::Relaxed) & crate::ids::LOCAL_MASK;
            // 0 means "none": skipped when the counter wraps.
            if local != 0 {
                return crate::ids::compose(self.node(), local);
            }
        }
    }

    /// This node's number (0: no broker, or none claimed yet).
    pub fn node(&self) -> u16 {
        self.node.load(Ordering::Relaxed)
    }

    /// Set by the broker once it claimed a number; ids allocated from now
    /// on carry it.
    pub(crate) fn set_node(&self, node: u16) {
        self.node
            .store(node & crate::ids::MAX_NODE, Ordering::Relaxed);
    }

    /// Move the local counter up to `start` (never down): a broker's node
    /// starts at a random point (`ids.rs`).
    pub(crate) fn seed_ids(&self, start: u64) {
        self.next_id
            .fetch_max(start & crate::ids::LOCAL_MASK, Ordering::Relaxed);
    }

    /// Round-robin pinning of a new long-lived connection (WebSocket,
    /// RPC) to a worker.
    pub fn pick_worker(&self) -> usize {
        self.next_worker.fetch_add(1, Ordering::Relaxed) % self.queues.len()
    }

    /// Round-robin pinning of a new HTTP connection, on a turn of its own:
    /// a page's burst of short HTTP connections (its assets, served
    /// natively, never reach a worker at all) must not skew how the
    /// long-lived connections spread over the workers.
    pub fn pick_http_worker(&self) -> usize {
        self.next_http_worker.fetch_add(1, Ordering::Relaxed) % self.queues.len()
    }

    /// Count a new connection in, unless `max_connections` are in already.
    pub fn admit(&self) -> bool {
        let max = self.config.max_connections;
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// A connection counted by [`ServerState::admit`] is gone.
    pub fn release(&self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub fn connection(&self, id: u64) -> Option<Arc<Connection>> {
        self.connections.read().get(&id).cloned()
    }

    /// Change the registry under its write lock; the channels that got
    /// their first subscriber or lost their last are handed to the broker
    /// before the lock is released, so it learns of them in order.
    pub(crate) fn with_registry<R>(
        &self,
        change: impl FnOnce(&mut switchboard_pubsub::Registry) -> R,
    ) -> R {
        let mut registry = self.registry.write();
        let result = change(&mut registry);
        if let Some(bridge) = self.bridge.get() {
            let changes = registry.take_channel_changes();
            if !changes.is_empty() {
                bridge.channels_changed(changes);
            }
            let members = registry.take_member_changes();
            if !members.is_empty() {
                bridge.members_changed(members);
            }
        }
        result
    }

    /// A connection opened: others can now reach it.
    pub fn register(&self, connection: &Arc<Connection>) {
        self.connections
            .write()
            .insert(connection.id, connection.clone());
        stats::add(&self.stats.connections_open, 1);
        stats::add(&self.stats.connections_total, 1);
        stats::add(&self.worker_stats[connection.worker()].connections_open, 1);
    }

    /// A connection ended: unreachable from now on, out of every channel,
    /// and its worker hears its last event (with `notify`: an HTTP
    /// connection whose requests were all answered natively is unknown to
    /// its worker).
    pub fn unregister(&self, connection: &Connection, code: u16, reason: &str, notify: bool) {
        connection.outbound.close();
        self.connections.write().remove(&connection.id);
        self.with_registry(|registry| registry.remove_subscriber(connection.id));
        stats::sub(&self.stats.connections_open, 1);
        stats::sub(&self.worker_stats[connection.worker()].connections_open, 1);
        if notify {
            self.queues[connection.worker()].push(&Record::Close {
                id: connection.id,
                code,
                reason,
            });
        }
    }

    pub fn count_sent(&self, status: SendStatus) {
        self.count_outcomes(&Outcomes::of(status));
    }

    /// Add delivery outcomes to the server's counters.
    pub fn count_outcomes(&self, outcomes: &Outcomes) {
        if outcomes.queued > 0 {
            stats::add(&self.stats.messages_out, outcomes.queued);
        }
        if outcomes.dropped > 0 {
            stats::add(&self.stats.messages_dropped, outcomes.dropped);
        }
    }
}

impl crate::sockjs::Host for ServerState {
    fn sessions(&self) -> &SockJsSessions {
        &self.sockjs
    }

    fn unregister(&self, connection: &Connection, code: u16, reason: &str) {
        ServerState::unregister(self, connection, code, reason, true);
    }

    fn forget_upgrade(&self, id: u64) {
        self.pending_upgrades.lock().remove(&id);
    }

    fn drained(&self, connection: &Connection) {
        self.queues[connection.worker()].push(&Record::Drain { id: connection.id });
    }
}
