//! The server facade: it starts the I/O threads and the listeners, and
//! offers the synchronous operations JavaScript calls from any thread
//! (send, end, stats, shutdown; the channel operations are in
//! `channels.rs`). None of them waits on I/O: they enqueue and return.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::{ListenerConfig, Protocol, ServerConfig};
use crate::connection::Connection;
use crate::events::EventQueue;
use crate::listener::{self, Listener};
use crate::outbound::{Eviction, OutItem, SendStatus};
use crate::state::{ServerState, UpgradeDecision};
use crate::stats::{self, StatsSnapshot, WorkerSnapshot};

/// A running server. Dropping it does not stop it: call [`Server::shutdown`].
pub struct Server {
    pub(crate) state: Arc<ServerState>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
}

impl Server {
    /// Start the I/O threads. Nothing listens until [`Server::listen`].
    pub fn new(config: ServerConfig) -> io::Result<Arc<Self>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.io_threads.max(1))
            .thread_name("switchboard-io")
            // Workers are woken once per I/O turn, not once per event.
            .on_thread_park(crate::events::wake_deferred)
            .on_thread_stop(crate::events::wake_deferred)
            .enable_all()
            .build()?;
        Ok(Arc::new(Self {
            state: Arc::new(ServerState::new(config)),
            runtime: Mutex::new(Some(runtime)),
        }))
    }

    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// Bind `addr` and accept connections speaking `config.protocol`, in
    /// TLS when `config.tls` is given; returns the bound address (useful
    /// with port 0). Several listeners share this server's state. TLS
    /// errors carry `ERR_TLS_CONFIG`.
    pub fn listen(&self, addr: SocketAddr, config: &ListenerConfig) -> io::Result<SocketAddr> {
        let kind = Listener {
            protocol: config.protocol,
            tls: config
                .tls
                .as_ref()
                .map(crate::tls::server_config)
                .transpose()?,
        };
        let runtime = self.running()?;
        let _guard = runtime.as_ref().map(|r| r.enter());
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let local = std_listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let state = self.state.clone();
        self.state
            .tracker
            .spawn(listener::accept_tcp(listener, state, kind));
        Ok(local)
    }

    /// Bind a Unix socket at `path` and accept connections speaking
    /// `protocol` on it. A stale socket file at `path` is replaced.
    pub fn listen_unix(&self, path: &std::path::Path, protocol: Protocol) -> io::Result<()> {
        let runtime = self.running()?;
        let _guard = runtime.as_ref().map(|r| r.enter());
        if std::fs::symlink_metadata(path)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        {
            std::fs::remove_file(path)?;
        }
        let listener = tokio::net::UnixListener::bind(path)?;
        let state = self.state.clone();
        self.state
            .tracker
            .spawn(listener::accept_unix(listener, state, protocol));
        Ok(())
    }

    fn running(&self) -> io::Result<parking_lot::MutexGuard<'_, Option<tokio::runtime::Runtime>>> {
        let runtime = self.runtime.lock();
        if runtime.is_none() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server was shut down",
            ));
        }
        if self.state.stopping.is_cancelled() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server is shutting down",
            ));
        }
        Ok(runtime)
    }

    pub fn queue(&self, worker: usize) -> Option<&Arc<EventQueue>> {
        self.state.queues.get(worker)
    }

    /// Send a message to one connection.
    pub fn send(&self, conn: u64, data: &[u8], binary: bool) -> SendStatus {
        let Some(connection) = self.state.connection(conn) else {
            return SendStatus::Closed;
        };
        let status = connection.send_message(data, binary);
        self.state.count_sent(status);
        status
    }

    /// Start the closing handshake of a connection.
    pub fn end(&self, conn: u64, code: u16, reason: &str) -> bool {
        let Some(connection) = self.state.connection(conn) else {
            return false;
        };
        let item = OutItem::Close {
            code,
            reason: reason.to_owned(),
        };
        connection.enqueue(item, 0) != SendStatus::Closed
    }

    /// Drop a connection without a closing handshake.
    pub fn terminate(&self, conn: u64) -> bool {
        self.state
            .connection(conn)
            .is_some_and(|c| c.outbound.evict(Eviction::Terminate))
    }

    pub fn buffered_amount(&self, conn: u64) -> Option<usize> {
        self.state.connection(conn).map(|c| c.outbound.buffered())
    }

    /// Deliver JavaScript's decision on a pending upgrade. False when the
    /// request is gone (the client left, or the hook took too long).
    pub fn resolve_upgrade(&self, conn: u64, decision: UpgradeDecision) -> bool {
        match self.state.pending_upgrades.lock().remove(&conn) {
            Some((_, sender)) => sender.send(decision).is_ok(),
            None => false,
        }
    }

    /// A worker died (or was replaced by the watchdog): its queued events are
    /// discarded and its connections closed with 1011.
    pub fn worker_died(&self, worker: usize) -> usize {
        let Some(queue) = self.state.queues.get(worker) else {
            return 0;
        };
        queue.clear();
        // Its pending upgrades will never be decided: answer them now (a
        // dropped sender reads as "no decision", which rejects with 503).
        self.state
            .pending_upgrades
            .lock()
            .retain(|_, (asked, _)| *asked != worker);
        let victims: Vec<Arc<Connection>> = self
            .state
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
        let s = &self.state.stats;
        let outbound: u64 = self
            .state
            .connections
            .read()
            .values()
            .map(|c| c.outbound.buffered() as u64)
            .sum();
        let registry = self.state.registry.read();
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
                .state
                .worker_stats
                .iter()
                .zip(&self.state.queues)
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
        let state = self.state.clone();
        runtime.block_on(async move {
            state.stopping.cancel();
            state.tracker.close();
            if tokio::time::timeout(drain_timeout, state.tracker.wait())
                .await
                .is_err()
            {
                state.force.cancel();
                // Forced connections end at their next poll; give them a
                // moment to report their close event.
                let _ = tokio::time::timeout(Duration::from_secs(1), state.tracker.wait()).await;
            }
        });
        // Tasks are done; this joins the I/O threads.
        runtime.shutdown_timeout(Duration::from_secs(1));
        for queue in &self.state.queues {
            queue.set_waker(None);
        }
    }

    pub fn is_running(&self) -> bool {
        self.runtime.lock().is_some()
    }
}
