// Worker threads end to end: the app module (tests/fixtures/workers-app.mjs)
// runs in 2-3 worker threads; clients are real `ws` sockets on 127.0.0.1:0.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer, connect, connectionRefused, waitFor, upgradeRequest, serverFrames } from '../../helpers/index.mjs';
import { joinWorker, rpc, waitForMessage, messages, sleep } from './util.mjs';

const APP = new URL('../../fixtures/workers-app.mjs', import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** Start a server on the worker fixture; every server started is closed in `after`. */
const servers = [];
const allClients = [];
async function start(options) {
  const started = await startServer(null, { app: APP, ...options });
  servers.push(started.server);
  return started;
}
async function join(url) {
  const c = await joinWorker(url);
  allClients.push(c);
  return c;
}
after(
  async () => {
    for (const c of allClients) c.terminate();
    await Promise.all(servers.map((s) => s.close({ drainTimeout: 500 })));
  },
  { timeout: 20000 },
);

// Every test is bounded: a hang fails the test instead of stalling the run.
describe('worker threads', { timeout: 300000 }, () => {
  test('connections are pinned round-robin: one worker handles all of a connection', { timeout: 30000 }, async () => {
    const { server, url } = await start({ workers: 3 });
    const clients = [];
    for (let i = 0; i < 6; i++) clients.push(await join(url));
    const first = clients[0].worker;
    assert.deepEqual(
      clients.map((c) => c.worker),
      clients.map((_, i) => (first + i) % 3),
      'consecutive connections go to consecutive workers',
    );
    // Every message of a connection is handled by the worker that opened it.
    const replies = await Promise.all(
      clients.map(async (c) => {
        const workers = new Set();
        for (let i = 0; i < 15; i++) workers.add((await rpc(c, { op: 'who' })).worker);
        return [...workers];
      }),
    );
    assert.deepEqual(
      replies,
      clients.map((c) => [c.worker]),
    );
    const stats = server.stats();
    assert.equal(stats.workers.length, 3);
    assert.deepEqual(
      stats.workers.map((w) => w.connectionsOpen),
      [2, 2, 2],
    );
    for (const [i, w] of stats.workers.entries()) {
      const expected = clients.filter((c) => c.worker === i).length * 15;
      assert.equal(w.messagesIn, expected, `messages handled by worker ${i}`);
    }
  });

  test('async handlers keep per-connection order (200 messages, random delays)', { timeout: 30000 }, async () => {
    const { url } = await start({ workers: 2 });
    const clients = [await join(url), await join(url), await join(url)];
    assert.notEqual(clients[0].worker, clients[1].worker);
    const N = 200;
    for (const c of clients) {
      // All 200 at once, without waiting for replies.
      for (let n = 0; n < N; n++) c.send(JSON.stringify({ seq: `s${n}`, op: 'seq', n }));
    }
    for (const c of clients) {
      await waitFor(() => messages(c, (m) => m.n !== undefined).length === N, 20000, `${N} replies`);
      const got = messages(c, (m) => m.n !== undefined);
      assert.deepEqual(
        got.map((m) => m.n),
        Array.from({ length: N }, (_, i) => i),
      );
      assert.ok(got.every((m) => m.worker === c.worker && m.id === c.id));
    }
  });

  test('messages wait for an async open handler', { timeout: 30000 }, async () => {
    const { url } = await start({ workers: 2 });
    const clients = await Promise.all([connect(`${url}/slow-open`), connect(`${url}/slow-open`)]);
    allClients.push(...clients);
    for (const c of clients) for (let i = 0; i < 5; i++) c.send(JSON.stringify({ n: i }));
    for (const c of clients) {
      await waitFor(() => c.received.length === 6, 5000, 'hello and 5 echoes');
      const got = c.received.map((m) => JSON.parse(m.data.toString()));
      assert.equal(got[0].hello, true, 'open ran before any message');
      assert.deepEqual(
        got.slice(1).map((m) => m.n),
        [0, 1, 2, 3, 4],
      );
    }
  });

  test('a publish made in either worker reaches subscribers on every worker', { timeout: 30000 }, async () => {
    const { server, url } = await start({ workers: 2 });
    const clients = [await join(url), await join(url), await join(url), await join(url)];
    assert.deepEqual(new Set(clients.map((c) => c.worker)).size, 2);
    for (const c of clients.slice(0, 3)) assert.equal((await rpc(c, { op: 'subscribe', channel: 'xw' })).result, true);
    assert.equal(server.numSubscribers('xw'), 3);
    // The publisher of worker 0 and the one of worker 1.
    const p0 = clients.find((c) => c.worker === 0);
    const p1 = clients.find((c) => c.worker === 1);
    assert.equal((await rpc(p0, { op: 'publish', channel: 'xw', text: 'from-0' })).result, 3);
    assert.equal((await rpc(p1, { op: 'publish', channel: 'xw', text: 'from-1' })).result, 3);
    for (const c of clients.slice(0, 3)) {
      await waitForMessage(c, (m) => m.pub === 'from-1', 5000, 'publish from worker 1');
      const pubs = messages(c, (m) => m.pub !== undefined);
      assert.deepEqual(
        pubs.map((m) => [m.pub, m.worker]),
        [
          ['from-0', 0],
          ['from-1', 1],
        ],
      );
    }
    // The non-subscriber got nothing (its last message is its own hello).
    await rpc(clients[3], { op: 'who' });
    assert.deepEqual(messages(clients[3], (m) => m.pub !== undefined), []);
  });

  test('app.send reaches a connection pinned to another worker', { timeout: 30000 }, async () => {
    const { url } = await start({ workers: 2 });
    const a = await join(url);
    const b = await join(url);
    assert.notEqual(a.worker, b.worker);
    assert.equal((await rpc(a, { op: 'send', to: b.id, text: 'hi-b' })).result, 0, 'SendStatus.SENT');
    assert.equal((await rpc(b, { op: 'send', to: a.id, text: 'hi-a' })).result, 0);
    const gotB = await waitForMessage(b, (m) => m.direct !== undefined);
    const gotA = await waitForMessage(a, (m) => m.direct !== undefined);
    assert.deepEqual(gotB, { direct: 'hi-b', worker: a.worker });
    assert.deepEqual(gotA, { direct: 'hi-a', worker: b.worker });
    // To a connection that does not exist: CLOSED.
    assert.equal((await rpc(a, { op: 'send', to: 99999999, text: 'x' })).result, 3);
  });

  for (const op of ['throw', 'reject']) {
    test(`a handler that ${op === 'throw' ? 'throws' : 'rejects'} closes only its connection with 1011`, { timeout: 30000 }, async () => {
      const { server, url } = await start({ workers: 2 });
      const errors = [];
      server.on('handlerError', (error, info) => errors.push({ error, info }));
      const victim = await join(url);
      const others = [await join(url), await join(url)];
      const sameWorker = others.find((c) => c.worker === victim.worker);
      const otherWorker = others.find((c) => c.worker !== victim.worker);
      assert.equal(sameWorker.worker, victim.worker);
      assert.notEqual(otherWorker.worker, victim.worker);
      victim.send(JSON.stringify({ seq: 'x', op }));
      const closed = await victim.closed;
      assert.equal(closed.code, 1011);
      assert.equal(closed.reason, 'ERR_HANDLER_FAILED');
      await waitFor(() => errors.length > 0, 5000, 'handlerError');
      assert.equal(errors.length, 1);
      const [{ error, info }] = errors;
      assert.equal(error.message, op === 'throw' ? 'boom-sync' : 'boom-async');
      assert.deepEqual(info, { worker: victim.worker, handler: 'message', connection: victim.id });
      // The other connections, on the same worker and on the other, go on.
      assert.equal((await rpc(sameWorker, { op: 'who' })).worker, victim.worker);
      assert.equal((await rpc(otherWorker, { op: 'who' })).id, otherWorker.id);
      assert.equal(sameWorker.readyState, 1);
      // A new connection is served too.
      const fresh = await join(url);
      assert.equal((await rpc(fresh, { op: 'who' })).id, fresh.id);
    });
  }

  test('the watchdog replaces a worker stuck in a busy loop', { timeout: 30000 }, async () => {
    const { server, url } = await start({ workers: 2, watchdogTimeout: 1000, watchdogInterval: 200 });
    const replaced = [];
    server.on('workerReplaced', (info) => replaced.push({ info, at: Date.now() }));
    const clients = [await join(url), await join(url), await join(url), await join(url)];
    const stuckWorker = clients[1].worker;
    const victims = clients.filter((c) => c.worker === stuckWorker);
    const survivors = clients.filter((c) => c.worker !== stuckWorker);
    assert.equal(victims.length, 2);
    assert.equal(survivors.length, 2);

    const sentAt = Date.now();
    clients[1].send(JSON.stringify({ seq: 'spin', op: 'spin' }));
    const closed = await Promise.all(victims.map((c) => c.closed));
    for (const c of closed) assert.equal(c.code, 1011);
    await waitFor(() => replaced.length > 0, 5000, 'workerReplaced');
    const elapsed = replaced[0].at - sentAt;
    assert.deepEqual(replaced[0].info, { worker: stuckWorker, code: 'ERR_WORKER_UNRESPONSIVE' });
    // Deadline 1000 ms checked every 200 ms; allow scheduling slack.
    assert.ok(elapsed >= 800 && elapsed < 3500, `replaced after ${elapsed} ms`);
    assert.equal(replaced.length, 1);

    // Connections of the other worker were not touched.
    for (const c of survivors) {
      assert.equal(c.readyState, 1);
      assert.equal((await rpc(c, { op: 'who' })).worker, c.worker);
    }
    // New connections are served, also by the replacement worker.
    const fresh = [await join(url), await join(url)];
    assert.deepEqual(new Set(fresh.map((c) => c.worker)).size, 2);
    for (const c of fresh) {
      const r = await rpc(c, { op: 'who' });
      assert.equal(r.worker, c.worker);
    }
    const onReplacement = fresh.find((c) => c.worker === stuckWorker);
    // The replacement handles async handlers and publishes as well.
    assert.equal((await rpc(onReplacement, { op: 'subscribe', channel: 'after-watchdog' })).result, true);
    assert.equal((await rpc(survivors[0], { op: 'publish', channel: 'after-watchdog', text: 'ok' })).result, 1);
    await waitForMessage(onReplacement, (m) => m.pub === 'ok');
    // The watchdog keeps quiet about healthy workers.
    await sleep(1500);
    assert.equal(replaced.length, 1);
  });

  test('a worker with a long backlog of real work keeps answering the watchdog', { timeout: 30000 }, async () => {
    // 150 requests of 10 ms arrive together: one batch of 1.5 s of work,
    // longer than the watchdog allows a silent worker. Handled in time
    // slices, the worker answers the watchdog between them and is not
    // replaced; every request is answered, in order.
    const { server, url } = await start({ workers: 1, watchdogTimeout: 600, watchdogInterval: 100 });
    const replaced = [];
    server.on('workerReplaced', (info) => replaced.push(info));
    const client = await join(url);
    const count = 150;
    for (let i = 0; i < count; i++) client.send(JSON.stringify({ seq: `work-${i}`, op: 'work', ms: 10 }));
    await waitForMessage(client, (m) => m.seq === `work-${count - 1}`, 20000, 'the last reply');
    const order = messages(client, (m) => typeof m.seq === 'string' && m.seq.startsWith('work-')).map((m) => m.seq);
    assert.deepEqual(order, Array.from({ length: count }, (_, i) => `work-${i}`));
    assert.deepEqual(replaced, []);
    assert.equal(client.readyState, 1);
  });

  test('a worker woken again while each drain runs keeps answering the watchdog', { timeout: 30000 }, async () => {
    // Requests of 1 ms arrive one every 1 ms for 2.5 s: each drain handles
    // what is there and ends, but the next request has arrived meanwhile
    // and woken the worker again. Node runs such wake-ups back to
    // back (up to 1,000) without returning to the event loop; a worker that
    // drained inside each of them went silent for over a second and was
    // replaced (every client got 1011). The client paces by spinning, so it
    // runs in a process of its own (this one runs the server's watchdog).
    const { server, url } = await start({ workers: 1, watchdogTimeout: 600, watchdogInterval: 100 });
    const replaced = [];
    server.on('workerReplaced', (info) => replaced.push(info));
    const child = spawn(process.execPath, [path.join(here, 'paced-client.mjs'), url, '2500', '1.0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, out);
    const result = JSON.parse(out);
    assert.ok(result.sent > 1000, `sent ${result.sent}`);
    assert.deepEqual(replaced, []);
    assert.equal(result.replies, result.sent, 'every request answered');
    assert.equal(result.closeCode, null);
  });

  test('a worker thread that exits is replaced (ERR_WORKER_EXITED)', { timeout: 30000 }, async () => {
    const { server, url } = await start({ workers: 2 });
    const replaced = [];
    server.on('workerReplaced', (info) => replaced.push(info));
    const a = await join(url);
    const b = await join(url);
    assert.notEqual(a.worker, b.worker);
    a.send(JSON.stringify({ seq: 'exit', op: 'exit' }));
    assert.equal((await a.closed).code, 1011);
    await waitFor(() => replaced.length > 0, 5000, 'workerReplaced');
    assert.deepEqual(replaced, [{ worker: a.worker, code: 'ERR_WORKER_EXITED' }]);
    assert.equal((await rpc(b, { op: 'who' })).worker, b.worker);
    const fresh = [await join(url), await join(url)];
    const onReplacement = fresh.find((c) => c.worker === a.worker);
    assert.ok(onReplacement, 'a new connection is pinned to the replaced worker');
    assert.equal((await rpc(onReplacement, { op: 'who' })).worker, a.worker);
  });

  test('a replacement that fails to load is retried with backoff, then serves', { timeout: 30000 }, async () => {
    const flag = path.join(os.tmpdir(), `sb-workers-fail-load-${process.pid}`);
    fs.rmSync(flag, { force: true });
    const { server, url } = await start({ app: new URL('../../fixtures/workers-flaky-app.mjs', import.meta.url), workers: 2 });
    const replaced = [];
    const loadErrors = [];
    server.on('workerReplaced', (info) => replaced.push(info));
    server.on('handlerError', (error, info) => loadErrors.push({ error, info }));
    try {
      const a = await join(url);
      const b = await join(url);
      fs.writeFileSync(flag, '');
      a.send(JSON.stringify({ seq: 'exit', op: 'exit' }));
      assert.equal((await a.closed).code, 1011);
      await sleep(1200);
      // One replacement; its failed starts are retried after 100, 200, 400,
      // 800 ms..., not in a tight loop of new threads.
      assert.equal(replaced.length, 1);
      assert.ok(loadErrors.length >= 1 && loadErrors.length <= 6, `${loadErrors.length} load attempts in 1.2 s`);
      for (const { error, info } of loadErrors) {
        assert.deepEqual(info, { worker: a.worker, handler: 'load', connection: 0 });
        assert.equal(error.code, 'ERR_APP_LOAD');
        assert.match(error.message, /load failure \(test flag\)/);
      }
      // The other worker serves throughout.
      assert.equal((await rpc(b, { op: 'who' })).worker, b.worker);
      // Once the module loads again, the slot recovers and serves new connections.
      fs.rmSync(flag, { force: true });
      const fresh = await Promise.all([joinWorker(url), joinWorker(url)]);
      allClients.push(...fresh);
      const onReplacement = fresh.find((c) => c.worker === a.worker);
      assert.ok(onReplacement);
      assert.equal((await rpc(onReplacement, { op: 'who' })).worker, a.worker);
      assert.equal(replaced.length, 1);
    } finally {
      fs.rmSync(flag, { force: true });
    }
  });

  test('close() finishes even while a worker is stuck in a busy loop', { timeout: 30000 }, async () => {
    const { server, url } = await startServer(null, { app: APP, workers: 2, watchdogTimeout: 60000 });
    const a = await joinWorker(url);
    const b = await joinWorker(url);
    a.send(JSON.stringify({ seq: 'spin', op: 'spin' }));
    await sleep(100);
    const t0 = Date.now();
    await server.close({ drainTimeout: 1000 });
    const took = Date.now() - t0;
    // Drain (clients answer at once) + the 2 s grace for workers to exit.
    assert.ok(took < 5000, `close() took ${took} ms`);
    assert.equal((await a.closed).code, 1001);
    assert.equal((await b.closed).code, 1001);
  });

  test('graceful close: 1001 to clients, close handlers run, new connections refused', { timeout: 30000 }, async () => {
    const log = path.join(os.tmpdir(), `sb-workers-close-${process.pid}-${Date.now()}.log`);
    process.env.SB_WORKERS_CLOSE_LOG = log;
    let started;
    try {
      started = await startServer(null, { app: APP, workers: 2 });
    } finally {
      delete process.env.SB_WORKERS_CLOSE_LOG;
    }
    const { server, url, port } = started;
    try {
      const clients = [await joinWorker(url), await joinWorker(url), await joinWorker(url)];
      const t0 = Date.now();
      await server.close({ drainTimeout: 3000 });
      const took = Date.now() - t0;
      assert.ok(took < 3000, `clients answered the close: no need to wait for the drain timeout (${took} ms)`);
      for (const c of clients) {
        const closed = await c.closed;
        assert.equal(closed.code, 1001);
      }
      // Every close handler ran in the worker of its connection before close() resolved.
      const lines = fs.readFileSync(log, 'utf8').trim().split('\n').sort();
      assert.deepEqual(
        lines,
        clients.map((c) => `${c.id} 1001 ${c.worker}`).sort(),
      );
      // Nothing listens any more.
      const refused = await connectionRefused(port);
      assert.equal(refused, true, 'a new connection is refused');
      // Closing twice is harmless.
      await server.close();
    } finally {
      fs.rmSync(log, { force: true });
      await server.close({ drainTimeout: 200 });
    }
  });

  test('close() resolves within the drain timeout when a client never answers the close', { timeout: 30000 }, async () => {
    const { server, port } = await startServer(null, { app: APP, workers: 2, closeTimeout: 30 });
    const raw = net.connect(port, '127.0.0.1');
    raw.on('error', () => {});
    await once(raw, 'connect');
    const chunks = [];
    raw.on('data', (c) => chunks.push(c));
    raw.write(upgradeRequest('/'));
    await waitFor(() => Buffer.concat(chunks).includes('\r\n\r\n'), 5000, '101');
    assert.match(Buffer.concat(chunks).toString('latin1'), /^HTTP\/1\.1 101/);
    // A well-behaved client as well: it must not wait for the raw one.
    const polite = await joinWorker(`ws://127.0.0.1:${port}`);
    const drainTimeout = 1000;
    const t0 = Date.now();
    await server.close({ drainTimeout });
    const took = Date.now() - t0;
    assert.ok(took >= drainTimeout - 50, `waited for the drain timeout (${took} ms)`);
    assert.ok(took < drainTimeout + 1500, `close() took ${took} ms with drainTimeout ${drainTimeout}`);
    assert.equal((await polite.closed).code, 1001);
    // The raw client got a close frame with 1001, then the connection ended.
    await waitFor(() => raw.destroyed || raw.readableEnded, 5000, 'raw socket end');
    const frames = serverFrames(Buffer.concat(chunks));
    const close = frames.find((f) => f.opcode === 8);
    assert.ok(close, 'a close frame was sent');
    assert.equal(close.code, 1001);
    raw.destroy();
  });

  for (const [workers, keepOpen] of [
    [2, false],
    [2, true],
    [0, true],
  ]) {
    test(`after close() the process exits on its own (workers: ${workers}, client ${keepOpen ? 'left open' : 'closed first'})`, { timeout: 30000 }, async () => {
      const child = spawn(process.execPath, [path.join(here, 'exit-child.mjs'), String(workers), keepOpen ? '1' : '0'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => (stdout += c));
      child.stderr.on('data', (c) => (stderr += c));
      const exited = once(child, 'exit');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
      const [code, signal] = await exited;
      clearTimeout(timer);
      const exitedAt = Date.now();
      assert.equal(signal, null, `the child had to be killed; stdout: ${stdout} stderr: ${stderr}`);
      assert.equal(code, 0, `exit code ${code}; stderr: ${stderr}`);
      const match = /closed (\d+)/.exec(stdout);
      assert.ok(match, `the child closed its server; stdout: ${stdout} stderr: ${stderr}`);
      const lingered = exitedAt - Number(match[1]);
      assert.ok(lingered < 3000, `the child lived ${lingered} ms after close() resolved`);
    });
  }
});
