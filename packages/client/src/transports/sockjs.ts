/**
 * The SockJS transport: the protocol carried by a SockJS session on plain
 * HTTP requests (docs/protocol.md, "Over SockJS"), to a server's
 * `app.sockjs(prefix, { rpc: true })`. It is the fallback where WebSocket
 * is blocked (a proxy that refuses the upgrade); see `fallbackTransport`.
 *
 * - **Receiving**: `xhr_streaming` (a POST whose response streams frames,
 *   read with `fetch` and a streaming body, in browsers and Node alike);
 *   when the server ends a streaming response (its `responseLimit`), the
 *   next one starts at once. If streaming fails before the session opens
 *   (an error, a status, no streaming body, or no open frame in time: a
 *   proxy that buffers responses), a new session polls instead (`xhr`: one
 *   request per frame), and so do the factory's later connections.
 * - **Sending**: `xhr_send` POSTs, one in flight; what is written meanwhile
 *   goes in the next one, batched (docs/protocol.md: at most 256 KiB of
 *   body, or one message alone).
 * - Each `write` is one SockJS message: the base64 of the frames it holds,
 *   so `framing` is `'message'`, as for WebSocket.
 *
 * No dependency on sockjs-client: this speaks only what the fallback needs,
 * with `fetch`, so the browser client loads as plain ES modules.
 */

import { ProtocolError } from 'switchboard-rpc';
import { decodeBase64, encodeBase64 } from '../base64.js';
import type { CloseReason, Transport, TransportClose, TransportFactory, TransportHandlers } from '../transport.js';

/** The `fetch` the transport needs: the global one, or one passed in. */
export type FetchLike = (url: string, init: RequestInitLike) => Promise<ResponseLike>;

/** The part of `RequestInit` the transport uses. */
export interface RequestInitLike {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  credentials?: 'include' | 'same-origin' | 'omit';
  cache?: 'no-store';
}

/** The part of `Response` the transport uses. */
export interface ResponseLike {
  readonly ok: boolean;
  readonly status: number;
  readonly body: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(reason?: unknown): Promise<void> } } | null;
  text(): Promise<string>;
}

export interface SockJsTransportOptions {
  /** The `fetch` to use (default: the global one; Node ≥ 18 and browsers have it). */
  fetch?: FetchLike;
  /** `'streaming'` (xhr_streaming, polling if it fails) or `'polling'` (xhr only). Default `'streaming'`. */
  receive?: 'streaming' | 'polling';
  /** How long a streaming response has to deliver the session's open frame before the transport polls instead (ms, default 5000). */
  streamingTimeoutMs?: number;
  /** Extra request headers (an `Authorization`, say). Browsers allow no `Cookie`; use `credentials`. */
  headers?: Record<string, string>;
  /** Browsers: whether cookies go with the requests (default `'include'`, as sockjs-client's `withCredentials`). */
  credentials?: 'include' | 'same-origin' | 'omit';
}

/**
 * Most body bytes in one `xhr_send` holding several messages; a single
 * larger message goes alone. The server accepts at least this
 * (docs/protocol.md, "Over SockJS"), and it keeps a send's round trip
 * short while a stream uploads.
 */
const MAX_BATCH_BODY = 256 * 1024;
/** How long `close()` lets the sends in flight finish before it ends the session anyway. */
const CLOSE_GRACE_MS = 2000;
const SESSION_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A `TransportFactory` for the SockJS service at `url` (`http(s)://host/prefix`). */
export function sockJsTransport(url: string | URL, options: SockJsTransportOptions = {}): TransportFactory {
  const fetcher = options.fetch ?? globalFetch();
  if (fetcher === undefined) throw new TypeError('there is no global fetch here: pass one in the options (`fetch`)');
  const { base, query } = sockJsBase(url);
  const streamingTimeoutMs = options.streamingTimeoutMs ?? 5000;
  if (!(Number.isInteger(streamingTimeoutMs) && streamingTimeoutMs > 0)) {
    throw new RangeError(`streamingTimeoutMs must be a whole number of milliseconds above 0, got ${String(streamingTimeoutMs)}`);
  }
  // Shared by the factory's connections: once streaming failed, later ones poll.
  const shared = { polling: options.receive === 'polling' };
  const settings: Settings = {
    fetch: fetcher,
    base,
    query,
    streamingTimeoutMs,
    headers: options.headers ?? {},
    credentials: options.credentials ?? 'include',
    shared,
  };
  return (handlers) => new SockJsTransport(settings, handlers);
}

/**
 * `url` as the service's base (`http:` or `https:`; `ws:` and `wss:` are
 * taken as those) without a trailing slash, and its query, which every
 * request of a session keeps (a token, say), as sockjs-client does.
 */
function sockJsBase(url: string | URL): { base: string; query: string } {
  const parsed = new URL(String(url));
  if (parsed.protocol === 'ws:') parsed.protocol = 'http:';
  else if (parsed.protocol === 'wss:') parsed.protocol = 'https:';
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`a SockJS URL starts with http: or https:, got ${parsed.protocol}`);
  }
  const query = parsed.search;
  parsed.hash = '';
  parsed.search = '';
  return { base: parsed.href.replace(/\/+$/, ''), query };
}

function globalFetch(): FetchLike | undefined {
  const candidate = (globalThis as { fetch?: unknown }).fetch;
  return typeof candidate === 'function' ? (candidate.bind(globalThis) as FetchLike) : undefined;
}

interface Settings {
  fetch: FetchLike;
  base: string;
  query: string;
  streamingTimeoutMs: number;
  headers: Record<string, string>;
  credentials: 'include' | 'same-origin' | 'omit';
  shared: { polling: boolean };
}

/** A session URL's `<server>/<session>`: three digits, and 16 random letters and digits. */
function sessionPath(): string {
  const random = new Uint8Array(19);
  const crypto = (globalThis as { crypto?: { getRandomValues(array: Uint8Array): Uint8Array } }).crypto;
  if (crypto !== undefined) crypto.getRandomValues(random);
  else for (let i = 0; i < random.length; i++) random[i] = Math.floor(Math.random() * 256);
  let server = '';
  for (let i = 0; i < 3; i++) server += String(random[i]! % 10);
  let session = '';
  for (let i = 3; i < random.length; i++) session += SESSION_ALPHABET[random[i]! % SESSION_ALPHABET.length];
  return `${server}/${session}`;
}

type Phase = 'connecting' | 'open' | 'closing' | 'closed';

/** Why the receiving side stopped. */
class SessionClosed extends Error {
  constructor(
    readonly closeCode: number,
    readonly reason: string,
  ) {
    super(`the SockJS session closed (${closeCode}${reason === '' ? '' : ` ${reason}`})`);
  }
}

class SockJsTransport implements Transport {
  readonly framing = 'message';
  private phase: Phase = 'connecting';
  private session = sessionPath();
  private polling: boolean;
  /** Aborts the receiving request (and any send) when the transport ends. */
  private controller = new AbortController();
  /** Base64 messages waiting for the next `xhr_send`. */
  private queue: string[] = [];
  private queuedBytes = 0;
  private sending = false;
  private flushScheduled = false;
  private reported = false;
  /** Streaming failed and this transport polls: the factory's later ones will too, once polling worked. */
  private fellBack = false;
  private closeTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly settings: Settings,
    private readonly handlers: TransportHandlers,
  ) {
    this.polling = settings.shared.polling;
    // From a microtask: the factory returns before any handler runs.
    queueMicrotask(() => void this.receive());
  }

  /** `'xhr-streaming'` or `'xhr-polling'`: how this transport receives. */
  get name(): string {
    return this.polling ? 'xhr-polling' : 'xhr-streaming';
  }

  get bufferedAmount(): number {
    return this.queuedBytes;
  }

  write(bytes: Uint8Array): void {
    if (this.phase !== 'open') return; // closing, or closed: onClose follows
    this.queue.push(encodeBase64(bytes));
    this.queuedBytes += bytes.length;
    // Writes of one tick go in one send.
    if (!this.sending && !this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => {
        this.flushScheduled = false;
        void this.flush();
      });
    }
  }

  close(_reason?: CloseReason): void {
    if (this.phase === 'closing' || this.phase === 'closed') return;
    if (this.phase === 'connecting' || (!this.sending && this.queue.length === 0 && !this.flushScheduled)) {
      this.end(undefined);
      return;
    }
    // What was written goes out first; then the receiving request is
    // aborted, which ends the session on the server (SockJS has no close
    // from the client).
    this.phase = 'closing';
    this.closeTimer = setTimeout(() => this.end(undefined), CLOSE_GRACE_MS);
  }

  // ------------------------------------------------------------ receiving

  private async receive(): Promise<void> {
    try {
      while (this.phase !== 'closed') {
        if (this.polling) await this.poll();
        else await this.stream();
      }
    } catch (error) {
      if (error instanceof SessionClosed) {
        this.sessionClosed(error);
      } else if (this.phase !== 'closed') {
        this.end(asError(error));
      }
    }
  }

  /** One `xhr` request: one frame. */
  private async poll(): Promise<void> {
    const response = await this.request('xhr');
    const body = await response.text();
    for (const line of body.split('\n')) if (line !== '') this.frame(line);
  }

  /**
   * One `xhr_streaming` response, frame by frame, until the server ends it.
   * A first one that fails before the session opens makes the transport
   * poll, with a new session (the failed request interrupted the first).
   */
  private async stream(): Promise<void> {
    const first = this.phase === 'connecting';
    let timer: ReturnType<typeof setTimeout> | null = null;
    let timedOut = false;
    if (first) {
      timer = setTimeout(() => {
        timedOut = true;
        this.restartController();
      }, this.settings.streamingTimeoutMs);
    }
    try {
      const response = await this.request('xhr_streaming');
      const reader = response.body?.getReader();
      if (reader === undefined) throw new Error('the streaming response has no readable body');
      const text = new TextDecoder();
      let pending = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pending += text.decode(value, { stream: true });
        let newline = pending.indexOf('\n');
        while (newline >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line !== '') this.frame(line);
          if (this.isClosed()) {
            await reader.cancel().catch(() => undefined);
            return;
          }
          newline = pending.indexOf('\n');
        }
        if (timer !== null && this.phase !== 'connecting') {
          clearTimeout(timer);
          timer = null;
        }
      }
    } catch (error) {
      if (error instanceof SessionClosed || !first || this.phase !== 'connecting' || this.reported) throw error;
      // Streaming does not work here: poll, in a new session (and from
      // then on, once polling works: a server that is down fails both).
      this.polling = true;
      this.fellBack = true;
      this.session = sessionPath();
      if (!timedOut) this.restartController();
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  }

  /** A new controller (the old one aborted what used it). */
  private restartController(): void {
    this.controller.abort();
    this.controller = new AbortController();
  }

  /** A POST to the session's `transport` URL; throws unless it answers 200 (or 204). */
  private async request(transport: string, body?: string): Promise<ResponseLike> {
    const init: RequestInitLike = {
      method: 'POST',
      headers: body === undefined ? { ...this.settings.headers } : { ...this.settings.headers, 'Content-Type': 'text/plain;charset=UTF-8' },
      signal: this.controller.signal,
      credentials: this.settings.credentials,
      cache: 'no-store',
    };
    if (body !== undefined) init.body = body;
    const { base, query } = this.settings;
    const response = await this.settings.fetch(`${base}/${this.session}/${transport}${query}`, init);
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      throw httpError(transport, response.status, text);
    }
    return response;
  }

  /** One SockJS frame (`o`, `h`, `a[...]`, `c[...]`). */
  private frame(line: string): void {
    if (this.phase === 'closed') return;
    switch (line[0]) {
      case 'o':
        if (this.phase === 'connecting') {
          this.phase = 'open';
          if (this.fellBack) this.settings.shared.polling = true;
          this.handlers.onOpen();
        }
        return;
      case 'h':
        return; // a heartbeat (or the streaming prelude)
      case 'a': {
        const messages = parseJson(line.slice(1));
        if (!Array.isArray(messages)) throw new ProtocolError('ERR_PROTOCOL_MALFORMED', 'a SockJS message frame that is not an array');
        for (const message of messages) {
          if (typeof message !== 'string') throw new ProtocolError('ERR_PROTOCOL_MALFORMED', 'a SockJS message that is not a string');
          let bytes: Uint8Array;
          try {
            bytes = decodeBase64(message);
          } catch (error) {
            throw new ProtocolError('ERR_SOCKJS_BROKEN_BASE64', `the server sent a message that is not base64: ${asError(error).message}`);
          }
          // A handler may have closed the transport.
          if (this.isClosed()) return;
          this.handlers.onData(bytes);
        }
        return;
      }
      case 'c': {
        const close = parseJson(line.slice(1));
        const [code, reason] = Array.isArray(close) ? close : [];
        throw new SessionClosed(typeof code === 'number' ? code : 1006, typeof reason === 'string' ? reason : '');
      }
      default:
        throw new ProtocolError('ERR_PROTOCOL_MALFORMED', `an unknown SockJS frame: ${line.slice(0, 16)}`);
    }
  }

  /**
   * The server closed the session. A code other than 1000 is an error,
   * named by the reason's `ERR_*` code when it has one (as a WebSocket
   * close reason is).
   */
  private sessionClosed(closed: SessionClosed): void {
    if (closed.closeCode === 1000) {
      this.end(undefined, closed.closeCode);
      return;
    }
    const code = /^(ERR_[A-Z0-9_]+)/.exec(closed.reason)?.[1];
    this.end(code === undefined ? closed : new ProtocolError(code, closed.message), closed.closeCode);
  }

  // ------------------------------------------------------------ sending

  /** `xhr_send` the queued messages, one request at a time. */
  private async flush(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0 && (this.phase === 'open' || this.phase === 'closing')) {
        let count = 0;
        let size = 2;
        let bytes = 0;
        do {
          size += this.queue[count]!.length + 3;
          count++;
        } while (count < this.queue.length && size + this.queue[count]!.length + 3 <= MAX_BATCH_BODY);
        const batch = this.queue.splice(0, count);
        for (const message of batch) bytes += (message.length / 4) * 3;
        const body = `["${batch.join('","')}"]`;
        const response = await this.request('xhr_send', body);
        await response.text().catch(() => '');
        // Base64 length over-counts padding by at most 2 per message; bufferedAmount is for monitoring.
        this.queuedBytes = Math.max(0, this.queuedBytes - bytes);
      }
      if (this.queue.length === 0) this.queuedBytes = 0;
    } catch (error) {
      if (this.phase !== 'closed') this.end(asError(error));
    } finally {
      this.sending = false;
    }
    if (this.phase === 'closing' && this.queue.length === 0) this.end(undefined);
  }

  // ------------------------------------------------------------ ending

  /** A method, not a field read: handlers called meanwhile may have closed it. */
  private isClosed(): boolean {
    return this.phase === 'closed';
  }

  private end(error: Error | undefined, closeCode?: number): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    if (this.closeTimer !== null) clearTimeout(this.closeTimer);
    this.closeTimer = null;
    this.queue = [];
    this.queuedBytes = 0;
    // Aborting the receiving request ends the session on the server.
    this.controller.abort();
    if (this.reported) return;
    this.reported = true;
    const info: TransportClose = {};
    if (error !== undefined) info.error = error;
    if (closeCode !== undefined) info.closeCode = closeCode;
    this.handlers.onClose(info);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProtocolError('ERR_PROTOCOL_MALFORMED', `a SockJS frame that is not JSON: ${text.slice(0, 32)}`);
  }
}

/** A status other than 200 or 204: the body names an `ERR_*` code when the server gave one. */
function httpError(transport: string, status: number, body: string): Error {
  const code = /^(ERR_[A-Z0-9_]+)/.exec(body)?.[1];
  const message = `${transport} answered ${status}${body === '' ? '' : `: ${body.slice(0, 200).trim()}`}`;
  return code === undefined ? new Error(message) : new ProtocolError(code, message);
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
