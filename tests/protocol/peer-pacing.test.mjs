// A transport may pace the peer: a `write` that returns false stops stream
// data until `peer.resume()`; other frames still go out. This is how the
// server keeps the data credit allows below its queue's limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as P from '../../packages/rpc/dist/index.js';

const settings = (overrides = {}) => ({
  seed: P.randomSeed(),
  maxFrameSize: 64 * 1024,
  initialWindow: 1 << 20,
  maxConcurrentCalls: 100,
  features: P.ALL_FEATURES,
  ...overrides,
});
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A peer whose transport reports itself full once `limit` bytes are queued. */
function paced(limit) {
  const sent = [];
  const state = { queued: 0 };
  const peer = new P.Peer({
    local: settings(),
    remote: settings({ initialWindow: 1 << 20 }),
    codec: P.jsonCodec,
    batchWrites: false,
    handler: (call) => call.respond(null, { stream: new Uint8Array(400 * 1024).fill(7) }),
    write: (bytes) => {
      const decoder = new P.FrameDecoder({ maxFrameSize: 1 << 20 });
      decoder.push(bytes);
      for (let f = decoder.next(); f; f = decoder.next()) sent.push(f);
      state.queued += bytes.length;
      return state.queued < limit;
    },
  });
  return { peer, sent, state, data: () => sent.filter((f) => f.type === 'streamData').reduce((n, f) => n + f.data.length, 0) };
}

test('stream data stops when write returns false, and resumes on resume()', async () => {
  const s = paced(100 * 1024);
  s.peer.receive({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'get', payload: new Uint8Array(0) });
  for (let i = 0; i < 5; i++) await tick();
  // Credit (1 MiB) would allow all 400 KiB: the transport's word stops it at
  // the first write that reports full (chunks of at most the frame size).
  const first = s.data();
  assert.ok(first >= 100 * 1024 && first < 100 * 1024 + 64 * 1024, `${first} bytes before the pause`);
  // Other frames are not paced: a ping is still answered.
  s.peer.receive({ type: 'heartbeat', pong: false });
  assert.deepEqual(s.sent.at(-1), { type: 'heartbeat', pong: true });
  for (let i = 0; i < 5; i++) await tick();
  assert.equal(s.data(), first, 'nothing more until resume()');
  // Drained: the transport takes more.
  s.state.queued = 0;
  s.peer.resume();
  for (let i = 0; i < 20 && s.sent.at(-1).type !== 'streamEnd'; i++) {
    await tick();
    if (s.state.queued >= 100 * 1024) {
      s.state.queued = 0;
      s.peer.resume();
    }
  }
  assert.equal(s.data(), 400 * 1024);
  assert.deepEqual(s.sent.at(-1), { type: 'streamEnd', streamId: 1, abort: null });
});

test('a paused stream ends with the connection: its source is released', async () => {
  const s = paced(1);
  s.peer.receive({ type: 'message', callId: 1, expectsReply: true, uuid: null, attachments: 0, action: 'get', payload: new Uint8Array(0) });
  await tick();
  assert.equal(s.peer.stats().outboundStreams, 1);
  s.peer.close(new Error('gone'));
  await tick();
  assert.equal(s.peer.stats().outboundStreams, 0);
});

test('maxOutboundStreams: one stream too many is refused before anything is sent, and there is room again once one ends', async () => {
  const sent = [];
  const errors = [];
  const writers = [];
  const peer = new P.Peer({
    local: settings(),
    remote: settings({ initialWindow: 1024 }),
    codec: P.jsonCodec,
    batchWrites: false,
    maxOutboundStreams: 2,
    handler: (call) => {
      try {
        const writer = new P.StreamWriter();
        writers.push(writer);
        call.respond(null, { stream: writer });
      } catch (error) {
        errors.push(error.code);
        throw error;
      }
    },
    write: (bytes) => {
      const decoder = new P.FrameDecoder({ maxFrameSize: 1 << 20 });
      decoder.push(bytes);
      for (let f = decoder.next(); f; f = decoder.next()) sent.push(f);
    },
  });
  const ask = (callId) => peer.receive({ type: 'message', callId, expectsReply: true, uuid: null, attachments: 0, action: 'get', payload: new Uint8Array(0) });
  ask(1);
  ask(2);
  ask(3);
  await tick();
  assert.deepEqual(errors, ['ERR_TOO_MANY_STREAMS']);
  const refusal = sent.find((f) => f.type === 'error');
  assert.deepEqual([refusal.callId, refusal.code], [3, 'ERR_TOO_MANY_STREAMS']);
  assert.equal(sent.filter((f) => f.type === 'streamOpen').length, 2);
  // The writer of the refused response was released.
  await assert.rejects(writers[2].write(new Uint8Array(1)), { code: 'ERR_TOO_MANY_STREAMS' });
  assert.equal(peer.stats().outboundStreams, 2);
  // A stream ends: a fourth call gets one.
  await writers[0].end();
  await tick();
  ask(4);
  await tick();
  assert.equal(sent.filter((f) => f.type === 'streamOpen').length, 3);
  // Our own calls count too, and are refused the same way.
  await assert.rejects(peer.call('up', null, { stream: new Uint8Array(1) }), { code: 'ERR_TOO_MANY_STREAMS' });
  assert.throws(() => peer.notify('up', null, { stream: new Uint8Array(1) }), { code: 'ERR_TOO_MANY_STREAMS' });
});
