// qrpc as an RPC peer (contract: ../../ADAPTERS.md): qrpc 1.1.6, newline-
// delimited JSON over TCP, one process, Node's main thread.
//
//   PORT=0 node benchmarks/rpc/peers/qrpc/server.mjs
//
// Built as qrpc's README shows under "Under The Hood" (a QrpcServer fed by a
// net server), not with qrpc.createServer(), only so that it listens on
// 127.0.0.1 rather than on every interface. Nagle is turned off on every
// socket (qrpc's README: its logging benchmark needs setNoDelay).
// Handlers (the payload arrives as req.m, a Buffer included: qrpc carries a
// Buffer base64-encoded inside the JSON line and decodes it back into req.m,
// although its README says req.b):
//   tiny    next(null, req.m): the 16-byte string back.
//   fast    next(null, 200): the smallest reply qrpc has, a number in the JSON line.
//   upload  next(null, req.m.length): the Buffer (base64-decoded by qrpc) is whole in memory.
//   file    the same as upload: qrpc has no streams (README.md).
//   many    res.write() of the 16-byte string N − 1 times, then next() with the last:
//           qrpc's own multi-response call.
//   notify  addHandlerNoResponse: a one-way endpoint; counts.
//   count   next(null, count).
import net from 'node:net';
import qrpc from 'qrpc';
import { FAST_CODE, TINY_TEXT } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';

const server = new qrpc.QrpcServer();
server.addHandler('tiny', (req, res, next) => next(null, req.m));
server.addHandler('fast', (req, res, next) => next(null, FAST_CODE));
const byteLength = (m) => (Buffer.isBuffer(m) ? m.length : -1);
server.addHandler('upload', (req, res, next) => next(null, byteLength(req.m)));
server.addHandler('file', (req, res, next) => next(null, byteLength(req.m)));
server.addHandler('many', (req, res, next) => {
  const n = req.m;
  for (let i = 1; i < n; i++) res.write(TINY_TEXT);
  next(null, TINY_TEXT);
});
server.addHandlerNoResponse('notify', () => {
  received.notify++;
});
server.addHandler('count', (req, res, next) => next(null, received.notify));

const sockets = new Set();
const netServer = net.createServer({ noDelay: true }, (socket) => {
  socket.setNoDelay(true);
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  server.setSource(socket, socket);
});

netServer.listen(listenPort(), HOST, () => {
  serve(netServer.address().port, () => {
    for (const s of sockets) s.destroy();
    netServer.close();
  });
});
