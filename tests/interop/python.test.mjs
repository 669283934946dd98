// Interop: the echo example against the Python `websockets` client
// (tests/interop/python_client.py): plain, with COMPRESSION=1, and over
// wss:// (the example given TLS_CERT and TLS_KEY; certificates made with
// openssl for the run).
//
// Run: node --test tests/interop/
// Env: SB_ECHO_SERVER (server script, default examples/echo/server.mjs),
//      SB_CACHE (where scripts/setup-python.sh keeps the venv).

import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { certificateFactory } from '../helpers/certs.mjs';
import { ensureVenv } from './python-venv.mjs';
import { describeExit, repoRoot, runProcess, serverLabel, startServer, stopAll } from './start-server.mjs';

// The client bounds itself at 60 s; this is the backstop for a hung process.
const CLIENT_TIMEOUT_MS = 90_000;
const clientScript = path.join(repoRoot, 'tests', 'interop', 'python_client.py');

const certificates = certificateFactory();
const ca = certificates.makeCa('interop-ca');
const localhost = certificates.issue(ca, 'localhost');
const caPath = path.join(certificates.dir, 'interop-ca.pem');
writeFileSync(caPath, ca.cert);

const RUNS = [
  { name: 'plain', env: { COMPRESSION: '0' }, compression: 'off' },
  { name: 'compression', env: { COMPRESSION: '1' }, compression: 'on' },
  { name: 'tls', env: { COMPRESSION: '0', TLS_CERT: localhost.certPath, TLS_KEY: localhost.keyPath }, compression: 'off', tls: true },
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

      const args = [clientScript, server.url, `--compression=${run.compression}`];
      if (run.tls) {
        assert.match(server.url, /^wss:/, 'the example serves wss:// given TLS_CERT and TLS_KEY');
        args.push('--ca', caPath);
      }
      const result = await runProcess(venv.python, args, {
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
