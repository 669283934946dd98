// Switchboard, the server under test, as a benchmark server of the suite
// (contract: ../SCENARIOS.md). The workspace package `switchboard` (this
// repository's packages/server, built), public API only; the endpoints are in
// switchboard-app.mjs, loaded in every worker thread.
//
//   PORT=0 WORKERS=1 IO_THREADS=1 node benchmarks/peers/switchboard.mjs
//
// Environment:
//   PORT        port on 127.0.0.1 (0 = any free port; default 0).
//   WORKERS     worker threads running handlers (default 1).
//   IO_THREADS  native I/O threads (default 1).
//   IO_SCHEDULING  the I/O threads' `ioThreadScheduling` (default: the
//               server's, 'batch'); 'normal' for A/B runs.
//   SWITCHBOARD_TRANSPORT  'sockjs': the endpoints are SockJS services
//               (switchboard-app.mjs), for the `sockjs` framing.
//   REDIS_URL   scale-out through Redis (the cross-node scenario): the
//               server's `broker` is { redis: REDIS_URL, ...BROKER_OPTIONS }.
//   BROKER_OPTIONS  more broker options, as JSON (default {}): the runner
//               passes each cross-node variant's `broker` field from
//               harness/servers.mjs, so a variant (history on, say) is one
//               entry there and nothing here.
// The defaults are 1 and 1, not the core count, because the runner gives
// each server one core (taskset): more threads would only contend for it.
//
// Server settings: maxConnections is lifted to 1 000 000 (the default is the
// open-file limit minus a reserve of up to 1,000 descriptors) so that no
// ws-idle run meets a cap the peers do not have. The route settings
// (idleTimeout 0, maxBackpressure 16 MiB, compression off) are in the app
// module.
//
// Prints `LISTENING <port>` on stdout once it accepts connections; SIGTERM
// (or SIGINT) closes it gracefully and exits 0.
import { Server } from 'switchboard';

function intFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${name} must be an integer >= 0, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

/** The `broker` option: none without REDIS_URL. */
function brokerFromEnv() {
  if (!process.env.REDIS_URL) return undefined;
  let more = {};
  try {
    more = JSON.parse(process.env.BROKER_OPTIONS || '{}');
  } catch (err) {
    console.error(`BROKER_OPTIONS must be JSON: ${err.message}`);
    process.exit(2);
  }
  return { redis: process.env.REDIS_URL, ...more };
}

const port = intFromEnv('PORT', 0);
const server = new Server({
  app: new URL('./switchboard-app.mjs', import.meta.url),
  workers: intFromEnv('WORKERS', 1),
  ioThreads: intFromEnv('IO_THREADS', 1),
  ioThreadScheduling: process.env.IO_SCHEDULING || undefined,
  maxConnections: 1_000_000,
  broker: brokerFromEnv(),
});

// A run that fails shows why in the server's output (the harness keeps its tail).
server.on('workerReplaced', ({ worker, code }) => console.error(`worker ${worker} replaced: ${code}`));
server.on('handlerError', (error) => console.error(`handler error: ${error?.message ?? error}`));

const [address] = await server.listen(port, '127.0.0.1');
process.stdout.write(`LISTENING ${address.port}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.close({ drainTimeout: 1000 });
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
