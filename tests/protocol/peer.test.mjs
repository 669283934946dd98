// The symmetric RPC peer (packages/rpc/src/peer): calls, one-way
// messages, handlers, errors, cancellation, timeouts, go-away, limits,
// UUIDs, codecs, wrap/exposeObject and templates. Streams and files are in
// peer-streams.test.mjs, protocol violations in peer-violations.test.mjs.
//
// Two Peers talk through an in-memory transport that really encodes and
// decodes: each write goes through FrameDecoder, in random small chunks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as P from '../../packages/rpc/dist/index.js';

import { settings, connect, tick, sleep, until, deferred, rejectsWith, idle } from './peer-harness.mjs';

// --- calls -----------------------------------------------------------------

describe('calls', () => {
  for (const codec of [P.jsonCodec, P.msgpackCodec]) {
    test(`call resolves with the decoded response (${codec.name})`, async () => {
      const t = connect({ codec, chunk: 3, peerB: { handler: (call) => ({ sum: call.decode().a + call.decode().b, action: call.action }) } });
      assert.deepEqual(await t.a.call('add', { a: 1, b: 2 }), { sum: 3, action: 'add' });
      assert.deepEqual(await t.a.call('add', { a: 1.5, b: -4 }), { sum: -2.5, action: 'add' });
      assert.ok(idle(t.a) && idle(t.b));
    });
  }

  test('a handler returning a non-negative integer answers with a fast reply', async () => {
    const t = connect({ peerB: { handler: (call) => call.decode() } });
    assert.equal(await t.a.call('n', 300), 300);
    assert.equal(await t.a.call('n', 2 ** 48 - 1), 2 ** 48 - 1);
    assert.equal(t.sent('b', 'fastReply').length, 2);
    // Not an integer in range: a RESPONSE.
    assert.equal(await t.a.call('n', -1), -1);
    assert.equal(await t.a.call('n', 1.5), 1.5);
    assert.equal(t.sent('b', 'response').length, 2);
    const r = await t.a.request('n', 7);
    assert.equal(r.kind, 'fastReply');
    assert.equal(r.code, 7);
    assert.equal(r.value, 7);
    assert.equal(r.last, true);
  });

  test('explicit fastReply, respond, end and the undefined return', async () => {
    const t = connect({
      peerB: {
        handler: (call) => {
          switch (call.action) {
            case 'fast':
              call.fastReply(5);
              return 'ignored: already replied';
            case 'respond':
              call.respond(5); // a value through the codec, not a fast reply
              return undefined;
            case 'nothing':
              return undefined;
            case 'end':
              call.end();
              return undefined;
          }
        },
      },
    });
    assert.equal(await t.a.call('fast'), 5);
    assert.equal(await t.a.call('respond'), 5);
    assert.equal(await t.a.call('nothing'), undefined);
    assert.equal(await t.a.call('end'), undefined);
    assert.deepEqual(t.log.b.map((f) => f.type), ['fastReply', 'response', 'end', 'end']);
    const r = await t.a.request('nothing');
    assert.equal(r.kind, 'end');
    assert.equal(r.value, undefined);
    assert.equal(r.uuid, null);
  });

  test('callMany yields every response until the last; END after responses ends it', async () => {
    const t = connect({
      chunk: 5,
      peerB: {
        handler: async (call) => {
          const n = call.decode();
          for (let i = 0; i < n; i++) {
            call.respond(i, { last: false });
            await tick();
          }
          if (call.action === 'withLast') call.respond('last');
          // else: returning undefined sends END
        },
      },
    });
    const got = [];
    for await (const v of t.a.callMany('withLast', 3)) got.push(v);
    assert.deepEqual(got, [0, 1, 2, 'last']);
    got.length = 0;
    for await (const v of t.a.callMany('withEnd', 4)) got.push(v);
    assert.deepEqual(got, [0, 1, 2, 3]);
    got.length = 0;
    for await (const v of t.a.callMany('withEnd', 0)) got.push(v);
    assert.deepEqual(got, []);
    const responses = [];
    for await (const r of t.a.requestMany('withLast', 2)) responses.push(r);
    assert.deepEqual(responses.map((r) => [r.kind, r.last, r.value]), [
      ['response', false, 0],
      ['response', false, 1],
      ['response', true, 'last'],
    ]);
    assert.ok(idle(t.a) && idle(t.b));
  });

  test('call takes the first of many responses and drops the rest without cancelling', async () => {
    const finished = deferred();
    const t = connect({
      peerB: {
        handler: async (call) => {
          call.respond('first', { last: false });
          await sleep(5);
          call.respond('second', { last: false });
          call.respond('third');
          finished.resolve(call.signal.aborted);
        },
      },
    });
    assert.equal(await t.a.call('many'), 'first');
    assert.equal(t.a.pendingCalls, 1, 'the call drains until its last response');
    assert.equal(await finished.promise, false, 'the handler was not cancelled');
    await until(() => t.a.pendingCalls === 0, 'the drain');
    assert.equal(t.sent('a', 'cancel').length, 0);
  });

  test('calls complete out of order but are dispatched in order', async () => {
    const started = [];
    const t = connect({
      chunk: 2,
      peerB: {
        handler: async (call) => {
          const n = call.decode();
          started.push(n);
          await sleep((10 - n) * 3);
          return n * 10;
        },
      },
    });
    const finished = [];
    const calls = [];
    for (let n = 0; n < 10; n++) calls.push(t.a.call('slow', n).then((v) => (finished.push(n), v)));
    assert.deepEqual(await Promise.all(calls), [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.notDeepEqual(finished, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(finished[0], 9);
  });

  test('both sides call each other at once (the peer is symmetric)', async () => {
    const t = connect({
      peerA: { handler: (call) => `a:${call.decode()}` },
      peerB: { handler: async (call) => `b:${call.decode()}+${await t.b.call('back', call.decode())}` },
    });
    assert.equal(await t.a.call('x', 1), 'b:1+a:1');
    assert.equal(await t.b.call('y', 2), 'a:2');
  });

  test('the payload and the call are what the caller sent', async () => {
    let seen;
    const t = connect({ peerB: { handler: (call) => void (seen = call) } });
    await t.a.call('inspect', [1, 'two']);
    assert.equal(seen.action, 'inspect');
    assert.equal(seen.callId, 1);
    assert.equal(seen.expectsReply, true);
    assert.equal(new TextDecoder().decode(seen.payload), '[1,"two"]');
    assert.deepEqual(seen.decode(), [1, 'two']);
    assert.equal(seen.stream, null);
    assert.deepEqual(seen.files, []);
    assert.equal(seen.finished, true);
  });

  test('raw calls send bytes as they are and give bytes back', async () => {
    const t = connect({ peerB: { handler: (call) => call.respondRaw(call.payload.map((b) => b + 1)) } });
    const out = await t.a.call('inc', Uint8Array.of(1, 2, 3), { raw: true });
    assert.deepEqual([...out], [2, 3, 4]);
    await rejectsWith(t.a.call('inc', 'not bytes', { raw: true }), 'ERR_INVALID_ARGUMENT');
  });

  test('invalid calls fail without sending anything', async () => {
    const t = connect({ b: { maxFrameSize: 1024 }, peerB: { handler: () => 1 } });
    await rejectsWith(t.a.call(''), 'ERR_INVALID_ARGUMENT');
    await rejectsWith(t.a.call('x'.repeat(256)), 'ERR_INVALID_ARGUMENT');
    await rejectsWith(t.a.call('big', 'x'.repeat(2000)), 'ERR_PAYLOAD_TOO_LARGE');
    await rejectsWith(t.a.call('uuid', 1, { uuid: new Uint8Array(3) }), 'ERR_INVALID_ARGUMENT');
    await tick();
    assert.equal(t.log.a.length, 0);
    assert.equal(t.a.stats().lastCallId, 0);
    assert.equal(await t.a.call('ok'), 1);
  });

  test('values the codec cannot encode: ERR_PAYLOAD_ENCODE on either side', async () => {
    const t = connect({ peerB: { handler: () => ({ big: 10n }) } });
    await rejectsWith(t.a.call('x', { big: 1n }), 'ERR_PAYLOAD_ENCODE');
    assert.equal(t.a.stats().lastCallId, 0);
    await rejectsWith(t.a.call('x'), 'ERR_PAYLOAD_ENCODE');
  });

  test('ending a callMany iteration before its first next() still cancels the call', async () => {
    const aborted = deferred();
    const t = connect({ peerB: { handler: (call) => new Promise(() => call.signal.addEventListener('abort', () => aborted.resolve(call.signal.reason.code))) } });
    const many = t.a.callMany('x');
    await until(() => t.b.stats().incomingCalls === 1, 'the call');
    await many.return();
    assert.equal(await aborted.promise, 'ERR_CANCELLED');
    assert.equal(t.a.pendingCalls, 0);
    assert.deepEqual(await many.next(), { done: true, value: undefined });
  });

  test('a response too large for the caller becomes ERR_PAYLOAD_TOO_LARGE', async () => {
    const t = connect({ a: { maxFrameSize: 1024 }, peerB: { handler: () => 'y'.repeat(5000) } });
    await rejectsWith(t.a.call('big'), 'ERR_PAYLOAD_TOO_LARGE');
  });
});

// --- errors ----------------------------------------------------------------

describe('errors', () => {
  test('a thrown error with a code is restored with its code, message and details', async () => {
    const t = connect({
      codec: P.msgpackCodec,
      peerB: {
        handler: (call) => {
          if (call.action === 'throw') throw Object.assign(new Error('no such user'), { code: 'E_NO_USER', details: { id: 7 } });
          if (call.action === 'rpc') throw new P.RpcError('E_RPC', 'rpc error', { details: [1, 2] });
          call.error('E_EXPLICIT', 'explicit', { why: 'because' });
        },
      },
    });
    for (const [action, code, message, details] of [
      ['throw', 'E_NO_USER', 'no such user', { id: 7 }],
      ['rpc', 'E_RPC', 'rpc error', [1, 2]],
      ['explicit', 'E_EXPLICIT', 'explicit', { why: 'because' }],
    ]) {
      const error = await t.a.call(action).then(
        () => assert.fail('resolved'),
        (e) => e,
      );
      assert.ok(error instanceof P.RemoteError);
      assert.ok(error instanceof P.RpcError);
      assert.equal(error.code, code);
      assert.equal(error.message, message);
      assert.deepEqual(error.details, details);
      assert.match(error.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });

  test('an error without a code becomes ERR_HANDLER_FAILED and is reported locally', async () => {
    const reported = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          if (call.action === 'sync') throw new Error('secret internals');
          await tick();
          throw 'a string';
        },
        onHandlerError: (error, call) => reported.push([call.action, error]),
      },
    });
    const e1 = await t.a.call('sync').catch((e) => e);
    assert.equal(e1.code, 'ERR_HANDLER_FAILED');
    assert.doesNotMatch(e1.message, /secret/);
    await rejectsWith(t.a.call('async'), 'ERR_HANDLER_FAILED');
    assert.deepEqual(reported.map(([a, e]) => [a, e instanceof Error ? e.message : e]), [
      ['sync', 'secret internals'],
      ['async', 'a string'],
    ]);
  });

  test('exposeHandlerErrors sends the message of uncoded errors', async () => {
    const t = connect({ peerB: { handler: () => { throw new Error('details for developers'); }, exposeHandlerErrors: true } });
    const e = await t.a.call('x').catch((e) => e);
    assert.equal(e.code, 'ERR_HANDLER_FAILED');
    assert.equal(e.message, 'details for developers');
  });

  test('no handler: ERR_NOT_IMPLEMENTED', async () => {
    const t = connect();
    await rejectsWith(t.a.call('anything'), 'ERR_NOT_IMPLEMENTED');
  });

  test('replying twice, or to a one-way message, throws ERR_REPLY_NOT_ALLOWED', async () => {
    const errors = [];
    const oneWay = deferred();
    const t = connect({
      peerB: {
        handler: (call) => {
          if (!call.expectsReply) {
            try {
              call.respond(1);
            } catch (e) {
              oneWay.resolve(e.code);
            }
            return;
          }
          call.respond(1);
          for (const reply of [() => call.respond(2), () => call.fastReply(3), () => call.error('E', 'x'), () => call.end()]) {
            try {
              reply();
            } catch (e) {
              errors.push(e.code);
            }
          }
        },
      },
    });
    assert.equal(await t.a.call('twice'), 1);
    assert.deepEqual(errors, Array(4).fill('ERR_REPLY_NOT_ALLOWED'));
    t.a.notify('oneway');
    assert.equal(await oneWay.promise, 'ERR_REPLY_NOT_ALLOWED');
  });

  test('invalid reply arguments throw, and the throw becomes the reply', async () => {
    const t = connect({
      peerB: {
        handler: (call) => {
          if (call.action === 'badFast') call.fastReply(-1);
          else call.error('not ascii é', 'x');
        },
      },
    });
    await rejectsWith(t.a.call('badFast'), 'ERR_INVALID_ARGUMENT');
    await rejectsWith(t.a.call('badCode'), 'ERR_INVALID_ARGUMENT');
  });
});

// --- one-way -----------------------------------------------------------------

describe('one-way messages', () => {
  test('notify keeps no state on either side', async () => {
    const got = [];
    const t = connect({ peerB: { handler: (call) => void got.push([call.action, call.decode(), call.expectsReply, call.finished]) } });
    for (let i = 0; i < 100; i++) t.a.notify('event', i);
    assert.equal(t.a.pendingCalls, 0);
    await until(() => got.length === 100, 'the messages');
    assert.deepEqual(got[99], ['event', 99, false, true]);
    assert.ok(idle(t.a) && idle(t.b));
    assert.equal(t.log.b.length, 0, 'nothing is answered');
    // Call ids are shared with calls and keep increasing.
    t.b.setHandler(() => 1);
    await t.a.call('after');
    assert.equal(t.log.a.at(-1).callId, 101);
  });

  test('one-way messages are dispatched beyond maxConcurrentCalls and their failures reported', async () => {
    const reported = [];
    const gate = deferred();
    let running = 0;
    const t = connect({
      b: { maxConcurrentCalls: 1 },
      peerB: {
        handler: async () => {
          running += 1;
          await gate.promise;
          throw Object.assign(new Error('oops'), { code: 'E_ONEWAY' });
        },
        onHandlerError: (e) => reported.push(e.code),
      },
    });
    for (let i = 0; i < 5; i++) t.a.notify('e');
    await until(() => running === 5, 'five handlers');
    assert.equal(t.b.stats().runningHandlers, 5);
    gate.resolve();
    await until(() => reported.length === 5, 'the reports');
    assert.equal(t.b.stats().runningHandlers, 0);
  });

  test('notify throws when it cannot send', () => {
    const t = connect();
    assert.throws(() => t.a.notify(''), { code: 'ERR_INVALID_ARGUMENT' });
    t.disconnect();
    assert.throws(() => t.a.notify('x'), { code: 'ERR_DISCONNECTED' });
  });
});

// --- cancellation and timeouts ----------------------------------------------------

describe('cancellation and timeouts', () => {
  /** A handler that waits for its signal and records how it ended. */
  const waiting = (aborted) => (call) =>
    new Promise((resolve) => {
      call.signal.addEventListener('abort', () => {
        aborted.push([call.action, call.signal.reason.code, call.cancelled]);
        resolve('too late');
      });
    });

  test('a timeout rejects with ERR_TIMEOUT, sends CANCEL, fires the handler signal', async () => {
    const aborted = [];
    const t = connect({ peerB: { handler: waiting(aborted) } });
    const started = Date.now();
    await rejectsWith(t.a.call('slow', null, { timeoutMs: 30 }), 'ERR_TIMEOUT');
    assert.ok(Date.now() - started >= 25);
    assert.equal(t.a.pendingCalls, 0);
    await until(() => aborted.length === 1, 'the abort');
    assert.deepEqual(aborted, [['slow', 'ERR_CANCELLED', true]]);
    assert.equal(t.sent('a', 'cancel').length, 1);
    // The handler's late reply is not sent (the call was cancelled) and nothing breaks.
    await until(() => idle(t.b), 'b idle');
    assert.equal(await t.a.call('slow', null, { timeoutMs: 1 }).catch((e) => e.code), 'ERR_TIMEOUT');
  });

  test('defaultTimeoutMs applies to calls without their own; 0 disables', async () => {
    const t = connect({ peerA: { defaultTimeoutMs: 20 }, peerB: { handler: (call) => sleep(call.decode()).then(() => 'done') } });
    await rejectsWith(t.a.call('x', 200), 'ERR_TIMEOUT');
    assert.equal(await t.a.call('x', 60, { timeoutMs: 0 }), 'done');
  });

  test('injected timers drive timeouts', async () => {
    const timers = [];
    const fake = {
      setTimeout: (fn, ms) => (timers.push({ fn, ms, cleared: false }), timers.length - 1),
      clearTimeout: (h) => (timers[h].cleared = true),
    };
    const t = connect({ peerA: { timers: fake }, peerB: { handler: () => new Promise(() => {}) } });
    const p = t.a.call('never', null, { timeoutMs: 1234 });
    assert.equal(timers.length, 1);
    assert.equal(timers[0].ms, 1234);
    timers[0].fn();
    await rejectsWith(p, 'ERR_TIMEOUT');
    t.b.setHandler(() => 1);
    await t.a.call('quick', null, { timeoutMs: 99 });
    assert.equal(timers[1].cleared, true);
  });

  test('an aborted signal rejects with ERR_CANCELLED (reason as cause) and fires the handler signal', async () => {
    const aborted = [];
    const t = connect({ peerB: { handler: waiting(aborted) } });
    const controller = new AbortController();
    const p = t.a.call('wait', null, { signal: controller.signal });
    await until(() => t.b.stats().incomingCalls === 1, 'the call to arrive');
    const reason = new Error('user left');
    controller.abort(reason);
    const error = await p.catch((e) => e);
    assert.equal(error.code, 'ERR_CANCELLED');
    assert.equal(error.cause, reason);
    await until(() => aborted.length === 1, 'the handler abort');
    assert.deepEqual(aborted, [['wait', 'ERR_CANCELLED', true]]);
    assert.equal(t.b.stats().incomingCalls, 0);
    // Already aborted: nothing is sent.
    const before = t.log.a.length;
    await rejectsWith(t.a.call('wait', null, { signal: AbortSignal.abort() }), 'ERR_CANCELLED');
    await tick();
    assert.equal(t.log.a.length, before);
  });

  test('cancellation works in both directions', async () => {
    const aborted = [];
    const t = connect({ peerA: { handler: waiting(aborted) }, peerB: { handler: waiting(aborted) } });
    const c1 = new AbortController();
    const c2 = new AbortController();
    const p1 = t.a.call('fromA', null, { signal: c1.signal });
    const p2 = t.b.call('fromB', null, { signal: c2.signal });
    await until(() => t.a.stats().incomingCalls === 1 && t.b.stats().incomingCalls === 1, 'both calls');
    c1.abort();
    c2.abort();
    await rejectsWith(p1, 'ERR_CANCELLED');
    await rejectsWith(p2, 'ERR_CANCELLED');
    await until(() => aborted.length === 2, 'both aborts');
    assert.deepEqual(aborted.map((x) => x[0]).sort(), ['fromA', 'fromB']);
  });

  test('breaking out of callMany cancels the call', async () => {
    const aborted = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          for (let i = 0; !call.signal.aborted; i++) {
            call.respond(i, { last: false });
            await sleep(1);
          }
          aborted.push(call.signal.reason.code);
        },
      },
    });
    const got = [];
    for await (const v of t.a.callMany('ticks')) {
      got.push(v);
      if (got.length === 3) break;
    }
    assert.deepEqual(got, [0, 1, 2]);
    assert.equal(t.a.pendingCalls, 0);
    await until(() => aborted.length === 1, 'the handler to stop');
    assert.deepEqual(aborted, ['ERR_CANCELLED']);
  });

  test('without the cancellation feature no CANCEL is sent, the call still ends locally', async () => {
    const t = connect({ a: { features: P.Feature.Streams }, peerB: { handler: () => sleep(40).then(() => 'late') } });
    await rejectsWith(t.a.call('x', null, { timeoutMs: 5 }), 'ERR_TIMEOUT');
    await sleep(60);
    assert.equal(t.sent('a', 'cancel').length, 0);
    assert.equal(t.sent('b', 'response').length, 1, 'the late response came and was ignored');
    assert.equal(t.a.pendingCalls, 0);
  });
});

// --- connection lifecycle ------------------------------------------------------

describe('disconnect and go-away', () => {
  test('a disconnect rejects pending calls, aborts handlers and fails streams', async () => {
    const handlerAborts = [];
    const streamErrors = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          call.signal.addEventListener('abort', () => handlerAborts.push(call.signal.reason.code));
          if (call.stream) {
            try {
              for await (const _ of call.stream);
            } catch (e) {
              streamErrors.push(e.code);
            }
          }
          await new Promise(() => {});
        },
      },
    });
    const writer = P.openStream();
    const pending = [t.a.call('one'), t.a.call('two'), t.a.call('upload', null, { stream: writer })];
    const many = t.a.callMany('many');
    await writer.write(new Uint8Array(10));
    await until(() => t.b.stats().incomingCalls === 4, 'the calls to arrive');
    const cause = new Error('socket hang up');
    t.disconnect(cause);
    for (const p of pending) {
      const e = await p.catch((e) => e);
      assert.equal(e.code, 'ERR_DISCONNECTED');
      assert.equal(e.cause, cause);
    }
    await rejectsWith(many.next(), 'ERR_DISCONNECTED');
    await rejectsWith(writer.write(new Uint8Array(1)), 'ERR_DISCONNECTED');
    await rejectsWith(writer.finished, 'ERR_DISCONNECTED');
    await until(() => handlerAborts.length === 4 && streamErrors.length === 1, 'aborts');
    assert.deepEqual(handlerAborts, Array(4).fill('ERR_DISCONNECTED'));
    assert.deepEqual(streamErrors, ['ERR_DISCONNECTED']);
    await rejectsWith(t.a.call('after'), 'ERR_DISCONNECTED');
    assert.ok(idle(t.a) && idle(t.b));
    assert.equal(t.a.isClosed, true);
    await t.a.whenIdle();
  });

  test('go-away: calls in flight complete, later ones fail as retryable, new ones are refused', async () => {
    const processed = [];
    const t = connect({
      peerB: {
        handler: async (call) => {
          processed.push(call.decode());
          if (call.decode() === 1) t.b.goAway('ERR_GOING_AWAY', 'restarting');
          await sleep(10);
          return call.decode() * 100;
        },
      },
    });
    const calls = [1, 2, 3].map((n) => t.a.call('work', n).then((v) => ['ok', v], (e) => [e.code, e.retryable]));
    const results = await Promise.all(calls);
    assert.deepEqual(results, [
      ['ok', 100],
      ['ERR_GOING_AWAY', true],
      ['ERR_GOING_AWAY', true],
    ]);
    assert.deepEqual(processed, [1], 'calls after the go-away were not dispatched');
    const goAway = t.sent('b', 'goAway')[0];
    assert.deepEqual([goAway.lastCallId, goAway.code, goAway.message], [1, 'ERR_GOING_AWAY', 'restarting']);
    assert.equal(t.a.isGoingAway, true);
    assert.equal(t.b.isGoingAway, true);
    const refused = await t.a.call('more', 4).catch((e) => e);
    assert.deepEqual([refused.code, refused.retryable], ['ERR_GOING_AWAY', true]);
    assert.throws(() => t.b.notify('x'), { code: 'ERR_GOING_AWAY' });
    await t.b.whenIdle();
    await t.a.whenIdle();
  });

  test('onGoAway is told, and whenIdle waits for calls in flight', async () => {
    const seen = [];
    const release = deferred();
    const t = connect({ peerA: { onGoAway: (f) => seen.push(f.code) }, peerB: { handler: () => release.promise } });
    const p = t.a.call('slow');
    await until(() => t.b.stats().incomingCalls === 1, 'the call');
    t.b.goAway();
    let idleNow = false;
    const idlePromise = t.b.whenIdle().then(() => (idleNow = true));
    await until(() => seen.length === 1, 'the go-away');
    assert.deepEqual(seen, ['ERR_GOING_AWAY']);
    await sleep(10);
    assert.equal(idleNow, false);
    release.resolve('done');
    assert.equal(await p, 'done');
    await idlePromise;
  });
});

// --- limits ------------------------------------------------------------------

describe('maxConcurrentCalls', () => {
  test('calls over the receiver limit get ERR_TOO_MANY_CALLS, without dispatch', async () => {
    let dispatched = 0;
    const gate = deferred();
    const t = connect({
      b: { maxConcurrentCalls: 2 },
      peerB: { handler: () => (dispatched++, gate.promise) },
    });
    // Make a believe b allows 10 (a caller that ignores the announced limit).
    const lying = new P.Peer({
      local: t.a.local,
      remote: { ...t.a.remote, maxConcurrentCalls: 10 },
      codec: P.jsonCodec,
      write: (bytes) => {
        const d = new P.FrameDecoder({ maxFrameSize: 1 << 20 });
        d.push(bytes);
        for (let f = d.next(); f; f = d.next()) setImmediate(() => t.b.receive(f));
      },
    });
    const results = [1, 2, 3, 4].map((n) => lying.call('x', n).then(() => 'ok', (e) => e.code));
    await until(() => dispatched === 2, 'two dispatches');
    await sleep(5);
    assert.equal(dispatched, 2);
    const errors = t.sent('b', 'error');
    assert.deepEqual(errors.map((f) => [f.callId, f.code]), [
      [3, 'ERR_TOO_MANY_CALLS'],
      [4, 'ERR_TOO_MANY_CALLS'],
    ]);
    lying.close();
    assert.deepEqual(await Promise.all(results), ['ERR_DISCONNECTED', 'ERR_DISCONNECTED', 'ERR_DISCONNECTED', 'ERR_DISCONNECTED']);
  });

  test('a caller queues calls beyond the limit the receiver announced', async () => {
    let running = 0;
    let peak = 0;
    const t = connect({
      b: { maxConcurrentCalls: 3 },
      peerB: {
        handler: async (call) => {
          running++;
          peak = Math.max(peak, running);
          await sleep(2);
          running--;
          return call.decode();
        },
      },
    });
    const calls = Array.from({ length: 20 }, (_, i) => t.a.call('q', i));
    assert.equal(t.a.stats().queuedCalls, 17);
    assert.deepEqual(await Promise.all(calls), Array.from({ length: 20 }, (_, i) => i));
    assert.equal(peak, 3);
    assert.equal(t.sent('b', 'error').length, 0);
  });

  test('queued calls can time out or be aborted before they are sent', async () => {
    const gate = deferred();
    const t = connect({ b: { maxConcurrentCalls: 1 }, peerB: { handler: () => gate.promise } });
    const first = t.a.call('hold');
    const controller = new AbortController();
    const aborted = t.a.call('queued1', null, { signal: controller.signal });
    const timed = t.a.call('queued2', null, { timeoutMs: 10 });
    const third = t.a.call('queued3');
    assert.equal(t.a.stats().queuedCalls, 3);
    controller.abort();
    await rejectsWith(aborted, 'ERR_CANCELLED');
    await rejectsWith(timed, 'ERR_TIMEOUT');
    gate.resolve(7);
    assert.equal(await first, 7);
    assert.equal(await third, 7);
    assert.deepEqual(t.sent('a', 'message').map((m) => m.action), ['hold', 'queued3']);
    assert.deepEqual(t.sent('a', 'message').map((m) => m.callId), [1, 2]);
  });

  test('a peer that accepts no calls', async () => {
    const t = connect({ b: { maxConcurrentCalls: 0 }, peerB: { handler: () => 1 } });
    await rejectsWith(t.a.call('x'), 'ERR_TOO_MANY_CALLS');
  });
});

// --- UUIDs ---------------------------------------------------------------------

describe('UUIDs', () => {
  test('both ends compute the same message and response UUIDs', async () => {
    const seen = [];
    const t = connect({
      peerB: {
        handler: (call) => {
          seen.push(call.uuid);
          if (call.action === 'err') throw Object.assign(new Error('x'), { code: 'E_X' });
          if (call.action === 'late') return sleep(30).then(() => 'late');
          return call.decode();
        },
      },
    });
    const r1 = await t.a.request('echo', 'x');
    const r2 = await t.a.request('echo', 5); // a fast reply
    const e3 = await t.a.call('err').catch((e) => e);
    assert.equal(seen[0], P.uuidToString(P.messageUuid(t.a.local.seed, 1)));
    assert.equal(seen[2], P.uuidToString(P.messageUuid(t.a.local.seed, 3)));
    assert.equal(r1.uuid, P.uuidToString(P.responseUuid(t.b.local.seed, 1)));
    assert.equal(r2.uuid, P.uuidToString(P.responseUuid(t.b.local.seed, 2)));
    assert.equal(e3.uuid, P.uuidToString(P.responseUuid(t.b.local.seed, 3)));
    // A late response is still counted: the next UUIDs stay aligned.
    const aWithoutCancel = connect({ a: { features: P.Feature.Streams }, peerB: { handler: (c) => (c.action === 'late' ? sleep(20).then(() => 'late') : 1) } });
    await aWithoutCancel.a.call('late', null, { timeoutMs: 2 }).catch(() => {});
    await sleep(40);
    const next = await aWithoutCancel.a.request('now');
    assert.equal(next.uuid, P.uuidToString(P.responseUuid(aWithoutCancel.b.local.seed, 2)));
    assert.equal(aWithoutCancel.b.stats().responsesSent, 2);
    assert.equal(aWithoutCancel.a.stats().responsesReceived, 2);
  });

  test('an explicit UUID is sent and seen by the handler', async () => {
    const uuid = P.randomSeed();
    let seen;
    const t = connect({ peerB: { handler: (call) => void (seen = call.uuid) } });
    await t.a.call('x', null, { uuid });
    assert.equal(seen, P.uuidToString(uuid));
    assert.deepEqual(t.log.a[0].uuid, uuid);
  });
});

// --- transport details ------------------------------------------------------------

describe('transport', () => {
  test('frames written in the same tick go out in one write', async () => {
    const t = connect({ peerB: { handler: (call) => call.decode() } });
    const calls = Array.from({ length: 50 }, (_, i) => t.a.call('n', i));
    await tick();
    assert.equal(t.writes.a, 1);
    await Promise.all(calls);
    assert.ok(t.writes.b <= 3, `b wrote ${t.writes.b} times`);
  });

  test('batchWrites: false writes every frame on its own', async () => {
    const t = connect({ peerA: { batchWrites: false }, peerB: { handler: () => 1 } });
    await Promise.all([t.a.call('x'), t.a.call('y'), t.a.call('z')]);
    assert.equal(t.writes.a, 3);
  });

  test('a ping is answered with a pong; a pong is ignored', async () => {
    const out = [];
    const peer = new P.Peer({ local: settings(), remote: settings(), codec: P.jsonCodec, write: (b) => out.push(b), batchWrites: false });
    peer.receive({ type: 'heartbeat', pong: false });
    peer.receive({ type: 'heartbeat', pong: true });
    assert.deepEqual(out.map((b) => [...b]), [[0x0e, 0x10, 0x00]]);
  });

  test('a write that throws closes the peer', async () => {
    const peer = new P.Peer({
      local: settings(),
      remote: settings(),
      codec: P.jsonCodec,
      write: () => {
        throw new Error('EPIPE');
      },
    });
    const p = peer.call('x');
    const error = await p.catch((e) => e);
    assert.equal(error.code, 'ERR_DISCONNECTED');
    assert.equal(error.cause.message, 'EPIPE');
    assert.equal(peer.isClosed, true);
  });
});

// --- codecs --------------------------------------------------------------------------

describe('payload codecs', () => {
  test('round trips, and undefined is an empty payload', () => {
    const value = { a: 1, b: [true, null, 'é'], c: { d: -2.5 } };
    for (const codec of [P.jsonCodec, P.msgpackCodec]) {
      assert.deepEqual(codec.decode(codec.encode(value)), value, codec.name);
      assert.equal(codec.encode(undefined).length, 0);
      assert.equal(codec.decode(new Uint8Array(0)), undefined);
    }
    assert.deepEqual([...P.rawCodec.encode('hé')], [0x68, 0xc3, 0xa9]);
    const bytes = Uint8Array.of(1, 2);
    assert.equal(P.rawCodec.encode(bytes), bytes);
    assert.equal(P.rawCodec.decode(bytes), bytes);
    assert.equal(P.rawCodec.encode(undefined).length, 0);
    assert.throws(() => P.rawCodec.encode({}), TypeError);
    assert.deepEqual(P.payloadCodecs.map((c) => c.name), ['msgpack', 'json', 'raw']);
    assert.equal(P.findCodec('json'), P.jsonCodec);
    assert.equal(P.findCodec('cbor'), undefined);
  });

  test('msgpack is plain MessagePack (no records), binary values survive', () => {
    assert.deepEqual([...P.msgpackCodec.encode({ a: 1 })], [0x81, 0xa1, 0x61, 0x01]);
    const out = P.msgpackCodec.decode(P.msgpackCodec.encode({ bin: Uint8Array.of(9, 8) }));
    assert.deepEqual([...out.bin], [9, 8]);
  });

  test('an undecodable payload rejects the call with ERR_PAYLOAD_DECODE', async () => {
    const t = connect({ peerB: { handler: (call) => call.respondRaw(Uint8Array.of(0x7b)) } });
    await rejectsWith(t.a.call('x'), 'ERR_PAYLOAD_DECODE');
    const t2 = connect({ peerB: { handler: (call) => call.decode() } });
    await rejectsWith(t2.a.call('x', Uint8Array.of(0x7b), { raw: true }), 'ERR_PAYLOAD_DECODE');
  });
});

// --- wrap / exposeObject / templates --------------------------------------------------

describe('wrap and exposeObject', () => {
  class Calculator {
    constructor() {
      this.memory = 0;
    }
    add(a, b) {
      return a + b;
    }
    async concat(...parts) {
      await tick();
      return parts.join('');
    }
    store(value) {
      this.memory = value;
    }
    fail() {
      throw Object.assign(new Error('nope'), { code: 'E_CALC' });
    }
    _private() {
      return 'hidden';
    }
  }

  test('methods are called with the arguments array, results and errors come back', async () => {
    const calc = new Calculator();
    const t = connect({ peerB: { handler: P.exposeObject(calc) } });
    const remote = P.wrap(t.a);
    assert.equal(await remote.add(1, 2), 3);
    assert.equal(await remote.add(0.5, 2), 2.5);
    assert.equal(await remote.concat('a', 'b', 'c'), 'abc');
    assert.equal(await remote.store(42), undefined);
    assert.equal(calc.memory, 42);
    await rejectsWith(remote.fail(), 'E_CALC');
    for (const name of ['_private', 'constructor', 'toString', 'hasOwnProperty', 'memory', 'nothing']) {
      await rejectsWith(remote[name](), 'ERR_NOT_IMPLEMENTED');
    }
    assert.equal(remote.then, undefined, 'the proxy is not a thenable');
    assert.equal(await Promise.resolve(remote), remote);
  });

  test('prefixes and passCall', async () => {
    const api = {
      whoami(call) {
        return call.action;
      },
    };
    const t = connect({ peerB: { handler: P.exposeObject(api, { prefix: 'user.', passCall: true }) } });
    const remote = P.wrap(t.a, { prefix: 'user.' });
    assert.equal(await remote.whoami(), 'user.whoami');
    await rejectsWith(t.a.call('whoami', []), 'ERR_NOT_IMPLEMENTED');
    await rejectsWith(P.wrap(t.a, { prefix: 'user.', callOptions: { signal: AbortSignal.abort() } }).whoami(), 'ERR_CANCELLED');
  });

  test('a plain object with arrow functions, single and missing payloads', async () => {
    const t = connect({ peerB: { handler: P.exposeObject({ double: (x) => x * 2, none: (...a) => a.length }) } });
    assert.equal(await t.a.call('double', 21), 42);
    assert.equal(await t.a.call('none'), 0);
  });
});

describe('templates', () => {
  test('defineAction names the action and types call and handler', async () => {
    const add = P.defineAction('add');
    const ping = P.defineAction('ping');
    const checked = P.defineAction('checked', {
      parse: (v) => {
        if (typeof v !== 'number') throw Object.assign(new Error('a number please'), { code: 'E_BAD_REQUEST' });
        return v;
      },
    });
    const handlers = new Map([
      [add.name, add.implement(({ a, b }) => a + b)],
      [ping.name, ping.implement(() => undefined)],
      [checked.name, checked.implement((n) => n + 1)],
    ]);
    const t = connect({ peerB: { handler: (call) => handlers.get(call.action)(call) } });
    assert.equal(await t.a.call(add, { a: 1, b: 2 }), 3);
    assert.equal(await t.a.call(ping), undefined);
    assert.equal(await t.a.call(checked, 1), 2);
    await rejectsWith(t.a.call(checked, 'x'), 'E_BAD_REQUEST');
    const got = [];
    for await (const v of t.a.callMany(add, { a: 2, b: 2 })) got.push(v);
    assert.deepEqual(got, [4]);
    assert.equal((await t.a.request(add, { a: 1, b: 1 })).value, 2);
    t.a.notify(ping);
    assert.throws(() => P.defineAction(''), TypeError);
  });
});
