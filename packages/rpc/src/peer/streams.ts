/**
 * The receiving side of a stream (docs/protocol.md §4 STREAM_DATA …
 * STOP, §7): a buffer bounded by the credit granted, and credit granted
 * back as the application takes chunks, not as they arrive.
 */

import type { FileInfo } from '../codec/index.js';
import { ProtocolError } from '../codec/index.js';
import { RpcError, RpcErrorCode, isWireCode } from './errors.js';

/**
 * A stream (or a file's data) the peer is sending us: an async iterable of
 * chunks, at most the sender's frame size each.
 *
 * - Iterating (`for await`) yields every chunk in order and finishes when
 *   the sender ends the stream. Breaking out of the loop (or `stop()`) sends
 *   STOP: the sender stops, buffered data is dropped.
 * - When the sender aborts the stream, the iterator throws an `RpcError`
 *   with the sender's code (after the chunks that came before it). When the
 *   connection closes it throws `ERR_DISCONNECTED`; when the call it belongs
 *   to is cancelled, `ERR_CANCELLED`.
 * - Memory: at most the receiver's `initialWindow` bytes are buffered; the
 *   sender waits for credit, which is granted as chunks are taken.
 * - One consumer at a time: a `read()` while another is waiting rejects.
 */
export interface IncomingStream extends AsyncIterable<Uint8Array> {
  /** The stream id (chosen by the sender). */
  readonly id: number;
  /** Name and declared size for a file, null for a plain stream. */
  readonly file: FileInfo | null;
  /** Bytes received and not yet taken by the consumer. */
  readonly bufferedBytes: number;
  /** Bytes received so far (including those dropped after a stop). */
  readonly receivedBytes: number;
  /** No more data will be added (ended, aborted, stopped or disconnected). */
  readonly finished: boolean;
  /** The next chunk, or null at the end; rejects when the stream failed. */
  read(): Promise<Uint8Array | null>;
  /** Every remaining byte in one array. Over `maxBytes` it stops the stream and rejects (`ERR_PAYLOAD_TOO_LARGE`). */
  readAll(maxBytes?: number): Promise<Uint8Array>;
  /** `readAll()` decoded as UTF-8. */
  text(maxBytes?: number): Promise<string>;
  /** Tells the sender to stop (STOP with `code`, default `ERR_STREAM_STOPPED`) and drops buffered data. */
  stop(code?: string): void;
  /**
   * Keeps the stream open after the handler that received it returns. By
   * default, streams a handler never started reading are stopped when its
   * call is over, so that their senders do not wait for credit forever.
   */
  retain(): this;
}

/** What an inbound stream needs from the peer. */
export interface InboundHost {
  sendCredit(streamId: number, increment: number): void;
  sendStop(streamId: number, code: string): void;
}

interface Waiter {
  resolve(chunk: Uint8Array | null): void;
  reject(error: Error): void;
}

export class InboundStream implements IncomingStream {
  /** The id is open on the wire: no STREAM_END received yet. */
  open = true;
  /** We sent STOP. */
  stopped = false;
  /** The consumer started reading, or retained the stream. */
  touched = false;
  private readonly chunks: Uint8Array[] = [];
  private head = 0;
  private buffered = 0;
  private received = 0;
  /** Bytes the sender may still send. */
  private credit: number;
  /** Bytes taken by the consumer and not yet granted back. */
  private toGrant = 0;
  private readonly threshold: number;
  private done = false;
  private failure: Error | null = null;
  private waiter: Waiter | null = null;

  constructor(
    private readonly host: InboundHost,
    readonly id: number,
    readonly file: FileInfo | null,
    window: number,
  ) {
    this.credit = window;
    this.threshold = Math.max(1, Math.floor(window / 2));
  }

  get bufferedBytes(): number {
    return this.buffered;
  }

  get receivedBytes(): number {
    return this.received;
  }

  get finished(): boolean {
    return this.done;
  }

  // ---- frames (called by the peer) ----

  /** STREAM_DATA. Throws a ProtocolError for data beyond credit or beyond a file's size. */
  receiveData(data: Uint8Array): void {
    const length = data.length;
    if (length > this.credit) {
      throw new ProtocolError(
        'ERR_PROTOCOL_FLOW_CONTROL',
        `stream ${this.id}: ${length} bytes of data with ${this.credit} bytes of credit`,
      );
    }
    this.credit -= length;
    this.received += length;
    if (this.done) return; // stopped, or failed locally: dropped (still counted)
    if (this.file !== null && this.received > this.file.size) {
      throw new ProtocolError(
        'ERR_PROTOCOL_FILE_SIZE',
        `file stream ${this.id}: more than its declared ${this.file.size} bytes`,
      );
    }
    if (length === 0) return;
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      this.consumed(length);
      waiter.resolve(data);
      return;
    }
    this.chunks.push(data);
    this.buffered += length;
  }

  /** STREAM_END. Throws a ProtocolError when a file's data does not total its size. */
  receiveEnd(abort: { code: string; message: string } | null): void {
    this.open = false;
    if (this.done) return;
    if (abort !== null) {
      this.finish(new RpcError(abort.code, abort.message || `the sender aborted stream ${this.id} (${abort.code})`));
      return;
    }
    if (this.file !== null && this.received !== this.file.size) {
      throw new ProtocolError(
        'ERR_PROTOCOL_FILE_SIZE',
        `file stream ${this.id} ended after ${this.received} of its declared ${this.file.size} bytes`,
      );
    }
    this.finish(null);
  }

  /** The connection closed: buffered chunks stay readable, then reads throw `error`. */
  fail(error: Error): void {
    this.open = false;
    if (!this.done) this.finish(error);
  }

  /** Sends STOP (while the id is open), drops the buffer; reads then end, or throw `error`. */
  stopWith(code: string, error: Error | null): void {
    if (this.open && !this.stopped) {
      this.stopped = true;
      this.host.sendStop(this.id, code);
    }
    this.chunks.length = 0;
    this.head = 0;
    this.buffered = 0;
    if (!this.done) this.finish(error);
  }

  // ---- the consumer's side ----

  read(): Promise<Uint8Array | null> {
    this.touched = true;
    if (this.head < this.chunks.length) return Promise.resolve(this.take());
    if (this.done) return this.failure === null ? Promise.resolve(null) : Promise.reject(this.failure);
    if (this.waiter !== null) {
      return Promise.reject(new RpcError(RpcErrorCode.InvalidArgument, `stream ${this.id} already has a pending read`));
    }
    return new Promise<Uint8Array | null>((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  async readAll(maxBytes = Number.POSITIVE_INFINITY): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const chunk = await this.read();
      if (chunk === null) break;
      total += chunk.length;
      if (total > maxBytes) {
        this.stop();
        throw new RpcError(RpcErrorCode.PayloadTooLarge, `stream ${this.id} holds more than ${maxBytes} bytes`);
      }
      parts.push(chunk);
    }
    if (parts.length === 1) return parts[0]!;
    const out = new Uint8Array(total);
    let offset = 0;
    for (const part of parts) {
      out.set(part, offset);
      offset += part.length;
    }
    return out;
  }

  async text(maxBytes?: number): Promise<string> {
    return new TextDecoder().decode(await this.readAll(maxBytes));
  }

  stop(code: string = RpcErrorCode.StreamStopped): void {
    if (!isWireCode(code)) throw new RpcError(RpcErrorCode.InvalidArgument, `a STOP code is 1–255 printable ASCII characters, got ${JSON.stringify(code)}`);
    this.touched = true;
    this.stopWith(code, null);
  }

  retain(): this {
    this.touched = true;
    return this;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    this.touched = true;
    return {
      next: async (): Promise<IteratorResult<Uint8Array>> => {
        const chunk = await this.read();
        return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk };
      },
      return: async (): Promise<IteratorResult<Uint8Array>> => {
        if (!this.done || this.head < this.chunks.length) this.stopWith(RpcErrorCode.StreamStopped, null);
        return { done: true, value: undefined };
      },
    };
  }

  // ---- internals ----

  private take(): Uint8Array {
    const chunk = this.chunks[this.head]!;
    this.chunks[this.head] = EMPTY;
    this.head += 1;
    if (this.head === this.chunks.length) {
      this.chunks.length = 0;
      this.head = 0;
    } else if (this.head >= 1024) {
      this.chunks.splice(0, this.head);
      this.head = 0;
    }
    this.buffered -= chunk.length;
    this.consumed(chunk.length);
    return chunk;
  }

  /** The consumer took `length` bytes: grant them back once enough add up. */
  private consumed(length: number): void {
    this.toGrant += length;
    if (this.toGrant < this.threshold || !this.open || this.done) return;
    let grant = this.toGrant;
    if (this.file !== null) {
      // No credit beyond what the file still needs.
      grant = Math.min(grant, this.file.size - this.received - this.credit);
      if (grant <= 0) return;
    }
    this.toGrant = 0;
    this.credit += grant;
    this.host.sendCredit(this.id, grant);
  }

  private finish(error: Error | null): void {
    this.done = true;
    this.failure = error;
    const waiter = this.waiter;
    if (waiter !== null && this.head >= this.chunks.length) {
      this.waiter = null;
      if (error === null) waiter.resolve(null);
      else waiter.reject(error);
    }
  }
}

const EMPTY = new Uint8Array(0);
