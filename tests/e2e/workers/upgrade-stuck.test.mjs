// An upgrade waiting on a worker that dies is answered at once (503), not
// after `upgradeTimeout`; the replacement worker serves the next client.
import test from 'node:test';
import assert from 'node:assert/strict';
import { connect, nextMessage, startServer, upgradeStatus } from '../../helpers/index.mjs';

test('a stuck upgrade hook: the watchdog replaces the worker and the client gets 503 promptly', { timeout: 30_000 }, async (t) => {
  const { server, url } = await startServer(null, {
    app: new URL('../../fixtures/workers-stuck-upgrade-app.mjs', import.meta.url),
    workers: 1,
    watchdogTimeout: 1000,
    watchdogInterval: 200,
    upgradeTimeout: 20,
  });
  t.after(() => server.close({ drainTimeout: 500 }));
  const replaced = new Promise((resolve) => server.once('workerReplaced', resolve));
  const started = Date.now();
  const rejected = await upgradeStatus(`${url}/?stuck=1`);
  const waited = Date.now() - started;
  assert.equal(rejected.status, 503);
  assert.match(rejected.body, /ERR_UPGRADE_TIMEOUT/);
  assert.ok(waited < 10_000, `answered after ${waited} ms, long before upgradeTimeout (20 s)`);
  assert.equal((await replaced).code, 'ERR_WORKER_UNRESPONSIVE');
  const client = await connect(`${url}/`);
  client.send('still serving');
  assert.equal((await nextMessage(client)).data.toString(), 'still serving');
  client.close();
});
