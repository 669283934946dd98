//! The server: shared state of every listener and connection, and the
//! synchronous operations JavaScript calls from any thread (send, publish,
//! subscribe...). None of them waits on I/O: they enqueue and return.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::ServerConfig;
use crate::events::EventQueue;
use crate::listener;
use crate::outbound::{Eviction, OutItem, Outbound, SendStatus};
use crate::stats::{self, Stats, StatsSnapshot, WorkerSnapshot, WorkerStats};

/// What JavaScript's `upgrade` hook decided.
#[derive(Debug)]
pub enum UpgradeDecision {
    /// Complete the handshake, optionally choosing the subprotocol.
    Accept { protocol: Option<String> },
    /// Answer with this HTTP status and reason instead of `101`.
    Reject { status: u16, reason: String },
}

thread_local! {
    /// How deeply the calling thread is corked (see [`cork`]).
    static CORK_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Connections whose wake-up waits for the outermost [`uncork`].
    static CORKED: RefCell<Vec<Arc<Connection>>> = const { RefCell::new(Vec::new()) };
}

/// Defer the wake-ups of connections this thread sends to until
/// [`uncork`]. A JavaScript worker corks while it dispatches a batch of
/// events, so every message its handlers send to one connection in that
/// batch leaves in one vectored write instead of one write (and one task
/// wake-up) each. Nests; only the outermost `uncork` wakes.
pub fn cork() {
    CORK_DEPTH.with(|depth| depth.set(depth.get() + 1));
}

/// End a [`cork`]; the outermost one wakes every connection sent to since.
pub fn uncork() {
    let outermost = CORK_DEPTH.with(|depth| {
        let d = depth.get().saturating_sub(1);
        depth.set(d);
        d == 0
    });
    if outermost {
        let corked = CORKED.with(|list| std::mem::take(&mut *list.borrow_mut()));
        for connection in corked {
            connection.outbound.wake();
        }
    }
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

/// Published frames up to this size are copied into each recipient's queue
/// rather than shared: below it a copy costs less than the shared buffer's
/// reference counting and a slice of its own in every vectored write.
const COPY_FRAMES_UP_TO: usize = 512;

/// What every thread can reach of an open connection.
pub struct Connection {
    pub id: u64,
    pub worker: usize,
    pub outbound: Outbound,
    /// Whether it compresses (then it frames its own messages).
    pub deflate: bool,
    /// A Switchboard protocol stream: what JavaScript sends is already
    /// framed (protocol frames) and goes out as is.
    pub raw: bool,
    /// Speaks the Switchboard protocol (on a raw stream or over WebSocket).
    pub wire: bool,
}

impl Connection {
    /// Queue an item; the task is woken now, or at [`uncork`] when the
    /// calling thread is corked.
    pub fn enqueue(self: &Arc<Self>, item: OutItem, len: usize) -> SendStatus {
        let (status, wake) = self.outbound.push(item, len);
        self.woken(wake);
        status
    }

    /// Queue a frame shared with other recipients: small ones are copied
    /// into the connection's coalescing buffer, larger ones shared.
    pub fn enqueue_frame(self: &Arc<Self>, framed: &bytes::Bytes) -> SendStatus {
        let (status, wake) = if framed.len() <= COPY_FRAMES_UP_TO {
            self.outbound.push_frame_copy(framed)
        } else {
            self.outbound
                .push(OutItem::Frame(framed.clone()), framed.len())
        };
        self.woken(wake);
        status
    }

    /// Queue a message for this connection alone, framed into its queue
    /// (see [`Outbound::push_message`]).
    pub fn send_message(self: &Arc<Self>, payload: &[u8], binary: bool) -> SendStatus {
        if self.deflate {
            return self.enqueue_to_compress(bytes::Bytes::copy_from_slice(payload), binary);
        }
        let (status, wake) = if self.raw {
            self.outbound.push_frame_copy(payload)
        } else {
            self.outbound.push_message(payload, binary)
        };
        self.woken(wake);
        status
    }

    /// Queue a payload for a compressing connection, which compresses and
    /// frames it itself with its own deflate context.
    fn enqueue_to_compress(self: &Arc<Self>, payload: bytes::Bytes, binary: bool) -> SendStatus {
        let len = payload.len();
        self.enqueue(OutItem::Message { payload, binary }, len)
    }

    /// Wake the task now, or at the outermost `uncork` when corked.
    fn woken(self: &Arc<Self>, wake: bool) {
        if wake {
            if CORK_DEPTH.with(Cell::get) > 0 {
                CORKED.with(|list| list.borrow_mut().push(self.clone()));
            } else {
                self.outbound.wake();
            }
        }
    }
}

/// Shared state of one server.
pub struct Shared {
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

impl Shared {
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

    /// Queue `payload` for one connection, framing it if the connection does
    /// not compress. `framed` lets a caller that already framed the message
    /// (a publish) share those bytes. The caller counts the outcome
    /// ([`Shared::count_sent`]); a publish counts once for all recipients.
    pub fn deliver(
        &self,
        conn: &Arc<Connection>,
        payload: &bytes::Bytes,
        framed: &bytes::Bytes,
        binary: bool,
        wire: &mut crate::channels::WireFrames<'_>,
    ) -> SendStatus {
        if conn.wire {
            // A protocol connection gets the publish as an unnumbered
            // one-way MESSAGE (docs/protocol.md §4), framed once per publish.
            let frame = if conn.raw {
                wire.raw()
            } else {
                wire.over_websocket()
            };
            return match frame {
                Some(frame) => conn.enqueue_frame(frame),
                None => SendStatus::Dropped,
            };
        }
        if conn.deflate {
            conn.enqueue_to_compress(payload.clone(), binary)
        } else {
            conn.enqueue_frame(framed)
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

/// A running server. Dropping it does not stop it: call [`Server::shutdown`].
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    listening: Mutex<Vec<SocketAddr>>,
}

impl Server {
    /// Start the I/O threads. Nothing listens until [`Server::listen`].
    pub fn new(config: ServerConfig) -> io::Result<Arc<Self>> {
        let workers = config.workers.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.io_threads.max(1))
            .thread_name("switchboard-io")
            // Workers are woken once per I/O turn, not once per event.
            .on_thread_park(crate::events::wake_deferred)
            .on_thread_stop(crate::events::wake_deferred)
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
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
        });
        Ok(Arc::new(Self {
            shared,
            runtime: Mutex::new(Some(runtime)),
            listening: Mutex::new(Vec::new()),
        }))
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Bind `addr` and start accepting HTTP and WebSocket connections;
    /// returns the bound address (useful with port 0). Several listeners
    /// share this server's state.
    pub fn listen(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        self.bind_tcp(addr, listener::Endpoint::Http)
    }

    /// Bind `addr` and accept Switchboard protocol connections on it.
    pub fn listen_wire(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        self.bind_tcp(addr, listener::Endpoint::Wire)
    }

    /// Bind `addr` and accept Switchboard protocol connections inside TLS.
    pub fn listen_wire_tls(
        &self,
        addr: SocketAddr,
        options: &crate::tls::TlsOptions,
    ) -> io::Result<SocketAddr> {
        let config = crate::tls::server_config(options)?;
        self.bind_tcp(addr, listener::Endpoint::WireTls(config))
    }

    /// Bind a Unix socket at `path` and accept Switchboard protocol
    /// connections on it. A stale socket file at `path` is replaced.
    pub fn listen_wire_unix(&self, path: &std::path::Path) -> io::Result<()> {
        let runtime = self.running()?;
        let _guard = runtime.as_ref().map(|r| r.enter());
        if std::fs::symlink_metadata(path)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        {
            std::fs::remove_file(path)?;
        }
        let listener = tokio::net::UnixListener::bind(path)?;
        let shared = self.shared.clone();
        self.shared
            .tracker
            .spawn(listener::accept_unix_loop(listener, shared));
        Ok(())
    }

    fn running(&self) -> io::Result<parking_lot::MutexGuard<'_, Option<tokio::runtime::Runtime>>> {
        let runtime = self.runtime.lock();
        if runtime.is_none() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server was shut down",
            ));
        }
        if self.shared.stopping.is_cancelled() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server is shutting down",
            ));
        }
        Ok(runtime)
    }

    fn bind_tcp(&self, addr: SocketAddr, endpoint: listener::Endpoint) -> io::Result<SocketAddr> {
        let runtime = self.running()?;
        let _guard = runtime.as_ref().map(|r| r.enter());
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let local = std_listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let shared = self.shared.clone();
        self.shared
            .tracker
            .spawn(listener::accept_loop(listener, shared, endpoint));
        self.listening.lock().push(local);
        Ok(local)
    }

    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.listening.lock().clone()
    }

    pub fn queue(&self, worker: usize) -> Option<&Arc<EventQueue>> {
        self.shared.queues.get(worker)
    }

    /// Send a message to one connection.
    pub fn send(&self, conn: u64, data: &[u8], binary: bool) -> SendStatus {
        let Some(connection) = self.shared.connection(conn) else {
            return SendStatus::Closed;
        };
        let status = connection.send_message(data, binary);
        self.shared.count_sent(status);
        status
    }

    /// Start the closing handshake of a connection. `go_away`: a protocol
    /// connection gets a GO_AWAY first (false when JavaScript wrote it).
    pub fn end(&self, conn: u64, code: u16, reason: &str, go_away: bool) -> bool {
        let Some(connection) = self.shared.connection(conn) else {
            return false;
        };
        let item = OutItem::Close {
            code,
            reason: reason.to_owned(),
            go_away,
        };
        connection.enqueue(item, 0) != SendStatus::Closed
    }

    /// Drop a connection without a closing handshake.
    pub fn terminate(&self, conn: u64) -> bool {
        self.shared
            .connection(conn)
            .is_some_and(|c| c.outbound.evict(Eviction::Terminate))
    }

    pub fn buffered_amount(&self, conn: u64) -> Option<usize> {
        self.shared.connection(conn).map(|c| c.outbound.buffered())
    }

    /// Deliver JavaScript's decision on a pending upgrade. False when the
    /// request is gone (the client left, or the hook took too long).
    pub fn resolve_upgrade(&self, conn: u64, decision: UpgradeDecision) -> bool {
        match self.shared.pending_upgrades.lock().remove(&conn) {
            Some((_, sender)) => sender.send(decision).is_ok(),
            None => false,
        }
    }

    /// A worker died (or was replaced by the watchdog): its queued events are
    /// discarded and its connections closed with 1011.
    pub fn worker_died(&self, worker: usize) -> usize {
        let Some(queue) = self.shared.queues.get(worker) else {
            return 0;
        };
        queue.clear();
        // Its pending upgrades will never be decided: answer them now (a
        // dropped sender reads as "no decision", which rejects with 503).
        self.shared
            .pending_upgrades
            .lock()
            .retain(|_, (asked, _)| *asked != worker);
        let victims: Vec<Arc<Connection>> = self
            .shared
            .connections
            .read()
            .values()
            .filter(|c| c.worker == worker)
            .cloned()
            .collect();
        for connection in &victims {
            connection.outbound.evict(Eviction::WorkerDied);
        }
        victims.len()
    }

    pub fn stats(&self) -> StatsSnapshot {
        let s = &self.shared.stats;
        let outbound: u64 = self
            .shared
            .connections
            .read()
            .values()
            .map(|c| c.outbound.buffered() as u64)
            .sum();
        let registry = self.shared.registry.read();
        StatsSnapshot {
            connections_open: stats::get(&s.connections_open),
            connections_total: stats::get(&s.connections_total),
            handshakes_rejected: stats::get(&s.handshakes_rejected),
            messages_in: stats::get(&s.messages_in),
            bytes_in: stats::get(&s.bytes_in),
            messages_out: stats::get(&s.messages_out),
            bytes_out: stats::get(&s.bytes_out),
            messages_dropped: stats::get(&s.messages_dropped),
            protocol_errors: stats::get(&s.protocol_errors),
            outbound_buffered_bytes: outbound,
            channels: registry.channel_count() as u64,
            subscriptions: registry.subscription_count() as u64,
            workers: self
                .shared
                .worker_stats
                .iter()
                .zip(&self.shared.queues)
                .map(|(w, q)| WorkerSnapshot {
                    connections_open: stats::get(&w.connections_open),
                    messages_in: stats::get(&w.messages_in),
                    queued_event_bytes: q.queued_bytes() as u64,
                })
                .collect(),
        }
    }

    /// Graceful shutdown: stop accepting, send close 1001 to every
    /// connection, wait up to `drain_timeout` for them to finish, then end
    /// the rest and stop the I/O threads. Blocks the calling thread; the
    /// binding runs it off the JavaScript thread.
    pub fn shutdown(&self, drain_timeout: Duration) {
        let Some(runtime) = self.runtime.lock().take() else {
            return;
        };
        let shared = self.shared.clone();
        runtime.block_on(async move {
            shared.stopping.cancel();
            shared.tracker.close();
            if tokio::time::timeout(drain_timeout, shared.tracker.wait())
                .await
                .is_err()
            {
                shared.force.cancel();
                // Forced connections end at their next poll; give them a
                // moment to report their close event.
                let _ = tokio::time::timeout(Duration::from_secs(1), shared.tracker.wait()).await;
            }
        });
        // Tasks are done; this joins the I/O threads.
        runtime.shutdown_timeout(Duration::from_secs(1));
        for queue in &self.shared.queues {
            queue.set_waker(None);
        }
        self.listening.lock().clear();
    }

    pub fn is_running(&self) -> bool {
        self.runtime.lock().is_some()
    }
}
