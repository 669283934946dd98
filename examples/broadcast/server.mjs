// Broadcast room: every message on `/` goes to every client, sender included.
//
//   npm run build && PORT=9002 node examples/broadcast/server.mjs
//
// Environment: PORT (default 9001, 0 = any free port), WORKERS, COMPRESSION=1,
// MAX_FRAGMENTS, TLS_CERT and TLS_KEY (wss://), as for the echo example.
import { startExample } from '../env.mjs';

await startExample('broadcast', new URL('./app.mjs', import.meta.url));
