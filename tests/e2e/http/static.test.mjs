// Static files served by the core (`app.static`) with real clients (fetch,
// curl, raw TCP): content types and validators, 304 by ETag and by date,
// ranges (206, suffix and open ranges, 416, If-Range), precompressed
// siblings with Vary, HEAD, the index and the 301 to it, traversal attempts
// (plain, encoded, NUL, a symbolic link out of the root), large files
// streamed intact, a slow reader of a 64 MiB file with little queued, and
// pipelined requests answered in order, behind a pending JavaScript one.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { HttpConnection, exchange, startHttp } from './support.mjs';

const run = promisify(execFile);
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

// The tree every test serves: <base>/site is the root; <base>/secret.txt
// and <base>/outside/ are beside it, where no request may reach.
const base = mkdtempSync(path.join(tmpdir(), 'switchboard-static-'));
const root = path.join(base, 'site');
const SCRIPT = 'export const greeting = "hello";\n'.repeat(200);
const FIVE_MIB = randomBytes(5 * 1024 * 1024);
const BIG_SIZE = 64 * 1024 * 1024;
const files = {
  'index.html': '<!doctype html><title>home</title>',
  'a.txt': 'hello, static world\n',
  'style.css': 'body { color: red }\n',
  'app.js': SCRIPT,
  'data.json': '{"a":1}',
  'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
  'img.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'module.wasm': Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]),
  'notes.unknownext': 'what is this',
  'digits.txt': '0123456789abcdefghij',
  'café.txt': 'accents',
  'sub/index.html': '<p>sub</p>',
  'plain/file.txt': 'in a directory without index.html',
  'only-gz.css': 'p { margin: 0 }\n'.repeat(50),
  'stale.txt': 'newer than its .gz\n'.repeat(50),
  '.env': 'SECRET=dotfile',
  '.well-known/security.txt': 'Contact: mailto:security@example.com',
  'five.bin': FIVE_MIB,
};
for (const [name, content] of Object.entries(files)) {
  mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
  writeFileSync(path.join(root, name), content);
}
writeFileSync(path.join(root, 'app.js.br'), brotliCompressSync(SCRIPT));
writeFileSync(path.join(root, 'app.js.gz'), gzipSync(SCRIPT));
writeFileSync(path.join(root, 'only-gz.css.gz'), gzipSync(files['only-gz.css']));
writeFileSync(path.join(root, 'stale.txt.gz'), gzipSync('an old build'));
const past = new Date(Date.now() - 3600_000);
utimesSync(path.join(root, 'stale.txt.gz'), past, past);
writeFileSync(path.join(base, 'secret.txt'), 'SECRET outside the root');
mkdirSync(path.join(base, 'outside'));
writeFileSync(path.join(base, 'outside', 'x.txt'), 'SECRET in a directory outside');
symlinkSync(path.join(base, 'secret.txt'), path.join(root, 'link-out.txt'));
symlinkSync(path.join(base, 'outside'), path.join(root, 'dir-out'));
symlinkSync(path.join(root, 'a.txt'), path.join(root, 'link-in.txt'));
// 64 MiB of a repeating pattern (random bytes would cost a second to make).
const BIG_PATTERN = randomBytes(1024 * 1024);
{
  const big = Buffer.alloc(BIG_SIZE);
  for (let at = 0; at < BIG_SIZE; at += BIG_PATTERN.length) BIG_PATTERN.copy(big, at);
  big.writeUInt32BE(0xdeadbeef, BIG_SIZE - 4);
  writeFileSync(path.join(root, 'big.bin'), big);
  files['big.bin'] = { sha: sha256(big) };
}
test.after(() => rmSync(base, { recursive: true, force: true }));

/** A server serving the tree at /static (and whatever `more` adds). */
async function serve(t, more = () => {}, options) {
  const started = await startHttp((app) => {
    app.static('/static', { root });
    more(app);
  }, options);
  t.after(() => started.server.close({ drainTimeout: 500 }));
  return started;
}

const get = (port, target, headers = {}, method = 'GET') => {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const request = `${method} ${target} HTTP/1.1\r\nHost: x\r\n${lines}\r\n`;
  return exchange(port, request, { closeWaitMs: 0, headOnly: method === 'HEAD' }).then((r) => r.response);
};

test('files come with their content type, length, validators and caching headers', async (t) => {
  const { base: url } = await serve(t, (app) => {
    app.static('/cached', { root, maxAge: 3600, immutable: true });
    app.static('/short', { root, maxAge: 60 });
  });
  const types = {
    'index.html': 'text/html; charset=utf-8',
    'a.txt': 'text/plain; charset=utf-8',
    'style.css': 'text/css; charset=utf-8',
    'app.js': 'text/javascript; charset=utf-8',
    'data.json': 'application/json; charset=utf-8',
    'logo.svg': 'image/svg+xml',
    'img.png': 'image/png',
    'module.wasm': 'application/wasm',
    'notes.unknownext': 'application/octet-stream',
  };
  for (const [name, type] of Object.entries(types)) {
    const response = await fetch(`${url}/static/${name}`, { headers: { 'accept-encoding': 'identity' } });
    assert.equal(response.status, 200, name);
    assert.equal(response.headers.get('content-type'), type, name);
    const body = Buffer.from(await response.arrayBuffer());
    assert.deepEqual(body, Buffer.from(files[name]), name);
    assert.equal(response.headers.get('content-length'), String(body.length), name);
    const stat = statSync(path.join(root, name));
    assert.match(response.headers.get('etag'), new RegExp(`^"${stat.size.toString(16)}-[0-9a-f]+"$`), name);
    assert.equal(response.headers.get('last-modified'), new Date(Math.floor(stat.mtimeMs / 1000) * 1000).toUTCString(), name);
    assert.equal(response.headers.get('accept-ranges'), 'bytes', name);
    assert.equal(response.headers.get('cache-control'), 'no-cache', name);
  }
  const accented = await fetch(`${url}/static/caf%C3%A9.txt`);
  assert.equal(await accented.text(), 'accents', 'a percent-encoded UTF-8 name');
  assert.equal((await fetch(`${url}/cached/a.txt`)).headers.get('cache-control'), 'public, max-age=3600, immutable');
  assert.equal((await fetch(`${url}/short/a.txt`)).headers.get('cache-control'), 'public, max-age=60');
});

test('If-None-Match and If-Modified-Since give 304, and the validators say when not', async (t) => {
  const { port } = await serve(t);
  const first = await get(port, '/static/a.txt');
  const { etag, 'last-modified': lastModified } = first.headers;
  for (const value of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const response = await get(port, '/static/a.txt', { 'If-None-Match': value });
    assert.equal(response.status, 304, value);
    assert.equal(response.body.length, 0);
    assert.equal(response.headers.etag, etag);
    assert.equal(response.headers['last-modified'], lastModified);
    assert.equal(response.headers['cache-control'], 'no-cache');
    assert.equal(response.headers['content-length'], undefined, 'a 304 has no body framing');
  }
  const changed = await get(port, '/static/a.txt', { 'If-None-Match': '"0-0"' });
  assert.equal(changed.status, 200, 'another version: the file');
  assert.equal(changed.body.toString(), files['a.txt']);

  assert.equal((await get(port, '/static/a.txt', { 'If-Modified-Since': lastModified })).status, 304);
  const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
  assert.equal((await get(port, '/static/a.txt', { 'If-Modified-Since': later })).status, 304);
  const earlier = new Date(Date.parse(lastModified) - 60_000).toUTCString();
  const modified = await get(port, '/static/a.txt', { 'If-Modified-Since': earlier });
  assert.equal(modified.status, 200, 'modified since');
  assert.equal(modified.body.toString(), files['a.txt']);
  const both = await get(port, '/static/a.txt', { 'If-None-Match': '"other"', 'If-Modified-Since': lastModified });
  assert.equal(both.status, 200, 'If-None-Match decides alone');
  assert.equal((await get(port, '/static/a.txt', { 'If-Modified-Since': 'not a date' })).status, 200);

  assert.equal((await get(port, '/static/a.txt', { 'If-Match': '"other"' })).status, 412);
  assert.equal((await get(port, '/static/a.txt', { 'If-Match': etag })).status, 200);

  // The same with fetch, as a browser revalidates.
  const url = `http://127.0.0.1:${port}/static/a.txt`;
  assert.equal((await fetch(url, { headers: { 'If-None-Match': etag } })).status, 304);
  assert.equal((await fetch(url, { headers: { 'If-Modified-Since': lastModified } })).status, 304);
});

test('a directory\'s headers come with every answer about a file: 200, 206 and 304', async (t) => {
  const csp = "default-src 'self'";
  const { port } = await serve(t, (app) => {
    app.static('/site', { root, headers: { 'Content-Security-Policy': csp, 'X-Content-Type-Options': 'nosniff' } });
  });
  const whole = await get(port, '/site/a.txt');
  assert.equal(whole.status, 200);
  assert.equal(whole.headers['content-security-policy'], csp);
  assert.equal(whole.headers['x-content-type-options'], 'nosniff');
  assert.equal(whole.body.toString(), files['a.txt']);
  const part = await get(port, '/site/digits.txt', { Range: 'bytes=0-3' });
  assert.equal(part.status, 206);
  assert.equal(part.headers['content-security-policy'], csp);
  const again = await get(port, '/site/a.txt', { 'If-None-Match': whole.headers.etag });
  assert.equal(again.status, 304);
  assert.equal(again.headers['content-security-policy'], csp);
  const other = await get(port, '/static/a.txt');
  assert.equal(other.headers['content-security-policy'], undefined, 'another directory has its own headers');
  const missing = await get(port, '/site/nothing.txt');
  assert.equal(missing.status, 404);
});

test('ranges: 206 for one range, open and suffix forms, 416 past the end, the whole file otherwise', async (t) => {
  const { port } = await serve(t);
  const digits = files['digits.txt'];
  const size = digits.length;
  for (const [range, start, end] of [
    ['bytes=0-9', 0, 9],
    ['bytes=5-', 5, size - 1],
    ['bytes=-4', size - 4, size - 1],
    ['bytes=15-1000', 15, size - 1],
    ['bytes=-1000', 0, size - 1],
  ]) {
    const response = await get(port, '/static/digits.txt', { Range: range });
    assert.equal(response.status, 206, range);
    assert.equal(response.headers['content-range'], `bytes ${start}-${end}/${size}`, range);
    assert.equal(response.headers['content-length'], String(end - start + 1), range);
    assert.equal(response.body.toString(), digits.slice(start, end + 1), range);
  }
  for (const range of [`bytes=${size}-`, 'bytes=1000-2000', 'bytes=-0']) {
    const response = await get(port, '/static/digits.txt', { Range: range });
    assert.equal(response.status, 416, range);
    assert.equal(response.headers['content-range'], `bytes */${size}`, range);
  }
  // Several ranges (RFC 9110 §14.2 lets a server ignore Range) and
  // malformed ones: the whole file.
  for (const range of ['bytes=0-1,4-5', 'bytes=5-2', 'bytes=x-y', 'lines=1-2']) {
    const response = await get(port, '/static/digits.txt', { Range: range });
    assert.equal(response.status, 200, range);
    assert.equal(response.body.toString(), digits, range);
  }
  const { etag, 'last-modified': lastModified } = (await get(port, '/static/digits.txt')).headers;
  const current = await get(port, '/static/digits.txt', { Range: 'bytes=0-1', 'If-Range': etag });
  assert.equal(current.status, 206, 'If-Range with the current ETag');
  const byDate = await get(port, '/static/digits.txt', { Range: 'bytes=0-1', 'If-Range': lastModified });
  assert.equal(byDate.status, 206, 'If-Range with the current date');
  for (const ifRange of ['"old"', `W/${etag}`, 'Sun, 06 Nov 1994 08:49:37 GMT']) {
    const stale = await get(port, '/static/digits.txt', { Range: 'bytes=0-1', 'If-Range': ifRange });
    assert.equal(stale.status, 200, `If-Range ${ifRange}: the whole file`);
    assert.equal(stale.body.toString(), digits);
  }
  const headRange = await get(port, '/static/digits.txt', { Range: 'bytes=0-1' }, 'HEAD');
  assert.equal(headRange.status, 200, 'a HEAD ignores Range');

  // curl's -r and a range through fetch.
  const { stdout } = await run('curl', ['-sS', '-r', '2-5', `http://127.0.0.1:${port}/static/digits.txt`]);
  assert.equal(stdout, '2345');
  const ranged = await fetch(`http://127.0.0.1:${port}/static/digits.txt`, { headers: { Range: 'bytes=-3' } });
  assert.equal(ranged.status, 206);
  assert.equal(await ranged.text(), 'hij');
});

test('precompressed siblings by Accept-Encoding, with Vary, their own ETag and ranges', async (t) => {
  const { port, base: url } = await serve(t, (app) => app.static('/raw', { root, precompressed: false }));
  const br = brotliCompressSync(SCRIPT);
  const brotli = await get(port, '/static/app.js', { 'Accept-Encoding': 'gzip, deflate, br' });
  assert.equal(brotli.headers['content-encoding'], 'br');
  assert.equal(brotli.headers.vary, 'Accept-Encoding');
  assert.equal(brotli.headers['content-type'], 'text/javascript; charset=utf-8', "the file's type, not the sibling's");
  assert.match(brotli.headers.etag, /-br"$/);
  assert.deepEqual(brotli.body, br, 'the .br bytes');
  const gzip = await get(port, '/static/app.js', { 'Accept-Encoding': 'br;q=0.5, gzip' });
  assert.equal(gzip.headers['content-encoding'], 'gzip');
  assert.match(gzip.headers.etag, /-gzip"$/);
  assert.deepEqual(gzip.body, gzipSync(SCRIPT));
  const identity = await get(port, '/static/app.js');
  assert.equal(identity.headers['content-encoding'], undefined, 'no Accept-Encoding: the file itself');
  assert.equal(identity.headers.vary, 'Accept-Encoding', 'still varies');
  assert.equal(identity.body.toString(), SCRIPT);
  const refused = await get(port, '/static/app.js', { 'Accept-Encoding': 'br;q=0, gzip;q=0' });
  assert.equal(refused.headers['content-encoding'], undefined);
  const part = await get(port, '/static/app.js', { 'Accept-Encoding': 'br', Range: 'bytes=0-9' });
  assert.equal(part.status, 206);
  assert.equal(part.headers['content-range'], `bytes 0-9/${br.length}`, "a range of the variant's bytes");
  assert.deepEqual(part.body, br.subarray(0, 10));
  const revalidated = await get(port, '/static/app.js', { 'Accept-Encoding': 'br', 'If-None-Match': brotli.headers.etag });
  assert.equal(revalidated.status, 304);
  assert.equal(revalidated.headers.vary, 'Accept-Encoding');

  const onlyGz = await get(port, '/static/only-gz.css', { 'Accept-Encoding': 'br' });
  assert.equal(onlyGz.headers['content-encoding'], undefined, 'only .gz exists, the client takes br only');
  assert.equal(onlyGz.headers.vary, 'Accept-Encoding');
  const stale = await get(port, '/static/stale.txt', { 'Accept-Encoding': 'gzip' });
  assert.equal(stale.headers['content-encoding'], undefined, 'a sibling older than the file is not served');
  assert.equal(stale.body.toString(), files['stale.txt']);
  const plain = await get(port, '/static/a.txt', { 'Accept-Encoding': 'gzip, br' });
  assert.equal(plain.headers.vary, undefined, 'no sibling, no Vary');
  const off = await get(port, '/raw/app.js', { 'Accept-Encoding': 'br' });
  assert.equal(off.headers['content-encoding'], undefined, 'precompressed: false');
  assert.equal(off.headers.vary, undefined);

  // Clients that decode: fetch (undici) and curl --compressed.
  const fetched = await fetch(`${url}/static/app.js`, { headers: { 'Accept-Encoding': 'br, gzip' } });
  assert.equal(fetched.headers.get('content-encoding'), 'br');
  assert.equal(await fetched.text(), SCRIPT);
  const { stdout } = await run('curl', ['-sS', '--compressed', `${url}/static/app.js`], { maxBuffer: 1 << 20 });
  assert.equal(stdout, SCRIPT);
});

test('HEAD sends the head alone, and the connection carries on', async (t) => {
  const { port, base: url } = await serve(t);
  const head = await fetch(`${url}/static/five.bin`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-length'), String(FIVE_MIB.length));
  assert.equal((await head.arrayBuffer()).byteLength, 0);
  // On one connection: HEAD of a large file, then GET of a small one. A
  // body after the HEAD would be read as the second response.
  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  connection.write('HEAD /static/five.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /static/a.txt HTTP/1.1\r\nHost: x\r\n\r\n');
  const first = await connection.response({ headOnly: true });
  assert.equal(first.status, 200);
  assert.equal(first.headers['content-length'], String(FIVE_MIB.length));
  const second = await connection.response();
  assert.equal(second.status, 200);
  assert.equal(second.body.toString(), files['a.txt']);
  const { stdout } = await run('curl', ['-sS', '-I', `${url}/static/a.txt`]);
  assert.match(stdout, /^HTTP\/1\.1 200 OK/);
  assert.match(stdout, new RegExp(`content-length: ${files['a.txt'].length}`, 'i'));
});

test('a directory serves its index; without its slash it redirects to it', async (t) => {
  const { port, base: url } = await serve(t, (app) => app.static('/noindex', { root, index: false }));
  for (const [target, location] of [
    ['/static', '/static/'],
    ['/static?v=2', '/static/?v=2'],
    ['/static/sub', '/static/sub/'],
  ]) {
    const response = await get(port, target);
    assert.equal(response.status, 301, target);
    assert.equal(response.headers.location, location, target);
  }
  const home = await fetch(`${url}/static`);
  assert.equal(home.url, `${url}/static/`, 'fetch followed the redirect');
  assert.equal(await home.text(), files['index.html']);
  assert.equal(await (await fetch(`${url}/static/sub/`)).text(), files['sub/index.html']);
  assert.equal((await get(port, '/static/plain/')).status, 404, 'a directory without index.html');
  assert.equal((await get(port, '/static/a.txt/')).status, 404, 'a file named as a directory');
  assert.equal((await get(port, '/noindex/')).status, 404, 'index: false');
  assert.equal((await get(port, '/noindex/sub/')).status, 404);
  assert.equal((await get(port, '/noindex/a.txt')).status, 200);
});

test('traversal, encoded dots and slashes, NUL, dotfiles and links out of the root never reach a file', async (t) => {
  const { port, base: url } = await serve(t, (app) => app.static('/dots', { root, dotfiles: 'allow' }));
  for (const target of [
    '/static/../secret.txt',
    '/static/../package.json',
    '/static/%2e%2e/secret.txt',
    '/static/%2E%2E/secret.txt',
    '/static/..%2fsecret.txt',
    '/static/..%2Fsecret.txt',
    '/static/%2e%2e%2fsecret.txt',
    '/static/sub/../../secret.txt',
    '/static/sub/%2e%2e/%2e%2e/secret.txt',
    '/static/.%2e/secret.txt',
    '/static/%2fetc%2fpasswd',
    '/static//etc/passwd',
    '/static/..%5csecret.txt',
    '/static/a.txt%00.png',
    '/static/%00',
    '/static/a%zz',
    '/static/link-out.txt',
    '/static/dir-out/x.txt',
    '/static/.env',
    '/static/%2eenv',
    '/dots/../secret.txt',
    '/dots/%2e%2e/secret.txt',
    '/dots/link-out.txt',
  ]) {
    const response = await get(port, target);
    assert.ok([400, 404].includes(response.status), `${target}: ${response.status}`);
    assert.doesNotMatch(response.body.toString(), /SECRET/, target);
  }
  assert.equal((await get(port, '/static/a.txt%00.png')).status, 400, 'an encoded NUL is a bad request');
  assert.equal((await get(port, '/static/a%zz')).status, 400, 'a malformed escape is a bad request');
  assert.equal((await get(port, '/static/link-in.txt')).body.toString(), files['a.txt'], 'a link inside the root is followed');
  assert.equal((await get(port, '/dots/.env')).body.toString(), files['.env'], "dotfiles: 'allow'");
  assert.equal((await get(port, '/static/.well-known/security.txt')).status, 404, "dotfiles: 'ignore' by default");
  assert.equal((await get(port, '/dots/.well-known/security.txt')).status, 200);
  // curl sends the dots as they are with --path-as-is.
  const { stdout } = await run('curl', ['-sS', '--path-as-is', '-o', '/dev/null', '-w', '%{http_code}', `${url}/static/../secret.txt`]);
  assert.equal(stdout, '404');
});

test('a 5 MiB file streams intact to fetch and curl', async (t) => {
  const { base: url } = await serve(t);
  const response = await fetch(`${url}/static/five.bin`);
  assert.equal(response.headers.get('content-length'), String(FIVE_MIB.length));
  assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(FIVE_MIB));
  const { stdout } = await run('sh', ['-c', `curl -sS ${url}/static/five.bin | sha256sum`]);
  assert.equal(stdout.split(' ')[0], sha256(FIVE_MIB));
  const tail = await fetch(`${url}/static/five.bin`, { headers: { Range: 'bytes=3000000-' } });
  assert.equal(tail.status, 206);
  assert.equal(sha256(Buffer.from(await tail.arrayBuffer())), sha256(FIVE_MIB.subarray(3_000_000)));
});

test('a 64 MiB file read slowly holds little in the server', async (t) => {
  const { server, port } = await serve(t);
  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  const socket = connection.socket;
  socket.removeAllListeners('data');
  const hash = createHash('sha256');
  let head = Buffer.alloc(0);
  let received = 0;
  let taken = 0;
  let mostQueued = 0;
  const done = new Promise((resolve) => {
    socket.on('data', (chunk) => {
      if (head !== null) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        assert.match(head.subarray(0, end).toString('latin1'), /^HTTP\/1\.1 200 OK/);
        chunk = head.subarray(end + 4);
        head = null;
      }
      hash.update(chunk);
      received += chunk.length;
      taken += chunk.length;
      mostQueued = Math.max(mostQueued, server.stats().outboundBufferedBytes);
      if (received >= BIG_SIZE) resolve();
      else if (taken >= 1024 * 1024) {
        // A 10 ms pause per MiB: the client, not the server, sets the pace.
        taken = 0;
        socket.pause();
        setTimeout(() => socket.resume(), 10);
      }
    });
    socket.on('close', resolve);
  });
  socket.write('GET /static/big.bin HTTP/1.1\r\nHost: x\r\n\r\n');
  await done;
  assert.equal(received, BIG_SIZE);
  assert.equal(hash.digest('hex'), files['big.bin'].sha, 'intact');
  assert.ok(mostQueued <= 512 * 1024, `at most a few pieces queued, not the file: ${mostQueued} bytes`);
});

test('pipelined static requests are answered in order, behind a pending JavaScript response', async (t) => {
  let release;
  const { port } = await serve(t, (app) => {
    app.get('/slow', async (req, res) => {
      await new Promise((resolve) => (release = resolve));
      res.send('slow done');
    });
  });
  const connection = await HttpConnection.open(port);
  t.after(() => connection.destroy());
  const requests = [
    'GET /slow',
    'GET /static/five.bin',
    'GET /static/a.txt',
    'GET /static/missing',
    'HEAD /static/style.css',
    'GET /static/digits.txt',
  ];
  connection.write(requests.map((r) => `${r} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
  assert.equal(await connection.response({ timeoutMs: 200 }), null, 'nothing passes the pending response');
  release();
  const slow = await connection.response();
  assert.equal(slow.body.toString(), 'slow done');
  const five = await connection.response({ timeoutMs: 10_000 });
  assert.equal(sha256(five.body), sha256(FIVE_MIB));
  assert.equal((await connection.response()).body.toString(), files['a.txt']);
  assert.equal((await connection.response()).status, 404);
  const head = await connection.response({ headOnly: true });
  assert.equal(head.headers['content-length'], String(files['style.css'].length));
  assert.equal((await connection.response()).body.toString(), files['digits.txt']);
});

test('fallthrough hands a missing file to the routes the directory hid', async (t) => {
  const { port } = await serve(t, (app) => {
    app.static('/assets', { root, fallthrough: true });
    app.all('/assets/*', (req, res) => res.status(404).send(`javascript: ${req.params['*']}`));
  });
  assert.equal((await get(port, '/assets/a.txt')).body.toString(), files['a.txt'], 'an existing file natively');
  const missing = await get(port, '/assets/nothing.txt');
  assert.equal(missing.body.toString(), 'javascript: nothing.txt');
  assert.equal((await get(port, '/static/nothing.txt')).body.toString(), 'ERR_HTTP_NOT_FOUND', 'without fallthrough: 404');
  const posted = await exchange(port, 'POST /assets/a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
  assert.equal(posted.response.body.toString(), 'javascript: a.txt', 'other methods reach the route');
});

test('a directory registered by the app module in worker threads', async (t) => {
  const { Server } = await import('switchboard');
  process.env.SWITCHBOARD_STATIC_TEST_ROOT = root;
  const server = new Server({ workers: 2, app: new URL('../../fixtures/static-files-app.mjs', import.meta.url) });
  await server.listen(0, '127.0.0.1');
  t.after(() => server.close({ drainTimeout: 500 }));
  const response = await fetch(`http://127.0.0.1:${server.port}/static/a.txt`);
  assert.equal(await response.text(), files['a.txt']);
  assert.equal(response.headers.get('cache-control'), 'public, max-age=5');
  assert.match(await (await fetch(`http://127.0.0.1:${server.port}/where`)).text(), /^worker \d$/);
});

test('options are checked when the directory is registered', async () => {
  const { Server } = await import('switchboard');
  const app = new Server({ workers: 0 }).app;
  const refused = (prefix, options, pattern) =>
    assert.throws(() => app.static(prefix, options), (error) => error.code === 'ERR_INVALID_OPTION' && pattern.test(error.message));
  refused('/x', { root: path.join(base, 'nope') }, /does not exist/);
  refused('/x', { root: path.join(root, 'a.txt') }, /not a directory/);
  refused('x', { root }, /must start with/);
  refused('/a/:id', { root }, /plain path segments/);
  refused('/a//b', { root }, /plain path segments/);
  refused('/x', { root, maxAge: -1 }, /maxAge/);
  refused('/x', { root, index: '../x' }, /index/);
  refused('/x', { root, dotfiles: 'deny' }, /dotfiles/);
  refused('/x', { root, immutable: 'yes' }, /immutable/);
  refused('/x', { root, maxage: 5 }, /unknown option/);
  refused('/x', null, /options/);
  refused('/x', { root, headers: { 'Bad Name': 'x' } }, /not an HTTP token/);
  refused('/x', { root, headers: { 'X-A': 'a\r\nInjected: yes' } }, /visible ASCII/);
  refused('/x', { root, headers: { ETag: '"mine"' } }, /sets ETag itself/);
  refused('/x', { root, headers: { 'Cache-Control': 'no-store' } }, /use maxAge/);
  refused('/x', { root, headers: { 'Content-Length': '5' } }, /sets Content-Length itself/);
  app.static('/ok/', { root });
  refused('/ok', { root }, /served there already/);
});
