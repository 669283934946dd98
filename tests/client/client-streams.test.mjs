// switchboard-client with streams and files: files from a path or a
// Readable, received files saved to disk or read as a Node Readable (20 MB
// each way, checked by SHA-256), payloads arriving byte by byte, and TLS.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import {
  Client,
  connect,
  fileFromPath,
  fileFromReadable,
  openStream,
  pipeTo,
  saveTo,
  tcpTransport,
  toReadable,
} from 'switchboard-client/node';
import { startReferenceServer } from './reference-server.mjs';
import { counting, rejectsWith, sha256, sha256File, tmpPath, until } from './helpers.mjs';

const SIZE = 20 * 1024 * 1024;

/** Server side: hash what arrives; send files back. */
const handlers = {
  hashUpload: async (call) => {
    const out = [];
    for (const file of call.files) {
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of file.stream) {
        hash.update(chunk);
        size += chunk.length;
      }
      out.push({ name: file.name, declared: file.size, size, sha256: hash.digest('hex') });
    }
    if (call.stream !== null) out.push({ stream: new TextDecoder().decode(await call.stream.readAll()) });
    return out;
  },
  download: (call) => {
    const { path, name } = call.decode();
    const size = readFileSync(path).length;
    call.respond({ name }, { files: [{ name, size, data: createReadStream(path) }] });
  },
  brokenDownload: (call) => {
    async function* source() {
      yield new Uint8Array(100_000);
      throw Object.assign(new Error('the disk broke'), { code: 'E_BROKEN' });
    }
    call.respond(null, { files: [{ name: 'broken.bin', size: 1_000_000, data: source() }] });
  },
  echo: (call) => call.decode(),
  count: (call) => {
    const n = call.decode();
    for (let i = 1; i < n; i++) call.respond(`item ${i}`, { last: false });
    return `item ${n}`;
  },
};

describe('files and streams over TCP', () => {
  let server;
  let client;
  let bigFile;
  let bigHash;
  const cleanup = [];
  before(async () => {
    server = await startReferenceServer('tcp', { handlers });
    client = await connect(server.url);
    bigFile = tmpPath('big.bin');
    cleanup.push(bigFile);
    const handle = await open(bigFile, 'w');
    const hash = createHash('sha256');
    for (let written = 0; written < SIZE; written += 1024 * 1024) {
      const chunk = randomBytes(1024 * 1024);
      hash.update(chunk);
      await handle.write(chunk);
    }
    await handle.close();
    bigHash = hash.digest('hex');
  });
  after(async () => {
    await client?.close();
    await server?.close();
    for (const file of cleanup) await rm(file, { force: true });
  });

  test('a 20 MB file from a path reaches the server intact', async () => {
    const file = await fileFromPath(bigFile, { name: 'big.bin' });
    assert.equal(file.size, SIZE);
    const [result] = await client.call('hashUpload', null, { files: [file], timeoutMs: 60_000 });
    assert.deepEqual(result, { name: 'big.bin', declared: SIZE, size: SIZE, sha256: bigHash });
  });

  test('a 20 MB file from the server saved to disk has the same SHA-256', async () => {
    const response = await client.request('download', { path: bigFile, name: 'copy.bin' }, { timeoutMs: 60_000 });
    assert.deepEqual(response.value, { name: 'copy.bin' });
    const [file] = response.files;
    assert.equal(file.name, 'copy.bin');
    assert.equal(file.size, SIZE);
    const target = tmpPath('copy.bin');
    cleanup.push(target);
    assert.equal(await saveTo(file, target), SIZE);
    assert.equal(await sha256File(target), bigHash);
  });

  test('a received file as a Node Readable, and piped to a Writable', async () => {
    const small = tmpPath('small.txt');
    cleanup.push(small);
    writeFileSync(small, 'x'.repeat(300_000));
    const expected = sha256(readFileSync(small));
    const first = await client.request('download', { path: small, name: 's' });
    const hash = createHash('sha256');
    await pipeline(toReadable(first.files[0]), hash);
    assert.equal(hash.digest('hex'), expected);
    const second = await client.request('download', { path: small, name: 's' });
    const chunks = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        chunks.push(chunk);
        callback();
      },
    });
    assert.equal(await pipeTo(second.files[0], sink), 300_000);
    assert.equal(sha256(Buffer.concat(chunks)), expected);
  });

  test('destroying the Readable early stops the stream; the connection stays usable', async () => {
    const response = await client.request('download', { path: bigFile, name: 'big' });
    const readable = toReadable(response.files[0]);
    for await (const chunk of readable) {
      assert.ok(chunk.length > 0);
      break; // destroys the readable
    }
    await until(() => client.stats().peer.inboundStreams === 0, 'the stream is stopped');
    assert.equal(await client.call('echo', 'still here'), 'still here');
  });

  test('files from a Readable, an empty file, and a plain stream from a StreamWriter', async () => {
    const body = Buffer.from('from a readable '.repeat(1000));
    const readable = Readable.from([body.subarray(0, 5000), body.subarray(5000)]);
    const empty = tmpPath('empty');
    cleanup.push(empty);
    writeFileSync(empty, '');
    const writer = openStream();
    const reply = client.call('hashUpload', null, {
      stream: writer,
      files: [fileFromReadable('r.txt', body.length, readable), await fileFromPath(empty)],
    });
    await writer.write('streamed ');
    await writer.write('text');
    writer.end();
    const [fromReadable, fromEmpty, stream] = await reply;
    assert.deepEqual(fromReadable, { name: 'r.txt', declared: body.length, size: body.length, sha256: sha256(body) });
    assert.equal(fromEmpty.size, 0);
    assert.deepEqual(stream, { stream: 'streamed text' });
    // A file source shorter than declared is aborted with ERR_FILE_SIZE at the receiver.
    await assert.rejects(
      client.call('hashUpload', null, { files: [fileFromReadable('short', 10, Readable.from([Buffer.from('abc')]))] }),
      (e) => e.code === 'ERR_FILE_SIZE',
    );
    await assert.rejects(fileFromPath(tmpPath('missing')), (e) => e.code === 'ENOENT');
  });

  test('saveTo removes the partial file when the sender aborts', async () => {
    const response = await client.request('brokenDownload');
    const target = tmpPath('broken.bin');
    await rejectsWith(saveTo(response.files[0], target), 'E_BROKEN');
    assert.equal(existsSync(target), false);
  });
});

describe('tiny chunks', () => {
  test('every byte of the server in its own write: handshake, responses and streams still decode', async () => {
    const server = await startReferenceServer('tcp', { handlers, byteByByte: true });
    const { factory, stats } = counting(tcpTransport('127.0.0.1', server.port));
    const client = new Client({ transport: factory });
    await client.ready;
    const long = 'é'.repeat(200);
    assert.equal(await client.call('echo', long), long);
    const items = [];
    for await (const item of client.callMany('count', 3)) items.push(item);
    assert.deepEqual(items, ['item 1', 'item 2', 'item 3']);
    const small = tmpPath('tiny.txt');
    writeFileSync(small, 'tiny file content');
    const response = await client.request('download', { path: small, name: 't' });
    assert.equal(new TextDecoder().decode(await response.files[0].stream.readAll()), 'tiny file content');
    await rm(small, { force: true });
    // Most of what arrived came in pieces of a byte or so.
    assert.ok(stats.chunks > stats.bytes / 4, `${stats.chunks} chunks for ${stats.bytes} bytes`);
    await client.close();
    await server.close();
  });
});

/** A self-signed certificate for localhost, or null without openssl. */
function makeCertificate() {
  const key = tmpPath('key.pem');
  const cert = tmpPath('cert.pem');
  const result = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'ignore' });
  if (result.status !== 0) return null;
  const pair = { key: readFileSync(key), cert: readFileSync(cert) };
  for (const file of [key, cert]) rm(file, { force: true });
  return pair;
}

describe('TLS', () => {
  const pair = makeCertificate();
  test('tls:// with a CA passed through; SNI from the host name; an untrusted certificate fails', async () => {
    assert.ok(pair, 'openssl (Debian: always present) made no certificate');
    const server = await startReferenceServer('tls', { handlers, ...pair });
    try {
      const client = await connect(server.url, { tls: { ca: pair.cert } });
      assert.equal(await client.call('echo', 'secure'), 'secure');
      assert.equal(server.last.servername, 'localhost');
      await client.close();
      const error = await rejectsWith(connect(server.url), 'ERR_DISCONNECTED');
      assert.match(error.cause.code, /SELF_SIGNED|UNABLE_TO_VERIFY/);
    } finally {
      await server.close();
    }
  });
});

test('pipeTo rejects when the writable fails, and stops the stream', async () => {
  const server = await startReferenceServer('tcp', { handlers });
  const client = await connect(server.url);
  const small = tmpPath('p.txt');
  writeFileSync(small, 'y'.repeat(100_000));
  const response = await client.request('download', { path: small, name: 'p' });
  const failing = new Writable({ write: (_chunk, _encoding, callback) => callback(new Error('disk full')) });
  await assert.rejects(pipeTo(response.files[0], failing), /disk full/);
  await until(() => client.stats().peer.inboundStreams === 0, 'the stream is stopped');
  await rm(small, { force: true });
  await client.close();
  await server.close();
});
