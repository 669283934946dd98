//! Server and route configuration. Every limit is a named option with a
//! documented default; the TypeScript API mirrors these names and documents
//! the same defaults (see `docs/api.md`).

use std::time::Duration;

use switchboard_proto::rpc::ServerSettings;

use crate::tls::TlsOptions;
use switchboard_proto::ws::deflate::DeflateConfig;

/// What to do when a connection's outbound queue passes `max_backpressure`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowConsumerPolicy {
    /// Refuse the new message (the send reports `Dropped`, the drop counter
    /// grows); the connection stays open and catches up later.
    Drop,
    /// Close the connection with 1008 and `ERR_WS_SLOW_CONSUMER`: for feeds
    /// where a gap is worse than a reconnect.
    Close,
}

/// Options of one WebSocket route (`app.ws(path, behaviour)`).
#[derive(Clone, Debug)]
pub struct RouteConfig {
    /// Exact path, or a prefix ending in `/*`.
    pub path: String,
    /// Whether JavaScript has an `upgrade` hook that decides before the 101.
    pub has_upgrade_hook: bool,
    /// Subprotocols this route speaks, in order of preference (the client's
    /// order wins among those we support, as browsers expect).
    pub protocols: Vec<String>,
    /// Largest message after reassembly and inflation. Default 1 MiB
    /// (`switchboard_proto::ws::DEFAULT_MAX_PAYLOAD_LENGTH`, which says why).
    pub max_payload_length: usize,
    /// Most frames in one fragmented message (0 = no limit). Default 1024:
    /// real clients fragment into a handful of frames; a flood of tiny
    /// fragments is a CPU attack.
    pub max_fragments: usize,
    /// Close a connection that sent nothing for this long (0 = never).
    /// Default 120 s, as uWebSockets.js.
    pub idle_timeout: Duration,
    /// Send a ping this often when the connection is otherwise quiet
    /// (0 = never). Default 30 s, below common proxy idle timeouts (60 s).
    pub ping_interval: Duration,
    /// Bytes a connection may have queued for writing before the slow
    /// consumer policy applies. Default 1 MiB: about a second of a busy feed
    /// on a slow mobile link.
    pub max_backpressure: usize,
    /// See [`SlowConsumerPolicy`]. Default `Drop`.
    pub slow_consumer: SlowConsumerPolicy,
    /// permessage-deflate; `None` (the default) disables compression.
    pub compression: Option<DeflateConfig>,
    /// Reject upgrades whose `Origin` is not in this list (empty = any).
    pub allowed_origins: Vec<String>,
    /// The route also speaks the Switchboard protocol: a client that
    /// chooses the subprotocol `switchboard.v1` gets a protocol session
    /// (docs/protocol.md §2) instead of plain messages. Default false.
    pub rpc: bool,
    /// The route is a SockJS service (`app.sockjs`, docs/sockjs.md): its
    /// path is `<prefix>/*`, its WebSocket endpoints are upgraded here and
    /// the protocol's HTTP endpoints are answered natively. Default none.
    pub sockjs: Option<SockJsConfig>,
}

/// A SockJS service's options (`app.sockjs(prefix, behaviour)`).
#[derive(Clone, Debug)]
pub struct SockJsConfig {
    /// The service's base path, without a trailing slash (`/echo`; empty
    /// for the root).
    pub prefix: String,
    /// Whether the WebSocket transports are offered (`/info` says so, and
    /// the WebSocket endpoints answer 404 without them). Default true.
    pub websocket: bool,
    /// How often a session is sent a heartbeat frame (`h`): clients and
    /// proxies take a silent session for dead. Default 25 s, as the
    /// protocol's reference server.
    pub heartbeat: Duration,
    /// The script the iframe page loads (the client, for the iframe-based
    /// transports of old browsers). Default the jsdelivr copy of
    /// sockjs-client 1.
    pub sockjs_url: String,
    /// `/info`'s `cookie_needed`: the client then sends cookies (load
    /// balancers that stick sessions by `JSESSIONID`). Default false.
    pub cookie_needed: bool,
    /// How long a session on the HTTP transports outlives its last
    /// receiving request: the client's next poll (or next streaming
    /// request) must come within it, and what is sent meanwhile waits.
    /// Default 5 s, as the protocol's reference server.
    pub disconnect_delay: Duration,
    /// Bytes of frames after which a streaming response (xhr_streaming,
    /// eventsource, htmlfile) ends and the client opens the next one, so
    /// a browser frees what it received. Default 128 KiB.
    pub response_limit: usize,
}

impl SockJsConfig {
    /// A service on `prefix` with every default.
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            websocket: true,
            heartbeat: switchboard_proto::sockjs::DEFAULT_HEARTBEAT_DELAY,
            sockjs_url: switchboard_proto::sockjs::DEFAULT_SOCKJS_URL.to_owned(),
            cookie_needed: false,
            disconnect_delay: switchboard_proto::sockjs::DEFAULT_DISCONNECT_DELAY,
            response_limit: switchboard_proto::sockjs::DEFAULT_RESPONSE_LIMIT,
        }
    }
}

impl RouteConfig {
    /// A route on `path` with every default.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            has_upgrade_hook: false,
            protocols: Vec::new(),
            max_payload_length: switchboard_proto::ws::DEFAULT_MAX_PAYLOAD_LENGTH,
            max_fragments: 1024,
            idle_timeout: Duration::from_secs(120),
            ping_interval: Duration::from_secs(30),
            max_backpressure: 1024 * 1024,
            slow_consumer: SlowConsumerPolicy::Drop,
            compression: None,
            allowed_origins: Vec::new(),
            rpc: false,
            sockjs: None,
        }
    }

    /// Whether a request path selects this route.
    pub fn matches(&self, path: &str) -> bool {
        match self.path.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => self.path == path,
        }
    }
}

/// A fixed HTTP response for plain GET requests (the demo's page, a health
/// check). Full HTTP routing is a later layer; this keeps one port enough for
/// a page plus its WebSocket.
#[derive(Clone, Debug)]
pub struct StaticRoute {
    pub path: String,
    pub content_type: String,
    pub body: bytes::Bytes,
    /// Extra response headers, written as given after `Content-Type`,
    /// `Content-Length` and `Connection` (security headers such as
    /// `Content-Security-Policy`). A `Cache-Control` here replaces the
    /// default `no-cache`. The binding validates them (no CR/LF or other
    /// control characters, no hop-by-hop or framing headers): the runtime
    /// writes them verbatim.
    pub headers: Vec<(String, String)>,
}

/// Whether a static directory serves names that start with a dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DotFiles {
    /// A path with a segment starting with `.` is not found (404): `.git`,
    /// `.env` and the like are never served by accident.
    Ignore,
    /// Served like any other name (`.well-known/`).
    Allow,
}

/// A directory whose files the I/O threads serve (`app.static(prefix,
/// options)`): GET and HEAD on `<prefix>/*`, and `<prefix>` itself, which
/// redirects to `<prefix>/`. See `session/http/files.rs`.
#[derive(Clone, Debug)]
pub struct StaticDirConfig {
    /// `/static`, or `/` for the whole path space: no trailing slash
    /// (except `/` itself), no parameters.
    pub prefix: String,
    /// The directory, as an absolute path without symbolic links (the
    /// binding resolves it): a file is served only if its real path is
    /// inside it.
    pub root: std::path::PathBuf,
    /// The file served for a directory (`/static/docs/`); `None`: a
    /// directory is not found. Default `index.html`.
    pub index: Option<String>,
    /// `Cache-Control: public, max-age=<seconds>`; 0 (the default) sends
    /// `no-cache`: caches keep the file but revalidate it (a 304 costs a
    /// round trip, never a stale page after a deploy).
    pub max_age: u32,
    /// Adds `immutable` to a non-zero `max_age`: for fingerprinted names
    /// whose content never changes. Default false.
    pub immutable: bool,
    /// Serve `<file>.br` / `<file>.gz` when the client accepts the coding
    /// and the sibling is not older than the file. Default true: costs a
    /// `stat` per sibling per request, and nothing is compressed on the fly.
    pub precompressed: bool,
    /// Default [`DotFiles::Ignore`].
    pub dotfiles: DotFiles,
    /// A missing file goes on to the routes this directory hides (a
    /// JavaScript route for the same path, `app.all('/static/*')`), else
    /// 404. Default false: a miss is a native 404.
    pub fallthrough: bool,
    /// Extra headers on every answer about a file (200, 206 and 304):
    /// security headers such as `Content-Security-Policy` for a site's
    /// pages. Validated by the binding as [`StaticRoute::headers`] are,
    /// and none of the headers the file server writes itself.
    pub headers: Vec<(String, String)>,
    /// Files kept in memory (`http/file_cache.rs`); `None`: every request
    /// opens and reads its file. Default on, with [`FileCacheConfig`]'s
    /// defaults.
    pub cache: Option<FileCacheConfig>,
}

/// What a static directory keeps in memory (`app.static(prefix, { cache })`):
/// its small files' bytes (each variant, precompressed siblings too) and
/// modification times, so that a request for one costs no system call but
/// the write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCacheConfig {
    /// Files up to this size are kept. Default 1 MiB: a site's pages,
    /// scripts (bundles included), styles, icons and most images; larger
    /// files (media, downloads) stream from the disk. Measured on loopback
    /// (1 I/O thread, 100 clients): a kept 64 KiB file is served 1.9x as
    /// fast as from the disk, 256 KiB 1.6x, 1 MiB 1.65x (1.75x with 16
    /// requests pipelined). The default was 256 KiB while a kept 1 MiB
    /// file went out in one write and was slower than the disk's 64 KiB
    /// pieces (0.73x: the kernel did the receiver's share of the TCP work
    /// in the server's time); since a connection writes at most 256 KiB
    /// per turn (`session/writes.rs`), that cost is gone.
    pub max_file_bytes: u64,
    /// All the directory's kept bytes together; past it, files are served
    /// from the disk until kept ones are dropped (changed or gone).
    /// Default 64 MiB.
    pub max_bytes: u64,
    /// A kept file is checked against the disk (its path resolved again,
    /// one `stat` per variant) when it was last checked longer ago than
    /// this: a file changed on disk is served changed within this time.
    /// Default 1 s; zero checks on every request.
    pub revalidate: Duration,
}

impl Default for FileCacheConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 1024 * 1024,
            max_bytes: 64 * 1024 * 1024,
            revalidate: Duration::from_secs(1),
        }
    }
}

impl StaticDirConfig {
    /// `root` served under `prefix`, with every default.
    pub fn new(prefix: impl Into<String>, root: impl Into<std::path::PathBuf>) -> Self {
        Self {
            prefix: prefix.into(),
            root: root.into(),
            index: Some("index.html".into()),
            max_age: 0,
            immutable: false,
            precompressed: true,
            dotfiles: DotFiles::Ignore,
            fallthrough: false,
            headers: Vec::new(),
            cache: Some(FileCacheConfig::default()),
        }
    }
}

/// One HTTP route (`app.get(pattern, ...handlers)` and the other methods):
/// requests that match it go to the JavaScript handlers registered with
/// the same index, in the worker the connection is pinned to.
#[derive(Clone, Debug)]
pub struct HttpRouteConfig {
    /// An uppercase method (`GET`, `POST`, ...), or `None` for every method
    /// (`app.all`).
    pub method: Option<String>,
    /// `/users/:id`, `/files/*`: see `http::router` for the syntax.
    pub pattern: String,
    /// This route's own request body limit, in place of
    /// [`HttpConfig::max_body_bytes`].
    pub max_body_bytes: Option<u64>,
}

/// Options of plain HTTP requests (on the same listeners as WebSocket).
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Longest request-target; longer ones get `414`. Default 8 KiB
    /// (`switchboard_proto::http1::DEFAULT_MAX_URL_BYTES`).
    pub max_url_bytes: usize,
    /// Largest request body, decoded (chunked framing not counted); larger
    /// ones get `413`. Default 1 MiB, fastify's `bodyLimit`: routes that
    /// take uploads raise it for themselves
    /// ([`HttpRouteConfig::max_body_bytes`]).
    pub max_body_bytes: u64,
    /// Time a client has to send a whole request head, from its first
    /// byte; then `408` (slowloris). Default 10 s, like `handshake_timeout`
    /// (which applies to a connection's first request).
    pub header_timeout: Duration,
    /// Time a request body may make no progress; then `408`. Also the
    /// time a client may take nothing of a static file being sent before
    /// it is disconnected. Default 30 s.
    pub body_timeout: Duration,
    /// Time an idle keep-alive connection (no request in progress, every
    /// response written) stays open. Default 5 s, Node's `keepAliveTimeout`.
    pub keep_alive_timeout: Duration,
    /// Requests of one connection handed to JavaScript whose responses
    /// have not ended; a pipelining client's further requests wait in the
    /// socket until one does. Default 16.
    pub max_pipelined: usize,
    /// Body bytes handed to the handlers and not consumed yet, per
    /// connection; past it the connection stops reading until they catch
    /// up, so an upload a handler reads slowly holds bounded memory.
    /// Default 256 KiB: four reads of the I/O thread's buffer, enough that
    /// a handler that keeps up never waits for the socket.
    pub body_window: usize,
    /// Bytes of responses a connection may have queued for writing; past
    /// it the connection is closed (a response cannot be dropped the way a
    /// WebSocket message can). From a quarter of it a write reports
    /// `BUFFERED` and a `drain` follows. Default 16 MiB.
    pub max_backpressure: usize,
    /// Response compression (gzip, brotli), negotiated from each request's
    /// `Accept-Encoding`; `None`: never compress (the I/O thread then
    /// does not negotiate). Default on, with [`CompressionConfig`]'s
    /// defaults.
    pub compression: Option<CompressionConfig>,
}

/// How responses are compressed (`http.compression`). Which responses is
/// JavaScript's decision (`packages/server/src/http/response.ts`: whole
/// bodies of text-like types, at least `threshold` bytes); the encoding is
/// done by the responding worker thread (`http/compress.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressionConfig {
    /// Smallest body compressed, in bytes. Default 1024: below it the
    /// saving is a few hundred bytes at most (gzip alone adds 18 of
    /// framing) and the response fits one TCP segment either way, while
    /// the encoder costs microseconds per response; the http-json
    /// benchmark's responses stay below it.
    pub threshold: usize,
    /// gzip level, 0 (stored) to 9. Default 6, zlib's own default: past it
    /// each level costs much more time for a percent or two of size.
    /// Measured on JSON (`http/compress.rs`, `bench_compress`): 8 us for
    /// 1 KiB, 50 us for 16 KiB, to 20% and 12% of the size.
    pub gzip_level: u32,
    /// Brotli quality, 0 to 11. Default 4: 15 us for 1 KiB of JSON, 62 us
    /// for 16 KiB, to 15% and 5% of the size (a half of gzip 6's output
    /// for about its time). From 5 on, the encoder sets up a larger match
    /// finder for every response: 0.5 to 4 ms for bodies under 64 KiB, a
    /// cost for assets compressed once, not for each response.
    pub brotli_quality: u32,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            threshold: 1024,
            gzip_level: 6,
            brotli_quality: 4,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_url_bytes: switchboard_proto::http1::DEFAULT_MAX_URL_BYTES,
            max_body_bytes: 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(5),
            max_pipelined: 16,
            body_window: 256 * 1024,
            max_backpressure: 16 * 1024 * 1024,
            compression: Some(CompressionConfig::default()),
        }
    }
}

/// Options of the Switchboard protocol's connections (RPC listeners, and
/// WebSocket routes with `rpc`).
#[derive(Clone, Debug)]
pub struct RpcConfig {
    /// Limits, heartbeat, features and codecs announced in every WELCOME;
    /// defaults in [`ServerSettings`] say why.
    pub settings: ServerSettings,
    /// Bytes a protocol connection may have queued for writing; past it
    /// the connection is closed (`ERR_WS_SLOW_CONSUMER`). A protocol stream
    /// cannot drop a frame the way a WebSocket can drop a message: a lost
    /// response or stream chunk would corrupt the peer's state, so the
    /// policy is always `Close`. Stream data does not reach it: from a
    /// quarter of it (the high-water mark, see `session::wire_high_water`)
    /// sends report `Buffered` and the worker's peer pauses its streams
    /// until the `drain`; this bounds responses to a client that stopped
    /// reading. Default 16 MiB: one maximal frame (the default
    /// `max_frame_size`) fits.
    pub max_backpressure: usize,
}

impl Default for RpcConfig {
    fn default() -> Self {
        Self {
            settings: ServerSettings::default(),
            max_backpressure: 16 * 1024 * 1024,
        }
    }
}

/// Options of a whole server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub routes: Vec<RouteConfig>,
    pub static_routes: Vec<StaticRoute>,
    /// HTTP routes; their index is the route number JavaScript receives.
    pub http_routes: Vec<HttpRouteConfig>,
    /// Directories served natively, matched after the routes above.
    pub static_dirs: Vec<StaticDirConfig>,
    /// Plain HTTP requests' options.
    pub http: HttpConfig,
    /// Where the core answers `GET` with the server's counters in
    /// Prometheus's text format (`http/exposition.rs`); `None`: nowhere.
    /// Default `None`: counters are not published unless asked for.
    pub metrics_path: Option<String>,
    /// Number of JavaScript workers that receive events (at least 1: with
    /// zero worker threads the main thread is the single worker).
    pub workers: usize,
    /// I/O threads. Default: the number of cores.
    pub io_threads: usize,
    /// The kernel scheduling policy of the I/O threads. Default
    /// [`IoScheduling::Batch`] (`reactor/scheduling.rs` says why).
    pub io_scheduling: IoScheduling,
    /// Open connections (including ones still in the handshake) beyond which
    /// new ones get `503` (`ERR_SERVER_AT_CAPACITY`). Default: the process's
    /// soft open-file limit (`RLIMIT_NOFILE`, read when the config is made)
    /// minus a reserve of an eighth of it, at least 64 and at most 1,000
    /// descriptors, never more than half, for listeners, worker threads,
    /// files and Node's own descriptors; 100 000 where the limit is unknown
    /// or unlimited. Above the limit, `accept` fails and new clients wait
    /// unanswered in the backlog instead of getting their 503
    /// ([`crate::fd_limit`] says why and how).
    pub max_connections: usize,
    /// Largest HTTP request head. Default 16 KiB
    /// (`switchboard_proto::http::DEFAULT_MAX_HEAD_BYTES`, Node's own
    /// `maxHeaderSize`: large cookie sets pass 8 KiB).
    pub max_head_bytes: usize,
    /// Most header lines in an HTTP request head; more get `431`. Default
    /// 64 (`switchboard_proto::http::DEFAULT_MAX_HEADERS`: browsers send
    /// about 15 on an upgrade and proxies add a handful).
    pub max_headers: usize,
    /// Time a client has to send its upgrade request. Default 10 s.
    pub handshake_timeout: Duration,
    /// Time JavaScript's `upgrade` hook has to decide. Default 10 s; past it
    /// the client gets `503`.
    pub upgrade_timeout: Duration,
    /// Time to wait for the peer's close frame after ours; while ours is
    /// still on its way behind frames a slow reader is taking, counted from
    /// the last progress of our writes. Default 5 s.
    pub close_timeout: Duration,
    /// Bytes of undelivered events per worker beyond which connections of
    /// that worker stop reading (TCP backpressure reaches the clients).
    /// Default 8 MiB: many batches of small messages, bounded memory when a
    /// worker is stuck.
    pub max_worker_queue_bytes: usize,
    /// The Switchboard protocol's options.
    pub rpc: RpcConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            routes: Vec::new(),
            static_routes: Vec::new(),
            http_routes: Vec::new(),
            static_dirs: Vec::new(),
            http: HttpConfig::default(),
            metrics_path: None,
            workers: 1,
            io_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            io_scheduling: IoScheduling::Batch,
            max_connections: crate::fd_limit::default_max_connections(),
            max_head_bytes: switchboard_proto::http::DEFAULT_MAX_HEAD_BYTES,
            max_headers: switchboard_proto::http::DEFAULT_MAX_HEADERS,
            handshake_timeout: Duration::from_secs(10),
            upgrade_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(5),
            max_worker_queue_bytes: 8 * 1024 * 1024,
            rpc: RpcConfig::default(),
        }
    }
}

/// How the kernel schedules the I/O threads (Linux; elsewhere the
/// system's default always applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoScheduling {
    /// `SCHED_BATCH`: woken by the network, an I/O thread does not preempt
    /// a handler running on its core; it runs when that one blocks or its
    /// slice ends, and then reads every connection that became ready.
    #[default]
    Batch,
    /// `SCHED_OTHER`, the system's default: an I/O thread woken by the
    /// network preempts at once, trading throughput for latency when
    /// cores are oversubscribed.
    Normal,
}

/// What a listener speaks from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1: static routes and WebSocket upgrades (plain WebSocket, or
    /// the Switchboard protocol over WebSocket on routes with `rpc`).
    Http,
    /// The Switchboard protocol on the raw byte stream.
    Rpc,
}

/// One listener: a protocol, and TLS around it or not. The same server can
/// listen with and without TLS at once.
#[derive(Clone, Debug)]
pub struct ListenerConfig {
    pub protocol: Protocol,
    pub tls: Option<TlsOptions>,
}

impl ListenerConfig {
    /// `protocol` without TLS.
    pub fn plain(protocol: Protocol) -> Self {
        Self {
            protocol,
            tls: None,
        }
    }
}
