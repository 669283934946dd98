// examples/broadcast with REDIS_URL or NATS_URL, started as its header
// says: two processes on one Redis (or one nats-server) are one room, so a
// message sent to either reaches the clients of both.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { startExample } from '../helpers/examples.mjs';
import { startNats } from '../helpers/nats.mjs';
import { startRedis } from '../helpers/redis.mjs';
import { until } from '../scale-out/helpers.mjs';

async function client(t, port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  await once(ws, 'open');
  t.after(() => ws.terminate());
  const received = [];
  ws.on('message', (data) => received.push(data.toString()));
  return { ws, received };
}

const engines = [
  {
    name: 'Redis',
    variable: 'REDIS_URL',
    scheme: 'redis',
    start: startRedis,
    // Each process subscribed the room once both clients are in.
    subscribers: async (redis) => (await redis.numsub('switchboard:room'))['switchboard:room'],
  },
  {
    name: 'NATS',
    variable: 'NATS_URL',
    scheme: 'nats',
    start: startNats,
    // The room's subject is `switchboard.room`.
    subscribers: (nats) => nats.numsub('switchboard.room'),
  },
];

for (const engine of engines) {
  test(`two broadcast processes with one ${engine.variable} form one room`, async (t) => {
    const broker = await engine.start(t);
    const ready = new RegExp(`listening on ws://127\\.0\\.0\\.1:(\\d+)/ \\(1 workers, channels through ${engine.scheme}://127\\.0\\.0\\.1:\\d+\\)`);
    const ports = [];
    for (let i = 0; i < 2; i++) {
      const started = await startExample('examples/broadcast/server.mjs', {
        env: { PORT: '0', WORKERS: '1', [engine.variable]: broker.url },
        ready,
      });
      t.after(() => started.child.kill('SIGKILL'));
      ports.push(Number(started.match[1]));
    }
    const one = await client(t, ports[0]);
    const two = await client(t, ports[1]);
    await until(async () => (await engine.subscribers(broker)) === 2, 'both processes to subscribe');
    one.ws.send('from one');
    await until(() => one.received.length === 1 && two.received.length === 1, 'the first message on both clients');
    two.ws.send('from two');
    await until(() => one.received.length === 2 && two.received.length === 2, 'both messages on both clients');
    assert.deepEqual(one.received, ['from one', 'from two']);
    assert.deepEqual(two.received, ['from one', 'from two']);
  });
}
