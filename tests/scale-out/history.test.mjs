// History and recovery through Redis (docs/scale-out.md, "History and
// recovery"): separate Switchboard processes on one real redis-server.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startRedis } from '../helpers/redis.mjs';
import { collect, movableClient, recoverAcrossNodes, silencingProxy, sleep, startNode, until, wsClient } from './helpers.mjs';

let runs = 0;
const freshPrefix = () => `sbhist${process.pid}x${++runs}:`;
const history = [{ channels: 'h.*', size: 50, ttl: 60 }];

test('publications on a channel with history carry contiguous positions on every node; history() reads them back', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, history })));
  const client = await movableClient(t, { node: c });
  const feed = collect(client, 'h.room', { recover: true });
  await feed.subscription.ready;

  // Two publishers on two nodes, interleaved: one order, offsets 1..10.
  for (let i = 0; i < 5; i++) {
    assert.equal((await a.publish('h.room', JSON.stringify(`a${i}`))).error, undefined);
    assert.equal((await b.publish('h.room', JSON.stringify(`b${i}`))).error, undefined);
  }
  await until(() => feed.received.length === 10, 'ten publications');
  const offsets = feed.received.map((r) => r.position.offset);
  assert.deepEqual(offsets, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const epoch = feed.received[0].position.epoch;
  assert.match(epoch, /^[0-9a-f]{16}$/);
  assert.ok(feed.received.every((r) => r.position.epoch === epoch));
  // A publish is accepted before Redis runs it, so the two publishers
  // interleave as Redis ran them; each one's own order holds.
  const values = feed.received.map((r) => r.value);
  assert.deepEqual(values.filter((v) => v.startsWith('a')), ['a0', 'a1', 'a2', 'a3', 'a4']);
  assert.deepEqual(values.filter((v) => v.startsWith('b')), ['b0', 'b1', 'b2', 'b3', 'b4']);

  // The history, from any node, in the same order with the same offsets.
  const page = (await b.request('history', { channel: 'h.room', query: {} })).result;
  assert.equal(page.epoch, epoch);
  assert.equal(page.offset, 10);
  assert.equal(page.continuous, true);
  assert.deepEqual(page.publications.map((p) => p.offset), offsets);
  assert.deepEqual(page.publications.map((p) => JSON.parse(p.data)), feed.received.map((r) => r.value));
  // The newest `limit` without `since`; exactly what followed with it.
  const newest = (await a.request('history', { channel: 'h.room', query: { limit: 3 } })).result;
  assert.deepEqual(newest.publications.map((p) => p.offset), [8, 9, 10]);
  const after = (await a.request('history', { channel: 'h.room', query: { since: { epoch, offset: 7 } } })).result;
  assert.deepEqual(after.publications.map((p) => p.offset), [8, 9, 10]);
  assert.equal(after.continuous, true);
  // Another epoch is not continuous.
  const other = (await a.request('history', { channel: 'h.room', query: { since: { epoch: '0000000000000001', offset: 7 } } })).result;
  assert.equal(other.continuous, false);

  // A channel without history, and bad positions, are refused clearly.
  assert.equal((await a.request('history', { channel: 'plain', query: {} })).error, 'ERR_HISTORY_UNAVAILABLE');
  assert.equal((await a.request('history', { channel: 'h.room', query: { since: { epoch: 'nope', offset: 1 } } })).error, 'ERR_INVALID_OPTION');

  // Keys: a stream and a meta hash, one hash tag per channel.
  assert.deepEqual((await redis.cli('KEYS', `${prefix}{h.room}*`)).split('\n').filter(Boolean).sort(), [`${prefix}{h.room}:history`, `${prefix}{h.room}:meta`]);
});

test('a client whose node is killed reconnects to another node and recovers exactly what it missed, then the live stream', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, history })));
  const target = { node: b };
  const client = await movableClient(t, target);
  const feed = collect(client, 'h.feed', { recover: true });
  await feed.subscription.ready;
  // A plain subscriber of the same channel on C, for comparison.
  const watcher = await wsClient(t, c);
  assert.equal(await watcher.command('sub:h.feed'), 'ok:sub:h.feed');

  await recoverAcrossNodes({ a, b, c, target, feed, channel: 'h.feed' });
  assert.deepEqual(feed.gaps, [], 'nothing was lost, so no gap');
  assert.equal(feed.subscription.state, 'subscribed');
  await until(() => watcher.received.length === 12, 'the plain subscriber');
});

test('when the history no longer covers what was missed, the client is told (gap), nothing old is replayed, and the live stream goes on', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const small = [{ channels: 'h.*', size: 3, ttl: 60 }];
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, history: small })));
  const target = { node: b };
  const client = await movableClient(t, target);
  const feed = collect(client, 'h.small', { recover: true });
  await feed.subscription.ready;
  await a.publish('h.small', '"first"');
  await until(() => feed.received.length === 1, 'the first');

  target.node = null;
  b.child.kill('SIGKILL');
  await until(() => feed.states.includes('resubscribing'), 'the loss');
  for (let i = 0; i < 5; i++) await a.publish('h.small', JSON.stringify(`missed${i}`)); // 2..6: only 4..6 are kept
  target.node = c;
  await until(() => feed.gaps.length === 1, 'the gap', 10_000);
  assert.equal(feed.gaps[0].reason, 'reconnect');
  await a.publish('h.small', '"live"');
  await until(() => feed.received.length === 2, 'the live one');
  await sleep(100);
  assert.deepEqual(feed.received.map((r) => r.value), ['first', 'live']);
  assert.equal(feed.received[1].position.offset, 7);
});

test('a node whose pub/sub connection is killed during traffic fills the gap from the history: every subscriber gets every message once, in order', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const big = [{ channels: 'h.*', size: 1000, ttl: 60 }];
  const [a, b] = await Promise.all([0, 1].map(() => startNode(t, redis, { prefix, history: big })));
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:h.burst'), 'ok:sub:h.burst');
  await until(async () => (await redis.numsub(`${prefix}h.burst`))[`${prefix}h.burst`] === 1, 'B to subscribe');
  await a.publish('h.burst', '"start"');
  await until(() => onB.received.length === 1, 'the first message');

  // A publishes while Redis drops B's pub/sub connection, twice.
  const burst = a.request('burst', { channel: 'h.burst', tag: 'm', count: 400 });
  await sleep(20);
  // B's, and A's (for its node channels).
  assert.ok(Number(await redis.cli('CLIENT', 'KILL', 'TYPE', 'pubsub')) >= 1);
  await sleep(60);
  await redis.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
  assert.equal((await burst).result, 400);
  await a.publish('h.burst', '"end"');

  const expected = ['"start"', ...Array.from({ length: 400 }, (_, i) => JSON.stringify(`m:${i}`)), '"end"'];
  await until(() => onB.received.length >= expected.length, 'every message on B', 10_000);
  await sleep(100);
  assert.deepEqual(onB.received, expected);
});

test('a subscription gone silent is found by the probes: the node subscribes again and fills the gap from the history', async (t) => {
  const redis = await startRedis(t);
  const proxy = await silencingProxy(t, redis);
  const prefix = freshPrefix();
  const a = await startNode(t, redis, { prefix, history });
  const b = await startNode(t, { url: proxy.url }, { prefix, history, env: { PROBE_INTERVAL: '0.2' } });
  const onB = await wsClient(t, b);
  assert.equal(await onB.command('sub:h.quiet'), 'ok:sub:h.quiet');
  await until(async () => (await redis.numsub(`${prefix}h.quiet`))[`${prefix}h.quiet`] === 1, 'B to subscribe');
  await a.publish('h.quiet', '"before"');
  await until(() => onB.received.length === 1, 'the first message');

  // B's pub/sub connection stays open and says nothing more.
  assert.ok(proxy.muteSubscribers() >= 1);
  for (let i = 0; i < 5; i++) await a.publish('h.quiet', JSON.stringify(`during ${i}`));
  await sleep(100);
  assert.equal(onB.received.length, 1, 'nothing arrives over the silent subscription');

  // Within two probe intervals B notices, subscribes again on a new
  // connection, and fills the gap from the history.
  await until(() => onB.received.length === 6, 'the missed five, after B subscribed again', 5000);
  await a.publish('h.quiet', '"after"');
  await until(() => onB.received.length === 7, 'the live stream again');
  assert.deepEqual(onB.received, ['"before"', ...Array.from({ length: 5 }, (_, i) => JSON.stringify(`during ${i}`)), '"after"']);
});

test('a slow node (stopped, its pub/sub connection dropped by Redis for its backlog) holds nobody else up, and catches up in order from the history when it resumes', async (t) => {
  const redis = await startRedis(t);
  const prefix = freshPrefix();
  const big = [{ channels: 'h.*', size: 5000, ttl: 60 }];
  // The clients here take 12 MB at once: no slow-consumer drops.
  const env = { MAX_BACKPRESSURE: String(64 * 1024 * 1024) };
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => startNode(t, redis, { prefix, history: big, env })));
  const onB = await wsClient(t, b);
  const onC = await wsClient(t, c);
  for (const client of [onB, onC]) assert.equal(await client.command('sub:h.slow'), 'ok:sub:h.slow');
  await until(async () => (await redis.numsub(`${prefix}h.slow`))[`${prefix}h.slow`] === 2, 'B and C to subscribe');
  // Redis drops a subscriber whose unread output passes 1 MiB.
  await redis.cli('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1mb 1mb 0');

  const pubsubClients = async () => [...(await redis.cli('CLIENT', 'LIST', 'TYPE', 'pubsub')).matchAll(/\bid=(\d+)/g)].map((m) => m[1]);
  const before = await pubsubClients();
  b.child.kill('SIGSTOP');
  t.after(() => b.child.kill('SIGCONT'));
  // More than the socket buffers between Redis and B hold, so Redis's own
  // buffer for B fills and Redis drops B's pub/sub connection.
  const count = 4000;
  const payload = (i) => JSON.stringify(`${i}:${'x'.repeat(3000)}`);
  const burst = [];
  for (let i = 0; i < count; i++) burst.push(a.publish('h.slow', payload(i)));
  for (const reply of await Promise.all(burst)) assert.equal(reply.error, undefined);
  // C is not held up by B.
  await until(() => onC.received.length === count, 'all on C while B is stopped', 20_000);
  // Redis dropped B's pub/sub connection.
  await until(async () => (await pubsubClients()).length < before.length, "Redis to drop B's connection");

  b.child.kill('SIGCONT');
  await until(() => onB.received.length >= count, 'all on B after it resumed', 15_000);
  await sleep(100);
  assert.deepEqual(onB.received, Array.from({ length: count }, (_, i) => payload(i)), 'each once, in order');
  assert.deepEqual(onC.received, onB.received);
});
