// SockJS as a benchmark server of the suite (contract: ../SCENARIOS.md,
// `sockjs` framing): sockjs 0.3.24 (the Node server, on faye-websocket),
// pinned in ../package.json.
//
//   PORT=0 node benchmarks/peers/sockjs.mjs
//
// Single-threaded (Node's main thread). Three SockJS servers, with the
// prefixes /echo, /room and /channels, installed on one http server; the
// load generator uses their WebSocket transport
// (/<prefix>/<server>/<session>/websocket). Settings:
//   log: a no-op              SockJS logs every request to stdout by default,
//                             and stdout carries only the LISTENING line.
//   heartbeat_delay 25 s      the default: an `h` frame after 25 s of quiet.
//   faye_server_options { maxLength: 16 MiB }  largest message, as the other
//                             servers (faye-websocket's default is 64 MiB).
// Compression: faye-websocket negotiates no extension unless given one, so
// it is off. SockJS has no idle timeout on WebSocket sessions and no cap on a
// connection's send buffer.
// SockJS has no rooms: /room and /channels keep Sets of connections and call
// conn.write() for each member, as SockJS's own broadcast examples do.
//
// Prints `LISTENING <port>` on stdout once listening; SIGTERM (or SIGINT)
// closes the server and exits 0.
import http from 'node:http';
import sockjs from 'sockjs';

const MiB = 1024 * 1024;
const JOIN = 'join:';

const port = process.env.PORT === undefined || process.env.PORT === '' ? 0 : Number(process.env.PORT);

const options = {
  log: () => {},
  heartbeat_delay: 25_000,
  faye_server_options: { maxLength: 16 * MiB },
};

const echo = sockjs.createServer(options);
echo.on('connection', (conn) => {
  conn.on('data', (message) => {
    conn.write(message);
  });
});

const room = new Set();
const roomServer = sockjs.createServer(options);
roomServer.on('connection', (conn) => {
  room.add(conn);
  conn.on('close', () => room.delete(conn));
  conn.on('data', (message) => {
    for (const member of room) member.write(message);
  });
});

/** channel name -> Set of its connections */
const channels = new Map();
const channelsServer = sockjs.createServer(options);
channelsServer.on('connection', (conn) => {
  let members = null;
  conn.on('data', (message) => {
    if (members !== null) {
      conn.write(message);
      for (const member of members) if (member !== conn) member.write(message);
      return;
    }
    if (!message.startsWith(JOIN)) {
      conn.close(1008, 'join:<channel> first');
      return;
    }
    const channel = message.slice(JOIN.length);
    members = channels.get(channel);
    if (members === undefined) channels.set(channel, (members = new Set()));
    members.add(conn);
    conn.write('joined');
    conn.on('close', () => {
      members.delete(conn);
      if (members.size === 0 && channels.get(channel) === members) channels.delete(channel);
    });
  });
});

const server = http.createServer();
echo.installHandlers(server, { prefix: '/echo' });
roomServer.installHandlers(server, { prefix: '/room' });
channelsServer.installHandlers(server, { prefix: '/channels' });

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});

function stop() {
  server.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
