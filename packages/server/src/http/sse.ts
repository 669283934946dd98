/**
 * Server-sent events (the WHATWG HTML standard, "Server-sent events"): a
 * response that stays open and carries `text/event-stream` frames, read
 * by `EventSource` in browsers (or any streaming fetch). `res.sse()` starts
 * one; this file frames the events, keeps the stream alive with heartbeat
 * comments, and stops its timer when the stream ends, whoever ends it.
 *
 * What a client sent back after a reconnection is a request header:
 * `req.header('last-event-id')` is the `id` of the last event it got.
 */
import { SwitchboardError } from '../errors.js';
import type { Response } from './response.js';

export interface EventStreamOptions {
  /**
   * Milliseconds between heartbeat comments while no event is sent (0:
   * none). Default 15000: under the idle timeouts of common proxies and
   * load balancers (nginx's `proxy_read_timeout` is 60 s, AWS ALB's idle
   * timeout 60 s), so a quiet stream is not cut, and a client that left is
   * noticed within one interval even on a connection that died silently.
   */
  heartbeat?: number;
  /**
   * The reconnection delay to ask of the client, in milliseconds, sent
   * once at the start (`retry:`). Default: none (the browser's own, about
   * 3 s).
   */
  retry?: number;
}

/** One event. Every field is optional; an event without `data` only sets the client's `id` or `retry`. */
export interface ServerSentEvent {
  /** The event's type (`addEventListener(event, ...)`; `message` when absent). No CR, LF or NUL. */
  event?: string;
  /** The id the client sends back as `Last-Event-ID` when it reconnects. No CR, LF or NUL. */
  id?: string | number;
  /** A new reconnection delay, in milliseconds. */
  retry?: number;
  /** A string as it is (one `data:` line per line), or any other value as JSON. */
  data?: unknown;
}

/** Default heartbeat interval (see `EventStreamOptions.heartbeat`). */
const DEFAULT_HEARTBEAT_MS = 15_000;

/** CR, LF and NUL end a field (or, NUL, break the id) in the format. */
const FIELD_BREAK = /[\r\n\0]/;
/** Lines of a data value or a comment: any of CRLF, CR, LF ends one. */
const LINE_BREAK = /\r\n|\r|\n/;

const HEADERS: readonly [string, string][] = [
  ['Content-Type', 'text/event-stream; charset=utf-8'],
  // Every event is fresh: neither the browser nor a proxy may cache.
  ['Cache-Control', 'no-cache'],
  // nginx buffers proxied responses unless told not to.
  ['X-Accel-Buffering', 'no'],
];

/**
 * A stream of server-sent events on one response. `send` and `comment`
 * return what `res.write` returns: false when the client is behind (wait
 * for `'drain'` before sending more). The stream closes with `close()`,
 * or when the client goes away; then its heartbeat stops, `send` returns
 * false, and `'close'` fires (once).
 */
export class EventStream {
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Something was written since the last heartbeat tick. */
  private active = false;
  private isClosed = false;
  private closeListeners: (() => void)[] | undefined;

  /**
   * @internal `res.sse()` creates it. `start`: `'open'` writes the head and
   * starts; `'head'` (a HEAD request) writes the head and ends; `'refused'`
   * (the response was sent already) is closed from the start.
   */
  constructor(
    private readonly res: Response,
    options: EventStreamOptions = {},
    start: 'open' | 'head' | 'refused',
  ) {
    const heartbeat = options.heartbeat ?? DEFAULT_HEARTBEAT_MS;
    if (typeof heartbeat !== 'number' || !Number.isFinite(heartbeat) || heartbeat < 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `heartbeat must be a number of milliseconds >= 0, got ${String(options.heartbeat)}`);
    }
    if (options.retry !== undefined) checkRetry(options.retry);
    if (start === 'refused') {
      this.isClosed = true;
      return;
    }
    for (const [name, value] of HEADERS) res.header(name, value);
    if (start === 'head') {
      this.isClosed = true;
      res.end();
      return;
    }
    // The client left, or a handler ended the response itself.
    res.on('close', () => this.stop());
    res.on('finish', () => this.stop());
    // The first write sends the head: the client knows the stream is open.
    res.write(options.retry === undefined ? '' : `retry: ${options.retry}\n\n`);
    if (heartbeat > 0 && !this.isClosed) {
      this.timer = setInterval(() => this.tick(), heartbeat);
      // A heartbeat alone never keeps a process alive.
      this.timer.unref?.();
    }
  }

  /** Whether the stream ended (`close()`, or the client left). */
  get closed(): boolean {
    return this.isClosed || this.res.closed || this.res.finished;
  }

  /**
   * Send an event (a string is the `data` of a `message` event). `event`
   * or `id` with CR, LF or NUL, or a `retry` that is not a whole number of
   * milliseconds, throws `ERR_INVALID_OPTION`.
   */
  send(message: ServerSentEvent | string): boolean {
    const frame = typeof message === 'string' ? dataLines(message) : frameOf(message);
    if (this.closed) return false;
    this.active = true;
    return this.res.write(`${frame}\n`);
  }

  /** Send a comment (`:` lines, ignored by clients): keeps the connection alive, or helps debugging. */
  comment(text = ''): boolean {
    if (this.closed) return false;
    this.active = true;
    return this.res.write(commentLines(text));
  }

  /** End the stream (the response ends). Harmless when already closed. */
  close(): void {
    if (this.isClosed) return;
    const open = !this.res.closed && !this.res.finished;
    this.stop();
    if (open) this.res.end();
  }

  /** `'close'`: the stream ended, however (once). `'drain'`: the client caught up after a write returned false. */
  on(event: 'close' | 'drain', listener: () => void): this {
    if (event === 'drain') this.res.on('drain', listener);
    else if (this.isClosed) queueMicrotask(listener);
    else (this.closeListeners ??= []).push(listener);
    return this;
  }

  private tick(): void {
    if (this.closed) {
      this.stop();
      return;
    }
    if (this.active) {
      this.active = false;
      return;
    }
    this.res.write(':\n\n');
  }

  private stop(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    if (this.isClosed) return;
    this.isClosed = true;
    const listeners = this.closeListeners;
    this.closeListeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

function checkRetry(retry: unknown): void {
  if (typeof retry !== 'number' || !Number.isSafeInteger(retry) || retry < 0) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `retry must be a whole number of milliseconds >= 0, got ${String(retry)}`);
  }
}

function checkField(name: string, value: string): void {
  if (FIELD_BREAK.test(value)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `an event's ${name} may not contain CR, LF or NUL`);
  }
}

/** The lines of one event, without the blank line that ends it. */
function frameOf(message: ServerSentEvent): string {
  if (message === null || typeof message !== 'object') {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'send() takes an event object or a string');
  }
  let frame = '';
  if (message.event !== undefined) {
    const event = String(message.event);
    checkField('event', event);
    frame += `event: ${event}\n`;
  }
  if (message.id !== undefined) {
    const id = String(message.id);
    checkField('id', id);
    frame += `id: ${id}\n`;
  }
  if (message.retry !== undefined) {
    checkRetry(message.retry);
    frame += `retry: ${message.retry}\n`;
  }
  const data = message.data;
  if (data !== undefined) {
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    // JSON.stringify gives undefined for a function or a symbol: no data.
    if (text !== undefined) frame += dataLines(text);
  }
  return frame;
}

/** `data:` lines: a client joins them back with LF. */
function dataLines(text: string): string {
  let lines = '';
  for (const line of text.split(LINE_BREAK)) lines += `data: ${line}\n`;
  return lines;
}

function commentLines(text: string): string {
  let lines = '';
  for (const line of text.split(LINE_BREAK)) lines += line === '' ? ':\n' : `: ${line}\n`;
  return `${lines}\n`;
}
