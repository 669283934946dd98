/**
 * Calls made while the client has no usable connection (connecting,
 * reconnecting, or the server went away) wait here for the next open,
 * bounded by their timeout and abort signal.
 */

import type { NotifyOptions } from 'switchboard-rpc';
import { RpcError, RpcErrorCode, StreamWriter } from 'switchboard-rpc';

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

/** The callers waiting for the next open, released in the order they came. */
export class OpenWaiters {
  private readonly waiters = new Set<Waiter>();

  get size(): number {
    return this.waiters.size;
  }

  /**
   * Resolves at the next `open()`; rejects at `fail()`, when `timeoutMs`
   * (> 0) passes (`onTimeout()` is the error), or when `signal` aborts.
   */
  wait(timeoutMs: number, onTimeout: () => Error, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(cancelled(signal));
        return;
      }
      let timer: ReturnType<typeof setTimeout> | null = null;
      const done = (): void => {
        this.waiters.delete(waiter);
        if (timer !== null) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        resolve: () => {
          done();
          resolve();
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      const onAbort = (): void => waiter.reject(cancelled(signal!));
      if (timeoutMs > 0) timer = setTimeout(() => waiter.reject(onTimeout()), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  open(): void {
    for (const waiter of [...this.waiters]) waiter.resolve();
  }

  fail(error: Error): void {
    for (const waiter of [...this.waiters]) waiter.reject(error);
  }
}

function cancelled(signal: AbortSignal): RpcError {
  return new RpcError(RpcErrorCode.Cancelled, 'the call was cancelled', { cause: signal.reason });
}

/** The call carries streams or files: it cannot be sent twice (its sources may be consumed). */
export function hasAttachments(options: NotifyOptions | undefined): boolean {
  if (options === undefined) return false;
  return options.stream !== undefined || (options.streams?.length ?? 0) > 0 || (options.files?.length ?? 0) > 0;
}

/**
 * A call that never reached a connection: its StreamWriters would wait
 * forever, so they are closed (writes reject with `ERR_STREAM_CLOSED`).
 * The peer does this itself for calls it refuses, with an internal hook;
 * ending the writer's iterator is the public way to the same effect.
 */
export function releaseWriters(options: NotifyOptions | undefined): void {
  if (options === undefined) return;
  const sources = [options.stream, ...(options.streams ?? []), ...(options.files ?? []).map((file) => file.data)];
  for (const source of sources) {
    if (source instanceof StreamWriter && !source.isAttached) void source[Symbol.asyncIterator]().return?.();
  }
}

/**
 * An iterator for `callMany` / `requestMany` made before the connection is
 * usable: the call starts once `start` resolves. Ending the iteration
 * before then means the call is never sent.
 */
export function deferredIterator<T>(start: (isWanted: () => boolean) => Promise<AsyncIterableIterator<T> | null>): AsyncIterableIterator<T> {
  let inner: AsyncIterableIterator<T> | null = null;
  let returned = false;
  let failed = false;
  const started = start(() => !returned).then((iterator) => {
    inner = iterator;
    if (returned && iterator !== null) void iterator.return?.();
    return iterator;
  });
  started.catch(() => {}); // reported by next()
  const done: IteratorResult<T> = { done: true, value: undefined };
  const iterator: AsyncIterableIterator<T> = {
    async next(): Promise<IteratorResult<T>> {
      if (returned || failed) return done;
      let it: AsyncIterableIterator<T> | null;
      try {
        it = await started;
      } catch (error) {
        failed = true; // thrown once, like the peer's iterators
        throw error;
      }
      return it === null || returned ? done : it.next();
    },
    async return(): Promise<IteratorResult<T>> {
      returned = true;
      if (inner !== null) await inner.return?.();
      return done;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}
