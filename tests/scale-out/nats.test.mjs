// Scale-out through NATS (docs/scale-out.md, "NATS"): separate Switchboard
// processes on one real nats-server, started by the test, act as one.
// Subscriptions are read from the server's monitoring endpoint
// (`/connz?subs=1`).
// The scenarios every engine shares are in engines.mjs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startNats } from '../helpers/nats.mjs';
import { assertPublisherOrder, burstOrders, nats as engine, publisher, rpcClient, subscribeThenPublish, unsubscribeDelay } from './engines.mjs';
import { sleep, startNatsNode, until, wsClient } from './helpers.mjs';

const freshPrefix = engine.freshPrefix;

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
  // (Node subjects, `<prefix>%%...`, are every node's: not channels.)
  const channels = all.filter((s) => s.startsWith(prefix) && !s.startsWith(`${prefix}%%`));
  assert.deepEqual(channels, [`${prefix}room.1`, `${prefix}room.1`]);

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
  const count = 300;
  const orders = await burstOrders(t, engine, count);
  for (const order of orders) assertPublisherOrder(order, ['a', 'b'], count);
  // NATS orders per publishing connection only: how the two bursts
  // interleave may differ between nodes (docs/scale-out.md, "NATS").
  const same = orders.every((order) => JSON.stringify(order) === JSON.stringify(orders[0]));
  t.diagnostic(`the three nodes saw one interleaving: ${same}`);
});

test('the last subscriber leaving unsubscribes after unsubscribeDelay; coming back within it keeps the subscription', (t) => unsubscribeDelay(t, engine));

test('a publish right after the first subscription on the same node reaches the new subscriber', (t) => subscribeThenPublish(t, engine));

test('nodes resubscribe after a nats-server restart; publishes while it is down fail with ERR_BROKER_UNAVAILABLE', async (t) => {
  const nats = await startNats(t);
  const prefix = freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => startNatsNode(t, nats, { prefix })));
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:live'), 'ok:sub:live');
  const subscribed = () => nats.numsub(`${prefix}live`);
  await until(async () => (await subscribed()) === 1, 'B to subscribe');

  const reaches = publisher(a, onB, 'live');
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
