/**
 * The caller's side of a call: its options, its state while in flight, and
 * the two ways its responses are handed over (a promise for the first one,
 * an async iterator for all of them).
 */

import type { AttachmentOptions, PlannedAttachment } from './files.js';
import type { ReceivedResponse, RpcResponse } from './response.js';
import type { OutboundStream } from './sender.js';
import type { InboundStream } from './streams.js';

export interface NotifyOptions extends AttachmentOptions {
  /** An explicit 16-byte UUID for the message (sent on the wire; e.g. an idempotency key). */
  uuid?: Uint8Array;
  /** The payload is a Uint8Array sent as is, not encoded with the codec. */
  raw?: boolean;
}

export interface CallOptions extends NotifyOptions {
  /**
   * Milliseconds until the call fails with `ERR_TIMEOUT` (and is cancelled).
   * It runs until the first response for `call`/`request`, until the last
   * one for `callMany`/`requestMany`, and includes time spent queued.
   * 0 = none; default: the peer's `defaultTimeoutMs`.
   */
  timeoutMs?: number;
  /** Aborting it cancels the call: it fails with `ERR_CANCELLED` (the signal's reason as `cause`) and CANCEL is sent. */
  signal?: AbortSignal;
  /** With `raw`, responses are not decoded: `value` is the payload bytes. */
  raw?: boolean;
}

/** How a call's outcome reaches whoever waits for it. */
export interface CallSink {
  response(response: ReceivedResponse): void;
  end(): void;
  fail(error: Error): void;
}

/**
 * `queued`: waiting for a slot under the peer's maxConcurrentCalls;
 * `draining`: `call`/`request` got a first response that was not the last,
 * later ones are dropped until the call ends.
 */
export type CallState = 'queued' | 'sent' | 'draining' | 'done';

/** `first`: `call`/`request`; `many`: `callMany`/`requestMany`. */
export type CallMode = 'first' | 'many';

/** No streams: shared by every call that has none (most), never mutated. */
const NO_UPLOADS: readonly OutboundStream[] = [];
export const NO_RESPONSE_STREAMS: readonly InboundStream[] = [];

export class OutgoingCall {
  id = 0;
  state: CallState = 'queued';
  timer: unknown = null;
  abortListener: (() => void) | null = null;
  uploads: readonly OutboundStream[] = NO_UPLOADS;
  /** Streams of responses handed over while the call goes on (replaced, never mutated). */
  responseStreams: readonly InboundStream[] = NO_RESPONSE_STREAMS;

  constructor(
    readonly action: string,
    readonly payload: Uint8Array,
    readonly uuid: Uint8Array | null,
    readonly planned: readonly PlannedAttachment[],
    readonly raw: boolean,
    readonly mode: CallMode,
    public sink: CallSink,
    readonly signal: AbortSignal | undefined,
  ) {}
}

/** Drops what a draining call still receives. */
export const DISCARD: CallSink = { response: stopAttachments, end: () => {}, fail: () => {} };

/** Stops the streams of a response nobody will read. */
export function stopAttachments(response: RpcResponse): void {
  for (const stream of response.streams) stream.stop();
  for (const file of response.files) file.stream.stop();
}

interface Waiter {
  resolve(result: IteratorResult<RpcResponse>): void;
  reject(error: Error): void;
}

/**
 * The responses of a `requestMany` call, as an async iterator. Responses are
 * queued until taken. Ending the iteration early (`break`, `return()`)
 * cancels the call and stops the streams of responses not taken.
 */
export class ResponseQueue implements CallSink, AsyncIterableIterator<RpcResponse> {
  private readonly items: ReceivedResponse[] = [];
  private ended = false;
  private failure: Error | null = null;
  private waiter: Waiter | null = null;
  private closed = false;

  constructor(private readonly cancel: () => void) {}

  response(response: ReceivedResponse): void {
    if (this.closed) {
      stopAttachments(response);
      return;
    }
    if (response.last) this.ended = true;
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      waiter.resolve({ done: false, value: response });
    } else {
      this.items.push(response);
    }
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = error;
    this.wake();
  }

  next(): Promise<IteratorResult<RpcResponse>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ done: false, value: item });
    if (this.ended || this.closed) return this.finish();
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<RpcResponse>> {
    if (!this.closed) {
      this.closed = true;
      if (!this.ended) this.cancel();
      for (const item of this.items.splice(0)) stopAttachments(item);
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private finish(): Promise<IteratorResult<RpcResponse>> {
    const failure = this.failure;
    if (failure !== null && !this.closed) {
      this.failure = null;
      this.closed = true;
      return Promise.reject(failure);
    }
    this.closed = true;
    return Promise.resolve({ done: true, value: undefined });
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter === null) return;
    this.waiter = null;
    this.finish().then(waiter.resolve, waiter.reject);
  }
}

/**
 * `source` with every response mapped by `map`; ending the iteration early
 * ends `source` (cancelling its call) even before the first `next()`.
 */
export function mapResponses<T>(source: AsyncIterableIterator<RpcResponse>, map: (response: RpcResponse) => T): AsyncIterableIterator<T> {
  const iterator: AsyncIterableIterator<T> = {
    next: async () => {
      const result = await source.next();
      return result.done === true ? { done: true, value: undefined } : { done: false, value: map(result.value) };
    },
    return: async () => {
      await source.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}
