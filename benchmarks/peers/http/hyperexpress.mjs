// HyperExpress as an HTTP benchmark server of the suite (contract:
// ../../SCENARIOS.md, "HTTP"): uWebSockets.js with an Express-like API.
// hyper-express 6.18.0, pinned in ../../package.json. Its releases depend on
// uWebSockets.js by a GitHub tag, which cannot be installed here; the
// package.json aliases `uWebSockets.js` to the registry copy the uws peer
// uses (@trufflesuite/uws-js-unofficial 20.30.0-unofficial.0) and overrides
// HyperExpress's dependency with it. (HyperExpress 7 needs a newer
// uWebSockets.js and Node 22.) Like the uws peer, it refuses to run on that
// package's JavaScript fallback.
//
//   PORT=0 STATIC_DIR=/tmp/files node benchmarks/peers/http/hyperexpress.mjs
//
// Single-threaded (uWebSockets.js runs on Node's main thread). Settings a
// competent user would choose:
//   fast_buffers true        Buffer.allocUnsafe for bodies (documented as faster).
//   max_body_length 1 MiB    (the default 250 KiB would do for the 64 KiB echo; written out).
//   auto_close false         this script closes the server on SIGTERM itself.
// HyperExpress corks every response itself (sync handlers run inside uWS's
// cork; async ones re-enter through res.cork). /json uses res.json()
// (JSON.stringify per request); /echo awaits req.buffer(); /static/<name>
// uses res.file(), HyperExpress's way of serving files: an in-memory cache
// (a LiveFile per path, loaded on first use and reloaded by fs.watch on
// change), which its documentation recommends for small files. The first
// request for a file waits for it to load, and uWebSockets.js closes a
// connection that sends a pipelined request while an answer is pending (it
// allows pipelining of synchronous answers only), so the server requests
// every file of STATIC_DIR from itself once before it announces that it
// listens: the cache is warm, and every answer is synchronous, as it would
// be in a service that has been running for a while.
//
// Prints `LISTENING <port>` once listening; SIGTERM closes and exits 0.
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BODY_LIMIT, HELLO, announce, onStop, portFromEnv, safeFileName, staticDirFromEnv } from './common.mjs';

const require = createRequire(import.meta.url);
const HyperExpress = require('hyper-express');
const uWS = require('uWebSockets.js');
if (!Object.keys(require.cache).some((file) => file.includes('uWebSockets.js') && file.endsWith('.node'))) {
  console.error('hyperexpress: no native uWebSockets.js binary fits this platform and Node ABI; refusing to benchmark the JavaScript fallback');
  process.exit(2);
}

const port = portFromEnv();
const staticDir = staticDirFromEnv();
const server = new HyperExpress.Server({ fast_buffers: true, max_body_length: BODY_LIMIT, auto_close: false });

server.get('/hello', (req, res) => {
  res.type('text/plain').send(HELLO);
});

server.get('/json', (req, res) => {
  res.json({ message: HELLO });
});

server.get('/user/:id', (req, res) => {
  res.type('text/plain').send(req.path_parameters.id);
});

server.post('/echo', async (req, res) => {
  const body = await req.buffer();
  res.type('application/octet-stream').send(body);
});

server.get('/static/:name', (req, res) => {
  const name = req.path_parameters.name;
  if (!safeFileName(name)) return res.status(404).type('text/plain').send('Not Found');
  res.type('application/octet-stream').file(path.join(staticDir, name));
});

const listenSocket = await server.listen(port, '127.0.0.1');
const actualPort = uWS.us_socket_local_port(listenSocket);
for (const name of readdirSync(staticDir).filter(safeFileName)) {
  const res = await fetch(`http://127.0.0.1:${actualPort}/static/${name}`);
  await res.arrayBuffer();
  if (res.status !== 200) console.error(`hyperexpress: warming /static/${name} answered ${res.status}`);
}
announce(actualPort);
onStop(() => server.close());
