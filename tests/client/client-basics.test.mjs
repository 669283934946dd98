// switchboard-client against the reference server (reference-server.mjs):
// the handshake over TCP, Unix sockets and WebSocket, calls both ways,
// one-way messages, many responses, typed actions, wrap, connect data,
// events, stats and closing.
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import * as core from 'switchboard-client';
import { Client, ConnectionState, connect, defineAction, tcpTransport, transportFor, unixTransport } from 'switchboard-client/node';
import { startReferenceServer } from './reference-server.mjs';
import { recordEvents, rejectsWith, sleep, until } from './helpers.mjs';

const text = (bytes) => new TextDecoder().decode(bytes);

/** Handlers most tests use, server side. */
const handlers = {
  echo: (call) => call.decode(),
  add: (call) => {
    const [a, b] = call.decode();
    return { sum: a + b };
  },
  slow: async (call) => {
    const { ms, value } = call.decode();
    await sleep(ms);
    return value;
  },
  count: (call) => {
    const n = call.decode();
    for (let i = 1; i < n; i++) call.respond(i, { last: false });
    return { last: n };
  },
  nothing: () => undefined,
  fast: () => 42,
  fail: () => {
    throw new core.RpcError('E_APP', 'it failed', { details: { why: 'because' } });
  },
  /** The server calls the client back and returns the client's answer. */
  askClient: async (call, conn) => {
    const { action, payload } = call.decode();
    return { answer: await conn.peer.call(action, payload) };
  },
  /** The server sends a one-way message to the client. */
  pushNews: (call, conn) => {
    conn.peer.notify('news', call.decode());
  },
  whoAmI: (call, conn) => text(conn.hello.data),
};

const received = [];
handlers.note = (call) => {
  received.push(call.decode());
};

describe('handshake and calls over TCP', () => {
  let server;
  let client;
  before(async () => {
    server = await startReferenceServer('tcp', { handlers, welcomeData: () => new TextEncoder().encode('hi client') });
    client = await connect(server.url, { connectData: 'token-1' });
  });
  after(async () => {
    await client?.close();
    await server.close();
  });

  test('the handshake offers the codecs in order, our limits and connect data; WELCOME is exposed', () => {
    const hello = server.last.hello;
    assert.deepEqual(hello.codecs, ['msgpack', 'json', 'raw']);
    assert.equal(hello.maxFrameSize, 16 * 1024 * 1024);
    assert.equal(hello.initialWindow, 1024 * 1024);
    assert.equal(hello.features, core.ALL_FEATURES);
    assert.equal(text(hello.data), 'token-1');
    assert.equal(client.state, ConnectionState.Open);
    assert.equal(client.server.codec, 'msgpack');
    assert.equal(text(client.server.data), 'hi client');
    assert.equal(client.server.maxFrameSize, 1 << 20);
  });

  test('call, request, fast replies, ends, errors', async () => {
    assert.deepEqual(await client.call('add', [2, 3]), { sum: 5 });
    assert.equal(await client.call('echo', 'héllo'), 'héllo');
    assert.equal(await client.call('fast'), 42);
    assert.equal(await client.call('nothing'), undefined);
    const response = await client.request('echo', { a: 1 });
    assert.equal(response.kind, 'response');
    assert.deepEqual(response.value, { a: 1 });
    assert.match(response.uuid, /^[0-9a-f-]{36}$/);
    const error = await rejectsWith(client.call('fail'), 'E_APP');
    assert.ok(error instanceof core.RemoteError);
    assert.deepEqual(error.details, { why: 'because' });
    await rejectsWith(client.call('missing'), 'ERR_NOT_IMPLEMENTED');
  });

  test('callMany and requestMany yield every response', async () => {
    const values = [];
    for await (const value of client.callMany('count', 4)) values.push(value);
    assert.deepEqual(values, [1, 2, 3, { last: 4 }]);
    const kinds = [];
    for await (const response of client.requestMany('count', 2)) kinds.push([response.kind, response.last]);
    assert.deepEqual(kinds, [
      ['response', false],
      ['response', true],
    ]);
  });

  test('many calls in flight at once complete, in any order', async () => {
    const calls = [];
    for (let i = 0; i < 200; i++) calls.push(client.call('slow', { ms: (i * 7) % 20, value: i }));
    assert.deepEqual(await Promise.all(calls), [...Array(200).keys()]);
  });

  test('the server calls the client: handle(), setHandler(), unknown actions', async () => {
    const off = client.handle('client.add', ({ a, b }, call) => {
      assert.equal(call.action, 'client.add');
      return a + b;
    });
    assert.deepEqual(await client.call('askClient', { action: 'client.add', payload: { a: 2, b: 40 } }), { answer: 42 });
    off();
    await rejectsWith(client.call('askClient', { action: 'client.add', payload: {} }), 'ERR_NOT_IMPLEMENTED');
    client.setHandler((call) => `fallback for ${call.action}`);
    assert.deepEqual(await client.call('askClient', { action: 'anything' }), { answer: 'fallback for anything' });
    client.setHandler(null);
    // A handler's coded error reaches the server as such.
    client.handle('client.fail', () => {
      throw new core.RpcError('E_CLIENT', 'client says no');
    });
    await rejectsWith(client.call('askClient', { action: 'client.fail' }), 'E_CLIENT');
  });

  test('one-way messages both ways', async () => {
    const news = [];
    client.handle('news', (payload) => {
      news.push(payload);
    });
    await client.call('pushNews', { headline: 'up' });
    await until(() => news.length === 1, 'news');
    assert.deepEqual(news, [{ headline: 'up' }]);
    client.notify('note', 'one');
    client.notify('note', 'two');
    await until(() => received.length === 2, 'notes');
    assert.deepEqual(received, ['one', 'two']);
  });

  test('typed actions and wrap()', async () => {
    const add = defineAction('add');
    assert.deepEqual(await client.call(add, [1, 1]), { sum: 2 });
    const api = client.wrap({ prefix: '' });
    assert.deepEqual(await api.add(20, 22), { sum: 42 });
    assert.deepEqual(await api.echo('x'), ['x']); // the arguments array is the payload
    const typed = defineAction('client.double');
    client.handle(typed, (n) => n * 2);
    assert.deepEqual(await client.call('askClient', { action: 'client.double', payload: 21 }), { answer: 42 });
  });

  test('stats and the peer escape hatch', async () => {
    const slow = client.call('slow', { ms: 50, value: 1 });
    const stats = client.stats();
    assert.equal(stats.state, 'open');
    assert.equal(stats.peer.pendingCalls, 1);
    assert.equal(stats.waitingCalls, 0);
    assert.ok(client.peer instanceof Object);
    await slow;
  });
});

describe('the other transports', () => {
  test('a Unix socket', async () => {
    const socketPath = path.join(os.tmpdir(), `sb-client-${process.pid}.sock`);
    const server = await startReferenceServer('unix', { handlers, path: socketPath });
    try {
      const client = await connect(`unix:${socketPath}`);
      assert.deepEqual(await client.call('add', [1, 2]), { sum: 3 });
      client.handle('client.ping', () => 'pong');
      assert.deepEqual(await client.call('askClient', { action: 'client.ping' }), { answer: 'pong' });
      await client.close();
      // The unix:/// form and the transport function name the same socket.
      const again = new Client({ transport: unixTransport(socketPath) });
      await again.ready;
      assert.equal(await again.call('echo', 1), 1);
      await again.close();
      const third = await connect(`unix://${socketPath}`);
      assert.equal(await third.call('echo', 3), 3);
      await third.close();
    } finally {
      await server.close();
    }
  });

  test('WebSocket with the core entry point and an injected constructor', async () => {
    const server = await startReferenceServer('ws', { handlers });
    try {
      const client = await core.connect(server.url, { WebSocket });
      assert.equal(server.last.ws.protocol, 'switchboard.v1');
      assert.deepEqual(await client.call('add', [5, 6]), { sum: 11 });
      client.handle('client.ping', () => 'pong');
      assert.deepEqual(await client.call('askClient', { action: 'client.ping' }), { answer: 'pong' });
      const values = [];
      for await (const value of client.callMany('count', 3)) values.push(value);
      assert.deepEqual(values, [1, 2, { last: 3 }]);
      // Each write of the client is one message holding whole frames: many calls in one tick, one message.
      let messages = 0;
      server.last.ws.on('message', () => (messages += 1));
      await Promise.all([client.call('echo', 1), client.call('echo', 2), client.call('echo', 3)]);
      assert.equal(messages, 1);
      await client.close();
    } finally {
      await server.close();
    }
  });

  test('WebSocket from the node entry point loads the ws package itself (Node 20 has no global WebSocket)', async () => {
    const server = await startReferenceServer('ws', { handlers });
    try {
      const client = await connect(server.url.replace('ws:', 'http:'));
      assert.equal(await client.call('echo', 'via ws'), 'via ws');
      await client.close();
    } finally {
      await server.close();
    }
  });

  test('URLs the client cannot use are refused with ERR_INVALID_URL', async () => {
    await rejectsWith(connect('ftp://example.com/x'), 'ERR_INVALID_URL');
    await rejectsWith(connect('tcp://127.0.0.1'), 'ERR_INVALID_URL');
    await rejectsWith(connect('unix:'), 'ERR_INVALID_URL');
    await rejectsWith(core.connect('tcp://127.0.0.1:1', { WebSocket }), 'ERR_INVALID_URL');
    await assert.rejects(transportFor('not a url'), (e) => e.code === 'ERR_INVALID_URL');
  });
});

describe('options and lifecycle', () => {
  test('connect data from a function, for every connection', async () => {
    const server = await startReferenceServer('tcp', { handlers });
    let n = 0;
    const client = await connect(server.url, { connectData: async () => `token-${++n}` });
    assert.equal(await client.call('whoAmI'), 'token-1');
    server.last.drop();
    await until(() => client.state === 'open' && server.connections.length === 2, 'reconnect');
    assert.equal(await client.call('whoAmI'), 'token-2');
    await client.close();
    await server.close();
  });

  test('handlers given as options answer a server that calls as soon as the connection opens', async () => {
    const answers = [];
    const server = await startReferenceServer('tcp', {
      onOpen: (conn) => conn.peer.call('client.version').then((v) => answers.push(v), (e) => answers.push(e.code)),
    });
    const client = await connect(server.url, { handlers: { 'client.version': () => '1.0' } });
    await until(() => answers.length === 1, 'the server call');
    assert.deepEqual(answers, ['1.0']);
    await client.close();
    await server.close();
  });

  test('codec preference: json first gives json; a codec the server lacks is skipped', async () => {
    const server = await startReferenceServer('tcp', { handlers, codecs: ['json', 'raw'] });
    const client = await connect(server.url);
    assert.equal(client.server.codec, 'json');
    assert.deepEqual(await client.call('add', [1, 2]), { sum: 3 });
    await client.close();
    const raw = await connect(server.url, { codecs: [core.rawCodec] });
    assert.equal(raw.server.codec, 'raw');
    assert.equal(text(await raw.call('echo', 'bytes')), 'bytes');
    await raw.close();
    await server.close();
  });

  test('events: connecting, open, closed, with statechange in between', async () => {
    const server = await startReferenceServer('tcp', { handlers });
    const client = new Client({ transport: tcpTransport('127.0.0.1', server.port) });
    const log = recordEvents(client);
    assert.equal(client.state, 'connecting');
    await client.ready;
    await client.close();
    assert.deepEqual(
      log.map((e) => (e.type === 'statechange' ? `${e.event.previous}->${e.event.state}` : e.type)),
      ['connecting', 'connecting->open', 'open', 'disconnect', 'open->closed', 'closed'],
    );
    assert.equal(log.find((e) => e.type === 'open').event.reconnected, false);
    assert.equal(log.find((e) => e.type === 'closed').event.code, 'ERR_CLIENT_CLOSED');
    assert.equal(log.find((e) => e.type === 'disconnect').event.willReconnect, false);
    await server.close();
  });

  test('close() sends GO_AWAY and lets calls in flight finish; later calls fail with ERR_DISCONNECTED', async () => {
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url);
    const conn = server.last;
    const slow = client.call('slow', { ms: 100, value: 'done' });
    await sleep(10);
    const closing = client.close();
    assert.equal(client.state, 'open'); // draining
    await rejectsWith(client.call('echo', 1), 'ERR_DISCONNECTED');
    assert.equal(await slow, 'done');
    await closing;
    assert.equal(client.state, 'closed');
    assert.ok(conn.frames.some((f) => f.type === 'goAway' && f.code === 'ERR_GOING_AWAY'));
    await conn.closedPromise;
    await rejectsWith(client.call('echo', 1), 'ERR_DISCONNECTED');
    assert.throws(() => client.notify('note', 1), (e) => e.code === 'ERR_DISCONNECTED');
    await rejectsWith(client.ready, 'ERR_CLIENT_CLOSED');
    await client.close(); // idempotent
    await server.close();
  });

  test('close({ timeoutMs: 0 }) fails calls in flight with ERR_DISCONNECTED at once', async () => {
    const server = await startReferenceServer('tcp', { handlers });
    const client = await connect(server.url);
    const slow = client.call('slow', { ms: 1000, value: 'never' });
    await sleep(10);
    await client.close({ timeoutMs: 0 });
    await rejectsWith(slow, 'ERR_DISCONNECTED');
    await server.close();
  });

  test('calls made before the first open wait for it, in order', async () => {
    const server = await startReferenceServer('tcp', { handlers });
    const client = new Client({ transport: tcpTransport('127.0.0.1', server.port) });
    const results = [client.call('echo', 1), client.call('echo', 2)];
    const many = client.callMany('count', 2);
    assert.equal(client.stats().waitingCalls, 3);
    assert.deepEqual(await Promise.all(results), [1, 2]);
    const values = [];
    for await (const value of many) values.push(value);
    assert.deepEqual(values, [1, { last: 2 }]);
    assert.throws(() => new Client({ transport: tcpTransport('127.0.0.1', server.port), maxFrameSize: 10 }), RangeError);
    await client.close();
    await server.close();
  });
});
