// RPC example server: the Switchboard protocol on a TCP port, a Unix socket
// and a WebSocket route, with the handlers (app.mjs) in worker threads.
//
//   npm run build                        once
//   node examples/rpc/server.mjs         then, in another terminal:
//   node examples/rpc/client.mjs         (tcp://127.0.0.1:8081 by default)
//   node examples/rpc/client.mjs unix:/tmp/switchboard-rpc-example.sock
//   node examples/rpc/client.mjs ws://127.0.0.1:8080/rpc
//   open http://127.0.0.1:8080/          the same from a browser page
//
// Environment: PORT (HTTP and WebSocket; default 8080, 0 = any free port),
// RPC_PORT (the protocol over TCP; default PORT + 1, or any free port when
// PORT is 0), SOCKET (the Unix socket; default
// $TMPDIR/switchboard-rpc-example.sock), WORKERS (worker threads, default
// 2), LOG=1 (print every call). Prints the addresses once listening;
// Ctrl-C (SIGINT) or SIGTERM closes gracefully: clients get a GO_AWAY and
// their calls in flight finish.
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Server } from 'switchboard';

const port = Number(process.env.PORT ?? 8080);
const rpcPort = Number(process.env.RPC_PORT ?? (port === 0 ? 0 : port + 1));
const socket = process.env.SOCKET ?? path.join(os.tmpdir(), 'switchboard-rpc-example.sock');
const workers = Number(process.env.WORKERS ?? 2);

const server = new Server({
  app: new URL('./app.mjs', import.meta.url),
  workers,
  rpc: {
    // Heartbeats every 15 s; a client silent for 30 s is cut off.
    heartbeatInterval: 15,
    // Credit per stream a client sends (default 1 MiB): what a slow
    // handler buffers at most, per stream.
    initialWindow: 256 * 1024,
  },
});
server.on('handlerError', (error, info) => console.error(`handler error (worker ${info.worker}, ${info.handler}):`, error));

let addresses;
try {
  addresses = await server.listen([
    { host: '127.0.0.1', port: rpcPort, protocol: 'rpc' },
    { path: socket, protocol: 'rpc' },
    { host: '127.0.0.1', port },
  ]);
} catch (error) {
  console.error(`RPC example: cannot listen: ${error.message}`);
  process.exit(1);
}
const [tcp, , http] = addresses;
console.log(`RPC example server (${workers} workers):`);
console.log(`  tcp://127.0.0.1:${tcp.port}`);
console.log(`  unix:${socket}`);
console.log(`  ws://127.0.0.1:${http.port}/rpc`);
console.log(`  http://127.0.0.1:${http.port}/ (the browser page)`);

let stopping = false;
async function stop(signal) {
  if (stopping) process.exit(130); // a second Ctrl-C: do not wait
  stopping = true;
  console.log(`${signal}: closing`);
  await server.close({ drainTimeout: 2000 });
  rmSync(socket, { force: true });
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
