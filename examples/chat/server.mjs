// Switchboard chat demo: rooms, a live member list and messages, with the
// handlers in worker threads and the fan-out in the native core.
//
//   npm run demo                      builds everything, then runs this file
//   node examples/chat/server.mjs     once built (`npm run build`)
//
// Then open the printed address in two browser windows and join one room.
// Environment: PORT (default 8080; 0 = any free port), HOST (default
// 127.0.0.1), WORKERS (worker threads, default 2). Ctrl-C closes gracefully.
//
// Several nodes: with REDIS_URL (redis://host:port), every process started
// with the same one serves the same rooms, each room's member list being
// the union of every node's members (Redis presence, docs/scale-out.md):
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8080 node examples/chat/server.mjs &
//   REDIS_URL=redis://127.0.0.1:6379 PORT=8081 node examples/chat/server.mjs
//
// and open both addresses. A node that dies (kill -9) takes its members
// with it: they leave every page within about PRESENCE_TTL (below).
import { Server } from 'switchboard';
import { brokerFromEnv } from '../env.mjs';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
const workers = Number(process.env.WORKERS ?? 2);

/**
 * Seconds a member outlives its node's last refresh in Redis (nodes
 * refresh every third of it). Short for a demo: a killed node's members
 * leave the other pages within about 4 s (the TTL, plus up to a third of
 * it until a node's sweep finds them expired), at the cost of one
 * pipeline of writes per node every second. The library's default, 30 s,
 * suits large rooms better.
 */
const PRESENCE_TTL = 3;

/**
 * The broker from REDIS_URL, with presence for the channels app.mjs keeps
 * members in (its "Membership across nodes"): the rooms, and the
 * per-member channels that make names unique. The app reads the same
 * environment (worker threads inherit it) to pick its member list.
 */
function chatBroker() {
  const broker = brokerFromEnv();
  if (broker === undefined) return undefined;
  if (broker.nats) {
    console.error('Switchboard chat demo: the member list across nodes needs presence, which Redis keeps and NATS does not: use REDIS_URL');
    process.exit(1);
  }
  return { ...broker, presence: ['room:*', 'user:*'], presenceTtl: PRESENCE_TTL };
}

const broker = chatBroker();
const server = new Server({ app: new URL('./app.mjs', import.meta.url), workers, broker });

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
const through = broker ? `, node ${server.stats().brokerNode}, rooms shared through ${broker.redis}` : '';
console.log(`Switchboard chat demo: open http://${urlHost(address.host)}:${address.port}/ (${workers} workers${through})`);

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
