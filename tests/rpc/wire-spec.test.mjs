// The points of docs/protocol.md that an independent implementation of the
// protocol relies on, checked end to end through the real server with raw
// sockets: what a well-behaved client never sends, and what the server must
// answer to it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import { HELLO, PREFACE, encodeFrame, handshake, rawConnect } from './raw.mjs';
import { until } from '../fixtures/rpc-e2e.mjs';
import { randomSeed } from 'switchboard-protocol';

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
