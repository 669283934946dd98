// Socket.IO acknowledgements as an RPC peer (contract: ../../ADAPTERS.md):
// socket.io 4.8.4 on ws 8.23.0 + bufferutil, WebSocket transport only, one
// process, Node's main thread. The same settings as the WebSocket suite's
// Socket.IO peer (../../../peers/socketio.mjs, which explains each):
// transports ['websocket'], perMessageDeflate off, ws's WebSocketServer as
// the engine, pingInterval 25 s / pingTimeout 60 s, maxHttpBufferSize 16 MiB
// (the default 1 MB refuses the 4 MiB payloads), no client bundle served.
//
//   PORT=0 node benchmarks/rpc/peers/socketio/server.mjs
//
// A call is an event with an acknowledgement callback (Socket.IO's
// request/response), on the default namespace:
//   tiny (string, ack)   ack(string): the 16-byte string back.
//   fast (ack)           ack(200): Socket.IO's smallest reply, an ack with a number.
//   upload (buf, ack)    ack(buf.length): the Buffer arrives whole (a binary
//                        attachment: one extra WebSocket frame per message).
//   file (buf, ack)      the same as upload: Socket.IO has no streams (README.md).
//   many (id, n)         n emits of `r` (id, 16-byte string) to the caller;
//                        Socket.IO has no multi-response ack, so the client
//                        counts the events that carry its call's id.
//   notify (string)      an emit without ack: one-way; counts.
//   count (ack)          ack(count).
import http from 'node:http';
import { Server } from 'socket.io';
import { WebSocketServer } from 'ws';
import { FAST_CODE, MAX_MESSAGE, TINY_TEXT } from '../../lib/wire.mjs';
import { HOST, listenPort, received, serve } from '../../lib/server.mjs';

const httpServer = http.createServer();
const io = new Server(httpServer, {
  transports: ['websocket'],
  perMessageDeflate: false,
  wsEngine: WebSocketServer,
  pingInterval: 25_000,
  pingTimeout: 60_000,
  maxHttpBufferSize: MAX_MESSAGE,
  serveClient: false,
});

io.engine.on('connection', (rawSocket) => {
  rawSocket.request = null;
});

io.on('connection', (socket) => {
  socket.on('tiny', (data, ack) => ack(data));
  socket.on('fast', (ack) => ack(FAST_CODE));
  socket.on('upload', (buf, ack) => ack(buf.length));
  socket.on('file', (buf, ack) => ack(buf.length));
  socket.on('many', (id, n) => {
    for (let i = 0; i < n; i++) socket.emit('r', id, TINY_TEXT);
  });
  socket.on('notify', () => {
    received.notify++;
  });
  socket.on('count', (ack) => ack(received.notify));
});

httpServer.listen(listenPort(), HOST, () => {
  serve(httpServer.address().port, () => {
    io.close();
  });
});
