// Small helpers shared by the client tests.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `predicate` until it is true, or fails after `ms`. */
export async function until(predicate, what = 'condition', ms = 5000) {
  const end = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Asserts that `promise` rejects with an error whose `code` is `code`; returns the error. */
export async function rejectsWith(promise, code) {
  let caught;
  await assert.rejects(promise, (error) => {
    caught = error;
    assert.equal(error.code, code, error.stack);
    return true;
  });
  return caught;
}

/** Records the client's events in order: [{ type, event }]. */
export function recordEvents(client, types = ['statechange', 'connecting', 'open', 'disconnect', 'reconnecting', 'closed', 'goaway']) {
  const log = [];
  for (const type of types) client.on(type, (event) => log.push({ type, event }));
  return log;
}

export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

export async function sha256File(file) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk);
  return hash.digest('hex');
}

/** A fresh path in the temporary directory. */
export function tmpPath(name) {
  return path.join(os.tmpdir(), `sb-client-${process.pid}-${Math.random().toString(36).slice(2)}-${name}`);
}

/**
 * Wraps a TransportFactory to count what the client receives: `stats.chunks`
 * (onData calls) and `stats.bytes`.
 */
export function counting(factory) {
  const stats = { chunks: 0, bytes: 0 };
  const wrapped = (handlers) =>
    factory({
      ...handlers,
      onData(bytes) {
        stats.chunks += 1;
        stats.bytes += bytes.length;
        handlers.onData(bytes);
      },
    });
  return { factory: wrapped, stats };
}
