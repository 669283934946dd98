// `ws` as a benchmark server of the suite (contract: ../SCENARIOS.md): ws
// 8.23.0 with its native add-on bufferutil 4.1.0 (both pinned in
// ../package.json; bufferutil loads from the prebuilt binary it ships, and ws
// uses it to unmask client frames of 32 bytes and more).
//
//   PORT=0 node benchmarks/peers/ws.mjs
//
// Single-threaded (Node's main thread). One http server, one
// WebSocketServer in `noServer` mode, the upgrade dispatched on the path, as
// ws's README shows for several endpoints on one server. Settings:
//   perMessageDeflate false   SCENARIOS.md: compression off (it is ws's default
//                             for servers, written out).
//   maxPayload 16 MiB         as the other servers (ws's default is 100 MiB;
//                             16 MiB is plenty for a benchmark).
// ws has no idle timeout and no cap on a connection's send buffer, so there
// is nothing to turn off or raise there.
// ws has no channels: /room and /channels keep Sets of sockets and call
// ws.send() for each member, as a ws user does (ws's README broadcast
// example); nothing beyond ordinary usage (no pre-framed messages).
//
// Prints `LISTENING <port>` on stdout once listening; SIGTERM (or SIGINT)
// closes every connection and exits 0.
import http from 'node:http';
import { WebSocketServer } from 'ws';

const MiB = 1024 * 1024;
const JOIN = 'join:';

const port = process.env.PORT === undefined || process.env.PORT === '' ? 0 : Number(process.env.PORT);

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 16 * MiB });

function echo(ws) {
  ws.on('message', (data, isBinary) => {
    ws.send(data, { binary: isBinary });
  });
}

const room = new Set();
function roomMember(ws) {
  room.add(ws);
  ws.on('close', () => room.delete(ws));
  ws.on('message', (data, isBinary) => {
    for (const member of room) member.send(data, { binary: isBinary });
  });
}

/** channel name -> Set of its sockets */
const channels = new Map();
function channelMember(ws) {
  let members = null;
  ws.on('message', (data, isBinary) => {
    if (members !== null) {
      ws.send(data, { binary: isBinary });
      for (const member of members) if (member !== ws) member.send(data, { binary: isBinary });
      return;
    }
    const text = data.toString('latin1');
    if (!text.startsWith(JOIN)) {
      ws.close(1008, 'join:<channel> first');
      return;
    }
    const channel = text.slice(JOIN.length);
    members = channels.get(channel);
    if (members === undefined) channels.set(channel, (members = new Set()));
    members.add(ws);
    ws.send('joined');
    ws.on('close', () => {
      members.delete(ws);
      if (members.size === 0 && channels.get(channel) === members) channels.delete(channel);
    });
  });
}

const routes = new Map([
  ['/echo', echo],
  ['/room', roomMember],
  ['/channels', channelMember],
]);

const server = http.createServer((req, res) => {
  res.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket endpoints: /echo, /room, /channels\n');
});
server.on('upgrade', (req, socket, head) => {
  const q = req.url.indexOf('?');
  const route = routes.get(q === -1 ? req.url : req.url.slice(0, q));
  if (route === undefined) {
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, route);
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});

function stop() {
  server.close();
  for (const ws of wss.clients) ws.terminate();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
