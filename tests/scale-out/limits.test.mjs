// The broker option's checks and limits, in process: bad options, a Redis
// that is not there, and a Redis that stops answering (maxPendingPublishes).
import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Server } from 'switchboard';
import { startRedis } from '../helpers/redis.mjs';
import { until, wsClient } from './helpers.mjs';

test('bad broker options throw ERR_INVALID_OPTION', () => {
  const cases = [
    null,
    {},
    { redis: 'http://127.0.0.1:6379' },
    { redis: 'redis://127.0.0.1:6379', prefix: 5 },
    { redis: 'redis://127.0.0.1:6379', unsubscribeDelay: -1 },
    { redis: 'redis://127.0.0.1:6379', connectTimeout: Number.NaN },
    { redis: 'redis://127.0.0.1:6379', maxPendingPublishes: 1.5 },
    // Topologies: exactly one of redis and cluster, non-empty, distinct URLs.
    { redis: [] },
    { redis: ['redis://127.0.0.1:6379', 5] },
    { redis: ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'] },
    { cluster: [] },
    { cluster: 'http://127.0.0.1:7000' },
    { redis: 'redis://127.0.0.1:6379', cluster: ['redis://127.0.0.1:7000'] },
    // History: rules checked.
    { redis: 'redis://127.0.0.1:6379', history: {} },
    { redis: 'redis://127.0.0.1:6379', history: [{ channels: '' }] },
    { redis: 'redis://127.0.0.1:6379', history: [{ channels: 'a.*', size: 0 }] },
    { redis: 'redis://127.0.0.1:6379', history: [{ channels: 'a.*', ttl: 0.5 }] },
    { redis: 'redis://127.0.0.1:6379', historyMetaTtl: -1 },
    // Presence: patterns checked; Redis (standalone or a cluster) only.
    { redis: 'redis://127.0.0.1:6379', presence: 'chat.*' },
    { redis: 'redis://127.0.0.1:6379', presence: [''] },
    { redis: 'redis://127.0.0.1:6379', presence: ['a'], presenceTtl: 0 },
    { cluster: ['redis://127.0.0.1:7000'], presence: [''] },
    { nats: 'nats://127.0.0.1:4222', presence: ['*'] },
    // NATS: exactly one of redis, cluster and nats; nats:// URLs; a prefix
    // that can start a subject; no history.
    { nats: [] },
    { nats: 'redis://127.0.0.1:4222' },
    { nats: ['nats://127.0.0.1:4222', 'nats://127.0.0.1:4222'] },
    { nats: 'nats://127.0.0.1:4222', redis: 'redis://127.0.0.1:6379' },
    { nats: 'nats://127.0.0.1:4222', cluster: ['redis://127.0.0.1:7000'] },
    { nats: 'nats://127.0.0.1:4222', prefix: 'a..b.' },
    { nats: 'nats://127.0.0.1:4222', prefix: 'app.*.' },
    { nats: 'nats://127.0.0.1:4222', prefix: 'my app.' },
    { nats: 'nats://127.0.0.1:4222', history: [{ channels: '*' }] },
  ];
  for (const broker of cases) {
    assert.throws(() => new Server({ workers: 0, broker }), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(broker));
  }
});

test('with no Redis to reach, listen() waits connectTimeout only, publish throws ERR_BROKER_UNAVAILABLE, and close() is bounded', async (t) => {
  // A port nobody listens on.
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));

  const server = new Server({ workers: 0, broker: { redis: `redis://127.0.0.1:${port}`, connectTimeout: 0.2, maxReconnectDelay: 0.1 } });
  server.ws('/ws', { open: (ws) => ws.subscribe('room') });
  const listening = Date.now();
  await server.listen([{ host: '127.0.0.1', port: 0 }]);
  const waited = Date.now() - listening;
  assert.ok(waited >= 150 && waited < 1500, `listen() waited ${waited} ms for a broker with connectTimeout 0.2 s`);
  assert.throws(() => server.publish('room', 'hello'), { code: 'ERR_BROKER_UNAVAILABLE' });
  // Local operations are unaffected.
  assert.equal(server.numSubscribers('room'), 0);
  const started = Date.now();
  await server.close();
  assert.ok(Date.now() - started < 2000, `close took ${Date.now() - started} ms`);
});

test('past maxPendingPublishes a publish throws ERR_BROKER_BACKLOG; what was accepted arrives once Redis answers again', async (t) => {
  const redis = await startRedis(t);
  const server = new Server({ workers: 0, broker: { redis: redis.url, prefix: `sblimits${process.pid}:`, maxPendingPublishes: 1 } });
  server.ws('/ws', {
    message(ws, data) {
      ws.subscribe(data.toString());
      ws.send(`ok:${data}`);
    },
  });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0 }]);
  t.after(() => server.close());
  // listen() resolved once the broker was connected: a publish at once is
  // accepted (no subscriber yet: 0 recipients here).
  assert.equal(server.publish('room', 'early'), 0);
  const ws = await wsClient(t, { http: address.port });
  // This server subscribes a client to the channel it names, answering `ok:<name>`.
  assert.equal(await ws.command('room'), 'ok:room');
  assert.equal(server.publish('room', 'ready'), 1);
  await until(() => ws.received.includes('ready'), 'the first delivery');

  // Redis freezes: the first publish is written and waits for its answer,
  // the second waits in the queue (room for one), the third is refused.
  redis.pause();
  assert.equal(server.publish('room', 'one'), 1);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(server.publish('room', 'two'), 1);
  assert.throws(() => server.publish('room', 'three'), { code: 'ERR_BROKER_BACKLOG' });
  redis.resume();
  await until(() => ws.received.includes('two'), 'the accepted publishes');
  assert.deepEqual(ws.received.filter((m) => m !== 'ready'), ['one', 'two']);
});

test('a SUBSCRIBE that Redis refuses is retried with back-off, not in a loop, until Redis allows it', async (t) => {
  const redis = await startRedis(t);
  const prefix = `sbacl${process.pid}:`;
  const server = new Server({ workers: 0, broker: { redis: redis.url, prefix, maxReconnectDelay: 0.2 } });
  server.ws('/ws', {
    message(ws, data) {
      ws.subscribe(data.toString());
      ws.send(`ok:${data}`);
    },
  });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0 }]);
  t.after(() => server.close());
  // No channel may be used any more: SUBSCRIBE (and PUBLISH) get NOPERM.
  assert.equal(await redis.cli('ACL', 'SETUSER', 'default', 'resetchannels'), 'OK');
  const ws = await wsClient(t, { http: address.port });
  assert.equal(await ws.command('room'), 'ok:room');
  const connections = async () => Number(/total_connections_received:(\d+)/.exec(await redis.cli('INFO', 'stats'))[1]);
  const before = await connections();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const made = (await connections()) - before;
  // Back-off from 50 ms to 0.2 s: a handful per second (and redis-cli's own).
  assert.ok(made < 30, `${made} connections in a second`);
  assert.throws(() => server.publish('room', 'refused'), { code: 'ERR_BROKER_UNAVAILABLE' });

  assert.equal(await redis.cli('ACL', 'SETUSER', 'default', 'allchannels'), 'OK');
  await until(async () => (await redis.numsub(`${prefix}room`))[`${prefix}room`] === 1, 'the subscription once allowed');
  await until(() => {
    try {
      return server.publish('room', 'allowed') === 1;
    } catch {
      return false;
    }
  }, 'publishes to be accepted again');
  await until(() => ws.received.includes('allowed'), 'the delivery');
});
