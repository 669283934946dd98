//! The state one server's threads share: its configuration, the worker
//! queues, the table of open connections, the channel registry, the
//! upgrades waiting for JavaScript, the counters, and the shutdown
//! signals. Everything here is reached from many threads; each part has
//! its own lock or is atomic.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::ServerConfig;
use crate::connection::Connection;
use crate::events::{EventQueue, Record};
use crate::outbound::SendStatus;
use crate::stats::{self, Stats, WorkerStats};

/// What JavaScript's `upgrade` hook decided.
#[derive(Debug)]
pub enum UpgradeDecision {
    /// Complete the handshake, optionally choosing the subprotocol.
    Accept { protocol: Option<String> },
    /// Answer with this HTTP status and reason instead of `101`.
    Reject { status: u16, reason: String },
}

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
    pub queues: Vec<Arc<EventQueue>>,
    pub worker_stats: Vec<WorkerStats>,
    /// Keyed by ids the server allocates itself, so a fast non-randomised
    /// hash is safe (no client chooses a key); SipHash was ~4% of a fan-out.
    pub connections: RwLock<FxHashMap<u64, Arc<Connection>>>,
    pub registry: RwLock<switchboard_pubsub::Registry>,
    /// Upgrades waiting for JavaScript's hook: the worker asked, and where
    /// to send its decision.
    pub pending_upgrades: Mutex<HashMap<u64, (usize, oneshot::Sender<UpgradeDecision>)>>,
    pub stats: Stats,
    pub permits: Arc<Semaphore>,
    /// Cancelled when the server stops accepting (graceful shutdown begins).
    pub stopping: CancellationToken,
    /// Cancelled when the drain timeout passed: connections end at once.
    pub force: CancellationToken,
    pub tracker: TaskTracker,
    next_id: AtomicU64,
    next_worker: AtomicUsize,
}

impl ServerState {
    pub fn new(config: ServerConfig) -> Self {
        let workers = config.workers.max(1);
        Self {
            queues: (0..workers)
                .map(|_| Arc::new(EventQueue::new(config.max_worker_queue_bytes)))
                .collect(),
            worker_stats: (0..workers).map(|_| WorkerStats::default()).collect(),
            connections: RwLock::new(FxHashMap::default()),
            registry: RwLock::new(switchboard_pubsub::Registry::new()),
            pending_upgrades: Mutex::new(HashMap::new()),
            stats: Stats::default(),
            permits: Arc::new(Semaphore::new(config.max_connections)),
            stopping: CancellationToken::new(),
            force: CancellationToken::new(),
            tracker: TaskTracker::new(),
            next_id: AtomicU64::new(1),
            next_worker: AtomicUsize::new(0),
            config,
        }
    }

    /// Ids of connections and virtual sockets share one space, so a number
    /// in JavaScript names either. They start at 1: 0 means "none".
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Round-robin pinning of a new connection to a worker.
    pub fn pick_worker(&self) -> usize {
        self.next_worker.fetch_add(1, Ordering::Relaxed) % self.queues.len()
    }

    pub fn connection(&self, id: u64) -> Option<Arc<Connection>> {
        self.connections.read().get(&id).cloned()
    }

    /// A connection opened: others can now reach it.
    pub fn register(&self, connection: &Arc<Connection>) {
        self.connections
            .write()
            .insert(connection.id, connection.clone());
        stats::add(&self.stats.connections_open, 1);
        stats::add(&self.stats.connections_total, 1);
        stats::add(&self.worker_stats[connection.worker].connections_open, 1);
    }

    /// A connection ended: unreachable from now on, out of every channel,
    /// and its worker hears its last event.
    pub fn unregister(&self, connection: &Connection, code: u16, reason: &str) {
        connection.outbound.close();
        self.connections.write().remove(&connection.id);
        self.registry.write().remove_subscriber(connection.id);
        stats::sub(&self.stats.connections_open, 1);
        stats::sub(&self.worker_stats[connection.worker].connections_open, 1);
        self.queues[connection.worker].push(&Record::Close {
            id: connection.id,
            code,
            reason,
        });
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
