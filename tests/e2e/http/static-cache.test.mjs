// The files a static directory keeps in memory (`app.static(prefix, { cache })`):
// a kept file is answered from memory until `revalidate` has passed, then
// checked against the disk (changed, deleted, a sibling added, a link
// retargeted) before it is used again; files past `maxFileBytes` or past
// the directory's `maxBytes` are served from the disk, intact; ranges,
// 304s and precompressed variants from memory are what the disk would
// give; `cache: false` reads the disk on every request.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { HttpConnection, startHttp } from './support.mjs';

const base = mkdtempSync(path.join(tmpdir(), 'switchboard-static-cache-'));
test.after(() => rmSync(base, { recursive: true, force: true }));
let dirs = 0;

/** A fresh directory with `files`, and a server serving it at /s with `cache`. */
async function serve(t, files, cache) {
  const root = path.join(base, `d${dirs++}`);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  return serveRoot(t, root, cache);
}

/** A server serving `root` at /s with `cache`. */
async function serveRoot(t, root, cache) {
  const options = cache === undefined ? { root } : { root, cache };
  const started = await startHttp((app) => app.static('/s', options));
  t.after(() => started.server.close({ drainTimeout: 500 }));
  return { ...started, root };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Rewrite a file with the same length and a modification time `seconds` later than now. */
function rewrite(file, content, seconds = 5) {
  writeFileSync(file, content);
  const later = new Date(Date.now() + seconds * 1000);
  utimesSync(file, later, later);
}

async function text(url, headers = {}) {
  const response = await fetch(url, { headers: { 'accept-encoding': 'identity', ...headers } });
  return { status: response.status, etag: response.headers.get('etag'), body: await response.text(), headers: response.headers };
}

test('a kept file is served from memory until revalidate, then as the disk has it', async (t) => {
  const { base: url, root } = await serve(t, { 'a.txt': 'version one' }, { revalidate: 800 });
  const first = await text(`${url}/s/a.txt`);
  assert.equal(first.body, 'version one');
  rewrite(path.join(root, 'a.txt'), 'version two');
  const soon = await text(`${url}/s/a.txt`);
  assert.equal(soon.body, 'version one', 'within revalidate: the kept bytes');
  assert.equal(soon.etag, first.etag, 'and their own validators, consistent with them');
  await sleep(900);
  const later = await text(`${url}/s/a.txt`);
  assert.equal(later.body, 'version two', 'past revalidate: checked, changed, read again');
  assert.notEqual(later.etag, first.etag);
  assert.equal((await text(`${url}/s/a.txt`, { 'if-none-match': first.etag })).status, 200, 'the old ETag no longer validates');
  assert.equal((await text(`${url}/s/a.txt`, { 'if-none-match': later.etag })).status, 304);
});

test('revalidate 0 checks the disk on every request: changes, deletions, files coming back', async (t) => {
  const { base: url, root } = await serve(t, { 'a.txt': 'first', 'sub/index.html': '<p>one</p>' }, { revalidate: 0 });
  assert.equal((await text(`${url}/s/a.txt`)).body, 'first');
  rewrite(path.join(root, 'a.txt'), 'secnd');
  assert.equal((await text(`${url}/s/a.txt`)).body, 'secnd', 'same size, newer: seen at once');
  unlinkSync(path.join(root, 'a.txt'));
  assert.equal((await text(`${url}/s/a.txt`)).status, 404, 'deleted: not found');
  writeFileSync(path.join(root, 'a.txt'), 'back again');
  assert.equal((await text(`${url}/s/a.txt`)).body, 'back again');

  assert.equal((await text(`${url}/s/sub/`)).body, '<p>one</p>', 'an index file is kept by its directory path');
  rewrite(path.join(root, 'sub/index.html'), '<p>two</p>');
  assert.equal((await text(`${url}/s/sub/`)).body, '<p>two</p>');
});

test('a link retargeted out of the root is not served from memory', async (t) => {
  const { base: url, root } = await serve(t, { 'target.txt': 'inside', 'other.txt': 'other' }, { revalidate: 0 });
  const outside = path.join(base, `outside-${dirs}.txt`);
  writeFileSync(outside, 'SECRET');
  symlinkSync(path.join(root, 'target.txt'), path.join(root, 'link.txt'));
  assert.equal((await text(`${url}/s/link.txt`)).body, 'inside');
  unlinkSync(path.join(root, 'link.txt'));
  symlinkSync(outside, path.join(root, 'link.txt'));
  const after = await text(`${url}/s/link.txt`);
  assert.equal(after.status, 404, 'resolved again: outside the root');
  assert.doesNotMatch(after.body, /SECRET/);
});

test('a precompressed sibling added later is used once the file is checked again', async (t) => {
  const content = 'let x = 1;\n'.repeat(300);
  const { base: url, root } = await serve(t, { 'app.js': content }, { revalidate: 0 });
  const plain = await fetch(`${url}/s/app.js`, { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(plain.headers.get('content-encoding'), null);
  assert.equal(plain.headers.get('vary'), null, 'no variants yet');
  await plain.arrayBuffer();
  writeFileSync(path.join(root, 'app.js.gz'), gzipSync(content));
  const connection = await HttpConnection.open(Number(new URL(url).port));
  t.after(() => connection.socket.destroy());
  connection.socket.write('GET /s/app.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n');
  const zipped = await connection.response();
  assert.equal(zipped.headers['content-encoding'], 'gzip');
  assert.equal(zipped.headers.vary, 'Accept-Encoding');
  assert.equal(gunzipSync(zipped.body).toString(), content);
  connection.socket.write('GET /s/app.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n');
  const identity = await connection.response();
  assert.equal(identity.headers['content-encoding'], undefined);
  assert.equal(identity.headers.vary, 'Accept-Encoding', 'every variant says it varies');
  assert.equal(identity.body.toString(), content);
});

test('ranges, HEAD and 304 from memory are what the disk gives', async (t) => {
  const content = randomBytes(200_000);
  const files = { 'blob.bin': content };
  const kept = await serve(t, files);
  const disk = await serveRoot(t, kept.root, false);
  const ask = async (port, request) => {
    const connection = await HttpConnection.open(port);
    try {
      connection.socket.write(request);
      return await connection.response({ headOnly: request.startsWith('HEAD') });
    } finally {
      connection.socket.destroy();
    }
  };
  const whole = await ask(kept.port, 'GET /s/blob.bin HTTP/1.1\r\nHost: x\r\n\r\n');
  const etag = whole.headers.etag;
  for (const [name, extra, method] of [
    ['whole', '', 'GET'],
    ['a range', 'Range: bytes=1000-70999\r\n', 'GET'],
    ['a suffix range', 'Range: bytes=-5\r\n', 'GET'],
    ['past the end', 'Range: bytes=300000-\r\n', 'GET'],
    ['HEAD', '', 'HEAD'],
  ]) {
    const request = `${method} /s/blob.bin HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
    const [fromMemory, fromDisk] = [await ask(kept.port, request), await ask(disk.port, request)];
    assert.equal(fromMemory.status, fromDisk.status, name);
    for (const header of ['content-length', 'content-range', 'content-type', 'etag', 'last-modified', 'accept-ranges']) {
      assert.equal(fromMemory.headers[header], fromDisk.headers[header], `${name}: ${header}`);
    }
    if (method === 'GET') assert.equal(sha256(fromMemory.body), sha256(fromDisk.body), name);
  }
  const notModified = await ask(kept.port, `GET /s/blob.bin HTTP/1.1\r\nHost: x\r\nIf-None-Match: ${etag}\r\n\r\n`);
  assert.equal(notModified.status, 304);
  assert.equal(notModified.body.length, 0);
  assert.equal(notModified.headers['content-type'], undefined, 'a 304 carries the validators, not the representation');
});

test('files past maxFileBytes or past maxBytes come from the disk, intact', async (t) => {
  const small = randomBytes(10_000);
  const large = randomBytes(300_000);
  const { base: url, root } = await serve(
    t,
    { 'small-1.bin': small, 'small-2.bin': small, 'small-3.bin': small, 'large.bin': large },
    { maxFileBytes: 100_000, maxBytes: 25_000, revalidate: 60_000 },
  );
  for (const name of ['small-1.bin', 'small-2.bin', 'small-3.bin', 'large.bin', 'small-3.bin', 'large.bin']) {
    const body = Buffer.from(await (await fetch(`${url}/s/${name}`)).arrayBuffer());
    assert.equal(sha256(body), sha256(name === 'large.bin' ? large : small), name);
  }
  // Only the first two small files fit: the third, not kept, shows a
  // change at once, while the kept first still serves its old bytes.
  rewrite(path.join(root, 'small-3.bin'), Buffer.alloc(10_000, 3));
  rewrite(path.join(root, 'small-1.bin'), Buffer.alloc(10_000, 1));
  rewrite(path.join(root, 'large.bin'), Buffer.alloc(300_000, 9));
  const third = Buffer.from(await (await fetch(`${url}/s/small-3.bin`)).arrayBuffer());
  assert.ok(third.every((b) => b === 3), 'past maxBytes: from the disk');
  const largeNow = Buffer.from(await (await fetch(`${url}/s/large.bin`)).arrayBuffer());
  assert.ok(largeNow.every((b) => b === 9), 'past maxFileBytes: from the disk');
  const first = Buffer.from(await (await fetch(`${url}/s/small-1.bin`)).arrayBuffer());
  assert.equal(sha256(first), sha256(small), 'kept: from memory until revalidate');
});

test('cache: false reads the disk on every request', async (t) => {
  const { base: url, root } = await serve(t, { 'a.txt': 'one' }, false);
  assert.equal((await text(`${url}/s/a.txt`)).body, 'one');
  rewrite(path.join(root, 'a.txt'), 'two');
  assert.equal((await text(`${url}/s/a.txt`)).body, 'two');
});

test('cache options are checked when the directory is registered', async () => {
  const { Server } = await import('switchboard');
  const app = new Server({ workers: 0 }).app;
  const root = mkdtempSync(path.join(base, 'options-'));
  const refused = (cache, pattern) =>
    assert.throws(() => app.static('/x', { root, cache }), (error) => error.code === 'ERR_INVALID_OPTION' && pattern.test(error.message));
  refused(true, /cache must be false or an object/);
  refused({ maxBytes: -1 }, /cache.maxBytes/);
  refused({ maxFileBytes: 1.5 }, /cache.maxFileBytes/);
  refused({ revalidate: 2 ** 33 }, /cache.revalidate/);
  refused({ ttl: 5 }, /unknown cache option/);
});
