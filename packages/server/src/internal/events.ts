/**
 * Decodes a batch of events drained from the native queue. The layout is
 * written by `crates/runtime/src/events/record.rs` (see its module docs),
 * and both sides are checked against the vectors of `spec/events/`: a byte
 * buffer crosses the N-API boundary once per batch, and message payloads
 * are handed out as views into it, without copying.
 */

export const KIND_UPGRADE = 1;
export const KIND_OPEN = 2;
export const KIND_MESSAGE = 3;
export const KIND_CLOSE = 4;
export const KIND_DRAIN = 5;
export const KIND_RPC_OPEN = 6;
/** A MESSAGE whose data is a buffer drained with the batch (see `decodeBatch`). */
export const KIND_MESSAGE_OWNED = 7;
export const KIND_HTTP_OPEN = 8;
export const KIND_HTTP_REQUEST = 9;
export const KIND_HTTP_BODY = 10;
export const KIND_HTTP_BODY_ERROR = 11;
export const KIND_HTTP_FILE_DONE = 12;
/** An `HTTP_BODY` whose data is a buffer of its own, handed over with the batch (decoded as `KIND_HTTP_BODY`, `owned`). */
export const KIND_HTTP_BODY_OWNED = 13;
/** A SockJS send's messages came before this: acknowledge once their handlers ran (`Dispatcher`). */
export const KIND_SOCKJS_SENT = 14;

/** `HttpRequestEvent.flags`: the connection stays open after the response. */
export const REQUEST_KEEP_ALIVE = 1;
/** `HttpRequestEvent.flags`: an HTTP/1.0 request. */
export const REQUEST_HTTP10 = 2;
/** `HttpRequestEvent.flags`: HTTP_BODY events follow, the last one marked. */
export const REQUEST_BODY = 4;
/** `HttpRequestEvent.flags`: `Accept-Encoding` prefers gzip (at most one of the two codings is set; neither when compression is off). */
export const REQUEST_ACCEPTS_GZIP = 8;
/** `HttpRequestEvent.flags`: `Accept-Encoding` prefers brotli. */
export const REQUEST_ACCEPTS_BR = 16;
/** `HttpRequestEvent.flags`: responses are counted (the `metrics` option): `started` is set, and the response carries it back with the route. */
export const REQUEST_COUNTED = 32;

export interface UpgradeEvent {
  kind: typeof KIND_UPGRADE;
  id: number;
  route: number;
  remoteAddress: string;
  path: string;
  query: string;
  tls: NativeTlsInfo | undefined;
  headers: Record<string, string>;
}
export interface OpenEvent {
  kind: typeof KIND_OPEN;
  id: number;
  route: number;
  remoteAddress: string;
  protocol: string;
  extensions: string;
  tls: NativeTlsInfo | undefined;
}
export interface MessageEvent {
  kind: typeof KIND_MESSAGE;
  id: number;
  data: Buffer;
  isBinary: boolean;
}
export interface CloseEvent {
  kind: typeof KIND_CLOSE;
  id: number;
  code: number;
  reason: string;
}
export interface DrainEvent {
  kind: typeof KIND_DRAIN;
  id: number;
}
/**
 * The messages of a SockJS send to session `id` came before this; the HTTP
 * connection `http` holds the send's answer until it is acknowledged.
 */
export interface SockJsSentEvent {
  kind: typeof KIND_SOCKJS_SENT;
  id: number;
  http: number;
}
/** A Switchboard protocol connection completed its handshake. */
export interface RpcOpenEvent {
  kind: typeof KIND_RPC_OPEN;
  id: number;
  /** The WebSocket route it came through; `NO_ROUTE` for a protocol listener. */
  route: number;
  /** 0 TCP, 1 Unix, 2 WebSocket, 3 TLS. */
  transport: number;
  remoteAddress: string;
  /** What the TLS handshake settled (TLS listeners only). */
  tls: NativeTlsInfo | undefined;
  /** The client's HELLO frame. */
  hello: Buffer;
  /** The WELCOME frame the server answered with. */
  welcome: Buffer;
}
/** An HTTP connection's first request for JavaScript follows. */
export interface HttpOpenEvent {
  kind: typeof KIND_HTTP_OPEN;
  id: number;
  remoteAddress: string;
  tls: NativeTlsInfo | undefined;
}
/** A request matched one of the app's HTTP routes. */
export interface HttpRequestEvent {
  kind: typeof KIND_HTTP_REQUEST;
  id: number;
  route: number;
  /** Index into `METHODS`. */
  method: number;
  flags: number;
  /** When the head was complete, in microseconds from the server's start: handed back with the response (the latency histogram). */
  started: number;
  path: string;
  query: string;
  /** Raw (percent-encoded) parameter values, in the pattern's order. */
  params: readonly string[];
  /**
   * The header lines as received are `batch[headersStart..headersEnd]`,
   * decoded only if a handler reads them (no view is made per request).
   */
  batch: Buffer;
  headersStart: number;
  headersEnd: number;
}
/** The next piece of the connection's latest request body. */
export interface HttpBodyEvent {
  kind: typeof KIND_HTTP_BODY;
  id: number;
  last: boolean;
  /** A view into the batch, or (`owned`) a buffer of its own that nothing else shares. */
  data: Buffer;
  owned: boolean;
}
/** The latest request's body cannot be read to its end; the connection closes after the responses in flight. */
export interface HttpBodyErrorEvent {
  kind: typeof KIND_HTTP_BODY_ERROR;
  id: number;
  status: number;
  /** `<code>: <message>`, the code an `ERR_HTTP_*` of the catalogue. */
  reason: string;
}
/** The file of the connection's first response in line (`res.file`) went out with `status`, or (`sent` false) was not found. */
export interface HttpFileDoneEvent {
  kind: typeof KIND_HTTP_FILE_DONE;
  id: number;
  status: number;
  sent: boolean;
}
/** The methods in the order of the native `Method::index`. */
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT'] as const;
export type HttpMethod = (typeof METHODS)[number];
export const NO_ROUTE = 0xffff;
/** The TLS block of `RPC_OPEN`, as the native core sends it. */
export interface NativeTlsInfo {
  /** Empty when the client sent no server name. */
  serverName: string;
  protocol: string;
  cipher: string;
  /** DER; empty when the client sent no certificate. */
  peerCertificate: Buffer;
}
export type NativeEvent =
  | UpgradeEvent
  | OpenEvent
  | MessageEvent
  | CloseEvent
  | DrainEvent
  | SockJsSentEvent
  | RpcOpenEvent
  | HttpOpenEvent
  | HttpRequestEvent
  | HttpBodyEvent
  | HttpBodyErrorEvent
  | HttpFileDoneEvent;

/**
 * A Buffer's `latin1Slice`: what `toString('latin1', start, end)` ends up
 * calling, without its encoding lookup and argument checks. Node has it on
 * every Buffer; its type declarations leave it out.
 */
type Latin1Buffer = Buffer & { latin1Slice(start: number, end: number): string };

/** The path of the last request decoded on this thread (`Reader.path`). */
let lastPath = '';

class Reader {
  offset: number;
  constructor(
    readonly buffer: Buffer,
    offset: number,
  ) {
    this.offset = offset;
  }
  u16(): number {
    const b = this.buffer;
    const o = this.offset;
    this.offset = o + 2;
    // Indexing, as `id()` does: the record's length was checked.
    return b[o]! | (b[o + 1]! << 8);
  }
  /** Ids are u64 on the wire and stay below 2^53. */
  id(): number {
    const b = this.buffer;
    const o = this.offset;
    this.offset = o + 8;
    // Plain indexing: `readUInt32LE`'s argument checks were a visible
    // share of decoding a batch of small requests. The record's length
    // was checked when the batch was made.
    const low = (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x100_0000;
    const high = (b[o + 4]! | (b[o + 5]! << 8) | (b[o + 6]! << 16)) + b[o + 7]! * 0x100_0000;
    return high * 0x1_0000_0000 + low;
  }
  str(): string {
    const length = this.u16();
    const s = this.buffer.toString('utf8', this.offset, this.offset + length);
    this.offset += length;
    return s;
  }
  /** A string known to be ASCII. */
  ascii(): string {
    const length = this.u16();
    if (length === 0) return '';
    const start = this.offset;
    this.offset = start + length;
    return (this.buffer as Latin1Buffer).latin1Slice(start, start + length);
  }
  /**
   * A request path (ASCII): the previous one's string when the bytes are
   * the same. Keep-alive and pipelining clients repeat paths, and
   * comparing a few bytes costs a fraction of making a string (a call into
   * C++ and an allocation).
   */
  path(): string {
    const length = this.u16();
    const b = this.buffer;
    const start = this.offset;
    this.offset = start + length;
    const last = lastPath;
    if (last.length === length) {
      // From the end: paths that differ mostly differ there (`/user/41`,
      // `/user/42`), so a miss costs a byte or two.
      let i = length;
      while (i > 0 && b[start + i - 1] === last.charCodeAt(i - 1)) i--;
      if (i === 0) return last;
    }
    return (lastPath = (b as Latin1Buffer).latin1Slice(start, start + length));
  }
  u32(): number {
    const v = this.buffer.readUInt32LE(this.offset);
    this.offset += 4;
    return v;
  }
  /** The TLS block: a presence byte, then the handshake's results. */
  tls(): NativeTlsInfo | undefined {
    if (this.buffer[this.offset++] !== 1) return undefined;
    const serverName = this.str();
    const protocol = this.str();
    const cipher = this.str();
    const certificateLength = this.u32();
    // Copied: a view would keep the whole batch alive for the connection's life.
    const peerCertificate = Buffer.from(this.buffer.subarray(this.offset, this.offset + certificateLength));
    this.offset += certificateLength;
    return { serverName, protocol, cipher, peerCertificate };
  }
}

/**
 * The most events decoded between two looks at the clock. The gap starts
 * at one event and doubles up to this, so slow handlers are noticed after
 * a few events and fast ones pay for a clock read once per 256.
 */
const MAX_EVENTS_PER_CLOCK_CHECK = 256;

const NO_OWNED: readonly Buffer[] = [];
/** The parameters of a route without any: one array for every such request (nothing writes to it). */
const NO_PARAMS: readonly string[] = Object.freeze([]);

/** A request's `count` parameter values, in an array made at its size (pushing grew it one step at a time). */
function readParams(r: Reader, count: number): string[] {
  const params = new Array<string>(count);
  for (let i = 0; i < count; i++) params[i] = r.ascii();
  return params;
}

/**
 * Calls `onEvent` for the events of a drained batch, in order, from byte
 * `offset` on. Stops early once `deadline` (a `performance.now()` time) has
 * passed; returns where it stopped (`batch.length` when it finished).
 * `owned`: what `drainEvents` returned when it was an array (the batch,
 * then the buffers its `MESSAGE_OWNED` and `HTTP_BODY_OWNED` events refer to).
 */
export function decodeBatch(
  batch: Buffer,
  onEvent: (event: NativeEvent) => void,
  offset = 0,
  deadline = Infinity,
  owned: readonly Buffer[] = NO_OWNED,
): number {
  let gap = 1;
  let untilClockCheck = gap;
  while (offset < batch.length) {
    if (untilClockCheck-- === 0) {
      if (performance.now() > deadline) return offset;
      gap = Math.min(gap * 2, MAX_EVENTS_PER_CLOCK_CHECK);
      untilClockCheck = gap;
    }
    const kind = batch[offset]!;
    // Indexing, not `readUInt32LE`: the batch holds whole records.
    const length = (batch[offset + 1]! | (batch[offset + 2]! << 8) | (batch[offset + 3]! << 16)) + batch[offset + 4]! * 0x100_0000;
    const start = offset + 5;
    const end = start + length;
    const r = new Reader(batch, start);
    switch (kind) {
      case KIND_MESSAGE: {
        const id = r.id();
        const isBinary = batch[r.offset] === 1;
        onEvent({ kind, id, isBinary, data: batch.subarray(r.offset + 1, end) });
        break;
      }
      case KIND_MESSAGE_OWNED: {
        const id = r.id();
        const isBinary = batch[r.offset] === 1;
        // `owned[0]` is the batch itself (drainEvents' array).
        const data = owned[1 + batch.readUInt32LE(r.offset + 1)];
        if (data === undefined) throw new Error('ERR_INTERNAL: a MESSAGE_OWNED without its buffer');
        onEvent({ kind: KIND_MESSAGE, id, isBinary, data });
        break;
      }
      case KIND_OPEN:
        onEvent({ kind, id: r.id(), route: r.u16(), remoteAddress: r.str(), protocol: r.str(), extensions: r.str(), tls: r.tls() });
        break;
      case KIND_CLOSE: {
        const id = r.id();
        const code = r.u16();
        onEvent({ kind, id, code, reason: batch.toString('utf8', r.offset, end) });
        break;
      }
      case KIND_DRAIN:
        onEvent({ kind, id: r.id() });
        break;
      case KIND_SOCKJS_SENT:
        onEvent({ kind, id: r.id(), http: r.id() });
        break;
      case KIND_RPC_OPEN: {
        const id = r.id();
        const route = r.u16();
        const transport = batch[r.offset++]!;
        const remoteAddress = r.str();
        const tls = r.tls();
        const helloLength = r.u32();
        const helloStart = r.offset;
        const hello = batch.subarray(helloStart, helloStart + helloLength);
        const welcome = batch.subarray(helloStart + helloLength, end);
        onEvent({ kind, id, route, transport, remoteAddress, tls, hello, welcome });
        break;
      }
      case KIND_UPGRADE: {
        const id = r.id();
        const route = r.u16();
        const remoteAddress = r.str();
        const path = r.str();
        const query = r.str();
        const tls = r.tls();
        const count = r.u16();
        const headers: Record<string, string> = {};
        for (let i = 0; i < count; i++) {
          const name = r.str();
          const value = r.str();
          // Repeated headers join with ", " as HTTP allows (RFC 9110 §5.3).
          headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
        }
        onEvent({ kind, id, route, remoteAddress, path, query, tls, headers });
        break;
      }
      case KIND_HTTP_REQUEST: {
        const id = r.id();
        const route = r.u16();
        const method = batch[r.offset]!;
        const flags = batch[r.offset + 1]!;
        r.offset += 2;
        // Read only when it is used (the `metrics` option).
        let started = 0;
        if (flags & REQUEST_COUNTED) started = r.id();
        else r.offset += 8;
        // The request target is ASCII (the native parser refuses other
        // bytes): latin1 decodes it fastest.
        const path = r.path();
        const query = r.ascii();
        const count = batch[r.offset++]!;
        const params = count === 0 ? NO_PARAMS : readParams(r, count);
        onEvent({ kind, id, route, method, flags, started, path, query, params, batch, headersStart: r.offset, headersEnd: end });
        break;
      }
      case KIND_HTTP_BODY: {
        const id = r.id();
        const last = batch[r.offset] === 1;
        onEvent({ kind, id, last, data: batch.subarray(r.offset + 1, end), owned: false });
        break;
      }
      case KIND_HTTP_BODY_OWNED: {
        const id = r.id();
        const last = batch[r.offset] === 1;
        const data = owned[1 + batch.readUInt32LE(r.offset + 1)];
        if (data === undefined) throw new Error('ERR_INTERNAL: an HTTP_BODY_OWNED without its buffer');
        onEvent({ kind: KIND_HTTP_BODY, id, last, data, owned: true });
        break;
      }
      case KIND_HTTP_BODY_ERROR: {
        const id = r.id();
        const status = r.u16();
        onEvent({ kind, id, status, reason: batch.toString('utf8', r.offset, end) });
        break;
      }
      case KIND_HTTP_FILE_DONE: {
        const id = r.id();
        const status = r.u16();
        onEvent({ kind, id, status, sent: batch[r.offset] === 1 });
        break;
      }
      case KIND_HTTP_OPEN:
        onEvent({ kind, id: r.id(), remoteAddress: r.str(), tls: r.tls() });
        break;
      default:
        throw new Error(`ERR_INTERNAL: unknown native event kind ${kind}`);
    }
    offset = end;
  }
  return offset;
}
