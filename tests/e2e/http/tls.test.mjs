// HTTP routes, uploads, static files and pipelining over TLS with SNI, on
// one listener with WebSocket: curl and undici's fetch pick the server
// name, the handlers see `https` and the host asked for, a 1 MiB upload
// and a 3 MiB static file cross intact, and pipelined requests on a raw
// TLS socket come back in order. Certificates are made with openssl.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { Agent, fetch as undiciFetch } from 'undici';
import { Server } from 'switchboard';
import { certificateFactory } from '../../helpers/certs.mjs';
import { WebSocket } from '../../helpers/index.mjs';

const run = promisify(execFile);
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

const { makeCa, issue } = certificateFactory();
const ca = makeCa('https-ca');
const localhost = issue(ca, 'localhost');
const other = issue(ca, 'other.test');
const caPath = path.join(path.dirname(localhost.certPath), 'https-ca.pem');

const root = mkdtempSync(path.join(tmpdir(), 'switchboard-https-'));
const BIG = randomBytes(3 * 1024 * 1024);
writeFileSync(path.join(root, 'big.bin'), BIG);
writeFileSync(path.join(root, 'page.html'), '<p>over tls</p>');
test.after(() => rmSync(root, { recursive: true, force: true }));

async function start(t) {
  const server = new Server({ workers: 0 });
  const { app } = server;
  app.get('/whoami', (req) => ({ protocol: req.protocol, hostname: req.hostname, secure: req.protocol === 'https' }));
  app.post('/sha', async (req, res) => res.send(sha256(await req.buffer())));
  app.get('/n/:n', (req, res) => res.send(`n=${req.params.n}`));
  app.static('/files', { root });
  app.ws('/echo', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
  const [address] = await server.listen([
    { host: '127.0.0.1', port: 0, tls: { cert: localhost.cert, key: localhost.key, sni: { 'other.test': { cert: other.cert, key: other.key } } } },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  return address.port;
}

test('curl picks the certificate by name; the handler sees https and the host', async (t) => {
  const port = await start(t);
  for (const name of ['localhost', 'other.test']) {
    const { stdout, stderr } = await run('curl', [
      '-sS', '-v', '--cacert', caPath, '--resolve', `${name}:${port}:127.0.0.1`, `https://${name}:${port}/whoami`,
    ]);
    assert.deepEqual(JSON.parse(stdout), { protocol: 'https', hostname: name, secure: true });
    assert.match(stderr, new RegExp(`subject: CN=${name.replace('.', '\\.')}`), `${name}: its own certificate`);
  }
});

test('fetch (undici) over TLS: an upload, a static file streamed and its range, a WebSocket beside', async (t) => {
  const port = await start(t);
  const dispatcher = new Agent({ connect: { ca: ca.cert, servername: 'other.test' } });
  t.after(() => dispatcher.close());
  const url = (p) => `https://127.0.0.1:${port}${p}`;
  const upload = randomBytes(1024 * 1024);
  const posted = await undiciFetch(url('/sha'), { method: 'POST', body: upload, dispatcher });
  assert.equal(await posted.text(), sha256(upload), 'a 1 MiB upload, intact');
  const file = await undiciFetch(url('/files/big.bin'), { dispatcher });
  assert.equal(file.status, 200);
  assert.equal(sha256(Buffer.from(await file.arrayBuffer())), sha256(BIG), 'a 3 MiB file, intact');
  const part = await undiciFetch(url('/files/big.bin'), { headers: { range: 'bytes=1000000-1000009' }, dispatcher });
  assert.equal(part.status, 206);
  assert.deepEqual(Buffer.from(await part.arrayBuffer()), BIG.subarray(1_000_000, 1_000_010));
  const page = await undiciFetch(url('/files/page.html'), { dispatcher });
  assert.equal(await page.text(), '<p>over tls</p>');

  const ws = new WebSocket(`wss://127.0.0.1:${port}/echo`, { ca: ca.cert, servername: 'localhost' });
  await once(ws, 'open');
  ws.send('same port');
  const [echo] = await once(ws, 'message');
  assert.equal(echo.toString(), 'same port');
  ws.close();
});

test('pipelined requests on one TLS connection come back in order', async (t) => {
  const port = await start(t);
  const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.cert, servername: 'localhost' });
  await once(socket, 'secureConnect');
  t.after(() => socket.destroy());
  let requests = '';
  for (let n = 0; n < 20; n++) requests += `GET /n/${n} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
  requests += 'GET /files/page.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n';
  socket.write(requests);
  const chunks = [];
  socket.on('data', (chunk) => chunks.push(chunk));
  await once(socket, 'end');
  const text = Buffer.concat(chunks).toString('latin1');
  const bodies = [...text.matchAll(/\r\n\r\n(n=\d+|<p>over tls<\/p>)/g)].map((m) => m[1]);
  assert.deepEqual(bodies, [...Array.from({ length: 20 }, (_, n) => `n=${n}`), '<p>over tls</p>']);
  assert.equal(text.split('HTTP/1.1 200 OK\r\n').length - 1, 21);
});
