/**
 * An HTTP request as a handler sees it. What the native core sent is
 * decoded on demand: the header lines, the query, the parameters and the
 * cookies cost nothing until a handler reads them.
 */
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { Readable } from 'node:stream';
import { HttpError } from './http-error.js';
import { readMultipart, readMultipartAll, type MultipartForm, type MultipartOptions, type MultipartPart } from './multipart.js';
import { parseCookies, type CookieKeyring, type UnsignedCookie } from './cookies.js';
import type { HttpMethod } from '../internal/events.js';
import type { TlsInfo } from '../tls.js';
import { clientAddress, firstValue, type TrustTest } from './proxy.js';

/** What the connection knows of its peer, shared by its requests. */
export interface Peer {
  /** `ip:port` as the native side formats it (`[v6]:port` for IPv6). */
  readonly remoteAddress: string;
  readonly tls: TlsInfo | undefined;
  /** `app.trustProxy`, when set: which forwarded hops to believe. */
  readonly trustProxy?: TrustTest | undefined;
}

/**
 * The body as it arrives: pieces the native side sent (views into event
 * batches), then the end, or an error when the client went away.
 *
 * The native side hands a body over at most a window (`http.bodyWindow`)
 * ahead of what the handler consumed, so every byte consumed is reported
 * back (`consumed`): when the handler takes a piece from the iteration, at
 * once when it asked for the whole body, and when its response ends without
 * having read it all (the rest is then discarded natively).
 */
export class BodyReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /**
   * `chunks` is one piece that owns its buffer (`HTTP_BODY_OWNED`): the
   * whole body can be handed out as it is. A piece that is a view into a
   * batch is copied out instead, so as not to keep the batch alive.
   */
  private soleOwned = false;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  /** Report every piece as consumed on arrival (the whole body was asked for, or it is discarded). */
  private eager = false;
  private discarded = false;
  /** Whether a consumer took the body (only one may). */
  claimed = false;

  constructor(private readonly consumed: (bytes: number) => void) {}

  /** Whether the last piece arrived (or the body failed). */
  get finished(): boolean {
    return this.ended || this.failure !== undefined;
  }

  push(data: Buffer, last: boolean, owned = false): void {
    if (data.length > 0) {
      if (this.eager) this.consumed(data.length);
      if (!this.discarded) {
        this.soleOwned = owned && this.chunks.length === 0;
        this.chunks.push(data);
        this.size += data.length;
      }
    }
    if (last) this.ended = true;
    this.notify();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.notify();
  }

  /**
   * The response ended: what was received and not consumed counts as
   * consumed, and later pieces are dropped. Returns whether the body had
   * not ended (the native side must discard its rest).
   */
  discard(): boolean {
    if (!this.eager && this.size > 0) this.consumed(this.size);
    this.eager = true;
    this.discarded = true;
    this.chunks.length = 0;
    this.size = 0;
    this.soleOwned = false;
    return !this.finished;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** The next piece, or `null` at the end. */
  async next(): Promise<Buffer | null> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk !== undefined) {
        this.soleOwned = false;
        this.size -= chunk.length;
        this.consumed(chunk.length);
        return chunk;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** The whole body, once it ended. */
  async all(): Promise<Buffer> {
    if (!this.eager) {
      this.eager = true;
      if (this.size > 0) this.consumed(this.size);
    }
    while (!this.ended) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    if (this.failure) throw this.failure;
    const chunks = this.chunks;
    const whole = chunks.length !== 1 ? Buffer.concat(chunks, this.size) : this.soleOwned ? chunks[0]! : Buffer.from(chunks[0]!);
    chunks.length = 0;
    this.size = 0;
    this.soleOwned = false;
    return whole;
  }
}

const EMPTY = Buffer.alloc(0);
const NON_ASCII = /[\x80-\xff]/;

export class Request<Params extends Record<string, string> = Record<string, string>> {
  /** The path as sent (percent-encoded), without the query. */
  readonly path: string;
  /** The query string after `?`, as sent; empty without one. */
  readonly rawQuery: string;
  /** Where the header lines are, until they are decoded. */
  private headerBatch: Buffer | undefined;
  private decodedHeaders: Record<string, string> | undefined;
  private decodedQuery: ParsedUrlQuery | undefined;
  private decodedParams: Params | undefined;
  private abort: AbortController | undefined;
  /** @internal The body's reader, when the request has one. */
  readonly bodyReader: BodyReader | undefined;
  /**
   * The body as the route's `schema.body` validated it (parsed JSON, with
   * its defaults); undefined on a route without one. Set by the
   * validation step, before the route's handlers.
   */
  body: unknown = undefined;
  /** `json()`'s result, kept: validation reads the body, and the handler may call `json()` again. */
  private parsedJson: { value: unknown } | undefined;
  /**
   * @internal What the native side counts the response by
   * (`http/metrics.rs`): the route number plus one, times 2^16 (added to
   * the response's flags), and when the head was complete (the record's
   * `started`). Assigned in the constructor rather than initialised as
   * ES2022 fields (which compile to defines, not stores): one shape for
   * every request, at the cost of two stores.
   */
  declare routeBits: number;
  /** @internal */
  declare started: number;
  /** @internal The number of its body on the connection (the native side counts bodies the same way); -1 without one. */
  declare bodyNumber: number;

  /** @internal */
  constructor(
    readonly method: HttpMethod,
    path: string,
    rawQuery: string,
    headerBatch: Buffer,
    private readonly headersStart: number,
    private readonly headersEnd: number,
    private readonly buildParams: ParamsBuilder,
    private readonly rawParams: readonly string[],
    private readonly peer: Peer,
    /** The body's reader, when the request has one. */
    body: BodyReader | undefined,
    /** The HTTP version: `'1.1'` or `'1.0'`. */
    readonly httpVersion: '1.1' | '1.0',
  ) {
    this.path = path;
    this.rawQuery = rawQuery;
    this.headerBatch = headerBatch;
    this.bodyReader = body;
    this.routeBits = 0;
    this.started = 0;
    this.bodyNumber = -1;
  }

  /** The request target: path and query. */
  get url(): string {
    return this.rawQuery === '' ? this.path : `${this.path}?${this.rawQuery}`;
  }

  /** Parsed query parameters; a repeated key gives an array. */
  get query(): ParsedUrlQuery {
    return (this.decodedQuery ??= parseQuery(this.rawQuery));
  }

  /** Path parameters, percent-decoded (a malformed escape stays as sent). */
  get params(): Params {
    return (this.decodedParams ??= this.buildParams(this.rawParams) as Params);
  }

  /**
   * Header names are lowercase; repeated headers are joined with `, `
   * (`cookie` with `; `), as RFC 9110 §5.3 allows. Values are the bytes as
   * sent, read as latin1 (as Node's `http` does).
   */
  get headers(): Readonly<Record<string, string>> {
    if (this.decodedHeaders === undefined) {
      this.decodedHeaders = decodeHeaderLines((this.headerBatch ?? EMPTY).toString('latin1', this.headersStart, this.headersEnd));
      this.headerBatch = undefined;
    }
    return this.decodedHeaders;
  }

  /**
   * @internal The header lines as received (`Name: value\r\n` each),
   * what the core reads a file's conditions and range from (`res.file`);
   * rebuilt from the decoded headers once those were read.
   */
  rawHeaderLines(): Buffer {
    if (this.headerBatch !== undefined) return this.headerBatch.subarray(this.headersStart, this.headersEnd);
    let lines = '';
    for (const [name, value] of Object.entries(this.headers)) lines += `${name}: ${value}\r\n`;
    return Buffer.from(lines, 'latin1');
  }

  /** One header (case-insensitive name). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()];
  }

  /** @internal The app's cookie secrets (`app.cookieSecrets`), set by the connection. */
  keyring: CookieKeyring | undefined;
  private parsedCookies: Record<string, string> | undefined;
  private verifiedCookies: Record<string, string> | undefined;

  /**
   * The cookies of the `Cookie` header, name to value (a signed cookie
   * with its raw `s:...` value: `signedCookies` has it checked). Parsed on
   * first use; malformed pairs are skipped. No prototype. Bytes beyond
   * ASCII (sent raw by other servers' cookies) are read as UTF-8.
   */
  get cookies(): Record<string, string> {
    if (this.parsedCookies === undefined) {
      const header = this.headers.cookie;
      this.parsedCookies = parseCookies(header !== undefined && NON_ASCII.test(header) ? Buffer.from(header, 'latin1').toString('utf8') : header);
    }
    return this.parsedCookies;
  }

  /**
   * The signed cookies whose signature one of `app.cookieSecrets`
   * verified, name to value; a cookie with a bad or missing signature is
   * absent. No prototype.
   */
  get signedCookies(): Record<string, string> {
    if (this.verifiedCookies === undefined) {
      const verified = Object.create(null) as Record<string, string>;
      const cookies = this.cookies;
      for (const name in cookies) {
        const checked = this.keyring?.verify(name, cookies[name]!);
        if (checked) verified[name] = checked.value;
      }
      this.verifiedCookies = verified;
    }
    return this.verifiedCookies;
  }

  /**
   * Check the signed cookie `name`: its value, and `stale: true` when an
   * older secret signed it (send it again to re-sign it with the newest).
   * Undefined when absent, unsigned or badly signed.
   */
  unsign(name: string): UnsignedCookie | undefined {
    const raw = this.cookies[name];
    return raw === undefined ? undefined : this.keyring?.verify(name, raw);
  }

  /** The peer's IP address. */
  get ip(): string {
    const address = this.peer.remoteAddress;
    const colon = address.lastIndexOf(':');
    const host = colon < 0 ? address : address.slice(0, colon);
    const ip = host.startsWith('[') ? host.slice(1, -1) : host;
    const trust = this.peer.trustProxy;
    return trust ? clientAddress(ip, this.headers['x-forwarded-for'], trust) : ip;
  }

  /** The peer's `ip:port`. */
  get remoteAddress(): string {
    return this.peer.remoteAddress;
  }

  /** `'https'` on a TLS listener, else `'http'`. */
  get protocol(): 'http' | 'https' {
    if (this.peer.trustProxy && this.trustsPeer()) {
      const forwarded = firstValue(this.headers['x-forwarded-proto'])?.toLowerCase();
      if (forwarded === 'https' || forwarded === 'http') return forwarded;
    }
    return this.peer.tls ? 'https' : 'http';
  }

  /** What the TLS handshake settled, on a TLS listener. */
  get tls(): TlsInfo | undefined {
    return this.peer.tls;
  }

  /** The `Host` header without its port. */
  get hostname(): string {
    const forwarded = this.peer.trustProxy && this.trustsPeer() ? firstValue(this.headers['x-forwarded-host']) : undefined;
    const host = forwarded ?? this.headers.host ?? '';
    if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
    const colon = host.indexOf(':');
    return colon < 0 ? host : host.slice(0, colon);
  }

  /** Whether the socket's peer is a trusted proxy (`app.trustProxy`). */
  private trustsPeer(): boolean {
    const address = this.peer.remoteAddress;
    const colon = address.lastIndexOf(':');
    const host = colon < 0 ? address : address.slice(0, colon);
    return this.peer.trustProxy?.(host.startsWith('[') ? host.slice(1, -1) : host, 0) ?? false;
  }

  /** Fires when the client goes away before the response is complete. */
  get signal(): AbortSignal {
    return (this.abort ??= new AbortController()).signal;
  }

  /** @internal The connection closed before the response ended. */
  aborted(reason: Error): void {
    this.abort?.abort(reason);
    this.bodyReader?.fail(reason);
  }

  /** The whole body (empty without one). */
  async buffer(): Promise<Buffer> {
    if (!this.bodyReader) return Buffer.alloc(0);
    this.claim();
    return this.bodyReader.all();
  }

  /** The body as UTF-8 text. */
  async text(): Promise<string> {
    return (await this.buffer()).toString('utf8');
  }

  /** The body parsed as JSON; malformed JSON is `ERR_HTTP_INVALID_BODY` (400). */
  async json<T = unknown>(): Promise<T> {
    if (this.parsedJson) return this.parsedJson.value as T;
    const text = await this.text();
    try {
      this.parsedJson = { value: JSON.parse(text) };
      return this.parsedJson.value as T;
    } catch (error) {
      throw new HttpError(400, 'ERR_HTTP_INVALID_BODY', 'the body is not valid JSON', { cause: error });
    }
  }

  /** The body parsed as `application/x-www-form-urlencoded`. */
  async urlencoded(): Promise<ParsedUrlQuery> {
    return parseQuery(await this.text());
  }

  /**
   * A `multipart/form-data` body, part by part as it arrives: fields, and
   * files whose `stream` is read before the next part is asked for (see
   * `http/multipart.ts` for the limits and what failing ones throw).
   */
  multipart(options?: MultipartOptions): AsyncIterableIterator<MultipartPart> {
    return readMultipart(this, options);
  }

  /** A small `multipart/form-data` body whole: fields by name, files as Buffers. */
  multipartAll(options?: MultipartOptions): Promise<MultipartForm> {
    return readMultipartAll(this, options);
  }

  /**
   * The body piece by piece, as it arrives. Each piece is a view into an
   * event batch: copy it to keep a small slice of it for long.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    if (!this.bodyReader) return;
    this.claim();
    for (;;) {
      const chunk = await this.bodyReader.next();
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** The body as a Node `Readable`. */
  stream(): Readable {
    return Readable.from(this, { objectMode: false });
  }

  private claim(): void {
    if (this.bodyReader!.claimed) {
      throw new HttpError(500, 'ERR_HTTP_BODY_CONSUMED', 'the request body was already read');
    }
    this.bodyReader!.claimed = true;
  }
}

/** A route's parameters object from the raw values (`paramsBuilder`). */
export type ParamsBuilder = (raw: readonly string[]) => Record<string, string>;

/** A raw parameter, percent-decoded (a malformed escape stays as sent). */
function decodeParam(raw: string | undefined): string {
  if (raw === undefined) return '';
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** @internal The parameters of a route without any, or of no route. */
export const NO_PARAMS: ParamsBuilder = () => ({});

/**
 * The parameters' builder of a route with these names: a function made
 * for the route (its object literal has the names as keys), so every
 * request of a route builds an object of one shape without a keyed store
 * per name. Names are the router's `[A-Za-z0-9_]+` and `*`; computed keys,
 * so that `__proto__` is a parameter like any other.
 */
export function paramsBuilder(names: readonly string[]): ParamsBuilder {
  if (names.length === 0) return NO_PARAMS;
  for (const name of names) {
    if (!/^([A-Za-z0-9_]+|\*)$/.test(name)) throw new Error(`ERR_INTERNAL: not a parameter name: ${JSON.stringify(name)}`);
  }
  const fields = names.map((name, i) => `[${JSON.stringify(name)}]: decode(raw[${i}])`).join(', ');
  const make = new Function('decode', `return (raw) => ({ ${fields} });`) as (decode: typeof decodeParam) => ParamsBuilder;
  return make(decodeParam);
}

/** The header lines of a request head (already validated natively), as latin1 text. */
export function decodeHeaderLines(text: string): Record<string, string> {
  // No prototype: a header named `__proto__` or `constructor` is a header.
  const headers = Object.create(null) as Record<string, string>;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const lineEnd = end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    const colon = text.indexOf(':', start);
    if (colon > start && colon < lineEnd) {
      const name = text.slice(start, colon).toLowerCase();
      const value = text.slice(colon + 1, lineEnd).trim();
      const previous = headers[name];
      headers[name] = previous === undefined ? value : `${previous}${name === 'cookie' ? '; ' : ', '}${value}`;
    }
    start = end + 1;
  }
  return headers;
}
