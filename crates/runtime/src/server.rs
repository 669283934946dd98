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
use crate::connection::{Connection, ConnectionKind};
use crate::errors;
use crate::events::EventQueue;
use crate::outbound::{Eviction, OutItem, SendStatus};
use crate::reactor::accept::{ListenSocket, Listening};
use crate::reactor::IoThreads;
use crate::state::{ServerState, UpgradeDecision};
use crate::stats::StatsSnapshot;

/// A running server. Dropping it does not stop it: call [`Server::shutdown`].
pub struct Server {
    pub(crate) state: Arc<ServerState>,
    /// `None` once shut down.
    io: Mutex<Option<IoThreads>>,
}

impl Server {
    /// Start the I/O threads. Nothing listens until [`Server::listen`].
    pub fn new(config: ServerConfig) -> io::Result<Arc<Self>> {
        let threads = config.io_threads.max(1);
        let scheduling = config.io_scheduling;
        let state = Arc::new(
            ServerState::new(config).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
        );
        let io = IoThreads::start(&state, threads, scheduling)?;
        Ok(Arc::new(Self {
            state,
            io: Mutex::new(Some(io)),
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
        let tls = config
            .tls
            .as_ref()
            .map(crate::tls::server_config)
            .transpose()?;
        let io = self.running()?;
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let socket = ListenSocket::Tcp(mio::net::TcpListener::from_std(listener));
        if let Some(io) = io.as_ref() {
            io.listen(Listening::new(socket, config.protocol, tls));
        }
        Ok(local)
    }

    /// Bind a Unix socket at `path` and accept connections speaking
    /// `protocol` on it. A stale socket file at `path` is replaced.
    pub fn listen_unix(&self, path: &std::path::Path, protocol: Protocol) -> io::Result<()> {
        let io = self.running()?;
        if std::fs::symlink_metadata(path)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        {
            std::fs::remove_file(path)?;
        }
        let listener = std::os::unix::net::UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        let socket = ListenSocket::Unix(mio::net::UnixListener::from_std(listener));
        if let Some(io) = io.as_ref() {
            io.listen(Listening::new(socket, protocol, None));
        }
        Ok(())
    }

    fn running(&self) -> io::Result<parking_lot::MutexGuard<'_, Option<IoThreads>>> {
        let io = self.io.lock();
        if io.is_none() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server was shut down",
            ));
        }
        if self.state.is_stopping() {
            return Err(io::Error::other(
                "ERR_SERVER_CLOSED: the server is shutting down",
            ));
        }
        Ok(io)
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

    /// Queue a response (or its head and first piece) on an HTTP
    /// connection (`http::respond`).
    pub fn http_respond(&self, conn: u64, parts: &crate::http::ResponseParts<'_>) -> SendStatus {
        match self.http_connection(conn) {
            Some(connection) => crate::http::respond::respond(
                &connection,
                parts,
                self.state.config.http.compression.as_ref(),
                &self.state.http_metrics,
            ),
            None => SendStatus::Closed,
        }
    }

    /// Queue the next piece of a streamed response (`http::respond::write`;
    /// `ending`: the response's status and its request's start, counted
    /// when the piece ends it).
    pub fn http_write(&self, conn: u64, data: &[u8], flags: u32, ending: (u16, u64)) -> SendStatus {
        match self.http_connection(conn) {
            Some(connection) => crate::http::respond::write(
                &connection,
                data,
                flags,
                ending,
                &self.state.http_metrics,
            ),
            None => SendStatus::Closed,
        }
    }

    /// Answer the first response in line of an HTTP connection with a
    /// file (`res.file`): the order goes to the connection's I/O thread,
    /// which opens and sends the file and reports how it went
    /// (`HTTP_FILE_DONE`); this thread does no disk access.
    pub fn http_file(&self, conn: u64, order: crate::http::FileOrder) -> SendStatus {
        match self.http_connection(conn) {
            Some(connection) => connection.outbound.order_file(Box::new(order)),
            None => SendStatus::Closed,
        }
    }

    /// The handlers of an HTTP connection consumed `bytes` more of its
    /// request bodies (`outbound/http.rs`).
    pub fn http_body_consumed(&self, conn: u64, bytes: u64) {
        if let Some(connection) = self.http_connection(conn) {
            connection.outbound.body_consumed(bytes);
        }
    }

    /// The handler of body number `body` (counted from 0 over the
    /// connection's life) answered without reading all of it.
    pub fn http_discard_body(&self, conn: u64, body: u32) {
        if let Some(connection) = self.http_connection(conn) {
            connection.outbound.discard_body(body);
        }
    }

    fn http_connection(&self, conn: u64) -> Option<Arc<Connection>> {
        self.state
            .connection(conn)
            .filter(|c| c.kind == ConnectionKind::Http)
    }

    /// Start the closing handshake of a connection. `go_away`: a protocol
    /// connection gets a GO_AWAY first (false when JavaScript wrote it).
    pub fn end(&self, conn: u64, code: u16, reason: &str, go_away: bool) -> bool {
        let Some(connection) = self.state.connection(conn) else {
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
    /// A SockJS session's worker handled the messages of a send that HTTP
    /// connection `http` carried: the send's answer, which waited for it,
    /// goes (`session/http/sockjs_send.rs`). False when the connection is
    /// gone.
    pub fn sockjs_sent(&self, http: u64) -> bool {
        self.state.connection(http).is_some_and(|connection| {
            connection.outbound.sockjs_acked();
            true
        })
    }

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
        let pending = self.state.pending_upgrades.lock().remove(&conn);
        match pending {
            Some(pending) => {
                (pending.reply)(decision);
                true
            }
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
        // Its pending upgrades will never be decided: answer them now, as
        // if the hook had not answered in time (503).
        let orphaned: Vec<_> = {
            let mut pending = self.state.pending_upgrades.lock();
            let ids: Vec<u64> = pending
                .iter()
                .filter(|(_, p)| p.worker == worker)
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id))
                .collect()
        };
        for pending in orphaned {
            let failure = errors::UPGRADE_TIMEOUT;
            (pending.reply)(UpgradeDecision::Reject {
                status: failure.status,
                reason: failure.reason(),
            });
        }
        let victims: Vec<Arc<Connection>> = self
            .state
            .connections
            .read()
            .values()
            .filter(|c| c.worker() == worker)
            .cloned()
            .collect();
        for connection in &victims {
            connection.outbound.evict(Eviction::WorkerDied);
        }
        victims.len()
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.state.stats_snapshot()
    }

    /// HTTP responses by route and status, with their latency histograms.
    pub fn http_stats(&self) -> Vec<crate::http::metrics::RouteSnapshot> {
        self.state.http_metrics.snapshot()
    }

    /// The metrics endpoint's text (`http/exposition.rs`).
    pub fn metrics_text(&self) -> String {
        crate::http::exposition::render(
            &self.state.stats_snapshot(),
            &self.state.http_metrics.snapshot(),
        )
    }

    /// Graceful shutdown: stop accepting, send close 1001 to every
    /// connection (a GO_AWAY to protocol streams), wait up to
    /// `drain_timeout` for them to finish, then end the rest and stop the
    /// I/O threads. Blocks the calling thread; the binding runs it off the
    /// JavaScript thread.
    pub fn shutdown(&self, drain_timeout: Duration) {
        let Some(io) = self.io.lock().take() else {
            return;
        };
        // Leave the broker first: the other nodes stop sending us the
        // channels' traffic while the connections drain.
        if let Some(bridge) = self.state.bridge.get() {
            bridge.shutdown();
        }
        self.state
            .stopping
            .store(true, std::sync::atomic::Ordering::Release);
        io.shutdown(drain_timeout);
        for queue in &self.state.queues {
            queue.set_waker(None);
        }
    }

    pub fn is_running(&self) -> bool {
        self.io.lock().is_some()
    }
}
