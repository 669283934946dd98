// RPC connection lifecycle end to end, the real client against the native
// server (`workers: 0`): server shutdown with GO_AWAY while calls are in
// flight, a per-connection go-away and reconnect, a forced close, the
// client's own graceful close, and the open hook (async, refusing).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RpcError } from 'switchboard';
import { randomSeed } from 'switchboard-rpc';
import { rejectsWith, sleep, startServer, until } from '../fixtures/rpc-e2e.mjs';
import { HELLO, PREFACE, encodeFrame, rawConnect } from './raw.mjs';

function setup(state) {
  return (rpc) => {
    rpc
      .action('whoami', (call) => call.connection.id)
      .action('slow', async (call) => {
        const { ms, value } = call.decode();
        state.started += 1;
        await sleep(ms);
        state.finished += 1;
        return value;
      })
      .action('ticks', async (call) => {
        const n = call.decode();
        state.started += 1;
        for (let i = 0; i < n; i++) {
          call.respond(i, { last: false });
          await sleep(20);
        }
        call.end();
      })
      .action('goAwayMe', (call) => {
        call.connection.goAway('please reconnect');
        return 'told';
      })
      .action('kickMe', (call) => {
        setTimeout(() => call.connection.close('ERR_KICKED', 'out you go'), 5);
        return 'soon';
      })
      .action('askClientSlow', (call) => call.connection.call('client.slow', call.decode()));
  };
}

/** Outcome of a promise as data. */
const settle = (promise) =>
  promise.then(
    (value) => ({ value }),
    (error) => ({ error: error.code }),
  );

for (const transport of ['tcp', 'unix', 'ws']) {
  test(`server shutdown over ${transport}: GO_AWAY, calls in flight finish, new ones are refused`, async (t) => {
    const state = { started: 0, finished: 0 };
    const rpc = await startServer(setup(state));
    const client = await rpc.connect(transport);
    const events = [];
    for (const type of ['goaway', 'disconnect', 'closed']) client.on(type, (event) => events.push([type, event.code]));
    const calls = [1, 2, 3].map((i) => settle(client.call('slow', { ms: 150 + 20 * i, value: `done ${i}` })));
    const ticks = settle(
      (async () => {
        const seen = [];
        for await (const tick of client.callMany('ticks', 5)) seen.push(tick);
        return seen;
      })(),
    );
    await until(() => state.started === 4, 'the handlers start');
    const started = performance.now();
    const closing = rpc.close();
    t.after(() => closing);
    await until(() => events.length > 0, 'the GO_AWAY arrives');
    assert.deepEqual(events[0], ['goaway', 'ERR_GOING_AWAY']);
    // After the GO_AWAY no new call goes out on this connection (and, with
    // reconnecting off, it fails when the connection ends).
    const late = settle(client.call('slow', { ms: 1, value: 'late' }));
    assert.deepEqual(await Promise.all(calls), [{ value: 'done 1' }, { value: 'done 2' }, { value: 'done 3' }]);
    assert.deepEqual(await ticks, { value: [0, 1, 2, 3, 4] });
    assert.deepEqual(await late, { error: 'ERR_DISCONNECTED' });
    assert.equal(state.finished, 3);
    await closing;
    // The server closed as soon as the client was done, not at its close timeout.
    assert.ok(performance.now() - started < 2000, `close took ${performance.now() - started} ms`);
    assert.deepEqual(events.slice(1), [
      ['disconnect', 'ERR_GOING_AWAY'],
      ['closed', 'ERR_GOING_AWAY'],
    ]);
    assert.equal(rpc.closed.length, 1);
  });
}

for (const transport of ['tcp', 'ws']) {
  test(`connection.goAway() over ${transport}: calls in flight finish, the client reconnects`, async () => {
    const state = { started: 0, finished: 0 };
    const rpc = await startServer(setup(state));
    try {
      const client = await rpc.connect(transport, { reconnect: { initialDelayMs: 10, maxDelayMs: 50 } });
      const reopened = [];
      client.on('open', (event) => reopened.push(event.reconnected));
      const first = await client.call('whoami');
      const slow = settle(client.call('slow', { ms: 150, value: 'finished on the old connection' }));
      await until(() => state.started === 1, 'the slow call starts');
      assert.equal(await client.call('goAwayMe'), 'told');
      // Sent after the GO_AWAY: it waits for the next connection.
      const after = client.call('whoami');
      assert.deepEqual(await slow, { value: 'finished on the old connection' });
      const second = await after;
      assert.notEqual(second, first, 'a new connection');
      assert.deepEqual(reopened, [true]);
      await until(() => rpc.closed.some((c) => c.id === first), 'the old connection closes');
      assert.equal(await client.call('slow', { ms: 1, value: 'ok' }), 'ok');
      await client.close();
    } finally {
      await rpc.close();
    }
  });

  test(`connection.close(code) over ${transport}: the client sees the code; calls in flight fail`, async () => {
    const state = { started: 0, finished: 0 };
    const rpc = await startServer(setup(state));
    try {
      const client = await rpc.connect(transport);
      const disconnects = [];
      client.on('disconnect', (event) => disconnects.push({ code: event.code, willReconnect: event.willReconnect }));
      const slow = settle(client.call('slow', { ms: 500, value: 'never' }));
      assert.equal(await client.call('kickMe'), 'soon');
      assert.deepEqual(await slow, { error: 'ERR_DISCONNECTED' });
      assert.deepEqual(disconnects, [{ code: 'ERR_KICKED', willReconnect: false }]);
      await until(() => rpc.closed.length === 1, 'the server side closes');
    } finally {
      await rpc.close();
    }
  });

  test(`client.close() over ${transport}: GO_AWAY from the client, calls both ways finish first`, async () => {
    const state = { started: 0, finished: 0 };
    const rpc = await startServer(setup(state));
    try {
      let clientStarted = 0;
      const client = await rpc.connect(transport, {
        handlers: {
          'client.slow': async (ms) => {
            clientStarted++;
            await sleep(ms);
            return `client waited ${ms}`;
          },
        },
      });
      const ours = settle(client.call('slow', { ms: 150, value: 'server done' }));
      const theirs = settle(client.call('askClientSlow', 150));
      await until(() => state.started === 1 && rpc.connections.size === 1, 'the calls start');
      const [connection] = rpc.connections.values();
      await until(() => connection.stats().pendingCalls === 1, 'the server calls the client');
      // The server's call must have reached the client before its GO_AWAY:
      // the GO_AWAY's last call id covers only the calls the client saw,
      // and one still on the wire is refused with ERR_GOING_AWAY (§8).
      await until(() => clientStarted === 1, "the client's handler starts");
      await client.close();
      assert.deepEqual(await ours, { value: 'server done' });
      assert.deepEqual(await theirs, { value: 'client waited 150' });
      await until(() => rpc.closed.length === 1, 'the server side closes');
      await rejectsWith(client.call('slow', { ms: 1, value: 'x' }), 'ERR_DISCONNECTED');
    } finally {
      await rpc.close();
    }
  });
}

for (const transport of ['tcp', 'ws']) {
  test(`an async onOpen over ${transport}: calls wait for it; its RpcError refuses the client`, async () => {
    const opened = [];
    const rpc = await startServer((server) => server.action('me', (call) => call.connection.data ?? null), {
      onOpen: async (connection) => {
        // A slow check of the connect data (a token lookup, say).
        await sleep(60);
        const token = new TextDecoder().decode(connection.connectData);
        opened.push(token);
        if (token !== 'secret') throw new RpcError('ERR_UNAUTHORIZED', 'unknown token');
        connection.data = { user: 'ada' };
      },
    });
    try {
      const client = await rpc.connect(transport, { connectData: 'secret' });
      // Sent at once, dispatched only once the hook has set the data.
      assert.deepEqual(await Promise.all([client.call('me'), client.call('me')]), [{ user: 'ada' }, { user: 'ada' }]);
      await client.close();

      const refused = await rpc.connect(transport, { connectData: 'forged' });
      const goAways = [];
      refused.on('goaway', (event) => goAways.push([event.code, event.message]));
      const outcome = await settle(refused.call('me', undefined, { timeoutMs: 3000 }));
      assert.ok(outcome.error, `the refused client's call fails (got ${JSON.stringify(outcome)})`);
      assert.notEqual(outcome.error, 'ERR_TIMEOUT');
      assert.equal(goAways.length, 1);
      assert.equal(goAways[0][0], 'ERR_UNAUTHORIZED');
      assert.match(goAways[0][1], /unknown token/);
      await until(() => rpc.closed.length === 2, 'both server sides close');
      assert.deepEqual(opened, ['secret', 'forged']);
      // A refusal is an answer, not a failure of the server's code.
      assert.deepEqual(rpc.handlerErrors, []);
      await refused.close();
    } finally {
      await rpc.close();
    }
  });
}

for (const when of ['sync', 'async']) {
  test(`calls pipelined behind the HELLO never reach a handler when a ${when} onOpen refuses the client`, async () => {
    const ran = [];
    const rpc = await startServer((server) => server.action('echo', (call) => ran.push(call.decode())), {
      onOpen: (connection) => {
        const refuse = () => {
          throw new RpcError('ERR_UNAUTHORIZED', `connection ${connection.id} refused`);
        };
        if (when === 'sync') refuse();
        return sleep(20).then(refuse);
      },
    });
    try {
      const port = Number(new URL(rpc.urls.tcp).port);
      const socket = await rawConnect(port);
      // One write: the calls arrive with the HELLO, before the hook has run.
      const calls = [1, 2, 3].map((callId) =>
        encodeFrame({ type: 'message', callId, expectsReply: true, uuid: null, attachments: 0, action: 'echo', payload: Buffer.from(`${callId}`) }),
      );
      socket.write(Buffer.concat([PREFACE, encodeFrame({ ...HELLO, seed: randomSeed() }), ...calls]));
      const frames = [];
      for (let frame; (frame = await socket.nextFrame()); ) frames.push(frame);
      assert.deepEqual(
        frames.map((f) => f.type),
        ['welcome', 'goAway'],
      );
      assert.equal(frames[1].code, 'ERR_UNAUTHORIZED');
      await until(() => rpc.closed.length === 1, 'the server side closes');
      assert.deepEqual(ran, [], 'no call of a refused client is dispatched');
      assert.deepEqual(rpc.handlerErrors, []);
    } finally {
      await rpc.close();
    }
  });
}

for (const transport of ['tcp', 'ws']) {
  test(`client.close() over ${transport}: the server closes as the GO_AWAY's receiver; the client reports its own close`, async () => {
    const state = { started: 0, finished: 0 };
    const rpc = await startServer(setup(state));
    try {
      const client = await rpc.connect(transport);
      const events = [];
      for (const type of ['disconnect', 'closed']) client.on(type, (event) => events.push([type, event.code]));
      const slow = settle(client.call('slow', { ms: 100, value: 'done' }));
      await until(() => state.started === 1, 'the call starts');
      // A long drain: the server's close, not the client's timeout, ends it.
      const started = performance.now();
      await client.close({ timeoutMs: 10_000 });
      assert.ok(performance.now() - started < 5000, 'closed once the call was done');
      assert.deepEqual(await slow, { value: 'done' });
      await until(() => rpc.closed.length === 1, 'the server side closes');
      assert.deepEqual(events, [
        ['disconnect', 'ERR_CLIENT_CLOSED'],
        ['closed', 'ERR_CLIENT_CLOSED'],
      ]);
    } finally {
      await rpc.close();
    }
  });
}
