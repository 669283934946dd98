// A GiB each way through the real client and the native server, with
// bounded memory: the server runs in its own process
// (tests/fixtures/rpc-large-server.mjs) so that its resident memory can be
// read from /proc/<pid>/status while the data passes. The data is generated
// on the fly on the sending side (tests/fixtures/rpc-data.mjs) and hashed on
// the receiving side as it arrives; nothing is written to disk.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { connect } from 'switchboard-client/node';
import { expectedSha256, generate, hashStream, memoryOf } from '../fixtures/rpc-data.mjs';

const GiB = 1024 ** 3;
const MB = 1024 * 1024;
/** Resident memory either process may gain while a GiB goes through. */
const MAX_GROWTH = 300 * MB;

async function startServerProcess(t) {
  const child = spawn(process.execPath, [new URL('../fixtures/rpc-large-server.mjs', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const [line] = await once(createInterface({ input: child.stdout }), 'line');
  return { child, ports: JSON.parse(line) };
}

/** Samples the VmRSS of both processes every 20 ms; `stop()` returns the peaks. */
function sampleMemory(pid) {
  const peaks = { server: 0, client: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const [server, client] = await Promise.all([memoryOf(pid), memoryOf()]);
      peaks.server = Math.max(peaks.server, server.rss);
      peaks.client = Math.max(peaks.client, client.rss);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peaks;
    },
  };
}

const mb = (bytes) => `${(bytes / MB).toFixed(0)} MB`;

test('1 GiB upload and 1 GiB download over TCP: SHA-256 intact, memory bounded on both sides', { timeout: 180_000 }, async (t) => {
  const { child, ports } = await startServerProcess(t);
  const client = await connect(`tcp://127.0.0.1:${ports.tcp}`, { reconnect: false });
  t.after(() => client.close({ timeoutMs: 0 }));
  // Warm both sides up (code paths, buffers), then take the baselines.
  const warm = 8 * MB;
  await client.call('upload', null, { files: [{ name: 'warm', size: warm, data: generate(warm, 1) }] });
  await hashStream((await client.request('download', { size: warm, seed: 1 })).files[0].stream);
  const base = { server: await memoryOf(child.pid), client: await memoryOf() };

  const expected = expectedSha256(GiB, 7);
  const sampler = sampleMemory(child.pid);
  let started = performance.now();
  const [uploaded] = await client.call('upload', null, { files: [{ name: 'upload.bin', size: GiB, data: generate(GiB, 7) }], timeoutMs: 150_000 });
  const uploadMs = performance.now() - started;
  assert.deepEqual(uploaded, { name: 'upload.bin', declared: GiB, size: GiB, sha256: expected });

  started = performance.now();
  const response = await client.request('download', { size: GiB, seed: 7 }, { timeoutMs: 150_000 });
  assert.deepEqual(response.value, { size: GiB, seed: 7 });
  const [file] = response.files;
  assert.equal(file.name, 'data-7.bin');
  assert.equal(file.size, GiB);
  assert.deepEqual(await hashStream(file.stream), { size: GiB, sha256: expected });
  const downloadMs = performance.now() - started;

  const peaks = await sampler.stop();
  const end = { server: await memoryOf(child.pid), client: await memoryOf() };
  const growth = {
    server: Math.max(peaks.server, end.server.hwm) - base.server.rss,
    client: Math.max(peaks.client, end.client.hwm) - base.client.rss,
  };
  t.diagnostic(
    `upload ${(GiB / MB / (uploadMs / 1000)).toFixed(0)} MB/s (${uploadMs.toFixed(0)} ms), ` +
      `download ${(GiB / MB / (downloadMs / 1000)).toFixed(0)} MB/s (${downloadMs.toFixed(0)} ms); ` +
      `RSS growth: server ${mb(growth.server)} (base ${mb(base.server.rss)}, peak ${mb(Math.max(peaks.server, end.server.hwm))}), ` +
      `client ${mb(growth.client)} (base ${mb(base.client.rss)}, peak ${mb(Math.max(peaks.client, end.client.hwm))})`,
  );
  assert.ok(growth.server < MAX_GROWTH, `the server process grew by ${mb(growth.server)}`);
  assert.ok(growth.client < MAX_GROWTH, `the client process grew by ${mb(growth.client)}`);

  await client.close();
  child.stdin.end();
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
});
