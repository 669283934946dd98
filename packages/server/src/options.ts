/**
 * User-facing options. Every limit has a documented default (the native
 * layer applies it when an option is left out, so it is written once, in
 * `crates/runtime/src/config.rs`); `docs/api.md` lists them all.
 */
import { WEBSOCKET_SUBPROTOCOL, findCodec } from 'switchboard-rpc';
import type { NativeBrokerOptions, NativeHistoryRule, NativeHttpCompressionOptions, NativeHttpOptions, NativeRouteOptions, NativeServerOptions, NativeSockJsOptions, NativeStaticRoute, NativeRpcOptions } from './native.js';
import { SwitchboardError } from './errors.js';
import type { MetricsOptions } from './http/metrics.js';
import type { BrokerSummary } from './http/redis-store.js';

/** permessage-deflate (RFC 7692). Off unless given. */
export interface CompressionOptions {
  /**
   * Reset our compressor after every message. Default true: an idle
   * connection then holds no zlib state (~300 KiB with a 15-bit window), at a
   * small cost in ratio for small real-time messages.
   */
  serverNoContextTakeover?: boolean;
  /** Ask the client to reset its compressor after every message. Default true, for the same reason. */
  clientNoContextTakeover?: boolean;
  /** Our LZ77 window, 9..15. Default 15. */
  serverMaxWindowBits?: number;
  /** The client's window, 9..15. Default 15. */
  clientMaxWindowBits?: number;
  /** Messages shorter than this many bytes are sent uncompressed. Default 1024. */
  threshold?: number;
}

/** Limits and policies of one WebSocket route. */
export interface RouteOptions {
  /** Subprotocols this route speaks; the first one the client offers is chosen. */
  protocols?: string[];
  /** Largest message, after reassembly and inflation. Default 1 MiB. Larger: close 1009. */
  maxPayloadLength?: number;
  /** Most frames in one fragmented message (0 = no limit). Default 1024. Over: close 1009. */
  maxFragments?: number;
  /** Seconds without any incoming data before the server closes with 1001 (0 = never). Default 120. */
  idleTimeout?: number;
  /** Seconds of quiet before the server pings (0 = never). Default 30. */
  pingInterval?: number;
  /** Bytes queued for one connection beyond which the slow-consumer policy applies. Default 1 MiB. */
  maxBackpressure?: number;
  /** `'drop'` refuses new messages (send reports DROPPED); `'close'` closes with 1008. Default `'drop'`. */
  slowConsumer?: 'drop' | 'close';
  /** permessage-deflate; `true` for defaults. Default off. */
  compression?: boolean | CompressionOptions;
  /** Allowed `Origin` header values; empty or absent = any origin. Others get 403. */
  allowedOrigins?: string[];
  /**
   * Clients that choose the subprotocol `switchboard.v1` speak the
   * Switchboard protocol and are served by the app's RPC service
   * (`app.rpc`); others get this route's handlers. Default false.
   */
  rpc?: boolean;
}

/** The options of a SockJS service (`app.sockjs(prefix, behavior)`, docs/sockjs.md). */
export interface SockJsOptions {
  /** Offer the WebSocket transports (`/info` says so; without them their URLs answer 404). Default true. */
  websocket?: boolean;
  /** Milliseconds between heartbeat frames (`h`) to a session. Default 25000, as the protocol's reference server. */
  heartbeatDelay?: number;
  /** The sockjs-client script the iframe page loads (old browsers' iframe-based transports). Default the jsdelivr copy of sockjs-client 1. */
  sockjsUrl?: string;
  /** `/info`'s `cookie_needed`: clients then send cookies (a load balancer's `JSESSIONID` stickiness), and every session URL sets `JSESSIONID`. Default false. */
  cookieNeeded?: boolean;
  /**
   * Milliseconds a session on the HTTP transports outlives its last
   * receiving request: the client's next poll must come within it, and
   * what is sent meanwhile waits (up to `maxBackpressure`). Default 5000.
   */
  disconnectDelay?: number;
  /**
   * Bytes of frames after which a streaming response (xhr_streaming,
   * eventsource, htmlfile) ends and the client opens the next one, so the
   * browser can free what it received. Default 131072 (128 KiB).
   */
  responseLimit?: number;
}

/** The native options of the SockJS service on `prefix`. */
export function nativeSockJs(prefix: string, options: SockJsOptions): NativeSockJsOptions {
  if (typeof prefix !== 'string' || (prefix !== '' && !prefix.startsWith('/')) || prefix.endsWith('/')) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a SockJS prefix starts with "/" and does not end with one, got ${JSON.stringify(prefix)}`);
  }
  const sockjs: NativeSockJsOptions = { prefix };
  if (options.websocket !== undefined) sockjs.websocket = Boolean(options.websocket);
  const heartbeat = options.heartbeatDelay;
  if (heartbeat !== undefined) {
    if (!Number.isInteger(heartbeat) || heartbeat < 1 || heartbeat > 0xffff_ffff) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `heartbeatDelay must be a whole number of milliseconds from 1, got ${String(heartbeat)}`);
    }
    sockjs.heartbeatMs = heartbeat;
  }
  if (options.sockjsUrl !== undefined) {
    if (typeof options.sockjsUrl !== 'string' || /["<>\s]/.test(options.sockjsUrl)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sockjsUrl must be a URL without quotes, angle brackets or spaces`);
    }
    sockjs.sockjsUrl = options.sockjsUrl;
  }
  if (options.cookieNeeded !== undefined) sockjs.cookieNeeded = Boolean(options.cookieNeeded);
  const delay = options.disconnectDelay;
  if (delay !== undefined) {
    if (!Number.isInteger(delay) || delay < 1 || delay > 0xffff_ffff) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `disconnectDelay must be a whole number of milliseconds from 1, got ${String(delay)}`);
    }
    sockjs.disconnectDelayMs = delay;
  }
  const limit = options.responseLimit;
  if (limit !== undefined) {
    if (!Number.isInteger(limit) || limit < 1 || limit > 0xffff_ffff) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `responseLimit must be a whole number of bytes from 1, got ${String(limit)}`);
    }
    sockjs.responseLimit = limit;
  }
  return sockjs;
}

/** A fixed response to `GET path` (and `HEAD`): `app.get(path, response)`. */
export interface StaticResponse {
  /** The body, sent as is. */
  body: string | Uint8Array;
  /** Its `Content-Type`. Default `text/html; charset=utf-8`. */
  contentType?: string;
  /**
   * Extra response headers, such as `Content-Security-Policy` and
   * `X-Content-Type-Options`. Names are HTTP tokens; values are tab and
   * visible ASCII (no CR or LF). Refused (`ERR_INVALID_OPTION`): the framing
   * the server writes itself (`Content-Length`, `Content-Type`: use
   * `contentType`) and hop-by-hop headers (`Connection`, `Keep-Alive`,
   * `Proxy-Connection`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`). A
   * `Cache-Control` replaces the default `no-cache`.
   */
  headers?: Readonly<Record<string, string>>;
}

/** Options of `new Server(options)`. */
export interface ServerOptions {
  /**
   * The application module, loaded in every worker thread: a file URL or
   * path whose default export is the function given to `defineApp`.
   */
  app?: string | URL;
  /** Worker threads that run handlers. Default: the number of cores. 0 runs them on the main thread. */
  workers?: number;
  /** Native I/O threads. Default: the number of cores. */
  ioThreads?: number;
  /**
   * How Linux schedules the I/O threads. `'batch'` (the default) runs them
   * under `SCHED_BATCH`: woken by the network, an I/O thread does not
   * preempt a handler running on its core, but runs when that one blocks
   * or its time slice ends, and then reads every connection that became
   * ready. Where an I/O thread and a worker share a core this saves a
   * context switch every few requests (ARCHITECTURE.md, "Threads").
   * `'normal'` keeps the system's default policy, under which a woken I/O
   * thread preempts at once: lower latency, less throughput, when there
   * are fewer cores than busy threads. Ignored on other systems.
   */
  ioThreadScheduling?: 'batch' | 'normal';
  /**
   * Open connections (handshakes included) beyond which new ones get HTTP
   * 503 `ERR_SERVER_AT_CAPACITY` at once. Default: the process's open-file
   * limit (the soft `RLIMIT_NOFILE` when the server is created; Node raises
   * it to the hard limit at start-up) minus a reserve of an eighth of it, at
   * least 64 and at most 1,000 descriptors (never more than half), for
   * listeners, worker threads, files and Node's own descriptors: 19,000
   * under a limit of 20,000. 100 000 where the limit is unknown or
   * unlimited. Set above the limit, clients past it wait unanswered while
   * `accept` fails (EMFILE).
   */
  maxConnections?: number;
  /** Largest HTTP request head in bytes. Default 16 KiB; larger gets 431. */
  maxHeadBytes?: number;
  /**
   * Most header lines in an HTTP request head, 1..65535. Default 64: browsers
   * send about 15 on an upgrade and proxies add a handful; more gets 431
   * `ERR_HTTP_HEADERS_TOO_LARGE`. Raise it behind chains of proxies that add many.
   */
  maxHeaders?: number;
  /** Seconds a client has to send its upgrade request. Default 10; then 408. */
  handshakeTimeout?: number;
  /** Seconds an `upgrade` hook has to decide. Default 10; then 503. */
  upgradeTimeout?: number;
  /** Seconds to wait for the peer's close frame after ours. Default 5. */
  closeTimeout?: number;
  /** Bytes of undelivered events per worker before connections of that worker stop reading. Default 8 MiB. */
  maxWorkerQueueBytes?: number;
  /** Milliseconds a worker has to answer the watchdog before it is replaced. Default 3000. */
  watchdogTimeout?: number;
  /** Milliseconds between watchdog pings. Default 500. */
  watchdogInterval?: number;
  /** The Switchboard protocol (RPC) connections' options. */
  rpc?: RpcOptions;
  /** Plain HTTP requests' limits and timeouts (docs/http.md). */
  http?: HttpOptions;
  /**
   * Serve the server's counters to Prometheus at `/metrics` (answered by
   * the core, no worker involved) and a live dashboard page at
   * `/metrics/dashboard` (docs/http.md, "Metrics"). `true` for those
   * paths, or `{ path, dashboard }`; `dashboard: false` serves no page.
   * Default false: then HTTP responses are not counted by route
   * (`stats().http` is empty; counting costs about 40 ns of CPU per
   * response), and nothing is served.
   */
  metrics?: boolean | MetricsOptions;
  /**
   * Many servers as one (docs/scale-out.md): channels go through a broker,
   * so a publish on any server reaches the channel's subscribers on every
   * server that names the same broker. Default none: channels are local.
   */
  broker?: BrokerOptions;
}

/** The broker that carries channels between servers (docs/scale-out.md); each default is in `crates/broker/src/config.rs`. */
export interface BrokerOptions {
  /**
   * Standalone Redis: one server, `redis://[user:password@]host:port[/db]`,
   * or several, over which the channels are sharded by a hash of their name
   * (rendezvous hashing; every server must get the same list, in any order).
   * Give one of `redis`, `cluster` and `nats`.
   */
  redis?: string | string[];
  /**
   * A Redis Cluster (Redis 7, sharded pub/sub): one or more of its nodes'
   * `redis://[user:password@]host:port` URLs, from which the rest is found.
   * A channel `c` is the Redis channel `<prefix>{c}`. Give one of `redis`, `cluster` and `nats`.
   */
  cluster?: string | string[];
  /**
   * NATS (core pub/sub, nats-server 2.2+): one server's URL,
   * `nats://[user:password@]host:port` (or `tls://`), or several of one
   * NATS cluster, of which the client keeps one connection. A channel is a
   * subject, its name escaped (docs/scale-out.md, "NATS"). No history:
   * `history` is refused with it. Give one of `redis`, `cluster` and `nats`.
   */
  nats?: string | string[];
  /** Put in front of every channel's name in Redis (or NATS subject), so applications can share one broker. Default `'switchboard:'` (with NATS `'switchboard.'`: a token of its own; printable ASCII without space, `*`, `>`, `$`, `%`, no empty token). */
  prefix?: string;
  /** Seconds a channel whose last subscriber on this server left stays subscribed in Redis. Default 1: a reload or reconnect subscribes again within it, at no cost to Redis. */
  unsubscribeDelay?: number;
  /** Seconds one connection attempt to Redis may take, and how long `listen()` waits for the first. Default 2. */
  connectTimeout?: number;
  /** Longest wait in seconds between reconnection attempts (starting at 50 ms, doubling). Default 2. */
  maxReconnectDelay?: number;
  /** Publishes (and operations for other servers' connections) waiting to be written to Redis, at most; one more fails with `ERR_BROKER_BACKLOG`. Default 65,536. */
  maxPendingPublishes?: number;
  /**
   * Which channels keep a history in Redis, so protocol clients can
   * recover what they missed and the app can read it (`app.history`); the
   * first rule whose `channels` matches a channel applies. Default none.
   */
  history?: HistoryOptions[];
  /** Seconds a channel's epoch and offset outlive its last publication. Default 7 days: longer than any history, so a client back after its history expired is told exactly that. */
  historyMetaTtl?: number;
  /**
   * Channels (names, or patterns where `*` stands for any run of
   * characters) whose members are kept in Redis: `server.presence(channel)`
   * lists them on every server, and their joins and leaves are published
   * on the channel `'$presence:' + channel` (docs/scale-out.md, "Presence").
   * Default none.
   */
  presence?: string[];
  /**
   * Seconds between end-to-end probes of each pub/sub connection to a
   * standalone Redis: a token published to a channel of this server's own
   * must come back by the next probe, else the subscription went silent
   * and the server reconnects and subscribes again. 0 turns probes off.
   * Default 5.
   */
  probeInterval?: number;
  /** Seconds a member outlives its server's last refresh (servers refresh every third of it): a crashed server's members are gone within about this. Default 30. */
  presenceTtl?: number;
  /**
   * Seconds this server's node number stays claimed in Redis without a heartbeat (one every third of it), and how long
   * the other servers count it live after its last one (docs/scale-out.md, "Nodes"). At least 1. Default 10: three
   * heartbeats may be lost before the number is free again; a server that died is known gone within that. (With NATS
   * nothing is stored: the number is free once the others stop counting the server live.)
   */
  nodeTtl?: number;
}

/** History for some channels (docs/scale-out.md, "History and recovery"). */
export interface HistoryOptions {
  /** A channel name, or a pattern where `*` stands for any run of characters: `'chat.*'`, `'*'`. */
  channels: string;
  /** Publications kept, at most. Default 100. */
  size?: number;
  /** Seconds the history outlives the channel's last publication. Default 300. */
  ttl?: number;
}

/** Limits and timeouts of plain HTTP requests; each has its default in `crates/runtime/src/config.rs`. */
export interface HttpOptions {
  /** Longest request target (path and query), in bytes. Default 8 KiB. Longer: 414. */
  maxUrlBytes?: number;
  /** Largest request body, in bytes, unless a route says otherwise (`bodyLimit`). Default 1 MiB. Larger: 413. */
  maxBodyBytes?: number;
  /** Seconds a client has to send a whole request head. Default 10. Then: 408. */
  headerTimeout?: number;
  /** Seconds a request body may make no progress. Default 30. Then: 408. Also how long a client may take nothing of a static file before it is disconnected. */
  bodyTimeout?: number;
  /** Seconds an idle keep-alive connection stays open. Default 5. */
  keepAliveTimeout?: number;
  /** Requests of one connection in the handlers' hands at once; a pipelining client's others wait. Default 16. */
  maxPipelined?: number;
  /** Body bytes handed to a handler ahead of what it consumed; then the connection stops reading until it catches up. Default 256 KiB. */
  bodyWindow?: number;
  /** Bytes of responses queued for one connection before it is closed (streamed bodies pause at a quarter). Default 16 MiB. */
  maxBackpressure?: number;
  /**
   * Response compression, gzip or brotli as the request's `Accept-Encoding`
   * prefers, for whole bodies of text types (docs/http.md, "Compression").
   * Default on, with the defaults of `HttpCompressionOptions`; `false`
   * turns it off.
   */
  compression?: false | HttpCompressionOptions;
}

/** How responses are compressed; each has its default in `crates/runtime/src/config.rs` (`CompressionConfig`). */
export interface HttpCompressionOptions {
  /** Smallest body compressed, in bytes. Default 1024: below it the gain is a few hundred bytes and the response fits one TCP segment anyway. */
  threshold?: number;
  /** gzip level, 0..9. Default 6 (zlib's default: higher costs much more time for a percent or two). */
  level?: number;
  /** Brotli quality, 0..11. Default 4 (smaller than gzip 6 in about its time; 10 and 11 are for assets compressed once). */
  brotliQuality?: number;
}

/**
 * Options of Switchboard protocol connections (docs/protocol.md), on
 * protocol listeners and RPC WebSocket routes. The limits are announced to
 * each client in the WELCOME and bind what it may send.
 */
export interface RpcOptions {
  /** Largest frame body a client may send, in bytes (≥ 1024). Default 16 MiB: a 4 MiB payload fits; larger data belongs in streams. Over: the connection is closed with `ERR_PROTOCOL_FRAME_TOO_LARGE`. */
  maxFrameSize?: number;
  /** Credit granted to each stream a client sends, in bytes (≥ 1024). Default 1 MiB: enough to keep a loopback or LAN stream busy, and the most a slow handler buffers per stream. */
  initialWindow?: number;
  /** Calls from one client handled at once. Default 4096; more get `ERR_TOO_MANY_CALLS`. */
  maxConcurrentCalls?: number;
  /** Seconds between heartbeats on a quiet connection (0 = off); no data for twice as long closes it with `ERR_HEARTBEAT_TIMEOUT`. Default 30. */
  heartbeatInterval?: number;
  /** Payload codecs offered besides `raw`: `json`, `msgpack`. Default both; the client's preference decides. */
  codecs?: string[];
  /**
   * Bytes queued for one protocol connection beyond which it is closed
   * (`ERR_WS_SLOW_CONSUMER`): a protocol connection never drops a frame,
   * which would corrupt the client's view of its calls. Default 16 MiB
   * (one maximal frame). From a quarter of it the server pauses stream
   * data until the queue drains, so a client that reads is not closed.
   */
  maxBackpressure?: number;
  /**
   * Streams and files one connection may have open towards its client at
   * once (attachments of responses and of the server's own calls). A
   * response's stream outlives its call, so `maxConcurrentCalls` does not
   * bound them. One more is refused with `ERR_TOO_MANY_STREAMS` before
   * anything is sent (`respond` throws it; unhandled, the call's ERROR
   * carries it). Default 256, as HTTP/2 servers allow 100-256 concurrent
   * streams: plenty for a client's parallel downloads, while each open
   * stream holds its source in the worker.
   */
  maxOutboundStreams?: number;
  /**
   * Channels one client may subscribe itself to at once
   * (`client.subscribe()`, allowed by `app.rpc.onSubscribe`); one more is
   * refused with `ERR_TOO_MANY_SUBSCRIPTIONS`. Default 128, Centrifugo's
   * `client_channel_limit`: more than a page shows, while a client whose
   * hook allows any name cannot make the registry hold a channel per
   * request. The app's own `connection.subscribe()` does not count.
   */
  maxSubscriptions?: number;
}

/** The RPC options the workers apply themselves (the native core does not see them). */
export interface RpcWorkerOptions {
  maxOutboundStreams: number;
  maxSubscriptions: number;
}

/** Defaults of the options the TypeScript layer applies itself. */
export const DEFAULTS = {
  watchdogTimeout: 3000,
  watchdogInterval: 500,
  drainTimeout: 5000,
  rpcCodecs: ['json', 'msgpack'],
  rpcMaxOutboundStreams: 256,
  rpcMaxSubscriptions: 128,
  /** `broker.connectTimeout` in seconds, as `BrokerConfig::new` has it: how long `listen()` waits for the broker. */
  brokerConnectTimeout: 2,
  /** `http.compression.threshold`: `CompressionConfig` in `crates/runtime/src/config.rs` says why. */
  compressThreshold: 1024,
} as const;

function seconds(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be a number of seconds >= 0, got ${String(value)}`);
  }
  return Math.round(value * 1000);
}

function count(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be an integer in 0..2^32-1, got ${String(value)}`);
  }
  return value;
}

/** Route options as the native layer takes them. */
export function nativeRoute(path: string, options: RouteOptions, hasUpgradeHook: boolean): NativeRouteOptions {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a route path must start with "/", got ${JSON.stringify(path)}`);
  }
  if (options.slowConsumer !== undefined && options.slowConsumer !== 'drop' && options.slowConsumer !== 'close') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `slowConsumer must be 'drop' or 'close'`);
  }
  const route: NativeRouteOptions = { path, hasUpgradeHook };
  if (options.protocols) route.protocols = [...options.protocols];
  const set = <K extends keyof NativeRouteOptions>(key: K, value: NativeRouteOptions[K] | undefined) => {
    if (value !== undefined) route[key] = value;
  };
  set('maxPayloadLength', count('maxPayloadLength', options.maxPayloadLength));
  set('maxFragments', count('maxFragments', options.maxFragments));
  set('idleTimeoutMs', seconds('idleTimeout', options.idleTimeout));
  set('pingIntervalMs', seconds('pingInterval', options.pingInterval));
  set('maxBackpressure', count('maxBackpressure', options.maxBackpressure));
  set('slowConsumer', options.slowConsumer);
  if (options.compression) route.compression = options.compression === true ? {} : { ...options.compression };
  if (options.allowedOrigins) route.allowedOrigins = [...options.allowedOrigins];
  if (options.rpc) {
    route.rpc = true;
    // Offered first: a client asking for it means it.
    route.protocols = [WEBSOCKET_SUBPROTOCOL, ...(route.protocols ?? []).filter((p) => p !== WEBSOCKET_SUBPROTOCOL)];
  }
  return route;
}

/**
 * Headers a static route may not set: the framing the server writes itself
 * and hop-by-hop headers (RFC 9110 §7.6.1). Kept in step with
 * `crates/node/src/options.rs`, which checks them again.
 */
const RESERVED_HEADERS = new Set([
  'connection',
  'content-length',
  'content-type',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Tab and visible ASCII: nothing that could end a header line. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** A static route as the native layer takes it, its headers checked. */
export function nativeStaticRoute(path: string, response: StaticResponse): NativeStaticRoute {
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `a route path must start with "/", got ${JSON.stringify(path)}`);
  }
  const contentType = response.contentType ?? 'text/html; charset=utf-8';
  if (typeof contentType !== 'string' || !HEADER_VALUE.test(contentType)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `static route ${path}: contentType must be tab and visible ASCII`);
  }
  const body = typeof response.body === 'string' ? Buffer.from(response.body) : Buffer.from(response.body);
  const route: NativeStaticRoute = { path, contentType, body };
  if (response.headers !== undefined) route.headers = checkedHeaders(`static route ${path}`, response.headers);
  return route;
}

/** Headers a static directory may not set besides `RESERVED_HEADERS`: the file server derives them from the file and the request. */
export const FILE_HEADERS: ReadonlySet<string> = new Set([
  'accept-ranges',
  'cache-control',
  'content-encoding',
  'content-range',
  'etag',
  'last-modified',
  'vary',
]);

/**
 * Extra headers of a static route or directory (`owner` names it in
 * errors), checked: token names, values of tab and visible ASCII, none of
 * `RESERVED_HEADERS` or `alsoReserved`. The binding checks them again.
 */
export function checkedHeaders(
  owner: string,
  headers: unknown,
  alsoReserved: ReadonlySet<string> = new Set(),
): { name: string; value: string }[] {
  if (headers === null || typeof headers !== 'object') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${owner}: headers must be an object of names and values`);
  }
  return Object.entries(headers).map(([name, value]: [string, unknown]) => {
    if (!TOKEN.test(name)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `${owner}: header name ${JSON.stringify(name)} is not an HTTP token`);
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || alsoReserved.has(lower)) {
      const hint = lower === 'content-type' && alsoReserved.size === 0 ? ' (use contentType)' : lower === 'cache-control' ? ' (use maxAge and immutable)' : '';
      throw new SwitchboardError('ERR_INVALID_OPTION', `${owner}: the server sets ${name} itself${hint}`);
    }
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) {
      throw new SwitchboardError(
        'ERR_INVALID_OPTION',
        `${owner}: the value of ${name} must be a string of tab and visible ASCII (no CR, LF or other control characters)`,
      );
    }
    return { name, value };
  });
}

/** Server options as the native layer takes them (routes added by the caller). */
export function nativeServer(options: ServerOptions, workers: number): Omit<NativeServerOptions, 'routes'> {
  const out: Omit<NativeServerOptions, 'routes'> = { workers: Math.max(1, workers) };
  const set = <K extends Exclude<keyof NativeServerOptions, 'routes'>>(key: K, value: NativeServerOptions[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('ioThreads', count('ioThreads', options.ioThreads));
  if (options.ioThreadScheduling !== undefined && options.ioThreadScheduling !== 'batch' && options.ioThreadScheduling !== 'normal') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `ioThreadScheduling must be 'batch' or 'normal', got ${String(options.ioThreadScheduling)}`);
  }
  set('ioThreadScheduling', options.ioThreadScheduling);
  set('maxConnections', count('maxConnections', options.maxConnections));
  set('maxHeadBytes', count('maxHeadBytes', options.maxHeadBytes));
  if (options.maxHeaders !== undefined && (!Number.isInteger(options.maxHeaders) || options.maxHeaders < 1 || options.maxHeaders > 0xffff)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `maxHeaders must be an integer in 1..65535, got ${String(options.maxHeaders)}`);
  }
  set('maxHeaders', options.maxHeaders);
  set('handshakeTimeoutMs', seconds('handshakeTimeout', options.handshakeTimeout));
  set('upgradeTimeoutMs', seconds('upgradeTimeout', options.upgradeTimeout));
  set('closeTimeoutMs', seconds('closeTimeout', options.closeTimeout));
  set('maxWorkerQueueBytes', count('maxWorkerQueueBytes', options.maxWorkerQueueBytes));
  out.rpc = nativeRpc(options.rpc ?? {});
  if (options.http) out.http = nativeHttp(options.http);
  if (options.broker !== undefined) out.broker = nativeBroker(options.broker);
  return out;
}

/** One `redis://` URL or a non-empty list of distinct ones. */
function redisUrls(name: string, value: string | string[] | undefined): string[] {
  const urls = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(urls) || urls.length === 0) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be a redis:// URL or a non-empty array of them, got ${JSON.stringify(value)}`);
  }
  for (const url of urls) {
    if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must hold redis:// URLs, got ${JSON.stringify(url)}`);
    }
  }
  if (new Set(urls).size !== urls.length) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} names a server twice: ${JSON.stringify(urls)}`);
  }
  return [...urls];
}

/** Whether `prefix` can start every channel's NATS subject: `valid_prefix` in crates/broker/src/nats/subject.rs. */
function natsPrefix(prefix: string): boolean {
  return /^[!-~]*$/.test(prefix) && !/[%*>$]/.test(prefix) && !prefix.startsWith('.') && !prefix.includes('..');
}

function natsUrls(value: string | string[] | undefined): string[] {
  const urls = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(urls) || urls.length === 0) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.nats must be a nats:// URL or a non-empty array of them, got ${JSON.stringify(value)}`);
  }
  for (const url of urls) {
    if (typeof url !== 'string' || !/^(nats|tls):\/\/[^\s]+$/.test(url)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `broker.nats must hold nats:// (or tls://) URLs, got ${JSON.stringify(url)}`);
    }
  }
  if (new Set(urls).size !== urls.length) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.nats names a server twice: ${JSON.stringify(urls)}`);
  }
  return [...urls];
}

/** What the Redis session store needs of the broker (options checked by `nativeServer` already). */
export function brokerSummary(options: BrokerOptions | undefined): BrokerSummary | undefined {
  if (options === undefined) return undefined;
  const engine = options.nats !== undefined ? 'nats' : options.cluster !== undefined ? 'cluster' : 'redis';
  return { engine, prefix: options.prefix ?? (engine === 'nats' ? 'switchboard.' : 'switchboard:') };
}

function nativeBroker(options: BrokerOptions): NativeBrokerOptions {
  if (options === null || typeof options !== 'object') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker must be an object such as { redis: 'redis://127.0.0.1:6379' }, got ${String(options)}`);
  }
  const given = (['redis', 'cluster', 'nats'] as const).filter((key) => options[key] !== undefined);
  if (given.length !== 1) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'broker needs exactly one of redis (standalone servers), cluster (a Redis Cluster) and nats (NATS)');
  }
  const which = given[0] as 'redis' | 'cluster' | 'nats';
  if (which === 'nats' && options.history !== undefined && options.history.length > 0) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'broker.history needs Redis (broker.redis): with NATS, channels keep no history');
  }
  const urls = which === 'nats' ? natsUrls(options.nats) : redisUrls(`broker.${which}`, options.cluster ?? options.redis);
  if (options.prefix !== undefined && typeof options.prefix !== 'string') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.prefix must be a string, got ${String(options.prefix)}`);
  }
  // As `valid_prefix` in crates/broker/src/nats/subject.rs.
  if (which === 'nats' && options.prefix !== undefined && !natsPrefix(options.prefix)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.prefix must start a NATS subject (printable ASCII without space, %, *, > or $; no empty token), got ${JSON.stringify(options.prefix)}`);
  }
  const out: NativeBrokerOptions = which === 'nats' ? { nats: urls } : which === 'cluster' ? { cluster: urls } : { redis: urls };
  const set = <K extends keyof NativeBrokerOptions>(key: K, value: NativeBrokerOptions[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('prefix', options.prefix);
  set('unsubscribeDelayMs', seconds('broker.unsubscribeDelay', options.unsubscribeDelay));
  set('connectTimeoutMs', seconds('broker.connectTimeout', options.connectTimeout));
  set('maxReconnectDelayMs', seconds('broker.maxReconnectDelay', options.maxReconnectDelay));
  set('maxPendingPublishes', count('broker.maxPendingPublishes', options.maxPendingPublishes));
  if (options.history !== undefined) out.history = nativeHistory(options.history);
  set('historyMetaTtlSeconds', wholeSeconds('broker.historyMetaTtl', options.historyMetaTtl));
  if (options.presence !== undefined) {
    if (!Array.isArray(options.presence) || !options.presence.every((p) => typeof p === 'string' && p !== '')) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `broker.presence must be an array of channel names or patterns such as ['chat.*']`);
    }
    if (which === 'nats' && options.presence.length > 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'broker.presence is kept in Redis (broker.redis or broker.cluster): broker.nats does not keep presence');
    }
    out.presence = [...options.presence];
  }
  const ttl = options.presenceTtl;
  if (ttl !== undefined && !(typeof ttl === 'number' && ttl >= 0.03 && ttl <= 86_400)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.presenceTtl must be a number of seconds in 0.03..86400, got ${String(ttl)}`);
  }
  set('presenceTtlMs', seconds('broker.presenceTtl', ttl));
  set('probeIntervalMs', seconds('broker.probeInterval', options.probeInterval));
  if (options.nodeTtl !== undefined && !(typeof options.nodeTtl === 'number' && options.nodeTtl >= 1)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.nodeTtl must be a number of seconds >= 1, got ${String(options.nodeTtl)}`);
  }
  set('nodeTtlMs', seconds('broker.nodeTtl', options.nodeTtl));
  return out;
}

function nativeHistory(rules: HistoryOptions[]): NativeHistoryRule[] {
  if (!Array.isArray(rules)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `broker.history must be an array such as [{ channels: 'chat.*', size: 100, ttl: 300 }], got ${String(rules)}`);
  }
  return rules.map((rule, i) => {
    const name = `broker.history[${i}]`;
    if (rule === null || typeof rule !== 'object' || typeof rule.channels !== 'string' || rule.channels === '') {
      throw new SwitchboardError('ERR_INVALID_OPTION', `${name}.channels must be a channel name or pattern such as 'chat.*'`);
    }
    const size = rule.size ?? 100;
    if (!Number.isInteger(size) || size < 1 || size > 1_000_000) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `${name}.size must be an integer in 1..1000000, got ${String(rule.size)}`);
    }
    return { channels: rule.channels, size, ttlSeconds: wholeSeconds(`${name}.ttl`, rule.ttl ?? 300) ?? 300 };
  });
}

/** Seconds as a whole number of at least 1 (Redis expiries are whole seconds). */
function wholeSeconds(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value >= 1) || value > 0xffff_ffff) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be a number of seconds in 1..2^32-1, got ${String(value)}`);
  }
  return Math.round(value);
}

function nativeHttp(options: HttpOptions): NativeHttpOptions {
  const out: NativeHttpOptions = {};
  const set = <K extends keyof NativeHttpOptions>(key: K, value: NativeHttpOptions[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('maxUrlBytes', count('http.maxUrlBytes', options.maxUrlBytes));
  const body = options.maxBodyBytes;
  if (body !== undefined && !(Number.isSafeInteger(body) && body >= 0)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `http.maxBodyBytes must be a whole number of bytes, got ${String(body)}`);
  }
  set('maxBodyBytes', body);
  set('headerTimeoutMs', seconds('http.headerTimeout', options.headerTimeout));
  set('bodyTimeoutMs', seconds('http.bodyTimeout', options.bodyTimeout));
  set('keepAliveTimeoutMs', seconds('http.keepAliveTimeout', options.keepAliveTimeout));
  set('maxPipelined', count('http.maxPipelined', options.maxPipelined));
  set('bodyWindow', count('http.bodyWindow', options.bodyWindow));
  set('maxBackpressure', count('http.maxBackpressure', options.maxBackpressure));
  set('compression', nativeCompression(options.compression));
  return out;
}

function nativeCompression(options: false | HttpCompressionOptions | undefined): NativeHttpCompressionOptions | undefined {
  if (options === undefined) return undefined;
  if (options === false) return { enabled: false };
  if (typeof options !== 'object' || options === null) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `http.compression must be false or an object, got ${String(options)}`);
  }
  const level = (name: string, value: number | undefined, max: number) => {
    if (value !== undefined && (!Number.isInteger(value) || value < 0 || value > max)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `http.compression.${name} must be an integer in 0..${max}, got ${String(value)}`);
    }
    return value;
  };
  const out: NativeHttpCompressionOptions = { enabled: true };
  const threshold = count('http.compression.threshold', options.threshold);
  if (threshold !== undefined) out.threshold = threshold;
  const gzipLevel = level('level', options.level, 9);
  if (gzipLevel !== undefined) out.gzipLevel = gzipLevel;
  const brotliQuality = level('brotliQuality', options.brotliQuality, 11);
  if (brotliQuality !== undefined) out.brotliQuality = brotliQuality;
  return out;
}

/** The smallest whole response body the workers compress (`Infinity`: compression is off). */
export function compressThreshold(options: HttpOptions | undefined): number {
  const compression = options?.compression;
  if (compression === false) return Infinity;
  return compression?.threshold ?? DEFAULTS.compressThreshold;
}

/** The RPC options the workers apply, validated, with their defaults. */
export function rpcWorkerOptions(options: RpcOptions = {}): RpcWorkerOptions {
  const streams = options.maxOutboundStreams;
  if (streams !== undefined && (!Number.isInteger(streams) || streams < 1 || streams > 0xffff_ffff)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `rpc.maxOutboundStreams must be an integer in 1..2^32-1, got ${String(streams)}`);
  }
  const subscriptions = options.maxSubscriptions;
  if (subscriptions !== undefined && (!Number.isInteger(subscriptions) || subscriptions < 0 || subscriptions > 0xffff_ffff)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `rpc.maxSubscriptions must be an integer in 0..2^32-1, got ${String(subscriptions)}`);
  }
  return {
    maxOutboundStreams: streams ?? DEFAULTS.rpcMaxOutboundStreams,
    maxSubscriptions: subscriptions ?? DEFAULTS.rpcMaxSubscriptions,
  };
}

function nativeRpc(options: RpcOptions): NativeRpcOptions {
  for (const name of ['maxFrameSize', 'initialWindow'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value < 1024 || value > 0xffff_ffff)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `rpc.${name} must be an integer in 1024..2^32-1, got ${String(value)}`);
    }
  }
  const codecs = options.codecs ?? [...DEFAULTS.rpcCodecs];
  for (const codec of codecs) {
    if (!findCodec(codec)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `rpc.codecs: unknown codec ${JSON.stringify(codec)} (raw, json, msgpack)`);
    }
  }
  const out: NativeRpcOptions = { codecs };
  const set = <K extends keyof NativeRpcOptions>(key: K, value: NativeRpcOptions[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('maxFrameSize', options.maxFrameSize);
  set('initialWindow', options.initialWindow);
  set('maxConcurrentCalls', count('rpc.maxConcurrentCalls', options.maxConcurrentCalls));
  set('heartbeatIntervalMs', seconds('rpc.heartbeatInterval', options.heartbeatInterval));
  set('maxBackpressure', count('rpc.maxBackpressure', options.maxBackpressure));
  return out;
}
