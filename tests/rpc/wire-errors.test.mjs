// Bad protocol input costs only its own connection: each case gets a
// GO_AWAY with the documented code (docs/protocol.md §8) and is closed, and
// the server goes on serving a good client afterwards.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import { HELLO, PREFACE, encodeFrame, handshake, rawConnect } from './raw.mjs';

async function startRpc(options = {}) {
  const server = new Server({ workers: 0, ...options });
  const closes = [];
  server.rpc.action('echo', (call) => call.decode());
  server.rpc.onClose((connection, code, reason) => closes.push({ id: connection.id, code, reason }));
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc' }]);
  return { server, port: address.port, closes };
}

/** A well-behaved call still works: the server was not harmed. */
async function assertServes(port) {
  const { socket, welcome } = await handshake(port);
  assert.equal(welcome.type, 'welcome');
  socket.write(encodeFrame({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'echo', payload: Buffer.from('"ok"') }));
  const reply = await socket.nextFrame();
  assert.equal(reply.type, 'response');
  assert.equal(Buffer.from(reply.payload).toString(), '"ok"');
  socket.end();
}

/** The GO_AWAY a bad input earns, then the end of the connection. */
async function expectGoAway(socket, code) {
  const frame = await socket.nextFrame();
  assert.equal(frame?.type, 'goAway', `expected a GO_AWAY, got ${JSON.stringify(frame?.type)}`);
  assert.equal(frame.code, code);
  await socket.ended;
  return frame;
}

test('the handshake: WELCOME carries the negotiated codec, limits and a v4 seed', async (t) => {
  const { server, port } = await startRpc({ rpc: { maxFrameSize: 65536, initialWindow: 4096, maxConcurrentCalls: 7, heartbeatInterval: 0 } });
  t.after(() => server.close());
  const { socket, welcome } = await handshake(port, { codecs: ['cbor', 'msgpack', 'json'] });
  assert.equal(welcome.codec, 'msgpack', "the client's first codec we speak");
  assert.equal(welcome.maxFrameSize, 65536);
  assert.equal(welcome.initialWindow, 4096);
  assert.equal(welcome.maxConcurrentCalls, 7);
  assert.equal(welcome.heartbeatMs, 0);
  assert.equal(welcome.seed[6] >> 4, 4);
  assert.equal(welcome.seed[8] >> 6, 2);
  socket.end();
});

test('bytes that are not the protocol get no answer and a closed connection', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const socket = await rawConnect(port);
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await socket.ended;
  assert.equal(socket.received, 0);
  await assertServes(port);
});

test('an unknown version gets our preface and ERR_PROTOCOL_VERSION', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const socket = await rawConnect(port);
  socket.write(Buffer.from('SWB\x07'));
  await expectGoAway(socket, 'ERR_PROTOCOL_VERSION');
  await assertServes(port);
});

for (const [name, bytes, code] of [
  ['a frame before HELLO', [0x0e, 0x00, 0x00], 'ERR_PROTOCOL_HANDSHAKE'],
  ['an unknown frame type', [0x10, 0x00, 0x00], 'ERR_PROTOCOL_FRAME_TYPE'],
]) {
  test(`${name} gets ${code}`, async (t) => {
    const { server, port } = await startRpc();
    t.after(() => server.close());
    const socket = await rawConnect(port);
    socket.write(Buffer.concat([PREFACE, Buffer.from(bytes)]));
    await expectGoAway(socket, code);
    await assertServes(port);
  });
}

test('no codec in common: ERR_PROTOCOL_CODEC', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const socket = await rawConnect(port);
  const { randomSeed } = await import('switchboard-rpc');
  socket.write(Buffer.concat([PREFACE, encodeFrame({ ...HELLO, seed: randomSeed(), codecs: ['cbor'] })]));
  await expectGoAway(socket, 'ERR_PROTOCOL_CODEC');
});

test('after the handshake, each violation closes only its connection', async (t) => {
  const { server, port, closes } = await startRpc({ rpc: { maxFrameSize: 4096 } });
  t.after(() => server.close());
  const bystander = await handshake(port);
  const cases = [
    // A length over maxFrameSize, refused from the header alone.
    [Buffer.from([0x03, 0x12, 0x00, 0x00, 0x01, 0x00]), 'ERR_PROTOCOL_FRAME_TOO_LARGE'],
    // Reserved descriptor bit 7 on a HEARTBEAT.
    [Buffer.from([0x0e, 0x80, 0x00]), 'ERR_PROTOCOL_MALFORMED'],
    // Call id 5 twice.
    [Buffer.from([0x03, 0x00, 0x03, 0x05, 0x01, 0x61, 0x03, 0x00, 0x03, 0x05, 0x01, 0x61]), 'ERR_PROTOCOL_CALL_ID'],
    // STREAM_OPEN with no message announcing it.
    [Buffer.from([0x08, 0x00, 0x01, 0x01]), 'ERR_PROTOCOL_SEQUENCE'],
    // A second HELLO.
    [Buffer.from(encodeFrame({ ...HELLO, seed: new Uint8Array(16).fill(0x40) })), 'ERR_PROTOCOL_HANDSHAKE'],
  ];
  for (const [bytes, code] of cases) {
    const { socket } = await handshake(port);
    // Delivered in tiny pieces: the checks must not depend on chunking.
    for (const byte of bytes) socket.write(Buffer.of(byte));
    await expectGoAway(socket, code);
  }
  // The bystander and new clients are unharmed.
  bystander.socket.write(encodeFrame({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'echo', payload: Buffer.from('"still here"') }));
  assert.equal((await bystander.socket.nextFrame()).type, 'response');
  await assertServes(port);
  // JavaScript heard each bad connection close with its code as the reason.
  const reasons = closes.map((c) => c.reason);
  for (const [, code] of cases) assert.ok(reasons.includes(code), `close reason ${code} in ${reasons}`);
  assert.equal(server.stats().protocolErrors >= cases.length, true);
  bystander.socket.end();
});

test('a client that never sends HELLO is closed after handshakeTimeout', async (t) => {
  const { server, port } = await startRpc({ handshakeTimeout: 0.2 });
  t.after(() => server.close());
  const socket = await rawConnect(port);
  socket.write(PREFACE);
  const started = Date.now();
  await expectGoAway(socket, 'ERR_HANDSHAKE_TIMEOUT');
  assert.ok(Date.now() - started >= 150);
});

test('heartbeats: the server answers pings, pings a quiet client, and drops a silent one', async (t) => {
  const { server, port } = await startRpc({ rpc: { heartbeatInterval: 0.2 } });
  t.after(() => server.close());
  const { socket, welcome } = await handshake(port);
  assert.equal(welcome.heartbeatMs, 200);
  socket.write(encodeFrame({ type: 'heartbeat', pong: false }));
  assert.deepEqual(await socket.nextFrame(), { type: 'heartbeat', pong: true });
  // Quiet for one interval: the server pings.
  assert.deepEqual(await socket.nextFrame(), { type: 'heartbeat', pong: false });
  // Silent for two: the server gives up.
  await expectGoAway(socket, 'ERR_HEARTBEAT_TIMEOUT');
});

test('a payload arriving one byte at a time is delivered whole', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const { socket } = await handshake(port);
  const payload = Buffer.from(JSON.stringify('x'.repeat(70_000)));
  const frame = Buffer.from(encodeFrame({ type: 'message', callId: 9, expectsReply: true, uuid: null, attachments: 0, action: 'echo', payload }));
  for (let i = 0; i < frame.length; i += 997) socket.write(frame.subarray(i, i + 997));
  const reply = await socket.nextFrame();
  assert.equal(reply.callId, 9);
  assert.equal(Buffer.from(reply.payload).toString(), payload.toString());
  socket.end();
});

test('shutdown sends GO_AWAY and lets an in-flight call finish', async () => {
  const server = new Server({ workers: 0 });
  let release;
  server.rpc.action('slow', () => new Promise((resolve) => (release = resolve)));
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc' }]);
  const { socket } = await handshake(address.port);
  socket.write(encodeFrame({ type: 'message', callId: 3, expectsReply: true, uuid: null, attachments: 0, action: 'slow', payload: new Uint8Array() }));
  while (!release) await new Promise((r) => setTimeout(r, 5));
  const closing = server.close({ drainTimeout: 3000 });
  const goAway = await socket.nextFrame();
  assert.equal(goAway.type, 'goAway');
  assert.equal(goAway.code, 'ERR_GOING_AWAY');
  assert.equal(goAway.lastCallId, 3);
  release(42);
  const reply = await socket.nextFrame();
  assert.deepEqual({ type: reply.type, callId: reply.callId, code: reply.code }, { type: 'fastReply', callId: 3, code: 42 });
  socket.end();
  await closing;
});

test('a client that stops reading is closed, never sent a frame short', async (t) => {
  // Large responses go straight to the socket while it takes them, so the
  // kernel's buffers are full when the queue passes its limit: the final
  // GO_AWAY then waits closeTimeout for a client that never reads.
  const { server, port, closes } = await startRpc({ rpc: { maxBackpressure: 256 * 1024 }, closeTimeout: 1 });
  t.after(() => server.close());
  server.rpc.action('flood', (call) => {
    const chunk = new Uint8Array(32 * 1024);
    // Far more than the limit and the socket buffers together.
    for (let i = 0; i < 2000 && !call.signal.aborted; i++) call.respondRaw(chunk, { last: false });
    call.end();
  });
  const { socket } = await handshake(port);
  socket.pause();
  socket.write(encodeFrame({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'flood', payload: new Uint8Array() }));
  const deadline = Date.now() + 5000;
  while (closes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(closes[0]?.reason, 'ERR_WS_SLOW_CONSUMER');
  socket.destroy();
  await assertServes(port);
});
