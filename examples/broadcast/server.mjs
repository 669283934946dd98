// Broadcast room: every message on `/` goes to every client, sender included.
//
//   npm run build && PORT=9002 node examples/broadcast/server.mjs
//
// Environment: PORT (default 9001, 0 = any free port), WORKERS, COMPRESSION=1,
// MAX_FRAGMENTS, TLS_CERT and TLS_KEY (wss://), as for the echo example;
// REDIS_URL (redis://host:port): processes started with the same one form
// one room, so a message sent to any of them reaches the clients of all:
//
//   REDIS_URL=redis://127.0.0.1:6379 PORT=9002 node examples/broadcast/server.mjs &
//   REDIS_URL=redis://127.0.0.1:6379 PORT=9003 node examples/broadcast/server.mjs
//
// or NATS_URL (nats://host:4222) the same way, through NATS:
//
//   NATS_URL=nats://127.0.0.1:4222 PORT=9002 node examples/broadcast/server.mjs &
//   NATS_URL=nats://127.0.0.1:4222 PORT=9003 node examples/broadcast/server.mjs
import { startExample } from '../env.mjs';

await startExample('broadcast', new URL('./app.mjs', import.meta.url));
