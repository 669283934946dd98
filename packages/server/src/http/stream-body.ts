/**
 * `res.stream(source)`: a Node `Readable` (or any async iterable of
 * strings and bytes) piped into a response body at the client's pace.
 *
 * Backpressure: the next piece is pulled from the source only once
 * `write` took the last one, or after `'drain'` when it said the client is
 * behind; a `Readable` pauses itself meanwhile (its `highWaterMark` is all
 * it buffers). So a slow client holds the source's buffer, a quarter of
 * `maxBackpressure` in the connection's queue and nothing more, however
 * large the source. The writes start only once the response is first in
 * line: before, `write` would queue every piece in the worker.
 *
 * Endings: the source's end ends the response. A client that leaves
 * destroys the source. A source that fails before the first byte goes to
 * the error handlers; after it, only cutting the connection tells the
 * client (a `Content-Length` was promised, or the chunked body cannot
 * carry an error), and the error is reported (`handlerError`).
 */
import { SwitchboardError } from '../errors.js';
import type { Response } from './response.js';

/** What `res.stream` takes. */
export type BodySource = AsyncIterable<string | Uint8Array> | NodeJS.ReadableStream;

interface Destroyable {
  destroy?: (error?: Error) => void;
}

/** Pipe `source` into `res`; never rejects. */
export async function pipeBody(res: Response, source: BodySource): Promise<void> {
  const destroy = (): void => (source as Destroyable).destroy?.();
  if (source === null || typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') {
    fail(res, new SwitchboardError('ERR_INVALID_OPTION', 'res.stream(source): source must be a Readable or an async iterable'), false);
    return;
  }
  // A client that leaves while the source is slow to produce: destroy it
  // at once (the loop below then ends with the source's premature close).
  res.on('close', destroy);
  await res.whenFirst();
  let started = false;
  try {
    for await (const piece of source as AsyncIterable<unknown>) {
      if (res.closed) break;
      if (typeof piece !== 'string' && !(piece instanceof Uint8Array)) {
        throw new SwitchboardError('ERR_INVALID_OPTION', 'res.stream(source): a piece was neither a string nor bytes');
      }
      started = true;
      if (!res.write(piece)) {
        await res.whenDrained();
        if (res.closed) break;
      }
    }
  } catch (error) {
    if (!res.closed) fail(res, error, started);
    destroy();
    return;
  }
  if (res.closed) {
    destroy();
    return;
  }
  res.end();
}

function fail(res: Response, error: unknown, started: boolean): void {
  if (!started && !res.headersSent && res.routeError) {
    res.routeError(error);
    return;
  }
  res.report(error instanceof Error ? error : new Error(String(error)));
  res.abortConnection();
}
