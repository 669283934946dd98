/**
 * `inject()`: a request through an app's routes without a socket, for
 * tests (fastify's `inject`). The request is routed by the native route
 * table itself (`native.RouteTable`, the tree a server matches with), so
 * it reaches the route a real request would, with the same parameters;
 * what the core answers without JavaScript (404, 405 with `Allow`, 426,
 * 413, 414, 501, fixed routes, HEAD without a body) is answered here the
 * same way. A route's request runs through the real pipeline (hooks,
 * middleware, handlers, error handlers) with a `Response` whose host
 * collects what it writes instead of framing it for a socket.
 */
import { isIPv6 } from 'node:net';
import { SwitchboardError, liftNativeError } from '../errors.js';
import type { HttpMethod } from '../internal/events.js';
import { native, type NativeHttpRoute, type NativeRouteTable, type NativeStaticRoute } from '../native.js';
import { RESPOND_HEAD, RESPOND_HTTP10, RESPOND_KEEP_ALIVE, RESPOND_LENGTH, RESPOND_STREAM, STATUS_SENT, WRITE_END } from './flags.js';
import { runRoute, type Report } from './pipeline.js';
import { BodyReader, Request } from './request.js';
import { Response, type ResponseHost } from './response.js';
import type { CompiledRoute } from './router.js';
import type { CookieKeyring } from './cookies.js';
import { injectFile } from './inject-file.js';
import type { FileOrder } from './send-file.js';

/** A request to inject. */
export interface InjectOptions {
  /** Default `GET`; sent uppercased. */
  method?: string;
  /** `/path?query`, or an absolute `http://host/path?query` (its host is the `Host` header). Normalised as `fetch` does (WHATWG URL). */
  url: string;
  /** Request headers; an array gives a header several lines. `Host` defaults to the URL's, `localhost` for a path. */
  headers?: Readonly<Record<string, string | number | readonly string[]>>;
  /** A string or bytes as they are; any other value as JSON (with `Content-Type: application/json` unless one is given). */
  body?: string | Uint8Array | object;
  /** The peer's address (`ip` or `ip:port`). Default `127.0.0.1`. */
  remoteAddress?: string;
}

/** The response, whole: `inject()` resolves once it ended. */
export interface InjectResponse {
  statusCode: number;
  /** Lowercase names, the framing headers the server writes included; a repeated header is an array. */
  headers: Record<string, string | string[]>;
  /** The body as the client would read it (none for HEAD, 204, 304). */
  body: Buffer;
  /** The body as UTF-8. */
  text(): string;
  /** The body parsed as JSON. */
  json<T = unknown>(): T;
}

/** @internal The server's limits an injected request meets (`http` options). */
export interface InjectLimits {
  maxBodyBytes: number;
  maxUrlBytes: number;
}

/** @internal What `inject()` needs of an app. */
export interface InjectSource {
  /** The HTTP routes flattened as at `listen`, and what the native table takes. */
  flattenHttp(): { routes: CompiledRoute[]; native: NativeHttpRoute[] };
  readonly staticRoutes: readonly NativeStaticRoute[];
  /** The WebSocket routes' paths (exact, or a prefix ending in `*`). */
  readonly webSocketPaths: readonly string[];
  /** The secrets of signed cookies, as a connection hands them to its requests. */
  readonly cookieKeyring?: CookieKeyring;
  /** `http.compression.threshold`: an injected response gets the `Vary` a served one would. */
  readonly compressThreshold: number;
}

/** The defaults of `crates/runtime/src/config.rs` (`HttpConfig`). */
export const DEFAULT_INJECT_LIMITS: InjectLimits = { maxBodyBytes: 1024 * 1024, maxUrlBytes: 8192 };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TEXT = 'Content-Type: text/plain; charset=utf-8\r\n';

/** Routes an app's injected requests; keeps the native table while the routes stay the same. */
export class Injector {
  private key: string | undefined;
  private table: NativeRouteTable | undefined;

  constructor(private readonly source: InjectSource) {}

  inject(options: InjectOptions | string, limits: InjectLimits, report: Report): Promise<InjectResponse> {
    const request = prepare(typeof options === 'string' ? { url: options } : options);
    // Compiled anew each time: a test may add routes or middleware between two calls.
    const { routes, native: nativeRoutes } = this.source.flattenHttp();
    const fixed = this.source.staticRoutes;
    const table = this.tableFor(nativeRoutes, fixed);
    const target = request.rawQuery === '' ? request.path : `${request.path}?${request.rawQuery}`;
    if (Buffer.byteLength(target) > limits.maxUrlBytes) {
      return Promise.resolve(coreAnswer(request, 414, 'ERR_HTTP_URI_TOO_LONG: URI too long', '', true));
    }
    const found = table.find(request.method, request.path);
    if ('route' in found) {
      const route = routes[found.route]!;
      if (request.body.length > (route.bodyLimit ?? limits.maxBodyBytes)) {
        return Promise.resolve(coreAnswer(request, 413, 'ERR_HTTP_BODY_TOO_LARGE: Content too large', '', true));
      }
      return run(route, found.params, request, report, this.source);
    }
    if ('fixed' in found) return Promise.resolve(fixedAnswer(request, fixed[found.fixed]!));
    switch (found.status) {
      case 405:
        return Promise.resolve(coreAnswer(request, 405, 'ERR_HTTP_METHOD_NOT_ALLOWED', `Allow: ${found.allow}\r\n`));
      case 501:
        return Promise.resolve(
          coreAnswer(request, 501, `ERR_HTTP_NOT_IMPLEMENTED: Not implemented: ${request.method === 'CONNECT' ? 'CONNECT' : 'unknown method'}`, '', true),
        );
      default:
        if (this.source.webSocketPaths.some((path) => webSocketRouteMatches(path, request.path))) {
          return Promise.resolve(coreAnswer(request, 426, 'ERR_WS_UPGRADE_REQUIRED: this path speaks WebSocket', 'Upgrade: websocket\r\n'));
        }
        return Promise.resolve(coreAnswer(request, 404, 'ERR_HTTP_NOT_FOUND', ''));
    }
  }

  /** The native table of these routes: built once, again when they change. */
  private tableFor(routes: NativeHttpRoute[], fixed: readonly NativeStaticRoute[]): NativeRouteTable {
    const key = JSON.stringify([routes.map((r) => [r.method ?? '', r.pattern]), fixed.map((r) => r.path)]);
    if (this.table === undefined || key !== this.key) {
      try {
        this.table = native.RouteTable.create(
          routes.map((r) => (r.method === undefined ? { pattern: r.pattern } : { method: r.method, pattern: r.pattern })),
          fixed.map((r) => r.path),
        );
      } catch (error) {
        throw liftNativeError(error);
      }
      this.key = key;
    }
    return this.table;
  }
}

/** A request, checked and encoded. */
interface Prepared {
  method: string;
  path: string;
  rawQuery: string;
  /** `Name: value\r\n` lines. */
  headerLines: string;
  body: Buffer;
  keepAlive: boolean;
  remoteAddress: string;
}

function prepare(options: InjectOptions): Prepared {
  if (options === null || typeof options !== 'object') throw new SwitchboardError('ERR_INVALID_OPTION', 'inject() takes a URL or an options object');
  const method = (options.method ?? 'GET').toUpperCase();
  if (!TOKEN.test(method)) throw new SwitchboardError('ERR_INVALID_OPTION', `inject(): not a method: ${JSON.stringify(options.method)}`);
  if (typeof options.url !== 'string' || options.url === '') throw new SwitchboardError('ERR_INVALID_OPTION', 'inject() needs a url');
  let url: URL;
  try {
    url = new URL(options.url, 'http://localhost');
  } catch (error) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `inject(): not a URL: ${JSON.stringify(options.url)}`, { cause: error });
  }

  let body: Buffer = Buffer.alloc(0);
  let jsonBody = false;
  const given = options.body;
  if (typeof given === 'string') body = Buffer.from(given);
  else if (given instanceof Uint8Array) body = Buffer.from(given.buffer, given.byteOffset, given.byteLength);
  else if (given !== undefined && given !== null) {
    body = Buffer.from(JSON.stringify(given));
    jsonBody = true;
  }

  let lines = '';
  let host = false;
  let contentType = false;
  let keepAlive = true;
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (!TOKEN.test(name)) throw new SwitchboardError('ERR_INVALID_OPTION', `inject(): not a header name: ${JSON.stringify(name)}`);
    const lower = name.toLowerCase();
    // The framing of the body is the one given, whatever the headers say.
    if (lower === 'content-length' || lower === 'transfer-encoding') continue;
    host ||= lower === 'host';
    contentType ||= lower === 'content-type';
    const values = Array.isArray(value) ? value.map(String) : [String(value)];
    for (const v of values) {
      if (!FIELD_VALUE.test(v)) throw new SwitchboardError('ERR_INVALID_OPTION', `inject(): the value of ${name} has a control character`);
      if (lower === 'connection' && /(^|,)\s*close\s*(,|$)/i.test(v)) keepAlive = false;
      lines += `${name}: ${v}\r\n`;
    }
  }
  if (!host) lines = `Host: ${url.host}\r\n${lines}`;
  if (jsonBody && !contentType) lines += 'Content-Type: application/json\r\n';
  if (given !== undefined && given !== null) lines += `Content-Length: ${body.length}\r\n`;

  return {
    method,
    path: url.pathname,
    rawQuery: url.search.slice(1),
    headerLines: lines,
    body,
    keepAlive,
    remoteAddress: peerAddress(options.remoteAddress ?? '127.0.0.1'),
  };
}

/** `ip:port` as the native side formats it (`[v6]:port`); a bare address gets port 0. */
function peerAddress(address: string): string {
  if (typeof address !== 'string' || address === '') throw new SwitchboardError('ERR_INVALID_OPTION', 'inject(): remoteAddress must be an address');
  if (isIPv6(address)) return `[${address}]:0`;
  if (address.startsWith('[') || /^[^:]+:\d+$/.test(address)) return address;
  return `${address}:0`;
}

/** `RouteConfig::matches`: exact, or a prefix ending in `*`. */
function webSocketRouteMatches(pattern: string, path: string): boolean {
  return pattern.endsWith('*') ? path.startsWith(pattern.slice(0, -1)) : pattern === path;
}

/** Run a route's chain and collect its response. */
function run(route: CompiledRoute, params: string[], request: Prepared, report: Report, source: InjectSource): Promise<InjectResponse> {
  return new Promise((resolve) => {
    const batch = Buffer.from(request.headerLines, 'latin1');
    // Nothing to pace: the whole body is here.
    const reader = request.body.length > 0 ? new BodyReader(() => {}) : undefined;
    reader?.push(request.body, true);
    const req = new Request(
      request.method as HttpMethod,
      request.path,
      request.rawQuery,
      batch,
      0,
      batch.length,
      route.buildParams,
      params,
      { remoteAddress: request.remoteAddress, tls: undefined },
      reader,
      '1.1',
    );
    const collector = new Collector(request.method === 'HEAD', report, resolve, source.compressThreshold);
    let flags = request.keepAlive ? RESPOND_KEEP_ALIVE : 0;
    if (request.method === 'HEAD') flags |= RESPOND_HEAD;
    const res = new Response(collector, flags, true);
    collector.response = res;
    req.keyring = res.keyring = source.cookieKeyring;
    res.req = req;
    runRoute(route, req, res, report);
  });
}

/**
 * A response's host that keeps what the response writes, framed as the
 * core frames it (`crates/runtime/src/http/respond.rs`): the same framing
 * headers, no body for HEAD and for statuses without one. Never encoded:
 * an injected request is answered as a client without `Accept-Encoding`
 * is (the coding is negotiated and applied by the core), `Vary` included.
 */
class Collector implements ResponseHost {
  private status = 0;
  private lines = '';
  private framing = '';
  private keepAlive = true;
  private readonly pieces: Buffer[] = [];
  private bodyAllowed = true;
  private done = false;
  /** The response it collects (a file's end is told to it). */
  response: Response | undefined;

  constructor(
    private readonly head: boolean,
    private readonly report: Report,
    private readonly resolve: (response: InjectResponse) => void,
    readonly compressThreshold: number,
  ) {}

  respond(status: number, headers: string | Uint8Array, body: string | Uint8Array, flags: number, length: number): number {
    this.status = status;
    this.lines = typeof headers === 'string' ? headers : Buffer.from(headers.buffer, headers.byteOffset, headers.byteLength).toString('latin1');
    this.bodyAllowed = statusAllowsBody(status);
    const streaming = (flags & RESPOND_STREAM) !== 0;
    if (!this.bodyAllowed) this.framing = '';
    else if (!streaming) this.framing = `Content-Length: ${typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength}\r\n`;
    else if (flags & RESPOND_LENGTH) this.framing = `Content-Length: ${length}\r\n`;
    else if (!(flags & RESPOND_HTTP10)) this.framing = 'Transfer-Encoding: chunked\r\n';
    this.piece(body);
    if (!streaming) this.finish(flags);
    return STATUS_SENT;
  }

  write(data: string | Uint8Array, flags: number): number {
    this.piece(data);
    if (flags & WRITE_END) this.finish(flags);
    return STATUS_SENT;
  }

  /** Read the file here (`inject-file.ts`); its end reaches the response as the core's would. */
  file(status: number, headers: string, order: FileOrder): number {
    void injectFile(status, headers, order).then((answer) => {
      const res = this.response;
      if (!answer.sent) {
        res?.fileDone(answer.status, false);
        return;
      }
      res?.fileDone(answer.status, true);
      this.respond(answer.status, answer.lines, answer.body, order.flags & (RESPOND_KEEP_ALIVE | RESPOND_HEAD | RESPOND_HTTP10), 0);
    });
    return STATUS_SENT;
  }

  /** A streamed body failed after its head: the injected response ends as it is. */
  abort(): void {
    this.finish(0);
  }

  cork(): void {
    // Nothing to cork: the pieces are collected.
  }

  uncork(): void {}

  ended(): void {
    // One response per injected request: nothing waits behind it.
  }

  misuse(error: Error): void {
    this.report(error);
  }

  private piece(data: string | Uint8Array): void {
    if (this.head || !this.bodyAllowed || data.length === 0) return;
    // Copied: the handler may reuse its buffer once `write` returned.
    this.pieces.push(typeof data === 'string' ? Buffer.from(data) : Buffer.from(data));
  }

  private finish(flags: number): void {
    if (this.done) return;
    this.done = true;
    this.keepAlive = (flags & RESPOND_KEEP_ALIVE) !== 0;
    const connection = this.keepAlive ? '' : 'Connection: close\r\n';
    this.resolve(injected(this.status, `Date: ${new Date().toUTCString()}\r\n${this.lines}${this.framing}${connection}`, Buffer.concat(this.pieces)));
  }
}

/** An answer of the core's own (`session/http/answers.rs`): `text` as plain text, the connection closed when asked or when the request had a body. */
function coreAnswer(request: Prepared, status: number, text: string, extra: string, close = false): InjectResponse {
  const closes = close || !request.keepAlive || request.body.length > 0;
  const body = request.method === 'HEAD' ? Buffer.alloc(0) : Buffer.from(text);
  const lines = `Date: ${new Date().toUTCString()}\r\n${extra}${TEXT}Content-Length: ${Buffer.byteLength(text)}\r\n${closes ? 'Connection: close\r\n' : ''}`;
  return injected(status, lines, body);
}

/** A fixed route (`app.get(path, { body })`), as `answers.rs` sends it. */
function fixedAnswer(request: Prepared, route: NativeStaticRoute): InjectResponse {
  let extra = '';
  let cacheControl = false;
  for (const { name, value } of route.headers ?? []) {
    cacheControl ||= name.toLowerCase() === 'cache-control';
    extra += `${name}: ${value}\r\n`;
  }
  if (!cacheControl) extra += 'Cache-Control: no-cache\r\n';
  const closes = !request.keepAlive || request.body.length > 0;
  const lines = `Date: ${new Date().toUTCString()}\r\n${extra}Content-Type: ${route.contentType}\r\nContent-Length: ${route.body.length}\r\n${closes ? 'Connection: close\r\n' : ''}`;
  return injected(200, lines, request.method === 'HEAD' ? Buffer.alloc(0) : Buffer.from(route.body));
}

function statusAllowsBody(status: number): boolean {
  return !((status >= 100 && status < 200) || status === 204 || status === 304);
}

function injected(statusCode: number, lines: string, body: Buffer): InjectResponse {
  const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const line of lines.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const previous = headers[name];
    headers[name] = previous === undefined ? value : ([] as string[]).concat(previous, value);
  }
  return {
    statusCode,
    headers,
    body,
    text: () => body.toString('utf8'),
    json: <T>() => JSON.parse(body.toString('utf8')) as T,
  };
}
