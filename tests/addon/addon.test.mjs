// The native addon as an addon: loaded in several threads, several servers
// per process, servers closed and created again, threads joined on close,
// the module loaded twice in one thread.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Server } from 'switchboard';
import { startServer, connect, connectionRefused, nextMessage, waitFor } from '../helpers/index.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const APP = new URL('../fixtures/addon-echo-app.mjs', import.meta.url);

/** Run `node <script> ...args`; resolves with its exit and output, killing it after `timeoutMs`. */
async function runChild(script, args, timeoutMs = 20000) {
  const child = spawn(process.execPath, [path.join(here, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await once(child, 'exit');
  clearTimeout(timer);
  return { code, signal, stdout, stderr };
}

async function echo(url, text) {
  const c = await connect(url);
  try {
    c.send(text);
    return (await nextMessage(c)).data.toString();
  } finally {
    c.terminate();
  }
}

describe('the native addon', { timeout: 300000 }, () => {
  for (const workers of [0, 1]) {
    test(`loads and serves inside a plain worker thread (server workers: ${workers})`, { timeout: 30000 }, async () => {
      const worker = new Worker(new URL('./worker-thread-server.mjs', import.meta.url), { workerData: { workers } });
      const errors = [];
      worker.on('error', (e) => errors.push(e));
      const exited = once(worker, 'exit');
      try {
        const [{ port }] = await once(worker, 'message');
        assert.ok(port > 0);
        const url = `ws://127.0.0.1:${port}`;
        assert.equal(await echo(url, 'through a worker thread'), 'through a worker thread');
        assert.equal(await echo(url, 'again'), 'again');
        // Clients held across the close get 1001.
        const held = await connect(url);
        worker.postMessage('close');
        const [reply] = await once(worker, 'message');
        assert.deepEqual(reply, { closed: true });
        assert.equal((await held.closed).code, 1001);
        // The worker thread ends on its own once its server closed.
        const [code] = await exited;
        assert.equal(code, 0);
        assert.deepEqual(errors, []);
      } finally {
        await worker.terminate();
      }
      // The main thread's copy of the addon is unaffected by the thread's exit.
      const { server, url } = await startServer((s) => s.ws('/', { message: (ws, d) => ws.send(d) }));
      try {
        assert.equal(await echo(url, 'main thread'), 'main thread');
      } finally {
        await server.close({ drainTimeout: 500 });
      }
    });
  }

  for (const workers of [0, 1]) {
    test(`a server whose thread ends without close() is shut down with it (workers: ${workers})`, { timeout: 30000 }, async () => {
      const worker = new Worker(new URL('./worker-thread-server.mjs', import.meta.url), { workerData: { workers } });
      worker.on('error', () => {});
      const [{ port }] = await once(worker, 'message');
      const url = `ws://127.0.0.1:${port}`;
      assert.equal(await echo(url, 'before'), 'before');
      const held = await connect(url);
      await worker.terminate();
      // The connection ends and the port is released: nothing is left
      // accepting connections that no handler would ever see.
      const closed = await Promise.race([held.closed, new Promise((r) => setTimeout(() => r('still open'), 5000))]);
      assert.notEqual(closed, 'still open');
      const refused = await connectionRefused(port);
      assert.equal(refused, true, 'the orphaned server no longer listens');
    });
  }

  test('two servers in one process are independent', { timeout: 30000 }, async () => {
    const inline = (sockets) => (s) =>
      s.ws('/', {
        open(ws) {
          sockets.push(ws);
          ws.send(JSON.stringify({ id: ws.id }));
        },
      });
    const socketsA = [];
    const socketsB = [];
    const A = await startServer(inline(socketsA));
    const B = await startServer(inline(socketsB));
    // And two servers with worker pools, side by side.
    const C = await startServer(null, { app: APP, workers: 2 });
    const D = await startServer(null, { app: APP, workers: 2 });
    try {
      assert.notEqual(A.port, B.port);
      const a = await connect(A.url);
      const b1 = await connect(B.url);
      const b2 = await connect(B.url);
      const idA = JSON.parse((await nextMessage(a)).data).id;
      const idB1 = JSON.parse((await nextMessage(b1)).data).id;
      const idB2 = JSON.parse((await nextMessage(b2)).data).id;
      // Ids are allocated per server: the same number can name a connection of each.
      assert.equal(idA, idB1);
      A.server.subscribe(idA, 'shared-name');
      B.server.subscribe([idB1, idB2], 'shared-name');
      assert.equal(A.server.numSubscribers('shared-name'), 1);
      assert.equal(B.server.numSubscribers('shared-name'), 2);
      assert.equal(A.server.publish('shared-name', 'only-a'), 1);
      assert.equal(B.server.publish('shared-name', 'only-b'), 2);
      assert.equal(A.server.send(idA, 'direct-a'), 0);
      assert.equal((await nextMessage(a)).data.toString(), 'only-a');
      assert.equal((await nextMessage(a)).data.toString(), 'direct-a');
      for (const b of [b1, b2]) assert.equal((await nextMessage(b)).data.toString(), 'only-b');
      const statsA = A.server.stats();
      const statsB = B.server.stats();
      assert.equal(statsA.connectionsOpen, 1);
      assert.equal(statsB.connectionsOpen, 2);
      assert.equal(statsA.subscriptions, 1);
      assert.equal(statsB.subscriptions, 2);
      // A virtual socket of one server is unknown to the other.
      const vs = A.server.createVirtualSocket(idA, 'vs:');
      assert.throws(() => B.server.deleteVirtualSocket(vs), { code: 'ERR_VIRTUAL_SOCKET_UNKNOWN' });

      // Worker pools: publishes from C's workers stay in C.
      const join = async (url, ch) => {
        const c = await connect(`${url}/pubsub?ch=${ch}`);
        const hello = JSON.parse((await nextMessage(c)).data);
        c.id = hello.id;
        return c;
      };
      const c1 = await join(C.url, 'room');
      const c2 = await join(C.url, 'room');
      const d1 = await join(D.url, 'room');
      assert.equal(C.server.numSubscribers('room'), 2);
      assert.equal(D.server.numSubscribers('room'), 1);
      c1.send('publish:in-c');
      await waitFor(() => c1.received.length >= 3 && c2.received.length >= 2, 5000, 'publish in C');
      assert.deepEqual(c1.received.slice(1).map((m) => m.data.toString()).sort(), ['in-c', '{"published":2}']);
      assert.equal(c2.received[1].data.toString(), 'in-c');
      d1.send('publish:in-d');
      await waitFor(() => d1.received.length >= 3, 5000, 'publish in D');
      assert.deepEqual(d1.received.slice(1).map((m) => m.data.toString()).sort(), ['in-d', '{"published":1}']);
      // Barrier on C's clients: nothing of D leaked into C.
      assert.equal(C.server.send(c2.id, 'end'), 0);
      await waitFor(() => c2.received.length >= 3, 5000, 'barrier');
      assert.deepEqual(c2.received.slice(1).map((m) => m.data.toString()), ['in-c', 'end']);

      // Closing one server leaves the other serving.
      await A.server.close({ drainTimeout: 500 });
      await C.server.close({ drainTimeout: 500 });
      assert.equal((await a.closed).code, 1001);
      assert.equal((await c1.closed).code, 1001);
      assert.equal(b1.readyState, 1);
      assert.equal(B.server.publish('shared-name', 'still-b'), 2);
      assert.equal((await nextMessage(b1)).data.toString(), 'still-b');
      assert.equal(D.server.numSubscribers('room'), 1);
      d1.send('publish:still-d');
      await waitFor(() => d1.received.some((m) => m.data.toString() === 'still-d'), 5000, 'D after C closed');
      for (const c of [b1, b2, d1, c2]) c.terminate();
    } finally {
      await Promise.all([A, B, C, D].map((s) => s.server.close({ drainTimeout: 500 })));
    }
  });

  test('close, then a new server listens on the same port', { timeout: 30000 }, async () => {
    const first = await startServer((s) => s.ws('/', { message: (ws, d) => ws.send(d) }));
    const port = first.port;
    assert.equal(await echo(first.url, 'one'), 'one');
    const held = await connect(first.url);
    // While the first server holds the port, a second cannot listen on it,
    // and its failed listen() leaves nothing running.
    const clash = new Server({ workers: 0 });
    clash.ws('/', {});
    await assert.rejects(clash.listen(port, '127.0.0.1'), { code: 'ERR_LISTEN' });
    await first.server.close({ drainTimeout: 500 });
    assert.equal((await held.closed).code, 1001);
    // A closed server cannot be listened again...
    await assert.rejects(first.server.listen(port, '127.0.0.1'), (e) => typeof e.code === 'string' && e.code.startsWith('ERR_'));
    // ...but a new one can take the same port at once.
    for (let round = 0; round < 3; round++) {
      const again = new Server({ workers: round === 2 ? 2 : 0, app: round === 2 ? APP : undefined });
      if (round < 2) again.ws('/', { message: (ws, d) => ws.send(d) });
      const addresses = await again.listen(port, '127.0.0.1');
      assert.deepEqual(addresses, [{ host: '127.0.0.1', port }]);
      assert.equal(again.port, port);
      assert.equal(await echo(`ws://127.0.0.1:${port}`, `round ${round}`), `round ${round}`);
      const c = await connect(`ws://127.0.0.1:${port}`);
      await again.close({ drainTimeout: 500 });
      assert.equal((await c.closed).code, 1001);
    }
    // The server that failed to listen can listen once the port is free.
    await clash.listen(port, '127.0.0.1');
    assert.equal(clash.port, port);
    await clash.close({ drainTimeout: 200 });
  });

  for (const workers of [0, 2]) {
    test(`no native thread is left after close (workers: ${workers})`, { timeout: 30000 }, async () => {
      const ioThreads = 3;
      const r = await runChild('threads-child.mjs', [String(workers), String(ioThreads)]);
      assert.equal(r.signal, null, `child killed; stderr: ${r.stderr}`);
      assert.equal(r.code, 0, `stderr: ${r.stderr}`);
      const { baseline, listening, after, echoed } = JSON.parse(r.stdout.trim().split('\n').at(-1));
      assert.equal(echoed, 'ping');
      assert.equal(baseline.io, 0);
      assert.ok(listening.io >= ioThreads, `switchboard-io threads while listening: ${listening.names}`);
      assert.ok(listening.count >= baseline.count + ioThreads + workers, `${listening.count} vs ${baseline.count}`);
      assert.equal(after.io, 0, `left: ${after.names}`);
      assert.equal(after.count, baseline.count, `baseline ${baseline.names} after ${after.names}`);
    });
  }

  // proc(5) policies: 0 SCHED_OTHER, 3 SCHED_BATCH.
  for (const [scheduling, policy] of [[undefined, 3], ['batch', 3], ['normal', 0]]) {
    test(`the I/O threads run under ${policy === 3 ? 'SCHED_BATCH' : 'SCHED_OTHER'} (ioThreadScheduling: ${scheduling ?? 'default'})`, { timeout: 30000 }, async () => {
      const args = ['0', '2'];
      if (scheduling) args.push(scheduling);
      const r = await runChild('threads-child.mjs', args);
      assert.equal(r.code, 0, `stderr: ${r.stderr}`);
      const { listening, echoed } = JSON.parse(r.stdout.trim().split('\n').at(-1));
      assert.equal(echoed, 'ping');
      assert.deepEqual(listening.ioPolicies, [policy, policy]);
    });
  }

  test('ioThreadScheduling other than batch or normal is refused', () => {
    assert.throws(() => new Server({ workers: 0, ioThreadScheduling: 'fifo' }), { code: 'ERR_INVALID_OPTION', message: /ioThreadScheduling/ });
  });

  test('the module can be loaded twice in one thread', { timeout: 30000 }, async () => {
    const r = await runChild('load-twice-child.mjs', []);
    assert.equal(r.signal, null, `child killed; stderr: ${r.stderr}`);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1));
    assert.equal(out.sameServerClass, true);
    assert.equal(out.nativeInstancesShareAddon, true);
    assert.equal(out.requireTwiceSame, true);
    assert.equal(out.reinitIsNewObject, true);
    // The first load and its re-initialisation share one library (one id
    // counter); the copy at another path has its own.
    assert.equal(out.ids[1], out.ids[0] + 1);
    assert.equal(out.ids[2], 1);
    assert.equal(new Set(out.ports).size, 3);
    assert.ok(out.ports.every((p) => p > 0));
    assert.equal(out.reinitOpensFirst, true);
    assert.equal(out.copyOpenUnknown, 'ERR_SERVER_CLOSED');
    assert.equal(out.echo, 'still works');
    assert.equal(out.done, true);
  });
});
