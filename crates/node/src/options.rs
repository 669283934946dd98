//! Options as JavaScript passes them, converted into the runtime's config.
//! Defaults live in the runtime (`RouteConfig::new`, `ServerConfig::default`)
//! so they are written once; a field JavaScript leaves out keeps them.

use std::time::Duration;

use napi::bindgen_prelude::Buffer;
use napi::{Error, Result, Status};
use napi_derive::napi;
use switchboard_proto::rpc::MIN_FRAME_SIZE;
use switchboard_proto::ws::deflate::DeflateConfig;
use switchboard_runtime::{
    CompressionConfig, DotFiles, FileCacheConfig, HttpRouteConfig, IoScheduling, RouteConfig,
    RpcConfig, ServerConfig, SlowConsumerPolicy, SockJsConfig, StaticDirConfig, StaticRoute,
};

/// permessage-deflate options of a route.
#[napi(object)]
pub struct CompressionOptions {
    pub server_no_context_takeover: Option<bool>,
    pub client_no_context_takeover: Option<bool>,
    pub server_max_window_bits: Option<u8>,
    pub client_max_window_bits: Option<u8>,
    pub threshold: Option<u32>,
}

/// One WebSocket route.
#[napi(object)]
pub struct RouteOptions {
    pub path: String,
    pub has_upgrade_hook: bool,
    pub protocols: Option<Vec<String>>,
    pub max_payload_length: Option<u32>,
    pub max_fragments: Option<u32>,
    pub idle_timeout_ms: Option<u32>,
    pub ping_interval_ms: Option<u32>,
    pub max_backpressure: Option<u32>,
    /// `"drop"` (default) or `"close"`.
    pub slow_consumer: Option<String>,
    pub compression: Option<CompressionOptions>,
    pub allowed_origins: Option<Vec<String>>,
    /// The route also speaks the Switchboard protocol (subprotocol
    /// `switchboard.v1`).
    pub rpc: Option<bool>,
    /// The route is a SockJS service (`app.sockjs`); its path is
    /// `<prefix>/*`.
    pub sockjs: Option<SockJsOptions>,
}

/// A SockJS service's options (`app.sockjs(prefix, behaviour)`).
#[napi(object)]
pub struct SockJsOptions {
    /// The base path, without a trailing slash (`/echo`; `""` for the root).
    pub prefix: String,
    pub websocket: Option<bool>,
    pub heartbeat_ms: Option<u32>,
    pub sockjs_url: Option<String>,
    pub cookie_needed: Option<bool>,
    pub disconnect_delay_ms: Option<u32>,
    pub response_limit: Option<u32>,
}

/// A fixed response to `GET path`.
#[napi(object)]
pub struct StaticRouteOptions {
    pub path: String,
    pub content_type: String,
    pub body: Buffer,
    /// Extra response headers: tab and visible ASCII values, no framing or
    /// hop-by-hop headers (`static_header` checks them).
    pub headers: Option<Vec<HeaderOptions>>,
}

/// A directory served natively (`app.static(prefix, options)`).
#[napi(object)]
pub struct StaticDirOptions {
    /// `/static`, or `/`; no trailing slash otherwise.
    pub prefix: String,
    /// The directory (resolved again here to its real path).
    pub root: String,
    /// The file served for a directory; `""`: none.
    pub index: Option<String>,
    /// `Cache-Control: max-age`, in seconds; 0: `no-cache`.
    pub max_age: Option<u32>,
    pub immutable: Option<bool>,
    pub precompressed: Option<bool>,
    /// `"ignore"` (default) or `"allow"`.
    pub dotfiles: Option<String>,
    pub fallthrough: Option<bool>,
    /// Extra headers on every answer about a file (`static_header` checks
    /// them, and [`FILE_HEADERS`] are the file server's own).
    pub headers: Option<Vec<HeaderOptions>>,
    pub cache: Option<FileCacheOptions>,
}

/// The files a directory keeps in memory (`cache` in TypeScript; `false`
/// there is `enabled: false` here).
#[napi(object)]
pub struct FileCacheOptions {
    pub enabled: Option<bool>,
    pub max_file_bytes: Option<f64>,
    pub max_bytes: Option<f64>,
    pub revalidate_ms: Option<u32>,
}

/// One HTTP route (`app.get(pattern, ...)` and the other methods).
#[napi(object)]
pub struct HttpRouteOptions {
    /// Uppercase method; absent for every method (`app.all`).
    pub method: Option<String>,
    pub pattern: String,
    /// The route's own body limit (`bodyLimit`).
    pub max_body_bytes: Option<f64>,
}

/// Options of plain HTTP requests (`ServerOptions.http` in TypeScript).
#[napi(object)]
pub struct HttpOptions {
    pub max_url_bytes: Option<u32>,
    pub max_body_bytes: Option<f64>,
    pub header_timeout_ms: Option<u32>,
    pub body_timeout_ms: Option<u32>,
    pub keep_alive_timeout_ms: Option<u32>,
    pub max_pipelined: Option<u32>,
    pub body_window: Option<u32>,
    pub max_backpressure: Option<u32>,
    pub compression: Option<HttpCompressionOptions>,
}

/// Response compression (`http.compression` in TypeScript; `false` there
/// is `enabled: false` here).
#[napi(object)]
pub struct HttpCompressionOptions {
    pub enabled: Option<bool>,
    pub threshold: Option<u32>,
    /// gzip level, 0..=9.
    pub gzip_level: Option<u32>,
    /// Brotli quality, 0..=11.
    pub brotli_quality: Option<u32>,
}

/// One response header.
#[napi(object)]
pub struct HeaderOptions {
    pub name: String,
    pub value: String,
}

/// Options of a whole server.
#[napi(object)]
pub struct ServerOptions {
    pub routes: Vec<RouteOptions>,
    pub static_routes: Option<Vec<StaticRouteOptions>>,
    pub http_routes: Option<Vec<HttpRouteOptions>>,
    pub static_dirs: Option<Vec<StaticDirOptions>>,
    pub http: Option<HttpOptions>,
    /// Where the core serves the counters to Prometheus (`GET`), if anywhere.
    pub metrics_path: Option<String>,
    pub workers: u32,
    pub io_threads: Option<u32>,
    /// "batch" (the default) or "normal".
    pub io_thread_scheduling: Option<String>,
    pub max_connections: Option<u32>,
    pub max_head_bytes: Option<u32>,
    /// 1..=65535 (the upgrade event counts headers in 16 bits).
    pub max_headers: Option<u32>,
    pub handshake_timeout_ms: Option<u32>,
    pub upgrade_timeout_ms: Option<u32>,
    pub close_timeout_ms: Option<u32>,
    pub max_worker_queue_bytes: Option<u32>,
    pub rpc: Option<RpcOptions>,
    /// Scale-out through a broker (`ServerOptions.broker` in TypeScript).
    pub broker: Option<BrokerOptions>,
}

/// Many nodes as one, through Redis or NATS pub/sub (docs/scale-out.md). Defaults
/// live in `switchboard_broker::BrokerConfig::new`.
#[napi(object)]
pub struct BrokerOptions {
    /// Standalone Redis servers, `redis://host:port[/db]` each; channels
    /// are sharded over them (one server: all channels on it).
    pub redis: Option<Vec<String>>,
    /// Or a Redis Cluster's seed nodes (sharded pub/sub, Redis 7).
    pub cluster: Option<Vec<String>>,
    /// Or NATS: one server, or several of one NATS cluster (`nats://`).
    pub nats: Option<Vec<String>>,
    pub prefix: Option<String>,
    pub unsubscribe_delay_ms: Option<u32>,
    pub connect_timeout_ms: Option<u32>,
    pub max_reconnect_delay_ms: Option<u32>,
    pub max_pending_publishes: Option<u32>,
    /// Which channels keep a history (first match wins).
    pub history: Option<Vec<HistoryRuleOptions>>,
    pub history_meta_ttl_seconds: Option<u32>,
    /// Channels (names or `*` patterns) that keep presence.
    pub presence: Option<Vec<String>>,
    pub presence_ttl_ms: Option<u32>,
    pub probe_interval_ms: Option<u32>,
    pub node_ttl_ms: Option<u32>,
}

/// History for the channels matching `channels` (TypeScript checked and
/// defaulted every field).
#[napi(object)]
pub struct HistoryRuleOptions {
    pub channels: String,
    pub size: u32,
    pub ttl_seconds: u32,
}

/// The broker's config from its options.
pub fn broker_config(options: BrokerOptions) -> switchboard_broker::BrokerConfig {
    use switchboard_broker::Topology;
    // TypeScript checked that exactly one of the three is given.
    let topology = match (options.redis, options.cluster, options.nats) {
        (_, _, Some(servers)) => Topology::Nats(servers),
        (_, Some(seeds), None) => Topology::Cluster(seeds),
        (servers, None, None) => Topology::Sharded(servers.unwrap_or_default()),
    };
    let mut config = switchboard_broker::BrokerConfig::with_topology(topology);
    let ms = |v: u32| Duration::from_millis(u64::from(v));
    if let Some(prefix) = options.prefix {
        config.prefix = prefix;
    }
    if let Some(v) = options.unsubscribe_delay_ms {
        config.unsubscribe_delay = ms(v);
    }
    if let Some(v) = options.connect_timeout_ms {
        config.connect_timeout = ms(v);
    }
    if let Some(v) = options.max_reconnect_delay_ms {
        config.max_reconnect_delay = ms(v);
    }
    if let Some(v) = options.max_pending_publishes {
        config.max_pending_publishes = v as usize;
    }
    if let Some(rules) = options.history {
        config.history = rules
            .into_iter()
            .map(|rule| switchboard_broker::HistoryRule {
                pattern: rule.channels,
                size: rule.size.max(1) as usize,
                ttl: Duration::from_secs(u64::from(rule.ttl_seconds.max(1))),
            })
            .collect();
    }
    if let Some(patterns) = options.presence {
        config.presence = patterns;
    }
    if let Some(v) = options.probe_interval_ms {
        config.probe_interval = ms(v);
    }
    if let Some(v) = options.presence_ttl_ms {
        config.presence_ttl = ms(v.max(30));
    }
    if let Some(v) = options.history_meta_ttl_seconds {
        config.history_meta_ttl = Duration::from_secs(u64::from(v.max(1)));
    }
    if let Some(v) = options.node_ttl_ms {
        config.node_ttl = ms(v);
    }
    config
}

/// The Switchboard protocol's options (`ServerOptions.rpc` in TypeScript).
#[napi(object)]
pub struct RpcOptions {
    pub max_frame_size: Option<u32>,
    pub initial_window: Option<u32>,
    pub max_concurrent_calls: Option<u32>,
    pub heartbeat_interval_ms: Option<u32>,
    /// Codec names spoken besides `raw`.
    pub codecs: Option<Vec<String>>,
    pub max_backpressure: Option<u32>,
}

/// TLS of a listener (`{ port, tls }` in TypeScript), HTTP or RPC.
#[napi(object)]
pub struct TlsListenOptions {
    pub cert: Buffer,
    pub key: Buffer,
    /// Certificates chosen by the server name the client asks for.
    pub sni: Option<Vec<SniCertificate>>,
    /// CAs whose client certificates are accepted (asks for one).
    pub ca: Option<Buffer>,
    /// With `ca`: refuse clients without a valid certificate. Default true.
    pub reject_unauthorized: Option<bool>,
}

#[napi(object)]
pub struct SniCertificate {
    pub servername: String,
    pub cert: Buffer,
    pub key: Buffer,
}

pub fn tls_options(options: TlsListenOptions) -> switchboard_runtime::tls::TlsOptions {
    use switchboard_runtime::tls::{CertificatePem, TlsOptions};
    TlsOptions {
        default_certificate: CertificatePem {
            cert_chain: options.cert.to_vec(),
            private_key: options.key.to_vec(),
        },
        sni: options
            .sni
            .unwrap_or_default()
            .into_iter()
            .map(|s| {
                let pem = CertificatePem {
                    cert_chain: s.cert.to_vec(),
                    private_key: s.key.to_vec(),
                };
                (s.servername, pem)
            })
            .collect(),
        client_ca: options.ca.map(|ca| ca.to_vec()).unwrap_or_default(),
        require_client_certificate: options.reject_unauthorized.unwrap_or(true),
    }
}

/// Headers a static route may not set: the framing the server writes
/// itself (one response per connection, its length known) and hop-by-hop
/// headers, which describe a connection rather than the response (RFC 9110
/// §7.6.1). Kept in step with `packages/server/src/options.ts`.
const RESERVED_HEADERS: &[&str] = &[
    "connection",
    "content-length",
    "content-type",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Headers a static directory may not set besides [`RESERVED_HEADERS`]:
/// the ones the file server derives from the file and the request.
const FILE_HEADERS: &[&str] = &[
    "accept-ranges",
    "cache-control",
    "content-encoding",
    "content-range",
    "etag",
    "last-modified",
    "vary",
];

/// A header value the runtime may write verbatim: tab and visible ASCII
/// (no CR or LF, so no header can be injected).
fn header_value_ok(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// Checks one response header of a static route or directory (`owner`
/// names it in errors): name a token of RFC 9110 §5.6.2, value as
/// [`header_value_ok`], not reserved.
fn static_header(owner: &str, header: HeaderOptions) -> Result<(String, String)> {
    let HeaderOptions { name, value } = header;
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(invalid(format!(
            "ERR_INVALID_OPTION: {owner}: header name {name:?} is not an HTTP token"
        )));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(invalid(format!(
            "ERR_INVALID_OPTION: {owner}: the server sets {name} itself"
        )));
    }
    if !header_value_ok(&value) {
        return Err(invalid(format!(
            "ERR_INVALID_OPTION: {owner}: the value of {name} must be tab and visible ASCII (no CR, LF or other control characters)"
        )));
    }
    Ok((name, value))
}

fn static_route(options: StaticRouteOptions) -> Result<StaticRoute> {
    if !header_value_ok(&options.content_type) {
        return Err(invalid(format!(
            "ERR_INVALID_OPTION: static route {}: contentType must be tab and visible ASCII",
            options.path
        )));
    }
    let headers = options
        .headers
        .unwrap_or_default()
        .into_iter()
        .map(|h| static_header(&format!("static route {}", options.path), h))
        .collect::<Result<_>>()?;
    Ok(StaticRoute {
        path: options.path,
        content_type: options.content_type,
        body: bytes::Bytes::copy_from_slice(&options.body),
        headers,
    })
}

/// A served directory, its root resolved to a real path (symbolic links
/// followed): files are served only from inside it.
fn static_dir(options: StaticDirOptions) -> Result<StaticDirConfig> {
    let root = std::fs::canonicalize(&options.root)
        .ok()
        .filter(|root| root.is_dir())
        .ok_or_else(|| {
            invalid(format!(
                "ERR_INVALID_OPTION: static {}: root {:?} is not a directory",
                options.prefix, options.root
            ))
        })?;
    let mut dir = StaticDirConfig::new(options.prefix, root);
    if let Some(index) = options.index {
        if index.contains(['/', '\\', '\0']) || index == "." || index == ".." {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: static {}: index must be a file name, got {index:?}",
                dir.prefix
            )));
        }
        dir.index = (!index.is_empty()).then_some(index);
    }
    if let Some(v) = options.max_age {
        dir.max_age = v;
    }
    if let Some(v) = options.immutable {
        dir.immutable = v;
    }
    if let Some(v) = options.precompressed {
        dir.precompressed = v;
    }
    dir.dotfiles = match options.dotfiles.as_deref() {
        None | Some("ignore") => DotFiles::Ignore,
        Some("allow") => DotFiles::Allow,
        Some(other) => {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: static {}: dotfiles must be \"ignore\" or \"allow\", got {other:?}",
                dir.prefix
            )))
        }
    };
    if let Some(v) = options.fallthrough {
        dir.fallthrough = v;
    }
    let owner = format!("static {}", dir.prefix);
    for header in options.headers.unwrap_or_default() {
        if FILE_HEADERS.contains(&header.name.to_ascii_lowercase().as_str()) {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: {owner}: the file server sets {} itself (use maxAge and immutable for Cache-Control)",
                header.name
            )));
        }
        dir.headers.push(static_header(&owner, header)?);
    }
    if let Some(cache) = options.cache {
        dir.cache = file_cache(cache)?;
    }
    Ok(dir)
}

fn file_cache(options: FileCacheOptions) -> Result<Option<FileCacheConfig>> {
    if options.enabled == Some(false) {
        return Ok(None);
    }
    let mut config = FileCacheConfig::default();
    if let Some(v) = options.max_file_bytes {
        config.max_file_bytes = byte_count(v)?;
    }
    if let Some(v) = options.max_bytes {
        config.max_bytes = byte_count(v)?;
    }
    if let Some(v) = options.revalidate_ms {
        config.revalidate = ms(v);
    }
    Ok(Some(config))
}

fn invalid(message: String) -> Error {
    Error::new(Status::InvalidArg, message)
}

fn ms(value: u32) -> Duration {
    Duration::from_millis(value.into())
}

fn compression(options: CompressionOptions) -> Result<DeflateConfig> {
    let mut config = DeflateConfig::default();
    if let Some(v) = options.server_no_context_takeover {
        config.server_no_context_takeover = v;
    }
    if let Some(v) = options.client_no_context_takeover {
        config.client_no_context_takeover = v;
    }
    for (name, bits, slot) in [
        (
            "serverMaxWindowBits",
            options.server_max_window_bits,
            &mut config.server_max_window_bits,
        ),
        (
            "clientMaxWindowBits",
            options.client_max_window_bits,
            &mut config.client_max_window_bits,
        ),
    ] {
        if let Some(bits) = bits {
            if !(9..=15).contains(&bits) {
                return Err(invalid(format!(
                    "ERR_INVALID_OPTION: compression.{name} must be 9..15, got {bits}"
                )));
            }
            *slot = bits;
        }
    }
    if let Some(v) = options.threshold {
        config.threshold = v as usize;
    }
    Ok(config)
}

fn route(options: RouteOptions) -> Result<RouteConfig> {
    let mut route = RouteConfig::new(options.path);
    route.has_upgrade_hook = options.has_upgrade_hook;
    if let Some(v) = options.protocols {
        route.protocols = v;
    }
    if let Some(v) = options.max_payload_length {
        route.max_payload_length = v as usize;
    }
    if let Some(v) = options.max_fragments {
        route.max_fragments = v as usize;
    }
    if let Some(v) = options.idle_timeout_ms {
        route.idle_timeout = ms(v);
    }
    if let Some(v) = options.ping_interval_ms {
        route.ping_interval = ms(v);
    }
    if let Some(v) = options.max_backpressure {
        route.max_backpressure = v as usize;
    }
    route.slow_consumer = slow_consumer(options.slow_consumer.as_deref())?;
    route.rpc = options.rpc.unwrap_or(false);
    if let Some(v) = options.compression {
        route.compression = Some(compression(v)?);
    }
    if let Some(v) = options.allowed_origins {
        route.allowed_origins = v;
    }
    if let Some(v) = options.sockjs {
        route.sockjs = Some(sockjs(v)?);
    }
    Ok(route)
}

fn sockjs(options: SockJsOptions) -> Result<SockJsConfig> {
    if options.prefix.ends_with('/')
        || !(options.prefix.is_empty() || options.prefix.starts_with('/'))
    {
        return Err(invalid(format!(
            "ERR_INVALID_OPTION: a SockJS prefix starts with / and does not end with one, got {:?}",
            options.prefix
        )));
    }
    let mut config = SockJsConfig::new(options.prefix);
    if let Some(v) = options.websocket {
        config.websocket = v;
    }
    if let Some(v) = options.heartbeat_ms {
        config.heartbeat = ms(v);
    }
    if let Some(v) = options.sockjs_url {
        config.sockjs_url = v;
    }
    if let Some(v) = options.cookie_needed {
        config.cookie_needed = v;
    }
    if let Some(v) = options.disconnect_delay_ms {
        config.disconnect_delay = ms(v);
    }
    if let Some(v) = options.response_limit {
        config.response_limit = v as usize;
    }
    Ok(config)
}

fn io_scheduling(policy: Option<&str>) -> Result<IoScheduling> {
    match policy {
        None | Some("batch") => Ok(IoScheduling::Batch),
        Some("normal") => Ok(IoScheduling::Normal),
        Some(other) => Err(invalid(format!(
            "ERR_INVALID_OPTION: ioThreadScheduling must be \"batch\" or \"normal\", got {other:?}"
        ))),
    }
}

fn slow_consumer(policy: Option<&str>) -> Result<SlowConsumerPolicy> {
    match policy {
        None | Some("drop") => Ok(SlowConsumerPolicy::Drop),
        Some("close") => Ok(SlowConsumerPolicy::Close),
        Some(other) => Err(invalid(format!(
            "ERR_INVALID_OPTION: slowConsumer must be \"drop\" or \"close\", got {other:?}"
        ))),
    }
}

fn rpc(options: RpcOptions) -> Result<RpcConfig> {
    let mut config = RpcConfig::default();
    let settings = &mut config.settings;
    for (name, value) in [
        ("maxFrameSize", options.max_frame_size),
        ("initialWindow", options.initial_window),
    ] {
        if value.is_some_and(|v| v < MIN_FRAME_SIZE) {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: rpc.{name} must be at least {MIN_FRAME_SIZE}"
            )));
        }
    }
    if let Some(v) = options.max_frame_size {
        settings.max_frame_size = v;
    }
    if let Some(v) = options.initial_window {
        settings.initial_window = v;
    }
    if let Some(v) = options.max_concurrent_calls {
        settings.max_concurrent_calls = v;
    }
    if let Some(v) = options.heartbeat_interval_ms {
        settings.heartbeat_ms = v;
    }
    if let Some(v) = options.codecs {
        settings.codecs = v;
    }
    if let Some(v) = options.max_backpressure {
        config.max_backpressure = v as usize;
    }
    Ok(config)
}

/// A byte count JavaScript passes as a number (limits may pass 4 GiB).
fn http_compression(options: HttpCompressionOptions) -> Result<Option<CompressionConfig>> {
    if options.enabled == Some(false) {
        return Ok(None);
    }
    let mut config = CompressionConfig::default();
    if let Some(v) = options.threshold {
        config.threshold = v as usize;
    }
    if let Some(v) = options.gzip_level {
        if v > 9 {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: http.compression.level must be 0..9, got {v}"
            )));
        }
        config.gzip_level = v;
    }
    if let Some(v) = options.brotli_quality {
        if v > 11 {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: http.compression.brotliQuality must be 0..11, got {v}"
            )));
        }
        config.brotli_quality = v;
    }
    Ok(Some(config))
}

fn byte_count(v: f64) -> Result<u64> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 2f64.powi(53) {
        Ok(v as u64)
    } else {
        Err(invalid(format!(
            "ERR_INVALID_OPTION: a byte limit must be a whole number >= 0, got {v}"
        )))
    }
}

pub fn server_config(options: ServerOptions) -> Result<ServerConfig> {
    let mut config = ServerConfig {
        workers: options.workers.max(1) as usize,
        ..ServerConfig::default()
    };
    for r in options.routes {
        config.routes.push(route(r)?);
    }
    for s in options.static_routes.unwrap_or_default() {
        config.static_routes.push(static_route(s)?);
    }
    for d in options.static_dirs.unwrap_or_default() {
        config.static_dirs.push(static_dir(d)?);
    }
    if let Some(path) = options.metrics_path {
        if !path.starts_with('/') {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: metrics.path must start with \"/\", got {path:?}"
            )));
        }
        config.metrics_path = Some(path);
    }
    for r in options.http_routes.unwrap_or_default() {
        config.http_routes.push(HttpRouteConfig {
            method: r.method,
            pattern: r.pattern,
            max_body_bytes: r.max_body_bytes.map(byte_count).transpose()?,
        });
    }
    if let Some(http) = options.http {
        let c = &mut config.http;
        if let Some(v) = http.max_url_bytes {
            c.max_url_bytes = v as usize;
        }
        if let Some(v) = http.max_body_bytes {
            c.max_body_bytes = byte_count(v)?;
        }
        if let Some(v) = http.header_timeout_ms {
            c.header_timeout = ms(v);
        }
        if let Some(v) = http.body_timeout_ms {
            c.body_timeout = ms(v);
        }
        if let Some(v) = http.keep_alive_timeout_ms {
            c.keep_alive_timeout = ms(v);
        }
        if let Some(v) = http.max_pipelined {
            c.max_pipelined = (v as usize).max(1);
        }
        if let Some(v) = http.body_window {
            c.body_window = (v as usize).max(1);
        }
        if let Some(v) = http.max_backpressure {
            c.max_backpressure = v as usize;
        }
        if let Some(v) = http.compression {
            c.compression = http_compression(v)?;
        }
    }
    if let Some(v) = options.io_threads {
        config.io_threads = (v as usize).max(1);
    }
    config.io_scheduling = io_scheduling(options.io_thread_scheduling.as_deref())?;
    if let Some(v) = options.max_connections {
        config.max_connections = v as usize;
    }
    if let Some(v) = options.max_head_bytes {
        config.max_head_bytes = v as usize;
    }
    if let Some(v) = options.max_headers {
        if !(1..=u32::from(u16::MAX)).contains(&v) {
            return Err(invalid(format!(
                "ERR_INVALID_OPTION: maxHeaders must be 1..65535, got {v}"
            )));
        }
        config.max_headers = v as usize;
    }
    if let Some(v) = options.handshake_timeout_ms {
        config.handshake_timeout = ms(v);
    }
    if let Some(v) = options.upgrade_timeout_ms {
        config.upgrade_timeout = ms(v);
    }
    if let Some(v) = options.close_timeout_ms {
        config.close_timeout = ms(v);
    }
    if let Some(v) = options.max_worker_queue_bytes {
        config.max_worker_queue_bytes = v as usize;
    }
    if let Some(v) = options.rpc {
        config.rpc = rpc(v)?;
    }
    Ok(config)
}
