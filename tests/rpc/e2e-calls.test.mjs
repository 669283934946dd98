// RPC end to end: the real client (switchboard-client) against the native
// server with inline handlers (`workers: 0`), over TCP, WebSocket and a
// Unix socket. Calls, many responses, fast replies, errors, one-way
// messages, ordering, middleware, onError, fallback, expose/wrap, typed
// actions, codecs, calls from the server to the client, cancellation and
// timeouts both ways.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RemoteError, RpcError, defineAction } from 'switchboard';
import { jsonCodec, rawCodec } from 'switchboard-client/node';
import { IDLE, TRANSPORTS, inFlight, rejectsWith, sleep, startServer, until, untilIdle } from '../fixtures/rpc-e2e.mjs';

const typedAdd = defineAction('typed.add', {
  parse(payload) {
    if (typeof payload?.a !== 'number' || typeof payload?.b !== 'number') {
      throw new RpcError('E_BAD_INPUT', 'a and b must be numbers', { details: { got: payload } });
    }
    return payload;
  },
});
const clientGreet = defineAction('client.greet');

class Calculator {
  constructor() {
    this.calls = 0;
  }
  add(a, b) {
    this.calls += 1;
    return a + b;
  }
  concat(...parts) {
    return parts.join('');
  }
  async slowSquare(x) {
    await sleep(5);
    return { square: x * x };
  }
  divide(a, b) {
    if (b === 0) throw new RpcError('E_DIV_ZERO', 'division by zero', { details: { a } });
    return a / b;
  }
  _secret() {
    return 'hidden';
  }
}

/** Everything the handlers observe, for the tests to check. */
function makeLog() {
  return {
    middleware: [],
    started: [],
    notes: [],
    aborts: [],
    opened: new Map(),
    clientAnswers: [],
  };
}

function setup(log, calculator) {
  return (rpc) => {
    rpc
      // Middleware: recorded for `mw.*` only; the second short-circuits `mw.short`.
      .use(async (call, next) => {
        if (!call.action.startsWith('mw.')) return next();
        log.middleware.push('first:before');
        const result = await next();
        log.middleware.push('first:after');
        return result;
      })
      .use(async (call, next) => {
        if (call.action === 'guarded') throw new RpcError('ERR_FORBIDDEN', 'not for you', { details: { need: 'admin' } });
        if (!call.action.startsWith('mw.')) return next();
        log.middleware.push('second:before');
        if (call.action === 'mw.short') return { shortCircuited: true };
        const result = await next();
        log.middleware.push('second:after');
        return { ...result, wrapped: true };
      })
      .action('mw.handler', () => {
        log.middleware.push('handler');
        return { handled: true };
      })
      .action('mw.short', () => {
        log.middleware.push('handler (must not run)');
      })
      .action('whoami', (call) => call.connection.id)
      .action('echo', (call) => call.decode())
      .action('info', (call) => ({
        transport: call.connection.transport,
        codec: call.connection.codec,
        connectData: new TextDecoder().decode(call.connection.connectData),
        remoteAddress: call.connection.remoteAddress,
        uuid: call.uuid,
        expectsReply: call.expectsReply,
      }))
      .action('add', (call) => {
        const [a, b] = call.decode();
        return a + b;
      })
      .action('fast.explicit', (call) => {
        call.fastReply(2 ** 48 - 1);
      })
      .action('nothing', () => undefined)
      .action('count', (call) => {
        const n = call.decode();
        for (let i = 1; i < n; i++) call.respond({ i }, { last: false });
        call.respond({ i: n, last: true });
      })
      .action('countThenEnd', (call) => {
        for (let i = 0; i < call.decode(); i++) call.respond(i, { last: false });
        call.end();
      })
      .action('ticks', async (call) => {
        for (let i = 0; !call.signal.aborted; i++) {
          call.respond(i, { last: false });
          await sleep(2);
        }
        log.aborts.push({ action: 'ticks', code: call.signal.reason?.code });
      })
      .action('fail.coded', () => {
        throw new RpcError('E_APP', 'it failed', { details: { why: 'because', n: 7 } });
      })
      .action('fail.plain', () => {
        throw new Error('secret internals');
      })
      .action('fail.explicit', (call) => {
        call.error('E_EXPLICIT', 'said so', [1, 2, 3]);
      })
      .action('fail.mapped', () => {
        throw new RpcError('E_MAP_TO_VALUE', 'mapped away');
      })
      .action('fail.translated', () => {
        throw new RpcError('E_TRANSLATE', 'internal wording');
      })
      .action('order', async (call) => {
        const { i, delayMs } = call.decode();
        log.started.push(i);
        await sleep(delayMs);
        return i;
      })
      .action('note', (call) => {
        log.notes.push(call.decode());
      })
      .action('note.fail', () => {
        throw new Error('a one-way handler failed');
      })
      .action('wait', async (call) => {
        log.started.push(`wait:${call.decode()}`);
        await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }));
        log.aborts.push({ action: 'wait', tag: call.decode(), code: call.signal.reason?.code, cancelled: call.cancelled });
        call.respond('too late'); // a no-op after a cancel
      })
      // The server calls the client back.
      .action('askClient', async (call) => {
        const { action, payload } = call.decode();
        return { answer: await call.connection.call(action, payload) };
      })
      .action('askClientMany', async (call) => {
        const values = [];
        for await (const value of call.connection.callMany('client.many', call.decode())) values.push(value);
        return values;
      })
      .action('askClientTyped', (call) => call.connection.call(clientGreet, call.decode()))
      .action('pushNote', (call) => {
        call.connection.notify('client.note', call.decode());
      })
      .action('serverCancels', async (call) => {
        const controller = new AbortController();
        const pending = call.connection.call('client.wait', 'cancelled by the server', { signal: controller.signal });
        setTimeout(() => controller.abort(), 30);
        try {
          await pending;
          return 'not cancelled';
        } catch (error) {
          return { code: error.code };
        }
      })
      .action('serverTimesOut', async (call) => {
        try {
          await call.connection.call('client.wait', 'timed out by the server', { timeoutMs: 40 });
          return 'no timeout';
        } catch (error) {
          return { code: error.code };
        }
      })
      .action(typedAdd, typedAdd.implement(({ a, b }) => ({ sum: a + b })))
      .onError((error, call) => {
        if (error?.code === 'E_MAP_TO_VALUE') return { mappedFrom: error.code, action: call.action };
        if (error?.code === 'E_TRANSLATE') throw new RpcError('E_TRANSLATED', 'public wording', { details: { from: error.code } });
        throw error;
      })
      .fallback((call) => {
        if (call.action.startsWith('dyn.')) return { dynamic: call.action.slice(4), payload: call.decode() };
        throw new RpcError('ERR_NOT_IMPLEMENTED', `nothing at ${call.action}`, { details: { action: call.action } });
      })
      .expose(calculator, { prefix: 'math.' });
  };
}

for (const transport of TRANSPORTS) {
  describe(`RPC calls over ${transport}`, () => {
    const log = makeLog();
    const calculator = new Calculator();
    let rpc;
    let client;
    let connection;
    const clientLog = { notes: [], aborts: [] };

    before(async () => {
      rpc = await startServer(setup(log, calculator), {
        onOpen: (conn) => {
          // The server calls the client as soon as it connects: the client's
          // handlers given in its options are in place already.
          log.opened.set(
            conn.id,
            conn.call('client.hello', { id: conn.id }).then(
              (value) => ({ value }),
              (error) => ({ error: error.code }),
            ),
          );
        },
      });
      client = await rpc.connect(transport, {
        connectData: `token-${transport}`,
        handlers: {
          'client.hello': (payload) => ({ hi: payload.id, from: 'client' }),
          'client.echo': (payload) => payload,
          'client.fail': () => {
            throw new RpcError('E_CLIENT', 'the client refused', { details: { reason: 'test' } });
          },
          'client.many': (n, call) => {
            for (let i = 1; i < n; i++) call.respond(i * 10, { last: false });
            return n * 10;
          },
          'client.note': (payload) => {
            clientLog.notes.push(payload);
          },
          'client.wait': async (payload, call) => {
            await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }));
            clientLog.aborts.push({ tag: payload, code: call.signal.reason?.code });
          },
        },
      });
      client.handle(clientGreet, (name) => `hello ${name}, from the client`);
      connection = await rpc.connectionOf(client);
      assert.ok(connection, 'the server side of the connection is known');
    });

    after(async () => {
      await client?.close();
      await rpc?.close();
    });

    test('a call answers with the handler value; the connection reports its transport, codec and connect data', async () => {
      assert.deepEqual(await client.call('echo', { nested: { list: [1, 'two', null, true] } }), { nested: { list: [1, 'two', null, true] } });
      const info = await client.call('info');
      assert.equal(info.transport, transport === 'ws' ? 'websocket' : transport);
      assert.equal(info.codec, 'msgpack');
      assert.equal(info.connectData, `token-${transport}`);
      assert.equal(info.expectsReply, true);
      assert.match(info.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      if (transport !== 'unix') assert.match(info.remoteAddress, /127\.0\.0\.1/);
      // Both ends derive the same UUID for a call.
      const response = await client.request('info');
      assert.equal(response.kind, 'response');
      assert.ok(response.uuid, 'the response has a UUID');
    });

    test('fast replies: a non-negative integer result, and fastReply() up to 2^48-1; undefined ends the call', async () => {
      assert.equal(await client.call('add', [40, 2]), 42);
      const fast = await client.request('add', [40, 2]);
      assert.equal(fast.kind, 'fastReply');
      assert.equal(fast.value, 42);
      // A negative or fractional number is a normal response.
      const negative = await client.request('add', [-50, 8]);
      assert.equal(negative.kind, 'response');
      assert.equal(negative.value, -42);
      assert.equal((await client.request('add', [0.5, 1])).kind, 'response');
      assert.equal(await client.call('fast.explicit'), 2 ** 48 - 1);
      assert.equal(await client.call('nothing'), undefined);
      assert.equal((await client.request('nothing')).kind, 'end');
    });

    test('many responses: callMany yields each until the last, or until END', async () => {
      const values = [];
      for await (const value of client.callMany('count', 5)) values.push(value);
      assert.deepEqual(values, [{ i: 1 }, { i: 2 }, { i: 3 }, { i: 4 }, { i: 5, last: true }]);
      const ended = [];
      for await (const value of client.callMany('countThenEnd', 3)) ended.push(value);
      assert.deepEqual(ended, [0, 1, 2]);
      // `call` takes the first response only; the rest is drained.
      assert.deepEqual(await client.call('count', 3), { i: 1 });
      const many = [];
      for await (const response of client.requestMany('count', 2)) many.push([response.kind, response.last]);
      assert.deepEqual(many, [['response', false], ['response', true]]);
      await untilIdle(client, connection);
    });

    test('breaking out of callMany cancels the call: the handler signal fires', async () => {
      log.aborts.length = 0;
      const seen = [];
      for await (const tick of client.callMany('ticks')) {
        seen.push(tick);
        if (tick === 3) break;
      }
      assert.deepEqual(seen, [0, 1, 2, 3]);
      await until(() => log.aborts.length === 1, 'the ticker sees the cancel');
      assert.deepEqual(log.aborts[0], { action: 'ticks', code: 'ERR_CANCELLED' });
      await untilIdle(client, connection);
    });

    test('errors arrive as RemoteError with code, message and details; uncoded ones as ERR_HANDLER_FAILED', async () => {
      const coded = await rejectsWith(client.call('fail.coded'), 'E_APP');
      assert.ok(coded instanceof RemoteError);
      assert.ok(coded instanceof RpcError);
      assert.equal(coded.message, 'it failed');
      assert.deepEqual(coded.details, { why: 'because', n: 7 });
      assert.match(coded.uuid, /^[0-9a-f-]{36}$/);

      const explicit = await rejectsWith(client.call('fail.explicit'), 'E_EXPLICIT');
      assert.equal(explicit.message, 'said so');
      assert.deepEqual(explicit.details, [1, 2, 3]);

      const before = rpc.handlerErrors.length;
      const plain = await rejectsWith(client.call('fail.plain'), 'ERR_HANDLER_FAILED');
      assert.ok(plain instanceof RemoteError);
      assert.doesNotMatch(plain.message, /secret/, 'the exception message does not leak');
      await until(() => rpc.handlerErrors.length === before + 1, 'handlerError on the server');
      const reported = rpc.handlerErrors.at(-1);
      assert.equal(reported.error.message, 'secret internals');
      assert.equal(reported.info.handler, 'rpc');
      assert.equal(reported.info.connection, connection.id);

      // Middleware refusing a call.
      const forbidden = await rejectsWith(client.call('guarded'), 'ERR_FORBIDDEN');
      assert.deepEqual(forbidden.details, { need: 'admin' });
      // The connection is still fine.
      assert.equal(await client.call('add', [1, 1]), 2);
    });

    test('one-way notify: the handler runs, nothing answers, no state is left on either side', async () => {
      for (let n = 0; n < 20; n++) client.notify('note', { n, transport });
      await until(() => log.notes.length >= 20, 'the notes arrive');
      assert.deepEqual(
        log.notes.slice(-20).map((note) => note.n),
        Array.from({ length: 20 }, (_, n) => n),
      );
      // A failing one-way handler goes to handlerError, not to the client;
      // an unknown action is dropped silently.
      const errors = rpc.handlerErrors.length;
      client.notify('note.fail');
      client.notify('no.such.action');
      await until(() => rpc.handlerErrors.length === errors + 1, 'the one-way failure is reported');
      assert.equal(rpc.handlerErrors.at(-1).error.message, 'a one-way handler failed');
      await untilIdle(client, connection, 'nothing in flight after notifies');
      assert.deepEqual(inFlight(client.stats().peer), IDLE);
      assert.deepEqual(inFlight(connection.stats()), IDLE);
      assert.equal(await client.call('echo', 'still open'), 'still open');
      await sleep(20);
      assert.equal(rpc.handlerErrors.length, errors + 1, 'the unknown one-way action is not a server failure');
    });

    test('calls are dispatched in order and complete out of order', async () => {
      log.started.length = 0;
      const completed = [];
      const calls = [0, 1, 2, 3, 4].map((i) =>
        client.call('order', { i, delayMs: (5 - i) * 15 }).then((value) => {
          completed.push(value);
          return value;
        }),
      );
      assert.deepEqual(await Promise.all(calls), [0, 1, 2, 3, 4]);
      assert.deepEqual(log.started, [0, 1, 2, 3, 4], 'handlers start in the order sent');
      assert.deepEqual(completed, [4, 3, 2, 1, 0], 'replies complete in reverse');
    });

    test('middleware runs in order around the handler and can short-circuit', async () => {
      log.middleware.length = 0;
      assert.deepEqual(await client.call('mw.handler'), { handled: true, wrapped: true });
      assert.deepEqual(log.middleware, ['first:before', 'second:before', 'handler', 'second:after', 'first:after']);
      log.middleware.length = 0;
      assert.deepEqual(await client.call('mw.short'), { shortCircuited: true });
      assert.deepEqual(log.middleware, ['first:before', 'second:before', 'first:after']);
    });

    test('onError maps an error to a value, or to another error', async () => {
      assert.deepEqual(await client.call('fail.mapped'), { mappedFrom: 'E_MAP_TO_VALUE', action: 'fail.mapped' });
      const translated = await rejectsWith(client.call('fail.translated'), 'E_TRANSLATED');
      assert.equal(translated.message, 'public wording');
      assert.deepEqual(translated.details, { from: 'E_TRANSLATE' });
    });

    test('the fallback serves unknown actions', async () => {
      assert.deepEqual(await client.call('dyn.anything', { x: 1 }), { dynamic: 'anything', payload: { x: 1 } });
      const missing = await rejectsWith(client.call('no.such.action'), 'ERR_NOT_IMPLEMENTED');
      assert.deepEqual(missing.details, { action: 'no.such.action' });
    });

    test('expose on the server, wrap on the client', async () => {
      const math = client.wrap({ prefix: 'math.' });
      assert.equal(await math.add(2, 3), 5);
      assert.equal(await math.add(-2, 1), -1);
      assert.equal(await math.concat('a', 'b', 'c'), 'abc');
      assert.deepEqual(await math.slowSquare(9), { square: 81 });
      assert.equal(await math.divide(1, 4), 0.25);
      const zero = await rejectsWith(math.divide(1, 0), 'E_DIV_ZERO');
      assert.deepEqual(zero.details, { a: 1 });
      // Private and inherited names are not exposed.
      await rejectsWith(math._secret(), 'ERR_NOT_IMPLEMENTED');
      await rejectsWith(math.toString(), 'ERR_NOT_IMPLEMENTED');
      await rejectsWith(math.constructor(), 'ERR_NOT_IMPLEMENTED');
      assert.ok(calculator.calls >= 2, 'the methods ran on the exposed object');
    });

    test('typed actions: defineAction templates on both sides, with parse', async () => {
      assert.deepEqual(await client.call(typedAdd, { a: 2, b: 40 }), { sum: 42 });
      const bad = await rejectsWith(client.call(typedAdd, { a: 'two', b: 40 }), 'E_BAD_INPUT');
      assert.deepEqual(bad.details, { got: { a: 'two', b: 40 } });
      assert.equal(await client.call('askClientTyped', 'server'), 'hello server, from the client');
    });

    test('the server calls the client: from onOpen, inside a handler, many responses, errors, one-way', async () => {
      const opened = await log.opened.get(connection.id);
      assert.deepEqual(opened, { value: { hi: connection.id, from: 'client' } });
      assert.deepEqual(await client.call('askClient', { action: 'client.echo', payload: { round: 'trip' } }), { answer: { round: 'trip' } });
      assert.deepEqual(await client.call('askClientMany', 4), [10, 20, 30, 40]);
      // The client's error travels back through the server's handler.
      const failed = await rejectsWith(client.call('askClient', { action: 'client.fail' }), 'E_CLIENT');
      assert.deepEqual(failed.details, { reason: 'test' });
      await rejectsWith(connection.call('client.nothing.here'), 'ERR_NOT_IMPLEMENTED');
      // Directly through the connection object, and one-way.
      assert.deepEqual(await connection.call('client.echo', [1, 2]), [1, 2]);
      await client.call('pushNote', { from: 'handler' });
      connection.notify('client.note', { from: 'connection' });
      await until(() => clientLog.notes.length === 2, 'the client gets both notes');
      assert.deepEqual(clientLog.notes, [{ from: 'handler' }, { from: 'connection' }]);
      await untilIdle(client, connection);
    });

    test('cancellation: the client aborts → the handler signal fires on the server', async () => {
      log.aborts.length = 0;
      const controller = new AbortController();
      const pending = client.call('wait', 'client-abort', { signal: controller.signal });
      await until(() => log.started.includes('wait:client-abort'), 'the handler starts');
      assert.equal(connection.stats().incomingCalls, 1);
      controller.abort(new Error('changed my mind'));
      const error = await rejectsWith(pending, 'ERR_CANCELLED');
      assert.equal(error.cause?.message, 'changed my mind');
      await until(() => log.aborts.length === 1, 'the server handler sees the cancel');
      assert.deepEqual(log.aborts[0], { action: 'wait', tag: 'client-abort', code: 'ERR_CANCELLED', cancelled: true });
      await untilIdle(client, connection);
    });

    test('cancellation: the server aborts its call → the client handler signal fires', async () => {
      clientLog.aborts.length = 0;
      assert.deepEqual(await client.call('serverCancels'), { code: 'ERR_CANCELLED' });
      await until(() => clientLog.aborts.length === 1, 'the client handler sees the cancel');
      assert.deepEqual(clientLog.aborts[0], { tag: 'cancelled by the server', code: 'ERR_CANCELLED' });
      await untilIdle(client, connection);
    });

    test('timeouts both ways: ERR_TIMEOUT for the caller, a cancel for the handler', async () => {
      log.aborts.length = 0;
      const started = performance.now();
      await rejectsWith(client.call('wait', 'client-timeout', { timeoutMs: 60 }), 'ERR_TIMEOUT');
      assert.ok(performance.now() - started >= 55, 'not before its time');
      await until(() => log.aborts.length === 1, 'the server handler is cancelled');
      assert.equal(log.aborts[0].code, 'ERR_CANCELLED');

      clientLog.aborts.length = 0;
      assert.deepEqual(await client.call('serverTimesOut'), { code: 'ERR_TIMEOUT' });
      await until(() => clientLog.aborts.length === 1, 'the client handler is cancelled');
      assert.deepEqual(clientLog.aborts[0], { tag: 'timed out by the server', code: 'ERR_CANCELLED' });
      await untilIdle(client, connection);
    });

    test('many concurrent calls on one connection', async () => {
      const results = await Promise.all(Array.from({ length: 500 }, (_, i) => client.call('add', [i, 1])));
      assert.deepEqual(results, Array.from({ length: 500 }, (_, i) => i + 1));
      await untilIdle(client, connection);
    });
  });
}

describe('codecs', () => {
  let rpc;
  before(async () => {
    rpc = await startServer((service) => {
      service.action('whoami', (call) => call.connection.id);
      service.action('echo', (call) => call.decode());
      service.action('describe', (call) => {
        const value = call.decode();
        return { codec: call.connection.codec, type: value instanceof Uint8Array ? 'bytes' : typeof value };
      });
    });
  });
  after(() => rpc?.close());

  for (const transport of ['tcp', 'ws']) {
    test(`msgpack (the default) carries bytes, nested values and integers over ${transport}`, async () => {
      const client = await rpc.connect(transport);
      assert.equal(client.server.codec, 'msgpack');
      const value = { bytes: new Uint8Array([0, 1, 254, 255]), nested: { deep: [1.5, -3, 'é', null] }, big: 2 ** 40 };
      const echoed = await client.call('echo', value);
      assert.deepEqual(Buffer.from(echoed.bytes), Buffer.from(value.bytes));
      assert.deepEqual(echoed.nested, value.nested);
      assert.equal(echoed.big, 2 ** 40);
      assert.deepEqual(await client.call('describe', new Uint8Array(3)), { codec: 'msgpack', type: 'bytes' });
      await client.close();
    });

    test(`json when the client asks for it, and raw bytes, over ${transport}`, async () => {
      const json = await rpc.connect(transport, { codecs: [jsonCodec] });
      assert.equal(json.server.codec, 'json');
      assert.deepEqual(await json.call('echo', { text: 'ünïcödé', list: [1, 2] }), { text: 'ünïcödé', list: [1, 2] });
      assert.deepEqual(await json.call('describe', 'x'), { codec: 'json', type: 'string' });
      await json.close();

      const raw = await rpc.connect(transport, { codecs: [rawCodec] });
      assert.equal(raw.server.codec, 'raw');
      const echoed = await raw.call('echo', new Uint8Array([9, 8, 7]));
      assert.ok(echoed instanceof Uint8Array);
      assert.deepEqual([...echoed], [9, 8, 7]);
      await raw.close();
    });
  }

  test('a server offering json only: the client falls back to it', async () => {
    const jsonOnly = await startServer((service) => service.action('echo', (call) => call.decode()), { rpc: { codecs: ['json'] } });
    try {
      const client = await jsonOnly.connect('tcp');
      assert.equal(client.server.codec, 'json');
      assert.deepEqual(await client.call('echo', { a: [1] }), { a: [1] });
      await client.close();
    } finally {
      await jsonOnly.close();
    }
  });
});

test('without a fallback, unknown actions get ERR_NOT_IMPLEMENTED', async () => {
  const rpc = await startServer((service) => service.action('known', () => 'yes'));
  try {
    for (const transport of ['tcp', 'ws']) {
      const client = await rpc.connect(transport);
      assert.equal(await client.call('known'), 'yes');
      const error = await rejectsWith(client.call('unknown.action'), 'ERR_NOT_IMPLEMENTED');
      assert.ok(error instanceof RemoteError);
      assert.match(error.message, /unknown\.action/);
      await client.close();
    }
    assert.deepEqual(rpc.handlerErrors, [], 'an unknown action is not a server failure');
  } finally {
    await rpc.close();
  }
});
