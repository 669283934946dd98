/**
 * The application: routes and their handlers, registered by the app module
 * in every worker (`defineApp`), plus the operations every thread has.
 */
import type { NativeHttpRoute, NativeRouteOptions, NativeServerHandle, NativeSockJsOptions, NativeStaticDir, NativeStaticRoute } from './native.js';
import { Operations } from './operations.js';
import type { RouteOptions, SockJsOptions, StaticResponse } from './options.js';
import { DEFAULTS, nativeRoute, nativeSockJs, nativeStaticRoute } from './options.js';
import { SwitchboardError } from './errors.js';
import type { WebSocket } from './websocket.js';
import type { TlsInfo } from './tls.js';
import { RpcService } from './rpc/service.js';
import type { HookName, HookTypes } from './http/hooks.js';
import { DEFAULT_INJECT_LIMITS, Injector, type InjectLimits, type InjectOptions, type InjectResponse } from './http/inject.js';
import { Router, withoutShadowedFallbacks, type CompiledRoute, type ErrorHandler, type Handler, type HttpRouteOptions } from './http/router.js';
import { CookieKeyring, type CookieSecrets } from './http/cookies.js';
import { nativeStaticDir, type StaticOptions } from './http/static.js';
import { trustTest, type TrustProxy, type TrustTest } from './http/proxy.js';
import { clientBundleRoutes, type ClientBundleOptions } from './http/client-bundle.js';
import { RedisSessionStore, type BrokerSummary, type RedisSessionStoreOptions } from './http/redis-store.js';

/** The HTTP request of an upgrade, as the `upgrade` hook sees it. */
export interface UpgradeRequest {
  /** Path without the query. */
  path: string;
  /** The raw query string, without `?`. */
  query: string;
  /** Parsed query parameters. */
  searchParams: URLSearchParams;
  /** Header names are lowercase; repeated headers are joined with `, `. */
  headers: Readonly<Record<string, string>>;
  /** The peer's address, `ip:port`. */
  remoteAddress: string;
  /** Subprotocols the client offered, in its order. */
  protocols: string[];
  /** On a TLS listener: the server name, version, cipher and verified client certificate. */
  tls: TlsInfo | undefined;
}

/** How an `upgrade` hook answers, when it does not simply return the user data. */
export interface UpgradeResponse<UserData> {
  /** Complete the handshake, attaching `data` to the connection. */
  accept(data?: UserData, options?: { protocol?: string }): void;
  /** Answer with an HTTP status (e.g. 401) and reason instead of 101. */
  reject(status: number, reason?: string): void;
}

/** Handlers of a WebSocket route, in the spirit of uWebSockets.js behaviours. */
export interface WebSocketBehavior<UserData = unknown> extends RouteOptions {
  /**
   * Decide before the handshake completes. Return (or resolve to) the data
   * to attach to the connection, or call `res.accept(data)` /
   * `res.reject(status, reason)`. Throwing `UpgradeRejection(status)`
   * rejects with that status; any other error rejects with 500.
   */
  upgrade?: (req: UpgradeRequest, res: UpgradeResponse<UserData>) => UserData | void | Promise<UserData | void>;
  open?: (ws: WebSocket<UserData>) => void | Promise<void>;
  /** `data` is a view valid as long as you keep it (copy it to keep a small slice of a big batch). */
  message?: (ws: WebSocket<UserData>, data: Buffer, isBinary: boolean) => void | Promise<void>;
  /** The connection's queue emptied after a send reported BUFFERED. */
  drain?: (ws: WebSocket<UserData>) => void | Promise<void>;
  close?: (ws: WebSocket<UserData>, code: number, reason: string) => void | Promise<void>;
  /**
   * `app.ws` only: also accept SockJS clients (docs/sockjs.md) with these
   * handlers, for browsers behind proxies that break WebSocket. `true`
   * serves the SockJS service on `<path>/sockjs`; a string is its prefix;
   * an object gives the prefix (same default) and the service's options.
   * The route's options apply to both.
   */
  sockjs?: boolean | string | SockJsServiceOptions;
}

/** `app.ws(path, { sockjs })`: where the SockJS service is, and its options. */
export interface SockJsServiceOptions extends SockJsOptions {
  /** Default `<path>/sockjs`. */
  prefix?: string;
}

/** Handlers and options of a SockJS service: a WebSocket route's, and the protocol's own. */
export interface SockJsBehavior<UserData = unknown> extends Omit<WebSocketBehavior<UserData>, 'sockjs'>, SockJsOptions {}

/** A route as registered. */
export interface RegisteredRoute {
  native: NativeRouteOptions;
  behavior: WebSocketBehavior<never>;
}

type RouteArgs<P extends Record<string, string>> = [HttpRouteOptions, ...Handler<P>[]] | Handler<P>[];

export class App extends Operations {
  /** @internal */ readonly routes: RegisteredRoute[] = [];
  /** @internal */ readonly staticRoutes: NativeStaticRoute[] = [];
  /** @internal The directories served natively (`app.static`). */ readonly staticDirs: NativeStaticDir[] = [];
  /** The app's root router: `app.get(...)` and the other methods register on it. */
  readonly router = new Router();
  /** @internal The HTTP routes flattened at startup; the index is the native route number. */
  httpRoutes: CompiledRoute[] = [];
  /**
   * The handlers of Switchboard protocol calls (docs/protocol.md), for
   * clients on protocol listeners (`listen([{ port, protocol: 'rpc' }])`)
   * and on WebSocket routes with `rpc: true`.
   */
  readonly rpc = new RpcService();
  /** @internal The secrets signed cookies are signed and checked with (`cookieSecrets`). */
  readonly cookieKeyring = new CookieKeyring();
  private callTimeoutMs = 30_000;

  constructor(
    /** Index of the worker this app runs in (0 with `workers: 0`). */
    readonly workerIndex: number,
  ) {
    super();
  }

  /** Serve WebSocket connections on `path` (exact, or a prefix ending in `/*`). */
  ws<UserData = unknown>(path: string, behavior: WebSocketBehavior<UserData>): this {
    const { sockjs, ...websocket } = behavior;
    this.addWebSocketRoute(path, websocket, undefined);
    if (sockjs === undefined || sockjs === false) return this;
    if (path.endsWith('/*')) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `sockjs needs an exact WebSocket path, got ${path}`);
    }
    const service: SockJsServiceOptions = typeof sockjs === 'object' ? sockjs : typeof sockjs === 'string' ? { prefix: sockjs } : {};
    const { prefix = `${path === '/' ? '' : path}/sockjs`, ...options } = service;
    return this.sockjs(prefix, { ...websocket, ...options });
  }

  /** A WebSocket route on `path`, a SockJS service's when `sockjs` is given. */
  private addWebSocketRoute<UserData>(path: string, behavior: WebSocketBehavior<UserData>, sockjs: NativeSockJsOptions | undefined): this {
    if (this.routes.some((r) => r.native.path === path)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `a WebSocket route on ${path} exists already`);
    }
    const native = nativeRoute(path, behavior, typeof behavior.upgrade === 'function');
    if (sockjs) native.sockjs = sockjs;
    this.routes.push({ native, behavior: behavior as unknown as WebSocketBehavior<never> });
    return this;
  }

  /**
   * Serve the SockJS protocol (sockjs-client 1.x) under `prefix` (`/echo`;
   * no trailing slash): each SockJS session is a `WebSocket` for the
   * handlers, its messages text (docs/sockjs.md). The WebSocket transport
   * and the raw `<prefix>/websocket` are served, with `/info`, the
   * greeting and the iframe page answered natively.
   *
   * With `rpc: true` the service carries the Switchboard protocol instead:
   * each session on the HTTP transports is a protocol connection of
   * `app.rpc` (transport `'sockjs'`), its messages base64 of protocol
   * frames, and `<prefix>/websocket` is the protocol over WebSocket. It is
   * the fallback `switchboard-client` uses where WebSocket is blocked
   * (docs/sockjs.md, "The Switchboard protocol over SockJS"). Only the
   * `upgrade` handler is taken.
   */
  sockjs<UserData = unknown>(prefix: string, behavior: SockJsBehavior<UserData>): this {
    const sockjs = nativeSockJs(prefix, behavior);
    if (behavior.rpc) {
      // Every session of such a service is a protocol connection of
      // `app.rpc`: a WebSocket handler would never run.
      for (const handler of ['open', 'message', 'drain', 'close'] as const) {
        if (behavior[handler] !== undefined) {
          throw new SwitchboardError('ERR_INVALID_OPTION', `app.sockjs(${JSON.stringify(prefix)}, { rpc: true }) is served by app.rpc: its ${handler} handler would never run`);
        }
      }
    }
    // A service's route is always `<prefix>/*`: a taken prefix is a taken path.
    return this.addWebSocketRoute(`${prefix}/*`, behavior, sockjs);
  }

  /**
   * `app.get(pattern, [options], ...handlers)`: handle GET (and HEAD)
   * requests for `pattern` (`/users/:id`, `/files/*`; see docs/http.md).
   * `app.get(path, { body, contentType, headers })`: a fixed response,
   * served natively without JavaScript (a page, a health check).
   */
  get<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P> | [StaticResponse]): this {
    if (args.length === 1 && typeof args[0] === 'object' && args[0] !== null && 'body' in args[0]) {
      this.staticRoutes.push(nativeStaticRoute(pattern, args[0] as StaticResponse));
      return this;
    }
    this.router.get(pattern, ...(args as RouteArgs<P>));
    return this;
  }
  /**
   * Serve the files of `options.root` under `prefix` (GET and HEAD on
   * `<prefix>/*`), natively: the core reads and sends them on its I/O
   * threads, with conditional requests, ranges and precompressed `.br` /
   * `.gz` siblings, and no request reaches JavaScript (docs/http.md,
   * "Static files"). The root must exist; it is resolved to its real path
   * now, and a file whose real path is outside it is never served.
   */
  static(prefix: string, options: StaticOptions): this {
    const dir = nativeStaticDir(prefix, options);
    if (this.staticDirs.some((d) => d.prefix === dir.prefix)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `app.static(${JSON.stringify(prefix)}): a directory is served there already`);
    }
    this.staticDirs.push(dir);
    return this;
  }
  /**
   * Serve the browser client (switchboard-client with switchboard-rpc
   * inside, one minified ES module) at `path`, and its declarations at the
   * same path with `.d.ts`: a page imports it with no build step,
   * `<script type="module">import { connect } from '/switchboard/client.js'</script>`.
   * Both are fixed responses, answered natively. Throws
   * `ERR_CLIENT_BUNDLE_MISSING` when the bundle was not built.
   */
  clientBundle(path = '/switchboard/client.js', options: ClientBundleOptions = {}): this {
    this.staticRoutes.push(...clientBundleRoutes(path, options));
    return this;
  }
  post<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.post(pattern, ...args);
    return this;
  }
  put<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.put(pattern, ...args);
    return this;
  }
  patch<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.patch(pattern, ...args);
    return this;
  }
  delete<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.delete(pattern, ...args);
    return this;
  }
  head<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.head(pattern, ...args);
    return this;
  }
  options<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.options(pattern, ...args);
    return this;
  }
  /** Every method. */
  all<P extends Record<string, string> = Record<string, string>>(pattern: string, ...args: RouteArgs<P>): this {
    this.router.all(pattern, ...args);
    return this;
  }
  /** Several methods on one path: `app.route('/users/:id').get(h).put(h)`. */
  route(pattern: string): ReturnType<Router['route']> {
    return this.router.route(pattern);
  }
  /** Middleware and routers: see `Router.use`. */
  use(...args: Parameters<Router['use']>): this {
    this.router.use(...args);
    return this;
  }
  /** Answer what no route takes (see `Router.setNotFoundHandler`). */
  setNotFoundHandler(handler: Handler): this {
    this.router.setNotFoundHandler(handler);
    return this;
  }

  /**
   * Believe `X-Forwarded-For`, `-Proto` and `-Host` from the proxies in
   * front of the server, for `req.ip`, `req.protocol` and `req.hostname`:
   * `true` (every hop), a number of hops nearest the server, or the
   * proxies' addresses. Default false: a client can write these headers.
   */
  set trustProxy(trust: TrustProxy) {
    this.trustProxyTest = trustTest(trust);
  }

  /** @internal */
  trustProxyTest: TrustTest | undefined;

  /** Handle the errors the routes' handlers raise (see `Router.setErrorHandler`). */
  setErrorHandler(handler: ErrorHandler): this {
    this.router.setErrorHandler(handler);
    return this;
  }
  /** A lifecycle hook for every route of the app (see `Router.addHook`). */
  addHook<K extends HookName>(name: K, hook: HookTypes[K]): this {
    this.router.addHook(name, hook);
    return this;
  }

  /**
   * Run a request through the HTTP routes without a socket (for tests):
   * routed by the native route table, answered as a server would answer
   * it (docs/http.md#inject). Resolves once the response ended.
   */
  inject(options: InjectOptions | string): Promise<InjectResponse> {
    try {
      return (this.injector ??= new Injector(this)).inject(options, this.injectLimits, this.injectReport);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private injector: Injector | undefined;
  /** @internal The limits injected requests meet (the server's `http` options). */
  injectLimits: InjectLimits = DEFAULT_INJECT_LIMITS;
  /** @internal Where `inject()` reports what the server would report through `handlerError`. */
  injectReport = (error: unknown): void => console.error('switchboard: an HTTP handler failed (inject):', error);
  /** @internal The smallest whole response body compressed (`http.compression.threshold`; `Infinity` when off), for the responses of this app's connections and of `inject()`. */
  compressThreshold: number = DEFAULTS.compressThreshold;
  /** @internal The server's broker, as the Redis session store needs it (none without a broker). */
  broker: BrokerSummary | undefined;

  /**
   * A session store in the broker's Redis, for `session({ store })`: every
   * worker and every server with the same broker shares its sessions
   * (docs/http.md, "Sessions"). Needs Redis (`broker.redis` or
   * `broker.cluster`): without a broker, or with `nats`, it throws
   * `ERR_INVALID_OPTION`. Its operations work once the server listens.
   */
  sessionStore(options?: RedisSessionStoreOptions): RedisSessionStore {
    return new RedisSessionStore(() => this.native, this.broker, options);
  }

  /** @internal The WebSocket routes' paths, for `inject()`'s 426. */
  get webSocketPaths(): string[] {
    return this.routes.map((route) => route.native.path);
  }

  /** @internal The HTTP routes flattened as at `listen`, and what the native side needs of them; kept nowhere. */
  flattenHttp(): { routes: CompiledRoute[]; native: NativeHttpRoute[] } {
    const routes = withoutShadowedFallbacks(this.router.compile([]));
    const native = routes.map((route) => {
      const native: NativeHttpRoute = { pattern: route.pattern };
      if (route.method !== undefined) native.method = route.method;
      if (route.bodyLimit !== undefined) native.maxBodyBytes = route.bodyLimit;
      return native;
    });
    return { routes, native };
  }

  /** @internal Flatten the HTTP routes (after the app module ran); returns what the native side needs. */
  compileHttp(): NativeHttpRoute[] {
    const { routes, native } = this.flattenHttp();
    this.httpRoutes = routes;
    return native;
  }

  /**
   * The secrets of signed cookies (`res.cookie(name, value, { signed: true })`,
   * `req.signedCookies`, sessions), newest first: the first signs, every one
   * is accepted, so a secret is rotated by putting a new one in front and
   * dropping the old one once its cookies have been re-sent
   * (`req.unsign(name).stale`). Each a string or Buffer of at least 32
   * bytes. Takes effect at the next request; set it the same in every worker.
   */
  set cookieSecrets(secrets: CookieSecrets) {
    this.cookieKeyring.set(secrets);
  }

  /** Default timeout of the calls the server makes to clients, in seconds (0 = none). Default 30. */
  set rpcCallTimeout(seconds: number) {
    if (typeof seconds !== 'number' || !(seconds >= 0) || !Number.isFinite(seconds)) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `rpcCallTimeout must be a number of seconds >= 0, got ${String(seconds)}`);
    }
    this.callTimeoutMs = Math.round(seconds * 1000);
  }

  /** @internal */
  get rpcCallTimeoutMs(): number {
    return this.callTimeoutMs;
  }

  /** @internal */
  attach(handle: NativeServerHandle | undefined): void {
    this.setHandle(handle);
  }
}

/** The default export of an app module: registers routes on the app. */
export type AppSetup = (app: App) => void | Promise<void>;

/** Type helper for app modules: `export default defineApp((app) => { app.ws('/', {...}) })`. */
export function defineApp(setup: AppSetup): AppSetup {
  return setup;
}

/**
 * @internal Import the app module `specifier` (a URL) and run its setup
 * (the default export, or `setup`) on `app`: in every worker thread, or on
 * the main thread with `workers: 0`.
 */
export async function loadApp(app: App, specifier: string): Promise<void> {
  const module = (await import(specifier)) as { default?: unknown; setup?: unknown };
  const setup = module.default ?? module.setup;
  if (typeof setup !== 'function') {
    throw new Error(`the app module ${specifier} must export a default function (use defineApp)`);
  }
  await (setup as AppSetup)(app);
}
