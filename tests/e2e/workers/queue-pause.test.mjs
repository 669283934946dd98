// A worker that falls behind: its event queue fills (`maxWorkerQueueBytes`
// small), the I/O thread stops reading its connections, and resumes when
// the worker drains the queue. Each resume may find the queue full again
// at once and pause again; every connection must still get every echo.
// A pause that was lost (an entry paused but in no list of paused entries)
// leaves its connection silent forever: the test sees it stall. And the
// queue stays near its bound: a connection checks it before reading, and
// when the worker drains it the paused connections are resumed one after
// another only until it is full again, not all at once.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Server } from 'switchboard';
import WebSocket from 'ws';
import { within } from '../../helpers/index.mjs';

/** The read buffer of an I/O thread (`READ_BUFFER_BYTES`): what one read may add to the queue. */
const READ_BUFFER = 64 * 1024;

const CLIENTS = 40;
const MESSAGES = 400;
const SIZE = 1024;

test('connections paused on a full worker queue all resume and get every echo', { timeout: 60_000 }, async () => {
  const server = new Server({
    app: new URL('../../fixtures/slow-echo-app.mjs', import.meta.url),
    workers: 1,
    ioThreads: 1,
    maxWorkerQueueBytes: 8 * 1024,
  });
  await server.listen(0, '127.0.0.1');
  const clients = [];
  try {
    const done = [];
    for (let c = 0; c < CLIENTS; c++) {
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/`);
      clients.push(ws);
      done.push(
        new Promise((resolve, reject) => {
          let echoes = 0;
          ws.on('message', () => {
            if (++echoes === MESSAGES) resolve(echoes);
          });
          ws.on('error', reject);
          ws.on('open', () => {
            const payload = Buffer.alloc(SIZE, c);
            for (let i = 0; i < MESSAGES; i++) ws.send(payload);
          });
        }),
      );
    }
    const counts = await within(Promise.all(done), 45_000, 'every echo (a connection paused on the full queue never resumed)');
    assert.deepEqual(counts, new Array(CLIENTS).fill(MESSAGES));
  } finally {
    for (const ws of clients) ws.terminate();
    await server.close({ drainTimeout: 1000 });
  }
});

test('a full worker queue passes its bound by one read at most', { timeout: 60_000 }, async () => {
  const queueBytes = 64 * 1024;
  const server = new Server({
    app: new URL('../../fixtures/slow-echo-app.mjs', import.meta.url),
    workers: 1,
    ioThreads: 1,
    maxWorkerQueueBytes: queueBytes,
  });
  await server.listen(0, '127.0.0.1');
  try {
    // The clients in a process of their own: this one only samples.
    const clients = spawn(process.execPath, [
      fileURLToPath(new URL('../../fixtures/echo-flood-clients.mjs', import.meta.url)),
      String(server.port), '100', '20', String(16 * 1024),
    ], { stdio: ['ignore', 'ignore', 'inherit'] });
    let mostQueued = 0;
    const sample = setInterval(() => {
      mostQueued = Math.max(mostQueued, server.stats().workers[0].queuedEventBytes);
    }, 1);
    const [code] = await within(once(clients, 'exit'), 45_000, 'every echo').finally(() => clearInterval(sample));
    assert.equal(code, 0, 'every client got every echo');
    // Connections check the queue before they read, and a drained queue
    // resumes paused ones only until one fills it again: the bound, plus
    // the read that crossed it (and a message it completed). Resuming all
    // at once and reading into a full queue, as before, queued 1.7 to
    // 2.1 MB here.
    assert.ok(mostQueued <= queueBytes + 2 * READ_BUFFER, `at most ${queueBytes + 2 * READ_BUFFER} bytes queued, saw ${mostQueued}`);
    assert.ok(mostQueued >= queueBytes, `the queue filled (saw ${mostQueued})`);
  } finally {
    await server.close({ drainTimeout: 1000 });
  }
});
