// Run by workers.test.mjs in a child process: start a server, use it, close
// it, and then do nothing. The process must exit on its own: no handle
// (worker thread, native waker, timer) may keep its event loop alive.
//   node exit-child.mjs <workers> <keep-client-open: 0|1>
import { Server } from 'switchboard';
import { connect } from '../../helpers/index.mjs';

const workers = Number(process.argv[2] ?? 2);
const keepOpen = process.argv[3] === '1';
const app = new URL('../../fixtures/workers-app.mjs', import.meta.url);
const server = new Server({ app, workers });
await server.listen(0, '127.0.0.1');
const client = await connect(`ws://127.0.0.1:${server.port}`);
client.send(JSON.stringify({ seq: 1, op: 'who' }));
const started = Date.now();
while (client.received.length < 2) {
  if (Date.now() - started > 5000) throw new Error('no reply');
  await new Promise((r) => setTimeout(r, 5));
}
if (!keepOpen) {
  client.close();
  await client.closed;
}
await server.close({ drainTimeout: 1000 });
if (keepOpen) await client.closed;
process.stdout.write(`closed ${Date.now()}\n`);
