// Interop: the echo example against the Python `websockets` client
// (tests/interop/python_client.py), once plain and once with COMPRESSION=1.
//
// Run: node --test tests/interop/
// Env: SB_ECHO_SERVER (server script, default examples/echo/server.mjs),
//      SB_CACHE (where scripts/setup-python.sh keeps the venv).

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureVenv } from './python-venv.mjs';
import { describeExit, repoRoot, runProcess, serverLabel, startServer, stopAll } from './start-server.mjs';

// The client bounds itself at 60 s; this is the backstop for a hung process.
const CLIENT_TIMEOUT_MS = 90_000;
const clientScript = path.join(repoRoot, 'tests', 'interop', 'python_client.py');

const RUNS = [
  { name: 'plain', env: { COMPRESSION: '0' }, compression: 'off' },
  { name: 'compression', env: { COMPRESSION: '1' }, compression: 'on' },
];

describe(`python websockets client against ${serverLabel()}`, () => {
  let venv;
  before(async () => {
    venv = await ensureVenv();
  }, { timeout: 11 * 60_000 });
  after(stopAll);

  for (const run of RUNS) {
    test(`${run.name} (COMPRESSION=${run.env.COMPRESSION})`, { timeout: 3 * 60_000 }, async (t) => {
      const server = await startServer({ env: run.env });
      t.after(() => server.stop());

      const result = await runProcess(venv.python, [clientScript, server.url, `--compression=${run.compression}`], {
        timeoutMs: CLIENT_TIMEOUT_MS,
      });
      t.diagnostic(`${server.url}: ${describeExit(result)} in ${result.durationMs} ms`);
      for (const line of result.stdout.trim().split('\n')) t.diagnostic(line);

      const context = `python client output:\n${result.output}\n--- server output:\n${server.output()}`;
      assert.equal(result.timedOut, false, `python client still running after ${CLIENT_TIMEOUT_MS} ms\n${context}`);
      assert.equal(result.code, 0, `python client failed (${describeExit(result)})\n${context}`);
      assert.ok(server.running(), `echo server exited during the run\n${context}`);
    });
  }
});
