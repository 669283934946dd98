// Switchboard chat demo: rooms, a live member list and messages, with the
// handlers in worker threads and the fan-out in the native core.
//
//   npm run demo                      builds everything, then runs this file
//   node examples/chat/server.mjs     once built (`npm run build`)
//
// Then open the printed address in two browser windows and join one room.
// Environment: PORT (default 8080; 0 = any free port), HOST (default
// 127.0.0.1), WORKERS (worker threads, default 2). Ctrl-C closes gracefully.
import { Server } from 'switchboard';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
const workers = Number(process.env.WORKERS ?? 2);

const server = new Server({ app: new URL('./app.mjs', import.meta.url), workers });

let address;
try {
  [address] = await server.listen(port, host);
} catch (error) {
  console.error(`Switchboard chat demo: cannot listen on ${host}:${port}: ${error.message}`);
  process.exit(1);
}

/** A host to put in a URL: the loopback for "any address", brackets for IPv6. */
function urlHost(h) {
  if (h === '0.0.0.0' || h === '::') return '127.0.0.1';
  return h.includes(':') ? `[${h}]` : h;
}
console.log(`Switchboard chat demo: open http://${urlHost(address.host)}:${address.port}/ (${workers} workers)`);

let stopping = false;
async function stop(signal) {
  if (stopping) {
    // A second Ctrl-C: do not wait for the drain.
    process.exit(130);
  }
  stopping = true;
  console.log(`\n${signal}: closing (connections get 1001 "going away")`);
  await server.close({ drainTimeout: 2000 });
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
