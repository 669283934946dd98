// Interop: real HTTP clients against a Switchboard app (routes with
// parameters and a query, a JSON echo, a 10 MiB upload answered with its
// SHA-256, a chunked streamed response, a 404, a redirect):
//
// - Python httpx and requests (tests/interop/http_clients.py, run from the
//   venv of scripts/setup-python.sh; pins in tests/conformance/requirements.txt);
// - curl: keep-alive reuse, --http1.0, Expect: 100-continue with a 1 MiB upload;
// - undici's request API with pipelining: 50 requests on one connection,
//   pipelining 10, answered in order.
//
// Run: node --test tests/interop/http-clients.test.mjs
// Env: SB_CACHE (where the venv is kept).
//
// undici: Node 20 bundles undici for fetch only (no Client, no request
// API); the workspace's devDependency (7.x, the last major that runs on
// Node 20) provides the Client.

import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Server } from 'switchboard';
import * as undici from 'undici';
import { ensureVenv } from './python-venv.mjs';
import { repoRoot, runProcess, describeExit } from './start-server.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

const PYTHON_TIMEOUT_MS = 120_000;
/** The streamed response: pieces written this far apart. */
const STREAM_PIECES = 5;
const STREAM_GAP_MS = 60;
const STREAM_TEXT = `${Array.from({ length: STREAM_PIECES }, (_, i) => `piece ${i}\n`).join('')}end\n`;

/** The app every client talks to. `inFlight` tracks handlers running at once (pipelining). */
async function startApp() {
  const stats = { inFlight: 0, maxInFlight: 0 };
  const server = new Server({ workers: 0 });
  const app = server.app;
  const port = (req) => Number(req.remoteAddress.slice(req.remoteAddress.lastIndexOf(':') + 1));
  app.get('/users/:id', (req, res) => res.json({ id: req.params.id, query: req.query, httpVersion: req.httpVersion }));
  app.post('/echo', async (req, res) => res.json({ got: await req.json(), contentType: req.header('content-type') ?? null }));
  app.post('/sha256', { bodyLimit: 16 * 1024 * 1024 }, async (req, res) => {
    const hash = createHash('sha256');
    let size = 0;
    for await (const piece of req) {
      hash.update(piece);
      size += piece.length;
    }
    res.json({ size, sha256: hash.digest('hex'), chunked: req.header('transfer-encoding') === 'chunked', expect: req.header('expect') ?? null });
  });
  app.get('/stream', async (req, res) => {
    res.type('text');
    for (let i = 0; i < STREAM_PIECES; i++) {
      res.write(`piece ${i}\n`);
      await sleep(STREAM_GAP_MS);
    }
    res.end('end\n');
  });
  app.get('/redirect', (req, res) => res.redirect('/users/42?from=redirect'));
  app.get('/conn', (req, res) => res.json({ port: port(req) }));
  // Later requests finish sooner, so answering in order takes the core's reordering.
  app.get('/seq/:n', async (req, res) => {
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    const n = Number(req.params.n);
    await sleep((9 - (n % 10)) * 3);
    stats.inFlight--;
    res.json({ n, port: port(req) });
  });
  await server.listen(0, '127.0.0.1');
  return { server, stats, base: `http://127.0.0.1:${server.port}` };
}

/** The checks both Python clients answer (see http_clients.py). */
function checkPythonClient(name, result) {
  const context = (what) => `${name} ${what}: ${JSON.stringify(result[what])?.slice(0, 2000)}`;
  assert.ok(!result.error, `${name} failed: ${result.error}\n${result.trace ?? ''}`);
  for (const [what, value] of Object.entries(result)) {
    assert.ok(!value?.error, `${name} ${what} raised ${value?.error}\n${value?.trace ?? ''}`);
  }

  const get = result.get_params;
  assert.equal(get.status, 200, context('get_params'));
  assert.equal(get.content_type, 'application/json; charset=utf-8', context('get_params'));
  assert.deepEqual(get.json, { id: 'café', query: { sort: 'asc', tag: ['a', 'b'] }, httpVersion: '1.1' }, context('get_params'));

  assert.equal(result.post_json.status, 200, context('post_json'));
  assert.deepEqual(result.post_json.json, { got: { name: 'ada', list: [1, 2, 3], nested: { ok: true } }, contentType: 'application/json' }, context('post_json'));

  assert.equal(result.sent_size, 10 * 1024 * 1024);
  for (const upload of ['upload', 'upload_chunked']) {
    assert.equal(result[upload].status, 200, context(upload));
    assert.equal(result[upload].json.size, result.sent_size, context(upload));
    assert.equal(result[upload].json.sha256, result.sent_sha256, `${context(upload)}: the server hashed other bytes`);
  }
  assert.equal(result.upload.json.chunked, false, 'a bytes body goes with Content-Length');
  assert.equal(result.upload_chunked.request_te, 'chunked', context('upload_chunked'));
  assert.equal(result.upload_chunked.json.chunked, true, 'the server saw a chunked body');

  const stream = result.stream;
  assert.equal(stream.status, 200, context('stream'));
  assert.equal(stream.transfer_encoding, 'chunked', context('stream'));
  assert.equal(stream.pieces.map((p) => p.text).join(''), STREAM_TEXT, context('stream'));
  // Read piece by piece as written, not buffered to the end: several pieces,
  // the last one arriving well after the first.
  assert.ok(stream.pieces.length >= 3, `${context('stream')}: the body came in ${stream.pieces.length} piece(s)`);
  const spread = stream.pieces.at(-1).ms - stream.pieces[0].ms;
  assert.ok(spread >= (STREAM_PIECES - 2) * STREAM_GAP_MS, `${context('stream')}: pieces spread over ${spread} ms`);

  assert.equal(result.not_found.status, 404, context('not_found'));
  assert.match(result.not_found.text, /ERR_HTTP_NOT_FOUND/, context('not_found'));

  const redirect = result.redirect;
  assert.equal(redirect.status, 302, context('redirect'));
  assert.equal(redirect.location, '/users/42?from=redirect', context('redirect'));
  assert.deepEqual(redirect.history, [302], context('redirect'));
  assert.equal(redirect.final_status, 200, context('redirect'));
  assert.equal(redirect.final_path, '/users/42?from=redirect', context('redirect'));
  assert.deepEqual(redirect.json, { id: '42', query: { from: 'redirect' }, httpVersion: '1.1' }, context('redirect'));

  const ports = result.reuse.ports;
  assert.equal(ports.length, 3, context('reuse'));
  assert.equal(new Set(ports).size, 1, `${context('reuse')}: the client opened a new connection per request`);
}

test('Python httpx and requests', { timeout: 11 * 60_000 }, async (t) => {
  const venv = await ensureVenv();
  const { server, base } = await startApp();
  t.after(() => server.close({ drainTimeout: 500 }));
  const script = path.join(repoRoot, 'tests', 'interop', 'http_clients.py');
  const run = await runProcess(venv.python, [script, base], { timeoutMs: PYTHON_TIMEOUT_MS });
  assert.equal(run.timedOut, false, `http_clients.py still running after ${PYTHON_TIMEOUT_MS} ms\n${run.output}`);
  assert.equal(run.code, 0, `http_clients.py failed (${describeExit(run)})\n${run.output}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1));
  t.diagnostic(`${JSON.stringify(result.versions)} in ${run.durationMs} ms`);
  assert.equal(result.versions.httpx, '0.28.1', 'the pinned httpx');
  assert.equal(result.versions.requests, '2.34.2', 'the pinned requests');
  await t.test('httpx', () => checkPythonClient('httpx', result.httpx));
  await t.test('requests', () => checkPythonClient('requests', result.requests));
});

/** Run curl; it never rejects on a failing exit (the caller asserts). */
async function curl(args, timeoutMs = 30_000) {
  return runProcess('curl', ['-sS', '--max-time', String(timeoutMs / 1000), ...args], { timeoutMs: timeoutMs + 5_000 });
}

test('curl: keep-alive reuse, HTTP/1.0, Expect: 100-continue with a 1 MiB upload', async (t) => {
  const { server, base } = await startApp();
  t.after(() => server.close({ drainTimeout: 500 }));

  await t.test('three URLs on one kept-alive connection', async () => {
    const run = await curl(['-v', `${base}/conn`, `${base}/conn`, `${base}/users/7?x=1`]);
    assert.equal(run.code, 0, run.stderr);
    const bodies = run.stdout.replaceAll('}{', '}\n{').split('\n').map((line) => JSON.parse(line));
    assert.equal(bodies.length, 3, run.stdout);
    assert.equal(bodies[0].port, bodies[1].port, 'the second request came on the same connection');
    assert.deepEqual(bodies[2], { id: '7', query: { x: '1' }, httpVersion: '1.1' });
    assert.equal(run.stderr.match(/Re-?using existing connection/g)?.length, 2, `curl reused the connection twice\n${run.stderr}`);
  });

  await t.test('--http1.0: answered, then closed; a streamed body without chunked coding', async () => {
    const run = await curl(['-v', '--http1.0', `${base}/users/10`]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^> GET \/users\/10 HTTP\/1\.0\r?$/m, 'curl spoke HTTP/1.0');
    assert.deepEqual(JSON.parse(run.stdout), { id: '10', query: {}, httpVersion: '1.0' });
    assert.match(run.stderr, /Closing connection/i, `the connection closed after the response\n${run.stderr}`);

    const streamed = await curl(['-v', '--http1.0', '-D', '-', `${base}/stream`]);
    assert.equal(streamed.code, 0, streamed.stderr);
    const [head, body] = streamed.stdout.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.[01] 200/);
    assert.doesNotMatch(head, /transfer-encoding/i, 'no chunked coding for HTTP/1.0');
    assert.doesNotMatch(head, /content-length/i, 'the length was not known up front');
    assert.equal(body, STREAM_TEXT, 'the whole body, ended by the close');
  });

  await t.test('Expect: 100-continue with a 1 MiB upload: the 100 arrives, the body follows', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-curl-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'upload.bin');
    const data = randomBytes(1024 * 1024);
    writeFileSync(file, data);
    // A long expect timeout: without the 100, curl would sit out 5 s and say so.
    const started = Date.now();
    const run = await curl([
      '-v',
      '--expect100-timeout', '5',
      '-H', 'Expect: 100-continue',
      '-H', 'Content-Type: application/octet-stream',
      '--data-binary', `@${file}`,
      `${base}/sha256`,
    ]);
    const took = Date.now() - started;
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^> Expect: 100-continue\r?$/m, 'curl asked for it');
    assert.match(run.stderr, /^< HTTP\/1\.1 100 Continue\r?$/m, `the 100 arrived\n${run.stderr}`);
    assert.doesNotMatch(run.stderr, /Done waiting for 100-continue/, 'curl did not time out waiting');
    assert.ok(took < 4000, `the upload took ${took} ms (curl waited for a 100 that never came?)`);
    assert.deepEqual(JSON.parse(run.stdout), { size: data.length, sha256: sha256(data), chunked: false, expect: '100-continue' });
  });
});

test('undici: 50 requests pipelined 10 deep on one connection, answered in order', { timeout: 6 * 60_000 }, async (t) => {
  const { server, stats, base } = await startApp();
  t.after(() => server.close({ drainTimeout: 500 }));
  const client = new undici.Client(base, { pipelining: 10 });
  t.after(() => client.close());

  const settled = [];
  const responses = await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      // blocking: false, or undici sends nothing more until each response's head is in.
      const response = await client.request({ path: `/seq/${i}`, method: 'GET', blocking: false });
      settled.push(i);
      return { status: response.statusCode, body: await response.body.json() };
    }),
  );
  responses.forEach((response, i) => {
    assert.equal(response.status, 200, `request ${i}`);
    assert.equal(response.body.n, i, `response ${i} answers request ${response.body.n}`);
  });
  assert.deepEqual(settled, Array.from({ length: 50 }, (_, i) => i), 'responses arrived in the order of the requests');
  assert.equal(new Set(responses.map((r) => r.body.port)).size, 1, 'all on one connection');
  assert.ok(stats.maxInFlight > 1, `the requests were pipelined (at most ${stats.maxInFlight} in the handlers at once)`);
  assert.ok(stats.maxInFlight <= 10, `no more in flight than the pipelining depth (${stats.maxInFlight})`);
  t.diagnostic(`undici: up to ${stats.maxInFlight} requests in the handlers at once`);

  // The rest of the app through the same client.
  const json = async (options) => {
    const response = await client.request(options);
    return { status: response.statusCode, headers: response.headers, body: await response.body.json() };
  };
  const user = await json({ path: '/users/caf%C3%A9?tag=a&tag=b', method: 'GET' });
  assert.deepEqual(user.body, { id: 'café', query: { tag: ['a', 'b'] }, httpVersion: '1.1' });
  const echo = await json({ path: '/echo', method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: [1, 2] }) });
  assert.deepEqual(echo.body, { got: { a: [1, 2] }, contentType: 'application/json' });
  const data = randomBytes(10 * 1024 * 1024);
  const upload = await json({ path: '/sha256', method: 'POST', body: data });
  assert.deepEqual(upload.body, { size: data.length, sha256: sha256(data), chunked: false, expect: null });
  const missing = await client.request({ path: '/no/such/path', method: 'GET' });
  assert.equal(missing.statusCode, 404);
  assert.match(await missing.body.text(), /ERR_HTTP_NOT_FOUND/);
  const redirect = await client.request({ path: '/redirect', method: 'GET' });
  await redirect.body.dump();
  assert.equal(redirect.statusCode, 302);
  assert.equal(redirect.headers.location, '/users/42?from=redirect');

  // The streamed response, piece by piece.
  const streamed = await client.request({ path: '/stream', method: 'GET' });
  assert.equal(streamed.headers['transfer-encoding'], 'chunked');
  const arrivals = [];
  const started = Date.now();
  for await (const piece of streamed.body) arrivals.push({ ms: Date.now() - started, text: piece.toString() });
  assert.equal(arrivals.map((a) => a.text).join(''), STREAM_TEXT);
  assert.ok(arrivals.length >= 3, `${arrivals.length} piece(s)`);
  assert.ok(arrivals.at(-1).ms - arrivals[0].ms >= (STREAM_PIECES - 2) * STREAM_GAP_MS, JSON.stringify(arrivals));
});
