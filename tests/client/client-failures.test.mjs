// switchboard-client when things go wrong: timeouts, cancellation,
// heartbeats, lost connections and reconnecting, GO_AWAY, protocol
// violations both ways, bad servers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WebSocket } from 'ws';
import * as P from 'switchboard-rpc';
import { Client, backoffDelay, connect, tcpTransport } from 'switchboard-client/node';
import * as core from 'switchboard-client';
import { startReferenceServer } from './reference-server.mjs';
import { recordEvents, rejectsWith, sleep, until } from './helpers.mjs';

const text = (bytes) => new TextDecoder().decode(bytes);

function makeHandlers() {
  const seen = { cancelled: [] };
  const handlers = {
    echo: (call) => call.decode(),
    slow: async (call) => {
      const { ms, value } = call.decode();
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        call.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          seen.cancelled.push(value);
          resolve();
        });
      });
      return value;
    },
    /** Sends GO_AWAY from inside a handler: calls the server receives after this one are refused. */
    goAwayNow: (call, conn) => {
      conn.goAway();
      return 'ok';
    },
    /** Raw bytes to the client, outside the peer. */
    raw: (call, conn) => {
      conn.write(Uint8Array.from(call.decode()));
    },
    text: (call, conn) => {
      conn.ws.send('a text message');
    },
  };
  return { handlers, seen };
}

describe('timeouts and cancellation', () => {
  test('a per-call timeout rejects with ERR_TIMEOUT and cancels the call at the server', async () => {
    const { handlers, seen } = makeHandlers();
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url);
    const started = Date.now();
    await rejectsWith(client.call('slow', { ms: 2000, value: 'a' }, { timeoutMs: 50 }), 'ERR_TIMEOUT');
    assert.ok(Date.now() - started < 1000);
    await until(() => seen.cancelled.includes('a'), 'the server-side cancel');
    assert.ok(server.last.frames.some((f) => f.type === 'cancel'));
    // A timeout long enough lets the call complete.
    assert.equal(await client.call('slow', { ms: 10, value: 'b' }, { timeoutMs: 1000 }), 'b');
    await client.close();
    await server.close();
  });

  test('defaultTimeoutMs applies to calls without their own', async () => {
    const { handlers } = makeHandlers();
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url, { defaultTimeoutMs: 40 });
    await rejectsWith(client.call('slow', { ms: 2000, value: 'x' }), 'ERR_TIMEOUT');
    assert.equal(await client.call('slow', { ms: 500, value: 'y' }, { timeoutMs: 0 }), 'y'); // 0: none
    await client.close();
    await server.close();
  });

  test('an AbortSignal cancels a call in flight, or one not sent yet', async () => {
    const { handlers, seen } = makeHandlers();
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url);
    const controller = new AbortController();
    const pending = client.call('slow', { ms: 2000, value: 'c' }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user gave up')), 20);
    const error = await rejectsWith(pending, 'ERR_CANCELLED');
    assert.equal(error.cause.message, 'user gave up');
    await until(() => seen.cancelled.includes('c'), 'the server-side cancel');
    await rejectsWith(client.call('echo', 1, { signal: AbortSignal.abort() }), 'ERR_CANCELLED');
    await client.close();
    await server.close();
  });
});

describe('heartbeats', () => {
  test('pings keep an idle connection open; the server answers them', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, heartbeatMs: 40 });
    const client = await connect(server.url, { heartbeatMs: 40 });
    assert.equal(server.last.hello.heartbeatMs, 40);
    assert.equal(client.server.heartbeatMs, 40);
    await sleep(300);
    assert.equal(client.state, 'open');
    const pings = server.last.frames.filter((f) => f.type === 'heartbeat' && !f.pong);
    assert.ok(pings.length >= 3, `${pings.length} pings`);
    assert.equal(await client.call('echo', 'alive'), 'alive');
    await client.close();
    await server.close();
  });

  test('a server that stops answering is detected: ERR_HEARTBEAT_TIMEOUT, pending calls fail with ERR_DISCONNECTED', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, heartbeatMs: 50 });
    const client = await connect(server.url, { reconnect: false });
    const log = recordEvents(client);
    const pending = client.call('slow', { ms: 5000, value: 'never' });
    await sleep(10);
    const frozenAt = Date.now();
    server.last.freeze();
    const error = await rejectsWith(pending, 'ERR_DISCONNECTED');
    const elapsed = Date.now() - frozenAt;
    // Twice the interval after the last frame heard, which may be up to
    // 10 ms before the freeze (and Date.now() counts whole milliseconds).
    assert.ok(elapsed >= 85 && elapsed < 1000, `detected after ${elapsed} ms`);
    assert.equal(error.cause.code, 'ERR_HEARTBEAT_TIMEOUT');
    await until(() => client.state === 'closed', 'closed');
    const disconnect = log.find((e) => e.type === 'disconnect').event;
    assert.equal(disconnect.code, 'ERR_HEARTBEAT_TIMEOUT');
    assert.equal(log.find((e) => e.type === 'closed').event.code, 'ERR_HEARTBEAT_TIMEOUT');
    await server.close();
  });

  test('ping(): a HEARTBEAT round trip in milliseconds, several in flight, alongside the heartbeat\'s own pings', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, heartbeatMs: 30 });
    const client = await connect(server.url, { heartbeatMs: 30, reconnect: false });
    const rtt = await client.ping();
    assert.equal(typeof rtt, 'number');
    assert.ok(rtt >= 0 && rtt < 1000, `${rtt} ms`);
    // Several at once, and calls between them: each resolves on its own pong.
    const results = await Promise.all([client.ping(), client.call('echo', 1), client.ping(), client.ping()]);
    assert.equal(results[1], 1);
    for (const ms of [results[0], results[2], results[3]]) assert.ok(ms >= 0);
    // Over a few heartbeat intervals, with the client idle in between, its
    // own pings (whose pongs resolve nothing) interleave with ping()'s.
    for (let i = 0; i < 5; i++) {
      await sleep(45);
      assert.ok((await client.ping()) >= 0);
    }
    const pings = server.last.frames.filter((f) => f.type === 'heartbeat' && !f.pong);
    assert.ok(pings.length > 9, `${pings.length} pings: the 9 of ping() and the heartbeat's`);
    assert.equal(client.state, 'open');
    await client.close();
    await rejectsWith(client.ping(), 'ERR_DISCONNECTED');
    await server.close();
  });

  test('ping(): fails with ERR_DISCONNECTED when the connection is lost before the pong', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, heartbeatMs: 0 });
    const client = await connect(server.url, { reconnect: false });
    server.last.freeze();
    const pending = client.ping();
    await sleep(20);
    server.last.drop();
    const error = await rejectsWith(pending, 'ERR_DISCONNECTED');
    assert.ok(error.cause, 'the cause says why');
    await until(() => client.state === 'closed', 'closed');
    await rejectsWith(client.ping(), 'ERR_DISCONNECTED');
    await server.close();
  });

  test('heartbeats off (0 in WELCOME): no pings', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, heartbeatMs: 0 });
    const client = await connect(server.url, { heartbeatMs: 20 });
    await sleep(100);
    assert.equal(server.last.frames.filter((f) => f.type === 'heartbeat').length, 0);
    await client.close();
    await server.close();
  });
});

describe('reconnecting', () => {
  test('back-off with jitter after the server drops the connection; pending calls fail with ERR_DISCONNECTED', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const client = await connect(server.url, { reconnect: { initialDelayMs: 40, maxDelayMs: 200 } });
    const log = recordEvents(client);
    const pending = client.call('slow', { ms: 5000, value: 'lost' });
    await sleep(10);
    server.rejectAll = true;
    server.last.drop();
    await rejectsWith(pending, 'ERR_DISCONNECTED');
    await until(() => log.filter((e) => e.type === 'reconnecting').length >= 4, 'four attempts');
    server.rejectAll = false;
    await until(() => client.state === 'open', 'reopened', 5000);
    assert.equal(await client.call('echo', 'back'), 'back');
    const attempts = log.filter((e) => e.type === 'reconnecting').map((e) => e.event);
    attempts.forEach((event, i) => {
      assert.equal(event.attempt, i + 1);
      const exp = Math.min(200, 40 * 2 ** i);
      assert.ok(event.delayMs >= exp / 2 && event.delayMs <= exp, `attempt ${i + 1}: ${event.delayMs} ms`);
    });
    assert.equal(attempts[0].code, 'ERR_DISCONNECTED');
    const disconnects = log.filter((e) => e.type === 'disconnect').map((e) => e.event);
    assert.equal(disconnects[0].wasOpen, true);
    assert.ok(disconnects.slice(1).every((d) => !d.wasOpen && d.willReconnect));
    assert.equal(log.filter((e) => e.type === 'open').at(-1).event.reconnected, true);
    const states = log.filter((e) => e.type === 'statechange').map((e) => e.event.state);
    assert.deepEqual(states, ['reconnecting', 'open']);
    assert.equal(client.stats().reconnectAttempts, 0);
    await client.close();
    await server.close();
  });

  test('backoffDelay: doubles up to the maximum, with half of it random', () => {
    const r = { initialDelayMs: 100, maxDelayMs: 1000, maxAttempts: Infinity, shouldReconnect: null };
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, r, () => 1)), [100, 200, 400, 800, 1000, 1000]);
    assert.deepEqual([1, 2, 3].map((n) => backoffDelay(n, r, () => 0)), [50, 100, 200]);
  });

  test('calls made while reconnecting wait for the next open, bounded by their timeout and signal', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const client = await connect(server.url, { reconnect: { initialDelayMs: 20, maxDelayMs: 40 } });
    server.rejectAll = true;
    server.last.drop();
    await until(() => client.state === 'reconnecting', 'reconnecting');
    const waiting = client.call('echo', 'waited');
    const late = client.callMany('echo', 'many');
    const started = Date.now();
    const timedOut = rejectsWith(client.call('echo', 'x', { timeoutMs: 60 }), 'ERR_TIMEOUT');
    const controller = new AbortController();
    const aborted = rejectsWith(client.call('echo', 'y', { signal: controller.signal }), 'ERR_CANCELLED');
    const writer = core.openStream();
    const withStream = rejectsWith(client.call('echo', 'z', { timeoutMs: 30, stream: writer }), 'ERR_TIMEOUT');
    assert.throws(() => client.notify('echo', 1), (e) => e.code === 'ERR_DISCONNECTED');
    controller.abort();
    await Promise.all([aborted, timedOut, withStream]);
    assert.ok(Date.now() - started >= 55);
    await rejectsWith(writer.write('never sent'), 'ERR_STREAM_CLOSED'); // released, not left hanging
    assert.equal(client.stats().waitingCalls, 2);
    server.rejectAll = false;
    assert.equal(await waiting, 'waited');
    const values = [];
    for await (const value of late) values.push(value);
    assert.deepEqual(values, ['many']);
    await client.close();
    await server.close();
  });

  test('maxAttempts: the client gives up and closes; waiting calls fail with ERR_DISCONNECTED', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const client = await connect(server.url, { reconnect: { initialDelayMs: 10, maxAttempts: 2 } });
    const log = recordEvents(client);
    server.rejectAll = true;
    server.last.drop();
    await until(() => client.state === 'reconnecting', 'reconnecting');
    const waiting = client.call('echo', 1);
    const closed = new Promise((resolve) => client.once('closed', resolve));
    await rejectsWith(waiting, 'ERR_DISCONNECTED');
    assert.equal((await closed).code, 'ERR_DISCONNECTED');
    assert.equal(log.filter((e) => e.type === 'reconnecting').length, 2);
    assert.equal(server.accepted, 3);
    await rejectsWith(client.ready, 'ERR_DISCONNECTED');
    await server.close();
  });

  test('reconnect: false closes on the first loss; shouldReconnect can refuse', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const once = await connect(server.url, { reconnect: false });
    server.last.drop();
    await until(() => once.state === 'closed', 'closed');
    const asked = [];
    const picky = await connect(server.url, {
      reconnect: {
        shouldReconnect: (event) => {
          asked.push(event.code);
          return false;
        },
      },
    });
    server.last.fail('ERR_PROTOCOL_MALFORMED');
    await until(() => picky.state === 'closed', 'closed');
    assert.deepEqual(asked, ['ERR_PROTOCOL_MALFORMED']);
    await server.close();
  });

  test('the first connection is not retried: connect() rejects at once with the socket error as cause', async () => {
    const probe = await startReferenceServer('tcp', {});
    const port = probe.port;
    await probe.close();
    const error = await rejectsWith(connect(`tcp://127.0.0.1:${port}`), 'ERR_DISCONNECTED');
    assert.equal(error.cause.code, 'ECONNREFUSED');
    const client = new Client({ transport: tcpTransport('127.0.0.1', port) });
    await rejectsWith(client.ready, 'ERR_DISCONNECTED');
    assert.equal(client.state, 'closed');
  });
});

describe('GO_AWAY', () => {
  test('graceful: calls in flight finish, new calls wait for a new connection', async () => {
    const { handlers } = makeHandlers();
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url, { reconnect: { initialDelayMs: 10 } });
    const log = recordEvents(client);
    const first = server.last;
    const inFlight = client.call('slow', { ms: 80, value: 'finished' });
    await sleep(10);
    first.goAway();
    await until(() => log.some((e) => e.type === 'goaway'), 'the goaway event');
    const after = client.call('echo', 'on the next connection');
    assert.equal(await inFlight, 'finished');
    assert.equal(await after, 'on the next connection');
    assert.equal(server.connections.length, 2);
    assert.ok(server.connections[1].frames.some((f) => f.type === 'message' && f.action === 'echo'));
    assert.ok(!first.frames.some((f) => f.type === 'message' && f.action === 'echo'));
    const disconnect = log.find((e) => e.type === 'disconnect').event;
    assert.equal(disconnect.code, 'ERR_GOING_AWAY');
    assert.equal(disconnect.willReconnect, true);
    await client.close();
    await server.close();
  });

  test('calls the server refused in its GO_AWAY are sent again on the next connection', async () => {
    const { handlers } = makeHandlers();
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url, { reconnect: { initialDelayMs: 10 } });
    // Both MESSAGEs go out in one write: the server goes away while dispatching the first.
    const [a, b] = await Promise.all([client.call('goAwayNow'), client.call('echo', 'retried')]);
    assert.deepEqual([a, b], ['ok', 'retried']);
    assert.equal(server.connections.length, 2);
    const goAway = server.connections[0].peer.stats();
    assert.equal(goAway.pendingCalls, 0);
    assert.ok(server.connections[1].frames.some((f) => f.type === 'message' && f.action === 'echo'));
    await client.close();
    // Without retryGoingAway the refusal surfaces, retryable.
    const strict = await connect(server.url, { retryGoingAway: false });
    const results = await Promise.allSettled([strict.call('goAwayNow'), strict.call('echo', 'refused')]);
    assert.equal(results[0].value, 'ok');
    assert.equal(results[1].reason.code, 'ERR_GOING_AWAY');
    assert.equal(results[1].reason.retryable, true);
    await strict.close();
    await server.close();
  });

  test('a GO_AWAY with a protocol error code surfaces as the disconnect and close code', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const client = await connect(server.url, { reconnect: false });
    const log = recordEvents(client);
    const pending = client.call('slow', { ms: 5000, value: 1 });
    await sleep(10);
    server.last.fail('ERR_PROTOCOL_MALFORMED', 'you sent junk');
    await rejectsWith(pending, 'ERR_DISCONNECTED');
    await until(() => client.state === 'closed', 'closed');
    assert.equal(log.find((e) => e.type === 'goaway').event.code, 'ERR_PROTOCOL_MALFORMED');
    assert.equal(log.find((e) => e.type === 'disconnect').event.code, 'ERR_PROTOCOL_MALFORMED');
    const closed = log.find((e) => e.type === 'closed').event;
    assert.equal(closed.code, 'ERR_PROTOCOL_MALFORMED');
    assert.equal(closed.message, 'you sent junk');
    await server.close();
  });
});

describe('bad servers', () => {
  test('a server that is not a Switchboard peer: ERR_PROTOCOL_PREFACE', async () => {
    const server = await startReferenceServer('tcp', { rawGreeting: 'HTTP/1.1 400 Bad Request\r\n\r\n' });
    const error = await rejectsWith(connect(server.url), 'ERR_PROTOCOL_PREFACE');
    assert.match(error.message, /not a Switchboard peer/);
    await server.close();
  });

  test('another protocol version: ERR_PROTOCOL_VERSION', async () => {
    const server = await startReferenceServer('tcp', { rawGreeting: Buffer.from([0x53, 0x57, 0x42, 0x02, 0x02, 0, 0]) });
    await rejectsWith(connect(server.url), 'ERR_PROTOCOL_VERSION');
    await server.close();
  });

  test('a first frame that is not WELCOME: ERR_PROTOCOL_HANDSHAKE', async () => {
    const greeting = Buffer.concat([P.PREFACE, P.encodeFrame({ type: 'heartbeat', pong: false })]);
    const server = await startReferenceServer('tcp', { rawGreeting: greeting });
    await rejectsWith(connect(server.url), 'ERR_PROTOCOL_HANDSHAKE');
    await server.close();
  });

  test("the WELCOME has the handshake limit of 65,536 bytes, whatever the client's maxFrameSize", async () => {
    // 36 bytes of settings and the codec "json" (1 + 4) before the data.
    const big = await startReferenceServer('tcp', { handlers: makeHandlers().handlers, welcomeData: () => new Uint8Array(65536 - 41) });
    const client = await connect(big.url, { maxFrameSize: 1024, codecs: [core.jsonCodec], reconnect: false });
    assert.equal(client.server.data.length, 65536 - 41);
    assert.equal(await client.call('echo', 1), 1);
    await client.close();
    await big.close();
    const tooBig = await startReferenceServer('tcp', { welcomeData: () => new Uint8Array(65536 - 40) });
    await rejectsWith(connect(tooBig.url, { codecs: [core.jsonCodec], reconnect: false }), 'ERR_PROTOCOL_FRAME_TOO_LARGE');
    await tooBig.close();
  });

  test('a refusal in the handshake (GO_AWAY first) rejects with its code and message', async () => {
    const server = await startReferenceServer('tcp', {
      handlers: makeHandlers().handlers,
      refuse: (hello) => (text(hello.data) === 'good' ? undefined : { code: 'ERR_UNAUTHORIZED', message: 'bad token' }),
    });
    const error = await rejectsWith(connect(server.url, { connectData: 'bad' }), 'ERR_UNAUTHORIZED');
    assert.match(error.message, /bad token/);
    const client = await connect(server.url, { connectData: 'good' });
    assert.equal(await client.call('echo', 1), 1);
    await client.close();
    await server.close();
  });

  test('no codec in common: ERR_PROTOCOL_CODEC', async () => {
    const server = await startReferenceServer('tcp', { codecs: ['json'] });
    await rejectsWith(connect(server.url, { codecs: [core.msgpackCodec] }), 'ERR_PROTOCOL_CODEC');
    await server.close();
  });

  test('a server that says nothing: ERR_HANDSHAKE_TIMEOUT', async () => {
    const server = await startReferenceServer('tcp', { silent: true });
    await rejectsWith(connect(server.url, { handshakeTimeoutMs: 100 }), 'ERR_HANDSHAKE_TIMEOUT');
    await server.close();
  });

  test('an invalid frame from the server: the client answers GO_AWAY with the code and closes', async () => {
    const server = await startReferenceServer('tcp', { handlers: makeHandlers().handlers });
    const client = await connect(server.url, { reconnect: false });
    const conn = server.last;
    const pending = client.call('raw', [0x00, 0x00, 0x00]); // frame type 0
    await rejectsWith(pending, 'ERR_DISCONNECTED');
    await until(() => client.state === 'closed', 'closed');
    await conn.closedPromise;
    const goAway = conn.frames.find((f) => f.type === 'goAway');
    assert.equal(goAway?.code, 'ERR_PROTOCOL_FRAME_TYPE');
    assert.equal(client.stats().state, 'closed');
    await server.close();
  });

  test('WebSocket: a text message, or a message ending inside a frame, is a protocol error', async () => {
    const server = await startReferenceServer('ws', { handlers: makeHandlers().handlers });
    const textClient = await core.connect(server.url, { WebSocket, reconnect: false });
    const closedText = new Promise((resolve) => textClient.once('closed', resolve));
    textClient.call('text').catch(() => {});
    assert.equal((await closedText).code, 'ERR_PROTOCOL_MALFORMED');
    const partialClient = await core.connect(server.url, { WebSocket, reconnect: false });
    const closedPartial = new Promise((resolve) => partialClient.once('closed', resolve));
    partialClient.call('raw', [0x0e]).catch(() => {}); // the first byte of a heartbeat
    const event = await closedPartial;
    assert.equal(event.code, 'ERR_PROTOCOL_MALFORMED');
    assert.match(event.message, /inside a frame/);
    await server.close();
  });
});
