// The default maxConnections follows the open-file limit: a server started
// with a limit of 512 descriptors admits 448 connections (512 minus a
// reserve of 64 for Node, listeners and files: docs/api.md) and answers the
// next clients 503 ERR_SERVER_AT_CAPACITY at once, where a default above the
// limit left them connected to the backlog with no answer (accept failing
// with EMFILE). The option still overrides it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const LIMIT = 512;
const EXPECTED_DEFAULT = 448; // LIMIT minus max(64, min(1000, LIMIT / 8))
/** Long enough for any answer on a loaded machine; an unanswered client waits forever. */
const ANSWER_TIMEOUT_MS = 15_000;

/** Start fd-limit-child.mjs with an open-file limit of `LIMIT` (soft and hard). */
async function startChild(t, env = {}) {
  const child = spawn('prlimit', [`--nofile=${LIMIT}:${LIMIT}`, process.execPath, path.join(here, 'fd-limit-child.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  t.after(() => child.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
}

const UPGRADE =
  'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';

/**
 * Open a raw connection and send an upgrade; resolves with the socket, the
 * status of the answer and its body (for a refusal, once the server closed),
 * or status 0 if nothing came back within ANSWER_TIMEOUT_MS.
 */
function upgrade(port, sockets) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    let status = null;
    const done = (result) => {
      clearTimeout(timer);
      resolve({ socket, ...result });
    };
    const timer = setTimeout(() => done({ status: 0, body: '' }), ANSWER_TIMEOUT_MS);
    socket.setEncoding('latin1');
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      text += chunk;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m && status === null) {
        status = Number(m[1]);
        // Held connections stay open: their answer is complete with the head.
        if (status === 101 && text.includes('\r\n\r\n')) done({ status, body: '' });
      }
    });
    socket.on('close', () => {
      const end = text.indexOf('\r\n\r\n');
      done({ status: status ?? 0, body: end >= 0 ? text.slice(end + 4) : '' });
    });
    socket.write(UPGRADE);
  });
}

/** Open `n` connections, `batch` at a time; resolves with their answers in order. */
async function upgradeMany(port, n, sockets, batch = 64) {
  const answers = [];
  for (let i = 0; i < n; i += batch) {
    answers.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, () => upgrade(port, sockets)))));
  }
  return answers;
}

test(`with an open-file limit of ${LIMIT}, the default admits ${EXPECTED_DEFAULT} connections and refuses the next with 503`, { timeout: 120_000 }, async (t) => {
  const info = await startChild(t);
  assert.deepEqual([info.soft, info.hard], [LIMIT, LIMIT], 'the child runs under the limit');
  const sockets = [];
  t.after(() => sockets.forEach((s) => s.destroy()));

  const held = await upgradeMany(info.port, EXPECTED_DEFAULT, sockets);
  const statuses = held.map((a) => a.status);
  assert.equal(statuses.filter((s) => s === 101).length, EXPECTED_DEFAULT, `statuses: ${[...new Set(statuses)]}`);

  // The next clients, a burst of them, are each answered 503 (none is left
  // waiting in the backlog), and the held connections are unharmed.
  const refused = await upgradeMany(info.port, 20, sockets);
  for (const answer of refused) {
    assert.equal(answer.status, 503);
    assert.match(answer.body, /^ERR_SERVER_AT_CAPACITY/);
  }
  const echo = await new Promise((resolve) => {
    const { socket } = held[0];
    socket.removeAllListeners('data');
    socket.once('data', (d) => resolve(Buffer.from(d, 'latin1')));
    // A masked text frame "hi".
    socket.write(Buffer.from([0x81, 0x82, 1, 2, 3, 4, 'h'.charCodeAt(0) ^ 1, 'i'.charCodeAt(0) ^ 2]));
  });
  assert.deepEqual([...echo], [0x81, 2, 'h'.charCodeAt(0), 'i'.charCodeAt(0)]);

  // One leaves: its slot is free for the next client.
  held[1].socket.destroy();
  let again;
  for (let i = 0; i < 50; i++) {
    again = await upgrade(info.port, sockets);
    if (again.status === 101) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(again.status, 101, 'a freed slot admits a client');
});

test('maxConnections given explicitly overrides the default derived from the limit', { timeout: 60_000 }, async (t) => {
  const info = await startChild(t, { MAX_CONNECTIONS: '10' });
  assert.equal(info.soft, LIMIT);
  const sockets = [];
  t.after(() => sockets.forEach((s) => s.destroy()));
  const answers = await upgradeMany(info.port, 12, sockets, 1);
  assert.deepEqual(
    answers.map((a) => a.status),
    [...Array(10).fill(101), 503, 503],
  );
});
