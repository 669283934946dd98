// The symmetric RPC peer against a misbehaving other side: frames fed by
// hand to one Peer. Each violation is reported through onProtocolError,
// answered with GO_AWAY carrying the code, and closes the peer; the
// expected races (late responses, credit or STOP for closed streams) are not
// violations.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as P from '../../packages/rpc/dist/index.js';

const settings = (overrides = {}) => ({
  seed: P.randomSeed(),
  maxFrameSize: 64 * 1024,
  initialWindow: 4096,
  maxConcurrentCalls: 100,
  features: P.ALL_FEATURES,
  ...overrides,
});

/** A peer whose output is decoded into `sent`; frames go in by `peer.receive`. */
function subject({ handler, local = {}, remote = {} } = {}) {
  const sent = [];
  const errors = [];
  const peer = new P.Peer({
    local: settings(local),
    remote: settings(remote),
    codec: P.jsonCodec,
    batchWrites: false,
    handler,
    write: (bytes) => {
      const decoder = new P.FrameDecoder({ maxFrameSize: 1 << 20 });
      decoder.push(bytes);
      for (let f = decoder.next(); f; f = decoder.next()) sent.push(f);
    },
    onProtocolError: (e) => errors.push(e),
  });
  return { peer, sent, errors, types: () => sent.map((f) => f.type) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
/** A stream source that never ends (its stream stays open). */
class StreamWriterLike {
  [Symbol.asyncIterator]() {
    return { next: () => new Promise(() => {}) };
  }
}
const message = (callId, action = 'x', attachments = 0, expectsReply = true) => ({
  type: 'message',
  callId,
  expectsReply,
  uuid: null,
  attachments,
  action,
  payload: new Uint8Array(0),
});
const open = (streamId, file = null) => ({ type: 'streamOpen', streamId, file });
const data = (streamId, length) => ({ type: 'streamData', streamId, data: new Uint8Array(length) });

function assertViolation(s, code) {
  assert.equal(s.errors.length, 1, 'one protocol error reported');
  assert.ok(s.errors[0] instanceof P.ProtocolError);
  assert.equal(s.errors[0].code, code);
  const goAway = s.sent.at(-1);
  assert.equal(goAway.type, 'goAway');
  assert.equal(goAway.code, code);
  assert.equal(s.peer.isClosed, true);
}

describe('protocol violations', () => {
  test('a response to a call id never used: ERR_PROTOCOL_CALL_ID, pending calls disconnected', async () => {
    for (const frame of [
      { type: 'response', callId: 2, last: true, attachments: 0, payload: new Uint8Array(0) },
      { type: 'end', callId: 2 },
      { type: 'fastReply', callId: 2, code: 1 },
      { type: 'error', callId: 2, code: 'E', message: '', details: new Uint8Array(0) },
      { type: 'end', callId: 0 },
    ]) {
      const s = subject();
      const pending = s.peer.call('a');
      s.peer.receive(frame);
      assertViolation(s, 'ERR_PROTOCOL_CALL_ID');
      const e = await pending.catch((e) => e);
      assert.equal(e.code, 'ERR_DISCONNECTED');
      assert.equal(e.cause.code, 'ERR_PROTOCOL_CALL_ID');
    }
  });

  test('call ids that do not increase: ERR_PROTOCOL_CALL_ID (the sequence check)', () => {
    const s = subject({ handler: () => new Promise(() => {}) });
    s.peer.receive(message(5));
    s.peer.receive(message(5));
    assertViolation(s, 'ERR_PROTOCOL_CALL_ID');
  });

  test('stream data beyond the credit: ERR_PROTOCOL_FLOW_CONTROL', () => {
    const aborted = [];
    const s = subject({ handler: (call) => new Promise(() => call.signal.addEventListener('abort', () => aborted.push(call.signal.reason.code))) });
    s.peer.receive(message(1, 'up', 1));
    s.peer.receive(open(1));
    s.peer.receive(data(1, 4000));
    s.peer.receive(data(1, 96));
    assert.equal(s.errors.length, 0, 'exactly the window is fine');
    s.peer.receive(data(1, 1));
    assertViolation(s, 'ERR_PROTOCOL_FLOW_CONTROL');
    assert.deepEqual(aborted, ['ERR_DISCONNECTED']);
  });

  test('data after STOP is dropped but still counted against the credit', async () => {
    const s = subject({
      handler: async (call) => {
        await call.stream.read();
        call.stream.stop();
        return 'ok';
      },
    });
    s.peer.receive(message(1, 'up', 1));
    s.peer.receive(open(1));
    s.peer.receive(data(1, 1000));
    await tick();
    assert.ok(s.types().includes('stop'));
    s.peer.receive(data(1, 2000)); // in flight before the STOP arrived
    assert.equal(s.peer.stats().bufferedBytes, 0);
    s.peer.receive(data(1, 2000)); // beyond the window (4096 - 1000 - 2000 < 2000)
    assertViolation(s, 'ERR_PROTOCOL_FLOW_CONTROL');
  });

  test('after STOP, the STREAM_END closes the id; then data is ERR_PROTOCOL_STREAM_ID', async () => {
    const s = subject({ handler: (call) => (call.stream.stop(), 'ok') });
    s.peer.receive(message(1, 'up', 1));
    s.peer.receive(open(1));
    s.peer.receive(data(1, 10));
    s.peer.receive({ type: 'streamEnd', streamId: 1, abort: { code: 'ERR_STREAM_STOPPED', message: '' } });
    assert.equal(s.peer.stats().inboundStreams, 0);
    assert.equal(s.errors.length, 0);
    s.peer.receive(data(1, 10));
    assertViolation(s, 'ERR_PROTOCOL_STREAM_ID');
  });

  test('data for a stream that was never opened: ERR_PROTOCOL_STREAM_ID', () => {
    const s = subject();
    s.peer.receive(data(7, 1));
    assertViolation(s, 'ERR_PROTOCOL_STREAM_ID');
  });

  test('a file whose data exceeds or falls short of its size: ERR_PROTOCOL_FILE_SIZE', () => {
    const over = subject({ handler: () => new Promise(() => {}) });
    over.peer.receive(message(1, 'up', 1));
    over.peer.receive(open(1, { name: 'f', size: 10 }));
    over.peer.receive(data(1, 8));
    over.peer.receive(data(1, 3));
    assertViolation(over, 'ERR_PROTOCOL_FILE_SIZE');

    const under = subject({ handler: () => new Promise(() => {}) });
    under.peer.receive(message(1, 'up', 1));
    under.peer.receive(open(1, { name: 'f', size: 10 }));
    under.peer.receive(data(1, 9));
    under.peer.receive({ type: 'streamEnd', streamId: 1, abort: null });
    assertViolation(under, 'ERR_PROTOCOL_FILE_SIZE');

    // An aborted file may stop short: that is the sender giving up, not a violation.
    const aborted = subject({ handler: () => new Promise(() => {}) });
    aborted.peer.receive(message(1, 'up', 1));
    aborted.peer.receive(open(1, { name: 'f', size: 10 }));
    aborted.peer.receive(data(1, 9));
    aborted.peer.receive({ type: 'streamEnd', streamId: 1, abort: { code: 'E_GAVE_UP', message: '' } });
    assert.equal(aborted.errors.length, 0);
  });

  test('attachments out of sequence: ERR_PROTOCOL_SEQUENCE', () => {
    const s = subject({ handler: () => 1 });
    s.peer.receive(message(1, 'up', 2));
    s.peer.receive(open(1));
    s.peer.receive(message(2));
    assertViolation(s, 'ERR_PROTOCOL_SEQUENCE');
    const s2 = subject();
    s2.peer.receive(open(1));
    assertViolation(s2, 'ERR_PROTOCOL_SEQUENCE');
  });

  test("a GO_AWAY for a violation leaves out a message still owed its STREAM_OPENs (it was never dispatched)", () => {
    const dispatched = [];
    const s = subject({ handler: (call) => (dispatched.push(call.callId), new Promise(() => {})) });
    s.peer.receive(message(1));
    s.peer.receive(message(2, 'up', 2));
    s.peer.receive(open(1));
    s.peer.receive({ type: 'heartbeat', pong: false });
    assertViolation(s, 'ERR_PROTOCOL_SEQUENCE');
    assert.deepEqual(dispatched, [1]);
    assert.equal(s.sent.at(-1).lastCallId, 1);
    const alone = subject({ handler: () => 1 });
    alone.peer.receive(message(1, 'up', 1));
    alone.peer.receive({ type: 'heartbeat', pong: false });
    assertViolation(alone, 'ERR_PROTOCOL_SEQUENCE');
    assert.equal(alone.sent.at(-1).lastCallId, 0);
  });

  test('CREDIT, STOP or CANCEL naming an id never used: ERR_PROTOCOL_STREAM_ID / ERR_PROTOCOL_CALL_ID', () => {
    for (const [frame, code] of [
      [{ type: 'credit', streamId: 9, increment: 100 }, 'ERR_PROTOCOL_STREAM_ID'],
      [{ type: 'stop', streamId: 9, code: 'ERR_STREAM_STOPPED' }, 'ERR_PROTOCOL_STREAM_ID'],
      [{ type: 'credit', streamId: 0, increment: 1 }, 'ERR_PROTOCOL_STREAM_ID'],
      [{ type: 'cancel', callId: 9 }, 'ERR_PROTOCOL_CALL_ID'],
      [{ type: 'cancel', callId: 0 }, 'ERR_PROTOCOL_CALL_ID'],
    ]) {
      const s = subject();
      s.peer.receive(frame);
      assertViolation(s, code);
    }
    // Stream 1 is ours, stream 2 is not yet; call 3 is theirs, call 4 is not yet.
    const s = subject({ handler: () => new Promise(() => {}) });
    s.peer.notify('up', null, { stream: new StreamWriterLike() });
    s.peer.receive({ type: 'credit', streamId: 1, increment: 5 });
    s.peer.receive(message(3));
    s.peer.receive({ type: 'cancel', callId: 3 });
    assert.equal(s.errors.length, 0);
    s.peer.receive({ type: 'stop', streamId: 2, code: 'ERR_STREAM_STOPPED' });
    assertViolation(s, 'ERR_PROTOCOL_STREAM_ID');
    const c = subject({ handler: () => new Promise(() => {}) });
    c.peer.receive(message(3));
    c.peer.receive({ type: 'cancel', callId: 4 });
    assertViolation(c, 'ERR_PROTOCOL_CALL_ID');
  });

  test('a handshake frame after the handshake: ERR_PROTOCOL_HANDSHAKE', () => {
    const s = subject();
    s.peer.receive({ type: 'welcome', ...settings(), codec: 'json', data: new Uint8Array(0) });
    assertViolation(s, 'ERR_PROTOCOL_HANDSHAKE');
  });

  test('nothing is processed after a violation', () => {
    let calls = 0;
    const s = subject({ handler: () => calls++ });
    s.peer.receive(data(1, 1));
    const count = s.sent.length;
    s.peer.receive(message(1));
    s.peer.receive({ type: 'heartbeat', pong: false });
    assert.equal(calls, 0);
    assert.equal(s.sent.length, count);
  });

  test('fail() sends GO_AWAY with the code and closes, without the callback', async () => {
    const s = subject();
    const pending = s.peer.call('x');
    s.peer.fail(new P.ProtocolError('ERR_PROTOCOL_MALFORMED', 'bad bytes'));
    assert.deepEqual(s.sent.at(-1), { type: 'goAway', lastCallId: 0, code: 'ERR_PROTOCOL_MALFORMED', message: 'bad bytes' });
    assert.equal(s.errors.length, 0);
    assert.equal((await pending.catch((e) => e)).code, 'ERR_DISCONNECTED');
  });
});

describe('expected races are not violations', () => {
  test('late responses to finished calls are ignored; their streams are stopped', async () => {
    const s = subject();
    const p = s.peer.call('x', null, { timeoutMs: 1 });
    await assert.rejects(p, { code: 'ERR_TIMEOUT' });
    s.peer.receive({ type: 'response', callId: 1, last: false, attachments: 2, payload: new Uint8Array(0) });
    s.peer.receive(open(1));
    s.peer.receive(open(2, { name: 'f', size: 100 }));
    s.peer.receive(data(1, 50));
    s.peer.receive({ type: 'fastReply', callId: 1, code: 3 });
    s.peer.receive({ type: 'streamEnd', streamId: 1, abort: { code: 'ERR_STREAM_STOPPED', message: '' } });
    s.peer.receive({ type: 'streamEnd', streamId: 2, abort: { code: 'ERR_STREAM_STOPPED', message: '' } });
    assert.equal(s.errors.length, 0);
    assert.deepEqual(s.types(), ['message', 'cancel', 'stop', 'stop']);
    assert.equal(s.peer.stats().responsesReceived, 2);
    assert.equal(s.peer.stats().inboundStreams, 0);
  });

  test('a response to a one-way message id is ignored', () => {
    const s = subject();
    s.peer.notify('event');
    s.peer.receive({ type: 'end', callId: 1 });
    assert.equal(s.errors.length, 0);
  });

  test('CREDIT, STOP and CANCEL for closed ids are ignored', async () => {
    // (They were ignored for ids never used too; docs/protocol.md §4 now
    // makes those violations: see "CREDIT, STOP or CANCEL naming an id
    // never used" above.)
    const s = subject({ handler: () => 1 });
    s.peer.notify('up', null, { stream: new Uint8Array(10) });
    s.peer.receive(message(1));
    s.peer.receive(message(2, 'x', 0, false));
    await tick();
    assert.deepEqual(s.types(), ['message', 'streamOpen', 'streamData', 'streamEnd', 'fastReply']);
    const count = s.sent.length;
    s.peer.receive({ type: 'credit', streamId: 1, increment: 100 });
    s.peer.receive({ type: 'stop', streamId: 1, code: 'ERR_STREAM_STOPPED' });
    s.peer.receive({ type: 'cancel', callId: 1 });
    s.peer.receive({ type: 'cancel', callId: 2 });
    assert.equal(s.errors.length, 0);
    assert.equal(s.sent.length, count);
  });

  test("after the other side's GO_AWAY its new calls are refused (ERROR ERR_GOING_AWAY), numbered one-way messages dropped, broadcasts dispatched", async () => {
    const dispatched = [];
    const s = subject({ handler: (call) => (dispatched.push(call.callId), new Promise(() => {})) });
    s.peer.receive(message(1));
    s.peer.receive({ type: 'goAway', lastCallId: 0, code: 'ERR_GOING_AWAY', message: '' });
    s.peer.receive(message(2, 'late', 1));
    s.peer.receive(open(1));
    s.peer.receive(message(3, 'late', 0, false));
    s.peer.receive(message(0, 'channel', 0, false));
    assert.deepEqual(dispatched, [1, 0]);
    assert.deepEqual(
      s.sent.map((f) => [f.type, f.callId ?? f.streamId, f.code]),
      [
        ['stop', 1, 'ERR_GOING_AWAY'],
        ['error', 2, 'ERR_GOING_AWAY'],
      ],
    );
    assert.equal(s.errors.length, 0);
    // Nor may this side start calls any more.
    await assert.rejects(s.peer.call('x'), { code: 'ERR_GOING_AWAY', retryable: true });
    assert.throws(() => s.peer.notify('x'), { code: 'ERR_GOING_AWAY' });
  });

  test('messages after our GO_AWAY are not dispatched; their streams are stopped', () => {
    const dispatched = [];
    const s = subject({ handler: (call) => (dispatched.push(call.callId), new Promise(() => {})) });
    s.peer.receive(message(1));
    s.peer.goAway();
    s.peer.receive(message(2, 'late', 1));
    s.peer.receive(open(1));
    s.peer.receive(message(3, 'late', 0, false));
    assert.deepEqual(dispatched, [1]);
    assert.deepEqual(s.types(), ['goAway', 'stop']);
    assert.equal(s.sent[0].lastCallId, 1);
    assert.equal(s.errors.length, 0);
  });
});
