// The same protocol on every transport the server offers: TCP, Unix
// sockets and WebSocket binary messages (subprotocol switchboard.v1), with
// handlers in worker threads.
import test from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import WebSocket from 'ws';
import { Server } from 'switchboard';
import { ALL_FEATURES, FrameDecoder, PREFACE, WEBSOCKET_SUBPROTOCOL, encodeFrame, randomSeed } from 'switchboard-rpc';
import { HELLO, handshake } from './raw.mjs';

const app = new URL('../fixtures/rpc-app.mjs', import.meta.url);

function call(callId, action, value) {
  return encodeFrame({ type: 'message', callId, expectsReply: true, uuid: null, attachments: 0, action, payload: Buffer.from(JSON.stringify(value)) });
}

const decodeJson = (frame) => JSON.parse(Buffer.from(frame.payload).toString());

test('TCP and Unix listeners share one server with worker threads', async (t) => {
  const socketPath = path.join(os.tmpdir(), `switchboard-rpc-${process.pid}.sock`);
  const server = new Server({ app, workers: 2 });
  const addresses = await server.listen([
    { host: '127.0.0.1', port: 0, protocol: 'rpc' },
    { path: socketPath, protocol: 'rpc' },
    { host: '127.0.0.1', port: 0 },
  ]);
  t.after(() => server.close());
  assert.deepEqual(addresses[1], { path: socketPath, protocol: 'rpc' });
  const workers = new Set();
  for (const target of [addresses[0].port, socketPath, addresses[0].port, socketPath]) {
    const { socket, welcome } = await handshake(target);
    assert.equal(welcome.type, 'welcome');
    socket.write(Buffer.concat([call(1, 'add', [40, 2]), call(2, 'whoami', null), call(3, 'guarded', null)]));
    const byId = new Map();
    for (let i = 0; i < 3; i++) {
      const frame = await socket.nextFrame();
      byId.set(frame.callId, frame);
    }
    assert.deepEqual({ type: byId.get(1).type, code: byId.get(1).code }, { type: 'fastReply', code: 42 });
    workers.add(decodeJson(byId.get(2)).worker);
    const denied = byId.get(3);
    assert.equal(denied.type, 'error');
    assert.equal(denied.code, 'ERR_FORBIDDEN');
    assert.deepEqual(JSON.parse(Buffer.from(denied.details).toString()), { need: 'admin' });
    socket.end();
  }
  assert.equal(workers.size, 2, 'connections are spread over both workers');
});

test('WebSocket: switchboard.v1 clients speak the protocol, others get the route handlers', async (t) => {
  const server = new Server({ app, workers: 1 });
  const [address] = await server.listen(0);
  t.after(() => server.close());
  const url = `ws://127.0.0.1:${address.port}/rpc`;

  const ws = new WebSocket(url, [WEBSOCKET_SUBPROTOCOL]);
  await once(ws, 'open');
  assert.equal(ws.protocol, WEBSOCKET_SUBPROTOCOL);
  const decoder = new FrameDecoder({ maxFrameSize: 1 << 20, expectPreface: true });
  const frames = [];
  ws.on('message', (data, isBinary) => {
    assert.equal(isBinary, true);
    decoder.push(new Uint8Array(data));
    for (let f; (f = decoder.next()); ) frames.push(f);
  });
  const next = async () => {
    while (frames.length === 0) await new Promise((r) => setTimeout(r, 5));
    return frames.shift();
  };
  // The first message starts with the preface.
  ws.send(Buffer.concat([PREFACE, encodeFrame({ ...HELLO, seed: randomSeed(), features: ALL_FEATURES })]));
  assert.equal((await next()).type, 'welcome');
  // Two frames in one message.
  ws.send(Buffer.concat([call(1, 'echo', 'over websocket'), call(2, 'add', [1, 2])]));
  const replies = [await next(), await next()].sort((a, b) => a.callId - b.callId);
  assert.equal(decodeJson(replies[0]), 'over websocket');
  assert.equal(replies[1].code, 3);
  // A text message is not the protocol: 1003.
  const closed = once(ws, 'close');
  ws.send('hello');
  const [code, reason] = await closed;
  assert.equal(code, 1003);
  assert.equal(reason.toString(), 'ERR_PROTOCOL_TEXT_MESSAGE');

  // A plain WebSocket client on the same route gets its handlers.
  const plain = new WebSocket(url);
  await once(plain, 'open');
  plain.send('plain');
  const [echoed] = await once(plain, 'message');
  assert.equal(echoed.toString(), 'plain');
  plain.close();
});

test('WebSocket: a message that ends inside a frame is a protocol error', async (t) => {
  const server = new Server({ app, workers: 1 });
  const [address] = await server.listen(0);
  t.after(() => server.close());
  const ws = new WebSocket(`ws://127.0.0.1:${address.port}/rpc`, [WEBSOCKET_SUBPROTOCOL]);
  await once(ws, 'open');
  const messages = [];
  ws.on('message', (data) => messages.push(Buffer.from(data)));
  const hello = Buffer.concat([PREFACE, encodeFrame({ ...HELLO, seed: randomSeed() })]);
  ws.send(hello.subarray(0, hello.length - 2));
  const [code, reason] = await once(ws, 'close');
  assert.equal(code, 1002);
  assert.equal(reason.toString(), 'ERR_PROTOCOL_MALFORMED');
  // Before the close: our preface and a GO_AWAY saying why.
  const decoder = new FrameDecoder({ maxFrameSize: 1 << 20, expectPreface: true });
  for (const m of messages) decoder.push(new Uint8Array(m));
  const goAway = decoder.next();
  assert.equal(goAway.type, 'goAway');
  assert.equal(goAway.code, 'ERR_PROTOCOL_MALFORMED');
});
