/**
 * The response to one HTTP request. Its head and body are framed natively
 * (`httpRespond`, `httpWrite`); here are the status, the headers and the
 * rules: one response per request, nothing after its end, and no effect
 * once the client has gone, so nothing a handler does to a response can
 * crash the server or leave it waiting.
 *
 * Responses leave in the order of their requests: a pipelining client's
 * later response waits (in `ops`) until the ones before it ended.
 *
 * A file (`file`, `download`) is handed to the core, which sends it from
 * the connection's I/O thread (`send-file.ts`); a readable is piped
 * through `write` (`stream-body.ts`).
 */
import { SwitchboardError } from '../errors.js';
import { EventStream, type EventStreamOptions } from './sse.js';
import { ResponseHead } from './response-head.js';
import { HttpError } from './http-error.js';
import type { SendPayload } from './hooks.js';
import type { Request } from './request.js';
import { contentDisposition, fileOrder, FilePayload, type FileCallback, type FileOptions, type FileOrder } from './send-file.js';
import { pipeBody, type BodySource } from './stream-body.js';
import { isCompressible } from './compressible.js';
import { native } from '../native.js';
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
  /** Hand the response over to the core, to be answered with a file: `httpFile`'s contract. Its end comes back through `Response.fileDone`. */
  file(status: number, headers: string, order: FileOrder): number;
  /** Cut the connection: a streamed body failed after its head went out. */
  abort(): void;
  /** Defer the connection's writes until `uncork` (nests). */
  cork(): void;
  uncork(): void;
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
  /** A file is with the core; it ends the response, or hands it back when there is no such file. */
  File,
  Ended,
}

export class Response extends ResponseHead {
  private stage = Stage.Head;
  /** Writes waiting for the responses before this one; null once it is first in line. */
  private ops: (() => void)[] | null;
  private chunked = false;
  private gone = false;
  private drainListeners: (() => void)[] | undefined;
  private finishListeners: (() => void)[] | undefined;
  private closeListeners: (() => void)[] | undefined;
  /** Run once, right before the head is framed (`beforeHead`). */
  private headHooks: (() => void)[] | undefined;
  /** @internal The request this answers (its method and header lines go with a file). */
  req: Request | undefined;
  /** @internal Where an error found after the handler returned goes (`next(error)`), set by the pipeline. */
  routeError: ((error: unknown) => void) | undefined;
  /** A file with the core: who hears how it went. */
  private fileWaiter: { resolve: () => void; callback: FileCallback | undefined; beforeSend: Response['beforeSend'] } | undefined;
  /** `cork` depth, and the pieces written inside it, merged at its end. */
  private corkDepth = 0;
  private corkPieces: (string | Uint8Array)[] | undefined;
  /** Waiting for this response's turn, or for a drain (`stream`). */
  private turnWaiters: (() => void)[] | undefined;
  private drainWaiter: (() => void) | undefined;

  /** @internal */
  constructor(
    private readonly host: ResponseHost,
    /** `RESPOND_KEEP_ALIVE`, `RESPOND_HTTP10`, `RESPOND_HEAD` of the request, and the coding it prefers (`RESPOND_GZIP` or `RESPOND_BR`). */
    private readonly requestFlags: number,
    first: boolean,
  ) {
    super();
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
    if (this.corkDepth > 0) {
      // The head goes now (headers are final from the first write); the
      // pieces wait for the end of the cork, to go out as one.
      if (this.stage === Stage.Head) this.start('');
      (this.corkPieces ??= []).push(chunk);
      return true;
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
    if (this.corkPieces) chunk = this.takeCorked(chunk);
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
   * Answer with a file, sent natively by the connection's I/O thread
   * (JavaScript never reads it): `Content-Type` from its extension unless
   * set, `ETag` and `Last-Modified`, 304 to a conditional request that
   * holds, 206 or 416 to a `Range`, a precompressed `.br`/`.gz` sibling to
   * a client that accepts it. The status and headers set before go with it
   * (another status than 200 sends the whole file, unconditionally). The
   * `onSend` hooks see a `FilePayload`.
   *
   * The promise resolves once the file is queued whole (or the request
   * failed, or the client left); it never rejects. When there is no such
   * file (or the path is refused), the response is the handler's again:
   * with `callback`, it is called with the error (404
   * `ERR_HTTP_NOT_FOUND`, 400 `ERR_HTTP_BAD_REQUEST` for a NUL), else the
   * error goes to the error handlers, as `next(error)` would send it.
   * Throws `ERR_INVALID_OPTION` at once for a bad option, or a relative
   * path without `root`.
   */
  file(path: string, options?: FileOptions | FileCallback, callback?: FileCallback): Promise<void> {
    if (typeof options === 'function') [options, callback] = [undefined, options];
    const order = fileOrder(path, options, this.req?.method ?? 'GET');
    return new Promise((resolve) => {
      if (!this.mayStart('file')) {
        resolve();
        return;
      }
      const before = this.beforeSend;
      this.fileWaiter = { resolve, callback, beforeSend: before };
      if (before === undefined) {
        this.sendFile(order);
        return;
      }
      this.beforeSend = undefined;
      this.stage = Stage.Sending;
      before(new FilePayload(path), (payload) => {
        if (this.stage !== Stage.Sending) return;
        if (payload instanceof FilePayload) {
          this.sendFile(order);
          return;
        }
        // A hook sent something else in the file's place.
        const waiter = this.fileWaiter;
        this.fileWaiter = undefined;
        this.respondWhole(payload);
        waiter?.callback?.();
        waiter?.resolve();
      });
    });
  }

  /**
   * Send a file for the browser to save: `attachment(filename)` (the name
   * defaults to the path's last segment), then `file(path, options)`.
   */
  download(path: string, filename?: string | FileOptions | FileCallback, options?: FileOptions | FileCallback, callback?: FileCallback): Promise<void> {
    let name: string | undefined;
    if (typeof filename === 'string') name = filename;
    else if (typeof filename === 'function') callback = filename;
    else if (filename !== undefined) [options, callback] = [filename, options as FileCallback | undefined];
    if (typeof options === 'function') [options, callback] = [undefined, options];
    const type = this.getHeader('content-type');
    const disposition = this.getHeader('content-disposition');
    this.attachment(name ?? path);
    // No such file: the error's response is not a download.
    this.undoOnMissing = () => {
      this.removeHeader('Content-Type').removeHeader('Content-Disposition');
      if (type !== undefined) this.header('Content-Type', type);
      if (disposition !== undefined) this.header('Content-Disposition', disposition);
    };
    return this.file(path, options, callback);
  }

  /** What `download` set, undone when there is no file to download. */
  private undoOnMissing: (() => void) | undefined;

  /**
   * `Content-Disposition: attachment` (RFC 6266); with a file name, its
   * last path segment as `filename` (with `filename*` in UTF-8, RFC 5987,
   * when it is not plain ASCII) and `Content-Type` from its extension.
   */
  attachment(filename?: string): this {
    if (filename !== undefined) {
      if (typeof filename !== 'string') throw new SwitchboardError('ERR_INVALID_OPTION', 'res.attachment(filename): filename must be a string');
      this.type(native.contentTypeOf(filename));
    }
    return this.header('Content-Disposition', contentDisposition(filename));
  }

  /**
   * Pipe a Node `Readable` (or any async iterable of strings and bytes)
   * into the body, at the client's pace: the next piece is read only once
   * `write` was taken (after `'drain'` when it was not). The response ends
   * with the source. When the client goes away the source is destroyed.
   * When the source fails before a byte was sent, the error goes to the
   * error handlers (a 500 by default); after, the connection is cut (the
   * client sees the body break off: neither a `Content-Length` nor chunked
   * framing can carry an error), and the error is reported through
   * `handlerError`. The promise resolves when it is over; it never rejects.
   */
  stream(source: BodySource): Promise<void> {
    if (!this.mayStart('stream')) {
      (source as { destroy?: () => void }).destroy?.();
      return Promise.resolve();
    }
    return pipeBody(this, source);
  }

  /**
   * Run `fn`; the pieces it `write`s to this response leave together at its
   * end: merged into one piece (one chunk of a chunked body), and written
   * in one system call with the head when it goes now, and with whatever
   * else `fn` sent on any connection (the native writes are corked). Inside
   * a batch of events the writes are corked anyway; this matters most after
   * an `await`, in a timer or in a stream, where each `write` would
   * otherwise leave on its own. `write` returns true inside; `end` inside
   * ends with the merged pieces. Returns what `fn` returns; nests.
   */
  cork<T>(fn: () => T): T {
    this.host.cork();
    this.corkDepth++;
    try {
      return fn();
    } finally {
      if (--this.corkDepth === 0 && this.corkPieces) {
        const merged = this.takeCorked(undefined);
        if (!this.finished) this.write(merged);
      }
      this.host.uncork();
    }
  }

  /** The pieces written inside `cork`, then `last`, as one. */
  private takeCorked(last: string | Uint8Array | undefined): Uint8Array {
    const pieces = this.corkPieces ?? [];
    this.corkPieces = undefined;
    if (last !== undefined) pieces.push(last);
    return Buffer.concat(pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece) : piece)));
  }

  /** @internal Resolves once this response is first in line (its writes go out at once), or the client left. */
  whenFirst(): Promise<void> {
    if (this.ops === null) return Promise.resolve();
    return new Promise((resolve) => (this.turnWaiters ??= []).push(resolve));
  }

  /** @internal Resolves at the next `'drain'`, or when the client left. */
  whenDrained(): Promise<void> {
    if (this.gone) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.drainWaiter;
      this.drainWaiter = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** @internal Cut the connection (a streamed body failed after its head). */
  abortConnection(): void {
    if (!this.gone) this.host.abort();
  }

  /** The file goes to the core, once this response is first in line. */
  private sendFile(order: FileOrder): void {
    this.runHeadHooks();
    this.stage = Stage.File;
    order.requestHeaders = this.req?.rawHeaderLines() ?? order.requestHeaders;
    order.flags |= this.connectionFlags();
    const headers = this.headerLines();
    const lines = typeof headers === 'string' ? headers : headers.toString('latin1');
    const status = this.statusCode;
    this.run(() => this.host.file(status, lines, order));
  }

  /**
   * @internal How the file went (`HTTP_FILE_DONE`): sent with `status`,
   * which ends the response; or not found, and the response is the
   * handler's again.
   */
  fileDone(status: number, sent: boolean): void {
    if (this.stage !== Stage.File) return;
    const waiter = this.fileWaiter;
    this.fileWaiter = undefined;
    if (sent) {
      this.statusCode = status;
      this.stage = Stage.Ended;
      this.ended();
      this.callFileCallback(waiter?.callback, undefined);
      waiter?.resolve();
      return;
    }
    // The error's own response meets the `onSend` hooks as any would.
    this.stage = Stage.Head;
    const undo = this.undoOnMissing;
    this.undoOnMissing = undefined;
    undo?.();
    this.beforeSend = waiter?.beforeSend;
    const error =
      status === 400 ? new HttpError(400, 'ERR_HTTP_BAD_REQUEST', 'the file path is malformed') : new HttpError(404, 'ERR_HTTP_NOT_FOUND', 'no such file');
    if (waiter?.callback) this.callFileCallback(waiter.callback, error);
    else if (this.routeError) this.routeError(error);
    else this.status(error.status).json({ error: { code: error.code, message: error.message } });
    waiter?.resolve();
  }

  /** A callback's throw goes where a handler's would. */
  private callFileCallback(callback: FileCallback | undefined, error: HttpError | undefined): void {
    if (!callback) return;
    try {
      callback(error);
    } catch (thrown) {
      if (this.routeError && !this.finished) this.routeError(thrown);
      else this.host.misuse(thrown instanceof Error ? thrown : new Error(String(thrown)));
    }
  }

  /**
   * @internal Set by the pipeline when the route has `onSend` hooks: the
   * payload of the next whole response passes through it, and goes out
   * when it calls `write` (once).
   */
  beforeSend: ((payload: SendPayload, write: (payload: SendPayload) => void) => void) | undefined;

  /** @internal The `onSend` hooks failed: the response may be sent again (by the error handlers). */
  reopen(): void {
    if (this.stage === Stage.Sending) this.stage = Stage.Head;
  }

  /** @internal The connection's queue emptied. */
  drained(): void {
    const waiter = this.drainWaiter;
    this.drainWaiter = undefined;
    waiter?.();
    const listeners = this.drainListeners;
    if (!listeners) return;
    for (const listener of listeners.slice()) listener();
  }

  /** @internal The responses before this one ended: its writes go out. */
  activate(): void {
    const ops = this.ops;
    this.ops = null;
    if (ops) for (const op of ops) op();
    this.wakeTurnWaiters();
  }

  private wakeTurnWaiters(): void {
    const waiters = this.turnWaiters;
    this.turnWaiters = undefined;
    if (waiters) for (const waiter of waiters) waiter();
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
    this.wakeTurnWaiters();
    this.drained();
    const waiter = this.fileWaiter;
    this.fileWaiter = undefined;
    if (waiter) {
      this.callFileCallback(waiter.callback, new HttpError(499, 'ERR_HTTP_CLIENT_GONE', 'the client went away before the file was sent'));
      waiter.resolve();
    }
    const listeners = this.closeListeners;
    this.closeListeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }

  protected checkStage(name: string): void {
    if (this.stage !== Stage.Head && this.stage !== Stage.Sending) {
      this.host.misuse(new SwitchboardError('ERR_HTTP_RESPONSE_SENT', `header ${name} set after the head was sent`));
    }
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
        if (this.stage !== Stage.Sending) return;
        // A hook cannot turn bytes into a file.
        this.respondWhole(payload instanceof FilePayload ? body : payload);
      });
      return;
    }
    this.runHeadHooks();
    this.stage = Stage.Ended;
    const flags = this.connectionFlags() | this.coding(body);
    const headers = this.headerLines();
    const status = this.statusCode;
    if (this.gone) return;
    // First in line (every response of a handler that answers at once):
    // straight out, without the two closures a deferred write needs.
    if (this.ops === null) this.sendWhole(status, headers, body, flags);
    else this.ops.push(() => this.sendWhole(status, headers, body, flags));
  }

  private sendWhole(status: number, headers: string | Uint8Array, body: string | Uint8Array, flags: number): void {
    if (this.gone) return;
    this.lastStatus = this.host.respond(status, headers, body, flags, 0);
    this.ended();
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

}

