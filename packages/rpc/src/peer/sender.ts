/**
 * The sending side of a stream (docs/protocol.md §4, §7): pulls chunks from
 * a source, splits them to the receiver's frame size, and never sends more
 * than the credit the receiver granted.
 */

import type { Frame } from '../codec/index.js';
import { RpcError, RpcErrorCode, codeOf, isWireCode, messageOf, truncateUtf8 } from './errors.js';
import { StreamWriter, failWriter } from './writer.js';

/** The minimal shape of a WHATWG ReadableStream (browsers without async iteration on it). */
export interface ReadableStreamLike {
  getReader(): {
    read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
    cancel(reason?: unknown): Promise<void>;
    releaseLock(): void;
  };
}

/**
 * What can be sent as a stream: bytes at once, a (sync or async) iterable of
 * chunks (Node Readables are async iterables), a WHATWG ReadableStream, or a
 * `StreamWriter` to write to while the stream is open.
 */
export type StreamSource =
  | Uint8Array
  | Iterable<Uint8Array>
  | AsyncIterable<Uint8Array>
  | ReadableStreamLike
  | StreamWriter;

/** What an outbound stream needs from the peer. */
export interface OutboundHost {
  /** `tailByReference`: the chunk is a view of the caller's own bytes (see `FrameOutput`). */
  send(frame: Frame, tailByReference?: boolean): void;
  /** The transport's queue is full: send no data until `whenWritable()` resolves. */
  readonly paused: boolean;
  whenWritable(): Promise<void>;
  /** The stream's id is closed (END sent, or the connection is gone). */
  released(stream: OutboundStream): void;
}

type Next = IteratorResult<unknown> | Promise<IteratorResult<unknown>>;
interface Pullable {
  next(): Next;
  close(error: Error): void;
}

const utf8 = new TextEncoder();
/** Fits any STREAM_END in the smallest allowed frame (1024 bytes, 255-byte code). */
const MAX_ABORT_MESSAGE = 512;
const noop = (): void => {};

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** An iterator over any StreamSource, with a way to release it early. */
function pullable(source: StreamSource): Pullable {
  if (source instanceof Uint8Array) {
    let done = false;
    return {
      next: () => {
        if (done) return { done: true, value: undefined };
        done = true;
        return { done: false, value: source };
      },
      close: noop,
    };
  }
  if (source instanceof StreamWriter) {
    const iterator = source[Symbol.asyncIterator]();
    return { next: () => iterator.next(), close: (error) => source[failWriter](error) };
  }
  let iterator: Iterator<unknown> | AsyncIterator<unknown>;
  if (typeof (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function') {
    iterator = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  } else if (typeof (source as Iterable<Uint8Array>)[Symbol.iterator] === 'function') {
    iterator = (source as Iterable<Uint8Array>)[Symbol.iterator]();
  } else if (typeof (source as ReadableStreamLike).getReader === 'function') {
    const reader = (source as ReadableStreamLike).getReader();
    return {
      next: () => reader.read().then((r) => (r.done ? { done: true, value: undefined } : { done: false, value: r.value })),
      close: (error) => {
        reader.cancel(error).catch(noop);
      },
    };
  } else {
    throw new TypeError('a stream source is a Uint8Array, an (async) iterable of Uint8Array, a ReadableStream or a StreamWriter');
  }
  return {
    next: () => iterator.next(),
    close: () => {
      try {
        const result = iterator.return?.();
        if (isThenable(result)) result.catch(noop);
      } catch {
        // A source failing to clean up is its own business.
      }
    },
  };
}

function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return utf8.encode(value);
  throw new TypeError(`a stream source yielded a ${typeof value}, not a Uint8Array`);
}

/** The widest id width: an upper bound on STREAM_DATA's header inside the body. */
function idWidth(id: number): number {
  return id < 0x100 ? 1 : id < 0x10000 ? 2 : id < 0x1_0000_0000 ? 4 : 6;
}

export class OutboundStream {
  private closed = false;
  private credit: number;
  private sent = 0;
  private readonly maxData: number;
  private waiter: (() => void) | null = null;
  private readonly source: Pullable;
  /** The source has finished (done or threw): do not release it. */
  private sourceDone = false;
  /**
   * The source is bytes the caller gave with the call (a file's `data`, say):
   * its chunks may be written by reference, under the payload's rule. Chunks
   * from iterables and writers are copied (their buffers may be reused).
   */
  private readonly byReference: boolean;

  /** Throws a TypeError when `source` is not a StreamSource. */
  constructor(
    private readonly host: OutboundHost,
    readonly id: number,
    source: StreamSource,
    credit: number,
    maxFrameSize: number,
    /** A file's declared size, or null. */
    private readonly size: number | null,
  ) {
    try {
      this.source = pullable(source);
    } catch (error) {
      // Sent as the stream's abort (planAttachments should have refused it).
      this.source = { next: () => Promise.reject(error), close: noop };
    }
    this.byReference = source instanceof Uint8Array;
    this.credit = credit;
    this.maxData = maxFrameSize - idWidth(id);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  start(): void {
    void this.pump();
  }

  /** CREDIT from the receiver. */
  onCredit(increment: number): void {
    if (this.closed) return;
    this.credit += increment;
    this.wake();
  }

  /** STOP from the receiver: stop sending and close the id with an abort. */
  onStop(code: string): void {
    this.abort(RpcErrorCode.StreamStopped, `the receiver stopped the stream (${code})`);
  }

  /** Gives up on the stream: STREAM_END with ABORT, and the source released. */
  abort(code: string, message: string): void {
    if (this.closed) return;
    if (!isWireCode(code)) code = RpcErrorCode.StreamSource;
    message = truncateUtf8(message, MAX_ABORT_MESSAGE);
    this.host.send({ type: 'streamEnd', streamId: this.id, abort: { code, message } });
    this.close(new RpcError(code, message));
  }

  /** The connection is gone: nothing more is sent. */
  fail(error: Error): void {
    if (!this.closed) this.close(error);
  }

  private close(error: Error | null): void {
    this.closed = true;
    this.wake();
    this.host.released(this);
    if (error !== null && !this.sourceDone) {
      this.sourceDone = true;
      this.source.close(error);
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      waiter();
    }
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        let result = this.source.next();
        if (isThenable(result)) result = await result;
        if (this.closed) return;
        if (result.done === true) break;
        const chunk = toBytes(result.value);
        if (this.size !== null && this.sent + chunk.length > this.size) {
          this.abort(RpcErrorCode.FileSize, `the file source produced more than its declared ${this.size} bytes`);
          return;
        }
        let offset = 0;
        while (offset < chunk.length) {
          if (this.host.paused) {
            // The transport's queue passed its high-water mark: credit
            // allows more than it should hold (ARCHITECTURE.md, Backpressure).
            await this.host.whenWritable();
            if (this.closed) return;
            continue;
          }
          if (this.credit <= 0) {
            await new Promise<void>((resolve) => {
              this.waiter = resolve;
            });
            if (this.closed) return;
            continue;
          }
          const n = Math.min(this.credit, this.maxData, chunk.length - offset);
          const data = n === chunk.length ? chunk : chunk.subarray(offset, offset + n);
          this.credit -= n;
          this.sent += n;
          offset += n;
          this.host.send({ type: 'streamData', streamId: this.id, data }, this.byReference);
        }
      }
      this.sourceDone = true;
      if (this.size !== null && this.sent !== this.size) {
        this.abort(RpcErrorCode.FileSize, `the file source ended after ${this.sent} of its declared ${this.size} bytes`);
        return;
      }
      this.host.send({ type: 'streamEnd', streamId: this.id, abort: null });
      this.close(null);
    } catch (error) {
      if (this.closed) return;
      this.sourceDone = true;
      this.abort(codeOf(error) ?? RpcErrorCode.StreamSource, messageOf(error) || 'the stream source failed');
    }
  }
}
