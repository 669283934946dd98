//! The thin N-API binding of Switchboard: type conversion, error codes and
//! batched event delivery. All logic lives in `switchboard-runtime`.
//!
//! A server is created once (on the main thread) and registered under a
//! numeric id; every worker thread loads this addon too and attaches to the
//! same server by id. The shared library is loaded once per process, so the
//! registry below is shared by all threads.

mod history;
mod hot;
mod options;
mod presence;
mod raw;
mod routes;
mod sessions;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Function};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::{Env, Error, Result, Status, Task};
use napi_derive::napi;
use parking_lot::Mutex;
use switchboard_runtime::channels::PublishTarget;
use switchboard_runtime::{ListenerConfig, Protocol, Server, UpgradeDecision};

pub use hot::{content_type_of, drain_events, http_body_consumed, http_discard_body, http_file};
pub use options::{
    CompressionOptions, RouteOptions, RpcOptions, ServerOptions, SniCertificate,
    StaticRouteOptions, TlsListenOptions,
};
pub use routes::{RouteFound, RouteTable};

static SERVERS: LazyLock<Mutex<HashMap<u32, Arc<Server>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_SERVER_ID: AtomicU32 = AtomicU32::new(1);

impl From<SocketAddr> for ListenAddress {
    fn from(bound: SocketAddr) -> Self {
        Self {
            host: bound.ip().to_string(),
            port: bound.port().into(),
        }
    }
}

fn socket_address(host: &str, port: u32) -> Result<SocketAddr> {
    let ip: IpAddr = host
        .parse()
        .map_err(|_| coded("ERR_INVALID_OPTION", format!("not an IP address: {host:?}")))?;
    let port = u16::try_from(port)
        .map_err(|_| coded("ERR_INVALID_OPTION", format!("port out of range: {port}")))?;
    Ok(SocketAddr::new(ip, port))
}

fn protocol_of(name: &str) -> Result<Protocol> {
    match name {
        "http" => Ok(Protocol::Http),
        "rpc" => Ok(Protocol::Rpc),
        other => Err(coded(
            "ERR_INVALID_OPTION",
            format!("protocol must be \"http\" or \"rpc\", got {other:?}"),
        )),
    }
}

fn coded(code: &str, message: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, format!("{code}: {message}"))
}

/// A broker's refusal of an operation on another node's connection, as
/// `publish` reports it.
fn refused(error: switchboard_runtime::BridgeError) -> Error {
    let why = match error {
        switchboard_runtime::BridgeError::Unavailable => {
            "the broker is not connected; nothing was sent to the other node"
        }
        switchboard_runtime::BridgeError::Backlog => {
            "too many messages wait for the broker (broker.maxPendingPublishes)"
        }
    };
    coded(error.code(), why)
}

/// Ids cross as JavaScript numbers: 53 bits at most (a node number in the
/// high 10, a per-node counter in the low 43; `switchboard_runtime::ids`),
/// so they are exact there.
fn id_to_js(id: u64) -> i64 {
    id as i64
}

fn id_from_js(id: i64) -> u64 {
    id.max(0) as u64
}

/// An address the server listens on.
#[napi(object)]
pub struct ListenAddress {
    pub host: String,
    pub port: u32,
}

/// Counters of one worker.
#[napi(object)]
pub struct WorkerStatsJs {
    pub connections_open: i64,
    pub messages_in: i64,
    pub queued_event_bytes: i64,
}

/// Counters of the server (see `docs/api.md`).
#[napi(object)]
pub struct StatsJs {
    pub connections_open: i64,
    pub connections_total: i64,
    pub handshakes_rejected: i64,
    pub messages_in: i64,
    pub bytes_in: i64,
    pub messages_out: i64,
    pub bytes_out: i64,
    pub messages_dropped: i64,
    pub protocol_errors: i64,
    pub http_requests: i64,
    pub outbound_buffered_bytes: i64,
    pub channels: i64,
    pub subscriptions: i64,
    /// Publishes the broker accepted and lost because Redis failed while
    /// they were sent (docs/scale-out.md).
    pub broker_publishes_lost: i64,
    /// This server's node number (docs/scale-out.md, "Nodes"): 0 without
    /// a broker, or before one was claimed.
    pub broker_node: u32,
    /// The live nodes sharing the broker (heard from within
    /// `broker.nodeTtl`), this one included, ascending; empty without a
    /// broker.
    pub broker_nodes: Vec<u32>,
    /// Node messages from Redis that were malformed (ignored).
    pub broker_node_messages_invalid: i64,
    /// Heartbeats that found this node's number held by another node.
    pub broker_node_conflicts: i64,
    pub workers: Vec<WorkerStatsJs>,
    /// HTTP responses by route label, those that counted one.
    pub http: Vec<HttpRouteStatsJs>,
}

/// HTTP responses of one route label (`switchboard_runtime::http::metrics`).
#[napi(object)]
pub struct HttpRouteStatsJs {
    pub route: String,
    /// Responses by status code (`"200"`), class (`"4xx"`) or `"other"`.
    pub statuses: std::collections::HashMap<String, i64>,
    /// Responses per latency bucket (not cumulative): one per bound of
    /// `latencyBounds` (seconds), then one above the last.
    pub latency_buckets: Vec<i64>,
    pub latency_bounds: Vec<f64>,
    pub latency_sum_seconds: f64,
    pub count: i64,
}

/// A handle on a native server, usable from any thread.
#[napi]
pub struct ServerHandle {
    id: u32,
    server: Arc<Server>,
}

#[napi]
impl ServerHandle {
    /// Create a server (I/O threads start; nothing listens yet).
    ///
    /// The server belongs to the thread that created it: if that thread's
    /// environment ends without `close()` (a worker thread that exits or is
    /// terminated), the server is shut down with it. Otherwise it would go on
    /// listening, with its I/O threads, accepting connections nobody handles.
    #[napi(factory)]
    pub fn create(env: Env, mut options: ServerOptions) -> Result<Self> {
        let broker = options.broker.take().map(options::broker_config);
        let config = options::server_config(options)?;
        let server = Server::new(config).map_err(|e| coded("ERR_SERVER_START", e))?;
        if let Some(broker) = broker {
            if let Err(error) = switchboard_broker::Broker::attach(&server, broker) {
                server.shutdown(Duration::ZERO);
                return Err(coded("ERR_INVALID_OPTION", format!("broker: {error}")));
            }
        }
        let id = NEXT_SERVER_ID.fetch_add(1, Ordering::Relaxed);
        let owned = Arc::downgrade(&server);
        if let Err(error) = env.add_env_cleanup_hook(owned, move |owned| {
            if let Some(server) = owned.upgrade() {
                server.shutdown(Duration::ZERO);
            }
            SERVERS.lock().remove(&id);
        }) {
            server.shutdown(Duration::ZERO);
            return Err(error);
        }
        SERVERS.lock().insert(id, server.clone());
        Ok(Self { id, server })
    }

    /// Attach to a server created on another thread.
    #[napi(factory)]
    pub fn open(id: u32) -> Result<Self> {
        let server = SERVERS
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| coded("ERR_SERVER_CLOSED", format!("no server with id {id}")))?;
        Ok(Self { id, server })
    }

    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Bind `host:port` (port 0 picks a free port) and accept connections
    /// speaking `protocol` (`"http"`, the default: HTTP and WebSocket;
    /// `"rpc"`: the Switchboard protocol), inside TLS when `tls` is given.
    #[napi]
    pub fn listen(
        &self,
        host: String,
        port: u32,
        protocol: Option<String>,
        tls: Option<options::TlsListenOptions>,
    ) -> Result<ListenAddress> {
        let config = ListenerConfig {
            protocol: protocol_of(protocol.as_deref().unwrap_or("http"))?,
            tls: tls.map(options::tls_options),
        };
        let bound = self
            .server
            .listen(socket_address(&host, port)?, &config)
            .map_err(|e| {
                let message = e.to_string();
                match message.strip_prefix("ERR_TLS_CONFIG: ") {
                    Some(rest) => coded("ERR_TLS_CONFIG", rest),
                    None => coded("ERR_LISTEN", message),
                }
            })?;
        Ok(ListenAddress::from(bound))
    }

    /// Bind a Unix socket at `path` for connections speaking `protocol`.
    #[napi]
    pub fn listen_unix(&self, path: String, protocol: String) -> Result<()> {
        self.server
            .listen_unix(std::path::Path::new(&path), protocol_of(&protocol)?)
            .map_err(|e| coded("ERR_LISTEN", e))
    }

    /// Register the calling thread as worker `index`: `wake` is called (on
    /// this thread) whenever events are waiting; the worker then calls
    /// `drain`. While attached, the thread's event loop stays alive.
    #[napi]
    pub fn attach_worker(&self, index: u32, wake: Function<(), ()>) -> Result<()> {
        let queue = self
            .server
            .queue(index as usize)
            .ok_or_else(|| coded("ERR_INVALID_WORKER", format!("no worker {index}")))?
            .clone();
        let tsfn = Arc::new(
            wake.build_threadsafe_function::<()>()
                .callee_handled::<false>()
                .build()?,
        );
        queue.set_waker(Some(Arc::new(move || {
            tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        })));
        Ok(())
    }

    /// Stop waking worker `index` (lets its event loop end).
    #[napi]
    pub fn detach_worker(&self, index: u32) {
        if let Some(queue) = self.server.queue(index as usize) {
            queue.set_waker(None);
        }
    }

    /// Start the closing handshake. A protocol connection sends a GO_AWAY
    /// first (its code from `reason`) unless `goAway` is false: its
    /// JavaScript peer wrote one already. A connection of another node:
    /// true once handed to the broker (which may throw
    /// `ERR_BROKER_UNAVAILABLE` / `ERR_BROKER_BACKLOG`).
    #[napi]
    pub fn end(
        &self,
        connection: i64,
        code: u32,
        reason: String,
        go_away: Option<bool>,
    ) -> Result<bool> {
        self.server
            .end_anywhere(
                id_from_js(connection),
                code as u16,
                &reason,
                go_away.unwrap_or(true),
            )
            .map_err(refused)
    }

    /// A SockJS session's handlers ran for the messages of a send that
    /// HTTP connection `http` carried: its answer, waiting for them, goes.
    #[napi]
    pub fn sockjs_sent(&self, http: i64) -> bool {
        self.server.sockjs_sent(id_from_js(http))
    }

    /// Drop the connection at once (on any node, as `end`).
    #[napi]
    pub fn terminate(&self, connection: i64) -> Result<bool> {
        self.server
            .terminate_anywhere(id_from_js(connection))
            .map_err(refused)
    }

    /// Bytes queued and not yet written (-1 when closed).
    #[napi]
    pub fn buffered_amount(&self, connection: i64) -> i64 {
        self.server
            .buffered_amount(id_from_js(connection))
            .map_or(-1, |n| n as i64)
    }

    /// Answer a pending `upgrade`.
    #[napi]
    pub fn resolve_upgrade(
        &self,
        connection: i64,
        accept: bool,
        status: u32,
        reason: String,
        protocol: Option<String>,
    ) -> bool {
        let decision = if accept {
            UpgradeDecision::Accept { protocol }
        } else {
            UpgradeDecision::Reject {
                status: status as u16,
                reason,
            }
        };
        self.server
            .resolve_upgrade(id_from_js(connection), decision)
    }

    /// Publish to channels and subscribers (connections or virtual sockets)
    /// at once, on every node; each recipient gets the message once.
    /// Returns the recipients on this node.
    #[napi]
    pub fn publish_to(
        &self,
        channels: Vec<String>,
        subscribers: Vec<i64>,
        data: &[u8],
        binary: bool,
        exclude: Option<i64>,
    ) -> Result<u32> {
        let mut targets: Vec<PublishTarget<'_>> =
            channels.iter().map(|c| PublishTarget::Channel(c)).collect();
        targets.extend(
            subscribers
                .iter()
                .map(|&s| PublishTarget::Subscriber(id_from_js(s))),
        );
        self.server
            .publish_to_anywhere(&targets, data, binary, exclude.map(id_from_js))
            .map(|n| n as u32)
            .map_err(refused)
    }

    /// Add `delta` to the subscription counts; returns the subscribers of
    /// this node whose membership changed (those of other nodes are
    /// handed to the broker and never listed).
    #[napi]
    pub fn subscribe(
        &self,
        subscribers: Vec<i64>,
        channel: String,
        delta: i32,
    ) -> Result<Vec<i64>> {
        let ids: Vec<u64> = subscribers.into_iter().map(id_from_js).collect();
        let changed = self
            .server
            .subscribe_anywhere(&ids, &channel, delta)
            .map_err(refused)?;
        Ok(changed.into_iter().map(id_to_js).collect())
    }

    /// True when a subscription of this node was removed, or the request
    /// was handed to the broker for another node's subscriber.
    #[napi]
    pub fn unsubscribe(&self, subscriber: i64, channel: String) -> Result<bool> {
        self.server
            .unsubscribe_anywhere(id_from_js(subscriber), &channel)
            .map_err(refused)
    }

    #[napi]
    pub fn is_subscribed(&self, subscriber: i64, channel: String) -> bool {
        self.server.is_subscribed(id_from_js(subscriber), &channel)
    }

    #[napi]
    pub fn subscriber_count(&self, channel: String) -> u32 {
        self.server.subscriber_count(&channel) as u32
    }

    #[napi]
    pub fn channels_of(&self, subscriber: i64) -> Vec<String> {
        self.server.channels_of(id_from_js(subscriber))
    }

    #[napi]
    pub fn subscribers_of(&self, channel: String) -> Vec<i64> {
        self.server
            .subscribers_of(&channel)
            .into_iter()
            .map(id_to_js)
            .collect()
    }

    #[napi]
    pub fn copy_subscriptions(&self, from: String, to: String) -> Vec<i64> {
        self.server
            .copy_subscriptions(&from, &to)
            .into_iter()
            .map(id_to_js)
            .collect()
    }

    /// Returns the new virtual socket's id, or -1 when `target` is unknown.
    #[napi]
    pub fn create_virtual_socket(&self, target: i64, tag: Option<&[u8]>) -> i64 {
        let tag = tag.map(bytes::Bytes::copy_from_slice);
        self.server
            .create_virtual_socket(id_from_js(target), tag)
            .map_or(-1, id_to_js)
    }

    /// Returns the ids of every virtual socket removed.
    #[napi]
    pub fn delete_virtual_socket(&self, id: i64, expected_target: Option<i64>) -> Result<Vec<i64>> {
        self.server
            .delete_virtual_socket(id_from_js(id), expected_target.map(id_from_js))
            .map(|ids| ids.into_iter().map(id_to_js).collect())
            .map_err(|e| coded(e.code(), e))
    }

    /// Close every connection of a dead worker with 1011.
    #[napi]
    pub fn worker_died(&self, index: u32) -> u32 {
        self.server.worker_died(index as usize) as u32
    }

    #[napi]
    pub fn stats(&self) -> StatsJs {
        let s = self.server.stats();
        let nodes = self.server.nodes_view().unwrap_or_default();
        StatsJs {
            broker_node: u32::from(nodes.node),
            broker_nodes: nodes.live.into_iter().map(u32::from).collect(),
            broker_node_messages_invalid: nodes.invalid_messages as i64,
            broker_node_conflicts: nodes.conflicts as i64,
            connections_open: s.connections_open as i64,
            connections_total: s.connections_total as i64,
            handshakes_rejected: s.handshakes_rejected as i64,
            messages_in: s.messages_in as i64,
            bytes_in: s.bytes_in as i64,
            messages_out: s.messages_out as i64,
            bytes_out: s.bytes_out as i64,
            messages_dropped: s.messages_dropped as i64,
            protocol_errors: s.protocol_errors as i64,
            http_requests: s.http_requests as i64,
            outbound_buffered_bytes: s.outbound_buffered_bytes as i64,
            channels: s.channels as i64,
            subscriptions: s.subscriptions as i64,
            broker_publishes_lost: s.broker_publishes_lost as i64,
            workers: s
                .workers
                .into_iter()
                .map(|w| WorkerStatsJs {
                    connections_open: w.connections_open as i64,
                    messages_in: w.messages_in as i64,
                    queued_event_bytes: w.queued_event_bytes as i64,
                })
                .collect(),
            http: self
                .server
                .http_stats()
                .into_iter()
                .map(|r| HttpRouteStatsJs {
                    route: r.route,
                    statuses: r.statuses.into_iter().map(|(k, v)| (k, v as i64)).collect(),
                    latency_buckets: r.buckets.into_iter().map(|n| n as i64).collect(),
                    latency_bounds: switchboard_runtime::http::metrics::BUCKETS_US
                        .iter()
                        .map(|&us| us as f64 / 1e6)
                        .collect(),
                    latency_sum_seconds: r.sum_us as f64 / 1e6,
                    count: r.count as i64,
                })
                .collect(),
        }
    }

    /// Every counter in Prometheus's text format, as the metrics endpoint
    /// serves it.
    #[napi]
    pub fn metrics_text(&self) -> String {
        self.server.metrics_text()
    }

    /// Resolves with whether the broker accepts publishes, once it does or
    /// after `timeoutMs` (true at once without a broker); off the
    /// JavaScript thread.
    #[napi]
    pub fn broker_ready(&self, timeout_ms: u32) -> AsyncTask<BrokerReadyTask> {
        AsyncTask::new(BrokerReadyTask {
            server: self.server.clone(),
            timeout: Duration::from_millis(timeout_ms.into()),
        })
    }

    /// Graceful shutdown (see `Server::shutdown`), off the JavaScript thread.
    #[napi]
    pub fn close(&self, drain_timeout_ms: u32) -> AsyncTask<CloseTask> {
        AsyncTask::new(CloseTask {
            id: self.id,
            server: self.server.clone(),
            drain_timeout: Duration::from_millis(drain_timeout_ms.into()),
        })
    }
}

/// Waits for the broker on a libuv pool thread.
pub struct BrokerReadyTask {
    server: Arc<Server>,
    timeout: Duration,
}

impl Task for BrokerReadyTask {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> Result<bool> {
        Ok(self.server.wait_bridge_ready(self.timeout))
    }

    fn resolve(&mut self, _env: Env, output: bool) -> Result<bool> {
        Ok(output)
    }
}

/// Runs a graceful shutdown on a libuv pool thread.
pub struct CloseTask {
    id: u32,
    server: Arc<Server>,
    drain_timeout: Duration,
}

impl Task for CloseTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> Result<()> {
        self.server.shutdown(self.drain_timeout);
        SERVERS.lock().remove(&self.id);
        Ok(())
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> Result<()> {
        Ok(())
    }
}

/// Codes the binding raises itself (as `Error("CODE: message")`).
const BINDING_ERROR_CODES: &[(&str, &str)] = &[
    (
        "ERR_SERVER_START",
        "The native server could not start its I/O threads.",
    ),
    (
        "ERR_LISTEN",
        "Binding a listening address failed (in use, not permitted...).",
    ),
    (
        "ERR_TLS_CONFIG",
        "A listener's TLS options are unusable (bad PEM, a key that does not match its certificate, a bad client CA).",
    ),
    (
        "ERR_INVALID_WORKER",
        "A worker index out of range (internal).",
    ),
];

/// One entry of the error catalogue.
#[napi(object)]
pub struct ErrorCodeInfo {
    pub code: String,
    /// `"close"` (a WebSocket close code), `"http"` (an HTTP status) or
    /// `"throw"` (raised as an exception).
    pub kind: String,
    /// The close code or HTTP status (0 for `"throw"`).
    pub value: u32,
    pub description: String,
}

/// Every error code of the native layers, for `docs/errors.md` and its
/// sync test.
#[napi]
pub fn error_catalog() -> Vec<ErrorCodeInfo> {
    let with_value = |(code, value, description): &(&str, u16, &str)| ErrorCodeInfo {
        code: (*code).to_owned(),
        kind: if switchboard_runtime::errors::is_close_code(*value) {
            "close"
        } else {
            "http"
        }
        .to_owned(),
        value: u32::from(*value),
        description: (*description).to_owned(),
    };
    let thrown = |(code, description): &(&str, &str)| ErrorCodeInfo {
        code: (*code).to_owned(),
        kind: "throw".to_owned(),
        value: 0,
        description: (*description).to_owned(),
    };
    let runtime = switchboard_runtime::errors::ALL
        .iter()
        .map(|failure| (failure.code, failure.status, failure.description));
    switchboard_proto::all_error_codes()
        .copied()
        .chain(runtime)
        .map(|entry| with_value(&entry))
        .chain(switchboard_pubsub::ALL_ERROR_CODES.iter().map(thrown))
        .chain(BINDING_ERROR_CODES.iter().map(thrown))
        .collect()
}

/// Adds the raw Node-API functions (`send`, `publish`; see `raw.rs`).
#[napi(module_exports)]
pub fn register_raw_functions(exports: napi::bindgen_prelude::Object, env: Env) -> Result<()> {
    use napi::JsValue;
    // SAFETY: called once by the module initialiser with its own env and
    // exports object.
    unsafe { raw::register(env.raw(), exports.raw()) }
}

/// Defer the I/O wake-ups of sends made on this thread until `uncork` (the
/// dispatcher corks around each batch; `ws.cork(fn)` around `fn`). Nests.
#[napi]
pub fn cork() {
    switchboard_runtime::cork();
}

/// End a `cork`; the outermost one wakes every connection sent to.
#[napi]
pub fn uncork() {
    switchboard_runtime::uncork();
}
