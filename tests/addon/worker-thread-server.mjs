// Run by addon.test.mjs inside a plain `worker_threads` Worker: the addon is
// loaded in this thread and a server runs here, not on the main thread.
// workerData: { workers } (0: inline echo route; N: the echo app in N nested
// worker threads). Posts { port } once listening, then waits for 'close'.
import { parentPort, workerData } from 'node:worker_threads';
import { Server } from 'switchboard';

const { workers } = workerData;
const options = { workers };
if (workers > 0) options.app = new URL('../fixtures/addon-echo-app.mjs', import.meta.url);
const server = new Server(options);
if (workers === 0) server.ws('/', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
await server.listen(0, '127.0.0.1');
parentPort.postMessage({ port: server.port });
parentPort.once('message', async (message) => {
  if (message !== 'close') return;
  await server.close({ drainTimeout: 1000 });
  parentPort.postMessage({ closed: true });
  parentPort.close();
});
