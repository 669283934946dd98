// Run by fd-limit.test.mjs under a low open-file limit (`prlimit`): a server
// with the default maxConnections (or the one in MAX_CONNECTIONS) that
// reports its port and the open-file limit it runs under.
import { readFileSync } from 'node:fs';
import { Server } from 'switchboard';

const limits = readFileSync('/proc/self/limits', 'utf8');
const [, soft, hard] = /^Max open files\s+(\d+)\s+(\d+)/m.exec(limits) ?? [];
const options = { workers: 0, ioThreads: 1 };
if (process.env.MAX_CONNECTIONS) options.maxConnections = Number(process.env.MAX_CONNECTIONS);
const server = new Server(options);
server.ws('/', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
await server.listen(0, '127.0.0.1');
console.log(JSON.stringify({ port: server.port, soft: Number(soft), hard: Number(hard) }));
process.on('SIGTERM', async () => {
  await server.close({ drainTimeout: 200 });
  process.exit(0);
});
