// The points of docs/protocol.md that an independent implementation of the
// protocol relies on, checked end to end through the real server with raw
// sockets: what a well-behaved client never sends, and what the server must
// answer to it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { Server } from 'switchboard';
import { HELLO, PREFACE, encodeFrame, handshake, rawConnect } from './raw.mjs';
import { until } from '../fixtures/rpc-e2e.mjs';
import { FrameDecoder, MAX_HANDSHAKE_SIZE, WEBSOCKET_SUBPROTOCOL, randomSeed } from 'switchboard-rpc';

async function startRpc(options = {}, setup = () => {}) {
  const server = new Server({ workers: 0, ...options });
  const closes = [];
  server.rpc.action('echo', (call) => call.decode());
  setup(server.rpc);
  server.rpc.onClose((connection, code, reason) => closes.push({ id: connection.id, code, reason }));
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc' }]);
  return { server, port: address.port, closes };
}

/** Every frame the server sends until it closes the connection. */
async function framesUntilClose(socket) {
  const frames = [];
  for (let frame = await socket.nextFrame(); frame !== null; frame = await socket.nextFrame()) frames.push(frame);
  return frames;
}

test('§3: a codec name with a control byte is malformed, not a codec the server does not speak', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const hello = Buffer.from(encodeFrame({ ...HELLO, seed: randomSeed(), codecs: ['a~', 'json'] }));
  // The one codec name "a~" becomes "a\x01": below 0x80, yet not printable.
  const at = hello.indexOf(Buffer.from([0x02, 0x61, 0x7e]));
  assert.ok(at > 0);
  hello[at + 2] = 0x01;
  const socket = await rawConnect(port);
  socket.write(Buffer.concat([PREFACE, hello]));
  const frames = await framesUntilClose(socket);
  assert.deepEqual(
    frames.map((f) => [f.type, f.code]),
    [['goAway', 'ERR_PROTOCOL_MALFORMED']],
  );
});

const message = (callId, action, { attachments = 0, expectsReply = true, payload = new Uint8Array() } = {}) =>
  encodeFrame({ type: 'message', callId, expectsReply, uuid: null, attachments, action, payload });

test('§8: a violation the peer finds (flow control) gets exactly one GO_AWAY, then the close', async (t) => {
  const { server, port, closes } = await startRpc({ rpc: { initialWindow: 4096 } }, (rpc) =>
    rpc.action('hold', () => new Promise(() => {})),
  );
  t.after(() => server.close());
  const { socket, welcome } = await handshake(port);
  assert.equal(welcome.initialWindow, 4096);
  socket.write(
    Buffer.concat([
      message(1, 'hold', { attachments: 1 }),
      encodeFrame({ type: 'streamOpen', streamId: 1, file: null }),
      encodeFrame({ type: 'streamData', streamId: 1, data: new Uint8Array(5000) }),
    ]),
  );
  const frames = await framesUntilClose(socket);
  const goAways = frames.filter((f) => f.type === 'goAway');
  assert.equal(goAways.length, 1, `one GO_AWAY, got ${JSON.stringify(frames.map((f) => f.type))}`);
  assert.equal(goAways[0].code, 'ERR_PROTOCOL_FLOW_CONTROL');
  assert.equal(goAways[0].lastCallId, 1, 'the call was dispatched');
  assert.equal(frames.at(-1), goAways[0], 'nothing after the GO_AWAY');
  await until(() => closes.length === 1);
  assert.match(closes[0].reason, /^ERR_PROTOCOL_FLOW_CONTROL/);
});

test('§2.4: a GO_AWAY for a violation leaves out a call still owed its STREAM_OPENs', async (t) => {
  const { server, port } = await startRpc({}, (rpc) => rpc.action('hold', () => new Promise(() => {})));
  t.after(() => server.close());
  for (const [name, bytes, lastCallId] of [
    ['one attachment announced, a PING instead', [message(1, 'hold', { attachments: 1 }), encodeFrame({ type: 'heartbeat', pong: false })], 0],
    [
      'call 1 complete, call 2 still owed a STREAM_OPEN',
      [
        message(1, 'hold'),
        message(2, 'hold', { attachments: 2 }),
        encodeFrame({ type: 'streamOpen', streamId: 1, file: null }),
        encodeFrame({ type: 'heartbeat', pong: false }),
      ],
      1,
    ],
  ]) {
    const { socket } = await handshake(port);
    socket.write(Buffer.concat(bytes));
    const frames = await framesUntilClose(socket);
    const goAways = frames.filter((f) => f.type === 'goAway');
    assert.deepEqual(
      goAways.map((f) => [f.code, f.lastCallId]),
      [['ERR_PROTOCOL_SEQUENCE', lastCallId]],
      name,
    );
  }
});

/** A HELLO whose body is exactly `size` bytes (36 of settings, one codec "json", the rest connect data). */
function helloOfSize(size) {
  const data = new Uint8Array(size - 36 - 1 - 5).fill(0x74);
  const frame = encodeFrame({ ...HELLO, seed: randomSeed(), codecs: ['json'], data });
  assert.equal(frame.length - 6, size, 'a body of the size asked (4-byte length)');
  return Buffer.concat([PREFACE, frame]);
}

test('§2: any HELLO up to 65,536 bytes is accepted whatever maxFrameSize; one byte more is ERR_PROTOCOL_FRAME_TOO_LARGE', async (t) => {
  assert.equal(MAX_HANDSHAKE_SIZE, 65536);
  const { server, port } = await startRpc({ rpc: { maxFrameSize: 4096 } });
  t.after(() => server.close());
  // TCP: the largest HELLO is accepted though maxFrameSize is 4 KiB.
  let socket = await rawConnect(port);
  socket.write(helloOfSize(MAX_HANDSHAKE_SIZE));
  const welcome = await socket.nextFrame();
  assert.equal(welcome.type, 'welcome');
  assert.equal(welcome.maxFrameSize, 4096);
  socket.write(message(1, 'echo', { payload: Buffer.from('"still served"') }));
  assert.equal(Buffer.from((await socket.nextFrame()).payload).toString(), '"still served"');
  socket.end();
  // One byte more is refused from its header, before the body is sent.
  socket = await rawConnect(port);
  socket.write(helloOfSize(MAX_HANDSHAKE_SIZE + 1).subarray(0, 4 + 6));
  assert.deepEqual(
    (await framesUntilClose(socket)).map((f) => [f.type, f.code]),
    [['goAway', 'ERR_PROTOCOL_FRAME_TOO_LARGE']],
  );
});

test('§2 over WebSocket: the first message may hold the preface and a 65,536-byte HELLO', async (t) => {
  const server = new Server({ workers: 0, rpc: { maxFrameSize: 4096 } });
  server.rpc.action('echo', (call) => call.decode());
  server.ws('/rpc', { rpc: true, maxPayloadLength: 1024 });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0 }]);
  t.after(() => server.close());
  const talk = async (bytes) => {
    const ws = new WebSocket(`ws://127.0.0.1:${address.port}/rpc`, [WEBSOCKET_SUBPROTOCOL]);
    await once(ws, 'open');
    const decoder = new FrameDecoder({ maxFrameSize: 1 << 20, expectPreface: true });
    const frames = [];
    ws.on('message', (data) => {
      decoder.push(new Uint8Array(data));
      for (let f = decoder.next(); f; f = decoder.next()) frames.push(f);
    });
    const closed = once(ws, 'close');
    ws.send(bytes);
    return { ws, frames, closed };
  };
  const ok = await talk(helloOfSize(MAX_HANDSHAKE_SIZE));
  await until(() => ok.frames.length > 0, 'the WELCOME');
  assert.equal(ok.frames[0].type, 'welcome');
  ok.ws.close();
  const refused = await talk(helloOfSize(MAX_HANDSHAKE_SIZE + 1));
  const [code, reason] = await refused.closed;
  assert.equal(code, 1009);
  assert.equal(reason.toString(), 'ERR_PROTOCOL_FRAME_TOO_LARGE');
  assert.deepEqual(
    refused.frames.map((f) => [f.type, f.code]),
    [['goAway', 'ERR_PROTOCOL_FRAME_TOO_LARGE']],
  );
});

test('§4: with HELLO features = 0, an attachment or a CANCEL is ERR_PROTOCOL_FEATURE', async (t) => {
  const dispatched = [];
  const { server, port, closes } = await startRpc({}, (rpc) =>
    rpc.action('hold', (call) => {
      dispatched.push(call.callId);
      return new Promise(() => {});
    }),
  );
  t.after(() => server.close());
  const cases = [
    ['an upload', [message(1, 'hold', { attachments: 1 }), encodeFrame({ type: 'streamOpen', streamId: 1, file: null })], 0],
    ['a file', [message(1, 'hold', { attachments: 1 }), encodeFrame({ type: 'streamOpen', streamId: 1, file: { name: 'f', size: 1 } })], 0],
    ['a CANCEL', [message(1, 'hold'), encodeFrame({ type: 'cancel', callId: 1 })], 1],
  ];
  for (const [name, bytes, lastCallId] of cases) {
    const { socket, welcome } = await handshake(port, { features: 0 });
    assert.equal(welcome.features, 0, 'no feature in effect');
    socket.write(Buffer.concat(bytes));
    const frames = await framesUntilClose(socket);
    assert.deepEqual(
      frames.filter((f) => f.type === 'goAway').map((f) => [f.code, f.lastCallId]),
      [['ERR_PROTOCOL_FEATURE', lastCallId]],
      name,
    );
  }
  // Only the call of the CANCEL case was dispatched; the uploads never were.
  assert.deepEqual(dispatched, [1]);
  await until(() => closes.length === cases.length);
  for (const close of closes) assert.match(close.reason, /^ERR_PROTOCOL_FEATURE/);
});

test('§4: CREDIT or STOP for a stream the server never opened, CANCEL of a call never made: connection errors', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  for (const [frame, code] of [
    [{ type: 'credit', streamId: 7, increment: 1024 }, 'ERR_PROTOCOL_STREAM_ID'],
    [{ type: 'stop', streamId: 7, code: 'ERR_STREAM_STOPPED' }, 'ERR_PROTOCOL_STREAM_ID'],
    [{ type: 'cancel', callId: 5 }, 'ERR_PROTOCOL_CALL_ID'],
  ]) {
    const { socket } = await handshake(port);
    socket.write(encodeFrame(frame));
    const frames = await framesUntilClose(socket);
    assert.deepEqual(
      frames.map((f) => [f.type, f.code]),
      [['goAway', code]],
      frame.type,
    );
  }
});

test('§4: CANCEL of a call that is over is the expected race: ignored', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const { socket } = await handshake(port);
  socket.write(message(1, 'echo', { payload: Buffer.from('"1"') }));
  assert.equal((await socket.nextFrame()).type, 'response');
  socket.write(Buffer.concat([encodeFrame({ type: 'cancel', callId: 1 }), message(2, 'echo', { payload: Buffer.from('"2"') })]));
  const reply = await socket.nextFrame();
  assert.deepEqual([reply.type, reply.callId], ['response', 2]);
  socket.end();
});

test('§4: an attachment the handler never reads is stopped when its call is over', async (t) => {
  const { server, port } = await startRpc();
  t.after(() => server.close());
  const { socket } = await handshake(port);
  socket.write(
    Buffer.concat([
      message(1, 'echo', { attachments: 2 }),
      encodeFrame({ type: 'streamOpen', streamId: 1, file: null }),
      encodeFrame({ type: 'streamOpen', streamId: 2, file: { name: 'unread.bin', size: 3 } }),
      encodeFrame({ type: 'streamData', streamId: 1, data: new Uint8Array(3) }),
    ]),
  );
  const frames = [await socket.nextFrame(), await socket.nextFrame(), await socket.nextFrame()];
  assert.deepEqual(
    frames.map((f) => [f.type, f.callId ?? f.streamId, f.code]),
    [
      ['end', 1, undefined],
      ['stop', 1, 'ERR_STREAM_STOPPED'],
      ['stop', 2, 'ERR_STREAM_STOPPED'],
    ],
  );
  // The sender closes the ids as STOP asks; the connection goes on.
  socket.write(
    Buffer.concat([
      encodeFrame({ type: 'streamEnd', streamId: 1, abort: { code: 'ERR_STREAM_STOPPED', message: '' } }),
      encodeFrame({ type: 'streamEnd', streamId: 2, abort: { code: 'ERR_STREAM_STOPPED', message: '' } }),
      message(2, 'echo', { payload: Buffer.from('"after"') }),
    ]),
  );
  const reply = await socket.nextFrame();
  assert.deepEqual([reply.type, reply.callId, Buffer.from(reply.payload).toString()], ['response', 2, '"after"']);
  socket.end();
});

test('§4 payloads: zero bytes is no value, distinct from null, in json and msgpack', async (t) => {
  const seen = [];
  const { server, port } = await startRpc({}, (rpc) =>
    rpc.action('inspect', (call) => {
      const value = call.decode();
      seen.push(value === undefined ? 'no value' : value);
      return call.respond(value);
    }),
  );
  t.after(() => server.close());
  for (const [codec, nullBytes] of [
    ['json', Buffer.from('null')],
    ['msgpack', Buffer.from([0xc0])],
  ]) {
    seen.length = 0;
    const { socket, welcome } = await handshake(port, { codecs: [codec] });
    assert.equal(welcome.codec, codec);
    socket.write(Buffer.concat([message(1, 'inspect'), message(2, 'inspect', { payload: nullBytes })]));
    const [first, second] = [await socket.nextFrame(), await socket.nextFrame()];
    assert.deepEqual(seen, ['no value', null], codec);
    // No value goes back as an empty payload, null as the codec's null.
    assert.deepEqual([first.type, first.callId, first.payload.length], ['response', 1, 0], codec);
    assert.deepEqual([second.type, second.callId, Buffer.from(second.payload)], ['response', 2, nullBytes], codec);
    socket.end();
  }
});

test("§2.4: after the client's GO_AWAY the server refuses new calls both ways, finishes those in flight, then closes", async (t) => {
  let release;
  const outcomes = [];
  const { server, port, closes } = await startRpc({}, (rpc) =>
    rpc
      .action('slow', () => new Promise((resolve) => (release = resolve)))
      .action('askClient', async (call) => {
        try {
          return await call.connection.call('client.version');
        } catch (error) {
          outcomes.push({ code: error.code, retryable: error.retryable });
          return error.code;
        }
      }),
  );
  t.after(() => server.close());
  const { socket } = await handshake(port);
  socket.write(Buffer.concat([message(1, 'slow'), message(2, 'askClient')]));
  const serverCall = await socket.nextFrame();
  assert.deepEqual([serverCall.type, serverCall.callId, serverCall.action], ['message', 1, 'client.version']);
  // We go away having processed none of the server's calls, then break the
  // rule by starting one more call.
  socket.write(
    Buffer.concat([
      encodeFrame({ type: 'goAway', lastCallId: 0, code: 'ERR_GOING_AWAY', message: 'bye' }),
      message(3, 'echo', { payload: Buffer.from('"late"') }),
    ]),
  );
  const refused = await socket.nextFrame();
  assert.deepEqual([refused.type, refused.callId, refused.code], ['error', 3, 'ERR_GOING_AWAY']);
  const asked = await socket.nextFrame();
  assert.deepEqual([asked.type, asked.callId, Buffer.from(asked.payload).toString()], ['response', 2, '"ERR_GOING_AWAY"']);
  assert.deepEqual(outcomes, [{ code: 'ERR_GOING_AWAY', retryable: true }], 'the server call the client did not process is retryable');
  // Call 1 is still in flight: the server waits for it, then closes.
  assert.equal(closes.length, 0);
  release(7);
  const frames = await framesUntilClose(socket);
  assert.deepEqual(
    frames.map((f) => [f.type, f.callId, f.code]),
    [['fastReply', 1, 7]],
    'the last reply, then the close; no GO_AWAY of its own',
  );
  await until(() => closes.length === 1);
  assert.deepEqual([closes[0].code, closes[0].reason], [1000, 'ERR_GOING_AWAY']);
});

test('§2.4: a client that sends GO_AWAY with nothing in flight is closed at once', async (t) => {
  const { server, port, closes } = await startRpc();
  t.after(() => server.close());
  const { socket } = await handshake(port);
  socket.write(message(1, 'echo', { payload: Buffer.from('"hi"') }));
  assert.equal((await socket.nextFrame()).type, 'response');
  socket.write(encodeFrame({ type: 'goAway', lastCallId: 0, code: 'ERR_GOING_AWAY', message: '' }));
  assert.deepEqual(await framesUntilClose(socket), []);
  await until(() => closes.length === 1);
});

/** `count` calls to `download` from a client that never grants credit; the frames that answer them. */
async function downloadsWithoutCredit(port, count) {
  const { socket } = await handshake(port, { initialWindow: 1024 });
  socket.write(Buffer.concat(Array.from({ length: count }, (_, i) => message(i + 1, 'download'))));
  const answers = new Map();
  while (answers.size < count) {
    const frame = await socket.nextFrame();
    if (frame.type === 'response' || frame.type === 'error') answers.set(frame.callId, frame);
  }
  return { socket, answers: [...answers.values()] };
}

test('rpc.maxOutboundStreams (default 256): streams to a client are bounded per connection; beyond, ERR_TOO_MANY_STREAMS', async (t) => {
  const { server, port, closes } = await startRpc({}, (rpc) =>
    rpc.action('download', (call) => {
      call.respond(null, { stream: new Uint8Array(64 * 1024) });
    }),
  );
  t.after(() => server.close());
  // Streams that never get credit stay open after their calls end.
  const { socket, answers } = await downloadsWithoutCredit(port, 300);
  const refused = answers.filter((f) => f.type === 'error');
  assert.equal(answers.length - refused.length, 256, 'the default limit');
  assert.ok(refused.every((f) => f.code === 'ERR_TOO_MANY_STREAMS'));
  // The connection stays, and serves calls without streams.
  socket.write(message(301, 'echo', { payload: Buffer.from('"here"') }));
  const reply = await socket.nextFrame();
  assert.deepEqual([reply.type, reply.callId], ['response', 301]);
  assert.equal(closes.length, 0);
  // Stopping streams makes room again.
  socket.write(
    Buffer.concat([...[1, 2].map((id) => encodeFrame({ type: 'stop', streamId: id, code: 'ERR_STREAM_STOPPED' })), message(302, 'download')]),
  );
  const frames = [];
  while (!frames.some((f) => f.callId === 302)) frames.push(await socket.nextFrame());
  assert.equal(frames.find((f) => f.callId === 302).type, 'response');
  socket.end();
});

test('rpc.maxOutboundStreams reaches worker threads', async (t) => {
  const server = new Server({ app: new URL('../fixtures/rpc-app.mjs', import.meta.url), workers: 1, rpc: { maxOutboundStreams: 3 } });
  const [address] = await server.listen([{ host: '127.0.0.1', port: 0, protocol: 'rpc' }]);
  t.after(() => server.close());
  const { socket, answers } = await downloadsWithoutCredit(address.port, 5);
  assert.deepEqual(
    answers.map((f) => f.code ?? f.type),
    ['response', 'response', 'response', 'ERR_TOO_MANY_STREAMS', 'ERR_TOO_MANY_STREAMS'],
  );
  socket.end();
});

test('rpc.maxOutboundStreams is validated', () => {
  for (const bad of [0, -1, 1.5, '8']) {
    assert.throws(() => new Server({ workers: 0, rpc: { maxOutboundStreams: bad } }), { code: 'ERR_INVALID_OPTION' });
  }
});
