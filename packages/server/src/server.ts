/**
 * The server, on the main thread: options, the worker pool (or the main
 * thread as the single worker with `workers: 0`), listening and shutdown.
 */
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, type SockJsBehavior, type WebSocketBehavior, loadApp } from './app.js';
import type { RpcService } from './rpc/service.js';
import { SwitchboardError, liftNativeError } from './errors.js';
import { Dispatcher } from './internal/dispatcher.js';
import { native, type NativeServerHandle, type NativeTlsOptions } from './native.js';
import { Operations } from './operations.js';
import type { RedisSessionStore, RedisSessionStoreOptions } from './http/redis-store.js';
import { DEFAULTS, type ServerOptions, brokerSummary, compressThreshold, nativeServer, rpcWorkerOptions } from './options.js';
import type { ClientBundleOptions } from './http/client-bundle.js';
import { WorkerPool, type RouteTable } from './workers/pool.js';
import { DEFAULT_INJECT_LIMITS, type InjectOptions, type InjectResponse } from './http/inject.js';
import { metricsRoutes } from './http/metrics.js';

/** An address the server listens on. */
export interface ListenAddress {
  host: string;
  port: number;
  /**
   * What the port serves: `'http'` (the default: HTTP routes and WebSocket
   * upgrades) or `'rpc'` (the Switchboard protocol from the first byte).
   */
  protocol?: 'http' | 'rpc';
  /**
   * Serve it inside TLS (rustls in the core): `wss://` and `https://` for
   * `'http'`, the protocol in TLS for `'rpc'`. One server may listen with
   * and without TLS at once.
   */
  tls?: TlsOptions;
}

/** PEM strings or Buffers, named as in `node:tls`. */
export interface TlsOptions {
  /** The certificate chain (PEM). */
  cert: string | Uint8Array;
  /** Its private key (PEM: PKCS#8, PKCS#1 or SEC1). */
  key: string | Uint8Array;
  /** Certificates chosen by the server name the client asks for (SNI); others get `cert`. */
  sni?: Record<string, { cert: string | Uint8Array; key: string | Uint8Array }>;
  /** CA certificates (PEM) of accepted client certificates: clients are asked for one. */
  ca?: string | Uint8Array;
  /** With `ca`: refuse clients without a valid certificate. Default true (false: a certificate is optional, checked when given). */
  rejectUnauthorized?: boolean;
}

/** @deprecated The same as {@link TlsOptions} (TLS was offered on protocol listeners first). */
export type RpcTlsOptions = TlsOptions;

/** A Unix socket. */
export interface UnixListenAddress {
  path: string;
  /** What it serves, as for a TCP address. Default `'http'`. */
  protocol?: 'http' | 'rpc';
}

/** Where to listen: a TCP address or a Unix socket path. */
export type ListenTarget = ListenAddress | UnixListenAddress;

export interface CloseOptions {
  /** Milliseconds to wait for connections to finish their closing handshake. Default 5000. */
  drainTimeout?: number;
}

/** Information given with `handlerError` events. */
export interface HandlerErrorInfo {
  worker: number;
  handler: string;
  connection: number;
}

function protocolOf(address: ListenTarget): 'http' | 'rpc' {
  const protocol = address.protocol ?? 'http';
  if (protocol !== 'http' && protocol !== 'rpc') {
    throw new SwitchboardError('ERR_INVALID_OPTION', `protocol must be 'http' or 'rpc', got ${JSON.stringify(protocol)}`);
  }
  return protocol;
}

function bind(handle: NativeServerHandle, address: ListenTarget): ListenTarget {
  const protocol = protocolOf(address);
  if ('path' in address) {
    handle.listenUnix(address.path, protocol);
    return { path: address.path, protocol };
  }
  const bound: ListenAddress = handle.listen(address.host, address.port, protocol, address.tls ? nativeTls(address.tls) : null);
  if (protocol === 'rpc') bound.protocol = protocol;
  if (address.tls) bound.tls = address.tls;
  return bound;
}

function pem(value: string | Uint8Array, what: string): Buffer {
  if (typeof value === 'string') return Buffer.from(value);
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new SwitchboardError('ERR_INVALID_OPTION', `tls.${what} must be a PEM string or bytes`);
}

function nativeTls(tls: TlsOptions): NativeTlsOptions {
  const out: NativeTlsOptions = { cert: pem(tls.cert, 'cert'), key: pem(tls.key, 'key') };
  if (tls.sni) {
    out.sni = Object.entries(tls.sni).map(([servername, c]) => ({ servername, cert: pem(c.cert, 'sni.cert'), key: pem(c.key, 'sni.key') }));
  }
  if (tls.ca !== undefined) out.ca = pem(tls.ca, 'ca');
  if (tls.rejectUnauthorized !== undefined) out.rejectUnauthorized = tls.rejectUnauthorized;
  return out;
}

function specifierOf(app: string | URL): string {
  if (app instanceof URL) return app.href;
  if (app.startsWith('file:')) return app;
  return pathToFileURL(path.resolve(app)).href;
}

/**
 * A Switchboard server.
 *
 * Events: `handlerError(error, info)` when a handler throws or rejects (its
 * connection is closed with 1011; without a listener the error is printed),
 * `workerReplaced({ worker, code })` when the watchdog replaced a worker.
 */
export class Server extends Operations {
  private readonly options: ServerOptions;
  private readonly workerCount: number;
  /** Routes registered inline (`server.ws`) run on the main thread. */
  private readonly local = new App(0);
  private pool: WorkerPool | undefined;
  private dispatcher: Dispatcher | undefined;
  private state: 'idle' | 'starting' | 'listening' | 'closing' | 'closed' = 'idle';
  private bound: ListenTarget[] = [];

  constructor(options: ServerOptions = {}) {
    super();
    this.options = { ...options };
    const workers = options.workers ?? os.availableParallelism();
    if (!Number.isInteger(workers) || workers < 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `workers must be an integer >= 0, got ${String(workers)}`);
    }
    this.workerCount = workers;
    // Validate now rather than at listen().
    nativeServer(this.options, workers);
    this.local.rpc.limits = rpcWorkerOptions(this.options.rpc);
    this.local.compressThreshold = compressThreshold(this.options.http);
    this.local.broker = brokerSummary(this.options.broker);
    this.local.injectLimits = {
      maxBodyBytes: this.options.http?.maxBodyBytes ?? DEFAULT_INJECT_LIMITS.maxBodyBytes,
      maxUrlBytes: this.options.http?.maxUrlBytes ?? DEFAULT_INJECT_LIMITS.maxUrlBytes,
    };
    this.local.injectReport = (error) => this.reportHandlerError(error, { worker: 0, handler: 'http', connection: 0 });
  }

  /** Register a WebSocket route on the main thread (with `workers: 0`). */
  ws<UserData = unknown>(path: string, behavior: WebSocketBehavior<UserData>): this {
    this.inlineOnly('WebSocket routes');
    this.local.ws(path, behavior);
    return this;
  }

  /** Register a SockJS service on the main thread (with `workers: 0`): see `App.sockjs`. */
  sockjs<UserData = unknown>(prefix: string, behavior: SockJsBehavior<UserData>): this {
    this.inlineOnly('SockJS services');
    this.local.sockjs(prefix, behavior);
    return this;
  }

  /**
   * The RPC service of the main thread (with `workers: 0`): register
   * Switchboard protocol actions inline, as `app.rpc` does in app modules.
   */
  get rpc(): RpcService {
    if (this.workerCount > 0) {
      throw new SwitchboardError(
        'ERR_INVALID_OPTION',
        'inline RPC handlers run on the main thread: use `workers: 0`, or register them on `app.rpc` in the app module',
      );
    }
    return this.local.rpc;
  }

  /**
   * The main thread's app (with `workers: 0`): HTTP routes, middleware and
   * routers registered inline, as an app module does on its `app`.
   */
  get app(): App {
    this.inlineOnly('HTTP routes');
    return this.local;
  }

  /**
   * A session store in the broker's Redis (`App.sessionStore`), on the
   * main thread: for `session({ store })` on `server.app` (with
   * `workers: 0`), or to read and end sessions from main-thread code.
   * Sessions are shared with every worker and server of the broker.
   */
  sessionStore(options?: RedisSessionStoreOptions): RedisSessionStore {
    return this.local.sessionStore(options);
  }

  /**
   * `get(path, { body })`: a fixed response, served natively (also with
   * workers). `get(pattern, ...handlers)`: an HTTP route on the main
   * thread (with `workers: 0`); the other methods are on `server.app`.
   */
  get<P extends Record<string, string> = Record<string, string>>(path: string, ...args: Parameters<App['get']> extends [string, ...infer R] ? R : never): this {
    const fixed = args.length === 1 && typeof args[0] === 'object' && args[0] !== null && 'body' in args[0];
    if (!fixed) this.inlineOnly('HTTP routes');
    this.local.get<P>(path, ...(args as Parameters<App['get']> extends [string, ...infer R] ? R : never));
    return this;
  }

  /**
   * Serve the browser client at `path` and its declarations at `.d.ts`
   * (see `App.clientBundle`): fixed responses, so also with workers.
   */
  clientBundle(path?: string, options?: ClientBundleOptions): this {
    this.local.clientBundle(path, options);
    return this;
  }

  /** `post(pattern, ...handlers)` on the main thread (with `workers: 0`). */
  post(pattern: string, ...args: Parameters<App['post']> extends [string, ...infer R] ? R : never): this {
    this.inlineOnly('HTTP routes');
    this.local.post(pattern, ...args);
    return this;
  }

  /**
   * `app.inject()` on the main thread's app (with `workers: 0`): a request
   * through the HTTP routes without a socket, before or after `listen`
   * (the app module, when given, is loaded first).
   */
  async inject(options: InjectOptions | string): Promise<InjectResponse> {
    if (this.workerCount > 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'inject() runs the main thread\'s routes: use `workers: 0` (or `app.inject` on an App)');
    }
    await this.loadLocalApp();
    return this.local.inject(options);
  }

  /** The app module on the main thread (with `workers: 0`), loaded once, by `listen` or `inject`. */
  private loadLocalApp(): Promise<void> {
    if (!this.options.app) return Promise.resolve();
    return (this.localAppLoaded ??= loadApp(this.local, specifierOf(this.options.app)));
  }

  private localAppLoaded: Promise<void> | undefined;

  private inlineOnly(what: string): void {
    if (this.workerCount > 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `inline ${what} run on the main thread: use \`workers: 0\`, or register them in the app module`);
    }
  }

  /** The first listening port (0 before `listen`). */
  get port(): number {
    return this.bound.find((a): a is ListenAddress => 'port' in a)?.port ?? 0;
  }

  /** Every address the server listens on. */
  get addresses(): ListenTarget[] {
    return [...this.bound];
  }

  /**
   * Start the workers and listen. `listen(port, host)` or a list of
   * addresses sharing one server state. Host defaults to 127.0.0.1.
   */
  async listen(port: number | ListenTarget[] = 0, host = '127.0.0.1'): Promise<ListenTarget[]> {
    if (this.state !== 'idle') {
      throw new SwitchboardError('ERR_ALREADY_LISTENING', `the server is ${this.state}`);
    }
    this.state = 'starting';
    const addresses = typeof port === 'number' ? [{ host, port }] : port;
    try {
      const table = await this.loadRoutes();
      const servesRpc = addresses.some((a) => a.protocol === 'rpc');
      const metrics = metricsRoutes(this.options.metrics);
      const routeCount = table.routes.length + table.staticRoutes.length + table.staticDirs.length + table.httpRoutes.length;
      if (routeCount === 0 && !servesRpc && !metrics) {
        throw new SwitchboardError('ERR_NO_ROUTES', 'the app registered no route');
      }
      const handle = native.ServerHandle.create({
        ...nativeServer(this.options, this.workerCount),
        ...(metrics && { metricsPath: metrics.metricsPath }),
        routes: table.routes,
        staticRoutes: metrics ? [...table.staticRoutes, ...metrics.staticRoutes] : table.staticRoutes,
        staticDirs: table.staticDirs,
        httpRoutes: table.httpRoutes,
      });
      this.setHandle(handle);
      this.local.attach(handle);
      await this.attachWorkers(handle);
      // With a broker, wait until it accepts publishes, so a publish right
      // after `listen()` reaches the other servers, and bind only then, so
      // every connection's id carries this server's node number (claimed
      // by then; docs/scale-out.md, "Nodes"). A Redis that is not there
      // within `connectTimeout` does not hold the server back (its
      // publishes throw ERR_BROKER_UNAVAILABLE until it connects).
      if (this.options.broker) await handle.brokerReady(Math.round((this.options.broker.connectTimeout ?? DEFAULTS.brokerConnectTimeout) * 1000));
      for (const address of addresses) this.bound.push(bind(handle, address));
    } catch (error) {
      this.state = 'idle';
      await this.pool?.terminateAll();
      this.pool = undefined;
      if (this.handle) {
        await this.handle.close(0);
        this.setHandle(undefined);
      }
      this.bound = [];
      throw liftNativeError(error);
    }
    this.state = 'listening';
    return this.addresses;
  }

  private async loadRoutes(): Promise<RouteTable> {
    if (this.workerCount === 0) {
      await this.loadLocalApp();
      const httpRoutes = this.local.compileHttp();
      return { routes: this.local.routes.map((r) => r.native), staticRoutes: this.local.staticRoutes, staticDirs: this.local.staticDirs, httpRoutes };
    }
    if (!this.options.app) {
      throw new SwitchboardError('ERR_INVALID_OPTION', 'with worker threads, `app` must name the app module');
    }
    this.pool = new WorkerPool(
      specifierOf(this.options.app),
      this.workerCount,
      {
        interval: this.options.watchdogInterval ?? DEFAULTS.watchdogInterval,
        timeout: this.options.watchdogTimeout ?? DEFAULTS.watchdogTimeout,
      },
      {
        handlerError: (error, info) => this.reportHandlerError(error, info),
        workerReplaced: (info) => this.emit('workerReplaced', info),
      },
      this.local.rpc.limits,
      this.local.compressThreshold,
      this.local.broker,
    );
    const table = await this.pool.start();
    // Static routes may also be registered on the main thread.
    return {
      ...table,
      staticRoutes: [...table.staticRoutes, ...this.local.staticRoutes],
      staticDirs: [...table.staticDirs, ...this.local.staticDirs],
    };
  }

  private async attachWorkers(handle: NativeServerHandle): Promise<void> {
    if (this.pool) {
      await this.pool.attach(handle);
      return;
    }
    const dispatcher = new Dispatcher(this.local, handle, 0, (failure) =>
      this.reportHandlerError(failure.error, { worker: 0, handler: failure.handler, connection: failure.connection }),
    );
    this.dispatcher = dispatcher;
    handle.attachWorker(0, () => dispatcher.wake());
  }

  private reportHandlerError(error: unknown, info: HandlerErrorInfo): void {
    if (this.listenerCount('handlerError') > 0) {
      this.emit('handlerError', error, info);
    } else {
      console.error(`switchboard: ${info.handler} handler failed (connection ${info.connection}, worker ${info.worker}):`, error);
    }
  }

  /**
   * Graceful shutdown: stop accepting, close every connection with 1001,
   * wait up to `drainTimeout` for closing handshakes, force the rest, then
   * run the last `close` handlers and stop the workers.
   */
  async close(options: CloseOptions = {}): Promise<void> {
    if (this.state !== 'listening') return;
    this.state = 'closing';
    const handle = this.handle!;
    await handle.close(options.drainTimeout ?? DEFAULTS.drainTimeout);
    if (this.pool) {
      await this.pool.shutdown(2000);
    } else {
      this.dispatcher?.drainAll();
      handle.detachWorker(0);
    }
    this.state = 'closed';
    this.bound = [];
  }
}
