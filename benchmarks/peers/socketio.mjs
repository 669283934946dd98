// Socket.IO as a benchmark server of the suite (contract: ../SCENARIOS.md,
// `socketio` framing): socket.io 4.8.4 (Engine.IO 6.6), on ws 8.23.0 with
// bufferutil 4.1.0, all pinned in ../package.json.
//
//   PORT=0 node benchmarks/peers/socketio.mjs
//
// Single-threaded (Node's main thread). Namespaces /echo, /room and
// /channels; a message is the event `m` with the payload as its one argument.
// Settings (the tips of Socket.IO's "Performance tuning" page included):
//   transports ['websocket']  the load generator speaks WebSocket only; no
//                             HTTP long-polling sessions to keep.
//   perMessageDeflate false   SCENARIOS.md: compression off (Engine.IO's
//                             default, written out).
//   wsEngine: ws's WebSocketServer from the pinned ws, so that Socket.IO runs
//                             on the same ws (and bufferutil) as the ws peer
//                             rather than on the copy Engine.IO would nest.
//   pingInterval 25 s, pingTimeout 60 s  the default interval; a timeout
//                             generous enough that a saturated run never
//                             closes a connection for a late pong.
//   maxHttpBufferSize 16 MiB  largest message (default 1 MB), as the others.
//   serveClient false         no client bundle to serve.
//   the initial HTTP request is dropped once a connection is established
//                             (`rawSocket.request = null`), as the tuning page
//                             advises to save memory per connection.
// Endpoints: /echo emits each message back; /room joins every socket to the
// room `room` and sends each message to it with nsp.to('room').emit (the
// sender included); /channels takes `join:<ch>` (socket.join, answer
// `joined`), then emits each message back to the sender and to the channel
// with socket.to(ch).emit (the sender excluded); /publish (cross-node)
// joins nothing and sends each message to the room `room` of /room, as
// /room does.
//
// Scale-out (the cross-node scenario): with REDIS_URL set, the namespaces
// use a Redis adapter of @socket.io/redis-adapter 8.3.0 on node-redis 4.7.1
// (the client its tests run against, and the one its sharded adapter
// needs), a publishing and a subscribing connection, both connected before
// it listens. SOCKETIO_ADAPTER picks which:
//   redis (default)  createAdapter: classic pub/sub; every broadcast goes to
//                    every node (PUBLISH on the namespace's channel, each node
//                    PSUBSCRIBEs to all of its rooms).
//   sharded          createShardedAdapter: sharded pub/sub (SPUBLISH,
//                    SSUBSCRIBE, Redis 7), subscriptionMode 'dynamic' (its
//                    default): a channel per public room, subscribed by the
//                    nodes that have members in it.
//   REDIS_PREFIX     the adapter's key prefix (default `socket.io`).
//
// Prints `LISTENING <port>` on stdout once listening; SIGTERM (or SIGINT)
// closes every connection and exits 0.
import http from 'node:http';
import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter';
import { createClient } from 'redis';
import { Server } from 'socket.io';
import { WebSocketServer } from 'ws';

const MiB = 1024 * 1024;
const ROOM = 'room';
const JOIN = 'join:';
const EVENT = 'm';

const port = process.env.PORT === undefined || process.env.PORT === '' ? 0 : Number(process.env.PORT);

const httpServer = http.createServer();
const io = new Server(httpServer, {
  transports: ['websocket'],
  perMessageDeflate: false,
  wsEngine: WebSocketServer,
  pingInterval: 25_000,
  pingTimeout: 60_000,
  maxHttpBufferSize: 16 * MiB,
  serveClient: false,
});

const redisClients = [];
if (process.env.REDIS_URL) {
  const kind = process.env.SOCKETIO_ADAPTER || 'redis';
  const key = process.env.REDIS_PREFIX || 'socket.io';
  const pubClient = createClient({ url: process.env.REDIS_URL });
  const subClient = pubClient.duplicate();
  for (const client of [pubClient, subClient]) {
    client.on('error', (err) => console.error(`redis: ${err.message}`));
    redisClients.push(client);
  }
  await Promise.all([pubClient.connect(), subClient.connect()]);
  if (kind === 'redis') io.adapter(createAdapter(pubClient, subClient, { key }));
  else if (kind === 'sharded') io.adapter(createShardedAdapter(pubClient, subClient, { channelPrefix: key }));
  else {
    console.error(`SOCKETIO_ADAPTER must be redis or sharded, got ${JSON.stringify(kind)}`);
    process.exit(2);
  }
}

io.engine.on('connection', (rawSocket) => {
  rawSocket.request = null;
});

io.of('/echo').on('connection', (socket) => {
  socket.on(EVENT, (data) => {
    socket.emit(EVENT, data);
  });
});

const roomNsp = io.of('/room');
roomNsp.on('connection', (socket) => {
  socket.join(ROOM);
  socket.on(EVENT, (data) => {
    roomNsp.to(ROOM).emit(EVENT, data);
  });
});

// Publishers of the cross-node scenario: their messages go to /room's room,
// on this node and (through the adapter) on every other one.
io.of('/publish').on('connection', (socket) => {
  socket.on(EVENT, (data) => {
    roomNsp.to(ROOM).emit(EVENT, data);
  });
});

io.of('/channels').on('connection', (socket) => {
  socket.on(EVENT, (data) => {
    const channel = socket.data.channel;
    if (channel !== undefined) {
      socket.emit(EVENT, data);
      socket.to(channel).emit(EVENT, data);
      return;
    }
    if (typeof data !== 'string' || !data.startsWith(JOIN)) {
      socket.disconnect(true);
      return;
    }
    socket.data.channel = data.slice(JOIN.length);
    socket.join(socket.data.channel);
    socket.emit(EVENT, 'joined');
  });
});

httpServer.listen(port, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${httpServer.address().port}\n`);
});

function stop() {
  io.close();
  for (const client of redisClients) client.disconnect().catch(() => {});
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
