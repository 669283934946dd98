// RPC end to end with the handlers in worker threads (an app module,
// tests/fixtures/rpc-e2e-app.mjs): the real client against the native
// server with two workers, over TCP, WebSocket and a Unix socket.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { RemoteError, Server } from 'switchboard';
import { connect } from 'switchboard-client/node';
import { expectedSha256, generate, hashStream } from '../fixtures/rpc-data.mjs';
import { TRANSPORTS, rejectsWith, socketPath, until } from '../fixtures/rpc-e2e.mjs';

const app = new URL('../fixtures/rpc-e2e-app.mjs', import.meta.url);

describe('RPC handlers in worker threads', () => {
  let server;
  let urls;
  const unix = socketPath('workers');
  const handlerErrors = [];

  before(async () => {
    server = new Server({ app, workers: 2 });
    server.on('handlerError', (error, info) => handlerErrors.push({ error, info }));
    const [tcp, , http] = await server.listen([
      { host: '127.0.0.1', port: 0, protocol: 'rpc' },
      { path: unix, protocol: 'rpc' },
      { host: '127.0.0.1', port: 0 },
    ]);
    urls = { tcp: `tcp://127.0.0.1:${tcp.port}`, unix: `unix:${unix}`, ws: `ws://127.0.0.1:${http.port}/rpc` };
  });

  after(async () => {
    await server?.close();
    rmSync(unix, { force: true });
  });

  const handlers = {
    'client.hello': (payload) => ({ greeted: payload.worker }),
    'client.echo': (payload) => payload,
  };

  for (const transport of TRANSPORTS) {
    test(`over ${transport}: calls, errors, middleware, expose, one-way, callbacks and cancellation in a worker`, async () => {
      const client = await connect(urls[transport], { reconnect: false, handlers });
      try {
        const me = await client.call('whoami');
        assert.ok(me.worker === 0 || me.worker === 1);
        assert.equal(me.transport, transport === 'ws' ? 'websocket' : transport);
        assert.equal(await client.call('add', [40, 2]), 42);
        assert.deepEqual(await client.call('echo', { deep: [1, { x: 'y' }] }), { deep: [1, { x: 'y' }] });
        const values = [];
        for await (const value of client.callMany('count', 4)) values.push(value);
        assert.deepEqual(values, [1, 2, 3, 4]);

        const failed = await rejectsWith(client.call('fail'), 'E_WORKER');
        assert.ok(failed instanceof RemoteError);
        assert.deepEqual(failed.details, { worker: me.worker });
        const forbidden = await rejectsWith(client.call('guarded'), 'ERR_FORBIDDEN');
        assert.deepEqual(forbidden.details, { need: 'admin' });
        const before = handlerErrors.length;
        const crashed = await rejectsWith(client.call('crash'), 'ERR_HANDLER_FAILED');
        assert.doesNotMatch(crashed.message, /internals/);
        await until(() => handlerErrors.length === before + 1, 'the worker reports the failure to the main thread');
        assert.equal(handlerErrors.at(-1).error.message, 'worker internals');
        assert.equal(handlerErrors.at(-1).info.worker, me.worker);
        assert.equal(handlerErrors.at(-1).info.handler, 'rpc');

        const math = client.wrap({ prefix: 'math.' });
        assert.equal(await math.mul(6, 7), 42);
        assert.equal(await math.hello('you'), `hello you from worker ${me.worker}`);
        await rejectsWith(client.call('math.nothing'), 'ERR_NOT_IMPLEMENTED');
        await rejectsWith(client.call('no.such.action'), 'ERR_NOT_IMPLEMENTED');

        client.notify('note', 'one-way 1');
        client.notify('note', 'one-way 2');
        // The server called the client from onOpen.
        assert.deepEqual(await client.call('askClient', 'round trip'), { answer: 'round trip' });
        await until(async () => (await client.call('state')).opened !== null, 'the onOpen call completes');

        const controller = new AbortController();
        const waiting = client.call('wait', null, { signal: controller.signal });
        setTimeout(() => controller.abort(), 20);
        await rejectsWith(waiting, 'ERR_CANCELLED');
        await rejectsWith(client.call('wait', null, { timeoutMs: 30 }), 'ERR_TIMEOUT');
        await until(async () => (await client.call('state')).aborts.length === 2, 'the worker handlers see both cancels');
        const state = await client.call('state');
        assert.deepEqual(state.opened, { greeted: me.worker });
        assert.deepEqual(state.aborts, ['ERR_CANCELLED', 'ERR_CANCELLED']);
        assert.deepEqual(state.notes, ['one-way 1', 'one-way 2']);
        assert.ok(state.calls >= 15, `middleware counted ${state.calls} calls`);
        assert.deepEqual(client.stats().peer.pendingCalls, 0);
      } finally {
        await client.close();
      }
    });

    test(`over ${transport}: files and streams both ways through a worker`, async () => {
      const client = await connect(urls[transport], { reconnect: false, handlers });
      try {
        const size = 16 * 1024 * 1024 + 5;
        const chunk = 64 * 1024;
        const uploaded = await client.call('upload', null, {
          stream: new TextEncoder().encode('and a stream'),
          files: [{ name: 'up.bin', size, data: generate(size, 61, chunk) }],
        });
        assert.deepEqual(uploaded, [
          { name: 'up.bin', size, sha256: expectedSha256(size, 61, chunk) },
          { size: 12, sha256: createHash('sha256').update('and a stream').digest('hex') },
        ]);
        const response = await client.request('download', { size, seed: 62 });
        assert.deepEqual(response.value, { size });
        const [file] = response.files;
        assert.equal(file.name, 'generated.bin');
        assert.deepEqual(await hashStream(file.stream), { size, sha256: expectedSha256(size, 62, chunk) });
        const later = await client.request('writeLater');
        assert.equal(later.value, 'stream follows');
        assert.equal(await later.stream.text(), 'line 0\nline 1\nline 2\n');
      } finally {
        await client.close();
      }
    });
  }

  test('connections are spread over both workers', async () => {
    const workers = new Set();
    const clients = [];
    for (let i = 0; i < 8 && workers.size < 2; i++) {
      const client = await connect(urls[TRANSPORTS[i % 3]], { reconnect: false, handlers });
      clients.push(client);
      workers.add((await client.call('whoami')).worker);
    }
    assert.equal(workers.size, 2);
    await Promise.all(clients.map((client) => client.close()));
  });
});
