/**
 * An HTTP request as a handler sees it. What the native core sent is
 * decoded on demand: the header lines, the query, the parameters and the
 * cookies cost nothing until a handler reads them.
 */
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { Readable } from 'node:stream';
import { HttpError } from './http-error.js';
import type { HttpMethod } from '../internal/events.js';
import type { TlsInfo } from '../tls.js';

/** What the connection knows of its peer, shared by its requests. */
export interface Peer {
  /** `ip:port` as the native side formats it (`[v6]:port` for IPv6). */
  readonly remoteAddress: string;
  readonly tls: TlsInfo | undefined;
}

/**
 * The body as it arrives: pieces the native side sent (views into event
 * batches), then the end, or an error when the client went away.
 */
export class BodyReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  /** Whether a consumer took the body (only one may). */
  claimed = false;

  push(data: Buffer, last: boolean): void {
    if (data.length > 0) {
      this.chunks.push(data);
      this.size += data.length;
    }
    if (last) this.ended = true;
    this.notify();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.notify();
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
        this.size -= chunk.length;
        return chunk;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return null;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** The whole body, once it ended. */
  async all(): Promise<Buffer> {
    while (!this.ended) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    if (this.failure) throw this.failure;
    const whole = this.chunks.length === 1 ? Buffer.from(this.chunks[0]!) : Buffer.concat(this.chunks, this.size);
    this.chunks.length = 0;
    this.size = 0;
    return whole;
  }
}

const EMPTY = Buffer.alloc(0);

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
  /** @internal The body, when the request has one. */
  readonly body: BodyReader | undefined;

  /** @internal */
  constructor(
    readonly method: HttpMethod,
    path: string,
    rawQuery: string,
    headerBatch: Buffer,
    private readonly headersStart: number,
    private readonly headersEnd: number,
    private readonly paramNames: readonly string[],
    private readonly rawParams: readonly string[],
    private readonly peer: Peer,
    hasBody: boolean,
    /** The HTTP version: `'1.1'` or `'1.0'`. */
    readonly httpVersion: '1.1' | '1.0',
  ) {
    this.path = path;
    this.rawQuery = rawQuery;
    this.headerBatch = headerBatch;
    this.body = hasBody ? new BodyReader() : undefined;
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
    if (this.decodedParams === undefined) {
      const params: Record<string, string> = {};
      for (let i = 0; i < this.paramNames.length; i++) {
        const raw = this.rawParams[i] ?? '';
        params[this.paramNames[i]!] = raw.includes('%') ? safeDecode(raw) : raw;
      }
      this.decodedParams = params as Params;
    }
    return this.decodedParams;
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

  /** One header (case-insensitive name). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()];
  }

  /** The peer's IP address. */
  get ip(): string {
    const address = this.peer.remoteAddress;
    const colon = address.lastIndexOf(':');
    const host = colon < 0 ? address : address.slice(0, colon);
    return host.startsWith('[') ? host.slice(1, -1) : host;
  }

  /** The peer's `ip:port`. */
  get remoteAddress(): string {
    return this.peer.remoteAddress;
  }

  /** `'https'` on a TLS listener, else `'http'`. */
  get protocol(): 'http' | 'https' {
    return this.peer.tls ? 'https' : 'http';
  }

  /** What the TLS handshake settled, on a TLS listener. */
  get tls(): TlsInfo | undefined {
    return this.peer.tls;
  }

  /** The `Host` header without its port. */
  get hostname(): string {
    const host = this.headers.host ?? '';
    if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
    const colon = host.indexOf(':');
    return colon < 0 ? host : host.slice(0, colon);
  }

  /** Fires when the client goes away before the response is complete. */
  get signal(): AbortSignal {
    return (this.abort ??= new AbortController()).signal;
  }

  /** @internal The connection closed before the response ended. */
  aborted(reason: Error): void {
    this.abort?.abort(reason);
    this.body?.fail(reason);
  }

  /** The whole body (empty without one). */
  async buffer(): Promise<Buffer> {
    if (!this.body) return Buffer.alloc(0);
    this.claim();
    return this.body.all();
  }

  /** The body as UTF-8 text. */
  async text(): Promise<string> {
    return (await this.buffer()).toString('utf8');
  }

  /** The body parsed as JSON; malformed JSON is `ERR_HTTP_INVALID_BODY` (400). */
  async json<T = unknown>(): Promise<T> {
    const text = await this.text();
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new HttpError(400, 'ERR_HTTP_INVALID_BODY', 'the body is not valid JSON', { cause: error });
    }
  }

  /** The body parsed as `application/x-www-form-urlencoded`. */
  async urlencoded(): Promise<ParsedUrlQuery> {
    return parseQuery(await this.text());
  }

  /**
   * The body piece by piece, as it arrives. Each piece is a view into an
   * event batch: copy it to keep a small slice of it for long.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    if (!this.body) return;
    this.claim();
    for (;;) {
      const chunk = await this.body.next();
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** The body as a Node `Readable`. */
  stream(): Readable {
    return Readable.from(this, { objectMode: false });
  }

  private claim(): void {
    if (this.body!.claimed) {
      throw new HttpError(500, 'ERR_HTTP_BODY_CONSUMED', 'the request body was already read');
    }
    this.body!.claimed = true;
  }
}

function safeDecode(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
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
