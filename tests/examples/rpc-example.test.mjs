// The RPC example (examples/rpc) as a user runs it: server.mjs and
// client.mjs as child processes with plain `node`; the client goes over
// TCP, the Unix socket and WebSocket and must print a line per feature and
// exit 0. Then the browser page (browser.html, served by the example with
// the client's modules) runs its tour in a headless Chromium, and SIGINT
// stops the server cleanly.
//
// The browser part needs /usr/bin/chromium (scripts/setup-browser.sh
// installs it; the test runs it first) and the playwright-core devDependency.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { launchChromium } from '../helpers/chromium.mjs';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const socket = path.join(os.tmpdir(), `sb-rpc-example-${process.pid}.sock`);

let server;
let output = '';
let urls;

function serverLog() {
  return `\n--- server output ---\n${output.trim()}\n---------------------`;
}

before(async () => {
  server = spawn(process.execPath, ['examples/rpc/server.mjs'], {
    cwd: root,
    env: { ...process.env, PORT: '0', SOCKET: socket, WORKERS: '2' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  server.stderr.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 20_000;
  while (!/http:\/\/\S+\//.test(output)) {
    if (server.exitCode !== null) throw new Error(`the example server exited with ${server.exitCode}${serverLog()}`);
    if (Date.now() > deadline) throw new Error(`the example server did not start in 20 s${serverLog()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  urls = {
    tcp: /(tcp:\/\/\S+)/.exec(output)[1],
    unix: /(unix:\S+)/.exec(output)[1],
    ws: /(ws:\/\/\S+)/.exec(output)[1],
    http: /(http:\/\/\S+\/)/.exec(output)[1],
  };
});

after(() => {
  if (server?.exitCode === null) server.kill('SIGKILL');
});

/** Runs client.mjs against `url`: { code, stdout, stderr }. */
async function runClient(url) {
  const child = spawn(process.execPath, ['examples/rpc/client.mjs', url], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const transportName = { tcp: 'tcp', unix: 'unix', ws: 'websocket' };

for (const transport of ['tcp', 'unix', 'ws']) {
  test(`client.mjs over ${transport}: every feature, exit 0`, async () => {
    const { code, stdout, stderr } = await runClient(urls[transport]);
    const context = `\n--- client stdout ---\n${stdout}\n--- client stderr ---\n${stderr}${serverLog()}`;
    assert.equal(code, 0, `the client exited with ${code}${context}`);
    const expected = [
      new RegExp(`^connected to ${urls[transport].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: codec msgpack, welcomed as connection \\d+ on worker [01] \\(${transportName[transport]}\\)$`),
      /^call: greet → Hello, Ada!$/,
      /^fast reply: add\(40, 2\) → 42 \(fastReply\)$/,
      /^many responses: countdown\(3\) → 3, 2, 1, liftoff$/,
      /^error: divide\(1, 0\) → RemoteError E_DIVIDE_BY_ZERO "cannot divide 1 by zero" \{"dividend":1\}$/,
      /^one-way: notify\('log'\) ×3 → the server counted 3, last "third"$/,
      /^stream: upload 5 MiB → the server read 5242880 bytes, sha256 ok$/,
      /^files: uploadFiles → hello\.txt 11 bytes, pattern\.bin 300000 bytes, sha256 ok$/,
      /^file download: download\.bin 500000 bytes, sha256 ok$/,
      /^stream download: tail → line 1 \| line 2 \| line 3$/,
      /^server calls the client: whoAmI → the server heard "a Node v[\d.]+ client \(pid \d+\), asked by worker [01]"$/,
      /^expose\/wrap: math\.mul\(6, 7\) → 42, math\.hypot\(3, 4\) → 5$/,
      /^cancellation: slow\(5000\) aborted → ERR_CANCELLED, with timeoutMs 50 → ERR_TIMEOUT; the server saw 2 cancels$/,
      /^closed$/,
    ];
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, expected.length, `one line per feature${context}`);
    expected.forEach((pattern, i) => assert.match(lines[i], pattern, context));
    assert.equal(stderr, '', context);
  });
}

test('client.mjs without a server: a clear message and exit 1', async () => {
  const { code, stderr } = await runClient(`unix:${socket}.missing`);
  assert.equal(code, 1);
  assert.match(stderr, /^cannot connect to unix:\S+: ERR_DISCONNECTED .*is examples\/rpc\/server\.mjs running\?/);
});

test('browser.html: the tour in Chromium, files uploaded from the page', { timeout: 11 * 60_000 }, async () => {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (error) => problems.push(String(error)));
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    await page.goto(urls.http);
    await page.waitForFunction(() => window.results?.done === true, null, { timeout: 15_000 });
    const results = await page.evaluate(() => window.results);
    assert.deepEqual(results.failures, []);
    assert.deepEqual(problems, []);
    const text = results.lines.join('\n');
    for (const pattern of [
      /^server → page \(one-way\): welcome, connection \d+ on worker [01]$/m,
      /^call: Hello, browser!$/m,
      /^fast reply: add\(40, 2\) → 42 \(fastReply\)$/m,
      /^many responses: countdown\(3\) → 3, 2, 1, liftoff$/m,
      /^error: divide\(1, 0\) → E_DIVIDE_BY_ZERO/m,
      /^one-way: notify\('log'\) → the server has 1 log\(s\) from this page/m,
      /^stream: upload 1 MiB → 1048576 bytes, sha256 ok$/m,
      /^stream download: tail → line 1 \| line 2 \| line 3$/m,
      /^server calls the page: whoAmI → the server heard "a page in Chrome\/[\d.]+, asked by worker [01]"$/m,
      /^expose\/wrap: math\.mul\(6, 7\) → 42, math\.hypot\(3, 4\) → 5$/m,
      /^cancellation: slow\(5000\) aborted after 50 ms → ERR_CANCELLED$/m,
    ]) {
      assert.match(text, pattern);
    }
    assert.equal(await page.textContent('#state'), 'open');
    // Files picked in the page go up as a file stream each.
    await page.setInputFiles('#files', [
      { name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(3_000_000, 1) },
      { name: 'note.txt', mimeType: 'text/plain', buffer: Buffer.from('a note') },
    ]);
    await page.waitForFunction(() => window.results.lines.some((line) => line.startsWith('files:')), null, { timeout: 15_000 });
    const files = await page.evaluate(() => window.results.lines.find((line) => line.startsWith('files:')));
    assert.match(files, /^files: big\.bin: 3000000 bytes, sha256 [0-9a-f]{16}…; note\.txt: 6 bytes, sha256 [0-9a-f]{16}…$/);
    // A generated file in a response, read in the page.
    const downloaded = await page.evaluate(async () => {
      const response = await window.example.client.request('download', { size: 256 * 1024 });
      return { name: response.files[0].name, bytes: (await response.files[0].stream.readAll()).length };
    });
    assert.deepEqual(downloaded, { name: 'download.bin', bytes: 256 * 1024 });
  } finally {
    await browser.close();
  }
});

test('SIGINT closes the server: exit 0, the socket file removed', async () => {
  const exited = once(server, 'exit');
  server.kill('SIGINT');
  const [code] = await exited;
  assert.equal(code, 0, serverLog());
  assert.match(output, /SIGINT: closing/);
  assert.equal(existsSync(socket), false);
});
