// Run by listen.test.mjs under a low open-file limit (`ulimit -n`): an echo
// server on the main thread that reports its port and how many descriptors
// it had open once listening. Its maxConnections is set above the limit
// (the default stays below it, fd-limit.test.mjs): this server is meant to
// run out of descriptors, to show what accept does then.
import { readdirSync } from 'node:fs';
import { Server } from 'switchboard';

const server = new Server({ workers: 0, ioThreads: 1, maxConnections: 100_000 });
server.ws('/', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
await server.listen(0, '127.0.0.1');
console.log(JSON.stringify({ port: server.port, fds: readdirSync('/proc/self/fd').length }));
process.on('SIGTERM', async () => {
  await server.close({ drainTimeout: 200 });
  process.exit(0);
});
