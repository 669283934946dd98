// A worker that falls behind: its event queue fills (`maxWorkerQueueBytes`
// small), the I/O thread stops reading its connections, and resumes when
// the worker drains the queue. Each resume may find the queue full again
// at once and pause again; every connection must still get every echo.
// A pause that was lost (an entry paused but in no list of paused entries)
// leaves its connection silent forever: the test sees it stall.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Server } from 'switchboard';
import WebSocket from 'ws';
import { within } from '../../helpers/index.mjs';

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
