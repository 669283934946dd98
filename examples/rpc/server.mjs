// RPC example server: the Switchboard protocol on a TCP port, over TLS, on
// a Unix socket and on a WebSocket route, with the handlers (app.mjs) in
// worker threads, and a live feed on a channel.
//
//   npm run build                        once
//   node examples/rpc/server.mjs         then, in another terminal:
//   node examples/rpc/client.mjs         (tcp://127.0.0.1:8081 by default)
//   node examples/rpc/client.mjs tls://127.0.0.1:8082
//   node examples/rpc/client.mjs unix:/tmp/switchboard-rpc-example.sock
//   node examples/rpc/client.mjs ws://127.0.0.1:8080/rpc
//   open http://127.0.0.1:8080/          the same from a browser page
//   npx tsc -p examples/rpc && node examples/rpc/build/typed-client.mjs
//                                        typed actions (typed-client.mts)
//
// TLS: the certificate for localhost, a second one chosen by SNI for
// rpc.example.test, and client certificates required, signed by the
// example's CA; certs.mjs makes a throwaway set with openssl at every
// start unless TLS_DIR names a directory with yours (the client reads the
// same directory).
//
// The feed: clients that call `feed.join` are subscribed to the channel
// `feed`; `feed.post` (any worker) and a clock here on the main thread
// publish to it, and each subscriber gets a one-way message `feed`.
//
// Environment: PORT (HTTP and WebSocket; default 8080, 0 = any free port),
// RPC_PORT (the protocol over TCP; default PORT + 1), TLS_PORT (over TLS;
// default PORT + 2; both any free port when PORT is 0), TLS_DIR (see
// above), SOCKET (the Unix socket; default
// $TMPDIR/switchboard-rpc-example.sock), WORKERS (worker threads, default
// 2), TICK_MS (the feed's clock, default 1000), LOG=1 (print every call).
// Prints the addresses once listening; Ctrl-C (SIGINT) or SIGTERM closes
// gracefully: clients get a GO_AWAY and their calls in flight finish.
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Server } from 'switchboard';
import { msgpackCodec } from 'switchboard-rpc';
import { SECOND_NAME, certificateDir, generateCertificates, readCertificates } from './certs.mjs';

const port = Number(process.env.PORT ?? 8080);
const rpcPort = Number(process.env.RPC_PORT ?? (port === 0 ? 0 : port + 1));
const tlsPort = Number(process.env.TLS_PORT ?? (port === 0 ? 0 : port + 2));
const socket = process.env.SOCKET ?? path.join(os.tmpdir(), 'switchboard-rpc-example.sock');
const workers = Number(process.env.WORKERS ?? 2);
const tickMs = Number(process.env.TICK_MS ?? 1000);

// The certificates: yours (TLS_DIR), or a throwaway set made now.
const certDir = certificateDir();
let certificates;
try {
  if (process.env.TLS_DIR === undefined) generateCertificates(certDir);
  certificates = readCertificates(certDir);
} catch (error) {
  console.error(`RPC example: no TLS listener: ${error.message}`);
}

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

const listeners = [
  { host: '127.0.0.1', port: rpcPort, protocol: 'rpc' },
  { path: socket, protocol: 'rpc' },
  { host: '127.0.0.1', port },
];
if (certificates) {
  listeners.push({
    host: '127.0.0.1',
    port: tlsPort,
    protocol: 'rpc',
    tls: {
      // The default certificate, for clients asking for localhost, for
      // 127.0.0.1 (no SNI) or for a name not listed in `sni`.
      ...certificates.server,
      sni: { [SECOND_NAME]: certificates.second },
      // Clients must present a certificate signed by this CA
      // (`rejectUnauthorized: false` would make it optional).
      ca: certificates.ca,
    },
  });
}

let addresses;
try {
  addresses = await server.listen(listeners);
} catch (error) {
  console.error(`RPC example: cannot listen: ${error.message}`);
  process.exit(1);
}
const [tcp, , http, tls] = addresses;
console.log(`RPC example server (${workers} workers):`);
console.log(`  tcp://127.0.0.1:${tcp.port}`);
if (tls) console.log(`  tls://127.0.0.1:${tls.port} (also as ${SECOND_NAME} by SNI; certificates in ${certDir})`);
console.log(`  unix:${socket}`);
console.log(`  ws://127.0.0.1:${http.port}/rpc`);
console.log(`  http://127.0.0.1:${http.port}/ (the browser page)`);

// The feed's clock: the main thread publishes too, like any worker. A
// publish goes out as published, so it is encoded for the subscribers'
// codec (`feed.join` takes msgpack clients only; app.mjs says why).
let tick = 0;
const clock = setInterval(() => {
  tick += 1;
  if (!server.hasSubscriptions('feed')) return; // nobody to encode for
  server.publish('feed', msgpackCodec.encode({ kind: 'tick', n: tick, time: new Date().toISOString() }));
}, tickMs);

let stopping = false;
async function stop(signal) {
  if (stopping) process.exit(130); // a second Ctrl-C: do not wait
  stopping = true;
  console.log(`${signal}: closing`);
  clearInterval(clock);
  await server.close({ drainTimeout: 2000 });
  rmSync(socket, { force: true });
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
