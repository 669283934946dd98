// Node's `http` module as an RPC peer (contract: ../../ADAPTERS.md):
// HTTP/1.1, keep-alive, one process, Node's main thread.
//
//   PORT=0 node benchmarks/rpc/peers/http/server.mjs
//
// Each action is a path; the request body is the payload:
//   POST /tiny     the body (16 B) is read whole and sent back (content-length).
//   GET  /fast     no body either way: the status code 200 is the integer reply
//                  (HTTP's smallest response: a status line and content-length: 0).
//   POST /upload   the body is read into one Buffer (Buffer.concat, as an
//                  application that needs the whole payload does); the reply
//                  is its length in decimal.
//   POST /file     the body is consumed as a stream, chunk by chunk, and only
//                  counted (the /dev/null equivalent); the reply is the count.
//   GET  /many?n=N N writes of the 16-byte datum into a chunked response (Node
//                  corks the writes of one tick, so they leave in few segments).
//   GET  /count    the number of one-way messages received: always 0, HTTP has
//                  no one-way message (see README.md).
// Settings: keepAliveTimeout 60 s and no request/headers timeouts, so no
// connection closes during a run; noDelay (Nagle off, Node's default,
// written out). Pipelined requests (the client pipelines when it keeps
// several calls in flight on one connection) are answered in order, as
// HTTP/1.1 requires.
import http from 'node:http';
import { FAST_CODE, TINY } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';

function readAll(req, done) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
}

function reply(res, body, type = 'text/plain') {
  res.writeHead(200, { 'content-type': type, 'content-length': body.length });
  res.end(body);
}

const server = http.createServer({ keepAliveTimeout: 60_000, requestTimeout: 0, headersTimeout: 0, noDelay: true }, (req, res) => {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  switch (path) {
    case '/tiny':
      readAll(req, (body) => reply(res, body, 'application/json'));
      return;
    case '/fast':
      req.resume();
      res.writeHead(FAST_CODE, { 'content-length': 0 });
      res.end();
      return;
    case '/upload':
      readAll(req, (body) => reply(res, String(body.length)));
      return;
    case '/file': {
      let n = 0;
      req.on('data', (c) => (n += c.length));
      req.on('end', () => reply(res, String(n)));
      return;
    }
    case '/many': {
      req.resume();
      const n = Number(new URLSearchParams(url.slice(q + 1)).get('n')) || 0;
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < n; i++) res.write(TINY);
      res.end();
      return;
    }
    case '/count':
      req.resume();
      reply(res, String(received.notify));
      return;
    default:
      req.resume();
      res.writeHead(404, { 'content-length': 0 });
      res.end();
  }
});

server.listen(listenPort(), HOST, () => {
  serve(server.address().port, () => {
    server.closeAllConnections();
    server.close();
  });
});
