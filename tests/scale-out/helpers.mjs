// Nodes (child processes running tests/fixtures/scale-out-node.mjs) and
// clients for the scale-out tests.
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';

const fixture = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'scale-out-node.mjs');

/** Wait until `check()` returns something truthy (it may throw meanwhile). */
export async function until(check, what, timeout = 5000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A node as a separate process on `redis`; `t.after` ends it. */
export async function startNode(t, redis, { prefix, unsubscribeDelay = 1, nodeTtl }) {
  const child = fork(fixture, [], {
    env: {
      ...process.env,
      REDIS_URL: redis.url,
      BROKER_PREFIX: prefix,
      UNSUBSCRIBE_DELAY: String(unsubscribeDelay),
      ...(nodeTtl !== undefined && { NODE_TTL: String(nodeTtl) }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  t.after(() => child.kill('SIGKILL'));
  const [ready] = await once(child, 'message');
  assert.equal(ready.ready, true);
  let next = 0;
  const pending = new Map();
  child.on('message', (reply) => {
    const settle = pending.get(reply.id);
    pending.delete(reply.id);
    settle?.(reply);
  });
  return {
    http: ready.http,
    rpc: ready.rpc,
    child,
    /** `{ result }` or `{ error: code }`. */
    request(op, fields = {}) {
      const id = ++next;
      child.send({ id, op, ...fields });
      return new Promise((resolve) => pending.set(id, resolve));
    },
    publish(channel, text) {
      return this.request('publish', { channel, text });
    },
  };
}

/** A WebSocket client of a node: commands answered in order, the rest kept. */
export async function wsClient(t, node) {
  const ws = new WebSocket(`ws://127.0.0.1:${node.http}/ws`);
  await once(ws, 'open');
  t.after(() => ws.terminate());
  const received = [];
  const replies = [];
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? null : data.toString();
    if (text !== null && (text.startsWith('ok:') || text.startsWith('err:'))) replies.shift()?.(text);
    else received.push(isBinary ? Buffer.from(data) : text);
  });
  return {
    ws,
    received,
    command(text) {
      ws.send(text);
      return new Promise((resolve) => replies.push(resolve));
    },
  };
}
