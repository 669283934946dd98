// The RPC example (examples/rpc) as a user runs it: server.mjs and
// client.mjs as child processes with plain `node`; the client goes over
// TCP, TLS (the server's throwaway certificates: SNI, a required client
// certificate), the Unix socket and WebSocket and must print a line per
// feature, the channel's messages included, and exit 0. typed-client.mts
// is compiled with the repository's TypeScript (examples/rpc/tsconfig.json:
// its `@ts-expect-error` lines must stay errors) and run. Then the browser
// page (browser.html, served by the example with the client's modules) runs
// its tour in a headless Chromium, and SIGINT stops the server cleanly.
//
// Every child gets its own TMPDIR, where the server makes its certificates
// and the client reads them.
//
// The browser part needs /usr/bin/chromium (scripts/setup-browser.sh
// installs it; the test runs it first) and the playwright-core devDependency.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { launchChromium } from '../helpers/chromium.mjs';
import { startExample } from '../helpers/examples.mjs';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const socket = path.join(os.tmpdir(), `sb-rpc-example-${process.pid}.sock`);
const tmpdir = mkdtempSync(path.join(os.tmpdir(), 'sb-rpc-example-'));
const childEnv = { ...process.env, TMPDIR: tmpdir };
delete childEnv.TLS_DIR;

let example;
let server;
let urls;

function serverLog() {
  return example?.log() ?? '';
}

before(async () => {
  example = await startExample('examples/rpc/server.mjs', {
    // A fast clock, so that clients see a tick of the feed soon.
    env: { ...childEnv, PORT: '0', SOCKET: socket, WORKERS: '2', TICK_MS: '100' },
    inheritEnv: false,
    ready: /http:\/\/\S+\//,
  });
  server = example.child;
  const output = example.output();
  urls = {
    tcp: /(tcp:\/\/\S+)/.exec(output)[1],
    tls: /(tls:\/\/\S+)/.exec(output)?.[1],
    unix: /(unix:\S+)/.exec(output)[1],
    ws: /(ws:\/\/\S+)/.exec(output)[1],
    http: /(http:\/\/\S+\/)/.exec(output)[1],
  };
});

after(() => {
  if (server?.exitCode === null) server.kill('SIGKILL');
  rmSync(tmpdir, { recursive: true, force: true });
});

/** Runs `script` (client.mjs by default) against `url`: { code, stdout, stderr }. */
async function runClient(url, script = 'examples/rpc/client.mjs') {
  const child = spawn(process.execPath, [script, url], { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const transportName = { tcp: 'tcp', tls: 'tls', unix: 'unix', ws: 'websocket' };

for (const transport of ['tcp', 'tls', 'unix', 'ws']) {
  test(`client.mjs over ${transport}: every feature, exit 0`, async () => {
    assert.ok(urls[transport], `the server printed no ${transport} address${serverLog()}`);
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
      // Published by the action's worker, and by the server's clock on its main thread.
      /^channels: feed\.join, feed\.post → published to 1 subscriber\(s\); received "hello, feed" and the server's tick #\d+$/,
      ...(transport === 'tls'
        ? [
            /^tls: no SNI → CN=localhost, servername rpc\.example\.test → CN=rpc\.example\.test \(both verified against the example CA\); without a client certificate → refused \(ERR_[A-Z_]+\)$/,
            /^tls, server side: the handlers saw the client certificate CN=example-client, and the SNI name rpc\.example\.test$/,
          ]
        : []),
      /^closed$/,
    ];
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, expected.length, `one line per feature${context}`);
    expected.forEach((pattern, i) => assert.match(lines[i], pattern, context));
    assert.equal(stderr, '', context);
  });
}

test('typed-client.mts: compiles (its mistakes stay errors) and runs', async () => {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', 'examples/rpc'], { cwd: root, encoding: 'utf8' });
  assert.equal(compiled.status, 0, `tsc -p examples/rpc:\n${compiled.stdout}${compiled.stderr}`);
  const { code, stdout, stderr } = await runClient(urls.tcp, 'examples/rpc/build/typed-client.mjs');
  const context = `\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}${serverLog()}`;
  assert.equal(code, 0, `the typed client exited with ${code}${context}`);
  const expected = [
    /^typed: connected to tcp:\/\/\S+, welcomed as connection \d+ \(tcp\)$/,
    /^typed calls: greet → Hello, TypeScript!, add\(\[40, 2\]\) → 42, countdown\(3\) → 3, 2, 1, liftoff$/,
    /^typed errors and one-way: divide\(\[1, 0\]\) → E_DIVIDE_BY_ZERO; notify\(log\) → the server's last log "from TypeScript"$/,
    /^typed handler and wrap: whoAmI → "a typed client, asked by worker [01]"; math\.mean\(1, 2, 6\) → 3$/,
    /^typed channel: feed\.post → 1 subscriber\(s\); received "typed hello"$/,
    /^closed$/,
  ];
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, expected.length, context);
  expected.forEach((pattern, i) => assert.match(lines[i], pattern, context));
  assert.equal(stderr, '', context);
});

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
      /^channels: feed\.join, feed\.post → published to \d+ subscriber\(s\); "hello from the page 1" came back through the channel$/m,
    ]) {
      assert.match(text, pattern);
    }
    assert.equal(await page.textContent('#state'), 'open');
    // The server's clock reaches the page through the channel.
    await page.waitForFunction(() => /^tick #\d+ at /.test(document.getElementById('feed').textContent), null, { timeout: 5000 });
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
  assert.match(example.output(), /SIGINT: closing/);
  assert.equal(existsSync(socket), false);
});
