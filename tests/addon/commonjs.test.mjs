// The package's CommonJS entry: `require('switchboard')` from a .cjs file
// gives the same API as the ES module, and a server started through it works.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('require("switchboard") works from CommonJS', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-cjs-'));
  const script = path.join(dir, 'check.cjs');
  writeFileSync(
    script,
    `const sb = require(${JSON.stringify(path.join(root, 'packages', 'server'))});
const WebSocket = require(${JSON.stringify(path.join(root, 'node_modules', 'ws'))});
(async () => {
  const server = new sb.Server({ workers: 0 });
  server.ws('/', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
  await server.listen(0);
  const ws = new WebSocket('ws://127.0.0.1:' + server.port);
  const echoed = await new Promise((resolve, reject) => {
    ws.on('open', () => ws.send('from cjs'));
    ws.on('message', (d) => resolve(d.toString()));
    ws.on('error', reject);
  });
  ws.close();
  await server.close({ drainTimeout: 500 });
  console.log(JSON.stringify({ echoed, exports: Object.keys(sb).sort(), sent: sb.SendStatus.SENT }));
})();
`,
  );
  const result = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(result.status, 0, result.stderr);
  const out = JSON.parse(result.stdout.trim().split('\n').at(-1));
  assert.equal(out.echoed, 'from cjs');
  assert.equal(out.sent, 0);
  for (const name of ['Server', 'defineApp', 'SendStatus', 'UpgradeRejection', 'SwitchboardError', 'WebSocket', 'App']) {
    assert.ok(out.exports.includes(name), `missing export ${name}`);
  }
  assert.doesNotMatch(result.stderr, /ExperimentalWarning/, 'require(esm) should not warn on this Node');
});
