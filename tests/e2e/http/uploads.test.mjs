// Request bodies at the handler's pace: a 1 GiB upload arrives whole
// (SHA-256 on both ends) while the server's memory stays flat, a handler
// that reads slowly holds the client back instead of buffering, and a body
// a handler does not read is discarded so the connection serves the next
// request.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { once } from 'node:events';
import { Server } from 'switchboard';
import { HttpConnection, startHttp } from './support.mjs';

const MiB = 1024 * 1024;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const start = startHttp;

/** Send `total` bytes of a deterministic pattern as the body of a POST, chunk by chunk, respecting the socket's backpressure. */
async function upload(port, path, total, { chunked = false } = {}) {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const hash = createHash('sha256');
  const response = [];
  socket.on('data', (c) => response.push(c));
  const closed = once(socket, 'close');
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
      (chunked ? 'Transfer-Encoding: chunked\r\n\r\n' : `Content-Length: ${total}\r\n\r\n`),
  );
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31 + 7) & 0xff;
  let sent = 0;
  while (sent < total) {
    const piece = block.subarray(0, Math.min(block.length, total - sent));
    block[0] = (block[0] + 1) & 0xff; // no two MiB alike
    hash.update(piece);
    const framed = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
    sent += piece.length;
    if (!socket.write(framed)) await once(socket, 'drain');
  }
  if (chunked) socket.write('0\r\n\r\n');
  await closed;
  const text = Buffer.concat(response).toString('latin1');
  return { digest: hash.digest('hex'), status: Number(text.slice(9, 12)), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}

test('a 1 GiB upload arrives whole while the server memory stays flat', async (t) => {
  const { server, port } = await start((app) => {
    app.post('/sha256', { bodyLimit: 2 * 1024 * MiB }, async (req, res) => {
      const hash = createHash('sha256');
      let size = 0;
      for await (const piece of req) {
        hash.update(piece);
        size += piece.length;
      }
      res.json({ size, digest: hash.digest('hex') });
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    const result = await upload(port, '/sha256', 1024 * MiB);
    assert.equal(result.status, 200);
    const answer = JSON.parse(result.body);
    assert.equal(answer.size, 1024 * MiB);
    assert.equal(answer.digest, result.digest, 'the bytes arrived intact');
  } finally {
    clearInterval(sampler);
  }
  const growth = (peak - before) / MiB;
  t.diagnostic(`RSS growth during the upload: ${growth.toFixed(1)} MiB`);
  assert.ok(growth < 96, `memory stays bounded (grew ${growth.toFixed(1)} MiB for 1 GiB)`);

  // Chunked too.
  const chunked = await upload(port, '/sha256', 64 * MiB, { chunked: true });
  assert.equal(JSON.parse(chunked.body).digest, chunked.digest);
});

test('a handler that reads slowly holds the client back instead of buffering the body', async (t) => {
  let received = 0;
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const { server, port } = await start(
    (app) => {
      app.post('/slow', { bodyLimit: 256 * MiB }, async (req, res) => {
        // Read nothing until released, then everything.
        await gate;
        for await (const piece of req) received += piece.length;
        res.send(String(received));
      });
    },
    { http: { bodyWindow: 256 * 1024 } },
  );
  t.after(() => server.close({ drainTimeout: 500 }));

  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const total = 128 * MiB;
  socket.write(`POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\n\r\n`);
  const block = Buffer.alloc(MiB, 1);
  let sent = 0;
  let stalled = false;
  // Write until the socket pushes back for a while: the server stopped reading.
  while (sent < total) {
    const accepted = socket.write(block);
    sent += block.length;
    if (!accepted) {
      const drained = await Promise.race([once(socket, 'drain').then(() => true), sleep(500).then(() => false)]);
      if (!drained) {
        stalled = true;
        break;
      }
    }
  }
  assert.ok(stalled, 'the client was held back while the handler read nothing');
  assert.ok(sent < 64 * MiB, `only socket buffers and the window were taken (${(sent / MiB).toFixed(0)} MiB sent)`);
  release();
  while (sent < total) {
    const accepted = socket.write(block);
    sent += block.length;
    if (!accepted) await once(socket, 'drain');
  }
  const response = [];
  socket.on('data', (c) => response.push(c));
  const deadline = Date.now() + 20_000;
  while (!Buffer.concat(response).toString().includes(String(total)) && Date.now() < deadline) await sleep(20);
  socket.destroy();
  assert.match(Buffer.concat(response).toString(), new RegExp(`\\r\\n\\r\\n${total}$`));
});

test('a body its handler does not read is discarded, and the connection serves the next request', async (t) => {
  let reached = 0;
  const { server, port } = await start((app) => {
    app.post('/ignore', { bodyLimit: 64 * MiB }, (req, res) => {
      reached++;
      res.send('ignored');
    });
    app.get('/after', (req, res) => res.send('next one'));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  const total = 20 * MiB;
  connection.write(`POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\n\r\n`);
  const first = await connection.response();
  assert.equal(first.body.toString(), 'ignored', 'answered before the body was sent');
  const block = Buffer.alloc(MiB, 2);
  for (let i = 0; i < total / MiB; i++) {
    if (!connection.socket.write(block)) await once(connection.socket, 'drain');
  }
  connection.write('GET /after HTTP/1.1\r\nHost: x\r\n\r\n');
  const second = await connection.response({ timeoutMs: 10_000 });
  assert.equal(second?.body.toString(), 'next one', 'the discarded body did not break the framing');
  assert.equal(reached, 1);
});
