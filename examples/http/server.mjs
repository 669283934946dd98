// HTTP example: a REST API with routers, middleware, validation, sessions,
// signed cookies, uploads and server-sent events (see app.mjs).
//
//   npm run build && PORT=9004 node examples/http/server.mjs
//
// Environment: PORT (default 9004, 0 = any free port), WORKERS (worker
// threads, default 1: the notes and sessions live in a worker's memory),
// TLS_CERT and TLS_KEY (paths of PEM files): given both, HTTPS is served
// too, on TLS_PORT (default 9443, 0 = any free port). LOG=1 logs requests.
// Prints `http example listening on http://127.0.0.1:<port>/` (and the
// https:// address) once ready.
import os from 'node:os';
import { Server } from 'switchboard';
import { tlsFromEnv } from '../env.mjs';

const workers = process.env.WORKERS === undefined ? 1 : Number(process.env.WORKERS);
const port = process.env.PORT === undefined ? 9004 : Number(process.env.PORT);
const tls = tlsFromEnv();
const server = new Server({ app: new URL('./app.mjs', import.meta.url), workers: Math.min(workers, os.availableParallelism() * 4) });
const addresses = [{ host: '127.0.0.1', port }];
if (tls) addresses.push({ host: '127.0.0.1', port: process.env.TLS_PORT === undefined ? 9443 : Number(process.env.TLS_PORT), tls });
const bound = await server.listen(addresses);
console.log(`http example listening on http://127.0.0.1:${bound[0].port}/ (${workers} workers)`);
if (tls) console.log(`http example listening on https://127.0.0.1:${bound[1].port}/`);
const stop = async () => {
  await server.close({ drainTimeout: 1000 });
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
