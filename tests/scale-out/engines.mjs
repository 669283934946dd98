// The scenarios that hold for every broker engine (Redis, NATS), written
// once and run by each engine's test file with the engine's own way to
// start its server and nodes and to count subscriptions.
import assert from 'node:assert/strict';
import { connect, jsonCodec } from 'switchboard-client/node';
import { startNats } from '../helpers/nats.mjs';
import { startRedis } from '../helpers/redis.mjs';
import { sleep, startNatsNode, startNode, until, wsClient } from './helpers.mjs';

let runs = 0;

export const redis = {
  start: startRedis,
  startNode,
  /** A prefix of its own per test, so leftovers of one cannot pass another. */
  freshPrefix: () => `sbtest${process.pid}x${++runs}:`,
  /** How many nodes subscribe the broker channel `name`. */
  subscribers: async (server, name) => (await server.numsub(name))[name],
};

export const nats = {
  start: startNats,
  startNode: startNatsNode,
  /** NATS: the prefix ends in `.`, a token of its own. */
  freshPrefix: () => `sbtest${process.pid}x${++runs}.`,
  subscribers: (server, name) => server.numsub(name),
};

/** A protocol client of `node` that joins `channel` and collects into `into`. */
export async function rpcClient(t, node, channel, into) {
  const client = await connect(`tcp://127.0.0.1:${node.rpc}`, { reconnect: false, codecs: [jsonCodec] });
  t.after(() => client.close());
  client.handle(channel, (payload) => into.push(payload));
  assert.equal(await client.call('join', channel), true);
  return client;
}

/**
 * A publish from `from` to `channel` until one reaches `to` (a WebSocket
 * client): tolerates the moments a node is reconnecting. Each attempt's
 * text is `<what> <n>`, distinct.
 */
export function publisher(from, to, channel) {
  let n = 0;
  return async (what) => {
    await until(async () => {
      const text = `${what} ${++n}`;
      const reply = await from.publish(channel, text);
      if (reply.error) return false;
      await sleep(50);
      return to.received.includes(text);
    }, what, 10_000);
  };
}

/**
 * Two concurrent bursts (from A and B) to one channel subscribed on three
 * nodes; what each subscriber received, B's and C's WebSocket clients and
 * A's protocol client.
 */
export async function burstOrders(t, engine, count) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => engine.startNode(t, server, { prefix })));
  const onB = await wsClient(t, b);
  const onC = await wsClient(t, c);
  assert.equal(await onB.command('sub:race'), 'ok:sub:race');
  assert.equal(await onC.command('sub:race'), 'ok:sub:race');
  const onA = [];
  await rpcClient(t, a, 'race', onA);
  await until(async () => (await engine.subscribers(server, `${prefix}race`)) === 3, 'three nodes to subscribe');

  const bursts = await Promise.all([a.request('burst', { channel: 'race', tag: 'a', count }), b.request('burst', { channel: 'race', tag: 'b', count })]);
  assert.deepEqual(bursts.map((r) => r.result), [count, count]);
  await until(() => onB.received.length === 2 * count && onC.received.length === 2 * count && onA.length === 2 * count, 'every message everywhere', 10_000);
  return [onB.received.map((m) => JSON.parse(m)), onC.received.map((m) => JSON.parse(m)), onA];
}

/** Each of `tags`' `count` messages arrive in its order in `order`. */
export function assertPublisherOrder(order, tags, count) {
  for (const tag of tags) {
    const mine = order.filter((m) => m.startsWith(`${tag}:`));
    assert.deepEqual(mine, Array.from({ length: count }, (_, i) => `${tag}:${i}`), `${tag}'s messages in its order`);
  }
}

/** The last subscriber leaving unsubscribes after unsubscribeDelay; coming back within it keeps the subscription. */
export async function unsubscribeDelay(t, engine) {
  const server = await engine.start(t);
  const prefix = engine.freshPrefix();
  const node = await engine.startNode(t, server, { prefix, unsubscribeDelay: 0.5 });
  const ws = await wsClient(t, node);
  const subscribed = () => engine.subscribers(server, `${prefix}news`);

  assert.equal(await ws.command('sub:news'), 'ok:sub:news');
  await until(async () => (await subscribed()) === 1, 'the subscription');
  assert.equal(await ws.command('unsub:news'), 'ok:unsub:news');
  await sleep(200);
  assert.equal(await subscribed(), 1, 'still subscribed within the delay');
  const left = Date.now();
  await until(async () => (await subscribed()) === 0, 'the unsubscribe', 3000);
  assert.ok(Date.now() - left >= 250, 'not before the delay');

  // Leave and come back within the delay: still subscribed, still delivered.
  assert.equal(await ws.command('sub:news'), 'ok:sub:news');
  await until(async () => (await subscribed()) === 1, 'the subscription again');
  assert.equal(await ws.command('unsub:news'), 'ok:unsub:news');
  assert.equal(await ws.command('sub:news'), 'ok:sub:news');
  await sleep(900);
  assert.equal(await subscribed(), 1, 'the pending unsubscribe was cancelled');
  assert.equal((await node.publish('news', 'still here')).result, 1);
  await until(() => ws.received.includes('still here'), 'delivery after the cancelled unsubscribe');
}

/** A publish right after the first subscription on the same node reaches the new subscriber. */
export async function subscribeThenPublish(t, engine) {
  const server = await engine.start(t);
  const node = await engine.startNode(t, server, { prefix: engine.freshPrefix() });
  const ws = await wsClient(t, node);
  // Each round is a channel nobody had: the publish must not overtake its
  // subscription (with Redis they go on two connections).
  for (let i = 0; i < 20; i++) {
    assert.equal(await ws.command(`subpub:fresh${i}:m${i}`), `ok:subpub:fresh${i}:m${i}`);
  }
  await until(() => ws.received.length === 20, 'all twenty messages', 3000);
  assert.deepEqual(ws.received, Array.from({ length: 20 }, (_, i) => `m${i}`));
}
