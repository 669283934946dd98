// Switchboard, the server under test, as an HTTP benchmark server of the
// suite (contract: ../SCENARIOS.md, "HTTP"). The workspace package
// `switchboard` (this repository's packages/server, built), public API only;
// the routes are in switchboard-http-app.mjs, loaded in every worker thread.
//
//   PORT=0 STATIC_DIR=/tmp/files WORKERS=1 IO_THREADS=1 node benchmarks/peers/switchboard-http.mjs
//
// Environment:
//   PORT        port on 127.0.0.1 (0 = any free port; default 0).
//   STATIC_DIR  the folder `/static/` serves (required; the runner makes it).
//   WORKERS     worker threads running handlers (default 1).
//   IO_THREADS  native I/O threads (default 1).
//   IO_SCHEDULING  the I/O threads' `ioThreadScheduling` (default: the
//               server's, 'batch'); 'normal' for A/B runs.
// The defaults are 1 and 1, not the core count, because the runner gives
// each server one core (taskset): more threads would only contend for it.
// Keep-alive and pipelining are the server's defaults; no idle timeout is
// reached while a run goes on.
//
// Prints `LISTENING <port>` on stdout once it accepts connections; SIGTERM
// (or SIGINT) closes it gracefully and exits 0. When the server cannot start
// (an app module the build does not support, say), it prints why on stderr
// and exits 1: the runner records the run as failed with that output.
import { statSync } from 'node:fs';
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

const staticDir = process.env.STATIC_DIR;
try {
  if (!staticDir || !statSync(staticDir).isDirectory()) throw new Error('not a directory');
} catch (err) {
  console.error(`STATIC_DIR must name the folder of the static files (got ${JSON.stringify(staticDir)}: ${err.message})`);
  process.exit(2);
}

const port = intFromEnv('PORT', 0);
let server;
try {
  server = new Server({
    app: new URL('./switchboard-http-app.mjs', import.meta.url),
    workers: intFromEnv('WORKERS', 1),
    ioThreads: intFromEnv('IO_THREADS', 1),
  ioThreadScheduling: process.env.IO_SCHEDULING || undefined,
    ioThreadScheduling: process.env.IO_SCHEDULING || undefined,
  });
  // A run that fails shows why in the server's output (the harness keeps its tail).
  server.on('workerReplaced', ({ worker, code }) => console.error(`worker ${worker} replaced: ${code}`));
  server.on('handlerError', (error) => console.error(`handler error: ${error?.message ?? error}`));
  const [address] = await server.listen(port, '127.0.0.1');
  process.stdout.write(`LISTENING ${address.port}\n`);
} catch (err) {
  console.error(`switchboard-http: cannot start: ${err?.stack ?? err}`);
  process.exit(1);
}

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.close({ drainTimeout: 1000 });
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
