/**
 * A stream the application writes to, chunk by chunk, with backpressure:
 * `write` resolves once the peer has sent the chunk (within the receiver's
 * credit), so `await writer.write(chunk)` in a loop never holds more than
 * a chunk or two in memory.
 */

import { RpcError, RpcErrorCode } from './errors.js';

/** Module-internal: how the sending side tells a writer the stream is gone. */
export const failWriter: unique symbol = Symbol('failWriter');

interface Pending {
  chunk: Uint8Array;
  resolve(): void;
  reject(error: Error): void;
}

interface Pull {
  resolve(result: IteratorResult<Uint8Array>): void;
  reject(error: Error): void;
}

const noop = (): void => {};
const utf8 = new TextEncoder();

/**
 * Attach it to a call or a response as its `stream` (or a file's `data`),
 * then write, and `end()` (or `abort()`). Writes made before the call
 * is sent wait in the writer. A writer can be attached once.
 *
 * When the receiver stops the stream or the connection closes, pending and
 * later writes reject (`ERR_STREAM_STOPPED`, `ERR_DISCONNECTED`…) and
 * `finished` rejects. The returned promises are marked handled, so writes
 * that are not awaited do not raise unhandled rejections.
 */
export class StreamWriter implements AsyncIterable<Uint8Array> {
  private readonly queue: Pending[] = [];
  private current: Pending | null = null;
  private pull: Pull | null = null;
  private ending = false;
  private abortError: RpcError | null = null;
  private failure: Error | null = null;
  private attached = false;
  private settled = false;
  private resolveFinished: () => void = noop;
  private rejectFinished: (error: Error) => void = noop;
  /** Resolves when the end went out; rejects when the stream was stopped, aborted or lost. */
  readonly finished: Promise<void>;

  constructor() {
    this.finished = new Promise<void>((resolve, reject) => {
      this.resolveFinished = resolve;
      this.rejectFinished = reject;
    });
    this.finished.catch(noop);
  }

  /** The writer is the source of a stream already. */
  get isAttached(): boolean {
    return this.attached;
  }

  /** No more writes are accepted (ended, aborted, stopped or disconnected). */
  get closed(): boolean {
    return this.ending || this.abortError !== null || this.failure !== null;
  }

  /** Queues a chunk (a string is sent as UTF-8); resolves when it has been sent. */
  write(chunk: Uint8Array | string): Promise<void> {
    let promise: Promise<void>;
    if (this.failure !== null) promise = Promise.reject(this.failure);
    else if (this.closed) promise = Promise.reject(new RpcError(RpcErrorCode.StreamClosed, 'write after end or abort'));
    else {
      const bytes = typeof chunk === 'string' ? utf8.encode(chunk) : chunk;
      promise = new Promise<void>((resolve, reject) => {
        const pending = { chunk: bytes, resolve, reject };
        const pull = this.pull;
        if (pull !== null) {
          this.pull = null;
          this.current = pending;
          pull.resolve({ done: false, value: bytes });
        } else {
          this.queue.push(pending);
        }
      });
    }
    promise.catch(noop);
    return promise;
  }

  /** Ends the stream after the queued chunks. */
  end(): void {
    if (this.closed) return;
    this.ending = true;
    this.wake();
  }

  /** Aborts the stream: the receiver's iterator throws an RpcError with this code. Queued chunks are dropped. */
  abort(code: string = RpcErrorCode.StreamAborted, message = ''): void {
    if (this.closed) return;
    this.abortError = new RpcError(code, message || `the stream was aborted (${code})`);
    this.rejectQueued(this.abortError);
    this.wake();
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.attached) throw new RpcError(RpcErrorCode.InvalidArgument, 'a StreamWriter can be attached once');
    this.attached = true;
    return {
      next: () => this.next(),
      return: () => {
        this[failWriter](new RpcError(RpcErrorCode.StreamClosed, 'the stream was closed'));
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  /** Module-internal: the stream was stopped or lost. */
  [failWriter](error: Error): void {
    if (this.settled) return;
    this.failure ??= error;
    this.rejectQueued(error);
    this.settle(error);
  }

  private next(): Promise<IteratorResult<Uint8Array>> {
    // The chunk taken before has been sent.
    this.current?.resolve();
    this.current = null;
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.abortError !== null) {
      const error = this.abortError;
      this.settle(error);
      return Promise.reject(error);
    }
    const pending = this.queue.shift();
    if (pending !== undefined) {
      this.current = pending;
      return Promise.resolve({ done: false, value: pending.chunk });
    }
    if (this.ending) {
      this.settle(null);
      return Promise.resolve({ done: true, value: undefined });
    }
    return new Promise((resolve, reject) => {
      this.pull = { resolve, reject };
    });
  }

  private wake(): void {
    const pull = this.pull;
    if (pull === null) return;
    this.pull = null;
    this.next().then(pull.resolve, pull.reject);
  }

  private rejectQueued(error: Error): void {
    this.current?.reject(error);
    this.current = null;
    for (const pending of this.queue.splice(0)) pending.reject(error);
    const pull = this.pull;
    if (pull !== null && this.failure !== null) {
      this.pull = null;
      pull.reject(error);
    }
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    if (error === null) this.resolveFinished();
    else this.rejectFinished(error);
  }
}

/** A new StreamWriter: `const s = openStream(); peer.call('upload', meta, { stream: s }); await s.write(chunk); s.end();` */
export function openStream(): StreamWriter {
  return new StreamWriter();
}
