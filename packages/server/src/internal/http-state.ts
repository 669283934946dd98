/**
 * An HTTP connection in the dispatcher: the requests it was handed, in
 * order, with their responses. A request runs through its route's chain
 * at once (pipelined requests run side by side), but each response waits
 * for the ones before it to end (`Response.activate`), so they leave in
 * the order of the requests. Body pieces go to the latest request with a
 * body: the native side sends a body right behind its head. When the
 * connection closes, every request still open is aborted (`req.signal`),
 * its body fails, and its response ignores later writes.
 */
import type { App } from '../app.js';
import { HttpError } from '../http/http-error.js';
import { runRoute } from '../http/pipeline.js';
import { BodyReader, NO_PARAMS, Request, type Peer } from '../http/request.js';
import { Response, type ResponseHost } from '../http/response.js';
import type { FileOrder } from '../http/send-file.js';
import { native } from '../native.js';
import { RESPOND_BR, RESPOND_GZIP, RESPOND_HEAD, RESPOND_HTTP10, RESPOND_KEEP_ALIVE, WRITE_END } from '../http/flags.js';
import { tlsInfo } from '../tls.js';
import type { ConnectionHost, ConnectionState } from './connection-state.js';
import { Fifo } from './fifo.js';
import {
  METHODS,
  REQUEST_ACCEPTS_BR,
  REQUEST_ACCEPTS_GZIP,
  REQUEST_BODY,
  REQUEST_COUNTED,
  REQUEST_HTTP10,
  REQUEST_KEEP_ALIVE,
  type CloseEvent,
  type HttpBodyErrorEvent,
  type HttpFileDoneEvent,
  type HttpBodyEvent,
  type HttpOpenEvent,
  type HttpRequestEvent,
} from './events.js';

/** HEAD is the method index 1 (`METHODS`). */
const HEAD = 1;

export class HttpState implements ConnectionState, ResponseHost {
  readonly id: number;
  private readonly peer: Peer;
  /** The responses that have not ended, oldest first (a pipelining client's), each with its request (`res.req`). */
  private readonly responses = new Fifo<Response>();
  /** The request whose body pieces arrive now. */
  private receiving: Request | undefined;
  /** Bodies begun on the connection (the native side numbers them the same way). */
  private bodies = 0;
  /** The status of the streamed response in progress, counted at its end. */
  private streamStatus = 0;
  /** Reports consumed body bytes to the native side. */
  private readonly consumed = (bytes: number): void => native.httpBodyConsumed(this.serverId, this.id, bytes);
  /** @internal ResponseHost: the app's (`http.compression.threshold`). */
  readonly compressThreshold: number;

  constructor(
    private readonly host: ConnectionHost,
    private readonly app: App,
    readonly serverId: number,
    event: HttpOpenEvent,
  ) {
    this.id = event.id;
    this.peer = { remoteAddress: event.remoteAddress, tls: tlsInfo(event.tls), trustProxy: app.trustProxyTest };
    this.compressThreshold = app.compressThreshold;
  }

  request(event: HttpRequestEvent): void {
    const route = this.app.httpRoutes[event.route];
    const hasBody = (event.flags & REQUEST_BODY) !== 0;
    const req = new Request(
      METHODS[event.method] ?? 'GET',
      event.path,
      event.query,
      event.batch,
      event.headersStart,
      event.headersEnd,
      route?.buildParams ?? NO_PARAMS,
      event.params,
      this.peer,
      hasBody ? new BodyReader(this.consumed) : undefined,
      event.flags & REQUEST_HTTP10 ? '1.0' : '1.1',
    );
    let flags = 0;
    if (event.flags & REQUEST_KEEP_ALIVE) flags |= RESPOND_KEEP_ALIVE;
    if (event.flags & REQUEST_HTTP10) flags |= RESPOND_HTTP10;
    if (event.method === HEAD) flags |= RESPOND_HEAD;
    // The coding the response may use, if it turns out worth compressing.
    if (event.flags & REQUEST_ACCEPTS_GZIP) flags |= RESPOND_GZIP;
    else if (event.flags & REQUEST_ACCEPTS_BR) flags |= RESPOND_BR;
    const res = new Response(this, flags, this.responses.length === 0);
    req.keyring = res.keyring = this.app.cookieKeyring;
    res.req = req;
    this.responses.push(res);
    if (hasBody) req.bodyNumber = this.bodies++;
    if (event.flags & REQUEST_COUNTED) {
      // What the native side counts the response by (`RESPOND_ROUTE_SHIFT`).
      // Route numbers are u16: the flags stay below 2^32.
      req.routeBits = (event.route + 1) * 0x1_0000;
      req.started = event.started;
    }
    if (hasBody) this.receiving = req;
    if (!route) {
      // Routes are the same in every worker; a number out of range is a bug.
      res.status(500).json({ error: { code: 'ERR_HTTP_INTERNAL', message: 'unknown route' } });
      return;
    }
    runRoute(route, req, res, (error) => this.host.report({ handler: 'http', connection: this.id, error }));
  }

  body(event: HttpBodyEvent): void {
    const req = this.receiving;
    if (!req) return;
    req.bodyReader?.push(event.data, event.last, event.owned);
    if (event.last) this.receiving = undefined;
  }

  /** The body cannot be read to its end: reading it fails with the status, and the response closes the connection. */
  bodyFailed(event: HttpBodyErrorEvent): void {
    const req = this.receiving;
    this.receiving = undefined;
    if (!req) return;
    const colon = event.reason.indexOf(':');
    const code = colon > 0 ? event.reason.slice(0, colon) : 'ERR_HTTP_BAD_REQUEST';
    const message = colon > 0 ? event.reason.slice(colon + 1).trim() : event.reason;
    req.bodyReader?.fail(new HttpError(event.status, code, message));
    this.responses.find((res) => res.req === req)?.closeConnection();
  }

  /** The file of the first response in line went out, or was not found (`res.file`). */
  fileDone(event: HttpFileDoneEvent): void {
    // Only the first response in line hands a file over, and the ones
    // behind it wait for its end.
    this.responses.first()?.fileDone(event.status, event.sent);
  }

  message(): void {
    // An HTTP connection gets requests, never messages.
  }

  drain(): void {
    this.responses.first()?.drained();
  }

  close(event: CloseEvent): void {
    this.host.forget(this.id);
    const error = new HttpError(499, 'ERR_HTTP_CLIENT_GONE', `the connection closed (${event.code}${event.reason ? ` ${event.reason}` : ''})`);
    const responses = this.responses.drain();
    for (const res of responses) res.connectionClosed();
    for (const res of responses) res.req!.aborted(error);
    this.receiving = undefined;
  }

  /** @internal ResponseHost */
  respond(status: number, headers: string | Uint8Array, body: string | Uint8Array, flags: number, length: number): number {
    // Only the first response in line writes: the first request's.
    const req = this.responses.first()?.req;
    this.streamStatus = status;
    return native.httpRespond(this.serverId, this.id, status, headers, body, flags + (req?.routeBits ?? 0), length, req?.started ?? 0);
  }

  /** @internal ResponseHost */
  write(data: string | Uint8Array, flags: number): number {
    if ((flags & WRITE_END) === 0) return native.httpWrite(this.serverId, this.id, data, flags, 0, 0);
    const req = this.responses.first()?.req;
    return native.httpWrite(this.serverId, this.id, data, flags + (req?.routeBits ?? 0), this.streamStatus, req?.started ?? 0);
  }

  /** @internal ResponseHost */
  file(status: number, headers: string, order: FileOrder): number {
    const req = this.responses.first()?.req;
    return native.httpFile(this.serverId, this.id, status, headers, order.path, order.root, order.requestHeaders, order.flags + (req?.routeBits ?? 0), order.maxAge, req?.started ?? 0);
  }

  /**
   * @internal ResponseHost: a streamed body failed after its head: only
   * cutting the connection tells the client. The close is queued behind
   * the bytes already written, which the client gets (a body shorter than
   * promised, or chunks without their last), rather than dropping them.
   */
  abort(): void {
    this.host.handle.end(this.id, 1000, '');
  }

  /** @internal ResponseHost */
  cork(): void {
    native.cork();
  }

  /** @internal ResponseHost */
  uncork(): void {
    native.uncork();
  }

  /** @internal ResponseHost: the first response in line ended; the next may write. */
  ended(response: Response): void {
    // Only the first response in line writes, so it is the one that ends.
    if (this.responses.first() !== response) return;
    this.responses.shift();
    const req = response.req!;
    // A body the handler did not read to its end: what arrived counts as
    // consumed, and the native side discards the rest.
    if (req.bodyReader?.discard()) native.httpDiscardBody(this.serverId, this.id, req.bodyNumber);
    this.responses.first()?.activate();
  }

  /** @internal ResponseHost */
  misuse(error: Error): void {
    this.host.report({ handler: 'http', connection: this.id, error });
  }
}
