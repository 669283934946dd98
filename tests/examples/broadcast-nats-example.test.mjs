// examples/broadcast with NATS_URL, started as its header says: two
// processes on one nats-server are one room, so a message sent to either
// reaches the clients of both.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { startExample } from '../helpers/examples.mjs';
import { startNats } from '../helpers/nats.mjs';
import { until } from '../scale-out/helpers.mjs';

async function client(t, port) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
  await once(ws, 'open');
  t.after(() => ws.terminate());
  const received = [];
  ws.on('message', (data) => received.push(data.toString()));
  return { ws, received };
}

test('two broadcast processes with one NATS_URL form one room', async (t) => {
  const nats = await startNats(t);
  const ports = [];
  for (let i = 0; i < 2; i++) {
    const started = await startExample('examples/broadcast/server.mjs', {
      env: { PORT: '0', WORKERS: '1', NATS_URL: nats.url },
      ready: /listening on ws:\/\/127\.0\.0\.1:(\d+)\/ \(1 workers, channels through nats:\/\/127\.0\.0\.1:\d+\)/,
    });
    t.after(() => started.child.kill('SIGKILL'));
    ports.push(Number(started.match[1]));
  }
  const one = await client(t, ports[0]);
  const two = await client(t, ports[1]);
  // Each process subscribed the room (the subject `switchboard.room`).
  await until(async () => (await nats.numsub('switchboard.room')) === 2, 'both processes to subscribe');
  one.ws.send('from one');
  await until(() => one.received.length === 1 && two.received.length === 1, 'the first message on both clients');
  two.ws.send('from two');
  await until(() => one.received.length === 2 && two.received.length === 2, 'both messages on both clients');
  assert.deepEqual(one.received, ['from one', 'from two']);
  assert.deepEqual(two.received, ['from one', 'from two']);
});
