// res.file / res.download / res.attachment / res.stream / res.cork over real
// sockets: a file sent by the core with the handler's status and headers,
// 304, 206, 416, precompressed siblings, HEAD, a large file intact, a file
// deleted before the call (404, or the handler's own answer), paths that try
// to leave the root, pipelined requests mixing files and JSON (order kept),
// a client leaving mid-file, download names beyond ASCII, a stream read by a
// slow client (bounded memory), a stream that fails, cork, and inject().
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { FilePayload } from 'switchboard';
import { HttpConnection, startHttp } from './support.mjs';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

const base = mkdtempSync(path.join(tmpdir(), 'switchboard-file-'));
const root = path.join(base, 'files');
mkdirSync(path.join(root, 'sub'), { recursive: true });
const TEXT = 'hello from a file\n';
const SCRIPT = 'export const x = "compress me";\n'.repeat(100);
const DIGITS = '0123456789abcdefghij';
const SIX_MIB = randomBytes(6 * 1024 * 1024);
writeFileSync(path.join(root, 'a.txt'), TEXT);
writeFileSync(path.join(root, 'digits.txt'), DIGITS);
writeFileSync(path.join(root, 'app.js'), SCRIPT);
writeFileSync(path.join(root, 'app.js.br'), brotliCompressSync(SCRIPT));
writeFileSync(path.join(root, 'app.js.gz'), gzipSync(SCRIPT));
writeFileSync(path.join(root, 'report.pdf'), '%PDF-1.4 not really');
writeFileSync(path.join(root, 'six.bin'), SIX_MIB);
writeFileSync(path.join(root, '.env'), 'SECRET=1');
writeFileSync(path.join(root, 'sub', 'page.html'), '<p>sub</p>');
writeFileSync(path.join(base, 'secret.txt'), 'SECRET outside the root');
symlinkSync(path.join(base, 'secret.txt'), path.join(root, 'link-out.txt'));
test.after(() => rmSync(base, { recursive: true, force: true }));

const seen = { payloads: [], finished: [] };

/** The routes every test uses. */
function routes(app) {
  app.addHook('onSend', (req, res, payload) => {
    if (req.path.startsWith('/hooked/')) {
      seen.payloads.push(payload);
      res.header('X-Hooked', 'yes');
    }
  });
  app.addHook('onResponse', (req, res) => {
    if (req.path.startsWith('/hooked/')) seen.finished.push(res.statusCode);
  });
  app.get('/files/*', (req, res) => res.file(req.params['*'], { root }));
  app.get('/hooked/*', (req, res) => res.file(req.params['*'], { root }));
  app.get('/with-headers', (req, res) => {
    res.status(200).header('Cache-Control', 'private, max-age=60').cookie('seen', '1').header('Content-Disposition', 'inline');
    return res.file(path.join(root, 'a.txt'));
  });
  app.get('/teapot', (req, res) => res.status(418).file('digits.txt', { root }));
  app.get('/no-validators', (req, res) => res.file('a.txt', { root, etag: false, lastModified: false, maxAge: 3600, immutable: true }));
  app.get('/raw-name/:name', (req, res) => res.file(req.params.name, { root }));
  app.get('/absolute', (req, res) => res.file(req.query.p));
  app.get('/gone', (req, res) => res.file('deleted.txt', { root }));
  app.get('/gone-custom', (req, res) =>
    res.file('deleted.txt', { root }, (error) => {
      res.status(404).html(`<h1>custom ${error.code}</h1>`);
    }),
  );
  app.get('/json/:n', async (req, res) => {
    // The later request's handler finishes first: order is still kept.
    await sleep(req.params.n === '1' ? 30 : 0);
    res.json({ n: Number(req.params.n) });
  });
  app.get('/download', (req, res) => res.download('report.pdf', 'résumé 2024.pdf', { root }));
  app.get('/download-missing', (req, res) => res.download('nope.pdf', { root }));
  app.get('/attachment', (req, res) => res.attachment('data.csv').send('a,b\n'));
  app.get('/cork', async (req, res) => {
    await sleep(1);
    res.cork(() => {
      res.write('a');
      res.write('b');
      res.write('c');
    });
    res.end();
  });
  app.get('/no-cork', async (req, res) => {
    await sleep(1);
    res.write('a');
    res.write('b');
    res.write('c');
    res.end();
  });
}

let ctx;
test.before(async () => {
  ctx = await startHttp(routes);
});
test.after(() => ctx.server.close());

async function get(url, headers = {}) {
  const response = await fetch(`${ctx.base}${url}`, { headers });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

test('a file with the headers and status the handler set', async () => {
  const r = await get('/with-headers');
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), TEXT);
  assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(r.headers.get('content-length'), String(TEXT.length));
  assert.equal(r.headers.get('cache-control'), 'private, max-age=60', "the handler's, not ours");
  assert.equal(r.headers.get('content-disposition'), 'inline');
  assert.equal(r.headers.get('set-cookie'), 'seen=1');
  assert.match(r.headers.get('etag'), /^"[0-9a-f]+-[0-9a-f]+"$/);
  assert.ok(r.headers.get('last-modified'));

  const teapot = await get('/teapot', { Range: 'bytes=0-1', 'If-None-Match': '*' });
  assert.equal(teapot.status, 418, 'another status sends the whole file, unconditionally');
  assert.equal(teapot.body.toString(), DIGITS);

  const bare = await get('/no-validators');
  assert.equal(bare.headers.get('etag'), null);
  assert.equal(bare.headers.get('last-modified'), null);
  assert.equal(bare.headers.get('cache-control'), 'public, max-age=3600, immutable');
});

test('the onSend hooks see a FilePayload and may set headers; onResponse sees the status sent', async () => {
  seen.payloads.length = seen.finished.length = 0;
  const r = await get('/hooked/a.txt');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-hooked'), 'yes');
  assert.equal(seen.payloads.length, 1);
  assert.ok(seen.payloads[0] instanceof FilePayload);
  assert.equal(seen.payloads[0].path, 'a.txt');
  const etag = r.headers.get('etag');
  await get('/hooked/a.txt', { 'If-None-Match': etag });
  await sleep(20);
  assert.deepEqual(seen.finished, [200, 304]);
});

test('304 by ETag and by date, with the validators and without a body', async () => {
  const first = await get('/with-headers');
  const etag = first.headers.get('etag');
  const byTag = await get('/with-headers', { 'If-None-Match': `"other", ${etag}` });
  assert.equal(byTag.status, 304);
  assert.equal(byTag.body.length, 0);
  assert.equal(byTag.headers.get('etag'), etag);
  assert.equal(byTag.headers.get('set-cookie'), 'seen=1', 'cookies go with a 304');
  assert.equal(byTag.headers.get('content-disposition'), null, 'what describes a body does not');
  const byDate = await get('/files/a.txt', { 'If-Modified-Since': first.headers.get('last-modified') });
  assert.equal(byDate.status, 304);
  const changed = await get('/files/a.txt', { 'If-None-Match': '"nope"' });
  assert.equal(changed.status, 200);
  assert.equal(changed.body.toString(), TEXT);
});

test('206 ranges, If-Range, and 416', async () => {
  const part = await get('/files/digits.txt', { Range: 'bytes=2-5' });
  assert.equal(part.status, 206);
  assert.equal(part.body.toString(), '2345');
  assert.equal(part.headers.get('content-range'), `bytes 2-5/${DIGITS.length}`);
  const suffix = await get('/files/digits.txt', { Range: 'bytes=-3' });
  assert.equal(suffix.body.toString(), 'hij');
  const stale = await get('/files/digits.txt', { Range: 'bytes=2-5', 'If-Range': '"an-old-version"' });
  assert.equal(stale.status, 200);
  assert.equal(stale.body.toString(), DIGITS);
  const past = await get('/files/digits.txt', { Range: 'bytes=100-' });
  assert.equal(past.status, 416);
  assert.equal(past.headers.get('content-range'), `bytes */${DIGITS.length}`);
  assert.match(past.body.toString(), /ERR_HTTP_RANGE_NOT_SATISFIABLE/);
  const big = await get('/files/six.bin', { Range: `bytes=${SIX_MIB.length - 100000}-` });
  assert.equal(big.status, 206);
  assert.equal(sha256(big.body), sha256(SIX_MIB.subarray(SIX_MIB.length - 100000)));
});

test('precompressed siblings by Accept-Encoding, with Vary', async () => {
  const raw = async (encoding) => {
    const connection = await HttpConnection.open(ctx.port);
    connection.write(`GET /files/app.js HTTP/1.1\r\nHost: x\r\n${encoding ? `Accept-Encoding: ${encoding}\r\n` : ''}\r\n`);
    const response = await connection.response();
    connection.destroy();
    return response;
  };
  const br = await raw('gzip, br');
  assert.equal(br.headers['content-encoding'], 'br');
  assert.equal(br.headers['vary'], 'Accept-Encoding');
  assert.equal(br.headers['content-type'], 'text/javascript; charset=utf-8');
  assert.deepEqual(br.body, brotliCompressSync(SCRIPT));
  const gz = await raw('gzip');
  assert.equal(gz.headers['content-encoding'], 'gzip');
  assert.deepEqual(gz.body, gzipSync(SCRIPT));
  const plain = await raw(null);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.body.toString(), SCRIPT);
  assert.equal(plain.headers['vary'], 'Accept-Encoding');
});

test('HEAD: the head of the file, its length, no body', async () => {
  const connection = await HttpConnection.open(ctx.port);
  connection.write('HEAD /files/six.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /files/a.txt HTTP/1.1\r\nHost: x\r\n\r\n');
  const head = await connection.response({ headOnly: true });
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], String(SIX_MIB.length));
  assert.equal(head.headers['content-type'], 'application/octet-stream');
  const next = await connection.response();
  assert.equal(next.body.toString(), TEXT, 'nothing of the file came between');
  connection.destroy();
});

test('a large file arrives intact', async () => {
  const r = await get('/files/six.bin');
  assert.equal(r.status, 200);
  assert.equal(r.body.length, SIX_MIB.length);
  assert.equal(sha256(r.body), sha256(SIX_MIB));
});

test('a file deleted before the call: 404 through the error handlers, or the handler answers', async () => {
  const doomed = path.join(root, 'deleted.txt');
  writeFileSync(doomed, 'soon gone');
  unlinkSync(doomed);
  const r = await get('/gone');
  assert.equal(r.status, 404);
  assert.equal(JSON.parse(r.body.toString()).error.code, 'ERR_HTTP_NOT_FOUND');
  assert.doesNotMatch(r.body.toString(), /deleted\.txt|files/, 'the path is not told to the client');
  const custom = await get('/gone-custom');
  assert.equal(custom.status, 404);
  assert.equal(custom.body.toString(), '<h1>custom ERR_HTTP_NOT_FOUND</h1>');
  assert.equal(custom.headers.get('content-type'), 'text/html; charset=utf-8');
});

test('paths that try to leave the root are not found', async () => {
  for (const attempt of ['/raw-name/..%2fsecret.txt', '/raw-name/%2e%2e%2fsecret.txt', '/files/%2e%2e/secret.txt', '/files/sub/..%2f..%2fsecret.txt', '/files/link-out.txt', '/files/.env', '/raw-name/%2Fetc%2Fpasswd']) {
    const r = await get(attempt);
    assert.equal(r.status, 404, attempt);
    assert.doesNotMatch(r.body.toString(), /SECRET|root:/, attempt);
  }
  const nul = await get('/raw-name/a.txt%00.png');
  assert.equal(nul.status, 400);
  assert.equal(JSON.parse(nul.body.toString()).error.code, 'ERR_HTTP_BAD_REQUEST');
  const inside = await get('/files/sub/page.html');
  assert.equal(inside.status, 200, 'a path inside the root is served');
  assert.equal(inside.headers.get('content-type'), 'text/html; charset=utf-8');
  const dotdot = await get(`/absolute?p=${encodeURIComponent(`${root}/sub/../a.txt`)}`);
  assert.equal(dotdot.status, 404, '.. in an absolute path');
  const absolute = await get(`/absolute?p=${encodeURIComponent(`${root}/a.txt`)}`);
  assert.equal(absolute.body.toString(), TEXT);
});

test('pipelined requests mixing files and JSON are answered in order', async () => {
  const connection = await HttpConnection.open(ctx.port);
  const requests = [
    '/json/1',
    '/files/a.txt',
    '/json/2',
    '/files/six.bin',
    '/json/3',
    '/gone',
    '/files/digits.txt',
    '/nowhere-at-all',
    '/json/4',
  ];
  connection.write(requests.map((url) => `GET ${url} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
  const got = [];
  for (let i = 0; i < requests.length; i++) got.push(await connection.response({ timeoutMs: 10000 }));
  connection.destroy();
  assert.deepEqual(
    got.map((r) => r.status),
    [200, 200, 200, 200, 200, 404, 200, 404, 200],
  );
  assert.deepEqual(JSON.parse(got[0].body), { n: 1 });
  assert.equal(got[1].body.toString(), TEXT);
  assert.deepEqual(JSON.parse(got[2].body), { n: 2 });
  assert.equal(sha256(got[3].body), sha256(SIX_MIB));
  assert.deepEqual(JSON.parse(got[4].body), { n: 3 });
  assert.equal(JSON.parse(got[5].body).error.code, 'ERR_HTTP_NOT_FOUND');
  assert.equal(got[6].body.toString(), DIGITS);
  assert.match(got[7].body.toString(), /ERR_HTTP_NOT_FOUND/, "the core's own 404 in its turn");
  assert.deepEqual(JSON.parse(got[8].body), { n: 4 });
});

test('a client that leaves mid-file: the server goes on serving', async () => {
  const connection = await HttpConnection.open(ctx.port);
  connection.write('GET /files/six.bin HTTP/1.1\r\nHost: x\r\n\r\n');
  await connection.more(3000);
  assert.ok(connection.buffer.length > 0);
  connection.destroy();
  const others = await Promise.all([get('/files/a.txt'), get('/json/5'), get('/files/six.bin')]);
  assert.equal(others[0].body.toString(), TEXT);
  assert.deepEqual(JSON.parse(others[1].body), { n: 5 });
  assert.equal(sha256(others[2].body), sha256(SIX_MIB));
  assert.deepEqual(ctx.errors, []);
});

test('download() names the file for saving, in UTF-8 beyond ASCII; attachment() sets the type', async () => {
  const r = await get('/download');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-disposition'), `attachment; filename="r?sum? 2024.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%202024.pdf`);
  assert.equal(r.headers.get('content-type'), 'application/pdf');
  assert.equal(r.body.toString(), '%PDF-1.4 not really');
  const missing = await get('/download-missing');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.get('content-type'), 'application/json; charset=utf-8', 'the error is not a download');
  assert.equal(missing.headers.get('content-disposition'), null);
  const a = await get('/attachment');
  assert.equal(a.headers.get('content-disposition'), 'attachment; filename="data.csv"');
  assert.equal(a.headers.get('content-type'), 'text/csv; charset=utf-8');
});

test('cork(): the writes inside leave as one chunk', async () => {
  const read = async (url) => {
    const connection = await HttpConnection.open(ctx.port);
    connection.write(`GET ${url} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const response = await connection.response();
    connection.destroy();
    return response;
  };
  const corked = await read('/cork');
  assert.equal(corked.body.toString(), 'abc');
  assert.ok(corked.raw.endsWith('\r\n\r\n3\r\nabc\r\n0\r\n\r\n'), JSON.stringify(corked.raw));
  const plain = await read('/no-cork');
  assert.equal(plain.body.toString(), 'abc');
  assert.ok(plain.raw.endsWith('\r\n\r\n1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n'), JSON.stringify(plain.raw));
});

test('stream(): a slow client holds the source back (bounded memory), and gets every byte', async () => {
  const TOTAL = 32 * 1024 * 1024;
  const PIECE = 64 * 1024;
  let produced = 0;
  let destroyed = false;
  const expected = createHash('sha256');
  for (let i = 0; i < TOTAL / PIECE; i++) expected.update(Buffer.alloc(PIECE, i));
  const { server, port, errors } = await startHttp(
    (app) => {
      app.get('/big', (req, res) => {
        const source = new Readable({
          highWaterMark: PIECE,
          read() {
            if (produced >= TOTAL) return this.push(null);
            const piece = Buffer.alloc(PIECE, produced / PIECE);
            produced += PIECE;
            this.push(piece);
          },
          destroy(error, done) {
            destroyed = true;
            done(error);
          },
        });
        return res.stream(source);
      });
    },
    { http: { maxBackpressure: 1024 * 1024 } },
  );
  try {
    // A raw socket, its pieces kept as they come (no copy per read).
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.pause();
    socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(800);
    const whileStalled = produced;
    assert.ok(whileStalled < 16 * 1024 * 1024, `produced ${whileStalled} bytes for a client that read nothing`);
    const pieces = [];
    let tail = Buffer.alloc(0);
    await new Promise((resolve, reject) => {
      socket.on('data', (piece) => {
        pieces.push(piece);
        tail = Buffer.concat([tail, piece]).subarray(-5);
        if (tail.toString('latin1') === '0\r\n\r\n') resolve();
      });
      socket.on('close', () => reject(new Error('closed before the end of the body')));
      socket.resume();
    });
    socket.destroy();
    const wire = Buffer.concat(pieces);
    const headEnd = wire.indexOf('\r\n\r\n');
    assert.match(wire.subarray(0, headEnd).toString('latin1'), /^HTTP\/1\.1 200 OK\r\n[\s\S]*Transfer-Encoding: chunked/);
    // Undo the chunked framing.
    const hash = createHash('sha256');
    let length = 0;
    for (let at = headEnd + 4; ; ) {
      const lineEnd = wire.indexOf('\r\n', at);
      const size = parseInt(wire.toString('latin1', at, lineEnd), 16);
      if (size === 0) break;
      hash.update(wire.subarray(lineEnd + 2, lineEnd + 2 + size));
      length += size;
      at = lineEnd + 2 + size + 2;
    }
    assert.equal(length, TOTAL);
    assert.equal(hash.digest('hex'), expected.digest('hex'));
    assert.equal(destroyed, true, 'an ended stream is destroyed (its autoDestroy)');
    assert.deepEqual(errors, []);
  } finally {
    await server.close();
  }
});

test('stream(): a client that leaves destroys the source', async () => {
  let destroyed;
  const gone = new Promise((resolve) => (destroyed = resolve));
  const { server, port } = await startHttp((app) => {
    app.get('/endless', (req, res) => {
      let n = 0;
      const source = new Readable({
        read() {
          setTimeout(() => this.push(`tick ${n++}\n`), 5);
        },
        destroy(error, done) {
          destroyed(true);
          done(error);
        },
      });
      return res.stream(source);
    });
  });
  try {
    const connection = await HttpConnection.open(port);
    connection.write('GET /endless HTTP/1.1\r\nHost: x\r\n\r\n');
    await connection.more(3000);
    connection.destroy();
    assert.equal(await Promise.race([gone, sleep(3000).then(() => false)]), true);
  } finally {
    await server.close();
  }
});

test('stream(): a failing source cuts the connection after its first bytes, or reaches the error handlers before', async () => {
  const { server, port, errors } = await startHttp((app) => {
    app.get('/fails-later', (req, res) => {
      async function* pieces() {
        yield 'first piece\n';
        await sleep(20);
        throw new Error('disk on fire');
      }
      return res.stream(pieces());
    });
    app.get('/fails-first', (req, res) =>
      res.stream(
        new Readable({
          read() {
            this.destroy(new Error('cannot open'));
          },
        }),
      ),
    );
  });
  try {
    const connection = await HttpConnection.open(port);
    connection.write('GET /fails-later HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(await connection.closedByServer(3000), true, 'the connection is cut');
    const raw = connection.buffer.toString('latin1');
    assert.match(raw, /first piece/);
    assert.ok(!raw.endsWith('0\r\n\r\n'), 'the chunked body never ended');
    connection.destroy();
    assert.ok(errors.some((e) => e.message === 'disk on fire'), 'reported through handlerError');
    const early = await fetch(`http://127.0.0.1:${port}/fails-first`);
    assert.equal(early.status, 500);
    assert.equal((await early.json()).error.code, 'ERR_HTTP_INTERNAL');
  } finally {
    await server.close();
  }
});

test('inject(): file, download and stream', async () => {
  const { app } = ctx.server;
  const file = await app.inject('/files/a.txt');
  assert.equal(file.statusCode, 200);
  assert.equal(file.text(), TEXT);
  assert.equal(file.headers['content-type'], 'text/plain; charset=utf-8');
  const again = await app.inject({ url: '/files/a.txt', headers: { 'If-None-Match': file.headers.etag } });
  assert.equal(again.statusCode, 304);
  const missing = await app.inject('/gone');
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().error.code, 'ERR_HTTP_NOT_FOUND');
  const escape = await app.inject('/raw-name/..%2fsecret.txt');
  assert.equal(escape.statusCode, 404);
  const download = await app.inject('/download');
  assert.match(download.headers['content-disposition'], /filename\*=UTF-8''r%C3%A9sum%C3%A9/);
  assert.equal(download.text(), '%PDF-1.4 not really');
  const corked = await app.inject('/cork');
  assert.equal(corked.text(), 'abc');
});

test('inject(): stream', async () => {
  const { server } = await startHttp((app) => {
    app.get('/s', (req, res) => res.stream(Readable.from(['a', 'b', Buffer.from('c')])));
  });
  try {
    const r = await server.app.inject('/s');
    assert.equal(r.statusCode, 200);
    assert.equal(r.text(), 'abc');
  } finally {
    await server.close();
  }
});
