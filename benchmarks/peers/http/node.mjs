// node:http as an HTTP benchmark server of the suite (contract:
// ../../SCENARIOS.md, "HTTP"): Node's own HTTP/1.1 server, no framework,
// routing by hand the way a small service without dependencies does.
//
//   PORT=0 STATIC_DIR=/tmp/files node benchmarks/peers/http/node.mjs
//
// Settings a competent user would choose for a keep-alive benchmark:
//   keepAliveTimeout 10 min   the default 5 s would close a connection idle
//                             between the runner's phases; nothing closes
//                             while requests flow, either way.
//   headersTimeout/requestTimeout  defaults (60 s / 300 s), far above any request here.
//   maxRequestsPerSocket 0    the default: unlimited.
//   noDelay                   the default (on).
// Answers: every response carries Content-Length (set explicitly, so Node
// never falls back to chunked encoding). `/json` serializes per request with
// JSON.stringify. `/echo` collects the body (1 MiB limit, else 413) and sends
// it back. `/static/<name>` stats the file and streams it from disk with
// fs.createReadStream (64 KiB reads) piped into the response: what
// serve-static / send do under Express, without their extra headers.
//
// Prints `LISTENING <port>` once listening; SIGTERM closes and exits 0.
import { createReadStream, stat } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BODY_LIMIT, HELLO, announce, onStop, portFromEnv, safeFileName, staticDirFromEnv } from './common.mjs';

const port = portFromEnv();
const staticDir = staticDirFromEnv();
const helloLength = String(Buffer.byteLength(HELLO));

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function notFound(res) {
  send(res, 404, 'text/plain', 'Not Found');
}

function serveFile(res, name) {
  if (!safeFileName(name)) return notFound(res);
  const file = path.join(staticDir, name);
  stat(file, (err, st) => {
    if (err || !st.isFile()) return notFound(res);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': st.size });
    const stream = createReadStream(file);
    stream.on('error', () => res.destroy());
    stream.pipe(res);
  });
}

function echo(req, res) {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > BODY_LIMIT) {
    send(res, 413, 'text/plain', 'Payload Too Large');
    req.resume();
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > BODY_LIMIT) {
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': body.length });
    res.end(body);
  });
}

const server = http.createServer((req, res) => {
  const url = req.url;
  const query = url.indexOf('?');
  const pathname = query < 0 ? url : url.slice(0, query);
  if (req.method === 'GET') {
    if (pathname === '/hello') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': helloLength });
      res.end(HELLO);
      return;
    }
    if (pathname === '/json') return send(res, 200, 'application/json', JSON.stringify({ message: HELLO }));
    if (pathname.startsWith('/user/')) {
      const id = pathname.slice('/user/'.length);
      if (id && !id.includes('/')) return send(res, 200, 'text/plain', id);
    }
    if (pathname.startsWith('/static/')) return serveFile(res, pathname.slice('/static/'.length));
  } else if (req.method === 'POST' && pathname === '/echo') {
    return echo(req, res);
  }
  notFound(res);
});
server.keepAliveTimeout = 10 * 60_000;

server.listen(port, '127.0.0.1', () => announce(server.address().port));
onStop(() => {
  server.close();
  server.closeAllConnections();
});
