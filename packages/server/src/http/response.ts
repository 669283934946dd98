/**
 * The response to one HTTP request. Its head and body are framed natively
 * (`httpRespond`, `httpWrite`); here are the status, the headers and the
 * rules: one response per request, nothing after its end, and no effect
 * once the client has gone, so nothing a handler does to a response can
 * crash the server or leave it waiting.
 *
 * Responses leave in the order of their requests: a pipelining client's
 * later response waits (in `ops`) until the ones before it ended.
 */
import { SwitchboardError } from '../errors.js';
import { EventStream, type EventStreamOptions } from './sse.js';
import { serializeCookie, type CookieKeyring, type CookieOptions } from './cookies.js';
import {
  RESPOND_BR,
  RESPOND_GZIP,
  RESPOND_HEAD,
  RESPOND_HTTP10,
  RESPOND_KEEP_ALIVE,
  RESPOND_LENGTH,
  RESPOND_STREAM,
  STATUS_BUFFERED,
  WRITE_CHUNKED,
  WRITE_END,
} from './flags.js';

/**
 * What a response needs of its connection: a real one
 * (`internal/http-state.ts`, which writes through the native side) or an
 * injected request's (`inject()`, which collects what is written).
 */
export interface ResponseHost {
  /** Queue the head and the body (or its first piece, with `RESPOND_STREAM`): `httpRespond`'s contract. */
  respond(status: number, headers: string | Uint8Array, body: string | Uint8Array, flags: number, length: number): number;
  /** The next piece of a streamed body: `httpWrite`'s contract. */
  write(data: string | Uint8Array, flags: number): number;
  /** The response ended: the next one in line may write. */
  ended(response: Response): void;
  /** A misuse of the response by the application (reported, not thrown). */
  misuse(error: Error): void;
  /** The smallest whole body compressed, in bytes (`http.compression.threshold`; `Infinity` when off). */
  readonly compressThreshold: number;
}

/** A body `send` takes. Objects (other than bytes) are sent as JSON. */
export type ResponseBody = string | Uint8Array | null | undefined | object;

const enum Stage {
  /** Nothing sent yet: status and headers may change. */
  Head,
  /** The head is out (or queued); the body is being written. */
  Streaming,
  /** A whole response's payload is with the `onSend` hooks: headers may still change, nothing more may be sent. */
  Sending,
  Ended,
}

/** Headers the native side writes itself, which a handler may not set. */
const FRAMING = new Set(['transfer-encoding', 'date', 'keep-alive', 'upgrade', 'trailer', 'te']);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Tab, visible ASCII and obs-text: no CR, LF, NUL or other controls. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  bin: 'application/octet-stream',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  xml: 'application/xml',
  form: 'application/x-www-form-urlencoded',
};

/**
 * The header block of a response whose only header is one of these
 * content types, encoded once: most responses have just that, and bytes
 * cross to the native side without a string conversion.
 */
const CONTENT_TYPE_LINES = new Map<string, Buffer>(
  [...Object.values(CONTENT_TYPES), 'text/plain'].map((type) => [type, Buffer.from(`Content-Type: ${type}\r\n`, 'latin1')]),
);
const NO_HEADERS = Buffer.alloc(0);

/**
 * Media types worth compressing: text, and the text formats under
 * `application/` and `image/` (`+json` and `+xml` suffixes included). Not
 * images, audio, video, fonts or archives: they are compressed already.
 */
const COMPRESSIBLE = /^(?:text\/[!#$%&'*+.^_`|~0-9a-z-]+|application\/(?:json|javascript|x-javascript|ecmascript|xml|[!#$%&'*+.^_`|~0-9a-z-]+\+(?:json|xml))|image\/svg\+xml)$/;
/** Whether each `Content-Type` seen is compressible, by the value as set (an app uses a handful). */
const compressible = new Map<string, boolean>();

function isCompressible(type: string): boolean {
  let known = compressible.get(type);
  if (known === undefined) {
    const semicolon = type.indexOf(';');
    known = COMPRESSIBLE.test((semicolon < 0 ? type : type.slice(0, semicolon)).trim().toLowerCase());
    // Bounded: an app that builds types from input cannot grow it.
    if (compressible.size < 1024) compressible.set(type, known);
  }
  return known;
}

/** One header of a response other than `Content-Type`. */
interface Field {
  lower: string;
  name: string;
  value: string | string[];
}

export class Response {
  /** The status the head will carry. Default 200. */
  statusCode = 200;
  private stage = Stage.Head;
  /** `Content-Type` (the header nearly every response has) has its own slot. */
  private contentType: string | undefined;
  /** Its header line, encoded, when it is one of the known types. */
  private contentTypeLine: Buffer | undefined;
  /** The other headers, in the order set. */
  private fields: Field[] | undefined;
  /** A `Content-Length` the handler set: the length of a streamed body. */
  private declaredLength: number | undefined;
  /** Writes waiting for the responses before this one; null once it is first in line. */
  private ops: (() => void)[] | null;
  private chunked = false;
  private closeAfter = false;
  private gone = false;
  private drainListeners: (() => void)[] | undefined;
  private finishListeners: (() => void)[] | undefined;
  private closeListeners: (() => void)[] | undefined;
  /** Run once, right before the head is framed (`beforeHead`). */
  private headHooks: (() => void)[] | undefined;
  /** @internal The app's cookie secrets (`app.cookieSecrets`), set by the connection. */
  keyring: CookieKeyring | undefined;

  /** @internal */
  constructor(
    private readonly host: ResponseHost,
    /** `RESPOND_KEEP_ALIVE`, `RESPOND_HTTP10`, `RESPOND_HEAD` of the request, and the coding it prefers (`RESPOND_GZIP` or `RESPOND_BR`). */
    private readonly requestFlags: number,
    first: boolean,
  ) {
    this.ops = first ? null : [];
  }

  /** Whether the head was sent (status and headers are final). */
  get headersSent(): boolean {
    return this.stage !== Stage.Head;
  }

  /** Whether the response ended. */
  get finished(): boolean {
    // A payload with the `onSend` hooks is sent, as far as the handlers go.
    return this.stage >= Stage.Sending;
  }

  /** Whether the client went away (writes are ignored from then on). */
  get closed(): boolean {
    return this.gone;
  }

  /** Set the status (100-999). */
  status(code: number): this {
    if (!Number.isInteger(code) || code < 100 || code > 999) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `a status must be an integer 100..999, got ${String(code)}`);
    }
    this.statusCode = code;
    return this;
  }

  /** Set a header, replacing any of the same name. */
  header(name: string, value: string | number | readonly string[]): this {
    const lower = this.checkName(name);
    if (lower === 'connection') {
      // Only `close` means anything from a handler; the native side
      // writes the header for the connection's fate.
      if (String(value).toLowerCase().includes('close')) this.closeAfter = true;
      return this;
    }
    const checked = checkValue(name, value);
    if (lower === 'content-type') {
      this.contentType = Array.isArray(checked) ? checked.join(', ') : (checked as string);
      this.contentTypeLine = CONTENT_TYPE_LINES.get(this.contentType);
    } else if (lower === 'content-length') {
      const length = Number(Array.isArray(checked) ? checked[0] : checked);
      if (!Number.isSafeInteger(length) || length < 0) {
        throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `Content-Length must be a whole number of bytes, got ${String(value)}`);
      }
      this.declaredLength = length;
    } else {
      const field = this.field(lower);
      if (field) {
        field.name = name;
        field.value = checked;
      } else {
        (this.fields ??= []).push({ lower, name, value: checked });
      }
    }
    return this;
  }

  /** Add a header line, keeping those of the same name (`Set-Cookie`). */
  append(name: string, value: string | number | readonly string[]): this {
    const lower = this.checkName(name);
    const previous = this.field(lower);
    if (!previous) return this.header(name, value);
    previous.value = ([] as string[]).concat(previous.value, checkValue(name, value));
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    const lower = name.toLowerCase();
    if (lower === 'content-type') return this.contentType;
    if (lower === 'content-length') return this.declaredLength === undefined ? undefined : String(this.declaredLength);
    return this.field(lower)?.value;
  }

  hasHeader(name: string): boolean {
    return this.getHeader(name) !== undefined;
  }

  removeHeader(name: string): this {
    const lower = name.toLowerCase();
    if (lower === 'content-type') this.contentType = this.contentTypeLine = undefined;
    else if (lower === 'content-length') this.declaredLength = undefined;
    else if (this.fields) this.fields = this.fields.filter((f) => f.lower !== lower);
    return this;
  }

  private field(lower: string): Field | undefined {
    const fields = this.fields;
    if (!fields) return undefined;
    for (const field of fields) if (field.lower === lower) return field;
    return undefined;
  }

  /**
   * Add a `Set-Cookie` line (`docs/http.md#cookies`). With `signed: true`
   * the value is signed with the newest of `app.cookieSecrets`. Throws
   * `ERR_INVALID_OPTION` for a cookie a browser would drop (`SameSite=None`
   * without `secure`, a bad name...), `ERR_COOKIE_NO_SECRET` when signing
   * without secrets.
   */
  cookie(name: string, value: string, options: CookieOptions = {}): this {
    let sent = value;
    if (options.signed) {
      if (!this.keyring) throw new SwitchboardError('ERR_COOKIE_NO_SECRET', `cookie ${name} is to be signed, but app.cookieSecrets is not set`);
      sent = this.keyring.sign(name, value);
    }
    return this.append('Set-Cookie', serializeCookie(name, sent, options));
  }

  /**
   * Tell the browser to drop cookie `name`: an empty value that expired at
   * the epoch, with `Max-Age=0`. Give the `path` and `domain` the cookie
   * was set with (a cookie is known by name, path and domain).
   */
  clearCookie(name: string, options: Omit<CookieOptions, 'expires' | 'maxAge' | 'signed'> = {}): this {
    return this.append('Set-Cookie', serializeCookie(name, '', { ...options, expires: new Date(0), maxAge: 0 }));
  }

  /** Set `Content-Type`: a MIME type, or `json`, `html`, `text`, `bin`, `js`, `css`, `xml`, `form`. */
  type(value: string): this {
    const type = CONTENT_TYPES[value] ?? value;
    const line = CONTENT_TYPE_LINES.get(type);
    if (line === undefined) return this.header('Content-Type', value);
    // A type of the table needs no checking.
    this.checkStage('Content-Type');
    this.contentType = type;
    this.contentTypeLine = line;
    return this;
  }

  /**
   * Send the whole response: a string (`text/plain` unless a type is set),
   * bytes (`application/octet-stream`), or any other value as JSON. A second
   * `send` (or one after `write`) is `ERR_HTTP_RESPONSE_SENT`, reported and
   * otherwise ignored.
   */
  send(body?: ResponseBody): void {
    if (!this.mayStart('send')) return;
    let payload: string | Uint8Array;
    if (body === undefined || body === null) {
      payload = '';
    } else if (typeof body === 'string') {
      payload = body;
      if (this.contentType === undefined) this.setKnownType('text');
    } else if (body instanceof Uint8Array) {
      payload = body;
      if (this.contentType === undefined) this.setKnownType('bin');
    } else {
      payload = JSON.stringify(body);
      if (this.contentType === undefined) this.setKnownType('json');
    }
    this.respondWhole(payload);
  }

  /** Send `value` as JSON. */
  json(value: unknown): void {
    if (!this.mayStart('json')) return;
    if (this.contentType === undefined) this.setKnownType('json');
    this.respondWhole(JSON.stringify(value) ?? 'null');
  }

  /** Send an HTML page. */
  html(page: string): void {
    if (!this.mayStart('html')) return;
    this.setKnownType('html');
    this.respondWhole(page);
  }

  /** Redirect to `location` (302 unless given). */
  redirect(location: string, status = 302): void {
    if (!this.mayStart('redirect')) return;
    this.status(status).header('Location', encodeURI(location));
    this.setKnownType('text');
    this.respondWhole(`Redirecting to ${location}`);
  }

  /**
   * Write a piece of the body; the head goes out with the first piece.
   * The body is chunked unless a `Content-Length` header was set (HTTP/1.0
   * clients get it unframed, ending with the connection). Returns false
   * when the client is behind: wait for `'drain'`.
   */
  write(chunk: string | Uint8Array): boolean {
    if (this.finished) {
      this.host.misuse(new SwitchboardError('ERR_HTTP_RESPONSE_SENT', 'write after the response ended'));
      return false;
    }
    if (this.stage === Stage.Head) return this.start(chunk);
    const flags = (this.chunked ? WRITE_CHUNKED : 0) | this.connectionFlags();
    return this.run(() => this.host.write(chunk, flags));
  }

  /** End the response, with a last piece of the body. */
  end(chunk?: string | Uint8Array): void {
    if (this.finished) {
      this.host.misuse(new SwitchboardError('ERR_HTTP_RESPONSE_SENT', 'end after the response ended'));
      return;
    }
    if (this.stage === Stage.Head) {
      this.respondWhole(chunk ?? '');
      return;
    }
    this.stage = Stage.Ended;
    const flags = WRITE_END | (this.chunked ? WRITE_CHUNKED : 0) | this.connectionFlags();
    this.run(() => this.host.write(chunk ?? '', flags), true);
  }

  /**
   * `'drain'`: the client caught up after `write` returned false.
   * `'finish'`: the response ended. `'close'`: the client went away before
   * it ended.
   */
  on(event: 'drain' | 'finish' | 'close', listener: () => void): this {
    if (event === 'drain') (this.drainListeners ??= []).push(listener);
    else if (event === 'close') (this.closeListeners ??= []).push(listener);
    else (this.finishListeners ??= []).push(listener);
    return this;
  }

  /**
   * Answer with a stream of server-sent events (`text/event-stream`): see
   * `EventStream`. The head goes out at once.
   */
  sse(options?: EventStreamOptions): EventStream {
    // A HEAD request gets the head alone; a response already sent, a stream that is closed.
    const start = !this.mayStart('sse') ? 'refused' : this.requestFlags & RESPOND_HEAD ? 'head' : 'open';
    return new EventStream(this, options, start);
  }

  /**
   * @internal Set by the pipeline when the route has `onSend` hooks: the
   * payload of the next whole response passes through it, and goes out
   * when it calls `write` (once).
   */
  beforeSend: ((payload: string | Uint8Array, write: (payload: string | Uint8Array) => void) => void) | undefined;

  /** @internal The `onSend` hooks failed: the response may be sent again (by the error handlers). */
  reopen(): void {
    if (this.stage === Stage.Sending) this.stage = Stage.Head;
  }

  /** @internal The connection's queue emptied. */
  drained(): void {
    const listeners = this.drainListeners;
    if (!listeners) return;
    for (const listener of listeners.slice()) listener();
  }

  /** @internal The responses before this one ended: its writes go out. */
  activate(): void {
    const ops = this.ops;
    this.ops = null;
    if (ops) for (const op of ops) op();
  }

  /** @internal The connection closes after this response (its request's body broke the stream). */
  closeConnection(): void {
    this.closeAfter = true;
  }

  /**
   * @internal Call `hook` synchronously right before the head is framed
   * (the first `send`, `end` or `write`), while headers may still be set:
   * the session middleware sets its cookie there. Hooks run in the order
   * added, once.
   */
  beforeHead(hook: () => void): void {
    (this.headHooks ??= []).push(hook);
  }

  private runHeadHooks(): void {
    const hooks = this.headHooks;
    if (!hooks) return;
    this.headHooks = undefined;
    for (const hook of hooks) hook();
  }

  /** @internal Report an error of the application's, after the fact, through the server's `handlerError`. */
  report(error: Error): void {
    this.host.misuse(error);
  }

  /** @internal The connection closed: later writes do nothing. */
  connectionClosed(): void {
    this.gone = true;
    this.ops = null;
    const listeners = this.closeListeners;
    this.closeListeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }

  private mayStart(what: string): boolean {
    if (this.stage === Stage.Head) return true;
    this.host.misuse(new SwitchboardError('ERR_HTTP_RESPONSE_SENT', `${what} after the response was sent`));
    return false;
  }

  private respondWhole(body: string | Uint8Array): void {
    const before = this.beforeSend;
    if (before !== undefined) {
      this.beforeSend = undefined;
      this.stage = Stage.Sending;
      before(body, (payload) => {
        if (this.stage === Stage.Sending) this.respondWhole(payload);
      });
      return;
    }
    this.runHeadHooks();
    this.stage = Stage.Ended;
    const flags = this.connectionFlags() | this.coding(body);
    const headers = this.headerLines();
    const status = this.statusCode;
    this.run(() => this.host.respond(status, headers, body, flags, 0), true);
  }

  /**
   * The coding of a whole body (`RESPOND_GZIP`, `RESPOND_BR`: the one its
   * request prefers) when it is worth compressing, else 0 (docs/http.md,
   * "Compression"). A body compressed for a client that asks gets `Vary:
   * Accept-Encoding` whether or not this client asked, so that caches keep
   * the variants apart. Below the threshold (most API responses) nothing
   * varies, and this costs a comparison.
   */
  private coding(body: string | Uint8Array): number {
    const threshold = this.host.compressThreshold;
    const length = body.length;
    if (length < threshold) {
      // Bytes count, and a string's UTF-8 takes at most 3 bytes per UTF-16
      // unit: only a string that could reach the threshold is measured.
      if (typeof body !== 'string' || length * 3 < threshold || Buffer.byteLength(body) < threshold) return 0;
    }
    const status = this.statusCode;
    // No body (204, 304), or a part of one (206: its range is of the
    // representation as it is).
    if (status < 200 || status === 204 || status === 206 || status === 304) return 0;
    const type = this.contentType;
    if (type === undefined || !isCompressible(type)) return 0;
    // The handler encoded the body itself, or forbade transforming it.
    if (this.field('content-encoding') !== undefined) return 0;
    const cacheControl = this.field('cache-control')?.value;
    if (cacheControl !== undefined && /no-transform/i.test(String(cacheControl))) return 0;
    this.varyOnEncoding();
    // HEAD: the head of the body as it is (its length is known without encoding it).
    if (this.requestFlags & RESPOND_HEAD) return 0;
    return this.requestFlags & (RESPOND_GZIP | RESPOND_BR);
  }

  /** Add `Accept-Encoding` to `Vary`, unless it is there (or `*` is). */
  private varyOnEncoding(): void {
    const vary = this.field('vary');
    if (vary === undefined) {
      (this.fields ??= []).push({ lower: 'vary', name: 'Vary', value: 'Accept-Encoding' });
      return;
    }
    const lines = typeof vary.value === 'string' ? [vary.value] : vary.value;
    for (const line of lines) {
      for (const item of line.split(',')) {
        const name = item.trim().toLowerCase();
        if (name === 'accept-encoding' || name === '*') return;
      }
    }
    if (typeof vary.value !== 'string') vary.value = [...vary.value, 'Accept-Encoding'];
    else vary.value = vary.value.trim() === '' ? 'Accept-Encoding' : `${vary.value}, Accept-Encoding`;
  }

  private start(chunk: string | Uint8Array): boolean {
    this.runHeadHooks();
    this.stage = Stage.Streaming;
    const declared = this.declaredLength;
    let flags = RESPOND_STREAM;
    let length = 0;
    if (declared !== undefined) {
      length = declared;
      flags |= RESPOND_LENGTH;
    } else if (this.requestFlags & RESPOND_HTTP10) {
      // No chunked framing in HTTP/1.0: the body ends with the connection.
      this.closeAfter = true;
    } else {
      this.chunked = true;
    }
    flags |= this.connectionFlags();
    const headers = this.headerLines();
    const status = this.statusCode;
    return this.run(() => this.host.respond(status, headers, chunk, flags, length));
  }

  /** Keep-alive, HTTP/1.0 and HEAD, as they apply to this response. */
  private connectionFlags(): number {
    const flags = this.requestFlags & (RESPOND_HTTP10 | RESPOND_HEAD);
    return this.closeAfter ? flags : flags | (this.requestFlags & RESPOND_KEEP_ALIVE);
  }

  /** Run a native write now (first in line) or when this response's turn comes. */
  private run(op: () => number, ends = false): boolean {
    if (this.gone) return true;
    const write = () => {
      if (this.gone) return;
      const status = op();
      this.lastStatus = status;
      if (ends) this.ended();
    };
    if (this.ops) {
      this.ops.push(write);
      return true;
    }
    write();
    return this.lastStatus !== STATUS_BUFFERED;
  }

  private lastStatus = 0;

  private ended(): void {
    const listeners = this.finishListeners;
    this.finishListeners = undefined;
    this.drainListeners = undefined;
    this.closeListeners = undefined;
    this.host.ended(this);
    if (listeners) for (const listener of listeners) listener();
  }

  /**
   * The header lines (`Content-Length` is the native side's to write, from
   * the body or the declared length): the encoded block of a lone known
   * content type, else a string.
   */
  private headerLines(): string | Buffer {
    const type = this.contentType;
    const fields = this.fields;
    if (!fields) {
      if (type === undefined) return NO_HEADERS;
      if (this.contentTypeLine) return this.contentTypeLine;
    }
    let lines = type === undefined ? '' : `Content-Type: ${type}\r\n`;
    if (fields) {
      for (const { name, value } of fields) {
        if (typeof value === 'string') lines += `${name}: ${value}\r\n`;
        else for (const v of value) lines += `${name}: ${v}\r\n`;
      }
    }
    return lines;
  }

  private setKnownType(key: keyof typeof CONTENT_TYPES & string): void {
    this.contentType = CONTENT_TYPES[key];
    this.contentTypeLine = CONTENT_TYPE_LINES.get(this.contentType!);
  }

  private checkStage(name: string): void {
    if (this.stage !== Stage.Head && this.stage !== Stage.Sending) {
      this.host.misuse(new SwitchboardError('ERR_HTTP_RESPONSE_SENT', `header ${name} set after the head was sent`));
    }
  }

  private checkName(name: string): string {
    this.checkStage(name);
    if (typeof name !== 'string' || !TOKEN.test(name)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `not a header name: ${JSON.stringify(name)}`);
    }
    const lower = name.toLowerCase();
    if (FRAMING.has(lower)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `${name} is written by the server itself`);
    }
    return lower;
  }
}

function checkValue(name: string, value: string | number | readonly string[]): string | string[] {
  const values = Array.isArray(value) ? value.map(String) : [String(value)];
  for (const v of values) {
    if (!FIELD_VALUE.test(v)) {
      throw new SwitchboardError('ERR_HTTP_INVALID_HEADER', `the value of ${name} has a control character (CR, LF, NUL...)`);
    }
  }
  return Array.isArray(value) ? values : values[0]!;
}
