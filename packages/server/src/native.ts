/**
 * Loads the native addon (built from `crates/node`) and types its surface.
 * The addon is a shared library: loading it in every worker thread is
 * cheap and they all share one process-wide registry of servers.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Options as the native layer takes them (see `crates/node/src/options.rs`). */
export interface NativeCompressionOptions {
  serverNoContextTakeover?: boolean;
  clientNoContextTakeover?: boolean;
  serverMaxWindowBits?: number;
  clientMaxWindowBits?: number;
  threshold?: number;
}

export interface NativeRouteOptions {
  path: string;
  hasUpgradeHook: boolean;
  protocols?: string[];
  maxPayloadLength?: number;
  maxFragments?: number;
  idleTimeoutMs?: number;
  pingIntervalMs?: number;
  maxBackpressure?: number;
  slowConsumer?: 'drop' | 'close';
  compression?: NativeCompressionOptions;
  allowedOrigins?: string[];
  rpc?: boolean;
  sockjs?: NativeSockJsOptions;
}

export interface NativeSockJsOptions {
  prefix: string;
  websocket?: boolean;
  heartbeatMs?: number;
  sockjsUrl?: string;
  cookieNeeded?: boolean;
  disconnectDelayMs?: number;
  responseLimit?: number;
}

export interface NativeTlsOptions {
  cert: Buffer;
  key: Buffer;
  sni?: { servername: string; cert: Buffer; key: Buffer }[];
  ca?: Buffer;
  rejectUnauthorized?: boolean;
}

export interface NativeRpcOptions {
  maxFrameSize?: number;
  initialWindow?: number;
  maxConcurrentCalls?: number;
  heartbeatIntervalMs?: number;
  codecs?: string[];
  maxBackpressure?: number;
}

export interface NativeStaticRoute {
  path: string;
  contentType: string;
  body: Buffer;
  headers?: { name: string; value: string }[];
}

/** A directory served natively (`crates/node/src/options.rs`, `StaticDirOptions`). */
export interface NativeStaticDir {
  prefix: string;
  root: string;
  /** `''`: no index file. */
  index?: string;
  maxAge?: number;
  immutable?: boolean;
  precompressed?: boolean;
  dotfiles?: 'ignore' | 'allow';
  fallthrough?: boolean;
  headers?: { name: string; value: string }[];
  cache?: NativeStaticCache;
}

/** `cache` of a static directory (`FileCacheOptions` in `crates/node/src/options.rs`). */
export interface NativeStaticCache {
  enabled: boolean;
  maxFileBytes?: number;
  maxBytes?: number;
  revalidateMs?: number;
}

/** One HTTP route (`crates/node/src/options.rs`, `HttpRouteOptions`). */
export interface NativeHttpRoute {
  /** Uppercase; absent for every method. */
  method?: string;
  pattern: string;
  maxBodyBytes?: number;
}

export interface NativeHttpOptions {
  maxUrlBytes?: number;
  maxBodyBytes?: number;
  headerTimeoutMs?: number;
  bodyTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  maxPipelined?: number;
  bodyWindow?: number;
  maxBackpressure?: number;
  compression?: NativeHttpCompressionOptions;
}

export interface NativeHttpCompressionOptions {
  enabled?: boolean;
  threshold?: number;
  gzipLevel?: number;
  brotliQuality?: number;
}

export interface NativeServerOptions {
  routes: NativeRouteOptions[];
  staticRoutes?: NativeStaticRoute[];
  httpRoutes?: NativeHttpRoute[];
  staticDirs?: NativeStaticDir[];
  http?: NativeHttpOptions;
  workers: number;
  ioThreads?: number;
  ioThreadScheduling?: 'batch' | 'normal';
  maxConnections?: number;
  maxHeadBytes?: number;
  maxHeaders?: number;
  handshakeTimeoutMs?: number;
  upgradeTimeoutMs?: number;
  closeTimeoutMs?: number;
  maxWorkerQueueBytes?: number;
  rpc?: NativeRpcOptions;
  /** Where the core answers GET with the counters in Prometheus's format. */
  metricsPath?: string;
  broker?: NativeBrokerOptions;
}

export interface NativeBrokerOptions {
  /** Standalone servers (sharded when several). */
  redis?: string[];
  /** Or a Redis Cluster's seeds. */
  cluster?: string[];
  /** Or NATS servers (one NATS cluster's). */
  nats?: string[];
  prefix?: string;
  unsubscribeDelayMs?: number;
  connectTimeoutMs?: number;
  maxReconnectDelayMs?: number;
  maxPendingPublishes?: number;
  history?: NativeHistoryRule[];
  historyMetaTtlSeconds?: number;
  presence?: string[];
  presenceTtlMs?: number;
  probeIntervalMs?: number;
  nodeTtlMs?: number;
}

export interface NativeHistoryRule {
  channels: string;
  size: number;
  ttlSeconds: number;
}

/** `ServerHandle.history`'s answer (`crates/node/src/history.rs`). */
export interface NativeHistoryPage {
  epoch: string;
  offset: number;
  continuous: boolean;
  publications: { offset: number; data: Uint8Array; binary: boolean }[];
}

/** `ServerHandle.recover`'s answer. */
export interface NativeRecovery {
  epoch: string;
  offset: number;
  recovered: boolean;
  delivered: number;
}

export interface NativeWorkerStats {
  connectionsOpen: number;
  messagesIn: number;
  queuedEventBytes: number;
}

export interface NativeStats {
  connectionsOpen: number;
  connectionsTotal: number;
  handshakesRejected: number;
  messagesIn: number;
  bytesIn: number;
  messagesOut: number;
  bytesOut: number;
  messagesDropped: number;
  protocolErrors: number;
  httpRequests: number;
  outboundBufferedBytes: number;
  channels: number;
  subscriptions: number;
  /** Publishes the broker accepted and lost because Redis failed while they were sent. */
  brokerPublishesLost: number;
  /** This server's node number (docs/scale-out.md, "Nodes"): 0 without a broker, or before one was claimed. */
  brokerNode: number;
  /** The live nodes sharing the broker (heard from within `broker.nodeTtl`), this one included, ascending; empty without a broker. */
  brokerNodes: number[];
  /** Node messages from the broker (Redis or NATS) that were malformed and ignored. */
  brokerNodeMessagesInvalid: number;
  /** Heartbeats that found this server's node number held by another server. */
  brokerNodeConflicts: number;
  workers: NativeWorkerStats[];
  /** HTTP responses by route label, those that counted one. */
  http: NativeHttpRouteStats[];
}

/** The HTTP responses of one route label (docs/http.md, "Metrics"). */
export interface NativeHttpRouteStats {
  /** The route's pattern as registered, a static directory's prefix, or `(not-found)`, `(method-not-allowed)`, `(upgrade-required)`, `(bad-request)`. */
  route: string;
  /** Responses by status code (`'200'`), by class for codes not listed on their own (`'4xx'`), or `'other'`. */
  statuses: Record<string, number>;
  /** Responses per latency bucket, not cumulative: one per bound of `latencyBounds`, then one above the last. */
  latencyBuckets: number[];
  /** The buckets' upper bounds, in seconds. */
  latencyBounds: number[];
  /** The latencies added up, in seconds. */
  latencySumSeconds: number;
  /** Responses counted (the statuses, and the buckets, add up to it). */
  count: number;
}

export interface NativeServerHandle {
  readonly id: number;
  listen(host: string, port: number, protocol: 'http' | 'rpc', tls?: NativeTlsOptions | null): { host: string; port: number };
  listenUnix(path: string, protocol: 'http' | 'rpc'): void;
  attachWorker(index: number, wake: () => void): void;
  detachWorker(index: number): void;
  /**
   * `goAway` (default true): a protocol connection gets a GO_AWAY first; false when its peer wrote one.
   * A connection of another node: true once handed to the broker; throws `ERR_BROKER_*` when it refuses.
   */
  end(connection: number, code: number, reason: string, goAway?: boolean): boolean;
  terminate(connection: number): boolean;
  /** A SockJS send's messages were handled: the HTTP connection `http` answers it. */
  sockjsSent(http: number): boolean;
  bufferedAmount(connection: number): number;
  resolveUpgrade(
    connection: number,
    accept: boolean,
    status: number,
    reason: string,
    protocol?: string | null,
  ): boolean;
  publishTo(
    channels: string[],
    subscribers: number[],
    data: Uint8Array,
    binary: boolean,
    exclude?: number | null,
  ): number;
  subscribe(subscribers: number[], channel: string, delta: number): number[];
  unsubscribe(subscriber: number, channel: string): boolean;
  isSubscribed(subscriber: number, channel: string): boolean;
  subscriberCount(channel: string): number;
  channelsOf(subscriber: number): string[];
  subscribersOf(channel: string): number[];
  copySubscriptions(from: string, to: string): number[];
  createVirtualSocket(target: number, tag?: Uint8Array | null): number;
  deleteVirtualSocket(id: number, expectedTarget?: number | null): number[];
  workerDied(index: number): number;
  stats(): NativeStats;
  /** Every counter in Prometheus's text format, as the metrics endpoint serves it. */
  metricsText(): string;
  close(drainTimeoutMs: number): Promise<unknown>;
  /** Settles (with whether the broker accepts publishes) once it does or after `timeoutMs`. */
  brokerReady(timeoutMs: number): Promise<unknown>;
  /** A channel's history after a position (or its newest `limit`), and its position now. */
  history(channel: string, sinceEpoch: string | null, sinceOffset: number, limit: number): Promise<NativeHistoryPage>;
  /** The members of a channel on every node; `info` is JSON text. */
  presence(channel: string): Promise<{ id: number; info: string }[]>;
  /** What a subscriber shows in presence (JSON text); false without a broker. */
  setPresenceInfo(subscriber: number, info: string): boolean;
  /** A session's JSON text (`crates/node/src/sessions.rs`) in the broker's Redis, null when unknown or expired. */
  sessionGet(id: string, key: string): Promise<string | null>;
  sessionSet(id: string, key: string, value: string, ttlMs: number): Promise<null>;
  sessionTouch(id: string, key: string, ttlMs: number): Promise<null>;
  sessionDestroy(id: string, key: string): Promise<null>;
  /** Queue for a subscriber what it missed of a channel after a position, once the subscription is in effect in the broker. */
  recover(subscriber: number, channel: string, sinceEpoch: string | null, sinceOffset: number): Promise<NativeRecovery>;
}

/** What `RouteTable.find` answers (`crates/node/src/routes.rs`). */
export type NativeRouteFound =
  | { route: number; params: string[] }
  | { fixed: number }
  | { status: 404 }
  | { status: 405; allow: string }
  | { status: 501 };

/** The native route table outside a server (`inject()` routes with it). */
export interface NativeRouteTable {
  /** `method` as sent; `path` without the query, percent-encoded. */
  find(method: string, path: string): NativeRouteFound;
}

export interface NativeErrorCodeInfo {
  code: string;
  kind: 'close' | 'http' | 'throw';
  value: number;
  description: string;
}

export interface NativeModule {
  errorCatalog(): NativeErrorCodeInfo[];
  /** Defer this thread's I/O wake-ups until `uncork` (nests). */
  cork(): void;
  uncork(): void;
  /**
   * The per-message operations are module functions taking the server's id:
   * napi-rs locks a process-wide table for every class-method call (see
   * `crates/node/src/hot.rs`).
   */
  /** A `SendStatus`, 4 when handed to the broker for another node, -1 / -2 when the broker refused it. */
  send(server: number, connection: number, data: Uint8Array, binary: boolean): number;
  publish(server: number, channel: string, data: Uint8Array, binary: boolean, exclude?: number | null): number;
  /**
   * Queue an HTTP response (or its head and first piece, with
   * `RESPOND_STREAM`): `headers` is `Name: value\r\n` lines (a string, or
   * their bytes); flags are
   * `http/flags.ts`'s, with the request's route number plus one from bit
   * `RESPOND_ROUTE_SHIFT` up, and `started` its record's: the response is
   * counted when it ends. Returns the send status (3: the connection is gone).
   */
  httpRespond(
    server: number,
    connection: number,
    status: number,
    headers: string | Uint8Array,
    body: Uint8Array | string,
    flags: number,
    length: number,
    started: number,
  ): number;
  /** The handlers of an HTTP connection consumed `bytes` more of its request bodies. */
  httpBodyConsumed(server: number, connection: number, bytes: number): void;
  /** The handler of body number `body` answered without reading all of it: the rest is discarded. */
  httpDiscardBody(server: number, connection: number, body: number): void;
  /** The next piece of a streamed response (`WRITE_CHUNKED`, `WRITE_END`). */
  httpWrite(server: number, connection: number, data: Uint8Array | string, flags: number): number;
  /**
   * Answer the first response in line with a file, sent by the
   * connection's I/O thread (`res.file`): the handler's status and header
   * lines, the path (relative to `root` when given), the request's header
   * lines as received, `FILE_*` flags (`http/flags.ts`) and `max-age`.
   * `HTTP_FILE_DONE` tells how it went. Returns the send status.
   */
  httpFile(
    server: number,
    connection: number,
    status: number,
    headers: string,
    path: string,
    root: string | null | undefined,
    requestHeaders: Buffer,
    flags: number,
    maxAge: number,
    started: number,
  ): number;
  /** The `Content-Type` the core sends a file with, by its name's extension. */
  contentTypeOf(name: string): string;
  /** The next piece of a streamed response (`WRITE_CHUNKED`, `WRITE_END`); with `WRITE_END`, the response is counted with `status` and `started`. */
  httpWrite(server: number, connection: number, data: Uint8Array | string, flags: number, status: number, started: number): number;
  /** The events queued for a worker; an array when large messages come in buffers of their own: the batch, then those. */
  drainEvents(server: number, index: number): Buffer | Buffer[];
  ServerHandle: {
    create(options: NativeServerOptions): NativeServerHandle;
    open(id: number): NativeServerHandle;
  };
  RouteTable: {
    /** The table of `routes` (numbered in order) and of fixed GET responses at `fixedPaths`; refuses what `listen` would (`ERR_INVALID_OPTION`). */
    create(routes: NativeHttpRoute[], fixedPaths?: string[] | null): NativeRouteTable;
  };
}

const here = path.dirname(fileURLToPath(import.meta.url));
/** `dist/esm/native.js` → `<package>/native/`. */
const nativeDir = path.resolve(here, '..', '..', 'native');
/** napi-rs names builds `<name>.<platform>-<arch>[-<abi>].node`. */
const candidates = [`${process.platform}-${process.arch}-gnu`, `${process.platform}-${process.arch}-musl`, `${process.platform}-${process.arch}`];
const addonPath =
  process.env.SWITCHBOARD_NATIVE ??
  candidates.map((c) => path.join(nativeDir, `switchboard.${c}.node`)).find((p) => existsSync(p)) ??
  path.join(nativeDir, `switchboard.${candidates[0]}.node`);

function load(): NativeModule {
  if (!existsSync(addonPath)) {
    throw new Error(
      `ERR_NATIVE_MISSING: the native addon is not built (${addonPath}); run \`npm run build\` at the repository root`,
    );
  }
  return createRequire(import.meta.url)(addonPath) as NativeModule;
}

export const native: NativeModule = load();
