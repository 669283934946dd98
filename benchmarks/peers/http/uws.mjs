// uWebSockets.js as an HTTP benchmark server of the suite (contract:
// ../../SCENARIOS.md, "HTTP"), from @trufflesuite/uws-js-unofficial
// 20.30.0-unofficial.0 (see ../uws.mjs for why that package, and why this
// server refuses to run on its JavaScript fallback).
//
//   PORT=0 STATIC_DIR=/tmp/files node benchmarks/peers/http/uws.mjs
//
// Single-threaded (uWebSockets.js runs on Node's main thread). Written as a
// competent uWebSockets.js user writes it:
//   - every response is written inside res.cork() (a no-op inside a
//     synchronous handler, which uWS corks already; required for the answers
//     sent later: the echo's, the files' chunks), status and headers first;
//   - /user/:id reads the parameter with res.getParameter(0) (no URL parsing);
//   - /echo collects the body with res.onData into a Buffer of the declared
//     Content-Length (copying each chunk: uWS reuses the ArrayBuffer after
//     the callback), 1 MiB limit, else 413; res.onAborted set first, as uWS
//     requires of every response not sent synchronously;
//   - /static/<name>: uWS has no file serving, and it refuses "async
//     pipelining": a pipelined request that arrives while the previous
//     response is still pending closes the connection (uWS answers pipelined
//     requests only when each is answered synchronously). A file streamed
//     from disk is answered asynchronously, so the competent choice is a
//     cache: a file is read on its first request (readFileSync: one
//     page-cache read, once) and kept in memory, and the cache is dropped
//     when fs.watch reports a change in the folder; every request is then
//     answered synchronously with res.end(buffer) (uWS writes what the socket
//     takes and buffers the rest). HyperExpress's res.file() caches the same
//     way; node:http, fastify and hyper stream every request from disk.
//
// Prints `LISTENING <port>` once listening; SIGTERM closes and exits 0.
import { readFileSync, statSync, watch } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BODY_LIMIT, HELLO, announce, onStop, portFromEnv, safeFileName, staticDirFromEnv } from './common.mjs';

const require = createRequire(import.meta.url);
const PACKAGE = '@trufflesuite/uws-js-unofficial';
const uWS = require(PACKAGE);
if (!Object.keys(require.cache).some((file) => file.includes(PACKAGE) && file.endsWith('.node'))) {
  console.error(`uws: no native binary of ${PACKAGE} fits this platform and Node ABI; refusing to benchmark the JavaScript fallback`);
  process.exit(2);
}

const port = portFromEnv();
const staticDir = staticDirFromEnv();
const app = uWS.App();

function notFound(res) {
  res.cork(() => res.writeStatus('404 Not Found').writeHeader('Content-Type', 'text/plain').end('Not Found'));
}

app.get('/hello', (res) => {
  res.cork(() => res.writeHeader('Content-Type', 'text/plain').end(HELLO));
});

app.get('/json', (res) => {
  res.cork(() => res.writeHeader('Content-Type', 'application/json').end(JSON.stringify({ message: HELLO })));
});

app.get('/user/:id', (res, req) => {
  const id = req.getParameter(0);
  res.cork(() => res.writeHeader('Content-Type', 'text/plain').end(id));
});

app.post('/echo', (res, req) => {
  const declared = Number(req.getHeader('content-length'));
  if (!(declared <= BODY_LIMIT)) {
    res.cork(() => res.writeStatus('413 Payload Too Large').end('Payload Too Large', true));
    return;
  }
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const body = Buffer.allocUnsafe(declared);
  let offset = 0;
  res.onData((chunk, isLast) => {
    const bytes = new Uint8Array(chunk);
    if (offset + bytes.length > declared) {
      aborted = true;
      res.close();
      return;
    }
    body.set(bytes, offset);
    offset += bytes.length;
    if (isLast && !aborted) {
      res.cork(() => res.writeHeader('Content-Type', 'application/octet-stream').end(body.subarray(0, offset)));
    }
  });
});

// name → Buffer; emptied on any change in the folder.
const files = new Map();
watch(staticDir, () => files.clear());

function cachedFile(name) {
  let data = files.get(name);
  if (data === undefined) {
    const file = path.join(staticDir, name);
    try {
      data = statSync(file).isFile() ? readFileSync(file) : null;
    } catch {
      data = null;
    }
    if (data) files.set(name, data);
  }
  return data;
}

app.get('/static/:name', (res, req) => {
  const name = req.getParameter(0);
  const data = safeFileName(name) ? cachedFile(name) : null;
  if (!data) return notFound(res);
  // A body larger than the socket takes at once leaves the response waiting
  // on backpressure; uWS then requires an abort handler (without one it
  // terminates the process when 16 pipelined 1 MiB answers pile up).
  res.onAborted(() => {});
  res.cork(() => res.writeHeader('Content-Type', 'application/octet-stream').end(data));
});

app.any('/*', (res) => notFound(res));

app.listen('127.0.0.1', port, (listenSocket) => {
  if (!listenSocket) {
    console.error(`uws: cannot listen on 127.0.0.1:${port}`);
    process.exit(1);
  }
  announce(uWS.us_socket_local_port(listenSocket));
  onStop(() => {
    uWS.us_listen_socket_close(listenSocket);
    app.close();
  });
});
