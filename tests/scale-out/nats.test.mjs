// Scale-out through NATS (docs/scale-out.md, "NATS"): separate Switchboard
// processes on one real nats-server, started by the test, act as one.
// Subscriptions are read from the server's monitoring endpoint
// (`/connz?subs=1`).
import test from 'node:test';
import assert from 'node:assert/strict';
import { connect, jsonCodec } from 'switchboard-client/node';
import { startNats } from '../helpers/nats.mjs';
import { sleep, startNatsNode, until, wsClient } from './helpers.mjs';

let runs = 0;
/** A prefix of its own per test (NATS: ending in `.`, a token of its own). */
const freshPrefix = () => `sbtest${process.pid}x${++runs}.`;

async function rpcClient(t, node, channel, into) {
  const client = await connect(`tcp://127.0.0.1:${node.rpc}`, { reconnect: false, codecs: [jsonCodec] });
  t.after(() => client.close());
  client.handle(channel, (payload) => into.push(payload));
  assert.equal(await client.call('join', channel), true);
  return client;
}

test('a publish on one node reaches WebSocket and protocol subscribers on the others; idle nodes stay unsubscribed; names are escaped', async (t) => {
  const nats = await startNats(t);
  const prefix = freshPrefix();
  const unsubscribeDelay = 30; // longer than the test: only a goodbye can unsubscribe
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNatsNode(t, nats, { prefix, unsubscribeDelay })));

  const b1 = await wsClient(t, b);
  const b2 = await wsClient(t, b);
  assert.equal(await b1.command('sub:room.1'), 'ok:sub:room.1');
  assert.equal(await b2.command('sub:room.1'), 'ok:sub:room.1');
  const onC = [];
  await rpcClient(t, c, 'room.1', onC);

  // B and C subscribed once each (two local subscribers on B are one
  // subscription); A, with no subscriber, did not subscribe at all.
  await until(async () => (await nats.numsub(`${prefix}room.1`)) === 2, 'B and C to subscribe');
  const all = Object.values(await nats.subscriptions()).flat();
  assert.deepEqual(all.filter((s) => s.startsWith(prefix)), [`${prefix}room.1`, `${prefix}room.1`]);

  // A has no local subscriber: it counts 0, and the message still arrives.
  assert.equal((await a.publish('room.1', '"hello"')).result, 0);
  await until(() => b1.received.length === 1 && b2.received.length === 1 && onC.length === 1, 'the first message everywhere');
  assert.deepEqual([b1.received, b2.received, onC], [['"hello"'], ['"hello"'], ['hello']]);

  // Binary stays binary across nodes.
  const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff]);
  assert.equal((await a.request('publish', { channel: 'room.1', bytes: bytes.toString('base64') })).result, 0);
  await until(() => b1.received.length === 2, 'the binary message');
  assert.ok(Buffer.isBuffer(b1.received[1]) && b1.received[1].equals(bytes), 'a Buffer with the same bytes');

  // ws.publish leaves out its sender, on its own node only.
  assert.equal(await b2.command('pub:room.1:"from b2"'), 'ok:pub:room.1:"from b2"');
  await until(() => b1.received.length === 3 && onC.length === 2, 'b2 publish on B and C');
  assert.equal(b1.received[2], '"from b2"');
  await sleep(100);
  assert.equal(b2.received.length, 2, 'the sender did not get its own message');

  // Names NATS would read as wildcards or empty tokens are escaped: a
  // subscriber of `*` or `a..b` gets its own channel's messages only.
  const odd = await wsClient(t, b);
  for (const name of ['*', 'a..b', 'sp ace', 'é>']) assert.equal(await odd.command(`sub:${name}`), `ok:sub:${name}`);
  await until(async () => (await nats.numsub(`${prefix}%2A`)) === 1 && (await nats.numsub(`${prefix}a.%2Eb`)) === 1
    && (await nats.numsub(`${prefix}sp%20ace`)) === 1 && (await nats.numsub(`${prefix}%C3%A9%3E`)) === 1, 'the escaped subscriptions');
  for (const name of ['x', '*', 'a..b', 'sp ace', 'é>']) assert.equal((await a.publish(name, `"to ${name}"`)).result, 0);
  await until(() => odd.received.length === 4, 'one message per escaped channel');
  await sleep(100);
  assert.deepEqual([...odd.received].sort(), ['"to *"', '"to a..b"', '"to sp ace"', '"to é>"'].sort());

  // A node that closes gracefully first sends what it accepted, then
  // unsubscribes at once, not after the delay.
  assert.equal((await c.request('close', { channel: 'room.1', tag: 'last', count: 2000 })).result, true);
  await until(async () => (await nats.numsub(`${prefix}room.1`)) === 1, 'C to leave');
  const last = Array.from({ length: 2000 }, (_, i) => JSON.stringify(`last:${i}`));
  await until(() => b1.received.length === 2003, 'the closing node\'s last publishes');
  assert.deepEqual(b1.received.slice(3), last);
});

test('per-channel order: each publisher\'s messages arrive in its order on every node', async (t) => {
  const nats = await startNats(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNatsNode(t, nats, { prefix })));
  const onB = await wsClient(t, b);
  const onC = await wsClient(t, c);
  assert.equal(await onB.command('sub:race'), 'ok:sub:race');
  assert.equal(await onC.command('sub:race'), 'ok:sub:race');
  const onA = [];
  await rpcClient(t, a, 'race', onA);
  await until(async () => (await nats.numsub(`${prefix}race`)) === 3, 'three nodes to subscribe');

  const count = 300;
  const bursts = await Promise.all([a.request('burst', { channel: 'race', tag: 'a', count }), b.request('burst', { channel: 'race', tag: 'b', count })]);
  assert.deepEqual(bursts.map((r) => r.result), [count, count]);
  await until(() => onB.received.length === 2 * count && onC.received.length === 2 * count && onA.length === 2 * count, 'every message everywhere', 10_000);
  const orders = [onB.received.map((m) => JSON.parse(m)), onC.received.map((m) => JSON.parse(m)), onA];
  for (const order of orders) {
    for (const tag of ['a', 'b']) {
      const mine = order.filter((m) => m.startsWith(`${tag}:`));
      assert.deepEqual(mine, Array.from({ length: count }, (_, i) => `${tag}:${i}`), `${tag}'s messages in its order`);
    }
  }
  // NATS orders per publishing connection only: how the two bursts
  // interleave may differ between nodes (docs/scale-out.md, "NATS").
  const same = orders.every((order) => JSON.stringify(order) === JSON.stringify(orders[0]));
  t.diagnostic(`the three nodes saw one interleaving: ${same}`);
});

test('the last subscriber leaving unsubscribes after unsubscribeDelay; coming back within it keeps the subscription', async (t) => {
  const nats = await startNats(t);
  const prefix = freshPrefix();
  const node = await startNatsNode(t, nats, { prefix, unsubscribeDelay: 0.5 });
  const ws = await wsClient(t, node);
  const subscribed = () => nats.numsub(`${prefix}news`);

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
});

test('a publish right after the first subscription on the same node reaches the new subscriber', async (t) => {
  const nats = await startNats(t);
  const node = await startNatsNode(t, nats, { prefix: freshPrefix() });
  const ws = await wsClient(t, node);
  for (let i = 0; i < 20; i++) {
    assert.equal(await ws.command(`subpub:fresh${i}:m${i}`), `ok:subpub:fresh${i}:m${i}`);
  }
  await until(() => ws.received.length === 20, 'all twenty messages', 3000);
  assert.deepEqual(ws.received, Array.from({ length: 20 }, (_, i) => `m${i}`));
});

test('nodes resubscribe after a nats-server restart; publishes while it is down fail with ERR_BROKER_UNAVAILABLE', async (t) => {
  const nats = await startNats(t);
  const prefix = freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => startNatsNode(t, nats, { prefix })));
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:live'), 'ok:sub:live');
  const subscribed = () => nats.numsub(`${prefix}live`);
  await until(async () => (await subscribed()) === 1, 'B to subscribe');

  // Publish until one arrives: tolerates the moments a node is reconnecting.
  let n = 0;
  const reaches = async (what) => {
    await until(async () => {
      const text = `${what} ${++n}`;
      const reply = await a.publish('live', text);
      if (reply.error) return false;
      await sleep(50);
      return onB.received.includes(text);
    }, what, 10_000);
  };
  await reaches('before');

  // NATS goes away: publishes fail, on the server and on a connection.
  await nats.stop();
  const refused = await until(async () => (await a.publish('live', 'into the void')).error, 'a refused publish');
  assert.equal(refused, 'ERR_BROKER_UNAVAILABLE');
  assert.equal(await onB.command('pub:live:x'), 'err:ERR_BROKER_UNAVAILABLE');
  // A channel subscribed while NATS is away is subscribed once it is back.
  assert.equal(await onB.command('sub:later'), 'ok:sub:later');

  // NATS comes back (empty, on the same port): B subscribes again, and
  // publishes flow.
  await nats.start();
  await until(async () => (await subscribed()) === 1 && (await nats.numsub(`${prefix}later`)) === 1, 'B to resubscribe after the restart', 10_000);
  await reaches('after the restart');
  assert.ok(!onB.received.includes('into the void'), 'a refused publish is not delivered later');
  assert.equal((await a.publish('later', 'later on')).result, 0);
  await until(() => onB.received.includes('later on'), 'the channel subscribed while NATS was away');
});
