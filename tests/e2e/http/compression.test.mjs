// Response compression end to end with real clients: fetch (which decodes
// gzip and brotli itself), curl --compressed, and raw sockets sending
// Accept-Encoding variants, against servers on port 0. What is compressed
// (whole text bodies from the threshold on), what never is (small bodies,
// images, HEAD, 204/206/304, a body the handler encoded itself, streamed
// bodies), and the Vary a cache needs.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { Server } from 'switchboard';
import { HttpConnection, exchange, startHttp } from './support.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

/** JSON of about `bytes` bytes, as an API returns it. */
function rows(bytes) {
  const out = [];
  for (let i = 0; JSON.stringify(out).length < bytes; i++) out.push({ id: i, name: `user ${i}`, email: `user${i}@example.com` });
  return out;
}
const BIG = rows(8 * 1024);
const BIG_JSON = JSON.stringify(BIG);
const TEXT_2K = 'the quick brown fox jumps over the lazy dog\n'.repeat(50);

/** The routes every test below uses. */
function routes(app) {
  app.get('/json', (req, res) => res.json(BIG));
  app.get('/text/:bytes', (req, res) => res.send('a'.repeat(Number(req.params.bytes))));
  app.get('/utf8/:chars', (req, res) => res.send('é'.repeat(Number(req.params.chars))));
  app.get('/html', (req, res) => res.html(`<!doctype html><p>${TEXT_2K}</p>`));
  app.get('/end', (req, res) => res.type('text/css').end(TEXT_2K));
  app.get('/type', (req, res) => res.type(req.query.t).send(Buffer.from(TEXT_2K)));
  app.get('/status/:code', (req, res) => res.status(Number(req.params.code)).send(TEXT_2K));
  app.get('/own-encoding', (req, res) => res.header('Content-Encoding', 'gzip').type('text').send(gzipSync(TEXT_2K)));
  app.get('/vary', (req, res) => res.header('Vary', req.query.v).send(TEXT_2K));
  app.get('/vary-lines', (req, res) => res.header('Vary', ['Origin', 'Cookie']).send(TEXT_2K));
  app.get('/no-transform', (req, res) => res.header('Cache-Control', 'public, no-transform').send(TEXT_2K));
  app.get('/stream', (req, res) => {
    res.type('text');
    res.write(TEXT_2K);
    res.end(TEXT_2K);
  });
  app.get('/noise', (req, res) => {
    // Bytes no coding shrinks, under a text type: they go as they are.
    const noise = Buffer.alloc(4096);
    let seed = 12345;
    for (let i = 0; i < noise.length; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      noise[i] = seed >>> 24;
    }
    res.type('text').send(noise);
  });
}

function request(target, acceptEncoding, { method = 'GET', version = '1.1' } = {}) {
  const accept = acceptEncoding === undefined ? '' : `Accept-Encoding: ${acceptEncoding}\r\n`;
  return `${method} ${target} HTTP/${version}\r\nHost: x\r\n${accept}Connection: close\r\n\r\n`;
}

/** One raw exchange: the response, its body decoded as its Content-Encoding says. */
async function get(port, target, acceptEncoding, options) {
  const { response } = await exchange(port, request(target, acceptEncoding, options), { headOnly: options?.method === 'HEAD' });
  assert.ok(response, `${target}: a response`);
  const coding = response.headers['content-encoding'];
  const decoded = coding === 'gzip' ? gunzipSync(response.body) : coding === 'br' ? brotliDecompressSync(response.body) : response.body;
  return { ...response, coding, decoded: decoded.toString() };
}

test('fetch gets gzip over http (what undici asks for) and brotli when it asks, and decodes both', async (t) => {
  const { server, base } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));

  const gzip = await fetch(`${base}/json`);
  assert.equal(gzip.headers.get('content-encoding'), 'gzip');
  assert.equal(gzip.headers.get('vary'), 'Accept-Encoding');
  assert.ok(Number(gzip.headers.get('content-length')) < BIG_JSON.length / 4, 'Content-Length is the encoded length');
  assert.deepEqual(await gzip.json(), BIG);

  const br = await fetch(`${base}/html`, { headers: { 'accept-encoding': 'br' } });
  assert.equal(br.headers.get('content-encoding'), 'br');
  assert.equal(await br.text(), `<!doctype html><p>${TEXT_2K}</p>`);

  // Keep-alive across compressed responses.
  for (let i = 0; i < 3; i++) assert.deepEqual(await (await fetch(`${base}/json`)).json(), BIG);
});

test('curl --compressed: brotli (its first choice), decoded by curl', async (t) => {
  const { server, base } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  const { stdout } = await run('curl', ['-sS', '--compressed', '-D', '-', `${base}/json`], { maxBuffer: 1 << 20 });
  const [head, body] = stdout.split('\r\n\r\n');
  assert.match(head, /^content-encoding: br$/im);
  assert.match(head, /^vary: Accept-Encoding$/im);
  assert.deepEqual(JSON.parse(body), BIG);
  // Without --compressed curl sends no Accept-Encoding: the body as it is.
  const plain = await run('curl', ['-sS', '-D', '-', `${base}/json`], { maxBuffer: 1 << 20 });
  assert.doesNotMatch(plain.stdout, /content-encoding/i);
  assert.match(plain.stdout, new RegExp(`content-length: ${BIG_JSON.length}`, 'i'));
});

test('Accept-Encoding variants: weights, exclusions, *, identity, none', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  for (const [accept, coding] of [
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br, zstd', 'br'],
    ['GZIP', 'gzip'],
    ['x-gzip', 'gzip'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['gzip;q=0.5, br;q=0.5', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0, br;q=0', undefined],
    ['*', 'br'],
    ['*, br;q=0', 'gzip'],
    ['*;q=0', undefined],
    ['identity;q=0', undefined],
    ['identity', undefined],
    ['deflate', undefined],
    ['', undefined],
    ['gzip;q=2, br;q=nope', undefined],
    ['gzip;q=2, br', 'br'],
    [undefined, undefined],
  ]) {
    const response = await get(port, '/json', accept);
    assert.equal(response.status, 200, String(accept));
    assert.equal(response.coding, coding, `Accept-Encoding: ${accept}`);
    assert.equal(response.decoded, BIG_JSON, String(accept));
    // The response may vary whatever this request asked.
    assert.equal(response.headers.vary, 'Accept-Encoding', String(accept));
    assert.equal(Number(response.headers['content-length']), response.body.length);
  }
  // Repeated lines form one list.
  const { response } = await exchange(port, 'GET /json HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br;q=0\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n');
  assert.equal(response.headers['content-encoding'], 'gzip');
  // HTTP/1.0 gets it too, with a Content-Length.
  const old = await get(port, '/json', 'gzip', { version: '1.0' });
  assert.equal(old.coding, 'gzip');
  assert.equal(old.decoded, BIG_JSON);
});

test('only bodies from the threshold on are compressed; strings are measured in bytes', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  for (const [target, compressed] of [
    ['/text/100', false],
    ['/text/1023', false],
    ['/text/1024', true],
    ['/text/50000', true],
    // é is 2 bytes in UTF-8: 400 characters are 800 bytes, 600 are 1200.
    ['/utf8/400', false],
    ['/utf8/511', false],
    ['/utf8/512', true],
    ['/utf8/600', true],
  ]) {
    const response = await get(port, target, 'gzip, br');
    assert.equal(response.coding, compressed ? 'br' : undefined, target);
    assert.equal(response.headers.vary, compressed ? 'Accept-Encoding' : undefined, `${target}: no Vary below the threshold`);
    const expected = target.startsWith('/utf8') ? 'é'.repeat(Number(target.slice(6))) : 'a'.repeat(Number(target.slice(6)));
    assert.equal(response.decoded, expected, target);
  }
});

test('what is compressed by type: text, JSON, JS, XML, +json, +xml, SVG; not images, fonts, octet streams', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  for (const [type, compressed] of [
    ['text/plain', true],
    ['text/csv; charset=utf-8', true],
    ['Text/HTML', true],
    ['application/json', true],
    ['application/problem+json', true],
    ['application/vnd.api+json; charset=utf-8', true],
    ['application/javascript', true],
    ['application/xml', true],
    ['application/atom+xml', true],
    ['image/svg+xml', true],
    ['image/png', false],
    ['image/jpeg', false],
    ['font/woff2', false],
    ['application/octet-stream', false],
    ['application/zip', false],
    ['video/mp4', false],
    ['application/jsonx', false],
  ]) {
    const response = await get(port, `/type?t=${encodeURIComponent(type)}`, 'gzip');
    assert.equal(response.coding, compressed ? 'gzip' : undefined, type);
    assert.equal(response.headers.vary, compressed ? 'Accept-Encoding' : undefined, type);
    assert.equal(response.decoded, TEXT_2K, type);
  }
  // send, json, html, end(body): every whole response.
  for (const target of ['/json', '/html', '/end', '/text/2000']) {
    assert.equal((await get(port, target, 'gzip')).coding, 'gzip', target);
  }
});

test('never compressed: HEAD, 204, 206, 304, a handler\'s own Content-Encoding, no-transform, streamed bodies, incompressible bytes', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));

  const head = await get(port, '/json', 'gzip, br', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.coding, undefined);
  assert.equal(head.headers['content-length'], String(BIG_JSON.length), 'HEAD announces the body as it is');
  assert.equal(head.headers.vary, 'Accept-Encoding', 'HEAD varies as GET does');
  assert.equal(head.body.length, 0);

  for (const status of [204, 304]) {
    const response = await get(port, `/status/${status}`, 'gzip');
    assert.equal(response.status, status);
    assert.equal(response.coding, undefined, String(status));
    assert.equal(response.headers['content-length'], undefined, String(status));
    assert.equal(response.body.length, 0);
  }
  const partial = await get(port, '/status/206', 'gzip');
  assert.equal(partial.status, 206);
  assert.equal(partial.coding, undefined);
  assert.equal(partial.decoded, TEXT_2K);
  // Errors are text like any other.
  assert.equal((await get(port, '/status/500', 'gzip')).coding, 'gzip');

  const own = await get(port, '/own-encoding', 'gzip, br');
  assert.equal(own.coding, 'gzip', "the handler's coding, once");
  assert.equal(own.decoded, TEXT_2K);
  assert.equal(own.headers.vary, undefined);

  const noTransform = await get(port, '/no-transform', 'gzip');
  assert.equal(noTransform.coding, undefined);
  assert.equal(noTransform.decoded, TEXT_2K);

  const stream = await get(port, '/stream', 'gzip');
  assert.equal(stream.headers['transfer-encoding'], 'chunked');
  assert.equal(stream.coding, undefined, 'streamed bodies go as they are');
  assert.equal(stream.decoded, TEXT_2K + TEXT_2K);

  const noise = await get(port, '/noise', 'gzip');
  assert.equal(noise.coding, undefined, 'a coding that would not shrink the body is skipped');
  assert.equal(noise.body.length, 4096);
  assert.equal(noise.headers.vary, 'Accept-Encoding');
});

test('Vary: merged with the handler\'s, never doubled, * left alone', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  for (const [vary, expected] of [
    ['Origin', 'Origin, Accept-Encoding'],
    ['origin, accept-encoding', 'origin, accept-encoding'],
    ['Accept-Encoding', 'Accept-Encoding'],
    ['*', '*'],
  ]) {
    const response = await get(port, `/vary?v=${encodeURIComponent(vary)}`, 'gzip');
    assert.equal(response.coding, 'gzip', vary);
    assert.equal(response.headers.vary, expected, vary);
  }
  const lines = await get(port, '/vary-lines', 'br');
  assert.deepEqual(
    lines.headerList.filter(([name]) => name === 'vary').map(([, value]) => value),
    ['Origin', 'Cookie', 'Accept-Encoding'],
  );
});

test('an onSend hook\'s payload is what gets compressed, with its headers', async (t) => {
  const { server, port } = await startHttp((app) => {
    app.addHook('onSend', (req, res, payload) => {
      res.header('X-Hooked', '1');
      return `${payload}`.repeat(300);
    });
    app.get('/small', (req, res) => res.send('tiny '));
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const response = await get(port, '/small', 'gzip');
  assert.equal(response.coding, 'gzip', 'the hook made it large enough');
  assert.equal(response.headers['x-hooked'], '1');
  assert.equal(response.decoded, 'tiny '.repeat(300));
});

test('pipelined requests with different Accept-Encoding each get their own coding', async (t) => {
  const { server, port } = await startHttp(routes);
  t.after(() => server.close({ drainTimeout: 500 }));
  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  const accepts = ['gzip', 'br', undefined, 'gzip;q=0', '*'];
  connection.write(accepts.map((a) => `GET /json HTTP/1.1\r\nHost: x\r\n${a === undefined ? '' : `Accept-Encoding: ${a}\r\n`}\r\n`).join(''));
  const codings = [];
  for (const _ of accepts) {
    const response = await connection.response();
    const coding = response.headers['content-encoding'];
    codings.push(coding);
    const decoded = coding === 'gzip' ? gunzipSync(response.body) : coding === 'br' ? brotliDecompressSync(response.body) : response.body;
    assert.equal(decoded.toString(), BIG_JSON);
  }
  assert.deepEqual(codings, ['gzip', 'br', undefined, undefined, 'br']);
});

test('options: off, a lower threshold, levels; invalid ones refused', async (t) => {
  const off = await startHttp(routes, { http: { compression: false } });
  t.after(() => off.server.close({ drainTimeout: 500 }));
  const plain = await get(off.port, '/json', 'gzip, br');
  assert.equal(plain.coding, undefined);
  assert.equal(plain.headers.vary, undefined, 'nothing varies when nothing is compressed');

  const eager = await startHttp(routes, { http: { compression: { threshold: 10, level: 9, brotliQuality: 11 } } });
  t.after(() => eager.server.close({ drainTimeout: 500 }));
  const small = await get(eager.port, '/text/100', 'gzip');
  assert.equal(small.coding, 'gzip');
  assert.equal(small.decoded, 'a'.repeat(100));
  assert.equal((await get(eager.port, '/text/100', 'br')).decoded, 'a'.repeat(100));
  assert.equal((await get(eager.port, '/text/9', 'br')).coding, undefined);

  for (const compression of [{ level: 10 }, { level: -1 }, { brotliQuality: 12 }, { threshold: -1 }, { threshold: 1.5 }, true, 'gzip']) {
    assert.throws(() => new Server({ workers: 0, http: { compression } }), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(compression));
  }
});

test('inject() answers as to a client without Accept-Encoding: never encoded, the same Vary', async () => {
  const server = new Server({ workers: 0 });
  routes(server.app);
  const response = await server.inject({ url: '/json', headers: { 'accept-encoding': 'gzip' } });
  assert.equal(response.headers['content-encoding'], undefined);
  assert.equal(response.headers.vary, 'Accept-Encoding');
  assert.deepEqual(response.json(), BIG);
  const small = await server.inject('/text/10');
  assert.equal(small.headers.vary, undefined);
});

test('worker threads compress with the server\'s options', async (t) => {
  // The app module must resolve `switchboard` as the tests do: keep it beside them.
  const dir = mkdtempSync(path.join(here, '.tmp-compression-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'compression-app.mjs');
  writeFileSync(file, "export default (app) => { app.get('/t', (req, res) => res.send('x'.repeat(200))); };\n");
  const server = new Server({ workers: 2, app: pathToFileURL(file), http: { compression: { threshold: 100 } } });
  await server.listen(0, '127.0.0.1');
  t.after(() => server.close({ drainTimeout: 500 }));
  for (let i = 0; i < 4; i++) {
    const response = await get(server.port, '/t', 'gzip');
    assert.equal(response.coding, 'gzip');
    assert.equal(response.decoded, 'x'.repeat(200));
  }
});
