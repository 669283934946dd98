// Run by addon.test.mjs in a child process (a crash must not take the test
// runner down): loads the native addon several times in one thread and uses
// every copy. Prints one JSON line of results.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = path.resolve(here, '../../packages/server');
// napi-rs names the build `switchboard.<platform>-<arch>[-<abi>].node`.
const addonName = fs
  .readdirSync(path.join(pkg, 'native'))
  .find((n) => n.startsWith(`switchboard.${process.platform}-${process.arch}`) && n.endsWith('.node'));
const addonPath = path.join(pkg, 'native', addonName);
const out = {};

// 1. The package through two specifiers: the bare name and the file URL.
const viaName = await import('switchboard');
const viaUrl = await import(pathToFileURL(path.join(pkg, 'dist/esm/index.js')).href);
// A second instance of the module that loads the addon (query string).
const nativeA = await import(pathToFileURL(path.join(pkg, 'dist/esm/native.js')).href + '?copy=a');
const nativeB = await import(pathToFileURL(path.join(pkg, 'dist/esm/native.js')).href + '?copy=b');
out.sameServerClass = viaName.Server === viaUrl.Server;
out.nativeInstancesShareAddon = nativeA.native === nativeB.native;

// 2. createRequire twice, from two different base URLs.
const r1 = createRequire(import.meta.url);
const r2 = createRequire(pathToFileURL(path.join(os.tmpdir(), 'elsewhere.js')));
const first = r1(addonPath);
const second = r2(addonPath);
out.requireTwiceSame = first === second;

// 3. Drop it from the require cache and load it again: the addon's init runs
// a second time in this thread, on the same shared library.
delete r1.cache[addonPath];
const reinit = r2(addonPath);
out.reinitIsNewObject = reinit !== first;

// 4. A copy of the file at another path: a second, independent shared library.
const copyPath = path.join(os.tmpdir(), `sb-addon-copy-${process.pid}.node`);
fs.copyFileSync(addonPath, copyPath);
const copy = r1(copyPath);
fs.rmSync(copyPath, { force: true });

const routes = [{ path: '/', hasUpgradeHook: false }];
const handles = [first, reinit, copy].map((m) => m.ServerHandle.create({ routes, workers: 1, ioThreads: 1 }));
out.ids = handles.map((h) => h.id);
out.ports = handles.map((h) => h.listen('127.0.0.1', 0).port);
// The re-initialised exports share the library's registry of servers...
out.reinitOpensFirst = reinit.ServerHandle.open(handles[0].id).id === handles[0].id;
// ...while the copy has its own.
try {
  copy.ServerHandle.open(handles[1].id + 1000);
  out.copyOpenUnknown = 'opened';
} catch (e) {
  out.copyOpenUnknown = /ERR_SERVER_CLOSED/.test(e.message) ? 'ERR_SERVER_CLOSED' : e.message;
}

// 5. The public API still works after all that: a real round trip.
const { startServer, connect } = await import('../helpers/index.mjs');
const { server, url } = await startServer((s) => s.ws('/', { message: (ws, d, b) => ws.send(d, b) }));
const client = await connect(url);
client.send('still works');
while (client.received.length === 0) await new Promise((r) => setTimeout(r, 5));
out.echo = client.received[0].data.toString();
client.close();
await client.closed;
await server.close({ drainTimeout: 500 });
await Promise.all(handles.map((h) => h.close(0)));
out.done = true;
process.stdout.write(JSON.stringify(out) + '\n');
