// multipart/form-data bodies end to end: fetch's FormData (fields and two
// files, one of 5 MiB checked by SHA-256), `multipartAll`, every limit at
// and one past its value, malformed bodies (raw TCP), the wrong content
// type, an unread file holding a 50 MiB upload back with the server's
// memory flat, and Python's `requests` as a second client when it is there.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { Server } from 'switchboard';
import { exchange, startHttp } from './support.mjs';

const MiB = 1024 * 1024;
const run = promisify(execFile);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

const start = startHttp;

/** Every part: fields as they are, files with their size and SHA-256 (read with `pipeline`). */
async function describeParts(req, options) {
  const parts = [];
  for await (const part of req.multipart(options)) {
    if (part.kind === 'field') {
      parts.push({ kind: 'field', name: part.name, value: part.value, mimeType: part.mimeType });
    } else {
      const hash = createHash('sha256');
      let size = 0;
      await pipeline(
        part.stream,
        new Writable({
          write(chunk, _encoding, callback) {
            hash.update(chunk);
            size += chunk.length;
            callback();
          },
        }),
      );
      parts.push({ kind: 'file', name: part.name, filename: part.filename, mimeType: part.mimeType, size, sha256: hash.digest('hex') });
    }
  }
  return parts;
}

/** A multipart body by hand: `parts` are `{ name, value }` or `{ name, filename, data }`. */
function formBody(boundary, parts, { close = true } = {}) {
  const pieces = [];
  for (const part of parts) {
    const disposition = part.filename === undefined ? `form-data; name="${part.name}"` : `form-data; name="${part.name}"; filename="${part.filename}"`;
    const type = part.filename === undefined ? '' : 'Content-Type: application/octet-stream\r\n';
    pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`), Buffer.from(part.data ?? part.value), Buffer.from('\r\n'));
  }
  if (close) pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

function rawPost(path, contentType, body) {
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
}

test('fetch FormData: fields and two files, one of 5 MiB, arrive whole and in order', async (t) => {
  const { server, base, errors } = await start((app) => {
    app.post('/upload', { bodyLimit: 16 * MiB }, async (req, res) => res.json(await describeParts(req)));
    app.post('/all', { bodyLimit: 16 * MiB }, async (req, res) => {
      const { fields, files } = await req.multipartAll();
      res.json({ fields, files: files.map((f) => ({ name: f.name, filename: f.filename, mimeType: f.mimeType, size: f.data.length, sha256: sha256(f.data) })) });
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const big = randomBytes(5 * MiB);
  const small = Buffer.from('hello, multipart\n');
  const form = () => {
    const data = new FormData();
    data.append('title', 'Holiday photos');
    data.append('tag', 'sea');
    data.append('tag', 'été');
    data.append('notes', new Blob([small], { type: 'text/plain' }), 'notes.txt');
    data.append('photo', new Blob([big], { type: 'image/jpeg' }), 'plage d’été.jpg');
    return data;
  };

  const response = await fetch(`${base}/upload`, { method: 'POST', body: form() });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), [
    { kind: 'field', name: 'title', value: 'Holiday photos', mimeType: 'text/plain' },
    { kind: 'field', name: 'tag', value: 'sea', mimeType: 'text/plain' },
    { kind: 'field', name: 'tag', value: 'été', mimeType: 'text/plain' },
    { kind: 'file', name: 'notes', filename: 'notes.txt', mimeType: 'text/plain', size: small.length, sha256: sha256(small) },
    { kind: 'file', name: 'photo', filename: 'plage d’été.jpg', mimeType: 'image/jpeg', size: big.length, sha256: sha256(big) },
  ]);

  const all = await fetch(`${base}/all`, { method: 'POST', body: form() });
  assert.equal(all.status, 200);
  assert.deepEqual(await all.json(), {
    fields: { title: 'Holiday photos', tag: ['sea', 'été'] },
    files: [
      { name: 'notes', filename: 'notes.txt', mimeType: 'text/plain', size: small.length, sha256: sha256(small) },
      { name: 'photo', filename: 'plage d’été.jpg', mimeType: 'image/jpeg', size: big.length, sha256: sha256(big) },
    ],
  });
  assert.deepEqual(errors, []);
});

test('a file left unread is skipped when the next part is asked for', async (t) => {
  const { server, base } = await start((app) => {
    app.post('/skip', { bodyLimit: 8 * MiB }, async (req, res) => {
      const seen = [];
      for await (const part of req.multipart()) seen.push(part.kind === 'file' ? `file:${part.filename}` : `${part.name}=${part.value}`);
      res.json(seen);
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const data = new FormData();
  data.append('a', new Blob([randomBytes(2 * MiB)]), 'one.bin');
  data.append('b', new Blob([randomBytes(1000)]), 'two.bin');
  data.append('after', 'yes');
  const response = await fetch(`${base}/skip`, { method: 'POST', body: data });
  assert.deepEqual(await response.json(), ['file:one.bin', 'file:two.bin', 'after=yes']);
});

test('each limit: a form at it passes, one past it is 413 ERR_HTTP_MULTIPART_LIMIT naming it', async (t) => {
  const { server, base } = await start((app) => {
    app.post('/limits', { bodyLimit: 8 * MiB }, async (req, res) => {
      const options = Object.fromEntries(Object.entries(req.query).map(([k, v]) => [k, Number(v)]));
      const parts = await describeParts(req, options);
      res.json({ parts: parts.length });
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const send = async (query, entries) => {
    const data = new FormData();
    for (const [name, value, filename] of entries) {
      if (filename === undefined) data.append(name, value);
      else data.append(name, new Blob([value]), filename);
    }
    const response = await fetch(`${base}/limits?${query}`, { method: 'POST', body: data });
    return { status: response.status, body: await response.json() };
  };
  const cases = [
    { limit: 'files', value: 2, at: [['f1', 'x', 'a'], ['f2', 'y', 'b'], ['n', 'v']], past: [['f1', 'x', 'a'], ['f2', 'y', 'b'], ['f3', 'z', 'c']] },
    { limit: 'fields', value: 2, at: [['a', '1'], ['b', '2'], ['f', 'x', 'f.bin']], past: [['a', '1'], ['b', '2'], ['c', '3']] },
    { limit: 'parts', value: 3, at: [['a', '1'], ['f', 'x', 'f.bin'], ['b', '2']], past: [['a', '1'], ['f', 'x', 'f.bin'], ['b', '2'], ['c', '3']] },
    { limit: 'fieldSize', value: 10, at: [['a', '0123456789']], past: [['a', '0123456789!']] },
    { limit: 'fileSize', value: 1000, at: [['f', 'x'.repeat(1000), 'f.txt']], past: [['f', 'x'.repeat(1001), 'f.txt']] },
  ];
  for (const { limit, value, at, past } of cases) {
    const ok = await send(`${limit}=${value}`, at);
    assert.equal(ok.status, 200, `${limit}: a form at the limit passes (${JSON.stringify(ok.body)})`);
    assert.equal(ok.body.parts, at.length);
    const refused = await send(`${limit}=${value}`, past);
    assert.equal(refused.status, 413, `${limit}: one past the limit is refused`);
    assert.equal(refused.body.error.code, 'ERR_HTTP_MULTIPART_LIMIT');
    assert.match(refused.body.error.message, new RegExp(`"${limit}" limit \\(${value}\\)`));
  }

  // A large file past `fileSize` fails while it streams.
  const big = await send('fileSize=65536', [['f', randomBytes(4 * MiB), 'big.bin']]);
  assert.equal(big.status, 413);
  assert.match(big.body.error.message, /"fileSize"/);
});

test('the file stream itself fails with the limit, after at most `fileSize` bytes', async (t) => {
  let delivered = -1;
  const { server, base } = await start((app) => {
    app.post('/cut', { bodyLimit: 8 * MiB }, async (req, res) => {
      for await (const part of req.multipart({ fileSize: 100_000 })) {
        delivered = 0;
        try {
          for await (const chunk of part.stream) delivered += chunk.length;
        } catch (error) {
          return res.status(299).json({ code: error.code, limit: error.limit, delivered });
        }
      }
      res.send('not cut');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const data = new FormData();
  data.append('f', new Blob([randomBytes(3 * MiB)]), 'big.bin');
  const response = await fetch(`${base}/cut`, { method: 'POST', body: data });
  assert.equal(response.status, 299);
  const result = await response.json();
  assert.equal(result.code, 'ERR_HTTP_MULTIPART_LIMIT');
  assert.equal(result.limit, 'fileSize');
  // What was still queued in the stream when it failed is dropped (all of
  // it when the body came in large pieces): never more than the limit.
  assert.ok(result.delivered <= 100_000, `${result.delivered} bytes delivered`);
});

test('malformed bodies are 400 ERR_HTTP_MULTIPART_MALFORMED; other types 415', async (t) => {
  const { server, port, base, errors } = await start((app) => {
    app.post('/form', async (req, res) => res.json(await describeParts(req)));
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const good = formBody('b0undary', [{ name: 'a', value: '1' }, { name: 'f', filename: 'f.txt', data: 'file bytes' }]);
  const ok = (await exchange(port, rawPost('/form', 'multipart/form-data; boundary=b0undary', good))).response;
  assert.equal(ok.status, 200, ok.body.toString());
  assert.equal(JSON.parse(ok.body).length, 2);

  const cases = {
    'a boundary the body does not use': rawPost('/form', 'multipart/form-data; boundary=other', good),
    'no boundary parameter': rawPost('/form', 'multipart/form-data', good),
    'cut in a field (no closing boundary)': rawPost('/form', 'multipart/form-data; boundary=b0undary', good.subarray(0, 60)),
    'cut in a file': rawPost('/form', 'multipart/form-data; boundary=b0undary', formBody('b0undary', [{ name: 'f', filename: 'f.txt', data: 'abc' }], { close: false }).subarray(0, -4)),
    'no closing boundary': rawPost('/form', 'multipart/form-data; boundary=b0undary', formBody('b0undary', [{ name: 'a', value: '1' }], { close: false })),
    'a bad part head': rawPost('/form', 'multipart/form-data; boundary=b0undary', Buffer.from('--b0undary\r\nContent-Disposition form-data\r\n\r\nx\r\n--b0undary--\r\n')),
    'an empty body': rawPost('/form', 'multipart/form-data; boundary=b0undary', Buffer.alloc(0)),
  };
  for (const [name, request] of Object.entries(cases)) {
    const { response } = await exchange(port, request);
    assert.equal(response?.status, 400, `${name}: ${response?.body}`);
    assert.equal(JSON.parse(response.body).error.code, 'ERR_HTTP_MULTIPART_MALFORMED', name);
  }

  for (const [body, type] of [
    [JSON.stringify({ a: 1 }), 'application/json'],
    ['a=1', 'application/x-www-form-urlencoded'],
  ]) {
    const response = await fetch(`${base}/form`, { method: 'POST', body, headers: { 'content-type': type } });
    assert.equal(response.status, 415, type);
    assert.equal((await response.json()).error.code, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE');
  }
  assert.deepEqual(errors, [], 'no 500 among them');
});

test('a client that leaves mid-file fails the stream and the iteration with ERR_HTTP_CLIENT_GONE', async (t) => {
  let settle;
  const outcome = new Promise((resolve) => (settle = resolve));
  const { server, port, errors } = await start((app) => {
    app.post('/gone', { bodyLimit: 64 * MiB }, async (req, res) => {
      const seen = { stream: undefined, iteration: undefined, bytes: 0 };
      try {
        for await (const part of req.multipart()) {
          try {
            for await (const chunk of part.stream) seen.bytes += chunk.length;
          } catch (error) {
            seen.stream = error.code;
          }
        }
      } catch (error) {
        seen.iteration = error.code;
      }
      settle(seen);
      res.send('too late');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.on('error', () => {});
  const boundary = 'gone-boundary';
  socket.write(`POST /gone HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${10 * MiB}\r\n\r\n`);
  socket.write(`--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="f.bin"\r\n\r\n`);
  socket.write(Buffer.alloc(MiB, 0x61));
  await sleep(200);
  socket.destroy();
  const seen = await outcome;
  assert.equal(seen.stream, 'ERR_HTTP_CLIENT_GONE');
  assert.equal(seen.iteration, 'ERR_HTTP_CLIENT_GONE');
  assert.ok(seen.bytes > 0 && seen.bytes <= MiB, `${seen.bytes} bytes read before`);
  await sleep(50);
  assert.deepEqual(errors, []);
});

test('bad options are ERR_INVALID_OPTION', async (t) => {
  const seen = [];
  const { server, base } = await start((app) => {
    app.post('/bad', async (req, res) => {
      for (const options of [{ files: -1 }, { fileSize: 1.5 }, { headerPairs: 10 }, { parts: '3' }]) {
        try {
          req.multipart(options);
        } catch (error) {
          seen.push(error.code);
        }
      }
      res.send('ok');
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  await (await fetch(`${base}/bad`, { method: 'POST', body: 'x' })).text();
  assert.deepEqual(seen, ['ERR_INVALID_OPTION', 'ERR_INVALID_OPTION', 'ERR_INVALID_OPTION', 'ERR_INVALID_OPTION']);
});

test('an unread file holds a 50 MiB upload back: the server memory stays flat', async (t) => {
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const { server, port } = await start((app) => {
    app.post('/unread', { bodyLimit: 64 * MiB }, async (req, res) => {
      for await (const part of req.multipart({ fileSize: 64 * MiB })) {
        // Hold the file's stream unread until the test has seen the client stall.
        await gate;
        const hash = createHash('sha256');
        let size = 0;
        for await (const chunk of part.stream) {
          hash.update(chunk);
          size += chunk.length;
        }
        return res.json({ size, sha256: hash.digest('hex') });
      }
    });
  });
  t.after(() => server.close({ drainTimeout: 500 }));

  const total = 50 * MiB;
  const boundary = '----switchboard-test-7MA4YWxkTrZu0gW';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="big"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const response = [];
  socket.on('data', (chunk) => response.push(chunk));
  socket.write(`POST /unread HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${head.length + total + tail.length}\r\n\r\n`);
  socket.write(head);

  // The file's bytes: a pattern whose consecutive bytes differ by 31, so it never holds "\r\n--".
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31 + 7) & 0xff;
  const hash = createHash('sha256');
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  let sent = 0;
  let stalled = false;
  let unreadPeak = before;
  let stalledAt = 0;
  try {
    const next = () => {
      block[0] = (block[0] + 31) & 0xff;
      hash.update(block);
      sent += block.length;
      return socket.write(block);
    };
    while (sent < total) {
      if (!next()) {
        const drained = await Promise.race([once(socket, 'drain').then(() => true), sleep(700).then(() => false)]);
        if (!drained) {
          stalled = true;
          break;
        }
      }
    }
    stalledAt = sent;
    unreadPeak = peak;
    release();
    if (stalled) await once(socket, 'drain');
    while (sent < total) if (!next()) await once(socket, 'drain');
    socket.write(tail);
    await once(socket, 'close');
    clearInterval(sampler);

    assert.ok(stalled, 'the client was held back while the file was unread');
    assert.ok(stalledAt < 32 * MiB, `only buffers were taken while unread (${(stalledAt / MiB).toFixed(0)} MiB sent)`);
    const text = Buffer.concat(response).toString('latin1');
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.deepEqual(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { size: total, sha256: hash.digest('hex') });
  } finally {
    clearInterval(sampler);
    socket.destroy();
  }
  // While the file is unread, what the server holds is the body window and
  // the parser's buffers; afterwards the upload streams through (its
  // garbage, up to the next collection, is not what is measured here).
  const growth = (unreadPeak - before) / MiB;
  t.diagnostic(`RSS growth while the file was unread (${(stalledAt / MiB).toFixed(0)} MiB sent): ${growth.toFixed(1)} MiB; over the whole upload: ${((peak - before) / MiB).toFixed(1)} MiB`);
  assert.ok(growth < 40, `memory stays bounded while the file is unread (grew ${growth.toFixed(1)} MiB)`);
});

/** The project's venv (scripts/setup-python.sh, pinned requests) if made, else python3; one that imports requests. */
async function pythonWithRequests() {
  const venv = path.join(process.env.SB_CACHE ?? path.join(os.homedir(), '.cache', 'switchboard'), 'venv', 'bin', 'python');
  for (const python of [venv, 'python3']) {
    try {
      await run(python, ['-c', 'import requests']);
      return python;
    } catch {
      // Not there, or without requests: the next one.
    }
  }
  return undefined;
}

test('Python requests uploads a form (skipped without a Python that has requests)', async (t) => {
  const python = await pythonWithRequests();
  if (!python) {
    t.skip('no Python with requests');
    return;
  }
  const { server, base } = await start((app) => {
    app.post('/py', { bodyLimit: 8 * MiB }, async (req, res) => res.json(await describeParts(req)));
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const script = `
import hashlib, json, os, sys, requests
data = os.urandom(3 * 1024 * 1024)
r = requests.post(sys.argv[1], data={"name": "value"}, files={"doc": ("report.pdf", data, "application/pdf")}, timeout=30)
print(json.dumps({"status": r.status_code, "body": r.json(), "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}))
`;
  const { stdout } = await run(python, ['-c', script, `${base}/py`]);
  const result = JSON.parse(stdout);
  assert.equal(result.status, 200);
  assert.deepEqual(result.body, [
    { kind: 'field', name: 'name', value: 'value', mimeType: 'text/plain' },
    { kind: 'file', name: 'doc', filename: 'report.pdf', mimeType: 'application/pdf', size: result.size, sha256: result.sha256 },
  ]);
});
