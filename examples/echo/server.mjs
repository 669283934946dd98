// Echo server: every message on `/` comes back as it was sent.
//
//   npm run build && PORT=9001 node examples/echo/server.mjs
//
// Environment: PORT (default 9001, 0 = any free port), WORKERS (worker
// threads, default: cores), COMPRESSION=1 (permessage-deflate on),
// COMPRESSION_THRESHOLD (bytes below which messages go uncompressed;
// default 1024), MAX_FRAGMENTS (fragments per message, 0 = no limit;
// default 1024), MAX_PAYLOAD_LENGTH (bytes; default 1 MiB).
// TLS_CERT and TLS_KEY (paths of PEM files): given both, it serves wss://
// instead of ws:// on the same PORT.
// Prints `... listening on ws://127.0.0.1:<port>/` (or wss://) once ready.
import { startExample } from '../env.mjs';

await startExample('echo', new URL('./app.mjs', import.meta.url));
