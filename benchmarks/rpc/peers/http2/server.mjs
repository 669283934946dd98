// Node's `http2` module as an RPC peer (contract: ../../ADAPTERS.md):
// cleartext HTTP/2 (h2c, prior knowledge), one process, Node's main thread.
//
//   PORT=0 node benchmarks/rpc/peers/http2/server.mjs
//
// The same routes as the http peer (../http/server.mjs), each call a stream:
//   POST /tiny     body read whole, sent back.
//   GET  /fast     `:status 200` with END_STREAM on the HEADERS frame, no body:
//                  HTTP/2's smallest response.
//   POST /upload   body read into one Buffer; reply its length.
//   POST /file     body consumed as a stream and counted; reply the count.
//   GET  /many?n=N N writes of the 16-byte datum (DATA frames) on the stream.
//   GET  /count    one-way messages received: always 0 (HTTP/2 has none).
// Heartbeat: HTTP/2 PING frames are answered by nghttp2 inside Node, with no
// JavaScript involved.
// Settings: initialWindowSize 1 MiB per stream and a 16 MiB connection window
// (Node's defaults, 64 KiB for both, throttle megabyte uploads with a
// WINDOW_UPDATE round trip per 64 KiB); maxSessionMemory 64 MB so that
// 100 streams in flight are never refused; maxConcurrentStreams left at
// Node's default (2^32 − 1).
import http2 from 'node:http2';
import { FAST_CODE, MiB, TINY } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';

const server = http2.createServer({ settings: { initialWindowSize: MiB }, maxSessionMemory: 64 });
const sessions = new Set();

server.on('session', (session) => {
  sessions.add(session);
  session.on('close', () => sessions.delete(session));
  session.on('error', () => {});
  session.setLocalWindowSize(16 * MiB);
});
server.on('connection', (socket) => socket.setNoDelay(true));

function readAll(stream, done) {
  const chunks = [];
  stream.on('data', (c) => chunks.push(c));
  stream.on('end', () => done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
}

function reply(stream, body, type = 'text/plain') {
  if (stream.destroyed) return;
  stream.respond({ ':status': 200, 'content-type': type, 'content-length': body.length });
  stream.end(body);
}

server.on('stream', (stream, headers) => {
  stream.on('error', () => {});
  const url = headers[':path'];
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  switch (path) {
    case '/tiny':
      readAll(stream, (body) => reply(stream, body, 'application/json'));
      return;
    case '/fast':
      stream.resume();
      stream.respond({ ':status': FAST_CODE }, { endStream: true });
      return;
    case '/upload':
      readAll(stream, (body) => reply(stream, String(body.length)));
      return;
    case '/file': {
      let n = 0;
      stream.on('data', (c) => (n += c.length));
      stream.on('end', () => reply(stream, String(n)));
      return;
    }
    case '/many': {
      stream.resume();
      const n = Number(new URLSearchParams(url.slice(q + 1)).get('n')) || 0;
      stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
      for (let i = 0; i < n; i++) stream.write(TINY);
      stream.end();
      return;
    }
    case '/count':
      stream.resume();
      reply(stream, String(received.notify));
      return;
    default:
      stream.resume();
      stream.respond({ ':status': 404 }, { endStream: true });
  }
});

server.listen(listenPort(), HOST, () => {
  serve(server.address().port, () => {
    for (const s of sessions) s.destroy();
    server.close();
  });
});
