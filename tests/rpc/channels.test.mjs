// Channels reach protocol connections too: a publish is framed once per
// channel as an unnumbered one-way MESSAGE (call id 0, docs/protocol.md §4)
// and delivered natively to every protocol subscriber, raw or over
// WebSocket, next to plain WebSocket subscribers. The payload goes out as
// published: the app encodes it for its clients' codec (JSON here).
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { Server } from 'switchboard';
import { connect, jsonCodec } from 'switchboard-client/node';

test('one publish reaches TCP, protocol-over-WebSocket and plain WebSocket subscribers', async (t) => {
  const server = new Server({ workers: 0 });
  server.rpc
    .action('join', (call) => call.connection.subscribe(call.decode()))
    .action('leave', (call) => call.connection.unsubscribe(call.decode()))
    .action('say', (call) => server.publish('room', JSON.stringify(call.decode())));
  server.ws('/ws', { open: (ws) => server.subscribe(ws.id, 'room'), rpc: true });
  const [rpcAddress, httpAddress] = await server.listen([
    { host: '127.0.0.1', port: 0, protocol: 'rpc' },
    { host: '127.0.0.1', port: 0 },
  ]);
  t.after(() => server.close());

  const tcp = await connect(`tcp://127.0.0.1:${rpcAddress.port}`, { reconnect: false, codecs: [jsonCodec] });
  const overWs = await connect(`ws://127.0.0.1:${httpAddress.port}/ws`, { reconnect: false, codecs: [jsonCodec] });
  const plain = new WebSocket(`ws://127.0.0.1:${httpAddress.port}/ws`);
  await once(plain, 'open');

  const got = { tcp: [], overWs: [], plain: [] };
  const uuids = new Set();
  for (const [name, client] of [['tcp', tcp], ['overWs', overWs]]) {
    client.handle('room', (payload, call) => {
      assert.equal(call.expectsReply, false);
      assert.equal(call.callId, 0);
      uuids.add(call.uuid);
      got[name].push(payload);
    });
  }
  plain.on('message', (data) => got.plain.push(JSON.parse(data.toString())));
  assert.equal(await tcp.call('join', 'room'), true);
  assert.equal(await overWs.call('join', 'room'), true);
  // Three subscribers: the plain WebSocket, the two protocol clients.
  assert.equal(await tcp.call('say', 'hello'), 3);
  assert.equal(await overWs.call('say', 'again'), 3);
  const deadline = Date.now() + 3000;
  while (Object.values(got).some((list) => list.length < 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(got, { tcp: ['hello', 'again'], overWs: ['hello', 'again'], plain: ['hello', 'again'] });
  // Each delivery has its own UUID (per connection seed and sequence).
  assert.equal(uuids.size, 4);
  for (const uuid of uuids) assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

  // Calls go on, numbered, after unnumbered messages; leaving stops delivery.
  assert.equal(await tcp.call('leave', 'room'), true);
  assert.equal(await overWs.call('say', 'third'), 2);
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(got.tcp, ['hello', 'again']);
  assert.equal(got.overWs.at(-1), 'third');
  await tcp.close();
  await overWs.close();
  plain.close();
});
