// Scale-out through Redis (docs/scale-out.md): separate Switchboard
// processes on one real redis-server, started by the test, act as one.
// The scenarios every engine shares are in engines.mjs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../helpers/redis.mjs';
import { assertPublisherOrder, burstOrders, publisher, redis as engine, rpcClient, subscribeThenPublish, unsubscribeDelay } from './engines.mjs';
import { sleep, startNode, until, userChannels, wsClient } from './helpers.mjs';

const freshPrefix = engine.freshPrefix;

test('a publish on one node reaches WebSocket and protocol subscribers on the others; idle nodes stay unsubscribed', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const unsubscribeDelay = 30; // longer than the test: only a goodbye can unsubscribe
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, unsubscribeDelay })));

  const b1 = await wsClient(t, b);
  const b2 = await wsClient(t, b);
  assert.equal(await b1.command('sub:room'), 'ok:sub:room');
  assert.equal(await b2.command('sub:room'), 'ok:sub:room');
  const onC = [];
  await rpcClient(t, c, 'room', onC);

  // B and C subscribed once each in Redis (two local subscribers on B are
  // one subscription); A, with no subscriber, did not subscribe at all.
  await until(async () => (await redis.numsub(`${prefix}room`))[`${prefix}room`] === 2, 'B and C to subscribe');
  // (The nodes' own channels, `<prefix>\xFF...`, are not channels.)
  const channels = await userChannels(redis, prefix);
  assert.deepEqual(channels, [`${prefix}room`]);

  // A has no local subscriber: it counts 0, and the message still arrives.
  assert.equal((await a.publish('room', '"hello"')).result, 0);
  await until(() => b1.received.length === 1 && b2.received.length === 1 && onC.length === 1, 'the first message everywhere');
  assert.deepEqual([b1.received, b2.received, onC], [['"hello"'], ['"hello"'], ['hello']]);

  // Binary stays binary across nodes.
  const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff]);
  assert.equal((await a.request('publish', { channel: 'room', bytes: bytes.toString('base64') })).result, 0);
  await until(() => b1.received.length === 2, 'the binary message');
  assert.ok(Buffer.isBuffer(b1.received[1]) && b1.received[1].equals(bytes), 'a Buffer with the same bytes');

  // ws.publish leaves out its sender, on its own node only.
  assert.equal(await b2.command('pub:room:"from b2"'), 'ok:pub:room:"from b2"');
  await until(() => b1.received.length === 3 && onC.length === 2, 'b2 publish on B and C');
  assert.equal(b1.received[2], '"from b2"');
  assert.equal(onC[1], 'from b2');
  await sleep(100);
  assert.equal(b2.received.length, 2, 'the sender did not get its own message');

  // A node that closes gracefully first sends what it accepted, then
  // unsubscribes at once, not after the delay.
  assert.equal((await c.request('close', { channel: 'room', tag: 'last', count: 2000 })).result, true);
  assert.equal((await redis.numsub(`${prefix}room`))[`${prefix}room`], 1);
  const last = Array.from({ length: 2000 }, (_, i) => JSON.stringify(`last:${i}`));
  await until(() => b1.received.length === 2003, 'the closing node\'s last publishes');
  assert.deepEqual(b1.received.slice(3), last);
});

test('virtual sockets on another node get their tags, once per virtual socket', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => startNode(t, redis, { prefix })));
  const ws = await wsClient(t, b);
  assert.equal(await ws.command('vsub:tagged:one|'), 'ok:vsub:tagged:one|');
  assert.equal(await ws.command('vsub:tagged:two|'), 'ok:vsub:tagged:two|');
  assert.equal(await ws.command('sub:tagged'), 'ok:sub:tagged');
  await until(async () => (await redis.numsub(`${prefix}tagged`))[`${prefix}tagged`] === 1, 'B to subscribe once');
  assert.equal((await a.publish('tagged', 'news')).result, 0);
  await until(() => ws.received.length === 3, 'three deliveries');
  assert.deepEqual([...ws.received].sort(), ['news', 'one|news', 'two|news']);
});

test('per-channel order holds with concurrent publishers on two nodes: every subscriber sees one order', async (t) => {
  const count = 300;
  const [order, ...others] = await burstOrders(t, engine, count);
  assert.deepEqual(others[0], order, 'B and C saw one order');
  assert.deepEqual(others[1], order, 'the protocol subscriber on A saw it too');
  assertPublisherOrder(order, ['a', 'b'], count);
  const interleaved = order.findIndex((m) => m.startsWith('b:')) < order.findLastIndex((m) => m.startsWith('a:'));
  t.diagnostic(`the two bursts interleaved: ${interleaved}`);
});

test('the last subscriber leaving unsubscribes after unsubscribeDelay; coming back within it keeps the subscription', (t) => unsubscribeDelay(t, engine));

test('a publish right after the first subscription on the same node reaches the new subscriber', (t) => subscribeThenPublish(t, engine));

test('nodes resubscribe after CLIENT KILL and after a Redis restart; a failed PUBLISH is counted as lost; publishes while Redis is down fail with ERR_BROKER_UNAVAILABLE', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b] = await Promise.all([0, 1].map(() => startNode(t, redis, { prefix })));
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:live'), 'ok:sub:live');
  const subscribed = async () => (await redis.numsub(`${prefix}live`))[`${prefix}live`];
  await until(async () => (await subscribed()) === 1, 'B to subscribe');

  const reaches = publisher(a, onB, 'live');
  await reaches('before');

  // Redis drops every pub/sub connection: the nodes notice and resubscribe.
  // (Each node's has a subscription, its node channels, even A's.)
  const pubsubClients = async () => [...(await redis.cli('CLIENT', 'LIST', 'TYPE', 'pubsub')).matchAll(/\bid=(\d+)/g)].map((m) => m[1]);
  const before = await pubsubClients();
  const killed = Number(await redis.cli('CLIENT', 'KILL', 'TYPE', 'pubsub'));
  assert.equal(killed, 2, "A's and B's pub/sub connections");
  // New connections (other client ids) hold the subscriptions again.
  await until(async () => {
    const now = await pubsubClients();
    return (await subscribed()) === 1 && now.length === 2 && !now.some((id) => before.includes(id));
  }, 'the nodes to resubscribe');
  await reaches('after CLIENT KILL');

  // A's command connection (the one whose last command was a PUBLISH)
  // dies alone: the next publish is accepted and its PUBLISH fails. It is
  // not sent twice; it is counted as lost, and A reconnects for the next.
  assert.equal((await a.request('stats')).result.brokerPublishesLost, 0);
  const publishers = [...(await redis.cli('CLIENT', 'LIST')).matchAll(/\bid=(\d+)\b.*\bcmd=publish\b/g)].map((m) => m[1]);
  assert.equal(publishers.length, 1, "A's command connection");
  assert.equal(await redis.cli('CLIENT', 'KILL', 'ID', publishers[0]), '1');
  assert.equal((await a.publish('live', 'lost')).result, 0);
  await until(async () => (await a.request('stats')).result.brokerPublishesLost === 1, 'the lost publish to be counted');
  await reaches('after the command connection was replaced');
  assert.ok(!onB.received.includes('lost'));

  // Redis goes away: publishes fail, on the server and on a connection.
  await redis.stop();
  const refused = await until(async () => {
    const reply = await a.publish('live', 'into the void');
    return reply.error;
  }, 'a refused publish');
  assert.equal(refused, 'ERR_BROKER_UNAVAILABLE');
  assert.equal(await onB.command('pub:live:x'), 'err:ERR_BROKER_UNAVAILABLE');

  // Redis comes back (empty, on the same port): B subscribes again, and
  // publishes flow.
  await redis.start();
  await until(async () => (await subscribed()) === 1, 'B to resubscribe after the restart', 10_000);
  await reaches('after the restart');
  assert.ok(!onB.received.includes('into the void'), 'a refused publish is not delivered later');
});
